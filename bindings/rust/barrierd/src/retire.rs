// SPDX-License-Identifier: MIT
//! What the two reclamation domains share: handing a `Box<T>` to the library's `retire()`,
//! whose free function drops it later in whichever writer reclaims the batch.

use std::os::raw::{c_int, c_void};
use std::process;

use barrierd_sys as sys;

use crate::Error;

/// A reclamation domain ([`EpochDomain`](crate::EpochDomain) or
/// [`HpDomain`](crate::HpDomain)): what a [`ReclaimCell`](crate::ReclaimCell) retires its
/// replaced values into.  Sealed: implemented by this crate's domains only.
///
/// ```
/// fn takes_any<D: barrierd::Domain>(_: &D) {}
/// let d = barrierd::EpochDomain::with_membarrier(0)?;
/// takes_any(&d);
/// # Ok::<(), barrierd::Error>(())
/// ```
pub trait Domain: sealed::Sealed {
    /// Hand `ptr` to the library's `retire()`: it calls `free(ptr)` once no reader can hold
    /// it, and returns 0, or a negative errno when it did not take `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be unlinked (no new reader can reach it), never linked again, and `free`
    /// must be the right way to free it, callable from any thread.
    #[doc(hidden)]
    unsafe fn retire_raw(&self, ptr: *mut c_void, free: sys::barrierd_free_fn) -> c_int;

    /// The domain's address, to check that a reader's record belongs to a cell's domain.
    #[doc(hidden)]
    fn id(&self) -> *const c_void;
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// Retire `obj` into `domain`: it is dropped once no reader can hold it.  On an error the
/// library did not take it, and it comes back.
pub(crate) fn retire_box<D: Domain + ?Sized, T: Send + 'static>(
    domain: &D,
    obj: Box<T>,
) -> Result<(), (Error, Box<T>)> {
    let ptr = Box::into_raw(obj);
    // SAFETY: the Box was ours, so nobody else reaches it; drop_box::<T> frees a Box<T>, and
    // T: Send lets it be dropped in another thread, T: 'static at any later time.
    let rc = unsafe { domain.retire_raw(ptr.cast(), Some(drop_box::<T>)) };
    if rc < 0 {
        // SAFETY: a negative return means the library did not take ptr: it is still ours.
        return Err((Error::from_errno(-rc), unsafe { Box::from_raw(ptr) }));
    }
    Ok(())
}

/// The free function: drops the `Box<T>`.  It runs inside the library, so a panic in `T`'s
/// `Drop` must not unwind through C: the process aborts instead.
pub(crate) unsafe extern "C" fn drop_box<T>(ptr: *mut c_void) {
    let obj = Box::from_raw(ptr as *mut T);
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(obj))).is_err() {
        eprintln!("barrierd: a retired object's Drop panicked inside a reclaim; aborting");
        process::abort();
    }
}
