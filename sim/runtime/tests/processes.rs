//! Scenarios that need their own process (environment read once, tools loaded at the first
//! `hsa_init`): table versions per `RTL_SIM_ROCM`, both intercept modes under several threads,
//! handler stacking and intercept markers, tools loading order and failure reporting, fault
//! injection and device configurations. Each test re-runs this binary's ignored `child` test.

mod support;

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use support::*;

#[test]
#[ignore = "run by the other tests in a child process"]
fn child() {
    let scenario = std::env::var(SCENARIO).expect("run through run_child");
    match scenario.as_str() {
        "tables" => tables(),
        "intercept" => intercept(),
        "stacking" => stacking(),
        "tools" => tools(),
        "tools_no_shutdown" => init(),
        "faults" => faults(),
        "devices" => devices(),
        "extensions" => extensions(),
        "refcount" => refcount(),
        other => panic!("unknown scenario {other}"),
    }
}

// ---- table versions ----

unsafe extern "C" fn fake_system_info(
    _attribute: hsa_system_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    // SAFETY: the test passes a u64.
    unsafe { *(value as *mut u64) = 4242 };
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn fake_intercept_create(
    _agent: hsa_agent_t,
    _size: u32,
    _type: hsa_queue_type32_t,
    _callback: hsa_queue_error_callback,
    _data: *mut c_void,
    _private: u32,
    _group: u32,
    _queue: *mut *mut hsa_queue_t,
) -> hsa_status_t {
    0x1234
}

fn tables() {
    init();
    let root = hsa_runtime64::api::root_table();
    // SAFETY: the live tables.
    unsafe {
        let r = &*root;
        let amd = r.amd_ext_;
        let v = |t: &ApiTableVersion| format!("{}.{}.{}", t.major_id, t.minor_id, t.step_id);
        println!(
            "root={} core={} amd_ext={}",
            v(&r.version),
            v(&(*r.core_).version),
            v(&(*amd).version)
        );
        println!(
            "tools={} pcs={}",
            !r.tools_.is_null(),
            !r.pc_sampling_ext_.is_null()
        );
        for (field, _, offset) in AmdExtTable::ENTRIES {
            if field.contains("queue_intercept") {
                let mapped = AmdExtTable::offset_in(&(*amd).version, *offset)
                    .expect("intercept entries exist");
                let entry = std::ptr::read((amd as *const u8).add(mapped) as *const usize);
                println!("{field}@{mapped} set={}", entry != 0);
            }
        }
        // Patching the AMD table where this release keeps intercept_create redirects the export.
        let create = std::mem::offset_of!(AmdExtTable, hsa_amd_queue_intercept_create_fn);
        let mapped =
            AmdExtTable::offset_in(&(*amd).version, create).expect("intercept_create exists");
        let slot = (amd as *mut u8).add(mapped) as *mut usize;
        let saved_create = *slot;
        *slot = fake_intercept_create as *const () as usize;
        let mut q = std::ptr::null_mut();
        let status = hsa_amd_queue_intercept_create(
            gpu(),
            64,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut q,
        );
        *slot = saved_create;
        println!("patched_intercept_create={status:x}");
        // A tool patching the table intercepts the exported function.
        let saved = (*r.core_).hsa_system_get_info_fn;
        (*r.core_).hsa_system_get_info_fn = Some(fake_system_info);
        let mut value = 0u64;
        ok(hsa_system_get_info(
            HSA_SYSTEM_INFO_TIMESTAMP,
            &mut value as *mut u64 as *mut c_void,
        ));
        (*r.core_).hsa_system_get_info_fn = saved;
        println!("patched={value}");
    }
}

fn table_lines(rocm: &str) -> Vec<String> {
    let out = run_child("child", "tables", &[("RTL_SIM_ROCM", rocm)]);
    out.lines()
        .filter(|l| l.contains('=') && !l.starts_with("test "))
        .map(String::from)
        .collect()
}

#[test]
fn table_versions_follow_rtl_sim_rocm() {
    let expect =
        |rocm: &str, lines: &[&str]| assert_eq!(table_lines(rocm), lines, "RTL_SIM_ROCM={rocm}");
    expect(
        "7.0",
        &[
            "root=3.64.1 core=2.1016.0 amd_ext=2.704.8",
            "tools=true pcs=true",
            "hsa_amd_queue_intercept_create_fn@312 set=true",
            "hsa_amd_queue_intercept_register_fn@320 set=true",
            "patched_intercept_create=1234",
            "patched=4242",
        ],
    );
    expect(
        "6.3",
        &[
            "root=3.64.1 core=2.1016.0 amd_ext=2.584.4",
            "tools=true pcs=true",
            "hsa_amd_queue_intercept_create_fn@312 set=true",
            "hsa_amd_queue_intercept_register_fn@320 set=true",
            "patched_intercept_create=1234",
            "patched=4242",
        ],
    );
    expect(
        "6.0",
        &[
            "root=2.48.0 core=2.1016.0 amd_ext=2.552.0",
            "tools=false pcs=false",
            "hsa_amd_queue_intercept_create_fn@312 set=true",
            "hsa_amd_queue_intercept_register_fn@320 set=true",
            "patched_intercept_create=1234",
            "patched=4242",
        ],
    );
    expect(
        "5.7",
        &[
            "root=1.48.0 core=1.1016.0 amd_ext=1.456.0",
            "tools=false pcs=false",
            "hsa_amd_queue_intercept_create_fn@312 set=true",
            "hsa_amd_queue_intercept_register_fn@320 set=true",
            "patched_intercept_create=1234",
            "patched=4242",
        ],
    );
    expect(
        "5.2",
        &[
            "root=1.48.0 core=1.1016.0 amd_ext=1.400.0",
            "tools=false pcs=false",
            "hsa_amd_queue_intercept_create_fn@296 set=true",
            "hsa_amd_queue_intercept_register_fn@304 set=true",
            "patched_intercept_create=1234",
            "patched=4242",
        ],
    );
}

// ---- intercept modes ----

#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    packets: AtomicU64,
}

unsafe extern "C" fn counting_handler(
    pkts: *const c_void,
    count: u64,
    _user_pkt_index: u64,
    data: *mut c_void,
    writer: hsa_amd_queue_intercept_packet_writer,
) {
    // SAFETY: `data` is the thread's Counts.
    let counts = unsafe { &*(data as *const Counts) };
    counts.calls.fetch_add(1, Ordering::SeqCst);
    counts.packets.fetch_add(count, Ordering::SeqCst);
    if let Some(w) = writer {
        // SAFETY: forwarding what we were given.
        unsafe { w(pkts, count) };
    }
}

fn intercept_queue() -> *mut hsa_queue_t {
    let mut q = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe {
        hsa_amd_queue_intercept_create(
            gpu(),
            64,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut q,
        )
    });
    q
}

fn intercept() {
    init();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                let q = intercept_queue();
                let counts = Box::leak(Box::new(Counts::default()));
                // SAFETY: live queue; `counts` is leaked.
                ok(unsafe {
                    hsa_amd_queue_intercept_register(
                        q,
                        Some(counting_handler),
                        counts as *const Counts as *mut c_void,
                    )
                });
                let done = signal(50);
                for _ in 0..10 {
                    let batch: Vec<AqlPacket> =
                        (0..5).map(|_| dispatch(256, 64, done, false)).collect();
                    submit(q, &batch);
                }
                assert_eq!(wait_zero(done), 0);
                // SAFETY: the proxy's read index: every slot was handed to the handlers.
                let read = unsafe { hsa_queue_load_read_index_scacquire(q) };
                (
                    counts.calls.load(Ordering::SeqCst),
                    counts.packets.load(Ordering::SeqCst),
                    read,
                )
            })
        })
        .collect();
    for t in threads {
        let (calls, packets, read) = t.join().expect("submitting thread");
        println!("calls={calls} packets={packets} read={read}");
    }
}

#[test]
fn packet_mode_calls_the_handler_once_per_packet() {
    let out = run_child("child", "intercept", &[("RTL_SIM_INTERCEPT", "packet")]);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("calls=")).collect();
    assert_eq!(lines, vec!["calls=50 packets=50 read=50"; 4]);
}

#[test]
fn batch_mode_calls_the_handler_once_per_doorbell() {
    let out = run_child("child", "intercept", &[("RTL_SIM_INTERCEPT", "batch")]);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("calls=")).collect();
    assert_eq!(lines, vec!["calls=10 packets=50 read=50"; 4]);
}

#[test]
fn rocm_releases_pick_the_intercept_mode() {
    let out = run_child("child", "intercept", &[("RTL_SIM_ROCM", "6.3")]);
    assert_eq!(
        out.lines()
            .filter(|l| *l == "calls=50 packets=50 read=50")
            .count(),
        4
    );
    let out = run_child("child", "intercept", &[("RTL_SIM_ROCM", "7.0")]);
    assert_eq!(
        out.lines()
            .filter(|l| *l == "calls=10 packets=50 read=50")
            .count(),
        4
    );
}

// ---- handler stacking and markers ----

static ORDER: Mutex<Vec<String>> = Mutex::new(Vec::new());
static MARKERS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

unsafe extern "C" fn marker_callback(
    _packet: *const amd_aql_intercept_marker_t,
    _queue: *mut hsa_queue_t,
    packet_id: u64,
) {
    MARKERS.lock().expect("markers").push(packet_id);
}

/// Registered first: records and forwards.
unsafe extern "C" fn inner_handler(
    pkts: *const c_void,
    count: u64,
    index: u64,
    _data: *mut c_void,
    writer: hsa_amd_queue_intercept_packet_writer,
) {
    ORDER
        .lock()
        .expect("order")
        .push(format!("inner count={count} index={index}"));
    if let Some(w) = writer {
        // SAFETY: forwarding what we were given.
        unsafe { w(pkts, count) };
    }
}

/// Registered second (runs first): puts a marker before every packet.
unsafe extern "C" fn outer_handler(
    pkts: *const c_void,
    count: u64,
    index: u64,
    _data: *mut c_void,
    writer: hsa_amd_queue_intercept_packet_writer,
) {
    ORDER
        .lock()
        .expect("order")
        .push(format!("outer count={count} index={index}"));
    let mut rewritten = Vec::new();
    for i in 0..count as usize {
        let marker = amd_aql_intercept_marker_t {
            header: packet_header(HSA_PACKET_TYPE_VENDOR_SPECIFIC, false, 0, 0),
            format: AMD_AQL_FORMAT_INTERCEPT_MARKER,
            callback: Some(marker_callback),
            ..Default::default()
        };
        rewritten.push(AqlPacket::from(&marker));
        // SAFETY: the handler receives `count` packets.
        rewritten.push(unsafe { *(pkts as *const AqlPacket).add(i) });
    }
    if let Some(w) = writer {
        // SAFETY: our own packets, valid during the call.
        unsafe { w(rewritten.as_ptr() as *const c_void, rewritten.len() as u64) };
    }
}

fn stacking() {
    init();
    let q = intercept_queue();
    // SAFETY: a live intercept queue.
    unsafe {
        ok(hsa_amd_queue_intercept_register(
            q,
            Some(inner_handler),
            std::ptr::null_mut(),
        ));
        ok(hsa_amd_queue_intercept_register(
            q,
            Some(outer_handler),
            std::ptr::null_mut(),
        ));
    }
    let done = signal(3);
    submit(
        q,
        &[dispatch(64, 64, done, false), dispatch(64, 64, done, false)],
    );
    submit(q, &[dispatch(64, 64, done, false)]);
    assert_eq!(wait_zero(done), 0);
    for line in ORDER.lock().expect("order").iter() {
        println!("{line}");
    }
    println!("markers={:?}", MARKERS.lock().expect("markers"));
}

#[test]
fn last_registered_handler_runs_first_and_markers_stay_off_the_hardware() {
    let out = run_child("child", "stacking", &[("RTL_SIM_INTERCEPT", "batch")]);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("outer") || l.starts_with("inner") || l.starts_with("markers"))
        .collect();
    assert_eq!(
        lines,
        vec![
            "outer count=2 index=0",
            "inner count=4 index=0",
            "outer count=1 index=2",
            "inner count=2 index=2",
            "markers=[0, 1, 2]"
        ]
    );
    let out = run_child("child", "stacking", &[("RTL_SIM_INTERCEPT", "packet")]);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("outer") || l.starts_with("inner") || l.starts_with("markers"))
        .collect();
    assert_eq!(
        lines,
        vec![
            "outer count=1 index=0",
            "inner count=2 index=0",
            "outer count=1 index=1",
            "inner count=2 index=1",
            "outer count=1 index=2",
            "inner count=2 index=2",
            "markers=[0, 1, 2]"
        ]
    );
}

// ---- tools ----

fn tools() {
    init();
    let q = queue(gpu(), 64);
    let done = signal(3);
    for _ in 0..3 {
        submit(q, &[dispatch(64, 64, done, false)]);
    }
    assert_eq!(wait_zero(done), 0);
    // SAFETY: live queue.
    unsafe {
        ok(hsa_queue_destroy(q));
        ok(hsa_shut_down());
    }
}

fn tool_log(scenario: &str, tools: &[&str], extra: &[(&str, &str)]) -> (Vec<String>, String) {
    let dir = scratch(&format!("tools-{scenario}-{}", tools.join("-")));
    let mut paths = Vec::new();
    for name in tools {
        if name.starts_with("missing") {
            paths.push(dir.join(format!("{name}.so")).display().to_string());
        } else {
            paths.push(
                copy_cdylib("librtl_sim_test_tool.so", &dir, name)
                    .display()
                    .to_string(),
            );
        }
    }
    let log = dir.join("log.txt");
    let list = paths.join(" ");
    let log_path = log.display().to_string();
    let mut env: Vec<(&str, &str)> = vec![
        ("HSA_TOOLS_LIB", &list),
        ("RTL_SIM_TEST_TOOL_LOG", &log_path),
    ];
    env.extend_from_slice(extra);
    let out = run_child("child", scenario, &env);
    let lines = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect();
    (lines, out)
}

#[test]
fn tools_load_in_order_and_unload_in_reverse() {
    let (lines, _) = tool_log("tools", &["tool_a", "tool_b"], &[]);
    assert_eq!(
        lines,
        vec![
            "OnLoad name=tool_a runtime_version=3 failed=0 failed_names=[] root=3.64.1 core=2.1016.0 amd_ext=2.704.8",
            "OnLoad name=tool_b runtime_version=3 failed=0 failed_names=[] root=3.64.1 core=2.1016.0 amd_ext=2.704.8",
            "OnUnload name=tool_b",
            "OnUnload name=tool_a",
        ]
    );
}

#[test]
fn failed_tools_are_reported_to_later_tools() {
    let (lines, out) = tool_log(
        "tools",
        &["missing_x", "tool_a", "tool_b", "tool_c"],
        &[
            ("RTL_SIM_TEST_TOOL_FAIL", "tool_b"),
            ("HSA_TOOLS_REPORT_LOAD_FAILURE", "1"),
            ("RTL_SIM_ROCM", "6.0"),
        ],
    );
    let dir_prefix = lines.first().map(|_| ()).is_some();
    assert!(dir_prefix, "no log lines");
    let strip = |l: &String| {
        // Failed names are paths; keep their file names.
        let re_start = l.find("failed_names=[").map(|i| i + 14);
        match re_start {
            Some(s) => {
                let end = l[s..].find(']').map(|e| s + e).unwrap_or(l.len());
                let names: Vec<String> = l[s..end]
                    .split(',')
                    .filter(|n| !n.is_empty())
                    .map(|n| {
                        std::path::Path::new(n)
                            .file_name()
                            .map_or(n.to_string(), |f| f.to_string_lossy().into_owned())
                    })
                    .collect();
                format!("{}{}{}", &l[..s], names.join(","), &l[end..])
            }
            None => l.clone(),
        }
    };
    let lines: Vec<String> = lines.iter().map(strip).collect();
    assert_eq!(
        lines,
        vec![
            "OnLoad name=tool_a runtime_version=2 failed=1 failed_names=[missing_x.so] root=2.48.0 core=2.1016.0 amd_ext=2.552.0",
            "OnLoad name=tool_b runtime_version=2 failed=1 failed_names=[missing_x.so] root=2.48.0 core=2.1016.0 amd_ext=2.552.0",
            "OnLoad name=tool_c runtime_version=2 failed=2 failed_names=[missing_x.so,tool_b.so] root=2.48.0 core=2.1016.0 amd_ext=2.552.0",
            "OnUnload name=tool_c",
            "OnUnload name=tool_a",
        ]
    );
    let reports: Vec<&str> = out.lines().filter(|l| l.starts_with("Tool lib")).collect();
    assert_eq!(reports.len(), 2);
    assert!(
        reports[0].ends_with("missing_x.so\" failed to load."),
        "{}",
        reports[0]
    );
    assert!(
        reports[1].ends_with("tool_b.so\" failed to load."),
        "{}",
        reports[1]
    );
}

#[test]
fn preloaded_tools_with_a_priority_load_after_the_listed_ones() {
    let dir = scratch("preload");
    let preloaded = copy_cdylib("librtl_sim_test_tool.so", &dir, "tool_p")
        .display()
        .to_string();
    let (lines, _) = tool_log("tools", &["tool_a"], &[("LD_PRELOAD", &preloaded)]);
    assert_eq!(
        lines,
        vec![
            "OnLoad name=tool_a runtime_version=3 failed=0 failed_names=[] root=3.64.1 core=2.1016.0 amd_ext=2.704.8",
            "OnLoad name=tool_p runtime_version=3 failed=0 failed_names=[] root=3.64.1 core=2.1016.0 amd_ext=2.704.8",
            "OnUnload name=tool_p",
            "OnUnload name=tool_a",
        ]
    );
}

#[test]
fn tools_unload_at_exit_without_shutdown() {
    let (lines, _) = tool_log("tools_no_shutdown", &["tool_a"], &[("RTL_SIM_ROCM", "5.2")]);
    assert_eq!(
        lines,
        vec![
            "OnLoad name=tool_a runtime_version=1 failed=0 failed_names=[] root=1.48.0 core=1.1016.0 amd_ext=1.400.0",
            "OnUnload name=tool_a",
        ]
    );
}

#[test]
fn stacked_tool_handlers_see_each_packet_outermost_first() {
    for (mode, per_call) in [("packet", 1), ("batch", 1)] {
        let (lines, _) = tool_log(
            "tools",
            &["tool_a", "tool_b"],
            &[
                ("RTL_SIM_TEST_TOOL_INTERCEPT", "1"),
                ("RTL_SIM_INTERCEPT", mode),
            ],
        );
        let handlers: Vec<String> = lines
            .iter()
            .filter(|l| l.starts_with("handler"))
            .map(|l| {
                l.split(" queue=").next().unwrap_or("").to_string()
                    + &l[l.find(" count=").unwrap_or(0)..]
            })
            .collect();
        let mut expected = Vec::new();
        for i in 0..3 {
            expected.push(format!("handler name=tool_b count={per_call} index={i}"));
            expected.push(format!("handler name=tool_a count={per_call} index={i}"));
        }
        assert_eq!(handlers, expected, "mode {mode}");
    }
}

// ---- faults ----

fn faults() {
    init();
    let mut q = std::ptr::null_mut();
    let mut s = hsa_signal_t::default();
    // SAFETY: valid out-pointers.
    unsafe {
        let first = hsa_queue_create(
            gpu(),
            64,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut q,
        );
        let second = hsa_queue_create(
            gpu(),
            64,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut q,
        );
        let third = hsa_amd_queue_intercept_create(
            gpu(),
            64,
            HSA_QUEUE_TYPE_MULTI,
            None,
            std::ptr::null_mut(),
            0,
            0,
            &mut q,
        );
        println!("queues={first:x},{second:x},{third:x}");
        let mut statuses = Vec::new();
        for _ in 0..4 {
            statuses.push(format!(
                "{:x}",
                hsa_signal_create(1, 0, std::ptr::null(), &mut s)
            ));
        }
        println!("signals={}", statuses.join(","));
    }
}

#[test]
fn creation_failures_are_injected() {
    let out = run_child(
        "child",
        "faults",
        &[
            ("RTL_SIM_FAIL_QUEUE_CREATE", "2"),
            ("RTL_SIM_FAIL_SIGNAL_CREATE", "3"),
            ("RTL_SIM_NO_INTERCEPT", "1"),
        ],
    );
    assert!(out.lines().any(|l| l == "queues=0,1008,1000"), "{out}");
    assert!(out.lines().any(|l| l == "signals=0,0,1008,0"), "{out}");
}

// ---- device configurations ----

fn devices() {
    init();
    for agent in agents().into_iter().skip(1) {
        println!(
            "gpu name={} node={} cu={} se={} wave={} xcc={}",
            info_str(agent, HSA_AGENT_INFO_NAME),
            info_u32(agent, HSA_AMD_AGENT_INFO_DRIVER_NODE_ID),
            info_u32(agent, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT),
            info_u32(agent, HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES),
            info_u32(agent, HSA_AGENT_INFO_WAVEFRONT_SIZE),
            info_u32(agent, HSA_AMD_AGENT_INFO_NUM_XCC),
        );
    }
}

fn gpu_lines(devices: &str) -> Vec<String> {
    let out = run_child("child", "devices", &[("RTL_SIM_DEVICES", devices)]);
    out.lines()
        .filter(|l| l.starts_with("gpu "))
        .map(String::from)
        .collect()
}

#[test]
fn device_configurations_define_the_gpus() {
    assert_eq!(
        gpu_lines("gfx942x2"),
        vec![
            "gpu name=gfx942 node=1 cu=304 se=32 wave=64 xcc=8",
            "gpu name=gfx942 node=2 cu=304 se=32 wave=64 xcc=8"
        ]
    );
    assert_eq!(
        gpu_lines("gfx90a"),
        vec!["gpu name=gfx90a node=1 cu=104 se=8 wave=64 xcc=1"]
    );
    assert_eq!(
        gpu_lines("gfx950"),
        vec!["gpu name=gfx950 node=1 cu=256 se=32 wave=64 xcc=8"]
    );
    assert_eq!(
        gpu_lines("gfx1100"),
        vec!["gpu name=gfx1100 node=1 cu=96 se=6 wave=32 xcc=1"]
    );
    let dir = scratch("devices");
    let path = dir.join("custom.json");
    let custom = hsa_runtime64::config::BUILT_IN
        .iter()
        .find(|(n, _)| *n == "gfx90a")
        .map(|(_, text)| text.replace("\"node_id\": 1", "\"node_id\": 4"))
        .expect("gfx90a built in");
    std::fs::write(&path, custom).expect("write config");
    assert_eq!(
        gpu_lines(&path.display().to_string()),
        vec!["gpu name=gfx90a node=4 cu=104 se=8 wave=64 xcc=1"]
    );
}

// ---- extension tables ----

fn extensions() {
    init();
    let mut loader = hsa_ven_amd_loader_1_03_pfn_t::default();
    let mut aql = hsa_ven_amd_aqlprofile_1_00_pfn_t::default();
    let (mut minor, mut supported) = (0u16, false);
    // SAFETY: out-buffers of the tables' sizes.
    unsafe {
        ok(hsa_system_major_extension_supported(
            HSA_EXTENSION_AMD_LOADER,
            1,
            &mut minor,
            &mut supported,
        ));
        println!("loader supported={supported} minor={minor}");
        ok(hsa_system_get_major_extension_table(
            HSA_EXTENSION_AMD_LOADER,
            1,
            std::mem::size_of_val(&loader),
            &mut loader as *mut _ as *mut c_void,
        ));
        println!(
            "loader query_host_address={} iterate_executables={}",
            loader.hsa_ven_amd_loader_query_host_address.is_some(),
            loader.hsa_ven_amd_loader_iterate_executables.is_some()
        );
        let status = hsa_system_get_major_extension_table(
            HSA_EXTENSION_AMD_AQLPROFILE,
            1,
            std::mem::size_of_val(&aql),
            &mut aql as *mut _ as *mut c_void,
        );
        let major = aql.hsa_ven_amd_aqlprofile_version_major.map_or(0, |f| f());
        println!(
            "aqlprofile status={status:x} version_major={major} iterate_data={}",
            aql.hsa_ven_amd_aqlprofile_iterate_data.is_some()
        );
    }
}

#[test]
fn extension_tables_come_from_the_loader_and_aqlprofile() {
    let dir = scratch("extensions");
    let lib = target_dir().join("libhsa_amd_aqlprofile64.so");
    assert!(
        lib.exists(),
        "{} is missing: run `cargo build --workspace` before the tests",
        lib.display()
    );
    std::os::unix::fs::symlink(&lib, dir.join("libhsa-amd-aqlprofile64.so"))
        .expect("link aqlprofile");
    let path = dir.display().to_string();
    let out = run_child("child", "extensions", &[("LD_LIBRARY_PATH", &path)]);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("loader") || l.starts_with("aqlprofile"))
        .collect();
    assert_eq!(
        lines,
        vec![
            "loader supported=true minor=3",
            "loader query_host_address=true iterate_executables=true",
            "aqlprofile status=0 version_major=2 iterate_data=true"
        ]
    );
}

// ---- reference counting ----

fn refcount() {
    let mut t = 0u64;
    let info = |t: &mut u64| {
        // SAFETY: u64 out-pointer.
        unsafe { hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, t as *mut u64 as *mut c_void) }
    };
    // SAFETY: plain HSA calls.
    unsafe {
        println!("before={:x}", info(&mut t));
        ok(hsa_init());
        ok(hsa_init());
        ok(hsa_shut_down());
        println!("after_one_shutdown={:x}", info(&mut t));
        ok(hsa_shut_down());
        println!(
            "after_two={:x} extra_shutdown={:x}",
            info(&mut t),
            hsa_shut_down()
        );
        ok(hsa_init());
        println!("reinit={:x}", info(&mut t));
        ok(hsa_shut_down());
    }
}

#[test]
fn init_and_shutdown_are_reference_counted() {
    let dir = scratch("refcount");
    let tool = copy_cdylib("librtl_sim_test_tool.so", &dir, "tool_r")
        .display()
        .to_string();
    let log = dir.join("log.txt");
    let log_path = log.display().to_string();
    let out = run_child(
        "child",
        "refcount",
        &[
            ("HSA_TOOLS_LIB", &tool),
            ("RTL_SIM_TEST_TOOL_LOG", &log_path),
        ],
    );
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("before") || l.starts_with("after") || l.starts_with("reinit"))
        .collect();
    assert_eq!(
        lines,
        vec![
            "before=100b",
            "after_one_shutdown=0",
            "after_two=100b extra_shutdown=100b",
            "reinit=0"
        ]
    );
    let events: Vec<String> = std::fs::read_to_string(&log)
        .expect("tool log")
        .lines()
        .map(|l| l.split(" runtime_version").next().unwrap_or(l).to_string())
        .collect();
    assert_eq!(
        events,
        vec![
            "OnLoad name=tool_r",
            "OnUnload name=tool_r",
            "OnLoad name=tool_r",
            "OnUnload name=tool_r"
        ]
    );
}

// ---- exported symbols ----

/// `(name, version)` of the defined dynamic symbols of an ELF file, from `readelf`.
fn dynamic_symbols(path: &std::path::Path) -> Vec<(String, String)> {
    let out = std::process::Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(path)
        .output()
        .expect("readelf (binutils) is installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields.len() >= 8 && fields[6] != "UND").then(|| fields[7].to_string())
        })
        .filter_map(|s| {
            s.split_once('@')
                .map(|(n, v)| (n.to_string(), v.trim_start_matches('@').to_string()))
        })
        .collect()
}

#[test]
fn the_library_exports_every_rocr_symbol_versioned_rocr_1() {
    let ours = dynamic_symbols(&target_dir().join("libhsa_runtime64.so"));
    assert!(
        ours.iter()
            .all(|(n, v)| n.starts_with("hsa_") && v == "ROCR_1"),
        "unexpected exports"
    );
    let real = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1");
    assert!(
        real.exists(),
        "{} is missing: run `bash .ci/setup`",
        real.display()
    );
    let missing: Vec<String> = dynamic_symbols(real)
        .into_iter()
        .filter(|(n, _)| n.starts_with("hsa_"))
        .filter(|s| !ours.contains(s))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(missing, Vec::<String>::new());
    for name in [
        "hsa_ven_amd_pcs_create",
        "hsa_amd_vmem_map",
        "hsa_amd_signal_wait_all",
        "hsa_amd_portable_export_dmabuf_v2",
    ] {
        assert!(
            ours.contains(&(name.to_string(), "ROCR_1".to_string())),
            "{name}"
        );
    }
    let dynamic = std::process::Command::new("readelf")
        .args(["-d", "-W"])
        .arg(target_dir().join("libhsa_runtime64.so"))
        .output()
        .expect("readelf runs");
    assert!(String::from_utf8_lossy(&dynamic.stdout)
        .contains("Library soname: [libhsa-runtime64.so.1]"));
}
