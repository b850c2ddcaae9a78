#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The metrics service and timer under systemd's own checks:
#   test_metrics_units.sh SERVICE TIMER INSTALLED_BARRIERCTL BUILD_BARRIERCTL
# systemd-analyze verify must be clean for both; systemd-analyze security --offline must rate
# the service at most THRESHOLD with exactly the known exposed items; the timer must have an
# [Install] section (enabling works) while nothing enables it at install.  Runs on copies
# whose ExecStart names the build's barrierctl.  No root; about a second.
set -euo pipefail
service=$1 timer=$2 installed=$3 built=$4

# Measured with systemd 252 (Debian 12): 0.7 "SAFE".
THRESHOLD=0.7
# What still counts as exposure, each for a reason (systemd/barrierd-metrics.service.in):
#   root, for a directory that is root's; the daemon's /proc/PID/stat for its CPU time.
EXPECTED="DeviceAllow=
ProtectProc=
RootDirectory=/RootImage=
User=/DynamicUser="

if ! command -v systemd-analyze >/dev/null; then
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then echo "FAIL: no systemd-analyze"; exit 1; fi
	echo "SKIP: no systemd-analyze (Debian package systemd)"; exit 77
fi
export LC_ALL=C SYSTEMD_PAGER='' SYSTEMD_COLORS=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|$installed|$built|g" "$service" >"$tmp/barrierd-metrics.service"
cp "$timer" "$tmp/barrierd-metrics.timer"
grep -q "^ExecStart=$built metrics " "$tmp/barrierd-metrics.service" ||
	{ echo "FAIL: ExecStart is not $installed metrics"; exit 1; }
fails=0

if systemd-analyze verify --man=no "$tmp/barrierd-metrics.service" "$tmp/barrierd-metrics.timer" \
	>"$tmp/verify.txt" 2>&1 && ! grep -q barrierd "$tmp/verify.txt"; then
	echo "PASS: systemd-analyze verify: clean"
else
	echo "FAIL: systemd-analyze verify:"; cat "$tmp/verify.txt"; fails=$((fails + 1))
fi

rc=0
systemd-analyze security --offline=true --threshold="${THRESHOLD/./}" --no-pager \
	"$tmp/barrierd-metrics.service" >"$tmp/security.txt" 2>&1 || rc=$?
score=$(sed -n 's/.*Overall exposure level for barrierd-metrics.service: \([0-9.]*\).*/\1/p' \
	"$tmp/security.txt")
if [ "$rc" = 0 ] && [ -n "$score" ]; then
	echo "PASS: systemd-analyze security: exposure $score (threshold $THRESHOLD)"
else
	echo "FAIL: systemd-analyze security: exposure '$score' above $THRESHOLD (exit $rc):"
	grep -E '^. |Overall' "$tmp/security.txt" || cat "$tmp/security.txt"
	fails=$((fails + 1))
fi
systemd-analyze security --offline=true --json=short --no-pager "$tmp/barrierd-metrics.service" \
	2>/dev/null | sed 's/},{/}\n{/g' | grep '"exposure":"[0-9.]*[1-9]' |
	sed -n 's/.*"name":"\([^"]*\)".*/\1/p' | sort >"$tmp/exposed.txt"
if [ "$(cat "$tmp/exposed.txt")" = "$(sort <<<"$EXPECTED")" ]; then
	echo "PASS: exposed items are the known ones ($(wc -l <"$tmp/exposed.txt"))"
else
	echo "FAIL: exposed items changed (expected, then found):"
	diff <(sort <<<"$EXPECTED") "$tmp/exposed.txt" || true
	fails=$((fails + 1))
fi

# Off by default: the service has no [Install] (only the timer starts it), the timer one.
if ! grep -q '^\[Install\]' "$service" && grep -q '^WantedBy=timers.target' "$timer"; then
	echo "PASS: only the timer can be enabled, and nothing enables it at install"
else
	echo "FAIL: [Install] sections"; fails=$((fails + 1))
fi

echo "$((4 - fails)) passed, $fails failed"
[ "$fails" = 0 ]
