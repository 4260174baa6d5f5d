//! Running the application once per pass and writing the results.
//!
//! Each pass gets `pass_N/` with the plan file the interposer reads (`RTL_PMC_PLAN`), the raw
//! per-process records it writes, and, once the application has exited, the pass's
//! `counter_collection.csv` and `agent_info.csv`. Records go into the profile's database as
//! they are read; after the last pass the merged files and the summary come from it. Counters
//! that read 0 in every dispatch of a pass where they cannot ([`zeros`]) are reported once.

pub mod application;
mod child;
mod convert;
pub mod destination;
pub mod paths;
pub mod progress;
pub mod unfinished;
mod workload;
pub mod zeros;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rtl_pmc::dispatch::records::{self, Record, RecordError};
use rtl_pmc::passes::plan_file::PLAN_ENV;
use rtl_pmc_counters::{Catalog, CounterKind, Topology};

use crate::args::{LogLevel, OutputFormat};
use crate::error::CliError;
use crate::gpus::{self, Gpu};
use crate::planning::{ArchCatalog, ProfilePlan};
use crate::replay::Replay;
use rtl_pmc_profile::files::csv::CsvPaths;
use rtl_pmc_profile::files::csv::{write_agent_info, write_kernel_stats, AgentLabels, Table};
use rtl_pmc_profile::files::write_merged_files_with;
use rtl_pmc_profile::files::{Formats, OutputError};
use rtl_pmc_profile::join::pass::{write_pass, PassSpec};
use rtl_pmc_profile::join::process_files::write_process_files;
use rtl_pmc_profile::join::{unmatched_warning, unmatched_warning_for};
use rtl_pmc_profile::model::Agent;
use rtl_pmc_profile::model::{CounterInfo, RunInfo};
use rtl_pmc_profile::store::database::Database;
use rtl_pmc_profile::store::estimates::Estimates;
use rtl_pmc_profile::store::regions;

pub use child::exit_code;

/// The environment variable naming the tools library; rtl-pmc puts `librtl_pmc.so` first.
pub const TOOLS_LIB_ENV: &str = "HSA_TOOLS_LIB";
/// Overrides the path of `librtl_pmc.so` (default: next to the `rtl-pmc` executable).
pub const LIBRARY_ENV: &str = "RTL_PMC_LIBRARY";
/// The tools library's file name.
pub const LIBRARY_NAME: &str = "librtl_pmc.so";

/// The dynamic loader's list of libraries loaded first (`--preload` goes before it).
pub const PRELOAD_ENV: &str = "LD_PRELOAD";
/// The dynamic loader's search path, where rtl-pmc's roctx library stands in for ROCm's.
pub const LIBRARY_PATH_ENV: &str = "LD_LIBRARY_PATH";
/// rtl-pmc's roctx library's file name (next to `librtl_pmc.so`).
pub const ROCTX_LIBRARY_NAME: &str = "librtl_pmc_roctx.so";
/// The names applications link roctx by: ROCm's (roctracer) and rocprofiler-sdk's library.
pub const ROCTX_SONAMES: [&str; 4] = [
    "libroctx64.so.4",
    "libroctx64.so",
    "librocprofiler-sdk-roctx.so.1",
    "librocprofiler-sdk-roctx.so",
];

/// Exit code when a profile is interrupted with Ctrl-C.
pub const INTERRUPTED_EXIT: i32 = 130;

/// Everything a profile run needs beyond the plan.
pub struct RunOptions<'a> {
    /// The application and its arguments.
    pub app: &'a [String],
    /// Keep going after a failing pass.
    pub continue_on_error: bool,
    /// The environment of `--sim` (empty without).
    pub sim: &'a [(String, String)],
    /// The counter catalogs the plan was made with.
    pub catalogs: &'a [ArchCatalog],
    /// How dispatches of different passes are matched.
    pub pass_match: rtl_pmc_cli::args::PassMatch,
    /// How many kernels the summary lists.
    pub summary_top: usize,
    /// What is told on stderr.
    pub log_level: LogLevel,
    /// Which of the command's profiles (one per output directory) this is, from 0.
    pub profile: usize,
    /// `rtl-pmc finish`: the interrupted profile's saved start; its pass directories' records
    /// are read and the application is not run.
    pub finishing: Option<&'a unfinished::Saved>,
    /// How the CSV files' `Agent_Id` column names GPUs.
    pub agent_index: rtl_pmc_cli::args::AgentIndex,
    /// How pass directories and per-process files are named.
    pub layout: destination::PassLayout,
    /// `--block`: the panels whose counters are collected, written as a rocprof-compute
    /// workload directory too.
    pub blocks: Option<&'a crate::blocks::Blocks>,
}

impl RunOptions<'_> {
    /// Prints `warning` unless the log level hides warnings.
    fn warn(&self, warning: impl std::fmt::Display) {
        if self.log_level.warnings() {
            eprintln!("rtl-pmc: warning: {warning}");
        }
    }
}

fn io_error(what: &Path, e: impl std::fmt::Display) -> CliError {
    CliError {
        message: format!("{}: {e}", what.display()),
        exit_code: 1,
    }
}

fn output_error(e: impl std::fmt::Display) -> CliError {
    CliError {
        message: e.to_string(),
        exit_code: 1,
    }
}

/// The formats asked for by any job (the default ones when none is).
pub fn formats(asked: &[OutputFormat]) -> Formats {
    if asked.is_empty() {
        return Formats::default();
    }
    Formats {
        csv: asked.contains(&OutputFormat::Csv),
        json: asked.contains(&OutputFormat::Json),
        rocpd: asked.contains(&OutputFormat::Rocpd),
        pftrace: asked.contains(&OutputFormat::Pftrace),
        kernel_trace: false,
    }
}

/// The path of `librtl_pmc.so`: `RTL_PMC_LIBRARY`, else next to this executable, else in the
/// installed library directory (`../lib/rtl-pmc/`).
pub fn library_path() -> Result<PathBuf, CliError> {
    if let Some(path) = std::env::var_os(LIBRARY_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()
        .map_err(|e| output_error(format!("cannot find the rtl-pmc executable: {e}")))?;
    crate::layout::find(&exe, LIBRARY_NAME).ok_or_else(|| CliError {
        message: format!(
            "{}; set {LIBRARY_ENV} to its path",
            crate::layout::searched(&exe, LIBRARY_NAME)
        ),
        exit_code: 1,
    })
}

/// A directory holding rtl-pmc's roctx library under [`ROCTX_SONAMES`], for the application's
/// `LD_LIBRARY_PATH`; removed when dropped.
struct RoctxDirectory {
    path: PathBuf,
}

impl RoctxDirectory {
    /// Links `library` (`librtl_pmc_roctx.so` beside `librtl_pmc.so`) under every roctx name in
    /// a new directory under the temporary directory.
    fn create(tools_library: &Path) -> Result<RoctxDirectory, CliError> {
        let library = tools_library.with_file_name(ROCTX_LIBRARY_NAME);
        if !library.is_file() {
            return Err(CliError {
                message: format!(
                    "{} not found next to {}; build it with `cargo build --workspace`",
                    ROCTX_LIBRARY_NAME,
                    tools_library.display()
                ),
                exit_code: 1,
            });
        }
        let library = std::fs::canonicalize(&library).map_err(|e| io_error(&library, e))?;
        let path = std::env::temp_dir().join(format!("rtl-pmc-roctx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| io_error(&path, e))?;
        let directory = RoctxDirectory { path };
        for name in ROCTX_SONAMES {
            let link = directory.path.join(name);
            std::os::unix::fs::symlink(&library, &link).map_err(|e| io_error(&link, e))?;
        }
        Ok(directory)
    }

    /// The library itself.
    fn library(&self) -> PathBuf {
        self.path.join(ROCTX_SONAMES[0])
    }
}

impl Drop for RoctxDirectory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `value` put in front of the list variable `name` (`:`-separated) as the application would
/// otherwise get it: from `added`, else from rtl-pmc's own environment.
fn prepend(added: &mut Vec<(String, String)>, name: &str, value: String) {
    let earlier = added
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(name).ok())
        .filter(|v| !v.trim().is_empty());
    let joined = match earlier {
        Some(earlier) => format!("{value}:{earlier}"),
        None => value,
    };
    added.retain(|(k, _)| k != name);
    added.push((name.to_string(), joined));
}

/// What the agents of the topology the application will see are.
struct KnownAgents {
    /// The GPUs.
    gpus: Vec<Agent>,
    /// The GPUs' engine topologies, by node id.
    topologies: HashMap<u32, Topology>,
    /// The CPUs, named by `/proc/cpuinfo`.
    cpus: Vec<Agent>,
}

/// This machine's CPU model name and family from `/proc/cpuinfo`, if it says.
fn cpu_model() -> (String, Option<u64>) {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_string())
        })
    };
    (
        field("model name").unwrap_or_default(),
        field("cpu family").and_then(|f| f.parse().ok()),
    )
}

/// The GPUs and CPUs of the topology the application will see.
fn known_agents(sim: &[(String, String)]) -> KnownAgents {
    let setting = |variable: &str| {
        sim.iter()
            .find(|(name, _)| name == variable)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(variable).ok())
    };
    let dir = gpus::topology_dir(setting(gpus::TOPOLOGY_ENV).as_deref());
    let found: Vec<Gpu> = gpus::detect(&dir).unwrap_or_default();
    let products = gpus::product_names(&found, setting(gpus::AMDGPU_IDS_ENV).as_deref());
    let mut agents = Vec::new();
    let mut topologies = HashMap::new();
    for ((index, gpu), product) in found.iter().enumerate().zip(products) {
        let topology = Topology::from_kfd_properties(&gpu.properties).ok();
        agents.push(Agent {
            node_id: gpu.node,
            gpu_index: index as u32,
            name: gpu.arch.clone(),
            product_name: product,
            model_name: gpus::node_name(&dir, gpu.node),
            properties: topology
                .as_ref()
                .map(|t| {
                    let mut properties: Vec<(String, u64)> = t
                        .properties()
                        .iter()
                        .map(|(k, v)| (k.clone(), *v))
                        .collect();
                    // KFD does not give the CU count; rocprofv3 reports the active CUs.
                    if t.property("cu_count").is_none() {
                        properties.push(("cu_count".into(), t.cu_count()));
                    }
                    if let Some(id) = gpus::gpu_id(&dir, gpu.node) {
                        properties.push(("gpu_id".into(), id));
                    }
                    // rocprofiler-sdk asks libdrm, whose answer is the driver's family of the
                    // gfx target.
                    if let Some(version) = t.property("gfx_target_version") {
                        let family = crate::sim_env::amdgpu_family(version as u32);
                        properties.push(("family_id".into(), u64::from(family)));
                    }
                    properties
                })
                .unwrap_or_default(),
        });
        if let Some(t) = topology {
            topologies.insert(gpu.node, t);
        }
    }
    let (model, family) = cpu_model();
    let cpus = gpus::detect_cpus(&dir)
        .into_iter()
        .map(|cpu| {
            let mut properties = cpu.properties;
            if let Some(family) = family {
                properties.push(("family_id".into(), family));
            }
            Agent {
                node_id: cpu.node,
                gpu_index: 0,
                name: model.clone(),
                product_name: model.clone(),
                model_name: gpus::node_name(&dir, cpu.node),
                properties,
            }
        })
        .collect();
    KnownAgents {
        gpus: agents,
        topologies,
        cpus,
    }
}

/// The raw record files of a pass directory, by pid.
fn record_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == records::EXTENSION))
                .map(|p| {
                    let pid = p
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(u64::MAX);
                    (pid, p)
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files.into_iter().map(|(_, p)| p).collect()
}

/// One record file, read one record ahead.
type RecordStream = std::iter::Peekable<Box<dyn Iterator<Item = Result<Record, RecordError>>>>;

/// The records of a pass's files merged by start time: each file is nearly in start order, so
/// taking the earliest next record of any file keeps the whole nearly in start order.
struct StartMerged {
    files: Vec<RecordStream>,
    /// The records read from each file.
    read: Vec<u64>,
}

impl StartMerged {
    fn open(files: &[PathBuf]) -> StartMerged {
        StartMerged {
            files: files
                .iter()
                .map(|f| {
                    let records: Box<dyn Iterator<Item = _>> = Box::new(records::read(f));
                    records.peekable()
                })
                .collect(),
            read: vec![0; files.len()],
        }
    }

    /// The processes whose files have records, by the pid of their first record.
    fn processes(&mut self) -> Vec<u32> {
        self.files
            .iter_mut()
            .filter_map(|f| f.peek()?.as_ref().ok().map(|r| r.pid))
            .collect()
    }
}

impl Iterator for StartMerged {
    type Item = Result<Record, RecordError>;

    /// The earliest next record of any file; a file's error as soon as it is next.
    fn next(&mut self) -> Option<Self::Item> {
        let mut earliest: Option<(usize, u64)> = None;
        for (i, file) in self.files.iter_mut().enumerate() {
            match file.peek() {
                Some(Ok(r)) if earliest.is_none_or(|(_, start)| r.start < start) => {
                    earliest = Some((i, r.start))
                }
                Some(Ok(_)) | None => {}
                Some(Err(_)) => return file.next(),
            }
        }
        let at = earliest?.0;
        self.read[at] += 1;
        self.files[at].next()
    }
}

/// Runs the application once per run of `plan` and writes the results to `destination` (the
/// one checked unused before anything ran). Returns the exit code to leave with: the
/// application's (128+signal for a signal death), 130 after Ctrl-C.
pub fn run(
    plan: &ProfilePlan,
    destination: &destination::Destination,
    options: &RunOptions<'_>,
    replay: Replay,
    progress: &mut progress::Progress,
) -> Result<i32, CliError> {
    let destination::Destination { directory, base } = destination.clone();
    let launched = std::time::SystemTime::now();
    let asked: Vec<OutputFormat> = plan
        .runs
        .iter()
        .flat_map(|r| r.settings.output_format.iter().copied())
        .collect();
    let formats = Formats {
        kernel_trace: plan.runs.iter().any(|r| r.settings.kernel_trace),
        ..formats(&asked)
    };
    let html = asked.contains(&OutputFormat::Html);
    let library = library_path()?;
    let Some((program, arguments)) = options.app.split_first() else {
        return Err(CliError::input("no application given"));
    };
    let roctx = RoctxDirectory::create(&library)?;
    std::fs::create_dir_all(&directory).map_err(|e| io_error(&directory, e))?;
    let finishing = options.finishing;
    if finishing.is_some() {
        unfinished::clean(&directory, &base);
    }
    let mut db = Database::create(&directory.join(format!("{base}.db"))).map_err(output_error)?;
    let mut marker = match finishing {
        None => unfinished::Marker::create(&directory, options.profile),
        Some(_) => None,
    };
    // `rtl-pmc finish`: per pass read, the application's exit code, None if it was still
    // running when rtl-pmc ended.
    let mut finished_passes: Vec<(u32, Option<i32>)> = Vec::new();
    db.set_pass_match(options.pass_match);
    let KnownAgents {
        gpus: known,
        topologies,
        cpus,
    } = known_agents(options.sim);
    for agent in &known {
        db.add_agent(agent).map_err(output_error)?;
    }
    for cpu in &cpus {
        db.add_cpu(cpu).map_err(output_error)?;
    }
    let run_info = RunInfo {
        command: options.app.to_vec(),
        environment: std::env::vars().collect(),
        ppid: Some(std::process::id()),
    };
    db.set_run(&run_info).map_err(output_error)?;
    let catalogs: Vec<&Catalog> = options.catalogs.iter().map(|c| &c.catalog).collect();
    let labels = match options.agent_index {
        rtl_pmc_cli::args::AgentIndex::TypeRelative => {
            let mut nodes: Vec<u32> = known.iter().map(|a| a.node_id).collect();
            nodes.sort_unstable();
            AgentLabels::TypeRelative(nodes)
        }
        _ => AgentLabels::Node,
    };
    let layout = options.layout;
    child::install_interrupt_handler();

    let tools_lib = match std::env::var(TOOLS_LIB_ENV) {
        Ok(other) if !other.trim().is_empty() => format!("{} {other}", library.display()),
        _ => library.display().to_string(),
    };
    let kernel_plan = match replay {
        Replay::Kernel { budget } => {
            // One run writes every pass: all pass directories exist before it starts, each
            // with the one plan.
            let dirs: Vec<PathBuf> = plan
                .runs
                .iter()
                .map(|r| layout.directory(&directory, r.number as u32))
                .collect();
            for dir in dirs.iter().filter(|_| finishing.is_none()) {
                std::fs::create_dir(dir).map_err(|e| io_error(dir, e))?;
            }
            let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
            let combined = crate::replay::kernel_plan(plan, &refs, budget);
            for dir in dirs.iter().filter(|_| finishing.is_none()) {
                combined
                    .write(&dir.join("plan.json"))
                    .map_err(output_error)?;
            }
            Some(combined)
        }
        Replay::Application => None,
    };
    let mut zeros = zeros::ZeroCounters::default();
    let mut exit = 0;
    let mut written = Vec::new();
    // Kernel replay: the exit code of the one run, and what the replay did.
    let mut replayed: Option<(i32, std::time::Duration)> = None;
    let mut replay_report = crate::replay::Report::default();
    // Application replay: the wall time of each run that succeeded.
    let mut run_times: Vec<std::time::Duration> = Vec::new();
    for run in &plan.runs {
        if child::interrupted() {
            break;
        }
        let pass = run.number as u32;
        let pass_dir = layout.directory(&directory, pass);
        if finishing.is_some() && !pass_dir.is_dir() {
            break;
        }
        let run_plan = match &kernel_plan {
            Some(combined) => combined.clone(),
            None if finishing.is_some() => run.plan_file(&pass_dir),
            None => {
                // Never an existing one: its files would mix with this run's.
                std::fs::create_dir(&pass_dir).map_err(|e| io_error(&pass_dir, e))?;
                run.plan_file(&pass_dir)
            }
        };
        let plan_path = pass_dir.join("plan.json");
        if kernel_plan.is_none() && finishing.is_none() {
            run_plan.write(&plan_path).map_err(output_error)?;
        }
        let counters = run
            .agents
            .iter()
            .flat_map(|a| a.groups.iter().flat_map(|g| g.counters.iter()))
            .fold(Vec::<String>::new(), |mut names, c| {
                if !names.contains(c) {
                    names.push(c.clone());
                }
                names
            });
        db.declare_counters(&counters).map_err(output_error)?;
        let info: Vec<CounterInfo> = counters
            .iter()
            .filter_map(|name| {
                let def = options
                    .catalogs
                    .iter()
                    .find_map(|c| c.catalog.counter(name))?;
                let (block, expression) = match &def.kind {
                    CounterKind::Basic { block, .. } => (Some(block.clone()), None),
                    CounterKind::Derived { expression } => (None, Some(expression.clone())),
                };
                Some(CounterInfo {
                    name: name.clone(),
                    unit: def.unit.clone().unwrap_or_default(),
                    description: def.description.clone(),
                    derived: expression.is_some(),
                    block,
                    expression,
                })
            })
            .collect();
        db.set_counter_info(&info).map_err(output_error)?;
        let label = counters.join(" ");

        let mut added: Vec<(String, String)> = options.sim.to_vec();
        added.push((TOOLS_LIB_ENV.into(), tools_lib.clone()));
        added.push((PLAN_ENV.into(), plan_path.display().to_string()));
        added.extend(
            run.name_environment()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let mut preload = run.settings.preload.clone();
        preload.push(roctx.library().display().to_string());
        prepend(&mut added, PRELOAD_ENV, preload.join(":"));
        prepend(
            &mut added,
            LIBRARY_PATH_ENV,
            roctx.path.display().to_string(),
        );
        if options.log_level.shows_environment() {
            for (name, value) in &added {
                eprintln!("rtl-pmc: pass {pass}: {name}={value}");
            }
        }
        let (code, started) = match (replayed, finishing) {
            (_, Some(saved)) => {
                let ran = saved
                    .passes
                    .iter()
                    .find(|(p, _)| *p == pass)
                    .map(|(_, c)| *c);
                finished_passes.push((pass, ran));
                (ran.unwrap_or(0), Instant::now())
            }
            (Some((code, elapsed)), None) => (code, Instant::now() - elapsed),
            (None, None) => {
                let mut command = Command::new(program);
                command
                    .args(arguments)
                    .envs(added.iter().map(|(k, v)| (k, v)));
                let started = Instant::now();
                let shown = match &kernel_plan {
                    Some(_) => format!("{} passes, kernel replay", plan.runs.len()),
                    None => label.clone(),
                };
                progress.start(&shown);
                let status =
                    child::run(&mut command, || progress.tick()).map_err(|e| CliError {
                        message: format!("cannot run '{program}': {e}"),
                        exit_code: if e.kind() == std::io::ErrorKind::NotFound {
                            127
                        } else {
                            126
                        },
                    })?;
                let code = if child::interrupted() && status.code() != Some(0) {
                    INTERRUPTED_EXIT
                } else {
                    exit_code(status)
                };
                if kernel_plan.is_some() {
                    replayed = Some((code, started.elapsed()));
                } else if code == 0 {
                    run_times.push(started.elapsed());
                }
                (code, started)
            }
        };
        if let Some(marker) = marker.as_mut() {
            marker.pass_ran(pass, code);
        }

        let name = run
            .settings
            .output_file
            .as_deref()
            .unwrap_or(layout.process_name());
        let path_of = |pid: u32, kind: &str, extension: &str| {
            destination::process_path(&pass_dir, name, options.app, pid, kind, extension)
        };
        let file_of = |pid: u32, kind: &str| path_of(pid, kind, "csv");
        let csv_of = |pid: u32, table: Table| file_of(pid, table.kind());
        if let Some(parent) = file_of(0, "").parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
        }
        let tables: &[Table] = match (counters.is_empty(), run.settings.kernel_trace) {
            (true, _) => &[Table::KernelTrace],
            (false, true) => &[Table::CounterCollection, Table::KernelTrace],
            (false, false) => &[Table::CounterCollection],
        };
        let mut converter = convert::Converter::new(&run_plan, &catalogs, &topologies);
        let mut files = record_files(&pass_dir);
        let own_files = files.len();
        if kernel_plan.is_some() && pass > 1 {
            // What pass 1 collected and this pass did not (a declined dispatch, a GPU with
            // fewer passes, timing only) is in this pass too, without counters, so that the
            // dispatches of every pass are the same and join exactly.
            files.extend(record_files(&layout.directory(&directory, 1)));
        }
        let mut records = StartMerged::open(&files);
        let processes = {
            let mut pids = records.processes();
            pids.sort_unstable();
            pids.dedup();
            pids
        };
        let spec = PassSpec {
            pass,
            label: &label,
            csv: formats.csv.then_some(&csv_of as &CsvPaths<'_>),
            tables,
            labels: &labels,
            processes: &[(0, processes.clone())],
            exit_status: match finishing {
                Some(_) => finished_passes.last().and_then(|(_, ran)| *ran),
                None => Some(code),
            },
        };
        let mut dispatch_ranges: Vec<(u32, u64, Vec<u64>)> = Vec::new();
        let pass_written = write_pass(&mut db, &spec, |input| {
            for record in records.by_ref() {
                match record {
                    Ok(record) => {
                        if pass == 1 {
                            replay_report.observe(&record);
                        }
                        let record = match &kernel_plan {
                            Some(_) => match crate::replay::for_pass(record, pass) {
                                Some(r) => r,
                                None => continue,
                            },
                            None => record,
                        };
                        if !record.ranges.is_empty() {
                            dispatch_ranges.push((
                                record.pid,
                                record.dispatch,
                                record.ranges.clone(),
                            ));
                        }
                        let dispatch = converter.convert(&record);
                        zeros.observe(pass, &dispatch);
                        input.write(0, dispatch)?
                    }
                    Err(e) => options.warn(e),
                }
            }
            Ok::<_, OutputError>(())
        })
        .map_err(output_error)?;
        let dispatches = pass_written.dispatches;
        for (file, kept) in files.iter().zip(&records.read).take(own_files) {
            if let Some(warning) = lost_warning(file, *kept) {
                options.warn(format_args!("pass {pass}: {warning}"));
            }
        }
        let mut roctx_events = Vec::new();
        for file in record_files(&pass_dir) {
            let mut events = Vec::new();
            for region in records::read_regions(&file) {
                match region {
                    Ok(region) => events.push(region),
                    Err(e) => options.warn(e),
                }
            }
            roctx_events.push(events);
        }
        regions::store_pass(&db, pass, &roctx_events, &dispatch_ranges).map_err(output_error)?;
        written.extend(pass_written.csv);
        for agent in converter.seen_agents(&known) {
            if !known.iter().any(|k| k.node_id == agent.node_id) {
                db.add_agent(&agent).map_err(output_error)?;
            }
        }
        for derived in converter.derived_per_kernel(pass) {
            db.add_kernel_derived(&derived).map_err(output_error)?;
        }
        for warning in &converter.warnings {
            options.warn(format_args!("pass {pass}: {warning}"));
        }
        let agents = db.agents().map_err(output_error)?;
        let mut agent_info: Vec<PathBuf> = processes
            .iter()
            .map(|&pid| file_of(pid, "agent_info"))
            .collect();
        agent_info.dedup();
        // rocprofv3 writes agent_info.csv with the CSV files only; rocprof-compute reads every
        // CSV file of a pass's process directory as results in JSON mode.
        if formats.csv || layout == destination::PassLayout::Pass {
            for path in agent_info {
                written.push(write_agent_info(&path, &cpus, &agents).map_err(output_error)?);
            }
        }
        if layout == destination::PassLayout::Pmc {
            let own = |pid: u32, extension: &str| path_of(pid, "results", extension);
            written.extend(
                write_process_files(&db, pass, &processes, formats, &own).map_err(output_error)?,
            );
        }
        if finishing.is_some() {
            let how = match finished_passes.last().and_then(|(_, ran)| *ran) {
                Some(code) => format!("its application ended with exit code {code}"),
                None => "interrupted while its application ran".to_string(),
            };
            eprintln!("rtl-pmc: pass {pass}: {how}; {dispatches} dispatches in its raw records");
            continue;
        }
        match &kernel_plan {
            None => progress.finish(started.elapsed(), code, dispatches),
            Some(_) if pass == 1 => progress.finish(started.elapsed(), code, dispatches),
            Some(_) => {}
        }
        if code != 0 {
            if exit == 0 {
                exit = code;
            }
            // Kernel replay: every pass comes from the one run, all are written.
            if kernel_plan.is_none() && (!options.continue_on_error || child::interrupted()) {
                if plan.runs.len() > pass as usize && !child::interrupted() {
                    eprintln!(
                        "rtl-pmc: the application exited with {code} in pass {pass}; stopping (--continue-on-error runs the remaining passes)"
                    );
                }
                break;
            }
        }
    }
    if child::interrupted() {
        eprintln!("rtl-pmc: interrupted; writing what was collected");
        exit = INTERRUPTED_EXIT;
    }

    let unmatched = db.unmatched().map_err(output_error)?;
    let cut: Vec<String> = finished_passes
        .iter()
        .filter(|(_, ran)| ran.is_none())
        .map(|(p, _)| p.to_string())
        .collect();
    let warning = match cut.is_empty() {
        true => unmatched_warning(&unmatched, options.pass_match),
        false => unmatched_warning_for(
            &unmatched,
            &format!(
                "pass {} was cut short when rtl-pmc was interrupted",
                cut.join(", ")
            ),
        ),
    };
    if let Some(warning) = warning {
        options.warn(warning);
    }
    if let Some(warning) = zeros.warning() {
        options.warn(warning);
    }
    let estimates = Estimates::compute(&db).map_err(output_error)?;
    for warning in estimates.warnings() {
        options.warn(warning);
    }
    let mut summary = rtl_pmc_profile::files::summary::render(&db, &[], options.summary_top)
        .map_err(output_error)?;
    summary.push_str(
        &estimates
            .summary(&db, options.summary_top)
            .map_err(output_error)?,
    );
    if let Replay::Kernel { .. } = replay {
        summary.push_str(&replay_report.render(plan.runs.len()));
    }
    let any =
        |on: fn(&rtl_pmc_cli::inputs::Settings) -> bool| plan.runs.iter().any(|r| on(&r.settings));
    if any(|s| s.stats) {
        let stats = db.kernel_stats().map_err(output_error)?;
        let path = directory.join(format!("{base}_kernel_stats.csv"));
        written.push(write_kernel_stats(&path, &stats).map_err(|e| io_error(&path, e))?);
    }
    // The report reads the per-kernel totals this handle kept while inserting.
    let report = match html {
        true => Some(crate::report::Report::build(&db, &estimates).map_err(output_error)?),
        false => None,
    };
    if let Some(blocks) = options.blocks {
        let runs = match replay {
            Replay::Kernel { .. } => 1,
            Replay::Application => plan.runs.len(),
        };
        summary.push_str(&blocks.runs_line(runs));
        if workload::write(&db, &directory, options.app, blocks)?.is_some() {
            written.push(directory.join("workloads"));
        }
    }
    // The merged files are read from the database while its commit writes rocpd's tables.
    let (db_path, merged) = db
        .commit_while(formats.rocpd, |db| {
            write_merged_files_with(db, &directory, &base, formats, &estimates)
        })
        .map_err(output_error)?;
    if !child::interrupted() && finishing.is_none() {
        record_costs(
            options.app,
            replay,
            replayed,
            &run_times,
            &replay_report,
            plan.runs.len(),
        );
    }
    written.extend(merged);
    if let Some(report) = report {
        let path = directory.join(format!("{base}.html"));
        written.push(crate::report::write(&report, &path).map_err(output_error)?);
    }
    written.extend(db_path);
    if any(|s| s.output_config) {
        let path = directory.join(format!("{base}_config.json"));
        written.push(write_config(&path, plan, options.app, launched, replay)?);
    }
    let summary_file = plan
        .runs
        .iter()
        .find_map(|r| r.settings.summary_output_file.as_deref());
    match summary_file {
        Some(f) if f.eq_ignore_ascii_case("stdout") => print!("{summary}"),
        None => eprint!("{summary}"),
        Some(f) if f.eq_ignore_ascii_case("stderr") => eprint!("{summary}"),
        Some(f) => {
            let path = directory.join(format!("{base}_{f}.txt"));
            std::fs::write(&path, &summary).map_err(|e| io_error(&path, e))?;
            written.push(path);
        }
    }
    if finishing.is_some() {
        eprintln!(
            "rtl-pmc: {}",
            unfinished::note(&finished_passes, plan.runs.len())
        );
        let _ = std::fs::remove_file(directory.join(unfinished::MARKER));
    }
    drop(marker);
    eprintln!("rtl-pmc: results in {}", directory.display());
    for file in written
        .iter()
        .filter(|f| f.parent() == Some(directory.as_path()))
    {
        eprintln!("rtl-pmc:   {}", file.display());
    }
    Ok(exit)
}

/// The warning for the dispatch records a process's raw record file `file` lacks, `kept` of
/// them read: how many its header says were handed over and not recorded, and the likely cause.
fn lost_warning(file: &Path, kept: u64) -> Option<String> {
    let tally = records::read_tally(file).ok()?;
    let lost = tally.expected.checked_sub(kept).filter(|&n| n > 0)?;
    let were = if lost == 1 { "was" } else { "were" };
    let cause = match tally.ending {
        records::Ending::Signal(n) => {
            let name = nix::sys::signal::Signal::try_from(n).map_or("a signal", |s| s.as_str());
            format!("{were} still running when {name} ({n}) ended the process")
        }
        records::Ending::Unfinished => format!("{were} still running when the process ended without finishing (by _exit, exec, or a signal such as SIGKILL)"),
        records::Ending::Closed => "did not complete before the process exited, or could not be written (see the warnings above)".to_string(),
    };
    Some(format!(
        "process {}: {} profiled dispatch{}, {kept} recorded; the other {lost} {cause}",
        tally.pid,
        tally.expected,
        if tally.expected == 1 { "" } else { "es" },
    ))
}

/// Keeps what this profile's replay cost for its command ([`crate::costs`]).
fn record_costs(
    app: &[String],
    replay: Replay,
    replayed: Option<(i32, std::time::Duration)>,
    run_times: &[std::time::Duration],
    report: &crate::replay::Report,
    passes: usize,
) {
    match (replay, replayed) {
        (Replay::Kernel { .. }, Some((0, elapsed))) => {
            let (replayed, saved, restored) = report.per_dispatch();
            crate::costs::store(app, |m| {
                m.kernel = Some(crate::costs::KernelRun {
                    run_ns: elapsed.as_nanos() as u64,
                    passes: passes as u32,
                    replayed,
                    saved,
                    restored,
                })
            });
        }
        (Replay::Application, _) if !run_times.is_empty() => {
            let total: std::time::Duration = run_times.iter().sum();
            let run_ns = (total / run_times.len() as u32).as_nanos() as u64;
            crate::costs::store(app, |m| {
                m.application = Some(crate::costs::ApplicationRun { run_ns })
            });
        }
        _ => {}
    }
}

/// Writes `<base>_config.json` (`--output-config`): rocprofv3's layout, a `metadata` object with
/// the pid, launch and end times (ns since the epoch), the command and, as `config`, each run's
/// counters and settings and the replay the profile used.
fn write_config(
    path: &Path,
    plan: &ProfilePlan,
    app: &[String],
    launched: std::time::SystemTime,
    replay: Replay,
) -> Result<PathBuf, CliError> {
    let ns = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    };
    let runs: Vec<serde_json::Value> = plan
        .runs
        .iter()
        .map(|run| {
            let s = &run.settings;
            let counters: Vec<&String> = run
                .agents
                .iter()
                .flat_map(|a| a.groups.iter().flat_map(|g| g.counters.iter()))
                .collect();
            serde_json::json!({
                "pass": run.number,
                "pmc": counters,
                "kernel_include_regex": s.filters.include_regex,
                "kernel_exclude_regex": s.filters.exclude_regex,
                "kernel_iteration_range": s.filters.iterations.iter()
                    .map(|r| format!("[{}-{}]", r.first, r.last)).collect::<Vec<_>>(),
                "output_directory": s.output_directory,
                "output_file": s.output_file,
                "output_format": s.output_format.iter()
                    .map(|f| format!("{f:?}").to_lowercase()).collect::<Vec<_>>(),
                "truncate_kernels": s.truncate_kernels,
                "mangled_kernels": s.mangled_kernels,
                "kernel_rename": s.kernel_rename,
                "disable_signal_handlers": s.disable_signal_handlers,
                "selected_regions": s.filters.selected_regions,
                "roctx_include_regex": s.filters.roctx_include_regex,
                "summary": s.summary,
                "summary_output_file": s.summary_output_file,
                "stats": s.stats,
                "log_level": s.log_level.map(|l| format!("{l:?}").to_lowercase()),
                "preload": s.preload,
                "replay_mode": format!("{:?}", s.replay_mode.unwrap_or_default()).to_lowercase(),
                "replay_memory_budget": s.replay_memory_budget,
            })
        })
        .collect();
    let config = serde_json::json!({
        "rocprofiler-sdk-tool": [{
            "metadata": {
                "pid": std::process::id(),
                "init_time": ns(launched),
                "fini_time": ns(std::time::SystemTime::now()),
                "command": app,
                "config": {
                    "runs": runs,
                    "replay": match replay {
                        Replay::Application => "application",
                        Replay::Kernel { .. } => "kernel",
                    },
                },
            }
        }]
    });
    let text = serde_json::to_string_pretty(&config).map_err(output_error)? + "\n";
    std::fs::write(path, text).map_err(|e| io_error(path, e))?;
    Ok(path.to_path_buf())
}
