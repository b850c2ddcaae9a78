// SPDX-License-Identifier: MIT
/*
 * barrierctl: the command line, parsed and dispatched to the command's own file (status.c,
 * watch.c, wait.c, bench.c, metrics.c).
 * docs/barrierctl.8 is the reference; the usage text below must agree with it (a test
 * compares their options, exit codes and JSON field names).
 */
#include "barrierctl.h"
#include "barrier_method.h"
#include "parse_u64.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "Usage: barrierctl COMMAND [OPTION]...\n"
    "Inspect and exercise barrierd, the asymmetric memory barrier service.\n"
    "\n"
    "Commands:\n"
    "  status    daemon liveness, then one row per CPU: lag, vtime lag, state, credits\n"
    "  watch     the status, refreshed in place until SIGINT or SIGTERM\n"
    "  wait      one barrier from a fenced stamp; prints its latency\n"
    "  bench     latency distribution and IPIs per call of barrier methods\n"
    "  metrics   the daemon's counters and gauges in the OpenMetrics text format\n"
    "  help      show this help and exit (as do -h, --help and COMMAND --help)\n"
    "\n"
    "Options of every command:\n"
    "  -s, --state PATH        state file (default: $BARRIERD_STATE, then\n"
    "                          " BARRIERD_DEFAULT_STATE_PATH ")\n"
    "      --trusted-uid UID   also trust a state file and directories owned by UID\n"
    "                          (root is always trusted)\n"
    "  -h, --help              show this help and exit\n"
    "  -V, --version           show the version and exit\n"
    "\n"
    "status:\n"
    "      --json              print one JSON object instead of the table\n"
    "      --lag-threshold MS  a busy or unknown CPU whose lag (now - its value, after\n"
    "                          asking the daemon for a fresh pass) is more than MS\n"
    "                          milliseconds is lagging (default 50)\n"
    "watch:\n"
    "      --interval MS       refresh every MS milliseconds (default 1000)\n"
    "      --count N           stop after N refreshes (default: until a signal)\n"
    "      --lag-threshold MS  as for status\n"
    "wait:\n"
    "      --timeout MS        give up after MS milliseconds (default 5000)\n"
    "bench:\n"
    "  -n N                    calls per method (default 200)\n"
    "  -m, --method M          measure method M; repeat it or give a comma-separated\n"
    "                          list (all: every one; default: all but direct and file):\n"
    "                          barrierd, vtime, membarrier-global, private-expedited,\n"
    "                          mprotect, global-expedited, direct, file\n"
    "      --load              run a nice-19 spinner process on every CPU during the run\n"
    "      --gap MS            sleep a random 0 to MS milliseconds before every call, so\n"
    "                          that no call follows another's IPIs or the tick phase of the\n"
    "                          previous call (0 to 10000; default 10; 0: back to back)\n"
    "      --csv FILE          write one row per call to FILE\n"
    "      --cpu N             call from CPU N (default: the CPU it starts on); the\n"
    "                          sibling threads still use every other allowed CPU\n"
    "metrics:\n"
    "      --output FILE       write FILE through a temporary file renamed over it,\n"
    "                          instead of stdout (for node_exporter's textfile collector)\n"
    "      --lag-threshold MS  as for status\n"
    "\n"
    "Exit status:\n"
    "  0    success; for status and watch, healthy; for metrics, a live daemon's\n"
    "       metrics were written\n"
    "  1    status, watch: degraded, a busy CPU is lagging (not LSB's \"dead, pid\n"
    "       file exists\"); wait, bench: a barrier or method failed; metrics: the\n"
    "       output could not be written\n"
    "  2    wait: timed out\n"
    "  3    the daemon is not running: stopped flag, no running flag, or no heartbeat\n"
    "       for more than 3 periods (metrics writes barrierd_up 0 alone)\n"
    "  4    the state file is missing, unusable or untrusted (metrics writes\n"
    "       barrierd_up 0 alone; status --json prints {schema_version path error\n"
    "       exit_code})\n"
    "  64   usage error\n"
    "  130  bench: interrupted by SIGINT (143: by SIGTERM)\n"
    "\n"
    "JSON fields (status --json; docs/barrierctl.8 describes each, and\n"
    "docs/status.schema.json the shape):\n"
    "  schema_version path health exit_code now_ns lag_threshold_ms abi_major abi_minor ncpu "
    "vtime\n"
    "  last_interrupt_ns last_interrupt_age_ms last_interrupt_vtime flags boot_id\n"
    "  daemon{live running stopped armed pid generation heartbeat_ns\n"
    "  heartbeat_age_ms heartbeat_period_ms} last_advance{ns age_ms cause cpu}\n"
    "  passes credit_passes doorbell_rings nudges lagging_cpus cpus[]{cpu state lagging\n"
    "  last_interrupt_ns lag_ms behind_ms last_interrupt_vtime vtime_lag credit_event\n"
    "  credit_idle credit_offline nohz_full isolated nudge}\n";

/* A number option's value, or a message naming the option, the range and the bad value. */
static int parse_num(const char *cmd, const char *opt, const char *unit, const char *arg,
		     uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	if (parse_u64(arg, min, max, out) == 0)
		return 0;
	snprintf(err, errlen, "%s: %s takes %s from %llu to %llu, not '%s'", cmd, opt, unit,
		 (unsigned long long)min, (unsigned long long)max, arg);
	return -EINVAL;
}

/* A comma-separated list of method names; an empty item ("a,,b", "a,") is an error. */
static int parse_methods(const char *arg, unsigned *mask)
{
	for (const char *p = arg;; p++) {
		size_t len = strcspn(p, ",");
		int m = barrier_method_lookup(p, len);

		if (len == 3 && strncmp(p, "all", 3) == 0)
			*mask |= (1u << BM_COUNT) - 1;
		else if (m >= 0)
			*mask |= 1u << m;
		else
			return -EINVAL;
		p += len;
		if (!*p)
			return 0;
	}
}

enum cmd { CMD_STATUS, CMD_WATCH, CMD_WAIT, CMD_BENCH, CMD_METRICS, CMD_COUNT };
static const char *const cmd_names[CMD_COUNT] = {"status", "watch", "wait", "bench", "metrics"};

enum opt_id {
	OPT_STATE = 's',
	OPT_HELP = 'h',
	OPT_VERSION = 'V',
	OPT_N = 'n',
	OPT_METHOD = 'm',
	OPT_TRUSTED_UID = 256,
	OPT_JSON,
	OPT_LAG,
	OPT_INTERVAL,
	OPT_COUNT,
	OPT_TIMEOUT,
	OPT_LOAD,
	OPT_CSV,
	OPT_GAP,
	OPT_CPU,
	OPT_OUTPUT,
};

#define C(x) (1u << CMD_##x)
#define ALL_CMDS (C(STATUS) | C(WATCH) | C(WAIT) | C(BENCH) | C(METRICS))

/* Which commands take which option: one table, so a misplaced option gets a clear message. */
static const struct {
	int id;
	unsigned cmds;
} opt_scope[] = {
    {OPT_STATE, ALL_CMDS},    {OPT_TRUSTED_UID, ALL_CMDS},
    {OPT_HELP, ALL_CMDS},     {OPT_VERSION, ALL_CMDS},
    {OPT_JSON, C(STATUS)},    {OPT_LAG, C(STATUS) | C(WATCH) | C(METRICS)},
    {OPT_INTERVAL, C(WATCH)}, {OPT_COUNT, C(WATCH)},
    {OPT_TIMEOUT, C(WAIT)},   {OPT_N, C(BENCH)},
    {OPT_METHOD, C(BENCH)},   {OPT_LOAD, C(BENCH)},
    {OPT_CSV, C(BENCH)},      {OPT_GAP, C(BENCH)},
    {OPT_CPU, C(BENCH)},      {OPT_OUTPUT, C(METRICS)},
};

static int opt_allowed(int id, enum cmd cmd)
{
	for (size_t i = 0; i < sizeof(opt_scope) / sizeof(opt_scope[0]); i++)
		if (opt_scope[i].id == id)
			return (opt_scope[i].cmds >> cmd) & 1;
	return 0;
}

#define PARSE_HELP 1

/*
 * Parse one command's options (argv[0] is the command).  0, PARSE_HELP when --help or
 * --version printed something, or -EINVAL with a message in err.
 */
static int parse_opts(enum cmd cmd, int argc, char **argv, struct bctl_opts *o, char *err,
		      size_t errlen)
{
	static const struct option longopts[] = {
	    {"state", required_argument, NULL, OPT_STATE},
	    {"trusted-uid", required_argument, NULL, OPT_TRUSTED_UID},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"version", no_argument, NULL, OPT_VERSION},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"lag-threshold", required_argument, NULL, OPT_LAG},
	    {"interval", required_argument, NULL, OPT_INTERVAL},
	    {"count", required_argument, NULL, OPT_COUNT},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"method", required_argument, NULL, OPT_METHOD},
	    {"load", no_argument, NULL, OPT_LOAD},
	    {"csv", required_argument, NULL, OPT_CSV},
	    {"gap", required_argument, NULL, OPT_GAP},
	    {"cpu", required_argument, NULL, OPT_CPU},
	    {"output", required_argument, NULL, OPT_OUTPUT},
	    {0},
	};
	uint64_t v;
	int c, li;

	memset(o, 0, sizeof(*o));
	o->lag_threshold_ns = 50 * BCTL_MS;
	o->timeout_ns = 5000 * (int64_t)BCTL_MS;
	o->interval_ns = 1000 * BCTL_MS;
	o->rounds = 200;
	o->gap_ns = 10 * BCTL_MS;
	o->cpu = -1;

	optind = 0; /* glibc: a full reset of getopt's state */
	opterr = 0;
	for (;;) {
		li = -1;
		c = getopt_long(argc, argv, ":s:hVn:m:", longopts, &li);
		if (c == -1)
			break;
		if (c == ':') {
			/* A missing value can only be at the end: the last word is the option. */
			snprintf(err, errlen, "%s: option '%s' needs a value", cmd_names[cmd],
				 argv[optind - 1]);
			return -EINVAL;
		}
		if (c == '?') {
			/* A bad short option may sit in a cluster ("-qx"): name the letter. */
			if (optopt > 0 && optopt < 256)
				snprintf(err, errlen, "%s: unknown option '-%c' (see --help)",
					 cmd_names[cmd], optopt);
			else
				snprintf(err, errlen, "%s: unknown option '%s' (see --help)",
					 cmd_names[cmd], argv[optind - 1]);
			return -EINVAL;
		}
		if (!opt_allowed(c, cmd)) {
			/* Not argv[optind - 1]: after "--timeout 5" that is the value. */
			if (li >= 0)
				snprintf(err, errlen,
					 "%s: option '--%s' does not apply to this command",
					 cmd_names[cmd], longopts[li].name);
			else
				snprintf(err, errlen,
					 "%s: option '-%c' does not apply to this command",
					 cmd_names[cmd], c);
			return -EINVAL;
		}
		switch (c) {
		case OPT_STATE:
			if (!*optarg) {
				snprintf(err, errlen, "%s: --state needs a path", cmd_names[cmd]);
				return -EINVAL;
			}
			o->state = optarg;
			break;
		case OPT_TRUSTED_UID:
			/* (uid_t)-1 means "no uid" to the kernel: never trust it. */
			if (parse_u64(optarg, 0, (uid_t)-2, &v)) {
				snprintf(err, errlen,
					 "%s: --trusted-uid takes a numeric uid, not '%s'",
					 cmd_names[cmd], optarg);
				return -EINVAL;
			}
			o->trusted_uid_set = true;
			o->trusted_uid = (uid_t)v;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return PARSE_HELP;
		case OPT_VERSION:
			printf("barrierctl %s\n", BARRIERD_VERSION);
			return PARSE_HELP;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_LAG:
			if (parse_num(cmd_names[cmd], "--lag-threshold", "milliseconds", optarg, 1,
				      3600000, &v, err, errlen))
				return -EINVAL;
			o->lag_threshold_ns = v * BCTL_MS;
			break;
		case OPT_INTERVAL:
			if (parse_num(cmd_names[cmd], "--interval", "milliseconds", optarg, 10,
				      3600000, &v, err, errlen))
				return -EINVAL;
			o->interval_ns = v * BCTL_MS;
			break;
		case OPT_COUNT:
			if (parse_num(cmd_names[cmd], "--count", "a number", optarg, 1, 1000000000,
				      &v, err, errlen))
				return -EINVAL;
			o->count = v;
			break;
		case OPT_TIMEOUT:
			if (parse_num(cmd_names[cmd], "--timeout", "milliseconds", optarg, 1,
				      86400000, &v, err, errlen))
				return -EINVAL;
			o->timeout_ns = (int64_t)(v * BCTL_MS);
			break;
		case OPT_N:
			if (parse_num(cmd_names[cmd], "-n", "a number of calls", optarg, 1, 1000000,
				      &v, err, errlen))
				return -EINVAL;
			o->rounds = v;
			break;
		case OPT_METHOD:
			if (parse_methods(optarg, &o->methods)) {
				snprintf(err, errlen,
					 "%s: unknown method '%s' (barrierd, vtime, "
					 "membarrier-global, private-expedited, mprotect, "
					 "global-expedited, direct, file, all)",
					 cmd_names[cmd], optarg);
				return -EINVAL;
			}
			break;
		case OPT_LOAD:
			o->load = true;
			break;
		case OPT_GAP:
			if (parse_num(cmd_names[cmd], "--gap", "milliseconds", optarg, 0, 10000, &v,
				      err, errlen))
				return -EINVAL;
			o->gap_ns = v * BCTL_MS;
			break;
		case OPT_CPU:
			if (parse_num(cmd_names[cmd], "--cpu", "a CPU number", optarg, 0,
				      CPU_SETSIZE - 1, &v, err, errlen))
				return -EINVAL;
			o->cpu = (int)v;
			break;
		case OPT_CSV:
		case OPT_OUTPUT:
			if (!*optarg) {
				snprintf(err, errlen, "%s: --%s needs a file name", cmd_names[cmd],
					 longopts[li].name);
				return -EINVAL;
			}
			*(c == OPT_CSV ? &o->csv : &o->output) = optarg;
			break;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "%s: unexpected argument '%s' (see --help)", cmd_names[cmd],
			 argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bctl_opts o;
	char err[512];
	int cmd = -1, ret;

	if (argc < 2) {
		fprintf(stderr,
			"barrierctl: no command given (status, watch, wait, bench, metrics; see "
			"--help)\n");
		return BCTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		if (argc > 2) {
			fprintf(stderr, "barrierctl: unexpected argument '%s' after %s\n", argv[2],
				argv[1]);
			return BCTL_EXIT_USAGE;
		}
		fputs(usage_text, stdout);
		return BCTL_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("barrierctl %s\n", BARRIERD_VERSION);
		return BCTL_EXIT_OK;
	}
	for (int i = 0; i < CMD_COUNT; i++)
		if (!strcmp(argv[1], cmd_names[i]))
			cmd = i;
	if (cmd < 0) {
		if (argv[1][0] == '-')
			fprintf(stderr,
				"barrierctl: options go after the command: barrierctl "
				"COMMAND [OPTION]... (got '%s' first; see --help)\n",
				argv[1]);
		else
			fprintf(stderr,
				"barrierctl: unknown command '%s' (status, watch, wait, bench, "
				"metrics; see "
				"--help)\n",
				argv[1]);
		return BCTL_EXIT_USAGE;
	}
	ret = parse_opts(cmd, argc - 1, argv + 1, &o, err, sizeof(err));
	if (ret == PARSE_HELP)
		return BCTL_EXIT_OK;
	if (ret) {
		fprintf(stderr, "barrierctl: %s\n", err);
		return BCTL_EXIT_USAGE;
	}
	switch (cmd) {
	case CMD_STATUS:
		return bctl_cmd_status(&o);
	case CMD_WATCH:
		return bctl_cmd_watch(&o);
	case CMD_WAIT:
		return bctl_cmd_wait(&o);
	case CMD_METRICS:
		return bctl_cmd_metrics(&o);
	default:
		return bctl_cmd_bench(&o);
	}
}
