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
    let truth_file = dir.join("truth.jsonl");
    let out = Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .args(["--arch", "gfx942", "-d", "out"])
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(["--iterations", "2"])
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", &truth_file)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", truth.join(","))
        .output()
        .expect("rtl-pmc starts");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir.join("out"), sim_support::read_ground_truth(&truth_file))
}

/// The rows of `query` as strings (NULL as "NULL"), one vector per row.
fn query(conn: &rusqlite::Connection, sql: &str) -> Vec<Vec<String>> {
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let columns = stmt.column_count();
    stmt.query_map([], |r| {
        (0..columns)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Blob(_) => "BLOB".to_string(),
                })
            })
            .collect()
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
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
