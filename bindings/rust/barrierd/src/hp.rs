// SPDX-License-Identifier: MIT
//! Hazard pointers (`barrierd_reclaim.h`): a reader publishes the pointer it uses in one of
//! its record's slots with plain stores; writers retire objects that are freed once no slot
//! holds them.  The read side is the header's inline functions, written again here.

use std::cell::Cell;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};
use std::sync::atomic::{compiler_fence, AtomicPtr, Ordering};

use barrierd_sys as sys;

use crate::domain::{impl_domain, Core, Ops};
use crate::{Barrierd, Error, Result};

/// A hazard-pointer domain over a [`Barrierd`] handle (which must outlive it), or over
/// `membarrier(MEMBARRIER_CMD_GLOBAL)`.
///
/// `Send` and `Sync` for the reasons given for [`EpochDomain`](crate::EpochDomain): retire
/// and reclaim serialise on the domain's mutex (scans run concurrently, each on its own
/// batch), register claims records with a compare-and-swap, and `barrierd_hp_free()` runs
/// only in `Drop`, once no record or cell borrows the domain.
///
/// ```
/// # let b = barrierd::__doc_open();
/// use barrierd::Domain; // retire, reclaim
/// let domain = barrierd::HpDomain::new(&b, 8)?;
/// let cell = barrierd::ReclaimCell::new(&domain, Box::new(String::from("a")));
/// let reader = domain.register()?;
/// let g = cell.protect(&reader).expect("a free slot");
/// cell.replace(Box::new(String::from("b")))?; // "a" stays alive while g holds it
/// assert_eq!(g.as_str(), "a");
/// drop(g);
/// domain.reclaim()?; // now "a" is freed
/// # Ok::<(), barrierd::Error>(())
/// ```
pub struct HpDomain<'b> {
    core: Core<sys::barrierd_hp>,
    _handle: PhantomData<&'b Barrierd>,
}

static OPS: Ops<sys::barrierd_hp> = Ops {
    new: sys::barrierd_hp_new,
    free: sys::barrierd_hp_free,
    retire: sys::barrierd_hp_retire,
    reclaim: sys::barrierd_hp_reclaim,
};

// SAFETY: see the type's documentation.
unsafe impl Send for HpDomain<'_> {}
unsafe impl Sync for HpDomain<'_> {}

impl<'b> HpDomain<'b> {
    /// A domain whose barrier is `b`'s; a scan every `batch` retirements (0: 64).
    /// `OutOfMemory` if it cannot be allocated.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let domain = barrierd::HpDomain::new(&b, 0)?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn new(b: &'b Barrierd, batch: u32) -> Result<HpDomain<'b>> {
        Ok(Self {
            core: Core::new(&OPS, b.as_raw(), batch)?,
            _handle: PhantomData,
        })
    }

    /// The calling thread's reader record.  `OutOfMemory` if it cannot be allocated.
    ///
    /// ```
    /// let domain = barrierd::HpDomain::with_membarrier(0)?;
    /// let r = domain.register()?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn register(&self) -> Result<HpRecord<'_>> {
        // SAFETY: the domain is live; register is thread-safe.
        let raw = unsafe { sys::barrierd_hp_register(self.core.raw()) };
        let raw = NonNull::new(raw).ok_or(Error::OutOfMemory)?;
        Ok(HpRecord {
            raw,
            domain: NonNull::new(self.core.raw()).unwrap(),
            used: Cell::new(0),
            _domain: PhantomData,
        })
    }
}

impl HpDomain<'static> {
    /// A domain whose barrier is `membarrier(MEMBARRIER_CMD_GLOBAL)`.
    ///
    /// ```
    /// let domain = barrierd::HpDomain::with_membarrier(0)?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn with_membarrier(batch: u32) -> Result<HpDomain<'static>> {
        Ok(Self {
            core: Core::new(&OPS, ptr::null_mut(), batch)?,
            _handle: PhantomData,
        })
    }
}

impl_domain!(HpDomain);

/// A reader's record: [`sys::BARRIERD_HP_SLOTS`] slots, used only by the thread that
/// registered it (neither `Send` nor `Sync`, as the header's records).  Each
/// [`HpGuard`] holds one slot until it drops.  Dropping the record unregisters it.
///
/// ```
/// let domain = barrierd::HpDomain::with_membarrier(0)?;
/// let r = domain.register()?;
/// assert_eq!(r.free_slots(), 4);
/// # Ok::<(), barrierd::Error>(())
/// ```
pub struct HpRecord<'d> {
    raw: NonNull<sys::barrierd_hp_record>,
    domain: NonNull<sys::barrierd_hp>,
    /// Slots held by a guard, one bit each: a second protection in a slot would overwrite
    /// the first, and its object could be freed under it.
    used: Cell<u8>,
    _domain: PhantomData<&'d ()>,
}

impl<'d> HpRecord<'d> {
    /// Slots not held by a guard.
    ///
    /// ```
    /// let domain = barrierd::HpDomain::with_membarrier(0)?;
    /// let cell = barrierd::ReclaimCell::new(&domain, Box::new(0));
    /// let r = domain.register()?;
    /// let _g = cell.protect(&r).unwrap();
    /// assert_eq!(r.free_slots(), 3);
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn free_slots(&self) -> usize {
        sys::BARRIERD_HP_SLOTS - self.used.get().count_ones() as usize
    }

    #[inline]
    pub(crate) fn domain_id(&self) -> *const c_void {
        self.domain.as_ptr() as *const c_void
    }

    /// Protect what `src` points to in a free slot: publish, re-load, until both agree (plain
    /// stores and loads, a compiler fence between: the writer's barrier before its scan
    /// stands in for the store-load fence).  `None` when every slot is held (or `src` is
    /// null).
    #[inline]
    pub(crate) fn protect<T>(&self, src: &AtomicPtr<T>) -> Option<(usize, NonNull<T>)> {
        let used = self.used.get();
        let slot = (0..sys::BARRIERD_HP_SLOTS).find(|s| used & (1 << s) == 0)?;
        let hp = self.slot(slot);
        let mut p = src.load(Ordering::Acquire);
        loop {
            hp.store(p.cast(), Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            let q = src.load(Ordering::Acquire);
            if q == p {
                break;
            }
            p = q;
        }
        match NonNull::new(p) {
            Some(p) => {
                self.used.set(used | 1 << slot);
                Some((slot, p))
            }
            None => {
                hp.store(ptr::null_mut(), Ordering::Release);
                None
            }
        }
    }

    #[inline]
    fn slot(&self, slot: usize) -> &AtomicPtr<c_void> {
        // SAFETY: the record lives until unregistered (Drop); the slots are pointer-aligned
        // words that only this thread writes (the writers' scans read them).
        unsafe { &*(ptr::addr_of!((*self.raw.as_ptr()).hp[slot]) as *const AtomicPtr<c_void>) }
    }

    #[inline]
    pub(crate) fn clear(&self, slot: usize) {
        self.slot(slot).store(ptr::null_mut(), Ordering::Release);
        self.used.set(self.used.get() & !(1 << slot));
    }
}

impl Drop for HpRecord<'_> {
    fn drop(&mut self) {
        // SAFETY: no guard borrows the record; the domain outlives it ('d).
        unsafe { sys::barrierd_hp_unregister(self.domain.as_ptr(), self.raw.as_ptr()) }
    }
}

/// A protected object: it is not freed while the guard lives.  Dropping it clears its slot.
///
/// ```
/// let domain = barrierd::HpDomain::with_membarrier(0)?;
/// let cell = barrierd::ReclaimCell::new(&domain, Box::new(vec![1, 2]));
/// let r = domain.register()?;
/// let g: barrierd::HpGuard<'_, Vec<i32>> = cell.protect(&r).unwrap();
/// assert_eq!(g.len(), 2);
/// # Ok::<(), barrierd::Error>(())
/// ```
pub struct HpGuard<'g, T> {
    record: &'g HpRecord<'g>,
    slot: usize,
    ptr: NonNull<T>,
}

impl<'g, T> HpGuard<'g, T> {
    #[inline]
    pub(crate) fn new(record: &'g HpRecord<'g>, slot: usize, ptr: NonNull<T>) -> Self {
        HpGuard { record, slot, ptr }
    }
}

impl<T> std::ops::Deref for HpGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the slot holds ptr since a validated protect, so no scan frees it until the
        // guard clears the slot.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> Drop for HpGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.record.clear(self.slot);
    }
}
