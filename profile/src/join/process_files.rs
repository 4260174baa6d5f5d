//! Each process's own result files of a pass, as rocprofv3 writes them beside its
//! `counter_collection.csv`: `<pid>_results.json` (the process's counter records, its kernel
//! dispatches and kernel symbols) and `<pid>_results.db` (rocpd). Both are read back from the
//! profile's database once the pass is in it.

use std::path::PathBuf;

use crate::files::csv::AgentLabels;
use crate::files::json::JsonWriter;
use crate::files::{Formats, OutputError};
use crate::join::pass::{write_pass, PassSpec};
use crate::store::database::Database;

/// Writes the JSON and rocpd files `formats` asks for of every process in `pids` that ran in
/// `pass`, each at the path `path_of(pid, extension)` gives; returns them in that order.
pub fn write_process_files(
    db: &Database,
    pass: u32,
    pids: &[u32],
    formats: Formats,
    path_of: &dyn Fn(u32, &str) -> PathBuf,
) -> Result<Vec<PathBuf>, OutputError> {
    if !formats.json && !formats.rocpd {
        return Ok(Vec::new());
    }
    let gpus = db.agents()?;
    let cpus = db.cpus()?;
    let mut facts = db.facts()?;
    let names = db.counter_names(Some(pass))?;
    facts
        .counters
        .retain(|(_, info, _)| names.contains(&info.name));
    let info: Vec<_> = facts.counters.iter().map(|(_, i, _)| i.clone()).collect();
    let mut written = Vec::new();
    for &pid in pids {
        let mine = |d: &crate::model::Dispatch| d.pid == pid;
        if formats.json {
            let own = crate::model::ProfileFacts {
                processes: vec![pid],
                ..facts.clone()
            };
            let mut out =
                JsonWriter::create_for_process(&path_of(pid, "json"), &gpus, &cpus, &own)?;
            db.for_each_pass_dispatch(pass, true, |d| match mine(d) && !d.counters.is_empty() {
                true => out.write(d).map_err(OutputError::from),
                false => Ok(()),
            })?;
            out.kernel_dispatches()?;
            db.for_each_pass_dispatch(pass, false, |d| match mine(d) {
                true => out.write_kernel_dispatch(d).map_err(OutputError::from),
                false => Ok(()),
            })?;
            written.push(out.commit(None)?);
        }
        if formats.rocpd {
            let mut own = Database::create(&path_of(pid, "db"))?;
            for gpu in &gpus {
                own.add_agent(gpu)?;
            }
            for cpu in &cpus {
                own.add_cpu(cpu)?;
            }
            own.set_run(&facts.run)?;
            own.declare_counters(&names)?;
            own.set_counter_info(&info)?;
            let spec = PassSpec {
                pass: 1,
                label: &names.join(" "),
                csv: None,
                tables: &[],
                labels: &AgentLabels::Node,
                processes: &[(0, vec![pid])],
                exit_status: None,
            };
            write_pass(&mut own, &spec, |input| {
                db.for_each_pass_dispatch(pass, true, |d| match mine(d) {
                    true => input.write(0, d.clone()),
                    false => Ok(()),
                })
            })?;
            written.extend(own.commit(true)?);
        }
    }
    Ok(written)
}
