// SPDX-License-Identifier: MIT
/*
 * barrierd_open's trust checks (lib/trust.c; docs/PROTOCOL.md, "Trusting the file"), from the point
 * of view of an unprivileged client: each case starts from a layout that opens as `nobody` and
 * breaks exactly one rule, and barrierd_open must then refuse it with -EPERM before trusting a
 * byte.
 *
 * Needs root, to chown files and to switch a forked child to nobody (uid/gid 65534): the
 * client under test always runs as that child, never as root.
 *
 * Where the files live: a fresh directory (chmod 0755) under the first of /var/tmp and the
 * build directory whose whole chain up to / satisfies the rule itself (root-owned; not
 * writable by group or others unless sticky; searchable by others).  /var/tmp is root's,
 * 1777: that it is accepted is itself the "root-owned sticky ancestor" case, like /tmp.  The
 * choice is checked at start-up and printed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_daemon.h"
#include "test_env.h"

#define NOBODY 65534
#define NCPU 2
#define CHILD_KILLED (-100000) /* minus the signal number: the child crashed or hung */
#define PROBE_ARG "--secure-env-probe"

static char g_base[PATH_MAX / 4];   /* this run's 0755 directory */
static unsigned g_child_alarm = 10; /* seconds: a client blocked this long is killed */
static uint64_t g_generation = 100; /* each file gets its own, to tell which one was opened */

/* ---------------------------------------------------------------------------------------- */
/* Layout helpers (run as root in the test process)                                          */
/* ---------------------------------------------------------------------------------------- */

static void mkdir_mode(const char *path, mode_t mode)
{
	assert_int_equal(mkdir(path, 0700), 0);
	/* chmod after mkdir: the umask must not decide what we test. */
	assert_int_equal(chmod(path, mode), 0);
}

/* A valid state file, root-owned 0644, with a generation of its own (returned). */
static uint64_t make_file(const char *path)
{
	size_t sz;
	void *img = fake_image(NCPU, bd_mono_ns(), &sz);
	uint64_t gen = ++g_generation;

	assert_non_null(img);
	((struct barrierd_header *)img)->generation = gen;
	assert_int_equal(test_write_file(path, img, sz, 0644), 0);
	free(img);
	return gen;
}

/* g_base/<name>/ (0755) holding a valid "state": the layout every case starts from. */
static uint64_t make_case(const char *name, char *dir, size_t dlen, char *file, size_t flen)
{
	assert_true((size_t)snprintf(dir, dlen, "%s/%s", g_base, name) < dlen);
	assert_true((size_t)snprintf(file, flen, "%s/state", dir) < flen);
	mkdir_mode(dir, 0755);
	return make_file(file);
}

/* ---------------------------------------------------------------------------------------- */
/* The client: a forked child that becomes nobody, then calls barrierd_open                   */
/* ---------------------------------------------------------------------------------------- */

struct res {
	int ret;
	uint64_t gen; /* generation of the file that was mapped, when ret == 0 */
};

static int drop_to(uid_t uid)
{
	/* Supplementary groups first (root's group 0 would otherwise stay), then gid, then uid. */
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		return -errno;
	if (geteuid() != uid || getegid() != uid)
		return -EPERM;
	return 0;
}

/* The client as uid, its working directory cwd_fd (if >= 0) or cwd (if not NULL). */
static struct res open_as_at(uid_t uid, int cwd_fd, const char *cwd, const char *path,
			     const struct barrierd_open_opts *opts)
{
	struct res r = {.ret = CHILD_KILLED};
	int pfd[2], st = 0;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct res c = {0};
		struct barrierd *b = NULL;

		close(pfd[0]);
		/* Hang guard: a blocked open ends with SIGALRM, reported below. */
		alarm(g_child_alarm);
		c.ret = drop_to(uid);
		if (c.ret) {
			c.ret = -10000 + c.ret; /* distinct from any barrierd_open result */
		} else if ((cwd_fd >= 0 && fchdir(cwd_fd)) || (cwd && chdir(cwd))) {
			c.ret = -20000 - errno;
		} else {
			c.ret = opts ? barrierd_open_opts(&b, path, opts) : barrierd_open(&b, path);
			if (c.ret == 0) {
				c.gen = barrierd_mapping(b, NULL)->generation;
				barrierd_close(b);
			}
		}
		_exit(write(pfd[1], &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : 1);
	}
	close(pfd[1]);
	if (read(pfd[0], &r, sizeof(r)) != (ssize_t)sizeof(r))
		r.ret = CHILD_KILLED;
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		r.ret = CHILD_KILLED - WTERMSIG(st);
	if (r.ret <= -10000 && r.ret > -30000)
		fail_msg("client setup as uid %u failed: %d", (unsigned)uid, r.ret);
	return r;
}

static struct res open_as_in(uid_t uid, const char *cwd, const char *path,
			     const struct barrierd_open_opts *opts)
{
	return open_as_at(uid, -1, cwd, path, opts);
}

static int nobody_open(const char *path, const struct barrierd_open_opts *opts)
{
	return open_as_in(NOBODY, NULL, path, opts).ret;
}

static const struct barrierd_open_opts *trusting(uid_t uid)
{
	static struct barrierd_open_opts o;

	o = (struct barrierd_open_opts){.sz = sizeof(o), .trusted_uid_set = 1, .trusted_uid = uid};
	return &o;
}

/* ---------------------------------------------------------------------------------------- */
/* Positive controls                                                                         */
/* ---------------------------------------------------------------------------------------- */

static void control_opens_as_nobody(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];
	uint64_t gen = make_case("ok", dir, sizeof(dir), file, sizeof(file));
	struct res r = open_as_in(NOBODY, NULL, file, NULL);
	struct barrierd *b = NULL;

	(void)state;
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.gen, gen);
	/* A relative name resolves against the working directory, checked all the same. */
	r = open_as_in(NOBODY, dir, "state", NULL);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.gen, gen);
	/* And root, the daemon's own user, of course. */
	assert_int_equal(barrierd_open(&b, file), 0);
	barrierd_close(b);
}

static void file_owned_by_trusted_uid(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];

	(void)state;
	make_case("trusted-file", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(chown(file, NOBODY, (gid_t)-1), 0);
	assert_int_equal(nobody_open(file, trusting(NOBODY)), 0);
	/* The uid counts only when flagged as set, and only that uid. */
	struct barrierd_open_opts o = {.sz = sizeof(o), .trusted_uid = NOBODY};

	assert_int_equal(nobody_open(file, &o), -EPERM);
	assert_int_equal(nobody_open(file, trusting(NOBODY - 1)), -EPERM);
}

/* Root-owned, sticky, world-writable ancestors (like /tmp) and parents are accepted. */
static void sticky_root_ancestor_accepted(void **state)
{
	char dir[PATH_MAX], sub[PATH_MAX + 8], file[PATH_MAX + 16];
	uint64_t gen;

	(void)state;
	make_case("sticky-anc", dir, sizeof(dir), file, sizeof(file));
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(file, sizeof(file), "%s/state", sub);
	mkdir_mode(sub, 0755);
	gen = make_file(file);
	assert_int_equal(chmod(dir, 01777), 0);
	assert_int_equal(open_as_in(NOBODY, NULL, file, NULL).gen, gen);
	/* The file's own directory sticky and world-writable: others cannot replace root's file. */
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(chmod(sub, 01777), 0);
	assert_int_equal(nobody_open(file, NULL), 0);
}

/*
 * Directories others may search but not list (0711, root's) are as trusted as 0755 ones: the
 * rule is about who can write them.  A client needs only search permission to reach the file,
 * so the check must not need more (open(O_RDONLY) of a directory, or of its "..", needs read
 * permission; O_PATH or stat by name need only search permission).
 */
static void traversable_unreadable_dirs(void **state)
{
	char dir[PATH_MAX], sub[PATH_MAX + 8], file[PATH_MAX + 16];
	uint64_t gen;
	struct res r;

	(void)state;
	make_case("search-only", dir, sizeof(dir), file, sizeof(file));
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(file, sizeof(file), "%s/state", sub);
	mkdir_mode(sub, 0755);
	gen = make_file(file);
	assert_int_equal(open_as_in(NOBODY, NULL, file, NULL).gen, gen); /* control */
	assert_int_equal(chmod(dir, 0711), 0);				 /* an ancestor */
	r = open_as_in(NOBODY, NULL, file, NULL);
	/*
	 * LIBRARY BUG (lib/trust.c, chain_ok and bd_open_trusted): the directory and each ".."
	 * are opened O_RDONLY | O_DIRECTORY, which needs read permission, so a client that may
	 * only search a trusted directory gets -EACCES.  Fix: O_PATH | O_DIRECTORY | O_CLOEXEC
	 * for both opens (fstat and openat work on O_PATH descriptors).
	 */
	if (r.ret == -EACCES)
		fail_msg("LIBRARY BUG: a root-owned 0711 ancestor refused with -EACCES "
			 "(lib/trust.c opens directories O_RDONLY; O_PATH needs only search "
			 "permission)");
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.gen, gen);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(chmod(sub, 0711), 0); /* the file's own directory */
	r = open_as_in(NOBODY, NULL, file, NULL);
	if (r.ret == -EACCES)
		fail_msg("LIBRARY BUG: a root-owned 0711 parent refused with -EACCES (lib/trust.c "
			 "opens it O_RDONLY; O_PATH needs only search permission)");
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.gen, gen);
}

/* The trusted uid may own the directories too (a daemon run as a dedicated user). */
static void dir_owned_by_trusted_uid(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];

	(void)state;
	make_case("trusted-dir", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(chown(dir, NOBODY, (gid_t)-1), 0);
	assert_int_equal(nobody_open(file, trusting(NOBODY)), 0);
}

/* A symlink in the directory part is resolved, and the real directories are checked. */
static void symlinked_directory_to_trusted(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX], lnk[PATH_MAX], via[PATH_MAX + 8];
	uint64_t gen;

	(void)state;
	gen = make_case("lnk-target", dir, sizeof(dir), file, sizeof(file));
	snprintf(lnk, sizeof(lnk), "%s/lnk-dir", g_base);
	assert_int_equal(symlink("lnk-target", lnk), 0);
	snprintf(via, sizeof(via), "%s/state", lnk);
	/* Like /var/run/barrierd/state through /var/run -> /run. */
	assert_int_equal(open_as_in(NOBODY, NULL, via, NULL).gen, gen);
}

/* ---------------------------------------------------------------------------------------- */
/* Each case: control opens, then exactly one rule broken → -EPERM                            */
/* ---------------------------------------------------------------------------------------- */

static void file_owned_by_user(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];

	(void)state;
	make_case("file-owner", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(nobody_open(file, NULL), 0);
	assert_int_equal(chown(file, NOBODY, (gid_t)-1), 0);
	assert_int_equal(nobody_open(file, NULL), -EPERM);
}

static void file_group_writable(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];

	(void)state;
	make_case("file-gw", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(nobody_open(file, NULL), 0);
	assert_int_equal(chmod(file, 0664), 0);
	assert_int_equal(nobody_open(file, NULL), -EPERM);
}

static void file_other_writable(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];

	(void)state;
	make_case("file-ow", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(nobody_open(file, NULL), 0);
	assert_int_equal(chmod(file, 0646), 0);
	assert_int_equal(nobody_open(file, NULL), -EPERM);
}

static void dir_other_writable(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];

	(void)state;
	make_case("dir-ow", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(nobody_open(file, NULL), 0);
	assert_int_equal(chmod(dir, 0757), 0); /* others may write; not sticky */
	assert_int_equal(nobody_open(file, NULL), -EPERM);
}

/*
 * The library reads "not writable by others" as "by anyone but the owner": a group-writable
 * directory (not root-sticky) is refused too, since the group may hold untrusted users.
 */
static void dir_group_writable(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];

	(void)state;
	make_case("dir-gw", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(nobody_open(file, NULL), 0);
	assert_int_equal(chmod(dir, 0775), 0);
	assert_int_equal(nobody_open(file, NULL), -EPERM);
}

static void dir_owned_by_user(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];

	(void)state;
	make_case("dir-owner", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(nobody_open(file, NULL), 0);
	assert_int_equal(chown(dir, NOBODY, (gid_t)-1), 0);
	assert_int_equal(nobody_open(file, NULL), -EPERM);
}

static void ancestor_other_writable(void **state)
{
	char dir[PATH_MAX], sub[PATH_MAX + 8], file[PATH_MAX + 16];

	(void)state;
	make_case("anc-ow", dir, sizeof(dir), file, sizeof(file));
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(file, sizeof(file), "%s/state", sub);
	mkdir_mode(sub, 0755);
	make_file(file);
	assert_int_equal(nobody_open(file, NULL), 0);
	assert_int_equal(chmod(dir, 0757), 0); /* two levels up from the file */
	assert_int_equal(nobody_open(file, NULL), -EPERM);
}

/* Sticky makes a world-writable ancestor acceptable only when root owns it. */
static void ancestor_sticky_not_root(void **state)
{
	char dir[PATH_MAX], sub[PATH_MAX + 8], file[PATH_MAX + 16];

	(void)state;
	make_case("anc-sticky-user", dir, sizeof(dir), file, sizeof(file));
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(file, sizeof(file), "%s/state", sub);
	mkdir_mode(sub, 0755);
	make_file(file);
	assert_int_equal(chown(dir, NOBODY, (gid_t)-1), 0);
	/* Control: owned by the trusted uid and not writable by others, it is fine. */
	assert_int_equal(nobody_open(file, trusting(NOBODY)), 0);
	assert_int_equal(chmod(dir, 01777), 0);
	assert_int_equal(nobody_open(file, trusting(NOBODY)), -EPERM);
}

static void symlink_as_file(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX], real[PATH_MAX + 8], abs_target[PATH_MAX + 8];

	(void)state;
	make_case("symlink", dir, sizeof(dir), file, sizeof(file));
	snprintf(real, sizeof(real), "%s/real", dir);
	assert_int_equal(rename(file, real), 0);
	assert_int_equal(nobody_open(real, NULL), 0); /* control: the target itself is fine */
	assert_int_equal(symlink("real", file), 0);
	assert_int_equal(nobody_open(file, NULL), -EPERM);
	/* An absolute link, and one to a trusted file elsewhere, are no different. */
	assert_int_equal(unlink(file), 0);
	snprintf(abs_target, sizeof(abs_target), "%s", real);
	assert_int_equal(symlink(abs_target, file), 0);
	assert_int_equal(nobody_open(file, NULL), -EPERM);
}

static void symlinked_directory_to_untrusted(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX], lnk[PATH_MAX], via[PATH_MAX + 8];

	(void)state;
	make_case("lnk-bad-target", dir, sizeof(dir), file, sizeof(file));
	snprintf(lnk, sizeof(lnk), "%s/lnk-bad", g_base);
	assert_int_equal(symlink("lnk-bad-target", lnk), 0);
	snprintf(via, sizeof(via), "%s/state", lnk);
	assert_int_equal(nobody_open(via, NULL), 0);
	assert_int_equal(chmod(dir, 0757), 0);
	assert_int_equal(nobody_open(via, NULL), -EPERM);
}

/* A directory or a FIFO at the path is not a regular file: -EPERM, promptly. */
static void not_a_regular_file(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX];
	int r;

	(void)state;
	make_case("not-regular", dir, sizeof(dir), file, sizeof(file));
	assert_int_equal(unlink(file), 0);
	mkdir_mode(file, 0755);
	assert_int_equal(nobody_open(file, NULL), -EPERM);
	assert_int_equal(rmdir(file), 0);
	/* A character device (/dev/null's numbers), root-owned 0644, where mknod is allowed. */
	if (mknod(file, S_IFCHR | 0644, makedev(1, 3)) == 0) {
		assert_int_equal(chmod(file, 0644), 0);
		assert_int_equal(nobody_open(file, NULL), -EPERM);
		assert_int_equal(unlink(file), 0);
	}
	/*
	 * Regression test: lib/trust.c once opened the file without O_NONBLOCK, and open(2) of
	 * a FIFO blocks until a writer appears, so barrierd_open hung instead of returning
	 * -EPERM.  The child's alarm (2 s: an open of a local file takes microseconds) turns a
	 * hang into CHILD_KILLED - SIGALRM here.
	 */
	assert_int_equal(mkfifo(file, 0644), 0);
	assert_int_equal(chmod(file, 0644), 0);
	g_child_alarm = 2;
	r = nobody_open(file, NULL);
	g_child_alarm = 10;
	if (r == CHILD_KILLED - SIGALRM)
		fail_msg("barrierd_open blocked on a FIFO (the file must be opened O_NONBLOCK); "
			 "want -EPERM");
	assert_int_equal(r, -EPERM);
}

/*
 * A chain deeper than the walk looks (4096 ancestors) is refused.  The walk used to stop
 * looking there and accept: an untrusted directory above the cut-off went unchecked.  No name
 * reaches such a depth (PATH_MAX): the client opens "state" relative to a working directory at
 * the bottom, which it enters with fchdir (symlinks in a path would do as well).
 */
static int deep_chain(const char *top, unsigned levels)
{
	int fd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC), ok = fd >= 0;

	for (unsigned i = 0; ok && i < levels; i++) {
		int next;

		/* chmod after mkdir: the umask must not decide what we test. */
		ok = mkdirat(fd, "d", 0700) == 0 && fchmodat(fd, "d", 0755, 0) == 0;
		next = ok ? openat(fd, "d", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		close(fd);
		fd = next;
		ok = fd >= 0;
	}
	if (ok) {
		size_t sz;
		void *img = fake_image(NCPU, bd_mono_ns(), &sz);
		int f =
		    img ? openat(fd, "state", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;

		ok = f >= 0 && write(f, img, sz) == (ssize_t)sz && fchmod(f, 0644) == 0;
		if (f >= 0)
			close(f);
		free(img);
	}
	if (!ok && fd >= 0) {
		close(fd);
		fd = -1;
	}
	return fd; /* the bottom directory, holding "state" */
}

/* Remove what deep_chain made, from the bottom up (nftw would need names longer than PATH_MAX). */
static void deep_chain_remove(int bottom, unsigned levels)
{
	int fd = bottom;

	unlinkat(fd, "state", 0);
	for (unsigned i = 0; i < levels && fd >= 0; i++) {
		int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

		close(fd);
		fd = up;
		if (fd >= 0)
			unlinkat(fd, "d", AT_REMOVEDIR);
	}
	if (fd >= 0)
		close(fd);
}

static void deep_chain_refused(void **state)
{
	const unsigned shallow = 64, deep = 4200;
	char top[PATH_MAX];
	int fd, r, r_trusted;

	(void)state;
	snprintf(top, sizeof(top), "%s/deep", g_base);
	mkdir_mode(top, 0755);

	/* Controls: a shallow chain opens under a trusted top and not under a writable one. */
	fd = deep_chain(top, shallow);
	assert_true(fd >= 0);
	assert_int_equal(open_as_at(NOBODY, fd, NULL, "state", NULL).ret, 0);
	assert_int_equal(chmod(top, 0757), 0);
	assert_int_equal(open_as_at(NOBODY, fd, NULL, "state", NULL).ret, -EPERM);
	assert_int_equal(chmod(top, 0755), 0);
	deep_chain_remove(fd, shallow);

	/*
	 * Deeper than the walk looks, below a directory anyone can write: refused.  And refused,
	 * not accepted, even when every directory is trusted.  (Results first, checks after the
	 * removal: a failed check must not leave a chain no name can reach.)
	 */
	fd = deep_chain(top, deep);
	assert_true(fd >= 0);
	assert_int_equal(chmod(top, 0757), 0);
	r = open_as_at(NOBODY, fd, NULL, "state", NULL).ret;
	assert_int_equal(chmod(top, 0755), 0);
	r_trusted = open_as_at(NOBODY, fd, NULL, "state", NULL).ret;
	deep_chain_remove(fd, deep);
	assert_int_equal(rmdir(top), 0);
	if (r == 0)
		fail_msg("a state file %u directories below a directory anyone can write was "
			 "trusted: the walk stopped before it",
			 deep);
	assert_int_equal(r, -EPERM);
	assert_int_equal(r_trusted, -EPERM);
}

/* ---------------------------------------------------------------------------------------- */
/* BARRIERD_STATE                                                                            */
/* ---------------------------------------------------------------------------------------- */

static void env_var_names_the_file(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX], missing[PATH_MAX + 8];
	uint64_t gen = make_case("env", dir, sizeof(dir), file, sizeof(file));
	struct barrierd *b = NULL;
	struct res r;

	(void)state;
	assert_int_equal(setenv(BARRIERD_STATE_ENV, file, 1), 0);
	assert_int_equal(barrierd_open(&b, NULL), 0);
	assert_int_equal(barrierd_mapping(b, NULL)->generation, gen);
	barrierd_close(b);
	/* An unprivileged client inherits it (secure_getenv only hides it from set[ug]id runs). */
	r = open_as_in(NOBODY, NULL, NULL, NULL);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.gen, gen);
	/* The trust checks apply to a path from the environment as to any other. */
	assert_int_equal(chmod(file, 0646), 0);
	assert_int_equal(nobody_open(NULL, NULL), -EPERM);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	assert_int_equal(setenv(BARRIERD_STATE_ENV, missing, 1), 0);
	assert_int_equal(nobody_open(NULL, NULL), -ENOENT);
	/* An explicit path wins over the environment. */
	assert_int_equal(chmod(file, 0644), 0);
	assert_int_equal(open_as_in(NOBODY, NULL, file, NULL).gen, gen);
	unsetenv(BARRIERD_STATE_ENV);
}

/*
 * The probe mode of this binary: run through a setuid-root copy by nobody, the kernel sets
 * AT_SECURE and secure_getenv must hide BARRIERD_STATE (an attacker must not point a set-uid
 * program at a file of their choosing).  Exit status: bit 0 AT_SECURE, bit 1 the file named
 * by BARRIERD_STATE was the one opened; 64 on a usage error.
 */
static int secure_env_probe(const char *gen_txt)
{
	struct barrierd *b = NULL;
	int st = getauxval(AT_SECURE) ? 1 : 0;
	uint64_t gen = strtoull(gen_txt, NULL, 10);

	if (gen == 0)
		return 64;
	if (barrierd_open(&b, NULL) == 0) {
		if (barrierd_mapping(b, NULL)->generation == gen)
			st |= 2;
		barrierd_close(b);
	}
	return st;
}

static int run_probe(const char *probe, uid_t uid, const char *env_file, uint64_t gen)
{
	char gen_txt[32];
	int st = 0;
	pid_t pid;

	snprintf(gen_txt, sizeof(gen_txt), "%llu", (unsigned long long)gen);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(10);
		if (uid != 0 && drop_to(uid))
			_exit(126);
		setenv(BARRIERD_STATE_ENV, env_file, 1);
		execl(probe, probe, PROBE_ARG, gen_txt, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void env_var_ignored_when_setuid(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX], pdir[PATH_MAX], probe[PATH_MAX + 8];
	uint64_t gen = make_case("env-secure", dir, sizeof(dir), file, sizeof(file));
	char buf[65536];
	int in, out, st;
	ssize_t n;

	(void)state;
	/* Only root and group nogroup may reach the set-uid copy while it exists. */
	snprintf(pdir, sizeof(pdir), "%s/probe", g_base);
	mkdir_mode(pdir, 0750);
	assert_int_equal(chown(pdir, 0, NOBODY), 0);
	snprintf(probe, sizeof(probe), "%s/probe", pdir);
	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(in >= 0);
	out = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	assert_int_equal(chmod(probe, 04755), 0);

	/* Control: the same binary, not set-uid-run, honours the variable. */
	st = run_probe(probe, 0, file, gen);
	/* Set-uid root, run by nobody: the variable must be ignored. */
	int st_secure = run_probe(probe, NOBODY, file, gen);

	unlink(probe);
	if (st == 127 || st_secure == 127 || st_secure == 126) {
		print_message("probe could not run (exec/setuid unavailable: %d, %d)\n", st,
			      st_secure);
		skip();
	}
	assert_int_equal(st, 2); /* no AT_SECURE, the env file opened */
	if (!(st_secure & 1)) {
		print_message("no AT_SECURE for the set-uid probe (nosuid mount?)\n");
		skip();
	}
	assert_int_equal(st_secure, 1); /* AT_SECURE, the env file NOT opened */
}

/* ---------------------------------------------------------------------------------------- */
/* A race on the path                                                                        */
/* ---------------------------------------------------------------------------------------- */

/*
 * Whoever can write a directory on the *given* path can swap a symlink there.  The checks
 * must apply to the file actually opened.  A process flips g_base/race/lnk between a trusted
 * directory and an untrusted one (others may write it, so its file could be anyone's
 * choosing); however the flips interleave with barrierd_open, the untrusted directory's file
 * must never be opened.
 *
 * Regression test: lib/trust.c once resolved the directory with realpath() twice, once for
 * the ancestor checks and again for the open(), so a flip between the two checked one
 * directory and opened the file in another (caught in 10 of 10 runs of this test, within
 * 60-2000 tries).  Checking through the descriptor the file is opened from closes the race;
 * a race this test does not hit is never reported as a failure, only a file actually opened
 * from the untrusted directory is.
 */
static void path_swap_race(void **state)
{
	char good[PATH_MAX], bad[PATH_MAX], file[PATH_MAX], race[PATH_MAX];
	char lnk[PATH_MAX + 8], alt[PATH_MAX + 8], via[PATH_MAX + 16];
	uint64_t good_gen, bad_gen, t_end;
	unsigned opened_good = 0, opened_bad = 0, refused = 0, tries = 0;
	int st;
	pid_t pid;

	(void)state;
	good_gen = make_case("race-good", good, sizeof(good), file, sizeof(file));
	bad_gen = make_case("race-bad", bad, sizeof(bad), file, sizeof(file));
	assert_int_equal(chmod(bad, 0757), 0);
	snprintf(race, sizeof(race), "%s/race", g_base);
	mkdir_mode(race, 0757);
	snprintf(lnk, sizeof(lnk), "%s/lnk", race);
	snprintf(alt, sizeof(alt), "%s/alt", race);
	snprintf(via, sizeof(via), "%s/state", lnk);
	assert_int_equal(symlink(good, lnk), 0);
	assert_int_equal(symlink(bad, alt), 0);
	/* Without flips the two directories are told apart. */
	assert_int_equal(open_as_in(NOBODY, NULL, via, NULL).gen, good_gen);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(20);
		for (;;) /* atomic exchange: lnk always exists, pointing at one or the other */
			if (renameat2(AT_FDCWD, lnk, AT_FDCWD, alt, RENAME_EXCHANGE))
				_exit(1);
	}
	t_end = bd_mono_ns() + 1 * TEST_SEC;
	while (bd_mono_ns() < t_end && opened_bad == 0) {
		struct barrierd *b = NULL;
		int r = barrierd_open(&b, via);

		tries++;
		if (r == 0) {
			uint64_t g = barrierd_mapping(b, NULL)->generation;

			opened_good += g == good_gen;
			opened_bad += g == bad_gen;
			barrierd_close(b);
		} else {
			refused++;
		}
	}
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st)); /* the flipper was still flipping */
	print_message("path swap race: %u tries, %u good, %u refused, %u untrusted\n", tries,
		      opened_good, refused, opened_bad);
	if (opened_bad)
		fail_msg("barrierd_open mapped a file in a directory others may write (the "
			 "directory checked is not the one the file was opened from)");
}

/* ---------------------------------------------------------------------------------------- */

/* Does path and every directory above it pass the library's rule, and can others search it? */
static int chain_usable(const char *path)
{
	char real[PATH_MAX], *slash;
	struct stat st;

	if (!realpath(path, real))
		return 0;
	for (;;) {
		if (stat(real, &st) || !S_ISDIR(st.st_mode) || st.st_uid != 0)
			return 0;
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
			return 0;
		if (!(st.st_mode & S_IXOTH))
			return 0;
		if (strcmp(real, "/") == 0)
			return 1;
		slash = strrchr(real, '/');
		if (slash == real)
			slash[1] = 0;
		else
			*slash = 0;
	}
}

static int group_setup(void **state)
{
	static const char *const parents[] = {"/var/tmp", BARRIERD_BINARY_DIR};

	(void)state;
	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		if (!chain_usable(parents[i]))
			continue;
		if (test_mkdtemp(g_base, sizeof(g_base), parents[i]))
			return -1;
		print_message("trust tests under %s (chain to / root-owned, not writable by "
			      "others unless sticky)\n",
			      g_base);
		return 0;
	}
	print_message("no directory with a trusted chain for the trust tests\n");
	return -1;
}

static int group_teardown(void **state)
{
	(void)state;
	test_rmtree(g_base);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], PROBE_ARG) == 0)
		return secure_env_probe(argv[2]);
	/* A set-uid copy of this binary does nothing but the probe. */
	if (getauxval(AT_SECURE) || argc > 1)
		return 64;
	if (geteuid() != 0)
		test_skip_or_fail("trust tests need root (chown, and a child switching to nobody)");

	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(control_opens_as_nobody),
	    cmocka_unit_test(file_owned_by_trusted_uid),
	    cmocka_unit_test(sticky_root_ancestor_accepted),
	    cmocka_unit_test(dir_owned_by_trusted_uid),
	    cmocka_unit_test(traversable_unreadable_dirs),
	    cmocka_unit_test(symlinked_directory_to_trusted),
	    cmocka_unit_test(file_owned_by_user),
	    cmocka_unit_test(file_group_writable),
	    cmocka_unit_test(file_other_writable),
	    cmocka_unit_test(dir_other_writable),
	    cmocka_unit_test(dir_group_writable),
	    cmocka_unit_test(dir_owned_by_user),
	    cmocka_unit_test(ancestor_other_writable),
	    cmocka_unit_test(ancestor_sticky_not_root),
	    cmocka_unit_test(symlink_as_file),
	    cmocka_unit_test(symlinked_directory_to_untrusted),
	    cmocka_unit_test(not_a_regular_file),
	    cmocka_unit_test(deep_chain_refused),
	    cmocka_unit_test(env_var_names_the_file),
	    cmocka_unit_test(env_var_ignored_when_setuid),
	    cmocka_unit_test(path_swap_race),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
