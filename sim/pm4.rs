//! PM4 command encoding shared by the simulated aqlprofile (which writes command buffers) and the
//! simulated GPU (which executes them).
//!
//! The AQL side is ROCm's: a vendor-specific AQL packet of format `PM4_IB` whose body is one PM4
//! `INDIRECT_BUFFER` packet pointing at a command buffer. For the gfx9 family the command buffer
//! holds real perf-counter packets (`sim/gfx9.rs`); for later families, whose registers the
//! project has no facts for, it holds the simulator-private opcodes below, one per counter
//! operation.

/// Size of an AQL packet in bytes.
pub const AQL_PACKET_SIZE: usize = 64;
/// `AMD_AQL_FORMAT_PM4_IB`: the vendor format of a PM4-IB AQL packet.
pub const AMD_AQL_FORMAT_PM4_IB: u16 = 1;
/// Value of `dw_count_remain` in a PM4-IB AQL packet.
pub const PM4_IB_DW_COUNT_REMAIN: u32 = 10;
/// PM4 `INDIRECT_BUFFER` opcode.
pub const IT_INDIRECT_BUFFER: u8 = 0x3F;
/// PM4 `NOP` opcode.
pub const IT_NOP: u8 = 0x10;
/// Simulator opcode: program counter registers, zero them and start counting.
pub const IT_SIM_PMC_START: u8 = 0xF0;
/// Simulator opcode: stop counter registers.
pub const IT_SIM_PMC_STOP: u8 = 0xF1;
/// Simulator opcode: copy counter registers to memory.
pub const IT_SIM_PMC_READ: u8 = 0xF2;

/// `xcc` of a [`ReadEntry`] that reads an AID block once per pass.
pub const READ_ONCE_PER_PASS: u32 = u32::MAX;

/// Why a command buffer could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Pm4Error {
    /// A packet header is not a type-3 header.
    #[error("dword {at}: 0x{header:08x} is not a PM4 type-3 header")]
    NotType3 {
        /// Dword offset of the header.
        at: usize,
        /// The header dword.
        header: u32,
    },
    /// A packet runs past the end of the buffer or its payload is too short.
    #[error("dword {at}: PM4 packet is truncated")]
    Truncated {
        /// Dword offset of the header.
        at: usize,
    },
}

/// PM4 type-3 header for a packet of `ndw` dwords (header included).
pub fn type3_header(opcode: u8, ndw: u32) -> u32 {
    super::gfx9::header(opcode, ndw)
}

/// One counter register: a block instance and a register slot in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    /// Block-name enum value.
    pub block: u32,
    /// Block instance (`block_index`).
    pub instance: u32,
    /// Counter register index within the block instance.
    pub register: u32,
}

/// A counter register programmed to count one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Select {
    /// The register.
    pub slot: Slot,
    /// Event select number.
    pub event: u32,
    /// SQ accumulation mode (0 none, 1 low resolution, 2 high resolution).
    pub accum: u32,
}

/// Which architecture and agent topology a read lays its samples out for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// gfx target name (at most 16 bytes).
    pub arch: String,
    /// XCCs of the agent.
    pub xcc: u32,
    /// Shader engines of the agent.
    pub se: u32,
    /// Shader arrays per shader engine.
    pub sa_per_se: u32,
    /// Compute units of the agent.
    pub cu: u32,
}

/// One group of consecutive samples a read writes: every sample of one register on one XCC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadEntry {
    /// The register.
    pub slot: Slot,
    /// XCC, or [`READ_ONCE_PER_PASS`] for a block read once per pass.
    pub xcc: u32,
    /// Number of u64 samples written.
    pub samples: u32,
}

/// A command the simulated command processor executes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Program registers with events, zero them and start counting.
    PmcStart(Vec<Select>),
    /// Stop counting in these registers (values are kept).
    PmcStop(Vec<Slot>),
    /// Write the registers' samples, in order, as u64 values starting at `dst`.
    PmcRead {
        /// Geometry and architecture the sample layout follows.
        setup: Setup,
        /// Destination address.
        dst: u64,
        /// Sample groups in buffer order.
        entries: Vec<ReadEntry>,
    },
    /// Does nothing (enable/disable/wait-idle commands).
    Nop,
}

impl Command {
    /// Appends the PM4 packet of this command to `out`.
    pub fn encode(&self, out: &mut Vec<u32>) {
        let mut body: Vec<u32> = Vec::new();
        let opcode = match self {
            Command::PmcStart(selects) => {
                body.push(selects.len() as u32);
                for s in selects {
                    body.extend([
                        s.slot.block,
                        s.slot.instance,
                        s.slot.register,
                        s.event,
                        s.accum,
                    ]);
                }
                IT_SIM_PMC_START
            }
            Command::PmcStop(slots) => {
                body.push(slots.len() as u32);
                for s in slots {
                    body.extend([s.block, s.instance, s.register]);
                }
                IT_SIM_PMC_STOP
            }
            Command::PmcRead {
                setup,
                dst,
                entries,
            } => {
                body.extend([*dst as u32, (*dst >> 32) as u32]);
                let mut name = [0u8; 16];
                let n = setup.arch.len().min(16);
                name[..n].copy_from_slice(&setup.arch.as_bytes()[..n]);
                body.extend(
                    name.chunks(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
                body.extend([setup.xcc, setup.se, setup.sa_per_se, setup.cu]);
                body.push(entries.len() as u32);
                for e in entries {
                    body.extend([
                        e.slot.block,
                        e.slot.instance,
                        e.slot.register,
                        e.xcc,
                        e.samples,
                    ]);
                }
                IT_SIM_PMC_READ
            }
            Command::Nop => {
                body.push(0);
                IT_NOP
            }
        };
        out.push(type3_header(opcode, body.len() as u32 + 1));
        out.extend(body);
    }

    /// Decodes every packet of a command buffer. Unknown opcodes decode as [`Command::Nop`].
    pub fn decode_all(dwords: &[u32]) -> Result<Vec<Command>, Pm4Error> {
        let packets = super::gfx9::packets(dwords).map_err(|e| match dwords[e.at] {
            header if header >> 30 != 3 => Pm4Error::NotType3 { at: e.at, header },
            _ => Pm4Error::Truncated { at: e.at },
        })?;
        packets
            .iter()
            .map(|p| decode_one(p.opcode, p.body).ok_or(Pm4Error::Truncated { at: p.at }))
            .collect()
    }
}

fn decode_one(opcode: u8, body: &[u32]) -> Option<Command> {
    let records = |first: usize, width: usize| -> Option<Vec<&[u32]>> {
        let n = *body.get(first)? as usize;
        let data = body.get(first + 1..first + 1 + n * width)?;
        Some(data.chunks(width).collect())
    };
    let slot = |r: &[u32]| Slot {
        block: r[0],
        instance: r[1],
        register: r[2],
    };
    Some(match opcode {
        IT_SIM_PMC_START => Command::PmcStart(
            records(0, 5)?
                .into_iter()
                .map(|r| Select {
                    slot: slot(r),
                    event: r[3],
                    accum: r[4],
                })
                .collect(),
        ),
        IT_SIM_PMC_STOP => Command::PmcStop(records(0, 3)?.into_iter().map(slot).collect()),
        IT_SIM_PMC_READ => {
            let head = body.get(..10)?;
            let name: Vec<u8> = head[2..6].iter().flat_map(|d| d.to_le_bytes()).collect();
            let arch = String::from_utf8_lossy(&name)
                .trim_end_matches('\0')
                .to_string();
            let setup = Setup {
                arch,
                xcc: head[6],
                se: head[7],
                sa_per_se: head[8],
                cu: head[9],
            };
            let entries = records(10, 5)?
                .into_iter()
                .map(|r| ReadEntry {
                    slot: slot(r),
                    xcc: r[3],
                    samples: r[4],
                })
                .collect();
            Command::PmcRead {
                setup,
                dst: u64::from(head[0]) | u64::from(head[1]) << 32,
                entries,
            }
        }
        _ => Command::Nop,
    })
}

/// Encodes commands into a dword buffer.
pub fn encode_all(commands: &[Command]) -> Vec<u32> {
    let mut out = Vec::new();
    for c in commands {
        c.encode(&mut out);
    }
    out
}

/// Fills bytes 2..56 of a PM4-IB AQL packet so that it executes the `size_dwords` dwords at
/// `ib_addr`. The header (bytes 0..2) and completion signal (56..64) are the caller's.
pub fn fill_ib_packet(packet: &mut [u8; AQL_PACKET_SIZE], ib_addr: u64, size_dwords: u32) {
    let ib = [
        type3_header(IT_INDIRECT_BUFFER, 4),
        (ib_addr as u32) & 0xFFFF_FFFC,
        ((ib_addr >> 32) as u32) & 0xFFFF,
        (size_dwords & 0xF_FFFF) | 0x1080_0000,
    ];
    packet[2..4].copy_from_slice(&AMD_AQL_FORMAT_PM4_IB.to_le_bytes());
    for (i, dw) in ib.iter().enumerate() {
        packet[4 + 4 * i..8 + 4 * i].copy_from_slice(&dw.to_le_bytes());
    }
    packet[20..24].copy_from_slice(&PM4_IB_DW_COUNT_REMAIN.to_le_bytes());
    packet[24..56].fill(0);
}

/// Address and size in dwords of the indirect buffer a PM4-IB AQL packet executes, or `None`
/// if the packet is not a PM4-IB packet.
pub fn parse_ib_packet(packet: &[u8; AQL_PACKET_SIZE]) -> Option<(u64, u32)> {
    let dw =
        |i: usize| u32::from_le_bytes([packet[i], packet[i + 1], packet[i + 2], packet[i + 3]]);
    if u16::from_le_bytes([packet[2], packet[3]]) != AMD_AQL_FORMAT_PM4_IB {
        return None;
    }
    let header = dw(4);
    if header >> 30 != 3 || ((header >> 8) & 0xFF) as u8 != IT_INDIRECT_BUFFER {
        return None;
    }
    let addr = u64::from(dw(8) & 0xFFFF_FFFC) | u64::from(dw(12) & 0xFFFF) << 32;
    Some((addr, dw(16) & 0xF_FFFF))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip() {
        let slot = Slot {
            block: 12,
            instance: 3,
            register: 1,
        };
        let commands = vec![
            Command::PmcStart(vec![Select {
                slot,
                event: 17,
                accum: 0,
            }]),
            Command::PmcRead {
                setup: Setup {
                    arch: "gfx942".into(),
                    xcc: 8,
                    se: 32,
                    sa_per_se: 1,
                    cu: 304,
                },
                dst: 0x7f00_1234_5678,
                entries: vec![ReadEntry {
                    slot,
                    xcc: 7,
                    samples: 1,
                }],
            },
            Command::PmcStop(vec![slot]),
            Command::Nop,
        ];
        let dwords = encode_all(&commands);
        assert_eq!(dwords[0], 0xC005_F000);
        assert_eq!(Command::decode_all(&dwords), Ok(commands));
    }

    #[test]
    fn ib_packet_round_trip() {
        let mut packet = [0xAAu8; AQL_PACKET_SIZE];
        fill_ib_packet(&mut packet, 0x7f12_3456_7890, 42);
        assert_eq!(&packet[0..2], &[0xAA, 0xAA]);
        assert_eq!(&packet[56..64], &[0xAA; 8]);
        assert_eq!(
            u32::from_le_bytes(packet[4..8].try_into().unwrap()),
            0xC002_3F00
        );
        assert_eq!(parse_ib_packet(&packet), Some((0x7f12_3456_7890, 42)));
    }

    #[test]
    fn bad_header_is_reported() {
        assert_eq!(
            Command::decode_all(&[0x4000_0000]),
            Err(Pm4Error::NotType3 {
                at: 0,
                header: 0x4000_0000
            })
        );
        assert_eq!(
            Command::decode_all(&[type3_header(IT_SIM_PMC_STOP, 5), 1]),
            Err(Pm4Error::Truncated { at: 0 })
        );
    }
}
