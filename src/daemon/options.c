// SPDX-License-Identifier: MIT
#include "options.h"
#include "parse_u64.h"

#include <barrierd.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

const char *const barrierd_default_tracepoints[] = {
    "irq/softirq_entry",
    "irq_vectors/local_timer_entry",
    "sched/sched_switch",
    NULL,
};

static const char usage[] =
    "Usage: barrierd [OPTION]... [PATH [TRACEPOINT_ID]...]\n"
    "Publish per-CPU serialising-event times for asymmetric memory barriers.\n"
    "\n"
    "  -s, --state PATH          state file (default " BARRIERD_DEFAULT_STATE_PATH ")\n"
    "  -t, --tracepoint CAT/NAME evidence tracepoint; repeat for several (default:\n"
    "                            irq/softirq_entry, irq_vectors/local_timer_entry,\n"
    "                            sched/sched_switch).  sched/sched_switch is always\n"
    "                            attached to track idle CPUs; it stamps only if listed\n"
    "      --idle-credit-interval MS\n"
    "                            while someone waits, credit an idle CPU once it has\n"
    "                            held the global value back this long, for clients\n"
    "                            that cannot ring the doorbell (default 10)\n"
    "      --heartbeat-period MS heartbeat period published in the file (default 100)\n"
    "      --max-credit-rate N   at most N idle/offline credit passes per second\n"
    "                            sustained (bursts of up to 32 run at once), the bound\n"
    "                            on the daemon's work under a doorbell flood\n"
    "                            (default 1000)\n"
    "      --always-armed        follow for good: every CPU signals its next event\n"
    "                            after each pass, as if a client that cannot ring\n"
    "                            always waited (default: only while one is seen;\n"
    "                            library clients ring, which costs one signal per\n"
    "                            lagging CPU)\n"
    "      --nudge-after MS      when a barrier has waited this long, nudge each busy CPU\n"
    "                            that still lags it and someone waits for: wake a\n"
    "                            real-time thread of ours pinned there, whose switch-in\n"
    "                            is its event; fractions such as 0.5 allowed, 0 turns\n"
    "                            nudges off (default 10: a ticking CPU's own tick comes\n"
    "                            first, so only tickless CPUs are nudged)\n"
    "      --max-nudge-rate N    at most N nudges per second per CPU sustained (bursts\n"
    "                            of up to 4), the bound on what rings can make the\n"
    "                            daemon interrupt (default 200)\n"
    "      --slot-socket-mode MODE\n"
    "                            the octal mode of the socket beside the state file\n"
    "                            (PATH.sock) that hands clients the frozen slots, so\n"
    "                            that they credit idle CPUs without a round trip;\n"
    "                            'off' serves none (default 0666: anyone who can\n"
    "                            read the state file)\n"
    "  -v, --verbose             log what is attached and every update\n"
    "      --check               check what a start with these options needs, then exit:\n"
    "                            the kernel, BTF, each tracepoint (in tracefs and BTF),\n"
    "                            privileges (a BPF program loaded, never attached), the\n"
    "                            state file's directory and lock; one line per check.\n"
    "                            Nothing is attached, created or mounted, and the state\n"
    "                            file is not opened\n"
    "  -h, --help                show this help and exit\n"
    "  -V, --version             show the version and exit\n"
    "\n"
    "The original command line, barrierd PATH ID..., is accepted too: PATH is the state\n"
    "file and each ID a tracefs event id (events/CAT/NAME/id).\n"
    "\n"
    "SIGTERM, SIGINT and SIGHUP stop the daemon; the file stays, marked stopped.\n"
    "\n"
    "Exit status:\n"
    "  0    stopped by SIGTERM, SIGINT or SIGHUP; --help, --version; --check: every\n"
    "       check passed\n"
    "  1    the start failed, or an error stopped the daemon (the log names it);\n"
    "       --check: a check failed (the lines marked FAIL say why)\n"
    "  64   usage error (a bad option or value), with or without --check\n"
    "  70   the sandbox trapped a forbidden system call, or a SIGBUS not on the\n"
    "       state file came\n"
    "  74   the state file was truncated under the daemon\n"
    "\n"
    "Manual: barrierd(8).\n";

/*
 * An argument as an error message quotes it: control characters as \xNN, so that the reason
 * stays one line (the daemon logs it as one line with a priority prefix) and shows what was
 * typed.  Cut to fit buf.
 */
static const char *shown(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 5 < len; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x20 || ch == 0x7f)
			n += (size_t)snprintf(buf + n, len - n, "\\x%02x", ch);
		else
			buf[n++] = (char)ch;
	}
	buf[n] = 0;
	return buf;
}

/* A number option's value, or a message naming the option, its range and the bad value. */
static int parse_num(const char *opt, const char *unit, const char *arg, uint64_t min, uint64_t max,
		     uint64_t *v, char *err, size_t errlen)
{
	char b[128];

	if (parse_u64(arg, min, max, v) == 0)
		return 0;
	snprintf(err, errlen, "%s takes %s from %llu to %llu, not '%s'", opt, unit,
		 (unsigned long long)min, (unsigned long long)max, shown(arg, b, sizeof(b)));
	return -EINVAL;
}

/*
 * Milliseconds with up to six decimals (microsecond resolution is what --nudge-after needs,
 * and what no float rounding may change), as nanoseconds.
 */
static int parse_ms(const char *s, uint64_t max_ms, uint64_t *ns)
{
	uint64_t ms = 0, frac = 0, scale = 1000000;
	const char *p = s;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		ms = ms * 10 + (uint64_t)(*p - '0');
		if (ms > max_ms)
			return -EINVAL;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (scale == 1)
				return -EINVAL; /* finer than a nanosecond */
			scale /= 10;
			frac += (uint64_t)(*p - '0') * scale;
		}
	}
	if (*p || ms * 1000000ULL + frac > max_ms * 1000000ULL)
		return -EINVAL;
	*ns = ms * 1000000ULL + frac;
	return 0;
}

static int add_tp(struct barrierd_options *o, const char *name, long id, char *err, size_t errlen)
{
	struct tp_spec *t;
	char b[160];

	if (o->n_tps >= BARRIERD_MAX_TRACEPOINTS) {
		snprintf(err, errlen, "too many tracepoints (at most %d)",
			 BARRIERD_MAX_TRACEPOINTS);
		return -EINVAL;
	}
	t = &o->tps[o->n_tps];
	t->id = id;
	t->name[0] = 0;
	if (name) {
		const char *slash = strchr(name, '/');

		if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/') ||
		    strlen(name) >= sizeof(t->name)) {
			snprintf(err, errlen, "bad tracepoint '%s': expected CATEGORY/NAME",
				 shown(name, b, sizeof(b)));
			return -EINVAL;
		}
		for (const char *p = name; *p; p++) {
			if (!(*p == '_' || *p == '/' || (*p >= 'a' && *p <= 'z') ||
			      (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) {
				snprintf(err, errlen, "bad tracepoint '%s': unexpected character",
					 shown(name, b, sizeof(b)));
				return -EINVAL;
			}
		}
		snprintf(t->name, sizeof(t->name), "%s", name);
	}
	o->n_tps++;
	return 0;
}

int options_parse(struct barrierd_options *o, int argc, char **argv, FILE *out, char *err,
		  size_t errlen)
{
	enum {
		OPT_IDLE = 256,
		OPT_HB,
		OPT_RATE,
		OPT_ARMED,
		OPT_NUDGE,
		OPT_NUDGE_RATE,
		OPT_SOCK,
		OPT_CHECK,
	};
	static const struct option longopts[] = {
	    {"state", required_argument, NULL, 's'},
	    {"tracepoint", required_argument, NULL, 't'},
	    {"idle-credit-interval", required_argument, NULL, OPT_IDLE},
	    {"heartbeat-period", required_argument, NULL, OPT_HB},
	    {"max-credit-rate", required_argument, NULL, OPT_RATE},
	    {"always-armed", no_argument, NULL, OPT_ARMED},
	    {"nudge-after", required_argument, NULL, OPT_NUDGE},
	    {"max-nudge-rate", required_argument, NULL, OPT_NUDGE_RATE},
	    {"slot-socket-mode", required_argument, NULL, OPT_SOCK},
	    {"verbose", no_argument, NULL, 'v'},
	    {"check", no_argument, NULL, OPT_CHECK},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {0},
	};
	uint64_t v;
	int c, at;
	char b[128];

	memset(o, 0, sizeof(*o));
	o->idle_credit_interval_ns = 10 * 1000000ULL;
	o->heartbeat_period_ns = 100 * 1000000ULL;
	o->max_credit_rate = 1000;
	o->nudge_after_ns = 10 * 1000000ULL;
	o->max_nudge_rate = 200;
	o->slot_socket_mode = 0666;
	err[0] = 0;

	optind = 0; /* full reset of getopt's state: tests parse several times */
	opterr = 0;
	/*
	 * at: the element getopt works on (optind before the call; 0 is its reset, meaning 1).
	 * An error names that element if it is a long option, else the one short option refused:
	 * inside a cluster ("-xv") optind has not moved on, and argv[optind - 1] is the element
	 * before it (the program's name for the first).
	 */
	while ((at = optind ? optind : 1),
	       (c = getopt_long(argc, argv, "+:s:t:vhV", longopts, NULL)) != -1) {
		char opt[3] = {'-', (char)optopt, 0};
		const char *named = strncmp(argv[at], "--", 2) == 0 ? argv[at] : opt;

		switch (c) {
		case 's':
			if (!*optarg) {
				snprintf(err, errlen, "--state needs a path");
				return -EINVAL;
			}
			o->state_path = optarg;
			break;
		case 't':
			if (add_tp(o, optarg, -1, err, errlen))
				return -EINVAL;
			break;
		case OPT_IDLE:
			if (parse_num("--idle-credit-interval", "milliseconds", optarg, 1, 60000,
				      &v, err, errlen))
				return -EINVAL;
			o->idle_credit_interval_ns = v * 1000000ULL;
			break;
		case OPT_HB:
			if (parse_num("--heartbeat-period", "milliseconds", optarg, 10, 60000, &v,
				      err, errlen))
				return -EINVAL;
			o->heartbeat_period_ns = v * 1000000ULL;
			break;
		case OPT_RATE:
			if (parse_num("--max-credit-rate", "a number", optarg, 1, 1000000, &v, err,
				      errlen))
				return -EINVAL;
			o->max_credit_rate = v;
			break;
		case OPT_ARMED:
			o->always_armed = true;
			break;
		case OPT_NUDGE:
			if (parse_ms(optarg, 60000, &o->nudge_after_ns)) {
				snprintf(
				    err, errlen,
				    "--nudge-after takes milliseconds from 0 to 60000 (up to six "
				    "decimals, 0: off), not '%s'",
				    shown(optarg, b, sizeof(b)));
				return -EINVAL;
			}
			break;
		case OPT_NUDGE_RATE:
			if (parse_num("--max-nudge-rate", "a number", optarg, 1, 100000, &v, err,
				      errlen))
				return -EINVAL;
			o->max_nudge_rate = v;
			break;
		case OPT_SOCK: {
			char *end;
			long m;

			if (!strcmp(optarg, "off")) {
				o->slot_socket_mode = -1;
				break;
			}
			errno = 0;
			m = strtol(optarg, &end, 8);
			if (errno || !*optarg || *end || *optarg == '-' || m < 0 || m > 0777) {
				snprintf(
				    err, errlen,
				    "--slot-socket-mode takes an octal mode from 0 to 0777, or "
				    "'off', not '%s'",
				    shown(optarg, b, sizeof(b)));
				return -EINVAL;
			}
			o->slot_socket_mode = (int)m;
			break;
		}
		case 'v':
			o->verbose = true;
			break;
		case OPT_CHECK:
			o->check = true;
			break;
		case 'h':
			fputs(usage, out);
			return OPTIONS_EXIT_OK;
		case 'V':
			fprintf(out, "barrierd %s\n", BARRIERD_VERSION);
			return OPTIONS_EXIT_OK;
		case ':':
			snprintf(err, errlen, "option '%s' needs an argument",
				 shown(named, b, sizeof(b)));
			return -EINVAL;
		default:
			snprintf(err, errlen, "unknown option '%s' (see --help)",
				 shown(named, b, sizeof(b)));
			return -EINVAL;
		}
	}

	/* The original command line: PATH [ID]... */
	if (optind < argc) {
		if (o->state_path) {
			snprintf(err, errlen, "state path given twice ('%s' and --state)",
				 shown(argv[optind], b, sizeof(b)));
			return -EINVAL;
		}
		if (!*argv[optind]) {
			snprintf(err, errlen, "empty state path");
			return -EINVAL;
		}
		o->state_path = argv[optind++];
		for (; optind < argc; optind++) {
			char *end;
			long id;

			errno = 0;
			id = strtol(argv[optind], &end, 10);
			if (errno || *end || end == argv[optind] || id < 0) {
				snprintf(err, errlen,
					 "bad tracepoint id '%s': the original command line takes "
					 "numeric tracefs ids (use --tracepoint for names)",
					 shown(argv[optind], b, sizeof(b)));
				return -EINVAL;
			}
			if (add_tp(o, NULL, id, err, errlen))
				return -EINVAL;
		}
	}

	if (!o->state_path)
		o->state_path = BARRIERD_DEFAULT_STATE_PATH;
	if (o->n_tps == 0)
		for (const char *const *d = barrierd_default_tracepoints; *d; d++)
			add_tp(o, *d, -1, err, errlen);
	return OPTIONS_RUN;
}
