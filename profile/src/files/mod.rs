//! The files of a profile written from its database: a pass's `counter_collection.csv` and the
//! merged `results.*`. The writers ([`csv`], [`json`], [`perfetto`], [`summary`]) import only the
//! model ([`crate::model`]) and write each file atomically ([`atomic`]); this module reads the
//! store and hands them what they write.

pub mod atomic;
pub mod csv;
pub mod json;
pub mod perfetto;
pub mod rocprof_compute;
pub mod summary;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;

use crate::files::csv::{AgentLabels, CounterCollectionFiles, CsvPaths, ResultsWriter, Table};
use crate::files::json::JsonWriter;
use crate::files::perfetto::PerfettoWriter;
use crate::model::Dispatch;
use crate::store::database::{Database, DatabaseError};
use crate::store::estimates::Estimates;

/// Why outputs could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A file could not be written.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The database failed.
    #[error("{0}")]
    Database(#[from] DatabaseError),
    /// An input of `rtl-pmc merge` is not usable.
    #[error("{0}")]
    Input(String),
}

/// Which merged files to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Formats {
    /// `counter_collection.csv` per pass and `results.csv`.
    pub csv: bool,
    /// `results.json`.
    pub json: bool,
    /// `results.db` is kept.
    pub rocpd: bool,
    /// `results.pftrace`.
    pub pftrace: bool,
    /// `results.json` lists every dispatch in `buffer_records.kernel_dispatch`, as rocprofv3
    /// does with `--kernel-trace`.
    pub kernel_trace: bool,
}

impl Default for Formats {
    /// CSV and the database.
    fn default() -> Formats {
        Formats {
            csv: true,
            json: false,
            rocpd: true,
            pftrace: false,
            kernel_trace: false,
        }
    }
}

/// Writes the per-process `tables` of `pass` from the database, each process's at the path
/// `paths` gives its pid.
pub fn write_counter_collection(
    db: &Database,
    pass: u32,
    paths: &CsvPaths<'_>,
    tables: &[Table],
    labels: &AgentLabels,
) -> Result<Vec<PathBuf>, OutputError> {
    let mut out = CounterCollectionFiles::new(paths, tables, labels);
    db.for_each_pass_dispatch(pass, false, |d| out.write(d).map_err(OutputError::from))?;
    Ok(out.commit()?)
}

/// The roctx part of `results.json`: the regions of the first pass and each of its dispatches'
/// enclosing ranges, by region id.
fn roctx_json(
    regions: &[crate::model::RegionRow],
    dispatch_ranges: &[(u32, u64, Vec<i64>)],
) -> serde_json::Value {
    let regions: Vec<serde_json::Value> = regions
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "pass": r.pass,
                "pid": r.pid,
                "tid": r.tid,
                "kind": r.kind,
                "name": r.name,
                "start_ns": r.start_ns,
                "end_ns": r.end_ns,
                "end_tid": r.end_tid,
                "depth": r.depth,
                "parent_id": r.parent,
                "roctx_id": r.roctx_id,
                "object": r.object,
                "problem": r.problem,
            })
        })
        .collect();
    let dispatches: Vec<serde_json::Value> = dispatch_ranges
        .iter()
        .map(|(pid, dispatch, ranges)| {
            serde_json::json!({"pid": pid, "dispatch_id": dispatch, "ranges": ranges})
        })
        .collect();
    serde_json::json!({"regions": regions, "dispatch_ranges": dispatches})
}

/// Writes the merged files `<dir>/<base>.csv|.json|.pftrace` in one scan of the database, with
/// the estimates computed (and kept in the database) first. The binary computes them itself,
/// for its warnings and summary.
#[cfg(test)]
pub fn write_merged_files(
    db: &Database,
    dir: &Path,
    base: &str,
    formats: Formats,
) -> Result<Vec<PathBuf>, OutputError> {
    let estimates = Estimates::compute(db)?;
    write_merged_files_with(db, dir, base, formats, &estimates)
}

/// Dispatches handed to the thread that writes the merged files at once.
const BATCH: usize = 64;

/// Batches waiting for that thread.
const BATCHES: usize = 4;

/// [`write_merged_files`] with the profile's `estimates` already computed.
pub fn write_merged_files_with(
    db: &Database,
    dir: &Path,
    base: &str,
    formats: Formats,
    estimates: &Estimates,
) -> Result<Vec<PathBuf>, OutputError> {
    let counters = db.counter_names(None)?;
    let agents = db.agents()?;
    let mut csv = match formats.csv {
        true => Some(ResultsWriter::create(
            &dir.join(format!("{base}.csv")),
            &counters,
            Box::new(estimates.per_dispatch()),
        )?),
        false => None,
    };
    let mut json = match formats.json {
        true => Some(JsonWriter::create(
            &dir.join(format!("{base}.json")),
            &agents,
            &db.cpus()?,
            &db.facts()?,
            estimates.json(),
        )?),
        false => None,
    };
    let mut trace = match formats.pftrace {
        true => Some(PerfettoWriter::create(
            &dir.join(format!("{base}.pftrace")),
            &agents,
        )?),
        false => None,
    };
    // The database is read on this thread and the files written on another, the dispatches
    // handed over in batches whose strings and vectors go back and forth for reuse.
    let (written, read) = std::thread::scope(|scope| {
        let (to_writer, batches) = sync_channel::<Vec<Dispatch>>(BATCHES);
        let (give_back, given_back) = sync_channel::<Vec<Dispatch>>(BATCHES + 2);
        let writer = scope.spawn(move || -> Result<_, OutputError> {
            for batch in batches {
                for d in &batch {
                    if let Some(w) = csv.as_mut() {
                        w.write(d)?;
                    }
                    if let Some(w) = json.as_mut() {
                        w.write(d)?;
                    }
                    if let Some(w) = trace.as_mut() {
                        w.write(d)?;
                    }
                }
                let _ = give_back.try_send(batch);
            }
            Ok((csv, json, trace))
        });
        let stopped = || OutputError::Io(io::Error::other("the file writer stopped"));
        let mut batch: Vec<Dispatch> = Vec::with_capacity(BATCH);
        let mut used = 0;
        let send = |batch: &mut Vec<Dispatch>, used: &mut usize| {
            batch.truncate(*used);
            *used = 0;
            let next = given_back
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            to_writer
                .send(std::mem::replace(batch, next))
                .map_err(|_| stopped())
        };
        let read = db
            .for_each_merged(formats.json, |d: &Dispatch| -> Result<(), OutputError> {
                match batch.get_mut(used) {
                    Some(slot) => slot.copy_from(d),
                    None => batch.push(d.clone()),
                }
                used += 1;
                match used == BATCH {
                    true => send(&mut batch, &mut used),
                    false => Ok(()),
                }
            })
            .and_then(|()| match used {
                0 => Ok(()),
                _ => send(&mut batch, &mut used),
            });
        drop(to_writer);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (written, read)
    });
    // A writer that stopped says why; the reader's error otherwise.
    let (csv, mut json, trace) = written?;
    read?;
    if let (Some(w), true) = (json.as_mut(), formats.kernel_trace) {
        w.kernel_dispatches()?;
        db.for_each_merged(false, |d: &Dispatch| -> Result<(), OutputError> {
            Ok(w.write_kernel_dispatch(d)?)
        })?;
    }
    let regions = match json.is_some() || trace.is_some() {
        true => crate::store::regions::first_pass(db)?,
        false => Vec::new(),
    };
    let mut written = Vec::new();
    if let Some(w) = csv {
        written.push(w.commit()?);
    }
    if let Some(w) = json {
        let roctx = match regions.is_empty() {
            true => None,
            false => Some(roctx_json(
                &regions,
                &crate::store::regions::first_pass_dispatch_ranges(db)?,
            )),
        };
        written.push(w.commit(roctx.as_ref().map(|v| ("rtl-pmc-roctx", v)))?);
    }
    if let Some(mut w) = trace {
        w.write_regions(&regions)?;
        written.push(w.commit()?);
    }
    Ok(written)
}
