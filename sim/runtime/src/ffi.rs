//! Keeps Rust panics from unwinding into C: every C entry point runs its body through [`guard`].

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`; if it panics, reports the panic and returns `on_panic` instead of unwinding.
pub fn guard<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            eprintln!("rtl-sim: internal error (panic) in an HSA call; returning an error");
            on_panic
        }
    }
}
