//! `rtl-dispatch-bench`: what the interposer costs an application per kernel dispatch.
//!
//! Run without arguments, it measures every configuration (no tool, timing only, 2 counters,
//! 16 counters; 1, 4 and 16 threads) on the simulated gfx942 and prints one line each:
//!
//! ```text
//! mode=<none|timing|counters2|counters16> threads=<N> ns_per_dispatch=<X> ratio=<X/none>
//! ```
//!
//! Each measurement is a child process (this program again, with `--child`) that initialises
//! HSA through `libhsa-runtime64.so.1`, loads the fixture code object, and dispatches the
//! zero-length `empty` kernel from its threads, each on its own queue, in batches of
//! [`BATCH`] packets that end with a completion signal. `ns_per_dispatch` is the wall-clock
//! time of the dispatch phase divided by the dispatches of all threads; the figure is the median
//! of several runs. The child's environment is what `rtl-pmc --sim gfx942 --print-env` prints,
//! plus `HSA_TOOLS_LIB=librtl_pmc.so` and a plan file (`RTL_PMC_PLAN`) for the modes with a tool.
//! Process CPU time per dispatch is printed on stderr.
//!
//! `rtl-dispatch-bench --replay` compares application and kernel replay instead ([`replay`]).

// Agent discovery and fixture loading are the demo app's; the bench uses part of them.
#[allow(dead_code)]
#[path = "../../sim/demo-app/src/gpu.rs"]
mod gpu;
mod hsa_api;
mod replay;
mod workload;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Barrier;
use std::time::Instant;

use rtl_pmc::hsa;
use rtl_pmc::passes::plan_file::{AgentPlan, EventGroup, KernelFilters, PlanEvent, RunPlan};
use rtl_pmc::passes::plan_file::{PLAN_ENV, PLAN_VERSION};
use rtl_pmc_counters::Catalog;

/// Dispatches per configuration by default, over all its threads (rounded up to whole batches).
const DISPATCHES: u64 = 100_000;
/// Packets per batch; the last one carries the completion signal the thread waits for.
pub const BATCH: u64 = 64;
/// The simulated GPU every measurement runs on.
const ARCH: &str = "gfx942";
/// Kernel duration factor of the simulator: zero-length kernels (it must be positive).
const SLOW: &str = "0.000001";

/// The `counters2` events: two blocks.
const COUNTERS2: &[&str] = &["SQ_WAVES", "GRBM_COUNT"];
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
#[derive(Debug, Clone)]
struct Options {
    /// Dispatches per configuration, over all its threads.
    dispatches: u64,
    /// Runs per configuration; the median is reported.
    runs: usize,
    /// Thread counts.
    threads: Vec<u32>,
    /// Modes, `none` first (the ratio's denominator).
    modes: Vec<Mode>,
    /// Where plans and records go; kept afterwards (default: a temporary directory, removed).
    keep: Option<PathBuf>,
}

/// Whether and how the interposer is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    None,
    Timing,
    Counters2,
    Counters16,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::None, Mode::Timing, Mode::Counters2, Mode::Counters16];

    fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Timing => "timing",
            Mode::Counters2 => "counters2",
            Mode::Counters16 => "counters16",
        }
    }

    fn counters(self) -> Option<&'static [&'static str]> {
        match self {
            Mode::None => None,
            Mode::Timing => Some(&[]),
            Mode::Counters2 => Some(COUNTERS2),
            Mode::Counters16 => Some(COUNTERS16),
        }
    }
}

const USAGE: &str = "usage: rtl-dispatch-bench [--dispatches N] [--runs N] [--threads 1,4,16] \
                     [--modes none,timing,counters2,counters16] [--keep DIR]";

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        dispatches: DISPATCHES,
        runs: 3,
        threads: vec![1, 4, 16],
        modes: Mode::ALL.to_vec(),
        keep: None,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = |v: &str| -> Result<u64, String> {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{flag}: `{v}` is not a positive integer"))
        };
        match flag.as_str() {
            "--dispatches" => options.dispatches = number(value)?,
            "--runs" => options.runs = number(value)? as usize,
            "--threads" => {
                options.threads = value
                    .split(',')
                    .map(|t| number(t).map(|n| n as u32))
                    .collect::<Result<_, _>>()?
            }
            "--keep" => options.keep = Some(PathBuf::from(value)),
            "--modes" => {
                let mut modes = vec![Mode::None];
                for name in value.split(',') {
                    let mode = Mode::ALL
                        .into_iter()
                        .find(|m| m.name() == name)
                        .ok_or_else(|| format!("--modes: unknown mode `{name}`\n{USAGE}"))?;
                    if !modes.contains(&mode) {
                        modes.push(mode);
                    }
                }
                options.modes = modes;
            }
            _ => return Err(format!("unknown argument `{flag}`\n{USAGE}")),
        }
    }
    Ok(options)
}

/// The whole environment a program on the simulator gets: this one's after
/// `eval "$(rtl-pmc --sim gfx942 --print-env)"`, as the documentation tells users to run.
fn sim_env(exe_dir: &Path) -> Result<Vec<(String, String)>, String> {
    let cli = exe_dir.join("rtl-pmc");
    let script = format!(r#"eval "$("$0" --sim {ARCH} --print-env)" && exec env -0"#);
    let out = Command::new("sh")
        .args(["-c", &script])
        .arg(&cli)
        .output()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} --sim {ARCH} --print-env failed ({}): {}",
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

/// The plan event of each named gfx942 counter, from the counter catalog.
fn events(names: &[&str]) -> Result<Vec<PlanEvent>, String> {
    let catalog = Catalog::builtin(ARCH).map_err(|e| e.to_string())?;
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

/// Writes the plan file of `mode` in `dir`, or returns `None` for no tool.
fn write_plan(dir: &Path, mode: Mode) -> Result<Option<PathBuf>, String> {
    let Some(counters) = mode.counters() else {
        return Ok(None);
    };
    let groups = if counters.is_empty() {
        Vec::new()
    } else {
        vec![EventGroup {
            counters: counters.iter().map(|c| c.to_string()).collect(),
            events: events(counters)?,
        }]
    };
    let plan = RunPlan {
        version: PLAN_VERSION,
        pass: 1,
        output_directory: dir
            .join(format!("out-{}", mode.name()))
            .display()
            .to_string(),
        filters: KernelFilters::default(),
        group_interval: 1,
        agents: if groups.is_empty() {
            Vec::new()
        } else {
            vec![AgentPlan {
                arch: ARCH.into(),
                groups,
            }]
        },
        replay: None,
    };
    let path = dir.join(format!("{}.json", mode.name()));
    plan.write(&path).map_err(|e| e.to_string())?;
    Ok(Some(path))
}

/// One child's measurement.
#[derive(Debug, Clone, Copy)]
struct Sample {
    wall_ns: f64,
    cpu_ns: f64,
}

/// Runs one child measurement.
fn measure(
    exe: &Path,
    env: &[(String, String)],
    plan: Option<&Path>,
    out_dir: &Path,
    threads: u32,
    dispatches: u64,
) -> Result<Sample, String> {
    // Records of earlier runs would only fill the disk.
    let _ = std::fs::remove_dir_all(out_dir);
    let mut command = Command::new(exe);
    command
        .args(["--child", &threads.to_string(), &dispatches.to_string()])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("RTL_SIM_SLOW", SLOW)
        .env_remove("HSA_TOOLS_LIB")
        .env_remove(PLAN_ENV);
    if let Some(plan) = plan {
        let tool = exe.with_file_name("librtl_pmc.so");
        command.env("HSA_TOOLS_LIB", tool).env(PLAN_ENV, plan);
    }
    let out = command
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> Option<f64> {
        stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    };
    match (out.status.success(), field("wall_ns"), field("cpu_ns")) {
        (true, Some(wall_ns), Some(cpu_ns)) => Ok(Sample { wall_ns, cpu_ns }),
        _ => Err(format!(
            "a measurement with {threads} thread(s) failed ({}):\n{}{}",
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn parent(options: &Options) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let exe_dir = exe.parent().ok_or("this program has no directory")?;
    let env = sim_env(exe_dir)?;
    let dir = options.keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("rtl-dispatch-bench-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let started = Instant::now();
    let result = (|| -> Result<(), String> {
        let plans = options
            .modes
            .iter()
            .map(|&m| write_plan(&dir, m).map(|p| (m, p)))
            .collect::<Result<Vec<_>, _>>()?;
        for &threads in &options.threads {
            let mut baseline = None;
            for (mode, plan) in &plans {
                let dispatches = options.dispatches.div_ceil(u64::from(threads) * BATCH)
                    * u64::from(threads)
                    * BATCH;
                let out_dir = dir.join(format!("out-{}", mode.name()));
                let samples = (0..options.runs)
                    .map(|_| measure(&exe, &env, plan.as_deref(), &out_dir, threads, dispatches))
                    .collect::<Result<Vec<_>, _>>()?;
                let per = |f: fn(&Sample) -> f64| {
                    median(samples.iter().map(f).collect()) / dispatches as f64
                };
                let (wall, cpu) = (per(|s| s.wall_ns), per(|s| s.cpu_ns));
                let none = *baseline.get_or_insert(wall);
                println!(
                    "mode={} threads={threads} ns_per_dispatch={wall:.0} ratio={:.2}",
                    mode.name(),
                    wall / none
                );
                eprintln!(
                    "mode={} threads={threads} dispatches={dispatches} runs={} cpu_ns_per_dispatch={cpu:.0}",
                    mode.name(),
                    options.runs
                );
            }
        }
        eprintln!("total wall time {:.1} s", started.elapsed().as_secs_f64());
        Ok(())
    })();
    if options.keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

/// Process CPU time (user + system) in nanoseconds.
fn cpu_time_ns() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let ns = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// The child: `threads` threads dispatch `dispatches` empty kernels in total.
fn child(threads: u32, dispatches: u64) -> Result<(), String> {
    // SAFETY: plain library initialisation.
    gpu::check("hsa_init", unsafe { hsa_api::hsa_init() })?;
    let system = gpu::System::discover(Some(1))?;
    let gpu = &system.gpus[0];
    let kernel = gpu.kernel("empty")?;
    let kernarg = system.allocate(system.kernarg_pool, 256)?;
    let per_thread = dispatches / u64::from(threads);
    let start = Barrier::new(threads as usize + 1);
    let (wall, cpu, results) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (start, kernel, kernarg) = (&start, &kernel, kernarg as usize);
                scope.spawn(move || {
                    workload::dispatch_empty(gpu, kernel, kernarg as *mut u8, per_thread, start)
                })
            })
            .collect();
        start.wait();
        let (t0, c0) = (Instant::now(), cpu_time_ns());
        let results: Vec<Result<(), String>> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect();
        (t0.elapsed(), cpu_time_ns() - c0, results)
    });
    results.into_iter().collect::<Result<(), String>>()?;
    // SAFETY: no dispatch is in flight.
    unsafe { hsa_api::hsa_amd_memory_pool_free(kernarg.cast()) };
    drop(system);
    // SAFETY: every HSA object was released above.
    unsafe { hsa_api::hsa_shut_down() };
    println!(
        "wall_ns={} cpu_ns={cpu:.0} dispatches={}",
        wall.as_nanos(),
        per_thread * u64::from(threads)
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--child") => {
            let number = |i: usize| args.get(i).and_then(|v| v.parse::<u64>().ok());
            match (number(1), number(2)) {
                (Some(threads), Some(dispatches)) if threads > 0 => {
                    child(threads as u32, dispatches)
                }
                _ => Err("usage: rtl-dispatch-bench --child THREADS DISPATCHES".into()),
            }
        }
        Some("--replay") => replay::main(&args[1..]),
        _ => parse_options(&args).and_then(|o| parent(&o)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rtl-dispatch-bench: {message}");
            ExitCode::FAILURE
        }
    }
}
