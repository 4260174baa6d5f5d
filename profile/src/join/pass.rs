//! Writing one pass on three threads: the caller's reads and converts records and makes them
//! ready to insert (ids, counters in the database's order, per-position values: see
//! [`Prepared`]), one thread inserts the dispatches into the database (which joins them to
//! earlier passes as they come)
//! and one writes the pass's `counter_collection.csv` from them and adds their values to the
//! sums of the estimates and the summary, so neither the join nor the file reads the pass back
//! from the database, and the inserting thread does little beside SQLite's work. Bounded
//! channels and a bounded window that puts dispatches in start order keep memory flat in the
//! number of dispatches.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use crate::files::csv::{AgentLabels, CounterCollectionFiles, CsvPaths, Table};
use crate::files::{write_counter_collection, OutputError};
use crate::model::Dispatch;
use crate::store::database::{Database, DatabaseError, PassSums};
use crate::store::prepared::{NameIds, Prepared};

/// How many dispatches wait to be put in start order. Records of one process arrive nearly in
/// start order (in completion order: counted dispatches run one at a time per GPU), and the
/// processes' files are read merged by start time, so a dispatch rarely overtakes more than a
/// few others; one that overtakes more only costs the slower path. Each waiting dispatch holds
/// its per-dimension values, so the window is kept modest.
pub const REORDER_WINDOW: usize = 1024;

/// How many batches wait between two threads.
const CHANNEL: usize = 8;

/// Puts nearly sorted dispatches in start order (ties in arrival order), holding at most a
/// fixed number of them. Those that start no earlier than the queue's last join the queue, so
/// it stays in order, which is most of them; the others wait in a heap of (start, arrival, slot)
/// triples, their dispatches in slots, so that reordering moves a few words rather than whole
/// dispatches. Each time, the earlier by (start, arrival) of the queue's first and the heap's
/// top goes first.
pub struct StartOrder {
    run: VecDeque<(u64, u64, u32, Dispatch)>,
    waiting: BinaryHeap<Reverse<(u64, u64, usize)>>,
    /// The dispatches of the heap with their input, by slot; `None` in a free slot.
    slots: Vec<Option<(u32, Dispatch)>>,
    free: Vec<usize>,
    window: usize,
    arrivals: u64,
    last_start: u64,
    sorted: bool,
}

impl StartOrder {
    /// An empty window of `window` dispatches (at least one).
    pub fn new(window: usize) -> StartOrder {
        StartOrder {
            run: VecDeque::with_capacity(window.max(1) + 1),
            waiting: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            window: window.max(1),
            arrivals: 0,
            last_start: 0,
            sorted: true,
        }
    }

    /// Adds `d` (read from input `source`); once the window is full, hands the earliest
    /// waiting dispatch to `emit`, with whether every dispatch handed out so far, this one
    /// included, came in start order.
    pub fn push<E>(
        &mut self,
        source: u32,
        d: Dispatch,
        emit: impl FnMut(u32, Dispatch, bool) -> Result<(), E>,
    ) -> Result<(), E> {
        let (start, arrival) = (d.start_ns, self.arrivals);
        self.arrivals += 1;
        if self.run.back().is_none_or(|last| start >= last.0) {
            self.run.push_back((start, arrival, source, d));
        } else {
            let slot = match self.free.pop() {
                Some(slot) => {
                    self.slots[slot] = Some((source, d));
                    slot
                }
                None => {
                    self.slots.push(Some((source, d)));
                    self.slots.len() - 1
                }
            };
            self.waiting.push(Reverse((start, arrival, slot)));
        }
        if self.run.len() + self.waiting.len() > self.window {
            self.emit_first(emit)?;
        }
        Ok(())
    }

    /// Hands every waiting dispatch to `emit`, in order.
    pub fn finish<E>(
        &mut self,
        mut emit: impl FnMut(u32, Dispatch, bool) -> Result<(), E>,
    ) -> Result<(), E> {
        while !self.run.is_empty() || !self.waiting.is_empty() {
            self.emit_first(&mut emit)?;
        }
        Ok(())
    }

    fn emit_first<E>(
        &mut self,
        mut emit: impl FnMut(u32, Dispatch, bool) -> Result<(), E>,
    ) -> Result<(), E> {
        let from_run = match (self.run.front(), self.waiting.peek()) {
            (Some(first), Some(Reverse(top))) => (first.0, first.1) < (top.0, top.1),
            (first, _) => first.is_some(),
        };
        let first = match from_run {
            true => self
                .run
                .pop_front()
                .map(|(start, _, source, d)| (start, source, d)),
            false => self.waiting.pop().and_then(|Reverse((start, _, slot))| {
                self.free.push(slot);
                self.slots[slot]
                    .take()
                    .map(|(source, d)| (start, source, d))
            }),
        };
        let Some((start, source, dispatch)) = first else {
            return Ok(());
        };
        if start < self.last_start {
            self.sorted = false;
        }
        self.last_start = start;
        emit(source, dispatch, self.sorted)
    }

    /// Whether every dispatch handed out so far started no earlier than the one before it.
    pub fn sorted(&self) -> bool {
        self.sorted
    }
}

/// One pass to write.
#[derive(Clone, Copy)]
pub struct PassSpec<'a> {
    /// The pass number.
    pub pass: u32,
    /// What the pass collects, as recorded in `rtl_pass`.
    pub label: &'a str,
    /// Where each process's CSV files go (by pid and table), if written: processes given the
    /// same path share the file.
    pub csv: Option<&'a CsvPaths<'a>>,
    /// The per-process tables written: `counter_collection`, `kernel_trace` or both.
    pub tables: &'a [Table],
    /// How their `Agent_Id` column names agents.
    pub labels: &'a AgentLabels,
    /// Per input (0 for a single run), the processes with dispatches in the pass (see
    /// [`Database::declare_processes`]).
    pub processes: &'a [(u32, Vec<u32>)],
    /// The application's exit status in the pass, if known.
    pub exit_status: Option<i32>,
}

/// What [`write_pass`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassWritten {
    /// The pass's `counter_collection.csv` files, by path.
    pub csv: Vec<PathBuf>,
    /// The dispatches of the pass.
    pub dispatches: u64,
}

/// Dispatches handed between threads together, with whether every dispatch so far, these
/// included, came in start order. The last thread to read a batch hands it back to the caller's
/// thread, which frees its dispatches (where they were allocated, which keeps the allocator
/// fast) and fills it again.
struct Batch {
    dispatches: Vec<(u32, Dispatch)>,
    sorted: bool,
    /// The dispatches' ids and per-position values: made on the way to the database thread
    /// when the caller's thread knows every name's id, else by the database (then the caller's
    /// thread learns the ids when the batch comes back).
    prepared: Prepared,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            dispatches: Vec::with_capacity(BATCH),
            sorted: true,
            prepared: Prepared::default(),
        }
    }
}

/// How many dispatches go between threads at once, at most: enough that the inserting thread's
/// work per batch (its statements taken from the cache, their parameters cleared when put back)
/// is small beside its rows.
const BATCH: usize = 256;

/// Where a pass's dispatches come in: [`PassInput::write`] each of them.
pub struct PassInput {
    order: StartOrder,
    batch: Batch,
    to_database: SyncSender<Batch>,
    given_back: Receiver<Batch>,
    /// The ids of the names the database knows, as far as this thread knows them.
    known: NameIds,
    dispatches: u64,
}

/// The error of a pass whose database thread stopped; the thread's own error replaces it.
fn stopped() -> OutputError {
    OutputError::Io(io::Error::other("the database writer stopped"))
}

impl PassInput {
    /// Adds one dispatch read from input `source` (0 for a single run).
    pub fn write(&mut self, source: u32, d: Dispatch) -> Result<(), OutputError> {
        self.dispatches += 1;
        let (batch, to_database, given_back, known) = (
            &mut self.batch,
            &self.to_database,
            &self.given_back,
            &mut self.known,
        );
        self.order.push(source, d, |source, d, sorted| {
            batch.dispatches.push((source, d));
            batch.sorted = sorted;
            match batch.dispatches.len() < BATCH {
                true => Ok(()),
                false => send(batch, to_database, given_back, known),
            }
        })
    }

    fn finish(&mut self) -> Result<(), OutputError> {
        let (batch, to_database, given_back, known) = (
            &mut self.batch,
            &self.to_database,
            &self.given_back,
            &mut self.known,
        );
        self.order.finish(|source, d, sorted| {
            batch.dispatches.push((source, d));
            batch.sorted = sorted;
            match batch.dispatches.len() < BATCH {
                true => Ok(()),
                false => send(batch, to_database, given_back, known),
            }
        })?;
        match batch.dispatches.is_empty() {
            true => Ok(()),
            false => send(batch, to_database, given_back, known),
        }
    }
}

/// Sends the dispatches of `batch` on, made ready to insert with the ids `known` holds,
/// leaving in `batch` an empty one (one handed back, if any, whose ids `known` learns).
fn send(
    batch: &mut Batch,
    to: &SyncSender<Batch>,
    given_back: &Receiver<Batch>,
    known: &mut NameIds,
) -> Result<(), OutputError> {
    let mut next = given_back.try_recv().unwrap_or_else(|_| Batch::new());
    known.learn(&next.dispatches, &next.prepared);
    next.dispatches.clear();
    next.sorted = batch.sorted;
    let mut full = std::mem::replace(batch, next);
    full.prepared.make_known(&mut full.dispatches, known);
    to.send(full).map_err(|_| stopped())
}

/// The database thread: inserts the dispatches (making those the caller's thread did not, which
/// puts each one's counters in the database's order) and hands them on, with their ids, to the
/// thread after it.
fn insert_all(
    db: &mut Database,
    pass: u32,
    from: Receiver<Batch>,
    after: SyncSender<Batch>,
    give_back: SyncSender<Batch>,
) -> Result<(), DatabaseError> {
    for mut batch in from {
        db.insert_many_with(pass, &mut batch.dispatches, &mut batch.prepared)?;
        // A thread after this one that stopped (it panicked) reports it when joined.
        if let Err(unsent) = after.send(batch) {
            let _ = give_back.try_send(unsent.0);
        }
    }
    Ok(())
}

/// What the thread after the database thread did: the pass's files, if written (none when
/// the pass came out of start order), and the sums it added the values to.
type AfterInsert<'a> = (io::Result<Option<CounterCollectionFiles<'a>>>, PassSums);

/// The thread after the database thread: writes the file while the dispatches come in start
/// order (out of it, the file is written from the database at the end instead) and adds their
/// values to `sums`, every batch's, in order, even once the file failed.
fn after_insert<'a>(
    out: Option<CounterCollectionFiles<'a>>,
    mut sums: PassSums,
    from: Receiver<Batch>,
    give_back: SyncSender<Batch>,
) -> AfterInsert<'a> {
    let mut out = Ok(out);
    for batch in from {
        sums.add_inserted(&batch.dispatches, batch.prepared.ids());
        if !batch.sorted {
            out = out.map(|_| None);
        }
        if let Ok(Some(files)) = &mut out {
            if let Err(e) = batch
                .dispatches
                .iter()
                .try_for_each(|(_, d)| files.write(d))
            {
                out = Err(e);
            }
        }
        let _ = give_back.try_send(batch);
    }
    (out, sums)
}

fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Writes one pass into `db` (and its `counter_collection.csv`): `feed` writes every dispatch
/// into the [`PassInput`] it is given, in any order (nearly in start order is fastest). Then the
/// pass is joined to the earlier ones and its exit status recorded.
pub fn write_pass<E: From<OutputError>>(
    db: &mut Database,
    spec: &PassSpec<'_>,
    feed: impl FnOnce(&mut PassInput) -> Result<(), E>,
) -> Result<PassWritten, E> {
    let out = spec
        .csv
        .map(|paths| CounterCollectionFiles::new(paths, spec.tables, spec.labels));
    db.begin_pass(spec.pass, spec.label)
        .map_err(OutputError::from)?;
    for (source, pids) in spec.processes {
        db.declare_processes(*source, pids);
    }
    let sums = db.lend_sums(spec.pass);
    let known = db.name_ids();
    let inserting = &mut *db;
    let (fed, inserted, after, sorted, dispatches) = std::thread::scope(|scope| {
        let (to_database, from_input) = sync_channel(CHANNEL);
        let (to_after, from_database) = sync_channel(CHANNEL);
        // Room for every batch on its way, so that none is dropped away from the caller's thread.
        let (give_back, given_back) = sync_channel(2 * CHANNEL + 4);
        let pass = spec.pass;
        let gives_back = give_back.clone();
        let after = scope.spawn(move || after_insert(out, sums, from_database, gives_back));
        let database =
            scope.spawn(move || insert_all(inserting, pass, from_input, to_after, give_back));
        let mut input = PassInput {
            order: StartOrder::new(REORDER_WINDOW),
            batch: Batch::new(),
            to_database,
            given_back,
            known,
            dispatches: 0,
        };
        let fed = feed(&mut input).and_then(|()| input.finish().map_err(E::from));
        let PassInput {
            order,
            to_database,
            dispatches,
            ..
        } = input;
        drop(to_database);
        let inserted = joined(database);
        let after = joined(after);
        (fed, inserted, after, order.sorted(), dispatches)
    });
    let (written, sums) = after;
    db.take_back_sums(sums);
    inserted.map_err(OutputError::from)?;
    fed?;
    let out = written.map_err(OutputError::from)?;
    db.end_pass(spec.pass, spec.exit_status)
        .map_err(OutputError::from)?;
    let csv = match (out, spec.csv) {
        (Some(out), _) if sorted => out.commit().map_err(OutputError::from)?,
        (out, Some(paths)) => {
            // The files as written so far go (and their temporaries with them) before they
            // are written again from the database.
            drop(out);
            write_counter_collection(db, spec.pass, paths, spec.tables, spec.labels)?
        }
        (_, None) => Vec::new(),
    };
    Ok(PassWritten { csv, dispatches })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order `StartOrder` hands `starts` out in, through a window of `window`, with the
    /// sorted flag after each.
    fn ordered(starts: &[u64], window: usize) -> Vec<(u64, u32, bool)> {
        let mut order = StartOrder::new(window);
        let mut out = Vec::new();
        let mut emit = |source: u32, d: Dispatch, sorted: bool| {
            out.push((d.start_ns, source, sorted));
            Ok::<_, ()>(())
        };
        for (i, &start) in starts.iter().enumerate() {
            let d = Dispatch {
                start_ns: start,
                ..Dispatch::default()
            };
            order.push(i as u32, d, &mut emit).unwrap();
        }
        order.finish(&mut emit).unwrap();
        out
    }

    #[test]
    fn dispatches_come_out_in_start_order_ties_in_arrival_order() {
        // Late arrivals (2, 4 and the second 5) among dispatches in order, a tie (5, 5).
        let starts = [1, 3, 5, 2, 6, 4, 7, 5, 8];
        let sorted_starts = [1, 2, 3, 4, 5, 5, 6, 7, 8];
        let out = ordered(&starts, 16);
        assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), sorted_starts);
        // The tie in arrival order: the first 5 (input 2) before the second (input 7).
        assert_eq!((out[4].1, out[5].1), (2, 7));
        assert!(out.iter().all(|o| o.2));
        // Each of those overtakes at most two others: a window of 2 puts them back in order.
        let out = ordered(&starts, 2);
        assert_eq!(
            out.iter().map(|o| (o.0, o.2)).collect::<Vec<_>>(),
            [
                (1, true),
                (2, true),
                (3, true),
                (4, true),
                (5, true),
                (5, true),
                (6, true),
                (7, true),
                (8, true)
            ]
        );
        // 1 overtakes three: out of order, and said so from there on.
        let out = ordered(&[5, 6, 7, 1, 8], 2);
        assert_eq!(
            out.iter().map(|o| (o.0, o.2)).collect::<Vec<_>>(),
            [(5, true), (1, false), (6, false), (7, false), (8, false)]
        );
    }
}
