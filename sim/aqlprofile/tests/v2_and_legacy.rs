//! The simulated aqlprofile against the simulated GPU: exact values, sample order, limits, and
//! agreement of the two APIs.

mod common;

use common::*;

/// gfx942 event ids.
const TCC_HIT: u32 = 17;
const SQ_WAVES: u32 = 4;

fn tcc_events() -> Vec<PmcEvent> {
    (0..16)
        .map(|i| PmcEvent {
            block_index: i,
            event_id: TCC_HIT,
            flags: 0,
            block_name: TCC,
        })
        .collect()
}

/// SQ_WAVES of shader engine instance 0.
fn sq_waves() -> PmcEvent {
    PmcEvent {
        block_index: 0,
        event_id: SQ_WAVES,
        flags: 0,
        block_name: SQ,
    }
}

#[test]
fn tcc_samples_come_per_xcc_then_instance_and_equal_ground_truth() {
    let agent = register("gfx942", 8, 32, 304, 1);
    let session = create(agent, &tcc_events()).expect("packets");
    let k = run(10, 1, "vadd", 1 << 20, 1_000_000, 1_200_000);
    count_around(10, &session, &k);
    execute(10, &session.packets.stop, 1_200_000);
    let got = samples(&session);
    let truth = truth(&k, "TCC_HIT");
    assert_eq!(got.len(), 128);
    assert_eq!(truth.len(), 128);
    for (n, (event, id, value)) in got.iter().enumerate() {
        let (xcc, instance) = (n / 16, n % 16);
        assert_eq!(event.block_index as usize, instance);
        assert_eq!(*id as usize, xcc * 16 + instance);
        assert_eq!(*value, truth[n]);
    }
    // vadd reads 8 and writes 4 bytes per item in 64-byte lines, spread over 128 channels; a
    // quarter of the reads and an eighth of the writes hit.
    let (reads, writes) = ((1u64 << 20) * 8 / 64 / 128, (1u64 << 20) * 4 / 64 / 128);
    assert_eq!(
        got.iter().map(|s| s.2).sum::<u64>(),
        128 * (reads * 25 / 100 + writes * 25 / 200)
    );
    // SAFETY: a live handle.
    unsafe { (lib().delete_packets)(session.handle) };
}

#[test]
fn sq_samples_come_per_xcc_then_shader_engine() {
    let agent = register("gfx942", 8, 32, 304, 1);
    let session = create(agent, &[sq_waves()]).expect("packets");
    let k = run(11, 1, "vadd", 1 << 20, 5_000, 105_000);
    count_around(11, &session, &k);
    let got = samples(&session);
    assert_eq!(
        got.iter().map(|s| s.1).collect::<Vec<_>>(),
        (0..32).collect::<Vec<u64>>()
    );
    let values: Vec<u64> = got.iter().map(|s| s.2).collect();
    assert_eq!(values, truth(&k, "SQ_WAVES"));
    // 4096 workgroups of 4 waves, spread evenly over 32 shader engines.
    assert_eq!(values, vec![512; 32]);
}

/// A data callback that records samples until it has `stop_after`, then returns `status`.
struct Stopping {
    seen: Vec<(PmcEvent, u64, u64)>,
    stop_after: usize,
    status: u32,
}

unsafe extern "C" fn stopping(
    event: PmcEvent,
    id: u64,
    value: u64,
    ud: *mut std::ffi::c_void,
) -> u32 {
    // SAFETY: `ud` is the Stopping of the test.
    let s = unsafe { &mut *(ud as *mut Stopping) };
    s.seen.push((event, id, value));
    match s.seen.len() == s.stop_after {
        true => s.status,
        false => SUCCESS,
    }
}

#[test]
fn a_callback_stops_iteration_with_info_break_or_an_error() {
    let agent = register("gfx942", 8, 32, 304, 1);
    let mut events = tcc_events();
    events.push(sq_waves());
    // GRBM_COUNT: one sample per XCC, apart from the others' slots (runs of odd lengths).
    events.push(PmcEvent {
        block_index: 0,
        event_id: 0,
        flags: 0,
        block_name: GRBM,
    });
    let session = create(agent, &events).expect("packets");
    let k = run(12, 1, "vadd", 1 << 20, 1_000_000, 1_200_000);
    count_around(12, &session, &k);
    let all = samples(&session);
    assert_eq!(all.len(), 8 * (16 + 4 + 1));
    const INFO_BREAK: u32 = 1;
    // At every sample: within an event's samples on an XCC, at the end of one, at the last.
    for stop_after in 1..=all.len() {
        for (status, returned) in [(INFO_BREAK, SUCCESS), (INVALID_ARGUMENT, INVALID_ARGUMENT)] {
            let mut s = Stopping {
                seen: Vec::new(),
                stop_after,
                status,
            };
            // SAFETY: a live handle, a callback and its data.
            let got = unsafe {
                (lib().iterate_data)(session.handle, stopping, (&mut s as *mut Stopping).cast())
            };
            assert_eq!(got, returned, "{stop_after} {status}");
            assert_eq!(s.seen, all[..stop_after], "{stop_after} {status}");
        }
    }
    // SAFETY: a live handle.
    unsafe { (lib().delete_packets)(session.handle) };
}

#[test]
fn a_set_read_again_reports_the_values_of_that_read() {
    let agent = register("gfx942", 8, 32, 304, 1);
    let session = create(agent, &tcc_events()).expect("packets");
    let mut reads = Vec::new();
    // The same packets around two kernels of different traffic, one after the other.
    for (grid, start, end) in [
        (1 << 20, 1_000_000, 1_200_000),
        (1 << 16, 2_000_000, 2_050_000),
    ] {
        let k = run(40, 1, "vadd", grid, start, end);
        count_around(40, &session, &k);
        execute(40, &session.packets.stop, end);
        let got = samples(&session);
        let values: Vec<u64> = got.iter().map(|s| s.2).collect();
        assert_eq!(values, truth(&k, "TCC_HIT"));
        reads.push(got);
    }
    let keys = |read: &[(PmcEvent, u64, u64)]| -> Vec<(PmcEvent, u64)> {
        read.iter().map(|&(event, id, _)| (event, id)).collect()
    };
    assert_eq!(keys(&reads[0]), keys(&reads[1]));
    // vadd's hits per channel: 16 times fewer items, 16 times fewer hits.
    for (first, second) in reads[0].iter().zip(&reads[1]) {
        assert_eq!(first.2, 16 * second.2);
    }
    // SAFETY: a live handle.
    unsafe { (lib().delete_packets)(session.handle) };
}

#[test]
fn event_coordinates_decode_the_sample_id() {
    let agent = register("gfx942", 8, 32, 304, 1);
    let mut coords: Vec<(i32, i32, i32, String)> = Vec::new();
    unsafe extern "C" fn cb(
        _pos: i32,
        id: i32,
        extent: i32,
        coord: i32,
        name: *const std::ffi::c_char,
        ud: *mut std::ffi::c_void,
    ) -> u32 {
        // SAFETY: `ud` is the Vec below; `name` is a C string.
        let (out, name) = unsafe {
            (
                &mut *(ud as *mut Vec<(i32, i32, i32, String)>),
                std::ffi::CStr::from_ptr(name),
            )
        };
        out.push((id, extent, coord, name.to_string_lossy().into_owned()));
        0
    }
    let event = PmcEvent {
        block_index: 5,
        event_id: TCC_HIT,
        flags: 0,
        block_name: TCC,
    };
    // SAFETY: valid arguments.
    let status =
        unsafe { (lib().iterate_coord)(agent, event, 37, cb, (&mut coords as *mut Vec<_>).cast()) };
    assert_eq!(status, SUCCESS);
    assert_eq!(
        coords,
        vec![
            (0, 8, 2, "XCD".to_string()),
            (5, 16, 5, "INSTANCE".to_string())
        ]
    );
}

#[test]
fn over_limit_sets_are_rejected() {
    let agent = register("gfx942", 8, 32, 304, 1);
    let tcc = |id| PmcEvent {
        block_index: 0,
        event_id: id,
        flags: 0,
        block_name: TCC,
    };
    assert!(create(agent, &[tcc(1), tcc(2), tcc(3), tcc(4)]).is_ok());
    assert_eq!(
        create(agent, &[tcc(1), tcc(2), tcc(3), tcc(4), tcc(5)]).err(),
        Some(ERROR)
    );
    let sq: Vec<PmcEvent> = (1..=9)
        .map(|id| PmcEvent {
            block_index: 0,
            event_id: id,
            flags: 0,
            block_name: SQ,
        })
        .collect();
    assert!(create(agent, &sq[..8]).is_ok());
    assert_eq!(create(agent, &sq).err(), Some(ERROR));
    let grbm: Vec<LegacyEvent> = (0..3)
        .map(|id| LegacyEvent {
            block_name: GRBM,
            block_index: 0,
            counter_id: id,
        })
        .collect();
    let mut start = [0u8; 64];
    assert!(Legacy::new(MI300X, grbm[..2].to_vec(), &mut start).is_ok());
    assert_eq!(Legacy::new(MI300X, grbm, &mut start).err(), Some(ERROR));
    // Accumulation is only for SQ.
    let flagged = PmcEvent { flags: 1, ..tcc(1) };
    assert_eq!(create(agent, &[flagged]).err(), Some(INVALID_ARGUMENT));
}

#[test]
fn block_queries_give_limits_and_instances() {
    let agent = register("gfx942", 8, 32, 304, 1);
    let name = c"TA";
    let mut query = (name.as_ptr(), 0u32, 0u32);
    let profile = PmcProfile {
        agent,
        events: std::ptr::null(),
        count: 0,
    };
    // SAFETY: an id query is (name, id, instance_count).
    assert_eq!(
        unsafe { (lib().get_pmc_info)(&profile, 5, (&mut query as *mut (_, u32, u32)).cast()) },
        SUCCESS
    );
    assert_eq!((query.1, query.2), (TA, 11));
    let events = [PmcEvent {
        block_index: 0,
        event_id: 0,
        flags: 0,
        block_name: TCC,
    }];
    let profile = PmcProfile {
        agent,
        events: events.as_ptr(),
        count: 1,
    };
    let mut counters = 0u32;
    // SAFETY: BLOCK_COUNTERS writes a u32.
    assert_eq!(
        unsafe { (lib().get_pmc_info)(&profile, 4, (&mut counters as *mut u32).cast()) },
        SUCCESS
    );
    assert_eq!(counters, 4);
    let mut valid = false;
    let bad = PmcEvent {
        block_index: 16,
        ..events[0]
    };
    // SAFETY: valid pointers.
    assert_eq!(
        unsafe { (lib().validate)(agent, &bad, &mut valid) },
        SUCCESS
    );
    assert!(!valid);
    // The legacy query reports the raw table instance count of TA.
    let legacy = LegacyProfile {
        agent: MI300X,
        type_: 0,
        events: std::ptr::null(),
        count: 0,
        parameters: std::ptr::null(),
        parameter_count: 0,
        output: Descriptor {
            ptr: std::ptr::null_mut(),
            size: 0,
        },
        command: Descriptor {
            ptr: std::ptr::null_mut(),
            size: 0,
        },
    };
    let mut query = (name.as_ptr(), 0u32, 0u32);
    // SAFETY: as above.
    assert_eq!(
        unsafe { (lib().legacy_get_info)(&legacy, 5, (&mut query as *mut (_, u32, u32)).cast()) },
        SUCCESS
    );
    assert_eq!((query.1, query.2), (TA, 16));
}

#[test]
fn both_apis_return_the_same_data_for_the_same_events() {
    let ids = [
        (SQ, 0, SQ_WAVES),
        (SQ, 0, 26),
        (GRBM, 0, 0),
        (GRBM, 0, 2),
        (TA, 3, 13),
        (TCC, 7, TCC_HIT),
    ];
    let v2_events: Vec<PmcEvent> = ids
        .iter()
        .map(|&(b, i, e)| PmcEvent {
            block_index: i,
            event_id: e,
            flags: 0,
            block_name: b,
        })
        .collect();
    let legacy_events: Vec<LegacyEvent> = ids
        .iter()
        .map(|&(b, i, e)| LegacyEvent {
            block_name: b,
            block_index: i,
            counter_id: e,
        })
        .collect();
    let agent = register("gfx942", 8, 32, 304, 1);
    let k = run(12, 3, "saxpy", 3 << 18, 10_000, 90_000);
    gpu::kernel_started(&k);

    let v2 = create(agent, &v2_events).expect("v2 packets");
    execute(12, &v2.packets.start, 10_000);
    execute(12, &v2.packets.read, 90_000);
    execute(12, &v2.packets.stop, 90_000);

    let (mut start, mut read, mut stop) = ([0u8; 64], [0u8; 64], [0u8; 64]);
    let legacy = Legacy::new(MI300X, legacy_events, &mut start).expect("legacy packets");
    // SAFETY: a prepared profile and writable packets.
    unsafe {
        assert_eq!((lib().legacy_read)(&legacy.profile, &mut read), SUCCESS);
        assert_eq!((lib().legacy_stop)(&legacy.profile, &mut stop), SUCCESS);
    }
    execute(12, &start, 10_000);
    execute(12, &read, 90_000);
    execute(12, &stop, 90_000);

    let a: Vec<u64> = samples(&v2).iter().map(|s| s.2).collect();
    let b: Vec<u64> = legacy.samples().iter().map(|s| s.2).collect();
    assert_eq!(a.len(), 8 * (4 + 4 + 1 + 1 + 4 + 1));
    assert_eq!(a, b);
    // The window is exactly the kernel: GRBM_COUNT and GRBM_GUI_ACTIVE are its 168000 cycles
    // at 2100 MHz on every XCC.
    assert_eq!(truth(&k, "GRBM_COUNT"), vec![168_000; 8]);
    let grbm_count: Vec<u64> = samples(&v2)
        .iter()
        .filter(|s| s.0.block_name == GRBM && s.0.event_id == 0)
        .map(|s| s.2)
        .collect();
    assert_eq!(grbm_count, vec![168_000; 8]);
    // Legacy sample ids restart per XCC: SQ has one per shader engine.
    let sq_ids: Vec<u32> = legacy
        .samples()
        .iter()
        .filter(|s| s.0.counter_id == SQ_WAVES)
        .map(|s| s.1)
        .take(8)
        .collect();
    assert_eq!(sq_ids, vec![0, 1, 2, 3, 0, 1, 2, 3]);
}

#[test]
fn unserialised_kernels_on_two_queues_mix_and_serialised_ones_do_not() {
    let agent = register("gfx942", 8, 32, 304, 1);
    let events = [
        PmcEvent {
            block_index: 0,
            event_id: SQ_WAVES,
            flags: 0,
            block_name: SQ,
        },
        PmcEvent {
            block_index: 0,
            event_id: 26,
            flags: 0,
            block_name: SQ,
        },
    ];
    // Kernel a on queue 1 under a counting window; kernel b on queue 2 overlaps its second half.
    let a = run(13, 1, "vadd", 1 << 20, 1_000_000, 2_000_000);
    let b = run(13, 2, "fill", 1 << 19, 1_500_000, 2_500_000);
    let session = create(agent, &events).expect("packets");
    gpu::kernel_started(&a);
    execute(13, &session.packets.start, 1_000_000);
    gpu::kernel_started(&b);
    execute(13, &session.packets.read, 2_000_000);
    let mixed: Vec<u64> = samples(&session).iter().map(|s| s.2).collect();
    let truth_a: Vec<u64> = ["SQ_WAVES", "SQ_INSTS_VALU"]
        .iter()
        .flat_map(|c| truth(&a, c))
        .collect();
    let truth_b: Vec<u64> = ["SQ_WAVES", "SQ_INSTS_VALU"]
        .iter()
        .flat_map(|c| truth(&b, c))
        .collect();
    // Buffer order is per XCC: SQ_WAVES then SQ_INSTS_VALU, 4 shader engines each.
    let order = |t: &[u64]| -> Vec<u64> {
        (0..8)
            .flat_map(|x| (0..2).flat_map(move |c| (0..4).map(move |se| t[c * 32 + x * 4 + se])))
            .collect()
    };
    let expected: Vec<u64> = order(&truth_a)
        .iter()
        .zip(order(&truth_b))
        .map(|(&x, y)| x + y / 2)
        .collect();
    assert_eq!(mixed, expected);
    assert_ne!(mixed, order(&truth_a));

    // Serialised: b starts when a ends, after the read.
    let c = run(14, 2, "fill", 1 << 19, 2_000_000, 3_000_000);
    let a2 = run(14, 1, "vadd", 1 << 20, 1_000_000, 2_000_000);
    count_around(14, &session, &a2);
    gpu::kernel_started(&c);
    let alone: Vec<u64> = samples(&session).iter().map(|s| s.2).collect();
    assert_eq!(alone, order(&truth_a));
}

#[test]
fn accumulated_events_get_an_internal_base_event_and_report_wave_cycles() {
    const SQ_LEVEL_WAVES: u32 = 5;
    let agent = register("gfx942", 8, 32, 304, 1);
    let events = [
        PmcEvent {
            block_index: 0,
            event_id: SQ_LEVEL_WAVES,
            flags: 2,
            block_name: SQ,
        },
        PmcEvent {
            block_index: 0,
            event_id: SQ_WAVES,
            flags: 0,
            block_name: SQ,
        },
    ];
    let session = create(agent, &events).expect("packets");
    let k = run(15, 1, "vadd", 1 << 20, 0, 1_000_000);
    count_around(15, &session, &k);
    let got = samples(&session);
    // Sorted by event; the internal SQ_LEVEL_WAVES base event takes a register but is not reported.
    let order: Vec<(u32, u32)> = got
        .iter()
        .take(8)
        .map(|s| (s.0.event_id, s.0.flags))
        .collect();
    assert_eq!(
        order,
        [[(SQ_WAVES, 0); 4], [(SQ_LEVEL_WAVES, 2); 4]].concat()
    );
    assert_eq!(got.len(), 8 * 8);
    // 9728 resident waves (304 CUs x 32) for 2.1 million cycles.
    let accumulated: u64 = got.iter().filter(|s| s.0.flags == 2).map(|s| s.2).sum();
    assert_eq!(accumulated, 9728 * 2_100_000);
    // Base plus accumulated plus 7 more events would exceed SQ's 8 registers.
    let mut nine = vec![events[0]];
    nine.extend((10..17).map(|id| PmcEvent {
        block_index: 0,
        event_id: id,
        flags: 0,
        block_name: SQ,
    }));
    assert_eq!(create(agent, &nine).err(), Some(ERROR));
}

#[test]
fn gfx1100_sq_samples_come_per_shader_engine_array_and_wgp() {
    // The first agent registered in a process serves every later one (as in AMD's library):
    // gfx1100 must be the first.
    in_child(
        "gfx1100_sq_samples_come_per_shader_engine_array_and_wgp",
        &[],
        || {
            let agent = register("gfx1100", 1, 6, 96, 2);
            let events = [PmcEvent {
                block_index: 0,
                event_id: SQ_WAVES,
                flags: 0,
                block_name: SQ,
            }];
            let session = create(agent, &events).expect("packets");
            let mut k = run(16, 1, "vadd", 1 << 16, 0, 10_000);
            k.arch = "gfx1100";
            k.wave_size = 32;
            count_around(16, &session, &k);
            let got = samples(&session);
            // 6 SEs x 2 arrays x 4 WGPs; 256 workgroups of 8 waves spread round-robin.
            assert_eq!(
                got.iter().map(|s| s.1).collect::<Vec<_>>(),
                (0..48).collect::<Vec<u64>>()
            );
            let values: Vec<u64> = got.iter().map(|s| s.2).collect();
            assert_eq!(values, truth(&k, "SQ_WAVES"));
            assert_eq!(values.iter().sum::<u64>(), 2048);
        },
    );
}

#[test]
fn internal_spi_events_take_no_register_and_are_not_reported() {
    const SPI: u32 = 5;
    let agent = register("gfx942", 8, 32, 304, 1);
    let mut events: Vec<PmcEvent> = (0..6)
        .map(|id| PmcEvent {
            block_index: 0,
            event_id: id,
            flags: 0,
            block_name: SPI,
        })
        .collect();
    events.push(PmcEvent {
        block_index: 0,
        event_id: 0x100_0001,
        flags: 0,
        block_name: SPI,
    });
    let session = create(agent, &events).expect("six registers suffice");
    execute(17, &session.packets.start, 0);
    execute(17, &session.packets.read, 10);
    // 6 reported events x 4 shader engines x 8 XCCs.
    assert_eq!(samples(&session).len(), 192);
    events.push(PmcEvent {
        block_index: 0,
        event_id: 6,
        flags: 0,
        block_name: SPI,
    });
    assert_eq!(create(agent, &events).err(), Some(ERROR));
}

/// The model's value of ATC event 3 on instance 2 for `k`, on an MI300X.
fn atc_truth(k: &gpu::KernelRun) -> u64 {
    let info = gpu::DeviceInfo::reference("gfx942");
    let block = gpu::arch::tables()
        .block_by_name("gfx942", "ATC")
        .expect("gfx942 has ATC");
    gpu::model::event_values(&k.dispatch(&info), &info.geometry, block, None, 3, 0)[2]
}

#[test]
fn aid_blocks_are_read_first_and_v2_decodes_them_out_of_place_as_amds_library_does() {
    const ATC: u32 = 21;
    let agent = register("gfx942", 8, 32, 304, 1);
    let events = [
        PmcEvent {
            block_index: 0,
            event_id: SQ_WAVES,
            flags: 0,
            block_name: SQ,
        },
        PmcEvent {
            block_index: 2,
            event_id: 3,
            flags: 0,
            block_name: ATC,
        },
    ];
    let session = create(agent, &events).expect("packets");
    let k = run(18, 1, "vadd", 1 << 16, 0, 50_000);
    count_around(18, &session, &k);
    let got = samples(&session);
    // The read writes ATC's one sample ahead of the per-XCC data, but the v2 decoder takes every
    // event per XCC in order: SQ's first sample is ATC's value and every later one is shifted.
    let order: Vec<(u32, u64)> = got.iter().take(6).map(|s| (s.0.block_name, s.1)).collect();
    assert_eq!(
        order,
        vec![(SQ, 0), (SQ, 1), (SQ, 2), (SQ, 3), (ATC, 2), (SQ, 4)]
    );
    assert_eq!(got.len(), 8 * (4 + 1));
    let waves = truth(&k, "SQ_WAVES");
    let atc = atc_truth(&k);
    assert_ne!(atc, waves[0]);
    assert_eq!(got[0].2, atc, "SQ's first v2 sample holds ATC's value");
    assert_eq!(got[1].2, waves[0]);
    assert_eq!(
        got[4].2, waves[3],
        "ATC's v2 sample holds SQ's last XCC-0 value"
    );

    // The legacy API decodes the same buffer layout as it was written.
    let mut start = [0u8; 64];
    let legacy_events = vec![
        LegacyEvent {
            block_name: SQ,
            block_index: 0,
            counter_id: SQ_WAVES,
        },
        LegacyEvent {
            block_name: ATC,
            block_index: 2,
            counter_id: 3,
        },
    ];
    let legacy = Legacy::new(MI300X, legacy_events, &mut start).expect("legacy packets");
    let mut read = [0u8; 64];
    // SAFETY: a prepared profile and a writable packet.
    assert_eq!(
        unsafe { (lib().legacy_read)(&legacy.profile, &mut read) },
        SUCCESS
    );
    let k = run(19, 1, "vadd", 1 << 16, 0, 50_000);
    gpu::kernel_started(&k);
    execute(19, &start, 0);
    execute(19, &read, 50_000);
    let got = legacy.samples();
    assert_eq!((got[0].0.block_name, got[0].1, got[0].2), (ATC, 2, atc));
    let sq: Vec<u64> = got[1..].iter().map(|s| s.2).collect();
    assert_eq!(sq, waves);
}
