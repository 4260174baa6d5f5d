//! The simulated GPU's counters driven directly (kernel starts and PM4 commands), without queues.

use hsa_runtime64::gpu::arch::tables;
use hsa_runtime64::gpu::pm4::{Command, ReadEntry, Select, Setup, Slot};
use hsa_runtime64::gpu::{self, KernelRun};

fn run(
    device: u32,
    arch: &'static str,
    kernel: &'static str,
    grid: u32,
    start: u64,
    end: u64,
) -> KernelRun<'static> {
    KernelRun {
        agent_node_id: 1,
        arch,
        device_index: device,
        queue_id: 7,
        dispatch_index: 3,
        kernel,
        grid: [grid, 1, 1],
        workgroup: [256, 1, 1],
        group_segment_size: 1024,
        private_segment_size: 64,
        wave_size: 64,
        start_ns: start,
        end_ns: end,
        computed: false,
        variation: None,
    }
}

#[test]
fn every_basic_counter_of_every_architecture_has_a_value_at_every_sample() {
    let t = tables();
    let mut checked = 0;
    for arch in t.counter_archs() {
        let arch: &'static str = Box::leak(arch.to_string().into_boxed_str());
        let k = run(100, arch, "mystery_kernel", 1 << 20, 0, 1_000_000);
        let geometry = gpu::device_info(100, arch).geometry;
        for counter in t.basic_counters(arch) {
            let values = gpu::ground_truth(&k, &[counter.name.as_str()])
                .unwrap_or_else(|e| panic!("{arch}: {e}"))
                .remove(0)
                .1;
            let block = t.block_by_name(arch, &counter.block).expect("block");
            assert_eq!(
                values.len(),
                block.layout(&geometry).positions(),
                "{arch} {}",
                counter.name
            );
            assert!(
                values.iter().sum::<u64>() > 0,
                "{arch} {} is always zero",
                counter.name
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 2309);
}

#[test]
fn common_counters_follow_from_the_dispatch() {
    // 2^20 work-items in workgroups of 256 with 64-wide waves: 4096 workgroups, 16384 waves.
    let k = run(101, "gfx942", "vadd", 1 << 20, 0, 1_000_000);
    let truth = gpu::ground_truth(
        &k,
        &[
            "SQ_WAVES",
            "SQ_INSTS_VALU",
            "GRBM_COUNT",
            "GRBM_GUI_ACTIVE",
            "TCC_HIT",
            "TCC_MISS",
            "TCC_REQ",
            "TCC_EA0_WRREQ",
        ],
    )
    .expect("gfx942 counters");
    let sum = |i: usize| truth[i].1.iter().sum::<u64>();
    assert_eq!(truth[0].1, vec![512; 32]);
    assert_eq!(sum(1), 16384 * 5);
    // 1 ms at 2100 MHz on each of the 8 XCCs.
    assert_eq!(truth[2].1, vec![2_100_000; 8]);
    assert_eq!(truth[3].1, vec![2_100_000; 8]);
    // L2: 8 B read and 4 B written per item, in 64 B requests.
    assert_eq!(sum(6), (1 << 20) * 12 / 64);
    assert_eq!(sum(4) + sum(5), sum(6));
    // Writes that miss go to memory: vadd's writes hit 12%.
    let writes_per_channel = (1u64 << 20) * 4 / 64 / 128;
    assert_eq!(
        sum(7),
        128 * (writes_per_channel - writes_per_channel * 25 / 200)
    );
}

#[test]
fn unrelated_counters_are_not_accidentally_equal() {
    let k = run(102, "gfx942", "mystery_kernel", 1 << 20, 0, 1_000_000);
    let names: Vec<&str> = tables()
        .basic_counters("gfx942")
        .map(|c| c.name.as_str())
        .collect();
    let truth = gpu::ground_truth(&k, &names).expect("gfx942 counters");
    let mut seen: std::collections::HashMap<Vec<u64>, &str> = Default::default();
    let mut equal = Vec::new();
    for (name, values) in &truth {
        if let Some(other) = seen.insert(values.clone(), name) {
            equal.push(format!("{other}={name}"));
        }
    }
    // Only counters that mean the same thing agree: for one kernel that fills the window, the
    // clock and the busy clock; the waves the SPI launches and the SQ receives; scalar cache
    // misses and the requests they send to L2; L2 misses and the requests to DRAM (a single
    // package has no other memory); the vector memory instructions the TA and TD see, and the stores
    // the TCP and TD see.
    let same: Vec<String> = [
        "GRBM_COUNT=GRBM_GUI_ACTIVE",
        "SQC_DCACHE_ATOMIC=SQC_TC_DATA_ATOMIC_REQ",
        "SQC_DCACHE_MISSES=SQC_TC_DATA_READ_REQ",
        "SQC_ICACHE_MISSES=SQC_TC_INST_REQ",
        "SPI_CSN_WAVE=SQ_WAVES",
        "TCC_EA0_RDREQ=TCC_EA0_RDREQ_DRAM",
        "TCC_EA0_WRREQ=TCC_EA0_WRREQ_DRAM",
        "TA_TOTAL_WAVEFRONTS=TD_LOAD_WAVEFRONT",
        "TCP_TOTAL_WRITE=TD_STORE_WAVEFRONT",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(equal, same);
}

#[test]
fn ground_truth_line_has_exactly_the_contract_keys() {
    let mut k = run(103, "gfx90a", "fill", 1024, 5_000, 6_000);
    k.group_segment_size = 0;
    k.computed = true;
    let line = hsa_runtime64::gpu::truth_line(&k, &["SQ_WAVES", "NOT_A_COUNTER"]);
    let pid = std::process::id();
    assert_eq!(
        line,
        format!(
            "{{\"pid\":{pid},\"agent\":1,\"queue\":7,\"kernel\":\"fill\",\"dispatch\":3,\"start\":5000,\"end\":6000,\"computed\":true,\"counters\":{{\"SQ_WAVES\":[4,4,4,4,0,0,0,0]}}}}\n"
        )
    );
    let parsed: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(
        parsed["counters"]["SQ_WAVES"].as_array().map(Vec::len),
        Some(8)
    );
}

const SQ: u32 = 6;
const GRBM: u32 = 3;

fn setup() -> Setup {
    Setup {
        arch: "gfx942".into(),
        xcc: 8,
        se: 32,
        sa_per_se: 1,
        cu: 304,
    }
}

/// Programs SQ_WAVES, GRBM_COUNT and GRBM_GUI_ACTIVE at `start`; reads them into a vector at `read`.
fn window(device: u32, kernels: &[&KernelRun], start: u64, read: u64) -> Vec<u64> {
    let slots = [
        Select {
            slot: Slot {
                block: SQ,
                instance: 0,
                register: 0,
            },
            event: 4,
            accum: 0,
        },
        Select {
            slot: Slot {
                block: GRBM,
                instance: 0,
                register: 0,
            },
            event: 0,
            accum: 0,
        },
        Select {
            slot: Slot {
                block: GRBM,
                instance: 0,
                register: 1,
            },
            event: 2,
            accum: 0,
        },
    ];
    read_window(device, kernels, start, read, &slots)
}

/// Programs `slots` at `start` and reads them on every XCC of the gfx942 `setup` at `read`
/// (4 samples per SQ slot, 1 per other), XCC by XCC.
fn read_window(
    device: u32,
    kernels: &[&KernelRun],
    start: u64,
    read: u64,
    slots: &[Select],
) -> Vec<u64> {
    let samples = |s: &Select| if s.slot.block == SQ { 4 } else { 1 };
    let mut out = vec![0u64; 8 * slots.iter().map(samples).sum::<usize>()];
    let entries: Vec<ReadEntry> = (0..8)
        .flat_map(|xcc| {
            slots.iter().map(move |s| ReadEntry {
                slot: s.slot,
                xcc,
                samples: samples(s) as u32,
            })
        })
        .collect();
    gpu::execute(device, &[Command::PmcStart(slots.to_vec())], start);
    for k in kernels {
        gpu::kernel_started(k);
    }
    gpu::execute(
        device,
        &[Command::PmcRead {
            setup: setup(),
            dst: out.as_mut_ptr() as u64,
            entries,
        }],
        read,
    );
    out
}

#[test]
fn a_window_around_one_kernel_reads_its_ground_truth() {
    let k = run(104, "gfx942", "saxpy", 1 << 18, 2_000_000, 2_500_000);
    let got = window(104, &[&k], 2_000_000, 2_500_000);
    let t =
        gpu::ground_truth(&k, &["SQ_WAVES", "GRBM_COUNT", "GRBM_GUI_ACTIVE"]).expect("counters");
    let expected: Vec<u64> = (0..8)
        .flat_map(|x| {
            [
                &t[0].1[x * 4..x * 4 + 4],
                &t[1].1[x..x + 1],
                &t[2].1[x..x + 1],
            ]
            .concat()
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn busy_cycles_count_overlapping_kernels_once_and_the_window_counts_every_cycle() {
    // Two kernels overlap for 0.25 ms inside a 2 ms window; the device is busy 1.25 ms.
    let a = run(105, "gfx942", "vadd", 1 << 20, 1_000_000, 2_000_000);
    let b = run(105, "gfx942", "fill", 1 << 20, 1_750_000, 2_250_000);
    let got = window(105, &[&a, &b], 1_000_000, 3_000_000);
    let xcc0 = &got[0..6];
    assert_eq!(xcc0[4], 4_200_000);
    assert_eq!(xcc0[5], 2_625_000);
    let waves = |k: &KernelRun| {
        gpu::ground_truth(k, &["SQ_WAVES"])
            .expect("SQ_WAVES")
            .remove(0)
            .1
    };
    let (wa, wb) = (waves(&a), waves(&b));
    assert_eq!(
        xcc0[..4],
        [wa[0] + wb[0], wa[1] + wb[1], wa[2] + wb[2], wa[3] + wb[3]]
    );
}

#[test]
fn devices_described_by_kfd_properties_match_the_reference_chips() {
    let mi300x = gpu::DeviceInfo::from_kfd("gfx942:sramecc+:xnack-", 8, 1216, 4, 32, 1, 2100);
    assert_eq!(mi300x, gpu::DeviceInfo::reference("gfx942"));
    // A registered device overrides the reference chip: a 110-CU MI250X GCD at 1700 MHz.
    gpu::register_device(
        106,
        gpu::DeviceInfo::from_kfd("gfx90a", 1, 440, 4, 8, 1, 1700),
    );
    assert_eq!(gpu::device_info(106, "gfx90a").geometry.cu, 110);
    let k = run(106, "gfx90a", "vadd", 1 << 20, 0, 1_000);
    let ta = gpu::ground_truth(&k, &["TA_TA_BUSY"])
        .expect("TA_TA_BUSY")
        .remove(0)
        .1;
    // min(16, ceil(110 / 8) + 1) = 15 TA instances per shader engine, 8 shader engines.
    assert_eq!(ta.len(), 15 * 8);
}

#[test]
fn a_window_accumulating_a_level_counter_reads_its_accumulated_ground_truth() {
    let event = tables()
        .counter("gfx942", "SQ_IFETCH_LEVEL")
        .expect("SQ_IFETCH_LEVEL")
        .event;
    for (accum, name) in [
        (1, "SQ_IFETCH_LEVEL:LOW_RES"),
        (2, "SQ_IFETCH_LEVEL:HIGH_RES"),
    ] {
        // A device of its own for each window.
        let device = 106 + accum;
        let k = run(device, "gfx942", "saxpy", 1 << 18, 2_000_000, 2_500_000);
        let truth = |name: &str| gpu::ground_truth(&k, &[name]).expect(name).remove(0).1;
        let select = Select {
            slot: Slot {
                block: SQ,
                instance: 0,
                register: 0,
            },
            event,
            accum,
        };
        let out = read_window(device, &[&k], 2_000_000, 2_500_000, &[select]);
        assert_eq!(out, truth(name), "{name}");
        assert_ne!(
            out,
            truth("SQ_IFETCH_LEVEL"),
            "{name} is not the level itself"
        );
    }
}

#[test]
fn a_block_event_by_number_reads_as_a_window_programmed_with_it() {
    // SQ event 337 has no name in the catalog (only rocprof-compute's counter file names it).
    assert_eq!(tables().counter_name("gfx942", "SQ", 337), None);
    for (accum, name) in [(0, "SQ/337"), (2, "SQ/337:HIGH_RES")] {
        let device = 120 + accum;
        let k = run(device, "gfx942", "saxpy", 1 << 18, 2_000_000, 2_500_000);
        let truth = gpu::ground_truth(&k, &[name]).expect(name).remove(0).1;
        let select = Select {
            slot: Slot {
                block: SQ,
                instance: 0,
                register: 0,
            },
            event: 337,
            accum,
        };
        let out = read_window(device, &[&k], 2_000_000, 2_500_000, &[select]);
        assert_eq!(out, truth, "{name}");
        assert!(out.iter().sum::<u64>() > 0, "{name} counts");
    }
    // A named event by number is the named counter; a block the architecture lacks is refused.
    let k = run(123, "gfx942", "saxpy", 1 << 18, 0, 500_000);
    let event = tables()
        .counter("gfx942", "SQ_IFETCH_LEVEL")
        .expect("SQ_IFETCH_LEVEL")
        .event;
    let by_number = format!("SQ/{event}:HIGH_RES");
    let truth = gpu::ground_truth(&k, &[&by_number, "SQ_IFETCH_LEVEL:HIGH_RES"]).expect("both");
    assert_eq!(truth[0].1, truth[1].1);
    assert_eq!(
        gpu::ground_truth(&k, &["NOPE/1"]).unwrap_err().to_string(),
        "counter NOPE/1 of gfx942 is in block NOPE, which aqlprofile does not expose"
    );
    let line = hsa_runtime64::gpu::truth_line(&k, &["SQ/337", "NOPE/1"]);
    let parsed: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(
        parsed["counters"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["SQ/337"]
    );
}
