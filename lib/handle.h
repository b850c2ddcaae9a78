/* SPDX-License-Identifier: MIT */
/*
 * libbarrierd's handle, struct barrierd, with the acquire loads that find its mapping, and what
 * every file of the library shares: the export mark and CPU bit sets.
 */
#ifndef BARRIERD_LIB_HANDLE_H
#define BARRIERD_LIB_HANDLE_H

#include <barrierd.h>
#include <barrierd_slot.h>
#include <stdbool.h>
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

/* One set of the daemon's slots and links (direct.h). */
struct bd_direct;

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

#endif
