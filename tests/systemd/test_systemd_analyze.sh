#!/usr/bin/env bash
# systemd's own checks on the generated unit:
#   test_systemd_analyze.sh UNIT INSTALLED_DAEMON BUILD_DAEMON [THRESHOLD EXPECTED [UNIT...]]
# `systemd-analyze verify` must be clean, and `systemd-analyze security --offline=true` must
# rate it at most THRESHOLD, with exactly the known exposed items below.  verify needs the
# daemon to exist, so it runs on a copy whose paths name the build's daemon; the man page is
# not installed yet (test_systemd_nspawn verifies the installed unit with the man check on).
# Another service (barrierd-metrics.service) gives its own THRESHOLD and EXPECTED items (one
# per line), and the units verified with it (its timer).
set -euo pipefail
unit=$1 installed=$2 built=$3
name=$(basename "$unit")

# Measured with systemd 252 (Debian 12): 1.1 "OK".  At most that: a lost setting fails here.
THRESHOLD=${4:-1.1}
# What still counts as exposure, each for a reason (README.md, "Running it as a service"):
EXPECTED="CapabilityBoundingSet=~CAP_BPF
CapabilityBoundingSet=~CAP_SYS_(NICE|RESOURCE)
DeviceAllow=
PrivateUsers=
ProcSubset=
RestrictAddressFamilies=~AF_UNIX
RestrictRealtime=
RootDirectory=/RootImage=
SystemCallFilter=~@privileged
SystemCallFilter=~@resources
User=/DynamicUser="
if [ $# -ge 5 ]; then
	EXPECTED=$5
fi
others=("${@:6}")

if ! command -v systemd-analyze >/dev/null; then
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then echo "FAIL: no systemd-analyze"; exit 1; fi
	echo "SKIP: no systemd-analyze (Debian package systemd)"; exit 77
fi
export LC_ALL=C SYSTEMD_PAGER='' SYSTEMD_COLORS=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|$installed|$built|g" "$unit" >"$tmp/$name"
grep -q "^ExecStart=$built " "$tmp/$name" || { echo "FAIL: ExecStart is not $installed"; exit 1; }
verify=("$tmp/$name")
for o in "${others[@]}"; do
	cp "$o" "$tmp/"
	verify+=("$tmp/$(basename "$o")")
done
fails=0

# Any word about our unit fails; notes about the host's other units are only shown.
if systemd-analyze verify --man=no "${verify[@]}" >"$tmp/verify.txt" 2>&1 &&
	! grep -q barrierd "$tmp/verify.txt"; then
	echo "PASS: systemd-analyze verify: clean"
	sed 's/^/  note: /' "$tmp/verify.txt"
else
	echo "FAIL: systemd-analyze verify:"; cat "$tmp/verify.txt"; fails=$((fails + 1))
fi

rc=0
systemd-analyze security --offline=true --threshold="${THRESHOLD/./}" --no-pager \
	"$tmp/$name" >"$tmp/security.txt" 2>&1 || rc=$?
score=$(sed -n "s/.*Overall exposure level for $name: \([0-9.]*\).*/\1/p" "$tmp/security.txt")
if [ "$rc" = 0 ] && [ -n "$score" ]; then
	echo "PASS: systemd-analyze security: exposure $score (threshold $THRESHOLD)"
else
	echo "FAIL: systemd-analyze security: exposure '${score}' above $THRESHOLD (exit $rc):"
	grep -E '^- |Overall' "$tmp/security.txt" || cat "$tmp/security.txt"
	fails=$((fails + 1))
fi

systemd-analyze security --offline=true --json=short --no-pager "$tmp/$name" 2>/dev/null |
	sed 's/},{/}\n{/g' | grep '"exposure":"[0-9.]*[1-9]' |
	sed -n 's/.*"name":"\([^"]*\)".*/\1/p' | sort >"$tmp/exposed.txt"
if [ "$(cat "$tmp/exposed.txt")" = "$(sort <<<"$EXPECTED")" ]; then
	echo "PASS: exposed items are the known ones ($(wc -l <"$tmp/exposed.txt"))"
else
	echo "FAIL: exposed items changed (expected, then found; update the unit or this list"
	echo "and README.md together):"
	diff <(sort <<<"$EXPECTED") "$tmp/exposed.txt" || true
	fails=$((fails + 1))
fi

echo "$((3 - fails)) passed, $fails failed"
[ "$fails" = 0 ]
