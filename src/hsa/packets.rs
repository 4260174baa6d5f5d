//! AQL packets (64 bytes each) and the helpers that build and read their 16-bit headers.

use super::types::hsa_signal_t;
use core::ffi::c_void;

/// `hsa_packet_type_t`: vendor-specific packet (AMD: PM4 indirect buffer, intercept marker).
pub const HSA_PACKET_TYPE_VENDOR_SPECIFIC: u16 = 0;
/// Packet slot not yet (or no longer) valid.
pub const HSA_PACKET_TYPE_INVALID: u16 = 1;
/// Kernel dispatch.
pub const HSA_PACKET_TYPE_KERNEL_DISPATCH: u16 = 2;
/// Barrier-AND: waits until every dependency signal is 0.
pub const HSA_PACKET_TYPE_BARRIER_AND: u16 = 3;
/// Agent dispatch.
pub const HSA_PACKET_TYPE_AGENT_DISPATCH: u16 = 4;
/// Barrier-OR: waits until any dependency signal is 0.
pub const HSA_PACKET_TYPE_BARRIER_OR: u16 = 5;

/// Header bit offset of the packet type (8 bits).
pub const HSA_PACKET_HEADER_TYPE: u16 = 0;
/// Header bit offset of the barrier bit.
pub const HSA_PACKET_HEADER_BARRIER: u16 = 8;
/// Header bit offset of the acquire fence scope (2 bits).
pub const HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE: u16 = 9;
/// Header bit offset of the release fence scope (2 bits).
pub const HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE: u16 = 11;
/// `hsa_fence_scope_t`: no fence.
pub const HSA_FENCE_SCOPE_NONE: u16 = 0;
/// Agent scope.
pub const HSA_FENCE_SCOPE_AGENT: u16 = 1;
/// System scope.
pub const HSA_FENCE_SCOPE_SYSTEM: u16 = 2;
/// Bit offset of the dimension count in a kernel dispatch's `setup`.
pub const HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS: u16 = 0;

/// AMD vendor packet format: PM4 indirect buffer (`pm4_ib_format` at byte 2).
pub const AMD_AQL_FORMAT_PM4_IB: u16 = 1;
/// AMD vendor packet format of `amd_aql_intercept_marker_t` (`format` at byte 2).
pub const AMD_AQL_FORMAT_INTERCEPT_MARKER: u8 = 0xFE;
/// AMD vendor packet type of the barrier-value packet.
pub const HSA_AMD_PACKET_TYPE_BARRIER_VALUE: u8 = 2;

/// PM4 type-3 opcode of INDIRECT_BUFFER.
pub const PM4_IT_INDIRECT_BUFFER: u32 = 0x3F;
/// Dwords of a PM4 INDIRECT_BUFFER command.
pub const PM4_INDIRECT_BUFFER_DWORDS: u32 = 4;

/// Builds a packet header: type, barrier bit, acquire and release fence scopes.
pub const fn packet_header(packet_type: u16, barrier: bool, acquire: u16, release: u16) -> u16 {
    (packet_type << HSA_PACKET_HEADER_TYPE)
        | ((barrier as u16) << HSA_PACKET_HEADER_BARRIER)
        | (acquire << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
        | (release << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE)
}

/// The packet type of a header.
pub const fn header_type(header: u16) -> u16 {
    header & 0xFF
}

/// Whether the header's barrier bit is set.
pub const fn header_barrier(header: u16) -> bool {
    (header >> HSA_PACKET_HEADER_BARRIER) & 1 == 1
}

/// The acquire fence scope of a header.
pub const fn header_acquire_scope(header: u16) -> u16 {
    (header >> HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) & 3
}

/// The release fence scope of a header.
pub const fn header_release_scope(header: u16) -> u16 {
    (header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3
}

/// `hsa_kernel_dispatch_packet_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_kernel_dispatch_packet_t {
    /// Packet header.
    pub header: u16,
    /// Dimensions in bits 0..2.
    pub setup: u16,
    /// Workgroup size X.
    pub workgroup_size_x: u16,
    /// Workgroup size Y.
    pub workgroup_size_y: u16,
    /// Workgroup size Z.
    pub workgroup_size_z: u16,
    /// Reserved, 0.
    pub reserved0: u16,
    /// Grid size X (work-items).
    pub grid_size_x: u32,
    /// Grid size Y.
    pub grid_size_y: u32,
    /// Grid size Z.
    pub grid_size_z: u32,
    /// Private (scratch) bytes per work-item.
    pub private_segment_size: u32,
    /// Group (LDS) bytes per workgroup.
    pub group_segment_size: u32,
    /// Address of the kernel descriptor.
    pub kernel_object: u64,
    /// Kernel argument buffer.
    pub kernarg_address: *mut c_void,
    /// Reserved, 0.
    pub reserved2: u64,
    /// Signal decremented on completion (0 = none).
    pub completion_signal: hsa_signal_t,
}

/// Implements `Default` as all-zero bytes for plain C structs that hold raw pointers.
macro_rules! zeroed_default {
    ($($t:ty),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                // SAFETY: a plain C struct of integers, raw pointers and `Option<fn>`: all-zero
                // bytes are a valid value (0, null, None).
                unsafe { core::mem::zeroed() }
            }
        }
    )*};
}
pub(crate) use zeroed_default;

zeroed_default!(hsa_kernel_dispatch_packet_t, hsa_agent_dispatch_packet_t);

/// `hsa_agent_dispatch_packet_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_agent_dispatch_packet_t {
    /// Packet header.
    pub header: u16,
    /// Function type.
    pub type_: u16,
    /// Reserved, 0.
    pub reserved0: u32,
    /// Return value address.
    pub return_address: *mut c_void,
    /// Arguments.
    pub arg: [u64; 4],
    /// Reserved, 0.
    pub reserved2: u64,
    /// Completion signal.
    pub completion_signal: hsa_signal_t,
}

/// `hsa_barrier_and_packet_t` (and, with the same layout, `hsa_barrier_or_packet_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hsa_barrier_and_packet_t {
    /// Packet header.
    pub header: u16,
    /// Reserved, 0.
    pub reserved0: u16,
    /// Reserved, 0.
    pub reserved1: u32,
    /// Dependency signals (0 = none).
    pub dep_signal: [hsa_signal_t; 5],
    /// Reserved, 0.
    pub reserved2: u64,
    /// Completion signal.
    pub completion_signal: hsa_signal_t,
}

/// `hsa_barrier_or_packet_t`.
pub type hsa_barrier_or_packet_t = hsa_barrier_and_packet_t;

/// `hsa_ext_amd_aql_pm4_packet_t`: an AMD vendor packet carrying a PM4 command. aqlprofile fills
/// `pm4_command`; the caller sets `header` and `completion_signal`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hsa_ext_amd_aql_pm4_packet_t {
    /// Packet header (vendor-specific type).
    pub header: u16,
    /// `pm4_ib_format` (1) followed by the PM4 INDIRECT_BUFFER and the `dw_count_remain` tail.
    pub pm4_command: [u16; 27],
    /// Completion signal.
    pub completion_signal: hsa_signal_t,
}

impl hsa_ext_amd_aql_pm4_packet_t {
    /// The dword at byte offset `4 + 4*i` (`i` = 0..4 is the PM4 INDIRECT_BUFFER command).
    pub fn pm4_dword(&self, i: usize) -> u32 {
        let lo = self.pm4_command[1 + 2 * i] as u32;
        let hi = self.pm4_command[2 + 2 * i] as u32;
        lo | (hi << 16)
    }

    /// Decodes the PM4 INDIRECT_BUFFER of a PM4-IB packet: `(ib address, size in dwords)`,
    /// or `None` if the packet is not a PM4-IB packet.
    pub fn indirect_buffer(&self) -> Option<(u64, u32)> {
        if self.pm4_command[0] != AMD_AQL_FORMAT_PM4_IB {
            return None;
        }
        let header = self.pm4_dword(0);
        if (header >> 30) != 3 || ((header >> 8) & 0xFF) != PM4_IT_INDIRECT_BUFFER {
            return None;
        }
        let lo = (self.pm4_dword(1) & 0xFFFF_FFFC) as u64;
        let hi = (self.pm4_dword(2) & 0xFFFF) as u64;
        Some((lo | (hi << 32), self.pm4_dword(3) & 0xFFFFF))
    }

    /// Builds a PM4-IB packet body pointing at `ib_addr` (`size_dwords` dwords); header 0.
    pub fn with_indirect_buffer(ib_addr: u64, size_dwords: u32) -> Self {
        let dwords: [u32; 4] = [
            (3 << 30) | ((PM4_INDIRECT_BUFFER_DWORDS - 2) << 16) | (PM4_IT_INDIRECT_BUFFER << 8),
            (((ib_addr >> 2) & 0x3FFF_FFFF) << 2) as u32,
            ((ib_addr >> 32) & 0xFFFF) as u32,
            (size_dwords & 0xFFFFF) | (1 << 23),
        ];
        let mut packet = Self::default();
        packet.pm4_command[0] = AMD_AQL_FORMAT_PM4_IB;
        for (i, dw) in dwords.iter().enumerate() {
            packet.pm4_command[1 + 2 * i] = (*dw & 0xFFFF) as u16;
            packet.pm4_command[2 + 2 * i] = (*dw >> 16) as u16;
        }
        // dw_count_remain at byte 20 = 10.
        packet.pm4_command[9] = 10;
        packet
    }
}

/// `amd_intercept_marker_handler`: called when a marker reaches the hardware queue;
/// `packet_id` is the hardware index of the packet that follows the marker.
pub type amd_intercept_marker_handler = Option<
    unsafe extern "C" fn(
        packet: *const amd_aql_intercept_marker_t,
        queue: *mut super::queue::hsa_queue_t,
        packet_id: u64,
    ),
>;

/// `amd_aql_intercept_marker_t` (ROCm ≥ 6.0): a vendor packet passed through an intercept
/// writer that is not sent to the hardware; its callback runs instead.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct amd_aql_intercept_marker_t {
    /// Vendor-specific packet header.
    pub header: u16,
    /// `AMD_AQL_FORMAT_INTERCEPT_MARKER`.
    pub format: u8,
    /// Reserved, 0.
    pub reserved: [u8; 5],
    /// Callback.
    pub callback: amd_intercept_marker_handler,
    /// Tool data.
    pub user_data: [u64; 6],
}

/// A raw 64-byte AQL packet slot.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct AqlPacket {
    /// The packet bytes as 16 dwords (dword 0 = header | setup << 16).
    pub dwords: [u32; 16],
}

impl Default for AqlPacket {
    fn default() -> Self {
        let mut dwords = [0; 16];
        dwords[0] = HSA_PACKET_TYPE_INVALID as u32;
        Self { dwords }
    }
}

impl AqlPacket {
    /// The 16-bit header.
    pub fn header(&self) -> u16 {
        self.dwords[0] as u16
    }

    /// The packet type.
    pub fn packet_type(&self) -> u16 {
        header_type(self.header())
    }

    /// Reinterprets the packet as `T` (any of the 64-byte packet structs).
    ///
    /// # Safety
    /// `T` must be one of the packet structs of this module (64 bytes, plain data).
    pub unsafe fn cast<T: Copy>(&self) -> T {
        debug_assert_eq!(core::mem::size_of::<T>(), 64);
        // SAFETY: the caller promises T is a 64-byte plain-data packet type; AqlPacket is 64
        // bytes and at least as aligned as any of them.
        unsafe { core::ptr::read(self as *const Self as *const T) }
    }

    /// Builds a packet from any of the 64-byte packet structs.
    pub fn from<T: Copy>(packet: &T) -> Self {
        assert_eq!(core::mem::size_of::<T>(), 64, "AQL packets are 64 bytes");
        let mut out = Self::default();
        // SAFETY: both are 64 bytes; `out` is a valid destination and `packet` a valid source.
        unsafe {
            core::ptr::copy_nonoverlapping(
                packet as *const T as *const u8,
                &mut out as *mut Self as *mut u8,
                64,
            )
        };
        out
    }

    /// The completion signal (bytes 56..64), valid for every packet type.
    pub fn completion_signal(&self) -> hsa_signal_t {
        hsa_signal_t {
            handle: self.dwords[14] as u64 | ((self.dwords[15] as u64) << 32),
        }
    }

    /// Sets the completion signal (bytes 56..64), at the same place in every packet type.
    pub fn set_completion_signal(&mut self, signal: hsa_signal_t) {
        self.dwords[14] = signal.handle as u32;
        self.dwords[15] = (signal.handle >> 32) as u32;
    }
}
