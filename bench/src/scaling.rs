//! `rtl-dispatch-bench --scaling`: how the interposer's cost grows with each dimension, in one
//! run, as markdown tables ready to paste into `BENCHMARKS.md`.
//!
//! One table per dimension, every other one at its smallest: threads (1, 4, 16, one GPU, one
//! queue each), queues per thread (1, 4, 16, one thread), GPUs (1, 2, 8, one thread per GPU),
//! samples per dispatch (the modes, one thread) and dispatches per run (10k, 100k, 1M, one
//! thread). Each row is one configuration with the tool: its dispatches (each mode's count is
//! chosen so that the whole run stays within minutes: counters cost up to a few hundred times
//! more per dispatch), the counter samples per dispatch its records hold, wall and CPU ns per
//! dispatch, the process's peak resident memory, the wall ns per dispatch of the same
//! configuration without the tool (measured in runs alternating with the tool's), and the
//! ratios of wall and of CPU time to those without the tool. A configuration in several tables
//! is measured once. Records that miss dispatches, GPUs or queues are reported in a warning
//! under the table; a configuration that fails is a `failed` row, and the others go on.

use std::path::PathBuf;
use std::time::Instant;

use crate::runner::{Bench, Config};
use crate::Mode;

/// The modes of the threads, queues and GPUs tables.
const TOOL_MODES: [Mode; 3] = [Mode::Timing, Mode::Counters2, Mode::Counters16];

/// Dispatches per row of `mode` where dispatches are not the dimension.
fn dispatches(mode: Mode) -> u64 {
    match mode {
        Mode::None | Mode::Timing | Mode::Counters2 | Mode::Unselected2 | Mode::Peer(_) => 100_000,
        Mode::Counters8 => 20_000,
        Mode::Counters16 => 10_000,
    }
}

/// One table: its heading, the name of its dimension column, and per row that column's value
/// and the configuration.
struct Table {
    title: &'static str,
    column: Option<&'static str>,
    rows: Vec<(String, Config)>,
}

/// Rows of `modes` for each value of a dimension.
fn rows(
    values: &[u32],
    modes: &[Mode],
    config: impl Fn(u32, Mode) -> Config,
) -> Vec<(String, Config)> {
    values
        .iter()
        .flat_map(|&v| modes.iter().map(move |&m| (v, m)))
        .map(|(v, m)| (v.to_string(), config(v, m)))
        .collect()
}

fn tables() -> Vec<Table> {
    let at = |mode| dispatches(mode);
    vec![
        Table {
            title: "Threads (one GPU, one queue per thread)",
            column: Some("threads"),
            rows: rows(&[1, 4, 16], &TOOL_MODES, |t, m| {
                Config::new(m, t, 1, 1, at(m))
            }),
        },
        Table {
            title: "Queues (one thread, its batches round-robin over its queues)",
            column: Some("queues"),
            rows: rows(&[1, 4, 16], &TOOL_MODES, |q, m| {
                Config::new(m, 1, q, 1, at(m))
            }),
        },
        Table {
            title: "GPUs (simulated MI300X-shaped gfx942, one thread per GPU)",
            column: Some("GPUs"),
            rows: rows(&[1, 2, 8], &TOOL_MODES, |g, m| {
                Config::new(m, g, 1, g, at(m))
            }),
        },
        Table {
            title: "Samples per dispatch (one thread, one queue, one GPU)",
            column: None,
            rows: [
                Mode::Timing,
                Mode::Counters2,
                Mode::Counters8,
                Mode::Counters16,
            ]
            .into_iter()
            .map(|m| (String::new(), Config::new(m, 1, 1, 1, at(m))))
            .collect(),
        },
        Table {
            title: "Dispatches per run (one thread, one queue, one GPU)",
            column: None,
            rows: [10_000, 100_000, 1_000_000]
                .into_iter()
                .flat_map(|d| {
                    [Mode::Timing, Mode::Counters2]
                        .map(|m| (d.to_string(), Config::new(m, 1, 1, 1, d)))
                })
                .collect(),
        },
    ]
}

/// Runs every table's configurations and prints the tables.
pub fn run(runs: usize, keep: Option<PathBuf>) -> Result<(), String> {
    let mut bench = Bench::new(runs, keep)?;
    let started = Instant::now();
    println!(
        "`rtl-dispatch-bench --scaling`: median of {runs} run(s) per configuration, alternating \
         with as many runs of the same configuration without the tool, whose medians are the \
         ratios' denominators; load average at the start {}.",
        load_average()
    );
    let mut failed = 0;
    for table in tables() {
        println!("\n### {}\n", table.title);
        let header = "mode | dispatches | samples/dispatch | ns/dispatch | CPU ns/dispatch | peak RSS MiB | ns/dispatch without tool | ratio | CPU ratio |";
        let rule = "---|---:|---:|---:|---:|---:|---:|---:|---:|";
        match table.column {
            Some(column) => println!("| {column} | {header}\n|---:|{rule}"),
            None => println!("| {header}\n|{rule}"),
        }
        let mut notes = Vec::new();
        for (value, config) in &table.rows {
            let first = match table.column {
                Some(_) => format!("| {value} | {} |", config.mode.name()),
                None => format!("| {} |", config.mode.name()),
            };
            let dispatches = config.dispatches;
            match bench.compare(*config) {
                Ok((m, none)) => {
                    let samples = m.samples.map_or("—".to_string(), |s| {
                        if s.fract() == 0.0 {
                            format!("{s:.0}")
                        } else {
                            format!("{s:.1}")
                        }
                    });
                    let [wall, cpu, rss, none_wall, ratio, cpu_ratio] = m.against(&none);
                    println!(
                        "{first} {dispatches} | {samples} | {wall:.0} | {cpu:.0} | {rss:.0} | {none_wall:.0} | {ratio:.2} | {cpu_ratio:.2} |"
                    );
                    for warning in m.warnings {
                        notes.push(format!("{} {value}: {warning}", config.mode.name()));
                    }
                }
                Err(e) => {
                    failed += 1;
                    println!("{first} {dispatches} | failed | | | | | | |");
                    let first_line = e.lines().next().unwrap_or_default().to_string();
                    notes.push(format!(
                        "{} {value} failed: {first_line}",
                        config.mode.name()
                    ));
                    eprintln!("{e}");
                }
            }
        }
        for note in notes {
            println!("\nWarning: {note}.");
        }
    }
    println!(
        "\nLoad average at the end {}; total wall time {:.0} s.",
        load_average(),
        started.elapsed().as_secs_f64()
    );
    match failed {
        0 => Ok(()),
        n => Err(format!("{n} measurement(s) failed")),
    }
}

/// The 1, 5 and 15-minute load averages, as `uptime` prints them.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_its_rows() {
        let tables = tables();
        let shape: Vec<(Option<&str>, usize)> =
            tables.iter().map(|t| (t.column, t.rows.len())).collect();
        assert_eq!(
            shape,
            [
                (Some("threads"), 9),
                (Some("queues"), 9),
                (Some("GPUs"), 9),
                (None, 4),
                (None, 6)
            ]
        );
        // One thread per GPU, thread t on GPU t.
        let gpus = &tables[2].rows;
        assert!(gpus
            .iter()
            .all(|(_, c)| c.threads == c.gpus && c.queues == 1));
        assert_eq!(gpus[6].1, Config::new(Mode::Timing, 8, 1, 8, 100_000));
    }
}
