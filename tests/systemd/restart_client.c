// SPDX-License-Identifier: MIT
/*
 * restart_client STATE [SECONDS] - a client that keeps one mapping of the state file while the
 * service restarts under it.  It loops barriers (no membarrier fallback: every success comes
 * from a daemon), reads the generation from the header after each, and prints one line per
 * generation it sees ("NEWGEN g pid p after N barriers, gap X ms"), then a summary on SIGTERM,
 * SIGINT or after SECONDS (default 60).
 *
 * Exit 0 when: barriers passed under at least two generations, the generations it saw only
 * grew, every failure was -ESTALE (the daemon stopped, between two generations), and the path
 * still names the inode it mapped (RuntimeDirectoryPreserve=yes).  Otherwise 1.
 */
#include <barrierd.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bd_sync.h"

#define MAX_GENS 64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : NULL;
	double seconds = argc > 2 ? atof(argv[2]) : 60.0;
	uint64_t gens[MAX_GENS], count[MAX_GENS];
	unsigned long ok = 0, stale = 0, errors = 0;
	int ngen = 0, monotonic = 1, ret;
	uint64_t start, deadline, last_ok, max_gap = 0;
	const struct barrierd_header *h;
	struct stat before, after;
	struct sigaction sa;
	struct barrierd *b;
	size_t size;

	if (!path || seconds <= 0) {
		fprintf(stderr, "usage: restart_client STATE [SECONDS]\n");
		return 64;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	ret = barrierd_open(&b, path);
	if (ret) {
		printf("FAIL: barrierd_open(%s): %s\n", path, strerror(-ret));
		return 1;
	}
	if (stat(path, &before)) {
		printf("FAIL: stat(%s): %s\n", path, strerror(errno));
		return 1;
	}
	h = barrierd_mapping(b, &size);
	start = last_ok = bd_mono_ns();
	deadline = start + (uint64_t)(seconds * 1e9);

	while (!stop && bd_mono_ns() < deadline) {
		uint64_t g, t;

		ret = barrierd_barrier(b, 2000000000LL);
		t = bd_mono_ns();
		if (ret == -ESTALE) {
			/* Between two daemons: the file says stopped.  Try again shortly. */
			stale++;
			usleep(1000);
			continue;
		}
		if (ret) {
			errors++;
			printf("ERROR: barrier: %s\n", strerror(-ret));
			usleep(10000);
			continue;
		}
		ok++;
		if (t - last_ok > max_gap)
			max_gap = t - last_ok;
		g = bd_load(&h->generation);
		if (ngen == 0 || g != gens[ngen - 1]) {
			if (ngen > 0 && g < gens[ngen - 1])
				monotonic = 0;
			if (ngen == MAX_GENS) {
				printf("ERROR: more than %d generations\n", MAX_GENS);
				errors++;
				break;
			}
			gens[ngen] = g;
			count[ngen++] = 0;
			printf("NEWGEN %llu pid %llu after %lu barriers, gap %.1f ms\n",
			       (unsigned long long)g, (unsigned long long)bd_load(&h->daemon_pid),
			       ok - 1, (double)(t - last_ok) / 1e6);
		}
		count[ngen - 1]++;
		last_ok = t;
	}

	if (stat(path, &after)) {
		printf("FAIL: stat(%s) at the end: %s\n", path, strerror(errno));
		return 1;
	}
	printf(
	    "barriers %lu, stale %lu, errors %lu in %.1f s; longest gap between barriers %.1f ms; "
	    "same inode %s\n",
	    ok, stale, errors, (double)(bd_mono_ns() - start) / 1e9, (double)max_gap / 1e6,
	    before.st_ino == after.st_ino && before.st_dev == after.st_dev ? "yes" : "no");
	printf("generations:");
	for (int i = 0; i < ngen; i++)
		printf(" %llu (%llu barriers)", (unsigned long long)gens[i],
		       (unsigned long long)count[i]);
	printf("\n");
	barrierd_close(b);

	if (errors || !monotonic || ngen < 2 || count[0] == 0 || count[ngen - 1] == 0 ||
	    before.st_ino != after.st_ino || before.st_dev != after.st_dev) {
		printf("FAIL\n");
		return 1;
	}
	printf("PASS\n");
	return 0;
}
