//! Checks the `#[repr(C)]` ABI of `rtl_pmc::hsa` against the ROCm headers: `tests/abi/layout.cpp`
//! prints `sizeof`/`offsetof` from Debian's ROCm 5.2 headers and every line must match Rust;
//! what moved after ROCm 5.2 is checked against offsets tabulated from newer ROCm sources.

use rtl_pmc::hsa::*;
use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

/// `(struct, member, value)` rows as the C++ program prints them (`SIZE` for sizeof).
fn rust_layout() -> BTreeMap<(String, String), usize> {
    let mut rows = BTreeMap::new();
    let mut put = |s: &str, f: &str, v: usize| {
        rows.insert((s.to_string(), f.to_string()), v);
    };
    macro_rules! size {
        ($s:ident) => {
            put(stringify!($s), "SIZE", size_of::<$s>())
        };
    }
    macro_rules! field {
        ($s:ident, $($f:ident),*) => {
            $(put(stringify!($s), stringify!($f), offset_of!($s, $f));)*
        };
        ($s:ident, $f:ident => $c:literal) => {
            put(stringify!($s), $c, offset_of!($s, $f))
        };
    }
    size!(ApiTableVersion);
    field!(ApiTableVersion, major_id, minor_id, step_id, reserved);
    put("HsaApiTable", "SIZE", offset_of!(HsaApiTable, tools_)); // the 5.2 root ends at tools_
    field!(
        HsaApiTable,
        version,
        core_,
        amd_ext_,
        finalizer_ext_,
        image_ext_
    );
    size!(hsa_queue_t);
    field!(hsa_queue_t, type_ => "type");
    field!(
        hsa_queue_t,
        features,
        base_address,
        doorbell_signal,
        size,
        reserved1,
        id
    );
    size!(amd_queue_t);
    field!(
        amd_queue_t,
        hsa_queue,
        write_dispatch_id,
        group_segment_aperture_base_hi,
        max_cu_id,
        max_legacy_doorbell_dispatch_id_plus_1,
        legacy_doorbell_lock,
        read_dispatch_id,
        read_dispatch_id_field_base_byte_offset,
        compute_tmpring_size,
        scratch_resource_descriptor,
        scratch_backing_memory_location,
        scratch_backing_memory_byte_size,
        scratch_wave64_lane_byte_size,
        queue_properties,
        queue_inactive_signal
    );
    size!(amd_signal_t);
    field!(
        amd_signal_t,
        kind,
        value,
        event_mailbox_ptr,
        event_id,
        start_ts,
        end_ts,
        queue_ptr
    );
    size!(hsa_kernel_dispatch_packet_t);
    field!(
        hsa_kernel_dispatch_packet_t,
        header,
        setup,
        workgroup_size_x,
        workgroup_size_y,
        workgroup_size_z,
        grid_size_x,
        grid_size_y,
        grid_size_z,
        private_segment_size,
        group_segment_size,
        kernel_object,
        kernarg_address,
        completion_signal
    );
    size!(hsa_agent_dispatch_packet_t);
    field!(hsa_agent_dispatch_packet_t, type_ => "type");
    field!(
        hsa_agent_dispatch_packet_t,
        header,
        return_address,
        arg,
        completion_signal
    );
    size!(hsa_barrier_and_packet_t);
    field!(
        hsa_barrier_and_packet_t,
        header,
        dep_signal,
        completion_signal
    );
    size!(hsa_barrier_or_packet_t);
    put(
        "hsa_barrier_or_packet_t",
        "header",
        offset_of!(hsa_barrier_or_packet_t, header),
    );
    put(
        "hsa_barrier_or_packet_t",
        "dep_signal",
        offset_of!(hsa_barrier_or_packet_t, dep_signal),
    );
    put(
        "hsa_barrier_or_packet_t",
        "completion_signal",
        offset_of!(hsa_barrier_or_packet_t, completion_signal),
    );
    size!(hsa_ext_amd_aql_pm4_packet_t);
    field!(
        hsa_ext_amd_aql_pm4_packet_t,
        header,
        pm4_command,
        completion_signal
    );
    size!(hsa_amd_profiling_dispatch_time_t);
    field!(hsa_amd_profiling_dispatch_time_t, start, end);
    size!(hsa_dim3_t);
    field!(hsa_dim3_t, x, y, z);
    size!(hsa_ven_amd_aqlprofile_event_t);
    field!(
        hsa_ven_amd_aqlprofile_event_t,
        block_name,
        block_index,
        counter_id
    );
    size!(hsa_ven_amd_aqlprofile_parameter_t);
    field!(hsa_ven_amd_aqlprofile_parameter_t, parameter_name, value);
    size!(hsa_ven_amd_aqlprofile_descriptor_t);
    field!(hsa_ven_amd_aqlprofile_descriptor_t, ptr, size);
    size!(hsa_ven_amd_aqlprofile_profile_t);
    field!(hsa_ven_amd_aqlprofile_profile_t, type_ => "type");
    field!(
        hsa_ven_amd_aqlprofile_profile_t,
        agent,
        events,
        event_count,
        parameters,
        parameter_count,
        output_buffer,
        command_buffer
    );
    size!(hsa_ven_amd_aqlprofile_info_data_t);
    field!(hsa_ven_amd_aqlprofile_info_data_t, sample_id);
    field!(hsa_ven_amd_aqlprofile_info_data_t, data => "pmc_data");
    size!(hsa_ven_amd_aqlprofile_id_query_t);
    field!(hsa_ven_amd_aqlprofile_id_query_t, name, id, instance_count);
    size!(hsa_ven_amd_aqlprofile_1_00_pfn_t);
    field!(
        hsa_ven_amd_aqlprofile_1_00_pfn_t,
        hsa_ven_amd_aqlprofile_version_major,
        hsa_ven_amd_aqlprofile_start,
        hsa_ven_amd_aqlprofile_stop,
        hsa_ven_amd_aqlprofile_read,
        hsa_ven_amd_aqlprofile_get_info,
        hsa_ven_amd_aqlprofile_iterate_data
    );
    size!(hsa_ven_amd_loader_1_03_pfn_t);
    field!(
        hsa_ven_amd_loader_1_03_pfn_t,
        hsa_ven_amd_loader_query_host_address,
        hsa_ven_amd_loader_query_executable,
        hsa_ven_amd_loader_executable_iterate_loaded_code_objects,
        hsa_ven_amd_loader_loaded_code_object_get_info,
        hsa_ven_amd_loader_iterate_executables
    );
    size!(hsa_ven_amd_loader_segment_descriptor_t);
    field!(
        hsa_ven_amd_loader_segment_descriptor_t,
        agent,
        executable,
        code_object_storage_type,
        code_object_storage_base,
        code_object_storage_size,
        code_object_storage_offset,
        segment_base,
        segment_size
    );
    size!(hsa_amd_pointer_info_t);
    field!(hsa_amd_pointer_info_t, type_ => "type");
    field!(
        hsa_amd_pointer_info_t,
        size,
        agentBaseAddress,
        hostBaseAddress,
        sizeInBytes,
        userData,
        agentOwner,
        global_flags
    );
    size!(CoreApiTable);
    size!(FinalizerExtTable);
    for (table, entries) in [
        ("CoreApiTable", CoreApiTable::ENTRIES),
        ("AmdExtTable", AmdExtTable::ENTRIES),
        ("FinalizerExtTable", FinalizerExtTable::ENTRIES),
        ("ImageExtTable", ImageExtTable::ENTRIES),
    ] {
        for (field, _, offset) in entries {
            put(table, field, *offset);
        }
    }
    rows
}

/// Compiles and runs `tests/abi/layout.cpp` (once per test process), returning its rows.
fn header_layout() -> &'static [(String, String, usize)] {
    static ROWS: std::sync::OnceLock<Vec<(String, String, usize)>> = std::sync::OnceLock::new();
    ROWS.get_or_init(compile_and_run_layout_program)
}

fn compile_and_run_layout_program() -> Vec<(String, String, usize)> {
    let headers = Path::new("/usr/include/hsa/hsa_api_trace.h");
    assert!(
        headers.exists(),
        "{} is missing: run `bash .ci/setup` (it installs Debian's libhsa-runtime-dev headers)",
        headers.display()
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi_layout_headers");
    let status = Command::new("c++")
        .args([
            "-x",
            "c++",
            "-std=c++17",
            "-DAMD_INTERNAL_BUILD",
            "-I/usr/include/hsa",
        ])
        .arg(root.join("tests/abi/layout.cpp"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("c++ must be installed: run `bash .ci/setup`");
    assert!(
        status.success(),
        "tests/abi/layout.cpp failed to compile against /usr/include/hsa"
    );
    let out = Command::new(&exe)
        .output()
        .expect("the layout program runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .expect("ASCII output")
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(parts.len(), 3, "malformed line {line:?}");
            (
                parts[0].to_string(),
                parts[1].to_string(),
                parts[2].parse().expect("a number"),
            )
        })
        .collect()
}

#[test]
fn every_header_layout_line_matches_rust() {
    let rust = rust_layout();
    let rows = header_layout();
    assert_eq!(
        rows.len(),
        301,
        "the layout program prints one line per checked member"
    );
    let mismatches: Vec<String> = rows
        .iter()
        .filter_map(|(s, f, v)| match rust.get(&(s.clone(), f.clone())) {
            Some(r) if r == v => None,
            Some(r) => Some(format!("{s}.{f}: header {v}, rust {r}")),
            None => Some(format!("{s}.{f}: header {v}, missing in rust")),
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "layout mismatches:\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn every_core_entry_is_checked_against_the_header() {
    let rows = header_layout();
    let printed = rows
        .iter()
        .filter(|(s, f, _)| s == "CoreApiTable" && f != "SIZE")
        .count();
    assert_eq!(printed, CoreApiTable::ENTRIES.len());
    assert_eq!(CoreApiTable::ENTRIES.len(), 125);
}

fn amd_ext_offset(field: &str) -> usize {
    AmdExtTable::ENTRIES
        .iter()
        .find(|(f, _, _)| *f == field)
        .map(|e| e.2)
        .expect(field)
}

#[test]
fn amd_ext_table_has_the_rocm7_layout() {
    assert_eq!(size_of::<AmdExtTable>(), 704);
    assert_eq!(AmdExtTable::ENTRIES.len(), 86);
    let expected = [
        ("hsa_amd_profiling_set_profiler_enabled_fn", 32),
        ("hsa_amd_profiling_async_copy_enable_fn", 40),
        ("hsa_amd_profiling_get_dispatch_time_fn", 48),
        ("hsa_amd_profiling_convert_tick_to_system_domain_fn", 64),
        ("hsa_amd_signal_async_handler_fn", 72),
        ("hsa_amd_agent_iterate_memory_pools_fn", 112),
        ("hsa_amd_memory_pool_allocate_fn", 120),
        ("hsa_amd_memory_pool_free_fn", 128),
        ("hsa_amd_memory_async_copy_fn", 136),
        ("hsa_amd_agents_allow_access_fn", 168),
        ("hsa_amd_signal_create_fn", 280),
        ("hsa_amd_queue_intercept_create_fn", 312),
        ("hsa_amd_queue_intercept_register_fn", 320),
        ("hsa_amd_queue_cu_get_mask_fn", 432),
        ("hsa_amd_vmem_address_reserve_fn", 456),
        ("hsa_amd_enable_logging_fn", 576),
        ("hsa_amd_portable_export_dmabuf_v2_fn", 600),
        ("hsa_amd_sdma_queue_ring_doorbell_fn", 696),
    ];
    for (field, offset) in expected {
        assert_eq!(amd_ext_offset(field), offset, "{field}");
    }
    assert_eq!(size_of::<HsaApiTable>(), 64);
    assert_eq!(offset_of!(HsaApiTable, tools_), 48);
    assert_eq!(offset_of!(HsaApiTable, pc_sampling_ext_), 56);
    assert_eq!(size_of::<ImageExtTable>(), 16 + 14 * 8);
    assert_eq!(size_of::<amd_aql_intercept_marker_t>(), 64);
    assert_eq!(offset_of!(amd_aql_intercept_marker_t, format), 2);
    assert_eq!(offset_of!(amd_aql_intercept_marker_t, callback), 8);
    assert_eq!(offset_of!(amd_aql_intercept_marker_t, user_data), 16);
    assert_eq!(size_of::<aqlprofile_pmc_event_t>(), 16);
    assert_eq!(size_of::<aqlprofile_pmc_aql_packets_t>(), 192);
    assert_eq!(size_of::<aqlprofile_agent_info_t>(), 24);
    assert_eq!(size_of::<aqlprofile_pmc_profile_t>(), 24);
    assert_eq!(size_of::<AqlPacket>(), 64);
}

#[test]
fn amd_ext_entries_are_found_per_release() {
    let version = |rocm: &str| {
        let r = TableRelease::find(rocm).expect(rocm);
        ApiTableVersion {
            major_id: r.amd_ext_major,
            minor_id: r.amd_ext_size,
            step_id: r.amd_ext_step,
            reserved: 0,
        }
    };
    let create = amd_ext_offset("hsa_amd_queue_intercept_create_fn");
    let register = amd_ext_offset("hsa_amd_queue_intercept_register_fn");
    let allow = amd_ext_offset("hsa_amd_agents_allow_access_fn");
    let cu_get = amd_ext_offset("hsa_amd_queue_cu_get_mask_fn");
    let on_engine = amd_ext_offset("hsa_amd_memory_async_copy_on_engine_fn");
    let spm = amd_ext_offset("hsa_amd_spm_acquire_fn");
    let wait_all = amd_ext_offset("hsa_amd_signal_wait_all_fn");
    let logging = amd_ext_offset("hsa_amd_enable_logging_fn");
    let v52 = version("5.2");
    assert_eq!(AmdExtTable::offset_in(&v52, create), Some(296));
    assert_eq!(AmdExtTable::offset_in(&v52, register), Some(304));
    assert_eq!(AmdExtTable::offset_in(&v52, allow), Some(152));
    assert_eq!(AmdExtTable::offset_in(&v52, cu_get), Some(392));
    assert_eq!(AmdExtTable::offset_in(&v52, on_engine), None);
    assert_eq!(AmdExtTable::offset_in(&v52, spm), None);
    assert_eq!(AmdExtTable::offset_in(&v52, 32), Some(32));
    let v55 = version("5.5");
    assert_eq!(AmdExtTable::offset_in(&v55, spm), Some(392));
    assert_eq!(AmdExtTable::offset_in(&v55, cu_get), Some(416));
    for rocm in ["5.7", "6.0", "6.3", "7.0"] {
        assert_eq!(
            AmdExtTable::offset_in(&version(rocm), create),
            Some(312),
            "{rocm}"
        );
        assert_eq!(
            AmdExtTable::offset_in(&version(rocm), register),
            Some(320),
            "{rocm}"
        );
    }
    assert_eq!(AmdExtTable::offset_in(&version("6.3"), logging), Some(576));
    assert_eq!(AmdExtTable::offset_in(&version("6.3"), wait_all), None);
    assert_eq!(AmdExtTable::offset_in(&version("7.0"), wait_all), Some(584));
    assert_eq!(AmdExtTable::offset_in(&version("6.0"), logging), None);
    let none = ApiTableVersion::default();
    assert_eq!(AmdExtTable::offset_in(&none, 32), None);
    assert_eq!(TableRelease::find("6.4").map(|r| r.amd_ext_size), Some(584));
    assert_eq!(TableRelease::find("7.1").map(|r| r.root_major), Some(3));
}

#[test]
fn pm4_indirect_buffer_round_trips() {
    let packet = hsa_ext_amd_aql_pm4_packet_t::with_indirect_buffer(0x7f12_3456_7890, 0x123);
    assert_eq!(packet.indirect_buffer(), Some((0x7f12_3456_7890, 0x123)));
    assert_eq!(packet.pm4_dword(0), 0xC002_3F00);
    let header = packet_header(
        HSA_PACKET_TYPE_KERNEL_DISPATCH,
        true,
        HSA_FENCE_SCOPE_SYSTEM,
        HSA_FENCE_SCOPE_AGENT,
    );
    assert_eq!(header, 0x0D02);
    assert_eq!(header_type(header), HSA_PACKET_TYPE_KERNEL_DISPATCH);
    assert!(header_barrier(header));
    assert_eq!(header_acquire_scope(header), HSA_FENCE_SCOPE_SYSTEM);
    assert_eq!(header_release_scope(header), HSA_FENCE_SCOPE_AGENT);
}
