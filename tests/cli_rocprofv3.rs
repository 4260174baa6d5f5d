//! rocprofv3's flags end to end on the simulated gfx942: path keys in `-d`/`-o`, `--stats`,
//! `--summary-output-file`, `--output-config`, `--log-level env`, `--preload`, and format names
//! in any case separated by a comma and a space.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sim_support::{artifact, sim_env};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-rocprofv3-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Every path under `dir`, relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).expect("readable directory") {
            let path = entry.expect("directory entry").path();
            paths.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                todo.push(path);
            }
        }
    }
    paths.sort();
    paths
}

/// A fraction the way rocprofv3's CSV files print it.
fn float(v: f64) -> String {
    if v.abs() >= 1.0 {
        return format!("{v:.6}");
    }
    let text = format!("{v:.8e}");
    let (mantissa, exponent) = text.split_once('e').unwrap();
    let exponent: i32 = exponent.parse().unwrap();
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

/// `kernel_stats.csv` computed from a `counter_collection.csv` of one counter (a row per
/// dispatch).
fn expected_stats(counter_collection: &str) -> String {
    let mut durations: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in counter_collection.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let start: u64 = fields[17].parse().unwrap();
        let end: u64 = fields[18].parse().unwrap();
        durations
            .entry(fields[8].trim_matches('"').to_string())
            .or_default()
            .push(end - start);
    }
    let all: u64 = durations.values().flatten().sum();
    let mut rows: Vec<(u64, String)> = durations
        .iter()
        .map(|(kernel, d)| {
            let total: u64 = d.iter().sum();
            let n = d.len() as f64;
            let mean = total as f64 / n;
            let variance = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            let row = format!(
                "\"{kernel}\",{},{total},{},{},{},{},{}\n",
                d.len(),
                float(mean),
                float(100.0 * total as f64 / all as f64),
                d.iter().min().unwrap(),
                d.iter().max().unwrap(),
                float(variance.sqrt())
            );
            (total, row)
        })
        .collect();
    // Longest total first; equal totals by name (the map's order, kept by a stable sort).
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut text = String::from(
        "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\",\"StdDev\"\n",
    );
    for (_, row) in rows {
        text.push_str(&row);
    }
    text
}

#[test]
fn rocprofv3_flags_write_their_files_where_the_path_keys_say() {
    let dir = scratch("flags");
    let demo = artifact("rtl-demo-app").display().to_string();
    let child = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args([
            "--arch",
            "gfx942",
            "-d",
            "out/%env{RTL_TEST_DIR}%/%ppid%_{pid}",
        ])
        .args(["-o", "run_%tag%", "--pmc", "SQ_WAVES", "--stats", "-S"])
        .args(["--summary-output-file", "summary", "--output-config"])
        .args(["-f", "CSV, json", "-T", "--log-level", "env"])
        .args(["--preload", "libm.so.6", "--", &demo, "--iterations", "3"])
        .envs(sim_env("gfx942"))
        .env("RTL_TEST_DIR", "/a/b")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rtl-pmc starts");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    let profile = format!("out/a_b/{}_{pid}", std::process::id());
    let found = tree(&dir);
    assert!(
        found.iter().all(|p| !p.contains('%') && !p.contains('{')),
        "{found:?}"
    );
    let base = dir.join(&profile);
    let mut merged: Vec<String> = tree(&base)
        .into_iter()
        .filter(|p| !p.starts_with("pass_"))
        .collect();
    merged.sort();
    assert_eq!(
        merged,
        [
            "run_rtl-demo-app.csv",
            "run_rtl-demo-app.json",
            "run_rtl-demo-app_config.json",
            "run_rtl-demo-app_kernel_stats.csv",
            "run_rtl-demo-app_summary.txt",
        ]
    );

    let counter_collection =
        std::fs::read_to_string(base.join("pass_1/counter_collection.csv")).unwrap();
    assert_eq!(
        counter_collection.lines().count(),
        13,
        "4 kernels x 3 iterations"
    );
    let stats = std::fs::read_to_string(base.join("run_rtl-demo-app_kernel_stats.csv")).unwrap();
    assert_eq!(stats, expected_stats(&counter_collection));

    // The summary went to the file, not to stderr.
    let summary = std::fs::read_to_string(base.join("run_rtl-demo-app_summary.txt")).unwrap();
    assert!(
        summary.starts_with("rtl-pmc: top kernels by total time\n"),
        "{summary}"
    );
    assert!(!stderr.contains("top kernels by total time"), "{stderr}");

    // --log-level env: the environment added for the application, --preload first in LD_PRELOAD.
    let plan = base.join("pass_1/plan.json");
    for line in [
        format!("rtl-pmc: pass 1: RTL_PMC_PLAN={}", plan.display()),
        "rtl-pmc: pass 1: RTL_PMC_TRUNCATE_KERNELS=1".to_string(),
    ] {
        assert!(stderr.lines().any(|l| l == line), "{line} in {stderr}");
    }
    // rtl-pmc's roctx library after --preload, from a directory of its own that is also first
    // on the library path, and gone after the run.
    let roctx_dir = format!("/rtl-pmc-roctx-{pid}");
    let preload = stderr
        .lines()
        .find_map(|l| l.strip_prefix("rtl-pmc: pass 1: LD_PRELOAD="))
        .unwrap();
    let (first, roctx_library) = preload.split_once(':').unwrap();
    assert_eq!(first, "libm.so.6");
    assert!(
        roctx_library.ends_with(&format!("{roctx_dir}/libroctx64.so.4")),
        "{preload}"
    );
    let library_path = stderr
        .lines()
        .find_map(|l| l.strip_prefix("rtl-pmc: pass 1: LD_LIBRARY_PATH="))
        .unwrap();
    let roctx_path = roctx_library.strip_suffix("/libroctx64.so.4").unwrap();
    assert!(
        library_path.starts_with(&format!("{roctx_path}:")),
        "{library_path}"
    );
    assert!(!Path::new(roctx_path).exists(), "{roctx_path} is removed");

    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(base.join("run_rtl-demo-app_config.json")).unwrap(),
    )
    .unwrap();
    let metadata = &config["rocprofiler-sdk-tool"][0]["metadata"];
    assert_eq!(metadata["pid"], pid);
    assert_eq!(
        metadata["command"],
        serde_json::json!([demo, "--iterations", "3"])
    );
    let run = &metadata["config"]["runs"][0];
    assert_eq!(run["pmc"], serde_json::json!(["SQ_WAVES"]));
    assert_eq!(run["output_format"], serde_json::json!(["csv", "json"]));
    assert_eq!(run["preload"], serde_json::json!(["libm.so.6"]));
    for key in ["stats", "summary", "truncate_kernels"] {
        assert_eq!(run[key], true, "{key}");
    }
    assert_eq!(run["log_level"], "env");
    assert_eq!(run["summary_output_file"], "summary");
}

#[test]
fn log_level_error_hides_warnings() {
    let dir = scratch("quiet");
    let demo = artifact("rtl-demo-app").display().to_string();
    let run = |level: &str| {
        let out = Command::new(artifact("rtl-pmc"))
            .current_dir(&dir)
            .args(["--arch", "gfx942", "-d", level, "--pmc", "SQ_WAVES"])
            .args(["--log-level", level, "--", &demo])
            .envs(sim_env("gfx942"))
            .env("RTL_SIM_AQLPROFILE_ZEROS", "1")
            .output()
            .expect("rtl-pmc starts");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run("warning").contains("rtl-pmc: warning: "));
    assert!(!run("error").contains("warning"));
}
