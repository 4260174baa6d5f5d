//! Device configurations of the simulator: which GPUs exist and their KFD topology properties.
//!
//! `RTL_SIM_DEVICES` names a built-in configuration (`sim/configs/<name>.json`, embedded here) or
//! a path to a JSON file of the same schema: `{"description": "...", "gpus": [GPU, ...]}` (a bare
//! list of GPUs is accepted too). This file uses only `std`, `serde` and `serde_json`, so the CLI
//! includes it by path to write the matching KFD topology for `--sim`.

use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// One GPU agent: KFD node properties (names as in `/sys/class/kfd/kfd/topology/nodes/N/properties`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GpuConfig {
    /// gfx target, e.g. `gfx942` (`HSA_AGENT_INFO_NAME`).
    pub name: String,
    /// Marketing name (`HSA_AMD_AGENT_INFO_PRODUCT_NAME`).
    pub product: String,
    /// KFD node id; GPUs start at 1 after the CPU node 0.
    pub node_id: u32,
    /// KFD `gfx_target_version`, e.g. 90402.
    pub gfx_target_version: u32,
    /// XCCs (compute dies).
    pub num_xcc: u32,
    /// SIMDs in the agent.
    pub simd_count: u32,
    /// SIMDs per CU.
    pub simd_per_cu: u32,
    /// Shader arrays in the agent.
    pub array_count: u32,
    /// Shader arrays per shader engine.
    pub simd_arrays_per_engine: u32,
    /// CUs per shader array (physical, including harvested).
    pub cu_per_simd_array: u32,
    /// Wavefront size.
    pub wave_front_size: u32,
    /// Maximum waves per SIMD.
    pub max_waves_per_simd: u32,
    /// LDS per workgroup in KiB.
    pub lds_size_in_kb: u32,
    /// Maximum engine clock in MHz.
    pub max_engine_clk_fcompute: u32,
    /// Device memory in GiB.
    pub local_mem_gib: u64,
    /// PCI device id (`HSA_AMD_AGENT_INFO_CHIP_ID`).
    pub device_id: u32,
    /// PCI domain.
    pub domain: u32,
    /// PCI bus/device/function (`HSA_AMD_AGENT_INFO_BDFID`, KFD `location_id`).
    pub location_id: u32,
    /// DRM render node minor.
    pub drm_render_minor: u32,
    /// Unique id (`HSA_AMD_AGENT_INFO_UUID` = `GPU-<16 hex digits>`).
    pub unique_id: u64,
}

/// The amdgpu kernel driver's family (`AMDGPU_FAMILY_*` of its `amdgpu_drm.h`, what libdrm's
/// `amdgpu_query_gpu_info` reports and rocprofiler-sdk writes as `Family_Id`) of the gfx target
/// with KFD `gfx_target_version` (major × 10000 + minor × 100 + stepping): `AI` 141 for the
/// gfx9 dGPUs (gfx900 to gfx90a, gfx940 to gfx942, gfx950), `RV` 142 for the gfx9 APUs, `NV`
/// 143, `VGH` 144, `YC` 146, `GC_10_3_6` 149 and `GC_10_3_7` 151 for gfx10.x, `GC_11_0_0` 145,
/// `GC_11_0_1` 148 and `GC_11_5_0` 150 for gfx11.x, `GC_12_0_0` 152 for gfx12; 0 (`UNKNOWN`)
/// for any other target.
pub fn amdgpu_family(gfx_target_version: u32) -> u32 {
    match gfx_target_version {
        90000 | 90004 | 90006 | 90008 | 90010 | 90400 | 90401 | 90402 | 90500 => 141,
        90002 | 90009 | 90012 => 142,
        100100 | 100101 | 100102 | 100300 | 100301 | 100302 | 100304 => 143,
        100303 => 144,
        100305 => 146,
        100306 => 149,
        100307 => 151,
        110000..=110002 => 145,
        110003 => 148,
        110500..=110502 => 150,
        120000 | 120001 => 152,
        _ => 0,
    }
}

/// The CPU's clock in MHz (`HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY` of the CPU agent, KFD's
/// `max_engine_clk_ccompute` on every node).
pub const CPU_CLOCK_MHZ: u32 = 3000;

/// A KFD `mem_banks/N` or `io_links/N` directory: its `properties`, with the fields KFD writes
/// and the simulator does not model as 0.
fn write_subnode(dir: &Path, known: &[(&str, u64)]) -> std::io::Result<()> {
    const MEM_BANK: [&str; 5] = [
        "heap_type",
        "size_in_bytes",
        "flags",
        "width",
        "mem_clk_max",
    ];
    const IO_LINK: [&str; 12] = [
        "type",
        "version_major",
        "version_minor",
        "node_from",
        "node_to",
        "weight",
        "min_latency",
        "max_latency",
        "min_bandwidth",
        "max_bandwidth",
        "recommended_transfer_size",
        "flags",
    ];
    let names: &[&str] = if known.iter().any(|(n, _)| *n == "heap_type") {
        &MEM_BANK
    } else {
        &IO_LINK
    };
    std::fs::create_dir_all(dir)?;
    let mut text = String::new();
    for name in names {
        let value = known.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
        let _ = writeln!(text, "{name} {value}");
    }
    std::fs::write(dir.join("properties"), text)
}

/// A PCIe link (KFD link type 2) from node `from` to node `to`.
fn io_link(from: u64, to: u64) -> [(&'static str, u64); 3] {
    [("type", 2), ("node_from", from), ("node_to", to)]
}

/// KFD's `gpu_id` of the GPU at `index` of a configuration (ROCr's
/// `HSA_AMD_AGENT_INFO_DRIVER_UID`); a CPU node's is 0.
pub fn kfd_gpu_id(index: usize) -> u32 {
    0x1000 + index as u32
}

impl GpuConfig {
    /// Compute units.
    pub fn cu_count(&self) -> u32 {
        self.simd_count / self.simd_per_cu.max(1)
    }

    /// Shader engines (KFD `num_shader_banks`).
    pub fn shader_engines(&self) -> u32 {
        self.array_count / self.simd_arrays_per_engine.max(1)
    }

    /// Maximum waves per CU.
    pub fn max_waves_per_cu(&self) -> u32 {
        self.max_waves_per_simd * self.simd_per_cu
    }

    /// The amdgpu driver's family of the GPU ([`amdgpu_family`] of its gfx target).
    pub fn family_id(&self) -> u32 {
        amdgpu_family(self.gfx_target_version)
    }

    /// `HSA_AMD_AGENT_INFO_UUID` string.
    pub fn uuid(&self) -> String {
        format!("GPU-{:016x}", self.unique_id)
    }

    /// The KFD `properties` file of this node.
    pub fn kfd_properties(&self) -> String {
        let cu = self.cu_count();
        let props: [(&str, u64); 37] = [
            ("cpu_cores_count", 0),
            ("simd_count", self.simd_count.into()),
            ("mem_banks_count", 1),
            ("caches_count", 0),
            ("io_links_count", 1),
            ("cpu_core_id_base", 0),
            ("simd_id_base", 2147487744),
            ("max_waves_per_simd", self.max_waves_per_simd.into()),
            ("lds_size_in_kb", self.lds_size_in_kb.into()),
            ("gds_size_in_kb", 0),
            ("num_gws", 64),
            ("wave_front_size", self.wave_front_size.into()),
            ("array_count", self.array_count.into()),
            ("simd_arrays_per_engine", self.simd_arrays_per_engine.into()),
            ("cu_per_simd_array", self.cu_per_simd_array.into()),
            ("simd_per_cu", self.simd_per_cu.into()),
            ("max_slots_scratch_cu", 32),
            ("gfx_target_version", self.gfx_target_version.into()),
            ("vendor_id", 4098),
            ("device_id", self.device_id.into()),
            ("location_id", self.location_id.into()),
            ("domain", self.domain.into()),
            ("drm_render_minor", self.drm_render_minor.into()),
            ("hive_id", 0),
            ("num_sdma_engines", 2),
            ("num_sdma_xgmi_engines", 0),
            ("num_sdma_queues_per_engine", 0),
            ("num_cp_queues", 0),
            (
                "max_engine_clk_fcompute",
                self.max_engine_clk_fcompute.into(),
            ),
            ("fw_version", 1),
            ("capability", 0),
            ("debug_prop", 0),
            ("sdma_fw_version", 1),
            ("num_xcc", self.num_xcc.into()),
            ("unique_id", self.unique_id),
            ("max_engine_clk_ccompute", CPU_CLOCK_MHZ.into()),
            ("p2p_links_count", 0),
        ];
        let mut out = String::new();
        for (name, value) in props {
            let _ = writeln!(out, "{name} {value}");
        }
        let _ = writeln!(out, "num_cu {cu}");
        let _ = writeln!(out, "local_mem_size {}", self.local_mem_gib << 30);
        out
    }
}

/// A device configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceConfig {
    /// Configuration name (built-in name or file path).
    pub name: String,
    /// One line describing the configuration.
    pub description: String,
    /// GPU agents in enumeration order.
    pub gpus: Vec<GpuConfig>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ConfigFile {
    Full {
        #[serde(default)]
        description: String,
        gpus: Vec<GpuConfig>,
    },
    List(Vec<GpuConfig>),
}

/// The built-in configurations: (name, JSON).
pub const BUILT_IN: &[(&str, &str)] = &[
    ("gfx942", include_str!("../../configs/gfx942.json")),
    ("gfx90a", include_str!("../../configs/gfx90a.json")),
    ("gfx950", include_str!("../../configs/gfx950.json")),
    ("gfx1100", include_str!("../../configs/gfx1100.json")),
    ("gfx1201", include_str!("../../configs/gfx1201.json")),
    ("gfx942x2", include_str!("../../configs/gfx942x2.json")),
    (
        "gfx942-gfx90a",
        include_str!("../../configs/gfx942-gfx90a.json"),
    ),
];

/// The configuration used when `RTL_SIM_DEVICES` is unset.
pub const DEFAULT_CONFIG: &str = "gfx942";

impl DeviceConfig {
    /// Parses a configuration file's text; `origin` names it in errors.
    pub fn parse(origin: &str, text: &str) -> Result<DeviceConfig, String> {
        let file: ConfigFile = serde_json::from_str(text)
            .map_err(|e| format!("device configuration {origin}: {e}"))?;
        let (description, gpus) = match file {
            ConfigFile::Full { description, gpus } => (description, gpus),
            ConfigFile::List(gpus) => (String::new(), gpus),
        };
        if gpus.is_empty() {
            return Err(format!("device configuration {origin}: no GPUs"));
        }
        for (i, gpu) in gpus.iter().enumerate() {
            if gpu.node_id == 0 || gpus[..i].iter().any(|g| g.node_id == gpu.node_id) {
                return Err(format!(
                    "device configuration {origin}: GPU {i} has node_id {} (GPU node ids are unique and start at 1)",
                    gpu.node_id
                ));
            }
            if gpu.simd_per_cu == 0 || gpu.cu_count() == 0 || gpu.wave_front_size == 0 {
                return Err(format!(
                    "device configuration {origin}: GPU {i} has no compute units"
                ));
            }
        }
        Ok(DeviceConfig {
            name: origin.to_string(),
            description,
            gpus,
        })
    }

    /// The configuration named by `spec`: a built-in name, an architecture with a built-in
    /// configuration, or a path to a JSON file.
    pub fn load(spec: &str) -> Result<DeviceConfig, String> {
        let spec = spec.trim();
        if let Some((name, text)) = BUILT_IN.iter().find(|(name, _)| *name == spec) {
            return DeviceConfig::parse(name, text);
        }
        let path = Path::new(spec);
        if path.exists() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("device configuration {spec}: {e}"))?;
            return DeviceConfig::parse(spec, &text);
        }
        let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        Err(format!(
            "unknown simulated device configuration '{spec}': use one of {} or a path to a JSON file",
            names.join(", ")
        ))
    }

    /// The configuration of `RTL_SIM_DEVICES` (default [`DEFAULT_CONFIG`]).
    pub fn from_env() -> Result<DeviceConfig, String> {
        match std::env::var("RTL_SIM_DEVICES") {
            Ok(spec) if !spec.trim().is_empty() => DeviceConfig::load(&spec),
            _ => DeviceConfig::load(DEFAULT_CONFIG),
        }
    }

    /// Writes a KFD-shaped topology (`nodes/<n>/{name,properties,gpu_id}`, CPU node 0 then the
    /// GPUs) under `dir`, replacing what was there.
    pub fn write_kfd_topology(&self, dir: &Path) -> std::io::Result<()> {
        let nodes = dir.join("nodes");
        if nodes.exists() {
            std::fs::remove_dir_all(&nodes)?;
        }
        let cpu = nodes.join("0");
        std::fs::create_dir_all(&cpu)?;
        std::fs::write(cpu.join("name"), "\n")?;
        std::fs::write(cpu.join("gpu_id"), "0\n")?;
        let cpu_props = format!(
            "cpu_cores_count 64\nsimd_count 0\nmem_banks_count 1\ncaches_count 0\nio_links_count {}\n\
             p2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base 0\nmax_waves_per_simd 0\n\
             lds_size_in_kb 0\ngds_size_in_kb 0\nnum_gws 0\nwave_front_size 0\narray_count 0\n\
             simd_arrays_per_engine 0\ncu_per_simd_array 0\nsimd_per_cu 0\nmax_slots_scratch_cu 0\n\
             gfx_target_version 0\nvendor_id 0\ndevice_id 0\nlocation_id 0\ndomain 0\n\
             drm_render_minor 0\nhive_id 0\nnum_sdma_engines 0\nnum_sdma_xgmi_engines 0\n\
             num_sdma_queues_per_engine 0\nnum_cp_queues 0\nmax_engine_clk_fcompute 0\n\
             num_xcc 0\nmax_engine_clk_ccompute {CPU_CLOCK_MHZ}\n",
            self.gpus.len()
        );
        // Host memory, and a PCIe link to each GPU.
        write_subnode(
            &cpu.join("mem_banks/0"),
            &[("heap_type", 0), ("size_in_bytes", 0)],
        )?;
        for (index, gpu) in self.gpus.iter().enumerate() {
            write_subnode(
                &cpu.join(format!("io_links/{index}")),
                &io_link(0, gpu.node_id.into()),
            )?;
        }
        std::fs::write(cpu.join("properties"), cpu_props)?;
        for (index, gpu) in self.gpus.iter().enumerate() {
            let node = nodes.join(gpu.node_id.to_string());
            std::fs::create_dir_all(&node)?;
            std::fs::write(node.join("name"), format!("{}\n", gpu.name))?;
            std::fs::write(node.join("gpu_id"), format!("{}\n", kfd_gpu_id(index)))?;
            std::fs::write(node.join("properties"), gpu.kfd_properties())?;
            // Its device memory (public frame buffer), and its PCIe link to the CPU.
            write_subnode(
                &node.join("mem_banks/0"),
                &[("heap_type", 1), ("size_in_bytes", gpu.local_mem_gib << 30)],
            )?;
            write_subnode(&node.join("io_links/0"), &io_link(gpu.node_id.into(), 0))?;
        }
        std::fs::write(
            dir.join("system_properties"),
            "platform_oem 0\nplatform_id 0\nplatform_rev 0\n",
        )?;
        Ok(())
    }
}
