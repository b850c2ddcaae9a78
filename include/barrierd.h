/* SPDX-License-Identifier: MIT */
/*
 * barrierd.h - the barrierd state-file ABI (version 1) and the libbarrierd client API.
 *
 * This header is the one definition of the state file's layout: the daemon, the library,
 * barrierctl and the tests all include it.  docs/PROTOCOL.md describes it byte by byte.
 *
 * The first 128 bytes and the 16-byte per-CPU entries keep the layout of the original
 * barrierd's `struct barrierd_mapped_data`, so programs written against it keep working.
 */
#ifndef BARRIERD_H
#define BARRIERD_H

#if !defined(__x86_64__)
#error "barrierd is x86-64 only: its soundness argument is x86-TSO (see docs/DESIGN.md)"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The slots (ABI 1.1) and BARRIERD_STATIC_ASSERT, which both headers' ABI asserts use. */
#include <barrierd_slot.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* State file ABI                                                                              */
/* ------------------------------------------------------------------------------------------ */

#define BARRIERD_DEFAULT_STATE_PATH "/run/barrierd/state"
#define BARRIERD_STATE_ENV "BARRIERD_STATE"

/* "BARRIERD" in little-endian byte order. */
#define BARRIERD_MAGIC 0x4452454952524142ULL
/*
 * ABI 1.1 is one layout: the original's words, the extension (statistics, the stop snapshot and
 * the served word), the doorbell, the per-CPU flags and the slot socket.  A daemon says which of
 * them it serves with the feature bits below; readers test those, never the minor.
 */
#define BARRIERD_ABI_MAJOR 1u
#define BARRIERD_ABI_MINOR 1u

/* header.flags, low bits: the daemon's state. */
#define BARRIERD_FLAG_RUNNING (1ULL << 0) /* a daemon owns the file and publishes */
#define BARRIERD_FLAG_STOPPED (1ULL << 1) /* no daemon publishes: values only age */
/*
 * Never set by this daemon: the served word (ext.served_ns) says when a waiter need not ring.
 * Kept so that readers built against it compile; a reader that tests it finds it clear.
 */
#define BARRIERD_FLAG_ARMED (1ULL << 2)
/* header.flags, feature bits (readers ignore unknown ones). */
#define BARRIERD_FEAT_EXTENSION (1ULL << 16) /* ext_offset points at struct barrierd_ext */
#define BARRIERD_FEAT_DOORBELL (1ULL << 17)  /* a daemon thread waits on header.doorbell */
/*
 * ext.served_ns is published: a waiter whose ns stamp is at or below it need not ring; one above
 * it rings (docs/PROTOCOL.md §6.8).  Readers that do not know it ring whenever a CPU holds them
 * back, and are served.
 */
#define BARRIERD_FEAT_SERVED (1ULL << 18)
/*
 * One uint64_t of BARRIERD_CPUF_* per CPU follows the extension's per-CPU entries, at
 * barrierd_cpu_flags_offset(ncpu), within ext_size.  Written at the daemon's start; what the
 * kernel and the daemon say about each CPU, never evidence.
 */
#define BARRIERD_FEAT_CPU_FLAGS (1ULL << 19)
#define BARRIERD_CPUF_NOHZ_FULL (1ULL << 0) /* listed in /sys/devices/system/cpu/nohz_full */
#define BARRIERD_CPUF_ISOLATED (1ULL << 1)  /* listed in /sys/devices/system/cpu/isolated */
#define BARRIERD_CPUF_NUDGE (1ULL << 2)	    /* a nudge thread of the daemon serves it */
/*
 * The daemon hands out the frozen slots map and its program links on a unix socket at
 * the state path plus BARRIERD_SLOTS_SOCKET_SUFFIX (docs/PROTOCOL.md §6.12): clients may credit
 * CPUs from the slots themselves (docs/DESIGN.md rule 11).
 */
#define BARRIERD_FEAT_DIRECT (1ULL << 20)
#define BARRIERD_FLAGS_STATE_MASK 0xffffULL

/*
 * One per possible CPU, at offset 128 + 16 * cpu.  Both fields only grow within one boot; the
 * low 32 bits of each (its first four bytes: x86 is little-endian) are a futex word.
 */
struct barrierd_cpu {
	uint64_t last_interrupt_ns;    /* CLOCK_MONOTONIC of the latest evidence for this CPU */
	uint64_t last_interrupt_vtime; /* the vtime that evidence carried */
};

struct barrierd_header {
	/* -- the original 32 bytes -- */
	uint64_t ncpu;		       /* number of per-CPU entries (possible CPUs) */
	uint64_t vtime;		       /* virtual time, advanced by the daemon */
	uint64_t last_interrupt_ns;    /* min over CPUs of per_cpu[].last_interrupt_ns */
	uint64_t last_interrupt_vtime; /* min over CPUs of per_cpu[].last_interrupt_vtime */
	/* -- the original's 96 reserved bytes, ours now -- */
	uint64_t magic;		       /* BARRIERD_MAGIC */
	uint32_t abi_major;	       /* BARRIERD_ABI_MAJOR: a reader refuses a newer major */
	uint32_t abi_minor;	       /* a reader accepts any minor */
	uint32_t header_size;	       /* sizeof(struct barrierd_header) == 128 */
	uint32_t cpu_stride;	       /* sizeof(struct barrierd_cpu) == 16 */
	uint64_t flags;		       /* BARRIERD_FLAG_* | BARRIERD_FEAT_* */
	uint64_t generation;	       /* bumped at every daemon start */
	uint64_t heartbeat_ns;	       /* CLOCK_MONOTONIC of the daemon's latest sign of life */
	uint64_t heartbeat_period_ns;  /* the daemon refreshes heartbeat_ns at least this often */
	uint64_t daemon_pid;	       /* pid of the publishing daemon (its own pid namespace) */
	uint8_t boot_id[16];	       /* /proc/sys/kernel/random/boot_id, as 16 raw bytes */
	uint64_t doorbell;	       /* FUTEX_WAKE the low half to ask for idle/offline credit;
					  libbarrierd's sleepers also queue on the high half, which
					  nobody wakes, so the daemon can count them apart from
					  original-layout clients (docs/PROTOCOL.md §6.7) */
	uint64_t ext_offset;	       /* byte offset of struct barrierd_ext in the file */
	struct barrierd_cpu per_cpu[]; /* ncpu entries */
};

/* The ABI asserts: BARRIERD_STATIC_ASSERT, defined once, in barrierd_slot.h. */
BARRIERD_STATIC_ASSERT(sizeof(struct barrierd_cpu) == 16, "per-CPU entry is 16 bytes");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_cpu, last_interrupt_ns) == 0, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_cpu, last_interrupt_vtime) == 8, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, ncpu) == 0, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, vtime) == 8, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, last_interrupt_ns) == 16, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, last_interrupt_vtime) == 24, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, magic) == 32, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, abi_major) == 40, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, abi_minor) == 44, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, header_size) == 48, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, cpu_stride) == 52, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, flags) == 56, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, generation) == 64, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, heartbeat_ns) == 72, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, heartbeat_period_ns) == 80, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, daemon_pid) == 88, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, boot_id) == 96, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, doorbell) == 112, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, ext_offset) == 120, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_header, per_cpu) == 128, "abi");
BARRIERD_STATIC_ASSERT(sizeof(struct barrierd_header) == 128, "abi");

/* ext_cpu.state */
enum barrierd_cpu_state {
	BARRIERD_CPU_UNKNOWN = 0, /* no sched_switch seen yet: treated as busy */
	BARRIERD_CPU_BUSY = 1,
	BARRIERD_CPU_IDLE = 2,
	BARRIERD_CPU_OFFLINE = 3,
	BARRIERD_CPU_DAEMON = 4, /* ran barrierd itself at the latest pass: credited on request */
};

/* low byte of ext.last_advance_cause; bits 8..39 hold the CPU whose credit advanced it */
enum barrierd_cause {
	BARRIERD_CAUSE_NONE = 0,
	BARRIERD_CAUSE_EVENT = 1,   /* a stamped tracepoint event, or the daemon's own locked
				       instructions on the CPU it ran on (rule 1) */
	BARRIERD_CAUSE_IDLE = 2,    /* idle credit (rule 2) */
	BARRIERD_CAUSE_OFFLINE = 3, /* offline credit (rule 3) */
};
#define BARRIERD_CAUSE_KIND(c) ((unsigned)((c)&0xff))
#define BARRIERD_CAUSE_CPU(c) ((unsigned)(((c) >> 8) & 0xffffffffu))

/* Per-CPU extension entry; how the CPU's value was last moved forward, and its state. */
struct barrierd_ext_cpu {
	uint64_t state;		 /* enum barrierd_cpu_state, as of the latest pass */
	uint64_t credit_event;	 /* passes in which a stamped event advanced this CPU */
	uint64_t credit_idle;	 /* passes in which idle credit advanced this CPU */
	uint64_t credit_offline; /* passes in which offline credit advanced this CPU */
};

/* The extension area, at header.ext_offset (a multiple of 64). */
struct barrierd_ext {
	uint64_t ext_size;	     /* bytes from ext_offset to the end of the file */
	uint32_t ext_header_size;    /* sizeof(struct barrierd_ext) == 128 */
	uint32_t ext_cpu_stride;     /* sizeof(struct barrierd_ext_cpu) == 32 */
	uint64_t last_advance_ns;    /* CLOCK_MONOTONIC when the global ns value last advanced */
	uint64_t last_advance_cause; /* enum barrierd_cause | cpu << 8: how the CPU now holding
					the minimum was last advanced */
	uint64_t passes;	     /* publishing passes since the file was laid out */
	uint64_t credit_passes;	     /* of which idle/offline credit passes */
	uint64_t doorbell_rings;     /* doorbell wakes the daemon heard */
	/*
	 * The global values when the daemon last stopped (written before the stopped flag).  While
	 * the file is not marked running, a reader trusts no value above these: nobody of ours
	 * publishes, and whatever raises them is not us (the original barrierd, for one).
	 */
	uint64_t stop_ns;
	uint64_t stop_vtime;
	/*
	 * BARRIERD_FEAT_SERVED: "served up to", a CLOCK_MONOTONIC time.  The daemon serves every ns
	 * wait whose stamp is at or below it without another ring: each CPU whose value is at or
	 * below it either signals the daemon at its next event (and is nudged if it stays silent)
	 * or is credited by a pass already asked for.  Only grows while the daemon runs; a hint for
	 * when to ring, never evidence.
	 */
	uint64_t served_ns;
	/* Nudges sent (docs/DEMAND.md, "Nudges"), since the file was laid out. */
	uint64_t nudges;
	uint64_t reserved[5];
	struct barrierd_ext_cpu cpu[]; /* ncpu entries */
};

BARRIERD_STATIC_ASSERT(sizeof(struct barrierd_ext_cpu) == 32, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext_cpu, state) == 0, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext_cpu, credit_event) == 8, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext_cpu, credit_idle) == 16, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext_cpu, credit_offline) == 24, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, ext_size) == 0, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, ext_header_size) == 8, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, ext_cpu_stride) == 12, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, last_advance_ns) == 16, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, last_advance_cause) == 24, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, passes) == 32, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, credit_passes) == 40, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, doorbell_rings) == 48, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, stop_ns) == 56, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, stop_vtime) == 64, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, served_ns) == 72, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, nudges) == 80, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_ext, cpu) == 128, "abi");
BARRIERD_STATIC_ASSERT(sizeof(struct barrierd_ext) == 128, "abi");

/* Where the extension starts for a given ncpu: after the per-CPU array, 64-byte aligned. */
static inline uint64_t barrierd_ext_offset(uint64_t ncpu)
{
	return (sizeof(struct barrierd_header) + ncpu * sizeof(struct barrierd_cpu) + 63) & ~63ULL;
}

/* Where the per-CPU flags start (BARRIERD_FEAT_CPU_FLAGS): after ext.cpu[ncpu]. */
static inline uint64_t barrierd_cpu_flags_offset(uint64_t ncpu)
{
	return barrierd_ext_offset(ncpu) + sizeof(struct barrierd_ext) +
	       ncpu * sizeof(struct barrierd_ext_cpu);
}

/* Total file size for a given ncpu. */
static inline uint64_t barrierd_file_size(uint64_t ncpu)
{
	return barrierd_cpu_flags_offset(ncpu) + ncpu * sizeof(uint64_t);
}

/*
 * The slot socket's reply: this record, with SCM_RIGHTS carrying the slots map's
 * descriptor, then nlinks link descriptors (1: the sched_switch program's link, which keeps
 * the idle words live while it is held).  One reply per connection.
 */
#define BARRIERD_SLOTS_SOCKET_SUFFIX ".sock"
#define BARRIERD_SLOTS_MAGIC 0x31544f4c53444242ULL /* "BBDSLOT1" */
#define BARRIERD_SLOTS_MAX_LINKS 64u

struct barrierd_slots_msg {
	uint64_t magic;	     /* BARRIERD_SLOTS_MAGIC */
	uint32_t slot_abi;   /* BARRIERD_SLOT_ABI */
	uint32_t slot_size;  /* sizeof(struct barrierd_slot) == 64 */
	uint64_t ncpu;	     /* slots in the map: the file's ncpu */
	uint64_t generation; /* the file's generation of the daemon that sent it */
	uint32_t nlinks;     /* link descriptors after the map's */
	uint32_t reserved;   /* 0 */
};

BARRIERD_STATIC_ASSERT(sizeof(struct barrierd_slots_msg) == 40, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_slots_msg, ncpu) == 16, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_slots_msg, generation) == 24, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_slots_msg, nlinks) == 32, "abi");

/*
 * The anchor (docs/PROTOCOL.md §6.12): after the reply above, the daemon sends a second record,
 * struct barrierd_anchor_msg, with SCM_RIGHTS carrying two descriptors: a BPF_PROG_TYPE_SYSCALL
 * program the daemon loaded (never attached; only CAP_BPF loads one), then that program's
 * frozen, program-read-only .rodata map, whose one value is struct barrierd_anchor.  It names
 * this run's slots map, sched_switch program, state file (its file handle) and generation: a
 * client that cannot trust the file's owner (a user namespace where root is unmapped) accepts
 * the file and the slots only if they are the objects named there.  A reader that knows only
 * the reply reads one record and never sees it.
 */
#define BARRIERD_ANCHOR_MAGIC 0x31524f48434e4142ULL /* "BANCHOR1" */
#define BARRIERD_ANCHOR_HANDLE_MAX 40u

struct barrierd_anchor {
	uint64_t magic;		 /* BARRIERD_ANCHOR_MAGIC */
	uint64_t generation;	 /* the file's generation of this run */
	uint64_t slots_map_id;	 /* the kernel's id of the frozen slots map */
	uint64_t switch_prog_id; /* the kernel's id of the sched_switch program */
	uint64_t file_dev;	 /* the state file's st_dev and st_ino */
	uint64_t file_ino;
	int32_t handle_type;   /* name_to_handle_at() of the state file (it holds the */
	uint32_t handle_bytes; /* inode's generation), or -1 and 0 on file systems without */
	uint8_t handle[BARRIERD_ANCHOR_HANDLE_MAX];
};

struct barrierd_anchor_msg {
	uint64_t magic; /* BARRIERD_ANCHOR_MAGIC */
	uint32_t nfds;	/* 2: the anchor program, then its .rodata map */
	uint32_t reserved;
};

BARRIERD_STATIC_ASSERT(sizeof(struct barrierd_anchor) == 96, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_anchor, handle_type) == 48, "abi");
BARRIERD_STATIC_ASSERT(offsetof(struct barrierd_anchor, handle) == 56, "abi");
BARRIERD_STATIC_ASSERT(sizeof(struct barrierd_anchor_msg) == 16, "abi");

/* The largest ncpu a reader accepts (the kernel's NR_CPUS limit). */
#define BARRIERD_MAX_CPUS 8192u

/*
 * Liveness, the same for every reader: a daemon is gone once heartbeat_ns is more than
 * BARRIERD_LIVENESS_PERIODS heartbeat periods old.  A heartbeat_period_ns of 0 or above
 * BARRIERD_MAX_HEARTBEAT_PERIOD_NS is read as BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS.
 */
#define BARRIERD_LIVENESS_PERIODS 3u
#define BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS (100ULL * 1000000ULL)
#define BARRIERD_MAX_HEARTBEAT_PERIOD_NS (60ULL * 1000000000ULL)

/* ------------------------------------------------------------------------------------------ */
/* Client API (libbarrierd.so.1)                                                               */
/* ------------------------------------------------------------------------------------------ */

/*
 * The guarantee.  When a wait for stamp T returns 0, every CPU of the machine has executed a
 * serialising event after T: every store any thread made before T is visible to every thread,
 * and no thread can still act on a load performed before T.  T must come from
 * barrierd_stamp_ns() (or barrierd_stamp_vtime() for the vtime forms): a plain clock_gettime()
 * is not fenced, so the caller's earlier stores may still sit in its store buffer after the
 * clock is read, and a barrier for that time proves nothing about them (docs/CLIENT.md).
 *
 * Errors are negative errno values.  Every function is thread-safe on one handle, except
 * barrierd_close().  The library needs no privilege, makes no bpf() call and only reads the
 * file and the slots the daemon hands out on its socket (barrierd_direct());
 * it is x86-64 only.  A handle holds descriptors (the slots map and a BPF link, close-on-exec)
 * until its first call after their daemon was replaced or stopped, or barrierd_close():
 * closing them behind its back voids the direct path's argument (docs/CLIENT.md); a forked
 * child fetches its own.
 */
struct barrierd;

enum barrierd_fallback {
	BARRIERD_FALLBACK_NONE = 0,	  /* never call membarrier: -ESTALE / -ETIMEDOUT */
	BARRIERD_FALLBACK_MEMBARRIER = 1, /* finish with membarrier(MEMBARRIER_CMD_GLOBAL) */
};

struct barrierd_open_opts {
	size_t sz;		   /* sizeof(struct barrierd_open_opts), for extension */
	int trusted_uid_set;	   /* nonzero: trusted_uid is trusted besides root */
	uid_t trusted_uid;	   /* owner accepted besides root (never read from the env) */
	int fallback;		   /* enum barrierd_fallback */
	int64_t fallback_after_ns; /* a wait not passed after this long falls back (<= 0: 100 ms);
				      a dead or stopped daemon falls back at once */
	unsigned flags;		   /* BARRIERD_OPEN_* (read only when sz covers it) */
};

/*
 * The file does not exist yet (a program started before barrierd, at boot): instead of
 * -ENOENT, barrierd_open_opts() returns a handle without a file, which maps the file (with
 * every check of an open) as soon as a call finds it there; a file a daemon is still
 * creating (not yet readable to us, shorter than a header, no magic yet) counts as not there.
 * Until then: waits and barriers take the fallback at once if the handle has one (for a stamp
 * it proves, as below: not a ns stamp from the future, nor a vtime stamp other than the
 * UINT64_MAX below), or else sleep 300 ms (less with a shorter timeout), look for the file once
 * more and, if it is still missing, return -ESTALE; a barrierd_barrier() that finds it goes on
 * with a fresh stamp.  barrierd_open_ns() is the handle's creation until then, and the file's open
 * after: a ns stamp between the two, or the UINT64_MAX that barrierd_stamp_vtime() returns without
 * a file, predates the file and can only be served by the fallback (-EINVAL without, as any stamp
 * at or below barrierd_open_ns()).  barrierd_passed() and barrierd_live() are false,
 * barrierd_mapping() is NULL, and barrierd_request() looks for the file (-ENOENT while it is
 * missing, or when the last look was under 10 ms ago: at most one look per 10 ms per handle).
 */
#define BARRIERD_OPEN_ATTACH_LATER 0x1u
/*
 * Never credit CPUs from the slots (docs/DESIGN.md rule 11): do not connect to the slot
 * socket, and wait only on what the daemon publishes, as a reader without BARRIERD_FEAT_DIRECT.
 */
#define BARRIERD_OPEN_NO_DIRECT 0x2u

/*
 * barrierd_open - check, validate and map the state file read-only.
 * path: NULL means secure_getenv("BARRIERD_STATE"), then BARRIERD_DEFAULT_STATE_PATH.
 * Trust: the file must be a regular file owned by root (or opts->trusted_uid), not writable by
 * group or others, in a directory chain owned by root (or that uid) that no one else can write
 * unless root-owned and sticky, and at most 4096 directories deep.  Then the magic, ABI major,
 * sizes and ncpu against the file size are checked, and no time field may be later than our
 * clock (a file from another boot).  A file whose extension is not laid out yet (a daemon
 * starting) is accepted; the handle then keeps the file open (one close-on-exec descriptor)
 * until a wait or barrierd_request() finds the extension and maps it.
 * Returns 0 and *out; -EPERM (untrusted, or a chain deeper than 4096 directories), -EPROTO (not
 * a barrierd v1 file; no /proc; a time namespace whose offset cannot be known), -ESTALE (times
 * from the future), -EINVAL (bad arguments, unknown flags), -ENOENT (no file, and no
 * BARRIERD_OPEN_ATTACH_LATER), -ENOMEM and other open(2)/mmap(2) errors.
 */
int barrierd_open(struct barrierd **out, const char *path);
#if defined(__cplusplus) && defined(__GNUC__)
/* In C++ the function's name hides the struct's constructor, which g++ -Wshadow reports. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
int barrierd_open_opts(struct barrierd **out, const char *path,
		       const struct barrierd_open_opts *opts);
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
/*
 * Unmap, close and free.  NULL is allowed.  No other call may use the handle during or after
 * it; a second close of the same handle is undefined behaviour, as a second free() is.
 */
void barrierd_close(struct barrierd *b);

/*
 * barrierd_stamp_ns - MFENCE; LFENCE; CLOCK_MONOTONIC, converted to the host's clock when the
 * process lives in a time namespace.  Every store this thread made before the call is globally
 * visible before the returned time.  Never fails; if the namespace offset cannot be known after
 * a fork, it returns a stamp no barrier can pass (waits then return -EPROTO).  A process that
 * moves itself to another time namespace with setns() must close its handles before and open
 * new ones after: until a wait's slow path (or barrierd_barrier) notices the move (-ESTALE,
 * and the handle is retired: every ns stamp refused, waits -EPROTO), stamps are converted with
 * the old offset, barrierd_passed() cannot know, and a move back is never noticed.
 */
uint64_t barrierd_stamp_ns(const struct barrierd *b);
/* barrierd_stamp_vtime - MFENCE, then a load of the published vtime: the vtime-domain stamp. */
uint64_t barrierd_stamp_vtime(const struct barrierd *b);

/*
 * Has every CPU passed the barrier for this stamp?  A few loads: no syscall, no locked RMW.
 * False for a stamp at or below barrierd_open_ns().  Nobody is asked for evidence: a poller
 * should call barrierd_request() once, or an idle machine may never produce any.  A value is
 * believed only if the daemon's flags and generation, read before and after it, show one
 * running daemon; otherwise no more than the stop snapshot (nothing, before barrierd_request()
 * or a wait has found the extension of a file opened without one).  Like every call, its loads
 * fault (SIGBUS) if root truncates the file under them; the daemon never does (docs/CLIENT.md).
 */
bool barrierd_passed(const struct barrierd *b, uint64_t stamp_ns);
bool barrierd_passed_vtime(const struct barrierd *b, uint64_t vtime);

/*
 * barrierd_wait - block until every CPU passed the stamp, or time runs out.
 * Sleeps on a futex in bounded slices (never spins beyond a look at the slots of at most 30 us
 * before its first ring and a short bounded re-ring), and rings the daemon's doorbell iff the
 * stamp is above the daemon's served word (ext.served_ns: every wait stamped at or below it is
 * served without a ring; a hint, never evidence).  timeout_ns < 0 waits without a deadline, still
 * re-checking the daemon's liveness every few milliseconds.  A wait that finds no live daemon
 * (stopped, or its heartbeat older than the liveness bound) and has no fallback backs off: it
 * sleeps on the heartbeat and flags words for one more liveness bound (three of the file's
 * heartbeat periods: 300 ms by default), never past its deadline, goes on if the daemon comes back,
 * and returns -ESTALE only then, so a caller that retries on -ESTALE does not spin (and a
 * barrierd_barrier() without a fallback blocks that long).  No sleep it asks for ends after
 * its deadline.
 * Returns 0 (passed); -ETIMEDOUT; -ESTALE (no live daemon for that back-off, or at the
 * deadline, and no fallback; or the process changed time namespace since the stamp); -EIDRM
 * (no live daemon, no fallback, and the handle's path, as this process resolves it, names no
 * file, another file, or one shorter than the mapping: removed, replaced or truncated; this
 * handle's file will not be served again, close it and open the path anew.  With a fallback
 * such a handle falls back on every call, and barrierd_live() stays false); -EINVAL (stamp at
 * or below barrierd_open_ns(), bad arguments); -EPROTO (namespace offset unknown); with
 * BARRIERD_FALLBACK_MEMBARRIER, the result of membarrier(MEMBARRIER_CMD_GLOBAL): 0, or its
 * error (-EINVAL under nohz_full, -EPERM/-ENOSYS under seccomp), never a success it did not
 * get, and only for a stamp the call proves: a ns stamp below the clock read before the call,
 * a vtime stamp at or below the file's vtime loaded before it (a stamp from the future gets
 * what it gets without the fallback: -ESTALE for a ns stamp above the clock, the daemon's
 * answer or -ETIMEDOUT for a vtime).  Those three errors mean membarrier is unavailable:
 * while the daemon is live and a nudge thread of it serves every CPU the wait still lags on
 * (the per-CPU flags), a wait whose fallback gets one of them goes on waiting for the
 * daemon (which serves tickless CPUs by nudges) until its timeout; otherwise, and for a dead or
 * stopped daemon, it returns it.
 */
int barrierd_wait(struct barrierd *b, uint64_t stamp_ns, int64_t timeout_ns);
/*
 * The same for a barrierd_stamp_vtime() stamp.  A fallback answer covers the caller's stamp,
 * not its value: for a stamp equal to the file's vtime, another thread may load that same
 * vtime after membarrier began.  Do not record "vtime V passed" from such an answer and then
 * compare other threads' stamps with it.
 */
int barrierd_wait_vtime(struct barrierd *b, uint64_t vtime, int64_t timeout_ns);
/*
 * Wait for the CPUs in the set only (cpus: a cpu_set_t of setsize bytes, as for
 * sched_setaffinity).  This covers only threads that can never run outside the set (their
 * affinity, enforced by a cpuset or the caller): a thread that can migrate out is not covered.
 * Uses futex_waitv on up to 126 per-CPU words (the global word stands for any beyond).  Where
 * futex_waitv fails with ENOSYS or EPERM (Linux before 5.16, a seccomp profile), the process
 * stops using it and sleeps on one lagging CPU's word in bounded slices.  Errors as
 * barrierd_wait(); -EINVAL for a setsize that is 0 or not a multiple of sizeof(long).
 */
int barrierd_wait_cpus(struct barrierd *b, uint64_t stamp_ns, const void *cpus, size_t setsize,
		       int64_t timeout_ns);

/* barrierd_stamp_ns() + barrierd_wait(): a drop-in for membarrier(MEMBARRIER_CMD_GLOBAL, 0, 0). */
int barrierd_barrier(struct barrierd *b, int64_t timeout_ns);

/*
 * Ring the doorbell without sleeping: the daemon credits idle and offline CPUs and starts
 * listening to busy ones.  For pollers of barrierd_passed().  0, or -errno of FUTEX_WAKE;
 * -ENOENT (or the open's error) while an attach-later handle has no file.
 */
int barrierd_request(struct barrierd *b);

/* Is a daemon publishing (running, not stopped, heartbeat within three periods)? */
bool barrierd_live(const struct barrierd *b);

/*
 * The read-only mapping and its size, for tools (barrierctl) and tests: the mapping made at
 * open, or the longer one made when the extension appeared past its end.
 */
const struct barrierd_header *barrierd_mapping(const struct barrierd *b, size_t *size);

/*
 * The clock reading taken at open: stamps at or below it are refused (-EINVAL).  For an
 * attach-later handle, its creation until the file is mapped, then the clock reading of that.
 */
uint64_t barrierd_open_ns(const struct barrierd *b);

/*
 * Direct evidence (docs/DESIGN.md rule 11).  barrierd_open() asks the daemon for the
 * slots (unless BARRIERD_OPEN_NO_DIRECT); with them, barrierd_passed(), barrierd_wait(),
 * barrierd_wait_cpus() and barrierd_barrier() credit CPUs from the slots themselves (a stamp
 * above the barrier's, an idle CPU, the caller's own CPU) and leave the rest to the daemon.
 * vtime stamps never use them.  barrierd_direct() tells whether the handle credits from slots
 * now (the daemon that handed them out still runs).
 */
bool barrierd_direct(const struct barrierd *b);

/* How a CPU was credited from the slots, for audits and tools. */
enum barrierd_credit_kind {
	BARRIERD_CREDIT_STAMP = 1, /* its slot's stamp (value) is above the barrier's */
	BARRIERD_CREDIT_IDLE = 2,  /* its idle word read IDLE after the clock reading value */
	BARRIERD_CREDIT_SELF = 3,  /* the caller ran on it after the clock reading value */
};
typedef void (*barrierd_credit_fn)(void *arg, uint64_t stamp_ns, unsigned cpu, int kind,
				   uint64_t value);
/*
 * Call fn(arg, ...) in the calling thread for every CPU credited from the slots from now on
 * (NULL: stop).  Set it before other threads use the handle.  0, or -EINVAL.  fn runs while
 * the calling thread reads the slots: it must not call the library on b, close b or fork()
 * (a child that went on to call the library on b could release the slots the returning call
 * still reads).
 */
int barrierd_set_credit_observer(struct barrierd *b, barrierd_credit_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* BARRIERD_H */
