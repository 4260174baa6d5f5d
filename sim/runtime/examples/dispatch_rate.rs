//! Pushes many tiny dispatches through the simulated runtime and reports the host cost per
//! dispatch, on a plain queue and on an intercept queue with a pass-through handler.
//!
//! `cargo run --release -p rtl-sim-runtime --example dispatch_rate -- [dispatches]`

use hsa_runtime64::api::exports::*;
use hsa_runtime64::hsa::*;
use std::ffi::c_void;
use std::time::Instant;

unsafe extern "C" fn pick_gpu(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
    let mut device = 0u32;
    // SAFETY: u32 attribute; `data` is an hsa_agent_t.
    unsafe {
        hsa_agent_get_info(
            agent,
            HSA_AGENT_INFO_DEVICE,
            &mut device as *mut u32 as *mut c_void,
        );
        if device == HSA_DEVICE_TYPE_GPU {
            *(data as *mut hsa_agent_t) = agent;
        }
    }
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn pass_through(
    pkts: *const c_void,
    count: u64,
    _index: u64,
    _data: *mut c_void,
    writer: hsa_amd_queue_intercept_packet_writer,
) {
    if let Some(w) = writer {
        // SAFETY: forwarding the handler's packets.
        unsafe { w(pkts, count) };
    }
}

fn run(queue: *mut hsa_queue_t, n: u64) -> f64 {
    let mut done = hsa_signal_t::default();
    // SAFETY: the queue is live; slots are reserved before being written.
    unsafe {
        hsa_signal_create(n as i64, 0, std::ptr::null(), &mut done);
        let start = Instant::now();
        let size = (*queue).size as u64;
        let ring = (*queue).base_address as *mut hsa_kernel_dispatch_packet_t;
        for _ in 0..n {
            let index = hsa_queue_add_write_index_relaxed(queue, 1);
            while index - hsa_queue_load_read_index_scacquire(queue) >= size {
                std::thread::yield_now();
            }
            let slot = ring.add((index % size) as usize);
            let mut p = hsa_kernel_dispatch_packet_t {
                setup: 1,
                workgroup_size_x: 64,
                workgroup_size_y: 1,
                workgroup_size_z: 1,
                grid_size_x: 64,
                grid_size_y: 1,
                grid_size_z: 1,
                completion_signal: done,
                ..Default::default()
            };
            let header = packet_header(
                HSA_PACKET_TYPE_KERNEL_DISPATCH,
                true,
                HSA_FENCE_SCOPE_SYSTEM,
                HSA_FENCE_SCOPE_SYSTEM,
            );
            p.header = HSA_PACKET_TYPE_INVALID;
            std::ptr::write(slot, p);
            std::sync::atomic::AtomicU16::from_ptr(slot as *mut u16)
                .store(header, std::sync::atomic::Ordering::Release);
            hsa_signal_store_screlease((*queue).doorbell_signal, index as i64);
        }
        hsa_signal_wait_scacquire(
            done,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED,
        );
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        hsa_signal_destroy(done);
        ns
    }
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    // SAFETY: plain HSA calls on objects created here.
    unsafe {
        hsa_init();
        let mut gpu = hsa_agent_t::default();
        hsa_iterate_agents(Some(pick_gpu), &mut gpu as *mut hsa_agent_t as *mut c_void);
        let mut plain = std::ptr::null_mut();
        hsa_queue_create(
            gpu,
            1024,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut plain,
        );
        println!(
            "plain queue:     {:8.0} ns/dispatch ({n} dispatches)",
            run(plain, n)
        );
        let mut proxy = std::ptr::null_mut();
        hsa_amd_queue_intercept_create(
            gpu,
            1024,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut proxy,
        );
        hsa_amd_queue_intercept_register(proxy, Some(pass_through), std::ptr::null_mut());
        println!(
            "intercept queue: {:8.0} ns/dispatch ({n} dispatches)",
            run(proxy, n)
        );
        hsa_queue_destroy(plain);
        hsa_queue_destroy(proxy);
        hsa_shut_down();
    }
}
