// SPDX-License-Identifier: MIT
/*
 * What the barrierctl commands share: stop signals, opening the state file, snapshots of it,
 * the judgement of a snapshot (live, lagging, healthy), and the status table that status and
 * watch print.
 */
#include "barrierctl.h"
#include "bd_sync.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- signals ---- */

volatile sig_atomic_t bctl_stop_signal;

static void on_stop_signal(int sig)
{
	bctl_stop_signal = sig;
}

int bctl_catch_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a sleep must end at once so that the loop sees the flag. */
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL))
		return -errno;
	return 0;
}

/* ---- the state file ---- */

const char *bctl_state_path(const struct bctl_opts *o)
{
	const char *p = o->state;

	/* The same choice barrierd_open() makes for a NULL path, so that messages name it. */
	if (!p)
		p = secure_getenv(BARRIERD_STATE_ENV);
	if (!p || !*p)
		p = BARRIERD_DEFAULT_STATE_PATH;
	return p;
}

int bctl_open_flags(const struct bctl_opts *o, struct barrierd **b, unsigned flags)
{
	struct barrierd_open_opts oo = {
	    .sz = sizeof(oo),
	    .trusted_uid_set = o->trusted_uid_set,
	    .trusted_uid = o->trusted_uid,
	    .fallback = BARRIERD_FALLBACK_NONE, /* a diagnostic must not hide a dead daemon */
	    .flags = flags,
	};

	return barrierd_open_opts(b, o->state, &oo);
}

int bctl_open(const struct bctl_opts *o, struct barrierd **b)
{
	return bctl_open_flags(o, b, 0);
}

const char *bctl_open_error(int err)
{
	switch (-err) {
	case EPERM:
		return "untrusted: the file or a directory above it is not owned by root (or "
		       "--trusted-uid), is writable by others, or is a symbolic link";
	case EPROTO:
		return "not a usable barrierd ABI v1 state file (magic, version or sizes), or "
		       "/proc is missing";
	case ESTALE:
		return "it holds times later than this boot's clock (a file from an earlier boot)";
	case ENOENT:
		return "no such file (is barrierd running?)";
	default:
		return strerror(-err);
	}
}

/* ---- snapshots ---- */

/*
 * The extension area, when the flags announce one and its offset and size fit the mapping;
 * otherwise NULL.  barrierd_open() validated the file; re-check against our mapping anyway.
 */
static const struct barrierd_ext *ext_of(const struct barrierd_header *h, size_t size,
					 uint64_t ncpu, uint64_t flags)
{
	uint64_t xo = bd_load(&h->ext_offset);

	if ((flags & BARRIERD_FEAT_EXTENSION) && xo % 8 == 0 &&
	    xo >= sizeof(*h) + ncpu * sizeof(struct barrierd_cpu) && xo <= size &&
	    size - xo >= sizeof(struct barrierd_ext) + ncpu * sizeof(struct barrierd_ext_cpu))
		return (const void *)((const char *)h + xo);
	return NULL;
}

/* The number of CPUs, if the mapping holds that many entries; otherwise 0. */
static uint64_t ncpu_of(const struct barrierd_header *h, size_t size)
{
	uint64_t ncpu = bd_load(&h->ncpu);

	if (ncpu == 0 || ncpu > BARRIERD_MAX_CPUS ||
	    sizeof(*h) + ncpu * sizeof(struct barrierd_cpu) > size)
		return 0;
	return ncpu;
}

int bctl_snapshot_take(struct barrierd *b, const char *path, struct bctl_snapshot *s)
{
	const struct barrierd_header *h;
	const struct barrierd_ext *x;
	size_t size;

	memset(s, 0, sizeof(*s));
	s->path = path;
	h = barrierd_mapping(b, &size);
	/* Every shared word is read with one load (bd_load), as the daemon writes it. */
	s->ncpu = ncpu_of(h, size);
	if (s->ncpu == 0)
		return -EPROTO;
	s->flags = bd_load(&h->flags);
	x = ext_of(h, size, s->ncpu, s->flags);
	s->has_ext = x != NULL;
	/* Our daemons lay the extension out where barrierd_ext_offset() says: so are the flags. */
	s->has_cpu_flags = x && (s->flags & BARRIERD_FEAT_CPU_FLAGS) &&
			   bd_load(&h->ext_offset) == barrierd_ext_offset(s->ncpu) &&
			   barrierd_file_size(s->ncpu) <= size;
	s->cpu = calloc(s->ncpu, sizeof(*s->cpu));
	if (!s->cpu)
		return -ENOMEM;

	/*
	 * Per-CPU words before the global vtime: a per-CPU vtime never exceeds the vtime
	 * published before it, and vtime only grows, so the vtime lags come out non-negative.
	 */
	for (uint64_t c = 0; c < s->ncpu; c++) {
		struct bctl_cpu *pc = &s->cpu[c];

		pc->ns = bd_load(&h->per_cpu[c].last_interrupt_ns);
		if (pc->ns > s->freshest_ns)
			s->freshest_ns = pc->ns;
		pc->vtime = bd_load(&h->per_cpu[c].last_interrupt_vtime);
		if (x) {
			pc->state = bd_load(&x->cpu[c].state);
			pc->credit_event = bd_load(&x->cpu[c].credit_event);
			pc->credit_idle = bd_load(&x->cpu[c].credit_idle);
			pc->credit_offline = bd_load(&x->cpu[c].credit_offline);
		}
		if (s->has_cpu_flags)
			pc->flags = bd_load((const uint64_t *)((const uint8_t *)h +
							       barrierd_cpu_flags_offset(s->ncpu)) +
					    c);
	}
	s->vtime = bd_load(&h->vtime);
	s->last_ns = bd_load(&h->last_interrupt_ns);
	s->last_vtime = bd_load(&h->last_interrupt_vtime);
	s->abi_major = bd_load32(&h->abi_major);
	s->abi_minor = bd_load32(&h->abi_minor);
	s->generation = bd_load(&h->generation);
	s->heartbeat_ns = bd_load(&h->heartbeat_ns);
	s->heartbeat_period_ns = bd_load(&h->heartbeat_period_ns);
	s->daemon_pid = bd_load(&h->daemon_pid);
	for (int i = 0; i < 16; i++)
		s->boot_id[i] = bd_load8(&h->boot_id[i]);
	if (x) {
		s->last_advance_ns = bd_load(&x->last_advance_ns);
		s->last_advance_cause = bd_load(&x->last_advance_cause);
		s->passes = bd_load(&x->passes);
		s->credit_passes = bd_load(&x->credit_passes);
		s->doorbell_rings = bd_load(&x->doorbell_rings);
		if (bd_load(&h->flags) & BARRIERD_FEAT_SERVED)
			s->served_ns = bd_load(&x->served_ns);
		s->nudges = bd_load(&x->nudges);
	}
	/*
	 * The clock last, fenced (MFENCE; LFENCE), and converted out of a time namespace like
	 * every client stamp (DESIGN rule 5): no age below can come out negative, and ages are
	 * on the daemon's clock.
	 */
	s->now_ns = barrierd_stamp_ns(b);
	return 0;
}

void bctl_snapshot_free(struct bctl_snapshot *s)
{
	free(s->cpu);
	s->cpu = NULL;
}

/*
 * Ask a live daemon for a pass and wait (briefly, bounded) until one lands, so that the
 * values shown are as fresh as the CPUs' latest evidence, not as old as the last heartbeat.
 */
static void fresh_view(struct barrierd *b)
{
	size_t size;
	const struct barrierd_header *h = barrierd_mapping(b, &size);
	uint64_t ncpu = ncpu_of(h, size);
	const struct barrierd_ext *x;
	uint64_t before;

	if (!barrierd_live(b) || ncpu == 0)
		return;
	x = ext_of(h, size, ncpu, bd_load(&h->flags));
	if (!x)
		return;
	before = bd_load(&x->passes);
	if (barrierd_request(b))
		return;
	for (int i = 0; i < 100; i++) { /* 100 ms at most */
		struct timespec ts = {0, 1000000};

		if (bd_load(&x->passes) != before)
			return;
		nanosleep(&ts, NULL);
	}
}

int bctl_snapshot_fresh(const struct bctl_opts *o, const char *cmd, struct bctl_snapshot *s,
			char *why, size_t whylen)
{
	const char *path = bctl_state_path(o);
	struct barrierd *b;
	char msg[PATH_MAX + 256];
	/* Only reads: the slots (and the socket round trip that fetches them) are not needed. */
	int ret = bctl_open_flags(o, &b, BARRIERD_OPEN_NO_DIRECT);

	if (ret) {
		snprintf(msg, sizeof(msg), "cannot use %s: %s", path, bctl_open_error(ret));
	} else {
		fresh_view(b);
		ret = bctl_snapshot_take(b, path, s);
		barrierd_close(b);
		if (!ret)
			return 0;
		snprintf(msg, sizeof(msg), "cannot read %s: %s", path, strerror(-ret));
		bctl_snapshot_free(s);
	}
	fprintf(stderr, "barrierctl: %s: %s\n", cmd, msg);
	if (why)
		snprintf(why, whylen, "%s", msg);
	return ret;
}

/* ---- judging a snapshot ---- */

uint64_t bctl_effective_period(const struct bctl_snapshot *s)
{
	uint64_t p = s->heartbeat_period_ns;

	return p == 0 || p > BARRIERD_MAX_HEARTBEAT_PERIOD_NS ? BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS
							      : p;
}

enum bctl_health bctl_daemon_health(const struct bctl_snapshot *s)
{
	if (!(s->flags & BARRIERD_FLAG_RUNNING) || (s->flags & BARRIERD_FLAG_STOPPED))
		return BCTL_STOPPED;
	/* The library's rule exactly: live while now <= heartbeat + 3 periods. */
	if (s->now_ns > s->heartbeat_ns + BARRIERD_LIVENESS_PERIODS * bctl_effective_period(s))
		return BCTL_STALE;
	return BCTL_HEALTHY;
}

uint64_t bctl_behind_ns(const struct bctl_snapshot *s, uint64_t cpu)
{
	return s->freshest_ns > s->cpu[cpu].ns ? s->freshest_ns - s->cpu[cpu].ns : 0;
}

uint64_t bctl_vtime_lag(const struct bctl_snapshot *s, uint64_t cpu)
{
	return s->vtime > s->cpu[cpu].vtime ? s->vtime - s->cpu[cpu].vtime : 0;
}

bool bctl_cpu_lagging(const struct bctl_snapshot *s, uint64_t cpu, uint64_t threshold_ns)
{
	uint64_t st = s->cpu[cpu].state;

	/*
	 * Idle and offline CPUs run no user code: they are credited when a waiter rings, so an
	 * old value there is no fault.  The daemon's own CPU is credited on request as well.
	 * Busy and unknown CPUs (and states this version does not know) must bring evidence.
	 */
	if (st == BARRIERD_CPU_IDLE || st == BARRIERD_CPU_OFFLINE || st == BARRIERD_CPU_DAEMON)
		return false;
	/*
	 * The lag is now - value.  A daemon that nobody waits on folds busy CPUs only at its
	 * heartbeat, so status and watch first ask it for a fresh pass (fresh_view()); after it,
	 * a busy CPU's value is its latest event, a tick or less old, unless it brings no
	 * evidence at all (a nohz_full CPU running user code), which is what lagging means.
	 */
	return s->now_ns > s->cpu[cpu].ns && s->now_ns - s->cpu[cpu].ns > threshold_ns;
}

uint64_t bctl_lagging_count(const struct bctl_snapshot *s, uint64_t threshold_ns)
{
	uint64_t n = 0;

	for (uint64_t c = 0; c < s->ncpu; c++)
		n += bctl_cpu_lagging(s, c, threshold_ns);
	return n;
}

enum bctl_health bctl_health(const struct bctl_snapshot *s, uint64_t threshold_ns)
{
	enum bctl_health d = bctl_daemon_health(s);

	/* Without a daemon every value ages: that is the problem to report, not the lags. */
	if (d != BCTL_HEALTHY)
		return d;
	return bctl_lagging_count(s, threshold_ns) ? BCTL_DEGRADED : BCTL_HEALTHY;
}

int bctl_health_exit_code(enum bctl_health h)
{
	switch (h) {
	case BCTL_HEALTHY:
		return BCTL_EXIT_OK;
	case BCTL_DEGRADED:
		return BCTL_EXIT_DEGRADED;
	default:
		return BCTL_EXIT_NOT_RUNNING;
	}
}

/* ---- names and formats ---- */

const char *bctl_health_name(enum bctl_health h)
{
	static const char *const names[] = {"healthy", "degraded", "stopped", "stale"};

	return names[h];
}

const char *bctl_state_name(uint64_t state)
{
	switch (state) {
	case BARRIERD_CPU_BUSY:
		return "busy";
	case BARRIERD_CPU_IDLE:
		return "idle";
	case BARRIERD_CPU_OFFLINE:
		return "offline";
	case BARRIERD_CPU_DAEMON:
		return "daemon";
	default:
		return "unknown";
	}
}

void bctl_format_boot_id(const uint8_t id[16], char out[37])
{
	char *p = out;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		p += sprintf(p, "%02x", id[i]);
	}
	*p = 0;
}

/* "by ... CPU n" in the table. */
static const char *cause_phrase(uint64_t cause)
{
	switch (BARRIERD_CAUSE_KIND(cause)) {
	case BARRIERD_CAUSE_EVENT:
		return "an event on";
	case BARRIERD_CAUSE_IDLE:
		return "idle credit of";
	case BARRIERD_CAUSE_OFFLINE:
		return "offline credit of";
	default:
		return "an unknown cause, on";
	}
}

void bctl_render_text(FILE *f, const struct bctl_snapshot *s, uint64_t threshold_ns)
{
	enum bctl_health dh = bctl_daemon_health(s), h = bctl_health(s, threshold_ns);
	uint64_t period = bctl_effective_period(s), lagging = bctl_lagging_count(s, threshold_ns);
	char boot[37];

	fprintf(f, "barrierd %s: %s", s->path, bctl_health_name(h));
	if (h == BCTL_DEGRADED)
		fprintf(f, ", %llu CPU%s lagging more than %.0f ms", (unsigned long long)lagging,
			lagging == 1 ? "" : "s", bctl_ms(threshold_ns));
	fputc('\n', f);

	fprintf(f, "daemon:       ");
	if (dh == BCTL_STOPPED)
		fprintf(f, "not running (%s)",
			s->flags & BARRIERD_FLAG_STOPPED ? "stopped flag set"
							 : "running flag clear");
	else if (dh == BCTL_STALE)
		fprintf(f,
			"not running (running flag set, but no heartbeat for more than %d periods)",
			BARRIERD_LIVENESS_PERIODS);
	else
		fprintf(f, "running");
	fprintf(f, ", pid %llu, generation %llu, heartbeat %.3f ms ago (period %.0f ms)\n",
		(unsigned long long)s->daemon_pid, (unsigned long long)s->generation,
		bctl_ms(bctl_age(s, s->heartbeat_ns)), bctl_ms(period));
	if (dh == BCTL_HEALTHY && s->served_ns)
		fprintf(f,
			"served:       up to %.3f ms ago (a wait stamped before then is served "
			"without a ring; a later one rings)\n",
			bctl_ms(bctl_age(s, s->served_ns)));
	else if (dh == BCTL_HEALTHY)
		fprintf(f, "served:       nothing yet (every wait rings; busy CPUs are folded at "
			   "heartbeats until one does)\n");

	bctl_format_boot_id(s->boot_id, boot);
	fprintf(f, "file:         ABI %u.%u, %llu CPUs, flags 0x%llx, boot id %s\n", s->abi_major,
		s->abi_minor, (unsigned long long)s->ncpu, (unsigned long long)s->flags, boot);
	fprintf(f, "global:       last_interrupt %.3f ms ago (vtime %llu), vtime %llu\n",
		bctl_ms(bctl_age(s, s->last_ns)), (unsigned long long)s->last_vtime,
		(unsigned long long)s->vtime);
	if (!s->has_ext)
		fprintf(f, "last advance: unknown (the file has no extension area)\n");
	else if (s->last_advance_ns == 0)
		fprintf(f, "last advance: never\n");
	else
		fprintf(f, "last advance: %.3f ms ago, by %s CPU %u\n",
			bctl_ms(bctl_age(s, s->last_advance_ns)),
			cause_phrase(s->last_advance_cause),
			BARRIERD_CAUSE_CPU(s->last_advance_cause));
	if (s->has_ext)
		fprintf(
		    f,
		    "passes:       %llu (%llu credit passes), %llu doorbell rings, %llu nudges\n",
		    (unsigned long long)s->passes, (unsigned long long)s->credit_passes,
		    (unsigned long long)s->doorbell_rings, (unsigned long long)s->nudges);

	fprintf(f, "\n%5s  %-8s %12s %12s %10s %10s %10s %10s\n", "CPU", "STATE", "LAG_MS",
		"BEHIND_MS", "VTIME_LAG", "EVENT", "IDLE", "OFFLINE");
	for (uint64_t c = 0; c < s->ncpu; c++) {
		const struct bctl_cpu *pc = &s->cpu[c];

		fprintf(f, "%5llu  %-8s %12.3f %12.3f %10llu ", (unsigned long long)c,
			bctl_state_name(pc->state), bctl_ms(bctl_age(s, pc->ns)),
			bctl_ms(bctl_behind_ns(s, c)), (unsigned long long)bctl_vtime_lag(s, c));
		if (s->has_ext)
			fprintf(f, "%10llu %10llu %10llu", (unsigned long long)pc->credit_event,
				(unsigned long long)pc->credit_idle,
				(unsigned long long)pc->credit_offline);
		else
			fprintf(f, "%10s %10s %10s", "-", "-", "-");
		fprintf(f, "%s%s%s\n", bctl_cpu_lagging(s, c, threshold_ns) ? "  LAGGING" : "",
			pc->flags & BARRIERD_CPUF_NOHZ_FULL ? "  nohz_full" : "",
			pc->flags & BARRIERD_CPUF_ISOLATED ? "  isolated" : "");
	}
}
