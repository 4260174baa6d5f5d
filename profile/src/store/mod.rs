//! The stored profile, `results.db`: rtl-pmc's own tables and the pass join in SQL
//! ([`database`]), batches of dispatches made ready to insert ([`prepared`]), rocprofv3's rocpd
//! schema over them ([`rocpd`]), roctx regions ([`regions`]), the figures gathered while
//! dispatches are inserted ([`totals`], [`sampled`]) and the estimates of multiplexed and
//! sampled counters ([`estimates`]).

pub mod database;
pub mod estimates;
pub mod prepared;
pub mod regions;
pub mod rocpd;
pub mod sampled;
pub mod totals;

use crate::model::{AgentBusy, IdleGaps, KernelCounter, KernelTime, SummarySource};
use database::{Database, DatabaseError};

impl SummarySource for Database {
    type Error = DatabaseError;

    fn kernel_times(&self) -> Result<Vec<KernelTime>, DatabaseError> {
        self.top(usize::MAX)
    }

    fn kernel_counters(&self, kernel: &str) -> Result<Vec<KernelCounter>, DatabaseError> {
        Database::kernel_counters(self, kernel)
    }

    fn busy(&self) -> Result<Vec<AgentBusy>, DatabaseError> {
        Database::busy(self)
    }

    fn idle_gaps(&self) -> Vec<(u32, IdleGaps)> {
        Database::idle_gaps(self)
    }

    fn region_lines(&self) -> Result<Vec<String>, DatabaseError> {
        regions::summary_lines(self)
    }
}
