//! Fatal signals: SIGSEGV, SIGABRT, SIGBUS, SIGFPE and SIGILL.
//!
//! Records are in the page cache the moment they are written ([`super::records::RecordFile`]),
//! so a crash loses no record the application could have seen complete. What a handler adds is
//! the cause: it notes the signal in each raw record file's header ([`Tally::signalled`]), so
//! the CLI can say why dispatches still in flight are missing. Then it hands the signal on
//! exactly as if rtl-pmc were not there: to the handler the application installed before
//! (with its flags' meaning), or, under the default action, it restores that action and raises
//! the signal again, so the process ends with the signal's status (and its core dump).
//!
//! A handler the application installs later replaces ours, as it would without rtl-pmc. The
//! handlers are installed when the first dispatch is profiled, unless
//! [`super::config::DISABLE_SIGNAL_HANDLERS_ENV`] asks for none (`--disable-signal-handlers`).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use super::records::Tally;

/// The signals handled, each ending the process by default.
pub const FATAL: [c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
];

/// Raw record files whose header notes the signal (a process has one per pass directory).
const FILES: usize = 64;

static TALLIES: [AtomicPtr<Tally>; FILES] = [const { AtomicPtr::new(std::ptr::null_mut()) }; FILES];

/// The actions in place before ours, per signal of [`FATAL`].
struct Previous([libc::sigaction; FATAL.len()]);

// SAFETY: plain C data, written once before any handler of ours can run, then only read.
unsafe impl Sync for Previous {}
// SAFETY: see `Sync`.
unsafe impl Send for Previous {}

static PREVIOUS: OnceLock<Previous> = OnceLock::new();

/// Notes `tallies` as files to mark on a fatal signal, and installs the handlers once.
pub fn install(tallies: &[&'static Tally]) {
    for tally in tallies {
        let ptr = *tally as *const Tally as *mut Tally;
        let _ = TALLIES.iter().find(|slot| {
            slot.compare_exchange(
                std::ptr::null_mut(),
                ptr,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        });
    }
    PREVIOUS.get_or_init(|| {
        // SAFETY: sigaction with valid pointers, reading the current actions and then
        // installing ours, whose handler only uses async-signal-safe calls.
        unsafe {
            let mut previous: [libc::sigaction; FATAL.len()] = std::mem::zeroed();
            for (i, &signal) in FATAL.iter().enumerate() {
                libc::sigaction(signal, std::ptr::null(), &mut previous[i]);
            }
            for (i, &signal) in FATAL.iter().enumerate() {
                let mut ours: libc::sigaction = std::mem::zeroed();
                ours.sa_sigaction = on_fatal as *const () as usize;
                ours.sa_mask = previous[i].sa_mask;
                ours.sa_flags =
                    libc::SA_SIGINFO | libc::SA_ONSTACK | (previous[i].sa_flags & libc::SA_NODEFER);
                libc::sigaction(signal, &ours, std::ptr::null_mut());
            }
            Previous(previous)
        }
    });
}

/// Puts back the actions ours replaced where ours are still in place, before this library may
/// be unloaded: a signal must never reach a handler whose code is gone. Nothing is recorded
/// after that, so there is nothing left for a handler to note.
pub fn uninstall() {
    let Some(previous) = PREVIOUS.get() else {
        return;
    };
    for (i, &signal) in FATAL.iter().enumerate() {
        // SAFETY: sigaction with valid pointers: reading the current action, and putting back
        // the one read at install time only where the current one is ours.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut current);
            if current.sa_sigaction == on_fatal as *const () as usize {
                libc::sigaction(signal, &previous.0[i], std::ptr::null_mut());
            }
        }
    }
}

/// The handler: notes the signal, then hands it on.
extern "C" fn on_fatal(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        for slot in &TALLIES {
            let tally = slot.load(Ordering::SeqCst);
            if !tally.is_null() {
                // SAFETY: tallies are leaked, never freed.
                unsafe { (*tally).signalled(signal) };
            }
        }
    });
    let previous = PREVIOUS
        .get()
        .and_then(|p| Some(p.0[FATAL.iter().position(|&s| s == signal)?]));
    // SAFETY: async-signal-safe calls only: sigaction, raise, and the application's own
    // handler called as the kernel would have called it.
    unsafe {
        let Some(previous) = previous else {
            return default_action(signal);
        };
        if previous.sa_flags & libc::SA_RESETHAND != 0 {
            let mut reset: libc::sigaction = std::mem::zeroed();
            reset.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &reset, std::ptr::null_mut());
        }
        match previous.sa_sigaction {
            libc::SIG_DFL => default_action(signal),
            libc::SIG_IGN => {}
            handler if previous.sa_flags & libc::SA_SIGINFO != 0 => {
                let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                    std::mem::transmute(handler);
                handler(signal, info, context);
            }
            handler => {
                let handler: extern "C" fn(c_int) = std::mem::transmute(handler);
                handler(signal);
            }
        }
    }
}

/// Restores the default action of `signal` and raises it: it is delivered as this handler
/// returns (a faulting instruction would fault again anyway), ending the process with it.
///
/// # Safety
/// Called from the signal handler only.
unsafe fn default_action(signal: c_int) {
    // SAFETY: async-signal-safe system calls with valid arguments.
    unsafe {
        let mut reset: libc::sigaction = std::mem::zeroed();
        reset.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &reset, std::ptr::null_mut());
        libc::raise(signal);
    }
}
