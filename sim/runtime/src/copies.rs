//! Asynchronous copies (`hsa_amd_memory_async_copy`, `hsa_amd_memory_async_copy_rect`): the
//! simulated GPU's DMA engines.
//!
//! Every memory is host memory, so a copy moves its bytes as soon as its dependencies are 0; like
//! a DMA engine it takes time on the device clock, `COPY_BASE_NS` plus its bytes at
//! `COPY_BYTES_PER_NS`, and its completion signal is decremented (after the copy timestamps are
//! written, when async-copy profiling is on) when that time has passed. Copies overlap each
//! other and kernels, as on a GPU with several engines.

use crate::clock::now_ns;
use crate::ffi::guard;
use crate::hsa::*;
use crate::signals;
use crate::system::ASYNC_COPY_PROFILING;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ffi::c_void;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

/// Fixed cost of a copy, ns.
pub const COPY_BASE_NS: u64 = 2_000;
/// Bandwidth of a copy engine, bytes per ns (25 GB/s, a PCIe 4.0 x16 link's order).
pub const COPY_BYTES_PER_NS: u64 = 25;

/// Simulated duration of a copy of `bytes` bytes, ns.
pub fn copy_duration_ns(bytes: u64) -> u64 {
    COPY_BASE_NS + bytes.div_ceil(COPY_BYTES_PER_NS)
}

/// `hsa_pitched_ptr_t`: a pitched buffer of a rect copy.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_pitched_ptr_t {
    /// Address of byte (0, 0, 0).
    pub base: *mut c_void,
    /// Bytes from one row to the next.
    pub pitch: usize,
    /// Bytes from one slice to the next.
    pub slice: usize,
}

/// `hsa_amd_copy_direction_t`: host to host, which ROCr's rect copies refuse.
const HSA_HOST_TO_HOST: u32 = 0;
/// `hsa_amd_copy_direction_t`: device to device, the last value.
const HSA_DEVICE_TO_DEVICE: u32 = 3;

/// What a copy moves: one run of bytes, or rows and slices of a box.
#[derive(Clone, Copy)]
enum Shape {
    Linear {
        dst: usize,
        src: usize,
        size: usize,
    },
    Rect {
        dst: usize,
        dst_pitch: usize,
        dst_slice: usize,
        src: usize,
        src_pitch: usize,
        src_slice: usize,
        /// Bytes per row, rows, slices.
        range: [usize; 3],
    },
}

impl Shape {
    fn bytes(&self) -> u64 {
        match *self {
            Shape::Linear { size, .. } => size as u64,
            Shape::Rect { range, .. } => range.iter().map(|&r| r as u64).product(),
        }
    }

    /// Moves the bytes.
    ///
    /// # Safety
    /// Every byte the shape names must be valid, as the application promises for the copy.
    unsafe fn copy(&self) {
        match *self {
            Shape::Linear { dst, src, size } => {
                // SAFETY: per the contract.
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) }
            }
            Shape::Rect {
                dst,
                dst_pitch,
                dst_slice,
                src,
                src_pitch,
                src_slice,
                range: [width, height, depth],
            } => {
                for z in 0..depth {
                    for y in 0..height {
                        let from = src + z * src_slice + y * src_pitch;
                        let to = dst + z * dst_slice + y * dst_pitch;
                        // SAFETY: per the contract.
                        unsafe { std::ptr::copy(from as *const u8, to as *mut u8, width) }
                    }
                }
            }
        }
    }
}

/// A copy waiting for its dependencies.
struct AsyncCopy {
    shape: Shape,
    deps: Vec<hsa_signal_t>,
    completion: hsa_signal_t,
}

impl AsyncCopy {
    fn run(self) {
        for dep in &self.deps {
            // SAFETY: dependency signals are live until the copy starts.
            if let Some(s) = unsafe { signals::signal(*dep) } {
                s.wait(HSA_SIGNAL_CONDITION_EQ, 0, u64::MAX);
            }
        }
        // SAFETY: the application passes valid memory for the whole copy.
        unsafe { self.shape.copy() };
        // The engine's time starts once the host has moved the bytes, so a large copy is never
        // shortened by the host's own copying time.
        let start = now_ns();
        engine().finish(Finished {
            end: start + copy_duration_ns(self.shape.bytes()),
            start,
            signal: self.completion.handle,
        });
    }

    /// Runs the copy now if its dependencies are 0, else on a thread that waits for them.
    fn submit(self) -> hsa_status_t {
        // SAFETY: the application passes live signals.
        let ready = self
            .deps
            .iter()
            .all(|d| unsafe { signals::signal(*d) }.is_none_or(|s| s.load() == 0));
        if ready {
            self.run();
        } else if std::thread::Builder::new()
            .name("rtl-sim-copy".into())
            .spawn(move || self.run())
            .is_err()
        {
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        HSA_STATUS_SUCCESS
    }
}

/// A copy whose bytes moved, completing at `end`.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Finished {
    end: u64,
    start: u64,
    signal: u64,
}

/// The thread that completes copies when their time has passed.
struct Engine {
    pending: Mutex<BinaryHeap<Reverse<Finished>>>,
    wake: Condvar,
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<&'static Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let engine: &'static Engine = Box::leak(Box::new(Engine {
            pending: Mutex::new(BinaryHeap::new()),
            wake: Condvar::new(),
        }));
        let spawned = std::thread::Builder::new()
            .name("rtl-sim-dma".into())
            .spawn(move || engine.complete_forever());
        if let Err(e) = spawned {
            eprintln!("rtl-sim: cannot start the copy engine thread: {e}");
        }
        engine
    })
}

impl Engine {
    fn finish(&self, copy: Finished) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Reverse(copy));
        self.wake.notify_one();
    }

    fn complete_forever(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let now = now_ns();
            match pending.peek() {
                Some(Reverse(next)) if next.end <= now => {
                    let Some(Reverse(done)) = pending.pop() else {
                        continue;
                    };
                    // SAFETY: the completion signal of a copy stays alive until it completes.
                    unsafe {
                        signals::complete(
                            hsa_signal_t {
                                handle: done.signal,
                            },
                            done.start,
                            done.end,
                            ASYNC_COPY_PROFILING.load(SeqCst),
                        )
                    };
                }
                Some(Reverse(next)) => {
                    let wait = Duration::from_nanos(next.end - now);
                    pending = self
                        .wake
                        .wait_timeout(pending, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                None => {
                    pending = self.wake.wait(pending).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
    }
}

/// The dependency signals of a copy, or `None` if they are not readable.
fn dependencies(count: u32, signals: *const hsa_signal_t) -> Option<Vec<hsa_signal_t>> {
    match count {
        0 => Some(Vec::new()),
        _ if signals.is_null() => None,
        // SAFETY: the caller passes `count` signals.
        _ => Some(unsafe { std::slice::from_raw_parts(signals, count as usize) }.to_vec()),
    }
}

/// `hsa_amd_memory_async_copy`: copies once the dependencies are 0, then decrements the
/// completion signal when the copy's simulated time has passed.
pub(crate) unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    _dst_agent: hsa_agent_t,
    src: *const c_void,
    _src_agent: hsa_agent_t,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const hsa_signal_t,
    completion_signal: hsa_signal_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let deps = dependencies(num_dep_signals, dep_signals);
        let (false, false, Some(deps)) = (dst.is_null(), src.is_null(), deps) else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        AsyncCopy {
            shape: Shape::Linear {
                dst: dst as usize,
                src: src as usize,
                size,
            },
            deps,
            completion: completion_signal,
        }
        .submit()
    })
}

/// `hsa_amd_memory_async_copy_rect`: a box of `range` (x in bytes, y rows, z slices) between
/// pitched buffers, at byte offset `x + y * pitch + z * slice` of each; host-to-host copies and
/// rows wider than a pitch are refused, as ROCr refuses them.
pub(crate) unsafe extern "C" fn hsa_amd_memory_async_copy_rect(
    dst: *const c_void,
    dst_offset: *const hsa_dim3_t,
    src: *const c_void,
    src_offset: *const hsa_dim3_t,
    range: *const hsa_dim3_t,
    _copy_agent: hsa_agent_t,
    dir: u32,
    num_dep_signals: u32,
    dep_signals: *const hsa_signal_t,
    completion_signal: hsa_signal_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let pointers = [dst, dst_offset.cast(), src, src_offset.cast(), range.cast()];
        let deps = dependencies(num_dep_signals, dep_signals);
        if pointers.iter().any(|p| p.is_null())
            || dir == HSA_HOST_TO_HOST
            || dir > HSA_DEVICE_TO_DEVICE
        {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let Some(deps) = deps else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        // SAFETY: all five are non-null and point to the caller's structures.
        let (dst, src, dst_at, src_at, range) = unsafe {
            (
                *dst.cast::<hsa_pitched_ptr_t>(),
                *src.cast::<hsa_pitched_ptr_t>(),
                *dst_offset,
                *src_offset,
                *range,
            )
        };
        let width = range.x as usize;
        if dst.base.is_null() || src.base.is_null() || width > dst.pitch || width > src.pitch {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let at = |p: hsa_pitched_ptr_t, o: hsa_dim3_t| {
            p.base as usize + o.x as usize + o.y as usize * p.pitch + o.z as usize * p.slice
        };
        AsyncCopy {
            shape: Shape::Rect {
                dst: at(dst, dst_at),
                dst_pitch: dst.pitch,
                dst_slice: dst.slice,
                src: at(src, src_at),
                src_pitch: src.pitch,
                src_slice: src.slice,
                range: [width, range.y as usize, range.z as usize],
            },
            deps,
            completion: completion_signal,
        }
        .submit()
    })
}
