// SPDX-License-Identifier: MIT
/* The evidence audit's recorder, user-space side: load, attach, drain, and answer queries. */
#include "recorder.h"
#include "audit_record.h"
#include "audit_recorder.skel.h"
#include "bd_sync.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The first fatal problem wins: later ones are usually its consequences. */
__attribute__((format(printf, 2, 3))) static void rec_fail(struct recorder *r, const char *fmt, ...)
{
	va_list ap;

	if (r->error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
}

/* Parse a sysfs CPU list ("0-3,5") into a byte mask; returns the highest id + 1 seen. */
static int parse_cpu_list(const char *path, uint8_t *mask, int n)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC), hi = 0;
	ssize_t len;
	char *p = buf;

	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EIO;
	buf[len] = 0;
	if (mask)
		memset(mask, 0, (size_t)n);
	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return -EIO;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b; c++) {
			if (mask && c < n)
				mask[c] = 1;
			hi = (int)c + 1 > hi ? (int)c + 1 : hi;
		}
		p = *end == ',' ? end + 1 : end;
	}
	return hi;
}

int rec_possible_cpus(void)
{
	int n = parse_cpu_list("/sys/devices/system/cpu/possible", NULL, 0);

	return n > AUDIT_MAX_CPUS ? -E2BIG : n;
}

int rec_online_cpus(uint8_t *online, int ncpu)
{
	int n = parse_cpu_list("/sys/devices/system/cpu/online", online, ncpu);

	return n < 0 ? n : 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	void *q;
	size_t c = *cap ? *cap : 1024;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Sequence numbers: every number below next_seq has arrived; `ahead` holds early arrivals. */
static int note_seq(struct rec_log *l, uint32_t seq)
{
	if (seq == (uint32_t)l->next_seq) {
		bool moved = true;

		l->next_seq++;
		while (moved) {
			moved = false;
			for (unsigned i = 0; i < l->n_ahead; i++) {
				if (l->ahead[i] == (uint32_t)l->next_seq) {
					l->ahead[i] = l->ahead[--l->n_ahead];
					l->next_seq++;
					moved = true;
					break;
				}
			}
		}
		return 0;
	}
	if ((int32_t)(seq - (uint32_t)l->next_seq) < 0)
		return -EEXIST; /* a duplicate: the log is corrupt */
	if (l->n_ahead == REC_AHEAD_MAX)
		return -ENOSPC; /* too many missing: records were lost */
	l->ahead[l->n_ahead++] = seq;
	return 0;
}

/*
 * The daemon read the online list and the kernel answered m: every possible CPU missing from
 * it was offline at an instant in [since, time].  Called with the lock held.
 */
static void note_mask(struct recorder *r, const struct audit_mask_record *m)
{
	char list[AUDIT_MASK_BYTES + 1];
	uint8_t *on = calloc((size_t)r->ncpu, 1);
	size_t n = m->len < AUDIT_MASK_BYTES ? m->len : AUDIT_MASK_BYTES;
	const char *p = list;

	if (!on) {
		rec_fail(r, "out of memory");
		return;
	}
	memcpy(list, m->mask, n);
	list[n] = 0;
	/* A list cut short (no newline) proves nothing: some CPUs would look missing. */
	if (!n || !strchr(list, '\n')) {
		free(on);
		return;
	}
	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c < r->ncpu; c++)
			if (c >= 0)
				on[c] = 1;
		p = *end == ',' ? end + 1 : end;
	}
	if (*p != '\n') {
		free(on); /* not a CPU list */
		return;
	}
	for (int c = 0; c < r->ncpu; c++) {
		if (on[c])
			continue;
		if (grow((void **)&r->offline, &r->cap_offline, r->n_offline + 1,
			 sizeof(*r->offline))) {
			rec_fail(r, "out of memory");
			break;
		}
		r->offline[r->n_offline++] =
		    (struct rec_offline){c, true, m->rec.since, m->rec.time};
	}
	free(on);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct rec_instance *in = ctx;
	struct recorder *r = in->owner;
	const struct audit_record *e = data;
	struct rec_log *l;
	int ret;

	if (size < sizeof(*e) || e->cpu >= (uint32_t)r->ncpu) {
		rec_fail(r, "recorder %d: malformed record (size %zu)", in->id, size);
		return 0;
	}
	r->records++;
	l = &in->cpu[e->cpu];
	ret = note_seq(l, e->seq);
	if (ret)
		rec_fail(r, "recorder %d: cpu %u: record %u %s", in->id, e->cpu, e->seq,
			 ret == -EEXIST ? "arrived twice" : "is far ahead of a missing one");
	if (e->kind == AUDIT_EV_ONLINE_MASK) {
		/* Offline bookkeeping, not evidence: never among the events. */
		if (size < sizeof(struct audit_mask_record))
			rec_fail(r, "recorder %d: short online-mask record", in->id);
		else
			note_mask(r, data);
		return 0;
	}
	if (grow((void **)&l->ev, &l->cap_ev, l->n_ev + 1, sizeof(*l->ev))) {
		rec_fail(r, "out of memory");
		return 0;
	}
	if (l->n_ev && e->time < l->ev[l->n_ev - 1].time)
		l->ev_sorted = false; /* a nested probe: sorted again before use */
	l->ev[l->n_ev++] = (struct rec_ev){e->time, e->since, e->kind, 0};
	if (e->kind != AUDIT_EV_SWITCH)
		return 0;

	if (l->n_sw) {
		const struct rec_switch *last = &l->sw[l->n_sw - 1];

		/*
		 * What ran after the previous switch must be what this one switches away from.
		 * A lost switch out of the idle task would make an idle interval look longer
		 * than it was, which could accept a barrier without evidence: fatal.  A missing
		 * switch away from a task only makes the CPU look busy for longer, which is the
		 * safe side (and the daemon's idle word, set on the same tracepoint, errs the
		 * same way).  That one happens: on the kernel this was written on, switches away
		 * from some tasks (the sandbox's agent threads) never reach the sched_switch
		 * tracepoint at all, for ftrace as for BPF.  It is counted, not fatal.  (A pid
		 * that changes under exec from a non-leader thread is counted the same way.)
		 */
		if (last->next_pid == 0 && e->prev_pid != 0)
			rec_fail(r,
				 "recorder %d: cpu %u: a switch out of the idle task was lost (the "
				 "previous switch went to it, this one leaves pid %u)",
				 in->id, e->cpu, e->prev_pid);
		else if (last->next_pid != 0 && e->prev_pid != last->next_pid)
			r->untraced_switches++;
		if (e->time < last->time)
			rec_fail(r,
				 "recorder %d: cpu %u: switch times go backwards (%llu after %llu)",
				 in->id, e->cpu, (unsigned long long)e->time,
				 (unsigned long long)last->time);
	}
	if (grow((void **)&l->sw, &l->cap_sw, l->n_sw + 1, sizeof(*l->sw))) {
		rec_fail(r, "out of memory");
		return 0;
	}
	l->sw[l->n_sw++] = (struct rec_switch){e->time, e->prev_pid, e->next_pid};
	if (r->flush_tid && e->next_pid == r->flush_tid && e->time >= r->flush_start &&
	    !l->flush_seen) {
		l->flush_seen = true;
		l->flush_seq = e->seq;
	}
	return 0;
}

static void check_drops(struct recorder *r, struct rec_instance *in)
{
	uint64_t d = __atomic_load_n(&in->skel->bss->audit_drops, __ATOMIC_ACQUIRE);

	if (d)
		rec_fail(r, "recorder %d: %llu records lost (ring buffer full)", in->id,
			 (unsigned long long)d);
}

static void drain_locked(struct recorder *r)
{
	for (int i = 0; i < r->n_inst; i++) {
		struct rec_instance *in = r->inst[i];

		if (!in->rb)
			continue;
		if (ring_buffer__consume(in->rb) < 0)
			rec_fail(r, "recorder %d: cannot drain its ring buffer", in->id);
		check_drops(r, in);
	}
}

static void *drainer(void *arg)
{
	struct recorder *r = arg;

	/* Polled, not woken per record: a wake-up per record would be an event per record. */
	while (!r->stop) {
		pthread_mutex_lock(&r->lock);
		drain_locked(r);
		pthread_mutex_unlock(&r->lock);
		sleep_us(5000);
	}
	return NULL;
}

__attribute__((format(printf, 2, 0))) static int quiet_libbpf(enum libbpf_print_level level,
							      const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int recorder_init(struct recorder *r, int ncpu)
{
	memset(r, 0, sizeof(*r));
	r->ncpu = ncpu;
	pthread_mutex_init(&r->lock, NULL);
	libbpf_set_print(quiet_libbpf);
	if (pthread_create(&r->drainer, NULL, drainer, r))
		return -EAGAIN;
	r->drainer_running = true;
	return 0;
}

static void free_instance(struct rec_instance *in)
{
	for (int i = 0; i < 5; i++)
		if (in->links[i])
			bpf_link__destroy(in->links[i]);
	if (in->rb)
		ring_buffer__free(in->rb);
	if (in->skel)
		recorder_bpf__destroy(in->skel);
	in->rb = NULL;
	in->skel = NULL;
	memset(in->links, 0, sizeof(in->links));
}

int recorder_attach(struct recorder *r)
{
	struct rec_instance *in;
	uint8_t *online;
	int ret = 0;

	if (r->n_inst == REC_MAX_INSTANCES)
		return -ENOSPC;
	in = calloc(1, sizeof(*in));
	online = calloc((size_t)r->ncpu, 1);
	if (!in || !online) {
		free(in);
		free(online);
		return -ENOMEM;
	}
	in->owner = r;
	in->id = r->n_inst;
	in->cover_end = UINT64_MAX;
	in->cpu = calloc((size_t)r->ncpu, sizeof(*in->cpu));
	for (int c = 0; in->cpu && c < r->ncpu; c++)
		in->cpu[c].ev_sorted = true;
	in->skel = recorder_bpf__open_and_load();
	if (!in->cpu || !in->skel) {
		ret = errno ? -errno : -ENOMEM;
		goto fail;
	}
	in->rb = ring_buffer__new(bpf_map__fd(in->skel->maps.audit_rb), on_record, in, NULL);
	if (!in->rb) {
		ret = -errno;
		goto fail;
	}
	/* Registered with the lock held: no record may arrive before the instance is listed. */
	pthread_mutex_lock(&r->lock);
	r->inst[r->n_inst++] = in;
	in->links[0] = bpf_program__attach(in->skel->progs.audit_switch);
	in->links[1] =
	    bpf_program__attach_raw_tracepoint(in->skel->progs.audit_softirq, "softirq_entry");
	in->links[2] =
	    bpf_program__attach_raw_tracepoint(in->skel->progs.audit_timer, "local_timer_entry");
	in->links[3] = bpf_program__attach(in->skel->progs.audit_sys_enter);
	in->links[4] = bpf_program__attach(in->skel->progs.audit_sys_exit);
	in->attach_ns = bd_mono_ns();
	in->live = in->links[0] && in->links[1] && in->links[2] && in->links[3] && in->links[4];
	pthread_mutex_unlock(&r->lock);
	if (!in->live) {
		ret = errno ? -errno : -EINVAL;
		pthread_mutex_lock(&r->lock);
		r->n_inst--;
		pthread_mutex_unlock(&r->lock);
		goto fail;
	}
	/*
	 * A CPU offline now runs nothing until it comes up again, and coming up is a switch out
	 * of its idle task, which this attached instance will log.  Read after attaching.
	 */
	ret = rec_online_cpus(online, r->ncpu);
	if (ret)
		goto fail_listed;
	pthread_mutex_lock(&r->lock);
	for (int c = 0; c < r->ncpu; c++) {
		if (!online[c]) {
			in->cpu[c].offline_at_attach = true;
			in->cpu[c].offline_ns = bd_mono_ns();
		}
	}
	pthread_mutex_unlock(&r->lock);
	free(online);
	return 0;
fail_listed:
	pthread_mutex_lock(&r->lock);
	in->live = false;
	in->cover_end = in->attach_ns;
	free_instance(in);
	pthread_mutex_unlock(&r->lock);
	free(online);
	return ret;
fail:
	free_instance(in);
	if (in->cpu)
		free(in->cpu);
	free(in);
	free(online);
	return ret;
}

void recorder_set_daemon(struct recorder *r, int pid)
{
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->n_inst; i++)
		if (r->inst[i]->live && r->inst[i]->skel)
			r->inst[i]->skel->bss->audit_daemon_tgid = (__u32)pid;
	/* Called right after the instance that follows the daemon was attached. */
	if (r->n_inst)
		r->daemon_after_ns = r->inst[r->n_inst - 1]->attach_ns;
	pthread_mutex_unlock(&r->lock);
}

int recorder_retire(struct recorder *r, int keep)
{
	int live = 0;

	for (int i = 0; i < r->n_inst; i++)
		live += r->inst[i]->live;
	for (int i = 0; i < r->n_inst && live > keep; i++) {
		struct rec_instance *in = r->inst[i];
		uint64_t end;

		if (!in->live)
			continue;
		live--;
		/*
		 * Coverage ends before the detach begins: every switch before `end` ran with the
		 * probe attached, and its record is drained below (a probe still running on
		 * another CPU finishes well within the pause).
		 */
		end = bd_mono_ns();
		for (int k = 0; k < 5; k++) {
			bpf_link__destroy(in->links[k]);
			in->links[k] = NULL;
		}
		sleep_us(5000);
		pthread_mutex_lock(&r->lock);
		if (ring_buffer__consume(in->rb) < 0)
			rec_fail(r, "recorder %d: cannot drain its ring buffer", in->id);
		check_drops(r, in);
		in->live = false;
		in->cover_end = end;
		free_instance(in);
		pthread_mutex_unlock(&r->lock);
	}
	return 0;
}

/* Move onto each CPU marked in `cpus` and sleep there briefly: a switch onto it, later than now. */
static void hop(const uint8_t *cpus, int ncpu)
{
	cpu_set_t saved, one;

	sched_getaffinity(0, sizeof(saved), &saved);
	for (int c = 0; c < ncpu; c++) {
		if (!cpus[c])
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		/* The sleep forces a switch even on the CPU we are already on. */
		if (sched_setaffinity(0, sizeof(one), &one) == 0)
			sleep_us(50);
	}
	sched_setaffinity(0, sizeof(saved), &saved);
}

int recorder_flush(struct recorder *r, uint64_t *horizon)
{
	uint8_t *online = calloc((size_t)r->ncpu, 1), *missing = calloc((size_t)r->ncpu, 1);
	uint64_t start, deadline, rehop;
	bool complete = false;

	if (!online || !missing || rec_online_cpus(online, r->ncpu)) {
		free(online);
		free(missing);
		rec_fail(r, "cannot read the online CPUs");
		return -1;
	}
	pthread_mutex_lock(&r->lock);
	start = bd_mono_ns();
	r->flush_tid = (uint32_t)gettid();
	r->flush_start = start;
	for (int i = 0; i < r->n_inst; i++)
		for (int c = 0; c < r->ncpu; c++)
			r->inst[i]->cpu[c].flush_seen = false;
	pthread_mutex_unlock(&r->lock);
	hop(online, r->ncpu);

	/*
	 * Complete when each live instance has logged our switch onto each online CPU and every
	 * record that CPU sequenced before it: the ring buffer hands out records in reservation
	 * order and switches never nest, so nothing earlier can still be missing.  A switch
	 * whose previous task is one of those the tracepoint never reports (recorder.c, the
	 * switch chain) is not logged either: hop onto such a CPU again.
	 */
	deadline = bd_mono_ns() + 3000000000ULL;
	rehop = bd_mono_ns() + 20000000ULL;
	while (!complete && bd_mono_ns() < deadline) {
		pthread_mutex_lock(&r->lock);
		drain_locked(r);
		complete = true;
		memset(missing, 0, (size_t)r->ncpu);
		for (int i = 0; i < r->n_inst; i++) {
			struct rec_instance *in = r->inst[i];

			if (!in->live)
				continue;
			for (int c = 0; c < r->ncpu; c++) {
				const struct rec_log *l = &in->cpu[c];

				if (online[c] && (!l->flush_seen || l->next_seq <= l->flush_seq)) {
					complete = false;
					missing[c] |= !l->flush_seen;
				}
			}
		}
		pthread_mutex_unlock(&r->lock);
		if (complete)
			break;
		if (bd_mono_ns() >= rehop) {
			hop(missing, r->ncpu);
			rehop = bd_mono_ns() + 20000000ULL;
		} else {
			sleep_us(1000);
		}
	}
	/* Stragglers: evidence records of probes that were nested when we looked. */
	sleep_us(2000);
	pthread_mutex_lock(&r->lock);
	drain_locked(r);
	r->flush_tid = 0;
	pthread_mutex_unlock(&r->lock);
	free(online);
	free(missing);
	if (!complete) {
		rec_fail(r, "recorder flush incomplete after 3 s: records were lost");
		return -1;
	}
	*horizon = start;
	return r->error[0] ? -1 : 0;
}

static int cmp_ev(const void *a, const void *b)
{
	uint64_t x = ((const struct rec_ev *)a)->time, y = ((const struct rec_ev *)b)->time;

	return x < y ? -1 : x > y;
}

static void sort_log(struct rec_log *l)
{
	if (!l->ev_sorted) {
		qsort(l->ev, l->n_ev, sizeof(*l->ev), cmp_ev);
		l->ev_sorted = true;
	}
}

void recorder_prune(struct recorder *r, uint64_t before)
{
	size_t kept = 0;

	pthread_mutex_lock(&r->lock);
	/* Offline knowledge that ended before the cut cannot serve a later barrier. */
	for (size_t k = 0; k < r->n_offline; k++)
		if (r->offline[k].to >= before)
			r->offline[kept++] = r->offline[k];
	r->n_offline = kept;
	for (int i = 0; i < r->n_inst; i++) {
		for (int c = 0; c < r->ncpu; c++) {
			struct rec_log *l = &r->inst[i]->cpu[c];
			size_t k = 0, j = 0;

			sort_log(l);
			while (k < l->n_ev && l->ev[k].time < before)
				k++;
			memmove(l->ev, l->ev + k, (l->n_ev - k) * sizeof(*l->ev));
			l->n_ev -= k;
			/* Keep the last switch before the cut: it says what ran from then on. */
			while (j + 1 < l->n_sw && l->sw[j + 1].time < before)
				j++;
			memmove(l->sw, l->sw + j, (l->n_sw - j) * sizeof(*l->sw));
			l->n_sw -= j;
		}
	}
	pthread_mutex_unlock(&r->lock);
}

void recorder_destroy(struct recorder *r)
{
	r->stop = true;
	if (r->drainer_running)
		pthread_join(r->drainer, NULL);
	for (int i = 0; i < r->n_inst; i++) {
		struct rec_instance *in = r->inst[i];

		free_instance(in);
		for (int c = 0; c < r->ncpu; c++) {
			free(in->cpu[c].ev);
			free(in->cpu[c].sw);
		}
		free(in->cpu);
		free(in);
	}
	r->n_inst = 0;
	free(r->offline);
	r->offline = NULL;
	r->n_offline = 0;
	pthread_mutex_destroy(&r->lock);
}

int recorder_note_offline(struct recorder *r, int cpu, uint64_t from, uint64_t to)
{
	int ret;

	pthread_mutex_lock(&r->lock);
	ret = grow((void **)&r->offline, &r->cap_offline, r->n_offline + 1, sizeof(*r->offline));
	if (!ret)
		r->offline[r->n_offline++] = (struct rec_offline){cpu, false, from, to};
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/*
 * Index of the first element later than x in an array of n elements of elem_size bytes, each
 * beginning with its uint64_t time, sorted by time (events once sorted; switches, whose times
 * never decrease on one CPU).
 */
static size_t upper_bound(const void *a, size_t elem_size, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t t;

		memcpy(&t, (const char *)a + mid * elem_size, sizeof(t));
		if (t <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Time of the last kernel event (not a daemon pread) at or before t in l, 0 if none. */
static uint64_t last_event_at_or_before(struct rec_log *l, uint64_t t)
{
	size_t k;

	sort_log(l);
	k = upper_bound(l->ev, sizeof(*l->ev), l->n_ev, t);
	while (k > 0 && l->ev[k - 1].kind == AUDIT_EV_LOCKED_KERNEL)
		k--;
	return k ? l->ev[k - 1].time : 0;
}

/*
 * One event whose two readings bracket (lo, hi]: an instance in front of the daemon logged it
 * at or before lo, one behind it after hi, so the daemon's own reading of it, between the two,
 * may lie in the window.  The probe gap is the audit's resolution (README, "Leniency of a
 * probe gap"); under TCG a vCPU descheduled by the host between two probes of one event made
 * it longer than a whole barrier.  Same event: the behind instance's last event at or before
 * lo is then the previous one, which ended before the front instance saw this one begin.
 * Called when neither instance has an event in (lo, hi].  skip_locked: the behind instance's
 * event after hi must be a traced event, not one of the daemon's locked kernel entries.
 */
static bool bracket_match(struct recorder *r, int cpu, uint64_t lo, uint64_t hi, bool skip_locked)
{
	if (!r->daemon_after_ns)
		return false;
	for (int i = 0; i < r->n_inst; i++) {
		struct rec_instance *x = r->inst[i];
		uint64_t tx;

		if (x->attach_ns >= r->daemon_after_ns || x->attach_ns >= lo || x->cover_end <= hi)
			continue;
		tx = last_event_at_or_before(&x->cpu[cpu], lo);
		if (!tx)
			continue;
		for (int j = 0; j < r->n_inst; j++) {
			struct rec_instance *y = r->inst[j];
			struct rec_log *l = &y->cpu[cpu];
			size_t k;

			if (y->attach_ns < r->daemon_after_ns || y->attach_ns >= tx ||
			    y->cover_end <= hi)
				continue;
			if (last_event_at_or_before(l, lo) >= tx)
				continue;
			k = upper_bound(l->ev, sizeof(*l->ev), l->n_ev, hi);
			while (skip_locked && k < l->n_ev &&
			       l->ev[k].kind == AUDIT_EV_LOCKED_KERNEL)
				k++;
			if (k < l->n_ev)
				return true;
		}
	}
	return false;
}

static bool bracketed(struct recorder *r, int cpu, uint64_t lo, uint64_t hi)
{
	return bracket_match(r, cpu, lo, hi, false);
}

bool recorder_evidence(struct recorder *r, int cpu, uint64_t lo, uint64_t hi, bool daemon_reads,
		       char *why, size_t whylen)
{
	static const char *const kinds[] = {"?", "softirq", "timer", "switch", "daemon pread"};
	uint64_t before = 0, after = UINT64_MAX;
	unsigned bkind = 0, akind = 0;
	char state[64] = "unknown";

	/*
	 * Offline at an instant in (lo, hi]: some x with lo < x <= hi and from < x < to (an
	 * interval), or x somewhere in [from, to] (an instant the kernel reported).  Its user
	 * code before x was drained by the clear, its user code after x follows the set.
	 */
	for (size_t k = 0; k < r->n_offline; k++) {
		const struct rec_offline *o = &r->offline[k];

		if (o->cpu != cpu)
			continue;
		if (o->instant ? lo < o->from && o->to <= hi
			       : (lo > o->from ? lo : o->from) < (hi < o->to ? hi : o->to))
			return true;
	}
	for (int i = 0; i < r->n_inst; i++) {
		struct rec_instance *in = r->inst[i];
		struct rec_log *l = &in->cpu[cpu];
		size_t k, j;

		/*
		 * A serialising event strictly after lo, at or before hi; a daemon's pread must
		 * also have been entered after lo.
		 */
		sort_log(l);
		k = upper_bound(l->ev, sizeof(*l->ev), l->n_ev, lo);
		for (size_t m = k; m < l->n_ev && l->ev[m].time <= hi; m++)
			if (l->ev[m].since > lo &&
			    (daemon_reads || l->ev[m].kind != AUDIT_EV_LOCKED_KERNEL))
				return true;
		if (k > 0 && l->ev[k - 1].time > before) {
			before = l->ev[k - 1].time;
			bkind = l->ev[k - 1].kind;
		}
		while (k < l->n_ev && l->ev[k].time <= hi)
			k++; /* daemon preads entered before lo */
		if (k < l->n_ev && l->ev[k].time < after) {
			after = l->ev[k].time;
			akind = l->ev[k].kind;
		}

		/*
		 * In the idle task just after lo: the last switch at or before lo went to pid 0
		 * and the next one (or the end of this instance's coverage) is later than lo.
		 * An idle interval that starts inside (lo, hi] starts with a switch, an event,
		 * which the test above has already accepted.
		 */
		j = upper_bound(l->sw, sizeof(*l->sw), l->n_sw, lo);
		if (j > 0) {
			const struct rec_switch *s = &l->sw[j - 1];
			uint64_t end = j < l->n_sw ? l->sw[j].time : in->cover_end;

			if (s->next_pid == 0 && end > lo)
				return true;
			if (end > lo)
				snprintf(state, sizeof(state),
					 "running pid %u since %.3f us before lo", s->next_pid,
					 (double)(lo - s->time) / 1e3);
		} else if (l->offline_at_attach && l->offline_ns <= lo) {
			/* Offline since the attach: it runs nothing until its first switch. */
			uint64_t end = l->n_sw ? l->sw[0].time : in->cover_end;

			if (end > lo)
				return true;
		}
	}
	if (r->bracket_lenient && bracketed(r, cpu, lo, hi)) {
		r->bracketed++;
		return true;
	}
	if (why) {
		char b[64] = "none logged", a[64] = "none logged";

		if (before)
			snprintf(b, sizeof(b), "(%s) %.3f us before lo",
				 kinds[bkind < 5 ? bkind : 0], (double)(lo - before) / 1e3);
		if (after != UINT64_MAX)
			snprintf(a, sizeof(a), "(%s) %.3f us after hi",
				 kinds[akind < 5 ? akind : 0], (double)(after - hi) / 1e3);
		snprintf(why, whylen, "last event %s, next event %s, at lo the CPU was %s", b, a,
			 state);
	}
	return false;
}

/*
 * An event on cpu whose two readings bracket t: the last event an instance in front of the
 * daemon logged at or before t is one that an instance behind it logged only after t (its
 * last event at or before t is earlier: it has not seen that one yet).  The daemon's own
 * reading of that event lies between the two.  As bracketed() matches events, at a point.
 */
bool recorder_bracket_point(struct recorder *r, int cpu, uint64_t t)
{
	return bracket_match(r, cpu, t, t, true);
}

/* The nearest kernel events (not daemon preads) on cpu before lo and after hi, for `why`. */
static void describe_events(struct recorder *r, int cpu, uint64_t lo, uint64_t hi, char *why,
			    size_t whylen)
{
	static const char *const kinds[] = {"?", "softirq", "timer", "switch", "daemon pread"};
	uint64_t before = 0, after = UINT64_MAX;
	unsigned bkind = 0, akind = 0;
	char b[64] = "none logged", a[64] = "none logged";

	for (int i = 0; i < r->n_inst; i++) {
		struct rec_log *l = &r->inst[i]->cpu[cpu];
		size_t k;

		sort_log(l);
		k = upper_bound(l->ev, sizeof(*l->ev), l->n_ev, lo);
		for (size_t m = k; m-- > 0;)
			if (l->ev[m].kind != AUDIT_EV_LOCKED_KERNEL) {
				if (l->ev[m].time > before) {
					before = l->ev[m].time;
					bkind = l->ev[m].kind;
				}
				break;
			}
		k = upper_bound(l->ev, sizeof(*l->ev), l->n_ev, hi);
		for (; k < l->n_ev; k++)
			if (l->ev[k].kind != AUDIT_EV_LOCKED_KERNEL) {
				if (l->ev[k].time < after) {
					after = l->ev[k].time;
					akind = l->ev[k].kind;
				}
				break;
			}
	}
	if (before)
		snprintf(b, sizeof(b), "(%s) %.3f us before lo", kinds[bkind < 5 ? bkind : 0],
			 (double)(lo - before) / 1e3);
	if (after != UINT64_MAX)
		snprintf(a, sizeof(a), "(%s) %.3f us after hi", kinds[akind < 5 ? akind : 0],
			 (double)(after - hi) / 1e3);
	snprintf(why, whylen, "last event %s, next event %s", b, a);
}

/*
 * The probe gap the audit resolves: an instance behind the daemon logs an event at most this
 * long after the daemon's program read the clock for it.  On the host a gap has exceeded 10 us
 * (README, "Two instances"); under TCG a descheduled vCPU made one 117 us.
 */
#define REC_GAP_HOST_NS 20000ull
#define REC_GAP_GUEST_NS 1000000ull

/*
 * An event on cpu that an instance attached behind the daemon logged in (t, t + gap], and the
 * first it logged after t: the daemon's program reads the clock for an event before that
 * instance's probe does, so the daemon's reading t of it is followed, within a probe gap, by
 * the behind instance's.  It pins a stamp for which the instance in front gives no bracketing
 * pair (README, "Client-side credits").
 */
static bool behind_point(struct recorder *r, int cpu, uint64_t t)
{
	uint64_t gap = r->bracket_lenient ? REC_GAP_GUEST_NS : REC_GAP_HOST_NS;

	if (!r->daemon_after_ns)
		return false;
	for (int i = 0; i < r->n_inst; i++) {
		struct rec_instance *y = r->inst[i];
		struct rec_log *l = &y->cpu[cpu];
		size_t k;

		if (y->attach_ns < r->daemon_after_ns || y->attach_ns >= t || y->cover_end <= t)
			continue;
		sort_log(l);
		k = upper_bound(l->ev, sizeof(*l->ev), l->n_ev, t);
		while (k < l->n_ev && l->ev[k].kind == AUDIT_EV_LOCKED_KERNEL)
			k++;
		if (k < l->n_ev && l->ev[k].time - t <= gap)
			return true;
	}
	return false;
}

bool recorder_stamp_event(struct recorder *r, int cpu, uint64_t lo, uint64_t hi, uint64_t s_min,
			  uint64_t s_max, bool *pinned, char *why, size_t whylen)
{
	*pinned = false;
	for (int i = 0; i < r->n_inst; i++) {
		struct rec_log *l = &r->inst[i]->cpu[cpu];
		size_t k;

		sort_log(l);
		k = upper_bound(l->ev, sizeof(*l->ev), l->n_ev, lo);
		for (; k < l->n_ev && l->ev[k].time <= hi; k++)
			if (l->ev[k].kind != AUDIT_EV_LOCKED_KERNEL)
				return true;
	}
	if (recorder_bracket_point(r, cpu, s_min) &&
	    (s_max == s_min || recorder_bracket_point(r, cpu, s_max))) {
		*pinned = true;
		return true;
	}
	if (behind_point(r, cpu, s_min) && (s_max == s_min || behind_point(r, cpu, s_max))) {
		*pinned = true;
		r->behind_pinned++;
		return true;
	}
	if (r->bracket_lenient && bracketed(r, cpu, lo, hi)) {
		r->bracketed++;
		return true;
	}
	if (why)
		describe_events(r, cpu, lo, hi, why, whylen);
	return false;
}

/*
 * What instance `in` shows on cpu around `from`: the last switch at or before it and the next
 * one, for a violation's message.
 */
static void describe_switches(const struct rec_instance *in, int cpu, uint64_t from, char *why,
			      size_t whylen)
{
	const struct rec_log *l = &in->cpu[cpu];
	size_t j = upper_bound(l->sw, sizeof(*l->sw), l->n_sw, from);
	char b[96] = "no switch logged before it", a[96] = "no switch logged after it";

	if (j > 0)
		snprintf(b, sizeof(b), "the last switch %.3f us before it (pid %u -> %u)",
			 (double)(from - l->sw[j - 1].time) / 1e3, l->sw[j - 1].prev_pid,
			 l->sw[j - 1].next_pid);
	if (j < l->n_sw)
		snprintf(a, sizeof(a), "the next %.3f us after it (pid %u -> %u)",
			 (double)(l->sw[j].time - from) / 1e3, l->sw[j].prev_pid,
			 l->sw[j].next_pid);
	snprintf(why, whylen, "recorder %d: %s, %s", in->id, b, a);
}

/* The newest instance attached at or before t (the one most likely to describe it). */
static const struct rec_instance *instance_at(const struct recorder *r, uint64_t t)
{
	const struct rec_instance *best = NULL;

	for (int i = 0; i < r->n_inst; i++)
		if (r->inst[i]->attach_ns <= t &&
		    (!best || r->inst[i]->attach_ns > best->attach_ns))
			best = r->inst[i];
	return best ? best : r->n_inst ? r->inst[0] : NULL;
}

/* Why nothing was found: what the CPU ran around `from`, by the instance covering it. */
static void explain_switches(struct recorder *r, int cpu, uint64_t from, char *why, size_t whylen)
{
	const struct rec_instance *d;

	if (!why)
		return;
	d = instance_at(r, from);
	if (d)
		describe_switches(d, cpu, from, why, whylen);
	else
		snprintf(why, whylen, "no recorder");
}

bool recorder_idle_at(struct recorder *r, int cpu, uint64_t from, uint64_t hi, char *why,
		      size_t whylen)
{
	if (from > hi)
		goto no;
	/* Offline: as in recorder_evidence, but the instant must be at or after `from`. */
	for (size_t k = 0; k < r->n_offline; k++) {
		const struct rec_offline *o = &r->offline[k];

		if (o->cpu != cpu)
			continue;
		if (o->instant ? from <= o->from && o->to <= hi
			       : (from > o->from ? from : o->from) < (hi < o->to ? hi : o->to))
			return true;
	}
	for (int i = 0; i < r->n_inst; i++) {
		struct rec_instance *in = r->inst[i];
		struct rec_log *l = &in->cpu[cpu];
		size_t j = upper_bound(l->sw, sizeof(*l->sw), l->n_sw, from);

		/* Idle at `from` itself: the switch before it went to the idle task. */
		if (j > 0) {
			uint64_t end = j < l->n_sw ? l->sw[j].time : in->cover_end;

			if (l->sw[j - 1].next_pid == 0 && end > from)
				return true;
		} else if (l->offline_at_attach) {
			/* Offline from the attach to its first switch. */
			uint64_t start = l->offline_ns > from ? l->offline_ns : from;
			uint64_t end = l->n_sw ? l->sw[0].time : in->cover_end;

			if (start <= hi && end > start)
				return true;
		}
		/* Or an idle interval that begins in (from, hi]. */
		for (; j < l->n_sw && l->sw[j].time <= hi; j++)
			if (l->sw[j].next_pid == 0)
				return true;
	}
no:
	explain_switches(r, cpu, from, why, whylen);
	return false;
}

int recorder_thread_cpu(struct recorder *r, uint32_t tid, uint64_t t)
{
	for (int i = r->n_inst; i-- > 0;) {
		const struct rec_instance *in = r->inst[i];
		const struct rec_switch *first = NULL, *last = NULL;
		int fcpu = -1, lcpu = -1;

		if (in->attach_ns >= t || in->cover_end <= t)
			continue;
		for (int c = 0; c < r->ncpu; c++) {
			const struct rec_log *l = &in->cpu[c];
			size_t j = upper_bound(l->sw, sizeof(*l->sw), l->n_sw, t);

			for (size_t k = j; k < l->n_sw; k++)
				if (l->sw[k].prev_pid == tid || l->sw[k].next_pid == tid) {
					if (!first || l->sw[k].time < first->time) {
						first = &l->sw[k];
						fcpu = c;
					}
					break;
				}
			for (size_t k = j; k-- > 0;)
				if (l->sw[k].prev_pid == tid || l->sw[k].next_pid == tid) {
					if (!last || l->sw[k].time > last->time) {
						last = &l->sw[k];
						lcpu = c;
					}
					break;
				}
		}
		/*
		 * Its first switch after t takes it off a CPU: it was there at t, since it ran at
		 * t and could not have left another CPU without a (traced) switch away from it.
		 */
		if (first && first->prev_pid == tid)
			return fcpu;
		/* None after t: still where its last switch before t put it. */
		if (!first && last && last->next_pid == tid)
			return lcpu;
	}
	return -1;
}

bool recorder_thread_on(struct recorder *r, int cpu, uint32_t tid, uint64_t from, uint64_t hi,
			char *why, size_t whylen)
{
	if (from > hi || !tid)
		goto no;
	for (int i = 0; i < r->n_inst; i++) {
		struct rec_instance *in = r->inst[i];
		struct rec_log *l = &in->cpu[cpu];
		size_t j = upper_bound(l->sw, sizeof(*l->sw), l->n_sw, from);

		/*
		 * On it at `from`: switched in before and not out until after.  A switch away
		 * from the thread is always traced (the untraced ones leave the sandbox agent's
		 * threads), so the interval cannot be longer than the logs say.
		 */
		if (j > 0) {
			uint64_t end = j < l->n_sw ? l->sw[j].time : in->cover_end;

			if (l->sw[j - 1].next_pid == tid && end > from)
				return true;
		}
		/*
		 * Switched in or out in (from, hi]: it ran there at that instant.  A switch out
		 * counts even when its switch in was not logged (one from an untraced task).
		 */
		for (; j < l->n_sw && l->sw[j].time <= hi; j++)
			if (l->sw[j].next_pid == tid || l->sw[j].prev_pid == tid)
				return true;
	}
no:
	explain_switches(r, cpu, from, why, whylen);
	return false;
}
