//! `rtl-demo-app` on the simulated ROCm: it finds the simulated GPUs, loads the fixture code
//! objects, dispatches from several threads and queues, and the simulator's host kernels give it
//! exactly the results it checks.

mod sim_support;

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

use sim_support::{artifact, sim_env};

fn demo(config: &str, args: &[&str]) -> Output {
    Command::new(artifact("rtl-demo-app"))
        .args(args)
        .envs(sim_env(config))
        .output()
        .expect("rtl-demo-app starts")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(out),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the demo with the simulator's ground truth (SQ_WAVES) on; checks that it succeeded and
/// returns its output and the ground-truth record of each dispatch.
fn demo_with_truth(config: &str, args: &[&str]) -> (Output, Vec<serde_json::Value>) {
    // One file per call: tests of one configuration run at once in this process.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let truth = std::env::temp_dir().join(format!(
        "rtl-demo-truth-{config}-{}-{call}.jsonl",
        std::process::id()
    ));
    let out = Command::new(artifact("rtl-demo-app"))
        .args(args)
        .envs(sim_env(config))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", "SQ_WAVES")
        .output()
        .expect("rtl-demo-app starts");
    assert_ok(&out);
    assert!(truth.exists(), "the ground-truth file was written");
    let records = sim_support::read_ground_truth(&truth);
    std::fs::remove_file(&truth).unwrap();
    (out, records)
}

#[test]
fn default_run_verifies_every_dispatch() {
    let out = demo("gfx942", &[]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "rtl-demo-app: 4 dispatches verified (vadd,saxpy,fill,increment) on 1 GPU(s) [gfx942], \
         1 thread(s) x 1 queue(s) x 1 iteration(s)\n"
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn iterations_threads_and_queues_multiply_dispatches() {
    let (out, records) = demo_with_truth(
        "gfx942",
        &[
            "--iterations",
            "3",
            "--threads",
            "2",
            "--queues",
            "2",
            "--size",
            "1000",
        ],
    );
    assert_eq!(
        stdout(&out),
        "rtl-demo-app: 48 dispatches verified (vadd,saxpy,fill,increment) on 1 GPU(s) [gfx942], \
         2 thread(s) x 2 queue(s) x 3 iteration(s)\n"
    );
    // The simulator's own record of executed dispatches agrees: 3 x 2 x 2 of each kernel, on
    // 4 distinct queues.
    assert_eq!(records.len(), 48);
    for kernel in ["vadd", "saxpy", "fill", "increment"] {
        assert_eq!(
            records.iter().filter(|r| r["kernel"] == kernel).count(),
            12,
            "{kernel}"
        );
    }
    let queues: std::collections::BTreeSet<u64> = records
        .iter()
        .map(|r| r["queue"].as_u64().unwrap())
        .collect();
    assert_eq!(queues.len(), 4);
}

#[test]
fn every_fixture_kernel_runs_on_rdna() {
    let kernels = [
        "lds_reverse",
        "scratchy",
        "copy",
        "empty",
        "indirect_increment",
        "vadd",
    ];
    let args: Vec<&str> = kernels.iter().flat_map(|k| ["--kernel", k]).collect();
    let out = demo("gfx1100", &args);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "rtl-demo-app: 6 dispatches verified (lds_reverse,scratchy,copy,empty,indirect_increment,\
         vadd) on 1 GPU(s) [gfx1100], 1 thread(s) x 1 queue(s) x 1 iteration(s)\n"
    );
}

#[test]
fn cpp_kernels_run_on_every_target_under_their_mangled_symbols() {
    for target in ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"] {
        let (out, records) =
            demo_with_truth(target, &["--kernel", "vadd", "--cpp", "--size", "300"]);
        assert_eq!(
            stdout(&out),
            format!(
                "rtl-demo-app: 4 dispatches verified (vadd,scale<float>,scale<unsigned>,\
                 demo::twice) on 1 GPU(s) [{target}], 1 thread(s) x 1 queue(s) x 1 iteration(s)\n"
            )
        );
        let kernels: Vec<&str> = records
            .iter()
            .map(|r| r["kernel"].as_str().unwrap())
            .collect();
        assert_eq!(
            kernels,
            [
                "vadd",
                "_Z5scaleIfEvPT_S0_j",
                "_Z5scaleIjEvPT_S0_j",
                "_ZN4demo5twiceEPjj"
            ],
            "{target}"
        );
    }
    let out = demo(
        "gfx942",
        &["--kernel", "demo::twice", "--kernel", "demo::twice"],
    );
    assert_ok(&out);
    assert!(stdout(&out).starts_with(
        "rtl-demo-app: 2 dispatches verified (demo::twice,demo::twice) on 1 GPU(s) [gfx942]"
    ));
}

#[test]
fn all_gpus_by_default_and_gpus_limits() {
    let out = demo("gfx942x2", &["--kernel", "fill"]);
    assert_ok(&out);
    assert!(stdout(&out)
        .starts_with("rtl-demo-app: 2 dispatches verified (fill) on 2 GPU(s) [gfx942,gfx942]"));
    let out = demo("gfx942x2", &["--kernel", "fill", "--gpus", "1"]);
    assert_ok(&out);
    assert!(
        stdout(&out).starts_with("rtl-demo-app: 1 dispatches verified (fill) on 1 GPU(s) [gfx942]")
    );
}

#[test]
fn exit_code_crash_and_fork() {
    let out = demo("gfx942", &["--exit-code", "7"]);
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).starts_with("rtl-demo-app: 4 dispatches verified"));

    let out = demo("gfx942", &["--crash", "--iterations", "2"]);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV));
    assert_eq!(stdout(&out), "");

    let out = demo("gfx942", &["--fork", "--kernel", "increment"]);
    assert_ok(&out);
    let mut lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    lines.sort();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("rtl-demo-app (child): 1 dispatches verified (increment)"));
    assert!(lines[1].starts_with("rtl-demo-app: 1 dispatches verified (increment)"));
}

#[test]
fn a_failing_runtime_is_reported() {
    let out = demo("no-such-gpu", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.ends_with("rtl-demo-app: hsa_init failed with status 0x1008\n"),
        "{stderr}"
    );
}

#[test]
fn roctx_without_a_roctx_library_runs_unannotated() {
    let out = demo("gfx942", &["--roctx"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "rtl-demo-app: 4 dispatches verified (vadd,saxpy,fill,increment) on 1 GPU(s) [gfx942], \
         1 thread(s) x 1 queue(s) x 1 iteration(s)\n"
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn graphs_behind_one_doorbell_are_verified_beside_single_dispatches() {
    let (out, records) = demo_with_truth(
        "gfx942",
        &[
            "--graph",
            "--graph-threads",
            "1",
            "--threads",
            "2",
            "--iterations",
            "2",
        ],
    );
    assert_eq!(
        stdout(&out),
        "rtl-demo-app: 16 dispatches verified (vadd,saxpy,fill,increment) on 1 GPU(s) [gfx942], \
         2 thread(s) x 1 queue(s) x 2 iteration(s)\n"
    );
    assert_eq!(records.len(), 16);
    // A graph's second pair starts after both kernels of the first ended.
    let mut by_queue: std::collections::BTreeMap<u64, Vec<&serde_json::Value>> =
        std::collections::BTreeMap::new();
    for r in &records {
        by_queue
            .entry(r["queue"].as_u64().unwrap())
            .or_default()
            .push(r);
    }
    let field = |r: &serde_json::Value, name: &str| r[name].as_u64().unwrap();
    let graphs = by_queue
        .values()
        .find(|q| {
            q.windows(2)
                .any(|w| field(w[0], "start") == field(w[1], "start"))
        })
        .expect("one queue's kernels run two at a time");
    for graph in graphs.chunks(4) {
        let first_done = field(graph[0], "end").max(field(graph[1], "end"));
        assert!(field(graph[2], "start") >= first_done, "{graph:?}");
        assert!(field(graph[3], "start") >= first_done, "{graph:?}");
    }
    let refused = demo("gfx942", &["--graph-threads", "1"]);
    assert_eq!(refused.status.code(), Some(2));
}
