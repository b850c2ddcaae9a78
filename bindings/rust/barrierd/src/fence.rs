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
/// it once a call finds it.
///
/// **Any error of the handle falls back too**: when `barrierd_barrier()` fails (a file that
/// appears later but is not trusted, `EPROTO`, `ESTALE`, `EMFILE`, `ENOMEM`, a time-namespace
/// move), the call takes `membarrier(MEMBARRIER_CMD_GLOBAL)` instead.  That is sound whatever
/// the handle did: membarrier gives the guarantee from the moment it is called, which is
/// after the caller's stores.  While there is no handle (its open failed: an untrusted file,
/// no `/proc`; or another thread is opening it), every call is `membarrier(GLOBAL)`; a failed
/// open is tried again at most once a second.
///
/// **Fork**: no call waits for another thread, so a `fork()` while a thread of the parent is
/// opening the handle leaves the child nothing to wait for: the child opens its own.  A handle
/// opened before the fork is the child's too (libbarrierd's fork handlers renew what the child
/// needs; docs/CLIENT.md).
///
/// **When even the fallback fails** (`membarrier` refused: `nohz_full` CPUs, seccomp, a
/// kernel without it) there is no barrier to give, and `heavy()` **aborts the process** with
/// a message naming the errors (written as well as stderr allows: never a panic, even on a
/// closed pipe).  Returning would let the caller go on as if every CPU had serialised (free
/// memory a reader still uses); a panic could be caught, and code unwinding from it
/// (destructors, a `catch_unwind` caller) may rely on the barrier just the same.  Callers
/// that can handle the failure use [`try_heavy`].
///
/// Under `cfg(miri)`, `fence(SeqCst)`.
///
/// ```
/// # drop(barrierd::__doc_open());
/// barrierd::fence::heavy();
/// ```
pub fn heavy() {
    #[cfg(not(miri))]
    if let Err(f) = barrier() {
        // Formatted inside abort_with, which survives a panic there and a closed stderr.
        crate::abort::abort_with(format_args!(
            "barrierd::fence::heavy: no barrier could be taken ({f}); aborting, since \
             returning would claim one"
        ));
    }
    #[cfg(miri)]
    fence(Ordering::SeqCst);
}

/// [`heavy`], returning the error instead of aborting.  `Ok`: a barrier was taken, by the
/// handle or by `membarrier(MEMBARRIER_CMD_GLOBAL)` after any error of the handle.  `Err`:
/// no barrier was taken; the error is membarrier's (the fallback failed too).
///
/// ```
/// # drop(barrierd::__doc_open());
/// barrierd::fence::try_heavy()?;
/// # Ok::<(), barrierd::Error>(())
/// ```
pub fn try_heavy() -> crate::Result<()> {
    #[cfg(not(miri))]
    return barrier().map_err(|f| f.membarrier);
    #[cfg(miri)]
    {
        fence(Ordering::SeqCst);
        Ok(())
    }
}

/// Why no barrier was taken: the handle's error (`None`: no handle for this call) and then
/// the fallback's.
#[cfg(not(miri))]
struct Failure {
    barrierd: Option<crate::Error>,
    membarrier: crate::Error,
}

#[cfg(not(miri))]
impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(e) = self.barrierd {
            write!(f, "the handle: {e}; then ")?;
        }
        write!(f, "membarrier(GLOBAL): {}", self.membarrier)
    }
}

/// The handle's barrier, else `membarrier(GLOBAL)`.
#[cfg(not(miri))]
fn barrier() -> Result<(), Failure> {
    let barrierd = match crate::process_handle::get().map(|b| b.barrier(None)) {
        Some(Ok(())) => return Ok(()),
        Some(Err(e)) => Some(e),
        None => None,
    };
    crate::membarrier::global().map_err(|membarrier| Failure {
        barrierd,
        membarrier,
    })
}
