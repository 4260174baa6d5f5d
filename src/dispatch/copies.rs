//! DMA copies ordered around kernel replay's windows.
//!
//! A replayed dispatch saves memory before its first pass and writes back the bytes that pass
//! changed before each later one. A copy (`hsa_amd_memory_async_copy`, `..._on_engine`,
//! `..._rect`) that moved bytes inside that window would see them set back, and the application
//! would read stale data once the copy's signal completed. So copies and windows take turns:
//!
//! - a copy starts at once only when its dependency signals are already 0 and no window is
//!   open or waiting to open; otherwise it is handed to the runtime with one more dependency, a
//!   gate of ours that this module's thread opens once the application's dependencies are 0 and
//!   no window is open or waiting;
//! - a window opens only when no copy is running (a copy runs from its start until its
//!   completion signal, ours, completes); while it waits, new copies are held, so it never
//!   waits for more than the copies already running, which need nothing from the window;
//! - every copy's completion signal is ours: when it completes, the thread copies its
//!   timestamps into the application's signal and decrements that by 1, as the engine would.
//!
//! The application's thread never blocks: a held copy is already submitted, behind its gate.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::runtime::Hsa;
use super::threads::Joinable;
use crate::hsa::*;

/// How long the thread waits for signals before it looks again anyway.
const POLL: Duration = Duration::from_millis(50);

/// A copy submitted behind a gate.
struct Held {
    deps: Vec<hsa_signal_t>,
    gate: hsa_signal_t,
    running: Running,
}

/// A copy that may be moving bytes.
struct Running {
    done: hsa_signal_t,
    app: hsa_signal_t,
    /// The gate it waited behind, reused once the copy completed (the runtime may look at it
    /// until it starts the copy).
    gate: Option<hsa_signal_t>,
}

#[derive(Default)]
struct State {
    /// Windows waiting for running copies to finish.
    waiting: usize,
    /// Windows open.
    open: usize,
    held: Vec<Held>,
    running: Vec<Running>,
    /// The process id the thread runs in (none yet, or it was started before a fork).
    thread: Option<u32>,
    /// Signals with value 1 for reuse.
    spare: Vec<hsa_signal_t>,
    /// Set at unload: every held copy is let go.
    stopping: bool,
    stopped: bool,
}

/// The copies in flight and the replay windows, shared by the copy wrappers, the completion
/// worker and this module's thread.
pub struct CopyOrder {
    hsa: Arc<Hsa>,
    state: Mutex<State>,
    /// Set to 1 to wake the thread.
    wake: Mutex<Option<hsa_signal_t>>,
    /// Holds the number of running copies: a window waiting to open waits for it to reach 0.
    busy: Mutex<Option<hsa_signal_t>>,
    stopped: Condvar,
    /// The thread, joined once stopped.
    joinable: Joinable,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CopyOrder {
    /// Nothing in flight, no thread yet.
    pub fn new(hsa: Arc<Hsa>) -> CopyOrder {
        CopyOrder {
            hsa,
            state: Mutex::new(State::default()),
            wake: Mutex::new(None),
            busy: Mutex::new(None),
            stopped: Condvar::new(),
            joinable: Joinable::default(),
        }
    }

    fn signal(&self, state: &mut State) -> Option<hsa_signal_t> {
        state.spare.pop().or_else(|| self.hsa.signal_create(1))
    }

    fn give(&self, state: &mut State, signal: hsa_signal_t) {
        self.hsa.signal_store(signal, 1);
        state.spare.push(signal);
    }

    fn nudge(&self) {
        if let Some(wake) = *lock(&self.wake) {
            self.hsa.signal_store(wake, 1);
        }
    }

    fn publish_busy(&self, state: &State) {
        if let Some(busy) = *lock(&self.busy) {
            self.hsa.signal_store(busy, state.running.len() as i64);
        }
    }

    /// Starts the thread in this process if it does not run; whether it runs.
    fn ensure_thread(self: &Arc<Self>, state: &mut State) -> bool {
        let pid = std::process::id();
        if state.thread == Some(pid) {
            return !state.stopping;
        }
        // Started in a parent process: nothing of that is ours. Never started: the state is
        // this process's already, and a window may be open (it opened before the first copy),
        // so it is kept; forgetting it would let this copy run inside the window.
        if state.thread.is_some() {
            *state = State::default();
        }
        for slot in [&self.wake, &self.busy] {
            let signal = self.hsa.signal_create(0);
            *lock(slot) = signal;
            if signal.is_none() {
                return false;
            }
        }
        let me = Arc::clone(self);
        let spawned = self.joinable.spawn("rtl-pmc-copies", move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| me.run()));
            let mut state = lock(&me.state);
            state.stopped = true;
            me.stopped.notify_all();
        });
        if !spawned {
            return false;
        }
        state.thread = Some(pid);
        true
    }

    /// Submits a copy through `call(dependencies, completion)`, which calls the runtime's
    /// original entry with the copy's other arguments. `deps` and `app` are the application's
    /// dependency and completion signals.
    pub fn submit(
        self: &Arc<Self>,
        deps: &[hsa_signal_t],
        app: hsa_signal_t,
        call: impl FnOnce(&[hsa_signal_t], hsa_signal_t) -> hsa_status_t,
    ) -> hsa_status_t {
        let mut state = lock(&self.state);
        if !self.ensure_thread(&mut state) {
            drop(state);
            super::warn_once(
                "copies",
                "cannot order DMA copies around kernel replay (no thread or signals): copies run unordered, and data a copy moves while a dispatch is replayed may be set back",
            );
            return call(deps, app);
        }
        let Some(done) = self.signal(&mut state) else {
            drop(state);
            return call(deps, app);
        };
        let ready = deps.iter().all(|d| self.hsa.signal_load(*d) == 0);
        if ready && state.waiting == 0 && state.open == 0 {
            state.running.push(Running {
                done,
                app,
                gate: None,
            });
            self.publish_busy(&state);
            drop(state);
            let status = call(deps, done);
            if status != HSA_STATUS_SUCCESS {
                let mut state = lock(&self.state);
                state.running.retain(|r| r.done.handle != done.handle);
                self.publish_busy(&state);
                self.give(&mut state, done);
                return status;
            }
            self.nudge();
            return status;
        }
        let Some(gate) = self.signal(&mut state) else {
            self.give(&mut state, done);
            drop(state);
            return call(deps, app);
        };
        drop(state);
        let mut gated = Vec::with_capacity(deps.len() + 1);
        gated.extend_from_slice(deps);
        gated.push(gate);
        let status = call(&gated, done);
        let mut state = lock(&self.state);
        if status != HSA_STATUS_SUCCESS {
            self.give(&mut state, done);
            self.give(&mut state, gate);
            return status;
        }
        state.held.push(Held {
            deps: deps.to_vec(),
            gate,
            running: Running {
                done,
                app,
                gate: Some(gate),
            },
        });
        drop(state);
        self.nudge();
        status
    }

    /// A window asks to open: from now on new copies are held. Whether it may open (no copy is
    /// running); if not, it asks again once [`CopyOrder::busy`] is 0.
    pub fn request_window(&self, asked_before: bool) -> bool {
        let mut state = lock(&self.state);
        if !asked_before {
            state.waiting += 1;
        }
        if !state.running.is_empty() {
            return false;
        }
        state.waiting -= 1;
        state.open += 1;
        true
    }

    /// A window that asked to open and gave up (its dispatch was abandoned) or that opened closes.
    pub fn close_window(&self, opened: bool) {
        {
            let mut state = lock(&self.state);
            let count = match opened {
                true => &mut state.open,
                false => &mut state.waiting,
            };
            *count = count.saturating_sub(1);
        }
        self.nudge();
    }

    /// The signal a waiting window waits on to fall below 1: the running copies.
    pub fn busy(&self) -> Option<hsa_signal_t> {
        *lock(&self.busy)
    }

    /// Lets every held copy go and stops the thread once every copy completed, for up to
    /// `timeout`; whether it stopped (or never ran).
    pub fn stop(&self, timeout: Duration) -> bool {
        let mut state = lock(&self.state);
        if state.thread != Some(std::process::id()) {
            return true;
        }
        state.stopping = true;
        drop(state);
        self.nudge();
        let deadline = std::time::Instant::now() + timeout;
        let mut state = lock(&self.state);
        while !state.stopped {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .stopped
                .wait_timeout(state, left)
                .map(|r| r.0)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        drop(state);
        self.joinable.join();
        true
    }

    fn run(&self) {
        let Some(wake) = *lock(&self.wake) else {
            return;
        };
        let mut waits: Vec<(hsa_signal_t, hsa_signal_condition_t, i64)> = Vec::new();
        loop {
            self.hsa.signal_store(wake, 0);
            waits.clear();
            let mut completed: Vec<Running> = Vec::new();
            {
                let mut state = lock(&self.state);
                // Copies that finished.
                let mut i = 0;
                while i < state.running.len() {
                    if self.hsa.signal_load(state.running[i].done) < 1 {
                        completed.push(state.running.swap_remove(i));
                    } else {
                        i += 1;
                    }
                }
                // Held copies whose dependencies are 0, while no window is open or waiting.
                let free = state.stopping || (state.waiting == 0 && state.open == 0);
                let mut i = 0;
                while i < state.held.len() {
                    let blocking = state.held[i]
                        .deps
                        .iter()
                        .find(|d| self.hsa.signal_load(**d) != 0)
                        .copied();
                    match blocking {
                        None if free => {
                            let held = state.held.swap_remove(i);
                            state.running.push(held.running);
                            self.hsa.signal_store(held.gate, 0);
                        }
                        Some(dep) if free => {
                            waits.push((dep, HSA_SIGNAL_CONDITION_EQ, 0));
                            i += 1;
                        }
                        _ => i += 1,
                    }
                }
                self.publish_busy(&state);
                for r in &completed {
                    finish(&self.hsa, r);
                }
                for r in &completed {
                    self.give(&mut state, r.done);
                    if let Some(gate) = r.gate {
                        self.give(&mut state, gate);
                    }
                }
                waits.extend(
                    state
                        .running
                        .iter()
                        .map(|r| (r.done, HSA_SIGNAL_CONDITION_LT, 1)),
                );
                if state.stopping && state.held.is_empty() && state.running.is_empty() {
                    return;
                }
            }
            waits.push((wake, HSA_SIGNAL_CONDITION_NE, 0));
            if !self.hsa.wait_any(&waits, POLL.as_nanos() as u64) {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

/// Completes the application's signal of a finished copy with the copy's timestamps.
fn finish(hsa: &Hsa, copy: &Running) {
    if copy.app.handle == 0 {
        return;
    }
    // SAFETY: ROCr signal handles are the addresses of their amd_signal_t; ours completed and
    // nobody writes it any more, the application's waits for exactly this copy.
    unsafe {
        let ours = copy.done.handle as *const amd_signal_t;
        let theirs = copy.app.handle as *mut amd_signal_t;
        let start = std::ptr::addr_of!((*ours).start_ts).read_volatile();
        let end = std::ptr::addr_of!((*ours).end_ts).read_volatile();
        std::ptr::addr_of_mut!((*theirs).start_ts).write_volatile(start);
        std::ptr::addr_of_mut!((*theirs).end_ts).write_volatile(end);
    }
    hsa.signal_subtract(copy.app, 1);
}
