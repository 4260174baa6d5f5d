//! The merged profile: what rtl-pmc does with the dispatches a profiled application produced,
//! from the time they are read back until every result file is written. Each step has a module
//! of its own, in the order data flows through them:
//!
//! 1. [`model`]: the neutral model of one dispatch and its counters, and of one GPU, that
//!    raw records are converted into ([`agent_info`]: a GPU or CPU as rocprofiler-sdk describes
//!    it);
//! 2. [`join`]: a pass's dispatches, in start order, joined to the earlier passes' (one merged
//!    dispatch per dispatch of the application, matched as [`join::PassMatch`] says) while they
//!    are stored, with the pass's own files written alongside;
//! 3. [`store`]: the stored profile, `results.db` (rtl-pmc's tables, rocprofv3's rocpd schema
//!    over them, roctx regions, the totals and the estimates), from which every merged file is
//!    streamed so memory stays flat in the number of dispatches;
//! 4. [`files`]: the writers (CSV, JSON, Perfetto, the summary), which read the model and know
//!    nothing of how the data was collected.
//!
//! The `rtl-pmc` binary calls these steps after each pass and after the last one; the
//! `outputs_bench` example runs them on synthetic dispatches to measure their speed.

pub mod agent_info;
pub mod fast_map;
pub mod files;
pub mod join;
pub mod model;
pub mod store;

#[cfg(test)]
mod tests;
