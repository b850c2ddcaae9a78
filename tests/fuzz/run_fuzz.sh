#!/bin/sh
# SPDX-License-Identifier: MIT
# run_fuzz.sh BIN_DIR FUZZ_SRC_DIR OUT_DIR SECONDS TARGET...: run the libFuzzer targets
# (BIN_DIR/fuzz_TARGET) side by side for SECONDS each, from the committed seeds
# (FUZZ_SRC_DIR/corpus/TARGET, read only) and what earlier runs found (OUT_DIR/corpus/TARGET,
# where new inputs go).  Fails on any crash, leak, UB report or timeout; the input that caused
# it is left in OUT_DIR/artifacts/TARGET/ and the log in OUT_DIR/TARGET.log.  Run by ctest as
# test_fuzz and test_fuzz_long_*.  Reproduce a crash with
#   BIN_DIR/fuzz_TARGET OUT_DIR/artifacts/TARGET/crash-...
set -eu
bin=$1 src=$2 out=$3 secs=$4
shift 4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bd-fuzz-run-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export TMPDIR="$tmp" # the targets' own files (a state file, a fake tracefs) go there
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0

pids=
for t in "$@"; do
	[ -x "$bin/fuzz_$t" ] || { echo "no $bin/fuzz_$t (is the build complete?)"; exit 1; }
	mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
	dict=
	[ -f "$src/dict/$t.dict" ] && dict="-dict=$src/dict/$t.dict"
	# shellcheck disable=SC2086
	"$bin/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" $dict \
		"$out/corpus/$t" "$src/corpus/$t" >"$out/$t.log" 2>&1 &
	pids="$pids $!:$t"
done

fail=0
for pt in $pids; do
	pid=${pt%%:*} t=${pt#*:}
	if wait "$pid"; then rc=0; else rc=$?; fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log")
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$t.log")
	cov=$(grep -o 'cov: [0-9]*' "$out/$t.log" | tail -n 1)
	echo "fuzz_$t: exit $rc, ${execs:-?} executions in ${secs} s (${speed:-?}/s), $cov"
	if [ "$rc" -ne 0 ]; then
		fail=1
		echo "---- fuzz_$t failed; the end of $out/$t.log:"
		tail -n 60 "$out/$t.log"
		for a in "$out/artifacts/$t"/*; do
			[ -e "$a" ] && echo "reproduce: $bin/fuzz_$t $a"
		done
	fi
done
exit $fail
