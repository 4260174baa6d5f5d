//! The value model: what every counter event of every block reads for one kernel dispatch, at
//! every sample position.
//!
//! Counters follow from the dispatch geometry, its duration and the kernel's shape
//! ([`super::kernels`]), so that they keep the relations the hardware guarantees: SQ_WAVES is the
//! waves launched and SPI_CSN_WAVE agrees; instruction kinds sum to no more than SQ_INSTS; hits,
//! misses and duplicate misses of each cache sum to its requests; vL1D tag lookups are at least
//! the requests it sends to L2; L2 requests split into reads, writes and atomics and into memory
//! types; busy and stall cycles never exceed the cycles of the dispatch (stalls never exceed the
//! busy cycles they are part of); SQ level accumulations are counts times latencies no longer
//! than the dispatch. Events without a model of their own are a stable hash of kernel, geometry
//! and counter, scaled by the work done (cycle counters: a share of the cycles). All values are
//! integers so that the sum over a counting window is exact.

use super::arch::{Block, Geometry, Layout};
use super::kernels::{profile, Profile};
use super::variation::apply;

/// What the value model knows about one kernel dispatch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Dispatch {
    /// Architecture whose counter names apply.
    pub arch: String,
    /// Kernel symbol name without `.kd`.
    pub kernel: String,
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size in work-items.
    pub workgroup: [u16; 3],
    /// LDS bytes per workgroup.
    pub group_segment_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// Wavefront size.
    pub wave_size: u32,
    /// Duration in engine clock cycles.
    pub cycles: u64,
    /// Work factor in thousandths (1000: the exact model; see `variation`).
    pub scale: u32,
}

/// How a counter behaves over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Counts events of the kernels running while the counter counts, in proportion to overlap.
    Kernel,
    /// Counts cycles in which at least one kernel with work at the position runs.
    Busy,
    /// Counts every clock cycle of the counting window.
    Window,
}

/// The time behaviour of counter `name` (`None` for events without a counter name).
pub fn class_of(name: Option<&str>) -> Class {
    match name {
        Some("GRBM_COUNT" | "SQ_CYCLES") => Class::Window,
        Some(n) if n.ends_with("_CYCLE") => Class::Window,
        Some("GRBM_GUI_ACTIVE") => Class::Busy,
        _ => Class::Kernel,
    }
}

/// FNV-1a over the parts, with a final avalanche step.
pub fn hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// Splits `total` over positions in proportion to `weights`; the parts sum to `total` exactly
/// (all zero when every weight is zero).
pub fn split(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let mut cum = 0u128;
    let mut prev = 0u64;
    weights
        .iter()
        .map(|&w| {
            cum += u128::from(w);
            let upto = (u128::from(total) * cum / sum) as u64;
            let v = upto - prev;
            prev = upto;
            v
        })
        .collect()
}

/// Number of `i` in `0..n` with `i % period == q`.
fn share(n: u64, q: u64, period: u64) -> u64 {
    n / period + u64::from(q < n % period)
}

/// Derived dispatch quantities.
struct Facts {
    workgroups: u64,
    waves_per_wg: u64,
    waves: u64,
    cycles: u64,
    prof: Profile,
    rd_req: u64,
    wr_req: u64,
    at_req: u64,
    resident: u64,
}

fn facts(d: &Dispatch, geometry: &Geometry) -> Facts {
    let wg = d.workgroup.map(|w| u64::from(w.max(1)));
    let grid = d.grid.map(u64::from);
    let workgroups: u64 = (0..3).map(|i| grid[i].div_ceil(wg[i])).product();
    let waves_per_wg = (wg[0] * wg[1] * wg[2]).div_ceil(u64::from(d.wave_size.max(1)));
    let items: u64 = grid.iter().product();
    let prof = profile(&d.kernel, d.group_segment_size, d.private_segment_size);
    let waves = workgroups * waves_per_wg;
    Facts {
        workgroups,
        waves_per_wg,
        waves,
        cycles: d.cycles,
        prof,
        rd_req: apply((items * prof.rd_bytes).div_ceil(64), d.scale),
        wr_req: apply((items * prof.wr_bytes).div_ceil(64), d.scale),
        at_req: apply((items * prof.atomics * 4).div_ceil(64), d.scale),
        resident: waves.min(u64::from(geometry.cu.max(1)) * 32),
    }
}

/// Workgroups handled at each position of the block: workgroups go round-robin over XCCs, then
/// shader engines, then the instances/arrays/WGPs inside a shader engine. Blocks that are not
/// per shader engine see the whole XCC's work at every instance.
fn work(layout: &Layout, block: &Block, workgroups: u64) -> Vec<u64> {
    let x = u64::from(layout.xcc);
    let s = u64::from(layout.se);
    let units = u64::from(layout.instances * layout.sa * layout.wgp);
    (0..layout.positions())
        .map(|p| {
            let [xcc, inst, se, sa, wgp] = layout.coordinates(p).map(u64::from);
            if layout.aid {
                workgroups
            } else if block.per_se {
                let sub = (inst * u64::from(layout.sa) + sa) * u64::from(layout.wgp) + wgp;
                share(workgroups, xcc + x * (se + s * sub), x * s * units)
            } else {
                share(workgroups, xcc, x)
            }
        })
        .collect()
}

/// Values of event `event` (with SQ accumulation mode `accum`) of `block` for dispatch `d` on an
/// agent of `geometry`, at every position of the block's layout (v2 sample-id order).
pub fn event_values(
    d: &Dispatch,
    geometry: &Geometry,
    block: &Block,
    name: Option<&str>,
    event: u32,
    accum: u32,
) -> Vec<u64> {
    let layout = block.layout(geometry);
    let n = layout.positions();
    if block.is_internal_event(event) {
        return vec![0; n];
    }
    let f = facts(d, geometry);
    let w = work(&layout, block, f.workgroups);
    let key = match name {
        Some(n) => n.to_string(),
        None => format!("{}#{event}", block.name),
    };
    let m = Model {
        d,
        f: &f,
        w: &w,
        cus: (u64::from(geometry.cu) / n as u64).max(1),
    };
    if accum != 0 {
        return match m.accumulated(&key) {
            Some(total) => split(if accum == 2 { total } else { total / 4 }, &w),
            None => hashed(d, geometry, &format!("{key}@accum{accum}"), &f, &w),
        };
    }
    m.value(&key)
        .unwrap_or_else(|| hashed(d, geometry, &key, &f, &w))
}

/// One dispatch's values at the positions of one block.
struct Model<'a> {
    d: &'a Dispatch,
    f: &'a Facts,
    /// Workgroups at each position.
    w: &'a [u64],
    /// Compute units behind each position of a per-shader-engine block.
    cus: u64,
}

type Values = Vec<u64>;

/// Elementwise `v * num / den`.
fn part(v: &[u64], num: u64, den: u64) -> Values {
    v.iter().map(|&x| x * num / den.max(1)).collect()
}

/// Elementwise sum.
fn add(a: &[u64], b: &[u64]) -> Values {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// Elementwise difference (`a >= b` by construction).
fn sub(a: &[u64], b: &[u64]) -> Values {
    a.iter().zip(b).map(|(x, y)| x.saturating_sub(*y)).collect()
}

/// Whether a counter counts cycles (busy, stalled, idle, ...) rather than events.
fn counts_cycles(name: &str) -> bool {
    ["CYCLE", "BUSY", "STALL", "IDLE", "STARVE", "FULL"]
        .iter()
        .any(|w| name.contains(w))
}

/// Memory types of requests to L2, in the order the hardware names them.
const MTYPES: [&str; 4] = ["NC", "UC", "CC", "RW"];

/// Matrix-core data types and the 512-operation units one instruction of each does.
const MFMA_TYPES: [(&str, u64); 8] = [
    ("F16", 16),
    ("BF16", 16),
    ("F32", 8),
    ("F64", 2),
    ("I8", 32),
    ("F8", 32),
    ("F6F4", 64),
    ("XF32", 8),
];

/// Vector ALU instruction kinds (other than MFMA) and the percent of a known kernel's VALU
/// instructions each takes.
const VALU_KINDS: [(&str, u64); 15] = [
    ("ADD_F16", 0),
    ("MUL_F16", 0),
    ("FMA_F16", 0),
    ("TRANS_F16", 0),
    ("ADD_F32", 10),
    ("MUL_F32", 10),
    ("FMA_F32", 30),
    ("TRANS_F32", 2),
    ("ADD_F64", 0),
    ("MUL_F64", 0),
    ("FMA_F64", 0),
    ("TRANS_F64", 0),
    ("INT32", 30),
    ("INT64", 0),
    ("CVT", 5),
];

impl Model<'_> {
    /// Zero where the position has no work, `v` elsewhere.
    fn replicate(&self, v: u64) -> Values {
        self.w.iter().map(|&x| if x > 0 { v } else { 0 }).collect()
    }

    /// A dispatch total spread over the positions in proportion to their work.
    fn spread(&self, total: u64) -> Values {
        split(total, self.w)
    }

    /// `k` events per wave, over the positions.
    fn per_wave(&self, k: u64) -> Values {
        self.spread(self.total(k))
    }

    /// `k` events per wave over the dispatch.
    fn total(&self, k: u64) -> u64 {
        apply(self.f.waves * k, self.d.scale)
    }

    /// A stable fraction in percent, from `lo` to `lo + span - 1`, for counter `name`.
    fn pct(&self, name: &str, lo: u64, span: u64) -> u64 {
        lo + hash(&[name.as_bytes(), self.d.kernel.as_bytes()]) % span
    }

    /// Cycles in which a unit at each position with work is busy: 40-99 % of the dispatch.
    fn busy(&self, name: &str) -> Values {
        // Per mille: 400-999.
        self.replicate(self.f.cycles * self.pct(name, 400, 600) / 1000)
    }

    /// A cycle counter bounded by `of` (a busy count): 1-30 % of it.
    fn within(&self, name: &str, of: &[u64]) -> Values {
        part(of, self.pct(name, 1_000_000, 29_000_000), 100_000_000)
    }

    /// Rare instructions or events of a kernel without a known shape (GDS, messages, LDS
    /// violations): 1-99 % of `per_wave` per wave; none for the demo's kernels.
    fn rare(&self, name: &str, per_wave: u64) -> Values {
        if self.f.prof.misc == 0 {
            return vec![0; self.w.len()];
        }
        self.spread(self.total(per_wave) * self.pct(name, 1, 99) / 100)
    }

    /// The value of a counter (`None`: no model, a hashed value stands in).
    fn value(&self, key: &str) -> Option<Values> {
        let f = self.f;
        let value = match key {
            "GRBM_GUI_ACTIVE" | "GRBM_COUNT" | "SQ_CYCLES" => self.replicate(f.cycles),
            k if k.ends_with("_CYCLE") => self.replicate(f.cycles),
            k if k.starts_with("SQ_") => return self.sq(k),
            k if k.starts_with("SQC_") => return self.sqc(k),
            k if k.starts_with("TA_") || k.starts_with("TD_") => return self.texture(k),
            k if k.starts_with("TCP_") => return self.tcp(k),
            k if k.starts_with("TCC_") || k.starts_with("GL2C_") => return self.l2(k),
            k if k.starts_with("CPC_") || k.starts_with("CPF_") => return Some(self.cp(k)),
            "SPI_CSN_WAVE" => self.spread(f.waves),
            "SPI_CSN_NUM_THREADGROUPS" => self.spread(f.workgroups),
            k if k.starts_with("SPI_RA_") => self.within(k, &self.busy("SPI_CSN_BUSY")),
            // Stalls of the SPI's four pipes: each within a quarter of the SPI's busy cycles.
            k if k.starts_with("SPI_") && counts_cycles(k) && !k.ends_with("_BUSY") => {
                part(&self.within(k, &self.busy("GRBM_SPI_BUSY")), 1, 4)
            }
            k if k.ends_with("_BUSY") => self.busy(k),
            k if counts_cycles(k) => self.within(k, &self.replicate(f.cycles)),
            _ => return None,
        };
        Some(value)
    }

    /// Accumulations of SQ level counters over the dispatch: the level summed every cycle.
    fn accumulated(&self, key: &str) -> Option<u64> {
        let (f, p) = (self.f, self.f.prof);
        // Latencies never exceed the dispatch.
        let lat = |c: u64| c.min(f.cycles.max(1));
        Some(match key {
            "SQ_LEVEL_WAVES" => f.resident * f.cycles,
            "SQ_INST_LEVEL_VMEM" => self.total(p.vmem()) * lat(200 + 8 * p.wait_pct),
            "SQ_INST_LEVEL_LDS" => self.total(p.lds) * lat(32 + p.lds_conflict_pct),
            "SQ_INST_LEVEL_SMEM" => self.total(p.smem) * lat(120),
            "SQ_IFETCH_LEVEL" => self.total(p.insts() / 4 + 1) * lat(40),
            _ => return None,
        })
    }

    fn sq(&self, key: &str) -> Option<Values> {
        let (f, p) = (self.f, self.f.prof);
        let hashed_kernel = p.misc > 0;
        Some(match key {
            "SQ_WAVES" => self.spread(f.waves),
            "SQ_INSTS" => self.per_wave(p.insts()),
            "SQ_INSTS_VALU" => self.per_wave(p.valu),
            "SQ_INSTS_SALU" => self.per_wave(p.salu),
            "SQ_INSTS_SMEM" => self.per_wave(p.smem),
            "SQ_INSTS_LDS" => self.per_wave(p.lds),
            "SQ_INSTS_BRANCH" => self.per_wave(p.branch),
            "SQ_INSTS_GDS" => self.rare(key, p.misc / 2),
            "SQ_INSTS_SENDMSG" => self.rare(key, p.misc - p.misc / 2),
            "SQ_INSTS_VSKIPPED" => self.rare(key, p.valu / 10),
            "SQ_INSTS_VMEM_RD" => self.per_wave(p.rd_bytes / 4),
            "SQ_INSTS_VMEM_WR" => self.per_wave(p.wr_bytes / 4),
            "SQ_INSTS_VMEM" => self.per_wave(p.vmem()),
            // Flat instructions that turned out to address LDS only: a part of the flat (and so
            // of the vector memory) instructions, none for the demo's kernels.
            "SQ_INSTS_FLAT_LDS_ONLY" => {
                let flat = self.sq("SQ_INSTS_FLAT")?;
                if hashed_kernel {
                    part(&flat, self.pct(key, 1, 20), 100)
                } else {
                    vec![0; flat.len()]
                }
            }
            "SQ_INSTS_FLAT" => {
                let [rd, wr, at] = self.vmem_totals();
                self.spread(rd + wr + at - (rd + wr + at) * p.buffer_pct / 100)
            }
            "SQ_INSTS_MFMA" | "SQ_INSTS_VALU_MFMA" => self.per_wave(p.mfma),
            k if k.starts_with("SQ_INSTS_VALU_MFMA_MOPS_") => {
                let ty = &k["SQ_INSTS_VALU_MFMA_MOPS_".len()..];
                let units = MFMA_TYPES.iter().find(|(t, _)| *t == ty)?.1;
                part(&self.mfma_of(ty, hashed_kernel)?, units, 1)
            }
            k if k.starts_with("SQ_INSTS_VALU_MFMA_") => {
                self.mfma_of(&k["SQ_INSTS_VALU_MFMA_".len()..], hashed_kernel)?
            }
            k if k.starts_with("SQ_INSTS_VALU_FLOPS_FP") || k == "SQ_INSTS_VALU_IOPS" => {
                // Operations of 64 lanes: an FMA is two, the others one.
                let kind = |name: &str| self.sq(&format!("SQ_INSTS_VALU_{name}"));
                let ops: Vec<(String, u64)> = match k.strip_prefix("SQ_INSTS_VALU_FLOPS_FP") {
                    Some(rest) => {
                        let bits = rest.trim_end_matches("_TRANS");
                        if rest.ends_with("_TRANS") {
                            vec![(format!("TRANS_F{bits}"), 1)]
                        } else {
                            vec![
                                (format!("ADD_F{bits}"), 1),
                                (format!("MUL_F{bits}"), 1),
                                (format!("FMA_F{bits}"), 2),
                            ]
                        }
                    }
                    None => vec![("INT32".into(), 1), ("INT64".into(), 1)],
                };
                let mut sum = vec![0; self.w.len()];
                for (name, times) in ops {
                    sum = add(&sum, &part(&kind(&name)?, times * 64, 1));
                }
                sum
            }
            k if k.starts_with("SQ_INSTS_VALU_") => {
                let kind = &k["SQ_INSTS_VALU_".len()..];
                let known = VALU_KINDS.iter().find(|(t, _)| *t == kind)?.1;
                let share = if hashed_kernel {
                    self.pct(k, 100, 500)
                } else {
                    known * 100
                };
                self.spread(self.total(p.valu - p.mfma) * share / 10_000)
            }
            "SQ_WAVE_CYCLES" => self.spread(f.resident * f.cycles / 4),
            "SQ_BUSY_CYCLES" => self.replicate(f.cycles * 97 / 100),
            "SQ_BUSY_CU_CYCLES" => self
                .w
                .iter()
                .map(|&x| f.cycles * 97 / 100 * x.min(self.cus))
                .collect(),
            "SQ_VALU_MFMA_BUSY_CYCLES" => {
                let mfma = self.per_wave(p.mfma);
                self.w
                    .iter()
                    .zip(&mfma)
                    .map(|(&x, &m)| (m * 32).min(f.cycles * x.min(self.cus) * 4 * 9 / 10))
                    .collect()
            }
            "SQ_THREAD_CYCLES_VALU" => {
                part(&self.active("VALU")?, u64::from(self.d.wave_size) * 9, 10)
            }
            k if k.starts_with("SQ_ACTIVE_INST_") => self.active(&k["SQ_ACTIVE_INST_".len()..])?,
            "SQ_WAIT_ANY" => self.waiting(),
            "SQ_WAIT_INST_ANY" => part(&self.waiting(), 1, 3),
            "SQ_WAIT_INST_LDS" => part(&self.waiting(), p.lds_conflict_pct, 300),
            "SQ_IFETCH" => self.per_wave(p.insts() / 4 + 1),
            "SQ_LDS_IDX_ACTIVE" => self.per_wave(p.lds * 4),
            // Conflict cycles are part of the LDS's active cycles at every position.
            "SQ_LDS_BANK_CONFLICT" => part(&self.per_wave(p.lds * 4), p.lds_conflict_pct, 100),
            "SQ_LDS_ADDR_CONFLICT" => part(&self.per_wave(p.lds * 4), p.lds_conflict_pct, 300),
            "SQ_LDS_UNALIGNED_STALL" => part(&self.per_wave(p.lds * 4), p.lds_conflict_pct, 500),
            "SQ_LDS_MEM_VIOLATIONS" | "SQ_LDS_ATOMIC_RETURN" => self.rare(key, 1),
            k if k.ends_with("_BUSY") => self.busy(k),
            k if counts_cycles(k) => self.within(k, &self.replicate(f.cycles)),
            _ => return None,
        })
    }

    /// Matrix-core instructions of data type `ty`: a known kernel's are all F32; others spread
    /// theirs over every type.
    fn mfma_of(&self, ty: &str, hashed_kernel: bool) -> Option<Values> {
        MFMA_TYPES.iter().find(|(t, _)| *t == ty)?;
        let total = self.total(self.f.prof.mfma);
        Some(self.spread(if hashed_kernel {
            total * self.pct(ty, 10, 110) / 1000
        } else if ty == "F32" {
            total
        } else {
            0
        }))
    }

    /// Wave cycles (SQ_WAVE_CYCLES units) spent issuing each instruction kind, at most 80 % of
    /// the wave cycles and 60 % of the CU cycles at each position; `ANY` is the sum of the
    /// kinds.
    fn active(&self, kind: &str) -> Option<Values> {
        let p = self.f.prof;
        let kinds: [(&str, u64); 5] = [
            ("VALU", p.valu * 4 + p.mfma * 12),
            ("SCA", p.salu + p.smem),
            ("LDS", p.lds * 2),
            ("VMEM", p.vmem() * 4),
            ("MISC", p.branch + p.misc),
        ];
        let wave_cycles = self.spread(self.f.resident * self.f.cycles / 4);
        let raw: Vec<Values> = kinds.iter().map(|(_, k)| self.per_wave(*k)).collect();
        // Issue cycles are CU cycles too: at most 60 % of the cycles of the CUs with work.
        let cu_cycles: Values = self
            .w
            .iter()
            .map(|&x| self.f.cycles * x.min(self.cus))
            .collect();
        let scaled = |v: &Values| -> Values {
            (0..v.len())
                .map(|i| {
                    let any: u64 = raw.iter().map(|r| r[i]).sum();
                    let room = (wave_cycles[i] * 8 / 10).min(cu_cycles[i] * 6 / 10);
                    if any > room {
                        (u128::from(v[i]) * u128::from(room) / u128::from(any)) as u64
                    } else {
                        v[i]
                    }
                })
                .collect()
        };
        Some(match kind {
            "ANY" => raw
                .iter()
                .map(scaled)
                .fold(vec![0; self.w.len()], |a, b| add(&a, &b)),
            "FLAT" => part(&scaled(&raw[3]), 5, 8),
            // VALU cycles issued together with another VALU instruction (dual issue).
            "VALU2" => part(
                &scaled(&raw[0]),
                self.pct("SQ_ACTIVE_INST_VALU2", 10, 30),
                100,
            ),
            k => scaled(&raw[kinds.iter().position(|(n, _)| *n == k)?]),
        })
    }

    /// Wave cycles spent waiting: the memory-bound share of the cycles not issuing.
    fn waiting(&self) -> Values {
        let wave_cycles = self.spread(self.f.resident * self.f.cycles / 4);
        let active = self.active("ANY").unwrap_or_default();
        part(&sub(&wave_cycles, &active), self.f.prof.wait_pct, 100)
    }

    fn sqc(&self, key: &str) -> Option<Values> {
        let p = self.f.prof;
        let icache = self.spread(self.total(p.insts()) * 17 / 100 + self.total(3));
        // Scalar loads of more than 16 dwords take several requests.
        let dcache = self.spread(self.total(p.smem) * 137 / 100);
        let parts = |req: &Values, hit_pct: u64| {
            let hits = part(req, hit_pct, 100);
            let dup = part(&sub(req, &hits), 2, 7);
            let misses = sub(&sub(req, &hits), &dup);
            (hits, misses, dup)
        };
        let (ihit, imiss, idup) = parts(&icache, 90);
        let (dhit, dmiss, ddup) = parts(&dcache, 80);
        let reads = [("1", 40), ("2", 30), ("4", 15), ("8", 10), ("16", 5)];
        Some(match key {
            "SQC_ICACHE_REQ" => icache,
            "SQC_ICACHE_HITS" => ihit,
            "SQC_ICACHE_MISSES" => imiss,
            "SQC_ICACHE_MISSES_DUPLICATE" => idup,
            "SQC_DCACHE_REQ" => dcache,
            "SQC_DCACHE_HITS" => dhit,
            "SQC_DCACHE_MISSES" => dmiss,
            "SQC_DCACHE_MISSES_DUPLICATE" => ddup,
            k if k.starts_with("SQC_DCACHE_REQ_READ_") => {
                let size = &k["SQC_DCACHE_REQ_READ_".len()..];
                part(&dcache, reads.iter().find(|(s, _)| *s == size)?.1, 100)
            }
            "SQC_DCACHE_ATOMIC" | "SQC_TC_DATA_ATOMIC_REQ" => self.rare("SQC_DCACHE_ATOMIC", 1),
            "SQC_TC_DATA_WRITE_REQ" => self.rare(key, 1),
            "SQC_TC_INST_REQ" => imiss,
            "SQC_TC_DATA_READ_REQ" => dmiss,
            "SQC_TC_REQ" => add(
                &add(&imiss, &dmiss),
                &add(
                    &self.rare("SQC_DCACHE_ATOMIC", 1),
                    &self.rare("SQC_TC_DATA_WRITE_REQ", 1),
                ),
            ),
            k if k.ends_with("_BUSY") => self.busy(k),
            k if counts_cycles(k) => self.within(k, &self.replicate(self.f.cycles)),
            _ => return None,
        })
    }

    /// Vector memory wave-instructions of the dispatch: (reads, writes, atomics).
    fn vmem_totals(&self) -> [u64; 3] {
        let p = self.f.prof;
        [
            self.total(p.rd_bytes / 4),
            self.total(p.wr_bytes / 4),
            self.total(p.atomics),
        ]
    }

    fn texture(&self, key: &str) -> Option<Values> {
        let (f, p) = (self.f, self.f.prof);
        let [rd, wr, at] = self.vmem_totals();
        let buffer = |t: u64| t * p.buffer_pct / 100;
        let flat = |t: u64| t - buffer(t);
        let ta_busy = {
            // Every vector memory instruction of its waves occupies the address (TA) or data
            // (TD) path for a few cycles.
            let vmem = p.vmem() * f.waves_per_wg;
            let scale = if key.starts_with("TA") { 16 } else { 12 };
            self.w
                .iter()
                .map(|&x| (x * vmem * scale).min(f.cycles))
                .collect::<Values>()
        };
        Some(match key {
            "TA_TA_BUSY" | "TD_TD_BUSY" => ta_busy,
            "TA_TOTAL_WAVEFRONTS" => self.spread(rd + wr + at),
            "TA_BUFFER_WAVEFRONTS" => self.spread(buffer(rd) + buffer(wr) + buffer(at)),
            "TA_BUFFER_READ_WAVEFRONTS" => self.spread(buffer(rd)),
            "TA_BUFFER_WRITE_WAVEFRONTS" => self.spread(buffer(wr)),
            "TA_BUFFER_ATOMIC_WAVEFRONTS" => self.spread(buffer(at)),
            "TA_FLAT_WAVEFRONTS" => self.spread(flat(rd) + flat(wr) + flat(at)),
            "TA_FLAT_READ_WAVEFRONTS" => self.spread(flat(rd)),
            "TA_FLAT_WRITE_WAVEFRONTS" => self.spread(flat(wr)),
            "TA_FLAT_ATOMIC_WAVEFRONTS" => self.spread(flat(at)),
            "TD_LOAD_WAVEFRONT" => self.spread(rd + wr + at),
            "TD_STORE_WAVEFRONT" => self.spread(wr),
            "TD_ATOMIC_WAVEFRONT" => self.spread(at),
            "TD_COALESCABLE_WAVEFRONT" => self.spread((rd + wr) * (p.l1_hit_pct + 10) / 101),
            k if k.starts_with("TA_BUFFER_") && counts_cycles(k) => {
                part(&self.within(k, &ta_busy), p.buffer_pct, 25)
            }
            k if counts_cycles(k) => self.within(k, &ta_busy),
            _ => return None,
        })
    }

    /// The memory type requests of a kernel go with: NC on gfx90a, RW on later chips; a kernel
    /// without a known shape mixes all four (40/10/10/40 %).
    fn mtype(&self, name: &str, requests: &[u64]) -> Option<Values> {
        let ty = MTYPES.iter().position(|t| {
            name.contains(&format!("_{t}_"))
                || name.ends_with(&format!("_{t}"))
                || name.starts_with(&format!("TCC_{t}_"))
        })?;
        Some(if self.f.prof.misc > 0 {
            let shares = [4, 1, 1, 4];
            let before: u64 = shares[..ty].iter().sum();
            sub(
                &part(requests, before + shares[ty], 10),
                &part(requests, before, 10),
            )
        } else if ty == if self.d.arch == "gfx90a" { 0 } else { 3 } {
            requests.to_vec()
        } else {
            vec![0; requests.len()]
        })
    }

    fn tcp(&self, key: &str) -> Option<Values> {
        let (f, p) = (self.f, self.f.prof);
        let [rd, wr, at] = self.vmem_totals();
        let (rd_req, wr_req, at_req) = (
            self.spread(f.rd_req),
            self.spread(f.wr_req),
            self.spread(f.at_req),
        );
        // Three in eight atomics return their result.
        let at_ret = part(&at_req, 3, 8);
        // Accesses that cross a page need a second translation.
        let utcl1 = self.spread((rd + wr + at) * 9 / 8);
        let utcl1_hit = part(&utcl1, 95, 100);
        let gate = self.busy("TCP_GATE_EN2");
        let lat = 100 + 4 * p.wait_pct;
        let state_read = self.spread(rd + at * 3 / 8);
        Some(match key {
            "TCP_TOTAL_READ" => self.spread(rd),
            "TCP_TOTAL_WRITE" => self.spread(wr),
            "TCP_TOTAL_ATOMIC_WITH_RET" => self.spread(at * 3 / 8),
            "TCP_TOTAL_ATOMIC_WITHOUT_RET" => self.spread(at - at * 3 / 8),
            // Accesses of four lanes: sixteen per wave instruction when fully coalesced.
            "TCP_TOTAL_ACCESSES" => {
                let uncoalesced = if p.misc > 0 { self.pct(key, 0, 60) } else { 0 };
                self.spread((rd + wr + at) * 16 * (100 + uncoalesced) / 100)
            }
            "TCP_TA_TCP_STATE_READ" => state_read,
            "TCP_TCP_LATENCY" => part(&state_read, lat, 1),
            "TCP_TCC_READ_REQ_LATENCY" => part(&rd_req, lat * 3 / 4, 1),
            "TCP_TCC_WRITE_REQ_LATENCY" => part(&wr_req, lat / 2, 1),
            "TCP_TOTAL_CACHE_ACCESSES" => {
                // Reads miss vL1D at (100 - hit) %; writes and atomics go through to L2.
                let reads = part(&rd_req, 100, 100 - p.l1_hit_pct);
                add(&add(&reads, &wr_req), &at_req)
            }
            "TCP_TCC_READ_REQ" => rd_req,
            "TCP_TCC_WRITE_REQ" => wr_req,
            "TCP_TCC_ATOMIC_WITH_RET_REQ" => at_ret,
            "TCP_TCC_ATOMIC_WITHOUT_RET_REQ" => sub(&at_req, &at_ret),
            k if k.starts_with("TCP_TCC_") && k.ends_with("_READ_REQ") => self.mtype(k, &rd_req)?,
            k if k.starts_with("TCP_TCC_") && k.ends_with("_WRITE_REQ") => {
                self.mtype(k, &wr_req)?
            }
            k if k.starts_with("TCP_TCC_") && k.ends_with("_ATOMIC_REQ") => {
                self.mtype(k, &at_req)?
            }
            "TCP_UTCL1_REQUEST" => utcl1,
            "TCP_UTCL1_TRANSLATION_HIT" => utcl1_hit,
            "TCP_UTCL1_TRANSLATION_MISS" => sub(&utcl1, &utcl1_hit),
            "TCP_UTCL1_PERMISSION_MISS" => part(&sub(&utcl1, &utcl1_hit), 1, 10),
            "TCP_GATE_EN1" => self.replicate(f.cycles),
            "TCP_GATE_EN2" => gate,
            k if counts_cycles(k) => self.within(k, &gate),
            _ => return None,
        })
    }

    /// L2 cache counters (`TCC_*` on gfx9, `GL2C_*` on gfx10 and newer), per channel.
    fn l2(&self, name: &str) -> Option<Values> {
        let f = self.f;
        let suffix = name
            .strip_prefix("TCC_")
            .or_else(|| name.strip_prefix("GL2C_"))?;
        let rd = self.spread(f.rd_req);
        let wr = self.spread(f.wr_req);
        let at = self.spread(f.at_req);
        let h = f.prof.hit_pct;
        let rd_miss = sub(&rd, &part(&rd, h, 100));
        let wr_miss = sub(&wr, &part(&wr, h, 200));
        // Atomics execute in L2: they hit.
        let miss = add(&rd_miss, &wr_miss);
        let req = add(&add(&rd, &wr), &at);
        let hit = sub(&req, &miss);
        let writeback = part(&wr_miss, 3, 4);
        let ea_atomic = part(&at, 1, 4);
        let busy: Values = req
            .iter()
            .zip(self.w)
            .map(|(&r, &x)| {
                if x > 0 {
                    (r * 2 + f.cycles / 10).min(f.cycles)
                } else {
                    0
                }
            })
            .collect();
        Some(match suffix {
            "HIT" => hit,
            "MISS" => miss,
            "REQ" | "REQUEST" => req,
            "READ" => rd,
            "WRITE" => wr,
            "ATOMIC" => at,
            "STREAMING_REQ" => part(&req, 1, 20),
            "PROBE" => part(&req, 1, 50),
            "NC_REQ" | "UC_REQ" | "CC_REQ" | "RW_REQ" => self.mtype(name, &req)?,
            "EA0_RDREQ" | "EA_RDREQ" | "MC_RDREQ" | "EA0_RDREQ_DRAM" | "EA_RDREQ_DRAM" => rd_miss,
            "EA0_RDREQ_32B" | "EA_RDREQ_32B" => part(&rd_miss, 1, 16),
            "EA0_RDREQ_128B" | "EA_RDREQ_128B" | "BUBBLE" => part(&rd_miss, 1, 8),
            "EA0_RDREQ_64B" | "EA_RDREQ_64B" => sub(
                &sub(&rd_miss, &part(&rd_miss, 1, 8)),
                &part(&rd_miss, 1, 16),
            ),
            "EA0_RD_UNCACHED_32B" | "EA_RD_UNCACHED_32B" => part(&rd_miss, 1, 32),
            "EA0_WRREQ" | "EA_WRREQ" | "MC_WRREQ" | "EA0_WRREQ_DRAM" | "EA_WRREQ_DRAM" => wr_miss,
            "EA0_WRREQ_64B" | "EA_WRREQ_64B" => sub(&wr_miss, &part(&wr_miss, 1, 8)),
            "EA0_WR_UNCACHED_32B" | "EA_WR_UNCACHED_32B" => part(&wr_miss, 1, 32),
            "EA0_ATOMIC" | "EA_ATOMIC" => ea_atomic,
            // Outstanding requests summed every cycle: requests times their latency.
            "EA0_RDREQ_LEVEL" | "EA_RDREQ_LEVEL" => part(&rd_miss, 500, 1),
            "EA0_WRREQ_LEVEL" | "EA_WRREQ_LEVEL" => part(&wr_miss, 400, 1),
            "EA0_ATOMIC_LEVEL" | "EA_ATOMIC_LEVEL" => part(&ea_atomic, 600, 1),
            "WRITEBACK" => writeback,
            "NORMAL_WRITEBACK" => sub(&writeback, &part(&writeback, 1, 4)),
            "ALL_TC_OP_WB_WRITEBACK" => part(&writeback, 1, 4),
            "NORMAL_EVICT" => part(&miss, 1, 2),
            "ALL_TC_OP_INV_EVICT" => part(&miss, 1, 8),
            "BUSY" => busy,
            s if counts_cycles(s) => self.within(name, &busy),
            _ => return None,
        })
    }

    /// Command processor counters: each unit busy for part of the dispatch and idle for the
    /// rest; its sub-units busy for most of its busy cycles, stalls within their busy cycles.
    fn cp(&self, key: &str) -> Values {
        let cycles = self.replicate(self.f.cycles);
        let unit = &key[..3];
        let stat_busy = self.busy(&format!("{unit}_STAT_BUSY"));
        if key == format!("{unit}_{unit}_STAT_BUSY") {
            return stat_busy;
        }
        if let Some(busy_name) = key.strip_suffix("_IDLE") {
            return sub(&cycles, &self.cp(&format!("{busy_name}_BUSY")));
        }
        if key.ends_with("_BUSY") {
            // A sub-unit: busy for 60-90 % of the unit's busy cycles.
            return part(&stat_busy, self.pct(key, 60, 31), 100);
        }
        // Stalls, full FIFOs and packets: within every sub-unit's busy cycles.
        part(&stat_busy, self.pct(key, 1, 50), 100)
    }
}

/// A counter without a physical model: a stable hash of kernel, geometry and counter, scaled by
/// the waves launched and spread unevenly over the positions that have work.
fn hashed(d: &Dispatch, geometry: &Geometry, name: &str, f: &Facts, w: &[u64]) -> Vec<u64> {
    let geo = [geometry.xcc, geometry.se, geometry.sa_per_se, geometry.cu];
    let geo_bytes: Vec<u8> = geo.iter().flat_map(|g| g.to_le_bytes()).collect();
    let grid: Vec<u8> = d.grid.iter().flat_map(|g| g.to_le_bytes()).collect();
    let h = hash(&[name.as_bytes(), d.kernel.as_bytes(), &grid, &geo_bytes]);
    let total = apply(f.waves * (1 + h % 29) + (h >> 20) % 1013 + 1, d.scale);
    let weights: Vec<u64> = w
        .iter()
        .enumerate()
        .map(|(i, &x)| x * (1 + hash(&[name.as_bytes(), &(i as u64).to_le_bytes()]) % 4))
        .collect();
    split(total, &weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_exact_and_proportional() {
        assert_eq!(split(10, &[1, 1, 2]), vec![2, 3, 5]);
        assert_eq!(split(7, &[0, 0]), vec![0, 0]);
        assert_eq!(split(7, &[3, 0, 3]).iter().sum::<u64>(), 7);
    }

    #[test]
    fn share_counts_round_robin() {
        assert_eq!(
            (0..4).map(|q| share(10, q, 4)).collect::<Vec<_>>(),
            vec![3, 3, 2, 2]
        );
    }
}
