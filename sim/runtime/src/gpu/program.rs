//! Command buffers compiled against one device's counter registers.
//!
//! aqlprofile builds a packet set's command buffers once and the device runs them for every
//! dispatch the set wraps, so a buffer is decoded once: slots become register indices, and a
//! read's entries become runs of sample positions with their block and layout resolved. What
//! depends on the registers' state (event names, counting intervals, the kernels that ran) is
//! worked out when the buffer runs.

use std::collections::HashMap;
use std::sync::Arc;

use super::arch::{tables, Block, Geometry, Layout};
use super::model::{class_of, Class};
use super::pm4::{Command, READ_ONCE_PER_PASS};
use super::{clock_of, cycles_between, Device, KernelRecord, Registers};

/// A command buffer ready to run on its device.
pub(super) struct Program {
    /// The dwords it was compiled from.
    dwords: Vec<u32>,
    ops: Vec<Op>,
}

/// One command, with registers as indices into the device's registers.
enum Op {
    /// Program, zero and start registers: (register, event, accumulation mode).
    Start(Vec<(usize, u32, u32)>),
    /// Stop registers.
    Stop(Vec<usize>),
    /// Write samples to memory.
    Read(ReadProgram),
}

/// A read command: which register fills which run of output samples.
struct ReadProgram {
    /// The architecture whose counter names apply.
    arch: String,
    geometry: Geometry,
    /// Where the samples go.
    dst: u64,
    /// Samples written in all.
    samples: usize,
    /// The registers read, each once, in order of first appearance.
    slots: Vec<ReadSlot>,
    /// Consecutive output samples from one register.
    runs: Vec<ReadRun>,
}

struct ReadSlot {
    register: usize,
    /// The register's block; `None` if the architecture has none with this id (reads zeros).
    block: Option<&'static Block>,
    /// The counter name and time class of the event last read: (event, accum, name, class).
    named: Option<(u32, u32, Option<&'static str>, Class)>,
}

struct ReadRun {
    /// Index into [`ReadProgram::slots`].
    slot: usize,
    /// The first sample position of the block's layout, `None` when the run lies outside
    /// the layout (reads zeros).
    first: Option<usize>,
    samples: usize,
}

impl Program {
    /// Compiles `commands` (decoded from `dwords`) against `registers`.
    pub(super) fn compile(dwords: &[u32], commands: &[Command], registers: &mut Registers) -> Self {
        let ops = commands
            .iter()
            .filter_map(|command| match command {
                Command::PmcStart(selects) => Some(Op::Start(
                    selects
                        .iter()
                        .map(|s| (registers.index(s.slot), s.event, s.accum))
                        .collect(),
                )),
                Command::PmcStop(slots) => Some(Op::Stop(
                    slots.iter().map(|&s| registers.index(s)).collect(),
                )),
                Command::PmcRead {
                    setup,
                    dst,
                    entries,
                } => {
                    let geometry = Geometry {
                        xcc: setup.xcc,
                        se: setup.se,
                        sa_per_se: setup.sa_per_se,
                        cu: setup.cu,
                    };
                    let mut read = ReadProgram {
                        arch: setup.arch.clone(),
                        geometry,
                        dst: *dst,
                        samples: 0,
                        slots: Vec::new(),
                        runs: Vec::with_capacity(entries.len()),
                    };
                    let mut slot_of: HashMap<usize, usize> = HashMap::new();
                    for entry in entries {
                        let register = registers.index(entry.slot);
                        let block = tables().block_by_id(&setup.arch, entry.slot.block);
                        let slots = &mut read.slots;
                        let slot = *slot_of.entry(register).or_insert_with(|| {
                            slots.push(ReadSlot {
                                register,
                                block,
                                named: None,
                            });
                            slots.len() - 1
                        });
                        let first = block.and_then(|block| {
                            let layout: Layout = block.layout(&geometry);
                            let xcc = if entry.xcc == READ_ONCE_PER_PASS {
                                0
                            } else {
                                entry.xcc
                            };
                            (entry.slot.instance < layout.instances && xcc < layout.xcc)
                                .then(|| layout.index(xcc, entry.slot.instance, 0))
                        });
                        let samples = entry.samples as usize;
                        read.samples += samples;
                        read.runs.push(ReadRun {
                            slot,
                            first,
                            samples,
                        });
                    }
                    Some(Op::Read(read))
                }
                Command::Nop => None,
            })
            .collect();
        Program {
            dwords: dwords.to_vec(),
            ops,
        }
    }

    /// The dwords the program was compiled from.
    pub(super) fn dwords(&self) -> &[u32] {
        &self.dwords
    }

    /// Executes the program on `dev` at `now`.
    pub(super) fn run(&mut self, dev: &mut Device, now: u64) {
        for op in &mut self.ops {
            match op {
                Op::Start(selects) => {
                    for &(register, event, accum) in selects.iter() {
                        let reg = &mut dev.registers.state[register];
                        reg.programmed = true;
                        reg.event = event;
                        reg.accum = accum;
                        reg.intervals.clear();
                        reg.intervals.push((now, None));
                    }
                }
                Op::Stop(registers) => {
                    for &register in registers.iter() {
                        let reg = &mut dev.registers.state[register];
                        for interval in reg.intervals.iter_mut().filter(|i| i.1.is_none()) {
                            interval.1 = Some(now);
                        }
                    }
                }
                Op::Read(read) => read.run(dev, now),
            }
        }
    }
}

/// What one register contributes to a read.
pub(super) struct Prepared {
    block: u32,
    event: u32,
    accum: u32,
    class: Class,
    /// Counting intervals, clipped to the read time.
    intervals: Vec<(u64, u64)>,
    /// Cycles of the counting intervals.
    window: u64,
    /// (start, end, per-position values) of every kernel overlapping the intervals.
    per_kernel: Vec<(u64, u64, Arc<Vec<u64>>)>,
    /// Kernels whose whole value the register counted, with how many intervals counted it.
    whole: Vec<(u64, Arc<Vec<u64>>)>,
    /// Kernels only part of which the register counted: (start, end, values).
    partial: Vec<(u64, u64, Arc<Vec<u64>>)>,
    /// Busy cycles of every kernel together: the value of a busy counter at positions where
    /// every kernel has work.
    busy_all: u64,
}

/// How [`Prepared::value`] finds a position's value, worked out once for all of them.
pub(super) enum Lookup<'a> {
    /// One kernel's values as they are.
    Direct(&'a [u64]),
    /// The same value everywhere.
    Constant(u64),
    /// Computed per position.
    Model(&'a Prepared),
}

impl Lookup<'_> {
    /// The value at sample `position`, as [`Prepared::value`] gives it.
    #[inline]
    pub(super) fn value(&self, position: usize, clock: u32) -> u64 {
        match self {
            Lookup::Direct(values) => values.get(position).copied().unwrap_or(0),
            Lookup::Constant(value) => *value,
            Lookup::Model(prepared) => prepared.value(position, clock),
        }
    }
}

/// How much of a kernel running from `start` to `end` a counter has seen by time `t`: none,
/// all, or a share (as [`produced`] decides).
fn seen_by(start: u64, end: u64, t: u64) -> u8 {
    if t <= start {
        0
    } else if t >= end {
        2
    } else {
        1
    }
}

impl Prepared {
    pub(super) fn new(
        block: u32,
        (event, accum, class): (u32, u32, Class),
        intervals: &[(u64, u64)],
        clock: u32,
        per_kernel: Vec<(u64, u64, Arc<Vec<u64>>)>,
    ) -> Prepared {
        let mut prepared = Prepared {
            block,
            event,
            accum,
            class,
            intervals: Vec::new(),
            window: 0,
            per_kernel,
            whole: Vec::new(),
            partial: Vec::new(),
            busy_all: 0,
        };
        prepared.prepare(intervals, clock);
        prepared
    }

    /// Makes this the preparation of `block`'s `event` (with `accum`, of `class`) counted over
    /// `intervals` on the kernels `per_kernel` gives, keeping the memory it held.
    pub(super) fn refill(
        &mut self,
        block: u32,
        (event, accum, class): (u32, u32, Class),
        intervals: &[(u64, u64)],
        clock: u32,
        per_kernel: impl Iterator<Item = (u64, u64, Arc<Vec<u64>>)>,
    ) {
        (self.block, self.event, self.accum, self.class) = (block, event, accum, class);
        self.per_kernel.clear();
        self.per_kernel.extend(per_kernel);
        self.prepare(intervals, clock);
    }

    /// Works out from `per_kernel` what every position's value needs.
    fn prepare(&mut self, intervals: &[(u64, u64)], clock: u32) {
        self.whole.clear();
        self.partial.clear();
        for (s, e, v) in &self.per_kernel {
            let seen = || {
                intervals
                    .iter()
                    .map(|&(a, b)| (seen_by(*s, *e, a), seen_by(*s, *e, b)))
            };
            if seen().any(|(a, b)| a == 1 || b == 1) {
                self.partial.push((*s, *e, Arc::clone(v)));
            } else {
                let times = seen().filter(|&seen| seen == (0, 2)).count() as u64;
                if times > 0 {
                    self.whole.push((times, Arc::clone(v)));
                }
            }
        }
        self.busy_all = if self.class == Class::Busy {
            let spans: Vec<(u64, u64)> = self.per_kernel.iter().map(|&(s, e, _)| (s, e)).collect();
            busy_cycles(&spans, intervals, clock)
        } else {
            0
        };
        self.window = intervals
            .iter()
            .map(|&(a, b)| cycles_between(a, b, clock))
            .sum();
        self.intervals.clear();
        self.intervals.extend_from_slice(intervals);
    }

    /// Writes the register's values at sample positions `first..` of its block to `out`.
    fn write(&self, first: usize, out: &mut [u64], clock: u32) {
        if let (Class::Kernel, [(1, values)], []) =
            (self.class, self.whole.as_slice(), self.partial.as_slice())
        {
            // One kernel inside the window, nothing else: its values as they are.
            let have = values.get(first..).unwrap_or(&[]);
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            out[n..].fill(0);
            return;
        }
        for (value, position) in out.iter_mut().zip(first..) {
            *value = self.value(position, clock);
        }
    }

    /// How to find the value at each position, as [`Prepared::value`] would compute it.
    pub(super) fn lookup(&self) -> Lookup<'_> {
        match (self.class, self.whole.as_slice(), self.partial.as_slice()) {
            (Class::Window, ..) => Lookup::Constant(self.window),
            (Class::Kernel, [], []) => Lookup::Constant(0),
            (Class::Kernel, [(1, values)], []) => Lookup::Direct(values),
            _ => Lookup::Model(self),
        }
    }

    /// The register's value at sample `position` of its block.
    pub(super) fn value(&self, position: usize, clock: u32) -> u64 {
        let at = |v: &Arc<Vec<u64>>| v.get(position).copied().unwrap_or(0);
        match self.class {
            Class::Window => self.window,
            Class::Busy if self.per_kernel.iter().all(|(_, _, v)| at(v) > 0) => self.busy_all,
            Class::Busy => {
                let busy: Vec<(u64, u64)> = self
                    .per_kernel
                    .iter()
                    .filter(|(_, _, v)| at(v) > 0)
                    .map(|&(s, e, _)| (s, e))
                    .collect();
                busy_cycles(&busy, &self.intervals, clock)
            }
            Class::Kernel => {
                let whole: u64 = self.whole.iter().map(|(times, v)| times * at(v)).sum();
                let partial: u64 = self
                    .partial
                    .iter()
                    .map(|(s, e, v)| {
                        let total = at(v);
                        self.intervals
                            .iter()
                            .map(|&(a, b)| produced(total, *s, *e, b) - produced(total, *s, *e, a))
                            .sum::<u64>()
                    })
                    .sum();
                whole + partial
            }
        }
    }
}

impl ReadProgram {
    fn run(&mut self, dev: &Device, now: u64) {
        let clock = clock_of(dev, &self.arch);
        let registers = &dev.registers.state;
        // Kernels that may overlap any register read here, found once per read.
        let earliest = self
            .slots
            .iter()
            .map(|s| &registers[s.register])
            .filter(|r| r.programmed)
            .filter_map(|r| r.intervals.first().map(|i| i.0))
            .min()
            .unwrap_or(now);
        let candidates: Vec<&KernelRecord> = dev
            .kernels
            .iter()
            .filter(|k| k.end >= earliest && k.start <= now)
            .collect();
        // Instances of one event usually follow each other and count over the same window:
        // they share one preparation.
        let mut prepared: Vec<Prepared> = Vec::new();
        let mut of_slot: Vec<Option<usize>> = Vec::with_capacity(self.slots.len());
        let mut intervals: Vec<(u64, u64)> = Vec::new();
        for slot in &mut self.slots {
            let reg = &registers[slot.register];
            let Some(block) = slot.block.filter(|_| reg.programmed) else {
                of_slot.push(None);
                continue;
            };
            intervals.clear();
            intervals.extend(
                reg.intervals
                    .iter()
                    .map(|&(a, b)| (a, b.unwrap_or(now).min(now).max(a))),
            );
            let (event, accum) = (reg.event, reg.accum);
            let same = |p: &Prepared| {
                p.block == block.id
                    && p.event == event
                    && p.accum == accum
                    && p.intervals == intervals
            };
            if prepared.last().is_some_and(same) {
                of_slot.push(Some(prepared.len() - 1));
                continue;
            }
            let (name, class) = match slot.named {
                Some((e, a, name, class)) if (e, a) == (event, accum) => (name, class),
                _ => {
                    let name = tables().counter_name(&self.arch, &block.name, event);
                    let class = if accum == 0 {
                        class_of(name)
                    } else {
                        Class::Kernel
                    };
                    slot.named = Some((event, accum, name, class));
                    (name, class)
                }
            };
            let per_kernel = candidates
                .iter()
                .filter(|k| intervals.iter().any(|&(a, b)| k.start <= b && k.end >= a))
                .map(|k| {
                    let values = k.shape.values(block, name, event, accum, &self.geometry);
                    (k.start, k.end, values)
                })
                .collect();
            prepared.push(Prepared::new(
                block.id,
                (event, accum, class),
                &intervals,
                clock,
                per_kernel,
            ));
            of_slot.push(Some(prepared.len() - 1));
        }
        // SAFETY: aqlprofile sized the output buffer at `dst` for exactly these samples and
        // keeps it alive while its packets exist.
        let out = unsafe { std::slice::from_raw_parts_mut(self.dst as *mut u64, self.samples) };
        let mut at = 0;

        for run in &self.runs {
            let chunk = &mut out[at..at + run.samples];
            at += run.samples;
            match (of_slot[run.slot], run.first) {
                (Some(p), Some(first)) => prepared[p].write(first, chunk, clock),
                _ => chunk.fill(0),
            }
        }
    }
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
