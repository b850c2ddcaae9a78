// SPDX-License-Identifier: MIT
/*
 * wait_raw: barriers on the raw state file, without libbarrierd.
 *
 *   wait_raw [-n COUNT] [STATE_PATH]          (default: /run/barrierd/state)
 *
 * A hand-written client following docs/PROTOCOL.md section 6, written against the public
 * header alone (include/barrierd.h, for the layout), as a program outside this repository
 * would be.  Each step names the protocol section it implements:
 *
 *   6.1  trust: the file and every directory above it are root's and writable by no one else;
 *   6.2  validate the layout;
 *   6.3  refuse values from the future, and keep open_ns;
 *   6.4  time namespaces: this sample refuses to run in one rather than convert;
 *   6.5  stamp: MFENCE; LFENCE; CLOCK_MONOTONIC;
 *   6.6  passed: strict >, on a value read between two reads of flags and generation;
 *   6.7  wait: futex word first, then the full value, then a bounded shared futex sleep;
 *   6.8  ring the doorbell when the stamp is above served_ns (the daemon's promise);
 *   6.9  liveness: flags and heartbeat.
 *
 * Two simplifications against libbarrierd: no time-namespace conversion (6.4), and a file
 * whose extension is not laid out at open (a daemon has not started on it yet) is used without
 * it for the handle's life: no doorbell, and nothing of a stopped file is trusted.  libbarrierd
 * picks the extension up later; here, open again.  Prints the barriers passed and their mean
 * latency; exits 0 when every barrier passed, 1 otherwise.
 */
#include <barrierd.h> /* the layout and its constants; no libbarrierd call */

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ULL
#define SLICE_NS (10 * MS)	       /* longest sleep between full checks (6.7) */
#define SHORT_SLICE_NS (1 * MS)	       /* after a lost ring */
#define RERING_NS (200 * 1000ULL)      /* keep re-ringing a lost ring this long (6.8) */
#define MAX_DEPTH 4096		       /* ancestors the trust walk checks; deeper is refused */
#define PROC_TIME_INIT_INO 0xEFFFFFFAu /* the initial time namespace's inode */

struct view {
	const struct barrierd_header *h;
	const struct barrierd_ext *x; /* NULL: no extension at open (no doorbell, no snapshot) */
	size_t size;
	uint64_t ncpu; /* as validated at open; never loaded again */
	uint64_t open_ns;
};

/* ---- loads, fences, the clock and the futex ------------------------------------------------- */

/*
 * A shared 64-bit word: one aligned load (6, "Conventions").  Acquire keeps the compiler to
 * program order, which is all x86 needs for load-load order.  The empty asm hides the pointer's
 * provenance from GCC 12, which misjudges atomics on flexible array members (per_cpu[]).
 */
static uint64_t ld(const uint64_t *p)
{
	__asm__("" : "+r"(p));
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* The low half of a word: its futex word (x86 is little-endian). */
static uint32_t ld_low(const uint64_t *p)
{
	__asm__("" : "+r"(p));
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

static uint32_t ld32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* never CLOCK_MONOTONIC_COARSE */
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Shared futex operations (no FUTEX_PRIVATE_FLAG): the daemon is another process. */
static long futex(const uint64_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, (const uint32_t *)word, op, val, timeout, NULL, 0);
}

/* ---- 6.1 trust ------------------------------------------------------------------------------ */

/* A directory is trusted if root owns it and no one else can write it (root's sticky dirs ok). */
static bool dir_ok(const struct stat *st)
{
	if (!S_ISDIR(st->st_mode) || st->st_uid != 0)
		return false;
	return !(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX);
}

/*
 * Walk from the directory the file is opened through up to "/", through "..", on descriptors:
 * a symlink swapped into the path after the check redirects nothing.
 */
static int chain_ok(int dfd)
{
	struct stat st, root, up_st;
	int fd = dup(dfd), ret = -EPERM;

	if (fd < 0)
		return -errno;
	if (stat("/", &root))
		goto out;
	for (int depth = 0; depth <= MAX_DEPTH; depth++) {
		int up;

		if (fstat(fd, &st) || !dir_ok(&st))
			goto out;
		if (st.st_dev == root.st_dev && st.st_ino == root.st_ino) {
			ret = 0;
			goto out;
		}
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			goto out;
		close(fd);
		fd = up;
		/* A directory that is its own parent: the top (a chroot's root). */
		if (fstat(fd, &up_st) == 0 && up_st.st_dev == st.st_dev &&
		    up_st.st_ino == st.st_ino) {
			ret = 0;
			goto out;
		}
	}
out: /* deeper than MAX_DEPTH: refused, its unchecked ancestors could be anyone's */
	close(fd);
	return ret;
}

/* An open, trusted descriptor of the state file, or -errno (-EPERM: not to be trusted). */
static int open_trusted(const char *path)
{
	char dir[PATH_MAX];
	const char *base = strrchr(path, '/');
	struct stat st;
	int dfd, fd, ret;

	if (!base) {
		strcpy(dir, ".");
		base = path;
	} else if (base == path) {
		strcpy(dir, "/");
		base++;
	} else {
		if ((size_t)(base - path) >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, path, (size_t)(base - path));
		dir[base - path] = 0;
		base++;
	}
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EINVAL;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC); /* the directory, once */
	if (dfd < 0)
		return -errno;
	ret = chain_ok(dfd);
	if (ret) {
		close(dfd);
		return ret;
	}
	/* Never through a symlink, never blocking (a FIFO planted at the path would hang us). */
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	/* Checked on the open descriptor, not the name. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* ---- 6.4 time namespaces: refused here ------------------------------------------------------ */

/* 0 in the initial time namespace (or a kernel without them), -EPROTO otherwise. */
static int host_clock(void)
{
	struct stat st;

	if (stat("/proc/thread-self/ns/time", &st) == 0)
		return st.st_ino == PROC_TIME_INIT_INO ? 0 : -EPROTO;
	/* No such file: a kernel without time namespaces, provided /proc is there at all. */
	return errno == ENOENT && access("/proc/self/stat", R_OK) == 0 ? 0 : -EPROTO;
}

/* ---- 6.2 validate, 6.3 refuse values from the future ---------------------------------------- */

static int open_raw(const char *path, struct view *v)
{
	const struct barrierd_header *h;
	struct stat st;
	uint64_t maxv, now;
	int fd, ret = -EPROTO;

	memset(v, 0, sizeof(*v));
	ret = host_clock();
	if (ret)
		return ret;
	fd = open_trusted(path);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(*h)) {
		close(fd);
		return -EPROTO;
	}
	h = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED)
		return -errno;
	v->h = h;
	v->size = (size_t)st.st_size;
	ret = -EPROTO;
	v->ncpu = ld(&h->ncpu);
	if (ld(&h->magic) != BARRIERD_MAGIC || ld32(&h->abi_major) != BARRIERD_ABI_MAJOR ||
	    ld32(&h->header_size) != sizeof(*h) ||
	    ld32(&h->cpu_stride) != sizeof(struct barrierd_cpu) || v->ncpu == 0 ||
	    v->ncpu > BARRIERD_MAX_CPUS || sizeof(*h) + 16 * v->ncpu > v->size)
		goto fail;
	if (ld(&h->flags) & BARRIERD_FEAT_EXTENSION) {
		uint64_t xo = ld(&h->ext_offset);
		const struct barrierd_ext *x;

		if (xo % 8 || xo < sizeof(*h) + 16 * v->ncpu || xo > v->size ||
		    v->size - xo < sizeof(*x) + 32 * v->ncpu)
			goto fail;
		x = (const void *)((const char *)h + xo);
		if (ld32(&x->ext_header_size) != sizeof(*x) ||
		    ld32(&x->ext_cpu_stride) != sizeof(struct barrierd_ext_cpu))
			goto fail;
		v->x = x;
	}
	/* Every time field, then LFENCE, then the clock: no live daemon's value can be later. */
	maxv = ld(&h->last_interrupt_ns);
	if (ld(&h->heartbeat_ns) > maxv)
		maxv = ld(&h->heartbeat_ns);
	for (uint64_t c = 0; c < v->ncpu; c++)
		if (ld(&h->per_cpu[c].last_interrupt_ns) > maxv)
			maxv = ld(&h->per_cpu[c].last_interrupt_ns);
	if (v->x && ld(&v->x->last_advance_ns) > maxv)
		maxv = ld(&v->x->last_advance_ns);
	__asm__ __volatile__("lfence" ::: "memory");
	now = mono();
	if (maxv > now) {
		ret = -ESTALE; /* a file left from an earlier boot */
		goto fail;
	}
	v->open_ns = now; /* stamps at or below this are refused */
	return 0;
fail:
	munmap((void *)h, v->size);
	v->h = NULL;
	return ret;
}

/* ---- 6.5 stamp, 6.6 passed, 6.9 liveness ---------------------------------------------------- */

/* MFENCE: our earlier stores are visible; LFENCE: the clock read comes after that. */
static uint64_t stamp(const struct view *v)
{
	uint64_t t;

	do {
		__asm__ __volatile__("mfence; lfence" ::: "memory");
		t = mono();
	} while (t <= v->open_ns);
	return t;
}

static bool running(uint64_t flags)
{
	return (flags & BARRIERD_FLAG_RUNNING) && !(flags & BARRIERD_FLAG_STOPPED);
}

/*
 * The global ns value as far as it is evidence (6.6).  A restart can fall between a load of the
 * value and a load of the flags, so: flags and generation, the value, flags and generation
 * again (the flags before the generation: a daemon stores the generation before RUNNING).  The
 * value is a running daemon's only if both reads show RUNNING in one generation; then load it
 * once more and keep the smaller, since a generation can repeat across a reset.  Otherwise no
 * more than the stop snapshot.  (A vtime reader would trust no vtime at all then.)
 */
static bool live(const struct view *v, uint64_t now);

static uint64_t trusted_ns(const struct view *v)
{
	const struct barrierd_header *h = v->h;
	uint64_t f1 = ld(&h->flags), g1 = ld(&h->generation);
	uint64_t val = ld(&h->last_interrupt_ns);
	uint64_t f2 = ld(&h->flags), g2 = ld(&h->generation);
	uint64_t cap;

	/* And a live heartbeat: a daemon killed with SIGKILL leaves RUNNING set (6.6, 6.9). */
	if (running(f1) && running(f2) && g1 == g2 && live(v, mono())) {
		uint64_t again = ld(&h->last_interrupt_ns);

		return val < again ? val : again;
	}
	if (!v->x)
		return 0;
	cap = ld(&v->x->stop_ns);
	return val < cap ? val : cap;
}

/* Strictly greater: a value equal to the stamp is not evidence. */
static bool passed(const struct view *v, uint64_t t)
{
	return t > v->open_ns && trusted_ns(v) > t;
}

static bool live(const struct view *v, uint64_t now)
{
	uint64_t f = ld(&v->h->flags), hb = ld(&v->h->heartbeat_ns);
	uint64_t period = ld(&v->h->heartbeat_period_ns);

	if (!running(f))
		return false;
	if (period == 0 || period > BARRIERD_MAX_HEARTBEAT_PERIOD_NS)
		period = BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS;
	return now <= hb + BARRIERD_LIVENESS_PERIODS * period;
}

/* ---- 6.8 the doorbell ----------------------------------------------------------------------- */

/*
 * Ring iff the daemon listens and has not promised to serve t: t above served_ns (0 when the
 * daemon does not publish it).  The word is a hint for when to ring, never evidence.
 */
static bool need_ring(const struct view *v, uint64_t t)
{
	uint64_t flags, served;

	if (!v->x)
		return false;
	flags = ld(&v->h->flags);
	if (!(flags & BARRIERD_FEAT_DOORBELL))
		return false;
	served = flags & BARRIERD_FEAT_SERVED ? ld(&v->x->served_ns) : 0;
	return t > served;
}

/* true: a daemon thread heard a ring (or the barrier passed); false: every ring was lost. */
static bool ring(const struct view *v, uint64_t t)
{
	uint64_t start = mono();

	for (int i = 0;; i++) {
		long woken = futex(&v->h->doorbell, FUTEX_WAKE, 1, NULL);

		if (woken > 0 || passed(v, t))
			return true;
		if (woken < 0 || mono() - start > RERING_NS)
			return false;
		if (i < 8)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
}

/* ---- 6.7 the wait --------------------------------------------------------------------------- */

/*
 * Sleep until the global word's low half differs from `snap`, or the slice ends.  (libbarrierd
 * also queues on the doorbell's high half with futex_waitv, so that the daemon counts it as a
 * client that rings; this sample, like an original-layout client, is followed instead.)
 */
static void sleep_on(const struct view *v, uint32_t snap, uint64_t slice_ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(slice_ns / 1000000000ULL);
	ts.tv_nsec = (long)(slice_ns % 1000000000ULL);
	futex(&v->h->last_interrupt_ns, FUTEX_WAIT, snap, &ts); /* relative, bounded */
}

/* 0 once every CPU passed t; -ESTALE: no live daemon; -ETIMEDOUT; -EINVAL: t <= open_ns. */
static int wait_raw(const struct view *v, uint64_t t, uint64_t timeout_ns)
{
	uint64_t start = mono();

	if (t <= v->open_ns)
		return -EINVAL; /* could be passed by a value the open-time check never saw */
	for (;;) {
		/* 1. The futex word first, so that a change after the check is not missed. */
		uint32_t snap = ld_low(&v->h->last_interrupt_ns);
		uint64_t slice = SLICE_NS, now;

		/* 2. Then all 64 bits of the value, strictly. */
		if (passed(v, t))
			return 0;
		now = mono();
		if (!live(v, now))
			return -ESTALE; /* libbarrierd can fall back to membarrier() here */
		if (now - start >= timeout_ns)
			return -ETIMEDOUT;
		if (need_ring(v, t) && !ring(v, t))
			slice = SHORT_SLICE_NS; /* every ring lost: look again soon */
		if (passed(v, t))
			return 0;
		if (timeout_ns - (now - start) < slice)
			slice = timeout_ns - (now - start);
		/* 3. A bounded sleep: the futex sees only the low half, and daemons die. */
		sleep_on(v, snap, slice);
	}
}

int main(int argc, char **argv)
{
	const char *path = BARRIERD_DEFAULT_STATE_PATH;
	uint64_t total = 0;
	long count = 10;
	struct view v;
	int ret = 0, opt, i;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n' || (count = strtol(optarg, NULL, 10)) <= 0) {
			fprintf(stderr, "usage: %s [-n COUNT] [STATE_PATH]\n", argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		path = argv[optind];
	ret = open_raw(path, &v);
	if (ret) {
		fprintf(stderr, "wait_raw: %s: %s\n", path, strerror(-ret));
		return 1;
	}
	for (i = 0; i < count; i++) {
		/* ... here, the stores every other thread must see before it goes on ... */
		uint64_t t = stamp(&v);

		ret = wait_raw(&v, t, 1000000000ULL);
		if (ret)
			break;
		/* Every CPU has serialised after t: every store made before t is visible to all. */
		total += mono() - t;
	}
	if (ret) {
		fprintf(stderr, "wait_raw: barrier %d of %ld: %s\n", i + 1, count, strerror(-ret));
		return 1;
	}
	printf("%ld barriers passed, mean %.1f us\n", count, (double)total / (double)count / 1e3);
	munmap((void *)v.h, v.size);
	return 0;
}
