// SPDX-License-Identifier: MIT
/*
 * fuzz_options - libFuzzer target: the daemon's command line (src/daemon/options.c).
 *
 * The input is argv after argv[0] ("barrierd"), NUL-separated: "-v\0--state\0/run/x".  Each
 * argument is a heap string of its own, so ASan sees a read past any one of them.  Besides
 * "no crash, no leak, no UB", the harness checks what main() and the daemon rely on:
 *   - the result is OPTIONS_RUN, OPTIONS_EXIT_OK or -EINVAL, and -EINVAL comes with a one-line
 *     reason that names an option, not the program (argv[0]);
 *   - a run has a non-empty state path, 1 to BARRIERD_MAX_TRACEPOINTS tracepoints, each a
 *     CATEGORY/NAME of [A-Za-z0-9_] or a tracefs id >= 0, and numbers within their ranges;
 *   - the same argv parsed again gives the same answer (getopt's state is reset each time).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

#define MAX_ARGS 128

static FILE *devnull;

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_options: invariant broken: %s\n", what);
		abort();
	}
}

static int name_ok(const char *n)
{
	const char *slash = strchr(n, '/');

	if (!slash || slash == n || !slash[1] || strchr(slash + 1, '/') || strlen(n) >= 128)
		return 0;
	for (const char *p = n; *p; p++)
		if (!(*p == '_' || *p == '/' || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return 0;
	return 1;
}

static void check_run(const struct barrierd_options *o)
{
	check(o->state_path && o->state_path[0], "a run has a state path");
	check(o->n_tps >= 1 && o->n_tps <= BARRIERD_MAX_TRACEPOINTS, "1..64 tracepoints");
	for (size_t i = 0; i < o->n_tps; i++) {
		const struct tp_spec *t = &o->tps[i];

		if (t->id >= 0)
			check(t->name[0] == 0, "an id comes without a name");
		else
			check(t->id == -1 && name_ok(t->name), "a name is CATEGORY/NAME");
	}
	check(o->idle_credit_interval_ns >= 1000000ULL &&
		  o->idle_credit_interval_ns <= 60000ULL * 1000000ULL,
	      "idle credit interval in range");
	check(o->heartbeat_period_ns >= 10000000ULL &&
		  o->heartbeat_period_ns <= 60000ULL * 1000000ULL,
	      "heartbeat period in range");
	check(o->max_credit_rate >= 1 && o->max_credit_rate <= 1000000, "credit rate in range");
}

static void check_error(const char *err, size_t errlen)
{
	static const char unknown[] = "unknown option '";
	size_t n = strnlen(err, errlen);

	check(n > 0 && n < errlen, "an error has a reason");
	check(strchr(err, '\n') == NULL, "the reason is one line");
	/* The word quoted is the option that was refused, never the program's name. */
	if (strncmp(err, unknown, sizeof(unknown) - 1) == 0)
		check(err[sizeof(unknown) - 1] == '-', "an unknown option is quoted as given");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_ARGS + 2];
	int argc = 1;
	struct barrierd_options o1, o2;
	char err1[256], err2[256];
	int r1, r2;
	size_t at = 0;

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	argv[0] = strdup("barrierd");
	while (at < size && argc <= MAX_ARGS) {
		const uint8_t *nul = memchr(data + at, 0, size - at);
		size_t len = nul ? (size_t)(nul - (data + at)) : size - at;
		char *a = malloc(len + 1);

		memcpy(a, data + at, len);
		a[len] = 0;
		argv[argc++] = a;
		at += len + 1;
	}
	argv[argc] = NULL;

	r1 = options_parse(&o1, argc, argv, devnull, err1, sizeof(err1));
	check(r1 == OPTIONS_RUN || r1 == OPTIONS_EXIT_OK || r1 == -EINVAL, "result");
	if (r1 == OPTIONS_RUN)
		check_run(&o1);
	if (r1 == -EINVAL)
		check_error(err1, sizeof(err1));

	/* Again, with a short error buffer: the same answer, the reason cut but terminated. */
	r2 = options_parse(&o2, argc, argv, devnull, err2, 24);
	check(r2 == r1, "the same argv gives the same result");
	if (r1 == OPTIONS_RUN) {
		check(o1.n_tps == o2.n_tps && strcmp(o1.state_path, o2.state_path) == 0 &&
			  memcmp(o1.tps, o2.tps, sizeof(o1.tps)) == 0,
		      "the same argv gives the same options");
	}
	if (r1 == -EINVAL)
		check(strlen(err2) < 24 && strncmp(err1, err2, strlen(err2)) == 0,
		      "a short buffer holds the start of the same reason");

	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return 0;
}
