//! The stored profile, `results.db`: rtl-pmc's own tables and the pass join in SQL
//! ([`database`]), rocprofv3's rocpd schema over them ([`rocpd`]), roctx regions ([`regions`]),
//! the figures gathered while dispatches are inserted ([`totals`]) and the estimates of
//! multiplexed and sampled counters ([`estimates`]).

pub mod database;
pub mod estimates;
pub mod regions;
pub mod rocpd;
pub mod totals;
