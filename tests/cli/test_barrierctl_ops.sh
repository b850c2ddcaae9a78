#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# barrierctl's machine-readable output against the real daemon, read by real parsers:
#   test_barrierctl_ops.sh BARRIERCTL BARRIERD SOURCE_DIR WORKDIR
# metrics through prometheus_client's OpenMetrics parser and status --json against
# docs/status.schema.json with jsonschema (ops_check.py), for a running daemon, a stopped one,
# no file and a file that is not a state file; and metrics --output's atomic file.  Root and
# BPF (the daemon), Debian's python3-prometheus-client and python3-jsonschema: skips (77)
# without them unless BARRIERD_REQUIRE_BPF=1.  About 2 s.
set -euo pipefail
ctl=$1 daemon=$2 src=$3 work=$4
# shellcheck source=../../samples/daemon_lib.sh
. "$src/samples/daemon_lib.sh"

# Debian's interpreter, which the Debian modules are installed for (not a PATH one).
py=/usr/bin/python3
"$py" -c 'import jsonschema, prometheus_client.openmetrics.parser' 2>/dev/null ||
	skip "needs python3-jsonschema and python3-prometheus-client (Debian packages)"
schema=$src/docs/status.schema.json
# daemon_lib.sh is POSIX sh under set -u: its polling reads a file that may not exist yet.
set +eo pipefail
sample_daemon_start "$daemon" "$work" ops
set -eo pipefail
ncpu=$(word 0)
passed=0

# bctl WANT OUT ARGS...: barrierctl ARGS with stdout to OUT; its exit status must be one of WANT
# ("0|1").
bctl() {
	local want=$1 out=$2 rc=0
	shift 2
	"$ctl" "$@" >"$out" 2>"$out.err" || rc=$?
	if ! [[ "$rc" =~ ^($want)$ ]]; then
		cat "$out" "$out.err"
		fail "barrierctl $*: exit $rc, want $want"
	fi
}

# schema FILE HEALTH and metrics FILE up|down: ops_check.py's verdict.
schema() {
	"$py" "$src/tests/cli/ops_check.py" schema "$schema" "$1" "$2" ||
		{ cat "$1"; fail "status --json ($2) does not match docs/status.schema.json"; }
	passed=$((passed + 1))
}
metrics() {
	"$py" "$src/tests/cli/ops_check.py" metrics "$1" "$ncpu" "$2" ||
		{ cat "$1"; fail "metrics ($2) do not parse or are not sane"; }
	passed=$((passed + 1))
}

# A running daemon, after one barrier so that its counters have moved.
bctl 0 "$dir/wait.txt" wait --state "$state" --timeout 5000
bctl '0|1' "$dir/running.json" status --json --state "$state" --lag-threshold 1000
schema "$dir/running.json" healthy
bctl 0 "$dir/running.prom" metrics --state "$state" --lag-threshold 1000
metrics "$dir/running.prom" up
echo "PASS: running daemon: status --json valid, metrics parse ($ncpu CPUs)"

# --output: one complete file, readable by the exporter's user, no temporary left behind.
mkdir "$dir/textfile"
bctl 0 "$dir/output.txt" metrics --state "$state" --output "$dir/textfile/barrierd.prom"
[ ! -s "$dir/output.txt" ] || fail "metrics --output also wrote to stdout"
[ "$(stat -c %a "$dir/textfile/barrierd.prom")" = 644 ] || fail "metrics --output: not 0644"
[ "$(ls -A "$dir/textfile")" = barrierd.prom ] || fail "metrics --output left $(ls -A "$dir/textfile")"
metrics "$dir/textfile/barrierd.prom" up
bctl 1 "$dir/output.txt" metrics --state "$state" --output "$dir/no-such-dir/barrierd.prom"
grep -q "cannot create a file beside $dir/no-such-dir/barrierd.prom" "$dir/output.txt.err" ||
	fail "metrics --output into a missing directory: no clear message"
echo "PASS: metrics --output: atomic, 0644, nothing left behind; a missing directory is named"

# The daemon stopped: a valid file that says so.
kill "$pid"
wait "$pid" || fail "the daemon did not stop cleanly"
pid=
bctl 3 "$dir/stopped.json" status --json --state "$state"
schema "$dir/stopped.json" stopped
bctl 3 "$dir/stopped.prom" metrics --state "$state"
metrics "$dir/stopped.prom" down
# The textfile keeps being written while the daemon is down: barrierd_up 0 replaces the last.
bctl 3 "$dir/output.txt" metrics --state "$state" --output "$dir/textfile/barrierd.prom"
metrics "$dir/textfile/barrierd.prom" down
echo "PASS: stopped daemon: status --json valid (exit 3), metrics barrierd_up 0 alone"

# No file, and a file that is not a state file: the error object, exit 4.
bctl 4 "$dir/nofile.json" status --json --state "$dir/missing/state"
schema "$dir/nofile.json" error
grep -q "barrierctl: status: cannot use $dir/missing/state" "$dir/nofile.json.err" ||
	fail "status --json without a file: no message on stderr"
bctl 4 "$dir/nofile.prom" metrics --state "$dir/missing/state"
metrics "$dir/nofile.prom" down
head -c 4096 /dev/urandom >"$dir/bad"
chmod 0644 "$dir/bad"
bctl 4 "$dir/bad.json" status --json --state "$dir/bad"
schema "$dir/bad.json" error
bctl 4 "$dir/bad.prom" metrics --state "$dir/bad"
metrics "$dir/bad.prom" down
echo "PASS: no file, bad file: status --json error objects valid (exit 4), metrics barrierd_up 0"

echo "$passed checks by the parsers passed"
