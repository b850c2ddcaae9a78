// SPDX-License-Identifier: MIT
/*
 * barrierctl status and watch: a snapshot of the state file, judged and rendered as a table
 * or as JSON.
 */
#include "barrierctl.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/*
 * Every shared word is read with one atomic load, as the daemon writes it with one store.
 * The asm hides the pointer's provenance: GCC 12 misjudges atomics on flexible array members
 * as out-of-bounds accesses.
 */
static inline uint64_t ld64(const uint64_t *p)
{
	__asm__("" : "+r"(p));
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

int bctl_snapshot_take(struct barrierd *b, const char *path, struct bctl_snapshot *s)
{
	const struct barrierd_header *h;
	const struct barrierd_ext *x = NULL;
	size_t size;
	uint64_t xo;

	memset(s, 0, sizeof(*s));
	s->path = path;
	h = barrierd_mapping(b, &size);
	/* barrierd_open() validated these; re-check against our mapping, never trust twice. */
	s->ncpu = ld64(&h->ncpu);
	if (s->ncpu == 0 || s->ncpu > BARRIERD_MAX_CPUS ||
		sizeof(*h) + s->ncpu * sizeof(struct barrierd_cpu) > size)
		return -EPROTO;
	s->flags = ld64(&h->flags);
	xo = ld64(&h->ext_offset);
	if ((s->flags & BARRIERD_FEAT_EXTENSION) && xo % 8 == 0 &&
		xo >= sizeof(*h) + s->ncpu * sizeof(struct barrierd_cpu) && xo <= size &&
		size - xo >= sizeof(*x) + s->ncpu * sizeof(struct barrierd_ext_cpu))
		x = (const void *)((const char *)h + xo);
	s->has_ext = x != NULL;
	s->cpu = calloc(s->ncpu, sizeof(*s->cpu));
	if (!s->cpu)
		return -ENOMEM;

	/*
	 * Per-CPU words before the global vtime: a per-CPU vtime never exceeds the vtime
	 * published before it, and vtime only grows, so the vtime lags come out non-negative.
	 */
	for (uint64_t c = 0; c < s->ncpu; c++) {
		struct bctl_cpu *pc = &s->cpu[c];

		pc->ns = ld64(&h->per_cpu[c].last_interrupt_ns);
		if (pc->ns > s->freshest_ns)
			s->freshest_ns = pc->ns;
		pc->vtime = ld64(&h->per_cpu[c].last_interrupt_vtime);
		if (x) {
			pc->state = ld64(&x->cpu[c].state);
			pc->credit_event = ld64(&x->cpu[c].credit_event);
			pc->credit_idle = ld64(&x->cpu[c].credit_idle);
			pc->credit_offline = ld64(&x->cpu[c].credit_offline);
		}
	}
	s->vtime = ld64(&h->vtime);
	s->last_ns = ld64(&h->last_interrupt_ns);
	s->last_vtime = ld64(&h->last_interrupt_vtime);
	s->abi_major = __atomic_load_n(&h->abi_major, __ATOMIC_RELAXED);
	s->abi_minor = __atomic_load_n(&h->abi_minor, __ATOMIC_RELAXED);
	s->generation = ld64(&h->generation);
	s->heartbeat_ns = ld64(&h->heartbeat_ns);
	s->heartbeat_period_ns = ld64(&h->heartbeat_period_ns);
	s->daemon_pid = ld64(&h->daemon_pid);
	for (int i = 0; i < 16; i++)
		s->boot_id[i] = __atomic_load_n(&h->boot_id[i], __ATOMIC_RELAXED);
	if (x) {
		s->last_advance_ns = ld64(&x->last_advance_ns);
		s->last_advance_cause = ld64(&x->last_advance_cause);
		s->passes = ld64(&x->passes);
		s->credit_passes = ld64(&x->credit_passes);
		s->doorbell_rings = ld64(&x->doorbell_rings);
	}
	/*
	 * The clock last, fenced (MFENCE; LFENCE), and converted out of a time namespace like
	 * every client stamp: no age below can come out negative, and ages are on the
	 * daemon's clock.
	 */
	s->now_ns = barrierd_stamp_ns(b);
	return 0;
}

void bctl_snapshot_free(struct bctl_snapshot *s)
{
	free(s->cpu);
	s->cpu = NULL;
}

static uint64_t age(const struct bctl_snapshot *s, uint64_t t)
{
	return s->now_ns > t ? s->now_ns - t : 0;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

uint64_t bctl_effective_period(const struct bctl_snapshot *s)
{
	uint64_t p = s->heartbeat_period_ns;

	return p == 0 || p > BARRIERD_MAX_HEARTBEAT_PERIOD_NS ? BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS : p;
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

static uint64_t lagging_count(const struct bctl_snapshot *s, uint64_t threshold_ns)
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
	return lagging_count(s, threshold_ns) ? BCTL_DEGRADED : BCTL_HEALTHY;
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

static const char *health_name(enum bctl_health h)
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

static const char *cause_name(uint64_t cause)
{
	switch (BARRIERD_CAUSE_KIND(cause)) {
	case BARRIERD_CAUSE_NONE:
		return "none";
	case BARRIERD_CAUSE_EVENT:
		return "event";
	case BARRIERD_CAUSE_IDLE:
		return "idle";
	case BARRIERD_CAUSE_OFFLINE:
		return "offline";
	default:
		return "unknown";
	}
}

/* "by ... CPU n" in the text form. */
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

static void format_boot_id(const uint8_t id[16], char out[37])
{
	char *p = out;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		p += sprintf(p, "%02x", id[i]);
	}
	*p = 0;
}

/* ---- text ---- */

void bctl_render_text(FILE *f, const struct bctl_snapshot *s, uint64_t threshold_ns)
{
	enum bctl_health dh = bctl_daemon_health(s), h = bctl_health(s, threshold_ns);
	uint64_t period = bctl_effective_period(s), lagging = lagging_count(s, threshold_ns);
	char boot[37];

	fprintf(f, "barrierd %s: %s", s->path, health_name(h));
	if (h == BCTL_DEGRADED)
		fprintf(f, ", %llu CPU%s lagging more than %.0f ms", (unsigned long long)lagging,
			lagging == 1 ? "" : "s", ms(threshold_ns));
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
		ms(age(s, s->heartbeat_ns)), ms(period));
	if (dh == BCTL_HEALTHY)
		fprintf(f, "armed:        %s\n",
			s->flags & BARRIERD_FLAG_ARMED
				? "yes (busy CPUs' events reach the daemon as they come)"
				: "no (busy CPUs are folded at heartbeats until a waiter rings)");

	format_boot_id(s->boot_id, boot);
	fprintf(f, "file:         ABI %u.%u, %llu CPUs, flags 0x%llx, boot id %s\n", s->abi_major,
		s->abi_minor, (unsigned long long)s->ncpu, (unsigned long long)s->flags, boot);
	fprintf(f, "global:       last_interrupt %.3f ms ago (vtime %llu), vtime %llu\n",
		ms(age(s, s->last_ns)), (unsigned long long)s->last_vtime,
		(unsigned long long)s->vtime);
	if (!s->has_ext)
		fprintf(f, "last advance: unknown (the file has no extension area)\n");
	else if (s->last_advance_ns == 0)
		fprintf(f, "last advance: never\n");
	else
		fprintf(f, "last advance: %.3f ms ago, by %s CPU %u\n",
			ms(age(s, s->last_advance_ns)), cause_phrase(s->last_advance_cause),
			BARRIERD_CAUSE_CPU(s->last_advance_cause));
	if (s->has_ext)
		fprintf(f, "passes:       %llu (%llu credit passes), %llu doorbell rings\n",
			(unsigned long long)s->passes, (unsigned long long)s->credit_passes,
			(unsigned long long)s->doorbell_rings);

	fprintf(f, "\n%5s  %-8s %12s %12s %10s %10s %10s %10s\n", "CPU", "STATE", "LAG_MS",
		"BEHIND_MS", "VTIME_LAG", "EVENT", "IDLE", "OFFLINE");
	for (uint64_t c = 0; c < s->ncpu; c++) {
		const struct bctl_cpu *pc = &s->cpu[c];

		fprintf(f, "%5llu  %-8s %12.3f %12.3f %10llu ", (unsigned long long)c,
			bctl_state_name(pc->state), ms(age(s, pc->ns)), ms(bctl_behind_ns(s, c)),
			(unsigned long long)(s->vtime > pc->vtime ? s->vtime - pc->vtime : 0));
		if (s->has_ext)
			fprintf(f, "%10llu %10llu %10llu", (unsigned long long)pc->credit_event,
				(unsigned long long)pc->credit_idle,
				(unsigned long long)pc->credit_offline);
		else
			fprintf(f, "%10s %10s %10s", "-", "-", "-");
		fprintf(f, "%s\n", bctl_cpu_lagging(s, c, threshold_ns) ? "  LAGGING" : "");
	}
}

/* ---- JSON ---- */

static void json_string(FILE *f, const char *str)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static const char *jbool(bool b)
{
	return b ? "true" : "false";
}

void bctl_render_json(FILE *f, const struct bctl_snapshot *s, uint64_t threshold_ns)
{
	enum bctl_health h = bctl_health(s, threshold_ns);
	char boot[37];

	fprintf(f, "{\n  \"path\": ");
	json_string(f, s->path);
	fprintf(f, ",\n  \"health\": \"%s\",\n  \"exit_code\": %d,\n", health_name(h),
		bctl_health_exit_code(h));
	fprintf(f, "  \"now_ns\": %llu,\n  \"lag_threshold_ms\": %.3f,\n",
		(unsigned long long)s->now_ns, ms(threshold_ns));
	fprintf(f, "  \"abi_major\": %u,\n  \"abi_minor\": %u,\n  \"ncpu\": %llu,\n", s->abi_major,
		s->abi_minor, (unsigned long long)s->ncpu);
	fprintf(f, "  \"vtime\": %llu,\n  \"last_interrupt_ns\": %llu,\n",
		(unsigned long long)s->vtime, (unsigned long long)s->last_ns);
	fprintf(f, "  \"last_interrupt_age_ms\": %.3f,\n  \"last_interrupt_vtime\": %llu,\n",
		ms(age(s, s->last_ns)), (unsigned long long)s->last_vtime);
	format_boot_id(s->boot_id, boot);
	fprintf(f, "  \"flags\": %llu,\n  \"boot_id\": \"%s\",\n", (unsigned long long)s->flags,
		boot);

	fprintf(f,
		"  \"daemon\": {\n    \"live\": %s,\n    \"running\": %s,\n    \"stopped\": %s,\n",
		jbool(bctl_daemon_health(s) == BCTL_HEALTHY),
		jbool(s->flags & BARRIERD_FLAG_RUNNING), jbool(s->flags & BARRIERD_FLAG_STOPPED));
	fprintf(f, "    \"armed\": %s,\n", jbool(s->flags & BARRIERD_FLAG_ARMED));
	fprintf(f, "    \"pid\": %llu,\n    \"generation\": %llu,\n    \"heartbeat_ns\": %llu,\n",
		(unsigned long long)s->daemon_pid, (unsigned long long)s->generation,
		(unsigned long long)s->heartbeat_ns);
	fprintf(f, "    \"heartbeat_age_ms\": %.3f,\n    \"heartbeat_period_ms\": %.3f\n  },\n",
		ms(age(s, s->heartbeat_ns)), ms(bctl_effective_period(s)));

	if (s->has_ext && s->last_advance_ns) {
		fprintf(f,
			"  \"last_advance\": {\n    \"ns\": %llu,\n    \"age_ms\": %.3f,\n"
			"    \"cause\": \"%s\",\n    \"cpu\": %u\n  },\n",
			(unsigned long long)s->last_advance_ns, ms(age(s, s->last_advance_ns)),
			cause_name(s->last_advance_cause),
			BARRIERD_CAUSE_CPU(s->last_advance_cause));
	} else {
		fprintf(f, "  \"last_advance\": null,\n");
	}
	if (s->has_ext)
		fprintf(f,
			"  \"passes\": %llu,\n  \"credit_passes\": %llu,\n  \"doorbell_rings\": "
			"%llu,\n",
			(unsigned long long)s->passes, (unsigned long long)s->credit_passes,
			(unsigned long long)s->doorbell_rings);
	else
		fprintf(f, "  \"passes\": null,\n  \"credit_passes\": null,\n  \"doorbell_rings\": "
			   "null,\n");
	fprintf(f, "  \"lagging_cpus\": %llu,\n  \"cpus\": [",
		(unsigned long long)lagging_count(s, threshold_ns));
	for (uint64_t c = 0; c < s->ncpu; c++) {
		const struct bctl_cpu *pc = &s->cpu[c];

		fprintf(f, "%s\n    {\"cpu\": %llu, \"state\": \"%s\", \"lagging\": %s, ",
			c ? "," : "", (unsigned long long)c, bctl_state_name(pc->state),
			jbool(bctl_cpu_lagging(s, c, threshold_ns)));
		fprintf(f, "\"last_interrupt_ns\": %llu, \"lag_ms\": %.3f, ",
			(unsigned long long)pc->ns, ms(age(s, pc->ns)));
		fprintf(f, "\"behind_ms\": %.3f, ", ms(bctl_behind_ns(s, c)));
		fprintf(f, "\"last_interrupt_vtime\": %llu, \"vtime_lag\": %llu, ",
			(unsigned long long)pc->vtime,
			(unsigned long long)(s->vtime > pc->vtime ? s->vtime - pc->vtime : 0));
		if (s->has_ext)
			fprintf(f,
				"\"credit_event\": %llu, \"credit_idle\": %llu, "
				"\"credit_offline\": %llu}",
				(unsigned long long)pc->credit_event,
				(unsigned long long)pc->credit_idle,
				(unsigned long long)pc->credit_offline);
		else
			fprintf(f, "\"credit_event\": null, \"credit_idle\": null, "
				   "\"credit_offline\": null}");
	}
	fprintf(f, "\n  ]\n}\n");
}

/* ---- commands ---- */

/*
 * Ask a live daemon for a pass and wait (briefly, bounded) until one lands, so that the
 * values shown are as fresh as the CPUs' latest evidence, not as old as the last heartbeat.
 */
static void fresh_view(struct barrierd *b)
{
	size_t sz;
	const struct barrierd_header *h = barrierd_mapping(b, &sz);
	const struct barrierd_ext *x;
	uint64_t before;

	if (!barrierd_live(b) || !(h->flags & BARRIERD_FEAT_EXTENSION))
		return;
	x = (const void *)((const char *)h + h->ext_offset);
	before = __atomic_load_n(&x->passes, __ATOMIC_ACQUIRE);
	if (barrierd_request(b))
		return;
	for (int i = 0; i < 100; i++) { /* 100 ms at most */
		struct timespec ts = {0, 1000000};

		if (__atomic_load_n(&x->passes, __ATOMIC_ACQUIRE) != before)
			return;
		nanosleep(&ts, NULL);
	}
}

/* Open and snapshot once, closing the file again: 0 with *s to free, or -errno (reported). */
static int take(const struct bctl_opts *o, struct bctl_snapshot *s, const char *cmd)
{
	const char *path = bctl_state_path(o);
	struct barrierd *b;
	int ret = bctl_open(o, &b);

	if (ret) {
		fprintf(stderr, "barrierctl: %s: cannot use %s: %s\n", cmd, path,
			bctl_open_error(ret));
		return ret;
	}
	fresh_view(b);
	ret = bctl_snapshot_take(b, path, s);
	barrierd_close(b);
	if (ret) {
		fprintf(stderr, "barrierctl: %s: cannot read %s: %s\n", cmd, path, strerror(-ret));
		bctl_snapshot_free(s);
	}
	return ret;
}

int bctl_cmd_status(const struct bctl_opts *o)
{
	struct bctl_snapshot s;
	int code;

	if (take(o, &s, "status"))
		return BCTL_EXIT_UNUSABLE;
	if (o->json)
		bctl_render_json(stdout, &s, o->lag_threshold_ns);
	else
		bctl_render_text(stdout, &s, o->lag_threshold_ns);
	code = bctl_health_exit_code(bctl_health(&s, o->lag_threshold_ns));
	bctl_snapshot_free(&s);
	if (fflush(stdout)) {
		fprintf(stderr, "barrierctl: status: cannot write the output: %s\n",
			strerror(errno));
		return BCTL_EXIT_FAILED;
	}
	return code;
}

/*
 * On a terminal, redraw in place: cursor home, each line followed by "erase to end of line",
 * then "erase below", so a shorter table leaves no debris and nothing flickers.
 */
static void draw_in_place(const char *text, bool first)
{
	fputs(first ? "\033[H\033[2J" : "\033[H", stdout);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		fwrite(p, 1, len, stdout);
		fputs("\033[K\n", stdout);
		p += len + (nl ? 1 : 0);
	}
	fputs("\033[J", stdout);
}

int bctl_cmd_watch(const struct bctl_opts *o)
{
	bool tty = isatty(STDOUT_FILENO);
	sigset_t block, during_sleep;
	int code = BCTL_EXIT_OK;
	struct timespec ts = {
		.tv_sec = (time_t)(o->interval_ns / BCTL_SEC),
		.tv_nsec = (long)(o->interval_ns % BCTL_SEC),
	};

	/*
	 * SIGINT/SIGTERM stay blocked except inside ppoll(), which unblocks them atomically with
	 * going to sleep: a signal that arrives while a table is drawn ends the very next sleep
	 * instead of being lost between a check of the flag and the sleep.
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &block, &during_sleep) || bctl_catch_stop_signals()) {
		fprintf(stderr, "barrierctl: watch: cannot set up signal handling: %s\n",
			strerror(errno));
		return BCTL_EXIT_FAILED;
	}
	sigdelset(&during_sleep, SIGINT);
	sigdelset(&during_sleep, SIGTERM);

	for (uint64_t i = 0; !bctl_stop_signal; i++) {
		struct bctl_snapshot s;
		char *text = NULL;
		size_t len = 0;
		FILE *mem;

		/*
		 * Reopen at each refresh: the checks run again, and a file replaced by a new one
		 * is followed.  Only a file that is unusable from the start ends the watch.
		 */
		if (take(o, &s, "watch")) {
			if (i == 0)
				return BCTL_EXIT_UNUSABLE;
			code = BCTL_EXIT_UNUSABLE;
		} else {
			mem = open_memstream(&text, &len);
			if (!mem) {
				bctl_snapshot_free(&s);
				fprintf(stderr, "barrierctl: watch: %s\n", strerror(errno));
				return BCTL_EXIT_FAILED;
			}
			if (tty)
				fprintf(mem, "barrierctl watch: every %.0f ms, refresh %llu\n\n",
					(double)o->interval_ns / 1e6, (unsigned long long)i + 1);
			bctl_render_text(mem, &s, o->lag_threshold_ns);
			fclose(mem);
			code = bctl_health_exit_code(bctl_health(&s, o->lag_threshold_ns));
			bctl_snapshot_free(&s);
			if (tty) {
				draw_in_place(text, i == 0);
			} else {
				if (i > 0)
					fputc('\n', stdout);
				fputs(text, stdout);
			}
			free(text);
			if (fflush(stdout))
				return BCTL_EXIT_FAILED; /* the reader went away */
		}
		if (o->count && i + 1 >= o->count)
			break;
		if (ppoll(NULL, 0, &ts, &during_sleep) < 0 && errno != EINTR) {
			fprintf(stderr, "barrierctl: watch: ppoll: %s\n", strerror(errno));
			return BCTL_EXIT_FAILED;
		}
	}
	return code;
}
