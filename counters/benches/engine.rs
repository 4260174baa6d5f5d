//! Counter engine throughput: catalog load time per architecture, and derived values
//! evaluated per second. Targets: load < 5 ms, evaluation >= 10 M values/s.
//!
//! Run with `cargo bench -p rtl-pmc-counters`. Times are thread CPU time.

use std::hint::black_box;
use std::time::{Duration, Instant};

use rtl_pmc_counters::{Catalog, CounterKind, CounterSet, Topology};

/// CPU time of the calling thread: the machine running benchmarks is often shared, and wall
/// time would count other processes' turns.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Mean thread CPU time of one call of `f`, over at least `min` of repeated calls.
fn time<T>(mut f: impl FnMut() -> T, min: Duration) -> Duration {
    let start = thread_cpu_time();
    let wall = Instant::now();
    let mut runs = 0u32;
    while wall.elapsed() < min || runs == 0 {
        black_box(f());
        runs += 1;
    }
    (thread_cpu_time() - start) / runs
}

fn synthetic_samples(set: &CounterSet) -> Vec<Vec<u64>> {
    set.events()
        .iter()
        .map(|e| (0..e.sample_count() as u64).map(|k| 1000 + k).collect())
        .collect()
}

/// Evaluates `names` repeatedly and prints counters/s and per-dimension values/s.
fn evaluation(label: &str, catalog: &Catalog, topology: &Topology, names: &[&str]) {
    let set = catalog
        .resolve(names, topology)
        .expect("the benchmark counters resolve");
    let samples = synthetic_samples(&set);
    let raw: usize = samples.iter().map(Vec::len).sum();
    let mut buffer = Vec::new();
    let mut values = 0usize;
    set.evaluate_each(&samples, &mut buffer, |_, _, v| values += v.len())
        .expect("samples match");
    let per_dispatch = time(
        || {
            set.evaluate_each(&samples, &mut buffer, |_, _, v| {
                black_box(v);
            })
        },
        Duration::from_millis(400),
    )
    .as_secs_f64();
    let allocating = time(
        || set.evaluate(&samples).map(|v| v.len()),
        Duration::from_millis(200),
    )
    .as_secs_f64();
    println!(
        "{label}: {} counters, {} events, {raw} raw samples per dispatch",
        names.len(),
        set.events().len()
    );
    println!(
        "  {:.2} us/dispatch: {:.1} M counters/s, {:.1} M values/s, {:.0} M raw samples/s (evaluate(): {:.2} us)",
        per_dispatch * 1e6,
        names.len() as f64 / per_dispatch / 1e6,
        values as f64 / per_dispatch / 1e6,
        raw as f64 / per_dispatch / 1e6,
        allocating * 1e6
    );
}

fn main() {
    println!("catalog load (Catalog::builtin), target < 5 ms:");
    for arch in Catalog::architectures() {
        let per_load = time(
            || Catalog::builtin(arch).map(|c| c.len()),
            Duration::from_millis(100),
        );
        let counters = Catalog::builtin(arch).map(|c| c.len()).unwrap_or(0);
        println!(
            "  {arch:8} {:7.3} ms  ({counters} counters)",
            per_load.as_secs_f64() * 1e3
        );
    }

    println!("derived evaluation, target >= 10 M values/s:");
    let catalog = Catalog::builtin("gfx942").expect("gfx942 is built in");
    let topology = catalog
        .reference_gpu()
        .expect("gfx942 has a reference GPU")
        .topology
        .clone();
    // A usual single pass: the metrics rocprof users ask for first, and their inputs.
    let usual = [
        "GPU_UTIL",
        "FETCH_SIZE",
        "WRITE_SIZE",
        "TCC_HIT_sum",
        "TCC_MISS_sum",
        "CU_NUM",
        "SE_NUM",
        "MAX_WAVE_SIZE",
    ];
    evaluation("MI300X usual metrics", &catalog, &topology, &usual);
    let per_cu = [
        "MeanOccupancyPerCU",
        "VALUBusy",
        "OccupancyPercent",
        "SALUBusy",
        "VALUUtilization",
    ];
    evaluation("MI300X SQ metrics", &catalog, &topology, &per_cu);
    let derived: Vec<&str> = catalog
        .counters()
        .filter(|c| matches!(c.kind, CounterKind::Derived { .. }))
        .map(|c| c.name.as_str())
        .collect();
    evaluation(
        "MI300X every derived counter at once",
        &catalog,
        &topology,
        &derived,
    );
}
