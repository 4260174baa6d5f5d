//! What kind of work each kernel does: its instruction mix and memory behaviour per wave and per
//! work-item. The value model derives every counter of a dispatch from this and the geometry.
//!
//! The demo's kernels have shapes of their own (memory-bound streams, a compute-bound loop, an
//! LDS-heavy reversal, a matrix-core kernel); any other kernel gets a mix drawn from a hash of its
//! name, with every part present so that every counter reads something.

use super::model::hash;

/// Instruction and memory behaviour of a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Bytes read from global memory per work-item (4 per vector load).
    pub rd_bytes: u64,
    /// Bytes written to global memory per work-item (4 per vector store).
    pub wr_bytes: u64,
    /// Vector ALU instructions per wave, matrix-core (MFMA) instructions included.
    pub valu: u64,
    /// Scalar ALU instructions per wave.
    pub salu: u64,
    /// Scalar memory instructions per wave.
    pub smem: u64,
    /// LDS instructions per wave.
    pub lds: u64,
    /// Branch instructions per wave.
    pub branch: u64,
    /// L2 hit rate of reads in percent (writes hit half as often).
    pub hit_pct: u64,
    /// Matrix-core instructions per wave (part of `valu`).
    pub mfma: u64,
    /// Vector atomic instructions per wave (4 bytes per work-item each).
    pub atomics: u64,
    /// vL1D hit rate of reads in percent.
    pub l1_hit_pct: u64,
    /// Percent of a wave's idle cycles spent waiting on memory.
    pub wait_pct: u64,
    /// Percent of LDS cycles lost to bank conflicts.
    pub lds_conflict_pct: u64,
    /// Percent of vector memory instructions that are buffer (not flat) instructions.
    pub buffer_pct: u64,
    /// GDS and message instructions per wave.
    pub misc: u64,
}

impl Profile {
    /// Vector memory instructions per wave: loads, stores and atomics.
    pub fn vmem(&self) -> u64 {
        self.rd_bytes / 4 + self.wr_bytes / 4 + self.atomics
    }

    /// Every instruction per wave.
    pub fn insts(&self) -> u64 {
        self.valu + self.salu + self.smem + self.lds + self.branch + self.misc + self.vmem()
    }
}

/// The shapes of the demo's kernels: (name part, reads, writes, VALU, SALU, SMEM, LDS, branches,
/// L2 hit %, MFMA, atomics, vL1D hit %, memory wait %, LDS conflict %).
const KNOWN: [(&str, [u64; 13]); 10] = [
    // LDS-heavy: every element goes through LDS, with bank conflicts.
    ("lds_reverse", [4, 4, 7, 12, 2, 24, 3, 10, 0, 0, 5, 40, 30]),
    // Compute-bound: a long VALU loop over scratch.
    (
        "scratchy",
        [256, 260, 400, 30, 2, 0, 130, 70, 0, 0, 60, 10, 0],
    ),
    // Memory-bound streams: little arithmetic per byte, little reuse.
    (
        "indirect_increment",
        [4, 4, 4, 9, 3, 0, 5, 10, 0, 0, 3, 85, 0],
    ),
    ("increment", [4, 4, 4, 8, 2, 0, 5, 10, 0, 0, 3, 85, 0]),
    ("saxpy", [8, 4, 6, 10, 3, 0, 4, 25, 0, 0, 8, 80, 0]),
    ("vadd", [8, 4, 5, 9, 3, 0, 4, 25, 0, 0, 8, 80, 0]),
    ("copy", [4, 4, 3, 8, 2, 0, 3, 5, 0, 0, 2, 90, 0]),
    ("fill", [0, 4, 3, 8, 2, 0, 4, 0, 0, 0, 0, 75, 0]),
    ("empty", [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    // Matrix cores: `scale<float>` as a tile product, MFMA instructions most of its VALU work.
    ("scaleIf", [8, 4, 48, 14, 4, 8, 4, 60, 32, 0, 50, 20, 5]),
];

/// The profile of `kernel` (symbol name), from its name and segment sizes.
pub fn profile(kernel: &str, group_segment_size: u32, private_segment_size: u32) -> Profile {
    let of = |v: [u64; 13]| Profile {
        rd_bytes: v[0],
        wr_bytes: v[1],
        valu: v[2],
        salu: v[3],
        smem: v[4],
        lds: v[5],
        branch: v[6],
        hit_pct: v[7],
        mfma: v[8],
        atomics: v[9],
        l1_hit_pct: v[10],
        wait_pct: v[11],
        lds_conflict_pct: v[12],
        buffer_pct: 0,
        misc: 0,
    };
    if let Some((_, v)) = KNOWN
        .iter()
        .find(|(n, _)| *n == kernel)
        .or_else(|| KNOWN.iter().find(|(n, _)| kernel.contains(n)))
    {
        return of(*v);
    }
    let h = hash(&[kernel.as_bytes()]);
    let field = |shift: u32, m: u64| (h >> shift) % m;
    let valu = 24 + field(8, 64);
    Profile {
        rd_bytes: 4 * (2 + field(0, 4)),
        wr_bytes: 4 * field(4, 3) + u64::from(private_segment_size.min(1024)) / 8,
        // Disjoint ranges per instruction class, so that no two totals coincide by accident
        // (vector memory instructions per wave stay below 12).
        valu,
        salu: 12 + field(16, 12),
        smem: 10 + field(24, 2),
        lds: if group_segment_size > 0 {
            90 + field(32, 40)
        } else {
            0
        },
        branch: 8 + field(40, 2),
        hit_pct: 5 + field(48, 90),
        mfma: 1 + valu * field(56, 5) / 10,
        atomics: 1,
        l1_hit_pct: 5 + field(12, 80),
        wait_pct: 20 + field(20, 70),
        lds_conflict_pct: 1 + field(28, 40),
        buffer_pct: 23,
        misc: 2,
    }
}

/// Bytes per ns of memory traffic and operations per ns of vector and matrix math that every
/// simulated GPU sustains (below the peaks of gfx90a, gfx942 and gfx950).
const BYTES_PER_NS: u64 = 1_000;
const OPS_PER_NS: u64 = 20_000;

/// The least time in ns a dispatch of `kernel` over `items` work-items takes: its memory
/// traffic and its math at rates every simulated GPU sustains, so that no bandwidth or FLOP
/// rate derived from its counters exceeds the hardware's peak.
pub fn least_ns(
    kernel: &str,
    items: u64,
    wave_size: u32,
    group_segment_size: u32,
    private_segment_size: u32,
) -> u64 {
    let p = profile(kernel, group_segment_size, private_segment_size);
    let waves = items.div_ceil(u64::from(wave_size.max(1)));
    let bytes = items * (p.rd_bytes + p.wr_bytes + 4 * p.atomics);
    // A VALU instruction does up to two operations per lane; an MFMA up to 64 x 512.
    let ops = waves * (p.valu * 2 * u64::from(wave_size) + p.mfma * 64 * 512);
    (bytes / BYTES_PER_NS).max(ops / OPS_PER_NS)
}
