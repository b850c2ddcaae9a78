// SPDX-License-Identifier: MIT
//! Event counts (`barrierd_ec.h`): counters that producers increment for one instruction when
//! nobody waits, and that waiters block on until they move.  The increments are the header's
//! inline functions, written again here (the library does not export them).

use std::any::Any;
use std::cell::UnsafeCell;
use std::mem;
use std::os::raw::{c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use barrierd_sys as sys;

use crate::timeout::timeout_ns;
use crate::{Barrierd, Error, Result};

/// The largest delta one increment may add (the header's limit).
///
/// The value has 63 bits and is counted modulo 2^63: two increments of `MAX_DELTA` bring it
/// back to where it was.  A waiter's `old` value must not be lapped: if the value moves by a
/// multiple of 2^63 between the waiter's read and its wait, the wait sees no move and goes on
/// waiting.  Increments of 1 need 2^63 of them to lap it (centuries); callers adding huge
/// deltas keep their total between a waiter's read and its wait below 2^63.
///
/// ```
/// let ec = barrierd::EventCount::new(0);
/// ec.add(barrierd::MAX_DELTA);
/// assert_eq!(ec.value(), 1 << 62);
/// ```
pub const MAX_DELTA: u64 = 1 << 62;

/// How a [`Waitable::wait_until`] ended.
///
/// ```
/// let ec = barrierd::EventCount::new(0);
/// let how = ec.wait_until(None, 0, None, |_| true)?;
/// assert_eq!(how, barrierd::Woken::Predicate);
/// # Ok::<(), barrierd::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The value moved past the old one.
    Moved,
    /// The predicate asked to stop (the value need not have moved).
    Predicate,
}

/// The side of an event count that reads and waits, shared by both kinds: [`EventCount`] and
/// [`SpEventCount`] dereference to it.  Its memory is `struct barrierd_ec`, which the
/// library's waits and the increments share (the control word is ABI:
/// `value << 1 | sleepers flag`).
///
/// ```
/// let ec = barrierd::EventCount::new(3);
/// let w: &barrierd::Waitable = &ec;
/// assert_eq!(w.value(), 3);
/// ```
pub struct Waitable(UnsafeCell<sys::barrierd_ec>);

// SAFETY: every access to the word is atomic (the multi-producer increments, the library's
// loads and compare-and-swaps), except the single producer's unlocked xadd: there is one
// producer (SpEventCount::producer hands it out once, and it needs &mut), and the waiters'
// barrier covers its race (barrierd_ec.h).  So both kinds are Send and Sync through it.
unsafe impl Send for Waitable {}
unsafe impl Sync for Waitable {}

impl Waitable {
    fn new(value: u64) -> Waitable {
        assert!(
            value < 1 << 63,
            "an event count's value is below 2^63, not {value}"
        );
        let raw = Waitable(UnsafeCell::new(sys::barrierd_ec::default()));
        // SAFETY: nobody else sees the event count yet; the value is in range, the flags 0.
        let rc = unsafe { sys::barrierd_ec_init(raw.0.get(), value, 0) };
        debug_assert_eq!(rc, 0);
        raw
    }

    #[inline]
    fn word(&self) -> &AtomicU64 {
        // SAFETY: word is the struct's first field, 8-byte aligned as AtomicU64 needs, and
        // every access to it (ours and the library's) is atomic, except the single producer's
        // unlocked xadd below, which is one instruction (the header's contract).
        unsafe { &*(self.0.get() as *const AtomicU64) }
    }

    /// The current value (63 bits), one acquire load.
    ///
    /// ```
    /// let ec = barrierd::EventCount::new(0);
    /// ec.add(5);
    /// assert_eq!(ec.value(), 5);
    /// ```
    #[inline]
    pub fn value(&self) -> u64 {
        self.word().load(Ordering::Acquire) >> 1
    }

    fn wake(&self) {
        // SAFETY: called only by an increment that read the sleepers flag, as the header asks.
        unsafe { sys::barrierd_ec_wake(self.0.get()) }
    }

    /// Wait until the value differs from `old`, or `timeout` runs out (`None`: none).
    /// `b`: the handle whose barrier closes the single producer's race (multi-producer
    /// increments need none, but the library's wait takes one); `None` waits ck_ec's
    /// conservative second before it blocks for good.  Errors: `TimedOut`, `InvalidArgument`.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let ec = barrierd::EventCount::new(4);
    /// ec.wait(Some(&b), 3, None)?; // already moved past 3: returns at once
    /// let e = ec.wait(Some(&b), 4, Some(std::time::Duration::from_millis(1))).unwrap_err();
    /// assert_eq!(e, barrierd::Error::TimedOut);
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn wait(&self, b: Option<&Barrierd>, old: u64, timeout: Option<Duration>) -> Result<()> {
        let b = b.map_or(ptr::null_mut(), Barrierd::as_raw);
        // SAFETY: the event count and the handle outlive the call; the wait is thread-safe.
        Error::check(unsafe { sys::barrierd_ec_wait(self.0.get(), b, old, timeout_ns(timeout)) })
    }

    /// [`wait`](Self::wait), and `pred(value)` is called before every sleep and after every
    /// wake-up: `true` ends the wait.  `pred` must not block.  A panic in `pred` ends the
    /// wait and is resumed in the caller.
    ///
    /// ```
    /// let ec = barrierd::SpEventCount::new(0);
    /// let mut calls = 0;
    /// let how = ec.wait_until(None, 0, None, |_| { calls += 1; calls == 2 })?;
    /// assert_eq!((how, calls), (barrierd::Woken::Predicate, 2));
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn wait_until<F: FnMut(u64) -> bool>(
        &self,
        b: Option<&Barrierd>,
        old: u64,
        timeout: Option<Duration>,
        mut pred: F,
    ) -> Result<Woken> {
        let mut ctx = PredCtx {
            pred: &mut pred,
            panic: None,
        };
        let b = b.map_or(ptr::null_mut(), Barrierd::as_raw);
        // SAFETY: ctx outlives the call, and the trampoline is its only user meanwhile.
        let rc = unsafe {
            sys::barrierd_ec_wait_pred(
                self.0.get(),
                b,
                old,
                Some(pred_trampoline),
                &mut ctx as *mut PredCtx as *mut c_void,
                timeout_ns(timeout),
            )
        };
        if let Some(p) = ctx.panic {
            panic::resume_unwind(p);
        }
        match rc {
            0 => Ok(Woken::Moved),
            rc if rc > 0 => Ok(Woken::Predicate),
            rc => Err(Error::from_errno(-rc)),
        }
    }
}

struct PredCtx<'a> {
    pred: &'a mut dyn FnMut(u64) -> bool,
    panic: Option<Box<dyn Any + Send>>,
}

/// The C predicate: calls the closure with the current value.  A panic must not unwind
/// through C: it is caught, ends the wait (1), and is resumed once the library returned.
/// Nothing else here can panic, and no payload is dropped inside the library: a second one
/// (the library calls no predicate after a 1, but should it) is forgotten.
unsafe extern "C" fn pred_trampoline(ec: *const sys::barrierd_ec, arg: *mut c_void) -> c_int {
    let ctx = &mut *(arg as *mut PredCtx);
    let value = (*(ec as *const AtomicU64)).load(Ordering::Acquire) >> 1;
    match panic::catch_unwind(AssertUnwindSafe(|| (ctx.pred)(value))) {
        Ok(stop) => stop as c_int,
        Err(p) => {
            if ctx.panic.is_none() {
                ctx.panic = Some(p);
            } else {
                mem::forget(p);
            }
            1
        }
    }
}

#[inline]
fn check_delta(delta: u64) {
    assert!(
        delta <= MAX_DELTA,
        "an event count increment adds at most 2^62, not {delta}"
    );
}

/// A multi-producer event count: any number of threads increment it (one `lock xadd`), and
/// any number wait for it to move.
///
/// `Send` and `Sync`: every access to its word is atomic (the increments) or a call of the
/// library's waits, which are written for concurrent producers and waiters.
///
/// ```
/// use barrierd::EventCount;
/// let ec = EventCount::new(0);
/// std::thread::scope(|s| {
///     s.spawn(|| ec.inc());
///     ec.wait(None, 0, None).unwrap(); // returns once the value is no longer 0
/// });
/// assert_eq!(ec.value(), 1);
/// ```
pub struct EventCount(Waitable);

impl EventCount {
    /// An event count at `value` (below 2^63; panics otherwise).
    ///
    /// ```
    /// assert_eq!(barrierd::EventCount::new(7).value(), 7);
    /// ```
    pub fn new(value: u64) -> EventCount {
        EventCount(Waitable::new(value))
    }

    /// Add one.
    ///
    /// ```
    /// let ec = barrierd::EventCount::new(0);
    /// ec.inc();
    /// assert_eq!(ec.value(), 1);
    /// ```
    #[inline]
    pub fn inc(&self) {
        self.add(1)
    }

    /// Add `delta` (at most [`MAX_DELTA`]; panics otherwise) with one locked `xadd`, and wake
    /// the sleepers if its result shows the flag.  An add of 0 does nothing.
    ///
    /// ```
    /// let ec = barrierd::EventCount::new(1);
    /// ec.add(0);
    /// ec.add(2);
    /// assert_eq!(ec.value(), 3);
    /// ```
    #[inline]
    pub fn add(&self, delta: u64) {
        check_delta(delta);
        if delta == 0 {
            return;
        }
        let old = self.0.word().fetch_add(delta << 1, Ordering::SeqCst);
        if old & sys::BARRIERD_EC_FLAG != 0 {
            self.0.wake();
        }
    }
}

impl std::ops::Deref for EventCount {
    type Target = Waitable;
    /// [`value`](Waitable::value), [`wait`](Waitable::wait) and
    /// [`wait_until`](Waitable::wait_until).
    #[inline]
    fn deref(&self) -> &Waitable {
        &self.0
    }
}

/// A single-producer event count: one [`SpProducer`] increments it with one `xadd` without
/// `lock`; any number of threads wait.  The waiters' barrier (their `b`) is what makes the
/// unlocked increment safe: pass a live handle, or they wait ck_ec's second before blocking.
///
/// ```
/// # let b = barrierd::__doc_open();
/// let ec = barrierd::SpEventCount::new(0);
/// let mut producer = ec.producer().expect("the first call gets the producer");
/// assert!(ec.producer().is_none());
/// std::thread::scope(|s| {
///     s.spawn(move || producer.inc());
///     ec.wait(Some(&b), 0, None).unwrap();
/// });
/// assert_eq!(ec.value(), 1);
/// ```
pub struct SpEventCount {
    raw: Waitable,
    taken: AtomicBool,
}

impl SpEventCount {
    /// A single-producer event count at `value` (below 2^63; panics otherwise).
    ///
    /// ```
    /// assert_eq!(barrierd::SpEventCount::new(2).value(), 2);
    /// ```
    pub fn new(value: u64) -> SpEventCount {
        SpEventCount {
            raw: Waitable::new(value),
            taken: AtomicBool::new(false),
        }
    }

    /// The producer: `Some` once, `None` ever after (one thread increments, and only with the
    /// unlocked forms: a locked add racing an unlocked one can be lost).
    ///
    /// ```
    /// let ec = barrierd::SpEventCount::new(0);
    /// assert!(ec.producer().is_some());
    /// assert!(ec.producer().is_none());
    /// ```
    pub fn producer(&self) -> Option<SpProducer<'_>> {
        if self.taken.swap(true, Ordering::AcqRel) {
            None
        } else {
            Some(SpProducer { ec: self })
        }
    }
}

impl std::ops::Deref for SpEventCount {
    type Target = Waitable;
    /// [`value`](Waitable::value), [`wait`](Waitable::wait) and
    /// [`wait_until`](Waitable::wait_until).
    #[inline]
    fn deref(&self) -> &Waitable {
        &self.raw
    }
}

/// The one producer of an [`SpEventCount`].
///
/// ```
/// let ec = barrierd::SpEventCount::new(0);
/// let mut p = ec.producer().unwrap();
/// p.add(3);
/// p.inc();
/// assert_eq!(ec.value(), 4);
/// ```
pub struct SpProducer<'a> {
    ec: &'a SpEventCount,
}

impl SpProducer<'_> {
    /// Add one.
    ///
    /// ```
    /// let ec = barrierd::SpEventCount::new(0);
    /// ec.producer().unwrap().inc();
    /// assert_eq!(ec.value(), 1);
    /// ```
    #[inline]
    pub fn inc(&mut self) {
        self.add(1)
    }

    /// Add `delta` (at most [`MAX_DELTA`]; panics otherwise) with ONE unlocked `xadd`: an
    /// interrupt lands between instructions, which is what lets a waiter's barrier prove that
    /// no increment that read the word without the flag is still in flight.  An add of 0 does
    /// nothing (a waiter counts on every store of the producer moving the value).
    ///
    /// ```
    /// let ec = barrierd::SpEventCount::new(0);
    /// ec.producer().unwrap().add(10);
    /// assert_eq!(ec.value(), 10);
    /// ```
    #[inline]
    pub fn add(&mut self, delta: u64) {
        check_delta(delta);
        if delta == 0 {
            return;
        }
        let word = self.ec.raw.0.get() as *mut u64;
        let mut old = delta << 1;
        // SAFETY: word is valid and 8-byte aligned; only this producer stores to it besides
        // the waiters' locked CAS, and the waiters' barrier covers the race (barrierd_ec.h).
        // The asm! block is a compiler barrier for memory: earlier stores are not moved after
        // it, and x86 keeps them in order, so they are visible before the new value.
        unsafe {
            std::arch::asm!("xadd qword ptr [{w}], {v}", w = in(reg) word, v = inout(reg) old,
                            options(nostack));
        }
        if old & sys::BARRIERD_EC_FLAG != 0 {
            self.ec.raw.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{EventCount, SpEventCount};
    use std::time::Duration;

    #[test]
    fn increments_move_the_value_and_keep_the_flag_bit() {
        let ec = EventCount::new(0);
        ec.add(3);
        assert_eq!(ec.0.word().load(std::sync::atomic::Ordering::Relaxed), 6);
        let sp = SpEventCount::new(0);
        let mut p = sp.producer().unwrap();
        p.add(1 << 40);
        assert_eq!(sp.value(), 1 << 40);
    }

    #[test]
    #[should_panic(expected = "at most 2^62")]
    fn huge_delta_panics() {
        EventCount::new(0).add((1 << 62) + 1);
    }

    #[test]
    fn wait_times_out_without_a_daemon() {
        let ec = EventCount::new(0);
        let e = ec
            .wait(None, 0, Some(Duration::from_millis(5)))
            .unwrap_err();
        assert_eq!(e, crate::Error::TimedOut);
    }

    #[test]
    #[should_panic(expected = "from the predicate")]
    fn predicate_panic_resumes_in_the_caller() {
        let ec = EventCount::new(0);
        let _ = ec.wait_until(None, 0, None, |_| panic!("from the predicate"));
    }
}
