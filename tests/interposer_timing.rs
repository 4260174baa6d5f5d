//! Timing only: no counters, every selected dispatch timed and recorded once; the application's
//! completion signal still completes with the kernel's timestamps.

mod common;

use common::{assert_matches_truth, run_demo, scratch};
use rtl_pmc::passes::plan_file::{IterationRange, KernelFilters, RunPlan, PLAN_VERSION};

fn timing_plan(dir: &std::path::Path, filters: KernelFilters) -> std::path::PathBuf {
    let plan = RunPlan {
        version: PLAN_VERSION,
        pass: 1,
        output_directory: dir.join("out").display().to_string(),
        filters,
        group_interval: 1,
        agents: vec![],
        replay: None,
    };
    let path = dir.join("plan.json");
    plan.write(&path).unwrap();
    path
}

#[test]
fn every_dispatch_is_timed_once_in_both_intercept_modes() {
    for mode in ["batch", "packet"] {
        let dir = scratch(&format!("timing-{mode}"));
        let plan = timing_plan(&dir, KernelFilters::default());
        let args = ["--threads", "2", "--queues", "2", "--iterations", "5"];
        let run = run_demo(
            &dir,
            "gfx942x2",
            Some(&plan),
            &[("RTL_SIM_INTERCEPT", mode)],
            &[],
            &args,
        );
        run.assert_success();
        assert_eq!(run.stderr(), "");
        assert_eq!(assert_matches_truth(&run, &[]), 160);
        assert!(run.records.iter().all(|r| r.end > r.start && r.signal != 0));
    }
}

#[test]
fn iteration_ranges_and_gpu_selection_pick_dispatches() {
    let dir = scratch("timing-filters");
    let filters = KernelFilters {
        include_regex: Some("add".into()),
        iterations: vec![IterationRange { first: 2, last: 3 }],
        gpus: vec![1],
        ..KernelFilters::default()
    };
    let plan = timing_plan(&dir, filters);
    let run = run_demo(
        &dir,
        "gfx942x2",
        Some(&plan),
        &[],
        &[],
        &["--iterations", "4"],
    );
    run.assert_success();
    // vadd runs 4 times on each GPU; launches are counted per kernel over both GPUs, and only
    // launches 2 and 3 that ran on GPU 1 are kept.
    assert!(run
        .records
        .iter()
        .all(|r| r.kernel == "vadd" && r.gpu_index == 1));
    assert!(
        run.records.len() <= 2 && !run.records.is_empty(),
        "{:?}",
        run.records
    );
    assert_eq!(
        common::assert_records_subset_of_truth(&run),
        run.records.len()
    );
}

#[test]
fn environment_mode_writes_results_at_unload() {
    let dir = scratch("env-mode");
    let out = dir.join("results-%p");
    let run = run_demo(
        &dir,
        "gfx942",
        None,
        &[("RTL_PMC_OUTPUT", out.to_str().unwrap())],
        &[],
        &[],
    );
    run.assert_success();
    let entries: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("results-")
        })
        .collect();
    assert_eq!(entries.len(), 1);
    let csv = std::fs::read_to_string(entries[0].join("results.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5, "{csv}");
    assert!(lines[1].contains(",\"vadd\",4096,256,"), "{csv}");
}

#[test]
fn environment_mode_resolves_counters_and_writes_their_totals() {
    let dir = scratch("env-mode-counters");
    let out = dir.join("results-%p");
    let env = [
        ("RTL_PMC_OUTPUT", out.to_str().unwrap()),
        ("RTL_PMC_COUNTERS", "SQ_WAVES,SQ_INSTS_VALU"),
    ];
    let run = run_demo(
        &dir,
        "gfx942",
        None,
        &env,
        &["SQ_WAVES", "SQ_INSTS_VALU"],
        &[],
    );
    run.assert_success();
    assert_eq!(run.stderr(), "");
    let results = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("results-")
        })
        .unwrap();
    let csv = std::fs::read_to_string(results.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .ends_with(",End_Timestamp,SQ_WAVES,SQ_INSTS_VALU"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4);
    for t in &run.truth {
        let sum = |name: &str| -> u64 {
            t["counters"][name]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .sum()
        };
        let start = t["start"].as_u64().unwrap().to_string();
        let row = rows
            .iter()
            .find(|r| r[13] == start)
            .unwrap_or_else(|| panic!("no row for {t}\n{csv}"));
        assert_eq!(row[5], format!("\"{}\"", t["kernel"].as_str().unwrap()));
        assert_eq!(row[15], sum("SQ_WAVES").to_string(), "{csv}");
        assert_eq!(row[16], sum("SQ_INSTS_VALU").to_string(), "{csv}");
    }
}

#[test]
fn the_application_signal_completes_once_with_the_kernel_timestamps() {
    for (name, counted) in [("signal-timing", false), ("signal-counters", true)] {
        let dir = scratch(name);
        let plan = if counted {
            common::plan(
                &dir,
                "gfx942",
                &[&["SQ_WAVES"]],
                KernelFilters::default(),
                1,
            )
        } else {
            timing_plan(&dir, KernelFilters::default())
        };
        let out = std::process::Command::new(common::signal_app())
            .envs(common::sim_env("gfx942"))
            .env("HSA_TOOLS_LIB", common::artifact("librtl_pmc.so"))
            .env("RTL_PMC_PLAN", &plan)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let records = common::records(&dir.join("out"));
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("1 {} {}\n", r.start, r.end),
            "value after one decrement, and the kernel's own times"
        );
        assert_eq!(
            (r.kernel.as_str(), r.grid, r.workgroup),
            ("kernel_0x1000", [1 << 20, 1, 1], [64, 1, 1])
        );
        assert_eq!(r.counters.len(), usize::from(counted));
    }
}

#[test]
fn multi_dispatch_batches_are_wrapped_like_single_dispatches() {
    // Three dispatches behind one doorbell: one handler call in batched mode (as a graph launch
    // submits them), three calls in per-packet mode; every dispatch recorded either way.
    for (mode, expected) in [("batch", 3), ("packet", 3)] {
        let dir = scratch(&format!("batch-{mode}"));
        let plan = common::plan(
            &dir,
            "gfx942",
            &[&["SQ_WAVES"]],
            KernelFilters::default(),
            1,
        );
        let out = std::process::Command::new(common::signal_app())
            .arg("3")
            .envs(common::sim_env("gfx942"))
            .env("HSA_TOOLS_LIB", common::artifact("librtl_pmc.so"))
            .env("RTL_PMC_PLAN", &plan)
            .env("RTL_SIM_INTERCEPT", mode)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("1 "),
            "each dispatch completed the signal once"
        );
        let records = common::records(&dir.join("out"));
        assert_eq!(records.len(), expected, "{mode}");
        let indices: Vec<u64> = records.iter().map(|r| r.queue_index).collect();
        let mut sorted = indices.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..expected as u64).collect::<Vec<u64>>());
    }
}
