//! Wrappers of the runtime's allocation entries that keep [`super::memory`]'s bookkeeping, for
//! kernel replay. Each calls the original entry with the application's arguments and records
//! what it returned; a free is forgotten before the memory goes, so a snapshot never reads it.
//! And wrappers of the asynchronous copy entries, which order each copy around replay windows
//! ([`super::copies`]). Installed only when the plan asks for kernel replay.

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::api::Tables;
use super::interposer::memory;
use super::memory::Reach;
use crate::hsa::*;

/// The AMD extension entries replaced, with their wrappers.
fn amd_wrappers() -> [(&'static str, *const c_void); 13] {
    [
        ("hsa_amd_memory_async_copy_fn", async_copy as *const c_void),
        (
            "hsa_amd_memory_async_copy_on_engine_fn",
            async_copy_on_engine as *const c_void,
        ),
        (
            "hsa_amd_memory_async_copy_rect_fn",
            async_copy_rect as *const c_void,
        ),
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

/// Puts the original entries back, and waits (up to `timeout`) for the copies in flight.
pub fn uninstall(tables: &Tables, timeout: std::time::Duration) {
    for (field, _) in core_wrappers() {
        tables.restore_core(field);
    }
    for (field, _) in amd_wrappers() {
        tables.restore_amd(field);
    }
    let stopped = catch_unwind(AssertUnwindSafe(|| {
        memory().is_none_or(|(_, m)| m.copies().stop(timeout))
    }));
    if !matches!(stopped, Ok(true)) {
        super::keep_loaded();
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
    let Some((hsa, f)) = memory().and_then(|(h, _)| Some((h, h.core().hsa_memory_allocate_fn?)))
    else {
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
    // Memory the host reaches directly: its threads may write it while a kernel runs.
    let host = status == HSA_STATUS_SUCCESS && hsa.region_host_accessible(region) == Some(true);
    let reach = if host { Reach::Host } else { Reach::Everyone };
    track(status, |m| m.add(base, size, reach))
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
    track(status, |m| m.add(host_ptr as usize, size, Reach::Host))
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
    track(status, |m| m.add(host_ptr as usize, size, Reach::Host))
}

unsafe extern "C" fn memory_unlock(host_ptr: *mut c_void) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_unlock_fn) else {
        return HSA_STATUS_ERROR;
    };
    forget(host_ptr);
    // SAFETY: the original entry with the application's pointer.
    unsafe { f(host_ptr) }
}

/// The dependency signals of a copy, or `None` when they are not readable (the runtime then
/// refuses the call itself).
///
/// # Safety
/// `signals` must be NULL or point at `count` signals.
unsafe fn dependencies<'a>(count: u32, signals: *const hsa_signal_t) -> Option<&'a [hsa_signal_t]> {
    match count {
        0 => Some(&[]),
        _ if signals.is_null() => None,
        // SAFETY: see the function's contract.
        _ => Some(unsafe { std::slice::from_raw_parts(signals, count as usize) }),
    }
}

/// Submits a copy through [`super::copies::CopyOrder`], or calls `call` with the application's
/// own signals when its dependencies cannot be read; never panics across the C boundary.
///
/// # Safety
/// `dep_signals` must be NULL or point at `count` signals.
unsafe fn ordered(
    count: u32,
    dep_signals: *const hsa_signal_t,
    completion: hsa_signal_t,
    call: impl Fn(u32, *const hsa_signal_t, hsa_signal_t) -> hsa_status_t,
) -> hsa_status_t {
    // SAFETY: see the function's contract.
    let deps = unsafe { dependencies(count, dep_signals) };
    let (Some(deps), Some((_, m))) = (deps, memory()) else {
        return call(count, dep_signals, completion);
    };
    let submitted = catch_unwind(AssertUnwindSafe(|| {
        m.copies().submit(deps, completion, |deps, done| {
            call(deps.len() as u32, deps.as_ptr(), done)
        })
    }));
    submitted.unwrap_or(HSA_STATUS_ERROR)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn async_copy(
    dst: *mut c_void,
    dst_agent: hsa_agent_t,
    src: *const c_void,
    src_agent: hsa_agent_t,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const hsa_signal_t,
    completion_signal: hsa_signal_t,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_async_copy_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the application's arguments; the original entry with them, the dependencies
    // possibly one longer and the completion signal ours.
    unsafe {
        ordered(
            num_dep_signals,
            dep_signals,
            completion_signal,
            |n, deps, done| f(dst, dst_agent, src, src_agent, size, n, deps, done),
        )
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn async_copy_on_engine(
    dst: *mut c_void,
    dst_agent: hsa_agent_t,
    src: *const c_void,
    src_agent: hsa_agent_t,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const hsa_signal_t,
    completion_signal: hsa_signal_t,
    engine_id: u32,
    force_copy_on_sdma: bool,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_async_copy_on_engine_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: as for `async_copy`.
    unsafe {
        ordered(
            num_dep_signals,
            dep_signals,
            completion_signal,
            |n, deps, done| {
                f(
                    dst,
                    dst_agent,
                    src,
                    src_agent,
                    size,
                    n,
                    deps,
                    done,
                    engine_id,
                    force_copy_on_sdma,
                )
            },
        )
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn async_copy_rect(
    dst: *const c_void,
    dst_offset: *const hsa_dim3_t,
    src: *const c_void,
    src_offset: *const hsa_dim3_t,
    range: *const hsa_dim3_t,
    copy_agent: hsa_agent_t,
    dir: u32,
    num_dep_signals: u32,
    dep_signals: *const hsa_signal_t,
    completion_signal: hsa_signal_t,
) -> hsa_status_t {
    let Some(f) = memory().and_then(|(h, _)| h.amd().hsa_amd_memory_async_copy_rect_fn) else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: as for `async_copy`.
    unsafe {
        ordered(
            num_dep_signals,
            dep_signals,
            completion_signal,
            |n, deps, done| {
                f(
                    dst, dst_offset, src, src_offset, range, copy_agent, dir, n, deps, done,
                )
            },
        )
    }
}
