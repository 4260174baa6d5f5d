//! Counters through the runtime's real queues: PM4-IB packets built with the simulator's PM4
//! commands, executed by the device thread around kernel dispatches on two queues.

use std::ffi::c_void;

use hsa_runtime64::gpu::pm4::{self, Command, ReadEntry, Select, Setup, Slot};
use hsa_runtime64::gpu::{self, KernelRun};

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Time {
    start: u64,
    end: u64,
}

#[repr(C)]
struct Queue {
    kind: u32,
    features: u32,
    base_address: *mut c_void,
    doorbell_signal: u64,
    size: u32,
    reserved1: u32,
    id: u64,
}

extern "C" {
    fn hsa_init() -> u32;
    fn hsa_iterate_agents(
        cb: unsafe extern "C" fn(u64, *mut c_void) -> u32,
        data: *mut c_void,
    ) -> u32;
    fn hsa_agent_get_info(agent: u64, attribute: u32, value: *mut c_void) -> u32;
    fn hsa_queue_create(
        agent: u64,
        size: u32,
        kind: u32,
        callback: *const c_void,
        data: *mut c_void,
        private_segment_size: u32,
        group_segment_size: u32,
        queue: *mut *mut Queue,
    ) -> u32;
    fn hsa_queue_add_write_index_relaxed(queue: *const Queue, value: u64) -> u64;
    fn hsa_signal_create(initial: i64, consumers: u32, list: *const u64, signal: *mut u64) -> u32;
    fn hsa_signal_store_relaxed(signal: u64, value: i64);
    fn hsa_signal_load_relaxed(signal: u64) -> i64;
    fn hsa_signal_wait_scacquire(
        signal: u64,
        condition: u32,
        compare: i64,
        timeout: u64,
        hint: u32,
    ) -> i64;
    fn hsa_amd_profiling_set_profiler_enabled(queue: *mut Queue, enable: i32) -> u32;
    fn hsa_amd_profiling_get_dispatch_time(agent: u64, signal: u64, time: *mut Time) -> u32;
}

const VENDOR: u16 = 0;

/// The GPU's counters see every kernel on it: one test at a time uses it.
static DEVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());
const DISPATCH: u16 = 2;
const BARRIER: u16 = 1 << 8;
const SYSTEM_FENCES: u16 = (2 << 9) | (2 << 11);

unsafe extern "C" fn first_gpu(agent: u64, data: *mut c_void) -> u32 {
    let mut device = 0u32;
    // SAFETY: HSA_AGENT_INFO_DEVICE writes a u32.
    unsafe { hsa_agent_get_info(agent, 17, (&mut device as *mut u32).cast()) };
    if device == 1 {
        // SAFETY: `data` is the test's u64.
        unsafe { *(data as *mut u64) = agent };
        return 1; // HSA_STATUS_INFO_BREAK
    }
    0
}

fn signal() -> u64 {
    let mut s = 0u64;
    // SAFETY: valid out-pointer.
    assert_eq!(
        unsafe { hsa_signal_create(1, 0, std::ptr::null(), &mut s) },
        0
    );
    s
}

/// Writes one 64-byte packet (header last) and rings the doorbell.
fn submit(queue: *mut Queue, header: u16, body: [u8; 64]) {
    let index = write(queue, header, body);
    // SAFETY: a live queue from hsa_queue_create.
    unsafe { hsa_signal_store_relaxed((*queue).doorbell_signal, index as i64) };
}

/// Writes one 64-byte packet (header last) without ringing the doorbell; returns its index.
fn write(queue: *mut Queue, header: u16, body: [u8; 64]) -> u64 {
    // SAFETY: a live queue from hsa_queue_create; the slot is reserved by the write index.
    unsafe {
        let index = hsa_queue_add_write_index_relaxed(queue, 1);
        let slot = ((*queue).base_address as *mut u8)
            .add((index % u64::from((*queue).size)) as usize * 64);
        std::ptr::copy_nonoverlapping(body.as_ptr().add(2), slot.add(2), 62);
        (*(slot as *const std::sync::atomic::AtomicU16))
            .store(header, std::sync::atomic::Ordering::Release);
        index
    }
}

fn pm4_packet(commands: &[u32], completion: u64) -> [u8; 64] {
    let mut p = [0u8; 64];
    pm4::fill_ib_packet(&mut p, commands.as_ptr() as u64, commands.len() as u32);
    p[56..64].copy_from_slice(&completion.to_le_bytes());
    p
}

fn dispatch_packet(grid: u32, kernel_object: u64, completion: u64) -> [u8; 64] {
    let mut p = [0u8; 64];
    p[2..4].copy_from_slice(&1u16.to_le_bytes());
    p[4..6].copy_from_slice(&256u16.to_le_bytes());
    p[6..8].copy_from_slice(&1u16.to_le_bytes());
    p[8..10].copy_from_slice(&1u16.to_le_bytes());
    p[12..16].copy_from_slice(&grid.to_le_bytes());
    p[16..20].copy_from_slice(&1u32.to_le_bytes());
    p[20..24].copy_from_slice(&1u32.to_le_bytes());
    p[32..40].copy_from_slice(&kernel_object.to_le_bytes());
    p[56..64].copy_from_slice(&completion.to_le_bytes());
    p
}

fn wait(signal: u64) {
    // SAFETY: a live signal; wait until it reaches 0.
    unsafe { hsa_signal_wait_scacquire(signal, 0, 0, u64::MAX, 0) };
}

fn time(agent: u64, signal: u64) -> Time {
    let mut t = Time::default();
    // SAFETY: valid out-pointer; the signal completed with profiling on.
    assert_eq!(
        unsafe { hsa_amd_profiling_get_dispatch_time(agent, signal, &mut t) },
        0
    );
    t
}

fn run_of(kernel: &'static str, grid: u32, queue: u64, t: Time) -> KernelRun<'static> {
    KernelRun {
        agent_node_id: 1,
        arch: "gfx942",
        device_index: 0,
        queue_id: queue,
        dispatch_index: 0,
        kernel,
        grid: [grid, 1, 1],
        workgroup: [256, 1, 1],
        group_segment_size: 0,
        private_segment_size: 0,
        wave_size: 64,
        start_ns: t.start,
        end_ns: t.end,
        computed: false,
        variation: None,
    }
}

/// SQ_WAVES and SQ_INSTS_VALU on every shader engine of every XCC of an MI300X.
fn commands(out: &mut [u64]) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let selects = [
        Select {
            slot: Slot {
                block: 6,
                instance: 0,
                register: 0,
            },
            event: 4,
            accum: 0,
        },
        Select {
            slot: Slot {
                block: 6,
                instance: 0,
                register: 1,
            },
            event: 26,
            accum: 0,
        },
    ];
    let entries: Vec<ReadEntry> = (0..8)
        .flat_map(|xcc| {
            selects.iter().map(move |s| ReadEntry {
                slot: s.slot,
                xcc,
                samples: 4,
            })
        })
        .collect();
    let setup = Setup {
        arch: "gfx942".into(),
        xcc: 8,
        se: 32,
        sa_per_se: 1,
        cu: 304,
    };
    (
        pm4::encode_all(&[Command::PmcStart(selects.to_vec())]),
        pm4::encode_all(&[Command::PmcRead {
            setup,
            dst: out.as_mut_ptr() as u64,
            entries,
        }]),
        pm4::encode_all(&[Command::PmcStop(selects.iter().map(|s| s.slot).collect())]),
    )
}

/// Ground truth of (SQ_WAVES, SQ_INSTS_VALU) laid out as the read writes them.
fn expected(run: &KernelRun) -> Vec<u64> {
    let t = gpu::ground_truth(run, &["SQ_WAVES", "SQ_INSTS_VALU"]).expect("counters");
    (0..8)
        .flat_map(|x| [&t[0].1[x * 4..x * 4 + 4], &t[1].1[x * 4..x * 4 + 4]].concat())
        .collect()
}

/// The share of `total` a kernel from `s` to `e` produces between `a` and `b`.
fn share(total: u64, s: u64, e: u64, a: u64, b: u64) -> u64 {
    let produced = |t: u64| {
        if t <= s {
            0
        } else if t >= e {
            total
        } else {
            (u128::from(total) * u128::from(t - s) / u128::from(e - s)) as u64
        }
    };
    produced(b) - produced(a)
}

/// The simulated GPU, the runtime initialised.
fn gpu() -> u64 {
    // SAFETY: plain HSA calls with valid arguments.
    unsafe {
        assert_eq!(hsa_init(), 0);
        let mut agent = 0u64;
        hsa_iterate_agents(first_gpu, (&mut agent as *mut u64).cast());
        assert_ne!(agent, 0, "no GPU agent");
        agent
    }
}

/// A new queue of 64 packets on `agent`, with dispatch timestamps on.
fn profiled_queue(agent: u64) -> *mut Queue {
    let mut queue = std::ptr::null_mut::<Queue>();
    // SAFETY: valid arguments and out-pointer.
    unsafe {
        assert_eq!(
            hsa_queue_create(
                agent,
                64,
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
                u32::MAX,
                u32::MAX,
                &mut queue
            ),
            0
        );
        hsa_amd_profiling_set_profiler_enabled(queue, 1);
    }
    queue
}

#[test]
fn counting_windows_on_real_queues() {
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: plain HSA calls with valid arguments.
    unsafe {
        let agent = gpu();
        let queues = [profiled_queue(agent), profiled_queue(agent)];

        // One kernel alone inside a window reads exactly its ground truth, its packets
        // written together and rung once, as a profiler does.
        let mut out = vec![0u64; 64];
        let (start, read, stop) = commands(&mut out);
        let (s_start, s_kernel, s_read) = (signal(), signal(), signal());
        write(
            queues[0],
            VENDOR | BARRIER | SYSTEM_FENCES,
            pm4_packet(&start, s_start),
        );
        write(
            queues[0],
            DISPATCH | BARRIER | SYSTEM_FENCES,
            dispatch_packet(1 << 20, 0x1000, s_kernel),
        );
        write(
            queues[0],
            VENDOR | BARRIER | SYSTEM_FENCES,
            pm4_packet(&read, s_read),
        );
        submit(
            queues[0],
            VENDOR | BARRIER | SYSTEM_FENCES,
            pm4_packet(&stop, 0),
        );
        wait(s_read);
        let k = run_of(
            "kernel_0x1000",
            1 << 20,
            (*queues[0]).id,
            time(agent, s_kernel),
        );
        assert_eq!(out, expected(&k));

        // A kernel on the second queue that overlaps the window mixes into it.
        let mut mixed = vec![0u64; 64];
        let (start, read, _) = commands(&mut mixed);
        let (s_start, s_a, s_b, s_read) = (signal(), signal(), signal(), signal());
        submit(
            queues[0],
            VENDOR | BARRIER | SYSTEM_FENCES,
            pm4_packet(&start, s_start),
        );
        // b goes first so that it starts inside the window however the threads are scheduled.
        submit(
            queues[1],
            DISPATCH | SYSTEM_FENCES,
            dispatch_packet(1 << 21, 0x3000, s_b),
        );
        write(
            queues[0],
            DISPATCH | BARRIER | SYSTEM_FENCES,
            dispatch_packet(1 << 22, 0x2000, s_a),
        );
        submit(
            queues[0],
            VENDOR | BARRIER | SYSTEM_FENCES,
            pm4_packet(&read, s_read),
        );
        wait(s_read);
        wait(s_b);
        let window = (time(agent, s_start).start, time(agent, s_read).start);
        let a = run_of("kernel_0x2000", 1 << 22, (*queues[0]).id, time(agent, s_a));
        let b = run_of("kernel_0x3000", 1 << 21, (*queues[1]).id, time(agent, s_b));
        assert!(
            b.start_ns < window.1 && b.end_ns > window.0,
            "the kernels must overlap"
        );
        let with_b: Vec<u64> = expected(&a)
            .iter()
            .zip(expected(&b))
            .map(|(&va, vb)| {
                share(va, a.start_ns, a.end_ns, window.0, window.1)
                    + share(vb, b.start_ns, b.end_ns, window.0, window.1)
            })
            .collect();
        assert_eq!(mixed, with_b);
        assert_ne!(mixed, expected(&a));
    }
}

#[test]
fn packets_run_once_the_doorbell_names_them() {
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: plain HSA calls with valid arguments.
    unsafe {
        let queue = profiled_queue(gpu());
        // Two packets written, headers valid, the doorbell naming the first: the command
        // processor runs the first only, as on hardware, however far the write index is.
        let (first, second) = (signal(), signal());
        let packet = |completion| dispatch_packet(64, 0x1000, completion);
        let index = write(queue, DISPATCH | BARRIER | SYSTEM_FENCES, packet(first));
        let later = write(queue, DISPATCH | BARRIER | SYSTEM_FENCES, packet(second));
        assert_eq!(later, index + 1);
        hsa_signal_store_relaxed((*queue).doorbell_signal, index as i64);
        wait(first);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(
            hsa_signal_load_relaxed(second),
            1,
            "ran before its doorbell"
        );
        hsa_signal_store_relaxed((*queue).doorbell_signal, later as i64);
        wait(second);
    }
}
