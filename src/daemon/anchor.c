// SPDX-License-Identifier: MIT
#include "anchor.h"
#include "probes.h"

#include "barrierd.skel.h"
#include "barrierd_anchor.skel.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

/* The kernel's id of a BPF object (a map's or a program's) behind fd, or 0. */
static uint64_t map_id(int fd)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

static uint64_t prog_id(int fd)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

int anchor_load(struct anchor *a, const struct probes *p, int file_fd, uint64_t generation)
{
	struct barrierd_anchor rec = {.magic = BARRIERD_ANCHOR_MAGIC, .generation = generation};
	struct {
		struct file_handle fh;
		unsigned char bytes[BARRIERD_ANCHOR_HANDLE_MAX];
	} h;
	struct stat st;
	int mnt, ret;

	_Static_assert(sizeof(rec) == sizeof(((struct barrierd_anchor_bpf *)0)->rodata->anchor),
		       "the program's copy of struct barrierd_anchor");
	memset(a, 0, sizeof(*a));
	a->fds[0] = a->fds[1] = -1;
	rec.slots_map_id = map_id(bpf_map__fd(p->skel->maps.slots));
	rec.switch_prog_id = prog_id(bpf_program__fd(p->skel->progs.barrierd_switch));
	if (!rec.slots_map_id || !rec.switch_prog_id)
		return -EINVAL;
	if (fstat(file_fd, &st))
		return -errno;
	rec.file_dev = (uint64_t)st.st_dev;
	rec.file_ino = (uint64_t)st.st_ino;
	/*
	 * The handle holds the inode's generation on tmpfs and the usual file systems: a file
	 * that later reuses this inode number is told apart (a relayed old anchor next to it).
	 */
	h.fh.handle_bytes = BARRIERD_ANCHOR_HANDLE_MAX;
	if (name_to_handle_at(file_fd, "", &h.fh, &mnt, AT_EMPTY_PATH) == 0) {
		rec.handle_type = h.fh.handle_type;
		rec.handle_bytes = h.fh.handle_bytes;
		memcpy(rec.handle, h.fh.f_handle, h.fh.handle_bytes);
	} else if (errno == EOPNOTSUPP || errno == EOVERFLOW) {
		/* A file system without handles (overlayfs without nfs_export): dev and ino. */
		rec.handle_type = -1;
	} else {
		return -errno;
	}

	a->skel = barrierd_anchor_bpf__open();
	if (!a->skel)
		return -errno ? -errno : -ENOMEM;
	memcpy((void *)a->skel->rodata->anchor, &rec, sizeof(rec));
	/* The load freezes .rodata (libbpf): from here on the record is fixed. */
	ret = barrierd_anchor_bpf__load(a->skel);
	if (ret) {
		anchor_destroy(a);
		return ret;
	}
	a->fds[0] = bpf_program__fd(a->skel->progs.barrierd_anchor);
	a->fds[1] = bpf_map__fd(a->skel->maps.rodata);
	return 0;
}

void anchor_destroy(struct anchor *a)
{
	barrierd_anchor_bpf__destroy(a->skel);
	a->skel = NULL;
	a->fds[0] = a->fds[1] = -1;
}
