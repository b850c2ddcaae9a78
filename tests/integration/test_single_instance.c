// SPDX-License-Identifier: MIT
/*
 * Single instance and start-up on a hostile or full file system, against the real daemon:
 * a lock squatter (any user, holding a read lock on the world-readable state file while the
 * daemon is down) cannot keep it from starting; a second daemon reaching the same inode under
 * another name (a bind mount) is still refused; a lock held by something that is not a
 * barrierd is named; and a full tmpfs gives a clear error, exit 1, and no file a client could
 * fault on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <grp.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "harness.h"

/* Run the daemon to completion (it is expected to fail); returns its wait status. */
static int run_to_exit(const char *const *args)
{
	pid_t pid = h_spawn(&H, -1, args);
	int st = test_reap(pid, 20);

	assert_true(st != -1); /* hang guard */
	return st;
}

/* The whole log (the harness reads it from an offset). */
static int log_has(const char *needle)
{
	return h_log_has_since(&H, 0, needle);
}

static pid_t squatter = -1; /* killed in the teardown if a check failed first */

/*
 * A child, as nobody, that opens the state file read-only and holds an OFD read lock and a
 * shared flock on it until killed.  Returns once both are held.
 */
static pid_t squat(const char *path)
{
	int pfd[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
		int fd;

		close(pfd[0]);
		/* Nothing of the test's output stays open in a child that outlives a failure. */
		fd = open("/dev/null", O_RDWR);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(11);
		if (fcntl(fd, F_OFD_SETLK, &fl))
			_exit(12);
		if (flock(fd, LOCK_SH | LOCK_NB))
			_exit(13);
		c = 1;
		if (write(pfd[1], &c, 1) != 1)
			_exit(14);
		for (;;)
			pause();
	}
	close(pfd[1]);
	squatter = pid;
	assert_int_equal(read(pfd[0], &c, 1), 1); /* the child exited early otherwise */
	close(pfd[0]);
	assert_int_equal(c, 1);
	return pid;
}

static void unsquat(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	squatter = -1;
}

static int squat_teardown(void **state)
{
	if (squatter > 0)
		unsquat(squatter);
	return h_teardown(state);
}

/* The daemon stopped, nobody holds read locks on its file: the next start succeeds. */
static void squatter_cannot_block_start(void **state)
{
	pid_t sq;
	int st;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	st = h_stop(&H);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	sq = squat(H.state);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_false(log_has("already writes"));
	unsquat(sq);
	/* And a squatter that came while it ran does not block the restart either. */
	sq = squat(H.state);
	st = h_stop(&H);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	unsquat(sq);
}

/* A second daemon on a bind mount of the running daemon's file is refused. */
static void bind_mount_second_instance_fails(void **state)
{
	char other[400];
	const char *args[] = {"--state", other, NULL};
	size_t sz = 0;
	const struct barrierd_header *m;
	int st, fd;

	(void)state;
	snprintf(other, sizeof(other), "%s/other", H.dir);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	fd = open(other, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mount(H.state, other, NULL, MS_BIND, NULL), 0);
	st = run_to_exit(args);
	umount2(other, MNT_DETACH);
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 0);
	assert_true(log_has("another barrierd"));
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	assert_int_equal(bd_load(&m->daemon_pid), (uint64_t)H.pid);
	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_RUNNING);
	munmap((void *)m, sz);
}

#define LOCK_DIR "/run/barrierd-locks"

/*
 * Fork and exec the daemon on path (output to the log) in a mount namespace of its own whose
 * LOCK_DIR is a fresh tmpfs: a daemon that cannot see the running daemon's locks, as one in a
 * container with its own /run would be.
 */
static pid_t spawn_unseen(const char *path)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(H.log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("tmpfs", LOCK_DIR, "tmpfs", 0, "mode=0700"))
			_exit(99);
		execl(h_daemon_bin(), h_daemon_bin(), "--state", path, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * A second daemon that takes neither of the running daemon's locks (its own LOCK_DIR, the
 * file reached through a bind mount) finds the file live, refuses, and touches nothing: the
 * first keeps its generation and pid, and stops cleanly (no foreign write seen).
 */
static void unseen_second_instance_refused(void **state)
{
	char other[400], want[600];
	const struct barrierd_header *m;
	uint64_t gen;
	size_t sz = 0;
	int st, fd;

	(void)state;
	snprintf(other, sizeof(other), "%s/other", H.dir);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	gen = bd_load(&m->generation);
	fd = open(other, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mount(H.state, other, NULL, MS_BIND, NULL), 0);
	st = test_reap(spawn_unseen(other), 5);
	umount2(other, MNT_DETACH);
	assert_true(st != -1 && WIFEXITED(st)); /* refused, not serving */
	assert_int_not_equal(WEXITSTATUS(st), 99);
	assert_int_equal(WEXITSTATUS(st), 1);
	snprintf(want, sizeof(want), "another daemon (pid %ld) is publishing into %s", (long)H.pid,
		 other);
	assert_true(log_has(want));
	assert_int_equal(bd_load(&m->generation), gen);
	assert_int_equal(bd_load(&m->daemon_pid), (uint64_t)H.pid);
	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_RUNNING);
	assert_false(bd_load(&m->flags) & BARRIERD_FLAG_STOPPED);
	munmap((void *)m, sz);
	st = h_stop(&H);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * A daemon killed with SIGKILL leaves RUNNING and a heartbeat that stops: the next start
 * waits at most until it is stale (and goes on), and once it is stale does not wait at all.
 */
static void killed_daemon_file_taken_over(void **state)
{
	long mark;
	int st;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	kill(H.pid, SIGKILL);
	st = test_reap(H.pid, 10);
	H.pid = -1;
	assert_true(st != -1 && WIFSIGNALED(st));
	assert_int_equal(h_start(&H, -1, NULL), 0); /* at once: within the liveness bound */
	kill(H.pid, SIGKILL);
	st = test_reap(H.pid, 10);
	H.pid = -1;
	assert_true(st != -1 && WIFSIGNALED(st));
	test_sleep_ms(400); /* past the liveness bound: 3 periods of 100 ms */
	mark = h_log_mark(&H);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_false(h_log_has_since(&H, mark, "watching it"));
}

/* A root-owned lock directory at 0755 (RuntimeDirectoryMode=0755 makes it so): made 0700. */
static void lock_dir_made_private(void **state)
{
	struct stat st;

	(void)state;
	mkdir(LOCK_DIR, 0700);
	assert_int_equal(chmod(LOCK_DIR, 0755), 0);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(stat(LOCK_DIR, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0700);
}

/* Has pid an open descriptor on path? */
static int holds_open(pid_t pid, const char *path)
{
	char dir[64], link[600], target[600];
	struct dirent *e;
	int found = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	d = opendir(dir);
	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		ssize_t n;

		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			found = strcmp(target, path) == 0;
		}
	}
	closedir(d);
	return found;
}

/*
 * The per-inode lock held for a while (as by another start's stale-lock collection that was
 * preempted while holding it): a start keeps trying for longer than that, without blocking.
 * Released 50 ms after the daemon opened the lock file; it used to give up after 6 ms.
 */
static void briefly_held_lock_waited_for(void **state)
{
	const char *args[] = {"--state", H.state, NULL};
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char path[600];
	struct stat st;
	int fd, status;

	(void)state;
	fd = open(H.state, O_RDWR | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	mkdir(LOCK_DIR, 0700);
	snprintf(path, sizeof(path), LOCK_DIR "/dev-%u:%u-ino-%llu.lock", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
	H.pid = h_spawn(&H, -1, args);
	assert_true(H.pid > 0);
	/* Until the daemon has the lock file open (it is retrying), or has exited. */
	for (int i = 0; i < 5000 && !holds_open(H.pid, path); i++) {
		if (waitpid(H.pid, &status, WNOHANG) == H.pid) {
			H.pid = -1;
			break;
		}
		test_sleep_ms(1);
	}
	if (H.pid > 0)
		test_sleep_ms(50);
	close(fd); /* releases the lock */
	assert_true(H.pid > 0);
	assert_int_equal(h_wait_running(&H, H.pid), 0);
	assert_false(log_has("blocks"));
}

/* A per-inode lock held by something that is not a barrierd: the message names it. */
static void foreign_holder_named(void **state)
{
	const char *args[] = {"--state", H.state, NULL};
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char name[256], path[600], want[128];
	struct stat st;
	int fd, ws;

	(void)state;
	fd = open(H.state, O_RDWR | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	snprintf(name, sizeof(name), "dev-%u:%u-ino-%llu.lock", major(st.st_dev), minor(st.st_dev),
		 (unsigned long long)st.st_ino);
	mkdir("/run/barrierd-locks", 0700);
	snprintf(path, sizeof(path), "/run/barrierd-locks/%s", name);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_SETLK, &fl),
			 0); /* a classic lock: F_OFD_GETLK gives our pid */
	ws = run_to_exit(args);
	close(fd);
	unlink(path);
	assert_true(WIFEXITED(ws));
	assert_int_not_equal(WEXITSTATUS(ws), 0);
	snprintf(want, sizeof(want), "pid %ld (", (long)getpid());
	assert_true(log_has(want));
	assert_true(log_has("not a barrierd"));
}

/* Fill the tmpfs at dir until ENOSPC. */
static void fill(const char *dir)
{
	char path[600], buf[512];
	int fd;

	snprintf(path, sizeof(path), "%s/filler", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	memset(buf, 0x5a, sizeof(buf));
	for (int i = 0; i < 1 << 16; i++)
		if (write(fd, buf, sizeof(buf)) < 0) {
			assert_int_equal(errno, ENOSPC);
			break;
		}
	close(fd);
}

/* barrierd_open on path in a child: 1 if the child exited normally (any result), else 0. */
static int open_survives(const char *path)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct barrierd *b = NULL;
		int r = barrierd_open(&b, path);

		if (r == 0) {
			/* A wait reads every word the fallback check reads. */
			barrierd_barrier(b, 1000000);
			barrierd_close(b);
		}
		_exit(r == 0 ? 0 : 1);
	}
	st = test_reap(pid, 20);
	return st != -1 && WIFEXITED(st);
}

static char full_dir[400];

static void full_tmpfs_refused(void **state)
{
	char path[500];
	const char *args[] = {"--state", path, NULL};
	struct stat sb;
	int st;

	(void)state;
	snprintf(full_dir, sizeof(full_dir), "%s/full", H.dir);
	snprintf(path, sizeof(path), "%s/state", full_dir);
	assert_int_equal(mkdir(full_dir, 0755), 0);
	assert_int_equal(mount("tmpfs", full_dir, "tmpfs", 0, "size=4k,mode=0755"), 0);
	fill(full_dir);
	st = run_to_exit(args);
	assert_true(WIFEXITED(st)); /* not a signal (SIGBUS) */
	assert_int_equal(WEXITSTATUS(st), 1);
	assert_true(log_has("No space left on device"));
	/* No file a client could fault on: none at all, or one a client opens without a fault. */
	assert_true(open_survives(path));
	/* This run created the file and could not allocate it: it removed it. */
	assert_int_not_equal(stat(path, &sb), 0);
}

/*
 * A sparse file found on a full tmpfs (left by a daemon that died before it allocated, or made
 * with truncate -s): the daemon refuses to start on it, and a client's open refuses it too,
 * without touching its pages (on a full tmpfs a load from a hole raises SIGBUS).
 */
static void sparse_file_on_full_tmpfs(void **state)
{
	char path[500];
	const char *args[] = {"--state", path, NULL};
	struct barrierd *b = NULL;
	pid_t pid;
	int st, fd;

	(void)state;
	snprintf(full_dir, sizeof(full_dir), "%s/full", H.dir);
	snprintf(path, sizeof(path), "%s/state", full_dir);
	assert_int_equal(mkdir(full_dir, 0755), 0);
	assert_int_equal(mount("tmpfs", full_dir, "tmpfs", 0, "size=8k,mode=0755"), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0); /* one page, no block */
	close(fd);
	fill(full_dir);
	st = run_to_exit(args);
	assert_true(WIFEXITED(st)); /* not a signal (SIGBUS) */
	assert_int_not_equal(WEXITSTATUS(st), 0);
	/* The client, in a child: it must return an error, not die of SIGBUS. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(barrierd_open(&b, path) == -EPROTO ? 0 : 1);
	st = test_reap(pid, 20);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static int full_teardown(void **state)
{
	if (full_dir[0])
		umount2(full_dir, MNT_DETACH);
	full_dir[0] = 0;
	return h_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(squatter_cannot_block_start, h_setup, squat_teardown),
	    cmocka_unit_test_setup_teardown(bind_mount_second_instance_fails, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(unseen_second_instance_refused, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(killed_daemon_file_taken_over, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(lock_dir_made_private, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(briefly_held_lock_waited_for, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(foreign_holder_named, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(full_tmpfs_refused, h_setup, full_teardown),
	    cmocka_unit_test_setup_teardown(sparse_file_on_full_tmpfs, h_setup, full_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
