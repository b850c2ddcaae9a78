// SPDX-License-Identifier: MIT
/* barrierd_open and barrierd_close: the handle's life; the file is mapped by lib/mapping.c. */
#include "attach.h"
#include "direct.h"
#include "handle.h"
#include "mapping.h"
#include "slots_fetch.h"
#include "timens.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define DEFAULT_FALLBACK_AFTER_NS (100 * 1000000LL)

BDLIB_EXPORT int barrierd_open_opts(struct barrierd **out, const char *path,
				    const struct barrierd_open_opts *opts)
{
	unsigned flags = 0;
	struct barrierd *b;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (opts && opts->sz < offsetof(struct barrierd_open_opts, fallback_after_ns) + 8)
		return -EINVAL;
	if (opts && opts->sz >= offsetof(struct barrierd_open_opts, flags) + sizeof(opts->flags))
		flags = opts->flags;
	if (flags & ~(BARRIERD_OPEN_ATTACH_LATER | BARRIERD_OPEN_NO_DIRECT))
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
	b->no_direct = flags & BARRIERD_OPEN_NO_DIRECT;
	ret = bd_timens_derive(b);
	if (ret)
		goto fail;
	b->fork_gen = __atomic_load_n(&bd_fork_gen, __ATOMIC_RELAXED);
	b->fallback = opts ? opts->fallback : BARRIERD_FALLBACK_NONE;
	b->fallback_after_ns = opts && opts->fallback_after_ns > 0 ? opts->fallback_after_ns
								   : DEFAULT_FALLBACK_AFTER_NS;
	b->trusted_uid = opts ? opts->trusted_uid : 0;
	b->trusted_uid_set = opts ? opts->trusted_uid_set : 0;
	if (b->fallback != BARRIERD_FALLBACK_NONE && b->fallback != BARRIERD_FALLBACK_MEMBARRIER) {
		ret = -EINVAL;
		goto fail;
	}
	ret = bd_map_file(b, path, flags & BARRIERD_OPEN_ATTACH_LATER);
	if (ret == -ENOENT && (flags & BARRIERD_OPEN_ATTACH_LATER))
		ret = bd_attach_later(b, path);
	if (ret)
		goto fail;
	/* The slots, if the daemon offers them: any failure leaves the file alone in use. */
	bd_direct_refresh(b, -1);
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
	if (bd_hdr(b))
		munmap((void *)b->hdr, b->size);
	if (b->map2)
		munmap((void *)b->map2, b->size2);
	if (b->fd >= 0)
		close(b->fd);
	bd_direct_free(b);
	bd_timens_unpin(b);
	free(b->path);
	free(b->late_path);
	free(b);
}

BDLIB_EXPORT const struct barrierd_header *barrierd_mapping(const struct barrierd *b, size_t *size)
{
	const struct barrierd_header *h = bd_hdr(b);

	/* The longer mapping, once the extension needed one (set before ext: acquire). */
	if (h && bd_ext(b) && b->map2) {
		if (size)
			*size = b->size2;
		return b->map2;
	}
	if (size)
		*size = h ? b->size : 0;
	return h; /* NULL: a handle still waiting for its file (BARRIERD_OPEN_ATTACH_LATER) */
}

BDLIB_EXPORT uint64_t barrierd_open_ns(const struct barrierd *b)
{
	return __atomic_load_n(&b->open_ns, __ATOMIC_RELAXED);
}
