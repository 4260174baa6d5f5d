//! Block selection (`--block` ids) and the counters a selection needs.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;

use crate::{Error, Metric, PanelSet};

/// A block id as rocprof-compute's `--block` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockId {
    /// Every section.
    All,
    /// A section, e.g. `2`.
    Section(u32),
    /// A table, e.g. `2.1`.
    Table(u32, u32),
    /// One metric of a table by its 0-based row, e.g. `2.1.0`.
    Metric(u32, u32, usize),
}

impl BlockId {
    /// Parses `all`, `N`, `N.M` or `N.M.K`.
    pub fn parse(text: &str) -> Result<BlockId, Error> {
        let bad = || Error::BadBlockId(text.to_string());
        if text.eq_ignore_ascii_case("all") {
            return Ok(BlockId::All);
        }
        let parts: Vec<&str> = text.split('.').collect();
        let num = |s: &str| s.parse::<u32>().map_err(|_| bad());
        match parts.as_slice() {
            [s] => Ok(BlockId::Section(num(s)?)),
            [s, t] => Ok(BlockId::Table(num(s)?, num(t)?)),
            [s, t, m] => Ok(BlockId::Metric(num(s)?, num(t)?, num(m)? as usize)),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for BlockId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlockId::All => write!(f, "all"),
            BlockId::Section(s) => write!(f, "{s}"),
            BlockId::Table(s, t) => write!(f, "{s}.{t}"),
            BlockId::Metric(s, t, m) => write!(f, "{s}.{t}.{m}"),
        }
    }
}

/// How the GPU's L2 is laid out, for expanding per-channel counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterLayout {
    /// XCDs (XCCs) of the GPU, or of its partition.
    pub num_xcd: u32,
    /// L2 channels (TCC instances) per XCD.
    pub l2_channels_per_xcd: u32,
}

/// A level counter and the accumulation collected with it in a pass of their own.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LevelCounter {
    /// The level counter, e.g. `SQ_LEVEL_WAVES`.
    pub level: String,
    /// The name its accumulation has in the profile, e.g. `SQ_LEVEL_WAVES_ACCUM`.
    pub accumulate_name: String,
    /// The accumulation as a counter expression: `accumulate(SQ_LEVEL_WAVES, HIGH_RES)`.
    pub accumulate_expr: String,
}

/// The counters a selection of blocks needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterNeeds {
    /// Counters collected together in any pass: basic and `_sum` counters, and L2 channel
    /// counters as `TCC_HIT[i]` for every channel `i` of every XCD.
    pub counters: BTreeSet<String>,
    /// Level counters, each in a pass of its own with its accumulation.
    pub levels: Vec<LevelCounter>,
}

fn counter_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\$?(?:SQ|SQC|TA|TD|TCP|TCC|CPC|CPF|SPI|GRBM)_[0-9A-Z_]*[0-9A-Z](?:\[|_sum)*")
            .expect("counter pattern")
    })
}

fn variable_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\$([0-9A-Za-z_]*[0-9A-Za-z])").expect("variable pattern"))
}

/// Adds the counters and `$variables` named in `text`.
fn scan(text: &str, counters: &mut BTreeSet<String>, variables: &mut BTreeSet<String>) {
    for m in counter_pattern().find_iter(text) {
        if !m.as_str().starts_with('$') {
            counters.insert(m.as_str().to_string());
        }
    }
    for c in variable_pattern().captures_iter(text) {
        variables.insert(c[1].to_string());
    }
}

fn scan_metric(metric: &Metric, counters: &mut BTreeSet<String>, vars: &mut BTreeSet<String>) {
    for cell in metric.cells.values() {
        scan(cell, counters, vars);
    }
    if let Some(level) = &metric.level {
        scan(level, counters, vars);
    }
}

/// The counters the blocks `blocks` need on `panels`' architecture. An empty selection or
/// [`BlockId::All`] selects every section. A block that does not exist is an error.
pub fn counters_for_blocks(
    panels: &PanelSet,
    blocks: &[BlockId],
    layout: &CounterLayout,
) -> Result<CounterNeeds, Error> {
    let mut counters = BTreeSet::new();
    let mut vars = BTreeSet::new();
    let unknown = |id: &BlockId, what| Error::UnknownBlock {
        id: id.to_string(),
        what,
        arch: panels.architecture.clone(),
    };
    let all = blocks.is_empty() || blocks.contains(&BlockId::All);
    for section in &panels.sections {
        if !all && !blocks.contains(&BlockId::Section(section.id)) {
            continue;
        }
        for metric in section.tables.iter().flat_map(|t| &t.metrics) {
            scan_metric(metric, &mut counters, &mut vars);
        }
        for table in &section.tables {
            if let Some(range) = &table.per_channel {
                scan(range, &mut counters, &mut vars);
            }
        }
    }
    for block in blocks {
        let (s, t, m) = match *block {
            BlockId::All => continue,
            BlockId::Section(s) => {
                panels.section(s).ok_or_else(|| unknown(block, "section"))?;
                continue;
            }
            BlockId::Table(s, t) => (s, t, None),
            BlockId::Metric(s, t, m) => (s, t, Some(m)),
        };
        let section = panels.section(s).ok_or_else(|| unknown(block, "section"))?;
        let table = section
            .tables
            .iter()
            .find(|table| table.position() == (s, t))
            .ok_or_else(|| unknown(block, "table"))?;
        if let Some(range) = &table.per_channel {
            scan(range, &mut counters, &mut vars);
        }
        match m {
            None => table
                .metrics
                .iter()
                .for_each(|metric| scan_metric(metric, &mut counters, &mut vars)),
            Some(m) => {
                let metric = table
                    .metrics
                    .get(m)
                    .ok_or_else(|| unknown(block, "metric"))?;
                scan_metric(metric, &mut counters, &mut vars);
            }
        }
    }
    // Every normalisation stays available whatever the selection.
    for denominator in panels.denominators.values() {
        scan(denominator, &mut counters, &mut vars);
    }
    // Variables name further counters and variables.
    let mut seen = BTreeSet::new();
    while let Some(var) = vars.pop_first() {
        if !seen.insert(var.clone()) {
            continue;
        }
        if let Some(definition) = panels.variables.get(&var) {
            scan(definition, &mut counters, &mut vars);
        }
    }
    Ok(expand(panels, counters, layout))
}

/// Applies rocprof-compute's collection rules to the scanned names.
fn expand(panels: &PanelSet, scanned: BTreeSet<String>, layout: &CounterLayout) -> CounterNeeds {
    let mut needs = CounterNeeds::default();
    let channels = layout.num_xcd * layout.l2_channels_per_xcd;
    for name in scanned {
        if name == "SQ_ACCUM_PREV_HIRES" {
            // Stands for the accumulation of a metric's level counter.
            continue;
        }
        if name == "TCP_TCP_LATENCY_sum" && panels.architecture == "gfx942" {
            // Not collectable on MI300.
            continue;
        }
        if let Some(base) = name.strip_suffix('[') {
            if name.starts_with("TCC") {
                needs
                    .counters
                    .extend((0..channels).map(|i| format!("{base}[{i}]")));
                continue;
            }
        }
        if name.contains("LEVEL") && !name.ends_with("_sum") {
            needs.levels.push(LevelCounter {
                accumulate_name: format!("{name}_ACCUM"),
                accumulate_expr: format!("accumulate({name}, HIGH_RES)"),
                level: name,
            });
            continue;
        }
        needs.counters.insert(name);
    }
    needs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    #[test]
    fn block_ids_parse_like_rocprof_compute() {
        assert_eq!(BlockId::parse("all"), Ok(BlockId::All));
        assert_eq!(BlockId::parse("2"), Ok(BlockId::Section(2)));
        assert_eq!(BlockId::parse("17.3"), Ok(BlockId::Table(17, 3)));
        assert_eq!(BlockId::parse("2.1.5"), Ok(BlockId::Metric(2, 1, 5)));
        assert_eq!(BlockId::parse("2.x"), Err(Error::BadBlockId("2.x".into())));
        assert_eq!(
            BlockId::parse("1.2.3.4"),
            Err(Error::BadBlockId("1.2.3.4".into()))
        );
    }

    #[test]
    fn unknown_blocks_are_errors() {
        let p = load("gfx942").unwrap();
        let layout = CounterLayout {
            num_xcd: 8,
            l2_channels_per_xcd: 16,
        };
        let err = counters_for_blocks(p, &[BlockId::Section(99)], &layout).unwrap_err();
        assert_eq!(err.to_string(), "block id '99': no such section on gfx942");
        let err = counters_for_blocks(p, &[BlockId::Table(2, 9)], &layout).unwrap_err();
        assert_eq!(err.to_string(), "block id '2.9': no such table on gfx942");
        let err = counters_for_blocks(p, &[BlockId::Metric(2, 1, 999)], &layout).unwrap_err();
        assert_eq!(
            err.to_string(),
            "block id '2.1.999': no such metric on gfx942"
        );
    }

    #[test]
    fn l2_channel_counters_expand_per_xcd_and_channel() {
        let p = load("gfx942").unwrap();
        let layout = CounterLayout {
            num_xcd: 8,
            l2_channels_per_xcd: 16,
        };
        let needs = counters_for_blocks(p, &[BlockId::Section(18)], &layout).unwrap();
        let hits: Vec<_> = needs
            .counters
            .iter()
            .filter(|c| c.starts_with("TCC_HIT["))
            .collect();
        assert_eq!(hits.len(), 128);
        assert!(needs.counters.contains("TCC_HIT[127]"));
        assert!(!needs.counters.iter().any(|c| c.ends_with('[')));
    }

    #[test]
    fn level_counters_get_their_own_accumulation() {
        let p = load("gfx90a").unwrap();
        let layout = CounterLayout {
            num_xcd: 1,
            l2_channels_per_xcd: 32,
        };
        let needs = counters_for_blocks(p, &[BlockId::Table(7, 2)], &layout).unwrap();
        assert_eq!(
            needs.levels,
            vec![LevelCounter {
                level: "SQ_LEVEL_WAVES".into(),
                accumulate_name: "SQ_LEVEL_WAVES_ACCUM".into(),
                accumulate_expr: "accumulate(SQ_LEVEL_WAVES, HIGH_RES)".into(),
            }]
        );
        assert!(!needs.counters.contains("SQ_ACCUM_PREV_HIRES"));
    }
}
