//! Measuring one configuration: its simulated system, its plan, the child runs, and the checks
//! of the records they wrote.

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rtl_pmc::dispatch::records;
use rtl_pmc::passes::plan_file::{AgentPlan, EventGroup, KernelFilters, PlanEvent, RunPlan};
use rtl_pmc::passes::plan_file::{PLAN_ENV, PLAN_VERSION};
use rtl_pmc_counters::Catalog;

use crate::{Mode, Peer, BATCH, INTERCEPT_ENV, MAX_GPUS};

/// Kernel duration factor of the simulator: zero-length kernels (it must be positive).
const SLOW: &str = "0.000001";
/// The simulated systems of 1 to 8 MI300X-shaped GPUs: the first N of these.
const GFX942X8: &str = include_str!("../../sim/configs/gfx942x8.json");
/// A child that has not finished after this long plus [`TIME_PER_DISPATCH`] per dispatch is
/// taken to hang and killed.
const TIME_LIMIT: Duration = Duration::from_secs(60);
const TIME_PER_DISPATCH: Duration = Duration::from_millis(1);

/// One measured configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    pub mode: Mode,
    pub threads: u32,
    /// Queues per thread.
    pub queues: u32,
    pub gpus: u32,
    /// Dispatches over all threads: a whole number of batches per thread.
    pub dispatches: u64,
}

impl Config {
    /// A configuration of about `dispatches` dispatches, rounded up to whole batches per thread.
    pub fn new(mode: Mode, threads: u32, queues: u32, gpus: u32, dispatches: u64) -> Config {
        let step = u64::from(threads) * BATCH;
        Config {
            mode,
            threads,
            queues,
            gpus,
            dispatches: dispatches.div_ceil(step) * step,
        }
    }

    /// The same configuration without the tool: the ratio's denominator.
    pub fn without_tool(self) -> Config {
        Config {
            mode: Mode::None,
            ..self
        }
    }
}

/// The medians of one configuration's runs, per dispatch, and what its records showed.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Wall time of the dispatch phase, ns per dispatch.
    pub wall_ns: f64,
    /// Process CPU time over the dispatch phase, ns per dispatch.
    pub cpu_ns: f64,
    /// The process's peak resident memory, MiB.
    pub rss_mib: f64,
    /// Counter samples per recorded dispatch (`None` without the tool).
    pub samples: Option<f64>,
    /// What the records got wrong (missing dispatches, GPUs or queues), one sentence each.
    pub warnings: Vec<String>,
}

/// What one child reported.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Wall and CPU ns of its dispatch phase.
    wall_ns: f64,
    cpu_ns: f64,
    /// Its peak resident memory, KiB.
    rss_kib: f64,
}

impl Measurement {
    /// The figures printed for this measurement against `none`, that of the same configuration
    /// without the tool: wall and CPU ns per dispatch, peak MiB, `none`'s wall ns per dispatch,
    /// and the ratios of wall and of CPU times.
    pub fn against(&self, none: &Measurement) -> [f64; 6] {
        [
            self.wall_ns,
            self.cpu_ns,
            self.rss_mib,
            none.wall_ns,
            self.wall_ns / none.wall_ns,
            self.cpu_ns / none.cpu_ns,
        ]
    }

    /// The medians of `runs`: times per dispatch, memory in MiB.
    fn of(runs: &[Run], dispatches: u64, recorded: Option<&Recorded>) -> Measurement {
        let per = |values: Vec<f64>| median(values) / dispatches as f64;
        Measurement {
            wall_ns: per(runs.iter().map(|r| r.wall_ns).collect()),
            cpu_ns: per(runs.iter().map(|r| r.cpu_ns).collect()),
            rss_mib: median(runs.iter().map(|r| r.rss_kib).collect()) / 1024.0,
            samples: recorded
                .filter(|r| !r.peer)
                .map(|r| r.samples as f64 / r.dispatches.max(1) as f64),
            warnings: Vec::new(),
        }
    }
}

/// What one run's raw records hold.
#[derive(Debug, Default)]
struct Recorded {
    /// Counted from a peer's output (dispatches only).
    peer: bool,
    /// The peer's files with a table of dispatches.
    tables: u32,
    dispatches: u64,
    samples: u64,
    gpus: BTreeSet<u32>,
    queues: BTreeSet<(u32, u64)>,
}

impl Recorded {
    /// Where the records differ from what `config` dispatched: one sentence each.
    fn problems(&self, config: Config) -> Vec<String> {
        let mut problems = Vec::new();
        if self.peer {
            match self.tables {
                0 => problems.push(
                    "no SQLite file with a rocpd_kernel_dispatch or rocpd_op table where it ran"
                        .to_string(),
                ),
                _ if self.dispatches != config.dispatches => problems.push(format!(
                    "recorded {} of {} dispatches",
                    self.dispatches, config.dispatches
                )),
                _ => {}
            }
            return problems;
        }
        if !config.mode.selects() {
            if self.dispatches != 0 {
                problems.push(format!(
                    "recorded {} dispatches the kernel filter leaves out",
                    self.dispatches
                ));
            }
            return problems;
        }
        if self.dispatches != config.dispatches {
            problems.push(format!(
                "recorded {} of {} dispatches",
                self.dispatches, config.dispatches
            ));
        }
        if self.gpus.len() != config.gpus as usize {
            problems.push(format!(
                "the records name {} GPU(s) of {}",
                self.gpus.len(),
                config.gpus
            ));
        }
        let queues = config.threads as usize * config.queues as usize;
        if self.queues.len() != queues {
            problems.push(format!(
                "the records name {} queue(s) of {queues}",
                self.queues.len()
            ));
        }
        problems
    }
}

/// A simulated system: the environment of a program on it, and its GPUs' architectures.
#[derive(Debug, Clone)]
struct System {
    env: Vec<(String, String)>,
    archs: Vec<String>,
}

/// The tools library a child runs with.
#[derive(Debug, Clone, Copy)]
enum Tool<'a> {
    /// None.
    None,
    /// rtl-pmc with this plan file.
    RtlPmc(&'a Path),
    /// Another HSA tools library.
    Peer(&'static Peer),
}

impl Tool<'_> {
    /// The library's path, whose code a thread ran if it is one of the tool's.
    fn library(&self, exe: &Path) -> Option<PathBuf> {
        match self {
            Tool::None => None,
            Tool::RtlPmc(_) => Some(exe.with_file_name(RTL_PMC_LIBRARY)),
            Tool::Peer(peer) => Some(peer.path.clone()),
        }
    }
}

/// rtl-pmc's tools library, beside this program.
const RTL_PMC_LIBRARY: &str = "librtl_pmc.so";

/// Runs configurations, each once however many tables show it.
pub struct Bench {
    exe: PathBuf,
    /// Plans, records and simulated-system files.
    dir: PathBuf,
    keep: bool,
    runs: usize,
    /// Per GPU count, its simulated system.
    systems: HashMap<u32, System>,
    plans: HashMap<(Mode, u32), PathBuf>,
    results: HashMap<Config, Result<(Measurement, Measurement), String>>,
}

impl Bench {
    /// A bench working in `keep` (kept afterwards) or in a temporary directory.
    pub fn new(runs: usize, keep: Option<PathBuf>) -> Result<Bench, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
        let dir = keep.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("rtl-dispatch-bench-{}", std::process::id()))
        });
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Bench {
            exe,
            dir,
            keep: keep.is_some(),
            runs,
            systems: HashMap::new(),
            plans: HashMap::new(),
            results: HashMap::new(),
        })
    }

    /// `config`'s measurement and that of the same configuration without the tool, from runs
    /// that alternate (one without, one with the tool, and again), so that both see the same
    /// load from the rest of the machine. A configuration is measured the first time it is
    /// asked for.
    pub fn compare(&mut self, config: Config) -> Result<(Measurement, Measurement), String> {
        if let Some(result) = self.results.get(&config) {
            return result.clone();
        }
        eprintln!(
            "measuring mode={} threads={} queues={} gpus={} dispatches={} ({} runs)",
            config.mode.label(),
            config.threads,
            config.queues,
            config.gpus,
            config.dispatches,
            self.runs
        );
        let result = self.run_both(config);
        self.results.insert(config, result.clone());
        result
    }

    fn run_both(&mut self, config: Config) -> Result<(Measurement, Measurement), String> {
        let env = self.system(config.gpus)?.env.clone();
        let plan = self.plan(config.mode, config.gpus)?;
        let tool = self.tool(config.mode, plan.as_deref());
        let out_dir = self.out_dir(config.mode);
        let (mut none, mut runs) = (Vec::new(), Vec::new());
        let mut recorded = None;
        for _ in 0..self.runs {
            none.push(self.run_child(&env, Tool::None, config.without_tool(), None)?);
            if let Tool::None = tool {
                continue;
            }
            // Records of earlier runs would only fill the disk.
            let _ = std::fs::remove_dir_all(&out_dir);
            // A peer writes where it runs.
            let cwd = match tool {
                Tool::Peer(_) => {
                    std::fs::create_dir_all(&out_dir)
                        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
                    Some(out_dir.as_path())
                }
                _ => None,
            };
            runs.push(self.run_child(&env, tool, config, cwd)?);
            // Every run's records are checked; the last one's are reported.
            recorded = Some(match (tool, config.mode.selects()) {
                (Tool::Peer(_), _) => peer_rows(&out_dir),
                (_, true) => read_records(&out_dir)?,
                // Nothing recorded, nothing written: no directory either.
                (_, false) => read_records(&out_dir).unwrap_or_default(),
            });
        }
        let none = Measurement::of(&none, config.dispatches, None);
        match recorded {
            Some(recorded) => {
                let mut measured = Measurement::of(&runs, config.dispatches, Some(&recorded));
                measured.warnings = recorded.problems(config);
                Ok((measured, none))
            }
            None => Ok((none.clone(), none)),
        }
    }

    /// The tool of `mode`, with its `plan` for rtl-pmc.
    fn tool<'a>(&self, mode: Mode, plan: Option<&'a Path>) -> Tool<'a> {
        match (mode, plan) {
            (Mode::Peer(peer), _) => Tool::Peer(peer),
            (_, Some(plan)) => Tool::RtlPmc(plan),
            (_, None) => Tool::None,
        }
    }

    /// Where the runs of `mode` write their records.
    fn out_dir(&self, mode: Mode) -> PathBuf {
        match mode {
            Mode::Peer(peer) => self.dir.join(format!("out-peer-{}", peer.name)),
            _ => self.dir.join(format!("out-{}", mode.name())),
        }
    }

    /// The environment of `gpus` simulated MI300X-shaped GPUs, and their architectures: the
    /// built-in `gfx942` and `gfx942x2`, or the first `gpus` GPUs of `gfx942x8.json`.
    fn system(&mut self, gpus: u32) -> Result<&System, String> {
        if !self.systems.contains_key(&gpus) {
            let bad = |e: &dyn std::fmt::Display| format!("sim/configs/gfx942x8.json: {e}");
            let mut config: serde_json::Value =
                serde_json::from_str(GFX942X8).map_err(|e| bad(&e))?;
            let list = config["gpus"]
                .as_array_mut()
                .ok_or_else(|| bad(&"no `gpus` list"))?;
            if list.len() < gpus as usize {
                return Err(bad(&format!("{} GPUs, {gpus} asked", list.len())));
            }
            list.truncate(gpus as usize);
            let mut archs: Vec<String> = list
                .iter()
                .map(|g| g["name"].as_str().unwrap_or_default().to_string())
                .collect();
            archs.sort();
            archs.dedup();
            let spec = match gpus {
                1 => "gfx942".to_string(),
                2 => "gfx942x2".to_string(),
                n => {
                    if n < MAX_GPUS {
                        config["description"] = format!("{n} AMD Instinct MI300X-like GPUs").into();
                    }
                    let path = self.dir.join(format!("gfx942x{n}.json"));
                    std::fs::write(&path, config.to_string())
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    path.display().to_string()
                }
            };
            let exe_dir = self.exe.parent().ok_or("this program has no directory")?;
            let env = sim_env(exe_dir, &spec)?;
            self.systems.insert(gpus, System { env, archs });
        }
        Ok(&self.systems[&gpus])
    }

    /// The plan file of `mode` on `gpus` GPUs (every architecture among them programs the
    /// mode's events), or `None` for no tool.
    fn plan(&mut self, mode: Mode, gpus: u32) -> Result<Option<PathBuf>, String> {
        let Some(counters) = mode.counters() else {
            return Ok(None);
        };
        if let Some(path) = self.plans.get(&(mode, gpus)) {
            return Ok(Some(path.clone()));
        }
        let archs = self.system(gpus)?.archs.clone();
        let mut agents = Vec::new();
        for arch in archs.iter().filter(|_| !counters.is_empty()) {
            agents.push(AgentPlan {
                arch: arch.clone(),
                groups: vec![EventGroup {
                    counters: counters.iter().map(|c| c.to_string()).collect(),
                    events: events(arch, counters)?,
                }],
            });
        }
        let plan = RunPlan {
            version: PLAN_VERSION,
            pass: 1,
            output_directory: self
                .dir
                .join(format!("out-{}", mode.name()))
                .display()
                .to_string(),
            filters: match mode.selects() {
                true => KernelFilters::default(),
                // No kernel is named with the empty string.
                false => KernelFilters {
                    include_regex: Some("^$".into()),
                    ..KernelFilters::default()
                },
            },
            group_interval: 1,
            agents,
            replay: None,
        };
        let name = match gpus {
            1 => format!("{}.json", mode.name()),
            n => format!("{}-gpus{n}.json", mode.name()),
        };
        let path = self.dir.join(name);
        plan.write(&path).map_err(|e| e.to_string())?;
        self.plans.insert((mode, gpus), path.clone());
        Ok(Some(path))
    }

    /// Runs one child measurement, in `cwd` when given.
    fn run_child(
        &self,
        env: &[(String, String)],
        tool: Tool<'_>,
        config: Config,
        cwd: Option<&Path>,
    ) -> Result<Run, String> {
        let (mut command, args) = self.child_command(Command::new(&self.exe), env, tool, config);
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        let what = format!("--child {}", args.join(" "));
        let per_dispatch = u32::try_from(config.dispatches).unwrap_or(u32::MAX);
        let limit = TIME_LIMIT.saturating_add(TIME_PER_DISPATCH.saturating_mul(per_dispatch));
        let (status, stdout, stderr) = run_with_limit(command, limit)
            .map_err(|e| format!("{what} (mode {}): {e}", config.mode.label()))?;
        let field = |name: &str| -> Option<f64> {
            stdout
                .split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
        };
        let fields = (field("wall_ns"), field("cpu_ns"), field("max_rss_kib"));
        match (status.success(), fields) {
            (true, (Some(wall_ns), Some(cpu_ns), Some(rss_kib))) => Ok(Run {
                wall_ns,
                cpu_ns,
                rss_kib,
            }),
            _ => Err(format!(
                "{what} (mode {}) failed ({status}):\n{stdout}{stderr}",
                config.mode.label()
            )),
        }
    }

    /// `command` (this program, or a program running it) made to run the child of `config`
    /// in `env`, with `tool`; and the child's arguments. The simulated runtime's intercept mode
    /// (`RTL_SIM_INTERCEPT`) is this program's, when set.
    fn child_command(
        &self,
        mut command: Command,
        env: &[(String, String)],
        tool: Tool<'_>,
        config: Config,
    ) -> (Command, [String; 4]) {
        let args = [
            config.threads.to_string(),
            config.dispatches.to_string(),
            config.queues.to_string(),
            config.gpus.to_string(),
        ];
        command
            .arg("--child")
            .args(&args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("RTL_SIM_SLOW", SLOW)
            .env_remove("HSA_TOOLS_LIB")
            .env_remove(PLAN_ENV)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Ok(mode) = std::env::var(INTERCEPT_ENV) {
            command.env(INTERCEPT_ENV, mode);
        }
        match tool {
            Tool::None => {}
            Tool::RtlPmc(plan) => {
                let library = self.exe.with_file_name(RTL_PMC_LIBRARY);
                command.env("HSA_TOOLS_LIB", library).env(PLAN_ENV, plan);
            }
            Tool::Peer(peer) => {
                command.env("HSA_TOOLS_LIB", &peer.path);
                command.envs(peer.env.iter().map(|(k, v)| (k, v)));
            }
        }
        (command, args)
    }

    /// Instructions per dispatch of `config` and of the same configuration without the tool,
    /// each by thread: the difference between children of `2 N` and `N` dispatches under
    /// callgrind, divided by `N`, so that start-up and shut-down cancel out.
    pub fn instructions(&mut self, config: Config) -> Result<(Instructions, Instructions), String> {
        eprintln!(
            "counting instructions: mode={} threads={} queues={} gpus={} dispatches={} and twice as many",
            config.mode.label(),
            config.threads,
            config.queues,
            config.gpus,
            config.dispatches,
        );
        let env = self.system(config.gpus)?.env.clone();
        let plan = self.plan(config.mode, config.gpus)?;
        let tool = self.tool(config.mode, plan.as_deref());
        let per_dispatch = |tool: Tool<'_>, config: Config| -> Result<Instructions, String> {
            let twice = Config {
                dispatches: 2 * config.dispatches,
                ..config
            };
            let one = self.counted_child(&env, tool, config)?;
            let two = self.counted_child(&env, tool, twice)?;
            Ok(two.minus(&one).per(config.dispatches))
        };
        let none = per_dispatch(Tool::None, config.without_tool())?;
        match tool {
            Tool::None => Ok((none.clone(), none)),
            tool => Ok((per_dispatch(tool, config)?, none)),
        }
    }

    /// The instructions of one child run under callgrind, by thread.
    fn counted_child(
        &self,
        env: &[(String, String)],
        tool: Tool<'_>,
        config: Config,
    ) -> Result<Instructions, String> {
        let dir = self.dir.join("callgrind");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut valgrind = Command::new("valgrind");
        valgrind
            .arg("--tool=callgrind")
            .arg("--separate-threads=yes")
            .arg(format!(
                "--callgrind-out-file={}/callgrind.%p",
                dir.display()
            ))
            .arg(&self.exe);
        let (mut command, args) = self.child_command(valgrind, env, tool, config);
        // Each run's records are its own; a peer writes where it runs.
        let out_dir = self.out_dir(config.mode);
        let _ = std::fs::remove_dir_all(&out_dir);
        if let Tool::Peer(_) = tool {
            std::fs::create_dir_all(&out_dir)
                .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
            command.current_dir(&out_dir);
        }
        // Write watches need userfaultfd, which valgrind does not run: command buffers are
        // compared in full instead.
        command.env("RTL_SIM_NO_WRITE_WATCH", "1");
        let what = format!("valgrind {} --child {}", self.exe.display(), args.join(" "));
        let per_dispatch = u32::try_from(config.dispatches).unwrap_or(u32::MAX);
        let limit = TIME_LIMIT.saturating_add(CALLGRIND_PER_DISPATCH.saturating_mul(per_dispatch));
        let (status, stdout, stderr) = run_with_limit(command, limit)
            .map_err(|e| format!("{what} (mode {}): {e}", config.mode.label()))?;
        if !status.success() {
            return Err(format!(
                "{what} (mode {}) failed ({status}):\n{stdout}{stderr}",
                config.mode.label()
            ));
        }
        let mut counts = Instructions::read(&dir, tool.library(&self.exe).as_deref())?;
        // The runs counted are checked for every dispatch recorded too.
        let recorded = match tool {
            Tool::None => return Ok(counts),
            Tool::Peer(_) => peer_rows(&out_dir),
            Tool::RtlPmc(_) => read_records(&out_dir).unwrap_or_default(),
        };
        let run = format!("the run of {} dispatches", config.dispatches);
        counts.warnings = recorded
            .problems(config)
            .into_iter()
            .map(|problem| format!("{run}: {problem}"))
            .collect();
        Ok(counts)
    }
}

/// What a child under callgrind may take per dispatch before it is taken to hang.
const CALLGRIND_PER_DISPATCH: Duration = Duration::from_millis(100);

/// Instructions executed, by the role of the thread that executed them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Instructions {
    /// The application's dispatching threads, with the tool's dispatch path.
    pub application: f64,
    /// The tool's own threads (rtl-pmc's completion worker).
    pub worker: f64,
    /// The simulated GPUs' threads.
    pub gpu: f64,
    /// Every other thread (start-up, the simulator's helpers).
    pub other: f64,
    /// What the records of the runs counted got wrong, one sentence each.
    pub warnings: Vec<String>,
}

impl Instructions {
    /// The totals of callgrind's per-thread files in `dir`, each thread's role known by the
    /// functions it ran: the tool's threads are those that ran code of its `library` (other
    /// than the application's and the GPUs').
    fn read(dir: &Path, library: Option<&Path>) -> Result<Instructions, String> {
        let library = library.map(|l| l.display().to_string());
        let mut out = Instructions::default();
        let files = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for file in files.flatten() {
            let text = std::fs::read_to_string(file.path())
                .map_err(|e| format!("{}: {e}", file.path().display()))?;
            // Callgrind leaves the file without a thread number empty when it writes one per
            // thread.
            if text.is_empty() {
                continue;
            }
            let total = text
                .lines()
                .find_map(|l| l.strip_prefix("summary:").or(l.strip_prefix("totals:")))
                .and_then(|t| t.trim().parse::<f64>().ok())
                .ok_or_else(|| format!("{}: no instruction total", file.path().display()))?;
            let ran = |function: &str| text.contains(function);
            let role = if ran("workload::dispatch_empty") {
                &mut out.application
            } else if ran("device::run") {
                &mut out.gpu
            } else if library.as_deref().is_some_and(ran) {
                &mut out.worker
            } else {
                &mut out.other
            };
            *role += total;
        }
        Ok(out)
    }

    fn minus(&self, other: &Instructions) -> Instructions {
        Instructions {
            application: self.application - other.application,
            worker: self.worker - other.worker,
            gpu: self.gpu - other.gpu,
            other: self.other - other.other,
            warnings: [other.warnings.as_slice(), &self.warnings].concat(),
        }
    }

    fn per(&self, dispatches: u64) -> Instructions {
        let n = dispatches as f64;
        Instructions {
            application: self.application / n,
            worker: self.worker / n,
            gpu: self.gpu / n,
            other: self.other / n,
            warnings: self.warnings.clone(),
        }
    }

    /// Every thread's together.
    pub fn total(&self) -> f64 {
        self.application + self.worker + self.gpu + self.other
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Runs `command` to its end, or kills it after `limit`: its status, stdout and stderr.
fn run_with_limit(
    mut command: Command,
    limit: Duration,
) -> Result<(std::process::ExitStatus, String, String), String> {
    let mut child = command.spawn().map_err(|e| format!("cannot run: {e}"))?;
    // Both pipes are drained while the child runs, so it never blocks on a full one.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("still running after {} s: killed", limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    };
    let text = |t: std::thread::JoinHandle<String>| t.join().unwrap_or_default();
    Ok((status, text(stdout), text(stderr)))
}

/// The dispatches a peer's SQLite output in `dir` holds: the rows of `rocpd_kernel_dispatch`
/// (rocprofiler-sdk's rocpd schema) or else of `rocpd_op` (rocm-trace-lite's) of every `*.db`
/// file there or in a directory below (rocprofiler-sdk writes under `<hostname>/`); none when
/// there is no such table.
fn peer_rows(dir: &Path) -> Recorded {
    let mut recorded = Recorded {
        peer: true,
        ..Recorded::default()
    };
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("db") {
                count_peer_rows(&path, &mut recorded);
            }
        }
    }
    recorded
}

/// Adds the dispatches of the SQLite file at `path` (see [`peer_rows`]) to `recorded`.
fn count_peer_rows(path: &Path, recorded: &mut Recorded) {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let Ok(db) = rusqlite::Connection::open_with_flags(path, flags) else {
        return;
    };
    for table in ["rocpd_kernel_dispatch", "rocpd_op"] {
        let count = db.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| {
            r.get::<_, i64>(0)
        });
        if let Ok(n) = count {
            recorded.dispatches += n.max(0) as u64;
            recorded.tables += 1;
            return;
        }
    }
}

/// Counts the records of every raw record file in `dir`.
fn read_records(dir: &Path) -> Result<Recorded, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("no records in {}: {e}", dir.display()))?;
    let mut recorded = Recorded::default();
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().and_then(|e| e.to_str()) != Some(records::EXTENSION) {
            continue;
        }
        for record in records::read(&path) {
            let record = record.map_err(|e| format!("{}: {e}", path.display()))?;
            recorded.dispatches += 1;
            recorded.samples += record.counters.iter().map(|c| c.len() as u64).sum::<u64>();
            recorded.gpus.insert(record.gpu_index);
            recorded.queues.insert((record.gpu_index, record.queue));
        }
    }
    Ok(recorded)
}

/// The whole environment a program on the simulator gets: this one's after
/// `eval "$(rtl-pmc --sim <spec> --print-env)"`, as the documentation tells users to run.
fn sim_env(exe_dir: &Path, spec: &str) -> Result<Vec<(String, String)>, String> {
    let cli = exe_dir.join("rtl-pmc");
    let script = r#"eval "$("$0" --sim "$1" --print-env)" && exec env -0"#;
    let out = Command::new("sh")
        .args(["-c", script])
        .arg(&cli)
        .arg(spec)
        .output()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} --sim {spec} --print-env failed ({}): {}",
            cli.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter_map(|entry| entry.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// The plan events of the named counters on `arch`, from the counter catalog.
fn events(arch: &str, names: &[&str]) -> Result<Vec<PlanEvent>, String> {
    let catalog = Catalog::builtin(arch).map_err(|e| e.to_string())?;
    let mut events = Vec::new();
    for name in names {
        for e in catalog.hardware_events(name).map_err(|e| e.to_string())? {
            events.push(PlanEvent {
                block: e.block,
                block_id: e.block_id,
                event: e.event,
                flags: e.flags,
            });
        }
    }
    Ok(events)
}

/// The median of `values` (not empty).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}
