#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# barrierd-metrics.service and .timer under a real systemd (tests/systemd/nspawn_run.sh boots
# one on an overlay of this machine with the build installed): metrics_scenario.sh there.
#   test_metrics_nspawn.sh SOURCE_DIR BUILD_DIR
# Root and systemd-nspawn: skips (77) without them unless BARRIERD_REQUIRE_BPF=1.
set -euo pipefail
src=$1 build=$2
results=$build/tests/cli/metrics-nspawn
rm -rf "$results"
rc=0
"$src/tests/systemd/nspawn_run.sh" "$src" "$build" "$src/tests/cli/metrics_scenario.sh" \
	"$results" 120 || rc=$?
[ "$rc" = 77 ] && exit 77
cat "$results/scenario.log" 2>/dev/null || true
if [ "$(cat "$results/verdict" 2>/dev/null)" != PASS ]; then
	echo "FAIL: the scenario did not pass (nspawn exit $rc); logs in $results:"
	cat "$results/status.txt" "$results/journal.txt" 2>/dev/null | tail -40
	exit 1
fi
