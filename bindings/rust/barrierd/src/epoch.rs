// SPDX-License-Identifier: MIT
//! Epochs (`barrierd_reclaim.h`): readers enter and leave sections with plain loads and
//! stores, writers retire objects that are freed once every older section has ended.  The
//! read side is the header's inline functions, written again here.

use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::time::Duration;

use barrierd_sys as sys;

use crate::domain::{impl_domain, Core, Ops};
use crate::timeout::timeout_ns;
use crate::{Barrierd, Error, Result};

/// An epoch domain over a [`Barrierd`] handle (which it borrows: the handle must outlive
/// it), or over `membarrier(MEMBARRIER_CMD_GLOBAL)`.
///
/// `Send` and `Sync`: the header's synchronize "takes no lock: may run in several threads
/// at once", retire and reclaim serialise on the domain's mutex, and register claims records
/// with a compare-and-swap.  Only `barrierd_epoch_free()` needs the domain alone, and it runs
/// in `Drop`, once no record or cell borrows the domain (so no reader is inside).
///
/// ```
/// # let b = barrierd::__doc_open();
/// use barrierd::Domain; // retire, reclaim
/// let domain = barrierd::EpochDomain::new(&b, 16)?;
/// let cell = barrierd::ReclaimCell::new(&domain, Box::new(1u64));
/// let mut reader = domain.register()?;
/// {
///     let guard = reader.enter();
///     assert_eq!(*cell.load(&guard), 1);
/// }
/// cell.replace(Box::new(2))?; // the 1 is freed once no section can hold it
/// domain.reclaim()?;
/// # Ok::<(), barrierd::Error>(())
/// ```
pub struct EpochDomain<'b> {
    core: Core<sys::barrierd_epoch>,
    _handle: PhantomData<&'b Barrierd>,
}

static OPS: Ops<sys::barrierd_epoch> = Ops {
    new: sys::barrierd_epoch_new,
    free: sys::barrierd_epoch_free,
    retire: sys::barrierd_epoch_retire,
    reclaim: sys::barrierd_epoch_reclaim,
};

// SAFETY: see the type's documentation.
unsafe impl Send for EpochDomain<'_> {}
unsafe impl Sync for EpochDomain<'_> {}

impl<'b> EpochDomain<'b> {
    /// A domain whose barrier is `b`'s.  `batch`: retired objects held before a retire
    /// reclaims by itself (0: 64).  `OutOfMemory` if it cannot be allocated.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let domain = barrierd::EpochDomain::new(&b, 0)?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn new(b: &'b Barrierd, batch: u32) -> Result<EpochDomain<'b>> {
        Ok(Self {
            core: Core::new(&OPS, b.as_raw(), batch)?,
            _handle: PhantomData,
        })
    }

    /// The calling thread's reader record.  `OutOfMemory` if it cannot be allocated.
    ///
    /// ```
    /// let domain = barrierd::EpochDomain::with_membarrier(0)?;
    /// let mut r = domain.register()?;
    /// drop(r.enter());
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn register(&self) -> Result<EpochRecord<'_>> {
        // SAFETY: the domain is live; register is thread-safe.
        let raw = unsafe { sys::barrierd_epoch_register(self.core.raw()) };
        let raw = NonNull::new(raw).ok_or(Error::OutOfMemory)?;
        Ok(EpochRecord {
            raw,
            domain: NonNull::new(self.core.raw()).unwrap(),
            _domain: PhantomData,
            _thread: PhantomData,
        })
    }

    /// Wait until every section that may have seen memory unlinked before the call has
    /// ended (`None`: no deadline; a reader that never leaves then blocks the call for ever).
    /// Never call it inside a section of the calling thread: it would wait for itself.
    /// Errors: `TimedOut`, or the barrier's.
    ///
    /// ```
    /// let domain = barrierd::EpochDomain::with_membarrier(0)?;
    /// domain.synchronize(Some(std::time::Duration::from_secs(1)))?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn synchronize(&self, timeout: Option<Duration>) -> Result<()> {
        // SAFETY: the domain is live; synchronize takes no lock.
        Error::check(unsafe {
            sys::barrierd_epoch_synchronize(self.core.raw(), timeout_ns(timeout))
        })
    }
}

impl EpochDomain<'static> {
    /// A domain whose barrier is `membarrier(MEMBARRIER_CMD_GLOBAL)` (an RCU grace period,
    /// milliseconds) instead of barrierd's.
    ///
    /// ```
    /// let domain = barrierd::EpochDomain::with_membarrier(64)?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn with_membarrier(batch: u32) -> Result<EpochDomain<'static>> {
        Ok(Self {
            core: Core::new(&OPS, ptr::null_mut(), batch)?,
            _handle: PhantomData,
        })
    }
}

impl_domain!(EpochDomain);

/// A reader's record: one per thread, used only by the thread that registered it.  Neither
/// `Send` nor `Sync`: the header's records are "used only by its thread", and a section's
/// argument is about the stores of the thread that entered it.  Dropping it unregisters it.
///
/// ```
/// let domain = barrierd::EpochDomain::with_membarrier(0)?;
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let mut r = domain.register().unwrap(); // in the reader's own thread
///         let _section = r.enter();
///     });
/// });
/// # Ok::<(), barrierd::Error>(())
/// ```
pub struct EpochRecord<'d> {
    raw: NonNull<sys::barrierd_epoch_record>,
    domain: NonNull<sys::barrierd_epoch>,
    _domain: PhantomData<&'d ()>,
    _thread: PhantomData<*mut ()>,
}

impl<'d> EpochRecord<'d> {
    /// Enter a read section: a load of the domain's epoch and a plain store, then a compiler
    /// fence; no fence instruction, no locked instruction.  What the section loads may be used
    /// until the guard drops.  Takes `&mut self`: sections on one record do not nest (an inner
    /// enter would overwrite the outer epoch, an inner exit end the outer section early).
    /// Not for signal handlers on the interrupted thread's record.
    ///
    /// ```
    /// let domain = barrierd::EpochDomain::with_membarrier(0)?;
    /// let mut r = domain.register()?;
    /// let g = r.enter();
    /// drop(g); // exit
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    #[inline]
    pub fn enter(&mut self) -> EpochGuard<'_> {
        let (active, global) = self.words();
        // SAFETY: the domain's epoch word lives as long as the domain, and is only ever
        // written atomically (the writers' locked increment).
        let epoch = unsafe { (*global).load(Ordering::Relaxed) };
        active.store(epoch, Ordering::Relaxed);
        // The section's loads stay after the store for the compiler; x86 needs nothing more
        // (the writer's barrier stands in for the store-load fence).
        compiler_fence(Ordering::SeqCst);
        EpochGuard {
            record: self.raw,
            domain: self.domain.as_ptr() as *const c_void,
            _record: PhantomData,
        }
    }

    #[inline]
    fn words(&self) -> (&AtomicU64, *const AtomicU64) {
        // SAFETY: the record lives until unregistered (Drop); active is its first field, 8-byte
        // aligned, and only this thread writes it (the writers' scans read it).
        unsafe {
            let r = self.raw.as_ptr();
            (
                &*(ptr::addr_of!((*r).active) as *const AtomicU64),
                (*r).global as *const AtomicU64,
            )
        }
    }
}

impl Drop for EpochRecord<'_> {
    fn drop(&mut self) {
        // SAFETY: no guard borrows the record; the domain outlives it ('d).
        unsafe { sys::barrierd_epoch_unregister(self.domain.as_ptr(), self.raw.as_ptr()) }
    }
}

/// An epoch read section: dropping it exits (a plain store, release for the compiler; x86
/// does not reorder a store with older loads).
///
/// ```
/// let domain = barrierd::EpochDomain::with_membarrier(0)?;
/// let cell = barrierd::ReclaimCell::new(&domain, Box::new("x"));
/// let mut r = domain.register()?;
/// let g = r.enter();
/// let v: &&str = cell.load(&g);
/// assert_eq!(*v, "x");
/// # Ok::<(), barrierd::Error>(())
/// ```
pub struct EpochGuard<'r> {
    record: NonNull<sys::barrierd_epoch_record>,
    domain: *const c_void,
    _record: PhantomData<&'r mut ()>,
}

impl EpochGuard<'_> {
    #[inline]
    pub(crate) fn domain_id(&self) -> *const c_void {
        self.domain
    }
}

impl Drop for EpochGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the record outlives the guard ('r), and only this thread writes active.
        let active =
            unsafe { &*(ptr::addr_of!((*self.record.as_ptr()).active) as *const AtomicU64) };
        active.store(0, Ordering::Release);
    }
}
