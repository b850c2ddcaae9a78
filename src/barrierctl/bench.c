// SPDX-License-Identifier: MIT
/*
 * barrierctl bench: the latency distribution and the IPIs per call of each barrier method,
 * the methods interleaved round-robin in one process so that they share the machine's
 * conditions (frequency, load, other tenants) sample by sample.
 *
 * The methods and the switch that calls them are common/barrier_method.c (shared with
 * bench/bench_ipi).  PRIVATE_EXPEDITED and the mprotect trick need this process's threads on
 * the other CPUs: a sibling thread (common/siblings.c) sits pinned on every other CPU; it
 * spins (or keeps reading the page) during its method's samples and parks on a futex
 * otherwise, so that the rows of the other methods see idle CPUs.
 *
 * direct and file (direct evidence) are barrierd_barrier() on two handles of one file: the default
 * one, which credits CPUs from the daemon's slots itself, and one opened with
 * BARRIERD_OPEN_NO_DIRECT, which waits for the daemon's published words only.
 * During direct's calls a credit observer records how each CPU was credited (struct credits).
 */
#include "barrier_method.h"
#include "barrierctl.h"
#include "bd_sync.h"
#include "percentile.h"
#include "proc_interrupts.h"
#include "siblings.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum method_status { M_UNUSED, M_RUNNING, M_UNAVAILABLE, M_FAILED };

/*
 * direct's credits, from barrierd_set_credit_observer(): each CPU's first credit within a call
 * (the library re-checks the slots while it waits, crediting the same CPU again), then per CPU
 * and per call.  A CPU the observer never reports passed by the daemon's published words.
 */
enum { CR_IDLE, CR_OWN, CR_STAMP, CR_FILE, CR_ALONE, CR_COLS };

struct credits {
	uint64_t ncpu;
	uint8_t *first;		  /* this call: enum barrierd_credit_kind per CPU, 0 = none yet */
	uint64_t (*cpu)[CR_COLS]; /* calls per CPU and kind; ALONE: the one CPU not idle/own */
	uint64_t calls;
	uint64_t idle_own_only; /* calls in which every CPU was credited idle or own */
	uint64_t one_left;	/* ... every CPU but one (the call waited for that one only) */
	uint64_t more_left;
	bool on; /* a direct call runs: the observer records */
};

struct method {
	enum method_status status;
	char why[256];
	uint64_t done;		    /* samples recorded */
	uint64_t *lat;		    /* ns, one per round */
	uint64_t (*ipi)[IPI_KINDS]; /* deltas, one row per round */
};

struct bench {
	const struct bctl_opts *o;
	struct barrier_method_ctx ctx; /* the state file (barrierd, vtime), the mprotect page */
	struct method m[BM_COUNT];
	cpu_set_t allowed;
	int caller_cpu;
	struct siblings sib; /* one on every allowed CPU but the caller's */

	/* --load */
	pid_t *spinners;
	int nspin;

	/* /proc/interrupts */
	struct proc_interrupts irqs;

	uint64_t rng; /* --gap's random sleeps (xorshift64*) */

	struct credits cr;
};

static void unavailable(struct method *m, const char *what, int err, const char *suffix)
{
	m->status = M_UNAVAILABLE;
	snprintf(m->why, sizeof(m->why), "%s: %s%s", what, strerror(-err), suffix);
}

/* ---- siblings ---- */

/* The page for the mprotect trick, then a sibling on every allowed CPU but the caller's. */
static int start_siblings(struct bench *bn)
{
	cpu_set_t others = bn->allowed;
	int ret = barrier_method_map_page(&bn->ctx);

	if (ret)
		return ret;
	CPU_CLR(bn->caller_cpu, &others);
	return siblings_start(&bn->sib, &others, bn->ctx.page);
}

static void stop_siblings(struct bench *bn)
{
	siblings_stop(&bn->sib);
	barrier_method_unmap_page(&bn->ctx);
}

/* ---- --load ---- */

static int start_spinners(struct bench *bn, bool register_global)
{
	pid_t parent = getpid();

	bn->spinners = calloc((size_t)CPU_COUNT(&bn->allowed), sizeof(pid_t));
	if (!bn->spinners)
		return -ENOMEM;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		pid_t pid;

		if (!CPU_ISSET(cpu, &bn->allowed))
			continue;
		pid = fork();
		if (pid < 0)
			return -errno;
		if (pid == 0) {
			cpu_set_t one;

			/* Die with barrierctl, even when it is killed without a chance to clean up.
			 */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			sched_setaffinity(0, sizeof(one), &one);
			setpriority(PRIO_PROCESS, 0, 19);
			/* Registered, GLOBAL_EXPEDITED covers the load; see the row's label. */
			if (register_global)
				membarrier_call(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
			/* Plain user work; PAUSE could let a hypervisor deschedule the vCPU. */
			for (volatile unsigned long x = 0;; x++)
				;
		}
		bn->spinners[bn->nspin++] = pid;
	}
	return 0;
}

static void stop_spinners(struct bench *bn)
{
	for (int i = 0; i < bn->nspin; i++)
		kill(bn->spinners[i], SIGKILL);
	for (int i = 0; i < bn->nspin; i++)
		waitpid(bn->spinners[i], NULL, 0);
	free(bn->spinners);
}

/* ---- the methods ---- */

static enum sib_kind sibling_work(int m)
{
	if (m == BM_PRIVATE_EXPEDITED)
		return SIB_SPIN;
	if (m == BM_MPROTECT)
		return SIB_TOUCH;
	return SIB_PARK;
}

/* The methods that wait on the state file (barrierctl's handle of it). */
static bool uses_file(int m)
{
	return m == BM_BARRIERD || m == BM_VTIME || m == BM_DIRECT || m == BM_FILE;
}

/* Records each CPU's first credit of the running direct call; the rest is done after it. */
static void credit_seen(void *arg, uint64_t stamp_ns, unsigned cpu, int kind, uint64_t value)
{
	struct credits *c = arg;

	(void)stamp_ns;
	(void)value;
	if (c->on && cpu < c->ncpu && !c->first[cpu])
		c->first[cpu] = (uint8_t)kind;
}

/*
 * direct needs the handle to credit from the slots now (-ENOTSUP otherwise: without them it
 * would measure the file path under another name), and the observer on it.
 */
static int prepare_direct(struct bench *bn)
{
	size_t size;
	const struct barrierd_header *h = barrierd_mapping(bn->ctx.b, &size);

	if (!h || !barrierd_direct(bn->ctx.b))
		return -ENOTSUP;
	bn->cr.ncpu = h->ncpu;
	bn->cr.first = calloc(bn->cr.ncpu ? bn->cr.ncpu : 1, 1);
	bn->cr.cpu = calloc(bn->cr.ncpu ? bn->cr.ncpu : 1, sizeof(*bn->cr.cpu));
	if (!bn->cr.first || !bn->cr.cpu)
		return -ENOMEM;
	return barrierd_set_credit_observer(bn->ctx.b, credit_seen, &bn->cr);
}

/* After a direct call that passed: its credits, CPU by CPU. */
static void credits_count(struct credits *c)
{
	uint64_t left = 0, last = 0;

	for (uint64_t cpu = 0; cpu < c->ncpu; cpu++) {
		switch (c->first[cpu]) {
		case BARRIERD_CREDIT_IDLE:
			c->cpu[cpu][CR_IDLE]++;
			continue;
		case BARRIERD_CREDIT_SELF:
			c->cpu[cpu][CR_OWN]++;
			continue;
		case BARRIERD_CREDIT_STAMP:
			c->cpu[cpu][CR_STAMP]++;
			break;
		default:
			c->cpu[cpu][CR_FILE]++;
			break;
		}
		left++;
		last = cpu;
	}
	c->calls++;
	if (left == 0)
		c->idle_own_only++;
	else if (left == 1) {
		c->one_left++;
		c->cpu[last][CR_ALONE]++;
	} else {
		c->more_left++;
	}
}

/*
 * Before the run: decide which methods can run.  A kernel that refuses a membarrier command
 * (not in QUERY's mask, or EPERM/EINVAL/ENOSYS from the first call, e.g. under seccomp or
 * nohz_full) makes that method unavailable, not the run.  The first call is also a warm-up.
 * Returns the exit code that the state file alone calls for (0, 3 or 4).
 */
static int prepare_methods(struct bench *bn)
{
	static const struct {
		int m, cmd, reg;
		const char *name, *reg_name;
	} mb[] = {
	    {BM_MEMBARRIER_GLOBAL, MEMBARRIER_CMD_GLOBAL, 0, "MEMBARRIER_CMD_GLOBAL", NULL},
	    {BM_PRIVATE_EXPEDITED, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
	     MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, "MEMBARRIER_CMD_PRIVATE_EXPEDITED",
	     "MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED"},
	    {BM_GLOBAL_EXPEDITED, MEMBARRIER_CMD_GLOBAL_EXPEDITED,
	     MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, "MEMBARRIER_CMD_GLOBAL_EXPEDITED",
	     "MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED"},
	};
	const char *path = bctl_state_path(bn->o);
	int code = BCTL_EXIT_OK, query, ret;
	bool file_wanted = false;

	for (int m = 0; m < BM_COUNT; m++)
		file_wanted |= uses_file(m) && bn->m[m].status == M_RUNNING;
	if (file_wanted) {
		char why[sizeof(bn->m[0].why)];
		struct bctl_snapshot s;

		why[0] = 0;
		ret = bctl_open(bn->o, &bn->ctx.b);
		if (ret) {
			snprintf(why, sizeof(why), "cannot use %s: %s", path, bctl_open_error(ret));
			code = BCTL_EXIT_UNUSABLE;
		} else if ((ret = bctl_snapshot_take(bn->ctx.b, path, &s)) != 0) {
			snprintf(why, sizeof(why), "cannot read %s: %s", path, strerror(-ret));
			code = BCTL_EXIT_UNUSABLE;
		} else {
			if (bctl_daemon_health(&s) != BCTL_HEALTHY) {
				snprintf(why, sizeof(why),
					 "the daemon is not running on %s (see barrierctl status)",
					 path);
				code = BCTL_EXIT_NOT_RUNNING;
			}
			bctl_snapshot_free(&s);
		}
		for (int m = 0; m < BM_COUNT && why[0]; m++) {
			if (!uses_file(m) || bn->m[m].status != M_RUNNING)
				continue;
			bn->m[m].status = M_UNAVAILABLE;
			snprintf(bn->m[m].why, sizeof(bn->m[m].why), "%s", why);
		}
	}
	if (bn->m[BM_DIRECT].status == M_RUNNING && (ret = prepare_direct(bn)) != 0)
		unavailable(&bn->m[BM_DIRECT], "direct", ret,
			    ret == -ENOTSUP ? " (the daemon serves no slots, or refused them to us)"
					    : "");
	if (bn->m[BM_FILE].status == M_RUNNING &&
	    (ret = bctl_open_flags(bn->o, &bn->ctx.b_file, BARRIERD_OPEN_NO_DIRECT)) != 0) {
		bn->m[BM_FILE].status = M_UNAVAILABLE;
		snprintf(bn->m[BM_FILE].why, sizeof(bn->m[BM_FILE].why),
			 "cannot use %s without direct evidence: %s", path, bctl_open_error(ret));
	}

	query = (int)syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	for (size_t i = 0; i < sizeof(mb) / sizeof(mb[0]); i++) {
		struct method *m = &bn->m[mb[i].m];

		if (m->status != M_RUNNING)
			continue;
		if (query < 0)
			unavailable(m, "membarrier", -errno, "");
		else if (!(query & mb[i].cmd))
			unavailable(m, mb[i].name, -EINVAL, " (not in MEMBARRIER_CMD_QUERY)");
		else if (mb[i].reg && (ret = membarrier_call(mb[i].reg)) != 0)
			unavailable(m, mb[i].reg_name, ret, "");
	}
	if (bn->m[BM_MPROTECT].status == M_RUNNING && !bn->ctx.page)
		unavailable(&bn->m[BM_MPROTECT], "mmap", -ENOMEM, "");

	for (int i = 0; i < BM_COUNT; i++) {
		if (bn->m[i].status != M_RUNNING)
			continue;
		if ((ret = siblings_set(&bn->sib, sibling_work(i))) != 0) {
			bn->m[i].status = M_FAILED;
			snprintf(bn->m[i].why, sizeof(bn->m[i].why),
				 "the sibling threads did not respond: %s", strerror(-ret));
			continue;
		}
		ret = barrier_method_call(&bn->ctx, i);
		if (ret && !uses_file(i)) {
			unavailable(&bn->m[i], barrier_method_names[i], ret, " (first call)");
		} else if (ret) {
			bn->m[i].status = M_FAILED;
			snprintf(bn->m[i].why, sizeof(bn->m[i].why), "first call failed: %s",
				 strerror(-ret));
		}
	}
	return code;
}

/* ---- results ---- */

static const char *row_note(const struct bench *bn, int m)
{
	if ((m == BM_PRIVATE_EXPEDITED || m == BM_MPROTECT) && bn->sib.started == 0)
		return "  (no other CPU to interrupt: measures nothing)";
	if (m != BM_GLOBAL_EXPEDITED)
		return "";
	return bn->nspin ? "  (load spinners registered; not a global barrier for unregistered "
			   "processes)"
			 : "  (not a global barrier for unregistered processes)";
}

/*
 * direct's credits: which CPUs the call credited from the slots (idle, own CPU), which it
 * waited for (a stamp of theirs above the barrier's, or the daemon's published words).
 * bench/run.sh reads these lines (section 13): keep their shape.
 */
static void print_credits(const struct credits *c)
{
	if (!c->calls)
		return;
	printf("direct credits per CPU (barrierd_set_credit_observer; each CPU counted once per "
	       "call, by its first\ncredit; file: passed by the daemon's published words; alone: "
	       "the only CPU not credited idle or own):\n");
	printf("%8s %10s %10s %10s %10s %10s\n", "CPU", "idle", "own", "stamp", "file", "alone");
	for (uint64_t cpu = 0; cpu < c->ncpu && cpu < 64; cpu++)
		printf("%8llu %10llu %10llu %10llu %10llu %10llu\n", (unsigned long long)cpu,
		       (unsigned long long)c->cpu[cpu][CR_IDLE],
		       (unsigned long long)c->cpu[cpu][CR_OWN],
		       (unsigned long long)c->cpu[cpu][CR_STAMP],
		       (unsigned long long)c->cpu[cpu][CR_FILE],
		       (unsigned long long)c->cpu[cpu][CR_ALONE]);
	if (c->ncpu > 64)
		printf("%8s (%llu more CPUs not shown)\n", "", (unsigned long long)(c->ncpu - 64));
	printf("direct calls: %llu; every CPU idle or own: %llu; all but one CPU: %llu; more: "
	       "%llu\n",
	       (unsigned long long)c->calls, (unsigned long long)c->idle_own_only,
	       (unsigned long long)c->one_left, (unsigned long long)c->more_left);
}

static void print_results(struct bench *bn, bool ipi_ok, uint64_t rounds_done)
{
	char sibs[128] = "";
	size_t used = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE && bn->sib.started && used < sizeof(sibs) - 16; cpu++)
		if (CPU_ISSET(cpu, &bn->allowed) && cpu != bn->caller_cpu)
			used += (size_t)snprintf(sibs + used, sizeof(sibs) - used, "%s%d",
						 used ? "," : "", cpu);
	printf("barrierctl bench: %llu of %llu rounds, methods interleaved round-robin, a random "
	       "0-%llu ms gap before each call; caller on CPU %d, %s%s; %s\n",
	       (unsigned long long)rounds_done, (unsigned long long)bn->o->rounds,
	       (unsigned long long)(bn->o->gap_ns / BCTL_MS), bn->caller_cpu,
	       bn->sib.started ? "sibling threads on CPU " : "no sibling threads", sibs,
	       bn->nspin ? "loaded (a nice-19 spinner on every CPU)" : "no load");
	printf("%-18s %7s %10s %10s %10s %10s %10s %9s %9s %9s %9s\n", "method", "calls", "min_us",
	       "p50_us", "p90_us", "p99_us", "max_us", "CAL/call", "RES/call", "IWI/call",
	       "TLB/call");
	for (int i = 0; i < BM_COUNT; i++) {
		struct method *m = &bn->m[i];
		uint64_t *v, sum[IPI_KINDS] = {0};

		if (m->status == M_UNUSED)
			continue;
		if (m->status == M_UNAVAILABLE || m->done == 0) {
			printf("%-18s %s: %s\n", barrier_method_names[i],
			       m->status == M_UNAVAILABLE ? "unavailable"
			       : m->status == M_FAILED	  ? "failed"
							  : "not measured",
			       m->why[0] ? m->why : "no call completed");
			continue;
		}
		v = malloc(m->done * sizeof(*v));
		if (!v) {
			printf("%-18s out of memory\n", barrier_method_names[i]);
			continue;
		}
		memcpy(v, m->lat, m->done * sizeof(*v));
		sort_u64(v, m->done);
		printf("%-18s %7llu %10.1f %10.1f %10.1f %10.1f %10.1f", barrier_method_names[i],
		       (unsigned long long)m->done, (double)v[0] / 1e3,
		       (double)percentile_u64(v, m->done, 50) / 1e3,
		       (double)percentile_u64(v, m->done, 90) / 1e3,
		       (double)percentile_u64(v, m->done, 99) / 1e3, (double)v[m->done - 1] / 1e3);
		free(v);
		for (uint64_t s = 0; s < m->done; s++)
			for (int k = 0; k < IPI_KINDS; k++)
				sum[k] += m->ipi[s][k];
		for (int k = 0; k < IPI_KINDS; k++) {
			if (ipi_ok)
				printf(" %9.2f", (double)sum[k] / (double)m->done);
			else
				printf(" %9s", "n/a");
		}
		printf("%s\n", row_note(bn, i));
		if (m->status == M_FAILED)
			printf("%-18s failed after %llu calls: %s\n", "",
			       (unsigned long long)m->done, m->why);
	}
	printf("IPIs per call: /proc/interrupts rows summed over every CPU, read just before and "
	       "after each call\n(interrupts of other origin in that window count too).\n");
	print_credits(&bn->cr);
}

static int write_csv(struct bench *bn, FILE *f)
{
	fprintf(f, "method,index,latency_ns,cal,res,iwi,tlb\n");
	/* Chronological: round by round, in the order the methods ran. */
	for (uint64_t r = 0; r < bn->o->rounds; r++) {
		for (int i = 0; i < BM_COUNT; i++) {
			struct method *m = &bn->m[i];

			if (r >= m->done)
				continue;
			fprintf(f, "%s,%llu,%llu,%llu,%llu,%llu,%llu\n", barrier_method_names[i],
				(unsigned long long)r, (unsigned long long)m->lat[r],
				(unsigned long long)m->ipi[r][IPI_CAL],
				(unsigned long long)m->ipi[r][IPI_RES],
				(unsigned long long)m->ipi[r][IPI_IWI],
				(unsigned long long)m->ipi[r][IPI_TLB]);
		}
	}
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}

/* ---- the command ---- */

static void bench_free(struct bench *bn)
{
	for (int i = 0; i < BM_COUNT; i++) {
		free(bn->m[i].lat);
		free(bn->m[i].ipi);
	}
	proc_interrupts_close(&bn->irqs);
	barrierd_close(bn->ctx.b);
	barrierd_close(bn->ctx.b_file);
	free(bn->cr.first);
	free(bn->cr.cpu);
}

/* Pin the caller, take the first /proc/interrupts reading, start spinners and siblings. */
static int bench_setup(struct bench *bn, unsigned mask)
{
	cpu_set_t one;
	int ret;

	for (int i = 0; i < BM_COUNT; i++) {
		if (!(mask & (1u << i)))
			continue;
		bn->m[i].status = M_RUNNING;
		bn->m[i].lat = calloc(bn->o->rounds, sizeof(*bn->m[i].lat));
		bn->m[i].ipi = calloc(bn->o->rounds, sizeof(*bn->m[i].ipi));
		if (!bn->m[i].lat || !bn->m[i].ipi) {
			fprintf(stderr, "barrierctl: bench: out of memory for %llu samples\n",
				(unsigned long long)bn->o->rounds);
			return -ENOMEM;
		}
	}

	/*
	 * The caller stays on the CPU it starts on (or --cpu's), so that "every other CPU" (the
	 * siblings') stays true for the whole run.  --cpu rather than taskset: a caller that
	 * taskset confines to one CPU leaves the siblings no other CPU.
	 */
	if (sched_getaffinity(0, sizeof(bn->allowed), &bn->allowed))
		CPU_ZERO(&bn->allowed);
	if (bn->o->cpu >= 0 && !CPU_ISSET(bn->o->cpu, &bn->allowed)) {
		fprintf(stderr, "barrierctl: bench: --cpu %d: not a CPU this process may use\n",
			bn->o->cpu);
		return -EINVAL;
	}
	bn->caller_cpu = bn->o->cpu >= 0 ? bn->o->cpu : sched_getcpu();
	if (bn->caller_cpu < 0 || !CPU_ISSET(bn->caller_cpu, &bn->allowed)) {
		fprintf(stderr, "barrierctl: bench: cannot tell which CPU this runs on\n");
		return -ENXIO;
	}
	CPU_ZERO(&one);
	CPU_SET(bn->caller_cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);

	proc_interrupts_open(&bn->irqs); /* without it, the IPI columns say n/a */

	/* Spinners first: fork before any thread exists. */
	if (bn->o->load && (ret = start_spinners(bn, mask & (1u << BM_GLOBAL_EXPEDITED))) != 0)
		fprintf(stderr, "barrierctl: bench: started only %d load spinners: %s\n", bn->nspin,
			strerror(-ret));
	if ((mask & ((1u << BM_PRIVATE_EXPEDITED) | (1u << BM_MPROTECT))) &&
	    (ret = start_siblings(bn)) != 0) {
		fprintf(stderr, "barrierctl: bench: cannot start the sibling threads: %s\n",
			strerror(-ret));
		return ret;
	}
	return 0;
}

/* ---- the gap before a call ---- */

static uint64_t gap_rand(struct bench *bn)
{
	bn->rng ^= bn->rng >> 12;
	bn->rng ^= bn->rng << 25;
	bn->rng ^= bn->rng >> 27;
	return bn->rng * 2685821657736338717ULL;
}

/*
 * Sleep a uniformly random 0..--gap before a call: a call right after another method's would
 * find the other CPUs just woken by its IPIs (still in halt polling on a VM), and calls back
 * to back fall into step with the tick, so either would measure the previous call as much as
 * this one.  A stop signal ends the sleep (no SA_RESTART).
 */
static void gap_sleep(struct bench *bn)
{
	uint64_t ns;
	struct timespec ts;

	if (!bn->o->gap_ns)
		return;
	ns = gap_rand(bn) % (bn->o->gap_ns + 1);
	ts.tv_sec = (time_t)(ns / BCTL_SEC);
	ts.tv_nsec = (long)(ns % BCTL_SEC);
	nanosleep(&ts, NULL);
}

/* The rounds: one call of each running method per round, until done or a stop signal. */
static uint64_t bench_rounds(struct bench *bn, bool *ipi_ok)
{
	uint64_t rounds_done = 0, before[IPI_KINDS], after[IPI_KINDS];

	bn->rng = bd_mono_ns() | 1;
	*ipi_ok = proc_interrupts_sum(&bn->irqs, before) == 0;
	for (uint64_t r = 0; r < bn->o->rounds && !bctl_stop_signal; r++) {
		for (int i = 0; i < BM_COUNT && !bctl_stop_signal; i++) {
			struct method *m = &bn->m[i];
			uint64_t t0, t1;
			int ret;

			if (m->status != M_RUNNING)
				continue;
			ret = siblings_set(&bn->sib, sibling_work(i));
			if (ret) {
				m->status = M_FAILED;
				snprintf(m->why, sizeof(m->why),
					 "the sibling threads did not respond: %s", strerror(-ret));
				continue;
			}
			gap_sleep(bn);
			if (bctl_stop_signal)
				break;
			if (i == BM_DIRECT) {
				memset(bn->cr.first, 0, bn->cr.ncpu);
				bn->cr.on = true;
			}
			if (*ipi_ok)
				*ipi_ok = proc_interrupts_sum(&bn->irqs, before) == 0;
			t0 = bd_mono_ns();
			ret = barrier_method_call(&bn->ctx, i);
			t1 = bd_mono_ns();
			if (*ipi_ok)
				*ipi_ok = proc_interrupts_sum(&bn->irqs, after) == 0;
			bn->cr.on = false;
			if (i == BM_DIRECT && !ret)
				credits_count(&bn->cr);
			if (ret) {
				m->status = M_FAILED;
				snprintf(m->why, sizeof(m->why), "%s", strerror(-ret));
				continue;
			}
			m->lat[m->done] = t1 - t0;
			for (int k = 0; k < IPI_KINDS && *ipi_ok; k++)
				m->ipi[m->done][k] = after[k] - before[k];
			m->done++;
		}
		rounds_done = r + 1; /* an interrupted round counts: its calls are shown */
	}
	return rounds_done;
}

int bctl_cmd_bench(const struct bctl_opts *o)
{
	unsigned mask = o->methods ? o->methods : BM_DEFAULT_MASK;
	struct bench bn = {.o = o, .irqs = {.fd = -1}};
	bool ipi_ok = false, any = false, failed = false;
	uint64_t rounds_done;
	FILE *csv = NULL;
	int code;

	if (o->csv) {
		csv = fopen(o->csv, "we");
		if (!csv) {
			fprintf(stderr, "barrierctl: bench: cannot create %s: %s\n", o->csv,
				strerror(errno));
			return BCTL_EXIT_FAILED;
		}
	}
	/* Before any fork: the spinners reset these handlers to the default. */
	bctl_catch_stop_signals();
	if (bench_setup(&bn, mask)) {
		stop_siblings(&bn);
		stop_spinners(&bn);
		bench_free(&bn);
		if (csv)
			fclose(csv);
		return BCTL_EXIT_FAILED;
	}
	code = prepare_methods(&bn);
	rounds_done = bench_rounds(&bn, &ipi_ok);
	stop_siblings(&bn);
	stop_spinners(&bn);

	print_results(&bn, ipi_ok, rounds_done);
	for (int i = 0; i < BM_COUNT; i++) {
		any |= bn.m[i].done > 0;
		failed |= bn.m[i].status == M_FAILED;
	}
	if (csv) {
		int ret = write_csv(&bn, csv);

		if (fclose(csv) || ret) {
			fprintf(stderr, "barrierctl: bench: cannot write %s\n", o->csv);
			failed = true;
		}
	}
	bench_free(&bn);
	fflush(stdout);
	if (bctl_stop_signal) {
		fprintf(stderr, "barrierctl: bench: interrupted after %llu rounds\n",
			(unsigned long long)rounds_done);
		return 128 + bctl_stop_signal;
	}
	if (code != BCTL_EXIT_OK)
		return code;
	if (!any)
		fprintf(stderr, "barrierctl: bench: no method could be measured\n");
	return failed || !any ? BCTL_EXIT_FAILED : BCTL_EXIT_OK;
}
