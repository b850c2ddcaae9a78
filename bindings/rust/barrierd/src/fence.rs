// SPDX-License-Identifier: MIT
//! The heavy/light split of the `membarrier` crate, on barrierd: a reader's [`light`] fence
//! costs nothing at run time, a writer's [`heavy`] fence makes every CPU serialise.
//!
//! `light()` in one thread and `heavy()` in another behave as if both were
//! `fence(SeqCst)`: when `heavy()` returns, every CPU has executed a serialising event after
//! it began, so each thread's stores before its light fence are visible to the heavy side's
//! later loads, or that thread's loads after its light fence see the heavy side's earlier
//! stores.  The language's memory model has no such fence; like the `membarrier` crate's,
//! this one rests on what the hardware does (x86-TSO; docs/DESIGN.md).
//!
//! Under `cfg(miri)`, which cannot call foreign functions, both are `fence(SeqCst)`: sound
//! for the model Miri checks, and the code around them stays checkable.
//!
//! ```
//! use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
//! # drop(barrierd::__doc_open());
//! static BUSY: AtomicBool = AtomicBool::new(false);
//! static STOP: AtomicBool = AtomicBool::new(false);
//! // fast side: a store, a light fence, a load
//! BUSY.store(true, Relaxed);
//! barrierd::fence::light();
//! let stopped = STOP.load(Relaxed);
//! BUSY.store(false, Relaxed);
//! // slow side: a store, a heavy fence, a load (the asymmetric Dekker)
//! STOP.store(true, Relaxed);
//! barrierd::fence::heavy();
//! assert!(!BUSY.load(Relaxed) || stopped);
//! ```

#[cfg(not(miri))]
use std::sync::atomic::compiler_fence;
#[cfg(miri)]
use std::sync::atomic::fence;
use std::sync::atomic::Ordering;

/// The fast side: a compiler fence (`compiler_fence(SeqCst)`), no instruction.  The compiler
/// keeps the thread's memory accesses on their side of it; the CPU's store-load reordering is
/// covered by the other side's [`heavy`].  Under `cfg(miri)`, `fence(SeqCst)`.
///
/// ```
/// barrierd::fence::light();
/// ```
#[inline]
pub fn light() {
    #[cfg(not(miri))]
    compiler_fence(Ordering::SeqCst);
    #[cfg(miri)]
    fence(Ordering::SeqCst);
}

/// The slow side: a barrierd barrier, `barrierd_barrier()` on a process-wide handle opened
/// at the first call (`$BARRIERD_STATE` or `/run/barrierd/state`), falling back as the
/// library does: with `membarrier(MEMBARRIER_CMD_GLOBAL)` when no daemon is live, or when a
/// barrier has not passed within 100 ms; when the file does not exist yet, the handle maps
/// it once a call finds it.  When the handle cannot be opened at all (an untrusted file, no
/// `/proc`), every call is `membarrier(MEMBARRIER_CMD_GLOBAL)`.
///
/// **When even the fallback fails** (`membarrier` refused: `nohz_full` CPUs, seccomp, a
/// kernel without it) there is no barrier to give, and `heavy()` **aborts the process** with
/// a message naming both errors.  Returning would let the caller go on as if every CPU had
/// serialised (free memory a reader still uses); a panic could be caught, and code unwinding
/// from it (destructors, a `catch_unwind` caller) may rely on the barrier just the same.
/// Callers that can handle the failure use [`try_heavy`].
///
/// Under `cfg(miri)`, `fence(SeqCst)`.
///
/// ```
/// # drop(barrierd::__doc_open());
/// barrierd::fence::heavy();
/// ```
pub fn heavy() {
    #[cfg(not(miri))]
    if let Err(e) = try_heavy() {
        eprintln!("barrierd::fence::heavy: no barrier could be taken ({e}); aborting, since returning would claim one");
        std::process::abort();
    }
    #[cfg(miri)]
    fence(Ordering::SeqCst);
}

/// [`heavy`], returning the error instead of aborting: `Err` means no barrier was taken
/// (barrierd's error if the handle could not fall back, else `membarrier`'s).
///
/// ```
/// # drop(barrierd::__doc_open());
/// barrierd::fence::try_heavy()?;
/// # Ok::<(), barrierd::Error>(())
/// ```
pub fn try_heavy() -> crate::Result<()> {
    #[cfg(not(miri))]
    return process_handle::barrier();
    #[cfg(miri)]
    {
        fence(Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(not(miri))]
mod process_handle {
    use std::sync::atomic::{AtomicPtr, Ordering};
    use std::sync::Once;

    use crate::{membarrier, Barrierd, OpenOptions, Result};

    static OPEN: Once = Once::new();
    /// The process's handle, opened once and never closed (fences may run until exit); null
    /// when it could not be opened.
    static HANDLE: AtomicPtr<Barrierd> = AtomicPtr::new(std::ptr::null_mut());

    pub(super) fn barrier() -> Result<()> {
        OPEN.call_once(|| {
            let opened = OpenOptions::new()
                .fallback_membarrier(true)
                .attach_later(true)
                .open();
            if let Ok(b) = opened {
                HANDLE.store(Box::into_raw(Box::new(b)), Ordering::Release);
            }
        });
        let b = HANDLE.load(Ordering::Acquire);
        if b.is_null() {
            return membarrier::global();
        }
        // SAFETY: the handle was leaked, so it lives until the process exits.
        unsafe { &*b }.barrier(None)
    }
}
