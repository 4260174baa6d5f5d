//! The summary printed after a run: the top kernels by time with their counter totals, each
//! GPU's busy time, and where the files are.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::output::database::{Database, DatabaseError};
use crate::output::model::format_value;

/// How many kernels the summary lists.
pub const TOP_KERNELS: usize = 10;

fn grouped(n: u64) -> String {
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

/// The summary text of `db`, listing `files` at the end.
pub fn render(db: &Database, files: &[PathBuf]) -> Result<String, DatabaseError> {
    let mut out = String::new();
    let top = db.top(TOP_KERNELS)?;
    if top.is_empty() {
        out.push_str("rtl-pmc: no kernel dispatch was profiled\n");
    } else {
        let width = top
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
        for k in &top {
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
                    .map(|(name, total)| format!("{name}={}", format_value(*total)))
                    .collect();
                let _ = writeln!(out, "    {}", list.join("  "));
            }
        }
    }
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
    }
}
