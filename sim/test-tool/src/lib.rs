//! A tools library for testing how the simulated runtime loads tools.
//!
//! Each `OnLoad`/`OnUnload` appends one line to the file named by `RTL_SIM_TEST_TOOL_LOG`, with
//! the tool's name (its file stem, so several copies of the library can be told apart), the
//! arguments received and the table versions. `RTL_SIM_TEST_TOOL_FAIL` lists (comma-separated)
//! tool names whose `OnLoad` returns false. With `RTL_SIM_TEST_TOOL_INTERCEPT=1` the tool wraps
//! `hsa_queue_create`: queues become intercept queues with a handler that logs the packet count
//! of every call and passes the packets on unchanged. It exports `HSA_AMD_TOOL_PRIORITY`, so a
//! preloaded copy is loaded as a tool too.
//!
//! With `RTL_SIM_TEST_TOOL_AQLPROFILE=keep` or `delete`, `OnLoad` opens
//! `libhsa-amd-aqlprofile64.so`, registers a gfx942 agent and creates one v2 packet set (SQ_WAVES)
//! whose buffers come from `calloc`; every return of a buffer through its `dealloc_cb` is logged
//! (`dealloc name=<tool> after_unload=<bool>`). With `delete`, `OnUnload` deletes the set and
//! closes the library, as a tool must; with `keep` it leaves the set alive, as a tool that pools
//! packet sets and forgets them does, so aqlprofile returns the buffers at process exit.

#[allow(dead_code, unused_imports)]
#[path = "../../../src/hsa/mod.rs"]
mod hsa;

use hsa::*;
use std::ffi::{c_char, c_void, CStr};
use std::io::Write;
use std::sync::OnceLock;

/// The original entries this copy of the tool wrapped.
struct Saved {
    name: String,
    queue_create: unsafe extern "C" fn(
        hsa_agent_t,
        u32,
        hsa_queue_type32_t,
        hsa_queue_error_callback,
        *mut c_void,
        u32,
        u32,
        *mut *mut hsa_queue_t,
    ) -> hsa_status_t,
    intercept_create: unsafe extern "C" fn(
        hsa_agent_t,
        u32,
        hsa_queue_type32_t,
        hsa_queue_error_callback,
        *mut c_void,
        u32,
        u32,
        *mut *mut hsa_queue_t,
    ) -> hsa_status_t,
    intercept_register: unsafe extern "C" fn(
        *mut hsa_queue_t,
        hsa_amd_queue_intercept_handler,
        *mut c_void,
    ) -> hsa_status_t,
    set_profiler_enabled: unsafe extern "C" fn(*mut hsa_queue_t, i32) -> hsa_status_t,
    queue_destroy: unsafe extern "C" fn(*mut hsa_queue_t) -> hsa_status_t,
}

static SAVED: OnceLock<Saved> = OnceLock::new();

/// The aqlprofile packet set made by `OnLoad` under `RTL_SIM_TEST_TOOL_AQLPROFILE`.
struct PacketSet {
    library: usize,
    delete: unsafe extern "C" fn(aqlprofile_handle_t),
    handle: aqlprofile_handle_t,
}

static PACKET_SET: std::sync::Mutex<Option<PacketSet>> = std::sync::Mutex::new(None);
static UNLOADED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

unsafe extern "C" fn alloc_cb(
    ptr: *mut *mut c_void,
    size: u64,
    _flags: u32,
    _userdata: *mut c_void,
) -> hsa_status_t {
    // SAFETY: aqlprofile passes a writable pointer slot; calloc of the size it asks for.
    unsafe { *ptr = libc::calloc(1, size as usize) };
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn dealloc_cb(ptr: *mut c_void, _userdata: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        let after_unload = UNLOADED.load(std::sync::atomic::Ordering::SeqCst);
        log(&format!(
            "dealloc name={} after_unload={after_unload}",
            own_name()
        ));
    });
    // SAFETY: a buffer from `alloc_cb`, returned once.
    unsafe { libc::free(ptr) };
}

unsafe extern "C" fn memcpy_cb(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    _userdata: *mut c_void,
) -> hsa_status_t {
    // SAFETY: buffers of at least `size` bytes, as aqlprofile asks.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, size) };
    HSA_STATUS_SUCCESS
}

/// Opens aqlprofile and creates one v2 packet set; returns why not on failure.
fn create_packet_set() -> Result<PacketSet, String> {
    // SAFETY: dlopen with a NUL-terminated name.
    let library = unsafe { libc::dlopen(c"libhsa-amd-aqlprofile64.so".as_ptr(), libc::RTLD_NOW) };
    if library.is_null() {
        return Err("cannot open libhsa-amd-aqlprofile64.so".into());
    }
    let symbol = |name: &CStr| {
        // SAFETY: dlsym on a live handle.
        let p = unsafe { libc::dlsym(library, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    let (Some(register), Some(create), Some(delete)) = (
        symbol(c"aqlprofile_register_agent"),
        symbol(c"aqlprofile_pmc_create_packets"),
        symbol(c"aqlprofile_pmc_delete_packets"),
    ) else {
        return Err("aqlprofile lacks the v2 API".into());
    };
    // SAFETY: the symbols have the signatures of aqlprofile's v2 header.
    let (register, create, delete) = unsafe {
        (
            std::mem::transmute::<*mut c_void, aqlprofile_register_agent_fn>(register),
            std::mem::transmute::<*mut c_void, aqlprofile_pmc_create_packets_fn>(create),
            std::mem::transmute::<*mut c_void, aqlprofile_pmc_delete_packets_fn>(delete),
        )
    };
    let info = aqlprofile_agent_info_t {
        agent_gfxip: c"gfx942".as_ptr(),
        xcc_num: 8,
        se_num: 32,
        cu_num: 304,
        shader_arrays_per_se: 1,
    };
    let mut agent = aqlprofile_agent_handle_t::default();
    // SAFETY: valid out-pointer and info.
    if unsafe { register(&mut agent, &info) } != HSA_STATUS_SUCCESS {
        return Err("agent registration failed".into());
    }
    let waves = aqlprofile_pmc_event_t {
        block_index: 0,
        event_id: 4,
        flags: 0,
        block_name: 6, // SQ
    };
    let profile = aqlprofile_pmc_profile_t {
        agent,
        events: &waves,
        event_count: 1,
    };
    let mut handle = aqlprofile_handle_t::default();
    let mut packets = aqlprofile_pmc_aql_packets_t::default();
    // SAFETY: valid out-pointers and callbacks of the right signatures.
    let status = unsafe {
        create(
            &mut handle,
            &mut packets,
            profile,
            Some(alloc_cb),
            Some(dealloc_cb),
            Some(memcpy_cb),
            std::ptr::null_mut(),
        )
    };
    if status != HSA_STATUS_SUCCESS {
        return Err(format!("packet creation failed with 0x{status:x}"));
    }
    Ok(PacketSet {
        library: library as usize,
        delete,
        handle,
    })
}

fn log(line: &str) {
    if let Ok(path) = std::env::var("RTL_SIM_TEST_TOOL_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// This library's file stem (e.g. `tool_a` for `/tmp/x/tool_a.so`).
fn own_name() -> String {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr on the address of a function of this library; `info` is a valid out-pointer.
    let found = unsafe { libc::dladdr(own_name as *const c_void, &mut info) } != 0
        && !info.dli_fname.is_null();
    if !found {
        return "unknown".into();
    }
    // SAFETY: dladdr returned a NUL-terminated path.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    std::path::Path::new(&path)
        .file_stem()
        .map_or(path.clone(), |s| s.to_string_lossy().into_owned())
}

fn version(v: &ApiTableVersion) -> String {
    format!("{}.{}.{}", v.major_id, v.minor_id, v.step_id)
}

/// Reads the entry at `offset` (ROCm 7 layout) of the AMD extension table, if present.
///
/// # Safety
/// `table` is the runtime's live table; `F` is the entry's type.
unsafe fn amd_ext_entry<F: Copy>(table: *mut AmdExtTable, offset: usize) -> Option<F> {
    // SAFETY: per the contract; the offset is checked against the table's size.
    unsafe {
        let mapped = AmdExtTable::offset_in(&(*table).version, offset)?;
        Some(std::ptr::read((table as *const u8).add(mapped) as *const F))
    }
}

unsafe extern "C" fn handler(
    pkts: *const c_void,
    count: u64,
    user_pkt_index: u64,
    data: *mut c_void,
    writer: hsa_amd_queue_intercept_packet_writer,
) {
    let queue_id = data as u64;
    let name = SAVED.get().map_or("?", |s| s.name.as_str());
    log(&format!(
        "handler name={name} queue={queue_id} count={count} index={user_pkt_index}"
    ));
    if let Some(w) = writer {
        // SAFETY: forwarding the packets we were given to the writer we were given.
        unsafe { w(pkts, count) };
    }
}

unsafe extern "C" fn queue_create(
    agent: hsa_agent_t,
    size: u32,
    type_: hsa_queue_type32_t,
    callback: hsa_queue_error_callback,
    data: *mut c_void,
    private_segment_size: u32,
    group_segment_size: u32,
    queue: *mut *mut hsa_queue_t,
) -> hsa_status_t {
    let result = std::panic::catch_unwind(|| {
        let Some(saved) = SAVED.get() else {
            return HSA_STATUS_ERROR;
        };
        // SAFETY: calling the runtime's functions with the application's arguments.
        unsafe {
            // A queue made by an earlier tool's wrapper is already an intercept queue: register on it.
            let mut status = (saved.queue_create)(
                agent,
                size,
                type_,
                callback,
                data,
                private_segment_size,
                group_segment_size,
                queue,
            );
            if status == HSA_STATUS_SUCCESS
                && (saved.intercept_register)(*queue, Some(handler), (**queue).id as *mut c_void)
                    == HSA_STATUS_SUCCESS
            {
                (saved.set_profiler_enabled)(*queue, 1);
                return status;
            }
            if status == HSA_STATUS_SUCCESS {
                // A plain queue: replace it with an intercept queue.
                (saved.queue_destroy)(*queue);
            }
            status = (saved.intercept_create)(
                agent,
                size,
                type_,
                callback,
                data,
                private_segment_size,
                group_segment_size,
                queue,
            );
            if status != HSA_STATUS_SUCCESS {
                return status;
            }
            (saved.set_profiler_enabled)(*queue, 1);
            (saved.intercept_register)(*queue, Some(handler), (**queue).id as *mut c_void)
        }
    });
    result.unwrap_or(HSA_STATUS_ERROR)
}

/// Load order of this library when it is already in the process (e.g. `LD_PRELOAD`): the runtime
/// loads such libraries after those of `HSA_TOOLS_LIB`, by this priority.
#[no_mangle]
pub static HSA_AMD_TOOL_PRIORITY: u32 = 25;

/// Tools-library entry point.
///
/// # Safety
/// Called by the runtime with its live table.
#[no_mangle]
pub unsafe extern "C" fn OnLoad(
    table: *mut HsaApiTable,
    runtime_version: u64,
    failed_tool_count: u64,
    failed_tool_names: *const *const c_char,
) -> bool {
    std::panic::catch_unwind(|| {
        let name = own_name();
        let failed: Vec<String> = (0..failed_tool_count as usize)
            // SAFETY: the runtime passes `failed_tool_count` NUL-terminated names.
            .map(|i| unsafe { CStr::from_ptr(*failed_tool_names.add(i)) }.to_string_lossy().into_owned())
            .collect();
        // SAFETY: the runtime's live table.
        let (root, core, amd) = unsafe { (&*table, &*(*table).core_, &*(*table).amd_ext_) };
        log(&format!(
            "OnLoad name={name} runtime_version={runtime_version} failed={failed_tool_count} failed_names=[{}] root={} core={} amd_ext={}",
            failed.join(","),
            version(&root.version),
            version(&core.version),
            version(&amd.version)
        ));
        let fail = std::env::var("RTL_SIM_TEST_TOOL_FAIL").unwrap_or_default();
        if fail.split(',').any(|n| n.trim() == name) {
            return false;
        }
        if std::env::var("RTL_SIM_TEST_TOOL_AQLPROFILE").is_ok_and(|v| v == "keep" || v == "delete") {
            match create_packet_set() {
                Ok(set) => {
                    log(&format!("aqlprofile name={name} packet set created"));
                    *PACKET_SET.lock().unwrap_or_else(|p| p.into_inner()) = Some(set);
                }
                Err(e) => log(&format!("aqlprofile name={name} {e}")),
            }
        }
        if std::env::var("RTL_SIM_TEST_TOOL_INTERCEPT").is_ok_and(|v| v == "1") {
            // SAFETY: reading and patching the live tables, as tools do.
            unsafe {
                let core = (*table).core_;
                let amd = (*table).amd_ext_;
                let create = amd_ext_entry(amd, std::mem::offset_of!(AmdExtTable, hsa_amd_queue_intercept_create_fn));
                let register = amd_ext_entry(amd, std::mem::offset_of!(AmdExtTable, hsa_amd_queue_intercept_register_fn));
                let profiler = amd_ext_entry(amd, std::mem::offset_of!(AmdExtTable, hsa_amd_profiling_set_profiler_enabled_fn));
                if let (Some(queue_create_fn), Some(queue_destroy), Some(Some(ic)), Some(Some(ir)), Some(Some(pe))) =
                    ((*core).hsa_queue_create_fn, (*core).hsa_queue_destroy_fn, create, register, profiler)
                {
                    let _ = SAVED.set(Saved { name: name.clone(), queue_create: queue_create_fn, intercept_create: ic, intercept_register: ir, set_profiler_enabled: pe, queue_destroy });
                    (*core).hsa_queue_create_fn = Some(queue_create);
                } else {
                    log(&format!("OnLoad name={name} intercept entries missing"));
                }
            }
        }
        true
    })
    .unwrap_or(false)
}

/// Tools-library exit point.
#[no_mangle]
pub extern "C" fn OnUnload() {
    let _ = std::panic::catch_unwind(|| {
        let delete = std::env::var("RTL_SIM_TEST_TOOL_AQLPROFILE").is_ok_and(|v| v == "delete");
        let set = PACKET_SET.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let (true, Some(set)) = (delete, set) {
            // SAFETY: a live packet handle of the library it came from, deleted once; the
            // library handle is closed once, after its last use.
            unsafe {
                (set.delete)(set.handle);
                libc::dlclose(set.library as *mut c_void);
            }
        }
        log(&format!("OnUnload name={}", own_name()));
        UNLOADED.store(true, std::sync::atomic::Ordering::SeqCst);
    });
}
