/* SPDX-License-Identifier: MIT */
/*
 * The bpf() system call and what it says of an object (lib/bpf_obj.c).
 */
#ifndef BARRIERD_LIB_BPF_OBJ_H
#define BARRIERD_LIB_BPF_OBJ_H

#include <stdint.h>

/*
 * The first words of a BPF object's BPF_OBJ_GET_INFO_BY_FD record (lib/bpf_obj.c): a map's
 * type, id, key and value sizes; a link's type, id and program id.
 */
#define BD_OBJ_HEAD_WORDS 4

/* bpf(cmd, a): its result, or -errno (lib/bpf_obj.c). */
union bpf_attr;
int bd_sys_bpf(int cmd, union bpf_attr *a);
/* BPF_OBJ_GET_INFO_BY_FD of fd into buf (len bytes, zeroed by the caller): 0 or -errno. */
int bd_bpf_obj_info(int fd, void *buf, uint32_t len);
/*
 * The head of the kernel's record of the BPF object behind fd (type and id first, for a map
 * and for a link): 0, or -errno when fd holds no BPF object.  No descriptor is opened for it,
 * so a release closes its set's descriptors at RLIMIT_NOFILE too, or with no /proc.
 */
int bd_obj_head(int fd, uint32_t head[BD_OBJ_HEAD_WORDS]);

#endif
