/* SPDX-License-Identifier: MIT */
/*
 * Logging: one line per message on stderr (journald adds the time and the unit), with the
 * sd-daemon "<N>" priority prefix when stderr is the journal or not a terminal.
 */
#ifndef BARRIERD_LOG_H
#define BARRIERD_LOG_H

#include <stdbool.h>

extern bool log_verbose;

/*
 * Decide once whether lines carry the "<N>" prefix: when stderr is the journal
 * ($JOURNAL_STREAM names it) or anything but a terminal.  Call it before the sandbox, which
 * refuses the ioctl that isatty() makes; log_msg() calls it if nobody did.
 */
void log_init(void);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_LVL_ERR 3
#define LOG_LVL_WARN 4
#define LOG_LVL_INFO 6
#define LOG_LVL_DEBUG 7

#define log_err(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (log_verbose)                                                                   \
			log_msg(LOG_LVL_DEBUG, __VA_ARGS__);                                       \
	} while (0)

#endif
