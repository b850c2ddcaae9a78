// SPDX-License-Identifier: MIT
/*
 * audit_jit_check DAEMON: start DAEMON, read the machine code the kernel JITed for its loaded
 * programs, and check that the evidence stores are locked exchanges: `xchg` to slot.stamp in
 * both evidence programs (rule 1) and to slot.idle in the sched_switch program (rule 2).
 *
 * Why the JITed code: a plain store of the stamp leaves a window of nanoseconds (the store
 * buffer) that no black-box test can see, and tests/bpf/test_bpf_logic.c checks the verifier's
 * instructions, not what runs.  The programs are found through the daemon's own descriptors
 * (/proc/PID/fdinfo), so other daemons on the machine are left alone.  This bpftool has no
 * disassembler (`bpftool prog dump jited` needs libbfd), so the image is read with
 * BPF_OBJ_GET_INFO_BY_FD, as bpftool does, and disassembled with objdump.
 *
 * Exit status: 0 every exchange is there, 1 one is missing (a finding), 2 the check could not
 * run, 77 skipped (no root or BTF).
 */
#include <bpf/bpf.h>
#include <dirent.h>

static const char *jit_daemon;
#define BARRIERD_BIN jit_daemon
#include "harness.h"
#include <barrierd_slot.h>

#define MAX_PROGS 32

struct prog {
	unsigned id;
	char name[BPF_OBJ_NAME_LEN];
	bool xchg_stamp, xchg_idle;
	unsigned n_xchg;
};

static struct harness H;

/* The ids of the programs the daemon holds descriptors to. */
static int daemon_progs(pid_t pid, struct prog *p, int max)
{
	char path[64], line[256];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((d = readdir(dir)) && n < max) {
		char file[320];
		FILE *f;

		snprintf(file, sizeof(file), "%s/%s", path, d->d_name);
		f = fopen(file, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned id;
			bool dup = false;

			if (sscanf(line, "prog_id: %u", &id) != 1)
				continue;
			for (int i = 0; i < n; i++)
				dup |= p[i].id == id;
			if (!dup)
				p[n++].id = id;
		}
		fclose(f);
	}
	closedir(dir);
	return n;
}

/* The displacement of the memory operand of an objdump line ("xchg %rsi,0x10(%rdi)"). */
static long mem_disp(const char *line)
{
	const char *paren = strchr(line, '('), *s = paren;

	if (!paren)
		return -1;
	while (s > line && (strchr("0123456789abcdefx-", s[-1])))
		s--;
	return s == paren ? 0 : strtol(s, NULL, 0);
}

/* Disassemble a program's JITed image and note its exchanges with memory. */
static int inspect(struct prog *p)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	char bin[400], cmd[600], line[512];
	unsigned char *img;
	FILE *f;
	int fd, ret;

	fd = bpf_prog_get_fd_by_id(p->id);
	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	ret = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (ret || !info.jited_prog_len) {
		close(fd);
		return ret ? ret : -ENODATA; /* not JITed: nothing to check, and it would be slow */
	}
	snprintf(p->name, sizeof(p->name), "%s", info.name);
	img = calloc(1, info.jited_prog_len);
	if (!img) {
		close(fd);
		return -ENOMEM;
	}
	{
		__u32 jlen = info.jited_prog_len;

		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		info.jited_prog_len = jlen;
		info.jited_prog_insns = (__u64)(uintptr_t)img;
		ret = bpf_obj_get_info_by_fd(fd, &info, &len);
		close(fd);
		if (ret) {
			free(img);
			return ret;
		}
	}
	snprintf(bin, sizeof(bin), "%s/prog-%u.bin", H.dir, p->id);
	f = fopen(bin, "w");
	if (!f || fwrite(img, 1, info.jited_prog_len, f) != info.jited_prog_len) {
		if (f)
			fclose(f);
		free(img);
		return -EIO;
	}
	fclose(f);
	free(img);
	snprintf(cmd, sizeof(cmd), "objdump -D -b binary -m i386:x86-64 --no-show-raw-insn '%s'",
		 bin);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		long disp;

		if (!strstr(line, "xchg") || !strchr(line, '('))
			continue;
		disp = mem_disp(line);
		p->n_xchg++;
		printf("  %s (id %u): %s", p->name, p->id, line);
		if (disp == (long)offsetof(struct barrierd_slot, stamp))
			p->xchg_stamp = true;
		if (disp == (long)offsetof(struct barrierd_slot, idle))
			p->xchg_idle = true;
	}
	ret = pclose(f);
	return ret == 0 ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	struct prog progs[MAX_PROGS];
	int n, fail = 0, seen_event = 0, seen_switch = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DAEMON\n", argv[0]);
		return 2;
	}
	jit_daemon = argv[1];
	test_require_root();
	h_mkdir(&H);
	if (h_start(&H, -1, NULL)) {
		fprintf(stderr, "the daemon did not start\n");
		h_rmdir(&H);
		return 2;
	}
	memset(progs, 0, sizeof(progs));
	n = daemon_progs(H.pid, progs, MAX_PROGS);
	for (int i = 0; i < n; i++) {
		int ret = inspect(&progs[i]);

		if (ret == -ENODATA)
			continue;
		if (ret) {
			fprintf(stderr, "program %u: cannot read its JITed image: %s\n",
				progs[i].id, strerror(-ret));
			fail = 2;
			continue;
		}
		if (!strcmp(progs[i].name, "barrierd_event")) {
			seen_event = 1;
			if (!progs[i].xchg_stamp) {
				printf(
				    "FAIL barrierd_event: no xchg to slot.stamp (offset %zu): the "
				    "stamp is a plain store (rule 1)\n",
				    offsetof(struct barrierd_slot, stamp));
				fail = fail ? fail : 1;
			}
		}
		if (!strcmp(progs[i].name, "barrierd_switch")) {
			seen_switch = 1;
			if (!progs[i].xchg_stamp) {
				printf("FAIL barrierd_switch: no xchg to slot.stamp (offset %zu) "
				       "(rule 1)\n",
				       offsetof(struct barrierd_slot, stamp));
				fail = fail ? fail : 1;
			}
			if (!progs[i].xchg_idle) {
				printf("FAIL barrierd_switch: no xchg to slot.idle (offset %zu): "
				       "the idle "
				       "state is not exchanged (rule 2)\n",
				       offsetof(struct barrierd_slot, idle));
				fail = fail ? fail : 1;
			}
		}
	}
	h_stop(&H);
	h_rmdir(&H);
	if (!seen_event || !seen_switch) {
		fprintf(stderr, "the daemon's programs were not found (%d descriptors)\n", n);
		return 2;
	}
	if (!fail)
		printf("every evidence store of the running programs is an xchg\n");
	return fail;
}
