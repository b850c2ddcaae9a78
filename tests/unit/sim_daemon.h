/* SPDX-License-Identifier: MIT */
/*
 * sim_daemon.h - a simulated barrierd for libbarrierd's unit tests (no root, no BPF).
 *
 * The tests build state files from the structs of <barrierd.h> (the one definition of the
 * layout), corrupt copies on purpose, and play the daemon from threads of their own process:
 * values move with single aligned __atomic stores followed by a shared FUTEX_WAKE on each
 * word's low half, as the ABI promises, and a listener FUTEX_WAITs on the doorbell word to
 * count rings.  The daemon's side maps the file read-write and shared; the library maps the
 * same inode read-only, so shared futexes on either mapping meet (the key is inode + offset).
 *
 * Everything here is static inline so that each test file uses what it needs without
 * -Wunused-function.
 */
#ifndef BARRIERD_SIM_DAEMON_H
#define BARRIERD_SIM_DAEMON_H

#include <barrierd.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIM_US 1000ULL
#define SIM_MS 1000000ULL
#define SIM_SEC 1000000000ULL
#define SIM_HB_PERIOD_NS (100 * SIM_MS) /* what the brief's daemon advertises */
#define SIM_HB_REFRESH_NS (10 * SIM_MS) /* far inside 3 periods, even on a loaded machine */
/* Hang guard for waits that must end: generous, never a timing assertion. */
#define SIM_HANG_GUARD_NS (10 * SIM_SEC)

static inline uint64_t sim_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SIM_SEC + (uint64_t)ts.tv_nsec;
}

static inline void sim_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / SIM_SEC), .tv_nsec = (long)(ns % SIM_SEC)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline uint64_t sim_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* One aligned 64-bit store, the only way the daemon writes a published word. */
static inline void sim_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* FUTEX_WAKE (shared, not private: waiters live in other processes) on the low half. */
static inline long sim_futex_wake(const uint64_t *word)
{
	return syscall(SYS_futex, (const uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The 16 raw bytes of this boot's id, as the daemon records them (zeros when unreadable). */
static inline void sim_boot_id(uint8_t id[16])
{
	char txt[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	size_t n = 0;

	memset(id, 0, 16);
	if (!f)
		return;
	if (fgets(txt, sizeof(txt), f)) {
		for (const char *p = txt; *p && n < 32; p++) {
			unsigned v;

			if (*p >= '0' && *p <= '9')
				v = (unsigned)(*p - '0');
			else if (*p >= 'a' && *p <= 'f')
				v = (unsigned)(*p - 'a' + 10);
			else
				continue;
			id[n / 2] = (uint8_t)(id[n / 2] | (v << (n % 2 ? 0 : 4)));
			n++;
		}
	}
	fclose(f);
}

static inline struct barrierd_ext *sim_ext_of(void *buf, uint64_t ncpu)
{
	return (struct barrierd_ext *)((char *)buf + barrierd_ext_offset(ncpu));
}

/*
 * A valid image, as a live daemon that has just published leaves it: running and armed (busy
 * CPUs' events reach it, so a waiter rings only for CPUs that are not busy), every CPU busy
 * with evidence a millisecond old, the global value their minimum, vtime above every per-CPU
 * vtime, heartbeat `now`, no stop snapshot yet.  buf must hold barrierd_file_size(ncpu) bytes.
 */
static inline void sim_fill(void *buf, uint64_t ncpu, uint64_t now)
{
	struct barrierd_header *h = buf;
	struct barrierd_ext *x = sim_ext_of(buf, ncpu);
	uint64_t base = now - 1 * SIM_MS;

	memset(buf, 0, barrierd_file_size(ncpu));
	h->ncpu = ncpu;
	h->magic = BARRIERD_MAGIC;
	h->abi_major = BARRIERD_ABI_MAJOR;
	h->abi_minor = BARRIERD_ABI_MINOR;
	h->header_size = sizeof(struct barrierd_header);
	h->cpu_stride = sizeof(struct barrierd_cpu);
	h->flags = BARRIERD_FLAG_RUNNING | BARRIERD_FLAG_ARMED | BARRIERD_FEAT_EXTENSION |
		   BARRIERD_FEAT_DOORBELL;
	h->generation = 1;
	h->heartbeat_ns = now;
	h->heartbeat_period_ns = SIM_HB_PERIOD_NS;
	h->daemon_pid = (uint64_t)getpid();
	sim_boot_id(h->boot_id);
	h->ext_offset = barrierd_ext_offset(ncpu);
	for (uint64_t c = 0; c < ncpu; c++) {
		/* Distinct per CPU so that an off-by-one in a reader shows. */
		h->per_cpu[c].last_interrupt_ns = base + c;
		h->per_cpu[c].last_interrupt_vtime = 10 + c;
		x->cpu[c].state = BARRIERD_CPU_BUSY;
		x->cpu[c].credit_event = 1;
	}
	h->last_interrupt_ns = base;
	h->last_interrupt_vtime = 10;
	h->vtime = 10 + ncpu;
	x->ext_size = barrierd_file_size(ncpu) - barrierd_ext_offset(ncpu);
	x->ext_header_size = sizeof(struct barrierd_ext);
	x->ext_cpu_stride = sizeof(struct barrierd_ext_cpu);
	x->last_advance_ns = base;
	x->last_advance_cause = BARRIERD_CAUSE_EVENT;
	x->passes = 1;
}

/* A freshly allocated valid image (free() it). */
static inline void *sim_image(uint64_t ncpu, uint64_t now, size_t *size)
{
	size_t sz = barrierd_file_size(ncpu);
	void *buf = malloc(sz);

	if (buf)
		sim_fill(buf, ncpu, now);
	if (size)
		*size = sz;
	return buf;
}

/* Write exactly these bytes as a fresh file with this mode (not subject to the umask). */
static inline int sim_write_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	const char *p = buf;
	int ret = 0;

	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			ret = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (!ret && fchmod(fd, mode))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * A fresh directory under parent, chmod 0755: mkdtemp makes it 0700, which a client running
 * as another user could not even traverse.
 */
static inline int sim_mkdtemp(char *out, size_t len, const char *parent)
{
	if ((size_t)snprintf(out, len, "%s/barrierd-unit.XXXXXX", parent) >= len)
		return -ENAMETOOLONG;
	if (!mkdtemp(out))
		return -errno;
	if (chmod(out, 0755))
		return -errno;
	return 0;
}

static inline int sim_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

static inline void sim_rmtree(const char *dir)
{
	if (dir && *dir)
		nftw(dir, sim_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * barrierd_open as the test's own user: root uses the plain call (files are root's); anyone
 * else names their own uid as trusted, so these tests also run without root.
 */
static inline int sim_open_lib(struct barrierd **b, const char *path,
			       const struct barrierd_open_opts *opts_in)
{
	struct barrierd_open_opts o = {.sz = sizeof(o)};

	if (opts_in)
		o = *opts_in;
	if (geteuid() != 0 && !o.trusted_uid_set) {
		o.trusted_uid_set = 1;
		o.trusted_uid = geteuid();
	}
	if (!opts_in && !o.trusted_uid_set)
		return barrierd_open(b, path);
	return barrierd_open_opts(b, path, &o);
}

/* ---------------------------------------------------------------------------------------- */
/* A live simulated daemon on a file in its own temporary directory                           */
/* ---------------------------------------------------------------------------------------- */

struct sim {
	char dir[PATH_MAX / 2];
	char path[PATH_MAX];
	uint64_t ncpu;
	size_t size;
	struct barrierd_header *h; /* read-write shared mapping: the daemon's view */
	struct barrierd_ext *x;
	pthread_mutex_t lock; /* one publisher at a time, so no word ever goes backwards */

	pthread_t hb_thread, bell_thread;
	int hb_running, bell_running;
	int hb_stop, bell_stop;   /* __atomic */
	int credit_on_ring;       /* __atomic: SIM_CREDIT_* done by the listener when rung */
	int listening;            /* __atomic: the listener has entered its loop */
	uint64_t rings;           /* __atomic: wakes the listener received */
};

static inline int sim_create(struct sim *s, uint64_t ncpu)
{
	void *img;
	int fd, ret;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->ncpu = ncpu;
	ret = sim_mkdtemp(s->dir, sizeof(s->dir), "/tmp");
	if (ret)
		return ret;
	snprintf(s->path, sizeof(s->path), "%s/state", s->dir);
	img = sim_image(ncpu, sim_now(), &s->size);
	if (!img)
		return -ENOMEM;
	ret = sim_write_file(s->path, img, s->size, 0644);
	free(img);
	if (ret)
		return ret;
	fd = open(s->path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	s->h = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ret = s->h == MAP_FAILED ? -errno : 0;
	close(fd);
	if (ret) {
		s->h = NULL;
		return ret;
	}
	s->x = sim_ext_of(s->h, ncpu);
	return 0;
}

/* Publish new evidence for CPU c: ns first, then vtime (the ABI's order), waking each word. */
static inline void sim_publish_cpu_locked(struct sim *s, uint64_t c, uint64_t ns)
{
	struct barrierd_cpu *pc = &s->h->per_cpu[c];
	/* The daemon advances vtime before any evidence can carry the new value (rule 4). */
	uint64_t v = sim_load(&s->h->vtime) + 1;

	sim_store(&s->h->vtime, v);
	if (ns > sim_load(&pc->last_interrupt_ns)) {
		sim_store(&pc->last_interrupt_ns, ns);
		sim_futex_wake(&pc->last_interrupt_ns);
	}
	sim_store(&pc->last_interrupt_vtime, v);
	sim_futex_wake(&pc->last_interrupt_vtime);
}

/* Fold the per-CPU values into the global words (their minimum), never moving them back. */
static inline void sim_fold_locked(struct sim *s)
{
	uint64_t mn = UINT64_MAX, mv = UINT64_MAX;

	for (uint64_t c = 0; c < s->ncpu; c++) {
		uint64_t n = sim_load(&s->h->per_cpu[c].last_interrupt_ns);
		uint64_t v = sim_load(&s->h->per_cpu[c].last_interrupt_vtime);

		mn = n < mn ? n : mn;
		mv = v < mv ? v : mv;
	}
	if (mn > sim_load(&s->h->last_interrupt_ns)) {
		sim_store(&s->h->last_interrupt_ns, mn);
		sim_store(&s->x->last_advance_ns, sim_now());
		sim_futex_wake(&s->h->last_interrupt_ns);
	}
	if (mv > sim_load(&s->h->last_interrupt_vtime)) {
		sim_store(&s->h->last_interrupt_vtime, mv);
		sim_futex_wake(&s->h->last_interrupt_vtime);
	}
}

/* Credit CPU c with evidence at ns and fold, as one daemon pass. */
static inline void sim_credit(struct sim *s, uint64_t c, uint64_t ns)
{
	pthread_mutex_lock(&s->lock);
	sim_publish_cpu_locked(s, c, ns);
	sim_fold_locked(s);
	pthread_mutex_unlock(&s->lock);
}

/* Every CPU gets evidence at ns: the next pass of a busy machine. */
static inline void sim_credit_all(struct sim *s, uint64_t ns)
{
	pthread_mutex_lock(&s->lock);
	for (uint64_t c = 0; c < s->ncpu; c++)
		sim_publish_cpu_locked(s, c, ns);
	sim_fold_locked(s);
	pthread_mutex_unlock(&s->lock);
}

/*
 * The daemon stops cleanly: the stop snapshot (the global values), the heartbeat, then the
 * flags with STOPPED set, features kept, other state bits cleared, then a wake of every time
 * word so that sleepers notice.  Values stay: they remain true.
 */
static inline void sim_stop_daemon(struct sim *s)
{
	pthread_mutex_lock(&s->lock);
	sim_store(&s->x->stop_ns, sim_load(&s->h->last_interrupt_ns));
	sim_store(&s->x->stop_vtime, sim_load(&s->h->last_interrupt_vtime));
	sim_store(&s->h->heartbeat_ns, sim_now());
	sim_store(&s->h->flags, (sim_load(&s->h->flags) & ~BARRIERD_FLAGS_STATE_MASK) |
					BARRIERD_FLAG_STOPPED);
	sim_futex_wake(&s->h->last_interrupt_ns);
	sim_futex_wake(&s->h->last_interrupt_vtime);
	for (uint64_t c = 0; c < s->ncpu; c++) {
		sim_futex_wake(&s->h->per_cpu[c].last_interrupt_ns);
		sim_futex_wake(&s->h->per_cpu[c].last_interrupt_vtime);
	}
	pthread_mutex_unlock(&s->lock);
}

static inline void sim_set_state(struct sim *s, uint64_t c, uint64_t state)
{
	sim_store(&s->x->cpu[c].state, state);
}

static inline void *sim_hb_main(void *arg)
{
	struct sim *s = arg;
	struct sched_param sp = {.sched_priority = 1};

	/*
	 * Three missed periods make the daemon stale, and a CFS thread on a loaded 2-CPU machine
	 * can wait that long.  Real-time priority (allowed for root; ignored if refused) keeps an
	 * overloaded test machine from turning into a "dead daemon".
	 */
	(void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	while (!__atomic_load_n(&s->hb_stop, __ATOMIC_ACQUIRE)) {
		sim_store(&s->h->heartbeat_ns, sim_now());
		sim_sleep_ns(SIM_HB_REFRESH_NS);
	}
	return NULL;
}

/* Keep the heartbeat fresh, so that waits longer than 3 periods still see a live daemon. */
static inline int sim_start_heartbeat(struct sim *s)
{
	__atomic_store_n(&s->hb_stop, 0, __ATOMIC_RELEASE);
	if (pthread_create(&s->hb_thread, NULL, sim_hb_main, s))
		return -EAGAIN;
	s->hb_running = 1;
	return 0;
}

static inline void sim_stop_heartbeat(struct sim *s)
{
	if (!s->hb_running)
		return;
	__atomic_store_n(&s->hb_stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->hb_thread, NULL);
	s->hb_running = 0;
}

/* What the simulated doorbell thread does when it hears a ring. */
enum {
	SIM_CREDIT_NONE = 0, /* only count it */
	SIM_CREDIT_IDLE = 1, /* idle/offline credit: every CPU that is not BUSY */
	SIM_CREDIT_ARM = 2,  /* a disarmed daemon arms: then busy CPUs' events reach it too */
};

/*
 * The doorbell thread: FUTEX_WAIT on the doorbell's low half, count every wake; when asked,
 * credit CPUs with the time read after the ring, as the daemon's credit pass does.  The wait
 * is bounded so that the thread notices it should stop.
 */
static inline void *sim_bell_main(void *arg)
{
	struct sim *s = arg;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 5 * (long)SIM_MS};

	__atomic_store_n(&s->listening, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&s->bell_stop, __ATOMIC_ACQUIRE)) {
		uint32_t cur = __atomic_load_n((const uint32_t *)&s->h->doorbell, __ATOMIC_ACQUIRE);
		long r = syscall(SYS_futex, (uint32_t *)&s->h->doorbell, FUTEX_WAIT, cur, &ts, NULL,
				 0);

		if (r != 0)
			continue; /* timeout or signal: not a ring */
		__atomic_add_fetch(&s->rings, 1, __ATOMIC_ACQ_REL);
		int mode = __atomic_load_n(&s->credit_on_ring, __ATOMIC_ACQUIRE);

		if (mode == SIM_CREDIT_NONE)
			continue;
		uint64_t now = sim_now();

		pthread_mutex_lock(&s->lock);
		if (mode == SIM_CREDIT_ARM)
			sim_store(&s->h->flags, sim_load(&s->h->flags) | BARRIERD_FLAG_ARMED);
		for (uint64_t c = 0; c < s->ncpu; c++)
			if (mode == SIM_CREDIT_ARM ||
			    sim_load(&s->x->cpu[c].state) != BARRIERD_CPU_BUSY)
				sim_publish_cpu_locked(s, c, now);
		sim_fold_locked(s);
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

static inline int sim_start_doorbell(struct sim *s, int credit_mode)
{
	__atomic_store_n(&s->bell_stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->credit_on_ring, credit_mode, __ATOMIC_RELEASE);
	if (pthread_create(&s->bell_thread, NULL, sim_bell_main, s))
		return -EAGAIN;
	s->bell_running = 1;
	while (!__atomic_load_n(&s->listening, __ATOMIC_ACQUIRE))
		sim_sleep_ns(100 * SIM_US);
	return 0;
}

static inline void sim_stop_doorbell(struct sim *s)
{
	if (!s->bell_running)
		return;
	__atomic_store_n(&s->bell_stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->bell_thread, NULL);
	s->bell_running = 0;
}

static inline uint64_t sim_rings(struct sim *s)
{
	return __atomic_load_n(&s->rings, __ATOMIC_ACQUIRE);
}

/*
 * Wait until some thread sleeps in a futex on this word: FUTEX_WAKE it (a spurious wake the
 * library must tolerate anyway) until the kernel reports that it woke someone.  This proves
 * the waiter sleeps on the right word as a shared futex, without any timing assumption.
 * Returns 1 when a sleeper was found, 0 at the timeout.
 */
static inline int sim_await_sleeper(const uint64_t *word, uint64_t timeout_ns)
{
	uint64_t end = sim_now() + timeout_ns;

	do {
		if (sim_futex_wake(word) > 0)
			return 1;
		sim_sleep_ns(200 * SIM_US);
	} while (sim_now() < end);
	return 0;
}

static inline void sim_destroy(struct sim *s)
{
	sim_stop_doorbell(s);
	sim_stop_heartbeat(s);
	if (s->h)
		munmap(s->h, s->size);
	s->h = NULL;
	sim_rmtree(s->dir);
	pthread_mutex_destroy(&s->lock);
}

#endif
