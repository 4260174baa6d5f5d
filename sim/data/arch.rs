//! Architecture facts shared by the simulated aqlprofile and the simulated GPU: counter blocks
//! (limits, instances, sample attributes), shader-engine topologies, basic counter definitions,
//! and the sample layout aqlprofile gives every block.
//!
//! The tables are the CSV files next to this file, embedded at compile time. Both simulator
//! crates include this file by path so that the library writing command buffers and the device
//! executing them agree on every number.

use std::collections::HashMap;
use std::sync::OnceLock;

const BLOCKS_CSV: &str = include_str!("blocks.csv");
const DIMENSIONS_CSV: &str = include_str!("dimensions.csv");
const TOPOLOGIES_CSV: &str = include_str!("topologies.csv");
const COUNTERS_CSV: &str = include_str!("counters.csv");

/// Ids aqlprofile gives the sample coordinates (`aqlprofile_iterate_event_ids`), with their names.
pub const DIMENSION_IDS: [(&str, u32); 6] = [
    ("XCD", 0),
    ("AID", 1),
    ("SE", 2),
    ("SA", 3),
    ("WGP", 4),
    ("INSTANCE", 5),
];

/// Event ids at or above this value select internal SPI events that use no counter register.
pub const SPI_INTERNAL_EVENT: u32 = 0x100_0000;

/// One counter block of one architecture, as aqlprofile's block table describes it.
#[derive(Debug, Clone)]
pub struct Block {
    /// Architecture whose table holds the block (`gfx942`, ...).
    pub arch: String,
    /// Block name as counter definitions spell it (`SQ`, `TCC`, `GRBM_SE`, ...).
    pub name: String,
    /// Numeric block-name enum value (`hsa_ven_amd_aqlprofile_block_name_t` / v2 extension).
    pub id: u32,
    /// Events of this block one pass may hold (the BLOCK_COUNTERS answer).
    pub counters: u32,
    /// Instances per XCC of the block table, before any topology adjustment.
    pub table_instances: u32,
    /// Whether the v2 instance count is `min(table, ceil(CUs per shader array) + 1)`.
    pub cu_scaled: bool,
    /// Samples are returned per shader engine.
    pub per_se: bool,
    /// Samples are returned per shader array.
    pub per_sa: bool,
    /// Samples are returned per workgroup processor.
    pub per_wgp: bool,
    /// Read once per pass ahead of the per-XCC data (AID blocks).
    pub aid: bool,
    /// Highest event id of the block.
    pub max_event: u32,
    /// Declared coordinate names, outermost first (`XCC`, `INSTANCE`, `SE`, ...).
    pub dims: Vec<String>,
}

/// Shader-engine topology of one product, as KFD reports it.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Marketing name (`MI300X`).
    pub product: String,
    /// gfx target (`gfx942`).
    pub arch: String,
    /// KFD `gfx_target_version`.
    pub gfx_target_version: u32,
    /// XCCs per agent.
    pub num_xcc: u32,
    /// Active compute units.
    pub cu_count: u32,
    /// SIMDs per compute unit.
    pub simd_per_cu: u32,
    /// Shader arrays across all XCCs.
    pub array_count: u32,
    /// Shader arrays per shader engine.
    pub sa_per_se: u32,
    /// Shader engines across all XCCs.
    pub se_count: u32,
    /// Wavefront size.
    pub wave_size: u32,
    /// Waves a SIMD can hold.
    pub max_waves_per_simd: u32,
    /// LDS per workgroup in KiB.
    pub lds_kb: u32,
    /// Peak engine clock in MHz.
    pub clock_mhz: u32,
}

impl Topology {
    /// The counter-relevant part of the topology.
    pub fn geometry(&self) -> Geometry {
        Geometry {
            xcc: self.num_xcc,
            se: self.se_count,
            sa_per_se: self.sa_per_se,
            cu: self.cu_count,
        }
    }
}

/// A basic (hardware) counter of one architecture.
#[derive(Debug, Clone)]
pub struct Counter {
    /// Architecture label of the definition.
    pub arch: String,
    /// Counter name (`SQ_WAVES`).
    pub name: String,
    /// Block name.
    pub block: String,
    /// Event select number.
    pub event: u32,
}

/// The agent topology aqlprofile works with (what `aqlprofile_register_agent` receives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// XCCs of the agent.
    pub xcc: u32,
    /// Shader engines of the agent, across all XCCs.
    pub se: u32,
    /// Shader arrays per shader engine.
    pub sa_per_se: u32,
    /// Compute units of the agent.
    pub cu: u32,
}

impl Geometry {
    /// Shader engines per XCC (at least 1).
    pub fn se_per_xcc(&self) -> u32 {
        (self.se / self.xcc.max(1)).max(1)
    }

    /// Workgroup processors per shader array, as aqlprofile counts them.
    pub fn wgp_per_sa(&self) -> u32 {
        let arrays = (self.se * self.sa_per_se).max(1);
        (self.cu / 2).div_ceil(arrays).max(1)
    }

    /// Compute units per shader array, rounded up.
    pub fn cu_per_sa(&self) -> u32 {
        let arrays = (self.se * self.sa_per_se).max(1);
        self.cu.div_ceil(arrays).max(1)
    }
}

/// Where the samples of one block lie in aqlprofile's output, for one agent geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// XCC loop count (1 for AID blocks, which are read once per pass).
    pub xcc: u32,
    /// Instances per XCC (the v2 BLOCK_ID answer).
    pub instances: u32,
    /// Shader engines per sample set (1 unless per-SE).
    pub se: u32,
    /// Shader arrays per shader engine in a sample set (1 unless per-SA).
    pub sa: u32,
    /// WGPs per shader array in a sample set (1 unless per-WGP).
    pub wgp: u32,
    /// Read once per pass ahead of the per-XCC data.
    pub aid: bool,
}

impl Layout {
    /// Samples one event (one block instance) yields per XCC.
    pub fn samples_per_instance(&self) -> u32 {
        self.se * self.sa * self.wgp
    }

    /// Sample positions of the whole block: XCC x instance x samples per instance.
    pub fn positions(&self) -> usize {
        (self.xcc * self.instances * self.samples_per_instance()) as usize
    }

    /// Flat position (= v2 sample id) of sample `k` of instance `instance` on XCC `xcc`.
    pub fn index(&self, xcc: u32, instance: u32, k: u32) -> usize {
        let spi = self.samples_per_instance();
        (xcc * self.instances * spi + instance * spi + k) as usize
    }

    /// Splits a flat position into (xcc, instance, se, sa, wgp); the WGP varies fastest.
    pub fn coordinates(&self, position: usize) -> [u32; 5] {
        let p = position as u32;
        let spi = self.samples_per_instance();
        let k = p % spi;
        let instance = (p / spi) % self.instances;
        let xcc = p / spi / self.instances;
        [
            xcc,
            instance,
            k / (self.sa * self.wgp),
            (k / self.wgp) % self.sa,
            k % self.wgp,
        ]
    }
}

/// All tables, parsed once.
#[derive(Debug)]
pub struct Tables {
    blocks: Vec<Block>,
    topologies: Vec<Topology>,
    counters: Vec<Counter>,
    counter_index: HashMap<(String, String), usize>,
    event_index: HashMap<(String, String, u32), usize>,
    block_index: HashMap<(String, u32), usize>,
    block_archs: std::collections::HashSet<String>,
}

/// The process-wide tables.
pub fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(Tables::parse)
}

fn records(text: &'static str) -> impl Iterator<Item = csv::StringRecord> {
    csv::Reader::from_reader(text.as_bytes())
        .into_records()
        .map(|r| r.expect("embedded CSV tables are well formed"))
}

fn num(field: &str) -> u32 {
    field.trim().parse().unwrap_or(0)
}

/// Parses `... v1 BLOCK_ID reports 16 ...` out of a notes cell.
fn v1_instances(notes: &str) -> Option<u32> {
    let rest = notes.split("v1 BLOCK_ID reports ").nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

impl Tables {
    fn parse() -> Tables {
        let mut dims: HashMap<(String, String), Vec<String>> = HashMap::new();
        for r in records(DIMENSIONS_CSV) {
            let order = r[2].split(" x ").map(|s| s.trim().to_string()).collect();
            dims.insert((r[0].to_string(), r[1].to_string()), order);
        }
        let blocks: Vec<Block> = records(BLOCKS_CSV)
            .map(|r| {
                let notes = &r[9];
                let attrs = notes
                    .split(';')
                    .find_map(|s| s.trim().strip_prefix("attr "))
                    .unwrap_or("");
                let has = |a: &str| attrs.split('|').any(|x| x == a);
                let v1 = v1_instances(notes);
                Block {
                    arch: r[0].to_string(),
                    name: r[1].to_string(),
                    id: num(&r[2]),
                    counters: num(&r[3]),
                    table_instances: v1.unwrap_or_else(|| num(&r[4])),
                    cu_scaled: v1.is_some(),
                    per_se: &r[5] == "1",
                    per_sa: &r[6] == "1",
                    per_wgp: &r[7] == "1",
                    aid: has("AID"),
                    max_event: num(&r[8]),
                    dims: dims
                        .remove(&(r[0].to_string(), r[1].to_string()))
                        .unwrap_or_else(|| vec!["INSTANCE".to_string()]),
                }
            })
            .collect();
        let topologies = records(TOPOLOGIES_CSV)
            .map(|r| Topology {
                product: r[0].to_string(),
                arch: r[1].to_string(),
                gfx_target_version: num(&r[2]),
                num_xcc: num(&r[3]),
                cu_count: num(&r[4]),
                simd_per_cu: num(&r[6]),
                array_count: num(&r[7]),
                sa_per_se: num(&r[8]),
                se_count: num(&r[10]),
                wave_size: num(&r[11]),
                max_waves_per_simd: num(&r[12]),
                lds_kb: num(&r[13]),
                clock_mhz: num(&r[14]),
            })
            .collect();
        let counters: Vec<Counter> = records(COUNTERS_CSV)
            .filter(|r| &r[2] == "basic")
            .map(|r| Counter {
                arch: r[0].to_string(),
                name: r[1].to_string(),
                block: r[3].to_string(),
                event: num(&r[4]),
            })
            .collect();
        let counter_index = counters
            .iter()
            .enumerate()
            .map(|(i, c)| ((c.arch.clone(), c.name.clone()), i))
            .collect();
        // The first definition of an event wins, as a lookup by event would find it.
        let mut event_index = HashMap::new();
        for (i, c) in counters.iter().enumerate() {
            event_index
                .entry((c.arch.clone(), c.block.clone(), c.event))
                .or_insert(i);
        }
        let block_index = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| ((b.arch.clone(), b.id), i))
            .collect();
        let block_archs = blocks.iter().map(|b| b.arch.clone()).collect();
        Tables {
            blocks,
            topologies,
            counters,
            counter_index,
            event_index,
            block_index,
            block_archs,
        }
    }

    /// The architecture whose block table serves `arch`: itself if it has one, else the
    /// nearest part of its family (`gfx906` -> `gfx908`, `gfx1031` -> `gfx1030`, `gfx11` -> `gfx1100`).
    pub fn table_arch(&self, arch: &str) -> &str {
        if let Some(a) = self.block_archs.get(arch) {
            return a;
        }
        match arch {
            a if a.starts_with("gfx10") => "gfx1030",
            a if a.starts_with("gfx11") => "gfx1100",
            a if a.starts_with("gfx12") => "gfx1200",
            a if a.starts_with("gfx95") => "gfx950",
            a if a.starts_with("gfx94") => "gfx942",
            _ => "gfx908",
        }
    }

    /// Blocks of `arch` (through [`Tables::table_arch`]), in table order.
    pub fn blocks<'a>(&'a self, arch: &str) -> impl Iterator<Item = &'a Block> + 'a {
        let arch = self.table_arch(arch);
        self.blocks.iter().filter(move |b| b.arch == arch)
    }

    /// The block of `arch` called `name`.
    pub fn block_by_name(&self, arch: &str, name: &str) -> Option<&Block> {
        self.blocks(arch).find(|b| b.name == name)
    }

    /// The block of `arch` with enum value `id`.
    pub fn block_by_id(&self, arch: &str, id: u32) -> Option<&Block> {
        let arch = self.table_arch(arch);
        self.block_index
            .get(&(arch.to_string(), id))
            .map(|&i| &self.blocks[i])
    }

    /// All products of the topology table.
    pub fn topologies(&self) -> &[Topology] {
        &self.topologies
    }

    /// The reference chip of `arch`: its first product in the topology table, else the
    /// reference chip of the nearest architecture that has one.
    pub fn reference_topology(&self, arch: &str) -> &Topology {
        let fallback = match arch {
            a if self.topologies.iter().any(|t| t.arch == a) => a,
            "gfx940" => return self.product("MI300A"),
            a if a.starts_with("gfx94") => "gfx942",
            a if a.starts_with("gfx95") => "gfx950",
            a if a.starts_with("gfx90a") => "gfx90a",
            a if a.starts_with("gfx1") => {
                if a.starts_with("gfx12") {
                    "gfx1201"
                } else {
                    "gfx1100"
                }
            }
            _ => "gfx908",
        };
        self.topologies
            .iter()
            .find(|t| t.arch == fallback)
            .unwrap_or(&self.topologies[0])
    }

    fn product(&self, name: &str) -> &Topology {
        self.topologies
            .iter()
            .find(|t| t.product == name)
            .unwrap_or(&self.topologies[0])
    }

    /// Every basic counter defined for exactly `arch` (no family fallback).
    pub fn basic_counters<'a>(&'a self, arch: &'a str) -> impl Iterator<Item = &'a Counter> + 'a {
        self.counters.iter().filter(move |c| c.arch == arch)
    }

    /// Every architecture label that has basic counters.
    pub fn counter_archs(&self) -> Vec<&str> {
        let mut archs: Vec<&str> = self.counters.iter().map(|c| c.arch.as_str()).collect();
        archs.dedup();
        archs.sort_unstable();
        archs.dedup();
        archs
    }

    /// The basic counter `name` of `arch`.
    pub fn counter(&self, arch: &str, name: &str) -> Option<&Counter> {
        self.counter_index
            .get(&(arch.to_string(), name.to_string()))
            .map(|&i| &self.counters[i])
    }

    /// The name of the basic counter of `arch` that is event `event` of block `block`.
    pub fn counter_name(&self, arch: &str, block: &str, event: u32) -> Option<&str> {
        self.event_index
            .get(&(arch.to_string(), block.to_string(), event))
            .map(|&i| self.counters[i].name.as_str())
    }
}

impl Block {
    /// Instances per XCC the v2 API reports for an agent of `geometry`.
    pub fn instances(&self, geometry: &Geometry) -> u32 {
        if self.cu_scaled {
            self.table_instances.min(geometry.cu_per_sa() + 1)
        } else {
            self.table_instances
        }
    }

    /// Where this block's samples lie for an agent of `geometry`.
    pub fn layout(&self, geometry: &Geometry) -> Layout {
        Layout {
            xcc: if self.aid { 1 } else { geometry.xcc.max(1) },
            instances: self.instances(geometry).max(1),
            se: if self.per_se {
                geometry.se_per_xcc()
            } else {
                1
            },
            sa: if self.per_sa {
                geometry.sa_per_se.max(1)
            } else {
                1
            },
            wgp: if self.per_wgp {
                geometry.wgp_per_sa()
            } else {
                1
            },
            aid: self.aid,
        }
    }

    /// Declared sample coordinates for `geometry`: (name, id, extent), outermost first.
    /// The XCC coordinate is present only on agents with more than one XCC.
    pub fn dimensions(&self, geometry: &Geometry) -> Vec<(&'static str, u32, u32)> {
        let layout = self.layout(geometry);
        self.dims
            .iter()
            .filter_map(|d| {
                let (name, extent) = match d.as_str() {
                    "XCC" => ("XCD", geometry.xcc),
                    "AID" => ("AID", 4),
                    "SE" => ("SE", geometry.se_per_xcc()),
                    "SA" => ("SA", geometry.sa_per_se.max(1)),
                    "WGP" => ("WGP", geometry.wgp_per_sa()),
                    _ => ("INSTANCE", layout.instances),
                };
                if name == "XCD" && geometry.xcc <= 1 {
                    return None;
                }
                let id = DIMENSION_IDS
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|d| d.1)?;
                Some((name, id, extent))
            })
            .collect()
    }

    /// Whether `event_id` is an internal SPI event that takes no register.
    pub fn is_internal_event(&self, event_id: u32) -> bool {
        self.name == "SPI" && event_id >= SPI_INTERNAL_EVENT
    }
}
