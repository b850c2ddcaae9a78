// SPDX-License-Identifier: MIT
/* Time namespaces: this process's CLOCK_MONOTONIC offset against the host's (BRIEF §3.5). */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
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
		/* Once per fork; if it cannot be known, leave the stamp such that waits refuse it. */
		bd_timens_derive(m);
		__atomic_store_n(&m->fork_gen, gen, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&m->timens_off, __ATOMIC_RELAXED);
}

/*
 * Close fd if it is still the namespace we pinned (dev, ino): after a fork the child may have
 * closed its inherited descriptors (closefrom, daemonising) and reused the number.
 */
static void unpin(int fd, uint64_t dev, uint64_t ino)
{
	struct stat st;

	if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev &&
	    (uint64_t)st.st_ino == ino)
		close(fd);
}

void bd_timens_unpin(struct barrierd *b)
{
	unpin(__atomic_exchange_n(&b->timens_fd, -1, __ATOMIC_ACQ_REL),
	      __atomic_load_n(&b->timens_dev, __ATOMIC_RELAXED),
	      __atomic_load_n(&b->timens_ino, __ATOMIC_RELAXED));
}

int bd_timens_derive(struct barrierd *b)
{
	struct stat st;
	int64_t off;
	uint64_t ino, dev = 0;
	uint64_t old_ino = __atomic_load_n(&b->timens_ino, __ATOMIC_RELAXED);
	uint64_t old_dev = __atomic_load_n(&b->timens_dev, __ATOMIC_RELAXED);
	int fd = -1;
	int ret = bd_timens_offset(&off, &ino);

	if (!ret && ino != 0) {
		fd = open("/proc/self/ns/time", O_RDONLY | O_CLOEXEC);
		/* Pin the namespace we read (a single-threaded setns cannot run meanwhile). */
		if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_ino != ino)
			ret = -EPROTO;
		else
			dev = (uint64_t)st.st_dev;
	}
	if (ret && fd >= 0) {
		close(fd);
		fd = -1;
	}
	/* Racing derivations (threads of a forked child) each close only what they took out. */
	unpin(__atomic_exchange_n(&b->timens_fd, fd, __ATOMIC_ACQ_REL), old_dev, old_ino);
	__atomic_store_n(&b->timens_ino, ret ? 0 : ino, __ATOMIC_RELAXED);
	__atomic_store_n(&b->timens_dev, dev, __ATOMIC_RELAXED);
	__atomic_store_n(&b->timens_off, ret ? INT64_MIN : off, __ATOMIC_RELAXED);
	return ret;
}

/* Refuse every ns stamp at or below floor from now on (waits: -ESTALE; passed(): false). */
static void raise_floor(struct barrierd *b, uint64_t floor)
{
	uint64_t cur = __atomic_load_n(&b->valid_after, __ATOMIC_RELAXED);

	while (cur < floor && !__atomic_compare_exchange_n(&b->valid_after, &cur, floor, false,
							   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

int bd_timens_moved(struct barrierd *b)
{
	struct stat own;
	int64_t old = __atomic_load_n(&b->timens_off, __ATOMIC_RELAXED), now_off;
	uint64_t ino = __atomic_load_n(&b->timens_ino, __ATOMIC_RELAXED);

	if (stat("/proc/self/ns/time", &own) == 0) {
		/* Pinned: no other namespace can carry this inode number while our fd is open. */
		if (ino != 0 && __atomic_load_n(&b->timens_fd, __ATOMIC_RELAXED) >= 0 &&
		    (uint64_t)own.st_ino == ino)
			return 0;
	} else if (errno == ENOENT && ino == 0 && access("/proc/self/stat", R_OK) == 0) {
		return 0; /* a kernel without time namespaces, as when the offset was learnt */
	}
	/* Another namespace, or nothing readable: learn it all again, or refuse. */
	if (bd_timens_derive(b)) {
		/* Whatever was stamped since cannot be judged, and nothing later either. */
		raise_floor(b, UINT64_MAX);
		return -EPROTO;
	}
	now_off = __atomic_load_n(&b->timens_off, __ATOMIC_RELAXED);
	if (now_off == old)
		return 0; /* another namespace with the same offset: stamps were right */
	/*
	 * Stamps taken since the move were converted with the old offset.  Too early by the
	 * offsets' difference (the harm): all at or below the host time now, refused from now on.
	 * Too late (a move to a namespace ahead): above the host time, which no genuine stamp
	 * can be, so the wait refuses them itself (wait.c).
	 */
	raise_floor(b, bd_clock_raw() - (uint64_t)now_off);
	return -ESTALE;
}
