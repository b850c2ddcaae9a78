/* SPDX-License-Identifier: MIT */
/*
 * harness.h - the real daemon around a test: a temporary state directory under the build
 * tree, the daemon started on a state file there and stopped after, its log, and barriers
 * made by hand as a client of the original layout makes them.
 *
 * Each test program defines BARRIERD_BIN (the daemon it runs, a compile definition or a
 * variable) before including this header.  The fake daemon of the unit and CLI tests, which
 * needs no root, is fake_daemon.h.
 */
#ifndef BARRIERD_HARNESS_H
#define BARRIERD_HARNESS_H

#include <barrierd.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bd_sync.h"
#include "map_ro.h"
#include "test_env.h"
#include "test_util.h"

struct harness {
	char dir[256];
	char state[300];
	char log[300];
	pid_t pid;
};

/* The harness of the test being run (one per test program). */
static struct harness H;

/* A fresh 0755 directory under the build tree, with the state and log paths in it. */
void h_mkdir(struct harness *h);
void h_rmdir(struct harness *h);

/*
 * The daemon binary the tests run: BARRIERD_BIN, or $BARRIERD_TEST_DAEMON when set (to run the
 * same tests against another build, e.g. an older commit's, to see them fail there).
 */
static inline const char *h_daemon_bin(void)
{
	const char *env = getenv("BARRIERD_TEST_DAEMON");

	return env && *env ? env : BARRIERD_BIN;
}

/*
 * Fork and exec bin with args (NULL-terminated, without argv[0]), its output appended to the
 * log; -1 cpu: no pinning.
 */
pid_t h_spawn_bin(struct harness *h, const char *bin, int cpu, const char *const *args);

/* Fork and exec the daemon (h_daemon_bin()); -1 cpu: no pinning. */
static inline pid_t h_spawn(struct harness *h, int cpu, const char *const *args)
{
	return h_spawn_bin(h, h_daemon_bin(), cpu, args);
}

/* Wait (hang guard: seconds) until the file says a daemon with this pid runs.  0 or -1. */
int h_wait_running(struct harness *h, pid_t pid);

/* Start bin on h->state with extra arguments and wait until it runs.  0 or -1. */
int h_start_bin(struct harness *h, const char *bin, int cpu, const char *const *extra);

static inline int h_start(struct harness *h, int cpu, const char *const *extra)
{
	return h_start_bin(h, h_daemon_bin(), cpu, extra);
}

/* SIGTERM the daemon (if started) and reap it; its wait status, 0 if none, -1 if hung. */
int h_stop(struct harness *h);

/* The log's size now: a mark for h_log_has_since(). */
long h_log_mark(const struct harness *h);
/* Does the daemon log, from byte `from` on, contain needle? */
int h_log_has_since(const struct harness *h, long from, const char *needle);

/*
 * Wait as a client of the original layout waits: FUTEX_WAIT on the global word's low half,
 * sleep_ns at a time, until its 64-bit value passes t.  ring: FUTEX_WAKE the doorbell before
 * each sleep, to ask for idle credit as the library does.  0, or -ETIMEDOUT once timeout_ns
 * passed.
 */
int h_raw_wait(const struct barrierd_header *m, uint64_t t, bool ring, uint64_t sleep_ns,
	       uint64_t timeout_ns);
/*
 * One barrier as such a client makes it, by hand: the fenced stamp (bd_stamp_fence, then the
 * clock) into *stamp, then h_raw_wait for it.
 */
int h_raw_barrier(const struct barrierd_header *m, bool ring, uint64_t sleep_ns,
		  uint64_t timeout_ns, uint64_t *stamp);
/*
 * The same client's vtime barrier: its stamp is header.vtime loaded after an MFENCE (the
 * original's vtime stamp), and it waits as h_raw_wait does, on last_interrupt_vtime, until that
 * word's 64-bit value passes the stamp.
 */
uint64_t h_raw_stamp_vtime(const struct barrierd_header *m);
int h_raw_wait_vtime(const struct barrierd_header *m, uint64_t vtime, bool ring, uint64_t sleep_ns,
		     uint64_t timeout_ns);

/* cmocka fixtures: a fresh directory per test; the daemon (if started) stopped after it. */
__attribute__((unused)) static int h_setup(void **state)
{
	(void)state;
	h_mkdir(&H);
	return 0;
}

__attribute__((unused)) static int h_teardown(void **state)
{
	(void)state;
	h_stop(&H);
	h_rmdir(&H);
	return 0;
}

#endif
