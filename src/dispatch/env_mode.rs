//! Environment-variable mode: profiling one run without the CLI (`RTL_PMC_COUNTERS`,
//! `RTL_PMC_OUTPUT`). Counter names are resolved with the counter engine for each GPU's
//! architecture and topology (KFD properties under `RTL_PMC_KFD_TOPOLOGY` or
//! `/sys/class/kfd/kfd/topology`, else the architecture's reference GPU); at unload the raw
//! records are turned into `results.csv` next to them, one row per dispatch with every counter's
//! total.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rtl_pmc_counters::{Catalog, CounterSet, Topology};

use super::agents::Gpu;
use super::records::{read, Record};
use crate::passes::plan_file::PlanEvent;

/// The variable naming the KFD topology directory (the simulator points it elsewhere).
pub const KFD_TOPOLOGY_ENV: &str = "RTL_PMC_KFD_TOPOLOGY";
const KFD_TOPOLOGY: &str = "/sys/class/kfd/kfd/topology";

/// Resolved counter sets per architecture, for evaluation at unload.
static SETS: Mutex<Option<HashMap<String, CounterSet>>> = Mutex::new(None);

fn topology(catalog: &Catalog, gpu: &Gpu) -> Result<Topology, String> {
    let root = std::env::var(KFD_TOPOLOGY_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(KFD_TOPOLOGY));
    let file = root
        .join("nodes")
        .join(gpu.node_id.to_string())
        .join("properties");
    match std::fs::read_to_string(&file) {
        Ok(text) => {
            Topology::from_kfd_properties(&text).map_err(|e| format!("{}: {e}", file.display()))
        }
        Err(_) => catalog
            .reference_gpu()
            .map(|r| r.topology.clone())
            .ok_or_else(|| {
                format!(
                    "no KFD topology at {} and no reference GPU for {}",
                    file.display(),
                    gpu.arch
                )
            }),
    }
}

/// The events to program on `gpu` for counter `names` (one group).
pub fn resolve(names: &[String], gpu: &Gpu) -> Result<Vec<PlanEvent>, String> {
    let catalog = Catalog::builtin(&gpu.arch).map_err(|e| format!("RTL_PMC_COUNTERS: {e}"))?;
    let topology = topology(&catalog, gpu)?;
    let set = catalog
        .resolve(names, &topology)
        .map_err(|e| format!("RTL_PMC_COUNTERS: {e}"))?;
    let events = set
        .events()
        .iter()
        .map(|e| PlanEvent {
            block: e.event.block.clone(),
            block_id: e.event.block_id,
            event: e.event.event,
            flags: e.event.flags,
        })
        .collect();
    let mut sets = SETS.lock().unwrap_or_else(|p| p.into_inner());
    sets.get_or_insert_with(HashMap::new)
        .entry(gpu.arch.clone())
        .or_insert(set);
    Ok(events)
}

const COLUMNS: &str = "Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Kernel_Name,Grid_Size,Workgroup_Size,LDS_Block_Size,Scratch_Size,Arch_VGPR_Count,Accum_VGPR_Count,SGPR_Count,Start_Timestamp,End_Timestamp";

/// The CSV text for `records`, with one column per counter in `names` (values from `sets`).
fn results_csv(records: &[Record], names: &[String], sets: &HashMap<String, CounterSet>) -> String {
    let mut text = String::from(COLUMNS);
    for name in names {
        let _ = write!(text, ",{name}");
    }
    text.push('\n');
    for r in records {
        let grid: u64 = r.grid.iter().map(|&v| u64::from(v)).product();
        let workgroup: u64 = r.workgroup.iter().map(|&v| u64::from(v)).product();
        let _ = write!(
            text,
            "{},{},{},{},{},\"{}\",{},{},{},{},{},{},{},{},{}",
            r.dispatch,
            r.agent,
            r.queue,
            r.pid,
            r.tid,
            r.kernel.replace('"', "\"\""),
            grid,
            workgroup,
            r.lds,
            r.scratch,
            r.arch_vgpr,
            r.accum_vgpr,
            r.sgpr,
            r.start,
            r.end
        );
        let values = sets
            .get(&r.arch)
            .filter(|_| !r.counters.is_empty())
            .and_then(|set| set.evaluate(&r.counters).ok());
        for name in names {
            let total = values
                .as_ref()
                .and_then(|v| v.iter().find(|c| &c.name == name))
                .map(|c| c.total);
            match total {
                Some(t) => {
                    let _ = write!(text, ",{t}");
                }
                None => text.push(','),
            }
        }
        text.push('\n');
    }
    text
}

/// Writes `results.csv` next to the raw records `raw`.
pub fn write_results(names: &[String], raw: &Path) {
    let Some(dir) = raw.parent() else { return };
    let records: Vec<Record> = read(raw).map_while(Result::ok).collect();
    let sets = SETS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .unwrap_or_default();
    let path = dir.join("results.csv");
    if let Err(e) = std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(&path, results_csv(&records, names, &sets)))
    {
        super::warn(&format!("cannot write {}: {e}", path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_have_one_row_per_dispatch_and_counter_totals() {
        let gpu = Gpu {
            agent: Default::default(),
            index: 0,
            node_id: 999_999,
            arch: "gfx942".into(),
            xcc: 8,
            se: 32,
            cu: 304,
            sa_per_se: 1,
        };
        let names = vec!["GRBM_COUNT".to_string()];
        let events = resolve(&names, &gpu).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(
            (
                events[0].block.as_str(),
                events[0].block_id,
                events[0].event
            ),
            ("GRBM", 3, 0)
        );
        let sets = SETS.lock().unwrap().take().unwrap();
        let samples = sets["gfx942"].events()[0].sample_count();
        let record = Record {
            dispatch: 3,
            agent: 1,
            kernel: "vadd".into(),
            arch: "gfx942".into(),
            grid: [1024, 1, 1],
            workgroup: [256, 1, 1],
            start: 10,
            end: 20,
            counters: vec![vec![7; samples]],
            ..Record::default()
        };
        let timing = Record {
            dispatch: 4,
            kernel: "fill".into(),
            ..record.clone()
        };
        let timing = Record {
            counters: vec![],
            ..timing
        };
        let csv = results_csv(&[record, timing], &names, &sets);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], format!("{COLUMNS},GRBM_COUNT"));
        let total = 7 * samples;
        assert_eq!(
            lines[1],
            format!("3,1,0,0,0,\"vadd\",1024,256,0,0,0,0,0,10,20,{total}")
        );
        assert_eq!(lines[2], "4,1,0,0,0,\"fill\",1024,256,0,0,0,0,0,10,20,");
        let e = resolve(&["NO_SUCH_COUNTER".to_string()], &gpu).unwrap_err();
        assert!(e.starts_with("RTL_PMC_COUNTERS: "), "{e}");
    }
}
