/* SPDX-License-Identifier: MIT */
/* libbarrierd internals: the handle and the helpers shared by the library's files. */
#ifndef BARRIERD_LIB_INTERNAL_H
#define BARRIERD_LIB_INTERNAL_H

#include <barrierd.h>
#include <stdint.h>

#define BDLIB_EXPORT __attribute__((visibility("default")))

struct barrierd {
	const struct barrierd_header *hdr; /* read-only shared mapping */
	const struct barrierd_ext *ext;    /* NULL when the file has no extension */
	size_t size;
	uint64_t ncpu;
	uint64_t open_ns;   /* host CLOCK_MONOTONIC at open: stamps must be later */
	int64_t timens_off; /* this process's CLOCK_MONOTONIC offset (updated atomically) */
	int fallback;
	int64_t fallback_after_ns;
};

/* Load a shared 64-bit word.  Every shared access is __atomic (BRIEF §5). */
static inline uint64_t bd_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Its low half: the futex word (x86 is little-endian). */
static inline uint32_t bd_load_low(const uint64_t *p)
{
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

/* The raw CLOCK_MONOTONIC of this process (in its time namespace), in ns. */
uint64_t bd_clock_raw(void);

/* Read this process's monotonic offset from /proc/self/timens_offsets.  0 or -EPROTO. */
int bd_timens_offset(int64_t *off);

/* Path trust (BRIEF §5): -EPERM with no bytes of the file trusted, or an open fd. */
int bd_open_trusted(const char *path, uid_t trusted_uid, int trusted_uid_set, int *fd_out);

/* Structure checks of a mapped file: 0 or -EPROTO. */
int bd_validate(const struct barrierd_header *h, size_t size, const struct barrierd_ext **ext);

/* Doorbell: one FUTEX_WAKE; returns how many daemon threads heard it, or -errno. */
int bd_ring(const struct barrierd *b);

/* Is a daemon publishing?  (running flag, not stopped, heartbeat fresh) */
int bd_live(const struct barrierd *b, uint64_t now_host);

/* membarrier(MEMBARRIER_CMD_GLOBAL): 0 or its -errno, never a success it did not get. */
int bd_fallback_membarrier(void);

#endif
