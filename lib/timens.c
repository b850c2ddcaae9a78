// SPDX-License-Identifier: MIT
/*
 * Time namespaces: this process's CLOCK_MONOTONIC offset against the host's (DESIGN rule 5;
 * docs/PROTOCOL.md, "Time namespaces").
 *
 * The offset is learnt at open and again in a child after fork() (a child of
 * unshare(CLONE_NEWTIME) lives in the new namespace).  A process that moves itself into
 * another namespace with setns() retires its handles: the move is found by the slow paths
 * (bd_timens_moved) and in forked children, and from then on the handle's offset is unknown
 * (every wait -EPROTO, every ns stamp refused).  Re-deriving in place was tried: with threads
 * racing the move, stamps taken across it, and children forked before it was noticed, every
 * variant left an interleaving that passed a stamp converted with the old offset.
 */
#include "handle.h"
#include "timens.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* PROC_TIME_INIT_INO: the initial time namespace's fixed inode number; it has no offsets. */
#define TIME_INIT_INO 0xEFFFFFFAULL
#define FORK_RING 64

unsigned bd_fork_gen;

/*
 * Out of line, so that the stamp's clock read is one call that tests/audit/check_disasm.sh
 * finds after the stamp's fences.
 */
uint64_t bd_clock_raw(void)
{
	return bd_mono_ns();
}
/*
 * The forking thread's own time namespace and the one its children get, indexed by the
 * generation the child will have (UNKNOWN_NS: could not be read).  A child (and its own
 * children, before they touch the handle) reads the entry of the first fork since the handle
 * learnt its offset: per generation, because later forks must not overwrite what an older
 * fork recorded.
 */
#define UNKNOWN_NS UINT64_MAX
static uint64_t fork_parent_ino[FORK_RING], fork_child_ino[FORK_RING];

/* This thread's time namespace (thread-self: it exists even after the main thread exited). */
static int own_ns(struct stat *st)
{
	return stat("/proc/thread-self/ns/time", st) ? -errno : 0;
}

static void before_fork(void)
{
	struct stat st;
	unsigned next = __atomic_load_n(&bd_fork_gen, __ATOMIC_RELAXED) + 1;

	__atomic_store_n(&fork_parent_ino[next % FORK_RING],
			 own_ns(&st) ? UNKNOWN_NS : (uint64_t)st.st_ino, __ATOMIC_RELAXED);
	__atomic_store_n(&fork_child_ino[next % FORK_RING],
			 stat("/proc/thread-self/ns/time_for_children", &st) ? UNKNOWN_NS
									     : (uint64_t)st.st_ino,
			 __ATOMIC_RELAXED);
}

static void after_fork_child(void)
{
	__atomic_add_fetch(&bd_fork_gen, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void register_fork_handler(void)
{
	pthread_atfork(before_fork, NULL, after_fork_child);
}

int bd_timens_offset(int64_t *off, uint64_t *ino)
{
	struct stat own, kids, own2, kids2;
	char name[32];
	long long sec, nsec;
	int found = 0;
	FILE *f;

	*off = 0;
	*ino = 0;
	if (own_ns(&own) == 0) {
		*ino = own.st_ino;
		if (*ino == TIME_INIT_INO)
			return 0; /* the initial namespace: no offsets, nothing to read */
		/*
		 * /proc/self/timens_offsets shows the offsets of the main thread's
		 * time_for_children.  Only when that is this thread's own namespace are they ours
		 * (after an unshare they are not: refuse rather than subtract someone else's).
		 */
		if (stat("/proc/self/ns/time_for_children", &kids) || own.st_ino != kids.st_ino)
			return -EPROTO;
	} else if (errno != ENOENT || access("/proc/self/stat", R_OK) != 0) {
		return -EPROTO; /* no /proc: we cannot know our offset */
	}
	f = fopen("/proc/self/timens_offsets", "re");
	if (!f) {
		/* No time namespaces in this kernel: there is no offset.  No /proc: refuse. */
		if (errno == ENOENT && *ino == 0 && access("/proc/self/stat", R_OK) == 0)
			return 0;
		return -EPROTO;
	}
	while (!found && fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3) {
		if (strcmp(name, "monotonic") == 0) {
			*off = (int64_t)sec * 1000000000LL + nsec;
			found = 1;
		}
	}
	fclose(f);
	if (!found)
		return -EPROTO; /* e.g. the main thread exited: the file reads empty */
	/* Another thread's unshare or setns between the checks and the read: refuse. */
	if (*ino != 0 && (own_ns(&own2) || stat("/proc/self/ns/time_for_children", &kids2) ||
			  own2.st_ino != own.st_ino || kids2.st_ino != own.st_ino))
		return -EPROTO;
	return 0;
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

/*
 * Retire the handle's offset: unknown from now on, so stamps become ones no barrier passes
 * and waits return -EPROTO; and every ns stamp already taken is refused (valid_after at its
 * maximum: waits -ESTALE, barrierd_passed() false).  The floor goes up before the offset
 * changes, and timens_seq tells a stamp taken across the change to retry (stamp.c).
 */
static void retire(struct barrierd *b)
{
	__atomic_store_n(&b->valid_after, UINT64_MAX, __ATOMIC_RELEASE);
	__atomic_store_n(&b->timens_off, INT64_MIN, __ATOMIC_RELEASE);
	__atomic_add_fetch(&b->timens_seq, 1, __ATOMIC_ACQ_REL);
}

/*
 * Learn this process's offset and pin its namespace (an open fd keeps the namespace, and so
 * its inode number, from being freed and reused).  On failure the handle is retired.  Two
 * threads of a forked child deriving at once reach the same result; the loser's pinned fd
 * may leak.
 */
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
		fd = open("/proc/thread-self/ns/time", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_ino != ino)
			ret = -EPROTO;
		else
			dev = (uint64_t)st.st_dev;
	}
	if (ret && fd >= 0) {
		close(fd);
		fd = -1;
	}
	unpin(__atomic_exchange_n(&b->timens_fd, fd, __ATOMIC_ACQ_REL), old_dev, old_ino);
	__atomic_store_n(&b->timens_dev, dev, __ATOMIC_RELAXED);
	__atomic_store_n(&b->timens_ino, ret ? 0 : ino, __ATOMIC_RELEASE);
	if (ret) {
		retire(b);
		return ret;
	}
	__atomic_store_n(&b->timens_off, off, __ATOMIC_RELEASE);
	__atomic_add_fetch(&b->timens_seq, 1, __ATOMIC_ACQ_REL);
	return 0;
}

bool bd_timens_stale_fork(const struct barrierd *b)
{
	return __atomic_load_n(&b->fork_gen, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE);
}

int64_t bd_timens_current(const struct barrierd *b)
{
	struct barrierd *m = (struct barrierd *)b; /* a cache, not the handle's meaning */
	unsigned gen = __atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE);
	unsigned had = __atomic_load_n(&m->fork_gen, __ATOMIC_ACQUIRE);

	if (had != gen) {
		uint64_t pinned = __atomic_load_n(&m->timens_ino, __ATOMIC_RELAXED);
		uint64_t parent =
		    __atomic_load_n(&fork_parent_ino[(had + 1) % FORK_RING], __ATOMIC_RELAXED);
		uint64_t child =
		    __atomic_load_n(&fork_child_ino[(had + 1) % FORK_RING], __ATOMIC_RELAXED);
		int fd = __atomic_load_n(&m->timens_fd, __ATOMIC_RELAXED);
		struct stat st;

		/*
		 * Once per fork.  If the process that forked had itself moved (setns) without
		 * the handle noticing, its stamps since the move used the old offset: the child
		 * retires the handle as the parent's next slow path would have.  (A child of
		 * unshare() is in a new namespace, but its parent was not: its stamps were
		 * right, and the child learns its own offset.)  A parent whose namespace could
		 * not be read counts as moved (UNKNOWN_NS differs from any pinned inode).  Too
		 * many forks behind to know: retire too.  A child born into the pinned namespace
		 * keeps the inherited offset and descriptor, reading nothing from /proc (it may
		 * be at its descriptor limit, or chrooted, by now).
		 */
		if (__atomic_load_n(&m->valid_after, __ATOMIC_ACQUIRE) == UINT64_MAX ||
		    gen - had >= FORK_RING || (pinned != 0 && parent != pinned))
			retire(m);
		else if (gen - had == 1 && pinned != 0 && child == pinned && fd >= 0 &&
			 fstat(fd, &st) == 0 && (uint64_t)st.st_ino == pinned &&
			 (uint64_t)st.st_dev == __atomic_load_n(&m->timens_dev, __ATOMIC_RELAXED))
			; /* born into the pinned namespace, whose fd we inherited: nothing changed
			   */
		else
			bd_timens_derive(m);
		__atomic_store_n(&m->fork_gen, gen, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&m->timens_off, __ATOMIC_ACQUIRE);
}

int bd_timens_moved(struct barrierd *b)
{
	struct stat own;
	uint64_t ino = __atomic_load_n(&b->timens_ino, __ATOMIC_ACQUIRE);
	int ret;

	if (__atomic_load_n(&b->timens_off, __ATOMIC_ACQUIRE) == INT64_MIN)
		return -EPROTO; /* retired, or never known */
	ret = own_ns(&own);
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
	/* Another namespace, or nothing readable: the handle cannot judge stamps any more. */
	retire(b);
	return -ESTALE;
}
