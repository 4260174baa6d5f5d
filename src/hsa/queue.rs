//! `hsa_queue_t` and the AMD queue descriptor `amd_queue_t` that starts with it.

use super::types::{hsa_queue_type32_t, hsa_signal_t};
use core::ffi::c_void;

/// `hsa_queue_t`: the user-visible part of a queue.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_queue_t {
    /// `hsa_queue_type32_t`.
    pub type_: hsa_queue_type32_t,
    /// `hsa_queue_feature_t` bits.
    pub features: u32,
    /// The ring of `size` 64-byte packet slots.
    pub base_address: *mut c_void,
    /// Signal to store the last written packet index to.
    pub doorbell_signal: hsa_signal_t,
    /// Slots in the ring (a power of two).
    pub size: u32,
    /// Reserved.
    pub reserved1: u32,
    /// Queue id, unique in the process.
    pub id: u64,
}

/// `amd_queue_properties32_t` bit: the queue writes dispatch timestamps into completion signals.
pub const AMD_QUEUE_PROPERTIES_ENABLE_PROFILING: u32 = 1 << 3;
/// `amd_queue_properties32_t` bit: 64-bit pointers.
pub const AMD_QUEUE_PROPERTIES_IS_PTR64: u32 = 1 << 1;

/// `amd_queue_t` (256 bytes, 64-byte aligned): `hsa_queue_t` at 0, then the dispatch ids and
/// hardware state ROCr shares with the command processor. Fields the simulator does not use are
/// kept as named reserved words so the layout matches byte for byte.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct amd_queue_t {
    /// The public queue.
    pub hsa_queue: hsa_queue_t,
    /// Reserved.
    pub reserved1: [u32; 4],
    /// Write index (next free slot), at 56.
    pub write_dispatch_id: u64,
    /// Group segment aperture, high bits.
    pub group_segment_aperture_base_hi: u32,
    /// Private segment aperture, high bits.
    pub private_segment_aperture_base_hi: u32,
    /// Highest CU id.
    pub max_cu_id: u32,
    /// Highest wave id.
    pub max_wave_id: u32,
    /// Legacy doorbell bookkeeping.
    pub max_legacy_doorbell_dispatch_id_plus_1: u64,
    /// Legacy doorbell lock.
    pub legacy_doorbell_lock: u32,
    /// Reserved.
    pub reserved2: [u32; 9],
    /// Read index (next slot the packet processor consumes), at 128.
    pub read_dispatch_id: u64,
    /// Byte offset of the read index field.
    pub read_dispatch_id_field_base_byte_offset: u32,
    /// Scratch ring size register.
    pub compute_tmpring_size: u32,
    /// Scratch buffer resource descriptor.
    pub scratch_resource_descriptor: [u32; 4],
    /// Scratch backing memory.
    pub scratch_backing_memory_location: u64,
    /// Scratch backing memory size.
    pub scratch_backing_memory_byte_size: u64,
    /// Scratch bytes per lane.
    pub scratch_wave64_lane_byte_size: u32,
    /// `AMD_QUEUE_PROPERTIES_*` bits, at 180.
    pub queue_properties: u32,
    /// Reserved.
    pub reserved3: [u32; 2],
    /// Signal set when the queue becomes inactive.
    pub queue_inactive_signal: hsa_signal_t,
    /// Reserved.
    pub reserved4: [u32; 14],
}

super::packets::zeroed_default!(hsa_queue_t, amd_queue_t);
