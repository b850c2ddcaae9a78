// SPDX-License-Identifier: MIT
#include "daemon.h"
#include "bd_sync.h"
#include "demand.h"
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
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>
#ifdef BARRIERD_TEST_HOOKS
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#endif

#define MAX_AGAIN 8

enum { EV_RB = 1, EV_DOORBELL, EV_SIGNAL, EV_OPEN };

struct daemon {
	const struct barrierd_options *o;
	struct state_file sf;
	struct probes probes;
	struct publisher pub;
	struct doorbell bell;
	struct nudger nudger;	  /* started only with --nudge-after > 0 and SCHED_FIFO allowed */
	struct slot_server slots; /* the slot socket (rule 11); lfd -1 when not served */
	struct anchor anchor;	  /* this run's identity for the slot socket (anchor.h) */
	uint64_t generation;	  /* this run's: fixed before the anchor names it */
	struct demand dm;	  /* when to look: every decision (demand.h) */
	bool *nudge_can, *nudge_lag, *nudge_want; /* per CPU, for a nudge look */
	long *nudge_own;			  /* per CPU: its own words' sleepers */
	int epfd, sfd, online_fd;
	int ofd;		/* inotify: opens of the state file (the peek window); -1 none */
	bool no_pwait2;		/* the kernel has no epoll_pwait2: millisecond timeouts */
	bool followed;		/* following as last logged (note_following) */
	uint64_t follow_logged; /* when a start of following was last logged */
	bool rb_paused;		/* the ring buffer unwatched (demand: out of pass tokens) */
	bool bell_paused;	/* the doorbell's eventfd unwatched (following, out of tokens) */
	bool opens_paused;	/* the opens unwatched (the peek window is open) */
	struct notifier notify;
	uint64_t cpu_mark; /* the daemon's CPU time at the latest charge (demand_charge) */
	uint64_t next_watchdog_ns, next_status_ns;
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

/*
 * A busy CPU not heard from for this long runs without ticks (nohz_full): a credit pass does
 * not wait for its signal (demand.c, take_credit).  Several ticks at HZ=100.
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

/*
 * Wait for events until `due` (absolute CLOCK_MONOTONIC; 0: no time set), or only look if
 * `poll`.  The loop's one timer is this wait's timeout: epoll_pwait2 takes it to the nanosecond
 * (an epoll timeout in milliseconds turned a 100 us credit gap into 1 ms), and it costs no
 * timerfd_settime and no read of an expiry at each wake-up, which the idle peek makes often.
 * Kernels without it (before 5.11): epoll_wait, rounded up to the millisecond.
 */
static int wait_events(struct daemon *d, struct epoll_event *evs, int max, uint64_t due, bool poll)
{
	struct timespec ts = {0, 0};
	uint64_t now, rel = 0;
	int n;

	if (!poll && due) {
		now = bd_mono_ns();
		rel = due > now ? due - now : 0;
		ts.tv_sec = (time_t)(rel / 1000000000ULL);
		ts.tv_nsec = (long)(rel % 1000000000ULL);
	}
	if (!d->no_pwait2) {
		n = epoll_pwait2(d->epfd, evs, max, poll || due ? &ts : NULL, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		d->no_pwait2 = true;
	}
	return epoll_wait(d->epfd, evs, max, poll ? 0 : due ? (int)((rel + 999999) / 1000000) : -1);
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
 * A nudge look is due (docs/DEMAND.md, "Nudges"): the demand unit names the served time the
 * CPUs must pass, the publisher finds who lags it and who sleeps, the demand unit picks whom to
 * nudge, and each is nudged within its rate limit.
 */
static void nudge_look(struct daemon *d, uint64_t now)
{
	uint64_t upto = demand_nudge_upto(&d->dm, now), lagging, targets, sent = 0;
	uint64_t held_until = 0;
	long global;

	if (!upto)
		return;
	for (uint64_t c = 0; c < d->sf.ncpu; c++)
		d->nudge_can[c] = nudger_can(&d->nudger, c);
	lagging = publisher_nudge_facts(&d->pub, upto, sched_getcpu(), d->nudge_can, d->nudge_lag,
					d->nudge_own, &global);
	targets = demand_nudge_pick(d->sf.ncpu, d->nudge_can, d->nudge_lag, d->nudge_own, global,
				    lagging, d->nudge_want);
	for (uint64_t c = 0; c < d->sf.ncpu && targets; c++)
		if (d->nudge_want[c] && nudger_nudge(&d->nudger, c, now, &held_until)) {
			sent++;
			log_debug("nudged cpu %llu: it lags a served time %.3f ms old",
				  (unsigned long long)c, (double)(now - upto) / 1e6);
		}
	if (sent)
		bd_store(&d->sf.ext->nudges, bd_load(&d->sf.ext->nudges) + sent);
	demand_nudge_done(&d->dm, now, upto, lagging, targets, held_until);
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
		if (!ret) {
			d->nudge_want = calloc(d->sf.ncpu, sizeof(*d->nudge_want));
			d->nudge_can = calloc(d->sf.ncpu, sizeof(*d->nudge_can));
			d->nudge_lag = calloc(d->sf.ncpu, sizeof(*d->nudge_lag));
			d->nudge_own = calloc(d->sf.ncpu, sizeof(*d->nudge_own));
			if (!d->nudge_can || !d->nudge_lag || !d->nudge_own) {
				free(d->nudge_want);
				d->nudge_want = NULL;
			}
		}
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
 * --max-credit-rate, folds by the demand unit's fold cap, the rest by its timeouts.
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

/*
 * Opens of the state file start the peek window (docs/DEMAND.md, "The heartbeat, the probe and
 * the peek"): a client that starts opens the file before it waits.  The watch is on the inode
 * the daemon holds (through /proc/self/fd: the path may name another file by now), by anyone,
 * through any path or mount.  Set up last, before the sandbox (which forbids opening files), so
 * none of the daemon's own opens is seen.  Without it the daemon peeks all the time.
 */
static void watch_opens(struct daemon *d)
{
	char proc[64];
	int ret = 0;

	d->ofd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", d->sf.fd);
	if (d->ofd < 0 || inotify_add_watch(d->ofd, proc, IN_OPEN) < 0 ||
	    (ret = add_fd(d->epfd, d->ofd, EV_OPEN))) {
		log_warn("cannot watch opens of the state file (%s): peeking for clients that "
			 "cannot ring all the time",
			 strerror(ret ? -ret : errno));
		if (d->ofd >= 0)
			close(d->ofd);
		d->ofd = -1;
	}
}

/* The event loop's descriptors: epoll and the signalfd for the stop signals (no timers: the
 * loop's one timeout is epoll_pwait2's, at the time the demand unit names). */
static int setup_event_loop(struct daemon *d, const sigset_t *mask, char *err, size_t errlen)
{
	int ret;

	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->epfd < 0 || d->sfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot set up the event loop: %s", strerror(-ret));
		return ret;
	}
	if ((ret = add_fd(d->epfd, probes_rb_fd(&d->probes), EV_RB)) ||
	    (ret = add_fd(d->epfd, d->bell.efd, EV_DOORBELL)) ||
	    (ret = add_fd(d->epfd, d->sfd, EV_SIGNAL))) {
		snprintf(err, errlen, "cannot set up the event loop: %s", strerror(-ret));
		return ret;
	}
	watch_opens(d);
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
		/* ARMED is never set (docs/DEMAND.md): a previous daemon's is cleared here. */
		uint64_t run = BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION |
			       BARRIERD_FEAT_DOORBELL | BARRIERD_FEAT_SERVED |
			       BARRIERD_FEAT_CPU_FLAGS |
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
 * The per-CPU flags: what the kernel says of each CPU (nohz_full, isolated: no
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

/* The demand unit's facts now, against its horizon. */
static void gather(struct daemon *d, struct demand_facts *f)
{
	*f = (struct demand_facts){0};
	publisher_facts(&d->pub, d->dm.horizon, sched_getcpu(), bd_mono_ns(), OWED_SILENT_NS, f);
}

/*
 * The demand unit raised H (and S): the handshake for H, then S published.  A stamp that moved
 * under the handshake may not have signalled: a pass folds it.
 */
static int raise_served(struct daemon *d)
{
	int ret = publisher_raise(&d->pub, d->dm.horizon);

	if (ret < 0) {
		foreign_or_fault(d);
		return ret;
	}
	if (ret > 0)
		d->dm.fold_asked = true;
	publisher_publish_served(&d->pub, d->dm.served);
	return 0;
}

/*
 * One pass as the demand unit asked, repeated while the watermark handshake asks for it and a
 * token allows: each fold is followed by the demand unit's S (published before the wakes, so a
 * waiter the pass wakes reads it), its count of sleepers that cannot ring, and the charge.
 */
static int run_pass(struct daemon *d, bool credit)
{
	struct demand_facts f;
	bool again = false, follow = d->dm.following, recount = false;
	int ret = 0;

	for (int i = 0; i < MAX_AGAIN; i++) {
		ret = publisher_pass_fold(&d->pub, credit && i == 0, follow, &again);
		if (ret == -EBUSY)
			foreign_or_fault(d);
		if (ret)
			return ret;
		gather(d, &f);
		f.legacy = d->pub.legacy;
		/* Each pass after the first is a fold of its own: it takes a token. */
		recount = demand_after_pass(
		    &d->dm, &f, d->pub.horizon, credit && i == 0,
		    again && (i + 1 == MAX_AGAIN || !demand_again(&d->dm, f.now)));
		publisher_pass_finish(&d->pub, d->dm.served);
		if (!again || d->dm.fold_asked)
			break;
	}
	ret = publisher_heartbeat(&d->pub, bd_mono_ns());
	if (ret) {
		foreign_or_fault(d);
		return ret;
	}
	{
		uint64_t cpu = daemon_cpu_ns();

		demand_charge(&d->dm, bd_mono_ns(), cpu - d->cpu_mark);
		d->cpu_mark = cpu;
	}
	/* Sleepers that cannot ring, counted before the wakes: still asleep after them? */
	if (recount) {
		bool raise;

		gather(d, &f);
		f.legacy = publisher_count_legacy(&d->pub, 0, NULL, false);
		demand_legacy_asleep(&d->dm, &f, &raise);
		if (raise)
			return raise_served(d);
	}
	return 0;
}

/*
 * Rings to serve, whose ringers all stamped before `when` (DEMAND.md, "The doorbell"): the
 * demand unit raises H and S to it and asks for a credit pass, which reads r after this.  A later
 * `when` would ask for events the ringers do not need.
 */
static int serve_ring(struct daemon *d, uint64_t now, uint64_t when)
{
	int ret;

	demand_ring(&d->dm, now, when);
	ret = raise_served(d);
	if (ret)
		return ret;
	/* Only if our switch away from it stamps it (publisher_quiet). */
	if (d->probes.switch_stamps)
		publisher_quiet(&d->pub, sched_getcpu());
	return 0;
}

/*
 * A client rang the doorbell (or the doorbell's wait expired: a ring may have been lost): count
 * the rings and serve them.  The ringer stamped before it rang, and the doorbell thread read its
 * clock when the ring woke it: every stamp of a ring drained here is earlier than the latest such
 * reading.
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
	if (__atomic_exchange_n(&d->bell.saturated, 0, __ATOMIC_RELAXED))
		demand_saturated(&d->dm, now);
	return 0;
}

/*
 * The heartbeat's duties: the foreign-writer check, the heartbeat, the watchdog, the status
 * line, the nudge flags and the doorbell thread's place.  0, or -EBUSY (another writer: stop).
 */
static int beat(struct daemon *d, uint64_t now)
{
	/*
	 * The file itself before any of its words: truncated (the mapping would fault), replaced
	 * or removed (we would publish into an inode no new client opens).  Two stats a period.
	 */
	int ret = state_file_check(&d->sf);

	if (ret)
		return ret;
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
		return serve_ring(d, now, now);
	}
	return 0;
}

/*
 * Count the sleepers that cannot ring (original-layout clients), without waking them: the
 * heartbeat's probe (global words and PROBE_CPUS per-CPU words, confirmed) or the peek between
 * (global words only).  The demand unit decides what follows.
 */
static int probe(struct daemon *d, bool full)
{
	struct demand_facts f;
	bool raise;
	long global;
	long n = publisher_count_legacy(&d->pub, full ? PROBE_CPUS : 0, &global, true);

	gather(d, &f);
	f.legacy = n;
	f.global = global;
	demand_probed(&d->dm, &f, full, &raise);
	return raise ? raise_served(d) : 0;
}

/*
 * Watch the ring buffer and the doorbell's eventfd or not, as the demand unit's pause says: out
 * of tokens, their events would only wake us to find none.  The doorbell's only while
 * following (a ring's credit pass has a cap of its own); the eventfd keeps counting meanwhile.
 */
static void watch(struct daemon *d)
{
	struct epoll_event ev = {.events = d->dm.paused ? 0 : EPOLLIN, .data.u64 = EV_RB};
	bool bell = d->dm.paused && d->dm.following;

	/*
	 * Opens only while the peek window is closed: opened, it lasts a while whatever else
	 * opens the file, so opens in a loop wake the daemon no more than the peeks do.  They queue
	 * meanwhile (identical events merge into one) and are read when it closes.
	 */
	if (d->ofd >= 0 && d->opens_paused != d->dm.peeking) {
		struct epoll_event o = {.events = d->dm.peeking ? 0 : EPOLLIN, .data.u64 = EV_OPEN};

		epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->ofd, &o);
		d->opens_paused = d->dm.peeking;
	}

	if (d->rb_paused != d->dm.paused) {
		epoll_ctl(d->epfd, EPOLL_CTL_MOD, probes_rb_fd(&d->probes), &ev);
		d->rb_paused = d->dm.paused;
	}
	if (d->bell_paused != bell) {
		ev.events = bell ? 0 : EPOLLIN;
		ev.data.u64 = EV_DOORBELL;
		epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->bell.efd, &ev);
		d->bell_paused = bell;
	}
}

/*
 * The state file was opened: one read drains what queued (an overflow of the queue is an open
 * too), the demand unit opens the peek window.  The watch cannot go while the daemon holds the
 * file; if it did, the daemon would peek all the time.
 */
static void on_open(struct daemon *d)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(d->ofd, buf, sizeof(buf));

	if (n <= 0)
		return;
	for (ssize_t i = 0; i + (ssize_t)sizeof(struct inotify_event) <= n;) {
		const struct inotify_event *e = (const struct inotify_event *)(buf + i);

		if (e->mask & IN_IGNORED) {
			log_warn("the watch on the state file's opens is gone: peeking for clients "
				 "that cannot ring all the time");
			demand_opens_lost(&d->dm);
		}
		i += (ssize_t)(sizeof(*e) + e->len);
	}
	demand_opened(&d->dm, bd_mono_ns());
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
 * Following started or stopped (the demand unit's decision): logged, a start at most once a
 * minute, since anyone can make the daemon follow.
 */
static void note_following(struct daemon *d, uint64_t now)
{
	if (d->dm.following == d->followed)
		return;
	d->followed = d->dm.following;
	if (!d->followed) {
		log_debug("following stopped (no client that cannot ring for a while)");
	} else if (!d->follow_logged || now >= d->follow_logged + 60 * 1000000000ULL) {
		d->follow_logged = now;
		log_info("following every pass: a client that cannot ring waits (or rings come "
			 "faster than the doorbell serves them)");
	}
}

/*
 * The main loop dispatches: events tell the demand unit what happened, the demand unit says
 * what is due (duties, a pass) and when to look again (the one timer), and the loop does it.
 */
static int loop(struct daemon *d)
{
	struct demand_cfg cfg = {
	    .heartbeat_ns = d->o->heartbeat_period_ns,
	    /* The watchdog is pinged from the beat: at least four beats per interval. */
	    .beat_ns = d->notify.watchdog_ns ? d->notify.watchdog_ns / 4 : 0,
	    .idle_credit_ns = d->o->idle_credit_interval_ns,
	    .nudge_after_ns = d->o->nudge_after_ns,
	    .credit_rate = d->o->max_credit_rate,
	    .always_follow = d->o->always_armed,
	    .nudges = d->nudge_want != NULL,
	    .opens_watched = d->ofd >= 0,
	};
	struct demand_facts f;
	int ret;

	demand_init(&d->dm, &cfg, bd_mono_ns());
	d->cpu_mark = daemon_cpu_ns();
	/* A first pass right away: every CPU's state known, and the watermark set if following. */
	ret = run_pass(d, true);
	if (ret < 0)
		return ret;

	for (;;) {
		struct epoll_event evs[8];
		unsigned act;
		int n;

		gather(d, &f);
		watch(d);
		n = wait_events(d, evs, 8, demand_due(&d->dm, &f),
				d->dm.fold_asked && !d->dm.paused);
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
				demand_signal(&d->dm);
				break;
			case EV_DOORBELL:
				ret = on_doorbell(d);
				if (ret)
					return ret;
				break;
			case EV_SIGNAL:
				if (on_signal(d))
					return 0;
				break;
			case EV_OPEN:
				on_open(d);
				break;
			}
		}
		uint64_t now = bd_mono_ns();

		act = demand_duties(&d->dm, now);
		if (act & DEMAND_BEAT) {
			ret = beat(d, now);
			if (ret)
				return ret;
		}
		if (act & (DEMAND_PROBE | DEMAND_PEEK)) {
			ret = probe(d, act & DEMAND_PROBE);
			if (ret)
				return ret;
		}
		if (act & DEMAND_NUDGE)
			nudge_look(d, now);
		gather(d, &f);
		act = demand_pass(&d->dm, &f);
		if (act) {
			ret = run_pass(d, act & DEMAND_CREDIT);
			if (ret < 0)
				return ret;
		}
		note_following(d, now);
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
	d.epfd = d.sfd = d.online_fd = d.ofd = -1;
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
	free(d.nudge_can);
	free(d.nudge_lag);
	free(d.nudge_own);
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
	if (d.sfd >= 0)
		close(d.sfd);
	if (d.ofd >= 0)
		close(d.ofd);
	if (d.online_fd >= 0)
		close(d.online_fd);
	notify_close(&d.notify);
	return ret ? 1 : 0;
}
