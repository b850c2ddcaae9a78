#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_quickstart.sh DAEMON QUICKSTART WORKDIR README: the README's quick-start program is
# samples/quickstart.c to the letter, and it passes a barrier against the real daemon on a
# temporary state path, found through $BARRIERD_STATE as the README runs it.  Needs root and
# BPF for the second part: exit 77 (skip) without them, unless BARRIERD_REQUIRE_BPF=1.  Not -e:
# daemon_lib.sh's start loop reads a file that may not exist yet.
set -uo pipefail
daemon=$1 sample=$2 work=$3 readme=$4
here=$(dirname "$0")

# The README shows the file from its first #include to its end, in a ```c block.
want=$(sed -n '/^#include/,$p' "$here/quickstart.c")
got=$(awk '/^```c$/ { inblock = 1; text = ""; next }
	   /^```$/ && inblock { if (text ~ /int main\(void\)/ && text ~ /barrierd_barrier/) { printf "%s", text; exit } inblock = 0; next }
	   inblock { text = text $0 "\n" }' "$readme")
if [ "$got" != "$want" ]; then
	echo "FAIL: the README's quick-start program differs from samples/quickstart.c:"
	diff <(printf '%s\n' "$got") <(printf '%s\n' "$want")
	exit 1
fi
echo "ok: the README shows samples/quickstart.c"

. "$here/daemon_lib.sh"
sample_daemon_start "$daemon" "$work" quickstart

out=$(BARRIERD_STATE=$state timeout 60 "$sample" 2>&1) || fail "quickstart: exit status $?: $out"
echo "$out"
[ "$out" = "barrier passed: every CPU has serialised since the call" ] || fail "unexpected output"
echo "PASS"
