// SPDX-License-Identifier: MIT
//! The headers' constants.  Each is declared through `abi_consts!`, which also lists it in
//! `ABI_CONSTANTS`, so that tests/abi.rs can have the C compiler compare every one with the
//! header's macro or enumerator of the same name.

macro_rules! abi_consts {
    ($($(#[$doc:meta])* $name:ident: $ty:ty = $value:expr;)*) => {
        $($(#[$doc])* pub const $name: $ty = $value;)*
        /// Every numeric constant of this crate, by its C name (for the ABI test).
        #[doc(hidden)]
        pub const ABI_CONSTANTS: &[(&str, u64)] = &[$((stringify!($name), $name as u64)),*];
    };
}

/// The default state file.
///
/// ```
/// assert!(barrierd_sys::BARRIERD_DEFAULT_STATE_PATH.starts_with('/'));
/// ```
pub const BARRIERD_DEFAULT_STATE_PATH: &str = "/run/barrierd/state";
/// The environment variable naming the state file (read with `secure_getenv()`).
///
/// ```
/// assert_eq!(barrierd_sys::BARRIERD_STATE_ENV, "BARRIERD_STATE");
/// ```
pub const BARRIERD_STATE_ENV: &str = "BARRIERD_STATE";
/// The slot socket is the state path plus this suffix (ABI 1.3).
///
/// ```
/// assert_eq!(barrierd_sys::BARRIERD_SLOTS_SOCKET_SUFFIX, ".sock");
/// ```
pub const BARRIERD_SLOTS_SOCKET_SUFFIX: &str = ".sock";
/// Every string constant, by its C name (for the ABI test).
#[doc(hidden)]
pub const ABI_STRINGS: &[(&str, &str)] = &[
    ("BARRIERD_DEFAULT_STATE_PATH", BARRIERD_DEFAULT_STATE_PATH),
    ("BARRIERD_STATE_ENV", BARRIERD_STATE_ENV),
    ("BARRIERD_SLOTS_SOCKET_SUFFIX", BARRIERD_SLOTS_SOCKET_SUFFIX),
];

abi_consts! {
    /// "BARRIERD" in little-endian byte order.
    ///
    /// ```
    /// assert_eq!(&barrierd_sys::BARRIERD_MAGIC.to_le_bytes(), b"BARRIERD");
    /// ```
    BARRIERD_MAGIC: u64 = 0x4452_4549_5252_4142;
    /// The state file's ABI major: a reader refuses a newer one.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_ABI_MAJOR, 1);
    /// ```
    BARRIERD_ABI_MAJOR: u32 = 1;
    /// The ABI minor these declarations describe.
    ///
    /// ```
    /// assert!(barrierd_sys::BARRIERD_ABI_MINOR >= 1);
    /// ```
    BARRIERD_ABI_MINOR: u32 = 1;
    /// header.flags: a daemon owns the file and publishes.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FLAG_RUNNING, 1);
    /// ```
    BARRIERD_FLAG_RUNNING: u64 = 1 << 0;
    /// header.flags: no daemon publishes; values only age.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FLAG_STOPPED, 2);
    /// ```
    BARRIERD_FLAG_STOPPED: u64 = 1 << 1;
    /// header.flags: busy CPUs' events reach the daemon as they come.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FLAG_ARMED, 4);
    /// ```
    BARRIERD_FLAG_ARMED: u64 = 1 << 2;
    /// Feature: `ext_offset` points at [`barrierd_ext`](crate::barrierd_ext).
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FEAT_EXTENSION, 1 << 16);
    /// ```
    BARRIERD_FEAT_EXTENSION: u64 = 1 << 16;
    /// Feature: a daemon thread waits on header.doorbell.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FEAT_DOORBELL, 1 << 17);
    /// ```
    BARRIERD_FEAT_DOORBELL: u64 = 1 << 17;
    /// Feature (ABI 1.1): ext.served_ns is published.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FEAT_SERVED, 1 << 18);
    /// ```
    BARRIERD_FEAT_SERVED: u64 = 1 << 18;
    /// Feature (ABI 1.2): per-CPU flags follow the extension.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FEAT_CPU_FLAGS, 1 << 19);
    /// ```
    BARRIERD_FEAT_CPU_FLAGS: u64 = 1 << 19;
    /// Per-CPU flag: listed in /sys/devices/system/cpu/nohz_full.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CPUF_NOHZ_FULL, 1);
    /// ```
    BARRIERD_CPUF_NOHZ_FULL: u64 = 1 << 0;
    /// Per-CPU flag: listed in /sys/devices/system/cpu/isolated.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CPUF_ISOLATED, 2);
    /// ```
    BARRIERD_CPUF_ISOLATED: u64 = 1 << 1;
    /// Per-CPU flag: a nudge thread of the daemon serves it.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CPUF_NUDGE, 4);
    /// ```
    BARRIERD_CPUF_NUDGE: u64 = 1 << 2;
    /// Feature (ABI 1.3): the slot socket hands out the daemon's slots.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FEAT_DIRECT, 1 << 20);
    /// ```
    BARRIERD_FEAT_DIRECT: u64 = 1 << 20;
    /// The low bits of header.flags that hold the daemon's state.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FLAGS_STATE_MASK, 0xffff);
    /// ```
    BARRIERD_FLAGS_STATE_MASK: u64 = 0xffff;
    /// ext_cpu.state: no sched_switch seen yet (treated as busy).
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CPU_UNKNOWN, 0);
    /// ```
    BARRIERD_CPU_UNKNOWN: u64 = 0;
    /// ext_cpu.state: busy.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CPU_BUSY, 1);
    /// ```
    BARRIERD_CPU_BUSY: u64 = 1;
    /// ext_cpu.state: idle.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CPU_IDLE, 2);
    /// ```
    BARRIERD_CPU_IDLE: u64 = 2;
    /// ext_cpu.state: offline.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CPU_OFFLINE, 3);
    /// ```
    BARRIERD_CPU_OFFLINE: u64 = 3;
    /// ext_cpu.state: ran barrierd itself at the latest pass.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CPU_DAEMON, 4);
    /// ```
    BARRIERD_CPU_DAEMON: u64 = 4;
    /// Cause of the last advance: none.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CAUSE_NONE, 0);
    /// ```
    BARRIERD_CAUSE_NONE: u32 = 0;
    /// Cause: a stamped event (rule 1).
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CAUSE_EVENT, 1);
    /// ```
    BARRIERD_CAUSE_EVENT: u32 = 1;
    /// Cause: idle credit (rule 2).
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CAUSE_IDLE, 2);
    /// ```
    BARRIERD_CAUSE_IDLE: u32 = 2;
    /// Cause: offline credit (rule 3).
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CAUSE_OFFLINE, 3);
    /// ```
    BARRIERD_CAUSE_OFFLINE: u32 = 3;
    /// The slot socket's reply magic, "BBDSLOT1".
    ///
    /// ```
    /// assert_eq!(&barrierd_sys::BARRIERD_SLOTS_MAGIC.to_le_bytes(), b"BBDSLOT1");
    /// ```
    BARRIERD_SLOTS_MAGIC: u64 = 0x3154_4f4c_5344_4242;
    /// The most link descriptors a slot reply carries.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_SLOTS_MAX_LINKS, 64);
    /// ```
    BARRIERD_SLOTS_MAX_LINKS: u32 = 64;
    /// The largest ncpu a reader accepts.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_MAX_CPUS, 8192);
    /// ```
    BARRIERD_MAX_CPUS: u32 = 8192;
    /// A daemon is gone once its heartbeat is this many periods old.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_LIVENESS_PERIODS, 3);
    /// ```
    BARRIERD_LIVENESS_PERIODS: u32 = 3;
    /// The heartbeat period assumed for 0 or out-of-range values (100 ms).
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS, 100_000_000);
    /// ```
    BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS: u64 = 100 * 1_000_000;
    /// The longest heartbeat period believed (60 s).
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_MAX_HEARTBEAT_PERIOD_NS, 60_000_000_000);
    /// ```
    BARRIERD_MAX_HEARTBEAT_PERIOD_NS: u64 = 60 * 1_000_000_000;
    /// Never call membarrier: waits return -ESTALE / -ETIMEDOUT.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FALLBACK_NONE, 0);
    /// ```
    BARRIERD_FALLBACK_NONE: i32 = 0;
    /// Finish with membarrier(MEMBARRIER_CMD_GLOBAL).
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_FALLBACK_MEMBARRIER, 1);
    /// ```
    BARRIERD_FALLBACK_MEMBARRIER: i32 = 1;
    /// Open flag: return a handle that maps the file once it appears.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_OPEN_ATTACH_LATER, 1);
    /// ```
    BARRIERD_OPEN_ATTACH_LATER: u32 = 0x1;
    /// Open flag: never credit CPUs from the daemon's slots.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_OPEN_NO_DIRECT, 2);
    /// ```
    BARRIERD_OPEN_NO_DIRECT: u32 = 0x2;
    /// Credit kind: the slot's stamp is above the barrier's.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CREDIT_STAMP, 1);
    /// ```
    BARRIERD_CREDIT_STAMP: i32 = 1;
    /// Credit kind: the idle word read IDLE after the clock reading.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CREDIT_IDLE, 2);
    /// ```
    BARRIERD_CREDIT_IDLE: i32 = 2;
    /// Credit kind: the caller ran on it after the clock reading.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_CREDIT_SELF, 3);
    /// ```
    BARRIERD_CREDIT_SELF: i32 = 3;
    /// Event count control word: someone may sleep on the word.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_EC_FLAG, 1);
    /// ```
    BARRIERD_EC_FLAG: u64 = 1;
    /// Event count control word: one increment.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_EC_ONE, 2);
    /// ```
    BARRIERD_EC_ONE: u64 = 2;
    /// `barrierd_ec_init()` flag: the word lives in shared memory.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_EC_SHARED, 1);
    /// ```
    BARRIERD_EC_SHARED: u32 = 0x1;
    /// Hazard-pointer slots per record.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::BARRIERD_HP_SLOTS, 4);
    /// ```
    BARRIERD_HP_SLOTS: usize = 4;
    /// `EPERM` (Linux), as the library returns it negated.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::EPERM, 1);
    /// ```
    EPERM: i32 = 1;
    /// `ENOENT`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::ENOENT, 2);
    /// ```
    ENOENT: i32 = 2;
    /// `ENOMEM`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::ENOMEM, 12);
    /// ```
    ENOMEM: i32 = 12;
    /// `EINVAL`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::EINVAL, 22);
    /// ```
    EINVAL: i32 = 22;
    /// `EDEADLK`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::EDEADLK, 35);
    /// ```
    EDEADLK: i32 = 35;
    /// `ENOSYS`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::ENOSYS, 38);
    /// ```
    ENOSYS: i32 = 38;
    /// `EIDRM`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::EIDRM, 43);
    /// ```
    EIDRM: i32 = 43;
    /// `EPROTO`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::EPROTO, 71);
    /// ```
    EPROTO: i32 = 71;
    /// `ETIMEDOUT`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::ETIMEDOUT, 110);
    /// ```
    ETIMEDOUT: i32 = 110;
    /// `ESTALE`.
    ///
    /// ```
    /// assert_eq!(barrierd_sys::ESTALE, 116);
    /// ```
    ESTALE: i32 = 116;
}
