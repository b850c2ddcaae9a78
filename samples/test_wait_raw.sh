#!/bin/sh
# SPDX-License-Identifier: MIT
# test_wait_raw.sh DAEMON WAIT_RAW WORKDIR: samples/wait_raw.c against the real daemon on a
# temporary state path.  It must pass barriers while the daemon runs (as root and as nobody),
# refuse a copy of the file in a directory anyone can write (trust), and report the daemon gone
# (-ESTALE) once it has stopped.  Needs root and BPF: exit 77 (skip) without them, unless
# BARRIERD_REQUIRE_BPF=1.
set -u
daemon=$1 sample=$2 work=$3

. "$(dirname "$0")/daemon_lib.sh"
sample_daemon_start "$daemon" "$work" wait_raw

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
