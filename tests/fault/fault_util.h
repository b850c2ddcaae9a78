/* SPDX-License-Identifier: MIT */
/*
 * fault_util.h - what the fault tests do to the daemon: stop it and know it is stopped, wait
 * for its heartbeat to go stale.  Every wait has a hang guard in seconds, never a timing goal.
 */
#ifndef BARRIERD_FAULT_UTIL_H
#define BARRIERD_FAULT_UTIL_H

#include "harness.h"

/*
 * SIGSTOP the daemon (our child) and wait until the whole thread group has stopped: waitpid's
 * WUNTRACED report comes only then, so no thread of it can publish after this returns.
 * 0, or -1 at the hang guard.
 */
static inline int f_sigstop(pid_t pid)
{
	int st;

	if (kill(pid, SIGSTOP))
		return -1;
	for (int i = 0; i < 500; i++) {
		pid_t r = waitpid(pid, &st, WUNTRACED | WNOHANG);

		if (r == pid && WIFSTOPPED(st))
			return 0;
		if (r == pid)
			return -1; /* it died */
		test_sleep_ms(10);
	}
	return -1;
}

/* Wait until the handle sees no live daemon (heartbeat three periods old).  0, or -1. */
static inline int f_wait_stale(const struct barrierd *b)
{
	for (int i = 0; i < 500; i++) {
		if (!barrierd_live(b))
			return 0;
		test_sleep_ms(10);
	}
	return -1;
}

/* Continue a daemon the test stopped, so that the teardown's SIGTERM reaches it. */
__attribute__((unused)) static int f_teardown(void **state)
{
	if (H.pid > 0)
		kill(H.pid, SIGCONT);
	return h_teardown(state);
}

#endif
