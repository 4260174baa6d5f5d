//! A GPU's peak rates for the report's speed-of-light and roofline, each with where it comes
//! from: compute units and clock from the GPU's KFD topology, work per compute unit and clock
//! from its architecture, L2 channels from the counter catalog's TCC instances, memory bandwidth
//! from the product's specification.

use rtl_pmc_counters::Catalog;

use rtl_pmc_profile::model::Agent;

/// One peak rate and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// Operations or bytes per second.
    pub per_second: f64,
    /// Where the number comes from, for people.
    pub source: String,
}

/// What a GPU can do at most, `None` where the report cannot know.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Peaks {
    /// Vector FP32 FLOP/s.
    pub fp32: Option<Peak>,
    /// Vector FP64 FLOP/s.
    pub fp64: Option<Peak>,
    /// Matrix (MFMA) FP16 FLOP/s.
    pub mfma: Option<Peak>,
    /// Memory (HBM) bytes/s.
    pub hbm: Option<Peak>,
    /// L2 cache bytes/s.
    pub l2: Option<Peak>,
    /// LDS bytes/s.
    pub lds: Option<Peak>,
}

/// FLOP per compute unit and clock of one architecture family (AMD's published peak rates
/// divided by compute units and peak clock).
struct ArchRates {
    /// gfx targets of the family.
    targets: &'static [&'static str],
    fp32: f64,
    fp64: f64,
    mfma_f16: f64,
}

const ARCH_RATES: [ArchRates; 4] = [
    ArchRates {
        targets: &["gfx908"],
        fp32: 128.0,
        fp64: 64.0,
        mfma_f16: 1024.0,
    },
    ArchRates {
        targets: &["gfx90a"],
        fp32: 128.0,
        fp64: 128.0,
        mfma_f16: 1024.0,
    },
    ArchRates {
        targets: &["gfx940", "gfx941", "gfx942"],
        fp32: 256.0,
        fp64: 128.0,
        mfma_f16: 2048.0,
    },
    ArchRates {
        targets: &["gfx950"],
        fp32: 256.0,
        fp64: 128.0,
        mfma_f16: 4096.0,
    },
];

/// Bytes per clock an L2 channel delivers.
const L2_BYTES_PER_CHANNEL_CLOCK: f64 = 128.0;

/// Bytes per clock a compute unit's LDS delivers.
const LDS_BYTES_PER_CU_CLOCK: f64 = 128.0;

/// Peak memory bandwidth in bytes/s by product, from each product's specification.
const MEMORY_BANDWIDTH: [(&str, f64); 9] = [
    ("MI100", 1.2288e12),
    ("MI210", 1.6384e12),
    ("MI250X", 3.2768e12),
    ("MI250", 3.2768e12),
    ("MI300X", 5.3e12),
    ("MI300A", 5.3e12),
    ("MI325X", 6.0e12),
    ("MI350X", 8.0e12),
    ("MI355X", 8.0e12),
];

impl Peaks {
    /// The peaks of `gpu`, from its topology properties, architecture and product name.
    pub fn of(gpu: &Agent) -> Peaks {
        let simds = gpu.property("simd_count");
        let cus = match gpu.property("simd_per_cu") {
            0 => 0,
            per_cu => simds / per_cu,
        };
        let mhz = gpu.property("max_engine_clk_fcompute");
        let xccs = gpu.property("num_xcc").max(1);
        let clock = mhz as f64 * 1e6;
        let topology = format!("{cus} CUs at {mhz} MHz");
        let rates = ARCH_RATES.iter().find(|r| r.targets.contains(&&*gpu.name));
        let compute = |per_cu_clock: f64, what: &str| {
            (cus > 0 && mhz > 0).then(|| Peak {
                per_second: cus as f64 * per_cu_clock * clock,
                source: format!(
                    "{topology} × {per_cu_clock} {what} per CU and clock ({})",
                    gpu.name
                ),
            })
        };
        let channels = Catalog::builtin(&gpu.name)
            .ok()
            .and_then(|c| c.block("TCC").map(|b| u64::from(b.instances_per_xcc)))
            .unwrap_or(0)
            * xccs;
        let product = &gpu.product_name;
        let hbm = MEMORY_BANDWIDTH
            .iter()
            .find(|(name, _)| product.split_whitespace().any(|word| word == *name))
            .map(|&(_, bytes)| Peak {
                per_second: bytes,
                source: format!("specification of the {product}"),
            });
        Peaks {
            fp32: rates.and_then(|r| compute(r.fp32, "FLOP")),
            fp64: rates.and_then(|r| compute(r.fp64, "FLOP")),
            mfma: rates.and_then(|r| compute(r.mfma_f16, "FP16 FLOP")),
            hbm,
            l2: (channels > 0 && mhz > 0).then(|| Peak {
                per_second: channels as f64 * L2_BYTES_PER_CHANNEL_CLOCK * clock,
                source: format!(
                    "{channels} L2 channels × {L2_BYTES_PER_CHANNEL_CLOCK} B per clock at {mhz} MHz"
                ),
            }),
            lds: compute(LDS_BYTES_PER_CU_CLOCK, "B"),
        }
    }
}

impl Peaks {
    /// The peaks of a GPU described by rocprof-compute's constants (`cu_per_gpu`, `simd_per_cu`,
    /// `max_sclk`, `num_xcd`, and for memory `max_mclk` and `num_hbm_channels`, whose
    /// bandwidth is 32 bytes per channel and memory clock) as `rtl-pmc analyze` reads them.
    pub fn of_constants(arch: &str, product: &str, constants: &panels::Constants) -> Peaks {
        let get = |name: &str| constants.get(name).copied().unwrap_or(0.0);
        let simd_per_cu = get("simd_per_cu").max(1.0);
        let gpu = Agent {
            name: arch.into(),
            product_name: product.into(),
            properties: vec![
                (
                    "simd_count".into(),
                    (get("cu_per_gpu") * simd_per_cu) as u64,
                ),
                ("simd_per_cu".into(), simd_per_cu as u64),
                ("max_engine_clk_fcompute".into(), get("max_sclk") as u64),
                ("num_xcc".into(), get("num_xcd") as u64),
            ],
            ..Agent::default()
        };
        let mut peaks = Peaks::of(&gpu);
        let (mclk, channels) = (get("max_mclk"), get("num_hbm_channels"));
        if mclk > 0.0 && channels > 0.0 {
            peaks.hbm = Some(Peak {
                per_second: mclk * 1e6 * 32.0 * channels,
                source: format!("{channels} HBM channels × 32 B per clock at {mclk} MHz"),
            });
        }
        peaks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(name: &str, product: &str, simds: u64, mhz: u64, xccs: u64) -> Agent {
        Agent {
            name: name.into(),
            product_name: product.into(),
            properties: vec![
                ("simd_count".into(), simds),
                ("simd_per_cu".into(), 4),
                ("max_engine_clk_fcompute".into(), mhz),
                ("num_xcc".into(), xccs),
            ],
            ..Agent::default()
        }
    }

    #[test]
    fn mi300x_and_mi210_peaks_are_their_published_rates() {
        let p = Peaks::of(&gpu("gfx942", "AMD Instinct MI300X", 1216, 2100, 8));
        let rate = |p: &Option<Peak>| p.as_ref().map(|p| p.per_second);
        // 163.4 TFLOP/s FP32, 81.7 FP64, 1307.4 FP16 MFMA.
        assert_eq!(rate(&p.fp32), Some(304.0 * 256.0 * 2.1e9));
        assert_eq!(rate(&p.fp64), Some(304.0 * 128.0 * 2.1e9));
        assert_eq!(rate(&p.mfma), Some(304.0 * 2048.0 * 2.1e9));
        assert_eq!(rate(&p.hbm), Some(5.3e12));
        assert_eq!(rate(&p.l2), Some(128.0 * 128.0 * 2.1e9));
        assert_eq!(rate(&p.lds), Some(304.0 * 128.0 * 2.1e9));
        assert_eq!(
            p.fp32.unwrap().source,
            "304 CUs at 2100 MHz × 256 FLOP per CU and clock (gfx942)"
        );
        assert_eq!(
            p.l2.unwrap().source,
            "128 L2 channels × 128 B per clock at 2100 MHz"
        );
        let p = Peaks::of(&gpu("gfx90a", "AMD Instinct MI210", 416, 1700, 1));
        assert_eq!(rate(&p.fp64), Some(104.0 * 128.0 * 1.7e9));
        assert_eq!(rate(&p.l2), Some(32.0 * 128.0 * 1.7e9));
        assert_eq!(
            p.hbm.unwrap().source,
            "specification of the AMD Instinct MI210"
        );
    }

    #[test]
    fn constants_give_the_same_peaks_and_memory_from_its_clock_and_channels() {
        let constants: panels::Constants = [
            ("cu_per_gpu", 304.0),
            ("simd_per_cu", 4.0),
            ("max_sclk", 2100.0),
            ("num_xcd", 8.0),
            ("max_mclk", 1300.0),
            ("num_hbm_channels", 128.0),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
        let p = Peaks::of_constants("gfx942", "", &constants);
        let q = Peaks::of(&gpu("gfx942", "", 1216, 2100, 8));
        assert_eq!((&p.fp32, &p.l2, &p.lds), (&q.fp32, &q.l2, &q.lds));
        let hbm = p.hbm.unwrap();
        assert_eq!(hbm.per_second, 1300e6 * 32.0 * 128.0);
        assert_eq!(hbm.source, "128 HBM channels × 32 B per clock at 1300 MHz");
    }

    #[test]
    fn what_is_not_known_has_no_peak() {
        let p = Peaks::of(&gpu("gfx1100", "Radeon RX 7900 XTX", 192, 2500, 1));
        assert_eq!((p.fp32, p.fp64, p.mfma, p.hbm), (None, None, None, None));
        assert!(p.lds.is_some());
        let p = Peaks::of(&Agent::default());
        assert_eq!(p, Peaks::default());
    }
}
