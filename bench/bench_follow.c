// SPDX-License-Identifier: MIT
/*
 * bench_follow: what one unprivileged user can make a following daemon spend
 * (docs/DEMAND.md, "Following"; docs/THREAT-MODEL.md).  Maps the state file read-only, as any user
 * can, and for SECONDS runs any mix of:
 *
 *   sleepers N  N threads asleep on the global ns word (offset 16) without the library's mark:
 *               FUTEX_WAIT on the current value, 100 ms at a time, again at once after every
 *               wake.  The daemon takes them for clients that cannot ring and follows.
 *   pingpong N  N pairs of threads bouncing a byte over two pipes: a context switch on each
 *               side per bounce, each one an event a following daemon hears.
 *   ring        one thread calling FUTEX_WAKE on the doorbell word (offset 112) in a loop.
 *   yield       two threads pinned to CPU 1 calling sched_yield() (a switch flood).
 *
 *   bench_follow STATE_PATH SECONDS [sleepers N] [pingpong N] [ring] [yield]
 *
 * Prints one line: "follow-attack sleepers S pingpong P rings R bounces B seconds T uid U".
 * Links nothing but libc and barrierd_internal's helpers, so that it can be copied where user
 * nobody can run it (bench/follow_attack.sh runs it so).
 */
#include "bench_common.h"

#include <pthread.h>
#include <stdbool.h>

#define MAX_THREADS 64

static volatile int done;
static const uint8_t *map;

static void *sleeper(void *arg)
{
	const uint64_t *global_ns = (const uint64_t *)(map + 16);

	(void)arg;
	while (!done)
		bench_futex_wait(global_ns, (uint32_t)bd_load(global_ns), 100 * BENCH_MS);
	return NULL;
}

struct pong {
	int in, out;
	bool first;
	uint64_t bounces;
};

static void *pingpong(void *arg)
{
	struct pong *p = arg;
	char c = 0;

	if (p->first && write(p->out, &c, 1) != 1)
		return NULL;
	while (!done) {
		if (read(p->in, &c, 1) != 1 || write(p->out, &c, 1) != 1)
			break;
		p->bounces++;
	}
	return NULL;
}

static uint64_t rings;

static void *ringer(void *arg)
{
	const uint64_t *doorbell = (const uint64_t *)(map + 112);

	(void)arg;
	while (!done) {
		for (int i = 0; i < 256; i++)
			bench_futex_wake(doorbell, 1);
		rings += 256;
	}
	return NULL;
}

static void *yielder(void *arg)
{
	(void)arg;
	bench_pin(1);
	while (!done)
		sched_yield();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	struct pong pongs[2 * 16];
	int nth = 0, sleepers = 0, pairs = 0;
	bool ring = false, yield = false;
	uint64_t t0, bounces = 0;
	double secs;
	size_t size;

	if (argc < 3 || (secs = atof(argv[2])) <= 0)
		goto usage;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "sleepers") == 0 && i + 1 < argc)
			sleepers = atoi(argv[++i]);
		else if (strcmp(argv[i], "pingpong") == 0 && i + 1 < argc)
			pairs = atoi(argv[++i]);
		else if (strcmp(argv[i], "ring") == 0)
			ring = true;
		else if (strcmp(argv[i], "yield") == 0)
			yield = true;
		else
			goto usage;
	}
	if (sleepers < 0 || sleepers > 16 || pairs < 0 || pairs > 16)
		goto usage;
	map = map_ro(argv[1], &size);
	if (!map) {
		fprintf(stderr, "bench_follow: cannot map %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (int i = 0; i < sleepers; i++)
		if (pthread_create(&th[nth++], NULL, sleeper, NULL))
			return 2;
	for (int i = 0; i < pairs; i++) {
		int a[2], b[2];

		if (pipe(a) || pipe(b))
			return 2;
		pongs[2 * i] = (struct pong){.in = a[0], .out = b[1], .first = true};
		pongs[2 * i + 1] = (struct pong){.in = b[0], .out = a[1]};
		if (pthread_create(&th[nth++], NULL, pingpong, &pongs[2 * i]) ||
		    pthread_create(&th[nth++], NULL, pingpong, &pongs[2 * i + 1]))
			return 2;
	}
	if (ring && pthread_create(&th[nth++], NULL, ringer, NULL))
		return 2;
	for (int i = 0; yield && i < 2; i++)
		if (pthread_create(&th[nth++], NULL, yielder, NULL))
			return 2;
	t0 = bd_mono_ns();
	bench_sleep_ns((uint64_t)(secs * 1e9));
	done = 1;
	/* The pairs block in read(): end them without joining, as the process exits. */
	for (int i = 0; i < 2 * pairs; i++)
		bounces += pongs[i].bounces;
	printf("follow-attack sleepers %d pingpong %d rings %llu bounces %llu seconds %.3f uid "
	       "%u\n",
	       sleepers, pairs, (unsigned long long)rings, (unsigned long long)bounces,
	       (double)(bd_mono_ns() - t0) / 1e9, (unsigned)getuid());
	fflush(stdout);
	_exit(0);
usage:
	fprintf(stderr, "usage: bench_follow STATE_PATH SECONDS [sleepers N] [pingpong N] [ring] "
			"[yield]\n");
	return 64;
}
