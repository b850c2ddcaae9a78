// SPDX-License-Identifier: MIT
#include "kernel_check.h"
#include "log.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>

/* The oldest kernel the project's tests run on (tests/vm: Debian 12's 6.1). */
#define TESTED_MAJOR 6
#define TESTED_MINOR 1

int kernel_check(char *err, size_t errlen)
{
	struct utsname u;
	int major = 0, minor = 0, ret;

	if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	    (major < TESTED_MAJOR || (major == TESTED_MAJOR && minor < TESTED_MINOR)))
		log_warn("Linux %s is older than %d.%d, the oldest kernel barrierd is tested on",
			 u.release, TESTED_MAJOR, TESTED_MINOR);
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(err, errlen,
			 "this kernel (%s) cannot serve barrierd: no kernel BTF "
			 "(/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF, Linux 5.4 or later), "
			 "which the CO-RE programs need",
			 major ? u.release : "unknown");
		return -EOPNOTSUPP;
	}
	/* 1 supported, 0 not; an error (no privilege, say) is left to the load to report. */
	ret = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL);
	if (ret == 0) {
		snprintf(err, errlen,
			 "this kernel (%s) cannot serve barrierd: no BPF ring buffer "
			 "(BPF_MAP_TYPE_RINGBUF, Linux 5.8 or later)",
			 major ? u.release : "unknown");
		return -EOPNOTSUPP;
	}
	/*
	 * tp_btf programs (Linux 5.5) come with BTF and the ring buffer; libbpf cannot probe
	 * their type without a target, so they are left to the load.
	 */
	ret = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL);
	if (ret == 0) {
		snprintf(err, errlen,
			 "this kernel (%s) cannot serve barrierd: no raw tracepoint programs "
			 "(BPF_PROG_TYPE_RAW_TRACEPOINT, Linux 4.17 or later)",
			 major ? u.release : "unknown");
		return -EOPNOTSUPP;
	}
	return 0;
}
