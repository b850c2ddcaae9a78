/* SPDX-License-Identifier: MIT */
/* libbarrierd internals: the handle and the helpers shared by the library's files. */
#ifndef BARRIERD_LIB_INTERNAL_H
#define BARRIERD_LIB_INTERNAL_H

#include <barrierd.h>
#include <stdint.h>

/* The shared-word loads, the fences and the clock (src/common, never installed). */
#include "bd_sync.h"

#define BDLIB_EXPORT __attribute__((visibility("default")))

struct barrierd {
	const struct barrierd_header *hdr; /* read-only shared mapping */
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
};

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

/* Is a daemon publishing?  (running flag, not stopped, heartbeat fresh) */
int bd_live(const struct barrierd *b, uint64_t now_host);

/* membarrier(MEMBARRIER_CMD_GLOBAL): 0 or its -errno, never a success it did not get. */
int bd_fallback_membarrier(void);

#endif
