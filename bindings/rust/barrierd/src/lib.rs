// SPDX-License-Identifier: MIT
//! Safe Rust API of `libbarrierd`, the client library of barrierd: asymmetric memory barriers
//! for Linux on x86-64 that cost about a microsecond and no IPI on an idle machine.
//!
//! When [`Barrierd::barrier`] returns `Ok`, every CPU of the machine has executed a
//! serialising event after the call began: every store any thread made before it is visible
//! to every thread, and no thread still acts on a load made before it.  That is what
//! `membarrier(MEMBARRIER_CMD_GLOBAL)` gives, without the RCU grace period or the IPIs of its
//! expedited forms.  The library does the soundness-critical work (the fenced stamps, the
//! time-namespace conversion, the trust checks on the state file); this crate wraps it.
//!
//! * [`Barrierd`]: open the state file, then [`barrier`](Barrierd::barrier), or
//!   [`stamp`](Barrierd::stamp) early and [`wait`](Barrierd::wait) late.
//! * [`fence`]: `light()`/`heavy()`, shaped like the `membarrier` crate's.
//! * [`EventCount`], [`SpEventCount`]: counters to wait on, free for producers when nobody
//!   waits.
//! * [`EpochDomain`], [`HpDomain`], [`ReclaimCell`]: memory reclamation whose readers execute
//!   no fence and no atomic read-modify-write.
//!
//! ```
//! # let b = barrierd::__doc_open();
//! use barrierd::Barrierd;
//! use std::time::Duration;
//! let b = Barrierd::open()?; // $BARRIERD_STATE or /run/barrierd/state
//! // ... unlink an object from a shared structure ...
//! b.barrier(Some(Duration::from_secs(1)))?;
//! // every CPU has serialised after the unlink: no reader still sees the old pointer
//! # Ok::<(), barrierd::Error>(())
//! ```
#![warn(missing_docs)]

mod abort;
mod cell;
mod cpuset;
mod domain;
mod ec;
mod epoch;
mod error;
pub mod fence;
mod handle;
mod hp;
pub mod membarrier;
#[cfg(not(miri))]
mod process_handle;
mod retire;
mod timeout;

pub use barrierd_sys as sys;
pub use cell::ReclaimCell;
pub use cpuset::CpuSet;
pub use domain::Domain;
pub use ec::{EventCount, SpEventCount, SpProducer, Waitable, Woken, MAX_DELTA};
pub use epoch::{EpochDomain, EpochGuard, EpochRecord};
pub use error::{Error, Result};
pub use handle::{Barrierd, OpenOptions, Stamp, VtimeStamp};
pub use hp::{HpDomain, HpGuard, HpRecord};

/// For the documentation's examples: a handle on a live daemon, or, when there is none, a
/// message and the end of the process with success (the example needs a daemon), unless
/// `BARRIERD_REQUIRE_BPF=1` makes that a failure, as for the project's other tests.
#[doc(hidden)]
pub fn __doc_open() -> Barrierd {
    match Barrierd::open() {
        Ok(b) if b.live() => return b,
        Ok(_) => eprintln!("no live barrierd daemon"),
        Err(e) => eprintln!("cannot open the state file: {e}"),
    }
    if std::env::var_os("BARRIERD_REQUIRE_BPF").map_or(false, |v| v == "1") {
        panic!("this example needs a live daemon, and BARRIERD_REQUIRE_BPF=1 forbids skipping");
    }
    eprintln!("skipped: start barrierd and set BARRIERD_STATE to run this example");
    std::process::exit(0)
}
