// SPDX-License-Identifier: MIT
/*
 * barrierctl bench: the latency distribution and the IPIs per call of each barrier method,
 * the methods interleaved round-robin in one process so that they share the machine's
 * conditions (frequency, load, other tenants) sample by sample.
 *
 * Two methods only measure something when other CPUs run this process's threads:
 * PRIVATE_EXPEDITED interrupts just those CPUs, and the mprotect trick's TLB shootdown goes
 * to the CPUs whose TLBs may hold the page.  So a sibling thread sits pinned on every other
 * CPU; it spins (or keeps reading the page) during its method's samples and parks on a futex
 * otherwise, so that the rows of the other methods see idle CPUs.
 */
#include "barrierctl.h"
#include "proc_interrupts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BARRIER_TIMEOUT_NS (5 * (int64_t)BCTL_SEC) /* a barrierd call that takes longer failed */
#define SIBLING_HANG_GUARD_NS (10 * BCTL_SEC)


/* What the siblings do; the futex word holds (generation << 2) | kind. */
enum sib_kind { SIB_PARK, SIB_SPIN, SIB_TOUCH, SIB_EXIT };

enum method_status { M_UNUSED, M_RUNNING, M_UNAVAILABLE, M_FAILED };

struct method {
	enum method_status status;
	char why[256];
	uint64_t done;		    /* samples recorded */
	uint64_t *lat;		    /* ns, one per round */
	uint64_t (*ipi)[IPI_KINDS]; /* deltas, one row per round */
};

struct bench {
	const struct bctl_opts *o;
	struct barrierd *b;
	struct method m[BCTL_M_COUNT];
	cpu_set_t allowed;
	int caller_cpu;

	/* siblings */
	pthread_t *threads;
	int nsib, started;
	uint32_t mode; /* futex word (private: only this process's threads wait on it) */
	uint32_t acks; /* siblings that have seen the current mode */
	volatile unsigned char *page;
	size_t page_size;

	/* --load */
	pid_t *spinners;
	int nspin;

	/* /proc/interrupts */
	struct proc_interrupts irqs;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * BCTL_SEC + (uint64_t)ts.tv_nsec;
}

static int do_membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0) < 0 ? -errno : 0;
}

static void unavailable(struct method *m, const char *what, int err, const char *suffix)
{
	m->status = M_UNAVAILABLE;
	snprintf(m->why, sizeof(m->why), "%s: %s%s", what, strerror(-err), suffix);
}

/* ---- /proc/interrupts ---- */

/*
 * Sum the CAL, RES, IWI and TLB rows over every CPU column.  0, or -errno when the file cannot
 * be read (the IPI columns then say n/a).
 */
static int read_ipis(struct bench *bn, uint64_t out[IPI_KINDS])
{
	return proc_interrupts_sum(&bn->irqs, out);
}

/* ---- siblings ---- */

static void *sibling_main(void *arg)
{
	struct bench *bn = arg;
	uint32_t seen = UINT32_MAX;

	for (;;) {
		uint32_t m = __atomic_load_n(&bn->mode, __ATOMIC_ACQUIRE);

		if (m != seen) {
			seen = m;
			__atomic_add_fetch(&bn->acks, 1, __ATOMIC_ACQ_REL);
		}
		switch ((enum sib_kind)(m & 3)) {
		case SIB_EXIT:
			return NULL;
		case SIB_PARK:
			/* Sleep, so that this CPU is idle for every method that is not ours. */
			syscall(SYS_futex, &bn->mode, FUTEX_WAIT_PRIVATE, m, NULL, NULL, 0);
			break;
		case SIB_SPIN:
			/*
			 * No PAUSE in these loops: under a hypervisor, PAUSE loops cause
			 * pause-loop exits and the host may deschedule the vCPU, so the IPI
			 * would wait for the host's scheduler (measured: p90 of 8 ms instead
			 * of 21 us for PRIVATE_EXPEDITED on this 2-vCPU VM).
			 */
			while (__atomic_load_n(&bn->mode, __ATOMIC_ACQUIRE) == m)
				;
			break;
		case SIB_TOUCH:
			/* Keep the page in this CPU's TLB, so that mprotect has to shoot it down.
			 */
			while (__atomic_load_n(&bn->mode, __ATOMIC_ACQUIRE) == m) {
				(void)bn->page[0];
			}
			break;
		}
	}
}

/*
 * Switch the siblings to another kind of work and wait until each has seen it: a spinning
 * method is then measured with every sibling running, and the wake-up IPIs have landed
 * before the sample's first /proc/interrupts reading.
 */
static int set_mode(struct bench *bn, enum sib_kind kind)
{
	uint32_t cur = __atomic_load_n(&bn->mode, __ATOMIC_RELAXED);
	uint64_t start;

	if (bn->started == 0 || (enum sib_kind)(cur & 3) == kind)
		return 0;
	__atomic_store_n(&bn->acks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&bn->mode, ((cur >> 2) + 1) << 2 | kind, __ATOMIC_RELEASE);
	syscall(SYS_futex, &bn->mode, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	if (kind == SIB_EXIT)
		return 0;
	start = now_ns();
	for (int i = 0; __atomic_load_n(&bn->acks, __ATOMIC_ACQUIRE) < (uint32_t)bn->started; i++) {
		if (i < 1000) {
			__builtin_ia32_pause();
			continue;
		}
		if (now_ns() - start > SIBLING_HANG_GUARD_NS)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

static int start_siblings(struct bench *bn)
{
	long ps = sysconf(_SC_PAGESIZE);
	void *page;

	bn->page_size = ps > 0 ? (size_t)ps : 4096;
	page = mmap(NULL, bn->page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (page == MAP_FAILED)
		return -errno;
	bn->page = page;
	bn->page[0] = 1;
	/* Resident for the run, so the trick never takes a page fault instead of a flush. */
	(void)mlock(page, bn->page_size);

	bn->nsib = CPU_COUNT(&bn->allowed) - 1;
	if (bn->nsib <= 0)
		return 0;
	bn->threads = calloc((size_t)bn->nsib, sizeof(*bn->threads));
	if (!bn->threads)
		return -ENOMEM;
	for (int cpu = 0, i = 0; cpu < CPU_SETSIZE && i < bn->nsib; cpu++) {
		pthread_attr_t attr;
		cpu_set_t one;
		int err;

		if (!CPU_ISSET(cpu, &bn->allowed) || cpu == bn->caller_cpu)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		err = pthread_create(&bn->threads[i], &attr, sibling_main, bn);
		pthread_attr_destroy(&attr);
		if (err)
			return -err;
		bn->started = ++i;
	}
	/* Every sibling has reached the parked mode: pinned, and about to sleep. */
	for (uint64_t start = now_ns();
	     __atomic_load_n(&bn->acks, __ATOMIC_ACQUIRE) < (uint32_t)bn->started;) {
		if (now_ns() - start > SIBLING_HANG_GUARD_NS)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

static void stop_siblings(struct bench *bn)
{
	if (bn->started) {
		set_mode(bn, SIB_EXIT);
		for (int i = 0; i < bn->started; i++)
			pthread_join(bn->threads[i], NULL);
	}
	free(bn->threads);
	if (bn->page)
		munmap((void *)bn->page, bn->page_size);
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
				do_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
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

static int call_method(struct bench *bn, int m)
{
	switch (m) {
	case BCTL_M_BARRIERD:
		return barrierd_barrier(bn->b, BARRIER_TIMEOUT_NS);
	case BCTL_M_VTIME:
		return barrierd_wait_vtime(bn->b, barrierd_stamp_vtime(bn->b), BARRIER_TIMEOUT_NS);
	case BCTL_M_MEMBARRIER_GLOBAL:
		return do_membarrier(MEMBARRIER_CMD_GLOBAL);
	case BCTL_M_PRIVATE_EXPEDITED:
		return do_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
	case BCTL_M_MPROTECT:
		/*
		 * Make the page writable and dirty it (so the mapping is present), then take the
		 * write permission away: the kernel must flush the page from every TLB that may
		 * hold it, with an IPI to each CPU running this mm, and wait for them all.
		 */
		if (mprotect((void *)bn->page, bn->page_size, PROT_READ | PROT_WRITE))
			return -errno;
		bn->page[0]++;
		if (mprotect((void *)bn->page, bn->page_size, PROT_READ))
			return -errno;
		return 0;
	default:
		return do_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED);
	}
}

static enum sib_kind sibling_work(int m)
{
	if (m == BCTL_M_PRIVATE_EXPEDITED)
		return SIB_SPIN;
	if (m == BCTL_M_MPROTECT)
		return SIB_TOUCH;
	return SIB_PARK;
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
		{BCTL_M_MEMBARRIER_GLOBAL, MEMBARRIER_CMD_GLOBAL, 0, "MEMBARRIER_CMD_GLOBAL", NULL},
		{BCTL_M_PRIVATE_EXPEDITED, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
	     MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, "MEMBARRIER_CMD_PRIVATE_EXPEDITED",
	     "MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED"},
		{BCTL_M_GLOBAL_EXPEDITED, MEMBARRIER_CMD_GLOBAL_EXPEDITED,
	     MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, "MEMBARRIER_CMD_GLOBAL_EXPEDITED",
	     "MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED"},
	};
	const char *path = bctl_state_path(bn->o);
	int code = BCTL_EXIT_OK, query, ret;

	if (bn->m[BCTL_M_BARRIERD].status == M_RUNNING || bn->m[BCTL_M_VTIME].status == M_RUNNING) {
		char why[sizeof(bn->m[0].why)];
		struct bctl_snapshot s;

		why[0] = 0;
		ret = bctl_open(bn->o, &bn->b);
		if (ret) {
			snprintf(why, sizeof(why), "cannot use %s: %s", path, bctl_open_error(ret));
			code = BCTL_EXIT_UNUSABLE;
		} else if ((ret = bctl_snapshot_take(bn->b, path, &s)) != 0) {
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
		for (int m = BCTL_M_BARRIERD; m <= BCTL_M_VTIME && why[0]; m++) {
			if (bn->m[m].status != M_RUNNING)
				continue;
			bn->m[m].status = M_UNAVAILABLE;
			snprintf(bn->m[m].why, sizeof(bn->m[m].why), "%s", why);
		}
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
		else if (mb[i].reg && (ret = do_membarrier(mb[i].reg)) != 0)
			unavailable(m, mb[i].reg_name, ret, "");
	}
	if (bn->m[BCTL_M_MPROTECT].status == M_RUNNING && !bn->page)
		unavailable(&bn->m[BCTL_M_MPROTECT], "mmap", -ENOMEM, "");

	for (int i = 0; i < BCTL_M_COUNT; i++) {
		if (bn->m[i].status != M_RUNNING)
			continue;
		if ((ret = set_mode(bn, sibling_work(i))) != 0) {
			bn->m[i].status = M_FAILED;
			snprintf(bn->m[i].why, sizeof(bn->m[i].why),
				 "the sibling threads did not respond: %s", strerror(-ret));
			continue;
		}
		ret = call_method(bn, i);
		if (ret && i >= BCTL_M_MEMBARRIER_GLOBAL) {
			unavailable(&bn->m[i], bctl_method_names[i], ret, " (first call)");
		} else if (ret) {
			bn->m[i].status = M_FAILED;
			snprintf(bn->m[i].why, sizeof(bn->m[i].why), "first call failed: %s",
				 strerror(-ret));
		}
	}
	return code;
}

/* ---- results ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values: the smallest value with p % at or below it. */
static uint64_t percentile(const uint64_t *sorted, uint64_t n, unsigned p)
{
	uint64_t rank = (n * p + 99) / 100;

	return sorted[rank ? rank - 1 : 0];
}

static const char *row_note(const struct bench *bn, int m)
{
	if ((m == BCTL_M_PRIVATE_EXPEDITED || m == BCTL_M_MPROTECT) && bn->started == 0)
		return "  (no other CPU to interrupt: measures nothing)";
	if (m != BCTL_M_GLOBAL_EXPEDITED)
		return "";
	return bn->nspin ? "  (load spinners registered; not a global barrier for unregistered "
			   "processes)"
			 : "  (not a global barrier for unregistered processes)";
}

static void print_results(struct bench *bn, bool ipi_ok, uint64_t rounds_done)
{
	char sibs[128] = "";
	size_t used = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE && bn->started && used < sizeof(sibs) - 16; cpu++)
		if (CPU_ISSET(cpu, &bn->allowed) && cpu != bn->caller_cpu)
			used += (size_t)snprintf(sibs + used, sizeof(sibs) - used, "%s%d",
						 used ? "," : "", cpu);
	printf("barrierctl bench: %llu of %llu rounds, methods interleaved round-robin; caller on "
	       "CPU %d, %s%s; %s\n",
	       (unsigned long long)rounds_done, (unsigned long long)bn->o->rounds, bn->caller_cpu,
	       bn->started ? "sibling threads on CPU " : "no sibling threads", sibs,
	       bn->nspin ? "loaded (a nice-19 spinner on every CPU)" : "no load");
	printf("%-18s %7s %10s %10s %10s %10s %10s %9s %9s %9s %9s\n", "method", "calls", "min_us",
	       "p50_us", "p90_us", "p99_us", "max_us", "CAL/call", "RES/call", "IWI/call",
	       "TLB/call");
	for (int i = 0; i < BCTL_M_COUNT; i++) {
		struct method *m = &bn->m[i];
		uint64_t *v, sum[IPI_KINDS] = {0};

		if (m->status == M_UNUSED)
			continue;
		if (m->status == M_UNAVAILABLE || m->done == 0) {
			printf("%-18s %s: %s\n", bctl_method_names[i],
			       m->status == M_UNAVAILABLE ? "unavailable"
			       : m->status == M_FAILED	  ? "failed"
							  : "not measured",
			       m->why[0] ? m->why : "no call completed");
			continue;
		}
		v = malloc(m->done * sizeof(*v));
		if (!v) {
			printf("%-18s out of memory\n", bctl_method_names[i]);
			continue;
		}
		memcpy(v, m->lat, m->done * sizeof(*v));
		qsort(v, m->done, sizeof(*v), cmp_u64);
		printf("%-18s %7llu %10.1f %10.1f %10.1f %10.1f %10.1f", bctl_method_names[i],
		       (unsigned long long)m->done, (double)v[0] / 1e3,
		       (double)percentile(v, m->done, 50) / 1e3,
		       (double)percentile(v, m->done, 90) / 1e3,
		       (double)percentile(v, m->done, 99) / 1e3, (double)v[m->done - 1] / 1e3);
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
}

static int write_csv(struct bench *bn, FILE *f)
{
	fprintf(f, "method,index,latency_ns,cal,res,iwi,tlb\n");
	/* Chronological: round by round, in the order the methods ran. */
	for (uint64_t r = 0; r < bn->o->rounds; r++) {
		for (int i = 0; i < BCTL_M_COUNT; i++) {
			struct method *m = &bn->m[i];

			if (r >= m->done)
				continue;
			fprintf(f, "%s,%llu,%llu,%llu,%llu,%llu,%llu\n", bctl_method_names[i],
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
	for (int i = 0; i < BCTL_M_COUNT; i++) {
		free(bn->m[i].lat);
		free(bn->m[i].ipi);
	}
	proc_interrupts_close(&bn->irqs);
	barrierd_close(bn->b);
}

/* Pin the caller, take the first /proc/interrupts reading, start spinners and siblings. */
static int bench_setup(struct bench *bn, unsigned mask)
{
	cpu_set_t one;
	int ret;

	for (int i = 0; i < BCTL_M_COUNT; i++) {
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
	 * The caller stays on the CPU it starts on, so that "every other CPU" (the siblings')
	 * stays true for the whole run.
	 */
	if (sched_getaffinity(0, sizeof(bn->allowed), &bn->allowed))
		CPU_ZERO(&bn->allowed);
	bn->caller_cpu = sched_getcpu();
	if (bn->caller_cpu < 0 || !CPU_ISSET(bn->caller_cpu, &bn->allowed)) {
		fprintf(stderr, "barrierctl: bench: cannot tell which CPU this runs on\n");
		return -ENXIO;
	}
	CPU_ZERO(&one);
	CPU_SET(bn->caller_cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);

	proc_interrupts_open(&bn->irqs); /* without it, the IPI columns say n/a */

	/* Spinners first: fork before any thread exists. */
	if (bn->o->load &&
	    (ret = start_spinners(bn, mask & (1u << BCTL_M_GLOBAL_EXPEDITED))) != 0)
		fprintf(stderr, "barrierctl: bench: started only %d load spinners: %s\n",
			bn->nspin, strerror(-ret));
	if ((mask & ((1u << BCTL_M_PRIVATE_EXPEDITED) | (1u << BCTL_M_MPROTECT))) &&
	    (ret = start_siblings(bn)) != 0) {
		fprintf(stderr, "barrierctl: bench: cannot start the sibling threads: %s\n",
			strerror(-ret));
		return ret;
	}
	return 0;
}

/* The rounds: one call of each running method per round, until done or a stop signal. */
static uint64_t bench_rounds(struct bench *bn, bool *ipi_ok)
{
	uint64_t rounds_done = 0, before[IPI_KINDS], after[IPI_KINDS];

	*ipi_ok = read_ipis(bn, before) == 0;
	for (uint64_t r = 0; r < bn->o->rounds && !bctl_stop_signal; r++) {
		for (int i = 0; i < BCTL_M_COUNT && !bctl_stop_signal; i++) {
			struct method *m = &bn->m[i];
			uint64_t t0, t1;
			int ret;

			if (m->status != M_RUNNING)
				continue;
			ret = set_mode(bn, sibling_work(i));
			if (ret) {
				m->status = M_FAILED;
				snprintf(m->why, sizeof(m->why),
					 "the sibling threads did not respond: %s", strerror(-ret));
				continue;
			}
			if (*ipi_ok)
				*ipi_ok = read_ipis(bn, before) == 0;
			t0 = now_ns();
			ret = call_method(bn, i);
			t1 = now_ns();
			if (*ipi_ok)
				*ipi_ok = read_ipis(bn, after) == 0;
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
	unsigned mask = o->methods ? o->methods : (1u << BCTL_M_COUNT) - 1;
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
	for (int i = 0; i < BCTL_M_COUNT; i++) {
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
