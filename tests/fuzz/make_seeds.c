// SPDX-License-Identifier: MIT
/*
 * make_seeds DIR - write fuzz_state_file's seed corpus (tests/fuzz/corpus/state_file): the
 * fake daemon's images (tests/common/fake_daemon.c) of a few ncpu values, a stopped file, a
 * file not laid out yet, and truncated and corrupted variants.  Times are around 2 s after
 * boot, so that every machine's clock is past them (a later time is refused as another
 * boot's).  Deterministic: the pid and boot id are fixed.
 *   cmake --build build --target fuzz_make_seeds
 *   build/tests/fuzz_make_seeds tests/fuzz/corpus/state_file
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_daemon.h"

#define NOW (2ULL * 1000000000ULL)

static const char *dir;

static void put(const char *name, const void *buf, size_t size)
{
	char p[4096];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "we");
	if (!f || fwrite(buf, 1, size, f) != size || fclose(f)) {
		perror(p);
		exit(1);
	}
}

static void *image(uint64_t ncpu, int labelled, size_t *size)
{
	void *buf = calloc(1, barrierd_file_size(ncpu));
	struct barrierd_header *h = buf;

	if (labelled)
		fake_label(buf, ncpu, NOW);
	else
		fake_fill(buf, ncpu, NOW);
	h->daemon_pid = 4242;
	memset(h->boot_id, 0x5a, sizeof(h->boot_id));
	*size = barrierd_file_size(ncpu);
	return buf;
}

int main(int argc, char **argv)
{
	static const uint64_t ncpus[] = {1, 2, 4, 64};
	char name[64];
	size_t size;
	void *buf;
	struct barrierd_header *h;
	struct barrierd_ext *x;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	for (size_t i = 0; i < sizeof(ncpus) / sizeof(ncpus[0]); i++) {
		buf = image(ncpus[i], 0, &size);
		snprintf(name, sizeof(name), "live_ncpu%llu", (unsigned long long)ncpus[i]);
		put(name, buf, size);
		free(buf);
	}
	buf = image(2, 1, &size);
	put("labelled_ncpu2", buf, size);
	free(buf);

	/* Stopped: the stop snapshot, the flag; values stay. */
	buf = image(4, 0, &size);
	h = buf;
	x = test_ext_of(buf, 4);
	x->stop_ns = h->last_interrupt_ns;
	x->stop_vtime = h->last_interrupt_vtime;
	h->flags = BARRIERD_FLAG_STOPPED | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL;
	put("stopped_ncpu4", buf, size);
	/* Running and stopped at once, a stale heartbeat, a period of 0: liveness' corners. */
	h->flags |= BARRIERD_FLAG_RUNNING;
	h->heartbeat_period_ns = 0;
	h->heartbeat_ns = NOW / 2;
	put("running_and_stopped", buf, size);
	free(buf);

	/* Laid out, not started: no extension yet, only the per-CPU array. */
	buf = image(2, 0, &size);
	h = buf;
	h->flags = 0;
	h->ext_offset = 0;
	put("no_extension_ncpu2", buf, sizeof(*h) + 2 * sizeof(struct barrierd_cpu));
	free(buf);

	/* Corrupted and truncated variants of a valid 4-CPU file. */
	buf = image(4, 0, &size);
	h = buf;
	put("truncated_header", buf, sizeof(*h) - 1);
	put("truncated_percpu", buf, sizeof(*h) + 4 * sizeof(struct barrierd_cpu) - 1);
	put("truncated_ext", buf, size - 1);
	h->magic ^= 1;
	put("bad_magic", buf, size);
	h->magic ^= 1;
	h->abi_major = 2;
	put("abi_major_2", buf, size);
	h->abi_major = BARRIERD_ABI_MAJOR;
	h->abi_minor = 7;
	put("abi_minor_7", buf, size);
	h->abi_minor = 0;
	h->ncpu = 0;
	put("ncpu_0", buf, size);
	h->ncpu = BARRIERD_MAX_CPUS + 1;
	put("ncpu_8193", buf, size);
	h->ncpu = 5;
	put("ncpu_above_size", buf, size);
	h->ncpu = 4;
	h->ext_offset += 4;
	put("ext_misaligned", buf, size);
	h->ext_offset = size;
	put("ext_at_end", buf, size);
	h->ext_offset = UINT64_MAX - 7;
	put("ext_far", buf, size);
	h->ext_offset = barrierd_ext_offset(4);
	test_ext_of(buf, 4)->ext_cpu_stride = 16;
	put("ext_stride_16", buf, size);
	test_ext_of(buf, 4)->ext_cpu_stride = sizeof(struct barrierd_ext_cpu);
	h->per_cpu[3].last_interrupt_ns = UINT64_MAX;
	put("time_from_future", buf, size);
	free(buf);
	return 0;
}
