// SPDX-License-Identifier: MIT
/*
 * Reading the daemon's anchor (docs/PROTOCOL.md §6.12): the record in the frozen .rodata of a
 * program that only a privileged loader can load.  What is checked here is what the kernel
 * says of the two descriptors, never what a peer says: the program is a
 * BPF_PROG_TYPE_SYSCALL program (CAP_BPF to load), the map is an array of one value that
 * programs may only read, and it is the program's first map, with the program's BTF.  Anyone
 * holding the program's descriptor can add maps of theirs to it (BPF_PROG_BIND_MAP, no
 * capability needed), but the kernel appends those after the maps of the load: the first
 * (the anchor program uses one, its .rodata) is the loader's.  And the loader's BTF object
 * is on both: loading BTF takes CAP_BPF, so no unprivileged map carries it.  The caller
 * checks that the map is frozen (no system call writes it either) and what the record names.
 */
#include "bpf_obj.h"
#include "trust.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <string.h>
#include <unistd.h>

/* The numbers lib/slots_fetch.c reads in fdinfo, where the kernel prints them as numbers. */
_Static_assert(BPF_PROG_TYPE_SYSCALL == 31, "fdinfo prog_type of the anchor");
_Static_assert(BPF_MAP_TYPE_ARRAY == 2, "fdinfo map_type of the anchor's record");

int bd_anchor_read(int prog_fd, int map_fd, struct barrierd_anchor *out)
{
	uint32_t first = 0, key = 0;
	struct bpf_prog_info pi;
	struct bpf_map_info mi;
	union bpf_attr a;
	int ret;

	/*
	 * Room for one id: the kernel fills the first and reports how many there are.  Maps
	 * bound after the load (any number of them) are neither read nor refused.
	 */
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = 1;
	pi.map_ids = (uint64_t)(uintptr_t)&first;
	ret = bd_bpf_obj_info(prog_fd, &pi, sizeof(pi));
	if (ret)
		return ret;
	/* Any other type may be loadable without CAP_BPF (socket filters, where allowed). */
	if (pi.type != BPF_PROG_TYPE_SYSCALL || pi.nr_map_ids == 0)
		return -EPROTO;
	memset(&mi, 0, sizeof(mi));
	ret = bd_bpf_obj_info(map_fd, &mi, sizeof(mi));
	if (ret)
		return ret;
	/*
	 * The map carries BTF (no unprivileged map can), the program's where the kernel shows it:
	 * kernels before 6.15 show a program's btf_id only to CAP_BPF, and 0 to everyone else.
	 * The first-map check above is what binds the record to the loader; this one adds that
	 * the record is typed by the loader's BTF.
	 */
	if (mi.id == 0 || mi.id != first || mi.btf_id == 0 ||
	    (pi.btf_id != 0 && mi.btf_id != pi.btf_id) || mi.type != BPF_MAP_TYPE_ARRAY ||
	    mi.key_size != 4 || mi.value_size != sizeof(*out) || mi.max_entries != 1 ||
	    !(mi.map_flags & BPF_F_RDONLY_PROG))
		return -EPROTO;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)map_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)out;
	ret = bd_sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
	if (ret)
		return ret;
	if (out->magic != BARRIERD_ANCHOR_MAGIC || out->handle_bytes > BARRIERD_ANCHOR_HANDLE_MAX)
		return -EPROTO;
	return 0;
}

int bd_file_handle_is(int fd, const struct barrierd_anchor *a)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[BARRIERD_ANCHOR_HANDLE_MAX];
	} h;
	int mnt;

	/* A daemon whose file system has no handles names dev and ino only (fetch checks those). */
	if (a->handle_type == -1 && a->handle_bytes == 0)
		return 1;
	h.fh.handle_bytes = BARRIERD_ANCHOR_HANDLE_MAX;
	if (name_to_handle_at(fd, "", &h.fh, &mnt, AT_EMPTY_PATH))
		return -errno;
	return h.fh.handle_type == a->handle_type && h.fh.handle_bytes == a->handle_bytes &&
	       memcmp(h.fh.f_handle, a->handle, a->handle_bytes) == 0;
}
