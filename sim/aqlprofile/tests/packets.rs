//! The command buffers the library writes, dword for dword, for a few requests per
//! architecture: the opcodes, register offsets, select values, order and buffer sizes of AMD's
//! aqlprofile for the gfx9 family (`shared/reference/aqlprofile-pm4.md` §1.3, §2-§5).

mod common;

use common::*;

const SQ_WAVES: u32 = 4;
const ATC: u32 = 21;
const GCEA: u32 = 23;
const RPB: u32 = 24;

fn event(block_name: u32, block_index: u32, event_id: u32, flags: u32) -> PmcEvent {
    PmcEvent {
        block_index,
        event_id,
        flags,
        block_name,
    }
}

/// The dwords a PM4-IB packet executes.
fn ib(packet: &Packet) -> Vec<u32> {
    let (addr, size) = gpu::pm4::parse_ib_packet(packet).expect("a PM4-IB packet");
    // SAFETY: the library's command buffer, alive while the session is.
    unsafe { std::slice::from_raw_parts(addr as *const u32, size as usize) }.to_vec()
}

/// The (register, value) of every SET_UCONFIG_REG, in order.
fn uconfig_writes(dwords: &[u32]) -> Vec<(u32, u32)> {
    gpu::gfx9::packets(dwords)
        .expect("type-3 packets")
        .iter()
        .filter(|p| p.opcode == gpu::gfx9::op::SET_UCONFIG_REG)
        .map(|p| (p.body[0] + 0xC000, p.body[1]))
        .collect()
}

const BROADCAST: u32 = 0xE000_0000;
const UCONFIG: u32 = 0xC001_7900;
const EVENT_WRITE: [u32; 2] = [0xC000_4600, 0x407];

#[test]
fn gfx942_sq_waves_and_grbm_count_are_programmed_read_and_stopped_as_amds_library_does() {
    // Each architecture must be the first agent registered in its process.
    in_child(
        "gfx942_sq_waves_and_grbm_count_are_programmed_read_and_stopped_as_amds_library_does",
        &[],
        || {
            let agent = register("gfx942", 8, 32, 304, 1);
            take_allocations();
            let session =
                create(agent, &[event(SQ, 0, SQ_WAVES, 0), event(GRBM, 0, 0, 0)]).expect("packets");
            // Output: 8 + (4 SQ + 1 GRBM samples) x 8 XCCs x 8 bytes; commands: read 738, start 43
            // and stop 11 dwords, each section 256-byte aligned.
            assert_eq!(take_allocations(), vec![328, 3072 + 256 + 256]);
            let start = ib(&session.packets.start);
            let mut expected = EVENT_WRITE.to_vec();
            for (reg, value) in [
                (0x200, BROADCAST),
                (0x1CBF, 1),
                (0x1808, 0),
                (0x200, BROADCAST),
                (0x19C0, 0x0F0F_F004),
                (0x19E1, 0xFFFF_FFFF),
                (0x19E0, 0xFFFF_0057),
                (0x200, BROADCAST),
                (0x1840, 0),
                (0x200, BROADCAST),
            ] {
                expected.extend([UCONFIG, reg, value]);
            }
            expected.extend([0xC001_7600, 0x20B, 1]);
            expected.extend([UCONFIG, 0x1808, 0, UCONFIG, 0x1808, 1]);
            expected.extend(EVENT_WRITE);
            assert_eq!(start, expected);
            assert_eq!(start.len(), 43);

            let read = ib(&session.packets.read);
            assert_eq!(read.len(), 738);
            assert_eq!(&read[..3], &[UCONFIG, 0x1808, 0x401]);
            // Each XCC's read is one PRED_EXEC span of 89 dwords.
            for x in 0..8 {
                let at = 3 + 91 * x;
                assert_eq!(
                    &read[at..at + 2],
                    &[0xC000_2300, (1 << x) << 24 | 89],
                    "XCC {x}"
                );
            }
            // XCC 0: broadcast, wait idle, SQ shader engine 0 LO then HI to the buffer's first slot.
            assert_eq!(
                &read[5..10],
                &[UCONFIG, 0x200, BROADCAST, 0xC000_4600, 0x407]
            );
            assert_eq!(&read[13..16], &[UCONFIG, 0x200, 0x6000_0000]);
            assert_eq!(&read[16..19], &[0xC004_4000, 0x0200_2500, 0xD1C0]);
            assert_eq!(&read[22..25], &[0xC004_4000, 0x0200_2500, 0xD1C1]);
            let lo = u64::from(read[20]) | u64::from(read[21]) << 32;
            let hi = u64::from(read[26]) | u64::from(read[27]) << 32;
            assert_eq!(hi, lo + 4);
            // The read ends with one ACQUIRE_MEM over the 320 bytes written.
            assert_eq!(&read[731..733], &[0xC005_5800, 0x28C4_0000]);
            assert_eq!(read[737], 0x10);

            let stop = ib(&session.packets.stop);
            let mut expected = vec![
                UCONFIG, 0x200, BROADCAST, UCONFIG, 0x1808, 2, UCONFIG, 0x1CBF, 0,
            ];
            expected.extend(EVENT_WRITE);
            assert_eq!(stop, expected);
        },
    );
}

#[test]
fn gfx90a_reads_one_xcc_without_predication_and_writes_gcea_through_the_perfcounter_space() {
    // Each architecture must be the first agent registered in its process.
    in_child(
        "gfx90a_reads_one_xcc_without_predication_and_writes_gcea_through_the_perfcounter_space",
        &[],
        || {
            let agent = register("gfx90a", 1, 8, 104, 1);
            take_allocations();
            let session =
                create(agent, &[event(SQ, 0, SQ_WAVES, 0), event(GRBM, 0, 0, 0)]).expect("packets");
            assert_eq!(take_allocations(), vec![80, 768 + 256 + 256]);
            let read = ib(&session.packets.read);
            assert_eq!(read.len(), 159);
            assert!(!read.chunks(1).any(|d| d[0] == 0xC000_2300), "no PRED_EXEC");

            let gcea = create(agent, &[event(GCEA, 5, 7, 0)]).expect("packets");
            let start = ib(&gcea.packets.start);
            // GCEA's CFG (0x2AFE) lies in the privileged config space: an immediate COPY_DATA into the
            // perfcounter space on a one-XCC agent.
            let cfg = start
                .windows(6)
                .find(|w| w[0] == 0xC004_4000 && w[4] == 0x2AFE)
                .expect("a COPY_DATA to GCEA's CFG");
            assert_eq!(cfg, &[0xC004_4000, 0x405, 0x1000_0007, 0, 0x2AFE, 0]);
        },
    );
}

#[test]
fn gfx942_writes_gcea_as_a_register_and_reaches_aid_blocks_through_smn_addresses() {
    // Each architecture must be the first agent registered in its process.
    in_child(
        "gfx942_writes_gcea_as_a_register_and_reaches_aid_blocks_through_smn_addresses",
        &[],
        || {
            let agent = register("gfx942", 8, 32, 304, 1);
            let session =
                create(agent, &[event(GCEA, 5, 7, 0), event(RPB, 3, 2, 0)]).expect("packets");
            let start = ib(&session.packets.start);
            assert!(start
                .windows(6)
                .any(|w| w == [0xC004_4000, 0x5, 0x1000_0007, 0, 0x2AFE, 0]));
            // RPB instance 3 lives on AID 3: bit 32 set, AID in bits 31:30.
            assert!(start
                .windows(6)
                .any(|w| w == [0xC004_4000, 0x5, 0x1000_0002, 0, 0xC000_0D03, 1]));
            // Stop clears each AID event's RSLT_CNTL twice, each under its own PRED_EXEC.
            let stop = ib(&session.packets.stop);
            let clear = |aid: u32, reg: u32| {
                vec![
                    0xC000_2300,
                    1 << 24 | 6,
                    0xC004_4000,
                    0x5,
                    0,
                    0,
                    aid << 30 | reg,
                    1,
                ]
            };
            let mut expected = vec![UCONFIG, 0x200, BROADCAST];
            for _ in 0..2 {
                expected.extend(clear(3, 0x0D07));
            }
            expected.extend([UCONFIG, 0x1808, 2, UCONFIG, 0x1CBF, 0]);
            expected.extend(EVENT_WRITE);
            assert_eq!(stop, expected);
            let atc = create(agent, &[event(ATC, 2, 3, 0)]).expect("packets");
            let read = ib(&atc.packets.read);
            // No CP-controlled block: CP_PERFMON_CNTL is left alone. ATC's read selects slot 0 through
            // RSLT_CNTL on AID 2, under a PRED_EXEC for XCC 0.
            assert_eq!(&read[0..2], &[0xC000_2300, 1 << 24 | 18]);
            assert_eq!(&read[2..8], &[0xC004_4000, 0x5, 0, 0, 0x8000_0C42, 1]);
            assert_eq!(&read[8..12], &[0xC004_4000, 0x0200_2500, 0x8000_0C43, 1]);
        },
    );
}

/// The SQ selects of LOW_RES-accumulated event 4 and HIGH_RES-accumulated event 14: each base
/// event in the slot before its accumulator, whose select is `ACCUM_PREV` (1) or the
/// architecture's high-resolution id.
fn accumulated_selects(arch: &str, (xcc, se, cu): (u32, u32, u32), hi: u32) {
    let agent = register(arch, xcc, se, cu, 1);
    let session = create(agent, &[event(SQ, 0, 4, 1), event(SQ, 0, 14, 2)]).expect("packets");
    let start = ib(&session.packets.start);
    let selects: Vec<(u32, u32)> = uconfig_writes(&start)
        .into_iter()
        .filter(|(reg, _)| (0xD9C0..0xD9D0).contains(reg))
        .map(|(reg, value)| (reg - 0xD9C0, value))
        .collect();
    assert_eq!(
        selects,
        vec![
            (0, 0x0F0F_F004),
            (1, 0x0F0F_F001),
            (2, 0x0F0F_F00E),
            (3, 0x0F0F_F000 | hi)
        ],
        "{arch}"
    );
}

#[test]
fn gfx90a_accumulated_sq_events_select_accum_prev_after_their_base_event() {
    let name = "gfx90a_accumulated_sq_events_select_accum_prev_after_their_base_event";
    in_child(name, &[], || {
        accumulated_selects("gfx90a", (1, 8, 104), 185)
    });
}

#[test]
fn gfx942_accumulated_sq_events_select_accum_prev_after_their_base_event() {
    let name = "gfx942_accumulated_sq_events_select_accum_prev_after_their_base_event";
    in_child(name, &[], || {
        accumulated_selects("gfx942", (8, 32, 304), 184)
    });
}

#[test]
fn gfx950_accumulated_sq_events_select_accum_prev_after_their_base_event() {
    let name = "gfx950_accumulated_sq_events_select_accum_prev_after_their_base_event";
    in_child(name, &[], || {
        accumulated_selects("gfx950", (8, 32, 256), 200)
    });
}

#[test]
fn texture_blocks_turn_on_every_sq_stage_and_sx_starts_clean() {
    // Each architecture must be the first agent registered in its process.
    in_child(
        "texture_blocks_turn_on_every_sq_stage_and_sx_starts_clean",
        &[],
        || {
            let agent = register("gfx942", 8, 32, 304, 1);
            const SX: u32 = 9;
            let session =
                create(agent, &[event(TCC, 3, 5, 0), event(SX, 0, 9, 0)]).expect("packets");
            let start = ib(&session.packets.start);
            assert_eq!(&start[11..14], &[UCONFIG, 0x19E0, 0xFFFF_007F]);
            // TCC instance 3, select 0 = event 5.
            assert!(start
                .windows(6)
                .any(|w| w == [UCONFIG, 0x200, 0xA000_0003, UCONFIG, 0x1B80, 5]));
            // SX: its four LO/HI pairs are zeroed, and its select is written as 0 whatever the event.
            let sx_zeroes: Vec<(u32, u32)> = uconfig_writes(&start)
                .into_iter()
                .filter(|(reg, _)| (0xD240..0xD248).contains(reg))
                .collect();
            assert_eq!(
                sx_zeroes,
                (0xD240..0xD248).map(|r| (r, 0)).collect::<Vec<_>>()
            );
            assert!(start.windows(3).any(|w| w == [UCONFIG, 0x1A40, 0]));
        },
    );
}
