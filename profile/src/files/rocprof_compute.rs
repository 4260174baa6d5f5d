//! A rocprof-compute workload directory written from the merged profile, so that
//! `rocprof-compute analyze -p DIR` reads a profile rtl-pmc collected.
//!
//! Three kinds of file, shaped as rocprof-compute's own `profile` leaves them after its
//! rocprofv3 path has converted and joined its per-input results:
//!
//! * `pmc_perf.csv`: one row per dispatch; the dispatch columns rocprof-compute keeps after its
//!   join (`Dispatch_ID` to `Kernel_ID`), then every counter but the accumulations, by name, then
//!   `Start_Timestamp` and `End_Timestamp`. Counter values and timestamps are printed as pandas
//!   prints the floating-point columns of a pivot table (`12.0`).
//! * `SQ_<LEVEL>.csv` (any level counter whose `<LEVEL>_ACCUM` accumulation was collected, the
//!   file named after the level counter): the converted rocprofv3 columns (`Dispatch_ID` to
//!   `Kernel_ID`), the level counter, and its accumulation under the name rocprof-compute's
//!   panels read, `SQ_ACCUM_PREV_HIRES`. Rows are in the same order as `pmc_perf.csv`, which
//!   `analyze` joins them by.
//! * `sysinfo.csv`: one row of rocprof-compute's machine description, the GPU's part taken
//!   from its KFD topology.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use crate::files::atomic::AtomicFile;
use crate::model::{push_value, Agent, Dispatch};

/// What the workload directory says about the run and the machine besides the GPU topology.
#[derive(Debug, Clone, Default)]
pub struct WorkloadInfo {
    /// The workload's name (rocprof-compute's `--name`).
    pub workload_name: String,
    /// The profiled command line.
    pub command: String,
    /// Host name.
    pub hostname: String,
    /// When the profile was taken, as text.
    pub timestamp: String,
    /// The version string written as the profiler's version.
    pub version: String,
    /// L2 channels (TCC instances) per XCD of the profiled GPU.
    pub l2_channels_per_xcd: u32,
}

/// The name rocprof-compute's panels give a level counter's accumulation.
pub const ACCUMULATION_COLUMN: &str = "SQ_ACCUM_PREV_HIRES";

/// Columns of a level counter's file before the counters (rocprof-compute's converted
/// rocprofv3 order).
pub const LEVEL_FILE_LEADING: [&str; 18] = [
    "Dispatch_ID",
    "GPU_ID",
    "Queue_ID",
    "PID",
    "TID",
    "Grid_Size",
    "Workgroup_Size",
    "LDS_Per_Workgroup",
    "Scratch_Per_Workitem",
    "Arch_VGPR",
    "Accum_VGPR",
    "SGPR",
    "Wave_Size",
    "Kernel_Name",
    "Start_Timestamp",
    "End_Timestamp",
    "Correlation_ID",
    "Kernel_ID",
];

/// The converted columns rocprof-compute's join of its per-input results drops from
/// `pmc_perf.csv` (the timestamps it moves to the end).
const JOIN_DROPS: [&str; 5] = ["Queue_ID", "PID", "TID", "Start_Timestamp", "End_Timestamp"];

/// Columns of `pmc_perf.csv` before the counters.
pub fn pmc_perf_leading() -> impl Iterator<Item = &'static str> {
    LEVEL_FILE_LEADING
        .into_iter()
        .filter(|c| !JOIN_DROPS.contains(c))
}

/// Columns of `sysinfo.csv`, in rocprof-compute's order.
pub const SYSINFO_COLUMNS: [&str; 39] = [
    "workload_name",
    "command",
    "ip_blocks",
    "timestamp",
    "version",
    "hostname",
    "cpu_model",
    "sbios",
    "linux_distro",
    "linux_kernel_version",
    "amd_gpu_kernel_version",
    "cpu_memory",
    "gpu_memory",
    "rocm_version",
    "vbios",
    "compute_partition",
    "memory_partition",
    "gpu_series",
    "gpu_model",
    "gpu_arch",
    "gpu_chip_id",
    "gpu_l1",
    "gpu_l2",
    "cu_per_gpu",
    "simd_per_cu",
    "se_per_gpu",
    "wave_size",
    "workgroup_max_size",
    "max_waves_per_cu",
    "max_sclk",
    "max_mclk",
    "cur_sclk",
    "cur_mclk",
    "total_l2_chan",
    "lds_banks_per_cu",
    "sqc_per_gpu",
    "pipes_per_gpu",
    "num_xcd",
    "num_hbm_channels",
];

/// The hardware blocks a full profile covers, as `sysinfo.csv`'s `ip_blocks` lists them.
const IP_BLOCKS: &str = "SQ|LDS|SQC|TA|TD|TCP|TCC|SPI|CPC|CPF";

/// What a level counter's accumulation adds to its name.
const ACCUM_SUFFIX: &str = "_ACCUM";

/// The accumulation name of level counter `level`.
pub fn accumulation_of(level: &str) -> String {
    format!("{level}{ACCUM_SUFFIX}")
}

/// The level counters of `dispatches` whose accumulation was collected, in first-seen order.
pub fn level_counters(dispatches: &[Dispatch]) -> Vec<String> {
    let mut levels: Vec<String> = Vec::new();
    for dispatch in dispatches {
        let accumulated: HashSet<&str> = dispatch
            .counters
            .iter()
            .filter_map(|c| c.name.strip_suffix(ACCUM_SUFFIX))
            .collect();
        for counter in &dispatch.counters {
            if accumulated.contains(counter.name.as_str()) && !levels.contains(&counter.name) {
                levels.push(counter.name.clone());
            }
        }
    }
    levels
}

/// The counter columns of `pmc_perf.csv`: every counter name but the accumulations of
/// `levels` (the level counters), sorted as rocprofv3's pivot sorts them.
pub fn pmc_perf_counters(dispatches: &[Dispatch], levels: &[String]) -> Vec<String> {
    let accumulations: Vec<String> = levels.iter().map(|l| accumulation_of(l)).collect();
    let mut names: Vec<String> = dispatches
        .iter()
        .flat_map(|d| d.counters.iter().map(|c| c.name.clone()))
        .filter(|name| !accumulations.contains(name))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Writes `pmc_perf.csv`, the level counters' files and `sysinfo.csv` into `dir` (created when
/// missing). `agent` is the profiled GPU; dispatches on other GPUs are numbered by `agents`.
pub fn write(
    dir: &Path,
    agents: &[Agent],
    agent: &Agent,
    dispatches: &[Dispatch],
    info: &WorkloadInfo,
) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let gpu_id = |node: u32| {
        agents
            .iter()
            .find(|a| a.node_id == node)
            .map_or(0, |a| a.gpu_index)
    };
    let sysinfo = sysinfo_text(agent, info)?;
    let levels = level_counters(dispatches);
    write_file(
        &dir.join("pmc_perf.csv"),
        &pmc_perf_text(dispatches, &levels, &gpu_id),
    )?;
    for level in &levels {
        let text = level_file_text(dispatches, level, &gpu_id);
        write_file(&dir.join(format!("{level}.csv")), &text)?;
    }
    write_file(&dir.join("sysinfo.csv"), &sysinfo)?;
    Ok(())
}

/// Writes `text` to `path` atomically.
fn write_file(path: &Path, text: &str) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(text.as_bytes())?;
    file.commit().map(drop)
}

/// A floating-point column value as pandas prints one: integers keep `.0`.
fn float_text(value: f64) -> String {
    let mut printed = Vec::with_capacity(24);
    push_value(&mut printed, value);
    if !printed.iter().any(|b| b".eEni".contains(b)) {
        printed.extend_from_slice(b".0");
    }
    String::from_utf8(printed).unwrap_or_default()
}

/// A CSV file's text, a row at a time, with rocprof-compute's line ends.
struct CsvText(csv::Writer<Vec<u8>>);

impl CsvText {
    fn new() -> CsvText {
        let writer = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        CsvText(writer)
    }

    fn row(&mut self, fields: &[String]) {
        // Writing into a Vec cannot fail.
        let _ = self.0.write_record(fields);
    }

    fn text(self) -> String {
        let bytes = self.0.into_inner().unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// The dispatch columns shared by both files, by column name.
fn dispatch_field(dispatch: &Dispatch, column: &str, gpu_id: &dyn Fn(u32) -> u32) -> String {
    let float = |v: u64| float_text(v as f64);
    match column {
        "Dispatch_ID" => dispatch.dispatch_id.to_string(),
        "GPU_ID" => gpu_id(dispatch.agent).to_string(),
        "Queue_ID" => dispatch.queue_id.to_string(),
        "PID" => dispatch.pid.to_string(),
        "TID" => dispatch.tid.to_string(),
        "Grid_Size" => dispatch.grid_size().to_string(),
        "Workgroup_Size" => dispatch.workgroup_size().to_string(),
        "LDS_Per_Workgroup" => dispatch.lds_block_size().to_string(),
        "Scratch_Per_Workitem" => dispatch.scratch.to_string(),
        "Arch_VGPR" => dispatch.arch_vgpr.to_string(),
        "Accum_VGPR" => dispatch.accum_vgpr.to_string(),
        "SGPR" => dispatch.sgpr.to_string(),
        "Wave_Size" => dispatch.wave_size.to_string(),
        "Kernel_Name" => dispatch.kernel.clone(),
        "Start_Timestamp" => float(dispatch.start_ns),
        "End_Timestamp" => float(dispatch.end_ns),
        "Correlation_ID" => dispatch.correlation_id.to_string(),
        "Kernel_ID" => dispatch.kernel_id.to_string(),
        _ => String::new(),
    }
}

/// A counter's value, empty when it was not collected (pandas' NaN).
fn counter_field(total: Option<f64>) -> String {
    total.map(float_text).unwrap_or_default()
}

/// A counter's value for `dispatch`, as [`counter_field`].
fn counter_of(dispatch: &Dispatch, name: &str) -> String {
    counter_field(
        dispatch
            .counters
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.total),
    )
}

fn pmc_perf_text(
    dispatches: &[Dispatch],
    levels: &[String],
    gpu_id: &dyn Fn(u32) -> u32,
) -> String {
    let counters = pmc_perf_counters(dispatches, levels);
    let mut header: Vec<String> = pmc_perf_leading().map(String::from).collect();
    header.extend(counters.iter().cloned());
    header.push("Start_Timestamp".into());
    header.push("End_Timestamp".into());
    let mut text = CsvText::new();
    text.row(&header);
    for dispatch in dispatches {
        let totals: HashMap<&str, f64> = dispatch
            .counters
            .iter()
            .map(|c| (c.name.as_str(), c.total))
            .collect();
        let mut row: Vec<String> = pmc_perf_leading()
            .map(|c| dispatch_field(dispatch, c, gpu_id))
            .collect();
        row.extend(
            counters
                .iter()
                .map(|c| counter_field(totals.get(c.as_str()).copied())),
        );
        row.push(dispatch_field(dispatch, "Start_Timestamp", gpu_id));
        row.push(dispatch_field(dispatch, "End_Timestamp", gpu_id));
        text.row(&row);
    }
    text.text()
}

fn level_file_text(dispatches: &[Dispatch], level: &str, gpu_id: &dyn Fn(u32) -> u32) -> String {
    let mut header: Vec<String> = LEVEL_FILE_LEADING.iter().map(|c| c.to_string()).collect();
    header.push(level.to_string());
    header.push(ACCUMULATION_COLUMN.to_string());
    let accumulation = accumulation_of(level);
    let mut text = CsvText::new();
    text.row(&header);
    for dispatch in dispatches {
        let mut row: Vec<String> = LEVEL_FILE_LEADING
            .iter()
            .map(|c| dispatch_field(dispatch, c, gpu_id))
            .collect();
        row.push(counter_of(dispatch, level));
        row.push(counter_of(dispatch, &accumulation));
        text.row(&row);
    }
    text.text()
}

/// A KFD property the machine description cannot do without.
fn required(agent: &Agent, name: &str) -> io::Result<u64> {
    agent.find_property(name).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "GPU node {} ({}) has no KFD property '{name}'; sysinfo.csv needs it",
                agent.node_id, agent.name
            ),
        )
    })
}

fn sysinfo_text(agent: &Agent, info: &WorkloadInfo) -> io::Result<String> {
    let num_xcd = required(agent, "num_xcc")?.max(1);
    let simd_count = required(agent, "simd_count")?;
    let simd_per_cu = required(agent, "simd_per_cu")?.max(1);
    let arrays = required(agent, "array_count")?;
    let arrays_per_engine = required(agent, "simd_arrays_per_engine")?.max(1);
    let waves_per_simd = required(agent, "max_waves_per_simd")?;
    let sclk = required(agent, "max_engine_clk_fcompute")?;
    let wave_size = required(agent, "wave_front_size")?;
    let cu_per_gpu = simd_count / simd_per_cu;
    let total_l2_chan = u64::from(info.l2_channels_per_xcd) * num_xcd;
    let value = |column: &str| -> String {
        match column {
            "workload_name" => info.workload_name.clone(),
            "command" => info.command.clone(),
            "ip_blocks" => IP_BLOCKS.to_string(),
            "timestamp" => info.timestamp.clone(),
            "version" => info.version.clone(),
            "hostname" => info.hostname.clone(),
            "gpu_model" | "gpu_series" => agent.product_name.clone(),
            "gpu_arch" => agent.name.clone(),
            "gpu_chip_id" => agent.property("device_id").to_string(),
            "max_mclk" | "cur_mclk" => agent
                .find_property("max_memory_clk")
                .map_or(String::new(), |v| v.to_string()),
            "cu_per_gpu" => cu_per_gpu.to_string(),
            "simd_per_cu" => simd_per_cu.to_string(),
            "se_per_gpu" => (arrays / arrays_per_engine).to_string(),
            "wave_size" => wave_size.to_string(),
            "workgroup_max_size" => "1024".to_string(),
            "max_waves_per_cu" => (waves_per_simd * simd_per_cu).to_string(),
            "max_sclk" | "cur_sclk" => sclk.to_string(),
            "total_l2_chan" | "num_hbm_channels" => total_l2_chan.to_string(),
            "lds_banks_per_cu" => "32".to_string(),
            "sqc_per_gpu" => (cu_per_gpu / 2).to_string(),
            "pipes_per_gpu" => "4".to_string(),
            "num_xcd" => num_xcd.to_string(),
            "compute_partition" => "SPX".to_string(),
            "memory_partition" => "NPS1".to_string(),
            _ => String::new(),
        }
    };
    let header: Vec<String> = SYSINFO_COLUMNS.iter().map(|c| c.to_string()).collect();
    let row: Vec<String> = SYSINFO_COLUMNS.iter().map(|c| value(c)).collect();
    let mut text = CsvText::new();
    text.row(&header);
    text.row(&row);
    Ok(text.text())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Counter;

    fn counter(name: &str, total: f64) -> Counter {
        Counter {
            name: name.into(),
            total,
            dimensions: "DIMENSION_NONE".into(),
            values: vec![total],
        }
    }

    fn dispatch(id: u64, counters: Vec<Counter>) -> Dispatch {
        Dispatch {
            pid: 77,
            tid: 78,
            agent: 1,
            queue_id: 5,
            dispatch_id: id,
            correlation_id: id,
            kernel: "add(float*, int)".into(),
            kernel_id: 3,
            grid: [1024, 1, 1],
            workgroup: [64, 1, 1],
            lds: 100,
            arch_vgpr: 8,
            sgpr: 16,
            wave_size: 64,
            start_ns: 1000 * id,
            end_ns: 1000 * id + 500,
            counters,
            ..Dispatch::default()
        }
    }

    fn gfx942() -> Agent {
        let props = [
            ("num_xcc", 8),
            ("simd_count", 1216),
            ("simd_per_cu", 4),
            ("array_count", 32),
            ("simd_arrays_per_engine", 1),
            ("max_waves_per_simd", 8),
            ("max_engine_clk_fcompute", 2100),
            ("wave_front_size", 64),
            ("device_id", 29857),
        ];
        Agent {
            node_id: 1,
            gpu_index: 0,
            name: "gfx942".into(),
            product_name: "AMD Instinct MI300X".into(),
            model_name: String::new(),
            properties: props.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        }
    }

    fn info() -> WorkloadInfo {
        WorkloadInfo {
            workload_name: "app".into(),
            command: "./app 1".into(),
            hostname: "host".into(),
            timestamp: "t".into(),
            version: "rtl-pmc".into(),
            l2_channels_per_xcd: 16,
        }
    }

    #[test]
    fn pmc_perf_has_rocprof_computes_columns_and_float_counters() {
        let dispatches = vec![
            dispatch(
                1,
                vec![
                    counter("SQ_WAVES", 64.0),
                    counter("GRBM_COUNT", 1200.0),
                    counter("TCC_HIT[3]", 2.5),
                    counter("SQ_LEVEL_WAVES", 7.0),
                    counter("SQ_LEVEL_WAVES_ACCUM", 900.0),
                ],
            ),
            dispatch(2, vec![counter("SQ_WAVES", 128.0)]),
        ];
        let gpu = |_| 0;
        let text = pmc_perf_text(&dispatches, &level_counters(&dispatches), &gpu);
        assert_eq!(
            text,
            "Dispatch_ID,GPU_ID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,\
             Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,Kernel_Name,\
             Correlation_ID,Kernel_ID,GRBM_COUNT,SQ_LEVEL_WAVES,SQ_WAVES,TCC_HIT[3],\
             Start_Timestamp,End_Timestamp\n\
             1,0,1024,64,512,0,8,0,16,64,\"add(float*, int)\",1,3,1200.0,7.0,64.0,2.5,\
             1000.0,1500.0\n\
             2,0,1024,64,512,0,8,0,16,64,\"add(float*, int)\",2,3,,,128.0,,2000.0,2500.0\n"
        );
    }

    #[test]
    fn level_file_carries_the_accumulation_as_sq_accum_prev_hires() {
        let dispatches = vec![dispatch(
            1,
            vec![
                counter("SQ_LEVEL_WAVES", 7.0),
                counter("SQ_LEVEL_WAVES_ACCUM", 900.0),
                counter("SQ_WAVES", 64.0),
            ],
        )];
        assert_eq!(level_counters(&dispatches), ["SQ_LEVEL_WAVES"]);
        let gpu = |_| 0;
        assert_eq!(
            level_file_text(&dispatches, "SQ_LEVEL_WAVES", &gpu),
            "Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,\
             Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,Kernel_Name,\
             Start_Timestamp,End_Timestamp,Correlation_ID,Kernel_ID,SQ_LEVEL_WAVES,\
             SQ_ACCUM_PREV_HIRES\n\
             1,0,5,77,78,1024,64,512,0,8,0,16,64,\"add(float*, int)\",1000.0,1500.0,1,3,\
             7.0,900.0\n"
        );
    }

    #[test]
    fn sysinfo_describes_the_gpu_from_its_topology() {
        let text = sysinfo_text(&gfx942(), &info()).unwrap();
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(header, SYSINFO_COLUMNS);
        let row = reader.records().next().unwrap().unwrap();
        let get =
            |name: &str| row[SYSINFO_COLUMNS.iter().position(|c| *c == name).unwrap()].to_string();
        assert_eq!(get("gpu_arch"), "gfx942");
        assert_eq!(get("cu_per_gpu"), "304");
        assert_eq!(get("num_xcd"), "8");
        assert_eq!(get("se_per_gpu"), "32");
        assert_eq!(get("max_waves_per_cu"), "32");
        assert_eq!(get("max_sclk"), "2100");
        assert_eq!(get("total_l2_chan"), "128");
        assert_eq!(get("wave_size"), "64");
        assert_eq!(get("ip_blocks"), "SQ|LDS|SQC|TA|TD|TCP|TCC|SPI|CPC|CPF");
        assert_eq!(get("command"), "./app 1");
    }

    #[test]
    fn sysinfo_names_a_missing_topology_property() {
        let mut agent = gfx942();
        agent.properties.retain(|(n, _)| n != "simd_count");
        let err = sysinfo_text(&agent, &info()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "GPU node 1 (gfx942) has no KFD property 'simd_count'; sysinfo.csv needs it"
        );
    }

    #[test]
    fn write_creates_the_three_kinds_of_file() {
        let dir = std::env::temp_dir().join(format!("rtl-workload-dir-{}", std::process::id()));
        let dispatches = vec![dispatch(
            1,
            vec![
                counter("SQ_LEVEL_WAVES", 7.0),
                counter("SQ_LEVEL_WAVES_ACCUM", 900.0),
            ],
        )];
        write(&dir, &[gfx942()], &gfx942(), &dispatches, &info()).unwrap();
        let mut names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["SQ_LEVEL_WAVES.csv", "pmc_perf.csv", "sysinfo.csv"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
