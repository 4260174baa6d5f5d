//! A demo HSA application: it finds the GPUs, loads the fixture kernels for each, dispatches
//! them from several threads and queues, and checks every result on the host.
//!
//! It uses only the HSA C API of `libhsa-runtime64.so.1`, like any ROCm program, so it runs on
//! the simulated runtime (`rtl-pmc --sim ... --print-env`) or on a real GPU. Exit status: 0 if
//! every result is right (or `--exit-code`), 1 with a message otherwise.

mod gpu;
// The ABI layer is shared with the runtime and the interposer; the demo uses a small part.
mod ending;
#[allow(dead_code, unused_imports)]
#[path = "../../../src/hsa/mod.rs"]
mod hsa;
mod hsa_api;
mod overlap;
mod roctx;
mod workload;

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::Parser;

use gpu::System;
use workload::{Plan, CPP_KERNELS, KERNELS, VERIFIED};

/// Dispatches reference kernels on every GPU and verifies their results.
#[derive(Parser, Debug)]
#[command(name = "rtl-demo-app", version)]
struct Args {
    /// Iterations over the kernel list.
    #[arg(long, default_value_t = 1)]
    iterations: u32,
    /// Worker threads, each with its own queues.
    #[arg(long, default_value_t = 1)]
    threads: u32,
    /// Queues per thread and GPU.
    #[arg(long, default_value_t = 1)]
    queues: u32,
    /// Use at most this many GPUs (default: all).
    #[arg(long)]
    gpus: Option<usize>,
    /// A kernel to dispatch (repeatable); default: vadd, saxpy, fill, increment.
    #[arg(long = "kernel", value_parser = clap::builder::PossibleValuesParser::new(KERNELS))]
    kernels: Vec<String>,
    /// Also dispatch the C++ kernels, whose symbols are mangled (scale<float>, scale<unsigned>,
    /// demo::twice), after the default or --kernel ones.
    #[arg(long)]
    cpp: bool,
    /// Elements per buffer.
    #[arg(long, default_value_t = 4096)]
    size: usize,
    /// Exit with this status after a correct run.
    #[arg(long, default_value_t = 0)]
    exit_code: u8,
    /// Raise SIGSEGV after the first iteration's dispatches.
    #[arg(long)]
    crash: bool,
    /// Once every thread's dispatches completed and were verified, end the process from worker
    /// thread 0 this way (after printing how many were verified): `exit-thread` (`_exit(0)`),
    /// `segv` (a store to an unmapped address), `abort`, `bus`, `fpe`, `ill` (raised), `exec` (`/bin/sh
    /// -c 'exit 0'`) or `hang` (sleep until killed).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(ending::ENDINGS))]
    end: Option<String>,
    /// With --end and a signal: install a handler of the application's own for it before HSA
    /// starts, which says so and ends the process with the signal.
    #[arg(long)]
    own_handler: bool,
    /// With --end: end so only in the Nth run that counts itself in --runs-file (earlier and
    /// later runs end normally), e.g. only in a profile's second pass.
    #[arg(long, requires = "runs_file")]
    end_in_run: Option<u32>,
    /// The file each run adds a line to (created if missing), for --end-in-run.
    #[arg(long)]
    runs_file: Option<std::path::PathBuf>,
    /// Fork a child process (before initialising HSA) that runs the same work.
    #[arg(long)]
    fork: bool,
    /// Exit without calling hsa_shut_down: the runtime unloads its tools at process exit.
    #[arg(long)]
    no_shutdown: bool,
    /// Take the kernels' buffers from mmap instead of the runtime's memory pools: memory only a
    /// GPU that shares the host's address space reaches (XNACK, APUs), which tools cannot see
    /// being allocated.
    #[arg(long)]
    untracked_buffers: bool,
    /// Take the kernels' buffers from the host's fine-grained memory region with
    /// hsa_memory_allocate instead of its memory pool.
    #[arg(long, conflicts_with = "untracked_buffers")]
    region_buffers: bool,
    /// Sleep this many milliseconds before initialising HSA, like an application that loads
    /// its data before its first kernel.
    #[arg(long, default_value_t = 0)]
    startup_ms: u64,
    /// Annotate with roctx (libroctx64.so.4, opened at run time; nothing without one): each
    /// worker thread named `worker N`, each iteration a range `iteration I` holding a range
    /// `KERNEL in iteration I` around each dispatch, and marks `begin` and `end` on the main
    /// thread around the work.
    #[arg(long)]
    roctx: bool,
    /// Submit each iteration's kernels of a queue as one graph, behind one doorbell: kernels two
    /// at a time, each pair after the one before through a barrier-AND or barrier-OR packet on
    /// their completion signals, and a last barrier-AND the host waits for (as HIP graph
    /// launches submit them). Every worker thread, or the first --graph-threads.
    #[arg(long)]
    graph: bool,
    /// With --graph: only the first N worker threads submit graphs; the others dispatch one
    /// kernel at a time.
    #[arg(long, requires = "graph")]
    graph_threads: Option<u32>,
    /// Dispatch the (first) kernel `--iterations` times on the first GPU while another thread
    /// copies data to device memory and back with hsa_amd_memory_async_copy and
    /// hsa_amd_memory_async_copy_rect, unordered against the kernels, checking every byte as
    /// soon as each round trip's last signal completes.
    #[arg(long)]
    copies_beside: bool,
    /// Dispatch increment `--iterations` times on the first GPU over all but the last 16
    /// elements of its buffer, writing two bytes among those while each dispatch runs (one once
    /// its result shows, the other once the first shows set back between passes), and check
    /// both bytes and every element after each dispatch.
    #[arg(long, conflicts_with = "copies_beside")]
    writes_beside: bool,
}

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

fn run(args: &Args, role: &str) -> Result<(), String> {
    std::thread::sleep(std::time::Duration::from_millis(args.startup_ms));
    // SAFETY: plain library initialisation.
    gpu::check("hsa_init", unsafe { hsa_api::hsa_init() })?;
    let system = System::discover(args.gpus)?;
    let mut kernels: Vec<&'static str> = if args.kernels.is_empty() {
        vec!["vadd", "saxpy", "fill", "increment"]
    } else {
        args.kernels
            .iter()
            .map(|k| {
                *KERNELS
                    .iter()
                    .find(|known| *known == k)
                    .expect("clap checked the name")
            })
            .collect()
    };
    if args.cpp {
        kernels.extend(CPP_KERNELS.iter().map(|(name, _)| *name));
    }
    if args.roctx {
        roctx::enable();
    }
    let plan = Plan {
        roctx: args.roctx,
        iterations: args.iterations,
        queues: args.queues,
        kernels,
        size: args.size.max(1),
        crash: args.crash,
        buffers: match (args.untracked_buffers, args.region_buffers) {
            (true, _) => workload::Buffers::Untracked,
            (_, true) => workload::Buffers::Region,
            _ => workload::Buffers::Pool,
        },
        graph_threads: match args.graph {
            true => args.graph_threads.unwrap_or(args.threads),
            false => 0,
        },
    };
    // The modes that run beside the kernels: each says what it verified, after the runtime is
    // shut down.
    let beside = if args.copies_beside {
        let counts = overlap::run(&system, plan.kernels[0], args.iterations, plan.size)?;
        Some(format!(
            "rtl-demo-app: {} dispatches ({}) and {} copy round trips verified beside each other",
            counts.dispatches, plan.kernels[0], counts.round_trips
        ))
    } else if args.writes_beside {
        let set_back = workload::writes_beside(
            &system,
            plan.kernels[0],
            args.iterations,
            plan.size,
            plan.buffers,
        )?;
        Some(format!(
            "rtl-demo-app: {} dispatches ({}) verified with host writes beside them; {set_back} saw their memory set back while they ran",
            args.iterations, plan.kernels[0]
        ))
    } else {
        None
    };
    if let Some(verified) = beside {
        drop(system);
        // SAFETY: every HSA object was released above.
        unsafe { hsa_api::hsa_shut_down() };
        println!("{verified}");
        return Ok(());
    }
    roctx::mark("begin");
    let finished = std::sync::Barrier::new(args.threads as usize);
    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..args.threads)
            .map(|thread| {
                let (system, plan, finished) = (&system, &plan, &finished);
                scope.spawn(move || {
                    let result = workload::work(system, plan, thread).map_err(|e| e.to_string());
                    if let Some(how) = &args.end {
                        finished.wait();
                        if thread == 0 {
                            ending::end(how, VERIFIED.load(Ordering::Relaxed));
                        }
                    }
                    result
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err("a worker thread panicked".into()))
            })
            .collect()
    });
    roctx::mark("end");
    let names: Vec<String> = system.gpus.iter().map(|g| g.name.clone()).collect();
    drop(system);
    if !args.no_shutdown {
        // SAFETY: every HSA object was released above.
        unsafe { hsa_api::hsa_shut_down() };
    }
    results.into_iter().collect::<Result<(), String>>()?;
    println!(
        "rtl-demo-app{role}: {} dispatches verified ({}) on {} GPU(s) [{}], {} thread(s) x {} queue(s) x {} iteration(s)",
        VERIFIED.load(Ordering::Relaxed),
        plan.kernels.join(","),
        names.len(),
        names.join(","),
        args.threads,
        args.queues,
        args.iterations,
    );
    Ok(())
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    if let Some(path) = &args.runs_file {
        let run = ending::count_run(path);
        if args.end_in_run.is_some_and(|n| n != run) {
            args.end = None;
        }
    }
    if let Some(how) = &args.end {
        ending::prepare(how, args.own_handler);
    }
    let child = if args.fork {
        // SAFETY: no threads exist yet and HSA is not initialised, so the child starts clean.
        match unsafe { libc::fork() } {
            -1 => {
                eprintln!(
                    "rtl-demo-app: fork failed: {}",
                    std::io::Error::last_os_error()
                );
                return ExitCode::FAILURE;
            }
            0 => return finish(run(&args, " (child)"), &args),
            pid => Some(pid),
        }
    } else {
        None
    };
    let result = run(&args, "");
    if let Some(pid) = child {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == i32::from(args.exit_code)) {
            eprintln!("rtl-demo-app: the forked child failed (wait status {status})");
            return ExitCode::FAILURE;
        }
    }
    finish(result, &args)
}

fn finish(result: Result<(), String>, args: &Args) -> ExitCode {
    match result {
        Ok(()) => ExitCode::from(args.exit_code),
        Err(message) => {
            eprintln!("rtl-demo-app: {message}");
            ExitCode::FAILURE
        }
    }
}
