// SPDX-License-Identifier: MIT
#include "notify.h"
#include "log.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

int notify_init(struct notifier *n)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len;
	uint64_t usec = 0;

	n->fd = -1;
	n->watchdog_ns = 0;
	/* sd_watchdog_enabled() only parses the environment (and checks WATCHDOG_PID). */
	if (sd_watchdog_enabled(0, &usec) > 0)
		n->watchdog_ns = usec * 1000;
	if (!path || !*path)
		return 0;
	if ((path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path)) {
		log_warn("ignoring NOTIFY_SOCKET '%s': not an absolute or abstract socket", path);
		return 0;
	}
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = 0; /* abstract namespace */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (n->fd < 0)
		return -errno;
	if (connect(n->fd, (struct sockaddr *)&sa, len)) {
		int e = errno;

		close(n->fd);
		n->fd = -1;
		log_warn("cannot connect to NOTIFY_SOCKET %s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

void notify_send(struct notifier *n, const char *msg)
{
	if (n->fd < 0)
		return;
	/* A full or gone manager must never block or stop the daemon. */
	if (send(n->fd, msg, strlen(msg), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("sd_notify '%s' failed: %s", msg, strerror(errno));
}

void notify_close(struct notifier *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}
