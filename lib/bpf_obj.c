// SPDX-License-Identifier: MIT
/*
 * The bpf() system call as the library uses it: what the kernel says of a BPF object behind a
 * descriptor (lib/anchor.c, lib/slots_fetch.c, lib/direct_sets.c).  BPF_OBJ_GET_INFO_BY_FD needs no
 * descriptor of its own, unlike /proc/self/fdinfo: it answers at RLIMIT_NOFILE and with no /proc
 * mounted.
 */
#include "bpf_obj.h"

#include <errno.h>
#include <linux/bpf.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int bd_sys_bpf(int cmd, union bpf_attr *a)
{
	long r = syscall(SYS_bpf, cmd, a, sizeof(*a));

	return r < 0 ? -errno : (int)r;
}

int bd_bpf_obj_info(int fd, void *buf, uint32_t len)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = len;
	a.info.info = (uint64_t)(uintptr_t)buf;
	return bd_sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
}

int bd_obj_head(int fd, uint32_t head[BD_OBJ_HEAD_WORDS])
{
	memset(head, 0, BD_OBJ_HEAD_WORDS * sizeof(uint32_t));
	return bd_bpf_obj_info(fd, head, BD_OBJ_HEAD_WORDS * sizeof(uint32_t));
}
