// SPDX-License-Identifier: MIT
#include "path_trust.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deeper than any real path (PATH_MAX allows 2048 one-letter levels): refuse, never assume. */
#define MAX_DEPTH 4096

static int owner_ok(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

int path_trust_dir_chain(int dfd, const char *dir, char *err, size_t errlen)
{
	struct stat st, up_st;
	int fd = dup(dfd), ret = 0;

	if (fd < 0)
		return -errno;
	for (int depth = 0;; depth++) {
		int up;

		if (depth > MAX_DEPTH) {
			snprintf(err, errlen, "refusing %s: more than %d directories above it", dir,
				 MAX_DEPTH);
			ret = -EPERM;
			break;
		}
		if (fstat(fd, &st)) {
			ret = -errno;
			snprintf(err, errlen, "cannot check the directories above %s: %m", dir);
			break;
		}
		/*
		 * Whoever can write a directory on the way can swap the state file or a
		 * directory below for one of their own: only root (or we) may, except in a
		 * root-owned sticky directory, where nobody can rename or remove our entries.
		 */
		if (!S_ISDIR(st.st_mode) || !owner_ok(st.st_uid) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
		     !(st.st_uid == 0 && (st.st_mode & S_ISVTX)))) {
			snprintf(err, errlen,
				 "refusing %s: a directory on its path (%d levels up) is owned by "
				 "uid %u with mode %04o; it must be root's and writable by no one "
				 "else (or root's and sticky)",
				 dir, depth, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			ret = -EPERM;
			break;
		}
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0) {
			ret = -errno;
			snprintf(err, errlen, "cannot check the directories above %s: %m", dir);
			break;
		}
		if (fstat(up, &up_st)) {
			ret = -errno;
			close(up);
			break;
		}
		close(fd);
		fd = up;
		/* Its own parent: the root (of this mount namespace or chroot). */
		if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino)
			break;
	}
	close(fd);
	return ret;
}

int path_trust_file(int fd, const char *what, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		int e = errno;

		snprintf(err, errlen, "cannot check %s %s: %m", what, path);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "refusing %s %s: not a regular file", what, path);
		return -EPERM;
	}
	if (!owner_ok(st.st_uid)) {
		snprintf(err, errlen,
			 "refusing %s %s: owned by uid %u, not by root (someone else created it)",
			 what, path, (unsigned)st.st_uid);
		return -EPERM;
	}
	/* A second name is a hard link to a file we would chmod and overwrite. */
	if (st.st_nlink != 1) {
		snprintf(err, errlen, "refusing %s %s: it has %lu hard links", what, path,
			 (unsigned long)st.st_nlink);
		return -EPERM;
	}
	return 0;
}
