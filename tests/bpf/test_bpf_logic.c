// SPDX-License-Identifier: MIT
/*
 * The evidence logic (bpf/slot_logic.h), driven deterministically: the test-only object's raw_tp
 * entry point runs under BPF_PROG_TEST_RUN on a chosen CPU with plain arguments, and the test
 * reads the slots back through the same mmap the daemon uses.  The test-only object has its own
 * maps, so nothing here can touch a live CPU's slot.  The production object is only loaded, never
 * attached, to check that its stores are the locked exchanges the soundness argument needs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bd_sync.h"
#include "test_env.h"
#include <barrierd_slot.h>
#include "barrierd_test.skel.h"
#include "barrierd.skel.h"

/* barrierd_test.bpf.c's TEST_OP_*: args[0] of the entry point. */
#define OP_EVENT 0
#define OP_SWITCH 1

/* Arbitrary thread ids: none is 0, which the programs treat as "no thread" (the idle task). */
#define TID_APP 4321
#define TID_OTHER 4322
#define TID_DAEMON 777
#define TID_MAIN 4242

#define RECORDS_MAX 64

/* The condition, then a printf-style message saying what the logic got wrong. */
#define expect_that(cond, ...)                                                                     \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fail_msg(__VA_ARGS__);                                                     \
	} while (0)

static int g_ncpu;     /* possible CPUs: the slot array's size */
static bool *g_online; /* BPF_PROG_TEST_RUN can only run on an online CPU */

struct fixture {
	struct barrierd_test_bpf *skel;
	struct barrierd_slot *slots; /* mmap of the BPF_F_MMAPABLE array, as the daemon reads it */
	size_t slots_len;
	struct ring_buffer *rb;
	unsigned int nrec; /* ring-buffer records seen since the last take_records() */
	uint32_t rec_cpu[RECORDS_MAX];
	unsigned int bad_len; /* records whose size is not one CPU number */
};

/* "0-1,4,6-7" -> online[i]; 0 or -errno. */
static int read_online_cpus(bool *online, int n)
{
	char buf[4096];
	FILE *fp = fopen("/sys/devices/system/cpu/online", "re");
	char *p = buf;

	if (!fp)
		return -errno;
	if (!fgets(buf, sizeof(buf), fp)) {
		fclose(fp);
		return -EIO;
	}
	fclose(fp);
	while (*p && *p != '\n') {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1)
				return -EINVAL;
			p = end;
		}
		for (long c = lo; c <= hi && c < n; c++)
			online[c] = true;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct fixture *f = ctx;

	if (len != sizeof(uint32_t)) {
		f->bad_len++;
		return 0;
	}
	if (f->nrec < RECORDS_MAX)
		memcpy(&f->rec_cpu[f->nrec], data, sizeof(uint32_t));
	f->nrec++;
	return 0;
}

/* Consume whatever the program produced; the number of records since the last call. */
static unsigned int take_records(struct fixture *f)
{
	int ret;

	f->nrec = 0;
	ret = ring_buffer__consume(f->rb);
	expect_that(ret >= 0, "ring_buffer__consume: %s", strerror(-ret));
	expect_that(f->bad_len == 0, "%u ring-buffer records are not a 4-byte CPU number",
		    f->bad_len);
	return f->nrec;
}

static int teardown(void **state);

/* A fresh object for each test: zeroed slots, .bss and ring buffer, no state carried over. */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	long page = sysconf(_SC_PAGESIZE);
	int ret;

	if (!f)
		return -ENOMEM;
	*state = f;
	ret = -EINVAL;
	f->skel = barrierd_test_bpf__open();
	if (!f->skel) {
		ret = -errno;
		fprintf(stderr, "cannot open the test object: %s\n", strerror(-ret));
		goto fail;
	}
	/* One slot per possible CPU, as the daemon sizes it (the object says 1). */
	ret = bpf_map__set_max_entries(f->skel->maps.slots, (uint32_t)g_ncpu);
	if (!ret)
		ret = barrierd_test_bpf__load(f->skel);
	if (ret) {
		fprintf(stderr, "cannot load the test object: %s\n", strerror(-ret));
		goto fail;
	}
	f->slots_len = ((size_t)g_ncpu * sizeof(struct barrierd_slot) + (size_t)page - 1) &
		       ~((size_t)page - 1);
	f->slots = mmap(NULL, f->slots_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(f->skel->maps.slots), 0);
	if (f->slots == MAP_FAILED) {
		ret = -errno;
		f->slots = NULL;
		fprintf(stderr, "cannot mmap the slot array: %s\n", strerror(-ret));
		goto fail;
	}
	f->rb = ring_buffer__new(bpf_map__fd(f->skel->maps.signal_rb), on_record, f, NULL);
	if (!f->rb) {
		ret = -errno;
		fprintf(stderr, "cannot open the signal ring buffer: %s\n", strerror(-ret));
		goto fail;
	}
	return 0;
fail:
	/* cmocka skips the teardown of a failed setup. */
	teardown(state);
	*state = NULL;
	return ret;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (!f)
		return 0;
	if (f->rb)
		ring_buffer__free(f->rb);
	if (f->slots)
		munmap(f->slots, f->slots_len);
	barrierd_test_bpf__destroy(f->skel);
	free(f);
	return 0;
}

/* Run the entry point once on cpu: 0 or -errno (a nonzero program return is -EPROTO). */
static int run_op(struct fixture *f, int cpu, uint64_t op, uint32_t tid, uint32_t next_pid)
{
	/* Always all three arguments: the program reads args[2] whatever the op. */
	uint64_t args[3] = {op, tid, next_pid};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args, .ctx_size_in = sizeof(args),
		    .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = (uint32_t)cpu);
	int ret;

	ret = bpf_prog_test_run_opts(bpf_program__fd(f->skel->progs.barrierd_test_entry), &opts);
	if (ret < 0)
		return ret;
	return opts.retval == 0 ? 0 : -EPROTO;
}

#define must_run(f, cpu, op, tid, next)                                                            \
	do {                                                                                       \
		int r_ = run_op((f), (cpu), (op), (tid), (next));                                  \
		expect_that(r_ == 0, "BPF_PROG_TEST_RUN on CPU %d (op %d): %s", (int)(cpu),        \
			    (int)(op), strerror(-r_));                                             \
	} while (0)

#define event(f, cpu, tid) must_run(f, cpu, OP_EVENT, tid, 0)
#define sched_switch(f, cpu, prev, next) must_run(f, cpu, OP_SWITCH, prev, next)

/* A slot as plain uint64_t values (the kernel's __u64 is another type to printf). */
struct slot_view {
	uint64_t stamp, vtime, idle, switches, events, signals, sig_stamp, reserved;
};

/* Each field one aligned 64-bit load, as the daemon reads the shared slot. */
static struct slot_view view_of(const struct barrierd_slot *s)
{
	struct slot_view v = {
	    .stamp = __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE),
	    .vtime = __atomic_load_n(&s->vtime, __ATOMIC_ACQUIRE),
	    .idle = __atomic_load_n(&s->idle, __ATOMIC_ACQUIRE),
	    .switches = __atomic_load_n(&s->switches, __ATOMIC_ACQUIRE),
	    .events = __atomic_load_n(&s->events, __ATOMIC_ACQUIRE),
	    .signals = __atomic_load_n(&s->signals, __ATOMIC_ACQUIRE),
	    .sig_stamp = __atomic_load_n(&s->sig_stamp, __ATOMIC_ACQUIRE),
	    .reserved = __atomic_load_n(&s->reserved, __ATOMIC_ACQUIRE),
	};

	return v;
}

static struct slot_view slot_of(const struct fixture *f, int cpu)
{
	return view_of(&f->slots[cpu]);
}

static bool slot_equal(const struct slot_view *a, const struct slot_view *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* Every slot but cpu's still equals its copy in before[]. */
static void expect_others_unchanged(const struct fixture *f, const struct slot_view *before,
				    int cpu)
{
	for (int o = 0; o < g_ncpu; o++) {
		struct slot_view s = slot_of(f, o);

		if (o == cpu)
			continue;
		expect_that(slot_equal(&s, &before[o]),
			    "a run on CPU %d changed CPU %d's slot (stamp %" PRIu64 " -> %" PRIu64
			    ", events %" PRIu64 " -> %" PRIu64 ", idle %" PRIu64 " -> %" PRIu64 ")",
			    cpu, o, before[o].stamp, s.stamp, before[o].events, s.events,
			    before[o].idle, s.idle);
	}
}

static void snapshot(const struct fixture *f, struct slot_view *out)
{
	for (int c = 0; c < g_ncpu; c++)
		out[c] = slot_of(f, c);
}

/* 1. An event stores a clock reading into its own CPU's slot, and counts itself. */
static void test_event_stamps(void **state)
{
	struct fixture *f = *state;
	struct slot_view *before = calloc((size_t)g_ncpu, sizeof(*before));

	assert_non_null(before);
	for (int cpu = 0; cpu < g_ncpu; cpu++) {
		struct slot_view s, looked;
		struct barrierd_slot looked_up;
		uint64_t t0, t1, first;
		__u32 key = (__u32)cpu;

		if (!g_online[cpu])
			continue;
		snapshot(f, before);
		/* bpf_ktime_get_ns() is CLOCK_MONOTONIC: the readings bracket a stamp. */
		t0 = bd_mono_ns();
		event(f, cpu, TID_APP);
		t1 = bd_mono_ns();
		s = slot_of(f, cpu);
		expect_that(s.stamp >= t0 && s.stamp <= t1,
			    "CPU %d: stamp %" PRIu64 " is not a CLOCK_MONOTONIC reading taken "
			    "during the run [%" PRIu64 ", %" PRIu64 "]",
			    cpu, s.stamp, t0, t1);
		expect_that(s.events == before[cpu].events + 1,
			    "CPU %d: events %" PRIu64 " after one event, expected %" PRIu64, cpu,
			    s.events, before[cpu].events + 1);
		expect_that(s.sig_stamp == s.stamp,
			    "CPU %d: a non-daemon event must record its stamp as sig_stamp "
			    "(%" PRIu64 " != stamp %" PRIu64 ")",
			    cpu, s.sig_stamp, s.stamp);
		expect_that(s.switches == before[cpu].switches && s.idle == before[cpu].idle,
			    "CPU %d: an evidence event touched the switch count or the idle word",
			    cpu);
		expect_that(s.signals == 0, "CPU %d: signalled with watermark 0", cpu);
		expect_others_unchanged(f, before, cpu);

		/* The mmap is the daemon's view; it must agree with the syscall's. */
		expect_that(
		    bpf_map_lookup_elem(bpf_map__fd(f->skel->maps.slots), &key, &looked_up) == 0,
		    "bpf_map_lookup_elem(slots, %d): %s", cpu, strerror(errno));
		looked = view_of(&looked_up);
		expect_that(slot_equal(&looked, &s),
			    "CPU %d: the mmaped slot differs from bpf_map_lookup_elem's", cpu);

		/* A later event replaces the stamp with a later reading. */
		first = s.stamp;
		event(f, cpu, TID_APP);
		s = slot_of(f, cpu);
		expect_that(s.stamp > first,
			    "CPU %d: second event's stamp %" PRIu64
			    " is not after the first %" PRIu64,
			    cpu, s.stamp, first);
		expect_that(s.events == before[cpu].events + 2,
			    "CPU %d: events %" PRIu64 " after two events", cpu, s.events);
	}
	expect_that(take_records(f) == 0, "ring-buffer records with watermark 0");
	free(before);
}

/* 2. The event stores the .bss vtime it loaded, whatever the daemon last published there. */
static void test_vtime(void **state)
{
	struct fixture *f = *state;
	struct slot_view *before = calloc((size_t)g_ncpu, sizeof(*before));

	assert_non_null(before);
	for (int cpu = 0; cpu < g_ncpu; cpu++) {
		uint64_t v1 = 1000 + (uint64_t)cpu, v2 = 5000000 + (uint64_t)cpu;
		struct slot_view s;

		if (!g_online[cpu])
			continue;
		snapshot(f, before);
		f->skel->bss->vtime = v1;
		event(f, cpu, TID_APP);
		s = slot_of(f, cpu);
		expect_that(s.vtime == v1,
			    "CPU %d: slot.vtime %" PRIu64 ", expected the .bss vtime %" PRIu64, cpu,
			    s.vtime, v1);
		expect_others_unchanged(f, before, cpu);

		f->skel->bss->vtime = v2;
		event(f, cpu, TID_APP);
		s = slot_of(f, cpu);
		expect_that(s.vtime == v2,
			    "CPU %d: slot.vtime %" PRIu64 " after vtime was raised to %" PRIu64,
			    cpu, s.vtime, v2);
	}
	free(before);
}

/* The signals CPU cpu sent since the previous call, each one a record naming cpu. */
static void expect_signals(struct fixture *f, int cpu, unsigned int want, const char *when)
{
	unsigned int n = take_records(f);

	expect_that(n == want, "CPU %d, %s: %u ring-buffer records, expected %u", cpu, when, n,
		    want);
	for (unsigned int i = 0; i < n && i < RECORDS_MAX; i++)
		expect_that(f->rec_cpu[i] == (uint32_t)cpu,
			    "CPU %d, %s: the record names CPU %" PRIu32, cpu, when, f->rec_cpu[i]);
}

/* 3. One signal per CPU per watermark advance; the daemon's own threads never signal. */
static void test_signals(void **state)
{
	struct fixture *f = *state;
	volatile __u64 *wm = &f->skel->bss->watermark;
	uint64_t max_stamp = 0;

	f->skel->bss->daemon_tids[3] = TID_DAEMON;
	for (int cpu = 0; cpu < g_ncpu; cpu++) {
		struct slot_view s;
		uint64_t sig0;

		if (!g_online[cpu])
			continue;
		/* Watermark 0 means no CPU is busy: never signal, however old the stamp. */
		*wm = 0;
		for (int i = 0; i < 3; i++)
			event(f, cpu, TID_APP);
		expect_signals(f, cpu, 0, "watermark 0");

		/* A watermark just below the previous stamp: that stamp already passed it. */
		s = slot_of(f, cpu);
		*wm = s.stamp - 1;
		event(f, cpu, TID_APP);
		expect_signals(f, cpu, 0, "previous stamp > watermark");

		/* Watermark equal to the previous stamp: not passed (comparisons are strict). */
		s = slot_of(f, cpu);
		*wm = s.stamp;
		event(f, cpu, TID_APP);
		expect_signals(f, cpu, 1, "first event after the watermark reached its stamp");
		for (int i = 0; i < 3; i++)
			event(f, cpu, TID_APP);
		expect_signals(f, cpu, 0, "later events (their previous stamp is above it)");
		s = slot_of(f, cpu);
		expect_that(s.signals == 1, "CPU %d: slot.signals %" PRIu64 ", expected 1", cpu,
			    s.signals);

		/* Raising the watermark past the stamp buys exactly one more. */
		*wm = s.stamp;
		event(f, cpu, TID_APP);
		event(f, cpu, TID_APP);
		expect_signals(f, cpu, 1, "after the watermark was raised");

		/*
		 * A daemon thread's event stamps but never signals, and must not use up the
		 * signal: the next application event still has an old sig_stamp.
		 */
		s = slot_of(f, cpu);
		sig0 = s.sig_stamp;
		*wm = s.stamp;
		event(f, cpu, TID_DAEMON);
		event(f, cpu, TID_DAEMON);
		expect_signals(f, cpu, 0, "daemon-thread events");
		s = slot_of(f, cpu);
		expect_that(s.stamp > sig0,
			    "CPU %d: a daemon-thread event must still stamp (it is evidence)", cpu);
		expect_that(s.sig_stamp == sig0,
			    "CPU %d: a daemon-thread event moved sig_stamp %" PRIu64 " -> %" PRIu64,
			    cpu, sig0, s.sig_stamp);
		event(f, cpu, TID_APP);
		expect_signals(f, cpu, 1, "first application event after daemon events");
		event(f, cpu, TID_APP);
		expect_signals(f, cpu, 0, "second application event after daemon events");
		s = slot_of(f, cpu);
		expect_that(s.signals == 3, "CPU %d: slot.signals %" PRIu64 ", expected 3", cpu,
			    s.signals);
		if (s.stamp > max_stamp)
			max_stamp = s.stamp;
	}

	/* The signal is per CPU: one CPU's signal does not use up another's. */
	*wm = max_stamp;
	for (int cpu = 0; cpu < g_ncpu; cpu++) {
		if (!g_online[cpu])
			continue;
		event(f, cpu, TID_APP);
		expect_signals(f, cpu, 1, "shared watermark raised above every CPU's stamp");
	}
	for (int cpu = 0; cpu < g_ncpu; cpu++) {
		if (!g_online[cpu])
			continue;
		event(f, cpu, TID_APP);
		expect_signals(f, cpu, 0, "second round under the same watermark");
	}
}

static void expect_idle(const struct fixture *f, int cpu, uint64_t want, uint64_t switches,
			const char *when)
{
	struct slot_view s = slot_of(f, cpu);

	expect_that(s.idle == want, "CPU %d, %s: idle word %" PRIu64 ", expected %s (%" PRIu64 ")",
		    cpu, when, s.idle,
		    want == BARRIERD_SLOT_IDLE	 ? "IDLE"
		    : want == BARRIERD_SLOT_BUSY ? "BUSY"
						 : "UNKNOWN",
		    want);
	expect_that(s.switches == switches,
		    "CPU %d, %s: slot.switches %" PRIu64 ", expected %" PRIu64, cpu, when,
		    s.switches, switches);
}

/* 4. The idle word is the absolute state of what runs next, never a count of transitions. */
static void test_idle_word(void **state)
{
	/* Switches from prev to next (0: the idle task), and the idle word after each. */
	static const struct {
		int prev, next;
		uint64_t idle;
		const char *when;
	} steps[] = {
	    /* Leaving idle with no recorded entry (attach while idle): still BUSY, not 1. */
	    {0, TID_APP, BARRIERD_SLOT_BUSY, "idle -> task with no prior IDLE"},
	    {TID_APP, TID_OTHER, BARRIERD_SLOT_BUSY, "task -> task"},
	    {TID_OTHER, 0, BARRIERD_SLOT_IDLE, "task -> idle"},
	    /* A second entry (a missed exit in between) must not flip it back. */
	    {0, 0, BARRIERD_SLOT_IDLE, "idle -> idle"},
	    {0, TID_APP, BARRIERD_SLOT_BUSY, "idle -> task"},
	    {TID_APP, TID_OTHER, BARRIERD_SLOT_BUSY, "task -> task after an exit"},
	    {TID_OTHER, 0, BARRIERD_SLOT_IDLE, "task -> idle again"},
	};
	struct fixture *f = *state;
	struct slot_view *before = calloc((size_t)g_ncpu, sizeof(*before));

	assert_non_null(before);
	for (int cpu = 0; cpu < g_ncpu; cpu++) {
		if (!g_online[cpu])
			continue;
		snapshot(f, before);
		expect_idle(f, cpu, BARRIERD_SLOT_UNKNOWN, 0, "fresh slot");
		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			sched_switch(f, cpu, steps[i].prev, steps[i].next);
			expect_idle(f, cpu, steps[i].idle, i + 1, steps[i].when);
		}
		expect_others_unchanged(f, before, cpu);

		/* switch_stamps is 0: these were idle tracking only, not evidence. */
		expect_that(slot_of(f, cpu).stamp == 0 && slot_of(f, cpu).events == 0,
			    "CPU %d: switches stamped with switch_stamps = 0", cpu);
	}
	free(before);
}

/* 5. sched_switch is evidence only when switch_stamps says it is an evidence tracepoint. */
static void test_switch_stamps(void **state)
{
	struct fixture *f = *state;

	f->skel->bss->daemon_tids[0] = TID_DAEMON;
	/* Every previous stamp is below this: any stamping non-daemon run signals. */
	f->skel->bss->watermark = UINT64_MAX;
	for (int cpu = 0; cpu < g_ncpu; cpu++) {
		struct slot_view s, prev;
		uint64_t t0, t1, vt = 9000 + (uint64_t)cpu;

		if (!g_online[cpu])
			continue;
		f->skel->bss->switch_stamps = 0;
		f->skel->bss->vtime = vt;
		prev = slot_of(f, cpu);
		sched_switch(f, cpu, TID_APP, 0);
		s = slot_of(f, cpu);
		expect_that(s.idle == BARRIERD_SLOT_IDLE && s.switches == prev.switches + 1,
			    "CPU %d: with switch_stamps = 0 the switch must still track idle", cpu);
		expect_that(s.stamp == prev.stamp && s.events == prev.events &&
				s.vtime == prev.vtime && s.sig_stamp == prev.sig_stamp,
			    "CPU %d: with switch_stamps = 0 a switch stamped (stamp %" PRIu64
			    " -> %" PRIu64 ", events %" PRIu64 " -> %" PRIu64 ")",
			    cpu, prev.stamp, s.stamp, prev.events, s.events);
		expect_signals(f, cpu, 0, "switch with switch_stamps = 0");

		f->skel->bss->switch_stamps = 1;
		t0 = bd_mono_ns();
		sched_switch(f, cpu, 0, TID_APP);
		t1 = bd_mono_ns();
		s = slot_of(f, cpu);
		expect_that(s.stamp >= t0 && s.stamp <= t1,
			    "CPU %d: with switch_stamps = 1 the switch's stamp %" PRIu64
			    " is not a reading from [%" PRIu64 ", %" PRIu64 "]",
			    cpu, s.stamp, t0, t1);
		expect_that(s.events == prev.events + 1 && s.vtime == vt,
			    "CPU %d: a stamping switch must count as an event and carry vtime "
			    "(events %" PRIu64 ", vtime %" PRIu64 ")",
			    cpu, s.events, s.vtime);
		expect_that(s.idle == BARRIERD_SLOT_BUSY,
			    "CPU %d: a stamping switch to a task left the idle word %" PRIu64, cpu,
			    s.idle);
		/* prev is idle (tid 0), not a daemon thread: it may signal. */
		expect_signals(f, cpu, 1, "stamping switch out of idle");

		/* The switching-out thread is the current one: a daemon thread's sleep is silent.
		 */
		prev = s;
		sched_switch(f, cpu, TID_DAEMON, 0);
		s = slot_of(f, cpu);
		expect_that(s.stamp > prev.stamp && s.idle == BARRIERD_SLOT_IDLE,
			    "CPU %d: a daemon thread's switch must still stamp and track idle",
			    cpu);
		expect_signals(f, cpu, 0, "switch with a daemon thread as prev");
		sched_switch(f, cpu, 0, TID_APP);
		expect_signals(f, cpu, 1, "next non-daemon switch");
	}
}

/* 6. The detach check counts exactly the switches whose prev is the daemon's main thread. */
static void test_main_switches(void **state)
{
	struct fixture *f = *state;
	volatile __u64 *count = &f->skel->bss->main_switches;
	uint64_t want = 0;

	for (int cpu = 0; cpu < g_ncpu; cpu++) {
		if (!g_online[cpu])
			continue;
		f->skel->bss->main_tid = TID_MAIN;
		sched_switch(f, cpu, TID_MAIN, 0);
		want++;
		expect_that(*count == want,
			    "CPU %d: main_switches %" PRIu64 " after main thread switched out, "
			    "expected %" PRIu64,
			    cpu, (uint64_t)*count, want);
		sched_switch(f, cpu, 0, TID_MAIN);
		sched_switch(f, cpu, TID_MAIN + 1, TID_MAIN);
		event(f, cpu, TID_MAIN);
		expect_that(*count == want,
			    "CPU %d: main_switches %" PRIu64 " counted a switch *to* the main "
			    "thread, another thread's switch or an event (expected %" PRIu64 ")",
			    cpu, (uint64_t)*count, want);
		/* Before main_tid is learned it is 0: the idle task switching out is not main. */
		f->skel->bss->main_tid = 0;
		sched_switch(f, cpu, 0, TID_APP);
		expect_that(*count == want,
			    "CPU %d: with main_tid unset, an idle-task switch counted as main's",
			    cpu);
	}
}

/* Which 64-bit xchg offsets the verified program holds; 0 or -errno. */
static int xchg_offsets(int prog_fd, bool *at_stamp, bool *at_idle, unsigned int *n_xchg)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	struct bpf_insn *insns;
	size_t n;
	int ret;

	*at_stamp = *at_idle = false;
	*n_xchg = 0;
	memset(&info, 0, sizeof(info));
	/* libbpf 1.1 has no bpf_prog_get_info_by_fd; this is the same call. */
	ret = bpf_obj_get_info_by_fd(prog_fd, &info, &len);
	if (ret)
		return ret;
	n = info.xlated_prog_len / sizeof(struct bpf_insn);
	if (n == 0)
		return -ENODATA;
	insns = calloc(n, sizeof(*insns));
	if (!insns)
		return -ENOMEM;
	memset(&info, 0, sizeof(info));
	len = sizeof(info);
	info.xlated_prog_len = (__u32)(n * sizeof(*insns));
	info.xlated_prog_insns = (__u64)(uintptr_t)insns;
	ret = bpf_obj_get_info_by_fd(prog_fd, &info, &len);
	if (ret) {
		free(insns);
		return ret;
	}
	/*
	 * The x86 JIT turns BPF_STX|BPF_ATOMIC|BPF_DW with imm BPF_XCHG into xchg, implicitly
	 * locked: what rule 1 (stamp) and rule 2 (idle word) rest on.  A plain store would be
	 * BPF_STX|BPF_MEM.  The slot pointer is the base register, so off is the field.
	 */
	for (size_t i = 0; i < n; i++) {
		if (insns[i].code != (BPF_STX | BPF_ATOMIC | BPF_DW) || insns[i].imm != BPF_XCHG)
			continue;
		(*n_xchg)++;
		if (insns[i].off == offsetof(struct barrierd_slot, stamp))
			*at_stamp = true;
		if (insns[i].off == offsetof(struct barrierd_slot, idle))
			*at_idle = true;
	}
	free(insns);
	return 0;
}

static void expect_xchg(const char *what, int prog_fd, bool want_idle)
{
	unsigned int n;
	bool stamp, idle;
	int ret = xchg_offsets(prog_fd, &stamp, &idle, &n);

	expect_that(ret == 0, "%s: cannot read the xlated instructions: %s", what, strerror(-ret));
	expect_that(n > 0,
		    "%s: no BPF_STX|BPF_ATOMIC|BPF_DW xchg at all: the stamp is a plain "
		    "store, which is not evidence (rule 1)",
		    what);
	expect_that(stamp,
		    "%s: %u xchg, none stores slot.stamp (offset %zu): rule 1 needs the "
		    "stamp exchanged",
		    what, n, offsetof(struct barrierd_slot, stamp));
	if (want_idle)
		expect_that(idle,
			    "%s: no xchg stores slot.idle (offset %zu): a plain store may "
			    "sit in the store buffer and show a stale IDLE (rule 2)",
			    what, offsetof(struct barrierd_slot, idle));
}

/* 7a. The test-only object, which runs the same slot_logic.h, exchanges stamp and idle word. */
static void test_xchg_test_object(void **state)
{
	struct fixture *f = *state;

	expect_xchg("barrierd_test_entry", bpf_program__fd(f->skel->progs.barrierd_test_entry),
		    true);
}

/* The production object, loaded (its slots sized for this machine) but never attached. */
static struct barrierd_bpf *load_production(void)
{
	struct barrierd_bpf *skel = barrierd_bpf__open();
	int ret;

	expect_that(skel, "cannot open the production object: %s", strerror(errno));
	ret = bpf_map__set_max_entries(skel->maps.slots, (uint32_t)g_ncpu);
	if (!ret)
		ret = barrierd_bpf__load(skel);
	if (ret) {
		barrierd_bpf__destroy(skel);
		fail_msg("cannot load the production object: %s", strerror(-ret));
	}
	return skel;
}

/* 7b. The production programs, loaded but never attached: no live slot is touched. */
static void test_xchg_production(void **state)
{
	struct barrierd_bpf *skel;

	(void)state;
	skel = load_production();
	expect_xchg("barrierd_event", bpf_program__fd(skel->progs.barrierd_event), false);
	expect_xchg("barrierd_switch", bpf_program__fd(skel->progs.barrierd_switch), true);
	barrierd_bpf__destroy(skel);
}

/*
 * The daemon learns its threads' global tids (daemon_tids[], main_tid) by running
 * barrierd_whoami from each thread.  Outside a pid namespace, as here, that is gettid().
 */
static void test_whoami_production(void **state)
{
	uint64_t dummy[1] = {0};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = dummy, .ctx_size_in = sizeof(dummy));
	struct barrierd_bpf *skel;
	uint64_t got;
	int ret;

	(void)state;
	skel = load_production();
	ret = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.barrierd_whoami), &opts);
	got = skel->bss->whoami_tid;
	barrierd_bpf__destroy(skel);
	expect_that(ret == 0, "BPF_PROG_TEST_RUN of barrierd_whoami: %s", strerror(-ret));
	expect_that(got == (uint64_t)gettid(),
		    "barrierd_whoami saw tid %" PRIu64 ", this thread is %d", got, (int)gettid());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_event_stamps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vtime, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_signals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_word, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_switch_stamps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_main_switches, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_xchg_test_object, setup, teardown),
	    cmocka_unit_test(test_xchg_production),
	    cmocka_unit_test(test_whoami_production),
	};
	int n_online = 0, ret;

	test_require_root();
	g_ncpu = libbpf_num_possible_cpus();
	if (g_ncpu <= 0) {
		fprintf(stderr, "cannot count the possible CPUs: %s\n", strerror(-g_ncpu));
		return 1;
	}
	g_online = calloc((size_t)g_ncpu, sizeof(*g_online));
	if (!g_online)
		return 1;
	ret = read_online_cpus(g_online, g_ncpu);
	if (ret) {
		fprintf(stderr, "cannot read the online CPUs: %s\n", strerror(-ret));
		return 1;
	}
	for (int c = 0; c < g_ncpu; c++)
		n_online += g_online[c];
	fprintf(stderr, "driving %d online of %d possible CPUs\n", n_online, g_ncpu);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	free(g_online);
	return ret;
}
