//! Merge-and-write throughput and memory: N dispatches × 8 counters in two passes of 4 counters
//! go through the database into each pass's `counter_collection.csv` and the merged
//! `results.csv`. Prints rows/s and the peak resident memory, which should not grow with N.
//!
//! `cargo run --release -p rtl-pmc-cli --example outputs_bench -- [DISPATCHES] [DIR]`

#[allow(dead_code)]
#[path = "../src/output/mod.rs"]
mod output;

use std::path::PathBuf;
use std::time::Instant;

use output::csv::{CounterCollectionWriter, ResultsWriter};
use output::database::Database;
use output::model::{Counter, Dispatch};

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn dispatch(n: u64, pass: u32) -> Dispatch {
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
    Dispatch {
        pid: 4242,
        tid: 4243,
        agent: 1,
        queue_id: 1,
        queue_index: n * 2,
        dispatch_id: n + 1,
        correlation_id: n + 1,
        kernel: kernels[(n % 4) as usize].into(),
        kernel_object: 0x7f00_0000_0000 + (n % 4) * 0x40,
        grid: [1 << 20, 1, 1],
        workgroup: [256, 1, 1],
        lds: 4096,
        scratch: 0,
        arch_vgpr: 32,
        accum_vgpr: 0,
        sgpr: 48,
        wave_size: 64,
        signal: 0,
        start_ns: 1_000_000 + n * 5_000,
        end_ns: 1_000_000 + n * 5_000 + 4_000,
        counters,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let dir = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("rtl-pmc-outputs-bench"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let rows = n * 8;

    let started = Instant::now();
    let mut db = Database::create(&dir.join("results.db"))?;
    let mut joined = std::time::Duration::ZERO;
    for pass in 1..=2 {
        db.begin_pass(pass, &format!("pass {pass}"))?;
        for i in 0..n {
            db.insert(pass, 0, &dispatch(i, pass))?;
        }
        let join = Instant::now();
        db.end_pass(pass, Some(0))?;
        joined += join.elapsed();
    }
    let inserted = started.elapsed() - joined;

    let started = Instant::now();
    for pass in 1..=2 {
        let mut out = CounterCollectionWriter::create(&dir.join(format!("pass{pass}.csv")))?;
        db.for_each_pass_dispatch(pass, false, |d| {
            out.write(d).map_err(Box::<dyn std::error::Error>::from)
        })?;
        out.commit()?;
    }
    let per_pass = started.elapsed();

    let started = Instant::now();
    let counters = db.counter_names(None)?;
    let mut out = ResultsWriter::create(&dir.join("results.csv"), &counters)?;
    db.for_each_merged(false, |d| {
        out.write(d).map_err(Box::<dyn std::error::Error>::from)
    })?;
    out.commit()?;
    let merged = started.elapsed();
    db.commit(true)?;

    let rate = |d: std::time::Duration| rows as f64 / d.as_secs_f64();
    println!("{n} dispatches x 8 counters = {rows} dispatch-counter rows (two passes of 4)");
    println!(
        "  database insert:             {:>8.2} s  {:>12.0} rows/s",
        inserted.as_secs_f64(),
        rate(inserted)
    );
    println!(
        "  pass join:                   {:>8.2} s  {:>12.0} rows/s",
        joined.as_secs_f64(),
        rate(joined)
    );
    println!(
        "  counter_collection.csv x 2:  {:>8.2} s  {:>12.0} rows/s",
        per_pass.as_secs_f64(),
        rate(per_pass)
    );
    println!(
        "  merged results.csv:          {:>8.2} s  {:>12.0} rows/s",
        merged.as_secs_f64(),
        rate(merged)
    );
    let total = inserted + joined + per_pass + merged;
    println!(
        "  total:                       {:>8.2} s  {:>12.0} rows/s",
        total.as_secs_f64(),
        rate(total)
    );
    println!("  peak RSS: {:.1} MiB", peak_rss_mib());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
