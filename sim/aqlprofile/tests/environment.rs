//! Settings read from the environment: the ROCm 6/7 stop-versus-read split of the legacy API,
//! `AQLPROFILE_READ_API=0`, and fault injection. Each test runs in its own process.

mod common;

use common::*;

const SQ_WAVES: u32 = 4;

/// SQ_WAVES for the v2 API.
fn v2_waves() -> [PmcEvent; 1] {
    [PmcEvent {
        block_index: 0,
        event_id: SQ_WAVES,
        flags: 0,
        block_name: SQ,
    }]
}

fn waves() -> Vec<LegacyEvent> {
    vec![LegacyEvent {
        block_name: SQ,
        block_index: 0,
        counter_id: SQ_WAVES,
    }]
}

/// Starts counting on `device`, runs one kernel, and returns the legacy profile and its
/// (read, stop) packets; the stop status is that of filling the read packet.
fn legacy_window(device: u32) -> (Legacy, Option<Packet>, Packet, gpu::KernelRun<'static>) {
    let mut start = [0u8; 64];
    let legacy = Legacy::new(MI300X, waves(), &mut start).expect("legacy packets");
    let (mut read, mut stop) = ([0u8; 64], [0u8; 64]);
    // SAFETY: a prepared profile and writable packets.
    let read_status = unsafe { (lib().legacy_read)(&legacy.profile, &mut read) };
    // SAFETY: as above.
    assert_eq!(
        unsafe { (lib().legacy_stop)(&legacy.profile, &mut stop) },
        SUCCESS
    );
    let k = run(device, 1, "increment", 1 << 16, 50, 1_050);
    gpu::kernel_started(&k);
    execute(device, &start, 50);
    (legacy, (read_status == SUCCESS).then_some(read), stop, k)
}

fn values(legacy: &Legacy) -> Vec<u64> {
    legacy.samples().iter().map(|s| s.2).collect()
}

#[test]
fn rocm7_read_copies_and_stop_does_not() {
    in_child("rocm7_read_copies_and_stop_does_not", &[], || {
        let (legacy, read, stop, k) = legacy_window(20);
        execute(20, &stop, 1_050);
        assert_eq!(values(&legacy), vec![0; 32]);
        execute(20, &read.expect("read packet"), 1_100);
        assert_eq!(values(&legacy), truth(&k, "SQ_WAVES"));
    });
}

#[test]
fn rocm6_stop_copies() {
    in_child("rocm6_stop_copies", &[("RTL_SIM_AQLPROFILE", "6")], || {
        let (legacy, read, stop, k) = legacy_window(21);
        assert!(read.is_some());
        execute(21, &stop, 1_050);
        assert_eq!(values(&legacy), truth(&k, "SQ_WAVES"));
    });
}

#[test]
fn read_api_off_folds_read_into_stop() {
    in_child(
        "read_api_off_folds_read_into_stop",
        &[("AQLPROFILE_READ_API", "0")],
        || {
            let (legacy, read, stop, k) = legacy_window(22);
            assert!(read.is_none(), "the legacy read must fail");
            execute(22, &stop, 1_050);
            assert_eq!(values(&legacy), truth(&k, "SQ_WAVES"));
        },
    );
}

#[test]
fn nth_registration_fails() {
    in_child(
        "nth_registration_fails",
        &[("RTL_SIM_FAIL_AQLPROFILE_REGISTER", "2")],
        || {
            register("gfx942", 8, 32, 304, 1);
            let name = c"gfx942";
            let info = AgentInfo {
                gfxip: name.as_ptr(),
                xcc: 8,
                se: 32,
                cu: 304,
                sa_per_se: 1,
            };
            let mut handle = 0u64;
            // SAFETY: valid arguments.
            assert_eq!(unsafe { (lib().register_agent)(&mut handle, &info) }, ERROR);
            register("gfx942", 8, 32, 304, 1);
        },
    );
}

#[test]
fn nth_packet_creation_fails() {
    in_child(
        "nth_packet_creation_fails",
        &[("RTL_SIM_FAIL_AQLPROFILE_PACKETS", "1")],
        || {
            let agent = register("gfx90a", 1, 8, 104, 1);
            let events = [PmcEvent {
                block_index: 0,
                event_id: SQ_WAVES,
                flags: 0,
                block_name: SQ,
            }];
            assert_eq!(create(agent, &events).err(), Some(ERROR));
            assert!(create(agent, &events).is_ok());
            let mut start = [0u8; 64];
            assert!(Legacy::new(MI210, waves(), &mut start).is_ok());
        },
    );
}

/// The v2 BLOCK_ID answer for `block` on agent `agent`: (block id, instances).
fn block_id(agent: u64, block: &std::ffi::CStr) -> (u32, u32) {
    #[repr(C)]
    struct Query {
        name: *const std::ffi::c_char,
        id: u32,
        instance_count: u32,
    }
    let profile = PmcProfile {
        agent,
        events: std::ptr::null(),
        count: 0,
    };
    let mut query = Query {
        name: block.as_ptr(),
        id: 0,
        instance_count: 0,
    };
    const BLOCK_ID: u32 = 5;
    // SAFETY: a valid profile and query whose name outlives the call.
    let status = unsafe {
        (lib().get_pmc_info)(
            &profile,
            BLOCK_ID,
            &mut query as *mut Query as *mut std::ffi::c_void,
        )
    };
    assert_eq!(status, SUCCESS);
    (query.id, query.instance_count)
}

#[test]
fn agents_after_the_first_are_served_with_the_first_agents_tables() {
    in_child(
        "agents_after_the_first_are_served_with_the_first_agents_tables",
        &[],
        || {
            let mi300x = register("gfx942", 8, 32, 304, 1);
            let mi210 = register("gfx90a", 1, 8, 104, 1);
            let again = register("gfx942", 8, 32, 304, 1);
            assert_eq!((mi300x, mi210, again), (0, 1, 2));
            // gfx90a has 32 TCC and (104 CUs over 8 arrays) 14 TA instances; the tables of the
            // first agent, an MI300X, say 16 and 11.
            for agent in [mi300x, mi210, again] {
                assert_eq!(block_id(agent, c"TCC"), (TCC, 16));
                assert_eq!(block_id(agent, c"TA"), (TA, 11));
            }
            // Its packets are the MI300X's too: one SQ sample per XCC and shader engine.
            let session = create(mi210, &v2_waves()).expect("packets");
            let ids: Vec<u64> = samples(&session).iter().map(|s| s.1).collect();
            assert_eq!(ids, (0..32).collect::<Vec<u64>>());
        },
    );
}

#[test]
fn zeros_switch_makes_every_sample_of_both_apis_read_zero() {
    in_child(
        "zeros_switch_makes_every_sample_of_both_apis_read_zero",
        &[("RTL_SIM_AQLPROFILE_ZEROS", "1")],
        || {
            let agent = register("gfx942", 8, 32, 304, 1);
            let session = create(agent, &v2_waves()).expect("packets");
            let k = run(23, 1, "vadd", 1 << 16, 0, 10_000);
            count_around(23, &session, &k);
            assert_eq!(truth(&k, "SQ_WAVES").iter().sum::<u64>(), 1024);
            let got = samples(&session);
            assert_eq!(got.len(), 32);
            assert!(got.iter().all(|s| s.2 == 0), "{got:?}");

            let (legacy, read, _stop, k) = legacy_window(24);
            execute(24, &read.expect("read packet"), 1_100);
            assert_eq!(truth(&k, "SQ_WAVES").iter().sum::<u64>(), 1024);
            assert_eq!(values(&legacy), vec![0; 32]);
        },
    );
}
