// SPDX-License-Identifier: MIT
#include "publisher.h"
#include "log.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline void lfence(void)
{
	__asm__ __volatile__("lfence" ::: "memory");
}

static inline void mfence(void)
{
	__asm__ __volatile__("mfence" ::: "memory");
}

static inline uint64_t umax(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/*
 * Read the online mask ("0-3,5").  On failure every CPU counts as online, so a read error can
 * only withhold offline credit, never give it.
 */
static int read_online(struct publisher *p)
{
	char *buf = p->online_buf, *s = buf;
	ssize_t n = pread(p->online_fd, buf, p->online_buf_len, 0);

	memset(p->online, 1, p->ncpu);
	/*
	 * A whole list ends in a newline and fits the buffer (sized for the worst list of ncpu
	 * ids).  A list cut short would mark every CPU after the cut offline: refuse it.
	 */
	if (n <= 0 || (size_t)n >= p->online_buf_len || buf[n - 1] != '\n')
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	memset(p->changed, 0, p->ncpu); /* scratch for the parse */
	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			return -EIO;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (unsigned long c = a; c <= b && c < p->ncpu; c++)
			p->changed[c] = 1;
		if (*end != ',' && *end != '\n')
			return -EIO;
		s = *end == ',' ? end + 1 : end;
	}
	memcpy(p->online, p->changed, p->ncpu);
	memset(p->changed, 0, p->ncpu);
	return 0;
}

int publisher_init(struct publisher *p, struct state_file *sf, struct barrierd_slot *slots,
		   volatile uint64_t *bss_vtime, volatile uint64_t *bss_watermark,
		   volatile uint64_t *bss_main_switches, uint64_t ncpu, int online_fd)
{
	struct barrierd_header *h = sf->hdr;
	uint64_t maxv;

	memset(p, 0, sizeof(*p));
	p->sf = sf;
	p->slots = slots;
	p->bss_vtime = bss_vtime;
	p->bss_watermark = bss_watermark;
	p->bss_main_switches = bss_main_switches;
	p->ncpu = ncpu;
	p->online_fd = online_fd;
	p->ns = calloc(ncpu, sizeof(*p->ns));
	p->vt = calloc(ncpu, sizeof(*p->vt));
	p->state = calloc(ncpu, 1);
	p->kind = calloc(ncpu, 1);
	p->online = calloc(ncpu, 1);
	p->changed = calloc(ncpu, 1);
	/* "0,2,4,..." at worst: every id with its separator, plus the newline and a spare byte */
	p->online_buf_len = ncpu * 7 + 16;
	p->online_buf = malloc(p->online_buf_len);
	if (!p->ns || !p->vt || !p->state || !p->kind || !p->online || !p->changed ||
	    !p->online_buf) {
		publisher_free(p);
		return -ENOMEM;
	}

	/*
	 * Within one boot no published field ever decreases (the file was reset if it came from
	 * another boot): keep the values the open-time check accepted, and resume vtime above
	 * every published vtime, so a client's vtime stamp taken before this restart can only be
	 * passed by new evidence.  The file must still hold exactly those values: anything else
	 * was written since the check, by someone else.
	 */
	maxv = umax(sf->own_vtime, sf->own_vt);
	for (uint64_t c = 0; c < ncpu; c++) {
		p->ns[c] = sf->own_cpu_ns[c];
		p->vt[c] = sf->own_cpu_vt[c];
		maxv = umax(maxv, p->vt[c]);
	}
	p->g_ns = sf->own_ns;
	p->g_vt = sf->own_vt;
	if (load64(&h->vtime) != sf->own_vtime || load64(&h->last_interrupt_ns) != p->g_ns ||
	    load64(&h->last_interrupt_vtime) != p->g_vt || publisher_verify(p))
		return -EBUSY;
	p->vtime = maxv + 1;
#ifdef BARRIERD_MUTANT_VTIME_RESTART_LOW /* mutant for tests/audit: breaks rule 4 */
	p->vtime = 1;
#endif
	/* The file first, .bss second (rule 4); nothing is attached yet. */
	pub64(&h->vtime, p->vtime);
	*p->bss_vtime = p->vtime;
	*p->bss_watermark = 0;
	memset(p->online, 1, ncpu); /* no mask (simulations): every CPU is online */
	if (p->online_fd >= 0 && read_online(p))
		return -EIO;
	p->sf->own_vtime = p->vtime;
	return 0;
}

static uint64_t thread_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

void publisher_arm_detach_check(struct publisher *p)
{
	if (!p->bss_main_switches)
		return;
	/*
	 * The program's count first, the kernel's second: a switch in between raises only the
	 * kernel's baseline, which can hide one missed switch but never raise a false alarm.
	 */
	p->bpf_base = __atomic_load_n(p->bss_main_switches, __ATOMIC_ACQUIRE);
	p->rusage_base = thread_switches();
}

/*
 * Rule 6, for the credit itself: were the programs attached at some instant after the idle
 * RMWs?  Force a switch of this thread (a short sleep) and see the program count it.  The
 * program's count is loaded first, after the RMWs (locked: no later load is performed before
 * them), so any increment seen afterwards comes from a switch after the RMWs, traced by an
 * attached program.  The kernel's count only tells that a switch did happen (it is raised in
 * the same __schedule() call, before the tracepoint), so that a missing increment means a
 * detached program and not a sleep that never slept.  0, -ENOLINK (detached), or -EAGAIN (no
 * switch could be forced: the caller withholds idle credit).
 */
#define FORCED_SWITCH_TRIES 12 /* sleeps of 1 us, doubling: about 4 ms in all at worst */

static __attribute__((unused)) int attached_after_rmws(struct publisher *p)
{
	uint64_t b0, k0;

	if (!p->bss_main_switches)
		return 0;
	b0 = __atomic_load_n(p->bss_main_switches, __ATOMIC_ACQUIRE);
	k0 = thread_switches();
	for (int i = 0; i < FORCED_SWITCH_TRIES; i++) {
		struct timespec ts = {0, 1000L << i};

		/* The main thread's timer slack is 1 ns (daemon setup): this really is ~1 us. */
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		if (thread_switches() == k0)
			continue; /* the timer expired before we slept: no switch */
		if (__atomic_load_n(p->bss_main_switches, __ATOMIC_ACQUIRE) > b0)
			return 0;
		log_err("the kernel switched the daemon out after the idle check, the BPF program "
			"did not see it: the programs were detached; refusing to credit idle CPUs");
		return -ENOLINK;
	}
	return -EAGAIN;
}

/* Rule 6: has the kernel switched this thread out more often than the program saw? */
static int detach_check(struct publisher *p)
{
	uint64_t k, b;

	if (!p->bss_main_switches)
		return 0;
	/* Kernel first, program second: every switch counted by the kernel has been traced. */
	k = thread_switches() - p->rusage_base;
	b = __atomic_load_n(p->bss_main_switches, __ATOMIC_ACQUIRE) - p->bpf_base;
	if (k > b) {
		log_err("the kernel switched the daemon out %llu times, the BPF program saw %llu: "
			"the programs were detached; refusing to credit idle CPUs",
			(unsigned long long)k, (unsigned long long)b);
		return -ENOLINK;
	}
	return 0;
}

static void wake(struct publisher *p, uint64_t *word)
{
	futex_wake_word(word);
	p->futex_wakes++;
}

bool publisher_idle_hold(const struct publisher *p, uint64_t *held)
{
	for (uint64_t c = 0; c < p->ncpu; c++) {
		if (p->ns[c] == p->g_ns && p->state[c] != BARRIERD_CPU_BUSY) {
			*held = p->g_ns;
			return true;
		}
	}
	return false;
}

bool publisher_idle_holds_back(const struct publisher *p, uint64_t now_ns, uint64_t age_ns)
{
	uint64_t held;

	return publisher_idle_hold(p, &held) && now_ns >= held + age_ns;
}

void publisher_set_armed(struct publisher *p, bool armed)
{
	struct barrierd_header *h = p->sf->hdr;

	if (p->armed == armed)
		return;
	p->armed = armed;
	if (!armed)
		*p->bss_watermark = 0;
	/* One RMW (never lose a stop bit), then a wake of the flags word's sleepers. */
	state_flags_update(&h->flags, armed ? 0 : BARRIERD_FLAG_ARMED,
			   armed ? BARRIERD_FLAG_ARMED : 0);
	if (!armed) {
		/* The flag is visible before these wakes: a woken waiter sees it and rings. */
		wake(p, &h->last_interrupt_ns);
		wake(p, &h->last_interrupt_vtime);
		for (uint64_t c = 0; c < p->ncpu; c++) { /* barrierd_wait_cpus() sleepers */
			wake(p, &h->per_cpu[c].last_interrupt_ns);
			wake(p, &h->per_cpu[c].last_interrupt_vtime);
		}
	}
	log_debug("watermark %s", armed ? "armed" : "disarmed (no waiters)");
}

static long count_word(uint64_t *word)
{
	/* Requeue every waiter onto the very same word, waking none: the count is the result. */
	long n = syscall(SYS_futex, (uint32_t *)word, FUTEX_CMP_REQUEUE, 0, (void *)(long)INT32_MAX,
			 (uint32_t *)word, (uint32_t)load64(word));

	return n < 0 ? (errno == EAGAIN ? 1 : 0) : n;
}

long publisher_count_waiters(struct publisher *p, uint64_t max_cpus)
{
	struct barrierd_header *h = p->sf->hdr;
	long n = count_word(&h->last_interrupt_ns) + count_word(&h->last_interrupt_vtime);

	if (max_cpus > p->ncpu)
		max_cpus = p->ncpu;
	for (uint64_t i = 0; i < max_cpus; i++) {
		uint64_t c = p->probe_next++ % p->ncpu;

		n += count_word(&h->per_cpu[c].last_interrupt_ns);
		n += count_word(&h->per_cpu[c].last_interrupt_vtime);
	}
	return n;
}

int publisher_verify(struct publisher *p)
{
	struct barrierd_header *h = p->sf->hdr;

	for (uint64_t c = 0; c < p->ncpu; c++) {
		if (load64(&h->per_cpu[c].last_interrupt_ns) != p->ns[c] ||
		    load64(&h->per_cpu[c].last_interrupt_vtime) != p->vt[c]) {
			log_err("%s: cpu %llu holds values this daemon did not write (is the original "
				"barrierd running on it?); refusing to share it",
				p->sf->path, (unsigned long long)c);
			return -EBUSY;
		}
	}
	return 0;
}

void publisher_heartbeat(struct publisher *p, uint64_t now_ns)
{
	pub64(&p->sf->hdr->heartbeat_ns, now_ns);
}

int publisher_pass(struct publisher *p, bool credit, bool *again)
{
	struct barrierd_header *h = p->sf->hdr;
	struct barrierd_ext *x = p->sf->ext;
	uint64_t r = 0, v = 0, gns = UINT64_MAX, gvt = UINT64_MAX, wm = UINT64_MAX;
	uint64_t min_cpu = 0;
	int self = -1, here;
	bool quieted = false;
	int ret;

	*again = false;
	/* Only we write this file (we hold the lock); any other value is a foreign writer. */
	if (load64(&h->magic) != BARRIERD_MAGIC || load64(&h->vtime) != p->vtime ||
	    load64(&h->last_interrupt_ns) != p->g_ns ||
	    load64(&h->last_interrupt_vtime) != p->g_vt) {
		log_err("%s holds values this daemon did not write (is the original barrierd "
			"running on it?); refusing to share it",
			p->sf->path);
		return -EBUSY;
	}
	/* And every per-CPU word: a raised one must not outlive even a kill -9 for long. */
	ret = publisher_verify(p);
	if (ret)
		return ret;

	/*
	 * Advance vtime: the state file first, .bss second (rule 4).  An event that loads the
	 * new value from .bss does so after the file shows it, hence after every client that
	 * read an older vtime from the file.  TSO keeps these two stores in order.
	 */
	p->vtime++;
	p->sf->own_vtime = p->vtime;
	pub64(&h->vtime, p->vtime);
	*p->bss_vtime = p->vtime;

	if (credit) {
		ret = detach_check(p);
		if (ret)
			return ret;
		/*
		 * Rules 2 and 3: the clock (r) first; LFENCE so the vtime load below cannot be
		 * performed before the clock read; then v, the vtime the file shows now.
		 */
		r = mono_ns();
		lfence();
		v = load64(&h->vtime);
		/*
		 * Rule 3's drain: our vtime store and all earlier stores are globally visible
		 * before we read the online mask.  A CPU that comes up sets its bit (locked)
		 * before running any task, so a clear bit read after this fence means the CPU
		 * runs nothing until after r, and it will see v.
		 */
#ifndef BARRIERD_MUTANT_OFFLINE_NO_DRAIN /* mutant for tests/audit: breaks rule 3 */
		mfence();
#endif
		if (p->online_fd >= 0 && read_online(p))
			log_warn("cannot read the online CPU mask; no offline credit this pass");
		for (uint64_t c = 0; c < p->ncpu; c++) {
			uint64_t old;

			if (!p->online[c])
				continue;
			/*
			 * Rule 2: a locked RMW, never a plain or seq_cst load (a plain MOV).  Locked
			 * RMWs on one word are totally ordered, so if it reads IDLE, the CPU's next
			 * exit from idle (its xchg to BUSY) comes after this RMW, after r; and the
			 * RMW drains our store buffer, so v is visible before that CPU runs user code.
			 */
#ifdef BARRIERD_MUTANT_IDLE_PLAIN_LOAD /* mutant for tests/audit: breaks rule 2 */
			old = __atomic_load_n(&p->slots[c].idle, __ATOMIC_SEQ_CST);
#else
			old = __atomic_fetch_add(&p->slots[c].idle, 0, __ATOMIC_SEQ_CST);
#endif
#ifdef BARRIERD_MUTANT_IDLE_COUNTER /* mutant for tests/audit: breaks rule 2 */
			old = old != 0 ? BARRIERD_SLOT_IDLE : BARRIERD_SLOT_BUSY;
#endif
			p->state[c] = old == BARRIERD_SLOT_IDLE ? BARRIERD_CPU_IDLE : BARRIERD_CPU_BUSY;
		}
#ifdef BARRIERD_MUTANT_IDLE_CLOCK_AFTER_RMW /* mutant for tests/audit: breaks rule 2 */
		r = mono_ns();
		v = load64(&h->vtime);
#endif
		/*
		 * Rule 6: an IDLE read above is evidence only if the switch program was attached
		 * after it (the check before the RMWs sees a detach only once this thread has
		 * slept since; a ring wakes us with a switch *in*, which no count sees).
		 */
#ifndef BARRIERD_MUTANT_DETACH_CHECK_BEFORE_CREDIT /* mutant for tests/audit: breaks rule 6 */
		ret = attached_after_rmws(p);
		if (ret == -ENOLINK)
			return ret;
		if (ret) {
			log_warn("could not force a switch to check the programs: no idle credit "
				 "this pass");
			for (uint64_t c = 0; c < p->ncpu; c++)
				if (p->state[c] == BARRIERD_CPU_IDLE)
					p->state[c] = BARRIERD_CPU_BUSY;
		}
#endif
		/*
		 * The CPU this thread runs on executed the locked RMWs above after r (rule 1
		 * applied to our own event): its earlier stores were drained by them and its later
		 * loads come after them.  If we migrated since the last RMW, the CPU we run on now
		 * switched us in after it, through the scheduler's locked instructions: it passed r
		 * as well.  Without this, a daemon that was already running when a client stamped
		 * would hold its own CPU back until that CPU's next event.
		 */
		self = sched_getcpu();
	}

	/*
	 * The CPU this pass runs on is busy with us, and goes idle (or back to its task) the
	 * moment we sleep, through a switch of ours that never signals.  Publishing it as BUSY
	 * would tell waiters that an event will come by itself; DAEMON tells them to ring, which
	 * earns it the self credit above.  It stays out of the watermark for the same reason.
	 */
	here = self >= 0 ? self : sched_getcpu();

	/* Fold: each value only grows (a nested program can store an older stamp later). */
	for (uint64_t c = 0; c < p->ncpu; c++) {
		uint8_t old_state = p->state[c];
		struct barrierd_slot *s = &p->slots[c];
		uint64_t st = __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE);
		uint64_t sv = __atomic_load_n(&s->vtime, __ATOMIC_ACQUIRE);
		uint64_t idle = __atomic_load_n(&s->idle, __ATOMIC_ACQUIRE);
		uint64_t nns = p->ns[c], nvt = p->vt[c];
		uint8_t k = 0;

		if (st > nns) {
			nns = st;
			k = BARRIERD_CAUSE_EVENT;
		}
#ifdef BARRIERD_MUTANT_VTIME_AT_HARVEST /* mutant for tests/audit: breaks rule 4 */
		sv = st > p->ns[c] ? p->vtime : sv;
#endif
		nvt = umax(nvt, sv);
		if (credit) {
			uint8_t ck = 0;

			if (!p->online[c])
				ck = BARRIERD_CAUSE_OFFLINE;
			else if (p->state[c] == BARRIERD_CPU_IDLE)
				ck = BARRIERD_CAUSE_IDLE;
			else if ((int)c == self)
				ck = BARRIERD_CAUSE_EVENT;
			if (ck && r > nns) {
				nns = r;
				k = ck;
			}
			if (ck)
				nvt = umax(nvt, v);
		}
		if (!p->online[c])
			p->state[c] = BARRIERD_CPU_OFFLINE;
		else if (idle == BARRIERD_SLOT_IDLE)
			p->state[c] = BARRIERD_CPU_IDLE;
		else if (__atomic_load_n(&s->switches, __ATOMIC_RELAXED) == 0)
			p->state[c] = BARRIERD_CPU_UNKNOWN;
		else if ((int)c == here)
			p->state[c] = BARRIERD_CPU_DAEMON;
		else
			p->state[c] = BARRIERD_CPU_BUSY;
		/*
		 * A CPU that stopped being busy will not signal: waiters must hear it, to ring
		 * (those on the global words below, those of barrierd_wait_cpus() on its own).
		 */
		if ((old_state == BARRIERD_CPU_BUSY || old_state == BARRIERD_CPU_UNKNOWN) &&
		    p->state[c] != BARRIERD_CPU_BUSY && p->state[c] != BARRIERD_CPU_UNKNOWN) {
			quieted = true;
			p->changed[c] |= 1;
		}

		if (nns > p->ns[c]) {
			/* BRIEF §2's writer rule: per-CPU ns before per-CPU vtime. */
			pub64(&h->per_cpu[c].last_interrupt_ns, nns);
			p->ns[c] = nns;
			p->kind[c] = k;
			if (k == BARRIERD_CAUSE_EVENT)
				pub64(&x->cpu[c].credit_event, load64(&x->cpu[c].credit_event) + 1);
			else if (k == BARRIERD_CAUSE_IDLE)
				pub64(&x->cpu[c].credit_idle, load64(&x->cpu[c].credit_idle) + 1);
			else if (k == BARRIERD_CAUSE_OFFLINE)
				pub64(&x->cpu[c].credit_offline,
				      load64(&x->cpu[c].credit_offline) + 1);
		} else {
			nns = 0; /* unchanged: no wake */
		}
		if (nvt > p->vt[c]) {
			pub64(&h->per_cpu[c].last_interrupt_vtime, nvt);
			p->vt[c] = nvt;
		} else {
			nvt = 0;
		}
		if (load64(&x->cpu[c].state) != p->state[c])
			pub64(&x->cpu[c].state, p->state[c]);
		if (p->ns[c] < gns) {
			gns = p->ns[c];
			min_cpu = c;
		}
		gvt = p->vt[c] < gvt ? p->vt[c] : gvt;
		/* The watermark: the oldest value among CPUs that are (or may be) running. */
		if ((p->state[c] == BARRIERD_CPU_BUSY || p->state[c] == BARRIERD_CPU_UNKNOWN) &&
		    p->ns[c] < wm)
			wm = p->ns[c];
		/* Remember which words changed for the wakes below. */
		p->changed[c] |= (uint8_t)((nns ? 1 : 0) | (nvt ? 2 : 0));
	}

	/* Global values: the minimum over CPUs, monotonic because every per-CPU value is. */
	if (gns > p->g_ns) {
		pub64(&x->last_advance_ns, mono_ns());
		pub64(&x->last_advance_cause, p->kind[min_cpu] | (min_cpu << 8));
		pub64(&h->last_interrupt_ns, gns);
	}
	if (gvt > p->g_vt)
		pub64(&h->last_interrupt_vtime, gvt);
	pub64(&x->passes, load64(&x->passes) + 1);
	if (credit)
		pub64(&x->credit_passes, load64(&x->credit_passes) + 1);

	/* Wake the global words first: they have the most waiters. */
	p->changed_global = 0;
	if (gns > p->g_ns) {
		p->g_ns = gns;
		p->sf->own_ns = gns;
		p->changed_global = 1;
		wake(p, &h->last_interrupt_ns);
	}
	if (gvt > p->g_vt) {
		p->g_vt = gvt;
		p->sf->own_vt = gvt;
		wake(p, &h->last_interrupt_vtime);
	} else if (quieted) {
		wake(p, &h->last_interrupt_vtime);
	}
	if (quieted && !(p->changed_global & 1))
		wake(p, &h->last_interrupt_ns);
	for (uint64_t c = 0; c < p->ncpu; c++) {
		if (p->changed[c] & 1)
			wake(p, &h->per_cpu[c].last_interrupt_ns);
		if (p->changed[c] & 2)
			wake(p, &h->per_cpu[c].last_interrupt_vtime);
		p->changed[c] = 0;
	}
	log_debug("pass%s: global ns %llu vtime %llu (min cpu %llu), watermark %llu",
		  credit ? " (credit)" : "", (unsigned long long)p->g_ns,
		  (unsigned long long)p->g_vt, (unsigned long long)min_cpu,
		  (unsigned long long)(wm == UINT64_MAX ? 0 : wm));

	/*
	 * Watermark handshake (BRIEF §4): store the watermark, MFENCE, re-read the slots.  A
	 * CPU exchanges its stamp and then loads the watermark; we store the watermark and then
	 * load its stamp.  With a locked exchange on its side and MFENCE on ours, at least one
	 * of us sees the other: either it signals, or we see its new stamp here and go again.
	 */
	/*
	 * Nobody busy: never signal (an idle CPU's interrupts would wake us for nothing; a
	 * waiter rings for idle CPUs, and the slow timer serves those that cannot).  Nobody
	 * waiting: never signal either.
	 */
	if (wm == UINT64_MAX || !p->armed)
		wm = 0;
	*p->bss_watermark = wm;
	mfence();
	if (wm) {
		for (uint64_t c = 0; c < p->ncpu; c++) {
			if (p->ns[c] <= wm &&
			    __atomic_load_n(&p->slots[c].stamp, __ATOMIC_ACQUIRE) > p->ns[c]) {
				*again = true;
				break;
			}
		}
	}
	return 0;
}

void publisher_free(struct publisher *p)
{
	free(p->ns);
	free(p->vt);
	free(p->state);
	free(p->kind);
	free(p->online);
	free(p->changed);
	free(p->online_buf);
	p->online_buf = NULL;
	p->ns = p->vt = NULL;
	p->state = p->kind = p->online = p->changed = NULL;
}
