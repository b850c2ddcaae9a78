/*
 * x86-TSO for the barrierd model (docs/DESIGN.md §3.1, facts F1-F5).
 *
 * Each store buffer is a FIFO of (address, value) pairs.  A plain store enters its CPU's
 * buffer; the flusher moves the oldest entry of any buffer to memory at any moment (F1: one
 * memory, every CPU sees a store at the same moment).  A load reads its own CPU's newest
 * buffered store to that address, else memory (store forwarding); loads are performed in
 * program order, so the one reordering is a later load passing an earlier buffered store
 * (F2).  MFENCE and locked instructions wait until their CPU's buffer is empty and then act
 * on memory directly (F3).  A clock reading is a read of `clk`, which advances only when
 * somebody reads it, by at most one per reading and not always: two readings can be equal,
 * as two CPUs' nanosecond clocks can.  A reading is taken where the program reads it, which
 * is right when an LFENCE or a locked instruction follows (F4, F5); the one place where
 * RDTSC may run late (a plain store of a clock value) stores CLKV, and the flusher reads the
 * clock for that entry at any moment before it drains it.
 *
 * The includer defines NLOC (memory words), NSB (store buffers), SBSZ (their depth) and
 * CMAX (the clock's last value), and declares `byte _k` in every process that loads.
 */

#define CLKV 255 /* a buffered store whose clock operand is not read yet */

byte mem[NLOC];
byte sba[NSB * SBSZ]; /* buffered stores' addresses, oldest first */
byte sbv[NSB * SBSZ]; /* and values */
byte sbn[NSB];        /* entries per buffer */
byte clk = 1;         /* the one clock (DESIGN §5: one clocksource, synchronised) */

#define SBI(c, i) ((c) * SBSZ + (i))

/* The clock may or may not move before a reading. */
#define CLK_ADV                                                                                \
	if                                                                                     \
	:: clk < CMAX -> clk++                                                                 \
	:: true -> skip                                                                        \
	fi

/* r = what CPU c loads from a: its own newest buffered store there, else memory (F2). */
#define LDX(c, a, r)                                                                           \
	r = mem[a];                                                                            \
	_k = 0;                                                                                \
	do                                                                                     \
	:: _k < sbn[c] ->                                                                      \
		if                                                                             \
		:: sba[SBI(c, _k)] == (a) -> r = sbv[SBI(c, _k)]                               \
		:: else -> skip                                                                \
		fi;                                                                            \
		_k++                                                                           \
	:: else -> break                                                                       \
	od;                                                                                    \
	_k = 0

#define PUSH(c, a, v)                                                                          \
	sba[SBI(c, sbn[c])] = (a);                                                             \
	sbv[SBI(c, sbn[c])] = (v);                                                             \
	sbn[c]++

/* The oldest entry of c's buffer reaches memory (F1). */
#define FLUSH(c)                                                                               \
	mem[sba[SBI(c, 0)]] = sbv[SBI(c, 0)];                                                  \
	_f = 1;                                                                                \
	do                                                                                     \
	:: _f < sbn[c] ->                                                                      \
		sba[SBI(c, _f - 1)] = sba[SBI(c, _f)];                                         \
		sbv[SBI(c, _f - 1)] = sbv[SBI(c, _f)];                                         \
		_f++                                                                           \
	:: else -> break                                                                       \
	od;                                                                                    \
	sbn[c]--;                                                                              \
	sba[SBI(c, sbn[c])] = 0;                                                               \
	sbv[SBI(c, sbn[c])] = 0;                                                               \
	_f = 0

/* A buffer's oldest entry drains, at any moment; a CLKV entry reads the clock first. */
#define FLUSH_OPTS(c)                                                                          \
	:: d_step { sbn[c] > 0 && sbv[SBI(c, 0)] != CLKV -> FLUSH(c) }                         \
	:: atomic { sbn[c] > 0 && sbv[SBI(c, 0)] == CLKV -> CLK_ADV; sbv[SBI(c, 0)] = clk }

proctype Flusher()
{
	byte _f;

end:
	do
	FLUSH_OPTS(0)
	FLUSH_OPTS(1)
#if NSB > 2
	FLUSH_OPTS(2)
#endif
	od
}
