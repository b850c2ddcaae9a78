// SPDX-License-Identifier: MIT
/*
 * The evidence audit (tests/audit/README.md, section 2).  A litmus test cannot tell a sound barrier
 * from a 1 ms sleep, so this checks the evidence itself: an independent BPF recorder (recorder.c)
 * logs every CPU's serialising events and idle intervals, clients run real barriers against the
 * real daemon and record (T, t_done], and for every completed barrier the auditor demands, for
 * every possible CPU, an event in (T, t_done] or an instant in it spent idle or offline.
 *
 * Phases: a file left by another boot (no daemon, then a daemon that must reset it), an idle
 * machine, every CPU loaded, one CPU busy and one idle, a daemon restart with stamps taken
 * before it, a client in a time namespace, and a client of the original layout only (no
 * library, no doorbell) with a nice-10 spinner on one CPU; on request (it changes the machine),
 * CPUs taken offline and back under running and blocked barriers.  ns and vtime
 * barriers alternate everywhere; a vtime barrier's lower bound is a clock reading the writer
 * took before its fence and vtime load.
 *
 * Exit status: 0 every barrier audited and sound; 1 a barrier without evidence (or a stamp
 * earlier than the client's own clock); 2 the run could not be audited (records lost, the
 * daemon failed, barriers that never completed); 77 skipped.  With --expect-violation (the
 * mutant tests) 0 means a violation was found and 1 that the mutant survived.
 */
#include <barrierd.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit_record.h"
#include "recorder.h"

/* harness.h starts BARRIERD_BIN; the audit picks the daemon (real or mutant) at run time. */
static const char *audit_daemon = AUDIT_DEFAULT_DAEMON;
#define BARRIERD_BIN audit_daemon
#include "harness.h"

enum kind { K_NS, K_VTIME, K_RAW, K_TIMENS, K_TIMENS_VTIME, K_RAW_VTIME };
static const char *const kind_name[] = {"ns",
					"vtime",
					"original-layout ns",
					"time-namespace ns",
					"time-namespace vtime",
					"original-layout vtime"};

/*
 * Run in this order.  legacy, the last of the default phases, is left out of the mutant tests'
 * runs, which name the phases they catch their mutants in (tests/audit/CMakeLists.txt).
 */
enum phase {
	P_STALE,
	P_IDLE,
	P_LOADED,
	P_MIXED,
	P_RESTART,
	P_TIMENS,
	P_LEGACY,
	P_NUDGE,
	P_HOTPLUG,
	P_COUNT
};
static const char *const phase_name[] = {"stale",  "idle",   "loaded", "mixed",	 "restart",
					 "timens", "legacy", "nudge",  "hotplug"};

struct barrier {
	uint8_t kind, phase;
	int rc;
	uint64_t t_before; /* host clock before the stamp call (vtime: before its fence) */
	uint64_t stamp;	   /* the ns stamp (vtime barriers: the vtime) */
	uint64_t t_done;   /* host clock after the wait returned */
	int cpu;	   /* where the client ran when it finished (diagnostics) */
	/* diagnostics: credits the daemon gave CPUs 0..3 during the barrier (event, idle, offline)
	 */
	uint16_t credits[4][3];
	uint16_t nudges; /* nudges the daemon sent during the barrier (ext.nudges, ABI 1.2) */
};

/* The daemon's credit counters for CPUs 0..3, from the extension of a mapping of the file. */
static void credit_snapshot_map(const struct barrierd_header *h, size_t size, uint64_t out[4][3])
{
	uint64_t xo = bd_load(&h->ext_offset);
	uint64_t n = bd_load(&h->ncpu);
	const struct barrierd_ext *x;

	memset(out, 0, sizeof(uint64_t) * 12);
	if (!(bd_load(&h->flags) & BARRIERD_FEAT_EXTENSION) || !xo ||
	    xo + sizeof(*x) + n * sizeof(struct barrierd_ext_cpu) > size)
		return;
	x = (const void *)((const char *)h + xo);
	for (uint64_t c = 0; c < n && c < 4; c++) {
		out[c][0] = bd_load(&x->cpu[c].credit_event);
		out[c][1] = bd_load(&x->cpu[c].credit_idle);
		out[c][2] = bd_load(&x->cpu[c].credit_offline);
	}
}

static void credit_snapshot(const struct barrierd *b, uint64_t out[4][3])
{
	size_t size;
	const struct barrierd_header *h = barrierd_mapping(b, &size);

	credit_snapshot_map(h, size, out);
}

/* The daemon's nudge count (0 before ABI 1.2, where the word was reserved and zero). */
static uint64_t nudges_now(const struct barrierd *b)
{
	size_t size;
	const struct barrierd_header *h = barrierd_mapping(b, &size);
	uint64_t xo = bd_load(&h->ext_offset);

	if (!(bd_load(&h->flags) & BARRIERD_FEAT_EXTENSION) || !xo ||
	    xo + sizeof(struct barrierd_ext) > size)
		return 0;
	return bd_load(&((const struct barrierd_ext *)((const char *)h + xo))->nudges);
}

/* What the daemon gave CPUs 0..3 between two snapshots, into a barrier's diagnostics. */
static void credit_delta(struct barrier *r, uint64_t c0[4][3], uint64_t c1[4][3])
{
	for (int c = 0; c < 4; c++)
		for (int j = 0; j < 3; j++)
			r->credits[c][j] = (uint16_t)(c1[c][j] - c0[c][j]);
}

static struct {
	struct recorder rec;
	struct harness h;
	int ncpu, nonline;
	int online[AUDIT_MAX_CPUS]; /* ids of the online CPUs, nonline of them */
	struct barrierd *b;
	struct barrier *v;
	size_t n, cap, next_audit;
	uint64_t oldest_open; /* lo of a stamp taken but not yet recorded (restart phase) */
	unsigned long audited[P_COUNT], audited_vtime[P_COUNT], errors[P_COUNT], refused_opens;
	unsigned long own_cpu_only[P_COUNT]; /* CPU-barriers backed only by the daemon's own CPU */
	unsigned long nudged[P_COUNT];	     /* audited barriers during which the daemon nudged */
	unsigned long violations, audited_total;
	unsigned long first_violation_at;
	const char *first_violation_phase;
	bool fatal;
	pid_t spin[64];
	int nspin;
	/* options */
	bool expect_violation, stop_at_first, brief_only;
	double scale;
	long min_audited;
	int64_t timeout_ns;
	bool phase_on[P_COUNT];
	long hotplug_cycles;
	const char *nudge_after; /* the daemon's --nudge-after, if not its default */
	const char *hotplug_cpus;
} A;

static void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Something went wrong that is not a finding: the run cannot vouch for anything. */
static void fatal(const char *fmt, ...)
{
	va_list ap;

	fputs("AUDIT ERROR: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	A.fatal = true;
}

static void push(const struct barrier *b)
{
	if (A.n == A.cap) {
		size_t c = A.cap ? A.cap * 2 : 4096;
		struct barrier *v = realloc(A.v, c * sizeof(*v));

		if (!v) {
			fatal("out of memory");
			return;
		}
		A.v = v;
		A.cap = c;
	}
	A.v[A.n++] = *b;
}

/* ---- processes: the daemon, spinners ---------------------------------------------------- */

/* Spinners and the daemon die with us: a crashed audit must not leave a CPU hog behind. */
static pid_t spin_on_nice(int cpu, int niceness)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		test_pin(cpu);
		if (nice(niceness) < 0) {
		}
		for (;;)
			__asm__ __volatile__("pause");
	}
	if (pid > 0)
		A.spin[A.nspin++] = pid;
	return pid;
}

static pid_t spin_on(int cpu)
{
	return spin_on_nice(cpu, 19);
}

static void spin_stop(void)
{
	test_kill_all(A.spin, A.nspin);
	A.nspin = 0;
}

static void daemon_pin(int cpu);

/*
 * The daemon starts on the first online CPU while the others are (as far as we can make
 * them) idle: the state DESIGN rule 2 guards against, in which an idle *counter* would start
 * with the wrong sense on every other CPU.  Once it runs, it may go anywhere.
 */
static int daemon_start(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(A.h.log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		test_pin(A.online[0]);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (A.nudge_after)
			execl(audit_daemon, audit_daemon, "--state", A.h.state, "--nudge-after",
			      A.nudge_after, "--max-nudge-rate", "100000", (char *)NULL);
		else
			execl(audit_daemon, audit_daemon, "--state", A.h.state, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	A.h.pid = pid;
	if (h_wait_running(&A.h, pid))
		return -1;
	daemon_pin(-1);
	return 0;
}

/*
 * Move every thread of the daemon to one CPU (-1: back to all).  From outside: the daemon's
 * sandbox does not forbid it, and the threads exist only after setup.
 */
static void daemon_pin(int cpu)
{
	char path[320];
	struct dirent *d;
	cpu_set_t set;
	DIR *dir;

	CPU_ZERO(&set);
	for (int i = 0; i < A.nonline; i++)
		if (cpu < 0 || A.online[i] == cpu)
			CPU_SET(A.online[i], &set);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)A.h.pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		char comm[64] = "";
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		/* Nudge threads stay pinned to their CPUs: moving them would move the nudges. */
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)A.h.pid, d->d_name);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		if (strncmp(comm, "bd-nudge/", 9) == 0)
			continue;
		sched_setaffinity(atoi(d->d_name), sizeof(set), &set);
	}
	closedir(dir);
}

/*
 * Probe order is attach order.  On a shared event, an instance attached after the daemon
 * reads the clock after the daemon's stamp: a valid stamp just after T is never logged at or
 * before T.  One attached before it reads the clock before the stamp: a valid stamp just
 * before t_done is never logged after t_done (on this VM the gap between two probes of one
 * event has exceeded a whole barrier, 50 us, when an interrupt or the hypervisor stepped in
 * between).  So two instances are kept: after every daemon start a fresh one is attached
 * behind the daemon, the previous "after" one is now in front of it, and the one before that
 * is retired.  They overlap, so no instant is left uncovered.
 */
static int recorder_follow_daemon(void)
{
	uint64_t horizon;
	int ret = recorder_attach(&A.rec);

	if (ret) {
		fatal("cannot attach the recorder: %s", strerror(-ret));
		return -1;
	}
	recorder_retire(&A.rec, 2);
	recorder_set_daemon(&A.rec, (int)A.h.pid);
	if (recorder_flush(&A.rec, &horizon)) {
		fatal("%s", A.rec.error);
		return -1;
	}
	return 0;
}

/* ---- the audit ---------------------------------------------------------------------------- */

static void violation(const struct barrier *b, size_t idx, const char *fmt, ...)
{
	va_list ap;

	if (!A.violations) {
		A.first_violation_at = A.audited_total + 1;
		A.first_violation_phase = phase_name[b->phase];
	}
	A.violations++;
	if (A.violations > 20)
		return; /* the first ones say it all */
	fprintf(stderr, "VIOLATION: barrier %zu (%s phase, %s, client on cpu %d): ", idx,
		phase_name[b->phase], kind_name[b->kind], b->cpu);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void audit_one(const struct barrier *b, size_t idx)
{
	bool ns_stamp = b->kind == K_NS || b->kind == K_TIMENS || b->kind == K_RAW;
	uint64_t lo, hi = b->t_done;

	/*
	 * The stamp must be host CLOCK_MONOTONIC, read after the client's own earlier reading:
	 * a stamp from the past (an unconverted time-namespace clock, say) would let evidence
	 * older than the client's stores count.  Checked whether or not the wait completed.
	 */
	if (ns_stamp && b->stamp < b->t_before) {
		violation(b, idx,
			  "stamp %llu is %.3f us before the client's own host-clock reading %llu "
			  "taken before it",
			  (unsigned long long)b->stamp, (double)(b->t_before - b->stamp) / 1e3,
			  (unsigned long long)b->t_before);
	}
	if (b->rc != 0) {
		/* Another boot's file with no daemon: refusing to complete is the right answer. */
		if (b->phase != P_STALE || b->kind == K_RAW) {
			A.errors[b->phase]++;
			if (A.errors[b->phase] <= 5)
				diag("barrier %zu (%s phase, %s) did not complete: %s", idx,
				     phase_name[b->phase], kind_name[b->kind], strerror(-b->rc));
		}
		return;
	}
	/* vtime: the writer's clock reading before its fence and vtime load. */
	lo = ns_stamp && b->stamp > b->t_before ? b->stamp : b->t_before;
	for (int c = 0; c < A.ncpu; c++) {
		char why[256];

		if (recorder_evidence(&A.rec, c, lo, hi, false, NULL, 0))
			continue;
		/*
		 * Only the daemon's own locked instructions on that CPU (its own-CPU credit,
		 * DESIGN rule 7), which no tracepoint shows?  Accepted, and counted, unless
		 * --brief-evidence-only asks for the kernel's evidence alone (rules 1 to 3).
		 */
		if (recorder_evidence(&A.rec, c, lo, hi, true, why, sizeof(why))) {
			A.own_cpu_only[b->phase]++;
			if (!A.brief_only)
				continue;
			snprintf(why, sizeof(why),
				 "only the daemon's own locked instructions on it "
				 "(its own-CPU credit, DESIGN rule 7), which "
				 "--brief-evidence-only does not accept");
		}
		violation(b, idx,
			  "cpu %d has no event in (%llu, %llu] (%.3f us) and was not idle "
			  "or offline in it: %s (daemon pid %d; credits to it during the "
			  "barrier: %u event, %u idle, %u offline)",
			  c, (unsigned long long)lo, (unsigned long long)hi,
			  (double)(hi - lo) / 1e3, why, (int)A.h.pid, c < 4 ? b->credits[c][0] : 0,
			  c < 4 ? b->credits[c][1] : 0, c < 4 ? b->credits[c][2] : 0);
	}
	A.audited[b->phase]++;
	A.audited_vtime[b->phase] += !ns_stamp;
	A.nudged[b->phase] += b->nudges != 0;
	A.audited_total++;
}

/* Audit every recorded barrier that completed before a fresh flush of the recorder. */
static int audit_pending(void)
{
	uint64_t horizon, keep;

	if (A.fatal)
		return -1;
	if (recorder_flush(&A.rec, &horizon)) {
		fatal("%s", A.rec.error);
		return -1;
	}
	pthread_mutex_lock(&A.rec.lock);
	while (A.next_audit < A.n && A.v[A.next_audit].t_done <= horizon) {
		audit_one(&A.v[A.next_audit], A.next_audit);
		A.next_audit++;
	}
	pthread_mutex_unlock(&A.rec.lock);
	keep = horizon;
	if (A.next_audit < A.n && A.v[A.next_audit].t_before < keep)
		keep = A.v[A.next_audit].t_before;
	if (A.oldest_open < keep)
		keep = A.oldest_open;
	/* Keep a margin: a barrier's lower bound is never earlier than its t_before. */
	recorder_prune(&A.rec, keep > 1000000 ? keep - 1000000 : 0);
	return A.violations && A.stop_at_first ? 1 : 0;
}

/* ---- clients --------------------------------------------------------------------------- */

static int do_barrier(struct barrierd *b, enum phase ph, enum kind k)
{
	struct barrier r = {.kind = (uint8_t)k, .phase = (uint8_t)ph};
	uint64_t c0[4][3], c1[4][3], n0 = nudges_now(b);

	credit_snapshot(b, c0);
	if (k == K_VTIME) {
		r.t_before = bd_mono_ns();
		r.stamp = barrierd_stamp_vtime(b);
		r.rc = barrierd_wait_vtime(b, r.stamp, A.timeout_ns);
	} else {
		r.t_before = bd_mono_ns();
		r.stamp = barrierd_stamp_ns(b);
		r.rc = barrierd_wait(b, r.stamp, A.timeout_ns);
	}
	r.t_done = bd_mono_ns();
	r.cpu = sched_getcpu();
	credit_snapshot(b, c1);
	credit_delta(&r, c0, c1);
	r.nudges = (uint16_t)(nudges_now(b) - n0);
	push(&r);
	return r.rc;
}

/*
 * A client of the original layout: no trust or time checks, stamps with the fenced clock and
 * waits for the global word.  It rings our doorbell so as not to wait for the slow timer, but
 * believes whatever the file says, which is why the daemon must reset another boot's file.
 */
static void raw_barrier(const struct barrierd_header *m, enum phase ph)
{
	struct barrier r = {.kind = K_RAW, .phase = (uint8_t)ph};

	r.t_before = bd_mono_ns();
	r.rc = h_raw_barrier(m, true, 2 * TEST_MS, TEST_SEC, &r.stamp);
	r.t_done = bd_mono_ns();
	r.cpu = sched_getcpu();
	push(&r);
}

static long count(long n)
{
	long v = (long)(n * A.scale + 0.5);

	return v > 0 ? v : 1;
}

/* n barriers, every fourth a vtime barrier, audited every 100. */
static int run_barriers(enum phase ph, long n, int vtime_every)
{
	uint64_t t0 = bd_mono_ns();

	for (long i = 0; i < n; i++) {
		enum kind k = vtime_every && i % vtime_every == vtime_every - 1 ? K_VTIME : K_NS;

		do_barrier(A.b, ph, k);
		if ((i + 1) % 100 == 0 && audit_pending())
			return -1;
	}
	if (audit_pending())
		return -1;
	diag("phase %-7s %5ld barriers in %6.2f s", phase_name[ph], n,
	     (double)(bd_mono_ns() - t0) / 1e9);
	return 0;
}

static int open_client(void)
{
	int ret;

	if (A.b)
		return 0;
	ret = barrierd_open(&A.b, A.h.state);
	if (ret) {
		fatal("barrierd_open(%s): %s", A.h.state, strerror(-ret));
		return -1;
	}
	return 0;
}

static void pin_all(void)
{
	cpu_set_t all;

	CPU_ZERO(&all);
	for (int c = 0; c < A.ncpu && c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
}

/* ---- phases ----------------------------------------------------------------------------- */

/*
 * A file another boot left, as our daemon would have left it had the machine crashed: valid,
 * self-consistent, marked running, with times far beyond this boot's clock.  Every reader
 * that believes it passes every barrier at once.
 */
static int write_stale_file(void)
{
	size_t size = barrierd_file_size((uint64_t)A.ncpu);
	uint8_t *buf = calloc(1, size);
	struct barrierd_header *h = (void *)buf;
	struct barrierd_ext *x;
	uint64_t base = bd_mono_ns() + 10ULL * 86400 * 1000000000ULL; /* ten days from now */
	FILE *f;
	int fd, ok;

	if (!buf)
		return -1;
	x = (void *)(buf + barrierd_ext_offset((uint64_t)A.ncpu));
	h->ncpu = (uint64_t)A.ncpu;
	h->magic = BARRIERD_MAGIC;
	h->abi_major = BARRIERD_ABI_MAJOR;
	h->abi_minor = BARRIERD_ABI_MINOR;
	h->header_size = sizeof(*h);
	h->cpu_stride = sizeof(struct barrierd_cpu);
	h->flags = BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL;
	h->generation = 3;
	h->heartbeat_period_ns = 100000000ULL;
	h->daemon_pid = 1;
	/* This boot's id with every bit flipped: certainly another boot's. */
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		unsigned v[16];

		if (fscanf(f, "%2x%2x%2x%2x-%2x%2x-%2x%2x-%2x%2x-%2x%2x%2x%2x%2x%2x", &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11],
			   &v[12], &v[13], &v[14], &v[15]) == 16)
			for (int i = 0; i < 16; i++)
				h->boot_id[i] = (uint8_t)~v[i];
		fclose(f);
	}
	h->ext_offset = barrierd_ext_offset((uint64_t)A.ncpu);
	h->vtime = 5001;
	h->last_interrupt_ns = base;
	h->last_interrupt_vtime = 5000;
	for (int c = 0; c < A.ncpu; c++) {
		h->per_cpu[c].last_interrupt_ns = base + (uint64_t)c * 1000;
		h->per_cpu[c].last_interrupt_vtime = 5000;
	}
	h->heartbeat_ns = base + (uint64_t)A.ncpu * 1000 + 1;
	x->ext_size = size - h->ext_offset;
	x->ext_header_size = sizeof(*x);
	x->ext_cpu_stride = sizeof(struct barrierd_ext_cpu);
	x->last_advance_ns = base;
	fd = open(A.h.state, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ok = fd >= 0 && write(fd, buf, size) == (ssize_t)size;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ok ? 0 : -1;
}

static int phase_stale(void)
{
	const struct barrierd_header *m;
	size_t sz;
	uint64_t horizon;

	if (write_stale_file()) {
		fatal("cannot write the stale file");
		return -1;
	}
	/* No daemon yet: a recorder of its own, for barriers that wrongly complete now. */
	if (recorder_attach(&A.rec) || recorder_flush(&A.rec, &horizon)) {
		fatal("cannot attach the recorder: %s", A.rec.error);
		return -1;
	}
	for (int i = 0; i < 5; i++) {
		struct barrierd *b;
		int ret = barrierd_open(&b, A.h.state);

		if (ret) {
			A.refused_opens++;
			continue;
		}
		/* The library accepted it: every barrier that completes must still be sound. */
		int64_t saved = A.timeout_ns;
		A.timeout_ns = 20000000LL;
		for (int j = 0; j < 4; j++)
			do_barrier(b, P_STALE, j % 2 ? K_VTIME : K_NS);
		A.timeout_ns = saved;
		barrierd_close(b);
	}
	if (audit_pending())
		return -1;

	/* A daemon must reset it before anything: then an original-layout reader is safe too. */
	if (daemon_start()) {
		fatal("the daemon did not start on the stale file (log: %s)", A.h.log);
		return -1;
	}
	if (recorder_follow_daemon())
		return -1;
	m = map_ro(A.h.state, &sz);
	if (!m) {
		fatal("cannot map %s", A.h.state);
		return -1;
	}
	for (int i = 0; i < 20; i++)
		raw_barrier(m, P_STALE);
	munmap((void *)m, sz);
	if (audit_pending())
		return -1;
	diag("phase stale   library opens refused: %lu of 5", A.refused_opens);
	return 0;
}

static int phase_idle(void)
{
	if (open_client())
		return -1;
	pin_all();
	return run_barriers(P_IDLE, count(1000), 4);
}

static int phase_loaded(void)
{
	int ret;

	if (open_client())
		return -1;
	pin_all();
	for (int i = 0; i < A.nonline && i < 64; i++)
		spin_on(A.online[i]);
	test_sleep_ms(20); /* let the spinners settle on their CPUs */
	ret = run_barriers(P_LOADED, count(1000), 4);
	spin_stop();
	return ret;
}

/* One CPU busy, the others idle: the client on the first online CPU, a spinner on the last. */
static int phase_mixed(void)
{
	int ret;

	if (open_client())
		return -1;
	if (A.nonline < 2) {
		diag("phase mixed skipped: one CPU online");
		return 0;
	}
	test_pin(A.online[0]);
	spin_on(A.online[A.nonline - 1]);
	test_sleep_ms(20);
	/*
	 * First with the daemon free to run anywhere (it often lands on the busy CPU, whose
	 * switches to it are evidence of their own), then pinned beside the client: the busy
	 * CPU then sees nothing but its own ticks, and a wrong idle credit stands out.  Then the
	 * same with the roles of the first and last CPU swapped.
	 */
	ret = run_barriers(P_MIXED, count(400), 4);
	if (!ret) {
		daemon_pin(A.online[0]);
		ret = run_barriers(P_MIXED, count(250), 4);
	}
	spin_stop();
	if (!ret) {
		test_pin(A.online[A.nonline - 1]);
		daemon_pin(A.online[A.nonline - 1]);
		spin_on(A.online[0]);
		test_sleep_ms(20);
		ret = run_barriers(P_MIXED, count(250), 4);
		spin_stop();
	}
	daemon_pin(-1);
	pin_all();
	return ret;
}

/*
 * A restart in the middle: stamps taken before the old daemon stops are waited for under the
 * new one (through the handle opened before, same inode), then vtime and ns barriers right
 * away, while a busy CPU makes any barrier that passes without evidence stand out.
 */
static int phase_restart(void)
{
	struct barrier pre_ns = {.kind = K_NS, .phase = P_RESTART};
	struct barrier pre_vt = {.kind = K_VTIME, .phase = P_RESTART};
	int ret;

	if (open_client())
		return -1;
	if (A.nonline >= 2) {
		test_pin(A.online[0]);
		spin_on(A.online[A.nonline - 1]);
	}
	test_sleep_ms(20);
	for (int i = 0; i < count(40); i++)
		do_barrier(A.b, P_RESTART, i % 4 == 3 ? K_VTIME : K_NS);
	if (audit_pending())
		goto out;

	pre_ns.t_before = bd_mono_ns();
	pre_ns.stamp = barrierd_stamp_ns(A.b);
	pre_vt.t_before = bd_mono_ns();
	pre_vt.stamp = barrierd_stamp_vtime(A.b);
	A.oldest_open = pre_ns.t_before;
	if (h_stop(&A.h) == -1) {
		fatal("the daemon did not stop on SIGTERM");
		goto out;
	}
	if (daemon_start()) {
		fatal("the daemon did not restart (log: %s)", A.h.log);
		goto out;
	}
	if (recorder_follow_daemon())
		goto out;
	/* Beside the client, as in the mixed phase: the busy CPU shows only its own ticks. */
	if (A.nonline >= 2)
		daemon_pin(A.online[0]);
	pre_vt.rc = barrierd_wait_vtime(A.b, pre_vt.stamp, A.timeout_ns);
	pre_vt.t_done = bd_mono_ns();
	pre_vt.cpu = sched_getcpu();
	pre_ns.rc = barrierd_wait(A.b, pre_ns.stamp, A.timeout_ns);
	pre_ns.t_done = bd_mono_ns();
	pre_ns.cpu = sched_getcpu();
	push(&pre_vt);
	push(&pre_ns);
	/* vtime first: a daemon that resumed vtime below the published values passes it at once */
	for (int i = 0; i < 10; i++)
		do_barrier(A.b, P_RESTART, i % 2 ? K_NS : K_VTIME);
	A.oldest_open = UINT64_MAX;
	if (audit_pending())
		goto out;
	ret = run_barriers(P_RESTART, count(250), 4);
	spin_stop();
	pin_all();
	return ret;
out:
	spin_stop();
	pin_all();
	return -1;
}

/* The namespace's CLOCK_MONOTONIC runs this far behind the host's (-20 ms). */
#define TIMENS_OFF_NS (-20000000LL)

/*
 * A client in a time namespace whose CLOCK_MONOTONIC is 20 ms behind the host's.  It reports
 * host times of its own (namespace clock minus the offset the parent chose), so neither the
 * stamp nor the audit depends on the library's conversion.  It waits 40 ms after opening:
 * an unconverted stamp would then be later than open_ns and be accepted, and pass early.
 */
static void timens_child(int wfd, long n)
{
	struct barrierd *b;
	const char off[] = "monotonic -1 980000000\n"; /* -1 s + 0.98 s */
	int fd;
	pid_t inner;

	test_pin(A.online[0]);
	if (unshare(CLONE_NEWTIME))
		_exit(10);
	fd = open("/proc/self/timens_offsets", O_WRONLY);
	if (fd < 0 || write(fd, off, sizeof(off) - 1) != (ssize_t)(sizeof(off) - 1))
		_exit(11);
	close(fd);
	/* The offset applies to children of the unsharing process. */
	inner = fork();
	if (inner == 0) {
		if (barrierd_open(&b, A.h.state))
			_exit(12);
		test_sleep_ms(40);
		for (long i = 0; i < n; i++) {
			struct barrier r = {.phase = P_TIMENS};

			r.kind = i % 4 == 3 ? K_TIMENS_VTIME : K_TIMENS;
			r.t_before = bd_mono_ns() - (uint64_t)TIMENS_OFF_NS;
			if (r.kind == K_TIMENS_VTIME) {
				r.stamp = barrierd_stamp_vtime(b);
				r.rc = barrierd_wait_vtime(b, r.stamp, A.timeout_ns);
			} else {
				r.stamp = barrierd_stamp_ns(b);
				r.rc = barrierd_wait(b, r.stamp, A.timeout_ns);
			}
			r.t_done = bd_mono_ns() - (uint64_t)TIMENS_OFF_NS;
			r.cpu = sched_getcpu();
			if (write(wfd, &r, sizeof(r)) != sizeof(r))
				_exit(13);
		}
		barrierd_close(b);
		_exit(0);
	}
	int st = test_reap(inner, 120);
	_exit(st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : 20);
}

static int phase_timens(void)
{
	int p[2], st;
	long n = count(200), got = 0;
	pid_t pid;
	struct barrier r;

	if (A.nonline >= 2)
		spin_on(A.online[A.nonline - 1]);
	if (pipe(p)) {
		fatal("pipe: %s", strerror(errno));
		spin_stop();
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		timens_child(p[1], n);
	}
	close(p[1]);
	/* The child's records carry host times already. */
	while (read(p[0], &r, sizeof(r)) == sizeof(r)) {
		push(&r);
		got++;
	}
	close(p[0]);
	st = test_reap(pid, 120);
	spin_stop();
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fatal("the time-namespace client failed (status %d)", st);
		return -1;
	}
	if (got != n) {
		fatal("the time-namespace client reported %ld of %ld barriers", got, n);
		return -1;
	}
	if (audit_pending())
		return -1;
	diag("phase timens  %5ld barriers (namespace offset %lld ms)", n,
	     TIMENS_OFF_NS / 1000000LL);
	return 0;
}

/* ---- the legacy client --------------------------------------------------------------------- */

/*
 * One barrier of a client built for the original layout, as such programs wait: the fenced
 * stamp (MFENCE; LFENCE; CLOCK_MONOTONIC) or, for vtime, MFENCE and a load of header.vtime,
 * then FUTEX_WAIT on the low half of the global word with a 10 ms timeout and a re-check of all
 * 64 bits, never ringing: it knows no doorbell, so the daemon must notice its futex sleep.
 * The credit snapshots are the auditor's diagnostics, read from the same mapping.  The record
 * is pushed for the audit, and copied to *out for the phase's summary.
 */
static void legacy_barrier(const struct barrierd_header *m, size_t msz, enum kind k,
			   struct barrier *out)
{
	struct barrier r = {.kind = (uint8_t)k, .phase = P_LEGACY};
	uint64_t c0[4][3], c1[4][3];

	credit_snapshot_map(m, msz, c0);
	r.t_before = bd_mono_ns();
	if (k == K_RAW_VTIME) {
		r.stamp = h_raw_stamp_vtime(m);
		r.rc = h_raw_wait_vtime(m, r.stamp, false, 10 * TEST_MS, (uint64_t)A.timeout_ns);
	} else {
		r.rc = h_raw_barrier(m, false, 10 * TEST_MS, (uint64_t)A.timeout_ns, &r.stamp);
	}
	r.t_done = bd_mono_ns();
	r.cpu = sched_getcpu();
	credit_snapshot_map(m, msz, c1);
	credit_delta(&r, c0, c1);
	push(&r);
	*out = r;
}

/*
 * The legacy client: original-layout barriers (every third a vtime one) spaced by random
 * sleeps, mostly of 0 to 20 ms and one in ten of up to 100 ms, so that they find the daemon
 * freshly armed by a futex sleeper, armed for a while, or back from a gap, while a nice-10
 * spinner keeps one CPU busy and the others idle.  The client and the daemon run anywhere for
 * the first half, and beside the spinner for the second: their own switches are then no
 * evidence on the other CPUs, which pass only by idle credit, and a client that cannot ring
 * gets that only once the daemon has noticed its futex sleep.  The gaps are what make the phase
 * take a few seconds; the seed is printed so that a run can be repeated.
 */
static int phase_legacy(void)
{
	unsigned seed = (unsigned)bd_mono_ns() ^ (unsigned)getpid();
	long n = count(150), nvt = 0, longest = 0, idle_credited = 0;
	uint64_t t0 = bd_mono_ns(), slowest = 0;
	const struct barrierd_header *m;
	struct barrier r;
	size_t msz = 0;
	int ret = 0;

	m = map_ro(A.h.state, &msz);
	if (!m) {
		fatal("cannot map %s for the legacy client", A.h.state);
		return -1;
	}
	pin_all();
	if (A.nonline >= 2)
		spin_on_nice(A.online[A.nonline - 1], 10);
	test_sleep_ms(20);
	for (long i = 0; i < n && !ret; i++) {
		if (i == n / 2 && A.nonline >= 2) {
			test_pin(A.online[A.nonline - 1]);
			daemon_pin(A.online[A.nonline - 1]);
		}
		long ms = rand_r(&seed) % 10 == 0 ? rand_r(&seed) % 101 : rand_r(&seed) % 21;
		enum kind k = i % 3 == 2 ? K_RAW_VTIME : K_RAW;

		longest = ms > longest ? ms : longest;
		test_sleep_ms(ms);
		legacy_barrier(m, msz, k, &r);
		nvt += k == K_RAW_VTIME;
		/* How the daemon served it, for the summary: the client cannot ring. */
		if (r.t_done - r.t_before > slowest)
			slowest = r.t_done - r.t_before;
		for (int c = 0; c < 4; c++)
			if (r.credits[c][1]) {
				idle_credited++;
				break;
			}
		if ((i + 1) % 25 == 0)
			ret = audit_pending();
	}
	if (!ret)
		ret = audit_pending();
	spin_stop();
	daemon_pin(-1);
	pin_all();
	munmap((void *)m, msz);
	if (!ret)
		diag("phase legacy  %5ld barriers (%ld vtime) in %6.2f s; gaps up to %ld ms (seed "
		     "%u); slowest %.1f ms; idle credit during %ld of them",
		     n, nvt, (double)(bd_mono_ns() - t0) / 1e9, longest, seed,
		     (double)slowest / 1e6, idle_credited);
	return ret;
}

/*
 * Nudges: the daemon restarted with --nudge-after 0.1 (and a rate limit that back-to-back
 * barriers do not reach), the client and the daemon on the first
 * CPU, a nice-19 spinner on every other.  Those CPUs' evidence is their own tick, or the switch
 * to the nudge thread after 0.1 ms: most barriers are nudged, and each must have an event in
 * it on every CPU as always (the nudge thread's switch is one).  Then the daemon is restarted
 * with its defaults, so that phases after this one see the daemon they expect.
 */
static int phase_nudge(void)
{
	unsigned long before = A.nudged[P_NUDGE];
	uint64_t t0;
	int ret;

	if (A.nonline < 2) {
		diag("phase nudge skipped: one CPU online");
		return 0;
	}
	if (h_stop(&A.h) == -1) {
		fatal("the daemon did not stop on SIGTERM");
		return -1;
	}
	A.nudge_after = "0.1";
	ret = daemon_start() || recorder_follow_daemon() || open_client();
	A.nudge_after = NULL;
	if (ret) {
		fatal("the daemon did not start with --nudge-after (log: %s)", A.h.log);
		return -1;
	}
	daemon_pin(A.online[0]);
	test_pin(A.online[0]);
	for (int i = 1; i < A.nonline && i < 64; i++)
		spin_on(A.online[i]);
	test_sleep_ms(20);
	t0 = bd_mono_ns();
	ret = run_barriers(P_NUDGE, count(400), 4);
	spin_stop();
	if (!ret)
		ret = audit_pending();
	daemon_pin(-1);
	pin_all();
	if (!ret)
		diag("phase nudge   %5ld barriers in %6.2f s (nudged among those audited so far: "
		     "%lu)",
		     count(400), (double)(bd_mono_ns() - t0) / 1e9, A.nudged[P_NUDGE] - before);
	if (h_stop(&A.h) == -1) {
		fatal("the daemon did not stop on SIGTERM");
		return -1;
	}
	if (daemon_start() || recorder_follow_daemon()) {
		fatal("the daemon did not restart (log: %s)", A.h.log);
		return -1;
	}
	return ret;
}

/* ---- CPU hotplug (on request: --phases hotplug) --------------------------------------------- */

/* Write "0" or "1" to CPU cpu's online file; 0 or -errno. */
static int cpu_set_online(int cpu, bool on)
{
	char path[64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, on ? "1" : "0", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

/* Offline credits the daemon has given CPU cpu (the extension's counter), 0 if unknown. */
static uint64_t offline_credits(const struct barrierd *b, int cpu)
{
	size_t size;
	const struct barrierd_header *h = barrierd_mapping(b, &size);
	uint64_t xo = bd_load(&h->ext_offset), n = bd_load(&h->ncpu);
	const struct barrierd_ext *x;

	if (!(bd_load(&h->flags) & BARRIERD_FEAT_EXTENSION) || !xo || (uint64_t)cpu >= n ||
	    xo + sizeof(*x) + n * sizeof(struct barrierd_ext_cpu) > size)
		return 0;
	x = (const void *)((const char *)h + xo);
	return bd_load(&x->cpu[cpu].credit_offline);
}

/* One unplug and replug, timed from outside: the CPU's bit was clear throughout (w1, u0). */
struct hp_cycle {
	int cpu;
	uint64_t hold_ns;
	uint64_t w0, w1, u0, u1;
	int down_rc, up_rc;
	volatile bool stamped; /* the blocked waiter has its stamp: the unplug may begin */
	volatile bool done;
	/* the blocked waiter: an original-layout client that does not ring, on this mapping */
	const struct barrierd_header *m;
	struct barrier r;
};

static void *hp_toggle(void *arg)
{
	struct hp_cycle *c = arg;

	while (!__atomic_load_n(&c->stamped, __ATOMIC_ACQUIRE))
		test_sleep_ns(100 * TEST_US);
	c->w0 = bd_mono_ns();
	c->down_rc = cpu_set_online(c->cpu, false);
	c->w1 = bd_mono_ns();
	test_sleep_ns(c->hold_ns);
	c->u0 = bd_mono_ns();
	c->up_rc = cpu_set_online(c->cpu, true);
	c->u1 = bd_mono_ns();
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A waiter blocked as the unplug begins: it stamps, lets the unplug start, and waits without
 * ringing the doorbell, so idle CPUs are credited only by the daemon's slow timer (an original
 * layout client), while offline credit comes with any pass.
 */
static void *hp_wait(void *arg)
{
	struct hp_cycle *c = arg;

	c->r.kind = K_RAW;
	c->r.phase = P_HOTPLUG;
	c->r.t_before = bd_mono_ns();
	bd_stamp_fence();
	c->r.stamp = bd_mono_ns();
	__atomic_store_n(&c->stamped, true, __ATOMIC_RELEASE);
	c->r.rc = h_raw_wait(c->m, c->r.stamp, false, 2 * TEST_MS, (uint64_t)A.timeout_ns);
	c->r.t_done = bd_mono_ns();
	c->r.cpu = sched_getcpu();
	return NULL;
}

/* The CPUs to unplug: --hotplug-cpus, or every online CPU but the first that has an online file. */
static int hotplug_cpus(int *cpus, int max)
{
	uint8_t mask[AUDIT_MAX_CPUS] = {0};
	int n = 0;

	if (A.hotplug_cpus) {
		const char *s = A.hotplug_cpus;

		while (*s && n < max) {
			char *end;
			long a = strtol(s, &end, 10), b = a;

			if (end == s)
				return -1;
			if (*end == '-')
				b = strtol(end + 1, &end, 10);
			for (long c = a; c <= b && n < max; c++)
				cpus[n++] = (int)c;
			s = *end == ',' ? end + 1 : end;
		}
		return n;
	}
	for (int i = 1; i < A.nonline && n < max; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", A.online[i]);
		if (access(path, W_OK) == 0 && !mask[A.online[i]]) {
			mask[A.online[i]] = 1;
			cpus[n++] = A.online[i];
		}
	}
	return n;
}

/*
 * CPUs go offline and come back while the client runs barriers back to back and a second
 * waiter, stamped just before the unplug begins, waits without ringing: barriers complete
 * through offline credit (DESIGN rule 3), and each one is audited.  When the CPU was offline
 * never comes from the daemon's word: from this driver's clock (the end of the write of 0 to
 * the start of the write of 1) and from the lists the kernel returned to the daemon's reads of
 * the online mask, which the recorder captures (no tracepoint fires on an offline CPU, so
 * nothing else shows the moment it stopped).  Every cycle ends with every CPU online again,
 * before the recorder's flush, which visits each online CPU.
 */
static int phase_hotplug(void)
{
	int cpus[AUDIT_MAX_CPUS], ncpus = hotplug_cpus(cpus, AUDIT_MAX_CPUS);
	uint64_t credits0[AUDIT_MAX_CPUS] = {0}, credited = 0, down_max = 0, up_max = 0;
	uint64_t t0 = bd_mono_ns();
	const struct barrierd_header *m;
	long nbar = 0, blocked = 0;
	size_t msz = 0;

	if (ncpus <= 0) {
		spin_stop();
		h_stop(&A.h);
		test_skip_or_fail("no CPU can go offline here (no writable cpuN/online but "
				  "the first CPU's)");
	}
	if (open_client())
		return -1;
	m = map_ro(A.h.state, &msz);
	if (!m) {
		fatal("cannot map %s for the blocked waiter", A.h.state);
		return -1;
	}
	pin_all();
	for (int k = 0; k < ncpus; k++)
		credits0[k] = offline_credits(A.b, cpus[k]);
	for (long i = 0; i < A.hotplug_cycles && !A.fatal; i++) {
		struct hp_cycle c = {.cpu = cpus[i % ncpus], .hold_ns = 20 * TEST_MS, .m = m};
		pthread_t tt, wt;

		if (pthread_create(&tt, NULL, hp_toggle, &c)) {
			fatal("pthread_create: %s", strerror(errno));
			break;
		}
		if (pthread_create(&wt, NULL, hp_wait, &c)) {
			fatal("pthread_create: %s", strerror(errno));
			__atomic_store_n(&c.stamped, true, __ATOMIC_RELEASE);
			pthread_join(tt, NULL);
			break;
		}
		for (long k = 0; !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE); k++, nbar++)
			do_barrier(A.b, P_HOTPLUG, k % 4 == 3 ? K_VTIME : K_NS);
		pthread_join(tt, NULL);
		pthread_join(wt, NULL);
		push(&c.r);
		nbar++;
		blocked += c.r.t_done > c.w0;
		if (c.down_rc || c.up_rc) {
			fatal("cpu %d: offline: %s, online: %s", c.cpu, strerror(-c.down_rc),
			      strerror(-c.up_rc));
			if (c.up_rc)
				cpu_set_online(c.cpu, true);
			break;
		}
		down_max = c.w1 - c.w0 > down_max ? c.w1 - c.w0 : down_max;
		up_max = c.u1 - c.u0 > up_max ? c.u1 - c.u0 : up_max;
		/* A few more once it is back: its first switches and events after the replug. */
		for (int k = 0; k < 4; k++, nbar++)
			do_barrier(A.b, P_HOTPLUG, k % 4 == 3 ? K_VTIME : K_NS);
		pin_all(); /* an unplug drops the affinity of a task pinned to the CPU */
		/*
		 * Offline from the end of the write of 0 until the write of 1 began.  Before and
		 * after, the kernel's answers to the daemon's reads of the list say when it was
		 * offline (recorder.c): no tracepoint fires on an offline CPU.
		 */
		if (recorder_note_offline(&A.rec, c.cpu, c.w1, c.u0)) {
			fatal("out of memory");
			break;
		}
		if (audit_pending())
			break;
	}
	munmap((void *)m, msz);
	for (int k = 0; k < ncpus; k++)
		credited += offline_credits(A.b, cpus[k]) - credits0[k];
	diag("phase hotplug %5ld cycles on %d CPU(s), %ld barriers in %6.2f s; offline credits "
	     "%llu; blocked waiter still waiting when the unplug began: %ld of %ld; longest "
	     "unplug %.1f ms, replug %.1f ms",
	     A.hotplug_cycles, ncpus, nbar, (double)(bd_mono_ns() - t0) / 1e9,
	     (unsigned long long)credited, blocked, A.hotplug_cycles, (double)down_max / 1e6,
	     (double)up_max / 1e6);
	if (A.fatal)
		return -1;
	if (!credited) {
		fatal("no barrier completed through offline credit: the phase tested nothing");
		return -1;
	}
	return 0;
}

/* ---- main --------------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: barrierd-audit [--daemon PATH] [--phases LIST] [--scale F] "
		"[--timeout-ms N] [--min-audited N] [--expect-violation] [--stop-at-first]\n"
		"       [--brief-evidence-only] [--hotplug-cycles N] [--hotplug-cpus LIST]\n"
		"       [--bracket-lenient]\n"
		"phases: stale,idle,loaded,mixed,restart,timens,legacy,nudge (default: these), "
		"hotplug\n"
		"(takes CPUs offline and back: only on request)\n");
	exit(2);
}

static void parse_phases(const char *s)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(A.phase_on, 0, sizeof(A.phase_on));
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < P_COUNT; k++)
			if (!strcmp(t, phase_name[k]))
				break;
		if (k == P_COUNT)
			usage();
		A.phase_on[k] = true;
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"daemon", required_argument, NULL, 'd'},
	    {"phases", required_argument, NULL, 'p'},
	    {"scale", required_argument, NULL, 's'},
	    {"timeout-ms", required_argument, NULL, 't'},
	    {"min-audited", required_argument, NULL, 'm'},
	    {"expect-violation", no_argument, NULL, 'x'},
	    {"stop-at-first", no_argument, NULL, 'f'},
	    {"brief-evidence-only", no_argument, NULL, 'b'},
	    {"hotplug-cycles", required_argument, NULL, 'c'},
	    {"hotplug-cpus", required_argument, NULL, 'C'},
	    {"bracket-lenient", no_argument, NULL, 'L'},
	    {0},
	};
	int (*const run[P_COUNT])(void) = {phase_stale,	 phase_idle,	phase_loaded,
					   phase_mixed,	 phase_restart, phase_timens,
					   phase_legacy, phase_nudge,	phase_hotplug};
	uint8_t online[AUDIT_MAX_CPUS];
	uint64_t t0 = bd_mono_ns();
	bool bracket_lenient = false;
	int c, ret;

	A.scale = 1.0;
	A.min_audited = 2000;
	A.timeout_ns = 2000000000LL;
	for (int k = 0; k < P_COUNT; k++)
		A.phase_on[k] = k != P_HOTPLUG;
	A.hotplug_cycles = 50;
	A.oldest_open = UINT64_MAX;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			audit_daemon = optarg;
			break;
		case 'p':
			parse_phases(optarg);
			break;
		case 's':
			A.scale = atof(optarg);
			break;
		case 't':
			A.timeout_ns = atol(optarg) * 1000000LL;
			break;
		case 'm':
			A.min_audited = atol(optarg);
			break;
		case 'x':
			A.expect_violation = true;
			break;
		case 'f':
			A.stop_at_first = true;
			break;
		case 'b':
			A.brief_only = true;
			break;
		case 'c':
			A.hotplug_cycles = atol(optarg);
			break;
		case 'C':
			A.hotplug_cpus = optarg;
			break;
		case 'L':
			/* Guests only (tests/vm/guest.sh): on the host a gap that long is a
			 * finding. */
			bracket_lenient = true;
			break;
		default:
			usage();
		}
	}
	test_require_root();
	A.ncpu = rec_possible_cpus();
	if (A.ncpu <= 0 || rec_online_cpus(online, A.ncpu)) {
		fprintf(stderr, "cannot read the possible/online CPUs\n");
		return 2;
	}
	for (c = 0; c < A.ncpu; c++)
		if (online[c])
			A.online[A.nonline++] = c;
	diag("evidence audit: daemon %s, %d possible CPUs, %d online", audit_daemon, A.ncpu,
	     A.nonline);
	h_mkdir(&A.h);
	if (recorder_init(&A.rec, A.ncpu)) {
		fprintf(stderr, "cannot start the recorder's drain thread\n");
		return 2;
	}
	A.rec.bracket_lenient = bracket_lenient;

	/* Without the stale phase, the daemon starts on a fresh file, between two instances. */
	if (!A.phase_on[P_STALE]) {
		ret = recorder_attach(&A.rec);
		if (ret)
			fatal("cannot attach the recorder: %s", strerror(-ret));
		else if (daemon_start() || recorder_follow_daemon())
			fatal("the daemon did not start (log: %s)", A.h.log);
	}
	for (int k = 0; k < P_COUNT && !A.fatal; k++) {
		if (!A.phase_on[k])
			continue;
		if (run[k]() != 0 && !A.fatal)
			break; /* stop at the first violation (--stop-at-first) */
	}

	if (A.b)
		barrierd_close(A.b);
	spin_stop();
	h_stop(&A.h);
	recorder_destroy(&A.rec);

	diag("\naudited barriers per phase:");
	for (int k = 0; k < P_COUNT; k++)
		if (A.phase_on[k])
			diag("  %-8s %6lu audited (%lu ns, %lu vtime), %lu did not complete, %lu "
			     "CPU-barriers backed only by the daemon's own CPU, %lu nudged",
			     phase_name[k], A.audited[k], A.audited[k] - A.audited_vtime[k],
			     A.audited_vtime[k], A.errors[k], A.own_cpu_only[k], A.nudged[k]);
	diag("  total    %6lu audited, %lu violations, %.1f s", A.audited_total, A.violations,
	     (double)(bd_mono_ns() - t0) / 1e9);
	diag("  recorder: %llu records, %llu switches away from a task never traced, %llu "
	     "CPU-barriers accepted on one event whose two readings bracket the barrier",
	     (unsigned long long)A.rec.records, (unsigned long long)A.rec.untraced_switches,
	     (unsigned long long)A.rec.bracketed);

	if (A.violations) {
		diag("first violation at audited barrier %lu (%s phase)", A.first_violation_at,
		     A.first_violation_phase);
		ret = A.expect_violation ? 0 : 1;
		if (A.expect_violation)
			diag("mutant caught by the audit");
	} else if (A.fatal) {
		ret = 2;
	} else if (A.expect_violation) {
		diag("MUTANT SURVIVED: %lu barriers audited, none without evidence",
		     A.audited_total);
		ret = 1;
	} else {
		unsigned long errs = 0;

		for (int k = 0; k < P_COUNT; k++)
			errs += A.errors[k];
		if (errs) {
			diag("AUDIT ERROR: %lu barriers did not complete", errs);
			ret = 2;
		} else if ((long)A.audited_total < A.min_audited) {
			diag("AUDIT ERROR: only %lu barriers audited, %ld required",
			     A.audited_total, A.min_audited);
			ret = 2;
		} else {
			diag("every barrier had evidence on every CPU");
			ret = 0;
		}
	}
	if (ret == 0 || A.expect_violation)
		h_rmdir(&A.h);
	else
		diag("daemon log kept in %s", A.h.log);
	free(A.v);
	return ret;
}
