//! Code objects loaded into host memory, and the process-wide registry of their kernels.
//!
//! The simulated GPU shares the host's address space, so a loaded image is one allocation holding
//! the `PT_LOAD` segments at their virtual addresses, and a kernel object is the host address of
//! the kernel's 64-byte descriptor inside it, as on a real GPU with a host-visible code segment.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, PoisonError, RwLock};

use super::elf::{CodeObject, SymbolClass};
use super::host::{host_kernels, HostKernel};
use super::metadata::KernelMeta;
use super::CodeObjectError;

/// Alignment of a loaded image (a page: more than any segment of the fixtures asks for).
const IMAGE_ALIGN: usize = 4096;

/// A kernel of a loaded code object.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedKernel {
    /// The kernel's symbol without `.kd`, not demangled (e.g. `vadd`).
    pub name: String,
    /// The ELF symbol of its descriptor (e.g. `vadd.kd`).
    pub symbol: String,
    /// Address of the 64-byte kernel descriptor in the loaded image.
    pub kernel_object: u64,
    /// The processor the code was built for (e.g. `gfx942`).
    pub processor: String,
    /// What the metadata note says about the kernel.
    pub meta: KernelMeta,
    /// How the simulated GPU computes it on the host, decided by its code object's identity
    /// (`None`: timed and counted, not computed).
    pub host: Option<HostKernel>,
}

/// A code object's segments in host memory, with its kernels registered for
/// [`kernel_by_object`] until the image is dropped.
#[derive(Debug)]
pub struct LoadedImage {
    base: NonNull<u8>,
    layout: Layout,
    code_object: Arc<CodeObject>,
    kernels: Vec<Arc<LoadedKernel>>,
}

// SAFETY: the image memory is written only while loading, before the value is shared; afterwards
// it is only read (through raw addresses, like device memory) and freed once, in Drop.
unsafe impl Send for LoadedImage {}
// SAFETY: as above; `&LoadedImage` gives no way to mutate the memory.
unsafe impl Sync for LoadedImage {}

/// Kernels of all loaded images, by kernel object.
static KERNELS: RwLock<BTreeMap<u64, Arc<LoadedKernel>>> = RwLock::new(BTreeMap::new());
/// Address ranges of all loaded images: base → size.
static IMAGES: RwLock<BTreeMap<u64, u64>> = RwLock::new(BTreeMap::new());

/// Finds the loaded kernel whose descriptor is at `kernel_object` (process-wide registry,
/// thread-safe).
pub fn kernel_by_object(kernel_object: u64) -> Option<Arc<LoadedKernel>> {
    KERNELS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&kernel_object)
        .cloned()
}

/// The `(base, size)` of the loaded image that contains `address`, if any.
pub fn image_containing(address: u64) -> Option<(u64, u64)> {
    let images = IMAGES.read().unwrap_or_else(PoisonError::into_inner);
    let (&base, &size) = images.range(..=address).next_back()?;
    (address < base + size).then_some((base, size))
}

impl LoadedImage {
    /// Copies the code object's segments into fresh host memory and registers its kernels.
    pub fn load(code_object: Arc<CodeObject>) -> Result<LoadedImage, CodeObjectError> {
        let size = usize::try_from(code_object.image_size())
            .map_err(|_| CodeObjectError::SegmentOutOfFile)?
            .max(IMAGE_ALIGN);
        let layout = Layout::from_size_align(size, IMAGE_ALIGN)
            .map_err(|_| CodeObjectError::SegmentOutOfFile)?;
        // SAFETY: the layout has a non-zero size.
        let base = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
            .ok_or(CodeObjectError::OutOfMemory(size))?;
        let mut image = LoadedImage {
            base,
            layout,
            code_object,
            kernels: Vec::new(),
        };
        image.copy_segments()?;
        image.kernels = image.make_kernels();
        image.register();
        Ok(image)
    }

    /// Host address of the image (the address its virtual address 0 is loaded at).
    pub fn base(&self) -> u64 {
        self.base.as_ptr() as u64
    }

    /// Bytes of the image.
    pub fn size(&self) -> u64 {
        self.layout.size() as u64
    }

    /// The code object this image was loaded from.
    pub fn code_object(&self) -> &Arc<CodeObject> {
        &self.code_object
    }

    /// The image's kernels, in metadata order.
    pub fn kernels(&self) -> &[Arc<LoadedKernel>] {
        &self.kernels
    }

    /// The host address of a symbol's virtual address.
    pub fn address_of(&self, vaddr: u64) -> u64 {
        self.base() + vaddr
    }

    /// The whole image as bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the allocation is `layout.size()` bytes, initialised (zeroed, then copied into)
        // and alive as long as `self`.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.layout.size()) }
    }

    fn copy_segments(&mut self) -> Result<(), CodeObjectError> {
        let code_object = Arc::clone(&self.code_object);
        for segment in &code_object.segments {
            let source = usize::try_from(segment.file_offset)
                .ok()
                .zip(usize::try_from(segment.file_size).ok())
                .and_then(|(start, len)| code_object.bytes.get(start..start.checked_add(len)?))
                .ok_or(CodeObjectError::SegmentOutOfFile)?;
            let start = segment.vaddr as usize;
            if segment.file_size > segment.mem_size || start + source.len() > self.layout.size() {
                return Err(CodeObjectError::SegmentOutOfFile);
            }
            // SAFETY: the destination range lies inside the allocation (checked above), which
            // nothing else references yet; the source is a distinct Vec.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    source.as_ptr(),
                    self.base.as_ptr().add(start),
                    source.len(),
                );
            }
        }
        Ok(())
    }

    fn make_kernels(&self) -> Vec<Arc<LoadedKernel>> {
        let code_object = &self.code_object;
        let hosts = host_kernels(code_object);
        code_object
            .kernels
            .iter()
            .zip(hosts)
            .filter_map(|(meta, host)| {
                let symbol = code_object
                    .symbol(&meta.symbol)
                    .filter(|s| s.class == SymbolClass::KernelDescriptor)?;
                let name = meta.symbol.strip_suffix(".kd").unwrap_or(&meta.symbol);
                Some(Arc::new(LoadedKernel {
                    name: name.to_string(),
                    symbol: meta.symbol.clone(),
                    kernel_object: self.address_of(symbol.address),
                    processor: code_object.processor.clone(),
                    meta: meta.clone(),
                    host,
                }))
            })
            .collect()
    }

    fn register(&self) {
        let mut kernels = KERNELS.write().unwrap_or_else(PoisonError::into_inner);
        for kernel in &self.kernels {
            kernels.insert(kernel.kernel_object, Arc::clone(kernel));
        }
        IMAGES
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(self.base(), self.size());
    }
}

impl Drop for LoadedImage {
    fn drop(&mut self) {
        {
            let mut kernels = KERNELS.write().unwrap_or_else(PoisonError::into_inner);
            for kernel in &self.kernels {
                kernels.remove(&kernel.kernel_object);
            }
        }
        IMAGES
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.base());
        // SAFETY: `base` was allocated with `layout` in `load` and is freed only here.
        unsafe { std::alloc::dealloc(self.base.as_ptr(), self.layout) };
    }
}
