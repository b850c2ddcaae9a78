/* SPDX-License-Identifier: MIT */
/*
 * Descriptor passing on the slot socket (docs/PROTOCOL.md §6.12): one fixed-size record and its
 * descriptors as one SCM_RIGHTS message.  The daemon sends, the library and the tests receive;
 * header-only, so the library links nothing of the daemon's.
 */
#ifndef BARRIERD_BD_SCM_H
#define BARRIERD_BD_SCM_H

#include <barrierd.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

/* The most descriptors one record carries: the slots map and its links. */
#define BD_SCM_MAX_FDS (1 + BARRIERD_SLOTS_MAX_LINKS)

/*
 * Send rec (len bytes) with nfds descriptors (at most BD_SCM_MAX_FDS).  Never blocks and never
 * raises SIGPIPE: 0, or -errno (-EMSGSIZE for a short send).
 */
static inline int bd_scm_send(int sock, const void *rec, size_t len, const int *fds, unsigned nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * BD_SCM_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {(void *)rec, len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
	struct cmsghdr *cm;
	ssize_t n;

	if (nfds == 0 || nfds > BD_SCM_MAX_FDS)
		return -EINVAL;
	memset(u.buf, 0, sizeof(u.buf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	n = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EMSGSIZE;
}

/*
 * Receive one record into rec (len bytes) and its descriptors (close-on-exec) into fds, at
 * most max of them; every further descriptor that arrived is closed here, so the caller owns
 * exactly *nfds.  The byte count read (0 at end of file), or -errno; -EPROTO when the record
 * or its control data were truncated (the descriptors kept are still the caller's to close).
 */
static inline ssize_t bd_scm_recv(int sock, void *rec, size_t len, int *fds, unsigned max,
				  unsigned *nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * BD_SCM_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {rec, len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	ssize_t n;

	*nfds = 0;
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
		return -EPROTO;
	return n;
}

#endif
