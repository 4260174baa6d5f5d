//! Exact packing of event sets into the fewest passes.
//!
//! The problem: items are sets of events, each event consumes one register of its budget, and a
//! pass (bin) holds any set of items whose *union* of events stays within every budget's limit.
//! Events shared by items in one bin are paid for once; an event may be paid for in several bins.
//!
//! The solver first takes an upper bound from best-fit heuristics, then proves or improves it
//! with a depth-first search per candidate bin count `k` (from the upper bound down): the most
//! constrained item is placed first (as DSATUR does for colouring), bins are tried by fewest new
//! events, only one empty bin is ever tried (bins are interchangeable), an item whose events are
//! all in some bin already is placed there without branching (it costs nothing), and a node is
//! cut when some budget's events that no bin holds yet outnumber the free registers left. A node
//! budget bounds the work; when it runs out the best packing found is kept and reported as not
//! proven optimal.

use std::time::Instant;

/// A packing instance. Every item must fit an empty bin on its own.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    /// Registers per pass of each budget.
    pub limits: Vec<usize>,
    /// Budget of each event.
    pub event_budget: Vec<usize>,
    /// Events of each item, sorted and distinct.
    pub items: Vec<Vec<usize>>,
}

/// A packing found by [`pack`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Packing {
    /// Bin of each item, `0..bins`.
    pub assignment: Vec<usize>,
    /// Number of bins used.
    pub bins: usize,
    /// Best lower bound proven for this instance (equal to `bins` when optimal).
    pub proven_lower_bound: usize,
}

/// Per-item events grouped by budget, the form every feasibility check walks.
struct Prepared<'a> {
    inst: &'a Instance,
    by_budget: Vec<Vec<(usize, Vec<usize>)>>,
    words: usize,
}

impl<'a> Prepared<'a> {
    fn new(inst: &'a Instance) -> Self {
        let by_budget = inst
            .items
            .iter()
            .map(|events| {
                let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
                for &e in events {
                    let b = inst.event_budget[e];
                    match groups.iter_mut().find(|(gb, _)| *gb == b) {
                        Some((_, list)) => list.push(e),
                        None => groups.push((b, vec![e])),
                    }
                }
                groups
            })
            .collect();
        Prepared {
            inst,
            by_budget,
            words: inst.event_budget.len().div_ceil(64).max(1),
        }
    }
}

/// Open bins: the events each holds (a bitset) and the registers each budget uses.
struct Bins {
    words: usize,
    budgets: usize,
    bits: Vec<u64>,
    used: Vec<usize>,
    open: usize,
}

impl Bins {
    fn new(words: usize, budgets: usize) -> Self {
        Bins {
            words,
            budgets,
            bits: Vec::new(),
            used: Vec::new(),
            open: 0,
        }
    }

    fn holds(&self, bin: usize, event: usize) -> bool {
        self.bits[bin * self.words + event / 64] & (1u64 << (event % 64)) != 0
    }

    /// New events `item` would add to `bin`, or `None` when some budget would overflow.
    fn added(&self, p: &Prepared<'_>, item: usize, bin: usize) -> Option<usize> {
        let mut total = 0;
        for (budget, events) in &p.by_budget[item] {
            let missing = events.iter().filter(|&&e| !self.holds(bin, e)).count();
            if self.used[bin * self.budgets + budget] + missing > p.inst.limits[*budget] {
                return None;
            }
            total += missing;
        }
        Some(total)
    }

    fn open_bin(&mut self) -> usize {
        self.bits.extend(std::iter::repeat_n(0, self.words));
        self.used.extend(std::iter::repeat_n(0, self.budgets));
        self.open += 1;
        self.open - 1
    }

    fn close_last(&mut self) {
        self.open -= 1;
        self.bits.truncate(self.open * self.words);
        self.used.truncate(self.open * self.budgets);
    }

    /// Adds the item's events to the bin, appending the events that were new to `trail`.
    fn insert(&mut self, p: &Prepared<'_>, item: usize, bin: usize, trail: &mut Vec<usize>) {
        for (budget, events) in &p.by_budget[item] {
            for &e in events {
                if !self.holds(bin, e) {
                    self.bits[bin * self.words + e / 64] |= 1u64 << (e % 64);
                    self.used[bin * self.budgets + budget] += 1;
                    trail.push(e);
                }
            }
        }
    }

    fn remove(&mut self, p: &Prepared<'_>, bin: usize, events: &[usize]) {
        for &e in events {
            self.bits[bin * self.words + e / 64] &= !(1u64 << (e % 64));
            self.used[bin * self.budgets + p.inst.event_budget[e]] -= 1;
        }
    }
}

/// Places items one by one in the order given, each into the open bin it adds the fewest events
/// to, opening a bin when none can take it.
fn best_fit(p: &Prepared<'_>, order: &[usize]) -> (Vec<usize>, usize) {
    let mut bins = Bins::new(p.words, p.inst.limits.len());
    let mut assignment = vec![0; p.inst.items.len()];
    let mut trail = Vec::new();
    for &item in order {
        let best = (0..bins.open)
            .filter_map(|bin| bins.added(p, item, bin).map(|added| (added, bin)))
            .min();
        let bin = match best {
            Some((_, bin)) => bin,
            None => bins.open_bin(),
        };
        bins.insert(p, item, bin, &mut trail);
        assignment[item] = bin;
    }
    (assignment, bins.open)
}

/// Weight of an item: the share of each budget it occupies, summed.
fn weight(inst: &Instance, item: usize) -> f64 {
    inst.items[item]
        .iter()
        .map(|&e| 1.0 / inst.limits[inst.event_budget[e]] as f64)
        .sum()
}

/// The simple bound: for each budget, its distinct events divided by its limit, rounded up.
fn counting_bound(inst: &Instance) -> usize {
    let mut per_budget = vec![0usize; inst.limits.len()];
    let mut seen = vec![false; inst.event_budget.len()];
    for events in &inst.items {
        for &e in events {
            if !std::mem::replace(&mut seen[e], true) {
                per_budget[inst.event_budget[e]] += 1;
            }
        }
    }
    per_budget
        .iter()
        .zip(&inst.limits)
        .map(|(&n, &limit)| n.div_ceil(limit))
        .max()
        .unwrap_or(0)
}

/// A bound from items that pairwise cannot share a bin: each needs a bin of its own.
fn clique_bound(p: &Prepared<'_>) -> usize {
    let n = p.inst.items.len();
    if n > 2000 {
        return 0;
    }
    let mut bins = Bins::new(p.words, p.inst.limits.len());
    let mut trail = Vec::new();
    let mut clash = vec![false; n * n];
    for i in 0..n {
        bins.open_bin();
        bins.insert(p, i, 0, &mut trail);
        for j in i + 1..n {
            if bins.added(p, j, 0).is_none() {
                clash[i * n + j] = true;
                clash[j * n + i] = true;
            }
        }
        bins.close_last();
        trail.clear();
    }
    let degree: Vec<usize> = (0..n)
        .map(|i| clash[i * n..(i + 1) * n].iter().filter(|&&c| c).count())
        .collect();
    let mut by_degree: Vec<usize> = (0..n).collect();
    by_degree.sort_by_key(|&i| std::cmp::Reverse(degree[i]));
    let mut best = usize::from(n > 0);
    for &seed in &by_degree {
        if degree[seed] < best {
            break;
        }
        let mut clique = vec![seed];
        for &candidate in &by_degree {
            if clique.iter().all(|&c| clash[c * n + candidate]) {
                clique.push(candidate);
            }
        }
        best = best.max(clique.len());
    }
    best
}

/// How much searching is left: nodes, and optionally a moment to stop at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Search nodes left.
    pub nodes: u64,
    /// When to stop, whatever nodes are left.
    pub deadline: Option<Instant>,
}

impl Budget {
    /// Takes one node; false when the budget is spent.
    fn spend(&mut self) -> bool {
        if self.nodes == 0 {
            return false;
        }
        self.nodes -= 1;
        if self.nodes.is_multiple_of(128) && self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.nodes = 0;
        }
        true
    }
}

/// How a depth-first search for a fixed bin count ended.
enum Outcome {
    Found,
    Infeasible,
    OutOfBudget,
}

/// Depth-first search for a packing into at most `k` bins.
struct Search<'p, 'a> {
    p: &'p Prepared<'a>,
    k: usize,
    bins: Bins,
    assignment: Vec<Option<usize>>,
    unplaced: usize,
    /// Per event: how many bins hold it.
    cover: Vec<u32>,
    /// Per event: how many unplaced items need it.
    demand: Vec<u32>,
    budget: Budget,
}

impl<'p, 'a> Search<'p, 'a> {
    fn new(p: &'p Prepared<'a>, k: usize, budget: Budget) -> Self {
        let mut demand = vec![0u32; p.inst.event_budget.len()];
        for events in &p.inst.items {
            for &e in events {
                demand[e] += 1;
            }
        }
        Search {
            p,
            k,
            bins: Bins::new(p.words, p.inst.limits.len()),
            assignment: vec![None; p.inst.items.len()],
            unplaced: p.inst.items.len(),
            cover: vec![0; p.inst.event_budget.len()],
            demand,
            budget,
        }
    }

    /// Places an item; returns the events it added to the bin and whether the bin was opened.
    fn place(&mut self, item: usize, bin: usize) -> (Vec<usize>, bool) {
        let opened = bin == self.bins.open;
        if opened {
            self.bins.open_bin();
        }
        let mut added = Vec::new();
        self.bins.insert(self.p, item, bin, &mut added);
        for &e in &added {
            self.cover[e] += 1;
        }
        for &e in &self.p.inst.items[item] {
            self.demand[e] -= 1;
        }
        self.assignment[item] = Some(bin);
        self.unplaced -= 1;
        (added, opened)
    }

    fn unplace(&mut self, item: usize, bin: usize, added: &[usize], opened: bool) {
        self.bins.remove(self.p, bin, added);
        for &e in added {
            self.cover[e] -= 1;
        }
        for &e in &self.p.inst.items[item] {
            self.demand[e] += 1;
        }
        self.assignment[item] = None;
        self.unplaced += 1;
        if opened {
            self.bins.close_last();
        }
    }

    /// False when some budget has more still-uncovered events than free registers in `k` bins.
    fn enough_room(&self) -> bool {
        let inst = self.p.inst;
        let mut needed = vec![0usize; inst.limits.len()];
        for (e, &b) in inst.event_budget.iter().enumerate() {
            if self.cover[e] == 0 && self.demand[e] > 0 {
                needed[b] += 1;
            }
        }
        needed.iter().enumerate().all(|(b, &need)| {
            let limit = inst.limits[b];
            let used: usize = (0..self.bins.open)
                .map(|bin| self.bins.used[bin * self.bins.budgets + b])
                .sum();
            need + used <= limit * self.k
        })
    }

    fn run(&mut self) -> Outcome {
        if !self.budget.spend() {
            return Outcome::OutOfBudget;
        }
        let mut free = Vec::new();
        let outcome = self.step(&mut free);
        if !matches!(outcome, Outcome::Found) {
            for &(item, bin) in free.iter().rev() {
                self.unplace(item, bin, &[], false);
            }
        }
        outcome
    }

    /// Bins that can take `item`, with the events each would gain; `None` when one would gain
    /// none (the item then costs nothing there).
    fn options(&self, item: usize, out: &mut Vec<(usize, usize)>) -> Option<usize> {
        out.clear();
        for bin in 0..self.bins.open {
            match self.bins.added(self.p, item, bin) {
                Some(0) => return Some(bin),
                Some(added) => out.push((added, bin)),
                None => {}
            }
        }
        if self.bins.open < self.k {
            out.push((usize::MAX, self.bins.open));
        }
        None
    }

    fn step(&mut self, free: &mut Vec<(usize, usize)>) -> Outcome {
        // One sweep: place free items (placing them changes no bin), and find the most
        // constrained other item: fewest bins that can take it, then the most events.
        let mut options = Vec::new();
        let mut chosen: Option<(usize, usize)> = None;
        for item in 0..self.assignment.len() {
            if self.assignment[item].is_some() {
                continue;
            }
            if let Some(bin) = self.options(item, &mut options) {
                self.place(item, bin);
                free.push((item, bin));
                continue;
            }
            if options.is_empty() {
                return Outcome::Infeasible;
            }
            let size = self.p.inst.items[item].len();
            let better = chosen.is_none_or(|(count, best)| {
                options.len() < count
                    || (options.len() == count && size > self.p.inst.items[best].len())
            });
            if better {
                chosen = Some((options.len(), item));
            }
        }
        let Some((_, item)) = chosen else {
            return Outcome::Found;
        };
        if !self.enough_room() {
            return Outcome::Infeasible;
        }
        self.options(item, &mut options);
        options.sort_unstable();
        for (_, bin) in options {
            let (added, opened) = self.place(item, bin);
            match self.run() {
                Outcome::Found => return Outcome::Found,
                Outcome::OutOfBudget => {
                    self.unplace(item, bin, &added, opened);
                    return Outcome::OutOfBudget;
                }
                Outcome::Infeasible => self.unplace(item, bin, &added, opened),
            }
        }
        Outcome::Infeasible
    }
}

/// Packs the instance into the fewest bins it can prove or find within `budget`. `floor` is a bin count the caller does not need to go below (another part of the
/// problem already needs that many), which lets the search stop early.
pub(crate) fn pack(inst: &Instance, floor: usize, budget: &mut Budget) -> Packing {
    let p = Prepared::new(inst);
    let n = inst.items.len();
    if n == 0 {
        return Packing {
            assignment: Vec::new(),
            bins: 0,
            proven_lower_bound: 0,
        };
    }
    let lower = counting_bound(inst).max(clique_bound(&p)).max(1);

    let weights: Vec<f64> = (0..n).map(|i| weight(inst, i)).collect();
    let mut by_weight: Vec<usize> = (0..n).collect();
    by_weight.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    let mut by_size: Vec<usize> = (0..n).collect();
    by_size.sort_by_key(|&i| (std::cmp::Reverse(inst.items[i].len()), i));
    let in_order: Vec<usize> = (0..n).collect();
    let (mut assignment, mut bins) = [by_weight, by_size, in_order]
        .iter()
        .map(|order| best_fit(&p, order))
        .min_by_key(|(_, bins)| *bins)
        .unwrap_or_default();

    let mut proven = lower;
    let target = lower.max(floor);
    while bins > target {
        let mut search = Search::new(&p, bins - 1, *budget);
        let outcome = search.run();
        *budget = search.budget;
        match outcome {
            Outcome::Found => {
                assignment = search.assignment.iter().map(|b| b.unwrap_or(0)).collect();
                bins = search.bins.open;
            }
            Outcome::Infeasible => {
                proven = bins;
                break;
            }
            Outcome::OutOfBudget => break,
        }
    }
    Packing {
        assignment,
        bins,
        proven_lower_bound: proven.min(bins),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(nodes: u64) -> Budget {
        Budget {
            nodes,
            deadline: None,
        }
    }

    fn check(inst: &Instance, packing: &Packing) {
        for bin in 0..packing.bins {
            let mut events: Vec<usize> = (0..inst.items.len())
                .filter(|&i| packing.assignment[i] == bin)
                .flat_map(|i| inst.items[i].iter().copied())
                .collect();
            events.sort();
            events.dedup();
            for (b, &limit) in inst.limits.iter().enumerate() {
                let used = events
                    .iter()
                    .filter(|&&e| inst.event_budget[e] == b)
                    .count();
                assert!(
                    used <= limit,
                    "bin {bin} uses {used} of budget {b} (limit {limit})"
                );
            }
        }
    }

    #[test]
    fn single_events_reach_the_counting_bound() {
        let inst = Instance {
            limits: vec![2, 3],
            event_budget: vec![0, 0, 0, 0, 0, 1, 1, 1],
            items: (0..8).map(|e| vec![e]).collect(),
        };
        let packing = pack(&inst, 0, &mut nodes(1000));
        check(&inst, &packing);
        assert_eq!(packing.bins, 3);
        assert_eq!(packing.proven_lower_bound, 3);
    }

    #[test]
    fn shared_event_is_paid_for_in_several_bins() {
        // Budget limit 2; every item is {0, x}: event 0 goes in every bin.
        let inst = Instance {
            limits: vec![2],
            event_budget: vec![0; 5],
            items: vec![vec![0, 1], vec![0, 2], vec![0, 3], vec![0, 4]],
        };
        let packing = pack(&inst, 0, &mut nodes(1000));
        check(&inst, &packing);
        assert_eq!(packing.bins, 4);
        assert_eq!(packing.proven_lower_bound, 4);
    }

    /// Limit 4; the optimum pairs the items that share two events.
    fn paired() -> Instance {
        Instance {
            limits: vec![4],
            event_budget: vec![0; 8],
            items: vec![
                vec![0, 1, 2],
                vec![4, 5, 6],
                vec![0, 1, 3],
                vec![4, 5, 7],
                vec![2, 3],
                vec![6, 7],
            ],
        }
    }

    #[test]
    fn search_beats_greedy_on_a_crafted_instance() {
        let inst = paired();
        let packing = pack(&inst, 0, &mut nodes(10_000));
        check(&inst, &packing);
        assert_eq!(packing.bins, 2);
        assert_eq!(packing.proven_lower_bound, 2);
    }

    #[test]
    fn exhausted_budget_keeps_the_heuristic_packing() {
        let inst = paired();
        let packing = pack(&inst, 0, &mut nodes(0));
        check(&inst, &packing);
        assert!(packing.bins >= 2);
        assert_eq!(packing.proven_lower_bound, 2);
    }

    /// The fewest bins by trying every partition of the items (small instances only).
    fn brute_force(inst: &Instance) -> usize {
        fn fits(inst: &Instance, members: &[usize]) -> bool {
            let mut events: Vec<usize> = members
                .iter()
                .flat_map(|&i| inst.items[i].iter().copied())
                .collect();
            events.sort_unstable();
            events.dedup();
            inst.limits.iter().enumerate().all(|(b, &limit)| {
                events
                    .iter()
                    .filter(|&&e| inst.event_budget[e] == b)
                    .count()
                    <= limit
            })
        }
        fn go(inst: &Instance, item: usize, bins: &mut Vec<Vec<usize>>, best: &mut usize) {
            if bins.len() >= *best {
                return;
            }
            if item == inst.items.len() {
                *best = bins.len();
                return;
            }
            for b in 0..bins.len() {
                bins[b].push(item);
                if fits(inst, &bins[b]) {
                    go(inst, item + 1, bins, best);
                }
                bins[b].pop();
            }
            bins.push(vec![item]);
            go(inst, item + 1, bins, best);
            bins.pop();
        }
        let mut best = usize::MAX;
        go(inst, 0, &mut Vec::new(), &mut best);
        best
    }

    #[test]
    fn matches_brute_force_on_small_random_instances() {
        let mut state = 99u64;
        let mut below = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for _ in 0..300 {
            let budgets = 1 + below(2) as usize;
            let limits: Vec<usize> = (0..budgets).map(|_| 2 + below(3) as usize).collect();
            let events = 4 + below(6) as usize;
            let event_budget: Vec<usize> = (0..events)
                .map(|_| below(budgets as u64) as usize)
                .collect();
            let items: Vec<Vec<usize>> = (0..3 + below(6))
                .map(|_| {
                    let mut item: Vec<usize> = (0..1 + below(3))
                        .map(|_| below(events as u64) as usize)
                        .collect();
                    item.sort_unstable();
                    item.dedup();
                    item
                })
                .filter(|item| {
                    (0..budgets).all(|b| {
                        item.iter().filter(|&&e| event_budget[e] == b).count() <= limits[b]
                    })
                })
                .collect();
            let inst = Instance {
                limits,
                event_budget,
                items,
            };
            let packing = pack(&inst, 0, &mut nodes(100_000));
            check(&inst, &packing);
            assert_eq!(packing.bins, brute_force(&inst), "{inst:?}");
            assert_eq!(packing.proven_lower_bound, packing.bins, "{inst:?}");
        }
    }
}
