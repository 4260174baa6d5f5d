//! Running the demo app under the interposer on the simulated ROCm, and checking its raw records
//! against the simulator's ground truth.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rtl_pmc::dispatch::records::{read, Record};
use rtl_pmc::passes::plan_file::{
    AgentPlan, EventGroup, KernelFilters, PlanEvent, RunPlan, PLAN_VERSION,
};

#[path = "../sim_support/mod.rs"]
mod sim_support;
pub use sim_support::artifact;
#[allow(unused_imports)]
pub use sim_support::build_c_program;
// Each test binary uses a different part of this module.
#[allow(unused_imports)]
pub use sim_support::Profile;

/// The simulator environment for `config`, computed once per test binary: preparing it rewrites
/// the library directory, which must not happen while another test's process loads from it.
pub fn sim_env(config: &str) -> Vec<(String, String)> {
    type Env = Vec<(String, String)>;
    static CACHE: std::sync::Mutex<Option<HashMap<String, Env>>> = std::sync::Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    cache
        .get_or_insert_with(HashMap::new)
        .entry(config.to_string())
        .or_insert_with(|| sim_support::sim_env(config))
        .clone()
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("interposer-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The plan event of basic counter `name` on `arch`, from the simulator's counter tables.
pub fn event(arch: &str, name: &str) -> PlanEvent {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/data");
    let counters = std::fs::read_to_string(data.join("counters.csv")).expect("counters.csv");
    let (block, id) = counters
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f.len() > 4 && f[0] == arch && f[1] == name && f[2] == "basic")
        .map(|f| (f[3].to_string(), f[4].parse::<u32>().expect("event id")))
        .unwrap_or_else(|| panic!("{name} is not a basic counter of {arch}"));
    let blocks = std::fs::read_to_string(data.join("blocks.csv")).expect("blocks.csv");
    let block_id = blocks
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[0] == arch && f[1] == block)
        .map(|f| f[2].parse::<u32>().expect("block id"))
        .unwrap_or_else(|| panic!("no block {block} on {arch}"));
    PlanEvent {
        block,
        block_id,
        event: id,
        flags: 0,
    }
}

/// A plan collecting `groups` (counter names) on `arch`, with `filters`.
pub fn plan(
    dir: &Path,
    arch: &str,
    groups: &[&[&str]],
    filters: KernelFilters,
    interval: u64,
) -> PathBuf {
    let plan = RunPlan {
        version: PLAN_VERSION,
        pass: 1,
        output_directory: dir.join("out").display().to_string(),
        filters,
        group_interval: interval,
        agents: vec![AgentPlan {
            arch: arch.into(),
            groups: groups
                .iter()
                .map(|names| EventGroup {
                    counters: names.iter().map(|n| n.to_string()).collect(),
                    events: names.iter().map(|n| event(arch, n)).collect(),
                })
                .collect(),
        }],
        replay: None,
    };
    let path = dir.join("plan.json");
    plan.write(&path).expect("plan written");
    path
}

/// One run of the demo app under the interposer.
pub struct Run {
    /// The process's output.
    pub output: Output,
    /// Records of every process, in file order.
    pub records: Vec<Record>,
    /// Ground-truth lines.
    pub truth: Vec<serde_json::Value>,
}

impl Run {
    /// stdout as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// stderr as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// Panics with the output unless the app succeeded.
    pub fn assert_success(&self) {
        assert!(
            self.output.status.success(),
            "status {:?}\nstdout:\n{}\nstderr:\n{}",
            self.output.status,
            self.stdout(),
            self.stderr()
        );
    }
}

/// Runs the demo app with `args` on simulated `devices`, the interposer loaded with `plan`,
/// extra environment `env`, ground truth for `truth_counters`.
pub fn run_demo(
    dir: &Path,
    devices: &str,
    plan: Option<&Path>,
    env: &[(&str, &str)],
    truth_counters: &[&str],
    args: &[&str],
) -> Run {
    let truth = dir.join("truth.jsonl");
    let _ = std::fs::remove_file(&truth);
    let mut command = Command::new(artifact("rtl-demo-app"));
    command
        .args(args)
        .envs(sim_env(devices))
        .env("RTL_SIM_DEVICES", devices)
        .env("HSA_TOOLS_LIB", artifact("librtl_pmc.so"))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", truth_counters.join(","));
    if let Some(plan) = plan {
        command.env("RTL_PMC_PLAN", plan);
    }
    command.envs(env.iter().copied());
    let output = command.output().expect("rtl-demo-app starts");
    Run {
        output,
        records: records(&dir.join("out")),
        truth: ground_truth(&truth),
    }
}

/// Every record of every `.rtlraw` file in `dir`.
pub fn records(dir: &Path) -> Vec<Record> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rtlraw"))
        .collect();
    paths.sort();
    paths
        .iter()
        .flat_map(|p| read(p).map(|r| r.expect("record reads")))
        .collect()
}

/// The rows of a CSV file with a header, each by column name.
pub fn read_table(path: &Path) -> Vec<HashMap<String, String>> {
    sim_support::read_table(path)
}

/// The ground-truth lines of a run. A `problem` line (a packet the simulated GPU does not model)
/// fails the test.
pub fn ground_truth(path: &Path) -> Vec<serde_json::Value> {
    sim_support::read_ground_truth(path)
}

/// Asserts that every ground-truth dispatch has exactly one record with the same agent, kernel
/// and timestamps, and (with `groups`, the counter names of each plan group) the same values per
/// sample. Dispatches that ran at the very same time on different queues are matched as a
/// multiset. Returns the number of dispatches matched.
pub fn assert_matches_truth(run: &Run, groups: &[&[&str]]) -> usize {
    type Key = (u64, String, u64, u64);
    let mut records: HashMap<Key, Vec<&Record>> = HashMap::new();
    for r in &run.records {
        records
            .entry((u64::from(r.agent), r.kernel.clone(), r.start, r.end))
            .or_default()
            .push(r);
    }
    let mut truths: HashMap<Key, Vec<&serde_json::Value>> = HashMap::new();
    for t in &run.truth {
        let key = (
            t["agent"].as_u64().unwrap(),
            t["kernel"].as_str().unwrap().to_string(),
            t["start"].as_u64().unwrap(),
            t["end"].as_u64().unwrap(),
        );
        truths.entry(key).or_default().push(t);
    }
    assert_eq!(
        run.records.len(),
        run.truth.len(),
        "records vs executed dispatches\nstderr:\n{}",
        run.stderr()
    );
    for (key, ts) in &truths {
        let mut found = records.get(key).cloned().unwrap_or_default();
        assert_eq!(
            found.len(),
            ts.len(),
            "dispatches {ts:?} recorded {} times",
            found.len()
        );
        for t in ts {
            let matching = found.iter().position(|r| values_match(r, t, groups));
            let Some(i) = matching else {
                panic!("no record of {t} has its values: {found:?}");
            };
            found.swap_remove(i);
        }
    }
    run.truth.len()
}

fn values_match(r: &Record, t: &serde_json::Value, groups: &[&[&str]]) -> bool {
    if groups.is_empty() {
        return r.group.is_none() && r.counters.is_empty();
    }
    let Some(group) = r.group else { return false };
    let names = groups[group as usize];
    r.counters.len() == names.len()
        && names.iter().zip(&r.counters).all(|(name, values)| {
            let truth: Vec<u64> = t["counters"][name]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
                .unwrap_or_default();
            values == &truth
        })
}

/// Asserts that every record matches one ground-truth dispatch (agent, kernel, timestamps)
/// and that no dispatch is recorded twice; returns the number of records.
pub fn assert_records_subset_of_truth(run: &Run) -> usize {
    let truth: std::collections::HashSet<(u64, String, u64, u64)> = run
        .truth
        .iter()
        .map(|t| {
            (
                t["agent"].as_u64().unwrap(),
                t["kernel"].as_str().unwrap().to_string(),
                t["start"].as_u64().unwrap(),
                t["end"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    for r in &run.records {
        let key = (u64::from(r.agent), r.kernel.clone(), r.start, r.end);
        assert!(
            truth.contains(&key),
            "record {r:?} matches no executed dispatch"
        );
        assert!(seen.insert(key), "record {r:?} appears twice");
    }
    run.records.len()
}

/// The lines of stderr written by the interposer.
pub fn warnings(run: &Run) -> Vec<String> {
    run.stderr()
        .lines()
        .filter(|l| l.starts_with("rtl-pmc: "))
        .map(str::to_string)
        .collect()
}

/// `tests/common/signal_app.c`, built once per test binary: N kernel dispatches behind one
/// doorbell, sharing one completion signal.
pub fn signal_app() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            // One copy per test binary: two binaries may build it at the same time.
            let binary = std::env::current_exe()
                .ok()
                .and_then(|e| e.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_default();
            sim_support::build_c_program(
                "tests/common/signal_app.c",
                &format!("rtl-signal-app-{binary}"),
            )
        })
        .clone()
}

/// The process ids of `pid`'s children.
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A process's output as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts that a process succeeded, showing its status and both outputs when it did not.
pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// The sum over its samples of `counter` in ground-truth line `t`.
pub fn total(t: &serde_json::Value, counter: &str) -> u64 {
    samples(t, counter).iter().sum()
}

/// The samples of `counter` in ground-truth line `t`, one per instance.
pub fn samples(t: &serde_json::Value, counter: &str) -> Vec<u64> {
    t["counters"][counter]
        .as_array()
        .unwrap_or_else(|| panic!("no {counter} in {t}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}
