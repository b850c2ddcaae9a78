// SPDX-License-Identifier: MIT
//! The process-wide handle behind [`fence::heavy`](crate::fence::heavy): opened by the first
//! call that needs it, never closed (fences may run until exit), and never waited for.
//!
//! No `Once`: a `fork()` while another thread runs a `Once`'s initialiser leaves the child's
//! `Once` running for ever, and every `heavy()` of the child would hang.  Here a thread that
//! finds the open in progress does not wait: it uses the membarrier fallback for that call.

use std::os::raw::{c_int, c_long};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use crate::{Barrierd, OpenOptions};

/// The handle once opened, leaked; published with a release store after the open, so a
/// thread that loads it (acquire) sees it complete.
static HANDLE: AtomicPtr<Barrierd> = AtomicPtr::new(std::ptr::null_mut());

/// The pid of the process one of whose threads is opening the handle; 0 when none is.  Only
/// threads of this process store their own pid here, so another pid was stored before a
/// `fork()` by a thread the child does not have: that open never finishes in the child, and
/// the child's first caller takes it over.  (A descendant that gets that thread's pid back,
/// the parent having died, keeps the fallback: slower, never wrong.)
static OPENER: AtomicU32 = AtomicU32::new(0);

/// After a failed open, the `CLOCK_MONOTONIC` second before which no open is tried again: a
/// transient failure (`EMFILE`, `ENOMEM`) does not downgrade the process for good, and a
/// lasting one (an untrusted file) costs one failed open a second, not one per fence.
static RETRY_AT_S: AtomicU64 = AtomicU64::new(0);

/// The process's handle, or `None` when this call should use `membarrier(GLOBAL)` instead:
/// another thread is opening it, an open failed less than a second ago, or this call's open
/// failed.  Never blocks.
pub(crate) fn get() -> Option<&'static Barrierd> {
    if let Some(b) = published() {
        return Some(b);
    }
    let now = monotonic_s();
    if now < RETRY_AT_S.load(Ordering::Relaxed) {
        return None;
    }
    let me = std::process::id();
    let opener = OPENER.load(Ordering::Relaxed);
    if opener == me
        || OPENER
            .compare_exchange(opener, me, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return None; // a thread of ours is opening it
    }
    // The previous opener (whose release store of 0 our acquire read) may have published it.
    let b = published().or_else(|| open(now));
    OPENER.store(0, Ordering::Release);
    b
}

fn published() -> Option<&'static Barrierd> {
    let b = HANDLE.load(Ordering::Acquire);
    // SAFETY: a non-null pointer is a leaked Box, published complete (release): it lives
    // until the process exits.
    (!b.is_null()).then(|| unsafe { &*b })
}

fn open(now: u64) -> Option<&'static Barrierd> {
    let opened = OpenOptions::new()
        .fallback_membarrier(true)
        .attach_later(true)
        .open();
    match opened {
        Ok(b) => {
            let b: &'static Barrierd = Box::leak(Box::new(b));
            HANDLE.store(b as *const Barrierd as *mut Barrierd, Ordering::Release);
            Some(b)
        }
        Err(_) => {
            RETRY_AT_S.store(now + 1, Ordering::Relaxed);
            None
        }
    }
}

#[repr(C)]
struct Timespec {
    tv_sec: c_long,
    tv_nsec: c_long,
}

extern "C" {
    fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
}

const CLOCK_MONOTONIC: c_int = 1;

/// `CLOCK_MONOTONIC` in seconds (`Instant` cannot be stored in an atomic).
fn monotonic_s() -> u64 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for the call; CLOCK_MONOTONIC cannot fail on Linux.
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64
}

#[cfg(test)]
mod tests {
    use super::{get, published, OPENER, RETRY_AT_S};
    use std::sync::atomic::Ordering::SeqCst;

    #[test]
    fn an_open_in_progress_is_not_waited_for_and_a_forked_one_is_taken_over() {
        // No other unit test uses the process handle: nothing is published yet.
        assert!(published().is_none());
        // A thread of ours is opening it: this call does not wait, it falls back.
        OPENER.store(std::process::id(), SeqCst);
        assert!(get().is_none());
        // A thread of a parent was opening it at fork: the child takes the open over.
        OPENER.store(std::process::id() + 1, SeqCst);
        let opened = get().is_some();
        assert_eq!(OPENER.load(SeqCst), 0, "the opener let go");
        assert!(
            opened || RETRY_AT_S.load(SeqCst) > 0,
            "it opened, or failed and waits"
        );
    }
}
