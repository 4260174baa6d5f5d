//! Pass planning: packing requested counters into passes within the hardware's per-block limits.
//!
//! A GPU block can count only a few events at a time (aqlprofile's BLOCK_COUNTERS, e.g. 8 for
//! SQ, 2 for GRBM on gfx9). A group of counters that needs more becomes several passes, each one
//! application run. The planner decides them:
//!
//! - a group whose distinct events fit every block's limit is one pass;
//! - otherwise it is split into the fewest passes such that each requested counter's events
//!   (all inputs of a derived counter) are collected in one pass. An event needed by several
//!   counters may be programmed in several passes, so a popular input never glues everything
//!   together;
//! - the packing is exact for realistic sizes (hundreds of events), within a node budget; the
//!   plan says whether the count is proven minimal and always carries the lower bound
//!   `max over blocks of ceil(events / counters per pass)`.
//!
//! The planner knows nothing about counter catalogs: its input is each counter's set of events
//! (any ordered key plus the register budget it consumes) and the limits. [`refusal`] says which
//! events aqlprofile would collect wrongly, so that callers refuse them. [`plan_file`] is the
//! small plan the CLI hands the interposer for each run, and [`group_for_dispatch`] the
//! rotation of `pmc_groups`.
//!
//! ```
//! use rtl_pmc::passes::{plan_group, Counter, Event, Limits, PlanOptions};
//!
//! let sq = |id: u32| Event { key: ("SQ", id), budget: "SQ".to_string() };
//! // Ten SQ counters; SQ holds 8 per pass.
//! let counters: Vec<Counter<_>> = (0..10)
//!     .map(|id| Counter { name: format!("SQ_{id}"), events: vec![sq(id)] })
//!     .collect();
//! let limits: Limits = [("SQ", 8)].into_iter().collect();
//! let plan = plan_group(&counters, &limits, &PlanOptions::default()).unwrap();
//! assert_eq!(plan.passes.len(), 2);
//! assert_eq!(plan.lower_bound, 2);
//! assert!(plan.optimal);
//! assert_eq!(plan.split.unwrap().to_string(), "SQ needs 10 counters (8 per pass)");
//! ```
#![deny(missing_docs)]

mod packing;
pub mod plan_file;
mod planner;
mod quirks;

pub use planner::{
    first_fit, lower_bound, plan_group, BudgetUse, Counter, Event, GroupPlan, Limits, Pass,
    PlanError, PlanOptions, Split,
};
pub use quirks::{refusal, Refusal};

/// Which of `groups` event groups the `n`-th filtered dispatch on an agent (from 0) collects,
/// rotating every `interval` dispatches as rocprofv3's `pmc_groups` do: `(n / interval) % groups`.
/// An interval of 0 counts as 1; with no groups the answer is 0.
pub fn group_for_dispatch(n: u64, interval: u64, groups: usize) -> usize {
    if groups == 0 {
        return 0;
    }
    ((n / interval.max(1)) % groups as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::group_for_dispatch;

    #[test]
    fn groups_rotate_every_interval_dispatches() {
        let picked: Vec<usize> = (0..10).map(|n| group_for_dispatch(n, 4, 2)).collect();
        assert_eq!(picked, vec![0, 0, 0, 0, 1, 1, 1, 1, 0, 0]);
        let picked: Vec<usize> = (0..4).map(|n| group_for_dispatch(n, 0, 3)).collect();
        assert_eq!(picked, vec![0, 1, 2, 0]);
        assert_eq!(group_for_dispatch(5, 1, 0), 0);
    }
}
