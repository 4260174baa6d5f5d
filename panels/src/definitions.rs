//! The data model of panel definitions and their loading from the embedded data files.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::Error;

const FILES: &[(&str, &str)] = &[
    ("gfx90a", include_str!("../data/gfx90a.yaml")),
    ("gfx942", include_str!("../data/gfx942.yaml")),
    ("gfx950", include_str!("../data/gfx950.yaml")),
];

/// The panel definitions of one architecture.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelSet {
    /// The gfx architecture, e.g. `gfx942`.
    pub architecture: String,
    /// The sections, ordered by id.
    pub sections: Vec<Section>,
    /// Named helper expressions referenced as `$name` (e.g. `$GRBM_GUI_ACTIVE_PER_XCD`).
    pub variables: BTreeMap<String, String>,
    /// The normalisations `$denom` may stand for: `per_wave`, `per_cycle`, `per_second`,
    /// `per_kernel`.
    pub denominators: BTreeMap<String, String>,
}

/// A section: one of rocprof-compute's analysis files, selected by its block id (`2`, `17`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// The block id (the file id divided by 100).
    pub id: u32,
    /// The section's title.
    pub title: String,
    /// Its metric tables.
    pub tables: Vec<Table>,
    /// Tables that are not computed from metrics (top kernels, system info, PC sampling).
    #[serde(default)]
    pub sources: Vec<Source>,
}

/// A table shown from a file or a collector of its own rather than from metric expressions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Its id, `N.M`.
    pub id: String,
    /// `raw_csv_table` or `pc_sampling_table`.
    pub kind: String,
    /// Its title.
    pub title: String,
}

/// A table of metrics, selected by its id `N.M`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// The table id, `section.index` (e.g. `2.1`).
    pub id: String,
    /// The table's title (may contain `normUnit`, replaced by the normalisation when shown).
    pub title: String,
    /// How rocprof-compute draws it.
    pub style: TableStyle,
    /// The heading of the metric-name column.
    pub name_heading: String,
    /// The other columns, in order.
    pub columns: Vec<Column>,
    /// The rows.
    pub metrics: Vec<Metric>,
    /// For a per-channel table: the expression giving the number of channels; its single
    /// metric is evaluated once per channel with `channel` bound to the channel index.
    #[serde(default)]
    pub per_channel: Option<String>,
}

/// How a table is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableStyle {
    /// Rows of metrics with their columns.
    Table,
    /// A bar per metric.
    Bar,
    /// Per-channel distribution (min, quartiles, max).
    Box,
    /// Bars grouped by a label column.
    MultiBar,
    /// The memory chart: values placed on a diagram.
    MemoryChart,
}

/// One column of a table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    /// The key of the column in each metric's cells.
    pub key: String,
    /// The column's heading.
    pub heading: String,
    /// Whether its cells are expressions, units or labels.
    pub kind: ColumnKind,
}

/// What the cells of a column hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnKind {
    /// An expression to evaluate.
    Expr,
    /// A unit, possibly with `$normUnit` to be replaced by the normalisation.
    Unit,
    /// A fixed label.
    Text,
}

/// One metric (a row of a table).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// The metric's name.
    pub name: String,
    /// Cells by column key; a column without a cell is empty for this metric.
    pub cells: BTreeMap<String, String>,
    /// For a metric over a level counter: that counter. Its accumulation stands for
    /// `SQ_ACCUM_PREV_HIRES` in the metric's expressions, from a pass of its own.
    #[serde(default)]
    pub level: Option<String>,
}

/// The architectures that have panel definitions.
pub fn architectures() -> Vec<&'static str> {
    FILES.iter().map(|(arch, _)| *arch).collect()
}

/// The panel definitions of `arch`, parsed once and kept for the process's life.
pub fn load(arch: &str) -> Result<&'static PanelSet, Error> {
    static PARSED: OnceLock<Vec<Result<PanelSet, Error>>> = OnceLock::new();
    let parsed = PARSED.get_or_init(|| {
        FILES
            .iter()
            .map(|(arch, text)| {
                serde_saphyr::from_str::<PanelSet>(text).map_err(|e| Error::Definitions {
                    arch: (*arch).to_string(),
                    message: e.to_string(),
                })
            })
            .collect()
    });
    let Some(index) = FILES.iter().position(|(a, _)| *a == arch) else {
        return Err(Error::UnknownArchitecture {
            arch: arch.to_string(),
            known: architectures().join(", "),
        });
    };
    parsed[index].as_ref().map_err(Clone::clone)
}

impl PanelSet {
    /// The section with block id `id`.
    pub fn section(&self, id: u32) -> Option<&Section> {
        self.sections.iter().find(|s| s.id == id)
    }

    /// The table with id `N.M`.
    pub fn table(&self, id: &str) -> Option<&Table> {
        self.sections
            .iter()
            .flat_map(|s| &s.tables)
            .find(|t| t.id == id)
    }
}

impl Table {
    /// The section id and index of this table within it (`2.1` gives `(2, 1)`).
    pub fn position(&self) -> (u32, u32) {
        let (s, t) = self.id.split_once('.').unwrap_or((&self.id, "0"));
        (s.parse().unwrap_or(0), t.parse().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_architecture_loads_with_unique_ids() {
        for arch in architectures() {
            let set = load(arch).unwrap();
            assert_eq!(set.architecture, arch);
            let mut ids: Vec<&str> = set
                .sections
                .iter()
                .flat_map(|s| &s.tables)
                .map(|t| t.id.as_str())
                .collect();
            let n = ids.len();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), n, "{arch}: duplicate table ids");
            for section in &set.sections {
                for table in &section.tables {
                    assert_eq!(table.position().0, section.id, "{arch} {}", table.id);
                }
            }
        }
    }

    #[test]
    fn speed_of_light_has_peaks_from_gpu_constants() {
        let set = load("gfx942").unwrap();
        let table = set.table("2.1").unwrap();
        assert_eq!(table.title, "System Speed-of-Light");
        let keys: Vec<&str> = table.columns.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["value", "unit", "peak", "pop"]);
        let flops = &table.metrics[0];
        assert_eq!(flops.name, "VALU FLOPs");
        assert_eq!(flops.cells["unit"], "GFLOP/s");
        assert_eq!(
            flops.cells["peak"],
            "$max_sclk * $cu_per_gpu * 64 * 2 / 1000"
        );
    }

    #[test]
    fn unknown_architecture_names_the_known_ones() {
        let err = load("gfx1100").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no panel definitions for architecture gfx1100 (known: gfx90a, gfx942, gfx950)"
        );
    }
}
