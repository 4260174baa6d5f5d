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
