// SPDX-License-Identifier: MIT
/*
 * vm_init: PID 1 of a test guest (tests/vm/README.md).  Linked statically and packed alone
 * with the kernel's modules into the guest's initramfs by vm_run.sh.
 *
 * It loads the modules listed in /modules/order (vm_run.sh resolved their dependencies), mounts
 * the host's root (9p tag "bdroot", read-only) under a tmpfs overlay, so the build tree sits at
 * its host path and is writable; mounts proc, sys, tracefs, a fresh /run and /dev/shm;
 * mounts the run's results folder (9p tag "bdout", read-write) at its host path; moves it onto "/"
 * and runs the guest script.  Its exit status goes to the results folder as "init-status",
 * then the guest powers off.  Any failure on the way is printed and the guest powers off
 * without that file: the host counts a missing status as a failure.
 *
 * The kernel hands us bdvm_script and bdvm_out (unknown command-line parameters with '='
 * become init's environment).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROOT "/newroot"

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;

	fputs("vm_init: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static __attribute__((noreturn)) void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	/* Not reached; were it, PID 1 exiting panics, and panic=-1 -no-reboot ends QEMU. */
	_exit(1);
}

static __attribute__((noreturn)) void die(const char *what)
{
	say("%s: %s; powering off without a status", what, strerror(errno));
	power_off();
}

/* mkdir -p; 0 or -errno. */
static int mkdirs(const char *path)
{
	char buf[4096];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags,
		       const char *opts)
{
	int ret = mkdirs(dst);

	if (ret) {
		errno = -ret;
		die(dst);
	}
	if (mount(src, dst, type, flags, opts)) {
		say("mount -t %s %s %s (%s) failed", type, src, dst, opts ? opts : "");
		die("mount");
	}
}

/* Every module in /modules/order, in that order (dependencies first). */
static void load_modules(void)
{
	char name[256], path[300];
	FILE *f = fopen("/modules/order", "r");

	if (!f)
		die("/modules/order");
	while (fgets(name, sizeof(name), f)) {
		int fd;

		name[strcspn(name, "\n")] = 0;
		if (!name[0])
			continue;
		snprintf(path, sizeof(path), "/modules/%s", name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die(path);
		if (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST)
			die(path);
		close(fd);
	}
	fclose(f);
}

int main(void)
{
	const char *script = getenv("bdvm_script"), *out = getenv("bdvm_out");
	char path[4096];
	int fd, status;
	pid_t child;

	/* The kernel may start us without a console on 0-2 (no /dev/console in the archive). */
	mkdirs("/dev");
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	fd = open("/dev/console", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (!script || !out || out[0] != '/') {
		errno = EINVAL;
		die("bdvm_script and bdvm_out (absolute) must be on the kernel command line");
	}
	must_mount("proc", "/proc", "proc", 0, NULL);
	must_mount("sysfs", "/sys", "sysfs", 0, NULL);
	load_modules();

	/* The host's root, read-only; a tmpfs on top takes every write the tests make. */
	must_mount("bdroot", "/lower", "9p", MS_RDONLY,
		   "trans=virtio,version=9p2000.L,msize=512000,cache=loose");
	must_mount("tmpfs", "/rw", "tmpfs", 0, "mode=0755");
	if (mkdirs("/rw/upper") || mkdirs("/rw/work"))
		die("/rw");
	must_mount("overlay", ROOT, "overlay", 0,
		   "lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work");

	must_mount("proc", ROOT "/proc", "proc", 0, NULL);
	must_mount("sysfs", ROOT "/sys", "sysfs", 0, NULL);
	must_mount("devtmpfs", ROOT "/dev", "devtmpfs", 0, NULL);
	must_mount("tmpfs", ROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	must_mount("tracefs", ROOT "/sys/kernel/tracing", "tracefs", 0, NULL);
	must_mount("debugfs", ROOT "/sys/kernel/debug", "debugfs", 0, NULL);
	must_mount("bpf", ROOT "/sys/fs/bpf", "bpf", 0, "mode=0700");
	must_mount("cgroup2", ROOT "/sys/fs/cgroup", "cgroup2", 0, NULL);
	/* Not the host's: a state file must not outlive its boot, nor land on the host. */
	must_mount("tmpfs", ROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	/*
	 * Not /tmp: a source and build tree may live there (a CI clone), and a fresh tmpfs would
	 * hide it.  The overlay takes the tests' writes there as everywhere else.
	 */
	snprintf(path, sizeof(path), ROOT "%s", out);
	/* No cache: the host reads these files as soon as we power off. */
	must_mount("bdout", path, "9p", 0, "trans=virtio,version=9p2000.L,msize=512000,cache=none");

	/*
	 * The new root moved onto "/" first, as switch_root does: a process merely chrooted
	 * cannot create user namespaces (EPERM), and test_userns needs them.  Its mounts move
	 * with it.
	 */
	if (chdir(ROOT) || mount(ROOT, "/", NULL, MS_MOVE, NULL) || chroot(".") || chdir("/"))
		die("switching to the new root");
	setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
	setenv("HOME", "/root", 1);

	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		setsid();
		execl("/bin/bash", "bash", script, out, (char *)NULL);
		say("exec /bin/bash %s: %s", script, strerror(errno));
		_exit(127);
	}
	/* PID 1 reaps every orphan; the script's own status is the one that counts. */
	for (;;) {
		int st;
		pid_t p = wait(&st);

		if (p == child) {
			status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
		if (p < 0 && errno == ECHILD) {
			status = 125;
			break;
		}
	}
	snprintf(path, sizeof(path), "%s/init-status", out);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		dprintf(fd, "%d\n", status);
		fsync(fd);
		close(fd);
	} else {
		say("cannot write %s: %s", path, strerror(errno));
	}
	say("guest script exited with status %d; powering off", status);
	power_off();
}
