// SPDX-License-Identifier: MIT
/*
 * The fake daemon (fake_daemon.h).
 */
#include "fake_daemon.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

void fake_fill(void *buf, uint64_t ncpu, uint64_t now)
{
	struct barrierd_header *h = buf;
	struct barrierd_ext *x = test_ext_of(buf, ncpu);
	uint64_t base = now - 1 * TEST_MS;

	memset(buf, 0, barrierd_file_size(ncpu));
	h->ncpu = ncpu;
	h->magic = BARRIERD_MAGIC;
	h->abi_major = BARRIERD_ABI_MAJOR;
	h->abi_minor = BARRIERD_ABI_MINOR;
	h->header_size = sizeof(struct barrierd_header);
	h->cpu_stride = sizeof(struct barrierd_cpu);
	h->flags = BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL |
		   BARRIERD_FEAT_SERVED | BARRIERD_FEAT_CPU_FLAGS;
	h->generation = 1;
	h->heartbeat_ns = now;
	h->heartbeat_period_ns = FAKE_HB_PERIOD_NS;
	h->daemon_pid = (uint64_t)getpid();
	test_boot_id(h->boot_id);
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
	/* Served up to its last pass: every CPU's value is at or above it (fake_daemon.h). */
	x->served_ns = base;
}

void fake_label(void *buf, uint64_t ncpu, uint64_t now)
{
	struct barrierd_header *h = buf;
	struct barrierd_ext *x = test_ext_of(buf, ncpu);

	fake_fill(buf, ncpu, now);
	h->flags = BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL;
	h->generation = 7;
	h->heartbeat_period_ns = 10 * TEST_SEC;
	h->daemon_pid = 4242;
	for (int i = 0; i < 16; i++)
		h->boot_id[i] = (uint8_t)(0x10 + i);
	/* Counters that differ per CPU and per kind, so that a reader mixing them up shows. */
	for (uint64_t c = 0; c < ncpu; c++) {
		h->per_cpu[c].last_interrupt_ns = now;
		h->per_cpu[c].last_interrupt_vtime = 1000 - c;
		x->cpu[c].credit_event = 100 + c;
		x->cpu[c].credit_idle = 200 + c;
		x->cpu[c].credit_offline = 300 + c;
	}
	h->vtime = 1000;
	h->last_interrupt_ns = now;
	h->last_interrupt_vtime = 1000 - (ncpu - 1);
	x->last_advance_ns = now;
	x->last_advance_cause = BARRIERD_CAUSE_IDLE | (1ULL << 8);
	x->passes = 55;
	x->credit_passes = 5;
	x->doorbell_rings = 3;
}

void *fake_image(uint64_t ncpu, uint64_t now, size_t *size)
{
	size_t sz = barrierd_file_size(ncpu);
	void *buf = malloc(sz);

	if (buf)
		fake_fill(buf, ncpu, now);
	if (size)
		*size = sz;
	return buf;
}

int fake_create(struct fake_daemon *d, uint64_t ncpu, enum fake_look look)
{
	size_t size;
	void *img;
	int ret;

	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	d->ncpu = ncpu;
	d->size = barrierd_file_size(ncpu);
	ret = test_mkdtemp(d->dir, sizeof(d->dir), "/tmp");
	if (ret)
		return ret;
	snprintf(d->path, sizeof(d->path), "%s/state", d->dir);
	img = malloc(d->size);
	if (!img)
		return -ENOMEM;
	if (look == FAKE_LABELLED)
		fake_label(img, ncpu, bd_mono_ns());
	else
		fake_fill(img, ncpu, bd_mono_ns());
	ret = test_write_file(d->path, img, d->size, 0644);
	free(img);
	if (ret)
		return ret;
	d->h = test_map_rw(d->path, &size);
	if (!d->h)
		return -errno;
	d->x = test_ext_of(d->h, ncpu);
	return 0;
}

/* ---- a daemon's pass -------------------------------------------------------------------- */

/* New evidence for CPU c: ns first, then vtime (the ABI's order), waking each word. */
static void publish_cpu_locked(struct fake_daemon *d, uint64_t c, uint64_t ns)
{
	struct barrierd_cpu *pc = &d->h->per_cpu[c];
	/* The daemon advances vtime before any evidence can carry the new value (rule 4). */
	uint64_t v = bd_load(&d->h->vtime) + 1;

	bd_store(&d->h->vtime, v);
	if (ns > bd_load(&pc->last_interrupt_ns)) {
		bd_store(&pc->last_interrupt_ns, ns);
		test_futex_wake(&pc->last_interrupt_ns);
	}
	bd_store(&pc->last_interrupt_vtime, v);
	test_futex_wake(&pc->last_interrupt_vtime);
}

/* Fold the per-CPU values into the global words (their minimum), never moving them back. */
static void fold_locked(struct fake_daemon *d)
{
	uint64_t mn = UINT64_MAX, mv = UINT64_MAX;

	for (uint64_t c = 0; c < d->ncpu; c++) {
		uint64_t n = bd_load(&d->h->per_cpu[c].last_interrupt_ns);
		uint64_t v = bd_load(&d->h->per_cpu[c].last_interrupt_vtime);

		mn = n < mn ? n : mn;
		mv = v < mv ? v : mv;
	}
	if (mn > bd_load(&d->h->last_interrupt_ns)) {
		bd_store(&d->h->last_interrupt_ns, mn);
		bd_store(&d->x->last_advance_ns, bd_mono_ns());
		test_futex_wake(&d->h->last_interrupt_ns);
	}
	if (mv > bd_load(&d->h->last_interrupt_vtime)) {
		bd_store(&d->h->last_interrupt_vtime, mv);
		test_futex_wake(&d->h->last_interrupt_vtime);
	}
}

void fake_credit(struct fake_daemon *d, uint64_t c, uint64_t ns)
{
	pthread_mutex_lock(&d->lock);
	publish_cpu_locked(d, c, ns);
	fold_locked(d);
	pthread_mutex_unlock(&d->lock);
}

void fake_credit_all(struct fake_daemon *d, uint64_t ns)
{
	pthread_mutex_lock(&d->lock);
	for (uint64_t c = 0; c < d->ncpu; c++)
		publish_cpu_locked(d, c, ns);
	fold_locked(d);
	pthread_mutex_unlock(&d->lock);
}

void fake_stop(struct fake_daemon *d)
{
	pthread_mutex_lock(&d->lock);
	bd_store(&d->x->stop_ns, bd_load(&d->h->last_interrupt_ns));
	bd_store(&d->x->stop_vtime, bd_load(&d->h->last_interrupt_vtime));
	bd_store(&d->h->heartbeat_ns, bd_mono_ns());
	bd_store(&d->h->flags,
		 (bd_load(&d->h->flags) & ~BARRIERD_FLAGS_STATE_MASK) | BARRIERD_FLAG_STOPPED);
	test_futex_wake(&d->h->last_interrupt_ns);
	test_futex_wake(&d->h->last_interrupt_vtime);
	for (uint64_t c = 0; c < d->ncpu; c++) {
		test_futex_wake(&d->h->per_cpu[c].last_interrupt_ns);
		test_futex_wake(&d->h->per_cpu[c].last_interrupt_vtime);
	}
	pthread_mutex_unlock(&d->lock);
}

void fake_set_state(struct fake_daemon *d, uint64_t c, uint64_t state)
{
	bd_store(&d->x->cpu[c].state, state);
}

/* ---- a picture set by hand ---------------------------------------------------------------- */

static void refold_locked(struct fake_daemon *d)
{
	uint64_t mn = UINT64_MAX;

	for (uint64_t c = 0; c < d->ncpu; c++) {
		uint64_t v = bd_load(&d->h->per_cpu[c].last_interrupt_ns);

		mn = v < mn ? v : mn;
	}
	bd_store(&d->h->last_interrupt_ns, mn);
	test_futex_wake(&d->h->last_interrupt_ns);
}

void fake_refold(struct fake_daemon *d)
{
	pthread_mutex_lock(&d->lock);
	refold_locked(d);
	pthread_mutex_unlock(&d->lock);
}

void fake_set_cpu(struct fake_daemon *d, uint64_t c, uint64_t state, uint64_t age_ms)
{
	pthread_mutex_lock(&d->lock);
	bd_store(&d->x->cpu[c].state, state);
	bd_store(&d->h->per_cpu[c].last_interrupt_ns, bd_mono_ns() - age_ms * TEST_MS);
	refold_locked(d);
	pthread_mutex_unlock(&d->lock);
}

/* ---- threads ------------------------------------------------------------------------------ */

static void *tick_main(void *arg)
{
	struct fake_daemon *d = arg;
	struct sched_param sp = {.sched_priority = 1};

	/*
	 * Three missed periods make the daemon stale, and a CFS thread on a loaded 2-CPU machine
	 * can wait that long.  Real-time priority (allowed for root; ignored if refused) keeps an
	 * overloaded test machine from turning into a "dead daemon".
	 */
	(void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	while (!__atomic_load_n(&d->tick_stop, __ATOMIC_ACQUIRE)) {
		uint64_t now = bd_mono_ns();
		uint64_t mask = __atomic_load_n(&d->fresh_mask, __ATOMIC_ACQUIRE);

		if (mask) {
			pthread_mutex_lock(&d->lock);
			for (uint64_t c = 0; c < d->ncpu && c < 64; c++)
				if (mask & (1ULL << c))
					bd_store(&d->h->per_cpu[c].last_interrupt_ns, now);
			refold_locked(d);
			pthread_mutex_unlock(&d->lock);
		}
		bd_store(&d->h->heartbeat_ns, now);
		test_sleep_ns(FAKE_TICK_NS);
	}
	return NULL;
}

int fake_start_ticker(struct fake_daemon *d, uint64_t fresh_mask)
{
	__atomic_store_n(&d->fresh_mask, fresh_mask, __ATOMIC_RELEASE);
	if (d->ticking)
		return 0;
	__atomic_store_n(&d->tick_stop, 0, __ATOMIC_RELEASE);
	if (pthread_create(&d->tick_thread, NULL, tick_main, d))
		return -EAGAIN;
	d->ticking = 1;
	return 0;
}

void fake_stop_ticker(struct fake_daemon *d)
{
	if (!d->ticking)
		return;
	__atomic_store_n(&d->tick_stop, 1, __ATOMIC_RELEASE);
	pthread_join(d->tick_thread, NULL);
	d->ticking = 0;
}

/* The wait is bounded so that the listener notices it should stop. */
static void *bell_main(void *arg)
{
	struct fake_daemon *d = arg;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 5 * (long)TEST_MS};

	__atomic_store_n(&d->listening, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&d->bell_stop, __ATOMIC_ACQUIRE)) {
		uint32_t cur = bd_load_low(&d->h->doorbell);
		long r =
		    syscall(SYS_futex, (uint32_t *)&d->h->doorbell, FUTEX_WAIT, cur, &ts, NULL, 0);

		if (r != 0)
			continue; /* timeout or signal: not a ring */
		__atomic_add_fetch(&d->rings, 1, __ATOMIC_ACQ_REL);
		int mode = __atomic_load_n(&d->credit_on_ring, __ATOMIC_ACQUIRE);

		if (mode == FAKE_CREDIT_NONE)
			continue;
		uint64_t now = bd_mono_ns();

		pthread_mutex_lock(&d->lock);
		/*
		 * FAKE_CREDIT_SERVED keeps served_ns's promise at once: every CPU, busy ones too,
		 * gets evidence at now before served_ns rises to now, so that a waiter that finds
		 * its stamp served finds it published too, or is woken by the fold below.
		 */
		for (uint64_t c = 0; c < d->ncpu; c++)
			if (mode == FAKE_CREDIT_SERVED ||
			    bd_load(&d->x->cpu[c].state) != BARRIERD_CPU_BUSY)
				publish_cpu_locked(d, c, now);
		if (mode == FAKE_CREDIT_SERVED && now > bd_load(&d->x->served_ns))
			bd_store(&d->x->served_ns, now);
		fold_locked(d);
		pthread_mutex_unlock(&d->lock);
	}
	return NULL;
}

int fake_start_doorbell(struct fake_daemon *d, enum fake_credit_mode mode)
{
	__atomic_store_n(&d->bell_stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&d->credit_on_ring, (int)mode, __ATOMIC_RELEASE);
	if (pthread_create(&d->bell_thread, NULL, bell_main, d))
		return -EAGAIN;
	d->bell_running = 1;
	while (!__atomic_load_n(&d->listening, __ATOMIC_ACQUIRE))
		test_sleep_ns(100 * TEST_US);
	return 0;
}

void fake_stop_doorbell(struct fake_daemon *d)
{
	if (!d->bell_running)
		return;
	__atomic_store_n(&d->bell_stop, 1, __ATOMIC_RELEASE);
	pthread_join(d->bell_thread, NULL);
	d->bell_running = 0;
}

uint64_t fake_rings(struct fake_daemon *d)
{
	return __atomic_load_n(&d->rings, __ATOMIC_ACQUIRE);
}

void fake_destroy(struct fake_daemon *d)
{
	fake_stop_doorbell(d);
	fake_stop_ticker(d);
	if (d->h)
		munmap(d->h, d->size);
	d->h = NULL;
	test_rmtree(d->dir);
	pthread_mutex_destroy(&d->lock);
}
