//! The gfx9 family's performance-counter registers and the PM4 type-3 packets that program them.
//!
//! Shared by the simulated aqlprofile, which writes these packets for gfx908, gfx90a, gfx942 and
//! gfx950 agents as AMD's library does, and by the simulated GPU, which executes them against a
//! register file. Every address is a register dword address (the byte MMIO address divided by
//! four) that already includes its IP segment base; the facts are those of
//! `shared/reference/aqlprofile-pm4.md` §2-§4.

/// `GRBM_GFX_INDEX`: which instance, shader array and shader engine register accesses reach.
pub const GRBM_GFX_INDEX: u32 = 0xC200;
/// `CP_PERFMON_CNTL`: reset, start, stop and sample of every CP-controlled counter.
pub const CP_PERFMON_CNTL: u32 = 0xD808;
/// `RLC_PERFMON_CLK_CNTL`: perf-monitor clock on (1) or gated (0).
pub const RLC_PERFMON_CLK_CNTL: u32 = 0xDCBF;
/// `COMPUTE_PERFCOUNT_ENABLE` (a persistent SH register): compute dispatches are counted.
pub const COMPUTE_PERFCOUNT_ENABLE: u32 = 0x2E0B;
/// `SQ_PERFCOUNTER_CTRL`: shader stages and VMIDs the SQ counters count.
pub const SQ_PERFCOUNTER_CTRL: u32 = 0xD9E0;
/// `SQ_PERFCOUNTER_MASK`: shader arrays the SQ counters count.
pub const SQ_PERFCOUNTER_MASK: u32 = 0xD9E1;

/// First register of the UCONFIG space (`SET_UCONFIG_REG` offsets are relative to it).
pub const UCONFIG_BASE: u32 = 0xC000;
/// First register of the persistent SH space (`SET_SH_REG` offsets are relative to it).
pub const SH_BASE: u32 = 0x2C00;
/// Privileged config space, where the perfcounter selectors of COPY_DATA may address registers.
pub const CONFIG_SPACE: std::ops::Range<u32> = 0x2000..0xA000;

/// `GRBM_GFX_INDEX` fields.
pub mod grbm {
    /// Accesses reach every shader array.
    pub const SH_BROADCAST: u32 = 1 << 29;
    /// Accesses reach every instance.
    pub const INSTANCE_BROADCAST: u32 = 1 << 30;
    /// Accesses reach every shader engine.
    pub const SE_BROADCAST: u32 = 1 << 31;
    /// Everything.
    pub const BROADCAST: u32 = SH_BROADCAST | INSTANCE_BROADCAST | SE_BROADCAST;

    /// Instance `i` in every shader engine.
    pub fn instance(i: u32) -> u32 {
        SH_BROADCAST | SE_BROADCAST | (i & 0xFF)
    }

    /// Every instance of shader engine `se`.
    pub fn se(se: u32) -> u32 {
        SH_BROADCAST | INSTANCE_BROADCAST | (se & 0xFF) << 16
    }

    /// Instance `i` of shader engine `se`.
    pub fn instance_se(i: u32, se: u32) -> u32 {
        SH_BROADCAST | (se & 0xFF) << 16 | (i & 0xFF)
    }

    /// `INSTANCE_INDEX`, or `None` when broadcast.
    pub fn instance_of(value: u32) -> Option<u32> {
        (value & INSTANCE_BROADCAST == 0).then_some(value & 0xFF)
    }

    /// `SE_INDEX`, or `None` when broadcast.
    pub fn se_of(value: u32) -> Option<u32> {
        (value & SE_BROADCAST == 0).then_some((value >> 16) & 0xFF)
    }
}

/// `CP_PERFMON_CNTL` values.
pub mod perfmon {
    /// `PERFMON_STATE` field.
    pub const STATE_MASK: u32 = 0xF;
    /// Stop counting and zero every counter.
    pub const DISABLE_AND_RESET: u32 = 0;
    /// Count.
    pub const START: u32 = 1;
    /// Stop counting, keeping the values.
    pub const STOP: u32 = 2;
    /// `PERFMON_SAMPLE_ENABLE`: latch the live counters into the readable registers.
    pub const SAMPLE: u32 = 1 << 10;
    /// What a read writes: keep counting and sample.
    pub const READ: u32 = START | SAMPLE;
}

/// Memory-controller style `*_PERFCOUNTER_RSLT_CNTL` and `*_PERFCOUNTER_CFG` fields.
pub mod mc {
    /// `PERF_COUNTER_SELECT`: which CFG slot feeds the shared LO/HI registers.
    pub const SLOT_MASK: u32 = 0xF;
    /// `ENABLE_ANY`: every enabled slot counts.
    pub const ENABLE_ANY: u32 = 1 << 24;
    /// `CLEAR_ALL`: zero every slot.
    pub const CLEAR_ALL: u32 = 1 << 25;
    /// CFG `PERF_SEL`.
    pub const SEL_MASK: u32 = 0xFF;
    /// CFG `PERF_MODE` (0 = accumulate).
    pub const MODE_MASK: u32 = 0xF << 24;
    /// CFG `ENABLE`.
    pub const ENABLE: u32 = 1 << 28;
}

/// SQ register values.
pub mod sq {
    /// `PERF_SEL` of an SQ select register.
    pub const SEL_MASK: u32 = 0x1FF;
    /// `SQC_BANK_MASK`, `SQC_CLIENT_MASK` and `SIMD_MASK`, all set.
    pub const SELECT_MASKS: u32 = 0x0F0F_F000;
    /// `SQ_PERFCOUNTER_MASK` with both shader-array masks full.
    pub const MASK_ALL: u32 = 0xFFFF_FFFF;
    /// `SQ_PERFCOUNTER_CTRL` for SQ events: PS, VS, GS, HS and CS, every VMID.
    pub const CTRL_SQ: u32 = 0xFFFF_0057;
    /// `SQ_PERFCOUNTER_CTRL` when texture blocks count: all seven stages, every VMID.
    pub const CTRL_ALL_STAGES: u32 = 0xFFFF_007F;
    /// The compute-shader enable bit of `SQ_PERFCOUNTER_CTRL`.
    pub const CTRL_CS: u32 = 1 << 6;
    /// `SQ_PERF_SEL_ACCUM_PREV`: integrate the previous slot's level (low resolution).
    pub const ACCUM_PREV: u32 = 1;

    /// The high-resolution accumulate select of `arch`'s SQ.
    pub fn accum_prev_hi(arch: &str) -> u32 {
        match arch {
            a if a.starts_with("gfx908") => 158,
            a if a.starts_with("gfx90a") => 185,
            a if a.starts_with("gfx94") => 184,
            a if a.starts_with("gfx95") => 200,
            _ => 185,
        }
    }
}

/// PM4 type-3 opcodes.
pub mod op {
    /// `NOP`.
    pub const NOP: u8 = 0x10;
    /// `PRED_EXEC`: run the next dwords only on the selected XCCs.
    pub const PRED_EXEC: u8 = 0x23;
    /// `WRITE_DATA`.
    pub const WRITE_DATA: u8 = 0x37;
    /// `WAIT_REG_MEM`.
    pub const WAIT_REG_MEM: u8 = 0x3C;
    /// `INDIRECT_BUFFER`.
    pub const INDIRECT_BUFFER: u8 = 0x3F;
    /// `COPY_DATA`.
    pub const COPY_DATA: u8 = 0x40;
    /// `EVENT_WRITE`.
    pub const EVENT_WRITE: u8 = 0x46;
    /// `ACQUIRE_MEM`.
    pub const ACQUIRE_MEM: u8 = 0x58;
    /// `SET_SH_REG`.
    pub const SET_SH_REG: u8 = 0x76;
    /// `SET_UCONFIG_REG`.
    pub const SET_UCONFIG_REG: u8 = 0x79;
}

/// `COPY_DATA` control word fields.
pub mod copy {
    /// `SRC_SEL`: memory-mapped register.
    pub const SRC_REG: u32 = 0;
    /// `SRC_SEL`: memory.
    pub const SRC_MEM: u32 = 1;
    /// `SRC_SEL`: perfcounter register space.
    pub const SRC_PERFCOUNTER: u32 = 4;
    /// `SRC_SEL`: the immediate in dword 2 (and 3).
    pub const SRC_IMMEDIATE: u32 = 5;
    /// `SRC_SEL`: the GPU clock counter.
    pub const SRC_GPU_CLOCK: u32 = 9;
    /// `DST_SEL`: memory-mapped register.
    pub const DST_REG: u32 = 0;
    /// `DST_SEL`: memory through the L2.
    pub const DST_TC_L2: u32 = 2;
    /// `DST_SEL`: perfcounter register space.
    pub const DST_PERFCOUNTER: u32 = 4;
    /// `DST_SEL`: memory.
    pub const DST_MEM: u32 = 5;
    /// `COUNT_SEL`: 64 bits instead of 32.
    pub const COUNT_64: u32 = 1 << 16;
    /// Both cache policies STREAM, as aqlprofile sets them for counter reads.
    pub const STREAM: u32 = (1 << 13) | (1 << 25);
}

/// `EVENT_WRITE` of `CS_PARTIAL_FLUSH` (event type 7, event index 4).
pub const CS_PARTIAL_FLUSH: u32 = 0x407;
/// `ACQUIRE_MEM` `COHER_CNTL`: write back and invalidate the L2 and the shader caches.
pub const ACQUIRE_COHER_CNTL: u32 = 0x28C4_0000;
/// `ACQUIRE_MEM` poll interval.
pub const ACQUIRE_POLL_INTERVAL: u32 = 0x10;
/// `INDIRECT_BUFFER` control: `VALID` and cache policy 1 (the size goes in bits 19:0).
pub const IB_CONTROL: u32 = 0x1080_0000;

/// MI300 system-management-network addresses of per-AID registers: bit 32 set, the AID in bits
/// 31:30, the register dword address below.
pub mod smn {
    /// Marks a 64-bit register address as an SMN address.
    pub const FLAG: u64 = 1 << 32;

    /// The SMN address of `reg` on AID `aid`.
    pub fn address(reg: u32, aid: u32) -> u64 {
        FLAG | u64::from(aid & 3) << 30 | u64::from(reg)
    }

    /// Splits a 64-bit register address into (register, AID if it is an SMN address).
    pub fn split(address: u64) -> (u32, Option<u32>) {
        if address & FLAG != 0 {
            (
                (address & 0x3FFF_FFFF) as u32,
                Some(((address >> 30) & 3) as u32),
            )
        } else {
            (address as u32, None)
        }
    }
}

/// How a block's counters are programmed and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// One select register per slot and a LO/HI pair per slot, started and sampled through
    /// `CP_PERFMON_CNTL`.
    Plain,
    /// Like [`Style::Plain`], with SQ's select fields, control and mask registers.
    Sq,
    /// CFG registers per slot, one LO/HI pair shared through `RSLT_CNTL`; started and stopped
    /// through `RSLT_CNTL`, read live.
    Mc,
    /// Like [`Style::Mc`], once per AID of the device rather than per XCC (ATC, RPB).
    Aid,
}

/// The counter registers of one gfx9 block.
#[derive(Debug, Clone, Copy)]
pub struct BlockRegs {
    /// Block name as the block table spells it.
    pub name: &'static str,
    /// How the block is programmed.
    pub style: Style,
    /// Select (or CFG) register of each slot.
    pub select: &'static [u32],
    /// LO register of each slot (one shared register for MC and AID blocks).
    pub lo: &'static [u32],
    /// HI register of each slot (one shared register for MC and AID blocks).
    pub hi: &'static [u32],
    /// `RSLT_CNTL` (MC and AID blocks), `SQ_PERFCOUNTER_CTRL` (SQ), 0 otherwise.
    pub control: u32,
    /// Width of `PERF_SEL`; 0 when the select is always written as 0 (GDS, SX).
    pub sel_bits: u32,
    /// `LO`/`HI` of every slot are zeroed when the block is started (SX).
    pub clean: bool,
    /// A texture-path block, which turns on every SQ stage.
    pub texture: bool,
}

impl BlockRegs {
    /// Whether `CP_PERFMON_CNTL` starts and samples this block.
    pub fn cp_controlled(&self) -> bool {
        self.style != Style::Aid
    }
}

const fn seq<const N: usize>(base: u32, step: u32) -> [u32; N] {
    let mut out = [0; N];
    let mut i = 0;
    while i < N {
        out[i] = base + step * i as u32;
        i += 1;
    }
    out
}

const fn plain(
    name: &'static str,
    select: &'static [u32],
    lo: &'static [u32],
    hi: &'static [u32],
    sel_bits: u32,
) -> BlockRegs {
    BlockRegs {
        name,
        style: Style::Plain,
        select,
        lo,
        hi,
        control: 0,
        sel_bits,
        clean: false,
        texture: false,
    }
}

const fn texture(block: BlockRegs) -> BlockRegs {
    BlockRegs {
        texture: true,
        ..block
    }
}

const fn shared(
    name: &'static str,
    style: Style,
    cfg: &'static [u32],
    lo: &'static [u32],
    hi: &'static [u32],
    control: u32,
) -> BlockRegs {
    BlockRegs {
        name,
        style,
        select: cfg,
        lo,
        hi,
        control,
        sel_bits: 8,
        clean: false,
        texture: false,
    }
}

static GDS_SEL: [u32; 4] = seq(0xDA80, 1);
static GDS_LO: [u32; 4] = seq(0xD280, 2);
static GDS_HI: [u32; 4] = seq(0xD281, 2);
static GRBM_SE_SEL: [u32; 4] = seq(0xD842, 1);
static GRBM_SE_LO: [u32; 4] = seq(0xD045, 2);
static GRBM_SE_HI: [u32; 4] = seq(0xD046, 2);
static SPI_LO: [u32; 6] = seq(0xD181, 2);
static SPI_HI: [u32; 6] = seq(0xD180, 2);
static SQ_SEL: [u32; 16] = seq(0xD9C0, 1);
static SQ_LO: [u32; 16] = seq(0xD1C0, 2);
static SQ_HI: [u32; 16] = seq(0xD1C1, 2);
static SX_SEL: [u32; 4] = seq(0xDA40, 1);
static SX_LO: [u32; 4] = seq(0xD240, 2);
static SX_HI: [u32; 4] = seq(0xD241, 2);
static TCA_LO: [u32; 4] = seq(0xD390, 2);
static TCA_HI: [u32; 4] = seq(0xD391, 2);
static TCC_LO: [u32; 4] = seq(0xD380, 2);
static TCC_HI: [u32; 4] = seq(0xD381, 2);
static TCP_LO: [u32; 4] = seq(0xD340, 2);
static TCP_HI: [u32; 4] = seq(0xD341, 2);
static MCVML2_CFG: [u32; 8] = seq(0xDD4C, 1);
static ATC_CFG: [u32; 4] = seq(0x0C3E, 1);
static RPB_CFG: [u32; 4] = seq(0x0D03, 1);

/// Every gfx9 counter block's registers (SQ_CS uses SQ's).
pub static BLOCKS: [BlockRegs; 18] = [
    plain(
        "CPC",
        &[0xD809, 0xD803],
        &[0xD006, 0xD004],
        &[0xD007, 0xD005],
        10,
    ),
    plain(
        "CPF",
        &[0xD807, 0xD805],
        &[0xD00A, 0xD008],
        &[0xD00B, 0xD009],
        10,
    ),
    plain("GDS", &GDS_SEL, &GDS_LO, &GDS_HI, 0),
    plain(
        "GRBM",
        &[0xD840, 0xD841],
        &[0xD040, 0xD043],
        &[0xD041, 0xD044],
        6,
    ),
    plain("GRBM_SE", &GRBM_SE_SEL, &GRBM_SE_LO, &GRBM_SE_HI, 6),
    plain(
        "SPI",
        &[0xD980, 0xD981, 0xD982, 0xD983, 0xD988, 0xD989],
        &SPI_LO,
        &SPI_HI,
        10,
    ),
    BlockRegs {
        name: "SQ",
        style: Style::Sq,
        select: &SQ_SEL,
        lo: &SQ_LO,
        hi: &SQ_HI,
        control: SQ_PERFCOUNTER_CTRL,
        sel_bits: 9,
        clean: false,
        texture: false,
    },
    BlockRegs {
        clean: true,
        ..plain("SX", &SX_SEL, &SX_LO, &SX_HI, 0)
    },
    texture(plain(
        "TA",
        &[0xDAC0, 0xDAC2],
        &[0xD2C0, 0xD2C2],
        &[0xD2C1, 0xD2C3],
        8,
    )),
    texture(plain(
        "TCA",
        &[0xDB90, 0xDB92, 0xDB94, 0xDB95],
        &TCA_LO,
        &TCA_HI,
        10,
    )),
    texture(plain(
        "TCC",
        &[0xDB80, 0xDB82, 0xDB84, 0xDB85],
        &TCC_LO,
        &TCC_HI,
        10,
    )),
    texture(plain(
        "TCP",
        &[0xDB40, 0xDB42, 0xDB44, 0xDB45],
        &TCP_LO,
        &TCP_HI,
        10,
    )),
    texture(plain(
        "TD",
        &[0xDB00, 0xDB02],
        &[0xD300, 0xD302],
        &[0xD301, 0xD303],
        8,
    )),
    shared(
        "MCVML2",
        Style::Mc,
        &MCVML2_CFG,
        &[0xD508],
        &[0xD509],
        0xDD54,
    ),
    shared("ATC", Style::Aid, &ATC_CFG, &[0x0C43], &[0x0C44], 0x0C42),
    shared(
        "ATCL2",
        Style::Mc,
        &[0xDD40, 0xDD41],
        &[0xD500],
        &[0xD501],
        0xDD42,
    ),
    shared(
        "GCEA",
        Style::Mc,
        &[0x2AFE, 0x2AFF],
        &[0x2AFC],
        &[0x2AFD],
        0x2700,
    ),
    shared("RPB", Style::Aid, &RPB_CFG, &[0x0D01], &[0x0D02], 0x0D07),
];

/// Index into [`BLOCKS`] of the block called `name` (`SQ_CS` is SQ).
pub fn block_index(name: &str) -> Option<usize> {
    let name = if name == "SQ_CS" { "SQ" } else { name };
    BLOCKS.iter().position(|b| b.name == name)
}

/// Whether `arch` is programmed through these registers.
pub fn covers(arch: &str) -> bool {
    arch.starts_with("gfx9")
}

/// What a register is, for the GPU that executes writes and reads of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Register {
    /// `GRBM_GFX_INDEX`.
    GrbmGfxIndex,
    /// `CP_PERFMON_CNTL`.
    CpPerfmonCntl,
    /// `RLC_PERFMON_CLK_CNTL`.
    RlcPerfmonClkCntl,
    /// `COMPUTE_PERFCOUNT_ENABLE`.
    ComputePerfcountEnable,
    /// `SQ_PERFCOUNTER_CTRL`.
    SqCtrl,
    /// `SQ_PERFCOUNTER_MASK`.
    SqMask,
    /// A select or CFG register: block index into [`BLOCKS`], slot.
    Select(u8, u8),
    /// A LO register: block, slot (0 for the shared register of MC and AID blocks).
    Lo(u8, u8),
    /// A HI register.
    Hi(u8, u8),
    /// `RSLT_CNTL` of an MC or AID block.
    ResultControl(u8),
}

/// The register at dword address `address`, if the GPU models it.
pub fn register(address: u32) -> Option<Register> {
    use std::sync::OnceLock;
    // Sorted by address, searched by halves: command buffers are compiled register by register.
    static MAP: OnceLock<Vec<(u32, Register)>> = OnceLock::new();
    let map = MAP.get_or_init(|| {
        let mut map = vec![
            (GRBM_GFX_INDEX, Register::GrbmGfxIndex),
            (CP_PERFMON_CNTL, Register::CpPerfmonCntl),
            (RLC_PERFMON_CLK_CNTL, Register::RlcPerfmonClkCntl),
            (COMPUTE_PERFCOUNT_ENABLE, Register::ComputePerfcountEnable),
            (SQ_PERFCOUNTER_CTRL, Register::SqCtrl),
            (SQ_PERFCOUNTER_MASK, Register::SqMask),
        ];
        for (b, regs) in BLOCKS.iter().enumerate() {
            let b = b as u8;
            for (k, &a) in regs.select.iter().enumerate() {
                map.push((a, Register::Select(b, k as u8)));
            }
            for (k, &a) in regs.lo.iter().enumerate() {
                map.push((a, Register::Lo(b, k as u8)));
            }
            for (k, &a) in regs.hi.iter().enumerate() {
                map.push((a, Register::Hi(b, k as u8)));
            }
            if matches!(regs.style, Style::Mc | Style::Aid) {
                map.push((regs.control, Register::ResultControl(b)));
            }
        }
        // An address given twice is the register given last.
        map.reverse();
        map.sort_by_key(|&(a, _)| a);
        map.dedup_by_key(|&mut (a, _)| a);
        map
    });
    map.binary_search_by_key(&address, |&(a, _)| a)
        .ok()
        .map(|i| map[i].1)
}

/// PM4 type-3 header for a packet of `ndw` dwords (header included).
pub fn header(opcode: u8, ndw: u32) -> u32 {
    (3 << 30) | (((ndw - 2) & 0x3FFF) << 16) | (u32::from(opcode) << 8)
}

/// Appends PM4 packets to a command stream, with the encodings aqlprofile uses on gfx9.
#[derive(Debug, Default, Clone)]
pub struct Stream {
    /// The dwords so far.
    pub dwords: Vec<u32>,
    /// XCCs of the agent: perfcounter selectors are used only with one.
    pub xcc: u32,
}

impl Stream {
    /// An empty stream for an agent with `xcc` XCCs.
    pub fn new(xcc: u32) -> Stream {
        Stream {
            dwords: Vec::new(),
            xcc,
        }
    }

    /// `SET_UCONFIG_REG` of one register.
    pub fn set_uconfig(&mut self, reg: u32, value: u32) {
        self.dwords
            .extend([header(op::SET_UCONFIG_REG, 3), reg - UCONFIG_BASE, value]);
    }

    /// `SET_SH_REG` of one register.
    pub fn set_sh(&mut self, reg: u32, value: u32) {
        self.dwords
            .extend([header(op::SET_SH_REG, 3), reg - SH_BASE, value]);
    }

    /// Writes a register: `SET_UCONFIG_REG` in the UCONFIG space, an immediate `COPY_DATA`
    /// elsewhere.
    pub fn write_config(&mut self, reg: u32, value: u32) {
        if reg >= UCONFIG_BASE {
            self.set_uconfig(reg, value);
        } else {
            self.write_pconfig(u64::from(reg), value);
        }
    }

    /// Writes a register with an immediate `COPY_DATA` whatever its space (MC control
    /// registers, SMN addresses).
    pub fn write_pconfig(&mut self, address: u64, value: u32) {
        let dst = if self.perfcounter_space(address) {
            copy::DST_PERFCOUNTER
        } else {
            copy::DST_REG
        };
        self.dwords.extend([
            header(op::COPY_DATA, 6),
            copy::SRC_IMMEDIATE | dst << 8,
            value,
            0,
            address as u32,
            (address >> 32) as u32,
        ]);
    }

    /// Copies the 32-bit register at `address` to memory at `dst`.
    pub fn copy_to_memory(&mut self, address: u64, dst: u64) {
        let src = if self.perfcounter_space(address) {
            copy::SRC_PERFCOUNTER
        } else {
            copy::SRC_REG
        };
        self.dwords.extend([
            header(op::COPY_DATA, 6),
            src | copy::DST_MEM << 8 | copy::STREAM,
            address as u32,
            (address >> 32) as u32,
            (dst as u32) & !3,
            (dst >> 32) as u32,
        ]);
    }

    /// Copies a counter's LO and HI registers to the 8 bytes at `dst`.
    pub fn copy_counter(&mut self, lo: u64, hi: u64, dst: u64) {
        self.copy_to_memory(lo, dst);
        self.copy_to_memory(hi, dst + 4);
    }

    fn perfcounter_space(&self, address: u64) -> bool {
        self.xcc == 1 && address >> 32 == 0 && CONFIG_SPACE.contains(&(address as u32))
    }

    /// `EVENT_WRITE` of `CS_PARTIAL_FLUSH`: wait until the compute work before it is done.
    pub fn wait_idle(&mut self) {
        self.dwords
            .extend([header(op::EVENT_WRITE, 2), CS_PARTIAL_FLUSH]);
    }

    /// `ACQUIRE_MEM` writing back and invalidating the caches over `bytes` bytes at `base`.
    pub fn acquire_mem(&mut self, base: u64, bytes: u64) {
        let start = base & !0xFF;
        let end = (base + bytes + 0xFF) & !0xFF;
        let size = (end - start) >> 8;
        self.dwords.extend([
            header(op::ACQUIRE_MEM, 7),
            ACQUIRE_COHER_CNTL,
            size as u32,
            (size >> 32) as u32,
            (start >> 8) as u32,
            ((start >> 40) & 0xFF) as u32,
            ACQUIRE_POLL_INTERVAL,
        ]);
    }

    /// Runs `body` under a `PRED_EXEC` for XCC `xcc` when the agent has several XCCs (its
    /// dword count patched afterwards); directly otherwise.
    pub fn predicated(&mut self, xcc: u32, body: impl FnOnce(&mut Stream)) {
        if self.xcc <= 1 {
            body(self);
            return;
        }
        let at = self.dwords.len();
        self.dwords.extend([header(op::PRED_EXEC, 2), 0]);
        body(self);
        let n = (self.dwords.len() - at - 2) as u32;
        self.dwords[at + 1] = (1 << xcc) << 24 | (n & 0x3FFF);
    }
}

/// Why a packet cannot be executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// Dword offset of the packet's header.
    pub at: usize,
    /// What is not modelled.
    pub what: String,
}

/// One decoded type-3 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Dword offset of the header.
    pub at: usize,
    /// Opcode.
    pub opcode: u8,
    /// The dwords after the header.
    pub body: &'a [u32],
}

/// Splits a command buffer into type-3 packets; zero dwords and type-2 fillers are skipped.
pub fn packets(dwords: &[u32]) -> Result<Vec<Packet<'_>>, Unsupported> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < dwords.len() {
        let h = dwords[at];
        if h == 0 || h == 0x8000_0000 {
            at += 1;
            continue;
        }
        if h >> 30 != 3 {
            return Err(Unsupported {
                at,
                what: format!("0x{h:08x} is not a PM4 type-3 header"),
            });
        }
        let ndw = (((h >> 16) & 0x3FFF) + 2) as usize;
        let Some(body) = dwords.get(at + 1..at + ndw) else {
            return Err(Unsupported {
                at,
                what: format!("packet 0x{h:08x} runs past the end of the buffer"),
            });
        };
        out.push(Packet {
            at,
            opcode: ((h >> 8) & 0xFF) as u8,
            body,
        });
        at += ndw;
    }
    Ok(out)
}
