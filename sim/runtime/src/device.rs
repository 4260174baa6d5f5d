//! The simulated GPUs: one device thread per GPU processes the packets of all its hardware
//! queues in simulated time.
//!
//! Time is the `CLOCK_BOOTTIME` nanosecond clock; the device clock never runs behind it and may
//! run at most [`LEAD_NS`] ahead, so completions do not wait for every microsecond of every
//! kernel. A kernel's start and end are fixed when it launches (its duration comes from its
//! geometry, scaled by `RTL_SIM_SLOW`); kernels on different queues, and on one queue without
//! the barrier bit, overlap. A packet with the barrier bit, and every PM4 packet (whose indirect
//! buffers begin with a wait for idle), waits until the queue's earlier packets completed.
//! Barrier-AND/OR packets block their queue until their dependency signals reach 0. Completion
//! signals are decremented by one after the dispatch timestamps are written (when profiling is
//! enabled on the queue). The counter model sees every kernel launch and every PM4 indirect
//! buffer through [`crate::gpu`].

use crate::clock::{futex_wait, futex_wake_all, now_ns, tighten_timer_slack};
use crate::code_object::{kernel_by_object, run_on_host, KernelLaunch};
use crate::config::GpuConfig;
use crate::gpu;
use crate::hsa::*;
use crate::queues::QueueObj;
use crate::settings::settings;
use crate::signals::{self, complete};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// How far the device clock may run ahead of real time.
pub const LEAD_NS: u64 = 50_000;
/// Fixed cost of a kernel dispatch, ns.
pub const KERNEL_BASE_NS: u64 = 2_000;
/// Cost of each round of workgroups over all compute units, ns.
pub const KERNEL_ROUND_NS: u64 = 400;

/// One GPU.
pub struct Device {
    /// Device index (GPU agents in order, from 0).
    pub index: usize,
    /// KFD node id.
    pub node_id: u32,
    /// gfx target.
    pub arch: String,
    /// Compute units.
    pub cu_count: u32,
    /// Default wavefront size.
    pub wave_size: u32,
    seq: AtomicU32,
    sleeping: AtomicBool,
    waiting_dependency: AtomicBool,
    state: Mutex<DeviceState>,
}

#[derive(Default)]
struct DeviceState {
    queues: Vec<DeviceQueue>,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    clock: u64,
    dispatches: u64,
    order: u64,
    /// Dispatches launched so far per kernel name, for `RTL_SIM_VARIATION`.
    occurrences: std::collections::HashMap<String, u64>,
}

struct DeviceQueue {
    queue: *const QueueObj,
    id: u64,
    in_flight: u32,
    /// The write index seen just before the device clock was last read: packets below it were
    /// written before that time, so none of them starts before it was submitted.
    visible: u64,
}

// SAFETY: the queue pointer is only dereferenced by the device thread while the queue is
// attached (destroy detaches under the same lock before freeing).
unsafe impl Send for DeviceQueue {}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    end: u64,
    order: u64,
    start: u64,
    signal: u64,
    queue_id: u64,
    profiling: bool,
}

static DEVICES: OnceLock<Vec<Device>> = OnceLock::new();

fn devices() -> &'static [Device] {
    DEVICES.get().map_or(&[], |d| d.as_slice())
}

/// Creates the devices of `gpus` and starts their threads (once per process).
pub fn start(gpus: &[GpuConfig]) {
    let mut created = false;
    DEVICES.get_or_init(|| {
        created = true;
        gpus.iter()
            .enumerate()
            .map(|(index, g)| Device {
                index,
                node_id: g.node_id,
                arch: g.name.clone(),
                cu_count: g.cu_count().max(1),
                wave_size: g.wave_front_size,
                seq: AtomicU32::new(0),
                sleeping: AtomicBool::new(false),
                waiting_dependency: AtomicBool::new(false),
                state: Mutex::new(DeviceState::default()),
            })
            .collect()
    });
    if !created {
        return;
    }
    gpu::set_host_memory(|start, end| {
        let allocations = crate::system::allocations();
        let found = allocations.range(..=start).next_back();
        found.is_some_and(|(&base, a)| {
            a.backing == crate::system::Backing::Heap && end <= base + a.size
        })
    });
    for (index, g) in gpus.iter().enumerate() {
        let geometry = gpu::arch::Geometry {
            xcc: g.num_xcc,
            se: g.shader_engines(),
            sa_per_se: g.simd_arrays_per_engine,
            cu: g.cu_count(),
        };
        gpu::register_device(
            index as u32,
            gpu::DeviceInfo {
                arch: g.name.clone(),
                geometry,
                clock_mhz: g.max_engine_clk_fcompute,
            },
        );
        let spawned = std::thread::Builder::new()
            .name(format!("rtl-sim-gpu{index}"))
            .spawn(move || run(&devices()[index]));
        if let Err(e) = spawned {
            eprintln!("rtl-sim: cannot start the thread of GPU {index}: {e}");
        }
    }
}

impl Device {
    fn lock(&self) -> MutexGuard<'_, DeviceState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(&self) {
        self.seq.fetch_add(1, SeqCst);
        if self.sleeping.load(SeqCst) {
            futex_wake_all(&self.seq);
        }
    }
}

/// Compute units of device `index`.
pub fn cu_count(index: usize) -> Option<u32> {
    devices().get(index).map(|d| d.cu_count)
}

/// Wakes the thread of device `index` (a doorbell was rung).
pub fn wake(index: usize) {
    if let Some(d) = devices().get(index) {
        d.wake();
    }
}

/// Wakes devices whose queues wait on barrier dependencies (a signal changed).
pub fn wake_dependency_waiters() {
    for d in devices() {
        if d.waiting_dependency.load(SeqCst) {
            d.wake();
        }
    }
}

/// Hands a hardware queue to its device.
pub fn attach(index: usize, queue: &QueueObj) {
    if let Some(d) = devices().get(index) {
        d.lock().queues.push(DeviceQueue {
            queue,
            id: queue.id,
            in_flight: 0,
            visible: 0,
        });
        d.wake();
    }
}

/// Takes a hardware queue away from its device; returns once the device no longer touches it.
pub fn detach(index: usize, id: u64) {
    if let Some(d) = devices().get(index) {
        d.lock().queues.retain(|q| q.id != id);
    }
}

fn run(device: &'static Device) {
    tighten_timer_slack();
    let mut watching = false;
    loop {
        let seq = device.seq.load(SeqCst);
        let (next, dependency) = device.lock().advance(device);
        if dependency != watching {
            signals::watch_all_signals(dependency);
            watching = dependency;
        }
        device.waiting_dependency.store(dependency, SeqCst);
        device.sleeping.store(true, SeqCst);
        if device.seq.load(SeqCst) == seq {
            let timeout = match next {
                Some(t) => t.saturating_sub(now_ns()).max(1_000),
                None => 100_000_000,
            };
            futex_wait(&device.seq, seq, Some(timeout));
        }
        device.sleeping.store(false, SeqCst);
    }
}

/// Work-groups of a dispatch.
fn workgroups(grid: [u32; 3], workgroup: [u16; 3]) -> u64 {
    grid.iter()
        .zip(workgroup)
        .map(|(&g, w)| u64::from(g).div_ceil(u64::from(w.max(1))).max(1))
        .product()
}

/// Simulated duration of a dispatch in ns.
pub fn kernel_duration_ns(grid: [u32; 3], workgroup: [u16; 3], cu_count: u32) -> u64 {
    let rounds = workgroups(grid, workgroup).div_ceil(u64::from(cu_count.max(1)));
    let ns = (KERNEL_BASE_NS + KERNEL_ROUND_NS * rounds) as f64 * settings().slow;
    (ns as u64).max(1)
}

/// Simulated duration of a dispatch of `kernel` in ns: rounds of workgroups over the CUs, or
/// the kernel's memory traffic and math if they take longer (`segments`: LDS bytes per
/// workgroup and scratch bytes per work-item).
pub fn dispatch_duration_ns(
    kernel: &str,
    grid: [u32; 3],
    workgroup: [u16; 3],
    cu_count: u32,
    wave_size: u32,
    segments: [u32; 2],
) -> u64 {
    let items: u64 = grid.iter().map(|&g| u64::from(g)).product();
    let least = gpu::kernels::least_ns(kernel, items, wave_size, segments[0], segments[1]);
    kernel_duration_ns(grid, workgroup, cu_count).max((least as f64 * settings().slow) as u64)
}

impl DeviceState {
    /// Launches and retires whatever can be; returns when the device must next act (the
    /// earliest kernel end, minus the lead) and whether a queue waits on dependencies.
    fn advance(&mut self, device: &Device) -> (Option<u64>, bool) {
        let mut dependency = false;
        loop {
            for dq in &mut self.queues {
                // SAFETY: attached queues are alive (destroy detaches under the device lock).
                let queue = unsafe { &*dq.queue };
                // As a command processor: the packets up to the one the doorbell names, not
                // those merely reserved, so packets written together start together.
                // SAFETY: a queue's doorbell lives as long as the queue.
                let rung = unsafe { &*queue.doorbell }.load().saturating_add(1).max(0) as u64;
                dq.visible = queue.write_index().load(SeqCst).min(rung);
            }
            let real = now_ns();
            self.clock = self.clock.max(real);
            let mut progressed = false;
            for qi in 0..self.queues.len() {
                progressed |= self.process_queue(device, qi, &mut dependency, None);
            }
            let retire =
                matches!(self.in_flight.peek(), Some(Reverse(k)) if k.end <= real + LEAD_NS);
            if retire {
                if let Some(Reverse(k)) = self.in_flight.pop() {
                    self.clock = self.clock.max(k.end);
                    let idle_queue = self
                        .queues
                        .iter_mut()
                        .position(|q| q.id == k.queue_id)
                        .filter(|&qi| {
                            let q = &mut self.queues[qi];
                            q.in_flight = q.in_flight.saturating_sub(1);
                            q.in_flight == 0
                        });
                    // SAFETY: completion signals stay alive until their dispatch completes.
                    unsafe {
                        complete(
                            hsa_signal_t { handle: k.signal },
                            k.start,
                            k.end,
                            k.profiling,
                        )
                    };
                    progressed = true;
                    // The packets this kernel held back (a barrier, a PM4 read after it) run
                    // at its end even when the thread noticed it late, so a counter window
                    // closed right after a kernel is exactly the kernel's length.
                    if let Some(qi) = idle_queue {
                        self.process_queue(device, qi, &mut dependency, Some(k.end));
                    }
                }
            }
            if !progressed {
                let next = self
                    .in_flight
                    .peek()
                    .map(|Reverse(k)| k.end.saturating_sub(LEAD_NS));
                return (next, dependency);
            }
        }
    }

    /// Runs the queue's packets that can run, at `at` (the end of the kernel that held them
    /// back) or else at the device clock.
    fn process_queue(
        &mut self,
        device: &Device,
        qi: usize,
        dependency: &mut bool,
        at: Option<u64>,
    ) -> bool {
        // SAFETY: attached queues are alive (destroy detaches under the device lock first).
        let q = unsafe { &*self.queues[qi].queue };
        let mut progressed = false;
        loop {
            let read = q.read_index().load(SeqCst);
            if read >= self.queues[qi].visible {
                break;
            }
            let header = q.slot_header(read).load(SeqCst) as u16;
            let kind = header_type(header);
            if kind == HSA_PACKET_TYPE_INVALID {
                break;
            }
            let busy = self.queues[qi].in_flight > 0;
            if busy && (header_barrier(header) || kind == HSA_PACKET_TYPE_VENDOR_SPECIFIC) {
                break;
            }
            // SAFETY: the slot is published (valid header) and owned by the device until consumed.
            let packet = unsafe { *q.slot(read) };
            let profiling = q.profiling();
            let now = at.unwrap_or(self.clock);
            match kind {
                HSA_PACKET_TYPE_KERNEL_DISPATCH => {
                    self.launch(device, qi, q, &packet, profiling, now)
                }
                HSA_PACKET_TYPE_BARRIER_AND | HSA_PACKET_TYPE_BARRIER_OR => {
                    // SAFETY: a barrier packet is 64 bytes of plain data.
                    let barrier: hsa_barrier_and_packet_t = unsafe { packet.cast() };
                    if !dependencies_met(&barrier, kind == HSA_PACKET_TYPE_BARRIER_AND) {
                        *dependency = true;
                        break;
                    }
                    // SAFETY: the application's completion signal is live.
                    unsafe { complete(barrier.completion_signal, now, now, profiling) };
                }
                HSA_PACKET_TYPE_VENDOR_SPECIFIC => {
                    // SAFETY: vendor packets are 64 bytes of plain data.
                    let pm4: hsa_ext_amd_aql_pm4_packet_t = unsafe { packet.cast() };
                    if let Some((ib, dwords)) = pm4.indirect_buffer() {
                        gpu::execute_pm4_ib(device.index as u32, ib, dwords, now);
                    }
                    // SAFETY: the completion signal is live.
                    unsafe { complete(pm4.completion_signal, now, now, profiling) };
                }
                _ => {
                    // SAFETY: the completion signal is live.
                    unsafe { complete(packet.completion_signal(), now, now, profiling) };
                }
            }
            q.invalidate(read);
            q.read_index().store(read + 1, SeqCst);
            progressed = true;
        }
        progressed
    }

    fn launch(
        &mut self,
        device: &Device,
        qi: usize,
        q: &QueueObj,
        packet: &AqlPacket,
        profiling: bool,
        start: u64,
    ) {
        // SAFETY: a kernel dispatch packet is 64 bytes of plain data.
        let p: hsa_kernel_dispatch_packet_t = unsafe { packet.cast() };
        let grid = [p.grid_size_x, p.grid_size_y, p.grid_size_z];
        let workgroup = [p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z];
        let kernel = kernel_by_object(p.kernel_object);
        let unknown_name;
        let name = match &kernel {
            Some(k) => k.name.as_str(),
            None => {
                unknown_name = format!("kernel_0x{:x}", p.kernel_object);
                unknown_name.as_str()
            }
        };
        let variation = settings().variation.map(|(seed, stream)| {
            let occurrence = self.occurrences.entry(name.to_string()).or_default();
            let scale = gpu::variation::scale(seed, stream, name, *occurrence, settings().run);
            *occurrence += 1;
            gpu::Variation {
                behaviour: gpu::variation::behaviour(seed, name),
                scale,
            }
        });
        let wave_size = kernel
            .as_ref()
            .map(|k| k.meta.wavefront_size)
            .filter(|&w| w > 0)
            .unwrap_or(device.wave_size);
        let duration = dispatch_duration_ns(
            name,
            grid,
            workgroup,
            device.cu_count,
            wave_size,
            [p.group_segment_size, p.private_segment_size],
        );
        let end = start
            + variation.map_or(duration, |v| {
                gpu::variation::apply(duration, v.scale).max(1)
            });
        let computed = kernel.as_ref().is_some_and(|k| {
            run_on_host(&KernelLaunch {
                kernarg: p.kernarg_address as *const u8,
                grid,
                workgroup,
                group_segment_size: p.group_segment_size,
                private_segment_size: p.private_segment_size,
                kernel: k,
            })
        });
        gpu::kernel_started(&gpu::KernelRun {
            agent_node_id: device.node_id,
            arch: &device.arch,
            device_index: device.index as u32,
            queue_id: q.id,
            dispatch_index: self.dispatches,
            kernel: name,
            grid,
            workgroup,
            group_segment_size: p.group_segment_size,
            private_segment_size: p.private_segment_size,
            wave_size,
            start_ns: start,
            end_ns: end,
            computed,
            variation,
        });
        self.dispatches += 1;
        self.order += 1;
        self.queues[qi].in_flight += 1;
        self.in_flight.push(Reverse(InFlight {
            end,
            order: self.order,
            start,
            signal: p.completion_signal.handle,
            queue_id: q.id,
            profiling,
        }));
    }
}

fn dependencies_met(barrier: &hsa_barrier_and_packet_t, all: bool) -> bool {
    let (mut any_dependency, mut all_zero, mut any_zero) = (false, true, false);
    for handle in barrier.dep_signal {
        // SAFETY: dependency signals are live while their barrier is pending.
        if let Some(s) = unsafe { signals::signal(handle) } {
            let zero = s.load() == 0;
            any_dependency = true;
            all_zero &= zero;
            any_zero |= zero;
        }
    }
    !any_dependency || if all { all_zero } else { any_zero }
}
