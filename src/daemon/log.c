// SPDX-License-Identifier: MIT
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

bool log_verbose;

/* -1: not decided yet; then 0 or 1. */
static int prefix_mode = -1;

/*
 * systemd.exec(5): $JOURNAL_STREAM is "DEV:INODE" of the stream the service's stderr was
 * connected to.  It is inherited by whatever the service starts, so only a match with our
 * stderr says the journal is listening there.  INVOCATION_ID says nothing about where stderr
 * goes (StandardError=tty gives a service a terminal), so it is not used.
 */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	if (!js || sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) != 2 || fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(void)
{
	/*
	 * "<N>" is the sd-daemon priority prefix: journald and syslog-style readers of a pipe
	 * strip it and keep the level; on a terminal it is only noise.
	 */
	prefix_mode = stderr_is_journal() || !isatty(STDERR_FILENO);
}

void log_msg(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (prefix_mode < 0)
		log_init();
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (prefix_mode)
		fprintf(stderr, "<%d>barrierd: %s\n", level, buf);
	else
		fprintf(stderr, "barrierd: %s\n", buf);
}
