// SPDX-License-Identifier: MIT
#include "timens_check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int timens_check(char *err, size_t errlen)
{
	char name[32];
	long long sec, nsec;
	FILE *f = fopen("/proc/self/timens_offsets", "re");

	if (!f) {
		/* Without the file, only a kernel without time namespaces is acceptable. */
		if (errno == ENOENT && access("/proc/self/stat", R_OK) == 0)
			return 0;
		snprintf(err, errlen, "cannot read /proc/self/timens_offsets: %s", strerror(errno));
		return -EPROTO;
	}
	while (fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3) {
		if (strcmp(name, "monotonic") == 0 && (sec || nsec)) {
			fclose(f);
			snprintf(
			    err, errlen,
			    "running in a time namespace with a monotonic offset of %lld.%09llds: "
			    "published times would not match the BPF clock; refusing",
			    sec, nsec);
			return -EINVAL;
		}
	}
	fclose(f);
	return 0;
}
