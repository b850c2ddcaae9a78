/* SPDX-License-Identifier: MIT */
/* Tracepoint names and ids: tracefs lookup, validation, the NMI refusal. */
#ifndef BARRIERD_TRACEPOINTS_H
#define BARRIERD_TRACEPOINTS_H

#include "options.h"

struct resolved_tp {
	char category[64];
	char name[64];
};

/* Where the kernel documents tracefs, and where tracefs_find() mounts it. */
#define TRACEFS_DIR "/sys/kernel/tracing"

/* Find tracefs (mounting it on TRACEFS_DIR if nothing is mounted).  0 or -errno. */
int tracefs_find(char *dir, size_t len);
/* The same without mounting anything (barrierd --check).  0 or -ENOENT. */
int tracefs_find_mounted(char *dir, size_t len);

/*
 * Turn names and ids into category/name pairs.  Refuses unknown tracepoints and NMI-context
 * ones (the nmi category: an NMI can land between a clock read and its exchange).  0, or -errno
 * with a one-line reason in err.
 */
int tracepoints_resolve(const struct tp_spec *in, size_t n, struct resolved_tp *out, char *err,
			size_t errlen);

/*
 * The same against a given tracefs directory, or NULL for none (then ids cannot be resolved
 * and only the default names pass), with no other side effect: what tracepoints_resolve does
 * once it has found (or mounted) tracefs.  For the tests and the fuzzer.
 */
int tracepoints_resolve_at(const char *tfs, const struct tp_spec *in, size_t n,
			   struct resolved_tp *out, char *err, size_t errlen);

#endif
