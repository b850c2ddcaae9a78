// SPDX-License-Identifier: MIT
/*
 * ec_sample: a worked example of event counts (include/barrierd_ec.h, docs/PRIMITIVES.md §1).
 *   ec_sample [-n ITEMS] [STATE_PATH]
 *
 * A bounded queue between two threads with no lock and no atomic instruction on either side
 * while both are busy.  Two event counts:
 *   produced: incremented by the producer after it wrote item i into ring[i % RING];
 *   consumed: incremented by the consumer after it read one.
 * Each thread is the single producer of its own count, so it increments with
 * barrierd_ec_inc_sp(): one unlocked xadd, and a call into the library only when the other
 * side sleeps.  A thread that finds the queue empty (the consumer) or full (the producer)
 * blocks with barrierd_ec_wait() until the other's count moves.  The producer pauses now and
 * then, so the consumer really sleeps.
 *
 * Why the item is there once the count says so: x86 keeps stores in order, so the item's store
 * is visible before the count's; the consumer loads the count before the item.  Why a sleeper
 * is never left asleep: the wait's barrier (docs/PRIMITIVES.md).
 *
 * Without a daemon (no state file, or one that cannot be opened) the waits pass NULL and fall
 * back to ck_ec's conservative second before they block: the sample still runs, it only says so.
 */
#include <barrierd_ec.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING 64
#define BURST 100 /* items between the producer's pauses */

static uint64_t ring[RING];
static struct barrierd_ec produced, consumed;
static struct barrierd *b;
static uint64_t items = 100000;
static uint64_t producer_waits, consumer_waits;

static uint64_t item_value(uint64_t i)
{
	return i * 0x9e3779b97f4a7c15ULL + 1;
}

static int wait_for_move(struct barrierd_ec *ec, uint64_t seen, uint64_t *waits)
{
	int r;

	(*waits)++;
	/* A generous bound: a sample that hangs would say nothing. */
	r = barrierd_ec_wait(ec, b, seen, 30LL * 1000000000LL);
	if (r)
		fprintf(stderr, "ec_sample: barrierd_ec_wait: %s\n", strerror(-r));
	return r;
}

static void *producer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < items; i++) {
		/* Full: wait until the consumer has taken item i - RING. */
		for (;;) {
			uint64_t c = barrierd_ec_value(&consumed);

			if (i - c < RING)
				break;
			if (wait_for_move(&consumed, c, &producer_waits))
				return (void *)1;
		}
		ring[i % RING] = item_value(i);
		barrierd_ec_inc_sp(&produced); /* after the item: x86 keeps stores in order */
		if (i % BURST == BURST - 1) {
			struct timespec ts = {0, 200 * 1000}; /* 200 us: the consumer sleeps */

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t sum = 0, want = 0;
	pthread_t th;
	void *pret;
	int opt, ret;

	while ((opt = getopt(argc, argv, "n:h")) != -1) {
		switch (opt) {
		case 'n':
			items = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-n ITEMS] [STATE_PATH]\n", argv[0]);
			return opt == 'h' ? 0 : 64;
		}
	}
	if (items < 1 || items > 1000000000ULL) {
		fprintf(stderr, "ec_sample: -n takes 1 to 1000000000 items\n");
		return 64;
	}
	ret = barrierd_open(&b, optind < argc ? argv[optind] : NULL);
	if (ret) {
		printf("no barrierd (%s): waits use ck_ec's conservative second\n", strerror(-ret));
		b = NULL;
	}
	barrierd_ec_init(&produced, 0, 0);
	barrierd_ec_init(&consumed, 0, 0);
	if (pthread_create(&th, NULL, producer, NULL)) {
		fprintf(stderr, "ec_sample: pthread_create failed\n");
		return 1;
	}
	for (uint64_t i = 0; i < items; i++) {
		/* Empty: wait until the producer has published item i. */
		for (;;) {
			uint64_t p = barrierd_ec_value(&produced);

			if (p > i)
				break;
			if (wait_for_move(&produced, p, &consumer_waits))
				return 1;
		}
		sum += ring[i % RING];
		want += item_value(i);
		barrierd_ec_inc_sp(&consumed); /* after the read: the slot may be reused */
	}
	pthread_join(th, &pret);
	const char *how = b ? "barrierd" : "no daemon";

	barrierd_close(b);
	if (pret || sum != want) {
		fprintf(stderr, "ec_sample: %s\n", pret ? "the producer failed" : "bad items");
		return 1;
	}
	printf("%llu items passed in order (%s); the consumer waited %llu times, the producer "
	       "%llu times\n",
	       (unsigned long long)items, how, (unsigned long long)consumer_waits,
	       (unsigned long long)producer_waits);
	return 0;
}
