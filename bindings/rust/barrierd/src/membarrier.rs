// SPDX-License-Identifier: MIT
//! The `membarrier(2)` commands barrierd is compared with, as raw system calls (no `libc`
//! crate: `syscall(3)` is declared here; the C library is linked anyway).
//!
//! ```
//! // What the membarrier crate's heavy() does, and the library's fallback:
//! barrierd::membarrier::register_private_expedited()?;
//! barrierd::membarrier::private_expedited()?;
//! barrierd::membarrier::global()?;
//! # Ok::<(), barrierd::Error>(())
//! ```

use std::os::raw::{c_int, c_long, c_uint};

use crate::{Error, Result};

extern "C" {
    fn syscall(number: c_long, ...) -> c_long;
}

const SYS_MEMBARRIER: c_long = 324; // x86-64
const MEMBARRIER_CMD_GLOBAL: c_int = 1 << 0;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: c_int = 1 << 4;

fn membarrier(cmd: c_int) -> Result<()> {
    // SAFETY: membarrier takes (int cmd, unsigned int flags, int cpu_id) and touches no memory
    // of ours.
    let rc = unsafe { syscall(SYS_MEMBARRIER, cmd, 0 as c_uint, 0 as c_int) };
    if rc < 0 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(Error::from_errno(errno));
    }
    Ok(())
}

/// `membarrier(MEMBARRIER_CMD_GLOBAL)`: every CPU passes a grace period (milliseconds).  This
/// is the library's fallback, and what [`fence::heavy`](crate::fence::heavy) uses when no
/// handle can be opened.  Errors: `InvalidArgument` on `nohz_full` CPUs, `PermissionDenied` /
/// `Unsupported` under seccomp or on old kernels.
///
/// ```
/// barrierd::membarrier::global()?;
/// # Ok::<(), barrierd::Error>(())
/// ```
pub fn global() -> Result<()> {
    membarrier(MEMBARRIER_CMD_GLOBAL)
}

/// `membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)`: needed once per process before
/// [`private_expedited`].
///
/// ```
/// barrierd::membarrier::register_private_expedited()?;
/// # Ok::<(), barrierd::Error>(())
/// ```
pub fn register_private_expedited() -> Result<()> {
    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
}

/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: an IPI to every CPU running a thread of
/// this process (what the `membarrier` crate's `heavy()` does).  Covers this process only.
///
/// ```
/// barrierd::membarrier::register_private_expedited()?;
/// barrierd::membarrier::private_expedited()?;
/// # Ok::<(), barrierd::Error>(())
/// ```
pub fn private_expedited() -> Result<()> {
    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
}
