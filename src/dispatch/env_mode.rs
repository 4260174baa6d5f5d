//! Environment-variable mode: profiling one run without the CLI (`RTL_PMC_COUNTERS`,
//! `RTL_PMC_OUTPUT`), with finished results written when the runtime unloads the tool.

use std::path::Path;

use super::agents::{Agents, Gpu};
use super::config::Config;
use super::records::read;
use crate::passes::plan_file::PlanEvent;

/// The events to program on `gpu` for counter `names`.
pub fn resolve(names: &[String], gpu: &Gpu) -> Result<Vec<PlanEvent>, String> {
    Err(format!(
        "RTL_PMC_COUNTERS ({}) needs the rtl-pmc CLI to resolve counter names on {}; run `rtl-pmc --pmc ...`",
        names.join(" "),
        gpu.arch
    ))
}

/// Writes `results.csv` next to the raw records: one row per dispatch with its timestamps.
pub fn write_results(config: &Config, raw: &Path, _agents: &Agents) {
    let Some(dir) = raw.parent() else { return };
    let mut text = String::from("Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Kernel_Name,Grid_Size,Workgroup_Size,LDS_Block_Size,Scratch_Size,Arch_VGPR_Count,Accum_VGPR_Count,SGPR_Count,Start_Timestamp,End_Timestamp\n");
    for record in read(raw).map_while(Result::ok) {
        let grid: u64 = record.grid.iter().map(|&v| u64::from(v)).product();
        let workgroup: u64 = record.workgroup.iter().map(|&v| u64::from(v)).product();
        text.push_str(&format!(
            "{},{},{},{},{},\"{}\",{},{},{},{},{},{},{},{},{}\n",
            record.dispatch,
            record.agent,
            record.queue,
            record.pid,
            record.tid,
            record.kernel.replace('"', "\"\""),
            grid,
            workgroup,
            record.lds,
            record.scratch,
            record.arch_vgpr,
            record.accum_vgpr,
            record.sgpr,
            record.start,
            record.end
        ));
    }
    let path = dir.join("results.csv");
    if let Err(e) = std::fs::write(&path, text) {
        super::warn(&format!("cannot write {}: {e}", path.display()));
    }
    let _ = config;
}
