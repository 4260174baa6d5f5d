//! Planner benchmark: passes chosen against the lower bound and a first-fit baseline (what
//! rocprof v1 proposes) on named counter sets, with the time each plan took.
//!
//! ```text
//! cargo run --release -p rtl-pmc-cli --example plan_bench
//! ```
//!
//! Sets: all basic counters of gfx942; all derived counters of gfx942; every hardware event any
//! derived counter of gfx90a needs; 100 random sets of 10-60 gfx942 counters (fixed seed).
//! Counters that cannot be collected in one pass on their own are left out and counted.

use std::time::{Duration, Instant};

use rtl_pmc::passes::{first_fit, plan_group, Counter, Event, Limits, PlanOptions};
use rtl_pmc_counters::{Catalog, CounterKind, HwEvent};

fn limits(catalog: &Catalog) -> Limits {
    Limits::from_blocks(catalog.blocks().map(|b| {
        (
            b.name.as_str(),
            b.budget.as_str(),
            b.counters_per_pass as usize,
        )
    }))
}

fn planner_counter(catalog: &Catalog, name: String, events: Vec<HwEvent>) -> Counter<HwEvent> {
    let events = events
        .into_iter()
        .map(|ev| Event {
            budget: catalog
                .block(&ev.block)
                .map_or_else(|| ev.block.clone(), |b| b.budget.clone()),
            key: ev,
        })
        .collect();
    Counter { name, events }
}

/// The counters of `names` that resolve and fit one pass alone, and how many were left out.
fn counters(
    catalog: &Catalog,
    limits: &Limits,
    names: &[String],
) -> (Vec<Counter<HwEvent>>, usize) {
    let mut kept = Vec::new();
    let mut left_out = 0;
    for name in names {
        let Ok(events) = catalog.hardware_events(name) else {
            left_out += 1;
            continue;
        };
        let counter = planner_counter(catalog, name.clone(), events);
        if first_fit(std::slice::from_ref(&counter), limits).is_ok_and(|p| p.len() == 1) {
            kept.push(counter);
        } else {
            left_out += 1;
        }
    }
    (kept, left_out)
}

struct Row {
    passes: usize,
    lower_bound: usize,
    first_fit: usize,
    optimal: bool,
    time: Duration,
}

fn measure(counters: &[Counter<HwEvent>], limits: &Limits) -> Row {
    let start = Instant::now();
    let plan = plan_group(counters, limits, &PlanOptions::default()).expect("plannable set");
    let time = start.elapsed();
    Row {
        passes: plan.passes.len(),
        lower_bound: plan.lower_bound,
        first_fit: first_fit(counters, limits).expect("plannable set").len(),
        optimal: plan.optimal,
        time,
    }
}

fn print_row(name: &str, size: usize, left_out: usize, row: &Row) {
    println!(
        "{name:<44} {size:>5} {left_out:>5} {:>7} {:>6} {:>6} {:>8} {:>10.1}",
        row.passes,
        row.lower_bound,
        row.first_fit,
        if row.optimal { "yes" } else { "no" },
        row.time.as_secs_f64() * 1000.0
    );
}

/// A fixed-seed generator so every run draws the same sets.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn main() {
    let gfx942 = Catalog::builtin("gfx942").expect("gfx942 definitions");
    let gfx90a = Catalog::builtin("gfx90a").expect("gfx90a definitions");
    let limits942 = limits(&gfx942);
    let limits90a = limits(&gfx90a);

    println!(
        "{:<44} {:>5} {:>5} {:>7} {:>6} {:>6} {:>8} {:>10}",
        "set", "size", "out", "passes", "bound", "ff", "optimal", "time ms"
    );
    let names_where = |catalog: &Catalog, basic: bool| -> Vec<String> {
        catalog
            .counters()
            .filter(|c| matches!(c.kind, CounterKind::Basic { .. }) == basic)
            .map(|c| c.name.clone())
            .collect()
    };

    let (set, out) = counters(&gfx942, &limits942, &names_where(&gfx942, true));
    print_row(
        "gfx942: all basic counters",
        set.len(),
        out,
        &measure(&set, &limits942),
    );

    let (set, out) = counters(&gfx942, &limits942, &names_where(&gfx942, false));
    print_row(
        "gfx942: all derived counters",
        set.len(),
        out,
        &measure(&set, &limits942),
    );

    let mut needed: Vec<HwEvent> = names_where(&gfx90a, false)
        .iter()
        .filter_map(|n| gfx90a.hardware_events(n).ok())
        .flatten()
        .collect();
    needed.sort();
    needed.dedup();
    let set: Vec<Counter<HwEvent>> = needed
        .into_iter()
        .map(|ev| {
            let name = format!("{}:{}:{}", ev.block, ev.event, ev.flags);
            planner_counter(&gfx90a, name, vec![ev])
        })
        .collect();
    print_row(
        "gfx90a: every input of a derived counter",
        set.len(),
        0,
        &measure(&set, &limits90a),
    );

    let all: Vec<String> = gfx942.counter_names().map(str::to_string).collect();
    random_sets("gfx942", &gfx942, &limits942, &all, 0x5EED);
    let derived = names_where(&gfx942, false);
    random_sets("gfx942 derived", &gfx942, &limits942, &derived, 0xD3E1);
}

/// Plans 100 random sets of 10-60 names drawn from `pool`, printing the first ten and a summary.
fn random_sets(label: &str, catalog: &Catalog, limits: &Limits, pool: &[String], seed: u64) {
    let mut rng = SplitMix(seed);
    let (mut at_bound, mut proven, mut better, mut worse) = (0, 0, 0, 0);
    let (mut total, mut total_ff, mut slowest) = (0, 0, Duration::ZERO);
    for i in 0..100 {
        let size = (10 + rng.below(51)).min(pool.len());
        let mut names = Vec::new();
        while names.len() < size {
            let name = &pool[rng.below(pool.len())];
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        let (set, out) = counters(catalog, limits, &names);
        let row = measure(&set, limits);
        if i < 5 {
            print_row(
                &format!("{label}: random set {}", i + 1),
                set.len(),
                out,
                &row,
            );
        }
        at_bound += usize::from(row.passes == row.lower_bound);
        proven += usize::from(row.optimal);
        better += usize::from(row.passes < row.first_fit);
        worse += usize::from(row.passes > row.first_fit);
        total += row.passes;
        total_ff += row.first_fit;
        slowest = slowest.max(row.time);
    }
    println!(
        "100 random {label} sets of 10-60 counters: {total} passes (first fit {total_ff}); at \
         the lower bound {at_bound}, proven optimal {proven}, fewer than first fit {better}, \
         more {worse}; slowest plan {:.1} ms",
        slowest.as_secs_f64() * 1000.0
    );
}
