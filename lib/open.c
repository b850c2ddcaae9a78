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

/*
 * Out of line, so that the stamp's clock read is one call that tests/audit/check_disasm.sh
 * finds after the stamp's fences.
 */
uint64_t bd_clock_raw(void)
{
	return bd_mono_ns();
}

/*
 * The extension at byte offset xo of a mapping of `size` bytes, checked for a reader that
 * indexes ncpu entries: inside the mapping, after the per-CPU array, our sizes.  NULL if not.
 */
static const struct barrierd_ext *ext_at(const void *map, size_t size, uint64_t xo, uint64_t ncpu)
{
	const struct barrierd_ext *x;

	if (xo % 8 || xo < sizeof(struct barrierd_header) + ncpu * sizeof(struct barrierd_cpu) ||
	    xo > size ||
	    size - xo < sizeof(struct barrierd_ext) + ncpu * sizeof(struct barrierd_ext_cpu))
		return NULL;
	x = (const void *)((const char *)map + xo);
	if (x->ext_header_size != sizeof(*x) ||
	    x->ext_cpu_stride != sizeof(struct barrierd_ext_cpu))
		return NULL;
	return x;
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
		*ext = ext_at(h, size, xo, ncpu);
		if (!*ext)
			return -EPROTO;
	}
	*ncpu_out = ncpu;
	return 0;
}

/*
 * Reboots (DESIGN rule 9): a file left from an earlier boot holds times far in our future.  Load
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
	if (bd_ext(b)) {
		uint64_t v = bd_load(&bd_ext(b)->last_advance_ns);

		maxv = v > maxv ? v : maxv;
	}
	bd_lfence();
	now = bd_clock_raw() - (uint64_t)b->timens_off;
	if (maxv > now)
		return -ESTALE;
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
	b->fd = -1;
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
	if (map == MAP_FAILED) {
		ret = -errno;
		close(fd);
		goto fail;
	}
	b->hdr = map;
	b->size = (size_t)st.st_size;
	ret = bd_validate(b->hdr, b->size, &b->ext, &b->ncpu);
	/*
	 * No extension yet (a new or reset file, laid out but not yet started): keep the trusted
	 * descriptor to map it when it appears (bd_ext_refresh).  Never reopened by name: the
	 * path was checked once, on the descriptors we hold.
	 */
	if (ret || b->ext)
		close(fd);
	else
		b->fd = fd;
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

void bd_ext_refresh(struct barrierd *b)
{
	const struct barrierd_ext *x;
	struct stat st;
	/* Nonzero, and different in every forked child (bd_fork_gen is bumped there). */
	int mine = (int)((__atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE) << 1) | 1);
	int expected = 0;
	uint64_t xo;
	void *map;

	/*
	 * The feature bit first, then the fields it vouches for: the daemon lays the extension
	 * out (offset, sizes) before it sets the bit, with ordered stores, and our later loads
	 * are not performed before this one (x86: loads are not reordered with older loads).
	 */
	if (!(bd_load(&b->hdr->flags) & BARRIERD_FEAT_EXTENSION))
		return;
	/*
	 * One thread at a time, and nobody waits for it: another caller simply goes on without
	 * the extension this time.  The lock holds the holder's fork generation: in a child forked
	 * while a thread of the parent was in here, that thread does not exist, so a lock of
	 * another generation is taken over instead of holding the child off for good.
	 */
	if (!__atomic_compare_exchange_n(&b->ext_busy, &expected, mine, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED) &&
	    (expected == mine || !__atomic_compare_exchange_n(&b->ext_busy, &expected, mine, false,
							      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
		return;
	if (bd_ext(b) || b->fd < 0)
		goto out; /* another thread got it first */
	xo = bd_load(&b->hdr->ext_offset);
	x = ext_at(b->hdr, b->size, xo, b->ncpu);
	if (!x) {
		/*
		 * Past the end of our mapping: the file grew (the daemon only grows it).  Map its
		 * size now, and keep the old mapping until close: other threads may be reading
		 * through b->hdr at this very moment.  Both map the same pages of the same inode.
		 */
		if (fstat(b->fd, &st) || st.st_size <= (off_t)b->size)
			goto out;
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, b->fd, 0);
		if (map == MAP_FAILED)
			goto out;
		x = ext_at(map, (size_t)st.st_size, xo, b->ncpu);
		if (!x) {
			munmap(map, (size_t)st.st_size);
			goto out;
		}
		b->map2 = map;
		b->size2 = (size_t)st.st_size;
	}
	/*
	 * Release: a thread that loads the pointer (bd_ext, acquire) also sees map2, size2 and
	 * the extension's checked fields.  Published once; never cleared while the handle lives.
	 */
	__atomic_store_n(&b->ext, x, __ATOMIC_RELEASE);
	close(b->fd);
	b->fd = -1;
out:
	__atomic_store_n(&b->ext_busy, 0, __ATOMIC_RELEASE);
}

BDLIB_EXPORT void barrierd_close(struct barrierd *b)
{
	if (!b)
		return;
	if (b->hdr)
		munmap((void *)b->hdr, b->size);
	if (b->map2)
		munmap((void *)b->map2, b->size2);
	if (b->fd >= 0)
		close(b->fd);
	bd_timens_unpin(b);
	free(b);
}

BDLIB_EXPORT const struct barrierd_header *barrierd_mapping(const struct barrierd *b, size_t *size)
{
	/* The longer mapping, once the extension needed one (set before ext: acquire). */
	if (bd_ext(b) && b->map2) {
		if (size)
			*size = b->size2;
		return b->map2;
	}
	if (size)
		*size = b->size;
	return b->hdr;
}

BDLIB_EXPORT uint64_t barrierd_open_ns(const struct barrierd *b)
{
	return b->open_ns;
}
