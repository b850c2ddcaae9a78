// SPDX-License-Identifier: MIT
#include "daemon.h"
#include "bd_sync.h"
#include "probes.h"
#include "cpu_hop.h"
#include "credit.h"
#include "doorbell.h"
#include "kernel_check.h"
#include "kernel_files.h"
#include "lfence_check.h"
#include "log.h"
#include "nudge.h"
#include "notify.h"
#include "publisher.h"
#include "rate_limit.h"
#include "sandbox.h"
#include "slot_server.h"
#include "anchor.h"
#include "state_file.h"
#include "timens_check.h"
#include "tracepoints.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#ifdef BARRIERD_TEST_HOOKS
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#endif

#define MAX_AGAIN 8
/*
 * Fold passes (ring-buffer signals, the heartbeat's fold, a pass that asks to go again) per
 * second, and their burst.  Signals are the busy CPUs' events, which any user makes at will
 * (two threads calling sched_yield() on an armed daemon: ~50 000 a second); the main thread
 * runs at SCHED_FIFO, so without a cap such a user could keep it on a CPU most of the time.
 * Loaded barriers need a few passes each (about 800 a second in a loaded barrier loop here):
 * the cap only delays a fold, and only under such a flood.
 */
#define FOLD_RATE 5000
#define FOLD_BURST 64
/*
 * The follow gate: what one user can make the daemon spend (docs/THREAT-MODEL.md §5).  Following,
 * every CPU's first event after a pass signals (§4.4), so the pass rate is whatever rate of
 * events anyone makes: four unmarked sleepers, woken by every pass, alone kept a 2-CPU
 * machine's daemon at ~4500 passes and ~26 % of a CPU a second.  So while following, a pass of
 * any kind (fold, credit, one that goes again) needs two things:
 *  - a token of FOLLOW_GAP_NS, FOLLOW_BURST: at most one pass a millisecond sustained, the
 *    count bound (a client that cannot ring waits for events a tick apart anyway, 4 ms at
 *    HZ=250; the bursts cover the few passes one barrier takes);
 *  - the daemon's CPU time (every thread: the doorbell thread's rings and the nudges count
 *    too), charged after every pass (follow_charge), within FOLLOW_CPU_PERMILLE of one CPU
 *    with a tolerance of FOLLOW_CPU_WINDOW_NS: the cost bound, whatever one pass costs on this
 *    machine (its wakes, counts and wake-up: 30-160 us on a 2-vCPU VM, the more the busier it
 *    is).  The gap thus adapts: 1 ms where passes are cheap, longer where they are not;
 *  - but never longer than FOLLOW_MAX_GAP_NS (the idle-credit interval's default): the work
 *    of the other threads (a ring flood wakes the doorbell thread up to --max-credit-rate
 *    times a second) must not starve the passes, which every waiter needs.
 * The gate decides only when the daemon looks, never what counts as evidence.
 */
#define FOLLOW_GAP_NS (1000000ULL)
#define FOLLOW_BURST 8
#define FOLLOW_CPU_PERMILLE 40
#define FOLLOW_CPU_WINDOW_NS (40000000ULL)
#define FOLLOW_MAX_GAP_NS (10000000ULL)

enum { EV_RB = 1, EV_DOORBELL, EV_TIMER, EV_SIGNAL, EV_CREDIT, EV_FOLD, EV_NUDGE };

struct daemon {
	const struct barrierd_options *o;
	struct state_file sf;
	struct probes probes;
	struct publisher pub;
	struct doorbell bell;
	struct nudger nudger;	    /* started only with --nudge-after > 0 and SCHED_FIFO allowed */
	struct slot_server slots;   /* the slot socket (rule 11); lfd -1 when not served */
	struct anchor anchor;	    /* this run's identity for the slot socket (anchor.h) */
	uint64_t generation;	    /* this run's: fixed before the anchor names it */
	struct nudge_queue nq;	    /* rings whose nudge deadline has not come */
	bool *nudge_want;	    /* per CPU, publisher_nudge_targets' answer */
	uint64_t nudge_due;	    /* when nfd fires (absolute), 0: not set */
	uint64_t retry_h, retry_at; /* a horizon looked at again (on_nudge_timer); 0: none */
	unsigned retry_idle;	    /* looks in a row that found CPUs lagging, nobody waiting */
	uint64_t tracked_at;	    /* when a following pass's horizon was last queued */
	bool track_pending;	    /* one was skipped since: queue it at tracked_at + interval */
	int epfd, tfd, sfd, cfd, ffd, nfd, online_fd;
	struct notifier notify;
	struct rate_limit credit_limit; /* --max-credit-rate, with a burst */
	struct rate_limit fold_limit;	/* FOLD_RATE, FOLD_BURST */
	struct rate_limit follow_limit; /* FOLLOW_GAP_NS, FOLLOW_BURST */
	bool rb_paused;	     /* out of tokens: the ring buffer unwatched until ffd fires */
	bool bell_paused;    /* out of follow tokens: the doorbell's eventfd unwatched until ffd */
	uint64_t cpu_mark;   /* the daemon's CPU time at the latest follow_charge */
	uint64_t cpu_tat;    /* the CPU budget's theoretical arrival time (follow_charge) */
	uint64_t paused_due; /* when ffd fires (absolute), while paused */
	uint64_t last_credit_ns; /* when the latest credit pass ran */
	uint64_t next_watchdog_ns, next_status_ns, next_probe_ns;
	uint64_t armed_until, tick_ns;
	uint64_t credit_due; /* when cfd fires (absolute CLOCK_MONOTONIC), 0: not set */
	bool credit_pending;
	uint64_t credit_asked_ns; /* when the pending credit pass was asked for */
	bool deferring;		/* it waits for busy CPUs' events past the horizon (take_credit) */
	uint64_t rings_counted; /* bell.heard as last added to ext.doorbell_rings */
	bool foreign;		/* another process wrote the file: reset it at the stop */
	bool sandboxed;		/* the filter is in force: no unlinkat from here on */
#ifdef BARRIERD_TEST_HOOKS
	pthread_t hook_thread;
	uint32_t hook_go; /* futex: SIGUSR1 asks the hook thread to detach */
	bool hook_started;
#endif
};

#ifdef BARRIERD_TEST_HOOKS
/*
 * Test-only: detach the sched_switch program from a thread other than the main one, while the
 * main thread sleeps in epoll_wait, as bpftool or a bug outside the daemon would.  The main
 * thread's next wake-up (a ring) is a switch *in*, which no switch count sees: only a check
 * after the idle RMWs can notice (DESIGN rule 6).  Created before the sandbox; it only sleeps,
 * closes the link's descriptor and writes a log line, all of which the filter allows.
 */
static void *hook_main(void *arg)
{
	struct daemon *d = arg;
	struct timespec ts = {0, 100 * 1000000L};

	while (!__atomic_load_n(&d->hook_go, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &d->hook_go, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	if (__atomic_load_n(&d->hook_go, __ATOMIC_ACQUIRE) != 1)
		return NULL;  /* shutting down */
	nanosleep(&ts, NULL); /* let the main thread go back to sleep */
	/* The server hands out the link's descriptor number: no more of that once it is gone. */
	slot_server_stop(&d->slots);
	probes_detach_switch(&d->probes);
	log_warn("test hook: sched_switch program detached by another thread");
	return NULL;
}

static void hook_release(struct daemon *d, uint32_t how)
{
	__atomic_store_n(&d->hook_go, how, __ATOMIC_RELEASE);
	syscall(SYS_futex, &d->hook_go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#endif

/* The follow gate (FOLLOW_GAP_NS), defined with the main loop's events. */
static void pause_events(struct daemon *d, uint64_t now);
static uint64_t follow_next(const struct daemon *d, uint64_t now);

/* How long the daemon follows after the last sign of a client that cannot ring. */
#define ARM_HOLD_NS (1000000000ULL)
/*
 * A busy CPU not heard from for this long runs without ticks (nohz_full): a credit pass does
 * not wait for its signal (take_credit).  Several ticks at HZ=100.
 */
#define OWED_SILENT_NS (20 * 1000000ULL)
/* Per-CPU words probed for sleeping waiters at each heartbeat (rotating). */
#define PROBE_CPUS 64

#define STATUS_PERIOD_NS (1000000000ULL)
/*
 * Nudge threads run at the top SCHED_FIFO priority: a nudge must preempt whatever the CPU runs,
 * real-time tasks of users who isolate CPUs included (only a task at 99 itself keeps it out).
 * What each costs that CPU is two switches, at most --max-nudge-rate times a second.
 */
#define NUDGE_PRIORITY 99
/* Looks again at CPUs that lag a ring with nobody asleep for them yet: how often, from when. */
#define NUDGE_RETRIES 4
#define NUDGE_RETRY_NS (1000000ULL)
/* A following daemon's horizons, queued for nudges at most this often. */
#define NUDGE_TRACK_NS (1000000ULL)

/*
 * The tick: the heartbeat, the probe for waiters, the watchdog and the disarm check.  Every
 * wake-up costs tens of microseconds of CPU on a virtual machine, so the daemon ticks only at
 * its heartbeat, armed or not; the slow idle credit has a one-shot timer of its own.
 */
static void set_tick(struct daemon *d, uint64_t tick_ns)
{
	struct itimerspec its;

	/* The watchdog is pinged from this timer: tick at least four times per interval. */
	if (d->notify.watchdog_ns && tick_ns > d->notify.watchdog_ns / 4)
		tick_ns = d->notify.watchdog_ns / 4;
	if (tick_ns == d->tick_ns)
		return;
	d->tick_ns = tick_ns;
	its.it_interval.tv_sec = (time_t)(tick_ns / 1000000000ULL);
	its.it_interval.tv_nsec = (long)(tick_ns % 1000000000ULL);
	its.it_value = its.it_interval;
	timerfd_settime(d->tfd, 0, &its, NULL);
}

/* A client that cannot ring waits: follow every pass, and keep doing so for ARM_HOLD_NS after. */
static void arm(struct daemon *d, uint64_t now)
{
	d->armed_until = now + ARM_HOLD_NS;
	publisher_set_armed(&d->pub, true);
}

static void disarm(struct daemon *d)
{
	publisher_set_armed(&d->pub, false);
}

/* Arm a one-shot timerfd for an absolute CLOCK_MONOTONIC time: 0 disarms it, a time already
 * past fires at once. */
static void timer_at(int fd, uint64_t due)
{
	struct itimerspec its = {{0, 0}, {0, 0}};

	its.it_value.tv_sec = (time_t)(due / 1000000000ULL);
	its.it_value.tv_nsec = (long)(due % 1000000000ULL);
	timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* A credit pass is wanted (a ring, a sleeper that cannot ring, the slow idle credit). */
static void ask_credit(struct daemon *d, uint64_t now)
{
	if (!d->credit_pending)
		d->credit_asked_ns = now;
	d->credit_pending = true;
}

/*
 * The credit timer, one-shot, set before every sleep of the main loop to the next moment a
 * credit pass is due:
 *  - a pending credit pass (a ring) that the rate limit holds back: when the limit allows it
 *    (to the nanosecond: an epoll timeout in milliseconds turned a 100 µs gap into 1 ms);
 *  - slow idle credit for clients that cannot ring (docs/DESIGN.md, "The heartbeat fold and
 *    the slow idle-credit timer"): while armed, when an idle,
 *    offline or unknown CPU will have held the global value back for the interval, that is
 *    at held value + interval exactly.  A periodic check would add up to one more interval
 *    (10-20 ms instead of at most 10), and a wake-up per interval even on a loaded machine,
 *    where no CPU holds anything back.
 */
static void schedule_credit(struct daemon *d)
{
	uint64_t held, due = 0;

	if (d->credit_pending) {
		uint64_t now = bd_mono_ns();

		due = rate_limit_next(&d->credit_limit, now);
		/* Following, a credit pass needs a follow token too (take_credit). */
		if (d->pub.armed && follow_next(d, now) > due)
			due = follow_next(d, now);
		if (d->deferring && due < d->credit_asked_ns + d->o->idle_credit_interval_ns)
			due = d->credit_asked_ns + d->o->idle_credit_interval_ns;
	} else if (d->pub.armed && publisher_idle_hold(&d->pub, &held)) {
		/*
		 * Counted from the latest credit pass too: a CPU that credit cannot move (UNKNOWN:
		 * no switch seen on it yet) would otherwise make the due time past forever and
		 * the credit passes run at the rate limit.
		 */
		due = (held > d->last_credit_ns ? held : d->last_credit_ns) +
		      d->o->idle_credit_interval_ns;
	}

	if (due == d->credit_due)
		return;
	d->credit_due = due;
	timer_at(d->cfd, due);
}

/*
 * Nudges (docs/DESIGN.md, "Nudges"): each ring's horizon waits in nq for its deadline, horizon +
 * --nudge-after; nfd is set to the oldest.
 */
static void schedule_nudge(struct daemon *d)
{
	uint64_t due = nudge_queue_next(&d->nq, d->o->nudge_after_ns);

	if (d->retry_at && (!due || d->retry_at < due))
		due = d->retry_at;
	if (d->track_pending && (!due || d->tracked_at + NUDGE_TRACK_NS < due))
		due = d->tracked_at + NUDGE_TRACK_NS;

	if (due == d->nudge_due)
		return;
	d->nudge_due = due;
	timer_at(d->nfd, due);
}

/*
 * The horizon rose for a waiter (a ring, a sleeper that cannot ring, a following pass): its nudge
 * deadline.  A following daemon moves the horizon at every pass: those are taken at most once per
 * NUDGE_TRACK_NS (coalesce); one skipped is queued when that interval ends (track_pending,
 * on_nudge_timer), so the last pass's horizon is never lost.
 */
static void nudge_track(struct daemon *d, bool coalesce)
{
	uint64_t now;

	if (!d->nudge_want)
		return;
	if (coalesce) {
		now = bd_mono_ns();
		if (now < d->tracked_at + NUDGE_TRACK_NS) {
			d->track_pending = true;
			schedule_nudge(d);
			return;
		}
		d->tracked_at = now;
		d->track_pending = false;
	}
	nudge_queue_push(&d->nq, d->pub.horizon);
	schedule_nudge(d);
}

/*
 * The per-CPU flags' NUDGE bit as it is now: a thread that lost its CPU (cpuset) no longer serves
 * it, and the library's fallback must know (lagging_all_nudged).  At the start and at every
 * heartbeat tick, not per ring: a thread loses or regains its CPU rarely, and the fallback it
 * matters to comes 100 ms into a wait.  Information only, never evidence: plain stores.
 */
static void refresh_nudge_flags(struct daemon *d)
{
	uint64_t *flags =
	    (uint64_t *)((uint8_t *)d->sf.hdr + barrierd_cpu_flags_offset(d->sf.ncpu));

	for (uint64_t c = 0; c < d->sf.ncpu; c++) {
		uint64_t f = bd_load(&flags[c]);
		uint64_t g = nudger_serves(&d->nudger, c) ? f | BARRIERD_CPUF_NUDGE
							  : f & ~BARRIERD_CPUF_NUDGE;

		if (g != f)
			bd_store(&flags[c], g);
	}
}

/*
 * nfd fired: every ring whose deadline came, and the CPUs that still lag the latest of them and
 * that someone waits for, nudged (each within its rate limit).  A CPU that lags it has lagged
 * every earlier one too.  While a CPU still lags it, the horizon is looked at again: after
 * max(--nudge-after, NUDGE_RETRY_NS) while someone waits for a lagging CPU (a nudge held back by
 * the rate limit, run elsewhere or kept out), not before the rate limit allows the held one; and
 * NUDGE_RETRIES times at doubling intervals from NUDGE_RETRY_NS while nobody is asleep for them
 * yet (a ringer not yet in its futex wait: a slow machine, a short --nudge-after); a newer
 * horizon starts those anew.  A wait whose stamp the horizon covers does not ring again for
 * 20 ms (PROTOCOL.md §6.8): until then these looks are what serve it.
 */
static void on_nudge_timer(struct daemon *d)
{
	uint64_t v, now, upto, lagging = 0, targets = 0, sent = 0, held_until = 0;

	/* One-shot: it fired (or we were woken for it); the queue decides either way. */
	if (read(d->nfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("nudge timer: %s", strerror(errno));
	d->nudge_due = 0;
	now = bd_mono_ns();
	if (d->track_pending && now >= d->tracked_at + NUDGE_TRACK_NS) {
		d->tracked_at = now;
		d->track_pending = false;
		nudge_queue_push(&d->nq, d->pub.horizon);
	}
	upto = nudge_queue_due(&d->nq, now, d->o->nudge_after_ns);
	if (upto > d->retry_h)
		d->retry_idle = 0; /* a newer horizon: looks of its own */
	if (d->retry_at && now >= d->retry_at && d->retry_h > upto)
		upto = d->retry_h;
	if (d->retry_at && now >= d->retry_at)
		d->retry_at = 0;
	if (upto) {
		for (uint64_t c = 0; c < d->sf.ncpu; c++)
			d->nudge_want[c] = nudger_can(&d->nudger, c);
		targets =
		    publisher_nudge_targets(&d->pub, upto, sched_getcpu(), d->nudge_want, &lagging);
		for (uint64_t c = 0; c < d->sf.ncpu && targets; c++)
			if (d->nudge_want[c] && nudger_nudge(&d->nudger, c, now, &held_until)) {
				sent++;
				log_debug("nudged cpu %llu: it lags a ring %.3f ms old",
					  (unsigned long long)c, (double)(now - upto) / 1e6);
			}
		if (sent)
			bd_store(&d->sf.ext->nudges, bd_load(&d->sf.ext->nudges) + sent);
		d->retry_idle = lagging && !targets ? d->retry_idle + 1 : 0;
		if (lagging && d->retry_idle <= NUDGE_RETRIES) {
			uint64_t gap = d->o->nudge_after_ns > NUDGE_RETRY_NS ? d->o->nudge_after_ns
									     : NUDGE_RETRY_NS;

			if (!targets)
				gap = NUDGE_RETRY_NS << (d->retry_idle - 1);
			d->retry_h = upto;
			d->retry_at = now + gap > held_until ? now + gap : held_until;
		} else {
			d->retry_idle = 0;
			d->retry_at = 0;
		}
	}
	schedule_nudge(d);
}

static int add_fd(int epfd, int fd, uint64_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static void publish_cpu_flags(struct daemon *d);

/*
 * CLIENT-EVIDENCE §6, rule 11: every program is attached.  Idle-credit the CPUs offline now
 * (their words are UNKNOWN: they never switched since the attach), freeze the slots and map
 * them read-only, then offer them on the slot socket.  Only a failure to map the slots again
 * is fatal; without the freeze or the socket, clients use the file alone.
 */
static int share_slots(struct daemon *d, char *err, size_t errlen)
{
	const struct barrierd_options *o = d->o;
	char path[PATH_MAX];
	int ret;

	/* The mask is read after the attach, and after this fence (no load passes it). */
	bd_mfence();
	ret = online_mask_read(&d->pub);
	ret = probes_freeze(&d->probes, ret ? NULL : d->pub.online);
	if (!d->probes.slots) {
		snprintf(err, errlen, "cannot map the frozen slot array: %s", strerror(-ret));
		return ret;
	}
	d->pub.slots = d->probes.slots;
	if (ret) {
		log_warn("cannot freeze the slot array (%s): clients will not map it",
			 strerror(-ret));
		return 0;
	}
	if (o->slot_socket_mode < 0)
		return 0;
	if (snprintf(path, sizeof(path), "%s%s", o->state_path, BARRIERD_SLOTS_SOCKET_SUFFIX) >=
	    (int)sizeof(path))
		ret = -ENAMETOOLONG;
	else {
		/*
		 * The anchor names the generation setup() stores later: the file is ours alone
		 * (locked) and nothing else of ours changes it meanwhile.  Without an anchor,
		 * clients that trust the file's owner still get the slots.
		 */
		int aret = anchor_load(&d->anchor, &d->probes, d->sf.fd, d->generation);

		if (aret)
			log_warn("no anchor for the slot socket (%s): clients in user namespaces "
				 "will not trust the state file",
				 strerror(-aret));
		ret = slot_server_start(&d->slots, path, (mode_t)o->slot_socket_mode, &d->probes,
					d->sf.ncpu, &d->sf.hdr->generation,
					aret ? NULL : d->anchor.fds);
	}
	if (ret)
		log_warn("no slot socket at %s (%s): clients will use the state file alone", path,
			 strerror(-ret));
	else
		log_debug("serving the slots at %s (mode %04o)", path, o->slot_socket_mode);
	return 0;
}

/* Block the stop signals before any thread exists, so only the signalfd sees them. */
static void block_stop_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
#ifdef BARRIERD_TEST_HOOKS
	sigaddset(mask, SIGUSR1);
	sigaddset(mask, SIGUSR2);
#endif
	sigprocmask(SIG_BLOCK, mask, NULL);
}

/*
 * What the host must offer before the state file is touched: a time namespace we can serve,
 * a kernel with what the programs need, and a word on an LFENCE nothing can check.
 */
static int check_host(char *err, size_t errlen)
{
	int ret;

	ret = timens_check(err, errlen);
	if (ret)
		return ret;
	/*
	 * A kernel without what the programs need is named as such, not as a failed load, and
	 * before the state file is touched.
	 */
	ret = kernel_check(err, errlen);
	if (ret)
		return ret;
	{
		/* An assumption nothing can check in a guest: named, not refused (DESIGN §5). */
		struct lfence_cpuid cpu;
		char why[320];

		lfence_cpuid_read(&cpu);
		if (lfence_doubt(&cpu, why, sizeof(why)))
			log_warn("%s", why);
	}
	return 0;
}

/* Possible CPU ids, holes included: a hole is never online (credited offline, rule 3). */
static int count_cpus(char *err, size_t errlen)
{
	int ncpu = possible_cpus();

	if (ncpu <= 0) {
		snprintf(err, errlen, "cannot read /sys/devices/system/cpu/possible: %s",
			 strerror(ncpu ? -ncpu : EINVAL));
		return ncpu ? ncpu : -EINVAL;
	}
	return ncpu;
}

/*
 * The daemon's programs loaded (not attached), the publisher set up on the file and .bss, and
 * the daemon's own thread made known to the programs.
 */
static int load_programs(struct daemon *d, uint64_t ncpu, char *err, size_t errlen)
{
	const struct barrierd_options *o = d->o;
	uint32_t tid;
	int ret;

	ret = probes_load(&d->probes, ncpu, err, errlen);
	if (ret)
		return ret;

	d->online_fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	if (d->online_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open /sys/devices/system/cpu/online: %s",
			 strerror(-ret));
		return ret;
	}
	/* vtime resumes above everything published, in the file and then .bss, pre-attach. */
	ret = publisher_init(&d->pub, &d->sf, d->probes.slots, d->probes.vtime, d->probes.watermark,
			     d->probes.main_switches, ncpu, d->online_fd);
	if (ret == -EBUSY) {
		d->foreign = true;
		snprintf(err, errlen,
			 "%s changed while the daemon started: another process writes it",
			 o->state_path);
		return ret;
	}
	if (ret) {
		snprintf(err, errlen, "cannot set up the publisher: %s", strerror(-ret));
		return ret;
	}
	d->pub.bss_quiet_cpu = d->probes.quiet_cpu;
	d->pub.bss_quiet_upto = d->probes.quiet_upto;
	ret = probes_whoami(&d->probes, &tid);
	if (!ret)
		ret = probes_add_daemon_tid(&d->probes, tid, true);
	if (ret) {
		snprintf(err, errlen, "cannot learn the daemon's global tid: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * Attach every program, visit every CPU, take this start's generation and offer the slots.
 * From here the programs stamp; the file is still stopped.
 */
static int attach_programs(struct daemon *d, const struct resolved_tp *tps, uint64_t ncpu,
			   char *err, size_t errlen)
{
	const struct barrierd_options *o = d->o;
	int ret;

	ret = probes_attach(&d->probes, tps, o->n_tps, err, errlen);
	if (ret)
		return ret;
	publisher_arm_detach_check(&d->pub);
	ret = cpu_hop_all(ncpu);
	log_debug("hopped across %d online CPUs", ret);
	/* Raised at every start; never lowered (lib/trusted.c's seqlock). */
	d->generation = bd_load(&d->sf.hdr->generation) + 1;
	return share_slots(d, err, errlen);
}

/* The doorbell thread, and the nudge threads unless nudges are off or cannot run. */
static int start_threads(struct daemon *d, char *err, size_t errlen)
{
	const struct barrierd_options *o = d->o;
	int ret;

	ret = doorbell_start(&d->bell, &d->sf.hdr->doorbell, &d->probes, o->max_credit_rate);
	if (ret) {
		snprintf(err, errlen, "cannot start the doorbell thread: %s", strerror(-ret));
		return ret;
	}
	/*
	 * Without nudges the daemon still serves every barrier (ticks, idle credit), only not
	 * a tickless CPU's: a warning, not a failure.
	 */
	if (o->nudge_after_ns && !d->probes.switch_stamps)
		log_warn(
		    "nudges off: sched/sched_switch is not an evidence tracepoint, so the switch "
		    "a nudge causes would stamp nothing");
	else if (o->nudge_after_ns) {
		ret = nudger_start(&d->nudger, d->sf.ncpu, NUDGE_PRIORITY, o->max_nudge_rate);
		if (!ret)
			d->nudge_want = calloc(d->sf.ncpu, sizeof(*d->nudge_want));
		if (ret || !d->nudge_want) {
			log_warn("nudges off: %s",
				 ret == -EPERM ? "no permission for SCHED_FIFO, which a nudge needs"
					       : strerror(ret ? -ret : ENOMEM));
			nudger_stop(&d->nudger);
		} else {
			log_info("nudges: after %.3f ms, at most %llu a second per CPU",
				 (double)o->nudge_after_ns / 1e6,
				 (unsigned long long)o->max_nudge_rate);
		}
	}
	return 0;
}

/*
 * The heartbeat is this thread's.  At normal priority, hundreds of runnable threads delay it
 * past the liveness bound (694 ms with 200 spinning threads on 2 CPUs, against 300 ms), and
 * every waiter then takes the daemon for dead.  SCHED_FIFO 1 when permitted, as the doorbell
 * thread.  What it does is capped by rate, whoever makes the events: credit passes by
 * --max-credit-rate, folds by FOLD_RATE (take_fold), the rest by its timers.
 */
static void raise_main_priority(void)
{
	int ret;

	ret = pthread_setschedparam(pthread_self(), SCHED_FIFO,
				    &(struct sched_param){.sched_priority = 1});
	if (ret)
		log_warn("main thread: no permission for SCHED_FIFO (%s); running it at normal "
			 "priority, where a busy machine can delay its heartbeat past the liveness "
			 "bound",
			 strerror(ret));
}

/* The event loop's descriptors: epoll, the timers, the signalfd for the stop signals. */
static int setup_event_loop(struct daemon *d, const sigset_t *mask, char *err, size_t errlen)
{
	const struct barrierd_options *o = d->o;
	int ret;

	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->cfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->ffd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->nfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->epfd < 0 || d->tfd < 0 || d->cfd < 0 || d->ffd < 0 || d->nfd < 0 || d->sfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot set up the event loop: %s", strerror(-ret));
		return ret;
	}
	set_tick(d, o->heartbeat_period_ns); /* disarmed until someone waits */
	if (o->always_armed)
		arm(d, bd_mono_ns());
	if ((ret = add_fd(d->epfd, probes_rb_fd(&d->probes), EV_RB)) ||
	    (ret = add_fd(d->epfd, d->bell.efd, EV_DOORBELL)) ||
	    (ret = add_fd(d->epfd, d->tfd, EV_TIMER)) ||
	    (ret = add_fd(d->epfd, d->cfd, EV_CREDIT)) ||
	    (ret = add_fd(d->epfd, d->ffd, EV_FOLD)) || (ret = add_fd(d->epfd, d->nfd, EV_NUDGE)) ||
	    (ret = add_fd(d->epfd, d->sfd, EV_SIGNAL))) {
		snprintf(err, errlen, "cannot set up the event loop: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * Sandbox: everything the steady state needs is open and mapped.  The doorbell thread dropped
 * its own privileges (they are per thread); now this one, then the filter for both.  From here
 * on: no bpf(), no perf_event_open(), no opening of files.
 */
static int enter_sandbox(struct daemon *d, char *err, size_t errlen)
{
	int ret;

	/*
	 * The credit pass forces a switch of this thread with a 1 us sleep (DESIGN rule 6); the
	 * default 50 us timer slack would make every credit pass that much slower.
	 */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	ret = sandbox_drop_privileges();
	if (!ret)
		ret = sandbox_install_filter(&d->sf.hdr->flags);
	if (ret) {
		snprintf(err, errlen, "cannot sandbox the daemon: %s", strerror(-ret));
		return ret;
	}
	d->sandboxed = true;
	return 0;
}

/* Publish: liveness fields, then the running flag last. */
static int publish_running(struct daemon *d, char *err, size_t errlen)
{
	const struct barrierd_options *o = d->o;
	struct barrierd_header *h = d->sf.hdr;
	int ret;

	bd_store(&h->generation, d->generation);
	bd_store(&h->daemon_pid, (uint64_t)getpid());
	bd_store(&h->heartbeat_period_ns, o->heartbeat_period_ns);
	publisher_seal(&d->pub); /* from here on these words are checked at every pass */
	ret = publisher_heartbeat(&d->pub, bd_mono_ns());
	if (ret) {
		d->foreign = true;
		snprintf(err, errlen,
			 "%s changed while the daemon started: another process writes it",
			 o->state_path);
		return ret;
	}
	/*
	 * One CAS from the flags as setup left them: if the SIGSYS handler of another thread set
	 * STOPPED meanwhile (the process is exiting), RUNNING must not overwrite it.
	 */
	{
		uint64_t f = bd_load(&h->flags);
		uint64_t run = BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION |
			       BARRIERD_FEAT_DOORBELL | BARRIERD_FEAT_SERVED |
			       BARRIERD_FEAT_CPU_FLAGS | (d->pub.armed ? BARRIERD_FLAG_ARMED : 0) |
			       (d->slots.started ? BARRIERD_FEAT_DIRECT : 0);

		if (!bd_cas(&h->flags, &f, run)) {
			snprintf(err, errlen, "the state file's flags changed during setup");
			return -EAGAIN;
		}
		futex_wake_word(&h->flags);
	}
	slot_server_go(&d->slots); /* the generation is final: replies carry it */
	return 0;
}

static int setup(struct daemon *d, char *err, size_t errlen)
{
	const struct barrierd_options *o = d->o;
	struct resolved_tp tps[BARRIERD_MAX_TRACEPOINTS];
	sigset_t mask;
	int ncpu, ret;

	block_stop_signals(&mask);
	ret = check_host(err, errlen);
	if (ret)
		return ret;
	/* Connect to the service manager now: the sandbox forbids new sockets later. */
	ret = notify_init(&d->notify);
	if (ret)
		log_warn("cannot reach the service manager's NOTIFY_SOCKET (%s): no readiness or "
			 "watchdog messages will be sent",
			 strerror(-ret));
	ncpu = count_cpus(err, errlen);
	if (ncpu < 0)
		return ncpu;
	/*
	 * First action on the file, before any BPF: lock it and reset it if it comes from
	 * another boot or another writer.  A failure anywhere later leaves a safe file.
	 */
	ret = state_file_open(&d->sf, o->state_path, (uint64_t)ncpu, err, errlen);
	if (ret)
		return ret;
	ret = tracepoints_resolve(o->tps, o->n_tps, tps, err, errlen);
	if (!ret)
		ret = load_programs(d, (uint64_t)ncpu, err, errlen);
	if (!ret)
		ret = attach_programs(d, tps, (uint64_t)ncpu, err, errlen);
	if (!ret)
		ret = start_threads(d, err, errlen);
	if (ret)
		return ret;
	publish_cpu_flags(d);
	raise_main_priority();
	ret = setup_event_loop(d, &mask, err, errlen);
	if (ret)
		return ret;
#ifdef BARRIERD_TEST_HOOKS
	if (pthread_create(&d->hook_thread, NULL, hook_main, d) == 0)
		d->hook_started = true;
#endif
	ret = enter_sandbox(d, err, errlen);
	if (!ret)
		ret = publish_running(d, err, errlen);
	return ret;
}

/*
 * The per-CPU flags (ABI 1.2): what the kernel says of each CPU (nohz_full, isolated: no
 * file is an empty list) and whether a nudge thread serves it.  Before the sandbox: sysfs.
 */
static void publish_cpu_flags(struct daemon *d)
{
	uint64_t n = d->sf.ncpu, nohz_unserved = 0;
	uint64_t *flags = (uint64_t *)((uint8_t *)d->sf.hdr + barrierd_cpu_flags_offset(n));
	bool *nohz = calloc(n, sizeof(*nohz)), *iso = calloc(n, sizeof(*iso));
	int nn = -ENOMEM, ni = -ENOMEM;

	if (nohz && iso) {
		nn = cpu_list_read("/sys/devices/system/cpu/nohz_full", nohz, n);
		ni = cpu_list_read("/sys/devices/system/cpu/isolated", iso, n);
	}
	if (nn < 0 || ni < 0)
		log_warn("cannot read the nohz_full or isolated CPU lists (%s): not marked",
			 strerror(-(nn < 0 ? nn : ni)));
	for (uint64_t c = 0; c < n; c++) {
		uint64_t f = 0;

		if (nn > 0 && nohz[c])
			f |= BARRIERD_CPUF_NOHZ_FULL;
		if (ni > 0 && iso[c])
			f |= BARRIERD_CPUF_ISOLATED;
		bd_store(&flags[c], f);
	}
	refresh_nudge_flags(d);
	for (uint64_t c = 0; c < n; c++)
		nohz_unserved += nn > 0 && nohz[c] && !nudger_serves(&d->nudger, c);
	if (nn > 0 || ni > 0)
		log_info("%d nohz_full and %d isolated CPUs%s", nn > 0 ? nn : 0, ni > 0 ? ni : 0,
			 nohz_unserved ? "; nohz_full CPUs without nudges: their barriers wait for "
					 "their rare interrupts"
				       : "");
	free(nohz);
	free(iso);
}

/* The one-line STATUS= summary, kept fresh for systemctl status. */
static void send_status(struct daemon *d, uint64_t now)
{
	const struct barrierd_ext *x = d->sf.ext;
	char msg[PATH_MAX + 256];
	uint64_t g = d->pub.g_ns;

	snprintf(msg, sizeof(msg),
		 "STATUS=serving %s: %llu CPUs, global value %.1f ms old, %llu passes "
		 "(%llu credit), %llu doorbell rings",
		 d->sf.path, (unsigned long long)d->sf.ncpu,
		 g && now > g ? (double)(now - g) / 1e6 : 0.0, (unsigned long long)x->passes,
		 (unsigned long long)x->credit_passes, (unsigned long long)x->doorbell_rings);
	notify_send(&d->notify, msg);
}

/*
 * The file holds words we did not write.  A truncation zeroes the words past the new end as
 * surely as a foreign writer changes them: say which it was (state_file_check logs it), since
 * a truncated file must not be reset (every store past its end would fault).
 */
static void foreign_or_fault(struct daemon *d)
{
	if (state_file_check(&d->sf) != -EIO)
		d->foreign = true;
}

static uint64_t daemon_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * After a pass: the daemon's CPU time since the previous charge (the pass, whatever woke it or
 * ran between, the other threads' work) costs the CPU budget used / FOLLOW_CPU_PERMILLE of wall
 * time (GCRA, as rate_limit.h, with a tolerance of FOLLOW_CPU_WINDOW_NS), the debt capped so
 * that the next pass waits at most FOLLOW_MAX_GAP_NS.  Charged only while following: the gate
 * is following's.
 */
static void follow_charge(struct daemon *d, uint64_t now)
{
	uint64_t cpu = daemon_cpu_ns(), used = cpu - d->cpu_mark;

	d->cpu_mark = cpu;
	if (!d->pub.armed)
		return;
	if (d->cpu_tat < now)
		d->cpu_tat = now;
	d->cpu_tat += used * 1000 / FOLLOW_CPU_PERMILLE;
	if (d->cpu_tat > now + FOLLOW_CPU_WINDOW_NS + FOLLOW_MAX_GAP_NS)
		d->cpu_tat = now + FOLLOW_CPU_WINDOW_NS + FOLLOW_MAX_GAP_NS;
}

/* When following allows the next pass: a follow token and the CPU budget (follow_charge). */
static uint64_t follow_next(const struct daemon *d, uint64_t now)
{
	uint64_t t = rate_limit_next(&d->follow_limit, now);
	uint64_t c = d->cpu_tat > FOLLOW_CPU_WINDOW_NS ? d->cpu_tat - FOLLOW_CPU_WINDOW_NS : 0;

	return c > t ? c : t;
}

/*
 * A fold token, and a follow token while following (FOLLOW_GAP_NS): both or neither.  A credit
 * pass takes a credit token instead of the fold token, and the follow token too (take_credit).
 */
static bool take_pass_tokens(struct daemon *d, uint64_t now)
{
	bool follow = d->pub.armed;

	if (rate_limit_next(&d->fold_limit, now) > now || (follow && follow_next(d, now) > now))
		return false;
	rate_limit_take(&d->fold_limit, now);
	if (follow)
		rate_limit_take(&d->follow_limit, now);
	return true;
}

/* Run a pass, repeating while the watermark handshake asks for it. */
static int run_pass(struct daemon *d, bool credit)
{
	bool again = true;
	int ret = 0;

	for (int i = 0; i < MAX_AGAIN && again; i++) {
		/* Each pass after the first is a fold of its own: it takes a token (take_fold). */
		if (i > 0 && !take_pass_tokens(d, bd_mono_ns()))
			break; /* again stays true: the loop defers it to ffd */
		ret = publisher_pass(&d->pub, credit && i == 0, &again);
		if (ret == -EBUSY)
			foreign_or_fault(d);
		if (ret)
			return ret;
	}
	ret = publisher_heartbeat(&d->pub, bd_mono_ns());
	if (ret) {
		foreign_or_fault(d);
		return ret;
	}
	return again ? 1 : 0;
}

/* ---- the main loop's events ----------------------------------------------------------------- */

/*
 * A ring to serve, whose ringers all stamped before `when`: raise the horizon to it, ask for a
 * credit pass, track it for nudges.  A later `when` would ask for events the ringers do not
 * need (a CPU that passed their stamps just before it would be waited for); the credit pass
 * reads r after this (DESIGN 4.2).
 */
static int serve_ring(struct daemon *d, uint64_t now, uint64_t when)
{
	int ret = publisher_raise(&d->pub, when);

	if (ret) {
		foreign_or_fault(d);
		return ret;
	}
	/* Only if our switch away from it stamps it (publisher_quiet). */
	if (d->probes.switch_stamps)
		publisher_quiet(&d->pub, sched_getcpu());
	ask_credit(d, now);
	nudge_track(d, false);
	return 0;
}

/*
 * A client rang the doorbell (or the doorbell's wait expired: a ring may have been lost): count
 * the rings and serve them.  The ringer stamped before it rang, and the doorbell thread
 * read its clock when the ring woke it: every stamp of a ring drained here is earlier than the
 * latest such reading, the horizon.
 */
static int on_doorbell(struct daemon *d)
{
	uint64_t v, now, woke, heard;
	int ret;

	/* Only rings are counted; the count may lag a ring still on its way (statistics). */
	if (read(d->bell.efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("doorbell eventfd: %s", strerror(errno));
	heard = __atomic_load_n(&d->bell.heard, __ATOMIC_RELAXED);
	if (heard != d->rings_counted) {
		bd_store(&d->sf.ext->doorbell_rings,
			 bd_load(&d->sf.ext->doorbell_rings) + (heard - d->rings_counted));
		d->rings_counted = heard;
	}
	now = bd_mono_ns();
	woke = __atomic_load_n(&d->bell.woke_ns, __ATOMIC_ACQUIRE);
	ret = serve_ring(d, now, woke && woke < now ? woke : now);
	if (ret)
		return ret;
	/*
	 * Rings faster than the doorbell's rate (a waiter in a tight loop): a ring per barrier
	 * costs more than following, and lost rings cost the ringers 1 ms sleeps.  Follow: then
	 * library waiters need not ring for busy CPUs (NO_RING_ARMED).
	 */
	if (__atomic_exchange_n(&d->bell.saturated, 0, __ATOMIC_RELAXED))
		arm(d, now);
	return 0;
}

/*
 * The tick (set_tick): the foreign-writer check, the heartbeat, the watchdog, the status line,
 * the probe for sleeping waiters and the disarm check.  *fold: a pass is due.  0, or -EBUSY
 * (another writer: stop).
 */
static int on_tick(struct daemon *d, bool *beat)
{
	uint64_t v, now;
	int ret;

	if (read(d->tfd, &v, sizeof(v)) < 0)
		return 0;
	/*
	 * The file itself before any of its words: truncated (the mapping would fault), replaced
	 * or removed (we would publish into an inode no new client opens).  Two stats a period.
	 */
	ret = state_file_check(&d->sf);
	if (ret)
		return ret;
	now = bd_mono_ns();
	/* The heartbeat vouches for every word below it: checked first (DESIGN rule 10). */
	ret = publisher_heartbeat(&d->pub, now);
	if (ret) {
		foreign_or_fault(d);
		return ret;
	}
	/* The main loop pings the watchdog: a wedged loop stops the pings. */
	if (d->notify.watchdog_ns && now >= d->next_watchdog_ns) {
		notify_send(&d->notify, "WATCHDOG=1");
		d->next_watchdog_ns = now + d->notify.watchdog_ns / 2;
	}
	if (now >= d->next_status_ns) {
		send_status(d, now);
		d->next_status_ns = now + STATUS_PERIOD_NS;
	}
	if (d->nudge_want)
		refresh_nudge_flags(d);
	/*
	 * Anyone can move the doorbell thread off its word (THREAT-MODEL §4): every ring since went
	 * unheard.  Found here, within a tick; the thread is signalled back, and the rings it
	 * missed, all rung before now, are served as one.
	 */
	if (doorbell_moved(&d->bell)) {
		log_debug(
		    "doorbell: its thread was moved off its word: serving the rings it missed");
		ret = serve_ring(d, now, now);
		if (ret)
			return ret;
	}
	/*
	 * Clients of the original layout cannot ring: find them sleeping on the words, without
	 * waking them, and follow while they wait.  A fold at each heartbeat also keeps idle
	 * views of the file fresh.
	 */
	if (now >= d->next_probe_ns) {
		d->next_probe_ns = now + d->o->heartbeat_period_ns;
		long global;

		if (publisher_count_legacy(&d->pub, PROBE_CPUS, &global, true) > 0)
			arm(d, now);
		/*
		 * Anyone can queue on the mark and so hide an original-layout sleeper from the
		 * count.  Whoever sleeps on a global word while an idle CPU has held the global
		 * value back for a whole period gets a credit pass at the heartbeat: a library
		 * client would have rung for it long before, so this costs nothing otherwise.
		 */
		if (global > 0 &&
		    publisher_idle_holds_back(&d->pub, now, d->o->heartbeat_period_ns))
			ask_credit(d, now);
		*beat = true;
	}
	if (d->pub.armed && now >= d->armed_until && !d->o->always_armed)
		disarm(d);
	return 0;
}

/* The credit timer (schedule_credit) fired: is the slow idle credit still due? */
static void on_credit_timer(struct daemon *d)
{
	uint64_t v, now;

	if (read(d->cfd, &v, sizeof(v)) < 0)
		return;
	d->credit_due = 0; /* one-shot: it fired, it is unset */
	/*
	 * A pending pass is checked against the limit in take_credit.  Otherwise: still armed,
	 * and the hold still that old (a pass may have moved it)?
	 */
	now = bd_mono_ns();
	if (!d->credit_pending && d->pub.armed &&
	    now >= d->last_credit_ns + d->o->idle_credit_interval_ns &&
	    publisher_idle_holds_back(&d->pub, now, d->o->idle_credit_interval_ns))
		ask_credit(d, now);
}

/* A signal: true to stop.  The test-hook build detaches sched_switch on SIGUSR1 and SIGUSR2. */
static bool on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;

	if (read(d->sfd, &si, sizeof(si)) != sizeof(si))
		return false;
#ifdef BARRIERD_TEST_HOOKS
	/* Test-only binary: detach sched_switch as a bug or bpftool could. */
	if (si.ssi_signo == SIGUSR2) {
		slot_server_stop(&d->slots);
		probes_detach_switch(&d->probes);
		log_warn("test hook: sched_switch program detached");
		return false;
	}
	/* Test-only binary: detach it from another thread, 100 ms later. */
	if (si.ssi_signo == SIGUSR1) {
		hook_release(d, 1);
		return false;
	}
#endif
	log_info("received signal %u, stopping", si.ssi_signo);
	return true;
}

/*
 * A credit pass asked for (a ring, the credit timer) and allowed now?  It waits, for at most
 * the idle-credit interval after it was asked for, while a busy CPU owes an event past the
 * horizon (publisher_owed): run now, it would complete none of the barriers behind the
 * horizon and a second pass would follow that CPU's signal.  Waiting, it runs once, when the
 * last such signal came.  Credit is timeless (r is read in the pass, later is as good).  If
 * then no CPU behind the horizon needs credit (all were busy), the pass is a fold (*fold):
 * under the fold cap, not the credit cap, which bounds only what credit costs.
 */
static bool take_credit(struct daemon *d, bool *fold)
{
	uint64_t now;
	int here;

	d->deferring = false;
	if (!d->credit_pending)
		return false;
	now = bd_mono_ns();
	here = sched_getcpu();
	if (now < d->credit_asked_ns + d->o->idle_credit_interval_ns &&
	    publisher_owed(&d->pub, here, now, OWED_SILENT_NS)) {
		d->deferring = true;
		return false;
	}
	if (!publisher_credit_needed(&d->pub, here)) {
		d->credit_pending = false;
		*fold = true;
		return false;
	}
	/* Following, a credit pass is a pass like any other: the follow gate first. */
	if (d->pub.armed && follow_next(d, now) > now) {
		pause_events(d, now);
		return false;
	}
	if (!rate_limit_take(&d->credit_limit, now))
		return false;
	if (d->pub.armed)
		rate_limit_take(&d->follow_limit, now);
	d->credit_pending = false;
	d->last_credit_ns = now;
	return true;
}

/*
 * After a pass while following: did a client that cannot ring sleep on the file (counted in the
 * pass, before its wakes)?  Then keep following, and treat it as a ring: the horizon moves past its
 * stamp, and if an idle, offline or the daemon's CPU holds the global value back, a credit pass is
 * asked for (idle CPUs of a big machine would otherwise wait for the slow idle-credit timer).
 */
static int serve_legacy(struct daemon *d)
{
	uint64_t now;
	int ret;

	if (!d->pub.armed || d->pub.legacy == 0)
		return 0;
	now = bd_mono_ns();
	d->armed_until = now + ARM_HOLD_NS;
	/* Still asleep after the pass's wakes: its barrier is not complete yet. */
	if (publisher_count_legacy(&d->pub, 0, NULL, false) == 0)
		return 0;
	ret = publisher_raise(&d->pub, now);
	if (ret) {
		foreign_or_fault(d);
		return ret;
	}
	if (publisher_credit_holds(&d->pub))
		ask_credit(d, now);
	nudge_track(d, false);
	return 0;
}

/*
 * Out of tokens (fold, or follow while following): stop watching what only asks for a pass
 * until the next token is due, and set ffd for it.  The ring buffer's signals would only wake us
 * to find no token; so would the doorbell's eventfd while following, since following moves the
 * horizon past every ring's stamp at the next pass anyway.  Deferring is safe: a pass reads the
 * slots themselves and r is read in the pass (DESIGN 4.1, 4.2); signals and rings are only
 * wake-ups, and the eventfd keeps counting the rings meanwhile.
 */
static void pause_events(struct daemon *d, uint64_t now)
{
	struct epoll_event ev = {.events = 0, .data.u64 = EV_RB};
	uint64_t next = rate_limit_next(&d->fold_limit, now);

	if (d->pub.armed && follow_next(d, now) > next)
		next = follow_next(d, now);
	if (!d->rb_paused) {
		epoll_ctl(d->epfd, EPOLL_CTL_MOD, probes_rb_fd(&d->probes), &ev);
		d->rb_paused = true;
	}
	if (d->pub.armed && !d->bell_paused) {
		ev.data.u64 = EV_DOORBELL;
		epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->bell.efd, &ev);
		d->bell_paused = true;
	}
	if (next > d->paused_due) {
		d->paused_due = next;
		timer_at(d->ffd, next);
	}
}

/*
 * A fold pass allowed by FOLD_RATE (and, following, FOLLOW_GAP_NS) now?  If not, the events
 * that ask for one are paused until the next token (pause_events): the fold then runs.
 */
static bool take_fold(struct daemon *d)
{
	uint64_t now = bd_mono_ns();

	if (take_pass_tokens(d, now))
		return true;
	pause_events(d, now);
	return false;
}

/* ffd fired: a token is due; watch the ring buffer and the doorbell again. */
static void on_fold_timer(struct daemon *d)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_RB};
	uint64_t v;

	if (read(d->ffd, &v, sizeof(v)) < 0)
		return;
	d->paused_due = 0;
	if (d->rb_paused)
		epoll_ctl(d->epfd, EPOLL_CTL_MOD, probes_rb_fd(&d->probes), &ev);
	d->rb_paused = false;
	if (d->bell_paused) {
		ev.data.u64 = EV_DOORBELL;
		epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->bell.efd, &ev);
	}
	d->bell_paused = false;
}

static int loop(struct daemon *d)
{
	/* A first pass right away: every CPU's state known, and the watermark set if armed. */
	int poll_now = run_pass(d, true);

	if (poll_now < 0)
		return poll_now;
	rate_limit_init(&d->credit_limit, d->o->max_credit_rate, BARRIERD_CREDIT_BURST);
	rate_limit_init(&d->fold_limit, FOLD_RATE, FOLD_BURST);
	rate_limit_init(&d->follow_limit, 1000000000ULL / FOLLOW_GAP_NS, FOLLOW_BURST);
	d->cpu_mark = daemon_cpu_ns();
	d->last_credit_ns = bd_mono_ns();

	for (;;) {
		struct epoll_event evs[8];
		int n, ret;
		bool fold = false, beat = false, credit;

		schedule_credit(d);
		n = epoll_wait(d->epfd, evs, 8, poll_now ? 0 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_err("epoll_wait: %s", strerror(errno));
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			switch (evs[i].data.u64) {
			case EV_RB:
				probes_drain(&d->probes);
				fold = true;
				break;
			case EV_DOORBELL:
				ret = on_doorbell(d);
				if (ret)
					return ret;
				break;
			case EV_TIMER:
				ret = on_tick(d, &beat);
				if (ret)
					return ret;
				break;
			case EV_CREDIT:
				on_credit_timer(d);
				break;
			case EV_FOLD:
				on_fold_timer(d);
				fold = true; /* the one that was deferred */
				break;
			case EV_NUDGE:
				on_nudge_timer(d);
				break;
			case EV_SIGNAL:
				if (on_signal(d))
					return 0;
				break;
			}
		}
		/*
		 * A signal asks for a fold only while a CPU lags the horizon: one sent just before
		 * a pass took the evidence it announces (the waiter's own switch into its sleep,
		 * say) would otherwise cost a second pass for nothing.
		 */
		if (fold && !publisher_lagging(&d->pub))
			fold = false;
		if (poll_now)
			fold = true;
		credit = take_credit(d, &fold);
		/*
		 * A deferred credit pass folds every slot when it runs: no pass before it, but
		 * the heartbeat's (the file is never more than a period stale).
		 */
		if (d->deferring)
			poll_now = fold = false;
		fold = fold || beat;
		/*
		 * A credit pass folds too, under its own limit.  A fold without a token waits for
		 * ffd (take_fold), and so does a pass that asked to go again: no loop without a
		 * sleep, whatever the events.
		 */
		if (!credit && fold && !take_fold(d))
			poll_now = fold = false;
		if (!fold && !credit)
			continue;
		ret = run_pass(d, credit);
		if (ret < 0)
			return ret;
		poll_now = ret;
		follow_charge(d, bd_mono_ns());
		/*
		 * Following, the daemon moves the horizon at every pass and library waiters do not
		 * ring (NO_RING_ARMED): their nudges come from these horizons.
		 */
		if (d->pub.armed)
			nudge_track(d, true);
		ret = serve_legacy(d);
		if (ret)
			return ret;
	}
}

int daemon_run(const struct barrierd_options *o)
{
	struct daemon d;
	char err[512] = "";
	bool started = false;
	int ret;

	memset(&d, 0, sizeof(d));
	d.o = o;
	d.epfd = d.tfd = d.sfd = d.cfd = d.ffd = d.nfd = d.online_fd = -1;
	d.notify.fd = -1;
	d.bell.efd = -1;
	d.sf.fd = d.sf.lock_fd = d.sf.inode_lock_fd = d.sf.dfd = d.sf.lock_dfd = -1;
	d.slots.lfd = -1;
	ret = setup(&d, err, sizeof(err));
	if (ret) {
		log_err("%s", err[0] ? err : strerror(-ret));
	} else {
		started = true;
		log_info("serving %s: %llu CPUs, %zu tracepoints, generation %llu, vtime %llu",
			 o->state_path, (unsigned long long)d.sf.ncpu, d.probes.n_links,
			 (unsigned long long)d.sf.hdr->generation, (unsigned long long)d.pub.vtime);
		notify_send(&d.notify, "READY=1");
		send_status(&d, bd_mono_ns());
		d.next_status_ns = bd_mono_ns() + STATUS_PERIOD_NS;
		if (d.notify.watchdog_ns) {
			notify_send(&d.notify, "WATCHDOG=1");
			d.next_watchdog_ns = bd_mono_ns() + d.notify.watchdog_ns / 2;
		}
		ret = loop(&d);
	}

	notify_send(&d.notify, "STOPPING=1");
#ifdef BARRIERD_TEST_HOOKS
	if (d.hook_started) {
		hook_release(&d, 2);
		pthread_join(d.hook_thread, NULL);
	}
#endif
	doorbell_stop(&d.bell);
	slot_server_stop(&d.slots);
	nudger_stop(&d.nudger);
	free(d.nudge_want);
	/*
	 * The file itself first: truncated, replaced or removed since the last heartbeat?  A
	 * truncated file gets the stopped flag only (state_file_stop_truncated); a replaced or
	 * removed one is still our inode, stopped as usual, and the path is never touched: what
	 * it names now is someone else's.
	 */
	if (d.sf.hdr && state_file_check(&d.sf) && !ret)
		ret = -ESTALE;
	if (d.sf.hdr && d.sf.fault == STATE_FILE_TRUNCATED) {
		state_file_stop_truncated(&d.sf);
	} else if (d.sf.hdr) {
		/* What we stop on must be ours: a foreign value found now is reset, not kept. */
		if (!d.foreign && d.pub.ns && publisher_check(&d.pub))
			d.foreign = true;
		if (d.foreign) {
			/* Another writer: none of the words can be vouched for (DESIGN rule 10). */
			state_file_reset_foreign(&d.sf);
		} else {
			/*
			 * Valid but stopped: values stay (they are true), clients see no one
			 * publishes.  The snapshot is what we published; nothing, if the
			 * publisher never started (zeros: the reset).
			 */
			state_file_set_stopped(&d.sf, d.pub.ns ? d.pub.g_ns : 0,
					       d.pub.ns ? d.pub.g_vt : 0);
		}
	}
	anchor_destroy(&d.anchor);
	probes_destroy(&d.probes);
	publisher_free(&d.pub);
	/*
	 * A failed start removes what it created (a new state file, the lock files): never a
	 * file it found, which it has reset and leaves.  Under the sandbox it cannot unlink.
	 */
	if (!started && !d.sandboxed)
		state_file_discard(&d.sf);
	state_file_close(&d.sf);
	if (d.epfd >= 0)
		close(d.epfd);
	if (d.tfd >= 0)
		close(d.tfd);
	if (d.cfd >= 0)
		close(d.cfd);
	if (d.ffd >= 0)
		close(d.ffd);
	if (d.nfd >= 0)
		close(d.nfd);
	if (d.sfd >= 0)
		close(d.sfd);
	if (d.online_fd >= 0)
		close(d.online_fd);
	notify_close(&d.notify);
	return ret ? 1 : 0;
}
