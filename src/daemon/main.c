// SPDX-License-Identifier: MIT
/* barrierd: publishes per-CPU serialising-event times for asymmetric barriers. */
#include "check.h"
#include "daemon.h"
#include "log.h"
#include "options.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	struct barrierd_options o;
	char err[256];
	int ret = options_parse(&o, argc, argv, stdout, err, sizeof(err));

	if (ret == OPTIONS_EXIT_OK)
		return 0;
	if (ret < 0) {
		fprintf(stderr, "barrierd: %s\n", err);
		return 64; /* EX_USAGE */
	}
	log_verbose = o.verbose;
	log_init(); /* before the sandbox, which refuses isatty()'s ioctl */
	if (o.check)
		return check_run(&o, stdout);
	return daemon_run(&o);
}
