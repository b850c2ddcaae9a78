// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The anchor (docs/PROTOCOL.md §6.12): a program never attached, whose only purpose is to hold
 * its .rodata.  The daemon writes struct barrierd_anchor there before the load; libbpf freezes
 * .rodata at the load, and programs may only read it (BPF_F_RDONLY_PROG), so its value is
 * what the loader wrote, forever.  A BPF_PROG_TYPE_SYSCALL program takes CAP_BPF to load and
 * cannot be attached anywhere: handing its descriptor to anyone lets them run it
 * (BPF_PROG_TEST_RUN), which reads one byte.  A client finds the .rodata as the program's first
 * map id (maps bound later with BPF_PROG_BIND_MAP come after it), carrying the program's BTF:
 * only a privileged loader can have made that pair.  Hence this program's one map.
 */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* struct barrierd_anchor (include/barrierd.h), as bytes: the daemon copies it in. */
const volatile __u8 anchor[96] = {};

SEC("syscall")
int barrierd_anchor(void *ctx)
{
	/* A load of .rodata: what makes it one of this program's maps. */
	return anchor[0];
}
