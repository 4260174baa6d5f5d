//! Joining passes, end to end: on two simulated GPUs, an application that forks and dispatches
//! from two threads with two queues per GPU is profiled in two and three passes. The test works
//! out the match itself from each pass's raw records (process rank, GPU, queue by creation
//! order, kernel, grid, workgroup, occurrence on the queue) and checks that `results.db` joined
//! exactly those dispatches, that every value of `results.csv` is the ground truth of the pass
//! that collected it, and that dispatches without a partner are absent and reported once.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rtl_pmc::dispatch::records::{read, Record};
use sim_support::{artifact, sim_env};

/// What must agree between passes: process rank, GPU, queue order, kernel, grid, workgroup and
/// occurrence of the kernel on the queue.
type Key = (usize, u32, u32, String, [u32; 3], [u32; 3], u64);

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-join-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The application's arguments in every test.
const APP: [&str; 6] = ["--threads", "2", "--queues", "2", "--iterations", "2"];

/// The environment of two simulated gfx942, prepared once: preparing it rewrites the simulated
/// topology, which another test's rtl-pmc may be reading.
fn two_gpus() -> &'static [(String, String)] {
    static ENV: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    ENV.get_or_init(|| sim_env("gfx942x2"))
}

/// Runs `rtl-pmc -d out ARGS -- rtl-demo-app APP` on two simulated gfx942 (what `--sim
/// gfx942x2` runs on) with ground truth for `counters`.
fn profile(
    dir: &Path,
    args: &[&str],
    app: &[&str],
    counters: &[&str],
) -> (Output, Vec<serde_json::Value>) {
    let truth = dir.join("truth.jsonl");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .args(["-d", "out"])
        .envs(two_gpus().iter().cloned())
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(APP)
        .args(app)
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", counters.join(","))
        .output()
        .expect("rtl-pmc starts");
    let truth = sim_support::read_ground_truth(&truth);
    (output, truth)
}

/// The raw records of pass `pass`, by match key.
fn pass_records(out: &Path, pass: u32) -> BTreeMap<Key, Record> {
    let dir = out.join(format!("pass_{pass}"));
    let mut records: Vec<Record> = std::fs::read_dir(&dir)
        .expect("pass directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rtlraw"))
        .flat_map(|p| {
            read(&p)
                .map(|r| r.expect("record reads"))
                .collect::<Vec<_>>()
        })
        .collect();
    let pids: BTreeSet<u32> = records.iter().map(|r| r.pid).collect();
    let rank = |pid: u32| pids.iter().position(|&p| p == pid).unwrap() + 1;
    records.sort_by_key(|r| (r.pid, r.dispatch));
    let mut launches: HashMap<(u32, u32, u32, String), u64> = HashMap::new();
    let mut keyed = BTreeMap::new();
    for r in records {
        assert_ne!(r.queue_order, 0, "{r:?}");
        let n = launches
            .entry((r.pid, r.agent, r.queue_order, r.kernel.clone()))
            .or_default();
        *n += 1;
        let key = (
            rank(r.pid),
            r.agent,
            r.queue_order,
            r.kernel.clone(),
            r.grid,
            r.workgroup,
            *n,
        );
        assert!(keyed.insert(key, r).is_none());
    }
    keyed
}

/// The ground-truth total of `counter` for the dispatch of `r`.
fn truth_of(truth: &[serde_json::Value], r: &Record, counter: &str) -> u64 {
    let line = truth
        .iter()
        .find(|t| {
            t["pid"] == r.pid && t["agent"] == r.agent && t["start"] == r.start && t["end"] == r.end
        })
        .unwrap_or_else(|| panic!("no ground truth for {r:?}"));
    line["counters"][counter]
        .as_array()
        .unwrap_or_else(|| panic!("no {counter} in {line}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// Profiles with one counter per pass (the application given `app` arguments beyond [`APP`])
/// and checks the join and every value; returns how many dispatches were merged and how many of
/// them miss a pass.
fn joined_exactly(name: &str, counters: &[&str], app: &[&str], code: i32) -> (usize, usize) {
    let dir = scratch(name);
    let mut args: Vec<&str> = vec!["--continue-on-error"];
    for c in counters {
        args.extend(["--pmc", c]);
    }
    let (output, truth) = profile(&dir, &args, app, counters);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    let out = dir.join("out");
    let passes: Vec<BTreeMap<Key, Record>> = (1..=counters.len() as u32)
        .map(|p| pass_records(&out, p))
        .collect();
    for pass in passes.iter().filter(|_| app == ["--fork"]) {
        // Both processes, both GPUs, four queues of each GPU in each process.
        let lanes: BTreeSet<(usize, u32, u32)> = pass.keys().map(|k| (k.0, k.1, k.2)).collect();
        assert_eq!(lanes.len(), 2 * 2 * 4, "{lanes:?}");
    }
    let all: BTreeSet<&Key> = passes.iter().flat_map(|p| p.keys()).collect();
    let incomplete: Vec<&&Key> = all
        .iter()
        .filter(|k| passes.iter().any(|p| !p.contains_key(**k)))
        .collect();

    // results.csv: one row per key, each counter from its own pass's dispatch, or None.
    let text = std::fs::read_to_string(out.join("results.csv")).expect("results.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), all.len());
    let mut seen = BTreeSet::new();
    for row in &rows {
        let field = |name: &str| row[at(name)].parse::<u64>().unwrap();
        // The row's own properties are those of the first pass that has its key.
        let (key, _) = passes
            .iter()
            .flat_map(|p| p.iter())
            .find(|(_, r)| {
                u64::from(r.pid) == field("pid")
                    && u64::from(r.agent) == field("gpu-id")
                    && r.start == field("BeginNs")
                    && r.end == field("EndNs")
            })
            .unwrap_or_else(|| panic!("row {row:?} is no dispatch"));
        assert!(seen.insert(key.clone()), "{key:?} twice");
        assert_eq!(row[1].trim_matches('"'), key.3);
        for (pass, counter) in passes.iter().zip(counters) {
            let value = row[at(counter)];
            match pass.get(key) {
                Some(r) => assert_eq!(value, truth_of(&truth, r, counter).to_string(), "{key:?}"),
                None => assert_eq!(value, "None", "{key:?}"),
            }
        }
    }

    // results.db: the dispatches joined are those of one key, on one GPU and queue.
    let conn = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT merged_id, count(*), count(DISTINCT agent), count(DISTINCT queue_order),
                    count(DISTINCT kernel_id), count(DISTINCT process_order),
                    count(DISTINCT occurrence), count(DISTINCT pass)
             FROM rtl_dispatch GROUP BY merged_id",
        )
        .unwrap();
    let groups: Vec<[i64; 8]> = stmt
        .query_map([], |r| {
            let mut v = [0i64; 8];
            for (i, x) in v.iter_mut().enumerate() {
                *x = r.get(i)?;
            }
            Ok(v)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(groups.len(), all.len());
    for g in &groups {
        assert_eq!(&g[2..7], &[1, 1, 1, 1, 1], "merged dispatch {}", g[0]);
        assert_eq!(g[1], g[7], "merged dispatch {} has a pass twice", g[0]);
    }
    let full = groups
        .iter()
        .filter(|g| g[1] == counters.len() as i64)
        .count();
    assert_eq!(full, all.len() - incomplete.len());

    // One warning when something is missing, with the counts; none otherwise.
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("rtl-pmc: warning:") && l.contains(" matched "))
        .collect();
    if incomplete.is_empty() {
        assert!(warnings.is_empty(), "{stderr}");
    } else {
        let per_pass: Vec<String> = passes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let alone = p.keys().filter(|k| incomplete.contains(&k)).count();
                format!("pass {}: {alone} of {}", i + 1, p.len())
            })
            .collect();
        assert_eq!(
            warnings,
            [format!(
                "rtl-pmc: warning: {} of {} dispatches were not matched in every pass ({}); their counters from the passes that miss them are empty (None). Likely cause: the application spreads its work over threads, queues or GPUs differently from run to run (--pass-match gpu matches on any queue of the GPU, --pass-match process on any GPU)",
                incomplete.len(),
                all.len(),
                per_pass.join(", ")
            )]
        );
    }
    assert_idle_gaps(&stderr, &passes);
    (all.len(), incomplete.len())
}

/// Asserts that each GPU's summary line is followed by the histogram of the idle gaps between
/// its dispatches, each pass's timeline on its own: the time from the latest end so far to the
/// next start, when positive.
fn assert_idle_gaps(stderr: &str, passes: &[BTreeMap<Key, Record>]) {
    // The buckets, in microseconds: under 10, 10-20, 20-50, 50-100, 100-1000,
    // 1-10 ms, 10-100 ms, longer.
    let bounds = [10, 20, 50, 100, 1_000, 10_000, 100_000].map(|us: u64| us * 1000);
    let mut counts: BTreeMap<u32, [u64; 8]> = BTreeMap::new();
    for pass in passes {
        let mut by_gpu: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        for r in pass.values() {
            by_gpu.entry(r.agent).or_default().push((r.start, r.end));
        }
        for (gpu, mut times) in by_gpu {
            times.sort();
            let buckets = counts.entry(gpu).or_default();
            let mut last_end = times[0].1;
            for &(start, end) in &times[1..] {
                if start > last_end {
                    let gap = start - last_end;
                    buckets[bounds.iter().position(|&b| gap < b).unwrap_or(7)] += 1;
                }
                last_end = last_end.max(end);
            }
        }
    }
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(counts.len(), 2);
    for (gpu, buckets) in counts {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("rtl-pmc: GPU {gpu} (gfx942): busy ")))
            .unwrap_or_else(|| panic!("no line for GPU {gpu}\n{stderr}"));
        let total: u64 = buckets.iter().sum();
        assert_eq!(
            lines[at + 1],
            format!("  idle gaps between its dispatches: {total}")
        );
        let shown: Vec<u64> = lines[at + 2..at + 10]
            .iter()
            .map(|l| {
                l.split_whitespace()
                    .rev()
                    .find_map(|w| w.parse().ok())
                    .unwrap()
            })
            .collect();
        assert_eq!(shown, buckets, "GPU {gpu}\n{stderr}");
        assert!(lines[at + 2].trim_start().starts_with("< 10 us"));
        assert!(lines[at + 9].trim_start().starts_with(">= 100 ms"));
    }
}

#[test]
fn two_passes_join_dispatches_of_the_same_gpu_and_queue() {
    // Counters of the kernels' own work: they tell kernels apart, where a window-length counter
    // such as GRBM_COUNT reads the same for kernels of equal length and also counts any gap the
    // simulated device leaves between a start packet and its kernel on a loaded machine.
    let counters = ["SQ_WAVES", "SQ_INSTS_VALU"];
    let (merged, incomplete) = joined_exactly("two", &counters, &["--fork"], 0);
    // 2 processes × 2 threads × 2 GPUs × 2 queues × 2 iterations × 4 kernels, all matched.
    assert_eq!((merged, incomplete), (128, 0));
}

#[test]
fn three_passes_join_dispatches_of_the_same_gpu_and_queue() {
    let counters = ["SQ_WAVES", "GRBM_COUNT", "TCC_HIT"];
    let (merged, incomplete) = joined_exactly("three", &counters, &["--fork"], 0);
    assert_eq!((merged, incomplete), (128, 0));
}

#[test]
fn dispatches_a_crash_cut_short_stay_unmatched_and_are_reported() {
    // Thread 0 dies after its first iteration, while thread 1 is wherever its timing put it:
    // the passes end at different points. (Without --fork: an orphaned child would go on
    // writing records after its pass was read.)
    let (merged, _) = joined_exactly("crash", &["SQ_WAVES", "SQ_INSTS_VALU"], &["--crash"], 139);
    assert!(merged >= 2 * 2 * 4, "{merged}");
}

#[test]
fn a_counter_collected_in_two_passes_is_reported_once() {
    // SQ_WAVES is both a --pmc group and in the input file's line: passes 2 and 3 collect it.
    let dir = scratch("twice");
    std::fs::write(dir.join("input.txt"), "pmc: SQ_WAVES TCC_HIT\n").unwrap();
    let counters = ["GRBM_COUNT", "SQ_WAVES", "TCC_HIT"];
    let args = [
        "-i",
        "input.txt",
        "--pmc",
        "GRBM_COUNT",
        "--pmc",
        "SQ_WAVES",
        "--output-format",
        "csv,json,rocpd",
    ];
    let (output, truth) = profile(&dir, &args, &[], &counters);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let out = dir.join("out");
    let passes: Vec<BTreeMap<Key, Record>> = (1..=3).map(|p| pass_records(&out, p)).collect();
    assert!(passes.iter().all(|p| p.len() == 64));
    assert!(passes.iter().all(|p| p.keys().eq(passes[0].keys())));
    // Each counter from the first pass that collected it.
    let from = [(0, "GRBM_COUNT"), (1, "SQ_WAVES"), (2, "TCC_HIT")];

    let text = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[header.len() - 5..],
        ["GRBM_COUNT", "SQ_WAVES", "TCC_HIT", "BeginNs", "EndNs"]
    );
    let mut per_kernel: BTreeMap<(String, &str), u64> = BTreeMap::new();
    let mut rows = 0;
    for line in lines {
        let row: Vec<&str> = line.split(',').collect();
        let field = |i: usize| row[i].parse::<u64>().unwrap();
        let (begin, end) = (field(row.len() - 2), field(row.len() - 1));
        let key = passes[0]
            .iter()
            .find(|(_, r)| r.start == begin && r.end == end && u64::from(r.agent) == field(2))
            .map(|(k, _)| k)
            .unwrap_or_else(|| panic!("{line}"));
        for (i, (pass, counter)) in from.iter().enumerate() {
            let expected = truth_of(&truth, &passes[*pass][key], counter);
            assert_eq!(
                row[row.len() - 5 + i],
                expected.to_string(),
                "{counter} {key:?}"
            );
            *per_kernel.entry((key.3.clone(), counter)).or_default() += expected;
        }
        rows += 1;
    }
    assert_eq!(rows, 64);

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let tool = &json["rocprofiler-sdk-tool"][0];
    let dispatches = tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert_eq!(dispatches.len(), 64);
    let waves_id = tool["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "SQ_WAVES")
        .unwrap()["id"]["handle"]
        .clone();
    for d in dispatches {
        let names: Vec<&String> = d["rtl-pmc"]["counters"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(names, ["GRBM_COUNT", "SQ_WAVES", "TCC_HIT"], "{d}");
        // SQ_WAVES's records add up to its value once, not once per pass that collected it.
        let waves: f64 = d["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["counter_id"]["handle"] == waves_id)
            .map(|r| r["value"].as_f64().unwrap())
            .sum();
        assert_eq!(
            waves,
            d["rtl-pmc"]["counters"]["SQ_WAVES"].as_f64().unwrap(),
            "{d}"
        );
    }

    // The view and the summary add each dispatch's value once.
    let conn = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT kernel, counter, dispatches, total FROM rtl_kernel_counters")
        .unwrap();
    let view: Vec<(String, String, i64, f64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(view.len(), 4 * 3);
    for (kernel, counter, dispatches, total) in &view {
        assert_eq!(*dispatches, 16, "{kernel} {counter}");
        assert_eq!(
            *total,
            per_kernel[&(kernel.clone(), counter.as_str())] as f64,
            "{kernel} {counter}"
        );
    }
    let vadd_waves = per_kernel[&("vadd".to_string(), "SQ_WAVES")];
    assert_eq!(vadd_waves, 16 * 64);
    assert!(stderr.contains("SQ_WAVES=1,024"), "{stderr}");
}
