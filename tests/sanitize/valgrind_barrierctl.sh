#!/usr/bin/env bash
# barrierctl under memcheck (valgrind.sh): help, version and a usage error always; as root,
# status, wait and a short bench against a real daemon on a temporary state file.
#   valgrind_barrierctl.sh BARRIERCTL DAEMON BUILD_DIR
# Without root the daemon part skips (77), or fails under BARRIERD_REQUIRE_BPF=1.
set -euo pipefail
bctl=$1 daemon=$2 build=$3
vg() { "$(dirname "$0")/valgrind.sh" "$@"; }
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (scripts/deps.sh --test)"; exit 77; }

# expect CODES ARGS...: barrierctl ARGS under memcheck exits with one of CODES ("0|1"); 99 is
# memcheck's finding.
expect() {
	local want=$1 rc=0
	shift
	vg "$bctl" "$@" >/dev/null || rc=$?
	if ! [[ "|$want|" == *"|$rc|"* ]]; then
		echo "FAIL: barrierctl $*: exit $rc, expected $want"
		exit 1
	fi
	echo "ok: barrierctl $* (exit $rc)"
}
expect 0 --help
expect 0 --version
expect 64 status --no-such-option
expect 4 status --state /nonexistent/barrierd/state

if [ "$(id -u)" != 0 ]; then
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then echo "FAIL: needs root"; exit 1; fi
	echo "SKIP: the daemon part needs root"; exit 77
fi
tmp=$(mktemp -d "$build/tests/valgrind.XXXXXX")
chmod 0755 "$tmp"
dpid=
cleanup() { [ -n "$dpid" ] && kill "$dpid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
"$daemon" --state "$tmp/state" 2>"$tmp/daemon.log" &
dpid=$!
for _ in $(seq 200); do # until the daemon runs (0 healthy, 1 degraded); hang guard 10 s
	rc=0
	"$bctl" status --state "$tmp/state" >/dev/null 2>&1 || rc=$?
	[ "$rc" -le 1 ] && break
	sleep 0.05
done
[ "$rc" -le 1 ] || { echo "FAIL: the daemon did not start: $rc"; cat "$tmp/daemon.log"; exit 1; }
# Healthy or degraded: under memcheck barrierctl is slow enough that a CPU may seem to lag.
expect "0|1" status --state "$tmp/state"
expect "0|1" status --json --state "$tmp/state"
expect 0 wait --state "$tmp/state"
expect 0 bench --state "$tmp/state" -n 50 -m barrierd,vtime,membarrier-global
echo "barrierctl under memcheck: no errors, no definite leaks"
