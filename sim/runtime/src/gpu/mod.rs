//! The simulated GPU's performance counters.
//!
//! Counter registers are device-wide: one per (block, instance, register slot), each holding the
//! event it was programmed with and the intervals during which it counted. The device thread
//! reports every kernel it starts ([`kernel_started`]) and hands over the indirect buffer of every
//! PM4-IB packet it reaches ([`execute_pm4_ib`]); start commands zero and start registers, stop
//! commands stop them, read commands write their values to memory in aqlprofile's sample order.
//! A register's value is the sum, over every kernel that ran on the device, of the kernel's value
//! for the event (from [`model`]) times the fraction of the kernel that overlapped the register's
//! counting intervals, so collection that does not serialise kernels across queues mixes them.
//!
//! With `RTL_SIM_GROUND_TRUTH=<file>` every dispatch appends the values it contributes to the
//! counters named in `RTL_SIM_GROUND_TRUTH_COUNTERS` as one JSON line; [`ground_truth`] gives tests
//! the same numbers.

#[path = "../../../data/arch.rs"]
pub mod arch;
pub mod model;
#[path = "../../../pm4.rs"]
pub mod pm4;
mod truth;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use arch::{tables, Block, Geometry};
use model::{class_of, Class, Dispatch};
use pm4::{Command, ReadEntry, Setup, Slot, READ_ONCE_PER_PASS};

pub use truth::{ground_truth, line as truth_line, GroundTruthError};

/// A kernel dispatch as the device thread starts it (see the simulator contracts).
#[derive(Debug, Clone)]
pub struct KernelRun<'a> {
    /// KFD node id of the agent.
    pub agent_node_id: u32,
    /// gfx target of the agent.
    pub arch: &'a str,
    /// Index of the device (GPU agents in enumeration order, from 0).
    pub device_index: u32,
    /// Queue id.
    pub queue_id: u64,
    /// Per-agent index of the dispatch, from 0, counting every kernel dispatch.
    pub dispatch_index: u64,
    /// Kernel symbol name without `.kd`, not demangled.
    pub kernel: &'a str,
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Workgroup size in work-items.
    pub workgroup: [u16; 3],
    /// LDS bytes per workgroup.
    pub group_segment_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// Wavefront size.
    pub wave_size: u32,
    /// Simulated start time (ns, `CLOCK_BOOTTIME` domain).
    pub start_ns: u64,
    /// Simulated end time (ns).
    pub end_ns: u64,
}

/// What the counter model needs to know about a device beyond its architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// gfx target.
    pub arch: String,
    /// Agent topology as aqlprofile sees it.
    pub geometry: Geometry,
    /// Engine clock in MHz (cycles are counted at this rate).
    pub clock_mhz: u32,
}

impl DeviceInfo {
    /// A device described by its KFD topology properties (as the device configuration has them):
    /// CUs = `simd_count / simd_per_cu`, shader engines = `array_count / simd_arrays_per_engine`.
    pub fn from_kfd(
        name: &str,
        num_xcc: u32,
        simd_count: u32,
        simd_per_cu: u32,
        array_count: u32,
        simd_arrays_per_engine: u32,
        max_engine_clk_fcompute: u32,
    ) -> DeviceInfo {
        let sa_per_se = simd_arrays_per_engine.max(1);
        DeviceInfo {
            arch: name.split(':').next().unwrap_or(name).to_string(),
            geometry: Geometry {
                xcc: num_xcc.max(1),
                se: array_count / sa_per_se,
                sa_per_se,
                cu: simd_count / simd_per_cu.max(1),
            },
            clock_mhz: max_engine_clk_fcompute,
        }
    }

    /// The reference chip of `arch` (first product of that architecture in the topology table).
    pub fn reference(arch: &str) -> DeviceInfo {
        let t = tables().reference_topology(arch);
        DeviceInfo {
            arch: arch.to_string(),
            geometry: t.geometry(),
            clock_mhz: t.clock_mhz,
        }
    }
}

/// One kernel the device ran, with its per-event values computed on demand.
struct KernelRecord {
    dispatch: Dispatch,
    start: u64,
    end: u64,
    values: HashMap<(u32, u32, u32, Geometry), Arc<Vec<u64>>>,
}

/// Cumulative share of `total` a kernel running from `start` to `end` has produced by `t`.
fn produced(total: u64, start: u64, end: u64, t: u64) -> u64 {
    if t <= start {
        return 0;
    }
    if t >= end {
        return total;
    }
    (u128::from(total) * u128::from(t - start) / u128::from(end - start)) as u64
}

/// A counter register: the event it counts and when it counted.
struct Register {
    event: u32,
    accum: u32,
    intervals: Vec<(u64, Option<u64>)>,
}

#[derive(Default)]
struct Device {
    info: Option<DeviceInfo>,
    kernels: Vec<KernelRecord>,
    registers: HashMap<Slot, Register>,
}

/// Kernels kept per device before old ones are pruned.
const KERNEL_HISTORY: usize = 1024;

fn devices() -> MutexGuard<'static, HashMap<u32, Device>> {
    static STATE: OnceLock<Mutex<HashMap<u32, Device>>> = OnceLock::new();
    STATE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Tells the counter model the topology and clock of device `device_index`. Devices never
/// registered use the reference chip of the architecture of their kernels.
pub fn register_device(device_index: u32, info: DeviceInfo) {
    devices().entry(device_index).or_default().info = Some(info);
}

/// The topology and clock the model uses for device `device_index` running `arch` kernels.
pub fn device_info(device_index: u32, arch: &str) -> DeviceInfo {
    match devices().get(&device_index).and_then(|d| d.info.clone()) {
        Some(info) if info.arch == arch => info,
        _ => DeviceInfo::reference(arch),
    }
}

fn cycles_at(t: u64, clock_mhz: u32) -> u64 {
    (u128::from(t) * u128::from(clock_mhz) / 1000) as u64
}

/// Engine cycles between `start` and `end` on a clock of `clock_mhz`.
pub fn cycles_between(start: u64, end: u64, clock_mhz: u32) -> u64 {
    cycles_at(end, clock_mhz).saturating_sub(cycles_at(start, clock_mhz))
}

impl KernelRun<'_> {
    /// The dispatch as the value model sees it, on a device with `info`.
    pub fn dispatch(&self, info: &DeviceInfo) -> Dispatch {
        Dispatch {
            arch: self.arch.to_string(),
            kernel: self.kernel.to_string(),
            grid: self.grid,
            workgroup: self.workgroup,
            group_segment_size: self.group_segment_size,
            private_segment_size: self.private_segment_size,
            wave_size: self.wave_size,
            cycles: cycles_between(self.start_ns, self.end_ns, info.clock_mhz),
        }
    }
}

/// A kernel dispatch begins executing: record its interval for the counters and, if asked,
/// append its ground truth.
pub fn kernel_started(run: &KernelRun) {
    let info = device_info(run.device_index, run.arch);
    let record = KernelRecord {
        dispatch: run.dispatch(&info),
        start: run.start_ns,
        end: run.end_ns.max(run.start_ns),
        values: HashMap::new(),
    };
    {
        let mut devs = devices();
        let dev = devs.entry(run.device_index).or_default();
        dev.kernels.push(record);
        prune(dev);
    }
    truth::record(run);
}

/// Drops kernels no register can still see: those that ended before the latest start of every
/// register. Registers programmed once and never again would pin old kernels forever, so the
/// history is also capped.
fn prune(dev: &mut Device) {
    if dev.kernels.len() <= KERNEL_HISTORY {
        return;
    }
    let oldest = dev
        .registers
        .values()
        .filter_map(|r| r.intervals.last().map(|i| i.0))
        .min()
        .unwrap_or(u64::MAX);
    let newest_start = dev.kernels.iter().map(|k| k.start).max().unwrap_or(0);
    let keep_from = oldest.min(newest_start);
    dev.kernels.retain(|k| k.end >= keep_from);
    if dev.kernels.len() > 8 * KERNEL_HISTORY {
        let excess = dev.kernels.len() - KERNEL_HISTORY;
        dev.kernels.drain(..excess);
    }
}

/// The device reached a PM4-IB packet at `now_ns`: execute the `ib_size_dwords` dwords at
/// `ib_addr`.
pub fn execute_pm4_ib(device_index: u32, ib_addr: u64, ib_size_dwords: u32, now_ns: u64) {
    if ib_addr == 0 || ib_size_dwords == 0 {
        return;
    }
    // SAFETY: the address and size come from a PM4-IB packet whose command buffer aqlprofile
    // allocated in host memory of this process and keeps alive until the packets are deleted.
    let dwords =
        unsafe { std::slice::from_raw_parts(ib_addr as *const u32, ib_size_dwords as usize) };
    match Command::decode_all(dwords) {
        Ok(commands) => execute(device_index, &commands, now_ns),
        Err(e) => eprintln!("rtl-sim: GPU {device_index}: bad PM4 buffer at 0x{ib_addr:x}: {e}"),
    }
}

/// Executes decoded commands on device `device_index` at `now_ns`.
pub fn execute(device_index: u32, commands: &[Command], now_ns: u64) {
    let mut devs = devices();
    let dev = devs.entry(device_index).or_default();
    for command in commands {
        match command {
            Command::PmcStart(selects) => {
                for s in selects {
                    dev.registers.insert(
                        s.slot,
                        Register {
                            event: s.event,
                            accum: s.accum,
                            intervals: vec![(now_ns, None)],
                        },
                    );
                }
            }
            Command::PmcStop(slots) => {
                for slot in slots {
                    if let Some(reg) = dev.registers.get_mut(slot) {
                        for interval in reg.intervals.iter_mut().filter(|i| i.1.is_none()) {
                            interval.1 = Some(now_ns);
                        }
                    }
                }
            }
            Command::PmcRead {
                setup,
                dst,
                entries,
            } => {
                let values = read(dev, setup, entries, now_ns);
                // SAFETY: aqlprofile sized the output buffer at `dst` for exactly these samples
                // and keeps it alive while its packets exist.
                unsafe {
                    std::ptr::copy_nonoverlapping(values.as_ptr(), *dst as *mut u64, values.len());
                }
            }
            Command::Nop => {}
        }
    }
}

/// The samples a read command writes, in order.
fn read(dev: &mut Device, setup: &Setup, entries: &[ReadEntry], now: u64) -> Vec<u64> {
    let geometry = Geometry {
        xcc: setup.xcc,
        se: setup.se,
        sa_per_se: setup.sa_per_se,
        cu: setup.cu,
    };
    let clock = match &dev.info {
        Some(info) if info.arch == setup.arch => info.clock_mhz,
        _ => DeviceInfo::reference(&setup.arch).clock_mhz,
    };
    // Kernels that may overlap any register read here, found once per read.
    let earliest = entries
        .iter()
        .filter_map(|e| dev.registers.get(&e.slot)?.intervals.first().map(|i| i.0))
        .min()
        .unwrap_or(now);
    let candidates: Vec<usize> = (0..dev.kernels.len())
        .filter(|&i| dev.kernels[i].end >= earliest && dev.kernels[i].start <= now)
        .collect();
    // What each register needs for this read, worked out once per register.
    struct Prepared {
        block: &'static Block,
        class: Class,
        intervals: Vec<(u64, u64)>,
        per_kernel: Vec<(u64, u64, Arc<Vec<u64>>)>,
    }
    let mut prepared: HashMap<Slot, Option<Prepared>> = HashMap::new();
    let mut out = Vec::new();
    for entry in entries {
        let samples = entry.samples as usize;
        let prep = prepared.entry(entry.slot).or_insert_with(|| {
            let block = tables().block_by_id(&setup.arch, entry.slot.block)?;
            let reg = dev.registers.get(&entry.slot)?;
            let intervals: Vec<(u64, u64)> = reg
                .intervals
                .iter()
                .map(|&(a, b)| (a, b.unwrap_or(now).min(now).max(a)))
                .collect();
            let (event, accum) = (reg.event, reg.accum);
            let name = tables().counter_name(&setup.arch, &block.name, event);
            let class = if accum == 0 {
                class_of(name)
            } else {
                Class::Kernel
            };
            let mut per_kernel = Vec::new();
            for &i in &candidates {
                let k = &mut dev.kernels[i];
                if intervals.iter().any(|&(a, b)| k.start <= b && k.end >= a) {
                    let v = kernel_values(k, block, name, event, accum, &geometry);
                    per_kernel.push((k.start, k.end, v));
                }
            }
            Some(Prepared {
                block,
                class,
                intervals,
                per_kernel,
            })
        });
        let Some(Prepared {
            block,
            class,
            intervals,
            per_kernel,
        }) = prep.as_ref()
        else {
            out.extend(std::iter::repeat_n(0, samples));
            continue;
        };
        let (class, intervals) = (*class, intervals.as_slice());
        let layout = block.layout(&geometry);
        let xcc = if entry.xcc == READ_ONCE_PER_PASS {
            0
        } else {
            entry.xcc
        };
        if entry.slot.instance >= layout.instances || xcc >= layout.xcc {
            out.extend(std::iter::repeat_n(0, samples));
            continue;
        }
        let first = layout.index(xcc, entry.slot.instance, 0);
        let positions = first..first + samples;
        for p in positions {
            let value = match class {
                Class::Window => intervals
                    .iter()
                    .map(|&(a, b)| cycles_between(a, b, clock))
                    .sum(),
                Class::Busy => {
                    let busy: Vec<(u64, u64)> = per_kernel
                        .iter()
                        .filter(|(_, _, v)| v.get(p).copied().unwrap_or(0) > 0)
                        .map(|&(s, e, _)| (s, e))
                        .collect();
                    busy_cycles(&busy, intervals, clock)
                }
                Class::Kernel => per_kernel
                    .iter()
                    .map(|(s, e, v)| {
                        let total = v.get(p).copied().unwrap_or(0);
                        intervals
                            .iter()
                            .map(|&(a, b)| produced(total, *s, *e, b) - produced(total, *s, *e, a))
                            .sum::<u64>()
                    })
                    .sum(),
            };
            out.push(value);
        }
    }
    out
}

fn kernel_values(
    k: &mut KernelRecord,
    block: &Block,
    name: Option<&str>,
    event: u32,
    accum: u32,
    geometry: &Geometry,
) -> Arc<Vec<u64>> {
    let dispatch = &k.dispatch;
    k.values
        .entry((block.id, event, accum, *geometry))
        .or_insert_with(|| {
            Arc::new(model::event_values(
                dispatch, geometry, block, name, event, accum,
            ))
        })
        .clone()
}

/// Cycles within the counting intervals during which at least one of the busy spans runs.
fn busy_cycles(busy: &[(u64, u64)], intervals: &[(u64, u64)], clock: u32) -> u64 {
    let mut spans: Vec<(u64, u64)> = busy.to_vec();
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    intervals
        .iter()
        .flat_map(|&(a, b)| {
            merged.iter().map(move |&(s, e)| {
                let (lo, hi) = (s.max(a), e.min(b));
                if lo < hi {
                    cycles_between(lo, hi, clock)
                } else {
                    0
                }
            })
        })
        .sum()
}
