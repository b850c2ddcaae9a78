// SPDX-License-Identifier: MIT
/*
 * bench_legacy: a client that knows only the ORIGINAL barrierd layout, used the way such
 * clients use it, against membarrier(MEMBARRIER_CMD_GLOBAL) in the same run.
 *
 *   bench_legacy STATE_PATH SECONDS CONFIG REP CSV [MAX_GAP_MS]
 *
 * What it knows: a 128-byte header (ncpu, vtime, last_interrupt_ns, last_interrupt_vtime, 96
 * reserved bytes) and 16-byte per-CPU entries.  No doorbell, no extension, no libbarrierd: it
 * never asks the daemon for anything, so it sees what an old binary sees.
 *
 * Three barrier kinds, each round in a random order, each call after a random sleep of
 * 0..MAX_GAP_MS (default 100) ms, so that no call follows another's IPIs or the tick phase of
 * the previous call:
 *   legacy-ns   fenced stamp T, FUTEX_WAIT on the low half of last_interrupt_ns with a 10 ms
 *               timeout, re-checking all 64 bits, until last_interrupt_ns > T
 *   legacy-vtime  fenced stamp T first, then MFENCE and load vtime V, FUTEX_WAIT on the low
 *               half of last_interrupt_vtime (10 ms timeout) until it is > V; then check
 *               last_interrupt_ns > T: a vtime barrier the ns word has not yet caught up
 *               with is counted (ns_passed 0)
 *   membarrier-global  membarrier(MEMBARRIER_CMD_GLOBAL)
 *
 * A call that has not passed after 2 s is recorded with timeout 1 and its latency so far.
 * Calls that start in the first second are marked warm (the report leaves them out).
 * CSV rows: config,rep,method,index,start_ns,latency_ns,warm,timeout,ns_passed
 */
#include "bench_common.h"

#include <linux/membarrier.h>

#define LEGACY_FUTEX_TIMEOUT (10 * BENCH_MS)
#define LEGACY_GIVE_UP (2 * BENCH_SEC)
#define LEGACY_WARMUP BENCH_SEC

struct legacy_map {
	uint64_t ncpu, vtime, last_interrupt_ns, last_interrupt_vtime;
	uint8_t reserved[96];
};

struct legacy_cpu {
	uint64_t last_interrupt_ns, last_interrupt_vtime;
};

_Static_assert(sizeof(struct legacy_map) == 128, "the original header is 128 bytes");
_Static_assert(sizeof(struct legacy_cpu) == 16, "the original per-CPU entry is 16 bytes");

enum kind { K_NS, K_VTIME, K_MEMBARRIER, K_COUNT };
static const char *const kind_names[K_COUNT] = {"legacy-ns", "legacy-vtime", "membarrier-global"};

struct sample {
	uint64_t latency_ns;
	int timeout;
	int ns_passed; /* legacy-vtime only; -1 otherwise */
};

/* xorshift64*: the gaps and the order only need to be spread, not unpredictable. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

/* Wait until *word > after, the way the original clients do: a 10 ms futex wait at a time. */
static int legacy_wait(const uint64_t *word, uint64_t after, uint64_t start)
{
	for (;;) {
		uint32_t w = bd_load_low(word);

		if (bd_load(word) > after)
			return 0;
		if (bd_mono_ns() - start > LEGACY_GIVE_UP)
			return -ETIMEDOUT;
		bench_futex_wait(word, w, LEGACY_FUTEX_TIMEOUT);
	}
}

static int call(const struct legacy_map *m, enum kind k, struct sample *s)
{
	uint64_t start = bd_mono_ns(), t, v;
	int ret = 0;

	s->ns_passed = -1;
	switch (k) {
	case K_NS:
		bd_stamp_fence();
		t = bd_mono_ns();
		ret = legacy_wait(&m->last_interrupt_ns, t, start);
		break;
	case K_VTIME:
		/* T first, then the vtime: a pass of vtime V+1 must have seen events after T. */
		bd_stamp_fence();
		t = bd_mono_ns();
		bd_mfence();
		v = bd_load(&m->vtime);
		ret = legacy_wait(&m->last_interrupt_vtime, v, start);
		if (!ret)
			s->ns_passed = bd_load(&m->last_interrupt_ns) > t;
		break;
	default:
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
			return -errno;
		break;
	}
	s->latency_ns = bd_mono_ns() - start;
	s->timeout = ret == -ETIMEDOUT;
	return ret == -ETIMEDOUT ? 0 : ret;
}

static const struct legacy_map *map_legacy(const char *path)
{
	const struct legacy_map *m;
	size_t size;

	m = map_ro(path, &size);
	if (!m)
		return NULL;
	if (size < sizeof(*m) || bd_load(&m->ncpu) == 0 ||
	    bd_load(&m->ncpu) > (size - sizeof(*m)) / sizeof(struct legacy_cpu)) {
		errno = EPROTO;
		return NULL;
	}
	return m;
}

int main(int argc, char **argv)
{
	uint64_t n[K_COUNT] = {0}, t0, end, max_gap = 100 * BENCH_MS, vtime_fail = 0, vtime_n = 0;
	const struct legacy_map *m;
	double secs;
	FILE *csv;

	if ((argc != 6 && argc != 7) || (secs = atof(argv[2])) <= 0) {
		fprintf(stderr,
			"usage: bench_legacy STATE_PATH SECONDS CONFIG REP CSV [MAX_GAP_MS]\n");
		return 64;
	}
	if (argc == 7)
		max_gap = strtoull(argv[6], NULL, 10) * BENCH_MS;
	m = map_legacy(argv[1]);
	if (!m) {
		fprintf(stderr, "bench_legacy: cannot map %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	csv = bench_csv(argv[5],
			"config,rep,method,index,start_ns,latency_ns,warm,timeout,ns_passed");
	if (!csv)
		return 1;
	t0 = bd_mono_ns();
	rng_state = t0 | 1;
	end = t0 + (uint64_t)(secs * 1e9);
	while (bd_mono_ns() < end) {
		enum kind order[K_COUNT] = {K_NS, K_VTIME, K_MEMBARRIER};

		for (int i = K_COUNT - 1; i > 0; i--) {
			int j = (int)(rng_next() % (uint64_t)(i + 1));
			enum kind x = order[i];

			order[i] = order[j];
			order[j] = x;
		}
		for (int i = 0; i < K_COUNT; i++) {
			struct sample s = {0};
			uint64_t start;
			int ret;

			if (max_gap)
				bench_sleep_ns(rng_next() % (max_gap + 1));
			start = bd_mono_ns();
			ret = call(m, order[i], &s);
			if (ret) {
				fprintf(stderr, "bench_legacy: %s: %s\n", kind_names[order[i]],
					strerror(-ret));
				return 1;
			}
			fprintf(csv, "%s,%s,%s,%llu,%llu,%llu,%d,%d,%s\n", argv[3], argv[4],
				kind_names[order[i]], (unsigned long long)n[order[i]]++,
				(unsigned long long)(start - t0), (unsigned long long)s.latency_ns,
				start - t0 < LEGACY_WARMUP, s.timeout,
				s.ns_passed < 0 ? ""
				: s.ns_passed	? "1"
						: "0");
			if (s.ns_passed >= 0 && start - t0 >= LEGACY_WARMUP) {
				vtime_n++;
				vtime_fail += !s.ns_passed;
			}
		}
	}
	if (fclose(csv)) {
		fprintf(stderr, "bench_legacy: cannot write %s\n", argv[5]);
		return 1;
	}
	printf("legacy %s rep %s: calls ns %llu vtime %llu membarrier %llu; vtime passes with the "
	       "ns word not yet past T: %llu of %llu\n",
	       argv[3], argv[4], (unsigned long long)n[K_NS], (unsigned long long)n[K_VTIME],
	       (unsigned long long)n[K_MEMBARRIER], (unsigned long long)vtime_fail,
	       (unsigned long long)vtime_n);
	return 0;
}
