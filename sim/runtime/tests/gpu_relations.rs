//! The simulated GPU's counters keep the relations the hardware guarantees, for every kernel of
//! the demo on gfx90a, gfx942 and gfx950, from the ground truth of each dispatch.

use hsa_runtime64::gpu::arch::tables;
use hsa_runtime64::gpu::{self, KernelRun};

/// The demo's kernels by symbol name, with their LDS and scratch bytes.
const DEMO: [(&str, u32, u32); 12] = [
    ("vadd", 0, 0),
    ("saxpy", 0, 0),
    ("fill", 0, 0),
    ("increment", 0, 0),
    ("indirect_increment", 0, 0),
    ("lds_reverse", 1024, 0),
    ("scratchy", 0, 1024),
    ("copy", 0, 0),
    ("empty", 0, 0),
    ("_Z5scaleIfEvPT_S0_j", 0, 0),
    ("_Z5scaleIjEvPT_S0_j", 0, 0),
    ("_ZN4demo5twiceEPjj", 0, 0),
];

const ARCHS: [&str; 3] = ["gfx90a", "gfx942", "gfx950"];

fn run(
    arch: &'static str,
    kernel: &'static str,
    lds: u32,
    scratch: u32,
    items: u32,
    ns: u64,
) -> KernelRun<'static> {
    KernelRun {
        agent_node_id: 1,
        arch,
        device_index: 200,
        queue_id: 1,
        dispatch_index: 0,
        kernel,
        grid: [items, 1, 1],
        workgroup: [256, 1, 1],
        group_segment_size: lds,
        private_segment_size: scratch,
        wave_size: 64,
        start_ns: 1_000,
        end_ns: 1_000 + ns,
        computed: false,
        variation: None,
    }
}

/// One dispatch's ground truth, by counter name.
struct Truth {
    values: std::collections::HashMap<String, Vec<u64>>,
    checked: usize,
    arch: &'static str,
    kernel: &'static str,
}

impl Truth {
    fn of(k: &KernelRun<'static>) -> Truth {
        let t = tables();
        let mut names: Vec<String> = t.basic_counters(k.arch).map(|c| c.name.clone()).collect();
        for level in [
            "SQ_LEVEL_WAVES",
            "SQ_INST_LEVEL_VMEM",
            "SQ_INST_LEVEL_LDS",
            "SQ_INST_LEVEL_SMEM",
        ] {
            if t.counter(k.arch, level).is_some() {
                names.push(format!("{level}:HIGH_RES"));
                names.push(format!("{level}:LOW_RES"));
            }
        }
        let asked: Vec<&str> = names.iter().map(String::as_str).collect();
        let values = gpu::ground_truth(k, &asked)
            .unwrap_or_else(|e| panic!("{}: {e}", k.arch))
            .into_iter()
            .collect();
        Truth {
            values,
            checked: 0,
            arch: k.arch,
            kernel: k.kernel,
        }
    }

    fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// Per-sample values (the counter must exist).
    fn v(&self, name: &str) -> &[u64] {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("{} has no {name}", self.arch))
    }

    /// Dispatch total (the counter must exist).
    fn t(&self, name: &str) -> u64 {
        self.v(name).iter().sum()
    }

    /// Dispatch total of the counters that exist.
    fn sum(&self, names: &[&str]) -> u64 {
        names
            .iter()
            .filter_map(|n| self.values.get(*n))
            .map(|v| v.iter().sum::<u64>())
            .sum()
    }

    fn ok(&mut self, holds: bool, what: &str) {
        assert!(holds, "{} {}: {what}", self.arch, self.kernel);
        self.checked += 1;
    }

    /// `a <= b` on dispatch totals.
    fn le(&mut self, a: u64, b: u64, what: &str) {
        self.ok(a <= b, &format!("{what}: {a} > {b}"));
    }

    /// `a == b` on dispatch totals.
    fn eq(&mut self, a: u64, b: u64, what: &str) {
        self.ok(a == b, &format!("{what}: {a} != {b}"));
    }

    /// Every sample of `name` at most `bound`.
    fn each_le(&mut self, name: &str, bound: u64) {
        let worst = self.v(name).iter().copied().max().unwrap_or(0);
        self.ok(
            worst <= bound,
            &format!("{name} reads {worst} > {bound} at one sample"),
        );
    }
}

/// Checks every relation on one dispatch; returns how many were checked.
fn relations(k: &KernelRun<'static>) -> usize {
    let mut r = Truth::of(k);
    let info = gpu::device_info(k.device_index, k.arch);
    let g = info.geometry;
    let cycles = r.v("GRBM_GUI_ACTIVE")[0];
    let workgroups = u64::from(k.grid[0]).div_ceil(256);
    let waves = workgroups * 4;

    // Clocks.
    r.eq(
        cycles,
        (k.end_ns - k.start_ns) * u64::from(info.clock_mhz) / 1000,
        "GRBM_GUI_ACTIVE is the dispatch's cycles",
    );
    for (name, _) in r.values.clone() {
        if name.starts_with("GRBM_") && name.ends_with("_BUSY") {
            r.each_le(&name, cycles);
        }
    }

    // Waves and workgroups.
    r.eq(r.t("SQ_WAVES"), waves, "SQ_WAVES");
    r.eq(r.t("SPI_CSN_WAVE"), waves, "SPI_CSN_WAVE");
    r.eq(
        r.t("SPI_CSN_NUM_THREADGROUPS"),
        workgroups,
        "SPI_CSN_NUM_THREADGROUPS",
    );

    // Instruction mix.
    let parts = r.sum(&[
        "SQ_INSTS_VALU",
        "SQ_INSTS_SALU",
        "SQ_INSTS_SMEM",
        "SQ_INSTS_LDS",
        "SQ_INSTS_VMEM",
        "SQ_INSTS_BRANCH",
        "SQ_INSTS_GDS",
        "SQ_INSTS_SENDMSG",
    ]);
    r.le(parts, r.t("SQ_INSTS"), "instruction kinds within SQ_INSTS");
    r.le(
        r.sum(&["SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR"]),
        r.t("SQ_INSTS_VMEM"),
        "VMEM reads and writes",
    );
    r.le(
        r.t("SQ_INSTS_FLAT"),
        r.t("SQ_INSTS_VMEM"),
        "FLAT within VMEM",
    );
    if r.has("SQ_INSTS_FLAT_LDS_ONLY") {
        r.le(
            r.t("SQ_INSTS_FLAT_LDS_ONLY"),
            r.t("SQ_INSTS_FLAT"),
            "flat LDS-only within FLAT",
        );
    }
    if r.has("SQ_ACTIVE_INST_VALU2") {
        r.le(
            2 * r.t("SQ_ACTIVE_INST_VALU2"),
            r.t("SQ_ACTIVE_INST_VALU"),
            "dual-issued VALU",
        );
    }
    if r.has("GRBM_SPI_BUSY") {
        let crawlers: Vec<String> = (0..4).map(|i| format!("SPI_CS{i}_CRAWLER_STALL")).collect();
        if crawlers.iter().all(|c| r.has(c)) {
            let spi: u64 = r.v("GRBM_SPI_BUSY")[0];
            let engines = r.v(&crawlers[0]).len() as u64;
            let sum = r.sum(&crawlers.iter().map(String::as_str).collect::<Vec<_>>());
            r.le(
                sum,
                spi * engines,
                "SPI pipe stalls within the SPI's busy cycles",
            );
        }
    }
    let mfma = r.t("SQ_INSTS_MFMA");
    let kinds: Vec<String> = r
        .values
        .keys()
        .filter(|n| {
            n.starts_with("SQ_INSTS_VALU_")
                && !["MFMA", "FLOPS", "IOPS"].iter().any(|w| n.contains(w))
        })
        .cloned()
        .collect();
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    r.le(
        r.sum(&kinds) + mfma,
        r.t("SQ_INSTS_VALU"),
        "VALU kinds and MFMA within VALU",
    );
    let types: Vec<String> = r
        .values
        .keys()
        .filter(|n| n.starts_with("SQ_INSTS_VALU_MFMA_") && !n.contains("MOPS"))
        .cloned()
        .collect();
    let types: Vec<&str> = types.iter().map(String::as_str).collect();
    r.le(r.sum(&types), mfma, "MFMA data types within MFMA");
    r.le(
        r.t("SQ_INSTS_VSKIPPED"),
        r.t("SQ_INSTS_VALU"),
        "skipped VALU",
    );

    // Wave cycles.
    let wave_cycles = r.t("SQ_WAVE_CYCLES");
    r.le(
        r.t("SQ_ACTIVE_INST_ANY") + r.t("SQ_WAIT_ANY"),
        wave_cycles,
        "issuing and waiting within wave cycles",
    );
    for kind in ["VALU", "SCA", "LDS", "VMEM", "FLAT", "MISC"] {
        let name = format!("SQ_ACTIVE_INST_{kind}");
        if r.has(&name) {
            r.le(r.t(&name), r.t("SQ_ACTIVE_INST_ANY"), &name);
        }
    }
    r.le(
        r.t("SQ_WAIT_INST_ANY"),
        r.t("SQ_WAIT_ANY"),
        "SQ_WAIT_INST_ANY",
    );
    r.le(
        r.t("SQ_THREAD_CYCLES_VALU"),
        64 * r.t("SQ_ACTIVE_INST_VALU"),
        "thread cycles of 64-wide VALU",
    );
    r.each_le("SQ_BUSY_CYCLES", cycles);
    r.le(
        r.t("SQ_BUSY_CU_CYCLES"),
        cycles * u64::from(g.cu),
        "SQ_BUSY_CU_CYCLES",
    );
    if r.has("SQ_VALU_MFMA_BUSY_CYCLES") {
        r.le(
            r.t("SQ_VALU_MFMA_BUSY_CYCLES"),
            cycles * u64::from(g.cu) * 4,
            "SQ_VALU_MFMA_BUSY_CYCLES",
        );
    }
    r.le(
        r.t("SQ_LDS_BANK_CONFLICT"),
        r.t("SQ_LDS_IDX_ACTIVE"),
        "LDS bank conflicts",
    );

    // Level accumulations: levels summed every cycle, no item outliving the dispatch.
    let high = r.t("SQ_LEVEL_WAVES:HIGH_RES");
    r.eq(
        high / 4,
        wave_cycles,
        "SQ_LEVEL_WAVES accumulated is SQ_WAVE_CYCLES in quad cycles",
    );
    r.eq(
        r.t("SQ_LEVEL_WAVES:LOW_RES"),
        high / 4,
        "LOW_RES is HIGH_RES / 4",
    );
    r.le(high, waves * cycles, "no wave outlives the dispatch");
    for (level, count) in [
        ("SQ_INST_LEVEL_VMEM", "SQ_INSTS_VMEM"),
        ("SQ_INST_LEVEL_LDS", "SQ_INSTS_LDS"),
        ("SQ_INST_LEVEL_SMEM", "SQ_INSTS_SMEM"),
    ] {
        let acc = r.t(&format!("{level}:HIGH_RES"));
        r.le(
            acc,
            r.t(count) * cycles,
            &format!("{level}: no instruction outlives the dispatch"),
        );
        r.ok(
            (acc == 0) == (r.t(count) == 0),
            &format!("{level} accumulates exactly when {count} counts"),
        );
    }

    // Scalar caches.
    for cache in ["ICACHE", "DCACHE"] {
        let req = r.t(&format!("SQC_{cache}_REQ"));
        let parts = r.sum(&[
            &format!("SQC_{cache}_HITS"),
            &format!("SQC_{cache}_MISSES"),
            &format!("SQC_{cache}_MISSES_DUPLICATE"),
        ]);
        r.eq(
            parts,
            req,
            &format!("SQC {cache} hits + misses + duplicates = requests"),
        );
    }
    r.le(
        r.sum(&[
            "SQC_DCACHE_REQ_READ_1",
            "SQC_DCACHE_REQ_READ_2",
            "SQC_DCACHE_REQ_READ_4",
            "SQC_DCACHE_REQ_READ_8",
            "SQC_DCACHE_REQ_READ_16",
        ]),
        r.t("SQC_DCACHE_REQ"),
        "scalar reads by size",
    );

    // Texture address and data: every vector memory instruction, flat or buffer.
    let vmem = r.t("SQ_INSTS_VMEM");
    r.eq(
        r.t("TA_TOTAL_WAVEFRONTS"),
        vmem,
        "TA waves are VMEM instructions",
    );
    r.eq(
        r.sum(&["TA_FLAT_WAVEFRONTS", "TA_BUFFER_WAVEFRONTS"]),
        vmem,
        "TA flat + buffer",
    );
    for kind in ["FLAT", "BUFFER"] {
        let parts = r.sum(&[
            &format!("TA_{kind}_READ_WAVEFRONTS"),
            &format!("TA_{kind}_WRITE_WAVEFRONTS"),
            &format!("TA_{kind}_ATOMIC_WAVEFRONTS"),
        ]);
        r.eq(
            parts,
            r.t(&format!("TA_{kind}_WAVEFRONTS")),
            &format!("TA {kind} reads + writes + atomics"),
        );
    }
    // TD counts every instruction as a load wave, stores and atomics again on their own.
    r.eq(r.t("TD_LOAD_WAVEFRONT"), vmem, "TD waves");
    r.eq(
        r.t("SQ_INSTS_VMEM_WR")
            + r.t("TA_FLAT_ATOMIC_WAVEFRONTS")
            + r.t("TA_BUFFER_ATOMIC_WAVEFRONTS"),
        r.sum(&["TD_STORE_WAVEFRONT", "TD_ATOMIC_WAVEFRONT"]),
        "TD stores and atomics",
    );
    r.le(
        r.t("TD_COALESCABLE_WAVEFRONT"),
        r.t("TD_LOAD_WAVEFRONT"),
        "coalescable",
    );
    r.each_le("TA_TA_BUSY", cycles);
    r.each_le("TD_TD_BUSY", cycles);
    for (name, _) in r.values.clone() {
        let stall = name.contains("STALL") || name.ends_with("_CYCLES");
        if stall && name.starts_with("TA_") {
            r.le(
                r.t(&name),
                r.t("TA_TA_BUSY"),
                &format!("{name} within TA busy"),
            );
        }
        if name.contains("STALL") && name.starts_with("TD_") {
            r.le(
                r.t(&name),
                r.t("TD_TD_BUSY"),
                &format!("{name} within TD busy"),
            );
        }
    }

    // vL1D: tag lookups at least the requests sent to L2; requests by memory type.
    let to_l2 = r.sum(&[
        "TCP_TCC_READ_REQ",
        "TCP_TCC_WRITE_REQ",
        "TCP_TCC_ATOMIC_WITH_RET_REQ",
        "TCP_TCC_ATOMIC_WITHOUT_RET_REQ",
    ]);
    r.le(
        to_l2,
        r.t("TCP_TOTAL_CACHE_ACCESSES"),
        "vL1D misses within its lookups",
    );
    r.eq(
        r.sum(&[
            "TCP_TOTAL_READ",
            "TCP_TOTAL_WRITE",
            "TCP_TOTAL_ATOMIC_WITH_RET",
            "TCP_TOTAL_ATOMIC_WITHOUT_RET",
        ]),
        vmem,
        "vL1D instructions by kind",
    );
    // Coalescing: a wave instruction is at least 16 accesses of four lanes.
    r.le(16 * vmem, r.t("TCP_TOTAL_ACCESSES"), "vL1D accesses");
    for (op, total) in [("READ", "TCP_TCC_READ_REQ"), ("WRITE", "TCP_TCC_WRITE_REQ")] {
        let names: Vec<String> = ["NC", "UC", "CC", "RW"]
            .iter()
            .map(|m| format!("TCP_TCC_{m}_{op}_REQ"))
            .collect();
        if names.iter().all(|n| r.has(n)) {
            let parts = r.sum(&names.iter().map(String::as_str).collect::<Vec<_>>());
            r.eq(parts, r.t(total), &format!("{total} by memory type"));
        }
    }
    r.eq(
        r.sum(&["TCP_UTCL1_TRANSLATION_HIT", "TCP_UTCL1_TRANSLATION_MISS"]),
        r.t("TCP_UTCL1_REQUEST"),
        "UTCL1 hits + misses",
    );
    r.le(
        r.t("TCP_UTCL1_PERMISSION_MISS"),
        r.t("TCP_UTCL1_TRANSLATION_MISS"),
        "UTCL1 permission misses",
    );
    r.each_le("TCP_GATE_EN1", cycles);
    r.le(r.t("TCP_GATE_EN2"), r.t("TCP_GATE_EN1"), "TCP_GATE_EN2");
    for (name, _) in r.values.clone() {
        if name.starts_with("TCP_") && name.contains("STALL") {
            r.le(
                r.t(&name),
                r.t("TCP_GATE_EN2"),
                &format!("{name} within TCP busy"),
            );
        }
    }

    // L2, per channel: hits + misses = reads + writes + atomics = requests.
    let req = r.v("TCC_REQ").to_vec();
    let (hit, miss) = (r.v("TCC_HIT").to_vec(), r.v("TCC_MISS").to_vec());
    let (rd, wr) = (r.v("TCC_READ").to_vec(), r.v("TCC_WRITE").to_vec());
    let at = r.v("TCC_ATOMIC").to_vec();
    for c in 0..req.len() {
        r.eq(
            hit[c] + miss[c],
            req[c],
            &format!("TCC channel {c}: hits + misses"),
        );
        r.eq(
            rd[c] + wr[c] + at[c],
            req[c],
            &format!("TCC channel {c}: reads + writes + atomics"),
        );
    }
    if ["NC", "UC", "CC", "RW"]
        .iter()
        .all(|m| r.has(&format!("TCC_{m}_REQ")))
    {
        r.eq(
            r.sum(&["TCC_NC_REQ", "TCC_UC_REQ", "TCC_CC_REQ", "TCC_RW_REQ"]),
            r.t("TCC_REQ"),
            "TCC requests by memory type",
        );
    }
    r.eq(
        r.t("TCP_TCC_READ_REQ"),
        r.t("TCC_READ"),
        "vL1D reads to L2 arrive",
    );
    r.eq(
        r.t("TCP_TCC_WRITE_REQ"),
        r.t("TCC_WRITE"),
        "vL1D writes to L2 arrive",
    );
    r.eq(
        r.sum(&[
            "TCP_TCC_ATOMIC_WITH_RET_REQ",
            "TCP_TCC_ATOMIC_WITHOUT_RET_REQ",
        ]),
        r.t("TCC_ATOMIC"),
        "atomics arrive",
    );
    // Memory-side requests: gfx90a names them TCC_EA_*, later GPUs TCC_EA0_*.
    let prefix = if r.has("TCC_EA0_RDREQ") {
        "TCC_EA0"
    } else {
        "TCC_EA"
    };
    let ea = |name: &str| format!("{prefix}_{name}");
    r.le(
        r.t(&ea("RDREQ")),
        r.t("TCC_READ"),
        "memory reads are L2 read misses",
    );
    r.le(
        r.t(&ea("RDREQ")),
        r.t("TCC_MISS"),
        "memory reads within misses",
    );
    r.le(r.t(&ea("RDREQ_32B")), r.t(&ea("RDREQ")), "32-byte reads");
    r.le(r.t(&ea("WRREQ")), r.t("TCC_WRITE"), "memory writes");
    r.le(r.t(&ea("WRREQ_64B")), r.t(&ea("WRREQ")), "64-byte writes");
    r.le(r.t(&ea("ATOMIC")), r.t("TCC_ATOMIC"), "memory atomics");
    for part in ["TCC_STREAMING_REQ", "TCC_PROBE"] {
        r.le(r.t(part), r.t("TCC_REQ"), part);
    }
    r.each_le("TCC_BUSY", cycles);
    r.le(
        r.t("TCC_TOO_MANY_EA_WRREQS_STALL"),
        r.t("TCC_BUSY"),
        "TCC write stalls within busy",
    );

    // Command processor: busy + idle = cycles, stalls within busy.
    for (name, _) in r.values.clone() {
        if (name.starts_with("CPC_") || name.starts_with("CPF_")) && name.ends_with("_STALL") {
            let busy = format!("{}_BUSY", name.trim_end_matches("_STALL"));
            if r.has(&busy) {
                r.le(r.t(&name), r.t(&busy), &format!("{name} within {busy}"));
            }
        }
    }
    for unit in ["CPC", "CPF"] {
        let busy = r.v(&format!("{unit}_{unit}_STAT_BUSY")).to_vec();
        let idle = r.v(&format!("{unit}_{unit}_STAT_IDLE")).to_vec();
        for x in 0..busy.len() {
            r.eq(
                busy[x] + idle[x],
                cycles,
                &format!("{unit} busy + idle on XCC {x}"),
            );
        }
        r.le(
            r.t(&format!("{unit}_{unit}_STAT_STALL")),
            r.t(&format!("{unit}_{unit}_STAT_BUSY")),
            "CP stalls",
        );
        let tciu =
            r.t(&format!("{unit}_{unit}_TCIU_BUSY")) + r.t(&format!("{unit}_{unit}_TCIU_IDLE"));
        r.eq(
            tciu,
            cycles * busy.len() as u64,
            &format!("{unit} TCIU busy + idle"),
        );
    }
    r.checked
}

#[test]
fn every_relation_holds_for_every_demo_kernel_on_every_architecture() {
    let mut checked = Vec::new();
    for arch in ARCHS {
        let mut n = 0;
        for (kernel, lds, scratch) in DEMO {
            // A long dispatch and a very short one (where issue and latencies must be capped).
            for (items, ns) in [(1 << 20, 400_000), (1 << 16, 2_000)] {
                n += relations(&run(arch, kernel, lds, scratch, items, ns));
            }
        }
        checked.push((arch, n));
    }
    // gfx90a has 16 L2 channels, gfx942 128 and gfx950 128 (two per-channel relations each).
    assert_eq!(
        checked,
        vec![("gfx90a", 3960), ("gfx942", 8880), ("gfx950", 9240)]
    );
}

/// A metric of one demo kernel on gfx942 over 2^20 work-items, in percent.
fn metric(kernel: &'static str, num: &[&str], den: &[&str]) -> u64 {
    let (_, lds, scratch) = DEMO
        .iter()
        .find(|(k, _, _)| *k == kernel)
        .expect("demo kernel");
    let r = Truth::of(&run("gfx942", kernel, *lds, *scratch, 1 << 20, 400_000));
    100 * r.sum(num) / r.sum(den).max(1)
}

#[test]
fn kernel_shapes_show_in_their_metrics() {
    let kernels: Vec<&'static str> = DEMO
        .iter()
        .map(|(k, _, _)| *k)
        .filter(|k| *k != "empty")
        .collect();
    let each = |num: &[&str], den: &[&str]| -> Vec<(&'static str, u64)> {
        kernels.iter().map(|k| (*k, metric(k, num, den))).collect()
    };
    let top = |values: &[(&'static str, u64)]| values.iter().max_by_key(|(_, v)| *v).unwrap().0;
    // Waiting on memory: the streams wait most, the compute-bound loop least.
    let waiting = each(&["SQ_WAIT_ANY"], &["SQ_WAVE_CYCLES"]);
    assert_eq!(top(&waiting), "copy");
    assert_eq!(
        waiting.iter().min_by_key(|(_, v)| *v).unwrap().0,
        "scratchy"
    );
    // LDS instructions: the reversal through LDS.
    assert_eq!(top(&each(&["SQ_INSTS_LDS"], &["SQ_INSTS"])), "lds_reverse");
    // Matrix cores: the tile product.
    assert_eq!(
        top(&each(&["SQ_INSTS_MFMA"], &["SQ_INSTS_VALU"])),
        "_Z5scaleIfEvPT_S0_j"
    );
    // VALU instructions per wave: the compute-bound loop.
    assert_eq!(top(&each(&["SQ_INSTS_VALU"], &["SQ_WAVES"])), "scratchy");
    // The demo's known kernels other than the tile product issue no MFMA at all.
    for k in ["vadd", "saxpy", "copy", "fill", "lds_reverse", "scratchy"] {
        assert_eq!(metric(k, &["SQ_INSTS_MFMA"], &["SQ_INSTS_VALU"]), 0, "{k}");
    }
    // vL1D miss shares (requests sent on to L2 per vL1D access) lie in [0, 100]; `fill`,
    // which only writes, sends every access on.
    let lookups = each(
        &["TCP_TCC_READ_REQ", "TCP_TCC_WRITE_REQ"],
        &["TCP_TOTAL_CACHE_ACCESSES"],
    );
    assert!(lookups.iter().all(|(_, v)| *v <= 100), "{lookups:?}");
    assert_eq!(top(&lookups), "fill", "{lookups:?}");
}
