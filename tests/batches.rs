//! Dispatches submitted several at once behind one doorbell (graph launches: kernels and
//! barrier-AND/OR packets depending on each other, `rtl-demo-app --graph`) and dispatches left
//! out by the kernel filters, on several queues of one simulated GPU: every dispatch is timed and
//! counted like a single one, its values exactly the ground truth's; no dispatch, counted or
//! not, overlaps a counted one; the graph's dependencies hold (the demo application checks that
//! its last barrier completes only after the kernels it waits for, and every result).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Output};

use common::{
    artifact, assert_matches_truth, assert_success, plan, run_demo, scratch, sim_env, text, total,
    Run,
};
use rtl_pmc::passes::plan_file::KernelFilters;

const GROUP: &[&str] = &["SQ_WAVES", "TCC_HIT"];

/// Six kernels per graph: two pairs behind a barrier-AND, then one behind a barrier-OR.
const GRAPH: [&str; 6] = ["vadd", "saxpy", "fill", "increment", "copy", "empty"];

/// Kernels long enough (in simulated time) for dispatches of different queues to meet.
const SLOW: (&str, &str) = ("RTL_SIM_SLOW", "20");

fn graph_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--graph"];
    for k in GRAPH {
        args.extend(["--kernel", k]);
    }
    args.extend(extra);
    args
}

fn field(t: &serde_json::Value, name: &str) -> u64 {
    t[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name} in {t}"))
}

/// Asserts that no executed dispatch overlaps one of `counted` (ground-truth lines) on its GPU.
fn assert_counted_run_alone(
    truth: &[serde_json::Value],
    counted: &dyn Fn(&serde_json::Value) -> bool,
) {
    for c in truth.iter().filter(|t| counted(t)) {
        for other in truth {
            if std::ptr::eq(c, other) || other["agent"] != c["agent"] || other["pid"] != c["pid"] {
                continue;
            }
            let apart = field(other, "end") <= field(c, "start")
                || field(other, "start") >= field(c, "end");
            assert!(apart, "{other} overlaps the counted dispatch {c}");
        }
    }
}

/// Asserts the graphs' dependencies from the ground truth: per queue, in launch order, each
/// graph's second pair starts after both kernels of the first ended (barrier-AND), the third
/// after either kernel of the second did (barrier-OR). Returns the graphs checked.
fn assert_graph_order(truth: &[serde_json::Value]) -> usize {
    let mut by_queue: BTreeMap<(u64, u64), Vec<&serde_json::Value>> = BTreeMap::new();
    for t in truth {
        by_queue
            .entry((field(t, "pid"), field(t, "queue")))
            .or_default()
            .push(t);
    }
    let mut graphs = 0;
    for dispatches in by_queue.values_mut() {
        dispatches.sort_by_key(|t| field(t, "dispatch"));
        for graph in dispatches.chunks(GRAPH.len()) {
            let names: Vec<&str> = graph
                .iter()
                .map(|t| t["kernel"].as_str().unwrap())
                .collect();
            assert_eq!(names, GRAPH);
            let start = |i: usize| field(graph[i], "start");
            let end = |i: usize| field(graph[i], "end");
            for i in [2, 3] {
                assert!(start(i) >= end(0).max(end(1)), "{graph:?}");
            }
            for i in [4, 5] {
                assert!(start(i) >= end(2).min(end(3)), "{graph:?}");
            }
            graphs += 1;
        }
    }
    graphs
}

/// The run with only the ground truth of the kernels `selected` keeps.
fn selected(run: Run, selected: &dyn Fn(&str) -> bool) -> Run {
    Run {
        truth: run
            .truth
            .iter()
            .filter(|t| selected(t["kernel"].as_str().unwrap()))
            .cloned()
            .collect(),
        ..run
    }
}

/// Runs the demo app with `args` under the interposer collecting [`GROUP`], the kernels whose
/// names match `pattern` selected (all without one), kernels slowed down, `env` added; asserts
/// that it succeeded and that the interposer said nothing.
fn filtered_run(name: &str, pattern: Option<&str>, args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = scratch(name);
    let filters = KernelFilters {
        include_regex: pattern.map(str::to_string),
        ..KernelFilters::default()
    };
    let plan = plan(&dir, "gfx942", &[GROUP], filters, 1);
    let env: Vec<(&str, &str)> = [SLOW].iter().chain(env).copied().collect();
    let run = run_demo(&dir, "gfx942", Some(&plan), &env, GROUP, args);
    run.assert_success();
    assert_eq!(run.stderr(), "", "{name}");
    run
}

/// Asserts that the dispatches `pattern` selects (all without one) ran alone on their GPU and
/// were recorded once each with exactly their ground-truth values; returns how many.
fn assert_selected_exact(run: Run, pattern: Option<&str>) -> usize {
    let regex = pattern.map(|p| regex::Regex::new(p).unwrap());
    let chosen = |k: &str| regex.as_ref().is_none_or(|r| r.is_match(k));
    assert_counted_run_alone(&run.truth, &|t| chosen(t["kernel"].as_str().unwrap()));
    assert_matches_truth(&selected(run, &chosen), &[GROUP])
}

#[test]
fn graphs_on_several_queues_are_counted_exactly_in_both_intercept_modes() {
    for mode in ["batch", "packet"] {
        let args = graph_args(&["--threads", "2", "--iterations", "3"]);
        let env = [("RTL_SIM_INTERCEPT", mode)];
        let run = filtered_run(&format!("graphs-{mode}"), None, &args, &env);
        assert!(
            run.stdout().contains("36 dispatches verified"),
            "{}",
            run.stdout()
        );
        assert_eq!(assert_graph_order(&run.truth), 6, "{mode}");
        assert_eq!(assert_selected_exact(run, None), 36, "{mode}");
    }
}

#[test]
fn a_dispatch_on_another_queue_overlapping_a_graph_counts_only_its_own_work() {
    // Thread 0 submits graphs, thread 1 one kernel at a time on its own queue; every dispatch
    // selected, then only some of each.
    for (i, pattern) in [None, Some("^(vadd|fill|empty)$")].into_iter().enumerate() {
        let args = graph_args(&[
            "--threads",
            "2",
            "--graph-threads",
            "1",
            "--iterations",
            "4",
        ]);
        let run = filtered_run(&format!("graph-and-singles-{i}"), pattern, &args, &[]);
        assert_eq!(run.truth.len(), 48);
        let expected = if pattern.is_some() { 24 } else { 48 };
        assert_eq!(assert_selected_exact(run, pattern), expected);
    }
}

#[test]
fn filters_on_graphs_of_several_queues_keep_the_dispatches_left_out_away_from_counted_ones() {
    let args = graph_args(&["--threads", "2", "--queues", "2", "--iterations", "2"]);
    let pattern = Some("^(fill|increment)$");
    let run = filtered_run("graph-filters", pattern, &args, &[]);
    assert!(
        run.stdout().contains("48 dispatches verified"),
        "{}",
        run.stdout()
    );
    assert_eq!(assert_graph_order(&run.truth), 8);
    assert_eq!(assert_selected_exact(run, pattern), 16);
}

/// Dispatches the filter leaves out still overlap each other: the two kernels of a graph's
/// first pair (no barrier bit, each with the application's completion signal), and of its third
/// pair (behind the barrier-OR, after the last counted dispatch), start together.
#[test]
fn dispatches_left_out_of_a_graph_still_run_side_by_side() {
    let args = graph_args(&["--iterations", "3"]);
    let pattern = Some("^(fill|increment)$");
    let run = filtered_run("graph-side-by-side", pattern, &args, &[]);
    assert_eq!(assert_graph_order(&run.truth), 3);
    let mut truth: Vec<&serde_json::Value> = run.truth.iter().collect();
    truth.sort_by_key(|t| field(t, "dispatch"));
    for graph in truth.chunks(GRAPH.len()) {
        let start = |i: usize| field(graph[i], "start");
        let times: Vec<(u64, u64)> = (0..graph.len())
            .map(|i| (start(i), field(graph[i], "end")))
            .collect();
        assert_eq!(start(0), start(1), "{times:?}");
        assert_eq!(start(4), start(5), "{times:?}");
    }
    assert_eq!(assert_selected_exact(run, pattern), 6);
}

#[test]
fn a_kernel_filter_on_threads_and_queues_gives_every_selected_dispatch_its_own_values() {
    let args = ["--threads", "3", "--queues", "2", "--iterations", "2"];
    let pattern = Some("^saxpy$");
    let run = filtered_run("filters-queues", pattern, &args, &[]);
    assert_eq!(run.truth.len(), 48);
    assert_eq!(assert_selected_exact(run, pattern), 12);
}

/// `rtl-pmc -d out ARGS -- rtl-demo-app APP` on a simulated gfx942 with ground truth for
/// `GROUP`, in `dir`.
fn profile(dir: &Path, args: &[&str], app: &[&str]) -> (Output, Vec<serde_json::Value>) {
    let truth = dir.join("truth.jsonl");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", GROUP.join(","))
        .env("RTL_PMC_REPLAY_COSTS", dir.join("costs.json"))
        .env(SLOW.0, SLOW.1)
        .args(["-d", "out"])
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(app)
        .output()
        .expect("rtl-pmc starts");
    (output, common::ground_truth(&truth))
}

/// `results.csv`'s rows by column name, each with the ground-truth line of the dispatch of the
/// same times.
fn results_with_truth<'a>(
    dir: &Path,
    truth: &'a [serde_json::Value],
) -> Vec<(HashMap<String, String>, &'a serde_json::Value)> {
    common::read_table(&dir.join("out/results.csv"))
        .into_iter()
        .map(|row| {
            let t = truth
                .iter()
                .find(|t| {
                    t["start"].as_u64() == row["BeginNs"].parse().ok()
                        && t["end"].as_u64() == row["EndNs"].parse().ok()
                })
                .unwrap_or_else(|| panic!("{row:?} has no ground-truth dispatch"));
            (row, t)
        })
        .collect()
}

/// Asserts that each row of `results.csv` names the kernel of its ground-truth dispatch and has
/// its values of [`GROUP`]; returns the rows.
fn assert_results_exact(dir: &Path, truth: &[serde_json::Value]) -> usize {
    let rows = results_with_truth(dir, truth);
    for (row, t) in &rows {
        assert_eq!(row["KernelName"], t["kernel"].as_str().unwrap());
        for counter in GROUP {
            assert_eq!(row[*counter], total(t, counter).to_string(), "{t}");
        }
    }
    rows.len()
}

#[test]
fn the_summary_lists_every_kernel_of_graphs_and_single_dispatches() {
    // Every kernel runs 8 times, as long as each other (48 µs slowed down 20 times): a quarter of
    // the GPU time each.
    let dir = scratch("graph-summary");
    let (output, truth) = profile(
        &dir,
        &["--pmc", "SQ_WAVES", "TCC_HIT"],
        &[
            "--graph",
            "--threads",
            "2",
            "--graph-threads",
            "1",
            "--iterations",
            "4",
        ],
    );
    assert_success(&output);
    assert_eq!(truth.len(), 32);
    let stderr = text(&output.stderr);
    for kernel in ["fill", "increment", "saxpy", "vadd"] {
        let line = format!("  {kernel:<18}8     384.00 us      48.00 us    25.0\n");
        assert!(stderr.contains(&line), "{line}\n{stderr}");
    }
    assert!(!stderr.contains("100.0\n"), "{stderr}");
    assert!(!stderr.contains("overlap"), "{stderr}");
    assert_eq!(assert_results_exact(&dir, &truth), 32);
}

#[test]
fn a_roctx_filter_on_several_threads_and_queues_gives_selected_dispatches_their_own_values() {
    let dir = scratch("roctx-filter-queues");
    let (output, truth) = profile(
        &dir,
        &[
            "--pmc",
            "SQ_WAVES",
            "TCC_HIT",
            "--roctx-include-regex",
            "^vadd in",
        ],
        &[
            "--roctx",
            "--threads",
            "2",
            "--queues",
            "2",
            "--iterations",
            "3",
        ],
    );
    assert_success(&output);
    assert_eq!(truth.len(), 48);
    assert_counted_run_alone(&truth, &|t| t["kernel"] == "vadd");
    assert_eq!(assert_results_exact(&dir, &truth), 12);
    let rows = results_with_truth(&dir, &truth);
    assert!(rows.iter().all(|(row, _)| row["KernelName"] == "vadd"));
    assert!(
        !text(&output.stderr).contains("overlap"),
        "{}",
        text(&output.stderr)
    );
}

/// Kernel replay declines every dispatch of a graph (its other packets may depend on it) but
/// counts each once with pass 1's counters, and says so; every output holds pass 1's values.
#[test]
fn kernel_replay_counts_the_dispatches_of_graphs_once_and_says_why() {
    let dir = scratch("graph-kernel-replay");
    let (output, truth) = profile(
        &dir,
        &[
            "--replay-mode",
            "kernel",
            "--pmc",
            "SQ_WAVES",
            "--pmc",
            "TCC_HIT",
            "--output-format",
            "csv,json,rocpd",
        ],
        &[
            "--graph",
            "--threads",
            "2",
            "--graph-threads",
            "1",
            "--iterations",
            "2",
        ],
    );
    assert_success(&output);
    // The graphs' 8 dispatches run once; the other thread's 8 twice.
    assert_eq!(truth.len(), 8 + 2 * 8);
    let stderr = text(&output.stderr);
    let declined = "  declined, run once with pass 1's counters: 8 dispatches\n    2 x fill, 2 x increment, 2 x saxpy, 2 x vadd: it was submitted with other dispatches in one packet batch (possibly a graph replay), whose packets may depend on it\n";
    assert!(stderr.contains(declined), "{stderr}");
    assert!(
        stderr.contains("  replayed: 8 dispatches, each run 2 times;"),
        "{stderr}"
    );
    let rows = results_with_truth(&dir, &truth);
    assert_eq!(rows.len(), 16);
    let mut declined_rows = 0;
    for (row, t) in &rows {
        assert_eq!(row["SQ_WAVES"], total(t, "SQ_WAVES").to_string(), "{t}");
        if row["TCC_HIT"] == "None" {
            declined_rows += 1;
        }
    }
    assert_eq!(declined_rows, 8);

    // pass 1's counter_collection.csv: SQ_WAVES of all 16 dispatches, each its own.
    let pass1 = std::fs::read_dir(dir.join("out/pass_1"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with("_counter_collection.csv"))
        .expect("pass 1's counter_collection.csv");
    let collection = common::read_table(&pass1);
    assert_eq!(collection.len(), 16);
    for row in &collection {
        let t = truth
            .iter()
            .find(|t| t["start"].as_u64() == row["Start_Timestamp"].parse().ok())
            .expect("a ground-truth dispatch");
        assert_eq!(row["Counter_Name"], "SQ_WAVES");
        assert_eq!(
            row["Counter_Value"],
            format!("{}.000000", total(t, "SQ_WAVES"))
        );
    }

    // results.db: the counters_collection view holds SQ_WAVES of every dispatch.
    let conn = rusqlite::Connection::open(dir.join("out/results.db")).unwrap();
    let mut statement = conn
        .prepare("SELECT start, value FROM counters_collection WHERE counter_name = 'SQ_WAVES'")
        .unwrap();
    let values: Vec<(i64, f64)> = statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(values.len(), 16);
    for (start, value) in values {
        let t = truth
            .iter()
            .find(|t| t["start"].as_i64() == Some(start))
            .expect("a ground-truth dispatch");
        assert_eq!(value, total(t, "SQ_WAVES") as f64);
    }

    // results.json: each dispatch's SQ_WAVES total.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/results.json")).unwrap())
            .unwrap();
    let dispatches = json["rocprofiler-sdk-tool"][0]["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert_eq!(dispatches.len(), 16);
    for d in dispatches {
        let data = &d["dispatch_data"];
        let t = truth
            .iter()
            .find(|t| t["start"] == data["start_timestamp"])
            .expect("a ground-truth dispatch");
        assert_eq!(
            d["rtl-pmc"]["counters"]["SQ_WAVES"].as_f64().unwrap(),
            total(t, "SQ_WAVES") as f64
        );
    }
}
