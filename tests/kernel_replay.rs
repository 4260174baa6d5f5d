//! Kernel replay end to end (`rtl-pmc --replay-mode kernel`) on the simulated GPU, whose
//! reference kernels compute on host memory: one run of the application collects every pass;
//! each selected dispatch runs once per pass with its memory saved and restored, so the
//! application (which checks every result itself) sees one execution; every counter of every
//! pass equals the ground truth of the execution that pass recorded; dispatches that cannot be
//! replayed are run once (or left alone), counted and listed.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{artifact, assert_success, samples, scratch, sim_env, text};
use rtl_pmc::dispatch::records::{Record, ReplayStats};

/// One counter per pass: three passes.
const COUNTERS: [&str; 3] = ["SQ_WAVES", "GRBM_COUNT", "SQ_BUSY_CYCLES"];

/// Runs `rtl-pmc -d out --replay-mode kernel --pmc C1 --pmc C2 ... ARGS -- APP` on `devices`
/// (another `--replay-mode` when ARGS has one) with ground truth for [`COUNTERS`].
fn profile(
    dir: &Path,
    devices: &str,
    counters: &[&str],
    args: &[&str],
    app: &[&str],
    env: &[(&str, &str)],
) -> (Output, Vec<serde_json::Value>) {
    let truth = dir.join("truth.jsonl");
    let mut command = Command::new(artifact("rtl-pmc"));
    command
        .current_dir(dir)
        .envs(sim_env(devices))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", COUNTERS.join(","))
        .env("RTL_PMC_REPLAY_COSTS", dir.join("costs.json"))
        .envs(env.iter().copied())
        .args(["-d", "out"]);
    if !args.contains(&"--replay-mode") {
        command.args(["--replay-mode", "kernel"]);
    }
    for counter in counters {
        command.args(["--pmc", counter]);
    }
    let output = command
        .args(args)
        .arg("--")
        .args(app)
        .output()
        .expect("rtl-pmc starts");
    (output, common::ground_truth(&truth))
}

/// The raw records of `pass_N/`.
fn pass_records(dir: &Path, pass: u32) -> Vec<Record> {
    common::records(&dir.join("out").join(format!("pass_{pass}")))
}

/// The ground-truth line of the execution `r` recorded: same process, GPU and times.
fn truth_of<'a>(truth: &'a [serde_json::Value], r: &Record) -> &'a serde_json::Value {
    let found: Vec<&serde_json::Value> = truth
        .iter()
        .filter(|t| {
            t["pid"] == r.pid && t["agent"] == r.agent && t["start"] == r.start && t["end"] == r.end
        })
        .collect();
    assert_eq!(found.len(), 1, "ground truth of {r:?}");
    found[0]
}

/// Checks the passes of a kernel replay run against the ground truth: every pass has a record
/// of every dispatch (the same dispatch ids), collected with that pass's group, whose values
/// are exactly those of one executed kernel; every execution is recorded once; the application
/// ran once. Returns the records by pass.
fn assert_passes_exact(dir: &Path, truth: &[serde_json::Value], passes: u32) -> Vec<Vec<Record>> {
    let by_pass: Vec<Vec<Record>> = (1..=passes).map(|p| pass_records(dir, p)).collect();
    let ids = |records: &[Record]| -> BTreeSet<(u32, u64)> {
        records.iter().map(|r| (r.pid, r.dispatch)).collect()
    };
    let first = ids(&by_pass[0]);
    assert!(!first.is_empty());
    let mut matched = BTreeSet::new();
    for (p, records) in by_pass.iter().enumerate() {
        assert_eq!(
            ids(records),
            first,
            "pass {} has the dispatches of pass 1",
            p + 1
        );
        assert_eq!(records.len(), first.len());
        for r in records {
            assert_eq!(r.group, Some(p as u32), "{r:?}");
            let t = truth_of(truth, r);
            assert_eq!(r.counters, vec![samples(t, COUNTERS[p])], "{r:?}");
            assert!(matched.insert((r.pid, r.agent, r.start, r.end)), "{r:?}");
        }
    }
    assert_eq!(matched.len(), truth.len(), "every execution recorded once");
    let pids: BTreeSet<u64> = truth.iter().map(|t| t["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids.len(), 1, "the application ran once");
    by_pass
}

/// Checks `results.csv` against the records of every pass: per dispatch (found by its queue and
/// packet index) the value of each pass's counter is the ground truth of that pass's execution.
fn assert_results_exact(dir: &Path, by_pass: &[Vec<Record>], truth: &[serde_json::Value]) {
    let rows = common::read_table(&dir.join("out/results.csv"));
    assert_eq!(rows.len(), by_pass[0].len());
    for row in rows {
        let key = (
            row["pid"].parse::<u32>().unwrap(),
            row["queue-id"].parse::<u64>().unwrap(),
            row["queue-index"].parse::<u64>().unwrap(),
        );
        for (p, records) in by_pass.iter().enumerate() {
            let r = records
                .iter()
                .find(|r| (r.pid, r.queue, r.queue_index) == key)
                .unwrap_or_else(|| panic!("pass {} has no record of {row:?}", p + 1));
            let expected: u64 = samples(truth_of(truth, r), COUNTERS[p]).iter().sum();
            assert_eq!(row[COUNTERS[p]], expected.to_string(), "{row:?}");
        }
    }
}

/// Profiles `rtl-demo-app --kernel KERNEL --iterations 3` (ARGS before `--`) on one gfx942 in
/// the three passes of [`COUNTERS`], with kernel replay, in `scratch(name)`, and checks what any
/// of the demo's kernels that add 1 to each element of its lane's third buffer must give: the
/// application ran once and found every element of its 3 dispatches right; each dispatch ran
/// once per pass, recorded once per pass with that execution's ground truth, in the records and
/// `results.csv`; the whole lane saved and the bytes the kernel changed restored, per dispatch,
/// in the records and the summary. Returns the directory.
fn replay_three_increments(name: &str, kernel: &str, args: &[&str]) -> PathBuf {
    let dir = scratch(name);
    let app = artifact("rtl-demo-app");
    let (output, truth) = profile(
        &dir,
        "gfx942",
        &COUNTERS,
        args,
        &[
            app.to_str().unwrap(),
            "--kernel",
            kernel,
            "--iterations",
            "3",
        ],
        &[],
    );
    assert_success(&output);
    // The demo checks every element: the kernel ran once as far as it can tell.
    assert!(
        text(&output.stdout).contains(&format!("rtl-demo-app: 3 dispatches verified ({kernel})")),
        "{}",
        text(&output.stdout)
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("rtl-pmc: [pass 1/1] 3 passes, kernel replay\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("[pass 2/"), "{stderr}");
    assert_eq!(truth.len(), 9, "3 dispatches, each executed in 3 passes");
    assert!(truth
        .iter()
        .all(|t| t["kernel"] == kernel && t["computed"] == true));
    let by_pass = assert_passes_exact(&dir, &truth, 3);
    // The demo's lane: a 512-byte kernarg segment and three buffers of 4096 u32, all from
    // fine-grained host pools the GPU reaches: 512 + 3 * 16384 bytes saved. Adding 1 changes
    // the low byte of each of the 4096 elements, and the next byte of the 16 whose low byte
    // was 0xff (the start values run through every low byte 16 times): 4,112 bytes of host
    // memory, written back one by one before passes 2 and 3 and once more after the last.
    let stats = ReplayStats {
        passes: 3,
        saved: 49_664,
        restored: 3 * 4_112,
        declined: None,
    };
    for records in &by_pass {
        assert!(records.iter().all(|r| r.replay.as_ref() == Some(&stats)));
    }
    assert_results_exact(&dir, &by_pass, &truth);
    assert!(
        stderr.contains(
            "Kernel replay (one run of the application, 3 passes):\n  replayed: 3 dispatches, each run 3 times; per dispatch 49,664 bytes saved and 12,336 restored on average, largest snapshot 49,664 bytes\n"
        ),
        "{stderr}"
    );
    dir
}

/// [`profile`] of `rtl-demo-app --kernel increment APP_ARGS` on one gfx942 in the first two
/// passes of [`COUNTERS`] (ARGS and ENV added), in `scratch(name)`.
fn profile_increment(
    name: &str,
    args: &[&str],
    app_args: &[&str],
    env: &[(&str, &str)],
) -> (PathBuf, Output, Vec<serde_json::Value>) {
    let dir = scratch(name);
    let app = artifact("rtl-demo-app");
    let mut app = vec![
        app.to_str().unwrap().to_string(),
        "--kernel".into(),
        "increment".into(),
    ];
    app.extend(app_args.iter().map(|a| a.to_string()));
    let app: Vec<&str> = app.iter().map(String::as_str).collect();
    let (output, truth) = profile(&dir, "gfx942", &COUNTERS[..2], args, &app, env);
    (dir, output, truth)
}

#[test]
fn an_in_place_kernel_replayed_over_three_passes_leaves_one_execution() {
    let dir = replay_three_increments("kernel-replay-increment", "increment", &["--output-config"]);
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/results_config.json")).unwrap(),
    )
    .unwrap();
    let config = &config["rocprofiler-sdk-tool"][0]["metadata"]["config"];
    assert_eq!(config["replay"], "kernel");
    assert_eq!(config["runs"][2]["replay_mode"], "kernel");
    let plan = std::fs::read_to_string(dir.join("out/pass_2/plan.json")).unwrap();
    assert!(plan.contains("\"memory_budget\": 4294967296"), "{plan}");
}

#[test]
fn a_kernel_writing_through_a_pointer_read_from_memory_leaves_one_execution() {
    // indirect_increment's only pointer argument is the lane's first buffer, which holds the
    // address of the third: the buffer the kernel writes is reached through memory alone. Its
    // changed bytes are restored all the same (the same counts as for increment, which gets the
    // third buffer as its argument), so the demo finds every element incremented once.
    replay_three_increments("kernel-replay-indirect", "indirect_increment", &[]);
}

#[test]
fn threads_queues_and_gpus_replay_every_dispatch_exactly() {
    let dir = scratch("kernel-replay-concurrent");
    let app = artifact("rtl-demo-app");
    let (output, truth) = profile(
        &dir,
        "gfx942x2",
        &COUNTERS,
        &[],
        &[
            app.to_str().unwrap(),
            "--threads",
            "2",
            "--queues",
            "2",
            "--iterations",
            "2",
        ],
        &[],
    );
    assert_success(&output);
    assert!(
        text(&output.stdout).contains(
            "rtl-demo-app: 64 dispatches verified (vadd,saxpy,fill,increment) on 2 GPU(s)"
        ),
        "{}",
        text(&output.stdout)
    );
    assert_eq!(truth.len(), 3 * 64);
    let by_pass = assert_passes_exact(&dir, &truth, 3);
    let agents: BTreeSet<u32> = by_pass[0].iter().map(|r| r.agent).collect();
    assert_eq!(agents.len(), 2);
    for r in by_pass.iter().flatten() {
        let stats = r.replay.as_ref().expect("replayed");
        assert_eq!((stats.passes, &stats.declined), (3, &None), "{r:?}");
        assert!(stats.saved > 0 && stats.restored > 0, "{r:?}");
    }
    assert_results_exact(&dir, &by_pass, &truth);
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("not matched"), "{stderr}");
}

#[test]
fn a_snapshot_over_the_budget_runs_once_with_the_first_pass() {
    let (dir, output, truth) = profile_increment(
        "kernel-replay-budget",
        &["--replay-memory-budget", "1K"],
        &["--iterations", "2"],
        &[],
    );
    assert_success(&output);
    assert!(text(&output.stdout).contains("2 dispatches verified"));
    assert_eq!(truth.len(), 2, "each dispatch executed once");
    let reason = "its memory snapshot of 49664 bytes does not fit the memory budget of 1024 bytes";
    let first = pass_records(&dir, 1);
    assert_eq!(first.len(), 2);
    for r in &first {
        assert_eq!(r.group, Some(0));
        assert_eq!(r.counters, vec![samples(truth_of(&truth, r), COUNTERS[0])]);
        assert_eq!(
            r.replay,
            Some(ReplayStats {
                passes: 1,
                declined: Some(reason.into()),
                ..ReplayStats::default()
            })
        );
    }
    assert!(pass_records(&dir, 2).is_empty());
    let rows = common::read_table(&dir.join("out/results.csv"));
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row["GRBM_COUNT"], "None", "{row:?}");
        assert_ne!(row["SQ_WAVES"], "None", "{row:?}");
    }
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "  replayed: 0 dispatches, each run 2 times; per dispatch 0 bytes saved and 0 restored on average, largest snapshot 0 bytes\n  declined, run once with pass 1's counters: 2 dispatches\n    2 x increment: {reason}\n"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("not matched"), "{stderr}");
}

#[test]
fn memory_outside_every_tracked_allocation_declines_the_dispatch() {
    let (dir, output, truth) = profile_increment(
        "kernel-replay-untracked",
        &[],
        &["--untracked-buffers"],
        &[],
    );
    assert_success(&output);
    assert!(text(&output.stdout).contains("1 dispatches verified"));
    assert_eq!(truth.len(), 1);
    let first = pass_records(&dir, 1);
    assert_eq!(first.len(), 1);
    let declined = first[0]
        .replay
        .as_ref()
        .and_then(|r| r.declined.clone())
        .expect("declined");
    // The buffer's address is the kernel's first argument.
    let address = declined
        .strip_prefix("argument bytes 0..8 hold the address 0x")
        .and_then(|rest| rest.strip_suffix(", which lies outside every allocation rtl-pmc tracks"))
        .unwrap_or_else(|| panic!("{declined}"));
    assert!(u64::from_str_radix(address, 16).is_ok(), "{declined}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "  declined, run once with pass 1's counters: 1 dispatches\n    1 x increment: {declined}\n"
        )),
        "{stderr}"
    );
}

#[test]
fn batches_of_dispatches_are_never_replayed_but_counted_once() {
    let app = common::signal_app();
    {
        let line = "  declined, run once with pass 1's counters: 3 dispatches\n";
        let dir = scratch("kernel-replay-batch");
        let (output, truth) = profile(
            &dir,
            "gfx942",
            &COUNTERS[..2],
            &[],
            &[app.to_str().unwrap(), "3"],
            &[("RTL_SIM_INTERCEPT", "batch")],
        );
        assert_success(&output);
        // The shared signal was decremented once per dispatch.
        assert!(
            text(&output.stdout).starts_with("1 "),
            "{}",
            text(&output.stdout)
        );
        assert_eq!(truth.len(), 3, "each dispatch executed once");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!(
                "{line}    3 x kernel_0x1000: it was submitted with other dispatches in one packet batch (possibly a graph replay), whose packets may depend on it\n"
            )),
            "{stderr}"
        );
        let rows = common::read_table(&dir.join("out/results.csv"));
        assert_eq!(rows.len(), 3);
    }
}

#[test]
fn auto_picks_kernel_replay_for_several_passes_and_application_replay_for_one() {
    let app = artifact("rtl-demo-app");
    for (counters, expected, passes) in [
        (
            &COUNTERS[..2],
            "rtl-pmc: replay mode auto: kernel replay: one run of the application instead of 2; each selected dispatch runs 2 times, its memory saved before the first and restored before each later one (not measured yet for this command)\n",
            2,
        ),
        (
            &COUNTERS[..1],
            "rtl-pmc: replay mode auto: application replay: one pass, nothing to replay\n",
            1,
        ),
    ] {
        let dir = scratch(&format!("kernel-replay-auto-{passes}"));
        let (output, truth) = profile(
            &dir,
            "gfx942",
            counters,
            &["--replay-mode", "auto"],
            &[app.to_str().unwrap(), "--kernel", "increment"],
            &[],
        );
        assert_success(&output);
        let stderr = text(&output.stderr);
        assert!(stderr.contains(expected), "{stderr}");
        assert_eq!(truth.len(), passes);
        let per_pass: BTreeMap<u32, usize> =
            (1..=passes as u32).map(|p| (p, pass_records(&dir, p).len())).collect();
        assert!(per_pass.values().all(|&n| n == 1), "{per_pass:?}");
    }
}

/// `rtl-pmc --plan --sim gfx942 --replay-mode auto --pmc SQ_WAVES --pmc GRBM_COUNT -- APP` in
/// `dir`, with the cost file of `dir`.
fn plan_auto(dir: &Path, app: &[&str]) -> Output {
    Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .env("RTL_PMC_REPLAY_COSTS", dir.join("costs.json"))
        .args(["--plan", "--sim", "gfx942", "--replay-mode", "auto"])
        .args(["--pmc", "SQ_WAVES", "--pmc", "GRBM_COUNT", "--"])
        .args(app)
        .output()
        .expect("rtl-pmc starts")
}

#[test]
fn runs_measure_both_replays_and_the_plan_shows_them() {
    let dir = scratch("kernel-replay-costs");
    let app = artifact("rtl-demo-app");
    let app = [app.to_str().unwrap(), "--kernel", "increment"];
    let out = plan_auto(&dir, &app);
    assert_success(&out);
    assert_eq!(
        text(&out.stdout),
        "pass 1: SQ_WAVES\npass 2: GRBM_COUNT\npasses: 2 (lower bound: 2)\nreplay mode auto: kernel replay: 1 run of the application, 2 passes per selected dispatch (memory budget 4294967296 bytes per dispatch); application replay: 2 runs, 1 pass per dispatch per run\n"
    );
    let (output, _) = profile(&dir, "gfx942", &COUNTERS[..2], &[], &app, &[]);
    assert_success(&output);
    std::fs::rename(dir.join("out"), dir.join("kernel")).unwrap();
    let (output, _) = profile(
        &dir,
        "gfx942",
        &COUNTERS[..2],
        &["--replay-mode", "application"],
        &app,
        &[],
    );
    assert_success(&output);
    let costs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("costs.json")).unwrap()).unwrap();
    let key = serde_json::to_string(&[dir.to_str().unwrap(), app[0], app[1], app[2]]).unwrap();
    let measured = &costs["commands"][&key];
    let kernel = &measured["kernel"];
    // Saved: the lane's 49,664 bytes; restored: the 4,112 changed bytes before pass 2 and
    // after it.
    assert_eq!(
        (
            &kernel["passes"],
            &kernel["replayed"],
            &kernel["saved"],
            &kernel["restored"]
        ),
        (&2.into(), &1.into(), &49_664.into(), &8_224.into()),
        "{costs}"
    );
    assert!(kernel["run_ns"].as_u64().unwrap() > 0);
    assert!(measured["application"]["run_ns"].as_u64().unwrap() > 0);
    let out = plan_auto(&dir, &app);
    assert_success(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("\nmeasured for this command: kernel replay ")
            && stdout.contains(" per run (2 passes; 1 dispatches replayed, 49,664 bytes saved and 8,224 restored per dispatch on average); application replay ")
            && stdout.contains("\nestimate for 2 passes: kernel replay "),
        "{stdout}"
    );
}

#[test]
fn auto_picks_the_replay_measured_cheaper_and_says_why() {
    let dir = scratch("kernel-replay-auto-costs");
    let app = ["/bin/true"];
    let key = serde_json::to_string(&[dir.to_str().unwrap(), app[0]]).unwrap();
    for (kernel_ns, application_ns, line) in [
        (
            1_500_000_000u64,
            1_000_000_000u64,
            "replay mode auto: kernel replay: 1 run of the application, 2 passes per selected dispatch (memory budget 4294967296 bytes per dispatch); application replay: 2 runs, 1 pass per dispatch per run\nmeasured for this command: kernel replay 1.500 s per run (3 passes; 4 dispatches replayed, 1,024 bytes saved and 2,048 restored per dispatch on average); application replay 1.000 s per run\nestimate for 2 passes: kernel replay 1.250 s, application replay 2.000 s\n",
        ),
        (
            9_000_000_000,
            1_000_000_000,
            "replay mode auto: application replay: 2 runs of the application, 1 pass per dispatch per run (measured for this command, about 2.000 s against 5.000 s for kernel replay)\nmeasured for this command: kernel replay 9.000 s per run (3 passes; 4 dispatches replayed, 1,024 bytes saved and 2,048 restored per dispatch on average); application replay 1.000 s per run\nestimate for 2 passes: kernel replay 5.000 s, application replay 2.000 s\n",
        ),
    ] {
        let costs = serde_json::json!({"commands": {key.clone(): {
            "application": {"run_ns": application_ns},
            "kernel": {"run_ns": kernel_ns, "passes": 3, "replayed": 4, "saved": 1024, "restored": 2048},
        }}});
        std::fs::write(dir.join("costs.json"), costs.to_string()).unwrap();
        let out = plan_auto(&dir, &app);
        assert_success(&out);
        assert_eq!(
            text(&out.stdout),
            format!("pass 1: SQ_WAVES\npass 2: GRBM_COUNT\npasses: 2 (lower bound: 2)\n{line}")
        );
    }
}

#[test]
fn the_application_signal_completes_once_with_the_first_pass_timestamps() {
    let dir = scratch("kernel-replay-signal");
    let app = common::signal_app();
    let (output, truth) = profile(
        &dir,
        "gfx942",
        &COUNTERS,
        &[],
        &[app.to_str().unwrap(), "1"],
        &[],
    );
    assert_success(&output);
    assert_eq!(truth.len(), 3, "one dispatch, three passes");
    let first = pass_records(&dir, 1);
    assert_eq!(first.len(), 1);
    let r = &first[0];
    // The signal started at 2: one decrement leaves 1; its timestamps are pass 1's kernel's.
    assert_eq!(text(&output.stdout), format!("1 {} {}\n", r.start, r.end));
    let later: Vec<u64> = (2..=3).map(|p| pass_records(&dir, p)[0].start).collect();
    assert!(later.iter().all(|&s| s >= r.end), "{later:?} after {r:?}");
}

#[test]
fn kernel_filters_under_kernel_replay_keep_unselected_dispatches_out_of_replays() {
    let dir = scratch("kernel-replay-filters");
    let app = artifact("rtl-demo-app");
    let (output, truth) = profile(
        &dir,
        "gfx942",
        &COUNTERS[..2],
        &["--kernel-include-regex", "increment"],
        &[app.to_str().unwrap(), "--iterations", "2"],
        &[],
    );
    assert_success(&output);
    assert!(text(&output.stdout).contains("8 dispatches verified"));
    // Six dispatches run once, the two of increment twice.
    assert_eq!(truth.len(), 6 + 2 * 2);
    let stderr = text(&output.stderr);
    let warning = "rtl-pmc: kernel filters leave dispatches unprofiled during kernel replay: they run whenever their queue reaches them, also while a selected dispatch is replayed, and memory they write in the window between its first pass and its last may be set back to what the first pass found (select every kernel that writes memory, or use --replay-mode application)\n";
    // Unselected dispatches never run while a selected one is replayed: nothing to warn about.
    assert_eq!(stderr.matches(warning).count(), 0, "{stderr}");
    for pass in 1..=2 {
        let records = pass_records(&dir, pass);
        assert_eq!(records.len(), 2);
        assert!(records.iter().all(|r| r.kernel == "increment"));
    }
}

#[test]
fn a_replayed_dispatch_held_past_the_stall_limit_is_reported_once_per_wait() {
    // Each execution of increment (16 work-groups) takes 2.4 µs × 500,000 = 1.2 s of real time,
    // four times the stall limit: each pass's wait for its kernel is reported once, however
    // often the completion worker looks at it, and the dispatch then goes on.
    let (dir, output, truth) = profile_increment(
        "kernel-replay-stall",
        &[],
        &[],
        &[("RTL_SIM_SLOW", "500000"), ("RTL_PMC_REPLAY_STALL", "0.3")],
    );
    assert_success(&output);
    assert!(text(&output.stdout).contains("rtl-demo-app: 1 dispatches verified (increment)"));
    assert_eq!(truth.len(), 2, "one dispatch, two passes");
    let by_pass = assert_passes_exact(&dir, &truth, 2);
    for t in &truth {
        let duration = t["end"].as_u64().unwrap() - t["start"].as_u64().unwrap();
        assert_eq!(duration, 1_200_000_000, "{t}");
    }
    let stderr = text(&output.stderr);
    let warning = format!(
        "rtl-pmc: kernel replay of dispatch {} (increment) has waited 0.3 s for its kernel; it goes on when that completes\n",
        by_pass[0][0].dispatch
    );
    assert_eq!(stderr.matches(&warning).count(), 2, "{stderr}");
}

#[test]
fn a_bad_replay_stall_limit_stops_before_the_application_starts() {
    for value in ["0", "-2", "30s"] {
        let (dir, output, truth) = profile_increment(
            "kernel-replay-stall-bad",
            &[],
            &[],
            &[("RTL_PMC_REPLAY_STALL", value)],
        );
        assert_eq!(output.status.code(), Some(2), "{value}");
        assert_eq!(
            text(&output.stderr),
            format!("rtl-pmc: RTL_PMC_REPLAY_STALL={value:?}: expected a positive number of seconds, such as 30 or 0.5\n")
        );
        assert!(truth.is_empty(), "the application did not run");
        assert!(!dir.join("out").exists());
    }
}

/// Profiles `rtl-demo-app --kernel increment --iterations N MODE...` on one gfx942 in the three
/// passes of [`COUNTERS`], with kernel replay and ENV, in `scratch(name)`; checks that the demo
/// found everything right, every dispatch replayed over the 3 passes and every execution exact.
/// Returns the demo's output.
fn replay_increments(name: &str, iterations: u32, mode: &[&str], env: &[(&str, &str)]) -> String {
    let dir = scratch(name);
    let app = artifact("rtl-demo-app");
    let iterations_arg = iterations.to_string();
    let mut args = vec![
        app.to_str().unwrap(),
        "--kernel",
        "increment",
        "--iterations",
        &iterations_arg,
    ];
    args.extend_from_slice(mode);
    let (output, truth) = profile(&dir, "gfx942", &COUNTERS, &[], &args, env);
    assert_success(&output);
    assert_eq!(
        truth.len(),
        3 * iterations as usize,
        "each dispatch executed in 3 passes"
    );
    let by_pass = assert_passes_exact(&dir, &truth, 3);
    for r in by_pass.iter().flatten() {
        let stats = r.replay.as_ref().expect("replayed");
        assert_eq!((stats.passes, &stats.declined), (3, &None), "{r:?}");
    }
    assert_results_exact(&dir, &by_pass, &truth);
    text(&output.stdout)
}

#[test]
fn dma_copies_beside_replayed_kernels_keep_their_data() {
    // One thread dispatches increment 200 times on a queue while another copies 16 KiB of host
    // data to device memory and back (hsa_amd_memory_async_copy, then the same through
    // hsa_amd_memory_async_copy_rect), the copy back depending on the copy there, and checks
    // every byte the moment the copy back completes: nothing orders the copies against the
    // kernels, so they fall into the windows in which the kernels' memory is saved and restored.
    let stdout = replay_increments("kernel-replay-copies", 200, &["--copies-beside"], &[]);
    let trips: u32 = stdout
        .strip_prefix("rtl-demo-app: 200 dispatches (increment) and ")
        .and_then(|rest| rest.strip_suffix(" copy round trips verified beside each other\n"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(trips >= 400, "{stdout}");
}

/// Profiles `rtl-demo-app --kernel increment --iterations 20 --writes-beside BUFFERS...` with
/// kernels of about 10 ms (see the test below); how many of its dispatches saw their memory set
/// back.
fn writes_beside(name: &str, buffers: &[&str]) -> u32 {
    let mut mode = vec!["--writes-beside"];
    mode.extend_from_slice(buffers);
    let stdout = replay_increments(name, 20, &mode, &[("RTL_SIM_SLOW", "4000")]);
    stdout
        .strip_prefix(
            "rtl-demo-app: 20 dispatches (increment) verified with host writes beside them; ",
        )
        .and_then(|rest| rest.strip_suffix(" saw their memory set back while they ran\n"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"))
}

#[test]
fn host_bytes_written_beside_a_replayed_kernel_keep_their_values() {
    // increment adds 1 to every element but the last 16 of its host buffer while the demo's
    // thread writes two bytes among those 16: byte 40 past the kernel's elements once pass 1's
    // result shows, byte 20 once byte 40 reads 0 again (pass 1 saw it change, so it is set back
    // before passes 2 and 3 and written again after the last). The bytes that changed in pass 1
    // then reach from the kernel's elements to byte 40, around byte 20: writing back anything
    // but the changed bytes themselves would set byte 20 back too. Kernels last about 10 ms
    // (RTL_SIM_SLOW), so the demo sees its result and byte 40 set back in most dispatches
    // however loaded the machine; it checks both bytes and every element after each dispatch.
    let set_back = writes_beside("kernel-replay-writes-beside", &[]);
    assert!(set_back >= 1, "{set_back} of 20 dispatches seen set back");
}

#[test]
fn host_bytes_beside_a_replayed_kernel_in_region_memory_keep_their_values() {
    // The same with the buffers from the host's fine-grained region (hsa_memory_allocate): the
    // runtime says the host reaches it, so it is written back byte by byte too.
    let set_back = writes_beside("kernel-replay-region-writes-beside", &["--region-buffers"]);
    assert!(set_back >= 1, "{set_back} of 20 dispatches seen set back");
}
