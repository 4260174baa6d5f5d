//! IPC memory handles between processes: device memory exported with
//! `hsa_amd_ipc_memory_create` is mapped by `hsa_amd_ipc_memory_attach` in another process (a
//! child re-running this binary) and in the creating process itself, every mapping seeing the
//! same bytes; stale and forged handles are refused, and device memory allocated without a file
//! descriptor left is not exportable.

mod support;

use std::ffi::c_void;
use support::*;

/// Environment variable carrying the handle (hex) to the child.
const HANDLE: &str = "RTL_SIM_TEST_IPC_HANDLE";

/// Size of the shared allocation: not a whole number of pages.
const SIZE: usize = 3 * 4096 + 100;

unsafe extern "C" fn push_pool(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is a Vec of pools.
    unsafe { (*(data as *mut Vec<hsa_amd_memory_pool_t>)).push(pool) };
    HSA_STATUS_SUCCESS
}

/// The first memory pool of `agent`: device memory for a GPU, fine-grained system memory for the
/// CPU.
fn first_pool(agent: hsa_agent_t) -> hsa_amd_memory_pool_t {
    let mut pools: Vec<hsa_amd_memory_pool_t> = Vec::new();
    // SAFETY: the callback writes into `pools`.
    ok(unsafe {
        hsa_amd_agent_iterate_memory_pools(
            agent,
            Some(push_pool),
            &mut pools as *mut _ as *mut c_void,
        )
    });
    pools[0]
}

fn allocate(pool: hsa_amd_memory_pool_t, size: usize) -> *mut u8 {
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { hsa_amd_memory_pool_allocate(pool, size, 0, &mut ptr) });
    ptr as *mut u8
}

fn create(ptr: *mut u8, len: usize) -> Result<[u32; 8], hsa_status_t> {
    let mut handle = [0u32; 8];
    // SAFETY: a 32-byte handle.
    let status =
        unsafe { hsa_amd_ipc_memory_create(ptr as *mut c_void, len, handle.as_mut_ptr().cast()) };
    if status == HSA_STATUS_SUCCESS {
        Ok(handle)
    } else {
        Err(status)
    }
}

fn attach(handle: &[u32; 8], agents: &[hsa_agent_t]) -> Result<*mut u8, hsa_status_t> {
    let mut mapped: *mut c_void = std::ptr::null_mut();
    // SAFETY: a 32-byte handle, `agents.len()` agents and a valid out-pointer.
    let status = unsafe {
        hsa_amd_ipc_memory_attach(
            handle.as_ptr().cast(),
            SIZE,
            agents.len() as u32,
            agents.as_ptr(),
            &mut mapped,
        )
    };
    if status == HSA_STATUS_SUCCESS {
        Ok(mapped as *mut u8)
    } else {
        Err(status)
    }
}

fn detach(ptr: *mut u8) -> hsa_status_t {
    // SAFETY: plain HSA call.
    unsafe { hsa_amd_ipc_memory_detach(ptr as *mut c_void) }
}

/// The byte at `i` of the pattern numbered `n`.
fn pattern(n: u8, i: usize) -> u8 {
    (i as u8).wrapping_mul(31).wrapping_add(n)
}

fn fill(ptr: *mut u8, n: u8) {
    for i in 0..SIZE {
        // SAFETY: within the SIZE-byte allocation.
        unsafe { *ptr.add(i) = pattern(n, i) };
    }
}

fn holds(ptr: *const u8, n: u8) -> bool {
    // SAFETY: within the SIZE-byte allocation.
    (0..SIZE).all(|i| unsafe { *ptr.add(i) } == pattern(n, i))
}

#[test]
#[ignore = "run by the other tests in a child process"]
fn child() {
    let text = std::env::var(HANDLE).expect("run through run_child");
    let mut handle = [0u32; 8];
    for (word, hex) in handle.iter_mut().zip(text.split(',')) {
        *word = u32::from_str_radix(hex, 16).expect("hex word");
    }
    init();
    let mapped = attach(&handle, &[gpu()]).expect("the parent's handle attaches");
    assert_eq!(mapped as usize % 4096, 0);
    assert!(holds(mapped, 1), "the parent's bytes are visible");
    // Pointer info describes the import as the owner GPU's device memory.
    let mut info = hsa_amd_pointer_info_t {
        size: std::mem::size_of::<hsa_amd_pointer_info_t>() as u32,
        ..Default::default()
    };
    // SAFETY: a sized info block; no agent list asked for.
    ok(unsafe {
        hsa_amd_pointer_info(
            mapped.add(5) as *const c_void,
            &mut info,
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    });
    assert_eq!(info.type_, HSA_EXT_POINTER_TYPE_IPC);
    assert_eq!(info.agentBaseAddress as usize, mapped as usize);
    assert_eq!(info.sizeInBytes, SIZE);
    assert_eq!(info.agentOwner.handle, gpu().handle);
    fill(mapped, 2);
    ok(detach(mapped));
    assert_eq!(detach(mapped), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    // A handle whose check value does not match the memfd is refused.
    let mut forged = handle;
    forged[6] ^= 1;
    assert_eq!(attach(&forged, &[]), Err(HSA_STATUS_ERROR_INVALID_ARGUMENT));
    println!("child attached");
}

#[test]
fn device_memory_is_shared_between_processes_through_ipc_handles() {
    init();
    let memory = allocate(first_pool(gpu()), SIZE);
    assert_eq!(memory as usize % 4096, 0);
    // SAFETY: within the allocation.
    assert!((0..SIZE).all(|i| unsafe { *memory.add(i) } == 0), "zeroed");
    fill(memory, 1);
    let handle = create(memory, SIZE).expect("a handle for device memory");
    assert_eq!(
        create(memory, 4 * 4096),
        Ok(handle),
        "length rounded to the granule"
    );
    assert_eq!(
        create(memory, SIZE - 1),
        Err(HSA_STATUS_ERROR_INVALID_ARGUMENT)
    );
    // SAFETY: inside the allocation.
    assert_eq!(
        create(unsafe { memory.add(4096) }, SIZE - 4096),
        Err(HSA_STATUS_ERROR_INVALID_ARGUMENT)
    );

    // The creating process may attach too: a second address for the same bytes.
    let mine = attach(&handle, &[]).expect("attach in the creating process");
    let again = attach(&handle, &[gpu()]).expect("attach twice");
    assert!(again != mine && again != memory);
    ok(detach(again));
    assert_ne!(mine, memory);
    assert!(holds(mine, 1));
    // SAFETY: within both mappings.
    unsafe {
        *mine.add(17) = 0xEE;
        assert_eq!(*memory.add(17), 0xEE);
        *mine.add(17) = pattern(1, 17);
    }
    // SAFETY: plain HSA call; an import is not freed as an allocation.
    assert_eq!(
        unsafe { hsa_amd_memory_pool_free(mine as *mut c_void) },
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    ok(detach(mine));
    // Only imports are detached.
    assert_eq!(detach(memory), HSA_STATUS_ERROR_INVALID_ARGUMENT);

    let words: Vec<String> = handle.iter().map(|w| format!("{w:x}")).collect();
    let out = run_child("child", "ipc", &[(HANDLE, &words.join(","))]);
    assert!(out.contains("child attached"), "{out}");
    assert!(holds(memory, 2), "the child's writes are visible");

    // System memory is not shareable; a freed allocation's handle no longer attaches.
    let host = allocate(first_pool(agents()[0]), 4096);
    assert_eq!(create(host, 4096), Err(HSA_STATUS_ERROR_INVALID_ARGUMENT));
    // SAFETY: plain HSA calls on our allocations.
    unsafe {
        ok(hsa_amd_memory_pool_free(host as *mut c_void));
        ok(hsa_amd_memory_pool_free(memory as *mut c_void));
    }
    assert_eq!(attach(&handle, &[]), Err(HSA_STATUS_ERROR_INVALID_ARGUMENT));

    // Without a file descriptor left, device memory is still allocated (zeroed, aligned) but
    // cannot be exported.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct; the limit is restored below.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: limit.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &none), 0);
    }
    let private = allocate(first_pool(gpu()), SIZE);
    let exported = create(private, SIZE);
    // SAFETY: restoring the saved limit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    assert_eq!(exported, Err(HSA_STATUS_ERROR_OUT_OF_RESOURCES));
    assert_eq!(private as usize % 4096, 0);
    // SAFETY: within the allocation.
    assert!((0..SIZE).all(|i| unsafe { *private.add(i) } == 0), "zeroed");
    // SAFETY: plain HSA call on our allocation.
    ok(unsafe { hsa_amd_memory_pool_free(private as *mut c_void) });
}
