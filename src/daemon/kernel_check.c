// SPDX-License-Identifier: MIT
#include "kernel_check.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>

/* The oldest kernel the project's tests run on (tests/vm: Debian 12's 6.1). */
#define TESTED_MAJOR 6
#define TESTED_MINOR 1

static int older(int major, int minor, int than_major, int than_minor)
{
	return major < than_major || (major == than_major && minor < than_minor);
}

/*
 * By the release and the BTF file, never by probing: libbpf's probes answer "not supported"
 * when the kernel refuses for want of privilege (no CAP_BPF, a user namespace), and the load
 * names that case better.
 */
int kernel_check(char *err, size_t errlen)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2) {
		/* The newest of what the programs need: the BPF ring buffer. */
		if (older(major, minor, 5, 8)) {
			snprintf(
			    err, errlen,
			    "this kernel (%s) cannot serve barrierd: it needs Linux 5.8 or later "
			    "(BPF ring buffer 5.8, tp_btf programs 5.5, raw tracepoints 4.17)",
			    u.release);
			return -EOPNOTSUPP;
		}
		if (older(major, minor, TESTED_MAJOR, TESTED_MINOR))
			log_warn(
			    "Linux %s is older than %d.%d, the oldest kernel barrierd is tested "
			    "on",
			    u.release, TESTED_MAJOR, TESTED_MINOR);
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(
		    err, errlen,
		    "this kernel (%s) cannot serve barrierd: no kernel BTF "
		    "(/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF), which the CO-RE programs "
		    "need",
		    major ? u.release : "unknown");
		return -EOPNOTSUPP;
	}
	return 0;
}
