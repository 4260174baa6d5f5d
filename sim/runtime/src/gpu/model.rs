//! The value model: what every counter event of every block reads for one kernel dispatch, at
//! every sample position.
//!
//! Common counters follow from the dispatch geometry and a per-kernel instruction/memory
//! profile, so that they agree with each other (SQ_WAVES is the number of waves launched, L2
//! hits plus misses are the L2 requests, ...). Every other event is a stable hash of kernel,
//! geometry and counter, scaled by the work done. All values are integers so that the sum over
//! a counting window is exact.

use super::arch::{Block, Geometry, Layout};
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

/// Instruction and memory behaviour of a kernel, per wave and per work-item.
#[derive(Debug, Clone, Copy)]
struct Profile {
    rd_bytes: u64,
    wr_bytes: u64,
    valu: u64,
    salu: u64,
    smem: u64,
    lds: u64,
    branch: u64,
    hit_pct: u64,
}

fn profile(kernel: &str, group_segment_size: u32, private_segment_size: u32) -> Profile {
    let p = |rd, wr, valu, salu, smem, lds, branch, hit_pct| Profile {
        rd_bytes: rd,
        wr_bytes: wr,
        valu,
        salu,
        smem,
        lds,
        branch,
        hit_pct,
    };
    let known = [
        ("lds_reverse", p(4, 4, 7, 12, 2, 2, 3, 10)),
        ("scratchy", p(256, 260, 400, 30, 2, 0, 130, 70)),
        ("increment", p(4, 4, 4, 8, 2, 0, 5, 10)),
        ("indirect_increment", p(4, 4, 4, 9, 3, 0, 5, 10)),
        ("saxpy", p(8, 4, 6, 10, 3, 0, 4, 25)),
        ("vadd", p(8, 4, 5, 9, 3, 0, 4, 25)),
        ("fill", p(0, 4, 3, 8, 2, 0, 4, 0)),
        ("empty", p(0, 0, 0, 1, 0, 0, 0, 0)),
    ];
    if let Some((_, prof)) = known
        .iter()
        .find(|(n, _)| *n == kernel)
        .or_else(|| known.iter().find(|(n, _)| kernel.contains(n)))
    {
        return *prof;
    }
    let h = hash(&[kernel.as_bytes()]);
    let field = |shift: u32, m: u64| (h >> shift) % m;
    Profile {
        rd_bytes: 4 * (2 + field(0, 4)),
        wr_bytes: 4 * field(4, 3) + u64::from(private_segment_size.min(1024)) / 8,
        // Disjoint ranges per instruction class, so that no two totals coincide by accident
        // (vector memory instructions per wave stay below 10).
        valu: 24 + field(8, 64),
        salu: 12 + field(16, 12),
        smem: 10 + field(24, 2),
        lds: if group_segment_size > 0 {
            90 + field(32, 40)
        } else {
            0
        },
        branch: 6 + field(40, 2),
        hit_pct: 5 + field(48, 90),
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
    let prof = f.prof;
    let replicate = |v: u64| -> Vec<u64> { w.iter().map(|&x| if x > 0 { v } else { 0 }).collect() };
    let pct = |salt: &str| {
        let h = hash(&[salt.as_bytes(), d.kernel.as_bytes()]);
        f.cycles * (400 + h % 600) / 1000
    };
    let per_wave = |k: u64| split(apply(f.waves * k, d.scale), &w);
    let key = match name {
        Some(n) => n.to_string(),
        None => format!("{}#{event}", block.name),
    };
    if accum != 0 {
        let hi = accum == 2;
        return match name {
            Some("SQ_LEVEL_WAVES") => {
                let wave_cycles = f.resident * f.cycles;
                split(if hi { wave_cycles } else { wave_cycles / 4 }, &w)
            }
            _ => hashed(d, geometry, &format!("{key}@accum{accum}"), &f, &w),
        };
    }
    match key.as_str() {
        "SQ_WAVES" => split(f.waves, &w),
        "SQ_INSTS_VALU" => per_wave(prof.valu),
        "SQ_INSTS_SALU" => per_wave(prof.salu),
        "SQ_INSTS_SMEM" => per_wave(prof.smem),
        "SQ_INSTS_LDS" => per_wave(prof.lds),
        "SQ_INSTS_BRANCH" => per_wave(prof.branch),
        "SQ_INSTS_VMEM_RD" => per_wave(prof.rd_bytes / 4),
        "SQ_INSTS_VMEM_WR" => per_wave(prof.wr_bytes / 4),
        "SQ_INSTS_VMEM" => per_wave((prof.rd_bytes + prof.wr_bytes) / 4),
        "SQ_INSTS" => per_wave(
            prof.valu
                + prof.salu
                + prof.smem
                + prof.lds
                + prof.branch
                + (prof.rd_bytes + prof.wr_bytes) / 4,
        ),
        "SQ_WAVE_CYCLES" => split(f.resident * f.cycles / 4, &w),
        "SQ_BUSY_CYCLES" => replicate(f.cycles * 97 / 100),
        "TCP_TCC_READ_REQ" => split(f.rd_req, &w),
        "TCP_TCC_WRITE_REQ" => split(f.wr_req, &w),
        "TA_TA_BUSY" | "TD_TD_BUSY" => {
            // Busy cycles per instance: every vector memory instruction of its waves occupies
            // the address (TA) or data (TD) path for a few cycles.
            let vmem = (prof.rd_bytes + prof.wr_bytes) / 4 * f.waves_per_wg;
            let scale = if key.starts_with("TA") { 16 } else { 12 };
            w.iter()
                .map(|&x| (x * vmem * scale).min(f.cycles))
                .collect()
        }
        k => {
            if class_of(Some(k)) != Class::Kernel {
                return replicate(f.cycles);
            }
            if let Some(values) = l2(k, &f, &w) {
                return values;
            }
            if k.ends_with("_BUSY") {
                return replicate(pct(k));
            }
            hashed(d, geometry, k, &f, &w)
        }
    }
}

/// L2 cache counters (`TCC_*` on gfx9, `GL2C_*` on gfx10 and newer), per channel.
fn l2(name: &str, f: &Facts, w: &[u64]) -> Option<Vec<u64>> {
    let suffix = name
        .strip_prefix("TCC_")
        .or_else(|| name.strip_prefix("GL2C_"))?;
    let rd = split(f.rd_req, w);
    let wr = split(f.wr_req, w);
    let hit = |i: usize| rd[i] * f.prof.hit_pct / 100 + wr[i] * f.prof.hit_pct / 200;
    let miss = |i: usize| rd[i] + wr[i] - hit(i);
    let rd_miss = |i: usize| rd[i] - rd[i] * f.prof.hit_pct / 100;
    let wr_miss = |i: usize| wr[i] - wr[i] * f.prof.hit_pct / 200;
    let per = |g: &dyn Fn(usize) -> u64| Some((0..w.len()).map(g).collect());
    match suffix {
        "HIT" => per(&hit),
        "MISS" => per(&miss),
        "REQ" | "REQUEST" => per(&|i| rd[i] + wr[i]),
        "READ" => Some(rd.clone()),
        "WRITE" => Some(wr.clone()),
        "EA0_RDREQ" | "EA_RDREQ" | "MC_RDREQ" => per(&rd_miss),
        "EA0_RDREQ_32B" | "EA_RDREQ_32B" => per(&|i| rd_miss(i) / 16),
        "EA0_RDREQ_128B" | "EA_RDREQ_128B" | "BUBBLE" => per(&|i| rd_miss(i) / 8),
        "EA0_RDREQ_64B" | "EA_RDREQ_64B" => per(&|i| rd_miss(i) - rd_miss(i) / 8 - rd_miss(i) / 16),
        "EA0_WRREQ" | "EA_WRREQ" | "MC_WRREQ" => per(&wr_miss),
        "EA0_WRREQ_64B" | "EA_WRREQ_64B" => per(&|i| wr_miss(i) - wr_miss(i) / 8),
        _ => None,
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
