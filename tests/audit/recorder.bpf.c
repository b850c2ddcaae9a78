// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The evidence audit's recorder: an independent log of every serialising event the daemon
 * may use as evidence, with its time, and of every context switch (from which the auditor
 * derives when each CPU ran its idle task).  It shares no code and no map with the daemon's
 * programs (bpf/): a bug there cannot hide here.
 *
 * Probe order is attach order, and the harness keeps two instances of this object attached:
 * one after the daemon's programs (on a shared event the daemon has already exchanged its
 * stamp when this one reads the clock, so a valid stamp just after T is never logged at or
 * before T) and one before them (which reads the clock before the stamp, so a valid stamp
 * just before t_done is never logged after t_done).  audit_main.c explains why both.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/unistd_64.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "audit_record.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

typedef _Bool bool;

/* Only the fields we read; CO-RE relocates them against the running kernel's BTF. */
struct task_struct {
	int pid;
} __attribute__((preserve_access_index));

struct pt_regs {
	unsigned long si; /* a syscall's second argument: pread()'s buffer */
	unsigned long orig_ax;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20); /* ~1M records: seconds of a busy machine */
} audit_rb SEC(".maps");

/* One counter per CPU; every CPU only touches its own, so gaps mean lost records. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, AUDIT_MAX_CPUS);
} audit_seq SEC(".maps");

/* The daemon's pread() calls in flight, by thread: entry time and CPU. */
struct enter {
	__u64 time;
	__u64 buf;
	__u32 cpu;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct enter);
	__uint(max_entries, 64);
} audit_enter SEC(".maps");

/* Records that found the ring buffer full: any of them invalidates the run. */
volatile __u64 audit_drops;
/* The daemon's process id (global), set by the harness at every daemon start. */
volatile __u32 audit_daemon_tgid;

static __always_inline void record(__u64 now, __u64 since, __u32 kind, __u32 prev_pid,
				   __u32 next_pid)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct audit_record *r;
	__u64 *seq;
	__u64 n;

	seq = bpf_map_lookup_elem(&audit_seq, &cpu);
	if (!seq) {
		__sync_fetch_and_add(&audit_drops, 1);
		return;
	}
	/* Atomic although per CPU: an irq-context probe can interrupt a softirq-context one. */
	n = __sync_fetch_and_add(seq, 1);
	r = bpf_ringbuf_reserve(&audit_rb, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&audit_drops, 1);
		return;
	}
	r->time = now;
	r->since = since;
	r->cpu = cpu;
	r->seq = (__u32)n;
	r->kind = kind;
	r->prev_pid = prev_pid;
	r->next_pid = next_pid;
	r->pad = 0;
	/* The auditor polls; a wake-up per record would flood the machine with its own events. */
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

SEC("raw_tp")
int audit_softirq(void *ctx)
{
	/* The clock first: as close as possible behind the daemon's probe on the same event. */
	__u64 now = bpf_ktime_get_ns();

	record(now, now, AUDIT_EV_SOFTIRQ, 0, 0);
	return 0;
}

SEC("raw_tp")
int audit_timer(void *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	record(now, now, AUDIT_EV_TIMER, 0, 0);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(audit_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();

	record(now, now, AUDIT_EV_SWITCH, (__u32)prev->pid, (__u32)next->pid);
	return 0;
}

/* What the kernel returned to the daemon's read of the online mask (AUDIT_EV_ONLINE_MASK). */
static __always_inline void record_mask(__u64 now, __u64 since, __u64 buf, long len)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct audit_mask_record *r;
	__u64 *seq;
	__u64 n;

	seq = bpf_map_lookup_elem(&audit_seq, &cpu);
	if (!seq) {
		__sync_fetch_and_add(&audit_drops, 1);
		return;
	}
	n = __sync_fetch_and_add(seq, 1);
	r = bpf_ringbuf_reserve(&audit_rb, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&audit_drops, 1);
		return;
	}
	r->rec.time = now;
	r->rec.since = since;
	r->rec.cpu = cpu;
	r->rec.seq = (__u32)n;
	r->rec.kind = AUDIT_EV_ONLINE_MASK;
	r->rec.prev_pid = 0;
	r->rec.next_pid = 0;
	r->rec.pad = 0;
	r->len = (__u32)len;
	r->pad = 0;
	/* A failed copy leaves no list: the auditor then finds no CPU offline in it. */
	if (bpf_probe_read_user(r->mask, sizeof(r->mask), (const void *)buf))
		r->len = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

static __always_inline int is_daemon(__u64 pid_tgid)
{
	__u32 tgid = audit_daemon_tgid;

	return tgid && (__u32)(pid_tgid >> 32) == tgid;
}

/*
 * The daemon's pread() calls: its only one reads the online mask, in every credit pass, right
 * before the idle RMWs and after its clock read.  A sysfs read takes a mutex on the calling
 * CPU (the seq_file's, or the open file's): a locked instruction between entry and return.
 * (fentry on the kernfs read function would touch less, but this kernel refuses it.)
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(audit_sys_enter, struct pt_regs *regs, long id)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct enter e = {.time = now, .buf = regs->si, .cpu = bpf_get_smp_processor_id()};
	__u32 tid = (__u32)pid_tgid;

	if (id != __NR_pread64 || !is_daemon(pid_tgid))
		return 0;
	bpf_map_update_elem(&audit_enter, &tid, &e, BPF_ANY);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(audit_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct enter *e;

	if (regs->orig_ax != __NR_pread64 || !is_daemon(pid_tgid))
		return 0;
	e = bpf_map_lookup_elem(&audit_enter, &tid);
	if (!e)
		return 0;
	/* Entered elsewhere: the thread moved, through switches that are logged themselves. */
	if (e->cpu == bpf_get_smp_processor_id())
		record(now, e->time, AUDIT_EV_LOCKED_KERNEL, 0, 0);
	if (ret > 0)
		record_mask(now, e->time, e->buf, ret);
	bpf_map_delete_elem(&audit_enter, &tid);
	return 0;
}
