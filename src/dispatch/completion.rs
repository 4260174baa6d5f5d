//! Completion of wrapped dispatches on a worker thread, and the raw record file.
//!
//! For each wrapped dispatch the worker waits for our kernel signal, reads the kernel's
//! timestamps, copies them into the application's `amd_signal_t` and completes the
//! application's signal exactly once (decrement by 1, as the command processor would have).
//! With counters it then waits for the stop packet's signal, reads the values and returns the
//! packet set to its pool. A dispatch's record is written to `<output directory>/<pid>.rtlraw`
//! (a shared mapping of the file, see [`RecordFile`]) before the application's signal is
//! completed: whatever the application saw complete is on record, even if the process ends the
//! next instant by `_exit`, a fatal signal, `exec` or SIGKILL. So a counted dispatch's signal
//! completes once its counters are read, not at the end of its kernel. Each file's header
//! tallies the records handed over, so that a gap is seen and explained.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::counters::{GpuCounters, PacketSet};
use super::records::{Counters, Record, RecordFile, Region, RegionKind, ReplayStats, Tally};
use super::replay::Replay;
use super::roctx::Roctx;
use super::runtime::Hsa;
use super::threads::Joinable;
use crate::fast_map::FastMap;
use crate::hsa::*;

/// roctx events reach the file at least this often.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// How long one wait lasts before every pending signal is checked.
const POLL: Duration = Duration::from_millis(1);
/// Dispatches nobody waits for that may arrive before the worker is woken for them, bounding
/// the signals and packet sets they hold.
const LAZY_LIMIT: usize = 256;

/// Signals a thread takes from the pool at once.
const STASH: usize = 32;

/// What the dispatches completed in one round of the worker leave, returned together at its
/// end (one lock per pool and round, not per dispatch: the dispatch path takes from the same
/// pools).
#[derive(Default)]
struct Leftovers {
    /// Chain links nobody holds any more, kept with their signals for the next dispatches.
    links: Vec<Arc<ChainLink>>,
    /// Signals nobody waits on any more.
    signals: Vec<hsa_signal_t>,
    /// Packet sets whose values were read, by GPU (boxed as their pools keep them).
    #[allow(clippy::vec_box)]
    sets: Vec<(Arc<GpuCounters>, Vec<Box<PacketSet>>)>,
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
    ///
    /// Each GPU makes the spare sets its pools lack then.
    fn give_back(&mut self, signals: &SignalPool) {
        signals.give_all(&mut self.signals);
        signals.give_links(&mut self.links);
        for (gpu, sets) in &mut self.sets {
            gpu.give_back_all(sets);
        }
    }

    /// Returns the signals, chain links and packet sets left so far to their pools, before an
    /// application's signal is completed: the dispatches it submits once it sees that signal
    /// find them ready instead of making new ones while the worker still holds these.
    fn return_early(&mut self, signals: &SignalPool) {
        signals.give_all(&mut self.signals);
        signals.give_links(&mut self.links);
        for (gpu, sets) in &mut self.sets {
            if !sets.is_empty() {
                gpu.return_all(sets);
            }
        }
    }

    /// Releases a counted dispatch's hold on a chain link: one nobody else holds is kept for
    /// reuse (a link another thread lets go of at the same time is freed instead, its signal
    /// returned to the pool).
    fn link(&mut self, link: Option<Arc<ChainLink>>) {
        if let Some(mut link) = link {
            if Arc::get_mut(&mut link).is_some() {
                self.links.push(link);
            }
        }
    }
}

/// A thread's signals and chain links taken from the pool, with the fork generation they were
/// taken in.
#[derive(Default)]
pub struct SignalStash {
    generation: u64,
    signals: Vec<hsa_signal_t>,
    links: Vec<Arc<ChainLink>>,
}

impl SignalStash {
    /// Empties the stash of what it holds from before a fork, in a forked child.
    fn renew(&mut self) {
        let generation = super::interposer::fork_generation();
        if self.generation != generation {
            *self = SignalStash {
                generation,
                ..SignalStash::default()
            };
        }
    }
}

thread_local! {
    /// The calling thread's stash, for callers that keep none of their own.
    static STASHED: std::cell::Cell<SignalStash> = const {
        std::cell::Cell::new(SignalStash { generation: 0, signals: Vec::new(), links: Vec::new() })
    };
}

/// Signals with value 1, reused, and chain links holding such signals.
pub struct SignalPool {
    hsa: Arc<Hsa>,
    free: Mutex<Vec<hsa_signal_t>>,
    /// Links the completion worker found nobody holds: a counted dispatch takes one with its
    /// signal, without allocating.
    links: Mutex<Vec<Arc<ChainLink>>>,
}

impl SignalPool {
    /// An empty pool.
    pub fn new(hsa: Arc<Hsa>) -> SignalPool {
        SignalPool {
            hsa,
            free: Mutex::new(Vec::new()),
            links: Mutex::new(Vec::new()),
        }
    }

    /// A chain link with a signal of value 1 from the caller's stash, refilled [`STASH`] links
    /// at a time from those the worker gave back, or else made; `None` if the runtime cannot
    /// create a signal.
    #[inline]
    pub fn take_link(&'static self, stash: &mut SignalStash) -> Option<Arc<ChainLink>> {
        if stash.generation == super::interposer::fork_generation() {
            if let Some(link) = stash.links.pop() {
                return Some(link);
            }
        }
        self.refill_links(stash);
        if let Some(link) = stash.links.pop() {
            return Some(link);
        }
        let signal = self.take_from(stash)?;
        Some(Arc::new(ChainLink::new(signal, self)))
    }

    /// Refills an empty stash of links (emptied of the parent's in a forked child).
    #[cold]
    fn refill_links(&self, stash: &mut SignalStash) {
        stash.renew();
        if let Ok(mut links) = self.links.lock() {
            let from = links.len().saturating_sub(STASH);
            stash.links.extend(links.drain(from..));
        }
    }

    /// Returns links nobody holds any more, their signals set back to 1, leaving `links` empty.
    pub fn give_links(&self, links: &mut Vec<Arc<ChainLink>>) {
        if links.is_empty() {
            return;
        }
        for link in links.iter() {
            self.hsa.signal_store(link.signal, 1);
        }
        match self.links.lock() {
            Ok(mut free) => free.append(links),
            Err(_) => links.clear(),
        }
    }

    /// A signal with value 1, or `None` if the runtime cannot create one.
    ///
    /// Each thread takes from a stash of its own, refilled [`STASH`] signals at a time, so that
    /// the dispatch path shares the pool's lock with the completion worker once per refill, not
    /// per dispatch. A thread's stash outlives it; signals are never destroyed before the
    /// runtime is, so nothing is lost but their reuse.
    pub fn take(&self) -> Option<hsa_signal_t> {
        let mut stash = STASHED.take();
        let signal = self.take_from(&mut stash);
        STASHED.set(stash);
        signal
    }

    /// [`SignalPool::take`] with the caller's own stash.
    #[inline]
    pub fn take_from(&self, stash: &mut SignalStash) -> Option<hsa_signal_t> {
        if let Some(signal) = stash.signals.pop() {
            if stash.generation == super::interposer::fork_generation() {
                return Some(signal);
            }
        }
        self.refill(stash);
        stash.signals.pop().or_else(|| self.hsa.signal_create(1))
    }

    /// Refills an empty stash (emptied of the parent's signals in a forked child).
    #[cold]
    fn refill(&self, stash: &mut SignalStash) {
        stash.renew();
        stash.signals.clear();
        if let Ok(mut free) = self.free.lock() {
            let from = free.len().saturating_sub(STASH);
            stash.signals.extend(free.drain(from..));
        }
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
        if signals.is_empty() {
            return;
        }
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
    pool: &'static SignalPool,
}

impl ChainLink {
    /// A link for `signal`, returned to `pool` when dropped.
    pub fn new(signal: hsa_signal_t, pool: &'static SignalPool) -> ChainLink {
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

/// What every record of a queue's dispatches repeats about the queue.
#[derive(Debug, Clone, Copy)]
pub struct QueueFacts {
    /// The GPU.
    pub agent: hsa_agent_t,
    /// The GPU's KFD node id.
    pub node_id: u32,
    /// The GPU's index among the process's GPUs.
    pub gpu_index: u32,
    /// The queue's id.
    pub queue_id: u64,
    /// Its place among the queues created on its GPU, from 1.
    pub order: u32,
    /// The GPU's architecture.
    pub arch: &'static str,
    /// Which queue it is (for flushing at queue destruction).
    pub key: usize,
}

/// A dispatch run once, as the dispatch path hands it over: what only its submission knows.
/// The worker makes its record (kernel name, resources, process id) when it takes it, so that
/// the application's thread copies a fraction of a record and looks nothing up.
pub struct Submitted {
    /// The queue.
    pub queue: QueueFacts,
    /// The packet's kernel object, grid and workgroup sizes, LDS and scratch bytes.
    pub kernel_object: u64,
    pub grid: [u32; 3],
    pub workgroup: [u16; 3],
    pub lds: u32,
    pub scratch: u32,
    /// The packet's index in the application's queue.
    pub queue_index: u64,
    /// Process-wide dispatch id, in submission order.
    pub dispatch: u64,
    /// The submitting thread.
    pub tid: u32,
    /// The application's completion signal (0 for none).
    pub app_signal: hsa_signal_t,
    /// Our kernel completion signal.
    pub kernel_signal: hsa_signal_t,
    /// Counters, when collected.
    pub counted: Option<CountedPart>,
    /// The roctx ranges open on the submitting thread (ids, outermost first).
    pub ranges: Vec<u64>,
    /// The name of the innermost range, when it renames the kernel.
    pub renamed: Option<&'static str>,
}

/// A dispatch handed to the worker: run once (the common case, made into a [`Pending`] by the
/// worker), or pending already (kernel replay, forwarded, declined replay).
pub enum Incoming {
    Submitted(Submitted),
    Pending(Box<Pending>),
}

impl Incoming {
    fn queue(&self) -> usize {
        match self {
            Incoming::Submitted(s) => s.queue.key,
            Incoming::Pending(p) => p.queue,
        }
    }

    fn awaited_by_others(&self) -> bool {
        match self {
            Incoming::Submitted(s) => s.app_signal.handle != 0,
            Incoming::Pending(p) => p.awaited_by_others(),
        }
    }

    /// The worker's pending dispatch, its record made by `record`.
    fn into_pending(self, record: &dyn Fn(&mut Submitted) -> Named) -> Pending {
        match self {
            Incoming::Submitted(mut s) => {
                let named = record(&mut s);
                let counted = s.counted.take();
                Pending::new(
                    named,
                    s.queue.agent,
                    s.kernel_signal,
                    s.app_signal,
                    counted,
                    s.queue.key,
                )
            }
            Incoming::Pending(p) => *p,
        }
    }
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
    /// The count of the dispatches not counted that this one waited for, held likewise.
    pub uncounted: Option<Arc<ChainLink>>,
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
    /// A dispatch that is not counted, only forwarded: the count of those still running that
    /// it decrements once its kernel ended (see [`super::rewrite::order_uncounted`]).
    uncounted: Option<Arc<ChainLink>>,
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

    /// A dispatch that is not counted nor recorded, whose kernel completes `kernel_signal`: the
    /// worker completes the application's signal after it and then counts it down in
    /// `uncounted`.
    pub fn forwarded(
        agent: hsa_agent_t,
        kernel_signal: hsa_signal_t,
        app_signal: hsa_signal_t,
        queue: usize,
        uncounted: Arc<ChainLink>,
    ) -> Pending {
        let named = Named {
            record: Record::default(),
            arch: "",
            kernel: "",
        };
        let passes = Passes::One(PassRun::new(kernel_signal, None));
        let mut pending = Pending::with_passes(named, agent, app_signal, queue, passes, None);
        pending.uncounted = Some(uncounted);
        pending
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
            uncounted: None,
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
    incoming: Vec<Incoming>,
    /// Per queue, the dispatches the worker took and has not completed (those still in
    /// `incoming` are counted there).
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
    /// `shared.stopped`, read by the dispatch path without the lock.
    stopped: AtomicBool,
    wake_up: Condvar,
    progress: Condvar,
    /// The raw record files: one, or one per event group with kernel replay.
    files: Mutex<Files>,
    /// Their tallies (`None` for a file that could not be created).
    tallies: Vec<Option<&'static Tally>>,
    /// The first file's path.
    output: PathBuf,
    /// Where the application's roctx events come from, when it has any.
    roctx: Option<Arc<Roctx>>,
    /// The worker thread, joined once stopped.
    thread: Joinable,
}

/// Which of `files` record files a record of event group `group` goes to: the group's own
/// with kernel replay (one per group), else the first.
fn file_of(group: Option<u32>, files: usize) -> usize {
    match group.map(|g| g as usize) {
        Some(g) if g < files => g,
        _ => 0,
    }
}

/// The raw record files of the process, written by the worker (and by the dispatch path for
/// dispatches left untouched).
struct Files {
    paths: Vec<PathBuf>,
    open: Vec<Option<RecordFile>>,
}

impl Files {
    /// Creates the file of each path: `<dir>/<pid>.rtlraw`, or `<dir>/<pid>-N.rtlraw` when
    /// that exists (a process that `exec`ed keeps its pid); one warning if one cannot be.
    fn create(directories: &[PathBuf]) -> Files {
        let pid = std::process::id();
        let extension = super::records::EXTENSION;
        let mut paths = Vec::new();
        let mut open = Vec::new();
        let mut failed = false;
        for dir in directories {
            let _ = std::fs::create_dir_all(dir);
            let mut path = dir.join(format!("{pid}.{extension}"));
            let mut n = 2;
            while path.exists() {
                path = dir.join(format!("{pid}-{n}.{extension}"));
                n += 1;
            }
            match RecordFile::create(&path) {
                Ok(file) => open.push(Some(file)),
                Err(e) => {
                    if !failed {
                        super::warn(&format!("cannot write records: {e}"));
                    }
                    failed = true;
                    open.push(None);
                }
            }
            paths.push(path);
        }
        Files { paths, open }
    }

    /// Writes `named`'s record through the file's mapping, with `counters` as its values when
    /// given: in the page cache when this returns.
    fn write(&mut self, named: &Named, counters: Option<Counters<'_>>) {
        let at = file_of(named.record.group, self.open.len());
        if let Some(file) = self.open[at].as_mut() {
            file.push_named(&named.record, named.arch, named.kernel, counters);
            self.flush(at);
        }
    }

    /// Writes roctx events into the first file.
    fn write_regions(&mut self, regions: &[Region]) {
        if let Some(file) = self.open[0].as_mut() {
            regions.iter().for_each(|r| file.push_region(r));
            self.flush(0);
        }
    }

    fn flush(&mut self, at: usize) {
        if let Some(Err(e)) = self.open[at].as_mut().map(RecordFile::flush) {
            // One warning per file; its later records are dropped rather than failing again.
            super::warn(&format!("cannot write records: {e}"));
            self.open[at] = None;
        }
    }

    /// Closes every file (cut to its records), removing those that hold nothing.
    fn close(&mut self) {
        for (slot, path) in self.open.iter_mut().zip(&self.paths) {
            let Some(file) = slot.take() else { continue };
            let nothing = file.is_empty();
            drop(file);
            if nothing {
                let _ = std::fs::remove_file(path);
            }
        }
    }
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
        let files = Files::create(output_directories);
        let tallies = files
            .open
            .iter()
            .map(|f| f.as_ref().map(RecordFile::tally))
            .collect();
        let output = files.paths.first().cloned().unwrap_or_default();
        let wake = hsa.signal_create(0);
        let completion = Arc::new(Completion {
            hsa,
            wake,
            signals,
            shared: Mutex::new(Shared::default()),
            stopped: AtomicBool::new(false),
            wake_up: Condvar::new(),
            progress: Condvar::new(),
            files: Mutex::new(files),
            tallies,
            output,
            roctx,
            thread: Joinable::default(),
        });
        let worker = Arc::clone(&completion);
        let spawned = completion.thread.spawn("rtl-pmc-completion", move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
            let mut shared = lock(&worker.shared);
            shared.stopped = true;
            worker.stopped.store(true, Ordering::Release);
            worker.progress.notify_all();
        });
        if !spawned {
            lock(&completion.shared).stopped = true;
            completion.stopped.store(true, Ordering::Release);
        }
        completion
    }

    /// Whether the worker thread runs (dispatches must not be wrapped otherwise: nobody would
    /// complete the application's signals).
    pub fn is_running(&self) -> bool {
        !self.stopped.load(Ordering::Acquire)
    }

    /// The (first) raw record file's path.
    pub fn output(&self) -> &std::path::Path {
        &self.output
    }

    /// The tallies of the raw record files, for the fatal-signal handlers.
    pub fn tallies(&self) -> Vec<&'static Tally> {
        self.tallies.iter().flatten().copied().collect()
    }

    /// Counts a record to come in the file of event group `group`.
    fn expect(&self, group: Option<u32>) {
        let at = file_of(group, self.tallies.len());
        if let Some(tally) = self.tallies.get(at).copied().flatten() {
            tally.expect(1);
        }
    }

    /// Hands wrapped dispatches to the worker, leaving `pending` empty (its room kept for the
    /// caller's next ones).
    pub fn submit(&self, pending: &mut Vec<Incoming>) {
        if pending.is_empty() {
            return;
        }
        let mut shared = lock(&self.shared);
        let mut awaited = false;
        for p in pending.iter() {
            awaited |= p.awaited_by_others();
            match p {
                Incoming::Submitted(s) => {
                    self.expect(s.counted.as_ref().map(|c| c.set.group as u32));
                }
                // A dispatch left out of counting is only forwarded: it leaves no record.
                Incoming::Pending(p) if p.uncounted.is_none() => {
                    for pass in p.passes.iter() {
                        self.expect(pass.counted.as_ref().map(|c| c.set.group as u32));
                    }
                }
                Incoming::Pending(_) => {}
            }
        }
        shared.lazy += pending.len();
        shared.incoming.append(pending);
        if awaited || shared.lazy >= LAZY_LIMIT {
            drop(self.nudge(shared));
        }
    }

    /// Hands one dispatch run once to the worker, as [`Completion::submit`] does.
    pub fn submit_one(&self, submitted: Submitted) {
        self.expect(submitted.counted.as_ref().map(|c| c.set.group as u32));
        let awaited = submitted.app_signal.handle != 0;
        let mut shared = lock(&self.shared);
        shared.lazy += 1;
        shared.incoming.push(Incoming::Submitted(submitted));
        if awaited || shared.lazy >= LAZY_LIMIT {
            drop(self.nudge(shared));
        }
    }

    /// Waits (up to `timeout`) until every dispatch of `queue` (or of all queues) completed,
    /// then until the worker finished a round after that.
    pub fn drain(&self, queue: Option<usize>, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        // Dispatches nobody waits for are collected now, not at the next poll.
        let mut shared = self.nudge(lock(&self.shared));
        loop {
            let busy = match queue {
                Some(q) => {
                    shared.outstanding.get(&q).copied().unwrap_or(0) > 0
                        || shared.incoming.iter().any(|i| i.queue() == q)
                }
                None => shared.outstanding.values().any(|&n| n > 0) || !shared.incoming.is_empty(),
            };
            if !busy || shared.stopped || Instant::now() >= deadline {
                break;
            }
            shared = self.await_progress(shared, deadline);
        }
        drop(self.next_round(shared, deadline));
    }

    /// Waits until `deadline` for the worker to finish a round that starts after this call
    /// (it takes whatever was handed over before); gives the lock back.
    fn next_round<'a>(
        &'a self,
        mut shared: std::sync::MutexGuard<'a, Shared>,
        deadline: Instant,
    ) -> std::sync::MutexGuard<'a, Shared> {
        shared.flush_tickets += 1;
        let ticket = shared.flush_tickets;
        shared = self.nudge(shared);
        while shared.flushed < ticket && !shared.stopped && Instant::now() < deadline {
            shared = self.await_progress(shared, deadline);
        }
        shared
    }

    /// Waits (up to `timeout`) until the worker has taken every dispatch handed over so far
    /// and made their records: what they name may be unloaded next.
    pub fn take_handed_over(&self, timeout: Duration) {
        let shared = lock(&self.shared);
        if !shared.incoming.is_empty() {
            drop(self.next_round(shared, Instant::now() + timeout));
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

    /// Drains everything (up to `timeout`) and stops the worker; whether it stopped (and its
    /// thread has exited).
    pub fn stop(&self, timeout: Duration) -> bool {
        self.drain(None, timeout);
        let mut shared = lock(&self.shared);
        shared.stop = true;
        shared = self.nudge(shared);
        let deadline = Instant::now() + Duration::from_millis(500);
        while !shared.stopped && Instant::now() < deadline {
            shared = self.await_progress(shared, deadline);
        }
        let stopped = shared.stopped;
        drop(shared);
        if stopped {
            self.thread.join();
        }
        stopped
    }

    fn run(&self) {
        let mut pending: Vec<Pending> = Vec::new();
        let mut arrived: Vec<Incoming> = Vec::new();
        // Per round: the queues of the dispatches completed.
        let mut finished: Vec<usize> = Vec::new();
        let mut left = Leftovers::default();
        loop {
            if let Some(wake) = self.wake {
                self.hsa.signal_store(wake, 0);
            }
            let (stop, ticket) = {
                let mut shared = lock(&self.shared);
                let nothing_new = shared.incoming.is_empty()
                    && !shared.stop
                    && shared.flush_tickets == shared.flushed;
                if nothing_new && pending.is_empty() {
                    shared.idle = true;
                    shared = self
                        .wake_up
                        .wait_timeout(shared, FLUSH_INTERVAL)
                        .map(|r| r.0)
                        .unwrap_or_else(|p| p.into_inner().0);
                    shared.idle = false;
                } else if nothing_new {
                    drop(shared);
                    self.wait(&pending, FLUSH_INTERVAL);
                    shared = lock(&self.shared);
                }
                shared.lazy = 0;
                // Swapped, not copied, under the lock: the dispatch path waits for it.
                std::mem::swap(&mut shared.incoming, &mut arrived);
                for i in &arrived {
                    *shared.outstanding.entry(i.queue()).or_insert(0) += 1;
                }
                (shared.stop, shared.flush_tickets)
            };
            // Records are made here, off the application's threads.
            let record = super::interposer::record_of;
            pending.extend(arrived.drain(..).map(|i| i.into_pending(&record)));
            finished.clear();
            {
                let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
                pending.retain_mut(|p| match self.advance(p, &mut files, &mut left) {
                    true => {
                        finished.push(p.queue);
                        false
                    }
                    false => true,
                });
                let mut regions = self.roctx.as_ref().map(|r| r.drain()).unwrap_or_default();
                if stop {
                    if let Some(roctx) = &self.roctx {
                        regions.push(roctx.marker(RegionKind::Exit, 0));
                    }
                }
                if !regions.is_empty() {
                    files.write_regions(&regions);
                }
            }
            left.give_back(&self.signals);
            {
                let mut shared = lock(&self.shared);
                for &q in &finished {
                    if let Some(n) = shared.outstanding.get_mut(&q) {
                        *n = n.saturating_sub(1);
                    }
                }
                shared.flushed = shared.flushed.max(ticket);
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
                self.files.lock().unwrap_or_else(|p| p.into_inner()).close();
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
    /// per pass) are written to `files` as they complete (with kernel replay, together after the
    /// last pass), and always before the application's signal is completed; the signals and
    /// packet sets it no longer needs go to `left`.
    fn advance(&self, p: &mut Pending, files: &mut Files, left: &mut Leftovers) -> bool {
        if let Some(count) = &p.uncounted {
            let signal = p.passes[0].kernel_signal;
            if self.hsa.signal_load(signal) >= 1 {
                return false;
            }
            self.complete_app(std::mem::take(&mut p.app_signal), raw_timestamps(signal));
            self.hsa.signal_subtract(count.signal, 1);
            left.signals.push(signal);
            return true;
        }
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
            let counted = pass.counted.take();
            let mut named = Named {
                record: Record {
                    start: pass.start,
                    end: pass.end,
                    group: counted.as_ref().map(|c| c.set.group as u32),
                    ..base
                },
                arch: p.named.arch,
                kernel: p.named.kernel,
            };
            // A dispatch run once is written at once, its values straight from where they were
            // read; replayed passes keep theirs and wait for their stats.
            match (&p.replay, &counted) {
                (Some(_), Some(c)) => {
                    named.record.counters = c.gpu.read(&c.set, |values| values.to_vecs());
                }
                (Some(_), None) => {}
                (None, Some(c)) => c
                    .gpu
                    .read(&c.set, |values| files.write(&named, Some(values))),
                (None, None) => files.write(&named, None),
            }
            if let Some(counted) = counted {
                left.set(&counted.gpu, counted.set);
                left.link(Some(counted.done));
                left.link(counted.previous);
                left.link(counted.uncounted);
            }
            // Then the application sees a dispatch run once complete.
            match p.replay {
                Some(_) => p.finished.push(named),
                None => {
                    if p.app_signal.handle != 0 {
                        left.return_early(&self.signals);
                    }
                    self.complete_app(std::mem::take(&mut p.app_signal), p.first_ts);
                }
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
                    let stats = ReplayStats {
                        passes: p.passes.len() as u32,
                        saved: replay.bytes.saved,
                        restored: replay.bytes.restored,
                        declined: None,
                    };
                    for named in p.finished.drain(..) {
                        let named = Named {
                            record: Record {
                                replay: Some(stats.clone()),
                                ..named.record
                            },
                            ..named
                        };
                        files.write(&named, None);
                    }
                    self.complete_app(std::mem::take(&mut p.app_signal), p.first_ts);
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
            // Every signal is back in the pool: nothing is left to open when it is dropped.
            replay.opened = replay.gates.len();
        }
        true
    }
}
