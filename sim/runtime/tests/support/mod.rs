//! Helpers shared by the runtime's integration tests: HSA calls through the exported functions,
//! packet submission, and re-running this test binary as a child process with its own environment.
#![allow(dead_code)]

pub use hsa_runtime64::api::exports::*;
pub use hsa_runtime64::hsa::*;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;

/// Asserts an HSA call succeeded.
#[track_caller]
pub fn ok(status: hsa_status_t) {
    assert_eq!(
        status, HSA_STATUS_SUCCESS,
        "HSA call failed with 0x{status:x}"
    );
}

/// Initializes the runtime (reference counted; tests share the process).
pub fn init() {
    // SAFETY: plain HSA call.
    ok(unsafe { hsa_init() });
}

unsafe extern "C" fn collect(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is the Vec passed by `agents`.
    unsafe { (*(data as *mut Vec<hsa_agent_t>)).push(agent) };
    HSA_STATUS_SUCCESS
}

/// Every agent, CPU first.
pub fn agents() -> Vec<hsa_agent_t> {
    let mut list: Vec<hsa_agent_t> = Vec::new();
    // SAFETY: the callback writes into `list`.
    ok(unsafe { hsa_iterate_agents(Some(collect), &mut list as *mut _ as *mut c_void) });
    list
}

/// The first GPU agent.
pub fn gpu() -> hsa_agent_t {
    agents()[1]
}

/// A u32 agent attribute.
pub fn info_u32(agent: hsa_agent_t, attribute: hsa_agent_info_t) -> u32 {
    let mut v = 0u32;
    // SAFETY: u32 out-pointer for a u32 attribute.
    ok(unsafe { hsa_agent_get_info(agent, attribute, &mut v as *mut u32 as *mut c_void) });
    v
}

/// A `char[64]` agent attribute.
pub fn info_str(agent: hsa_agent_t, attribute: hsa_agent_info_t) -> String {
    let mut v = [0u8; 64];
    // SAFETY: 64-byte out buffer.
    ok(unsafe { hsa_agent_get_info(agent, attribute, v.as_mut_ptr() as *mut c_void) });
    String::from_utf8_lossy(&v[..v.iter().position(|&b| b == 0).unwrap_or(64)]).into_owned()
}

/// A new signal.
pub fn signal(value: i64) -> hsa_signal_t {
    let mut s = hsa_signal_t::default();
    // SAFETY: valid out-pointer.
    ok(unsafe { hsa_signal_create(value, 0, std::ptr::null(), &mut s) });
    s
}

/// A new queue on `agent`.
pub fn queue(agent: hsa_agent_t, size: u32) -> *mut hsa_queue_t {
    let mut q = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe {
        hsa_queue_create(
            agent,
            size,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut q,
        )
    });
    q
}

/// A kernel dispatch packet (header not yet valid: [`submit`] publishes it).
pub fn dispatch(grid: u32, workgroup: u16, completion: hsa_signal_t, barrier: bool) -> AqlPacket {
    let p = hsa_kernel_dispatch_packet_t {
        header: packet_header(
            HSA_PACKET_TYPE_KERNEL_DISPATCH,
            barrier,
            HSA_FENCE_SCOPE_SYSTEM,
            HSA_FENCE_SCOPE_SYSTEM,
        ),
        setup: 1,
        workgroup_size_x: workgroup,
        workgroup_size_y: 1,
        workgroup_size_z: 1,
        grid_size_x: grid,
        grid_size_y: 1,
        grid_size_z: 1,
        kernel_object: 0x1234_5000,
        completion_signal: completion,
        ..Default::default()
    };
    AqlPacket::from(&p)
}

/// A barrier-AND packet.
pub fn barrier_and(deps: &[hsa_signal_t], completion: hsa_signal_t) -> AqlPacket {
    let mut dep_signal = [hsa_signal_t::default(); 5];
    dep_signal[..deps.len()].copy_from_slice(deps);
    let p = hsa_barrier_and_packet_t {
        header: packet_header(
            HSA_PACKET_TYPE_BARRIER_AND,
            true,
            HSA_FENCE_SCOPE_SYSTEM,
            HSA_FENCE_SCOPE_SYSTEM,
        ),
        dep_signal,
        completion_signal: completion,
        ..Default::default()
    };
    AqlPacket::from(&p)
}

/// Writes `packets` to `queue` (body, then header) and rings the doorbell once.
pub fn submit(queue: *mut hsa_queue_t, packets: &[AqlPacket]) {
    // SAFETY: `queue` is a live queue of the runtime; slots are reserved before being written.
    unsafe {
        let base = hsa_queue_add_write_index_screlease(queue, packets.len() as u64);
        let size = (*queue).size as u64;
        let ring = (*queue).base_address as *mut AqlPacket;
        for (i, p) in packets.iter().enumerate() {
            let index = base + i as u64;
            while index - hsa_queue_load_read_index_scacquire(queue) >= size {
                std::thread::yield_now();
            }
            let slot = ring.add((index % size) as usize) as *mut u32;
            std::ptr::copy_nonoverlapping(p.dwords.as_ptr().add(1), slot.add(1), 15);
            std::sync::atomic::AtomicU32::from_ptr(slot)
                .store(p.dwords[0], std::sync::atomic::Ordering::Release);
        }
        hsa_signal_store_screlease(
            (*queue).doorbell_signal,
            (base + packets.len() as u64 - 1) as i64,
        );
    }
}

/// Waits until `s` is 0 (at most 10 s); returns its value.
pub fn wait_zero(s: hsa_signal_t) -> i64 {
    // SAFETY: a live signal.
    unsafe {
        hsa_signal_wait_scacquire(
            s,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            10_000_000_000,
            HSA_WAIT_STATE_BLOCKED,
        )
    }
}

/// Dispatch timestamps of a completed signal.
pub fn dispatch_time(s: hsa_signal_t) -> (u64, u64) {
    let mut t = hsa_amd_profiling_dispatch_time_t::default();
    // SAFETY: valid out-pointer.
    ok(unsafe { hsa_amd_profiling_get_dispatch_time(gpu(), s, &mut t) });
    (t.start, t.end)
}

/// Environment variable telling a child which scenario to run.
pub const SCENARIO: &str = "RTL_SIM_TEST_SCENARIO";

/// Runs the ignored test `child` of this binary in a new process with `env`; returns its
/// stdout+stderr and asserts it succeeded.
pub fn run_child(child: &str, scenario: &str, env: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        child,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(SCENARIO, scenario);
    for var in [
        "RTL_SIM_ROCM",
        "RTL_SIM_INTERCEPT",
        "RTL_SIM_DEVICES",
        "HSA_TOOLS_LIB",
        "RTL_SIM_NO_INTERCEPT",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the test binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "child scenario {scenario} failed:\n{text}"
    );
    // The harness prints `test child ... ` right before the scenario's first line.
    text.replace("test child ... ", "\n")
}

/// The directory holding the built cdylibs (`target/<profile>`): the parent of `deps/`.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// A built cdylib of the workspace, copied to `dir/<name>.so`.
pub fn copy_cdylib(file: &str, dir: &std::path::Path, name: &str) -> PathBuf {
    let src = target_dir().join(file);
    assert!(
        src.exists(),
        "{} is missing: run `cargo build --workspace` before the tests",
        src.display()
    );
    let dst = dir.join(format!("{name}.so"));
    std::fs::copy(&src, &dst).expect("copy the cdylib");
    dst
}

/// A fresh scratch directory under the target dir, unique in this test process.
pub fn scratch(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = target_dir()
        .join("rtl-sim-tests")
        .join(format!("{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
