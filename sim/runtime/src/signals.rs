//! Signals: `amd_signal_t` memory (the handle is its address), every value operation, waits that
//! block in the kernel (futex), signal groups, and the asynchronous handler thread.

use crate::clock::{futex_wait, futex_wake_all, now_ns, poll};
use crate::ffi::guard;
use crate::hsa::*;
use crate::queues::QueueObj;
use crate::settings::{injected_failure, settings};
use std::ffi::c_void;
use std::mem::offset_of;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Mutex, Once};

/// A signal: the 64 bytes of `amd_signal_t` (as atomics) followed by the runtime's wait state.
#[repr(C, align(64))]
pub struct SignalObj {
    kind: AtomicI64,
    value: AtomicI64,
    event_mailbox_ptr: AtomicU64,
    event_id: AtomicU32,
    reserved1: u32,
    start_ts: AtomicU64,
    end_ts: AtomicU64,
    queue_ptr: AtomicPtr<amd_queue_t>,
    reserved3: [u32; 2],
    /// Bumped on every value change; waiters sleep on it.
    seq: AtomicU32,
    /// Threads sleeping on `seq`.
    waiters: AtomicU32,
    /// Waits on several signals (`hsa_amd_signal_wait_any`/`_all`) that include this one: they
    /// sleep on the global change counter, which this signal's changes then bump.
    group_waiters: AtomicU32,
    /// For doorbells: the queue whose packets a store announces.
    doorbell_queue: AtomicPtr<QueueObj>,
    /// Value changes under way. A change is visible before its notification has run, and the
    /// thread that sees it may destroy the signal at once: destruction waits until none is
    /// under way, as ROCr keeps a signal alive while its own code still uses it.
    busy: AtomicU32,
}

const _: () = {
    assert!(offset_of!(SignalObj, kind) == offset_of!(amd_signal_t, kind));
    assert!(offset_of!(SignalObj, value) == offset_of!(amd_signal_t, value));
    assert!(
        offset_of!(SignalObj, event_mailbox_ptr) == offset_of!(amd_signal_t, event_mailbox_ptr)
    );
    assert!(offset_of!(SignalObj, event_id) == offset_of!(amd_signal_t, event_id));
    assert!(offset_of!(SignalObj, start_ts) == offset_of!(amd_signal_t, start_ts));
    assert!(offset_of!(SignalObj, end_ts) == offset_of!(amd_signal_t, end_ts));
    assert!(offset_of!(SignalObj, queue_ptr) == offset_of!(amd_signal_t, queue_ptr));
    assert!(offset_of!(SignalObj, seq) == 64);
};

/// Process-wide change notification for waits on several signals and the async thread.
struct Global {
    seq: AtomicU32,
    watchers: AtomicU32,
}

static GLOBAL: Global = Global {
    seq: AtomicU32::new(0),
    watchers: AtomicU32::new(0),
};
static SIGNALS_CREATED: AtomicU64 = AtomicU64::new(0);

fn notify_global() {
    GLOBAL.seq.fetch_add(1, SeqCst);
    futex_wake_all(&GLOBAL.seq);
    crate::device::wake_dependency_waiters();
}

/// Adds (`true`) or removes (`false`) a watcher that must be told about every signal change
/// (device threads blocked on barrier dependencies).
pub fn watch_all_signals(on: bool) {
    if on {
        GLOBAL.watchers.fetch_add(1, SeqCst);
    } else {
        GLOBAL.watchers.fetch_sub(1, SeqCst);
    }
}

/// A wait on several signals: woken by changes of those signals (as ROCr waits on their events),
/// not by every signal of the process, until the guard drops.
pub struct GroupWatch<'a> {
    signals: Vec<&'a SignalObj>,
}
impl<'a> GroupWatch<'a> {
    /// Starts watching `signals`.
    pub fn start(signals: Vec<&'a SignalObj>) -> GroupWatch<'a> {
        for s in &signals {
            s.group_waiters.fetch_add(1, SeqCst);
        }
        GroupWatch { signals }
    }
    /// The change counter to pass to [`GroupWatch::wait`].
    pub fn seq(&self) -> u32 {
        GLOBAL.seq.load(SeqCst)
    }
    /// Sleeps until a watched signal changes after `seq` was read, or `timeout_ns` (other
    /// changes may wake it too).
    pub fn wait(&self, seq: u32, timeout_ns: Option<u64>) {
        futex_wait(&GLOBAL.seq, seq, timeout_ns);
    }
}
impl Drop for GroupWatch<'_> {
    fn drop(&mut self) {
        for s in &self.signals {
            s.group_waiters.fetch_sub(1, SeqCst);
        }
    }
}

/// Whether `value` satisfies `condition` against `compare`.
pub fn satisfied(condition: hsa_signal_condition_t, value: i64, compare: i64) -> bool {
    match condition {
        HSA_SIGNAL_CONDITION_EQ => value == compare,
        HSA_SIGNAL_CONDITION_NE => value != compare,
        HSA_SIGNAL_CONDITION_LT => value < compare,
        HSA_SIGNAL_CONDITION_GTE => value >= compare,
        _ => false,
    }
}

impl SignalObj {
    /// Allocates a signal of `kind` with `value`; its address is the handle.
    pub fn create(kind: amd_signal_kind64_t, value: i64) -> *mut SignalObj {
        Box::into_raw(Box::new(SignalObj {
            kind: AtomicI64::new(kind),
            value: AtomicI64::new(value),
            event_mailbox_ptr: AtomicU64::new(0),
            event_id: AtomicU32::new(0),
            reserved1: 0,
            start_ts: AtomicU64::new(0),
            end_ts: AtomicU64::new(0),
            queue_ptr: AtomicPtr::new(std::ptr::null_mut()),
            reserved3: [0; 2],
            seq: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            group_waiters: AtomicU32::new(0),
            doorbell_queue: AtomicPtr::new(std::ptr::null_mut()),
            busy: AtomicU32::new(0),
        }))
    }

    /// Frees a signal made by [`SignalObj::create`].
    ///
    /// # Safety
    /// `signal` came from `create` and is not used afterwards.
    pub unsafe fn destroy(signal: *mut SignalObj) {
        // SAFETY: per the contract, `signal` is live until freed below.
        let busy = unsafe { &(*signal).busy };
        while busy.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
        // SAFETY: per the contract, `signal` is a live Box allocation no change still uses.
        drop(unsafe { Box::from_raw(signal) });
    }

    /// Runs the value change `change` and its notification as one, for [`SignalObj::destroy`].
    fn changing<T>(&self, change: impl FnOnce() -> T) -> T {
        self.busy.fetch_add(1, SeqCst);
        let result = change();
        #[cfg(test)]
        tests::pause_after_change();
        self.busy.fetch_sub(1, SeqCst);
        result
    }

    /// The handle of this signal.
    pub fn handle(&self) -> hsa_signal_t {
        hsa_signal_t {
            handle: self as *const SignalObj as u64,
        }
    }

    /// Makes this signal the doorbell of `queue` (`amd_queue_t` at the queue's address).
    pub fn set_doorbell_queue(&self, queue: *mut QueueObj) {
        self.doorbell_queue.store(queue, SeqCst);
        self.queue_ptr.store(queue as *mut amd_queue_t, SeqCst);
    }

    /// The current value.
    pub fn load(&self) -> i64 {
        self.value.load(SeqCst)
    }

    fn changed(&self) {
        self.seq.fetch_add(1, SeqCst);
        if self.waiters.load(SeqCst) != 0 {
            futex_wake_all(&self.seq);
        }
        if GLOBAL.watchers.load(SeqCst) != 0 || self.group_waiters.load(SeqCst) != 0 {
            notify_global();
        }
    }

    /// Stores `value`; for doorbells, announces the queue's new packets.
    pub fn store(&self, value: i64) {
        self.changing(|| {
            self.value.store(value, SeqCst);
            let queue = self.doorbell_queue.load(SeqCst);
            if !queue.is_null() {
                // SAFETY: a doorbell's queue lives until the queue (and with it this signal) is
                // destroyed.
                unsafe { crate::queues::ring_doorbell(&*queue) };
                return;
            }
            self.changed();
        })
    }

    /// Stores `value` without waking waiters.
    pub fn silent_store(&self, value: i64) {
        self.value.store(value, SeqCst);
    }

    /// Applies `op` atomically; returns the previous value.
    pub fn update(&self, op: impl Fn(i64) -> i64) -> i64 {
        self.changing(|| {
            let old = self
                .value
                .fetch_update(SeqCst, SeqCst, |v| Some(op(v)))
                .unwrap_or_else(|v| v);
            self.changed();
            old
        })
    }

    /// Compare-and-swap; returns the observed value.
    pub fn cas(&self, expected: i64, value: i64) -> i64 {
        self.changing(|| {
            let observed = match self.value.compare_exchange(expected, value, SeqCst, SeqCst) {
                Ok(v) | Err(v) => v,
            };
            if observed == expected {
                self.changed();
            }
            observed
        })
    }

    /// Writes dispatch timestamps (agent ticks = ns).
    pub fn set_timestamps(&self, start: u64, end: u64) {
        self.start_ts.store(start, SeqCst);
        self.end_ts.store(end, SeqCst);
    }

    /// The dispatch timestamps last written.
    pub fn timestamps(&self) -> (u64, u64) {
        (self.start_ts.load(SeqCst), self.end_ts.load(SeqCst))
    }

    /// Polls, then blocks until the condition holds or `timeout_ns` passes; returns the last
    /// value seen.
    pub fn wait(&self, condition: hsa_signal_condition_t, compare: i64, timeout_ns: u64) -> i64 {
        let deadline = (timeout_ns != u64::MAX).then(|| now_ns().saturating_add(timeout_ns));
        if poll(deadline, || satisfied(condition, self.load(), compare)) {
            return self.load();
        }
        loop {
            self.waiters.fetch_add(1, SeqCst);
            let seq = self.seq.load(SeqCst);
            let value = self.value.load(SeqCst);
            let remaining = deadline.map(|d| d.saturating_sub(now_ns()));
            if satisfied(condition, value, compare) || remaining == Some(0) {
                self.waiters.fetch_sub(1, SeqCst);
                return value;
            }
            futex_wait(&self.seq, seq, remaining);
            self.waiters.fetch_sub(1, SeqCst);
        }
    }
}

/// The signal behind a handle (`None` for the null handle).
///
/// # Safety
/// A non-zero handle must be a live signal of this runtime.
pub unsafe fn signal<'a>(handle: hsa_signal_t) -> Option<&'a SignalObj> {
    // SAFETY: per the contract.
    (handle.handle != 0).then(|| unsafe { &*(handle.handle as *const SignalObj) })
}

/// Decrements a completion signal by one after writing timestamps if `profiling`.
///
/// # Safety
/// A non-zero handle must be a live signal.
pub unsafe fn complete(handle: hsa_signal_t, start: u64, end: u64, profiling: bool) {
    // SAFETY: per the contract.
    if let Some(s) = unsafe { signal(handle) } {
        if profiling {
            s.set_timestamps(start, end);
        }
        s.update(|v| v - 1);
    }
}

fn create(initial: i64, out: *mut hsa_signal_t) -> hsa_status_t {
    if out.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if injected_failure(&SIGNALS_CREATED, settings().fail_signal_create) {
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    let s = SignalObj::create(AMD_SIGNAL_KIND_USER, initial);
    // SAFETY: `out` is non-null and points to caller storage.
    unsafe { *out = hsa_signal_t { handle: s as u64 } };
    HSA_STATUS_SUCCESS
}

/// `hsa_signal_create`.
pub(crate) unsafe extern "C" fn hsa_signal_create(
    initial_value: hsa_signal_value_t,
    _num_consumers: u32,
    _consumers: *const hsa_agent_t,
    signal: *mut hsa_signal_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || create(initial_value, signal))
}

/// `hsa_amd_signal_create`.
pub(crate) unsafe extern "C" fn hsa_amd_signal_create(
    initial_value: hsa_signal_value_t,
    _num_consumers: u32,
    _consumers: *const hsa_agent_t,
    _attributes: u64,
    signal: *mut hsa_signal_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || create(initial_value, signal))
}

/// `hsa_signal_destroy`.
pub(crate) unsafe extern "C" fn hsa_signal_destroy(signal: hsa_signal_t) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if signal.handle == 0 {
            return HSA_STATUS_ERROR_INVALID_SIGNAL;
        }
        // SAFETY: the application passes a live signal it created and stops using it.
        unsafe { SignalObj::destroy(signal.handle as *mut SignalObj) };
        HSA_STATUS_SUCCESS
    })
}

/// Defines value operations for every memory order (the simulator is sequentially consistent).
macro_rules! signal_ops {
    (load: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(signal: hsa_signal_t) -> hsa_signal_value_t {
            // SAFETY: the application passes a live signal.
            guard(0, || unsafe { self::signal(signal) }.map_or(0, |s| s.load()))
        }
    )*};
    (store $method:ident: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(signal: hsa_signal_t, value: hsa_signal_value_t) {
            // SAFETY: the application passes a live signal.
            guard((), || if let Some(s) = unsafe { self::signal(signal) } { s.$method(value) })
        }
    )*};
    (rmw $op:expr; $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(signal: hsa_signal_t, value: hsa_signal_value_t) {
            // SAFETY: the application passes a live signal.
            guard((), || if let Some(s) = unsafe { self::signal(signal) } {
                let op: fn(i64, i64) -> i64 = $op;
                s.update(|v| op(v, value));
            })
        }
    )*};
    (exchange: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(signal: hsa_signal_t, value: hsa_signal_value_t) -> hsa_signal_value_t {
            // SAFETY: the application passes a live signal.
            guard(0, || unsafe { self::signal(signal) }.map_or(0, |s| s.update(|_| value)))
        }
    )*};
    (cas: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(signal: hsa_signal_t, expected: hsa_signal_value_t, value: hsa_signal_value_t) -> hsa_signal_value_t {
            // SAFETY: the application passes a live signal.
            guard(0, || unsafe { self::signal(signal) }.map_or(0, |s| s.cas(expected, value)))
        }
    )*};
    (wait: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: blocks (futex) until the condition holds or the timeout (ns) passes.")]
        pub(crate) unsafe extern "C" fn $name(
            signal: hsa_signal_t,
            condition: hsa_signal_condition_t,
            compare_value: hsa_signal_value_t,
            timeout_hint: u64,
            _wait_state_hint: hsa_wait_state_t,
        ) -> hsa_signal_value_t {
            // SAFETY: the application passes a live signal.
            guard(0, || unsafe { self::signal(signal) }.map_or(0, |s| s.wait(condition, compare_value, timeout_hint)))
        }
    )*};
}

signal_ops!(load: hsa_signal_load_relaxed, hsa_signal_load_scacquire);
signal_ops!(store store: hsa_signal_store_relaxed, hsa_signal_store_screlease);
signal_ops!(store silent_store: hsa_signal_silent_store_relaxed, hsa_signal_silent_store_screlease);
signal_ops!(rmw |v, x| v.wrapping_add(x); hsa_signal_add_relaxed, hsa_signal_add_scacquire, hsa_signal_add_screlease, hsa_signal_add_scacq_screl);
signal_ops!(rmw |v, x| v.wrapping_sub(x); hsa_signal_subtract_relaxed, hsa_signal_subtract_scacquire, hsa_signal_subtract_screlease, hsa_signal_subtract_scacq_screl);
signal_ops!(rmw |v, x| v & x; hsa_signal_and_relaxed, hsa_signal_and_scacquire, hsa_signal_and_screlease, hsa_signal_and_scacq_screl);
signal_ops!(rmw |v, x| v | x; hsa_signal_or_relaxed, hsa_signal_or_scacquire, hsa_signal_or_screlease, hsa_signal_or_scacq_screl);
signal_ops!(rmw |v, x| v ^ x; hsa_signal_xor_relaxed, hsa_signal_xor_scacquire, hsa_signal_xor_screlease, hsa_signal_xor_scacq_screl);
signal_ops!(exchange: hsa_signal_exchange_relaxed, hsa_signal_exchange_scacquire, hsa_signal_exchange_screlease, hsa_signal_exchange_scacq_screl);
signal_ops!(cas: hsa_signal_cas_relaxed, hsa_signal_cas_scacquire, hsa_signal_cas_screlease, hsa_signal_cas_scacq_screl);
signal_ops!(wait: hsa_signal_wait_relaxed, hsa_signal_wait_scacquire);

/// Waits until any (or all) of `signals` satisfy their conditions; the index of the first
/// satisfied one (any) or 0 (all), `u32::MAX` on timeout.
fn wait_many(
    signals: &[hsa_signal_t],
    conds: &[u32],
    values: &[i64],
    timeout: u64,
    all: bool,
    out: &mut [i64],
) -> u32 {
    // SAFETY: the application passes live signals.
    let watch = GroupWatch::start(
        signals
            .iter()
            .filter_map(|s| unsafe { signal(*s) })
            .collect(),
    );
    let deadline = (timeout != u64::MAX).then(|| now_ns().saturating_add(timeout));
    let any_satisfied = || {
        let mut satisfied_now = signals.iter().zip(conds).zip(values).map(|((s, c), v)| {
            // SAFETY: the application passes live signals.
            satisfied(*c, unsafe { signal(*s) }.map_or(0, |s| s.load()), *v)
        });
        match all {
            true => satisfied_now.all(|ok| ok),
            false => satisfied_now.any(|ok| ok),
        }
    };
    poll(deadline, any_satisfied);
    loop {
        let seq = watch.seq();
        let mut all_ok = true;
        for (i, ((s, c), v)) in signals.iter().zip(conds).zip(values).enumerate() {
            // SAFETY: the application passes live signals.
            let value = unsafe { signal(*s) }.map_or(0, |s| s.load());
            if let Some(slot) = out.get_mut(if all { i } else { 0 }) {
                *slot = value;
            }
            if satisfied(*c, value, *v) {
                if !all {
                    return i as u32;
                }
            } else {
                all_ok = false;
            }
        }
        if all && all_ok {
            return 0;
        }
        let remaining = deadline.map(|d| d.saturating_sub(now_ns()));
        if remaining == Some(0) {
            return u32::MAX;
        }
        watch.wait(seq, remaining.or(Some(100_000_000)));
    }
}

/// The C arrays of `hsa_amd_signal_wait_any`/`_all` as slices; `None` if any is null or empty.
///
/// # Safety
/// Each non-null pointer must point to `count` elements.
unsafe fn wait_arrays<'a>(
    count: u32,
    signals: *const hsa_signal_t,
    conds: *const hsa_signal_condition_t,
    values: *const hsa_signal_value_t,
) -> Option<(&'a [hsa_signal_t], &'a [u32], &'a [i64])> {
    if signals.is_null() || conds.is_null() || values.is_null() || count == 0 {
        return None;
    }
    let n = count as usize;
    // SAFETY: per the contract.
    unsafe {
        Some((
            std::slice::from_raw_parts(signals, n),
            std::slice::from_raw_parts(conds, n),
            std::slice::from_raw_parts(values, n),
        ))
    }
}

/// `hsa_amd_signal_wait_any`: the index of a satisfied signal, `u32::MAX` on timeout.
pub(crate) unsafe extern "C" fn hsa_amd_signal_wait_any(
    signal_count: u32,
    signals: *mut hsa_signal_t,
    conds: *mut hsa_signal_condition_t,
    values: *mut hsa_signal_value_t,
    timeout_hint: u64,
    _wait_hint: hsa_wait_state_t,
    satisfying_value: *mut hsa_signal_value_t,
) -> u32 {
    guard(u32::MAX, || {
        // SAFETY: the caller passes arrays of `signal_count` elements.
        let Some((s, c, v)) = (unsafe { wait_arrays(signal_count, signals, conds, values) }) else {
            return u32::MAX;
        };
        let mut out = [0i64; 1];
        let index = wait_many(s, c, v, timeout_hint, false, &mut out);
        if !satisfying_value.is_null() {
            // SAFETY: non-null out-pointer from the caller.
            unsafe { *satisfying_value = out[0] };
        }
        index
    })
}

/// `hsa_amd_signal_wait_all`: 0 once every condition holds, `u32::MAX` on timeout.
pub(crate) unsafe extern "C" fn hsa_amd_signal_wait_all(
    signal_count: u32,
    signals: *mut hsa_signal_t,
    conds: *mut hsa_signal_condition_t,
    values: *mut hsa_signal_value_t,
    timeout_hint: u64,
    _wait_hint: hsa_wait_state_t,
    satisfying_values: *mut hsa_signal_value_t,
) -> u32 {
    guard(u32::MAX, || {
        // SAFETY: the caller passes arrays of `signal_count` elements.
        let Some((s, c, v)) = (unsafe { wait_arrays(signal_count, signals, conds, values) }) else {
            return u32::MAX;
        };
        let mut out = vec![0i64; s.len()];
        let result = wait_many(s, c, v, timeout_hint, true, &mut out);
        if !satisfying_values.is_null() {
            // SAFETY: the caller's output array has `signal_count` elements.
            unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), satisfying_values, out.len()) };
        }
        result
    })
}

/// `hsa_amd_signal_value_pointer`.
pub(crate) unsafe extern "C" fn hsa_amd_signal_value_pointer(
    signal: hsa_signal_t,
    value_ptr: *mut *mut hsa_signal_value_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        // SAFETY: the application passes a live signal.
        match (unsafe { self::signal(signal) }, value_ptr.is_null()) {
            (Some(s), false) => {
                // SAFETY: non-null out-pointer.
                unsafe { *value_ptr = s.value.as_ptr() };
                HSA_STATUS_SUCCESS
            }
            _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
    })
}

static GROUPS: Mutex<Vec<(u64, Vec<hsa_signal_t>)>> = Mutex::new(Vec::new());
static NEXT_GROUP: AtomicU64 = AtomicU64::new(1);

/// `hsa_signal_group_create`.
pub(crate) unsafe extern "C" fn hsa_signal_group_create(
    num_signals: u32,
    signals: *const hsa_signal_t,
    _num_consumers: u32,
    _consumers: *const hsa_agent_t,
    signal_group: *mut hsa_signal_group_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if signals.is_null() || signal_group.is_null() || num_signals == 0 {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the caller passes `num_signals` signals.
        let list = unsafe { std::slice::from_raw_parts(signals, num_signals as usize) }.to_vec();
        let id = NEXT_GROUP.fetch_add(1, SeqCst);
        GROUPS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, list));
        // SAFETY: non-null out-pointer.
        unsafe { *signal_group = hsa_signal_group_t { handle: id } };
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_signal_group_destroy`.
pub(crate) unsafe extern "C" fn hsa_signal_group_destroy(
    signal_group: hsa_signal_group_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let mut groups = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
        let before = groups.len();
        groups.retain(|(id, _)| *id != signal_group.handle);
        if groups.len() == before {
            HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP
        } else {
            HSA_STATUS_SUCCESS
        }
    })
}

fn group_wait_any(
    signal_group: hsa_signal_group_t,
    conditions: *const hsa_signal_condition_t,
    compare_values: *const hsa_signal_value_t,
    signal: *mut hsa_signal_t,
    value: *mut hsa_signal_value_t,
) -> hsa_status_t {
    let list = {
        let groups = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
        match groups.iter().find(|(id, _)| *id == signal_group.handle) {
            Some((_, list)) => list.clone(),
            None => return HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP,
        }
    };
    if conditions.is_null() || compare_values.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: the caller passes one condition and value per signal of the group.
    let (c, v) = unsafe {
        (
            std::slice::from_raw_parts(conditions, list.len()),
            std::slice::from_raw_parts(compare_values, list.len()),
        )
    };
    let mut out = [0i64; 1];
    let index = wait_many(&list, c, v, u64::MAX, false, &mut out) as usize;
    // SAFETY: out-pointers checked for null.
    unsafe {
        if !signal.is_null() {
            *signal = list[index];
        }
        if !value.is_null() {
            *value = out[0];
        }
    }
    HSA_STATUS_SUCCESS
}

/// `hsa_signal_group_wait_any_relaxed`.
pub(crate) unsafe extern "C" fn hsa_signal_group_wait_any_relaxed(
    signal_group: hsa_signal_group_t,
    conditions: *const hsa_signal_condition_t,
    compare_values: *const hsa_signal_value_t,
    _wait_state_hint: hsa_wait_state_t,
    signal: *mut hsa_signal_t,
    value: *mut hsa_signal_value_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        group_wait_any(signal_group, conditions, compare_values, signal, value)
    })
}

/// `hsa_signal_group_wait_any_scacquire`.
pub(crate) unsafe extern "C" fn hsa_signal_group_wait_any_scacquire(
    signal_group: hsa_signal_group_t,
    conditions: *const hsa_signal_condition_t,
    compare_values: *const hsa_signal_value_t,
    _wait_state_hint: hsa_wait_state_t,
    signal: *mut hsa_signal_t,
    value: *mut hsa_signal_value_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        group_wait_any(signal_group, conditions, compare_values, signal, value)
    })
}

/// A registered asynchronous signal handler.
#[derive(Clone, Copy)]
struct AsyncHandler {
    id: u64,
    signal: hsa_signal_t,
    condition: hsa_signal_condition_t,
    value: i64,
    handler: unsafe extern "C" fn(hsa_signal_value_t, *mut c_void) -> bool,
    arg: usize,
}

#[derive(Default)]
struct AsyncState {
    handlers: Vec<AsyncHandler>,
    functions: Vec<(unsafe extern "C" fn(*mut c_void), usize)>,
    next_id: u64,
}

static ASYNC: Mutex<AsyncState> = Mutex::new(AsyncState {
    handlers: Vec::new(),
    functions: Vec::new(),
    next_id: 0,
});
static ASYNC_THREAD: Once = Once::new();

fn async_state() -> std::sync::MutexGuard<'static, AsyncState> {
    ASYNC.lock().unwrap_or_else(|p| p.into_inner())
}

/// The runtime's asynchronous event thread: runs signal handlers whose conditions hold and
/// queued asynchronous functions. Signal changes reach it while handlers are armed (each armed
/// handler counts as a watcher of every signal); registrations wake it explicitly.
fn async_thread() {
    loop {
        let seq = GLOBAL.seq.load(SeqCst);
        let (handlers, functions) = {
            let mut state = async_state();
            (state.handlers.clone(), std::mem::take(&mut state.functions))
        };
        let mut progressed = !functions.is_empty();
        for (f, arg) in functions {
            // SAFETY: a C callback registered by the application with its argument.
            unsafe { f(arg as *mut c_void) };
        }
        for h in handlers {
            // SAFETY: handlers are registered on live signals.
            let value = unsafe { signal(h.signal) }.map_or(0, |s| s.load());
            if satisfied(h.condition, value, h.value) {
                progressed = true;
                // SAFETY: a C callback registered by the application with its argument.
                let keep = unsafe { (h.handler)(value, h.arg as *mut c_void) };
                if !keep {
                    let mut state = async_state();
                    let before = state.handlers.len();
                    state.handlers.retain(|x| x.id != h.id);
                    if state.handlers.len() < before {
                        watch_all_signals(false);
                    }
                }
            }
        }
        if !progressed {
            futex_wait(&GLOBAL.seq, seq, Some(100_000_000));
        }
    }
}

fn start_async_thread() {
    ASYNC_THREAD.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("rtl-sim-async".into())
            .spawn(async_thread);
        if let Err(e) = spawned {
            eprintln!("rtl-sim: cannot start the asynchronous event thread: {e}");
        }
    });
}

/// `hsa_amd_signal_async_handler`.
pub(crate) unsafe extern "C" fn hsa_amd_signal_async_handler(
    signal: hsa_signal_t,
    cond: hsa_signal_condition_t,
    value: hsa_signal_value_t,
    handler: hsa_amd_signal_handler,
    arg: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(handler) = handler else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        if signal.handle == 0 {
            return HSA_STATUS_ERROR_INVALID_SIGNAL;
        }
        {
            let mut state = async_state();
            state.next_id += 1;
            let id = state.next_id;
            state.handlers.push(AsyncHandler {
                id,
                signal,
                condition: cond,
                value,
                handler,
                arg: arg as usize,
            });
        }
        // Every signal change must reach the async thread while a handler is armed.
        watch_all_signals(true);
        start_async_thread();
        notify_global();
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_amd_async_function`.
pub(crate) unsafe extern "C" fn hsa_amd_async_function(
    callback: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        async_state().functions.push((callback, arg as usize));
        start_async_thread();
        notify_global();
        HSA_STATUS_SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    thread_local! {
        /// How long this thread stops between a value change and the end of its notification.
        static PAUSE: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    }

    /// Set once a paused change's notification is over.
    static NOTIFIED: AtomicBool = AtomicBool::new(false);

    /// Holds the calling thread inside its change for as long as its test asked.
    pub(super) fn pause_after_change() {
        let pause = PAUSE.with(Cell::get);
        if !pause.is_zero() {
            std::thread::sleep(pause);
            NOTIFIED.store(true, SeqCst);
        }
    }

    /// A waiter that destroys its signal the moment the value it waits for shows, while the
    /// thread that set it is still notifying: the destruction waits for that thread, so the
    /// notification never writes into freed memory.
    #[test]
    fn destroy_waits_for_a_change_under_way() {
        let signal = SignalObj::create(AMD_SIGNAL_KIND_USER, 1);
        let address = signal as usize;
        let completer = std::thread::spawn(move || {
            PAUSE.with(|p| p.set(Duration::from_millis(200)));
            // SAFETY: the signal stays live until the waiter destroys it.
            unsafe { &*(address as *const SignalObj) }.update(|v| v - 1);
        });
        // SAFETY: live until destroyed below, on this thread.
        let value = unsafe { &*signal }.wait(HSA_SIGNAL_CONDITION_EQ, 0, u64::MAX);
        assert_eq!(value, 0);
        // SAFETY: created above and not used after this.
        unsafe { SignalObj::destroy(signal) };
        assert!(
            NOTIFIED.load(SeqCst),
            "destroyed while the change was notifying"
        );
        completer.join().unwrap();
    }
}
