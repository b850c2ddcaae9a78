// SPDX-License-Identifier: MIT
/*
 * bench_flood: an unprivileged doorbell flood.  Maps the state file read-only (as any user can)
 * and calls FUTEX_WAKE on the doorbell word in a tight loop for SECONDS.  run.sh runs it as
 * nobody (setpriv --reuid=65534) and measures what it costs the daemon.
 *
 *   bench_flood STATE_PATH SECONDS
 *
 * Prints "flood rings R heard H seconds S": heard counts the FUTEX_WAKEs that found a daemon
 * thread waiting (the others were lost, as the doorbell thread sits out its minimum gap).
 * Links nothing but libc, so that it can be copied where nobody can run it.
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
	const uint8_t *m;
	const uint64_t *doorbell;
	uint64_t rings = 0, heard = 0, t0, end;
	double secs;
	size_t size;

	if (argc != 3 || (secs = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: bench_flood STATE_PATH SECONDS\n");
		return 64;
	}
	m = map_ro(argv[1], &size);
	if (!m) {
		fprintf(stderr, "bench_flood: cannot map %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	doorbell = (const uint64_t *)(m + 112); /* header.doorbell */
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
	printf("flood rings %llu heard %llu seconds %.3f uid %u\n", (unsigned long long)rings,
	       (unsigned long long)heard, (double)(bd_mono_ns() - t0) / 1e9, (unsigned)getuid());
	return 0;
}
