// SPDX-License-Identifier: MIT
/* Threads looping barrierd_barrier() under a failing daemon (looper.h). */
#include "looper.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bd_sync.h"
#include "test_util.h"

static void keep(struct lthread *t, uint64_t t0, uint64_t t1)
{
	if (t->nsucc == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct span *s = realloc(t->succ, cap * sizeof(*s));

		if (!s) {
			t->oom = 1;
			return;
		}
		t->succ = s;
		t->cap = cap;
	}
	t->succ[t->nsucc++] = (struct span){t0, t1};
}

static void *loop_main(void *arg)
{
	struct lthread *t = arg;
	struct looper *l = t->l;

	while (!atomic_load(&l->stop)) {
		uint64_t t0 = bd_mono_ns();
		int r = barrierd_barrier(l->b, l->timeout_ns);
		uint64_t t1 = bd_mono_ns();

		if (t1 - t0 > t->max_call)
			t->max_call = t1 - t0;
		if (r == 0) {
			t->ok++;
			keep(t, t0, t1);
			atomic_store(&t->last_ok_t0, t0);
		} else if (r == -ESTALE) {
			t->estale++;
		} else if (r == -ETIMEDOUT) {
			t->etimedout++;
		} else {
			t->other++;
			t->other_err = r;
		}
		atomic_fetch_add(&t->completed, 1);
	}
	atomic_fetch_add(&l->done, 1);
	return NULL;
}

int looper_start(struct looper *l, struct barrierd *b, int n, int64_t timeout_ns)
{
	pthread_attr_t attr;
	int ret = 0;

	memset(l, 0, sizeof(*l));
	l->b = b;
	l->timeout_ns = timeout_ns;
	l->t = calloc((size_t)n, sizeof(*l->t));
	if (!l->t)
		return -ENOMEM;
	pthread_attr_init(&attr);
	/* 1000 threads with the default 8 MiB stacks would reserve 8 GiB of address space. */
	pthread_attr_setstacksize(&attr, 128 * 1024);
	for (int i = 0; i < n; i++) {
		l->t[i].l = l;
		ret = -pthread_create(&l->t[i].tid, &attr, loop_main, &l->t[i]);
		if (ret) {
			atomic_store(&l->stop, 1);
			break;
		}
		l->n++;
	}
	pthread_attr_destroy(&attr);
	return ret;
}

int looper_stop(struct looper *l, int guard_s)
{
	uint64_t limit = bd_mono_ns() + (uint64_t)(l->timeout_ns > 0 ? l->timeout_ns : 0) +
			 (uint64_t)guard_s * TEST_SEC;

	atomic_store(&l->stop, 1);
	while (atomic_load(&l->done) < l->n) {
		if (bd_mono_ns() > limit) {
			fprintf(stderr, "%d of %d looping threads still inside the library\n",
				l->n - atomic_load(&l->done), l->n);
			return -ETIMEDOUT;
		}
		test_sleep_ms(10);
	}
	for (int i = 0; i < l->n; i++)
		pthread_join(l->t[i].tid, NULL);
	return 0;
}

void looper_free(struct looper *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->t[i].succ);
	free(l->t);
	l->t = NULL;
}

uint64_t looper_early(const struct looper *l, uint64_t after, uint64_t before)
{
	uint64_t n = 0;

	for (int i = 0; i < l->n; i++)
		for (size_t k = 0; k < l->t[i].nsucc; k++)
			if (l->t[i].succ[k].t0 > after && l->t[i].succ[k].t1 < before) {
				if (n < 5)
					fprintf(stderr,
						"early success: thread %d, call %llu..%llu ns\n", i,
						(unsigned long long)l->t[i].succ[k].t0,
						(unsigned long long)l->t[i].succ[k].t1);
				n++;
			}
	return n;
}

int looper_threads_passed_after(const struct looper *l, uint64_t after)
{
	int n = 0;

	for (int i = 0; i < l->n; i++)
		if (atomic_load(&l->t[i].last_ok_t0) > after)
			n++;
	return n;
}

void looper_totals(const struct looper *l, struct lthread *sum, const char *what)
{
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; i < l->n; i++) {
		const struct lthread *t = &l->t[i];

		sum->completed += atomic_load(&t->completed);
		sum->ok += t->ok;
		sum->estale += t->estale;
		sum->etimedout += t->etimedout;
		sum->other += t->other;
		if (t->other)
			sum->other_err = t->other_err;
		if (t->max_call > sum->max_call)
			sum->max_call = t->max_call;
		sum->oom |= t->oom;
	}
	printf("%s: %d threads, %llu calls: %llu ok, %llu -ESTALE, %llu -ETIMEDOUT, %llu other "
	       "(latest %d); longest call %.1f ms\n",
	       what, l->n, (unsigned long long)sum->completed, (unsigned long long)sum->ok,
	       (unsigned long long)sum->estale, (unsigned long long)sum->etimedout,
	       (unsigned long long)sum->other, sum->other_err, (double)sum->max_call / 1e6);
}
