//! Shared test harness: the library's entry points as C sees them, a stand-in for the HSA runtime's
//! `hsa_agent_get_info`, and runs a private copy of the simulated GPU so tests can execute the
//! packets the library builds.

#![allow(dead_code)]

#[path = "../../../runtime/src/gpu/mod.rs"]
#[allow(unused)]
pub mod gpu;

use std::ffi::{c_char, c_void, CString};

use gpu::pm4::parse_ib_packet;

pub const SUCCESS: u32 = 0;
pub const ERROR: u32 = 0x1000;
pub const INVALID_ARGUMENT: u32 = 0x1001;

/// Block-name enum values used by the tests.
pub const GRBM: u32 = 3;
pub const SQ: u32 = 6;
pub const TA: u32 = 10;
pub const TCC: u32 = 12;

/// HSA agent handles the stub runtime knows: an MI300X (gfx942), an MI210 (gfx90a) and an
/// MI355X (gfx950).
pub const MI300X: u64 = 0x942;
pub const MI210: u64 = 0x90a;
pub const MI355X: u64 = 0x950;

/// The stub runtime's `hsa_agent_get_info`, found by the library through `dlsym(RTLD_DEFAULT)`.
///
/// # Safety
/// `value` must be large enough for the attribute.
#[no_mangle]
pub unsafe extern "C" fn hsa_agent_get_info(agent: u64, attribute: u32, value: *mut c_void) -> u32 {
    let (name, xcc, se, sa, cu): (&[u8], u32, u32, u32, u32) = match agent {
        MI300X => (b"gfx942\0", 8, 32, 1, 304),
        MI210 => (b"gfx90a\0", 1, 8, 1, 104),
        MI355X => (b"gfx950\0", 8, 32, 1, 256),
        _ => return 0x1004,
    };
    let number = match attribute {
        0 => {
            // SAFETY: the name attribute has room for 64 bytes.
            unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), value as *mut u8, name.len()) };
            return SUCCESS;
        }
        0xA111 => xcc,
        0xA00C => se,
        0xA00D => sa,
        0xA002 => cu,
        _ => return INVALID_ARGUMENT,
    };
    // SAFETY: numeric attributes are u32.
    unsafe { *(value as *mut u32) = number };
    SUCCESS
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmcEvent {
    pub block_index: u32,
    pub event_id: u32,
    pub flags: u32,
    pub block_name: u32,
}

#[repr(C)]
pub struct AgentInfo {
    pub gfxip: *const c_char,
    pub xcc: u32,
    pub se: u32,
    pub cu: u32,
    pub sa_per_se: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PmcProfile {
    pub agent: u64,
    pub events: *const PmcEvent,
    pub count: u32,
}

pub type Packet = [u8; 64];

#[repr(C)]
pub struct Packets {
    pub start: Packet,
    pub stop: Packet,
    pub read: Packet,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacyEvent {
    pub block_name: u32,
    pub block_index: u32,
    pub counter_id: u32,
}

#[repr(C)]
pub struct Descriptor {
    pub ptr: *mut c_void,
    pub size: u32,
}

#[repr(C)]
pub struct LegacyProfile {
    pub agent: u64,
    pub type_: u32,
    pub events: *const LegacyEvent,
    pub count: u32,
    pub parameters: *const c_void,
    pub parameter_count: u32,
    pub output: Descriptor,
    pub command: Descriptor,
}

#[repr(C)]
pub struct InfoData {
    pub sample_id: u32,
    pub pmc_data: PmcData,
}

/// The `pmc_data` member of the info union (8-byte aligned).
#[repr(C)]
pub struct PmcData {
    pub event: LegacyEvent,
    pub result: u64,
}

type AllocCb = unsafe extern "C" fn(*mut *mut c_void, u64, u32, *mut c_void) -> u32;
type DeallocCb = unsafe extern "C" fn(*mut c_void, *mut c_void);
type CopyCb = unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void) -> u32;
type DataCb = unsafe extern "C" fn(PmcEvent, u64, u64, *mut c_void) -> u32;
type LegacyDataCb = unsafe extern "C" fn(u32, *mut InfoData, *mut c_void) -> u32;
type CoordCb = unsafe extern "C" fn(i32, i32, i32, i32, *const c_char, *mut c_void) -> u32;

/// Entry points of the library under test.
pub struct Lib {
    pub register_agent: unsafe extern "C" fn(*mut u64, *const AgentInfo) -> u32,
    pub get_pmc_info: unsafe extern "C" fn(*const PmcProfile, u32, *mut c_void) -> u32,
    pub validate: unsafe extern "C" fn(u64, *const PmcEvent, *mut bool) -> u32,
    pub create_packets: unsafe extern "C" fn(
        *mut u64,
        *mut Packets,
        PmcProfile,
        Option<AllocCb>,
        Option<DeallocCb>,
        Option<CopyCb>,
        *mut c_void,
    ) -> u32,
    pub delete_packets: unsafe extern "C" fn(u64),
    pub iterate_data: unsafe extern "C" fn(u64, DataCb, *mut c_void) -> u32,
    pub iterate_coord: unsafe extern "C" fn(u64, PmcEvent, u64, CoordCb, *mut c_void) -> u32,
    pub legacy_start: unsafe extern "C" fn(*mut LegacyProfile, *mut Packet) -> u32,
    pub legacy_stop: unsafe extern "C" fn(*const LegacyProfile, *mut Packet) -> u32,
    pub legacy_read: unsafe extern "C" fn(*const LegacyProfile, *mut Packet) -> u32,
    pub legacy_get_info: unsafe extern "C" fn(*const LegacyProfile, u32, *mut c_void) -> u32,
    pub legacy_iterate:
        unsafe extern "C" fn(*const LegacyProfile, LegacyDataCb, *mut c_void) -> u32,
    pub legacy_validate: unsafe extern "C" fn(u64, *const LegacyEvent, *mut bool) -> u32,
}

/// A function pointer of type `T` to the same code as `p`.
///
/// # Safety
/// `T` must be a function pointer type with the C signature of `p`.
unsafe fn entry<T>(p: *const ()) -> T {
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*const ()>());
    // SAFETY: same size; the caller guarantees the signature.
    unsafe { std::mem::transmute_copy(&p) }
}

/// The library's entry points, typed as a C caller sees them.
pub fn lib() -> &'static Lib {
    use hsa_amd_aqlprofile64::{legacy as l, v2};
    static LIB: std::sync::OnceLock<Lib> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: the test's structs have the layouts of the library's C types, so each entry
        // point keeps its C signature.
        unsafe {
            Lib {
                register_agent: entry(v2::aqlprofile_register_agent as *const ()),
                get_pmc_info: entry(v2::aqlprofile_get_pmc_info as *const ()),
                validate: entry(v2::aqlprofile_validate_pmc_event as *const ()),
                create_packets: entry(v2::aqlprofile_pmc_create_packets as *const ()),
                delete_packets: entry(v2::aqlprofile_pmc_delete_packets as *const ()),
                iterate_data: entry(v2::aqlprofile_pmc_iterate_data as *const ()),
                iterate_coord: entry(v2::aqlprofile_iterate_event_coord as *const ()),
                legacy_start: entry(l::hsa_ven_amd_aqlprofile_start as *const ()),
                legacy_stop: entry(l::hsa_ven_amd_aqlprofile_stop as *const ()),
                legacy_read: entry(l::hsa_ven_amd_aqlprofile_read as *const ()),
                legacy_get_info: entry(l::hsa_ven_amd_aqlprofile_get_info as *const ()),
                legacy_iterate: entry(l::hsa_ven_amd_aqlprofile_iterate_data as *const ()),
                legacy_validate: entry(l::hsa_ven_amd_aqlprofile_validate_event as *const ()),
            }
        }
    })
}

thread_local! {
    static ALLOCATIONS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The sizes of the buffers the library allocated on this thread since the last call.
pub fn take_allocations() -> Vec<u64> {
    ALLOCATIONS.with(|a| std::mem::take(&mut *a.borrow_mut()))
}

unsafe extern "C" fn alloc(ptr: *mut *mut c_void, size: u64, _flags: u32, _ud: *mut c_void) -> u32 {
    ALLOCATIONS.with(|a| a.borrow_mut().push(size));
    // SAFETY: zeroed host memory, as the SDK's allocator gives.
    unsafe { *ptr = libc::calloc(1, size as usize) };
    SUCCESS
}

unsafe extern "C" fn dealloc(ptr: *mut c_void, _ud: *mut c_void) {
    // SAFETY: memory from `alloc`.
    unsafe { libc::free(ptr) };
}

unsafe extern "C" fn copy(dst: *mut c_void, src: *const c_void, n: usize, _ud: *mut c_void) -> u32 {
    // SAFETY: buffers given by the library.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, n) };
    SUCCESS
}

/// Registers a v2 agent.
pub fn register(arch: &str, xcc: u32, se: u32, cu: u32, sa_per_se: u32) -> u64 {
    let name = CString::new(arch).expect("arch");
    let info = AgentInfo {
        gfxip: name.as_ptr(),
        xcc,
        se,
        cu,
        sa_per_se,
    };
    let mut handle = 0u64;
    // SAFETY: valid arguments.
    let status = unsafe { (lib().register_agent)(&mut handle, &info) };
    assert_eq!(status, SUCCESS);
    handle
}

/// A v2 session: its handle and packets.
pub struct Session {
    pub handle: u64,
    pub packets: Packets,
}

/// Creates v2 packets, or returns the status.
pub fn create(agent: u64, events: &[PmcEvent]) -> Result<Session, u32> {
    let profile = PmcProfile {
        agent,
        events: events.as_ptr(),
        count: events.len() as u32,
    };
    let mut packets = Packets {
        start: [0; 64],
        stop: [0; 64],
        read: [0; 64],
    };
    let mut handle = 0u64;
    // SAFETY: valid arguments; callbacks above.
    let status = unsafe {
        (lib().create_packets)(
            &mut handle,
            &mut packets,
            profile,
            Some(alloc),
            Some(dealloc),
            Some(copy),
            std::ptr::null_mut(),
        )
    };
    if status == SUCCESS {
        Ok(Session { handle, packets })
    } else {
        Err(status)
    }
}

/// Executes a PM4-IB packet on the private GPU copy.
pub fn execute(device: u32, packet: &Packet, now: u64) {
    let (addr, size) = parse_ib_packet(packet).expect("a PM4-IB packet");
    gpu::execute_pm4_ib(device, addr, size, now);
}

unsafe extern "C" fn collect(event: PmcEvent, id: u64, value: u64, ud: *mut c_void) -> u32 {
    // SAFETY: `ud` is the Vec passed by `samples`.
    let out = unsafe { &mut *(ud as *mut Vec<(PmcEvent, u64, u64)>) };
    out.push((event, id, value));
    SUCCESS
}

/// Every v2 sample (event, sample id, value) in iteration order.
pub fn samples(session: &Session) -> Vec<(PmcEvent, u64, u64)> {
    let mut out: Vec<(PmcEvent, u64, u64)> = Vec::new();
    // SAFETY: valid handle and callback.
    let status =
        unsafe { (lib().iterate_data)(session.handle, collect, (&mut out as *mut Vec<_>).cast()) };
    assert_eq!(status, SUCCESS);
    out
}

unsafe extern "C" fn collect_legacy(_kind: u32, info: *mut InfoData, ud: *mut c_void) -> u32 {
    // SAFETY: `ud` is the Vec passed by `legacy_samples`; `info` is valid for the call.
    let (out, info) = unsafe { (&mut *(ud as *mut Vec<(LegacyEvent, u32, u64)>), &*info) };
    out.push((info.pmc_data.event, info.sample_id, info.pmc_data.result));
    SUCCESS
}

/// A legacy profile with buffers sized by a first `start` call.
pub struct Legacy {
    pub profile: LegacyProfile,
    pub events: Vec<LegacyEvent>,
    buffers: Vec<Vec<u64>>,
}

impl Legacy {
    /// Sizes and allocates the buffers and fills `start`; returns the status of the second call.
    pub fn new(agent: u64, events: Vec<LegacyEvent>, start: &mut Packet) -> Result<Legacy, u32> {
        let mut l = Legacy {
            profile: LegacyProfile {
                agent,
                type_: 0,
                events: events.as_ptr(),
                count: events.len() as u32,
                parameters: std::ptr::null(),
                parameter_count: 0,
                output: Descriptor {
                    ptr: std::ptr::null_mut(),
                    size: 0,
                },
                command: Descriptor {
                    ptr: std::ptr::null_mut(),
                    size: 0,
                },
            },
            events,
            buffers: Vec::new(),
        };
        // SAFETY: valid profile; NULL buffers ask for sizes.
        let status = unsafe { (lib().legacy_start)(&mut l.profile, start) };
        if status != SUCCESS {
            return Err(status);
        }
        for size in [l.profile.output.size, l.profile.command.size] {
            l.buffers.push(vec![0u64; (size as usize).div_ceil(8)]);
        }
        l.profile.output.ptr = l.buffers[0].as_mut_ptr().cast();
        l.profile.command.ptr = l.buffers[1].as_mut_ptr().cast();
        l.profile.events = l.events.as_ptr();
        // SAFETY: buffers of the sizes asked for.
        match unsafe { (lib().legacy_start)(&mut l.profile, start) } {
            SUCCESS => Ok(l),
            status => Err(status),
        }
    }

    /// Every legacy sample (event, sample id, value) in iteration order.
    pub fn samples(&self) -> Vec<(LegacyEvent, u32, u64)> {
        let mut out: Vec<(LegacyEvent, u32, u64)> = Vec::new();
        // SAFETY: valid profile and callback.
        let status = unsafe {
            (lib().legacy_iterate)(
                &self.profile,
                collect_legacy,
                (&mut out as *mut Vec<_>).cast(),
            )
        };
        assert_eq!(status, SUCCESS);
        out
    }
}

/// A kernel run on `device` from `start` to `end`.
pub fn run(
    device: u32,
    queue: u64,
    kernel: &'static str,
    grid: u32,
    start: u64,
    end: u64,
) -> gpu::KernelRun<'static> {
    gpu::KernelRun {
        agent_node_id: 1 + device,
        arch: "gfx942",
        device_index: device,
        queue_id: queue,
        dispatch_index: 0,
        kernel,
        grid: [grid, 1, 1],
        workgroup: [256, 1, 1],
        group_segment_size: 0,
        private_segment_size: 0,
        wave_size: 64,
        start_ns: start,
        end_ns: end,
        computed: false,
        variation: None,
    }
}

/// Runs kernel `k` on `device` between `session`'s start packet, at its start, and its read
/// packet, at its end, as a counted dispatch's packets surround it.
pub fn count_around(device: u32, session: &Session, k: &gpu::KernelRun) {
    gpu::kernel_started(k);
    execute(device, &session.packets.start, k.start_ns);
    execute(device, &session.packets.read, k.end_ns);
}

/// Ground truth of one counter for `run`.
pub fn truth(run: &gpu::KernelRun, counter: &str) -> Vec<u64> {
    gpu::ground_truth(run, &[counter])
        .expect("a basic counter")
        .remove(0)
        .1
}

/// Runs `body` in a fresh process of this test executable with `env` set, so that settings the
/// library reads once per process apply. `name` is the calling test's name.
pub fn in_child(name: &str, env: &[(&str, &str)], body: impl FnOnce()) {
    const MARKER: &str = "RTL_SIM_AQLPROFILE_TEST_CHILD";
    if std::env::var(MARKER).is_ok_and(|v| v == name) {
        body();
        return;
    }
    let exe = std::env::current_exe().expect("test executable");
    let output = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(MARKER, name)
        .envs(env.iter().copied())
        .output()
        .expect("run the test in a child process");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && text.contains("1 passed"),
        "child failed:\n{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
