// SPDX-License-Identifier: MIT
/* barrierd's command line: defaults, names, the original PATH ID... form, and bad input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "options.h"

/* parse(o, err, errlen, "arg", ..., NULL) */
static int parse(struct barrierd_options *o, char *err, size_t errlen, ...)
{
	char *argv[32];
	va_list ap;
	FILE *out = fopen("/dev/null", "w");
	int argc = 1, ret;
	char *a;

	va_start(ap, errlen);
	argv[0] = "barrierd";
	while ((a = va_arg(ap, char *)) && argc < 31)
		argv[argc++] = a;
	argv[argc] = NULL;
	va_end(ap);
	ret = options_parse(o, argc, argv, out, err, errlen);
	fclose(out);
	return ret;
}

static void defaults(void **state)
{
	struct barrierd_options o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), NULL), OPTIONS_RUN);
	assert_string_equal(o.state_path, "/run/barrierd/state");
	assert_int_equal(o.n_tps, 3);
	assert_string_equal(o.tps[0].name, "irq/softirq_entry");
	assert_string_equal(o.tps[1].name, "irq_vectors/local_timer_entry");
	assert_string_equal(o.tps[2].name, "sched/sched_switch");
	assert_false(o.verbose);
	assert_int_equal(o.idle_credit_interval_ns, 10000000);
	assert_int_equal(o.heartbeat_period_ns, 100000000);
	assert_int_equal(o.max_credit_rate, 1000); /* the flood bound docs/DESIGN.md states */
	assert_int_equal(o.nudge_after_ns, 10000000);
	assert_int_equal(o.max_nudge_rate, 200); /* the nudge bound docs/DESIGN.md states */
	assert_int_equal(o.slot_socket_mode, 0666);
}

/* --slot-socket-mode: an octal mode from 0 to 0777, or 'off' (-1); anything else is refused. */
static void slot_socket_mode(void **state)
{
	static const struct {
		const char *arg;
		int mode;
	} good[] = {{"0600", 0600}, {"600", 0600}, {"0", 0},	   {"0777", 0777},
		    {"0666", 0666}, {"off", -1},   {"00640", 0640}};
	static const char *const bad[] = {
	    "9",  "8",	   "abc", "01000", "1000",  "",	     "-1",
	    "-0", "0x1ff", "OFF", "off2",  "0600x", "0o600", "99999999999999999999999"};
	struct barrierd_options o;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(
		    parse(&o, err, sizeof(err), "--slot-socket-mode", good[i].arg, NULL),
		    OPTIONS_RUN);
		assert_int_equal(o.slot_socket_mode, good[i].mode);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(&o, err, sizeof(err), "--slot-socket-mode", bad[i], NULL),
				 -EINVAL);
		assert_non_null(strstr(err, "--slot-socket-mode"));
		assert_non_null(strstr(err, bad[i]));
		assert_null(strchr(err, '\n'));
	}
	assert_int_equal(parse(&o, err, sizeof(err), "--slot-socket-mode", "0600\n<0>", NULL),
			 -EINVAL);
	assert_null(strchr(err, '\n'));
	assert_int_equal(parse(&o, err, sizeof(err), "--slot-socket-mode", NULL), -EINVAL);
	assert_non_null(strstr(err, "needs an argument"));
}

/* --nudge-after: milliseconds to the nanosecond, 0 (off) included; no sign, no exponent. */
static void nudge_after(void **state)
{
	static const struct {
		const char *arg;
		uint64_t ns;
	} good[] = {{"0", 0},	     {"0.5", 500000},	{"2", 2000000},
		    {"0.000001", 1}, {"1.25", 1250000}, {"60000", 60000000000ULL}};
	static const char *const bad[] = {"",
					  "-1",
					  "0.",
					  ".5",
					  "1e3",
					  "0.0000001",
					  "60000.1",
					  "60001",
					  "x",
					  "1.5ms",
					  "99999999999999999999"};
	struct barrierd_options o;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(parse(&o, err, sizeof(err), "--nudge-after", good[i].arg, NULL),
				 OPTIONS_RUN);
		assert_int_equal(o.nudge_after_ns, good[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(&o, err, sizeof(err), "--nudge-after", bad[i], NULL),
				 -EINVAL);
		assert_non_null(strstr(err, "--nudge-after"));
	}
	assert_int_equal(parse(&o, err, sizeof(err), "--max-nudge-rate", "50", NULL), OPTIONS_RUN);
	assert_int_equal(o.max_nudge_rate, 50);
	assert_int_equal(parse(&o, err, sizeof(err), "--max-nudge-rate", "0", NULL), -EINVAL);
	assert_non_null(strstr(err, "--max-nudge-rate"));
}

static void names_replace_defaults(void **state)
{
	struct barrierd_options o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), "--state", "/tmp/x/state", "-t",
			       "irq/irq_handler_entry", "--tracepoint", "sched/sched_switch", NULL),
			 OPTIONS_RUN);
	assert_string_equal(o.state_path, "/tmp/x/state");
	assert_int_equal(o.n_tps, 2);
	assert_string_equal(o.tps[0].name, "irq/irq_handler_entry");
	assert_int_equal(o.tps[0].id, -1);
	assert_int_equal(parse(&o, err, sizeof(err), "-v", "--idle-credit-interval", "25", NULL),
			 OPTIONS_RUN);
	assert_true(o.verbose);
	assert_int_equal(o.idle_credit_interval_ns, 25000000);
}

static void original_command_line(void **state)
{
	struct barrierd_options o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), "/run/b", "312", "45", NULL), OPTIONS_RUN);
	assert_string_equal(o.state_path, "/run/b");
	assert_int_equal(o.n_tps, 2);
	assert_int_equal(o.tps[0].id, 312);
	assert_int_equal(o.tps[1].id, 45);
	/* PATH alone: defaults */
	assert_int_equal(parse(&o, err, sizeof(err), "/run/b", NULL), OPTIONS_RUN);
	assert_int_equal(o.n_tps, 3);
}

static void bad_input(void **state)
{
	struct barrierd_options o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), "--bogus", NULL), -EINVAL);
	assert_non_null(strstr(err, "--bogus"));
	assert_int_equal(parse(&o, err, sizeof(err), "-t", "nocategory", NULL), -EINVAL);
	assert_non_null(strstr(err, "CATEGORY/NAME"));
	assert_int_equal(parse(&o, err, sizeof(err), "-t", "a/b/c", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, sizeof(err), "-t", "irq/x;rm", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, sizeof(err), "/run/b", "12x", NULL), -EINVAL);
	assert_non_null(strstr(err, "12x"));
	assert_int_equal(parse(&o, err, sizeof(err), "/run/b", "-5", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, sizeof(err), "--state", "/a", "/b", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, sizeof(err), "--idle-credit-interval", "0", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, sizeof(err), "--idle-credit-interval", "x", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, sizeof(err), "--max-credit-rate", "-1", NULL), -EINVAL);
	/* A number is digits only: no sign, no blanks (strtoull would take both). */
	assert_int_equal(parse(&o, err, sizeof(err), "--max-credit-rate", "+5", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, sizeof(err), "--max-credit-rate", " 5", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, sizeof(err), "--state", NULL), -EINVAL);
	assert_non_null(strstr(err, "needs an argument"));
	assert_int_equal(parse(&o, err, sizeof(err), "--state", "", NULL), -EINVAL);
}

/* An unknown option inside a cluster is named as given, never as the program (argv[0]). */
static void unknown_short_option_in_cluster(void **state)
{
	struct barrierd_options o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), "-xv", NULL), -EINVAL);
	assert_non_null(strstr(err, "'-x'"));
	assert_null(strstr(err, "barrierd"));
	assert_int_equal(parse(&o, err, sizeof(err), "-v", "-vx", NULL), -EINVAL);
	assert_non_null(strstr(err, "'-x'"));
	assert_int_equal(parse(&o, err, sizeof(err), "-vs", NULL), -EINVAL);
	assert_non_null(strstr(err, "'-s' needs an argument"));
	assert_int_equal(parse(&o, err, sizeof(err), "--bogus=1", NULL), -EINVAL);
	assert_non_null(strstr(err, "'--bogus=1'"));
}

/*
 * The reason is one line whatever the arguments hold: the daemon logs it as one line with a
 * priority prefix, and an argument's newline must not start a line of its own ("<0>...").
 */
static void reason_is_one_line(void **state)
{
	static const char *const bad[][3] = {
	    {"/run/b", "1\n<0>forged", NULL}, {"-t", "irq\n<0>forged/x", NULL},
	    {"--state", "/a", "/b\r\n<0>"},   {"--heartbeat-period", "5\n<0>", NULL},
	    {"--bogus\n<0>", NULL, NULL},     {"-\n", NULL, NULL},
	};
	struct barrierd_options o;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(&o, err, sizeof(err), bad[i][0], bad[i][1], bad[i][2], NULL),
				 -EINVAL);
		assert_null(strchr(err, '\n'));
		assert_null(strchr(err, '\r'));
	}
	assert_int_equal(parse(&o, err, sizeof(err), "/run/b", "1\n", NULL), -EINVAL);
	assert_non_null(strstr(err, "'1\\x0a'"));
}

static void help_and_version(void **state)
{
	struct barrierd_options o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, sizeof(err), "--help", NULL), OPTIONS_EXIT_OK);
	assert_int_equal(parse(&o, err, sizeof(err), "-V", NULL), OPTIONS_EXIT_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(defaults),
	    cmocka_unit_test(names_replace_defaults),
	    cmocka_unit_test(original_command_line),
	    cmocka_unit_test(bad_input),
	    cmocka_unit_test(nudge_after),
	    cmocka_unit_test(slot_socket_mode),
	    cmocka_unit_test(help_and_version),
	    cmocka_unit_test(unknown_short_option_in_cluster),
	    cmocka_unit_test(reason_is_one_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
