#!/usr/bin/env bash
# valgrind.sh PROGRAM [ARGS...]: PROGRAM under memcheck.  Any memory error, or a definite leak,
# fails (exit 99); possible and still-reachable leaks are not findings.  Skips (77) without
# valgrind (scripts/deps.sh --test installs it).
set -euo pipefail
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (scripts/deps.sh --test)"; exit 77; }
# The tests leave out what valgrind cannot run (test_lib_wait.c says what and why).
export BARRIERD_TEST_VALGRIND=1
exec valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
	--errors-for-leak-kinds=definite "$@"
