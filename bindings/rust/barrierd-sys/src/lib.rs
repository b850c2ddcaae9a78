// SPDX-License-Identifier: MIT
//! Raw declarations of libbarrierd's C API (`barrierd.h`, `barrierd_ec.h`,
//! `barrierd_reclaim.h`), written by hand and checked against the headers by
//! `tests/abi.rs`: every struct's size, alignment and field offsets, every constant, and every
//! exported function's signature, by the C compiler.
//!
//! The headers are the authority: each function's contract (what it guarantees, which
//! negative errno values it returns, what is thread-safe) is stated there and not repeated
//! here.  The safe API is the `barrierd` crate.  The header's inline functions (the event
//! count increments, the epoch and hazard-pointer read sides, the layout helpers) are not
//! exported by the library; the `barrierd` crate implements them in Rust, and the layout
//! helpers are here as `const fn`s.
//!
//! ```
//! // The ABI constants need no library call.
//! assert_eq!(barrierd_sys::BARRIERD_MAGIC.to_le_bytes(), *b"BARRIERD");
//! assert_eq!(std::mem::size_of::<barrierd_sys::barrierd_header>(), 128);
//! ```
#![allow(non_camel_case_types)]
#![warn(missing_docs)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_uint, c_void};

mod consts;
mod layout;
pub use consts::*;
pub use layout::*;

/// `uid_t` on Linux x86-64.
///
/// ```
/// let root: barrierd_sys::uid_t = 0;
/// assert_eq!(std::mem::size_of_val(&root), 4);
/// ```
pub type uid_t = u32;

/// The opaque handle, `struct barrierd`.
///
/// Only ever behind a pointer that [`barrierd_open`] returned.
///
/// ```
/// let none: *mut barrierd_sys::barrierd = std::ptr::null_mut();
/// unsafe { barrierd_sys::barrierd_close(none) }; // NULL is allowed
/// ```
#[repr(C)]
pub struct barrierd {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// An epoch domain, `struct barrierd_epoch` (opaque).
///
/// ```
/// let d = unsafe { barrierd_sys::barrierd_epoch_new(std::ptr::null_mut(), 0) };
/// assert!(!d.is_null());
/// unsafe { barrierd_sys::barrierd_epoch_free(d) };
/// ```
#[repr(C)]
pub struct barrierd_epoch {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// A hazard-pointer domain, `struct barrierd_hp` (opaque).
///
/// ```
/// let d = unsafe { barrierd_sys::barrierd_hp_new(std::ptr::null_mut(), 0) };
/// assert!(!d.is_null());
/// unsafe { barrierd_sys::barrierd_hp_free(d) };
/// ```
#[repr(C)]
pub struct barrierd_hp {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// `barrierd_credit_fn`: the credit observer's type.  Like every callback the library calls,
/// it must not unwind (undefined behaviour through C frames on Rust 1.63): catch a panic,
/// forget its payload (its `Drop` may panic too) and abort; no `eprintln!` (it panics when
/// stderr is a closed pipe).
///
/// ```
/// unsafe extern "C" fn seen(_: *mut std::os::raw::c_void, _: u64, _: u32, _: i32, _: u64) {}
/// let f: barrierd_sys::barrierd_credit_fn = Some(seen);
/// assert!(f.is_some());
/// ```
pub type barrierd_credit_fn = Option<
    unsafe extern "C" fn(arg: *mut c_void, stamp_ns: u64, cpu: c_uint, kind: c_int, value: u64),
>;

/// A free function of the reclamation domains, `void (*)(void *)`.  Must not unwind, as
/// [`barrierd_credit_fn`].
///
/// ```
/// unsafe extern "C" fn free_nothing(_: *mut std::os::raw::c_void) {}
/// let f: barrierd_sys::barrierd_free_fn = Some(free_nothing);
/// assert!(f.is_some());
/// ```
pub type barrierd_free_fn = Option<unsafe extern "C" fn(ptr: *mut c_void)>;

/// The predicate of [`barrierd_ec_wait_pred`], `int (*)(const struct barrierd_ec *, void *)`.
/// Must not unwind, as [`barrierd_credit_fn`].
///
/// ```
/// unsafe extern "C" fn never(_: *const barrierd_sys::barrierd_ec,
///                            _: *mut std::os::raw::c_void) -> i32 { 0 }
/// let f: barrierd_sys::barrierd_ec_pred_fn = Some(never);
/// assert!(f.is_some());
/// ```
pub type barrierd_ec_pred_fn =
    Option<unsafe extern "C" fn(ec: *const barrierd_ec, arg: *mut c_void) -> c_int>;

// The C API, in the headers' order.  One declaration per line group, as rustfmt writes it:
// tests/abi.rs reads this block back and has the C compiler compare it with the headers.
extern "C" {
    // ---- barrierd.h -------------------------------------------------------------------------
    /// `barrierd_open()`: check, validate and map the state file (`barrierd.h`).
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let mut b = std::ptr::null_mut();
    /// if barrierd_open(&mut b, std::ptr::null()) == 0 {
    ///     barrierd_close(b);
    /// }
    /// # }
    /// ```
    pub fn barrierd_open(out: *mut *mut barrierd, path: *const c_char) -> c_int;
    /// `barrierd_open_opts()`: the same with options (`barrierd.h`).
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let opts = barrierd_open_opts {
    ///     fallback: BARRIERD_FALLBACK_MEMBARRIER,
    ///     flags: BARRIERD_OPEN_ATTACH_LATER,
    ///     ..Default::default()
    /// };
    /// let mut b = std::ptr::null_mut();
    /// assert_eq!(barrierd_open_opts(&mut b, b"/nonexistent/state\0".as_ptr().cast(), &opts), 0);
    /// assert_eq!(barrierd_barrier(b, 1_000_000_000), 0); // membarrier(GLOBAL)
    /// barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_open_opts(
        out: *mut *mut barrierd,
        path: *const c_char,
        opts: *const barrierd_open_opts,
    ) -> c_int;
    /// `barrierd_close()`: unmap and free; NULL is allowed.  Not thread-safe on its handle.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_close(b: *mut barrierd);
    /// `barrierd_stamp_ns()`: MFENCE; LFENCE; the clock (host's clock in a time namespace).
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let t = barrierd_stamp_ns(b);
    /// assert!(t > barrierd_open_ns(b));
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_stamp_ns(b: *const barrierd) -> u64;
    /// `barrierd_stamp_vtime()`: MFENCE, then the published vtime.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let v = barrierd_stamp_vtime(b);
    /// assert_eq!(barrierd_wait_vtime(b, v, 1_000_000_000), 0);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_stamp_vtime(b: *const barrierd) -> u64;
    /// `barrierd_passed()`: has every CPU passed this stamp?  Loads only.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let t = barrierd_stamp_ns(b);
    /// assert_eq!(barrierd_wait(b, t, 1_000_000_000), 0);
    /// assert!(barrierd_passed(b, t));
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_passed(b: *const barrierd, stamp_ns: u64) -> bool;
    /// `barrierd_passed_vtime()`: the same for a vtime stamp.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let v = barrierd_stamp_vtime(b);
    /// assert_eq!(barrierd_wait_vtime(b, v, 1_000_000_000), 0);
    /// assert!(barrierd_passed_vtime(b, v));
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_passed_vtime(b: *const barrierd, vtime: u64) -> bool;
    /// `barrierd_wait()`: block until every CPU passed the stamp (timeout < 0: none).
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let t = barrierd_stamp_ns(b);
    /// assert_eq!(barrierd_wait(b, t, 1_000_000_000), 0);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_wait(b: *mut barrierd, stamp_ns: u64, timeout_ns: i64) -> c_int;
    /// `barrierd_wait_vtime()`: the same for a vtime stamp.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let v = barrierd_stamp_vtime(b);
    /// assert_eq!(barrierd_wait_vtime(b, v, -1), 0);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_wait_vtime(b: *mut barrierd, vtime: u64, timeout_ns: i64) -> c_int;
    /// `barrierd_wait_cpus()`: wait for the CPUs of a `cpu_set_t` only.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let cpu0: u64 = 1; // a cpu_set_t of one long: CPU 0
    /// let t = barrierd_stamp_ns(b);
    /// let mask = &cpu0 as *const u64 as *const std::os::raw::c_void;
    /// assert_eq!(barrierd_wait_cpus(b, t, mask, 8, 1_000_000_000), 0);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_wait_cpus(
        b: *mut barrierd,
        stamp_ns: u64,
        cpus: *const c_void,
        setsize: usize,
        timeout_ns: i64,
    ) -> c_int;
    /// `barrierd_barrier()`: stamp and wait, a drop-in for `membarrier(GLOBAL)`.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// assert_eq!(barrierd_barrier(b, 1_000_000_000), 0);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_barrier(b: *mut barrierd, timeout_ns: i64) -> c_int;
    /// `barrierd_request()`: ring the doorbell without sleeping.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// assert_eq!(barrierd_request(b), 0);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_request(b: *mut barrierd) -> c_int;
    /// `barrierd_live()`: is a daemon publishing?
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// assert!(barrierd_live(b));
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_live(b: *const barrierd) -> bool;
    /// `barrierd_mapping()`: the read-only mapping and its size.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let mut size = 0;
    /// let h = barrierd_mapping(b, &mut size);
    /// assert_eq!((*h).magic, BARRIERD_MAGIC);
    /// assert!(size >= std::mem::size_of::<barrierd_header>());
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_mapping(b: *const barrierd, size: *mut usize) -> *const barrierd_header;
    /// `barrierd_open_ns()`: the clock reading taken at open.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// assert!(barrierd_open_ns(b) > 0);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_open_ns(b: *const barrierd) -> u64;
    /// `barrierd_direct()`: does the handle credit CPUs from the daemon's slots now?
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let _from_slots: bool = barrierd_direct(b);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_direct(b: *const barrierd) -> bool;
    /// `barrierd_set_credit_observer()`: call `fn` for every CPU credited from the slots.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// unsafe extern "C" fn seen(_: *mut c_void, _: u64, _: u32, _: i32, _: u64) {}
    /// assert_eq!(barrierd_set_credit_observer(b, Some(seen), std::ptr::null_mut()), 0);
    /// assert_eq!(barrierd_barrier(b, 1_000_000_000), 0);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_set_credit_observer(
        b: *mut barrierd,
        fn_: barrierd_credit_fn,
        arg: *mut c_void,
    ) -> c_int;

    // ---- barrierd_ec.h ----------------------------------------------------------------------
    /// `barrierd_ec_init()`: set the value; no waiter may use it yet.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let mut ec = barrierd_ec::default();
    /// assert_eq!(barrierd_ec_init(&mut ec, 1, 0), 0);
    /// assert_eq!(barrierd_ec_init(&mut ec, 1 << 63, 0), -EINVAL);
    /// # }
    /// ```
    pub fn barrierd_ec_init(ec: *mut barrierd_ec, value: u64, flags: c_uint) -> c_int;
    /// `barrierd_ec_wake()`: the increments' slow path (only increments may call it).
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let mut ec = barrierd_ec::default();
    /// barrierd_ec_init(&mut ec, 0, 0);
    /// ec.word |= BARRIERD_EC_FLAG; // as an increment that read the flag finds it
    /// barrierd_ec_wake(&mut ec);
    /// assert_eq!(ec.word, 0);
    /// # }
    /// ```
    pub fn barrierd_ec_wake(ec: *mut barrierd_ec);
    /// `barrierd_ec_wait()`: until the value differs from `old_value`.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let mut ec = barrierd_ec::default();
    /// barrierd_ec_init(&mut ec, 2, 0);
    /// assert_eq!(barrierd_ec_wait(&mut ec, std::ptr::null_mut(), 1, -1), 0); // moved past 1
    /// # }
    /// ```
    pub fn barrierd_ec_wait(
        ec: *mut barrierd_ec,
        b: *mut barrierd,
        old_value: u64,
        timeout_ns: i64,
    ) -> c_int;
    /// `barrierd_ec_wait_pred()`: the same, with a predicate that may end the wait.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// unsafe extern "C" fn stop(_: *const barrierd_ec, _: *mut c_void) -> i32 {
    ///     7
    /// }
    /// let mut ec = barrierd_ec::default();
    /// barrierd_ec_init(&mut ec, 0, 0);
    /// let null = std::ptr::null_mut();
    /// assert_eq!(barrierd_ec_wait_pred(&mut ec, null, 0, Some(stop), null.cast(), -1), 7);
    /// # }
    /// ```
    pub fn barrierd_ec_wait_pred(
        ec: *mut barrierd_ec,
        b: *mut barrierd,
        old_value: u64,
        pred: barrierd_ec_pred_fn,
        arg: *mut c_void,
        timeout_ns: i64,
    ) -> c_int;

    // ---- barrierd_reclaim.h -----------------------------------------------------------------
    /// `barrierd_epoch_new()`: a domain over `b` (NULL: `membarrier(GLOBAL)`).
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let e = barrierd_epoch_new(b, 0);
    /// assert!(!e.is_null());
    /// barrierd_epoch_free(e);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_epoch_new(b: *mut barrierd, batch: c_uint) -> *mut barrierd_epoch;
    /// `barrierd_epoch_free()`: reclaim what is left, then free; no reader may be inside.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let e = barrierd_epoch_new(std::ptr::null_mut(), 0);
    /// barrierd_epoch_free(e);
    /// # }
    /// ```
    pub fn barrierd_epoch_free(e: *mut barrierd_epoch);
    /// `barrierd_epoch_register()`: the calling thread's record.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let e = barrierd_epoch_new(std::ptr::null_mut(), 0);
    /// let r = barrierd_epoch_register(e);
    /// assert_ne!((*r).active, 1); // 0 outside a section
    /// barrierd_epoch_unregister(e, r);
    /// barrierd_epoch_free(e);
    /// # }
    /// ```
    pub fn barrierd_epoch_register(e: *mut barrierd_epoch) -> *mut barrierd_epoch_record;
    /// `barrierd_epoch_unregister()`: give the record back.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let e = barrierd_epoch_new(std::ptr::null_mut(), 0);
    /// let r = barrierd_epoch_register(e);
    /// barrierd_epoch_unregister(e, r);
    /// barrierd_epoch_free(e);
    /// # }
    /// ```
    pub fn barrierd_epoch_unregister(e: *mut barrierd_epoch, r: *mut barrierd_epoch_record);
    /// `barrierd_epoch_synchronize()`: wait until every older read section has ended.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let e = barrierd_epoch_new(b, 0);
    /// assert_eq!(barrierd_epoch_synchronize(e, 1_000_000_000), 0);
    /// barrierd_epoch_free(e);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_epoch_synchronize(e: *mut barrierd_epoch, timeout_ns: i64) -> c_int;
    /// `barrierd_epoch_retire()`: free `ptr` with `fn(ptr)` once no reader can hold it.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// unsafe extern "C" fn free_u64(p: *mut c_void) {
    ///     drop(Box::from_raw(p as *mut u64));
    /// }
    /// let e = barrierd_epoch_new(b, 0);
    /// let obj = Box::into_raw(Box::new(5u64));
    /// assert_eq!(barrierd_epoch_retire(e, obj.cast(), Some(free_u64)), 0);
    /// barrierd_epoch_free(e); // reclaims it
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_epoch_retire(
        e: *mut barrierd_epoch,
        ptr: *mut c_void,
        fn_: barrierd_free_fn,
    ) -> c_int;
    /// `barrierd_epoch_reclaim()`: synchronize and free everything retired now.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let e = barrierd_epoch_new(b, 0);
    /// assert_eq!(barrierd_epoch_reclaim(e), 0);
    /// barrierd_epoch_free(e);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_epoch_reclaim(e: *mut barrierd_epoch) -> c_int;
    /// `barrierd_hp_new()`: a hazard-pointer domain over `b` (NULL: `membarrier(GLOBAL)`).
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let d = barrierd_hp_new(b, 0);
    /// assert!(!d.is_null());
    /// barrierd_hp_free(d);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_hp_new(b: *mut barrierd, batch: c_uint) -> *mut barrierd_hp;
    /// `barrierd_hp_free()`: a final scan, then free.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let d = barrierd_hp_new(std::ptr::null_mut(), 0);
    /// barrierd_hp_free(d);
    /// # }
    /// ```
    pub fn barrierd_hp_free(d: *mut barrierd_hp);
    /// `barrierd_hp_register()`: the calling thread's record.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let d = barrierd_hp_new(std::ptr::null_mut(), 0);
    /// let r = barrierd_hp_register(d);
    /// assert!((*r).hp.iter().all(|p| p.is_null()));
    /// barrierd_hp_unregister(d, r);
    /// barrierd_hp_free(d);
    /// # }
    /// ```
    pub fn barrierd_hp_register(d: *mut barrierd_hp) -> *mut barrierd_hp_record;
    /// `barrierd_hp_unregister()`: give the record back (its slots are cleared).
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// let d = barrierd_hp_new(std::ptr::null_mut(), 0);
    /// let r = barrierd_hp_register(d);
    /// barrierd_hp_unregister(d, r);
    /// barrierd_hp_free(d);
    /// # }
    /// ```
    pub fn barrierd_hp_unregister(d: *mut barrierd_hp, r: *mut barrierd_hp_record);
    /// `barrierd_hp_retire()`: free `ptr` with `fn(ptr)` once no slot holds it.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// unsafe extern "C" fn free_u64(p: *mut c_void) {
    ///     drop(Box::from_raw(p as *mut u64));
    /// }
    /// let d = barrierd_hp_new(b, 0);
    /// let obj = Box::into_raw(Box::new(5u64));
    /// assert_eq!(barrierd_hp_retire(d, obj.cast(), Some(free_u64)), 0);
    /// assert_eq!(barrierd_hp_reclaim(d), 0); // no slot holds it: freed
    /// barrierd_hp_free(d);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_hp_retire(
        d: *mut barrierd_hp,
        ptr: *mut c_void,
        fn_: barrierd_free_fn,
    ) -> c_int;
    /// `barrierd_hp_reclaim()`: barrier, scan and free now.
    ///
    /// ```
    /// # use barrierd_sys::*;
    /// # use std::os::raw::c_void;
    /// # unsafe {
    /// # let mut b = std::ptr::null_mut();
    /// # if barrierd_open(&mut b, std::ptr::null()) != 0 || !barrierd_live(b) {
    /// #     return; // the example needs a live daemon ($BARRIERD_STATE)
    /// # }
    /// let d = barrierd_hp_new(b, 0);
    /// assert_eq!(barrierd_hp_reclaim(d), 0);
    /// barrierd_hp_free(d);
    /// # barrierd_close(b);
    /// # }
    /// ```
    pub fn barrierd_hp_reclaim(d: *mut barrierd_hp) -> c_int;
}
