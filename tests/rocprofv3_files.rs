//! rtl-pmc's files against what AMD's rocprofv3 wrote for the same workload on the simulated
//! GPU (`bench/compare-rocprofv3.py`): the keys and values the comparison showed equal, pinned
//! here so that they stay equal without rocprofv3.

#![recursion_limit = "256"]

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use sim_support::{artifact, sim_env};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("rocprofv3-files-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Runs `rtl-pmc --pmc SQ_WAVES GRBM_COUNT ARGS -d out -o run -- rtl-demo-app APP_ARGS` on the
/// simulated `config`, `args` being `ARGS [-- APP_ARGS]`; returns the output directory and the
/// ground truth.
fn profile(dir: &Path, config: &str, args: &[&str]) -> (PathBuf, Vec<Value>) {
    let truth = dir.join("truth.jsonl");
    let (args, app_args) = match args.iter().position(|a| *a == "--") {
        Some(at) => (&args[..at], &args[at + 1..]),
        None => (args, &[][..]),
    };
    let out = Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .args(["--pmc", "SQ_WAVES", "GRBM_COUNT", "-d", "out", "-o", "run"])
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(app_args)
        .envs(sim_env(config))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", "SQ_WAVES,GRBM_COUNT")
        .output()
        .expect("rtl-pmc starts");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir.join("out"), sim_support::read_ground_truth(&truth))
}

/// The tool object of `out/run.json`.
fn tool(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("run.json")).expect("run.json written");
    let mut doc: Value = serde_json::from_str(&text).expect("run.json is JSON");
    doc["rocprofiler-sdk-tool"][0].take()
}

/// rocprofv3's `buffer_records` kinds, in its order.
const BUFFER_RECORDS: [&str; 12] = [
    "kernel_dispatch",
    "hip_api",
    "hsa_api",
    "marker_api",
    "rccl_api",
    "memory_copy",
    "memory_allocation",
    "scratch_memory",
    "rocdecode_api",
    "rocjpeg_api",
    "pc_sample_host_trap",
    "pc_sample_stochastic",
];

/// With `--kernel-trace`, the merged `results.json` lists every dispatch in
/// `buffer_records.kernel_dispatch` as rocprofv3's kernel trace does (size 184, kind 11,
/// operation 2, the dispatch's times and dispatch information), beside rocprofv3's other
/// eleven kinds of buffer records, each empty; without it, `kernel_dispatch` is empty too.
/// Counter records carry rocprofv3's `size` of their dispatch data (168) and dispatch
/// information (72), and correlation ids only rocprofv3's two fields.
#[test]
fn merged_json_has_rocprofv3s_buffer_records_and_record_sizes() {
    for kernel_trace in [true, false] {
        let dir = scratch(&format!("buffer-records-{kernel_trace}"));
        let mut args = vec!["--output-format", "json"];
        if kernel_trace {
            args.push("--kernel-trace");
        }
        let (out, truth) = profile(&dir, "gfx942", &args);
        assert_eq!(truth.len(), 4);
        let tool = tool(&out);
        let buffer_records = tool["buffer_records"].as_object().unwrap();
        let mut kinds: Vec<&str> = buffer_records.keys().map(String::as_str).collect();
        kinds.sort_unstable();
        let mut expected_kinds = BUFFER_RECORDS.to_vec();
        expected_kinds.sort_unstable();
        assert_eq!(kinds, expected_kinds);
        for kind in &BUFFER_RECORDS[1..] {
            assert_eq!(buffer_records[*kind], json!([]), "{kind}");
        }
        let counter_records = tool["callback_records"]["counter_collection"]
            .as_array()
            .unwrap();
        assert_eq!(counter_records.len(), 4);
        let mut expected_traces = Vec::new();
        for (t, record) in truth.iter().zip(counter_records) {
            let data = &record["dispatch_data"];
            let dispatch_id = data["dispatch_info"]["dispatch_id"].as_u64().unwrap();
            assert_eq!(dispatch_id, t["dispatch"].as_u64().unwrap() + 1);
            assert_eq!(data["size"], 168);
            assert_eq!(data["dispatch_info"]["size"], 72);
            assert_eq!(
                data["correlation_id"],
                json!({"internal": dispatch_id, "external": 0})
            );
            assert_eq!(data["start_timestamp"], t["start"]);
            assert_eq!(data["end_timestamp"], t["end"]);
            expected_traces.push(json!({
                "size": 184,
                "kind": 11,
                "operation": 2,
                "thread_id": record["thread_id"],
                "correlation_id": {"internal": dispatch_id, "external": 0},
                "start_timestamp": t["start"],
                "end_timestamp": t["end"],
                "dispatch_info": data["dispatch_info"],
                "stream_id": {"handle": 0},
            }));
        }
        let traces = buffer_records["kernel_dispatch"].as_array().unwrap();
        match kernel_trace {
            true => assert_eq!(traces, &expected_traces),
            false => assert_eq!(traces, &Vec::<Value>::new()),
        }
    }
}

/// A dispatch's counters come in rocprofiler-sdk's order of its counter definitions, as
/// rocprofv3 writes them, whatever order they were asked in: GRBM_COUNT's row before
/// SQ_WAVES' in `counter_collection.csv`, and GRBM_COUNT's eight per-XCC values before
/// SQ_WAVES' 32 per-XCC-and-engine values in the JSON record, each equal to the ground truth.
#[test]
fn counters_of_a_dispatch_come_in_rocprofiler_sdk_order() {
    let dir = scratch("counter-order");
    let (out, truth) = profile(&dir, "gfx942", &["--output-format", "csv", "json"]);
    assert_eq!(truth.len(), 4);
    let rows = sim_support::read_table(&out.join("pass_1/run_counter_collection.csv"));
    let found: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["Dispatch_Id"].clone(),
                r["Counter_Name"].clone(),
                r["Counter_Value"].clone(),
            )
        })
        .collect();
    let mut expected = Vec::new();
    for t in &truth {
        let dispatch = (t["dispatch"].as_u64().unwrap() + 1).to_string();
        for counter in ["GRBM_COUNT", "SQ_WAVES"] {
            let value = format!("{}.000000", sim_support::total(t, counter));
            expected.push((dispatch.clone(), counter.to_string(), value));
        }
    }
    assert_eq!(found, expected);

    let tool = tool(&out);
    let id_of = |name: &str| {
        tool["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["id"].clone())
            .unwrap()
    };
    let records = tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    for (t, record) in truth.iter().zip(records) {
        let mut expected = Vec::new();
        for counter in ["GRBM_COUNT", "SQ_WAVES"] {
            for value in t["counters"][counter].as_array().unwrap() {
                expected.push(json!({"counter_id": id_of(counter), "value": value.as_f64()}));
            }
        }
        assert_eq!(record["records"].as_array().unwrap(), &expected);
    }
}

/// Counters' dimensions as rocprofv3 writes them on an MI300X (8 XCCs, 4 shader engines per
/// XCC): rocprofiler-sdk's dimension numbers (XCC 1, shader engine 3, instance 7), each
/// distinct dimension and size once under `strings`, and each counter's dimensions highest
/// number first with one instance per value, in the values' order, whose id holds the counter
/// id in its top 16 bits and each dimension's index at 6 bits per dimension number.
#[test]
fn counter_dimensions_and_instances_are_rocprofv3s() {
    let dir = scratch("dimensions");
    let (out, _) = profile(&dir, "gfx942", &["--output-format", "json"]);
    let tool = tool(&out);
    assert_eq!(
        tool["strings"]["counters"]["dimension_ids"],
        json!([
            {"id": 1, "instance_size": 8, "name": "DIMENSION_XCC"},
            {"id": 3, "instance_size": 4, "name": "DIMENSION_SHADER_ENGINE"},
            {"id": 7, "instance_size": 1, "name": "DIMENSION_INSTANCE"},
        ])
    );
    let counter = |name: &str| {
        tool["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    let grbm = counter("GRBM_COUNT");
    assert_eq!(
        grbm["dimensions"],
        json!([
            {"id": 7, "instance_size": 1, "name": "DIMENSION_INSTANCE"},
            {"id": 1, "instance_size": 8, "name": "DIMENSION_XCC"},
        ])
    );
    let id = grbm["id"]["handle"].as_u64().unwrap();
    let expected: Vec<Value> = (0..8u64)
        .map(|xcc| {
            json!({
                "instance_id": (id << 48) | xcc,
                "counter_id": id,
                "dimensions": [
                    {"dimension_name": "DIMENSION_INSTANCE", "index": 0},
                    {"dimension_name": "DIMENSION_XCC", "index": xcc},
                ],
            })
        })
        .collect();
    assert_eq!(grbm["instances"].as_array().unwrap(), &expected);
    let waves = counter("SQ_WAVES");
    assert_eq!(
        waves["dimensions"],
        json!([
            {"id": 7, "instance_size": 1, "name": "DIMENSION_INSTANCE"},
            {"id": 3, "instance_size": 4, "name": "DIMENSION_SHADER_ENGINE"},
            {"id": 1, "instance_size": 8, "name": "DIMENSION_XCC"},
        ])
    );
    let id = waves["id"]["handle"].as_u64().unwrap();
    let mut expected = Vec::new();
    for xcc in 0..8u64 {
        for se in 0..4u64 {
            expected.push(json!({
                "instance_id": (id << 48) | (se << 12) | xcc,
                "counter_id": id,
                "dimensions": [
                    {"dimension_name": "DIMENSION_INSTANCE", "index": 0},
                    {"dimension_name": "DIMENSION_SHADER_ENGINE", "index": se},
                    {"dimension_name": "DIMENSION_XCC", "index": xcc},
                ],
            }));
        }
    }
    assert_eq!(waves["instances"].as_array().unwrap(), &expected);
}

/// rocprofiler-sdk's fields of every agent (`rocprofiler_agent_t`) with rocprofv3's values on
/// the simulated MI300X and its host: KFD's firmware versions and capability bits named, the
/// limits `agent_info.csv` has, the node's unique id as the UUID's bytes, a CPU's cores as its
/// compute units, an empty model name and GPU index -1 for the CPU; and no other field. The
/// rocpd database's agents and counters hold the same JSON.
#[test]
fn agents_have_rocprofv3s_fields_and_values() {
    let dir = scratch("agents");
    let (out, _) = profile(&dir, "gfx942", &["--output-format", "json", "rocpd"]);
    let tool = tool(&out);
    let agents = tool["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    // rocpd's agents and counters carry the same JSON in `extdata`, as rocprofv3 writes them.
    let extdata = rows(&out, "SELECT id, extdata FROM rocpd_info_agent ORDER BY id");
    let parsed: Vec<(String, Value)> = extdata
        .iter()
        .map(|r| (r[0].clone(), serde_json::from_str(&r[1]).unwrap()))
        .collect();
    assert_eq!(
        parsed,
        [
            ("0".to_string(), agents[0].clone()),
            ("1".to_string(), agents[1].clone())
        ]
    );
    for row in rows(&out, "SELECT extdata FROM rocpd_info_pmc") {
        assert_eq!(serde_json::from_str::<Value>(&row[0]).unwrap(), agents[1]);
    }
    let capability = json!({"HotPluggable": 0, "HSAMMUPresent": 0, "SharedWithGraphics": 0,
        "QueueSizePowerOfTwo": 0, "QueueSize32bit": 0, "QueueIdleEvent": 0, "VALimit": 0,
        "WatchPointsSupported": 0, "WatchPointsTotalBits": 0, "DoorbellType": 0,
        "AQLQueueDoubleMap": 0, "DebugTrapSupported": 0, "WaveLaunchTrapOverrideSupported": 0,
        "WaveLaunchModeSupported": 0, "PreciseMemoryOperationsSupported": 0,
        "DEPRECATED_SRAM_EDCSupport": 0, "Mem_EDCSupport": 0, "RASEventNotify": 0,
        "ASICRevision": 0, "SRAM_EDCSupport": 0, "SVMAPISupported": 0, "CoherentHostAccess": 0,
        "DebugSupportedFirmware": 0});
    let uuid = |bytes: [u8; 8]| {
        let mut fields = serde_json::Map::new();
        for i in 0..16 {
            fields.insert(
                format!("value{i}"),
                json!(bytes.get(i).copied().unwrap_or(0)),
            );
        }
        json!({ "bytes": fields })
    };
    let gpu = json!({"size": 312, "id": {"handle": 1}, "type": 2, "cpu_cores_count": 0,
        "simd_count": 1216, "mem_banks_count": 1, "caches_count": 0, "io_links_count": 1,
        "cpu_core_id_base": 0, "simd_id_base": 2147487744u64, "max_waves_per_simd": 8,
        "lds_size_in_kb": 64, "gds_size_in_kb": 0, "num_gws": 64, "wave_front_size": 64,
        "num_xcc": 8, "cu_count": 304, "array_count": 32, "num_shader_banks": 32,
        "simd_arrays_per_engine": 1, "cu_per_simd_array": 10, "simd_per_cu": 4,
        "max_slots_scratch_cu": 32, "gfx_target_version": 90402, "vendor_id": 4098,
        "device_id": 29857, "location_id": 3072, "domain": 0, "drm_render_minor": 128,
        "num_sdma_engines": 2, "num_sdma_xgmi_engines": 0, "num_sdma_queues_per_engine": 0,
        "num_cp_queues": 0, "max_engine_clk_ccompute": 3000, "max_engine_clk_fcompute": 2100,
        "sdma_fw_version": {"uCodeSDMA": 1, "uCodeRes": 0},
        "fw_version": {"uCode": 1, "Major": 0, "Minor": 0, "Stepping": 0},
        "capability": capability, "cu_per_engine": 9, "max_waves_per_cu": 32,
        "family_id": 141, "workgroup_max_size": 1024, "grid_max_size": 4294967295u64,
        "local_mem_size": 206158430208u64, "hive_id": 0, "gpu_id": 4096,
        "workgroup_max_dim": {"x": 1024, "y": 1024, "z": 1024},
        "grid_max_dim": {"x": 2147483647, "y": 65535, "z": 65535}, "name": "gfx942",
        "vendor_name": "AMD", "product_name": "AMD Instinct MI300X", "model_name": "gfx942",
        "node_id": 1, "logical_node_id": 1, "logical_node_type_id": 0,
        "uuid": uuid([1, 58, 43, 157, 15, 30, 90, 76]), "gpu_index": 0});
    assert_eq!(agents[1], gpu);
    // The host's name and cores are the machine's own.
    let cpu = &agents[0];
    let host = cpu["name"].clone();
    let cores = cpu["cpu_cores_count"].clone();
    assert_eq!(cpu["product_name"], host);
    let zero_version = json!({"uCode": 0, "Major": 0, "Minor": 0, "Stepping": 0});
    let expected = json!({"size": 312, "id": {"handle": 0}, "type": 1, "cpu_cores_count": cores,
        "simd_count": 0, "mem_banks_count": 1, "caches_count": 0, "io_links_count": 1,
        "cpu_core_id_base": 0, "simd_id_base": 0, "max_waves_per_simd": 0, "lds_size_in_kb": 0,
        "gds_size_in_kb": 0, "num_gws": 0, "wave_front_size": 0, "num_xcc": 0,
        "cu_count": cores, "array_count": 0, "num_shader_banks": 0, "simd_arrays_per_engine": 0,
        "cu_per_simd_array": 0, "simd_per_cu": 0, "max_slots_scratch_cu": 0,
        "gfx_target_version": 0, "vendor_id": 0, "device_id": 0, "location_id": 0, "domain": 0,
        "drm_render_minor": 0, "num_sdma_engines": 0, "num_sdma_xgmi_engines": 0,
        "num_sdma_queues_per_engine": 0, "num_cp_queues": 0, "max_engine_clk_ccompute": 3000,
        "max_engine_clk_fcompute": 0, "sdma_fw_version": {"uCodeSDMA": 0, "uCodeRes": 0},
        "fw_version": zero_version, "capability": capability, "cu_per_engine": 0,
        "max_waves_per_cu": 0, "family_id": 6, "workgroup_max_size": 0, "grid_max_size": 0,
        "local_mem_size": 0, "hive_id": 0, "gpu_id": 0,
        "workgroup_max_dim": {"x": 0, "y": 0, "z": 0}, "grid_max_dim": {"x": 0, "y": 0, "z": 0},
        "name": host, "vendor_name": "CPU", "product_name": host, "model_name": "",
        "node_id": 0, "logical_node_id": 0, "logical_node_type_id": 0, "uuid": uuid([0; 8]),
        "gpu_index": -1});
    assert_eq!(cpu, &expected);
}

/// The rows of `sql` on the merged database, each as strings.
fn rows(out: &Path, sql: &str) -> Vec<Vec<String>> {
    sim_support::query(
        &rusqlite::Connection::open(out.join("run.db")).unwrap(),
        sql,
    )
}

/// rocpd's queues as rocprofv3 writes them, two threads with two queues each: the queue's
/// handle (the CSV's `Queue_Id`) as its row id, named `Queue 0`, `Queue 1`, ... in the order
/// they first dispatched, beside `Default Queue`; each dispatch names its queue by handle.
/// And the counters' empty expressions.
#[test]
fn rocpd_queues_are_named_and_numbered_as_rocprofv3_does() {
    let dir = scratch("queues");
    let (out, _) = profile(
        &dir,
        "gfx942",
        &[
            "--output-format",
            "csv",
            "rocpd",
            "--",
            "--threads",
            "2",
            "--queues",
            "2",
        ],
    );
    let csv = sim_support::read_table(&out.join("pass_1/run_counter_collection.csv"));
    // Each queue handle with its first dispatch's start.
    let mut first: Vec<(u64, String)> = Vec::new();
    for row in &csv {
        let start: u64 = row["Start_Timestamp"].parse().unwrap();
        let queue = row["Queue_Id"].clone();
        match first.iter_mut().find(|(_, q)| *q == queue) {
            Some(entry) => entry.0 = entry.0.min(start),
            None => first.push((start, queue)),
        }
    }
    first.sort();
    assert_eq!(first.len(), 4);
    let mut expected = vec![vec!["0".to_string(), "Default Queue".to_string()]];
    for (n, (_, handle)) in first.iter().enumerate() {
        expected.push(vec![handle.clone(), format!("Queue {n}")]);
    }
    expected.sort();
    let mut found = rows(&out, "SELECT id, name FROM rocpd_info_queue");
    found.sort();
    assert_eq!(found, expected);
    let mut dispatches = rows(
        &out,
        "SELECT dispatch_id, queue_id FROM rocpd_kernel_dispatch ORDER BY dispatch_id",
    );
    dispatches.dedup();
    let mut expected: Vec<Vec<String>> = csv
        .iter()
        .map(|r| vec![r["Dispatch_Id"].clone(), r["Queue_Id"].clone()])
        .collect();
    expected.sort_by_key(|r| r[0].parse::<u64>().unwrap());
    expected.dedup();
    assert_eq!(dispatches, expected);
    // A basic counter's expression is empty, as rocprofv3 writes it, not NULL.
    assert_eq!(
        rows(
            &out,
            "SELECT name, quote(expression), block FROM rocpd_info_pmc ORDER BY name"
        ),
        [["GRBM_COUNT", "''", "GRBM"], ["SQ_WAVES", "''", "SQ"]]
    );
}

/// Kernel symbols as rocprofv3 writes them for the kernels dispatched: numbered by symbol as
/// rocprofv3 numbers them (the demo's `increment`, `vadd`, `saxpy` and `fill` are the 3rd, 4th,
/// 5th and 10th of its code object's 12), each dispatch's `kernel_id` its CSV `Kernel_Id`,
/// `size` 88, the descriptor's address and the resources rocprofv3 gives each on an MI300X;
/// rocprofv3's default entry for the other ids, and its default entries as the only
/// `code_objects` and `host_functions`. rocpd's kernel symbols hold the same JSON.
#[test]
fn kernel_symbols_and_default_entries_are_rocprofv3s() {
    let dir = scratch("kernel-symbols");
    let (out, _) = profile(&dir, "gfx942", &["--output-format", "csv", "json", "rocpd"]);
    let tool = tool(&out);
    // rocpd's kernel symbols hold the same JSON in `extdata`, under the same ids.
    for row in rows(&out, "SELECT id, extdata FROM rocpd_info_kernel_symbol") {
        let id: usize = row[0].parse().unwrap();
        let extdata: Value = serde_json::from_str(&row[1]).unwrap();
        assert_eq!(extdata, tool["kernel_symbols"][id]);
    }
    let default = json!({"size": 0, "kernel_id": 0, "code_object_id": 0, "kernel_name": "",
        "kernel_object": 0, "kernarg_segment_size": 0, "kernarg_segment_alignment": 0,
        "group_segment_size": 0, "private_segment_size": 0, "sgpr_count": 0,
        "arch_vgpr_count": 0, "accum_vgpr_count": 0, "kernel_code_entry_byte_offset": 0,
        "kernel_address": {"handle": 0}, "formatted_kernel_name": "0",
        "demangled_kernel_name": "0", "truncated_kernel_name": "0"});
    let symbol = |id: u32, name: &str, arch_vgpr: u32, accum_vgpr: u32| {
        json!({"size": 88, "kernel_id": id, "kernel_name": name, "formatted_kernel_name": name,
            "group_segment_size": 0, "private_segment_size": 0, "sgpr_count": 16,
            "arch_vgpr_count": arch_vgpr, "accum_vgpr_count": accum_vgpr})
    };
    let mut expected = vec![default.clone(); 11];
    expected[3] = symbol(3, "increment", 4, 4);
    expected[4] = symbol(4, "vadd", 8, 0);
    expected[5] = symbol(5, "saxpy", 8, 0);
    expected[10] = symbol(10, "fill", 4, 4);
    let mut found = tool["kernel_symbols"].as_array().unwrap().clone();
    for symbol in found.iter_mut().filter(|s| s["size"] == 88) {
        let object = symbol.as_object_mut().unwrap();
        assert!(object.remove("kernel_object").unwrap().as_u64().unwrap() > 0);
    }
    assert_eq!(found, expected);
    let csv = sim_support::read_table(&out.join("pass_1/run_counter_collection.csv"));
    for record in tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap()
    {
        let info = &record["dispatch_data"]["dispatch_info"];
        let row = csv
            .iter()
            .find(|r| info["dispatch_id"] == r["Dispatch_Id"].parse::<u64>().unwrap())
            .unwrap();
        assert_eq!(info["kernel_id"].to_string(), row["Kernel_Id"]);
    }
    assert_eq!(
        tool["code_objects"],
        json!([{"size": 0, "code_object_id": 0, "agent_id": {"handle": 0}, "uri": "",
            "load_base": 0, "load_size": 0, "load_delta": 0, "storage_type": 0}])
    );
    let zero = json!({"x": 0, "y": 0, "z": 0});
    assert_eq!(
        tool["host_functions"],
        json!([{"size": 0, "host_function_id": 0, "kernel_id": 0, "code_object_id": 0,
            "host_function": {"handle": 0}, "modules": {"handle": 0}, "device_function": "",
            "thread_limit": 0, "thread_ids": zero, "block_ids": zero, "block_dims": zero,
            "grid_dims": zero, "workgroup_size": 0, "formatted_host_function_name": "",
            "demangled_host_function_name": "", "truncated_host_function_name": ""}])
    );
}
