/* SPDX-License-Identifier: MIT */
/*
 * The daemon side of the sd_notify protocol, on a datagram socket connected to
 * $NOTIFY_SOCKET before the sandbox: libsystemd 252's sd_notify() opens a new socket for every
 * message, which the seccomp filter forbids after setup.
 */
#ifndef BARRIERD_NOTIFY_H
#define BARRIERD_NOTIFY_H

#include <stdint.h>

struct notifier {
	int fd;		      /* -1: not under a service manager */
	uint64_t watchdog_ns; /* $WATCHDOG_USEC for us, 0 if none; we ping every half of it */
};

/* Read $NOTIFY_SOCKET and $WATCHDOG_USEC and connect.  0 (also without a manager) or -errno. */
int notify_init(struct notifier *n);

/* Send one message ("READY=1", "STATUS=...").  Silently nothing without a manager. */
void notify_send(struct notifier *n, const char *msg);

void notify_close(struct notifier *n);

#endif
