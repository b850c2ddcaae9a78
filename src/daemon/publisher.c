// SPDX-License-Identifier: MIT
#include "publisher.h"
#include "demand.h"
#include "bd_sync.h"
#include "credit.h"
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

static inline uint64_t umax(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

int publisher_init(struct publisher *p, struct state_file *sf, const struct barrierd_slot *slots,
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
	 * The file was just reset (DESIGN rule 9: no value of an earlier run is carried over),
	 * so every time and vtime word is zero and vtime is above every vtime it held: resume
	 * above it, so that a vtime stamp taken before this start can only be passed by new
	 * evidence.  Anything else was written since the reset, by someone else.
	 */
	maxv = bd_load(&h->vtime);
	p->g_ns = bd_load(&h->last_interrupt_ns);
	p->g_vt = bd_load(&h->last_interrupt_vtime);
	for (uint64_t c = 0; c < ncpu; c++) {
		p->ns[c] = bd_load(&h->per_cpu[c].last_interrupt_ns);
		p->vt[c] = bd_load(&h->per_cpu[c].last_interrupt_vtime);
		maxv = umax(maxv, p->vt[c]);
	}
	maxv = umax(maxv, p->g_vt);
	if (p->g_ns || p->g_vt)
		return -EBUSY;
	for (uint64_t c = 0; c < ncpu; c++)
		if (p->ns[c] || p->vt[c])
			return -EBUSY;
	p->vtime = maxv + 1;
	/* The file first, .bss second (rule 4); nothing is attached yet. */
	bd_store(&h->vtime, p->vtime);
	*p->bss_vtime = p->vtime;
	*p->bss_watermark = 0;
	memset(p->online, 1, ncpu); /* no mask (simulations): every CPU is online */
	if (p->online_fd >= 0 && online_mask_read(p))
		return -EIO;
	publisher_seal(p);
	return 0;
}

static void wake(struct publisher *p, uint64_t *word)
{
	futex_wake_word(word);
	p->futex_wakes++;
}

/*
 * Sleepers on a word whose value we know: what we last stored there (we are its only writer).
 * No load of the mapping: a count between heartbeats (the peek) must not fault on a file
 * truncated meanwhile, which the heartbeat's check names; the kernel answers EFAULT instead.
 * A word someone else changed counts as a sleeper (futex_count_u32), and the next pass's check
 * finds the writer.
 */
static long count_word(uint64_t *word, uint64_t ours)
{
	/* The low half: x86 is little-endian. */
	return futex_count_u32((const uint32_t *)word, (uint32_t)ours);
}

/* The doorbell's high half, where library sleepers queue: nobody writes it, it holds 0. */
static long count_mark(struct barrierd_header *h)
{
	return futex_count_u32((const uint32_t *)&h->doorbell + 1, 0);
}

/*
 * Sleepers on the global words that are not libbarrierd's (clients that cannot ring), and all
 * of them in *all.  libbarrierd's sleepers queue on the doorbell's high half too (lib/wait.c,
 * sleep_on; lib/ec.c's settling sleeps), after the global word, and leave in the same order.
 * So the mark is counted before and after the global words and the larger count taken: a
 * library sleeper counted on a global word was on the mark at one of the two counts, whether
 * arriving or leaving.  Two crossing (one leaving before the second count, one arriving after
 * the first) can still leave one unaccounted for: a confirming count counts again.  quick: a
 * first count of the global words alone, and nothing more if it finds nobody (the probe and the
 * peek, which mostly find nobody; a following pass mostly finds its client, and would pay two
 * counts more).
 */
static long count_unmarked(struct publisher *p, long *all, bool quick)
{
	struct barrierd_header *h = p->sf->hdr;
	long before, after, n;

	if (quick) {
		*all = count_word(&h->last_interrupt_ns, p->g_ns) +
		       count_word(&h->last_interrupt_vtime, p->g_vt);
		if (*all == 0)
			return 0;
	}
	before = count_mark(h);
	*all = count_word(&h->last_interrupt_ns, p->g_ns) +
	       count_word(&h->last_interrupt_vtime, p->g_vt);
	after = count_mark(h);
	n = *all - (before > after ? before : after);
	return n > 0 ? n : 0;
}

long publisher_count_legacy(struct publisher *p, uint64_t max_cpus, long *global, bool confirm)
{
	struct barrierd_header *h = p->sf->hdr;
	long all, again;
	long n = count_unmarked(p, &all, confirm);

	/*
	 * A client that cannot ring is still asleep a few microseconds later; library sleepers
	 * caught crossing (an event count's sleeps are as short as 100 us) are not: take the
	 * smaller of two counts when the first finds any.  Only where following would start
	 * (the heartbeat's probe): a pass while following would pay for it at every event.
	 */
	if (confirm && n > 0) {
		long m = count_unmarked(p, &again, false);

		n = m < n ? m : n;
	}
	if (global)
		*global = all;

	/*
	 * Per-CPU words carry no mark, so every sleeper there counts (barrierd_wait_cpus()
	 * included: a cost, never a missed client).
	 */
	if (max_cpus > p->ncpu)
		max_cpus = p->ncpu;
	for (uint64_t i = 0; i < max_cpus; i++) {
		uint64_t c = p->probe_next++ % p->ncpu;

		n += count_word(&h->per_cpu[c].last_interrupt_ns, p->ns[c]);
		n += count_word(&h->per_cpu[c].last_interrupt_vtime, p->vt[c]);
	}
	return n;
}

int publisher_verify(struct publisher *p)
{
	struct barrierd_header *h = p->sf->hdr;

	for (uint64_t c = 0; c < p->ncpu; c++) {
		if (bd_load(&h->per_cpu[c].last_interrupt_ns) != p->ns[c] ||
		    bd_load(&h->per_cpu[c].last_interrupt_vtime) != p->vt[c]) {
			log_err(
			    "%s: cpu %llu holds values this daemon did not write (is the original "
			    "barrierd running on it?); refusing to share it",
			    p->sf->path, (unsigned long long)c);
			return -EBUSY;
		}
	}
	return 0;
}

int publisher_heartbeat(struct publisher *p, uint64_t now_ns)
{
	/*
	 * Every per-CPU time we publish precedes the heartbeat stored after it: a heartbeat
	 * vouches for every word below it, so it is stored only once they are all ours.
	 */
	int ret = publisher_check(p);

	if (ret)
		return ret;
	uint64_t gap = now_ns - p->hb_last;

	bd_store(&p->sf->hdr->heartbeat_ns, now_ns);
	p->hb_last = now_ns;
	/*
	 * Waiters that found us gone (a stall) sleep on this word (lib/wait.c, sleep_stale): the
	 * heartbeat that makes us live again wakes them.  Only a heartbeat a period or more after
	 * the last can end such a stall (a waiter judges us gone after three), so the wake is
	 * skipped on the many heartbeats every pass stores.
	 */
	if (gap >= bd_load(&p->sf->hdr->heartbeat_period_ns))
		wake(p, &p->sf->hdr->heartbeat_ns);
	return 0;
}

/* ---- one pass, in the order its steps run ------------------------------------------------- */

/*
 * DESIGN rule 10: only we write this file (we hold the lock), so it must hold exactly what we
 * last published; any other value is a foreign writer's, and the daemon stops (resetting the
 * file) before a single value of it can count as evidence.  The per-CPU words too: a raised
 * one must not outlive even a kill -9 for long.  0 or -EBUSY.
 */
/* Header words (index = offset / 8) that only we write and that no pass changes. */
static const uint8_t sealed_words[] = {
    0 /* ncpu */,	4 /* magic */,	      5 /* abi */,	   6 /* sizes */,
    8 /* generation */, 10 /* period */,      11 /* pid */,	   12 /* boot id */,
    13 /* boot id */,	14 /* doorbell: 0 */, 15 /* ext_offset */,
};

void publisher_seal(struct publisher *p)
{
	const uint64_t *w = (const uint64_t *)p->sf->hdr;

	for (size_t i = 0; i < sizeof(sealed_words); i++)
		p->sealed[i] = bd_load(&w[sealed_words[i]]);
	p->sealed_ext[0] = bd_load(&p->sf->ext->ext_size);
	p->sealed_ext[1] = bd_load((const uint64_t *)&p->sf->ext->ext_header_size);
	p->hb_last = bd_load(&p->sf->hdr->heartbeat_ns);
}

static bool seal_holds(const struct publisher *p)
{
	const uint64_t *w = (const uint64_t *)p->sf->hdr;
	const struct barrierd_ext *x = p->sf->ext;

	for (size_t i = 0; i < sizeof(sealed_words); i++)
		if (bd_load(&w[sealed_words[i]]) != p->sealed[i])
			return false;
	/* The stop snapshot is zero from the start's reset until our own stop. */
	return bd_load(&x->ext_size) == p->sealed_ext[0] &&
	       bd_load((const uint64_t *)&x->ext_header_size) == p->sealed_ext[1] &&
	       bd_load(&x->stop_ns) == 0 && bd_load(&x->stop_vtime) == 0 &&
	       bd_load(&x->served_ns) == p->served_pub &&
	       bd_load(&p->sf->hdr->heartbeat_ns) == p->hb_last;
}

int publisher_check(struct publisher *p)
{
	struct barrierd_header *h = p->sf->hdr;

	if (bd_load(&h->magic) != BARRIERD_MAGIC || bd_load(&h->vtime) != p->vtime ||
	    bd_load(&h->last_interrupt_ns) != p->g_ns ||
	    bd_load(&h->last_interrupt_vtime) != p->g_vt || !seal_holds(p)) {
		log_err("%s holds values this daemon did not write (is the original barrierd "
			"running on it?); refusing to share it",
			p->sf->path);
		return -EBUSY;
	}
	return publisher_verify(p);
}

/*
 * DESIGN rule 4: advance vtime, the state file first, .bss second.  An event that loads the
 * new value from .bss does so after the file shows it, hence after every client that read an
 * older vtime from the file.  TSO keeps these two stores in order.
 */
static void advance_vtime(struct publisher *p)
{
	p->vtime++;
	bd_store(&p->sf->hdr->vtime, p->vtime);
	*p->bss_vtime = p->vtime;
}

/* What the fold of one pass found, for the steps after it. */
struct fold {
	uint64_t gns, gvt;	       /* the minimum of the per-CPU values (DESIGN rule 8) */
	uint64_t min_cpu;	       /* the CPU that holds gns back: its cause is published */
	bool ns_advanced, vt_advanced; /* the global words moved (publish_globals) */
};

/*
 * The state a CPU is published in.  The CPU this pass runs on (here) is busy with us, and goes
 * idle (or back to its task) the moment we sleep, through a switch of ours that never signals.
 * Publishing it as BUSY would tell waiters that an event will come by itself; DAEMON tells
 * them to ring, which earns it the credit of DESIGN rule 7.
 */
static uint8_t cpu_state(const struct publisher *p, uint64_t c, uint64_t idle, int here)
{
	if (!p->online[c])
		return BARRIERD_CPU_OFFLINE;
	if (idle == BARRIERD_SLOT_IDLE)
		return BARRIERD_CPU_IDLE;
	if (__atomic_load_n(&p->slots[c].switches, __ATOMIC_RELAXED) == 0)
		return BARRIERD_CPU_UNKNOWN;
	if ((int)c == here)
		return BARRIERD_CPU_DAEMON;
	return BARRIERD_CPU_BUSY;
}

/* The extension's per-CPU statistics: one more advance of this cause. */
static void count_advance(struct barrierd_ext_cpu *xc, uint8_t cause)
{
	uint64_t *n;

	switch (cause) {
	case BARRIERD_CAUSE_EVENT:
		n = &xc->credit_event;
		break;
	case BARRIERD_CAUSE_IDLE:
		n = &xc->credit_idle;
		break;
	case BARRIERD_CAUSE_OFFLINE:
		n = &xc->credit_offline;
		break;
	default:
		return;
	}
	bd_store(n, bd_load(n) + 1);
}

/*
 * Fold one CPU's slot (and, in a credit pass, the credit snapshot cr) into its published words.
 * DESIGN rule 8: each value only grows (a nested program can store an older stamp later), and
 * the per-CPU words are published before the globals computed from them.
 */
static void fold_cpu(struct publisher *p, uint64_t c, const struct credit *cr, int here,
		     struct fold *f)
{
	struct barrierd_header *h = p->sf->hdr;
	struct barrierd_ext_cpu *xc = &p->sf->ext->cpu[c];
	const struct barrierd_slot *s = &p->slots[c];
	uint64_t st = __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE);
	uint64_t sv = __atomic_load_n(&s->vtime, __ATOMIC_ACQUIRE);
	uint64_t idle = __atomic_load_n(&s->idle, __ATOMIC_ACQUIRE);
	uint64_t nns = p->ns[c], nvt = p->vt[c];
	uint8_t k = 0;

	/* DESIGN rules 1 and 4: the event's stamp, and the vtime it loaded before its clock. */
	if (st > nns) {
		nns = st;
		k = BARRIERD_CAUSE_EVENT;
	}
	nvt = umax(nvt, sv);
	if (cr) {
		/* DESIGN rules 2, 3 and 7: offline, idle (at the load), or the CPU we run on. */
		uint8_t ck = 0;

		if (!p->online[c])
			ck = BARRIERD_CAUSE_OFFLINE;
		else if (p->state[c] == BARRIERD_CPU_IDLE)
			ck = BARRIERD_CAUSE_IDLE;
		else if ((int)c == cr->self)
			ck = BARRIERD_CAUSE_EVENT;
		if (ck && cr->r > nns) {
			nns = cr->r;
			k = ck;
		}
		if (ck)
			nvt = umax(nvt, cr->v);
	}
	p->state[c] = cpu_state(p, c, idle, here);

	if (nns > p->ns[c]) {
		/* docs/PROTOCOL.md, "The writer's rules": per-CPU ns before per-CPU vtime. */
		bd_store(&h->per_cpu[c].last_interrupt_ns, nns);
		p->ns[c] = nns;
		p->kind[c] = k;
		count_advance(xc, k);
	} else {
		nns = 0; /* unchanged: no wake */
	}
	if (nvt > p->vt[c]) {
		bd_store(&h->per_cpu[c].last_interrupt_vtime, nvt);
		p->vt[c] = nvt;
	} else {
		nvt = 0;
	}
	if (bd_load(&xc->state) != p->state[c])
		bd_store(&xc->state, p->state[c]);
	if (p->ns[c] < f->gns) {
		f->gns = p->ns[c];
		f->min_cpu = c;
	}
	f->gvt = p->vt[c] < f->gvt ? p->vt[c] : f->gvt;
	/* Remember which words changed, for wake_changed. */
	p->changed[c] |= (uint8_t)((nns ? 1 : 0) | (nvt ? 2 : 0));
}

/*
 * DESIGN rule 8: the global values are the minimum over CPUs, published after every per-CPU
 * value they come from, and monotonic because every per-CPU value is.  Then the statistics.
 */
static void publish_globals(struct publisher *p, struct fold *f, bool credit)
{
	struct barrierd_header *h = p->sf->hdr;
	struct barrierd_ext *x = p->sf->ext;

	f->ns_advanced = f->gns > p->g_ns;
	f->vt_advanced = f->gvt > p->g_vt;
	if (f->ns_advanced) {
		bd_store(&x->last_advance_ns, bd_mono_ns());
		bd_store(&x->last_advance_cause, p->kind[f->min_cpu] | (f->min_cpu << 8));
		bd_store(&h->last_interrupt_ns, f->gns);
		p->g_ns = f->gns;
	}
	if (f->vt_advanced) {
		bd_store(&h->last_interrupt_vtime, f->gvt);
		p->g_vt = f->gvt;
	}
	bd_store(&x->passes, bd_load(&x->passes) + 1);
	if (credit)
		bd_store(&x->credit_passes, bd_load(&x->credit_passes) + 1);
}

/*
 * FUTEX_WAKE every word that changed, the global words first (they have the most waiters).  A
 * CPU that stopped being busy wakes nobody: a waiter at or below the served word does not ring
 * (the demand unit asks for its credit pass), and one above it rang already.
 */
static void wake_changed(struct publisher *p)
{
	struct barrierd_header *h = p->sf->hdr;

	if (p->wake_ns)
		wake(p, &h->last_interrupt_ns);
	if (p->wake_vt)
		wake(p, &h->last_interrupt_vtime);
	p->wake_ns = p->wake_vt = false;
	for (uint64_t c = 0; c < p->ncpu; c++) {
		if (p->changed[c] & 1)
			wake(p, &h->per_cpu[c].last_interrupt_ns);
		if (p->changed[c] & 2)
			wake(p, &h->per_cpu[c].last_interrupt_vtime);
		p->changed[c] = 0;
	}
}

/*
 * The watermark handshake (docs/DESIGN.md, "The watermark handshake"): store the watermark,
 * MFENCE, re-read the slots.  A CPU exchanges its stamp and then loads the watermark; we store
 * the watermark and then load its stamp.  With a locked exchange on its side and MFENCE on
 * ours, at least one of us sees the other: either it signals, or we see its new stamp here.
 * The watermark is the horizon while a CPU is at or below it (the global value is), else 0
 * ("never signal"): a CPU past the horizon has nothing anyone asked for.  Returns whether a
 * CPU at or below the watermark was seen with a newer stamp (a pass folds it).  Only after it
 * may the served word rise to the horizon (publisher_publish_served): every busy CPU at or below
 * it then signals or has been seen.
 */
static bool watermark_handshake(struct publisher *p)
{
	uint64_t wm = p->g_ns <= p->horizon ? p->horizon : 0;
	bool moved = false;

	*p->bss_watermark = wm;
	bd_mfence();
	for (uint64_t c = 0; wm && c < p->ncpu; c++) {
		if (p->ns[c] <= wm &&
		    __atomic_load_n(&p->slots[c].stamp, __ATOMIC_ACQUIRE) > p->ns[c]) {
			moved = true;
			break;
		}
	}
	return moved;
}

/* A later clock reading than every value this pass folded or credited (LFENCE: fact F5). */
static uint64_t fenced_now(void)
{
	bd_lfence();
	return bd_mono_ns();
}

int publisher_raise(struct publisher *p, uint64_t h)
{
	int ret;

	if (h <= p->horizon)
		return 0;
	/*
	 * Checked before we store (DESIGN rule 10), as a pass does: our vtime store would
	 * otherwise overwrite a foreign writer's, and the next check would find nothing to stop on.
	 */
	ret = publisher_check(p);
	if (ret)
		return ret;
	p->horizon = h;
	/* DESIGN rule 4's order, as in a pass: an event after the handshake carries a newer vtime.
	 */
	advance_vtime(p);
	/* A moved stamp may not signal: a pass must fold it (1). */
	return watermark_handshake(p) ? 1 : 0;
}

void publisher_quiet(struct publisher *p, int here)
{
	if (here < 0 || (uint64_t)here >= p->ncpu || !p->bss_quiet_cpu)
		return;
	/*
	 * .bss, not the slot: the slots are frozen.  Racing with the programs: the signal
	 * decision is a heuristic for waking us, never evidence (DESIGN 4.1); a CPU
	 * quieted earlier and replaced here may signal once more, nothing else.
	 */
	/*
	 * No CPU, the bound, then the CPU (ordered stores); the program loads the CPU after the
	 * bound: a program that sees an old CPU saw the old bound too, so a CPU quieted before
	 * is never kept quiet up to this new horizon.
	 */
	__atomic_store_n(p->bss_quiet_cpu, 0, __ATOMIC_RELEASE);
	__atomic_store_n(p->bss_quiet_upto, p->horizon, __ATOMIC_RELEASE);
	__atomic_store_n(p->bss_quiet_cpu, (uint64_t)here + 1, __ATOMIC_RELEASE);
}

int publisher_pass_fold(struct publisher *p, bool credit, bool follow, bool *again)
{
	struct credit cr = {.self = -1};
	struct fold f = {.gns = UINT64_MAX, .gvt = UINT64_MAX};
	int here, ret;

	*again = false;
	ret = publisher_check(p);
	if (ret)
		return ret;
	advance_vtime(p);
	if (credit) {
		ret = credit_snapshot(p, &cr);
		if (ret)
			return ret;
	}
	here = cr.self >= 0 ? cr.self : sched_getcpu();
	for (uint64_t c = 0; c < p->ncpu; c++)
		fold_cpu(p, c, credit ? &cr : NULL, here, &f);
	publish_globals(p, &f, credit);
	/* Following: every CPU's next event is asked for, a later time than all folded here. */
	if (follow) {
		uint64_t now = fenced_now();

		if (now > p->horizon)
			p->horizon = now;
	}
	/*
	 * The watermark before the wakes: a waiter this pass completes switches in on its CPU
	 * right after its wake, and under the old watermark that switch would signal a pass
	 * that nobody needs.
	 */
	*again = watermark_handshake(p);
	/*
	 * Following, count the sleepers that cannot ring before the wakes: a pass that completes
	 * their barrier wakes them, and counted after it they would never be seen at all.
	 */
	p->legacy = follow ? publisher_count_legacy(p, 0, NULL, false) : 0;
	p->wake_ns = f.ns_advanced;
	p->wake_vt = f.vt_advanced;
	log_debug("pass%s: global ns %llu vtime %llu (min cpu %llu), horizon %llu",
		  credit ? " (credit)" : "", (unsigned long long)p->g_ns,
		  (unsigned long long)p->g_vt, (unsigned long long)f.min_cpu,
		  (unsigned long long)p->horizon);
	return 0;
}

void publisher_publish_served(struct publisher *p, uint64_t served)
{
	/*
	 * A plain store: a hint for whether to ring, never evidence.  The caller raises it only
	 * after the handshake for it (publisher_raise or the pass) and before the pass's wakes, so
	 * a waiter a pass wakes reads it and does not ring for what the daemon will serve.
	 */
	if (served != p->served_pub) {
		bd_store(&p->sf->ext->served_ns, served);
		p->served_pub = served;
	}
}

void publisher_pass_finish(struct publisher *p, uint64_t served)
{
	publisher_publish_served(p, served);
	wake_changed(p);
}

int publisher_pass(struct publisher *p, bool credit, bool *again)
{
	int ret = publisher_pass_fold(p, credit, false, again);

	if (!ret)
		publisher_pass_finish(p, p->served_pub);
	return ret;
}

void publisher_facts(const struct publisher *p, uint64_t horizon, int here, uint64_t now,
		     uint64_t silent_ns, struct demand_facts *f)
{
	f->now = now;
	f->g = p->g_ns;
	f->lagging = p->g_ns <= horizon;
	f->owed = f->credit_needed = false;
	f->hold = 0;
	f->quiet_floor = f->credit_floor = UINT64_MAX;
	for (uint64_t c = 0; c < p->ncpu; c++) {
		const struct barrierd_slot *s = &p->slots[c];
		uint8_t st = p->state[c];
		/*
		 * A daemon thread's switches, in and out, stamp but never signal (docs/DEMAND.md,
		 * the handshake): a CPU whose latest event was one (its stamp past the latest that
		 * was not, sig_stamp) may go idle with no signal (the doorbell or slot-server
		 * thread going back to sleep), or run a user task whose next event is a tick away,
		 * or never on a tickless CPU.  So the served word stays below it (quiet_floor), and
		 * a credit pass never waits for it; credit is asked for it only once its slot says
		 * IDLE, since only then does credit move it (asking while it is busy would ask at
		 * every pass, for nothing).  Relaxed loads after the pass's handshake: a pair read
		 * stale costs latency only, until a later pass (a ring, the heartbeat's fold, the
		 * doorbell's expiry), never what a pass publishes.
		 */
		bool daemon_ran =
		    st == BARRIERD_CPU_BUSY && __atomic_load_n(&s->stamp, __ATOMIC_RELAXED) >
						   __atomic_load_n(&s->sig_stamp, __ATOMIC_RELAXED);
		bool creditable = st == BARRIERD_CPU_IDLE || st == BARRIERD_CPU_OFFLINE ||
				  st == BARRIERD_CPU_DAEMON ||
				  (daemon_ran && __atomic_load_n(&s->idle, __ATOMIC_RELAXED) ==
						     BARRIERD_SLOT_IDLE);
		bool quiet = creditable || daemon_ran;

		if (quiet && p->ns[c] < f->quiet_floor)
			f->quiet_floor = p->ns[c];
		if (creditable && p->ns[c] < f->credit_floor)
			f->credit_floor = p->ns[c];
		if (p->ns[c] == p->g_ns && st != BARRIERD_CPU_BUSY)
			f->hold = p->g_ns;
		if (p->ns[c] > horizon)
			continue;
		/* DESIGN rule 7: a credit pass credits the CPU it runs on. */
		if (creditable || (int)c == here)
			f->credit_needed = true;
		if (!f->owed && !quiet && f->lagging && p->online[c] && (int)c != here) {
			uint64_t stamp = __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE);

			/*
			 * Owed: only its own next event moves it (not idle), and it was heard from
			 * within silent_ns (one silent longer runs without ticks and may never
			 * signal).  Loads only.
			 */
			f->owed =
			    stamp <= horizon &&
			    __atomic_load_n(&s->idle, __ATOMIC_ACQUIRE) != BARRIERD_SLOT_IDLE &&
			    stamp + silent_ns >= now;
		}
	}
}

uint64_t publisher_nudge_facts(struct publisher *p, uint64_t upto, int here, const bool *can,
			       bool *lag, long *own, long *global)
{
	struct barrierd_header *h = p->sf->hdr;
	uint64_t lagging = 0;

	*global = 0;
	for (uint64_t c = 0; c < p->ncpu; c++) {
		const struct barrierd_slot *s = &p->slots[c];

		own[c] = 0;
		lag[c] = false;
		if (!can[c] || p->ns[c] > upto || !p->online[c] || (int)c == here)
			continue;
		/* An event past it already: the next fold publishes it (its signal is on its way).
		 */
		if (__atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE) > upto)
			continue;
		if (__atomic_load_n(&s->idle, __ATOMIC_ACQUIRE) == BARRIERD_SLOT_IDLE)
			continue;
		lag[c] = true;
		lagging++;
	}
	/* Counted only once a CPU lags: an idle or ticking machine pays nothing. */
	if (!lagging)
		return 0;
	/* Global words first: a sleeper there waits for every CPU. */
	*global = count_word(&h->last_interrupt_ns, p->g_ns) +
		  count_word(&h->last_interrupt_vtime, p->g_vt);
	if (*global > 0 || lagging > DEMAND_NUDGE_COUNT_MAX)
		return lagging;
	for (uint64_t c = 0; c < p->ncpu; c++)
		if (lag[c])
			own[c] = count_word(&h->per_cpu[c].last_interrupt_ns, p->ns[c]) +
				 count_word(&h->per_cpu[c].last_interrupt_vtime, p->vt[c]);
	return lagging;
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
