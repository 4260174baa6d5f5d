//! From an event list to counter registers, PM4 commands and the sample layout of the output
//! buffer. Both APIs share this, so they program and read the device identically.

use std::collections::BTreeMap;

use crate::arch::{tables, Block, Geometry, Layout};
use crate::gfx9::{self, grbm, mc, perfmon, smn, sq, BlockRegs, Stream, Style};
use crate::pm4::{encode_all, Command, ReadEntry, Select, Setup, Slot, READ_ONCE_PER_PASS};

/// Block-name enum values with special meaning.
const BLOCK_GRBM: u32 = 3;
const BLOCK_SQ: u32 = 6;
const BLOCK_SQ_CS: u32 = 7;

/// Register numbers given to events that use no counter register (internal SPI events).
const NO_REGISTER: u32 = 0x8000_0000;

/// An agent as aqlprofile knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// gfx target, without feature suffixes.
    pub arch: String,
    /// Topology.
    pub geometry: Geometry,
}

impl Agent {
    /// The block of this agent's architecture with enum value `id`.
    pub fn block(&self, id: u32) -> Option<&'static Block> {
        tables().block_by_id(&self.arch, id)
    }
}

/// One event of a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Block-name enum value.
    pub block_name: u32,
    /// Block instance.
    pub block_index: u32,
    /// Event select number.
    pub event_id: u32,
    /// v2 flags (SQ accumulation mode in bits 0..3).
    pub flags: u32,
    /// Added by the library: programmed and read, never reported.
    pub internal: bool,
}

/// Why an event set cannot be one pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The architecture has no block with this enum value.
    #[error("{arch} has no counter block {block}")]
    UnknownBlock {
        /// Architecture.
        arch: String,
        /// Block-name enum value.
        block: u32,
    },
    /// More events of one block instance than it has counter registers.
    #[error(
        "event {event} of {block}[{instance}] is out of the block's {limit} counter registers"
    )]
    OverLimit {
        /// Block name.
        block: String,
        /// Block instance.
        instance: u32,
        /// Event select number.
        event: u32,
        /// Counter registers of the block.
        limit: u32,
    },
    /// Accumulation flags on a block other than SQ.
    #[error("flags 0x{flags:x} are only valid on SQ events, not on {block}")]
    FlagsNotSq {
        /// Block name.
        block: String,
        /// Flags given.
        flags: u32,
    },
}

/// Where one u64 of the output buffer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Index into [`Plan::requests`].
    pub request: usize,
    /// XCC, or `None` for a block read once per pass.
    pub xcc: Option<u32>,
    /// Sample within the instance (SE, SA, WGP; WGP fastest).
    pub k: u32,
}

/// A pass: registers, commands and output layout.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The agent.
    pub agent: Agent,
    /// Events in programming order, internal ones included.
    pub requests: Vec<Request>,
    /// The register of each request.
    pub slots: Vec<Slot>,
    /// Every u64 of the output buffer, in order.
    pub samples: Vec<Sample>,
}

/// Sorts v2 events with accumulation flags the way aqlprofile does and adds, for each
/// accumulated event, the plain event it accumulates as an internal request.
pub fn with_accumulation(mut requests: Vec<Request>) -> Vec<Request> {
    if requests.iter().all(|r| r.flags == 0) {
        return requests;
    }
    let order = |r: &Request| {
        let blk = u64::from(r.block_index) | u64::from(r.block_name) << 32;
        let idx = u64::from(!r.internal) | u64::from(r.flags) << 1 | u64::from(r.event_id) << 33;
        (blk, idx)
    };
    requests.sort_by_key(order);
    let mut extra = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        if r.flags == 0 {
            continue;
        }
        let same_plain = i > 0 && {
            let p = &requests[i - 1];
            p.block_name == r.block_name
                && p.block_index == r.block_index
                && p.event_id == r.event_id
                && (p.flags == 0 || p.internal)
        };
        if !same_plain {
            extra.push(Request {
                flags: 0,
                internal: true,
                ..*r
            });
        }
    }
    requests.extend(extra);
    requests.sort_by_key(order);
    requests
}

impl Plan {
    /// Assigns registers to `requests` on `agent` and lays out the output buffer.
    pub fn new(agent: &Agent, mut requests: Vec<Request>) -> Result<Plan, PlanError> {
        let table_arch = tables().table_arch(&agent.arch).to_string();
        if table_arch.starts_with("gfx10") && !requests.iter().any(|r| r.block_name == BLOCK_GRBM) {
            // gfx10 always programs one GRBM event.
            requests.push(Request {
                block_name: BLOCK_GRBM,
                block_index: 0,
                event_id: 0,
                flags: 0,
                internal: true,
            });
        }
        let mut used: std::collections::HashMap<(u32, u32), u32> = Default::default();
        let mut slots = Vec::with_capacity(requests.len());
        let mut blocks = Vec::with_capacity(requests.len());
        for (i, r) in requests.iter().enumerate() {
            let block = agent
                .block(r.block_name)
                .ok_or_else(|| PlanError::UnknownBlock {
                    arch: agent.arch.clone(),
                    block: r.block_name,
                })?;
            // SQ_CS is the SQ hardware block: same registers, same budget.
            let hw = if r.block_name == BLOCK_SQ_CS {
                BLOCK_SQ
            } else {
                r.block_name
            };
            let register = if block.is_internal_event(r.event_id) {
                NO_REGISTER + i as u32
            } else {
                let n = used.entry((hw, r.block_index)).or_insert(0);
                if *n >= block.counters {
                    return Err(PlanError::OverLimit {
                        block: block.name.clone(),
                        instance: r.block_index,
                        event: r.event_id,
                        limit: block.counters,
                    });
                }
                if r.flags != 0 && r.block_name != BLOCK_SQ {
                    return Err(PlanError::FlagsNotSq {
                        block: block.name.clone(),
                        flags: r.flags,
                    });
                }
                *n += 1;
                *n - 1
            };
            slots.push(Slot {
                block: hw,
                instance: r.block_index,
                register,
            });
            blocks.push(block);
        }
        let mut samples = Vec::new();
        for (i, block) in blocks.iter().enumerate() {
            if block.aid {
                samples.push(Sample {
                    request: i,
                    xcc: None,
                    k: 0,
                });
            }
        }
        for xcc in 0..agent.geometry.xcc.max(1) {
            for (i, block) in blocks.iter().enumerate() {
                if !block.aid {
                    let spi = block.layout(&agent.geometry).samples_per_instance();
                    samples.extend((0..spi).map(|k| Sample {
                        request: i,
                        xcc: Some(xcc),
                        k,
                    }));
                }
            }
        }
        Ok(Plan {
            agent: agent.clone(),
            requests,
            slots,
            samples,
        })
    }

    /// Bytes of output the read writes.
    pub fn data_bytes(&self) -> usize {
        self.samples.len() * 8
    }

    /// Command that zeroes and starts every register of the pass.
    pub fn start(&self) -> Command {
        Command::PmcStart(
            self.requests
                .iter()
                .zip(&self.slots)
                .map(|(r, &slot)| Select {
                    slot,
                    event: r.event_id,
                    accum: r.flags & 7,
                })
                .collect(),
        )
    }

    /// Command that stops every register of the pass.
    pub fn stop(&self) -> Command {
        Command::PmcStop(self.slots.clone())
    }

    /// Command that writes every sample of the pass to `dst`.
    pub fn read(&self, dst: u64) -> Command {
        let g = &self.agent.geometry;
        let setup = Setup {
            arch: self.agent.arch.clone(),
            xcc: g.xcc,
            se: g.se,
            sa_per_se: g.sa_per_se,
            cu: g.cu,
        };
        let mut entries: Vec<ReadEntry> = Vec::new();
        for s in &self.samples {
            let xcc = s.xcc.unwrap_or(READ_ONCE_PER_PASS);
            let slot = self.slots[s.request];
            match entries.last_mut() {
                Some(e) if e.slot == slot && e.xcc == xcc && s.k > 0 => e.samples += 1,
                _ => entries.push(ReadEntry {
                    slot,
                    xcc,
                    samples: 1,
                }),
            }
        }
        Command::PmcRead {
            setup,
            dst,
            entries,
        }
    }

    /// The samples the library reports, as (index in the output, v2 sample id) in output
    /// order: every sample but those of events the library added and of SPI events that use
    /// no register. The v2 sample id counts XCC, then instance, then position in the instance.
    pub fn reported_samples(&self) -> Vec<(usize, u64)> {
        let layouts: Vec<Option<Layout>> = self
            .requests
            .iter()
            .map(|r| {
                let block = self.agent.block(r.block_name)?;
                let reported = !r.internal && !block.is_internal_event(r.event_id);
                reported.then(|| block.layout(&self.agent.geometry))
            })
            .collect();
        self.samples
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let layout = layouts[s.request]?;
                let r = &self.requests[s.request];
                let id = match s.xcc {
                    None => u64::from(r.block_index),
                    Some(xcc) => layout.index(xcc, r.block_index, s.k) as u64,
                };
                Some((i, id))
            })
            .collect()
    }

    /// The legacy sample id of a sample: its index within the instance on its XCC.
    pub fn legacy_sample_id(&self, s: &Sample) -> u32 {
        match s.xcc {
            None => self.requests[s.request].block_index,
            Some(_) => s.k,
        }
    }
}

/// One event of a register-level pass: its request, block, registers and slot.
struct Programmed<'a> {
    request: &'a Request,
    block: &'static Block,
    regs: &'static BlockRegs,
    slot: usize,
}

impl Programmed<'_> {
    /// `GRBM_GFX_INDEX` that reaches this event's instance (every shader engine).
    fn instance_index(&self) -> u32 {
        if self.block.table_instances > 1 {
            grbm::instance(self.request.block_index)
        } else {
            grbm::BROADCAST
        }
    }

    /// Whether the library adds no register for this event.
    fn skipped(&self) -> bool {
        self.block.is_internal_event(self.request.event_id)
    }
}

/// The command buffers of a pass, as AMD's library writes them for the gfx9 family
/// (`shared/reference/aqlprofile-pm4.md` §4); other families get the simulator's own commands.
impl Plan {
    /// Whether this pass programs real perf-counter registers (gfx9 family) rather than the
    /// simulator's private commands.
    pub fn register_level(&self) -> bool {
        gfx9::covers(tables().table_arch(&self.agent.arch))
    }

    fn programmed(&self) -> Vec<Programmed<'_>> {
        self.requests
            .iter()
            .zip(&self.slots)
            .filter_map(|(request, slot)| {
                let block = self.agent.block(request.block_name)?;
                let regs = &gfx9::BLOCKS[gfx9::block_index(&block.name)?];
                Some(Programmed {
                    request,
                    block,
                    regs,
                    slot: slot.register as usize,
                })
            })
            .collect()
    }

    fn stream(&self) -> Stream {
        Stream::new(self.agent.geometry.xcc.max(1))
    }

    /// The value written to an event's select (or CFG) register.
    fn select_value(&self, p: &Programmed) -> u32 {
        let event = p.request.event_id;
        match p.regs.style {
            Style::Sq => {
                let sel = match p.request.flags & 7 {
                    0 => event,
                    1 => sq::ACCUM_PREV,
                    _ => sq::accum_prev_hi(&self.agent.arch),
                };
                sq::SELECT_MASKS | (sel & sq::SEL_MASK)
            }
            Style::Mc | Style::Aid => mc::ENABLE | (event & mc::SEL_MASK),
            Style::Plain if p.regs.sel_bits == 0 => 0,
            Style::Plain => event & ((1 << p.regs.sel_bits) - 1),
        }
    }

    /// The 64-bit address of an AID block's register for this event: an SMN address on
    /// agents with several XCCs.
    fn aid_address(&self, p: &Programmed, reg: u32) -> u64 {
        if self.agent.geometry.xcc > 1 {
            let per_aid = (p.block.table_instances / 4).max(1);
            smn::address(reg, p.request.block_index / per_aid)
        } else {
            u64::from(reg)
        }
    }

    fn cp_controlled(&self, programmed: &[Programmed]) -> bool {
        programmed.iter().any(|p| p.regs.cp_controlled())
    }

    /// The start command buffer.
    pub fn start_dwords(&self) -> Vec<u32> {
        if !self.register_level() {
            return encode_all(&[self.start()]);
        }
        let programmed = self.programmed();
        let cp = self.cp_controlled(&programmed);
        let mut s = self.stream();
        s.wait_idle();
        s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::BROADCAST);
        s.set_uconfig(gfx9::RLC_PERFMON_CLK_CNTL, 1);
        if cp {
            s.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::DISABLE_AND_RESET);
        }
        if programmed.iter().any(|p| p.regs.texture) {
            s.set_uconfig(gfx9::SQ_PERFCOUNTER_CTRL, sq::CTRL_ALL_STAGES);
        }
        let mut rpbs: BTreeMap<u32, u64> = BTreeMap::new();
        let mut atcs: BTreeMap<u32, u64> = BTreeMap::new();
        for p in programmed.iter().filter(|p| !p.skipped()) {
            let regs = p.regs;
            s.set_uconfig(gfx9::GRBM_GFX_INDEX, p.instance_index());
            if regs.style == Style::Mc {
                s.write_pconfig(u64::from(regs.control), mc::CLEAR_ALL);
            }
            if regs.clean {
                for k in 0..p.block.counters as usize {
                    s.write_config(regs.lo[k], 0);
                    s.write_config(regs.hi[k], 0);
                }
            }
            let value = self.select_value(p);
            if regs.style == Style::Aid {
                let control = self.aid_address(p, regs.control);
                let select = self.aid_address(p, regs.select[p.slot]);
                s.predicated(0, |s| s.write_pconfig(select, value));
                let started = if regs.name == "RPB" {
                    &mut rpbs
                } else {
                    &mut atcs
                };
                started.insert(p.request.block_index, control);
            } else {
                s.write_config(regs.select[p.slot], value);
            }
            if regs.style == Style::Mc {
                s.write_pconfig(u64::from(regs.control), p.slot as u32);
                s.write_pconfig(u64::from(regs.control), mc::ENABLE_ANY);
            }
            if regs.style == Style::Sq {
                s.set_uconfig(gfx9::SQ_PERFCOUNTER_MASK, sq::MASK_ALL);
                s.set_uconfig(regs.control, sq::CTRL_SQ);
            }
        }
        for started in [&rpbs, &atcs] {
            if !started.is_empty() {
                s.predicated(0, |s| {
                    for &control in started.values() {
                        s.write_pconfig(control, mc::CLEAR_ALL);
                        s.write_pconfig(control, mc::ENABLE_ANY);
                    }
                });
            }
        }
        s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::BROADCAST);
        s.set_sh(gfx9::COMPUTE_PERFCOUNT_ENABLE, 1);
        if cp {
            s.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::DISABLE_AND_RESET);
            s.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::START);
        }
        s.wait_idle();
        s.dwords
    }

    /// The read command buffer, writing every sample to `dst`.
    pub fn read_dwords(&self, dst: u64) -> Vec<u32> {
        if !self.register_level() {
            return encode_all(&[self.read(dst)]);
        }
        let programmed = self.programmed();
        let mut s = self.stream();
        if self.cp_controlled(&programmed) {
            s.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::READ);
        }
        let mut cursor = 0u64;
        for p in programmed.iter().filter(|p| p.regs.style == Style::Aid) {
            let regs = p.regs;
            let control = self.aid_address(p, regs.control);
            let (lo, hi) = (
                self.aid_address(p, regs.lo[0]),
                self.aid_address(p, regs.hi[0]),
            );
            let at = dst + 8 * cursor;
            s.predicated(0, |s| {
                s.write_pconfig(control, p.slot as u32);
                s.copy_counter(lo, hi, at);
            });
            cursor += 1;
        }
        let se_per_xcc = self.agent.geometry.se_per_xcc();
        for xcc in 0..self.agent.geometry.xcc.max(1) {
            s.predicated(xcc, |s| {
                s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::BROADCAST);
                s.wait_idle();
                for p in programmed.iter().filter(|p| p.regs.style != Style::Aid) {
                    let regs = p.regs;
                    if p.skipped() {
                        cursor +=
                            u64::from(p.block.layout(&self.agent.geometry).samples_per_instance());
                        continue;
                    }
                    s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::BROADCAST);
                    if regs.style == Style::Mc {
                        s.set_uconfig(gfx9::GRBM_GFX_INDEX, p.instance_index());
                        s.write_pconfig(u64::from(regs.control), p.slot as u32);
                        s.copy_counter(
                            u64::from(regs.lo[0]),
                            u64::from(regs.hi[0]),
                            dst + 8 * cursor,
                        );
                        cursor += 1;
                        continue;
                    }
                    let engines = if p.block.per_se { se_per_xcc } else { 1 };
                    let instanced = p.block.table_instances > 1;
                    for se in 0..engines {
                        let index = match (instanced, p.block.per_se) {
                            (true, true) => grbm::instance_se(p.request.block_index, se),
                            (true, false) => grbm::instance(p.request.block_index),
                            (false, true) => grbm::se(se),
                            (false, false) => grbm::BROADCAST,
                        };
                        s.set_uconfig(gfx9::GRBM_GFX_INDEX, index);
                        s.copy_counter(
                            u64::from(regs.lo[p.slot]),
                            u64::from(regs.hi[p.slot]),
                            dst + 8 * cursor,
                        );
                        cursor += 1;
                    }
                }
                s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::BROADCAST);
            });
        }
        s.acquire_mem(dst, 8 * cursor);
        s.dwords
    }

    /// The stop command buffer.
    pub fn stop_dwords(&self) -> Vec<u32> {
        if !self.register_level() {
            return encode_all(&[self.stop()]);
        }
        let programmed = self.programmed();
        let mut s = self.stream();
        s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::BROADCAST);
        // AMD's library runs its loop over the AID events twice: each RSLT_CNTL is cleared twice.
        for _ in 0..2 {
            for p in programmed.iter().filter(|p| p.regs.style == Style::Aid) {
                let control = self.aid_address(p, p.regs.control);
                s.predicated(0, |s| s.write_pconfig(control, 0));
            }
        }
        if self.cp_controlled(&programmed) {
            s.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::STOP);
        }
        s.set_uconfig(gfx9::RLC_PERFMON_CLK_CNTL, 0);
        s.wait_idle();
        s.dwords
    }

    /// Samples (u64 slots) the v2 output buffer holds: every event, AID blocks included, for
    /// every XCC, as the v2 decoder assumes.
    fn v2_slots(&self) -> usize {
        let xcc = self.agent.geometry.xcc.max(1) as usize;
        self.requests
            .iter()
            .filter_map(|r| self.agent.block(r.block_name))
            .map(|b| b.layout(&self.agent.geometry).samples_per_instance() as usize * xcc)
            .sum()
    }

    /// Bytes of the output buffer `aqlprofile_pmc_create_packets` allocates: 8 bytes more than
    /// the v2 decoder reads.
    pub fn v2_output_bytes(&self) -> usize {
        8 + 8 * self.v2_slots().max(self.samples.len())
    }

    /// What `aqlprofile_pmc_iterate_data` reports, as (index in the output, v2 sample id, index
    /// into [`Plan::requests`]), in order. On the gfx9 family it decodes as AMD's library does: for each XCC, each event in
    /// order takes its samples-per-instance consecutive slots, AID events included, although
    /// the read wrote AID samples first and once; every value after an AID event is then read
    /// from the wrong slot (`shared/reference/aqlprofile-pm4.md` §5.4). Other families decode
    /// as the read wrote.
    pub fn v2_reported_samples(&self) -> Vec<(usize, u64, usize)> {
        if !self.register_level() {
            return self
                .reported_samples()
                .into_iter()
                .map(|(index, id)| (index, id, self.samples[index].request))
                .collect();
        }
        let mut out = Vec::new();
        let mut cursor = 0usize;
        for xcc in 0..self.agent.geometry.xcc.max(1) {
            for (request, r) in self.requests.iter().enumerate() {
                let Some(block) = self.agent.block(r.block_name) else {
                    continue;
                };
                let layout = block.layout(&self.agent.geometry);
                let n = u64::from(layout.samples_per_instance());
                let reported = !r.internal && !block.is_internal_event(r.event_id);
                for j in 0..n {
                    if reported {
                        // AID blocks are laid out once but decoded, and numbered, per XCC.
                        let id = layout.index(xcc, r.block_index, j as u32) as u64;
                        out.push((cursor, id, request));
                    }
                    cursor += 1;
                }
            }
        }
        out
    }
}
