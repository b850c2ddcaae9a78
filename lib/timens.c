// SPDX-License-Identifier: MIT
/* Time namespaces: this process's CLOCK_MONOTONIC offset against the host's (BRIEF §3.5). */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int bd_timens_offset(int64_t *off)
{
	char name[32];
	long long sec, nsec;
	FILE *f;

	*off = 0;
	f = fopen("/proc/self/timens_offsets", "re");
	if (!f) {
		/*
		 * No file: either the kernel has no time namespaces (then there is no offset) or
		 * /proc is missing, in which case we cannot know and refuse.
		 */
		if (errno == ENOENT && access("/proc/self/stat", R_OK) == 0)
			return 0;
		return -EPROTO;
	}
	while (fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3) {
		if (strcmp(name, "monotonic") == 0) {
			*off = (int64_t)sec * 1000000000LL + nsec;
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -EPROTO;
}
