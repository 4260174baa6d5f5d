//! Every counter block of gfx90a, gfx942 and gfx950 through the register path: the library's
//! packets program every slot of one instance, the simulated GPU executes them around one kernel,
//! and both APIs report exactly the value model's numbers at every sample (AID blocks through the
//! legacy API only: the v2 decoder reads them out of place, as AMD's does).

mod common;

use std::collections::BTreeSet;

use common::*;
use gpu::arch::{tables, Block};
use gpu::{DeviceInfo, KernelRun};

const GFX90A_SAMPLES: usize = 620;
const GFX942_SAMPLES: usize = 2728;
const GFX950_SAMPLES: usize = 2728;

/// Up to `block.counters` distinct events: the catalog's counters of the block first.
fn events_of(arch: &str, block: &Block) -> Vec<u32> {
    let t = tables();
    let mut events: Vec<u32> = Vec::new();
    let hardware = if block.name == "SQ_CS" {
        "SQ"
    } else {
        &block.name
    };
    for c in t.basic_counters(t.table_arch(arch)) {
        if c.block == hardware && c.event <= block.max_event && !events.contains(&c.event) {
            events.push(c.event);
        }
    }
    let mut next = 0;
    while events.len() < block.counters as usize && next <= block.max_event {
        if !events.contains(&next) && !block.is_internal_event(next) {
            events.push(next);
        }
        next += 1;
    }
    events.truncate(block.counters as usize);
    events
}

/// The value model's numbers for `event` of `block` over exactly kernel `k`, at every position.
fn expected(k: &KernelRun, info: &DeviceInfo, block: &Block, event: u32) -> Vec<u64> {
    let t = tables();
    // SQ_CS is SQ's hardware; GDS and SX count event 0 whatever was asked (the select is 0).
    let hardware = t
        .block_by_name(
            k.arch,
            if block.name == "SQ_CS" {
                "SQ"
            } else {
                &block.name
            },
        )
        .expect("block");
    let event = if matches!(block.name.as_str(), "GDS" | "SX") {
        0
    } else {
        event
    };
    match t.counter_name(k.arch, &hardware.name, event) {
        Some(name) => gpu::ground_truth(k, &[name]).expect("counter").remove(0).1,
        None => {
            gpu::model::event_values(&k.dispatch(info), &info.geometry, hardware, None, event, 0)
        }
    }
}

/// Checks every block of `arch` and returns the number of samples compared. The v2 library
/// serves every agent after the first with the first one's tables, so each architecture runs in
/// a process of its own.
fn every_block(arch: &'static str, legacy_agent: u64, device: u32) -> usize {
    let mut checked = 0;
    {
        let info = DeviceInfo::reference(arch);
        gpu::register_device(device, info.clone());
        let g = info.geometry;
        let agent = register(arch, g.xcc, g.se, g.cu, g.sa_per_se);
        let mut time = 0u64;
        for block in tables().blocks(arch) {
            let layout = block.layout(&g);
            let index = layout.instances - 1;
            let events = events_of(arch, block);
            let mut window = |start: &Packet, read: &Packet| {
                let k = KernelRun {
                    agent_node_id: 1,
                    arch,
                    device_index: device,
                    queue_id: 1,
                    dispatch_index: 0,
                    kernel: "vadd",
                    grid: [1 << 20, 1, 1],
                    workgroup: [256, 1, 1],
                    group_segment_size: 0,
                    private_segment_size: 0,
                    wave_size: 64,
                    start_ns: time + 1_000,
                    end_ns: time + 41_000,
                    computed: false,
                    variation: None,
                };
                execute(device, start, time + 1_000);
                gpu::kernel_started(&k);
                execute(device, read, time + 41_000);
                time += 100_000;
                k
            };
            let truths = |k: &KernelRun| -> Vec<Vec<u64>> {
                events
                    .iter()
                    .map(|&e| expected(k, &info, block, e))
                    .collect()
            };

            if !layout.aid {
                let pmc: Vec<PmcEvent> = events
                    .iter()
                    .map(|&event_id| PmcEvent {
                        block_index: index,
                        event_id,
                        flags: 0,
                        block_name: block.id,
                    })
                    .collect();
                let session = create(agent, &pmc).expect("v2 packets");
                let k = window(&session.packets.start, &session.packets.read);
                let want = truths(&k);
                let got = samples(&session);
                assert_eq!(
                    got.len(),
                    events.len() * (layout.xcc * layout.samples_per_instance()) as usize,
                    "{arch} {}",
                    block.name
                );
                for (event, id, value) in got {
                    let e = events
                        .iter()
                        .position(|&x| x == event.event_id)
                        .expect("event");
                    assert_eq!(
                        value, want[e][id as usize],
                        "{arch} {} event {} sample {id} (v2)",
                        block.name, event.event_id
                    );
                    checked += 1;
                }
            }

            let legacy_events: Vec<LegacyEvent> = events
                .iter()
                .map(|&counter_id| LegacyEvent {
                    block_name: block.id,
                    block_index: index,
                    counter_id,
                })
                .collect();
            let mut start = [0u8; 64];
            let legacy =
                Legacy::new(legacy_agent, legacy_events, &mut start).expect("legacy packets");
            let mut read = [0u8; 64];
            // SAFETY: a prepared profile and a writable packet.
            assert_eq!(
                unsafe { (lib().legacy_read)(&legacy.profile, &mut read) },
                SUCCESS
            );
            let k = window(&start, &read);
            let want = truths(&k);
            let got = legacy.samples();
            // Each event's samples come in XCC order, then shader engine: positions ascending.
            let positions: BTreeSet<usize> = (0..layout.xcc)
                .flat_map(|x| (0..layout.samples_per_instance()).map(move |j| (x, j)))
                .map(|(x, j)| layout.index(x, index, j))
                .collect();
            let mut next = vec![positions; events.len()];
            for (event, _, value) in got {
                let e = events
                    .iter()
                    .position(|&x| x == event.counter_id)
                    .expect("event");
                let position = *next[e].iter().next().expect("a sample left");
                next[e].remove(&position);
                assert_eq!(
                    value, want[e][position],
                    "{arch} {} event {} position {position} (legacy)",
                    block.name, event.counter_id
                );
                checked += 1;
            }
            assert!(
                next.iter().all(BTreeSet::is_empty),
                "{arch} {}: samples missing",
                block.name
            );
        }
    }
    assert_eq!(gpu::problems(), 0, "the GPU met packets it does not model");
    checked
}

#[test]
fn every_gfx90a_block_reads_the_value_model_through_both_apis() {
    in_child(
        "every_gfx90a_block_reads_the_value_model_through_both_apis",
        &[],
        || {
            assert_eq!(every_block("gfx90a", MI210, 300), GFX90A_SAMPLES);
        },
    );
}

#[test]
fn every_gfx942_block_reads_the_value_model_through_both_apis() {
    in_child(
        "every_gfx942_block_reads_the_value_model_through_both_apis",
        &[],
        || {
            assert_eq!(every_block("gfx942", MI300X, 301), GFX942_SAMPLES);
        },
    );
}

#[test]
fn every_gfx950_block_reads_the_value_model_through_both_apis() {
    in_child(
        "every_gfx950_block_reads_the_value_model_through_both_apis",
        &[],
        || {
            assert_eq!(every_block("gfx950", MI355X, 302), GFX950_SAMPLES);
        },
    );
}
