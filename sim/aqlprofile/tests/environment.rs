//! Settings read from the environment: the ROCm 6/7 stop-versus-read split of the legacy API,
//! `AQLPROFILE_READ_API=0`, and fault injection. Each test runs in its own process.

mod common;

use common::*;

const SQ_WAVES: u32 = 4;

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
