#!/usr/bin/env bash
# barrierd.service under a real systemd: boot one as PID 1 in systemd-nspawn on an overlay of
# this machine's / with the build installed (nspawn_run.sh), run scenario.sh there, and report.
#   test_systemd_nspawn.sh SOURCE_DIR BUILD_DIR INSTALL_PREFIX RESTART_CLIENT
# Root; skips (77) without root, systemd-nspawn or BTF, fails instead under
# BARRIERD_REQUIRE_BPF=1.  Hang guard: 120 s for the container.
set -euo pipefail
src=$1 build=$2 prefix=$3 client=$4
here=$(cd "$(dirname "$0")" && pwd)
results=$build/tests/systemd/nspawn
start=$(date +%s%N)

if [ "$(id -u)" != 0 ]; then
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then echo "FAIL: needs root, and BARRIERD_REQUIRE_BPF=1 forbids skipping"; exit 1; fi
	echo "SKIP: needs root"; exit 77
fi
case $prefix in
/usr | /usr/local) ;;
*)
	# systemd looks for units only under /usr/lib, /usr/local/lib and /etc.
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then echo "FAIL: prefix $prefix: systemd would not find the unit"; exit 1; fi
	echo "SKIP: CMAKE_INSTALL_PREFIX=$prefix: systemd finds units only under /usr and /usr/local"
	exit 77 ;;
esac

rm -rf "$results"
mkdir -p "$results"
rc=0
"$here/nspawn_run.sh" "$src" "$build" "$here/scenario.sh" "$results" 120 "$client" || rc=$?
[ "$rc" = 77 ] && exit 77
secs=$(( ($(date +%s%N) - start) / 1000000 ))

cat "$results/scenario.log" 2>/dev/null || echo "(no scenario.log)"
verdict=$(cat "$results/verdict" 2>/dev/null || echo "none")
if [ "$rc" = 0 ] && [ "$verdict" = PASS ]; then
	echo "PASS: barrierd.service under systemd in nspawn ($secs ms in all)"
	exit 0
fi
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	echo "FAIL: the container did not finish within the hang guard"
fi
echo "FAIL: nspawn exit $rc, verdict $verdict ($secs ms); results in $results"
echo "--- journal of barrierd.service"
cat "$results/journal.txt" 2>/dev/null || true
echo "--- container console (last 40 lines)"
tail -n 40 "$results/console.log" 2>/dev/null || true
exit 1
