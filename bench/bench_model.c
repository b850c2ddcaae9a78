// SPDX-License-Identifier: MIT
/*
 * bench_model: the daemon's per-pass cost against the number of CPUs, measured on its real
 * folding code (publisher_pass() from barrierd_core) driven with simulated slot arrays and a
 * real state file of the right size in a temporary directory.  No BPF, no root needed.
 *
 *   bench_model CSV [MAX_NCPU]
 *
 * For ncpu = 1, 2, 4, ... MAX_NCPU (default 4096), scenarios:
 *   fold-quiet        nothing changed since the last pass (a heartbeat fold on an idle machine)
 *   fold-one-new      one CPU (the oldest, rotating) has a new stamp: the common armed pass on a
 *                     loaded machine, where each signal moves the global minimum
 *   fold-all-new      every CPU has a new stamp (a pass after a long sleep on a loaded machine)
 *   credit-all-idle   a credit pass (doorbell) with every CPU idle: all credited
 *   probe-64          the heartbeat's waiter probe (FUTEX_CMP_REQUEUE on 2 + 2 x 64 words)
 * Each pass is timed on its own; FUTEX_WAKEs per pass come from the publisher's futex_wakes
 * counter.  A last row, futex-wake-nowaiter, times one FUTEX_WAKE on a word nobody waits on.
 * CSV rows: scenario,ncpu,passes,median_ns,mean_ns,p99_ns,wakes_per_pass,file_bytes
 */
#include "bench_common.h"

#include "log.h"
#include "publisher.h"
#include "state_file.h"
#include "bd_sync.h"

#include <stdbool.h>

enum { S_QUIET, S_ONE, S_ALL, S_CREDIT, S_PROBE, NS };
static const char *const scen_names[NS] = {"fold-quiet", "fold-one-new", "fold-all-new",
					   "credit-all-idle", "probe-64"};

#define MAX_PASSES 3000
#define MIN_PASSES 30
#define SCEN_NS (150 * BENCH_MS)

static uint64_t samples[MAX_PASSES];

static void prepare(struct publisher *p, struct barrierd_slot *slots, uint64_t ncpu, int s,
		    uint64_t i)
{
	uint64_t now = bd_mono_ns();

	switch (s) {
	case S_ONE: {
		uint64_t c = i % ncpu;

		__atomic_store_n(&slots[c].stamp, now, __ATOMIC_RELEASE);
		slots[c].vtime = *p->bss_vtime;
		break;
	}
	case S_ALL:
		for (uint64_t c = 0; c < ncpu; c++) {
			__atomic_store_n(&slots[c].stamp, now, __ATOMIC_RELEASE);
			slots[c].vtime = *p->bss_vtime;
		}
		break;
	default:
		break;
	}
}

static void set_states(struct barrierd_slot *slots, uint64_t ncpu, bool idle)
{
	for (uint64_t c = 0; c < ncpu; c++) {
		slots[c].idle = idle ? BARRIERD_SLOT_IDLE : BARRIERD_SLOT_BUSY;
		slots[c].switches = 1;
	}
}

static int run_ncpu(const char *dir, uint64_t ncpu, FILE *csv)
{
	char path[PATH_MAX], err[512];
	struct state_file sf;
	struct publisher p;
	struct barrierd_slot *slots;
	volatile uint64_t bss_vtime = 0, bss_wm = 0;
	bool again;
	int ret;

	snprintf(path, sizeof(path), "%s/state-%llu", dir, (unsigned long long)ncpu);
	memset(&sf, 0, sizeof(sf));
	sf.fd = sf.lock_fd = -1;
	ret = state_file_open(&sf, path, ncpu, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "bench_model: %s\n", err);
		return ret;
	}
	/* The running flag, as the daemon sets it (nothing reads it here). */
	bd_store(&sf.hdr->flags, BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION);
	slots = aligned_alloc(64, ncpu * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0, ncpu * sizeof(*slots));
	ret = publisher_init(&p, &sf, slots, &bss_vtime, &bss_wm, NULL, ncpu, -1);
	if (ret) {
		fprintf(stderr, "bench_model: publisher_init: %s\n", strerror(-ret));
		return ret;
	}

	for (int s = 0; s < NS; s++) {
		uint64_t n = 0, start, wakes0, sum = 0;

		/* Scenario set-up: idle machine or loaded, armed or not, then a settling pass. */
		set_states(slots, ncpu, s == S_QUIET || s == S_CREDIT || s == S_PROBE);
		bool follow = s == S_ONE || s == S_ALL;

		prepare(&p, slots, ncpu, S_ALL, 0);
		if (!publisher_pass_fold(&p, s == S_CREDIT, follow, &again))
			publisher_pass_finish(&p, p.served_pub);
		wakes0 = p.futex_wakes;
		start = bd_mono_ns();
		while (n < MAX_PASSES && (n < MIN_PASSES || bd_mono_ns() - start < SCEN_NS)) {
			uint64_t t0, t1;

			prepare(&p, slots, ncpu, s, n);
			t0 = bd_mono_ns();
			if (s == S_PROBE) {
				publisher_count_legacy(&p, 64, NULL,
						       true); /* as the heartbeat probes */
				ret = 0;
			} else {
				ret = publisher_pass_fold(&p, s == S_CREDIT, follow, &again);
				if (!ret)
					publisher_pass_finish(&p, p.served_pub);
			}
			t1 = bd_mono_ns();
			if (ret) {
				fprintf(stderr, "bench_model: publisher_pass: %s\n",
					strerror(-ret));
				return ret;
			}
			samples[n++] = t1 - t0;
			sum += t1 - t0;
		}
		sort_u64(samples, n);
		fprintf(csv, "%s,%llu,%llu,%llu,%llu,%llu,%.2f,%llu\n", scen_names[s],
			(unsigned long long)ncpu, (unsigned long long)n,
			(unsigned long long)percentile_u64(samples, n, 50),
			(unsigned long long)(sum / n),
			(unsigned long long)percentile_u64(samples, n, 99),
			(double)(p.futex_wakes - wakes0) / (double)n,
			(unsigned long long)barrierd_file_size(ncpu));
		fflush(csv);
	}
	publisher_free(&p);
	state_file_close(&sf);
	unlink(path);
	unlink(sf.lock_path);
	free(slots);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/barrierd-model.XXXXXX";
	uint64_t max = 4096;
	FILE *csv;
	int ret = 0;

	if (argc < 2 || argc > 3 || (argc == 3 && !(max = strtoull(argv[2], NULL, 10)))) {
		fprintf(stderr, "usage: bench_model CSV [MAX_NCPU]\n");
		return 64;
	}
	if (max > BARRIERD_MAX_CPUS)
		max = BARRIERD_MAX_CPUS;
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bench_model: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	csv = bench_csv(argv[1], "scenario,ncpu,passes,median_ns,mean_ns,p99_ns,wakes_per_pass,"
				 "file_bytes");
	if (!csv)
		return 1;
	for (uint64_t n = 1; n <= max && !ret; n *= 2)
		ret = run_ncpu(dir, n, csv);

	/* One FUTEX_WAKE on a shared file word with no waiter: the unit of the wake cost. */
	if (!ret) {
		char path[PATH_MAX];
		int fd;
		uint64_t *word;

		snprintf(path, sizeof(path), "%s/word", dir);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0 && ftruncate(fd, 4096) == 0 &&
		    (word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) !=
			MAP_FAILED) {
			uint64_t t0, k = 200000;

			for (uint64_t i = 0; i < k / 10; i++)
				futex_wake_word(word);
			t0 = bd_mono_ns();
			for (uint64_t i = 0; i < k; i++)
				futex_wake_word(word);
			fprintf(csv, "futex-wake-nowaiter,0,%llu,%llu,%llu,%llu,1.00,0\n",
				(unsigned long long)k,
				(unsigned long long)((bd_mono_ns() - t0) / k),
				(unsigned long long)((bd_mono_ns() - t0) / k),
				(unsigned long long)((bd_mono_ns() - t0) / k));
			munmap(word, 4096);
		}
		if (fd >= 0)
			close(fd);
		unlink(path);
	}
	rmdir(dir);
	fclose(csv);
	return ret ? 1 : 0;
}
