//! The AQL packets that replace one application kernel dispatch.
//!
//! Timing only: the dispatch itself, its completion signal replaced by ours.
//!
//! Counters:
//! ```text
//! barrier-AND (waits for the previous counted dispatch on this GPU)   only if there is one
//! start PM4   (barrier bit)
//! the kernel  (barrier bit, completion signal replaced by ours)
//! read PM4    (barrier bit)                                            when aqlprofile has one
//! stop PM4    (barrier bit, completes `done`)
//! ```
//! The barrier bits keep the counting window around exactly this kernel within its queue; the
//! barrier-AND on the previous counted dispatch's `done` signal keeps counted kernels of
//! different queues on one GPU from overlapping, without ever blocking the submitting thread.

use crate::hsa::*;

/// The counter packets of one dispatch (headers and completion signals are set here).
#[derive(Debug, Clone, Copy)]
pub struct CounterPackets {
    /// aqlprofile's start packet.
    pub start: hsa_ext_amd_aql_pm4_packet_t,
    /// aqlprofile's read packet, if any.
    pub read: Option<hsa_ext_amd_aql_pm4_packet_t>,
    /// aqlprofile's stop packet.
    pub stop: hsa_ext_amd_aql_pm4_packet_t,
}

/// How one dispatch is wrapped.
#[derive(Debug, Clone, Copy)]
pub struct Wrapping {
    /// Our signal that replaces the application's completion signal.
    pub kernel_signal: hsa_signal_t,
    /// Counter collection: the packets, the signal the stop packet completes, and the previous
    /// counted dispatch's signal to wait for (0 for none).
    pub counters: Option<(CounterPackets, hsa_signal_t, hsa_signal_t)>,
}

const BARRIER: u16 = 1 << HSA_PACKET_HEADER_BARRIER;

fn system_fences(packet_type: u16, barrier: bool) -> u16 {
    packet_header(
        packet_type,
        barrier,
        HSA_FENCE_SCOPE_SYSTEM,
        HSA_FENCE_SCOPE_SYSTEM,
    )
}

fn pm4(mut packet: hsa_ext_amd_aql_pm4_packet_t, completion: hsa_signal_t) -> AqlPacket {
    packet.header = system_fences(HSA_PACKET_TYPE_VENDOR_SPECIFIC, true);
    packet.completion_signal = completion;
    AqlPacket::from(&packet)
}

/// Whether a handler call's packets go through untouched without looking at their dispatches:
/// when there is no kernel dispatch, or when several dispatches arrive in one call (a graph
/// replay looks exactly like that, and rewriting one breaks its dependencies) unless wrapping
/// batches was asked for.
pub fn passes_through(packets: &[AqlPacket], wrap_batches: bool) -> bool {
    let kernels = packets
        .iter()
        .filter(|p| p.packet_type() == HSA_PACKET_TYPE_KERNEL_DISPATCH)
        .count();
    kernels == 0 || (kernels > 1 && !wrap_batches)
}

/// Appends the packets replacing `kernel` to `out`.
pub fn wrap(kernel: &hsa_kernel_dispatch_packet_t, wrapping: &Wrapping, out: &mut Vec<AqlPacket>) {
    let mut kernel = *kernel;
    kernel.completion_signal = wrapping.kernel_signal;
    let Some((packets, done, previous)) = &wrapping.counters else {
        out.push(AqlPacket::from(&kernel));
        return;
    };
    if previous.handle != 0 {
        let barrier = hsa_barrier_and_packet_t {
            header: system_fences(HSA_PACKET_TYPE_BARRIER_AND, true),
            dep_signal: [
                *previous,
                hsa_signal_t::default(),
                hsa_signal_t::default(),
                hsa_signal_t::default(),
                hsa_signal_t::default(),
            ],
            ..Default::default()
        };
        out.push(AqlPacket::from(&barrier));
    }
    out.push(pm4(packets.start, hsa_signal_t::default()));
    kernel.header |= BARRIER;
    out.push(AqlPacket::from(&kernel));
    if let Some(read) = packets.read {
        out.push(pm4(read, hsa_signal_t::default()));
    }
    out.push(pm4(packets.stop, *done));
}

/// How one dispatch is replayed once per event group (see [`super::replay`]).
#[derive(Debug, Clone)]
pub struct ReplayWrapping {
    /// The previous counted dispatch's signal to wait for (0 for none).
    pub previous: hsa_signal_t,
    /// Completed when the queue reached the dispatch.
    pub ready: hsa_signal_t,
    /// Per pass: the gate it waits for, our kernel completion signal, the counter packets and
    /// the signal the stop packet completes.
    pub passes: Vec<(hsa_signal_t, hsa_signal_t, CounterPackets, hsa_signal_t)>,
    /// The gate after the last pass.
    pub last_gate: hsa_signal_t,
    /// Completed by the barrier after the last pass; the next counted dispatch waits for it.
    pub link: hsa_signal_t,
}

fn barrier_on(dependency: hsa_signal_t, completion: hsa_signal_t) -> AqlPacket {
    let barrier = hsa_barrier_and_packet_t {
        header: system_fences(HSA_PACKET_TYPE_BARRIER_AND, true),
        dep_signal: [
            dependency,
            hsa_signal_t::default(),
            hsa_signal_t::default(),
            hsa_signal_t::default(),
            hsa_signal_t::default(),
        ],
        completion_signal: completion,
        ..Default::default()
    };
    AqlPacket::from(&barrier)
}

/// Appends the packets replaying `kernel` once per pass to `out`.
pub fn wrap_replay(
    kernel: &hsa_kernel_dispatch_packet_t,
    wrapping: &ReplayWrapping,
    out: &mut Vec<AqlPacket>,
) {
    out.push(barrier_on(wrapping.previous, wrapping.ready));
    for (gate, kernel_signal, packets, done) in &wrapping.passes {
        out.push(barrier_on(*gate, hsa_signal_t::default()));
        let mut pass = *kernel;
        pass.completion_signal = *kernel_signal;
        pass.header |= BARRIER;
        out.push(pm4(packets.start, hsa_signal_t::default()));
        out.push(AqlPacket::from(&pass));
        if let Some(read) = packets.read {
            out.push(pm4(read, hsa_signal_t::default()));
        }
        out.push(pm4(packets.stop, *done));
    }
    out.push(barrier_on(wrapping.last_gate, wrapping.link));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel() -> hsa_kernel_dispatch_packet_t {
        hsa_kernel_dispatch_packet_t {
            header: packet_header(
                HSA_PACKET_TYPE_KERNEL_DISPATCH,
                false,
                HSA_FENCE_SCOPE_AGENT,
                HSA_FENCE_SCOPE_SYSTEM,
            ),
            setup: 1,
            workgroup_size_x: 64,
            workgroup_size_y: 1,
            workgroup_size_z: 1,
            grid_size_x: 1024,
            grid_size_y: 1,
            grid_size_z: 1,
            kernel_object: 0x1000,
            completion_signal: hsa_signal_t { handle: 0xAAA },
            ..Default::default()
        }
    }

    fn sig(handle: u64) -> hsa_signal_t {
        hsa_signal_t { handle }
    }

    fn pm4_body(tag: u16) -> hsa_ext_amd_aql_pm4_packet_t {
        let mut p = hsa_ext_amd_aql_pm4_packet_t::with_indirect_buffer(0x10_0000 * tag as u64, 16);
        p.header = 0x7777;
        p
    }

    #[test]
    fn batches_of_several_dispatches_pass_through_unless_asked() {
        let k = AqlPacket::from(&kernel());
        let barrier = AqlPacket::from(&hsa_barrier_and_packet_t {
            header: system_fences(HSA_PACKET_TYPE_BARRIER_AND, true),
            ..Default::default()
        });
        assert!(passes_through(&[barrier], false));
        assert!(!passes_through(&[k], false));
        assert!(!passes_through(&[barrier, k, barrier], false));
        assert!(passes_through(&[k, barrier, k], false));
        assert!(!passes_through(&[k, barrier, k], true));
        assert!(passes_through(&[], true));
    }

    #[test]
    fn timing_only_replaces_the_completion_signal_and_nothing_else() {
        let mut out = Vec::new();
        let w = Wrapping {
            kernel_signal: sig(0xB0B),
            counters: None,
        };
        wrap(&kernel(), &w, &mut out);
        assert_eq!(out.len(), 1);
        // SAFETY: a kernel dispatch packet.
        let k: hsa_kernel_dispatch_packet_t = unsafe { out[0].cast() };
        assert_eq!(k.completion_signal, sig(0xB0B));
        let original = AqlPacket::from(&kernel());
        assert_eq!(out[0].dwords[..14], original.dwords[..14]);
    }

    #[test]
    fn counters_surround_the_kernel_and_chain_on_the_previous_dispatch() {
        let packets = CounterPackets {
            start: pm4_body(1),
            read: Some(pm4_body(2)),
            stop: pm4_body(3),
        };
        let w = Wrapping {
            kernel_signal: sig(0xB0B),
            counters: Some((packets, sig(0xD0E), sig(0x9AE))),
        };
        let mut out = Vec::new();
        wrap(&kernel(), &w, &mut out);
        let types: Vec<u16> = out.iter().map(AqlPacket::packet_type).collect();
        assert_eq!(
            types,
            vec![
                HSA_PACKET_TYPE_BARRIER_AND,
                HSA_PACKET_TYPE_VENDOR_SPECIFIC,
                HSA_PACKET_TYPE_KERNEL_DISPATCH,
                HSA_PACKET_TYPE_VENDOR_SPECIFIC,
                HSA_PACKET_TYPE_VENDOR_SPECIFIC
            ]
        );
        assert!(out.iter().all(|p| header_barrier(p.header())));
        // SAFETY: packet types checked above.
        let (barrier, start, k, read, stop): (
            hsa_barrier_and_packet_t,
            hsa_ext_amd_aql_pm4_packet_t,
            hsa_kernel_dispatch_packet_t,
            hsa_ext_amd_aql_pm4_packet_t,
            hsa_ext_amd_aql_pm4_packet_t,
        ) = unsafe {
            (
                out[0].cast(),
                out[1].cast(),
                out[2].cast(),
                out[3].cast(),
                out[4].cast(),
            )
        };
        assert_eq!(barrier.dep_signal[0], sig(0x9AE));
        assert_eq!(barrier.dep_signal[1..], [sig(0); 4]);
        assert_eq!(barrier.completion_signal, sig(0));
        assert_eq!(start.indirect_buffer(), Some((0x10_0000, 16)));
        assert_eq!(read.indirect_buffer(), Some((0x20_0000, 16)));
        assert_eq!(stop.indirect_buffer(), Some((0x30_0000, 16)));
        assert_eq!(
            (start.completion_signal, read.completion_signal),
            (sig(0), sig(0))
        );
        assert_eq!(stop.completion_signal, sig(0xD0E));
        assert_eq!(k.completion_signal, sig(0xB0B));
        assert_eq!(header_acquire_scope(k.header), HSA_FENCE_SCOPE_AGENT);
        assert_eq!((k.grid_size_x, k.kernel_object), (1024, 0x1000));

        // The first counted dispatch on a GPU waits for nothing; no read packet, no read.
        let w = Wrapping {
            kernel_signal: sig(0xB0B),
            counters: Some((
                CounterPackets {
                    read: None,
                    ..packets
                },
                sig(0xD0E),
                sig(0),
            )),
        };
        let mut out = Vec::new();
        wrap(&kernel(), &w, &mut out);
        let types: Vec<u16> = out.iter().map(AqlPacket::packet_type).collect();
        assert_eq!(
            types,
            vec![
                HSA_PACKET_TYPE_VENDOR_SPECIFIC,
                HSA_PACKET_TYPE_KERNEL_DISPATCH,
                HSA_PACKET_TYPE_VENDOR_SPECIFIC
            ]
        );
    }

    #[test]
    fn replays_run_the_kernel_once_per_pass_between_gates() {
        let packets = CounterPackets {
            start: pm4_body(1),
            read: None,
            stop: pm4_body(3),
        };
        let w = ReplayWrapping {
            previous: sig(0x9AE),
            ready: sig(0x1),
            passes: vec![
                (sig(0x10), sig(0x20), packets, sig(0x30)),
                (sig(0x11), sig(0x21), packets, sig(0x31)),
            ],
            last_gate: sig(0x12),
            link: sig(0x40),
        };
        let mut out = Vec::new();
        wrap_replay(&kernel(), &w, &mut out);
        let types: Vec<u16> = out.iter().map(AqlPacket::packet_type).collect();
        let pass = [
            HSA_PACKET_TYPE_BARRIER_AND,
            HSA_PACKET_TYPE_VENDOR_SPECIFIC,
            HSA_PACKET_TYPE_KERNEL_DISPATCH,
            HSA_PACKET_TYPE_VENDOR_SPECIFIC,
        ];
        let mut expected = vec![HSA_PACKET_TYPE_BARRIER_AND];
        expected.extend(pass);
        expected.extend(pass);
        expected.push(HSA_PACKET_TYPE_BARRIER_AND);
        assert_eq!(types, expected);
        assert!(out.iter().all(|p| header_barrier(p.header())));
        // SAFETY: packet types checked above.
        let barriers: Vec<hsa_barrier_and_packet_t> = [0, 1, 5, 9]
            .iter()
            .map(|&i| unsafe { out[i].cast() })
            .collect();
        let deps: Vec<(u64, u64)> = barriers
            .iter()
            .map(|b| (b.dep_signal[0].handle, b.completion_signal.handle))
            .collect();
        assert_eq!(deps, [(0x9AE, 0x1), (0x10, 0), (0x11, 0), (0x12, 0x40)]);
        // SAFETY: packet types checked above.
        let (k0, k1, stop1): (
            hsa_kernel_dispatch_packet_t,
            hsa_kernel_dispatch_packet_t,
            hsa_ext_amd_aql_pm4_packet_t,
        ) = unsafe { (out[3].cast(), out[7].cast(), out[8].cast()) };
        assert_eq!(
            (k0.completion_signal, k1.completion_signal),
            (sig(0x20), sig(0x21))
        );
        assert_eq!(stop1.completion_signal, sig(0x31));
        assert_eq!((k1.grid_size_x, k1.kernel_object), (1024, 0x1000));
    }
}
