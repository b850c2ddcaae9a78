#!/bin/sh
# SPDX-License-Identifier: MIT
# run_with_daemon.sh DAEMON WORKDIR SAMPLE [ARG]...: run a sample against the real daemon on a
# temporary state path (given as the sample's last argument); pass if it exits 0.  Needs root
# and BPF: exit 77 (skip) without them, unless BARRIERD_REQUIRE_BPF=1.
set -u
daemon=$1 work=$2
shift 2

skip() {
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then
		echo "FAIL: $1, and BARRIERD_REQUIRE_BPF=1 forbids skipping"
		exit 1
	fi
	echo "SKIP: $1"
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (BPF, tracepoints)"
[ -r /sys/kernel/btf/vmlinux ] || skip "needs a kernel with BTF (/sys/kernel/btf/vmlinux)"

mkdir -p "$work"
dir=$(mktemp -d "$work/sample.XXXXXX") || exit 1
chmod 0755 "$dir"
state=$dir/state
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $1"
	echo "--- daemon log:"
	cat "$dir/daemon.log" 2>/dev/null
	exit 1
}
word() {
	od -A n -t u8 -j "$1" -N 8 "$state" 2>/dev/null | tr -d ' '
}

"$daemon" --state "$state" >"$dir/daemon.log" 2>&1 &
pid=$!
# Wait (hang guard: 10 s) until the file says this daemon runs: RUNNING set, STOPPED clear.
i=0
while :; do
	flags=$(word 56)
	if [ -n "$flags" ] && [ "$(word 88)" = "$pid" ] && [ $((flags & 3)) = 1 ]; then
		break
	fi
	kill -0 "$pid" 2>/dev/null || fail "the daemon exited before it started"
	i=$((i + 1))
	[ $i -lt 1000 ] || fail "the daemon did not start within 10 s"
	sleep 0.01
done

timeout 60 "$@" "$state" || fail "$*: exit status $?"
echo "PASS"
