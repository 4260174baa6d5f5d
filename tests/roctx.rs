//! roctx end to end: `sim/c-app/app.c`, linked against a do-nothing stand-in of ROCm's
//! `libroctx64.so.4` (or of rocprofiler-sdk's roctx library) as an installed ROCm provides it,
//! runs under `rtl-pmc` on the simulated GPU. Every range, mark, pause and resume the program
//! makes (its comment lists them) is in the database, the JSON and the trace, each dispatch
//! knows its enclosing ranges, and `--selected-regions`, `--roctx-include-regex` and
//! `--kernel-rename` select and name exactly the dispatches the simulator's ground truth has
//! inside those regions.

mod sim_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use sim_support::{
    artifact, c_app, c_app_linked, fixture, roctx_stand_in, total, Profile, RoctxLibrary,
};

/// A region as (kind, name, depth, the enclosing range's name, problem).
type RegionBrief = (String, Option<String>, i64, Option<String>, Option<String>);

impl Profile {
    fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.out.join("results.db")).unwrap()
    }

    /// `results.csv` rows as (kernel, SQ_WAVES or the counter column asked, begin, end).
    fn results(&self, counter: &str) -> Vec<(String, u64, u64, u64)> {
        let rows = sim_support::read_table(&self.out.join("results.csv"));
        rows.iter()
            .map(|r| {
                (
                    r["KernelName"].clone(),
                    r[counter].parse().unwrap(),
                    r["BeginNs"].parse().unwrap(),
                    r["EndNs"].parse().unwrap(),
                )
            })
            .collect()
    }

    /// The regions as (kind, name, depth, parent's name, problem), by begin time.
    fn regions(&self) -> Vec<RegionBrief> {
        let db = self.db();
        let mut stmt = db
            .prepare(
                "SELECT r.kind, r.name, r.depth, p.name, r.problem FROM rtl_region r
                 LEFT JOIN rtl_region p ON p.id = r.parent_id ORDER BY r.start_ns, r.id",
            )
            .unwrap();
        stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    }

    /// The begin and end of the range named `name`.
    fn range(&self, name: &str) -> (u64, u64) {
        self.db()
            .query_row(
                "SELECT start_ns, end_ns FROM rtl_region WHERE name = ?1",
                [name],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .unwrap()
    }

    /// The ground-truth dispatches of the first process, in order.
    fn first_truth(&self) -> Vec<&serde_json::Value> {
        let pid = &self.truth[0]["pid"];
        self.truth.iter().filter(|t| &t["pid"] == pid).collect()
    }
}

/// Runs `rtl-pmc --sim gfx942 -d <scratch> FLAGS -- APP kernels-gfx942.co ARGS` with the
/// ground truth on and `library_path` as rtl-pmc's own `LD_LIBRARY_PATH` (none: unset).
fn profile(
    name: &str,
    flags: &[&str],
    app: &Path,
    args: &[&str],
    library_path: Option<&Path>,
) -> Profile {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("roctx-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out");
    let truth = dir.join("truth.jsonl");
    let mut command = Command::new(artifact("rtl-pmc"));
    command
        .args(["--sim", "gfx942", "-d"])
        .arg(&out)
        .args(flags)
        .arg("--")
        .arg(app)
        .arg(fixture("gfx942"))
        .args(args)
        .current_dir(&dir)
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", "SQ_WAVES,GRBM_COUNT");
    match library_path {
        Some(path) => command.env("LD_LIBRARY_PATH", path),
        None => command.env_remove("LD_LIBRARY_PATH"),
    };
    let output = command.output().expect("rtl-pmc starts");
    let truth = sim_support::read_ground_truth(&truth);
    Profile { output, out, truth }
}

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

/// The regions of `app.c` run for `iterations` without misuse, as its comment lists them.
fn expected_regions(iterations: usize) -> Vec<RegionBrief> {
    let row = |kind: &str, name: Option<String>, depth, parent: Option<String>| {
        (kind.to_string(), name, depth, parent, None)
    };
    let mut rows = vec![
        row("name_thread", some("c-app main"), -1, None),
        row("mark", some("start"), -1, None),
        row("process_range", some("all iterations"), -1, None),
    ];
    for i in 0..iterations {
        let iteration = format!("iteration {i}");
        rows.push(row("range", some(&iteration), 0, None));
        if i % 2 == 1 {
            rows.push(row("resume", None, -1, some(&iteration)));
        }
        rows.push(row(
            "range",
            Some(format!("vadd {i} on gfx942")),
            1,
            some(&iteration),
        ));
        if i % 2 == 1 {
            rows.push(row("pause", None, -1, some(&iteration)));
        }
    }
    rows.push(row("mark", some("end"), -1, None));
    rows
}

#[test]
fn selected_regions_collect_exactly_the_resumed_dispatches_and_every_region_is_recorded() {
    let p = profile(
        "selected",
        &[
            "--pmc",
            "SQ_WAVES",
            "GRBM_COUNT",
            "--selected-regions",
            "-f",
            "csv",
            "json",
            "rocpd",
            "pftrace",
        ],
        &c_app(),
        &["4"],
        Some(&roctx_stand_in(RoctxLibrary::Rocm)),
    );
    p.assert_success();
    assert_eq!(
        String::from_utf8_lossy(&p.output.stdout),
        "c-app: vadd of 1000 elements verified on gfx942\n".repeat(4),
        "the application behaves as without the profiler"
    );
    let truth = p.first_truth();
    assert_eq!(truth.len(), 4, "the simulator ran every dispatch");

    // Only iterations 1 and 3 ran resumed: exactly their dispatches, with their true values.
    let expected: Vec<(String, u64, u64, u64)> = [truth[1], truth[3]]
        .iter()
        .map(|t| {
            (
                "vadd".to_string(),
                total(t, "SQ_WAVES"),
                t["start"].as_u64().unwrap(),
                t["end"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(p.results("SQ_WAVES"), expected);
    let grbm: Vec<u64> = p.results("GRBM_COUNT").iter().map(|r| r.1).collect();
    assert_eq!(
        grbm,
        [total(truth[1], "GRBM_COUNT"), total(truth[3], "GRBM_COUNT")]
    );

    // Every region, nested as the program nests them.
    assert_eq!(p.regions(), expected_regions(4));

    // On the dispatch clock: each iteration's range holds its vadd range, which holds the
    // kernel's execution as the GPU timed it, whether it was collected or not.
    let (all_start, all_end) = p.range("all iterations");
    for (i, t) in truth.iter().enumerate() {
        let (start, end) = p.range(&format!("vadd {i} on gfx942"));
        let (outer_start, outer_end) = p.range(&format!("iteration {i}"));
        let (kernel_start, kernel_end) = (t["start"].as_u64().unwrap(), t["end"].as_u64().unwrap());
        assert!(
            all_start <= outer_start && outer_start <= start && start <= kernel_start,
            "iteration {i}: {all_start} {outer_start} {start} {kernel_start}"
        );
        assert!(
            kernel_end <= end && end <= outer_end && outer_end <= all_end,
            "iteration {i}: {kernel_end} {end} {outer_end} {all_end}"
        );
    }

    // Each collected dispatch knows its enclosing ranges; its row links to the innermost.
    let db = p.db();
    let mut stmt = db
        .prepare(
            "SELECT d.start_ns, group_concat(r.name, ' > ') FROM rtl_dispatch_range x
             JOIN rtl_dispatch d ON d.pass = x.pass AND d.pid = x.pid
               AND d.dispatch_id = x.dispatch_id
             JOIN rtl_region r ON r.id = x.region_id GROUP BY d.id ORDER BY d.start_ns",
        )
        .unwrap();
    let stacks: Vec<(i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        stacks,
        [
            (
                truth[1]["start"].as_i64().unwrap(),
                "iteration 1 > vadd 1 on gfx942".to_string()
            ),
            (
                truth[3]["start"].as_i64().unwrap(),
                "iteration 3 > vadd 3 on gfx942".to_string()
            ),
        ]
    );
    let innermost: Vec<String> = db
        .prepare(
            "SELECT r.name FROM rtl_dispatch_region x JOIN rtl_dispatch d
               ON d.id = x.dispatch_row_id JOIN rtl_region r ON r.id = x.region_id
             ORDER BY d.start_ns",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(innermost, ["vadd 1 on gfx942", "vadd 3 on gfx942"]);

    // The JSON holds the same regions and stacks.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.out.join("results.json")).unwrap())
            .unwrap();
    let roctx = &json["rocprofiler-sdk-tool"][0]["rtl-pmc-roctx"];
    let names: Vec<Option<String>> = roctx["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().map(str::to_string))
        .collect();
    let expected_names: Vec<Option<String>> =
        expected_regions(4).into_iter().map(|r| r.1).collect();
    assert_eq!(names, expected_names);
    let id_of = |name: &str| {
        roctx["regions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()["id"]
            .clone()
    };
    let stacks: Vec<serde_json::Value> = roctx["dispatch_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["ranges"].clone())
        .collect();
    assert_eq!(
        stacks,
        [
            serde_json::json!([id_of("iteration 1"), id_of("vadd 1 on gfx942")]),
            serde_json::json!([id_of("iteration 3"), id_of("vadd 3 on gfx942")]),
        ]
    );

    // The trace has a track for the process, its named thread and the start/stop range, and a
    // slice or instant for each region.
    let trace = std::fs::read(p.out.join("results.pftrace")).unwrap();
    let pid = truth[0]["pid"].as_u64().unwrap();
    for text in [
        format!("roctx, process {pid}"),
        format!("thread {pid} (c-app main)"),
        "range all iterations".to_string(),
        "iteration 3".to_string(),
        "vadd 2 on gfx942".to_string(),
        "roctxProfilerResume".to_string(),
        "roctxProfilerPause".to_string(),
        "start".to_string(),
    ] {
        assert!(
            trace.windows(text.len()).any(|w| w == text.as_bytes()),
            "{text} in the trace"
        );
    }

    let stderr = p.stderr();
    assert!(
        stderr.lines().any(|l| l
            == "rtl-pmc: roctx (pass 1): 9 ranges, 2 marks, 4 pauses and resumes in 1 process"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning: roctx"), "{stderr}");
}

#[test]
fn kernel_rename_and_range_regex_name_and_select_exactly_in_every_output() {
    let p = profile(
        "rename",
        &[
            "--pmc",
            "SQ_WAVES",
            "--pmc",
            "GRBM_COUNT",
            "--kernel-rename",
            "--roctx-include-regex",
            "^iteration [02]$",
            "--stats",
            "-f",
            "csv",
            "json",
            "rocpd",
        ],
        &c_app(),
        &["4"],
        Some(&roctx_stand_in(RoctxLibrary::Rocm)),
    );
    p.assert_success();
    let first = p.first_truth();
    assert_eq!(first.len(), 4);
    // Two passes, joined by the renamed kernels.
    let sq: Vec<(String, u64)> = p
        .results("SQ_WAVES")
        .into_iter()
        .map(|r| (r.0, r.1))
        .collect();
    assert_eq!(
        sq,
        [
            ("vadd 0 on gfx942".to_string(), total(first[0], "SQ_WAVES")),
            ("vadd 2 on gfx942".to_string(), total(first[2], "SQ_WAVES")),
        ]
    );
    let grbm: Vec<u64> = p.results("GRBM_COUNT").iter().map(|r| r.1).collect();
    assert_eq!(
        grbm,
        [total(first[0], "GRBM_COUNT"), total(first[2], "GRBM_COUNT")]
    );
    let begins: Vec<u64> = p.results("SQ_WAVES").iter().map(|r| r.2).collect();
    assert_eq!(
        begins,
        [
            first[0]["start"].as_u64().unwrap(),
            first[2]["start"].as_u64().unwrap()
        ]
    );
    for pass in ["pass_1", "pass_2"] {
        let rows = sim_support::read_table(&sim_support::process_file(
            &p.out,
            &format!("{pass}/counter_collection.csv"),
        ));
        let names: Vec<&str> = rows.iter().map(|r| r["Kernel_Name"].as_str()).collect();
        assert_eq!(names, ["vadd 0 on gfx942", "vadd 2 on gfx942"], "{pass}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.out.join("results.json")).unwrap())
            .unwrap();
    let kernels: Vec<&str> = json["rocprofiler-sdk-tool"][0]["callback_records"]
        ["counter_collection"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rtl-pmc"]["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(kernels, ["vadd 0 on gfx942", "vadd 2 on gfx942"]);
    let top: Vec<String> = p
        .db()
        .prepare("SELECT kernel FROM rtl_top ORDER BY kernel")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(top, ["vadd 0 on gfx942", "vadd 2 on gfx942"]);
    // rocpd: each dispatch's region is its innermost range, and the ranges and marks of the
    // first pass's process are rocpd regions, each range holding its kernel.
    let db = p.db();
    let rows = |sql: &str| -> Vec<(String, String, i64, i64)> {
        db.prepare(sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let kernels = rows("SELECT name, region, start, end FROM kernels ORDER BY start");
    assert_eq!(kernels.len(), 2);
    for (name, region, start, end) in &kernels {
        assert_eq!(name, region);
        let holding = rows(&format!(
            "SELECT name, category, start, end FROM regions WHERE name = '{name}'"
        ));
        assert_eq!(holding.len(), 1, "{name}: {holding:?}");
        assert_eq!(holding[0].1, "MARKER_CORE_RANGE_API");
        assert!(
            holding[0].2 <= *start && *end <= holding[0].3,
            "{holding:?}"
        );
    }
    let regions = rows("SELECT name, category, start, end FROM regions ORDER BY start, id");
    let expected = rows(
        "SELECT coalesce(name, ''), CASE kind WHEN 'mark' THEN 'MARKER_CORE_API'
                ELSE 'MARKER_CORE_RANGE_API' END, start_ns, end_ns
         FROM rtl_region WHERE kind IN ('range', 'process_range', 'mark')
           AND pid = (SELECT pid FROM processes) ORDER BY start_ns, id",
    );
    assert!(regions.len() >= 8, "{regions:?}");
    assert_eq!(regions, expected);
    let stats = sim_support::read_table(&p.out.join("results_kernel_stats.csv"));
    let mut names: Vec<&str> = stats.iter().map(|r| r["Name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["vadd 0 on gfx942", "vadd 2 on gfx942"]);
    assert!(p.stderr().contains("  vadd 0 on gfx942 "), "{}", p.stderr());

    // The same from rocprofv3 job keys.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("roctx-input-files");
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("input.yaml");
    std::fs::write(
        &input,
        "jobs:\n  - pmc: [SQ_WAVES]\n    kernel_rename: true\n    roctx_include_regex: \"^iteration [02]$\"\n",
    )
    .unwrap();
    let from_file = profile(
        "rename-input",
        &["-i", input.to_str().unwrap()],
        &c_app(),
        &["4"],
        Some(&roctx_stand_in(RoctxLibrary::Rocm)),
    );
    from_file.assert_success();
    let kernels: Vec<String> = from_file
        .results("SQ_WAVES")
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(kernels, ["vadd 0 on gfx942", "vadd 2 on gfx942"]);

    let input = dir.join("selected.yaml");
    std::fs::write(
        &input,
        "jobs:\n  - pmc: [SQ_WAVES]\n    selected_regions: true\n",
    )
    .unwrap();
    let selected = profile(
        "selected-input",
        &["-i", input.to_str().unwrap()],
        &c_app(),
        &["4"],
        Some(&roctx_stand_in(RoctxLibrary::Rocm)),
    );
    selected.assert_success();
    let truth = selected.first_truth();
    let begins: Vec<u64> = selected.results("SQ_WAVES").iter().map(|r| r.2).collect();
    assert_eq!(
        begins,
        [
            truth[1]["start"].as_u64().unwrap(),
            truth[3]["start"].as_u64().unwrap()
        ]
    );
}

#[test]
fn misuse_is_recorded_reported_and_harmless() {
    let p = profile(
        "misuse",
        &["--pmc", "SQ_WAVES", "--kernel-rename"],
        &c_app(),
        &["1", "misuse"],
        Some(&roctx_stand_in(RoctxLibrary::Rocm)),
    );
    p.assert_success();
    assert_eq!(
        String::from_utf8_lossy(&p.output.stdout),
        "c-app: vadd of 1000 elements verified on gfx942\n".repeat(2)
    );
    let mut expected = expected_regions(1);
    let problem = |kind: &str, name: Option<String>, depth, problem: &str| {
        (kind.to_string(), name, depth, None, some(problem))
    };
    expected.extend([
        problem("pop", None, -1, "roctxRangePop with no range open"),
        problem(
            "stop",
            None,
            -1,
            "roctxRangeStop of an id no open range has",
        ),
        problem("range", some("bad \u{fffd} name"), 0, "name not UTF-8"),
        problem("range", some("left open"), 0, "open at exit"),
    ]);
    assert_eq!(p.regions(), expected);
    let unknown: i64 = p
        .db()
        .query_row(
            "SELECT roctx_id FROM rtl_region WHERE kind = 'stop'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let all: i64 = p
        .db()
        .query_row(
            "SELECT roctx_id FROM rtl_region WHERE name = 'all iterations'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(unknown, all + 1000, "the id the application gave");
    let truth = p.first_truth();
    let kernels: Vec<(String, u64)> = p
        .results("SQ_WAVES")
        .into_iter()
        .map(|r| (r.0, r.2))
        .collect();
    assert_eq!(
        kernels,
        [
            (
                "vadd 0 on gfx942".to_string(),
                truth[0]["start"].as_u64().unwrap()
            ),
            (
                "bad \u{fffd} name".to_string(),
                truth[1]["start"].as_u64().unwrap()
            ),
        ]
    );
    let (_, open_end) = p.range("left open");
    assert!(open_end >= truth[1]["end"].as_u64().unwrap());
    let stderr = p.stderr();
    let roctx: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("rtl-pmc: roctx") || l.starts_with("rtl-pmc: warning: roctx"))
        .collect();
    assert_eq!(
        roctx,
        [
            "rtl-pmc: roctx (pass 1): 5 ranges, 2 marks, 0 pauses and resumes in 1 process",
            "rtl-pmc: warning: roctx: 1 roctxRangePop with no range open (ignored)",
            "rtl-pmc: warning: roctx: 1 roctxRangeStop of an id no open range has (ignored)",
            "rtl-pmc: warning: roctx: 1 range still open when the process ended (ended there): \"left open\"",
            "rtl-pmc: warning: roctx: 1 name that is not UTF-8 (invalid bytes shown as U+FFFD): \"bad \u{fffd} name\"",
        ]
    );
}

#[test]
fn captured_with_rocm_or_sdk_roctx_installed_in_front_or_absent() {
    let line = "rtl-pmc: roctx (pass 1): 5 ranges, 2 marks, 2 pauses and resumes in 1 process";
    let cases: [(&str, RoctxLibrary, bool, Option<PathBuf>); 5] = [
        ("rocm-absent", RoctxLibrary::Rocm, false, None),
        (
            "rocm-path",
            RoctxLibrary::Rocm,
            false,
            Some(roctx_stand_in(RoctxLibrary::Rocm)),
        ),
        ("rocm-rpath", RoctxLibrary::Rocm, true, None),
        ("sdk-absent", RoctxLibrary::Sdk, false, None),
        ("sdk-rpath", RoctxLibrary::Sdk, true, None),
    ];
    for (name, which, rpath, library_path) in cases {
        let app = c_app_linked(which, rpath);
        let p = profile(
            name,
            &["--pmc", "SQ_WAVES"],
            &app,
            &["2"],
            library_path.as_deref(),
        );
        p.assert_success();
        let stderr = p.stderr();
        assert!(stderr.lines().any(|l| l == line), "{name}: {stderr}");
        assert!(!stderr.contains("version information"), "{name}: {stderr}");
        assert_eq!(p.regions(), expected_regions(2), "{name}");
        let kernels = p.results("SQ_WAVES").len();
        assert_eq!(kernels, 2, "{name}: without a selection every dispatch");
    }
    // Without rtl-pmc, the application needs an installed roctx library to start at all.
    let out = Command::new(c_app())
        .arg(fixture("gfx942"))
        .envs(sim_support::sim_env("gfx942"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("libroctx64.so.4: cannot open shared object file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `rtl-pmc --sim gfx942 --pmc SQ_WAVES FLAGS -- rtl-demo-app --roctx ARGS` with no roctx
/// library installed.
fn demo_profile(name: &str, flags: &[&str], args: &[&str]) -> Profile {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("roctx-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let truth_file = dir.join("truth.jsonl");
    let output = Command::new(artifact("rtl-pmc"))
        .args(["--sim", "gfx942", "--pmc", "SQ_WAVES", "-d"])
        .arg(dir.join("out"))
        .args(flags)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .arg("--roctx")
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env("RTL_SIM_GROUND_TRUTH", &truth_file)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", "SQ_WAVES")
        .output()
        .unwrap();
    let p = Profile {
        output,
        out: dir.join("out"),
        truth: sim_support::read_ground_truth(&truth_file),
    };
    p.assert_success();
    p
}

/// The ground truth as `results.csv` rows named `KERNEL in iteration I`: each queue's dispatches
/// are its thread's, four per iteration; by start time.
fn renamed_truth(p: &Profile, iterations: std::ops::Range<usize>) -> Vec<(String, u64, u64, u64)> {
    let mut queues: Vec<u64> = p
        .truth
        .iter()
        .map(|t| t["queue"].as_u64().unwrap())
        .collect();
    queues.sort_unstable();
    queues.dedup();
    let mut expected = Vec::new();
    for queue in queues {
        let on_queue = p
            .truth
            .iter()
            .filter(|t| t["queue"].as_u64() == Some(queue));
        for (n, t) in on_queue
            .enumerate()
            .filter(|(n, _)| iterations.contains(&(n / 4)))
        {
            expected.push((
                format!("{} in iteration {}", t["kernel"].as_str().unwrap(), n / 4),
                total(t, "SQ_WAVES"),
                t["start"].as_u64().unwrap(),
                t["end"].as_u64().unwrap(),
            ));
        }
    }
    expected.sort_by_key(|e| e.2);
    expected
}

#[test]
fn demo_app_opening_roctx_at_run_time_is_captured_per_thread() {
    // Two threads, each with its own queue: every dispatch renamed after its own thread's range.
    let p = demo_profile(
        "demo",
        &["--kernel-rename"],
        &["--iterations", "2", "--threads", "2"],
    );
    assert_eq!(p.truth.len(), 16);
    assert_eq!(p.results("SQ_WAVES"), renamed_truth(&p, 0..2));
    let names: Vec<String> = p
        .db()
        .prepare("SELECT name FROM rtl_region WHERE kind = 'name_thread' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(names, ["worker 0", "worker 1"]);
    let stderr = p.stderr();
    assert!(
        stderr.lines().any(|l| l
            == "rtl-pmc: roctx (pass 1): 20 ranges, 2 marks, 0 pauses and resumes in 1 process"),
        "{stderr}"
    );

    // Selected by the iteration's range (one queue, so the values are exact).
    let p = demo_profile(
        "demo-selected",
        &["--kernel-rename", "--roctx-include-regex", "^iteration 1$"],
        &["--iterations", "3"],
    );
    assert_eq!(p.truth.len(), 12);
    assert_eq!(p.results("SQ_WAVES"), renamed_truth(&p, 1..2));
}

#[test]
fn merge_keeps_every_rank_s_regions_and_links() {
    let ranks: Vec<Profile> = (0..2)
        .map(|rank| {
            let p = profile(
                &format!("merge-{rank}"),
                &["--pmc", "SQ_WAVES"],
                &c_app(),
                &["2"],
                Some(&roctx_stand_in(RoctxLibrary::Rocm)),
            );
            p.assert_success();
            p
        })
        .collect();
    let all = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("roctx-merge-all");
    let _ = std::fs::remove_dir_all(&all);
    let out = Command::new(artifact("rtl-pmc"))
        .args(["merge", "-d"])
        .arg(&all)
        .arg(&ranks[0].out)
        .arg(&ranks[1].out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.lines().any(|l| l
            == "rtl-pmc: roctx (pass 1): 10 ranges, 4 marks, 4 pauses and resumes in 2 processes"),
        "{stderr}"
    );
    let merged = Profile {
        output: out,
        out: all,
        truth: Vec::new(),
    };
    let db = merged.db();
    for rank in &ranks {
        let pid = rank.first_truth()[0]["pid"].as_i64().unwrap();
        let names: Vec<Option<String>> = db
            .prepare("SELECT name FROM rtl_region WHERE pid = ?1 ORDER BY start_ns, id")
            .unwrap()
            .query_map([pid], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let expected: Vec<Option<String>> = expected_regions(2).into_iter().map(|r| r.1).collect();
        assert_eq!(names, expected, "rank of pid {pid}");
        let innermost: Vec<String> = db
            .prepare(
                "SELECT r.name FROM rtl_dispatch_region x JOIN rtl_dispatch d
                   ON d.id = x.dispatch_row_id JOIN rtl_region r ON r.id = x.region_id
                 WHERE d.pid = ?1 AND r.pid = ?1 ORDER BY d.start_ns",
            )
            .unwrap()
            .query_map([pid], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            innermost,
            ["vadd 0 on gfx942", "vadd 1 on gfx942"],
            "pid {pid}"
        );
    }
}

/// `app.c graph`: each vadd a graph of four kernels behind barrier-AND/OR packets, one doorbell
/// each. Every kernel is counted with its own values (all of them, then those of one roctx
/// range), and the program's checks of its data and of the graph's order pass.
#[test]
fn the_c_programs_graphs_are_counted_kernel_by_kernel() {
    for (name, filter) in [("c-graph", None), ("c-graph-roctx", Some("^vadd 1 on"))] {
        let mut flags = vec!["--pmc", "SQ_WAVES", "GRBM_COUNT"];
        if let Some(regex) = filter {
            flags.extend(["--roctx-include-regex", regex]);
        }
        let p = profile(
            name,
            &flags,
            &c_app(),
            &["2", "graph"],
            Some(&roctx_stand_in(RoctxLibrary::Rocm)),
        );
        p.assert_success();
        assert_eq!(
            String::from_utf8_lossy(&p.output.stdout),
            "c-app: vadd of 1000 elements verified on gfx942\n".repeat(2),
        );
        let truth = p.first_truth();
        assert_eq!(truth.len(), 8, "two graphs of four kernels");
        let selected: Vec<&serde_json::Value> = match filter {
            Some(_) => truth[4..].to_vec(),
            None => truth.clone(),
        };
        let waves = p.results("SQ_WAVES");
        let count = p.results("GRBM_COUNT");
        assert_eq!(waves.len(), selected.len(), "{name}");
        for ((w, c), t) in waves.iter().zip(&count).zip(&selected) {
            let times = (t["start"].as_u64().unwrap(), t["end"].as_u64().unwrap());
            assert_eq!(
                (w.0.as_str(), w.1, c.1, w.2, w.3),
                (
                    "vadd",
                    total(t, "SQ_WAVES"),
                    total(t, "GRBM_COUNT"),
                    times.0,
                    times.1
                ),
                "{name}"
            );
        }
    }
}
