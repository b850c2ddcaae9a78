// SPDX-License-Identifier: MIT
/*
 * barrierctl against state files the test writes itself (no daemon, no root needed): every
 * exit code, JSON that parses, lag numbers, CPUs that must not be flagged, usage errors, the
 * agreement of --help with the man page, watch on a pipe and on a terminal, wait, and bench's
 * plumbing with the methods that need no daemon.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <sched.h>

#include "cli_run.h"
#include "fake_daemon.h"

#define MAN_PAGE BARRIERD_SOURCE_DIR "/docs/barrierctl.8"

static struct fake_daemon S;

static int setup(void **state)
{
	(void)state;
	return fake_create(&S, 4, FAKE_LABELLED) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	fake_destroy(&S);
	return 0;
}

/* The lag that the text table shows for one CPU, or -1. */
static double text_lag(const char *out, unsigned cpu, char *state, size_t state_len)
{
	for (const char *line = out; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned c;
		char st[32];
		double lag;

		if (sscanf(line, " %u %31s %lf", &c, st, &lag) == 3 && c == cpu) {
			if (state)
				snprintf(state, state_len, "%s", st);
			return lag;
		}
	}
	return -1;
}

/* The table's row for a CPU, as one line (in a static buffer). */
static const char *text_row(const char *out, unsigned cpu)
{
	static char row[256];

	for (const char *line = out; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned c;
		char st[32];
		double lag;

		if (sscanf(line, " %u %31s %lf", &c, st, &lag) == 3 && c == cpu) {
			size_t n = strcspn(line, "\n");

			snprintf(row, sizeof(row), "%.*s",
				 (int)(n < sizeof(row) ? n : sizeof(row) - 1), line);
			return row;
		}
	}
	return "";
}

/*
 * barrierctl status --json on d's file, with the default lag threshold or threshold_ms: it
 * exits with code, and the Python expression check holds of the JSON it printed.
 */
static void status_json(const struct fake_daemon *d, const char *threshold_ms, int code,
			const char *check)
{
	struct cli_result r;

	bctl(&r, "status", "--state", d->path, "--json", threshold_ms ? "--lag-threshold" : NULL,
	     threshold_ms, NULL);
	expect_code(&r, code);
	assert_int_equal(cli_json_check(d->dir, r.out, check), 0);
	cli_result_free(&r);
}

/* ---- usage ---- */

static void usage_errors(void **state)
{
	static const char *const cases[][6] = {
	    {NULL},
	    {"frobnicate", NULL},
	    {"--state", "/x", "status", NULL},
	    {"status", "--bogus", NULL},
	    {"status", "-q", NULL},
	    {"status", "--lag-threshold", NULL},
	    {"status", "--lag-threshold", "abc", NULL},
	    {"status", "--lag-threshold", "-5", NULL},
	    {"status", "--lag-threshold", "0", NULL},
	    {"status", "--lag-threshold", "12ms", NULL},
	    {"status", "--lag-threshold", " 7", NULL},
	    {"status", "--lag-threshold", "99999999999999999999999", NULL},
	    {"status", "extra", NULL},
	    {"status", "--timeout", "5", NULL},
	    {"status", "--state", "", NULL},
	    {"status", "--trusted-uid", "alice", NULL},
	    {"status", "--json=yes", NULL},
	    {"wait", "--timeout", "0x10", NULL},
	    {"wait", "--timeout", "", NULL},
	    {"wait", "--json", NULL},
	    {"watch", "--interval", "5", NULL},
	    {"watch", "--count", "-1", NULL},
	    {"watch", "--count", "0", NULL},
	    {"bench", "-n", "0", NULL},
	    {"bench", "-n", NULL},
	    {"bench", "-n", "2000000", NULL},
	    {"bench", "--method", "bogus", NULL},
	    {"bench", "--method", "barrierd,", NULL},
	    {"bench", "--method", "", NULL},
	    {"bench", "--csv", NULL},
	    {"bench", "--gap", "10001", NULL},
	    {"bench", "--gap", "-1", NULL},
	    {"bench", "--cpu", "-1", NULL},
	    {"bench", "--cpu", "one", NULL},
	    {"bench", "--cpu", NULL},
	    {"status", "--cpu", "0", NULL},
	    {"status", "--output", "x", NULL},
	    {"metrics", "--output", "", NULL},
	    {"metrics", "--output", NULL},
	    {"metrics", "--json", NULL},
	    {"metrics", "extra", NULL},
	    {"help", "status", NULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i];
		struct cli_result r;
		char label[256] = "";

		for (int k = 0; a[k]; k++)
			snprintf(label + strlen(label), sizeof(label) - strlen(label), " '%s'",
				 a[k]);
		bctl_rawv(&r, a);
		if (r.code != 64 || strncmp(r.err, "barrierctl: ", 12) != 0 ||
		    cli_count(r.err, "\n") != 1 || r.out_len != 0) {
			cli_show(&r);
			fail_msg("barrierctl%s: want exit 64 and one line on stderr", label);
		}
		cli_result_free(&r);
	}
}

/* The messages name the problem: the option, the value, the command. */
static void usage_messages_name_the_problem(void **state)
{
	struct cli_result r;

	(void)state;
	bctl_raw(&r, "status", "--lag-threshold", "abc", NULL);
	assert_non_null(strstr(r.err, "--lag-threshold"));
	assert_non_null(strstr(r.err, "'abc'"));
	cli_result_free(&r);
	bctl_raw(&r, "frobnicate", NULL);
	assert_non_null(strstr(r.err, "unknown command 'frobnicate'"));
	cli_result_free(&r);
	bctl_raw(&r, "watch", "--count", NULL);
	assert_non_null(strstr(r.err, "'--count' needs a value"));
	cli_result_free(&r);
	bctl_raw(&r, "status", "--timeout", "5", NULL);
	assert_non_null(strstr(r.err, "'--timeout' does not apply"));
	cli_result_free(&r);
	bctl_raw(&r, "bench", "--method", "bogus", NULL);
	assert_non_null(strstr(r.err, "unknown method 'bogus'"));
	cli_result_free(&r);
}

static void help_and_version(void **state)
{
	static const char *const forms[][2] = {
	    {"--help", NULL},	  {"-h", NULL},	   {"help", NULL},
	    {"status", "--help"}, {"bench", "-h"}, {"metrics", "--help"},
	};
	struct cli_result r;

	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		bctl_raw(&r, forms[i][0], forms[i][1], NULL);
		expect_code(&r, 0);
		assert_non_null(strstr(r.out, "Usage: barrierctl COMMAND"));
		assert_int_equal(r.err_len, 0);
		cli_result_free(&r);
	}
	bctl_raw(&r, "--version", NULL);
	expect_code(&r, 0);
	assert_non_null(strstr(r.out, "barrierctl " BARRIERD_VERSION));
	cli_result_free(&r);
}

/*
 * --help and the man page agree: the same long options, the same exit codes, and every
 * field that status --json prints is named in both.
 */
static void help_agrees_with_man_page(void **state)
{
	static const char script[] =
	    "import json, re, sys\n"
	    "help = open(sys.argv[1]).read()\n"
	    "man = open(sys.argv[2]).read().replace('\\\\-', '-').replace('\\\\fB', '')\n"
	    "man = man.replace('\\\\fR', '').replace('\\\\fI', '')\n"
	    "doc = json.load(open(sys.argv[3]))\n"
	    "bad = []\n"
	    "h_opts = set(re.findall(r'(?<![\\w-])--[a-z][a-z-]*', help))\n"
	    "m_opts = set()\n"
	    "lines = man.split('\\n')\n"
	    "for i, l in enumerate(lines):\n"
	    "    if i and lines[i-1].startswith('.TP') and l.startswith('.B'):\n"
	    "        m_opts |= set(re.findall(r'(?<![\\w-])--[a-z][a-z-]*', l))\n"
	    "if h_opts != m_opts: bad.append('options: help %s, man %s' % (sorted(h_opts), "
	    "sorted(m_opts)))\n"
	    "h_codes = set(re.findall(r'^  (\\d+) ', help.split('Exit status:')[1], re.M))\n"
	    "sect = man.split('.SH EXIT STATUS')[1].split('.SH')[0]\n"
	    "m_codes = set(re.findall(r'^\\.TP\\n\\.B (\\d+)$', sect, re.M))\n"
	    "if h_codes != m_codes or not h_codes: bad.append('exit codes: help %s, man %s' % "
	    "(sorted(h_codes), sorted(m_codes)))\n"
	    "def keys(o):\n"
	    "    if isinstance(o, dict):\n"
	    "        for k, v in o.items():\n"
	    "            yield k\n"
	    "            yield from keys(v)\n"
	    "    elif isinstance(o, list):\n"
	    "        for v in o: yield from keys(v)\n"
	    "for k in sorted(set(keys(doc))):\n"
	    "    for name, text in (('help', help), ('man', man)):\n"
	    "        if not re.search(r'(?<![\\w])' + k + r'(?![\\w])', text):\n"
	    "            bad.append('JSON field %s missing from %s' % (k, name))\n"
	    "for m in ('barrierd', 'vtime', 'membarrier-global', 'private-expedited',\n"
	    "          'mprotect', 'global-expedited', 'direct', 'file'):\n"
	    "    if m not in help or m not in man: bad.append('method ' + m)\n"
	    "print('\\n'.join(bad), file=sys.stderr)\n"
	    "sys.exit(1 if bad else 0)\n";
	char help_path[PATH_MAX], json_path[PATH_MAX];
	struct cli_result r, py;
	FILE *f;

	(void)state;
	fake_set_cpu(&S, 2, BARRIERD_CPU_IDLE, 5000); /* so last_advance etc. are all present */
	bctl_raw(&r, "--help", NULL);
	expect_code(&r, 0);
	snprintf(help_path, sizeof(help_path), "%s/help.txt", S.dir);
	f = fopen(help_path, "w");
	assert_non_null(f);
	fputs(r.out, f);
	fclose(f);
	cli_result_free(&r);

	bctl(&r, "status", "--json", "--state", S.path, "--lag-threshold", "60000", NULL);
	expect_code(&r, 0);
	snprintf(json_path, sizeof(json_path), "%s/status.json", S.dir);
	f = fopen(json_path, "w");
	assert_non_null(f);
	fputs(r.out, f);
	fclose(f);
	cli_result_free(&r);

	const char *argv[] = {"/usr/bin/env", "python3", "-c",	    script,
			      help_path,      MAN_PAGE,	 json_path, NULL};
	cli_run_argv(&py, argv, NULL);
	if (py.code != 0)
		fail_msg("--help and docs/barrierctl.8 disagree:\n%s", py.err);
	cli_result_free(&py);
	fake_set_cpu(&S, 2, BARRIERD_CPU_BUSY, 0);
}

/* ---- status: exit codes 0 and 1, numbers ---- */

static void status_healthy(void **state)
{
	struct cli_result r;

	(void)state;
	assert_int_equal(fake_start_ticker(&S, 0xf), 0);
	bctl(&r, "status", "--state", S.path, NULL);
	expect_code(&r, 0);
	assert_non_null(strstr(r.out, ": healthy"));
	assert_non_null(strstr(r.out, "pid 4242, generation 7"));
	for (unsigned c = 0; c < 4; c++) {
		char st[32];
		double lag = text_lag(r.out, c, st, sizeof(st));

		assert_true(lag >= 0 && lag < 50);
		assert_string_equal(st, "busy");
	}
	assert_null(strstr(r.out, "LAGGING"));
	/* The credit counters, each in its column. */
	assert_non_null(strstr(text_row(r.out, 3), " 103 "));
	assert_non_null(strstr(text_row(r.out, 3), " 203 "));
	assert_non_null(strstr(text_row(r.out, 3), " 303"));
	cli_result_free(&r);

	status_json(&S, NULL, 0,
		    "d['health'] == 'healthy' and d['exit_code'] == 0 and "
		    "d['ncpu'] == 4 and len(d['cpus']) == 4 and "
		    "d['lagging_cpus'] == 0 and d['daemon']['live'] and "
		    "d['daemon']['pid'] == 4242 and d['daemon']['generation'] == 7 and "
		    "not d['daemon']['armed'] and "
		    "d['daemon']['heartbeat_period_ms'] == 10000 and "
		    "d['abi_major'] == 1 and d['vtime'] == 1000 and "
		    "d['boot_id'] == '10111213-1415-1617-1819-1a1b1c1d1e1f' and "
		    "d['last_advance']['cause'] == 'idle' and "
		    "d['last_advance']['cpu'] == 1 and d['passes'] == 55 and "
		    "d['credit_passes'] == 5 and d['doorbell_rings'] == 3 and "
		    "all(c['cpu'] == i and c['state'] == 'busy' and not c['lagging'] "
		    "and c['credit_event'] == 100 + i and c['credit_idle'] == 200 + i "
		    "and c['credit_offline'] == 300 + i and c['vtime_lag'] == i "
		    "and 0 <= c['lag_ms'] < 50 for i, c in enumerate(d['cpus']))");
	fake_stop_ticker(&S);
}

/* A busy CPU 2 s behind: degraded (1), flagged, with its lag shown right. */
static void status_degraded(void **state)
{
	struct cli_result r;
	char st[32];
	double lag;

	(void)state;
	assert_int_equal(fake_start_ticker(&S, 0xf & ~(1u << 2)), 0);
	fake_set_cpu(&S, 2, BARRIERD_CPU_BUSY, 2000);
	bctl(&r, "status", "--state", S.path, NULL);
	expect_code(&r, 1);
	assert_non_null(strstr(r.out, "degraded, 1 CPU lagging more than 50 ms"));
	lag = text_lag(r.out, 2, st, sizeof(st));
	/* Generous upper bound: the time between writing the file and the snapshot. */
	assert_true(lag >= 2000 && lag < 2000 + 10000);
	assert_non_null(strstr(text_row(r.out, 2), "LAGGING"));
	assert_null(strstr(text_row(r.out, 1), "LAGGING"));
	cli_result_free(&r);

	status_json(&S, NULL, 1,
		    "d['health'] == 'degraded' and d['exit_code'] == 1 and "
		    "d['lagging_cpus'] == 1 and d['cpus'][2]['lagging'] and "
		    "2000 <= d['cpus'][2]['lag_ms'] < 12000 and "
		    "2000 <= d['last_interrupt_age_ms'] < 12000 and "
		    "d['lag_threshold_ms'] == 50 and "
		    "not any(c['lagging'] for c in d['cpus'] if c['cpu'] != 2)");

	/* Below the threshold it is not lagging. */
	bctl(&r, "status", "--state", S.path, "--lag-threshold", "60000", NULL);
	expect_code(&r, 0);
	assert_null(strstr(r.out, "LAGGING"));
	cli_result_free(&r);
	fake_stop_ticker(&S);
	fake_set_cpu(&S, 2, BARRIERD_CPU_BUSY, 0);
}

/*
 * Lagging is judged against now (the rule): status first asks the daemon for a fresh
 * pass, so a busy CPU whose value is still 1.5 s old after it brings no evidence.  BEHIND_MS
 * (against the freshest CPU) is shown for information only.
 */
static void status_lag_against_now(void **state)
{
	uint64_t fold = bd_mono_ns() - 1500 * TEST_MS;
	struct cli_result r;

	(void)state;
	for (uint64_t c = 0; c < 4; c++)
		bd_store(&S.h->per_cpu[c].last_interrupt_ns, fold - c * TEST_MS);
	fake_refold(&S);
	status_json(&S, NULL, 1,
		    "all(c['lag_ms'] >= 1500 + i and c['behind_ms'] == i "
		    "and c['lagging'] == (c['state'] in ('busy', 'unknown')) "
		    "for i, c in enumerate(d['cpus'])) "
		    "and d['health'] == 'degraded'");

	/* CPU 3 brought no evidence for 100 ms before the latest fold: lagging. */
	bd_store(&S.h->per_cpu[3].last_interrupt_ns, fold - 100 * TEST_MS);
	fake_refold(&S);
	bctl(&r, "status", "--state", S.path, NULL);
	expect_code(&r, 1);
	assert_non_null(strstr(text_row(r.out, 3), " 100.000 "));
	assert_non_null(strstr(text_row(r.out, 3), "LAGGING"));
	cli_result_free(&r);
	for (uint64_t c = 0; c < 4; c++)
		fake_set_cpu(&S, c, BARRIERD_CPU_BUSY, 0);
}

/* Exact numbers: vtime lags and a lag in the sub-second range, in the table and the JSON. */
static void status_lag_numbers(void **state)
{
	struct cli_result r;
	double lag;

	(void)state;
	fake_set_cpu(&S, 0, BARRIERD_CPU_BUSY, 1234);
	fake_set_cpu(&S, 1, BARRIERD_CPU_IDLE, 777);
	bd_store(&S.h->per_cpu[1].last_interrupt_vtime, 990);
	bctl(&r, "status", "--state", S.path, "--lag-threshold", "60000", NULL);
	expect_code(&r, 0);
	lag = text_lag(r.out, 0, NULL, 0);
	assert_true(lag >= 1234 && lag < 1234 + 10000);
	lag = text_lag(r.out, 1, NULL, 0);
	assert_true(lag >= 777 && lag < 777 + 10000);
	/* vtime 1000, CPU 1's 990: a vtime lag of 10, right after the lag column. */
	assert_non_null(strstr(text_row(r.out, 1), " 10 "));
	cli_result_free(&r);

	status_json(&S, "60000", 0,
		    "1234 <= d['cpus'][0]['lag_ms'] < 11234 and "
		    "777 <= d['cpus'][1]['lag_ms'] < 10777 and "
		    "d['cpus'][1]['vtime_lag'] == 10 and "
		    "d['cpus'][1]['last_interrupt_vtime'] == 990 and "
		    "d['cpus'][0]['vtime_lag'] == 0 and "
		    "d['now_ns'] - d['cpus'][0]['last_interrupt_ns'] >= 1234000000 and "
		    "d['cpus'][1]['state'] == 'idle'");
	bd_store(&S.h->per_cpu[1].last_interrupt_vtime, 999);
	fake_set_cpu(&S, 0, BARRIERD_CPU_BUSY, 0);
	fake_set_cpu(&S, 1, BARRIERD_CPU_BUSY, 0);
}

/* Idle, offline and daemon CPUs are never lagging, however old; unknown ones are. */
static void status_idle_offline_daemon_not_flagged(void **state)
{
	struct fake_daemon s5;
	struct cli_result r;

	(void)state;
	assert_int_equal(fake_create(&s5, 5, FAKE_LABELLED), 0);
	assert_int_equal(fake_start_ticker(&s5, (1u << 0) | (1u << 4)), 0);
	fake_set_cpu(&s5, 1, BARRIERD_CPU_IDLE, 10000);
	fake_set_cpu(&s5, 2, BARRIERD_CPU_OFFLINE, 10000);
	fake_set_cpu(&s5, 3, BARRIERD_CPU_DAEMON, 10000);
	bctl(&r, "status", "--state", s5.path, NULL);
	expect_code(&r, 0);
	assert_null(strstr(r.out, "LAGGING"));
	assert_true(text_lag(r.out, 1, NULL, 0) >= 10000);
	cli_result_free(&r);
	status_json(&s5, NULL, 0,
		    "[c['state'] for c in d['cpus']] == "
		    "['busy', 'idle', 'offline', 'daemon', 'busy'] and "
		    "not any(c['lagging'] for c in d['cpus']) and "
		    "all(c['lag_ms'] >= 10000 for c in d['cpus'][1:4]) and "
		    "d['lagging_cpus'] == 0 and d['health'] == 'healthy'");

	/* No sched_switch seen yet: as good as busy. */
	assert_int_equal(fake_start_ticker(&s5, 1u << 0), 0);
	fake_set_cpu(&s5, 4, BARRIERD_CPU_UNKNOWN, 10000);
	status_json(&s5, NULL, 1,
		    "d['cpus'][4]['state'] == 'unknown' and d['cpus'][4]['lagging'] "
		    "and d['lagging_cpus'] == 1");
	/* A state value this version does not know is judged like unknown. */
	fake_set_cpu(&s5, 4, 99, 10000);
	bctl(&r, "status", "--state", s5.path, NULL);
	expect_code(&r, 1);
	assert_non_null(strstr(text_row(r.out, 4), "unknown"));
	assert_non_null(strstr(text_row(r.out, 4), "LAGGING"));
	cli_result_free(&r);
	fake_destroy(&s5);
}

/* ---- exit code 3: no daemon publishes ---- */

static void status_not_running(void **state)
{
	const uint64_t running =
	    BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL;
	struct cli_result r;

	(void)state;
	/* Stopped flag. */
	bd_store(&S.h->flags, BARRIERD_FLAG_STOPPED | BARRIERD_FEAT_EXTENSION);
	bctl(&r, "status", "--state", S.path, NULL);
	expect_code(&r, 3);
	assert_non_null(strstr(r.out, "not running (stopped flag set)"));
	cli_result_free(&r);
	status_json(&S, NULL, 3,
		    "d['health'] == 'stopped' and d['exit_code'] == 3 and "
		    "d['daemon']['stopped'] and not d['daemon']['live']");

	/* Neither flag: a daemon that never finished starting. */
	bd_store(&S.h->flags, BARRIERD_FEAT_EXTENSION);
	bctl(&r, "status", "--state", S.path, NULL);
	expect_code(&r, 3);
	assert_non_null(strstr(r.out, "running flag clear"));
	cli_result_free(&r);

	/* Running flag, but the heartbeat is more than 3 periods old: killed or wedged. */
	bd_store(&S.h->flags, running);
	bd_store(&S.h->heartbeat_period_ns, 100 * TEST_MS);
	bd_store(&S.h->heartbeat_ns, bd_mono_ns() - 5 * TEST_SEC);
	fake_set_cpu(&S, 1, BARRIERD_CPU_BUSY, 10000); /* lagging too: not what to report */
	status_json(&S, NULL, 3,
		    "d['health'] == 'stale' and d['daemon']['running'] and "
		    "not d['daemon']['live'] and d['daemon']['heartbeat_age_ms'] >= "
		    "5000 and d['daemon']['heartbeat_period_ms'] == 100");

	/* Within 3 periods it is alive: the library's rule exactly. */
	bd_store(&S.h->heartbeat_period_ns, 60 * TEST_SEC);
	bctl(&r, "status", "--state", S.path, NULL);
	expect_code(&r, 1);
	cli_result_free(&r);
	/* A nonsense period is replaced by the library's 100 ms, so 5 s is stale again. */
	bd_store(&S.h->heartbeat_period_ns, 0);
	bctl(&r, "status", "--state", S.path, NULL);
	expect_code(&r, 3);
	cli_result_free(&r);

	bd_store(&S.h->heartbeat_period_ns, 10 * TEST_SEC);
	bd_store(&S.h->heartbeat_ns, bd_mono_ns());
	fake_set_cpu(&S, 1, BARRIERD_CPU_BUSY, 0);
}

/* ---- exit code 4: unusable or untrusted files ---- */

static void write_copy(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void expect_unusable(const char *path, const char *why)
{
	static const char *const cmds[] = {"status", "watch", "wait"};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct cli_result r;

		if (i == 1)
			bctl(&r, "watch", "--state", path, "--count", "1", NULL);
		else
			bctl(&r, cmds[i], "--state", path, NULL);
		if (r.code != 4 || !strstr(r.err, why) || cli_count(r.err, "\n") != 1) {
			cli_show(&r);
			fail_msg("%s on %s: want exit 4 and one line saying '%s'", cmds[i], path,
				 why);
		}
		cli_result_free(&r);
	}
}

static void status_unusable(void **state)
{
	char path[PATH_MAX], sub[PATH_MAX];
	unsigned char *img = malloc(S.size);
	struct barrierd_header *h = (void *)img;

	(void)state;
	assert_non_null(img);
	memcpy(img, S.h, S.size);
	snprintf(path, sizeof(path), "%s/copy", S.dir);

	/* The copy as it is: usable (checks that the cases below fail for their one reason). */
	write_copy(path, img, S.size, 0644);
	struct cli_result r;
	bctl(&r, "status", "--state", path, "--lag-threshold", "60000", NULL);
	expect_code(&r, 0);
	cli_result_free(&r);

	snprintf(sub, sizeof(sub), "%s/missing", S.dir);
	expect_unusable(sub, "no such file");

	h->magic ^= 1;
	write_copy(path, img, S.size, 0644);
	expect_unusable(path, "not a usable barrierd ABI v1 state file");
	h->magic ^= 1;

	h->abi_major = 2;
	write_copy(path, img, S.size, 0644);
	expect_unusable(path, "not a usable barrierd ABI v1 state file");
	h->abi_major = 1;

	/* Too short for its ncpu. */
	write_copy(path, img, sizeof(struct barrierd_header) + 16, 0644);
	expect_unusable(path, "not a usable barrierd ABI v1 state file");

	/* Writable by others: anyone could make every barrier pass. */
	write_copy(path, img, S.size, 0666);
	expect_unusable(path, "untrusted");

	/* A directory above it writable by others (and not sticky). */
	snprintf(sub, sizeof(sub), "%s/open", S.dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(chmod(sub, 0777), 0);
	snprintf(sub, sizeof(sub), "%s/open/state", S.dir);
	write_copy(sub, img, S.size, 0644);
	expect_unusable(sub, "untrusted");

	/* A symbolic link at the path. */
	snprintf(sub, sizeof(sub), "%s/link", S.dir);
	write_copy(path, img, S.size, 0644);
	assert_int_equal(symlink(path, sub), 0);
	expect_unusable(sub, "untrusted");

	/* A heartbeat later than our clock: a file from an earlier boot. */
	h->heartbeat_ns = bd_mono_ns() + 3600 * TEST_SEC;
	write_copy(path, img, S.size, 0644);
	expect_unusable(path, "later than this boot's clock");

	/* A directory, not a file. */
	expect_unusable(S.dir, "untrusted");
	free(img);
}

/* ---- watch ---- */

static void watch_not_a_tty(void **state)
{
	struct cli_result r;

	(void)state;
	assert_int_equal(fake_start_ticker(&S, 0xf), 0);
	bctl(&r, "watch", "--state", S.path, "--count", "3", "--interval", "10", NULL);
	expect_code(&r, 0);
	assert_null(strchr(r.out, '\033'));
	assert_int_equal(cli_count(r.out, "barrierd /tmp/"), 3);
	assert_int_equal(cli_count(r.out, "  CPU  STATE"), 3);
	/* Tables separated by a blank line: each after the first starts after "\n\n". */
	assert_int_equal(cli_count(r.out, "\n\nbarrierd /tmp/"), 2);
	assert_true(strncmp(r.out, "barrierd /tmp/", 14) == 0);
	cli_result_free(&r);

	/* Its exit code is its last table's. */
	fake_stop_ticker(&S);
	fake_set_cpu(&S, 0, BARRIERD_CPU_BUSY, 3000);
	bctl(&r, "watch", "--state", S.path, "--count", "1", NULL);
	expect_code(&r, 1);
	cli_result_free(&r);
	fake_set_cpu(&S, 0, BARRIERD_CPU_BUSY, 0);
}

static void watch_on_a_tty(void **state)
{
	struct cli_result r;
	struct cli_proc p;
	int master, slave;

	(void)state;
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(master >= 0);
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(slave >= 0);
	assert_int_equal(bctl_start(&p, slave, "watch", "--state", S.path, "--count", "2",
				    "--interval", "10", "--lag-threshold", "60000", NULL),
			 0);
	close(slave);
	cli_finish(&p, &r, &master);
	if (master >= 0)
		close(master);
	expect_code(&r, 0);
	/* Cleared once, then redrawn from the home position: no curses, plain ANSI. */
	assert_int_equal(cli_count(r.out, "\033[H\033[2J"), 1);
	assert_int_equal(cli_count(r.out, "\033[H"), 2);
	assert_non_null(strstr(r.out, "\033[K"));
	assert_non_null(strstr(r.out, "barrierctl watch: every 10 ms, refresh 2"));
	cli_result_free(&r);
}

static void watch_stops_on_signal(int sig)
{
	struct cli_result r;
	struct cli_proc p;
	uint64_t end;

	assert_int_equal(bctl_start(&p, -1, "watch", "--state", S.path, "--interval", "20",
				    "--lag-threshold", "60000", NULL),
			 0);
	/* Wait for the first table, so the signal surely reaches the watch loop. */
	end = bd_mono_ns() + CLI_HANG_GUARD_S * TEST_SEC;
	while (!strstr(p.r.out, "  CPU  STATE") && bd_mono_ns() < end)
		cli_pump(&p, 50, NULL);
	kill(p.pid, sig);
	cli_finish(&p, &r, NULL);
	assert_int_equal(r.sig, 0); /* handled: it exited, not killed */
	expect_code(&r, 0);
	assert_true(r.out_len > 0 && r.out[r.out_len - 1] == '\n');
	cli_result_free(&r);
}

static void watch_stops_on_sigint(void **state)
{
	(void)state;
	watch_stops_on_signal(SIGINT);
}

static void watch_stops_on_sigterm(void **state)
{
	(void)state;
	watch_stops_on_signal(SIGTERM);
}

/* ---- wait ---- */

static void wait_passes(void **state)
{
	struct cli_result r;
	double ms = -1;

	(void)state;
	assert_int_equal(fake_start_ticker(&S, 0xf), 0);
	bctl(&r, "wait", "--state", S.path, "--timeout", "10000", NULL);
	expect_code(&r, 0);
	assert_int_equal(sscanf(r.out, "barrier passed in %lf ms", &ms), 1);
	assert_true(ms >= 0 && ms < 10000);
	cli_result_free(&r);
	fake_stop_ticker(&S);
}

/* Nobody advances the values: a timeout (2) that names the CPUs holding it back. */
static void wait_times_out(void **state)
{
	struct cli_result r;
	uint64_t t0 = bd_mono_ns();

	(void)state;
	bd_store(&S.h->heartbeat_ns, bd_mono_ns());
	bctl(&r, "wait", "--state", S.path, "--timeout", "50", NULL);
	expect_code(&r, 2);
	assert_non_null(strstr(r.err, "timed out: no barrier within 50 ms"));
	assert_non_null(strstr(r.err, "held back by CPU 0 (busy"));
	assert_non_null(strstr(r.err, "CPU 3 (busy"));
	assert_int_equal(cli_count(r.err, "\n"), 1);
	assert_int_equal(r.out_len, 0);
	cli_result_free(&r);
	assert_true(bd_mono_ns() - t0 < 10 * TEST_SEC);
}

static void wait_not_running(void **state)
{
	const uint64_t running =
	    BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL;
	struct cli_result r;

	(void)state;
	bd_store(&S.h->flags, BARRIERD_FLAG_STOPPED | BARRIERD_FEAT_EXTENSION);
	bctl(&r, "wait", "--state", S.path, "--timeout", "5000", NULL);
	expect_code(&r, 3);
	assert_non_null(strstr(r.err, "the daemon is not running"));
	cli_result_free(&r);
	bd_store(&S.h->flags, running);
}

/* ---- bench: the plumbing, with methods that need no daemon ---- */

static void bench_without_daemon(void **state)
{
	char csv[PATH_MAX], *text = NULL, cpu[16], want[64];
	struct cli_result r;
	size_t cap = 0;
	FILE *f;
	int rows = 0, per[3] = {0};
	static const char *const names[3] = {"membarrier-global", "private-expedited", "mprotect"};

	(void)state;
	snprintf(csv, sizeof(csv), "%s/bench.csv", S.dir);
	bctl(&r, "bench", "-n", "3", "--method", "membarrier-global,private-expedited", "--method",
	     "mprotect", "--csv", csv, NULL);
	expect_code(&r, 0);
	assert_non_null(strstr(r.out, "3 of 3 rounds"));
	for (int i = 0; i < 3; i++) {
		const char *row = strstr(r.out, names[i]);

		/* Measured, or refused by this kernel (seccomp, nohz_full): never a crash. */
		assert_non_null(row);
		assert_true(strncmp(row + 18, "       3 ", 9) == 0 ||
			    strncmp(row + 18, " unavailable: ", 14) == 0);
	}
	assert_null(strstr(r.out, "\nbarrierd "));
	assert_null(strstr(r.out, "\nvtime "));
	assert_non_null(strstr(r.out, "CAL/call  RES/call  IWI/call  TLB/call"));
	cli_result_free(&r);

	/* --cpu: the caller on that CPU, or a clear failure for a CPU it may not use. */
	snprintf(cpu, sizeof(cpu), "%d", sched_getcpu());
	bctl(&r, "bench", "-n", "1", "--gap", "0", "--method", "membarrier-global", "--cpu", cpu,
	     NULL);
	expect_code(&r, 0);
	snprintf(want, sizeof(want), "caller on CPU %s,", cpu);
	assert_non_null(strstr(r.out, want));
	cli_result_free(&r);
	/* CPU_SETSIZE - 1: accepted by the parser, allowed on no machine this runs on. */
	bctl(&r, "bench", "-n", "1", "--method", "membarrier-global", "--cpu", "1023", NULL);
	expect_code(&r, 1);
	assert_non_null(strstr(r.err, "not a CPU this process may use"));
	cli_result_free(&r);

	f = fopen(csv, "r");
	assert_non_null(f);
	assert_true(getline(&text, &cap, f) > 0);
	assert_string_equal(text, "method,index,latency_ns,cal,res,iwi,tlb\n");
	while (getline(&text, &cap, f) > 0) {
		char m[32];
		unsigned long long idx, lat, a, b, c, d;

		assert_int_equal(sscanf(text, "%31[^,],%llu,%llu,%llu,%llu,%llu,%llu", m, &idx,
					&lat, &a, &b, &c, &d),
				 7);
		for (int i = 0; i < 3; i++)
			if (!strcmp(m, names[i])) {
				assert_int_equal(idx, per[i]);
				per[i]++;
			}
		assert_true(lat > 0);
		rows++;
	}
	free(text);
	fclose(f);
	assert_true(rows > 0 && rows <= 9);
}

/* The barrierd methods need the file: 4 or 3 as for status, the others still run. */
static void bench_state_problems(void **state)
{
	char missing[PATH_MAX];
	struct cli_result r;

	(void)state;
	snprintf(missing, sizeof(missing), "%s/missing", S.dir);
	bctl(&r, "bench", "-n", "2", "--state", missing, "--method", "barrierd,direct,file",
	     "--method", "global-expedited", NULL);
	expect_code(&r, 4);
	assert_non_null(strstr(r.out, "barrierd           unavailable: cannot use"));
	assert_non_null(strstr(r.out, "direct             unavailable: cannot use"));
	assert_non_null(strstr(r.out, "file               unavailable: cannot use"));
	assert_non_null(strstr(r.out, "global-expedited"));
	cli_result_free(&r);

	bd_store(&S.h->flags, BARRIERD_FLAG_STOPPED | BARRIERD_FEAT_EXTENSION);
	bctl(&r, "bench", "-n", "2", "--state", S.path, "--method", "vtime", NULL);
	expect_code(&r, 3);
	assert_non_null(strstr(r.out, "vtime              unavailable: the daemon is not running"));
	cli_result_free(&r);
	bd_store(&S.h->flags,
		 BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL);
}

/* Processes whose command line contains marker (barrierctl and the spinners it forked). */
static int count_procs(const char *marker)
{
	char path[300], buf[4096];
	struct dirent *e;
	DIR *d = opendir("/proc");
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		ssize_t len;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (ssize_t i = 0; i < len; i++)
			buf[i] = buf[i] ? buf[i] : ' ';
		buf[len] = 0;
		n += strstr(buf, marker) != NULL;
	}
	closedir(d);
	return n;
}

/* --load: a spinner per CPU for the run, and none left after it, nor after SIGINT. */
static void bench_load_spinners(void **state)
{
	char marker[PATH_MAX];
	cpu_set_t allowed;
	int ncpu;
	struct cli_result r;
	struct cli_proc p;
	uint64_t end;
	int n = 0;

	(void)state;
	/* One spinner per CPU this process may use, as barrierctl inherits our affinity. */
	assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	ncpu = CPU_COUNT(&allowed);
	snprintf(marker, sizeof(marker), "%s/load.csv", S.dir);
	bctl(&r, "bench", "-n", "3", "--method", "global-expedited", "--load", "--csv", marker,
	     NULL);
	expect_code(&r, 0);
	assert_true(strstr(r.out, "loaded (a nice-19 spinner on every CPU)") != NULL);
	assert_true(strstr(r.out, "(load spinners registered; not a global barrier") != NULL ||
		    strstr(r.out, "global-expedited   unavailable: ") != NULL);
	cli_result_free(&r);
	assert_int_equal(count_procs(marker), 0);

	/* Interrupted: it stops, prints what it has, exits 130 and leaves no spinner behind. */
	assert_int_equal(bctl_start(&p, -1, "bench", "-n", "1000000", "--method", "mprotect",
				    "--load", "--csv", marker, NULL),
			 0);
	end = bd_mono_ns() + CLI_HANG_GUARD_S * TEST_SEC;
	while ((n = count_procs(marker)) < ncpu + 1 && bd_mono_ns() < end)
		test_sleep_ms(10);
	assert_int_equal(n, ncpu + 1);
	test_sleep_ms(100);
	kill(p.pid, SIGINT);
	cli_finish(&p, &r, NULL);
	expect_code(&r, 130);
	assert_non_null(strstr(r.err, "interrupted after"));
	assert_non_null(strstr(r.out, "\nmprotect "));
	cli_result_free(&r);
	assert_int_equal(count_procs(marker), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(usage_errors),
	    cmocka_unit_test(usage_messages_name_the_problem),
	    cmocka_unit_test(help_and_version),
	    cmocka_unit_test(help_agrees_with_man_page),
	    cmocka_unit_test(status_healthy),
	    cmocka_unit_test(status_degraded),
	    cmocka_unit_test(status_lag_numbers),
	    cmocka_unit_test(status_lag_against_now),
	    cmocka_unit_test(status_idle_offline_daemon_not_flagged),
	    cmocka_unit_test(status_not_running),
	    cmocka_unit_test(status_unusable),
	    cmocka_unit_test(watch_not_a_tty),
	    cmocka_unit_test(watch_on_a_tty),
	    cmocka_unit_test(watch_stops_on_sigint),
	    cmocka_unit_test(watch_stops_on_sigterm),
	    cmocka_unit_test(wait_passes),
	    cmocka_unit_test(wait_times_out),
	    cmocka_unit_test(wait_not_running),
	    cmocka_unit_test(bench_without_daemon),
	    cmocka_unit_test(bench_state_problems),
	    cmocka_unit_test(bench_load_spinners),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
