//! The HSA functions the demo calls, resolved at run time from `libhsa-runtime64.so.1`.
//! `build.rs` reads the `pub fn` lines below to build the link stub: one declaration per line.

use std::ffi::{c_char, c_void};

use crate::hsa::*;

/// `hsa_iterate_agents` callback.
pub type AgentCallback = unsafe extern "C" fn(hsa_agent_t, *mut c_void) -> hsa_status_t;
/// `hsa_amd_agent_iterate_memory_pools` callback.
pub type PoolCallback = unsafe extern "C" fn(hsa_amd_memory_pool_t, *mut c_void) -> hsa_status_t;

#[link(name = "hsa-runtime64")]
extern "C" {
    pub fn hsa_init() -> hsa_status_t;
    pub fn hsa_shut_down() -> hsa_status_t;
    pub fn hsa_iterate_agents(callback: AgentCallback, data: *mut c_void) -> hsa_status_t;
    pub fn hsa_agent_get_info(
        agent: hsa_agent_t,
        attribute: u32,
        value: *mut c_void,
    ) -> hsa_status_t;
    pub fn hsa_amd_agent_iterate_memory_pools(
        agent: hsa_agent_t,
        callback: PoolCallback,
        data: *mut c_void,
    ) -> hsa_status_t;
    pub fn hsa_amd_memory_pool_get_info(
        pool: hsa_amd_memory_pool_t,
        attribute: u32,
        value: *mut c_void,
    ) -> hsa_status_t;
    pub fn hsa_amd_memory_pool_allocate(
        pool: hsa_amd_memory_pool_t,
        size: usize,
        flags: u32,
        ptr: *mut *mut c_void,
    ) -> hsa_status_t;
    pub fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> hsa_status_t;
    pub fn hsa_amd_agents_allow_access(
        num_agents: u32,
        agents: *const hsa_agent_t,
        flags: *const u32,
        ptr: *const c_void,
    ) -> hsa_status_t;
    pub fn hsa_queue_create(
        agent: hsa_agent_t,
        size: u32,
        queue_type: u32,
        callback: *const c_void,
        data: *mut c_void,
        private_segment_size: u32,
        group_segment_size: u32,
        queue: *mut *mut hsa_queue_t,
    ) -> hsa_status_t;
    pub fn hsa_queue_destroy(queue: *mut hsa_queue_t) -> hsa_status_t;
    pub fn hsa_queue_add_write_index_scacq_screl(queue: *const hsa_queue_t, value: u64) -> u64;
    pub fn hsa_queue_load_read_index_scacquire(queue: *const hsa_queue_t) -> u64;
    pub fn hsa_signal_create(
        initial_value: i64,
        num_consumers: u32,
        consumers: *const hsa_agent_t,
        signal: *mut hsa_signal_t,
    ) -> hsa_status_t;
    pub fn hsa_signal_destroy(signal: hsa_signal_t) -> hsa_status_t;
    pub fn hsa_signal_store_screlease(signal: hsa_signal_t, value: i64);
    #[allow(dead_code)] // the demo's alone
    pub fn hsa_signal_load_scacquire(signal: hsa_signal_t) -> i64;
    pub fn hsa_signal_wait_scacquire(
        signal: hsa_signal_t,
        condition: u32,
        compare_value: i64,
        timeout_hint: u64,
        wait_state_hint: u32,
    ) -> i64;
    pub fn hsa_code_object_reader_create_from_memory(
        code_object: *const c_void,
        size: usize,
        reader: *mut hsa_code_object_reader_t,
    ) -> hsa_status_t;
    pub fn hsa_code_object_reader_destroy(reader: hsa_code_object_reader_t) -> hsa_status_t;
    pub fn hsa_executable_create_alt(
        profile: u32,
        rounding_mode: u32,
        options: *const c_char,
        executable: *mut hsa_executable_t,
    ) -> hsa_status_t;
    pub fn hsa_executable_load_agent_code_object(
        executable: hsa_executable_t,
        agent: hsa_agent_t,
        reader: hsa_code_object_reader_t,
        options: *const c_char,
        loaded: *mut hsa_loaded_code_object_t,
    ) -> hsa_status_t;
    pub fn hsa_executable_freeze(
        executable: hsa_executable_t,
        options: *const c_char,
    ) -> hsa_status_t;
    pub fn hsa_executable_destroy(executable: hsa_executable_t) -> hsa_status_t;
    pub fn hsa_executable_get_symbol_by_name(
        executable: hsa_executable_t,
        name: *const c_char,
        agent: *const hsa_agent_t,
        symbol: *mut hsa_executable_symbol_t,
    ) -> hsa_status_t;
    pub fn hsa_executable_symbol_get_info(
        symbol: hsa_executable_symbol_t,
        attribute: u32,
        value: *mut c_void,
    ) -> hsa_status_t;
    // Regions are the demo's own (the dispatch benchmark shares this list).
    #[allow(dead_code)]
    pub fn hsa_agent_iterate_regions(
        agent: hsa_agent_t,
        callback: unsafe extern "C" fn(hsa_region_t, *mut c_void) -> hsa_status_t,
        data: *mut c_void,
    ) -> hsa_status_t;
    #[allow(dead_code)]
    pub fn hsa_region_get_info(
        region: hsa_region_t,
        attribute: u32,
        value: *mut c_void,
    ) -> hsa_status_t;
    #[allow(dead_code)]
    pub fn hsa_memory_allocate(
        region: hsa_region_t,
        size: usize,
        ptr: *mut *mut c_void,
    ) -> hsa_status_t;
    #[allow(dead_code)]
    pub fn hsa_memory_free(ptr: *mut c_void) -> hsa_status_t;
    // The copies are the demo's own (the dispatch benchmark shares this list).
    #[allow(dead_code)]
    pub fn hsa_amd_memory_async_copy(
        dst: *mut c_void,
        dst_agent: hsa_agent_t,
        src: *const c_void,
        src_agent: hsa_agent_t,
        size: usize,
        num_dep_signals: u32,
        dep_signals: *const hsa_signal_t,
        completion_signal: hsa_signal_t,
    ) -> hsa_status_t;
    #[allow(dead_code)]
    pub fn hsa_amd_memory_async_copy_rect(
        dst: *const c_void,
        dst_offset: *const hsa_dim3_t,
        src: *const c_void,
        src_offset: *const hsa_dim3_t,
        range: *const hsa_dim3_t,
        copy_agent: hsa_agent_t,
        dir: u32,
        num_dep_signals: u32,
        dep_signals: *const hsa_signal_t,
        completion_signal: hsa_signal_t,
    ) -> hsa_status_t;
}
