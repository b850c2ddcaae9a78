// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* barrierd's evidence programs: stamp per CPU when it takes a serialising event. */
#include "vmlinux_min.h"
#include <barrierd_slot.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "slot_maps.h"
volatile __u64 whoami_tid;

#include "slot_logic.h"

/*
 * One raw_tp program serves every irq- and process-context evidence tracepoint.  Raw
 * tracepoint programs' return values are ignored, so other tracers keep their events.
 */
SEC("raw_tp")
int barrierd_event(void *ctx)
{
	return on_event(bpf_get_smp_processor_id(), (__u32)bpf_get_current_pid_tgid());
}

/* sched_switch runs with IRQs off and never nests; it has its own program (rule 6). */
SEC("tp_btf/sched_switch")
int BPF_PROG(barrierd_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	/* tp_btf arguments are typed kernel pointers: direct, CO-RE-relocated loads. */
	return on_switch(bpf_get_smp_processor_id(), (__u32)prev->pid, (__u32)next->pid);
}

/*
 * Never attached: the daemon runs it with BPF_PROG_TEST_RUN from each of its threads to learn
 * the thread's global tid, which is what the programs above see even when the daemon runs in
 * a pid namespace (systemd-nspawn), where gettid() differs.
 */
SEC("raw_tp")
int barrierd_whoami(void *ctx)
{
	whoami_tid = (__u32)bpf_get_current_pid_tgid();
	return 0;
}
