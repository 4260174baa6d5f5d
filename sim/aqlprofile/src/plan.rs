//! From an event list to counter registers, PM4 commands and the sample layout of the output
//! buffer. Both APIs share this, so they program and read the device identically.

use crate::arch::{tables, Block, Geometry, Layout};
use crate::pm4::{Command, ReadEntry, Select, Setup, Slot, READ_ONCE_PER_PASS};

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
