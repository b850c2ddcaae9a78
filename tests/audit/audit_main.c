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
 * library, no doorbell) with a nice-10 spinner on one CPU, a daemon that nudges, and a client
 * that its own sched_getcpu() (migrate.c) moves between CPUs from inside the library; on
 * request (it changes the machine), CPUs taken offline and back under running and blocked
 * barriers.  ns and vtime barriers alternate everywhere; a vtime barrier's lower bound is a
 * clock reading the writer took before its fence and vtime load.  Every client-side credit the
 * library reports (DESIGN rule 11) is checked against the recorder's logs too.
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
#include "migrate.h"
#include "recorder.h"

/* harness.h starts BARRIERD_BIN; the audit picks the daemon (real or mutant) at run time. */
static const char *audit_daemon = AUDIT_DEFAULT_DAEMON;
#define BARRIERD_BIN audit_daemon
#include "harness.h"

/* K_BARRIER: barrierd_barrier(), whose stamp only the credit observer reports. */
enum kind { K_NS, K_VTIME, K_RAW, K_TIMENS, K_TIMENS_VTIME, K_RAW_VTIME, K_BARRIER };
static const char *const kind_name[] = {"ns",
					"vtime",
					"original-layout ns",
					"time-namespace ns",
					"time-namespace vtime",
					"original-layout vtime",
					"barrierd_barrier() ns"};

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
	P_MIGRATE,
	P_HOTPLUG,
	P_COUNT
};
static const char *const phase_name[] = {"stale",  "idle",   "loaded", "mixed",	  "restart",
					 "timens", "legacy", "nudge",  "migrate", "hotplug"};

/*
 * A client-side credit the library reported through its observer (DESIGN rule 11), merged per
 * barrier, CPU and kind.  The observer reports every credit of every check a wait makes, and
 * each is a claim of its own; they are all checked, through the extremes of their values: for
 * every kind the claim "value > T" holds for all of them if it holds for the smallest, and the
 * claim "idle, or the client on the CPU, at an instant in [value, t_done]" if it holds for
 * the largest.
 */
enum { DC_STAMP, DC_IDLE, DC_SELF, DC_KINDS, DC_UNKNOWN = DC_KINDS };
static const char *const dc_name[DC_KINDS + 1] = {"stamp", "idle", "self", "unknown-kind"};

struct dcredit {
	uint32_t cpu;
	uint8_t kind; /* DC_* */
	uint32_t reports;
	uint64_t vmin, vmax; /* the values reported: slot stamps, or the library's clock r */
};

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
	/* the client-side credits reported during the barrier: A.cred[cred_at, cred_at + ncred) */
	uint32_t cred_at, ncred;
	uint64_t cred_stamp; /* the stamp the observer reported them for (0: none reported) */
	bool cred_mixed;     /* ... and it reported more than one stamp */
	uint32_t tid;	     /* the client thread, as the recorder's switches name it */
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
	unsigned long client_cpu_only[P_COUNT]; /* CPU-barriers backed only by the client on it */
	/* stamp credits whose event the recorder logged only on either side of the window */
	unsigned long stamp_pinned[P_COUNT];
	uint8_t
	    stamp_ok[AUDIT_MAX_CPUS]; /* the barrier being audited: CPUs whose stamp credit held */
	/* client-side credits: barriers passed with any, and checked credits per kind */
	unsigned long direct_passed[P_COUNT], direct_checked[P_COUNT][DC_KINDS];
	unsigned long direct_reports;
	struct dcredit *cred; /* every barrier's, in push order */
	size_t ncred, capcred;
	struct dcredit *cur; /* the barrier in progress (the observer's, client thread only) */
	size_t ncur, capcur;
	uint64_t cur_stamp;
	bool cur_mixed, cred_oom;
	int handle_direct; /* barrierd_direct() of the client handle at open: -1 not opened */
	bool lib_phase;	   /* a phase ran barriers through the library */
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

__attribute__((format(printf, 1, 2))) static void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Something went wrong that is not a finding: the run cannot vouch for anything. */
__attribute__((format(printf, 1, 2))) static void fatal(const char *fmt, ...)
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

/* ---- client-side credits (DESIGN rule 11) ------------------------------------------------ */

static int grow_credits(struct dcredit **v, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 1024;
	struct dcredit *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	p = realloc(*v, c * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/*
 * The library's credit observer.  It runs in the client thread, inside barrierd_wait() or
 * barrierd_barrier(), once per CPU credited per check: a wait that checks ten times reports a
 * CPU up to ten times, merged here per CPU and kind (struct dcredit).
 */
static void on_credit(void *arg, uint64_t stamp_ns, unsigned cpu, int kind, uint64_t value)
{
	int k = kind == BARRIERD_CREDIT_STAMP  ? DC_STAMP
		: kind == BARRIERD_CREDIT_IDLE ? DC_IDLE
		: kind == BARRIERD_CREDIT_SELF ? DC_SELF
					       : DC_UNKNOWN;
	struct dcredit *d = NULL;

	(void)arg;
	A.direct_reports++;
	if (!A.cur_stamp)
		A.cur_stamp = stamp_ns;
	else if (A.cur_stamp != stamp_ns)
		A.cur_mixed = true;
	for (size_t i = 0; i < A.ncur; i++)
		if (A.cur[i].cpu == cpu && A.cur[i].kind == k)
			d = &A.cur[i];
	if (!d) {
		if (grow_credits(&A.cur, &A.capcur, A.ncur + 1)) {
			A.cred_oom = true;
			return;
		}
		d = &A.cur[A.ncur++];
		*d = (struct dcredit){.cpu = cpu, .kind = (uint8_t)k, .vmin = value, .vmax = value};
	}
	d->reports++;
	d->vmin = value < d->vmin ? value : d->vmin;
	d->vmax = value > d->vmax ? value : d->vmax;
}

/* Before a barrier's first library call: nothing reported yet. */
static void credits_begin(void)
{
	A.ncur = 0;
	A.cur_stamp = 0;
	A.cur_mixed = false;
}

/* Append n credits to the run's list; the index of the first, or -1 (out of memory). */
static long credits_append(const struct dcredit *v, size_t n)
{
	size_t at = A.ncred;

	if (grow_credits(&A.cred, &A.capcred, A.ncred + n)) {
		A.cred_oom = true;
		return -1;
	}
	memcpy(A.cred + at, v, n * sizeof(*v));
	A.ncred += n;
	return (long)at;
}

/* After the barrier's last library call (and its t_done): its credits, in the client thread. */
static void credits_end(struct barrier *r)
{
	long at = credits_append(A.cur, A.ncur);

	r->cred_at = at < 0 ? 0 : (uint32_t)at;
	r->ncred = at < 0 ? 0 : (uint32_t)A.ncur;
	r->cred_stamp = A.cur_stamp;
	r->cred_mixed = A.cur_mixed;
	/*
	 * The tid the recorder's switches show: gettid(), as its flush already assumes (it waits
	 * for this process's own switches by that number, so a run that flushes proves it).
	 */
	r->tid = (uint32_t)gettid();
}

/* barrierd_open() with the credit observer set: every handle of the audit reports them. */
static int client_open(struct barrierd **b)
{
	int ret = barrierd_open(b, A.h.state);

	if (!ret)
		barrierd_set_credit_observer(*b, on_credit, NULL);
	return ret;
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

__attribute__((format(printf, 3, 4))) static void violation(const struct barrier *b, size_t idx,
							    const char *fmt, ...)
{
	va_list ap;

	if (!A.violations) {
		A.first_violation_at = A.audited_total + 1;
		A.first_violation_phase = phase_name[b->phase];
	}
	A.violations++;
	if (A.violations > 20)
		return; /* the first ones say it all */
	fprintf(stderr,
		"VIOLATION: barrier %zu (%s phase, %s, client tid %u on cpu %d at the end): ", idx,
		phase_name[b->phase], kind_name[b->kind], b->tid, b->cpu);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Every client-side credit reported during barrier b, each checked against what the recorder
 * saw (DESIGN rule 11; README section 2), in the window (lo, hi] of the barrier:
 *   stamp s: s > lo (and s <= hi), and a kernel event logged on that CPU in (lo, hi], or
 *            one whose two readings bracket s (recorder_stamp_event: the window can be
 *            shorter than the gap between the two probes of one event);
 *   idle r: r > lo, and the CPU idle or offline at an instant in [r, hi], not merely
 *           somewhere in the window: the library's load that read IDLE came after r;
 *   self r: r > lo, and the client thread on that CPU at an instant in [r, hi]: the library
 *           read the CPU number after r (stronger than "in (lo, hi]", and as sound).
 * Any credit that fails is a violation: the library credited a CPU without the evidence it
 * claims.  Checked whether or not the wait completed (every credit is a claim of its own).
 */
static void audit_credits(const struct barrier *b, size_t idx, uint64_t lo, uint64_t hi,
			  bool ns_stamp)
{
	memset(A.stamp_ok, 0, (size_t)A.ncpu);
	if (!b->ncred)
		return;
	if (!ns_stamp) {
		violation(b, idx,
			  "the library reported %u client-side credits for a vtime barrier (only "
			  "ns stamps are credited from the slots)",
			  b->ncred);
		return;
	}
	if (b->cred_mixed || b->cred_stamp != b->stamp)
		violation(b, idx,
			  "the library reported credits for stamp %llu%s, not for the barrier's "
			  "stamp %llu",
			  (unsigned long long)b->cred_stamp, b->cred_mixed ? " and others" : "",
			  (unsigned long long)b->stamp);
	for (uint32_t i = 0; i < b->ncred; i++) {
		const struct dcredit *d = &A.cred[b->cred_at + i];
		char why[320] = "", where[160] = "";
		const char *fail = NULL;
		int c = (int)d->cpu;

		if (d->kind == DC_UNKNOWN || c >= A.ncpu) {
			fail = "an unknown kind or CPU";
		} else if (d->vmin <= lo) {
			fail = "its value is not above the barrier's lower bound";
			recorder_evidence(&A.rec, c, lo, hi, false, why, sizeof(why));
		} else if (d->vmax > hi) {
			fail = "its value is later than the client's t_done";
			recorder_evidence(&A.rec, c, lo, hi, false, why, sizeof(why));
		} else if (d->kind == DC_STAMP) {
			bool pinned;

			if (!recorder_stamp_event(&A.rec, c, lo, hi, d->vmin, d->vmax, &pinned, why,
						  sizeof(why)))
				fail = "no event was logged on the CPU in (lo, t_done], nor one "
				       "whose two readings bracket the stamp";
			else
				A.stamp_ok[c] = 1;
			A.stamp_pinned[b->phase] += pinned;
		} else if (d->kind == DC_IDLE) {
			if (!recorder_idle_at(&A.rec, c, d->vmax, hi, why, sizeof(why)))
				fail = "the CPU was neither idle nor offline at any instant in "
				       "[r, t_done]";
		} else if (!recorder_thread_on(&A.rec, c, b->tid, d->vmax, hi, why, sizeof(why)) &&
			   recorder_thread_cpu(&A.rec, b->tid, d->vmax) != c &&
			   recorder_thread_cpu(&A.rec, b->tid, hi) != c) {
			/*
			 * (r and t_done: instants at which the client ran, having read the clock
			 * then; the first covers the library's reading of the self credit's r.)
			 */
			fail = "the client thread was not on the CPU at any instant in [r, t_done]";
			/* Where the recorder has the thread instead. */
			for (int o = 0; o < A.ncpu; o++) {
				size_t len = strlen(where);

				if (o != c && len + 16 < sizeof(where) &&
				    recorder_thread_on(&A.rec, o, b->tid, d->vmax, hi, NULL, 0))
					snprintf(where + len, sizeof(where) - len, "%s%d",
						 len ? "," : "; the recorder has it on cpu ", o);
			}
		}
		if (!fail) {
			A.direct_checked[b->phase][d->kind]++;
			continue;
		}
		violation(b, idx,
			  "client-side %s credit to cpu %d (tid %u; %u reports, values %llu..%llu, "
			  "%+.3f..%+.3f us from lo): %s; window (%llu, %llu] (%.3f us); %s%s",
			  dc_name[d->kind], c, b->tid, d->reports, (unsigned long long)d->vmin,
			  (unsigned long long)d->vmax, ((double)d->vmin - (double)lo) / 1e3,
			  ((double)d->vmax - (double)lo) / 1e3, fail, (unsigned long long)lo,
			  (unsigned long long)hi, (double)(hi - lo) / 1e3, why, where);
	}
}

static void audit_one(const struct barrier *b, size_t idx)
{
	/* barrierd_barrier()'s stamp is known only if the observer reported it (b->stamp). */
	bool ns_stamp = b->kind == K_NS || b->kind == K_TIMENS || b->kind == K_RAW ||
			(b->kind == K_BARRIER && b->stamp);
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
	/* vtime, or a barrierd_barrier() with no stamp reported: the clock before the call. */
	lo = ns_stamp && b->stamp > b->t_before ? b->stamp : b->t_before;
	audit_credits(b, idx, lo, hi, ns_stamp || b->kind == K_BARRIER);
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
	for (int c = 0; c < A.ncpu; c++) {
		char why[256];

		if (recorder_evidence(&A.rec, c, lo, hi, false, NULL, 0))
			continue;
		/*
		 * The client thread itself on that CPU at an instant in (lo, hi]: DESIGN rule 11's
		 * own-CPU evidence (rule 7's migration clause, from the reader's side).  Code that
		 * ran there before that instant was switched out before the client was switched
		 * in, code that runs there after it follows a switch away from the client: both
		 * through the scheduler's locked instructions.  A client that credits its own CPU
		 * can pass in microseconds with no event there at all.  Counted.
		 */
		if (b->tid && (recorder_thread_on(&A.rec, c, b->tid, lo + 1, hi, NULL, 0) ||
			       recorder_thread_cpu(&A.rec, b->tid, hi) == c)) {
			A.client_cpu_only[b->phase]++;
			continue;
		}
		/*
		 * An event the recorder logged on either side of the window, whose reading by the
		 * daemon (the slot stamp the client was credited with, checked above to be in the
		 * window and bracketed by the event's two readings) is inside it.
		 */
		if (A.stamp_ok[c])
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
	A.direct_passed[b->phase] += b->ncred != 0;
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
	credits_begin();
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
	credits_end(&r);
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

	A.lib_phase = true;
	if (A.b)
		return 0;
	ret = client_open(&A.b);
	if (ret) {
		fatal("barrierd_open(%s): %s", A.h.state, strerror(-ret));
		return -1;
	}
	/*
	 * The daemon serves its slots on PATH.sock by default: a handle without them would leave
	 * the client-side credits (and their checks) untested.
	 */
	A.handle_direct = barrierd_direct(A.b);
	diag("client handle: barrierd_direct() %s", A.handle_direct ? "true" : "false");
	if (!A.handle_direct) {
		fatal("the client handle has no direct evidence (no slots from %s.sock)",
		      A.h.state);
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
		int ret = client_open(&b);

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
	credits_begin();
	pre_vt.rc = barrierd_wait_vtime(A.b, pre_vt.stamp, A.timeout_ns);
	pre_vt.t_done = bd_mono_ns();
	credits_end(&pre_vt);
	pre_vt.cpu = sched_getcpu();
	credits_begin();
	pre_ns.rc = barrierd_wait(A.b, pre_ns.stamp, A.timeout_ns);
	pre_ns.t_done = bd_mono_ns();
	credits_end(&pre_ns);
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
		if (client_open(&b))
			_exit(12);
		test_sleep_ms(40);
		for (long i = 0; i < n; i++) {
			struct barrier r = {.phase = P_TIMENS};

			r.kind = i % 4 == 3 ? K_TIMENS_VTIME : K_TIMENS;
			credits_begin();
			r.t_before = bd_mono_ns() - (uint64_t)TIMENS_OFF_NS;
			if (r.kind == K_TIMENS_VTIME) {
				r.stamp = barrierd_stamp_vtime(b);
				r.rc = barrierd_wait_vtime(b, r.stamp, A.timeout_ns);
			} else {
				r.stamp = barrierd_stamp_ns(b);
				r.rc = barrierd_wait(b, r.stamp, A.timeout_ns);
			}
			r.t_done = bd_mono_ns() - (uint64_t)TIMENS_OFF_NS;
			credits_end(&r);
			r.cpu = sched_getcpu();
			/* The record, then its credits: the parent files them under its own list.
			 */
			if (A.cred_oom || write(wfd, &r, sizeof(r)) != sizeof(r) ||
			    write(wfd, A.cred + r.cred_at, r.ncred * sizeof(*A.cred)) !=
				(ssize_t)(r.ncred * sizeof(*A.cred)))
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
	/* The child's records carry host times already; each is followed by its credits. */
	A.lib_phase = true;
	while (read(p[0], &r, sizeof(r)) == sizeof(r)) {
		struct dcredit dc[64];
		uint32_t left = r.ncred;
		long at = (long)A.ncred;

		while (left) {
			uint32_t k = left < 64 ? left : 64;

			if (read(p[0], dc, k * sizeof(*dc)) != (ssize_t)(k * sizeof(*dc)) ||
			    credits_append(dc, k) < 0) {
				fatal("the time-namespace client's credits were cut short");
				break;
			}
			left -= k;
		}
		if (left)
			break;
		r.cred_at = (uint32_t)at;
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

/* ---- migrations under the client's own-CPU credit ------------------------------------------ */

/* One barrierd_barrier(), its stamp known only from the credits the observer reports. */
static int migrate_barrier(void)
{
	struct barrier r = {.kind = K_BARRIER, .phase = P_MIGRATE};
	uint64_t c0[4][3], c1[4][3], n0 = nudges_now(A.b);

	credit_snapshot(A.b, c0);
	credits_begin();
	r.t_before = bd_mono_ns();
	migrate_arm(true);
	r.rc = barrierd_barrier(A.b, A.timeout_ns);
	migrate_arm(false);
	r.t_done = bd_mono_ns();
	credits_end(&r);
	r.stamp = r.cred_stamp; /* 0 if nothing was credited from the slots */
	r.cpu = sched_getcpu();
	credit_snapshot(A.b, c1);
	credit_delta(&r, c0, c1);
	r.nudges = (uint16_t)(nudges_now(A.b) - n0);
	push(&r);
	return r.rc;
}

/*
 * The client moved between CPUs during its barriers, so that own-CPU credit (DESIGN rule 11)
 * is checked across migrations: this executable's sched_getcpu() (migrate.c), which libbarrierd
 * calls to learn its CPU, moves the thread to the next online CPU on half of the calls, after
 * it read the CPU it returns.  A nice-19 spinner on every CPU keeps idle credit from covering
 * them.  A library that reads the CPU after its clock reading r > T credits a CPU the thread
 * was on after T, and the audit's check of a self credit (the thread on that CPU at an instant
 * in [r, t_done], from the recorder's switches) passes; one that reads it before the stamp
 * credits a CPU the thread may have left before T, and the CPU it left shows the thread
 * nowhere in the window.  barrierd_barrier() is the call: it takes its own stamp, the one such
 * a library would read the CPU before.
 */
static int phase_migrate(void)
{
	unsigned seed = (unsigned)bd_mono_ns() ^ (unsigned)getpid();
	unsigned long calls, moves, nself = 0, nbarrier_self = 0;
	long n = count(500);
	size_t first = A.n;
	uint64_t t0;
	int ret = 0;

	if (A.nonline < 2) {
		if (A.expect_violation)
			test_skip_or_fail("the migrate phase needs two online CPUs");
		diag("phase migrate skipped: one CPU online");
		return 0;
	}
	if (open_client())
		return -1;
	if (migrate_interposed()) {
		fatal("the dynamic linker does not hand out this executable's sched_getcpu(): "
		      "libbarrierd's calls would not come to the interposer (not exported?)");
		return -1;
	}
	migrate_setup(A.online, A.nonline, seed);
	test_pin(A.online[0]);
	for (int i = 0; i < A.nonline && i < 64; i++)
		spin_on(A.online[i]);
	test_sleep_ms(20);
	t0 = bd_mono_ns();
	for (long i = 0; i < n && !ret; i++) {
		migrate_barrier();
		if ((i + 1) % 100 == 0)
			ret = audit_pending();
	}
	if (!ret)
		ret = audit_pending();
	spin_stop();
	pin_all();
	if (ret)
		return ret;
	migrate_counts(&calls, &moves);
	for (size_t i = first; i < A.n; i++) {
		unsigned long k = 0;

		for (uint32_t j = 0; j < A.v[i].ncred; j++)
			k += A.cred[A.v[i].cred_at + j].kind == DC_SELF;
		nself += k;
		nbarrier_self += k != 0;
	}
	diag("phase migrate %5ld barriers in %6.2f s (seed %u); libbarrierd called sched_getcpu() "
	     "%lu times, %lu of them moved the client; %lu self credits in %lu barriers",
	     n, (double)(bd_mono_ns() - t0) / 1e9, seed, calls, moves, nself, nbarrier_self);
	/* The interposer must really be in the library's path, and have moved something. */
	if (!calls) {
		fatal("libbarrierd never called this executable's sched_getcpu() in a barrier: "
		      "the phase tested nothing");
		return -1;
	}
	if (!moves || !nself) {
		fatal("no migration under a self credit: the phase tested nothing");
		return -1;
	}
	return 0;
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
		"phases: stale,idle,loaded,mixed,restart,timens,legacy,nudge,migrate (default: "
		"these), "
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
	int (*const run[P_COUNT])(void) = {phase_stale,	  phase_idle,	phase_loaded, phase_mixed,
					   phase_restart, phase_timens, phase_legacy, phase_nudge,
					   phase_migrate, phase_hotplug};
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
	A.handle_direct = -1;
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

	if (A.b) {
		diag("client handle at the end: barrierd_direct() %s",
		     barrierd_direct(A.b) ? "true" : "false");
		barrierd_close(A.b);
	}
	spin_stop();
	h_stop(&A.h);
	recorder_destroy(&A.rec);

	diag("\naudited barriers per phase:");
	for (int k = 0; k < P_COUNT; k++)
		if (A.phase_on[k])
			diag("  %-8s %6lu audited (%lu ns, %lu vtime), %lu did not complete, %lu "
			     "CPU-barriers backed only by the daemon's own CPU, %lu only by the "
			     "client's, %lu nudged",
			     phase_name[k], A.audited[k], A.audited[k] - A.audited_vtime[k],
			     A.audited_vtime[k], A.errors[k], A.own_cpu_only[k],
			     A.client_cpu_only[k], A.nudged[k]);
	diag("client-side credits (DESIGN rule 11), each checked against the recorder's logs "
	     "(handle: barrierd_direct() %s at open):",
	     A.handle_direct < 0 ? "not opened"
	     : A.handle_direct	 ? "true"
				 : "false");
	for (int k = 0; k < P_COUNT; k++)
		if (A.phase_on[k])
			diag("  %-8s %6lu barriers passed with client-side credits; credits "
			     "checked: %lu stamp (%lu pinned by their stamp), %lu idle, %lu self",
			     phase_name[k], A.direct_passed[k], A.direct_checked[k][DC_STAMP],
			     A.stamp_pinned[k], A.direct_checked[k][DC_IDLE],
			     A.direct_checked[k][DC_SELF]);
	{
		unsigned long tp = 0, tk[DC_KINDS] = {0}, pin = 0;

		for (int k = 0; k < P_COUNT; k++) {
			tp += A.direct_passed[k];
			pin += A.stamp_pinned[k];
			for (int j = 0; j < DC_KINDS; j++)
				tk[j] += A.direct_checked[k][j];
		}
		diag("  total    %6lu barriers passed with client-side credits; credits checked: "
		     "%lu stamp (%lu pinned by their stamp), %lu idle, %lu self (observer "
		     "reports: %lu)",
		     tp, tk[DC_STAMP], pin, tk[DC_IDLE], tk[DC_SELF], A.direct_reports);
	}
	diag("  total    %6lu audited, %lu violations, %.1f s", A.audited_total, A.violations,
	     (double)(bd_mono_ns() - t0) / 1e9);
	diag("  recorder: %llu records, %llu switches away from a task never traced, %llu "
	     "CPU-barriers accepted on one event whose two readings bracket the barrier, "
	     "%llu stamps pinned by the instance behind the daemon alone",
	     (unsigned long long)A.rec.records, (unsigned long long)A.rec.untraced_switches,
	     (unsigned long long)A.rec.bracketed, (unsigned long long)A.rec.behind_pinned);

	if (A.violations) {
		diag("first violation at audited barrier %lu (%s phase)", A.first_violation_at,
		     A.first_violation_phase);
		ret = A.expect_violation ? 0 : 1;
		if (A.expect_violation)
			diag("mutant caught by the audit");
	} else if (A.fatal) {
		ret = 2;
	} else if (A.cred_oom) {
		diag("AUDIT ERROR: out of memory for the client-side credits");
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
		} else if (A.lib_phase && !A.direct_reports) {
			/* The direct path must be exercised, not merely allowed. */
			diag("AUDIT ERROR: no client-side credit in the whole run: the library's "
			     "direct evidence went untested");
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
