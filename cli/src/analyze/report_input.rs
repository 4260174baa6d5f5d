//! What the HTML report takes from `rtl-pmc analyze --html`: each GPU's constants and each
//! kernel's counters summed over its dispatches with its System Speed-of-Light (panel 2.1)
//! evaluated from the panel definitions.

use std::path::PathBuf;

use panels::{Constants, EvaluatedTable, Normalization, MAIN_FRAME};

use super::{read_workload, AnalyzeArgs, GpuInfo};
use crate::error::CliError;

/// A GPU of the analysed profile.
#[derive(Debug, Clone)]
pub struct AnalyzedGpu {
    /// gfx target.
    pub arch: String,
    /// Product name and node, as `analyze` prints them.
    pub label: String,
    /// The constants `analyze` used.
    pub constants: Constants,
}

/// A kernel of the analysed profile.
#[derive(Debug, Clone)]
pub struct AnalyzedKernel {
    /// Kernel name.
    pub name: String,
    /// Index of its GPU in [`ReportInput::gpus`].
    pub gpu: usize,
    /// Dispatches.
    pub dispatches: usize,
    /// Total time, ns.
    pub total_ns: f64,
    /// Counters of the catalog: name, total over the dispatches and unit.
    pub counters: Vec<(String, f64, String)>,
    /// Panel 2.1 evaluated for the kernel, when the architecture has it.
    pub speed_of_light: Option<EvaluatedTable>,
}

/// Everything `analyze --html` reports, and where the file goes.
#[derive(Debug, Clone)]
pub struct ReportInput {
    /// The file to write.
    pub path: PathBuf,
    /// The analysed directory.
    pub dir: PathBuf,
    /// GPUs.
    pub gpus: Vec<AnalyzedGpu>,
    /// Kernels (those `--kernel` selects).
    pub kernels: Vec<AnalyzedKernel>,
}

/// The report input of `rtl-pmc analyze` with `argv` (`argv[0]` is `analyze`), `None` without
/// `--html`.
pub fn report_input(argv: &[String]) -> Result<Option<ReportInput>, CliError> {
    use clap::Parser as _;
    let args = AnalyzeArgs::parse_from(argv);
    let Some(path) = args.html.clone() else {
        return Ok(None);
    };
    let path = match path.as_os_str().is_empty() {
        true => args.dir.join("results.html"),
        false => path,
    };
    let normalization = Normalization::parse(&args.normal_unit)
        .ok_or_else(|| CliError::input("analyze: --normal-unit: not a normalisation"))?;
    let filter = match &args.kernel {
        Some(k) => Some(
            regex::Regex::new(k)
                .map_err(|e| CliError::input(format!("analyze: --kernel '{k}': {e}")))?,
        ),
        None => None,
    };
    let workload = read_workload(&args.dir)?;
    let constants_of = |gpu: &GpuInfo| -> Constants {
        gpu.constants
            .iter()
            .map(|c| (c.name.to_string(), c.value))
            .collect()
    };
    let mut kernels = Vec::new();
    for kernel in &workload.kernels {
        if filter.as_ref().is_some_and(|f| !f.is_match(&kernel.name)) {
            continue;
        }
        let gpu = &workload.gpus[kernel.gpu];
        let set = panels::load(&gpu.arch)
            .map_err(|e| CliError::input(format!("analyze: {}: {e}", args.dir.display())))?;
        let catalog = rtl_pmc_counters::Catalog::builtin(&gpu.arch)
            .map_err(|e| CliError::input(format!("analyze: {}: {e}", args.dir.display())))?;
        let mut counters: Vec<(String, f64, String)> = kernel
            .data
            .frames
            .get(MAIN_FRAME)
            .map(|frame| {
                frame
                    .columns
                    .iter()
                    .filter_map(|(name, values)| {
                        let def = catalog.counter(name)?;
                        let total = values.iter().filter(|v| !v.is_nan()).sum();
                        Some((name.clone(), total, def.unit.clone().unwrap_or_default()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        counters.sort_by(|a, b| a.0.cmp(&b.0));
        let speed_of_light = match set.table("2.1") {
            Some(table) => Some(
                panels::evaluate_table(set, table, &kernel.data, &constants_of(gpu), normalization)
                    .map_err(|e| CliError::input(format!("analyze: table 2.1: {e}")))?,
            ),
            None => None,
        };
        kernels.push(AnalyzedKernel {
            name: kernel.name.clone(),
            gpu: kernel.gpu,
            dispatches: kernel.dispatches,
            total_ns: kernel.total_ns,
            counters,
            speed_of_light,
        });
    }
    let gpus = workload
        .gpus
        .iter()
        .map(|gpu| AnalyzedGpu {
            arch: gpu.arch.clone(),
            label: gpu.label.clone(),
            constants: constants_of(gpu),
        })
        .collect();
    Ok(Some(ReportInput {
        path,
        dir: args.dir,
        gpus,
        kernels,
    }))
}
