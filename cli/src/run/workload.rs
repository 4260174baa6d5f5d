//! `--block`: the profile written as a rocprof-compute workload directory,
//! `workloads/<application>/<GPU model>/` in the output directory (rocprof-compute's own
//! layout, e.g. `workloads/app/MI300X`), with the input files rocprof-compute would have run in its `perfmon/`.

use std::path::{Path, PathBuf};

use rtl_pmc_cli::analyze::{gpu_model_of, l2_channels_per_xcd};
use rtl_pmc_profile::files::rocprof_compute::{self, WorkloadInfo};
use rtl_pmc_profile::model::Dispatch;
use rtl_pmc_profile::store::database::{Database, DatabaseError};

use super::{io_error, output_error, paths};
use crate::blocks::Blocks;
use crate::error::CliError;

/// Writes the workload directory of the merged profile in `db` under `directory`; returns it.
/// Nothing is written when no GPU is known.
pub fn write(
    db: &Database,
    directory: &Path,
    app: &[String],
    blocks: &Blocks,
) -> Result<Option<PathBuf>, CliError> {
    let mut dispatches: Vec<Dispatch> = Vec::new();
    db.for_each_merged(false, |d| {
        dispatches.push(d.clone());
        Ok::<(), DatabaseError>(())
    })
    .map_err(output_error)?;
    let agents = db.agents().map_err(output_error)?;
    let node = dispatches.first().map(|d| d.agent);
    let Some(agent) = agents
        .iter()
        .find(|a| Some(a.node_id) == node)
        .or(agents.first())
    else {
        return Ok(None);
    };
    let name = app
        .first()
        .and_then(|a| Path::new(a).file_name())
        .map_or_else(|| "app".to_string(), |n| n.to_string_lossy().into_owned());
    let workload = directory
        .join("workloads")
        .join(&name)
        .join(gpu_model_of(&agent.name).unwrap_or(&agent.name));
    let info = WorkloadInfo {
        workload_name: name,
        command: app.join(" "),
        hostname: paths::hostname(),
        timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        l2_channels_per_xcd: l2_channels_per_xcd(&agent.name).unwrap_or(0),
    };
    rocprof_compute::write(&workload, &agents, agent, &dispatches, &info)
        .map_err(|e| io_error(&workload, e))?;
    let perfmon = workload.join("perfmon");
    std::fs::create_dir_all(&perfmon).map_err(|e| io_error(&perfmon, e))?;
    for (i, file) in blocks.input_files.iter().enumerate() {
        let path = perfmon.join(format!("pmc_perf_{i}.txt"));
        std::fs::write(&path, format!("pmc: {}\n", file.join(" ")))
            .map_err(|e| io_error(&path, e))?;
    }
    Ok(Some(workload))
}
