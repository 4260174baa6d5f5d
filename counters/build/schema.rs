//! The serde form of the `arch-defs` YAML files (documented in `arch-defs/README.md`), read by
//! the build script.

use std::collections::BTreeMap;

use serde::Deserialize;

/// `arch-defs/<arch>.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArchFile {
    pub architecture: String,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub reference_topology: Option<ReferenceTopology>,
    #[serde(default)]
    pub blocks: Vec<BlockEntry>,
    #[serde(default)]
    pub counters: Vec<CounterEntry>,
}

/// `arch-defs/shared/<group>.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SharedFile {
    pub architectures: Vec<String>,
    #[serde(default)]
    pub blocks: Vec<BlockEntry>,
    #[serde(default)]
    pub counters: Vec<CounterEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReferenceTopology {
    pub product: String,
    pub properties: BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BlockEntry {
    pub name: String,
    pub aql_block_id: u32,
    pub counters_per_pass: u32,
    pub instances_per_xcc: u32,
    #[serde(default)]
    pub scaled_by_cus: bool,
    #[serde(default = "yes")]
    pub per_xcc: bool,
    pub dimensions: Vec<String>,
    #[serde(default)]
    pub budget: Option<String>,
    #[serde(default)]
    pub max_event_id: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CounterEntry {
    pub name: String,
    #[serde(default)]
    pub block: Option<String>,
    #[serde(default)]
    pub event: Option<u64>,
    #[serde(default)]
    pub expression: Option<String>,
    #[serde(default)]
    pub unit: Option<String>,
    pub description: String,
}

fn yes() -> bool {
    true
}
