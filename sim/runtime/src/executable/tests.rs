//! The executable, symbol and loader-extension functions, called in-process as C would, on the
//! committed fixtures; the expected values come from `sim/fixtures/*.expected.json`.

use std::ffi::{c_void, CString};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use serde_json::Value;

use super::*;
use crate::code_object::kernel_by_object;

const GFX942: hsa_agent_t = hsa_agent_t { handle: 0x942 };
const GFX1100: hsa_agent_t = hsa_agent_t { handle: 0x1100 };
const TEST_ISA: hsa_isa_t = hsa_isa_t { handle: 77 };

fn isa_name(agent: hsa_agent_t) -> Option<String> {
    match agent.handle {
        0x942 => Some("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-".into()),
        0x1100 => Some("amdgcn-amd-amdhsa--gfx1100".into()),
        _ => None,
    }
}

fn isa_from_name(name: &str) -> Option<hsa_isa_t> {
    name.starts_with("amdgcn-amd-amdhsa--gfx")
        .then_some(TEST_ISA)
}

fn setup() {
    open(RuntimeHooks {
        agent_isa_name: isa_name,
        isa_from_name,
    });
}

fn fixture_path(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../fixtures/kernels-{target}.co"))
}

fn fixture(target: &str) -> (Vec<u8>, Value) {
    let bytes = std::fs::read(fixture_path(target)).unwrap();
    let json = fixture_path(target).with_extension("expected.json");
    let expected = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (bytes, expected)
}

fn reader_from(bytes: &[u8]) -> hsa_code_object_reader_t {
    let mut reader = hsa_code_object_reader_t::default();
    // SAFETY: valid buffer and out pointer.
    let status = unsafe {
        hsa_code_object_reader_create_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut reader)
    };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    reader
}

fn new_executable() -> hsa_executable_t {
    let mut exec = hsa_executable_t::default();
    // SAFETY: valid out pointer.
    let status = unsafe {
        hsa_executable_create_alt(
            HSA_PROFILE_FULL,
            HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
            std::ptr::null(),
            &mut exec,
        )
    };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    exec
}

/// A frozen executable with the fixture of `target` loaded for `agent`.
fn loaded(target: &str, agent: hsa_agent_t) -> (hsa_executable_t, hsa_loaded_code_object_t) {
    setup();
    let (bytes, _) = fixture(target);
    let reader = reader_from(&bytes);
    let exec = new_executable();
    let mut lco = hsa_loaded_code_object_t::default();
    // SAFETY: valid handles and out pointer.
    unsafe {
        let status =
            hsa_executable_load_agent_code_object(exec, agent, reader, std::ptr::null(), &mut lco);
        assert_eq!(status, HSA_STATUS_SUCCESS);
        assert_eq!(
            hsa_executable_freeze(exec, std::ptr::null()),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(hsa_code_object_reader_destroy(reader), HSA_STATUS_SUCCESS);
    }
    (exec, lco)
}

fn info<T: Default>(symbol: hsa_executable_symbol_t, attribute: u32) -> T {
    let mut value = T::default();
    // SAFETY: `value` is of the attribute's type.
    let status =
        unsafe { hsa_executable_symbol_get_info(symbol, attribute, (&raw mut value).cast()) };
    assert_eq!(status, HSA_STATUS_SUCCESS, "attribute {attribute}");
    value
}

fn name_of(symbol: hsa_executable_symbol_t) -> String {
    let len: u32 = info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH);
    let mut buffer = vec![0xffu8; len as usize + 1];
    // SAFETY: the buffer has room for the name and one more byte.
    let status = unsafe {
        hsa_executable_symbol_get_info(
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_NAME,
            buffer.as_mut_ptr().cast(),
        )
    };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    assert_eq!(buffer.pop(), Some(0xff), "no NUL is written after the name");
    String::from_utf8(buffer).unwrap()
}

unsafe extern "C" fn collect_agent_symbols(
    _exec: hsa_executable_t,
    _agent: hsa_agent_t,
    symbol: hsa_executable_symbol_t,
    data: *mut c_void,
) -> hsa_status_t {
    // SAFETY: `data` is the Vec the test passed.
    unsafe { (*data.cast::<Vec<hsa_executable_symbol_t>>()).push(symbol) };
    HSA_STATUS_SUCCESS
}

fn agent_symbols(exec: hsa_executable_t, agent: hsa_agent_t) -> Vec<hsa_executable_symbol_t> {
    let mut symbols: Vec<hsa_executable_symbol_t> = Vec::new();
    // SAFETY: the callback receives the Vec as data.
    let status = unsafe {
        hsa_executable_iterate_agent_symbols(
            exec,
            agent,
            Some(collect_agent_symbols),
            (&raw mut symbols).cast(),
        )
    };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    symbols
}

#[test]
fn symbol_info_equals_fixture_metadata() {
    for (target, agent) in [("gfx942", GFX942), ("gfx1100", GFX1100)] {
        let (exec, _) = loaded(target, agent);
        let (_, expected) = fixture(target);
        let symbols = agent_symbols(exec, agent);
        let kernels = expected["kernels"].as_array().unwrap();
        assert_eq!(
            symbols.len(),
            kernels.len() + 1,
            "the kernels and the C++ compiler's __hip_cuid_ variable"
        );
        let cuid = *symbols
            .iter()
            .find(|s| name_of(**s) == "__hip_cuid_")
            .unwrap();
        assert_eq!(
            info::<u32>(cuid, HSA_EXECUTABLE_SYMBOL_INFO_TYPE),
            HSA_SYMBOL_KIND_VARIABLE
        );
        for want in kernels {
            let name = want["symbol"].as_str().unwrap();
            let symbol = *symbols.iter().find(|s| name_of(**s) == name).unwrap();
            let mut by_name = hsa_executable_symbol_t::default();
            let c_name = CString::new(name).unwrap();
            // SAFETY: valid C string and pointers.
            let status = unsafe {
                hsa_executable_get_symbol_by_name(exec, c_name.as_ptr(), &agent, &mut by_name)
            };
            assert_eq!((status, by_name), (HSA_STATUS_SUCCESS, symbol));
            let u32_of = |key: &str| want[key].as_u64().unwrap() as u32;
            assert_eq!(
                info::<u32>(symbol, HSA_EXECUTABLE_SYMBOL_INFO_TYPE),
                HSA_SYMBOL_KIND_KERNEL
            );
            let name_len: u32 = info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH);
            assert_eq!(name_len as usize, name.len());
            let attributes = [
                (
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                    "kernarg_segment_size",
                ),
                (
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT,
                    "kernarg_segment_align",
                ),
                (
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                    "group_segment_fixed_size",
                ),
                (
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                    "private_segment_fixed_size",
                ),
            ];
            for (attribute, key) in attributes {
                assert_eq!(
                    info::<u32>(symbol, attribute),
                    u32_of(key),
                    "{target} {name} {key}"
                );
            }
            assert!(!info::<bool>(
                symbol,
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK
            ));
            assert!(info::<bool>(
                symbol,
                HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION
            ));
            assert_eq!(
                info::<u32>(symbol, HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE),
                HSA_SYMBOL_LINKAGE_PROGRAM
            );
            assert_eq!(
                info::<u32>(symbol, HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH),
                0
            );
            assert_eq!(
                info::<hsa_agent_t>(symbol, HSA_EXECUTABLE_SYMBOL_INFO_AGENT),
                agent
            );
            let object: u64 = info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);
            let kernel = kernel_by_object(object).unwrap();
            assert_eq!(kernel.symbol, name);
            assert_eq!(kernel.name, want["name"].as_str().unwrap());
            // SAFETY: the kernel object addresses 64 bytes of the live image.
            let descriptor = unsafe { std::slice::from_raw_parts(object as *const u8, 64) };
            let hex: String = descriptor.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, want["descriptor"].as_str().unwrap(), "{target} {name}");
        }
        // SAFETY: valid handle.
        assert_eq!(unsafe { hsa_executable_destroy(exec) }, HSA_STATUS_SUCCESS);
    }
}

#[test]
fn lookups_use_the_elf_symbol_and_the_agent() {
    let (exec, _) = loaded("gfx942", GFX942);
    let mut symbol = hsa_executable_symbol_t::default();
    let lookup = |name: &str, agent: *const hsa_agent_t, symbol: &mut hsa_executable_symbol_t| {
        let name = CString::new(name).unwrap();
        // SAFETY: valid C string and pointers.
        unsafe { hsa_executable_get_symbol_by_name(exec, name.as_ptr(), agent, symbol) }
    };
    assert_eq!(lookup("vadd.kd", &GFX942, &mut symbol), HSA_STATUS_SUCCESS);
    assert_eq!(
        lookup("vadd", &GFX942, &mut symbol),
        HSA_STATUS_ERROR_INVALID_SYMBOL_NAME
    );
    assert_eq!(
        lookup("vadd.kd", &GFX1100, &mut symbol),
        HSA_STATUS_ERROR_INVALID_SYMBOL_NAME
    );
    assert_eq!(
        lookup("vadd.kd", std::ptr::null(), &mut symbol),
        HSA_STATUS_ERROR_INVALID_SYMBOL_NAME
    );
    let mut deprecated = hsa_executable_symbol_t::default();
    let name = CString::new("saxpy.kd").unwrap();
    // SAFETY: valid C strings and pointers.
    let status = unsafe {
        hsa_executable_get_symbol(
            exec,
            std::ptr::null(),
            name.as_ptr(),
            GFX942,
            0,
            &mut deprecated,
        )
    };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    assert_eq!(name_of(deprecated), "saxpy.kd");
    // SAFETY: valid handles.
    unsafe {
        assert_eq!(hsa_executable_destroy(exec), HSA_STATUS_SUCCESS);
        assert_eq!(
            hsa_executable_destroy(exec),
            HSA_STATUS_ERROR_INVALID_EXECUTABLE
        );
        let mut kind = 0u32;
        let status = hsa_executable_symbol_get_info(symbol, 0, (&raw mut kind).cast());
        assert_eq!(status, HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
    }
}

#[test]
fn loading_checks_target_agent_and_state() {
    setup();
    let (gfx1100, _) = fixture("gfx1100");
    let (gfx942, _) = fixture("gfx942");
    let exec = new_executable();
    let (wrong, right) = (reader_from(&gfx1100), reader_from(&gfx942));
    let null = std::ptr::null_mut();
    // SAFETY: valid handles and pointers throughout.
    unsafe {
        let load = |agent, reader| {
            hsa_executable_load_agent_code_object(exec, agent, reader, std::ptr::null(), null)
        };
        assert_eq!(load(GFX942, wrong), HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
        assert_eq!(
            load(hsa_agent_t { handle: 5 }, right),
            HSA_STATUS_ERROR_INVALID_AGENT
        );
        assert_eq!(
            load(GFX942, hsa_code_object_reader_t { handle: 0 }),
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER
        );
        assert_eq!(load(GFX942, right), HSA_STATUS_SUCCESS);
        assert_eq!(
            load(GFX942, right),
            HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED
        );
        let mut state = 9u32;
        assert_eq!(
            hsa_executable_get_info(exec, HSA_EXECUTABLE_INFO_STATE, (&raw mut state).cast()),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(state, HSA_EXECUTABLE_STATE_UNFROZEN);
        assert_eq!(
            hsa_executable_freeze(exec, std::ptr::null()),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(
            hsa_executable_freeze(exec, std::ptr::null()),
            HSA_STATUS_ERROR_FROZEN_EXECUTABLE
        );
        assert_eq!(
            hsa_executable_get_info(exec, HSA_EXECUTABLE_INFO_STATE, (&raw mut state).cast()),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(state, HSA_EXECUTABLE_STATE_FROZEN);
        assert_eq!(load(GFX1100, wrong), HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
        let mut profile = 9u32;
        assert_eq!(
            hsa_executable_get_info(exec, HSA_EXECUTABLE_INFO_PROFILE, (&raw mut profile).cast()),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(profile, HSA_PROFILE_FULL);
        let mut result = 7u32;
        assert_eq!(
            hsa_executable_validate(exec, &mut result),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(result, 0);
        assert_eq!(hsa_code_object_reader_destroy(wrong), HSA_STATUS_SUCCESS);
        assert_eq!(
            hsa_code_object_reader_destroy(wrong),
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER
        );
        let mut reader = hsa_code_object_reader_t::default();
        let garbage = [1u8; 64];
        assert_eq!(
            hsa_code_object_reader_create_from_memory(garbage.as_ptr().cast(), 64, &mut reader),
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT
        );
        assert_eq!(hsa_executable_destroy(exec), HSA_STATUS_SUCCESS);
    }
}

#[test]
fn readers_from_files_with_offsets() {
    setup();
    let (bytes, _) = fixture("gfx942");
    let file = std::fs::File::open(fixture_path("gfx942")).unwrap();
    let mut whole = hsa_code_object_reader_t::default();
    // SAFETY: an open descriptor and a valid out pointer.
    let status = unsafe { hsa_code_object_reader_create_from_file(file.as_raw_fd(), &mut whole) };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    let bundle = std::env::temp_dir().join(format!("rtl-sim-bundle-{}.bin", std::process::id()));
    std::fs::write(
        &bundle,
        [vec![0u8; 100], bytes.clone(), vec![0u8; 7]].concat(),
    )
    .unwrap();
    let bundle_file = std::fs::File::open(&bundle).unwrap();
    let mut part = hsa_code_object_reader_t::default();
    // SAFETY: as above.
    let status = unsafe {
        hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size(
            bundle_file.as_raw_fd(),
            100,
            bytes.len(),
            &mut part,
        )
    };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    let exec = new_executable();
    let mut lco = hsa_loaded_code_object_t::default();
    // SAFETY: valid handles and pointers.
    unsafe {
        let status =
            hsa_executable_load_agent_code_object(exec, GFX942, part, std::ptr::null(), &mut lco);
        assert_eq!(status, HSA_STATUS_SUCCESS);
        let mut len = 0u32;
        hsa_ven_amd_loader_loaded_code_object_get_info(
            lco,
            HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH,
            (&raw mut len).cast(),
        );
        let mut uri = vec![0u8; len as usize];
        hsa_ven_amd_loader_loaded_code_object_get_info(
            lco,
            HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI,
            uri.as_mut_ptr().cast(),
        );
        let expected = format!(
            "file://{}#offset=100&size={}",
            bundle.display(),
            bytes.len()
        );
        assert_eq!(String::from_utf8(uri).unwrap(), expected);
        assert_eq!(
            hsa_code_object_reader_create_from_file(-1, &mut part),
            HSA_STATUS_ERROR_INVALID_FILE
        );
        assert_eq!(hsa_executable_destroy(exec), HSA_STATUS_SUCCESS);
    }
    std::fs::remove_file(bundle).unwrap();
}

unsafe extern "C" fn collect_loaded(
    _exec: hsa_executable_t,
    lco: hsa_loaded_code_object_t,
    data: *mut c_void,
) -> hsa_status_t {
    // SAFETY: `data` is the Vec the test passed.
    unsafe { (*data.cast::<Vec<hsa_loaded_code_object_t>>()).push(lco) };
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn find_executable(exec: hsa_executable_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is the executable the test looks for.
    let wanted = unsafe { *data.cast::<hsa_executable_t>() };
    if exec == wanted {
        HSA_STATUS_INFO_BREAK
    } else {
        HSA_STATUS_SUCCESS
    }
}

fn lco_info<T: Default>(lco: hsa_loaded_code_object_t, attribute: u32) -> T {
    let mut value = T::default();
    // SAFETY: `value` is of the attribute's type.
    let status = unsafe {
        hsa_ven_amd_loader_loaded_code_object_get_info(lco, attribute, (&raw mut value).cast())
    };
    assert_eq!(status, HSA_STATUS_SUCCESS, "attribute {attribute}");
    value
}

#[test]
fn loader_extension_describes_loaded_code() {
    let (exec, lco) = loaded("gfx942", GFX942);
    let (bytes, expected) = fixture("gfx942");
    let mut all = Vec::<hsa_loaded_code_object_t>::new();
    // SAFETY: valid handles, callbacks and data throughout.
    unsafe {
        let status = hsa_ven_amd_loader_executable_iterate_loaded_code_objects(
            exec,
            Some(collect_loaded),
            (&raw mut all).cast(),
        );
        assert_eq!(status, HSA_STATUS_SUCCESS);
        assert_eq!(all, [lco]);
        let mut wanted = exec;
        let status =
            hsa_ven_amd_loader_iterate_executables(Some(find_executable), (&raw mut wanted).cast());
        assert_eq!(status, HSA_STATUS_INFO_BREAK);
    }
    assert_eq!(
        lco_info::<hsa_executable_t>(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_EXECUTABLE),
        exec
    );
    assert_eq!(
        lco_info::<u32>(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_KIND),
        LOADED_CODE_OBJECT_KIND_AGENT
    );
    assert_eq!(
        lco_info::<hsa_agent_t>(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_AGENT),
        GFX942
    );
    assert_eq!(
        lco_info::<u32>(
            lco,
            HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_TYPE
        ),
        CODE_OBJECT_STORAGE_TYPE_MEMORY
    );
    assert_eq!(
        lco_info::<u64>(
            lco,
            HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE
        ),
        bytes.len() as u64
    );
    let base: u64 = lco_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE);
    assert_eq!(
        lco_info::<i64>(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA),
        base as i64
    );
    let size: u64 = lco_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_SIZE);
    let storage: u64 = lco_info(
        lco,
        HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_BASE,
    );
    // SAFETY: the storage base addresses the code object's bytes.
    let stored = unsafe { std::slice::from_raw_parts(storage as *const u8, bytes.len()) };
    assert_eq!(stored, bytes.as_slice());
    let vadd = &expected["kernels"][0];
    assert_eq!(vadd["symbol"], "vadd.kd");
    let object = base + vadd["descriptor_address"].as_u64().unwrap();
    assert!(object < base + size);
    // SAFETY: valid pointers throughout.
    unsafe {
        let mut host: *const c_void = std::ptr::null();
        let status = hsa_ven_amd_loader_query_host_address(object as *const c_void, &mut host);
        assert_eq!((status, host as u64), (HSA_STATUS_SUCCESS, object));
        let status = hsa_ven_amd_loader_query_host_address(8 as *const c_void, &mut host);
        assert_eq!(status, HSA_STATUS_ERROR_INVALID_ARGUMENT);
        let mut owner = hsa_executable_t::default();
        let status = hsa_ven_amd_loader_query_executable(object as *const c_void, &mut owner);
        assert_eq!((status, owner), (HSA_STATUS_SUCCESS, exec));
        let mut file = 0i32;
        let status = hsa_ven_amd_loader_loaded_code_object_get_info(
            lco,
            HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_FILE,
            (&raw mut file).cast(),
        );
        assert_eq!(status, HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    // Other tests load and unload concurrently: retry until the count holds still.
    let descriptors = (0..100)
        .find_map(|_| {
            let mut count = 0usize;
            // SAFETY: counting call: null array, zero count.
            let status = unsafe {
                hsa_ven_amd_loader_query_segment_descriptors(std::ptr::null_mut(), &mut count)
            };
            assert_eq!(status, HSA_STATUS_SUCCESS);
            let mut all = vec![hsa_ven_amd_loader_segment_descriptor_t::default(); count];
            // SAFETY: room for `count` descriptors.
            let status = unsafe {
                hsa_ven_amd_loader_query_segment_descriptors(all.as_mut_ptr(), &mut count)
            };
            (status == HSA_STATUS_SUCCESS).then_some(all)
        })
        .unwrap();
    let ours: Vec<_> = descriptors
        .iter()
        .filter(|d| d.executable == exec)
        .collect();
    assert_eq!(ours.len(), 1);
    assert_eq!((ours[0].agent, ours[0].segment_base as u64), (GFX942, base));
    assert_eq!(
        (
            ours[0].segment_size as u64,
            ours[0].code_object_storage_size
        ),
        (size, bytes.len())
    );
    // SAFETY: valid handle.
    assert_eq!(unsafe { hsa_executable_destroy(exec) }, HSA_STATUS_SUCCESS);
    assert_eq!(kernel_by_object(object), None);
}

unsafe extern "C" fn collect_program_symbols(
    _exec: hsa_executable_t,
    symbol: hsa_executable_symbol_t,
    data: *mut c_void,
) -> hsa_status_t {
    // SAFETY: `data` is the Vec the test passed.
    unsafe { (*data.cast::<Vec<hsa_executable_symbol_t>>()).push(symbol) };
    HSA_STATUS_SUCCESS
}

#[test]
fn variables_and_program_code_objects() {
    setup();
    let exec = new_executable();
    let name = CString::new("counter").unwrap();
    let mut storage = 0u64;
    let address = (&raw mut storage).cast::<c_void>();
    let (bytes, _) = fixture("gfx90a");
    let reader = reader_from(&bytes);
    let mut symbols = Vec::<hsa_executable_symbol_t>::new();
    // SAFETY: valid handles, strings and pointers throughout.
    unsafe {
        assert_eq!(
            hsa_executable_global_variable_define(exec, name.as_ptr(), address),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(
            hsa_executable_global_variable_define(exec, name.as_ptr(), address),
            HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED
        );
        assert_eq!(
            hsa_executable_agent_global_variable_define(exec, GFX942, name.as_ptr(), address),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(
            hsa_executable_readonly_variable_define(exec, GFX942, name.as_ptr(), address),
            HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED
        );
        let status = hsa_executable_load_program_code_object(
            exec,
            reader,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        assert_eq!(status, HSA_STATUS_SUCCESS);
        let status = hsa_executable_iterate_program_symbols(
            exec,
            Some(collect_program_symbols),
            (&raw mut symbols).cast(),
        );
        assert_eq!(status, HSA_STATUS_SUCCESS);
        assert_eq!(
            hsa_executable_freeze(exec, std::ptr::null()),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(
            hsa_executable_global_variable_define(exec, name.as_ptr(), address),
            HSA_STATUS_ERROR_FROZEN_EXECUTABLE
        );
    }
    let names: Vec<String> = symbols.iter().map(|s| name_of(*s)).collect();
    assert_eq!(names[0], "counter");
    assert_eq!(
        names.len(),
        14,
        "the variable, the 12 kernels and __hip_cuid_: {names:?}"
    );
    let variable = symbols[0];
    assert_eq!(
        info::<u32>(variable, HSA_EXECUTABLE_SYMBOL_INFO_TYPE),
        HSA_SYMBOL_KIND_VARIABLE
    );
    assert_eq!(
        info::<u64>(variable, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS),
        address as u64
    );
    assert_eq!(
        info::<u32>(variable, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION),
        HSA_VARIABLE_ALLOCATION_PROGRAM
    );
    assert_eq!(
        info::<hsa_agent_t>(symbols[1], HSA_EXECUTABLE_SYMBOL_INFO_AGENT).handle,
        0
    );
    // SAFETY: valid handle.
    assert_eq!(unsafe { hsa_executable_destroy(exec) }, HSA_STATUS_SUCCESS);
}

unsafe extern "C" fn malloc_callback(
    size: usize,
    _data: hsa_callback_data_t,
    out: *mut *mut c_void,
) -> hsa_status_t {
    // SAFETY: plain allocation; the test frees it.
    unsafe { *out = libc::malloc(size) };
    HSA_STATUS_SUCCESS
}

#[test]
fn deprecated_code_objects() {
    setup();
    let (mut bytes, expected) = fixture("gfx1100");
    let mut co = hsa_code_object_t::default();
    let exec = new_executable();
    // SAFETY: valid handles, buffers and pointers throughout.
    unsafe {
        let status = hsa_code_object_deserialize(
            bytes.as_mut_ptr().cast(),
            bytes.len(),
            std::ptr::null(),
            &mut co,
        );
        assert_eq!(status, HSA_STATUS_SUCCESS);
        let mut version = [0u8; 64];
        assert_eq!(
            hsa_code_object_get_info(
                co,
                HSA_CODE_OBJECT_INFO_VERSION,
                version.as_mut_ptr().cast()
            ),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(&version[..2], b"5\0");
        let mut isa = hsa_isa_t::default();
        assert_eq!(
            hsa_code_object_get_info(co, HSA_CODE_OBJECT_INFO_ISA, (&raw mut isa).cast()),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(isa, TEST_ISA);
        let mut symbol = hsa_code_symbol_t::default();
        let name = CString::new("scratchy.kd").unwrap();
        assert_eq!(
            hsa_code_object_get_symbol(co, name.as_ptr(), &mut symbol),
            HSA_STATUS_SUCCESS
        );
        let mut private = 0u32;
        let status = hsa_code_symbol_get_info(
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
            (&raw mut private).cast(),
        );
        assert_eq!(status, HSA_STATUS_SUCCESS);
        assert_eq!(
            u64::from(private),
            expected["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["name"] == "scratchy")
                .unwrap()["private_segment_fixed_size"]
                .as_u64()
                .unwrap()
        );
        let mut object = 0u64;
        let status = hsa_code_symbol_get_info(
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
            (&raw mut object).cast(),
        );
        assert_eq!(
            status, HSA_STATUS_ERROR_INVALID_ARGUMENT,
            "a code symbol is not loaded"
        );
        let mut serialized: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        let status = hsa_code_object_serialize(
            co,
            Some(malloc_callback),
            hsa_callback_data_t::default(),
            std::ptr::null(),
            &mut serialized,
            &mut size,
        );
        assert_eq!(status, HSA_STATUS_SUCCESS);
        assert_eq!(
            std::slice::from_raw_parts(serialized.cast::<u8>(), size),
            bytes.as_slice()
        );
        libc::free(serialized);
        assert_eq!(
            hsa_executable_load_code_object(exec, GFX942, co, std::ptr::null()),
            HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS
        );
        assert_eq!(
            hsa_executable_load_code_object(exec, GFX1100, co, std::ptr::null()),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(hsa_code_object_destroy(co), HSA_STATUS_SUCCESS);
        assert_eq!(
            hsa_code_object_destroy(co),
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT
        );
        assert_eq!(
            hsa_code_symbol_get_info(symbol, 0, (&raw mut private).cast()),
            HSA_STATUS_ERROR_INVALID_CODE_SYMBOL
        );
    }
    assert_eq!(
        agent_symbols(exec, GFX1100).len(),
        13,
        "12 kernels, 1 variable"
    );
    // SAFETY: valid handle.
    assert_eq!(unsafe { hsa_executable_destroy(exec) }, HSA_STATUS_SUCCESS);
}
