// SPDX-License-Identifier: MIT
/* barrierd_open: trust, validate, map read-only, and refuse values from the future. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_FALLBACK_AFTER_NS (100 * 1000000LL)

uint64_t bd_clock_raw(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int bd_validate(const struct barrierd_header *h, size_t size, const struct barrierd_ext **ext,
		uint64_t *ncpu_out)
{
	uint64_t ncpu, xo;

	*ext = NULL;
	*ncpu_out = 0;
	if (size < sizeof(*h))
		return -EPROTO;
	if (bd_load(&h->magic) != BARRIERD_MAGIC)
		return -EPROTO;
	/* A newer minor version adds only what we may ignore; a newer major is not ours. */
	if (h->abi_major != BARRIERD_ABI_MAJOR)
		return -EPROTO;
	if (h->header_size != sizeof(*h) || h->cpu_stride != sizeof(struct barrierd_cpu))
		return -EPROTO;
	ncpu = bd_load(&h->ncpu);
	if (ncpu == 0 || ncpu > BARRIERD_MAX_CPUS ||
	    sizeof(*h) + ncpu * sizeof(struct barrierd_cpu) > size)
		return -EPROTO;
	xo = bd_load(&h->ext_offset);
	if (bd_load(&h->flags) & BARRIERD_FEAT_EXTENSION) {
		if (xo % 8 || xo < sizeof(*h) + ncpu * sizeof(struct barrierd_cpu) || xo > size ||
		    size - xo < sizeof(struct barrierd_ext) + ncpu * sizeof(struct barrierd_ext_cpu))
			return -EPROTO;
		const struct barrierd_ext *x = (const void *)((const char *)h + xo);

		if (x->ext_header_size != sizeof(*x) ||
		    x->ext_cpu_stride != sizeof(struct barrierd_ext_cpu))
			return -EPROTO;
		*ext = x;
	}
	*ncpu_out = ncpu;
	return 0;
}

/*
 * Reboots (BRIEF §2): a file left from an earlier boot holds times far in our future.  Load
 * every time field, LFENCE so the clock read cannot be performed before those loads, then
 * read the clock: any value above it cannot be from this boot's CLOCK_MONOTONIC.  The reading
 * becomes open_ns; stamps at or below it are refused, so a stale value can never pass one.
 */
static int check_times(struct barrierd *b)
{
	const struct barrierd_header *h = b->hdr;
	uint64_t maxv = bd_load(&h->last_interrupt_ns), now;

	maxv = maxv > bd_load(&h->heartbeat_ns) ? maxv : bd_load(&h->heartbeat_ns);
	for (uint64_t c = 0; c < b->ncpu; c++) {
		uint64_t v = bd_load(&h->per_cpu[c].last_interrupt_ns);

		maxv = v > maxv ? v : maxv;
	}
	if (b->ext) {
		uint64_t v = bd_load(&b->ext->last_advance_ns);

		maxv = v > maxv ? v : maxv;
	}
	__asm__ __volatile__("lfence" ::: "memory");
	now = bd_clock_raw() - (uint64_t)b->timens_off;
#ifndef BARRIERD_MUTANT_NO_FUTURE_CHECK /* mutant for tests/audit: breaks the reboot rule */
	if (maxv > now)
		return -ESTALE;
#endif
	b->open_ns = now;
	b->valid_after = now;
	return 0;
}

BDLIB_EXPORT int barrierd_open_opts(struct barrierd **out, const char *path,
				    const struct barrierd_open_opts *opts)
{
	struct barrierd *b;
	struct stat st;
	void *map;
	int fd, ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (opts && opts->sz < offsetof(struct barrierd_open_opts, fallback_after_ns) + 8)
		return -EINVAL;
	if (!path)
		path = secure_getenv(BARRIERD_STATE_ENV);
	if (!path || !*path)
		path = BARRIERD_DEFAULT_STATE_PATH;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->timens_fd = -1;
	ret = bd_timens_derive(b);
	if (ret)
		goto fail;
	b->fork_gen = __atomic_load_n(&bd_fork_gen, __ATOMIC_RELAXED);
	b->fallback = opts ? opts->fallback : BARRIERD_FALLBACK_NONE;
	b->fallback_after_ns = opts && opts->fallback_after_ns > 0 ? opts->fallback_after_ns
								   : DEFAULT_FALLBACK_AFTER_NS;
	if (b->fallback != BARRIERD_FALLBACK_NONE && b->fallback != BARRIERD_FALLBACK_MEMBARRIER) {
		ret = -EINVAL;
		goto fail;
	}

	ret = bd_open_trusted(path, opts ? opts->trusted_uid : 0, opts ? opts->trusted_uid_set : 0,
			      &fd);
	if (ret)
		goto fail;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		goto fail;
	}
	if (st.st_size < (off_t)sizeof(struct barrierd_header)) {
		ret = -EPROTO;
		close(fd);
		goto fail;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	ret = -errno;
	close(fd);
	if (map == MAP_FAILED)
		goto fail;
	b->hdr = map;
	b->size = (size_t)st.st_size;
	ret = bd_validate(b->hdr, b->size, &b->ext, &b->ncpu);
	if (ret)
		goto fail;
	ret = check_times(b);
	if (ret)
		goto fail;
	*out = b;
	return 0;
fail:
	barrierd_close(b);
	return ret;
}

BDLIB_EXPORT int barrierd_open(struct barrierd **out, const char *path)
{
	return barrierd_open_opts(out, path, NULL);
}

BDLIB_EXPORT void barrierd_close(struct barrierd *b)
{
	if (!b)
		return;
	if (b->hdr)
		munmap((void *)b->hdr, b->size);
	bd_timens_unpin(b);
	free(b);
}

BDLIB_EXPORT const struct barrierd_header *barrierd_mapping(const struct barrierd *b, size_t *size)
{
	if (size)
		*size = b->size;
	return b->hdr;
}

BDLIB_EXPORT uint64_t barrierd_open_ns(const struct barrierd *b)
{
	return b->open_ns;
}
