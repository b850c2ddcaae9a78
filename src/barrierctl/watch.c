// SPDX-License-Identifier: MIT
/*
 * barrierctl watch: the status table (common.c), taken afresh and redrawn every --interval
 * until --count refreshes or SIGINT/SIGTERM.  The exit code is the health of the last
 * refresh.
 */
#include "barrierctl.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * On a terminal, redraw in place: cursor home, each line followed by "erase to end of line",
 * then "erase below", so a shorter table leaves no debris and nothing flickers.
 */
static void draw_in_place(const char *text, bool first)
{
	fputs(first ? "\033[H\033[2J" : "\033[H", stdout);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		fwrite(p, 1, len, stdout);
		fputs("\033[K\n", stdout);
		p += len + (nl ? 1 : 0);
	}
	fputs("\033[J", stdout);
}

int bctl_cmd_watch(const struct bctl_opts *o)
{
	bool tty = isatty(STDOUT_FILENO);
	sigset_t block, during_sleep;
	int code = BCTL_EXIT_OK;
	struct timespec ts = {
	    .tv_sec = (time_t)(o->interval_ns / BCTL_SEC),
	    .tv_nsec = (long)(o->interval_ns % BCTL_SEC),
	};

	/*
	 * SIGINT/SIGTERM stay blocked except inside ppoll(), which unblocks them atomically with
	 * going to sleep: a signal that arrives while a table is drawn ends the very next sleep
	 * instead of being lost between a check of the flag and the sleep.
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &block, &during_sleep) || bctl_catch_stop_signals()) {
		fprintf(stderr, "barrierctl: watch: cannot set up signal handling: %s\n",
			strerror(errno));
		return BCTL_EXIT_FAILED;
	}
	sigdelset(&during_sleep, SIGINT);
	sigdelset(&during_sleep, SIGTERM);

	for (uint64_t i = 0; !bctl_stop_signal; i++) {
		struct bctl_snapshot s;
		char *text = NULL;
		size_t len = 0;
		FILE *mem;

		/*
		 * Reopen at each refresh: the checks run again, and a file replaced by a new one
		 * is followed.  Only a file that is unusable from the start ends the watch.
		 */
		if (bctl_snapshot_fresh(o, "watch", &s, NULL, 0)) {
			if (i == 0)
				return BCTL_EXIT_UNUSABLE;
			code = BCTL_EXIT_UNUSABLE;
		} else {
			mem = open_memstream(&text, &len);
			if (!mem) {
				bctl_snapshot_free(&s);
				fprintf(stderr, "barrierctl: watch: %s\n", strerror(errno));
				return BCTL_EXIT_FAILED;
			}
			if (tty)
				fprintf(mem, "barrierctl watch: every %.0f ms, refresh %llu\n\n",
					(double)o->interval_ns / 1e6, (unsigned long long)i + 1);
			bctl_render_text(mem, &s, o->lag_threshold_ns);
			fclose(mem);
			code = bctl_health_exit_code(bctl_health(&s, o->lag_threshold_ns));
			bctl_snapshot_free(&s);
			if (tty) {
				draw_in_place(text, i == 0);
			} else {
				if (i > 0)
					fputc('\n', stdout);
				fputs(text, stdout);
			}
			free(text);
			if (fflush(stdout))
				return BCTL_EXIT_FAILED; /* the reader went away */
		}
		if (o->count && i + 1 >= o->count)
			break;
		if (ppoll(NULL, 0, &ts, &during_sleep) < 0 && errno != EINTR) {
			fprintf(stderr, "barrierctl: watch: ppoll: %s\n", strerror(errno));
			return BCTL_EXIT_FAILED;
		}
	}
	return code;
}
