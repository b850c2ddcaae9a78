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

#endif
