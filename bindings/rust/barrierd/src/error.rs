// SPDX-License-Identifier: MIT
//! The library's negative errno values as one error type.

use std::fmt;

use barrierd_sys as sys;

/// An error of libbarrierd: each variant is one of the errno values the header documents,
/// named after what the library means by it.
///
/// The same errno can mean different things from different calls (`EPERM` is an untrusted
/// file from an open and a refused `membarrier` from a fallback), so each variant's text says
/// which calls return it; [`Error::errno`] gives the raw value back.
///
/// ```
/// use barrierd::Error;
/// let e = Error::from_errno(110);
/// assert_eq!(e, Error::TimedOut);
/// assert_eq!(e.errno(), 110);
/// let io: std::io::Error = e.into();
/// assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Error {
    /// `EPERM`: the state file is not trusted (owner, mode, directory chain), or the
    /// membarrier fallback was refused (seccomp).
    PermissionDenied,
    /// `ENOENT`: no state file (and no attach-later handle), or an attach-later handle whose
    /// file is still missing.
    NotFound,
    /// `ENOMEM`: out of memory (a reclamation domain's list could not grow; objects leaked
    /// rather than freed under a reader after a failed reclaim).
    OutOfMemory,
    /// `EINVAL`: a bad argument: a stamp at or below the handle's open time, a bad CPU set,
    /// unknown flags; or the membarrier fallback refused (nohz_full CPUs).
    InvalidArgument,
    /// `EDEADLK`: a reclaim from inside one of the same domain's free functions.
    WouldDeadlock,
    /// `ENOSYS`: the membarrier fallback is not available (kernel, seccomp).
    Unsupported,
    /// `EIDRM`: the handle's state file was removed, replaced or truncated and no daemon is
    /// live: it will not be served again; open the path anew.
    Removed,
    /// `EPROTO`: not a barrierd v1 file, no `/proc`, or a time namespace whose offset cannot
    /// be known (a retired handle).
    Protocol,
    /// `ETIMEDOUT`: the barrier did not pass within the timeout.
    TimedOut,
    /// `ESTALE`: no live daemon (and no fallback), times from the future at open, or the
    /// process changed time namespace since the stamp.
    Stale,
    /// Any other errno (from `open(2)`, `mmap(2)`, `futex(2)`), positive.
    Os(i32),
}

/// The crate's result type.
///
/// ```
/// fn ok() -> barrierd::Result<u32> { Ok(1) }
/// assert_eq!(ok(), Ok(1));
/// ```
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error for a positive errno value.
    ///
    /// ```
    /// assert_eq!(barrierd::Error::from_errno(116), barrierd::Error::Stale);
    /// assert_eq!(barrierd::Error::from_errno(5), barrierd::Error::Os(5));
    /// ```
    pub fn from_errno(errno: i32) -> Error {
        match errno {
            sys::EPERM => Error::PermissionDenied,
            sys::ENOENT => Error::NotFound,
            sys::ENOMEM => Error::OutOfMemory,
            sys::EINVAL => Error::InvalidArgument,
            sys::EDEADLK => Error::WouldDeadlock,
            sys::ENOSYS => Error::Unsupported,
            sys::EIDRM => Error::Removed,
            sys::EPROTO => Error::Protocol,
            sys::ETIMEDOUT => Error::TimedOut,
            sys::ESTALE => Error::Stale,
            other => Error::Os(other),
        }
    }

    /// The positive errno value.
    ///
    /// ```
    /// assert_eq!(barrierd::Error::Removed.errno(), 43);
    /// ```
    pub fn errno(&self) -> i32 {
        match *self {
            Error::PermissionDenied => sys::EPERM,
            Error::NotFound => sys::ENOENT,
            Error::OutOfMemory => sys::ENOMEM,
            Error::InvalidArgument => sys::EINVAL,
            Error::WouldDeadlock => sys::EDEADLK,
            Error::Unsupported => sys::ENOSYS,
            Error::Removed => sys::EIDRM,
            Error::Protocol => sys::EPROTO,
            Error::TimedOut => sys::ETIMEDOUT,
            Error::Stale => sys::ESTALE,
            Error::Os(e) => e,
        }
    }

    /// A library return value: 0 is `Ok`, a negative errno is its error.
    ///
    /// ```
    /// assert_eq!(barrierd::Error::check(0), Ok(()));
    /// assert_eq!(barrierd::Error::check(-22), Err(barrierd::Error::InvalidArgument));
    /// ```
    pub fn check(ret: i32) -> Result<()> {
        if ret < 0 {
            Err(Error::from_errno(-ret))
        } else {
            Ok(())
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Error::PermissionDenied => {
                "permission denied: the state file is not trusted, or membarrier was refused"
            }
            Error::NotFound => "no barrierd state file",
            Error::OutOfMemory => "out of memory",
            Error::InvalidArgument => "invalid argument (or membarrier refused: nohz_full CPUs)",
            Error::WouldDeadlock => "reclaim called from one of the domain's free functions",
            Error::Unsupported => "membarrier is not available",
            Error::Removed => "the state file was removed, replaced or truncated: reopen it",
            Error::Protocol => {
                "not a barrierd state file, or the time namespace offset cannot be known"
            }
            Error::TimedOut => "the barrier did not pass within the timeout",
            Error::Stale => "no live barrierd daemon (or a stale file, or a time namespace move)",
            Error::Os(e) => return write!(f, "{}", std::io::Error::from_raw_os_error(*e)),
        };
        write!(f, "barrierd: {what}")
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> std::io::Error {
        std::io::Error::from_raw_os_error(e.errno())
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn every_variant_round_trips_through_its_errno() {
        for errno in 1..200 {
            assert_eq!(Error::from_errno(errno).errno(), errno);
        }
        assert_eq!(Error::check(5), Ok(()));
    }

    #[test]
    fn display_names_the_problem() {
        assert!(Error::Removed.to_string().contains("reopen"));
        assert!(Error::Os(5).to_string().contains("Input/output"));
    }
}
