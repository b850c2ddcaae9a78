// SPDX-License-Identifier: MIT
/*
 * A client written against the ORIGINAL barrierd layout only: the 128-byte header and the
 * 16-byte per-CPU entries, nothing of ours (no barrierd.h, no doorbell).  It waits on the
 * global word as programs built for the original do:
 *   original_client STATE_PATH ROUNDS
 * Exit 0 when every round's barrier passed, 1 on a timeout (hang guard), 2 on bad usage.
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

static uint64_t fenced_now(void)
{
	struct timespec ts;

	__asm__ __volatile__("mfence; lfence" ::: "memory");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct barrierd_mapped_data *d;
	struct stat st;
	int fd, rounds;

	if (argc != 3 || (rounds = atoi(argv[2])) <= 0)
		return 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || st.st_size < 128)
		return 2;
	d = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (d == MAP_FAILED)
		return 2;
	for (int i = 0; i < rounds; i++) {
		uint64_t t = fenced_now(), start = t;

		for (;;) {
			uint32_t w = __atomic_load_n((uint32_t *)&d->last_interrupt_ns,
						     __ATOMIC_ACQUIRE);
			struct timespec to = {0, 50 * 1000000L};

			if (__atomic_load_n(&d->last_interrupt_ns, __ATOMIC_ACQUIRE) > t)
				break;
			if (fenced_now() - start > 5000000000ULL) {
				fprintf(stderr, "round %d: no barrier within 5 s\n", i);
				return 1;
			}
			syscall(SYS_futex, &d->last_interrupt_ns, FUTEX_WAIT, w, &to, NULL, 0);
		}
		for (uint64_t c = 0; c < d->ncpu; c++) {
			if (__atomic_load_n(&d->per_cpu[c].last_interrupt_ns, __ATOMIC_ACQUIRE) <= t) {
				fprintf(stderr, "round %d: cpu %llu not past the stamp\n", i,
					(unsigned long long)c);
				return 1;
			}
		}
	}
	printf("original_client: %d barriers passed\n", rounds);
	return 0;
}
