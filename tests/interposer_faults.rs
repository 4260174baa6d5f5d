//! Whatever the interposer needs and does not get, it says so once and the application runs
//! exactly as without it.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use common::{assert_records_subset_of_truth, plan, run_demo, scratch, warnings};
use rtl_pmc::passes::plan_file::KernelFilters;

const GROUP: &[&str] = &["SQ_WAVES", "SQ_INSTS_VALU"];

fn faulty(name: &str, env: &[(&str, &str)], args: &[&str]) -> common::Run {
    let dir = scratch(name);
    let plan = plan(&dir, "gfx942", &[GROUP], KernelFilters::default(), 1);
    let run = run_demo(&dir, "gfx942", Some(&plan), env, GROUP, args);
    run.assert_success();
    assert!(
        run.stdout().contains(" dispatches verified"),
        "{}",
        run.stdout()
    );
    run
}

#[test]
fn no_intercept_support_leaves_queues_plain() {
    let run = faulty(
        "no-intercept",
        &[("RTL_SIM_NO_INTERCEPT", "1")],
        &["--queues", "2"],
    );
    assert_eq!(
        warnings(&run),
        ["rtl-pmc: cannot create an intercept queue (status 0x1000); queues are created without profiling"]
    );
    assert!(run.records.is_empty());
}

#[test]
fn a_failing_queue_creation_falls_back_to_a_plain_queue() {
    let run = faulty(
        "queue-create",
        &[("RTL_SIM_FAIL_QUEUE_CREATE", "1")],
        &["--queues", "2"],
    );
    assert_eq!(
        warnings(&run),
        ["rtl-pmc: cannot create an intercept queue (status 0x1008); queues are created without profiling"]
    );
    // The second queue is intercepted: its 4 dispatches are counted.
    assert_eq!(assert_records_subset_of_truth(&run), 4);
}

#[test]
fn a_failing_signal_creation_leaves_one_dispatch_unprofiled() {
    // Creation 1 is the interposer's wake-up signal (without it the worker polls), creation 2
    // the application's own signal, then the interposer's per-dispatch signals.
    let run = faulty(
        "signal-1",
        &[("RTL_SIM_FAIL_SIGNAL_CREATE", "1")],
        &["--iterations", "2"],
    );
    assert!(warnings(&run).is_empty(), "{:?}", warnings(&run));
    assert_eq!(assert_records_subset_of_truth(&run), 8);
    // Later creations depend on how fast the worker recycles pooled signals, so only the
    // first per-dispatch signal (creation 3) is a deterministic place to fail.
    let run = faulty(
        "signal-3",
        &[("RTL_SIM_FAIL_SIGNAL_CREATE", "3")],
        &["--iterations", "2"],
    );
    assert_eq!(
        warnings(&run),
        ["rtl-pmc: cannot create signals; dispatches run unprofiled"]
    );
    assert_eq!(assert_records_subset_of_truth(&run), 7);
}

#[test]
fn aqlprofile_registration_failure_means_no_profiling() {
    let run = faulty(
        "register",
        &[("RTL_SIM_FAIL_AQLPROFILE_REGISTER", "1")],
        &[],
    );
    let w = warnings(&run);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("rtl-pmc: aqlprofile aqlprofile_register_agent failed on gfx942"),
        "{w:?}"
    );
    assert!(
        w[0].ends_with(
            "counters are not collected on GPU 1 (gfx942), its dispatches run unprofiled"
        ),
        "{w:?}"
    );
    assert!(run.records.is_empty());
}

#[test]
fn aqlprofile_packet_failures_mean_unprofiled_dispatches() {
    let run = faulty(
        "packets-1",
        &[("RTL_SIM_FAIL_AQLPROFILE_PACKETS", "1")],
        &[],
    );
    assert_eq!(warnings(&run).len(), 1, "{:?}", warnings(&run));
    assert!(run.records.is_empty());
    let run = faulty(
        "packets-2",
        &[("RTL_SIM_FAIL_AQLPROFILE_PACKETS", "2")],
        &["--threads", "2", "--iterations", "4"],
    );
    assert!(warnings(&run).len() <= 1, "{:?}", warnings(&run));
    assert!(assert_records_subset_of_truth(&run) > 0);
}

#[test]
fn rocm_before_6_is_refused_untouched() {
    for rocm in ["5.7", "5.2"] {
        let run = faulty(&format!("rocm{rocm}"), &[("RTL_SIM_ROCM", rocm)], &[]);
        assert_eq!(
            warnings(&run),
            ["rtl-pmc: API table version 1.0 is not supported (rtl-pmc needs ROCm 6.0 or newer); not profiling"]
        );
        assert!(run.records.is_empty());
    }
}

#[test]
fn a_bad_plan_is_reported_and_ignored() {
    let dir = scratch("bad-plan");
    let path = dir.join("plan.json");
    std::fs::write(&path, "{").unwrap();
    let run = run_demo(&dir, "gfx942", Some(&path), &[], GROUP, &[]);
    run.assert_success();
    let w = warnings(&run);
    assert_eq!(w.len(), 1);
    assert!(
        w[0].starts_with(&format!(
            "rtl-pmc: {}: not an rtl-pmc plan: ",
            path.display()
        )),
        "{w:?}"
    );
    assert!(w[0].ends_with("; not profiling"));
}

#[test]
fn sigkill_keeps_the_flushed_records() {
    let dir = scratch("sigkill");
    let plan = plan(&dir, "gfx942", &[GROUP], KernelFilters::default(), 1);
    let mut child = Command::new(common::artifact("rtl-demo-app"))
        .args(["--iterations", "100000", "--size", "64"])
        .envs(common::sim_env("gfx942"))
        .env("HSA_TOOLS_LIB", common::artifact("librtl_pmc.so"))
        .env("RTL_PMC_PLAN", &plan)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    let records = common::records(&dir.join("out"));
    assert!(
        records.len() > 10,
        "only {} records survived",
        records.len()
    );
    let mut ids: Vec<u64> = records.iter().map(|r| r.dispatch).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), records.len(), "no record twice");
    assert!(records
        .iter()
        .all(|r| r.counters.len() == 2 && r.end > r.start));
}

#[test]
fn without_aqlprofile_the_application_runs_unprofiled() {
    let dir = scratch("no-aqlprofile");
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::os::unix::fs::symlink(
        common::artifact("libhsa_runtime64.so"),
        lib.join("libhsa-runtime64.so.1"),
    )
    .unwrap();
    let plan = plan(&dir, "gfx942", &[GROUP], KernelFilters::default(), 1);
    let out = Command::new(common::artifact("rtl-demo-app"))
        .env("LD_LIBRARY_PATH", &lib)
        .env("RTL_SIM_DEVICES", "gfx942")
        .env("HSA_TOOLS_LIB", common::artifact("librtl_pmc.so"))
        .env("RTL_PMC_PLAN", &plan)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("rtl-demo-app: 4 dispatches verified"));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rtl-pmc: aqlprofile is not available: the runtime has no aqlprofile extension (0x202); \
         counters are not collected, the application runs unprofiled\n"
    );
    assert!(common::records(&dir.join("out")).is_empty());
}
