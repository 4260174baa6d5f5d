//! IPC memory handles: device memory shared between processes, as `hipIpcGetMemHandle` and
//! `hipIpcOpenMemHandle` use it.
//!
//! Every device-memory allocation is a memfd of its own, mapped shared and kept open until the
//! allocation is freed. A handle (`hsa_amd_ipc_memory_t`, 32 bytes) names the creating process,
//! the memfd's descriptor there, the GPU that owns the memory, its size and a check value that is
//! also in the memfd's name; `hsa_amd_ipc_memory_attach` opens `/proc/<pid>/fd/<fd>`, makes sure
//! it is still that memfd and maps it shared, so every process (the creator too) sees the same
//! bytes. A handle stays valid while the creator keeps the allocation.

use crate::ffi::guard;
use crate::hsa::*;
use crate::system::{
    agent_handle, agent_index, allocations, initialized, record_allocation, Backing, Memory,
};
use core::ffi::c_void;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Granule of shared memory: allocations are mapped in whole pages.
const PAGE: usize = 4096;

/// First word of every handle this runtime makes.
const MAGIC: u32 = u32::from_le_bytes(*b"rsIP");

/// The layout of `hsa_amd_ipc_memory_t` (`uint32_t handle[8]`) as this runtime fills it.
#[repr(C)]
#[derive(Clone, Copy)]
struct Handle {
    magic: u32,
    pid: u32,
    fd: u32,
    owner: u32,
    size: u64,
    check: u64,
}

const _: () = assert!(std::mem::size_of::<Handle>() == 32);

fn pages(size: usize) -> usize {
    size.div_ceil(PAGE) * PAGE
}

fn memfd_name(check: u64) -> String {
    format!("rtl-sim-gpu-{check:016x}")
}

/// A value no earlier allocation of any process is likely to have had.
fn new_check() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = time
        ^ NEXT
            .fetch_add(1, Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `size` zeroed, page-aligned bytes in a new memfd mapped shared: (address, fd, check value),
/// or `None` when the memfd cannot be had.
pub(crate) fn shared_memory(size: usize) -> Option<(*mut c_void, i32, u64)> {
    let check = new_check();
    let name = CString::new(memfd_name(check)).ok()?;
    // SAFETY: a NUL-terminated name.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let len = pages(size);
    // SAFETY: `fd` is the memfd just created; a failed mapping is checked.
    let address = unsafe {
        if libc::ftruncate(fd, len as libc::off_t) != 0 {
            libc::MAP_FAILED
        } else {
            map(fd, len)
        }
    };
    if address == libc::MAP_FAILED {
        // SAFETY: our own descriptor.
        unsafe { libc::close(fd) };
        return None;
    }
    Some((address, fd, check))
}

/// Maps `len` bytes of `fd` shared, readable and writable.
///
/// # Safety
/// `fd` is an open descriptor.
unsafe fn map(fd: i32, len: usize) -> *mut c_void {
    // SAFETY: a fresh mapping chosen by the kernel.
    unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    }
}

/// Unmaps shared memory of `size` bytes at `address` and closes its memfd, if this process
/// created it.
pub(crate) fn release_shared(address: *mut c_void, size: usize, fd: Option<i32>) {
    // SAFETY: a mapping made by `shared_memory` or `attach`, no longer recorded as allocated.
    unsafe {
        libc::munmap(address, pages(size));
        if let Some(fd) = fd {
            libc::close(fd);
        }
    }
}

/// `hsa_amd_ipc_memory_create`: a handle for the whole device-memory allocation at `ptr`.
pub(crate) unsafe extern "C" fn hsa_amd_ipc_memory_create(
    ptr: *mut c_void,
    len: usize,
    handle: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if !initialized() {
            return HSA_STATUS_ERROR_NOT_INITIALIZED;
        }
        if handle.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let Some(a) = allocations().get(&(ptr as usize)).copied() else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        // The allocation's length, or that length rounded up to the allocation granule.
        if len != a.size && len != pages(a.size) {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let (fd, check) = match a.backing {
            Backing::Shared { fd, check } => (fd, check),
            Backing::Heap if a.memory == Memory::Device => {
                return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
            }
            _ => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
        };
        let out = Handle {
            magic: MAGIC,
            pid: std::process::id(),
            fd: fd as u32,
            owner: a.owner as u32,
            size: a.size as u64,
            check,
        };
        // SAFETY: the caller provides a 32-byte `hsa_amd_ipc_memory_t`, 4-byte aligned.
        unsafe { std::ptr::write_unaligned(handle as *mut Handle, out) };
        HSA_STATUS_SUCCESS
    })
}

/// Opens the memfd a handle names, or `None` when it is gone or is no longer that memfd.
fn open_shared(h: &Handle) -> Option<i32> {
    let path = CString::new(format!("/proc/{}/fd/{}", h.pid, h.fd)).ok()?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let expected = format!("/memfd:{} ", memfd_name(h.check));
    let same = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .is_ok_and(|target| target.to_string_lossy().starts_with(&expected));
    // SAFETY: `stat` is plain data filled by fstat on our descriptor.
    let big_enough = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut stat) == 0 && stat.st_size as u64 >= pages(h.size as usize) as u64
    };
    if same && big_enough {
        Some(fd)
    } else {
        // SAFETY: our own descriptor.
        unsafe { libc::close(fd) };
        None
    }
}

/// `hsa_amd_ipc_memory_attach`: maps the memory of a handle (from any process, this one too) at
/// a new address, device memory of the GPU that allocated it.
pub(crate) unsafe extern "C" fn hsa_amd_ipc_memory_attach(
    handle: *const c_void,
    len: usize,
    num_agents: u32,
    mapping_agents: *const hsa_agent_t,
    mapped_ptr: *mut *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if !initialized() {
            return HSA_STATUS_ERROR_NOT_INITIALIZED;
        }
        if handle.is_null() || mapped_ptr.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the caller's 32-byte handle.
        let h = unsafe { std::ptr::read_unaligned(handle as *const Handle) };
        let size = h.size as usize;
        if h.magic != MAGIC || size == 0 || len > pages(size) {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        if num_agents > 0 {
            if mapping_agents.is_null() {
                return HSA_STATUS_ERROR_INVALID_ARGUMENT;
            }
            // SAFETY: the caller passes `num_agents` agents.
            let agents = unsafe { std::slice::from_raw_parts(mapping_agents, num_agents as usize) };
            if agents.iter().any(|&a| agent_index(a).is_none()) {
                return HSA_STATUS_ERROR_INVALID_AGENT;
            }
        }
        let owner = h.owner as usize;
        if owner == 0 || agent_index(agent_handle(owner)).is_none() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let Some(fd) = open_shared(&h) else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        // SAFETY: our descriptor; the mapping keeps the memfd alive once it is closed.
        let address = unsafe {
            let address = map(fd, pages(size));
            libc::close(fd);
            address
        };
        if address == libc::MAP_FAILED {
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        record_allocation(
            address as usize,
            size,
            owner,
            Memory::Device,
            Backing::Attached,
        );
        // SAFETY: checked non-null.
        unsafe { *mapped_ptr = address };
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_amd_ipc_memory_detach`: unmaps memory mapped by `hsa_amd_ipc_memory_attach`.
pub(crate) unsafe extern "C" fn hsa_amd_ipc_memory_detach(mapped_ptr: *mut c_void) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if !initialized() {
            return HSA_STATUS_ERROR_NOT_INITIALIZED;
        }
        let mut allocations = allocations();
        let size = match allocations.get(&(mapped_ptr as usize)) {
            Some(a) if a.backing == Backing::Attached => a.size,
            _ => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
        };
        allocations.remove(&(mapped_ptr as usize));
        drop(allocations);
        release_shared(mapped_ptr, size, None);
        HSA_STATUS_SUCCESS
    })
}
