// SPDX-License-Identifier: MIT
/*
 * A client written against the ORIGINAL barrierd layout only: the 128-byte header and the
 * 16-byte per-CPU entries, nothing of ours (no barrierd.h, no doorbell; only the primitives of
 * bd_sync.h and a plain mapping).  It waits on the global word as programs built for the
 * original do:
 *   original_client STATE_PATH ROUNDS
 * Exit 0 when every round's barrier passed, 1 on a timeout (hang guard), 2 on bad usage.
 */
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bd_sync.h"
#include "map_ro.h"

struct barrierd_mapped_data {
	uint64_t ncpu;
	uint64_t vtime;
	uint64_t last_interrupt_ns;
	uint64_t last_interrupt_vtime;
	uint8_t reserved[96];
	struct {
		uint64_t last_interrupt_ns;
		uint64_t last_interrupt_vtime;
	} per_cpu[];
};

int main(int argc, char **argv)
{
	const struct barrierd_mapped_data *d;
	size_t size;
	int rounds;

	if (argc != 3 || (rounds = atoi(argv[2])) <= 0)
		return 2;
	d = map_ro(argv[1], &size);
	if (!d)
		return 2;
	for (int i = 0; i < rounds; i++) {
		uint64_t t, start;

		bd_stamp_fence();
		t = start = bd_mono_ns();
		for (;;) {
			uint32_t w = bd_load_low(&d->last_interrupt_ns);
			struct timespec to = {0, 50 * 1000000L};

			if (bd_load(&d->last_interrupt_ns) > t)
				break;
			if (bd_mono_ns() - start > 5000000000ULL) {
				fprintf(stderr, "round %d: no barrier within 5 s\n", i);
				return 1;
			}
			syscall(SYS_futex, &d->last_interrupt_ns, FUTEX_WAIT, w, &to, NULL, 0);
		}
		for (uint64_t c = 0; c < bd_load(&d->ncpu); c++) {
			if (bd_load(&d->per_cpu[c].last_interrupt_ns) <= t) {
				fprintf(stderr, "round %d: cpu %llu not past the stamp\n", i,
					(unsigned long long)c);
				return 1;
			}
		}
	}
	printf("original_client: %d barriers passed\n", rounds);
	return 0;
}
