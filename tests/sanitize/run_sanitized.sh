#!/usr/bin/env bash
# The whole project built with ASan and UBSan in a folder of the build tree, and its ctest suite
# run there (test_sanitize).
#   run_sanitized.sh SOURCE_DIR BUILD_DIR C_COMPILER INSTALL_PREFIX
# UBSan findings fail (-fno-sanitize-recover=all); ASan's and LSan's always do.  The nested
# suite leaves out what is labelled long, and what is labelled sanitize: this test itself and
# the valgrind runs, which a sanitized build does not define anyway.  BARRIERD_REQUIRE_BPF and
# the rest of the environment pass through to the nested tests.  The build folder stays
# between runs: the next run builds incrementally.
set -euo pipefail
src=$1 dir=$2 cc=$3 prefix=$4
start=$(date +%s)

# Stack traces for UBSan's reports too (ASan prints them anyway), unless the caller chose.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

cmake -S "$src" -B "$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_INSTALL_PREFIX="$prefix" \
	-DBARRIERD_WERROR=ON -DBARRIERD_SANITIZE=address,undefined \
	-DCMAKE_C_FLAGS=-fno-sanitize-recover=all >"$dir.configure.log" 2>&1 ||
	{ cat "$dir.configure.log"; echo "FAIL: configure"; exit 1; }
cmake --build "$dir" -j"$(nproc)" >"$dir.build.log" 2>&1 ||
	{ tail -n 100 "$dir.build.log"; echo "FAIL: build"; exit 1; }
built=$(date +%s)
echo "sanitized build: $((built - start)) s"
# A test that failed gets one more run: the idle-credit tests (test_barriers' idle_cpu*,
# test_detach, test_mutant_idle_counter) need an idle CPU and fail on a saturated machine, in
# any build.  An ASan or UBSan report is never retried: it fails the run whatever the rerun
# says.  A leak report is retried: a test whose assertion failed left its test function by
# cmocka's longjmp, so what it had opened is reported as leaked (barrierd_open's handle); a
# leak of the code itself fails the rerun too.
log=$dir.ctest.log
rc=0
ctest --test-dir "$dir" --output-on-failure -LE '^(long|sanitize)$' 2>&1 | tee "$log" ||
	rc=$?
if [ "$rc" != 0 ]; then
	echo "--- rerunning what failed, once"
	rc=0
	ctest --test-dir "$dir" --output-on-failure --rerun-failed 2>&1 | tee -a "$log" || rc=$?
fi
if grep -E 'ERROR: AddressSanitizer|runtime error:|Sanitizer has encountered' "$log" >/dev/null; then
	echo "FAIL: a sanitizer reported (see above, or $log)"
	rc=1
fi
echo "sanitized suite: $(($(date +%s) - built)) s (build and suite: $(($(date +%s) - start)) s)"
exit "$rc"
