//! Parsing AMDGPU HSA code objects (ELF64, `EM_AMDGPU`, OS ABI `AMDGPU_HSA`, code object v3+).

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, Object, ObjectSymbol, SymbolKind};

use super::metadata::{KernelMeta, Metadata};
use super::CodeObjectError;

/// `EI_OSABI` of HSA code objects.
const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `EI_ABIVERSION` of code object v3 (v4 is 2, v5 is 3, v6 is 4).
const ELFABIVERSION_AMDGPU_HSA_V3: u8 = 1;
/// Note type of the MessagePack metadata (note owner `AMDGPU`).
const NT_AMDGPU_METADATA: u32 = 32;
/// The processor (`EF_AMDGPU_MACH_*`) bits of `e_flags`.
const EF_AMDGPU_MACH: u32 = 0xff;
/// Size of a kernel descriptor (`amd_kernel_descriptor_t`).
pub const KERNEL_DESCRIPTOR_SIZE: u64 = 64;

/// `EF_AMDGPU_MACH_*` values of the processors the simulator knows (LLVM `AMDGPUUsage`).
const MACHS: &[(u32, &str)] = &[
    (0x2c, "gfx900"),
    (0x2f, "gfx906"),
    (0x30, "gfx908"),
    (0x3f, "gfx90a"),
    (0x40, "gfx940"),
    (0x41, "gfx1100"),
    (0x46, "gfx1101"),
    (0x47, "gfx1102"),
    (0x48, "gfx1200"),
    (0x4b, "gfx941"),
    (0x4c, "gfx942"),
    (0x4e, "gfx1201"),
    (0x4f, "gfx950"),
];

/// A parsed code object: its target, kernels, symbols and loadable segments.
#[derive(Debug, Clone)]
pub struct CodeObject {
    /// The whole file, as read.
    pub bytes: Vec<u8>,
    /// The processor, e.g. `gfx942`.
    pub processor: String,
    /// The full target id, e.g. `amdgcn-amd-amdhsa--gfx942` or `...--gfx90a:xnack-`.
    pub target_id: String,
    /// `e_flags` of the ELF header.
    pub e_flags: u32,
    /// The code object version (3, 4, 5, 6), from `EI_ABIVERSION`.
    pub version: u32,
    /// The kernels, in metadata order.
    pub kernels: Vec<KernelMeta>,
    /// The dynamic symbols (kernel descriptors, kernel code and variables).
    pub symbols: Vec<ElfSymbol>,
    /// The `PT_LOAD` segments.
    pub segments: Vec<Segment>,
}

/// What an ELF symbol of a code object stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolClass {
    /// A kernel descriptor (`<kernel>.kd`).
    KernelDescriptor,
    /// Machine code of a kernel or function.
    Code,
    /// A global variable.
    Variable,
}

/// One dynamic symbol of a code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfSymbol {
    /// The name, e.g. `vadd.kd`.
    pub name: String,
    /// The virtual address in the image (offset from its load base).
    pub address: u64,
    /// Size in bytes.
    pub size: u64,
    /// What the symbol is.
    pub class: SymbolClass,
}

/// One `PT_LOAD` segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Virtual address (offset from the load base).
    pub vaddr: u64,
    /// Size in memory (the part past `file_size` is zero).
    pub mem_size: u64,
    /// Offset of the segment's bytes in the file.
    pub file_offset: u64,
    /// Bytes present in the file.
    pub file_size: u64,
    /// `p_flags` (`PF_X`, `PF_W`, `PF_R`).
    pub flags: u32,
}

impl CodeObject {
    /// Parses an AMDGPU HSA code object.
    pub fn parse(bytes: Vec<u8>) -> Result<CodeObject, CodeObjectError> {
        let mut code_object = Self::describe(&bytes)?;
        code_object.bytes = bytes;
        Ok(code_object)
    }

    /// Everything but `bytes`, which stays empty.
    fn describe(bytes: &[u8]) -> Result<CodeObject, CodeObjectError> {
        let file = ElfFile64::<Endianness>::parse(bytes)
            .map_err(|e| CodeObjectError::Elf(e.to_string()))?;
        let endian = file.endian();
        let header = file.elf_header();
        if header.e_machine(endian) != elf::EM_AMDGPU {
            return Err(CodeObjectError::NotAmdgpu(header.e_machine(endian).0));
        }
        let ident = header.e_ident();
        if ident.os_abi.0 != ELFOSABI_AMDGPU_HSA {
            return Err(CodeObjectError::NotHsa(ident.os_abi.0));
        }
        let version = u32::from(ident.abi_version) + 2;
        if ident.abi_version < ELFABIVERSION_AMDGPU_HSA_V3 {
            return Err(CodeObjectError::UnsupportedVersion(version));
        }
        let e_flags = header.e_flags(endian).0;
        let metadata = read_metadata(&file)?;
        let mach = e_flags & EF_AMDGPU_MACH;
        let mach_name = MACHS
            .iter()
            .find(|(m, _)| *m == mach)
            .map(|(_, name)| *name);
        let (processor, target_id) = match (&metadata.target, mach_name) {
            (Some(target), _) => {
                let processor = processor_of(target)
                    .ok_or_else(|| CodeObjectError::BadTarget(target.clone()))?;
                if mach_name.is_some_and(|name| name != processor) {
                    return Err(CodeObjectError::TargetMismatch {
                        note: target.clone(),
                        mach,
                    });
                }
                (processor.to_string(), target.clone())
            }
            (None, Some(name)) => (name.to_string(), format!("amdgcn-amd-amdhsa--{name}")),
            (None, None) => return Err(CodeObjectError::UnknownMach(mach)),
        };
        let symbols = read_symbols(&file);
        for kernel in &metadata.kernels {
            let descriptor = symbols.iter().find(|s| s.name == kernel.symbol);
            if !descriptor.is_some_and(|s| s.class == SymbolClass::KernelDescriptor) {
                return Err(CodeObjectError::MissingDescriptor(kernel.symbol.clone()));
            }
        }
        Ok(CodeObject {
            bytes: Vec::new(),
            processor,
            target_id,
            e_flags,
            version,
            kernels: metadata.kernels,
            symbols,
            segments: read_segments(&file),
        })
    }

    /// Bytes of address space the loaded image needs (end of the highest segment).
    pub fn image_size(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.vaddr + s.mem_size)
            .max()
            .unwrap_or(0)
    }

    /// The symbol named `name`.
    pub fn symbol(&self, name: &str) -> Option<&ElfSymbol> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// The 64 bytes of a kernel's descriptor as stored in the file.
    pub fn descriptor_bytes(&self, kernel: &KernelMeta) -> Option<&[u8]> {
        let symbol = self.symbol(&kernel.symbol)?;
        let segment = self.segments.iter().find(|s| {
            symbol.address >= s.vaddr
                && symbol.address + KERNEL_DESCRIPTOR_SIZE <= s.vaddr + s.file_size
        })?;
        let start = usize::try_from(segment.file_offset + symbol.address - segment.vaddr).ok()?;
        self.bytes
            .get(start..start + KERNEL_DESCRIPTOR_SIZE as usize)
    }
}

/// The processor part of a target id: `gfx942` in `amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`.
pub fn processor_of(target_id: &str) -> Option<&str> {
    let after_triple = target_id
        .rsplit_once("--")
        .map_or(target_id, |(_, rest)| rest);
    let processor = after_triple.split(':').next()?;
    processor.starts_with("gfx").then_some(processor)
}

/// Whether code built for `code_target` runs on an agent whose ISA is `agent_isa` (both target
/// ids): the processors must be equal, and every feature the code object pins (`xnack+`,
/// `sramecc-`) must not be pinned the other way by the agent. A feature a target id leaves out
/// means "any", as in ROCr's ISA compatibility check.
pub fn isa_compatible(code_target: &str, agent_isa: &str) -> bool {
    let (Some(code_processor), Some(agent_processor)) =
        (processor_of(code_target), processor_of(agent_isa))
    else {
        return false;
    };
    if code_processor != agent_processor {
        return false;
    }
    let agent_features: Vec<&str> = features_of(agent_isa).collect();
    features_of(code_target).all(|feature| {
        let (name, _) = feature.split_at(feature.len() - 1);
        agent_features
            .iter()
            .all(|theirs| !theirs.starts_with(name) || *theirs == feature)
    })
}

/// The `name+`/`name-` features of a target id.
fn features_of(target_id: &str) -> impl Iterator<Item = &str> {
    let after_triple = target_id
        .rsplit_once("--")
        .map_or(target_id, |(_, rest)| rest);
    after_triple
        .split(':')
        .skip(1)
        .filter(|f| f.ends_with('+') || f.ends_with('-'))
}

fn read_metadata(file: &ElfFile64<Endianness>) -> Result<Metadata, CodeObjectError> {
    let endian = file.endian();
    for section in file.elf_section_table().iter() {
        let notes = section
            .notes(endian, file.data())
            .map_err(|e| CodeObjectError::Elf(e.to_string()))?;
        let Some(mut notes) = notes else { continue };
        while let Some(note) = notes
            .next()
            .map_err(|e| CodeObjectError::Elf(e.to_string()))?
        {
            if note.name() == b"AMDGPU" && note.n_type(endian).0 == NT_AMDGPU_METADATA {
                return rmp_serde::from_slice(note.desc())
                    .map_err(|e| CodeObjectError::Metadata(e.to_string()));
            }
        }
    }
    Err(CodeObjectError::NoMetadata)
}

fn read_symbols(file: &ElfFile64<Endianness>) -> Vec<ElfSymbol> {
    file.dynamic_symbols()
        .filter(|s| s.is_definition())
        .filter_map(|s| {
            let name = s.name().ok()?.to_string();
            let class = match s.kind() {
                SymbolKind::Text => SymbolClass::Code,
                SymbolKind::Data if name.ends_with(".kd") && s.size() == KERNEL_DESCRIPTOR_SIZE => {
                    SymbolClass::KernelDescriptor
                }
                SymbolKind::Data => SymbolClass::Variable,
                _ => return None,
            };
            Some(ElfSymbol {
                name,
                address: s.address(),
                size: s.size(),
                class,
            })
        })
        .collect()
}

fn read_segments(file: &ElfFile64<Endianness>) -> Vec<Segment> {
    let endian = file.endian();
    file.elf_program_headers()
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .map(|ph| Segment {
            vaddr: ph.p_vaddr(endian),
            mem_size: ph.p_memsz(endian),
            file_offset: ph.p_offset(endian),
            file_size: ph.p_filesz(endian),
            flags: ph.p_flags(endian).0,
        })
        .collect()
}
