/*
 * barrierd's protocol under x86-TSO (issue 21; tests/model/README.md).
 *
 * Two CPUs run user code: the slow path (the waiter: store W, take a fenced stamp T, wait
 * until the barrier for T has passed, read the fast path's hazard H) and the fast path (store
 * H, read W, no fence).  The property (the asymmetric store-buffering litmus test): never do
 * both miss each other's store.  Each CPU takes stamped events (interrupts, context
 * switches), may go idle and come back, and its BPF programs stamp and exchange its idle word
 * as bpf/slot_logic.h does.  The daemon folds the slots and credits idle CPUs and its own
 * CPU as src/daemon/publisher.c and credit.c do; a direct client credits from the slots as
 * lib/direct.c does.  One configuration per property (CFG_*), one mutant per M_* macro:
 * tests/model/run_model.sh and CMakeLists.txt say which runs which.
 *
 * Step names in comments ("[S3]") are what docs/DESIGN.md's rules cite.
 */

/* What each configuration publishes and waits for. */
#if defined(CFG_NS) || defined(CFG_STOP)
#define WANT_NS
#endif
#if defined(CFG_VT) || defined(CFG_RESTART)
#define WANT_VT
#define VT_WAITER
#endif
#ifdef VT_WAITER
#define GLOBAL_WORD L_G_VT
#else
#define GLOBAL_WORD L_G_NS
#endif

#ifndef SBSZ
#define SBSZ 2
#endif
#ifndef CMAX
#define CMAX 3
#endif
#define NSB 3 /* store buffers: CPU 0, CPU 1, and a CPU the daemon may have to itself */

/* Memory words. */
#define L_W 0        /* the slow path's data */
#define L_H 1        /* the fast path's hazard */
#define L_STAMP0 2   /* slot[c].stamp */
#define L_SVT0 4     /* slot[c].vtime */
#define L_IDLE0 6    /* slot[c].idle */
#define L_BSS_VT 8   /* .bss vtime */
#define L_BSS_WM 9   /* .bss watermark */
#define L_BSS_SWST 10 /* .bss switch_stamps: 0 once the daemon has retired */
#define L_F_VT 11    /* header.vtime */
#define L_G_NS 12    /* header.last_interrupt_ns */
#define L_G_VT 13    /* header.last_interrupt_vtime */
#define L_FLAGS 14   /* header.flags: RUNNING, STOPPED */
#define L_STOP_NS 15 /* ext.stop_ns */
#define L_GEN 16     /* header.generation */
#define L_SERVED 17 /* ext.served_ns */
#define NLOC 18

#include "tso.pml"

/* The idle word (include/barrierd_slot.h). */
#define S_UNKNOWN 0
#define S_IDLE 1
#define S_BUSY 2

#define F_RUNNING 1
#define F_STOPPED 2

#define FOREIGN 200 /* a foreign writer's value: far above any clock reading */

/* Threads. */
#define T_IDLE 0
#define T_WAITER 1
#define T_FAST 2
#define T_DAEMON 3
#define T_NUDGE 4
#define NT 5

#ifndef DCPU
#define DCPU 2 /* the daemon's CPU: 2 is one without user code, 1 is the fast path's */
#endif
/* Interrupts and context switches per CPU. */
#ifndef NEV0
#define NEV0 1
#endif
#ifndef NSW0
#define NSW0 0
#endif
#ifndef NEV1
#define NEV1 1
#endif
#ifndef NSW1
#define NSW1 2
#endif
#ifndef NPASS
#define NPASS 1 /* daemon passes (per run) */
#endif

/* DESIGN rule 8: every comparison is strict. */
#ifdef M_GE
#define PASSED(x, t) ((x) >= (t))
#else
#define PASSED(x, t) ((x) > (t))
#endif
#define MIN(a, b) ((a) < (b) -> (a) : (b))

byte cur[NSB];   /* the thread each CPU runs */
bool kern[NSB];  /* the CPU runs kernel code: its thread cannot take a step */
byte tcpu[NT];   /* the CPU each thread last ran on */
bool tdone[NT];
bool nudge[2];   /* a nudge thread's futex word, bumped and woken */
bool evon = 1;   /* the evidence programs are attached */
byte wh = 9, fw = 9; /* what the slow path read of H, the fast path of W */
byte maxvt;      /* the highest header.vtime any daemon run published (rule 9) */
bool restarting; /* the next run has begun its reset */

/* A thread's step: its CPU runs it and is not in the kernel. */
#define ON(t) (cur[tcpu[t]] == (t) && !kern[tcpu[t]])
#define TLD(t, a, r) d_step { ON(t) -> LDX(tcpu[t], a, r) }
#define TST(t, a, v) d_step { ON(t) && sbn[tcpu[t]] < SBSZ -> PUSH(tcpu[t], a, v) }
#define TFENCE(t) d_step { ON(t) && sbn[tcpu[t]] == 0 -> skip } /* MFENCE (F3) */
#define TCLOCK(t, r) atomic { ON(t) -> CLK_ADV; r = clk }
/* Kernel code on CPU c. */
#define KLD(c, a, r) d_step { LDX(c, a, r) }
#define KST(c, a, v) d_step { sbn[c] < SBSZ -> PUSH(c, a, v) }

/*
 * The clock read and the locked exchange as one step: the reading as late as it can be, which
 * only makes the stamp larger, and a larger stamp passes every barrier a smaller one does.
 */
#define STAMP_NOW(c)                                                                           \
	CLK_ADV;                                                                               \
	mem[L_STAMP0 + c] = clk

/*
 * [S1] stamp_slot() (bpf/slot_logic.h; DESIGN rules 1, 4): load .bss vtime, read the clock,
 * exchange the stamp (locked, the clock value as operand), store the slot vtime.
 */
inline stamp_slot(c)
{
#ifdef WANT_VT
	KLD(c, L_BSS_VT, vt);
#endif
#ifdef M_PLAIN_STAMP
	KST(c, L_STAMP0 + c, CLKV); /* a MOV: its RDTSC may run until the store drains */
#else
	atomic { sbn[c] == 0 -> STAMP_NOW(c) };
#endif
#ifdef WANT_VT
	KST(c, L_SVT0 + c, vt);
	vt = 0;
#endif
	skip
}

/*
 * [S2] on_switch() (rule 2): the runqueue lock (locked: drains prev's stores), the stamp
 * while switch_stamps is on, then the absolute idle state exchanged into the word.
 */
inline switch_to(c, nxt)
{
#ifdef CFG_DIRECT
	KLD(c, L_BSS_SWST, sws);
	if
	:: sws -> stamp_slot(c)
	:: else -> skip
	fi;
	sws = 0;
#else
	stamp_slot(c);
#endif
	d_step { sbn[c] == 0 -> mem[L_IDLE0 + c] = (nxt == T_IDLE -> S_IDLE : S_BUSY) } /* xchg */
}

#ifndef MIGRATE
#define MIGRATE 0 /* 1: the slow path's thread may move between CPUs at a switch */
#endif

/* The scheduler's choice: the idle task or a runnable thread (one CPU at a time). */
inline pick(c)
{
	if
	:: cur[c] != T_IDLE -> nxt = T_IDLE
	:: cur[c] != T_WAITER && !tdone[T_WAITER] && cur[1 - c] != T_WAITER &&
	   (tcpu[T_WAITER] == c || MIGRATE) -> nxt = T_WAITER
	:: cur[c] != T_FAST && !tdone[T_FAST] && tcpu[T_FAST] == c -> nxt = T_FAST
	:: cur[c] != T_DAEMON && !tdone[T_DAEMON] && tcpu[T_DAEMON] == c -> nxt = T_DAEMON
	fi;
	cur[c] = nxt;
	if
	:: nxt != T_IDLE -> tcpu[nxt] = c
	:: else -> skip
	fi
}

/* CPU c's kernel: interrupts, context switches, nudges. */
proctype Cpu(byte c)
{
	byte vt, nxt, sws, back, _k;
	byte ev = (c == 0 -> NEV0 : NEV1), sw = (c == 0 -> NSW0 : NSW1);

end:
	do
#if defined(WANT_VT) || defined(M_PLAIN_STAMP) || defined(CFG_DIRECT)
	:: atomic { ev > 0 && evon && !kern[c] -> kern[c] = 1; ev-- };
		stamp_slot(c);
		kern[c] = 0
	:: atomic { sw > 0 && !kern[c] && sbn[c] == 0 -> kern[c] = 1; sw--; pick(c) };
		switch_to(c, nxt);
		d_step { kern[c] = 0; nxt = 0 }
#else
	/* the same, each stamp one step: the program's clock read and its exchange */
	:: atomic { ev > 0 && evon && !kern[c] && sbn[c] == 0 -> ev--; STAMP_NOW(c) }
	:: atomic { sw > 0 && !kern[c] && sbn[c] == 0 -> kern[c] = 1; sw--; pick(c); STAMP_NOW(c) };
		d_step { mem[L_IDLE0 + c] = (nxt == T_IDLE -> S_IDLE : S_BUSY); kern[c] = 0; nxt = 0 }
#endif
	/* [S9] a nudge: the nudge thread is switched in, and out again */
#if defined(WANT_VT) || defined(M_PLAIN_STAMP) || defined(CFG_DIRECT)
	:: atomic { nudge[c] && !kern[c] && sbn[c] == 0 ->
			kern[c] = 1; nudge[c] = 0; back = cur[c]; cur[c] = T_NUDGE };
		switch_to(c, T_NUDGE);
		d_step { sbn[c] == 0 -> cur[c] = back };
		switch_to(c, back);
#else
	:: atomic { nudge[c] && !kern[c] && sbn[c] == 0 ->
			kern[c] = 1; nudge[c] = 0; back = cur[c]; cur[c] = T_NUDGE; STAMP_NOW(c) };
		d_step { mem[L_IDLE0 + c] = S_BUSY };
		atomic { cur[c] = back; STAMP_NOW(c) };
		d_step { mem[L_IDLE0 + c] = (back == T_IDLE -> S_IDLE : S_BUSY) };
#endif
		d_step { kern[c] = 0; back = 0 }
	od
}

/* The property: the slow path saw passed(T), and neither side saw the other's store. */
#define CHECK assert(!(tdone[T_WAITER] && tdone[T_FAST] && wh == 0 && fw == 0))

proctype Fast()
{
	byte w, _k;

	TST(T_FAST, L_H, 1);
	TLD(T_FAST, L_W, w);
	d_step { fw = w; w = 0; tdone[T_FAST] = 1; CHECK }
}


/* ---- the daemon ------------------------------------------------------------------------- */

#ifdef WANT_VT
#define PUB_VT(x) TST(T_DAEMON, L_F_VT, x); d_step { assert((x) > maxvt); maxvt = x }
#endif

/*
 * [S4] the credit snapshot (credit_snapshot(); rules 2 and 7, rule 3's online mask is not
 * modelled): clock r, LFENCE, vtime v, MFENCE, then the idle loads.
 */
inline credit_snapshot()
{
#if defined(M_IDLE_CLOCK_AFTER)
	TFENCE(T_DAEMON);
#elif defined(WANT_VT)
	TCLOCK(T_DAEMON, r);
	TLD(T_DAEMON, L_F_VT, v);
#ifndef M_NO_CREDIT_FENCE
	TFENCE(T_DAEMON);
#endif
#else
	/* r read as the MFENCE completes: the latest moment r may be read, still before the loads */
	atomic { ON(T_DAEMON) && sbn[tcpu[T_DAEMON]] == 0 -> CLK_ADV; r = clk };
#endif
	TLD(T_DAEMON, L_IDLE0, idl[0]);
	TLD(T_DAEMON, L_IDLE0 + 1, idl[1]);
#ifdef M_IDLE_CLOCK_AFTER
	TCLOCK(T_DAEMON, r); /* the clock after the idle loads */
#endif
}

/* [S5] fold_cpu() (rule 8): per CPU the maximum of what was published and what the slot shows. */
inline fold_cpu(c)
{
	TLD(T_DAEMON, L_STAMP0 + c, s);
#ifdef WANT_VT
	TLD(T_DAEMON, L_SVT0 + c, sv);
#endif
	d_step {
		if
		:: s > pns[c] ->
#ifdef M_VT_HARVEST
			pvt[c] = vt; /* the vtime of the harvest, not the event's */
#endif
			pns[c] = s
		:: else -> skip
		fi;
#if defined(WANT_VT) && !defined(M_VT_HARVEST)
		if
		:: sv > pvt[c] -> pvt[c] = sv
		:: else -> skip
		fi;
#endif
		/* [S6] idle credit (rule 2) and the daemon's own CPU (rule 7) */
		if
		:: credit && (idl[c] == S_IDLE || c == tcpu[T_DAEMON]) ->
			if
			:: r > pns[c] -> pns[c] = r
			:: else -> skip
			fi;
			if
			:: v > pvt[c] -> pvt[c] = v
			:: else -> skip
			fi
		:: else -> skip
		fi;
		s = 0;
		sv = 0;
		idl[c] = 0
	}
}

/* [S7] the global values: the minimum over CPUs, stored after what it is computed from. */
inline publish_globals()
{
	d_step { g = MIN(pns[0], pns[1]); gv = MIN(pvt[0], pvt[1]) };
#ifdef WANT_NS
	if
	:: g != gpub -> TST(T_DAEMON, L_G_NS, g); gpub = g
	:: else -> skip
	fi;
#endif
#ifdef WANT_VT
	if
	:: gv != gvpub -> TST(T_DAEMON, L_G_VT, gv); gvpub = gv
	:: else -> skip
	fi;
#endif
	skip
}

/* [S3] a pass advances vtime: the file first, then .bss (rule 4). */
inline advance_vtime()
{
#ifdef WANT_VT
	vt++;
	PUB_VT(vt);
	TST(T_DAEMON, L_BSS_VT, vt);
#endif
	skip
}

inline pass()
{
	advance_vtime();
#ifdef FOLD_PASSES
	if
	:: credit = 1; credit_snapshot()
	:: credit = 0
	fi;
#elif !defined(NO_CREDIT)
	/* every pass credits: a credit pass publishes at least what a fold would, as late */
	credit = 1;
	credit_snapshot();
#endif
	fold_cpu(0);
	fold_cpu(1);
	publish_globals();
	d_step { r = 0; v = 0; credit = 0 }
}

/*
 * [S8] rule 10's stop: the daemon checks that the file holds what it published (else it
 * resets it), then stores its own last global value as the stop snapshot, then STOPPED.
 */
inline check_or_reset()
{
	TLD(T_DAEMON, L_G_NS, s);
	if
	:: s != gpub -> /* a foreign writer: reset and stop */
#ifdef M_STOP_FROM_FILE
		TST(T_DAEMON, L_STOP_NS, s); /* the snapshot taken from the file's word */
#else
		TST(T_DAEMON, L_G_NS, 0);
		TST(T_DAEMON, L_STOP_NS, 0);
#endif
		TST(T_DAEMON, L_FLAGS, F_STOPPED);
		stopped = 1
	:: else -> skip
	fi
}

inline stop()
{
#ifdef WANT_NS
	TST(T_DAEMON, L_STOP_NS, gpub);
#endif
	TST(T_DAEMON, L_FLAGS, F_STOPPED)
}

/*
 * [S10] a start (rule 9): before anything else the file is reset (it is still STOPPED from the
 * stop), vtime raised above every value it held and every time zeroed, then the generation and
 * RUNNING; no value is carried over.  The first run's start happened before the model begins.
 */
inline restart()
{
	restarting = 1;
#ifdef M_VT_RESTART_LOW
	vt = 1;
#else
	vt = maxvt + 1;
#endif
	PUB_VT(vt);
	TST(T_DAEMON, L_G_VT, 0);
	d_step { pns[0] = 0; pns[1] = 0; pvt[0] = 0; pvt[1] = 0; gvpub = 0; gpub = 0 };
	TST(T_DAEMON, L_BSS_VT, vt);
	TST(T_DAEMON, L_GEN, 2);
	TST(T_DAEMON, L_FLAGS, F_RUNNING)
}

proctype Daemon()
{
	byte pns[2], pvt[2], idl[2], s, sv, r, v, g, gv, gpub, gvpub, vt = 1, passes, nudges;
	bool credit, stopped;
	byte _k;

	do
	:: passes < NPASS && !stopped ->
		passes++;
#ifdef CFG_STOP
		check_or_reset();
		if
		:: stopped -> break
		:: else -> skip
		fi;
#endif
		pass()
#ifdef NUDGES
	/* [S9] a nudge (DEMAND.md, "Nudges"): wake the nudge thread of a CPU that may lag */
	:: nudges < 1 ->
		nudges++;
#ifdef M_NUDGE_CLOCK
		TCLOCK(T_DAEMON, r); /* credited from the nudger's clock */
		d_step {
			if
			:: r > pns[1] -> pns[1] = r
			:: else -> skip
			fi
		};
		publish_globals()
#else
		d_step { ON(T_DAEMON) -> nudge[1] = 1 }
#endif
#endif
	:: passes >= NPASS || stopped -> break
	od;
	skip;
#ifdef CFG_STOP
	if
	:: !stopped -> check_or_reset();
		if
		:: !stopped -> stop()
		:: else -> skip
		fi
	:: else -> skip
	fi;
#endif
#ifdef CFG_RESTART
	stop();
	restart();
	pass();
#endif
	d_step { ON(T_DAEMON) -> tdone[T_DAEMON] = 1 }
}

#ifdef CFG_STOP
/* The original barrierd, or any root writer, writes the global word once, at any moment. */
proctype Foreign()
{
	mem[L_G_NS] = FOREIGN
}
#endif

#ifdef CFG_RESTART
/*
 * The original barrierd takes the stopped file over and writes its vtime word, before our
 * next start resets the file (a write after that start is rule 10's window, which the running
 * daemon's check closes; not modelled here).
 */
proctype ForeignVT()
{
	atomic { mem[L_FLAGS] == F_STOPPED && !restarting -> mem[L_G_VT] = FOREIGN }
}
#endif

#ifdef CFG_DIRECT
/* The daemon exits: its evidence programs go, switch_stamps goes to 0; links clients hold stay. */
proctype Retire()
{
	atomic { evon = 0; mem[L_BSS_SWST] = 0 }
}
#endif

/* ---- the slow path ---------------------------------------------------------------------- */

/*
 * [C4] one CPU's direct credit, in lib/direct.c's order: r > T and it is idle or ourselves,
 * else its stamp above T.
 */
inline direct_cpu(c)
{
	TLD(T_WAITER, L_IDLE0 + c, i);
	if
	:: PASSED(r, T) && (i == S_IDLE || c == self) -> ok++
	:: else ->
		TLD(T_WAITER, L_STAMP0 + c, s);
		if
		:: PASSED(s, T) -> ok++
		:: else -> skip
		fi
	fi
}

#ifndef CFG_LIVE
proctype Waiter()
{
	byte T, g, h, s, f0, f1, gen0, gen1, r, i, self, ok, _k;

#ifdef M_SELF_BEFORE_STAMP
	d_step { ON(T_WAITER) -> self = tcpu[T_WAITER] }; /* the CPU read before the stamp */
#define SELF_AFTER_R skip
#define SELF_CLEAR skip
#else
#define SELF_AFTER_R self = tcpu[T_WAITER] /* sched_getcpu(), after r */
#define SELF_CLEAR self = 0
#endif
	TST(T_WAITER, L_W, 1);
	/* [C1] the stamp (rule 5): MFENCE; LFENCE; then the clock (or, vtime, a load). */
#ifndef M_NO_STAMP_FENCE
	TFENCE(T_WAITER);
#endif
#ifdef VT_WAITER
	TLD(T_WAITER, L_F_VT, T);
#else
	TCLOCK(T_WAITER, T);
#endif
	/* [C2] the wait: until passed(T) */
	do
#if defined(CFG_NS) || defined(CFG_VT)
	/* an original-layout client, or the library with one running daemon: the global word */
	:: d_step { ON(T_WAITER) -> LDX(tcpu[T_WAITER], GLOBAL_WORD, g); ok = PASSED(g, T); g = 0 };
		if
		:: ok -> break
		:: else -> skip
		fi
#endif
#ifdef CFG_STOP
	/* [C3] the library's stop rule (rule 10): not running, no global time above the snapshot */
	:: TLD(T_WAITER, L_FLAGS, f0);
		TLD(T_WAITER, L_G_NS, g);
		TLD(T_WAITER, L_FLAGS, f1);
		d_step {
			ON(T_WAITER) -> LDX(tcpu[T_WAITER], L_STOP_NS, s);
			/*
			 * The cap applies whenever the two reads of the flags do not both say RUNNING;
			 * a pass while RUNNING is the window rule 10 accepts (a foreign write before the
			 * daemon's next check), so the waiter here takes only capped passes.
			 */
			ok = (!(f0 == F_RUNNING && f1 == F_RUNNING) && PASSED(MIN(g, s), T));
			f0 = 0; f1 = 0; g = 0; s = 0
		};
		if
		:: ok -> break
		:: else -> skip
		fi
#endif
#ifdef CFG_RESTART
	/* the library's vtime: only while running, flags and generation the same around it */
	:: TLD(T_WAITER, L_FLAGS, f0);
		TLD(T_WAITER, L_GEN, gen0);
		TLD(T_WAITER, L_G_VT, g);
		TLD(T_WAITER, L_FLAGS, f1);
		d_step {
			ON(T_WAITER) -> LDX(tcpu[T_WAITER], L_GEN, gen1);
#if defined(M_NO_SEQ)
			ok = PASSED(g, T); /* the value alone: no flags, no generation around it */
#elif defined(M_NO_GEN)
			ok = (f0 == F_RUNNING && f1 == F_RUNNING && PASSED(g, T)); /* flags only */
#else
			ok = (f0 == F_RUNNING && f1 == F_RUNNING && gen0 == gen1 && PASSED(g, T));
#endif
			f0 = 0; f1 = 0; g = 0; gen0 = 0; gen1 = 0
		};
		if
		:: ok -> break
		:: else -> skip
		fi
#endif
#ifdef CFG_DIRECT
	/*
	 * [C4] direct credit (rule 11, lib/direct.c): clock r, LFENCE, the CPU we run on, then
	 * per CPU the stamp, the idle word, ourselves.
	 */
	:: TCLOCK(T_WAITER, r);
		d_step { ON(T_WAITER) -> SELF_AFTER_R; ok = 0 };
		direct_cpu(0);
		direct_cpu(1);
		d_step { ok = (ok == 2); r = 0; SELF_CLEAR; s = 0; i = 0 };
		if
		:: ok -> break
		:: else -> skip
		fi
#endif
	od;
	skip; /* spin: a loop's exit may not lead into a d_step */
	/* [C5] the read of the fast path's hazard */
	TLD(T_WAITER, L_H, h);
	d_step { wh = h; tdone[T_WAITER] = 1; CHECK }
}
#endif


#ifdef CFG_LIVE
/*
 * Liveness (DESIGN 4.1, 4.4): the watermark handshake and the served word S (ext.served_ns).
 * CPU 1 runs user code and takes an event now and then (a tick); each of its readings is later
 * than the one before, up to CMAX.  At any moment it may go idle for good (a tickless idle
 * CPU): that switch is its last event, and its idle word reads IDLE after it.  The waiter runs
 * on CPU 0, whose own evidence is not modelled here (the global value is CPU 1's).  The daemon
 * runs on CPU 2 and wakes for a ring, a signal or, once nothing else can move, its heartbeat
 * (L8).  A lost signal of a CPU that keeps running is never made up, nor is an idle CPU nobody
 * credits (the heartbeat's pass credits only what every pass credits), so `<> finished` fails
 * on either.  S is the daemon's promise that a wait whose stamp is at or below
 * it is served without a ring: the daemon raises it only after the watermark handshake for it
 * (a busy CPU at or below it then signals its next event), and at the end of every pass gives
 * a CPU that is not busy and lags S a credit pass of its own.  Two kinds of waiter:
 *  - the library (default): it rings iff its stamp is above S (one comparison, no per-CPU
 *    state); the daemon raises S to its clock, and its credit pass waits while CPU 1 is busy
 *    and owed (lags S in its slot), looking again at every wake-up;
 *  - an original-layout client (FOLLOW): it never rings; the daemon follows, moving the
 *    watermark and S to a fenced clock reading at the end of every pass.
 * Both then sleep on the global word (a futex wait).  NWAIT library waiters (2 by default):
 * the second takes its stamp once S is visible or the first has passed, so its stamp may be at
 * or below an S the first's ring raised: then it never rings and relies on the promise alone.
 */
bool sig, bell;
byte nfin; /* waiters whose barrier passed */

/*
 * A horizon is a clock reading, but never the clock's last value: CPU 1's stamps stop at
 * CMAX, and a horizon there would owe them forever, where a real clock moves past any
 * horizon.  A lower horizon is still later than the stamps it serves (T < CMAX).
 */
#define HCLK (clk < CMAX -> clk : CMAX - 1)

#ifndef NWAIT
#ifdef FOLLOW
#define NWAIT 1
#else
#define NWAIT 2
#endif
#endif

/*
 * Every waiter passes.  The heartbeat's pass is a `timeout` (L8): it cannot fire while CPU 1
 * is busy and ticks, so a waiter that only the heartbeat would serve behind a busy CPU that
 * does not signal is a cycle that violates this.
 */
ltl served { <> (nfin == NWAIT) }

proctype LiveCpu()
{
	byte prev, wm, _k;
	bool last;

end:
	do
	:: atomic { sbn[1] == 0 && mem[L_IDLE0 + 1] == S_BUSY -> /* [L1] the event: the clock, then the locked exchange */
			if
			:: clk < CMAX -> clk++
			:: else -> skip
			fi;
			prev = mem[L_STAMP0 + 1];
			mem[L_STAMP0 + 1] = clk;
			/* the switch to idle, for good, or user code on */
			if
			:: last = 1
			:: last = 0
			fi };
		/* [L2] the watermark, loaded after the exchange: signal if the old stamp lagged it */
		d_step {
			LDX(1, L_BSS_WM, wm);
			if
			:: wm != 0 && prev <= wm -> sig = 1
			:: else -> skip
			fi;
			prev = 0;
			wm = 0
		};
		/* the idle word's xchg, after the switch's stamp */
		d_step {
			if
			:: last -> mem[L_IDLE0 + 1] = S_IDLE
			:: else -> skip
			fi;
			last = 0
		}
	od
}

inline publish_served()
{
	if
#ifdef M_S_PLUS1
	/* S one clock tick above the horizon the handshake made its CPUs signal for */
	:: horizon != 0 && horizon + 1 != hpub ->
		TST(T_DAEMON, L_SERVED, horizon + 1);
		hpub = horizon + 1
#else
	:: horizon != hpub -> TST(T_DAEMON, L_SERVED, horizon); hpub = horizon
#endif
	:: else -> skip
	fi
}

/*
 * [L3] the handshake (watermark_handshake()): store the watermark (the horizon, S to be,
 * while the global value is at or below it, else 0), MFENCE, re-read the stamp of a CPU at or
 * below it; then publish S: only now does a busy CPU at or below it signal its next event.
 */
inline handshake()
{
	wm = (g <= horizon -> horizon : 0);
#ifdef M_S_BEFORE_HS
	publish_served(); /* S stored before the watermark: no finding (README) */
#endif
#ifdef M_HS_REREAD_FIRST
	TLD(T_DAEMON, L_STAMP0 + 1, s); /* the stamp read before the watermark is stored */
	TST(T_DAEMON, L_BSS_WM, wm);
#else
	TST(T_DAEMON, L_BSS_WM, wm);
#ifndef M_HS_NO_FENCE
	TFENCE(T_DAEMON);
#endif
#ifndef M_HS_NO_REREAD
	TLD(T_DAEMON, L_STAMP0 + 1, s);
#endif
#endif
	d_step { again = (wm != 0 && s > pns); s = 0; wm = 0 };
	publish_served()
}

/*
 * [L7] the end of a pass: a CPU that is not busy and lags S (it went idle before or after the
 * handshake) gets a credit pass the daemon schedules itself: a fenced clock reading r, later
 * than every stamp S covers, published as its value.
 */
inline credit_idle()
{
#ifndef M_NO_IDLE_CREDIT
	TLD(T_DAEMON, L_IDLE0 + 1, s);
	if
	:: s == S_IDLE && pns <= hpub ->
		/* r is read after S was raised: later than S, which the bounded clock forces */
		atomic { ON(T_DAEMON) -> if :: clk < CMAX -> clk++ :: else -> skip fi; pns = clk };
		g = pns;
		TST(T_DAEMON, L_G_NS, g)
	:: else -> skip
	fi;
	s = 0
#else
	skip
#endif
}

/*
 * [L4] a pass: fold CPU 1's stamp and publish it; following, move the horizon to a fenced
 * clock reading; the handshake; again while the handshake saw a stamp move.
 */
inline live_pass()
{
	do
	:: TLD(T_DAEMON, L_STAMP0 + 1, s);
		d_step {
			if
			:: s > pns -> pns = s
			:: else -> skip
			fi;
			s = 0
		};
		if
		:: pns != g -> g = pns; TST(T_DAEMON, L_G_NS, g)
		:: else -> skip
		fi;
#ifdef FOLLOW
		atomic { ON(T_DAEMON) -> CLK_ADV; if :: HCLK > horizon -> horizon = HCLK :: else -> skip fi };
#endif
		handshake();
		if
		:: again -> skip
		:: else -> break
		fi
	od;
	credit_idle()
}

proctype LiveDaemon()
{
	byte pns, g, horizon, hpub, s, wm, h, _k;
	bool again, owed;

	live_pass(); /* the main loop starts with a pass */
end:
	do
#ifndef FOLLOW
	/*
	 * [L5] a ring: the doorbell thread's clock, read after the ring, raises the horizon
	 * (publisher_raise()); the credit pass it asks for waits while CPU 1 is owed (its slot
	 * at or below the horizon: publisher_facts()'s owed, loads only), looking again at every wake-up.
	 */
	:: atomic { bell -> bell = 0; h = HCLK };
		if
		:: h > horizon -> horizon = h;
#ifndef M_SERVED_NO_HS
			handshake()
#else
			publish_served()
#endif
		:: else -> skip
		fi;
		h = 0;
		do
		:: TLD(T_DAEMON, L_IDLE0 + 1, s);
			d_step { owed = (s == S_BUSY); s = 0 };
			TLD(T_DAEMON, L_STAMP0 + 1, s);
			d_step { owed = owed && (g <= horizon && s <= horizon); s = 0 };
			if
			:: !owed -> break
			:: else ->
				/*
				 * Wait for a wake-up, or the bound on this wait (--idle-credit-
				 * interval; a CPU silent for 20 ms is not waited for): a CPU that
				 * went idle after its owed check never wakes us.  `timeout` fires
				 * only once nothing else can move, so it hides no lost signal of a
				 * CPU that keeps running.
				 */
				if
				:: atomic { sig || bell -> sig = 0 }
				:: timeout -> break
				fi
			fi
		od;
		live_pass()
#endif
	:: atomic { sig -> sig = 0 };
		live_pass()
	/*
	 * [L8] the heartbeat's pass, once nothing else can move (`timeout`; the real one comes
	 * every period whatever happens, so this hides nothing it would not make up).  It closes
	 * one window only: a CPU whose switch to idle stamped and signalled, and whose idle
	 * word's xchg came after the pass it woke had read BUSY.
	 */
	:: timeout -> live_pass()
	od
}

/* [L6] the waiter: its stamp, then until passed: maybe ring, then a futex wait. */
proctype LiveWaiter(bool second)
{
	byte T, g, hz, _k;

	/*
	 * Every waiter's thread runs on CPU 0: its loads and clock readings are all it does.  The
	 * second takes its stamp once S is visible or the first has passed: before that it would
	 * be the first's twin.
	 */
	atomic { ON(T_WAITER) && (!second || mem[L_SERVED] != 0 || nfin != 0) -> CLK_ADV; T = clk };
	if
	:: T >= CMAX -> goto out /* the bounded clock cannot pass it: not a finding */
	:: else -> skip
	fi;
	do
	:: TLD(T_WAITER, L_G_NS, g);
		if
		:: g > T -> break
		:: else -> skip
		fi;
#ifndef FOLLOW
		/* need_ring(): one comparison, no per-CPU state: ring iff the stamp is above S */
		TLD(T_WAITER, L_SERVED, hz);
		if
#ifndef M_NO_RING
		:: T > hz -> bell = 1 /* FUTEX_WAKE on the doorbell */
#endif
		:: else -> skip
		fi;
		hz = 0;
#endif
		atomic { mem[L_G_NS] != g -> g = 0 } /* FUTEX_WAIT while the word still reads g */
	od;
out:
	nfin++
}
#endif

init
{
	atomic {
		mem[L_BSS_SWST] = 1;
		mem[L_FLAGS] = F_RUNNING;
		mem[L_GEN] = 1;
		mem[L_F_VT] = 1;
		mem[L_BSS_VT] = 1;
		maxvt = 1;
		mem[L_IDLE0] = S_BUSY;
		cur[0] = T_WAITER;
		tcpu[T_WAITER] = 0;
		tcpu[T_FAST] = 1;
		tcpu[T_DAEMON] = DCPU;
		/* CPU 1 starts running the fast path, idle, or (sharing it) the daemon */
		if
		:: cur[1] = T_FAST; mem[L_IDLE0 + 1] = S_BUSY
		:: cur[1] = T_IDLE; mem[L_IDLE0 + 1] = S_IDLE
#if DCPU == 1
		:: cur[1] = T_DAEMON; mem[L_IDLE0 + 1] = S_BUSY
#endif
		fi;
#if DCPU == 2
		cur[2] = T_DAEMON;
#endif
		run Flusher();
#ifdef CFG_LIVE
		cur[1] = T_FAST;
		run LiveCpu();
		run LiveDaemon();
		run LiveWaiter(0);
#if NWAIT > 1
		run LiveWaiter(1);
#endif
	}
}
#else
		run Cpu(0);
		run Cpu(1);
		run Fast();
		run Waiter();
#ifndef CFG_DIRECT
		run Daemon();
#else
		tdone[T_DAEMON] = 1;
		run Retire();
#endif
#ifdef CFG_STOP
		run Foreign();
#endif
#ifdef CFG_RESTART
		run ForeignVT();
#endif
	}
}
#endif
