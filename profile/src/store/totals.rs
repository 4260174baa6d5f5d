//! The figures of the summary, gathered while dispatches are inserted, so the summary never
//! scans the database: they grow with the number of kernels, counters and GPUs, never with the
//! number of dispatches. They equal what the database's views `top`, `busy` and
//! `kernel_counters` answer.

use crate::fast_map::FastMap;
use crate::model::IdleGaps;

/// A sum of floating-point values with SQLite's compensation (Kahan-Babuska-Neumaier), so it
/// equals `sum()` over the same values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CompensatedSum {
    sum: f64,
    error: f64,
}

impl CompensatedSum {
    /// Adds `value`.
    pub fn add(&mut self, value: f64) {
        let t = self.sum + value;
        self.error += if self.sum.abs() > value.abs() {
            (self.sum - t) + value
        } else {
            (value - t) + self.sum
        };
        self.sum = t;
    }

    /// The sum so far.
    pub fn value(&self) -> f64 {
        self.sum + self.error
    }
}

/// The merged dispatches of one kernel on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launches {
    /// Dispatches.
    pub count: u64,
    /// Sum of their kernel times, ns.
    pub busy_ns: i64,
    /// The earliest start, ns.
    pub first_ns: i64,
    /// The latest end, ns.
    pub last_ns: i64,
}

impl Launches {
    /// One dispatch from `start_ns` to `end_ns`.
    pub fn one(start_ns: i64, end_ns: i64) -> Launches {
        Launches {
            count: 1,
            busy_ns: end_ns - start_ns,
            first_ns: start_ns,
            last_ns: end_ns,
        }
    }

    /// Both sets of dispatches together.
    pub fn add(&mut self, other: &Launches) {
        self.count += other.count;
        self.busy_ns += other.busy_ns;
        self.first_ns = self.first_ns.min(other.first_ns);
        self.last_ns = self.last_ns.max(other.last_ns);
    }
}

/// One GPU's timeline in the pass being inserted, while its dispatches arrive in start order:
/// an idle gap is the time from the latest end so far to the next start, when positive.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timeline {
    last_start: u64,
    last_end: u64,
    started: bool,
}

impl Timeline {
    /// Adds a dispatch from `start` to `end`, counting the gap before it into `gaps`; false
    /// (counting nothing) when it starts before the previous one.
    pub fn add(&mut self, start: u64, end: u64, gaps: &mut IdleGaps) -> bool {
        if self.started && start < self.last_start {
            return false;
        }
        if self.started && start > self.last_end {
            gaps.add(start - self.last_end);
        }
        self.last_end = if self.started {
            self.last_end.max(end)
        } else {
            end
        };
        self.last_start = start;
        self.started = true;
        true
    }
}

/// Merged dispatches by (kernel id, GPU node id).
pub type MergedLaunches = FastMap<(i64, u32), Launches>;

/// Everything the summary needs, by database ids.
#[derive(Debug, Default)]
pub struct Totals {
    /// Per (kernel id, counter id): the sum of the values of every pass.
    pub counters: FastMap<(i64, i64), CompensatedSum>,
    /// The merged dispatches, by kernel and GPU.
    pub merged: MergedLaunches,
    /// Per pass, its dispatches.
    pub pass_dispatches: FastMap<u32, u64>,
    /// Per GPU node id, the idle gaps between its dispatches, each pass's timeline on its own.
    pub gaps: FastMap<u32, IdleGaps>,
    /// Per (kernel id, counter id) of a derived counter: its value recomputed from the inputs
    /// summed over the kernel's dispatches, from the earliest pass that has one, as
    /// `(pass, value × dispatches summed, dispatches)` (several GPU topologies weigh in by
    /// their dispatches).
    pub derived: FastMap<(i64, i64), (u32, f64, u64)>,
}

impl Totals {
    /// Adds the merged dispatches `more`.
    pub fn add_merged(&mut self, more: &MergedLaunches) {
        for (key, launches) in more {
            self.merged
                .entry(*key)
                .and_modify(|l| l.add(launches))
                .or_insert(*launches);
        }
    }

    /// Per kernel id, its merged dispatches on every GPU.
    pub fn by_kernel(&self) -> FastMap<i64, Launches> {
        fold(self.merged.iter().map(|(&(kernel, _), l)| (kernel, l)))
    }

    /// Per GPU node id, its merged dispatches of every kernel.
    pub fn by_agent(&self) -> FastMap<u32, Launches> {
        fold(self.merged.iter().map(|(&(_, agent), l)| (agent, l)))
    }
}

fn fold<'a, K: std::hash::Hash + Eq>(
    items: impl Iterator<Item = (K, &'a Launches)>,
) -> FastMap<K, Launches> {
    let mut out: FastMap<K, Launches> = FastMap::default();
    for (key, launches) in items {
        out.entry(key)
            .and_modify(|l| l.add(launches))
            .or_insert(*launches);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_gaps_fall_in_their_buckets_and_overlaps_are_no_gap() {
        let mut gaps = IdleGaps::default();
        let mut timeline = Timeline::default();
        // 0-100, gap 9999 -> 10099-20000 (overlapped by 15000-30000), gap 10 us, gap 2 ms.
        for (start, end) in [
            (0, 100),
            (10_099, 20_000),
            (15_000, 30_000),
            (40_000, 41_000),
            (2_041_000, 2_042_000),
        ] {
            assert!(timeline.add(start, end, &mut gaps));
        }
        assert_eq!(gaps.counts, [1, 1, 0, 0, 0, 1, 0, 0]);
        assert!(!timeline.add(1, 2, &mut gaps));
        let mut more = IdleGaps::default();
        more.add(100_000_000);
        more.add(99_999_999);
        gaps.merge(&more);
        assert_eq!(gaps.counts, [1, 1, 0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn compensated_sums_keep_what_plain_sums_lose() {
        let mut sum = CompensatedSum::default();
        for v in [1e16, 1.0, -1e16, 0.5] {
            sum.add(v);
        }
        assert_eq!(sum.value(), 1.5);
        let mut launches = Launches::one(100, 150);
        launches.add(&Launches::one(40, 60));
        assert_eq!(
            launches,
            Launches {
                count: 2,
                busy_ns: 70,
                first_ns: 40,
                last_ns: 150
            }
        );
    }
}
