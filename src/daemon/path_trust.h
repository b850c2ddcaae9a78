/* SPDX-License-Identifier: MIT */
/*
 * The daemon's own paths, held to the rules the library applies to the state file: a
 * directory chain that only root (or the daemon's own uid) can write, and files that are
 * regular, ours and reachable under one name only.
 */
#ifndef BARRIERD_PATH_TRUST_H
#define BARRIERD_PATH_TRUST_H

#include <stddef.h>

/*
 * Check an open directory and every directory above it (through "..", on descriptors).
 * 0, or -EPERM with the reason in err.
 */
int path_trust_dir_chain(int dfd, const char *dir, char *err, size_t errlen);

/*
 * Check an open file: regular, owned by root or by us, one link.  what names it in err
 * ("state file", "lock file").  0, or -EPERM with the reason in err.
 */
int path_trust_file(int fd, const char *what, const char *path, char *err, size_t errlen);

#endif
