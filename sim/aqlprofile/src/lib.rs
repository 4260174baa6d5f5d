//! A simulated aqlprofile: `libhsa-amd-aqlprofile64.so` with the v2 `aqlprofile_*` API and the
//! legacy `hsa_ven_amd_aqlprofile_*` API (HSA extension 0x202, library version 2.0).
//!
//! It builds the same artefacts as the real library — PM4-IB AQL packets whose indirect buffers
//! program, start, read and stop counter registers — with the block limits, instance counts and
//! sample order of the real one (tables in `sim/data`). For the gfx9 family the command buffers
//! hold the PM4 packets AMD's library writes (`sim/gfx9.rs`), which the simulated GPU executes at
//! register level; for later families, whose register facts the project lacks, they hold the
//! simulator's own commands (`sim/pm4.rs`).
//!
//! Environment: `RTL_SIM_AQLPROFILE=6|7` selects whether the legacy stop packet (6) or read
//! packet (7, default) copies the counters; `AQLPROFILE_READ_API=0` (read when the library is
//! loaded) folds the read into stop and makes the legacy read fail, as in ROCm 7;
//! `RTL_SIM_FAIL_AQLPROFILE_REGISTER=N` and `RTL_SIM_FAIL_AQLPROFILE_PACKETS=N` make the Nth
//! agent registration / packet creation fail with `HSA_STATUS_ERROR`;
//! `RTL_SIM_AQLPROFILE_ZEROS=1` makes every sample of both APIs read 0, as counters that never
//! count do (a GPU whose power management stops them, another tool reprogramming them);
//! `RTL_SIM_AQLPROFILE_LOG=<file>` receives one line when the library is torn down.
//!
//! Like AMD's library, it keeps the v2 packet sets a caller never deleted in a process-wide
//! table that is torn down at process exit (or when the library is unloaded first), returning
//! their buffers through the caller's `dealloc_cb` then: a tool that is already unloaded by
//! that time is called anyway.

pub mod abi;
#[path = "../../data/arch.rs"]
#[allow(dead_code)]
mod arch;
#[path = "../../gfx9.rs"]
#[allow(dead_code)]
mod gfx9;
#[path = "../../../src/hsa/mod.rs"]
pub mod hsa;
pub mod legacy;
mod plan;
#[path = "../../pm4.rs"]
#[allow(dead_code)]
mod pm4;
pub mod v2;

use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use abi::{hsa_ext_amd_aql_pm4_packet_t, hsa_status_t, HSA_STATUS_ERROR};

/// Which ROCm's legacy stop/read split the library imitates, fixed when it is loaded.
#[derive(Debug, Clone, Copy)]
struct Config {
    /// ROCm 6.x: the stop packet copies the counters (and so does read).
    stop_copies: bool,
    /// `AQLPROFILE_READ_API` is not 0: the legacy read packet exists.
    read_api: bool,
    /// `RTL_SIM_AQLPROFILE_ZEROS=1`: every sample reads 0.
    zeros: bool,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

fn config() -> Config {
    *CONFIG.get_or_init(|| {
        let var = |name: &str| std::env::var(name).ok();
        Config {
            stop_copies: var("RTL_SIM_AQLPROFILE").is_some_and(|v| v.trim() == "6"),
            read_api: var("AQLPROFILE_READ_API")
                .is_none_or(|v| v.trim().parse::<i64>().unwrap_or(0) != 0),
            zeros: var("RTL_SIM_AQLPROFILE_ZEROS").is_some_and(|v| v.trim() == "1"),
        }
    })
}

extern "C" fn at_load() {
    let _ = catch_unwind(config);
    // SAFETY: registers a plain C function. glibc ties it to this library, so it runs at process
    // exit or when the library is unloaded, whichever comes first, in the order of a C++ static
    // destructor registered by the library's constructor.
    unsafe { libc::atexit(v2::tear_down) };
}

/// Reads the environment when the library is loaded, as the real library's constructor does,
/// and registers the teardown of its table of live packet sets.
#[used]
#[link_section = ".init_array"]
static AT_LOAD: extern "C" fn() = at_load;

/// Whether every sample reports 0 (`RTL_SIM_AQLPROFILE_ZEROS=1`) instead of its counter.
fn reports_zeros() -> bool {
    config().zeros
}

/// The value a sample reports: the counter's, or 0 under `RTL_SIM_AQLPROFILE_ZEROS=1`.
fn sample_value(counted: u64) -> u64 {
    if reports_zeros() {
        0
    } else {
        counted
    }
}

/// Appends `line` to `RTL_SIM_AQLPROFILE_LOG`, when set.
fn log(line: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os("RTL_SIM_AQLPROFILE_LOG") else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
    }
}

/// Answers the COMMAND_BUFFER_SIZE and PMC_DATA_SIZE queries, which both APIs share: the
/// buffer sizes a caller should allocate. Returns `None` for any other attribute.
///
/// # Safety
/// `value` must point at a writable `u32` when the attribute is one of the two.
unsafe fn write_buffer_size(attribute: u32, value: *mut c_void) -> Option<hsa_status_t> {
    let size: u32 = match attribute {
        abi::info::COMMAND_BUFFER_SIZE => 0x4000,
        abi::info::PMC_DATA_SIZE => 0x1800,
        _ => return None,
    };
    // SAFETY: the caller passes a u32 for these queries.
    unsafe { *(value as *mut u32) = size };
    Some(abi::HSA_STATUS_SUCCESS)
}

/// Fault injection: true when this is the Nth call counted by `counter` and `var` is N.
fn injected_failure(var: &str, counter: &AtomicU64) -> bool {
    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        == Some(n)
}

static REGISTRATIONS: AtomicU64 = AtomicU64::new(0);
static PACKET_CREATIONS: AtomicU64 = AtomicU64::new(0);

/// `RTL_SIM_FAIL_AQLPROFILE_REGISTER`: whether this agent registration must fail.
fn fail_registration() -> bool {
    injected_failure("RTL_SIM_FAIL_AQLPROFILE_REGISTER", &REGISTRATIONS)
}

/// `RTL_SIM_FAIL_AQLPROFILE_PACKETS`: whether this packet creation must fail.
fn fail_packets() -> bool {
    injected_failure("RTL_SIM_FAIL_AQLPROFILE_PACKETS", &PACKET_CREATIONS)
}

fn last_error() -> &'static Mutex<CString> {
    static LAST: OnceLock<Mutex<CString>> = OnceLock::new();
    LAST.get_or_init(|| Mutex::new(CString::default()))
}

/// Records `message` for `hsa_ven_amd_aqlprofile_error_string` and returns `status`.
fn fail(status: hsa_status_t, message: impl std::fmt::Display) -> hsa_status_t {
    let text = format!("aqlprofile: {message}");
    let c = CString::new(text.replace('\0', " ")).unwrap_or_default();
    *last_error().lock().unwrap_or_else(|p| p.into_inner()) = c;
    status
}

/// Runs the body of a C entry point; a panic becomes `HSA_STATUS_ERROR`.
fn guard(body: impl FnOnce() -> hsa_status_t) -> hsa_status_t {
    catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| fail(HSA_STATUS_ERROR, "internal error"))
}

/// Fills everything but the header and completion signal of `packet` so that it executes
/// `dwords` dwords at `addr`.
///
/// # Safety
/// `packet` must point to a writable AQL packet.
unsafe fn fill_packet(
    packet: *mut hsa_ext_amd_aql_pm4_packet_t,
    addr: *const c_void,
    dwords: usize,
) {
    // SAFETY: the caller guarantees a writable 64-byte packet; only bytes 2..56 are written.
    let bytes = unsafe { &mut *(packet as *mut [u8; pm4::AQL_PACKET_SIZE]) };
    pm4::fill_ib_packet(bytes, addr as u64, dwords as u32);
}

/// The gfx target of an agent name such as `gfx942:sramecc+:xnack-`.
fn arch_of(name: &str) -> Option<String> {
    let arch = name.split(':').next()?.trim();
    (arch.starts_with("gfx") && arch.len() > 3).then(|| arch.to_string())
}
