#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What one unprivileged user can make the daemon spend (docs/THREAT-MODEL.md §5, PERFORMANCE.md
# "Following under attack"): a private daemon, and bench_follow run as user nobody with
#
#   idle       nothing (the daemon's floor)
#   sleepers   4 threads asleep unmarked on the global word: the daemon follows
#   follow     those 4 sleepers and 2 pipe ping-pong pairs (every bounce is a switch it hears)
#   ring       a doorbell flood alone
#   yield      a switch flood alone (two threads pinned to CPU 1 calling sched_yield())
#   combined   sleepers, ping-pong pairs, the doorbell flood and the switch flood together
#
# Each for WINDOWS windows of SECONDS: the daemon's CPU (every thread's schedstat run time), its
# passes, credit passes and nudges per second, and the machine's busy share.  Then an
# original-layout client (bench_legacy, 10 ms futex waits) quiet and under the combined attack:
# its p50 and p99.  Several daemon binaries run side by side, scenario by scenario (LABEL=PATH):
# a side-by-side comparison of builds in one run, on the same machine load.
#
#   bench/follow_attack.sh BUILD_DIR [LABEL=DAEMON ...]
#
# Environment: FOLLOW_WINDOWS (3), FOLLOW_SECONDS (20), FOLLOW_SCENARIOS (all of the above),
# FOLLOW_LEGACY_SECONDS (20; 0 skips the legacy client), FOLLOW_OUT (a results directory).
# Prints one line per window and a summary (min and median per scenario and daemon).
set -euo pipefail

build=$(cd "${1:?usage: follow_attack.sh BUILD_DIR [LABEL=DAEMON ...]}" && pwd)
shift
daemons=("$@")
[ ${#daemons[@]} -gt 0 ] || daemons=("current=$build/src/barrierd")
windows=${FOLLOW_WINDOWS:-3}
secs=${FOLLOW_SECONDS:-20}
scenarios=${FOLLOW_SCENARIOS:-idle sleepers follow ring yield combined}
legacy_secs=${FOLLOW_LEGACY_SECONDS:-20}

[ "$(id -u)" = 0 ] || {
	echo "follow_attack.sh: run as root (the daemon loads BPF)" >&2
	exit 77
}
tmp=$(mktemp -d /tmp/barrierd-follow.XXXXXX)
chmod 0755 "$tmp" # user nobody maps the state file
out=${FOLLOW_OUT:-$tmp}
mkdir -p "$out"
state=$tmp/state
cp "$build/bench/bench_follow" "$tmp/bench_follow"
chmod 0755 "$tmp/bench_follow"
daemon_pid=""

cleanup() {
	[ -z "$daemon_pid" ] || kill -TERM "$daemon_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	[ -n "${FOLLOW_OUT:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

rd64() { # FILE OFFSET
	od -A n -t u8 -j "$2" -N 8 "$1" | tr -d ' '
}

start_daemon() { # BINARY
	rm -f "$state"
	"$1" --state "$state" 2>>"$out/daemon.log" &
	daemon_pid=$!
	for _ in $(seq 200); do
		if [ -s "$state" ] && [ $(($(rd64 "$state" 56) & 1)) -eq 1 ] &&
			[ "$(rd64 "$state" 88)" = "$daemon_pid" ]; then
			return 0
		fi
		sleep 0.05
	done
	echo "follow_attack.sh: the daemon $1 did not start" >&2
	exit 1
}

stop_daemon() {
	kill -TERM "$daemon_pid" 2>/dev/null || true
	wait "$daemon_pid" 2>/dev/null || true
	daemon_pid=""
}

sched_ns() { # PID: every thread's run time
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'
}

busy_jiffies() { # "busy total" over all CPUs
	awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit}' /proc/stat
}

attack_args() { # SCENARIO
	case $1 in
	idle) echo "" ;;
	sleepers) echo "sleepers 4" ;;
	follow) echo "sleepers 4 pingpong 2" ;;
	ring) echo "ring" ;;
	yield) echo "yield" ;;
	combined) echo "sleepers 4 pingpong 2 ring yield" ;;
	esac
}

as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

# One window: the attack starts, settles for a second, then SECONDS are measured.
window() { # LABEL SCENARIO N
	local x c0 c1 t0 t1 p0 p1 cp0 cp1 n0 n1 b0 b1 apid
	x=$(rd64 "$state" 120)
	# shellcheck disable=SC2046
	as_nobody "$tmp/bench_follow" "$state" $((secs + 2)) $(attack_args "$2") >"$tmp/attack.out" &
	apid=$!
	sleep 1
	c0=$(sched_ns "$daemon_pid")
	p0=$(rd64 "$state" $((x + 32)))
	cp0=$(rd64 "$state" $((x + 40)))
	n0=$(rd64 "$state" $((x + 80)))
	read -r b0 bt0 < <(busy_jiffies)
	t0=$(date +%s%N)
	sleep "$secs"
	t1=$(date +%s%N)
	c1=$(sched_ns "$daemon_pid")
	p1=$(rd64 "$state" $((x + 32)))
	cp1=$(rd64 "$state" $((x + 40)))
	n1=$(rd64 "$state" $((x + 80)))
	read -r b1 bt1 < <(busy_jiffies)
	wait "$apid"
	awk -v l="$1" -v s="$2" -v n="$3" -v c="$((c1 - c0))" -v t="$((t1 - t0))" \
		-v p="$((p1 - p0))" -v cp="$((cp1 - cp0))" -v nu="$((n1 - n0))" \
		-v b="$((b1 - b0))" -v bt="$((bt1 - bt0))" -v a="$(cat "$tmp/attack.out")" \
		'BEGIN {d = t / 1e9; printf "%s,%s,%d,%.2f,%.0f,%.0f,%.1f,%.0f,%s\n", l, s, n,
			100 * c / t, p / d, cp / d, nu / d, bt ? 100 * b / bt : 0, a}' |
		tee -a "$out/follow_cpu.csv"
}

# The original-layout client for FOLLOW_LEGACY_SECONDS, under SCENARIO's attack.
legacy() { # LABEL SCENARIO
	local apid=""
	if [ "$2" != idle ]; then
		# shellcheck disable=SC2046
		as_nobody "$tmp/bench_follow" "$state" $((legacy_secs + 2)) $(attack_args "$2") \
			>/dev/null &
		apid=$!
		sleep 1
	fi
	"$build/bench/bench_legacy" "$state" "$legacy_secs" "$1-$2" 1 "$out/legacy.csv" \
		>>"$out/legacy.log"
	[ -z "$apid" ] || wait "$apid"
}

echo "daemon,scenario,window,daemon_cpu_pct,passes_per_s,credit_passes_per_s,nudges_per_s,machine_busy_pct,attack" \
	>"$out/follow_cpu.csv"
rm -f "$out/legacy.csv"
echo "# $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); ${windows} windows of ${secs} s"
for s in $scenarios; do
	for n in $(seq "$windows"); do
		for d in "${daemons[@]}"; do
			start_daemon "${d#*=}"
			sleep 1
			window "${d%%=*}" "$s" "$n"
			stop_daemon
		done
	done
done
if [ "$legacy_secs" != 0 ]; then
	for s in idle combined; do
		for d in "${daemons[@]}"; do
			start_daemon "${d#*=}"
			legacy "${d%%=*}" "$s"
			stop_daemon
		done
	done
fi

echo "# summary: daemon CPU % and passes/s, min / median over the windows"
awk -F, 'NR > 1 {k = $1 "," $2; n[k]++; cpu[k, n[k]] = $4; ps[k, n[k]] = $5; nu[k, n[k]] = $7;
	if (!(k in seen)) {seen[k] = 1; order[++m] = k}}
	function med(a, k, c,   i, j, t, v) {
		for (i = 1; i <= c; i++) v[i] = a[k, i]
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] + 0 < v[i] + 0) {t = v[i]; v[i] = v[j]; v[j] = t}
		return (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
	}
	function mn(a, k, c,   i, x) {x = a[k, 1]; for (i = 2; i <= c; i++) if (a[k, i] + 0 < x + 0) x = a[k, i]; return x}
	END {printf "%-24s %16s %16s %12s\n", "daemon,scenario", "cpu% min/med", "passes/s min/med", "nudges/s med"
		for (i = 1; i <= m; i++) {k = order[i]; c = n[k]
			printf "%-24s %7.2f/%-8.2f %7.0f/%-8.0f %12.1f\n", k, mn(cpu, k, c), med(cpu, k, c),
				mn(ps, k, c), med(ps, k, c), med(nu, k, c)}}' "$out/follow_cpu.csv"
if [ -s "$out/legacy.csv" ]; then
	echo "# original-layout client: latency p50 / p99 (ms), warm calls only"
	awk -F, 'NR > 1 && $7 == 0 {k = $1 "," $3; v[k, ++n[k]] = $6 / 1e6; to[k] += $8
		if (!(k in seen)) {seen[k] = 1; order[++m] = k}}
		END {for (i = 1; i <= m; i++) {k = order[i]; c = n[k]
			for (a = 1; a <= c; a++) {x = v[k, a]; for (b = a - 1; b >= 1 && w[b] > x; b--) w[b + 1] = w[b]; w[b + 1] = x}
			j = int(c * 0.99) + 1
			if (j > c) j = c
			printf "%-40s n %4d p50 %7.3f p99 %7.3f timeouts %d\n", k, c, w[int(c * 0.5) + 1], w[j], to[k]
			delete w}}' "$out/legacy.csv"
fi
