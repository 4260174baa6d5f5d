//! Numbers with their uncertainty: per-kernel estimates of counters that were not measured on
//! every dispatch (`pmc_groups` rotation, dispatches a pass missed, ranks of a spatially
//! multiplexed job), and the drift of kernel durations between passes.
//!
//! A stratum is a kernel with one launch configuration (grid and workgroup) on one GPU
//! architecture: a merge of inputs from different GPU models never estimates one model's
//! counters from another's values. For each stratum
//! and counter, with `N` dispatches of which `n` were measured with mean `x̄` and sample variance
//! `s²`, the estimated total is `N·x̄` and its standard error `N·sqrt((1 − n/N)·s²/n)` (the
//! finite-population correction makes it 0 when every dispatch was measured). With the outputs
//! of several ranks (`rtl-pmc merge`) where only some ranks measured a counter, the ranks are
//! the sampling units: the total is a ratio estimate `N·Σy_r/ΣN_r` over the measuring ranks and
//! its error comes from the spread of the ranks' totals about it. Intervals are 95%, from
//! Student's t with the sample's degrees of freedom. Values that cannot be true (a percentage
//! outside 0–100, a negative count) are flagged, never changed.
//!
//! Everything here is computed from the database after the last pass and kept in its tables
//! `rtl_estimate`, `rtl_rank_group` and `rtl_drift`; the writers and the summary read it from
//! [`Estimates`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use rusqlite::Connection;
use serde_json::{json, Value};

use crate::fast_map::FastMap;
use crate::model::{push_value, Dispatch, EstimateColumns};
use crate::store::database::{values_of, Database, DatabaseError};
use crate::store::sampled::{Cell, CounterRanges, Moments, Range, Sampled, StratumKey};

/// Estimates from fewer measured dispatches than this are unreliable (rank estimates from fewer
/// than two measuring ranks are).
pub const MIN_SAMPLED: u64 = 5;

/// Estimates whose standard error exceeds this fraction of their value are unreliable.
pub const MAX_RELATIVE_ERROR: f64 = 0.10;

/// Kernels whose total duration in a pass differs from the first pass's by more than this
/// fraction drift between passes.
pub const DRIFT_THRESHOLD: f64 = 0.05;

/// A kernel with one launch configuration on one GPU architecture.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stratum {
    /// Kernel name.
    pub kernel: String,
    /// The GPU architecture when the profile holds more than one, else empty.
    pub arch: String,
    /// Grid size, work-items.
    pub grid: [u32; 3],
    /// Workgroup size, work-items.
    pub workgroup: [u32; 3],
}

impl Stratum {
    /// The stratum of `d`, whose GPU's architecture `arch_of` names (by KFD node).
    fn of(d: &Dispatch, arch_of: &HashMap<u32, String>) -> Stratum {
        Stratum {
            kernel: d.kernel.clone(),
            arch: arch_of.get(&d.agent).cloned().unwrap_or_default(),
            grid: d.grid,
            workgroup: d.workgroup,
        }
    }

    /// `kernel [grid/workgroup]` with sizes as x·y·z products (and ` on gfxNNN` when the
    /// profile holds several architectures), for messages.
    pub fn label(&self) -> String {
        let size = |v: [u32; 3]| v.iter().map(|&x| u64::from(x)).product::<u64>();
        let on = match self.arch.is_empty() {
            true => String::new(),
            false => format!(" on {}", self.arch),
        };
        format!(
            "{} [{}/{}]{on}",
            self.kernel,
            size(self.grid),
            size(self.workgroup)
        )
    }
}

/// How an estimate was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Every dispatch was measured: the total is exact.
    Exact,
    /// From the measured dispatches, a sample of the stratum's dispatches.
    Dispatches,
    /// From the totals of the ranks that measured the counter, a sample of the job's ranks.
    Ranks,
}

impl Method {
    /// The name the outputs use.
    pub fn name(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Dispatches => "dispatches",
            Method::Ranks => "ranks",
        }
    }
}

/// One counter's estimate in one stratum.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The stratum.
    pub stratum: Stratum,
    /// Counter name.
    pub counter: String,
    /// Whether the counter is derived (its total, a sum of ratios, is seldom what one wants;
    /// the summary shows its mean per dispatch).
    pub derived: bool,
    /// Dispatches of the stratum (`N`).
    pub dispatches: u64,
    /// Dispatches on which the counter was measured (`n`).
    pub sampled: u64,
    /// Runs (ranks) with dispatches of the stratum.
    pub ranks: u64,
    /// Runs (ranks) that measured the counter in the stratum.
    pub measuring_ranks: u64,
    /// Estimated mean per dispatch.
    pub mean: f64,
    /// Estimated total over the stratum's dispatches.
    pub total: f64,
    /// Standard error of `total` (`None` when the sample cannot tell: one measured unit).
    pub error: Option<f64>,
    /// Standard deviation of the measured dispatches' values (`None` below two).
    pub spread: Option<f64>,
    /// Degrees of freedom of the interval.
    pub degrees: u64,
    /// How it was made.
    pub method: Method,
    /// Why the value cannot be true, if it cannot.
    pub impossible: Option<String>,
}

impl Estimate {
    /// Measured dispatches over all dispatches.
    pub fn coverage(&self) -> f64 {
        self.sampled as f64 / self.dispatches.max(1) as f64
    }

    /// The 95% interval of the total.
    pub fn interval(&self) -> Option<(f64, f64)> {
        if self.method == Method::Exact {
            return Some((self.total, self.total));
        }
        let half = self.error? * t975(self.degrees);
        Some((self.total - half, self.total + half))
    }

    /// Whether the estimate can be relied on: exact, or from at least [`MIN_SAMPLED`]
    /// dispatches (two ranks) with a relative standard error of at most
    /// [`MAX_RELATIVE_ERROR`].
    pub fn reliable(&self) -> bool {
        let units = match self.method {
            Method::Exact => return true,
            Method::Dispatches => self.sampled >= MIN_SAMPLED,
            Method::Ranks => self.measuring_ranks >= 2,
        };
        units
            && self.error.is_some_and(|e| {
                e == 0.0 || (self.total != 0.0 && e / self.total.abs() <= MAX_RELATIVE_ERROR)
            })
    }
}

/// The 97.5% quantile of Student's t with `degrees` degrees of freedom (0: not defined, the
/// normal's is returned but no interval uses it).
pub fn t975(degrees: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match degrees {
        0 => 1.96,
        1..=30 => TABLE[degrees as usize - 1],
        // Within 0.002 of the exact quantile from 31 degrees of freedom on.
        d => 1.96 + 2.5 / d as f64,
    }
}

/// The runs (ranks) that collected the same counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankGroup {
    /// From 1, in order of the first rank.
    pub group: u32,
    /// The counters its ranks collected.
    pub counters: Vec<String>,
    /// The inputs (0-based, in `rtl-pmc merge`'s order) that collected them.
    pub ranks: Vec<u32>,
}

/// One kernel's duration (or a counter collected in several passes, such as an `--anchor`) in
/// one pass, against the first pass that has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// Kernel name.
    pub kernel: String,
    /// `duration_ns`, or the counter's name.
    pub quantity: String,
    /// Pass number.
    pub pass: u32,
    /// Dispatches of the kernel matched in every pass.
    pub dispatches: u64,
    /// Their total in this pass.
    pub total: f64,
    /// `(this pass − first pass) / first pass`.
    pub relative: f64,
}

/// Every estimate of a profile, the rank groups of a merged spatially multiplexed job, and the
/// drift between passes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimates {
    /// Per stratum and counter, in stratum then counter order.
    pub estimates: Vec<Estimate>,
    /// Groups of ranks by what they collected (empty for a single run).
    pub rank_groups: Vec<RankGroup>,
    /// Per kernel and pass (empty with one pass).
    pub drift: Vec<Drift>,
    /// Each GPU's architecture by KFD node, when the profile holds more than one.
    pub arch_of: HashMap<u32, String>,
    /// The architecture of every GPU, when the profile holds only one.
    pub arch: String,
}

const SCHEMA: &str = "
DROP TABLE IF EXISTS rtl_estimate;
DROP TABLE IF EXISTS rtl_rank_group;
DROP TABLE IF EXISTS rtl_drift;
CREATE TABLE rtl_estimate(
  kernel TEXT NOT NULL, grid_size INTEGER NOT NULL, workgroup_size INTEGER NOT NULL,
  grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
  workgroup_x INTEGER NOT NULL, workgroup_y INTEGER NOT NULL, workgroup_z INTEGER NOT NULL,
  counter TEXT NOT NULL, dispatches INTEGER NOT NULL, sampled INTEGER NOT NULL,
  coverage REAL NOT NULL, ranks INTEGER NOT NULL, measuring_ranks INTEGER NOT NULL,
  mean REAL NOT NULL, total REAL NOT NULL, error REAL, low95 REAL, high95 REAL,
  method TEXT NOT NULL, reliable INTEGER NOT NULL, impossible TEXT, arch TEXT NOT NULL);
CREATE TABLE rtl_rank_group(grp INTEGER NOT NULL, counters TEXT NOT NULL,
  ranks INTEGER NOT NULL, inputs TEXT NOT NULL);
CREATE TABLE rtl_drift(kernel TEXT NOT NULL, quantity TEXT NOT NULL, pass INTEGER NOT NULL,
  dispatches INTEGER NOT NULL, total REAL NOT NULL, relative REAL NOT NULL,
  drifting INTEGER NOT NULL);
";

/// The SQL of the `gfx_target_version` of the GPU whose node is in column `agent`.
const ARCH_OF_AGENT: &str = "coalesce((SELECT CAST(json_extract(a.properties, '$.gfx_target_version')      AS INTEGER) FROM rtl_agent a WHERE a.node_id = agent), 0)";

impl Estimates {
    /// Computes every estimate from `db` and keeps them in its `rtl_*` tables.
    pub fn compute(db: &Database) -> Result<Estimates, DatabaseError> {
        Estimates::compute_from(db, db.sampled())
    }

    /// [`Estimates::compute`] from every value read back from the database, as it is done
    /// when the moments gathered on the way in cannot be used.
    #[cfg(test)]
    pub fn read_back(db: &Database) -> Result<Estimates, DatabaseError> {
        Estimates::compute_from(db, None)
    }

    /// [`Estimates::compute`] with the moments gathered on the way in, if any.
    fn compute_from(db: &Database, sampled: Option<&Sampled>) -> Result<Estimates, DatabaseError> {
        // The drift between passes reads each merged dispatch's rows, unless the moments
        // gathered on the way in give it.
        let from_moments = db.with_connection(|conn| drift_from_moments(conn, sampled))?;
        if !from_moments {
            db.index_merged()?;
        }
        let values = db.values_table();
        let estimates = db.with_connection(|conn| {
            let (estimates, rank_groups) = estimate(conn, values, sampled)?;
            let (arch_of, arch) = architectures(conn)?;
            let estimates = Estimates {
                estimates,
                rank_groups,
                drift: drift(conn, values, sampled, from_moments)?,
                arch_of,
                arch,
            };
            estimates.store(conn)?;
            Ok(estimates)
        })?;
        Ok(estimates)
    }

    fn store(&self, conn: &Connection) -> rusqlite::Result<()> {
        conn.execute_batch(SCHEMA)?;
        let mut insert = conn.prepare(
            "INSERT INTO rtl_estimate VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,
             ?15,?16,?17,?18,?19,?20,?21,?22,?23,?24)",
        )?;
        for e in &self.estimates {
            let s = &e.stratum;
            let size = |v: [u32; 3]| v.iter().map(|&x| i64::from(x)).product::<i64>();
            let interval = e.interval();
            insert.execute(rusqlite::params![
                s.kernel,
                size(s.grid),
                size(s.workgroup),
                s.grid[0],
                s.grid[1],
                s.grid[2],
                s.workgroup[0],
                s.workgroup[1],
                s.workgroup[2],
                e.counter,
                e.dispatches as i64,
                e.sampled as i64,
                e.coverage(),
                e.ranks as i64,
                e.measuring_ranks as i64,
                e.mean,
                e.total,
                e.error,
                interval.map(|i| i.0),
                interval.map(|i| i.1),
                e.method.name(),
                e.reliable(),
                e.impossible,
                match s.arch.is_empty() {
                    true => &self.arch,
                    false => &s.arch,
                },
            ])?;
        }
        let mut insert = conn.prepare("INSERT INTO rtl_rank_group VALUES (?1, ?2, ?3, ?4)")?;
        for g in &self.rank_groups {
            let inputs: Vec<String> = g.ranks.iter().map(u32::to_string).collect();
            insert.execute(rusqlite::params![
                g.group,
                g.counters.join(" "),
                g.ranks.len() as i64,
                inputs.join(" ")
            ])?;
        }
        let mut insert =
            conn.prepare("INSERT INTO rtl_drift VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
        let drifting = self.drifting_kernels();
        for d in &self.drift {
            insert.execute(rusqlite::params![
                d.kernel,
                d.quantity,
                d.pass,
                d.dispatches as i64,
                d.total,
                d.relative,
                drifting.iter().any(|(k, _)| *k == d.kernel),
            ])?;
        }
        Ok(())
    }

    /// The counters not measured on every dispatch of some stratum, in estimate order.
    fn sampled_counters(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for e in self.estimates.iter().filter(|e| e.method != Method::Exact) {
            if !names.contains(&e.counter.as_str()) {
                names.push(&e.counter);
            }
        }
        names
    }

    /// Kernels whose duration (or a counter collected in several passes, such as an anchor) in
    /// some pass differs from the first pass's by more than [`DRIFT_THRESHOLD`], each with the
    /// first difference found: the duration's when it is one, in the earliest pass.
    pub fn drifting_kernels(&self) -> Vec<(String, &Drift)> {
        let mut out: Vec<(String, &Drift)> = Vec::new();
        for d in self
            .drift
            .iter()
            .filter(|d| d.relative.abs() > DRIFT_THRESHOLD)
        {
            if !out.iter().any(|(k, _)| *k == d.kernel) {
                out.push((d.kernel.clone(), d));
            }
        }
        out
    }

    /// The warnings a run prints: kernels that drift between passes, values that cannot be
    /// true.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let drifting = self.drifting_kernels();
        if !drifting.is_empty() {
            let list: Vec<String> = drifting
                .iter()
                .map(|(k, d)| {
                    format!(
                        "{k} ({} {:+.1}% in pass {})",
                        d.quantity,
                        100.0 * d.relative,
                        d.pass
                    )
                })
                .collect();
            out.push(format!(
                "passes disagree by more than {}% of the first pass for {}: counters of different \
                 passes (and ratios built from them) describe different executions of these \
                 kernels",
                100.0 * DRIFT_THRESHOLD,
                list.join(", "),
            ));
        }
        if let Some(unmeasured) = self.unmeasured() {
            out.push(unmeasured);
        }
        for e in &self.estimates {
            if let Some(why) = &e.impossible {
                out.push(format!(
                    "{} of {} cannot be true: {why} (reported as measured, not clamped)",
                    e.counter,
                    e.stratum.label()
                ));
            }
        }
        out
    }

    /// The warning for counters measured in some strata and never in others: there they are
    /// neither measured nor estimated.
    fn unmeasured(&self) -> Option<String> {
        let mut counters: Vec<&str> = Vec::new();
        let mut strata: Vec<(String, u64, Vec<&str>)> = Vec::new();
        for e in &self.estimates {
            if !counters.contains(&e.counter.as_str()) {
                counters.push(&e.counter);
            }
            let label = e.stratum.label();
            match strata.iter_mut().find(|s| s.0 == label) {
                Some(s) => s.2.push(&e.counter),
                None => strata.push((label, e.dispatches, vec![e.counter.as_str()])),
            }
        }
        let missing: Vec<String> = strata
            .iter()
            .filter_map(|(label, dispatches, have)| {
                let lacking: Vec<&str> = counters
                    .iter()
                    .filter(|c| !have.contains(c))
                    .copied()
                    .collect();
                (!lacking.is_empty())
                    .then(|| format!("{label} ({dispatches} dispatches): {}", lacking.join(" ")))
            })
            .collect();
        // In a merge of several GPU models, a counter measured only on another architecture.
        let elsewhere = match self.arch_of.is_empty() {
            true => "",
            false => ", or only inputs on another architecture measured them",
        };
        (!missing.is_empty()).then(|| {
            format!(
                "counters never measured on any dispatch of these kernels, so neither measured \
                 nor estimated there: {}; pmc_groups rotating in step with the order the \
                 application launches its kernels (choose another pmc_group_interval) or passes \
                 that never reached them do this{elsewhere}",
                missing.join("; ")
            )
        })
    }

    /// The extra `results.csv` columns, by stratum and counter.
    pub fn per_dispatch(&self) -> PerDispatch {
        let counters: Vec<String> = self
            .sampled_counters()
            .iter()
            .map(|c| c.to_string())
            .collect();
        let mut by: HashMap<(Stratum, String), (f64, Option<f64>)> = HashMap::new();
        for e in &self.estimates {
            let error = e
                .spread
                .map(|s| s * (1.0 + 1.0 / e.sampled.max(1) as f64).sqrt());
            by.insert((e.stratum.clone(), e.counter.clone()), (e.mean, error));
        }
        PerDispatch {
            counters,
            by,
            arch_of: self.arch_of.clone(),
        }
    }

    /// rtl-pmc's additions to `results.json`: `estimates`, `rank_groups` and `drift`.
    pub fn json(&self) -> Value {
        let estimates: Vec<Value> = self
            .estimates
            .iter()
            .map(|e| {
                let interval = e.interval();
                let mut estimate = json!({
                    "kernel": e.stratum.kernel,
                    "grid": e.stratum.grid,
                    "workgroup": e.stratum.workgroup,
                    "counter": e.counter,
                    "dispatches": e.dispatches,
                    "sampled": e.sampled,
                    "coverage": e.coverage(),
                    "ranks": e.ranks,
                    "measuring_ranks": e.measuring_ranks,
                    "mean": e.mean,
                    "total": e.total,
                    "error": e.error,
                    "low95": interval.map(|i| i.0),
                    "high95": interval.map(|i| i.1),
                    "method": e.method.name(),
                    "reliable": e.reliable(),
                    "impossible": e.impossible,
                });
                if !e.stratum.arch.is_empty() {
                    estimate["arch"] = Value::from(e.stratum.arch.as_str());
                }
                estimate
            })
            .collect();
        let groups: Vec<Value> = self
            .rank_groups
            .iter()
            .map(|g| json!({"group": g.group, "counters": g.counters, "ranks": g.ranks}))
            .collect();
        let drifting = self.drifting_kernels();
        let drift: Vec<Value> = self
            .drift
            .iter()
            .map(|d| {
                json!({
                    "kernel": d.kernel,
                    "quantity": d.quantity,
                    "pass": d.pass,
                    "dispatches": d.dispatches,
                    "total": d.total,
                    "relative": d.relative,
                    "drifting": drifting.iter().any(|(k, _)| *k == d.kernel),
                })
            })
            .collect();
        json!({
            "estimates": estimates,
            "rank_groups": groups,
            "drift": drift,
            "thresholds": {
                "min_sampled": MIN_SAMPLED,
                "max_relative_error": MAX_RELATIVE_ERROR,
                "drift": DRIFT_THRESHOLD,
            },
        })
    }

    /// The summary's lines: estimates of counters not measured on every dispatch of the `top`
    /// kernels the summary lists (by total time in `db`), values that cannot be true, rank
    /// groups and drifting kernels (nothing when everything was measured).
    pub fn summary(&self, db: &Database, top: usize) -> Result<String, DatabaseError> {
        let kernels: Vec<String> = db.top(top)?.into_iter().map(|k| k.kernel).collect();
        let mut out = String::new();
        let shown: Vec<&Estimate> = self
            .estimates
            .iter()
            .filter(|e| {
                (e.method != Method::Exact && kernels.contains(&e.stratum.kernel))
                    || e.impossible.is_some()
            })
            .collect();
        if !shown.is_empty() {
            let _ = writeln!(
                out,
                "rtl-pmc: estimated totals (± 95% interval; * unreliable: fewer than {MIN_SAMPLED} \
                 dispatches or 2 ranks measured, or error above {}%; ! cannot be true)",
                100.0 * MAX_RELATIVE_ERROR
            );
        }
        for e in shown {
            // A derived counter's mean per dispatch, with the interval scaled alike.
            let (value, per, scale) = match e.derived {
                true => (e.mean, " per dispatch", 1.0 / e.dispatches.max(1) as f64),
                false => (e.total, "", 1.0),
            };
            let half = match (e.interval(), e.method) {
                (_, Method::Exact) => "exact".to_string(),
                (Some((low, _)), _) => format!("± {}", significant((e.total - low) * scale)),
                (None, _) => "± ?".to_string(),
            };
            let ranks = match e.method {
                Method::Ranks => format!(", {} of {} ranks", e.measuring_ranks, e.ranks),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {}  {} = {}{per} {half}  ({} of {} dispatches{ranks}){}{}",
                e.stratum.label(),
                e.counter,
                significant(value),
                e.sampled,
                e.dispatches,
                if e.reliable() { "" } else { " *" },
                e.impossible
                    .as_ref()
                    .map_or(String::new(), |why| format!(" ! {why}")),
            );
        }
        if !self.rank_groups.is_empty() {
            let list: Vec<String> = self
                .rank_groups
                .iter()
                .map(|g| {
                    format!(
                        "group {} ({}): {} rank{}",
                        g.group,
                        g.counters.join(" "),
                        g.ranks.len(),
                        if g.ranks.len() == 1 { "" } else { "s" }
                    )
                })
                .collect();
            let _ = writeln!(out, "rtl-pmc: ranks per counter group: {}", list.join("; "));
        }
        for (kernel, d) in self.drifting_kernels() {
            let _ = writeln!(
                out,
                "rtl-pmc: {kernel}: {} {:+.1}% in pass {} against the first pass (threshold {}%): ratios across passes unsafe",
                d.quantity,
                100.0 * d.relative,
                d.pass,
                100.0 * DRIFT_THRESHOLD
            );
        }
        Ok(out)
    }
}

/// A value with four significant digits (integers as they are).
fn significant(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    let digits = (4 - 1 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{v:.digits$}")
}

/// The stratum means and per-dispatch errors the extra `results.csv` columns print.
#[derive(Debug, Clone, Default)]
pub struct PerDispatch {
    counters: Vec<String>,
    by: HashMap<(Stratum, String), (f64, Option<f64>)>,
    arch_of: HashMap<u32, String>,
}

impl EstimateColumns for PerDispatch {
    /// `<COUNTER>_estimate` and `<COUNTER>_error` for every counter not measured on every
    /// dispatch of some stratum.
    fn columns(&self) -> Vec<String> {
        self.counters
            .iter()
            .flat_map(|c| [format!("{c}_estimate"), format!("{c}_error")])
            .collect()
    }

    /// Appends `,estimate,error` for each column counter of `d`: the measured value and 0 where
    /// it was measured; else the stratum's mean and the spread of one dispatch about it
    /// (`s·sqrt(1 + 1/n)`), or `None` where no dispatch of the stratum measured it.
    fn push_fields(&self, line: &mut Vec<u8>, d: &Dispatch) {
        // Made for the first counter the dispatch lacks.
        let mut stratum = None;
        for name in &self.counters {
            line.push(b',');
            if let Some(c) = d.counters.iter().find(|c| &c.name == name) {
                push_value(line, c.total);
                line.extend_from_slice(b",0");
                continue;
            }
            let stratum = stratum.get_or_insert_with(|| Stratum::of(d, &self.arch_of));
            match self.by.get(&(stratum.clone(), name.clone())) {
                Some((mean, error)) => {
                    push_value(line, *mean);
                    line.push(b',');
                    match error {
                        Some(e) => push_value(line, *e),
                        None => line.extend_from_slice(crate::model::MISSING.as_bytes()),
                    }
                }
                None => {
                    line.extend_from_slice(crate::model::MISSING.as_bytes());
                    line.push(b',');
                    line.extend_from_slice(crate::model::MISSING.as_bytes());
                }
            }
        }
    }
}

/// Per run (input source), stratum and counter: the measured values' moments; per run and
/// stratum: its dispatches.
fn estimate(
    conn: &Connection,
    values: &str,
    sampled: Option<&Sampled>,
) -> rusqlite::Result<(Vec<Estimate>, Vec<RankGroup>)> {
    let mut names: HashMap<i64, String> = HashMap::new();
    let mut stmt = conn.prepare("SELECT id, string FROM rtl_string")?;
    for row in stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))? {
        let (id, name) = row?;
        names.insert(id, name);
    }
    // gfx_target_version -> architecture, when the GPUs are of more than one.
    let mut arch_names: HashMap<u32, String> = HashMap::new();
    let mut stmt = conn.prepare(
        "SELECT DISTINCT coalesce(CAST(json_extract(properties, '$.gfx_target_version')
                                       AS INTEGER), 0), name
         FROM rtl_agent WHERE cpu = 0",
    )?;
    for row in stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))? {
        let (version, name) = row?;
        arch_names.insert(version, name);
    }
    if arch_names.values().collect::<BTreeSet<_>>().len() < 2 {
        arch_names.clear();
    }
    // Counter id -> (name, possible range).
    let mut counters: CounterRanges = FastMap::default();
    let mut stmt = conn.prepare("SELECT id, name, derived, unit, description FROM rtl_counter")?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, bool>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
        ))
    })? {
        let (id, name, derived, unit, description) = row?;
        counters.insert(id, (name, derived, Range::of(derived, &unit, &description)));
    }
    let key_of = |r: &rusqlite::Row<'_>, at: usize| -> rusqlite::Result<StratumKey> {
        let mut config = [0u32; 7];
        for (i, c) in config.iter_mut().enumerate() {
            *c = r.get(at + 1 + i)?;
        }
        Ok((r.get(at)?, config))
    };
    // (source, stratum) -> dispatches.
    // As counted on the way in, or from the database.
    let mut population: BTreeMap<(StratumKey, i64), u64> = BTreeMap::new();
    match sampled.and_then(|s| s.population.as_ref()) {
        Some(counted) => population.extend(counted.iter().map(|(&key, &n)| (key, n))),
        None => {
            let mut stmt = conn.prepare(&format!(
                "SELECT source, kernel_id, grid_x, grid_y, grid_z, workgroup_x, workgroup_y,
                        workgroup_z, {ARCH_OF_AGENT} AS arch, count(*)
                 FROM rtl_merged_dispatch
                 GROUP BY source, kernel_id, grid_x, grid_y, grid_z, workgroup_x, workgroup_y,
                          workgroup_z, arch"
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                population.insert((key_of(r, 1)?, r.get(0)?), r.get::<_, i64>(9)? as u64);
            }
        }
    }
    // (stratum, counter, source) -> moments: as gathered on the way in, or read back.
    let cells = match sampled.and_then(|s| s.cells(&counters)) {
        Some(cells) => cells,
        None => read_cells(conn, values, &counters, key_of)?,
    };
    let samples: BTreeMap<(StratumKey, i64, i64), Moments> = cells
        .into_iter()
        .flat_map(|((stratum, source), per_counter)| {
            per_counter
                .into_iter()
                .map(move |(pmc, m, _)| ((stratum, pmc, source), m))
        })
        .collect();
    let groups = rank_groups(&samples, &counters);
    let mut out = Vec::new();
    let mut at = samples.iter().peekable();
    while let Some((&(stratum, pmc, _), _)) = at.peek() {
        let mut per_source: Vec<(i64, Moments)> = Vec::new();
        while let Some((&(s, p, source), m)) = at.peek() {
            if s != stratum || p != pmc {
                break;
            }
            per_source.push((source, **m));
            at.next();
        }
        let sources: Vec<(i64, u64)> = population
            .range((stratum, i64::MIN)..=(stratum, i64::MAX))
            .map(|(&(_, source), &n)| (source, n))
            .collect();
        let (name, derived, range) =
            counters
                .get(&pmc)
                .cloned()
                .unwrap_or((String::new(), false, None));
        let (kernel, config) = stratum;
        let stratum = Stratum {
            kernel: names.get(&kernel).cloned().unwrap_or_default(),
            arch: arch_names.get(&config[6]).cloned().unwrap_or_default(),
            grid: [config[0], config[1], config[2]],
            workgroup: [config[3], config[4], config[5]],
        };
        out.push(Estimate {
            derived,
            ..combine(stratum, name, range, &sources, &per_source)
        });
    }
    out.sort_by(|a, b| a.stratum.cmp(&b.stratum));
    Ok((out, groups))
}

/// Each GPU's architecture by KFD node when the GPUs are of more than one (else none), and the
/// one architecture of them all (else empty).
fn architectures(conn: &Connection) -> rusqlite::Result<(HashMap<u32, String>, String)> {
    let mut stmt = conn.prepare("SELECT node_id, name FROM rtl_agent WHERE cpu = 0")?;
    let arch_of: HashMap<u32, String> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let distinct: BTreeSet<&String> = arch_of.values().collect();
    Ok(match distinct.len() {
        0 | 1 => {
            let arch = distinct.into_iter().next().cloned().unwrap_or_default();
            (HashMap::new(), arch)
        }
        _ => (arch_of, String::new()),
    })
}

/// Per stratum and run, each counter's moments, read back from the database: two cursors in
/// dispatch id order, as the tables are stored, so each dispatch's stratum is read once, then
/// its counters' values.
fn read_cells(
    conn: &Connection,
    values: &str,
    counters: &CounterRanges,
    key_of: impl Fn(&rusqlite::Row<'_>, usize) -> rusqlite::Result<StratumKey>,
) -> rusqlite::Result<FastMap<(StratumKey, i64), Vec<Cell>>> {
    let mut cells: FastMap<(StratumKey, i64), Vec<Cell>> = FastMap::default();
    let mut dispatches = conn.prepare(&format!(
        "SELECT id, source, kernel_id, grid_x, grid_y, grid_z, workgroup_x, workgroup_y,
                workgroup_z, {ARCH_OF_AGENT} FROM rtl_dispatch WHERE merged_id IS NOT NULL
         ORDER BY id"
    ))?;
    let mut values = conn.prepare(&format!(
        "SELECT k.id, v.pmc_id, v.value FROM rtl_dispatch k CROSS JOIN {values} v ON {}
         ORDER BY k.id, v.id",
        values_of("k", "v")
    ))?;
    let mut rows = dispatches.query([])?;
    let mut value_rows = values.query([])?;
    let next_value = |rows: &mut rusqlite::Rows<'_>| -> rusqlite::Result<Option<(i64, i64, f64)>> {
        Ok(match rows.next()? {
            Some(r) => Some((r.get(0)?, r.get(1)?, r.get(2)?)),
            None => None,
        })
    };
    let mut value = next_value(&mut value_rows)?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        while value.is_some_and(|(d, _, _)| d < id) {
            value = next_value(&mut value_rows)?;
        }
        if value.is_none_or(|(d, _, _)| d != id) {
            continue;
        }
        let cell = cells.entry((key_of(r, 2)?, r.get(1)?)).or_default();
        while let Some((_, pmc, v)) = value.filter(|(d, _, _)| *d == id) {
            // A dispatch's counters come in the same order each time: the next slot is
            // usually the one wanted.
            let at = match cell.iter().position(|(p, _, _)| *p == pmc) {
                Some(at) => at,
                None => {
                    let range = counters.get(&pmc).and_then(|c| c.2);
                    cell.push((pmc, Moments::default(), range));
                    cell.len() - 1
                }
            };
            let (_, moments, range) = &mut cell[at];
            moments.add(v);
            if let Some(range) = range {
                moments.outside += u64::from(!range.holds(v));
            }
            value = next_value(&mut value_rows)?;
        }
    }
    Ok(cells)
}

/// The variance of the estimated total `N·x̄` of a population of `big` from a sample of `small`
/// with sample variance `s2`: `N²·(1 − n/N)·s²/n`.
fn sampling_variance(big: f64, small: f64, s2: f64) -> f64 {
    big * big * (1.0 - small / big) * s2 / small
}

/// One estimate from the dispatches of each run (`sources`: run, dispatches) and the moments of
/// the runs that measured the counter.
fn combine(
    stratum: Stratum,
    counter: String,
    range: Option<Range>,
    sources: &[(i64, u64)],
    measured: &[(i64, Moments)],
) -> Estimate {
    let dispatches_of = |source: i64| {
        sources
            .iter()
            .find(|(s, _)| *s == source)
            .map_or(0, |(_, n)| *n)
    };
    let population: u64 = sources.iter().map(|(_, n)| n).sum();
    let mut pooled = Moments::default();
    for (_, m) in measured {
        pooled.merge(m);
    }
    let ranks = sources.len() as u64;
    let measuring = measured.len() as u64;
    // Each measuring run's own estimate of its total and that estimate's variance.
    let own = |source: i64, m: &Moments| -> (f64, Option<f64>) {
        let big = dispatches_of(source).max(m.n) as f64;
        let small = m.n as f64;
        let variance = match m.variance() {
            _ if m.n as f64 >= big => Some(0.0),
            Some(s2) => Some(sampling_variance(big, small, s2)),
            None => None,
        };
        (m.total() * (big / small), variance)
    };
    let (total, variance, method, degrees) = if measuring == ranks || measuring == 1 {
        // Every run measured it (or only one did, and its dispatches stand for all): the
        // dispatches are the sample.
        if measuring == ranks {
            let mut total = 0.0;
            let mut variance = Some(0.0);
            for (source, m) in measured {
                let (t, v) = own(*source, m);
                total += t;
                variance = variance.zip(v).map(|(a, b)| a + b);
            }
            let method = if pooled.n >= population {
                Method::Exact
            } else {
                Method::Dispatches
            };
            (total, variance, method, pooled.n.saturating_sub(1))
        } else {
            let big = population as f64;
            let small = pooled.n as f64;
            let variance = pooled
                .variance()
                .map(|s2| sampling_variance(big, small, s2));
            (
                pooled.total() * (big / small),
                variance,
                Method::Dispatches,
                pooled.n.saturating_sub(1),
            )
        }
    } else {
        // Some runs measured it: the runs are the sample, a ratio estimate over their
        // dispatches with the spread of their totals about it, plus their own sampling error.
        let own: Vec<(f64, f64, Option<f64>)> = measured
            .iter()
            .map(|(source, m)| {
                let (t, v) = own(*source, m);
                (dispatches_of(*source).max(m.n) as f64, t, v)
            })
            .collect();
        let x: f64 = own.iter().map(|o| o.0).sum();
        let y: f64 = own.iter().map(|o| o.1).sum();
        let ratio = if x > 0.0 { y / x } else { 0.0 };
        let m = measuring as f64;
        let s2: f64 = own.iter().map(|o| (o.1 - ratio * o.0).powi(2)).sum::<f64>() / (m - 1.0);
        let mean_x = x / m;
        let big = population as f64;
        let between = big * big * (1.0 - m / ranks as f64) * s2 / (m * mean_x * mean_x);
        let within = own
            .iter()
            .map(|o| o.2)
            .sum::<Option<f64>>()
            .map(|w| w * (big / x).powi(2));
        (
            big * ratio,
            within.map(|w| between + w),
            Method::Ranks,
            measuring - 1,
        )
    };
    let mean = if population > 0 {
        total / population as f64
    } else {
        0.0
    };
    let impossible = range.and_then(|range| {
        if pooled.outside > 0 {
            Some(format!(
                "{} of {} measured dispatches outside {}",
                pooled.outside,
                pooled.n,
                range.text()
            ))
        } else if !range.holds(mean) {
            Some(format!(
                "estimated mean {} outside {}",
                significant(mean),
                range.text()
            ))
        } else {
            None
        }
    });
    Estimate {
        stratum,
        counter,
        derived: false,
        dispatches: population,
        sampled: pooled.n,
        ranks,
        measuring_ranks: measuring,
        mean,
        total,
        error: variance.map(|v| v.max(0.0).sqrt()),
        spread: pooled.variance().map(f64::sqrt),
        degrees,
        method,
        impossible,
    }
}

/// Runs grouped by the counters they reported, when there are several runs (`samples` by
/// stratum, counter and run; counter names in `counters`).
fn rank_groups(
    samples: &BTreeMap<(StratumKey, i64, i64), Moments>,
    counters: &FastMap<i64, (String, bool, Option<Range>)>,
) -> Vec<RankGroup> {
    let mut by_source: BTreeMap<u32, std::collections::BTreeSet<i64>> = BTreeMap::new();
    for &(_, pmc, source) in samples.keys() {
        by_source.entry(source as u32).or_default().insert(pmc);
    }
    if by_source.len() < 2 {
        return Vec::new();
    }
    let mut groups: Vec<RankGroup> = Vec::new();
    for (source, ids) in by_source {
        let names: Vec<String> = ids
            .iter()
            .map(|id| counters.get(id).map_or(String::new(), |c| c.0.clone()))
            .collect();
        match groups.iter_mut().find(|g| g.counters == names) {
            Some(g) => g.ranks.push(source),
            None => groups.push(RankGroup {
                group: groups.len() as u32 + 1,
                counters: names,
                ranks: vec![source],
            }),
        }
    }
    groups
}

/// How many passes the profile has.
fn passes(conn: &Connection, sampled: Option<&Sampled>) -> rusqlite::Result<i64> {
    match sampled {
        Some(s) => Ok(s
            .durations
            .keys()
            .map(|k| k.1)
            .collect::<BTreeSet<u32>>()
            .len() as i64),
        None => conn.query_row("SELECT count(DISTINCT pass) FROM rtl_dispatch", [], |r| {
            r.get(0)
        }),
    }
}

/// Whether the drift between passes comes from the moments gathered on the way in: with every
/// merged dispatch in every pass, the durations are those of every dispatch, summed on the way
/// in; without a repeated value no counter is in several passes. Otherwise it reads each merged
/// dispatch's rows.
fn drift_from_moments(conn: &Connection, sampled: Option<&Sampled>) -> rusqlite::Result<bool> {
    let Some(s) = sampled else {
        return Ok(false);
    };
    if s.durations.is_empty() {
        return Ok(false);
    }
    let incomplete: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM rtl_merged_dispatch WHERE passes != ?1)",
        [passes(conn, sampled)?],
        |r| r.get(0),
    )?;
    Ok(!incomplete)
}

/// Each kernel's total duration per pass, and the totals of counters collected in more than
/// one pass, over its dispatches matched in every pass, against the first pass; from the
/// moments gathered on the way in when `from_moments` (see [`drift_from_moments`]).
fn drift(
    conn: &Connection,
    values: &str,
    sampled: Option<&Sampled>,
    from_moments: bool,
) -> rusqlite::Result<Vec<Drift>> {
    let passes = passes(conn, sampled)?;
    if passes < 2 {
        return Ok(Vec::new());
    }
    let sampled = sampled.filter(|_| from_moments);
    if let Some(sampled) = sampled {
        let mut names: HashMap<i64, String> = HashMap::new();
        let mut stmt = conn.prepare("SELECT id, string FROM rtl_string")?;
        for row in stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))? {
            let (id, name) = row?;
            names.insert(id, name);
        }
        let mut rows: Vec<Drift> = sampled
            .durations
            .iter()
            .map(|(&(kernel, pass), &(dispatches, total))| Drift {
                kernel: names.get(&kernel).cloned().unwrap_or_default(),
                quantity: "duration_ns".into(),
                pass,
                dispatches,
                total: total as f64,
                relative: 0.0,
            })
            .collect();
        rows.sort_by(|a, b| (&a.kernel, a.pass).cmp(&(&b.kernel, b.pass)));
        return Ok(relative_to_first(rows));
    }
    // A value that is not reported repeats an earlier pass's: its counter is in several passes.
    let mut stmt = conn.prepare(&format!(
        "SELECT * FROM (
         SELECT s.string AS kernel, 'duration_ns' AS quantity, k.pass AS pass,
                count(*) AS dispatches, sum(k.end_ns - k.start_ns) AS total
         FROM rtl_merged_dispatch m CROSS JOIN rtl_dispatch k ON k.merged_id = m.id
         JOIN rtl_string s ON s.id = k.kernel_id
         WHERE m.passes = ?1
         GROUP BY s.string, k.pass
         UNION ALL
         SELECT kernel, counter, pass, count(*), sum(value) FROM (
           SELECT s.string AS kernel, p.name AS counter, k.pass AS pass, coalesce(
               (SELECT v.value FROM {values} v WHERE {range} AND +v.pmc_id = p.id),
               (SELECT r.value FROM rtl_pmc_repeat r
                WHERE r.dispatch_id = k.id AND r.pmc_id = p.id)) AS value
           FROM rtl_merged_dispatch m CROSS JOIN rtl_dispatch k ON k.merged_id = m.id
           JOIN rtl_string s ON s.id = k.kernel_id
           CROSS JOIN rtl_counter p ON p.id IN (SELECT pmc_id FROM rtl_pmc_repeat)
           WHERE m.passes = ?1)
         WHERE value IS NOT NULL
         GROUP BY kernel, counter, pass)
         ORDER BY kernel, quantity != 'duration_ns', quantity, pass",
        range = values_of("k", "v"),
    ))?;
    let rows = stmt.query_map([passes], |r| {
        Ok(Drift {
            kernel: r.get(0)?,
            quantity: r.get(1)?,
            pass: r.get(2)?,
            dispatches: r.get::<_, i64>(3)? as u64,
            total: r.get(4)?,
            relative: 0.0,
        })
    })?;
    Ok(relative_to_first(rows.collect::<Result<_, _>>()?))
}

/// `rows` (in kernel, quantity and pass order) with each one's difference relative to the
/// first pass of its kernel and quantity.
fn relative_to_first(rows: Vec<Drift>) -> Vec<Drift> {
    let mut out: Vec<Drift> = Vec::new();
    for mut d in rows {
        let base = match out.last() {
            Some(first) if first.kernel == d.kernel && first.quantity == d.quantity => out
                .iter()
                .rev()
                .take_while(|o| o.kernel == d.kernel && o.quantity == d.quantity)
                .last()
                .map_or(d.total, |o| o.total),
            _ => d.total,
        };
        d.relative = if base != 0.0 {
            (d.total - base) / base
        } else {
            0.0
        };
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(values: &[f64]) -> Moments {
        let mut m = Moments::default();
        for &v in values {
            m.add(v);
        }
        m
    }

    fn stratum() -> Stratum {
        Stratum {
            kernel: "k".into(),
            arch: String::new(),
            grid: [64, 1, 1],
            workgroup: [64, 1, 1],
        }
    }

    #[test]
    fn sampled_dispatches_give_the_finite_population_estimate() {
        // N = 8, sampled 2, 4, 6, 8: mean 5, s² = 20/3, total 40,
        // error = 8·sqrt((1 − 4/8)·(20/3)/4) = 8·sqrt(5/6).
        let m = moments(&[2.0, 4.0, 6.0, 8.0]);
        let e = combine(stratum(), "C".into(), None, &[(0, 8)], &[(0, m)]);
        assert_eq!(e.method, Method::Dispatches);
        assert_eq!(e.total, 40.0);
        assert!((e.error.unwrap() - 8.0 * (5.0f64 / 6.0).sqrt()).abs() < 1e-12);
        assert_eq!(e.coverage(), 0.5);
        assert_eq!(e.degrees, 3);
        let (low, high) = e.interval().unwrap();
        assert!((high - 40.0 - 3.182 * e.error.unwrap()).abs() < 1e-9 && low < 40.0);
        assert!(!e.reliable(), "4 dispatches are fewer than {MIN_SAMPLED}");
    }

    #[test]
    fn every_dispatch_measured_is_exact() {
        let m = moments(&[1.0, 5.0, 9.0]);
        let e = combine(stratum(), "C".into(), None, &[(0, 3)], &[(0, m)]);
        assert_eq!(
            (e.method, e.total, e.error),
            (Method::Exact, 15.0, Some(0.0))
        );
        assert_eq!(e.interval(), Some((15.0, 15.0)));
        assert!(e.reliable());
    }

    #[test]
    fn one_measured_dispatch_of_many_has_no_error() {
        let e = combine(
            stratum(),
            "C".into(),
            None,
            &[(0, 4)],
            &[(0, moments(&[3.0]))],
        );
        assert_eq!((e.total, e.error, e.interval()), (12.0, None, None));
        assert!(!e.reliable());
    }

    #[test]
    fn ranks_that_measured_stand_for_those_that_did_not() {
        // Four ranks of 10 dispatches; ranks 0 and 2 measured every dispatch, totals 100 and
        // 140: ratio 12 per dispatch, total 480; d = (−20, 20), s² = 800,
        // error = 40·sqrt((1 − 2/4)·800/2)/10 = 4·sqrt(200).
        let sources = [(0, 10), (1, 10), (2, 10), (3, 10)];
        let measured = [(0, moments(&[10.0; 10])), (2, moments(&[14.0; 10]))];
        let e = combine(stratum(), "C".into(), None, &sources, &measured);
        assert_eq!((e.method, e.total), (Method::Ranks, 480.0));
        assert!((e.error.unwrap() - 4.0 * 200f64.sqrt()).abs() < 1e-9);
        assert_eq!((e.ranks, e.measuring_ranks, e.degrees), (4, 2, 1));
    }

    #[test]
    fn impossible_values_are_flagged_not_clamped() {
        let range = Range::of(true, "percent", "");
        let e = combine(
            stratum(),
            "P".into(),
            range,
            &[(0, 2)],
            &[(0, {
                let mut m = moments(&[150.0, 50.0]);
                m.outside = 1;
                m
            })],
        );
        assert_eq!(e.total, 200.0);
        assert_eq!(
            e.impossible.as_deref(),
            Some("1 of 2 measured dispatches outside 0–100")
        );
        assert_eq!(Range::of(true, "", "Ratio"), None);
        assert!(!Range::of(false, "", "").unwrap().holds(-1.0));
        assert!(Range::of(true, "", "Percentage of cycles").is_some());
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(30), 2.042);
        assert!((t975(60) - 2.000).abs() < 0.002);
    }
}
