//! aqlprofile: the legacy `hsa_ven_amd_aqlprofile_*` API (extension 0x202) and the v2
//! `aqlprofile_*` API types.

use super::packets::hsa_ext_amd_aql_pm4_packet_t;
use super::types::*;
use core::ffi::{c_char, c_void};

/// `hsa_ven_amd_aqlprofile_event_type_t`: performance counters.
pub const HSA_VEN_AMD_AQLPROFILE_EVENT_TYPE_PMC: u32 = 0;
/// Thread trace.
pub const HSA_VEN_AMD_AQLPROFILE_EVENT_TYPE_TRACE: u32 = 1;

/// `hsa_ven_amd_aqlprofile_block_name_t` (the v2 API's `aqlprofile_block_name_t` continues it).
pub type hsa_ven_amd_aqlprofile_block_name_t = u32;
/// The legacy block ids in order (`CPC` = 0 ... `GUS` = 31, `UMC` = 32, `MMEA` = 33).
pub const HSA_VEN_AMD_AQLPROFILE_BLOCK_NAMES: [&str; 34] = [
    "CPC", "CPF", "GDS", "GRBM", "GRBMSE", "SPI", "SQ", "SQCS", "SRBM", "SX", "TA", "TCA", "TCC",
    "TCP", "TD", "MCARB", "MCHUB", "MCMCBVM", "MCSEQ", "MCVML2", "MCXBAR", "ATC", "ATCL2", "GCEA",
    "RPB", "SDMA", "GL1A", "GL1C", "GL2A", "GL2C", "GCR", "GUS", "UMC", "MMEA",
];

/// `hsa_ven_amd_aqlprofile_info_type_t`: `uint32_t` command buffer size.
pub const HSA_VEN_AMD_AQLPROFILE_INFO_COMMAND_BUFFER_SIZE: u32 = 0;
/// `uint32_t` PMC output buffer size.
pub const HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA_SIZE: u32 = 1;
/// PMC data (through `info_data`).
pub const HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA: u32 = 2;
/// Trace data.
pub const HSA_VEN_AMD_AQLPROFILE_INFO_TRACE_DATA: u32 = 3;
/// `uint32_t` counter registers of the block of `events[0]`.
pub const HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_COUNTERS: u32 = 4;
/// Block id and instance count by name (`hsa_ven_amd_aqlprofile_id_query_t`).
pub const HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_ID: u32 = 5;
/// Counter enable command.
pub const HSA_VEN_AMD_AQLPROFILE_INFO_ENABLE_CMD: u32 = 6;
/// Counter disable command.
pub const HSA_VEN_AMD_AQLPROFILE_INFO_DISABLE_CMD: u32 = 7;

/// `hsa_ven_amd_aqlprofile_event_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct hsa_ven_amd_aqlprofile_event_t {
    /// Block.
    pub block_name: hsa_ven_amd_aqlprofile_block_name_t,
    /// Block instance.
    pub block_index: u32,
    /// Event select value.
    pub counter_id: u32,
}

/// `hsa_ven_amd_aqlprofile_parameter_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hsa_ven_amd_aqlprofile_parameter_t {
    /// `hsa_ven_amd_aqlprofile_parameter_name_t`.
    pub parameter_name: u32,
    /// Value.
    pub value: u32,
}

/// `hsa_ven_amd_aqlprofile_descriptor_t`: a buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_ven_amd_aqlprofile_descriptor_t {
    /// Buffer address.
    pub ptr: *mut c_void,
    /// Buffer size in bytes.
    pub size: u32,
}

/// `hsa_ven_amd_aqlprofile_profile_t` (80 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_ven_amd_aqlprofile_profile_t {
    /// GPU agent.
    pub agent: hsa_agent_t,
    /// `HSA_VEN_AMD_AQLPROFILE_EVENT_TYPE_*`.
    pub type_: u32,
    /// Events.
    pub events: *const hsa_ven_amd_aqlprofile_event_t,
    /// Number of events.
    pub event_count: u32,
    /// Parameters.
    pub parameters: *const hsa_ven_amd_aqlprofile_parameter_t,
    /// Number of parameters.
    pub parameter_count: u32,
    /// Output buffer (counter samples).
    pub output_buffer: hsa_ven_amd_aqlprofile_descriptor_t,
    /// Command buffer (PM4).
    pub command_buffer: hsa_ven_amd_aqlprofile_descriptor_t,
}

/// The `pmc_data` member of `hsa_ven_amd_aqlprofile_info_data_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hsa_ven_amd_aqlprofile_pmc_data_t {
    /// Event.
    pub event: hsa_ven_amd_aqlprofile_event_t,
    /// Value.
    pub result: u64,
}

/// The union of `hsa_ven_amd_aqlprofile_info_data_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union hsa_ven_amd_aqlprofile_info_data_u {
    /// PMC sample.
    pub pmc_data: hsa_ven_amd_aqlprofile_pmc_data_t,
    /// Trace buffer.
    pub trace_data: hsa_ven_amd_aqlprofile_descriptor_t,
}

/// `hsa_ven_amd_aqlprofile_info_data_t`: one output sample.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hsa_ven_amd_aqlprofile_info_data_t {
    /// Sample index within its event.
    pub sample_id: u32,
    /// Sample data.
    pub data: hsa_ven_amd_aqlprofile_info_data_u,
}

/// `hsa_ven_amd_aqlprofile_id_query_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_ven_amd_aqlprofile_id_query_t {
    /// Block name, e.g. `"TCC"`.
    pub name: *const c_char,
    /// Block id (out).
    pub id: u32,
    /// Instances (out).
    pub instance_count: u32,
}

/// `hsa_ven_amd_aqlprofile_data_callback_t`.
pub type hsa_ven_amd_aqlprofile_data_callback_t = Option<
    unsafe extern "C" fn(
        info_type: u32,
        info_data: *mut hsa_ven_amd_aqlprofile_info_data_t,
        callback_data: *mut c_void,
    ) -> hsa_status_t,
>;

/// `hsa_ven_amd_aqlprofile_1_00_pfn_t` (10 entries, 80 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hsa_ven_amd_aqlprofile_1_00_pfn_t {
    /// Library major version (2).
    pub hsa_ven_amd_aqlprofile_version_major: Option<unsafe extern "C" fn() -> u32>,
    /// Library minor version.
    pub hsa_ven_amd_aqlprofile_version_minor: Option<unsafe extern "C" fn() -> u32>,
    /// Last error string.
    pub hsa_ven_amd_aqlprofile_error_string:
        Option<unsafe extern "C" fn(str_: *mut *const c_char) -> hsa_status_t>,
    /// Whether an event exists on an agent.
    pub hsa_ven_amd_aqlprofile_validate_event: Option<
        unsafe extern "C" fn(
            agent: hsa_agent_t,
            event: *const hsa_ven_amd_aqlprofile_event_t,
            result: *mut bool,
        ) -> hsa_status_t,
    >,
    /// Fills the start packet (with NULL buffers: only the buffer sizes).
    pub hsa_ven_amd_aqlprofile_start: Option<
        unsafe extern "C" fn(
            profile: *mut hsa_ven_amd_aqlprofile_profile_t,
            aql_start_packet: *mut hsa_ext_amd_aql_pm4_packet_t,
        ) -> hsa_status_t,
    >,
    /// Fills the stop packet.
    pub hsa_ven_amd_aqlprofile_stop: Option<
        unsafe extern "C" fn(
            profile: *const hsa_ven_amd_aqlprofile_profile_t,
            aql_stop_packet: *mut hsa_ext_amd_aql_pm4_packet_t,
        ) -> hsa_status_t,
    >,
    /// Fills the read packet.
    pub hsa_ven_amd_aqlprofile_read: Option<
        unsafe extern "C" fn(
            profile: *const hsa_ven_amd_aqlprofile_profile_t,
            aql_read_packet: *mut hsa_ext_amd_aql_pm4_packet_t,
        ) -> hsa_status_t,
    >,
    /// gfx8 only: converts a packet to a PM4 blob.
    pub hsa_ven_amd_aqlprofile_legacy_get_pm4: Option<
        unsafe extern "C" fn(
            aql_packet: *const hsa_ext_amd_aql_pm4_packet_t,
            data: *mut c_void,
        ) -> hsa_status_t,
    >,
    /// Profile information.
    pub hsa_ven_amd_aqlprofile_get_info: Option<
        unsafe extern "C" fn(
            profile: *const hsa_ven_amd_aqlprofile_profile_t,
            attribute: u32,
            value: *mut c_void,
        ) -> hsa_status_t,
    >,
    /// Iterates output samples.
    pub hsa_ven_amd_aqlprofile_iterate_data: Option<
        unsafe extern "C" fn(
            profile: *const hsa_ven_amd_aqlprofile_profile_t,
            callback: hsa_ven_amd_aqlprofile_data_callback_t,
            data: *mut c_void,
        ) -> hsa_status_t,
    >,
}

/// `aqlprofile_handle_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct aqlprofile_handle_t {
    /// Opaque value.
    pub handle: u64,
}

/// `aqlprofile_agent_handle_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct aqlprofile_agent_handle_t {
    /// Opaque value.
    pub handle: u64,
}

/// `aqlprofile_pmc_event_flags_t`: bits 0..3 = SQ accumulation (`AQLPROFILE_ACCUMULATION_*`).
pub type aqlprofile_pmc_event_flags_t = u32;
/// Accumulation: none.
pub const AQLPROFILE_ACCUMULATION_NONE: u32 = 0;
/// Accumulation: low resolution (quad cycles).
pub const AQLPROFILE_ACCUMULATION_LO_RES: u32 = 1;
/// Accumulation: high resolution (every cycle).
pub const AQLPROFILE_ACCUMULATION_HI_RES: u32 = 2;

/// `aqlprofile_pmc_event_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct aqlprofile_pmc_event_t {
    /// Block instance.
    pub block_index: u32,
    /// Event select value.
    pub event_id: u32,
    /// Flags.
    pub flags: aqlprofile_pmc_event_flags_t,
    /// Block.
    pub block_name: hsa_ven_amd_aqlprofile_block_name_t,
}

/// `aqlprofile_agent_info_t` (ROCm 7 `aqlprofile_register_agent`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
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

/// `aqlprofile_agent_info_v1_t` (adds PCI domain and location).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aqlprofile_agent_info_v1_t {
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
    /// PCI domain.
    pub domain: u32,
    /// PCI bus/device/function.
    pub location_id: u32,
}

/// `aqlprofile_pmc_profile_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aqlprofile_pmc_profile_t {
    /// Registered agent.
    pub agent: aqlprofile_agent_handle_t,
    /// Events.
    pub events: *const aqlprofile_pmc_event_t,
    /// Number of events.
    pub event_count: u32,
}

/// `aqlprofile_pmc_aql_packets_t`: start, stop and read packets.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct aqlprofile_pmc_aql_packets_t {
    /// Resets and starts the counters.
    pub start_packet: hsa_ext_amd_aql_pm4_packet_t,
    /// Stops the counters.
    pub stop_packet: hsa_ext_amd_aql_pm4_packet_t,
    /// Copies the counters to the output buffer.
    pub read_packet: hsa_ext_amd_aql_pm4_packet_t,
}

/// `aqlprofile_buffer_desc_flags_t`: bit 0 device access, bit 1 host access, bits 2..8 memory hint.
pub type aqlprofile_buffer_desc_flags_t = u32;
/// `aqlprofile_memory_alloc_callback_t`.
pub type aqlprofile_memory_alloc_callback_t = Option<
    unsafe extern "C" fn(
        ptr: *mut *mut c_void,
        size: u64,
        flags: aqlprofile_buffer_desc_flags_t,
        userdata: *mut c_void,
    ) -> hsa_status_t,
>;
/// `aqlprofile_memory_dealloc_callback_t`.
pub type aqlprofile_memory_dealloc_callback_t =
    Option<unsafe extern "C" fn(ptr: *mut c_void, userdata: *mut c_void)>;
/// `aqlprofile_memory_copy_t`.
pub type aqlprofile_memory_copy_t = Option<
    unsafe extern "C" fn(
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        userdata: *mut c_void,
    ) -> hsa_status_t,
>;
/// `aqlprofile_pmc_data_callback_t`: one call per event and sample.
pub type aqlprofile_pmc_data_callback_t = Option<
    unsafe extern "C" fn(
        event: aqlprofile_pmc_event_t,
        counter_id: u64,
        counter_value: u64,
        userdata: *mut c_void,
    ) -> hsa_status_t,
>;

/// `aqlprofile_get_version`.
pub type aqlprofile_get_version_fn = unsafe extern "C" fn(
    major: *mut u32,
    minor: *mut u32,
    patch: *mut u32,
    npi: *mut u32,
) -> hsa_status_t;
/// `aqlprofile_register_agent`.
pub type aqlprofile_register_agent_fn = unsafe extern "C" fn(
    agent_id: *mut aqlprofile_agent_handle_t,
    agent_info: *const aqlprofile_agent_info_t,
) -> hsa_status_t;
/// `aqlprofile_get_pmc_info`.
pub type aqlprofile_get_pmc_info_fn = unsafe extern "C" fn(
    profile: *const aqlprofile_pmc_profile_t,
    attribute: u32,
    value: *mut c_void,
) -> hsa_status_t;
/// `aqlprofile_validate_pmc_event`.
pub type aqlprofile_validate_pmc_event_fn = unsafe extern "C" fn(
    agent: aqlprofile_agent_handle_t,
    event: *const aqlprofile_pmc_event_t,
    result: *mut bool,
) -> hsa_status_t;
/// `aqlprofile_pmc_create_packets`.
pub type aqlprofile_pmc_create_packets_fn = unsafe extern "C" fn(
    handle: *mut aqlprofile_handle_t,
    packets: *mut aqlprofile_pmc_aql_packets_t,
    profile: aqlprofile_pmc_profile_t,
    alloc_cb: aqlprofile_memory_alloc_callback_t,
    dealloc_cb: aqlprofile_memory_dealloc_callback_t,
    memcpy_cb: aqlprofile_memory_copy_t,
    userdata: *mut c_void,
) -> hsa_status_t;
/// `aqlprofile_pmc_delete_packets`.
pub type aqlprofile_pmc_delete_packets_fn = unsafe extern "C" fn(handle: aqlprofile_handle_t);
/// `aqlprofile_pmc_iterate_data`.
pub type aqlprofile_pmc_iterate_data_fn = unsafe extern "C" fn(
    handle: aqlprofile_handle_t,
    callback: aqlprofile_pmc_data_callback_t,
    userdata: *mut c_void,
) -> hsa_status_t;
