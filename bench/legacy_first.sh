#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The first barrier of an original-layout client (bench_legacy: 10 ms futex waits, no ring)
# against a daemon that has been idle for IDLE_S seconds (default 1.5: 15 heartbeats), on its
# own, not inside a warm-up: a fresh private daemon per repetition, one short bench_legacy run,
# and its first legacy call's latency.  Several daemons side by side (LABEL=PATH), alternating.
#
#   bench/legacy_first.sh BUILD_DIR [LABEL=DAEMON ...]
#
# Environment: FIRST_REPS (10), IDLE_S (1.5).  Prints one line per call and, per daemon, the
# median and worst first-call latency in ms.
set -euo pipefail

build=$(cd "${1:?usage: legacy_first.sh BUILD_DIR [LABEL=DAEMON ...]}" && pwd)
shift
daemons=("$@")
[ ${#daemons[@]} -gt 0 ] || daemons=("current=$build/src/barrierd")
reps=${FIRST_REPS:-10}
idle=${IDLE_S:-1.5}
tmp=$(mktemp -d /tmp/barrierd-first.XXXXXX)
state=$tmp/state
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

for r in $(seq "$reps"); do
	for d in "${daemons[@]}"; do
		rm -f "$state" "$state".* "$tmp/l.csv"
		"${d#*=}" --state "$state" 2>>"$tmp/daemon.log" &
		pid=$!
		for _ in $(seq 200); do [ -s "$state" ] && break; sleep 0.05; done
		sleep "$idle"
		# One call per kind per round, the first after a gap of at most 1 ms.
		"$build/bench/bench_legacy" "$state" 1 first "$r" "$tmp/l.csv" 1 >/dev/null
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		awk -F, -v l="${d%%=*}" '$3 ~ /^legacy/ && (min == "" || $5 < min) {min = $5; lat = $6}
			END {printf "%s %.3f\n", l, lat / 1e6}' "$tmp/l.csv"
	done
done | tee "$tmp/all" >&2
echo "daemon first-call median_ms worst_ms (of $reps)"
for d in "${daemons[@]}"; do
	awk -v l="${d%%=*}" '$1 == l {print $2}' "$tmp/all" | sort -n |
		awk -v l="${d%%=*}" '{v[NR] = $1} END {printf "%s %.3f %.3f\n", l, v[int((NR + 1) / 2)], v[NR]}'
done
