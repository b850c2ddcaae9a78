// SPDX-License-Identifier: MIT
//! Ending the process from code that must not unwind: the `extern "C"` callbacks the library
//! calls (an unwind through C frames is undefined behaviour on Rust 1.63) and `heavy()`,
//! whose caller must never go on believing in a barrier it did not get.

use std::fmt;
use std::io::{self, Write};
use std::mem;
use std::panic::{self, AssertUnwindSafe};
use std::process;

/// Print `msg` on stderr if that can be done, then abort.  Never unwinds: a write error (a
/// closed pipe) is ignored where `eprintln!` would panic, and a panic while formatting (a
/// `Display` that panics) is caught and its payload forgotten, since the payload's own `Drop`
/// could panic again.
pub(crate) fn abort_with(msg: fmt::Arguments<'_>) -> ! {
    let printed = panic::catch_unwind(AssertUnwindSafe(|| {
        let _ = writeln!(io::stderr(), "{msg}");
    }));
    if let Err(payload) = printed {
        mem::forget(payload);
    }
    process::abort()
}

/// Run `f`, aborting with `what` in the message if it panics: for the bodies of `extern "C"`
/// functions.  The payload is forgotten, not dropped: dropping it runs its `Drop`, which may
/// panic in turn, outside any `catch_unwind`.
pub(crate) fn or_abort<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            mem::forget(payload);
            abort_with(format_args!(
                "barrierd: {what} panicked inside libbarrierd; aborting"
            ))
        }
    }
}
