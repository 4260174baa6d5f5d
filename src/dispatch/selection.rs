//! Which dispatches are wrapped, and which event group each wrapped dispatch collects.

use std::sync::Mutex;

use regex::Regex;

use super::roctx::OpenRange;
use crate::fast_map::FastMap;
use crate::passes::group_for_dispatch;
use crate::passes::plan_file::KernelFilters;

/// Why the filters of a plan cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    /// A kernel-name or roctx-range regular expression does not compile.
    #[error("{which} filter {pattern:?}: {source}")]
    Regex {
        /// `kernel include`, `kernel exclude` or `roctx include`.
        which: &'static str,
        /// The expression.
        pattern: String,
        /// What the regex compiler reported.
        source: regex::Error,
    },
}

/// The decision for one kernel dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Pass the dispatch through untouched.
    Skip,
    /// Wrap the dispatch; it collects event group `group` (0 when there is at most one group).
    Wrap {
        /// Index of the agent's event group.
        group: usize,
    },
}

/// The application's roctx state when it submits a dispatch.
#[derive(Debug, Clone, Default)]
pub struct Enclosing {
    /// The submitting thread's open push/pop ranges, outermost first.
    pub ranges: Vec<OpenRange>,
    /// Whether the application resumed the profiler (and did not pause it since).
    pub resumed: bool,
}

/// The filters of a run, with the counting state they need (per-process dispatch index,
/// per-kernel launch counts, per-agent counts of wrapped dispatches).
#[derive(Debug)]
pub struct Selector {
    filters: KernelFilters,
    include: Option<Regex>,
    exclude: Option<Regex>,
    roctx_include: Option<Regex>,
    group_interval: u64,
    /// Whether a filter reads the per-process dispatch index or the launch counts; without
    /// one, and with at most one group, a decision takes no lock.
    counting: bool,
    /// Whether no filter is set: every dispatch is selected.
    everything: bool,
    state: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    dispatches: u64,
    launches: FastMap<String, u64>,
    wrapped_per_agent: FastMap<u32, u64>,
}

fn compile(which: &'static str, pattern: &Option<String>) -> Result<Option<Regex>, SelectionError> {
    pattern
        .as_deref()
        .map(|p| {
            Regex::new(p).map_err(|source| SelectionError::Regex {
                which,
                pattern: p.to_string(),
                source,
            })
        })
        .transpose()
}

impl Selector {
    /// Whether selecting reads the names of the roctx ranges around a dispatch.
    pub fn reads_range_names(&self) -> bool {
        self.roctx_include.is_some()
    }

    /// Whether every dispatch is selected, whatever it is (no filter).
    pub fn selects_everything(&self) -> bool {
        self.everything
    }

    /// Whether selecting reads the kernel's name or symbol (name filters, launch counts).
    pub fn reads_kernel_names(&self) -> bool {
        self.include.is_some() || self.exclude.is_some() || self.counting
    }

    /// A selector for `filters`, rotating groups every `group_interval` wrapped dispatches.
    pub fn new(filters: &KernelFilters, group_interval: u64) -> Result<Selector, SelectionError> {
        Ok(Selector {
            include: compile("kernel include", &filters.include_regex)?,
            exclude: compile("kernel exclude", &filters.exclude_regex)?,
            roctx_include: compile("roctx include", &filters.roctx_include_regex)?,
            counting: filters.dispatches.is_some() || !filters.iterations.is_empty(),
            everything: *filters == KernelFilters::default(),
            filters: filters.clone(),
            group_interval,
            state: Mutex::new(Counts::default()),
        })
    }

    /// Decides for the next kernel dispatch, in submission order: kernel `name` on the GPU with
    /// index `gpu` among the GPUs and KFD node `agent`, whose architecture has `groups` event
    /// groups. Every call consumes a per-process dispatch index and a launch of `name`.
    pub fn decide(&self, name: &str, gpu: u32, agent: u32, groups: usize) -> Decision {
        self.decide_kernel(name, name, gpu, agent, groups, &Enclosing::default())
    }

    /// [`decide`](Self::decide) for a kernel recorded as `name` whose launches are counted by
    /// its `symbol`, as rocprofv3 counts them per kernel: two kernels whose truncated names
    /// coincide (`scale<float>` and `scale<int>` are both `scale`) keep their own launch counts
    /// for the iteration ranges, while the regular expressions see the recorded name.
    /// `enclosing` is the application's roctx state at the submission.
    pub fn decide_kernel(
        &self,
        name: &str,
        symbol: &str,
        gpu: u32,
        agent: u32,
        groups: usize,
        enclosing: &Enclosing,
    ) -> Decision {
        if self.everything && groups <= 1 {
            return Decision::Wrap { group: 0 };
        }
        if !self.counting && groups <= 1 {
            // Nothing to count: index and launch select whatever they are.
            return match self.selects(name, gpu, (0, 1), enclosing) {
                true => Decision::Wrap { group: 0 },
                false => Decision::Skip,
            };
        }
        let Ok(mut counts) = self.state.lock() else {
            return Decision::Skip;
        };
        let index = counts.dispatches;
        counts.dispatches += 1;
        let launch = match counts.launches.get_mut(symbol) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                counts.launches.insert(symbol.to_string(), 1);
                1
            }
        };
        if !self.selects(name, gpu, (index, launch), enclosing) {
            return Decision::Skip;
        }
        let n = counts.wrapped_per_agent.entry(agent).or_insert(0);
        let group = group_for_dispatch(*n, self.group_interval, groups);
        *n += 1;
        Decision::Wrap { group }
    }

    /// Whether the filters select the dispatch of kernel `name` on GPU `gpu` with the
    /// per-process `index` and the kernel's `launch` count.
    fn selects(
        &self,
        name: &str,
        gpu: u32,
        (index, launch): (u64, u64),
        enclosing: &Enclosing,
    ) -> bool {
        self.filters.selects_dispatch(index)
            && self.filters.selects_gpu(gpu)
            && self.include.as_ref().is_none_or(|re| re.is_match(name))
            && !self.exclude.as_ref().is_some_and(|re| re.is_match(name))
            && self.filters.selects_iteration(launch)
            && (!self.filters.selected_regions || enclosing.resumed)
            && self
                .roctx_include
                .as_ref()
                .is_none_or(|re| enclosing.ranges.iter().any(|r| re.is_match(&r.name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::plan_file::{DispatchRange, IterationRange};

    fn wrapped(
        selector: &Selector,
        calls: &[(&str, u32, u32)],
        groups: usize,
    ) -> Vec<Option<usize>> {
        calls
            .iter()
            .map(
                |&(name, gpu, agent)| match selector.decide(name, gpu, agent, groups) {
                    Decision::Skip => None,
                    Decision::Wrap { group } => Some(group),
                },
            )
            .collect()
    }

    #[test]
    fn regexes_iterations_and_gpus_combine() {
        let filters = KernelFilters {
            include_regex: Some("add|fill".into()),
            exclude_regex: Some("^fill_slow$".into()),
            iterations: vec![IterationRange { first: 2, last: 3 }],
            gpus: vec![1],
            ..KernelFilters::default()
        };
        let s = Selector::new(&filters, 1).unwrap();
        let calls = [
            ("vadd", 1, 3),      // launch 1 of vadd
            ("vadd", 1, 3),      // launch 2
            ("fill_slow", 1, 3), // excluded
            ("vadd", 0, 2),      // launch 3, wrong GPU
            ("saxpy", 1, 3),     // not included
            ("fill", 1, 3),      // launch 1 of fill
            ("fill", 1, 3),      // launch 2
            ("vadd", 1, 3),      // launch 4
        ];
        assert_eq!(
            wrapped(&s, &calls, 1),
            vec![None, Some(0), None, None, None, None, Some(0), None]
        );
    }

    #[test]
    fn launches_are_counted_per_symbol_and_regexes_see_the_name() {
        let filters = KernelFilters {
            include_regex: Some("^scale$".into()),
            iterations: vec![IterationRange { first: 2, last: 2 }],
            ..KernelFilters::default()
        };
        let s = Selector::new(&filters, 1).unwrap();
        let decisions: Vec<Decision> = [
            ("scale", "_Z5scaleIfEvPT_S0_j"),
            ("scale", "_Z5scaleIiEvPT_S0_j"),
            ("scale", "_Z5scaleIfEvPT_S0_j"),
            ("scale", "_Z5scaleIiEvPT_S0_j"),
            ("_Z5scaleIiEvPT_S0_j", "_Z4other"),
            ("other", "_Z4other"),
        ]
        .iter()
        .map(|(name, symbol)| s.decide_kernel(name, symbol, 0, 1, 1, &Enclosing::default()))
        .collect();
        let wrap = Decision::Wrap { group: 0 };
        assert_eq!(
            decisions,
            [
                Decision::Skip,
                Decision::Skip,
                wrap,
                wrap,
                Decision::Skip,
                Decision::Skip
            ],
            "launch 2 of each symbol, if its name is `scale`"
        );
    }

    #[test]
    fn dispatch_ranges_count_every_dispatch() {
        let filters = KernelFilters {
            include_regex: Some("^a$".into()),
            dispatches: Some(DispatchRange {
                start: 2,
                end: Some(5),
            }),
            ..KernelFilters::default()
        };
        let s = Selector::new(&filters, 1).unwrap();
        let calls: Vec<(&str, u32, u32)> = ["a", "b", "a", "b", "a", "a"]
            .iter()
            .map(|&n| (n, 0, 1))
            .collect();
        assert_eq!(
            wrapped(&s, &calls, 1),
            vec![None, None, Some(0), None, Some(0), None]
        );
    }

    #[test]
    fn groups_rotate_per_agent_over_wrapped_dispatches() {
        let filters = KernelFilters {
            exclude_regex: Some("skip".into()),
            ..KernelFilters::default()
        };
        let s = Selector::new(&filters, 2).unwrap();
        let calls = [
            ("k", 0, 1),
            ("skip", 0, 1),
            ("k", 1, 2),
            ("k", 0, 1),
            ("k", 0, 1),
            ("k", 1, 2),
            ("k", 0, 1),
            ("k", 0, 1),
            ("k", 1, 2),
        ];
        assert_eq!(
            wrapped(&s, &calls, 3),
            vec![
                Some(0),
                None,
                Some(0),
                Some(0),
                Some(1),
                Some(0),
                Some(1),
                Some(2),
                Some(1)
            ]
        );
    }

    #[test]
    fn bad_regexes_are_named() {
        let filters = KernelFilters {
            exclude_regex: Some("(".into()),
            ..KernelFilters::default()
        };
        let message = Selector::new(&filters, 1).unwrap_err().to_string();
        assert!(
            message.starts_with("kernel exclude filter \"(\": regex parse error"),
            "{message}"
        );
    }

    #[test]
    fn roctx_ranges_and_the_profiler_state_select() {
        let range = |id, name: &str| OpenRange {
            id,
            name: name.into(),
        };
        let filters = KernelFilters {
            roctx_include_regex: Some("^step [24]$".into()),
            selected_regions: true,
            ..KernelFilters::default()
        };
        let s = Selector::new(&filters, 1).unwrap();
        let decide = |ranges: Vec<OpenRange>, resumed| {
            s.decide_kernel("k", "k", 0, 1, 1, &Enclosing { ranges, resumed })
        };
        let wrap = Decision::Wrap { group: 0 };
        assert_eq!(
            decide(vec![range(1, "step 2")], false),
            Decision::Skip,
            "paused"
        );
        assert_eq!(decide(vec![range(1, "step 2")], true), wrap);
        assert_eq!(
            decide(vec![range(1, "step 4"), range(2, "inner")], true),
            wrap,
            "any enclosing range may match"
        );
        assert_eq!(decide(vec![range(3, "step 3")], true), Decision::Skip);
        assert_eq!(decide(vec![], true), Decision::Skip, "outside every range");
        let bad = KernelFilters {
            roctx_include_regex: Some("[".into()),
            ..KernelFilters::default()
        };
        let message = Selector::new(&bad, 1).unwrap_err().to_string();
        assert!(
            message.starts_with("roctx include filter \"[\": regex parse error"),
            "{message}"
        );
    }
}
