//! Writing the files of a profile from its database: each pass's `counter_collection.csv` and
//! `agent_info.csv`, and the merged `results.*`; and `rtl-pmc merge DIR...`, which combines the
//! databases of several runs (one per rank) into one.

use std::io;
use std::path::{Path, PathBuf};

use crate::output::csv::{write_agent_info, CounterCollectionWriter, ResultsWriter};
use crate::output::database::{Database, DatabaseError};
use crate::output::json::JsonWriter;
use crate::output::model::Dispatch;
use crate::output::perfetto::PerfettoWriter;

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
}

impl Default for Formats {
    /// CSV and the database.
    fn default() -> Formats {
        Formats {
            csv: true,
            json: false,
            rocpd: true,
            pftrace: false,
        }
    }
}

/// Writes `pass_dir/counter_collection.csv` (with CSV output) and `pass_dir/agent_info.csv`.
pub fn write_pass_files(
    db: &Database,
    pass: u32,
    pass_dir: &Path,
    formats: Formats,
) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    if formats.csv {
        let mut out = CounterCollectionWriter::create(&pass_dir.join("counter_collection.csv"))?;
        db.for_each_pass_dispatch(pass, false, |d| out.write(d).map_err(OutputError::from))?;
        written.push(out.commit()?);
    }
    written.push(write_agent_info(
        &pass_dir.join("agent_info.csv"),
        &db.agents()?,
    )?);
    Ok(written)
}

/// Writes the merged files `<dir>/<base>.csv|.json|.pftrace` in one scan of the database.
pub fn write_merged_files(
    db: &Database,
    dir: &Path,
    base: &str,
    formats: Formats,
) -> Result<Vec<PathBuf>, OutputError> {
    let counters = db.counter_names(None)?;
    let agents = db.agents()?;
    let mut csv = match formats.csv {
        true => Some(ResultsWriter::create(
            &dir.join(format!("{base}.csv")),
            &counters,
        )?),
        false => None,
    };
    let mut json = match formats.json {
        true => Some(JsonWriter::create(
            &dir.join(format!("{base}.json")),
            &agents,
            &counters,
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
    db.for_each_merged(formats.json, |d: &Dispatch| -> Result<(), OutputError> {
        if let Some(w) = csv.as_mut() {
            w.write(d)?;
        }
        if let Some(w) = json.as_mut() {
            w.write(d)?;
        }
        if let Some(w) = trace.as_mut() {
            w.write(d)?;
        }
        Ok(())
    })?;
    let mut written = Vec::new();
    if let Some(w) = csv {
        written.push(w.commit()?);
    }
    if let Some(w) = json {
        written.push(w.commit()?);
    }
    if let Some(w) = trace {
        written.push(w.commit()?);
    }
    Ok(written)
}

/// Combines the databases `<dir>/<base>.db` of several runs (one per rank or host) into
/// `output/<base>.db` and writes every file of `formats` there: passes with the same number are
/// joined, each input's processes keeping their own order.
pub fn merge_directories(
    inputs: &[PathBuf],
    output: &Path,
    base: &str,
    formats: Formats,
) -> Result<(Database, Vec<PathBuf>), OutputError> {
    let sources = inputs
        .iter()
        .map(|dir| {
            let path = dir.join(format!("{base}.db"));
            if !path.is_file() {
                return Err(OutputError::Input(format!(
                    "{}: no {base}.db (run with --output-format rocpd, the default)",
                    dir.display()
                )));
            }
            Ok(Database::open(&path)?)
        })
        .collect::<Result<Vec<_>, _>>()?;
    std::fs::create_dir_all(output).map_err(|e| crate::output::atomic::named(output, e))?;
    let mut db = Database::create(&output.join(format!("{base}.db")))?;
    let mut passes: Vec<u32> = Vec::new();
    for source in &sources {
        for agent in source.agents()? {
            db.add_agent(&agent)?;
        }
        for pass in source.passes()? {
            if !passes.contains(&pass) {
                passes.push(pass);
            }
        }
    }
    passes.sort_unstable();
    let mut written = Vec::new();
    for &pass in &passes {
        db.begin_pass(pass, &format!("pass {pass}"))?;
        for (index, source) in sources.iter().enumerate() {
            source.for_each_pass_dispatch(pass, true, |d| {
                db.insert(pass, index as u32, d).map_err(OutputError::from)
            })?;
        }
        db.end_pass(pass, None)?;
        let pass_dir = output.join(format!("pass_{pass}"));
        std::fs::create_dir_all(&pass_dir)
            .map_err(|e| crate::output::atomic::named(&pass_dir, e))?;
        written.extend(write_pass_files(&db, pass, &pass_dir, formats)?);
    }
    written.extend(write_merged_files(&db, output, base, formats)?);
    Ok((db, written))
}

/// `rtl-pmc merge`: combines the result directories of several runs (one per rank or host).
#[derive(Debug, clap::Parser)]
#[command(
    name = "rtl-pmc merge",
    about = "Combine the result directories of several runs (one per rank or host) into one"
)]
struct MergeArgs {
    /// Where the combined results go.
    #[arg(short = 'd', long, value_name = "DIR", default_value = "merged")]
    output_directory: PathBuf,
    /// Base name of the result files (as given to the runs with -o).
    #[arg(short = 'o', long, value_name = "NAME", default_value = "results")]
    output_file: String,
    /// Result formats to write.
    #[arg(long, value_name = "FORMAT", value_delimiter = ',', num_args = 1..)]
    output_format: Vec<crate::args::OutputFormat>,
    /// The result directories to combine.
    #[arg(required = true, value_name = "DIR")]
    inputs: Vec<PathBuf>,
}

/// Runs `rtl-pmc merge` with `argv` (starting with `merge`); returns the exit code.
pub fn main(argv: &[String]) -> Result<i32, crate::error::CliError> {
    use clap::Parser as _;
    let args = MergeArgs::parse_from(argv);
    let formats = crate::run::formats(&args.output_format);
    let fail = |e: OutputError| crate::error::CliError {
        exit_code: if matches!(e, OutputError::Input(_)) {
            2
        } else {
            1
        },
        message: e.to_string(),
    };
    let (db, mut written) = merge_directories(
        &args.inputs,
        &args.output_directory,
        &args.output_file,
        formats,
    )
    .map_err(fail)?;
    let summary = crate::summary::render(&db, &[]).map_err(|e| fail(e.into()))?;
    written.extend(db.commit(formats.rocpd).map_err(|e| fail(e.into()))?);
    eprint!("{summary}");
    for file in &written {
        eprintln!("rtl-pmc: wrote {}", file.display());
    }
    Ok(0)
}
