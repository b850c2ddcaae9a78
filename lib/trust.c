// SPDX-License-Identifier: MIT
/*
 * Trust before use: the state file and every directory above it must be controlled by root
 * (or the one uid the caller names), or a local user could hand us a file that passes every
 * barrier at once.
 */
#include "trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int owner_ok(uid_t owner, uid_t trusted, int trusted_set)
{
	return owner == 0 || (trusted_set && owner == trusted);
}

/* A directory is trusted if its owner is, and no one else can write it (sticky root dirs ok). */
static int dir_ok(const struct stat *st, uid_t trusted, int trusted_set)
{
	if (!S_ISDIR(st->st_mode) || !owner_ok(st->st_uid, trusted, trusted_set))
		return 0;
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return st->st_uid == 0 && (st->st_mode & S_ISVTX);
	return 1;
}

/*
 * Ancestors the walk checks at most; a deeper chain is refused.  Path length does not bound
 * the depth: a relative path starts from a working directory of any depth, and every symlink
 * in a path adds up to PATH_MAX more.  The bound keeps the walk's cost (three system calls a
 * level) bounded for a chain someone made arbitrarily deep; no real state path comes near it.
 */
#define MAX_DEPTH 4096

/*
 * Walk from an open directory up to "/" through "..", checking each.  Working on descriptors,
 * not names, checks exactly the directories the file is opened through: a symlink swapped in
 * a name between a check and the open cannot redirect us.  A chain deeper than MAX_DEPTH is
 * refused (-EPERM): its unchecked ancestors could be anyone's, and stopping early used to
 * accept it.
 */
static int chain_ok(int dfd, uid_t trusted_uid, int trusted_uid_set)
{
	struct stat st, root;
	int fd = dup(dfd), ret = 0;

	if (fd < 0)
		return -errno;
	if (stat("/", &root)) {
		close(fd);
		return -errno;
	}
	for (int depth = 0;; depth++) {
		int up;

		if (fstat(fd, &st)) {
			ret = -errno;
			break;
		}
		if (!dir_ok(&st, trusted_uid, trusted_uid_set)) {
			ret = -EPERM;
			break;
		}
		if (st.st_dev == root.st_dev && st.st_ino == root.st_ino)
			break;
		if (depth >= MAX_DEPTH) {
			ret = -EPERM;
			break;
		}
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0) {
			ret = -errno;
			break;
		}
		close(fd);
		fd = up;
		/* ".." of a directory that is its own parent: the top (say, after a chroot). */
		{
			struct stat parent;

			if (fstat(fd, &parent) == 0 && parent.st_dev == st.st_dev &&
			    parent.st_ino == st.st_ino)
				break;
		}
	}
	close(fd);
	return ret;
}

int bd_open_dir(const char *path, int *dfd_out, const char **base_out)
{
	char dir[PATH_MAX];
	const char *base;
	char *slash;
	int dfd;

	if (!path || !*path || strlen(path) >= sizeof(dir))
		return -EINVAL;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir) {
		base = path + 1;
		snprintf(dir, sizeof(dir), "/");
	} else if (slash) {
		*slash = 0;
		base = path + (slash - dir) + 1;
	} else {
		base = path;
		snprintf(dir, sizeof(dir), ".");
	}
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return -EINVAL;
	/* Open the directory once; everything below is checked through this descriptor. */
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC); /* search, not read, permission */
	if (dfd < 0)
		return -errno;
	*dfd_out = dfd;
	*base_out = base;
	return 0;
}

int bd_open_trusted_dir(const char *path, uid_t trusted_uid, int trusted_uid_set, int *dfd_out,
			const char **base_out)
{
	const char *base;
	int dfd, ret;

	ret = bd_open_dir(path, &dfd, &base);
	if (ret)
		return ret;
	ret = chain_ok(dfd, trusted_uid, trusted_uid_set);
	if (ret) {
		close(dfd);
		return ret;
	}
	*dfd_out = dfd;
	*base_out = base;
	return 0;
}

int bd_owner_trusted(uid_t owner, uid_t trusted_uid, int trusted_uid_set)
{
	return owner_ok(owner, trusted_uid, trusted_uid_set);
}

/*
 * Open the file base in dfd, which this closes: never through a symlink (-EPERM), never
 * blocking (a FIFO planted at the path would hang the open).  The fd, or -errno.
 */
static int open_leaf(int dfd, const char *base)
{
	int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int err = errno;

	close(dfd);
	if (fd < 0)
		return err == ELOOP ? -EPERM : -err;
	return fd;
}

int bd_open_trusted(const char *path, uid_t trusted_uid, int trusted_uid_set, int *fd_out)
{
	const char *base;
	struct stat st;
	int dfd, fd, ret;

	ret = bd_open_trusted_dir(path, trusted_uid, trusted_uid_set, &dfd, &base);
	if (ret)
		return ret;
	/* The file itself, checked on the open descriptor, not the name. */
	fd = open_leaf(dfd, base);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    !owner_ok(st.st_uid, trusted_uid, trusted_uid_set) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EPERM;
	}
	*fd_out = fd;
	return 0;
}

/* The uid the kernel shows for owners unmapped in our user namespace (usually 65534). */
static uid_t overflow_uid(void)
{
	char buf[32];
	ssize_t n;
	int fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 65534;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 65534;
	buf[n] = 0;
	return (uid_t)strtoul(buf, NULL, 10);
}

/*
 * Does this process run in a user namespace other than the initial one?  The initial one's
 * uid_map is the identity of every uid; without /proc we cannot tell, and say no.
 */
static bool in_user_ns(void)
{
	char buf[128];
	unsigned long inner, outer, count;
	ssize_t n;
	int used = 0, fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	if (sscanf(buf, "%lu %lu %lu %n", &inner, &outer, &count, &used) == 3 && !buf[used] &&
	    inner == 0 && outer == 0 && count == 4294967295UL)
		return false;
	return true;
}

int bd_open_relayed(const char *path, int *fd_out)
{
	const char *base;
	struct stat st;
	int dfd, fd, ret;

	/*
	 * On the host every owner has a name, and the overflow uid is nobody's own: a file of
	 * nobody's is nobody's, refused as any other owner's, and no socket beside it is tried.
	 */
	if (!in_user_ns())
		return -EPERM;
	ret = bd_open_dir(path, &dfd, &base);
	if (ret)
		return ret;
	fd = open_leaf(dfd, base);
	if (fd < 0)
		return fd;
	/*
	 * Only an owner our user namespace cannot name (the daemon's root, unmapped): any other
	 * refusal of the walk stands as it was, and the file still proves nothing until the
	 * anchor names it (the caller).
	 */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != overflow_uid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EPERM;
	}
	*fd_out = fd;
	return 0;
}
