// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Baseline programs for the BPF cost comparison (bench/run.sh, docs/PERFORMANCE.md §7):
 * what the cheapest useful evidence program costs on the same tracepoint.
 *   baseline_stamp  stores bpf_ktime_get_ns() into this CPU's slot (a plain store): the
 *                   program the daemon's ones are compared with (target: within 25 %);
 *   baseline_xchg   the same with the stamp exchanged in (xchg, as DESIGN rule 1 requires):
 *                   what the locked instruction alone costs over the plain store;
 *   baseline_empty  does nothing: the floor of a raw tracepoint program (the getpid table).
 * Loaded and attached one at a time by bench_bpf.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <barrierd_slot.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct barrierd_slot);
	__uint(max_entries, 1); /* resized to the possible CPUs before load */
} slots SEC(".maps");

SEC("raw_tp")
int baseline_stamp(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct barrierd_slot *slot = bpf_map_lookup_elem(&slots, &cpu);

	if (slot)
		*(volatile __u64 *)&slot->stamp = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp")
int baseline_xchg(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct barrierd_slot *slot = bpf_map_lookup_elem(&slots, &cpu);

	if (slot)
		__sync_lock_test_and_set(&slot->stamp, bpf_ktime_get_ns());
	return 0;
}

SEC("raw_tp")
int baseline_empty(void *ctx)
{
	return 0;
}
