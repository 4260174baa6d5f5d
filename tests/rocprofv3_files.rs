//! rtl-pmc's files against what AMD's rocprofv3 wrote for the same workload on the simulated
//! GPU (`bench/compare-rocprofv3.py`): the keys and values the comparison showed equal, pinned
//! here so that they stay equal without rocprofv3.

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

/// Runs `rtl-pmc --pmc SQ_WAVES GRBM_COUNT ARGS -d out -o run -- rtl-demo-app` on the simulated
/// `config`; returns the output directory and the ground truth.
fn profile(dir: &Path, config: &str, args: &[&str]) -> (PathBuf, Vec<Value>) {
    let truth = dir.join("truth.jsonl");
    let out = Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .args(["--pmc", "SQ_WAVES", "GRBM_COUNT", "-d", "out", "-o", "run"])
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
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
