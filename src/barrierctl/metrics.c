// SPDX-License-Identifier: MIT
/*
 * barrierctl metrics: the state file's counters and gauges in the OpenMetrics text format,
 * for Prometheus (node_exporter's textfile collector, through systemd/barrierd-metrics.*).
 * It reads the file as status does (one fresh snapshot, common.c), adds the daemon's CPU time
 * from /proc/PID/stat, and prints barrierd_up 0 alone when no daemon publishes.  With
 * --output the text goes to a temporary file beside FILE, renamed over it once complete, so
 * that a scrape never reads half of it.
 */
#include "barrierctl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* The family's metadata: TYPE, UNIT when it has one (its name's suffix), HELP. */
static void family(FILE *f, const char *name, const char *type, const char *unit, const char *help)
{
	fprintf(f, "# TYPE %s %s\n", name, type);
	if (unit)
		fprintf(f, "# UNIT %s %s\n", name, unit);
	fprintf(f, "# HELP %s %s\n", name, help);
}

static void gauge(FILE *f, const char *name, const char *unit, const char *help, double v)
{
	family(f, name, "gauge", unit, help);
	fprintf(f, "%s %.9g\n", name, v);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	family(f, name, "counter", NULL, help);
	fprintf(f, "%s_total %llu\n", name, (unsigned long long)v);
}

/*
 * The daemon's user and system CPU time, all its threads, from /proc/PID/stat: 0, or -errno
 * when the pid is not a barrierd we can see (another pid namespace, hidepid, gone).
 */
static int daemon_cpu_time(uint64_t pid, double *user, double *sys)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	long tck = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int fd;

	if (pid == 0 || pid > INT32_MAX || tck <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%llu/stat", (unsigned long long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n ? -errno : -EIO;
	buf[n] = 0;
	/* "PID (COMM) STATE ..." with COMM as the process named itself: ours is "barrierd". */
	p = strchr(buf, '(');
	if (!p || strncmp(p + 1, "barrierd", 8) != 0)
		return -ESRCH;
	p = strrchr(buf, ')');
	/* After the comm: state, then 10 fields, then utime and stime (proc(5) fields 14, 15). */
	if (!p ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EPROTO;
	*user = (double)ut / (double)tck;
	*sys = (double)st / (double)tck;
	return 0;
}

static void render_cpus(FILE *f, const struct bctl_snapshot *s)
{
	static const char *const kinds[] = {"event", "idle", "offline"};
	static const uint64_t states[] = {BARRIERD_CPU_BUSY, BARRIERD_CPU_IDLE,
					  BARRIERD_CPU_OFFLINE, BARRIERD_CPU_DAEMON,
					  BARRIERD_CPU_UNKNOWN};

	family(
	    f, "barrierd_cpus", "gauge", NULL,
	    "CPUs by the state the daemon published at its latest pass (unknown: none seen yet).");
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		uint64_t n = 0;

		for (uint64_t c = 0; c < s->ncpu; c++) {
			uint64_t st = s->cpu[c].state;

			/* States this version does not know count as unknown, as in status. */
			n += st == states[i] || (states[i] == BARRIERD_CPU_UNKNOWN &&
						 strcmp(bctl_state_name(st), "unknown") == 0);
		}
		fprintf(f, "barrierd_cpus{state=\"%s\"} %llu\n", bctl_state_name(states[i]),
			(unsigned long long)n);
	}

	family(f, "barrierd_cpu_lag_seconds", "gauge", "seconds",
	       "Age of each CPU's published evidence (now minus its last_interrupt_ns).");
	for (uint64_t c = 0; c < s->ncpu; c++)
		fprintf(f, "barrierd_cpu_lag_seconds{cpu=\"%llu\"} %.9f\n", (unsigned long long)c,
			secs(bctl_age(s, s->cpu[c].ns)));

	if (!s->has_ext)
		return;
	family(f, "barrierd_cpu_credits", "counter", NULL,
	       "Passes that advanced each CPU's value, by kind: a stamped event, idle credit, "
	       "offline credit.");
	for (uint64_t c = 0; c < s->ncpu; c++) {
		const uint64_t v[] = {s->cpu[c].credit_event, s->cpu[c].credit_idle,
				      s->cpu[c].credit_offline};

		for (size_t k = 0; k < 3; k++)
			fprintf(f, "barrierd_cpu_credits_total{cpu=\"%llu\",kind=\"%s\"} %llu\n",
				(unsigned long long)c, kinds[k], (unsigned long long)v[k]);
	}
}

static void render(FILE *f, const struct bctl_snapshot *s, uint64_t threshold_ns)
{
	double user = 0, sys = 0;

	gauge(f, "barrierd_up", NULL,
	      "1 when a barrierd publishes the state file and its heartbeat is live, else 0.", 1);
	family(f, "barrierd_state_file", "info", NULL, "The state file's ABI version.");
	fprintf(f, "barrierd_state_file_info{abi_major=\"%u\",abi_minor=\"%u\"} 1\n", s->abi_major,
		s->abi_minor);
	gauge(f, "barrierd_heartbeat_age_seconds", "seconds",
	      "Time since the daemon's latest heartbeat.", secs(bctl_age(s, s->heartbeat_ns)));
	gauge(f, "barrierd_heartbeat_period_seconds", "seconds",
	      "The heartbeat period the liveness rule uses (dead after 3 periods).",
	      secs(bctl_effective_period(s)));
	gauge(f, "barrierd_generation", NULL,
	      "The state file's generation, bumped at every daemon start.", (double)s->generation);
	if (s->has_ext && s->served_ns)
		gauge(f, "barrierd_served_age_seconds", "seconds",
		      "Age of the served word: a wait stamped before it is served without a ring.",
		      secs(bctl_age(s, s->served_ns)));
	gauge(f, "barrierd_global_age_seconds", "seconds",
	      "Age of the global value (the oldest CPU's evidence).",
	      secs(bctl_age(s, s->last_ns)));
	gauge(f, "barrierd_lag_threshold_seconds", "seconds",
	      "The lag above which a busy CPU counts as lagging (--lag-threshold).",
	      secs(threshold_ns));
	gauge(f, "barrierd_lagging_cpus", NULL,
	      "Busy or unknown CPUs whose evidence is older than the lag threshold.",
	      (double)bctl_lagging_count(s, threshold_ns));
	if (s->has_ext) {
		if (s->last_advance_ns)
			gauge(f, "barrierd_last_advance_age_seconds", "seconds",
			      "Time since the global value last advanced.",
			      secs(bctl_age(s, s->last_advance_ns)));
		counter(f, "barrierd_passes", "Publishing passes since the file was laid out.",
			s->passes);
		counter(f, "barrierd_credit_passes", "Idle and offline credit passes among them.",
			s->credit_passes);
		counter(f, "barrierd_doorbell_rings", "Doorbell wakes the daemon heard.",
			s->doorbell_rings);
		counter(f, "barrierd_nudges", "Nudges sent to lagging tickless CPUs.", s->nudges);
	}
	render_cpus(f, s);
	if (daemon_cpu_time(s->daemon_pid, &user, &sys) == 0) {
		family(f, "barrierd_daemon_cpu_seconds", "counter", "seconds",
		       "CPU time the daemon used, all its threads, by mode (/proc/PID/stat).");
		fprintf(f, "barrierd_daemon_cpu_seconds_total{mode=\"user\"} %.2f\n", user);
		fprintf(f, "barrierd_daemon_cpu_seconds_total{mode=\"system\"} %.2f\n", sys);
	}
}

static void render_down(FILE *f)
{
	gauge(f, "barrierd_up", NULL,
	      "1 when a barrierd publishes the state file and its heartbeat is live, else 0.", 0);
}

/* The metrics of the file, or barrierd_up 0 alone; the exit code as documented. */
static int write_metrics(FILE *f, const struct bctl_opts *o)
{
	struct bctl_snapshot s;
	int code;

	if (bctl_snapshot_fresh(o, "metrics", &s, NULL, 0)) {
		render_down(f);
		code = BCTL_EXIT_UNUSABLE;
	} else if (bctl_daemon_health(&s) != BCTL_HEALTHY) {
		/* Stopped or stale: its values only age, and graphing them would mislead. */
		render_down(f);
		code = BCTL_EXIT_NOT_RUNNING;
		bctl_snapshot_free(&s);
	} else {
		render(f, &s, o->lag_threshold_ns);
		code = BCTL_EXIT_OK;
		bctl_snapshot_free(&s);
	}
	fputs("# EOF\n", f);
	return code;
}

/* --output: a temporary file in FILE's directory, renamed over FILE once written. */
static int write_metrics_file(const struct bctl_opts *o)
{
	const char *slash = strrchr(o->output, '/');
	const char *base = slash ? slash + 1 : o->output;
	char tmp[PATH_MAX];
	int fd, code, n;
	bool failed;
	FILE *f;

	/* A dot first and no .prom at the end: the textfile collector skips it. */
	n = snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", slash ? (int)(slash - o->output + 1) : 0,
		     o->output, base);
	if (n < 0 || (size_t)n >= sizeof(tmp) || !*base) {
		fprintf(stderr, "barrierctl: metrics: --output %s: not a file name\n", o->output);
		return BCTL_EXIT_FAILED;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "barrierctl: metrics: cannot create a file beside %s: %s\n",
			o->output, strerror(errno));
		return BCTL_EXIT_FAILED;
	}
	/* mkstemp makes it 0600; the exporter reading it runs as another user. */
	f = fdopen(fd, "w");
	if (!f || fchmod(fd, 0644)) {
		fprintf(stderr, "barrierctl: metrics: %s: %s\n", tmp, strerror(errno));
		if (f)
			fclose(f);
		else
			close(fd);
		unlink(tmp);
		return BCTL_EXIT_FAILED;
	}
	code = write_metrics(f, o);
	failed = fflush(f) || ferror(f) || fsync(fd);
	failed |= fclose(f) != 0;
	if (failed) {
		fprintf(stderr, "barrierctl: metrics: cannot write %s: %s\n", tmp, strerror(errno));
		unlink(tmp);
		return BCTL_EXIT_FAILED;
	}
	if (rename(tmp, o->output)) {
		fprintf(stderr, "barrierctl: metrics: cannot rename %s to %s: %s\n", tmp, o->output,
			strerror(errno));
		unlink(tmp);
		return BCTL_EXIT_FAILED;
	}
	return code;
}

int bctl_cmd_metrics(const struct bctl_opts *o)
{
	int code;

	if (o->output)
		return write_metrics_file(o);
	code = write_metrics(stdout, o);
	if (fflush(stdout)) {
		fprintf(stderr, "barrierctl: metrics: cannot write the output: %s\n",
			strerror(errno));
		return BCTL_EXIT_FAILED;
	}
	return code;
}
