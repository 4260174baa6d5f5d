//! The tools API tables (`hsa_api_trace.h`): the root `HsaApiTable`, `CoreApiTable` and
//! `AmdExtTable` in the ROCm 7 layout, the smaller extension tables, and the layout history
//! that tells a caller whether a table of a given size contains an entry.
//!
//! Each table is declared once through an entry list macro (`core_api_table!`,
//! `amd_ext_table!`) that hands `field = function(args) -> ret;` lines to a callback macro.
//! This module uses it to define the structs; the simulated runtime uses the same lists to
//! generate its exported trampolines, so signatures live in one place.

use super::queue::hsa_queue_t;
use super::types::*;
use core::ffi::{c_char, c_int, c_void};

/// `ApiTableVersion`: at offset 0 of every table. `minor_id` is the table size in bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApiTableVersion {
    /// Incompatible layout changes bump this.
    pub major_id: u32,
    /// Size of the table in bytes.
    pub minor_id: u32,
    /// Compatible additions bump this.
    pub step_id: u32,
    /// Reserved.
    pub reserved: u32,
}

/// Callback of `hsa_iterate_agents` and friends.
pub type hsa_agent_callback =
    Option<unsafe extern "C" fn(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t>;
/// Callback of `hsa_queue_create` for asynchronous queue errors.
pub type hsa_queue_error_callback =
    Option<unsafe extern "C" fn(status: hsa_status_t, source: *mut hsa_queue_t, data: *mut c_void)>;
/// `hsa_amd_queue_intercept_packet_writer`: submits packets to the next handler (or the
/// hardware queue); valid only inside the handler it was passed to.
pub type hsa_amd_queue_intercept_packet_writer =
    Option<unsafe extern "C" fn(pkts: *const c_void, pkt_count: u64)>;
/// `hsa_amd_queue_intercept_handler`: sees packets written to an intercept queue.
pub type hsa_amd_queue_intercept_handler = Option<
    unsafe extern "C" fn(
        pkts: *const c_void,
        pkt_count: u64,
        user_pkt_index: u64,
        data: *mut c_void,
        writer: hsa_amd_queue_intercept_packet_writer,
    ),
>;
/// `hsa_amd_runtime_queue_notifier`.
pub type hsa_amd_runtime_queue_notifier =
    Option<unsafe extern "C" fn(queue: *const hsa_queue_t, agent: hsa_agent_t, data: *mut c_void)>;
/// `hsa_amd_tool_event` (scratch event hooks of `ToolsApiTable`).
pub type hsa_amd_tool_event = Option<unsafe extern "C" fn(event: *const c_void) -> hsa_status_t>;
/// An entry whose exact signature the project does not use: six integer-class arguments, which
/// covers every such entry's register arguments so trampolines forward them unchanged.
pub type loose_fn = unsafe extern "C" fn(u64, u64, u64, u64, u64, u64) -> hsa_status_t;

/// Defines an API table struct from an entry list (callback of the entry list macros).
macro_rules! define_api_table {
    ($(#[$doc:meta])* $table:ident: $( $field:ident = $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy)]
        #[allow(clippy::unused_unit)]
        pub struct $table {
            /// Table version; `minor_id` is the table's size in bytes.
            pub version: ApiTableVersion,
            $(
                #[doc = concat!("`", stringify!($name), "`")]
                pub $field: Option<unsafe extern "C" fn($($arg: $ty),*) -> $ret>,
            )*
        }

        impl $table {
            /// Every entry: field name, function name, byte offset.
            pub const ENTRIES: &'static [(&'static str, &'static str, usize)] = &[
                $((stringify!($field), stringify!($name), core::mem::offset_of!($table, $field)),)*
            ];
        }

        impl Default for $table {
            fn default() -> Self {
                // SAFETY: a version header of integers followed by `Option<fn>` entries: all
                // zero is a valid value (no entries).
                unsafe { core::mem::zeroed() }
            }
        }
    };
}

/// Hands the `CoreApiTable` entry list (125 entries, unchanged from ROCm 5.2 to 7.x) to `$m!`.
macro_rules! core_api_table {
    ($m:ident) => { $m! {
        /// `CoreApiTable`: the HSA core API (125 entries, 1016 bytes; layout unchanged since ROCm 5.2).
        CoreApiTable:
        hsa_init_fn = hsa_init() -> hsa_status_t;
        hsa_shut_down_fn = hsa_shut_down() -> hsa_status_t;
        hsa_system_get_info_fn = hsa_system_get_info(attribute: hsa_system_info_t, value: *mut c_void) -> hsa_status_t;
        hsa_system_extension_supported_fn = hsa_system_extension_supported(extension: u16, version_major: u16, version_minor: u16, result: *mut bool) -> hsa_status_t;
        hsa_system_get_extension_table_fn = hsa_system_get_extension_table(extension: u16, version_major: u16, version_minor: u16, table: *mut c_void) -> hsa_status_t;
        hsa_iterate_agents_fn = hsa_iterate_agents(callback: hsa_agent_callback, data: *mut c_void) -> hsa_status_t;
        hsa_agent_get_info_fn = hsa_agent_get_info(agent: hsa_agent_t, attribute: hsa_agent_info_t, value: *mut c_void) -> hsa_status_t;
        hsa_queue_create_fn = hsa_queue_create(agent: hsa_agent_t, size: u32, type_: hsa_queue_type32_t, callback: hsa_queue_error_callback, data: *mut c_void, private_segment_size: u32, group_segment_size: u32, queue: *mut *mut hsa_queue_t) -> hsa_status_t;
        hsa_soft_queue_create_fn = hsa_soft_queue_create(region: hsa_region_t, size: u32, type_: hsa_queue_type32_t, features: u32, doorbell_signal: hsa_signal_t, queue: *mut *mut hsa_queue_t) -> hsa_status_t;
        hsa_queue_destroy_fn = hsa_queue_destroy(queue: *mut hsa_queue_t) -> hsa_status_t;
        hsa_queue_inactivate_fn = hsa_queue_inactivate(queue: *mut hsa_queue_t) -> hsa_status_t;
        hsa_queue_load_read_index_scacquire_fn = hsa_queue_load_read_index_scacquire(queue: *const hsa_queue_t) -> u64;
        hsa_queue_load_read_index_relaxed_fn = hsa_queue_load_read_index_relaxed(queue: *const hsa_queue_t) -> u64;
        hsa_queue_load_write_index_scacquire_fn = hsa_queue_load_write_index_scacquire(queue: *const hsa_queue_t) -> u64;
        hsa_queue_load_write_index_relaxed_fn = hsa_queue_load_write_index_relaxed(queue: *const hsa_queue_t) -> u64;
        hsa_queue_store_write_index_relaxed_fn = hsa_queue_store_write_index_relaxed(queue: *const hsa_queue_t, value: u64) -> ();
        hsa_queue_store_write_index_screlease_fn = hsa_queue_store_write_index_screlease(queue: *const hsa_queue_t, value: u64) -> ();
        hsa_queue_cas_write_index_scacq_screl_fn = hsa_queue_cas_write_index_scacq_screl(queue: *const hsa_queue_t, expected: u64, value: u64) -> u64;
        hsa_queue_cas_write_index_scacquire_fn = hsa_queue_cas_write_index_scacquire(queue: *const hsa_queue_t, expected: u64, value: u64) -> u64;
        hsa_queue_cas_write_index_relaxed_fn = hsa_queue_cas_write_index_relaxed(queue: *const hsa_queue_t, expected: u64, value: u64) -> u64;
        hsa_queue_cas_write_index_screlease_fn = hsa_queue_cas_write_index_screlease(queue: *const hsa_queue_t, expected: u64, value: u64) -> u64;
        hsa_queue_add_write_index_scacq_screl_fn = hsa_queue_add_write_index_scacq_screl(queue: *const hsa_queue_t, value: u64) -> u64;
        hsa_queue_add_write_index_scacquire_fn = hsa_queue_add_write_index_scacquire(queue: *const hsa_queue_t, value: u64) -> u64;
        hsa_queue_add_write_index_relaxed_fn = hsa_queue_add_write_index_relaxed(queue: *const hsa_queue_t, value: u64) -> u64;
        hsa_queue_add_write_index_screlease_fn = hsa_queue_add_write_index_screlease(queue: *const hsa_queue_t, value: u64) -> u64;
        hsa_queue_store_read_index_relaxed_fn = hsa_queue_store_read_index_relaxed(queue: *const hsa_queue_t, value: u64) -> ();
        hsa_queue_store_read_index_screlease_fn = hsa_queue_store_read_index_screlease(queue: *const hsa_queue_t, value: u64) -> ();
        hsa_agent_iterate_regions_fn = hsa_agent_iterate_regions(agent: hsa_agent_t, callback: Option<unsafe extern "C" fn(region: hsa_region_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_region_get_info_fn = hsa_region_get_info(region: hsa_region_t, attribute: hsa_region_info_t, value: *mut c_void) -> hsa_status_t;
        hsa_agent_get_exception_policies_fn = hsa_agent_get_exception_policies(agent: hsa_agent_t, profile: hsa_profile_t, mask: *mut u16) -> hsa_status_t;
        hsa_agent_extension_supported_fn = hsa_agent_extension_supported(extension: u16, agent: hsa_agent_t, version_major: u16, version_minor: u16, result: *mut bool) -> hsa_status_t;
        hsa_memory_register_fn = hsa_memory_register(ptr: *mut c_void, size: usize) -> hsa_status_t;
        hsa_memory_deregister_fn = hsa_memory_deregister(ptr: *mut c_void, size: usize) -> hsa_status_t;
        hsa_memory_allocate_fn = hsa_memory_allocate(region: hsa_region_t, size: usize, ptr: *mut *mut c_void) -> hsa_status_t;
        hsa_memory_free_fn = hsa_memory_free(ptr: *mut c_void) -> hsa_status_t;
        hsa_memory_copy_fn = hsa_memory_copy(dst: *mut c_void, src: *const c_void, size: usize) -> hsa_status_t;
        hsa_memory_assign_agent_fn = hsa_memory_assign_agent(ptr: *mut c_void, agent: hsa_agent_t, access: u32) -> hsa_status_t;
        hsa_signal_create_fn = hsa_signal_create(initial_value: hsa_signal_value_t, num_consumers: u32, consumers: *const hsa_agent_t, signal: *mut hsa_signal_t) -> hsa_status_t;
        hsa_signal_destroy_fn = hsa_signal_destroy(signal: hsa_signal_t) -> hsa_status_t;
        hsa_signal_load_relaxed_fn = hsa_signal_load_relaxed(signal: hsa_signal_t) -> hsa_signal_value_t;
        hsa_signal_load_scacquire_fn = hsa_signal_load_scacquire(signal: hsa_signal_t) -> hsa_signal_value_t;
        hsa_signal_store_relaxed_fn = hsa_signal_store_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_store_screlease_fn = hsa_signal_store_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_wait_relaxed_fn = hsa_signal_wait_relaxed(signal: hsa_signal_t, condition: hsa_signal_condition_t, compare_value: hsa_signal_value_t, timeout_hint: u64, wait_state_hint: hsa_wait_state_t) -> hsa_signal_value_t;
        hsa_signal_wait_scacquire_fn = hsa_signal_wait_scacquire(signal: hsa_signal_t, condition: hsa_signal_condition_t, compare_value: hsa_signal_value_t, timeout_hint: u64, wait_state_hint: hsa_wait_state_t) -> hsa_signal_value_t;
        hsa_signal_and_relaxed_fn = hsa_signal_and_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_and_scacquire_fn = hsa_signal_and_scacquire(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_and_screlease_fn = hsa_signal_and_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_and_scacq_screl_fn = hsa_signal_and_scacq_screl(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_or_relaxed_fn = hsa_signal_or_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_or_scacquire_fn = hsa_signal_or_scacquire(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_or_screlease_fn = hsa_signal_or_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_or_scacq_screl_fn = hsa_signal_or_scacq_screl(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_xor_relaxed_fn = hsa_signal_xor_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_xor_scacquire_fn = hsa_signal_xor_scacquire(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_xor_screlease_fn = hsa_signal_xor_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_xor_scacq_screl_fn = hsa_signal_xor_scacq_screl(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_exchange_relaxed_fn = hsa_signal_exchange_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_exchange_scacquire_fn = hsa_signal_exchange_scacquire(signal: hsa_signal_t, value: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_exchange_screlease_fn = hsa_signal_exchange_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_exchange_scacq_screl_fn = hsa_signal_exchange_scacq_screl(signal: hsa_signal_t, value: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_add_relaxed_fn = hsa_signal_add_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_add_scacquire_fn = hsa_signal_add_scacquire(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_add_screlease_fn = hsa_signal_add_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_add_scacq_screl_fn = hsa_signal_add_scacq_screl(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_subtract_relaxed_fn = hsa_signal_subtract_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_subtract_scacquire_fn = hsa_signal_subtract_scacquire(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_subtract_screlease_fn = hsa_signal_subtract_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_subtract_scacq_screl_fn = hsa_signal_subtract_scacq_screl(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_cas_relaxed_fn = hsa_signal_cas_relaxed(signal: hsa_signal_t, expected: hsa_signal_value_t, value: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_cas_scacquire_fn = hsa_signal_cas_scacquire(signal: hsa_signal_t, expected: hsa_signal_value_t, value: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_cas_screlease_fn = hsa_signal_cas_screlease(signal: hsa_signal_t, expected: hsa_signal_value_t, value: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_cas_scacq_screl_fn = hsa_signal_cas_scacq_screl(signal: hsa_signal_t, expected: hsa_signal_value_t, value: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_isa_from_name_fn = hsa_isa_from_name(name: *const c_char, isa: *mut hsa_isa_t) -> hsa_status_t;
        hsa_isa_get_info_fn = hsa_isa_get_info(isa: hsa_isa_t, attribute: hsa_isa_info_t, index: u32, value: *mut c_void) -> hsa_status_t;
        hsa_isa_compatible_fn = hsa_isa_compatible(code_object_isa: hsa_isa_t, agent_isa: hsa_isa_t, result: *mut bool) -> hsa_status_t;
        hsa_code_object_serialize_fn = hsa_code_object_serialize(code_object: hsa_code_object_t, alloc_callback: Option<unsafe extern "C" fn(size: usize, data: hsa_callback_data_t, address: *mut *mut c_void) -> hsa_status_t>, callback_data: hsa_callback_data_t, options: *const c_char, serialized_code_object: *mut *mut c_void, serialized_code_object_size: *mut usize) -> hsa_status_t;
        hsa_code_object_deserialize_fn = hsa_code_object_deserialize(serialized_code_object: *mut c_void, serialized_code_object_size: usize, options: *const c_char, code_object: *mut hsa_code_object_t) -> hsa_status_t;
        hsa_code_object_destroy_fn = hsa_code_object_destroy(code_object: hsa_code_object_t) -> hsa_status_t;
        hsa_code_object_get_info_fn = hsa_code_object_get_info(code_object: hsa_code_object_t, attribute: u32, value: *mut c_void) -> hsa_status_t;
        hsa_code_object_get_symbol_fn = hsa_code_object_get_symbol(code_object: hsa_code_object_t, symbol_name: *const c_char, symbol: *mut hsa_code_symbol_t) -> hsa_status_t;
        hsa_code_symbol_get_info_fn = hsa_code_symbol_get_info(code_symbol: hsa_code_symbol_t, attribute: u32, value: *mut c_void) -> hsa_status_t;
        hsa_code_object_iterate_symbols_fn = hsa_code_object_iterate_symbols(code_object: hsa_code_object_t, callback: Option<unsafe extern "C" fn(code_object: hsa_code_object_t, symbol: hsa_code_symbol_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_executable_create_fn = hsa_executable_create(profile: hsa_profile_t, executable_state: u32, options: *const c_char, executable: *mut hsa_executable_t) -> hsa_status_t;
        hsa_executable_destroy_fn = hsa_executable_destroy(executable: hsa_executable_t) -> hsa_status_t;
        hsa_executable_load_code_object_fn = hsa_executable_load_code_object(executable: hsa_executable_t, agent: hsa_agent_t, code_object: hsa_code_object_t, options: *const c_char) -> hsa_status_t;
        hsa_executable_freeze_fn = hsa_executable_freeze(executable: hsa_executable_t, options: *const c_char) -> hsa_status_t;
        hsa_executable_get_info_fn = hsa_executable_get_info(executable: hsa_executable_t, attribute: u32, value: *mut c_void) -> hsa_status_t;
        hsa_executable_global_variable_define_fn = hsa_executable_global_variable_define(executable: hsa_executable_t, variable_name: *const c_char, address: *mut c_void) -> hsa_status_t;
        hsa_executable_agent_global_variable_define_fn = hsa_executable_agent_global_variable_define(executable: hsa_executable_t, agent: hsa_agent_t, variable_name: *const c_char, address: *mut c_void) -> hsa_status_t;
        hsa_executable_readonly_variable_define_fn = hsa_executable_readonly_variable_define(executable: hsa_executable_t, agent: hsa_agent_t, variable_name: *const c_char, address: *mut c_void) -> hsa_status_t;
        hsa_executable_validate_fn = hsa_executable_validate(executable: hsa_executable_t, result: *mut u32) -> hsa_status_t;
        hsa_executable_get_symbol_fn = hsa_executable_get_symbol(executable: hsa_executable_t, module_name: *const c_char, symbol_name: *const c_char, agent: hsa_agent_t, call_convention: i32, symbol: *mut hsa_executable_symbol_t) -> hsa_status_t;
        hsa_executable_symbol_get_info_fn = hsa_executable_symbol_get_info(executable_symbol: hsa_executable_symbol_t, attribute: hsa_executable_symbol_info_t, value: *mut c_void) -> hsa_status_t;
        hsa_executable_iterate_symbols_fn = hsa_executable_iterate_symbols(executable: hsa_executable_t, callback: Option<unsafe extern "C" fn(exec: hsa_executable_t, symbol: hsa_executable_symbol_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_status_string_fn = hsa_status_string(status: hsa_status_t, status_string: *mut *const c_char) -> hsa_status_t;
        hsa_extension_get_name_fn = hsa_extension_get_name(extension: u16, name: *mut *const c_char) -> hsa_status_t;
        hsa_system_major_extension_supported_fn = hsa_system_major_extension_supported(extension: u16, version_major: u16, version_minor: *mut u16, result: *mut bool) -> hsa_status_t;
        hsa_system_get_major_extension_table_fn = hsa_system_get_major_extension_table(extension: u16, version_major: u16, table_length: usize, table: *mut c_void) -> hsa_status_t;
        hsa_agent_major_extension_supported_fn = hsa_agent_major_extension_supported(extension: u16, agent: hsa_agent_t, version_major: u16, version_minor: *mut u16, result: *mut bool) -> hsa_status_t;
        hsa_cache_get_info_fn = hsa_cache_get_info(cache: hsa_cache_t, attribute: u32, value: *mut c_void) -> hsa_status_t;
        hsa_agent_iterate_caches_fn = hsa_agent_iterate_caches(agent: hsa_agent_t, callback: Option<unsafe extern "C" fn(cache: hsa_cache_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_signal_silent_store_relaxed_fn = hsa_signal_silent_store_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_silent_store_screlease_fn = hsa_signal_silent_store_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) -> ();
        hsa_signal_group_create_fn = hsa_signal_group_create(num_signals: u32, signals: *const hsa_signal_t, num_consumers: u32, consumers: *const hsa_agent_t, signal_group: *mut hsa_signal_group_t) -> hsa_status_t;
        hsa_signal_group_destroy_fn = hsa_signal_group_destroy(signal_group: hsa_signal_group_t) -> hsa_status_t;
        hsa_signal_group_wait_any_scacquire_fn = hsa_signal_group_wait_any_scacquire(signal_group: hsa_signal_group_t, conditions: *const hsa_signal_condition_t, compare_values: *const hsa_signal_value_t, wait_state_hint: hsa_wait_state_t, signal: *mut hsa_signal_t, value: *mut hsa_signal_value_t) -> hsa_status_t;
        hsa_signal_group_wait_any_relaxed_fn = hsa_signal_group_wait_any_relaxed(signal_group: hsa_signal_group_t, conditions: *const hsa_signal_condition_t, compare_values: *const hsa_signal_value_t, wait_state_hint: hsa_wait_state_t, signal: *mut hsa_signal_t, value: *mut hsa_signal_value_t) -> hsa_status_t;
        hsa_agent_iterate_isas_fn = hsa_agent_iterate_isas(agent: hsa_agent_t, callback: Option<unsafe extern "C" fn(isa: hsa_isa_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_isa_get_info_alt_fn = hsa_isa_get_info_alt(isa: hsa_isa_t, attribute: hsa_isa_info_t, value: *mut c_void) -> hsa_status_t;
        hsa_isa_get_exception_policies_fn = hsa_isa_get_exception_policies(isa: hsa_isa_t, profile: hsa_profile_t, mask: *mut u16) -> hsa_status_t;
        hsa_isa_get_round_method_fn = hsa_isa_get_round_method(isa: hsa_isa_t, fp_type: u32, flush_mode: u32, round_method: *mut u32) -> hsa_status_t;
        hsa_wavefront_get_info_fn = hsa_wavefront_get_info(wavefront: hsa_wavefront_t, attribute: u32, value: *mut c_void) -> hsa_status_t;
        hsa_isa_iterate_wavefronts_fn = hsa_isa_iterate_wavefronts(isa: hsa_isa_t, callback: Option<unsafe extern "C" fn(wavefront: hsa_wavefront_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_code_object_get_symbol_from_name_fn = hsa_code_object_get_symbol_from_name(code_object: hsa_code_object_t, module_name: *const c_char, symbol_name: *const c_char, symbol: *mut hsa_code_symbol_t) -> hsa_status_t;
        hsa_code_object_reader_create_from_file_fn = hsa_code_object_reader_create_from_file(file: c_int, code_object_reader: *mut hsa_code_object_reader_t) -> hsa_status_t;
        hsa_code_object_reader_create_from_memory_fn = hsa_code_object_reader_create_from_memory(code_object: *const c_void, size: usize, code_object_reader: *mut hsa_code_object_reader_t) -> hsa_status_t;
        hsa_code_object_reader_destroy_fn = hsa_code_object_reader_destroy(code_object_reader: hsa_code_object_reader_t) -> hsa_status_t;
        hsa_executable_create_alt_fn = hsa_executable_create_alt(profile: hsa_profile_t, default_float_rounding_mode: hsa_default_float_rounding_mode_t, options: *const c_char, executable: *mut hsa_executable_t) -> hsa_status_t;
        hsa_executable_load_program_code_object_fn = hsa_executable_load_program_code_object(executable: hsa_executable_t, code_object_reader: hsa_code_object_reader_t, options: *const c_char, loaded_code_object: *mut hsa_loaded_code_object_t) -> hsa_status_t;
        hsa_executable_load_agent_code_object_fn = hsa_executable_load_agent_code_object(executable: hsa_executable_t, agent: hsa_agent_t, code_object_reader: hsa_code_object_reader_t, options: *const c_char, loaded_code_object: *mut hsa_loaded_code_object_t) -> hsa_status_t;
        hsa_executable_validate_alt_fn = hsa_executable_validate_alt(executable: hsa_executable_t, options: *const c_char, result: *mut u32) -> hsa_status_t;
        hsa_executable_get_symbol_by_name_fn = hsa_executable_get_symbol_by_name(executable: hsa_executable_t, symbol_name: *const c_char, agent: *const hsa_agent_t, symbol: *mut hsa_executable_symbol_t) -> hsa_status_t;
        hsa_executable_iterate_agent_symbols_fn = hsa_executable_iterate_agent_symbols(executable: hsa_executable_t, agent: hsa_agent_t, callback: Option<unsafe extern "C" fn(exec: hsa_executable_t, agent: hsa_agent_t, symbol: hsa_executable_symbol_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_executable_iterate_program_symbols_fn = hsa_executable_iterate_program_symbols(executable: hsa_executable_t, callback: Option<unsafe extern "C" fn(exec: hsa_executable_t, symbol: hsa_executable_symbol_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
    } };
}
#[allow(unused_imports)]
pub(crate) use core_api_table;

/// Hands the `AmdExtTable` entry list in the ROCm 7 layout (86 entries, 704 bytes at step 8)
/// to `$m!`. Entries the project does not call are typed [`loose_fn`].
macro_rules! amd_ext_table {
    ($m:ident) => { $m! {
        /// `AmdExtTable` in the ROCm 7 layout (ROCm ≥ 5.6 offsets). Use [`AmdExtTable::offset_in`]
        /// before touching an entry of a table the runtime handed over.
        AmdExtTable:
        hsa_amd_coherency_get_type_fn = hsa_amd_coherency_get_type(agent: hsa_agent_t, type_: *mut u32) -> hsa_status_t;
        hsa_amd_coherency_set_type_fn = hsa_amd_coherency_set_type(agent: hsa_agent_t, type_: u32) -> hsa_status_t;
        hsa_amd_profiling_set_profiler_enabled_fn = hsa_amd_profiling_set_profiler_enabled(queue: *mut hsa_queue_t, enable: c_int) -> hsa_status_t;
        hsa_amd_profiling_async_copy_enable_fn = hsa_amd_profiling_async_copy_enable(enable: bool) -> hsa_status_t;
        hsa_amd_profiling_get_dispatch_time_fn = hsa_amd_profiling_get_dispatch_time(agent: hsa_agent_t, signal: hsa_signal_t, time: *mut hsa_amd_profiling_dispatch_time_t) -> hsa_status_t;
        hsa_amd_profiling_get_async_copy_time_fn = hsa_amd_profiling_get_async_copy_time(signal: hsa_signal_t, time: *mut hsa_amd_profiling_async_copy_time_t) -> hsa_status_t;
        hsa_amd_profiling_convert_tick_to_system_domain_fn = hsa_amd_profiling_convert_tick_to_system_domain(agent: hsa_agent_t, agent_tick: u64, system_tick: *mut u64) -> hsa_status_t;
        hsa_amd_signal_async_handler_fn = hsa_amd_signal_async_handler(signal: hsa_signal_t, cond: hsa_signal_condition_t, value: hsa_signal_value_t, handler: hsa_amd_signal_handler, arg: *mut c_void) -> hsa_status_t;
        hsa_amd_async_function_fn = hsa_amd_async_function(callback: Option<unsafe extern "C" fn(arg: *mut c_void)>, arg: *mut c_void) -> hsa_status_t;
        hsa_amd_signal_wait_any_fn = hsa_amd_signal_wait_any(signal_count: u32, signals: *mut hsa_signal_t, conds: *mut hsa_signal_condition_t, values: *mut hsa_signal_value_t, timeout_hint: u64, wait_hint: hsa_wait_state_t, satisfying_value: *mut hsa_signal_value_t) -> u32;
        hsa_amd_queue_cu_set_mask_fn = hsa_amd_queue_cu_set_mask(queue: *const hsa_queue_t, num_cu_mask_count: u32, cu_mask: *const u32) -> hsa_status_t;
        hsa_amd_memory_pool_get_info_fn = hsa_amd_memory_pool_get_info(memory_pool: hsa_amd_memory_pool_t, attribute: hsa_amd_memory_pool_info_t, value: *mut c_void) -> hsa_status_t;
        hsa_amd_agent_iterate_memory_pools_fn = hsa_amd_agent_iterate_memory_pools(agent: hsa_agent_t, callback: Option<unsafe extern "C" fn(memory_pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_amd_memory_pool_allocate_fn = hsa_amd_memory_pool_allocate(memory_pool: hsa_amd_memory_pool_t, size: usize, flags: u32, ptr: *mut *mut c_void) -> hsa_status_t;
        hsa_amd_memory_pool_free_fn = hsa_amd_memory_pool_free(ptr: *mut c_void) -> hsa_status_t;
        hsa_amd_memory_async_copy_fn = hsa_amd_memory_async_copy(dst: *mut c_void, dst_agent: hsa_agent_t, src: *const c_void, src_agent: hsa_agent_t, size: usize, num_dep_signals: u32, dep_signals: *const hsa_signal_t, completion_signal: hsa_signal_t) -> hsa_status_t;
        hsa_amd_memory_async_copy_on_engine_fn = hsa_amd_memory_async_copy_on_engine(dst: *mut c_void, dst_agent: hsa_agent_t, src: *const c_void, src_agent: hsa_agent_t, size: usize, num_dep_signals: u32, dep_signals: *const hsa_signal_t, completion_signal: hsa_signal_t, engine_id: u32, force_copy_on_sdma: bool) -> hsa_status_t;
        hsa_amd_memory_copy_engine_status_fn = hsa_amd_memory_copy_engine_status(dst_agent: hsa_agent_t, src_agent: hsa_agent_t, engine_ids_mask: *mut u32) -> hsa_status_t;
        hsa_amd_agent_memory_pool_get_info_fn = hsa_amd_agent_memory_pool_get_info(agent: hsa_agent_t, memory_pool: hsa_amd_memory_pool_t, attribute: hsa_amd_agent_memory_pool_info_t, value: *mut c_void) -> hsa_status_t;
        hsa_amd_agents_allow_access_fn = hsa_amd_agents_allow_access(num_agents: u32, agents: *const hsa_agent_t, flags: *const u32, ptr: *const c_void) -> hsa_status_t;
        hsa_amd_memory_pool_can_migrate_fn = hsa_amd_memory_pool_can_migrate(src_memory_pool: hsa_amd_memory_pool_t, dst_memory_pool: hsa_amd_memory_pool_t, result: *mut bool) -> hsa_status_t;
        hsa_amd_memory_migrate_fn = hsa_amd_memory_migrate(ptr: *const c_void, memory_pool: hsa_amd_memory_pool_t, flags: u32) -> hsa_status_t;
        hsa_amd_memory_lock_fn = hsa_amd_memory_lock(host_ptr: *mut c_void, size: usize, agents: *mut hsa_agent_t, num_agent: c_int, agent_ptr: *mut *mut c_void) -> hsa_status_t;
        hsa_amd_memory_unlock_fn = hsa_amd_memory_unlock(host_ptr: *mut c_void) -> hsa_status_t;
        hsa_amd_memory_fill_fn = hsa_amd_memory_fill(ptr: *mut c_void, value: u32, count: usize) -> hsa_status_t;
        hsa_amd_interop_map_buffer_fn = hsa_amd_interop_map_buffer(num_agents: u32, agents: *mut hsa_agent_t, interop_handle: c_int, flags: u32, size: *mut usize, ptr: *mut *mut c_void, metadata_size: *mut usize, metadata: *mut *const c_void) -> hsa_status_t;
        hsa_amd_interop_unmap_buffer_fn = hsa_amd_interop_unmap_buffer(ptr: *mut c_void) -> hsa_status_t;
        hsa_amd_image_create_fn = hsa_amd_image_create(agent: hsa_agent_t, image_descriptor: *const c_void, image_layout: *const c_void, image_data: *const c_void, access_permission: u32, image: *mut hsa_ext_image_t) -> hsa_status_t;
        hsa_amd_pointer_info_fn = hsa_amd_pointer_info(ptr: *const c_void, info: *mut hsa_amd_pointer_info_t, alloc: Option<unsafe extern "C" fn(size: usize) -> *mut c_void>, num_agents_accessible: *mut u32, accessible: *mut *mut hsa_agent_t) -> hsa_status_t;
        hsa_amd_pointer_info_set_userdata_fn = hsa_amd_pointer_info_set_userdata(ptr: *const c_void, userdata: *mut c_void) -> hsa_status_t;
        hsa_amd_ipc_memory_create_fn = hsa_amd_ipc_memory_create(ptr: *mut c_void, len: usize, handle: *mut c_void) -> hsa_status_t;
        hsa_amd_ipc_memory_attach_fn = hsa_amd_ipc_memory_attach(handle: *const c_void, len: usize, num_agents: u32, mapping_agents: *const hsa_agent_t, mapped_ptr: *mut *mut c_void) -> hsa_status_t;
        hsa_amd_ipc_memory_detach_fn = hsa_amd_ipc_memory_detach(mapped_ptr: *mut c_void) -> hsa_status_t;
        hsa_amd_signal_create_fn = hsa_amd_signal_create(initial_value: hsa_signal_value_t, num_consumers: u32, consumers: *const hsa_agent_t, attributes: u64, signal: *mut hsa_signal_t) -> hsa_status_t;
        hsa_amd_ipc_signal_create_fn = hsa_amd_ipc_signal_create(signal: hsa_signal_t, handle: *mut c_void) -> hsa_status_t;
        hsa_amd_ipc_signal_attach_fn = hsa_amd_ipc_signal_attach(handle: *const c_void, signal: *mut hsa_signal_t) -> hsa_status_t;
        hsa_amd_register_system_event_handler_fn = hsa_amd_register_system_event_handler(callback: Option<unsafe extern "C" fn(event: *const c_void, data: *mut c_void) -> hsa_status_t>, data: *mut c_void) -> hsa_status_t;
        hsa_amd_queue_intercept_create_fn = hsa_amd_queue_intercept_create(agent_handle: hsa_agent_t, size: u32, type_: hsa_queue_type32_t, callback: hsa_queue_error_callback, data: *mut c_void, private_segment_size: u32, group_segment_size: u32, queue: *mut *mut hsa_queue_t) -> hsa_status_t;
        hsa_amd_queue_intercept_register_fn = hsa_amd_queue_intercept_register(queue: *mut hsa_queue_t, callback: hsa_amd_queue_intercept_handler, user_data: *mut c_void) -> hsa_status_t;
        hsa_amd_queue_set_priority_fn = hsa_amd_queue_set_priority(queue: *mut hsa_queue_t, priority: u32) -> hsa_status_t;
        hsa_amd_memory_async_copy_rect_fn = hsa_amd_memory_async_copy_rect(dst: *const c_void, dst_offset: *const hsa_dim3_t, src: *const c_void, src_offset: *const hsa_dim3_t, range: *const hsa_dim3_t, copy_agent: hsa_agent_t, dir: u32, num_dep_signals: u32, dep_signals: *const hsa_signal_t, completion_signal: hsa_signal_t) -> hsa_status_t;
        hsa_amd_runtime_queue_create_register_fn = hsa_amd_runtime_queue_create_register(callback: hsa_amd_runtime_queue_notifier, user_data: *mut c_void) -> hsa_status_t;
        hsa_amd_memory_lock_to_pool_fn = hsa_amd_memory_lock_to_pool(host_ptr: *mut c_void, size: usize, agents: *mut hsa_agent_t, num_agent: c_int, pool: hsa_amd_memory_pool_t, flags: u32, agent_ptr: *mut *mut c_void) -> hsa_status_t;
        hsa_amd_register_deallocation_callback_fn = hsa_amd_register_deallocation_callback(ptr: *mut c_void, callback: Option<unsafe extern "C" fn(ptr: *mut c_void, user_data: *mut c_void)>, user_data: *mut c_void) -> hsa_status_t;
        hsa_amd_deregister_deallocation_callback_fn = hsa_amd_deregister_deallocation_callback(ptr: *mut c_void, callback: Option<unsafe extern "C" fn(ptr: *mut c_void, user_data: *mut c_void)>) -> hsa_status_t;
        hsa_amd_signal_value_pointer_fn = hsa_amd_signal_value_pointer(signal: hsa_signal_t, value_ptr: *mut *mut hsa_signal_value_t) -> hsa_status_t;
        hsa_amd_svm_attributes_set_fn = hsa_amd_svm_attributes_set(ptr: *mut c_void, size: usize, attribute_list: *mut c_void, attribute_count: usize) -> hsa_status_t;
        hsa_amd_svm_attributes_get_fn = hsa_amd_svm_attributes_get(ptr: *mut c_void, size: usize, attribute_list: *mut c_void, attribute_count: usize) -> hsa_status_t;
        hsa_amd_svm_prefetch_async_fn = hsa_amd_svm_prefetch_async(ptr: *mut c_void, size: usize, agent: hsa_agent_t, num_dep_signals: u32, dep_signals: *const hsa_signal_t, completion_signal: hsa_signal_t) -> hsa_status_t;
        hsa_amd_spm_acquire_fn = hsa_amd_spm_acquire(preferred_agent: hsa_agent_t) -> hsa_status_t;
        hsa_amd_spm_release_fn = hsa_amd_spm_release(preferred_agent: hsa_agent_t) -> hsa_status_t;
        hsa_amd_spm_set_dest_buffer_fn = hsa_amd_spm_set_dest_buffer(preferred_agent: hsa_agent_t, size_in_bytes: usize, timeout: *mut u32, size_copied: *mut u32, dest: *mut c_void, is_data_loss: *mut bool) -> hsa_status_t;
        hsa_amd_queue_cu_get_mask_fn = hsa_amd_queue_cu_get_mask(queue: *const hsa_queue_t, num_cu_mask_count: u32, cu_mask: *mut u32) -> hsa_status_t;
        hsa_amd_portable_export_dmabuf_fn = hsa_amd_portable_export_dmabuf(ptr: *const c_void, size: usize, dmabuf: *mut c_int, offset: *mut u64) -> hsa_status_t;
        hsa_amd_portable_close_dmabuf_fn = hsa_amd_portable_close_dmabuf(dmabuf: c_int) -> hsa_status_t;
        hsa_amd_vmem_address_reserve_fn = hsa_amd_vmem_address_reserve(va: *mut *mut c_void, size: usize, address: u64, flags: u64) -> hsa_status_t;
        hsa_amd_vmem_address_free_fn = hsa_amd_vmem_address_free(va: *mut c_void, size: usize) -> hsa_status_t;
        hsa_amd_vmem_handle_create_fn = hsa_amd_vmem_handle_create(pool: hsa_amd_memory_pool_t, size: usize, type_: u32, flags: u64, memory_handle: *mut u64) -> hsa_status_t;
        hsa_amd_vmem_handle_release_fn = hsa_amd_vmem_handle_release(memory_handle: u64) -> hsa_status_t;
        hsa_amd_vmem_map_fn = hsa_amd_vmem_map(va: *mut c_void, size: usize, in_offset: usize, memory_handle: u64, flags: u64) -> hsa_status_t;
        hsa_amd_vmem_unmap_fn = hsa_amd_vmem_unmap(va: *mut c_void, size: usize) -> hsa_status_t;
        hsa_amd_vmem_set_access_fn = hsa_amd_vmem_set_access(va: *mut c_void, size: usize, desc: *const c_void, desc_cnt: usize) -> hsa_status_t;
        hsa_amd_vmem_get_access_fn = hsa_amd_vmem_get_access(va: *mut c_void, perms: *mut u32, agent_handle: hsa_agent_t) -> hsa_status_t;
        hsa_amd_vmem_export_shareable_handle_fn = hsa_amd_vmem_export_shareable_handle(dmabuf_fd: *mut c_int, handle: u64, flags: u64) -> hsa_status_t;
        hsa_amd_vmem_import_shareable_handle_fn = hsa_amd_vmem_import_shareable_handle(dmabuf_fd: c_int, handle: *mut u64) -> hsa_status_t;
        hsa_amd_vmem_retain_alloc_handle_fn = hsa_amd_vmem_retain_alloc_handle(memory_handle: *mut u64, addr: *mut c_void) -> hsa_status_t;
        hsa_amd_vmem_get_alloc_properties_from_handle_fn = hsa_amd_vmem_get_alloc_properties_from_handle(memory_handle: u64, pool: *mut hsa_amd_memory_pool_t, type_: *mut u32) -> hsa_status_t;
        hsa_amd_agent_set_async_scratch_limit_fn = hsa_amd_agent_set_async_scratch_limit(agent: hsa_agent_t, threshold: usize) -> hsa_status_t;
        hsa_amd_queue_get_info_fn = hsa_amd_queue_get_info(queue: *mut hsa_queue_t, attribute: u32, value: *mut c_void) -> hsa_status_t;
        hsa_amd_vmem_address_reserve_align_fn = hsa_amd_vmem_address_reserve_align(va: *mut *mut c_void, size: usize, address: u64, alignment: u64, flags: u64) -> hsa_status_t;
        hsa_amd_enable_logging_fn = hsa_amd_enable_logging(flags: *mut u8, file: *mut c_void) -> hsa_status_t;
        hsa_amd_signal_wait_all_fn = hsa_amd_signal_wait_all(signal_count: u32, signals: *mut hsa_signal_t, conds: *mut hsa_signal_condition_t, values: *mut hsa_signal_value_t, timeout_hint: u64, wait_hint: hsa_wait_state_t, satisfying_values: *mut hsa_signal_value_t) -> u32;
        hsa_amd_memory_get_preferred_copy_engine_fn = hsa_amd_memory_get_preferred_copy_engine(dst_agent: hsa_agent_t, src_agent: hsa_agent_t, recommended_ids_mask: *mut u32) -> hsa_status_t;
        hsa_amd_portable_export_dmabuf_v2_fn = hsa_amd_portable_export_dmabuf_v2(ptr: *const c_void, size: usize, dmabuf: *mut c_int, offset: *mut u64, flags: u64) -> hsa_status_t;
        hsa_amd_ais_file_write_fn = hsa_amd_ais_file_write(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_ais_file_read_fn = hsa_amd_ais_file_read(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_counted_queue_acquire_fn = hsa_amd_counted_queue_acquire(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_counted_queue_release_fn = hsa_amd_counted_queue_release(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_memory_async_batch_copy_fn = hsa_amd_memory_async_batch_copy(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_agent_preload_fn = hsa_amd_agent_preload(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_svm_discard_batch_async_fn = hsa_amd_svm_discard_batch_async(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_signal_get_event_id_fn = hsa_amd_signal_get_event_id(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_sdma_queue_create_fn = hsa_amd_sdma_queue_create(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_sdma_queue_destroy_fn = hsa_amd_sdma_queue_destroy(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_sdma_queue_get_info_fn = hsa_amd_sdma_queue_get_info(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_amd_sdma_queue_ring_doorbell_fn = hsa_amd_sdma_queue_ring_doorbell(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
    } };
}
#[allow(unused_imports)]
pub(crate) use amd_ext_table;

/// Hands the `FinalizerExtTable` entry list to `$m!`.
macro_rules! finalizer_ext_table {
    ($m:ident) => { $m! {
        /// `FinalizerExtTable` (6 entries).
        FinalizerExtTable:
        hsa_ext_program_create_fn = hsa_ext_program_create(machine_model: hsa_machine_model_t, profile: hsa_profile_t, default_float_rounding_mode: hsa_default_float_rounding_mode_t, options: *const c_char, program: *mut hsa_ext_program_t) -> hsa_status_t;
        hsa_ext_program_destroy_fn = hsa_ext_program_destroy(program: hsa_ext_program_t) -> hsa_status_t;
        hsa_ext_program_add_module_fn = hsa_ext_program_add_module(program: hsa_ext_program_t, module: *mut c_void) -> hsa_status_t;
        hsa_ext_program_iterate_modules_fn = hsa_ext_program_iterate_modules(program: hsa_ext_program_t, callback: *mut c_void, data: *mut c_void) -> hsa_status_t;
        hsa_ext_program_get_info_fn = hsa_ext_program_get_info(program: hsa_ext_program_t, attribute: u32, value: *mut c_void) -> hsa_status_t;
        hsa_ext_program_finalize_fn = hsa_ext_program_finalize(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
    } };
}
#[allow(unused_imports)]
pub(crate) use finalizer_ext_table;

/// Hands the `ImageExtTable` entry list (ROCm 7: 14 entries) to `$m!`.
macro_rules! image_ext_table {
    ($m:ident) => { $m! {
        /// `ImageExtTable` (13 entries before ROCm 7, which appends `hsa_ext_sampler_create_v2`).
        ImageExtTable:
        hsa_ext_image_get_capability_fn = hsa_ext_image_get_capability(agent: hsa_agent_t, geometry: u32, image_format: *const c_void, capability_mask: *mut u32) -> hsa_status_t;
        hsa_ext_image_data_get_info_fn = hsa_ext_image_data_get_info(agent: hsa_agent_t, image_descriptor: *const c_void, access_permission: u32, image_data_info: *mut c_void) -> hsa_status_t;
        hsa_ext_image_create_fn = hsa_ext_image_create(agent: hsa_agent_t, image_descriptor: *const c_void, image_data: *const c_void, access_permission: u32, image: *mut hsa_ext_image_t) -> hsa_status_t;
        hsa_ext_image_import_fn = hsa_ext_image_import(agent: hsa_agent_t, src_memory: *const c_void, src_row_pitch: usize, src_slice_pitch: usize, dst_image: hsa_ext_image_t, image_region: *const c_void) -> hsa_status_t;
        hsa_ext_image_export_fn = hsa_ext_image_export(agent: hsa_agent_t, src_image: hsa_ext_image_t, dst_memory: *mut c_void, dst_row_pitch: usize, dst_slice_pitch: usize, image_region: *const c_void) -> hsa_status_t;
        hsa_ext_image_copy_fn = hsa_ext_image_copy(agent: hsa_agent_t, src_image: hsa_ext_image_t, src_offset: *const hsa_dim3_t, dst_image: hsa_ext_image_t, dst_offset: *const hsa_dim3_t, range: *const hsa_dim3_t) -> hsa_status_t;
        hsa_ext_image_clear_fn = hsa_ext_image_clear(agent: hsa_agent_t, image: hsa_ext_image_t, data: *const c_void, image_region: *const c_void) -> hsa_status_t;
        hsa_ext_image_destroy_fn = hsa_ext_image_destroy(agent: hsa_agent_t, image: hsa_ext_image_t) -> hsa_status_t;
        hsa_ext_sampler_create_fn = hsa_ext_sampler_create(agent: hsa_agent_t, sampler_descriptor: *const c_void, sampler: *mut hsa_ext_sampler_t) -> hsa_status_t;
        hsa_ext_sampler_destroy_fn = hsa_ext_sampler_destroy(agent: hsa_agent_t, sampler: hsa_ext_sampler_t) -> hsa_status_t;
        hsa_ext_image_get_capability_with_layout_fn = hsa_ext_image_get_capability_with_layout(agent: hsa_agent_t, geometry: u32, image_format: *const c_void, image_data_layout: u32, capability_mask: *mut u32) -> hsa_status_t;
        hsa_ext_image_data_get_info_with_layout_fn = hsa_ext_image_data_get_info_with_layout(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_ext_image_create_with_layout_fn = hsa_ext_image_create_with_layout(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t;
        hsa_ext_sampler_create_v2_fn = hsa_ext_sampler_create_v2(agent: hsa_agent_t, sampler_descriptor: *const c_void, sampler: *mut hsa_ext_sampler_t) -> hsa_status_t;
    } };
}
#[allow(unused_imports)]
pub(crate) use image_ext_table;

core_api_table!(define_api_table);
amd_ext_table!(define_api_table);
finalizer_ext_table!(define_api_table);
image_ext_table!(define_api_table);

/// `ToolsApiTable` (ROCm ≥ 6.1): scratch event hooks the runtime calls.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ToolsApiTable {
    /// Table version.
    pub version: ApiTableVersion,
    /// Scratch allocation starts.
    pub hsa_amd_tool_scratch_event_alloc_start_fn: hsa_amd_tool_event,
    /// Scratch allocation ends.
    pub hsa_amd_tool_scratch_event_alloc_end_fn: hsa_amd_tool_event,
    /// Scratch free starts.
    pub hsa_amd_tool_scratch_event_free_start_fn: hsa_amd_tool_event,
    /// Scratch free ends.
    pub hsa_amd_tool_scratch_event_free_end_fn: hsa_amd_tool_event,
    /// Asynchronous scratch reclaim starts.
    pub hsa_amd_tool_scratch_event_async_reclaim_start_fn: hsa_amd_tool_event,
    /// Asynchronous scratch reclaim ends.
    pub hsa_amd_tool_scratch_event_async_reclaim_end_fn: hsa_amd_tool_event,
}

/// `PcSamplingExtTable` (ROCm ≥ 6.2): the `hsa_ven_amd_pcs_*` entries, untyped.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PcSamplingExtTable {
    /// Table version.
    pub version: ApiTableVersion,
    /// iterate_configuration, create, create_from_id, destroy, start, stop, flush.
    pub entries: [Option<loose_fn>; 7],
}

/// `HsaApiTable`: the root table handed to `OnLoad`; the runtime's live table, patched in place.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaApiTable {
    /// Root version: major 1 (≤ 5.7), 2 (6.0), 3 (≥ 6.1); `minor_id` = 48, 56 or 64 bytes.
    pub version: ApiTableVersion,
    /// Core API, at 16.
    pub core_: *mut CoreApiTable,
    /// AMD extensions, at 24.
    pub amd_ext_: *mut AmdExtTable,
    /// Finalizer extension, at 32.
    pub finalizer_ext_: *mut FinalizerExtTable,
    /// Image extension, at 40.
    pub image_ext_: *mut ImageExtTable,
    /// Tools table, at 48 (ROCm ≥ 6.1).
    pub tools_: *mut ToolsApiTable,
    /// PC sampling table, at 56 (ROCm ≥ 6.2).
    pub pc_sampling_ext_: *mut PcSamplingExtTable,
}

super::packets::zeroed_default!(HsaApiTable);

/// One ROCm release's table versions (reference: rocm-abi.md §1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRelease {
    /// ROCm release name, e.g. `"6.3"`.
    pub rocm: &'static str,
    /// Root table major id (also OnLoad's `runtime_version`).
    pub root_major: u32,
    /// Root table step id.
    pub root_step: u32,
    /// Root table size in bytes.
    pub root_size: u32,
    /// Core table major id.
    pub core_major: u32,
    /// AMD extension table major id.
    pub amd_ext_major: u32,
    /// AMD extension table step id.
    pub amd_ext_step: u32,
    /// AMD extension table size in bytes.
    pub amd_ext_size: u32,
    /// Finalizer/image table major id.
    pub ext_major: u32,
    /// Image table step id.
    pub image_step: u32,
}

/// The table versions of the ROCm releases that changed them, oldest first.
pub const TABLE_RELEASES: &[TableRelease] = &[
    TableRelease {
        rocm: "5.2",
        root_major: 1,
        root_step: 0,
        root_size: 48,
        core_major: 1,
        amd_ext_major: 1,
        amd_ext_step: 0,
        amd_ext_size: 400,
        ext_major: 1,
        image_step: 0,
    },
    TableRelease {
        rocm: "5.5",
        root_major: 1,
        root_step: 0,
        root_size: 48,
        core_major: 1,
        amd_ext_major: 1,
        amd_ext_step: 0,
        amd_ext_size: 424,
        ext_major: 1,
        image_step: 0,
    },
    TableRelease {
        rocm: "5.7",
        root_major: 1,
        root_step: 0,
        root_size: 48,
        core_major: 1,
        amd_ext_major: 1,
        amd_ext_step: 0,
        amd_ext_size: 456,
        ext_major: 1,
        image_step: 0,
    },
    TableRelease {
        rocm: "6.0",
        root_major: 2,
        root_step: 0,
        root_size: 48,
        core_major: 2,
        amd_ext_major: 2,
        amd_ext_step: 0,
        amd_ext_size: 552,
        ext_major: 2,
        image_step: 0,
    },
    TableRelease {
        rocm: "6.1",
        root_major: 3,
        root_step: 0,
        root_size: 56,
        core_major: 2,
        amd_ext_major: 2,
        amd_ext_step: 1,
        amd_ext_size: 560,
        ext_major: 2,
        image_step: 0,
    },
    TableRelease {
        rocm: "6.2",
        root_major: 3,
        root_step: 1,
        root_size: 64,
        core_major: 2,
        amd_ext_major: 2,
        amd_ext_step: 3,
        amd_ext_size: 576,
        ext_major: 2,
        image_step: 0,
    },
    TableRelease {
        rocm: "6.3",
        root_major: 3,
        root_step: 1,
        root_size: 64,
        core_major: 2,
        amd_ext_major: 2,
        amd_ext_step: 4,
        amd_ext_size: 584,
        ext_major: 2,
        image_step: 0,
    },
    TableRelease {
        rocm: "7.0",
        root_major: 3,
        root_step: 1,
        root_size: 64,
        core_major: 2,
        amd_ext_major: 2,
        amd_ext_step: 8,
        amd_ext_size: 704,
        ext_major: 2,
        image_step: 1,
    },
];

impl TableRelease {
    /// The release named `rocm` (`"5.2"`, `"6.3"`, ...; `"5.6"` maps to `"5.7"`, `"6.4"` to
    /// `"6.3"`, and any `7.x` to `"7.0"`).
    pub fn find(rocm: &str) -> Option<&'static TableRelease> {
        let canonical = match rocm.trim() {
            "5.2" | "5.3" | "5.4" => "5.2",
            "5.6" | "5.7" => "5.7",
            "6.3" | "6.4" => "6.3",
            v if v.starts_with("7.") || v == "7" => "7.0",
            v => v,
        };
        TABLE_RELEASES.iter().find(|r| r.rocm == canonical)
    }
}

impl CoreApiTable {
    /// Whether a core table of this version holds the entry at `offset` (core never moved).
    pub fn has_entry(version: &ApiTableVersion, offset: usize) -> bool {
        version.major_id != 0 && offset + 8 <= version.minor_id as usize
    }
}

/// Index (in the ROCm 7 layout) of the first `AmdExtTable` entry that moved in ROCm 5.6.
const AMD_EXT_FIRST_SHIFTED: usize = 16;
/// Index of `hsa_amd_spm_acquire_fn` in the ROCm 7 layout (added in 5.5).
const AMD_EXT_SPM_FIRST: usize = 49;
/// Index of `hsa_amd_queue_cu_get_mask_fn` in the ROCm 7 layout.
const AMD_EXT_CU_GET_MASK: usize = 52;
/// Size of the 5.5 table, the last of the old layout with the `spm_*` entries.
const AMD_EXT_SIZE_5_5: u32 = 424;
/// Size of the 5.6/5.7 table, the first of the current layout.
const AMD_EXT_SIZE_5_6: u32 = 456;

impl AmdExtTable {
    /// Where the entry found at `offset` in this (ROCm 7 layout) struct lives in a table with
    /// version `version`, or `None` if that table does not have it. Before ROCm 5.6 (major 1
    /// and size < 456) `memory_async_copy_on_engine`/`memory_copy_engine_status` did not exist
    /// and everything after them sat 16 bytes lower; 5.2–5.4 also lack the three `spm_*`.
    pub fn offset_in(version: &ApiTableVersion, offset: usize) -> Option<usize> {
        if version.major_id == 0 || offset < 16 || !offset.is_multiple_of(8) {
            return None;
        }
        let size = version.minor_id as usize;
        let mapped = if version.major_id >= 2 || version.minor_id >= AMD_EXT_SIZE_5_6 {
            offset
        } else {
            let index = (offset - 16) / 8;
            let old_index = match index {
                i if i < AMD_EXT_FIRST_SHIFTED => i,
                16 | 17 => return None,
                i if i < AMD_EXT_SPM_FIRST => i - 2,
                i if i < AMD_EXT_CU_GET_MASK => {
                    if version.minor_id < AMD_EXT_SIZE_5_5 {
                        return None;
                    }
                    i - 2
                }
                AMD_EXT_CU_GET_MASK if version.minor_id < AMD_EXT_SIZE_5_5 => {
                    AMD_EXT_CU_GET_MASK_5_2
                }
                AMD_EXT_CU_GET_MASK => AMD_EXT_CU_GET_MASK - 2,
                _ => return None,
            };
            16 + 8 * old_index
        };
        (mapped + 8 <= size).then_some(mapped)
    }

    /// Whether a table of version `version` holds the entry at `offset` (ROCm 7 layout offset).
    pub fn has_entry(version: &ApiTableVersion, offset: usize) -> bool {
        Self::offset_in(version, offset).is_some()
    }
}

/// Index of `hsa_amd_queue_cu_get_mask_fn` in the ROCm 5.2–5.4 table (its last entry).
const AMD_EXT_CU_GET_MASK_5_2: usize = 47;

/// Offsets of the `AmdExtTable` entries tools use, in each layout (ROCm ≤ 5.5 / ≥ 5.6).
pub mod amd_ext_offsets {
    /// `hsa_amd_agents_allow_access_fn` in ROCm 5.2–5.5.
    pub const AGENTS_ALLOW_ACCESS_5_2: usize = 152;
    /// `hsa_amd_queue_intercept_create_fn` in ROCm 5.2–5.5.
    pub const QUEUE_INTERCEPT_CREATE_5_2: usize = 296;
    /// `hsa_amd_queue_intercept_register_fn` in ROCm 5.2–5.5.
    pub const QUEUE_INTERCEPT_REGISTER_5_2: usize = 304;
    /// `hsa_amd_queue_intercept_create_fn` in ROCm ≥ 5.6.
    pub const QUEUE_INTERCEPT_CREATE: usize = 312;
    /// `hsa_amd_queue_intercept_register_fn` in ROCm ≥ 5.6.
    pub const QUEUE_INTERCEPT_REGISTER: usize = 320;
}
