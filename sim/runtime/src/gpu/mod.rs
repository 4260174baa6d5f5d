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
mod cp;
#[path = "../../../gfx9.rs"]
pub mod gfx9;
pub mod kernels;
pub mod model;
#[path = "../../../pm4.rs"]
pub mod pm4;
mod program;
mod truth;
pub mod variation;
mod watch;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use arch::{tables, Block, Geometry};
use model::Dispatch;
use pm4::{Command, Slot};

pub use truth::{ground_truth, line as truth_line, problems, problems_on, GroundTruthError};

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
    /// Whether the simulated GPU computed the kernel's results on host memory (a fixture or
    /// HIP blit kernel) or only timed and counted it.
    pub computed: bool,
    /// The dispatch's variation under `RTL_SIM_VARIATION` (`None`: the exact model).
    pub variation: Option<Variation>,
}

/// How one dispatch departs from the exact model (see [`variation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variation {
    /// The kernel's behaviour under the seed.
    pub behaviour: variation::Behaviour,
    /// The dispatch's work factor, in thousandths.
    pub scale: u32,
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

/// Per-event values of one dispatch shape. Every kernel run with the same [`Dispatch`] has the
/// same values, so they are computed once and shared: applications launch the same kernel with
/// the same geometry over and over.
struct Shape {
    dispatch: Dispatch,
    /// The values worked out so far, one entry per counter a read asked for on the kernel: a
    /// few, found by comparing.
    values: Mutex<Vec<(ValueKey, Arc<Vec<u64>>)>>,
}

/// What a model value vector depends on besides the dispatch: block id, event, accumulation
/// mode and agent geometry.
type ValueKey = (u32, u32, u32, Geometry);

impl Shape {
    /// The values of `event` of `block` at every sample position.
    fn values(
        &self,
        block: &Block,
        name: Option<&str>,
        event: u32,
        accum: u32,
        geometry: &Geometry,
    ) -> Arc<Vec<u64>> {
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        let key = (block.id, event, accum, *geometry);
        if let Some((_, found)) = values.iter().find(|(k, _)| *k == key) {
            return Arc::clone(found);
        }
        let found = Arc::new(model::event_values(
            &self.dispatch,
            geometry,
            block,
            name,
            event,
            accum,
        ));
        values.push((key, Arc::clone(&found)));
        found
    }
}

/// One kernel the device ran.
struct KernelRecord {
    shape: Arc<Shape>,
    start: u64,
    end: u64,
    /// The latest end of this kernel and every kernel recorded before it (kept when older
    /// records are pruned, so it may only be later than theirs): what finds the first kernel
    /// still running at a time.
    ends_by: u64,
}

/// A counter register: the event it counts and when it counted.
#[derive(Default)]
struct Register {
    /// Whether a start command ever programmed it (reads of others give zeros).
    programmed: bool,
    event: u32,
    accum: u32,
    intervals: Vec<(u64, Option<u64>)>,
}

/// The device's counter registers, found by slot once per command buffer and by index after.
#[derive(Default)]
struct Registers {
    index: HashMap<Slot, usize>,
    state: Vec<Register>,
}

impl Registers {
    /// The index of `slot`'s register, created unprogrammed on first sight.
    fn index(&mut self, slot: Slot) -> usize {
        let state = &mut self.state;
        *self.index.entry(slot).or_insert_with(|| {
            state.push(Register::default());
            state.len() - 1
        })
    }
}

#[derive(Default)]
struct Device {
    info: Option<DeviceInfo>,
    kernels: Vec<KernelRecord>,
    /// Whether `kernels` are in order of start (each launched no earlier than the one before).
    kernels_unordered: bool,
    /// Counters of the simulator's private commands (architectures without register facts).
    registers: Registers,
    /// Perf-counter registers of the gfx9 family, as PM4 packets program them.
    perf: cp::PerfRegisters,
    /// Dispatch shapes seen recently.
    shapes: HashMap<Dispatch, Arc<Shape>>,
    /// Command buffers by address, compiled, with the watch on their pages: the same buffers
    /// run for every dispatch.
    programs: HashMap<u64, (Compiled, Option<watch::Armed>)>,
}

impl Device {
    /// The recorded kernels among which are all that end at or after `from` and start at or
    /// before `to`: when kernels were recorded in order of start, those from the first that
    /// some kernel up to it still ran at `from`, to the last that started by `to`.
    fn kernels_between(&self, from: u64, to: u64) -> &[KernelRecord] {
        if self.kernels_unordered {
            return &self.kernels;
        }
        let first = self.kernels.partition_point(|k| k.ends_by < from);
        let last = self.kernels.partition_point(|k| k.start <= to);
        self.kernels.get(first..last).unwrap_or(&[])
    }
}

/// A command buffer compiled for its device.
enum Compiled {
    /// Real PM4 packets, executed at register level (shared, so that running it leaves it
    /// where it is kept).
    Pm4(Arc<cp::Program>),
    /// The simulator's private counter commands.
    Private(program::Program),
}

impl Compiled {
    /// The dwords it was compiled from.
    fn dwords(&self) -> &[u32] {
        match self {
            Compiled::Pm4(p) => p.dwords(),
            Compiled::Private(p) => p.dwords(),
        }
    }
}

/// Whether a command buffer holds the simulator's private counter commands.
fn is_private(dwords: &[u32]) -> bool {
    gfx9::packets(dwords).is_ok_and(|packets| {
        packets
            .iter()
            .any(|p| (pm4::IT_SIM_PMC_START..=pm4::IT_SIM_PMC_READ).contains(&p.opcode))
    })
}

/// Kernels kept per device before old ones are pruned.
const KERNEL_HISTORY: usize = 1024;
/// Dispatch shapes remembered per device before the memory starts afresh.
const SHAPE_CACHE: usize = 4096;
/// Compiled command buffers remembered per device (three per packet set, and a tool keeps one
/// set per dispatch in flight: 1024 with 16 queues of 64 packets); beyond it, one is forgotten
/// for each new one.
const PROGRAM_CACHE: usize = 4096;

/// Every device's counter state, by device index.
struct Devices(Vec<Device>);

impl Devices {
    /// Device `index`, made on first use.
    fn at(&mut self, index: u32) -> &mut Device {
        let index = index as usize;
        if self.0.len() <= index {
            self.0.resize_with(index + 1, Device::default);
        }
        &mut self.0[index]
    }
}

fn devices() -> MutexGuard<'static, Devices> {
    static STATE: Mutex<Devices> = Mutex::new(Devices(Vec::new()));
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Tells the command processor how to know, by address range, memory the runtime allocated as
/// ordinary host memory (`posix_memalign`): command buffers there are watched for writes instead
/// of being compared in full each time they run (see `sim/README.md`).
pub fn set_host_memory(is_host: fn(usize, usize) -> bool) {
    watch::set_host_memory(is_host);
}

/// Tells the counter model the topology and clock of device `device_index`. Devices never
/// registered use the reference chip of the architecture of their kernels.
pub fn register_device(device_index: u32, info: DeviceInfo) {
    devices().at(device_index).info = Some(info);
}

/// The topology and clock the model uses for device `device_index` running `arch` kernels.
pub fn device_info(device_index: u32, arch: &str) -> DeviceInfo {
    match devices()
        .0
        .get(device_index as usize)
        .and_then(|d| d.info.clone())
    {
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
        self.dispatch_at(info.clock_mhz)
    }

    /// Whether `dispatch` is this run's, on a clock of `clock_mhz` (as [`Self::dispatch_at`]
    /// would make it, without making it).
    fn is(&self, dispatch: &Dispatch, clock_mhz: u32) -> bool {
        dispatch.kernel == self.kernel
            && dispatch.grid == self.grid
            && dispatch.workgroup == self.workgroup
            && dispatch.group_segment_size == self.group_segment_size
            && dispatch.private_segment_size == self.private_segment_size
            && dispatch.wave_size == self.wave_size
            && dispatch.scale == self.variation.map_or(variation::UNIT, |v| v.scale)
            && dispatch.cycles == cycles_between(self.start_ns, self.end_ns, clock_mhz)
            && dispatch.arch == self.arch
    }

    fn dispatch_at(&self, clock_mhz: u32) -> Dispatch {
        Dispatch {
            arch: self.arch.to_string(),
            kernel: self.kernel.to_string(),
            grid: self.grid,
            workgroup: self.workgroup,
            group_segment_size: self.group_segment_size,
            private_segment_size: self.private_segment_size,
            wave_size: self.wave_size,
            cycles: cycles_between(self.start_ns, self.end_ns, clock_mhz),
            scale: self.variation.map_or(variation::UNIT, |v| v.scale),
        }
    }
}

/// The engine clock of `dev` for `arch` kernels: the registered one, else the reference chip's.
fn clock_of(dev: &Device, arch: &str) -> u32 {
    match &dev.info {
        Some(info) if info.arch == arch => info.clock_mhz,
        _ => DeviceInfo::reference(arch).clock_mhz,
    }
}

/// A kernel dispatch begins executing: record its interval for the counters and, if asked,
/// append its ground truth.
pub fn kernel_started(run: &KernelRun) {
    {
        let mut devs = devices();
        let dev = devs.at(run.device_index);
        let clock = clock_of(dev, run.arch);
        // Applications launch the same kernel with the same geometry over and over.
        let last = dev.kernels.last().map(|k| &k.shape);
        let shape = match last.filter(|shape| run.is(&shape.dispatch, clock)) {
            Some(shape) => Arc::clone(shape),
            None => shape_of(dev, run.dispatch_at(clock)),
        };
        let (start, end) = (run.start_ns, run.end_ns.max(run.start_ns));
        dev.kernels_unordered |= dev.kernels.last().is_some_and(|k| k.start > start);
        let ends_by = dev.kernels.last().map_or(end, |k| k.ends_by.max(end));
        dev.kernels.push(KernelRecord {
            shape,
            start,
            end,
            ends_by,
        });
        prune(dev);
    }
    truth::record(run);
}

/// The shape of `dispatch` on `dev`, the one seen recently or a new one.
fn shape_of(dev: &mut Device, dispatch: Dispatch) -> Arc<Shape> {
    if let Some(shape) = dev.shapes.get(&dispatch) {
        return Arc::clone(shape);
    }
    if dev.shapes.len() >= SHAPE_CACHE {
        dev.shapes.clear();
    }
    let shape = Arc::new(Shape {
        dispatch: dispatch.clone(),
        values: Mutex::default(),
    });
    dev.shapes.insert(dispatch, Arc::clone(&shape));
    shape
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
        .state
        .iter()
        .filter(|r| r.programmed)
        .filter_map(|r| r.intervals.last().map(|i| i.0))
        .chain(dev.perf.earliest_interval())
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
    let mut devs = devices();
    let dev = devs.at(device_index);
    // What is known of the buffer: compiled when it last ran, and whether it changed since.
    let known = dev.programs.get_mut(&ib_addr).map(|(p, armed)| {
        // When the buffer changed, `unchanged` armed the watch again before reading it.
        let unchanged = watch::unchanged(p.dwords(), dwords, armed);
        match p {
            Compiled::Pm4(p) if unchanged => Some(Arc::clone(p)),
            _ => None,
        }
        .ok_or(unchanged)
    });
    let (program, armed) = match known {
        Some(Ok(program)) => {
            program.run(dev, device_index, now_ns);
            return;
        }
        Some(Err(unchanged)) => match dev.programs.remove(&ib_addr) {
            Some((p, armed)) if unchanged => (Some(p), armed),
            Some((_, armed)) => (compile(dev, device_index, ib_addr, dwords), armed),
            None => return,
        },
        None => {
            // Armed before the buffer is read to compile it.
            let armed = watch::arm(dwords);
            (compile(dev, device_index, ib_addr, dwords), armed)
        }
    };
    let Some(mut program) = program else {
        return;
    };
    match &mut program {
        Compiled::Pm4(p) => p.run(dev, device_index, now_ns),
        Compiled::Private(p) => p.run(dev, now_ns),
    }
    if dev.programs.len() >= PROGRAM_CACHE {
        if let Some(&old) = dev.programs.keys().next() {
            dev.programs.remove(&old);
        }
    }
    dev.programs.insert(ib_addr, (program, armed));
}

/// Compiles the command buffer `dwords` at `ib_addr` for device `device_index`.
fn compile(dev: &mut Device, device_index: u32, ib_addr: u64, dwords: &[u32]) -> Option<Compiled> {
    if is_private(dwords) {
        match Command::decode_all(dwords) {
            Ok(commands) => Some(Compiled::Private(program::Program::compile(
                dwords,
                &commands,
                &mut dev.registers,
            ))),
            Err(e) => {
                eprintln!("rtl-sim: GPU {device_index}: bad PM4 buffer at 0x{ib_addr:x}: {e}");
                None
            }
        }
    } else {
        {
            let arch = match &dev.info {
                Some(info) => info.arch.clone(),
                None => match dev.kernels.last() {
                    Some(k) => k.shape.dispatch.arch.clone(),
                    None => {
                        eprintln!(
                            "rtl-sim: GPU {device_index}: PM4 buffer at 0x{ib_addr:x} on a device the runtime never described"
                        );
                        return None;
                    }
                },
            };
            Some(Compiled::Pm4(Arc::new(cp::Program::compile(
                dwords,
                &arch,
                device_index,
            ))))
        }
    }
}

/// Executes decoded commands on device `device_index` at `now_ns`.
pub fn execute(device_index: u32, commands: &[Command], now_ns: u64) {
    let mut devs = devices();
    let dev = devs.at(device_index);
    program::Program::compile(&[], commands, &mut dev.registers).run(dev, now_ns);
}
