//! The roofline chart as inline SVG: log-log axes of arithmetic intensity (FLOP per byte of
//! memory traffic) and FLOP/s, the GPU's compute ceilings (FP32, FP64, MFMA) and bandwidth
//! ceilings (HBM, L2, LDS), and one point per kernel, its area in proportion to the kernel's
//! share of the time, labelled with its name.

use std::fmt::Write as _;

use super::html::{escape, short_name};
use super::kernel_metrics::Point;
use super::peaks::Peaks;
use rtl_pmc_profile::files::summary::value;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 540.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 50.0;

/// Colours of the points, in turn.
pub const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

/// One kernel on the chart.
pub struct Plotted<'a> {
    /// Kernel name.
    pub name: &'a str,
    /// Its share of all kernel time, percent.
    pub percent: f64,
    /// Where it lies.
    pub point: &'a Point,
}

/// Log-scale axes from `10^x0`..`10^x1` and `10^y0`..`10^y1`.
struct Axes {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Axes {
    fn x(&self, v: f64) -> f64 {
        LEFT + (v.log10() - self.x0) / (self.x1 - self.x0) * (WIDTH - LEFT - RIGHT)
    }

    fn y(&self, v: f64) -> f64 {
        HEIGHT - BOTTOM - (v.log10() - self.y0) / (self.y1 - self.y0) * (HEIGHT - TOP - BOTTOM)
    }
}

/// The chart's SVG for a GPU with `peaks` and the kernels `points`.
pub fn svg(peaks: &Peaks, points: &[Plotted<'_>]) -> String {
    let compute: Vec<(&str, f64)> = [
        ("MFMA FP16", &peaks.mfma),
        ("FP32", &peaks.fp32),
        ("FP64", &peaks.fp64),
    ]
    .into_iter()
    .filter_map(|(n, p)| p.as_ref().map(|p| (n, p.per_second)))
    .collect();
    let bandwidth: Vec<(&str, f64)> = [("LDS", &peaks.lds), ("L2", &peaks.l2), ("HBM", &peaks.hbm)]
        .into_iter()
        .filter_map(|(n, p)| p.as_ref().map(|p| (n, p.per_second)))
        .collect();
    let top_rate = compute
        .iter()
        .map(|c| c.1)
        .chain(points.iter().map(|p| p.point.flops))
        .fold(1e9, f64::max);
    let low_rate = points
        .iter()
        .map(|p| p.point.flops / 3.0)
        .fold(top_rate / 1e5, f64::min);
    let intensities = points.iter().map(|p| p.point.intensity);
    let axes = Axes {
        x0: intensities
            .clone()
            .map(|i| i / 3.0)
            .fold(0.01, f64::min)
            .log10()
            .floor(),
        x1: intensities
            .map(|i| i * 3.0)
            .fold(1000.0, f64::max)
            .log10()
            .ceil(),
        y0: low_rate.log10().floor(),
        y1: (top_rate * 3.0).log10().ceil(),
    };
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="roofline" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="Roofline">"#
    );
    // Grid and axes, one line per decade.
    for d in axes.x0 as i32..=axes.x1 as i32 {
        let v = 10f64.powi(d);
        let x = axes.x(v);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 18.0,
            value(v, "")
        );
    }
    for d in axes.y0 as i32..=axes.y1 as i32 {
        let v = 10f64.powi(d);
        let y = axes.y(v);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            value(v, "FLOP/s")
        );
    }
    let _ = write!(
        out,
        r#"<text class="axis" x="{:.1}" y="{:.1}" text-anchor="middle">arithmetic intensity (FLOP per byte of HBM traffic)</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 8.0
    );
    let left = 10f64.powf(axes.x0);
    let right = 10f64.powf(axes.x1);
    let highest = compute.iter().map(|c| c.1).fold(f64::NAN, f64::max);
    let fastest = bandwidth.iter().map(|b| b.1).fold(f64::NAN, f64::max);
    // Bandwidth ceilings rise until the highest compute ceiling (or the chart's top).
    for &(name, bytes) in &bandwidth {
        let end_rate = match highest.is_nan() {
            true => 10f64.powf(axes.y1),
            false => highest,
        };
        let end = (end_rate / bytes).min(right);
        let start = left.max(10f64.powf(axes.y0) / bytes);
        let (x1, y1, x2, y2) = (
            axes.x(start),
            axes.y(start * bytes),
            axes.x(end),
            axes.y(end * bytes),
        );
        let angle = (y2 - y1).atan2(x2 - x1).to_degrees();
        let _ = write!(
            out,
            r#"<line class="ceiling bandwidth" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}"/><text class="ceiling-label" transform="translate({:.1},{:.1}) rotate({angle:.1})">{name} {}</text>"#,
            x1 + 0.35 * (x2 - x1),
            y1 + 0.35 * (y2 - y1) - 6.0,
            value(bytes, "B/s")
        );
    }
    // Compute ceilings run flat from where the fastest bandwidth reaches them.
    for &(name, rate) in &compute {
        let start = match fastest.is_nan() {
            true => left,
            false => (rate / fastest).max(left),
        };
        let y = axes.y(rate);
        let _ = write!(
            out,
            r#"<line class="ceiling compute" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/><text class="ceiling-label" x="{:.1}" y="{:.1}" text-anchor="end">{name} {}</text>"#,
            axes.x(start),
            WIDTH - RIGHT,
            WIDTH - RIGHT - 4.0,
            y - 5.0,
            value(rate, "FLOP/s")
        );
    }
    for (i, p) in points.iter().enumerate() {
        let (x, y) = (axes.x(p.point.intensity), axes.y(p.point.flops));
        let r = 5.0 + 15.0 * (p.percent.clamp(0.0, 100.0) / 100.0).sqrt();
        let colour = PALETTE[i % PALETTE.len()];
        let _ = write!(
            out,
            r#"<g class="point"><circle cx="{x:.1}" cy="{y:.1}" r="{r:.1}" fill="{colour}"><title>{}: {} FLOP/byte, {}, {:.1}% of the time</title></circle><text class="point-label" x="{:.1}" y="{:.1}">{}</text></g>"#,
            escape(p.name),
            value(p.point.intensity, ""),
            value(p.point.flops, "FLOP/s"),
            p.percent,
            x + r + 3.0,
            y + 4.0 + 14.0 * (i % 3) as f64 - 14.0,
            escape(&short_name(p.name))
        );
    }
    out.push_str("</svg>");
    out
}
