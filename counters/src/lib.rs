//! The counter engine of rtl-pmc: which hardware events a counter name needs on a given AMD
//! GPU, and how to turn the raw per-instance samples of those events back into values.
//!
//! A [`Catalog`] holds every block and counter of one architecture (the built-in
//! `arch-defs/*.yaml`, plus rocprofiler-sdk extra-counter files). [`Catalog::resolve`] turns
//! counter names and a GPU [`Topology`] into a [`CounterSet`]: the distinct [`HwEvent`]s to
//! program, each with the [`Shape`] of its samples, and a compiled evaluator whose shapes were
//! all checked up front. [`CounterSet::evaluate`] maps raw samples to a [`CounterValue`] per
//! requested counter, keeping per-dimension values and their total.
//!
//! ```
//! use rtl_pmc_counters::{Catalog, Topology};
//!
//! let catalog = Catalog::builtin("gfx942")?;
//! let topology = catalog.reference_gpu().expect("gfx942 has a reference GPU").topology.clone();
//! let set = catalog.resolve(&["GPU_UTIL"], &topology)?;
//! // GPU_UTIL = 100*reduce(GRBM_GUI_ACTIVE,max)/reduce(GRBM_COUNT,max): two GRBM events,
//! // one sample per XCC on an 8-XCC MI300X.
//! let samples: Vec<Vec<u64>> = set
//!     .events()
//!     .iter()
//!     .map(|e| vec![if e.event.event == 0 { 1000 } else { 250 }; e.sample_count()])
//!     .collect();
//! let values = set.evaluate(&samples)?;
//! assert_eq!(values[0].total, 25.0);
//! # Ok::<(), rtl_pmc_counters::Error>(())
//! ```
//!
//! The expression language and the YAML schema are described in `counters/README.md` and
//! `arch-defs/README.md`.
#![deny(missing_docs)]

mod catalog;
mod dimension;
mod error;
mod expr;
mod extra;
mod list;
mod panel_expr;
mod resolve;
mod sdk_order;
mod suggest;
mod topology;

pub use catalog::{Block, Catalog, CounterDef, CounterKind, HwEvent, Origin, ReferenceGpu};
pub use dimension::{Dimension, Shape};
pub use error::Error;
pub use expr::{Accumulation, BinaryOp, Expr, ReduceOp};
pub use list::{format_list_avail, list_avail, CounterListing, Definition};
pub use panel_expr::{ArithOp, ChannelIndex, CompareOp, Function, PanelExpr};
pub use resolve::{CounterSet, CounterValue, ResolvedEvent};
pub use sdk_order::rocprofiler_sdk_position;
pub use topology::{Topology, PROPERTY_NAMES};
