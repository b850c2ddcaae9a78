#!/usr/bin/env bash
# Every manual page of the source tree formats without a warning: groff -man -ww (all
# warnings) -z (no output).  .so link pages are checked by test_man_lib and test_man_install.
#   test_man_lint.sh SOURCE_DIR
set -euo pipefail
src=$1
command -v groff >/dev/null || { echo "FAIL: needs groff (Debian groff-base)"; exit 1; }
fail=0 n=0
for p in "$src"/docs/*.8 "$src"/docs/man3/*.3; do
	head -c 4 "$p" | grep -q '^\.so ' && continue
	n=$((n + 1))
	w=$(LC_ALL=C groff -man -ww -z "$p" 2>&1) || true
	if [ -n "$w" ]; then
		echo "FAIL: $p:"; echo "$w"; fail=1
	fi
done
[ "$fail" = 0 ] || exit 1
echo "$n pages format without warnings"
