//! GPU topology: the KFD node properties of one GPU, and the constants and dimension extents
//! derived from them.

use std::collections::BTreeMap;

use crate::Error;

/// The properties every topology must report: the dimension extents depend on them.
const REQUIRED: [&str; 4] = [
    "simd_count",
    "simd_per_cu",
    "array_count",
    "simd_arrays_per_engine",
];

/// Named constants served besides the raw property names, with the rule that computes each.
const NAMED_CONSTANTS: [(&str, &str); 5] = [
    ("CU_NUM", "simd_count / simd_per_cu"),
    ("SE_NUM", "array_count / simd_arrays_per_engine"),
    ("SIMD_NUM", "simd_count"),
    ("XCC_NUM", "num_xcc (1 when KFD does not report it)"),
    ("MAX_WAVE_SIZE", "wave_front_size"),
];

/// KFD node property names an expression may use as constants (the names of
/// `/sys/class/kfd/kfd/topology/nodes/N/properties`). A name outside this list in an
/// expression is an unknown reference; a listed name the GPU does not report is an error
/// when the counter is resolved.
pub const PROPERTY_NAMES: &[&str] = &[
    "cpu_cores_count",
    "simd_count",
    "mem_banks_count",
    "caches_count",
    "io_links_count",
    "p2p_links_count",
    "cpu_core_id_base",
    "simd_id_base",
    "max_waves_per_simd",
    "lds_size_in_kb",
    "gds_size_in_kb",
    "num_gws",
    "wave_front_size",
    "array_count",
    "simd_arrays_per_engine",
    "cu_per_simd_array",
    "simd_per_cu",
    "max_slots_scratch_cu",
    "gfx_target_version",
    "vendor_id",
    "device_id",
    "location_id",
    "domain",
    "drm_render_minor",
    "hive_id",
    "num_sdma_engines",
    "num_sdma_xgmi_engines",
    "num_sdma_queues_per_engine",
    "num_cp_queues",
    "max_engine_clk_fcompute",
    "max_engine_clk_ccompute",
    "local_mem_size",
    "fw_version",
    "capability",
    "debug_prop",
    "sdma_fw_version",
    "unique_id",
    "num_xcc",
    "family_id",
];

/// The topology of one GPU agent: its KFD node properties (`name -> value`).
///
/// Built from the `properties` file of a KFD topology node (or any name/value map), it serves
/// the constants expressions use (raw property names such as `simd_count`, and `CU_NUM`,
/// `SE_NUM`, `SIMD_NUM`, `XCC_NUM`, `MAX_WAVE_SIZE`) and the extents of the sample
/// dimensions. Asking for a property the GPU does not report is an error, never 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    properties: BTreeMap<String, u64>,
}

impl Topology {
    /// A topology from property values. Fails when a property the dimensions depend on
    /// (`simd_count`, `simd_per_cu`, `array_count`, `simd_arrays_per_engine`) is missing or 0.
    pub fn new(properties: BTreeMap<String, u64>) -> Result<Topology, Error> {
        for name in REQUIRED {
            match properties.get(name) {
                None => {
                    return Err(Error::InvalidTopology(format!(
                        "property '{name}' is missing"
                    )))
                }
                Some(0) => return Err(Error::InvalidTopology(format!("property '{name}' is 0"))),
                Some(_) => {}
            }
        }
        if properties.get("num_xcc") == Some(&0) {
            return Err(Error::InvalidTopology("property 'num_xcc' is 0".into()));
        }
        Ok(Topology { properties })
    }

    /// Parses the text of a KFD `properties` file: one `name value` pair per line.
    pub fn from_kfd_properties(text: &str) -> Result<Topology, Error> {
        let mut properties = BTreeMap::new();
        for (number, line) in text.lines().enumerate() {
            let mut words = line.split_whitespace();
            let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
                if line.trim().is_empty() {
                    continue;
                }
                return Err(Error::InvalidTopology(format!(
                    "line {}: expected 'name value', found '{line}'",
                    number + 1
                )));
            };
            let value = value.parse::<u64>().map_err(|_| {
                Error::InvalidTopology(format!("line {}: '{value}' is not a number", number + 1))
            })?;
            properties.insert(name.to_string(), value);
        }
        Topology::new(properties)
    }

    /// All properties.
    pub fn properties(&self) -> &BTreeMap<String, u64> {
        &self.properties
    }

    /// One raw property, if the GPU reports it.
    pub fn property(&self, name: &str) -> Option<u64> {
        self.properties.get(name).copied()
    }

    fn required(&self, name: &str) -> u64 {
        // `new` guarantees the required properties exist and are non-zero.
        self.properties.get(name).copied().unwrap_or(1)
    }

    /// The value of a constant usable in expressions: a named constant (`CU_NUM`, ...) or a
    /// raw property name. `None` when the GPU does not report it.
    pub fn constant(&self, name: &str) -> Option<f64> {
        let value = match name {
            "CU_NUM" => self.cu_count() as f64,
            "SE_NUM" => self.se_count() as f64,
            "SIMD_NUM" => self.required("simd_count") as f64,
            "XCC_NUM" => self.xcc_count() as f64,
            "MAX_WAVE_SIZE" => self.property("wave_front_size")? as f64,
            _ => self.property(name)? as f64,
        };
        Some(value)
    }

    /// True when `name` is a named constant or a known KFD property name (whether or not this
    /// GPU reports it).
    pub fn is_constant_name(name: &str) -> bool {
        NAMED_CONSTANTS.iter().any(|(n, _)| *n == name) || PROPERTY_NAMES.contains(&name)
    }

    /// The named constants and how each is computed, for documentation and listings.
    pub fn named_constants() -> &'static [(&'static str, &'static str)] {
        &NAMED_CONSTANTS
    }

    /// The architecture name encoded by `gfx_target_version` (major*10000 + minor*100 +
    /// stepping, minor and stepping printed as hex digits): 90402 is `gfx942`, 90010 is
    /// `gfx90a`, 110000 is `gfx1100`. `None` when KFD does not report it (or reports 0).
    pub fn gfx_name(&self) -> Option<String> {
        let version = self.property("gfx_target_version").filter(|v| *v > 0)?;
        let (major, minor, stepping) = (version / 10000, version / 100 % 100, version % 100);
        Some(format!("gfx{major}{minor:x}{stepping:x}"))
    }

    /// Active compute units: `simd_count / simd_per_cu`.
    pub fn cu_count(&self) -> u64 {
        self.required("simd_count") / self.required("simd_per_cu")
    }

    /// Shader engines of the whole agent: `array_count / simd_arrays_per_engine`.
    pub fn se_count(&self) -> u64 {
        self.required("array_count") / self.required("simd_arrays_per_engine")
    }

    /// XCCs of the agent: `num_xcc`, or 1 when KFD does not report it (pre-MI300 kernels).
    pub fn xcc_count(&self) -> u64 {
        self.property("num_xcc").unwrap_or(1)
    }

    /// Shader engines per XCC (the extent of `DIMENSION_SHADER_ENGINE`), at least 1.
    pub fn se_per_xcc(&self) -> u64 {
        (self.se_count() / self.xcc_count()).max(1)
    }

    /// Shader arrays per shader engine (the extent of `DIMENSION_SHADER_ARRAY`):
    /// `simd_arrays_per_engine`.
    pub fn arrays_per_se(&self) -> u64 {
        self.required("simd_arrays_per_engine")
    }

    /// Workgroup processors per shader array (the extent of `DIMENSION_WGP`):
    /// `ceil((cu_count / 2) / array_count)`.
    pub fn wgp_per_array(&self) -> u64 {
        (self.cu_count() / 2)
            .div_ceil(self.required("array_count"))
            .max(1)
    }

    /// Texture-class instances per XCC on gfx9 parts: `min(cap, ceil(cu_count / array_count) + 1)`.
    pub fn cu_scaled_instances(&self, cap: u32) -> u32 {
        let per_array = self.cu_count().div_ceil(self.required("array_count")) + 1;
        per_array.min(u64::from(cap)) as u32
    }
}
