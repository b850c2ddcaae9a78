/* SPDX-License-Identifier: MIT */
/*
 * fake_daemon.h - a fake barrierd for the tests that need no root and no BPF: libbarrierd's
 * unit tests and barrierctl's tests.
 *
 * It writes a state file from the structs of <barrierd.h> (the one definition of the layout)
 * in a temporary directory of its own, maps it read-write and shared (the daemon's view), and
 * plays the daemon from threads of the test's process.  Values move as the ABI promises: one
 * aligned bd_store() per word, then a shared FUTEX_WAKE on the word's low half.  A reader maps
 * the same inode, so shared futexes on either mapping meet (the key is inode + offset).
 *
 * Two kinds of change:
 *   - a daemon's pass (fake_credit, fake_credit_all, fake_stop, the doorbell's credit): values
 *     only go forward, vtime is advanced before a value carries it (DESIGN rule 4);
 *   - a picture set by hand (fake_set_cpu, fake_refold, the ticker's fresh CPUs): any value
 *     in any direction, for the tests that show what a reader makes of a given file.
 * A test may also bd_store() any word of d->h or d->x itself.
 */
#ifndef BARRIERD_FAKE_DAEMON_H
#define BARRIERD_FAKE_DAEMON_H

#include <barrierd.h>

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "bd_sync.h"
#include "test_util.h"

/* The heartbeat period the fake daemon advertises (FAKE_LIVE) and how often the ticker runs. */
#define FAKE_HB_PERIOD_NS (100 * TEST_MS)
#define FAKE_TICK_NS (2 * TEST_MS)

/* How the file looks when the fake daemon creates it. */
enum fake_look {
	/*
	 * A live daemon of this process that has just published (fake_fill): running, with the
	 * doorbell, the per-CPU flags and served_ns, its pid and this boot's id, a 100 ms
	 * heartbeat period, every CPU busy with evidence a millisecond old, distinct per CPU, the
	 * global value their minimum, vtime above every per-CPU vtime, no stop snapshot yet.
	 * served_ns is the time of that publication (the global value): every CPU is at or past
	 * it, so the promise holds with nothing to do, and a stamp taken by the test is above it
	 * (a wait rings).  A test that stores served_ns itself plays the daemon's promise: it
	 * must then serve the waits it covers (publish, or let them time out on purpose).
	 */
	FAKE_LIVE,
	/*
	 * A file to read back in a tool's output (fake_label): every CPU busy with evidence at
	 * creation, pid 4242, generation 7, boot id 10111213-..., vtime 1000 and CPU c's vtime
	 * 1000 - c, credit counters 100 + c (event), 200 + c (idle) and 300 + c (offline), the
	 * last advance by idle credit of CPU 1, 55 passes, 5 credit passes, 3 rings; running but
	 * not armed; a 10 s heartbeat period, so that a slow machine never sees it go stale.
	 */
	FAKE_LABELLED,
};

/* The FAKE_LIVE image of a file of ncpu CPUs at time now; buf holds barrierd_file_size(ncpu). */
void fake_fill(void *buf, uint64_t ncpu, uint64_t now);
/* The FAKE_LABELLED image of a file of ncpu CPUs at time now, likewise. */
void fake_label(void *buf, uint64_t ncpu, uint64_t now);
/* A freshly allocated FAKE_LIVE image (free() it); its size in *size. */
void *fake_image(uint64_t ncpu, uint64_t now, size_t *size);

/* What the doorbell listener does when it hears a ring. */
enum fake_credit_mode {
	FAKE_CREDIT_NONE = 0, /* only count it */
	FAKE_CREDIT_IDLE = 1, /* idle/offline credit: every CPU that is not BUSY; served_ns stays */
	FAKE_CREDIT_SERVED = 2, /* the promise kept: every CPU gets evidence at the ring's time,
				   then served_ns rises to it */
};

struct fake_daemon {
	char dir[PATH_MAX / 2];
	char path[PATH_MAX];
	uint64_t ncpu;
	size_t size;
	struct barrierd_header *h; /* read-write shared mapping: the daemon's view */
	struct barrierd_ext *x;
	pthread_mutex_t lock; /* one publisher at a time, so no word ever goes backwards */

	/* The ticker: heartbeat, and the CPUs in fresh_mask kept at "now". */
	pthread_t tick_thread;
	int ticking;
	int tick_stop;	     /* __atomic */
	uint64_t fresh_mask; /* __atomic */

	/* The doorbell listener. */
	pthread_t bell_thread;
	int bell_running;
	int bell_stop;	    /* __atomic */
	int credit_on_ring; /* __atomic: enum fake_credit_mode */
	int listening;	    /* __atomic: the listener has entered its loop */
	uint64_t rings;	    /* __atomic: wakes the listener received */
};

/* A file that looks as `look` says, in a fresh 0755 directory under /tmp.  0 or -errno. */
int fake_create(struct fake_daemon *d, uint64_t ncpu, enum fake_look look);
/* Threads stopped, mapping gone, directory removed. */
void fake_destroy(struct fake_daemon *d);

/* A daemon's pass: CPU c gets evidence at ns (and a vtime), then the global words are folded. */
void fake_credit(struct fake_daemon *d, uint64_t c, uint64_t ns);
/* Every CPU gets evidence at ns: the next pass of a busy machine. */
void fake_credit_all(struct fake_daemon *d, uint64_t ns);
/*
 * The daemon stops cleanly: the stop snapshot (the global values), the heartbeat, then the
 * flags with STOPPED set, features kept, other state bits cleared, then a wake of every time
 * word so that sleepers notice.  Values stay: they remain true.  (The ticker keeps running
 * until fake_stop_ticker.)
 */
void fake_stop(struct fake_daemon *d);
/* CPU c's state in the extension (BARRIERD_CPU_*). */
void fake_set_state(struct fake_daemon *d, uint64_t c, uint64_t state);

/* By hand: CPU c in this state, its evidence age_ms old, the global time refolded. */
void fake_set_cpu(struct fake_daemon *d, uint64_t c, uint64_t state, uint64_t age_ms);
/* By hand: the global time := the per-CPU minimum, even backwards, and its waiters woken. */
void fake_refold(struct fake_daemon *d);

/*
 * Start the ticker, or give a running one a new mask: every FAKE_TICK_NS it refreshes the
 * heartbeat, so that waits longer than three periods still see a live daemon, and sets the
 * CPUs in fresh_mask (CPUs 0 to 63) to "now" by hand, like a daemon serving busy CPUs.  0 or
 * -errno.
 */
int fake_start_ticker(struct fake_daemon *d, uint64_t fresh_mask);
void fake_stop_ticker(struct fake_daemon *d);

/*
 * The doorbell listener: FUTEX_WAIT on the doorbell's low half, count every wake; as mode
 * says, credit CPUs with the time read after the ring, as the daemon's credit pass does.
 * Returns once the listener listens.  0 or -errno.
 */
int fake_start_doorbell(struct fake_daemon *d, enum fake_credit_mode mode);
void fake_stop_doorbell(struct fake_daemon *d);
/* Rings the listener heard. */
uint64_t fake_rings(struct fake_daemon *d);

/*
 * barrierd_open as the test's own user: root uses the plain call (the files are root's);
 * anyone else names their own uid as trusted, so that these tests also run without root.
 * Inline: the test links the library it tests (the real one or a mutant).
 */
static inline int fake_open_lib(struct barrierd **b, const char *path,
				const struct barrierd_open_opts *opts_in)
{
	struct barrierd_open_opts o = {.sz = sizeof(o)};

	if (opts_in)
		o = *opts_in;
	if (geteuid() != 0 && !o.trusted_uid_set) {
		o.trusted_uid_set = 1;
		o.trusted_uid = geteuid();
	}
	if (!opts_in && !o.trusted_uid_set)
		return barrierd_open(b, path);
	return barrierd_open_opts(b, path, &o);
}

#endif
