#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs INSIDE the systemd-nspawn container that tests/systemd/nspawn_run.sh boots (a real
# systemd as PID 1, this build installed): barrierd-metrics.service and its timer, sandbox and
# all, as an admin would use them.  Writes scenario.log (stdout) and verdict to /results.
# Environment: BARRIERD_SOURCE_DIR (read-only).
set -euo pipefail

R=/results
src=${BARRIERD_SOURCE_DIR:?}
dir=/var/lib/prometheus/node-exporter
prom=$dir/barrierd.prom
step=setup

finish() {
	local rc=$?
	journalctl -u barrierd-metrics -u barrierd --no-pager -o short-monotonic >"$R/journal.txt" 2>&1 || true
	if [ "$rc" = 0 ]; then
		echo PASS >"$R/verdict"
	else
		echo "FAIL in step '$step' (exit $rc)"
		systemctl status barrierd-metrics.service barrierd-metrics.timer --no-pager \
			>"$R/status.txt" 2>&1 || true
		echo FAIL >"$R/verdict"
	fi
}
trap finish EXIT
fail() { echo "FAIL [$step]: $*"; exit 1; }
pass() { echo "PASS [$step]${1:+: $1}"; }
result() { systemctl show -p Result --value barrierd-metrics.service; }
metrics() { # up|down: the file parses and says so
	/usr/bin/python3 "$src/tests/cli/ops_check.py" metrics "$prom" "$ncpu" "$1" ||
		{ cat "$prom"; fail "$prom does not parse, or is not sane ($1)"; }
	[ "$(stat -c %a "$prom")" = 644 ] || fail "$prom is not 0644"
	[ "$(ls -A "$dir")" = barrierd.prom ] || fail "left behind in $dir: $(ls -A "$dir")"
}
ncpu=0 # the daemon's, once it runs
ldconfig # the installed libbarrierd, as a package's trigger would

step=not-enabled
state=$(systemctl is-enabled barrierd-metrics.timer 2>&1 || true)
[ "$state" = disabled ] || fail "the timer is '$state' after install, want disabled"
pass "the timer is installed disabled"

step=no-directory
systemctl start barrierd-metrics.service
[ "$(systemctl show -p ConditionResult --value barrierd-metrics.service)" = no ] ||
	fail "it ran without node_exporter's directory"
pass "skipped without $dir"

step=no-daemon
mkdir -p "$dir"
systemctl start barrierd-metrics.service || fail "the service failed with no daemon"
[ "$(result)" = success ] || fail "result $(result)"
metrics down
pass "barrierd_up 0 with no daemon, the service succeeds (exit 4 is a success)"

step=daemon
systemctl start barrierd.service
ncpu=$(od -A n -t u8 -N 8 /run/barrierd/state | tr -d ' ')
systemctl start barrierd-metrics.service || fail "the service failed"
[ "$(result)" = success ] || fail "result $(result)"
metrics up
grep -q '^barrierd_daemon_cpu_seconds_total{mode="user"}' "$prom" ||
	fail "no daemon CPU time under the sandbox"
pass "barrierd_up 1, $ncpu CPUs, the daemon's CPU time read under the sandbox"

step=timer
systemctl enable --now barrierd-metrics.timer
before=$(stat -c %Y.%i "$prom")
for _ in $(seq 100); do # hang guard: 10 s (the timer's first run is at once)
	[ "$(stat -c %Y.%i "$prom")" != "$before" ] && break
	sleep 0.1
done
[ "$(stat -c %Y.%i "$prom")" != "$before" ] || fail "the timer did not rewrite $prom"
metrics up
pass "enabled, the timer rewrote the file"

step=daemon-stopped
systemctl stop barrierd.service
systemctl start barrierd-metrics.service || fail "the service failed with a stopped daemon"
metrics down
pass "barrierd_up 0 once the daemon stopped"

step=security
systemd-analyze security --no-pager barrierd-metrics.service | grep Overall || true
