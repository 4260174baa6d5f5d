//! AMDGPU code objects: parsing the ELF and its metadata note, loading images into host memory,
//! the process-wide kernel registry, and the kernels that run on the host (the fixtures'
//! reference kernels and HIP's blit kernels).

mod blit;
mod elf;
mod host;
mod image;
mod metadata;

pub use blit::Blit;
pub use elf::{
    isa_compatible, processor_of, CodeObject, ElfSymbol, Segment, SymbolClass,
    KERNEL_DESCRIPTOR_SIZE,
};
pub use host::{host_kernels, run_on_host, HostKernel, KernelLaunch};
pub use image::{image_containing, kernel_by_object, LoadedImage, LoadedKernel};
pub use metadata::{KernelArg, KernelMeta, Metadata};

/// Why a code object cannot be parsed or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CodeObjectError {
    /// The bytes are not a well-formed ELF64 file.
    #[error("not a valid ELF64 file: {0}")]
    Elf(String),
    /// `e_machine` is not `EM_AMDGPU` (224).
    #[error("ELF machine {0} is not EM_AMDGPU (224)")]
    NotAmdgpu(u16),
    /// `EI_OSABI` is not `ELFOSABI_AMDGPU_HSA` (64).
    #[error("ELF OS ABI {0} is not AMDGPU HSA (64)")]
    NotHsa(u8),
    /// Code object v2 and older (no MessagePack metadata) are not supported.
    #[error("code object v{0} is not supported (v3 or newer is)")]
    UnsupportedVersion(u32),
    /// No `NT_AMDGPU_METADATA` note owned by `AMDGPU`.
    #[error("no NT_AMDGPU_METADATA note")]
    NoMetadata,
    /// The metadata note is not the expected MessagePack map.
    #[error("malformed NT_AMDGPU_METADATA note: {0}")]
    Metadata(String),
    /// `amdhsa.target` names no gfx processor.
    #[error("amdhsa.target {0:?} names no gfx processor")]
    BadTarget(String),
    /// `amdhsa.target` and the `EF_AMDGPU_MACH` bits of `e_flags` disagree.
    #[error("amdhsa.target {note:?} disagrees with e_flags machine 0x{mach:x}")]
    TargetMismatch {
        /// The target id of the note.
        note: String,
        /// The `EF_AMDGPU_MACH` value.
        mach: u32,
    },
    /// No `amdhsa.target` and an `EF_AMDGPU_MACH` value the simulator does not know.
    #[error("unknown EF_AMDGPU_MACH 0x{0:x} and no amdhsa.target")]
    UnknownMach(u32),
    /// A kernel's `.symbol` is not a 64-byte descriptor symbol of the ELF.
    #[error("kernel descriptor symbol {0:?} missing or not 64 bytes")]
    MissingDescriptor(String),
    /// A `PT_LOAD` segment lies outside the file or the image.
    #[error("a PT_LOAD segment lies outside the file")]
    SegmentOutOfFile,
    /// The image allocation failed.
    #[error("cannot allocate {0} bytes for the image")]
    OutOfMemory(usize),
}
