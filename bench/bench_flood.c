// SPDX-License-Identifier: MIT
/*
 * bench_flood: an unprivileged doorbell flood.  Maps the state file read-only (as any user can)
 * and calls FUTEX_WAKE on the doorbell word in a tight loop for SECONDS.  run.sh runs it as
 * nobody (setpriv --reuid=65534) and measures what it costs the daemon.
 *
 *   bench_flood STATE_PATH SECONDS [sleep]
 *
 * With "sleep", a second thread sleeps on the global ns word all along (FUTEX_WAIT, 10 ms at a
 * time), as a waiter would: every ring then has someone waiting for every CPU, the most a ring
 * can ask of the daemon's nudges (docs/DEMAND.md, "Nudges").
 *
 * Prints "flood rings R heard H seconds S": heard counts the FUTEX_WAKEs that found a daemon
 * thread waiting (the others were lost, as the doorbell thread sits out its minimum gap).
 * Links nothing but libc, so that it can be copied where nobody can run it.
 */
#include "bench_common.h"

#include <pthread.h>
#include <stdbool.h>

static volatile int done;

static void *sleeper(void *arg)
{
	const uint64_t *global_ns = arg;

	while (!done)
		bench_futex_wait(global_ns, (uint32_t)bd_load(global_ns), 10000000ULL);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	bool sleeping = argc == 4 && strcmp(argv[3], "sleep") == 0;
	const uint8_t *m;
	const uint64_t *doorbell;
	uint64_t rings = 0, heard = 0, t0, end;
	double secs;
	size_t size;

	if ((argc != 3 && !sleeping) || (secs = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: bench_flood STATE_PATH SECONDS [sleep]\n");
		return 64;
	}
	m = map_ro(argv[1], &size);
	if (!m) {
		fprintf(stderr, "bench_flood: cannot map %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	doorbell = (const uint64_t *)(m + 112); /* header.doorbell */
	if (sleeping && pthread_create(&th, NULL, sleeper, (void *)(m + 16))) { /* global ns */
		fprintf(stderr, "bench_flood: cannot start the sleeper\n");
		return 1;
	}
	t0 = bd_mono_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	for (;;) {
		for (int i = 0; i < 256; i++) {
			long r = bench_futex_wake(doorbell, 1);

			rings++;
			heard += r > 0;
		}
		if (bd_mono_ns() >= end)
			break;
	}
	done = 1;
	if (sleeping)
		pthread_join(th, NULL);
	printf("flood rings %llu heard %llu seconds %.3f uid %u\n", (unsigned long long)rings,
	       (unsigned long long)heard, (double)(bd_mono_ns() - t0) / 1e9, (unsigned)getuid());
	return 0;
}
