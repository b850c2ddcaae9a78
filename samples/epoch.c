// SPDX-License-Identifier: MIT
/*
 * epoch: a worked example of barrierd_epoch (include/barrierd_reclaim.h).  A reader thread
 * looks up the current configuration in a loop with no fence and no atomic instruction; the
 * main thread publishes a new configuration now and then and retires the old one, which the
 * library frees once no reader can still hold it.
 *   epoch [-n UPDATES] [STATE_PATH]
 */
#include <barrierd_reclaim.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct config {
	unsigned version;
	unsigned limit; /* always version * 10: a reader checks it */
};

static struct config *current; /* what readers see; replaced by the writer */
static struct barrierd_epoch *dom;
static int done;
static unsigned long freed;

static void *reader(void *arg)
{
	struct barrierd_epoch_record *rec = barrierd_epoch_register(dom);
	unsigned long reads = 0, bad = 0;

	(void)arg;
	if (!rec)
		return (void *)1;
	while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) {
		barrierd_epoch_enter(rec); /* two loads and a store */
		const struct config *c = __atomic_load_n(&current, __ATOMIC_ACQUIRE);

		bad += c->limit != c->version * 10; /* c cannot be freed before the exit */
		barrierd_epoch_exit(rec);	    /* one store */
		reads++;
	}
	barrierd_epoch_unregister(dom, rec);
	printf("reader: %lu lookups, %lu inconsistent\n", reads, bad);
	return bad ? (void *)1 : NULL;
}

static void free_config(void *p)
{
	free(p);
	freed++; /* free functions run in the retiring thread */
}

int main(int argc, char **argv)
{
	struct barrierd *b;
	pthread_t t;
	void *rret;
	int n = 1000, opt, r;

	while ((opt = getopt(argc, argv, "n:h")) != -1) {
		if (opt != 'n') {
			fprintf(stderr, "usage: %s [-n UPDATES] [STATE_PATH]\n", argv[0]);
			return opt == 'h' ? 0 : 64;
		}
		n = atoi(optarg);
	}
	r = barrierd_open(&b, optind < argc ? argv[optind] : NULL);
	if (r) {
		fprintf(stderr, "barrierd_open: %s\n", strerror(-r));
		return 1;
	}
	/* Retired configurations are freed 16 at a time: one barrier per 16 updates. */
	dom = barrierd_epoch_new(b, 16);
	current = calloc(1, sizeof(*current));
	if (!dom || !current)
		return 1;
	pthread_create(&t, NULL, reader, NULL);
	for (int i = 1; i <= n; i++) {
		struct config *c = malloc(sizeof(*c)), *old;

		if (!c)
			return 1;
		c->version = (unsigned)i;
		c->limit = (unsigned)i * 10;
		old = current;
		__atomic_store_n(&current, c, __ATOMIC_RELEASE);  /* unlink the old one... */
		r = barrierd_epoch_retire(dom, old, free_config); /* ...then retire it */
		if (r) {
			fprintf(stderr, "barrierd_epoch_retire: %s\n", strerror(-r));
			return 1;
		}
		usleep(100);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELAXED);
	pthread_join(t, &rret);
	barrierd_epoch_free(dom); /* frees what is still retired */
	printf("writer: %d updates, %lu configurations freed\n", n, freed);
	free(current);
	barrierd_close(b);
	return rret || freed != (unsigned long)n;
}
