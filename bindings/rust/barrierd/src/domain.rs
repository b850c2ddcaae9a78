// SPDX-License-Identifier: MIT
//! What the two reclamation domains share: the C domain's life (new, free), its retire and
//! reclaim calls, and the `Domain` trait through which cells and callers retire into either.

use std::os::raw::{c_int, c_uint, c_void};
use std::ptr::NonNull;

use barrierd_sys as sys;

use crate::retire::retire_box;
use crate::{Error, Result};

/// The C functions of one kind of domain (`barrierd_epoch_*` or `barrierd_hp_*`).
pub(crate) struct Ops<D: 'static> {
    pub new: unsafe extern "C" fn(*mut sys::barrierd, c_uint) -> *mut D,
    pub free: unsafe extern "C" fn(*mut D),
    pub retire: unsafe extern "C" fn(*mut D, *mut c_void, sys::barrierd_free_fn) -> c_int,
    pub reclaim: unsafe extern "C" fn(*mut D) -> c_int,
}

/// An allocated C domain, freed (with its final reclaim) when dropped.
pub(crate) struct Core<D: 'static> {
    raw: NonNull<D>,
    pub ops: &'static Ops<D>,
}

impl<D> Core<D> {
    /// A domain over `b` (NULL: membarrier(GLOBAL)), which the caller keeps alive longer.
    pub fn new(ops: &'static Ops<D>, b: *mut sys::barrierd, batch: u32) -> Result<Core<D>> {
        // SAFETY: b is NULL or a live handle that outlives the domain (the caller's lifetime).
        let raw = unsafe { (ops.new)(b, batch) };
        let raw = NonNull::new(raw).ok_or(Error::OutOfMemory)?;
        Ok(Core { raw, ops })
    }

    #[inline]
    pub fn raw(&self) -> *mut D {
        self.raw.as_ptr()
    }
}

impl<D> Drop for Core<D> {
    fn drop(&mut self) {
        // SAFETY: the wrapper drops its core only once nothing borrows it (no record, guard or
        // cell), so no reader is inside; the final reclaim drops what is still retired.
        unsafe { (self.ops.free)(self.raw.as_ptr()) }
    }
}

/// A reclamation domain ([`EpochDomain`](crate::EpochDomain) or
/// [`HpDomain`](crate::HpDomain)): objects retired into it are dropped once no reader of the
/// domain can hold them.  Sealed: implemented by this crate's domains only.
///
/// ```
/// use barrierd::Domain;
/// let d = barrierd::EpochDomain::with_membarrier(0)?;
/// d.retire(Box::new(1u8)).map_err(|(e, _)| e)?;
/// d.reclaim()?;
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

    /// The library's reclaim: 0 or a negative errno.
    #[doc(hidden)]
    fn reclaim_raw(&self) -> c_int;

    /// The domain's address, to check that a reader's record belongs to a cell's domain.
    #[doc(hidden)]
    fn id(&self) -> *const c_void;

    /// Take ownership of `obj` (already unreachable for new readers, never reachable again)
    /// and drop it once no reader of the domain can hold it.  Batched: every `batch`-th call
    /// takes a barrier (epochs: a synchronize with no deadline; hazard pointers: a scan) and
    /// drops what it may, in this thread.  On an error (`OutOfMemory`) `obj` was not taken
    /// and comes back.  With epochs, never inside a section of the calling thread (its
    /// synchronize would wait for the caller itself).
    ///
    /// ```
    /// use barrierd::Domain;
    /// let d = barrierd::HpDomain::with_membarrier(0)?;
    /// d.retire(Box::new([0u8; 64])).map_err(|(e, _)| e)?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    fn retire<T: Send + 'static>(&self, obj: Box<T>) -> std::result::Result<(), (Error, Box<T>)> {
        retire_box(self, obj)
    }

    /// Barrier (epochs: synchronize, no deadline; hazard pointers: barrier and scan) and drop
    /// now what no reader can hold.  Errors: the barrier's (the objects stay retired),
    /// `OutOfMemory` (leaked, never freed under a reader), `WouldDeadlock` from inside a
    /// retired object's `Drop`.
    ///
    /// ```
    /// use barrierd::Domain;
    /// let d = barrierd::EpochDomain::with_membarrier(0)?;
    /// d.reclaim()?; // nothing retired: Ok
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    fn reclaim(&self) -> Result<()> {
        Error::check(self.reclaim_raw())
    }
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// `Domain` for a wrapper whose `core` field is a [`Core`].
macro_rules! impl_domain {
    ($ty:ident) => {
        impl $crate::domain::sealed::Sealed for $ty<'_> {}

        impl $crate::domain::Domain for $ty<'_> {
            unsafe fn retire_raw(
                &self,
                ptr: *mut std::os::raw::c_void,
                free: barrierd_sys::barrierd_free_fn,
            ) -> std::os::raw::c_int {
                (self.core.ops.retire)(self.core.raw(), ptr, free)
            }

            fn reclaim_raw(&self) -> std::os::raw::c_int {
                // SAFETY: the domain is live.
                unsafe { (self.core.ops.reclaim)(self.core.raw()) }
            }

            #[inline]
            fn id(&self) -> *const std::os::raw::c_void {
                self.core.raw() as *const std::os::raw::c_void
            }
        }
    };
}
pub(crate) use impl_domain;
