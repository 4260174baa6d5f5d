//! Code objects through the exported HSA functions of the runtime, as an application sees them:
//! loading onto the simulated agent (with ROCr's ISA check), kernel symbols, the loader
//! extension from `hsa_system_get_major_extension_table`, and a dispatch of the loaded `vadd`
//! that the device thread executes on host memory.

mod support;

use std::ffi::{c_void, CString};
use std::path::PathBuf;

use hsa_runtime64::code_object::kernel_by_object;
use support::*;

fn fixture(target: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    std::fs::read(dir.join(format!("kernels-{target}.co"))).unwrap()
}

/// A frozen executable with the fixture of `target` loaded on `agent`, or the load status.
fn load(target: &str, agent: hsa_agent_t) -> Result<hsa_executable_t, hsa_status_t> {
    let code = fixture(target);
    let mut reader = hsa_code_object_reader_t::default();
    let mut exec = hsa_executable_t::default();
    // SAFETY: valid buffers, handles and out pointers.
    unsafe {
        ok(hsa_code_object_reader_create_from_memory(
            code.as_ptr().cast(),
            code.len(),
            &mut reader,
        ));
        ok(hsa_executable_create_alt(
            HSA_PROFILE_FULL,
            0,
            std::ptr::null(),
            &mut exec,
        ));
        let status = hsa_executable_load_agent_code_object(
            exec,
            agent,
            reader,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        ok(hsa_code_object_reader_destroy(reader));
        if status != HSA_STATUS_SUCCESS {
            ok(hsa_executable_destroy(exec));
            return Err(status);
        }
        ok(hsa_executable_freeze(exec, std::ptr::null()));
    }
    Ok(exec)
}

fn kernel_object(exec: hsa_executable_t, agent: hsa_agent_t, name: &str) -> u64 {
    let name = CString::new(name).unwrap();
    let mut symbol = hsa_executable_symbol_t::default();
    let mut object = 0u64;
    // SAFETY: valid string, handles and out pointers.
    unsafe {
        ok(hsa_executable_get_symbol_by_name(
            exec,
            name.as_ptr(),
            &agent,
            &mut symbol,
        ));
        ok(hsa_executable_symbol_get_info(
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
            (&raw mut object).cast(),
        ));
    }
    object
}

fn loader_table() -> hsa_ven_amd_loader_1_03_pfn_t {
    let mut table = hsa_ven_amd_loader_1_03_pfn_t::default();
    // SAFETY: the table has the size passed.
    ok(unsafe {
        hsa_system_get_major_extension_table(
            HSA_EXTENSION_AMD_LOADER,
            1,
            std::mem::size_of::<hsa_ven_amd_loader_1_03_pfn_t>(),
            (&raw mut table).cast(),
        )
    });
    table
}

#[test]
fn code_objects_load_only_on_their_target() {
    init();
    let agent = gpu();
    let name = info_str(agent, HSA_AGENT_INFO_NAME);
    let other = if name == "gfx1100" {
        "gfx942"
    } else {
        "gfx1100"
    };
    assert_eq!(
        load(other, agent),
        Err(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS)
    );
    let exec = load(&name, agent).unwrap();
    let object = kernel_object(exec, agent, "saxpy.kd");
    assert_eq!(kernel_by_object(object).unwrap().name, "saxpy");
    // SAFETY: a live executable.
    ok(unsafe { hsa_executable_destroy(exec) });
    assert_eq!(kernel_by_object(object), None);
}

unsafe extern "C" fn first_loaded(
    _exec: hsa_executable_t,
    lco: hsa_loaded_code_object_t,
    data: *mut c_void,
) -> hsa_status_t {
    // SAFETY: `data` is the handle the test passed.
    unsafe { *data.cast::<hsa_loaded_code_object_t>() = lco };
    HSA_STATUS_INFO_BREAK
}

#[test]
fn loader_extension_table_answers_for_loaded_kernels() {
    init();
    let agent = gpu();
    let exec = load(&info_str(agent, HSA_AGENT_INFO_NAME), agent).unwrap();
    let object = kernel_object(exec, agent, "vadd.kd");
    let table = loader_table();
    let mut host: *const c_void = std::ptr::null();
    let mut owner = hsa_executable_t::default();
    let mut lco = hsa_loaded_code_object_t::default();
    let mut base = 0u64;
    let mut uri_len = 0u32;
    // SAFETY: the table's functions with valid pointers.
    unsafe {
        let query_host = table.hsa_ven_amd_loader_query_host_address.unwrap();
        ok(query_host(object as *const c_void, &mut host));
        assert_eq!(host as u64, object);
        let query_exec = table.hsa_ven_amd_loader_query_executable.unwrap();
        ok(query_exec(object as *const c_void, &mut owner));
        assert_eq!(owner, exec);
        let iterate = table
            .hsa_ven_amd_loader_executable_iterate_loaded_code_objects
            .unwrap();
        assert_eq!(
            iterate(exec, Some(first_loaded), (&raw mut lco).cast()),
            HSA_STATUS_INFO_BREAK
        );
        let info = table
            .hsa_ven_amd_loader_loaded_code_object_get_info
            .unwrap();
        ok(info(
            lco,
            HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE,
            (&raw mut base).cast(),
        ));
        ok(info(
            lco,
            HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH,
            (&raw mut uri_len).cast(),
        ));
        let mut uri = vec![0u8; uri_len as usize];
        ok(info(
            lco,
            HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI,
            uri.as_mut_ptr().cast(),
        ));
        let uri = String::from_utf8(uri).unwrap();
        assert!(
            uri.starts_with(&format!("memory://{}#offset=0x", std::process::id())),
            "{uri}"
        );
    }
    assert!(base <= object && object < base + 0x10000);
    // SAFETY: a live executable.
    ok(unsafe { hsa_executable_destroy(exec) });
}

#[test]
fn a_loaded_vadd_runs_on_host_memory() {
    init();
    let agent = gpu();
    let exec = load(&info_str(agent, HSA_AGENT_INFO_NAME), agent).unwrap();
    let object = kernel_object(exec, agent, "vadd.kd");
    let n = 300u32;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let mut c = vec![0.0f32; n as usize];
    let mut kernarg = [0u8; 28];
    kernarg[0..8].copy_from_slice(&(a.as_ptr() as u64).to_le_bytes());
    kernarg[8..16].copy_from_slice(&(b.as_ptr() as u64).to_le_bytes());
    kernarg[16..24].copy_from_slice(&(c.as_mut_ptr() as u64).to_le_bytes());
    kernarg[24..28].copy_from_slice(&n.to_le_bytes());
    let done = signal(1);
    let q = queue(agent, 64);
    let mut packet = dispatch(512, 256, done, true);
    // SAFETY: an AqlPacket is 64 bytes aligned to 64, the layout of a kernel dispatch packet.
    unsafe {
        let p = (&raw mut packet).cast::<hsa_kernel_dispatch_packet_t>();
        (*p).kernel_object = object;
        (*p).kernarg_address = kernarg.as_mut_ptr().cast();
    }
    submit(q, &[packet]);
    assert_eq!(wait_zero(done), 0);
    let want: Vec<f32> = (0..n).map(|i| 3.0 * i as f32).collect();
    assert_eq!(c, want);
    // SAFETY: live objects no dispatch uses any more.
    unsafe {
        ok(hsa_queue_destroy(q));
        ok(hsa_signal_destroy(done));
        ok(hsa_executable_destroy(exec));
    }
}
