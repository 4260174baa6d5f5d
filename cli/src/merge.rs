//! Writing the files of a profile from its database: each pass's `counter_collection.csv` and
//! `agent_info.csv`, and the merged `results.*`; and `rtl-pmc merge DIR...`, which combines the
//! databases of several runs (one per rank) into one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rtl_pmc_cli::args::PassMatch;
use rtl_pmc_profile::files::csv::{write_agent_info, AgentLabels, Table};

use crate::run::destination::process_file;
use rtl_pmc_profile::files::csv::CsvPaths;
use rtl_pmc_profile::files::write_merged_files_with;
pub use rtl_pmc_profile::files::{Formats, OutputError};
use rtl_pmc_profile::join::pass::{write_pass, PassSpec};
use rtl_pmc_profile::join::unmatched_warning;
use rtl_pmc_profile::model::Agent;
use rtl_pmc_profile::store::database::Database;
use rtl_pmc_profile::store::estimates::Estimates;

/// Combines the databases `<dir>/<base>.db` of several runs (one per rank or host) into
/// `output/<base>.db` and writes every file of `formats` there: passes with the same number are
/// joined, each input's processes keeping their own order.
pub fn merge_directories(
    inputs: &[PathBuf],
    output: &Path,
    base: &str,
    formats: Formats,
    pass_match: PassMatch,
) -> Result<(Database, Vec<PathBuf>, Estimates), OutputError> {
    let sources = inputs
        .iter()
        .map(|dir| {
            let path = dir.join(format!("{base}.db"));
            if !path.is_file() && dir.join(crate::run::unfinished::MARKER).is_file() {
                return Err(OutputError::Input(format!(
                    "{}: no {base}.db: the profile was interrupted before writing its results; `rtl-pmc finish {}` writes them from its raw records",
                    dir.display(),
                    dir.display()
                )));
            }
            if !path.is_file() {
                return Err(OutputError::Input(format!(
                    "{}: no {base}.db (run with --output-format rocpd, the default)",
                    dir.display()
                )));
            }
            Ok(Database::open(&path)?)
        })
        .collect::<Result<Vec<_>, _>>()?;
    refuse_repeated_inputs(inputs, &sources)?;
    std::fs::create_dir_all(output)
        .map_err(|e| rtl_pmc_profile::files::atomic::named(output, e))?;
    let mut db = Database::create(&output.join(format!("{base}.db")))?;
    db.set_pass_match(pass_match);
    // The processes' command line as the first input ran it.
    if let Some(first) = sources.first() {
        db.set_run(&first.run_info()?)?;
    }
    let mut passes: Vec<u32> = Vec::new();
    let mut cpus: Vec<Agent> = Vec::new();
    for source in &sources {
        for cpu in source.cpus()? {
            db.add_cpu(&cpu)?;
            cpus.push(cpu);
        }
    }
    let mut gpus: Vec<Agent> = Vec::new();
    let mut nodes: Vec<HashMap<u32, u32>> = Vec::new();
    for source in &sources {
        let mut map = HashMap::new();
        for agent in source.agents()? {
            let node = gpu_node(&mut gpus, &cpus, &agent);
            map.insert(agent.node_id, node);
        }
        nodes.push(map);
        for pass in source.passes()? {
            if !passes.contains(&pass) {
                passes.push(pass);
            }
        }
    }
    for gpu in &gpus {
        db.add_agent(gpu)?;
    }
    passes.sort_unstable();
    let mut written = Vec::new();
    for &pass in &passes {
        let pass_dir = output.join(format!("pass_{pass}"));
        std::fs::create_dir_all(&pass_dir)
            .map_err(|e| rtl_pmc_profile::files::atomic::named(&pass_dir, e))?;
        let file_of = |pid: u32, kind: &str| process_file(&pass_dir, None, &[], pid, kind);
        let csv_of = |pid: u32, table: Table| file_of(pid, table.kind());
        let tables: &[Table] = match sources
            .iter()
            .map(|s| s.counter_names(Some(pass)))
            .collect::<Result<Vec<_>, _>>()?
            .iter()
            .all(Vec::is_empty)
        {
            true => &[Table::KernelTrace],
            false => &[Table::CounterCollection],
        };
        let processes = (0u32..)
            .zip(&sources)
            .map(|(index, source)| Ok((index, source.pass_processes(pass)?)))
            .collect::<Result<Vec<_>, OutputError>>()?;
        let spec = PassSpec {
            pass,
            label: &format!("pass {pass}"),
            csv: formats.csv.then_some(&csv_of as &CsvPaths<'_>),
            tables,
            labels: &AgentLabels::Node,
            processes: &processes,
            exit_status: None,
        };
        let pass_written = write_pass(&mut db, &spec, |input| {
            for ((index, source), nodes) in (0u32..).zip(&sources).zip(&nodes) {
                source.for_each_pass_dispatch(pass, true, |d| {
                    let mut d = d.clone();
                    d.agent = nodes.get(&d.agent).copied().unwrap_or(d.agent);
                    input.write(index, d)
                })?;
            }
            Ok::<_, OutputError>(())
        })?;
        written.extend(pass_written.csv);
        // The runs' CPUs are in their own agent_info.csv; a merge keeps the GPUs it joins.
        let cpus = db.cpus()?;
        let agents = db.agents()?;
        let mut agent_info: Vec<PathBuf> = processes
            .iter()
            .flat_map(|(_, pids)| pids.iter().map(|&pid| file_of(pid, "agent_info")))
            .collect();
        agent_info.sort();
        agent_info.dedup();
        for path in agent_info {
            written.push(write_agent_info(&path, &cpus, &agents)?);
        }
    }
    for source in &sources {
        rtl_pmc_profile::store::regions::copy(source, &db)?;
        for derived in source.kernel_derived()? {
            db.add_kernel_derived(&derived)?;
        }
        db.set_counter_info(&source.counter_info()?)?;
    }
    let estimates = Estimates::compute(&db)?;
    written.extend(write_merged_files_with(
        &db, output, base, formats, &estimates,
    )?);
    Ok((db, written, estimates))
}

/// The node the merge gives GPU `agent` of an input: that of the same GPU of an earlier input
/// (the same node, architecture, topology and unique id), else its own node when no other GPU
/// or CPU has it, else the next node free; a GPU new to the merge joins `gpus`. Two GPUs of
/// different models (or hosts) thus stay two agents in every output.
fn gpu_node(gpus: &mut Vec<Agent>, cpus: &[Agent], agent: &Agent) -> u32 {
    let same = |g: &&Agent| {
        g.node_id == agent.node_id
            && g.name == agent.name
            && g.product_name == agent.product_name
            && g.properties == agent.properties
    };
    if let Some(g) = gpus.iter().find(same) {
        return g.node_id;
    }
    let taken = |n: u32| gpus.iter().chain(cpus).any(|a| a.node_id == n);
    let node = match taken(agent.node_id) {
        false => agent.node_id,
        true => (agent.node_id..)
            .find(|&n| !taken(n))
            .expect("a free node number"),
    };
    let gpu_index = match node == agent.node_id {
        true => agent.gpu_index,
        false => gpus.iter().map(|g| g.gpu_index + 1).max().unwrap_or(0),
    };
    gpus.push(Agent {
        node_id: node,
        gpu_index,
        ..agent.clone()
    });
    node
}

/// The warning for kernels the inputs ran on more than one GPU architecture, naming the inputs
/// of each: their values are kept apart, never blended.
fn architectures_warning(
    db: &Database,
    inputs: &[PathBuf],
) -> Result<Option<String>, rtl_pmc_profile::store::database::DatabaseError> {
    // (kernel, architecture, input), in order of first dispatch.
    let rows: Vec<(String, String, u32)> = db.with_connection(|conn| {
        conn.prepare(
            "SELECT s.string, a.name, d.source FROM rtl_dispatch d
             JOIN rtl_string s ON s.id = d.kernel_id JOIN rtl_agent a ON a.node_id = d.agent
             GROUP BY s.string, a.name, d.source ORDER BY min(d.id)",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
    })?;
    let mut kernels: Vec<&str> = Vec::new();
    let mut per_arch: Vec<(&str, Vec<u32>)> = Vec::new();
    for (kernel, _, _) in &rows {
        let archs: Vec<&str> = rows
            .iter()
            .filter(|r| r.0 == *kernel)
            .map(|r| r.1.as_str())
            .collect();
        if archs.iter().any(|a| *a != archs[0]) && !kernels.contains(&kernel.as_str()) {
            kernels.push(kernel);
        }
    }
    for (kernel, arch, source) in &rows {
        if !kernels.contains(&kernel.as_str()) {
            continue;
        }
        match per_arch.iter_mut().find(|(a, _)| a == arch) {
            Some((_, sources)) if !sources.contains(source) => sources.push(*source),
            Some(_) => {}
            None => per_arch.push((arch, vec![*source])),
        }
    }
    if kernels.is_empty() {
        return Ok(None);
    }
    let inputs_of = |sources: &[u32]| {
        sources
            .iter()
            .filter_map(|&s| inputs.get(s as usize))
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let archs: Vec<String> = per_arch
        .iter()
        .map(|(arch, sources)| format!("{arch}: {}", inputs_of(sources)))
        .collect();
    let (them, its) = match kernels.len() {
        1 => (kernels[0].to_string(), "its"),
        _ => (kernels.join(", "), "their"),
    };
    Ok(Some(format!(
        "the inputs ran {them} on more than one architecture ({}): {its} counters are reported and estimated per architecture, never from another's values",
        archs.join("; ")
    )))
}

/// Refuses an input given twice, by the same directory under another path (`m1`, `./m1/`, a
/// link) or by a copy of its database (the same GUID): its dispatches would count twice.
fn refuse_repeated_inputs(inputs: &[PathBuf], sources: &[Database]) -> Result<(), OutputError> {
    for (i, (dir, source)) in inputs.iter().zip(sources).enumerate() {
        let canonical = dir.canonicalize().ok();
        let earlier = inputs[..i]
            .iter()
            .zip(sources)
            .find(|(other, other_source)| {
                (canonical.is_some() && other.canonicalize().ok() == canonical)
                    || other_source.guid() == source.guid()
            });
        if let Some((other, _)) = earlier {
            let how = match canonical.is_some() && other.canonicalize().ok() == canonical {
                true => "the same directory",
                false => "the same profile (its database has the same GUID)",
            };
            return Err(OutputError::Input(format!(
                "{} and {} are {how}; give each input once",
                other.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// `rtl-pmc merge`: combines the result directories of several runs (one per rank or host).
#[derive(Debug, clap::Parser)]
#[command(
    name = "rtl-pmc merge",
    bin_name = "rtl-pmc merge",
    about = "Combine the result directories of several runs (one per rank or host) into one"
)]
struct MergeArgs {
    /// Where the combined results go.
    #[arg(short = 'd', long, value_name = "DIR", default_value = "merged")]
    output_directory: PathBuf,
    /// Base name of the result files (as given to the runs with -o).
    #[arg(short = 'o', long, value_name = "NAME", default_value = "results")]
    output_file: String,
    /// Result formats to write: csv, json, rocpd, pftrace, html (any case; spaces or commas
    /// separate them).
    #[arg(short = 'f', long, value_name = "FORMAT", num_args = 1..)]
    output_format: Vec<String>,
    /// How many kernels the summary lists (by total time).
    #[arg(long, value_name = "N", default_value_t = rtl_pmc_profile::files::summary::TOP_KERNELS)]
    summary_top: usize,
    /// How dispatches of different passes are matched (see rtl-pmc --help).
    #[arg(long, value_name = "RULE", default_value = "queue")]
    pass_match: PassMatch,
    /// The result directories to combine.
    #[arg(required = true, value_name = "DIR")]
    inputs: Vec<PathBuf>,
}

/// Runs `rtl-pmc merge` with `argv` (starting with `merge`); returns the exit code.
pub fn main(argv: &[String]) -> Result<i32, crate::error::CliError> {
    use clap::Parser as _;
    let args = MergeArgs::parse_from(argv);
    let asked = rtl_pmc_cli::inputs::parse_formats(args.output_format.iter().map(String::as_str))
        .map_err(|e| {
        crate::error::CliError::input(format!("merge: -f/--output-format: {e}"))
    })?;
    let formats = crate::run::formats(&asked);
    let fail = |e: OutputError| crate::error::CliError {
        exit_code: if matches!(e, OutputError::Input(_)) {
            2
        } else {
            1
        },
        message: e.to_string(),
    };
    let base = rtl_pmc_cli::inputs::output_base(&args.output_file)
        .map_err(|e| crate::error::CliError::input(format!("merge: -o/--output-file: {e}")))?;
    let output = std::path::absolute(&args.output_directory).map_err(|e| fail(e.into()))?;
    crate::run::destination::check_unused(&[crate::run::destination::Destination {
        directory: output,
        base: base.clone(),
    }])?;
    let (db, mut written, estimates) = merge_directories(
        &args.inputs,
        &args.output_directory,
        &base,
        formats,
        args.pass_match,
    )
    .map_err(fail)?;
    if asked.contains(&rtl_pmc_cli::args::OutputFormat::Html) {
        let path = args.output_directory.join(format!("{base}.html"));
        let report = crate::report::Report::build(&db, &estimates).map_err(|e| fail(e.into()))?;
        written.push(crate::report::write(&report, &path).map_err(fail)?);
    }
    let unmatched = db.unmatched().map_err(|e| fail(e.into()))?;
    if let Some(warning) = architectures_warning(&db, &args.inputs).map_err(|e| fail(e.into()))? {
        eprintln!("rtl-pmc: warning: {warning}");
    }
    if let Some(warning) = unmatched_warning(&unmatched, args.pass_match) {
        eprintln!("rtl-pmc: warning: {warning}");
    }
    for warning in estimates.warnings() {
        eprintln!("rtl-pmc: warning: {warning}");
    }
    let summary = rtl_pmc_profile::files::summary::render(&db, &[], args.summary_top)
        .map_err(|e| fail(e.into()))?
        + &estimates
            .summary(&db, args.summary_top)
            .map_err(|e| fail(e.into()))?;
    written.extend(db.commit(formats.rocpd).map_err(|e| fail(e.into()))?);
    eprint!("{summary}");
    for file in &written {
        eprintln!("rtl-pmc: wrote {}", file.display());
    }
    Ok(0)
}
