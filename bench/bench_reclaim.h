/* SPDX-License-Identifier: MIT */
/*
 * bench_reclaim's schemes behind one table of functions (bench/bench_reclaim.c): barrierd's
 * epochs and hazard pointers, ck_epoch, and liburcu's memb, mb and qsbr flavours (each
 * liburcu flavour is bench_reclaim_urcu.c compiled on its own, as the flavours' headers map
 * the same names).  Every read section loads rcl_src and reads its object; a loop of sections
 * is one call, so each scheme's read side is inlined in its own loop.
 */
#ifndef BARRIERD_BENCH_RECLAIM_H
#define BARRIERD_BENCH_RECLAIM_H

#include <stdint.h>

/* What readers read and writers retire: 64 bytes, a scheme's link (rcu_head, ...) first. */
struct rcl_obj {
	void *hook[4];
	uint64_t data[4];
};

/* The shared pointer: loaded by readers, replaced by the writer (release stores). */
extern struct rcl_obj *rcl_src;

/* Free a retired object (every scheme's callback ends here): counts it out of rcl_live. */
void rcl_obj_free(struct rcl_obj *o);

struct rcl_impl {
	const char *name;
	int (*setup)(void); /* the domain (0 or -errno) */
	void (*teardown)(void);
	/* A reader thread's record; NULL on failure. */
	void *(*reader_register)(void);
	void (*reader_unregister)(void *r);
	/* n read sections back to back; the sum of what they read. */
	uint64_t (*read_loop)(void *r, uint64_t n);
	/* Sleep ns outside any read section (qsbr: offline; the others: a plain sleep). */
	void (*reader_sleep)(void *r, uint64_t ns);
	/* The writer's record (NULL is fine for schemes that need none). */
	void *(*writer_register)(void);
	void (*writer_unregister)(void *w);
	/*
	 * Wait for a grace period (0 or an error).  gp_retires: the scheme's grace period only
	 * happens for something retired (hazard pointers: reclaim with nothing retired returns at
	 * once), so the writer retires the old object before the timed call, which frees it.
	 */
	int (*synchronize)(void *w);
	int gp_retires;
	/* Free o once no reader can hold it (o already unlinked). */
	int (*retire)(void *w, struct rcl_obj *o);
	/* Free everything retired so far. */
	int (*drain)(void *w);
};

extern const struct rcl_impl rcl_urcu_memb, rcl_urcu_mb, rcl_urcu_qsbr;

#endif
