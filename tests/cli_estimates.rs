//! Numbers with their uncertainty, end to end on the simulated ROCm with per-dispatch variation
//! (`RTL_SIM_VARIATION`): estimates under `pmc_groups` against the true totals of the ground
//! truth, values that cannot be true, drift between passes, and ranks of a spatially
//! multiplexed job merged into estimates.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sim_support::{artifact, read_ground_truth, read_table, sim_env, total};

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-estimates-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The demo app's kernels the calibration uses: seven, so that three rotating groups visit
/// every kernel.
const KERNELS: [&str; 7] = [
    "vadd",
    "saxpy",
    "fill",
    "increment",
    "lds_reverse",
    "scratchy",
    "copy",
];

const GROUPS: &str =
    "[[SQ_INSTS_VALU, SQ_WAVES], [TCC_HIT, TCC_MISS], [GRBM_COUNT, SQ_INSTS_SALU]]";
const COUNTERS: [&str; 6] = [
    "SQ_INSTS_VALU",
    "SQ_WAVES",
    "TCC_HIT",
    "TCC_MISS",
    "GRBM_COUNT",
    "SQ_INSTS_SALU",
];

/// One row of `rtl_estimate`.
struct Estimate {
    kernel: String,
    counter: String,
    impossible: Option<String>,
    method: String,
    numbers: HashMap<String, Option<f64>>,
}

impl Estimate {
    /// A numeric column (NaN for NULL).
    fn get(&self, column: &str) -> f64 {
        self.numbers[column].unwrap_or(f64::NAN)
    }
}

struct Run {
    output: Output,
    out: PathBuf,
    truth: Vec<serde_json::Value>,
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    fn assert_success(&self) {
        assert_eq!(self.output.status.code(), Some(0), "{}", self.stderr());
    }

    /// The rows of `rtl_estimate`: kernel, counter and the numeric columns by name (`None`
    /// for NULL).
    fn estimates(&self) -> Vec<Estimate> {
        let conn = rusqlite::Connection::open(self.out.join("results.db")).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT kernel, counter, impossible, method, dispatches, sampled, coverage, total,
                        error, low95, high95, reliable FROM rtl_estimate",
            )
            .unwrap();
        let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
        stmt.query_map([], |r| {
            let mut numbers = HashMap::new();
            for (i, name) in names.iter().enumerate().skip(4) {
                let v = match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Integer(n) => Some(n as f64),
                    rusqlite::types::ValueRef::Real(x) => Some(x),
                    _ => None,
                };
                numbers.insert(name.clone(), v);
            }
            Ok(Estimate {
                kernel: r.get(0)?,
                counter: r.get(1)?,
                impossible: r.get(2)?,
                method: r.get(3)?,
                numbers,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    }

    /// True total of `counter` over the dispatches of `kernel`.
    fn true_total(&self, kernel: &str, counter: &str) -> u64 {
        self.truth
            .iter()
            .filter(|t| t["kernel"] == kernel)
            .map(|t| total(t, counter))
            .sum()
    }

    fn behaviour(&self, kernel: &str) -> String {
        self.truth
            .iter()
            .find(|t| t["kernel"] == kernel)
            .and_then(|t| t["behaviour"].as_str())
            .unwrap_or("exact")
            .to_string()
    }
}

/// Runs `rtl-pmc ARGS -d DIR/out -- rtl-demo-app APP_ARGS` on a simulated gfx942 with
/// variation `seed`, ground truth for `counters` and extra environment `env`.
fn profile(
    dir: &Path,
    seed: &str,
    args: &[&str],
    app_args: &[&str],
    counters: &[&str],
    env: &[(&str, String)],
) -> Run {
    let out = dir.join("out");
    let truth = dir.join("truth.jsonl");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .args(["--arch", "gfx942", "-d"])
        .arg(&out)
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(app_args)
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_VARIATION", seed)
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", counters.join(","))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("rtl-pmc starts");
    Run {
        output,
        out,
        truth: read_ground_truth(&truth),
    }
}

/// One calibration run: the seven kernels, 12 iterations, three groups rotating every
/// dispatch.
fn rotating(name: &str, seed: u64) -> Run {
    let dir = scratch(name);
    let input = dir.join("input.yaml");
    std::fs::write(
        &input,
        format!("jobs:\n  - pmc_groups: {GROUPS}\n    pmc_group_interval: 1\n"),
    )
    .unwrap();
    let mut app = vec!["--iterations", "12"];
    for k in KERNELS {
        app.extend(["--kernel", k]);
    }
    let run = profile(
        &dir,
        &seed.to_string(),
        &["-i", input.to_str().unwrap(), "-f", "csv", "json", "rocpd"],
        &app,
        &COUNTERS,
        &[],
    );
    run.assert_success();
    run
}

/// Over 24 seeds (168 strata, 7 kernels each, 12 dispatches of which each counter was measured
/// on 4): every estimate covers the true total's dispatches, stable kernels' estimates equal
/// their true totals, and the 95% intervals of the noisy and drifting kernels' estimates cover
/// their true totals in 90–99% of cases.
#[test]
fn intervals_cover_the_true_totals_in_90_to_99_percent_of_strata() {
    let seeds: Vec<u64> = (1..=24).collect();
    let runs: Vec<(u64, Run)> = std::thread::scope(|s| {
        let halves: Vec<_> = seeds
            .chunks(seeds.len() / 2)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&seed| (seed, rotating(&format!("calibration-{seed}"), seed)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().expect("a calibration run"))
            .collect()
    });
    let (mut varying, mut covered, mut stable, mut strata) = (0, 0, 0, 0);
    for (seed, run) in &runs {
        let estimates = run.estimates();
        assert_eq!(
            estimates.len(),
            KERNELS.len() * COUNTERS.len(),
            "seed {seed}"
        );
        strata += KERNELS.len();
        for e in &estimates {
            let (kernel, counter) = (e.kernel.as_str(), e.counter.as_str());
            let truth = run.true_total(kernel, counter) as f64;
            let dispatches = run.truth.iter().filter(|t| t["kernel"] == kernel).count();
            assert_eq!(
                e.get("dispatches"),
                dispatches as f64,
                "seed {seed} {kernel}"
            );
            assert_eq!(e.get("sampled"), 4.0, "seed {seed} {kernel} {counter}");
            assert_eq!(e.get("coverage"), 4.0 / 12.0);
            assert_eq!(e.method, "dispatches");
            match run.behaviour(kernel).as_str() {
                "stable" => {
                    stable += 1;
                    assert_eq!(
                        e.get("total"),
                        truth,
                        "seed {seed}: stable {kernel} {counter}"
                    );
                    assert_eq!(e.get("error"), 0.0);
                    // Four measured dispatches are fewer than the five an estimate needs.
                    assert_eq!(e.get("reliable"), 0.0);
                }
                _ => {
                    varying += 1;
                    covered += usize::from(e.get("low95") <= truth && truth <= e.get("high95"));
                }
            }
        }
    }
    let coverage = covered as f64 / varying as f64;
    eprintln!(
        "calibration: {strata} strata, {varying} varying estimates, {covered} covered \
         ({:.1}%), {stable} stable estimates exact",
        100.0 * coverage
    );
    assert!(
        stable > 0 && varying >= 300,
        "{stable} stable, {varying} varying"
    );
    assert!(
        (0.90..=0.99).contains(&coverage),
        "95% intervals covered {covered} of {varying} true totals"
    );
}

/// A ratio its author declares a percentage, misses over reads, comes out above 100% because
/// the L2's misses include writes: every file reports the measured value unchanged, and the
/// database, the JSON, the summary and a warning say it cannot be true. The counter rotates
/// with another group, so `results.csv` also carries its estimate columns.
#[test]
fn an_impossible_percentage_is_flagged_and_reported_unclamped() {
    let dir = scratch("impossible");
    let extra = dir.join("extra.yaml");
    std::fs::write(
        &extra,
        "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
    - name: MissPerRead
      description: \"L2 misses per L2 read\"
      unit: percent
      properties: []
      definitions:
        - architectures: [gfx942]
          expression: 100*reduce(TCC_MISS,sum)/reduce(TCC_READ,sum)
",
    )
    .unwrap();
    let input = dir.join("input.yaml");
    std::fs::write(
        &input,
        "jobs:\n  - pmc_groups: [[MissPerRead], [SQ_WAVES]]\n    pmc_group_interval: 1\n",
    )
    .unwrap();
    // Seed 2 makes `increment` stable.
    let run = profile(
        &dir,
        "2",
        &[
            "-E",
            extra.to_str().unwrap(),
            "-i",
            input.to_str().unwrap(),
            "-f",
            "csv",
            "json",
            "rocpd",
        ],
        &["--iterations", "6", "--kernel", "increment"],
        &["TCC_MISS", "TCC_READ", "SQ_WAVES"],
        &[],
    );
    run.assert_success();
    assert_eq!(run.behaviour("increment"), "stable");
    // Each dispatch's true ratio; the kernel is stable, so all are equal.
    let ratio =
        |t: &serde_json::Value| 100.0 * total(t, "TCC_MISS") as f64 / total(t, "TCC_READ") as f64;
    let truth = ratio(&run.truth[0]);
    assert!(truth > 100.0, "{truth}");
    let rows = read_table(&run.out.join("results.csv"));
    assert_eq!(rows.len(), 6);
    for (i, row) in rows.iter().enumerate() {
        let (value, estimate, error) = (
            &row["MissPerRead"],
            &row["MissPerRead_estimate"],
            &row["MissPerRead_error"],
        );
        match i % 2 {
            0 => {
                let v: f64 = value.parse().unwrap();
                assert!(
                    (v - truth).abs() < 1e-9 * truth,
                    "row {i}: {v} against {truth}"
                );
                assert_eq!((estimate, error.as_str()), (value, "0"), "row {i}");
            }
            _ => {
                assert_eq!(value, "None", "row {i}");
                let e: f64 = estimate.parse().unwrap();
                assert!((e - truth).abs() < 1e-9 * truth, "row {i}: {e}");
                assert_eq!(
                    error, "0",
                    "row {i}: a stable kernel's values do not spread"
                );
            }
        }
        assert_eq!(row["SQ_WAVES_estimate"], "64", "row {i}");
    }
    let why = "3 of 3 measured dispatches outside 0–100";
    assert_eq!(
        run.estimates()
            .iter()
            .find(|e| e.counter == "MissPerRead")
            .and_then(|e| e.impossible.clone())
            .as_deref(),
        Some(why)
    );
    let warning = format!(
        "rtl-pmc: warning: MissPerRead of increment [4096/256] cannot be true: {why} (reported as \
         measured, not clamped)"
    );
    assert!(
        run.stderr().lines().any(|l| l == warning),
        "{}",
        run.stderr()
    );
    // A derived counter's line shows its mean per dispatch: every dispatch of `increment` misses
    // in the L2 twice for each read.
    assert_eq!(truth, 200.0);
    let summary_line = format!(
        "  increment [4096/256]  MissPerRead = 200 per dispatch ± 0  (3 of 6 dispatches) * ! {why}"
    );
    assert!(
        run.stderr().lines().any(|l| l == summary_line),
        "{summary_line}\n{}",
        run.stderr()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.out.join("results.json")).unwrap())
            .unwrap();
    let estimates = &json["rocprofiler-sdk-tool"][0]["rtl-pmc"]["estimates"];
    let ratio_estimate = estimates
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["counter"] == "MissPerRead")
        .unwrap();
    assert_eq!(ratio_estimate["impossible"], why);
    assert_eq!(ratio_estimate["dispatches"], 6);
    assert_eq!(ratio_estimate["sampled"], 3);
    assert_eq!(ratio_estimate["reliable"], false);
    assert!((ratio_estimate["mean"].as_f64().unwrap() - truth).abs() < 1e-9 * truth);
}

/// Two passes of a run whose drifting kernels are 10% slower in the second run
/// (`RTL_SIM_RUN_FILE`): the drifting kernels are named in one warning with their durations'
/// difference, which equals the ground truth's; the stable kernel and the noisy one (whose
/// dispatches differ from each other but not from run to run) are not. The anchor GRBM_COUNT
/// (`--anchor`), placed in both passes, drifts with them.
#[test]
fn kernels_whose_passes_disagree_are_flagged_and_stable_ones_are_not() {
    let dir = scratch("drift");
    // Seed 1: vadd stable, increment noisy, saxpy and fill drifting.
    let run = profile(
        &dir,
        "1",
        &[
            "--anchor",
            "GRBM_COUNT",
            "--pmc",
            "SQ_WAVES",
            "--pmc",
            "TCC_HIT",
        ],
        &["--iterations", "4"],
        &["GRBM_COUNT"],
        &[("RTL_SIM_RUN_FILE", dir.join("runs").display().to_string())],
    );
    run.assert_success();
    let behaviours: Vec<String> = ["vadd", "increment", "saxpy", "fill"]
        .iter()
        .map(|k| run.behaviour(k))
        .collect();
    assert_eq!(behaviours, ["stable", "noisy", "drifting", "drifting"]);
    // Per kernel and pass (the two processes, in order), the true total duration.
    let mut pids: Vec<u64> = run
        .truth
        .iter()
        .map(|t| t["pid"].as_u64().unwrap())
        .collect();
    pids.dedup();
    assert_eq!(pids.len(), 2);
    let duration = |kernel: &str, pid: u64| -> f64 {
        run.truth
            .iter()
            .filter(|t| t["kernel"] == kernel && t["pid"] == pid)
            .map(|t| (t["end"].as_u64().unwrap() - t["start"].as_u64().unwrap()) as f64)
            .sum()
    };
    let relative = |kernel: &str| {
        let (first, second) = (duration(kernel, pids[0]), duration(kernel, pids[1]));
        (second - first) / first
    };
    assert_eq!(relative("vadd"), 0.0);
    assert_eq!(relative("increment"), 0.0);
    let warning = format!(
        "rtl-pmc: warning: passes disagree by more than 5% of the first pass for fill \
         (duration_ns {:+.1}% in pass 2), saxpy (duration_ns {:+.1}% in pass 2): counters of \
         different passes (and ratios built from them) describe different executions of these \
         kernels",
        100.0 * relative("fill"),
        100.0 * relative("saxpy")
    );
    assert!(
        run.stderr().lines().any(|l| l == warning),
        "{warning}\n{}",
        run.stderr()
    );
    let conn = rusqlite::Connection::open(run.out.join("results.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT kernel, quantity, pass, dispatches, relative, drifting FROM rtl_drift
             WHERE pass = 2 ORDER BY kernel, quantity",
        )
        .unwrap();
    let rows: Vec<(String, String, u32, u32, f64, bool)> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let quantities: Vec<(&str, &str, bool)> = rows
        .iter()
        .map(|r| (r.0.as_str(), r.1.as_str(), r.5))
        .collect();
    assert_eq!(
        quantities,
        [
            ("fill", "GRBM_COUNT", true),
            ("fill", "duration_ns", true),
            ("increment", "GRBM_COUNT", false),
            ("increment", "duration_ns", false),
            ("saxpy", "GRBM_COUNT", true),
            ("saxpy", "duration_ns", true),
            ("vadd", "GRBM_COUNT", false),
            ("vadd", "duration_ns", false),
        ]
    );
    for (kernel, quantity, _, dispatches, rel, _) in &rows {
        assert_eq!(*dispatches, 4);
        if quantity == "duration_ns" {
            assert!((rel - relative(kernel)).abs() < 1e-12, "{kernel}: {rel}");
        }
    }
}

/// The counter groups the spatial multiplexing tests spread over ranks, one per `--pmc`.
const RANK_GROUPS: [&str; 4] = ["SQ_WAVES", "TCC_HIT", "SQ_INSTS_VALU", "GRBM_COUNT"];

/// Runs `ranks` ranks of a job spreading [`RANK_GROUPS`] over them (`--spatial-multiplexing`,
/// rank and size from Open MPI's variables, each rank's application varying with its own stream
/// of seed 4, given `app` arguments), two ranks at a time; checks that rank r collects the
/// groups `mine(r)` names on its pass line, merges the ranks with `rtl-pmc merge` and checks
/// its line of ranks per group. Returns the ranks and the merge, with every rank's ground truth.
fn spread_and_merge(
    name: &str,
    ranks: usize,
    app: &[&str],
    mine: &(dyn Fn(usize) -> String + Sync),
    ranks_per_group: &str,
) -> (Vec<Run>, Run) {
    let dir = scratch(name);
    let rank_run = |rank: usize| {
        let rank_dir = dir.join(format!("rank_{rank}"));
        std::fs::create_dir_all(&rank_dir).unwrap();
        let mut args = vec!["--spatial-multiplexing"];
        for g in &RANK_GROUPS {
            args.extend(["--pmc", g]);
        }
        let run = profile(
            &rank_dir,
            &format!("4:{rank}"),
            &args,
            app,
            &RANK_GROUPS,
            &[
                ("OMPI_COMM_WORLD_RANK", rank.to_string()),
                ("OMPI_COMM_WORLD_SIZE", ranks.to_string()),
            ],
        );
        run.assert_success();
        let line = format!("[pass 1/1] {}\n", mine(rank));
        assert!(
            run.stderr().contains(&line),
            "rank {rank}: {line}{}",
            run.stderr()
        );
        run
    };
    let runs: Vec<Run> = std::thread::scope(|s| {
        let halves: Vec<_> = [0..ranks / 2, ranks / 2..ranks]
            .into_iter()
            .map(|half| s.spawn(|| half.map(rank_run).collect::<Vec<_>>()))
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().expect("the ranks run"))
            .collect()
    });
    let merged = dir.join("merged");
    let output = Command::new(artifact("rtl-pmc"))
        .arg("merge")
        .arg("-d")
        .arg(&merged)
        .args(runs.iter().map(|r| &r.out))
        .output()
        .expect("rtl-pmc merge starts");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let line = format!("rtl-pmc: ranks per counter group: {ranks_per_group}");
    assert!(stderr.lines().any(|l| l == line), "{line}\n{stderr}");
    let all = Run {
        output,
        out: merged,
        truth: runs.iter().flat_map(|r| r.truth.clone()).collect(),
    };
    (runs, all)
}

/// Every estimate of the merge `all` made by `method` over 4 dispatches per kernel of each of
/// `ranks` ranks, `sampled` of them measured, with its true total within its 95% interval.
fn assert_estimates_hold_the_truth(all: &Run, method: &str, ranks: usize, sampled: f64) {
    let estimates = all.estimates();
    assert_eq!(estimates.len(), 4 * RANK_GROUPS.len());
    for e in &estimates {
        let truth = all.true_total(&e.kernel, &e.counter) as f64;
        assert_eq!(e.method, method, "{} {}", e.kernel, e.counter);
        assert_eq!(e.get("dispatches"), (ranks * 4) as f64);
        assert_eq!(e.get("sampled"), sampled);
        assert!(
            e.get("low95") <= truth && truth <= e.get("high95"),
            "{} {}: {} ± {} (95%: {}..{}) against the true {truth}",
            e.kernel,
            e.counter,
            e.get("total"),
            e.get("error"),
            e.get("low95"),
            e.get("high95")
        );
    }
}

/// A job of 16 ranks spreads four groups over them (`--spatial-multiplexing`, rank and size
/// from Open MPI's variables), each rank's application varying with its own stream of one seed
/// (the same kernels stable, noisy or drifting on every rank, with different values); `rtl-pmc
/// merge` says which group had how many ranks and estimates every counter's total over all 16
/// ranks from the four that measured it, with an error from the spread between those ranks:
/// each true total lies within its 95% interval. (An outcome of seed 4, not a certainty: over
/// seeds 3 to 7, 78 of these 80 intervals cover their true totals; seeds 3 and 6 each leave one
/// TCC_HIT total just outside, as 95% intervals from four ranks may. The calibration test above
/// measures coverage.)
#[test]
fn ranks_spread_groups_and_merge_into_estimates_within_their_errors() {
    const RANKS: usize = 16;
    let (_, all) = spread_and_merge(
        "spatial",
        RANKS,
        &["--iterations", "4"],
        &|rank| RANK_GROUPS[rank % 4].to_string(),
        "group 1 (SQ_WAVES): 4 ranks; group 2 (TCC_HIT): 4 ranks; group 3 (SQ_INSTS_VALU): 4 \
         ranks; group 4 (GRBM_COUNT): 4 ranks",
    );
    // 4 ranks × 4 dispatches measured each counter.
    assert_estimates_hold_the_truth(&all, "ranks", RANKS, 16.0);
    let conn = rusqlite::Connection::open(all.out.join("results.db")).unwrap();
    let rank_groups: Vec<(u32, String, u32, String)> = conn
        .prepare("SELECT grp, counters, ranks, inputs FROM rtl_rank_group ORDER BY grp")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rank_groups,
        [
            (1, "SQ_WAVES".to_string(), 4, "0 4 8 12".to_string()),
            (2, "TCC_HIT".to_string(), 4, "1 5 9 13".to_string()),
            (3, "SQ_INSTS_VALU".to_string(), 4, "2 6 10 14".to_string()),
            (4, "GRBM_COUNT".to_string(), 4, "3 7 11 15".to_string()),
        ]
    );
}

/// The case: 4 ranks and 4 groups, one rank per group. With one measuring rank there is
/// no spread between ranks, so the merge estimates each counter from that rank's dispatches
/// standing for all dispatches of the four ranks (`N·x̄` with the finite-population error) and
/// says so (method `dispatches`); each true total lies within its 95% interval.
#[test]
fn four_ranks_over_four_groups_merge_into_estimates_within_their_errors() {
    let (_, all) = spread_and_merge(
        "spatial-four",
        4,
        &["--iterations", "4"],
        &|rank| RANK_GROUPS[rank].to_string(),
        "group 1 (SQ_WAVES): 1 rank; group 2 (TCC_HIT): 1 rank; group 3 (SQ_INSTS_VALU): 1 \
         rank; group 4 (GRBM_COUNT): 1 rank",
    );
    // One rank × 4 dispatches measured each counter.
    assert_estimates_hold_the_truth(&all, "dispatches", 4, 4.0);
}

/// Two ranks and four groups: each rank rotates through its two groups per dispatch (rank 0
/// groups 1 and 3, rank 1 groups 2 and 4), and the merge, with one measuring rank per counter,
/// estimates each counter from that rank's measured dispatches standing for all dispatches of
/// both ranks: `N·x̄` with the finite-population error, recomputed here from the ranks' own
/// `results.csv`.
#[test]
fn fewer_ranks_than_groups_rotate_and_merge_from_the_dispatches() {
    let groups = RANK_GROUPS;
    let (runs, all) = spread_and_merge(
        "spatial-rotating",
        2,
        &[
            "--iterations",
            "4",
            "--kernel",
            "vadd",
            "--kernel",
            "saxpy",
            "--kernel",
            "fill",
        ],
        &|rank| format!("{} {}", RANK_GROUPS[rank], RANK_GROUPS[rank + 2]),
        "group 1 (SQ_WAVES SQ_INSTS_VALU): 1 rank; group 2 (TCC_HIT GRBM_COUNT): 1 rank",
    );
    let estimates = all.estimates();
    assert_eq!(estimates.len(), 3 * groups.len());
    for e in &estimates {
        let rank = groups.iter().position(|g| *g == e.counter).unwrap() % 2;
        let measured: Vec<f64> = read_table(&runs[rank].out.join("results.csv"))
            .iter()
            .filter(|row| row["KernelName"] == e.kernel && row[&e.counter] != "None")
            .map(|row| row[&e.counter].parse().unwrap())
            .collect();
        let (big, small) = (8.0, measured.len() as f64);
        assert_eq!(small, 2.0, "{} {}", e.kernel, e.counter);
        let mean = measured.iter().sum::<f64>() / small;
        let s2 = measured.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (small - 1.0);
        let error = big * ((1.0 - small / big) * s2 / small).sqrt();
        assert_eq!(e.method, "dispatches");
        assert_eq!((e.get("dispatches"), e.get("sampled")), (big, small));
        assert_eq!(e.get("total"), big * mean, "{} {}", e.kernel, e.counter);
        assert!((e.get("error") - error).abs() <= 1e-9 * error.max(1.0));
        assert_eq!(e.get("reliable"), 0.0, "2 measured dispatches are too few");
    }
}

/// Two groups rotating every dispatch over an application that launches four kernels in turn:
/// each kernel always meets the same group, so half the kernel-counter pairs are never measured.
/// They get no estimate, and one warning names each of them.
#[test]
fn counters_the_rotation_never_reaches_are_named() {
    let dir = scratch("never-measured");
    let input = dir.join("groups.yaml");
    std::fs::write(
        &input,
        "jobs:\n  - pmc_groups: [[SQ_WAVES], [SQ_INSTS_VALU]]\n    pmc_group_interval: 1\n",
    )
    .unwrap();
    let run = profile(
        &dir,
        "3",
        &["-i", input.to_str().unwrap()],
        &["--iterations", "6"],
        &["SQ_WAVES", "SQ_INSTS_VALU"],
        &[],
    );
    run.assert_success();
    let pairs: Vec<(String, String)> = run
        .estimates()
        .into_iter()
        .map(|e| (e.kernel, e.counter))
        .collect();
    assert_eq!(
        pairs,
        [
            ("fill".to_string(), "SQ_WAVES".to_string()),
            ("increment".to_string(), "SQ_INSTS_VALU".to_string()),
            ("saxpy".to_string(), "SQ_INSTS_VALU".to_string()),
            ("vadd".to_string(), "SQ_WAVES".to_string()),
        ]
    );
    let warning = "rtl-pmc: warning: counters never measured on any dispatch of these kernels, so \
        neither measured nor estimated there: fill [4096/256] (6 dispatches): SQ_INSTS_VALU; \
        increment [4096/256] (6 dispatches): SQ_WAVES; saxpy [4096/256] (6 dispatches): \
        SQ_WAVES; vadd [4096/256] (6 dispatches): SQ_INSTS_VALU; pmc_groups rotating in step \
        with the order the application launches its kernels (choose another \
        pmc_group_interval) or passes that never reached them do this";
    let stderr = run.stderr();
    assert_eq!(
        stderr.lines().filter(|l| *l == warning).count(),
        1,
        "{stderr}"
    );
}

/// Two ranks of one job on different GPU models (rank 0 on a simulated MI300X, rank 1 on an
/// MI210), each collecting one of two groups: `rtl-pmc merge` keeps two GPUs in the summary,
/// rocpd's agents, `results.csv`'s `gpu-id` and the JSON; each architecture's counters are
/// estimated from its own dispatches only (GRBM_COUNT, measured on the MI210 alone, has no
/// estimate for the MI300X's dispatches), and the kernels both ran are named in one warning.
/// The same input given twice, by path or as a copy, is refused.
#[test]
fn a_merge_of_two_gpu_models_keeps_them_apart() {
    let dir = scratch("two-models");
    let counters = ["SQ_WAVES", "GRBM_COUNT"];
    let rank = |rank: usize, arch: &str| {
        let rank_dir = dir.join(format!("rank_{rank}"));
        std::fs::create_dir_all(&rank_dir).unwrap();
        let truth = rank_dir.join("truth.jsonl");
        let output = Command::new(artifact("rtl-pmc"))
            .current_dir(&rank_dir)
            .args(["--arch", arch, "-d", "out", "-f", "csv", "json", "rocpd"])
            .args([
                "--spatial-multiplexing",
                "--pmc",
                "SQ_WAVES",
                "--pmc",
                "GRBM_COUNT",
            ])
            .arg("--")
            .arg(artifact("rtl-demo-app"))
            .args(["--iterations", "5", "--kernel", "vadd"])
            .envs(sim_env(arch))
            .env("OMPI_COMM_WORLD_RANK", rank.to_string())
            .env("OMPI_COMM_WORLD_SIZE", "2")
            .env("RTL_SIM_GROUND_TRUTH", &truth)
            .env("RTL_SIM_GROUND_TRUTH_COUNTERS", counters.join(","))
            .output()
            .expect("rtl-pmc starts");
        let run = Run {
            output,
            out: rank_dir.join("out"),
            truth: read_ground_truth(&truth),
        };
        run.assert_success();
        run
    };
    let runs = [rank(0, "gfx942"), rank(1, "gfx90a")];
    let merge = |out: &str, inputs: &[&Path]| {
        Command::new(artifact("rtl-pmc"))
            .current_dir(&dir)
            .args(["merge", "-f", "csv", "json", "rocpd", "-d", out])
            .args(inputs)
            .output()
            .expect("rtl-pmc merge starts")
    };
    let output = merge("merged", &[&runs[0].out, &runs[1].out]);
    let all = Run {
        output,
        out: dir.join("merged"),
        truth: runs.iter().flat_map(|r| r.truth.clone()).collect(),
    };
    all.assert_success();
    let stderr = all.stderr();
    // Two GPUs in the summary, each with its own five dispatches.
    let busy: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("rtl-pmc: GPU "))
        .map(|l| l.split(": busy").next().unwrap())
        .collect();
    assert_eq!(busy, ["rtl-pmc: GPU 1 (gfx942)", "rtl-pmc: GPU 2 (gfx90a)"]);
    assert!(stderr.contains("in 5 dispatches"), "{stderr}");
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("rtl-pmc: warning:"))
            .collect::<Vec<_>>(),
        [
            format!(
                "rtl-pmc: warning: the inputs ran vadd on more than one architecture (gfx942: {}; gfx90a: {}): its counters are reported and estimated per architecture, never from another's values",
                runs[0].out.display(),
                runs[1].out.display()
            )
            .as_str(),
            "rtl-pmc: warning: counters never measured on any dispatch of these kernels, so \
             neither measured nor estimated there: vadd [4096/256] on gfx90a (5 dispatches): \
             SQ_WAVES; vadd [4096/256] on gfx942 (5 dispatches): GRBM_COUNT; pmc_groups rotating \
             in step with the order the application launches its kernels (choose another \
             pmc_group_interval) or passes that never reached them do this, or only inputs on \
             another architecture measured them"
        ]
    );
    // rocpd's agents.
    let conn = rusqlite::Connection::open(all.out.join("results.db")).unwrap();
    let agents: Vec<(i64, String, String)> = conn
        .prepare(
            "SELECT id, name, product_name FROM rocpd_info_agent WHERE type = 'GPU' ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        agents,
        [
            (1, "gfx942".to_string(), "AMD Instinct MI300X".to_string()),
            (2, "gfx90a".to_string(), "AMD Instinct MI210".to_string())
        ]
    );
    // results.csv: each rank's rows on its own GPU, its own counters measured, the other's
    // neither measured nor estimated (each is exact on its architecture: no estimate columns).
    let rows = read_table(&all.out.join("results.csv"));
    assert_eq!(rows.len(), 10);
    assert!(
        rows[0].keys().all(|k| !k.ends_with("_estimate")),
        "{:?}",
        rows[0]
    );
    for row in &rows {
        let rank = runs
            .iter()
            .position(|r| {
                r.truth
                    .iter()
                    .any(|t| t["pid"].as_u64() == row["pid"].parse().ok())
            })
            .expect("a rank's process");
        let truth = &runs[rank].truth;
        assert_eq!(row["gpu-id"], ["1", "2"][rank]);
        let grbm = total(&truth[0], "GRBM_COUNT").to_string();
        let waves = total(&truth[0], "SQ_WAVES").to_string();
        match rank {
            0 => {
                assert_eq!(row["SQ_WAVES"], waves);
                assert_eq!(row["GRBM_COUNT"], "None");
            }
            _ => {
                assert_eq!(row["GRBM_COUNT"], grbm);
                assert_eq!(row["SQ_WAVES"], "None");
            }
        }
    }
    // The estimates: each counter exact on the architecture that measured it, nothing else.
    let mut estimates: Vec<(String, String, String, f64)> = conn
        .prepare("SELECT kernel, arch, counter, method, total FROM rtl_estimate")
        .unwrap()
        .query_map([], |r| {
            Ok((
                format!("{} {}", r.get::<_, String>(0)?, r.get::<_, String>(1)?),
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    estimates.sort_by(|a, b| a.0.cmp(&b.0));
    let truth_total = |rank: usize, counter: &str| {
        runs[rank]
            .truth
            .iter()
            .map(|t| total(t, counter))
            .sum::<u64>() as f64
    };
    assert_eq!(
        estimates,
        [
            (
                "vadd gfx90a".to_string(),
                "GRBM_COUNT".to_string(),
                "exact".to_string(),
                truth_total(1, "GRBM_COUNT")
            ),
            (
                "vadd gfx942".to_string(),
                "SQ_WAVES".to_string(),
                "exact".to_string(),
                truth_total(0, "SQ_WAVES")
            ),
        ]
    );
    // The JSON's agents: both GPUs.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(all.out.join("results.json")).unwrap()).unwrap();
    let names: Vec<&str> = json["rocprofiler-sdk-tool"][0]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] != "CPU" && a["type"] != 1)
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, ["gfx942", "gfx90a"]);

    // The same input twice, by another path or as a copy: refused, nothing written.
    let copy = dir.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(runs[0].out.join("results.db"), copy.join("results.db")).unwrap();
    let again = runs[0].out.join(".");
    for (inputs, how) in [
        ([&runs[0].out, &runs[0].out], "the same directory"),
        ([&runs[0].out, &again], "the same directory"),
        (
            [&runs[0].out, &copy],
            "the same profile (its database has the same GUID)",
        ),
    ] {
        let output = merge("twice", &[inputs[0].as_path(), inputs[1].as_path()]);
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            format!(
                "rtl-pmc: {} and {} are {how}; give each input once\n",
                inputs[0].display(),
                inputs[1].display()
            )
        );
        assert!(!dir.join("twice").exists());
    }
}
