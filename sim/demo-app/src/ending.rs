//! `--end`: ways a process ends right after its work, for tests of what a profiler keeps.

use std::io::Write;

/// The values of `--end`.
pub const ENDINGS: [&str; 8] = [
    "exit-thread",
    "segv",
    "abort",
    "bus",
    "fpe",
    "ill",
    "exec",
    "hang",
];

/// The signal an ending raises, if any.
fn signal_of(how: &str) -> Option<libc::c_int> {
    match how {
        "segv" => Some(libc::SIGSEGV),
        "abort" => Some(libc::SIGABRT),
        "bus" => Some(libc::SIGBUS),
        "fpe" => Some(libc::SIGFPE),
        "ill" => Some(libc::SIGILL),
        _ => None,
    }
}

/// The application's own handler: says so with async-signal-safe calls, then ends the process
/// with the signal.
extern "C" fn own_handler(signal: libc::c_int) {
    let message = format!("rtl-demo-app: own handler caught signal {signal}\n");
    // SAFETY: write(2), signal(2) and raise(3) from a handler; the message was formatted
    // before (an allocation here is acceptable in a test program that ends at once).
    unsafe {
        libc::write(2, message.as_ptr().cast(), message.len());
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Before HSA starts: the handler the application has for the ending's signal: its own with
/// `own_handler`, else the default action (the Rust runtime's SIGSEGV/SIGBUS handler for stack
/// overflows would otherwise swallow a raised signal once).
pub fn prepare(how: &str, own_handler: bool) {
    let Some(signal) = signal_of(how) else { return };
    let handler = match own_handler {
        true => self::own_handler as *const () as libc::sighandler_t,
        false => libc::SIG_DFL,
    };
    // SAFETY: installing a handler for a signal this program raises on purpose.
    unsafe { libc::signal(signal, handler) };
}

/// Ends the process as `how` says, after printing that `verified` dispatches were verified.
pub fn end(how: &str, verified: u32) -> ! {
    println!("rtl-demo-app: {verified} dispatches verified, ending by {how}");
    let _ = std::io::stdout().flush();
    // SAFETY: each way ends the process on purpose; nothing runs after.
    unsafe {
        match how {
            "exit-thread" => libc::_exit(0),
            "segv" => {
                // Address 8: unmapped, and not null, which the standard library checks for.
                std::ptr::write_volatile(8 as *mut u8, 1);
            }
            "abort" => libc::abort(),
            "exec" => {
                let sh = c"/bin/sh";
                let args = [
                    sh.as_ptr(),
                    c"-c".as_ptr(),
                    c"exit 0".as_ptr(),
                    std::ptr::null(),
                ];
                libc::execv(sh.as_ptr(), args.as_ptr());
                libc::_exit(127);
            }
            "hang" => loop {
                libc::pause();
            },
            _ => {}
        }
        if let Some(signal) = signal_of(how) {
            libc::raise(signal);
        }
        libc::_exit(126)
    }
}

/// Adds a line to `path` and returns how many it has now: this run's number, from 1.
pub fn count_run(path: &std::path::Path) -> u32 {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let _ = writeln!(file, "run");
    std::fs::read_to_string(path).map_or(1, |t| t.lines().count() as u32)
}
