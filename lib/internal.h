/* SPDX-License-Identifier: MIT */
/* libbarrierd internals: the handle and the helpers shared by the library's files. */
#ifndef BARRIERD_LIB_INTERNAL_H
#define BARRIERD_LIB_INTERNAL_H

#include <barrierd.h>
#include <barrierd_slot.h>
#include <stdint.h>

/* The shared-word loads, the fences and the clock (src/common, never installed). */
#include "bd_sync.h"

#define BDLIB_EXPORT __attribute__((visibility("default")))

/* Bits for one CPU each, up to BARRIERD_MAX_CPUS (a stack array: 1 KiB). */
#define BD_CPU_WORDS (BARRIERD_MAX_CPUS / (8 * sizeof(unsigned long)))

/*
 * Slots sets a handle may fetch in its life (one per daemon run it meets).  Each is kept, its
 * descriptors open, until barrierd_close(): another thread may still be loading from it.
 */
#define BD_DIRECT_MAX_SETS 4

/* The daemon's slots and links, as received on its socket (DESIGN rule 11). */
struct bd_direct {
	const struct barrierd_slot *slots; /* read-only MAP_SHARED of the frozen map */
	size_t len;
	uint64_t generation; /* the file's generation of the daemon that sent them */
	unsigned fork_gen;   /* bd_fork_gen when fetched: a forked child fetches its own */
	uint64_t ids[1 + BARRIERD_SLOTS_MAX_LINKS]; /* each descriptor's map_id or link_id */
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
	/* Direct evidence (lib/direct.c, lib/slots_fetch.c). */
	const struct bd_direct *direct; /* __atomic: the newest set, or NULL (release/acquire) */
	struct bd_direct *direct_sets[BD_DIRECT_MAX_SETS]; /* every set fetched: freed at close */
	unsigned direct_nsets;
	int direct_busy;	 /* __atomic: one fetch at a time (a trylock, fork-tagged) */
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
 * A wait on a handle with no file: the fallback if the handle has one; otherwise a back-off of
 * one default liveness bound within timeout_ns, then one more attempt.  1 if the file was
 * mapped by then (*left_ns: the time left of timeout_ns, < 0 for none), else membarrier's
 * result, -ESTALE or an attach error.
 */
int bd_detached_wait(struct barrierd *b, int64_t timeout_ns, int64_t *left_ns);

/* What a wait for a stamp taken before the file was mapped gets: the fallback, or -EINVAL. */
int bd_before_attach(struct barrierd *b);

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
 * A sleep of another primitive's (lib/ec.c) on its own 32-bit word, expecting val, that the
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
 * Direct evidence (DESIGN rule 11, lib/direct.c).  The slots set to credit from now: the
 * newest one, if the file is marked running (not stopped) in the generation it came with;
 * else NULL.  A policy (a stopped or replaced daemon's tracer is let go), not soundness.
 */
const struct bd_direct *bd_direct_use(const struct barrierd *b);

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
 * 100 ms per handle, backing off to 10 s while attempts fail, BD_DIRECT_MAX_SETS sets in all,
 * never blocking another thread (a trylock), and not with less than twice the reply timeout
 * of budget_ns left (< 0: no limit).  Silent: any failure leaves the handle on the file alone.
 */
void bd_direct_refresh(struct barrierd *b, int64_t budget_ns);

/* Unmap and close every set (barrierd_close). */
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
 * The file at path, opened as bd_open_trusted opens it, when its owner is unmapped in our user
 * namespace (the overflow uid).  Trusted only once the daemon's anchor names it
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

/* membarrier(MEMBARRIER_CMD_GLOBAL): 0 or its -errno, never a success it did not get. */
int bd_fallback_membarrier(void);

/* ---- reclamation (lib/retire.c, lib/epoch.c, lib/hp.c) ---------------------------------- */

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

#endif
