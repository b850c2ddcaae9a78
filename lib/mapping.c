// SPDX-License-Identifier: MIT
/*
 * Mapping the state file into a handle: trust, structure, read-only mapping, values from the
 * future refused; and the extension, mapped once the daemon lays it out.
 */
#include "handle.h"
#include "mapping.h"
#include "slots_fetch.h"
#include "timens.h"
#include "trust.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
		/* The per-CPU flags, when advertised, lie inside the file as well. */
		if ((bd_load(&h->flags) & BARRIERD_FEAT_CPU_FLAGS) &&
		    size - xo - sizeof(struct barrierd_ext) -
			    ncpu * sizeof(struct barrierd_ext_cpu) <
			ncpu * sizeof(uint64_t)) {
			*ext =
			    NULL; /* a refusal leaves nothing behind (fuzz_state_file checks it) */
			return -EPROTO;
		}
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
static int check_times(const struct barrierd_header *h, uint64_t ncpu, const struct barrierd_ext *x,
		       int64_t off, uint64_t *now_out)
{
	uint64_t maxv = bd_load(&h->last_interrupt_ns), now;

	maxv = maxv > bd_load(&h->heartbeat_ns) ? maxv : bd_load(&h->heartbeat_ns);
	for (uint64_t c = 0; c < ncpu; c++) {
		uint64_t v = bd_load(&h->per_cpu[c].last_interrupt_ns);

		maxv = v > maxv ? v : maxv;
	}
	if (x) {
		uint64_t v = bd_load(&x->last_advance_ns);

		maxv = v > maxv ? v : maxv;
	}
	bd_lfence();
	now = bd_clock_raw() - (uint64_t)off;
	if (maxv > now)
		return -ESTALE;
	*now_out = now;
	return 0;
}

int bd_map_file(struct barrierd *b, const char *path, bool late)
{
	const struct barrierd_ext *ext;
	int64_t off = bd_timens_current(b);
	uint64_t ncpu, now, floor;
	struct stat st;
	off_t hole;
	size_t size;
	void *map;
	bool relayed = false;
	int fd, ret;

	if (off == INT64_MIN)
		return -EPROTO; /* our time namespace's offset cannot be known */
	ret = bd_open_trusted(path, b->trusted_uid, b->trusted_uid_set, &fd);
	/*
	 * A user namespace where the daemon's root is unmapped: every owner on the way shows as
	 * the overflow uid, which proves nothing.  The file is then taken only if the daemon's
	 * anchor names it (bd_relay_verify, below, before anything is published).
	 */
	if (ret == -EPERM && bd_open_relayed(path, &fd) == 0) {
		relayed = true;
		ret = 0;
	}
	/*
	 * A daemon creating the file (docs/LIFECYCLE.md): 0600 under its umask until its
	 * fchmod, empty until allocated, zeros until laid out.  For a handle waiting for its file
	 * that is "not there yet", not an error.
	 */
	if (late && ret == -EACCES)
		return -ENOENT;
	if (ret)
		return ret;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (st.st_size < (off_t)sizeof(struct barrierd_header)) {
		close(fd);
		return late ? -ENOENT : -EPROTO;
	}
	/*
	 * A file with holes is none of a daemon's of ours, which allocates every block before
	 * it lays the file out: it is one left by a daemon that died on a full file system, or
	 * made by hand (truncate -s).  A load from a hole's page on a full tmpfs raises SIGBUS,
	 * so such a file is refused before a byte of it is touched.  (Where SEEK_HOLE is not
	 * supported, the whole file counts as data.)
	 */
	hole = lseek(fd, 0, SEEK_HOLE);
	if (hole >= 0 && hole < st.st_size) {
		close(fd);
		return late ? -ENOENT : -EPROTO;
	}
	size = (size_t)st.st_size;
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = bd_validate(map, size, &ext, &ncpu);
	if (ret && late && bd_load(&((const struct barrierd_header *)map)->magic) == 0)
		ret = -ENOENT;
	if (!ret)
		ret = check_times(map, ncpu, ext, off, &now);
	if (ret) {
		munmap(map, size);
		close(fd);
		return ret;
	}
	b->size = size;
	b->ncpu = ncpu;
	b->dev = (uint64_t)st.st_dev;
	b->ino = (uint64_t)st.st_ino;
	/*
	 * Absolute, so that a later chdir() cannot make bd_file_moved() look elsewhere.  Without
	 * it (ENOMEM), the handle just cannot tell a replaced file from a dead daemon.
	 */
	b->path = realpath(path, NULL);
	if (relayed) {
		/*
		 * The socket is found beside the path; the set and its anchor are checked against
		 * this descriptor and mapping.  Refused: EPERM, as the walk would have; a handle
		 * waiting for its file waits on (the daemon may not serve yet).
		 */
		b->relay_only = true;
		ret = b->path ? bd_relay_verify(b, map, fd) : -ENOMEM;
		if (ret) {
			b->relay_only = false;
			free(b->path);
			b->path = NULL;
			munmap(map, size);
			close(fd);
			return late ? -ENOENT : ret == -ENOMEM ? ret : -EPERM;
		}
	}
	/*
	 * No extension yet (a new or reset file, laid out but not yet started): keep the trusted
	 * descriptor to map it when it appears (bd_ext_refresh).  Never reopened by name: the
	 * path was checked once, on the descriptors we hold.
	 */
	if (ext)
		close(fd);
	else
		b->fd = fd;
	__atomic_store_n(&b->open_ns, now, __ATOMIC_RELAXED);
	/* The floor only rises: a namespace move may have retired the handle meanwhile. */
	floor = __atomic_load_n(&b->valid_after, __ATOMIC_RELAXED);
	while (floor < now && !__atomic_compare_exchange_n(&b->valid_after, &floor, now, false,
							   __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	__atomic_store_n(&b->ext, ext, __ATOMIC_RELEASE);
	/*
	 * Last, and release: a thread that finds the mapping (bd_hdr, acquire) also finds every
	 * field above and the raised floor.  Set once; never cleared while the handle lives.
	 */
	__atomic_store_n(&b->hdr, (const struct barrierd_header *)map, __ATOMIC_RELEASE);
	return 0;
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
