// SPDX-License-Identifier: MIT
/* Time namespaces: this process's CLOCK_MONOTONIC offset against the host's (BRIEF §3.5). */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

unsigned bd_fork_gen;

static void after_fork_child(void)
{
	/* A child of unshare(CLONE_NEWTIME) lives in the new namespace: offsets must be re-read. */
	__atomic_add_fetch(&bd_fork_gen, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

int bd_timens_offset(int64_t *off, uint64_t *ino)
{
	struct stat own, children;
	char name[32];
	long long sec, nsec;
	FILE *f;

	*off = 0;
	*ino = 0;
	if (stat("/proc/self/ns/time", &own) == 0) {
		/*
		 * timens_offsets shows the offsets of time_for_children.  After unshare of a time
		 * namespace they are not ours (our own clock did not move): refuse rather than
		 * subtract someone else's offset.
		 */
		if (stat("/proc/self/ns/time_for_children", &children) || own.st_ino != children.st_ino)
			return -EPROTO;
		*ino = own.st_ino;
	} else if (errno != ENOENT || access("/proc/self/stat", R_OK) != 0) {
		return -EPROTO; /* no /proc: we cannot know our offset */
	}
	f = fopen("/proc/self/timens_offsets", "re");
	if (!f) {
		/* No time namespaces in this kernel: there is no offset.  No /proc: refuse. */
		if (errno == ENOENT && access("/proc/self/stat", R_OK) == 0)
			return 0;
		return -EPROTO;
	}
	while (fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3) {
		if (strcmp(name, "monotonic") == 0) {
			*off = (int64_t)sec * 1000000000LL + nsec;
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -EPROTO;
}

int64_t bd_timens_current(const struct barrierd *b)
{
	struct barrierd *m = (struct barrierd *)b; /* a cache, not the handle's meaning */
	unsigned gen = __atomic_load_n(&bd_fork_gen, __ATOMIC_RELAXED);

	if (__atomic_load_n(&m->fork_gen, __ATOMIC_RELAXED) != gen) {
		int64_t off;
		uint64_t ino;

		/* Once per fork; if it cannot be known, leave the stamp such that waits refuse it. */
		if (bd_timens_offset(&off, &ino) == 0) {
			__atomic_store_n(&m->timens_off, off, __ATOMIC_RELAXED);
			__atomic_store_n(&m->timens_ino, ino, __ATOMIC_RELAXED);
		} else {
			__atomic_store_n(&m->timens_off, INT64_MIN, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&m->fork_gen, gen, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&m->timens_off, __ATOMIC_RELAXED);
}

int bd_timens_moved(struct barrierd *b)
{
	struct stat own;
	int64_t off;
	uint64_t ino;

	if (stat("/proc/self/ns/time", &own) == 0) {
		if ((uint64_t)own.st_ino == __atomic_load_n(&b->timens_ino, __ATOMIC_RELAXED))
			return 0;
	} else if (errno == ENOENT && __atomic_load_n(&b->timens_ino, __ATOMIC_RELAXED) == 0) {
		return 0; /* no time namespaces here, as when the handle learnt its offset */
	}
	/* Another namespace (or none readable): read it all, as the handle did at open. */
	if (bd_timens_offset(&off, &ino) != 0)
		return 0;
	__atomic_store_n(&b->timens_ino, ino, __ATOMIC_RELAXED);
	if (off == __atomic_load_n(&b->timens_off, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&b->timens_off, off, __ATOMIC_RELAXED);
	return -ESTALE;
}
