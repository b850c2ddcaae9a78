// SPDX-License-Identifier: MIT
#include "tracepoints.h"
#include "kernel_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int has_events(const char *dir)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/events", dir);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int tracefs_find_mounted(char *dir, size_t len)
{
	static const char *const cands[] = {TRACEFS_DIR, "/sys/kernel/debug/tracing"};

	for (size_t i = 0; i < 2; i++) {
		if (has_events(cands[i])) {
			snprintf(dir, len, "%s", cands[i]);
			return 0;
		}
	}
	return -ENOENT;
}

int tracefs_find(char *dir, size_t len)
{
	if (tracefs_find_mounted(dir, len) == 0)
		return 0;
	/* Nothing mounted: mount it where the kernel documents it (needs CAP_SYS_ADMIN). */
	if (mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL) == 0 && has_events(TRACEFS_DIR)) {
		snprintf(dir, len, "%s", TRACEFS_DIR);
		return 0;
	}
	return -ENOENT;
}

static int read_id(const char *path, long *id)
{
	char buf[32];
	ssize_t n = read_text_file(path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	*id = strtol(buf, NULL, 10);
	return 0;
}

/* Scan events/CAT/NAME/id for a numeric id. */
static int lookup_id(const char *tfs, long want, struct resolved_tp *out)
{
	char p[512];
	DIR *cats;
	struct dirent *c;
	int ret = -ENOENT;

	snprintf(p, sizeof(p), "%s/events", tfs);
	cats = opendir(p);
	if (!cats)
		return -errno;
	while (ret == -ENOENT && (c = readdir(cats))) {
		DIR *evs;
		struct dirent *e;

		if (c->d_name[0] == '.' || strlen(c->d_name) >= sizeof(out->category))
			continue;
		snprintf(p, sizeof(p), "%s/events/%s", tfs, c->d_name);
		evs = opendir(p);
		if (!evs)
			continue;
		while ((e = readdir(evs))) {
			long id = -1;

			if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(out->name))
				continue;
			snprintf(p, sizeof(p), "%s/events/%s/%s/id", tfs, c->d_name, e->d_name);
			if (read_id(p, &id) == 0 && id == want) {
				snprintf(out->category, sizeof(out->category), "%s", c->d_name);
				snprintf(out->name, sizeof(out->name), "%s", e->d_name);
				ret = 0;
				break;
			}
		}
		closedir(evs);
	}
	closedir(cats);
	return ret;
}

static int is_default(const struct resolved_tp *r)
{
	char full[160];

	snprintf(full, sizeof(full), "%s/%s", r->category, r->name);
	for (const char *const *d = barrierd_default_tracepoints; *d; d++)
		if (strcmp(*d, full) == 0)
			return 1;
	return 0;
}

int tracepoints_resolve(const struct tp_spec *in, size_t n, struct resolved_tp *out, char *err,
			size_t errlen)
{
	char tfs[128];

	if (tracefs_find(tfs, sizeof(tfs)))
		return tracepoints_resolve_at(NULL, in, n, out, err, errlen);
	return tracepoints_resolve_at(tfs, in, n, out, err, errlen);
}

int tracepoints_resolve_at(const char *tfs, const struct tp_spec *in, size_t n,
			   struct resolved_tp *out, char *err, size_t errlen)
{
	int have_tfs = tfs != NULL;

	for (size_t i = 0; i < n; i++) {
		struct resolved_tp *r = &out[i];

		if (in[i].id >= 0) {
			if (!have_tfs) {
				snprintf(
				    err, errlen,
				    "tracepoint id %ld: tracefs is not mounted and cannot be "
				    "mounted, so ids cannot be resolved (use --tracepoint names)",
				    in[i].id);
				return -ENOENT;
			}
			if (lookup_id(tfs, in[i].id, r)) {
				snprintf(err, errlen,
					 "unknown tracepoint id %ld (no %s/events/*/*/id "
					 "holds it)",
					 in[i].id, tfs);
				return -ENOENT;
			}
		} else {
			const char *slash = strchr(in[i].name, '/');
			size_t cl = (size_t)(slash - in[i].name);

			if (cl >= sizeof(r->category) || strlen(slash + 1) >= sizeof(r->name)) {
				snprintf(err, errlen, "tracepoint name too long: %s", in[i].name);
				return -EINVAL;
			}
			memcpy(r->category, in[i].name, cl);
			r->category[cl] = 0;
			snprintf(r->name, sizeof(r->name), "%s", slash + 1);
		}
		/*
		 * NMIs are not evidence: an NMI can arrive between the interrupted program's
		 * clock read and its exchange, and nests inside any other probe.
		 */
		if (strcmp(r->category, "nmi") == 0) {
			snprintf(err, errlen,
				 "tracepoint %s/%s runs in NMI context and is refused as evidence",
				 r->category, r->name);
			return -EINVAL;
		}
		if (!have_tfs && !is_default(r)) {
			/* Without tracefs the category cannot be checked (attach is by name only).
			 */
			snprintf(
			    err, errlen,
			    "tracepoint %s/%s: tracefs is not mounted and cannot be mounted, so "
			    "only the default tracepoints can be used",
			    r->category, r->name);
			return -ENOENT;
		}
		if (have_tfs) {
			char p[512];
			struct stat st;

			snprintf(p, sizeof(p), "%s/events/%s/%s", tfs, r->category, r->name);
			if (stat(p, &st) != 0) {
				snprintf(err, errlen, "unknown tracepoint %s/%s (no %s)",
					 r->category, r->name, p);
				return -ENOENT;
			}
		}
	}
	return 0;
}
