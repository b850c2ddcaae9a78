#!/bin/sh
# SPDX-License-Identifier: MIT
# test_ec.sh DAEMON EC_SAMPLE WORKDIR: samples/ec.c against the real daemon on a temporary
# state path, then with no daemon at all.  Needs root and BPF for the first part: exit 77
# (skip) without them, unless BARRIERD_REQUIRE_BPF=1.
set -u
daemon=$1 sample=$2 work=$3

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
dir=$(mktemp -d "$work/ec.XXXXXX") || exit 1
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
# Until the file says this daemon runs (hang guard: 10 s).
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

out=$(timeout 120 "$sample" -n 200000 "$state" 2>&1) || fail "ec_sample: $out"
echo "$out"
case $out in
"200000 items passed in order (barrierd)"*) ;;
*) fail "unexpected output: $out" ;;
esac

kill -TERM "$pid"
wait "$pid"
pid=
out=$(timeout 120 "$sample" -n 20000 "$dir/none/state" 2>&1) || fail "ec_sample, no daemon: $out"
echo "$out"
case $out in
*"20000 items passed in order (no daemon)"*) ;;
*) fail "unexpected output without a daemon: $out" ;;
esac
echo "PASS"
