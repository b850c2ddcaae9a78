// SPDX-License-Identifier: MIT
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

bool log_verbose;

void log_msg(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* "<N>" is the sd-daemon priority prefix; journald strips it, a terminal shows it. */
	fprintf(stderr, "<%d>barrierd: %s\n", level, buf);
}
