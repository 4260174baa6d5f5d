//! The AMD loader extension (`HSA_EXTENSION_AMD_LOADER`, 0x201): `hsa_ven_amd_loader_1_03_pfn_t`.

use super::types::*;
use core::ffi::{c_int, c_void};

/// `hsa_ven_amd_loader_loaded_code_object_info_t`: the executable.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_EXECUTABLE: u32 = 1;
/// The kind (program or agent).
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_KIND: u32 = 2;
/// The agent.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_AGENT: u32 = 3;
/// The storage type (none, memory, file).
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_TYPE: u32 = 4;
/// Storage memory base.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_BASE: u32 = 5;
/// Storage memory size.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE: u32 = 6;
/// Storage file descriptor.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_FILE: u32 = 7;
/// Load delta.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA: u32 = 8;
/// Load base.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE: u32 = 9;
/// Load size.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_SIZE: u32 = 10;
/// URI length.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH: u32 = 11;
/// URI.
pub const HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI: u32 = 12;

/// `hsa_ven_amd_loader_segment_descriptor_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hsa_ven_amd_loader_segment_descriptor_t {
    /// Agent of the segment (0 for program code objects).
    pub agent: hsa_agent_t,
    /// Executable managing the segment.
    pub executable: hsa_executable_t,
    /// Storage type of the backing code object.
    pub code_object_storage_type: u32,
    /// Base of the backing code object.
    pub code_object_storage_base: *const c_void,
    /// Size of the backing code object.
    pub code_object_storage_size: usize,
    /// Offset of the segment in the code object.
    pub code_object_storage_offset: usize,
    /// Base of the segment in memory.
    pub segment_base: *const c_void,
    /// Size of the segment.
    pub segment_size: usize,
}

super::packets::zeroed_default!(hsa_ven_amd_loader_segment_descriptor_t);

/// `hsa_ven_amd_loader_1_03_pfn_t`: the loader extension table (7 entries, 56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hsa_ven_amd_loader_1_03_pfn_t {
    /// Host address of a device address in a loaded code object.
    pub hsa_ven_amd_loader_query_host_address: Option<
        unsafe extern "C" fn(
            device_address: *const c_void,
            host_address: *mut *const c_void,
        ) -> hsa_status_t,
    >,
    /// All loaded segments.
    pub hsa_ven_amd_loader_query_segment_descriptors: Option<
        unsafe extern "C" fn(
            segment_descriptors: *mut hsa_ven_amd_loader_segment_descriptor_t,
            num_segment_descriptors: *mut usize,
        ) -> hsa_status_t,
    >,
    /// The executable containing a device address.
    pub hsa_ven_amd_loader_query_executable: Option<
        unsafe extern "C" fn(
            device_address: *const c_void,
            executable: *mut hsa_executable_t,
        ) -> hsa_status_t,
    >,
    /// Iterates the loaded code objects of an executable.
    pub hsa_ven_amd_loader_executable_iterate_loaded_code_objects: Option<
        unsafe extern "C" fn(
            executable: hsa_executable_t,
            callback: Option<
                unsafe extern "C" fn(
                    executable: hsa_executable_t,
                    loaded_code_object: hsa_loaded_code_object_t,
                    data: *mut c_void,
                ) -> hsa_status_t,
            >,
            data: *mut c_void,
        ) -> hsa_status_t,
    >,
    /// Information about a loaded code object.
    pub hsa_ven_amd_loader_loaded_code_object_get_info: Option<
        unsafe extern "C" fn(
            loaded_code_object: hsa_loaded_code_object_t,
            attribute: u32,
            value: *mut c_void,
        ) -> hsa_status_t,
    >,
    /// Creates a reader for part of a file.
    pub hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size: Option<
        unsafe extern "C" fn(
            file: c_int,
            offset: usize,
            size: usize,
            code_object_reader: *mut hsa_code_object_reader_t,
        ) -> hsa_status_t,
    >,
    /// Iterates all executables.
    pub hsa_ven_amd_loader_iterate_executables: Option<
        unsafe extern "C" fn(
            callback: Option<
                unsafe extern "C" fn(
                    executable: hsa_executable_t,
                    data: *mut c_void,
                ) -> hsa_status_t,
            >,
            data: *mut c_void,
        ) -> hsa_status_t,
    >,
}
