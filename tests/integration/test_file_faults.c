// SPDX-License-Identifier: MIT
/*
 * The state file pulled from under the running daemon (issue 13, item 3), and what a start
 * leaves behind (item 7), against the real daemon.
 *
 * Truncated to 0 or 64 bytes, replaced by a rename, or removed while the daemon runs: it logs
 * what happened, exits non-zero within a hang guard and not by a signal (SIGBUS), stops its
 * own inode cleanly, and never writes into a replacement.  A failed start removes only what it
 * created (the state file, PATH.lock, its per-inode lock); stale per-inode locks do not pile
 * up; a FIFO, socket or device at the state path is named as not a regular file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "harness.h"

#define LOCK_DIR "/run/barrierd-locks"

/*
 * Wait (hang guard 5 s) until the daemon's main loop has run its first pass (ext.passes): the
 * file is marked running before that pass, and a truncation in between makes the pass fault
 * first, not the heartbeat's check (seen under CI load).
 */
static void await_first_pass(void)
{
	uint64_t t0 = bd_mono_ns();

	for (;;) {
		uint64_t xo = 0, passes = 0;
		int fd = open(H.state, O_RDONLY);

		assert_true(fd >= 0);
		assert_int_equal(pread(fd, &xo, 8, offsetof(struct barrierd_header, ext_offset)),
				 8);
		assert_int_equal(
		    pread(fd, &passes, 8, (off_t)(xo + offsetof(struct barrierd_ext, passes))), 8);
		close(fd);
		if (passes > 0)
			return;
		if (bd_mono_ns() - t0 > 5 * TEST_SEC)
			fail_msg("the daemon ran no pass within 5 s");
		test_sleep_ms(1);
	}
}

/* The daemon's exit within a hang guard of 5 s (the heartbeat check runs every 100 ms). */
static int await_exit(void)
{
	int st = test_reap(H.pid, 5);

	H.pid = -1;
	assert_true(st != -1);	    /* hang guard */
	assert_true(WIFEXITED(st)); /* not a signal (SIGBUS) */
	assert_int_not_equal(WEXITSTATUS(st), 0);
	return WEXITSTATUS(st);
}

/* Helpers started by a test, killed in the teardown even when a check failed first. */
static pid_t spin[8];
static int n_spin;
static pid_t other_pid = -1;

static void kill_helpers(void)
{
	test_kill_all(spin, n_spin);
	n_spin = 0;
	if (other_pid > 0) {
		kill(other_pid, SIGKILL);
		waitpid(other_pid, NULL, 0);
	}
	other_pid = -1;
}

static int faults_teardown(void **state)
{
	kill_helpers();
	return h_teardown(state);
}

static int log_has(const char *needle)
{
	return h_log_has_since(&H, 0, needle);
}

static off_t size_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static uint64_t flags_of(const char *path)
{
	uint64_t f = 0;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &f, 8, offsetof(struct barrierd_header, flags)), 8);
	close(fd);
	return f;
}

/*
 * What only the heartbeat's size check logs, and only the SIGBUS handler: both say "was
 * truncated to N bytes", so each case asserts its own path's phrase, the other's absence and
 * its exit status (LIFECYCLE.md section 4: 1 for the check, 74 for the handler).
 */
#define CHECK_SAYS "(the daemon maps"
#define SIGBUS_SAYS "its mapping faulted"

/* Truncated to 0 while idle: the heartbeat's check sees it before anything faults. */
static void truncated_to_zero(void **state)
{
	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	await_first_pass();
	assert_int_equal(truncate(H.state, 0), 0);
	assert_int_equal(await_exit(), 1);
	assert_true(log_has("state file "));
	assert_true(log_has("was truncated to 0 bytes " CHECK_SAYS));
	assert_false(log_has(SIGBUS_SAYS));
	assert_int_equal(size_of(H.state), 0); /* not grown back, not written */
}

/*
 * Truncated to 0 while passes run (armed, a busy CPU signalling, no heartbeat for 10 s): a
 * pass faults first, and the SIGBUS handler stops the daemon with its own exit status.
 */
static void truncated_under_a_pass(void **state)
{
	const char *extra[] = {"--always-armed", "--heartbeat-period", "10000", NULL};

	(void)state;
	assert_int_equal(h_start(&H, -1, extra), 0);
	n_spin = test_spinners(spin, 8);
	test_sleep_ms(100);
	assert_int_equal(truncate(H.state, 0), 0);
	assert_int_equal(await_exit(), 74); /* EX_IOERR: the SIGBUS handler */
	test_kill_all(spin, n_spin);
	n_spin = 0;
	assert_true(log_has("was truncated to 0 bytes under the daemon (" SIGBUS_SAYS));
	assert_false(log_has(CHECK_SAYS));
	assert_int_equal(size_of(H.state), 0);
}

/*
 * Truncated to 64 bytes: page 0 stays mapped, nothing faults, and the words past 64 read zero.
 * The daemon says it was truncated (not "another writer"), sets the stopped flag, which is
 * still in the file, writes nothing else, and never grows it back.
 */
static void truncated_to_64(void **state)
{
	uint64_t f;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	await_first_pass();
	assert_int_equal(truncate(H.state, 64), 0);
	assert_int_equal(await_exit(), 1);
	assert_true(log_has("was truncated to 64 bytes " CHECK_SAYS));
	assert_false(log_has(SIGBUS_SAYS));
	assert_int_equal(size_of(H.state), 64);
	f = flags_of(H.state);
	assert_true(f & BARRIERD_FLAG_STOPPED);
	assert_false(f & BARRIERD_FLAG_RUNNING);
}

/*
 * A SIGBUS that is not a fault on the state file (here one sent with kill): the handler says
 * so, marks the file stopped and exits 70 (LIFECYCLE.md section 4).  It used to call
 * sigaction(), which the sandbox forbids: "seccomp: forbidden system call 13".
 */
static void sigbus_sent_with_kill(void **state)
{
	char want[128];
	uint64_t f;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	test_sleep_ms(50); /* well into the main loop, under the sandbox */
	assert_int_equal(kill(H.pid, SIGBUS), 0);
	assert_int_equal(await_exit(), 70);
	snprintf(want, sizeof(want), "SIGBUS not on the state file (sent by pid %ld)",
		 (long)getpid());
	assert_true(log_has(want));
	assert_false(log_has("seccomp"));
	f = flags_of(H.state);
	assert_true(f & BARRIERD_FLAG_STOPPED);
	assert_false(f & BARRIERD_FLAG_RUNNING);
}

/* The old inode, mapped before the fault: stopped cleanly, the snapshot what was published. */
static void assert_old_inode_stopped(const struct barrierd_header *m)
{
	const struct barrierd_ext *x = test_ext_of(m, bd_load(&m->ncpu));

	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_STOPPED);
	assert_false(bd_load(&m->flags) & BARRIERD_FLAG_RUNNING);
	assert_int_equal(bd_load(&x->stop_ns), bd_load(&m->last_interrupt_ns));
	assert_int_equal(bd_load(&x->stop_vtime), bd_load(&m->last_interrupt_vtime));
}

/*
 * Another file renamed over the state file (a log rotation's way): the path names a new inode.
 * The daemon names both inodes, stops its own cleanly and never writes to the new one.
 */
static void replaced_by_rename(void **state)
{
	char repl[400], want[128];
	uint8_t before[4096], after[4096];
	const struct barrierd_header *m;
	struct stat old_st, new_st;
	size_t sz = 0;
	int fd;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	assert_int_equal(stat(H.state, &old_st), 0);
	/* A plausible replacement: a copy of the live file, then our own marker bytes. */
	memset(before, 0x5a, sizeof(before));
	memcpy(before, m, sz < sizeof(before) ? sz : sizeof(before));
	snprintf(repl, sizeof(repl), "%s/replacement", H.dir);
	assert_int_equal(test_write_file(repl, before, sizeof(before), 0644), 0);
	assert_int_equal(stat(repl, &new_st), 0);
	assert_int_equal(rename(repl, H.state), 0);
	await_exit();
	snprintf(want, sizeof(want), "was replaced (inode %llu → %llu)",
		 (unsigned long long)old_st.st_ino, (unsigned long long)new_st.st_ino);
	assert_true(log_has(want));
	/* Not a byte of the replacement changed, nor its size. */
	fd = open(H.state, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, after, sizeof(after)), (ssize_t)sizeof(after));
	assert_int_equal(read(fd, after, 1), 0);
	close(fd);
	assert_memory_equal(before, after, sizeof(before));
	assert_old_inode_stopped(m);
	munmap((void *)m, sz);
}

/* Removed: the daemon says so, stops its inode cleanly and creates nothing at the path. */
static void removed(void **state)
{
	const struct barrierd_header *m;
	struct stat st;
	size_t sz = 0;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	assert_int_equal(unlink(H.state), 0);
	await_exit();
	assert_true(log_has("was removed"));
	assert_int_not_equal(stat(H.state, &st), 0);
	assert_old_inode_stopped(m);
	munmap((void *)m, sz);
}

/* ---- item 7: what a start leaves behind ------------------------------------------------- */

/* A private tmpfs under the test directory: its device number tells its lock files apart. */
static char fs_dir[400];
static char fs_prefix[64]; /* "dev-MAJ:MIN-" of that tmpfs */

static void mount_fs(void)
{
	struct stat st;

	snprintf(fs_dir, sizeof(fs_dir), "%s/fs", H.dir);
	assert_int_equal(mkdir(fs_dir, 0755), 0);
	assert_int_equal(mount("tmpfs", fs_dir, "tmpfs", 0, "size=1m,mode=0755"), 0);
	assert_int_equal(stat(fs_dir, &st), 0);
	snprintf(fs_prefix, sizeof(fs_prefix), "dev-%u:%u-", major(st.st_dev), minor(st.st_dev));
}

static int fs_teardown(void **state)
{
	(void)state;
	kill_helpers();
	h_stop(&H);
	if (fs_dir[0])
		umount2(fs_dir, MNT_DETACH);
	fs_dir[0] = 0;
	h_rmdir(&H);
	return 0;
}

/* How many lock files in LOCK_DIR belong to the tmpfs; name: one of them, if any. */
static int fs_locks(char *name, size_t len)
{
	DIR *d = opendir(LOCK_DIR);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, fs_prefix, strlen(fs_prefix)) == 0) {
			if (name)
				snprintf(name, len, "%s", e->d_name);
			n++;
		}
	closedir(d);
	return n;
}

static int run_to_exit(const char *const *args)
{
	pid_t pid = h_spawn(&H, -1, args);
	int st = test_reap(pid, 20);

	assert_true(st != -1); /* hang guard */
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* A start that fails after creating the file removes the file and both locks it created. */
static void failed_start_leaves_nothing(void **state)
{
	char path[500], lock[520];
	const char *args[] = {"--state", path, "-t", "irq/no_such_tracepoint", NULL};
	struct stat st;

	(void)state;
	mount_fs();
	snprintf(path, sizeof(path), "%s/state", fs_dir);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	assert_int_not_equal(run_to_exit(args), 0);
	assert_true(log_has("unknown tracepoint"));
	assert_int_not_equal(stat(path, &st), 0);
	assert_int_not_equal(stat(lock, &st), 0);
	assert_int_equal(fs_locks(NULL, 0), 0);
}

/*
 * A start that fails on a file it found resets it (its first action) and leaves it and the
 * lock file it found in place: only what a run created is removed.
 */
static void failed_start_keeps_what_it_found(void **state)
{
	char lock[400];
	const char *args[] = {"--state", H.state, "-t", "irq/no_such_tracepoint", NULL};
	uint8_t junk[256];
	struct stat st;

	(void)state;
	memset(junk, 0x77, sizeof(junk));
	assert_int_equal(test_write_file(H.state, junk, sizeof(junk), 0644), 0);
	snprintf(lock, sizeof(lock), "%s.lock", H.state);
	assert_int_equal(test_write_file(lock, "", 0, 0600), 0);
	assert_int_not_equal(run_to_exit(args), 0);
	assert_true(log_has("no barrierd magic")); /* reset first */
	assert_true(log_has("unknown tracepoint"));
	assert_int_equal(stat(H.state, &st), 0);
	assert_int_equal(stat(lock, &st), 0);
	assert_true(flags_of(H.state) & BARRIERD_FLAG_STOPPED);
}

/*
 * Per-inode lock files do not pile up: the clean stop leaves its own (it cannot unlink in the
 * sandbox), the next start on the same inode reuses it, and a start removes the stale ones of
 * inodes nobody serves, never one a running daemon holds.
 */
static void stale_locks_collected(void **state)
{
	char path[500], other[500], stale[600], name[256], name2[256];
	const char *oargs[] = {"--state", other, NULL};
	uint8_t zero = 0;
	pid_t opid;
	int st;

	(void)state;
	mount_fs();
	snprintf(path, sizeof(path), "%s/state", fs_dir);
	snprintf(other, sizeof(other), "%s/other", fs_dir);
	/* The harness's daemon serves a file on the tmpfs. */
	snprintf(H.state, sizeof(H.state), "%s/fs/state", H.dir);
	assert_string_equal(H.state, path);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	st = h_stop(&H);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(fs_locks(name, sizeof(name)), 1); /* left by the clean stop */
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(fs_locks(name2, sizeof(name2)), 1); /* the same one, reused */
	assert_string_equal(name, name2);

	/* Another daemon on the same tmpfs, running: its lock is held. */
	opid = other_pid = h_spawn(&H, -1, oargs);
	snprintf(H.state, sizeof(H.state), "%s/fs/other", H.dir); /* h_wait_running reads it */
	st = h_wait_running(&H, opid);
	snprintf(H.state, sizeof(H.state), "%s/fs/state", H.dir);
	assert_int_equal(st, 0);
	assert_int_equal(fs_locks(NULL, 0), 2);
	st = h_stop(&H);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* A stale lock of an inode that no longer exists, and the stopped daemon's own. */
	snprintf(stale, sizeof(stale), LOCK_DIR "/%sino-999999999.lock", fs_prefix);
	assert_int_equal(test_write_file(stale, &zero, 1, 0600), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(fs_locks(NULL, 0), 3);
	/* The next start (a new file, a new inode) collects the two unused ones. */
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(fs_locks(NULL, 0), 2); /* ours and the running daemon's */
	assert_int_not_equal(access(stale, F_OK), 0);
	assert_int_equal(kill(opid, 0), 0); /* untouched: still running */
	kill(opid, SIGTERM);
	st = test_reap(opid, 10);
	other_pid = -1;
	assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * A --state naming a large file of root's (a sparse VM image, say): refused before anything
 * is allocated or written, exit 1.  The bound is the layout for the largest CPU count, not
 * this machine's: a file that large is still reset and served.
 */
static void oversized_file_refused(void **state)
{
	const char *args[] = {"--state", H.state, NULL};
	const off_t big = 4 << 20;
	uint8_t page[4096], zero[4096] = {0};
	struct stat st, st2;
	int fd;

	(void)state;
	fd = open(H.state, O_RDWR | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, big), 0); /* sparse */
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_int_equal(run_to_exit(args), 1);
	assert_true(log_has("more than any barrierd state file"));
	assert_int_equal(stat(H.state, &st2), 0);
	assert_int_equal(st2.st_size, big);
	assert_int_equal(st2.st_blocks, st.st_blocks); /* nothing allocated */
	fd = open(H.state, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, page, sizeof(page), 0), (ssize_t)sizeof(page));
	close(fd);
	assert_memory_equal(page, zero, sizeof(page)); /* nothing written */

	assert_int_equal(truncate(H.state, (off_t)barrierd_file_size(BARRIERD_MAX_CPUS)), 0);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(size_of(H.state), (off_t)barrierd_file_size(BARRIERD_MAX_CPUS));
}

/* A FIFO, a socket or a device at the state path is named as what it is, and left alone. */
static void special_files_named(void **state)
{
	char lock[400];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *args[] = {"--state", H.state, NULL};
	const char *what[] = {"(a FIFO)", "(a socket)", "(a character device)"};
	struct stat st;
	long mark;
	int s;

	(void)state;
	snprintf(lock, sizeof(lock), "%s.lock", H.state);
	for (int i = 0; i < 3; i++) {
		unlink(H.state);
		if (i == 0) {
			assert_int_equal(mkfifo(H.state, 0644), 0);
		} else if (i == 1) {
			s = socket(AF_UNIX, SOCK_STREAM, 0);
			assert_true(s >= 0);
			assert_true(strlen(H.state) < sizeof(sa.sun_path));
			memcpy(sa.sun_path, H.state, strlen(H.state) + 1);
			assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
			close(s);
		} else {
			assert_int_equal(mknod(H.state, S_IFCHR | 0644, makedev(1, 3)), 0);
		}
		mark = h_log_mark(&H);
		assert_int_not_equal(run_to_exit(args), 0);
		assert_true(h_log_has_since(&H, mark, "not a regular file"));
		assert_true(h_log_has_since(&H, mark, what[i]));
		assert_false(h_log_has_since(&H, mark, "owned by"));
		assert_false(h_log_has_since(&H, mark, "symlink"));
		assert_int_equal(lstat(H.state, &st), 0); /* still there, untouched */
		assert_int_not_equal(stat(lock, &st), 0); /* the lock it created is removed */
	}
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(truncated_to_zero, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(truncated_under_a_pass, h_setup, faults_teardown),
	    cmocka_unit_test_setup_teardown(truncated_to_64, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(sigbus_sent_with_kill, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(replaced_by_rename, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(removed, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(failed_start_leaves_nothing, h_setup, fs_teardown),
	    cmocka_unit_test_setup_teardown(failed_start_keeps_what_it_found, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(stale_locks_collected, h_setup, fs_teardown),
	    cmocka_unit_test_setup_teardown(special_files_named, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(oversized_file_refused, h_setup, h_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
