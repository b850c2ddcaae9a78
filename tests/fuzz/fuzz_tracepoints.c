// SPDX-License-Identifier: MIT
/*
 * fuzz_tracepoints - libFuzzer target: tracepoint specs, from the command line to the
 * category/name pairs the daemon attaches (options.c's add_tp, then tracepoints.c's
 * tracepoints_resolve_at).
 *
 * The input is NUL-separated specs.  They go through the daemon's two command lines,
 *   barrierd --tracepoint SPEC1 --tracepoint SPEC2 ...   (names)
 *   barrierd /state SPEC1 SPEC2 ...                      (the original's numeric ids)
 * and whatever options_parse accepts is resolved twice: without tracefs (NULL: ids refused,
 * only the default names pass) and against a small fake tracefs made at start-up in $TMPDIR
 * (events/CAT/NAME/id files, an nmi category, names at the length limits).  Checked:
 *   - resolving returns 0, -EINVAL or -ENOENT, and an error comes with a reason;
 *   - every resolved pair has a non-empty category and name without '/', never the nmi
 *     category; a name spec resolves to itself; without tracefs only defaults resolve; with
 *     the fake tracefs only events it holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "tracepoints.h"

#define MAX_SPECS 70 /* a few more than BARRIERD_MAX_TRACEPOINTS */

static FILE *devnull;
static char tfs[128];

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_tracepoints: invariant broken: %s\n", what);
		abort();
	}
}

static void put(const char *rel, const char *text)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", tfs, rel);
	if (!text) {
		mkdir(p, 0755);
		return;
	}
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(p);
		close(fd);
	}
}

/* A fake tracefs: the defaults, a few others, nmi, a broken id file, names at the limits. */
static const char *const fake_events[][2] = {
    {"irq/softirq_entry", "116\n"},
    {"irq/irq_handler_entry", "117\n"},
    {"irq_vectors/local_timer_entry", "200\n"},
    {"irq_vectors/reschedule_entry", "201\n"},
    {"sched/sched_switch", "300\n"},
    {"sched/sched_wakeup", "301\n"},
    {"nmi/nmi_handler", "400\n"},
    {"timer/hrtimer_expire_entry", "50\n"},
    {"broken/no_number", "junk\n"},
    {"C_______________________________________________________________63/"
     "N______________________________________________________________63",
     "63\n"},
    {"C________________________________________________________________64/"
     "N_______________________________________________________________64",
     "64\n"},
};

static void rmtree_fake(void)
{
	char p[512];

	for (size_t i = 0; i < sizeof(fake_events) / sizeof(fake_events[0]); i++) {
		char cat[256];
		const char *ev = fake_events[i][0];

		snprintf(p, sizeof(p), "%s/events/%s/id", tfs, ev);
		unlink(p);
		snprintf(p, sizeof(p), "%s/events/%s", tfs, ev);
		rmdir(p);
		snprintf(cat, sizeof(cat), "%.*s", (int)(strchr(ev, '/') - ev), ev);
		snprintf(p, sizeof(p), "%s/events/%s", tfs, cat);
		rmdir(p);
	}
	snprintf(p, sizeof(p), "%s/events", tfs);
	rmdir(p);
	rmdir(tfs);
}

static void make_fake_tracefs(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(tfs, sizeof(tfs), "%s/bd-fuzz-tfs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tfs)) {
		perror("mkdtemp");
		abort();
	}
	put("events", NULL);
	for (size_t i = 0; i < sizeof(fake_events) / sizeof(fake_events[0]); i++) {
		char rel[256];
		const char *ev = fake_events[i][0];

		snprintf(rel, sizeof(rel), "events/%.*s", (int)(strchr(ev, '/') - ev), ev);
		put(rel, NULL);
		snprintf(rel, sizeof(rel), "events/%s", ev);
		put(rel, NULL);
		snprintf(rel, sizeof(rel), "events/%s/id", ev);
		put(rel, fake_events[i][1]);
	}
	atexit(rmtree_fake);
}

static int in_fake(const struct resolved_tp *r)
{
	char full[160];

	snprintf(full, sizeof(full), "%s/%s", r->category, r->name);
	for (size_t i = 0; i < sizeof(fake_events) / sizeof(fake_events[0]); i++)
		if (strcmp(full, fake_events[i][0]) == 0)
			return 1;
	return 0;
}

static int is_default(const struct resolved_tp *r)
{
	char full[160];

	snprintf(full, sizeof(full), "%s/%s", r->category, r->name);
	for (const char *const *d = barrierd_default_tracepoints; *d; d++)
		if (strcmp(full, *d) == 0)
			return 1;
	return 0;
}

static void resolve(const struct barrierd_options *o, const char *dir)
{
	struct resolved_tp *out = calloc(o->n_tps, sizeof(*out));
	char err[512];
	int ret;

	err[0] = 0;
	ret = tracepoints_resolve_at(dir, o->tps, o->n_tps, out, err, sizeof(err));
	check(ret == 0 || ret == -EINVAL || ret == -ENOENT, "result");
	if (ret) {
		check(err[0] != 0 && strlen(err) < sizeof(err), "an error has a reason");
	} else {
		for (size_t i = 0; i < o->n_tps; i++) {
			const struct resolved_tp *r = &out[i];

			check(r->category[0] && r->name[0], "category and name are not empty");
			check(!strchr(r->category, '/') && !strchr(r->name, '/'), "no '/' inside");
			check(strcmp(r->category, "nmi") != 0, "the nmi category is refused");
			if (!dir)
				check(is_default(r), "without tracefs only the defaults");
			else
				check(in_fake(r), "only events tracefs holds");
			if (o->tps[i].id < 0) {
				char full[160];

				snprintf(full, sizeof(full), "%s/%s", r->category, r->name);
				check(strcmp(full, o->tps[i].name) == 0,
				      "a name resolves to itself");
			}
		}
	}
	free(out);
}

static void parse_and_resolve(int argc, char **argv)
{
	struct barrierd_options o;
	char err[256];

	if (options_parse(&o, argc, argv, devnull, err, sizeof(err)) != OPTIONS_RUN)
		return;
	resolve(&o, NULL);
	resolve(&o, tfs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *specs[MAX_SPECS];
	char *argv[2 * MAX_SPECS + 2];
	size_t n = 0, at = 0;
	int argc;

	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		make_fake_tracefs();
	}
	while (at < size && n < MAX_SPECS) {
		const uint8_t *nul = memchr(data + at, 0, size - at);
		size_t len = nul ? (size_t)(nul - (data + at)) : size - at;

		specs[n] = malloc(len + 1);
		memcpy(specs[n], data + at, len);
		specs[n][len] = 0;
		n++;
		at += len + 1;
	}

	/* barrierd --tracepoint SPEC ... */
	argc = 0;
	argv[argc++] = "barrierd";
	for (size_t i = 0; i < n; i++) {
		argv[argc++] = "--tracepoint";
		argv[argc++] = specs[i];
	}
	argv[argc] = NULL;
	parse_and_resolve(argc, argv);

	/* barrierd /state ID ... */
	argc = 0;
	argv[argc++] = "barrierd";
	argv[argc++] = "/state";
	for (size_t i = 0; i < n; i++)
		argv[argc++] = specs[i];
	argv[argc] = NULL;
	parse_and_resolve(argc, argv);

	for (size_t i = 0; i < n; i++)
		free(specs[i]);
	return 0;
}
