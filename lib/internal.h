/* SPDX-License-Identifier: MIT */
/* libbarrierd internals: the handle and the helpers shared by the library's files. */
#ifndef BARRIERD_LIB_INTERNAL_H
#define BARRIERD_LIB_INTERNAL_H

#include <barrierd.h>
#include <barrierd_slot.h>
#include <stdint.h>

/* The shared-word loads, the fences and the clock (common/, never installed). */
#include "bd_sync.h"

#define BDLIB_EXPORT __attribute__((visibility("default")))

/* Bits for one CPU each, up to BARRIERD_MAX_CPUS (a stack array: 1 KiB). */
#define BD_CPU_WORDS (BARRIERD_MAX_CPUS / (8 * sizeof(unsigned long)))

/*
 * Slots sets a handle holds at once (lib/direct_sets.c): the one in use, and room for sets of
 * daemons that are gone while a call of another thread still loads from them.  A set is
 * dropped once no call can load from it; a handle meets any number of daemon runs.
 */
#define BD_DIRECT_SETS 3

/*
 * The first words of a BPF object's BPF_OBJ_GET_INFO_BY_FD record (lib/bpf_obj.c): a map's
 * type, id, key and value sizes; a link's type, id and program id.
 */
#define BD_OBJ_HEAD_WORDS 4

/* The daemon's slots and links, as received on its socket (DESIGN rule 11). */
struct bd_direct {
	const struct barrierd_slot *slots; /* read-only MAP_SHARED of the frozen map */
	size_t len;
	uint64_t generation; /* the file's generation of the daemon that sent them */
	unsigned fork_gen;   /* bd_fork_gen when fetched: a forked child fetches its own */
	/* each descriptor's identity: its BPF_OBJ_GET_INFO_BY_FD head (type, id, ...) */
	uint32_t ids[1 + BARRIERD_SLOTS_MAX_LINKS][BD_OBJ_HEAD_WORDS];
	unsigned nfds; /* the map's descriptor, then every link's: held until close */
	int fds[1 + BARRIERD_SLOTS_MAX_LINKS];
};

struct barrierd {
	/*
	 * The read-only shared mapping.  NULL while a BARRIERD_OPEN_ATTACH_LATER handle waits for
	 * its file: set once (bd_map_file, release, after every field it vouches for); entry
	 * points load it with bd_hdr() (acquire) before they touch anything of the file.
	 */
	const struct barrierd_header *hdr;
	/*
	 * NULL while the file has no extension.  Set once, when the feature bit appears
	 * (bd_ext_refresh, release); read it with bd_ext() (acquire), never directly.
	 */
	const struct barrierd_ext *ext;
	size_t size;
	int fd;		  /* the state file, kept only while ext is NULL (to map it), else -1 */
	int ext_busy;	  /* __atomic: one thread at a time in bd_ext_refresh (a trylock) */
	const void *map2; /* the longer mapping the extension needed, or NULL; unmapped at close */
	size_t size2;
	char *path;   /* the file's absolute path at open (realpath), or NULL: see bd_file_moved */
	uint64_t dev; /* and its identity */
	uint64_t ino;
	uint64_t ncpu;
	uint64_t open_ns;     /* host CLOCK_MONOTONIC at open: stamps must be later */
	int64_t timens_off;   /* this process's CLOCK_MONOTONIC offset (updated atomically) */
	uint64_t timens_ino;  /* the time namespace that offset belongs to */
	uint64_t timens_dev;  /* and its device (nsfs): to recognise timens_fd as still ours */
	int timens_fd;	      /* an fd on that namespace, or -1: pins its inode number */
	unsigned timens_seq;  /* bumped after every change of timens_off: stamps retry across one */
	uint64_t valid_after; /* ns stamps at or below: refused (open_ns; all, once retired) */
	unsigned fork_gen;    /* bd_fork_gen when timens_off was read */
	int fallback;
	int64_t fallback_after_ns;
	uid_t trusted_uid; /* the open options' trust, for a later attach */
	int trusted_uid_set;
	/* Attach later (lib/attach.c): the path to map once it exists, or NULL. */
	char *late_path;
	uint64_t
	    created_ns;	 /* host time at open: stamps after it, before open_ns, predate the file */
	int attach_busy; /* __atomic: one attach at a time (a trylock) */
	uint64_t attach_next_ns; /* __atomic: no attempt before this host time */
	/*
	 * Direct evidence (lib/direct.c, lib/slots_fetch.c), its sets' lifetime in
	 * lib/direct_sets.c.  direct_sets[i] is written only under direct_busy; a call reads it
	 * only inside a read section of set i (bd_direct_enter), which keeps it from being freed.
	 */
	struct bd_direct *direct_sets[BD_DIRECT_SETS]; /* the sets held, NULL where none */
	/* __atomic: per set, (fork generation << 32) | the read sections open in it */
	uint64_t direct_readers[BD_DIRECT_SETS];
	int direct_cur;	     /* __atomic: 1 + the index of the set in use, 0 for none */
	unsigned direct_old; /* __atomic: sets held but not in use (calls try to drop them) */
	int direct_busy;     /* __atomic: one fetch or drop at a time (a trylock, fork-tagged) */
	int direct_want;     /* __atomic: a call found the lock taken: its holder drops again */
	uint64_t direct_next_ns; /* __atomic: no fetch before this raw clock time */
	uint64_t direct_backoff; /* ns to wait after the next failed fetch (doubling) */
	bool no_direct;		 /* BARRIERD_OPEN_NO_DIRECT */
	bool relay_only; /* the file's owner is unmapped: trusted through the anchor alone */
	barrierd_credit_fn observer;
	void *observer_arg;
};

/* The mapping, or NULL while an attach-later handle has no file: acquire (see struct). */
static inline const struct barrierd_header *bd_hdr(const struct barrierd *b)
{
	return __atomic_load_n(&b->hdr, __ATOMIC_ACQUIRE);
}

/* The extension, or NULL: acquire, pairing with the release in bd_ext_refresh. */
static inline const struct barrierd_ext *bd_ext(const struct barrierd *b)
{
	return __atomic_load_n(&b->ext, __ATOMIC_ACQUIRE);
}

/* Is CPU c in a cpu_set_t of nbits bits? */
static inline bool bd_in_set(const unsigned long *set, size_t nbits, uint64_t c)
{
	if (c >= nbits)
		return false;
	return (set[c / (8 * sizeof(long))] >> (c % (8 * sizeof(long)))) & 1;
}

/*
 * A published value as far as it can be trusted (lib/trusted.c): the value itself if it was
 * read while one daemon of ours ran throughout; otherwise no more than what our daemon left
 * when it stopped (ext.stop_ns or stop_vtime), or 0 without the extension.
 */
uint64_t bd_trusted(const struct barrierd *b, const uint64_t *word, int vtime);

/*
 * Has every CPU of the set published a CLOCK_MONOTONIC value above stamp_ns, read while one
 * daemon of ours ran throughout (lib/trusted.c)?  Per-CPU values have no stop snapshot: they
 * count only while a daemon runs.
 */
bool bd_cpus_passed(const struct barrierd *b, const unsigned long *set, size_t nbits,
		    uint64_t stamp_ns);

/* The raw CLOCK_MONOTONIC of this process (in its time namespace), in ns: bd_mono_ns(). */
uint64_t bd_clock_raw(void);

/*
 * This process's CLOCK_MONOTONIC offset and its time namespace's inode.  /proc/self/
 * timens_offsets describes the namespace of the process's future children, which differs
 * from its own after unshare(CLONE_NEWTIME): then -EPROTO, as without /proc.
 */
int bd_timens_offset(int64_t *off, uint64_t *ino);

/*
 * Learn this process's offset and pin its namespace (an open fd keeps the namespace, and so
 * its inode number, from being freed and reused).  0, or -EPROTO with the offset INT64_MIN.
 */
int bd_timens_derive(struct barrierd *b);

/* Close the handle's pinned namespace fd, if the number still refers to it. */
void bd_timens_unpin(struct barrierd *b);

/* Bumped in every child after fork(): handles re-derive their offset (see timens.c). */
extern unsigned bd_fork_gen;

/* The offset to subtract from this process's clock, re-derived after a fork. */
int64_t bd_timens_current(const struct barrierd *b);

/*
 * Has a setns() moved this thread to another time namespace since the handle learnt its
 * offset?  0, or -ESTALE: the handle is retired (offset unknown: waits -EPROTO; every ns
 * stamp refused); -EPROTO if it already was.  One stat() when nothing moved: the pinned
 * namespace's inode number cannot be reused, so the same inode means the same namespace, and
 * a namespace's offsets cannot change once a process has entered it.
 */
int bd_timens_moved(struct barrierd *b);

/* Has this process forked since the handle learnt its offset (loads only)? */
bool bd_timens_stale_fork(const struct barrierd *b);

/*
 * Path trust (docs/PROTOCOL.md, "Trusting the file"): -EPERM with no bytes of the file
 * trusted, or an open fd.
 */
int bd_open_trusted(const char *path, uid_t trusted_uid, int trusted_uid_set, int *fd_out);

/*
 * Open, check and map the file at path into b (trust, structure, times from this boot), then
 * publish the mapping (hdr last, release).  0 or -errno; -ENOENT when the file or a directory
 * of its path does not exist; for a handle waiting for its file (late), also while a daemon is
 * still creating it (unreadable to us, shorter than a header, or no magic yet).
 */
int bd_map_file(struct barrierd *b, const char *path, bool late);

/* What a fallback answers for (bd_fallback). */
enum bd_fb_stamp {
	BD_FB_BARRIER, /* a barrier with no stamp yet: the call is the barrier */
	BD_FB_NS,      /* a ns stamp in host time */
	BD_FB_VTIME,   /* a vtime stamp */
};

/* bd_fallback(): the call would not prove a barrier for this stamp, and was not made. */
#define BD_FALLBACK_UNPROVEN 1

/* A handle without a file yet (BARRIERD_OPEN_ATTACH_LATER): remember where to look.  0 or -ENOMEM.
 */
int bd_attach_later(struct barrierd *b, const char *path);

/*
 * An attach-later handle's attempt to map its file: 0 once mapped (by this call or before),
 * -ENOENT while it is not there (or another thread is trying, or the last try was under
 * 10 ms ago: nobody waits for an attempt), or bd_map_file()'s error.
 */
int bd_attach(struct barrierd *b);

/*
 * A wait on a handle with no file: the fallback if the handle has one and it proves the stamp
 * (bd_fallback); otherwise a back-off of one default liveness bound within timeout_ns, then
 * one more attempt.  1 if the file was mapped by then (*left_ns: the time left of timeout_ns,
 * < 0 for none), else membarrier's result, -ESTALE or an attach error.
 */
int bd_detached_wait(struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp, int64_t timeout_ns,
		     int64_t *left_ns);

/*
 * What a wait for a stamp taken before the file was mapped gets: the fallback, or -EINVAL (also
 * for a stamp the fallback does not prove).
 */
int bd_before_attach(struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp);

/*
 * Structure checks of a mapped file: 0 or -EPROTO.  *ncpu is the one value of ncpu that was
 * checked: callers must use it, never load the field again (a reset may change it under us).
 */
int bd_validate(const struct barrierd_header *h, size_t size, const struct barrierd_ext **ext,
		uint64_t *ncpu);

/*
 * A handle opened before the daemon laid out the extension: once the feature bit is set,
 * validate the extension as bd_validate does (mapping the file again if it grew past our
 * mapping) and publish it.  Never blocks; does nothing once the extension is known.
 */
void bd_ext_refresh(struct barrierd *b);

/* Doorbell: one FUTEX_WAKE; returns how many daemon threads heard it, or -errno. */
int bd_ring(const struct barrierd *b);

/*
 * A sleep of another primitive's (primitives/ec.c) on its own 32-bit word, expecting val, that the
 * daemon also counts as a library waiter's for every CPU: queued as well on the global ns word
 * (expecting snap_global, its low half loaded before the caller's last check) and on the
 * doorbell's mark (lib/wait.c).  At most slice_ns.  1 when it slept (or a word differed), 0
 * when futex_waitv could not be used: the caller sleeps its own way then.
 */
int bd_sleep_counted(const struct barrierd *b, const uint32_t *word, uint32_t val, bool shared,
		     uint32_t snap_global, int64_t slice_ns);

/* Is a daemon publishing?  (running flag, not stopped, heartbeat fresh) */
int bd_live(const struct barrierd *b, uint64_t now_host);

/* The liveness bound: BARRIERD_LIVENESS_PERIODS heartbeat periods, as the file states them. */
uint64_t bd_liveness_ns(const struct barrierd *b);

/*
 * Is the handle's file still the one at its path (lib/identity.c)?  0, or -EIDRM: the path
 * was removed, names another file, or the file is now shorter than our mapping.  One stat().
 */
int bd_file_moved(const struct barrierd *b);

/*
 * Direct evidence (DESIGN rule 11, lib/direct.c).  May the set be credited from now: is the
 * file marked running (not stopped) in the generation it came with, and was it fetched by
 * this process (not a parent's, after a fork)?  A policy (a stopped or replaced daemon's
 * tracer is let go), not soundness.  A set that fails it is never used again: it is dropped.
 */
bool bd_direct_usable(const struct barrierd *b, const struct bd_direct *d);

/* ---- the sets' lifetime (lib/direct_sets.c) ---------------------------------------------- */

/* A read section of one set: what bd_direct_get gave, for bd_direct_put. */
struct bd_direct_ref {
	int cur;      /* 1 + the set's index, 0: none */
	unsigned gen; /* bd_fork_gen at entry: the section counts in that process's tally */
};

/*
 * The set to credit from, inside a read section (no thread frees it until bd_direct_put), or
 * NULL (no section open).  Never blocks.  A set found unusable is retired, and sets no longer
 * in use are dropped once no section reads them, by whichever call gets the lock first.
 */
const struct bd_direct *bd_direct_get(const struct barrierd *b, struct bd_direct_ref *ref);
void bd_direct_put(const struct barrierd *b, const struct bd_direct_ref *ref);

/* A call that credits nothing from the slots (a vtime wait): drop sets that are gone. */
void bd_direct_tidy(const struct barrierd *b);

/*
 * direct_busy, as a trylock that a forked child takes over: true if taken.  The unlock drops
 * again (bd_direct_reap) while a call that found the lock taken asked for it (direct_want).
 */
bool bd_direct_lock(struct barrierd *b);
void bd_direct_unlock(struct barrierd *b);

/*
 * Under the lock: retire the set in use if it is unusable, and drop every other set that no
 * read section holds.  Returns true if a usable set stays in use.
 */
bool bd_direct_reap(struct barrierd *b);

/*
 * Under the lock, after bd_direct_reap returned false: publish d as the set in use.  0, or
 * -EBUSY with d untouched (every place holds a set still read: try again later).
 */
int bd_direct_install(struct barrierd *b, struct bd_direct *d);

/*
 * Unmap one set, close its descriptors (those still ours, and no number that a set in b's
 * places holds) and free it (lib/slots_fetch.c).  Under the lock, d out of b's places.
 */
void bd_direct_release(const struct barrierd *b, struct bd_direct *d);

/*
 * Credit from d every CPU in left[] (ncpu bits) that the slots show passed ns stamp T, and
 * clear its bit; calls the observer for each.  Returns how many CPUs stay set, or UINT64_MAX
 * (nothing credited) without a live daemon or a known time-namespace offset.
 */
uint64_t bd_direct_credit(const struct barrierd *b, const struct bd_direct *d, uint64_t T,
			  unsigned long *left, uint64_t *stamped);

/*
 * Has every CPU in the set (all CPUs if set is NULL) passed ns stamp T, by direct credit or
 * by the trusted published values (the global value, then the per-CPU ones)?  1 or 0; -1 if
 * the handle has no slots to use (the caller judges by the file alone).  left, if not NULL,
 * gets the CPUs that direct credit did not cover (ncpu bits).  *clock_only (if not NULL) is
 * set when every CPU passed by idle or own-CPU credit alone: judged by r > T, both readings
 * of this process's clock converted with the same offset, so a time-namespace move before
 * the stamp cannot make that judgement early (no stamp or published time was compared).
 */
int bd_direct_passed(const struct barrierd *b, uint64_t T, const unsigned long *set, size_t nbits,
		     unsigned long *left, bool *clock_only);

/*
 * Ask the daemon for its slots (lib/slots_fetch.c) when the file offers them and the handle
 * has none of this daemon's (or of this process: after a fork): at most one attempt per
 * 100 ms per handle, backing off to 10 s while attempts fail, never blocking another thread (a
 * trylock), and not with less than twice the reply timeout of budget_ns left (< 0: no limit).
 * Silent: any failure leaves the handle on the file alone.
 */
void bd_direct_refresh(struct barrierd *b, int64_t budget_ns);

/* Release every set (barrierd_close: no call runs concurrently). */
void bd_direct_free(struct barrierd *b);

/*
 * The state file's directory, trusted as bd_open_trusted() trusts it: an O_PATH descriptor,
 * and the file's name within it in base.  0 or -errno (-EPERM: not trusted).
 */
int bd_open_trusted_dir(const char *path, uid_t trusted_uid, int trusted_uid_set, int *dfd_out,
			const char **base);

/* Is this owner root, or the uid the open options trust? */
int bd_owner_trusted(uid_t owner, uid_t trusted_uid, int trusted_uid_set);

/* Split path into its directory (opened O_PATH, not checked: the caller checks) and base. */
int bd_open_dir(const char *path, int *dfd, const char **base);

/*
 * The file at path, opened as bd_open_trusted opens it, when this process runs in a user
 * namespace other than the initial one and the file's owner is unmapped there (the overflow
 * uid): on the host, -EPERM at once.  Trusted only once the daemon's anchor names it
 * (bd_relay_verify): docs/PROTOCOL.md §6.1.  0 and *fd, or -errno (-EPERM: another owner).
 */
int bd_open_relayed(const char *path, int *fd_out);

/*
 * The anchor's record (lib/anchor.c) from its program and .rodata map descriptors, if the
 * kernel vouches for them: 0, or -errno (-EPROTO: not an anchor).
 */
int bd_anchor_read(int prog_fd, int map_fd, struct barrierd_anchor *out);
/* Is the file open at fd the one the anchor names (its file handle)?  1, 0 or -errno. */
int bd_file_handle_is(int fd, const struct barrierd_anchor *a);

/*
 * For a handle whose file was opened by bd_open_relayed: fetch a set from the socket beside it
 * and keep nothing; 0 only if the set is anchored, the anchor names the file open at file_fd
 * (mapped at h) and its generation, and the slots are the anchor's.  -errno otherwise.
 */
int bd_relay_verify(const struct barrierd *b, const struct barrierd_header *h, int file_fd);

/* bpf(cmd, a): its result, or -errno (lib/bpf_obj.c). */
union bpf_attr;
int bd_sys_bpf(int cmd, union bpf_attr *a);
/* BPF_OBJ_GET_INFO_BY_FD of fd into buf (len bytes, zeroed by the caller): 0 or -errno. */
int bd_bpf_obj_info(int fd, void *buf, uint32_t len);

/* membarrier(MEMBARRIER_CMD_GLOBAL): 0 or its -errno, never a success it did not get. */
int bd_fallback_membarrier(void);

/*
 * The fallback for one stamp (lib/fallback.c): membarrier's result (0 or -errno) when a
 * barrier that began with the call covers the stamp, else BD_FALLBACK_UNPROVEN without the
 * call: a ns stamp T not below r, the host clock read before the call (LFENCE between them);
 * a vtime stamp V above the file's vtime loaded before the call (or no file: only the
 * UINT64_MAX an attach-later handle's barrierd_stamp_vtime() gives without one).  A caller
 * then goes on as without a fallback.
 */
int bd_fallback(const struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp);

/* ---- reclamation (lib/primitives/: retire.c, epoch.c, hp.c) -------------------------------- */

/* A retired object and the function that frees it. */
struct bd_retired {
	void *ptr;
	void (*fn)(void *);
};

/* A growable list of them; owned by a domain, under its mutex. */
struct bd_retired_list {
	struct bd_retired *v;
	size_t n, cap;
};

/* The barrier both schemes take: barrierd_barrier(b), or membarrier(GLOBAL) without b. */
int bd_reclaim_barrier(struct barrierd *b, int64_t timeout_ns);
/* Append (growing the list): 0 or -ENOMEM (nothing appended). */
int bd_retired_push(struct bd_retired_list *l, void *ptr, void (*fn)(void *));
/*
 * Under the domain's mutex: move l's objects to *batch, so that they are synchronized and freed
 * outside the mutex, and restart l on the spare buffer if there is one (pushes need not allocate).
 */
void bd_retired_detach(struct bd_retired_list *l, struct bd_retired_list *spare,
		       struct bd_retired_list *batch);
/*
 * Under the mutex: put what is left in batch (objects not freed) back on l, then keep batch's
 * buffer as the spare or free it.  0, or -ENOMEM: l could not grow, and the objects left are
 * leaked (never freed under a reader, never handed back to a caller).
 */
int bd_retired_requeue(struct bd_retired_list *l, struct bd_retired_list *spare,
		       struct bd_retired_list *batch);
/* A raw-clock deadline timeout_ns from now (UINT64_MAX for < 0), and what is left of it. */
uint64_t bd_reclaim_deadline(int64_t timeout_ns);
int64_t bd_reclaim_left(uint64_t deadline);
/*
 * The next step of a writer's wait for a reader: a pause for the first few steps, then sleeps
 * from 1 us doubling to 1 ms, never past deadline.  0, or -ETIMEDOUT.
 */
int bd_reclaim_backoff(unsigned *step, uint64_t deadline);
/* This thread's owner id for the records it registers (issued on first use; never 0). */
uint64_t bd_owner_self(void);
/*
 * May the thread with this id run in this process?  False only for a thread of a process this
 * one was forked from, other than the thread that forked it: its record is nobody's here.
 */
bool bd_owner_here(uint64_t id);

#endif
