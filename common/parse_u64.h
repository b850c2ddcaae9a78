/* SPDX-License-Identifier: MIT */
/* Numbers on command lines: the daemon's options and barrierctl's. */
#ifndef BARRIERD_PARSE_U64_H
#define BARRIERD_PARSE_U64_H

#include <stdint.h>

/*
 * s as a decimal number from min to max: 0 and *out, or -EINVAL (*out untouched) for an
 * empty string, anything but digits (a sign, blanks, a suffix), or a value out of range.
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
