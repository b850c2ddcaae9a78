#!/usr/bin/env bash
# Quick side-by-side latency of barrierd_barrier() and membarrier(GLOBAL), idle and loaded,
# plus the daemon's CPU time over 60 s in each case (schedstat: exact, not tick-sampled).  Needs root and a built tree:
#   bench/quick_latency.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-1000}
dir=$(mktemp -d /tmp/barrierd-bench.XXXXXX)
chmod 0755 "$dir"
"$build"/src/barrierd --state "$dir/state" 2>"$dir/daemon.log" &
dpid=$!
spin=()
cleanup() {
	for p in "${spin[@]}"; do kill "$p" 2>/dev/null || true; done
	kill "$dpid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$dir/state" ] && break; sleep 0.05; done
sleep 0.5

cpu_ns() { local s=0 t; for t in /proc/$dpid/task/*/schedstat; do s=$((s + $(cut -d" " -f1 "$t"))); done; echo $s; }

measure() { # $1 = label
	echo "== $1: $rounds interleaved rounds"
	"$build"/samples/barrier_compare -q -n "$rounds" "$dir/state"
	local t0 t1
	t0=$(cpu_ns)
	sleep 60
	t1=$(cpu_ns)
	echo "daemon CPU over 60 s with no waiter: $(( (t1 - t0) / 1000000 )) ms ($(awk "BEGIN{printf \"%.3f\", ($t1-$t0)/1e9/60*100}") % of a core)"
	t0=$(cpu_ns)
	timeout 60 "$build"/samples/barrier_compare -q -n 10000000 "$dir/state" >/dev/null || true
	t1=$(cpu_ns)
	echo "daemon CPU over 60 s with a waiter looping on barriers: $(( (t1 - t0) / 1000000 )) ms ($(awk "BEGIN{printf \"%.3f\", ($t1-$t0)/1e9/60*100}") % of a core)"
}

measure "idle machine"
for c in $(seq 0 $(( $(nproc) - 1 ))); do
	taskset -c "$c" nice -n 19 sh -c 'while :; do :; done' &
	spin+=($!)
done
measure "loaded (nice-19 spinner on every CPU)"
