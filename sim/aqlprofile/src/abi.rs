//! The C ABI of aqlprofile: the project's HSA ABI layer (legacy `hsa_ven_amd_aqlprofile_*` and
//! v2 `aqlprofile_*` types) plus the few v2 definitions only the library itself needs.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

pub use crate::hsa::*;

/// `hsa_ven_amd_aqlprofile_info_type_t` values, by short name.
pub mod info {
    pub use crate::hsa::{
        HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_COUNTERS as BLOCK_COUNTERS,
        HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_ID as BLOCK_ID,
        HSA_VEN_AMD_AQLPROFILE_INFO_COMMAND_BUFFER_SIZE as COMMAND_BUFFER_SIZE,
        HSA_VEN_AMD_AQLPROFILE_INFO_ENABLE_CMD as ENABLE_CMD,
        HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA as PMC_DATA,
        HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA_SIZE as PMC_DATA_SIZE,
    };
}

/// `aqlprofile_agent_version_t`: `aqlprofile_agent_info_t`.
pub const AQLPROFILE_AGENT_VERSION_V0: u32 = 1;
/// `aqlprofile_agent_version_t`: `aqlprofile_agent_info_v1_t` (adds domain and location id).
pub const AQLPROFILE_AGENT_VERSION_V1: u32 = 2;

/// `aqlprofile_memory_hint_t`: device memory, uncached.
pub const AQLPROFILE_MEMORY_HINT_DEVICE_UNCACHED: u32 = 2;
/// `aqlprofile_memory_hint_t`: device memory, non-coherent.
pub const AQLPROFILE_MEMORY_HINT_DEVICE_NONCOHERENT: u32 = 4;

/// `aqlprofile_buffer_desc_flags_t` bits: device access, host access, memory hint.
pub fn buffer_flags(hint: u32) -> aqlprofile_buffer_desc_flags_t {
    1 | (1 << 1) | ((hint & 0x3F) << 2)
}

/// `aqlprofile_eventname_callback_t`.
pub type aqlprofile_eventname_callback_t =
    Option<unsafe extern "C" fn(i32, *const c_char, *mut c_void) -> hsa_status_t>;
/// `aqlprofile_coordinate_callback_t`.
pub type aqlprofile_coordinate_callback_t =
    Option<unsafe extern "C" fn(i32, i32, i32, i32, *const c_char, *mut c_void) -> hsa_status_t>;
