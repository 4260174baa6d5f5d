//! Running the application for one pass: its stdin/stdout/stderr stay connected, Ctrl-C and
//! SIGTERM are forwarded to it, and its exit status maps to ours (128+signal for a signal death).
//!
//! A Ctrl-C typed on the terminal reaches the application directly (same process group), so
//! SIGINT is forwarded only if the application is still running a second later: a program that
//! handles its first SIGINT gracefully does not get a second one at once.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// How long the application gets to react to a terminal's Ctrl-C before SIGINT is forwarded.
const FORWARD_AFTER: Duration = Duration::from_secs(1);

/// Installs the Ctrl-C/SIGTERM handler once: it marks the profile interrupted; [`run`] forwards
/// SIGINT to the application.
pub fn install_interrupt_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let installed = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
        if let Err(e) = installed {
            eprintln!("rtl-pmc: warning: cannot handle Ctrl-C ({e}); an interrupted run loses its results");
        }
    });
}

/// Whether Ctrl-C (or SIGTERM) was received.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The exit code a shell would report for `status`: the code, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

/// Starts `command`, calls `tick` while it runs, forwards an interrupt to it, and returns its
/// exit status.
pub fn run(command: &mut Command, mut tick: impl FnMut()) -> std::io::Result<ExitStatus> {
    let mut child: Child = command.spawn()?;
    let pid = Pid::from_raw(child.id() as i32);
    let started = Instant::now();
    let mut interrupted_at: Option<Instant> = None;
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if interrupted() {
            let at = *interrupted_at.get_or_insert_with(Instant::now);
            if !forwarded && at.elapsed() >= FORWARD_AFTER {
                let _ = kill(pid, Signal::SIGINT);
                forwarded = true;
            }
        }
        tick();
        // Short polls at first, so short runs finish promptly.
        let pause = if started.elapsed() < Duration::from_secs(2) {
            10
        } else {
            50
        };
        std::thread::sleep(Duration::from_millis(pause));
    }
}
