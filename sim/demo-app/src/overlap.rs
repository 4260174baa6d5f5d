//! Copies beside kernels (`--copies-beside`): one thread dispatches a kernel again and again on
//! a queue of the first GPU and checks each result, while another copies host data to device
//! memory and back with `hsa_amd_memory_async_copy` (and the same through
//! `hsa_amd_memory_async_copy_rect`), the second copy depending on the first's signal, and
//! checks what arrived the moment the second copy's signal completes. Nothing orders the copies
//! against the kernels: DMA engines and the GPU's queues run side by side.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::gpu::{check, Kernel, System};
use crate::hsa::*;
use crate::hsa_api::*;
use crate::workload::{symbol_of, Buffers, Lane, WorkError};
use crate::HsaError;

/// `hsa_pitched_ptr_t`: a buffer of rows and slices, for rect copies.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct hsa_pitched_ptr_t {
    /// Byte (0, 0, 0).
    pub base: *mut c_void,
    /// Bytes from one row to the next.
    pub pitch: usize,
    /// Bytes from one slice to the next.
    pub slice: usize,
}

/// `hsa_amd_copy_direction_t`: host to device.
pub const HSA_HOST_TO_DEVICE: u32 = 1;
/// `hsa_amd_copy_direction_t`: device to host.
pub const HSA_DEVICE_TO_HOST: u32 = 2;

/// Bytes each copy moves: 64 rows of 256 bytes.
const ROW: usize = 256;
const ROWS: usize = 64;
const BYTES: usize = ROW * ROWS;
/// Row pitch of the device buffer of the rect copies.
const PITCH: usize = 384;

/// What one run did: kernels and copy round trips verified.
#[derive(Debug, Default)]
pub struct Counts {
    /// Kernel dispatches whose every element was right.
    pub dispatches: u32,
    /// Round trips (to the device and back) whose every byte was right.
    pub round_trips: u32,
}

/// A copy's bytes came back wrong.
fn wrong(what: &'static str, round: u32, index: usize, got: u8, want: u8) -> String {
    format!("wrong data after {what} round trip {round}: byte {index} is 0x{got:02x}, expected 0x{want:02x}")
}

/// A signal with value 1.
fn signal() -> Result<hsa_signal_t, HsaError> {
    let mut s = hsa_signal_t::default();
    // SAFETY: a valid out pointer.
    check("hsa_signal_create", unsafe {
        hsa_signal_create(1, 0, std::ptr::null(), &mut s)
    })?;
    Ok(s)
}

/// Waits until `s` is below 1.
fn wait(s: hsa_signal_t) {
    // SAFETY: a live signal.
    while unsafe {
        hsa_signal_wait_scacquire(
            s,
            HSA_SIGNAL_CONDITION_LT,
            1,
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED,
        )
    } >= 1
    {}
}

/// The byte at `index` of round trip `round`.
fn pattern(round: u32, index: usize) -> u8 {
    (round as usize * 7 + index * 13 + 1) as u8
}

/// The copying side: `rounds` round trips of each kind, then until `kernels_done`.
fn copy_rounds(system: &System, rounds: u32, kernels_done: &AtomicBool) -> Result<u32, String> {
    let gpu = &system.gpus[0];
    let host = system.buffer_pool;
    let source = system.allocate(host, BYTES)?;
    let back = system.allocate(host, BYTES)?;
    let device = system.allocate(system.device_pool(gpu)?, PITCH * ROWS)?;
    let (up, down) = (signal()?, signal()?);
    let mut round = 0u32;
    let result = loop {
        if round >= 2 * rounds && kernels_done.load(Ordering::Acquire) {
            break Ok(round);
        }
        // SAFETY: three live allocations of at least BYTES bytes, used by this thread only
        // while no copy of them is in flight.
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts_mut(source, BYTES),
                std::slice::from_raw_parts_mut(back, BYTES),
            )
        };
        for (i, b) in src.iter_mut().enumerate() {
            *b = pattern(round, i);
        }
        dst.fill(0);
        // SAFETY: live signals.
        unsafe {
            hsa_signal_store_screlease(up, 1);
            hsa_signal_store_screlease(down, 1);
        }
        let rect = round % 2 == 1;
        let what = if rect {
            "hsa_amd_memory_async_copy_rect"
        } else {
            "hsa_amd_memory_async_copy"
        };
        // SAFETY: every buffer holds the bytes each copy names; the second copy waits for the
        // first's signal.
        let status = unsafe {
            if rect {
                let pitched = |base: *mut u8, pitch: usize| hsa_pitched_ptr_t {
                    base: base.cast::<c_void>(),
                    pitch,
                    slice: pitch * ROWS,
                };
                let origin = hsa_dim3_t::default();
                let range = hsa_dim3_t {
                    x: ROW as u32,
                    y: ROWS as u32,
                    z: 1,
                };
                let (s, d, b) = (
                    pitched(source, ROW),
                    pitched(device, PITCH),
                    pitched(back, ROW),
                );
                let first = hsa_amd_memory_async_copy_rect(
                    (&raw const d).cast(),
                    &origin,
                    (&raw const s).cast(),
                    &origin,
                    &range,
                    gpu.agent,
                    HSA_HOST_TO_DEVICE,
                    0,
                    std::ptr::null(),
                    up,
                );
                check(what, first).and_then(|()| {
                    check(
                        what,
                        hsa_amd_memory_async_copy_rect(
                            (&raw const b).cast(),
                            &origin,
                            (&raw const d).cast(),
                            &origin,
                            &range,
                            gpu.agent,
                            HSA_DEVICE_TO_HOST,
                            1,
                            &up,
                            down,
                        ),
                    )
                })
            } else {
                let first = hsa_amd_memory_async_copy(
                    device.cast(),
                    gpu.agent,
                    source.cast(),
                    gpu.agent,
                    BYTES,
                    0,
                    std::ptr::null(),
                    up,
                );
                check(what, first).and_then(|()| {
                    check(
                        what,
                        hsa_amd_memory_async_copy(
                            back.cast(),
                            gpu.agent,
                            device.cast(),
                            gpu.agent,
                            BYTES,
                            1,
                            &up,
                            down,
                        ),
                    )
                })
            }
        };
        if let Err(e) = status {
            break Err(e.to_string());
        }
        wait(down);
        if let Some(i) = (0..BYTES).find(|&i| dst[i] != pattern(round, i)) {
            break Err(wrong(what, round, i, dst[i], pattern(round, i)));
        }
        round += 1;
    };
    // SAFETY: nothing is in flight any more.
    unsafe {
        hsa_signal_destroy(up);
        hsa_signal_destroy(down);
        for p in [source, back, device] {
            hsa_amd_memory_pool_free(p.cast());
        }
    }
    result
}

/// Runs `kernel` `iterations` times on the first GPU while copies go back and forth beside it
/// (at least `iterations` round trips of each kind).
pub fn run(
    system: &System,
    kernel: &'static str,
    iterations: u32,
    size: usize,
) -> Result<Counts, String> {
    let gpu = &system.gpus[0];
    let code: Kernel = gpu.kernel(symbol_of(kernel))?;
    let kernels_done = AtomicBool::new(false);
    let (dispatched, copied) = std::thread::scope(|scope| {
        let copier = scope.spawn(|| copy_rounds(system, iterations, &kernels_done));
        let dispatched = (|| -> Result<u32, WorkError> {
            let mut lane = Lane::new(system, gpu, None, size, Buffers::Pool)?;
            for i in 0..iterations {
                lane.run(kernel, &code, size, i)?;
            }
            Ok(iterations)
        })();
        kernels_done.store(true, Ordering::Release);
        let copied = copier
            .join()
            .unwrap_or_else(|_| Err("the copy thread panicked".into()));
        (dispatched, copied)
    });
    Ok(Counts {
        dispatches: dispatched.map_err(|e| e.to_string())?,
        round_trips: copied?,
    })
}
