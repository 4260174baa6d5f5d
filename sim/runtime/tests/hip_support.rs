//! What HIP needs from the runtime beyond kernels: copies that take simulated time on the
//! device clock (linear and rect), queue priorities and CU masks validated as ROCr validates
//! them, and SVM reported unsupported (its attribute functions are not implemented), so HIP
//! takes its host-memory path for managed memory.

mod support;

use hsa_runtime64::copies::{copy_duration_ns, hsa_pitched_ptr_t, COPY_BASE_NS};
use std::ffi::c_void;
use support::*;

/// `hsa_amd_copy_direction_t`.
const HOST_TO_HOST: u32 = 0;
const HOST_TO_DEVICE: u32 = 1;

#[test]
fn copies_complete_after_their_simulated_time() {
    init();
    // SAFETY: profiling flag only.
    ok(unsafe { hsa_amd_profiling_async_copy_enable(true) });
    let src: Vec<u8> = (0..=255).cycle().take(100_000).collect();
    let mut dst = vec![0u8; 100_000];
    let done = signal(1);
    // SAFETY: both buffers outlive the copy (waited for below).
    unsafe {
        ok(hsa_amd_memory_async_copy(
            dst.as_mut_ptr() as *mut c_void,
            gpu(),
            src.as_ptr() as *const c_void,
            agents()[0],
            src.len(),
            0,
            std::ptr::null(),
            done,
        ));
    }
    assert_eq!(wait_zero(done), 0);
    let mut now = 0u64;
    // SAFETY: u64 out-pointer.
    ok(unsafe {
        hsa_system_get_info(
            HSA_SYSTEM_INFO_TIMESTAMP,
            &mut now as *mut u64 as *mut c_void,
        )
    });
    let mut time = hsa_amd_profiling_async_copy_time_t::default();
    // SAFETY: a live signal and an out-pointer of the type.
    ok(unsafe { hsa_amd_profiling_get_async_copy_time(done, &mut time) });
    assert_eq!(
        time.end - time.start,
        COPY_BASE_NS + 4_000,
        "100 kB at 25 B/ns"
    );
    assert_eq!(copy_duration_ns(100_000), COPY_BASE_NS + 4_000);
    assert!(
        now >= time.end,
        "completed before its end: {now} < {}",
        time.end
    );
    assert_eq!(dst, src);
    // SAFETY: no longer used.
    ok(unsafe { hsa_signal_destroy(done) });
}

#[test]
fn rect_copies_move_boxes_between_pitched_buffers() {
    init();
    // A 3-byte x 2-row x 2-slice box from (1, 1, 0) of an 8-byte-pitch source to (2, 0, 1) of a
    // 5-byte-pitch destination.
    let src: Vec<u8> = (0..64).collect();
    let mut dst = vec![0u8; 40];
    let src_ptr = hsa_pitched_ptr_t {
        base: src.as_ptr() as *mut c_void,
        pitch: 8,
        slice: 32,
    };
    let dst_ptr = hsa_pitched_ptr_t {
        base: dst.as_mut_ptr() as *mut c_void,
        pitch: 5,
        slice: 15,
    };
    let (src_at, dst_at) = (
        hsa_dim3_t { x: 1, y: 1, z: 0 },
        hsa_dim3_t { x: 2, y: 0, z: 1 },
    );
    let range = hsa_dim3_t { x: 3, y: 2, z: 2 };
    let copy = |dir: u32, range: &hsa_dim3_t, done: hsa_signal_t| {
        // SAFETY: every structure and buffer outlives the copy (waited for below).
        unsafe {
            hsa_amd_memory_async_copy_rect(
                &dst_ptr as *const hsa_pitched_ptr_t as *const c_void,
                &dst_at,
                &src_ptr as *const hsa_pitched_ptr_t as *const c_void,
                &src_at,
                range,
                gpu(),
                dir,
                0,
                std::ptr::null(),
                done,
            )
        }
    };
    let done = signal(1);
    ok(copy(HOST_TO_DEVICE, &range, done));
    assert_eq!(wait_zero(done), 0);
    let mut want = vec![0u8; 40];
    for (z, y) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        let from = 1 + 8 * (y + 1) + 32 * z;
        let to = 2 + 5 * y + 15 * (z + 1);
        want[to..to + 3].copy_from_slice(&src[from..from + 3]);
    }
    assert_eq!(dst, want);

    let refused = HSA_STATUS_ERROR_INVALID_ARGUMENT;
    assert_eq!(copy(HOST_TO_HOST, &range, done), refused);
    assert_eq!(copy(4, &range, done), refused);
    let wide = hsa_dim3_t { x: 6, y: 1, z: 1 };
    assert_eq!(
        copy(HOST_TO_DEVICE, &wide, done),
        refused,
        "rows wider than 5"
    );
    // SAFETY: no longer used.
    ok(unsafe { hsa_signal_destroy(done) });
}

#[test]
fn queue_priorities_are_hints_and_cu_masks_must_keep_every_cu() {
    init();
    let q = queue(gpu(), 64);
    // SAFETY: a live queue (and a dangling pointer the runtime must recognise as none).
    unsafe {
        for priority in 0..=2 {
            ok(hsa_amd_queue_set_priority(q, priority));
        }
        assert_eq!(
            hsa_amd_queue_set_priority(q, 3),
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        let not_a_queue = std::ptr::dangling_mut::<hsa_queue_t>();
        assert_eq!(
            hsa_amd_queue_set_priority(not_a_queue, 1),
            HSA_STATUS_ERROR_INVALID_QUEUE
        );

        // The default MI300X has 304 compute units: ten words.
        let all = [u32::MAX; 10];
        ok(hsa_amd_queue_cu_set_mask(q, 320, all.as_ptr()));
        ok(hsa_amd_queue_cu_set_mask(q, 0, std::ptr::null()));
        let mut fewer = all;
        fewer[9] = 0xffff; // CUs 288..303 on
        ok(hsa_amd_queue_cu_set_mask(q, 320, fewer.as_ptr()));
        fewer[9] = 0x7fff; // CU 303 off
        assert_eq!(
            hsa_amd_queue_cu_set_mask(q, 320, fewer.as_ptr()),
            HSA_STATUS_ERROR
        );
        assert_eq!(
            hsa_amd_queue_cu_set_mask(q, 64, all.as_ptr()),
            HSA_STATUS_ERROR,
            "a mask of 64 CUs leaves the others off"
        );
        assert_eq!(
            hsa_amd_queue_cu_set_mask(q, 33, all.as_ptr()),
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            hsa_amd_queue_cu_set_mask(q, 32, std::ptr::null()),
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        ok(hsa_queue_destroy(q));
    }
}

#[test]
fn svm_is_reported_unsupported() {
    init();
    let mut supported = true;
    // SAFETY: bool out-pointer.
    ok(unsafe {
        hsa_system_get_info(
            HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED,
            &mut supported as *mut bool as *mut c_void,
        )
    });
    assert!(!supported);
}
