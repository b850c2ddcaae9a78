/* SPDX-License-Identifier: MIT */
/*
 * The slot server: a thread that hands clients the frozen slots map and the sched_switch link
 * over a unix socket beside the state file (docs/PROTOCOL.md §6.12, DESIGN rule 11).  One reply
 * per connection, then the connection is closed; replies at a bounded rate.
 */
#ifndef BARRIERD_SLOT_SERVER_H
#define BARRIERD_SLOT_SERVER_H

#include "tracepoints.h"

#include <barrierd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct probes;

/* Replies per second sustained, and the burst (open() storms of many clients at once). */
#define SLOT_SERVER_RATE 200
#define SLOT_SERVER_BURST 64

struct slot_server {
	int lfd;    /* the listening socket, or -1 */
	int fds[2]; /* the frozen slots map, the sched_switch link */
	unsigned nfds;
	int anchor_fds[2]; /* the anchor's program and .rodata (anchor.h); -1: none served */
	const uint64_t *generation; /* header.generation: sent with every reply */
	uint64_t ncpu;
	struct probes *probes; /* to register the thread's global tid */
	pthread_t thread;
	bool started;
	int start_err;
	uint32_t go;	 /* __atomic futex word: 1 once the daemon runs, 2 to stop */
	uint64_t served; /* __atomic: replies sent */
	uint64_t failed; /* __atomic: replies that could not be sent */
	uint32_t tid;	 /* global tid, once registered */
};

/*
 * Bind `path` (a stale socket there is replaced), mode `mode`, and start the thread, which
 * registers itself as a daemon thread and drops its privileges, then waits for
 * slot_server_go().  anchor_fds: the anchor's two descriptors, sent after every reply, or
 * NULL.  0 or -errno (the daemon then runs without direct evidence).
 */
int slot_server_start(struct slot_server *s, const char *path, mode_t mode, struct probes *p,
		      uint64_t ncpu, const uint64_t *generation, const int *anchor_fds);
/* Start answering: the file is marked running and its generation is final. */
void slot_server_go(struct slot_server *s);
/* Stop and join the thread; close the socket (the path stays: the sandbox cannot unlink). */
void slot_server_stop(struct slot_server *s);

#endif
