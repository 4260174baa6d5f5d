//! The threads this library starts, joined before the library may be unloaded.
//!
//! A thread that has said it stopped still runs this library's code on its way out: the end of
//! its closure and the thread-local destructors of the standard library linked into the
//! library, which glibc calls as the thread exits. The runtime unloads the library as soon as
//! `OnUnload` returns, so a thread still on its way out then jumps into unmapped code. So
//! whoever stops a thread joins it before letting the library go, and only in the process that
//! started it: a forked child has none of its parent's threads.

use std::sync::Mutex;
use std::thread::JoinHandle;

/// A thread of this library: its handle and the process it was started in.
#[derive(Default)]
pub struct Joinable(Mutex<Option<(u32, JoinHandle<()>)>>);

impl Joinable {
    /// Starts `body` on a thread named `name`; whether it started.
    pub fn spawn(&self, name: &str, body: impl FnOnce() + Send + 'static) -> bool {
        match std::thread::Builder::new().name(name.into()).spawn(body) {
            Ok(handle) => {
                let pid = std::process::id();
                let before = self
                    .0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .replace((pid, handle));
                if let Some((started_in, before)) = before {
                    if started_in != pid {
                        // A parent process's thread: not detached here either.
                        std::mem::forget(before);
                    }
                }
                true
            }
            Err(_) => false,
        }
    }

    /// Waits until the thread has exited, once it said it stopped. Not on the thread itself,
    /// and not in a process the thread does not run in.
    pub fn join(&self) {
        let taken = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some((pid, handle)) = taken else { return };
        if pid != std::process::id() {
            // Another process's thread: neither joined nor detached here.
            std::mem::forget(handle);
        } else if handle.thread().id() != std::thread::current().id() {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Joinable;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::Duration;

    /// A thread that says it stopped and still has work on its way out: `join` returns only
    /// once that work is done.
    #[test]
    fn join_waits_for_a_stopped_thread_to_exit() {
        let said = Arc::new(AtomicBool::new(false));
        let gone = Arc::new(AtomicBool::new(false));
        let thread = Joinable::default();
        let (s, g) = (Arc::clone(&said), Arc::clone(&gone));
        assert!(thread.spawn("rtl-pmc-test", move || {
            s.store(true, SeqCst);
            std::thread::sleep(Duration::from_millis(200));
            g.store(true, SeqCst);
        }));
        while !said.load(SeqCst) {
            std::thread::yield_now();
        }
        thread.join();
        assert!(gone.load(SeqCst));
        thread.join();
    }

    /// A thread stopping itself does not wait for itself.
    #[test]
    fn a_thread_joining_itself_returns() {
        let thread = Arc::new(Joinable::default());
        let me = Arc::clone(&thread);
        let (tx, rx) = std::sync::mpsc::channel();
        assert!(thread.spawn("rtl-pmc-test", move || {
            while me.0.lock().unwrap().is_none() {
                std::thread::yield_now();
            }
            me.join();
            tx.send(()).unwrap();
        }));
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
    }
}
