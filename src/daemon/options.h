/* SPDX-License-Identifier: MIT */
/* Command-line parsing for barrierd (pure: no I/O besides the help text). */
#ifndef BARRIERD_OPTIONS_H
#define BARRIERD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BARRIERD_MAX_TRACEPOINTS 64

struct tp_spec {
	char name[128]; /* "category/name", or empty when given by id */
	long id;	/* numeric tracefs id (the original command line), or -1 */
};

struct barrierd_options {
	const char *state_path;
	struct tp_spec tps[BARRIERD_MAX_TRACEPOINTS];
	size_t n_tps;
	bool verbose;
	uint64_t idle_credit_interval_ns; /* slow idle credit for clients that cannot ring */
	uint64_t heartbeat_period_ns;
	uint64_t max_credit_rate; /* credit passes per second, at most */
	bool always_armed;	  /* busy CPUs signal even with no waiter */
	uint64_t nudge_after_ns;  /* nudge lagging CPUs this long after a ring; 0: never */
	uint64_t max_nudge_rate;  /* nudges per second per CPU, at most */
	int slot_socket_mode;	  /* the slot socket's mode (0666); -1: no slot socket */
	bool check;		  /* --check: say what a start would find, start nothing */
};

enum { OPTIONS_RUN = 0, OPTIONS_EXIT_OK = 1 };

/*
 * Parse argv.  Returns OPTIONS_RUN, OPTIONS_EXIT_OK (--help/--version printed to out), or
 * -EINVAL with a one-line reason in err.
 */
int options_parse(struct barrierd_options *o, int argc, char **argv, FILE *out, char *err,
		  size_t errlen);

extern const char *const barrierd_default_tracepoints[];

#endif
