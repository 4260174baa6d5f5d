//! The C ABI of aqlprofile: the legacy `hsa_ven_amd_aqlprofile_*` types (HSA extension 0x202,
//! library version 2.0) and the v2 `aqlprofile_*` types.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

/// `hsa_status_t`.
pub type hsa_status_t = u32;
/// `HSA_STATUS_SUCCESS`.
pub const HSA_STATUS_SUCCESS: hsa_status_t = 0;
/// `HSA_STATUS_INFO_BREAK`: a callback asks to stop iterating.
pub const HSA_STATUS_INFO_BREAK: hsa_status_t = 1;
/// `HSA_STATUS_ERROR`.
pub const HSA_STATUS_ERROR: hsa_status_t = 0x1000;
/// `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
pub const HSA_STATUS_ERROR_INVALID_ARGUMENT: hsa_status_t = 0x1001;
/// `HSA_STATUS_ERROR_INVALID_AGENT`.
pub const HSA_STATUS_ERROR_INVALID_AGENT: hsa_status_t = 0x1004;

/// `hsa_agent_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct hsa_agent_t {
    /// Opaque handle.
    pub handle: u64,
}

/// `hsa_ext_amd_aql_pm4_packet_t`: a 64-byte AMD vendor AQL packet.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hsa_ext_amd_aql_pm4_packet_t {
    /// AQL header (the caller's).
    pub header: u16,
    /// Format and PM4 body.
    pub pm4_command: [u16; 27],
    /// Completion signal (the caller's).
    pub completion_signal: u64,
}

/// `hsa_ven_amd_aqlprofile_event_type_t`: performance counters.
pub const EVENT_TYPE_PMC: u32 = 0;

/// `hsa_ven_amd_aqlprofile_event_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct hsa_ven_amd_aqlprofile_event_t {
    /// Block-name enum value.
    pub block_name: u32,
    /// Block instance.
    pub block_index: u32,
    /// Event select number.
    pub counter_id: u32,
}

/// `hsa_ven_amd_aqlprofile_parameter_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hsa_ven_amd_aqlprofile_parameter_t {
    /// Parameter name enum value.
    pub parameter_name: u32,
    /// Value.
    pub value: u32,
}

/// `hsa_ven_amd_aqlprofile_descriptor_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hsa_ven_amd_aqlprofile_descriptor_t {
    /// Buffer.
    pub ptr: *mut c_void,
    /// Size in bytes.
    pub size: u32,
}

/// `hsa_ven_amd_aqlprofile_profile_t` (80 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hsa_ven_amd_aqlprofile_profile_t {
    /// Agent.
    pub agent: hsa_agent_t,
    /// Event type (`EVENT_TYPE_PMC`).
    pub type_: u32,
    /// Events.
    pub events: *const hsa_ven_amd_aqlprofile_event_t,
    /// Number of events.
    pub event_count: u32,
    /// Parameters.
    pub parameters: *const hsa_ven_amd_aqlprofile_parameter_t,
    /// Number of parameters.
    pub parameter_count: u32,
    /// Sample output buffer.
    pub output_buffer: hsa_ven_amd_aqlprofile_descriptor_t,
    /// Command buffer.
    pub command_buffer: hsa_ven_amd_aqlprofile_descriptor_t,
}

/// The `pmc_data` member of `hsa_ven_amd_aqlprofile_info_data_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pmc_data_t {
    /// Event.
    pub event: hsa_ven_amd_aqlprofile_event_t,
    /// Sample value.
    pub result: u64,
}

/// The union of `hsa_ven_amd_aqlprofile_info_data_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union info_data_union_t {
    /// Counter sample.
    pub pmc_data: pmc_data_t,
    /// Trace data.
    pub trace_data: hsa_ven_amd_aqlprofile_descriptor_t,
}

/// `hsa_ven_amd_aqlprofile_info_data_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hsa_ven_amd_aqlprofile_info_data_t {
    /// Sample index within the event (per XCC).
    pub sample_id: u32,
    /// Payload.
    pub u: info_data_union_t,
}

/// `hsa_ven_amd_aqlprofile_id_query_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hsa_ven_amd_aqlprofile_id_query_t {
    /// Block name.
    pub name: *const c_char,
    /// Block-name enum value (out).
    pub id: u32,
    /// Instances (out).
    pub instance_count: u32,
}

/// `hsa_ven_amd_aqlprofile_info_type_t` values.
pub mod info {
    /// Command buffer size.
    pub const COMMAND_BUFFER_SIZE: u32 = 0;
    /// Output buffer size.
    pub const PMC_DATA_SIZE: u32 = 1;
    /// One sample or the sum of an event's samples.
    pub const PMC_DATA: u32 = 2;
    /// Trace data.
    pub const TRACE_DATA: u32 = 3;
    /// Counter registers of a block.
    pub const BLOCK_COUNTERS: u32 = 4;
    /// Block id and instances by name.
    pub const BLOCK_ID: u32 = 5;
    /// Counter enable command.
    pub const ENABLE_CMD: u32 = 6;
    /// Counter disable command.
    pub const DISABLE_CMD: u32 = 7;
}

/// Legacy data callback.
pub type hsa_ven_amd_aqlprofile_data_callback_t = Option<
    unsafe extern "C" fn(u32, *mut hsa_ven_amd_aqlprofile_info_data_t, *mut c_void) -> hsa_status_t,
>;

/// `aqlprofile_handle_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct aqlprofile_handle_t {
    /// Opaque handle.
    pub handle: u64,
}

/// `aqlprofile_agent_handle_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct aqlprofile_agent_handle_t {
    /// Opaque handle.
    pub handle: u64,
}

/// `aqlprofile_agent_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aqlprofile_agent_info_t {
    /// gfx target name.
    pub agent_gfxip: *const c_char,
    /// XCCs.
    pub xcc_num: u32,
    /// Shader engines.
    pub se_num: u32,
    /// Compute units.
    pub cu_num: u32,
    /// Shader arrays per shader engine.
    pub shader_arrays_per_se: u32,
}

/// `aqlprofile_agent_version_t`: `aqlprofile_agent_info_t`.
pub const AQLPROFILE_AGENT_VERSION_V0: u32 = 1;
/// `aqlprofile_agent_version_t`: `aqlprofile_agent_info_v1_t` (adds domain and location id).
pub const AQLPROFILE_AGENT_VERSION_V1: u32 = 2;

/// `aqlprofile_pmc_event_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct aqlprofile_pmc_event_t {
    /// Block instance.
    pub block_index: u32,
    /// Event select number.
    pub event_id: u32,
    /// Flags; bits 0..3 are the SQ accumulation mode.
    pub flags: u32,
    /// Block-name enum value.
    pub block_name: u32,
}

/// `aqlprofile_pmc_profile_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aqlprofile_pmc_profile_t {
    /// Registered agent.
    pub agent: aqlprofile_agent_handle_t,
    /// Events.
    pub events: *const aqlprofile_pmc_event_t,
    /// Number of events.
    pub event_count: u32,
}

/// `aqlprofile_pmc_aql_packets_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aqlprofile_pmc_aql_packets_t {
    /// Zero and start the counters.
    pub start_packet: hsa_ext_amd_aql_pm4_packet_t,
    /// Stop the counters.
    pub stop_packet: hsa_ext_amd_aql_pm4_packet_t,
    /// Copy the counters to the output buffer.
    pub read_packet: hsa_ext_amd_aql_pm4_packet_t,
}

/// `aqlprofile_memory_hint_t`: device memory, uncached.
pub const AQLPROFILE_MEMORY_HINT_DEVICE_UNCACHED: u32 = 2;
/// `aqlprofile_memory_hint_t`: device memory, non-coherent.
pub const AQLPROFILE_MEMORY_HINT_DEVICE_NONCOHERENT: u32 = 4;

/// `aqlprofile_buffer_desc_flags_t` bits: device access, host access, memory hint.
pub fn buffer_flags(hint: u32) -> u32 {
    1 | (1 << 1) | ((hint & 0x3F) << 2)
}

/// `aqlprofile_memory_alloc_callback_t`.
pub type aqlprofile_memory_alloc_callback_t =
    Option<unsafe extern "C" fn(*mut *mut c_void, u64, u32, *mut c_void) -> hsa_status_t>;
/// `aqlprofile_memory_dealloc_callback_t`.
pub type aqlprofile_memory_dealloc_callback_t =
    Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>;
/// `aqlprofile_memory_copy_t`.
pub type aqlprofile_memory_copy_t =
    Option<unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void) -> hsa_status_t>;
/// `aqlprofile_pmc_data_callback_t`.
pub type aqlprofile_pmc_data_callback_t =
    Option<unsafe extern "C" fn(aqlprofile_pmc_event_t, u64, u64, *mut c_void) -> hsa_status_t>;
/// `aqlprofile_eventname_callback_t`.
pub type aqlprofile_eventname_callback_t =
    Option<unsafe extern "C" fn(i32, *const c_char, *mut c_void) -> hsa_status_t>;
/// `aqlprofile_coordinate_callback_t`.
pub type aqlprofile_coordinate_callback_t =
    Option<unsafe extern "C" fn(i32, i32, i32, i32, *const c_char, *mut c_void) -> hsa_status_t>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_match_the_c_headers() {
        assert_eq!(size_of::<hsa_ven_amd_aqlprofile_profile_t>(), 80);
        assert_eq!(
            offset_of!(hsa_ven_amd_aqlprofile_profile_t, output_buffer),
            48
        );
        assert_eq!(
            offset_of!(hsa_ven_amd_aqlprofile_profile_t, command_buffer),
            64
        );
        assert_eq!(size_of::<hsa_ven_amd_aqlprofile_info_data_t>(), 32);
        assert_eq!(offset_of!(hsa_ven_amd_aqlprofile_info_data_t, u), 8);
        assert_eq!(size_of::<hsa_ext_amd_aql_pm4_packet_t>(), 64);
        assert_eq!(size_of::<aqlprofile_pmc_aql_packets_t>(), 192);
        assert_eq!(size_of::<aqlprofile_pmc_event_t>(), 16);
        assert_eq!(size_of::<aqlprofile_pmc_profile_t>(), 24);
        assert_eq!(size_of::<aqlprofile_agent_info_t>(), 24);
        assert_eq!(size_of::<hsa_ven_amd_aqlprofile_id_query_t>(), 16);
    }
}
