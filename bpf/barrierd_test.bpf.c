// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test-only object: the production evidence logic (slot_logic.h) behind a raw_tp entry point
 * that BPF_PROG_TEST_RUN drives with plain arguments on a chosen CPU.  It has its own maps,
 * so a test can never touch a live slot of the production program.
 */
#include "vmlinux_min.h"
#include <barrierd_slot.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "slot_maps.h"

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
