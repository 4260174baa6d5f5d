//! The report as one HTML document: inline CSS and SVG, no script, nothing to fetch.

use std::fmt::Write as _;

use super::kernel_metrics::{roofline_point, speed_of_light, Point, Row};
use super::peaks::Peak;
use super::roofline::{self, Plotted, PALETTE};
use super::{CounterValue, Gpu, Kernel, Report};
use rtl_pmc_profile::files::summary::{duration, grouped, value};

const STYLE: &str = "
:root { --ink: #1d2330; --muted: #5b6475; --line: #d9dde5; --bar: #3d7bd9; --warn: #b35c00; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif; color: var(--ink); background: #f5f6f8; }
main { max-width: 1360px; margin: 0 auto; padding: 18px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 2px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 0 0 10px; word-break: break-all; }
.muted { color: var(--muted); }
.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 14px 16px; margin-bottom: 16px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { word-break: break-all; }
.bar { background: #e8ecf3; border-radius: 3px; height: 10px; width: 100%; min-width: 60px; }
.bar > span { display: block; height: 100%; border-radius: 3px; background: var(--bar); }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 6px; }
.estimate { color: var(--warn); }
.grid2 { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; }
.grid2 > div { min-width: 0; overflow-x: auto; }
@media (max-width: 1100px) { .grid2 { grid-template-columns: 1fr; } }
svg { width: 100%; height: auto; font-family: inherit; }
svg .grid { stroke: #e3e6ec; }
svg .tick { font-size: 11px; fill: var(--muted); }
svg .axis { font-size: 12px; fill: var(--muted); }
svg .ceiling { stroke-width: 2; }
svg .compute { stroke: #444; }
svg .bandwidth { stroke: #7a4fb5; }
svg .ceiling-label { font-size: 11px; fill: #333; }
svg .point circle { fill-opacity: .75; stroke: #fff; stroke-width: 1; }
svg .point-label { font-size: 12px; fill: var(--ink); }
svg .box { fill: #f3f6fb; stroke: #9aa6b8; rx: 6; }
svg .box-title { font-size: 14px; font-weight: 600; fill: var(--ink); }
svg .box-line { font-size: 12.5px; fill: var(--ink); }
svg .box-empty { font-size: 12.5px; fill: var(--muted); font-style: italic; }
svg .arrow { stroke: #8893a5; stroke-width: 2; marker-end: url(#head); }
";

/// `text` with HTML's special characters escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A kernel name short enough for a chart label: long names keep their first 45 characters.
pub fn short_name(name: &str) -> String {
    match name.chars().count() > 48 {
        true => name.chars().take(45).collect::<String>() + "…",
        false => name.to_string(),
    }
}

/// A percentage bar of `percent` (clamped to 0–100).
fn bar(percent: f64) -> String {
    format!(
        r#"<div class="bar"><span style="width:{:.1}%"></span></div>"#,
        percent.clamp(0.0, 100.0)
    )
}

/// A counter's value as the terminal summary prints it, with `± half-interval` where it was
/// estimated.
fn counter_cells(c: &CounterValue) -> String {
    let shown = escape(&value(c.value, &c.unit));
    match &c.estimate {
        None => format!(r#"<td class="num">{shown}</td><td class="muted">measured</td>"#),
        Some(e) => {
            let half = match e.half_interval {
                Some(h) => format!(" ± {}", escape(&value(h, &c.unit))),
                None => " ± ?".into(),
            };
            let reliable = match e.reliable {
                true => "",
                false => ", unreliable",
            };
            format!(
                r#"<td class="num estimate">{shown}{half}</td><td class="estimate">estimated from {} of {} dispatches (95% interval){reliable}</td>"#,
                e.sampled, e.dispatches
            )
        }
    }
}

/// The title, the command and the totals.
fn header(out: &mut String, report: &Report) {
    let dispatches: u64 = report.kernels.iter().map(|k| k.calls).sum();
    let total: u64 = report.kernels.iter().map(|k| k.total_ns).sum();
    let _ = write!(
        out,
        r#"<h1>rtl-pmc report</h1><p class="muted">{}{} kernels, {} dispatches, {} of kernel time</p>"#,
        match report.command.is_empty() {
            true => String::new(),
            false => format!("<code>{}</code> · ", escape(&report.command)),
        },
        grouped(report.kernels.len() as u64),
        grouped(dispatches),
        duration(total as f64)
    );
}

/// Each GPU's peaks with their sources.
fn gpus(out: &mut String, report: &Report) {
    out.push_str("<h2>Peaks</h2>");
    for gpu in &report.gpus {
        let _ = write!(
            out,
            r#"<div class="card"><h3>GPU {} · {}{}</h3><table><tr><th>peak</th><th class="num">rate</th><th>source</th></tr>"#,
            gpu.node,
            escape(&gpu.arch),
            match gpu.product.is_empty() {
                true => String::new(),
                false => format!(" · {}", escape(&gpu.product)),
            }
        );
        let p = &gpu.peaks;
        let rows: [(&str, &Option<Peak>, &str); 6] = [
            ("FP32 vector", &p.fp32, "FLOP/s"),
            ("FP64 vector", &p.fp64, "FLOP/s"),
            ("MFMA FP16", &p.mfma, "FLOP/s"),
            ("HBM bandwidth", &p.hbm, "B/s"),
            ("L2 bandwidth", &p.l2, "B/s"),
            ("LDS bandwidth", &p.lds, "B/s"),
        ];
        for (name, peak, unit) in rows {
            let (rate, source) = match peak {
                Some(peak) => (value(peak.per_second, unit), escape(&peak.source)),
                None => ("—".into(), "not known for this GPU".into()),
            };
            let _ = write!(
                out,
                r#"<tr><td>{name}</td><td class="num">{rate}</td><td class="muted">{source}</td></tr>"#
            );
        }
        out.push_str("</table></div>");
    }
}

/// The kernels by total time.
fn top_kernels(out: &mut String, report: &Report) {
    out.push_str(r#"<h2>Top kernels by time</h2><div class="card"><table><tr><th class="num">#</th><th>kernel</th><th class="num">calls</th><th class="num">total</th><th class="num">average</th><th class="num">% of time</th><th></th></tr>"#);
    for (i, k) in report.kernels.iter().enumerate() {
        let _ = write!(
            out,
            r##"<tr><td class="num">{}</td><td class="name"><span class="swatch" style="background:{}"></span><a href="#kernel-{}">{}</a></td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{:.1}</td><td>{}</td></tr>"##,
            i + 1,
            PALETTE[i % PALETTE.len()],
            i + 1,
            escape(&k.name),
            grouped(k.calls),
            duration(k.total_ns as f64),
            duration(k.average_ns),
            k.percent,
            bar(k.percent)
        );
    }
    out.push_str("</table></div>");
}

/// The roofline of the first GPU, with the kernels that have no point and why.
fn roofline_section(out: &mut String, report: &Report, points: &[Result<Point, String>]) {
    out.push_str(r#"<h2>Roofline</h2><div class="card">"#);
    let Some(gpu) = report.gpus.first() else {
        out.push_str(r#"<p class="muted">The profile names no GPU.</p></div>"#);
        return;
    };
    let plotted: Vec<Plotted<'_>> = report
        .kernels
        .iter()
        .zip(points)
        .filter_map(|(k, p)| {
            p.as_ref().ok().map(|point| Plotted {
                name: &k.name,
                percent: k.percent,
                point,
            })
        })
        .collect();
    let _ = write!(
        out,
        r#"<p class="muted">Ceilings of GPU {} ({}); one point per kernel, its area in proportion to the kernel's share of the time. Operations: vector and matrix floating-point instructions; bytes: FETCH_SIZE + WRITE_SIZE.</p>"#,
        gpu.node,
        escape(&gpu.arch)
    );
    out.push_str(&roofline::svg(&gpu.peaks, &plotted));
    let mut notes = String::new();
    for (k, p) in report.kernels.iter().zip(points) {
        let note = match p {
            Err(why) => format!("no point: {}", escape(why)),
            Ok(p) => {
                let mut parts = vec![format!("counts {}", p.counted.join(", "))];
                if !p.missing.is_empty() {
                    parts.push(format!(
                        "a lower bound: the profile lacks {}",
                        p.missing.join(", ")
                    ));
                }
                if p.estimated {
                    parts.push("from estimated counters".into());
                }
                format!(
                    "{} FLOP/byte, {} ({})",
                    value(p.intensity, ""),
                    value(p.flops, "FLOP/s"),
                    parts.join("; ")
                )
            }
        };
        let _ = write!(notes, "<li><b>{}</b>: {note}</li>", escape(&k.name));
    }
    if !notes.is_empty() {
        let _ = write!(out, r#"<ul class="muted">{notes}</ul>"#);
    }
    out.push_str("</div>");
}

/// The speed-of-light table of one kernel.
fn speed_of_light_table(out: &mut String, rows: &[Row]) {
    out.push_str(r#"<h4>Speed of light</h4><p class="muted">Rates over the kernel's time against the GPU's peaks; <code>rtl-pmc analyze DIR --html</code> shows rocprof-compute's System Speed-of-Light panel instead.</p>"#);
    if rows.is_empty() {
        out.push_str(r#"<p class="muted">The profile has no counter for this table (FP32, FP64 and MFMA instruction counters, FETCH_SIZE and WRITE_SIZE, or percentages).</p>"#);
        return;
    }
    out.push_str(r#"<table><tr><th>metric</th><th class="num">value</th><th class="num">peak</th><th class="num">% of peak</th><th></th></tr>"#);
    for r in rows {
        let (shown, peak) = match r.unit {
            "%" => (format!("{}%", value(r.value, "")), "100%".to_string()),
            unit => (
                value(r.value, unit),
                r.peak.map_or("—".into(), |p| value(p, unit)),
            ),
        };
        let percent = r.percent_of_peak();
        let mut note = String::new();
        if !r.missing.is_empty() {
            let _ = write!(note, " ≥ (lacks {})", r.missing.join(", "));
        }
        if r.estimated {
            note.push_str(" ≈ (estimated inputs)");
        }
        let _ = write!(
            out,
            r#"<tr><td>{}<span class="estimate">{}</span></td><td class="num">{shown}</td><td class="num">{peak}</td><td class="num">{}</td><td>{}</td></tr>"#,
            escape(&r.name),
            escape(&note),
            percent.map_or("—".into(), |p| format!("{}%", value(p, ""))),
            percent.map_or(String::new(), bar)
        );
    }
    out.push_str("</table>");
}

/// One of rocprof-compute's panel tables evaluated for a kernel, a bar beside each percentage
/// of peak.
fn panel_table(out: &mut String, table: &panels::EvaluatedTable) {
    let _ = write!(
        out,
        r#"<h4>{} <span class="muted">(panel {})</span></h4><table class="panel"><tr>"#,
        escape(&table.title),
        escape(&table.id)
    );
    for (i, heading) in table.headings.iter().enumerate() {
        let class = if i == 0 { "" } else { r#" class="num""# };
        let _ = write!(out, "<th{class}>{}</th>", escape(heading));
    }
    let percent_column = table
        .headings
        .iter()
        .skip(1)
        .position(|h| h == "Pct of Peak");
    if percent_column.is_some() {
        out.push_str("<th></th>");
    }
    out.push_str("</tr>");
    for row in &table.rows {
        let _ = write!(
            out,
            r#"<tr data-metric="{}"><td>{}</td>"#,
            escape(&row.id),
            escape(&row.name)
        );
        for cell in &row.cells {
            let text = match cell {
                panels::Cell::Text(t) => escape(t),
                panels::Cell::Value(Some(v)) => escape(&value(*v, "")),
                panels::Cell::Value(None) if row.missing.is_empty() => "—".into(),
                panels::Cell::Value(None) => format!(
                    r#"<span class="muted" title="lacks {}">—</span>"#,
                    escape(&row.missing.join(", "))
                ),
            };
            let _ = write!(out, r#"<td class="num">{text}</td>"#);
        }
        if let Some(at) = percent_column {
            let _ = match row.cells.get(at) {
                Some(panels::Cell::Value(Some(p))) => write!(out, "<td>{}</td>", bar(*p)),
                _ => write!(out, "<td></td>"),
            };
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    let mut missing: Vec<&str> = table
        .rows
        .iter()
        .flat_map(|r| r.missing.iter().map(String::as_str))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        let _ = write!(
            out,
            r#"<p class="muted">— : the profile lacks {}.</p>"#,
            escape(&missing.join(", "))
        );
    }
}

/// The boxes of the memory chart: a title and the counters shown in it.
const MEMORY_BOXES: [(&str, &[&str]); 5] = [
    (
        "Wavefronts",
        &[
            "SQ_WAVES",
            "SQ_INSTS_VALU",
            "SQ_INSTS_SALU",
            "SQ_INSTS_VMEM_RD",
            "SQ_INSTS_VMEM_WR",
            "SQ_INSTS_LDS",
            "SQ_INSTS_SMEM",
        ],
    ),
    (
        "LDS",
        &["SQ_INSTS_LDS", "SQ_LDS_IDX_ACTIVE", "SQ_LDS_BANK_CONFLICT"],
    ),
    (
        "Vector L1",
        &[
            "TCP_TOTAL_CACHE_ACCESSES_sum",
            "TCP_TCC_READ_REQ_sum",
            "TCP_TCC_WRITE_REQ_sum",
            "TCP_TCC_ATOMIC_WITH_RET_REQ_sum",
        ],
    ),
    (
        "L2 cache",
        &[
            "TCC_REQ_sum",
            "TCC_HIT_sum",
            "TCC_MISS_sum",
            "TCC_EA0_RDREQ_sum",
            "TCC_EA0_WRREQ_sum",
        ],
    ),
    ("HBM", &["FETCH_SIZE", "WRITE_SIZE"]),
];

/// The memory chart of one kernel: wavefronts feeding the LDS and the vector L1 cache, the L2
/// cache and memory, each box with the kernel's counters of it.
fn memory_chart(out: &mut String, kernel: &Kernel) {
    // (x, y, width, height) of each box, in MEMORY_BOXES order.
    const PLACES: [(f64, f64, f64, f64); 5] = [
        (4.0, 4.0, 170.0, 252.0),
        (214.0, 4.0, 170.0, 110.0),
        (214.0, 134.0, 170.0, 122.0),
        (424.0, 4.0, 170.0, 252.0),
        (634.0, 4.0, 150.0, 252.0),
    ];
    out.push_str(r##"<h4>Memory chart</h4><svg class="memory" viewBox="0 0 790 262" role="img" aria-label="Memory chart"><defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#8893a5"/></marker></defs>"##);
    for (x1, y1, x2, y2) in [
        (174.0, 59.0, 212.0, 59.0),
        (174.0, 195.0, 212.0, 195.0),
        (384.0, 195.0, 422.0, 195.0),
        (594.0, 130.0, 632.0, 130.0),
    ] {
        let _ = write!(
            out,
            r#"<line class="arrow" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>"#
        );
    }
    for ((title, names), (x, y, w, h)) in MEMORY_BOXES.iter().zip(PLACES) {
        let _ = write!(
            out,
            r#"<rect class="box" x="{x}" y="{y}" width="{w}" height="{h}"/><text class="box-title" x="{}" y="{}">{title}</text>"#,
            x + 8.0,
            y + 20.0
        );
        let mut line = 0;
        for name in names.iter() {
            let Some(c) = kernel.counter(name) else {
                continue;
            };
            // The box names the block: labels drop its prefix.
            let label = name.trim_end_matches("_sum");
            let label = ["SQ_INSTS_", "SQ_", "TCP_", "TCC_"]
                .iter()
                .find_map(|p| label.strip_prefix(p))
                .unwrap_or(label);
            let estimate = match c.estimate {
                Some(_) => " ≈",
                None => "",
            };
            let _ = write!(
                out,
                r#"<text class="box-line" x="{}" y="{}"><title>{name}</title>{}: {}{estimate}</text>"#,
                x + 8.0,
                y + 42.0 + 17.0 * line as f64,
                escape(label),
                escape(&value(c.value, &c.unit))
            );
            line += 1;
        }
        if *title == "L2 cache" {
            if let (Some(hit), Some(miss)) = (
                kernel.counter("TCC_HIT_sum"),
                kernel.counter("TCC_MISS_sum"),
            ) {
                let all = hit.value + miss.value;
                if all > 0.0 {
                    let _ = write!(
                        out,
                        r#"<text class="box-line" x="{}" y="{}">hit rate: {}%</text>"#,
                        x + 8.0,
                        y + 42.0 + 17.0 * line as f64,
                        value(100.0 * hit.value / all, "")
                    );
                    line += 1;
                }
            }
        }
        if line == 0 {
            let _ = write!(
                out,
                r#"<text class="box-empty" x="{}" y="{}">not collected</text>"#,
                x + 8.0,
                y + 40.0
            );
        }
    }
    out.push_str("</svg>");
}

/// One kernel's section: speed-of-light, memory chart and every counter.
fn kernel_section(out: &mut String, index: usize, kernel: &Kernel, gpu: Option<&Gpu>) {
    let peaks = gpu.map(|g| g.peaks.clone()).unwrap_or_default();
    let _ = write!(
        out,
        r#"<section class="card kernel" id="kernel-{}" data-kernel="{}"><h3><span class="swatch" style="background:{}"></span>{}</h3><p class="muted">{} call{} · {} total · {} average · {:.1}% of the time</p><div class="grid2"><div>"#,
        index + 1,
        escape(&kernel.name),
        PALETTE[index % PALETTE.len()],
        escape(&kernel.name),
        grouped(kernel.calls),
        if kernel.calls == 1 { "" } else { "s" },
        duration(kernel.total_ns as f64),
        duration(kernel.average_ns),
        kernel.percent
    );
    match kernel.panels.is_empty() {
        true => speed_of_light_table(out, &speed_of_light(kernel, &peaks)),
        false => kernel.panels.iter().for_each(|t| panel_table(out, t)),
    }
    out.push_str("</div><div>");
    memory_chart(out, kernel);
    out.push_str("</div></div><h4>Counters</h4>");
    if kernel.counters.is_empty() {
        out.push_str(r#"<p class="muted">No counter was collected (a timing-only profile).</p>"#);
    } else {
        out.push_str(r#"<table class="counters"><tr><th>counter</th><th class="num">value</th><th>how</th></tr>"#);
        for c in &kernel.counters {
            let _ = write!(
                out,
                r#"<tr data-counter="{}"><td class="name">{}</td>{}</tr>"#,
                escape(&c.name),
                escape(&c.name),
                counter_cells(c)
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</section>");
}

/// The whole document.
pub fn render(report: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>rtl-pmc report</title><style>{STYLE}</style></head><body><main>"#
    );
    header(&mut out, report);
    out.push_str(r#"<div class="grid2"><div>"#);
    top_kernels(&mut out, report);
    out.push_str("</div><div>");
    gpus(&mut out, report);
    out.push_str("</div></div>");
    let points: Vec<Result<Point, String>> = report.kernels.iter().map(roofline_point).collect();
    roofline_section(&mut out, report, &points);
    out.push_str(r#"<h2>Kernels</h2><p class="muted">Totals over each kernel's dispatches; a derived counter is computed from its inputs summed over them. Where a counter was not measured on every dispatch its value is an estimate, shown with its 95% interval.</p>"#);
    for (i, k) in report.kernels.iter().enumerate() {
        kernel_section(&mut out, i, k, report.gpus.first());
    }
    out.push_str("</main></body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_and_shortened() {
        assert_eq!(
            escape(r#"void k<float, 2>(a&b, "c")"#),
            "void k&lt;float, 2&gt;(a&amp;b, &quot;c&quot;)"
        );
        assert_eq!(short_name("short"), "short");
        assert_eq!(short_name(&"x".repeat(60)).chars().count(), 46);
    }

    #[test]
    fn estimated_values_show_their_interval_and_names_stay_text() {
        use crate::report::{CounterValue, Kernel, Report, Uncertainty};
        let counter = |name: &str, value: f64, estimate: Option<Uncertainty>| CounterValue {
            name: name.into(),
            value,
            unit: String::new(),
            estimate,
        };
        let report = Report {
            command: "./app --n <4>".into(),
            gpus: Vec::new(),
            kernels: vec![Kernel {
                name: "void k<float>(float*)".into(),
                calls: 8,
                total_ns: 12_000,
                average_ns: 1_500.0,
                percent: 100.0,
                panels: Vec::new(),
                counters: vec![
                    counter("SQ_WAVES", 512.0, None),
                    counter(
                        "SQ_INSTS_VALU_FMA_F32",
                        1200.0,
                        Some(Uncertainty {
                            half_interval: Some(300.0),
                            sampled: 3,
                            dispatches: 8,
                            reliable: false,
                        }),
                    ),
                ],
            }],
        };
        let html = render(&report);
        assert!(html.contains(
            r#"<tr data-counter="SQ_INSTS_VALU_FMA_F32"><td class="name">SQ_INSTS_VALU_FMA_F32</td><td class="num estimate">1,200 ± 300</td><td class="estimate">estimated from 3 of 8 dispatches (95% interval), unreliable</td></tr>"#
        ));
        assert!(html.contains(
            r#"<tr data-counter="SQ_WAVES"><td class="name">SQ_WAVES</td><td class="num">512</td><td class="muted">measured</td></tr>"#
        ));
        assert!(html.contains("void k&lt;float&gt;(float*)"));
        assert!(html.contains("<code>./app --n &lt;4&gt;</code>"));
        assert!(html.contains("8 calls · 12.00 us total · 1.50 us average"));
        assert!(html.contains("The profile names no GPU."));
        assert!(html.contains(
            "FP32 vector<span class=\"estimate\"> ≥ (lacks SQ_INSTS_VALU_ADD_F32, SQ_INSTS_VALU_MUL_F32, SQ_INSTS_VALU_TRANS_F32) ≈ (estimated inputs)</span>"
        ));
        assert!(!html.contains("<k"));
    }
}
