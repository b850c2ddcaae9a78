/* SPDX-License-Identifier: MIT */
/*
 * The state file as a handle maps it (lib/mapping.c): structure checks, the mapping and its
 * extension, and whether the path still names the mapped file (lib/identity.c).
 */
#ifndef BARRIERD_LIB_MAPPING_H
#define BARRIERD_LIB_MAPPING_H

#include "handle.h"

/*
 * Open, check and map the file at path into b (trust, structure, times from this boot), then
 * publish the mapping (hdr last, release).  0 or -errno; -ENOENT when the file or a directory
 * of its path does not exist; for a handle waiting for its file (late), also while a daemon is
 * still creating it (unreadable to us, shorter than a header, or no magic yet).
 */
int bd_map_file(struct barrierd *b, const char *path, bool late);

/*
 * Structure checks of a mapped file: 0 or -EPROTO.  *ncpu is the one value of ncpu that was
 * checked: callers must use it, never load the field again (a reset may change it under us).
 */
int bd_validate(const struct barrierd_header *h, size_t size, const struct barrierd_ext **ext,
		uint64_t *ncpu);

/*
 * A handle opened before the daemon laid out the extension: once the feature bit is set,
 * validate the extension as bd_validate does (mapping the file again if it grew past our
 * mapping) and publish it.  Never blocks; does nothing once the extension is known.
 */
void bd_ext_refresh(struct barrierd *b);

/*
 * Is the handle's file still the one at its path (lib/identity.c)?  0, or -EIDRM: the path
 * was removed, names another file, or the file is now shorter than our mapping.  One stat().
 */
int bd_file_moved(const struct barrierd *b);

#endif
