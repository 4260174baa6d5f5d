//! `librtl_pmc_roctx.so`: the roctx library rtl-pmc puts in front of the application's own.
//!
//! rtl-pmc preloads this library into the application (`LD_PRELOAD`) and puts a directory that
//! holds it under ROCm's names (`libroctx64.so.4`, `librocprofiler-sdk-roctx.so.1`) on
//! `LD_LIBRARY_PATH`. The application's calls to the roctx C API therefore land here whether it
//! was linked against ROCm's `libroctx64`, rocprofiler-sdk's roctx library, or a machine without
//! either. Each call is answered as ROCm's library answers it (nesting levels, range ids, 0 for
//! the control and naming calls) and recorded as an [`Event`] with a `CLOCK_BOOTTIME`
//! timestamp, the clock of ROCr's dispatch timestamps.
//!
//! The interposer (`librtl_pmc.so`, in the same process) finds the functions below through the
//! dynamic loader and
//! - takes the recorded events ([`rtl_pmc_roctx_drain`]) to write them beside the dispatches,
//! - asks, at each kernel submission, for the submitting thread's range stack
//!   ([`rtl_pmc_roctx_thread_stack`]) and whether the application resumed the profiler
//!   ([`rtl_pmc_roctx_resumed`]).
//!
//! Nothing here ever unwinds into the application: every entry point catches panics, and a
//! lock poisoned by one is taken over.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// `roctx_range_id_t`.
pub type RangeId = u64;
/// `roctx_thread_id_t`.
pub type ThreadId = u64;

/// What an [`Event`] records; the numbers are the `kind` argument of the drain callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// `roctxMarkA`.
    Mark = 1,
    /// `roctxRangePushA`: `id` is the new range's, `depth` its level from 0.
    Push = 2,
    /// `roctxRangePop` of the thread's innermost range `id` at level `depth`.
    Pop = 3,
    /// `roctxRangePop` on a thread with no open range (`depth` -1).
    PopEmpty = 4,
    /// `roctxRangeStartA`: `id` is the id returned.
    Start = 5,
    /// `roctxRangeStop` of the open range `id`.
    Stop = 6,
    /// `roctxRangeStop` with an id no open range has.
    StopUnknown = 7,
    /// `roctxProfilerPause`; `object` is the thread id given.
    Pause = 8,
    /// `roctxProfilerResume`; `object` is the thread id given.
    Resume = 9,
    /// `roctxNameOsThread`: the calling thread's name.
    NameThread = 10,
    /// `roctxNameHsaAgent`; `object` is the agent's handle.
    NameHsaAgent = 11,
    /// `roctxNameHipDevice`; `object` is the device ordinal.
    NameHipDevice = 12,
    /// `roctxNameHipStream`; `object` is the stream's address.
    NameHipStream = 13,
}

/// One roctx call as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What happened.
    pub kind: Kind,
    /// Process id at the call (a forked child's buffer still holds its parent's events).
    pub pid: u32,
    /// Linux thread id of the calling thread.
    pub tid: u32,
    /// The range id (push, pop, start, stop), else 0.
    pub id: u64,
    /// The push/pop nesting level, from 0; -1 where none.
    pub depth: i32,
    /// `CLOCK_BOOTTIME`, ns.
    pub timestamp: u64,
    /// The message or name, as the application's bytes (not necessarily UTF-8); `None` for a
    /// NULL pointer.
    pub name: Option<Vec<u8>>,
    /// The object a naming or control call is about.
    pub object: u64,
}

/// Events kept until the interposer takes them (every quarter of a second once the runtime has
/// a queue; never in a process that does not start the runtime); later ones are counted, not
/// kept.
const MAX_BUFFERED: usize = 1 << 20;

struct State {
    events: Vec<Event>,
    dropped: u64,
    open_starts: BTreeSet<u64>,
}

static STATE: Mutex<State> = Mutex::new(State {
    events: Vec::new(),
    dropped: 0,
    open_starts: BTreeSet::new(),
});
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static RESUMED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The calling thread's open push/pop ranges, outermost first: id and name.
    static STACK: RefCell<Vec<(u64, Option<Vec<u8>>)>> = const { RefCell::new(Vec::new()) };
}

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// The bytes of a C string from the application; `None` for NULL.
fn bytes(text: *const c_char) -> Option<Vec<u8>> {
    if text.is_null() {
        return None;
    }
    // SAFETY: the roctx API takes NUL-terminated strings; NULL was excluded above.
    Some(unsafe { CStr::from_ptr(text) }.to_bytes().to_vec())
}

fn record(kind: Kind, id: u64, depth: i32, name: Option<Vec<u8>>, object: u64) {
    let event = Event {
        kind,
        // SAFETY: getpid has no preconditions.
        pid: unsafe { libc::getpid() } as u32,
        tid: tid(),
        id,
        depth,
        timestamp: now_ns(),
        name,
        object,
    };
    let mut state = state();
    if state.events.len() < MAX_BUFFERED {
        state.events.push(event);
    } else {
        state.dropped += 1;
    }
}

/// Runs an entry point's body; a panic (which only an allocation failure could cause) gives
/// `fallback` instead of unwinding into the application.
fn guarded<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// `void roctxMarkA(const char* message)`.
#[no_mangle]
pub extern "C" fn roctxMarkA(message: *const c_char) {
    guarded((), || record(Kind::Mark, 0, -1, bytes(message), 0))
}

/// `int roctxRangePushA(const char* message)`: the new range's level, from 0.
#[no_mangle]
pub extern "C" fn roctxRangePushA(message: *const c_char) -> c_int {
    guarded(-1, || {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let name = bytes(message);
        let depth = STACK
            .try_with(|stack| {
                let mut stack = stack.borrow_mut();
                stack.push((id, name.clone()));
                stack.len() as i32 - 1
            })
            .unwrap_or(-1);
        record(Kind::Push, id, depth, name, 0);
        depth
    })
}

/// `int roctxRangePop(void)`: the level of the range it ends, or -1 when none was open.
#[no_mangle]
pub extern "C" fn roctxRangePop() -> c_int {
    guarded(-1, || {
        let popped = STACK
            .try_with(|stack| {
                let mut stack = stack.borrow_mut();
                let top = stack.pop()?;
                Some((top.0, stack.len() as i32))
            })
            .ok()
            .flatten();
        match popped {
            Some((id, depth)) => {
                record(Kind::Pop, id, depth, None, 0);
                depth
            }
            None => {
                record(Kind::PopEmpty, 0, -1, None, 0);
                -1
            }
        }
    })
}

/// `roctx_range_id_t roctxRangeStartA(const char* message)`: the new range's id, from 1.
#[no_mangle]
pub extern "C" fn roctxRangeStartA(message: *const c_char) -> RangeId {
    guarded(0, || {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        state().open_starts.insert(id);
        record(Kind::Start, id, -1, bytes(message), 0);
        id
    })
}

/// `void roctxRangeStop(roctx_range_id_t id)`.
#[no_mangle]
pub extern "C" fn roctxRangeStop(id: RangeId) {
    guarded((), || {
        let known = state().open_starts.remove(&id);
        let kind = if known { Kind::Stop } else { Kind::StopUnknown };
        record(kind, id, -1, None, 0);
    })
}

/// `int roctxProfilerPause(roctx_thread_id_t tid)`: always 0. A pause applies to the whole
/// process, whatever thread id is given.
#[no_mangle]
pub extern "C" fn roctxProfilerPause(tid: ThreadId) -> c_int {
    guarded(0, || {
        RESUMED.store(false, Ordering::SeqCst);
        record(Kind::Pause, 0, -1, None, tid);
        0
    })
}

/// `int roctxProfilerResume(roctx_thread_id_t tid)`: always 0; process-wide like a pause.
#[no_mangle]
pub extern "C" fn roctxProfilerResume(tid: ThreadId) -> c_int {
    guarded(0, || {
        RESUMED.store(true, Ordering::SeqCst);
        record(Kind::Resume, 0, -1, None, tid);
        0
    })
}

/// `int roctxGetThreadId(roctx_thread_id_t* tid)`: the Linux thread id, as rocprofiler-sdk
/// gives it; 0, or 1 for a NULL pointer.
///
/// # Safety
/// `out` is NULL or points to a writable `roctx_thread_id_t`.
#[no_mangle]
pub unsafe extern "C" fn roctxGetThreadId(out: *mut ThreadId) -> c_int {
    guarded(1, || {
        if out.is_null() {
            return 1;
        }
        // SAFETY: the application passes a pointer to a roctx_thread_id_t; NULL was excluded.
        unsafe { out.write(u64::from(tid())) };
        0
    })
}

/// `int roctxNameOsThread(const char* name)`: always 0.
#[no_mangle]
pub extern "C" fn roctxNameOsThread(name: *const c_char) -> c_int {
    guarded(0, || {
        record(Kind::NameThread, 0, -1, bytes(name), 0);
        0
    })
}

/// `int roctxNameHsaAgent(const char* name, const struct hsa_agent_s* agent)`: always 0.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `agent` is NULL or points to an `hsa_agent_t`.
#[no_mangle]
pub unsafe extern "C" fn roctxNameHsaAgent(name: *const c_char, agent: *const u64) -> c_int {
    guarded(0, || {
        let handle = if agent.is_null() {
            0
        } else {
            // SAFETY: hsa_agent_s is one u64 handle; NULL was excluded.
            unsafe { agent.read_unaligned() }
        };
        record(Kind::NameHsaAgent, 0, -1, bytes(name), handle);
        0
    })
}

/// `int roctxNameHipDevice(const char* name, int device_id)`: always 0.
#[no_mangle]
pub extern "C" fn roctxNameHipDevice(name: *const c_char, device: c_int) -> c_int {
    guarded(0, || {
        record(Kind::NameHipDevice, 0, -1, bytes(name), device as u64);
        0
    })
}

/// `int roctxNameHipStream(const char* name, const struct ihipStream_t* stream)`: always 0.
#[no_mangle]
pub extern "C" fn roctxNameHipStream(name: *const c_char, stream: *const c_void) -> c_int {
    guarded(0, || {
        record(Kind::NameHipStream, 0, -1, bytes(name), stream as u64);
        0
    })
}

/// `uint32_t roctx_version_major(void)` of ROCm's `libroctx64.so.4`.
#[no_mangle]
pub extern "C" fn roctx_version_major() -> u32 {
    4
}

/// `uint32_t roctx_version_minor(void)` of ROCm's `libroctx64.so.4`.
#[no_mangle]
pub extern "C" fn roctx_version_minor() -> u32 {
    1
}

// ROCm's libroctx64.so.4 gives its functions the version ROCTX_4.1: an application linked
// against it asks for roctxMarkA@ROCTX_4.1, which only a definition of that version satisfies.
// The unit-test executable is linked without the version script that defines ROCTX_4.1, so
// only the library carries the versions.
#[cfg(not(test))]
std::arch::global_asm!(
    ".symver roctxMarkA, roctxMarkA@@ROCTX_4.1",
    ".symver roctxRangePushA, roctxRangePushA@@ROCTX_4.1",
    ".symver roctxRangePop, roctxRangePop@@ROCTX_4.1",
    ".symver roctxRangeStartA, roctxRangeStartA@@ROCTX_4.1",
    ".symver roctxRangeStop, roctxRangeStop@@ROCTX_4.1",
    ".symver roctxProfilerPause, roctxProfilerPause@@ROCTX_4.1",
    ".symver roctxProfilerResume, roctxProfilerResume@@ROCTX_4.1",
    ".symver roctxGetThreadId, roctxGetThreadId@@ROCTX_4.1",
    ".symver roctxNameOsThread, roctxNameOsThread@@ROCTX_4.1",
    ".symver roctxNameHsaAgent, roctxNameHsaAgent@@ROCTX_4.1",
    ".symver roctxNameHipDevice, roctxNameHipDevice@@ROCTX_4.1",
    ".symver roctxNameHipStream, roctxNameHipStream@@ROCTX_4.1",
    ".symver roctx_version_major, roctx_version_major@@ROCTX_4.1",
    ".symver roctx_version_minor, roctx_version_minor@@ROCTX_4.1",
);

/// The drain callback: `(context, kind, pid, tid, id, depth, timestamp, name, name length,
/// has name, object)`; `name` is valid during the call only.
pub type Sink = unsafe extern "C" fn(
    context: *mut c_void,
    kind: u32,
    pid: u32,
    tid: u32,
    id: u64,
    depth: i32,
    timestamp: u64,
    name: *const u8,
    name_len: usize,
    has_name: bool,
    object: u64,
);

/// Hands every event recorded since the last call to `sink`, oldest first, and returns how many
/// events were not kept because the buffer was full.
///
/// # Safety
/// `sink` must be callable with `context` for the duration of the call.
#[no_mangle]
pub unsafe extern "C" fn rtl_pmc_roctx_drain(sink: Option<Sink>, context: *mut c_void) -> u64 {
    let Some(sink) = sink else { return 0 };
    guarded(0, || {
        let (events, dropped) = {
            let mut state = state();
            let dropped = std::mem::take(&mut state.dropped);
            (std::mem::take(&mut state.events), dropped)
        };
        for e in &events {
            let (name, len) = e
                .name
                .as_ref()
                .map_or((std::ptr::null(), 0), |n| (n.as_ptr(), n.len()));
            // SAFETY: the caller vouches for sink and context; `name` lives across the call.
            unsafe {
                sink(
                    context,
                    e.kind as u32,
                    e.pid,
                    e.tid,
                    e.id,
                    e.depth,
                    e.timestamp,
                    name,
                    len,
                    e.name.is_some(),
                    e.object,
                )
            };
        }
        dropped
    })
}

/// The stack callback: `(context, range id, name, name length)`; `name` is valid during the
/// call only.
pub type StackVisitor =
    unsafe extern "C" fn(context: *mut c_void, id: u64, name: *const u8, name_len: usize);

/// Calls `visit` for each open push/pop range of the calling thread, outermost first; returns
/// how many there are.
///
/// # Safety
/// `visit` must be callable with `context` for the duration of the call.
#[no_mangle]
pub unsafe extern "C" fn rtl_pmc_roctx_thread_stack(
    visit: Option<StackVisitor>,
    context: *mut c_void,
) -> usize {
    let Some(visit) = visit else { return 0 };
    guarded(0, || {
        STACK
            .try_with(|stack| {
                let stack = stack.borrow();
                for (id, name) in stack.iter() {
                    let (ptr, len) = name
                        .as_ref()
                        .map_or((std::ptr::null(), 0), |n| (n.as_ptr(), n.len()));
                    // SAFETY: the caller vouches for visit and context; the name outlives it.
                    unsafe { visit(context, *id, ptr, len) };
                }
                stack.len()
            })
            .unwrap_or(0)
    })
}

/// 1 after `roctxProfilerResume` until the next `roctxProfilerPause`, else 0: a process starts
/// paused, as rocprofv3's `--selected-regions` has it.
#[no_mangle]
pub extern "C" fn rtl_pmc_roctx_resumed() -> c_int {
    c_int::from(RESUMED.load(Ordering::SeqCst))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    unsafe extern "C" fn collect(
        context: *mut c_void,
        kind: u32,
        _pid: u32,
        _tid: u32,
        id: u64,
        depth: i32,
        _timestamp: u64,
        name: *const u8,
        len: usize,
        has_name: bool,
        _object: u64,
    ) {
        let out = unsafe { &mut *(context as *mut Vec<(u32, u64, i32, Option<Vec<u8>>)>) };
        let name = has_name.then(|| unsafe { std::slice::from_raw_parts(name, len) }.to_vec());
        out.push((kind, id, depth, name));
    }

    unsafe extern "C" fn stack_names(context: *mut c_void, _id: u64, name: *const u8, len: usize) {
        let out = unsafe { &mut *(context as *mut Vec<Vec<u8>>) };
        out.push(unsafe { std::slice::from_raw_parts(name, len) }.to_vec());
    }

    /// Every entry point in one test: the state is process-wide.
    #[test]
    fn calls_answer_as_roctx_does_and_are_recorded_in_order() {
        let outer = CString::new("outer").unwrap();
        let inner = CString::new(b"in\xffner".to_vec()).unwrap();
        assert_eq!(rtl_pmc_roctx_resumed(), 0, "a process starts paused");
        assert_eq!(roctxRangePushA(outer.as_ptr()), 0);
        assert_eq!(roctxRangePushA(inner.as_ptr()), 1);
        let mut names: Vec<Vec<u8>> = Vec::new();
        let n = unsafe {
            rtl_pmc_roctx_thread_stack(Some(stack_names), &mut names as *mut _ as *mut c_void)
        };
        assert_eq!(n, 2);
        assert_eq!(names, [b"outer".to_vec(), b"in\xffner".to_vec()]);
        roctxMarkA(std::ptr::null());
        assert_eq!(roctxRangePop(), 1);
        assert_eq!(roctxRangePop(), 0);
        assert_eq!(roctxRangePop(), -1, "nothing left to pop");
        let id = roctxRangeStartA(outer.as_ptr());
        roctxRangeStop(id);
        roctxRangeStop(id);
        assert_eq!(roctxProfilerResume(0), 0);
        assert_eq!(rtl_pmc_roctx_resumed(), 1);
        assert_eq!(roctxProfilerPause(0), 0);
        assert_eq!(rtl_pmc_roctx_resumed(), 0);
        let mut tid_out = 0;
        assert_eq!(unsafe { roctxGetThreadId(&mut tid_out) }, 0);
        assert_eq!(tid_out, u64::from(tid()));
        assert_eq!(unsafe { roctxGetThreadId(std::ptr::null_mut()) }, 1);
        let mut events: Vec<(u32, u64, i32, Option<Vec<u8>>)> = Vec::new();
        let dropped =
            unsafe { rtl_pmc_roctx_drain(Some(collect), &mut events as *mut _ as *mut c_void) };
        assert_eq!(dropped, 0);
        let kinds: Vec<(u32, i32)> = events.iter().map(|e| (e.0, e.2)).collect();
        assert_eq!(
            kinds,
            [
                (Kind::Push as u32, 0),
                (Kind::Push as u32, 1),
                (Kind::Mark as u32, -1),
                (Kind::Pop as u32, 1),
                (Kind::Pop as u32, 0),
                (Kind::PopEmpty as u32, -1),
                (Kind::Start as u32, -1),
                (Kind::Stop as u32, -1),
                (Kind::StopUnknown as u32, -1),
                (Kind::Resume as u32, -1),
                (Kind::Pause as u32, -1),
            ]
        );
        assert_eq!(events[0].1 + 1, events[1].1, "ids count up");
        assert_eq!(events[3].1, events[1].1, "a pop names the range it ends");
        assert_eq!(events[2].3, None, "a NULL message is recorded as none");
        assert_eq!(events[1].3.as_deref(), Some(&b"in\xffner"[..]));
        assert_eq!(events[6].1, id);
        assert_eq!(events[8].1, id, "the second stop names the id it was given");
    }
}
