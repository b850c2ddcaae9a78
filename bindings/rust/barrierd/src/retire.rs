// SPDX-License-Identifier: MIT
//! Handing a `Box<T>` to a domain's `retire()`: its free function drops it later, in
//! whichever writer reclaims the batch.

use std::os::raw::c_void;

use crate::abort::or_abort;
use crate::{Domain, Error};

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
/// `Drop` must not unwind through C: the process aborts instead (`or_abort` neither drops the
/// panic's payload nor prints with `eprintln!`, either of which could panic again).
unsafe extern "C" fn drop_box<T>(ptr: *mut c_void) {
    let obj = Box::from_raw(ptr as *mut T);
    or_abort("a retired object's Drop", move || drop(obj));
}
