/* SPDX-License-Identifier: MIT */
/*
 * User-space side of the evidence audit's recorder: instances of recorder.bpf.c, each attached
 * at one moment (after the daemon it must follow), drained into per-CPU logs, and the question
 * the auditor asks of those logs: did CPU c pass through a serialising event, or sit in its
 * idle task (or offline), at some instant in (lo, hi]?
 */
#ifndef BARRIERD_AUDIT_RECORDER_H
#define BARRIERD_AUDIT_RECORDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REC_MAX_INSTANCES 8
#define REC_AHEAD_MAX 256 /* out-of-order sequence numbers held per CPU (nested probes) */

struct rec_ev {
	uint64_t time;	/* first: upper_bound() finds it there */
	uint64_t since; /* = time, but for a daemon's pread: its entry (audit_record.h) */
	uint32_t kind;	/* AUDIT_EV_* */
	uint32_t pad;
};

struct rec_switch {
	uint64_t time; /* first, as in rec_ev */
	uint32_t prev_pid, next_pid;
};

/* What one instance saw on one CPU. */
struct rec_log {
	struct rec_ev *ev; /* every recorded event (switches too), sorted by time before use */
	size_t n_ev, cap_ev;
	bool ev_sorted;
	struct rec_switch *sw; /* switches in the order they ran (they never nest) */
	size_t n_sw, cap_sw;
	/* sequence bookkeeping: every number below next_seq arrived */
	uint64_t next_seq;
	uint32_t ahead[REC_AHEAD_MAX];
	unsigned n_ahead;
	/* flush bookkeeping: the flush thread's switch onto this CPU, once seen */
	bool flush_seen;
	uint32_t flush_seq;
	/* offline when the instance was attached: idle-equivalent from offline_ns to the first
	 * switch */
	bool offline_at_attach;
	uint64_t offline_ns;
};

struct rec_instance {
	int id;
	struct recorder_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[5];
	uint64_t attach_ns;
	uint64_t cover_end; /* UINT64_MAX while attached; else a time before the detach began */
	bool live;
	struct rec_log *cpu; /* [ncpu] */
	struct recorder *owner;
};

struct recorder {
	pthread_mutex_t lock;
	pthread_t drainer;
	bool drainer_running;
	volatile bool stop;
	int ncpu; /* possible CPUs */
	struct rec_instance *inst[REC_MAX_INSTANCES];
	int n_inst;
	/* flush in progress: the tid whose switches onto each CPU mark completeness */
	uint32_t flush_tid;
	uint64_t flush_start;
	/* first fatal problem (lost record, switch chain broken, ...): the run cannot be audited */
	char error[512];
	uint64_t records;
	/* attach time of the first instance attached after the current daemon started */
	uint64_t daemon_after_ns;
	/*
	 * Accept an event whose two readings bracket the window (--bracket-lenient: guests only,
	 * where the host may deschedule a vCPU between two probes), and how many were.
	 */
	bool bracket_lenient;
	uint64_t bracketed;
	uint64_t behind_pinned; /* stamps pinned by the instance behind the daemon alone */
	uint64_t
	    untraced_switches; /* switches away from a task that never reached the tracepoint */
	/*
	 * When CPUs were offline.  Intervals the audit's own hotplug driver measured
	 * (recorder_note_offline): the CPU's online bit was clear throughout (from, to).  And
	 * instants: a CPU missing from the online list the kernel returned to one of the
	 * daemon's reads of it (AUDIT_EV_ONLINE_MASK) was offline at an instant in [from, to].
	 */
	struct rec_offline {
		int cpu;
		bool instant;
		uint64_t from, to;
	} * offline;
	size_t n_offline, cap_offline;
};

/* Possible CPUs (highest id + 1) and the online mask as a byte array; 0 or -errno. */
int rec_possible_cpus(void);
int rec_online_cpus(uint8_t *online, int ncpu);

int recorder_init(struct recorder *r, int ncpu);
/* Load and attach a fresh instance now (after whatever daemon is running); 0 or -errno. */
int recorder_attach(struct recorder *r);
/* Tell every live instance which process is the daemon (its preads are logged). */
void recorder_set_daemon(struct recorder *r, int pid);
/*
 * Detach and drain the oldest live instances until `keep` remain.  Their logs stay for the
 * audit.  The harness keeps two: one attached before the running daemon, one after it.
 */
int recorder_retire(struct recorder *r, int keep);
/*
 * Make the logs complete up to the returned horizon: hop across every online CPU (a switch
 * onto each), then drain until every live instance has logged that switch and every record
 * sequenced before it.  0, or -1 with r->error set.
 */
int recorder_flush(struct recorder *r, uint64_t *horizon);
/* Forget what no audit will need: events before `before` (keeping each CPU's last switch). */
void recorder_prune(struct recorder *r, uint64_t before);
void recorder_destroy(struct recorder *r);

/*
 * CPU cpu was offline throughout (from, to): from is a clock reading after the write of 0 to
 * its online file returned, to one before the write of 1 began.  Evidence as DESIGN rule 3
 * says: the dying CPU cleared its bit with a locked instruction after its last user code, and
 * sets it with one before it runs any task again.  0 or -ENOMEM.
 */
int recorder_note_offline(struct recorder *r, int cpu, uint64_t from, uint64_t to);

/*
 * The audit question for one CPU.  Returns true when some instance logged an event on cpu with
 * time in (lo, hi] (a daemon's pread: entered after lo, returned by hi), or shows the CPU in
 * its idle task (or offline) at an instant in (lo, hi].  daemon_reads: whether the daemon's
 * preads count (the audit asks without them first, to count how often only they answer).
 * On false, `why` describes the nearest evidence on either side.  Call under r->lock.
 */
bool recorder_evidence(struct recorder *r, int cpu, uint64_t lo, uint64_t hi, bool daemon_reads,
		       char *why, size_t whylen);

/*
 * The questions a client-side credit (DESIGN rule 11) asks, each narrower than the one above.
 * Call under r->lock; on false, `why` (if given) describes what the logs show instead.
 *
 * recorder_stamp_event: for slot stamps s_min..s_max (the daemon's own readings, checked to lie
 * in (lo, hi] by the caller), a kernel event (softirq, timer or switch: what the daemon's
 * programs stamp on, never a daemon pread) logged on cpu with time in (lo, hi]; or, setting
 * *pinned, one whose two readings (the instances in front of and behind the daemon) bracket
 * s_min, and one that brackets s_max.  A barrier that passes on loads alone can be shorter than
 * the gap between the two probes of one event (the daemon's signal runs between them): the
 * recorder then sees the event only on either side of the window, and the stamp, which is the
 * daemon's reading of it, says where in between it was.  Or, also setting *pinned, the first
 * event an instance behind the daemon logged after s_min (and after s_max) is within the probe
 * gap (20 us; 1 ms with --bracket-lenient) of it: that instance reads the clock after the
 * daemon's program for the same event.  With --bracket-lenient, as
 * recorder_evidence, an event whose two readings bracket the window.
 *
 * recorder_bracket_point: an event on cpu whose two readings bracket t.
 *
 * recorder_idle_at: cpu in its idle task, or offline, at some instant in [from, hi]: the idle
 * interval must reach `from` or start after it, not merely lie somewhere in the barrier.
 *
 * recorder_thread_on: thread tid (as the sched_switch tracepoint names it) on cpu at some
 * instant in [from, hi]: switched in or out of it in that range, or switched in before `from`
 * and not out until after it.
 */
bool recorder_stamp_event(struct recorder *r, int cpu, uint64_t lo, uint64_t hi, uint64_t s_min,
			  uint64_t s_max, bool *pinned, char *why, size_t whylen);
bool recorder_bracket_point(struct recorder *r, int cpu, uint64_t t);
/*
 * The CPU thread tid was on at instant t, for a t at which it is known to have been running
 * (it read the clock then), or -1.  Where recorder_thread_on cannot see it: a switch to the
 * thread from a task whose switches away never reach the tracepoint (the sandbox agent's
 * threads) leaves no switch in; the thread's first switch after t, always traced (it is a
 * switch away from the thread), says where it was.
 */
int recorder_thread_cpu(struct recorder *r, uint32_t tid, uint64_t t);
bool recorder_idle_at(struct recorder *r, int cpu, uint64_t from, uint64_t hi, char *why,
		      size_t whylen);
bool recorder_thread_on(struct recorder *r, int cpu, uint32_t tid, uint64_t from, uint64_t hi,
			char *why, size_t whylen);

#endif
