//! `rtl-pmc analyze` on rtl-pmc profiles of the demo application on a simulated gfx942: the GPU
//! constants come from the profile's agent_info.csv with their sources, a panel metric over
//! plain counters equals the mean the simulator's ground truth gives per kernel, and a metric
//! from estimated counters carries their error.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sim_support::{artifact, sim_env, total};

/// Per kernel, the ground truth's mean over its dispatches of VALU instructions that are not
/// MFMA (what the instruction mix's VALU row computes).
type Means = BTreeMap<String, f64>;

/// Profiles the demo application (`rtl-pmc -d out ARGS -- rtl-demo-app APP`) in a fresh
/// directory holding `files`, and returns the directory and the ground truth's means.
fn profile(name: &str, files: &[(&str, &str)], args: &[&str], app: &[&str]) -> (PathBuf, Means) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-analyze-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let truth = dir.join("truth.jsonl");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["-d", "out"])
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(app)
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env(
            "RTL_SIM_GROUND_TRUTH_COUNTERS",
            "SQ_INSTS_VALU,SQ_INSTS_MFMA",
        )
        .output()
        .expect("rtl-pmc starts");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for t in &sim_support::read_ground_truth(&truth) {
        let kernel = t["kernel"].as_str().unwrap().to_string();
        let entry = sums.entry(kernel).or_default();
        entry.0 += total(t, "SQ_INSTS_VALU") as f64 - total(t, "SQ_INSTS_MFMA") as f64;
        entry.1 += 1;
    }
    assert!(sums.len() >= 3, "{sums:?}");
    let means = sums
        .into_iter()
        .map(|(k, (sum, n))| (k, sum / n as f64))
        .collect();
    (dir, means)
}

/// `rtl-pmc analyze DIR/out ARGS`'s stdout.
fn analyze(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(artifact("rtl-pmc"))
        .arg("analyze")
        .arg(dir.join("out"))
        .args(args)
        .output()
        .expect("rtl-pmc analyze runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks every kernel's VALU row of `--block 10.1.0 --csv` against `means`, with `error` in
/// the Error column.
fn assert_valu_means(csv: &str, means: &Means, error: &str) {
    assert!(
        csv.starts_with("Kernel,Metric_ID,Metric,Column,Value,Error\n"),
        "{csv}"
    );
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let mut seen = 0;
    for record in reader.records() {
        let record = record.unwrap();
        if (&record[1], &record[2], &record[3]) != ("10.1.0", "VALU", "Avg") {
            continue;
        }
        let kernel = &record[0];
        assert_eq!(record[4].parse::<f64>().unwrap(), means[kernel], "{kernel}");
        assert_eq!(&record[5], error, "{kernel}");
        seen += 1;
    }
    assert_eq!(seen, means.len(), "{csv}");
}

#[test]
fn instruction_mix_of_a_simulated_profile_equals_the_ground_truth() {
    let counters = [
        "--pmc",
        "SQ_INSTS_VALU",
        "SQ_INSTS_MFMA",
        "SQ_WAVES",
        "GRBM_GUI_ACTIVE",
    ];
    let (dir, means) = profile("measured", &[], &counters, &[]);
    // Every input measured: no error.
    assert_valu_means(&analyze(&dir, &["--block", "10.1.0", "--csv"]), &means, "");

    let text = analyze(&dir, &["--block", "2.1.8"]);
    for line in [
        "  cu_per_gpu       = 304        from agent_info.csv Cu_Count\n",
        "  num_xcd          = 8          from agent_info.csv Num_Xcc\n",
        "  max_sclk         = 2100       from agent_info.csv Max_Engine_Clk_Fcompute\n",
        "  total_l2_chan    = 128        from gfx942 figure (a real MI300X's system information): 16 per XCD\n",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    // Active CUs needs SQ_BUSY_CU_CYCLES, which this profile did not collect.
    assert!(
        text.contains("(no values where the profile lacks SQ_BUSY_CU_CYCLES)\n"),
        "{text}"
    );
}

#[test]
fn a_metric_from_estimated_counters_carries_their_error() {
    // Two groups rotating every 3 dispatches over the demo's 4 kernels: each kernel measures
    // each group on some dispatches, the others are estimated (`<C>_estimate`, `<C>_error`).
    let groups = "jobs:\n  - pmc_groups: [[\"SQ_INSTS_VALU\", \"SQ_INSTS_MFMA\"], [\"SQ_WAVES\", \"GRBM_GUI_ACTIVE\"]]\n    pmc_group_interval: 3\n";
    let (dir, means) = profile(
        "estimates",
        &[("groups.yaml", groups)],
        &["-i", "groups.yaml"],
        &["--iterations", "6"],
    );
    let results = std::fs::read_to_string(dir.join("out/results.csv")).unwrap();
    assert!(
        results
            .lines()
            .next()
            .unwrap()
            .contains(",SQ_INSTS_VALU_estimate,SQ_INSTS_VALU_error,"),
        "{results}"
    );
    // The simulated kernels repeat their counts exactly: the estimates are the truth and their
    // spread, hence the error, is 0.
    assert_valu_means(&analyze(&dir, &["--block", "10.1.0", "--csv"]), &means, "0");
    let text = analyze(&dir, &["--block", "10.1.0", "-k", "^vadd$"]);
    let mean = format!("{:.2} ± 0.00", means["vadd"]);
    assert!(
        text.contains(&format!(
            "10.1.0     VALU    {mean}  {mean}  {mean}  instr per kernel\n"
        )),
        "{text}"
    );
}
