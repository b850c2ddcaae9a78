#!/bin/sh
# SPDX-License-Identifier: MIT
# test_ec.sh DAEMON EC_SAMPLE WORKDIR: samples/ec.c against the real daemon on a temporary
# state path, then with no daemon at all.  Needs root and BPF for the first part: exit 77
# (skip) without them, unless BARRIERD_REQUIRE_BPF=1.
set -u
daemon=$1 sample=$2 work=$3

. "$(dirname "$0")/daemon_lib.sh"
sample_daemon_start "$daemon" "$work" ec

out=$(timeout 120 "$sample" -n 200000 "$state" 2>&1) || fail "ec_sample: $out"
echo "$out"
case $out in
"200000 items passed in order (barrierd)"*) ;;
*) fail "unexpected output: $out" ;;
esac

kill -TERM "$pid"
wait "$pid"
pid=
out=$(timeout 120 "$sample" -n 20000 "$dir/none/state" 2>&1) || fail "ec_sample, no daemon: $out"
echo "$out"
case $out in
*"20000 items passed in order (no daemon)"*) ;;
*) fail "unexpected output without a daemon: $out" ;;
esac
echo "PASS"
