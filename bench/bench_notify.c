// SPDX-License-Identifier: MIT
/*
 * bench_notify: notification latency, from the daemon's update that advanced the global value
 * (the extension's last_advance_ns, written just before the global word and its FUTEX_WAKE) to
 * the waiter running again.
 *
 *   bench_notify STATE_PATH SAMPLES CONDITION CSV
 *
 * Each sample: sleep 0.5-2 ms (so the machine settles as it would between barriers), take a
 * fenced stamp T, ring the doorbell when the library would (daemon disarmed, or a CPU at or below
 * T that is not busy), and FUTEX_WAIT on the global word until it exceeds T.  Right after the
 * futex returns: clock - last_advance_ns.  Samples where the barrier passed without the waiter
 * sleeping measure nothing and are counted, not recorded.
 * CSV rows: condition,index,notify_ns,barrier_ns,cause,cause_cpu,waiter_cpu
 */
#include "bench_common.h"

#include <barrierd.h>

static const struct barrierd_header *hdr;
static const struct barrierd_ext *ext;

/* libbarrierd's need_ring(), for the global ns word. */
static int need_ring(uint64_t t)
{
	uint64_t f = bd_load(&hdr->flags);

	if (!(f & BARRIERD_FEAT_DOORBELL))
		return 0;
	if (!(f & BARRIERD_FLAG_ARMED))
		return 1;
	for (uint64_t c = 0; c < hdr->ncpu; c++)
		if (bd_load(&hdr->per_cpu[c].last_interrupt_ns) <= t &&
		    bd_load(&ext->cpu[c].state) != BARRIERD_CPU_BUSY)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct barrierd *b;
	uint64_t n, recorded = 0, unslept = 0, later = 0;
	FILE *csv;
	size_t size;
	int ret;

	if (argc != 5 || !(n = strtoull(argv[2], NULL, 10))) {
		fprintf(stderr, "usage: bench_notify STATE_PATH SAMPLES CONDITION CSV\n");
		return 64;
	}
	ret = barrierd_open(&b, argv[1]);
	if (ret) {
		fprintf(stderr, "bench_notify: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	hdr = barrierd_mapping(b, &size);
	if (!hdr->ext_offset || hdr->ext_offset >= size) {
		fprintf(stderr, "bench_notify: no extension in %s\n", argv[1]);
		return 1;
	}
	ext = (const void *)((const char *)hdr + hdr->ext_offset);
	csv = bench_csv(argv[4], "condition,index,notify_ns,barrier_ns,cause,cause_cpu,waiter_cpu");
	if (!csv)
		return 1;
	srand((unsigned)getpid());

	for (uint64_t i = 0; i < n; i++) {
		uint64_t t, tw = 0, adv1, adv2, cause, guard;
		int slept = 0;

		bench_sleep_ns(500000 + (uint64_t)(rand() % 1500000));
		t = barrierd_stamp_ns(b);
		guard = t + 5 * BENCH_SEC;
		for (;;) {
			uint32_t snap = bd_load_low(&hdr->last_interrupt_ns);
			long r;

			if (bd_load(&hdr->last_interrupt_ns) > t)
				break;
			if (need_ring(t))
				bench_ring(&hdr->doorbell, &hdr->last_interrupt_ns, t);
			if (bd_load(&hdr->last_interrupt_ns) > t)
				break;
			r = bench_futex_wait(&hdr->last_interrupt_ns, snap, 20 * BENCH_MS);
			tw = bd_mono_ns();
			if (r == 0 && bd_load(&hdr->last_interrupt_ns) > t) {
				slept = 1;
				break;
			}
			if (tw > guard) {
				fprintf(stderr, "bench_notify: no barrier within 5 s\n");
				return 1;
			}
		}
		if (!slept) {
			unslept++;
			continue;
		}
		/* The advance that woke us, unless another one came since (then skip the sample).
		 */
		do {
			adv1 = bd_load(&ext->last_advance_ns);
			cause = bd_load(&ext->last_advance_cause);
			adv2 = bd_load(&ext->last_advance_ns);
		} while (adv1 != adv2);
		if (adv1 > tw || adv1 <= t) {
			later++;
			continue;
		}
		fprintf(csv, "%s,%llu,%llu,%llu,%u,%u,%d\n", argv[3], (unsigned long long)i,
			(unsigned long long)(tw - adv1), (unsigned long long)(tw - t),
			BARRIERD_CAUSE_KIND(cause), BARRIERD_CAUSE_CPU(cause), sched_getcpu());
		recorded++;
	}
	fclose(csv);
	printf("bench_notify %s: %llu samples recorded, %llu passed before the waiter slept, %llu "
	       "skipped (a later advance)\n",
	       argv[3], (unsigned long long)recorded, (unsigned long long)unslept,
	       (unsigned long long)later);
	barrierd_close(b);
	return 0;
}
