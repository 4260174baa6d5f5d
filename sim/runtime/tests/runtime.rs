//! The simulated runtime in-process (default configuration: one gfx942 GPU, ROCm 7 tables):
//! agents, system information, signals, queues, the device thread and profiling timestamps.

mod support;

use hsa_runtime64::device::{dispatch_duration_ns, kernel_duration_ns};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

#[test]
fn agents_describe_the_default_mi300x() {
    init();
    let agents = agents();
    assert_eq!(agents.len(), 2);
    let mut device = 0u32;
    // SAFETY: u32 out-pointer.
    ok(unsafe {
        hsa_agent_get_info(
            agents[0],
            HSA_AGENT_INFO_DEVICE,
            &mut device as *mut u32 as *mut c_void,
        )
    });
    assert_eq!(device, HSA_DEVICE_TYPE_CPU);
    let g = agents[1];
    assert_eq!(info_u32(g, HSA_AGENT_INFO_DEVICE), HSA_DEVICE_TYPE_GPU);
    assert_eq!(info_str(g, HSA_AGENT_INFO_NAME), "gfx942");
    assert_eq!(
        info_str(g, HSA_AMD_AGENT_INFO_PRODUCT_NAME),
        "AMD Instinct MI300X"
    );
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT), 304);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES), 32);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE), 1);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_NUM_XCC), 8);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_DRIVER_NODE_ID), 1);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU), 32);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU), 4);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY), 2100);
    assert_eq!(info_u32(g, HSA_AGENT_INFO_WAVEFRONT_SIZE), 64);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_CHIP_ID), 0x74a1);
    assert_eq!(info_u32(g, HSA_AMD_AGENT_INFO_BDFID), 0x0c00);
    let mut uuid = [0u8; 21];
    // SAFETY: 21-byte out buffer.
    ok(unsafe { hsa_agent_get_info(g, HSA_AMD_AGENT_INFO_UUID, uuid.as_mut_ptr() as *mut c_void) });
    assert_eq!(&uuid[..20], b"GPU-4c5a1e0f9d2b3a01");
    let mut isa = hsa_isa_t::default();
    // SAFETY: out-pointer of the attribute's type.
    ok(unsafe {
        hsa_agent_get_info(
            g,
            HSA_AGENT_INFO_ISA,
            &mut isa as *mut hsa_isa_t as *mut c_void,
        )
    });
    let mut name = [0u8; 64];
    // SAFETY: 64-byte buffer, longer than the name.
    ok(unsafe { hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name.as_mut_ptr() as *mut c_void) });
    assert!(name.starts_with(b"amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\0"));
    let mut bad = 0u32;
    // SAFETY: any out-pointer; the attribute is rejected first.
    let status = unsafe { hsa_agent_get_info(g, 0x7777, &mut bad as *mut u32 as *mut c_void) };
    assert_eq!(status, HSA_STATUS_ERROR_INVALID_ARGUMENT);
}

#[test]
fn system_timestamps_are_boottime_nanoseconds() {
    init();
    let (mut freq, mut t1, mut t2) = (0u64, 0u64, 0u64);
    // SAFETY: u64 out-pointers.
    unsafe {
        ok(hsa_system_get_info(
            HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY,
            &mut freq as *mut u64 as *mut c_void,
        ));
        ok(hsa_system_get_info(
            HSA_SYSTEM_INFO_TIMESTAMP,
            &mut t1 as *mut u64 as *mut c_void,
        ));
        ok(hsa_system_get_info(
            HSA_SYSTEM_INFO_TIMESTAMP,
            &mut t2 as *mut u64 as *mut c_void,
        ));
    }
    assert_eq!(freq, 1_000_000_000);
    assert!(t1 <= t2);
    let boot = hsa_runtime64::clock::now_ns();
    assert!(t2 <= boot);
}

#[test]
fn memory_pools_allocate_host_memory() {
    init();
    unsafe extern "C" fn first(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is a Vec of pools.
        unsafe { (*(data as *mut Vec<hsa_amd_memory_pool_t>)).push(pool) };
        HSA_STATUS_SUCCESS
    }
    let mut pools: Vec<hsa_amd_memory_pool_t> = Vec::new();
    // SAFETY: callback writes into `pools`; allocations are used within bounds.
    unsafe {
        ok(hsa_amd_agent_iterate_memory_pools(
            agents()[0],
            Some(first),
            &mut pools as *mut _ as *mut c_void,
        ));
        assert_eq!(pools.len(), 2);
        let mut flags = 0u32;
        ok(hsa_amd_memory_pool_get_info(
            pools[0],
            HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
            &mut flags as *mut u32 as *mut c_void,
        ));
        assert_eq!(
            flags,
            HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT
                | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
        );
        let mut ptr: *mut c_void = std::ptr::null_mut();
        ok(hsa_amd_memory_pool_allocate(pools[0], 4096, 0, &mut ptr));
        assert_eq!(ptr as usize % 4096, 0);
        ok(hsa_amd_agents_allow_access(
            1,
            &gpu(),
            std::ptr::null(),
            ptr,
        ));
        ok(hsa_amd_memory_fill(ptr, 0xABCD_0123, 1024));
        assert_eq!(*(ptr as *const u32).add(1023), 0xABCD_0123);
        let mut copy: *mut c_void = std::ptr::null_mut();
        ok(hsa_amd_memory_pool_allocate(pools[0], 4096, 0, &mut copy));
        let done = signal(1);
        ok(hsa_amd_memory_async_copy(
            copy,
            gpu(),
            ptr,
            agents()[0],
            4096,
            0,
            std::ptr::null(),
            done,
        ));
        assert_eq!(wait_zero(done), 0);
        assert_eq!(*(copy as *const u32).add(7), 0xABCD_0123);
        ok(hsa_amd_memory_pool_free(ptr));
        ok(hsa_amd_memory_pool_free(copy));
        assert_eq!(
            hsa_amd_memory_pool_free(ptr),
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        ok(hsa_signal_destroy(done));
    }
}

#[test]
fn signal_operations_have_hsa_semantics() {
    init();
    let s = signal(10);
    // SAFETY: a live signal.
    unsafe {
        hsa_signal_add_relaxed(s, 5);
        assert_eq!(hsa_signal_load_relaxed(s), 15);
        hsa_signal_subtract_screlease(s, 3);
        hsa_signal_and_scacquire(s, 0b1110);
        assert_eq!(hsa_signal_load_scacquire(s), 12);
        hsa_signal_or_scacq_screl(s, 1);
        hsa_signal_xor_relaxed(s, 0b100);
        assert_eq!(hsa_signal_load_relaxed(s), 9);
        assert_eq!(hsa_signal_exchange_screlease(s, 40), 9);
        assert_eq!(hsa_signal_cas_scacq_screl(s, 41, 7), 40);
        assert_eq!(hsa_signal_cas_relaxed(s, 40, 7), 40);
        assert_eq!(hsa_signal_load_relaxed(s), 7);
        // HSA 1.0 names are the same functions.
        hsa_signal_store_release(s, 3);
        assert_eq!(hsa_signal_load_acquire(s), 3);
        let amd = s.handle as *const amd_signal_t;
        assert_eq!((*amd).kind, AMD_SIGNAL_KIND_USER);
        assert_eq!((*amd).value, 3);
        assert_eq!(s.handle % 64, 0);
        ok(hsa_signal_destroy(s));
    }
}

#[test]
fn signal_waits_time_out_and_block() {
    init();
    let s = signal(1);
    let start = Instant::now();
    // SAFETY: a live signal.
    let v = unsafe {
        hsa_signal_wait_relaxed(
            s,
            HSA_SIGNAL_CONDITION_LT,
            1,
            30_000_000,
            HSA_WAIT_STATE_BLOCKED,
        )
    };
    assert_eq!(v, 1);
    assert!(
        start.elapsed() >= Duration::from_millis(30),
        "the wait returned before its timeout"
    );
    // SAFETY: a live signal.
    unsafe { ok(hsa_signal_destroy(s)) };
}

/// CPU time used by the calling thread.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
fn contended_waiters_sleep_and_all_wake() {
    init();
    let s = signal(4);
    let woken = Arc::new(AtomicU64::new(0));
    let waiters: Vec<_> = (0..6)
        .map(|_| {
            let woken = Arc::clone(&woken);
            std::thread::spawn(move || {
                let before = thread_cpu_time();
                // SAFETY: the signal outlives the threads (destroyed after join).
                let v = unsafe {
                    hsa_signal_wait_scacquire(
                        s,
                        HSA_SIGNAL_CONDITION_EQ,
                        0,
                        u64::MAX,
                        HSA_WAIT_STATE_BLOCKED,
                    )
                };
                woken.fetch_add(1, Ordering::SeqCst);
                (v, thread_cpu_time() - before)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(woken.load(Ordering::SeqCst), 0);
    let deciders: Vec<_> = (0..4)
        // SAFETY: a live signal.
        .map(|_| std::thread::spawn(move || unsafe { hsa_signal_subtract_screlease(s, 1) }))
        .collect();
    for d in deciders {
        d.join().expect("decrementing thread");
    }
    for w in waiters {
        let (value, cpu) = w.join().expect("waiting thread");
        assert_eq!(value, 0);
        // A spinning waiter burns the whole 300 ms; a sleeping one almost nothing.
        assert!(
            cpu < Duration::from_millis(150),
            "a waiter used {cpu:?} of CPU while waiting 300 ms"
        );
    }
    assert_eq!(woken.load(Ordering::SeqCst), 6);
    // SAFETY: no thread uses it any more.
    unsafe { ok(hsa_signal_destroy(s)) };
}

#[test]
fn dispatches_complete_with_model_timestamps() {
    init();
    let q = queue(gpu(), 64);
    // SAFETY: a live queue.
    unsafe { ok(hsa_amd_profiling_set_profiler_enabled(q, 1)) };
    let signals: Vec<hsa_signal_t> = (0..8).map(|_| signal(1)).collect();
    let grids = [64u32, 1024, 4096, 65536, 1 << 20, 256, 100_000, 7];
    let packets: Vec<AqlPacket> = signals
        .iter()
        .zip(grids)
        .map(|(s, g)| dispatch(g, 256, *s, true))
        .collect();
    let before = hsa_runtime64::clock::now_ns();
    submit(q, &packets);
    let mut last_end = before;
    for (s, g) in signals.iter().zip(grids) {
        assert_eq!(wait_zero(*s), 0);
        let (start, end) = dispatch_time(*s);
        // The kernel object is unknown to the runtime, which names it by its address.
        let duration =
            dispatch_duration_ns("kernel_0x12345000", [g, 1, 1], [256, 1, 1], 304, 64, [0, 0]);
        assert_eq!(end - start, duration, "grid {g}");
        // Rounds of workgroups over the CUs, or longer when its traffic and math take longer.
        assert!(duration >= kernel_duration_ns([g, 1, 1], [256, 1, 1], 304));
        assert!(start >= last_end, "barrier-bit dispatches must not overlap");
        last_end = end;
    }
    // `copy` moves 8 bytes per work-item at 1,000 bytes per ns: over 2^24 items that takes
    // longer than its 216 rounds of workgroups (88,400 ns); over 2^16, one round is longer.
    let copy =
        |items: u32| dispatch_duration_ns("copy", [items, 1, 1], [256, 1, 1], 304, 64, [0, 0]);
    assert_eq!((copy(1 << 24), copy(1 << 16)), (134_217, 2_400));
    // SAFETY: live queue; the packets completed.
    unsafe {
        assert_eq!(hsa_queue_load_read_index_scacquire(q), 8);
        assert_eq!(hsa_queue_load_write_index_relaxed(q), 8);
        let amd = q as *const amd_queue_t;
        assert_eq!((*amd).read_dispatch_id, 8);
        assert_ne!(
            (*amd).queue_properties & AMD_QUEUE_PROPERTIES_ENABLE_PROFILING,
            0
        );
        let mut t = hsa_amd_profiling_dispatch_time_t::default();
        assert_eq!(
            hsa_amd_profiling_get_dispatch_time(agents()[0], signals[0], &mut t),
            HSA_STATUS_ERROR_INVALID_AGENT
        );
        for s in signals {
            ok(hsa_signal_destroy(s));
        }
        ok(hsa_queue_destroy(q));
        assert_eq!(hsa_queue_destroy(q), HSA_STATUS_ERROR_INVALID_QUEUE);
    }
}

#[test]
fn kernels_on_two_queues_overlap_and_barriers_order_them() {
    init();
    let (qa, qb) = (queue(gpu(), 64), queue(gpu(), 64));
    // SAFETY: live queues.
    unsafe {
        ok(hsa_amd_profiling_set_profiler_enabled(qa, 1));
        ok(hsa_amd_profiling_set_profiler_enabled(qb, 1));
    }
    // Overlap: one long kernel on each queue, submitted together.
    let (a, b) = (signal(1), signal(1));
    let host = signal(1);
    // qa waits for the host signal first, so both kernels become ready at once.
    submit(
        qa,
        &[
            barrier_and(&[host], hsa_signal_t::default()),
            dispatch(1 << 22, 256, a, false),
        ],
    );
    submit(
        qb,
        &[
            barrier_and(&[host], hsa_signal_t::default()),
            dispatch(1 << 22, 256, b, false),
        ],
    );
    // SAFETY: a live signal.
    let still = unsafe {
        hsa_signal_wait_scacquire(
            a,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            20_000_000,
            HSA_WAIT_STATE_BLOCKED,
        )
    };
    assert_eq!(
        still, 1,
        "a barrier-AND on an unsignalled dependency must hold its queue"
    );
    // SAFETY: a live signal.
    unsafe { hsa_signal_store_screlease(host, 0) };
    assert_eq!(wait_zero(a), 0);
    assert_eq!(wait_zero(b), 0);
    let ((sa, ea), (sb, eb)) = (dispatch_time(a), dispatch_time(b));
    assert!(
        sa < eb && sb < ea,
        "kernels on different queues overlap: {sa}..{ea} vs {sb}..{eb}"
    );
    // Ordering: qa's kernel waits for qb's kernel through a barrier-AND on its signal.
    let (c, d) = (signal(1), signal(1));
    submit(
        qa,
        &[
            barrier_and(&[d], hsa_signal_t::default()),
            dispatch(1024, 256, c, false),
        ],
    );
    submit(qb, &[dispatch(1 << 22, 256, d, false)]);
    assert_eq!(wait_zero(c), 0);
    let ((sc, _), (_, ed)) = (dispatch_time(c), dispatch_time(d));
    assert!(
        sc >= ed,
        "the dependent kernel started at {sc} before its dependency ended at {ed}"
    );
    // SAFETY: everything completed.
    unsafe {
        for s in [a, b, c, d, host] {
            ok(hsa_signal_destroy(s));
        }
        ok(hsa_queue_destroy(qa));
        ok(hsa_queue_destroy(qb));
    }
}

#[test]
fn queue_creation_validates_arguments() {
    init();
    let mut q = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    unsafe {
        assert_eq!(
            hsa_queue_create(
                gpu(),
                100,
                HSA_QUEUE_TYPE_MULTI,
                None,
                std::ptr::null_mut(),
                0,
                0,
                &mut q
            ),
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            hsa_queue_create(
                agents()[0],
                64,
                HSA_QUEUE_TYPE_MULTI,
                None,
                std::ptr::null_mut(),
                0,
                0,
                &mut q
            ),
            HSA_STATUS_ERROR_INVALID_AGENT
        );
        assert_eq!(
            hsa_amd_queue_intercept_create(
                gpu(),
                2,
                HSA_QUEUE_TYPE_MULTI,
                None,
                std::ptr::null_mut(),
                0,
                0,
                &mut q
            ),
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        let plain = queue(gpu(), 64);
        assert_eq!(
            hsa_amd_queue_intercept_register(plain, None, std::ptr::null_mut()),
            HSA_STATUS_ERROR_INVALID_QUEUE
        );
        let amd = plain as *const amd_queue_t;
        assert_eq!((*plain).size, 64);
        assert_eq!((*amd).hsa_queue.base_address as usize % 64, 0);
        let doorbell = (*plain).doorbell_signal.handle as *const amd_signal_t;
        assert_eq!((*doorbell).kind, AMD_SIGNAL_KIND_DOORBELL);
        assert_eq!((*doorbell).queue_ptr as usize, plain as usize);
        ok(hsa_queue_destroy(plain));
    }
}

#[test]
fn async_handlers_run_on_the_runtime_thread() {
    init();
    unsafe extern "C" fn handler(value: hsa_signal_value_t, arg: *mut c_void) -> bool {
        // SAFETY: `arg` is the AtomicU64 of the test.
        let seen = unsafe { &*(arg as *const AtomicU64) };
        seen.store(value as u64 + 100, Ordering::SeqCst);
        false
    }
    let seen = Box::leak(Box::new(AtomicU64::new(0)));
    let s = signal(5);
    let done = signal(1);
    // SAFETY: live signals; the handler's argument is leaked so it outlives the runtime thread.
    unsafe {
        ok(hsa_amd_signal_async_handler(
            s,
            HSA_SIGNAL_CONDITION_LT,
            3,
            Some(handler),
            seen as *const AtomicU64 as *mut c_void,
        ));
        hsa_signal_store_screlease(s, 2);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(seen.load(Ordering::SeqCst), 102);
    // SAFETY: live signals.
    unsafe {
        ok(hsa_signal_destroy(done));
    }
}

#[test]
fn waits_on_several_signals_and_dependent_copies() {
    init();
    let signals = [signal(1), signal(1), signal(1)];
    let later = signals[2];
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: a live signal.
        unsafe { hsa_signal_store_screlease(later, 0) };
    });
    let mut conds = [HSA_SIGNAL_CONDITION_EQ; 3];
    let mut values = [0i64; 3];
    let mut handles = signals;
    let mut seen = -1i64;
    // SAFETY: arrays of three elements.
    let index = unsafe {
        hsa_amd_signal_wait_any(
            3,
            handles.as_mut_ptr(),
            conds.as_mut_ptr(),
            values.as_mut_ptr(),
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED,
            &mut seen,
        )
    };
    setter.join().expect("setter thread");
    assert_eq!((index, seen), (2, 0));
    // SAFETY: arrays of three elements; nothing satisfies the conditions before the timeout.
    let timeout = unsafe {
        hsa_amd_signal_wait_any(
            2,
            handles.as_mut_ptr(),
            conds.as_mut_ptr(),
            values.as_mut_ptr(),
            5_000_000,
            HSA_WAIT_STATE_BLOCKED,
            &mut seen,
        )
    };
    assert_eq!(timeout, u32::MAX);
    // A copy that waits for a dependency.
    let src = vec![7u8; 256];
    let mut dst = vec![0u8; 256];
    let (dep, done) = (signals[0], signal(1));
    // SAFETY: both buffers outlive the copy (waited for below).
    unsafe {
        ok(hsa_amd_memory_async_copy(
            dst.as_mut_ptr() as *mut c_void,
            gpu(),
            src.as_ptr() as *const c_void,
            gpu(),
            256,
            1,
            &dep,
            done,
        ));
        let early = hsa_signal_wait_scacquire(
            done,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            10_000_000,
            HSA_WAIT_STATE_BLOCKED,
        );
        assert_eq!(early, 1, "the copy ran before its dependency");
        hsa_signal_store_relaxed(dep, 0);
    }
    assert_eq!(wait_zero(done), 0);
    assert_eq!(dst, src);
    // SAFETY: no longer used.
    unsafe {
        for s in signals.into_iter().chain([done]) {
            ok(hsa_signal_destroy(s));
        }
    }
}

#[test]
fn dispatch_timestamps_are_monotonic_per_queue() {
    init();
    let q = queue(gpu(), 256);
    // SAFETY: a live queue.
    unsafe { ok(hsa_amd_profiling_set_profiler_enabled(q, 1)) };
    let signals: Vec<hsa_signal_t> = (0..100).map(|_| signal(1)).collect();
    let packets: Vec<AqlPacket> = signals
        .iter()
        .enumerate()
        .map(|(i, s)| dispatch(64 << (i % 12), 64, *s, false))
        .collect();
    for chunk in packets.chunks(10) {
        submit(q, chunk);
    }
    let mut last_start = 0;
    for s in &signals {
        assert_eq!(wait_zero(*s), 0);
        let (start, end) = dispatch_time(*s);
        assert!(
            start >= last_start && end > start,
            "start {start} after {last_start}, end {end}"
        );
        last_start = start;
    }
    // SAFETY: everything completed.
    unsafe {
        for s in signals {
            ok(hsa_signal_destroy(s));
        }
        ok(hsa_queue_destroy(q));
    }
}

#[test]
fn pointer_info_describes_allocations() {
    init();
    unsafe extern "C" fn pools(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is a Vec of pools.
        unsafe { (*(data as *mut Vec<hsa_amd_memory_pool_t>)).push(pool) };
        HSA_STATUS_SUCCESS
    }
    unsafe extern "C" fn alloc(size: usize) -> *mut c_void {
        // SAFETY: plain malloc; freed by the test.
        unsafe { libc::malloc(size) }
    }
    let mut list: Vec<hsa_amd_memory_pool_t> = Vec::new();
    // SAFETY: the callback fills `list`; the info structs are sized by their `size` field.
    unsafe {
        ok(hsa_amd_agent_iterate_memory_pools(
            gpu(),
            Some(pools),
            &mut list as *mut _ as *mut c_void,
        ));
        let mut ptr: *mut c_void = std::ptr::null_mut();
        ok(hsa_amd_memory_pool_allocate(list[0], 8192, 0, &mut ptr));
        ok(hsa_amd_pointer_info_set_userdata(ptr, 0x77 as *mut c_void));
        let mut info = hsa_amd_pointer_info_t {
            size: std::mem::size_of::<hsa_amd_pointer_info_t>() as u32,
            ..Default::default()
        };
        let (mut count, mut agents) = (0u32, std::ptr::null_mut::<hsa_agent_t>());
        ok(hsa_amd_pointer_info(
            (ptr as *const u8).add(100) as *const c_void,
            &mut info,
            Some(alloc),
            &mut count,
            &mut agents,
        ));
        assert_eq!(info.type_, HSA_EXT_POINTER_TYPE_HSA);
        assert_eq!(info.agentBaseAddress, ptr);
        assert_eq!(info.sizeInBytes, 8192);
        assert_eq!(info.userData as usize, 0x77);
        assert_eq!(info.agentOwner, gpu());
        assert_eq!(info.global_flags, HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED);
        assert_eq!(count, 2);
        libc::free(agents as *mut c_void);
        let mut unknown = hsa_amd_pointer_info_t {
            size: std::mem::size_of::<hsa_amd_pointer_info_t>() as u32,
            ..Default::default()
        };
        let local = 5u64;
        ok(hsa_amd_pointer_info(
            &local as *const u64 as *const c_void,
            &mut unknown,
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        ));
        assert_eq!(unknown.type_, HSA_EXT_POINTER_TYPE_UNKNOWN);
        ok(hsa_amd_memory_pool_free(ptr));
    }
}
