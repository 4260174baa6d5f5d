//! `rtl-dispatch-bench`: what the interposer costs an application per kernel dispatch.
//!
//! Run without arguments, it measures every configuration (no tool, timing only, 2, 8 and 16
//! counters; 1, 4 and 16 threads) on the simulated gfx942 and prints one line each:
//!
//! ```text
//! mode=<M> threads=<T> queues=<Q> gpus=<G> dispatches=<D> [samples_per_dispatch=<S>] ns_per_dispatch=<X> cpu_ns_per_dispatch=<C> peak_rss_mib=<R> none_ns_per_dispatch=<none> ratio=<X/none> cpu_ratio=<C/none>
//! ```
//!
//! Each measurement is a child process (this program again, with `--child`) that initialises
//! HSA through `libhsa-runtime64.so.1`, loads the fixture code object on each GPU, and
//! dispatches the zero-length `empty` kernel from its threads (thread `t` on GPU `t mod G`),
//! each with `Q` queues of its own, in batches of [`BATCH`] packets that end with a completion
//! signal; a thread's batches go to its queues in turn. `ns_per_dispatch` is the wall-clock time
//! of the dispatch phase divided by the dispatches of all threads, `cpu_ns_per_dispatch` the
//! process's CPU time over the same phase, `peak_rss_mib` its peak resident memory; each is the
//! median of several runs, and `ratio` and `cpu_ratio` are over those of the `none` runs of the
//! same configuration, which alternate with the tool's (`none_ns_per_dispatch`; the `none` line
//! comes from runs of its own). The child's environment is what
//! `rtl-pmc --sim <config> --print-env` prints (`gfx942`, `gfx942x2`, or the first `G` GPUs of
//! `sim/configs/gfx942x8.json`), plus `HSA_TOOLS_LIB=librtl_pmc.so` and a plan file
//! (`RTL_PMC_PLAN`) for the modes with a tool. `samples_per_dispatch` is counted from the raw
//! records the run wrote, which are also checked: one per dispatch, on every GPU and queue.
//! `--modes unselected2` (not measured by default) runs `counters2`'s plan with a kernel filter
//! that selects nothing: what keeping dispatches out of counting windows costs, with no record.
//!
//! `rtl-dispatch-bench --scaling` measures a fixed set of configurations in one go and prints
//! one markdown table per dimension ([`scaling`]); `rtl-dispatch-bench --replay` compares
//! application and kernel replay ([`replay`]).

// Agent discovery and fixture loading are the demo app's; the bench uses part of them.
#[allow(dead_code)]
#[path = "../../sim/demo-app/src/gpu.rs"]
mod gpu;
mod hsa_api;
mod replay;
mod runner;
mod scaling;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::Instant;

use rtl_pmc::hsa;

use runner::{Bench, Config};

/// Dispatches per configuration by default, over all its threads (rounded up to whole batches).
const DISPATCHES: u64 = 100_000;
/// Dispatches per configuration with `--instructions` (and twice as many).
const INSTRUCTION_DISPATCHES: u64 = 4096;
/// Packets per batch; the last one carries the completion signal the thread waits for.
pub const BATCH: u64 = 64;
/// The most simulated GPUs a configuration has (`sim/configs/gfx942x8.json`).
pub const MAX_GPUS: u32 = 8;

/// The `counters2` events: two blocks.
const COUNTERS2: &[&str] = &["SQ_WAVES", "GRBM_COUNT"];
/// The `counters8` events: half of `counters16`'s in each of its blocks.
const COUNTERS8: &[&str] = &[
    "SQ_WAVES",
    "SQ_INSTS_VALU",
    "GRBM_COUNT",
    "SPI_CSN_WAVE",
    "TCC_HIT",
    "TCC_MISS",
    "TA_BUFFER_READ_WAVEFRONTS",
    "TD_LOAD_WAVEFRONT",
];
/// The `counters16` events: six blocks, each within its gfx942 per-pass limit.
const COUNTERS16: &[&str] = &[
    "SQ_WAVES",
    "SQ_INSTS_VALU",
    "SQ_INSTS_SALU",
    "SQ_BUSY_CYCLES",
    "GRBM_COUNT",
    "GRBM_GUI_ACTIVE",
    "SPI_CSN_WAVE",
    "SPI_CSN_BUSY",
    "TCC_HIT",
    "TCC_MISS",
    "TCC_REQ",
    "TCC_BUSY",
    "TA_BUFFER_READ_WAVEFRONTS",
    "TA_ADDR_STALLED_BY_TC_CYCLES",
    "TD_LOAD_WAVEFRONT",
    "TD_STORE_WAVEFRONT",
];

/// A failed HSA call.
#[derive(Debug, Clone, Copy)]
pub struct HsaError {
    /// The function.
    pub call: &'static str,
    /// Its status.
    pub status: hsa::hsa_status_t,
}

impl std::fmt::Display for HsaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed with status 0x{:x}", self.call, self.status)
    }
}

impl From<HsaError> for String {
    fn from(e: HsaError) -> String {
        e.to_string()
    }
}

/// What the parent measures.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    /// Dispatch counts per configuration, over all its threads.
    dispatches: Vec<u64>,
    /// Runs per configuration; the median is reported.
    runs: usize,
    /// Thread counts.
    threads: Vec<u32>,
    /// Queues per thread.
    queues: Vec<u32>,
    /// Simulated GPU counts.
    gpus: Vec<u32>,
    /// Modes, `none` first (the ratio's denominator).
    modes: Vec<Mode>,
    /// Where plans and records go; kept afterwards (default: a temporary directory, removed).
    keep: Option<PathBuf>,
    /// The fixed set of `--scaling` instead of the configurations above.
    scaling: bool,
    /// Instructions per dispatch under callgrind instead of times.
    instructions: bool,
    /// Other tools libraries, measured after the modes.
    peers: Vec<&'static Peer>,
}

/// Another HSA tools library measured beside rtl-pmc (`--peer NAME=PATH[,ENV=VALUE...]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Peer {
    /// What the output calls it (`mode=peer:NAME`).
    pub name: String,
    /// The library, absolute.
    pub path: PathBuf,
    /// Its environment variables.
    pub env: Vec<(String, String)>,
}

/// The simulated runtime's intercept mode (`packet` or `batch`), passed on to the children.
pub const INTERCEPT_ENV: &str = "RTL_SIM_INTERCEPT";

/// Whether and how the interposer is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    None,
    Timing,
    Counters2,
    Counters8,
    Counters16,
    /// `counters2`'s plan with a kernel filter that selects no dispatch: every dispatch kept out
    /// of counting windows, none counted (not among the default modes).
    Unselected2,
    /// Another tools library, on its own.
    Peer(&'static Peer),
}

impl Mode {
    const ALL: [Mode; 5] = [
        Mode::None,
        Mode::Timing,
        Mode::Counters2,
        Mode::Counters8,
        Mode::Counters16,
    ];

    /// Every mode `--modes` accepts.
    const KNOWN: [Mode; 6] = [
        Mode::None,
        Mode::Timing,
        Mode::Counters2,
        Mode::Counters8,
        Mode::Counters16,
        Mode::Unselected2,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Timing => "timing",
            Mode::Counters2 => "counters2",
            Mode::Counters8 => "counters8",
            Mode::Counters16 => "counters16",
            Mode::Unselected2 => "unselected2",
            Mode::Peer(peer) => &peer.name,
        }
    }

    /// What the output lines call it: the mode's name, `peer:NAME` for a peer.
    pub fn label(self) -> String {
        match self {
            Mode::Peer(peer) => format!("peer:{}", peer.name),
            mode => mode.name().to_string(),
        }
    }

    /// The counters rtl-pmc's plan asks for; `None` for no tool or a peer.
    pub fn counters(self) -> Option<&'static [&'static str]> {
        match self {
            Mode::None | Mode::Peer(_) => None,
            Mode::Timing => Some(&[]),
            Mode::Counters2 | Mode::Unselected2 => Some(COUNTERS2),
            Mode::Counters8 => Some(COUNTERS8),
            Mode::Counters16 => Some(COUNTERS16),
        }
    }

    /// Whether the plan selects every dispatch (else none).
    pub fn selects(self) -> bool {
        self != Mode::Unselected2
    }
}

const USAGE: &str = "usage: rtl-dispatch-bench [--dispatches 100000[,N...]] [--runs N] \
                     [--threads 1,4,16] [--queues 1[,N...]] [--gpus 1[,N...]] \
                     [--modes none,timing,counters2,counters8,counters16,unselected2] \
                     [--peer NAME=PATH[,ENV=VALUE...]]... [--keep DIR]\n       \
                     rtl-dispatch-bench --instructions [the options above but --runs]\n       \
                     rtl-dispatch-bench --scaling [--runs N] [--keep DIR]\n       \
                     rtl-dispatch-bench --replay [options]";

/// The comma-separated positive integers `value` of `flag`.
fn positive_integers(flag: &str, value: &str) -> Result<Vec<u64>, String> {
    value
        .split(',')
        .map(|n| {
            n.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{flag}: `{n}` is not a positive integer"))
        })
        .collect()
}

/// `NAME=PATH[,ENV=VALUE...]`: a peer whose library exists (made absolute: callgrind names
/// the objects a thread ran by their paths).
fn parse_peer(value: &str) -> Result<Peer, String> {
    let shape = || format!("--peer: `{value}` is not NAME=PATH[,ENV=VALUE...]");
    let (name, rest) = value.split_once('=').ok_or_else(shape)?;
    let mut parts = rest.split(',');
    let path = parts.next().filter(|p| !p.is_empty()).ok_or_else(shape)?;
    let named = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !named {
        return Err(format!(
            "--peer: `{name}` is not a name (letters, digits, `-`, `_`, `.`)"
        ));
    }
    let env = parts
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("--peer {name}: `{pair}` is not ENV=VALUE")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let path = std::fs::canonicalize(path).map_err(|e| format!("--peer {name}: {path}: {e}"))?;
    Ok(Peer {
        name: name.to_string(),
        path,
        env,
    })
}

/// Parses the parent's arguments; an error is one message for exit status 2.
fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        dispatches: vec![DISPATCHES],
        runs: 0, // set after the flags
        threads: vec![1, 4, 16],
        queues: vec![1],
        gpus: vec![1],
        modes: Mode::ALL.to_vec(),
        keep: None,
        scaling: false,
        instructions: false,
        peers: Vec::new(),
    };
    let mut fixed = Vec::new();
    let mut runs = None;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        if flag == "--scaling" {
            options.scaling = true;
            continue;
        }
        if flag == "--instructions" {
            options.instructions = true;
            fixed.push(flag.as_str());
            continue;
        }
        let known = [
            "--dispatches",
            "--runs",
            "--threads",
            "--queues",
            "--gpus",
            "--modes",
            "--keep",
            "--peer",
        ];
        if !known.contains(&flag.as_str()) {
            return Err(format!("unknown argument `{flag}`\n{USAGE}"));
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let numbers = |v: &str| positive_integers(flag, v);
        let small = |v: &str| -> Result<Vec<u32>, String> {
            numbers(v)?
                .into_iter()
                .map(|n| u32::try_from(n).map_err(|_| format!("{flag}: `{n}` is too large")))
                .collect()
        };
        match flag.as_str() {
            "--dispatches" => options.dispatches = numbers(value)?,
            "--runs" => match numbers(value)?.as_slice() {
                [n] => runs = Some(*n as usize),
                _ => return Err(format!("--runs: `{value}` is not one positive integer")),
            },
            "--threads" => options.threads = small(value)?,
            "--queues" => options.queues = small(value)?,
            "--gpus" => {
                options.gpus = small(value)?;
                if let Some(n) = options.gpus.iter().find(|&&n| n > MAX_GPUS) {
                    return Err(format!(
                        "--gpus: `{n}`: the simulated systems have at most {MAX_GPUS} GPUs"
                    ));
                }
            }
            "--keep" => options.keep = Some(PathBuf::from(value)),
            "--peer" => {
                let peer = parse_peer(value)?;
                if options.peers.iter().any(|p| p.name == peer.name) {
                    return Err(format!("--peer: `{}` is named twice", peer.name));
                }
                options.peers.push(Box::leak(Box::new(peer)));
            }
            _ => {
                let mut modes = vec![Mode::None];
                for name in value.split(',') {
                    let mode = Mode::KNOWN
                        .into_iter()
                        .find(|m| m.name() == name)
                        .ok_or_else(|| format!("--modes: unknown mode `{name}`\n{USAGE}"))?;
                    if !modes.contains(&mode) {
                        modes.push(mode);
                    }
                }
                options.modes = modes;
            }
        }
        if !["--runs", "--keep", "--peer"].contains(&flag.as_str()) {
            fixed.push(flag.as_str());
        }
    }
    // `--scaling` compares more configurations of different sizes, in more runs each.
    options.runs = runs.unwrap_or(if options.scaling { 5 } else { 3 });
    // Under callgrind a dispatch takes some fifty times as long, and its count does not vary.
    if options.instructions && !fixed.contains(&"--dispatches") {
        options.dispatches = vec![INSTRUCTION_DISPATCHES];
    }
    if let (true, false) = (options.scaling, options.peers.is_empty()) {
        return Err("--peer cannot be combined with --scaling".into());
    }
    options
        .modes
        .extend(options.peers.iter().map(|&p| Mode::Peer(p)));
    if let (true, Some(flag)) = (options.scaling, fixed.first()) {
        return Err(format!(
            "{flag} cannot be combined with --scaling, which measures a fixed set of configurations (only --runs and --keep apply)"
        ));
    }
    Ok(options)
}

/// Measures every combination of the options' lists and prints one line each.
fn grid(options: &Options) -> Result<(), String> {
    let mut bench = Bench::new(options.runs, options.keep.clone())?;
    let started = Instant::now();
    let mut failed = 0;
    for &gpus in &options.gpus {
        for &queues in &options.queues {
            for &threads in &options.threads {
                for &dispatches in &options.dispatches {
                    for &mode in &options.modes {
                        let config = Config::new(mode, threads, queues, gpus, dispatches);
                        let line = format!(
                            "mode={} threads={threads} queues={queues} gpus={gpus} dispatches={}",
                            mode.label(),
                            config.dispatches
                        );
                        if options.instructions {
                            match bench.instructions(config) {
                                Ok((m, none)) => {
                                    for warning in &m.warnings {
                                        eprintln!("warning: {line}: {warning}");
                                    }
                                    println!(
                                    "{line} instructions_per_dispatch={:.0} application={:.0} worker={:.0} gpu={:.0} other={:.0} none_instructions_per_dispatch={:.0} ratio={:.2}",
                                    m.total(),
                                    m.application,
                                    m.worker,
                                    m.gpu,
                                    m.other,
                                    none.total(),
                                    m.total() / none.total()
                                )
                                }
                                Err(e) => {
                                    failed += 1;
                                    println!("{line} failed");
                                    eprintln!("{line}: {e}");
                                }
                            }
                            continue;
                        }
                        match bench.compare(config) {
                            Ok((m, none)) => {
                                let samples = m
                                    .samples
                                    .map(|s| format!(" samples_per_dispatch={s}"))
                                    .unwrap_or_default();
                                let [wall, cpu, rss, none_wall, ratio, cpu_ratio] =
                                    m.against(&none);
                                println!(
                                    "{line}{samples} ns_per_dispatch={wall:.0} cpu_ns_per_dispatch={cpu:.0} peak_rss_mib={rss:.0} none_ns_per_dispatch={none_wall:.0} ratio={ratio:.2} cpu_ratio={cpu_ratio:.2}"
                                );
                                for warning in &m.warnings {
                                    eprintln!("warning: {line}: {warning}");
                                }
                            }
                            Err(e) => {
                                failed += 1;
                                println!("{line} failed");
                                eprintln!("{line}: {e}");
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("total wall time {:.1} s", started.elapsed().as_secs_f64());
    match failed {
        0 => Ok(()),
        n => Err(format!("{n} measurement(s) failed")),
    }
}

/// This process's resource usage.
fn usage() -> libc::rusage {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    }
}

/// CPU time of this process's live threads, in nanoseconds, summed by thread name (the
/// scheduler's run time of each, from `/proc/self/task/*/schedstat`).
fn thread_cpu_ns() -> std::collections::BTreeMap<String, u64> {
    let mut by_name = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return by_name;
    };
    for task in tasks.flatten() {
        let read = |file: &str| std::fs::read_to_string(task.path().join(file));
        let (Ok(name), Ok(stat)) = (read("comm"), read("schedstat")) else {
            continue;
        };
        let ns = stat
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok());
        *by_name.entry(name.trim().to_string()).or_insert(0) += ns.unwrap_or(0);
    }
    by_name
}

/// Process CPU time (user + system) in nanoseconds.
fn cpu_time_ns() -> f64 {
    let usage = usage();
    let ns = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// The child: `threads` threads dispatch `dispatches` empty kernels in total, thread `t` on
/// GPU `t mod gpus`, each on `queues` queues of its own.
fn child(threads: u32, dispatches: u64, queues: u32, gpus: u32) -> Result<(), String> {
    // SAFETY: plain library initialisation.
    gpu::check("hsa_init", unsafe { hsa_api::hsa_init() })?;
    let system = gpu::System::discover(Some(gpus as usize))?;
    if system.gpus.len() != gpus as usize {
        return Err(format!(
            "{gpus} GPU(s) asked, the system has {}",
            system.gpus.len()
        ));
    }
    let kernels = system
        .gpus
        .iter()
        .map(|g| g.kernel("empty"))
        .collect::<Result<Vec<_>, _>>()?;
    let kernarg = system.allocate(system.kernarg_pool, 256)?;
    let per_thread = dispatches / u64::from(threads);
    let start = Barrier::new(threads as usize + 1);
    let (wall, cpu, results) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads as usize)
            .map(|t| {
                let g = t % system.gpus.len();
                let (gpu, kernel) = (&system.gpus[g], &kernels[g]);
                let (start, kernarg) = (&start, kernarg as usize);
                scope.spawn(move || {
                    let work = (per_thread, queues);
                    workload::dispatch_empty(gpu, kernel, kernarg as *mut u8, work, start)
                })
            })
            .collect();
        start.wait();
        let (t0, c0, threads0) = (Instant::now(), cpu_time_ns(), thread_cpu_ns());
        let results: Vec<Result<(), String>> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect();
        let by_thread = thread_cpu_ns()
            .into_iter()
            .filter(|(name, _)| !name.starts_with("rtl-dispatch-be"))
            .map(|(name, ns)| {
                (
                    ns.saturating_sub(threads0.get(&name).copied().unwrap_or(0)),
                    name,
                )
            })
            .filter(|(ns, _)| *ns > 0)
            .map(|(ns, name)| format!("{name}:{ns}"))
            .collect::<Vec<_>>()
            .join(",");
        (t0.elapsed(), cpu_time_ns() - c0, (results, by_thread))
    });
    let (results, by_thread) = results;
    results.into_iter().collect::<Result<(), String>>()?;
    // SAFETY: no dispatch is in flight.
    unsafe { hsa_api::hsa_amd_memory_pool_free(kernarg.cast()) };
    drop(system);
    // SAFETY: every HSA object was released above.
    unsafe { hsa_api::hsa_shut_down() };
    println!(
        "wall_ns={} cpu_ns={cpu:.0} dispatches={} max_rss_kib={} thread_cpu_ns={by_thread}",
        wall.as_nanos(),
        per_thread * u64::from(threads),
        usage().ru_maxrss
    );
    Ok(())
}

/// `--child THREADS DISPATCHES [QUEUES [GPUS]]`: the positive integers, queues and GPUs 1 when
/// absent.
fn child_args(args: &[String]) -> Result<(u32, u64, u32, u32), String> {
    const CHILD_USAGE: &str =
        "usage: rtl-dispatch-bench --child THREADS DISPATCHES [QUEUES [GPUS]] (positive integers)";
    let numbers = args
        .iter()
        .map(|v| v.parse::<u64>().ok().filter(|n| *n > 0))
        .collect::<Option<Vec<u64>>>()
        .ok_or(CHILD_USAGE)?;
    let small = |n: u64| u32::try_from(n).map_err(|_| CHILD_USAGE.to_string());
    match numbers[..] {
        [threads, dispatches] => Ok((small(threads)?, dispatches, 1, 1)),
        [threads, dispatches, queues] => Ok((small(threads)?, dispatches, small(queues)?, 1)),
        [threads, dispatches, queues, gpus] => {
            Ok((small(threads)?, dispatches, small(queues)?, small(gpus)?))
        }
        _ => Err(CHILD_USAGE.into()),
    }
}

/// What the arguments ask for.
enum Task {
    Help,
    Child(u32, u64, u32, u32),
    Replay(replay::Options),
    Measure(Options),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Bad arguments are refused with exit status 2 before anything runs; failures are 1.
    let task = match args.first().map(String::as_str) {
        Some("--help" | "-h") => Ok(Task::Help),
        Some("--child") => child_args(&args[1..]).map(|(t, d, q, g)| Task::Child(t, d, q, g)),
        Some("--replay") => replay::parse(&args[1..]).map(Task::Replay),
        _ => parse_options(&args).map(Task::Measure),
    };
    let result = match task {
        Err(message) => {
            eprintln!("rtl-dispatch-bench: {message}");
            return ExitCode::from(2);
        }
        Ok(Task::Help) => {
            println!("{USAGE}");
            Ok(())
        }
        Ok(Task::Child(threads, dispatches, queues, gpus)) => {
            child(threads, dispatches, queues, gpus)
        }
        Ok(Task::Replay(options)) => replay::run(&options),
        Ok(Task::Measure(options)) if options.scaling => scaling::run(options.runs, options.keep),
        Ok(Task::Measure(options)) => grid(&options),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rtl-dispatch-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Options, String> {
        let args: Vec<String> = args.split_whitespace().map(String::from).collect();
        parse_options(&args)
    }

    #[test]
    fn defaults_measure_every_mode_on_one_gpu_and_queue() {
        let options = parse("").unwrap();
        assert_eq!(options.dispatches, [100_000]);
        assert_eq!(options.runs, 3);
        assert_eq!(options.threads, [1, 4, 16]);
        assert_eq!(options.queues, [1]);
        assert_eq!(options.gpus, [1]);
        assert_eq!(options.modes, Mode::ALL);
        assert!(!options.scaling);
        // Asked for only.
        assert!(!Mode::ALL.contains(&Mode::Unselected2));
        let unselected = parse("--modes unselected2").unwrap();
        assert_eq!(unselected.modes, [Mode::None, Mode::Unselected2]);
        assert!(!Mode::Unselected2.selects() && Mode::Counters2.selects());
    }

    #[test]
    fn lists_of_every_dimension() {
        let options = parse(
            "--dispatches 10000,100000,1000000 --queues 1,4,16 --gpus 1,2,8 \
             --modes counters16,counters8,counters8 --threads 2 --runs 5 --keep /tmp/k",
        )
        .unwrap();
        assert_eq!(options.dispatches, [10_000, 100_000, 1_000_000]);
        assert_eq!(options.queues, [1, 4, 16]);
        assert_eq!(options.gpus, [1, 2, 8]);
        assert_eq!(
            options.modes,
            [Mode::None, Mode::Counters16, Mode::Counters8]
        );
        assert_eq!(options.threads, [2]);
        assert_eq!(options.runs, 5);
        assert_eq!(options.keep, Some(PathBuf::from("/tmp/k")));
        let scaling = parse("--runs 1 --scaling --keep /tmp/k").unwrap();
        assert!(scaling.scaling);
        assert_eq!(scaling.runs, 1);
        assert_eq!(parse("--scaling").unwrap().runs, 5);
    }

    #[test]
    fn instructions_count_fewer_dispatches_unless_told() {
        let options = parse("--instructions --modes counters16").unwrap();
        assert!(options.instructions);
        assert_eq!(options.dispatches, [INSTRUCTION_DISPATCHES]);
        assert_eq!(options.modes, [Mode::None, Mode::Counters16]);
        let told = parse("--dispatches 1024 --instructions").unwrap();
        assert_eq!(told.dispatches, [1024]);
        assert!(!parse("").unwrap().instructions);
        assert_eq!(
            parse("--scaling --instructions").unwrap_err(),
            "--instructions cannot be combined with --scaling, which measures a fixed set of \
             configurations (only --runs and --keep apply)"
        );
    }

    #[test]
    fn bad_arguments_are_one_exact_message() {
        let cases = [
            (
                "--gpus 1,9",
                "--gpus: `9`: the simulated systems have at most 8 GPUs",
            ),
            ("--threads 0", "--threads: `0` is not a positive integer"),
            ("--queues 1,,4", "--queues: `` is not a positive integer"),
            (
                "--threads 4294967296",
                "--threads: `4294967296` is too large",
            ),
            (
                "--dispatches 1e6",
                "--dispatches: `1e6` is not a positive integer",
            ),
            ("--runs 1,2", "--runs: `1,2` is not one positive integer"),
            (
                "--scaling --threads 4",
                "--threads cannot be combined with --scaling, which measures a fixed set of \
                 configurations (only --runs and --keep apply)",
            ),
            (
                "--gpus 2 --scaling",
                "--gpus cannot be combined with --scaling, which measures a fixed set of \
                 configurations (only --runs and --keep apply)",
            ),
        ];
        for (args, message) in cases {
            assert_eq!(parse(args).unwrap_err(), message, "{args}");
        }
        let with_usage = [
            (
                "--modes timing,counters4",
                "--modes: unknown mode `counters4`",
            ),
            ("--queues", "--queues needs a value"),
            ("--gpu 2", "unknown argument `--gpu`"),
        ];
        for (args, message) in with_usage {
            assert_eq!(
                parse(args).unwrap_err(),
                format!("{message}\n{USAGE}"),
                "{args}"
            );
        }
    }

    #[test]
    fn peers_are_measured_after_the_modes_with_their_environment() {
        let library = std::env::current_exe().unwrap();
        let path = library.display().to_string();
        let options = parse(&format!(
            "--modes timing --peer lite={path},RTL_MODE=lite,RTL_OUTPUT= --peer b.2={path}"
        ))
        .unwrap();
        let [lite, b2] = [options.peers[0], options.peers[1]];
        assert_eq!(lite.name, "lite");
        assert_eq!(lite.path, library.canonicalize().unwrap());
        assert_eq!(
            lite.env,
            [
                ("RTL_MODE".to_string(), "lite".to_string()),
                ("RTL_OUTPUT".to_string(), String::new())
            ]
        );
        assert!(b2.env.is_empty());
        assert_eq!(
            options.modes,
            [Mode::None, Mode::Timing, Mode::Peer(lite), Mode::Peer(b2)]
        );
        assert_eq!(Mode::Peer(lite).label(), "peer:lite");
        assert_eq!(Mode::Peer(lite).counters(), None);
        let cases = [
            (
                "--peer lite",
                "--peer: `lite` is not NAME=PATH[,ENV=VALUE...]".to_string(),
            ),
            (
                "--peer lite=",
                "--peer: `lite=` is not NAME=PATH[,ENV=VALUE...]".to_string(),
            ),
            (
                &format!("--peer a/b={path}") as &str,
                "--peer: `a/b` is not a name (letters, digits, `-`, `_`, `.`)".to_string(),
            ),
            (
                &format!("--peer x={path},RTL_MODE"),
                "--peer x: `RTL_MODE` is not ENV=VALUE".to_string(),
            ),
            (
                "--peer x=/nonexistent/librtl.so",
                "--peer x: /nonexistent/librtl.so: No such file or directory (os error 2)"
                    .to_string(),
            ),
            (
                &format!("--peer x={path} --peer x={path}"),
                "--peer: `x` is named twice".to_string(),
            ),
            (
                &format!("--scaling --peer x={path}"),
                "--peer cannot be combined with --scaling".to_string(),
            ),
        ];
        for (args, message) in cases {
            assert_eq!(parse(args).unwrap_err(), message, "{args}");
        }
    }

    #[test]
    fn child_arguments() {
        let args = |a: &str| -> Vec<String> { a.split_whitespace().map(String::from).collect() };
        assert_eq!(child_args(&args("4 1024")), Ok((4, 1024, 1, 1)));
        assert_eq!(child_args(&args("4 1024 16")), Ok((4, 1024, 16, 1)));
        assert_eq!(child_args(&args("8 1024 1 8")), Ok((8, 1024, 1, 8)));
        let usage = "usage: rtl-dispatch-bench --child THREADS DISPATCHES [QUEUES [GPUS]] \
                     (positive integers)";
        for bad in ["", "4", "0 64", "4 64 0", "1 2 3 4 5", "4 x"] {
            assert_eq!(child_args(&args(bad)), Err(usage.to_string()), "{bad}");
        }
    }

    #[test]
    fn counters8_is_half_of_counters16_per_block() {
        let block = |c: &str| c.split('_').next().unwrap().to_string();
        let count = |set: &[&str], b: &str| set.iter().filter(|c| block(c) == b).count();
        assert!(COUNTERS8.iter().all(|c| COUNTERS16.contains(c)));
        for c in COUNTERS16 {
            let b = block(c);
            assert_eq!(2 * count(COUNTERS8, &b), count(COUNTERS16, &b), "{b}");
        }
    }

    #[test]
    fn dispatches_are_whole_batches_per_thread() {
        assert_eq!(
            Config::new(Mode::None, 1, 1, 1, 100_000).dispatches,
            100_032
        );
        assert_eq!(
            Config::new(Mode::None, 16, 4, 1, 100_000).dispatches,
            100_352
        );
        assert_eq!(Config::new(Mode::None, 3, 1, 1, 192).dispatches, 192);
        let timing = Config::new(Mode::Timing, 8, 2, 8, 10_000);
        assert_eq!(
            timing.without_tool(),
            Config::new(Mode::None, 8, 2, 8, 10_000)
        );
    }
}
