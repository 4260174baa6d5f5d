//! Writing one pass: its dispatches go into the database and, put in start order by a bounded
//! window, straight into the pass's `counter_collection.csv`, so neither the join nor the file
//! has to read the pass back from the database.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use super::csv::CounterCollectionWriter;
use super::database::Database;
use super::files::{write_counter_collection, OutputError};
use super::model::Dispatch;

/// How many dispatches wait to be put in start order. Records of one process arrive nearly in
/// start order, and the processes' files are read merged by start time, so a dispatch rarely
/// overtakes more than a few others; one that overtakes more only costs the slower path.
pub const REORDER_WINDOW: usize = 4096;

/// A dispatch waiting in a [`StartOrder`], ordered by start time, then arrival.
struct Waiting {
    start: u64,
    arrival: u64,
    source: u32,
    dispatch: Dispatch,
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Waiting) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Waiting {}

impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Waiting) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiting {
    fn cmp(&self, other: &Waiting) -> Ordering {
        (self.start, self.arrival).cmp(&(other.start, other.arrival))
    }
}

/// Puts nearly sorted dispatches in start order (ties in arrival order), holding at most a
/// fixed number of them.
pub struct StartOrder {
    waiting: BinaryHeap<Reverse<Waiting>>,
    window: usize,
    arrivals: u64,
    last_start: u64,
    sorted: bool,
}

impl StartOrder {
    /// An empty window of `window` dispatches (at least one).
    pub fn new(window: usize) -> StartOrder {
        StartOrder {
            waiting: BinaryHeap::with_capacity(window.max(1) + 1),
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
        emit: impl FnMut(u32, &mut Dispatch, bool) -> Result<(), E>,
    ) -> Result<(), E> {
        self.waiting.push(Reverse(Waiting {
            start: d.start_ns,
            arrival: self.arrivals,
            source,
            dispatch: d,
        }));
        self.arrivals += 1;
        if self.waiting.len() > self.window {
            self.emit_first(emit)?;
        }
        Ok(())
    }

    /// Hands every waiting dispatch to `emit`, in order.
    pub fn finish<E>(
        &mut self,
        mut emit: impl FnMut(u32, &mut Dispatch, bool) -> Result<(), E>,
    ) -> Result<(), E> {
        while !self.waiting.is_empty() {
            self.emit_first(&mut emit)?;
        }
        Ok(())
    }

    fn emit_first<E>(
        &mut self,
        mut emit: impl FnMut(u32, &mut Dispatch, bool) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(Reverse(mut first)) = self.waiting.pop() else {
            return Ok(());
        };
        if first.start < self.last_start {
            self.sorted = false;
        }
        self.last_start = first.start;
        emit(first.source, &mut first.dispatch, self.sorted)
    }

    /// Whether every dispatch handed out so far started no earlier than the one before it.
    pub fn sorted(&self) -> bool {
        self.sorted
    }
}

/// Where a pass's dispatches go once in start order.
struct Sink<'a> {
    db: &'a mut Database,
    pass: u32,
    csv: Option<(PathBuf, CounterCollectionWriter)>,
    counter_ids: Vec<i64>,
}

impl Sink<'_> {
    fn emit(&mut self, source: u32, d: &mut Dispatch, sorted: bool) -> Result<(), OutputError> {
        // The database lists a dispatch's counters by id; the file follows it.
        self.counter_ids.clear();
        for c in &d.counters {
            let id = self.db.counter_id(c)?;
            self.counter_ids.push(id);
        }
        if !self.counter_ids.is_sorted() {
            let mut by_id: Vec<_> = self.counter_ids.iter().zip(d.counters.drain(..)).collect();
            by_id.sort_by_key(|p| *p.0);
            d.counters.extend(by_id.into_iter().map(|p| p.1));
        }
        self.db.insert(self.pass, source, d)?;
        if let (true, Some((_, out))) = (sorted, self.csv.as_mut()) {
            out.write(d)?;
        }
        Ok(())
    }
}

/// One pass being written: [`PassWriter::write`] each dispatch, then [`PassWriter::finish`].
pub struct PassWriter<'a> {
    order: StartOrder,
    sink: Sink<'a>,
    dispatches: u64,
}

impl<'a> PassWriter<'a> {
    /// Starts pass `pass` (described by `label`) of `db`; with `csv`, the pass's
    /// `counter_collection.csv` is written at that path.
    pub fn begin(
        db: &'a mut Database,
        pass: u32,
        label: &str,
        csv: Option<&Path>,
    ) -> Result<PassWriter<'a>, OutputError> {
        let csv = match csv {
            Some(path) => Some((path.to_path_buf(), CounterCollectionWriter::create(path)?)),
            None => None,
        };
        db.begin_pass(pass, label)?;
        Ok(PassWriter {
            order: StartOrder::new(REORDER_WINDOW),
            sink: Sink {
                db,
                pass,
                csv,
                counter_ids: Vec::new(),
            },
            dispatches: 0,
        })
    }

    /// Declares the processes of input `source` that have dispatches in this pass (see
    /// [`Database::declare_processes`]).
    pub fn declare_processes(&mut self, source: u32, pids: &[u32]) {
        self.sink.db.declare_processes(source, pids);
    }

    /// Adds one dispatch read from input `source` (0 for a single run).
    pub fn write(&mut self, source: u32, d: Dispatch) -> Result<(), OutputError> {
        self.dispatches += 1;
        let sink = &mut self.sink;
        self.order
            .push(source, d, |source, d, sorted| sink.emit(source, d, sorted))
    }

    /// The dispatches written so far.
    pub fn dispatches(&self) -> u64 {
        self.dispatches
    }

    /// Finishes the pass: the last dispatches, the join, `exit_status`, and the
    /// `counter_collection.csv` (read back from the database when the dispatches came too far
    /// out of start order to be written as they came). Returns the file's path, if written.
    pub fn finish(mut self, exit_status: Option<i32>) -> Result<Option<PathBuf>, OutputError> {
        let sink = &mut self.sink;
        self.order
            .finish(|source, d, sorted| sink.emit(source, d, sorted))?;
        sink.db.end_pass(sink.pass, exit_status)?;
        let Some((path, out)) = sink.csv.take() else {
            return Ok(None);
        };
        if self.order.sorted() {
            return Ok(Some(out.commit()?));
        }
        drop(out);
        Ok(Some(write_counter_collection(sink.db, sink.pass, &path)?))
    }
}
