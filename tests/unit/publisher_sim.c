// SPDX-License-Identifier: MIT
/*
 * The daemon's publisher (src/daemon/publisher.c, credit.c) against a simulated CPU that acts
 * at the worst moments, with a ground truth to judge what it publishes.  Every clock read of
 * the daemon's code goes through __wrap_clock_gettime (linked with --wrap), so the simulation
 * can make the CPU leave idle exactly between two of the daemon's steps: windows of
 * nanoseconds on real hardware, which the black-box audit cannot hit, become deterministic
 * here.  Built and run by tests/audit/CMakeLists.txt (test_audit_publisher_sim), which also
 * builds it against the publisher's mutants.
 *
 * Each scenario states its soundness condition as the audit does: a published per-CPU value
 * must be backed by evidence after every stamp it passes.
 *   A (rule 2) an idle CPU leaves idle at the k-th clock read of a credit pass, for every k:
 *     the published time must not exceed the moment it left (its exit switch's stamp);
 *   B (rule 4) a busy CPU's event happened before a writer read vtime V, and is folded after:
 *     the CPU's published vtime must not exceed V;
 *   C (rule 4) a restarted daemon: a vtime stamp taken once it is set up must exceed every
 *     vtime already published.
 * Exit status: 0 sound, 1 a violation (a finding), 2 the simulation could not run.
 */
#include "publisher.h"
#include "state_file.h"
#include "bd_sync.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STEP_NS 1000ULL

int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);

static struct {
	uint64_t now;	  /* the simulated CLOCK_MONOTONIC */
	int reads;	  /* clock reads since the scenario armed exit_at */
	int exit_at;	  /* at this read the simulated CPU leaves idle (0: never) */
	uint64_t exit_ns; /* when it left */
	struct barrierd_slot *slot;
	volatile uint64_t *bss_vtime;
} S;

static int violations;

/* What the BPF program does on the CPU's switch out of idle: stamp, vtime, BUSY (xchg). */
static void cpu_leaves_idle(uint64_t when)
{
	uint64_t vt = *S.bss_vtime;

	__atomic_exchange_n(&S.slot->stamp, when, __ATOMIC_SEQ_CST);
	__atomic_store_n(&S.slot->vtime, vt, __ATOMIC_RELEASE);
	__atomic_exchange_n(&S.slot->idle, (uint64_t)BARRIERD_SLOT_BUSY, __ATOMIC_SEQ_CST);
	S.slot->switches++;
	S.exit_ns = when;
}

int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	if (id != CLOCK_MONOTONIC)
		return __real_clock_gettime(id, ts);
	S.now += STEP_NS;
	if (++S.reads == S.exit_at)
		cpu_leaves_idle(S.now -
				STEP_NS / 2); /* between the previous reading and this one */
	ts->tv_sec = (time_t)(S.now / 1000000000ULL);
	ts->tv_nsec = (long)(S.now % 1000000000ULL);
	return 0;
}

struct world {
	char dir[64], path[96];
	struct state_file sf;
	struct publisher p;
	struct barrierd_slot *slots;
	volatile uint64_t bss_vtime, bss_wm;
	uint64_t ncpu;
	int sim; /* the simulated CPU: never the one this test runs on */
};

static int world_open(struct world *w, bool fresh)
{
	char err[256];
	int ret;

	if (fresh) {
		snprintf(w->dir, sizeof(w->dir), "/tmp/barrierd-sim.XXXXXX");
		if (!mkdtemp(w->dir))
			return -errno;
		snprintf(w->path, sizeof(w->path), "%s/state", w->dir);
		w->slots = calloc(w->ncpu, sizeof(*w->slots));
		if (!w->slots)
			return -ENOMEM;
		/* Every CPU known (switched at least once) and busy; the scenario sets the rest. */
		for (uint64_t c = 0; c < w->ncpu; c++) {
			w->slots[c].switches = 1;
			w->slots[c].idle = BARRIERD_SLOT_BUSY;
		}
	}
	ret = state_file_open(&w->sf, w->path, w->ncpu, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "state_file_open: %s\n", err);
		return ret;
	}
	/* No online mask (every CPU online), no detach check: a simulation. */
	ret = publisher_init(&w->p, &w->sf, w->slots, &w->bss_vtime, &w->bss_wm, NULL, w->ncpu, -1);
	S.slot = &w->slots[w->sim];
	S.bss_vtime = &w->bss_vtime;
	return ret;
}

static void world_close(struct world *w, bool remove)
{
	publisher_heartbeat(&w->p, S.now);
	state_file_set_stopped(&w->sf, w->p.g_ns, w->p.g_vt);
	publisher_free(&w->p);
	state_file_close(&w->sf);
	if (remove) {
		char lock[128];

		snprintf(lock, sizeof(lock), "%s.lock", w->path);
		unlink(w->path);
		unlink(lock);
		rmdir(w->dir);
		free(w->slots);
	}
}

static int pass(struct world *w, bool credit)
{
	bool again;
	int ret = publisher_pass(&w->p, credit, &again);

	publisher_heartbeat(&w->p, S.now);
	return ret;
}

/* An event on CPU c as the BPF program stamps it: .bss vtime first, then the clock. */
static void event(struct world *w, uint64_t c)
{
	uint64_t vt = w->bss_vtime;

	S.now += STEP_NS;
	__atomic_exchange_n(&w->slots[c].stamp, S.now, __ATOMIC_SEQ_CST);
	__atomic_store_n(&w->slots[c].vtime, vt, __ATOMIC_RELEASE);
}

/* A: the idle CPU leaves idle at the k-th clock read of a credit pass. */
static int scenario_idle_exit(struct world *w, int k)
{
	uint64_t published;
	int ret = world_open(w, true);

	if (ret)
		return ret;
	S.slot->idle = BARRIERD_SLOT_IDLE;
	S.slot->stamp = S.now; /* its switch into idle */
	S.exit_ns = 0;
	S.reads = 0;
	S.exit_at = k;
	ret = pass(w, true);
	S.exit_at = 0;
	published = w->sf.hdr->per_cpu[w->sim].last_interrupt_ns;
	if (!ret && S.exit_ns && published > S.exit_ns) {
		printf("VIOLATION (rule 2): cpu %d left idle at %llu (clock read %d of the credit "
		       "pass) but was credited with %llu: a stamp in between passes with no "
		       "evidence after it\n",
		       w->sim, (unsigned long long)S.exit_ns, k, (unsigned long long)published);
		violations++;
	}
	world_close(w, true);
	return ret;
}

/* B: an event before the writer's vtime read, folded after it. */
static int scenario_vtime_harvest(struct world *w)
{
	uint64_t v, published;
	int ret = world_open(w, true);

	if (!ret)
		ret = pass(w, false);
	if (ret)
		goto out;
	event(w, (uint64_t)w->sim);	/* carries the vtime it loaded: V */
	v = bd_load(&w->sf.hdr->vtime); /* the writer's barrierd_stamp_vtime() */
	ret = pass(w, false);		/* folds the event */
	published = w->sf.hdr->per_cpu[w->sim].last_interrupt_vtime;
	if (!ret && published > v) {
		printf("VIOLATION (rule 4): cpu %d published vtime %llu > %llu, but its only event "
		       "came before the writer read %llu\n",
		       w->sim, (unsigned long long)published, (unsigned long long)v,
		       (unsigned long long)v);
		violations++;
	}
out:
	world_close(w, true);
	return ret;
}

/* C: a restarted daemon must resume vtime above everything already published. */
static int scenario_restart(struct world *w)
{
	uint64_t v, maxv;
	int ret = world_open(w, true);

	for (int i = 0; i < 20 && !ret; i++) {
		for (uint64_t c = 0; c < w->ncpu; c++)
			event(w, c);
		ret = pass(w, false);
	}
	if (ret) {
		world_close(w, true);
		return ret;
	}
	world_close(w, false);
	ret = world_open(w, false); /* the next daemon adopts the file */
	if (ret) {
		free(w->slots);
		return ret;
	}
	maxv = bd_load(&w->sf.hdr->last_interrupt_vtime);
	for (uint64_t c = 0; c < w->ncpu; c++) {
		uint64_t pv = bd_load(&w->sf.hdr->per_cpu[c].last_interrupt_vtime);

		maxv = pv > maxv ? pv : maxv;
	}
	v = bd_load(&w->sf.hdr->vtime); /* a vtime stamp taken after the restart */
	if (v <= maxv) {
		printf("VIOLATION (rule 4): after a restart vtime is %llu, not above the published "
		       "%llu: a stamp taken now is passed without any new evidence\n",
		       (unsigned long long)v, (unsigned long long)maxv);
		violations++;
	}
	world_close(w, true);
	return 0;
}

int main(void)
{
	struct world w;
	int here, ret = 0;
	cpu_set_t one;

	/* Stay on one CPU, so the daemon's own-CPU credit never lands on the simulated one. */
	here = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(here, &one);
	sched_setaffinity(0, sizeof(one), &one);
	memset(&w, 0, sizeof(w));
	w.ncpu = (uint64_t)here + 2;
	w.sim = here + 1;
	S.now = 1000000000000ULL;

	for (int k = 1; k <= 8 && !ret; k++)
		ret = scenario_idle_exit(&w, k);
	if (!ret)
		ret = scenario_vtime_harvest(&w);
	if (!ret)
		ret = scenario_restart(&w);
	if (ret) {
		fprintf(stderr, "simulation failed: %s\n", strerror(-ret));
		return 2;
	}
	if (violations)
		return 1;
	printf("publisher simulation: idle exit at each of 8 clock reads, a vtime event folded "
	       "late, a restart: all sound\n");
	return 0;
}
