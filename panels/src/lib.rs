//! rocprof-compute's analysis panels as data, per GPU architecture.
//!
//! A [`PanelSet`] holds the sections of one architecture (System Speed-of-Light, memory chart,
//! compute pipeline, caches, ...), each with tables of metrics whose cells are expressions over
//! hardware counters, dispatch timestamps and GPU constants (`$max_sclk`, `$cu_per_gpu`, ...).
//! The definitions are embedded from `panels/data/<arch>.yaml`. [`counters_for_blocks`] tells
//! which counters a selection of blocks (rocprof-compute's `--block` ids) needs, expanded the way
//! rocprof-compute collects them: L2 (TCC) channel counters once per channel of every XCD, level
//! counters in a pass of their own beside their accumulation. [`evaluate_table`] computes a
//! table for one kernel from its per-dispatch values, as rocprof-compute's `analyze` does.
//!
//! ```
//! let gfx942 = panels::load("gfx942").unwrap();
//! let sol = gfx942.section(2).unwrap();
//! assert_eq!(sol.title, "System Speed-of-Light");
//! let blocks = [panels::BlockId::parse("2.1").unwrap()];
//! let layout = panels::CounterLayout { num_xcd: 8, l2_channels_per_xcd: 16 };
//! let need = panels::counters_for_blocks(gfx942, &blocks, &layout).unwrap();
//! assert!(need.counters.contains("GRBM_GUI_ACTIVE"));
//! ```
#![deny(missing_docs)]

mod chunked;
mod definitions;
mod evaluate;
mod quantiles;
mod selection;

pub use definitions::{
    architectures, load, Column, ColumnKind, Metric, PanelSet, Section, Source, Table, TableStyle,
};
pub use evaluate::{
    evaluate_table, normalize_text, Cell, Constants, EvaluatedTable, Frame, KernelData,
    Normalization, Row, MAIN_FRAME,
};
pub use selection::{counters_for_blocks, BlockId, CounterLayout, CounterNeeds, LevelCounter};

/// What can go wrong when loading panel definitions or selecting blocks.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// No panel definitions exist for this architecture.
    #[error("no panel definitions for architecture {arch} (known: {known})")]
    UnknownArchitecture {
        /// The architecture asked for.
        arch: String,
        /// The architectures that have definitions.
        known: String,
    },
    /// An embedded definition file failed to parse (a build defect, reported rather than hidden).
    #[error("panel definitions of {arch}: {message}")]
    Definitions {
        /// The architecture whose file is broken.
        arch: String,
        /// The parser's message.
        message: String,
    },
    /// A block id is not of the form `all`, `N`, `N.M` or `N.M.K`.
    #[error("block id '{0}': expected 'all', a section (2), a table (2.1) or a metric (2.1.0)")]
    BadBlockId(String),
    /// A block id names a section, table or metric that does not exist for the architecture.
    #[error("block id '{id}': no such {what} on {arch}")]
    UnknownBlock {
        /// The id as given.
        id: String,
        /// `section`, `table` or `metric`.
        what: &'static str,
        /// The architecture.
        arch: String,
    },
}
