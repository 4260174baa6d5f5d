//! Time and blocking primitives: the `CLOCK_BOOTTIME` nanosecond clock ROCr reports, a short
//! poll before a wait blocks, and futex waits so that waiting threads then sleep.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Nanoseconds of `CLOCK_BOOTTIME`, the domain of every timestamp the runtime reports.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How long a wait polls before it blocks: ROCr's waits on signals poll for 200 µs before they
/// sleep on the signal's event (`kMaxElapsed` of `InterruptSignal::WaitRelaxed` and
/// `Signal::WaitAny`).
pub const POLL_NS: u64 = 200_000;

/// Threads polling in [`poll`] now.
static POLLING: AtomicUsize = AtomicUsize::new(0);

/// Looks at `ready` until it holds, for at most [`POLL_NS`] and never past `deadline` (ns of
/// [`now_ns`]), yielding the core between looks (where ROCr uses `mwaitx`); whether it held.
///
/// No more threads poll at once than the host has cores, plus one: the simulated GPUs and the
/// application share the host's cores, so more pollers would only take turns with the threads
/// that have work. The others look once and go on to block.
pub fn poll(deadline: Option<u64>, mut ready: impl FnMut() -> bool) -> bool {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if POLLING.fetch_add(1, Ordering::Relaxed) > cores {
        POLLING.fetch_sub(1, Ordering::Relaxed);
        return ready();
    }
    let end = now_ns().saturating_add(POLL_NS);
    let end = deadline.map_or(end, |d| d.min(end));
    let held = loop {
        if ready() {
            break true;
        }
        if now_ns() >= end {
            break false;
        }
        std::thread::yield_now();
    };
    POLLING.fetch_sub(1, Ordering::Relaxed);
    held
}

/// Sleeps while `word` equals `expected`, at most `timeout_ns` (`None` = no limit). Returns on
/// a wake-up, a value change, a timeout or a spurious wake; callers re-check their condition.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout_ns: Option<u64>) {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAIT_PRIVATE only reads it; `ts_ptr` is null or
    // points to a timespec that outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts_ptr,
        )
    };
}

/// Wakes every thread sleeping in [`futex_wait`] on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE_PRIVATE on a live, aligned u32 has no memory effects.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

/// Lets this thread's timed sleeps end within a microsecond (the device thread sleeps until
/// kernels end, which are microseconds apart).
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
}
