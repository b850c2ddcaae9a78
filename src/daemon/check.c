// SPDX-License-Identifier: MIT
/*
 * barrierd --check.  Each check asks what the start asks, in the start's terms (the same
 * kernel, time-namespace, tracepoint and trust functions), but stops before anything that
 * changes the machine: tracefs is looked for, never mounted; the state file and its lock are
 * looked at with lstat(2) and /proc/locks, never opened; directories are never created.
 *
 * Privileges are judged twice.  The capability sets say what the process holds, but not
 * whether the kernel honours them for bpf(): capabilities inside a user namespace do not
 * count, and lockdown, an LSM or a seccomp filter can refuse.  So the check also loads a
 * two-instruction raw-tracepoint program (the type the evidence programs are; the kernel
 * asks CAP_BPF and CAP_PERFMON for it) and closes it at once: nothing is attached, no map
 * is made, and the kernel frees it with the descriptor.  That is the kernel's own verdict on
 * the load the start makes.
 */
#include "check.h"
#include "kernel_check.h"
#include "lfence_check.h"
#include "path_trust.h"
#include "state_file.h"
#include "timens_check.h"
#include "tracepoints.h"

#include <barrierd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* The priority of the nudge threads (daemon.c's NUDGE_PRIORITY): what RLIMIT_RTPRIO must allow. */
#define CHECK_RT_PRIORITY 99

enum verdict { V_OK, V_WARN, V_FAIL };

struct checker {
	FILE *out;
	unsigned total, failed, warned;
	struct btf *vmlinux; /* NULL when the BTF check failed */
	char tfs[128];	     /* tracefs, "" when none is mounted */
};

static void report(struct checker *c, enum verdict v, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report(struct checker *c, enum verdict v, const char *what, const char *fmt, ...)
{
	static const char *const words[] = {"ok", "warn", "FAIL"};
	va_list ap;

	c->total++;
	c->failed += v == V_FAIL;
	c->warned += v == V_WARN;
	fprintf(c->out, "%-4s %s: ", words[v], what);
	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
	fputc('\n', c->out);
}

/* libbpf's own messages would interleave with the check's lines: the lines say it all. */
static int libbpf_silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static void check_options(struct checker *c, const struct barrierd_options *o)
{
	report(c, V_OK, "options",
	       "state file %s, %zu tracepoint%s, heartbeat %llu ms, nudges %s, slot socket %s",
	       o->state_path, o->n_tps, o->n_tps == 1 ? "" : "s",
	       (unsigned long long)(o->heartbeat_period_ns / 1000000ULL),
	       o->nudge_after_ns ? "on" : "off", o->slot_socket_mode < 0 ? "off" : "on");
}

static void check_kernel(struct checker *c)
{
	char err[256] = "";

	struct utsname u;

	if (kernel_check(err, sizeof(err)))
		report(c, V_FAIL, "kernel", "%s", err);
	else
		report(c, V_OK, "kernel", "Linux %s (5.8 or later is needed)",
		       uname(&u) ? "?" : u.release);
	err[0] = 0;
	if (timens_check(err, sizeof(err)))
		report(c, V_FAIL, "time namespace", "%s", err);
	else
		report(c, V_OK, "time namespace",
		       "the host's CLOCK_MONOTONIC, as the programs see it");
	{
		struct lfence_cpuid cpu;
		char why[320];

		lfence_cpuid_read(&cpu);
		if (lfence_doubt(&cpu, why, sizeof(why)))
			report(c, V_WARN, "lfence", "%s", why);
		else
			report(c, V_OK, "lfence", "%s", why);
	}
}

static void check_btf(struct checker *c)
{
	c->vmlinux = btf__load_vmlinux_btf();
	if (!c->vmlinux) {
		report(c, V_FAIL, "btf",
		       "cannot parse the kernel's BTF (/sys/kernel/btf/vmlinux): %s; the CO-RE "
		       "programs need it",
		       strerror(errno));
		return;
	}
	report(c, V_OK, "btf", "/sys/kernel/btf/vmlinux parsed, %u types",
	       btf__type_cnt(c->vmlinux));
}

/*
 * Does the kernel's BTF describe the raw tracepoint NAME (the typedef btf_trace_NAME that every
 * tracepoint gets)?  vmlinux first, then each module's BTF.
 */
static bool btf_has_tracepoint(const struct checker *c, const char *name)
{
	char type[96];
	bool found = false;
	DIR *d;
	struct dirent *e;

	snprintf(type, sizeof(type), "btf_trace_%s", name);
	if (btf__find_by_name_kind(c->vmlinux, type, BTF_KIND_TYPEDEF) > 0)
		return true;
	d = opendir("/sys/kernel/btf");
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		struct btf *m;
		char path[PATH_MAX];

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "vmlinux"))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", e->d_name);
		m = btf__parse_split(path, c->vmlinux);
		if (!m)
			continue;
		found = btf__find_by_name_kind(m, type, BTF_KIND_TYPEDEF) > 0;
		btf__free(m);
	}
	closedir(d);
	return found;
}

static void check_tracefs(struct checker *c)
{
	if (tracefs_find_mounted(c->tfs, sizeof(c->tfs)) == 0) {
		report(c, V_OK, "tracefs", "%s", c->tfs);
		return;
	}
	c->tfs[0] = 0;
	report(c, V_WARN, "tracefs",
	       "not found (not mounted, or not readable by uid %u): a daemon with CAP_SYS_ADMIN "
	       "mounts it on %s (the unit has systemd mount it); without it only the default "
	       "tracepoints are accepted, and they are checked in BTF only",
	       (unsigned)geteuid(), TRACEFS_DIR);
}

/* One tracepoint: its name (resolved from an id, refused if NMI), in tracefs and in BTF. */
static void check_one_tracepoint(struct checker *c, const struct tp_spec *spec, const char *role,
				 struct resolved_tp *seen, size_t *n_seen)
{
	struct resolved_tp r;
	char err[512] = "", what[192];

	if (tracepoints_resolve_at(c->tfs[0] ? c->tfs : NULL, spec, 1, &r, err, sizeof(err))) {
		if (spec->id >= 0)
			snprintf(what, sizeof(what), "tracepoint id %ld", spec->id);
		else
			snprintf(what, sizeof(what), "tracepoint %s", spec->name);
		report(c, V_FAIL, what, "%s", err);
		return;
	}
	for (size_t i = 0; i < *n_seen; i++)
		if (!strcmp(seen[i].category, r.category) && !strcmp(seen[i].name, r.name))
			return; /* listed twice: attached once */
	seen[(*n_seen)++] = r;
	snprintf(what, sizeof(what), "tracepoint %s/%s", r.category, r.name);
	if (!c->vmlinux)
		report(c, V_FAIL, what, "no kernel BTF to find btf_trace_%s in", r.name);
	else if (!btf_has_tracepoint(c, r.name))
		report(c, V_FAIL, what,
		       "the kernel's BTF has no btf_trace_%s: no raw tracepoint of that name to "
		       "attach to",
		       r.name);
	else if (c->tfs[0])
		report(c, V_OK, what, "in %s/events, and btf_trace_%s in BTF (%s)", c->tfs, r.name,
		       role);
	else
		report(c, V_OK, what, "btf_trace_%s in BTF, tracefs not looked at (%s)", r.name,
		       role);
}

static void check_tracepoints(struct checker *c, const struct barrierd_options *o)
{
	struct resolved_tp seen[BARRIERD_MAX_TRACEPOINTS + 1];
	struct tp_spec sw = {.name = "sched/sched_switch", .id = -1};
	size_t n_seen = 0;

	for (size_t i = 0; i < o->n_tps; i++)
		check_one_tracepoint(c, &o->tps[i], "evidence", seen, &n_seen);
	/* Attached whatever the list says: it tracks idle CPUs (DESIGN rule 2). */
	check_one_tracepoint(c, &sw, "idle tracking", seen, &n_seen);
}

/* The effective capability set, as two 32-bit words. */
static int effective_caps(uint64_t *eff)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return -errno;
	*eff = (uint64_t)d[0].effective | (uint64_t)d[1].effective << 32;
	return 0;
}

static bool has_cap(uint64_t eff, int cap)
{
	return (eff >> cap) & 1;
}

static void check_privileges(struct checker *c)
{
	static const struct bpf_insn prog[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	uint64_t eff = 0;
	struct rlimit rl;
	int fd;

	if (effective_caps(&eff))
		report(c, V_FAIL, "privileges", "cannot read the capability sets: %s",
		       strerror(errno));
	else if (has_cap(eff, CAP_BPF) && has_cap(eff, CAP_PERFMON))
		report(c, V_OK, "privileges", "CAP_BPF and CAP_PERFMON (uid %u)",
		       (unsigned)geteuid());
	else if (has_cap(eff, CAP_SYS_ADMIN))
		report(c, V_OK, "privileges", "CAP_SYS_ADMIN (uid %u)", (unsigned)geteuid());
	else
		report(c, V_FAIL, "privileges",
		       "uid %u holds neither CAP_BPF and CAP_PERFMON nor CAP_SYS_ADMIN: the BPF "
		       "programs cannot be loaded (run as root, or grant CAP_BPF and CAP_PERFMON)",
		       (unsigned)geteuid());

	fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "barrierd_check", "GPL", prog,
			   sizeof(prog) / sizeof(prog[0]), NULL);
	if (fd >= 0) {
		close(fd);
		report(c, V_OK, "bpf load",
		       "the kernel loads a raw-tracepoint program for us (loaded and freed, never "
		       "attached)");
	} else {
		int e = -fd;

		report(c, V_FAIL, "bpf load",
		       "the kernel refuses to load a raw-tracepoint program: %s%s", strerror(e),
		       e == EPERM ? " (no CAP_BPF and CAP_PERFMON that count here: a user "
				    "namespace, lockdown, an LSM or a seccomp filter)"
				  : "");
	}

	/* Not a failure: the daemon runs without them, only less well (its warnings say how). */
	if (has_cap(eff, CAP_SYS_NICE) ||
	    (getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur >= CHECK_RT_PRIORITY))
		report(c, V_OK, "realtime",
		       "SCHED_FIFO allowed (doorbell, main and nudge threads)");
	else
		report(c, V_WARN, "realtime",
		       "no CAP_SYS_NICE and RLIMIT_RTPRIO below %d: the daemon's threads would run "
		       "SCHED_OTHER and nudges would be off",
		       CHECK_RT_PRIORITY);
}

/*
 * Who holds a lock on the inode (dev, ino), from /proc/locks: its pid (-1 for an OFD lock,
 * which names none), or 0 when nobody does.  Read-only: no lock is tried.
 */
static long lock_holder(dev_t dev, ino_t ino)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256];
	long who = 0;

	if (!f)
		return 0;
	while (!who && fgets(line, sizeof(line), f)) {
		char kind[16];
		long pid;
		unsigned maj, min;
		unsigned long long i;

		/* "N: KIND ADVISORY WRITE PID MAJ:MIN:INO START END"; waiters carry "->". */
		if (strstr(line, "->") || sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", kind,
						 &pid, &maj, &min, &i) != 5)
			continue;
		if (maj == major(dev) && min == minor(dev) && i == (unsigned long long)ino)
			who = pid > 0 ? pid : -1;
	}
	fclose(f);
	return who;
}

/* "another process holds the lock on P" with its pid and name when /proc tells them. */
static void report_held(struct checker *c, const char *path, long pid)
{
	char comm_path[64], comm[64] = "";
	FILE *f;

	if (pid > 0) {
		snprintf(comm_path, sizeof(comm_path), "/proc/%ld/comm", pid);
		f = fopen(comm_path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		report(c, V_FAIL, "lock",
		       "%s is held by pid %ld (%s): another barrierd serves this state file", path,
		       pid, comm[0] ? comm : "?");
	} else {
		report(c, V_FAIL, "lock", "%s is held: another barrierd serves this state file",
		       path);
	}
}

/* The state file's directory: the start creates it if missing, then trusts it. */
static void check_state_dir(struct checker *c, const char *dir)
{
	char err[512] = "", parent[PATH_MAX], *slash;
	struct stat st;
	int dfd;

	if (lstat(dir, &st) && errno == ENOENT) {
		snprintf(parent, sizeof(parent), "%s", dir);
		slash = strrchr(parent, '/');
		if (slash == parent)
			slash[1] = 0;
		else if (slash)
			*slash = 0;
		else
			snprintf(parent, sizeof(parent), ".");
		dfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			report(c, V_FAIL, "state directory",
			       "%s does not exist, nor does its parent %s (the start creates one "
			       "level only)",
			       dir, parent);
		else if (path_trust_dir_chain(dfd, parent, err, sizeof(err)))
			report(c, V_FAIL, "state directory", "%s", err);
		else if (access(parent, W_OK | X_OK))
			report(c, V_FAIL, "state directory",
			       "%s does not exist, and %s is not writable by uid %u to create it",
			       dir, parent, (unsigned)geteuid());
		else
			report(c, V_OK, "state directory",
			       "%s does not exist: the start creates it in %s (trusted)", dir,
			       parent);
		if (dfd >= 0)
			close(dfd);
		return;
	}
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		report(c, V_FAIL, "state directory", "cannot open %s: %s", dir, strerror(errno));
		return;
	}
	if (path_trust_dir_chain(dfd, dir, err, sizeof(err)))
		report(c, V_FAIL, "state directory", "%s", err);
	else if (access(dir, W_OK | X_OK))
		report(c, V_FAIL, "state directory", "%s is not writable by uid %u: %s", dir,
		       (unsigned)geteuid(), strerror(errno));
	else
		report(c, V_OK, "state directory", "%s: trusted and writable", dir);
	close(dfd);
}

/* The state file, by lstat only: what the start would do with it. */
static void check_state_file(struct checker *c, const char *path, struct stat *st, bool *exists)
{
	*exists = lstat(path, st) == 0;
	if (!*exists) {
		if (errno == ENOENT)
			report(c, V_OK, "state file", "%s does not exist: the start creates it",
			       path);
		else
			report(c, V_FAIL, "state file", "cannot look at %s: %s", path,
			       strerror(errno));
		return;
	}
	if (S_ISLNK(st->st_mode))
		report(c, V_FAIL, "state file", "%s is a symbolic link: refused", path);
	else if (!S_ISREG(st->st_mode))
		report(c, V_FAIL, "state file", "%s is not a regular file: refused", path);
	else if (st->st_uid != 0 && st->st_uid != geteuid())
		report(c, V_FAIL, "state file", "%s is owned by uid %u: refused", path,
		       (unsigned)st->st_uid);
	else if (st->st_nlink != 1)
		report(c, V_FAIL, "state file", "%s has %lu names (hard links): refused", path,
		       (unsigned long)st->st_nlink);
	else
		report(c, V_OK, "state file",
		       "%s exists: the start adopts it (or resets it, if another boot or writer "
		       "left it)",
		       path);
}

/* PATH.lock and the per-inode lock: held by another daemon? */
static void check_locks(struct checker *c, const char *path, const char *dir,
			const struct stat *file_st, bool file_exists)
{
	char lock_path[PATH_MAX + 8], inode_lock[PATH_MAX + NAME_MAX + 2], name[NAME_MAX + 1];
	struct stat st;
	long who;

	snprintf(lock_path, sizeof(lock_path), "%s.lock", path);
	if (lstat(lock_path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			report(c, V_FAIL, "lock", "%s is not a regular file: refused", lock_path);
			return;
		}
		who = lock_holder(st.st_dev, st.st_ino);
		if (who) {
			report_held(c, lock_path, who);
			return;
		}
	}
	if (file_exists) {
		/* Root's daemons keep it in BARRIERD_LOCK_DIR, others beside the state file. */
		state_file_inode_lock_name(name, sizeof(name), (unsigned long long)file_st->st_dev,
					   (unsigned long long)file_st->st_ino);
		snprintf(inode_lock, sizeof(inode_lock), "%s/%s",
			 geteuid() == 0 ? BARRIERD_LOCK_DIR : dir, name);
		if (lstat(inode_lock, &st) == 0 && (who = lock_holder(st.st_dev, st.st_ino))) {
			report_held(c, inode_lock, who);
			return;
		}
	}
	if (geteuid() == 0 && lstat(BARRIERD_LOCK_DIR, &st) == 0 &&
	    (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		report(c, V_FAIL, "lock",
		       "%s must be a directory of root's that only root can write (uid %u, mode "
		       "%04o)",
		       BARRIERD_LOCK_DIR, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return;
	}
	report(c, V_OK, "lock", "%s and the per-inode lock are free", lock_path);
}

static void check_state(struct checker *c, const char *path)
{
	char dir[PATH_MAX], *slash;
	struct stat st;
	bool exists;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		slash[1] = 0;
	else
		*slash = 0;
	check_state_dir(c, dir);
	check_state_file(c, path, &st, &exists);
	check_locks(c, path, dir, &st, exists);
}

int check_run(const struct barrierd_options *o, FILE *out)
{
	struct checker c = {.out = out};

	libbpf_set_print(libbpf_silent);
	check_options(&c, o);
	check_kernel(&c);
	check_btf(&c);
	check_tracefs(&c);
	check_tracepoints(&c, o);
	check_privileges(&c);
	check_state(&c, o->state_path);
	btf__free(c.vmlinux);
	if (c.failed)
		fprintf(out, "barrierd --check: %u of %u checks failed: the start would fail\n",
			c.failed, c.total);
	else
		fprintf(out, "barrierd --check: %u checks passed (%u with a warning)\n", c.total,
			c.warned);
	fflush(out);
	return c.failed ? CHECK_EXIT_FAILED : 0;
}
