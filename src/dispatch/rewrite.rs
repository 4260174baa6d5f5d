//! The AQL packets that replace one application kernel dispatch.
//!
//! Timing only: the dispatch itself, its completion signal replaced by ours.
//!
//! Counters:
//! ```text
//! barrier-AND (waits for the previous counted dispatch on this GPU    only if there is one
//!              and for the dispatches not counted submitted since)
//! start PM4   (barrier bit)
//! the kernel  (barrier bit, completion signal replaced by ours)
//! read PM4    (barrier bit)                                            when aqlprofile has one
//! stop PM4    (barrier bit, completes `done`)
//! ```
//! The barrier bits keep the counting window around exactly this kernel within its queue; the
//! barrier-AND on the previous counted dispatch's `done` signal keeps counted kernels of
//! different queues on one GPU from overlapping, without ever blocking the submitting thread.
//!
//! A dispatch that is not counted on a GPU that collects counters (left out by the kernel
//! filters) keeps its packet, behind a barrier-AND on the last counted dispatch's `done` signal
//! when that one may still run, and it decrements a signal counting the dispatches not counted
//! since that one (as its completion signal when it has none; else the completion worker does,
//! after completing the application's signal in place of the kernel); the next counted dispatch
//! waits for that count to reach 0. So no dispatch overlaps a counted one, and dispatches not
//! counted still overlap each other.

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

/// What a counted dispatch waits for before its counting window opens: the previous counted
/// dispatch's `done` signal and the count of the dispatches not counted since (0 for none).
pub type CountedAfter = [hsa_signal_t; 2];

/// How one dispatch is wrapped.
#[derive(Debug, Clone, Copy)]
pub struct Wrapping {
    /// Our signal that replaces the application's completion signal.
    pub kernel_signal: hsa_signal_t,
    /// Counter collection, when collected.
    pub counters: Option<CounterWrapping>,
}

/// How a counted dispatch is wrapped: its packet set's packets, the signal the stop packet
/// completes, and what to wait for first.
pub type CounterWrapping = (CounterTemplate, hsa_signal_t, CountedAfter);

/// How a dispatch that is not counted is kept out of the counting windows of a GPU.
#[derive(Debug, Clone, Copy)]
pub struct Uncounted {
    /// The last counted dispatch's `done` signal, to wait for (0 for none, or done already).
    pub after: hsa_signal_t,
    /// The signal counting the dispatches not counted since that one, to decrement at the end.
    pub running: hsa_signal_t,
    /// Our signal replacing the application's completion signal (0 for none): the completion
    /// worker completes the application's after it, and decrements `running` itself.
    pub forwarded: hsa_signal_t,
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

/// The kernel dispatches among a handler call's packets (several for a batch, such as a graph
/// launch).
pub fn kernel_dispatches(packets: &[AqlPacket]) -> usize {
    packets
        .iter()
        .filter(|p| p.packet_type() == HSA_PACKET_TYPE_KERNEL_DISPATCH)
        .count()
}

/// A barrier-AND packet waiting for `dependencies` (0 for none), with the barrier bit or not,
/// completing `completion` (0 for none).
fn barrier_and(
    dependencies: &[hsa_signal_t],
    barrier: bool,
    completion: hsa_signal_t,
) -> AqlPacket {
    let mut dep_signal = [hsa_signal_t::default(); 5];
    for (slot, dependency) in dep_signal.iter_mut().zip(dependencies) {
        *slot = *dependency;
    }
    AqlPacket::from(&hsa_barrier_and_packet_t {
        header: system_fences(HSA_PACKET_TYPE_BARRIER_AND, barrier),
        dep_signal,
        completion_signal: completion,
        ..Default::default()
    })
}

/// Appends the packets of a dispatch that is not counted to `out`: its own packet, after the
/// last counted dispatch, decrementing the count of those not counted when it ends.
///
/// A kernel without a completion signal is given the count as one. One with the application's
/// signal has it replaced by ours when `forwarded` is set (the completion worker then completes
/// both); else it keeps it, and a barrier packet with the barrier bit (which waits for the
/// kernel, as for every earlier packet of its queue, so later packets of the queue no longer
/// overlap it) decrements the count after it.
pub fn order_uncounted(packet: &AqlPacket, uncounted: &Uncounted, out: &mut Vec<AqlPacket>) {
    if uncounted.after.handle != 0 {
        out.push(barrier_and(
            &[uncounted.after],
            false,
            hsa_signal_t::default(),
        ));
    }
    // SAFETY: only kernel dispatch packets are given.
    let mut kernel: hsa_kernel_dispatch_packet_t = unsafe { packet.cast() };
    kernel.completion_signal = match (kernel.completion_signal.handle, uncounted.forwarded) {
        (0, _) => uncounted.running,
        (_, ours) if ours.handle != 0 => ours,
        _ => {
            out.push(*packet);
            out.push(barrier_and(&[], true, uncounted.running));
            return;
        }
    };
    out.push(AqlPacket::from(&kernel));
}

/// Appends the packets replacing `kernel` to `out`.
pub fn wrap(kernel: &hsa_kernel_dispatch_packet_t, wrapping: &Wrapping, out: &mut Vec<AqlPacket>) {
    let Some((template, done, after)) = &wrapping.counters else {
        let mut kernel = *kernel;
        kernel.completion_signal = wrapping.kernel_signal;
        out.push(AqlPacket::from(&kernel));
        return;
    };
    let mut template = *template;
    out.extend(wait_first(after));
    out.extend_from_slice(template.fill(kernel, wrapping.kernel_signal, *done));
}

/// The barrier-AND a counted dispatch waits behind, unless it waits for nothing.
fn wait_first(after: &CountedAfter) -> Option<AqlPacket> {
    let waits = after.iter().any(|s| s.handle != 0);
    waits.then(|| barrier_and(after, true, hsa_signal_t::default()))
}

/// A counted dispatch's packets, built once per packet set: start, a slot for the kernel, read
/// (when aqlprofile has one) and stop, their headers set. Each dispatch fills in its kernel and
/// the stop packet's signal ([`CounterTemplate::fill`]), so that a dispatch copies one packet
/// instead of building four.
#[derive(Debug, Clone, Copy, Default)]
pub struct CounterTemplate {
    packets: [AqlPacket; 4],
    len: usize,
}

/// Where the kernel goes in a [`CounterTemplate`].
const KERNEL_SLOT: usize = 1;

impl CounterTemplate {
    /// The template of aqlprofile's `packets`.
    pub fn new(packets: &CounterPackets) -> CounterTemplate {
        let none = hsa_signal_t::default();
        let mut template = CounterTemplate {
            packets: [pm4(packets.start, none); 4],
            len: 0,
        };
        let rest = packets.read.iter().chain([&packets.stop]);
        for (slot, packet) in template.packets[KERNEL_SLOT + 1..].iter_mut().zip(rest) {
            *slot = pm4(*packet, none);
            template.len += 1;
        }
        template.len += KERNEL_SLOT + 1;
        template
    }

    /// The packets around `kernel`, whose completion signal becomes `kernel_signal`, with the
    /// stop packet completing `done`.
    #[inline]
    pub fn fill(
        &mut self,
        kernel: &hsa_kernel_dispatch_packet_t,
        kernel_signal: hsa_signal_t,
        done: hsa_signal_t,
    ) -> &[AqlPacket] {
        let mut kernel = *kernel;
        kernel.completion_signal = kernel_signal;
        kernel.header |= BARRIER;
        self.packets[KERNEL_SLOT] = AqlPacket::from(&kernel);
        self.packets[self.len - 1].set_completion_signal(done);
        &self.packets[..self.len]
    }
}

/// The packets of a counted dispatch: `counted` (from [`CounterTemplate::fill`]) as they are
/// when it waits for nothing first, else after a barrier-AND on `after`, in `out`.
#[inline]
pub fn wrap_counted<'a>(
    counted: &'a [AqlPacket],
    after: &CountedAfter,
    out: &'a mut Vec<AqlPacket>,
) -> &'a [AqlPacket] {
    let Some(barrier) = wait_first(after) else {
        return counted;
    };
    out.clear();
    out.push(barrier);
    out.extend_from_slice(counted);
    out
}

/// How one dispatch is replayed once per event group (see [`super::replay`]).
#[derive(Debug, Clone)]
pub struct ReplayWrapping {
    /// What to wait for first.
    pub after: CountedAfter,
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

/// Appends the packets replaying `kernel` once per pass to `out`.
pub fn wrap_replay(
    kernel: &hsa_kernel_dispatch_packet_t,
    wrapping: &ReplayWrapping,
    out: &mut Vec<AqlPacket>,
) {
    out.push(barrier_and(&wrapping.after, true, wrapping.ready));
    for (gate, kernel_signal, packets, done) in &wrapping.passes {
        out.push(barrier_and(&[*gate], true, hsa_signal_t::default()));
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
    out.push(barrier_and(&[wrapping.last_gate], true, wrapping.link));
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
    fn kernel_dispatches_are_counted_among_the_packets() {
        let k = AqlPacket::from(&kernel());
        let barrier = barrier_and(&[], true, sig(0));
        assert_eq!(kernel_dispatches(&[barrier]), 0);
        assert_eq!(kernel_dispatches(&[k]), 1);
        assert_eq!(kernel_dispatches(&[barrier, k, barrier]), 1);
        assert_eq!(kernel_dispatches(&[k, barrier, k]), 2);
        assert_eq!(kernel_dispatches(&[]), 0);
    }

    #[test]
    fn dispatches_not_counted_wait_for_the_last_counted_one_and_count_down_when_they_end() {
        let uncounted = Uncounted {
            after: sig(0xD0E),
            running: sig(0xE0),
            forwarded: sig(0),
        };
        // Without a signal of its own, the kernel decrements the count itself.
        let mut bare = kernel();
        bare.completion_signal = sig(0);
        let mut out = Vec::new();
        order_uncounted(&AqlPacket::from(&bare), &uncounted, &mut out);
        let types: Vec<u16> = out.iter().map(AqlPacket::packet_type).collect();
        assert_eq!(
            types,
            [HSA_PACKET_TYPE_BARRIER_AND, HSA_PACKET_TYPE_KERNEL_DISPATCH]
        );
        // SAFETY: packet types checked above.
        let (wait, k): (hsa_barrier_and_packet_t, hsa_kernel_dispatch_packet_t) =
            unsafe { (out[0].cast(), out[1].cast()) };
        assert_eq!(
            wait.dep_signal,
            [sig(0xD0E), sig(0), sig(0), sig(0), sig(0)]
        );
        assert_eq!(wait.completion_signal, sig(0));
        assert!(
            !header_barrier(wait.header),
            "other packets of the queue may still run"
        );
        assert_eq!(k.completion_signal, sig(0xE0));
        assert_eq!(k.header, bare.header);
        assert_eq!(out[1].dwords[..14], AqlPacket::from(&bare).dwords[..14]);

        // With the application's signal: the packet untouched, a barrier after it counts down;
        // nothing to wait for once the last counted dispatch is done.
        let mut out = Vec::new();
        let none_before = Uncounted {
            after: sig(0),
            ..uncounted
        };
        order_uncounted(&AqlPacket::from(&kernel()), &none_before, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].dwords, AqlPacket::from(&kernel()).dwords);
        // SAFETY: a barrier-AND packet, checked below.
        let after: hsa_barrier_and_packet_t = unsafe { out[1].cast() };
        assert_eq!(out[1].packet_type(), HSA_PACKET_TYPE_BARRIER_AND);
        assert!(header_barrier(after.header), "it waits for the kernel");
        assert_eq!(after.dep_signal, [sig(0); 5]);
        assert_eq!(after.completion_signal, sig(0xE0));

        // Forwarded: the application's signal replaced by ours, nothing after the kernel.
        let mut out = Vec::new();
        let forwarded = Uncounted {
            forwarded: sig(0xF0),
            ..none_before
        };
        order_uncounted(&AqlPacket::from(&kernel()), &forwarded, &mut out);
        assert_eq!(out.len(), 1);
        // SAFETY: a kernel dispatch packet.
        let k: hsa_kernel_dispatch_packet_t = unsafe { out[0].cast() };
        assert_eq!(k.completion_signal, sig(0xF0));
        assert_eq!(out[0].dwords[..14], AqlPacket::from(&kernel()).dwords[..14]);
        // A kernel without a signal still counts down itself.
        let mut out = Vec::new();
        order_uncounted(&AqlPacket::from(&bare), &forwarded, &mut out);
        // SAFETY: a kernel dispatch packet.
        let k: hsa_kernel_dispatch_packet_t = unsafe { out[0].cast() };
        assert_eq!((out.len(), k.completion_signal), (1, sig(0xE0)));
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
            counters: Some((
                CounterTemplate::new(&packets),
                sig(0xD0E),
                [sig(0x9AE), sig(0xE0)],
            )),
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
        assert_eq!(barrier.dep_signal[..2], [sig(0x9AE), sig(0xE0)]);
        assert_eq!(barrier.dep_signal[2..], [sig(0); 3]);
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
                CounterTemplate::new(&CounterPackets {
                    read: None,
                    ..packets
                }),
                sig(0xD0E),
                [sig(0), sig(0)],
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
    fn a_set_template_is_refilled_per_dispatch_and_written_as_it_is_unless_it_waits() {
        let packets = CounterPackets {
            start: pm4_body(1),
            read: Some(pm4_body(2)),
            stop: pm4_body(3),
        };
        let mut template = CounterTemplate::new(&packets);
        for (done, grid) in [(0xD0E, 1024), (0xD1E, 2048)] {
            let mut k = kernel();
            k.grid_size_x = grid;
            let mut out = Vec::new();
            let filled = template.fill(&k, sig(0xB0B), sig(done)).to_vec();
            // A template refilled holds nothing of the dispatch before: it equals a new one's.
            let expected = CounterTemplate::new(&packets)
                .fill(&k, sig(0xB0B), sig(done))
                .to_vec();
            assert_eq!(filled.len(), 4);
            let dwords = |p: &[AqlPacket]| p.iter().map(|p| p.dwords).collect::<Vec<_>>();
            assert_eq!(dwords(&filled), dwords(&expected));
            // SAFETY: a kernel dispatch packet in the kernel's slot.
            let written: hsa_kernel_dispatch_packet_t = unsafe { filled[1].cast() };
            assert_eq!(
                (
                    written.grid_size_x,
                    written.completion_signal,
                    filled[3].completion_signal()
                ),
                (grid, sig(0xB0B), sig(done))
            );
            let direct = wrap_counted(&filled, &[sig(0); 2], &mut out);
            assert_eq!(dwords(direct), dwords(&filled));
            assert!(
                out.is_empty(),
                "nothing to wait for: the set's packets as they are"
            );
            let after = [sig(0x9AE), sig(0)];
            let waiting = wrap_counted(&filled, &after, &mut out).to_vec();
            assert_eq!(waiting.len(), 5);
            assert_eq!(waiting[0].packet_type(), HSA_PACKET_TYPE_BARRIER_AND);
            assert_eq!(dwords(&waiting[1..]), dwords(&filled));
        }
        // Without a read packet: start, kernel, stop.
        let mut legacy = CounterTemplate::new(&CounterPackets {
            read: None,
            ..packets
        });
        let filled = legacy.fill(&kernel(), sig(0xB0B), sig(0xD0E));
        let types: Vec<u16> = filled.iter().map(AqlPacket::packet_type).collect();
        assert_eq!(
            types,
            [
                HSA_PACKET_TYPE_VENDOR_SPECIFIC,
                HSA_PACKET_TYPE_KERNEL_DISPATCH,
                HSA_PACKET_TYPE_VENDOR_SPECIFIC
            ]
        );
        assert_eq!(filled[2].completion_signal(), sig(0xD0E));
        assert_eq!(filled[0].completion_signal(), sig(0));
    }

    #[test]
    fn replays_run_the_kernel_once_per_pass_between_gates() {
        let packets = CounterPackets {
            start: pm4_body(1),
            read: None,
            stop: pm4_body(3),
        };
        let w = ReplayWrapping {
            after: [sig(0x9AE), sig(0xE0)],
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
        let deps: Vec<(u64, u64, u64)> = barriers
            .iter()
            .map(|b| {
                let [first, second, ..] = b.dep_signal;
                (first.handle, second.handle, b.completion_signal.handle)
            })
            .collect();
        assert_eq!(
            deps,
            [
                (0x9AE, 0xE0, 0x1),
                (0x10, 0, 0),
                (0x11, 0, 0),
                (0x12, 0, 0x40)
            ]
        );
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
