//! What the report computes from a kernel's counters: its floating-point work and memory
//! traffic, its speed-of-light rows against the GPU's peaks and its roofline point.

use super::peaks::{Peak, Peaks};
use super::Kernel;

/// A counter and the operations (or bytes) one count of it stands for.
type Term = (&'static str, f64);

/// Vector FP32 instructions: a wave's instruction is 64 lanes, a fused multiply-add two
/// operations per lane.
const FP32: [Term; 4] = [
    ("SQ_INSTS_VALU_ADD_F32", 64.0),
    ("SQ_INSTS_VALU_MUL_F32", 64.0),
    ("SQ_INSTS_VALU_TRANS_F32", 64.0),
    ("SQ_INSTS_VALU_FMA_F32", 128.0),
];

/// Vector FP64 instructions.
const FP64: [Term; 4] = [
    ("SQ_INSTS_VALU_ADD_F64", 64.0),
    ("SQ_INSTS_VALU_MUL_F64", 64.0),
    ("SQ_INSTS_VALU_TRANS_F64", 64.0),
    ("SQ_INSTS_VALU_FMA_F64", 128.0),
];

/// Vector FP16 instructions.
const FP16: [Term; 4] = [
    ("SQ_INSTS_VALU_ADD_F16", 64.0),
    ("SQ_INSTS_VALU_MUL_F16", 64.0),
    ("SQ_INSTS_VALU_TRANS_F16", 64.0),
    ("SQ_INSTS_VALU_FMA_F16", 128.0),
];

/// Matrix instructions, counted in units of 512 operations.
const MFMA: [Term; 4] = [
    ("SQ_INSTS_VALU_MFMA_MOPS_F16", 512.0),
    ("SQ_INSTS_VALU_MFMA_MOPS_BF16", 512.0),
    ("SQ_INSTS_VALU_MFMA_MOPS_F32", 512.0),
    ("SQ_INSTS_VALU_MFMA_MOPS_F64", 512.0),
];

/// Bytes between the L2 cache and memory, from the catalog's kilobyte counters.
const HBM: [Term; 2] = [("FETCH_SIZE", 1024.0), ("WRITE_SIZE", 1024.0)];

/// The sum of `terms` over the counters `kernel` has, the names of those it lacks, and whether
/// an input was estimated; `None` when it has none of them.
fn sum(kernel: &Kernel, terms: &[Term]) -> Option<(f64, Vec<&'static str>, bool)> {
    let mut total = 0.0;
    let mut missing = Vec::new();
    let mut estimated = false;
    for &(name, weight) in terms {
        match kernel.counter(name) {
            Some(c) => {
                total += c.value * weight;
                estimated |= c.estimate.is_some();
            }
            None => missing.push(name),
        }
    }
    (missing.len() < terms.len()).then_some((total, missing, estimated))
}

/// One speed-of-light row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What is measured.
    pub name: String,
    /// The achieved rate (per second) or percentage.
    pub value: f64,
    /// `FLOP/s`, `B/s` or `%`.
    pub unit: &'static str,
    /// The peak it is compared with (100 for a percentage), `None` when unknown.
    pub peak: Option<f64>,
    /// Inputs the profile lacks (the value is then a lower bound).
    pub missing: Vec<&'static str>,
    /// Whether an input was estimated.
    pub estimated: bool,
}

impl Row {
    /// The value as a percentage of the peak.
    pub fn percent_of_peak(&self) -> Option<f64> {
        self.peak
            .filter(|&p| p > 0.0)
            .map(|p| 100.0 * self.value / p)
    }
}

/// The kernel's speed-of-light rows: FP32, FP64 and MFMA throughput and memory bandwidth
/// against the GPU's peaks (where the profile has an input of them), then every counter whose
/// unit is a percentage.
pub fn speed_of_light(kernel: &Kernel, peaks: &Peaks) -> Vec<Row> {
    let seconds = kernel.total_ns as f64 / 1e9;
    let rates: [(&str, &[Term], &Option<Peak>, &'static str); 4] = [
        ("FP32 vector", &FP32, &peaks.fp32, "FLOP/s"),
        ("FP64 vector", &FP64, &peaks.fp64, "FLOP/s"),
        ("MFMA", &MFMA, &peaks.mfma, "FLOP/s"),
        ("HBM bandwidth", &HBM, &peaks.hbm, "B/s"),
    ];
    let mut rows = Vec::new();
    for (name, terms, peak, unit) in rates {
        if let Some((total, missing, estimated)) = sum(kernel, terms) {
            rows.push(Row {
                name: name.into(),
                value: match seconds > 0.0 {
                    true => total / seconds,
                    false => 0.0,
                },
                unit,
                peak: peak.as_ref().map(|p| p.per_second),
                missing,
                estimated,
            });
        }
    }
    for c in kernel.counters.iter().filter(|c| c.unit == "percent") {
        rows.push(Row {
            name: c.name.clone(),
            value: c.value,
            unit: "%",
            peak: Some(100.0),
            missing: Vec::new(),
            estimated: c.estimate.is_some(),
        });
    }
    rows
}

/// A kernel's place on the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Floating-point operations per byte of memory traffic.
    pub intensity: f64,
    /// Floating-point operations per second.
    pub flops: f64,
    /// Floating-point operations counted.
    pub operations: f64,
    /// Bytes of memory traffic.
    pub bytes: f64,
    /// The instruction families counted.
    pub counted: Vec<&'static str>,
    /// Counters of those families the profile lacks (the point is then a lower bound).
    pub missing: Vec<&'static str>,
    /// Whether an input was estimated.
    pub estimated: bool,
}

/// The kernel's roofline point, or why it has none. Its operations are those of the
/// instruction families (FP16, FP32, FP64 vector, MFMA) the profile has a counter of.
pub fn roofline_point(kernel: &Kernel) -> Result<Point, String> {
    let families: [(&'static str, &[Term]); 4] = [
        ("FP16 vector", &FP16),
        ("FP32 vector", &FP32),
        ("FP64 vector", &FP64),
        ("MFMA", &MFMA),
    ];
    let mut operations = 0.0;
    let mut missing = Vec::new();
    let mut counted = Vec::new();
    let mut estimated = false;
    for (name, terms) in families {
        if let Some((total, lacking, from_estimates)) = sum(kernel, terms) {
            operations += total;
            missing.extend(lacking);
            counted.push(name);
            estimated |= from_estimates;
        }
    }
    if counted.is_empty() {
        return Err("no floating-point instruction counter (SQ_INSTS_VALU_FMA_F32, ...)".into());
    }
    let (bytes, _, bytes_estimated) = sum(kernel, &HBM)
        .filter(|(_, lacking, _)| lacking.is_empty())
        .ok_or_else(|| "needs FETCH_SIZE and WRITE_SIZE".to_string())?;
    if operations <= 0.0 {
        return Err("no floating-point operations counted".into());
    }
    if bytes <= 0.0 {
        return Err("no memory traffic counted".into());
    }
    if kernel.total_ns == 0 {
        return Err("no kernel time".into());
    }
    Ok(Point {
        intensity: operations / bytes,
        flops: operations / (kernel.total_ns as f64 / 1e9),
        operations,
        bytes,
        counted,
        missing,
        estimated: estimated || bytes_estimated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{CounterValue, Uncertainty};

    fn kernel(counters: &[(&str, f64, &str)]) -> Kernel {
        Kernel {
            name: "k".into(),
            calls: 2,
            total_ns: 2_000,
            average_ns: 1_000.0,
            percent: 100.0,
            panels: Vec::new(),
            counters: counters
                .iter()
                .map(|&(name, value, unit)| CounterValue {
                    name: name.into(),
                    value,
                    unit: unit.into(),
                    estimate: None,
                })
                .collect(),
        }
    }

    #[test]
    fn rates_are_counted_work_over_kernel_time_against_the_peaks() {
        let k = kernel(&[
            ("SQ_INSTS_VALU_FMA_F32", 10.0, ""),
            ("SQ_INSTS_VALU_ADD_F32", 5.0, ""),
            ("FETCH_SIZE", 2.0, "KB"),
            ("WRITE_SIZE", 1.0, "KB"),
            ("VALUBusy", 37.5, "percent"),
        ]);
        let peaks = Peaks {
            fp32: Some(Peak {
                per_second: 1e12,
                source: String::new(),
            }),
            ..Peaks::default()
        };
        let rows = speed_of_light(&k, &peaks);
        // 10·128 + 5·64 = 1600 FLOP in 2 us; 3 KB in 2 us.
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].name, "FP32 vector");
        assert_eq!(rows[0].value, 1600.0 / 2e-6);
        assert_eq!(rows[0].percent_of_peak(), Some(100.0 * 8e8 / 1e12));
        assert_eq!(
            rows[0].missing,
            ["SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_TRANS_F32"]
        );
        assert_eq!(
            (rows[1].name.as_str(), rows[1].value, rows[1].peak),
            ("HBM bandwidth", 3072.0 / 2e-6, None)
        );
        assert_eq!(
            (rows[2].name.as_str(), rows[2].percent_of_peak()),
            ("VALUBusy", Some(37.5))
        );
        let p = roofline_point(&k).unwrap();
        assert_eq!(
            (p.operations, p.bytes, p.intensity, p.flops),
            (1600.0, 3072.0, 1600.0 / 3072.0, 8e8)
        );
        assert_eq!(p.counted, ["FP32 vector"]);
        assert_eq!(
            p.missing,
            ["SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_TRANS_F32"]
        );
        assert!(!p.estimated);
    }

    #[test]
    fn a_kernel_without_the_inputs_has_no_point_and_estimates_are_marked() {
        let k = kernel(&[("SQ_WAVES", 64.0, "")]);
        assert_eq!(
            roofline_point(&k),
            Err("no floating-point instruction counter (SQ_INSTS_VALU_FMA_F32, ...)".into())
        );
        assert!(speed_of_light(&k, &Peaks::default()).is_empty());
        let mut k = kernel(&[("SQ_INSTS_VALU_FMA_F64", 4.0, ""), ("FETCH_SIZE", 1.0, "")]);
        assert_eq!(
            roofline_point(&k),
            Err("needs FETCH_SIZE and WRITE_SIZE".into())
        );
        k.counters[0].estimate = Some(Uncertainty {
            half_interval: Some(1.0),
            sampled: 1,
            dispatches: 2,
            reliable: false,
        });
        let rows = speed_of_light(&k, &Peaks::default());
        assert!(rows[0].estimated && !rows[1].estimated);
    }
}
