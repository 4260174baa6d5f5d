//! Completion of wrapped dispatches on a worker thread, and the raw record file.
//!
//! For each wrapped dispatch the worker waits for our kernel signal, reads the kernel's
//! timestamps, copies them into the application's `amd_signal_t` and completes the
//! application's signal exactly once (decrement by 1, as the command processor would have).
//! With counters it then waits for the stop packet's signal, reads the values and returns the
//! packet set to its pool. Records are appended to `<output directory>/<pid>.rtlraw` and
//! flushed whenever nothing is left in flight, and at least every [`FLUSH_INTERVAL`].
//!
//! The worker never waits on one dispatch alone: an application may make an earlier dispatch
//! depend (through a barrier packet) on the completion signal of a later one, which only the
//! worker completes. It waits for any pending signal (and a wake-up signal that new dispatches
//! set) with `hsa_amd_signal_wait_any`, or, without it, briefly on the oldest signal, and then
//! checks all of them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::counters::{GpuCounters, PacketSet};
use super::records::{Record, RecordFile, RegionKind};
use super::roctx::Roctx;
use super::runtime::Hsa;
use crate::hsa::*;

/// Records reach the file at least this often.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// Records are written once this many bytes are buffered, so that the buffer stays small
/// when counters give thousands of values per dispatch.
const FLUSH_BYTES: usize = 1 << 20;
/// How long one wait on the oldest pending signal lasts before every signal is checked.
const POLL: Duration = Duration::from_millis(1);

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
    pub fn take(&self) -> Option<hsa_signal_t> {
        let reused = self.free.lock().ok().and_then(|mut f| f.pop());
        match reused {
            Some(signal) => {
                self.hsa.signal_store(signal, 1);
                Some(signal)
            }
            None => self.hsa.signal_create(1),
        }
    }

    /// Returns a signal nobody waits on any more.
    pub fn give(&self, signal: hsa_signal_t) {
        match self.free.lock() {
            Ok(mut free) => free.push(signal),
            Err(_) => self.hsa.signal_destroy(signal),
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

/// The counter part of a pending dispatch.
pub struct CountedPart {
    /// The GPU's counters (pool owner).
    pub gpu: Arc<GpuCounters>,
    /// The packet set programmed around the kernel.
    pub set: PacketSet,
    /// This dispatch's stop signal.
    pub done: Arc<ChainLink>,
    /// The previous counted dispatch's stop signal, held until this one completes.
    pub previous: Option<Arc<ChainLink>>,
}

/// A wrapped dispatch waiting for completion.
pub struct Pending {
    /// The record, complete but for timestamps, group and values.
    pub record: Record,
    /// The GPU.
    pub agent: hsa_agent_t,
    /// Our kernel completion signal.
    pub kernel_signal: hsa_signal_t,
    /// The application's completion signal (0 for none).
    pub app_signal: hsa_signal_t,
    /// Counters, when collected.
    pub counted: Option<CountedPart>,
    /// Which queue submitted it (for flushing at queue destruction).
    pub queue: usize,
    kernel_done: bool,
}

impl Pending {
    /// The signal whose completion moves this dispatch on.
    fn awaited(&self) -> hsa_signal_t {
        match &self.counted {
            Some(c) if self.kernel_done => c.done.signal,
            _ => self.kernel_signal,
        }
    }

    /// A pending dispatch.
    pub fn new(
        record: Record,
        agent: hsa_agent_t,
        kernel_signal: hsa_signal_t,
        app_signal: hsa_signal_t,
        counted: Option<CountedPart>,
        queue: usize,
    ) -> Pending {
        Pending {
            record,
            agent,
            kernel_signal,
            app_signal,
            counted,
            queue,
            kernel_done: false,
        }
    }
}

#[derive(Default)]
struct Shared {
    incoming: Vec<Pending>,
    outstanding: HashMap<usize, usize>,
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
    output: PathBuf,
    /// Where the application's roctx events come from, when it has any.
    roctx: Option<Arc<Roctx>>,
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Completion {
    /// Starts the worker; records go to `<output directory>/<pid>.rtlraw`, with the roctx
    /// events `roctx` gives between them.
    pub fn start(
        hsa: Arc<Hsa>,
        signals: Arc<SignalPool>,
        output_directory: PathBuf,
        roctx: Option<Arc<Roctx>>,
    ) -> Arc<Completion> {
        let output = output_directory.join(format!(
            "{}.{}",
            std::process::id(),
            super::records::EXTENSION
        ));
        let wake = hsa.signal_create(0);
        let completion = Arc::new(Completion {
            hsa,
            wake,
            signals,
            shared: Mutex::new(Shared::default()),
            wake_up: Condvar::new(),
            progress: Condvar::new(),
            output,
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

    /// The raw record file's path.
    pub fn output(&self) -> &std::path::Path {
        &self.output
    }

    /// Hands wrapped dispatches to the worker. If it is gone, completes them here.
    pub fn submit(&self, pending: Vec<Pending>) {
        if pending.is_empty() {
            return;
        }
        let mut shared = lock(&self.shared);
        for p in &pending {
            *shared.outstanding.entry(p.queue).or_insert(0) += 1;
        }
        shared.incoming.extend(pending);
        drop(shared);
        self.nudge();
    }

    /// Waits (up to `timeout`) until every dispatch of `queue` (or of all queues) completed,
    /// then until the record file is flushed.
    pub fn drain(&self, queue: Option<usize>, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut shared = lock(&self.shared);
        loop {
            let busy = match queue {
                Some(q) => shared.outstanding.get(&q).copied().unwrap_or(0) > 0,
                None => shared.outstanding.values().any(|&n| n > 0),
            };
            let now = Instant::now();
            if !busy || shared.stopped || now >= deadline {
                break;
            }
            shared = self
                .progress
                .wait_timeout(shared, deadline - now)
                .map(|r| r.0)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        shared.flush_tickets += 1;
        let ticket = shared.flush_tickets;
        self.nudge();
        while shared.flushed < ticket && !shared.stopped && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            shared = self
                .progress
                .wait_timeout(shared, left)
                .map(|r| r.0)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Drains everything (up to `timeout`) and stops the worker; whether it stopped.
    pub fn stop(&self, timeout: Duration) -> bool {
        self.drain(None, timeout);
        let mut shared = lock(&self.shared);
        shared.stop = true;
        self.nudge();
        let deadline = Instant::now() + Duration::from_millis(500);
        while !shared.stopped && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            shared = self
                .progress
                .wait_timeout(shared, left)
                .map(|r| r.0)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        shared.stopped
    }

    fn run(&self) {
        let mut pending: Vec<Pending> = Vec::new();
        let mut file: Option<RecordFile> = None;
        let mut file_failed = false;
        let mut last_flush = Instant::now();
        loop {
            if let Some(wake) = self.wake {
                self.hsa.signal_store(wake, 0);
            }
            let (stop, ticket) = {
                let mut shared = lock(&self.shared);
                if pending.is_empty()
                    && shared.incoming.is_empty()
                    && !shared.stop
                    && shared.flush_tickets == shared.flushed
                {
                    let wait = FLUSH_INTERVAL
                        .saturating_sub(last_flush.elapsed())
                        .max(Duration::from_millis(1));
                    shared = self
                        .wake_up
                        .wait_timeout(shared, wait)
                        .map(|r| r.0)
                        .unwrap_or_else(|p| p.into_inner().0);
                }
                pending.append(&mut shared.incoming);
                (shared.stop, shared.flush_tickets)
            };
            if !pending.is_empty() && !stop {
                self.wait(
                    &pending,
                    FLUSH_INTERVAL.saturating_sub(last_flush.elapsed()),
                );
            }
            let mut finished: Vec<usize> = Vec::new();
            let mut records: Vec<Record> = Vec::new();
            pending.retain_mut(|p| match self.advance(p) {
                Some(record) => {
                    finished.push(p.queue);
                    records.push(record);
                    false
                }
                None => true,
            });
            let mut regions = self.roctx.as_ref().map(|r| r.drain()).unwrap_or_default();
            if stop {
                if let Some(roctx) = &self.roctx {
                    regions.push(roctx.marker(RegionKind::Exit, 0));
                }
            }
            if (!records.is_empty() || !regions.is_empty()) && file.is_none() && !file_failed {
                match self.open() {
                    Ok(f) => file = Some(f),
                    Err(e) => {
                        file_failed = true;
                        super::warn(&format!("cannot write records: {e}"));
                    }
                }
            }
            if let Some(f) = file.as_mut() {
                for r in &regions {
                    f.push_region(r);
                }
                for r in &records {
                    f.push(r);
                }
            }
            // Nothing left in flight: write now, so any pause in the application's stream puts
            // every record on disk; a busy stream flushes on the interval or a full buffer.
            let idle = !records.is_empty() && pending.is_empty();
            let full = file
                .as_ref()
                .is_some_and(|f| f.pending_bytes() >= FLUSH_BYTES);
            let flush_due = idle || full || last_flush.elapsed() >= FLUSH_INTERVAL;
            let flushed_now = {
                let shared = lock(&self.shared);
                shared.flushed < ticket
            };
            if flush_due || flushed_now || stop {
                if let Some(Err(e)) = file.as_mut().map(RecordFile::flush) {
                    // One warning; later records are dropped rather than failing again.
                    super::warn(&format!("cannot write records: {e}"));
                    file = None;
                    file_failed = true;
                }
                last_flush = Instant::now();
            }
            {
                let mut shared = lock(&self.shared);
                for q in finished {
                    if let Some(n) = shared.outstanding.get_mut(&q) {
                        *n = n.saturating_sub(1);
                    }
                }
                if flush_due || flushed_now || stop {
                    shared.flushed = shared.flushed.max(ticket);
                }
                self.progress.notify_all();
            }
            // `stop` comes after a drain that waited for every dispatch it could; whatever is
            // still pending then never completes and is abandoned.
            if stop {
                for p in pending {
                    if let Some(counted) = p.counted {
                        counted.gpu.abandon(counted.set);
                    }
                }
                return;
            }
        }
    }

    /// Waits until a pending dispatch can move on, new ones arrive, or `timeout` passed.
    fn wait(&self, pending: &[Pending], timeout: Duration) {
        let timeout = timeout.max(Duration::from_millis(1)).as_nanos() as u64;
        if let Some(wake) = self.wake {
            let mut waits: Vec<(hsa_signal_t, hsa_signal_condition_t, i64)> = pending
                .iter()
                .map(|p| (p.awaited(), HSA_SIGNAL_CONDITION_LT, 1))
                .collect();
            waits.push((wake, HSA_SIGNAL_CONDITION_NE, 0));
            if self.hsa.wait_any(&waits, timeout) {
                return;
            }
        }
        self.hsa
            .signal_wait_below(pending[0].awaited(), 1, POLL.as_nanos() as u64);
    }

    /// Wakes the worker, whether it waits for dispatches or on signals.
    fn nudge(&self) {
        self.wake_up.notify_one();
        if let Some(wake) = self.wake {
            self.hsa.signal_store(wake, 1);
        }
    }

    fn open(&self) -> Result<RecordFile, super::records::RecordError> {
        if let Some(dir) = self.output.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        RecordFile::create(&self.output)
    }

    /// Moves a dispatch on as far as its signals allow; its record once it is complete.
    fn advance(&self, p: &mut Pending) -> Option<Record> {
        if !p.kernel_done {
            if self.hsa.signal_load(p.kernel_signal) >= 1 {
                return None;
            }
            if let Some((start, end)) = self.hsa.dispatch_time(p.agent, p.kernel_signal) {
                p.record.start = start;
                p.record.end = end;
            }
            if p.app_signal.handle != 0 {
                // SAFETY: ROCr signal handles are the addresses of their amd_signal_t; ours
                // completed with the kernel's raw timestamps, the application's is still
                // waiting for exactly this kernel.
                unsafe {
                    let ours = p.kernel_signal.handle as *const amd_signal_t;
                    let theirs = p.app_signal.handle as *mut amd_signal_t;
                    std::ptr::addr_of_mut!((*theirs).start_ts)
                        .write_volatile(std::ptr::addr_of!((*ours).start_ts).read_volatile());
                    std::ptr::addr_of_mut!((*theirs).end_ts)
                        .write_volatile(std::ptr::addr_of!((*ours).end_ts).read_volatile());
                }
                self.hsa.signal_subtract(p.app_signal, 1);
            }
            self.signals.give(p.kernel_signal);
            p.kernel_done = true;
        }
        if let Some(counted) = &p.counted {
            if self.hsa.signal_load(counted.done.signal) >= 1 {
                return None;
            }
        }
        let mut record = std::mem::take(&mut p.record);
        if let Some(counted) = p.counted.take() {
            record.counters = counted.gpu.values(&counted.set);
            counted.gpu.give_back(counted.set);
        }
        Some(record)
    }
}
