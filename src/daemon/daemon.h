/* SPDX-License-Identifier: MIT */
/* The daemon: setup in the order the soundness rules need, then the main loop. */
#ifndef BARRIERD_DAEMON_H
#define BARRIERD_DAEMON_H

#include "options.h"

/* Returns the process exit status. */
int daemon_run(const struct barrierd_options *o);

#endif
