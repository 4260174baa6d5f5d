//! Unload order against an aqlprofile that calls back at process exit, as AMD's does: the
//! simulated library returns the buffers of every v2 packet set still alive through the tool's
//! `dealloc_cb` when it is torn down (at exit, or when unloaded first), and logs how many sets
//! were left (`RTL_SIM_AQLPROFILE_LOG`).
//!
//! A tool that leaves a set alive crashes the application at exit once the runtime has unloaded
//! it; `librtl_pmc.so` deletes every set and releases aqlprofile before `OnUnload` returns, so
//! the application exits with its own status, in both intercept modes, with both aqlprofile
//! APIs, whether the application shuts the runtime down or not.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use common::{artifact, assert_matches_truth, plan, run_demo, scratch};
use rtl_pmc::passes::plan_file::KernelFilters;

const GROUP: &[&str] = &["SQ_WAVES", "GRBM_COUNT"];

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Runs the demo app under the test tool in aqlprofile mode `mode` (`keep` or `delete`):
/// (wait status, tool log, aqlprofile log).
fn test_tool_run(name: &str, mode: &str, app_args: &[&str]) -> (i32, Vec<String>, Vec<String>) {
    let dir = scratch(name);
    let tool = dir.join("tool.so");
    std::fs::copy(artifact("librtl_sim_test_tool.so"), &tool).expect("copy the test tool");
    let (tool_log, aql_log) = (dir.join("tool.log"), dir.join("aqlprofile.log"));
    let run = run_demo(
        &dir,
        "gfx942",
        None,
        &[
            ("HSA_TOOLS_LIB", tool.to_str().unwrap()),
            ("RTL_SIM_TEST_TOOL_LOG", tool_log.to_str().unwrap()),
            ("RTL_SIM_TEST_TOOL_AQLPROFILE", mode),
            ("RTL_SIM_AQLPROFILE_LOG", aql_log.to_str().unwrap()),
        ],
        &[],
        app_args,
    );
    assert!(
        run.stdout()
            .starts_with("rtl-demo-app: 4 dispatches verified"),
        "{}{}",
        run.stdout(),
        run.stderr()
    );
    (
        run.output.status.into_raw(),
        lines(&tool_log),
        lines(&aql_log),
    )
}

const TOOL_LOADED: &str = "OnLoad name=tool runtime_version=3 failed=0 failed_names=[] root=3.64.1 core=2.1016.0 amd_ext=2.704.8";

#[test]
fn a_tool_leaving_a_packet_set_alive_is_called_back_after_it_was_unloaded() {
    let (status, tool, aqlprofile) = test_tool_run("tool-keep", "keep", &[]);
    assert!(
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSEGV,
        "wait status {status:#x}: the exit-time callback must hit the unloaded tool"
    );
    assert_eq!(
        tool,
        [
            TOOL_LOADED,
            "aqlprofile name=tool packet set created",
            "OnUnload name=tool"
        ]
    );
    assert_eq!(aqlprofile, ["live packet sets at teardown: 1"]);
}

#[test]
fn a_tool_deleting_its_packet_set_at_unload_exits_cleanly() {
    let (status, tool, aqlprofile) = test_tool_run("tool-delete", "delete", &[]);
    assert_eq!(status, 0);
    assert_eq!(
        tool,
        [
            TOOL_LOADED,
            "aqlprofile name=tool packet set created",
            "dealloc name=tool after_unload=false",
            "dealloc name=tool after_unload=false",
            "OnUnload name=tool",
        ]
    );
    assert_eq!(aqlprofile, ["live packet sets at teardown: 0"]);
}

/// The demo app (exit code 3, two threads with two queues each, so that pools hold several
/// packet sets) under `librtl_pmc.so` with `env`: its own status, exact counters, no set left.
fn profiled_run(name: &str, env: &[(&str, &str)], app_args: &[&str]) {
    let dir = scratch(name);
    let plan = plan(&dir, "gfx942", &[GROUP], KernelFilters::default(), 1);
    let aql_log = dir.join("aqlprofile.log");
    let mut env = env.to_vec();
    env.push(("RTL_SIM_AQLPROFILE_LOG", aql_log.to_str().unwrap()));
    let mut args = vec!["--exit-code", "3", "--threads", "2", "--queues", "2"];
    args.extend_from_slice(app_args);
    let run = run_demo(&dir, "gfx942", Some(&plan), &env, GROUP, &args);
    assert_eq!(
        run.output.status.code(),
        Some(3),
        "status {:?}\nstderr:\n{}",
        run.output.status,
        run.stderr()
    );
    assert!(
        run.stdout()
            .starts_with("rtl-demo-app: 16 dispatches verified"),
        "{}",
        run.stdout()
    );
    assert_eq!(run.stderr(), "");
    assert_eq!(assert_matches_truth(&run, &[GROUP]), 16);
    assert_eq!(lines(&aql_log), ["live packet sets at teardown: 0"]);
}

#[test]
fn rtl_pmc_deletes_every_v2_packet_set_before_unload_batched() {
    profiled_run("v2-batch", &[("RTL_SIM_INTERCEPT", "batch")], &[]);
}

#[test]
fn rtl_pmc_deletes_every_v2_packet_set_before_unload_per_packet() {
    profiled_run("v2-packet", &[("RTL_SIM_INTERCEPT", "packet")], &[]);
}

#[test]
fn rtl_pmc_frees_every_legacy_packet_set_before_unload_batched() {
    profiled_run(
        "legacy-batch",
        &[
            ("RTL_SIM_INTERCEPT", "batch"),
            ("RTL_PMC_AQLPROFILE_API", "legacy"),
        ],
        &[],
    );
}

#[test]
fn rtl_pmc_frees_every_legacy_packet_set_before_unload_per_packet() {
    profiled_run(
        "legacy-packet",
        &[
            ("RTL_SIM_INTERCEPT", "packet"),
            ("RTL_PMC_AQLPROFILE_API", "legacy"),
        ],
        &[],
    );
}

#[test]
fn rtl_pmc_releases_aqlprofile_at_an_exit_without_shutdown() {
    for (api, mode) in [("v2", "batch"), ("v2", "packet"), ("legacy", "batch")] {
        profiled_run(
            &format!("no-shutdown-{api}-{mode}"),
            &[("RTL_SIM_INTERCEPT", mode), ("RTL_PMC_AQLPROFILE_API", api)],
            &["--no-shutdown"],
        );
    }
}

#[test]
fn rtl_pmc_cli_exits_with_the_applications_status() {
    let dir = scratch("cli");
    let aql_log = dir.join("aqlprofile.log");
    let output = Command::new(artifact("rtl-pmc"))
        .args(["--sim", "gfx942", "-d"])
        .arg(dir.join("out"))
        .args(["--pmc", "SQ_WAVES", "GRBM_COUNT", "--"])
        .arg(artifact("rtl-demo-app"))
        .args(["--exit-code", "5"])
        .env("RTL_SIM_AQLPROFILE_LOG", &aql_log)
        .output()
        .expect("rtl-pmc runs");
    assert_eq!(
        output.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(lines(&aql_log), ["live packet sets at teardown: 0"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
}
