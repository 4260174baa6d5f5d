//! `rtl-pmc analyze` on an rtl-pmc profile of the demo application on a simulated gfx942: the
//! GPU constants come from the profile's agent_info.csv with their sources, and a panel metric
//! over plain counters equals the mean the simulator's ground truth gives per kernel.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use sim_support::{artifact, sim_env, total};

#[test]
fn instruction_mix_of_a_simulated_profile_equals_the_ground_truth() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-analyze-profile");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let truth = dir.join("truth.jsonl");
    let counters = [
        "SQ_INSTS_VALU",
        "SQ_INSTS_MFMA",
        "SQ_WAVES",
        "GRBM_GUI_ACTIVE",
    ];
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["-d", "out", "--pmc"])
        .args(counters)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", counters.join(","))
        .output()
        .expect("rtl-pmc starts");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let truth = sim_support::read_ground_truth(&truth);
    // Per kernel, the mean over its dispatches of VALU instructions that are not MFMA.
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for t in &truth {
        let kernel = t["kernel"].as_str().unwrap().to_string();
        let valu = total(t, "SQ_INSTS_VALU") as f64 - total(t, "SQ_INSTS_MFMA") as f64;
        let entry = sums.entry(kernel).or_default();
        entry.0 += valu;
        entry.1 += 1;
    }
    assert!(sums.len() >= 3, "{sums:?}");

    let analyze = |args: &[&str]| {
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
    };
    let csv = analyze(&["--block", "10.1.0", "--csv"]);
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
        let (sum, n) = sums[&record[0]];
        assert_eq!(
            record[4].parse::<f64>().unwrap(),
            sum / n as f64,
            "{}",
            &record[0]
        );
        seen += 1;
    }
    assert_eq!(seen, sums.len(), "{csv}");

    let text = analyze(&["--block", "2.1.8"]);
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
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-analyze-estimates");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("groups.yaml"),
        "jobs:\n  - pmc_groups: [[\"SQ_INSTS_VALU\", \"SQ_INSTS_MFMA\"], [\"SQ_WAVES\", \"GRBM_GUI_ACTIVE\"]]\n    pmc_group_interval: 3\n",
    )
    .unwrap();
    let truth = dir.join("truth.jsonl");
    let counters = ["SQ_INSTS_VALU", "SQ_INSTS_MFMA"];
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["-d", "out", "-i", "groups.yaml", "--"])
        .arg(artifact("rtl-demo-app"))
        .args(["--iterations", "6"])
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", counters.join(","))
        .output()
        .expect("rtl-pmc starts");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
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
    let truth = sim_support::read_ground_truth(&truth);
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for t in &truth {
        let entry = sums
            .entry(t["kernel"].as_str().unwrap().to_string())
            .or_default();
        entry.0 += total(t, "SQ_INSTS_VALU") as f64 - total(t, "SQ_INSTS_MFMA") as f64;
        entry.1 += 1;
    }
    let out = Command::new(artifact("rtl-pmc"))
        .args(["analyze"])
        .arg(dir.join("out"))
        .args(["--block", "10.1.0", "--csv"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let mut seen = 0;
    for record in reader.records() {
        let record = record.unwrap();
        if &record[3] != "Avg" {
            continue;
        }
        // The simulated kernels repeat their counts exactly: the estimates are the truth and
        // their spread, hence the error, is 0.
        let (sum, n) = sums[&record[0]];
        assert_eq!(
            record[4].parse::<f64>().unwrap(),
            sum / n as f64,
            "{}",
            &record[0]
        );
        assert_eq!(&record[5], "0", "{}", &record[0]);
        seen += 1;
    }
    assert_eq!(seen, sums.len(), "{csv}");
    let text = Command::new(artifact("rtl-pmc"))
        .args(["analyze"])
        .arg(dir.join("out"))
        .args(["--block", "10.1.0", "-k", "^vadd$"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let (sum, n) = sums["vadd"];
    let mean = format!("{:.2} ± 0.00", sum / n as f64);
    assert!(
        text.contains(&format!(
            "10.1.0     VALU    {mean}  {mean}  {mean}  instr per kernel\n"
        )),
        "{text}"
    );
}
