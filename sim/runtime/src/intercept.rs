//! Intercept queues with ROCr's semantics: the doorbell of the proxy ring runs the registered
//! handlers on the ringing thread under a per-queue mutex, the last registered first; each
//! handler's `writer` passes packets to the next older handler, and the innermost writer places
//! them on the hardware queue (intercept markers call their callback instead). Handlers see one
//! packet per call (`RTL_SIM_INTERCEPT=packet`, ROCm ≤ 6.3) or every new packet of a doorbell
//! (`batch`, ROCm 7). After the handlers return the proxy slots are INVALID again.

use crate::ffi::guard;
use crate::hsa::*;
use crate::queues::{lookup, QueueObj};
use crate::settings::{settings, InterceptMode};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::Ordering::SeqCst;

/// Handler callback and its data pointer.
type Handler = (
    unsafe extern "C" fn(
        *const c_void,
        u64,
        u64,
        *mut c_void,
        hsa_amd_queue_intercept_packet_writer,
    ),
    usize,
);

/// The handlers of an intercept queue and its batch staging buffer.
pub struct InterceptState {
    handlers: Vec<Handler>,
    staging: Vec<AqlPacket>,
}

impl InterceptState {
    /// State for a queue of `size` slots.
    pub fn new(size: usize) -> InterceptState {
        InterceptState {
            handlers: Vec::new(),
            staging: vec![AqlPacket::default(); size],
        }
    }
}

/// The handler chain the current thread is running (set while handlers run).
#[derive(Clone, Copy)]
struct Context {
    queue: *const QueueObj,
    handlers: *const Handler,
    /// Handlers below the one running; 0 = the writer submits to hardware.
    level: usize,
    user_pkt_index: u64,
}

thread_local! {
    static CURRENT: Cell<Option<Context>> = const { Cell::new(None) };
}

/// Runs handler `level - 1` (or submits, at level 0) on `pkts`.
fn call_level(ctx: Context, pkts: *const c_void, count: u64) {
    if ctx.level == 0 {
        // SAFETY: the context's queue is a live intercept queue (its mutex is held).
        if let Some((hw, _)) = unsafe { &*ctx.queue }.intercept() {
            submit(hw, pkts as *const AqlPacket, count);
        }
        return;
    }
    // SAFETY: `handlers` points at `level` or more handlers in the locked state.
    let (handler, data) = unsafe { *ctx.handlers.add(ctx.level - 1) };
    let inner = Context {
        level: ctx.level - 1,
        ..ctx
    };
    let previous = CURRENT.with(|c| c.replace(Some(inner)));
    // SAFETY: a C handler registered by a tool, called as ROCr calls it.
    unsafe {
        handler(
            pkts,
            count,
            ctx.user_pkt_index,
            data as *mut c_void,
            Some(writer),
        )
    };
    CURRENT.with(|c| c.set(previous));
}

/// The writer passed to handlers: forwards to the next older handler or the hardware queue.
unsafe extern "C" fn writer(pkts: *const c_void, pkt_count: u64) {
    guard((), || match CURRENT.with(|c| c.get()) {
        Some(ctx) if !pkts.is_null() || pkt_count == 0 => call_level(ctx, pkts, pkt_count),
        _ => eprintln!(
            "rtl-sim: an intercept writer was called outside its handler; packets dropped"
        ),
    })
}

fn is_marker(packet: &AqlPacket) -> bool {
    is_marker_dword(packet.dwords[0])
}

/// Whether a packet whose first dword is `dword` is an intercept marker.
fn is_marker_dword(dword: u32) -> bool {
    header_type(dword as u16) == HSA_PACKET_TYPE_VENDOR_SPECIFIC
        && (dword >> 16) as u8 == AMD_AQL_FORMAT_INTERCEPT_MARKER
}

/// Places packets on a hardware queue (markers call their callback with the index of the
/// packet that follows), then rings its doorbell once.
///
/// Packets without markers that fit in the ring take their slots with one bump of the write
/// index and are published in order from where the writer's caller has them; otherwise one at
/// a time. Either way each header is published after its body, in packet order.
fn submit(hw: &QueueObj, pkts: *const AqlPacket, count: u64) {
    let n = count as usize;
    // SAFETY: the writer's caller passes `count` packets, each starting with its header dword.
    let first_dword = |i: usize| unsafe { std::ptr::read_unaligned(pkts.add(i) as *const u32) };
    if count == 0 || count > hw.size() || (0..n).any(|i| is_marker_dword(first_dword(i))) {
        return submit_each(hw, pkts, count);
    }
    let first = hw.write_index().fetch_add(count, SeqCst);
    while first + count > hw.read_index().load(SeqCst) + hw.size() {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
    for i in 0..n {
        // SAFETY: as above; the slots from `first` on were reserved by the bump.
        unsafe { hw.publish_from(first + i as u64, pkts.add(i)) };
    }
    ring(hw, first + count - 1);
}

/// [`submit`] one packet at a time, markers among them.
fn submit_each(hw: &QueueObj, pkts: *const AqlPacket, count: u64) {
    let mut last = None;
    for i in 0..count as usize {
        // SAFETY: the writer's caller passes `count` packets.
        let packet = unsafe { std::ptr::read_unaligned(pkts.add(i)) };
        if is_marker(&packet) {
            // SAFETY: a marker packet is 64 bytes of plain data.
            let marker: amd_aql_intercept_marker_t = unsafe { packet.cast() };
            if let Some(callback) = marker.callback {
                let next = hw.write_index().load(SeqCst);
                // SAFETY: the tool's marker callback, called as ROCr calls it.
                unsafe {
                    callback(
                        pkts.add(i) as *const amd_aql_intercept_marker_t,
                        hw.as_hsa(),
                        next,
                    )
                };
            }
            continue;
        }
        let index = hw.write_index().fetch_add(1, SeqCst);
        while index >= hw.read_index().load(SeqCst) + hw.size() {
            if let Some(prev) = last {
                ring(hw, prev);
            }
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
        hw.publish(index, &packet);
        last = Some(index);
    }
    if let Some(index) = last {
        ring(hw, index);
    }
}

fn ring(hw: &QueueObj, index: u64) {
    // SAFETY: the doorbell lives as long as its queue.
    unsafe { &*hw.doorbell }.store(index as i64);
}

/// Runs the handlers on the new packets of an intercept queue (its doorbell was rung).
pub fn process_doorbell(queue: &QueueObj) {
    let Some((_, state)) = queue.intercept() else {
        return;
    };
    let inside = CURRENT
        .with(|c| c.get())
        .is_some_and(|ctx| std::ptr::eq(ctx.queue, queue));
    if inside {
        // Rung from one of this queue's own handlers: the running loop picks the packets up.
        return;
    }
    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
    let state = &mut *state;
    let mode = settings().intercept;
    loop {
        let read = queue.read_index().load(SeqCst);
        let write = queue.write_index().load(SeqCst);
        let mut n = 0;
        while read + n < write && n < queue.size() {
            let header = queue.slot_header(read + n).load(SeqCst) as u16;
            if header_type(header) == HSA_PACKET_TYPE_INVALID {
                break;
            }
            n += 1;
        }
        if n == 0 {
            return;
        }
        let base = Context {
            queue,
            handlers: state.handlers.as_ptr(),
            level: state.handlers.len(),
            user_pkt_index: read,
        };
        match mode {
            InterceptMode::Packet => {
                for i in 0..n {
                    let ctx = Context {
                        user_pkt_index: read + i,
                        ..base
                    };
                    call_level(ctx, queue.slot(read + i) as *const c_void, 1);
                    queue.invalidate(read + i);
                    queue.read_index().store(read + i + 1, SeqCst);
                }
            }
            InterceptMode::Batch => {
                for i in 0..n {
                    // SAFETY: published slots; the staging buffer has one slot per ring slot.
                    state.staging[i as usize] = unsafe { *queue.slot(read + i) };
                }
                call_level(base, state.staging.as_ptr() as *const c_void, n);
                for i in 0..n {
                    queue.invalidate(read + i);
                }
                queue.read_index().store(read + n, SeqCst);
            }
        }
    }
}

/// `hsa_amd_queue_intercept_register`.
pub(crate) unsafe extern "C" fn hsa_amd_queue_intercept_register(
    queue: *mut hsa_queue_t,
    callback: hsa_amd_queue_intercept_handler,
    user_data: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(q) = lookup(queue) else {
            return HSA_STATUS_ERROR_INVALID_QUEUE;
        };
        let Some((_, state)) = q.intercept() else {
            return HSA_STATUS_ERROR_INVALID_QUEUE;
        };
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .handlers
            .push((callback, user_data as usize));
        HSA_STATUS_SUCCESS
    })
}
