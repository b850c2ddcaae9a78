// SPDX-License-Identifier: MIT
#include "parse_u64.h"

#include <errno.h>
#include <stdlib.h>

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	/* strtoull accepts signs and leading blanks, which would turn "-1" into a huge value. */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}
