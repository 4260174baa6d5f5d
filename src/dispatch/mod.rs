//! The interposer: the HSA tools library `librtl_pmc.so` that ROCr loads through
//! `HSA_TOOLS_LIB`.
//!
//! `OnLoad` checks the runtime's API tables (ROCm ≥ 6.0 layouts only; anything else leaves the
//! application untouched with one warning), reads what to do ([`config`]) and replaces four
//! entries: `hsa_queue_create` (queues become intercept queues with profiling enabled),
//! `hsa_queue_destroy` (pending records of the queue are completed and flushed),
//! `hsa_executable_freeze` and `hsa_executable_destroy` (kernel names and descriptors).
//!
//! Each selected kernel dispatch is rewritten ([`rewrite`]): its completion signal is replaced by
//! ours, and with counters it is surrounded by aqlprofile's start/read/stop packets
//! ([`counters`]) and chained after the previous counted dispatch on the same GPU; the other
//! dispatches of a GPU collecting counters wait for the last counted one and are waited for by
//! the next, so nothing runs beside a counted dispatch. Every kernel packet of a multi-packet
//! submission (a graph launch) is handled like a single one. A worker
//! thread ([`completion`]) completes the application's signal with the kernel's timestamps,
//! reads the counters and streams [`records`] to `<output directory>/<pid>.rtlraw`.
//!
//! With kernel replay (the plan's `replay`), the allocation entries are replaced too
//! ([`tracking`], [`memory`]), and each selected dispatch runs once per event group between
//! gates the completion worker opens after saving or restoring its memory ([`replay`]); records
//! of group `g` go to the `g`-th pass directory.
//!
//! Whatever is missing at run time (intercept queues, aqlprofile, signals) is reported once on
//! stderr, prefixed `rtl-pmc:`, and the affected dispatches run exactly as without the tool.

pub mod agents;
pub mod api;
pub mod completion;
pub mod config;
pub mod copies;
pub mod counters;
pub mod descriptor;
pub mod env_mode;
pub mod interposer;
pub mod kernel_names;
pub mod memory;
pub mod neighbours;
pub mod records;
pub mod replay;
pub mod rewrite;
pub mod roctx;
pub mod runtime;
pub mod selection;
pub mod signals;
pub mod threads;
pub mod tracking;

use std::collections::HashSet;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use crate::hsa::HsaApiTable;

/// Prints one warning line on stderr.
pub fn warn(message: &str) {
    eprintln!("rtl-pmc: {message}");
}

/// Prints a warning the first time `topic` comes up.
pub fn warn_once(topic: &str, message: &str) {
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if seen
        .get_or_insert_with(HashSet::new)
        .insert(topic.to_string())
    {
        warn(message);
    }
}

fn load(table: *mut HsaApiTable) {
    let get = |name: &str| std::env::var(name).ok();
    let config = match config::Config::from_env(&get) {
        Ok(Some(config)) => config,
        Ok(None) => {
            warn("neither RTL_PMC_PLAN nor RTL_PMC_OUTPUT/RTL_PMC_COUNTERS is set; not profiling");
            return;
        }
        Err(e) => {
            warn(&format!("{e}; not profiling"));
            return;
        }
    };
    let selector = match selection::Selector::new(&config.filters, config.group_interval) {
        Ok(s) => s,
        Err(e) => {
            warn(&format!("{e}; not profiling"));
            return;
        }
    };
    // SAFETY: `table` is the runtime's root table (or NULL), as OnLoad receives it.
    let tables = match unsafe { api::Tables::check(table) } {
        Ok(t) => t,
        Err(e) => {
            warn(&format!("{e}; not profiling"));
            return;
        }
    };
    if interposer::install(tables, config, selector) {
        // SAFETY: registering a plain C function; glibc runs it at exit or when this library
        // is unloaded, whichever comes first.
        unsafe { libc::atexit(at_exit) };
    }
}

/// Finishes the session at process exit, or when this library is unloaded before.
pub(crate) extern "C" fn at_exit() {
    let _ = catch_unwind(interposer::finish);
}

/// Keeps this library loaded until the process exits: for when aqlprofile may still call back.
fn keep_loaded() {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr on a function of this library with a valid out-pointer; dlopen of the path
    // it returns, only marking the already loaded library as never to be unloaded.
    unsafe {
        if libc::dladdr(keep_loaded as *const std::ffi::c_void, &mut info) != 0
            && !info.dli_fname.is_null()
        {
            libc::dlopen(
                info.dli_fname,
                libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
            );
        }
    }
}

/// Called by the runtime after loading the library. Always returns true: on any problem the
/// application runs untouched.
///
/// # Safety
/// Called by the HSA runtime with its live API table.
#[no_mangle]
pub unsafe extern "C" fn OnLoad(
    table: *mut HsaApiTable,
    _runtime_version: u64,
    _failed_tool_count: u64,
    _failed_tool_names: *const *const c_char,
) -> bool {
    if catch_unwind(AssertUnwindSafe(|| load(table))).is_err() {
        warn("internal error while loading; not profiling");
    }
    true
}

/// Called by the runtime before it unloads the library: restores the tables, completes pending
/// dispatches and flushes the records.
#[no_mangle]
pub extern "C" fn OnUnload() {
    let _ = catch_unwind(interposer::uninstall);
}
