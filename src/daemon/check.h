/* SPDX-License-Identifier: MIT */
/*
 * barrierd --check: what a start with these options would find, one line per check, without
 * attaching anything, mounting tracefs, creating a directory or a lock, or opening the state
 * file.
 */
#ifndef BARRIERD_CHECK_H
#define BARRIERD_CHECK_H

#include "options.h"

#include <stdio.h>

/* The exit status of a --check that found something a start would fail on. */
#define CHECK_EXIT_FAILED 1

/* Run every check, print a line for each and a summary to out.  0 or CHECK_EXIT_FAILED. */
int check_run(const struct barrierd_options *o, FILE *out);

#endif
