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

/* PROC_TIME_INIT_INO: the initial time namespace's fixed inode number; it has no offsets. */
#define TIME_INIT_INO 0xEFFFFFFAULL

unsigned bd_fork_gen;
/* The forking thread's own time namespace at the latest fork() (0: unknown). */
static uint64_t fork_parent_ino;

/* This thread's time namespace (thread-self: it exists even after the main thread exited). */
static int own_ns(struct stat *st)
{
	return stat("/proc/thread-self/ns/time", st) ? -errno : 0;
}

static void before_fork(void)
{
	struct stat st;

	__atomic_store_n(&fork_parent_ino, own_ns(&st) ? 0 : (uint64_t)st.st_ino, __ATOMIC_RELAXED);
}

static void after_fork_child(void)
{
	/* A child of unshare(CLONE_NEWTIME) lives in the new namespace: offsets must be re-read. */
	__atomic_add_fetch(&bd_fork_gen, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void register_fork_handler(void)
{
	pthread_atfork(before_fork, NULL, after_fork_child);
}

int bd_timens_offset(int64_t *off, uint64_t *ino)
{
	struct stat own, children;
	char name[32];
	long long sec, nsec;
	FILE *f;

	*off = 0;
	*ino = 0;
	if (own_ns(&own) == 0) {
		/*
		 * timens_offsets shows the offsets of time_for_children.  After unshare of a time
		 * namespace they are not ours (our own clock did not move): refuse rather than
		 * subtract someone else's offset.
		 */
		if (stat("/proc/thread-self/ns/time_for_children", &children) ||
		    own.st_ino != children.st_ino)
			return -EPROTO;
		*ino = own.st_ino;
		if (*ino == TIME_INIT_INO)
			return 0; /* the initial namespace: no offsets, nothing to read */
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
	return -EPROTO; /* e.g. the main thread exited: the file reads empty */
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

/* Refuse every ns stamp at or below floor from now on (waits: -ESTALE; passed(): false). */
static void raise_floor(struct barrierd *b, uint64_t floor)
{
	uint64_t cur = __atomic_load_n(&b->valid_after, __ATOMIC_RELAXED);

	while (cur < floor && !__atomic_compare_exchange_n(&b->valid_after, &cur, floor, false,
							   __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/*
 * Learn this process's offset and pin its namespace (an open fd keeps the namespace, and so
 * its inode number, from being freed and reused).  floor_on_change: the old offset may have
 * converted stamps since a move (a move noticed late); if the offset changes, refuse every ns
 * stamp up to now.  Publication order, for threads that stamp or check meanwhile: the offset
 * (and timens_seq, which makes a stamp taken across the change retry), then the floor (from a
 * clock read after the offset), then the namespace's inode (a thread that sees the new inode
 * sees the floor).  Two threads deriving at once (a forked child's) stay correct; the loser's
 * pinned fd may leak.
 */
static int derive(struct barrierd *b, bool floor_on_change)
{
	struct stat st;
	int64_t off, old = __atomic_load_n(&b->timens_off, __ATOMIC_RELAXED);
	uint64_t ino, dev = 0;
	uint64_t old_ino = __atomic_load_n(&b->timens_ino, __ATOMIC_RELAXED);
	uint64_t old_dev = __atomic_load_n(&b->timens_dev, __ATOMIC_RELAXED);
	int fd = -1;
	int ret = bd_timens_offset(&off, &ino);

	if (!ret && ino != 0) {
		fd = open("/proc/thread-self/ns/time", O_RDONLY | O_CLOEXEC);
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
	if (ret)
		off = INT64_MIN; /* unknown: stamps no barrier passes, waits -EPROTO */
	__atomic_store_n(&b->timens_off, off, __ATOMIC_RELEASE);
	__atomic_add_fetch(&b->timens_seq, 1, __ATOMIC_RELEASE);
	if (ret && floor_on_change)
		raise_floor(b, UINT64_MAX); /* nothing stamped since can be judged */
	else if (floor_on_change && off != old)
		raise_floor(b, bd_clock_raw() - (uint64_t)off);
	unpin(__atomic_exchange_n(&b->timens_fd, fd, __ATOMIC_ACQ_REL), old_dev, old_ino);
	__atomic_store_n(&b->timens_dev, dev, __ATOMIC_RELAXED);
	__atomic_store_n(&b->timens_ino, ret ? 0 : ino, __ATOMIC_RELEASE);
	return ret;
}

int bd_timens_derive(struct barrierd *b)
{
	return derive(b, false);
}

int64_t bd_timens_current(const struct barrierd *b)
{
	struct barrierd *m = (struct barrierd *)b; /* a cache, not the handle's meaning */
	unsigned gen = __atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&m->fork_gen, __ATOMIC_ACQUIRE) != gen) {
		uint64_t parent = __atomic_load_n(&fork_parent_ino, __ATOMIC_RELAXED);
		uint64_t pinned = __atomic_load_n(&m->timens_ino, __ATOMIC_RELAXED);

		/*
		 * Once per fork; if it cannot be known, stamps become ones no barrier passes.  If
		 * the parent itself had moved (setns) without the handle noticing, its stamps since
		 * the move used the old offset: refuse them here too.  (A child of unshare() is in
		 * a new namespace, but its parent was not: the parent's stamps were right.)
		 */
		derive(m, parent != 0 && pinned != 0 && parent != pinned);
		__atomic_store_n(&m->fork_gen, gen, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&m->timens_off, __ATOMIC_ACQUIRE);
}

int bd_timens_moved(struct barrierd *b)
{
	struct stat own;
	int64_t old = __atomic_load_n(&b->timens_off, __ATOMIC_ACQUIRE);
	uint64_t ino = __atomic_load_n(&b->timens_ino, __ATOMIC_ACQUIRE);
	int ret = own_ns(&own);

	if (ret == 0) {
		/*
		 * Pinned: no other namespace can carry this inode number while our fd is open
		 * (unless the application closed it: docs/CLIENT.md).
		 */
		if (ino != 0 && __atomic_load_n(&b->timens_fd, __ATOMIC_RELAXED) >= 0 &&
		    (uint64_t)own.st_ino == ino)
			return 0;
	} else if (ret == -ENOENT && ino == 0 && access("/proc/self/stat", R_OK) == 0) {
		return 0; /* a kernel without time namespaces, as when the offset was learnt */
	}
	/* Another namespace, or nothing readable: learn it all again (and refuse), or refuse. */
	if (derive(b, true))
		return -EPROTO;
	/*
	 * Same offset: another namespace, but the stamps were right.  Otherwise, stamps taken
	 * since the move were converted with the old offset.  Too early by the offsets'
	 * difference (the harm): all at or below the floor derive() raised.  Too late (a move to
	 * a namespace ahead): above the host time, which no genuine stamp can be, refused by the
	 * wait itself (wait.c).
	 */
	return __atomic_load_n(&b->timens_off, __ATOMIC_RELAXED) == old ? 0 : -ESTALE;
}
