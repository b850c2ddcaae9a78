// SPDX-License-Identifier: MIT
/*
 * Entry point for a reused cmocka suite rebuilt against a mutant daemon or library: the suite
 * is compiled with -Dmain=audit_wrapped_main, and this main selects the one test named on the
 * command line with cmocka's filter, so a mutant test runs exactly the check it names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>

#undef main

int audit_wrapped_main(void);

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s TEST_NAME\n", argv[0]);
		return 2;
	}
	cmocka_set_test_filter(argv[1]);
	return audit_wrapped_main();
}
