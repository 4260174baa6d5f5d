//! rocprofv3's flags end to end on the simulated gfx942: path keys in `-d`/`-o`, `--stats`,
//! `--summary-output-file`, `--output-config`, `--log-level env`, `--preload`, and format names
//! in any case separated by a comma and a space.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sim_support::{artifact, query, sim_env};

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

    let counter_collection = std::fs::read_to_string(sim_support::process_file(
        &base,
        "pass_1/counter_collection.csv",
    ))
    .unwrap();
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
    assert_eq!(run["replay_mode"], "application");
    assert_eq!(metadata["config"]["replay"], "application");
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

/// Runs `rtl-pmc ARGS -d out -- rtl-demo-app --iterations 2` in `dir` on the simulated gfx942
/// with ground truth for `truth`; returns the output directory and the ground-truth lines.
fn profile_demo(dir: &Path, args: &[&str], truth: &[&str]) -> (PathBuf, Vec<serde_json::Value>) {
    let args = [&["--arch", "gfx942"][..], args].concat();
    profile(dir, "gfx942", &args, &["--iterations", "2"], truth)
}

/// Runs `rtl-pmc ARGS -d out -- rtl-demo-app APP_ARGS` in `dir` on the simulated `config` with
/// ground truth for `truth` (every counter when empty); returns the output directory and the
/// ground-truth lines.
fn profile(
    dir: &Path,
    config: &str,
    args: &[&str],
    app_args: &[&str],
    truth: &[&str],
) -> (PathBuf, Vec<serde_json::Value>) {
    let truth_file = dir.join("truth.jsonl");
    let mut command = Command::new(artifact("rtl-pmc"));
    command
        .current_dir(dir)
        .args(["-d", "out"])
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(app_args)
        .envs(sim_env(config))
        .env("RTL_SIM_GROUND_TRUTH", &truth_file);
    if !truth.is_empty() {
        command.env("RTL_SIM_GROUND_TRUTH_COUNTERS", truth.join(","));
    }
    let out = command.output().expect("rtl-pmc starts");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir.join("out"), sim_support::read_ground_truth(&truth_file))
}

#[test]
fn queries_written_for_rocprofv3_databases_read_the_ground_truth() {
    let dir = scratch("rocpd");
    let counters = ["SQ_WAVES", "GRBM_COUNT", "SQ_INSTS_VALU"];
    let (out, truth) = profile_demo(
        &dir,
        &["--pmc", "SQ_WAVES", "GRBM_COUNT", "--pmc", "SQ_INSTS_VALU"],
        &counters,
    );
    let conn = rusqlite::Connection::open(out.join("results.db")).unwrap();

    // rocpd's naming: metadata, GUID-suffixed tables and the unsuffixed view of each.
    let meta = query(&conn, "SELECT tag, value FROM rocpd_metadata ORDER BY id");
    assert_eq!(meta[0], ["schema_version", "3"]);
    assert_eq!(meta[1][0], "uuid");
    assert_eq!(meta[2][0], "guid");
    let (uuid, guid) = (meta[1][1].clone(), meta[2][1].clone());
    assert_eq!(uuid, format!("_{}", guid.replace('-', "_")));
    for name in [
        "metadata",
        "string",
        "info_node",
        "info_process",
        "info_thread",
        "info_agent",
        "info_queue",
        "info_stream",
        "info_pmc",
        "info_code_object",
        "info_kernel_symbol",
        "track",
        "event",
        "arg",
        "pmc_event",
        "region",
        "sample",
        "kernel_dispatch",
        "memory_copy",
        "memory_allocate",
    ] {
        let kinds = query(
            &conn,
            &format!(
                "SELECT type FROM sqlite_master WHERE name IN ('rocpd_{name}{uuid}', 'rocpd_{name}') ORDER BY type"
            ),
        );
        assert_eq!(kinds, [["table"], ["view"]], "rocpd_{name}");
    }
    // Every guid column holds the run's guid.
    assert_eq!(
        query(&conn, "SELECT DISTINCT guid FROM rocpd_kernel_dispatch"),
        [[guid.clone()]]
    );
    assert_eq!(
        query(&conn, "SELECT string FROM rocpd_string WHERE id = 1"),
        [[""]]
    );

    // The first pass's dispatches: one per ground-truth line of its process.
    let first_pid = truth[0]["pid"].clone();
    let pass1: Vec<&serde_json::Value> = truth.iter().filter(|t| t["pid"] == first_pid).collect();
    assert_eq!(pass1.len(), 8, "4 kernels x 2 iterations");

    // kernels: every dispatch with its times and sizes, named, on the GPU.
    let kernels = query(
        &conn,
        "SELECT name, pid, agent_type, start, end, duration, grid_x, workgroup_x, region
         FROM kernels ORDER BY start",
    );
    assert_eq!(kernels.len(), pass1.len());
    for (row, t) in kernels.iter().zip(&pass1) {
        let (start, end) = (t["start"].as_u64().unwrap(), t["end"].as_u64().unwrap());
        assert_eq!(
            row[..6],
            [
                t["kernel"].as_str().unwrap().to_string(),
                t["pid"].to_string(),
                "GPU".into(),
                start.to_string(),
                end.to_string(),
                (end - start).to_string()
            ]
        );
        assert_eq!(row[8], "");
    }

    // counters_collection: each dispatch's counters, summed over their dimensions.
    let collected = query(
        &conn,
        "SELECT start, kernel_name, counter_name, value FROM counters_collection
         ORDER BY start, counter_id",
    );
    assert_eq!(collected.len(), pass1.len() * counters.len());
    for (rows, t) in collected.chunks(counters.len()).zip(&pass1) {
        for (row, counter) in rows.iter().zip(counters) {
            let expected = sim_support::total(t, counter) as f64;
            assert_eq!(
                row[..4],
                [
                    t["start"].to_string(),
                    t["kernel"].as_str().unwrap().to_string(),
                    counter.to_string(),
                    expected.to_string()
                ],
                "{t}"
            );
        }
    }

    // The tables joined by hand, as a user's own query would.
    let by_hand = query(
        &conn,
        "SELECT s.display_name, i.name, count(*), sum(e.value)
         FROM rocpd_pmc_event e JOIN rocpd_info_pmc i ON i.id = e.pmc_id
         JOIN rocpd_kernel_dispatch k ON k.event_id = e.event_id
         JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id
         GROUP BY s.display_name, i.name ORDER BY s.display_name, i.id",
    );
    let mut expected: BTreeMap<(String, usize), (u64, u64)> = BTreeMap::new();
    for t in &pass1 {
        for (i, counter) in counters.iter().enumerate() {
            let entry = expected
                .entry((t["kernel"].as_str().unwrap().to_string(), i))
                .or_default();
            entry.0 += 1;
            entry.1 += sim_support::total(t, counter);
        }
    }
    let expected: Vec<Vec<String>> = expected
        .iter()
        .map(|((kernel, i), (n, sum))| {
            vec![
                kernel.clone(),
                counters[*i].to_string(),
                n.to_string(),
                (*sum as f64).to_string(),
            ]
        })
        .collect();
    assert_eq!(by_hand, expected);

    // pmc_events and pmc_info.
    assert_eq!(
        query(&conn, "SELECT count(*) FROM pmc_events"),
        [[(pass1.len() * counters.len()).to_string()]]
    );
    assert_eq!(
        query(
            &conn,
            "SELECT name, block, is_derived FROM pmc_info ORDER BY id"
        ),
        [
            ["SQ_WAVES", "SQ", "0"],
            ["GRBM_COUNT", "GRBM", "0"],
            ["SQ_INSTS_VALU", "SQ", "0"]
        ]
    );

    // top_kernels and busy: the first pass's kernel times.
    let mut calls: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for t in &pass1 {
        let entry = calls
            .entry(t["kernel"].as_str().unwrap().into())
            .or_default();
        entry.0 += 1;
        entry.1 += t["end"].as_u64().unwrap() - t["start"].as_u64().unwrap();
    }
    let top = query(
        &conn,
        "SELECT name, total_calls, total_duration FROM top_kernels ORDER BY name",
    );
    let expected: Vec<Vec<String>> = calls
        .iter()
        .map(|(k, (n, ns))| vec![k.clone(), n.to_string(), (*ns as f64 / 1000.0).to_string()])
        .collect();
    assert_eq!(top, expected);
    let busy: u64 = calls.values().map(|c| c.1).sum();
    assert_eq!(
        query(&conn, "SELECT type, GpuTime FROM busy"),
        [["GPU".to_string(), busy.to_string()]]
    );

    // processes and threads: the first pass's process, started by rtl-pmc, with its command.
    let processes = query(&conn, "SELECT pid, command, hostname FROM processes");
    assert_eq!(processes.len(), 1);
    assert_eq!(processes[0][0], first_pid.to_string());
    assert_eq!(
        processes[0][1],
        format!("{} --iterations 2", artifact("rtl-demo-app").display())
    );
    assert_eq!(query(&conn, "SELECT count(*) FROM threads"), [["1"]]);
    // The GPU and the CPUs are agents; counters were measured on the GPU.
    assert_eq!(
        query(
            &conn,
            "SELECT type, name FROM rocpd_info_agent WHERE id = (SELECT DISTINCT agent_id FROM rocpd_info_pmc)"
        ),
        [["GPU", "gfx942"]]
    );
    assert!(
        query(
            &conn,
            "SELECT count(*) FROM rocpd_info_agent WHERE type = 'CPU'"
        )[0][0]
            != "0"
    );
    // rtl-pmc's own tables sit beside rocpd's: the merged dispatch is the rocpd dispatch.
    assert_eq!(
        query(
            &conn,
            "SELECT count(*) FROM rocpd_kernel_dispatch k JOIN rtl_merged_dispatch m ON m.id = k.id
             WHERE m.passes = 2"
        ),
        [[pass1.len().to_string()]]
    );
}

#[test]
fn kernel_trace_alone_times_every_dispatch() {
    let dir = scratch("kernel-trace");
    let (out, truth) = profile_demo(&dir, &["--kernel-trace"], &[]);
    let rows = sim_support::read_table(&sim_support::process_file(&out, "pass_1/kernel_trace.csv"));
    assert_eq!(rows.len(), truth.len());
    assert_eq!(truth.len(), 8, "4 kernels x 2 iterations");
    for (row, t) in rows.iter().zip(&truth) {
        assert_eq!(row["Kind"], "KERNEL_DISPATCH");
        assert_eq!(row["Kernel_Name"], t["kernel"].as_str().unwrap());
        assert_eq!(row["Start_Timestamp"], t["start"].to_string());
        assert_eq!(row["End_Timestamp"], t["end"].to_string());
        assert!(row["Thread_Id"].parse::<u64>().is_ok_and(|tid| tid > 0));
        assert_eq!(row["Grid_Size_X"], "4096");
        assert_eq!(row["Workgroup_Size_X"], "256");
    }
    let header =
        std::fs::read_to_string(sim_support::process_file(&out, "pass_1/kernel_trace.csv"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string();
    assert_eq!(
        header,
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\""
    );
    // No counter was asked for: no counter_collection.csv, and the plan says so.
    assert!(std::fs::read_dir(out.join("pass_1")).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with("_counter_collection.csv")));
}

/// rocm-trace-lite's own queries (its quick start and its output format's examples), verbatim,
/// on rtl-pmc's database: `rocpd_op` joined to `rocpd_string` by `description_id` gives each
/// kernel's name, calls and total time, equal to the ground truth and to the summary's calls.
#[test]
fn rocm_trace_lite_queries_run_unchanged() {
    let dir = scratch("rocm-trace-lite");
    let truth_file = dir.join("truth.jsonl");
    let out = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["--arch", "gfx942", "-d", "out", "--pmc", "SQ_WAVES", "--"])
        .arg(artifact("rtl-demo-app"))
        .args([
            "--iterations",
            "3",
            "--kernel",
            "vadd",
            "--kernel",
            "scratchy",
        ])
        .args(["--kernel", "vadd"])
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", &truth_file)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", "SQ_WAVES")
        .output()
        .expect("rtl-pmc starts");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let truth = sim_support::read_ground_truth(&truth_file);
    let conn = rusqlite::Connection::open(dir.join("out/results.db")).unwrap();

    // Per kernel from the ground truth: calls and total nanoseconds, by total, descending.
    let mut per_kernel: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for t in &truth {
        let entry = per_kernel
            .entry(t["kernel"].as_str().unwrap().to_string())
            .or_default();
        entry.0 += 1;
        entry.1 += t["end"].as_u64().unwrap() - t["start"].as_u64().unwrap();
    }
    let mut expected: Vec<(String, u64, u64)> = per_kernel
        .into_iter()
        .map(|(k, (c, t))| (k, c, t))
        .collect();
    expected.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut calls: Vec<(&str, u64)> = expected.iter().map(|(k, c, _)| (k.as_str(), *c)).collect();
    calls.sort();
    assert_eq!(calls, [("scratchy", 3), ("vadd", 6)]);

    // The quick start's "All GEMM kernels": no GEMM kernel here, so no row...
    const GEMM: &str = "
  SELECT s.string, count(*), sum(o.end - o.start)/1000 as total_us
  FROM rocpd_op o
  JOIN rocpd_string s ON o.description_id = s.id
  WHERE s.string LIKE '%Cijk%'
  GROUP BY s.string
  ORDER BY total_us DESC;
";
    assert_eq!(query(&conn, GEMM), Vec::<Vec<String>>::new());
    // ... and every kernel with the pattern that matches all of them.
    let all = query(&conn, &GEMM.replace("%Cijk%", "%"));
    let by_total: Vec<Vec<String>> = expected
        .iter()
        .map(|(k, c, t)| vec![k.clone(), c.to_string(), (t / 1000).to_string()])
        .collect();
    assert_eq!(all, by_total);
    // Exact nanoseconds, from the same join.
    let exact = query(
        &conn,
        "SELECT s.string, count(*), sum(o.end - o.start) FROM rocpd_op o
         JOIN rocpd_string s ON o.description_id = s.id GROUP BY s.string
         ORDER BY sum(o.end - o.start) DESC, s.string",
    );
    let exact_expected: Vec<Vec<String>> = expected
        .iter()
        .map(|(k, c, t)| vec![k.clone(), c.to_string(), t.to_string()])
        .collect();
    assert_eq!(exact, exact_expected);
    // The summary lists the same kernels with the same calls.
    for (kernel, calls, _) in &expected {
        let line = stderr
            .lines()
            .find(|l| l.split_whitespace().next() == Some(kernel.as_str()))
            .unwrap_or_else(|| panic!("{kernel} in the summary:\n{stderr}"));
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(calls.to_string().as_str()),
            "{line}"
        );
    }
    // Every row a kernel execution on GPU 1 (its KFD node, as the summary names it).
    assert_eq!(
        query(
            &conn,
            "SELECT DISTINCT s.string FROM rocpd_op o JOIN rocpd_string s ON s.id = o.opType_id"
        ),
        [["KernelExecution"]]
    );
    // Its output format's examples: the slowest execution, kernels per GPU, NCCL kernels.
    let slowest = truth
        .iter()
        .max_by_key(|t| t["end"].as_u64().unwrap() - t["start"].as_u64().unwrap())
        .unwrap();
    let longest = slowest["end"].as_u64().unwrap() - slowest["start"].as_u64().unwrap();
    assert_eq!(
        query(
            &conn,
            "SELECT s.string, (o.end - o.start)/1000 as duration_us
FROM rocpd_op o
JOIN rocpd_string s ON o.description_id = s.id
ORDER BY (o.end - o.start) DESC
LIMIT 1;"
        ),
        [[
            slowest["kernel"].as_str().unwrap().to_string(),
            (longest / 1000).to_string()
        ]]
    );
    assert_eq!(
        query(
            &conn,
            "SELECT gpuId, count(*) as ops
FROM rocpd_op
WHERE gpuId >= 0
GROUP BY gpuId;"
        ),
        [["1".to_string(), truth.len().to_string()]]
    );
    assert_eq!(
        query(
            &conn,
            "SELECT s.string, count(*) as calls
FROM rocpd_op o
JOIN rocpd_string s ON o.description_id = s.id
WHERE s.string LIKE '%nccl%'
GROUP BY s.string;"
        ),
        Vec::<Vec<String>>::new()
    );
    // The quick start's other two queries run: the top kernels and the GPU's busy time.
    assert_eq!(query(&conn, "SELECT * FROM top LIMIT 10;").len(), 2);
    assert_eq!(query(&conn, "SELECT * FROM busy;").len(), 1);
    // One row per dispatch, with its queue's handle and its times.
    let ops = query(
        &conn,
        "SELECT count(*), count(DISTINCT id), count(DISTINCT queueId), min(start) > 0 FROM rocpd_op",
    );
    assert_eq!(
        ops,
        [[
            truth.len().to_string(),
            truth.len().to_string(),
            "1".into(),
            "1".into()
        ]]
    );
}

/// A dispatch as a reader of rocprofv3's per-process files sees it: kernel, start, end, and
/// each counter's value summed over its records.
type Row = (String, u64, u64, BTreeMap<String, f64>);

/// The files of `out/pmc_1/*/` whose names end with `suffix`: what rocprof-compute's globs
/// find after one run.
fn process_files(out: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in std::fs::read_dir(out.join("pmc_1")).expect("pmc_1 is there") {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .ends_with(suffix)
            {
                found.push(file);
            }
        }
    }
    found.sort();
    found
}

/// The one file rocprof-compute's glob `out/pmc_1/*/*SUFFIX` finds.
fn only_process_file(out: &Path, suffix: &str) -> PathBuf {
    let found = process_files(out, suffix);
    assert_eq!(found.len(), 1, "out/pmc_1/*/*{suffix}: {:?}", tree(out));
    found.into_iter().next().unwrap()
}

/// The rows of `counter_collection.csv` as rocprof-compute pivots them, with `Agent_Id` named
/// as `-A absolute` names agents: by the KFD node of a GPU of the sibling `agent_info.csv`.
fn csv_rows(out: &Path) -> Vec<Row> {
    let counters = only_process_file(out, "_counter_collection.csv");
    let name = counters.file_name().unwrap().to_str().unwrap();
    let info = counters.with_file_name(name.replace("_counter_collection", "_agent_info"));
    let gpus: Vec<String> = sim_support::read_table(&info)
        .iter()
        .filter(|r| r["Agent_Type"] == "GPU")
        .map(|r| format!("Agent {}", r["Node_Id"]))
        .collect();
    let mut rows: BTreeMap<u64, Row> = BTreeMap::new();
    for r in sim_support::read_table(&counters) {
        assert!(
            gpus.contains(&r["Agent_Id"]),
            "{:?} not in {gpus:?}",
            r["Agent_Id"]
        );
        let row = rows
            .entry(r["Dispatch_Id"].parse().unwrap())
            .or_insert_with(|| {
                (
                    r["Kernel_Name"].clone(),
                    r["Start_Timestamp"].parse().unwrap(),
                    r["End_Timestamp"].parse().unwrap(),
                    BTreeMap::new(),
                )
            });
        *row.3.entry(r["Counter_Name"].clone()).or_default() +=
            r["Counter_Value"].parse::<f64>().unwrap();
    }
    rows.into_values().collect()
}

/// The rows of a process's JSON file, read the way rocprof-compute reads it: counters by
/// (agent, id), kernels by their index in `kernel_symbols`, times from the
/// `buffer_records.kernel_dispatch` record of the same correlation id, and the kernel's
/// resources on each counter record.
fn json_rows(out: &Path) -> Vec<Row> {
    let file = only_process_file(out, ".json");
    assert_eq!(process_files(out, ".csv"), Vec::<PathBuf>::new());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let tool = &doc["rocprofiler-sdk-tool"][0];
    let pid = tool["metadata"]["pid"].as_u64().unwrap();
    assert!(file.ends_with(format!("{pid}_results.json")), "{file:?}");
    let mut names = BTreeMap::new();
    for c in tool["counters"].as_array().unwrap() {
        names.insert(
            (c["agent_id"]["handle"].as_u64(), c["id"]["handle"].as_u64()),
            c["name"].as_str().unwrap().to_string(),
        );
    }
    let mut times = BTreeMap::new();
    for d in tool["buffer_records"]["kernel_dispatch"]
        .as_array()
        .unwrap()
    {
        times.insert(
            d["correlation_id"]["internal"].as_u64().unwrap(),
            (
                d["start_timestamp"].as_u64().unwrap(),
                d["end_timestamp"].as_u64().unwrap(),
            ),
        );
    }
    let agents: Vec<u64> = tool["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] == 2 && a["wave_front_size"].as_u64() == Some(64))
        .map(|a| a["id"]["handle"].as_u64().unwrap())
        .collect();
    tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let info = &d["dispatch_data"]["dispatch_info"];
            let agent = info["agent_id"]["handle"].as_u64();
            assert!(agents.contains(&agent.unwrap()));
            let symbol = &tool["kernel_symbols"][info["kernel_id"].as_u64().unwrap() as usize];
            assert!(symbol["private_segment_size"].is_u64());
            for resource in ["lds_block_size_v", "arch_vgpr_count", "sgpr_count"] {
                assert!(d[resource].is_u64(), "{resource} in {d}");
            }
            let correlation = d["dispatch_data"]["correlation_id"]["internal"]
                .as_u64()
                .unwrap();
            let (start, end) = times[&correlation];
            let mut values = BTreeMap::new();
            for r in d["records"].as_array().unwrap() {
                let name = names[&(agent, r["counter_id"]["handle"].as_u64())].clone();
                *values.entry(name).or_default() += r["value"].as_f64().unwrap();
            }
            let kernel = symbol["formatted_kernel_name"]
                .as_str()
                .unwrap()
                .to_string();
            (kernel, start, end, values)
        })
        .collect()
}

/// The rows of a process's rocpd database, through the `counters_collection` view's columns
/// rocprof-compute reads.
fn rocpd_rows(out: &Path) -> Vec<Row> {
    let file = only_process_file(out, ".db");
    let conn = rusqlite::Connection::open(file).unwrap();
    let mut rows: BTreeMap<u64, Row> = BTreeMap::new();
    let sql = "SELECT agent_id, dispatch_id, grid_size, workgroup_size, lds_block_size, \
               scratch_size, vgpr_count, accum_vgpr_count, sgpr_count, kernel_name, start, end, \
               kernel_id, counter_name, value FROM counters_collection";
    for r in query(&conn, sql) {
        let row = rows.entry(r[1].parse().unwrap()).or_insert_with(|| {
            (
                r[9].clone(),
                r[10].parse().unwrap(),
                r[11].parse().unwrap(),
                BTreeMap::new(),
            )
        });
        *row.3.entry(r[13].clone()).or_default() += r[14].parse::<f64>().unwrap();
    }
    rows.into_values().collect()
}

/// The simulated GPUs' XCCs per architecture.
fn xccs(arch: &str) -> usize {
    match arch {
        "gfx90a" => 1,
        _ => 8,
    }
}

/// A counter's value in one ground-truth dispatch: basic counters and their `_sum` summed over
/// samples, `NAME_ACCUM` from the accumulated truth, `NAME[i]` of the definitions file (XCC 1,
/// channel 1 on gfx942 and gfx950; channel 5 on gfx90a) and rocprof v1's `NAME[i]` (channel i
/// on every XCC).
fn truth_value(arch: &str, t: &serde_json::Value, counter: &str) -> f64 {
    let samples = |name: &str| -> Vec<u64> {
        t["counters"][name]
            .as_array()
            .unwrap_or_else(|| panic!("no truth for {name}"))
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let sum = |name: &str| samples(name).iter().sum::<u64>() as f64;
    if let Some(base) = counter.strip_suffix("_ACCUM") {
        return sum(&format!("{}:HIGH_RES", by_event(base)));
    }
    if let Some((base, index)) = counter.strip_suffix(']').and_then(|c| c.split_once('[')) {
        let values = samples(base);
        let per_xcc = values.len() / xccs(arch);
        let index: usize = index.parse().unwrap();
        return match (base, index) {
            ("TCC_HIT", 17) => values[per_xcc + 1] as f64,
            ("TCC_HIT", 5) => values[5] as f64,
            _ => values.iter().skip(index).step_by(per_xcc).sum::<u64>() as f64,
        };
    }
    sum(by_event(counter.strip_suffix("_sum").unwrap_or(counter)))
}

/// The ground-truth name of a counter: its own, or `BLOCK/EVENT` for the one the workload's
/// definitions give by block and event alone.
fn by_event(counter: &str) -> &str {
    match counter {
        "SQC_DCACHE_INFLIGHT_LEVEL" => "SQ/337",
        _ => counter,
    }
}

/// What rocprof-compute asks for, in files shaped like its own: its counter definitions (with
/// per-channel `NAME[i]` and `<LEVEL>_ACCUM` ones), a `pmc:` file of each generation and the
/// timing-only file.
struct Workload {
    dir: PathBuf,
}

impl Workload {
    fn new(name: &str) -> Workload {
        let dir = scratch(name);
        std::fs::create_dir_all(dir.join("defs")).unwrap();
        let definition = |name: &str, archs: &[&str], expression: &str| {
            let archs: String = archs.iter().map(|a| format!("      - {a}\n")).collect();
            format!(
                "  - name: {name}\n    description: {name} as the workload defines it\n    \
                 properties: []\n    definitions:\n    - architectures:\n{archs}      \
                 expression: {expression}\n"
            )
        };
        let defs = [
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n".to_string(),
            definition(
                "TCC_HIT[17]",
                &["gfx942", "gfx950"],
                "select(TCC_HIT,[DIMENSION_XCC=[1], DIMENSION_INSTANCE=[1]])",
            ),
            definition(
                "TCC_HIT[5]",
                &["gfx90a"],
                "select(TCC_HIT,[DIMENSION_INSTANCE=[5]])",
            ),
            definition(
                "SQ_INST_LEVEL_LDS_ACCUM",
                &["gfx90a", "gfx942", "gfx950"],
                "accumulate(SQ_INST_LEVEL_LDS, HIGH_RES)",
            ),
            // A level counter only the workload's file names (SQ event 337, no built-in name).
            "  - name: SQC_DCACHE_INFLIGHT_LEVEL\n    description: outstanding data cache \
             requests\n    properties: []\n    definitions:\n    - architectures:\n      \
             - gfx90a\n      - gfx942\n      - gfx950\n      block: SQ\n      event: 337\n"
                .to_string(),
            definition(
                "SQC_DCACHE_INFLIGHT_LEVEL_ACCUM",
                &["gfx90a", "gfx942", "gfx950"],
                "accumulate(SQC_DCACHE_INFLIGHT_LEVEL, HIGH_RES)",
            ),
        ]
        .concat();
        std::fs::write(dir.join("defs/counter_defs.yaml"), defs).unwrap();
        std::os::unix::fs::symlink(artifact("rtl-pmc"), dir.join("rocprofv3")).unwrap();
        Workload { dir }
    }

    /// Runs rocprof-compute's command line for `file` (a `pmc:` line, then its empty `gpu:`,
    /// `range:` and `kernel:` lines, or `lines` there) on the simulated `arch` in output
    /// `format`, with `filters` on the command line; returns `out/` and the ground truth.
    fn profile(
        &self,
        arch: &str,
        file: &str,
        pmc: &str,
        lines: &str,
        format: &str,
        filters: &[&str],
    ) -> (PathBuf, Vec<serde_json::Value>) {
        let out = self.dir.join("out");
        let _ = std::fs::remove_dir_all(&out);
        let input = self.dir.join(file);
        std::fs::write(&input, format!("pmc: {pmc}\n\n{lines}")).unwrap();
        let truth = self.dir.join("truth.jsonl");
        let _ = std::fs::remove_file(&truth);
        let mut counters: Vec<String> = [
            "SQ_WAVES",
            "GRBM_COUNT",
            "SQ_INST_LEVEL_LDS",
            "SQ_INST_LEVEL_LDS:HIGH_RES",
            "SQ_IFETCH_LEVEL",
            "SQ_IFETCH_LEVEL:HIGH_RES",
            "TCC_HIT",
            "TCC_MISS",
            "SQ/337",
            "SQ/337:HIGH_RES",
        ]
        .map(String::from)
        .to_vec();
        counters.dedup();
        let output = Command::new(self.dir.join("rocprofv3"))
            .current_dir(&self.dir)
            .args(["-A", "absolute", "-i"])
            .arg(&input)
            .arg("-d")
            .arg(&out)
            .args(["--kernel-trace", "--output-format", format])
            .args(filters)
            .arg("--")
            .arg(artifact("rtl-demo-app"))
            .args(["--iterations", "3"])
            .envs(sim_env(arch))
            .env("ROCPROFILER_METRICS_PATH", self.dir.join("defs"))
            .env("ROCPROFILER_INDIVIDUAL_XCC_MODE", "1")
            .env("RTL_SIM_GROUND_TRUTH", &truth)
            .env("RTL_SIM_GROUND_TRUTH_COUNTERS", counters.join(","))
            .output()
            .expect("rocprofv3 starts");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        (out, sim_support::read_ground_truth(&truth))
    }
}

/// Asserts that `rows` are the ground-truth dispatches `truth` (kernel and times), each with
/// `counters` equal to the truth.
fn assert_rows_are_truth(
    arch: &str,
    rows: &[Row],
    truth: &[&serde_json::Value],
    counters: &[&str],
) {
    assert_eq!(rows.len(), truth.len(), "{arch}: {rows:?}");
    for t in truth {
        let kernel = t["kernel"].as_str().unwrap();
        let (start, end) = (t["start"].as_u64().unwrap(), t["end"].as_u64().unwrap());
        let row = rows
            .iter()
            .find(|r| (r.0.as_str(), r.1, r.2) == (kernel, start, end))
            .unwrap_or_else(|| panic!("{arch}: no row for {t}"));
        let expected: BTreeMap<String, f64> = counters
            .iter()
            .map(|c| (c.to_string(), truth_value(arch, t, c)))
            .collect();
        assert_eq!(row.3, expected, "{arch}: {kernel} at {start}");
    }
}

#[test]
fn rocprof_compute_command_lines_read_every_counter_of_the_ground_truth() {
    let workload = Workload::new("rocprof-compute");
    let empty = "gpu:\nrange:\nkernel:\n";
    for arch in ["gfx942", "gfx90a", "gfx950"] {
        let channel = match arch {
            "gfx90a" => "TCC_HIT[5]",
            _ => "TCC_HIT[17]",
        };
        // rocprof-compute 3's files: its own definitions for per-channel and accumulated
        // counters, read from ROCPROFILER_METRICS_PATH.
        let counters = [
            "SQ_WAVES",
            "GRBM_COUNT",
            "SQ_INST_LEVEL_LDS",
            "SQ_INST_LEVEL_LDS_ACCUM",
            channel,
            "TCC_HIT_sum",
        ];
        let pmc = counters.join(" ");
        for (format, read) in [
            ("csv", csv_rows as fn(&Path) -> Vec<Row>),
            ("json", json_rows),
            ("rocpd", rocpd_rows),
        ] {
            let (out, truth) = workload.profile(arch, "pmc_perf_0.txt", &pmc, empty, format, &[]);
            assert_eq!(truth.len(), 12, "{arch} {format}");
            let all: Vec<&serde_json::Value> = truth.iter().collect();
            assert_rows_are_truth(arch, &read(&out), &all, &counters);
        }
        // rocprof v1's files: a counter on one channel, and the accumulator after a level
        // counter.
        let (out, truth) = workload.profile(
            arch,
            "SQ_IFETCH_LEVEL.txt",
            "GRBM_COUNT SQ_WAVES SQ_IFETCH_LEVEL SQ_ACCUM_PREV_HIRES TCC_MISS[2]",
            empty,
            "csv",
            &[],
        );
        let all: Vec<&serde_json::Value> = truth.iter().collect();
        assert_rows_are_truth(
            arch,
            &csv_rows(&out),
            &all,
            &[
                "GRBM_COUNT",
                "SQ_WAVES",
                "SQ_IFETCH_LEVEL",
                "SQ_IFETCH_LEVEL_ACCUM",
                "TCC_MISS[2]",
            ],
        );
        // A level counter and its accumulation that only the definitions name, by block and
        // event (on gfx90a, SQ event 337 lies beyond the events aqlprofile programs).
        if arch == "gfx90a" {
            continue;
        }
        let level = [
            "SQC_DCACHE_INFLIGHT_LEVEL",
            "SQC_DCACHE_INFLIGHT_LEVEL_ACCUM",
            "SQ_WAVES",
        ];
        let (out, truth) = workload.profile(
            arch,
            "SQC_DCACHE_INFLIGHT_LEVEL.txt",
            &level.join(" "),
            empty,
            "csv",
            &[],
        );
        let all: Vec<&serde_json::Value> = truth.iter().collect();
        assert_rows_are_truth(arch, &csv_rows(&out), &all, &level);
    }
}

#[test]
fn rocprof_compute_filters_apply_once_and_its_timing_file_times_every_dispatch() {
    let workload = Workload::new("rocprof-compute-filters");
    // `-k vadd saxpy -d 0:2`: rocprof-compute writes the filters into the file and passes them
    // on the command line; the command line's apply, once.
    let (out, truth) = workload.profile(
        "gfx942",
        "pmc_perf_1.txt",
        "SQ_WAVES TCC_HIT[17]",
        "gpu:\nrange: 0:2\nkernel: vadd,saxpy\n",
        "csv",
        &[
            "--kernel-include-regex",
            "vadd|saxpy",
            "--kernel-iteration-range",
            "[1-2]",
        ],
    );
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let selected: Vec<&serde_json::Value> = truth
        .iter()
        .filter(|t| {
            let kernel = t["kernel"].as_str().unwrap();
            let n = seen.entry(kernel).or_default();
            *n += 1;
            matches!(kernel, "vadd" | "saxpy") && *n <= 2
        })
        .collect();
    assert_eq!(selected.len(), 4);
    assert_rows_are_truth(
        "gfx942",
        &csv_rows(&out),
        &selected,
        &["SQ_WAVES", "TCC_HIT[17]"],
    );

    // The timing-only file: each process's kernel trace, no counter collection; in JSON the
    // kernel dispatches and no counter record.
    let (out, truth) = workload.profile(
        "gfx942",
        "timestamps.txt",
        "",
        "gpu:\nrange:\nkernel:\n",
        "csv",
        &[],
    );
    assert_eq!(
        process_files(&out, "_counter_collection.csv"),
        Vec::<PathBuf>::new()
    );
    let trace = sim_support::read_table(&only_process_file(&out, "_kernel_trace.csv"));
    let mut times: Vec<(String, u64, u64)> = trace
        .iter()
        .map(|r| {
            (
                r["Kernel_Name"].clone(),
                r["Start_Timestamp"].parse().unwrap(),
                r["End_Timestamp"].parse().unwrap(),
            )
        })
        .collect();
    let mut expected: Vec<(String, u64, u64)> = truth
        .iter()
        .map(|t| {
            (
                t["kernel"].as_str().unwrap().to_string(),
                t["start"].as_u64().unwrap(),
                t["end"].as_u64().unwrap(),
            )
        })
        .collect();
    times.sort();
    expected.sort();
    assert_eq!((times.len(), &times), (12, &expected));
    let (out, truth) = workload.profile(
        "gfx942",
        "timestamps.txt",
        "",
        "gpu:\nrange:\nkernel:\n",
        "json",
        &[],
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(only_process_file(&out, ".json")).unwrap())
            .unwrap();
    let tool = &doc["rocprofiler-sdk-tool"][0];
    assert_eq!(
        tool["callback_records"]["counter_collection"],
        serde_json::json!([])
    );
    assert_eq!(
        tool["buffer_records"]["kernel_dispatch"]
            .as_array()
            .unwrap()
            .len(),
        truth.len()
    );

    // rtl-pmc's own files lie where none of rocprof-compute's globs look: the plan and raw
    // records in pmc_1/, the merged results in out/.
    let (out, _) = workload.profile("gfx942", "pmc_perf_0.txt", "SQ_WAVES", "", "json", &[]);
    let files = tree(&out);
    let pid = only_process_file(&out, ".json");
    let pid = pid
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_end_matches("_results.json");
    let host = only_process_file(&out, ".json");
    let host = host
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let mut expected = [
        "pmc_1".to_string(),
        format!("pmc_1/{pid}.rtlraw"),
        "pmc_1/plan.json".to_string(),
        format!("pmc_1/{host}"),
        format!("pmc_1/{host}/{pid}_results.json"),
        "results.json".to_string(),
    ];
    expected.sort();
    assert_eq!(files, expected);
}

#[test]
fn agent_index_names_gpus_by_kfd_node_or_by_their_index_among_gpus() {
    let dir = scratch("agent-index");
    for (index, label) in [
        ("absolute", ["Agent 1", "Agent 2"]),
        ("relative", ["Agent 1", "Agent 2"]),
        ("type-relative", ["GPU 0", "GPU 1"]),
    ] {
        let out = dir.join(index);
        let truth_file = dir.join(format!("{index}.jsonl"));
        let output = Command::new(artifact("rtl-pmc"))
            .args(["-A", index, "--kernel-trace", "--pmc", "SQ_WAVES", "-d"])
            .arg(&out)
            .arg("--")
            .arg(artifact("rtl-demo-app"))
            .args(["--threads", "2", "--iterations", "1"])
            .envs(sim_env("gfx942x2"))
            .env("RTL_SIM_GROUND_TRUTH", &truth_file)
            .env("RTL_SIM_GROUND_TRUTH_COUNTERS", "SQ_WAVES")
            .output()
            .expect("rtl-pmc starts");
        assert_eq!(output.status.code(), Some(0), "{index}");
        let truth = sim_support::read_ground_truth(&truth_file);
        // The GPUs are KFD nodes 1 and 2 (node 0 is the CPU).
        let expected = |start: &str, end: &str| -> &str {
            let t = truth
                .iter()
                .find(|t| {
                    let time = |key: &str| t[key].as_u64().map(|v| v.to_string());
                    time("start").as_deref() == Some(start) && time("end").as_deref() == Some(end)
                })
                .unwrap_or_else(|| panic!("{index}: no dispatch at {start}"));
            label[t["agent"].as_u64().unwrap() as usize - 1]
        };
        let mut seen = BTreeMap::new();
        for (table, times) in [
            ("counter_collection", ["Start_Timestamp", "End_Timestamp"]),
            ("kernel_trace", ["Start_Timestamp", "End_Timestamp"]),
        ] {
            let path = sim_support::process_file(&out, &format!("pass_1/{table}.csv"));
            for row in sim_support::read_table(&path) {
                let agent = &row["Agent_Id"];
                assert_eq!(
                    agent,
                    expected(&row[times[0]], &row[times[1]]),
                    "{index} {table}"
                );
                *seen.entry(agent.clone()).or_insert(0) += 1;
            }
        }
        assert_eq!(
            seen.keys().collect::<Vec<_>>(),
            label.iter().collect::<Vec<_>>(),
            "{index}"
        );
    }
}

/// `Kernel_Id` as rocprofv3 gives it on the same runs: each kernel symbol of each executable
/// gets the next id of the process when the executable is frozen, in the loader's order of
/// code objects and symbols, so the demo's four kernels (of the 12 in its code object) are 4,
/// 5, 10 and 3, and the second GPU's executable numbers its symbols from 13. Every row of
/// `counter_collection.csv` and `kernel_trace.csv` and of `rocpd_kernel_dispatch`, one and two GPUs, one and two queues per
/// thread, each dispatch found by its GPU and ground-truth start.
#[test]
fn kernel_ids_number_loaded_kernel_symbols_as_rocprofv3_does() {
    let first_gpu = [("vadd", 4), ("saxpy", 5), ("fill", 10), ("increment", 3)];
    let second_gpu = [("vadd", 16), ("saxpy", 17), ("fill", 22), ("increment", 15)];
    for (config, app_args) in [
        ("gfx942", &[][..]),
        ("gfx942x2", &["--threads", "2", "--queues", "2"][..]),
    ] {
        let dir = scratch(&format!("kernel-ids-{config}"));
        let args = ["--pmc", "SQ_WAVES", "GRBM_COUNT", "--kernel-trace"];
        let (out, truth) = profile(&dir, config, &args, app_args, &[]);
        assert_eq!(truth.len(), if config == "gfx942" { 4 } else { 32 });
        let expected_id = |agent: u64, kernel: &str| -> String {
            let ids = if agent == 1 { first_gpu } else { second_gpu };
            let (_, id) = ids.iter().find(|(name, _)| *name == kernel).unwrap();
            id.to_string()
        };
        type ByDispatch = BTreeMap<(String, String), Vec<String>>;
        let by_dispatch = |rows: Vec<std::collections::HashMap<String, String>>| -> ByDispatch {
            let mut ids = ByDispatch::new();
            for row in rows {
                let key = (row["Agent_Id"].clone(), row["Start_Timestamp"].clone());
                ids.entry(key).or_default().push(row["Kernel_Id"].clone());
            }
            ids
        };
        for (file, rows_per_dispatch) in [("counter_collection.csv", 2), ("kernel_trace.csv", 1)] {
            let rows = sim_support::read_table(&sim_support::process_file(
                &out,
                &format!("pass_1/{file}"),
            ));
            let found = by_dispatch(rows);
            let expected: ByDispatch = truth
                .iter()
                .map(|t| {
                    let agent = t["agent"].as_u64().unwrap();
                    let id = expected_id(agent, t["kernel"].as_str().unwrap());
                    let key = (format!("Agent {agent}"), t["start"].to_string());
                    (key, vec![id; rows_per_dispatch])
                })
                .collect();
            assert_eq!(found, expected, "{config} {file}");
        }
        // The rocpd database's dispatches name the same symbols.
        let conn = rusqlite::Connection::open(out.join("results.db")).unwrap();
        let rows = query(
            &conn,
            "SELECT 'Agent ' || agent_id, start, kernel_id FROM rocpd_kernel_dispatch",
        );
        let found: ByDispatch = rows
            .into_iter()
            .map(|r| ((r[0].clone(), r[1].clone()), vec![r[2].clone()]))
            .collect();
        let expected: ByDispatch = truth
            .iter()
            .map(|t| {
                let agent = t["agent"].as_u64().unwrap();
                let id = expected_id(agent, t["kernel"].as_str().unwrap());
                ((format!("Agent {agent}"), t["start"].to_string()), vec![id])
            })
            .collect();
        assert_eq!(found, expected, "{config} rocpd_kernel_dispatch");
    }
}
