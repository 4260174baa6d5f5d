//! `results.html`: a report of a profile to open in a web browser, self-contained (inline
//! CSS and SVG, nothing fetched when it is viewed). It shows the kernels by time, each
//! kernel's speed-of-light against the GPU's peaks, a memory chart of its counters and a
//! roofline with one point per kernel.
//!
//! The report is built from the merged profile ([`Report::build`]) into plain data, which
//! [`html`] renders.

mod html;
mod kernel_metrics;
pub mod peaks;
mod roofline;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use peaks::Peaks;
use rtl_pmc_profile::files::atomic::AtomicFile;
use rtl_pmc_profile::files::OutputError;
use rtl_pmc_profile::store::database::{Database, DatabaseError};
use rtl_pmc_profile::store::estimates::{Estimates, Method};

/// One GPU of the profile with its peaks.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    /// KFD node id.
    pub node: u32,
    /// gfx target.
    pub arch: String,
    /// Marketing name, empty when unknown.
    pub product: String,
    /// Peak rates.
    pub peaks: Peaks,
}

/// A value that was estimated rather than measured on every dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct Uncertainty {
    /// Half the 95% interval, `None` when the sample cannot tell.
    pub half_interval: Option<f64>,
    /// Dispatches on which it was measured.
    pub sampled: u64,
    /// Dispatches of the kernel.
    pub dispatches: u64,
    /// Whether the estimate can be relied on.
    pub reliable: bool,
}

/// One counter of one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterValue {
    /// Counter name.
    pub name: String,
    /// Total over the kernel's dispatches; for a derived counter, recomputed from its summed
    /// inputs (estimated: the mean per dispatch).
    pub value: f64,
    /// Unit from the catalog, empty for none.
    pub unit: String,
    /// Set when the value is an estimate.
    pub estimate: Option<Uncertainty>,
}

/// One kernel and its counters.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// Kernel name.
    pub name: String,
    /// Dispatches.
    pub calls: u64,
    /// Total time, ns.
    pub total_ns: u64,
    /// Average time per dispatch, ns.
    pub average_ns: f64,
    /// Share of all kernel time, percent.
    pub percent: f64,
    /// Counters in the profile's counter order.
    pub counters: Vec<CounterValue>,
    /// rocprof-compute's panel tables evaluated for this kernel (its speed-of-light), when the
    /// report comes from `rtl-pmc analyze`.
    pub panels: Vec<panels::EvaluatedTable>,
}

impl Kernel {
    /// The counter `name`, if the kernel has it.
    pub fn counter(&self, name: &str) -> Option<&CounterValue> {
        self.counters.iter().find(|c| c.name == name)
    }
}

/// Everything the report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The profiled command line, empty when unknown.
    pub command: String,
    /// The GPUs, by node.
    pub gpus: Vec<Gpu>,
    /// Kernels by total time, longest first.
    pub kernels: Vec<Kernel>,
}

impl Report {
    /// The report of the profile in `db` with its `estimates`. `db` must be the handle the
    /// dispatches were inserted through (it keeps the per-kernel totals).
    pub fn build(db: &Database, estimates: &Estimates) -> Result<Report, DatabaseError> {
        let gpus = db
            .agents()?
            .iter()
            .map(|a| Gpu {
                node: a.node_id,
                arch: a.name.clone(),
                product: a.product_name.clone(),
                peaks: Peaks::of(a),
            })
            .collect();
        let mut kernels = Vec::new();
        for top in db.top(usize::MAX)? {
            let counters = db
                .kernel_counters(&top.kernel)?
                .into_iter()
                .map(|c| {
                    let estimated = estimated(estimates, &top.kernel, &c.name);
                    CounterValue {
                        value: estimated.as_ref().map_or(c.value, |e| e.0),
                        estimate: estimated.map(|e| e.1),
                        name: c.name,
                        unit: c.unit,
                    }
                })
                .collect();
            kernels.push(Kernel {
                name: top.kernel,
                calls: top.calls,
                total_ns: top.total_ns,
                average_ns: top.average_ns,
                percent: top.percent,
                counters,
                panels: Vec::new(),
            });
        }
        let run = db.run_info()?;
        Ok(Report {
            command: run.command.join(" "),
            gpus,
            kernels,
        })
    }
}

impl Report {
    /// The report of what `rtl-pmc analyze --html` read: each kernel's speed-of-light is
    /// rocprof-compute's panel 2.1, and the peaks come from the constants `analyze` used.
    pub fn from_analysis(input: &rtl_pmc_cli::analyze::ReportInput) -> Report {
        let all: f64 = input.kernels.iter().map(|k| k.total_ns).sum();
        let mut kernels: Vec<Kernel> = input
            .kernels
            .iter()
            .map(|k| Kernel {
                name: k.name.clone(),
                calls: k.dispatches as u64,
                total_ns: k.total_ns as u64,
                average_ns: k.total_ns / k.dispatches.max(1) as f64,
                percent: match all > 0.0 {
                    true => 100.0 * k.total_ns / all,
                    false => 0.0,
                },
                counters: k
                    .counters
                    .iter()
                    .map(|(name, value, unit)| CounterValue {
                        name: name.clone(),
                        value: *value,
                        unit: unit.clone(),
                        estimate: None,
                    })
                    .collect(),
                panels: k.speed_of_light.iter().cloned().collect(),
            })
            .collect();
        kernels.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.name.cmp(&b.name))
        });
        let gpus = input
            .gpus
            .iter()
            .enumerate()
            .map(|(i, gpu)| Gpu {
                node: i as u32,
                arch: gpu.arch.clone(),
                product: gpu.label.clone(),
                peaks: Peaks::of_constants(&gpu.arch, &gpu.label, &gpu.constants),
            })
            .collect();
        Report {
            command: format!("rtl-pmc analyze {}", input.dir.display()),
            gpus,
            kernels,
        }
    }
}

/// The estimate of `counter` in `kernel` when some dispatch of it did not measure the counter:
/// the total over the kernel's launch configurations (a derived counter's mean per dispatch)
/// and its uncertainty, the intervals of the configurations combined as independent errors.
fn estimated(estimates: &Estimates, kernel: &str, counter: &str) -> Option<(f64, Uncertainty)> {
    let parts: Vec<_> = estimates
        .estimates
        .iter()
        .filter(|e| e.stratum.kernel == kernel && e.counter == counter)
        .collect();
    if parts.iter().all(|e| e.method == Method::Exact) {
        return None;
    }
    let dispatches: u64 = parts.iter().map(|e| e.dispatches).sum();
    let derived = parts.iter().any(|e| e.derived);
    let scale = match derived {
        true => 1.0 / dispatches.max(1) as f64,
        false => 1.0,
    };
    let total: f64 = parts.iter().map(|e| e.total).sum();
    let half: Option<f64> = parts
        .iter()
        .map(|e| e.interval().map(|(low, _)| (e.total - low).powi(2)))
        .sum::<Option<f64>>()
        .map(f64::sqrt);
    Some((
        total * scale,
        Uncertainty {
            half_interval: half.map(|h| h * scale),
            sampled: parts.iter().map(|e| e.sampled).sum(),
            dispatches,
            reliable: parts.iter().all(|e| e.reliable()),
        },
    ))
}

/// Writes `report` to `path` (complete or not at all).
pub fn write(report: &Report, path: &Path) -> Result<PathBuf, OutputError> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(html::render(report).as_bytes())?;
    Ok(file.commit()?)
}
