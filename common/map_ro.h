/* SPDX-License-Identifier: MIT */
/*
 * A state file mapped read-only and shared, as any user can map it (the file is 0644), with no
 * checks beyond its size: for the benchmarks and tests that read the layout themselves.
 * Clients use libbarrierd's barrierd_open(), which checks trust and structure.
 */
#ifndef BARRIERD_MAP_RO_H
#define BARRIERD_MAP_RO_H

#include <stddef.h>

/* The whole file, at least 128 bytes (the original header); NULL with errno on failure. */
void *map_ro(const char *path, size_t *size);

#endif
