//! Merge-and-write throughput and memory: N dispatches × 8 counters in two passes of 4 counters
//! go through the steps `rtl-pmc` takes after each pass and after the last one (database and
//! `counter_collection.csv`, the pass join, the count of unmatched dispatches, the estimates, the summary, the merged `results.csv`
//! read while the database's commit writes rocpd's tables), with the same functions. Prints rows/s per step and in
//! total, the peak resident memory, which should not grow with N, and the size of the files.
//!
//! `cargo run --release -p rtl-pmc-profile --example outputs_bench -- [DISPATCHES] [DIR] [--processes P]`
//!
//! With `--processes P`, each pass holds P processes of DISPATCHES dispatches each, on a GPU of
//! their own, their dispatches interleaved in time (P ranks of a job profiled in one directory).
//! `RTL_PMC_BENCH_KEEP=1` keeps the files written.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rtl_pmc_profile::files::csv::{AgentLabels, Table};
use rtl_pmc_profile::files::summary;
use rtl_pmc_profile::files::{write_merged_files_with, Formats};
use rtl_pmc_profile::join::pass::{write_pass, PassSpec};
use rtl_pmc_profile::model::{Counter, Dispatch};
use rtl_pmc_profile::store::database::Database;
use rtl_pmc_profile::store::estimates::Estimates;

/// The process every dispatch comes from.
const PID: u32 = 4242;

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU time of this process so far (user + system, every thread), which the other load of a
/// shared machine does not inflate the way it does wall time. `/proc/self/stat` counts it in
/// clock ticks of 10 ms.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (in parentheses): utime and stime are the 12th and 13th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// Wall and CPU time since `since`.
fn took(since: &(Instant, Duration)) -> (Duration, Duration) {
    (since.0.elapsed(), cpu_time() - since.1)
}

fn now() -> (Instant, Duration) {
    (Instant::now(), cpu_time())
}

/// Dispatch `n` of process `process` of `processes` in `pass`.
fn dispatch(n: u64, process: u32, processes: u32, pass: u32) -> Dispatch {
    let kernels = ["vadd", "saxpy", "gemm_256x128", "reduce<float>"];
    let counters = (0..4)
        .map(|c| {
            let values: Vec<f64> = (0..8)
                .map(|x| ((n * 7 + c * 3 + x) % 1000) as f64)
                .collect();
            Counter {
                name: format!("PASS{pass}_COUNTER{c}"),
                total: values.iter().sum(),
                dimensions: "DIMENSION_XCC[0:7]".into(),
                values,
            }
        })
        .collect();
    // The processes' dispatches take turns on the time line.
    let start = 1_000_000 + n * 5_000 + u64::from(process) * 5_000 / u64::from(processes);
    Dispatch {
        pid: PID + process,
        tid: 4243 + process,
        agent: 1 + process,
        queue_id: 1,
        queue_order: 1,
        queue_index: n * 2,
        dispatch_id: n + 1,
        correlation_id: n + 1,
        kernel: kernels[(n % 4) as usize].into(),
        kernel_object: 0x7f00_0000_0000 + (n % 4) * 0x40,
        kernel_id: n % 4 + 1,
        grid: [1 << 20, 1, 1],
        workgroup: [256, 1, 1],
        lds: 4096,
        scratch: 0,
        arch_vgpr: 32,
        accum_vgpr: 0,
        sgpr: 48,
        wave_size: 64,
        signal: 0,
        start_ns: start,
        end_ns: start + 4_000 / u64::from(processes),
        counters,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut processes = 1u32;
    let mut positional = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--processes" => {
                processes = args.next().ok_or("--processes needs a number")?.parse()?;
                if processes == 0 {
                    return Err("--processes needs at least 1".into());
                }
            }
            _ => positional.push(arg),
        }
    }
    let mut positional = positional.into_iter();
    let per_process: u64 = positional
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let dir = positional
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("rtl-pmc-outputs-bench"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let n = per_process * u64::from(processes);
    let rows = n * 8;
    let pids: Vec<u32> = (0..processes).map(|p| PID + p).collect();
    // Each step with the dispatch-counter rows it handles and its wall and CPU time.
    let mut steps: Vec<(&str, u64, (Duration, Duration))> = Vec::new();

    // The steps of `rtl-pmc` after each pass and after the last one, with the same functions.
    let mut db = Database::create(&dir.join("results.db"))?;
    for (pass, step) in [
        (1, "pass 1: database, csv"),
        (2, "pass 2: database, join, csv"),
    ] {
        let started = now();
        let csv = dir.join(format!("pass_{pass}.csv"));
        let spec = PassSpec {
            pass,
            label: &format!("pass {pass}"),
            csv: Some(&|_, _| csv.clone()),
            tables: &[Table::CounterCollection],
            labels: &AgentLabels::Node,
            processes: &[(0, pids.clone())],
            exit_status: Some(0),
        };
        write_pass(&mut db, &spec, |input| {
            (0..per_process).try_for_each(|i| {
                (0..processes).try_for_each(|p| input.write(0, dispatch(i, p, processes, pass)))
            })
        })?;
        steps.push((step, n * 4, took(&started)));
    }

    let started = now();
    let unmatched = db.unmatched()?.incomplete;
    steps.push(("unmatched count", rows, took(&started)));
    let started = now();
    let estimates = Estimates::compute(&db)?;
    steps.push(("estimates", rows, took(&started)));
    let started = now();
    let summary = summary::render(&db, &[], 10)?;
    steps.push(("summary", rows, took(&started)));
    // As `rtl-pmc` does: the merged files read while the commit writes rocpd's tables.
    let started = now();
    db.commit_while(true, |db| {
        write_merged_files_with(db, &dir, "results", Formats::default(), &estimates)
    })?;
    steps.push(("results.csv while committing", rows, took(&started)));

    let size = |name: &str| std::fs::metadata(dir.join(name)).map_or(0, |m| m.len());
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let files = (size("results.db"), size("pass_1.csv"), size("results.csv"));
    println!(
        "{processes} process(es) x {per_process} dispatches x 8 counters = {rows} dispatch-counter rows (two passes of 4)"
    );
    println!(
        "  {:<32} {:>8}  {:>12}  {:>8}  {:>12}",
        "step", "wall s", "rows/s", "CPU s", "rows/CPU s"
    );
    let line = |step: &str, rows: u64, (wall, cpu): (Duration, Duration)| {
        let rate = |d: Duration| rows as f64 / d.as_secs_f64();
        println!(
            "  {step:<32} {:>8.2}  {:>12.0}  {:>8.2}  {:>12.0}",
            wall.as_secs_f64(),
            rate(wall),
            cpu.as_secs_f64(),
            rate(cpu)
        );
    };
    for &(step, rows, took) in &steps {
        line(step, rows, took);
    }
    let total = steps.iter().fold((Duration::ZERO, Duration::ZERO), |a, s| {
        (a.0 + s.2 .0, a.1 + s.2 .1)
    });
    line("total", rows, total);
    println!("  peak RSS: {:.1} MiB", peak_rss_mib());
    println!(
        "  files: results.db {:.0} MiB, each pass's csv {:.0} MiB, results.csv {:.0} MiB",
        mib(files.0),
        mib(files.1),
        mib(files.2)
    );
    assert_eq!(unmatched, 0);
    // Header, 4 kernels with their counters, each GPU and its 9-line idle-gap histogram.
    assert_eq!(
        summary.lines().count(),
        1 + 1 + 2 * 4 + (1 + 9) * processes as usize
    );
    if std::env::var_os("RTL_PMC_BENCH_KEEP").is_none() {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}
