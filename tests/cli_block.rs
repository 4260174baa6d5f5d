//! `rtl-pmc --block ID... -- app` on the simulated GPU: the counters of rocprof-compute's panels
//! in one run of the application (kernel replay), written as a rocprof-compute workload
//! directory whose every value is the simulator's ground truth.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{artifact, read_table, samples, scratch, sim_env, total};

/// Columns of `pmc_perf.csv` that are not counters.
const NOT_COUNTERS: [&str; 15] = [
    "Dispatch_ID",
    "GPU_ID",
    "Grid_Size",
    "Workgroup_Size",
    "LDS_Per_Workgroup",
    "Scratch_Per_Workitem",
    "Arch_VGPR",
    "Accum_VGPR",
    "SGPR",
    "Wave_Size",
    "Kernel_Name",
    "Correlation_ID",
    "Kernel_ID",
    "Start_Timestamp",
    "End_Timestamp",
];

/// Runs `rtl-pmc ARGS -- rtl-demo-app` in `dir` on the simulated `arch`, with ground truth for
/// `truth` (none when empty).
fn rtl_pmc(dir: &Path, arch: &str, args: &[&str], truth: &[String]) -> Output {
    let mut command = Command::new(artifact("rtl-pmc"));
    command
        .current_dir(dir)
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .envs(sim_env(arch))
        .env("RTL_PMC_REPLAY_COSTS", dir.join("costs"));
    if !truth.is_empty() {
        command
            .env("RTL_SIM_GROUND_TRUTH", dir.join("truth.jsonl"))
            .env("RTL_SIM_GROUND_TRUTH_COUNTERS", truth.join(","));
    }
    command.output().expect("rtl-pmc starts")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The ground-truth names of the counters `--plan` lists for `blocks`: `X[i]` and `X_sum` are
/// `X`'s samples, `X_ACCUM` the accumulated truth `X:HIGH_RES`.
fn truth_names(dir: &Path, arch: &str, blocks: &str) -> Vec<String> {
    let plan = rtl_pmc(dir, arch, &["--block", blocks, "--plan"], &[]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let text = String::from_utf8_lossy(&plan.stdout).into_owned();
    let mut names: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("pass ")) {
        for counter in line.split_once(": ").unwrap().1.split_whitespace() {
            let base = counter.split('[').next().unwrap();
            let name = match base.strip_suffix("_ACCUM") {
                Some(level) => format!("{level}:HIGH_RES"),
                None => base.strip_suffix("_sum").unwrap_or(base).to_string(),
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Profiles the demo with `--block BLOCKS` on `arch` in a fresh scratch directory; returns it,
/// the workload directory, the ground-truth lines and rtl-pmc's stderr.
fn profile_blocks(
    name: &str,
    arch: &str,
    model: &str,
    blocks: &str,
) -> (PathBuf, PathBuf, Vec<serde_json::Value>, String) {
    let dir = scratch(name);
    let truth = truth_names(&dir, arch, blocks);
    let out = rtl_pmc(&dir, arch, &["-d", "out", "--block", blocks], &truth);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let workload = dir.join("out/workloads/rtl-demo-app").join(model);
    let lines = common::ground_truth(&dir.join("truth.jsonl"));
    (dir, workload, lines, stderr(&out))
}

/// The ground-truth line of the execution that started at `start` and ended at `end`.
fn truth_at(truth: &[serde_json::Value], start: u64, end: u64) -> &serde_json::Value {
    let found: Vec<&serde_json::Value> = truth
        .iter()
        .filter(|t| t["start"] == start && t["end"] == end)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "ground truth of the dispatch at {start}..{end}"
    );
    found[0]
}

/// A `pmc_perf.csv` counter's true value: `X[i]` channel `i` across the XCDs (XCD-major, as
/// rocprof-compute numbers them), `X_sum` and basic counters summed over their samples.
fn truth_value(t: &serde_json::Value, counter: &str) -> f64 {
    if let Some((base, index)) = counter.strip_suffix(']').and_then(|c| c.split_once('[')) {
        return samples(t, base)[index.parse::<usize>().unwrap()] as f64;
    }
    total(t, counter.strip_suffix("_sum").unwrap_or(counter)) as f64
}

fn number(text: &str) -> f64 {
    text.parse()
        .unwrap_or_else(|_| panic!("'{text}' is not a number"))
}

/// Asserts every counter of `pmc_perf.csv` and of each level file in `workload` equal to the
/// ground truth of its dispatch; returns how many values were compared.
fn assert_workload_is_truth(workload: &Path, truth: &[serde_json::Value]) -> usize {
    let rows = read_table(&workload.join("pmc_perf.csv"));
    assert_eq!(rows.len(), 4, "one row per dispatch of the demo");
    let mut compared = 0;
    for row in &rows {
        let t = truth_at(
            truth,
            number(&row["Start_Timestamp"]) as u64,
            number(&row["End_Timestamp"]) as u64,
        );
        assert_eq!(row["Kernel_Name"], t["kernel"].as_str().unwrap());
        for (column, value) in row {
            if NOT_COUNTERS.contains(&column.as_str()) {
                continue;
            }
            assert_eq!(number(value), truth_value(t, column), "{column} of {row:?}");
            compared += 1;
        }
    }
    let levels: Vec<PathBuf> = std::fs::read_dir(workload)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("SQ_"))
        .collect();
    assert!(!levels.is_empty(), "level counters' files in {workload:?}");
    for path in levels {
        let level = path.file_stem().unwrap().to_string_lossy().into_owned();
        let level_rows = read_table(&path);
        assert_eq!(level_rows.len(), rows.len());
        for (row, pmc_row) in level_rows.iter().zip(&rows) {
            assert_eq!(row["Dispatch_ID"], pmc_row["Dispatch_ID"]);
            let t = truth_at(
                truth,
                number(&row["Start_Timestamp"]) as u64,
                number(&row["End_Timestamp"]) as u64,
            );
            assert_eq!(number(&row[&level]), truth_value(t, &level), "{level}");
            let accumulated = total(t, &format!("{level}:HIGH_RES"));
            assert_eq!(number(&row["SQ_ACCUM_PREV_HIRES"]), accumulated as f64);
            compared += 2;
        }
    }
    compared
}

/// The input files rocprof-compute would have run, from the workload's `perfmon/`.
fn input_files(workload: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(workload.join("perfmon"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn every_counter_of_the_workload_is_the_ground_truth_on_gfx942() {
    let (_, workload, truth, err) = profile_blocks("block-gfx942", "gfx942", "MI300X", "2,18");
    let compared = assert_workload_is_truth(&workload, &truth);
    let header = std::fs::read_to_string(workload.join("pmc_perf.csv")).unwrap();
    let header = header.lines().next().unwrap();
    // Section 18's per-channel L2 counters: 16 channels on each of the 8 XCDs.
    assert!(header.contains(",TCC_HIT[127],"), "{header}");
    assert!(header.contains(",TCC_HIT[17],"), "{header}");
    assert!(compared > 4 * 128, "{compared} values compared");
    // rocprof-compute packs sections 2 and 18 of gfx942 into 6 input files, one run each.
    assert_eq!(input_files(&workload).len(), 6);
    assert!(
        err.contains(
            "\nrtl-pmc: rocprof-compute would need 6 application runs for --block 2,18; this profile took 1\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("rtl-pmc: replay mode auto: kernel replay"),
        "{err}"
    );
    let sysinfo = read_table(&workload.join("sysinfo.csv"));
    assert_eq!(sysinfo[0]["num_xcd"], "8");
    assert_eq!(sysinfo[0]["total_l2_chan"], "128");
}

#[test]
fn every_counter_of_the_workload_is_the_ground_truth_on_gfx950() {
    let (_, workload, truth, _) = profile_blocks("block-gfx950", "gfx950", "MI350", "2,18");
    assert_workload_is_truth(&workload, &truth);
}

#[test]
fn the_summary_says_rocprof_compute_would_run_block_2_six_times() {
    let dir = scratch("block-summary");
    let out = rtl_pmc(&dir, "gfx942", &["-d", "out", "--block", "2"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "\nrtl-pmc: rocprof-compute would need 6 application runs for --block 2; this profile took 1\n"
        ),
        "{}",
        stderr(&out)
    );
    // Application replay asked for: one run per pass.
    let out = rtl_pmc(
        &dir,
        "gfx942",
        &["-d", "out2", "--block", "2", "--replay-mode", "application"],
        &[],
    );
    assert!(
        stderr(&out).contains(
            "\nrtl-pmc: rocprof-compute would need 6 application runs for --block 2; this profile took 6\n"
        ),
        "{}",
        stderr(&out)
    );
    // `rtl-pmc analyze` prints the panels from the profile.
    let analyze = Command::new(artifact("rtl-pmc"))
        .arg("analyze")
        .arg(dir.join("out"))
        .args(["--block", "2.1"])
        .output()
        .unwrap();
    assert_eq!(analyze.status.code(), Some(0), "{}", stderr(&analyze));
    let text = String::from_utf8_lossy(&analyze.stdout);
    assert!(text.contains("2.1 System Speed-of-Light"), "{text}");
}

#[test]
fn bad_block_ids_are_refused_before_the_application_runs() {
    let dir = scratch("block-bad");
    for (id, message) in [
        (
            "2.x",
            "rtl-pmc: --block: block id '2.x': expected 'all', a section (2), a table (2.1) or a metric (2.1.0)\n",
        ),
        ("99", "rtl-pmc: --block: block id '99': no such section on gfx942\n"),
        ("2.99", "rtl-pmc: --block: block id '2.99': no such table on gfx942\n"),
    ] {
        let out = rtl_pmc(&dir, "gfx942", &["-d", "out", "--block", id], &[]);
        assert_eq!(out.status.code(), Some(2), "{id}");
        assert_eq!(stderr(&out), message, "{id}");
        assert!(out.stdout.is_empty());
        assert!(!dir.join("out").exists(), "{id}: nothing written");
    }
}

/// The counters of `results.csv` in `dir`, one map per dispatch in start order.
fn results(dir: &Path) -> Vec<BTreeMap<String, String>> {
    read_table(&dir.join("results.csv"))
        .into_iter()
        .map(|row| row.into_iter().collect())
        .collect()
}

#[test]
fn one_run_equals_one_run_per_rocprof_compute_input_file() {
    let (dir, workload, _, _) = profile_blocks("block-per-file", "gfx942", "MI300X", "2");
    let rows = read_table(&workload.join("pmc_perf.csv"));
    let files = input_files(&workload);
    assert_eq!(files.len(), 6);
    // rocprof-compute's join: each input file's run gives its counters to every dispatch.
    let mut joined: Vec<BTreeMap<String, String>> = vec![BTreeMap::new(); rows.len()];
    for (i, file) in files.iter().enumerate() {
        let out_dir = format!("file_{i}");
        let out = rtl_pmc(
            &dir,
            "gfx942",
            &["-d", &out_dir, "-i", file.to_str().unwrap()],
            &[],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let run = results(&dir.join(&out_dir));
        assert_eq!(run.len(), rows.len());
        for (dispatch, row) in joined.iter_mut().zip(run) {
            dispatch.extend(row);
        }
    }
    let mut compared = 0;
    for (row, alone) in rows.iter().zip(&joined) {
        assert_eq!(row["Kernel_Name"], alone["KernelName"]);
        for (column, value) in row {
            if NOT_COUNTERS.contains(&column.as_str()) {
                continue;
            }
            let by_file = alone
                .get(column)
                .unwrap_or_else(|| panic!("{column} in no input file's run"));
            assert_eq!(number(value), number(by_file), "{column}");
            compared += 1;
        }
    }
    assert!(compared > 4 * 50, "{compared}");
}

#[test]
fn every_counter_of_the_workload_is_the_ground_truth_on_gfx90a() {
    let (_, workload, truth, _) = profile_blocks("block-gfx90a", "gfx90a", "MI200", "2,18");
    assert_workload_is_truth(&workload, &truth);
    // One XCD: the channel counters are rocprof's own form.
    let header = std::fs::read_to_string(workload.join("pmc_perf.csv")).unwrap();
    assert!(header.lines().next().unwrap().contains(",TCC_HIT[31],"));
}

#[test]
fn block_all_with_plan_shows_the_passes_and_what_the_architecture_lacks() {
    let dir = scratch("block-plan");
    let out = rtl_pmc(&dir, "gfx942", &["--block", "all", "--plan"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).starts_with(
        "rtl-pmc: warning: --block all: gfx942 has no SQ_VMEM_TA_ADDR_FIFO_FULL, SQ_VMEM_TA_CMD_FIFO_FULL, SQ_VMEM_WR_TA_DATA_FIFO_FULL, SQC_DCACHE_INFLIGHT_LEVEL; the panels' metrics that use them are left empty\n"
    ), "{}", stderr(&out));
    let plan = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(plan.lines().filter(|l| l.starts_with("pass ")).count(), 12);
    assert!(plan.contains("\npasses: 12 (lower bound: 12)\n"), "{plan}");
    assert!(plan.contains("\nreplay mode auto: kernel replay: 1 run of the application, 12 passes per selected dispatch"), "{plan}");
    assert!(
        !dir.join("truth.jsonl").exists(),
        "the application did not run"
    );
}
