//! The summary printed after a run: the top kernels by time with their counters, each GPU's busy
//! time and the idle gaps between its dispatches, the application's roctx ranges and how it
//! misused roctx, and where the files are.
//!
//! Numbers are for people: thousands grouped, 4 significant digits, the catalog's unit. A
//! kernel's derived counters are recomputed from their inputs summed over its dispatches (a
//! ratio of sums), never summed.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::model::{IdleGaps, SummarySource, GAP_BOUNDS_NS};

/// How many kernels the summary lists unless told otherwise (`--summary-top`).
pub const TOP_KERNELS: usize = 10;

/// The labels of the idle-gap buckets, shortest first.
const GAP_LABELS: [&str; 8] = [
    "< 10 us",
    "10-20 us",
    "20-50 us",
    "50-100 us",
    "100 us-1 ms",
    "1-10 ms",
    "10-100 ms",
    ">= 100 ms",
];

/// The widest bar of the idle-gap histogram.
const BAR: u64 = 30;

pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds in the most readable unit: `850 ns`, `12.35 us`, `1.50 ms`, `2.000 s`.
pub fn duration(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// A counter value for people: integers below a million with grouped thousands (`40,320`),
/// larger values with 4 significant digits and a suffix (`1.235 M`, `12.35 G`; from 10^18 in
/// scientific notation), fractions with 4 significant digits (`87.35`, `0.01235`); then the
/// unit (`%` for percent).
pub fn value(v: f64, unit: &str) -> String {
    let magnitude = v.abs();
    let number = if !v.is_finite() {
        v.to_string()
    } else if magnitude >= 1e18 {
        format!("{v:.3e}")
    } else if magnitude >= 1e6 {
        let (scale, suffix) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")]
            .into_iter()
            .find(|(scale, _)| magnitude >= *scale)
            .unwrap_or((1e6, "M"));
        format!("{} {suffix}", significant(v / scale))
    } else if v.fract() == 0.0 || magnitude >= 1000.0 {
        let rounded = v.round();
        let sign = if rounded < 0.0 { "-" } else { "" };
        format!("{sign}{}", grouped(rounded.abs() as u64))
    } else {
        significant(v)
    };
    match unit {
        "" => number,
        "percent" => format!("{number}%"),
        other => format!("{number} {other}"),
    }
}

/// `v` (below 1000 in magnitude, or scaled) with 4 significant digits, trailing zeros dropped.
fn significant(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let text = format!("{v:.digits$}");
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => text,
    }
}

/// The histogram of one GPU's idle gaps, one line per bucket with a bar, indented.
fn gap_histogram(out: &mut String, gaps: &IdleGaps) {
    let most = gaps.counts.iter().copied().max().unwrap_or(0).max(1);
    let total: u64 = gaps.counts.iter().sum();
    let _ = writeln!(
        out,
        "  idle gaps between its dispatches: {}",
        grouped(total)
    );
    for (label, &count) in GAP_LABELS.iter().zip(&gaps.counts) {
        let bar = "#".repeat((count * BAR).div_ceil(most) as usize);
        let line = format!("    {label:>11}  {:>9}  {bar}", grouped(count));
        let _ = writeln!(out, "{}", line.trim_end());
    }
    debug_assert_eq!(GAP_LABELS.len(), GAP_BOUNDS_NS.len() + 1);
}

/// The summary text of `db` with at most `top` kernels, listing `files` at the end.
pub fn render<S: SummarySource>(db: &S, files: &[PathBuf], top: usize) -> Result<String, S::Error> {
    let mut out = String::new();
    let all = db.kernel_times()?;
    let listed = &all[..all.len().min(top)];
    if all.is_empty() {
        out.push_str("rtl-pmc: no kernel dispatch was profiled\n");
    } else {
        let width = listed
            .iter()
            .map(|k| k.kernel.len())
            .max()
            .unwrap_or(6)
            .clamp(6, 60);
        let _ = writeln!(out, "rtl-pmc: top kernels by total time");
        let _ = writeln!(
            out,
            "  {:<width$}  {:>8}  {:>12}  {:>12}  {:>6}",
            "Kernel", "Calls", "Total", "Average", "%"
        );
        for k in listed {
            let name: String = if k.kernel.chars().count() > width {
                let cut: String = k.kernel.chars().take(width - 3).collect();
                format!("{cut}...")
            } else {
                k.kernel.clone()
            };
            let _ = writeln!(
                out,
                "  {name:<width$}  {:>8}  {:>12}  {:>12}  {:>6.1}",
                grouped(k.calls),
                duration(k.total_ns as f64),
                duration(k.average_ns),
                k.percent
            );
            let counters = db.kernel_counters(&k.kernel)?;
            if !counters.is_empty() {
                let list: Vec<String> = counters
                    .iter()
                    .map(|c| format!("{}={}", c.name, value(c.value, &c.unit)))
                    .collect();
                let _ = writeln!(out, "    {}", list.join("  "));
            }
        }
        if all.len() > listed.len() {
            let left: u64 = all[listed.len()..].iter().map(|k| k.total_ns).sum();
            let percent: f64 = all[listed.len()..].iter().map(|k| k.percent).sum();
            let _ = writeln!(
                out,
                "  ... {} more kernels ({}, {percent:.1}% of the time) not listed; --summary-top {} lists them all",
                grouped((all.len() - listed.len()) as u64),
                duration(left as f64),
                all.len()
            );
        }
    }
    let gaps = db.idle_gaps();
    for gpu in db.busy()? {
        let name = if gpu.name.is_empty() {
            String::new()
        } else {
            format!(" ({})", gpu.name)
        };
        let _ = writeln!(
            out,
            "rtl-pmc: GPU {}{name}: busy {} in {} dispatches ({:.1}% of its active span)",
            gpu.agent,
            duration(gpu.busy_ns as f64),
            grouped(gpu.dispatches),
            gpu.busy_percent
        );
        if let Some((_, g)) = gaps.iter().find(|(agent, _)| *agent == gpu.agent) {
            gap_histogram(&mut out, g);
        }
    }
    for line in db.region_lines()? {
        let _ = writeln!(out, "{line}");
    }
    for file in files {
        let _ = writeln!(out, "rtl-pmc: wrote {}", file.display());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(12), "12");
        assert_eq!(duration(850.0), "850 ns");
        assert_eq!(duration(12_345.0), "12.35 us");
        assert_eq!(duration(1_500_000.0), "1.50 ms");
        assert_eq!(duration(2e9), "2.000 s");
        assert_eq!(value(40_320.0, ""), "40,320");
        assert_eq!(value(64.0, ""), "64");
        assert_eq!(value(0.0, ""), "0");
        assert_eq!(value(-1_500.0, ""), "-1,500");
        assert_eq!(value(1_234.56, "cycles"), "1,235 cycles");
        assert_eq!(value(1_234_567.0, ""), "1.235 M");
        assert_eq!(value(12_345_678_901.0, "FLOP"), "12.35 G FLOP");
        assert_eq!(value(87.3456, "percent"), "87.35%");
        assert_eq!(value(100.0, "percent"), "100%");
        assert_eq!(value(0.012345, ""), "0.01235");
        assert_eq!(value(2.5, "conflicts/access"), "2.5 conflicts/access");
        assert_eq!(value(1e300, ""), "1.000e300");
    }
}
