// SPDX-License-Identifier: MIT
//! `ReclaimCell`: an owned, atomically replaceable `Box<T>` whose replaced values are
//! retired into a reclamation domain, so that readers of that domain may use them safely.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::retire::retire_box;
use crate::Domain;
use crate::{EpochDomain, EpochGuard, Error, HpDomain, HpGuard, HpRecord};

/// A shared pointer to a `T` that writers replace and readers use without locks: readers of
/// an [`EpochDomain`] with [`load`](Self::load) inside a section, readers of an
/// [`HpDomain`] with [`protect`](Self::protect).  A replaced value is retired into the cell's
/// domain, which drops it once no reader can hold it.  The cell owns its current value and
/// drops it with itself.
///
/// A reader must use a guard or record of the cell's own domain: one of another domain
/// would not keep the value alive, so `load` and `protect` panic on it.
///
/// ```
/// use barrierd::{EpochDomain, ReclaimCell};
/// let domain = EpochDomain::with_membarrier(0)?;
/// let config = ReclaimCell::new(&domain, Box::new(String::from("v1")));
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let mut r = domain.register().unwrap();
///         let g = r.enter();
///         let v = config.load(&g); // "v1" or "v2", alive until g drops
///         assert!(v.starts_with('v'));
///     });
///     config.replace(Box::new(String::from("v2"))).unwrap();
/// });
/// # Ok::<(), barrierd::Error>(())
/// ```
pub struct ReclaimCell<'d, D: Domain, T> {
    ptr: AtomicPtr<T>,
    domain: &'d D,
    _owns: PhantomData<Box<T>>,
}

// SAFETY: readers on other threads get &T (T: Sync), and replaced values are dropped in
// whichever thread reclaims them (T: Send); the domain is Sync.
unsafe impl<D: Domain + Sync, T: Send + Sync> Sync for ReclaimCell<'_, D, T> {}
unsafe impl<D: Domain + Sync, T: Send> Send for ReclaimCell<'_, D, T> {}

impl<'d, D: Domain, T: Send + 'static> ReclaimCell<'d, D, T> {
    /// A cell holding `value`, retiring into `domain`.
    ///
    /// ```
    /// let d = barrierd::HpDomain::with_membarrier(0)?;
    /// let cell = barrierd::ReclaimCell::new(&d, Box::new(1));
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn new(domain: &'d D, value: Box<T>) -> Self {
        ReclaimCell {
            ptr: AtomicPtr::new(Box::into_raw(value)),
            domain,
            _owns: PhantomData,
        }
    }

    /// Publish `value` (a release store: its contents are visible to a reader that loads it)
    /// and retire the old value.  On an error (`OutOfMemory`: the domain could not take the
    /// old value) the new value is in place and the old one is leaked: readers may still hold
    /// it, so it can neither be freed nor given back.
    ///
    /// With an [`EpochDomain`], **never call it inside a section of the calling thread**
    /// (while one of its [`EpochGuard`]s lives): the retire that fills a batch synchronizes
    /// with no deadline, and would wait for that section, its own, for ever (as
    /// [`Domain::retire`] and [`EpochDomain::synchronize`] warn).
    ///
    /// ```
    /// let d = barrierd::EpochDomain::with_membarrier(0)?;
    /// let cell = barrierd::ReclaimCell::new(&d, Box::new(1));
    /// cell.replace(Box::new(2))?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn replace(&self, value: Box<T>) -> Result<(), Error> {
        let old = self.ptr.swap(Box::into_raw(value), Ordering::AcqRel);
        // SAFETY: old came from Box::into_raw and is unlinked now; only this swap returned it.
        let old = unsafe { Box::from_raw(old) };
        retire_box(self.domain, old).map_err(|(e, old)| {
            Box::leak(old);
            e
        })
    }

    /// The current value, for the cell's owner (no reader can hold it: `&mut self`).
    ///
    /// ```
    /// let d = barrierd::EpochDomain::with_membarrier(0)?;
    /// let mut cell = barrierd::ReclaimCell::new(&d, Box::new(1));
    /// *cell.get_mut() += 1;
    /// assert_eq!(*cell.get_mut(), 2);
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: the pointer is always a live Box, and &mut self excludes readers.
        unsafe { &mut *self.ptr.load(Ordering::Relaxed) }
    }
}

impl<'d, 'b, T> ReclaimCell<'d, EpochDomain<'b>, T> {
    /// The current value, alive until the section `guard` ends.  Panics if the guard is of
    /// another domain.
    ///
    /// ```
    /// let d = barrierd::EpochDomain::with_membarrier(0)?;
    /// let cell = barrierd::ReclaimCell::new(&d, Box::new(7));
    /// let mut r = d.register()?;
    /// let g = r.enter();
    /// assert_eq!(*cell.load(&g), 7);
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    #[inline]
    pub fn load<'g>(&'g self, guard: &'g EpochGuard<'_>) -> &'g T {
        assert!(
            guard.domain_id() == self.domain.id(),
            "ReclaimCell::load: the guard belongs to another epoch domain"
        );
        // SAFETY: the value was linked when loaded inside the section; a replace retires it
        // into this domain, which frees it only after every section older than the retire has
        // ended, so not before the guard drops ('g).
        unsafe { &*self.ptr.load(Ordering::Acquire) }
    }
}

impl<'d, 'b, T> ReclaimCell<'d, HpDomain<'b>, T> {
    /// The current value, protected in a free slot of `record` until the guard drops.
    /// `None` when every slot of the record is held.  Panics if the record is of another
    /// domain.
    ///
    /// ```
    /// let d = barrierd::HpDomain::with_membarrier(0)?;
    /// let cell = barrierd::ReclaimCell::new(&d, Box::new(7));
    /// let r = d.register()?;
    /// assert_eq!(*cell.protect(&r).unwrap(), 7);
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    #[inline]
    pub fn protect<'g>(&'g self, record: &'g HpRecord<'_>) -> Option<HpGuard<'g, T>> {
        assert!(
            record.domain_id() == self.domain.id(),
            "ReclaimCell::protect: the record belongs to another hazard-pointer domain"
        );
        let (slot, ptr) = record.protect(&self.ptr)?;
        Some(HpGuard::new(record, slot, ptr))
    }
}

impl<D: Domain, T> Drop for ReclaimCell<'_, D, T> {
    fn drop(&mut self) {
        // SAFETY: the pointer is a live Box; &mut self: no reader holds a guard on the cell
        // (guards borrow it), and values readers may still hold were retired, not this one.
        drop(unsafe { Box::from_raw(*self.ptr.get_mut()) });
    }
}
