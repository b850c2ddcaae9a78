// SPDX-License-Identifier: MIT
/*
 * test_compat where the old library could not be built (tests/compat/CMakeLists.txt): the
 * reason found at configure time, as a skip, or a failure under BARRIERD_REQUIRE_BPF=1, so that
 * CI never passes without having run the compatibility test.
 */
#include "test_env.h"

int main(void)
{
	test_skip_or_fail("test_compat: " COMPAT_MISSING);
	return 1;
}
