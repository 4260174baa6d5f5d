//! Writers and the pass merge on synthetic data, with exact expected files.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::files::csv::{write_agent_info, AgentLabels, Table};
use crate::files::write_counter_collection;
use crate::files::write_merged_files;
use crate::files::{Formats, OutputError};
use crate::model::{Agent, Counter, Dispatch};
use crate::model::{AgentBusy, KernelTime};
use crate::store::database::{Database, DatabaseError};

/// The names and values of a kernel's counters.
fn named_values(counters: Vec<crate::model::KernelCounter>) -> Vec<(String, f64)> {
    counters.into_iter().map(|c| (c.name, c.value)).collect()
}

/// The three-column rows of `query`.
fn rows3<A, B, C>(conn: &rusqlite::Connection, query: &str) -> Vec<(A, B, C)>
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: rusqlite::types::FromSql,
{
    conn.prepare(query)
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtl-pmc-outputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gpu() -> Agent {
    Agent {
        node_id: 2,
        gpu_index: 0,
        name: "gfx942".into(),
        product_name: "MI300X".into(),
        model_name: "gfx942".into(),
        properties: vec![
            ("simd_count".into(), 1216),
            ("cu_count".into(), 304),
            ("num_xcc".into(), 8),
            ("wave_front_size".into(), 64),
        ],
    }
}

fn counter(name: &str, values: &[f64]) -> Counter {
    Counter {
        name: name.into(),
        total: values.iter().sum(),
        dimensions: if values.len() > 1 {
            format!("DIMENSION_XCC[0:{}]", values.len() - 1)
        } else {
            "DIMENSION_NONE".into()
        },
        values: values.to_vec(),
    }
}

/// A dispatch of `kernel` by `pid`, the `n`-th of the process, starting at `start`.
fn dispatch(pid: u32, n: u64, kernel: &str, start: u64, counters: Vec<Counter>) -> Dispatch {
    Dispatch {
        pid,
        tid: pid + 1,
        agent: 2,
        queue_id: 1,
        queue_order: 1,
        queue_index: 4 * n,
        dispatch_id: n,
        correlation_id: n,
        kernel: kernel.into(),
        kernel_object: 0x7f00_0000_1000 + 0x40 * u64::from(kernel == "vmul"),
        kernel_id: if kernel == "vmul" { 12 } else { 7 },
        grid: [1024, 2, 1],
        workgroup: [256, 1, 1],
        lds: 100,
        scratch: 16,
        arch_vgpr: 8,
        accum_vgpr: 4,
        sgpr: 32,
        wave_size: 64,
        signal: 0x5000 + n,
        start_ns: start,
        end_ns: start + if kernel == "vadd" { 300 } else { 1000 },
        counters,
    }
}

/// Two passes of an application that forks once. Pass 1 collects SQ_WAVES (per XCC), pass 2
/// GRBM_COUNT; in pass 2 the parent launches `vmul` once more than in pass 1.
fn two_passes(dir: &Path) -> Database {
    let mut db = Database::create(&dir.join("results.db")).unwrap();
    db.add_agent(&gpu()).unwrap();
    let waves = |a: f64, b: f64| vec![counter("SQ_WAVES", &[a, b])];
    let pass1 = [
        dispatch(100, 1, "vadd", 1000, waves(8.0, 8.0)),
        dispatch(100, 2, "vmul", 2000, waves(16.0, 16.0)),
        dispatch(100, 3, "vadd", 4000, waves(8.0, 9.0)),
        dispatch(101, 1, "vadd", 3500, waves(1.0, 2.0)),
    ];
    // Records arrive per process; the child's file is read first here on purpose.
    db.begin_pass(1, "SQ_WAVES").unwrap();
    for d in pass1.iter().rev() {
        db.insert_many(1, &mut [(0, d.clone())]).unwrap();
    }
    db.end_pass(1, Some(0)).unwrap();
    let count = |v: f64| vec![counter("GRBM_COUNT", &[v])];
    let pass2 = [
        dispatch(200, 1, "vadd", 11000, count(3000.0)),
        dispatch(200, 2, "vmul", 12000, count(9000.0)),
        dispatch(200, 3, "vadd", 14000, count(3100.0)),
        dispatch(200, 4, "vmul", 15000, count(9100.0)),
        dispatch(201, 1, "vadd", 13500, count(2900.0)),
    ];
    db.begin_pass(2, "GRBM_COUNT").unwrap();
    for d in &pass2 {
        db.insert_many(2, &mut [(0, d.clone())]).unwrap();
    }
    db.end_pass(2, Some(0)).unwrap();
    db
}

#[test]
fn pass_files_are_rocprofv3_shaped() {
    let dir = temp_dir("pass");
    let db = two_passes(&dir);
    let path = dir.join("counter_collection.csv");
    assert_eq!(
        write_counter_collection(
            &db,
            1,
            &|_, _| path.clone(),
            &[Table::CounterCollection],
            &AgentLabels::Node
        )
        .unwrap(),
        std::slice::from_ref(&path)
    );
    let path = dir.join("agent_info.csv");
    let mut gpus = db.agents().unwrap();
    gpus[0].properties.extend([
        ("array_count".into(), 32),
        ("simd_arrays_per_engine".into(), 1),
        ("simd_per_cu".into(), 4),
        ("max_waves_per_simd".into(), 8),
        ("gpu_id".into(), 4242),
    ]);
    let cpu = Agent {
        node_id: 0,
        gpu_index: 0,
        name: "AMD EPYC".into(),
        product_name: "AMD EPYC".into(),
        model_name: String::new(),
        properties: vec![
            ("cpu_cores_count".into(), 64),
            ("num_xcc".into(), 0),
            ("max_engine_clk_ccompute".into(), 3700),
            ("family_id".into(), 25),
        ],
    };
    assert_eq!(write_agent_info(&path, &[cpu], &gpus).unwrap(), path);
    let expected = "\
\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"
1,1,\"Agent 2\",1,100,101,2048,7,\"vadd\",256,512,16,8,4,32,\"SQ_WAVES\",16.000000,1000,1300
2,2,\"Agent 2\",1,100,101,2048,12,\"vmul\",256,512,16,8,4,32,\"SQ_WAVES\",32.000000,2000,3000
1,1,\"Agent 2\",1,101,102,2048,7,\"vadd\",256,512,16,8,4,32,\"SQ_WAVES\",3.000000,3500,3800
3,3,\"Agent 2\",1,100,101,2048,7,\"vadd\",256,512,16,8,4,32,\"SQ_WAVES\",17.000000,4000,4300
";
    assert_eq!(
        std::fs::read_to_string(dir.join("counter_collection.csv")).unwrap(),
        expected
    );
    // rocprofv3's 53 columns; the CPU first (node 0), its cores as CUs, its KFD `num_xcc` (0);
    // the GPU's shader engines from its arrays, rocprofiler-sdk's grid limits, its node name.
    assert_eq!(
        std::fs::read_to_string(dir.join("agent_info.csv")).unwrap(),
        "\"Node_Id\",\"Logical_Node_Id\",\"Agent_Type\",\"Cpu_Cores_Count\",\"Simd_Count\",\"Cpu_Core_Id_Base\",\"Simd_Id_Base\",\"Max_Waves_Per_Simd\",\"Lds_Size_In_Kb\",\"Gds_Size_In_Kb\",\"Num_Gws\",\"Wave_Front_Size\",\"Num_Xcc\",\"Cu_Count\",\"Array_Count\",\"Num_Shader_Banks\",\"Simd_Arrays_Per_Engine\",\"Cu_Per_Simd_Array\",\"Simd_Per_Cu\",\"Max_Slots_Scratch_Cu\",\"Gfx_Target_Version\",\"Vendor_Id\",\"Device_Id\",\"Location_Id\",\"Domain\",\"Drm_Render_Minor\",\"Num_Sdma_Engines\",\"Num_Sdma_Xgmi_Engines\",\"Num_Sdma_Queues_Per_Engine\",\"Num_Cp_Queues\",\"Max_Engine_Clk_Ccompute\",\"Max_Engine_Clk_Fcompute\",\"Sdma_Fw_Version\",\"Fw_Version\",\"Capability\",\"Cu_Per_Engine\",\"Max_Waves_Per_Cu\",\"Family_Id\",\"Workgroup_Max_Size\",\"Grid_Max_Size\",\"Local_Mem_Size\",\"Hive_Id\",\"Gpu_Id\",\"Workgroup_Max_Dim_X\",\"Workgroup_Max_Dim_Y\",\"Workgroup_Max_Dim_Z\",\"Grid_Max_Dim_X\",\"Grid_Max_Dim_Y\",\"Grid_Max_Dim_Z\",\"Name\",\"Vendor_Name\",\"Product_Name\",\"Model_Name\"\n0,0,\"CPU\",64,0,0,0,0,0,0,0,0,0,64,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,3700,0,0,0,0,0,0,25,0,0,0,0,0,0,0,0,0,0,0,\"AMD EPYC\",\"CPU\",\"AMD EPYC\",\"\"\n2,2,\"GPU\",0,1216,0,0,8,0,0,0,64,8,304,32,32,1,0,4,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,9,32,0,1024,4294967295,0,0,4242,1024,1024,1024,2147483647,65535,65535,\"gfx942\",\"AMD\",\"MI300X\",\"gfx942\"\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn passes_join_by_process_order_kernel_and_occurrence() {
    let dir = temp_dir("merge");
    let db = two_passes(&dir);
    let formats = Formats {
        csv: true,
        json: true,
        rocpd: true,
        pftrace: false,
        kernel_trace: false,
    };
    let written = write_merged_files(&db, &dir, "results", formats).unwrap();
    assert_eq!(
        written,
        vec![dir.join("results.csv"), dir.join("results.json")]
    );
    // Process 200's vmul was not in SQ_WAVES's pass: the estimate columns give it its
    // stratum's mean, with no spread to tell from one measured dispatch.
    let expected = "\
Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,wave_size,sig,obj,SQ_WAVES,GRBM_COUNT,BeginNs,EndNs,SQ_WAVES_estimate,SQ_WAVES_error
0,\"vadd\",2,1,4,100,101,2048,256,512,16,8,4,32,64,0x5001,0x7f0000001000,16,3000,1000,1300,16,0
1,\"vmul\",2,1,8,100,101,2048,256,512,16,8,4,32,64,0x5002,0x7f0000001040,32,9000,2000,3000,32,0
2,\"vadd\",2,1,4,101,102,2048,256,512,16,8,4,32,64,0x5001,0x7f0000001000,3,2900,3500,3800,3,0
3,\"vadd\",2,1,12,100,101,2048,256,512,16,8,4,32,64,0x5003,0x7f0000001000,17,3100,4000,4300,17,0
4,\"vmul\",2,1,16,200,201,2048,256,512,16,8,4,32,64,0x5004,0x7f0000001040,None,9100,15000,16000,32,None
";
    assert_eq!(
        std::fs::read_to_string(dir.join("results.csv")).unwrap(),
        expected
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let tool = &json["rocprofiler-sdk-tool"][0];
    let names: Vec<&Value> = tool["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, [&json!("SQ_WAVES"), &json!("GRBM_COUNT")]);
    assert_eq!(tool["counters"][0]["id"], json!({"handle": 1}));
    assert_eq!(
        tool["counters"][0]["dimensions"],
        json!([{"id": 1, "instance_size": 2, "name": "DIMENSION_XCC"}])
    );
    assert_eq!(tool["agents"][0]["cu_count"], 304);
    assert_eq!(tool["agents"][0]["id"], json!({"handle": 2}));
    assert_eq!(tool["agents"][0]["type"], 2);
    let records = tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert_eq!(records.len(), 5);
    // One value per dimension position, each named by its counter's id, the counters in
    // rocprofiler-sdk's order (GRBM_COUNT before SQ_WAVES).
    assert_eq!(
        records[0]["records"],
        json!([
            {"counter_id": {"handle": 2}, "value": 3000.0},
            {"counter_id": {"handle": 1}, "value": 8.0},
            {"counter_id": {"handle": 1}, "value": 8.0},
        ])
    );
    let data = &records[0]["dispatch_data"];
    assert_eq!(data["start_timestamp"], 1000);
    assert_eq!(data["end_timestamp"], 1300);
    assert_eq!(data["dispatch_info"]["agent_id"], json!({"handle": 2}));
    let kernel = data["dispatch_info"]["kernel_id"].as_u64().unwrap() as usize;
    assert_eq!(tool["kernel_symbols"][kernel]["kernel_name"], "vadd");
    assert_eq!(
        records[0]["rtl-pmc"]["counters"],
        json!({"SQ_WAVES": 16.0, "GRBM_COUNT": 3000.0})
    );
    // The dispatch only pass 2 has: SQ_WAVES is None, so no record of it.
    assert_eq!(
        records[4]["records"],
        json!([{"counter_id": {"handle": 2}, "value": 9100.0}])
    );
    // vmul's second launch in pass 2 has no partner in pass 1.
    assert_eq!(
        db.unmatched().unwrap(),
        crate::model::Unmatched {
            merged: 5,
            incomplete: 1,
            per_pass: vec![(1, 4, 0), (2, 5, 1)]
        }
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn database_views_answer_top_and_busy() {
    let dir = temp_dir("views");
    let db = two_passes(&dir);
    assert_eq!(
        db.top(10).unwrap(),
        vec![
            KernelTime {
                kernel: "vmul".into(),
                calls: 2,
                total_ns: 2000,
                average_ns: 1000.0,
                percent: 2000.0 * 100.0 / 2900.0,
            },
            KernelTime {
                kernel: "vadd".into(),
                calls: 3,
                total_ns: 900,
                average_ns: 300.0,
                percent: 900.0 * 100.0 / 2900.0,
            },
        ]
    );
    // Merged dispatches keep their first pass's times: 1000..4300 and the unmatched 15000..16000.
    assert_eq!(
        db.busy().unwrap(),
        vec![AgentBusy {
            agent: 2,
            name: "gfx942".into(),
            dispatches: 5,
            busy_ns: 2900,
            busy_percent: 2900.0 * 100.0 / 15000.0,
        }]
    );
    assert_eq!(
        named_values(db.kernel_counters("vadd").unwrap()),
        vec![("SQ_WAVES".into(), 36.0), ("GRBM_COUNT".into(), 9000.0)]
    );
    let path = db.commit(true).unwrap().unwrap();
    assert_eq!(path, dir.join("results.db"));
    let conn = rusqlite::Connection::open(&path).unwrap();
    let page_size: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        page_size, 65536,
        "rebuilt with bulk pages by the first pass"
    );
    // The planner's statistics, gathered at the commit, count every merged dispatch.
    let merged: String = conn
        .query_row(
            "SELECT stat FROM sqlite_stat1 WHERE tbl = 'rtl_merged' ORDER BY idx IS NULL LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(merged.split(' ').next(), Some("5"), "{merged}");
    let rows: Vec<(String, i64, i64)> = rows3(&conn, "SELECT kernel, calls, total_ns FROM rtl_top");
    assert_eq!(
        rows,
        vec![("vmul".into(), 2, 2000), ("vadd".into(), 3, 900)]
    );
    // Every dispatch is in both passes but the parent's second vmul, only in pass 2.
    let passes: Vec<(String, i64, i64)> = rows3(
        &conn,
        "SELECT kernel, start_ns, passes FROM rtl_dispatches ORDER BY id",
    );
    assert_eq!(
        passes,
        vec![
            ("vadd".into(), 1000, 2),
            ("vmul".into(), 2000, 2),
            ("vadd".into(), 3500, 2),
            ("vadd".into(), 4000, 2),
            ("vmul".into(), 15000, 1),
        ]
    );
    let dims: Vec<(String, i64, f64)> = rows3(&conn, "SELECT counter, position, value FROM rtl_pmc_dimension WHERE dispatch_id = (SELECT first_dispatch FROM rtl_merged_dispatch ORDER BY start_ns LIMIT 1) ORDER BY counter, position");
    assert_eq!(
        dims,
        vec![("SQ_WAVES".into(), 0, 8.0), ("SQ_WAVES".into(), 1, 8.0)]
    );
    let busy: (i64, i64) = conn
        .query_row("SELECT agent, busy_ns FROM rtl_busy", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(busy, (2, 2900));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_uncommitted_database_leaves_nothing() {
    let dir = temp_dir("drop");
    drop(two_passes(&dir));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let db = two_passes(&dir);
    assert_eq!(db.commit(false).unwrap(), None);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn summary_lists_kernels_gpus_and_counters() {
    let dir = temp_dir("summary");
    let db = two_passes(&dir);
    let text = crate::files::summary::render(&db, &[dir.join("results.csv")], 10).unwrap();
    let gaps = [
        "  idle gaps between its dispatches: 7",
        "        < 10 us          7  ##############################",
        "       10-20 us          0",
        "       20-50 us          0",
        "      50-100 us          0",
        "    100 us-1 ms          0",
        "        1-10 ms          0",
        "      10-100 ms          0",
        "      >= 100 ms          0\n",
    ]
    .join("\n");
    let expected = format!(
        "\
rtl-pmc: top kernels by total time
  Kernel     Calls         Total       Average       %
  vmul           2       2.00 us       1.00 us    69.0
    SQ_WAVES=32  GRBM_COUNT=18,100
  vadd           3        900 ns        300 ns    31.0
    SQ_WAVES=36  GRBM_COUNT=9,000
rtl-pmc: GPU 2 (gfx942): busy 2.90 us in 5 dispatches (19.3% of its active span)
{gaps}rtl-pmc: wrote {}
",
        dir.join("results.csv").display()
    );
    assert_eq!(text, expected);
    // A shorter list says what it leaves out.
    let text = crate::files::summary::render(&db, &[], 1).unwrap();
    let expected = format!(
        "\
rtl-pmc: top kernels by total time
  Kernel     Calls         Total       Average       %
  vmul           2       2.00 us       1.00 us    69.0
    SQ_WAVES=32  GRBM_COUNT=18,100
  ... 1 more kernels (900 ns, 31.0% of the time) not listed; --summary-top 2 lists them all
rtl-pmc: GPU 2 (gfx942): busy 2.90 us in 5 dispatches (19.3% of its active span)
{gaps}"
    );
    assert_eq!(text, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Decodes `path` with Perfetto's published protos (the PyPI `perfetto` wheel) and prints one
/// line per packet; `None` when no Python with that wheel is found.
fn decode_with_perfetto(path: &Path) -> Option<String> {
    const SCRIPT: &str = r#"
import sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
t = pb.Trace()
t.ParseFromString(open(sys.argv[1], 'rb').read())
for p in t.packet:
    if p.HasField('track_descriptor'):
        d = p.track_descriptor
        print('track', d.uuid, d.name, d.parent_uuid, d.HasField('counter'))
    else:
        e = p.track_event
        kind = pb.TrackEvent.Type.Name(e.type)
        value = e.double_counter_value if e.type == 4 else e.name
        args = ','.join(f'{a.name}={a.uint_value or a.double_value}' for a in e.debug_annotations)
        print(p.timestamp, kind, e.track_uuid, value, args)
"#;
    // `.ci/setup` installs Perfetto's wheel into this virtual environment.
    let setup_venv = std::env::var("HOME")
        .ok()
        .map(|home| format!("{home}/.cache/rtl-pmc/perfetto-venv/bin/python"));
    let candidates = [
        std::env::var("RTL_PMC_PERFETTO_PYTHON").ok(),
        setup_venv,
        Some("python3".to_string()),
    ];
    for python in candidates.into_iter().flatten() {
        let out = std::process::Command::new(&python)
            .arg("-c")
            .arg(SCRIPT)
            .arg(path)
            .output();
        if let Ok(out) = out {
            if out.status.success() {
                return Some(String::from_utf8_lossy(&out.stdout).into_owned());
            }
        }
    }
    None
}

#[test]
fn perfetto_trace_decodes_with_perfettos_protos() {
    let dir = temp_dir("pftrace");
    let db = two_passes(&dir);
    let formats = Formats {
        csv: false,
        json: false,
        rocpd: false,
        pftrace: true,
        kernel_trace: false,
    };
    let written = write_merged_files(&db, &dir, "results", formats).unwrap();
    let path = dir.join("results.pftrace");
    assert_eq!(written, vec![path.clone()]);
    let bytes = std::fs::read(&path).unwrap();
    // Our own messages read it back: 3 descriptors + per dispatch begin, end and 2 events per
    // counter value (9 values in 5 dispatches).
    let trace =
        <crate::files::perfetto::Trace as prost::Message>::decode(bytes.as_slice()).unwrap();
    assert_eq!(trace.packet.len(), 3 + 1 + 5 * 2 + 9 * 2);
    let Some(decoded) = decode_with_perfetto(&path) else {
        eprintln!(
            "perfetto wheel not found (set RTL_PMC_PERFETTO_PYTHON); checked with prost only"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    };
    let first: Vec<&str> = decoded.lines().take(8).collect();
    assert_eq!(
        first,
        vec![
            "track 1 GPU 2 (gfx942) 0 False",
            "track 2 queue 1 1 False",
            "1000 TYPE_SLICE_BEGIN 2 vadd pid=100,tid=101,dispatch_id=1,grid_size=2048,workgroup_size=256,SQ_WAVES=16.0,GRBM_COUNT=3000.0",
            "track 3 GPU 2 SQ_WAVES 1 True",
            "1000 TYPE_COUNTER 3 16.0 ",
            "1300 TYPE_COUNTER 3 0.0 ",
            "track 4 GPU 2 GRBM_COUNT 1 True",
            "1000 TYPE_COUNTER 4 3000.0 ",
        ]
    );
    assert_eq!(decoded.lines().count(), 3 + 1 + 5 * 2 + 9 * 2);
    assert_eq!(
        decoded
            .lines()
            .filter(|l| l.contains("TYPE_SLICE_END 2"))
            .count(),
        5
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_errors_name_the_file() {
    let dir = temp_dir("errors").join("missing");
    let e = write_merged_files(
        &two_passes(&temp_dir("errors-db")),
        &dir,
        "results",
        Formats::default(),
    )
    .unwrap_err();
    assert!(matches!(e, OutputError::Io(_)));
    assert!(
        e.to_string()
            .starts_with(&format!("{}/results.csv.partial-", dir.display())),
        "{e}"
    );
}

/// The dispatches of one pass of a three-process application: each process launches three
/// kernels in turn (`extra` more launches in process 200), interleaved in time.
fn interleaved_pass(pass: u32, per_process: u64, extra: u64) -> Vec<Dispatch> {
    let kernels = ["vadd", "vmul", "reduce"];
    let mut all = Vec::new();
    for (j, pid) in [300u32, 100, 200].into_iter().enumerate() {
        let launches = per_process + if pid == 200 { extra } else { 0 };
        for n in 1..=launches {
            let start = u64::from(pass) * 10_000_000 + n * 1000 + j as u64 * 333;
            let kernel = kernels[(n % 3) as usize];
            let value = (n * 7 + j as u64) as f64;
            let counters = vec![
                counter(&format!("P{pass}_A"), &[value, value + 0.5]),
                counter(&format!("P{pass}_B"), &[value * 3.0]),
            ];
            // Two queues, taken in turn: each kernel's launches are counted per queue.
            let mut d = dispatch(pid, n, kernel, start, counters);
            d.queue_order = 1 + (n % 2) as u32;
            all.push(d);
        }
    }
    all.sort_by_key(|d| d.start_ns);
    all
}

/// Everything of a profile that must not depend on how its passes were joined: the files and
/// the join in the database.
fn profile_contents(dir: &Path, db: Database) -> Vec<String> {
    write_merged_files(&db, dir, "results", Formats::default()).unwrap();
    let mut contents = Vec::new();
    for pass in [1, 2] {
        let path = dir.join(format!("pass_{pass}.csv"));
        if !path.exists() {
            write_counter_collection(
                &db,
                pass,
                &|_, _| path.clone(),
                &[Table::CounterCollection],
                &AgentLabels::Node,
            )
            .unwrap();
        }
        contents.push(std::fs::read_to_string(path).unwrap());
    }
    contents.push(std::fs::read_to_string(dir.join("results.csv")).unwrap());
    contents.push(crate::files::summary::render(&db, &[], 10).unwrap());
    contents.push(format!("{:?}", db.unmatched().unwrap()));
    // What the summary gathered while inserting is what the database's views say.
    let top = db.top(usize::MAX).unwrap();
    let busy = db.busy().unwrap();
    let counters: Vec<(String, String, f64)> = top
        .iter()
        .flat_map(|k| {
            let counters = db.kernel_counters(&k.kernel).unwrap();
            counters
                .into_iter()
                .map(|c| (k.kernel.clone(), c.name, c.value))
        })
        .collect();
    let db = db.commit(true).unwrap().unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    let view_top: Vec<(String, i64, f64)> =
        rows3(&conn, "SELECT kernel, total_ns, percent FROM rtl_top");
    let top: Vec<(String, i64, f64)> = top
        .into_iter()
        .map(|k| (k.kernel, k.total_ns as i64, k.percent))
        .collect();
    assert_eq!(top, view_top);
    let view_busy: Vec<(u32, i64, f64)> =
        rows3(&conn, "SELECT agent, busy_ns, busy_percent FROM rtl_busy");
    let busy: Vec<(u32, i64, f64)> = busy
        .into_iter()
        .map(|b| (b.agent, b.busy_ns as i64, b.busy_percent))
        .collect();
    assert_eq!(busy, view_busy);
    let mut view_counters: Vec<(String, String, f64)> = rows3(
        &conn,
        "SELECT kernel, counter, value FROM rtl_kernel_counters",
    );
    let mut counters = counters;
    counters.sort_by(|a, b| a.partial_cmp(b).unwrap());
    view_counters.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(counters, view_counters);
    let rows = |query: &str| -> String {
        let mut stmt = conn.prepare(query).unwrap();
        let columns = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..columns)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap();
        rows.map(|r| r.unwrap().join(" ") + "\n").collect()
    };
    contents.push(rows(
        "SELECT k.pass, k.pid, k.dispatch_id, s.string, k.process_order, k.occurrence,
                k.merged_id FROM rtl_dispatch k JOIN rtl_string s ON s.id = k.kernel_id
         ORDER BY k.pass, k.pid, k.dispatch_id",
    ));
    contents.push(rows(
        "SELECT m.id, m.source, m.process_order, s.string, m.occurrence, m.start_ns, m.passes,
                k.pass, k.pid, k.dispatch_id
         FROM rtl_merged_dispatch m JOIN rtl_string s ON s.id = m.kernel_id
         JOIN rtl_dispatch k ON k.id = m.first_dispatch ORDER BY m.id",
    ));
    // rocpd's kernel dispatches: one per merged dispatch, with its launch's symbol and queue.
    let (dispatches, merged): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM rocpd_kernel_dispatch k
                      JOIN rocpd_info_kernel_symbol y ON y.id = k.kernel_id
                      JOIN rocpd_info_queue q ON q.id = k.queue_id
                      JOIN rocpd_event e ON e.id = k.event_id),
                    (SELECT count(*) FROM rtl_merged)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(merged > 0);
    assert_eq!(dispatches, merged);
    contents.push(rows(
        "SELECT k.id, k.pid, k.tid, k.agent_id, y.kernel_name, q.name, k.dispatch_id, k.start,
                k.end, k.grid_size_x, k.workgroup_size_x, k.group_segment_size,
                k.private_segment_size, e.correlation_id, e.stack_id
         FROM rocpd_kernel_dispatch k JOIN rocpd_info_kernel_symbol y ON y.id = k.kernel_id
         JOIN rocpd_info_queue q ON q.id = k.queue_id JOIN rocpd_event e ON e.id = k.event_id
         ORDER BY k.id",
    ));
    contents
}

#[test]
fn the_join_while_inserting_equals_the_join_in_sql() {
    use crate::join::pass::{write_pass, PassSpec, PassWritten, REORDER_WINDOW};
    let per_process = 1 + REORDER_WINDOW as u64 / 3;
    let passes = [
        (1, interleaved_pass(1, per_process, 0)),
        (2, interleaved_pass(2, per_process, 2)),
    ];

    // Joined in SQL: inserted straight into the database, last first.
    let sql = temp_dir("join-sql");
    let mut db = Database::create(&sql.join("results.db")).unwrap();
    for (pass, dispatches) in &passes {
        db.begin_pass(*pass, "").unwrap();
        for d in dispatches.iter().rev() {
            db.insert_many(*pass, &mut [(0, d.clone())]).unwrap();
        }
        db.end_pass(*pass, Some(0)).unwrap();
    }
    let expected = profile_contents(&sql, db);
    assert_eq!(
        expected[0].lines().count(),
        1 + 2 * 3 * per_process as usize
    );
    // Process 200's two extra launches in pass 2, of two different kernels.
    let launches = |pass: usize, kernel: &str| {
        let dispatches = &passes[pass].1;
        dispatches.iter().filter(|d| d.kernel == kernel).count() as u64
    };
    let mut extra: Vec<&str> = passes[1].1[passes[1].1.len() - 2..]
        .iter()
        .map(|d| d.kernel.as_str())
        .collect();
    extra.sort_unstable();
    assert_ne!(extra[0], extra[1]);
    for kernel in extra {
        assert_eq!(launches(1, kernel), launches(0, kernel) + 1);
    }
    let unmatched = crate::model::Unmatched {
        merged: 3 * per_process + 2,
        incomplete: 2,
        per_pass: vec![(1, 3 * per_process, 0), (2, 3 * per_process + 2, 2)],
    };
    assert_eq!(expected[4], format!("{unmatched:?}"));
    assert_eq!(
        expected[2].lines().count(),
        1 + 3 * per_process as usize + 2
    );
    // The last launch is process 200's second extra one, in pass 2 only.
    let last = passes[1].1.last().unwrap();
    let (n, value) = (per_process + 2, 7 * (per_process + 2) + 2);
    // Then the estimate columns of the counters its pass 1 lacks.
    assert!(expected[2].lines().last().unwrap().contains(&format!(
        ",\"{}\",2,1,{},200,201,2048,256,512,16,8,4,32,64,0x{:x},0x{:x},None,None,{}.5,{},{},{},",
        last.kernel,
        4 * n,
        0x5000 + n,
        last.kernel_object,
        2 * value,
        3 * value,
        20_000_000 + n * 1000 + 2 * 333,
        last.end_ns,
    )));

    // Joined while written: nearly in start order (neighbours swapped within the window).
    let fast = temp_dir("join-fast");
    let mut db = Database::create(&fast.join("results.db")).unwrap();
    for (pass, dispatches) in &passes {
        let csv = fast.join(format!("pass_{pass}.csv"));
        let spec = PassSpec {
            pass: *pass,
            label: "",
            csv: Some(&|_, _| csv.clone()),
            tables: &[Table::CounterCollection],
            labels: &AgentLabels::Node,
            processes: &[(0, vec![300, 200, 100])],
            exit_status: Some(0),
        };
        let written = write_pass(&mut db, &spec, |input| {
            for pair in dispatches.chunks(2) {
                for d in pair.iter().rev() {
                    input.write(0, d.clone())?;
                }
            }
            Ok::<_, OutputError>(())
        });
        let expected = PassWritten {
            csv: vec![csv],
            dispatches: dispatches.len() as u64,
        };
        assert_eq!(written.unwrap(), expected);
    }
    assert_eq!(profile_contents(&fast, db), expected);

    // Too far out of order, with a process declared that has no dispatch: the join in SQL,
    // the pass files read back from the database.
    let slow = temp_dir("join-slow");
    let mut db = Database::create(&slow.join("results.db")).unwrap();
    for (pass, dispatches) in &passes {
        let csv = slow.join(format!("pass_{pass}.csv"));
        let declared = match pass {
            1 => vec![50, 100, 200, 300],
            _ => vec![100, 200, 300],
        };
        let spec = PassSpec {
            pass: *pass,
            label: "",
            csv: Some(&|_, _| csv.clone()),
            tables: &[Table::CounterCollection],
            labels: &AgentLabels::Node,
            processes: &[(0, declared)],
            exit_status: Some(0),
        };
        let written = write_pass(&mut db, &spec, |input| {
            for d in dispatches.iter().rev() {
                input.write(0, d.clone())?;
            }
            Ok::<_, OutputError>(())
        });
        assert_eq!(written.unwrap().csv, [csv]);
    }
    assert_eq!(profile_contents(&slow, db), expected);
    for dir in [sql, fast, slow] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// Whether the database of `conn` has a table, view or index named `name`.
fn in_schema(conn: &rusqlite::Connection, name: &str) -> bool {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?1)",
        [name],
        |r| r.get(0),
    )
    .unwrap()
}

/// A merged dispatch's start, process and counter totals.
type MergedTotals = (u64, u32, Vec<(String, f64)>);

/// Each merged dispatch's start, process and counter totals, as the merged files read them.
fn merged_totals(db: &Database) -> Vec<MergedTotals> {
    let mut read = Vec::new();
    db.for_each_merged(false, |d| {
        let totals = d.counters.iter().map(|c| (c.name.clone(), c.total));
        read.push((d.start_ns, d.pid, totals.collect()));
        Ok::<_, DatabaseError>(())
    })
    .unwrap();
    read
}

/// Writes pass `pass` (`label`) of process 100, as `rtl-pmc` writes a pass: its `vadd` launches
/// in turn, each at its start with its counters.
fn write_vadd_pass(
    db: &mut Database,
    pass: u32,
    label: &str,
    launches: impl IntoIterator<Item = (u64, Vec<Counter>)>,
) {
    use crate::join::pass::{write_pass, PassSpec};
    let spec = PassSpec {
        pass,
        label,
        csv: None,
        tables: &[Table::CounterCollection],
        labels: &AgentLabels::Node,
        processes: &[(0, vec![100])],
        exit_status: Some(0),
    };
    write_pass(db, &spec, |input| {
        for (n, (start, counters)) in (1..).zip(launches) {
            input.write(0, dispatch(100, n, "vadd", start, counters))?;
        }
        Ok::<_, OutputError>(())
    })
    .unwrap();
}

/// A database in `dir` of a GPU and `passes` of process 100's `vadd` launches, each pass named
/// for what it collects, each launch its start and a value, its counters made by `counters`.
fn vadd_passes(
    dir: &Path,
    passes: Vec<(&str, Vec<(u64, f64)>)>,
    counters: impl Fn(&str, f64) -> Vec<Counter>,
) -> Database {
    let mut db = Database::create(&dir.join("results.db")).unwrap();
    db.add_agent(&gpu()).unwrap();
    for (pass, (name, launches)) in (1..).zip(passes) {
        let launches = launches
            .into_iter()
            .map(|(start, v)| (start, counters(name, v)));
        write_vadd_pass(&mut db, pass, name, launches);
    }
    db
}

#[test]
fn each_merged_dispatch_counts_the_passes_that_saw_it_whichever_way_passes_are_joined() {
    // Pass 2 lacks the third launch, pass 3 has none, pass 4 has one more than pass 1.
    let passes: [&[u64]; 4] = [
        &[1000, 2000, 3000],
        &[1000, 2000],
        &[],
        &[1000, 2000, 3000, 4000],
    ];
    for in_sql in [false, true] {
        let dir = temp_dir(&format!("missed-{in_sql}"));
        let mut db = Database::create(&dir.join("results.db")).unwrap();
        db.add_agent(&gpu()).unwrap();
        for (pass, starts) in (1..).zip(passes) {
            let launches = starts
                .iter()
                .map(|&start| (start, vec![counter("SQ_WAVES", &[1.0])]));
            match in_sql {
                // In start order, as `rtl-pmc` writes a pass: joined while inserted.
                false => write_vadd_pass(&mut db, pass, "SQ_WAVES", launches),
                // The last launch first: joined in SQL at the end of the pass.
                true => {
                    db.begin_pass(pass, "SQ_WAVES").unwrap();
                    let launches: Vec<_> = (1..).zip(launches).collect();
                    for (n, (start, counters)) in launches.into_iter().rev() {
                        let d = dispatch(100, n, "vadd", start, counters);
                        db.insert_many(pass, &mut [(0, d)]).unwrap();
                    }
                    db.end_pass(pass, Some(0)).unwrap();
                }
            }
        }
        assert_eq!(
            db.unmatched().unwrap(),
            crate::model::Unmatched {
                merged: 4,
                incomplete: 4,
                per_pass: vec![(1, 3, 3), (2, 2, 2), (3, 0, 0), (4, 4, 4)]
            },
            "joined in SQL: {in_sql}"
        );
        let path = db.commit(true).unwrap().unwrap();
        let conn = rusqlite::Connection::open(path).unwrap();
        // Joined in SQL, the merged ids leave start order and the start index is made.
        assert_eq!(in_schema(&conn, "rtl_merged_dispatch_start"), in_sql);
        let seen: Vec<(i64, i64, i64)> = rows3(
            &conn,
            "SELECT d.start_ns, m.missed, d.passes FROM rtl_dispatches d
             JOIN rtl_merged m ON m.id = d.id ORDER BY d.start_ns",
        );
        assert_eq!(
            seen,
            [(1000, 1, 3), (2000, 1, 3), (3000, 2, 2), (4000, 3, 1)],
            "joined in SQL: {in_sql}"
        );
        drop(conn);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn merged_dispatches_are_read_in_start_order_with_the_index_only_where_ids_are_not() {
    // Pass 2 launches `vadd` once more than pass 1, at 3000 (before pass 1's, which start at
    // 5000 and 6000) or at 13000 (after them).
    for (extra, starts, index) in [
        (3000, [3000, 5000, 6000], true),
        (13000, [5000, 6000, 13000], false),
    ] {
        let dir = temp_dir(&format!("start-order-{extra}"));
        let passes = vec![
            ("SQ_WAVES", vec![(5000, 1.0), (6000, 2.0)]),
            (
                "SQ_WAVES",
                vec![(extra - 2000, 3.0), (extra - 1000, 4.0), (extra, 5.0)],
            ),
        ];
        let db = vadd_passes(&dir, passes, |name, v| vec![counter(name, &[v, v])]);
        let mut read = Vec::new();
        db.for_each_merged(true, |d| {
            read.push((d.start_ns, d.counters[0].values.clone()));
            Ok::<_, DatabaseError>(())
        })
        .unwrap();
        let read_starts: Vec<u64> = read.iter().map(|r| r.0).collect();
        assert_eq!(read_starts, starts, "extra launch at {extra}");
        // The extra launch's values are pass 2's, the others pass 1's.
        let values: Vec<f64> = read.iter().map(|r| r.1[0]).collect();
        let expected = match index {
            true => [5.0, 1.0, 2.0],
            false => [1.0, 2.0, 5.0],
        };
        assert_eq!(values, expected);
        let path = db.commit(true).unwrap().unwrap();
        let conn = rusqlite::Connection::open(path).unwrap();
        let has_index = in_schema(&conn, "rtl_merged_dispatch_start");
        assert_eq!(has_index, index, "extra launch at {extra}");
        drop(conn);
        // A reader of the finished database reads in the same order.
        let db = Database::open(&dir.join("results.db")).unwrap();
        let mut again = Vec::new();
        db.for_each_merged(false, |d| {
            again.push(d.start_ns);
            Ok::<_, DatabaseError>(())
        })
        .unwrap();
        assert_eq!(again, starts);
        drop(db);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn estimates_read_each_merged_dispatchs_rows_through_an_index_when_a_pass_lacks_one() {
    // With `extra`, pass 2 launches `vadd` once more: the drift between passes is then read
    // from the rows of the merged dispatches every pass has, found by the index by merged
    // dispatch (without it, a scan of every dispatch row for each merged dispatch).
    for extra in [false, true] {
        let dir = temp_dir(&format!("estimates-index-{extra}"));
        let mut passes = vec![
            ("SQ_WAVES", vec![(5000, 1.0), (6000, 2.0)]),
            ("GRBM_COUNT", vec![(5000, 3.0), (6000, 4.0)]),
        ];
        if extra {
            passes[1].1.push((7000, 5.0));
        }
        let db = vadd_passes(&dir, passes, |name, v| vec![counter(name, &[v])]);
        let gathered = crate::store::estimates::Estimates::compute(&db).unwrap();
        let indexed = db
            .with_connection(|conn| Ok(in_schema(conn, "rtl_dispatch_merged")))
            .unwrap();
        assert_eq!(indexed, extra);
        // The estimates are those read back from the rows, whichever way they were made.
        let read = crate::store::estimates::Estimates::read_back(&db).unwrap();
        assert_eq!(gathered, read, "extra {extra}");
        drop(db);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn each_passs_values_read_in_one_scan_equal_those_read_through_each_merged_dispatch() {
    // Pass 2 collects another counter and launches `vadd` once more, last; with `repeat`, both
    // passes collect TCC_HIT too, which pass 2 then repeats.
    for repeat in [false, true] {
        let dir = temp_dir(&format!("pass-scan-{repeat}"));
        let passes = vec![
            ("SQ_WAVES", vec![(5000, 1.0), (6000, 2.0), (7000, 3.0)]),
            (
                "GRBM_COUNT",
                vec![(15000, 10.0), (16000, 20.0), (17000, 30.0), (18000, 40.0)],
            ),
        ];
        let db = vadd_passes(&dir, passes, |name, v| {
            let mut counters = vec![counter(name, &[v, v])];
            if repeat {
                counters.push(counter("TCC_HIT", &[v]));
            }
            counters
        });
        let c = |name: &str, total: f64| (name.to_string(), total);
        // TCC_HIT is pass 1's where pass 1 has the dispatch.
        let mut expected = vec![
            (5000, 100, vec![c("SQ_WAVES", 2.0), c("GRBM_COUNT", 20.0)]),
            (6000, 100, vec![c("SQ_WAVES", 4.0), c("GRBM_COUNT", 40.0)]),
            (7000, 100, vec![c("SQ_WAVES", 6.0), c("GRBM_COUNT", 60.0)]),
            (18000, 100, vec![c("GRBM_COUNT", 80.0)]),
        ];
        if repeat {
            for (d, hit) in expected.iter_mut().zip([1.0, 2.0, 3.0, 40.0]) {
                let at = d.2.len() - 1;
                d.2.insert(at, c("TCC_HIT", hit));
            }
        }
        // While written: each pass's values in one scan.
        assert_eq!(merged_totals(&db), expected, "repeat {repeat}");
        let (path, while_committing) = db
            .commit_while(true, |db| Ok::<_, DatabaseError>(merged_totals(db)))
            .unwrap();
        assert_eq!(while_committing, expected, "repeat {repeat}");
        // The index by merged dispatch is made only for the repeats.
        let conn = rusqlite::Connection::open(path.unwrap()).unwrap();
        assert_eq!(in_schema(&conn, "rtl_dispatch_merged"), repeat);
        drop(conn);
        // A reader of the finished database finds each merged dispatch's rows.
        let db = Database::open(&dir.join("results.db")).unwrap();
        assert_eq!(merged_totals(&db), expected, "repeat {repeat}");
        drop(db);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_pass_whose_merged_dispatches_come_out_of_their_order_is_not_read_in_one_scan() {
    use crate::join::pass::{write_pass, PassSpec};
    // Two processes. In pass 1 the first launches at 1000 and 3000 and the second at 2000 and
    // 4000: merged dispatches 1 to 4 in start order. In pass 2 the second process runs first
    // (500 and 1500, the first process at 1000 and 3000): its rows name merged dispatches 2,
    // 1, 4, 3 in turn, while the merged dispatches stay in start order.
    let dir = temp_dir("pass-scan-interleaved");
    let mut db = Database::create(&dir.join("results.db")).unwrap();
    db.add_agent(&gpu()).unwrap();
    let passes = [
        ("SQ_WAVES", [100, 101], [[1000, 3000], [2000, 4000]]),
        ("GRBM_COUNT", [200, 201], [[1000, 3000], [500, 1500]]),
    ];
    for (pass, (name, pids, starts)) in (1..).zip(passes) {
        let spec = PassSpec {
            pass,
            label: name,
            csv: None,
            tables: &[Table::CounterCollection],
            labels: &AgentLabels::Node,
            processes: &[(0, pids.to_vec())],
            exit_status: Some(0),
        };
        write_pass(&mut db, &spec, |input| {
            for (process, (pid, starts)) in pids.iter().zip(starts).enumerate() {
                for (n, start) in (1..).zip(starts) {
                    // Each launch's value says which it is: pass, process, launch.
                    let v = f64::from(pass * 100 + process as u32 * 10) + n as f64;
                    let d = dispatch(*pid, n, "vadd", start, vec![counter(name, &[v])]);
                    input.write(0, d)?;
                }
            }
            Ok::<_, OutputError>(())
        })
        .unwrap();
    }
    let read = merged_totals(&db);
    let c = |name: &str, total: f64| (name.to_string(), total);
    assert_eq!(
        read,
        vec![
            (
                1000,
                100,
                vec![c("SQ_WAVES", 101.0), c("GRBM_COUNT", 201.0)]
            ),
            (
                2000,
                101,
                vec![c("SQ_WAVES", 111.0), c("GRBM_COUNT", 211.0)]
            ),
            (
                3000,
                100,
                vec![c("SQ_WAVES", 102.0), c("GRBM_COUNT", 202.0)]
            ),
            (
                4000,
                101,
                vec![c("SQ_WAVES", 112.0), c("GRBM_COUNT", 212.0)]
            ),
        ]
    );
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn counters_come_in_the_databases_order_whatever_order_they_were_collected_in() {
    use crate::join::pass::{write_pass, PassSpec};
    let dir = temp_dir("counter-order");
    let mut db = Database::create(&dir.join("results.db")).unwrap();
    let a = || counter("A", &[1.0]);
    let b = || counter("B", &[2.0]);
    let csv = dir.join("pass_1.csv");
    let spec = PassSpec {
        pass: 1,
        label: "",
        csv: Some(&|_, _| csv.clone()),
        tables: &[Table::CounterCollection],
        labels: &AgentLabels::Node,
        processes: &[(0, vec![100])],
        exit_status: Some(0),
    };
    write_pass(&mut db, &spec, |input| {
        input.write(0, dispatch(100, 1, "vadd", 1000, vec![a(), b()]))?;
        input.write(0, dispatch(100, 2, "vadd", 2000, vec![b(), a()]))?;
        // The same order as the dispatch before: its ids, then the same reordering.
        let (a3, b3) = (counter("A", &[3.0]), counter("B", &[4.0]));
        input.write(0, dispatch(100, 3, "vadd", 3000, vec![b3, a3]))?;
        Ok::<_, OutputError>(())
    })
    .unwrap();
    let names: Vec<(String, String)> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            (fields[15].to_string(), fields[16].to_string())
        })
        .collect();
    let row = |name: &str, value: &str| (format!("\"{name}\""), format!("{value}.000000"));
    assert_eq!(
        names,
        [
            row("A", "1"),
            row("B", "2"),
            row("A", "1"),
            row("B", "2"),
            row("A", "3"),
            row("B", "4")
        ]
    );
    let csv_again = dir.join("again.csv");
    write_counter_collection(
        &db,
        1,
        &|_, _| csv_again.clone(),
        &[Table::CounterCollection],
        &AgentLabels::Node,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        std::fs::read_to_string(&csv_again).unwrap()
    );
    // The summary's totals pair each value with its counter after the reordering too.
    assert_eq!(
        named_values(db.kernel_counters("vadd").unwrap()),
        [("A".to_string(), 5.0), ("B".to_string(), 8.0)]
    );
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every value of a counter collected in two passes (GRBM_COUNT) appears once, from the first
/// pass: in results.csv, results.json, the summary and every view, whether the second pass was
/// joined while inserted or in SQL.
#[test]
fn a_counter_collected_in_two_passes_is_reported_once_from_the_first() {
    let mut outputs = Vec::new();
    for (name, reversed) in [("twice-fast", false), ("twice-sql", true)] {
        let dir = temp_dir(name);
        let mut db = Database::create(&dir.join("results.db")).unwrap();
        db.add_agent(&gpu()).unwrap();
        let counters = |pairs: &[(&str, f64)]| -> Vec<Counter> {
            pairs.iter().map(|(n, v)| counter(n, &[*v, *v])).collect()
        };
        let passes = [
            [
                dispatch(
                    100,
                    1,
                    "vadd",
                    1000,
                    counters(&[("SQ_WAVES", 8.0), ("GRBM_COUNT", 100.0)]),
                ),
                dispatch(
                    100,
                    2,
                    "vmul",
                    2000,
                    counters(&[("SQ_WAVES", 16.0), ("GRBM_COUNT", 200.0)]),
                ),
                dispatch(
                    100,
                    3,
                    "vadd",
                    3000,
                    counters(&[("SQ_WAVES", 8.0), ("GRBM_COUNT", 100.0)]),
                ),
            ],
            [
                dispatch(
                    200,
                    1,
                    "vadd",
                    11000,
                    counters(&[("GRBM_COUNT", 111.0), ("TCC_HIT", 5.0)]),
                ),
                dispatch(
                    200,
                    2,
                    "vmul",
                    12000,
                    counters(&[("GRBM_COUNT", 222.0), ("TCC_HIT", 6.0)]),
                ),
                dispatch(
                    200,
                    3,
                    "vadd",
                    13000,
                    counters(&[("GRBM_COUNT", 111.0), ("TCC_HIT", 5.0)]),
                ),
            ],
        ];
        for (pass, dispatches) in (1..).zip(&passes) {
            db.begin_pass(pass, "").unwrap();
            let mut order: Vec<&Dispatch> = dispatches.iter().collect();
            if reversed {
                order.reverse();
            }
            for d in order {
                db.insert_many(pass, &mut [(0, d.clone())]).unwrap();
            }
            db.end_pass(pass, Some(0)).unwrap();
        }
        let formats = Formats {
            json: true,
            ..Formats::default()
        };
        write_merged_files(&db, &dir, "results", formats).unwrap();
        let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
        let values: Vec<String> = csv
            .lines()
            .map(|l| {
                let fields: Vec<&str> = l.split(',').collect();
                fields[fields.len() - 5..fields.len() - 2].join(",")
            })
            .collect();
        assert_eq!(
            values,
            [
                "SQ_WAVES,GRBM_COUNT,TCC_HIT",
                "16,200,10",
                "32,400,12",
                "16,200,10"
            ]
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap())
                .unwrap();
        let tool = &json["rocprofiler-sdk-tool"][0];
        for (d, grbm) in tool["callback_records"]["counter_collection"]
            .as_array()
            .unwrap()
            .iter()
            .zip([200.0, 400.0, 200.0])
        {
            let totals = d["rtl-pmc"]["counters"].as_object().unwrap();
            let names: Vec<&String> = totals.keys().collect();
            assert_eq!(names, ["GRBM_COUNT", "SQ_WAVES", "TCC_HIT"]);
            assert_eq!(totals["GRBM_COUNT"], grbm);
            // Each counter's two positions once, from the pass that reports it, the counters
            // in rocprofiler-sdk's order (GRBM_COUNT, SQ_WAVES, TCC_HIT).
            let ids: Vec<&Value> = d["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| &r["counter_id"]["handle"])
                .collect();
            assert_eq!(
                ids,
                [
                    &json!(2),
                    &json!(2),
                    &json!(1),
                    &json!(1),
                    &json!(3),
                    &json!(3)
                ]
            );
        }
        let kernel_counters = named_values(db.kernel_counters("vadd").unwrap());
        assert_eq!(
            kernel_counters,
            [
                ("SQ_WAVES".to_string(), 32.0),
                ("GRBM_COUNT".to_string(), 400.0),
                ("TCC_HIT".to_string(), 20.0)
            ]
        );
        let summary = crate::files::summary::render(&db, &[], 10).unwrap();
        assert!(summary.contains("GRBM_COUNT=400"), "{summary}");
        let path = db.commit(true).unwrap().unwrap();
        let conn = rusqlite::Connection::open(path).unwrap();
        let view: Vec<(String, String, f64)> = rows3(
            &conn,
            "SELECT kernel, counter, total FROM rtl_kernel_counters WHERE kernel = 'vadd'",
        );
        let from_totals: Vec<(String, String, f64)> = kernel_counters
            .into_iter()
            .map(|(c, v)| ("vadd".to_string(), c, v))
            .collect();
        assert_eq!(view, from_totals);
        let dimensions: Vec<(String, i64, f64)> = rows3(
            &conn,
            "SELECT counter, count(*), sum(value) FROM rtl_pmc_dimension GROUP BY counter ORDER BY counter",
        );
        assert_eq!(
            dimensions,
            [
                ("GRBM_COUNT".to_string(), 6, 800.0),
                ("SQ_WAVES".to_string(), 6, 64.0),
                ("TCC_HIT".to_string(), 6, 32.0)
            ]
        );
        // The second pass's own values stay in the database, marked as repeats.
        let repeats: Vec<(i64, i64, f64)> = rows3(
            &conn,
            "SELECT k.pass, count(*), sum(v.value) FROM rtl_pmc_value v
             JOIN rtl_dispatch k ON k.id = v.dispatch_id
             WHERE NOT v.reported GROUP BY k.pass",
        );
        assert_eq!(repeats, [(2, 3, 888.0)]);
        // Their positions went with them: every position left is a reported value's.
        let positions: Vec<(i64, i64, f64)> = rows3(
            &conn,
            "SELECT coalesce(v.pmc_id, 0), count(*), sum(j.value)
             FROM rtl_dispatch k, json_each(k.positions) c
             LEFT JOIN rocpd_pmc_event v
               ON v.id BETWEEN k.first_value AND k.first_value + k.value_count - 1
              AND v.pmc_id = (k.positions ->> 0) + c.key - 1,
                  json_each(c.value) j
             WHERE c.type = 'array' GROUP BY 1 ORDER BY 1",
        );
        assert_eq!(positions, [(1, 6, 64.0), (2, 6, 800.0), (3, 6, 32.0)]);
        // A later pass's row starts at its first counter left: no padding where repeats were.
        let later: String = conn
            .query_row(
                "SELECT group_concat(positions, ' ') FROM
                   (SELECT positions FROM rtl_dispatch WHERE pass = 2 ORDER BY id)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(later, "[3,[5,5]] [3,[6,6]] [3,[5,5]]");
        let repeated: String = conn
            .query_row(
                "SELECT group_concat(dimension_values, ' ') FROM
                   (SELECT dimension_values FROM rtl_pmc_repeat ORDER BY dispatch_id)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(repeated, "[111,111] [222,222] [111,111]");
        outputs.push((csv, summary));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    assert_eq!(outputs[0], outputs[1]);
}

#[test]
fn roctx_regions_become_process_thread_and_range_tracks() {
    use rtl_pmc::dispatch::records::{Region, RegionKind};
    let event = |kind, tid, id, depth, timestamp, name: Option<&str>| Region {
        kind,
        pid: 7,
        tid,
        id,
        depth,
        timestamp,
        name: name.map(str::to_string),
        utf8: true,
        object: 0,
    };
    let rows = crate::store::regions::pair(
        1,
        &[
            event(RegionKind::NameThread, 8, 0, -1, 5, Some("main")),
            event(RegionKind::Push, 8, 1, 0, 10, Some("outer")),
            event(RegionKind::Start, 8, 2, -1, 11, Some("async")),
            event(RegionKind::Push, 8, 3, 1, 12, Some("inner")),
            event(RegionKind::Mark, 9, 0, -1, 13, Some("here")),
            event(RegionKind::Resume, 8, 0, -1, 14, None),
            event(RegionKind::Pop, 8, 3, 1, 15, None),
            event(RegionKind::Stop, 9, 2, -1, 16, None),
            event(RegionKind::PopEmpty, 9, 0, -1, 17, None),
            event(RegionKind::Exit, 8, 0, -1, 20, None),
        ],
    );
    let dir = temp_dir("roctx-pftrace");
    let path = dir.join("roctx.pftrace");
    let mut writer = crate::files::perfetto::PerfettoWriter::create(&path, &[]).unwrap();
    writer.write_regions(&rows).unwrap();
    writer.commit().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let trace =
        <crate::files::perfetto::Trace as prost::Message>::decode(bytes.as_slice()).unwrap();
    let lines: Vec<String> = trace
        .packet
        .iter()
        .map(|p| match (&p.track_descriptor, &p.track_event) {
            (Some(d), _) => format!(
                "track {} {} {:?}",
                d.uuid.unwrap(),
                d.name.as_deref().unwrap(),
                d.parent_uuid
            ),
            (None, Some(e)) => format!(
                "{} {} {} {}",
                p.timestamp.unwrap(),
                e.r#type.unwrap(),
                e.track_uuid.unwrap(),
                e.name.as_deref().unwrap_or("-")
            ),
            _ => panic!("an empty packet"),
        })
        .collect();
    assert_eq!(
        lines,
        [
            "track 1 roctx, process 7 None",
            "track 2 thread 8 (main) Some(1)",
            "10 1 2 outer",
            "20 2 2 -",
            "track 3 range async Some(1)",
            "11 1 3 async",
            "16 2 3 -",
            "12 1 2 inner",
            "15 2 2 -",
            "track 4 thread 9 Some(1)",
            "13 3 4 here",
            "14 3 2 roctxProfilerResume",
            "17 3 4 roctxRangePop with no range open",
        ]
    );
    if let Some(decoded) = decode_with_perfetto(&path) {
        assert_eq!(decoded.lines().count(), lines.len(), "{decoded}");
        assert!(
            decoded.contains("track 2 thread 8 (main) 1 False"),
            "{decoded}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn roctx_summary_counts_what_was_recorded_and_each_misuse() {
    use rtl_pmc::dispatch::records::{Region, RegionKind};
    let event = |pid, kind, id, timestamp, name: Option<&str>, object| Region {
        kind,
        pid,
        tid: pid,
        id,
        depth: -1,
        timestamp,
        name: name.map(str::to_string),
        utf8: true,
        object,
    };
    let dir = temp_dir("roctx-summary");
    let db = Database::create(&dir.join("results.db")).unwrap();
    assert_eq!(
        crate::store::regions::summary_lines(&db).unwrap(),
        Vec::<String>::new()
    );
    let first = vec![
        event(1, RegionKind::Push, 1, 10, Some("a"), 0),
        event(1, RegionKind::Push, 2, 11, Some("b"), 0),
        event(1, RegionKind::StopUnknown, 9, 12, None, 0),
        event(1, RegionKind::StopUnknown, 8, 13, None, 0),
        event(1, RegionKind::Dropped, 0, 14, None, 12),
    ];
    let second = vec![
        event(2, RegionKind::Mark, 0, 10, Some("m"), 0),
        event(2, RegionKind::Pause, 0, 11, None, 0),
    ];
    crate::store::regions::store_pass(&db, 1, &[first.clone(), second], &[]).unwrap();
    crate::store::regions::store_pass(&db, 2, &[first], &[]).unwrap();
    assert_eq!(
        crate::store::regions::summary_lines(&db).unwrap(),
        [
            "rtl-pmc: roctx (pass 1): 2 ranges, 1 mark, 1 pause or resume in 2 processes",
            "rtl-pmc: warning: roctx: 2 roctxRangeStop calls of ids no open range has (ignored)",
            "rtl-pmc: warning: roctx: 2 ranges still open when the process ended (ended there): \"a\", \"b\"",
            "rtl-pmc: warning: roctx: 12 calls were not recorded: the application made more than a million before the HSA runtime's first queue or within a quarter of a second",
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A profile whose two passes rotate counter groups over the dispatches (as `pmc_groups` do),
/// the second launching `extra` more (and joined in SQL then); with `impossible`, one value of
/// a percentage lies outside 0-100.
fn rotating_profile(dir: &Path, extra: u64, impossible: bool) -> Database {
    use crate::model::CounterInfo;
    let mut db = Database::create(&dir.join("results.db")).unwrap();
    db.add_agent(&gpu()).unwrap();
    for pass in 1..=2u32 {
        db.begin_pass(pass, "").unwrap();
        if extra == 0 {
            db.declare_processes(0, &[100]);
        }
        for n in 1..=(24 + if pass == 2 { extra } else { 0 }) {
            let kernel = ["vadd", "vmul"][(n % 2) as usize];
            let value = (n * n % 17) as f64 + f64::from(pass) * 0.25;
            // Each pass its own counters (a counter in two passes is read back anyway).
            let waves = format!("WAVES_{pass}");
            let busy = if impossible && n == 5 { 140.0 } else { value };
            let counters = match (n / 2) % 3 {
                0 => vec![counter(&waves, &[value, value + 1.0])],
                1 => vec![counter(&format!("COUNT_{pass}"), &[value * 100.0])],
                _ => vec![
                    counter(&waves, &[value, 2.0]),
                    counter(&format!("BUSY_{pass}"), &[busy]),
                ],
            };
            let d = dispatch(
                100,
                n,
                kernel,
                u64::from(pass) * 1_000_000 + n * 1000,
                counters,
            );
            db.insert_many(pass, &mut [(0, d)]).unwrap();
        }
        db.end_pass(pass, Some(0)).unwrap();
    }
    let busy = |pass: u32| CounterInfo {
        name: format!("BUSY_{pass}"),
        unit: "percent".into(),
        derived: true,
        ..CounterInfo::default()
    };
    db.set_counter_info(&[busy(1), busy(2)]).unwrap();
    db
}

#[test]
fn estimates_from_the_moments_gathered_while_inserting_equal_those_read_back() {
    use crate::store::estimates::Estimates;
    for (extra, impossible) in [(0, false), (3, false), (0, true)] {
        let dir = temp_dir(&format!("gathered-{extra}-{impossible}"));
        let db = rotating_profile(&dir, extra, impossible);
        assert!(db.sampled().is_some());
        let gathered = Estimates::compute(&db).unwrap();
        let read_back = Estimates::read_back(&db).unwrap();
        assert_eq!(
            gathered, read_back,
            "extra {extra}, impossible {impossible}"
        );
        // Sampled strata, drift between the passes, and the impossible value flagged.
        assert!(gathered.estimates.iter().any(|e| e.sampled < e.dispatches));
        assert!(!gathered.drift.is_empty());
        assert_eq!(
            gathered.estimates.iter().any(|e| e.impossible.is_some()),
            impossible
        );
        drop(db);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn databases_of_another_layout_are_refused_by_name() {
    let dir = temp_dir("layout");
    for (name, schema, reason) in [
        (
            "earlier.db",
            "CREATE TABLE rtl_pmc_value(dispatch_id, pmc_id, value)",
            "written by an earlier rtl-pmc, which stored the counter values in another layout; \
             profile again with this one to merge",
        ),
        (
            "extdata.db",
            "CREATE TABLE e(id, extdata); CREATE VIEW rtl_pmc_value AS SELECT id FROM e",
            "written by an earlier rtl-pmc, which stored the counter values in another layout; \
             profile again with this one to merge",
        ),
        (
            "positions.db",
            "CREATE TABLE rtl_pmc_positions(id INTEGER PRIMARY KEY, dimension_values TEXT);
             CREATE TABLE rtl_dispatch(id INTEGER PRIMARY KEY, pass);
             CREATE VIEW rtl_pmc_value AS SELECT id FROM rtl_pmc_positions",
            "written by an earlier rtl-pmc, which stored the counter values in another layout; \
             profile again with this one to merge",
        ),
        (
            "shifted.db",
            "CREATE TABLE rtl_dispatch(id INTEGER PRIMARY KEY, pass, positions);
             CREATE TABLE v(id INTEGER PRIMARY KEY);
             CREATE VIEW rtl_pmc_value AS SELECT id >> 20 AS dispatch_id FROM v",
            "written by an earlier rtl-pmc, which stored the counter values in another layout; \
             profile again with this one to merge",
        ),
        (
            "other.db",
            "CREATE TABLE t(x)",
            "not an rtl-pmc database (it has no rtl_pmc_value)",
        ),
    ] {
        let path = dir.join(name);
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(schema)
            .unwrap();
        let error = Database::open(&path).err().unwrap();
        assert_eq!(error.to_string(), format!("{}: {reason}", path.display()));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Counters with one position between and after those with several: each array sits under
/// its counter's id, with `null` for the one between, and reads back by counter.
#[test]
fn a_dispatch_row_keeps_each_counters_positions_under_its_id() {
    let dir = temp_dir("positions-gaps");
    let mut db = Database::create(&dir.join("results.db")).unwrap();
    db.add_agent(&gpu()).unwrap();
    db.begin_pass(1, "").unwrap();
    let counters = vec![
        counter("A", &[1.0, 2.0]),
        counter("B", &[3.0]),
        counter("C", &[4.0, 5.0]),
        counter("D", &[6.0]),
    ];
    db.insert_many(1, &mut [(0, dispatch(100, 1, "vadd", 1000, counters))])
        .unwrap();
    db.end_pass(1, Some(0)).unwrap();
    let conn = rusqlite::Connection::open(db.commit(true).unwrap().unwrap()).unwrap();
    let raw: String = conn
        .query_row("SELECT positions FROM rtl_dispatch", [], |r| r.get(0))
        .unwrap();
    assert_eq!(raw, "[1,[1,2],null,[4,5]]");
    let read: Vec<(String, Option<String>)> = conn
        .prepare(
            "SELECT p.name, v.dimension_values FROM rtl_pmc_value v
             JOIN rtl_counter p ON p.id = v.pmc_id ORDER BY p.id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        read,
        [
            ("A".to_string(), Some("[1,2]".to_string())),
            ("B".to_string(), None),
            ("C".to_string(), Some("[4,5]".to_string())),
            ("D".to_string(), None)
        ]
    );
    let dimensions: Vec<(String, i64, f64)> = rows3(
        &conn,
        "SELECT counter, position, value FROM rtl_pmc_dimension ORDER BY counter, position",
    );
    assert_eq!(
        dimensions,
        [
            ("A".to_string(), 0, 1.0),
            ("A".to_string(), 1, 2.0),
            ("B".to_string(), 0, 3.0),
            ("C".to_string(), 0, 4.0),
            ("C".to_string(), 1, 5.0),
            ("D".to_string(), 0, 6.0)
        ]
    );
}

/// The rows and values of every dispatch of `db` once committed, each as text, and the
/// dispatches' `positions`.
fn stored_dispatches(db: Database) -> (Vec<String>, Vec<Option<String>>) {
    let conn = rusqlite::Connection::open(db.commit(true).unwrap().unwrap()).unwrap();
    let mut rows: Vec<String> = conn
        .prepare("SELECT * FROM rtl_dispatch ORDER BY id")
        .unwrap()
        .query_map([], |r| {
            let fields = (0..r.as_ref().column_count())
                .map(|i| {
                    r.get::<_, rusqlite::types::Value>(i)
                        .map(|v| format!("{v:?}"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(fields.join(","))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let values: Vec<(i64, i64, f64)> = rows3(
        &conn,
        "SELECT dispatch_id, pmc_id, value FROM rtl_pmc_value ORDER BY dispatch_id, pmc_id",
    );
    rows.extend(values.iter().map(|v| format!("{v:?}")));
    let positions = conn
        .prepare("SELECT positions FROM rtl_dispatch ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (rows, positions)
}

/// A batch made with the ids the reading thread knows is stored exactly as one the database
/// makes: the same ids, each dispatch's counters put in id order, the same `positions`; a
/// batch with a name it does not know is left untouched for the database, and the reading
/// thread learns that name's id from it once inserted.
#[test]
fn a_batch_made_with_known_ids_is_stored_as_the_database_makes_it() {
    use crate::store::prepared::{NameIds, Prepared};
    let dir = temp_dir("prepared");
    // Gives A, B, C and D the ids 1 to 4.
    let first = || {
        let counters = ["A", "B", "C", "D"].map(|name| counter(name, &[1.0, 2.0]));
        vec![(0, dispatch(100, 1, "vadd", 1000, counters.to_vec()))]
    };
    // Counters out of id order, one with a single value and one left out; a dispatch without
    // counters; the next one's counters in another order.
    let later = || {
        let counters = |n: u64| {
            vec![
                counter("D", &[6.0]),
                counter("A", &[0.5, n as f64]),
                counter("C", &[n as f64, 2.5]),
            ]
        };
        let mut third = counters(3);
        third.rotate_left(2);
        vec![
            (0, dispatch(100, 2, "vadd", 2000, counters(2))),
            (0, dispatch(100, 5, "vadd", 2500, vec![])),
            (0, dispatch(100, 3, "vadd", 3000, third)),
        ]
    };
    // A kernel and a counter first seen in the pass.
    let new_name = || {
        let counters = vec![counter("E", &[7.0, 8.0]), counter("A", &[9.0, 1.0])];
        vec![(0, dispatch(100, 4, "vmul", 4000, counters))]
    };
    let mut stored = Vec::new();
    for on_reading_thread in [false, true] {
        let mut db = Database::create(&dir.join(format!("{on_reading_thread}.db"))).unwrap();
        db.begin_pass(1, "").unwrap();
        db.insert_many(1, &mut first()).unwrap();
        let (mut later, mut new_name) = (later(), new_name());
        match on_reading_thread {
            false => {
                db.insert_many(1, &mut later).unwrap();
                db.insert_many(1, &mut new_name).unwrap();
            }
            true => {
                let mut known = db.name_ids();
                let mut prepared = Prepared::default();
                assert!(prepared.make_known(&mut later, &known));
                assert_eq!(prepared.ids(), [1, 1, 3, 4, 1, 1, 1, 3, 4]);
                let names = |d: &Dispatch| -> Vec<String> {
                    d.counters.iter().map(|c| c.name.clone()).collect()
                };
                assert_eq!(names(&later[0].1), ["A", "C", "D"]);
                assert_eq!(names(&later[2].1), ["A", "C", "D"]);
                db.insert_many_with(1, &mut later, &mut prepared).unwrap();
                // Nothing to learn from a batch made with known ids.
                let mut none = NameIds::default();
                none.learn(&later, &prepared);
                assert!(none.kernels.is_empty() && none.counters.is_empty());
                known.learn(&later, &prepared);
                assert!(!prepared.make_known(&mut new_name, &known));
                assert_eq!(names(&new_name[0].1), ["E", "A"]);
                db.insert_many_with(1, &mut new_name, &mut prepared)
                    .unwrap();
                assert_eq!(names(&new_name[0].1), ["A", "E"]);
                let mut learned = NameIds::default();
                learned.learn(&new_name, &prepared);
                let given = db.name_ids();
                assert_eq!(learned.kernels.get("vmul"), given.kernels.get("vmul"));
                assert!(learned.kernels.contains_key("vmul"));
                assert_eq!(learned.counters.get("A"), Some(&1));
                assert_eq!(learned.counters.get("E"), given.counters.get("E"));
                assert_eq!(learned.counters.get("E"), Some(&5));
            }
        }
        db.end_pass(1, Some(0)).unwrap();
        stored.push(stored_dispatches(db));
    }
    assert_eq!(stored[0], stored[1]);
    assert_eq!(
        stored[1].1[1..],
        [
            Some("[1,[0.5,2],null,[2,2.5]]".to_string()),
            None,
            Some("[1,[0.5,3],null,[3,2.5]]".to_string()),
            Some("[1,[9,1],null,null,null,[7,8]]".to_string())
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `d` with the columns of its launch different from each other, so that none can stand in for
/// another in a test.
fn launch_apart(mut d: Dispatch) -> Dispatch {
    d.agent = 21;
    d.queue_id = 9;
    d.queue_order = 3;
    d.grid = [1024, 11, 13];
    d.workgroup = [256, 5, 6];
    d.lds = 4096;
    d
}

/// The dispatches of a pass launched alike (the same process, thread, GPU, queue, kernel,
/// sizes and resources) share one `rtl_launch` row, while `rtl_dispatch` gives every column of
/// each dispatch row; past the launches kept in memory (2 in the unit tests) a launch met again
/// gets a row of its own, which the view reads the same.
#[test]
fn dispatches_launched_alike_share_one_launch_and_the_view_gives_every_column() {
    let dir = temp_dir("launches");
    let db_at = dir.join("results.db");
    let mut db = Database::create(&db_at).unwrap();
    // Pass 1: vadd and vmul in turn, two launches. Pass 2: vadd, vmul and a vadd of another
    // grid in turn, three launches, more than the unit tests keep.
    let pass = |kinds: u64| -> Vec<(u32, Dispatch)> {
        (1..=6)
            .map(|n| {
                let kernel = if n % 2 == 0 { "vmul" } else { "vadd" };
                let mut d = launch_apart(dispatch(
                    100,
                    n,
                    kernel,
                    1000 * n,
                    vec![counter("A", &[n as f64])],
                ));
                if kinds == 3 && n == 3 {
                    d.grid[0] = 2048;
                }
                (0, d)
            })
            .collect()
    };
    let mut written = Vec::new();
    for (number, kinds) in [(1, 2), (2, 3)] {
        db.begin_pass(number, "").unwrap();
        let mut dispatches = pass(kinds);
        written.extend(dispatches.iter().map(|(_, d)| (number, d.clone())));
        db.insert_many(number, &mut dispatches).unwrap();
        db.end_pass(number, Some(0)).unwrap();
    }
    let conn = rusqlite::Connection::open(db.commit(true).unwrap().unwrap()).unwrap();
    let launches: Vec<(i64, i64, i64)> = rows3(
        &conn,
        "SELECT pass, count(*), count(DISTINCT kernel_id || ',' || grid_x) FROM rtl_launch
         GROUP BY pass ORDER BY pass",
    );
    // Pass 1 keeps its two launches in memory. Pass 2 forgets them when a third comes: vadd,
    // vmul, vadd 2048 (vadd and vmul forgotten), vmul again, vadd again (vadd 2048 and vmul
    // forgotten), vmul again.
    assert_eq!(launches, [(1, 2, 2), (2, 6, 3)]);
    let shared: (i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT r.launch_id) FROM rtl_dispatch_row r
             JOIN rtl_launch l ON l.id = r.launch_id WHERE l.pass = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(shared, (6, 2));
    let mut stmt = conn
        .prepare(
            "SELECT k.pass, s.string, k.pid, k.tid, k.agent, k.queue_id, k.queue_order,
                    k.queue_index, k.dispatch_id, k.correlation_id, k.kernel_object, k.grid_x,
                    k.grid_y, k.grid_z, k.workgroup_x, k.workgroup_y, k.workgroup_z, k.lds,
                    k.scratch, k.arch_vgpr, k.accum_vgpr, k.sgpr, k.wave_size, k.signal,
                    k.start_ns, k.end_ns, k.symbol_id, k.source, k.value_count
             FROM rtl_dispatch k JOIN rtl_string s ON s.id = k.kernel_id ORDER BY k.id",
        )
        .unwrap();
    let read: Vec<Vec<String>> = stmt
        .query_map([], |r| {
            (0..29)
                .map(|i| {
                    r.get::<_, rusqlite::types::Value>(i).map(|v| match v {
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Text(t) => t,
                        other => format!("{other:?}"),
                    })
                })
                .collect()
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let expected: Vec<Vec<String>> = written
        .iter()
        .map(|(pass, d)| {
            let numbers = [
                d.pid as u64,
                d.tid.into(),
                d.agent.into(),
                d.queue_id,
                d.queue_order.into(),
                d.queue_index,
                d.dispatch_id,
                d.correlation_id,
                d.kernel_object,
                d.grid[0].into(),
                d.grid[1].into(),
                d.grid[2].into(),
                d.workgroup[0].into(),
                d.workgroup[1].into(),
                d.workgroup[2].into(),
                d.lds.into(),
                d.scratch.into(),
                d.arch_vgpr.into(),
                d.accum_vgpr.into(),
                d.sgpr.into(),
                d.wave_size.into(),
                d.signal,
                d.start_ns,
                d.end_ns,
                d.kernel_id,
                0,
                1,
            ];
            [pass.to_string(), d.kernel.clone()]
                .into_iter()
                .chain(numbers.iter().map(u64::to_string))
                .collect()
        })
        .collect();
    assert_eq!(read, expected);
    // The view has the columns, in their order, that the table of one row per dispatch had.
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('rtl_dispatch')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        columns.join(","),
        "id,pass,source,pid,tid,agent,queue_id,queue_order,queue_index,dispatch_id,\
         correlation_id,kernel_id,kernel_object,grid_x,grid_y,grid_z,workgroup_x,workgroup_y,\
         workgroup_z,lds,scratch,arch_vgpr,accum_vgpr,sgpr,wave_size,signal,start_ns,end_ns,\
         process_order,occurrence,merged_id,symbol_id,positions,first_value,value_count"
    );
}

/// Every merged dispatch and every pass's dispatch rows, as text, read from `db`.
fn read_back(db: &Database) -> Vec<String> {
    let mut read = Vec::new();
    for dimensions in [false, true] {
        db.for_each_merged(dimensions, |d| {
            read.push(format!("merged {d:?}"));
            Ok::<_, DatabaseError>(())
        })
        .unwrap();
        for pass in [1, 2] {
            db.for_each_pass_dispatch(pass, dimensions, |d| {
                read.push(format!("pass {pass} {d:?}"));
                Ok::<_, DatabaseError>(())
            })
            .unwrap();
        }
    }
    read
}

/// The dispatches read back are the same whether each dispatch row's launch is read once for
/// the rows that share it (a database of this rtl-pmc, while written and once finished, more
/// launches than the unit tests keep in memory) or with every row of `rtl_dispatch` (the table
/// of every column an earlier rtl-pmc wrote, without `rtl_launch`).
#[test]
fn dispatches_read_back_the_same_with_their_launch_or_from_an_earlier_rtl_pmcs_table() {
    let dir = temp_dir("read-launches");
    let db = two_passes(&dir);
    let written = read_back(&db);
    // Two processes, two kernels, two passes: more launches than the 2 kept in memory.
    assert_eq!(written.len(), 2 * (5 + 4 + 5));
    assert!(written[0].starts_with("merged Dispatch { pid: 100, tid: 101, agent: 2,"));
    let path = db.commit(true).unwrap().unwrap();
    let finished = read_back(&Database::open(&path).unwrap());
    assert_eq!(finished, written);
    // The same database with the dispatch rows an earlier rtl-pmc kept.
    let earlier = dir.join("earlier.db");
    std::fs::copy(&path, &earlier).unwrap();
    let conn = rusqlite::Connection::open(&earlier).unwrap();
    let values_view: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'rtl_pmc_value'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE rtl_dispatch_table(
           id INTEGER PRIMARY KEY, pass INTEGER NOT NULL, source INTEGER NOT NULL,
           pid INTEGER NOT NULL, tid INTEGER NOT NULL, agent INTEGER NOT NULL,
           queue_id INTEGER NOT NULL, queue_order INTEGER NOT NULL, queue_index INTEGER NOT NULL,
           dispatch_id INTEGER NOT NULL, correlation_id INTEGER NOT NULL,
           kernel_id INTEGER NOT NULL, kernel_object INTEGER NOT NULL,
           grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
           workgroup_x INTEGER NOT NULL, workgroup_y INTEGER NOT NULL,
           workgroup_z INTEGER NOT NULL, lds INTEGER NOT NULL, scratch INTEGER NOT NULL,
           arch_vgpr INTEGER NOT NULL, accum_vgpr INTEGER NOT NULL, sgpr INTEGER NOT NULL,
           wave_size INTEGER NOT NULL, signal INTEGER NOT NULL, start_ns INTEGER NOT NULL,
           end_ns INTEGER NOT NULL, process_order INTEGER, occurrence INTEGER,
           merged_id INTEGER, symbol_id INTEGER NOT NULL DEFAULT 0, positions TEXT,
           first_value INTEGER, value_count INTEGER);
         INSERT INTO rtl_dispatch_table SELECT * FROM rtl_dispatch;
         DROP VIEW rtl_pmc_value;
         DROP VIEW rtl_dispatch;
         DROP TABLE rtl_dispatch_row;
         DROP TABLE rtl_launch;
         PRAGMA legacy_alter_table = ON;
         ALTER TABLE rtl_dispatch_table RENAME TO rtl_dispatch;
         CREATE INDEX rtl_dispatch_merged ON rtl_dispatch(merged_id);
         {};",
        values_view.replace("rtl_dispatch_row", "rtl_dispatch")
    ))
    .unwrap();
    drop(conn);
    assert_eq!(read_back(&Database::open(&earlier).unwrap()), written);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The merged dispatches read with their launch are the dispatches written, field by field, with
/// the row of the first pass (pass 2 gives other correlation ids and signals): each launch read
/// once for the dispatches that share it, and again once forgotten (2 launches kept in the unit
/// tests), while the database is written and once finished. Written in start order, each pass's
/// values are read in one scan while written, and vmul's launch, forgotten by the writer, has a
/// second row; written process by process, the writer keeps three launches, and the reader,
/// going in start order, forgets vmul's and reads it again.
#[test]
fn merged_dispatches_read_with_their_launch_are_the_dispatches_written() {
    // Launches: process 100's vadd (1, 3), its vmul (2, 4, 6) and process 101's vadd (5).
    let input: Vec<Dispatch> = (1..=6)
        .map(|n| {
            let kernel = if n % 2 == 0 { "vmul" } else { "vadd" };
            let pid = if n == 5 { 101 } else { 100 };
            let mut d = launch_apart(dispatch(
                pid,
                n,
                kernel,
                1000 * n,
                vec![counter("A", &[n as f64])],
            ));
            d.correlation_id = 50 + n;
            d
        })
        .collect();
    let expected: Vec<Dispatch> = input
        .iter()
        .map(|d| Dispatch {
            counters: Vec::new(),
            ..d.clone()
        })
        .collect();
    let read = |db: &Database| -> Vec<Dispatch> {
        let mut read = Vec::new();
        db.for_each_merged(false, |d| {
            read.push(Dispatch {
                counters: Vec::new(),
                ..d.clone()
            });
            Ok::<_, DatabaseError>(())
        })
        .unwrap();
        read
    };
    for (by_process, launches) in [(false, 4), (true, 3)] {
        let dir = temp_dir(&format!("merged-launches-{by_process}"));
        let mut order = input.clone();
        if by_process {
            order.sort_by_key(|d| (d.pid, d.dispatch_id));
        }
        let mut db = Database::create(&dir.join("results.db")).unwrap();
        for pass in [1, 2] {
            db.begin_pass(pass, "").unwrap();
            let mut batch: Vec<(u32, Dispatch)> = order
                .iter()
                .map(|d| {
                    let mut d = d.clone();
                    if pass == 2 {
                        d.correlation_id += 100;
                        d.signal += 100;
                    }
                    (0, d)
                })
                .collect();
            db.insert_many(pass, &mut batch).unwrap();
            db.end_pass(pass, Some(0)).unwrap();
        }
        assert_eq!(read(&db), expected, "by process: {by_process}");
        let path = db.commit(true).unwrap().unwrap();
        assert_eq!(read(&Database::open(&path).unwrap()), expected);
        let conn = rusqlite::Connection::open(&path).unwrap();
        let stored: i64 = conn
            .query_row("SELECT count(*) FROM rtl_launch WHERE pass = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(stored, launches, "by process: {by_process}");
        drop(conn);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
