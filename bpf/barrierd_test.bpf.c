// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test-only object: the production evidence logic (slot_logic.h) behind a raw_tp entry point
 * that BPF_PROG_TEST_RUN drives with plain arguments on a chosen CPU.  It has its own maps,
 * so a test can never touch a live slot of the production program.
 */
#include "vmlinux_min.h"
#include "barrierd_slot.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct barrierd_slot);
	__uint(max_entries, 1);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096 * 4);
} signal_rb SEC(".maps");

volatile __u64 vtime;
volatile __u64 watermark;
volatile __u64 switch_stamps;
volatile __u64 main_tid;
volatile __u64 main_switches;
volatile __u32 daemon_tids[BARRIERD_MAX_DAEMON_TIDS];

#include "slot_logic.h"

#define TEST_OP_EVENT 0
#define TEST_OP_SWITCH 1

/* args: op, current/prev tid, next pid */
SEC("raw_tp")
int barrierd_test_entry(__u64 *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (ctx[0] == TEST_OP_SWITCH)
		return on_switch(cpu, (__u32)ctx[1], (__u32)ctx[2]);
	return on_event(cpu, (__u32)ctx[1]);
}
