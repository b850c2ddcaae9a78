// SPDX-License-Identifier: MIT
/*
 * bench_reclaim: barrierd's epochs and hazard pointers (barrierd_reclaim.h) against ck_epoch
 * and liburcu's memb, mb and qsbr flavours (bench/run.sh section 14; docs/PERFORMANCE.md §11).
 * Schemes (IMPLS, comma-separated, or "all"): bd-epoch (a domain on the default handle, with
 * direct evidence when the daemon serves slots), bd-epoch-file (on a BARRIERD_OPEN_NO_DIRECT
 * handle), bd-hp (hazard pointers on the default handle; its "grace period" is
 * barrierd_hp_reclaim() with the old object just retired: the barrier, the scan and the free),
 * ck-epoch, urcu-memb, urcu-mb, urcu-qsbr.
 * A read section loads a shared pointer and reads the object it points to.
 *
 *   bench_reclaim read STATE IMPLS N REPS OUT.csv
 *        Read-side cost: N sections back to back in one thread (pinned to the first CPU), then
 *        in two (the first and the second CPU) started together; ns per enter/exit pair per
 *        thread; schemes rotating, REPS times.  Rows: impl,threads,rep,thread,ns_per_pair.
 *   bench_reclaim gp STATE IMPLS N READERS COND OUT.csv
 *        Grace-period latency: READERS reader threads (unpinned) each doing a section, then
 *        sleeping a random 0-1 ms (qsbr: offline while asleep); the writer, pinned to the
 *        first CPU, N times: a random 0-2 ms sleep, replace the object, synchronize (timed),
 *        free the old one.  /proc/interrupts (CAL, RES, IWI, TLB, every CPU) read just before
 *        and after each call.  COND only labels the rows (bench/run.sh starts the load).
 *        Rows: impl,readers,cond,index,latency_ns,cal,res,iwi,tlb.
 *   bench_reclaim mem STATE IMPLS RATE SECS READERS OUT.csv
 *        Memory held by retired objects: readers as in gp; the writer replaces the object and
 *        retires the old one RATE times a second for SECS seconds (batches: ours 64, ck_epoch
 *        polls every 64 retirements, liburcu call_rcu's worker); after each retirement the
 *        count of objects retired and not yet freed is sampled.  Rows: impl,readers,rate,secs,
 *        updates,mean_held,p99_held,max_held,bytes_per_object,left_after_drain.
 */
#include "bench_common.h"
#include "bench_reclaim.h"
#include "proc_interrupts.h"

#include <barrierd.h>
#include <barrierd_reclaim.h>
#include <ck_epoch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>

struct rcl_obj *rcl_src;
static _Atomic long rcl_live; /* retired, not yet freed */

void rcl_obj_free(struct rcl_obj *o)
{
	atomic_fetch_sub(&rcl_live, 1);
	free(o);
}

static struct rcl_obj *obj_new(uint64_t v)
{
	struct rcl_obj *o = aligned_alloc(64, sizeof(*o));

	if (!o) {
		fprintf(stderr, "bench_reclaim: out of memory\n");
		exit(1);
	}
	memset(o, 0, sizeof(*o));
	o->data[0] = v;
	return o;
}

static inline struct rcl_obj *src_load(void)
{
	return __atomic_load_n(&rcl_src, __ATOMIC_ACQUIRE);
}

/* ---- barrierd's epochs and hazard pointers ------------------------------------------------ */

static struct barrierd *h_direct, *h_file;
static struct barrierd_epoch *bd_ep;
static struct barrierd_hp *bd_hpd;

static void bd_free_cb(void *p)
{
	rcl_obj_free(p);
}

static int bd_epoch_setup(void)
{
	bd_ep = barrierd_epoch_new(h_direct, 0);
	return bd_ep ? 0 : -ENOMEM;
}

static int bd_epoch_file_setup(void)
{
	bd_ep = barrierd_epoch_new(h_file, 0);
	return bd_ep ? 0 : -ENOMEM;
}

static void bd_epoch_teardown(void)
{
	barrierd_epoch_free(bd_ep);
	bd_ep = NULL;
}

static void *bd_epoch_reader_register(void)
{
	return barrierd_epoch_register(bd_ep);
}

static void bd_epoch_reader_unregister(void *r)
{
	barrierd_epoch_unregister(bd_ep, r);
}

static uint64_t bd_epoch_read_loop(void *r, uint64_t n)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		barrierd_epoch_enter(r);
		sum += src_load()->data[0];
		barrierd_epoch_exit(r);
	}
	return sum;
}

static void plain_sleep(void *r, uint64_t ns)
{
	(void)r;
	bench_sleep_ns(ns);
}

static void *no_writer(void)
{
	return NULL;
}

static void no_writer_unregister(void *w)
{
	(void)w;
}

static int bd_epoch_synchronize(void *w)
{
	(void)w;
	return barrierd_epoch_synchronize(bd_ep, -1);
}

static int bd_epoch_retire(void *w, struct rcl_obj *o)
{
	(void)w;
	return barrierd_epoch_retire(bd_ep, o, bd_free_cb);
}

static int bd_epoch_drain(void *w)
{
	(void)w;
	return barrierd_epoch_reclaim(bd_ep);
}

static const struct rcl_impl rcl_bd_epoch = {
    .name = "bd-epoch",
    .setup = bd_epoch_setup,
    .teardown = bd_epoch_teardown,
    .reader_register = bd_epoch_reader_register,
    .reader_unregister = bd_epoch_reader_unregister,
    .read_loop = bd_epoch_read_loop,
    .reader_sleep = plain_sleep,
    .writer_register = no_writer,
    .writer_unregister = no_writer_unregister,
    .synchronize = bd_epoch_synchronize,
    .retire = bd_epoch_retire,
    .drain = bd_epoch_drain,
};

static const struct rcl_impl rcl_bd_epoch_file = {
    .name = "bd-epoch-file",
    .setup = bd_epoch_file_setup,
    .teardown = bd_epoch_teardown,
    .reader_register = bd_epoch_reader_register,
    .reader_unregister = bd_epoch_reader_unregister,
    .read_loop = bd_epoch_read_loop,
    .reader_sleep = plain_sleep,
    .writer_register = no_writer,
    .writer_unregister = no_writer_unregister,
    .synchronize = bd_epoch_synchronize,
    .retire = bd_epoch_retire,
    .drain = bd_epoch_drain,
};

/* gp: a batch no grace period reaches (each retires one object and reclaims it). */
static unsigned bd_hp_batch;

static int bd_hp_setup(void)
{
	bd_hpd = barrierd_hp_new(h_direct, bd_hp_batch);
	return bd_hpd ? 0 : -ENOMEM;
}

static void bd_hp_teardown(void)
{
	barrierd_hp_free(bd_hpd);
	bd_hpd = NULL;
}

static void *bd_hp_reader_register(void)
{
	return barrierd_hp_register(bd_hpd);
}

static void bd_hp_reader_unregister(void *r)
{
	barrierd_hp_unregister(bd_hpd, r);
}

static uint64_t bd_hp_read_loop(void *r, uint64_t n)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		struct rcl_obj *p = barrierd_hp_protect(r, 0, (void *const *)&rcl_src);

		sum += p->data[0];
		barrierd_hp_clear(r, 0);
	}
	return sum;
}

static int bd_hp_synchronize(void *w)
{
	(void)w;
	return barrierd_hp_reclaim(bd_hpd);
}

static int bd_hp_retire(void *w, struct rcl_obj *o)
{
	(void)w;
	return barrierd_hp_retire(bd_hpd, o, bd_free_cb);
}

static const struct rcl_impl rcl_bd_hp = {
    .name = "bd-hp",
    .setup = bd_hp_setup,
    .teardown = bd_hp_teardown,
    .reader_register = bd_hp_reader_register,
    .reader_unregister = bd_hp_reader_unregister,
    .read_loop = bd_hp_read_loop,
    .reader_sleep = plain_sleep,
    .writer_register = no_writer,
    .writer_unregister = no_writer_unregister,
    .synchronize = bd_hp_synchronize,
    .gp_retires = 1,
    .retire = bd_hp_retire,
    .drain = bd_hp_synchronize,
};

/* ---- ck_epoch ------------------------------------------------------------------------------ */

_Static_assert(sizeof(ck_epoch_entry_t) <= sizeof(((struct rcl_obj *)0)->hook),
	       "ck_epoch_entry fits the object's hook");

static ck_epoch_t ck_ep;
static unsigned ck_retired;

static int ck_setup(void)
{
	ck_epoch_init(&ck_ep);
	return 0;
}

static void ck_teardown(void)
{
}

/* Records are never freed: ck_epoch keeps unregistered ones on its list for recycling. */
static void *ck_register(void)
{
	ck_epoch_record_t *r = ck_epoch_recycle(&ck_ep, NULL);

	if (r)
		return r;
	r = aligned_alloc(64, (sizeof(*r) + 63) & ~(size_t)63);
	if (r)
		ck_epoch_register(&ck_ep, r, NULL);
	return r;
}

static void ck_unregister(void *r)
{
	ck_epoch_unregister(r);
}

static uint64_t ck_read_loop(void *r, uint64_t n)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		ck_epoch_begin(r, NULL);
		sum += src_load()->data[0];
		ck_epoch_end(r, NULL);
	}
	return sum;
}

static int ck_synchronize(void *w)
{
	ck_epoch_synchronize(w);
	return 0;
}

static void ck_free_cb(ck_epoch_entry_t *e)
{
	rcl_obj_free((struct rcl_obj *)(void *)e);
}

static int ck_retire(void *w, struct rcl_obj *o)
{
	ck_epoch_call(w, (ck_epoch_entry_t *)(void *)o->hook, ck_free_cb);
	if (!(++ck_retired % 64))
		ck_epoch_poll(w);
	return 0;
}

static int ck_drain(void *w)
{
	ck_epoch_barrier(w);
	return 0;
}

static const struct rcl_impl rcl_ck_epoch = {
    .name = "ck-epoch",
    .setup = ck_setup,
    .teardown = ck_teardown,
    .reader_register = ck_register,
    .reader_unregister = ck_unregister,
    .read_loop = ck_read_loop,
    .reader_sleep = plain_sleep,
    .writer_register = ck_register,
    .writer_unregister = ck_unregister,
    .synchronize = ck_synchronize,
    .retire = ck_retire,
    .drain = ck_drain,
};

static const struct rcl_impl *const impls[] = {
    &rcl_bd_epoch,  &rcl_bd_epoch_file, &rcl_bd_hp,	&rcl_ck_epoch,
    &rcl_urcu_memb, &rcl_urcu_mb,	&rcl_urcu_qsbr,
};
#define NIMPLS (sizeof(impls) / sizeof(impls[0]))

/* ---- threads ------------------------------------------------------------------------------- */

static uint64_t rng_seed(void)
{
	return bd_mono_ns() * 0x9e3779b97f4a7c15ULL | 1;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

struct reader {
	pthread_t thread;
	const struct rcl_impl *impl;
	int cpu; /* -1: unpinned */
	uint64_t n;
	double ns_per_pair;
	int failed;
};

static _Atomic int readers_ready, readers_go, readers_stop;

/* Read: n sections back to back, all readers starting together. */
static void *reader_loop_main(void *arg)
{
	struct reader *rd = arg;
	void *r;
	uint64_t t0, sum;

	if (rd->cpu >= 0)
		bench_pin(rd->cpu);
	r = rd->impl->reader_register();
	if (!r) {
		rd->failed = 1;
		atomic_fetch_add(&readers_ready, 1);
		return NULL;
	}
	rd->impl->read_loop(r, 1000); /* warm */
	atomic_fetch_add(&readers_ready, 1);
	while (!atomic_load(&readers_go))
		;
	t0 = bd_mono_ns();
	sum = rd->impl->read_loop(r, rd->n);
	rd->ns_per_pair = (double)(bd_mono_ns() - t0) / (double)rd->n;
	__asm__ volatile("" : : "r"(sum));
	rd->impl->reader_unregister(r);
	return NULL;
}

/* Sleepy: a section, then a random 0-1 ms sleep, until told to stop. */
static void *reader_sleepy_main(void *arg)
{
	struct reader *rd = arg;
	uint64_t s = rng_seed(), sum = 0;
	void *r;

	prctl(PR_SET_TIMERSLACK, 1UL);
	r = rd->impl->reader_register();
	if (!r) {
		rd->failed = 1;
		atomic_fetch_add(&readers_ready, 1);
		return NULL;
	}
	atomic_fetch_add(&readers_ready, 1);
	while (!atomic_load(&readers_stop)) {
		sum += rd->impl->read_loop(r, 1);
		rd->impl->reader_sleep(r, rnd(&s) % (BENCH_MS + 1));
	}
	__asm__ volatile("" : : "r"(sum));
	rd->impl->reader_unregister(r);
	return NULL;
}

static int start_readers(struct reader *rd, int n, const struct rcl_impl *impl, int pinned,
			 uint64_t loops, void *(*fn)(void *))
{
	atomic_store(&readers_ready, 0);
	atomic_store(&readers_go, 0);
	atomic_store(&readers_stop, 0);
	for (int i = 0; i < n; i++) {
		rd[i] = (struct reader){.impl = impl, .cpu = pinned ? i : -1, .n = loops};
		if (pthread_create(&rd[i].thread, NULL, fn, &rd[i]))
			return -1;
	}
	while (atomic_load(&readers_ready) < n)
		bench_sleep_ns(100000);
	for (int i = 0; i < n; i++)
		if (rd[i].failed)
			return -1;
	return 0;
}

static void join_readers(struct reader *rd, int n)
{
	atomic_store(&readers_stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(rd[i].thread, NULL);
}

/* ---- modes --------------------------------------------------------------------------------- */

static int run_read(const struct rcl_impl **sel, int nsel, uint64_t n, unsigned reps,
		    const char *out)
{
	FILE *f = bench_csv(out, "impl,threads,rep,thread,ns_per_pair");

	if (!f)
		return 1;
	for (unsigned rep = 0; rep < reps; rep++) {
		for (int j = 0; j < nsel; j++) {
			const struct rcl_impl *impl = sel[(rep + (unsigned)j) % (unsigned)nsel];

			if (impl->setup()) {
				fprintf(stderr, "bench_reclaim: %s: setup failed\n", impl->name);
				return 1;
			}
			for (int t = 1; t <= 2; t++) {
				struct reader rd[2];

				if (start_readers(rd, t, impl, 1, n, reader_loop_main)) {
					fprintf(stderr, "bench_reclaim: %s: no reader\n",
						impl->name);
					return 1;
				}
				atomic_store(&readers_go, 1);
				join_readers(rd, t);
				for (int i = 0; i < t; i++)
					fprintf(f, "%s,%d,%u,%d,%.4f\n", impl->name, t, rep, i,
						rd[i].ns_per_pair);
			}
			impl->teardown();
		}
	}
	fclose(f);
	return 0;
}

static int run_gp(const struct rcl_impl **sel, int nsel, uint64_t n, int nreaders, const char *cond,
		  const char *out)
{
	FILE *f = bench_csv(out, "impl,readers,cond,index,latency_ns,cal,res,iwi,tlb");
	struct proc_interrupts pi;
	uint64_t s = rng_seed();
	int rc = 0;

	if (!f)
		return 1;
	if (proc_interrupts_open(&pi)) {
		fprintf(stderr, "bench_reclaim: /proc/interrupts: %s\n", strerror(errno));
		return 1;
	}
	bench_pin(0);
	for (int j = 0; j < nsel; j++) {
		const struct rcl_impl *impl = sel[j];
		struct reader rd[8];
		void *w;

		if (impl->setup() || start_readers(rd, nreaders, impl, 0, 0, reader_sleepy_main)) {
			fprintf(stderr, "bench_reclaim: %s: setup failed\n", impl->name);
			return 1;
		}
		w = impl->writer_register();
		for (uint64_t i = 0; i < n; i++) {
			uint64_t a[IPI_KINDS], b[IPI_KINDS], t0, t1;
			struct rcl_obj *old;
			int err;

			bench_sleep_ns(rnd(&s) % (2 * BENCH_MS + 1));
			old = __atomic_exchange_n(&rcl_src, obj_new(i), __ATOMIC_ACQ_REL);
			if (impl->gp_retires) {
				atomic_fetch_add(&rcl_live, 1);
				if (impl->retire(w, old))
					rc = 1;
				old = NULL; /* the timed call frees it */
			}
			proc_interrupts_sum(&pi, a);
			t0 = bd_mono_ns();
			err = impl->synchronize(w);
			t1 = bd_mono_ns();
			proc_interrupts_sum(&pi, b);
			if (err) {
				fprintf(stderr, "bench_reclaim: %s: synchronize: %s\n", impl->name,
					strerror(-err));
				rc = 1;
			}
			free(old);
			fprintf(f, "%s,%d,%s,%llu,%llu,%llu,%llu,%llu,%llu\n", impl->name, nreaders,
				cond, (unsigned long long)i, (unsigned long long)(t1 - t0),
				(unsigned long long)(b[IPI_CAL] - a[IPI_CAL]),
				(unsigned long long)(b[IPI_RES] - a[IPI_RES]),
				(unsigned long long)(b[IPI_IWI] - a[IPI_IWI]),
				(unsigned long long)(b[IPI_TLB] - a[IPI_TLB]));
		}
		join_readers(rd, nreaders);
		impl->writer_unregister(w);
		impl->teardown();
	}
	proc_interrupts_close(&pi);
	fclose(f);
	return rc;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

static int run_mem(const struct rcl_impl **sel, int nsel, uint64_t rate, uint64_t secs,
		   int nreaders, const char *out)
{
	FILE *f = bench_csv(out, "impl,readers,rate,secs,updates,mean_held,p99_held,max_held,"
				 "bytes_per_object,left_after_drain");
	uint64_t total = rate * secs, period = BENCH_SEC / (rate ? rate : 1);
	long *held = calloc(total ? total : 1, sizeof(long));
	int rc = 0;

	if (!f || !held)
		return 1;
	bench_pin(0);
	for (int j = 0; j < nsel; j++) {
		const struct rcl_impl *impl = sel[j];
		struct reader rd[8];
		uint64_t next, i;
		double sum = 0;
		void *w;

		if (impl->setup() || start_readers(rd, nreaders, impl, 0, 0, reader_sleepy_main)) {
			fprintf(stderr, "bench_reclaim: %s: setup failed\n", impl->name);
			return 1;
		}
		w = impl->writer_register();
		atomic_store(&rcl_live, 0);
		next = bd_mono_ns();
		for (i = 0; i < total; i++) {
			struct rcl_obj *old;

			next += period;
			bench_sleep_until(next);
			old = __atomic_exchange_n(&rcl_src, obj_new(i), __ATOMIC_ACQ_REL);
			atomic_fetch_add(&rcl_live, 1);
			if (impl->retire(w, old)) {
				fprintf(stderr, "bench_reclaim: %s: retire failed\n", impl->name);
				rc = 1;
			}
			held[i] = atomic_load(&rcl_live);
			sum += (double)held[i];
		}
		join_readers(rd, nreaders);
		impl->drain(w);
		impl->writer_unregister(w);
		impl->teardown();
		qsort(held, total, sizeof(long), cmp_long);
		fprintf(f, "%s,%d,%llu,%llu,%llu,%.1f,%ld,%ld,%zu,%ld\n", impl->name, nreaders,
			(unsigned long long)rate, (unsigned long long)secs,
			(unsigned long long)total, total ? sum / (double)total : 0.0,
			total ? held[(total * 99) / 100] : 0, total ? held[total - 1] : 0,
			sizeof(struct rcl_obj), atomic_load(&rcl_live));
	}
	free(held);
	fclose(f);
	return rc;
}

/* ---- main ---------------------------------------------------------------------------------- */

static int open_handle(const char *path, unsigned flags, struct barrierd **b)
{
	struct barrierd_open_opts oo = {
	    .sz = sizeof(oo),
	    .fallback = BARRIERD_FALLBACK_NONE, /* a benchmark must not hide a dead daemon */
	    .flags = flags,
	};
	int ret = barrierd_open_opts(b, path, &oo);

	if (ret)
		fprintf(stderr, "bench_reclaim: %s: %s\n", path, strerror(-ret));
	return ret;
}

/* IMPLS: "all" or names separated by commas. */
static int select_impls(char *list, const struct rcl_impl **sel)
{
	int n = 0;

	if (!strcmp(list, "all")) {
		for (size_t i = 0; i < NIMPLS; i++)
			sel[n++] = impls[i];
		return n;
	}
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < NIMPLS && strcmp(impls[i]->name, tok); i++)
			;
		if (i == NIMPLS) {
			fprintf(stderr, "bench_reclaim: unknown scheme '%s'\n", tok);
			return -1;
		}
		sel[n++] = impls[i];
	}
	return n;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_reclaim read STATE IMPLS N REPS OUT.csv | gp STATE IMPLS N "
			"READERS COND OUT.csv | mem STATE IMPLS RATE SECS READERS OUT.csv\n");
	return 64;
}

int main(int argc, char **argv)
{
	const struct rcl_impl *sel[NIMPLS * 4];
	int nsel, rc;

	if (argc < 7)
		return usage();
	if (open_handle(argv[2], 0, &h_direct) ||
	    open_handle(argv[2], BARRIERD_OPEN_NO_DIRECT, &h_file))
		return 1;
	if (!barrierd_direct(h_direct))
		fprintf(stderr, "bench_reclaim: note: the daemon serves no slots (no direct "
				"evidence)\n");
	nsel = select_impls(argv[3], sel);
	if (nsel <= 0)
		return 64;
	prctl(PR_SET_TIMERSLACK, 1UL);
	rcl_src = obj_new(0);
	if (argc == 7 && !strcmp(argv[1], "read"))
		rc = run_read(sel, nsel, strtoull(argv[4], NULL, 10),
			      (unsigned)strtoul(argv[5], NULL, 10), argv[6]);
	else if (argc == 8 && !strcmp(argv[1], "gp") && (bd_hp_batch = 1024))
		rc =
		    run_gp(sel, nsel, strtoull(argv[4], NULL, 10), atoi(argv[5]), argv[6], argv[7]);
	else if (argc == 8 && !strcmp(argv[1], "mem"))
		rc = run_mem(sel, nsel, strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10),
			     atoi(argv[6]), argv[7]);
	else
		rc = usage();
	free(rcl_src);
	barrierd_close(h_file);
	barrierd_close(h_direct);
	return rc;
}
