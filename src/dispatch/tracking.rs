//! Wrappers of the runtime's allocation entries that keep [`super::memory`]'s bookkeeping, for
//! kernel replay. Each calls the original entry with the application's arguments and records
//! what it returned; a free is forgotten before the memory goes, so a snapshot never reads it.
//! Installed only when the plan asks for kernel replay.

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::api::Tables;
use super::interposer::memory;
use super::memory::Reach;
use crate::hsa::*;

/// The AMD extension entries replaced, with their wrappers.
fn amd_wrappers() -> [(&'static str, *const c_void); 10] {
    [
        (
            "hsa_amd_memory_pool_allocate_fn",
            pool_allocate as *const c_void,
        ),
        ("hsa_amd_memory_pool_free_fn", pool_free as *const c_void),
        (
            "hsa_amd_agents_allow_access_fn",
            allow_access as *const c_void,
        ),
        ("hsa_amd_vmem_map_fn", vmem_map as *const c_void),
        ("hsa_amd_vmem_unmap_fn", vmem_unmap as *const c_void),
        ("hsa_amd_ipc_memory_attach_fn", ipc_attach as *const c_void),
        ("hsa_amd_ipc_memory_detach_fn", ipc_detach as *const c_void),
        ("hsa_amd_memory_lock_fn", memory_lock as *const c_void),
        (
            "hsa_amd_memory_lock_to_pool_fn",
            memory_lock_to_pool as *const c_void,
        ),
        ("hsa_amd_memory_unlock_fn", memory_unlock as *const c_void),
    ]
}

/// The core entries replaced, with their wrappers.
fn core_wrappers() -> [(&'static str, *const c_void); 2] {
    [
        ("hsa_memory_allocate_fn", memory_allocate as *const c_void),
        ("hsa_memory_free_fn", memory_free as *const c_void),
    ]
}

/// Replaces the allocation entries.
///
/// # Safety
/// Called once, from `OnLoad`, with the runtime's tables.
pub unsafe fn install(tables: &Tables) {
    for (field, wrapper) in core_wrappers() {
        // SAFETY: each wrapper has the exact signature of the entry it replaces.
        unsafe { tables.patch_core(field, wrapper) };
    }
    for (field, wrapper) in amd_wrappers() {
        // SAFETY: as above.
        unsafe { tables.patch_amd(field, wrapper) };
    }
}

/// Puts the original allocation entries back.
pub fn uninstall(tables: &Tables) {
    for (field, _) in core_wrappers() {
        tables.restore_core(field);
    }
    for (field, _) in amd_wrappers() {
        tables.restore_amd(field);
    }
}

/// Records what a successful call returned; never panics across the C boundary.
fn track(status: hsa_status_t, record: impl FnOnce(&super::replay::Memory)) -> hsa_status_t {
    if status == HSA_STATUS_SUCCESS {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            if let Some((_, m)) = memory() {
                record(m);
            }
        }));
    }
    status
}

/// Forgets an allocation before the original entry frees it.
fn forget(base: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Some((_, m)) = memory() {
            m.remove(base as usize);
        }
    }));
}

/// Reads `*out` after a call that filled it.
///
/// # Safety
/// `out` must be NULL or point at a pointer the call wrote.
unsafe fn written(out: *mut *mut c_void) -> usize {
    if out.is_null() {
        0
    } else {
        // SAFETY: see the function's contract.
        unsafe { *out as usize }
    }
}

unsafe extern "C" fn pool_allocate(
    pool: hsa_amd_memory_pool_t,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_pool_allocate_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's arguments.
    let status = unsafe { f(pool, size, flags, ptr) };
    // SAFETY: on success the runtime wrote the allocation's address.
    let base = if status == HSA_STATUS_SUCCESS {
        unsafe { written(ptr) }
    } else {
        0
    };
    track(status, |m| {
        m.add(
            base,
            size,
            Reach::Pool {
                pool: pool.handle,
                allowed: Vec::new(),
            },
        )
    })
}

unsafe extern "C" fn pool_free(ptr: *mut c_void) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_pool_free_fn) else {
        return HSA_STATUS_ERROR;
    };
    forget(ptr);
    // SAFETY: the original entry with the application's pointer.
    unsafe { f(ptr) }
}

unsafe extern "C" fn memory_allocate(
    region: hsa_region_t,
    size: usize,
    ptr: *mut *mut c_void,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.core().hsa_memory_allocate_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's arguments.
    let status = unsafe { f(region, size, ptr) };
    // SAFETY: on success the runtime wrote the allocation's address.
    let base = if status == HSA_STATUS_SUCCESS {
        unsafe { written(ptr) }
    } else {
        0
    };
    track(status, |m| m.add(base, size, Reach::Everyone))
}

unsafe extern "C" fn memory_free(ptr: *mut c_void) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.core().hsa_memory_free_fn) else {
        return HSA_STATUS_ERROR;
    };
    forget(ptr);
    // SAFETY: the original entry with the application's pointer.
    unsafe { f(ptr) }
}

unsafe extern "C" fn allow_access(
    num_agents: u32,
    agents: *const hsa_agent_t,
    flags: *const u32,
    ptr: *const c_void,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_agents_allow_access_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's arguments.
    let status = unsafe { f(num_agents, agents, flags, ptr) };
    track(status, |m| {
        if agents.is_null() {
            return;
        }
        // SAFETY: the runtime accepted `num_agents` agents at `agents`.
        let list = unsafe { std::slice::from_raw_parts(agents, num_agents as usize) };
        let handles: Vec<u64> = list.iter().map(|a| a.handle).collect();
        m.allow(ptr as usize, &handles);
    })
}

unsafe extern "C" fn vmem_map(
    va: *mut c_void,
    size: usize,
    in_offset: usize,
    handle: u64,
    flags: u64,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_vmem_map_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's arguments.
    let status = unsafe { f(va, size, in_offset, handle, flags) };
    track(status, |m| m.add(va as usize, size, Reach::Everyone))
}

unsafe extern "C" fn vmem_unmap(va: *mut c_void, size: usize) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_vmem_unmap_fn) else {
        return HSA_STATUS_ERROR;
    };
    forget(va);
    // SAFETY: the original entry with the application's arguments.
    unsafe { f(va, size) }
}

unsafe extern "C" fn ipc_attach(
    handle: *const c_void,
    len: usize,
    num_agents: u32,
    mapping_agents: *const hsa_agent_t,
    mapped_ptr: *mut *mut c_void,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_ipc_memory_attach_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's arguments.
    let status = unsafe { f(handle, len, num_agents, mapping_agents, mapped_ptr) };
    // SAFETY: on success the runtime wrote the mapping's address.
    let base = if status == HSA_STATUS_SUCCESS {
        unsafe { written(mapped_ptr) }
    } else {
        0
    };
    track(status, |m| m.add(base, len, Reach::Everyone))
}

unsafe extern "C" fn ipc_detach(mapped_ptr: *mut c_void) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_ipc_memory_detach_fn) else {
        return HSA_STATUS_ERROR;
    };
    forget(mapped_ptr);
    // SAFETY: the original entry with the application's pointer.
    unsafe { f(mapped_ptr) }
}

unsafe extern "C" fn memory_lock(
    host_ptr: *mut c_void,
    size: usize,
    agents: *mut hsa_agent_t,
    num_agent: c_int,
    agent_ptr: *mut *mut c_void,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_lock_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's arguments.
    let status = unsafe { f(host_ptr, size, agents, num_agent, agent_ptr) };
    track(status, |m| m.add(host_ptr as usize, size, Reach::Everyone))
}

unsafe extern "C" fn memory_lock_to_pool(
    host_ptr: *mut c_void,
    size: usize,
    agents: *mut hsa_agent_t,
    num_agent: c_int,
    pool: hsa_amd_memory_pool_t,
    flags: u32,
    agent_ptr: *mut *mut c_void,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_lock_to_pool_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's arguments.
    let status = unsafe { f(host_ptr, size, agents, num_agent, pool, flags, agent_ptr) };
    track(status, |m| m.add(host_ptr as usize, size, Reach::Everyone))
}

unsafe extern "C" fn memory_unlock(host_ptr: *mut c_void) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_unlock_fn) else {
        return HSA_STATUS_ERROR;
    };
    forget(host_ptr);
    // SAFETY: the original entry with the application's pointer.
    unsafe { f(host_ptr) }
}
