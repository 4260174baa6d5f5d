//! Completion of wrapped dispatches on a worker thread, and the raw record file.
//!
//! For each wrapped dispatch the worker waits for our kernel signal, reads the kernel's
//! timestamps, copies them into the application's `amd_signal_t` and completes the
//! application's signal exactly once (decrement by 1, as the command processor would have).
//! With counters it then waits for the stop packet's signal, reads the values and returns the
//! packet set to its pool. Records are appended to `<output directory>/<pid>.rtlraw` and
//! flushed once nothing is left in flight (at most every [`QUIET_FLUSH`]), and at least every
//! [`FLUSH_INTERVAL`].
//!
//! The worker never waits on one dispatch alone: an application may make an earlier dispatch
//! depend (through a barrier packet) on the completion signal of a later one, which only the
//! worker completes. It waits with `hsa_amd_signal_wait_any` for any pending dispatch somebody
//! waits for (one with an application signal, or kernel replay's next step) and a wake-up
//! signal, or, without it, briefly on the oldest signal, and then checks all of them.
//!
//! Dispatches nobody waits for (the application's batches carry a completion signal on their
//! last packet only) are not worth a wake-up each: the worker collects them when it wakes for
//! one that is, at least every [`POLL`], or once [`LAZY_LIMIT`] of them arrived. So a stream of
//! batches costs the worker two wake-ups per batch, not one per dispatch.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::counters::{GpuCounters, PacketSet};
use super::records::{Record, RecordFile, RegionKind, ReplayStats};
use super::replay::Replay;
use super::roctx::Roctx;
use super::runtime::Hsa;
use crate::fast_map::FastMap;
use crate::hsa::*;

/// Records reach the file at least this often.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// Records are written once nothing is left in flight and the last write is this old, so any
/// pause in the application's stream puts every record on disk without a write per batch.
const QUIET_FLUSH: Duration = Duration::from_millis(2);
/// Records are written once this many bytes are buffered, so that the buffer stays small
/// when counters give thousands of values per dispatch.
const FLUSH_BYTES: usize = 1 << 20;
/// How long one wait lasts before every pending signal is checked.
const POLL: Duration = Duration::from_millis(1);
/// Dispatches nobody waits for that may arrive before the worker is woken for them, bounding
/// the signals and packet sets they hold.
const LAZY_LIMIT: usize = 256;

/// Signals a thread takes from the pool at once.
const STASH: usize = 32;

/// Counter value vectors of written records kept for the next reads.
const SPARE_VALUES: usize = 64;

/// What the dispatches completed in one round of the worker leave, returned together at its
/// end (one lock per pool and round, not per dispatch: the dispatch path takes from the same
/// pools), and what the next reads reuse.
#[derive(Default)]
struct Leftovers {
    /// Signals nobody waits on any more.
    signals: Vec<hsa_signal_t>,
    /// Packet sets whose values were read, by GPU (boxed as their pools keep them).
    #[allow(clippy::vec_box)]
    sets: Vec<(Arc<GpuCounters>, Vec<Box<PacketSet>>)>,
    /// Counter value vectors of records written, for the next reads to fill.
    values: Vec<Vec<Vec<u64>>>,
}

impl Leftovers {
    /// A packet set of `gpu` whose values were read.
    fn set(&mut self, gpu: &Arc<GpuCounters>, set: Box<PacketSet>) {
        match self.sets.iter_mut().find(|(g, _)| Arc::ptr_eq(g, gpu)) {
            Some((_, sets)) => sets.push(set),
            None => self.sets.push((Arc::clone(gpu), vec![set])),
        }
    }

    /// Returns the signals and packet sets to their pools.
    fn give_back(&mut self, signals: &SignalPool) {
        signals.give_all(&mut self.signals);
        for (gpu, sets) in &mut self.sets {
            if !sets.is_empty() {
                gpu.give_back_all(sets);
            }
        }
    }
}

thread_local! {
    /// The calling thread's signals taken from the pool, with the fork generation they were
    /// taken in.
    static STASHED: std::cell::RefCell<(u64, Vec<hsa_signal_t>)> =
        const { std::cell::RefCell::new((0, Vec::new())) };
}

/// Signals with value 1, reused.
pub struct SignalPool {
    hsa: Arc<Hsa>,
    free: Mutex<Vec<hsa_signal_t>>,
}

impl SignalPool {
    /// An empty pool.
    pub fn new(hsa: Arc<Hsa>) -> SignalPool {
        SignalPool {
            hsa,
            free: Mutex::new(Vec::new()),
        }
    }

    /// A signal with value 1, or `None` if the runtime cannot create one.
    ///
    /// Each thread takes from a stash of its own, refilled [`STASH`] signals at a time, so that
    /// the dispatch path shares the pool's lock with the completion worker once per refill, not
    /// per dispatch. A thread's stash outlives it; signals are never destroyed before the
    /// runtime is, so nothing is lost but their reuse.
    pub fn take(&self) -> Option<hsa_signal_t> {
        let generation = super::interposer::fork_generation();
        let stashed = STASHED.with(|cell| {
            let mut stash = cell.borrow_mut();
            if stash.0 != generation {
                // Signals of the parent process, in a forked child.
                *stash = (generation, Vec::new());
            }
            if stash.1.is_empty() {
                if let Ok(mut free) = self.free.lock() {
                    let from = free.len().saturating_sub(STASH);
                    stash.1.extend(free.drain(from..));
                }
            }
            stash.1.pop()
        });
        stashed.or_else(|| self.hsa.signal_create(1))
    }

    /// Returns a signal nobody waits on or changes any more; it is set back to 1 here, on the
    /// completion worker, not when the dispatch path takes it.
    pub fn give(&self, signal: hsa_signal_t) {
        self.hsa.signal_store(signal, 1);
        match self.free.lock() {
            Ok(mut free) => free.push(signal),
            Err(_) => self.hsa.signal_destroy(signal),
        }
    }

    /// Returns signals as [`SignalPool::give`] does, under one lock, leaving `signals` empty.
    pub fn give_all(&self, signals: &mut Vec<hsa_signal_t>) {
        for signal in signals.iter() {
            self.hsa.signal_store(*signal, 1);
        }
        match self.free.lock() {
            Ok(mut free) => free.append(signals),
            Err(_) => signals.drain(..).for_each(|s| self.hsa.signal_destroy(s)),
        }
    }
}

/// A counted dispatch's stop signal, which the next counted dispatch on the GPU waits for.
/// Returned to the pool when the dispatch and its successor have both completed.
pub struct ChainLink {
    /// The signal the stop packet completes.
    pub signal: hsa_signal_t,
    pool: Arc<SignalPool>,
}

impl ChainLink {
    /// A link for `signal`, returned to `pool` when dropped.
    pub fn new(signal: hsa_signal_t, pool: Arc<SignalPool>) -> ChainLink {
        ChainLink { signal, pool }
    }
}

impl Drop for ChainLink {
    fn drop(&mut self) {
        self.pool.give(self.signal);
    }
}

/// A record with the names it is written with: interned, not copied per dispatch (the record's
/// own `arch` and `kernel` stay empty).
pub struct Named {
    /// The record.
    pub record: Record,
    /// The GPU's architecture.
    pub arch: &'static str,
    /// The kernel's name.
    pub kernel: &'static str,
}

/// The counter part of a pending dispatch.
pub struct CountedPart {
    /// The GPU's counters (pool owner).
    pub gpu: Arc<GpuCounters>,
    /// The packet set programmed around the kernel.
    pub set: Box<PacketSet>,
    /// This dispatch's stop signal.
    pub done: Arc<ChainLink>,
    /// The previous counted dispatch's stop signal, held until this one completes.
    pub previous: Option<Arc<ChainLink>>,
}

/// One run of a dispatch's kernel: the whole dispatch, or one pass of a replayed one.
pub struct PassRun {
    /// Our kernel completion signal.
    pub kernel_signal: hsa_signal_t,
    /// Counters, when collected.
    pub counted: Option<CountedPart>,
    kernel_done: bool,
    start: u64,
    end: u64,
}

impl PassRun {
    /// A run of the kernel completing `kernel_signal`.
    pub fn new(kernel_signal: hsa_signal_t, counted: Option<CountedPart>) -> PassRun {
        PassRun {
            kernel_signal,
            counted,
            kernel_done: false,
            start: 0,
            end: 0,
        }
    }
}

/// The runs of a pending dispatch: one (no allocation), or several with kernel replay.
// The one run is inline on purpose: a box would be allocated on the dispatch path and freed on
// the completion worker, which costs both threads the allocator's lock.
enum Passes {
    One(PassRun),
    Several(Vec<PassRun>),
}

impl std::ops::Deref for Passes {
    type Target = [PassRun];

    fn deref(&self) -> &[PassRun] {
        match self {
            Passes::One(run) => std::slice::from_ref(run),
            Passes::Several(runs) => runs,
        }
    }
}

impl std::ops::DerefMut for Passes {
    fn deref_mut(&mut self) -> &mut [PassRun] {
        match self {
            Passes::One(run) => std::slice::from_mut(run),
            Passes::Several(runs) => runs,
        }
    }
}

/// The raw start and end timestamps our completed kernel signal holds.
fn raw_timestamps(signal: hsa_signal_t) -> (u64, u64) {
    // SAFETY: ROCr signal handles are the addresses of their amd_signal_t; ours completed with
    // the kernel's raw timestamps.
    unsafe {
        let ours = signal.handle as *const amd_signal_t;
        (
            std::ptr::addr_of!((*ours).start_ts).read_volatile(),
            std::ptr::addr_of!((*ours).end_ts).read_volatile(),
        )
    }
}

/// A wrapped dispatch waiting for completion.
pub struct Pending {
    /// The record, complete but for timestamps, group and values, and its names.
    pub named: Named,
    /// The GPU.
    pub agent: hsa_agent_t,
    /// The application's completion signal (0 for none, and once completed).
    pub app_signal: hsa_signal_t,
    /// Which queue submitted it (for flushing at queue destruction).
    pub queue: usize,
    /// The kernel's runs: one, or one per group with kernel replay.
    passes: Passes,
    /// Kernel replay's gates and snapshot.
    replay: Option<Box<Replay>>,
    /// Kernel replay: the signal the last gate's barrier completes.
    link: Option<Arc<ChainLink>>,
    /// The pass being waited for.
    current: usize,
    /// The raw start and end timestamps of pass 0's kernel, for the application's signal.
    first_ts: (u64, u64),
    /// Records of the passes that completed.
    finished: Vec<Named>,
}

impl Pending {
    /// Whether somebody waits for this dispatch to move on: the application for its signal, or
    /// kernel replay for the worker to open its next gate.
    fn awaited_by_others(&self) -> bool {
        self.app_signal.handle != 0 || self.replay.is_some()
    }

    /// The signal whose completion moves this dispatch on.
    fn awaited(&self) -> hsa_signal_t {
        if let Some(replay) = &self.replay {
            if !replay.saved {
                return replay.awaited_before_save();
            }
            if self.current >= self.passes.len() {
                return self.link.as_ref().map_or(replay.ready, |l| l.signal);
            }
        }
        let pass = &self.passes[self.current.min(self.passes.len() - 1)];
        match &pass.counted {
            Some(c) if pass.kernel_done => c.done.signal,
            _ => pass.kernel_signal,
        }
    }

    /// A pending dispatch run once.
    #[inline]
    pub fn new(
        named: Named,
        agent: hsa_agent_t,
        kernel_signal: hsa_signal_t,
        app_signal: hsa_signal_t,
        counted: Option<CountedPart>,
        queue: usize,
    ) -> Pending {
        let passes = Passes::One(PassRun::new(kernel_signal, counted));
        Pending::with_passes(named, agent, app_signal, queue, passes, None)
    }

    /// A pending dispatch run once per pass of `passes`; with kernel replay gated by the
    /// replay, whose link is the signal of the barrier after the last pass.
    pub fn replayed(
        named: Named,
        agent: hsa_agent_t,
        app_signal: hsa_signal_t,
        queue: usize,
        passes: Vec<PassRun>,
        replay: Option<(Replay, Arc<ChainLink>)>,
    ) -> Pending {
        let passes = Passes::Several(passes);
        Pending::with_passes(named, agent, app_signal, queue, passes, replay)
    }

    #[inline]
    fn with_passes(
        named: Named,
        agent: hsa_agent_t,
        app_signal: hsa_signal_t,
        queue: usize,
        passes: Passes,
        replay: Option<(Replay, Arc<ChainLink>)>,
    ) -> Pending {
        let (replay, link) = replay.map(|(r, l)| (Box::new(r), l)).unzip();
        Pending {
            named,
            agent,
            app_signal,
            queue,
            passes,
            replay,
            link,
            current: 0,
            first_ts: (0, 0),
            finished: Vec::new(),
        }
    }
}

impl Drop for Pending {
    /// A replayed dispatch given up before its last gate opened (the worker stopped at unload,
    /// or failed): its gates are opened so that the application's queue never waits forever.
    fn drop(&mut self) {
        let Some(replay) = &mut self.replay else {
            return;
        };
        if replay.opened >= replay.gates.len() {
            return;
        }
        super::warn(&format!(
            "dispatch {} ({}) was given up during kernel replay; its remaining passes run without their memory restored, so the memory it leaves may be wrong",
            self.named.record.dispatch, self.named.kernel
        ));
        replay.open_all();
    }
}

#[derive(Default)]
struct Shared {
    incoming: Vec<Pending>,
    /// Records of dispatches left untouched, written as they are.
    notes: Vec<Named>,
    outstanding: FastMap<usize, usize>,
    /// Dispatches nobody waits for handed over since the worker last took them.
    lazy: usize,
    /// The worker sleeps on `wake_up` (nothing in flight).
    idle: bool,
    /// Threads waiting on `progress` (draining or stopping).
    watchers: usize,
    flush_tickets: u64,
    flushed: u64,
    stop: bool,
    stopped: bool,
}

/// The worker thread and its mailbox.
pub struct Completion {
    hsa: Arc<Hsa>,
    /// Set to 1 when dispatches arrive, so that a worker waiting on signals wakes up.
    wake: Option<hsa_signal_t>,
    signals: Arc<SignalPool>,
    shared: Mutex<Shared>,
    wake_up: Condvar,
    progress: Condvar,
    /// The raw record files: one, or one per event group with kernel replay.
    outputs: Vec<PathBuf>,
    /// Where the application's roctx events come from, when it has any.
    roctx: Option<Arc<Roctx>>,
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Completion {
    /// Starts the worker; records go to `<output directory>/<pid>.rtlraw`, those of event
    /// group `g` to the `g`-th directory when there are several, with the roctx events `roctx`
    /// gives between them (in the first).
    pub fn start(
        hsa: Arc<Hsa>,
        signals: Arc<SignalPool>,
        output_directories: &[PathBuf],
        roctx: Option<Arc<Roctx>>,
    ) -> Arc<Completion> {
        let outputs = output_directories
            .iter()
            .map(|d| {
                d.join(format!(
                    "{}.{}",
                    std::process::id(),
                    super::records::EXTENSION
                ))
            })
            .collect();
        let wake = hsa.signal_create(0);
        let completion = Arc::new(Completion {
            hsa,
            wake,
            signals,
            shared: Mutex::new(Shared::default()),
            wake_up: Condvar::new(),
            progress: Condvar::new(),
            outputs,
            roctx,
        });
        let worker = Arc::clone(&completion);
        let spawned = std::thread::Builder::new()
            .name("rtl-pmc-completion".into())
            .spawn(move || {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
                let mut shared = lock(&worker.shared);
                shared.stopped = true;
                worker.progress.notify_all();
            });
        if spawned.is_err() {
            lock(&completion.shared).stopped = true;
        }
        completion
    }

    /// Whether the worker thread runs (dispatches must not be wrapped otherwise: nobody would
    /// complete the application's signals).
    pub fn is_running(&self) -> bool {
        !lock(&self.shared).stopped
    }

    /// The (first) raw record file's path.
    pub fn output(&self) -> &std::path::Path {
        self.outputs.first().map_or(std::path::Path::new(""), |p| p)
    }

    /// Hands records of dispatches that run untouched to the worker, to be written as they are.
    pub fn note(&self, records: Vec<Named>) {
        if records.is_empty() {
            return;
        }
        let mut shared = lock(&self.shared);
        shared.notes.extend(records);
        drop(self.nudge(shared));
    }

    /// Hands wrapped dispatches to the worker, leaving `pending` empty (its room kept for the
    /// caller's next ones).
    pub fn submit(&self, pending: &mut Vec<Pending>) {
        if pending.is_empty() {
            return;
        }
        let mut shared = lock(&self.shared);
        let mut awaited = false;
        for p in pending.iter() {
            *shared.outstanding.entry(p.queue).or_insert(0) += 1;
            awaited |= p.awaited_by_others();
        }
        shared.lazy += pending.len();
        shared.incoming.append(pending);
        if awaited || shared.lazy >= LAZY_LIMIT {
            drop(self.nudge(shared));
        }
    }

    /// Waits (up to `timeout`) until every dispatch of `queue` (or of all queues) completed,
    /// then until the record file is flushed.
    pub fn drain(&self, queue: Option<usize>, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        // Dispatches nobody waits for are collected now, not at the next poll.
        let mut shared = self.nudge(lock(&self.shared));
        loop {
            let busy = match queue {
                Some(q) => shared.outstanding.get(&q).copied().unwrap_or(0) > 0,
                None => shared.outstanding.values().any(|&n| n > 0),
            };
            if !busy || shared.stopped || Instant::now() >= deadline {
                break;
            }
            shared = self.await_progress(shared, deadline);
        }
        shared.flush_tickets += 1;
        let ticket = shared.flush_tickets;
        shared = self.nudge(shared);
        while shared.flushed < ticket && !shared.stopped && Instant::now() < deadline {
            shared = self.await_progress(shared, deadline);
        }
    }

    /// Sleeps until the worker reports progress or `deadline`; gives the lock back.
    fn await_progress<'a>(
        &'a self,
        mut shared: std::sync::MutexGuard<'a, Shared>,
        deadline: Instant,
    ) -> std::sync::MutexGuard<'a, Shared> {
        let left = deadline.saturating_duration_since(Instant::now());
        shared.watchers += 1;
        shared = self
            .progress
            .wait_timeout(shared, left)
            .map(|r| r.0)
            .unwrap_or_else(|p| p.into_inner().0);
        shared.watchers -= 1;
        shared
    }

    /// Drains everything (up to `timeout`) and stops the worker; whether it stopped.
    pub fn stop(&self, timeout: Duration) -> bool {
        self.drain(None, timeout);
        let mut shared = lock(&self.shared);
        shared.stop = true;
        shared = self.nudge(shared);
        let deadline = Instant::now() + Duration::from_millis(500);
        while !shared.stopped && Instant::now() < deadline {
            shared = self.await_progress(shared, deadline);
        }
        shared.stopped
    }

    fn run(&self) {
        let mut pending: Vec<Pending> = Vec::new();
        let mut files: Vec<Option<RecordFile>> = self.outputs.iter().map(|_| None).collect();
        let mut notes: Vec<Named> = Vec::new();
        let mut file_failed = false;
        let mut last_flush = Instant::now();
        let mut arrived: Vec<Pending> = Vec::new();
        // Per round: the queues of the dispatches completed, and the records to write.
        let mut finished: Vec<usize> = Vec::new();
        let mut records: Vec<Named> = Vec::new();
        let mut left = Leftovers::default();
        loop {
            if let Some(wake) = self.wake {
                self.hsa.signal_store(wake, 0);
            }
            let (stop, ticket) = {
                let mut shared = lock(&self.shared);
                let nothing_new = shared.incoming.is_empty()
                    && shared.notes.is_empty()
                    && !shared.stop
                    && shared.flush_tickets == shared.flushed;
                if nothing_new && pending.is_empty() {
                    let unflushed = files.iter().flatten().any(RecordFile::has_pending);
                    let due = match unflushed {
                        true => QUIET_FLUSH,
                        false => FLUSH_INTERVAL,
                    };
                    let wait = due
                        .saturating_sub(last_flush.elapsed())
                        .max(Duration::from_micros(100));
                    shared.idle = true;
                    shared = self
                        .wake_up
                        .wait_timeout(shared, wait)
                        .map(|r| r.0)
                        .unwrap_or_else(|p| p.into_inner().0);
                    shared.idle = false;
                } else if nothing_new {
                    drop(shared);
                    self.wait(
                        &pending,
                        FLUSH_INTERVAL.saturating_sub(last_flush.elapsed()),
                    );
                    shared = lock(&self.shared);
                }
                shared.lazy = 0;
                // Swapped, not copied, under the lock: the dispatch path waits for it.
                std::mem::swap(&mut shared.incoming, &mut arrived);
                notes.append(&mut shared.notes);
                (shared.stop, shared.flush_tickets)
            };
            // Pending dispatches are a few hundred bytes each: when none is left from the last
            // round, the arrivals become the pending list instead of being copied into it.
            match pending.is_empty() {
                true => std::mem::swap(&mut pending, &mut arrived),
                false => pending.append(&mut arrived),
            }
            finished.clear();
            for named in records.drain(..) {
                let counters = named.record.counters;
                if !counters.is_empty() && left.values.len() < SPARE_VALUES {
                    left.values.push(counters);
                }
            }
            records.append(&mut notes);
            self.complete_awaited(&mut pending);
            pending.retain_mut(|p| match self.advance(p, &mut records, &mut left) {
                true => {
                    finished.push(p.queue);
                    false
                }
                false => true,
            });
            left.give_back(&self.signals);
            let mut regions = self.roctx.as_ref().map(|r| r.drain()).unwrap_or_default();
            if stop {
                if let Some(roctx) = &self.roctx {
                    regions.push(roctx.marker(RegionKind::Exit, 0));
                }
            }
            if !regions.is_empty() && files[0].is_none() && !file_failed {
                match self.open(0) {
                    Ok(f) => files[0] = Some(f),
                    Err(e) => {
                        file_failed = true;
                        super::warn(&format!("cannot write records: {e}"));
                    }
                }
            }
            if let Some(f) = files[0].as_mut() {
                for r in &regions {
                    f.push_region(r);
                }
            }
            for r in &records {
                let at = r.record.group.unwrap_or(0) as usize;
                let at = if at < self.outputs.len() { at } else { 0 };
                if files[at].is_none() && !file_failed {
                    match self.open(at) {
                        Ok(f) => files[at] = Some(f),
                        Err(e) => {
                            file_failed = true;
                            super::warn(&format!("cannot write records: {e}"));
                        }
                    }
                }
                if let Some(f) = files[at].as_mut() {
                    f.push_named(&r.record, r.arch, r.kernel);
                }
            }
            // Nothing left in flight and no write for a while: write now, so any pause in the
            // application's stream puts every record on disk; a busy stream flushes on the
            // interval or a full buffer.
            let unflushed = files.iter().flatten().any(RecordFile::has_pending);
            let quiet = unflushed && pending.is_empty() && last_flush.elapsed() >= QUIET_FLUSH;
            let full = files
                .iter()
                .flatten()
                .any(|f| f.pending_bytes() >= FLUSH_BYTES);
            let flush_due = quiet || full || last_flush.elapsed() >= FLUSH_INTERVAL;
            let flushed_now = {
                let shared = lock(&self.shared);
                shared.flushed < ticket
            };
            if flush_due || flushed_now || stop {
                for slot in files.iter_mut() {
                    if let Some(Err(e)) = slot.as_mut().map(RecordFile::flush) {
                        // One warning; later records are dropped rather than failing again.
                        super::warn(&format!("cannot write records: {e}"));
                        *slot = None;
                        file_failed = true;
                    }
                }
                last_flush = Instant::now();
            }
            {
                let mut shared = lock(&self.shared);
                for &q in &finished {
                    if let Some(n) = shared.outstanding.get_mut(&q) {
                        *n = n.saturating_sub(1);
                    }
                }
                if flush_due || flushed_now || stop {
                    shared.flushed = shared.flushed.max(ticket);
                }
                if shared.watchers > 0 {
                    self.progress.notify_all();
                }
            }
            // `stop` comes after a drain that waited for every dispatch it could; whatever is
            // still pending then never completes and is abandoned.
            if stop {
                for mut p in pending {
                    for pass in p.passes.iter_mut() {
                        if let Some(counted) = pass.counted.take() {
                            counted.gpu.abandon(counted.set);
                        }
                    }
                }
                return;
            }
        }
    }

    /// Waits until a pending dispatch somebody waits for can move on, new ones arrive, or
    /// `timeout` passed; at most [`POLL`] while others are pending.
    fn wait(&self, pending: &[Pending], timeout: Duration) {
        let mut waits: Vec<(hsa_signal_t, hsa_signal_condition_t, i64)> = pending
            .iter()
            .filter(|p| p.awaited_by_others())
            .map(|p| (p.awaited(), HSA_SIGNAL_CONDITION_LT, 1))
            .collect();
        let timeout = match waits.len() < pending.len() {
            true => timeout.min(POLL),
            false => timeout,
        };
        let timeout = timeout.max(Duration::from_millis(1)).as_nanos() as u64;
        if let Some(wake) = self.wake {
            waits.push((wake, HSA_SIGNAL_CONDITION_NE, 0));
            if self.hsa.wait_any(&waits, timeout) {
                return;
            }
        }
        self.hsa
            .signal_wait_below(pending[0].awaited(), 1, POLL.as_nanos() as u64);
    }

    /// Wakes the worker, whether it sleeps with nothing in flight or waits on signals; gives the
    /// lock back.
    fn nudge<'a>(
        &'a self,
        shared: std::sync::MutexGuard<'a, Shared>,
    ) -> std::sync::MutexGuard<'a, Shared> {
        if shared.idle {
            self.wake_up.notify_one();
        }
        if let Some(wake) = self.wake {
            self.hsa.signal_store(wake, 1);
        }
        shared
    }

    fn open(&self, at: usize) -> Result<RecordFile, super::records::RecordError> {
        let output = &self.outputs[at];
        if let Some(dir) = output.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        RecordFile::create(output)
    }

    /// Completes, ahead of everything else, the application signals of dispatches run once whose
    /// kernels completed: the application waits for those, not for the records of the
    /// dispatches before them.
    fn complete_awaited(&self, pending: &mut [Pending]) {
        for p in pending {
            let signal = p.passes[0].kernel_signal;
            if p.app_signal.handle == 0 || p.replay.is_some() || self.hsa.signal_load(signal) >= 1 {
                continue;
            }
            self.complete_app(std::mem::take(&mut p.app_signal), raw_timestamps(signal));
        }
    }

    /// Completes the application's signal with raw timestamps `(start, end)`.
    fn complete_app(&self, app_signal: hsa_signal_t, (start, end): (u64, u64)) {
        if app_signal.handle == 0 {
            return;
        }
        // SAFETY: ROCr signal handles are the addresses of their amd_signal_t; the
        // application's is still waiting for exactly this dispatch.
        unsafe {
            let theirs = app_signal.handle as *mut amd_signal_t;
            std::ptr::addr_of_mut!((*theirs).start_ts).write_volatile(start);
            std::ptr::addr_of_mut!((*theirs).end_ts).write_volatile(end);
        }
        self.hsa.signal_subtract(app_signal, 1);
    }

    /// Moves a dispatch on as far as its signals allow; whether it is complete. Its records (one
    /// per pass) go to `out` as they complete (with kernel replay, together at the end), the
    /// signals and packet sets it no longer needs to `left`, whose value vectors its counter
    /// values fill.
    fn advance(&self, p: &mut Pending, out: &mut Vec<Named>, left: &mut Leftovers) -> bool {
        if let Some(replay) = &mut p.replay {
            if !replay.saved {
                if self.hsa.signal_load(replay.ready) >= 1 {
                    replay.check_stall(
                        p.named.record.dispatch,
                        p.named.kernel,
                        "the packets before it on its queue and the previous counted dispatch",
                    );
                    return false;
                }
                if !replay.open_window() {
                    let what = "the DMA copies running to complete";
                    replay.check_stall(p.named.record.dispatch, p.named.kernel, what);
                    return false;
                }
                replay.save();
                replay.open_next(&self.hsa);
            }
        }
        let last = p.passes.len() - 1;
        while p.current <= last {
            let i = p.current;
            let pass = &mut p.passes[i];
            if !pass.kernel_done {
                if self.hsa.signal_load(pass.kernel_signal) >= 1 {
                    if let Some(replay) = &mut p.replay {
                        replay.check_stall(p.named.record.dispatch, p.named.kernel, "its kernel");
                    }
                    return false;
                }
                if let Some((start, end)) = self.hsa.dispatch_time(p.agent, pass.kernel_signal) {
                    pass.start = start;
                    pass.end = end;
                }
                if i == 0 {
                    p.first_ts = raw_timestamps(pass.kernel_signal);
                    if p.replay.is_none() {
                        self.complete_app(std::mem::take(&mut p.app_signal), p.first_ts);
                    }
                }
                left.signals.push(pass.kernel_signal);
                pass.kernel_done = true;
            }
            if let Some(counted) = &pass.counted {
                if self.hsa.signal_load(counted.done.signal) >= 1 {
                    if let Some(replay) = &mut p.replay {
                        let what = "its counters to be read";
                        replay.check_stall(p.named.record.dispatch, p.named.kernel, what);
                    }
                    return false;
                }
            }
            // The last pass of a dispatch run once takes the record; others copy it (kernel
            // replay still names the dispatch after its last pass).
            let base = match i == last && p.replay.is_none() {
                true => std::mem::take(&mut p.named.record),
                false => p.named.record.clone(),
            };
            let mut record = Record {
                start: pass.start,
                end: pass.end,
                ..base
            };
            if let Some(counted) = pass.counted.take() {
                record.group = Some(counted.set.group as u32);
                record.counters = counted
                    .gpu
                    .values(&counted.set, left.values.pop().unwrap_or_default());
                left.set(&counted.gpu, counted.set);
            }
            let named = Named {
                record,
                arch: p.named.arch,
                kernel: p.named.kernel,
            };
            // A dispatch run once is written at once; replayed passes wait for their stats.
            match p.replay {
                Some(_) => p.finished.push(named),
                None => out.push(named),
            }
            p.current += 1;
            if let Some(replay) = &mut p.replay {
                if i == 0 {
                    replay.compare();
                }
                if i < last {
                    replay.restore(true);
                } else {
                    replay.restore(false);
                    replay.release();
                    self.complete_app(p.app_signal, p.first_ts);
                }
                replay.open_next(&self.hsa);
            }
        }
        if let (Some(replay), Some(link)) = (&mut p.replay, &p.link) {
            if self.hsa.signal_load(link.signal) >= 1 {
                return false;
            }
            for problem in replay.problems.drain(..) {
                super::warn(&format!(
                    "kernel replay of dispatch {} ({}): {problem}",
                    p.named.record.dispatch, p.named.kernel
                ));
            }
            self.signals.give(replay.ready);
            for gate in &replay.gates {
                self.signals.give(*gate);
            }
            let stats = ReplayStats {
                passes: p.passes.len() as u32,
                saved: replay.bytes.saved,
                restored: replay.bytes.restored,
                declined: None,
            };
            for named in &mut p.finished {
                named.record.replay = Some(stats.clone());
            }
            // Every signal is back in the pool: nothing is left to open when it is dropped.
            replay.opened = replay.gates.len();
        }
        out.append(&mut p.finished);
        true
    }
}
