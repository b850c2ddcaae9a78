// SPDX-License-Identifier: MIT
/*
 * nohz_probe: what the daemon does on nohz_full CPUs, run in a guest booted with nohz_full=.
 * A nohz_full CPU running one task takes no tick, so it produces no evidence of its own; the
 * daemon nudges it once a barrier has waited --nudge-after (docs/DEMAND.md, "Nudges").  With
 * --expect-complete every barrier must complete (with nudges on), else it is a finding.
 *
 * Against the real daemon: short-timeout barriers with every CPU idle, then with a spinner on
 * each nohz_full CPU.  For each barrier it prints the result, the time taken, the CPUs whose
 * published value had not passed the stamp when the call returned, and the local timer
 * interrupts those CPUs took meanwhile.  It asserts correctness only: a call returns 0 or
 * -ETIMEDOUT, and a barrier that returned 0 has every CPU's value past its stamp.  Exit 0, or
 * 1 on a broken contract.
 *
 * Then "covered" barriers, still spinning: a ring raises the served word past the stamp, and
 * the wait starts only once the daemon's looks for that ring are over (no sleeper was there to
 * nudge for).  The served word covers the stamp, so the wait never rings: the daemon's look at
 * each heartbeat must nudge for it, or it lasts until its timeout: the case of a waiter
 * preempted between its ring and its sleep.
 */
#include <barrierd.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "harness.h"

#define MAX_CPUS 64

static int nohz[MAX_CPUS], nnohz;
static int broken;

/* The CPUs of a list such as "2-3" or "1,3-5"; how many. */
static int parse_list(const char *s, int *out, int max)
{
	int n = 0;

	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && n < max; c++)
			out[n++] = (int)c;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

/* Local timer interrupts (the LOC row of /proc/interrupts) of each CPU; 0 or -1. */
static int local_timer_counts(uint64_t *out, int max)
{
	char line[8192];
	FILE *f = fopen("/proc/interrupts", "r");
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		while (*p == ' ')
			p++;
		if (strncmp(p, "LOC:", 4))
			continue;
		p += 4;
		for (int c = 0; c < max; c++)
			out[c] = strtoull(p, &p, 10);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/*
 * Ring until the served word covers the stamp (a ring nobody heard is lost), then sleep
 * past the nudge deadline and every look the daemon takes for it.  False if it never covered.
 */
static bool cover(struct barrierd *b, const struct barrierd_ext *x, uint64_t stamp)
{
	for (int i = 0; i < 1000 && bd_load(&x->served_ns) < stamp; i++) {
		barrierd_request(b);
		test_sleep_ms(1);
	}
	if (bd_load(&x->served_ns) < stamp)
		return false;
	/* The default --nudge-after (10 ms) and the looks 1, 2, 4 and 8 ms after it: 25 ms. */
	test_sleep_ms(200);
	return true;
}

/*
 * n barriers with this timeout (covered: see cover()); prints one line each and a summary; how
 * many completed.
 */
static int barriers(struct barrierd *b, const struct barrierd_header *m, const char *what, int n,
		    int64_t timeout_ns, bool covered)
{
	const struct barrierd_ext *x = (const void *)((const char *)m + m->ext_offset);
	int done = 0;

	for (int i = 0; i < n; i++) {
		uint64_t loc0[MAX_CPUS] = {0}, loc1[MAX_CPUS] = {0};
		uint64_t t0, stamp = barrierd_stamp_ns(b), t1;
		char lag[256] = "", ticks[256] = "";
		int rc, ncpu = (int)bd_load(&m->ncpu);
		uint64_t n0, n1, r0, r1;

		if (covered && !cover(b, x, stamp)) {
			printf(
			    "%s barrier %d: no ring raised the served word past the stamp in 1 s\n",
			    what, i);
			broken = 1;
			continue;
		}
		t0 = bd_mono_ns();
		n0 = bd_load(&x->nudges);
		r0 = bd_load(&x->doorbell_rings);

		local_timer_counts(loc0, MAX_CPUS);
		rc = barrierd_wait(b, stamp, timeout_ns);
		t1 = bd_mono_ns();
		local_timer_counts(loc1, MAX_CPUS);
		n1 = bd_load(&x->nudges);
		r1 = bd_load(&x->doorbell_rings);
		for (int c = 0; c < ncpu && c < MAX_CPUS; c++)
			if (bd_load(&m->per_cpu[c].last_interrupt_ns) <= stamp)
				snprintf(lag + strlen(lag), sizeof(lag) - strlen(lag), " %d", c);
		for (int k = 0; k < nnohz; k++)
			snprintf(ticks + strlen(ticks), sizeof(ticks) - strlen(ticks),
				 " cpu%d:%llu", nohz[k],
				 (unsigned long long)(loc1[nohz[k]] - loc0[nohz[k]]));
		printf("%s barrier %d: %s after %.1f ms; CPUs not past the stamp:%s; local timer "
		       "interrupts meanwhile:%s; nudges: %llu; rings heard: %llu\n",
		       what, i, rc == 0 ? "completed" : strerror(-rc), (double)(t1 - t0) / 1e6,
		       lag[0] ? lag : " none", ticks[0] ? ticks : " (no nohz_full CPU)",
		       (unsigned long long)(n1 - n0), (unsigned long long)(r1 - r0));
		if (rc == 0 && lag[0]) {
			printf("BROKEN: barrier %d completed with CPUs not past its stamp\n", i);
			broken = 1;
		}
		if (rc != 0 && rc != -ETIMEDOUT) {
			printf("BROKEN: barrier %d returned %d\n", i, rc);
			broken = 1;
		}
		done += rc == 0;
	}
	printf("%s: %d of %d barriers completed within %.0f ms\n", what, done, n,
	       (double)timeout_ns / 1e6);
	return done;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"timeout-ms", required_argument, NULL, 't'},
	    {"barriers", required_argument, NULL, 'n'},
	    {"expect-complete", no_argument, NULL, 'e'},
	    {0},
	};
	char list[256] = "";
	int64_t timeout_ns = 2000000000LL;
	int n = 5, c, idle_done, busy_done, covered_done;
	bool expect_complete = false;
	pid_t spin[MAX_CPUS];
	struct barrierd *b;
	const struct barrierd_header *m;
	size_t sz = 0;
	FILE *f;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 't')
			timeout_ns = atol(optarg) * 1000000LL;
		else if (c == 'n')
			n = atoi(optarg);
		else if (c == 'e')
			expect_complete = true;
		else
			return 64;
	}
	test_require_root();
	f = fopen("/sys/devices/system/cpu/nohz_full", "r");
	if (f) {
		if (!fgets(list, sizeof(list), f))
			list[0] = 0;
		fclose(f);
	}
	nnohz = parse_list(list, nohz, MAX_CPUS);
	printf("nohz_full CPUs: %s\n", nnohz ? strtok(list, "\n") : "none");

	h_mkdir(&H);
	/*
	 * The daemon and the probe stay on CPU 0, never a nohz_full CPU: a second task there
	 * would bring its tick back.
	 */
	if (h_start(&H, 0, NULL)) {
		printf("the daemon did not start (log %s)\n", H.log);
		return 1;
	}
	m = map_ro(H.state, &sz);
	/*
	 * The file alone: the probe judges each barrier by what the daemon published (nudges
	 * included), which a handle crediting idle CPUs from the slots would bypass.
	 */
	if (!m || test_open_file_only(&b, H.state, NULL)) {
		printf("cannot map or open %s\n", H.state);
		h_stop(&H);
		return 1;
	}
	test_pin(0);
	idle_done = barriers(b, m, "idle", n, timeout_ns, false);

	for (int k = 0; k < nnohz; k++) {
		spin[k] = fork();
		if (spin[k] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			test_pin(nohz[k]);
			for (;;)
				__asm__ __volatile__("pause");
		}
	}
	/* Long enough for the tick to stop on a CPU with one runnable task. */
	test_sleep_ms(3000);
	busy_done = barriers(b, m, "spinning", n, timeout_ns, false);
	covered_done = barriers(b, m, "covered", n, timeout_ns, true);
	test_kill_all(spin, nnohz);

	barrierd_close(b);
	munmap((void *)m, sz);
	h_stop(&H);
	h_rmdir(&H);
	printf("FINDING: nohz_full=%s: idle %d/%d completed, one spinner per nohz_full CPU %d/%d "
	       "completed, covered by an earlier ring %d/%d (timeout %.0f ms)\n",
	       nnohz ? list : "none", idle_done, n, busy_done, n, covered_done, n,
	       (double)timeout_ns / 1e6);
	if (expect_complete && (idle_done < n || busy_done < n || covered_done < n)) {
		printf("FAILED: --expect-complete, and %d of %d barriers did not complete\n",
		       3 * n - idle_done - busy_done - covered_done, 3 * n);
		return 1;
	}
	return broken;
}
