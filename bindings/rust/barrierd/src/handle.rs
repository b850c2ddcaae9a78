// SPDX-License-Identifier: MIT
//! `Barrierd`: an open state file, and the barriers taken on it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use barrierd_sys as sys;

use crate::timeout::timeout_ns;
use crate::{CpuSet, Error, Result};

/// A clock stamp from [`Barrierd::stamp`]: every store the calling thread made before it is
/// globally visible before its time.
///
/// Only a stamp from this crate (fenced: `MFENCE; LFENCE`, then the clock) may be waited for;
/// a plain clock reading is not fenced, so a barrier for it proves nothing about the stores
/// before it (docs/CLIENT.md).  Hence no public constructor.
///
/// ```
/// # let b = barrierd::__doc_open();
/// let t = b.stamp();
/// assert!(t.ns() > b.open_ns());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp(u64);

impl Stamp {
    /// The host's CLOCK_MONOTONIC time of the stamp, in ns.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let (a, c) = (b.stamp(), b.stamp());
    /// assert!(a.ns() <= c.ns());
    /// ```
    pub fn ns(self) -> u64 {
        self.0
    }
}

/// A vtime stamp from [`Barrierd::stamp_vtime`] (the daemon's counter instead of the clock).
///
/// A vtime is a count of one state file, meaningless in another (whose count may be far
/// ahead, and would pass it at once), so a stamp is for the handle that made it only: another
/// handle's [`wait_vtime`](Barrierd::wait_vtime) refuses it (`InvalidArgument`), and its
/// [`passed_vtime`](Barrierd::passed_vtime) says `false`.  (Clock stamps need no such tie:
/// every handle converts them to the host's clock.)
///
/// ```
/// # let b = barrierd::__doc_open();
/// let v = b.stamp_vtime();
/// println!("vtime {}", v.vtime());
/// let other = barrierd::Barrierd::open()?; // even on the same file: another handle
/// assert_eq!(other.wait_vtime(v, None), Err(barrierd::Error::InvalidArgument));
/// assert!(!other.passed_vtime(v));
/// # Ok::<(), barrierd::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VtimeStamp {
    vtime: u64,
    /// The `id` of the handle that made it.
    handle: u64,
}

impl VtimeStamp {
    /// The published vtime the stamp read.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// assert!(b.stamp_vtime().vtime() > 0);
    /// ```
    pub fn vtime(self) -> u64 {
        self.vtime
    }
}

/// Numbers the handles of the process, for [`VtimeStamp`]: unlike an address, a number is
/// never reused by a later handle (2^64 opens).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How to open a state file: `barrierd_open_opts()`'s options.
///
/// ```
/// use std::time::Duration;
/// let opts = barrierd::OpenOptions::new()
///     .fallback_membarrier(true)
///     .fallback_after(Duration::from_millis(50))
///     .attach_later(true);
/// # drop(barrierd::__doc_open());
/// let b = opts.open()?;
/// b.barrier(Some(Duration::from_secs(1)))?;
/// # Ok::<(), barrierd::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    path: Option<PathBuf>,
    opts: OptsFields,
}

#[derive(Debug, Clone, Copy, Default)]
struct OptsFields {
    trusted_uid: Option<u32>,
    fallback: bool,
    fallback_after_ns: i64,
    flags: u32,
}

impl OpenOptions {
    /// The defaults of [`Barrierd::open`]: `$BARRIERD_STATE` or `/run/barrierd/state`, root
    /// trusted only, no fallback, direct evidence.
    ///
    /// ```
    /// let _ = barrierd::OpenOptions::new();
    /// ```
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    /// The state file to open instead of the default.
    ///
    /// ```
    /// let o = barrierd::OpenOptions::new().path("/run/barrierd/state");
    /// # let _ = o;
    /// ```
    pub fn path<P: AsRef<Path>>(mut self, path: P) -> OpenOptions {
        self.path = Some(path.as_ref().to_path_buf());
        self
    }

    /// Trust a file (and directories) owned by this uid besides root.
    ///
    /// # Safety
    ///
    /// The uid must be as trustworthy as root, for the memory safety of this process: whoever
    /// runs as it can write a file (or hand over slots) that makes every barrier pass at once.
    /// A barrier that returns early lets [`EpochDomain`](crate::EpochDomain),
    /// [`HpDomain`](crate::HpDomain) and [`ReclaimCell`](crate::ReclaimCell) free memory a
    /// reader still uses, and [`fence::heavy`](crate::fence::heavy) callers do the same by
    /// hand: a use after free in safe code.  Hence `unsafe`: a safe call must not hand the
    /// soundness of safe code to another user (root is trusted as the kernel is).  Pass only
    /// a uid whose processes are as trusted as this program (a dedicated service account,
    /// this program's own uid).
    ///
    /// ```
    /// // SAFETY: uid 1000 runs the daemon and is trusted as root is.
    /// let o = unsafe { barrierd::OpenOptions::new().trusted_uid(1000) };
    /// # let _ = o;
    /// ```
    pub unsafe fn trusted_uid(mut self, uid: u32) -> OpenOptions {
        self.opts.trusted_uid = Some(uid);
        self
    }

    /// Finish a barrier with `membarrier(MEMBARRIER_CMD_GLOBAL)` when the daemon is dead or
    /// stopped, or has not served it within [`fallback_after`](Self::fallback_after); its
    /// error, if any, is returned (never a success it did not get).
    ///
    /// ```
    /// let o = barrierd::OpenOptions::new().fallback_membarrier(true);
    /// # let _ = o;
    /// ```
    pub fn fallback_membarrier(mut self, on: bool) -> OpenOptions {
        self.opts.fallback = on;
        self
    }

    /// How long a wait with a live daemon waits before the fallback (default 100 ms).
    ///
    /// ```
    /// let o = barrierd::OpenOptions::new().fallback_after(std::time::Duration::from_millis(20));
    /// # let _ = o;
    /// ```
    pub fn fallback_after(mut self, after: Duration) -> OpenOptions {
        self.opts.fallback_after_ns = timeout_ns(Some(after)).max(1);
        self
    }

    /// `BARRIERD_OPEN_ATTACH_LATER`: a missing file is not an error; the handle maps it as
    /// soon as a call finds it, and runs on its fallback policy until then.
    ///
    /// ```
    /// let o = barrierd::OpenOptions::new().attach_later(true);
    /// # let _ = o;
    /// ```
    pub fn attach_later(mut self, on: bool) -> OpenOptions {
        self.set_flag(sys::BARRIERD_OPEN_ATTACH_LATER, on);
        self
    }

    /// `BARRIERD_OPEN_NO_DIRECT`: never credit CPUs from the daemon's slots; wait only on
    /// what the daemon publishes.
    ///
    /// ```
    /// let o = barrierd::OpenOptions::new().no_direct(true);
    /// # let _ = o;
    /// ```
    pub fn no_direct(mut self, on: bool) -> OpenOptions {
        self.set_flag(sys::BARRIERD_OPEN_NO_DIRECT, on);
        self
    }

    fn set_flag(&mut self, flag: u32, on: bool) {
        if on {
            self.opts.flags |= flag;
        } else {
            self.opts.flags &= !flag;
        }
    }

    /// Open with these options.  Errors as [`Barrierd::open`].
    ///
    /// ```
    /// # drop(barrierd::__doc_open());
    /// let b = barrierd::OpenOptions::new().no_direct(true).open()?;
    /// assert!(!b.direct());
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn open(&self) -> Result<Barrierd> {
        let path = match &self.path {
            Some(p) => Some(c_path(p)?),
            None => None,
        };
        let o = &self.opts;
        let opts = sys::barrierd_open_opts {
            trusted_uid_set: o.trusted_uid.is_some() as i32,
            trusted_uid: o.trusted_uid.unwrap_or(0),
            fallback: if o.fallback {
                sys::BARRIERD_FALLBACK_MEMBARRIER
            } else {
                sys::BARRIERD_FALLBACK_NONE
            },
            fallback_after_ns: o.fallback_after_ns,
            flags: o.flags,
            ..Default::default()
        };
        let mut raw = ptr::null_mut();
        let path_ptr = path.as_ref().map_or(ptr::null(), |p| p.as_ptr());
        // SAFETY: out, path and opts are valid for the call; the library copies what it keeps.
        Error::check(unsafe { sys::barrierd_open_opts(&mut raw, path_ptr, &opts) })?;
        Barrierd::from_raw(raw)
    }
}

fn c_path(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Error::InvalidArgument)
}

/// An open barrierd state file: `struct barrierd *`.
///
/// # Threads
///
/// `Barrierd` is `Send` and `Sync`.  `barrierd.h` states: "Every function is thread-safe on
/// one handle, except `barrierd_close()`".  Every method here takes `&self` and calls only
/// those thread-safe functions; `barrierd_close()` runs only in `Drop`, which has the handle to
/// itself.  The handle is not tied to the thread that opened it (the library keeps no
/// thread-local state per handle), so moving it is sound as well.  The credit observer, which
/// the header says to set "before other threads use the handle", is not exposed.
///
/// ```
/// # let b = barrierd::__doc_open();
/// use std::sync::Arc;
/// let b = Arc::new(b);
/// let b2 = Arc::clone(&b);
/// std::thread::spawn(move || b2.barrier(None)).join().unwrap()?;
/// # Ok::<(), barrierd::Error>(())
/// ```
#[derive(Debug)]
pub struct Barrierd {
    raw: NonNull<sys::barrierd>,
    /// This handle's number among the process's ([`NEXT_ID`]).
    id: u64,
}

// SAFETY: see "Threads" above: every function but barrierd_close() is thread-safe on one
// handle, and barrierd_close() needs ownership (Drop).
unsafe impl Send for Barrierd {}
unsafe impl Sync for Barrierd {}

impl Barrierd {
    /// Open `$BARRIERD_STATE` (read with `secure_getenv()`), else `/run/barrierd/state`.
    ///
    /// Errors: `PermissionDenied` (untrusted file), `Protocol` (not a barrierd v1 file, no
    /// `/proc`, unknown time-namespace offset), `Stale` (times from the future), `NotFound`,
    /// `OutOfMemory`, and `open(2)`/`mmap(2)` errors as [`Error::Os`].
    ///
    /// ```
    /// match barrierd::Barrierd::open() {
    ///     Ok(b) => println!("live daemon: {}", b.live()),
    ///     Err(e) => println!("no barrierd: {e}"),
    /// }
    /// ```
    pub fn open() -> Result<Barrierd> {
        let mut raw = ptr::null_mut();
        // SAFETY: out is valid; a NULL path selects the default.
        Error::check(unsafe { sys::barrierd_open(&mut raw, ptr::null()) })?;
        Barrierd::from_raw(raw)
    }

    /// Open the state file at `path`.  Errors as [`open`](Self::open), and `InvalidArgument`
    /// for a path with a NUL byte.
    ///
    /// ```
    /// let e = barrierd::Barrierd::open_path("/nonexistent/state").unwrap_err();
    /// assert_eq!(e, barrierd::Error::NotFound);
    /// ```
    pub fn open_path<P: AsRef<Path>>(path: P) -> Result<Barrierd> {
        let path = c_path(path.as_ref())?;
        let mut raw = ptr::null_mut();
        // SAFETY: out and path are valid for the call.
        Error::check(unsafe { sys::barrierd_open(&mut raw, path.as_ptr()) })?;
        Barrierd::from_raw(raw)
    }

    fn from_raw(raw: *mut sys::barrierd) -> Result<Barrierd> {
        NonNull::new(raw)
            .map(|raw| Barrierd {
                raw,
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            })
            .ok_or(Error::OutOfMemory)
    }

    /// The raw handle, for calls of `barrierd-sys` (valid while `self` lives; never close it).
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let live = unsafe { barrierd_sys::barrierd_live(b.as_raw()) };
    /// assert_eq!(live, b.live());
    /// ```
    pub fn as_raw(&self) -> *mut sys::barrierd {
        self.raw.as_ptr()
    }

    /// A barrier: [`stamp`](Self::stamp) and [`wait`](Self::wait) in one call, a drop-in for
    /// `membarrier(MEMBARRIER_CMD_GLOBAL)`.  When it returns `Ok`, every CPU has executed a
    /// serialising event after the call began: every store any thread made before it is
    /// visible to every thread.  `None`: no deadline.  Errors as [`wait`](Self::wait).
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// b.barrier(Some(std::time::Duration::from_secs(1)))?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn barrier(&self, timeout: Option<Duration>) -> Result<()> {
        // SAFETY: the handle is open; the call is thread-safe.
        Error::check(unsafe { sys::barrierd_barrier(self.as_raw(), timeout_ns(timeout)) })
    }

    /// A fenced clock stamp (`MFENCE; LFENCE`, CLOCK_MONOTONIC converted to the host's clock
    /// in a time namespace).  Never fails.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let t = b.stamp();
    /// b.wait(t, None)?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn stamp(&self) -> Stamp {
        // SAFETY: the handle is open.
        Stamp(unsafe { sys::barrierd_stamp_ns(self.as_raw()) })
    }

    /// Has every CPU passed the barrier for `stamp`?  A few loads: no system call.  Nobody is
    /// asked for evidence: a poller should call [`request`](Self::request) once.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let t = b.stamp();
    /// b.request()?;
    /// while !b.passed(t) {
    ///     std::thread::sleep(std::time::Duration::from_micros(100));
    /// }
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn passed(&self, stamp: Stamp) -> bool {
        // SAFETY: the handle is open.
        unsafe { sys::barrierd_passed(self.as_raw(), stamp.0) }
    }

    /// Block until every CPU has passed `stamp`, or `timeout` runs out (`None`: no deadline).
    ///
    /// Errors: `TimedOut`; `Stale` (no live daemon and no fallback, or a time-namespace move);
    /// `Removed` (the file was removed or replaced: reopen); `InvalidArgument` (a stamp at or
    /// below [`open_ns`](Self::open_ns)); `Protocol`; with the membarrier fallback, its error.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let t = b.stamp();
    /// // ... other work ...
    /// b.wait(t, Some(std::time::Duration::from_secs(1)))?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn wait(&self, stamp: Stamp, timeout: Option<Duration>) -> Result<()> {
        // SAFETY: the handle is open; the call is thread-safe.
        Error::check(unsafe { sys::barrierd_wait(self.as_raw(), stamp.0, timeout_ns(timeout)) })
    }

    /// Wait for the CPUs in `cpus` only.  Covers only threads that can never run outside the
    /// set (their affinity is fixed); a thread that can migrate out is not covered.  Errors as
    /// [`wait`](Self::wait).
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let cpus: barrierd::CpuSet = [0].into_iter().collect();
    /// b.wait_cpus(b.stamp(), &cpus, Some(std::time::Duration::from_secs(1)))?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn wait_cpus(&self, stamp: Stamp, cpus: &CpuSet, timeout: Option<Duration>) -> Result<()> {
        let (mask, size) = cpus.as_mask();
        // SAFETY: mask is valid for size bytes during the call.
        Error::check(unsafe {
            sys::barrierd_wait_cpus(
                self.as_raw(),
                stamp.0,
                mask.cast(),
                size,
                timeout_ns(timeout),
            )
        })
    }

    /// A vtime stamp (`MFENCE`, then the published vtime).
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let v = b.stamp_vtime();
    /// b.wait_vtime(v, None)?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn stamp_vtime(&self) -> VtimeStamp {
        VtimeStamp {
            // SAFETY: the handle is open.
            vtime: unsafe { sys::barrierd_stamp_vtime(self.as_raw()) },
            handle: self.id,
        }
    }

    /// [`passed`](Self::passed) for a vtime stamp; `false` for another handle's.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// let v = b.stamp_vtime();
    /// b.wait_vtime(v, None)?;
    /// assert!(b.passed_vtime(v));
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn passed_vtime(&self, stamp: VtimeStamp) -> bool {
        // SAFETY: the handle is open.
        stamp.handle == self.id && unsafe { sys::barrierd_passed_vtime(self.as_raw(), stamp.vtime) }
    }

    /// [`wait`](Self::wait) for a vtime stamp; `InvalidArgument` for another handle's
    /// ([`VtimeStamp`]).
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// b.wait_vtime(b.stamp_vtime(), Some(std::time::Duration::from_secs(1)))?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn wait_vtime(&self, stamp: VtimeStamp, timeout: Option<Duration>) -> Result<()> {
        if stamp.handle != self.id {
            return Err(Error::InvalidArgument);
        }
        // SAFETY: the handle is open; the call is thread-safe.
        Error::check(unsafe {
            sys::barrierd_wait_vtime(self.as_raw(), stamp.vtime, timeout_ns(timeout))
        })
    }

    /// Ring the doorbell without sleeping: the daemon credits idle CPUs and listens to busy
    /// ones.  For pollers of [`passed`](Self::passed).
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// b.request()?;
    /// # Ok::<(), barrierd::Error>(())
    /// ```
    pub fn request(&self) -> Result<()> {
        // SAFETY: the handle is open; the call is thread-safe.
        Error::check(unsafe { sys::barrierd_request(self.as_raw()) })
    }

    /// Is a daemon publishing (running, not stopped, heartbeat within three periods)?
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// assert!(b.live());
    /// ```
    pub fn live(&self) -> bool {
        // SAFETY: the handle is open.
        unsafe { sys::barrierd_live(self.as_raw()) }
    }

    /// Does the handle credit CPUs from the daemon's slots now (direct evidence, ABI 1.3)?
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// println!("direct evidence: {}", b.direct());
    /// ```
    pub fn direct(&self) -> bool {
        // SAFETY: the handle is open.
        unsafe { sys::barrierd_direct(self.as_raw()) }
    }

    /// The clock reading taken at open: stamps at or below it are refused.
    ///
    /// ```
    /// # let b = barrierd::__doc_open();
    /// assert!(b.open_ns() < b.stamp().ns());
    /// ```
    pub fn open_ns(&self) -> u64 {
        // SAFETY: the handle is open.
        unsafe { sys::barrierd_open_ns(self.as_raw()) }
    }
}

impl Drop for Barrierd {
    fn drop(&mut self) {
        // SAFETY: the handle is ours alone here (Drop), and never used again.
        unsafe { sys::barrierd_close(self.raw.as_ptr()) }
    }
}
