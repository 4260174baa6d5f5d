//! Running the application for one pass: its stdin/stdout/stderr stay connected, Ctrl-C and
//! SIGTERM are forwarded to it, and its exit status maps to ours (128+signal for a signal death).

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CHILD: AtomicI32 = AtomicI32::new(0);

/// Installs the Ctrl-C/SIGTERM handler once: it marks the profile interrupted and forwards
/// SIGINT to the running application.
pub fn install_interrupt_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let installed = ctrlc::set_handler(|| {
            INTERRUPTED.store(true, Ordering::SeqCst);
            let pid = CHILD.load(Ordering::SeqCst);
            if pid > 0 {
                let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
            }
        });
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

/// Starts `command`, calls `tick` every 100 ms while it runs, and returns its exit status.
pub fn run(command: &mut Command, mut tick: impl FnMut()) -> std::io::Result<ExitStatus> {
    let mut child: Child = command.spawn()?;
    CHILD.store(child.id() as i32, Ordering::SeqCst);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {
                tick();
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => break Err(e),
        }
    };
    CHILD.store(0, Ordering::SeqCst);
    status
}
