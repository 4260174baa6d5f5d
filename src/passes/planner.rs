//! Splitting one group of requested counters into passes.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use super::packing::{pack, Budget, Instance};

/// One hardware event a counter needs, as the planner sees it.
///
/// `key` identifies the event (block, event id and flags, for instance); two counters that need
/// equal keys share one register when they are collected in the same pass. `budget` names the
/// register budget the event consumes: normally its block, but blocks that are aliases of one
/// hardware block (SQ and SQ_CS on gfx9) name the same budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<E> {
    /// What identifies the event.
    pub key: E,
    /// The register budget (block) it consumes one register of.
    pub budget: String,
}

/// A counter the user asked for, with every hardware event it needs.
///
/// A basic counter needs one event; a derived counter needs all the events of the counters its
/// expression refers to. All of them are collected in the same pass, so its value is computed
/// from one run. A counter with no events (an agent constant) fits any pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter<E> {
    /// The name the user asked for.
    pub name: String,
    /// The hardware events it needs; duplicates are ignored.
    pub events: Vec<Event<E>>,
}

/// Registers per pass of each budget (what aqlprofile's BLOCK_COUNTERS query answers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    per_budget: BTreeMap<String, usize>,
}

impl Limits {
    /// No budgets known yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the number of events of `budget` that one pass can hold.
    pub fn set(&mut self, budget: impl Into<String>, counters_per_pass: usize) -> &mut Self {
        self.per_budget.insert(budget.into(), counters_per_pass);
        self
    }

    /// Limits from a list of blocks as `(block, budget, counters per pass)`. A block whose
    /// budget is another block's (SQ_CS sharing SQ's registers) takes that block's limit.
    pub fn from_blocks<'a>(blocks: impl IntoIterator<Item = (&'a str, &'a str, usize)>) -> Self {
        let blocks: Vec<_> = blocks.into_iter().collect();
        let mut limits = Limits::new();
        for &(_, budget, n) in blocks.iter().filter(|(name, budget, _)| name == budget) {
            limits.set(budget, n);
        }
        for &(_, budget, n) in &blocks {
            if limits.get(budget).is_none() {
                limits.set(budget, n);
            }
        }
        limits
    }

    /// The number of events of `budget` that one pass can hold, if known.
    pub fn get(&self, budget: &str) -> Option<usize> {
        self.per_budget.get(budget).copied()
    }
}

impl<S: Into<String>> FromIterator<(S, usize)> for Limits {
    fn from_iter<T: IntoIterator<Item = (S, usize)>>(iter: T) -> Self {
        Limits {
            per_budget: iter.into_iter().map(|(b, n)| (b.into(), n)).collect(),
        }
    }
}

/// How hard to look for the fewest passes, and whether splitting is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanOptions {
    /// Search nodes the exact packing may visit per group before it settles for the best
    /// packing found so far (which the plan then reports as not proven optimal).
    pub node_budget: u64,
    /// Wall-clock time the search may take per group, on top of the node budget. `None`
    /// keeps plans independent of machine speed.
    pub time_budget: Option<Duration>,
    /// Refuse to split a group that does not fit one pass (`--strict-passes`).
    pub strict: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            node_budget: 200_000,
            time_budget: Some(Duration::from_secs(2)),
            strict: false,
        }
    }
}

/// How many events of one budget a set of counters needs, against its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetUse {
    /// The budget (block).
    pub budget: String,
    /// Distinct events needed.
    pub events: usize,
    /// Events one pass can hold.
    pub limit: usize,
}

impl fmt::Display for BudgetUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} needs {} counters ({} per pass)",
            self.budget, self.events, self.limit
        )
    }
}

/// One pass of a plan: an application run with one set of programmed events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass<E> {
    /// Indices of the requested counters this pass collects, ascending (the user's order).
    pub counters: Vec<usize>,
    /// Distinct events to program, sorted.
    pub events: Vec<E>,
}

/// Why a group was split: the budgets whose events do not fit one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The budgets over their limit, by name.
    pub over: Vec<BudgetUse>,
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_list(f, &self.over)
    }
}

/// The passes chosen for one group of requested counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPlan<E> {
    /// The passes, ordered by the first requested counter each collects.
    pub passes: Vec<Pass<E>>,
    /// `max` over budgets of `ceil(distinct events / limit)` (at least 1): no plan has fewer
    /// passes.
    pub lower_bound: usize,
    /// True when the number of passes is proven to be the fewest possible; false when the
    /// search ran out of its node budget first.
    pub optimal: bool,
    /// Set when the group does not fit one pass and was split.
    pub split: Option<Split>,
}

/// Why a group cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// An event's budget has no known limit.
    #[error("counter '{counter}' needs block {budget}, whose counters per pass are unknown")]
    UnknownBudget {
        /// The counter needing the event.
        counter: String,
        /// The budget without a limit.
        budget: String,
    },
    /// A counter needs more events of some budget than one pass holds.
    #[error("counter '{counter}' cannot be collected in one pass: {}", List(.over))]
    CounterTooLarge {
        /// The counter.
        counter: String,
        /// Its budgets over their limit.
        over: Vec<BudgetUse>,
    },
    /// The group does not fit one pass and splitting was refused.
    #[error("the counters do not fit one pass ({}); proposed split: {}", List(.over),
        Proposal(.proposal))]
    SplitRefused {
        /// The budgets over their limit.
        over: Vec<BudgetUse>,
        /// The split that would have been used, as counter names per pass.
        proposal: Vec<Vec<String>>,
    },
}

struct List<'a>(&'a [BudgetUse]);

impl fmt::Display for List<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_list(f, self.0)
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, uses: &[BudgetUse]) -> fmt::Result {
    for (i, u) in uses.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{u}")?;
    }
    Ok(())
}

struct Proposal<'a>(&'a [Vec<String>]);

impl fmt::Display for Proposal<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, names) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "pass {}: {}", i + 1, names.join(" "))?;
        }
        Ok(())
    }
}

/// A group with its events interned: event `i` is `keys[i]`, of budget `budget_of[i]`.
struct Interned<'c, E> {
    keys: Vec<&'c E>,
    budget_of: Vec<usize>,
    budgets: Vec<(String, usize)>,
    counters: Vec<Vec<usize>>,
}

impl<'c, E: Ord> Interned<'c, E> {
    fn new(counters: &'c [Counter<E>], limits: &Limits) -> Result<Self, PlanError> {
        let mut index: BTreeMap<&E, usize> = BTreeMap::new();
        let mut budget_index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut interned = Interned {
            keys: Vec::new(),
            budget_of: Vec::new(),
            budgets: Vec::new(),
            counters: Vec::new(),
        };
        for counter in counters {
            let mut events = Vec::new();
            for event in &counter.events {
                let budget = match budget_index.get(event.budget.as_str()) {
                    Some(&b) => b,
                    None => {
                        let limit =
                            limits
                                .get(&event.budget)
                                .ok_or_else(|| PlanError::UnknownBudget {
                                    counter: counter.name.clone(),
                                    budget: event.budget.clone(),
                                })?;
                        interned.budgets.push((event.budget.clone(), limit));
                        budget_index.insert(&event.budget, interned.budgets.len() - 1);
                        interned.budgets.len() - 1
                    }
                };
                let e = *index.entry(&event.key).or_insert_with(|| {
                    interned.keys.push(&event.key);
                    interned.budget_of.push(budget);
                    interned.keys.len() - 1
                });
                events.push(e);
            }
            events.sort_unstable();
            events.dedup();
            interned.counters.push(events);
        }
        Ok(interned)
    }

    /// Budgets whose distinct events among `events` exceed the limit, by name.
    fn over(&self, events: &[usize]) -> Vec<BudgetUse> {
        let mut per_budget = vec![0usize; self.budgets.len()];
        for &e in events {
            per_budget[self.budget_of[e]] += 1;
        }
        let mut over: Vec<BudgetUse> = per_budget
            .iter()
            .zip(&self.budgets)
            .filter(|(&n, (_, limit))| n > *limit)
            .map(|(&n, (name, limit))| BudgetUse {
                budget: name.clone(),
                events: n,
                limit: *limit,
            })
            .collect();
        over.sort_by(|a, b| a.budget.cmp(&b.budget));
        over
    }

    fn all_events(&self) -> Vec<usize> {
        (0..self.keys.len()).collect()
    }

    fn lower_bound(&self) -> usize {
        let mut per_budget = vec![0usize; self.budgets.len()];
        for &b in &self.budget_of {
            per_budget[b] += 1;
        }
        per_budget
            .iter()
            .zip(&self.budgets)
            .map(|(&n, (_, limit))| n.div_ceil(*limit))
            .max()
            .unwrap_or(0)
            .max(1)
    }

    fn pass(&self, members: Vec<usize>) -> Pass<E>
    where
        E: Clone,
    {
        let mut events: Vec<usize> = members
            .iter()
            .flat_map(|&c| self.counters[c].iter().copied())
            .collect();
        events.sort_unstable();
        events.dedup();
        let mut keys: Vec<E> = events.iter().map(|&e| self.keys[e].clone()).collect();
        keys.sort();
        Pass {
            counters: members,
            events: keys,
        }
    }

    fn check_each_counter_fits(&self, counters: &[Counter<E>]) -> Result<(), PlanError> {
        for (c, events) in self.counters.iter().enumerate() {
            let over = self.over(events);
            if !over.is_empty() {
                return Err(PlanError::CounterTooLarge {
                    counter: counters[c].name.clone(),
                    over,
                });
            }
        }
        Ok(())
    }
}

/// The lower bound on passes for a group: `max` over budgets of
/// `ceil(distinct events / counters per pass)`, at least 1.
pub fn lower_bound<E: Ord>(counters: &[Counter<E>], limits: &Limits) -> Result<usize, PlanError> {
    Ok(Interned::new(counters, limits)?.lower_bound())
}

/// Plans one group: one pass when it fits, otherwise the fewest passes such that each counter's
/// events are all in one pass.
///
/// An event several counters need may be programmed in several passes, so one popular input
/// never forces everything into one pass. The packing is exact unless the node budget of
/// `options` runs out, which the plan reports through [`GroupPlan::optimal`].
///
/// ```
/// use rtl_pmc::passes::{plan_group, Counter, Event, Limits, PlanOptions};
///
/// let ev = |block: &str, id: u32| Event { key: (block.to_string(), id), budget: block.into() };
/// let counters = vec![
///     Counter { name: "GRBM_COUNT".into(), events: vec![ev("GRBM", 0)] },
///     Counter { name: "GRBM_GUI_ACTIVE".into(), events: vec![ev("GRBM", 2)] },
///     Counter { name: "GPU_UTIL".into(), events: vec![ev("GRBM", 0), ev("GRBM", 2)] },
///     Counter { name: "CP_BUSY".into(), events: vec![ev("GRBM", 0), ev("GRBM", 6)] },
/// ];
/// let limits: Limits = [("GRBM", 2)].into_iter().collect();
/// let plan = plan_group(&counters, &limits, &PlanOptions::default()).unwrap();
/// let passes: Vec<_> = plan.passes.iter().map(|p| p.counters.clone()).collect();
/// assert_eq!(passes, vec![vec![0, 1, 2], vec![3]]);
/// assert_eq!((plan.lower_bound, plan.optimal), (2, true));
/// ```
pub fn plan_group<E: Ord + Clone>(
    counters: &[Counter<E>],
    limits: &Limits,
    options: &PlanOptions,
) -> Result<GroupPlan<E>, PlanError> {
    let interned = Interned::new(counters, limits)?;
    interned.check_each_counter_fits(counters)?;
    let lower_bound = interned.lower_bound();
    let over = interned.over(&interned.all_events());
    if over.is_empty() {
        return Ok(GroupPlan {
            passes: vec![interned.pass((0..counters.len()).collect())],
            lower_bound,
            optimal: true,
            split: None,
        });
    }

    let budget = Budget {
        nodes: options.node_budget,
        deadline: options.time_budget.map(|t| Instant::now() + t),
    };
    let (members, optimal) = split(&interned, budget);
    let passes: Vec<Pass<E>> = members.into_iter().map(|m| interned.pass(m)).collect();
    if options.strict {
        return Err(PlanError::SplitRefused {
            over,
            proposal: passes
                .iter()
                .map(|p| {
                    p.counters
                        .iter()
                        .map(|&c| counters[c].name.clone())
                        .collect()
                })
                .collect(),
        });
    }
    Ok(GroupPlan {
        passes,
        lower_bound,
        optimal,
        split: Some(Split { over }),
    })
}

/// Splits a group that does not fit: returns the counters of each pass and whether the count
/// is proven minimal.
fn split<E>(interned: &Interned<'_, E>, mut budget: Budget) -> (Vec<Vec<usize>>, bool) {
    let n_events = interned.keys.len();
    // Budgets whose events all fit one pass never constrain anything: leave them out.
    let mut per_budget = vec![0usize; interned.budgets.len()];
    for &b in &interned.budget_of {
        per_budget[b] += 1;
    }
    let binding: Vec<bool> = per_budget
        .iter()
        .zip(&interned.budgets)
        .map(|(&n, (_, limit))| n > *limit)
        .collect();
    let binding_events: Vec<Vec<usize>> = interned
        .counters
        .iter()
        .map(|events| {
            events
                .iter()
                .copied()
                .filter(|&e| binding[interned.budget_of[e]])
                .collect()
        })
        .collect();

    // Items: distinct, non-dominated binding event sets. A counter whose binding events are a
    // subset of an item's goes wherever that item goes.
    let mut order: Vec<usize> = (0..binding_events.len()).collect();
    order.sort_by_key(|&c| (std::cmp::Reverse(binding_events[c].len()), c));
    let mut items: Vec<Vec<usize>> = Vec::new();
    let mut follows: Vec<Option<usize>> = vec![None; binding_events.len()];
    for &c in &order {
        let events = &binding_events[c];
        if events.is_empty() {
            continue;
        }
        match items.iter().position(|item| is_subset(events, item)) {
            Some(i) => follows[c] = Some(i),
            None => {
                items.push(events.clone());
                follows[c] = Some(items.len() - 1);
            }
        }
    }

    // Independent components: items connected through shared binding budgets.
    let mut parent: Vec<usize> = (0..interned.budgets.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for item in &items {
        let first = root(&mut parent, interned.budget_of[item[0]]);
        for &e in &item[1..] {
            let r = root(&mut parent, interned.budget_of[e]);
            parent[r] = first;
        }
    }
    let mut components: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let r = root(&mut parent, interned.budget_of[item[0]]);
        components.entry(r).or_default().push(i);
    }

    let mut instances: Vec<(Vec<usize>, Instance)> = components
        .into_values()
        .map(|members| {
            let mut local = vec![usize::MAX; n_events];
            let mut budget_local: BTreeMap<usize, usize> = BTreeMap::new();
            let mut event_budget = Vec::new();
            let mut limits = Vec::new();
            let local_items = members
                .iter()
                .map(|&i| {
                    items[i]
                        .iter()
                        .map(|&e| {
                            if local[e] == usize::MAX {
                                let gb = interned.budget_of[e];
                                let lb = *budget_local.entry(gb).or_insert_with(|| {
                                    limits.push(interned.budgets[gb].1);
                                    limits.len() - 1
                                });
                                event_budget.push(lb);
                                local[e] = event_budget.len() - 1;
                            }
                            local[e]
                        })
                        .collect()
                })
                .collect();
            (
                members,
                Instance {
                    limits,
                    event_budget,
                    items: local_items,
                },
            )
        })
        .collect();
    // Hardest first, so the others can stop at the pass count it needs.
    instances.sort_by_key(|(members, _)| std::cmp::Reverse(members.len()));

    let mut floor = 0;
    let mut proven = 0;
    let mut item_pass = vec![0usize; items.len()];
    let mut passes = 0;
    for (members, instance) in &instances {
        let packing = pack(instance, floor, &mut budget);
        for (local, &item) in members.iter().enumerate() {
            item_pass[item] = packing.assignment[local];
        }
        passes = passes.max(packing.bins);
        floor = floor.max(packing.proven_lower_bound);
        proven = proven.max(packing.proven_lower_bound);
    }
    let passes = passes.max(1);

    let mut members: Vec<Vec<usize>> = vec![Vec::new(); passes];
    let mut anywhere = Vec::new();
    for (c, follow) in follows.iter().enumerate() {
        match follow {
            Some(item) => members[item_pass[*item]].push(c),
            None => anywhere.push(c),
        }
    }
    members.retain(|m| !m.is_empty());
    members.sort_by_key(|m| m[0]);
    // Counters that constrain nothing join the first pass.
    if members.is_empty() {
        members.push(Vec::new());
    }
    members[0].extend(anywhere);
    members[0].sort_unstable();
    let optimal = proven >= members.len();
    (members, optimal)
}

fn is_subset(small: &[usize], big: &[usize]) -> bool {
    let mut big = big.iter();
    small.iter().all(|e| big.any(|b| b == e))
}

/// The baseline rocprof v1 proposes: counters by decreasing event count, each into the first
/// pass it fits, a new pass when none. Kept for comparison in benchmarks.
pub fn first_fit<E: Ord + Clone>(
    counters: &[Counter<E>],
    limits: &Limits,
) -> Result<Vec<Pass<E>>, PlanError> {
    let interned = Interned::new(counters, limits)?;
    interned.check_each_counter_fits(counters)?;
    let mut order: Vec<usize> = (0..counters.len()).collect();
    order.sort_by_key(|&c| (std::cmp::Reverse(interned.counters[c].len()), c));
    let mut passes: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    for c in order {
        let fits = |events: &Vec<usize>| {
            let mut union = events.clone();
            union.extend(&interned.counters[c]);
            union.sort_unstable();
            union.dedup();
            interned.over(&union).is_empty()
        };
        match passes.iter_mut().find(|(_, events)| fits(events)) {
            Some((members, events)) => {
                members.push(c);
                events.extend(&interned.counters[c]);
                events.sort_unstable();
                events.dedup();
            }
            None => passes.push((vec![c], interned.counters[c].clone())),
        }
    }
    Ok(passes
        .into_iter()
        .map(|(mut members, _)| {
            members.sort_unstable();
            interned.pass(members)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(block: &str, id: u32) -> Event<(String, u32)> {
        Event {
            key: (block.to_string(), id),
            budget: block.to_string(),
        }
    }

    fn counter(name: &str, events: &[(&str, u32)]) -> Counter<(String, u32)> {
        Counter {
            name: name.to_string(),
            events: events.iter().map(|&(b, id)| ev(b, id)).collect(),
        }
    }

    fn gfx9_limits() -> Limits {
        [
            ("SQ", 8),
            ("GRBM", 2),
            ("TCC", 4),
            ("TCP", 4),
            ("TA", 2),
            ("SPI", 6),
        ]
        .into_iter()
        .collect()
    }

    fn pass_members<E>(plan: &GroupPlan<E>) -> Vec<Vec<usize>> {
        plan.passes.iter().map(|p| p.counters.clone()).collect()
    }

    /// Checks every pass against the limits and every counter is in exactly one pass with all
    /// its events.
    fn assert_valid(
        counters: &[Counter<(String, u32)>],
        limits: &Limits,
        passes: &[Pass<(String, u32)>],
    ) {
        let mut seen = vec![0; counters.len()];
        for pass in passes {
            let mut per_block: BTreeMap<&str, usize> = BTreeMap::new();
            for (block, _) in &pass.events {
                *per_block.entry(block).or_default() += 1;
            }
            for (block, n) in per_block {
                assert!(n <= limits.get(block).unwrap(), "{block}: {n} events");
            }
            for &c in &pass.counters {
                seen[c] += 1;
                for e in &counters[c].events {
                    assert!(
                        pass.events.contains(&e.key),
                        "{} lacks {:?}",
                        counters[c].name,
                        e.key
                    );
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    }

    #[test]
    fn a_group_that_fits_is_one_pass() {
        let counters = vec![
            counter("SQ_WAVES", &[("SQ", 4)]),
            counter("GRBM_COUNT", &[("GRBM", 0)]),
            counter("GPU_UTIL", &[("GRBM", 0), ("GRBM", 2)]),
        ];
        let plan = plan_group(&counters, &gfx9_limits(), &PlanOptions::default()).unwrap();
        assert_eq!(pass_members(&plan), vec![vec![0, 1, 2]]);
        assert_eq!(
            plan.passes[0].events,
            vec![
                ("GRBM".to_string(), 0),
                ("GRBM".to_string(), 2),
                ("SQ".to_string(), 4)
            ]
        );
        assert_eq!(
            (plan.lower_bound, plan.optimal, plan.split),
            (1, true, None)
        );
    }

    #[test]
    fn twelve_sq_counters_split_into_two_passes() {
        let counters: Vec<_> = (0..12)
            .map(|i| counter(&format!("SQ_{i}"), &[("SQ", i)]))
            .collect();
        let plan = plan_group(&counters, &gfx9_limits(), &PlanOptions::default()).unwrap();
        assert_eq!(plan.passes.len(), 2);
        assert_eq!(plan.lower_bound, 2);
        assert!(plan.optimal);
        assert_eq!(
            plan.split,
            Some(Split {
                over: vec![BudgetUse {
                    budget: "SQ".into(),
                    events: 12,
                    limit: 8
                }]
            })
        );
        assert_eq!(
            plan.split.as_ref().unwrap().to_string(),
            "SQ needs 12 counters (8 per pass)"
        );
        assert_valid(&counters, &gfx9_limits(), &plan.passes);
    }

    #[test]
    fn popular_input_is_programmed_in_several_passes() {
        // Four ratios over GRBM_GUI_ACTIVE (GRBM 2) with TA events (limit 2): each ratio needs
        // its own TA event plus a shared one, so the shared TA event appears in every pass.
        let counters = vec![
            counter("R1", &[("GRBM", 2), ("TA", 0), ("TA", 1)]),
            counter("R2", &[("GRBM", 2), ("TA", 0), ("TA", 2)]),
            counter("R3", &[("GRBM", 2), ("TA", 0), ("TA", 3)]),
            counter("GRBM_GUI_ACTIVE", &[("GRBM", 2)]),
        ];
        let plan = plan_group(&counters, &gfx9_limits(), &PlanOptions::default()).unwrap();
        assert_eq!(pass_members(&plan), vec![vec![0, 3], vec![1], vec![2]]);
        assert_eq!(plan.lower_bound, 2);
        assert!(
            plan.optimal,
            "three pairwise-incompatible ratios need three passes"
        );
        for pass in &plan.passes {
            assert!(pass.events.contains(&("TA".to_string(), 0)));
            assert!(pass.events.contains(&("GRBM".to_string(), 2)));
        }
    }

    #[test]
    fn independent_blocks_share_passes() {
        // 10 SQ events (2 passes) and 6 TCC events (2 passes): 2 passes, not 4.
        let mut counters: Vec<_> = (0..10)
            .map(|i| counter(&format!("SQ_{i}"), &[("SQ", i)]))
            .collect();
        counters.extend((0..6).map(|i| counter(&format!("TCC_{i}"), &[("TCC", i)])));
        let plan = plan_group(&counters, &gfx9_limits(), &PlanOptions::default()).unwrap();
        assert_eq!(plan.passes.len(), 2);
        assert!(plan.optimal);
        assert_valid(&counters, &gfx9_limits(), &plan.passes);
    }

    #[test]
    fn derived_counter_over_a_limit_is_an_error_naming_blocks() {
        let counters = vec![counter(
            "BIG",
            &[("TA", 0), ("TA", 1), ("TA", 2), ("GRBM", 0)],
        )];
        let err = plan_group(&counters, &gfx9_limits(), &PlanOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "counter 'BIG' cannot be collected in one pass: TA needs 3 counters (2 per pass)"
        );
    }

    #[test]
    fn unknown_budget_is_an_error() {
        let counters = vec![counter("X", &[("GL2C", 0)])];
        let err = plan_group(&counters, &gfx9_limits(), &PlanOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "counter 'X' needs block GL2C, whose counters per pass are unknown"
        );
    }

    #[test]
    fn strict_refuses_a_split_and_proposes_one() {
        let counters = vec![
            counter("GRBM_COUNT", &[("GRBM", 0)]),
            counter("GRBM_GUI_ACTIVE", &[("GRBM", 2)]),
            counter("GRBM_CP_BUSY", &[("GRBM", 6)]),
        ];
        let options = PlanOptions {
            strict: true,
            ..PlanOptions::default()
        };
        let err = plan_group(&counters, &gfx9_limits(), &options).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the counters do not fit one pass (GRBM needs 3 counters (2 per pass)); proposed \
             split: pass 1: GRBM_COUNT GRBM_GUI_ACTIVE; pass 2: GRBM_CP_BUSY"
        );
    }

    #[test]
    fn constants_and_duplicates_ride_along() {
        let counters = vec![
            counter("CU_NUM", &[]),
            counter("GRBM_COUNT", &[("GRBM", 0)]),
            counter("GRBM_GUI_ACTIVE", &[("GRBM", 2)]),
            counter("GRBM_CP_BUSY", &[("GRBM", 6)]),
            counter("GRBM_COUNT_AGAIN", &[("GRBM", 0)]),
        ];
        let plan = plan_group(&counters, &gfx9_limits(), &PlanOptions::default()).unwrap();
        assert_eq!(pass_members(&plan), vec![vec![0, 1, 2, 4], vec![3]]);
        assert!(plan.optimal);
    }

    #[test]
    fn first_fit_baseline_keeps_counters_whole() {
        let counters = vec![
            counter("A", &[("TA", 0)]),
            counter("B", &[("TA", 1)]),
            counter("AB", &[("TA", 0), ("TA", 1)]),
            counter("C", &[("TA", 2)]),
        ];
        let passes = first_fit(&counters, &gfx9_limits()).unwrap();
        let members: Vec<_> = passes.iter().map(|p| p.counters.clone()).collect();
        assert_eq!(members, vec![vec![0, 1, 2], vec![3]]);
    }

    #[test]
    fn aliased_blocks_take_their_budget_blocks_limit() {
        let limits = Limits::from_blocks([("SQ_CS", "SQ", 4), ("SQ", "SQ", 8), ("TA", "TA", 2)]);
        assert_eq!(
            (limits.get("SQ"), limits.get("TA"), limits.get("SQ_CS")),
            (Some(8), Some(2), None)
        );
    }

    #[test]
    fn lower_bound_counts_distinct_events() {
        let counters = vec![
            counter("A", &[("TCC", 0), ("TCC", 1)]),
            counter("B", &[("TCC", 1), ("TCC", 2), ("TCC", 3), ("TCC", 4)]),
        ];
        assert_eq!(lower_bound(&counters, &gfx9_limits()).unwrap(), 2);
    }

    /// A small pseudo-random generator, so the tests need no dependency.
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    #[test]
    fn random_groups_are_valid_and_never_worse_than_first_fit() {
        let limits = gfx9_limits();
        let blocks = [("SQ", 40), ("GRBM", 6), ("TCC", 20), ("TA", 8), ("SPI", 12)];
        let mut rng = Lcg(7);
        for _ in 0..200 {
            let n = 3 + rng.below(20) as usize;
            let counters: Vec<_> = (0..n)
                .map(|i| {
                    let k = 1 + rng.below(3) as usize;
                    let events: Vec<(&str, u32)> = (0..k)
                        .map(|_| {
                            let (block, range) = blocks[rng.below(blocks.len() as u64) as usize];
                            (block, rng.below(range) as u32)
                        })
                        .collect();
                    // Keep every counter within its limits on its own.
                    let mut events = events;
                    events.sort();
                    events.dedup();
                    events.retain(|(b, _)| *b != "GRBM" || rng.below(2) == 0);
                    counter(&format!("C{i}"), &events)
                })
                .collect();
            let counters: Vec<_> = counters
                .into_iter()
                .filter(|c| {
                    Interned::new(std::slice::from_ref(c), &limits)
                        .map(|i| i.over(&i.all_events()).is_empty())
                        .unwrap_or(false)
                })
                .collect();
            let plan = plan_group(&counters, &limits, &PlanOptions::default()).unwrap();
            assert_valid(&counters, &limits, &plan.passes);
            assert!(plan.passes.len() >= plan.lower_bound);
            let baseline = first_fit(&counters, &limits).unwrap();
            assert!(plan.passes.len() <= baseline.len());
        }
    }
}
