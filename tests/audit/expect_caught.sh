#!/bin/sh
# SPDX-License-Identifier: MIT
#
# expect_caught.sh CHECK COMMAND [ARG]...
#
# A mutant test: run a check against a mutant and pass only if the check *fails* on it.  The
# check must fail as a finding (exit status 1), not crash or be unable to run: a check that
# errors out has caught nothing.  For a cmocka suite (a reused test run with its name as the
# filter), the failure must also be that very test's.
#
# The check runs in a session of its own: a reused test that fails half-way can leave children
# behind (test_client's time-namespace child waits on a pipe it holds both ends of), and they
# are ended with it rather than left to hang the run.

check=$1
shift
out=$(mktemp) || exit 2
setsid "$@" >"$out" 2>&1 &
pid=$!
wait "$pid"
rc=$?
# (the external kill: dash's builtin takes no process group)
env kill -s KILL -- "-$pid" 2>/dev/null
cat "$out"
verdict() {
	case $rc in
	0)
		echo "MUTANT SURVIVED: $check passed on the mutant"
		return 1
		;;
	77)
		echo "check $check skipped"
		return 77
		;;
	1)
		if grep -q '^\[==========\]' "$out" && ! grep -q "^\[  FAILED  \] $check\$" "$out"; then
			echo "ERROR: the suite failed, but not in $check"
			return 2
		fi
		echo "mutant caught by $check"
		return 0
		;;
	*)
		echo "ERROR: $check could not run (exit status $rc)"
		return 2
		;;
	esac
}
verdict
status=$?
rm -f "$out"
exit $status
