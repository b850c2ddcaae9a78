/* SPDX-License-Identifier: MIT */
/* Logging: one line per message on stderr (journald adds the time and the unit). */
#ifndef BARRIERD_LOG_H
#define BARRIERD_LOG_H

#include <stdbool.h>

extern bool log_verbose;

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
