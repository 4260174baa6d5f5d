//! `--block ID...`: the counters rocprof-compute's panels need, collected as one more group
//! of counters, and what the rocprof-compute workload directory of the profile needs.

use panels::{BlockId, CounterLayout};
use rtl_pmc_cli::analyze::l2_channels_per_xcd;
use rtl_pmc_cli::inputs::{Collection, CounterName, Job};
use rtl_pmc_cli::rocprof_compute::{base_name, rocprof_compute_input_files};
use rtl_pmc_profile::files::rocprof_compute::accumulation_of;

use crate::error::CliError;
use crate::gpus::Gpu;
use crate::planning::ArchCatalog;

/// What `--block` asks for, per the architectures it was resolved on.
#[derive(Debug, Clone)]
pub struct Blocks {
    /// The ids as given, for messages and the summary.
    pub ids: Vec<String>,
    /// Every counter the panels need (level counters and their accumulations included).
    pub counters: Vec<String>,
    /// The input files rocprof-compute would run for the same blocks, one application run each.
    pub input_files: Vec<Vec<String>>,
    /// The XCDs of each architecture's GPU, for its channel counters.
    pub xcds: Vec<(String, u32)>,
    /// What was left out, one line per architecture.
    pub left_out: Vec<String>,
}

impl Blocks {
    /// The job collecting the panels' counters.
    pub fn job(&self, settings: rtl_pmc_cli::inputs::Settings) -> Job {
        let label = format!("--block {}", self.ids.join(","));
        let names = self
            .counters
            .iter()
            .map(|name| CounterName {
                name: name.clone(),
                at: "--block".into(),
            })
            .collect();
        Job {
            label,
            collection: Collection::Passes(names),
            settings,
        }
    }

    /// The summary's line comparing the runs rocprof-compute would make with this profile's.
    pub fn runs_line(&self, runs: usize) -> String {
        let plural = |n: usize| if n == 1 { "run" } else { "runs" };
        let theirs = self.input_files.len();
        format!(
            "rtl-pmc: rocprof-compute would need {theirs} application {} for --block {}; this profile took {runs}\n",
            plural(theirs),
            self.ids.join(","),
        )
    }
}

/// Resolves `ids` on the architecture of each of `catalogs` (the GPUs `gpus` give each one's
/// XCDs): every id must name a panel on every one of them. Counters the panels name that an
/// architecture does not have are left out, each architecture's named in [`Blocks::left_out`].
pub fn resolve(ids: &[String], catalogs: &[ArchCatalog], gpus: &[Gpu]) -> Result<Blocks, CliError> {
    let parsed = ids
        .iter()
        .map(|id| BlockId::parse(id).map_err(|e| CliError::input(format!("--block: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut counters: Vec<String> = Vec::new();
    let mut levels: Vec<String> = Vec::new();
    let mut xcds = Vec::new();
    let mut left_out = Vec::new();
    for catalog in catalogs {
        let catalog = &catalog.catalog;
        let arch = catalog.arch();
        let set = panels::load(arch).map_err(|e| CliError::input(format!("--block: {e}")))?;
        let l2 = l2_channels_per_xcd(arch).ok_or_else(|| {
            CliError::input(format!("--block: rocprof-compute has no panels for {arch}"))
        })?;
        let num_xcd = match gpus.iter().find(|g| g.arch == *arch) {
            Some(gpu) => gpu.topology.xcc_count() as u32,
            None => {
                return Err(CliError::input(format!(
                    "--block: no {arch} GPU found to count its XCDs; give --sim {arch} to plan for a simulated one"
                )))
            }
        };
        xcds.push((arch.to_string(), num_xcd));
        let layout = CounterLayout {
            num_xcd,
            l2_channels_per_xcd: l2,
        };
        let needs = panels::counters_for_blocks(set, &parsed, &layout)
            .map_err(|e| CliError::input(format!("--block: {e}")))?;
        let known = |name: &str| catalog.counter(base_name(name)).is_some();
        let mut missing: Vec<&str> = Vec::new();
        for name in &needs.counters {
            if !known(name) {
                let base = base_name(name);
                if !missing.contains(&base) {
                    missing.push(base);
                }
            } else if !counters.contains(name) {
                counters.push(name.clone());
            }
        }
        for level in &needs.levels {
            if !known(&level.level) {
                missing.push(&level.level);
            } else if !levels.contains(&level.level) {
                levels.push(level.level.clone());
            }
        }
        if !missing.is_empty() {
            left_out.push(format!(
                "--block {}: {arch} has no {}; the panels' metrics that use them are left empty",
                ids.join(","),
                missing.join(", ")
            ));
        }
    }
    let input_files = rocprof_compute_input_files(counters.iter().map(String::as_str), &levels)
        .map_err(|e| CliError::input(format!("--block: {e}")))?;
    for level in &levels {
        counters.push(level.clone());
        counters.push(accumulation_of(level));
    }
    Ok(Blocks {
        ids: ids.to_vec(),
        counters,
        input_files,
        xcds,
        left_out,
    })
}
