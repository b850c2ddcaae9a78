#!/bin/sh
# SPDX-License-Identifier: MIT
# test_wait_raw.sh DAEMON WAIT_RAW WORKDIR: samples/wait_raw.c against the real daemon on a
# temporary state path.  It must pass barriers while the daemon runs (as root and as nobody),
# refuse a copy of the file in a directory anyone can write (trust), and report the daemon gone
# (-ESTALE) once it has stopped.  Needs root and BPF: exit 77 (skip) without them, unless
# BARRIERD_REQUIRE_BPF=1.
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
dir=$(mktemp -d "$work/wait_raw.XXXXXX") || exit 1
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

# One 64-bit word of the state file, by byte offset.
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

# Barriers against the running daemon.
out=$(timeout 60 "$sample" -n 200 "$state" 2>&1) || fail "wait_raw: $out"
echo "$out"
case $out in
"200 barriers passed"*) ;;
*) fail "unexpected output: $out" ;;
esac

# The same as an unprivileged user: a read-only mapping is all a client needs, rings included.
if command -v setpriv >/dev/null; then
	out=$(timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$sample" -n 50 "$state" 2>&1) || fail "wait_raw as nobody: $out"
	echo "as nobody: $out"
fi

# Trust: the same bytes in a directory anyone can write (not sticky) are not evidence.
mkdir "$dir/open"
chmod 0777 "$dir/open"
cp "$state" "$dir/open/state"
if out=$(timeout 60 "$sample" -n 1 "$dir/open/state" 2>&1); then
	fail "a file in a world-writable directory was trusted: $out"
fi
case $out in
*"Operation not permitted"*) echo "untrusted directory refused: $out" ;;
*) fail "untrusted directory: unexpected error: $out" ;;
esac

# Stop the daemon: the file is left valid and stopped, and a new barrier cannot pass.
kill -TERM "$pid"
wait "$pid"
status=$?
pid=
[ "$status" = 0 ] || fail "the daemon exited with status $status on SIGTERM"
if out=$(timeout 60 "$sample" -n 1 "$state" 2>&1); then
	fail "a barrier passed with the daemon stopped: $out"
fi
case $out in
*"Stale file handle"*) echo "stopped daemon reported: $out" ;;
*) fail "stopped daemon: unexpected error: $out" ;;
esac
echo "PASS"
