//! The command processor: executes PM4 type-3 packets against the device's perf-counter
//! registers, the way a gfx9-family GPU runs aqlprofile's command buffers.
//!
//! Every XCC runs each indirect buffer with its own register state (`GRBM_GFX_INDEX`,
//! `CP_PERFMON_CNTL`, selects), skipping what `PRED_EXEC` reserves for other XCCs. Selects live
//! per XCC, block, instance, shader engine and slot, written through `GRBM_GFX_INDEX` with its
//! broadcast bits. CP-controlled counters count while `CP_PERFMON_CNTL` says START (with the
//! perf-monitor clock on) and their LO/HI registers read the value latched by the last SAMPLE;
//! memory-controller style blocks (MCVML2, ATCL2, GCEA, and the per-AID ATC and RPB) count
//! while `RSLT_CNTL` has ENABLE_ANY and read live through the slot it selects. A counter's value
//! comes from the value model: the sum over the kernels that ran of their value for the selected
//! event at the counter's sample position, in proportion to how much of each kernel its counting
//! intervals saw.
//!
//! A packet, register or select value this model does not know is a problem: it is reported on
//! stderr and in the ground-truth log with the packet's dwords, and the packet is skipped.

use std::collections::HashMap;

use super::arch::{tables, Block, Geometry, Layout};
use super::gfx9::{self, copy, grbm, mc, op, perfmon, smn, sq, Register, Style, BLOCKS};
use super::model::{class_of, Class};
use super::program::{Lookup, Prepared};
use super::{truth, Device, KernelRecord};

/// Nesting of `INDIRECT_BUFFER` packets followed before giving up.
const MAX_IB_DEPTH: u32 = 4;

/// A register as a packet addresses it: what it is, and the AID of an SMN address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reg {
    register: Register,
    aid: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
enum Source {
    Register(Reg),
    Memory(u64),
    Immediate(u64),
    Clock,
}

#[derive(Debug, Clone, Copy)]
enum Dest {
    Register(Reg),
    Memory(u64),
}

#[derive(Debug, Clone)]
enum Op {
    /// A register write with a value known when the buffer was compiled.
    Write(Reg, u32),
    /// `COPY_DATA` of anything but an immediate to a register.
    Copy { src: Source, dst: Dest, wide: bool },
    /// `WRITE_DATA` to memory.
    WriteMemory { dst: u64, data: Vec<u32> },
    /// `PRED_EXEC`: skip the next `skip` ops on XCCs outside `mask`.
    Predicate { mask: u32, skip: usize },
    /// `WAIT_REG_MEM` (a condition that must already hold: nothing else runs meanwhile).
    Wait {
        src: Source,
        function: u32,
        reference: u32,
        mask: u32,
        at: usize,
    },
    /// `INDIRECT_BUFFER`.
    Chain { addr: u64, size: u32 },
    /// A counter sample as a read takes it, three packets run as one: an optional
    /// `GRBM_GFX_INDEX` write, then `COPY_DATA`s of the counter's LO to `dst` and HI to `dst + 4`.
    Sample {
        grbm: Option<u32>,
        lo: Reg,
        dst: u64,
    },
    /// A run of [`Op::Sample`]s of CP-controlled blocks and the `GRBM_GFX_INDEX` writes between
    /// them, each sample's index known: run as one copy plan per XCC.
    Samples(Box<SampleRun>),
    /// A run of register writes that only set values: `GRBM_GFX_INDEX`, selects of
    /// CP-controlled blocks and the SQ, clock and compute-enable registers.
    Writes(Box<WriteRun>),
}

/// Register writes each of which sets a value and nothing else, so that running them again on
/// an XCC whose selects did not change since (and with the same `GRBM_GFX_INDEX` on entry)
/// leaves its selects as they are: then only the other registers' last values are set.
#[derive(Debug)]
struct WriteRun {
    writes: Vec<(Reg, u32)>,
    /// The last value written to each register other than a select, in order.
    finals: Vec<(Reg, u32)>,
    /// Per XCC, after the run last ran in full: the selects' generation, the `GRBM_GFX_INDEX`
    /// it found on entry, and the geometry.
    applied: std::sync::Mutex<Vec<Option<(u64, u32, Geometry)>>>,
}

impl Clone for WriteRun {
    fn clone(&self) -> WriteRun {
        WriteRun {
            writes: self.writes.clone(),
            finals: self.finals.clone(),
            applied: std::sync::Mutex::new(Vec::new()),
        }
    }
}

/// One sample of a [`SampleRun`]: the `GRBM_GFX_INDEX` it is read under, its LO register and
/// where LO and HI go.
#[derive(Debug, Clone, Copy)]
struct Step {
    grbm: u32,
    b: u8,
    k: u8,
    dst: u64,
}

/// Consecutive samples read the way aqlprofile's read buffer reads them, with what each XCC
/// resolved them to when it last ran them.
#[derive(Debug)]
struct SampleRun {
    steps: Vec<Step>,
    /// `GRBM_GFX_INDEX` once the run is done: the last value it wrote.
    grbm_after: u32,
    /// Per XCC, the plan made when it last ran the run.
    plans: std::sync::Mutex<Vec<Option<SamplePlan>>>,
}

impl Clone for SampleRun {
    fn clone(&self) -> SampleRun {
        SampleRun {
            steps: self.steps.clone(),
            grbm_after: self.grbm_after,
            plans: std::sync::Mutex::new(Vec::new()),
        }
    }
}

/// What a [`SampleRun`]'s samples read on one XCC, resolved through the select registers as they
/// stood: the counter (block, event, accumulation) and sample position of each step. Valid while
/// no select of the XCC changed ([`Selects::generation`]) and the geometry is the same.
#[derive(Debug)]
struct SamplePlan {
    generation: u64,
    geometry: Geometry,
    /// Distinct counters read: (block, event, accumulation).
    keys: Vec<(u8, u32, u32)>,
    /// The counter name of each key, looked up once.
    names: Vec<Option<&'static str>>,
    /// The steps by counter read: the index into `keys` (or [`ZERO`]), and per step where LO
    /// and HI go and the sample position.
    reads: Vec<(u32, Vec<(u64, u32)>)>,
}

/// A step of a [`SamplePlan`] that reads 0 (outside the block's layout, or no such block).
const ZERO: u32 = u32::MAX;

/// Replaces runs of ops by one op each: `run` is given the ops from an index to the end of its
/// `PRED_EXEC` span (nothing is joined across the end of one, `ends`) and returns how many of
/// them it joins into which op, if any. `op_at` follows. Returns, for each old op, its new index.
fn join(
    ops: &mut Vec<Op>,
    op_at: &mut Vec<usize>,
    ends: &[usize],
    run: impl Fn(&[Op]) -> Option<(usize, Op)>,
) -> Vec<usize> {
    // Where the span of each op ends: the next op that begins after a span's end.
    let mut span_end = vec![ops.len(); ops.len()];
    for j in (1..ops.len()).rev() {
        let boundary = op_at.get(j).is_none_or(|at| ends.contains(at));
        span_end[j - 1] = if boundary { j } else { span_end[j] };
    }
    let mut joined = Vec::with_capacity(ops.len());
    let mut joined_at = Vec::with_capacity(ops.len());
    let mut remap = Vec::with_capacity(ops.len());
    let mut i = 0;
    while i < ops.len() {
        let (n, op) = match run(&ops[i..span_end[i]]) {
            Some((n, op)) if n >= 1 => (n, op),
            _ => (1, ops[i].clone()),
        };
        remap.extend(std::iter::repeat_n(joined.len(), n));
        joined.push(op);
        joined_at.push(op_at[i]);
        i += n;
    }
    *ops = joined;
    *op_at = joined_at;
    remap
}

/// Joins the packets of each counter sample into one [`Op::Sample`].
fn join_samples(ops: &mut Vec<Op>, op_at: &mut Vec<usize>, ends: &[usize]) -> Vec<usize> {
    let copy = |op: Option<&Op>| match op {
        Some(Op::Copy {
            src: Source::Register(reg),
            dst: Dest::Memory(addr),
            wide: false,
        }) => Some((*reg, *addr)),
        _ => None,
    };
    join(ops, op_at, ends, |span| {
        let grbm = match span.first()? {
            Op::Write(
                Reg {
                    register: Register::GrbmGfxIndex,
                    ..
                },
                v,
            ) => Some(*v),
            _ => None,
        };
        let first = usize::from(grbm.is_some());
        let ((lo, a), (hi, b)) = copy(span.get(first)).zip(copy(span.get(first + 1)))?;
        let pair = b == a + 4
            && lo.aid == hi.aid
            && matches!((lo.register, hi.register),
                (Register::Lo(x, k), Register::Hi(y, l)) if (x, k) == (y, l));
        pair.then_some((first + 2, Op::Sample { grbm, lo, dst: a }))
    })
}

/// Joins runs of [`Op::Sample`]s of CP-controlled (plain and SQ) blocks, and the
/// `GRBM_GFX_INDEX` writes between them, into one [`Op::Samples`] each, when the run begins by
/// setting `GRBM_GFX_INDEX` (so that every sample's index is known) and holds at least two
/// samples.
fn join_runs(ops: &mut Vec<Op>, op_at: &mut Vec<usize>, ends: &[usize]) -> Vec<usize> {
    let step = |op: &Op| match op {
        Op::Write(
            Reg {
                register: Register::GrbmGfxIndex,
                ..
            },
            v,
        ) => Some((Some(*v), None)),
        Op::Sample { grbm, lo, dst } => match lo.register {
            Register::Lo(b, k)
                if lo.aid.is_none()
                    && matches!(BLOCKS[b as usize].style, Style::Plain | Style::Sq) =>
            {
                Some((*grbm, Some((b, k, *dst))))
            }
            _ => None,
        },
        _ => None,
    };
    join(ops, op_at, ends, |span| {
        let mut steps = Vec::new();
        let mut grbm: Option<u32> = None;
        let mut n = 0;
        for op in span {
            let Some((set, sample)) = step(op) else {
                break;
            };
            grbm = set.or(grbm);
            match (grbm, sample) {
                (None, _) => break,
                (Some(g), Some((b, k, dst))) => steps.push(Step { grbm: g, b, k, dst }),
                (Some(_), None) => {}
            }
            n += 1;
        }
        let run = SampleRun {
            steps,
            grbm_after: grbm.unwrap_or(grbm::BROADCAST),
            plans: std::sync::Mutex::new(Vec::new()),
        };
        (run.steps.len() >= 2).then(|| (n, Op::Samples(Box::new(run))))
    })
}

/// Joins runs of register writes that only set values (see [`WriteRun`]), holding a select and
/// at least two writes, into one [`Op::Writes`] each.
fn join_writes(ops: &mut Vec<Op>, op_at: &mut Vec<usize>, ends: &[usize]) -> Vec<usize> {
    let setting = |op: &Op| match op {
        Op::Write(reg, value) => match reg.register {
            Register::Select(b, _)
                if reg.aid.is_none()
                    && matches!(BLOCKS[b as usize].style, Style::Plain | Style::Sq) =>
            {
                Some((*reg, *value))
            }
            Register::GrbmGfxIndex
            | Register::SqCtrl
            | Register::SqMask
            | Register::ComputePerfcountEnable
            | Register::RlcPerfmonClkCntl => Some((*reg, *value)),
            _ => None,
        },
        _ => None,
    };
    join(ops, op_at, ends, |span| {
        let writes: Vec<(Reg, u32)> = span.iter().map_while(setting).collect();
        let selects = writes
            .iter()
            .any(|(reg, _)| matches!(reg.register, Register::Select(..)));
        if writes.len() < 2 || !selects {
            return None;
        }
        let mut finals: Vec<(Reg, u32)> = Vec::new();
        for &(reg, value) in writes.iter().rev() {
            let select = matches!(reg.register, Register::Select(..));
            if !select && !finals.iter().any(|(r, _)| *r == reg) {
                finals.push((reg, value));
            }
        }
        finals.reverse();
        let n = writes.len();
        let run = WriteRun {
            writes,
            finals,
            applied: std::sync::Mutex::new(Vec::new()),
        };
        Some((n, Op::Writes(Box::new(run))))
    })
}

/// The architecture a program runs for, with its blocks looked up once.
struct Target {
    arch: String,
    /// The block of the architecture behind each entry of [`BLOCKS`].
    blocks: [Option<&'static Block>; BLOCKS.len()],
    /// SQ's high-resolution accumulate select.
    accum_hi: u32,
}

impl Target {
    /// The target of `arch`, made once per architecture for the life of the process.
    fn of(arch: &str) -> &'static Target {
        static TARGETS: std::sync::Mutex<Vec<&'static Target>> = std::sync::Mutex::new(Vec::new());
        let mut targets = TARGETS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(target) = targets.iter().find(|t| t.arch == arch) {
            return target;
        }
        let target: &'static Target = Box::leak(Box::new(Target::new(arch)));
        targets.push(target);
        target
    }

    fn new(arch: &str) -> Target {
        Target {
            arch: arch.to_string(),
            blocks: std::array::from_fn(|b| tables().block_by_name(arch, BLOCKS[b].name)),
            accum_hi: sq::accum_prev_hi(arch),
        }
    }

    /// The block of this architecture whose registers are `BLOCKS[b]`.
    fn block(&self, b: u8) -> Option<&'static Block> {
        self.blocks[b as usize]
    }
}

/// A command buffer compiled once against the register map of its device's architecture.
pub(super) struct Program {
    target: &'static Target,
    ops: Vec<Op>,
    /// The buffer's dwords, for problems found while it runs.
    dwords: Vec<u32>,
}

/// What one XCC's command processor holds.
#[derive(Default)]
struct Xcc {
    grbm: u32,
    perfmon: u32,
    rlc_clock: bool,
    compute_enable: bool,
    sq_ctrl: u32,
    sq_mask: u32,
    /// CP counting intervals since the last reset.
    counting: Vec<(u64, Option<u64>)>,
    /// When the live counters were last latched into LO/HI.
    sampled_at: Option<u64>,
    /// Select values of the plain and SQ blocks.
    selects: Selects,
    /// MC-style counters by (block, instance).
    mcs: HashMap<(u8, u32), McCounter>,
}

/// Select registers a block instance may have (SQ's register table lists 16).
const SLOTS: usize = 16;

/// Select values of one XCC: per block, a table over instance, shader engine and slot (0 until
/// written).
#[derive(Default)]
struct Selects {
    blocks: Vec<Vec<u32>>,
    /// Changes whenever a select value changes: what [`SamplePlan`]s resolved stays valid
    /// while it does not.
    generation: u64,
}

impl Selects {
    fn engines(block: &Block, geometry: &Geometry) -> u32 {
        if block.per_se {
            geometry.se_per_xcc()
        } else {
            1
        }
    }

    fn index(block: &Block, geometry: &Geometry, i: u32, se: u32, k: u8) -> usize {
        ((i * Self::engines(block, geometry) + se) as usize) * SLOTS + k as usize
    }

    fn set(
        &mut self,
        b: u8,
        block: &Block,
        geometry: &Geometry,
        (i, se, k): (u32, u32, u8),
        value: u32,
    ) {
        let b = b as usize;
        if self.blocks.len() <= b {
            self.blocks.resize_with(b + 1, Vec::new);
        }
        let table = &mut self.blocks[b];
        if table.is_empty() {
            let size = (block.table_instances.max(1) * Self::engines(block, geometry)) as usize;
            table.resize(size * SLOTS, 0);
        }
        if let Some(slot) = table.get_mut(Self::index(block, geometry, i, se, k)) {
            if *slot != value {
                *slot = value;
                self.generation += 1;
            }
        }
    }

    fn get(&self, b: u8, block: &Block, geometry: &Geometry, (i, se, k): (u32, u32, u8)) -> u32 {
        self.blocks
            .get(b as usize)
            .and_then(|t| t.get(Self::index(block, geometry, i, se, k)))
            .copied()
            .unwrap_or(0)
    }
}

/// The CFG slots, `RSLT_CNTL` and counting intervals of one MC-style block instance.
#[derive(Default)]
struct McCounter {
    cfg: [u32; 16],
    result: u32,
    intervals: Vec<(u64, Option<u64>)>,
}

impl McCounter {
    fn control(&mut self, value: u32, now: u64) {
        if value & mc::CLEAR_ALL != 0 {
            self.intervals.clear();
        }
        if value & mc::ENABLE_ANY != 0 {
            open(&mut self.intervals, now);
        } else {
            close(&mut self.intervals, now);
        }
        self.result = value;
    }
}

fn open(intervals: &mut Vec<(u64, Option<u64>)>, now: u64) {
    if intervals.last().is_none_or(|i| i.1.is_some()) {
        intervals.push((now, None));
    }
}

fn close(intervals: &mut [(u64, Option<u64>)], now: u64) {
    if let Some(last) = intervals.last_mut().filter(|i| i.1.is_none()) {
        last.1 = Some(now.max(last.0));
    }
}

/// The perf-counter registers of one device.
#[derive(Default)]
pub(super) struct PerfRegisters {
    xccs: Vec<Xcc>,
    /// Per-AID blocks by (block, instance), shared by every XCC.
    aids: HashMap<(u8, u32), McCounter>,
    /// What the last run worked out, its memory kept for the next (see [`Cache::renew`]).
    cache: Option<Box<Cache>>,
}

impl PerfRegisters {
    /// The earliest time any counter may still count from (kernels before it can be forgotten).
    pub(super) fn earliest_interval(&self) -> Option<u64> {
        let xcc = self
            .xccs
            .iter()
            .filter_map(|x| x.counting.last().map(|i| i.0));
        let mcs = self
            .xccs
            .iter()
            .flat_map(|x| x.mcs.values())
            .chain(self.aids.values())
            .filter_map(|m| m.intervals.last().map(|i| i.0));
        xcc.chain(mcs).min()
    }
}

/// Problems found in a buffer, each with the packet's dwords.
type Problems = Vec<(String, Vec<u32>)>;

fn packet_dwords(dwords: &[u32], at: usize) -> Vec<u32> {
    let ndw = dwords
        .get(at)
        .map_or(1, |h| (((h >> 16) & 0x3FFF) + 2) as usize);
    dwords[at..(at + ndw).min(dwords.len())].to_vec()
}

impl Program {
    /// Compiles `dwords` for a device of `arch`, reporting what cannot be executed.
    pub(super) fn compile(dwords: &[u32], arch: &str, device: u32) -> Program {
        let target = Target::of(arch);
        let mut problems: Problems = Vec::new();
        let mut ops: Vec<Op> = Vec::new();
        // Dword offset each op came from, and pending predicates: (op index, end dword).
        let mut op_at: Vec<usize> = Vec::new();
        let mut predicates: Vec<(usize, usize, usize)> = Vec::new();
        let mut boundaries: Vec<usize> = vec![dwords.len()];
        match gfx9::packets(dwords) {
            Err(e) => problems.push((e.what, packet_dwords(dwords, e.at))),
            Ok(packets) => {
                for p in packets {
                    boundaries.push(p.at);
                    let before = ops.len();
                    if let Err(what) = decode(&p, target, &mut ops) {
                        ops.truncate(before);
                        problems.push((what, packet_dwords(dwords, p.at)));
                        continue;
                    }
                    if p.opcode == op::PRED_EXEC {
                        let n = (p.body[0] & 0x3FFF) as usize;
                        predicates.push((before, p.at + 2 + n, p.at));
                    }
                    op_at.extend(std::iter::repeat_n(p.at, ops.len() - before));
                }
            }
        }
        let ends: Vec<usize> = predicates.iter().map(|p| p.1).collect();
        let remap = join_samples(&mut ops, &mut op_at, &ends);
        let remap_runs = join_runs(&mut ops, &mut op_at, &ends);
        let remap_writes = join_writes(&mut ops, &mut op_at, &ends);
        for (index, end, at) in predicates {
            let index = remap_writes[remap_runs[remap[index]]];
            let covered = op_at[index + 1..].iter().take_while(|&&a| a < end).count();
            if !boundaries.contains(&end) {
                problems.push((
                    "PRED_EXEC covers part of a packet".to_string(),
                    packet_dwords(dwords, at),
                ));
            }
            if let Op::Predicate { skip, .. } = &mut ops[index] {
                *skip = covered;
            }
        }
        for (what, packet) in &problems {
            report(device, what, packet);
        }
        Program {
            target,
            ops,
            dwords: dwords.to_vec(),
        }
    }

    /// The dwords the program was compiled from.
    pub(super) fn dwords(&self) -> &[u32] {
        &self.dwords
    }

    /// Runs the program on every XCC of `dev` at `now`.
    pub(super) fn run(&self, dev: &mut Device, device: u32, now: u64) {
        let mut cache = match dev.perf.cache.take() {
            Some(mut cache) => {
                cache.renew(dev, &self.target.arch);
                cache
            }
            None => Box::new(Cache::new(dev, &self.target.arch)),
        };
        let xccs = cache.geometry.xcc.max(1) as usize;
        if dev.perf.xccs.len() < xccs {
            dev.perf.xccs.resize_with(xccs, Xcc::default);
        }
        for x in 0..xccs {
            self.run_on(dev, device, x, now, &mut cache, 0);
        }
        dev.perf.cache = Some(cache);
    }

    fn run_on(
        &self,
        dev: &mut Device,
        device: u32,
        x: usize,
        now: u64,
        cache: &mut Cache,
        depth: u32,
    ) {
        let mut i = 0;
        while i < self.ops.len() {
            match &self.ops[i] {
                Op::Predicate { mask, skip } => {
                    if mask & (1 << x) == 0 {
                        i += skip;
                    }
                }
                Op::Write(reg, value) => {
                    cache.written(*reg);
                    write(dev, self.target, &cache.geometry, x, *reg, *value, now);
                }
                Op::Copy { src, dst, wide } => {
                    let value = self.source(dev, x, *src, *wide, now, cache);
                    match dst {
                        Dest::Register(reg) => {
                            cache.written(*reg);
                            write(
                                dev,
                                self.target,
                                &cache.geometry,
                                x,
                                *reg,
                                value as u32,
                                now,
                            );
                        }
                        // SAFETY: the destination is memory of this process that the tool
                        // handed to aqlprofile for these packets.
                        Dest::Memory(addr) => unsafe { store(*addr, value, *wide) },
                    }
                }
                Op::WriteMemory { dst, data } => {
                    for (k, &v) in data.iter().enumerate() {
                        // SAFETY: as for COPY_DATA.
                        unsafe { store(dst + 4 * k as u64, u64::from(v), false) };
                    }
                }
                Op::Wait {
                    src,
                    function,
                    reference,
                    mask,
                    at,
                } => {
                    let value = self.source(dev, x, *src, false, now, cache) as u32 & mask;
                    if !compare(*function, value, *reference & mask) {
                        report(
                            device,
                            &format!(
                                "WAIT_REG_MEM would wait forever: 0x{value:x} never meets function {function} against 0x{reference:x}"
                            ),
                            &packet_dwords(&self.dwords, *at),
                        );
                    }
                }
                Op::Sample { grbm, lo, dst } => {
                    if let Some(v) = grbm {
                        cache.last = None;
                        dev.perf.xccs[x].grbm = *v;
                    }
                    let hi = next_register(*lo).unwrap_or(*lo);
                    let low = read(dev, self.target, x, *lo, now, cache);
                    let high = read(dev, self.target, x, hi, now, cache);
                    // SAFETY: as for COPY_DATA.
                    unsafe {
                        store(*dst, u64::from(low), false);
                        store(dst + 4, u64::from(high), false);
                    }
                }
                Op::Samples(run) => self.run_samples(dev, x, cache, run),
                Op::Writes(run) => self.run_writes(dev, x, now, cache, run),
                Op::Chain { addr, size } => {
                    if depth >= MAX_IB_DEPTH {
                        report(
                            device,
                            "INDIRECT_BUFFER nested too deep",
                            &[*addr as u32, (*addr >> 32) as u32, *size],
                        );
                    } else if *addr != 0 && *size != 0 {
                        // SAFETY: a chained buffer of this process, as the outer one.
                        let dwords = unsafe {
                            std::slice::from_raw_parts(*addr as *const u32, *size as usize)
                        };
                        let inner = Program::compile(dwords, &self.target.arch, device);
                        inner.run_on(dev, device, x, now, cache, depth + 1);
                    }
                }
            }
            i += 1;
        }
    }

    /// Runs a [`SampleRun`] on XCC `x`: every sample as [`Op::Sample`] would read and store it,
    /// through the plan this XCC made of the run (made again when a select changed), with each
    /// counter's values prepared once.
    fn run_samples(&self, dev: &mut Device, x: usize, cache: &mut Cache, run: &SampleRun) {
        let mut plans = run.plans.lock().unwrap_or_else(|p| p.into_inner());
        if plans.len() <= x {
            plans.resize_with(x + 1, || None);
        }
        let generation = dev.perf.xccs[x].selects.generation;
        let geometry = cache.geometry;
        let plan = match &mut plans[x] {
            Some(plan) if plan.generation == generation && plan.geometry == geometry => plan,
            slot => slot.insert(self.plan_samples(dev, x, cache, run)),
        };
        let xs = &dev.perf.xccs[x];
        let sq_counts = xs.compute_enable && xs.sq_ctrl & sq::CTRL_CS != 0;
        let mut prepared = std::mem::take(&mut cache.run_prepared);
        if let Some(sampled) = xs.sampled_at {
            cache.clip(&xs.counting, sampled);
        }
        // XCCs of one device usually read the same counters over the same intervals: the
        // values the last XCC of this run prepared serve this one.
        let state = (xs.sampled_at.is_some(), sq_counts);
        let same = cache.run_state == Some(state)
            && cache.run_keys == plan.keys
            && (xs.sampled_at.is_none() || cache.run_intervals == cache.scratch);
        if !same {
            prepared.clear();
            for (&(b, event, accum), &name) in plan.keys.iter().zip(&plan.names) {
                let block = self.target.block(b);
                let counts = match BLOCKS[b as usize].style {
                    Style::Sq => sq_counts,
                    _ => true,
                };
                prepared.push(match (block, xs.sampled_at) {
                    (Some(block), Some(_)) if counts => {
                        Some(cache.prepared_clipped(dev, block, (event, accum), || name))
                    }
                    _ => None,
                });
            }
            cache.run_state = Some(state);
            cache.run_keys.clone_from(&plan.keys);
            cache.run_intervals.clone_from(&cache.scratch);
        }
        let lookup = |p: &Option<usize>| p.map(|i| cache.prepared[i].1.lookup());
        // The counters of a run are few: their lookups fit on the stack.
        let mut few: [Option<Lookup>; 32] = [const { None }; 32];
        let many: Vec<Option<Lookup>>;
        let lookups = if prepared.len() <= few.len() {
            for (slot, p) in few.iter_mut().zip(&prepared) {
                *slot = lookup(p);
            }
            &few[..prepared.len()]
        } else {
            many = prepared.iter().map(lookup).collect();
            &many[..]
        };
        let clock = cache.clock;
        // SAFETY: as for COPY_DATA. LO then HI, little-endian: the 64-bit value.
        let put = |dst: u64, value: u64| unsafe {
            if dst != 0 {
                (dst as *mut u64).write_unaligned(value);
            } else {
                store(dst + 4, value >> 32, false);
            }
        };
        for (key, steps) in &plan.reads {
            match lookups.get(*key as usize) {
                Some(Some(Lookup::Direct(values))) => {
                    for &(dst, position) in steps {
                        put(dst, values.get(position as usize).copied().unwrap_or(0));
                    }
                }
                Some(Some(Lookup::Constant(value))) => {
                    for &(dst, _) in steps {
                        put(dst, *value);
                    }
                }
                Some(Some(lookup)) => {
                    for &(dst, position) in steps {
                        put(dst, lookup.value(position as usize, clock));
                    }
                }
                _ => {
                    for &(dst, _) in steps {
                        put(dst, 0);
                    }
                }
            }
        }
        cache.run_prepared = prepared;
        dev.perf.xccs[x].grbm = run.grbm_after;
        cache.last = None;
    }

    /// Runs a [`WriteRun`] on XCC `x`: in full, or, when the XCC's selects hold what it left
    /// them last time and `GRBM_GFX_INDEX` is what it found then, only its last values of the
    /// other registers.
    fn run_writes(&self, dev: &mut Device, x: usize, now: u64, cache: &mut Cache, run: &WriteRun) {
        let mut applied = run.applied.lock().unwrap_or_else(|p| p.into_inner());
        if applied.len() <= x {
            applied.resize(x + 1, None);
        }
        let xs = &dev.perf.xccs[x];
        let entry = xs.grbm;
        let geometry = cache.geometry;
        let writes = match applied[x] {
            Some(state) if state == (xs.selects.generation, entry, geometry) => &run.finals,
            _ => &run.writes,
        };
        for &(reg, value) in writes {
            write(dev, self.target, &geometry, x, reg, value, now);
        }
        applied[x] = Some((dev.perf.xccs[x].selects.generation, entry, geometry));
        cache.last = None;
    }

    /// Resolves every sample of `run` on XCC `x` through the select registers as they stand.
    fn plan_samples(
        &self,
        dev: &Device,
        x: usize,
        cache: &mut Cache,
        run: &SampleRun,
    ) -> SamplePlan {
        let xs = &dev.perf.xccs[x];
        let geometry = cache.geometry;
        let mut keys: Vec<(u8, u32, u32)> = Vec::new();
        let mut reads = Vec::with_capacity(run.steps.len());
        for step in &run.steps {
            let Some(block) = self.target.block(step.b) else {
                reads.push((step.dst, ZERO, 0));
                continue;
            };
            let layout = cache.layout(step.b, block);
            let i = grbm::instance_of(step.grbm).unwrap_or(0);
            let se = if block.per_se {
                grbm::se_of(step.grbm).unwrap_or(0)
            } else {
                0
            };
            if i >= layout.instances || se >= layout.se || x as u32 >= layout.xcc {
                reads.push((step.dst, ZERO, 0));
                continue;
            }
            let select = |k: u8| xs.selects.get(step.b, block, &geometry, (i, se, k));
            let (event, accum) = selected_event(self.target, step.b, step.k, select);
            let key = (step.b, event, accum);
            let index = match keys.iter().position(|k| *k == key) {
                Some(index) => index,
                None => {
                    keys.push(key);
                    keys.len() - 1
                }
            };
            reads.push((step.dst, index as u32, layout.index(x as u32, i, se) as u32));
        }
        // Grouped by counter, each group in step order, so that a run looks each counter up
        // once.
        let mut by_key: Vec<(u32, Vec<(u64, u32)>)> = Vec::new();
        for (dst, key, position) in reads {
            match by_key.iter_mut().find(|(k, _)| *k == key) {
                Some((_, steps)) => steps.push((dst, position)),
                None => by_key.push((key, vec![(dst, position)])),
            }
        }
        let reads = by_key;
        let arch = self.target.arch.as_str();
        let names = keys
            .iter()
            .map(|&(b, event, _)| {
                let block = self.target.block(b)?;
                tables().counter_name(arch, &block.name, event)
            })
            .collect();
        SamplePlan {
            generation: xs.selects.generation,
            geometry,
            keys,
            names,
            reads,
        }
    }

    fn source(
        &self,
        dev: &Device,
        x: usize,
        src: Source,
        wide: bool,
        now: u64,
        cache: &mut Cache,
    ) -> u64 {
        match src {
            Source::Immediate(v) => v,
            // The GPU clock counter runs at 100 MHz.
            Source::Clock => now / 10,
            // SAFETY: memory of this process named by the packet.
            Source::Memory(addr) => unsafe { load(addr, wide) },
            Source::Register(reg) => {
                let lo = read(dev, self.target, x, reg, now, cache);
                if !wide {
                    return u64::from(lo);
                }
                let next =
                    next_register(reg).map_or(0, |r| read(dev, self.target, x, r, now, cache));
                u64::from(lo) | u64::from(next) << 32
            }
        }
    }
}

/// The register after `reg` (a 64-bit COPY_DATA reads two): HI after LO.
fn next_register(reg: Reg) -> Option<Reg> {
    match reg.register {
        Register::Lo(b, k) => Some(Reg {
            register: Register::Hi(b, k),
            ..reg
        }),
        _ => None,
    }
}

/// # Safety
/// `addr` must be writable memory of this process.
unsafe fn store(addr: u64, value: u64, wide: bool) {
    if addr == 0 {
        return;
    }
    // SAFETY: the caller's guarantee.
    unsafe {
        if wide {
            (addr as *mut u64).write_unaligned(value);
        } else {
            (addr as *mut u32).write_unaligned(value as u32);
        }
    }
}

/// # Safety
/// `addr` must be readable memory of this process.
unsafe fn load(addr: u64, wide: bool) -> u64 {
    if addr == 0 {
        return 0;
    }
    // SAFETY: the caller's guarantee.
    unsafe {
        if wide {
            (addr as *const u64).read_unaligned()
        } else {
            u64::from((addr as *const u32).read_unaligned())
        }
    }
}

fn compare(function: u32, value: u32, reference: u32) -> bool {
    match function {
        0 => true,
        1 => value < reference,
        2 => value <= reference,
        3 => value == reference,
        4 => value != reference,
        5 => value >= reference,
        6 => value > reference,
        _ => false,
    }
}

/// Reports a problem on stderr and in the ground-truth log.
fn report(device: u32, what: &str, packet: &[u32]) {
    let words: Vec<String> = packet.iter().map(|d| format!("{d:08x}")).collect();
    eprintln!("rtl-sim: GPU {device}: {what} (packet {})", words.join(" "));
    truth::record_problem(device, what, packet);
}

fn resolve(address: u64) -> Result<Reg, String> {
    let (reg, aid) = smn::split(address);
    let register =
        gfx9::register(reg).ok_or_else(|| format!("register 0x{reg:x} is not modelled"))?;
    if aid.is_some() {
        let aid_block = matches!(
            register,
            Register::Select(b, _) | Register::Lo(b, _) | Register::Hi(b, _) | Register::ResultControl(b)
                if BLOCKS[b as usize].style == Style::Aid
        );
        if !aid_block {
            return Err(format!(
                "SMN address 0x{address:x} of register 0x{reg:x}, which no AID holds"
            ));
        }
    }
    Ok(Reg { register, aid })
}

fn decode(p: &gfx9::Packet, target: &Target, ops: &mut Vec<Op>) -> Result<(), String> {
    let body = p.body;
    let need = |n: usize| {
        if body.len() < n {
            Err(format!(
                "opcode 0x{:02x} with {} dwords of body, {n} needed",
                p.opcode,
                body.len()
            ))
        } else {
            Ok(())
        }
    };
    match p.opcode {
        op::NOP => {}
        op::SET_UCONFIG_REG | op::SET_SH_REG => {
            need(2)?;
            if body[0] & !0xFFFF != 0 {
                return Err(format!("register offset 0x{:x} has index bits", body[0]));
            }
            let base = if p.opcode == op::SET_UCONFIG_REG {
                gfx9::UCONFIG_BASE
            } else {
                gfx9::SH_BASE
            };
            for (k, &value) in body[1..].iter().enumerate() {
                let reg = resolve(u64::from(base + body[0] + k as u32))?;
                check_write(reg, value, target)?;
                push_write(ops, reg, value);
            }
        }
        op::COPY_DATA => {
            need(5)?;
            let control = body[0];
            let wide = control & copy::COUNT_64 != 0;
            let src_address = u64::from(body[1]) | u64::from(body[2]) << 32;
            let dst_address = u64::from(body[3]) | u64::from(body[4]) << 32;
            let src = match control & 0xF {
                copy::SRC_REG | copy::SRC_PERFCOUNTER => Source::Register(resolve(src_address)?),
                copy::SRC_MEM => Source::Memory(src_address & !3),
                copy::SRC_IMMEDIATE => Source::Immediate(if wide {
                    src_address
                } else {
                    u64::from(body[1])
                }),
                copy::SRC_GPU_CLOCK => Source::Clock,
                other => return Err(format!("COPY_DATA source select {other} is not modelled")),
            };
            let dst = match (control >> 8) & 0xF {
                copy::DST_REG | copy::DST_PERFCOUNTER => Dest::Register(resolve(dst_address)?),
                copy::DST_MEM | copy::DST_TC_L2 => Dest::Memory(dst_address & !3),
                other => {
                    return Err(format!(
                        "COPY_DATA destination select {other} is not modelled"
                    ))
                }
            };
            match (src, dst) {
                (Source::Immediate(v), Dest::Register(reg)) => {
                    check_write(reg, v as u32, target)?;
                    push_write(ops, reg, v as u32);
                }
                (_, Dest::Register(reg)) => {
                    return Err(format!(
                        "COPY_DATA of a computed value into register {:?} is not modelled",
                        reg.register
                    ))
                }
                _ => ops.push(Op::Copy { src, dst, wide }),
            }
        }
        op::WRITE_DATA => {
            need(3)?;
            let dst_sel = (body[0] >> 8) & 0xF;
            let address = u64::from(body[1]) | u64::from(body[2]) << 32;
            match dst_sel {
                0 => {
                    let increment = body[0] & (1 << 16) == 0;
                    for (k, &value) in body[3..].iter().enumerate() {
                        let step = if increment { k as u64 } else { 0 };
                        let reg = resolve(address + step)?;
                        check_write(reg, value, target)?;
                        push_write(ops, reg, value);
                    }
                }
                2 | 5 => ops.push(Op::WriteMemory {
                    dst: address & !3,
                    data: body[3..].to_vec(),
                }),
                other => {
                    return Err(format!(
                        "WRITE_DATA destination select {other} is not modelled"
                    ))
                }
            }
        }
        op::EVENT_WRITE => {
            need(1)?;
            if body[0] != gfx9::CS_PARTIAL_FLUSH {
                return Err(format!("EVENT_WRITE 0x{:x} is not modelled", body[0]));
            }
        }
        op::PRED_EXEC => {
            need(1)?;
            ops.push(Op::Predicate {
                mask: body[0] >> 24,
                skip: 0,
            });
        }
        op::ACQUIRE_MEM => need(6)?,
        op::WAIT_REG_MEM => {
            need(6)?;
            let address = u64::from(body[1]) | u64::from(body[2]) << 32;
            let src = if body[0] & (1 << 4) != 0 {
                Source::Memory(address & !3)
            } else {
                Source::Register(resolve(address)?)
            };
            ops.push(Op::Wait {
                src,
                function: body[0] & 7,
                reference: body[3],
                mask: body[4],
                at: p.at,
            });
        }
        op::INDIRECT_BUFFER => {
            need(3)?;
            ops.push(Op::Chain {
                addr: u64::from(body[0] & !3) | u64::from(body[1] & 0xFFFF) << 32,
                size: body[2] & 0xF_FFFF,
            });
        }
        other => return Err(format!("opcode 0x{other:02x} is not modelled")),
    }
    Ok(())
}

/// Adds a register write. Writing a counter's LO or HI (0, as `check_write` demands) changes
/// nothing the model keeps (counters are reset through `CP_PERFMON_CNTL` and `RSLT_CNTL`), so
/// such writes are checked and left out.
fn push_write(ops: &mut Vec<Op>, reg: Reg, value: u32) {
    if !matches!(reg.register, Register::Lo(..) | Register::Hi(..)) {
        ops.push(Op::Write(reg, value));
    }
}

/// Checks that the GPU models `value` written to `reg`.
fn check_write(reg: Reg, value: u32, target: &Target) -> Result<(), String> {
    let arch = target.arch.as_str();
    let unknown_bits = |allowed: u32| {
        if value & !allowed != 0 {
            Err(format!(
                "value 0x{value:x} of {:?} sets bits 0x{:x} that are not modelled",
                reg.register,
                value & !allowed
            ))
        } else {
            Ok(())
        }
    };
    match reg.register {
        Register::GrbmGfxIndex => unknown_bits(grbm::BROADCAST | 0x00FF_FFFF),
        Register::CpPerfmonCntl => {
            unknown_bits(perfmon::STATE_MASK | perfmon::SAMPLE)?;
            if value & perfmon::STATE_MASK > perfmon::STOP {
                return Err(format!(
                    "CP_PERFMON_CNTL state {} is not modelled",
                    value & 0xF
                ));
            }
            Ok(())
        }
        Register::RlcPerfmonClkCntl | Register::ComputePerfcountEnable => unknown_bits(1),
        Register::SqCtrl | Register::SqMask => Ok(()),
        Register::Lo(..) | Register::Hi(..) => unknown_bits(0),
        Register::ResultControl(_) => unknown_bits(mc::SLOT_MASK | mc::ENABLE_ANY | mc::CLEAR_ALL),
        Register::Select(b, k) => {
            let regs = &BLOCKS[b as usize];
            let block = target
                .block(b)
                .ok_or_else(|| format!("{arch} has no {} block", regs.name))?;
            let event = match regs.style {
                Style::Plain if regs.sel_bits == 0 => return unknown_bits(0),
                Style::Plain => {
                    unknown_bits((1 << regs.sel_bits) - 1)?;
                    value
                }
                Style::Sq => {
                    unknown_bits(sq::SEL_MASK | sq::SELECT_MASKS)?;
                    let sel = value & sq::SEL_MASK;
                    if sel == sq::ACCUM_PREV || sel == target.accum_hi {
                        if k == 0 {
                            return Err("SQ accumulation in slot 0 has no previous slot".into());
                        }
                        return Ok(());
                    }
                    sel
                }
                Style::Mc | Style::Aid => {
                    unknown_bits(mc::SEL_MASK | mc::MODE_MASK | mc::ENABLE)?;
                    if value & mc::MODE_MASK != 0 {
                        return Err(format!(
                            "{} PERF_MODE {} is not modelled",
                            regs.name,
                            (value & mc::MODE_MASK) >> 24
                        ));
                    }
                    value & mc::SEL_MASK
                }
            };
            // aqlprofile's last event is not a hardware limit: events the counter catalog
            // defines beyond it are counted.
            if event > block.max_event && tables().counter_name(arch, &block.name, event).is_none()
            {
                return Err(format!(
                    "{} select {event} is beyond the block's last event {}",
                    regs.name, block.max_event
                ));
            }
            Ok(())
        }
    }
}

/// The instances (within `count`) a `GRBM_GFX_INDEX` value reaches.
fn reached(index: Option<u32>, count: u32) -> std::ops::Range<u32> {
    match index {
        None => 0..count,
        Some(i) if i < count => i..i + 1,
        Some(_) => 0..0,
    }
}

fn geometry_of(dev: &Device, arch: &str) -> Geometry {
    match &dev.info {
        Some(info) => info.geometry,
        None => super::DeviceInfo::reference(arch).geometry,
    }
}

fn write(
    dev: &mut Device,
    target: &Target,
    geometry: &Geometry,
    x: usize,
    reg: Reg,
    value: u32,
    now: u64,
) {
    let xs = &mut dev.perf.xccs[x];
    match reg.register {
        Register::GrbmGfxIndex => xs.grbm = value,
        Register::CpPerfmonCntl => {
            match value & perfmon::STATE_MASK {
                perfmon::DISABLE_AND_RESET => {
                    xs.counting.clear();
                    xs.sampled_at = None;
                }
                perfmon::START => {
                    if xs.rlc_clock {
                        open(&mut xs.counting, now);
                    }
                }
                _ => close(&mut xs.counting, now),
            }
            if value & perfmon::SAMPLE != 0 {
                xs.sampled_at = Some(now);
            }
            xs.perfmon = value;
        }
        Register::RlcPerfmonClkCntl => xs.rlc_clock = value & 1 != 0,
        Register::ComputePerfcountEnable => xs.compute_enable = value & 1 != 0,
        Register::SqCtrl => xs.sq_ctrl = value,
        Register::SqMask => xs.sq_mask = value,
        Register::Lo(..) | Register::Hi(..) => {}
        Register::Select(..) | Register::ResultControl(_) => {
            write_block_register(dev, target, geometry, x, reg, value, now)
        }
    }
}

/// A write to a block's select or result-control register (see [`write`]), kept out of the
/// writes of the command processor's own registers.
#[inline(never)]
fn write_block_register(
    dev: &mut Device,
    target: &Target,
    geometry: &Geometry,
    x: usize,
    reg: Reg,
    value: u32,
    now: u64,
) {
    let xs = &mut dev.perf.xccs[x];
    match reg.register {
        Register::Select(b, k) => {
            let Some(block) = target.block(b) else {
                return;
            };
            let regs = &BLOCKS[b as usize];
            match regs.style {
                Style::Plain | Style::Sq => {
                    let engines = if block.per_se {
                        geometry.se_per_xcc()
                    } else {
                        1
                    };
                    for i in reached(grbm::instance_of(xs.grbm), block.table_instances.max(1)) {
                        for se in reached(grbm::se_of(xs.grbm).filter(|_| block.per_se), engines) {
                            xs.selects.set(b, block, geometry, (i, se, k), value);
                        }
                    }
                }
                Style::Mc => {
                    for i in reached(grbm::instance_of(xs.grbm), block.table_instances.max(1)) {
                        xs.mcs.entry((b, i)).or_default().cfg[k as usize] = value;
                    }
                }
                Style::Aid => {
                    let i = aid_instance(block, reg.aid, xs.grbm);
                    dev.perf.aids.entry((b, i)).or_default().cfg[k as usize] = value;
                }
            }
        }
        Register::ResultControl(b) => {
            let Some(block) = target.block(b) else {
                return;
            };
            if BLOCKS[b as usize].style == Style::Aid {
                let i = aid_instance(block, reg.aid, xs.grbm);
                dev.perf.aids.entry((b, i)).or_default().control(value, now);
            } else {
                for i in reached(grbm::instance_of(xs.grbm), block.table_instances.max(1)) {
                    xs.mcs.entry((b, i)).or_default().control(value, now);
                }
            }
        }
        _ => {}
    }
}

/// The instance of an AID block an access reaches: the AID of its SMN address (times the
/// instances per AID), else the `GRBM_GFX_INDEX` instance.
fn aid_instance(block: &Block, aid: Option<u32>, grbm_index: u32) -> u32 {
    match aid {
        Some(aid) => aid * (block.table_instances / 4).max(1),
        None => grbm::instance_of(grbm_index).unwrap_or(0),
    }
}

/// What a prepared model value depends on: block id, event, accumulation, counting intervals.
type PreparedKey = (u32, u32, u32, Vec<(u64, u64)>);

/// What one run of a buffer works out once: the device's geometry and clock, block layouts and
/// the model values prepared.
struct Cache {
    /// The architecture whose blocks `layouts` are of.
    arch: String,
    geometry: Geometry,
    clock: u32,
    /// Model values prepared: the first `live` by this run, the others kept from earlier runs
    /// for their memory.
    prepared: Vec<(PreparedKey, Prepared)>,
    live: usize,
    scratch: Vec<(u64, u64)>,
    /// Which prepared value serves (block id, event, accumulation, interval source: an XCC's
    /// CP counting or an MC instance's), until counting intervals change.
    memo: Vec<((u32, u32, u32, u64), usize)>,
    layouts: [Option<Layout>; BLOCKS.len()],
    /// The last 64-bit value read, for the HI read after its LO: (key, value).
    last: Option<((usize, Reg, u32), u64)>,
    /// Prepared values of the counters of the sample run being run, kept across runs.
    run_prepared: Vec<Option<usize>>,
    /// What `run_prepared` was prepared for, while it holds for this run: whether the XCC had
    /// sampled and its SQ counted, the counters, and the counting intervals.
    run_state: Option<(bool, bool)>,
    run_keys: Vec<(u8, u32, u32)>,
    run_intervals: Vec<(u64, u64)>,
}

impl Cache {
    fn new(dev: &Device, arch: &str) -> Cache {
        Cache {
            arch: arch.to_string(),
            geometry: geometry_of(dev, arch),
            clock: super::clock_of(dev, arch),
            prepared: Vec::new(),
            live: 0,
            scratch: Vec::new(),
            memo: Vec::new(),
            layouts: [None; BLOCKS.len()],
            last: None,
            run_prepared: Vec::new(),
            run_state: None,
            run_keys: Vec::new(),
            run_intervals: Vec::new(),
        }
    }

    /// Makes this the cache of a new run on `dev`: nothing of the last run's kept but its
    /// memory, and its block layouts while the geometry is the same.
    fn renew(&mut self, dev: &Device, arch: &str) {
        let geometry = geometry_of(dev, arch);
        if geometry != self.geometry || arch != self.arch {
            self.layouts = [None; BLOCKS.len()];
            self.geometry = geometry;
            self.arch = arch.to_string();
        }
        self.clock = super::clock_of(dev, arch);
        self.live = 0;
        self.run_state = None;
        self.memo.clear();
        self.last = None;
    }

    /// The sample layout of block `b` (the same for the whole run).
    fn layout(&mut self, b: u8, block: &Block) -> Layout {
        let geometry = self.geometry;
        *self.layouts[b as usize].get_or_insert_with(|| block.layout(&geometry))
    }

    /// Forgets what a write to `reg` may make stale.
    fn written(&mut self, reg: Reg) {
        self.last = None;
        if matches!(
            reg.register,
            Register::CpPerfmonCntl | Register::ResultControl(_)
        ) {
            self.memo.clear();
        }
    }

    fn value(
        &mut self,
        dev: &Device,
        arch: &str,
        block: &'static Block,
        key: (u32, u32, u64),
        counting: (&[(u64, Option<u64>)], u64),
        position: usize,
    ) -> u64 {
        let index = self.prepared_index(dev, arch, block, key, counting);
        self.prepared[index].1.value(position, self.clock)
    }

    /// The index in `prepared` of the model values of `block`'s `event` (with `accum`) counted
    /// over the intervals of `counting` as they stood at its time; `source` names where the
    /// intervals come from.
    fn prepared_index(
        &mut self,
        dev: &Device,
        arch: &str,
        block: &'static Block,
        (event, accum, source): (u32, u32, u64),
        (counting, at): (&[(u64, Option<u64>)], u64),
    ) -> usize {
        let memo = (block.id, event, accum, source);
        if let Some(&(_, index)) = self.memo.iter().find(|(k, _)| *k == memo) {
            return index;
        }
        self.clip(counting, at);
        let named = || tables().counter_name(arch, &block.name, event);
        let index = self.prepared_clipped(dev, block, (event, accum), named);
        self.memo.push((memo, index));
        index
    }

    /// Sets `scratch` to the intervals of `counting` as they stood at `at`.
    fn clip(&mut self, counting: &[(u64, Option<u64>)], at: u64) {
        self.scratch.clear();
        self.scratch.extend(
            counting
                .iter()
                .filter(|i| i.0 <= at)
                .map(|&(a, b)| (a, b.unwrap_or(at).min(at).max(a))),
        );
    }

    /// The index in `prepared` of the model values of `block`'s `event` (with `accum`) counted
    /// over the intervals in `scratch`, prepared now if no read of this run needed them before.
    fn prepared_clipped(
        &mut self,
        dev: &Device,
        block: &'static Block,
        (event, accum): (u32, u32),
        name: impl FnOnce() -> Option<&'static str>,
    ) -> usize {
        let clock = self.clock;
        let found = self.prepared[..self.live]
            .iter()
            .position(|(k, _)| (k.0, k.1, k.2) == (block.id, event, accum) && k.3 == self.scratch);
        if let Some(i) = found {
            return i;
        }
        let geometry = self.geometry;
        let name = name();
        let class = if accum == 0 {
            class_of(name)
        } else {
            Class::Kernel
        };
        let intervals = self.scratch.as_slice();
        let from = intervals.iter().map(|i| i.0).min().unwrap_or(u64::MAX);
        let to = intervals.iter().map(|i| i.1).max().unwrap_or(0);
        let per_kernel = dev
            .kernels_between(from, to)
            .iter()
            .filter(|k: &&KernelRecord| intervals.iter().any(|&(a, b)| k.start <= b && k.end >= a))
            .map(|k| {
                let values = k.shape.values(block, name, event, accum, &geometry);
                (k.start, k.end, values)
            });
        let what = (event, accum, class);
        let index = self.live;
        match self.prepared.get_mut(index) {
            // An entry of an earlier run: filled again in its own memory.
            Some((key, prepared)) => {
                (key.0, key.1, key.2) = (block.id, event, accum);
                key.3.clear();
                key.3.extend_from_slice(intervals);
                prepared.refill(block.id, what, intervals, clock, per_kernel);
            }
            None => {
                let prepared =
                    Prepared::new(block.id, what, intervals, clock, per_kernel.collect());
                let key = (block.id, event, accum, intervals.to_vec());
                self.prepared.push((key, prepared));
            }
        }
        self.live += 1;
        index
    }
}

fn read(dev: &Device, target: &Target, x: usize, reg: Reg, now: u64, cache: &mut Cache) -> u32 {
    let xs = &dev.perf.xccs[x];
    let (b, hi) = match reg.register {
        Register::GrbmGfxIndex => return xs.grbm,
        Register::CpPerfmonCntl => return xs.perfmon,
        Register::RlcPerfmonClkCntl => return u32::from(xs.rlc_clock),
        Register::ComputePerfcountEnable => return u32::from(xs.compute_enable),
        Register::SqCtrl => return xs.sq_ctrl,
        Register::SqMask => return xs.sq_mask,
        Register::Select(b, k) => {
            let Some(block) = target.block(b) else {
                return 0;
            };
            let i = grbm::instance_of(xs.grbm).unwrap_or(0);
            let se = grbm::se_of(xs.grbm).filter(|_| block.per_se).unwrap_or(0);
            return xs.selects.get(b, block, &cache.geometry, (i, se, k));
        }
        Register::ResultControl(b) => {
            let i = grbm::instance_of(xs.grbm).unwrap_or(0);
            return xs.mcs.get(&(b, i)).map_or(0, |m| m.result);
        }
        Register::Lo(b, _) => (b, false),
        Register::Hi(b, _) => (b, true),
    };
    let lo_reg = Reg {
        register: match reg.register {
            Register::Hi(b, k) => Register::Lo(b, k),
            other => other,
        },
        ..reg
    };
    let key = (x, lo_reg, xs.grbm);
    let value = match cache.last {
        Some((k, v)) if k == key => v,
        _ => {
            let v = counter(dev, target, x, b, lo_reg, now, cache);
            cache.last = Some((key, v));
            v
        }
    };
    if hi {
        (value >> 32) as u32
    } else {
        value as u32
    }
}

/// The event (and SQ accumulation: 0 none, 1 or 2 the previous slot's event accumulated) that
/// counter `k` of plain or SQ block `b` counts, given its instance's select values.
fn selected_event(target: &Target, b: u8, k: u8, select: impl Fn(u8) -> u32) -> (u32, u32) {
    let regs = &BLOCKS[b as usize];
    let sel = select(k);
    match regs.style {
        Style::Sq => {
            let perf_sel = sel & sq::SEL_MASK;
            if k > 0 && perf_sel == sq::ACCUM_PREV {
                (select(k - 1) & sq::SEL_MASK, 1)
            } else if k > 0 && perf_sel == target.accum_hi {
                (select(k - 1) & sq::SEL_MASK, 2)
            } else {
                (perf_sel, 0)
            }
        }
        _ if regs.sel_bits == 0 => (0, 0),
        _ => (sel & ((1 << regs.sel_bits) - 1), 0),
    }
}

/// The 64-bit value of the counter behind a LO register, as reached from XCC `x` now.
fn counter(
    dev: &Device,
    target: &Target,
    x: usize,
    b: u8,
    reg: Reg,
    now: u64,
    cache: &mut Cache,
) -> u64 {
    let Some(block) = target.block(b) else {
        return 0;
    };
    let arch = target.arch.as_str();
    let regs = &BLOCKS[b as usize];
    let geometry = cache.geometry;
    let layout = cache.layout(b, block);
    let xs = &dev.perf.xccs[x];
    match regs.style {
        Style::Plain | Style::Sq => {
            let Register::Lo(_, k) = reg.register else {
                return 0;
            };
            let Some(sampled) = xs.sampled_at else {
                return 0;
            };
            if regs.style == Style::Sq && !(xs.compute_enable && xs.sq_ctrl & sq::CTRL_CS != 0) {
                return 0;
            }
            let i = grbm::instance_of(xs.grbm).unwrap_or(0);
            let se = if block.per_se {
                grbm::se_of(xs.grbm).unwrap_or(0)
            } else {
                0
            };
            if i >= layout.instances || se >= layout.se || x as u32 >= layout.xcc {
                return 0;
            }
            let select = |k: u8| xs.selects.get(b, block, &geometry, (i, se, k));
            let (event, accum) = selected_event(target, b, k, select);
            let position = layout.index(x as u32, i, se);
            let counting = (xs.counting.as_slice(), sampled);
            let source = x as u64;
            cache.value(dev, arch, block, (event, accum, source), counting, position)
        }
        Style::Mc | Style::Aid => {
            let (m, i, xcc) = if regs.style == Style::Aid {
                let i = aid_instance(block, reg.aid, xs.grbm);
                (dev.perf.aids.get(&(b, i)), i, 0)
            } else {
                let i = grbm::instance_of(xs.grbm).unwrap_or(0);
                (xs.mcs.get(&(b, i)), i, x as u32)
            };
            let Some(m) = m else {
                return 0;
            };
            let cfg = m.cfg[(m.result & mc::SLOT_MASK) as usize];
            if cfg & mc::ENABLE == 0 || i >= layout.instances || xcc >= layout.xcc {
                return 0;
            }
            let position = layout.index(xcc, i, 0);
            let counting = (m.intervals.as_slice(), now);
            let source = 1 << 32 | u64::from(xcc) << 16 | u64::from(i);
            let event = (cfg & mc::SEL_MASK, 0, source);
            cache.value(dev, arch, block, event, counting, position)
        }
    }
}
