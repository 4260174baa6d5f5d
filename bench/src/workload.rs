//! One thread's dispatch loop: zero-length kernels on its own queues, in batches.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;

use crate::gpu::{check, Gpu, Kernel};
use crate::hsa::*;
use crate::hsa_api::*;
use crate::BATCH;

/// Slots of each queue: room for several batches.
const QUEUE_SLOTS: u32 = 1024;

/// Creates `queues` queues and a signal on `gpu`, waits at `start`, then dispatches `kernel`
/// `dispatches` times (a multiple of [`BATCH`]); each batch goes to the next queue in turn and
/// ends with a packet carrying the completion signal, which the thread waits for before the
/// next batch.
pub fn dispatch_empty(
    gpu: &Gpu,
    kernel: &Kernel,
    kernarg: *mut u8,
    (dispatches, queues): (u64, u32),
    start: &Barrier,
) -> Result<(), String> {
    let mut created = Vec::new();
    let mut signal = hsa_signal_t::default();
    let ready = (0..queues)
        .try_for_each(|_| {
            gpu.create_queue(QUEUE_SLOTS)
                .map(|queue| created.push(queue))
        })
        .and_then(|()| {
            // SAFETY: valid out pointer.
            check("hsa_signal_create", unsafe {
                hsa_signal_create(1, 0, std::ptr::null(), &mut signal)
            })
        });
    // Every thread reaches the barrier, so a failure cannot leave the others waiting.
    start.wait();
    let result = ready.map_err(String::from).map(|()| {
        let batches = (dispatches / BATCH) as usize;
        for &queue in created.iter().cycle().take(batches) {
            // SAFETY: the signal is ours and no packet of the previous batch still refers to it.
            unsafe { hsa_signal_store_screlease(signal, 1) };
            for i in 0..BATCH {
                let completion = if i + 1 == BATCH {
                    signal
                } else {
                    hsa_signal_t::default()
                };
                // SAFETY: the queue is ours and alive; `kernarg` outlives the dispatches.
                unsafe { submit(queue, kernel, kernarg, completion) };
            }
            // SAFETY: waiting on our own signal.
            while unsafe {
                hsa_signal_wait_scacquire(
                    signal,
                    HSA_SIGNAL_CONDITION_LT,
                    1,
                    u64::MAX,
                    HSA_WAIT_STATE_BLOCKED,
                )
            } >= 1
            {}
        }
    });
    // SAFETY: every dispatch has completed; the queues and signal are this thread's.
    unsafe {
        if signal.handle != 0 {
            hsa_signal_destroy(signal);
        }
        for queue in created {
            hsa_queue_destroy(queue);
        }
    }
    result
}

/// Writes one dispatch packet of `kernel` (one work-group) with the barrier bit, as HIP does,
/// and rings the doorbell.
///
/// # Safety
/// `queue` must be a live queue owned by the calling thread.
unsafe fn submit(
    queue: *mut hsa_queue_t,
    kernel: &Kernel,
    kernarg: *mut u8,
    completion: hsa_signal_t,
) {
    // SAFETY: the slot index is reserved by the write-index bump and free once the read index
    // has passed it; the header is published last.
    unsafe {
        let q = &*queue;
        let index = hsa_queue_add_write_index_scacq_screl(queue, 1);
        while index - hsa_queue_load_read_index_scacquire(queue) >= u64::from(q.size) {
            std::thread::yield_now();
        }
        let slot = q
            .base_address
            .cast::<hsa_kernel_dispatch_packet_t>()
            .add((index % u64::from(q.size)) as usize);
        slot.write(hsa_kernel_dispatch_packet_t {
            header: packet_header(HSA_PACKET_TYPE_INVALID, false, 0, 0),
            setup: 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
            workgroup_size_x: 64,
            workgroup_size_y: 1,
            workgroup_size_z: 1,
            reserved0: 0,
            grid_size_x: 64,
            grid_size_y: 1,
            grid_size_z: 1,
            private_segment_size: kernel.private_segment_size,
            group_segment_size: kernel.group_segment_size,
            kernel_object: kernel.object,
            kernarg_address: kernarg.cast::<c_void>(),
            reserved2: 0,
            completion_signal: completion,
        });
        let header = packet_header(
            HSA_PACKET_TYPE_KERNEL_DISPATCH,
            true,
            HSA_FENCE_SCOPE_SYSTEM,
            HSA_FENCE_SCOPE_SYSTEM,
        );
        let word = u32::from(header) | (u32::from((*slot).setup) << 16);
        (*slot.cast::<AtomicU32>()).store(word, Ordering::Release);
        hsa_signal_store_screlease(q.doorbell_signal, index as i64);
    }
}
