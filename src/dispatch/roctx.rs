//! The application's roctx calls, as rtl-pmc's roctx library (`librtl_pmc_roctx.so`, preloaded
//! by the CLI) records them: the range stack of a submitting thread, whether the application
//! resumed the profiler, and the events to write beside the dispatches.
//!
//! The library is found through the dynamic loader's global scope, where `LD_PRELOAD` puts it;
//! without it (an application run without the CLI, or without the library preloaded) there is
//! nothing to find and every dispatch has an empty range stack.

use std::ffi::{c_int, c_void, CStr};

use super::records::{Region, RegionKind};

/// `rtl_pmc_roctx_drain`'s callback, as the library declares it.
type Sink =
    unsafe extern "C" fn(*mut c_void, u32, u32, u32, u64, i32, u64, *const u8, usize, bool, u64);
type Drain = unsafe extern "C" fn(Option<Sink>, *mut c_void) -> u64;
type Visitor = unsafe extern "C" fn(*mut c_void, u64, *const u8, usize);
type ThreadStack = unsafe extern "C" fn(Option<Visitor>, *mut c_void) -> usize;
type Resumed = unsafe extern "C" fn() -> c_int;

/// The event kinds of the library, by the numbers it passes: [`RegionKind`]'s, up to the last
/// kind of call it records.
const KINDS: &[RegionKind] = RegionKind::ALL
    .split_at(RegionKind::NameHipStream as usize + 1)
    .0;

/// One open push/pop range of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRange {
    /// Its id ([`Region::id`] of its push).
    pub id: u64,
    /// Its message, non-UTF-8 bytes replaced.
    pub name: String,
}

/// The roctx library's entry points in this process.
pub struct Roctx {
    drain: Drain,
    stack: ThreadStack,
    resumed: Resumed,
    /// Added to the library's `CLOCK_BOOTTIME` stamps to reach the runtime's system clock.
    offset_ns: i64,
}

/// The library function `name` in the global scope, if loaded.
fn global(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym on the global scope with a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!f.is_null()).then_some(f)
}

fn boot_time_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Text of the application's bytes, and whether they were UTF-8.
fn text(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), true),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), false),
    }
}

/// How far the runtime's system clock is from `CLOCK_BOOTTIME`: 0 when they agree within a
/// millisecond (ROCr on Linux reads `CLOCK_BOOTTIME`), else the measured difference.
pub fn clock_offset(system_ns: Option<u64>, boot_ns: u64) -> i64 {
    let Some(system) = system_ns else { return 0 };
    let offset = system as i128 - boot_ns as i128;
    if offset.abs() < 1_000_000 {
        0
    } else {
        offset.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
}

impl Roctx {
    /// The library's entry points, if it is loaded; `system_ns` reads the runtime's clock.
    pub fn find(system_ns: impl Fn() -> Option<u64>) -> Option<Roctx> {
        let drain = global(c"rtl_pmc_roctx_drain")?;
        let stack = global(c"rtl_pmc_roctx_thread_stack")?;
        let resumed = global(c"rtl_pmc_roctx_resumed")?;
        let offset_ns = clock_offset(system_ns(), boot_time_ns());
        // SAFETY: the library exports these names with exactly these signatures.
        unsafe {
            Some(Roctx {
                drain: std::mem::transmute::<*mut c_void, Drain>(drain),
                stack: std::mem::transmute::<*mut c_void, ThreadStack>(stack),
                resumed: std::mem::transmute::<*mut c_void, Resumed>(resumed),
                offset_ns,
            })
        }
    }

    /// The open push/pop ranges of the calling thread, outermost first.
    ///
    /// The names are copied only `with_names` (a selection or renaming reads them); without,
    /// each range has an empty name and the call allocates nothing but the list.
    pub fn thread_stack(&self, with_names: bool) -> Vec<OpenRange> {
        struct Visit {
            with_names: bool,
            out: Vec<OpenRange>,
        }
        unsafe extern "C" fn visit(context: *mut c_void, id: u64, name: *const u8, len: usize) {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                // SAFETY: `context` is the Visit below, alive for the call.
                let visit = unsafe { &mut *(context as *mut Visit) };
                let name = match (visit.with_names, name.is_null()) {
                    // SAFETY: the library passes `len` readable bytes.
                    (true, false) => text(unsafe { std::slice::from_raw_parts(name, len) }).0,
                    _ => String::new(),
                };
                visit.out.push(OpenRange { id, name });
            }));
        }
        let mut context = Visit {
            with_names,
            out: Vec::new(),
        };
        // SAFETY: the library's entry point with a callback and context valid for the call.
        unsafe { (self.stack)(Some(visit), &mut context as *mut Visit as *mut c_void) };
        context.out
    }

    /// Whether the application resumed the profiler (and did not pause it since).
    pub fn resumed(&self) -> bool {
        // SAFETY: the library's entry point, no arguments.
        unsafe { (self.resumed)() != 0 }
    }

    /// The events recorded since the last call, this process's only (a forked child inherits
    /// its parent's unwritten ones), on the runtime's clock; a [`RegionKind::Dropped`] event
    /// last when the library had to leave some out.
    pub fn drain(&self) -> Vec<Region> {
        struct Sunk {
            pid: u32,
            offset_ns: i64,
            out: Vec<Region>,
        }
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn sink(
            context: *mut c_void,
            kind: u32,
            pid: u32,
            tid: u32,
            id: u64,
            depth: i32,
            timestamp: u64,
            name: *const u8,
            len: usize,
            has_name: bool,
            object: u64,
        ) {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                // SAFETY: `context` is the Sunk below, alive for the call.
                let sunk = unsafe { &mut *(context as *mut Sunk) };
                let Some(kind) = (kind as usize)
                    .checked_sub(1)
                    .and_then(|i| KINDS.get(i))
                    .copied()
                else {
                    return;
                };
                if pid != sunk.pid {
                    return;
                }
                let (name, utf8) = if has_name && !name.is_null() {
                    // SAFETY: the library passes `len` readable bytes.
                    let (t, utf8) = text(unsafe { std::slice::from_raw_parts(name, len) });
                    (Some(t), utf8)
                } else {
                    (None, true)
                };
                sunk.out.push(Region {
                    kind,
                    pid,
                    tid,
                    id,
                    depth,
                    timestamp: timestamp.saturating_add_signed(sunk.offset_ns),
                    name,
                    utf8,
                    object,
                });
            }));
        }
        let mut sunk = Sunk {
            pid: std::process::id(),
            offset_ns: self.offset_ns,
            out: Vec::new(),
        };
        // SAFETY: the library's entry point with a callback and context valid for the call.
        let dropped = unsafe { (self.drain)(Some(sink), &mut sunk as *mut Sunk as *mut c_void) };
        if dropped > 0 {
            sunk.out.push(self.marker(RegionKind::Dropped, dropped));
        }
        sunk.out
    }

    /// An event of the interposer's own (`Exit`, `Dropped`) at the current time.
    pub fn marker(&self, kind: RegionKind, object: u64) -> Region {
        Region {
            kind,
            pid: std::process::id(),
            // SAFETY: gettid has no preconditions.
            tid: unsafe { libc::gettid() } as u32,
            id: 0,
            depth: -1,
            timestamp: boot_time_ns().saturating_add_signed(self.offset_ns),
            name: None,
            utf8: true,
            object,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_within_a_millisecond_are_the_same_clock() {
        assert_eq!(clock_offset(None, 5_000_000_000), 0);
        assert_eq!(clock_offset(Some(5_000_900_000), 5_000_000_000), 0);
        assert_eq!(clock_offset(Some(5_002_000_000), 5_000_000_000), 2_000_000);
        assert_eq!(
            clock_offset(Some(1_000_000_000), 5_000_000_000),
            -4_000_000_000
        );
    }

    #[test]
    fn text_says_whether_bytes_were_utf8() {
        assert_eq!(text(b"step 1"), ("step 1".to_string(), true));
        assert_eq!(text(b"st\xffep"), ("st\u{fffd}ep".to_string(), false));
    }
}
