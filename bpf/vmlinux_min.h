/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel types the programs need.  UAPI types come from the system's linux headers; the
 * one kernel-internal type is declared by hand instead of a generated vmlinux.h: with
 * preserve_access_index, libbpf relocates each field access against the running kernel's BTF
 * (CO-RE), so only the field names must match, never the layout.
 */
#ifndef BARRIERD_VMLINUX_MIN_H
#define BARRIERD_VMLINUX_MIN_H

#include <linux/types.h>
#include <linux/bpf.h>

typedef _Bool bool;

struct task_struct {
	int pid;
} __attribute__((preserve_access_index));

#endif
