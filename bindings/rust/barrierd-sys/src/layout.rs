// SPDX-License-Identifier: MIT
//! The structs of the headers, `#[repr(C)]` field for field (tests/abi.rs compares sizes,
//! alignments and offsets with the C compiler's), and the layout helpers as `const fn`s.

use std::os::raw::{c_int, c_uint, c_void};

use crate::uid_t;

/// One per possible CPU, at offset 128 + 16 * cpu of the state file.
///
/// ```
/// assert_eq!(std::mem::size_of::<barrierd_sys::barrierd_cpu>(), 16);
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct barrierd_cpu {
    /// CLOCK_MONOTONIC of the latest evidence for this CPU.
    pub last_interrupt_ns: u64,
    /// The vtime that evidence carried.
    pub last_interrupt_vtime: u64,
}

/// The state file's 128-byte header; `ncpu` [`barrierd_cpu`] entries follow it.
///
/// ```
/// assert_eq!(std::mem::size_of::<barrierd_sys::barrierd_header>(), 128);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct barrierd_header {
    /// Number of per-CPU entries (possible CPUs).
    pub ncpu: u64,
    /// Virtual time, advanced by the daemon.
    pub vtime: u64,
    /// Minimum over CPUs of `per_cpu[].last_interrupt_ns`.
    pub last_interrupt_ns: u64,
    /// Minimum over CPUs of `per_cpu[].last_interrupt_vtime`.
    pub last_interrupt_vtime: u64,
    /// [`BARRIERD_MAGIC`](crate::BARRIERD_MAGIC).
    pub magic: u64,
    /// [`BARRIERD_ABI_MAJOR`](crate::BARRIERD_ABI_MAJOR): a reader refuses a newer major.
    pub abi_major: u32,
    /// A reader accepts any minor.
    pub abi_minor: u32,
    /// `sizeof(struct barrierd_header)` == 128.
    pub header_size: u32,
    /// `sizeof(struct barrierd_cpu)` == 16.
    pub cpu_stride: u32,
    /// `BARRIERD_FLAG_*` | `BARRIERD_FEAT_*`.
    pub flags: u64,
    /// Bumped at every daemon start.
    pub generation: u64,
    /// CLOCK_MONOTONIC of the daemon's latest sign of life.
    pub heartbeat_ns: u64,
    /// The daemon refreshes `heartbeat_ns` at least this often.
    pub heartbeat_period_ns: u64,
    /// Pid of the publishing daemon (its own pid namespace).
    pub daemon_pid: u64,
    /// `/proc/sys/kernel/random/boot_id`, as 16 raw bytes.
    pub boot_id: [u8; 16],
    /// The doorbell word (docs/PROTOCOL.md §6.7).
    pub doorbell: u64,
    /// Byte offset of [`barrierd_ext`] in the file.
    pub ext_offset: u64,
    /// `ncpu` entries (a C flexible array member).
    pub per_cpu: [barrierd_cpu; 0],
}

/// Per-CPU extension entry.
///
/// ```
/// assert_eq!(std::mem::size_of::<barrierd_sys::barrierd_ext_cpu>(), 32);
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct barrierd_ext_cpu {
    /// `BARRIERD_CPU_*`, as of the latest pass.
    pub state: u64,
    /// Passes in which a stamped event advanced this CPU.
    pub credit_event: u64,
    /// Passes in which idle credit advanced this CPU.
    pub credit_idle: u64,
    /// Passes in which offline credit advanced this CPU.
    pub credit_offline: u64,
}

/// The extension area, at `header.ext_offset`; `ncpu` [`barrierd_ext_cpu`] entries follow.
///
/// ```
/// assert_eq!(std::mem::size_of::<barrierd_sys::barrierd_ext>(), 128);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct barrierd_ext {
    /// Bytes from `ext_offset` to the end of the file.
    pub ext_size: u64,
    /// `sizeof(struct barrierd_ext)` == 128.
    pub ext_header_size: u32,
    /// `sizeof(struct barrierd_ext_cpu)` == 32.
    pub ext_cpu_stride: u32,
    /// CLOCK_MONOTONIC when the global ns value last advanced.
    pub last_advance_ns: u64,
    /// `BARRIERD_CAUSE_*` | cpu << 8.
    pub last_advance_cause: u64,
    /// Publishing passes since the file was laid out.
    pub passes: u64,
    /// Of which idle/offline credit passes.
    pub credit_passes: u64,
    /// Doorbell wakes the daemon heard.
    pub doorbell_rings: u64,
    /// The global ns value when the daemon last stopped.
    pub stop_ns: u64,
    /// The global vtime when the daemon last stopped.
    pub stop_vtime: u64,
    /// ABI 1.1: the latest demand the daemon serves.
    pub served_ns: u64,
    /// ABI 1.2: nudges sent.
    pub nudges: u64,
    /// Zero.
    pub reserved: [u64; 5],
    /// `ncpu` entries (a C flexible array member).
    pub cpu: [barrierd_ext_cpu; 0],
}

/// The slot socket's reply record (ABI 1.3).
///
/// ```
/// assert_eq!(std::mem::size_of::<barrierd_sys::barrierd_slots_msg>(), 40);
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct barrierd_slots_msg {
    /// [`BARRIERD_SLOTS_MAGIC`](crate::BARRIERD_SLOTS_MAGIC).
    pub magic: u64,
    /// The slot ABI (`barrierd_slot.h`).
    pub slot_abi: u32,
    /// `sizeof(struct barrierd_slot)` == 64.
    pub slot_size: u32,
    /// Slots in the map: the file's ncpu.
    pub ncpu: u64,
    /// The file's generation of the daemon that sent it.
    pub generation: u64,
    /// Link descriptors after the map's.
    pub nlinks: u32,
    /// Zero.
    pub reserved: u32,
}

/// Options of [`barrierd_open_opts()`](fn@crate::barrierd_open_opts); `sz` must be its size.
///
/// ```
/// let o = barrierd_sys::barrierd_open_opts::default();
/// assert_eq!(o.sz, std::mem::size_of::<barrierd_sys::barrierd_open_opts>());
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct barrierd_open_opts {
    /// `sizeof(struct barrierd_open_opts)`, for extension.
    pub sz: usize,
    /// Nonzero: `trusted_uid` is trusted besides root.
    pub trusted_uid_set: c_int,
    /// Owner accepted besides root.
    pub trusted_uid: uid_t,
    /// `BARRIERD_FALLBACK_*`.
    pub fallback: c_int,
    /// A wait not passed after this long falls back (<= 0: 100 ms).
    pub fallback_after_ns: i64,
    /// `BARRIERD_OPEN_*`.
    pub flags: c_uint,
}

impl Default for barrierd_open_opts {
    /// Zeroed options of the right size: the defaults of `barrierd_open()`.
    fn default() -> Self {
        barrierd_open_opts {
            sz: std::mem::size_of::<barrierd_open_opts>(),
            trusted_uid_set: 0,
            trusted_uid: 0,
            fallback: 0,
            fallback_after_ns: 0,
            flags: 0,
        }
    }
}

/// An event count (`barrierd_ec.h`): the control word is ABI.
///
/// ```
/// let mut ec = barrierd_sys::barrierd_ec::default();
/// assert_eq!(unsafe { barrierd_sys::barrierd_ec_init(&mut ec, 5, 0) }, 0);
/// assert_eq!(ec.word, 5 << 1);
/// ```
#[repr(C)]
#[derive(Debug, Default)]
pub struct barrierd_ec {
    /// `(value << 1) | sleepers flag`.
    pub word: u64,
    /// [`BARRIERD_EC_SHARED`](crate::BARRIERD_EC_SHARED) or 0.
    pub flags: u32,
    /// Zero.
    pub reserved: u32,
}

/// An epoch reader's record: `active` first, then the domain's epoch word.
///
/// ```
/// assert_eq!(std::mem::size_of::<barrierd_sys::barrierd_epoch_record>(), 16);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct barrierd_epoch_record {
    /// 0: outside a read section; else the epoch loaded at enter.
    pub active: u64,
    /// The domain's epoch counter (never 0).
    pub global: *const u64,
}

/// A hazard-pointer reader's record: the slots first.
///
/// ```
/// assert_eq!(barrierd_sys::BARRIERD_HP_SLOTS, 4);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct barrierd_hp_record {
    /// Protected pointers, NULL: none.
    pub hp: [*mut c_void; crate::BARRIERD_HP_SLOTS],
}

/// Where the extension starts for a given ncpu: after the per-CPU array, 64-byte aligned.
///
/// ```
/// assert_eq!(barrierd_sys::barrierd_ext_offset(2), 192);
/// ```
pub const fn barrierd_ext_offset(ncpu: u64) -> u64 {
    (std::mem::size_of::<barrierd_header>() as u64
        + ncpu * std::mem::size_of::<barrierd_cpu>() as u64
        + 63)
        & !63
}

/// Where the per-CPU flags start (ABI 1.2): after `ext.cpu[ncpu]`.
///
/// ```
/// assert_eq!(barrierd_sys::barrierd_cpu_flags_offset(2), 192 + 128 + 64);
/// ```
pub const fn barrierd_cpu_flags_offset(ncpu: u64) -> u64 {
    barrierd_ext_offset(ncpu)
        + std::mem::size_of::<barrierd_ext>() as u64
        + ncpu * std::mem::size_of::<barrierd_ext_cpu>() as u64
}

/// Total file size for a given ncpu.
///
/// ```
/// assert_eq!(barrierd_sys::barrierd_file_size(2), 384 + 16);
/// ```
pub const fn barrierd_file_size(ncpu: u64) -> u64 {
    barrierd_cpu_flags_offset(ncpu) + ncpu * 8
}

/// `BARRIERD_CAUSE_KIND(c)`: the low byte of `ext.last_advance_cause`.
///
/// ```
/// assert_eq!(barrierd_sys::barrierd_cause_kind(3 << 8 | 2), barrierd_sys::BARRIERD_CAUSE_IDLE);
/// ```
pub const fn barrierd_cause_kind(c: u64) -> u32 {
    (c & 0xff) as u32
}

/// `BARRIERD_CAUSE_CPU(c)`: bits 8..39 of `ext.last_advance_cause`.
///
/// ```
/// assert_eq!(barrierd_sys::barrierd_cause_cpu(3 << 8 | 2), 3);
/// ```
pub const fn barrierd_cause_cpu(c: u64) -> u32 {
    ((c >> 8) & 0xffff_ffff) as u32
}
