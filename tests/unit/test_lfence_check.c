// SPDX-License-Identifier: MIT
/*
 * The LFENCE assumption's start-up check (src/daemon/lfence_check.c): which CPUID pictures it
 * names, and that this machine's CPUID is read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "lfence_check.h"

static int doubt(const char *vendor, unsigned eax21, bool hypervisor)
{
	struct lfence_cpuid c = {
	    .max_ext = 0x80000021, .ext_21_eax = eax21, .hypervisor = hypervisor};
	char err[320] = "";
	int r;

	strncpy(c.vendor, vendor, sizeof(c.vendor) - 1);
	r = lfence_doubt(&c, err, sizeof(err));
	assert_true(err[0] != 0); /* why, either way */
	return r;
}

static void pictures(void **state)
{
	(void)state;
	/* In a guest without LfenceAlwaysSerializing: the host decides. */
	assert_int_equal(doubt("AuthenticAMD", 0, true), 1);
	assert_int_equal(doubt("HygonGenuine", 0, true), 1);
	/* The bit, or bare metal (Linux sets DE_CFG), or Intel: nothing to say. */
	assert_int_equal(doubt("AuthenticAMD", 1u << 2, true), 0);
	assert_int_equal(doubt("AuthenticAMD", 0, false), 0);
	assert_int_equal(doubt("GenuineIntel", 0, true), 0);
}

static void reads_this_cpu(void **state)
{
	struct lfence_cpuid c;

	(void)state;
	lfence_cpuid_read(&c);
	assert_int_equal(strlen(c.vendor), 12);
	assert_true(c.max_ext >= 0x80000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(pictures),
	    cmocka_unit_test(reads_this_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
