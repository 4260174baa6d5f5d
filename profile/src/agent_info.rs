//! The agents as rocprofiler-sdk describes them: rocprofv3's `agent_info.csv` columns, each
//! filled from an agent's KFD properties, and the JSON agent records built from them, which
//! `agent_info.csv`, `results.json` and the rocpd agents' `extdata` all give.

use serde_json::{json, Map, Value};

use crate::model::Agent;

/// rocprofv3's `agent_info.csv` columns, in its order: `(column, KFD property)`; entries
/// without a property are filled from the agent itself (see [`agent_info_value`]).
pub const AGENT_INFO_COLUMNS: [(&str, &str); 53] = [
    ("Node_Id", ""),
    ("Logical_Node_Id", ""),
    ("Agent_Type", ""),
    ("Cpu_Cores_Count", "cpu_cores_count"),
    ("Simd_Count", "simd_count"),
    ("Cpu_Core_Id_Base", "cpu_core_id_base"),
    ("Simd_Id_Base", "simd_id_base"),
    ("Max_Waves_Per_Simd", "max_waves_per_simd"),
    ("Lds_Size_In_Kb", "lds_size_in_kb"),
    ("Gds_Size_In_Kb", "gds_size_in_kb"),
    ("Num_Gws", "num_gws"),
    ("Wave_Front_Size", "wave_front_size"),
    ("Num_Xcc", "num_xcc"),
    ("Cu_Count", "cu_count"),
    ("Array_Count", "array_count"),
    ("Num_Shader_Banks", ""),
    ("Simd_Arrays_Per_Engine", "simd_arrays_per_engine"),
    ("Cu_Per_Simd_Array", "cu_per_simd_array"),
    ("Simd_Per_Cu", "simd_per_cu"),
    ("Max_Slots_Scratch_Cu", "max_slots_scratch_cu"),
    ("Gfx_Target_Version", "gfx_target_version"),
    ("Vendor_Id", "vendor_id"),
    ("Device_Id", "device_id"),
    ("Location_Id", "location_id"),
    ("Domain", "domain"),
    ("Drm_Render_Minor", "drm_render_minor"),
    ("Num_Sdma_Engines", "num_sdma_engines"),
    ("Num_Sdma_Xgmi_Engines", "num_sdma_xgmi_engines"),
    ("Num_Sdma_Queues_Per_Engine", "num_sdma_queues_per_engine"),
    ("Num_Cp_Queues", "num_cp_queues"),
    ("Max_Engine_Clk_Ccompute", "max_engine_clk_ccompute"),
    ("Max_Engine_Clk_Fcompute", "max_engine_clk_fcompute"),
    ("Sdma_Fw_Version", "sdma_fw_version"),
    ("Fw_Version", "fw_version"),
    ("Capability", "capability"),
    ("Cu_Per_Engine", ""),
    ("Max_Waves_Per_Cu", ""),
    ("Family_Id", "family_id"),
    ("Workgroup_Max_Size", ""),
    ("Grid_Max_Size", ""),
    ("Local_Mem_Size", "local_mem_size"),
    ("Hive_Id", "hive_id"),
    ("Gpu_Id", "gpu_id"),
    ("Workgroup_Max_Dim_X", ""),
    ("Workgroup_Max_Dim_Y", ""),
    ("Workgroup_Max_Dim_Z", ""),
    ("Grid_Max_Dim_X", ""),
    ("Grid_Max_Dim_Y", ""),
    ("Grid_Max_Dim_Z", ""),
    ("Name", ""),
    ("Vendor_Name", ""),
    ("Product_Name", ""),
    ("Model_Name", ""),
];

/// The largest work-group of an AMD GPU, in work-items, also per dimension.
const WORKGROUP_MAX: u64 = 1024;
/// The largest grid of an AMD GPU, in work-items, and per dimension (x, y, z): the limits
/// rocprofiler-sdk reports for every GPU agent.
const GRID_MAX: u64 = u32::MAX as u64;
const GRID_MAX_DIM: [u64; 3] = [i32::MAX as u64, u16::MAX as u64, u16::MAX as u64];

/// The value of `column` (with KFD `property`) for `agent`, a CPU when `cpu`, as
/// rocprofiler-sdk derives it from the KFD topology.
pub fn agent_info_value(column: &str, property: &str, agent: &Agent, cpu: bool) -> String {
    let p = |name: &str| agent.property(name);
    let gpu_only = |value: u64| if cpu { 0 } else { value };
    // Shader engines: arrays over arrays per engine (0 when the node gives none).
    let engines = p("array_count")
        .checked_div(p("simd_arrays_per_engine"))
        .unwrap_or(0);
    match column {
        "Node_Id" | "Logical_Node_Id" => agent.node_id.to_string(),
        "Agent_Type" => if cpu { "CPU" } else { "GPU" }.to_string(),
        // A CPU counts its cores as compute units.
        "Cu_Count" if cpu => p("cpu_cores_count").to_string(),
        // The node's own `num_xcc` (0 on a CPU node), 1 when KFD does not give one.
        "Num_Xcc" => agent.find_property("num_xcc").unwrap_or(1).to_string(),
        "Num_Shader_Banks" => engines.to_string(),
        "Cu_Per_Engine" => p("cu_count").checked_div(engines).unwrap_or(0).to_string(),
        "Max_Waves_Per_Cu" => (p("simd_per_cu") * p("max_waves_per_simd")).to_string(),
        "Workgroup_Max_Size"
        | "Workgroup_Max_Dim_X"
        | "Workgroup_Max_Dim_Y"
        | "Workgroup_Max_Dim_Z" => gpu_only(WORKGROUP_MAX).to_string(),
        "Grid_Max_Size" => gpu_only(GRID_MAX).to_string(),
        "Grid_Max_Dim_X" => gpu_only(GRID_MAX_DIM[0]).to_string(),
        "Grid_Max_Dim_Y" => gpu_only(GRID_MAX_DIM[1]).to_string(),
        "Grid_Max_Dim_Z" => gpu_only(GRID_MAX_DIM[2]).to_string(),
        "Name" => agent.name.clone(),
        "Vendor_Name" => if cpu { "CPU" } else { "AMD" }.to_string(),
        "Product_Name" => agent.product_name.clone(),
        "Model_Name" => agent.model_name.clone(),
        _ => p(property).to_string(),
    }
}

/// `sizeof(rocprofiler_agent_t)`, which rocprofv3 writes as each agent's `size`.
const AGENT_SIZE: u64 = 312;

/// The bit fields of KFD's `HSA_CAPABILITY` that rocprofv3 writes, low bits first, with their
/// widths.
const CAPABILITY_BITS: [(&str, u32); 23] = [
    ("HotPluggable", 1),
    ("HSAMMUPresent", 1),
    ("SharedWithGraphics", 1),
    ("QueueSizePowerOfTwo", 1),
    ("QueueSize32bit", 1),
    ("QueueIdleEvent", 1),
    ("VALimit", 1),
    ("WatchPointsSupported", 1),
    ("WatchPointsTotalBits", 4),
    ("DoorbellType", 2),
    ("AQLQueueDoubleMap", 1),
    ("DebugTrapSupported", 1),
    ("WaveLaunchTrapOverrideSupported", 1),
    ("WaveLaunchModeSupported", 1),
    ("PreciseMemoryOperationsSupported", 1),
    ("DEPRECATED_SRAM_EDCSupport", 1),
    ("Mem_EDCSupport", 1),
    ("RASEventNotify", 1),
    ("ASICRevision", 4),
    ("SRAM_EDCSupport", 1),
    ("SVMAPISupported", 1),
    ("CoherentHostAccess", 1),
    ("DebugSupportedFirmware", 1),
];

/// KFD's engine versions: `fw_version` (`uCode`, `Major`, `Minor`, `Stepping`) and
/// `sdma_fw_version` (`uCodeSDMA`, `uCodeRes`), low bits first.
const FW_VERSION_BITS: [(&str, u32); 4] =
    [("uCode", 10), ("Major", 6), ("Minor", 8), ("Stepping", 8)];
const SDMA_FW_VERSION_BITS: [(&str, u32); 2] = [("uCodeSDMA", 10), ("uCodeRes", 10)];

/// `value`'s bit fields named by `fields`, low bits first.
fn bit_fields(value: u64, fields: &[(&str, u32)]) -> Value {
    let mut shift = 0;
    let mut out = Map::new();
    for &(name, width) in fields {
        out.insert(name.into(), json!((value >> shift) & ((1 << width) - 1)));
        shift += width;
    }
    Value::Object(out)
}

/// An agent as rocprofv3 writes it: rocprofiler-sdk's `rocprofiler_agent_t` fields, with the
/// values `agent_info.csv` has, KFD's bit fields named, and the node's unique id as the UUID's
/// bytes. `type` is 1 for a CPU, 2 for a GPU; `id.handle` is the KFD node id.
fn agent_json(a: &Agent, cpu: bool, type_index: usize) -> Value {
    let column = |name: &str| -> u64 {
        let (column, property) = AGENT_INFO_COLUMNS
            .iter()
            .find(|(c, _)| *c == name)
            .copied()
            .unwrap_or((name, ""));
        agent_info_value(column, property, a, cpu)
            .parse()
            .unwrap_or(0)
    };
    let mut fields = Map::new();
    fields.insert("size".into(), json!(AGENT_SIZE));
    fields.insert("id".into(), json!({ "handle": a.node_id }));
    fields.insert("type".into(), json!(if cpu { 1 } else { 2 }));
    for property in [
        "cpu_cores_count",
        "simd_count",
        "mem_banks_count",
        "caches_count",
        "io_links_count",
    ] {
        fields.insert(property.into(), json!(a.property(property)));
    }
    for (name, _) in AGENT_INFO_COLUMNS {
        let key = name.to_ascii_lowercase();
        let value = match name {
            "Node_Id" | "Logical_Node_Id" | "Agent_Type" | "Cpu_Cores_Count" | "Simd_Count" => {
                continue
            }
            "Name" | "Vendor_Name" | "Product_Name" | "Model_Name" => {
                json!(agent_info_value(name, "", a, cpu))
            }
            "Sdma_Fw_Version" => bit_fields(column(name), &SDMA_FW_VERSION_BITS),
            "Fw_Version" => bit_fields(column(name), &FW_VERSION_BITS),
            "Capability" => bit_fields(column(name), &CAPABILITY_BITS),
            _ if name.starts_with("Workgroup_Max_Dim_") || name.starts_with("Grid_Max_Dim_") => {
                let (object, axis) = key.rsplit_once('_').unwrap_or((&key, ""));
                let entry = fields.entry(object).or_insert_with(|| json!({}));
                entry[axis] = json!(column(name));
                continue;
            }
            _ => json!(column(name)),
        };
        fields.insert(key, value);
    }
    fields.insert("node_id".into(), json!(a.node_id));
    fields.insert("logical_node_id".into(), json!(a.node_id));
    fields.insert("logical_node_type_id".into(), json!(type_index));
    let unique_id = a.property("unique_id").to_le_bytes();
    let bytes: Map<String, Value> = (0..16)
        .map(|i| {
            (
                format!("value{i}"),
                json!(unique_id.get(i).copied().unwrap_or(0)),
            )
        })
        .collect();
    fields.insert("uuid".into(), json!({ "bytes": bytes }));
    // rocprofiler-sdk's index among GPUs, -1 for a CPU.
    let gpu_index = if cpu { -1 } else { i64::from(a.gpu_index) };
    fields.insert("gpu_index".into(), json!(gpu_index));
    Value::Object(fields)
}

/// Every agent as rocprofv3 writes it (see [`agent_json`]), by KFD node id, in node order.
pub fn agents_json(gpus: &[Agent], cpus: &[Agent]) -> Vec<(u32, Value)> {
    let mut sorted: Vec<(&Agent, bool)> = cpus
        .iter()
        .map(|a| (a, true))
        .chain(gpus.iter().map(|a| (a, false)))
        .collect();
    sorted.sort_by_key(|(a, _)| a.node_id);
    let (mut cpu_index, mut gpu_index) = (0, 0);
    sorted
        .iter()
        .map(|&(a, cpu)| {
            let index = if cpu { &mut cpu_index } else { &mut gpu_index };
            *index += 1;
            (a.node_id, agent_json(a, cpu, *index - 1))
        })
        .collect()
}
