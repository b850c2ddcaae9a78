/* SPDX-License-Identifier: MIT */
/*
 * The sandbox after setup: no capabilities, no_new_privs, and a seccomp allow-list of the
 * steady state's system calls.  Capabilities and no_new_privs are per thread, so every thread
 * calls sandbox_drop_privileges() itself; the filter is synchronised to all threads (TSYNC).
 */
#ifndef BARRIERD_SANDBOX_H
#define BARRIERD_SANDBOX_H

#include <stdint.h>

/* Clear every capability set of the calling thread and set no_new_privs.  0 or -errno. */
int sandbox_drop_privileges(void);

/*
 * Install the filter on every thread.  A forbidden call raises SIGSYS in the offending thread;
 * its handler marks the state file stopped (flags_word), names the call on stderr and exits.
 */
int sandbox_install_filter(uint64_t *flags_word);

#endif
