//! A batch of dispatches made ready to insert: each dispatch's kernel and counter ids, its
//! counters in id order (the order the database stores and reads them in) and its `positions`
//! (the per-position values of its counters as one JSON array, see [`super::database`]).
//!
//! The thread that reads a pass's dispatches makes it whenever it knows the id of every name in
//! the batch, so that the thread that inserts them does little beside SQLite's work; a batch
//! with a name the database has given no id yet is made by the database, and the reading thread
//! learns the ids from it when the batch comes back.

use std::convert::Infallible;
use std::ops::Range;

use crate::fast_map::FastMap;
use crate::model::{integral, push_integer_bytes, Counter, Dispatch};

/// Where the ids of kernel and counter names come from: `None` for a name without one.
pub(crate) trait NameSource {
    /// Why an id could not be had.
    type Error;
    /// The id of kernel name `kernel` (`rtl_string`).
    fn kernel_id(&mut self, kernel: &str) -> Result<Option<i64>, Self::Error>;
    /// The id of `counter` (`rtl_counter`).
    fn counter_id(&mut self, counter: &Counter) -> Result<Option<i64>, Self::Error>;
}

/// The ids the database gave kernel and counter names, as far as the reading thread knows
/// them: those it had when the pass began, and those learned from batches since
/// ([`NameIds::learn`]). An id, once given, never changes.
#[derive(Debug, Default, Clone)]
pub struct NameIds {
    pub(crate) kernels: FastMap<String, i64>,
    pub(crate) counters: FastMap<String, i64>,
}

impl NameSource for &NameIds {
    type Error = Infallible;

    fn kernel_id(&mut self, kernel: &str) -> Result<Option<i64>, Infallible> {
        Ok(self.kernels.get(kernel).copied())
    }

    fn counter_id(&mut self, counter: &Counter) -> Result<Option<i64>, Infallible> {
        Ok(self.counters.get(&counter.name).copied())
    }
}

impl NameIds {
    /// Learns the ids of the names of `dispatches` from `prepared`, when the database looked
    /// them up for it.
    pub fn learn(&mut self, dispatches: &[(u32, Dispatch)], prepared: &Prepared) {
        if !prepared.looked_up {
            return;
        }
        let mut ids = prepared.ids.iter().copied();
        for (_, d) in dispatches {
            let Some(kernel) = ids.next() else { return };
            if !self.kernels.contains_key(&d.kernel) {
                self.kernels.insert(d.kernel.clone(), kernel);
            }
            for c in &d.counters {
                let Some(id) = ids.next() else { return };
                if !self.counters.contains_key(&c.name) {
                    self.counters.insert(c.name.clone(), id);
                }
            }
        }
    }
}

/// The ids and `positions` of a batch of dispatches (see the module's documentation).
#[derive(Debug, Default)]
pub struct Prepared {
    /// Per dispatch, its kernel's id, then its counters' ids in id order.
    ids: Vec<i64>,
    /// Each dispatch's `positions`, one after another (ASCII).
    positions: String,
    /// Per dispatch, where its `positions` end (they start where the one before ends; empty for
    /// a dispatch without).
    ends: Vec<usize>,
    /// Whether this was made for the dispatches it goes with.
    made: bool,
    /// Whether the database looked the names up for it.
    looked_up: bool,
}

impl Prepared {
    /// Makes this for `dispatches` with the ids `known` holds, putting each dispatch's counters
    /// in id order; false, changing no dispatch and leaving the batch to the database, when a
    /// name has no id there.
    pub fn make_known(&mut self, dispatches: &mut [(u32, Dispatch)], known: &NameIds) -> bool {
        let Ok(made) = self.make(dispatches, known);
        made
    }

    /// Makes this for `dispatches` with the ids `names` gives, putting each dispatch's counters
    /// in id order; `Ok(false)`, changing no dispatch, at the first name without an id.
    pub(crate) fn make<N: NameSource>(
        &mut self,
        dispatches: &mut [(u32, Dispatch)],
        mut names: N,
    ) -> Result<bool, N::Error> {
        self.made = false;
        self.looked_up = false;
        let ids = &mut self.ids;
        ids.clear();
        // Where the ids of the counters of the dispatch before start in `ids`.
        let mut first_before = 0;
        for at in 0..dispatches.len() {
            let d = &dispatches[at].1;
            let Some(kernel) = names.kernel_id(&d.kernel)? else {
                return Ok(false);
            };
            ids.push(kernel);
            let first = ids.len();
            // The dispatch before usually has the same counters, in the order both were put
            // in: their ids without looking each name up.
            let same = at.checked_sub(1).is_some_and(|b| {
                let b = &dispatches[b].1;
                b.counters.len() == d.counters.len()
                    && b.counters
                        .iter()
                        .zip(&d.counters)
                        .all(|(b, c)| b.name == c.name)
            });
            match same {
                true => ids.extend_from_within(first_before..first_before + d.counters.len()),
                false => {
                    for c in &d.counters {
                        let Some(id) = names.counter_id(c)? else {
                            return Ok(false);
                        };
                        ids.push(id);
                    }
                }
            }
            first_before = first;
        }
        // Then each dispatch's counters in id order, and their per-position values.
        let mut json = std::mem::take(&mut self.positions).into_bytes();
        json.clear();
        self.ends.clear();
        let mut first = 0;
        for (_, d) in dispatches.iter_mut() {
            first += 1;
            let end = first + d.counters.len();
            let own = &mut ids[first..end];
            if !own.is_sorted() {
                let mut by_id: Vec<(i64, Counter)> =
                    own.iter().copied().zip(d.counters.drain(..)).collect();
                by_id.sort_by_key(|p| p.0);
                for (slot, (id, c)) in own.iter_mut().zip(by_id) {
                    *slot = id;
                    d.counters.push(c);
                }
            }
            push_positions(&mut json, &d.counters, own);
            self.ends.push(json.len());
            first = end;
        }
        // ASCII only, so never empty for a lack of UTF-8.
        self.positions = String::from_utf8(json).unwrap_or_default();
        self.made = true;
        Ok(true)
    }

    /// Notes that the database looked the names up for this (so the reading thread learns them).
    pub(crate) fn set_looked_up(&mut self) {
        self.looked_up = true;
    }

    /// Whether this was made for the dispatches it goes with.
    pub(crate) fn made(&self) -> bool {
        self.made
    }

    /// Notes that the dispatches this was made for are inserted: it is made again for the next
    /// ones (its ids stay, for the thread after the database's and the reading thread).
    pub(crate) fn inserted(&mut self) {
        self.made = false;
    }

    /// Per dispatch, its kernel's id, then its counters' ids in their order.
    pub fn ids(&self) -> &[i64] {
        &self.ids
    }

    /// The `positions` of dispatch `at` of the batch (none for a dispatch without).
    pub(crate) fn positions(&self, at: usize) -> Option<&str> {
        let from = match at {
            0 => 0,
            _ => *self.ends.get(at - 1)?,
        };
        let range: Range<usize> = from..*self.ends.get(at)?;
        self.positions.get(range).filter(|p| !p.is_empty())
    }
}

/// Appends the per-position values of `counters` (ids `ids`, ascending) as one JSON array: the
/// id of the first counter with several values, then per counter id from it on its values, or
/// null for an id without (see `position_array` in [`super::database`]); nothing when no
/// counter has several values.
fn push_positions(json: &mut Vec<u8>, counters: &[Counter], ids: &[i64]) {
    let from = json.len();
    let mut next = 0;
    for (c, &pmc) in counters.iter().zip(ids) {
        if c.values.len() < 2 {
            continue;
        }
        if json.len() == from {
            json.push(b'[');
            push_integer_bytes(json, pmc);
            next = pmc;
        }
        for _ in next..pmc {
            json.extend_from_slice(b",null");
        }
        json.push(b',');
        push_dimension_json(json, &c.values);
        next = pmc + 1;
    }
    if json.len() > from {
        json.push(b']');
    }
}

/// Appends a value's per-dimension values to `json` as a JSON array (integers without a
/// fraction); false, appending nothing, for a single value.
pub(crate) fn push_dimension_json(json: &mut Vec<u8>, values: &[f64]) -> bool {
    use std::io::Write as _;
    if values.len() < 2 {
        return false;
    }
    json.push(b'[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            json.push(b',');
        }
        if let Some(integer) = integral(*v) {
            push_integer_bytes(json, integer);
        } else {
            let _ = write!(json, "{v}");
        }
    }
    json.push(b']');
    true
}
