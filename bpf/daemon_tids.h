/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The .bss table of daemon threads, shared by the BPF side and the daemon. */
#ifndef BARRIERD_DAEMON_TIDS_H
#define BARRIERD_DAEMON_TIDS_H

/* Most daemon threads whose events never signal the ring buffer. */
#define BARRIERD_MAX_DAEMON_TIDS 8

#endif
