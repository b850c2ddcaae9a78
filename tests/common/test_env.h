/* SPDX-License-Identifier: MIT */
/*
 * Shared by the tests: skipping when root or BPF is missing, unless BARRIERD_REQUIRE_BPF=1
 * (CI sets it), under which a would-be skip is a failure.
 */
#ifndef BARRIERD_TEST_ENV_H
#define BARRIERD_TEST_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_SKIP_CODE 77

static inline void test_skip_or_fail(const char *why)
{
	const char *req = getenv("BARRIERD_REQUIRE_BPF");

	if (req && strcmp(req, "1") == 0) {
		fprintf(stderr, "FAIL: %s, and BARRIERD_REQUIRE_BPF=1 forbids skipping\n", why);
		exit(1);
	}
	fprintf(stderr, "SKIP: %s\n", why);
	exit(TEST_SKIP_CODE);
}

static inline void test_require_root(void)
{
	if (geteuid() != 0)
		test_skip_or_fail("needs root (BPF, tracepoints)");
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		test_skip_or_fail("needs a kernel with BTF (/sys/kernel/btf/vmlinux)");
}

#endif
