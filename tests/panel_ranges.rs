//! Every rocprof-compute panel metric of a simulated profile lies in its valid range: the ground
//! truth of the demo's 12 kernels on gfx90a, gfx942 and gfx950, written as a rocprof-compute
//! workload (`pmc_perf.csv`, the level counters' files, `sysinfo.csv`), analysed by
//! `rtl-pmc analyze`; no value is negative and no percentage exceeds 100.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{artifact, ground_truth, scratch, sim_env};

/// The level counters whose accumulations the panels read.
const LEVELS: [&str; 5] = [
    "SQ_LEVEL_WAVES",
    "SQ_INST_LEVEL_VMEM",
    "SQ_INST_LEVEL_LDS",
    "SQ_INST_LEVEL_SMEM",
    "SQ_IFETCH_LEVEL",
];

/// `sysinfo.csv` of each simulated GPU: its KFD properties (CUs, shader engines, XCDs, clock)
/// and the figures rocprof-compute reports for a real GPU of the architecture.
fn sysinfo(arch: &str) -> [(&'static str, u32); 15] {
    let (cu, se, sqc, xcd, sclk, mclk, hbm, l2) = match arch {
        "gfx90a" => (104, 8, 56, 1, 1700, 1600, 32, 32),
        "gfx942" => (304, 32, 160, 8, 2100, 1300, 128, 128),
        _ => (256, 32, 64, 8, 2400, 1300, 128, 128),
    };
    [
        ("cu_per_gpu", cu),
        ("simd_per_cu", 4),
        ("se_per_gpu", se),
        ("sqc_per_gpu", sqc),
        ("pipes_per_gpu", 4),
        ("num_xcd", xcd),
        ("wave_size", 64),
        ("max_waves_per_cu", 32),
        ("lds_banks_per_cu", 32),
        ("max_sclk", sclk),
        ("cur_sclk", sclk),
        ("max_mclk", mclk),
        ("cur_mclk", mclk),
        ("num_hbm_channels", hbm),
        ("total_l2_chan", l2),
    ]
}

fn write_csv(path: &Path, rows: &[BTreeMap<String, String>]) {
    let mut w = csv::Writer::from_path(path).expect("csv file");
    let names: Vec<&String> = rows[0].keys().collect();
    w.write_record(&names).expect("header");
    for row in rows {
        w.write_record(names.iter().map(|n| row[*n].as_str()))
            .expect("row");
    }
    w.flush().expect("flushed");
}

/// The demo's kernels on `arch` with `size` elements, as a rocprof-compute workload in `dir`.
fn workload(dir: &Path, arch: &str, size: &str) {
    let names: Vec<String> = hsa_names(arch);
    let mut asked = names.clone();
    asked.extend(LEVELS.iter().map(|l| format!("{l}:HIGH_RES")));
    let truth = dir.join("truth.jsonl");
    // The demo's kernels: the OpenCL ones by name, the C++ ones through --cpp.
    let kernels = "vadd saxpy fill increment indirect_increment lds_reverse scratchy copy empty";
    let mut command = Command::new(artifact("rtl-demo-app"));
    for k in kernels.split(' ') {
        command.args(["--kernel", k]);
    }
    let out = command
        .args(["--cpp", "--size", size])
        .envs(sim_env(arch))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", asked.join(","))
        .output()
        .expect("rtl-demo-app starts");
    assert!(out.status.success(), "{out:?}");
    let lines = ground_truth(&truth);
    assert_eq!(lines.len(), 12);
    let row = |t: &serde_json::Value| {
        let mut row = BTreeMap::new();
        row.insert(
            "Kernel_Name".into(),
            t["kernel"].as_str().unwrap().to_string(),
        );
        row.insert("Start_Timestamp".into(), t["start"].to_string());
        row.insert("End_Timestamp".into(), t["end"].to_string());
        for name in &names {
            let samples: Vec<u64> = t["counters"][name]
                .as_array()
                .unwrap_or_else(|| panic!("{arch}: no {name}"))
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let total: u64 = samples.iter().sum();
            row.insert(name.clone(), total.to_string());
            row.insert(format!("{name}_sum"), total.to_string());
            if name.starts_with("TCC_") {
                for (i, v) in samples.iter().enumerate() {
                    row.insert(format!("{name}[{i}]"), v.to_string());
                }
            }
        }
        row
    };
    let rows: Vec<_> = lines.iter().map(row).collect();
    write_csv(&dir.join("pmc_perf.csv"), &rows);
    for level in LEVELS {
        let with_accum: Vec<_> = lines
            .iter()
            .zip(&rows)
            .map(|(t, r)| {
                let mut r = r.clone();
                let acc: u64 = t["counters"][format!("{level}:HIGH_RES")]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .sum();
                r.insert(format!("{level}_ACCUM"), acc.to_string());
                r
            })
            .collect();
        write_csv(&dir.join(format!("{level}.csv")), &with_accum);
    }
    let mut info: BTreeMap<String, String> = sysinfo(arch)
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    info.insert("gpu_arch".into(), arch.into());
    info.insert("gpu_model".into(), format!("simulated {arch}"));
    write_csv(&dir.join("sysinfo.csv"), &[info]);
}

/// The basic counters of `arch`, from the simulator's tables.
fn hsa_names(arch: &str) -> Vec<String> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("arch-defs/data/counters.csv"),
    )
    .expect("counters.csv");
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() > 3 && f[0] == arch && f[2] == "basic").then(|| f[1].to_string())
        })
        .collect()
}

/// Values `rtl-pmc analyze --csv` gives for `dir`, and those out of range.
fn out_of_range(dir: &Path) -> (usize, Vec<String>) {
    let out = Command::new(artifact("rtl-pmc"))
        .arg("analyze")
        .arg(dir)
        .arg("--csv")
        .output()
        .expect("rtl-pmc starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    // (kernel, metric id, metric) -> column -> value
    let mut metrics: BTreeMap<(String, String, String), BTreeMap<String, String>> = BTreeMap::new();
    for record in reader.records() {
        let r = record.expect("csv row");
        metrics
            .entry((r[0].to_string(), r[1].to_string(), r[2].to_string()))
            .or_default()
            .insert(r[3].to_string(), r[4].to_string());
    }
    let mut checked = 0;
    let mut bad = Vec::new();
    for ((kernel, id, name), columns) in &metrics {
        let unit = columns.get("Unit").cloned().unwrap_or_default();
        for (column, text) in columns {
            let Ok(value) = text.parse::<f64>() else {
                continue;
            };
            if !value.is_finite() || column == "Peak" {
                continue;
            }
            let percent = unit.to_lowercase().contains("pct")
                || unit.contains('%')
                || column.to_lowercase().contains("pct");
            checked += 1;
            if value < 0.0 || (percent && value > 100.0) {
                bad.push(format!("{kernel} {id} {name} {column} = {value} {unit}"));
            }
        }
    }
    (checked, bad)
}

#[test]
fn every_panel_metric_of_the_demo_lies_in_its_range_on_every_architecture() {
    let mut checked = Vec::new();
    for arch in ["gfx90a", "gfx942", "gfx950"] {
        for size in ["4096", "1048576"] {
            let dir = scratch(&format!("panel-ranges-{arch}-{size}"));
            workload(&dir, arch, size);
            let (n, bad) = out_of_range(&dir);
            assert!(
                bad.is_empty(),
                "{arch} at {size} elements:\n{}",
                bad.join("\n")
            );
            checked.push((arch, size, n));
        }
    }
    // Every value rtl-pmc analyze computes (a few more where the larger run gives a ratio a value
    // that has none at 4096 elements).
    assert_eq!(
        checked,
        vec![
            ("gfx90a", "4096", 23219),
            ("gfx90a", "1048576", 23219),
            ("gfx942", "4096", 63025),
            ("gfx942", "1048576", 63031),
            ("gfx950", "4096", 74993),
            ("gfx950", "1048576", 74999),
        ]
    );
}
