#!/usr/bin/env bash
# The installed manual pages: `cmake --install --component man` into a temporary prefix gives
# one gzip-compressed page (or .so link) per page of the source tree, nothing uncompressed, and
# man(1) opens each by name there (links followed), as `man barrierd_barrier` would.
#   test_man_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$(cd "$2" && pwd)
command -v man >/dev/null || { echo "FAIL: needs man(1) (Debian man-db)"; exit 1; }
tmp=$(mktemp -d "$build/tests/man_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --component man --prefix "$tmp/prefix" >/dev/null
page8=$(find "$tmp/prefix" -path '*/man8/barrierd.8.gz')
[ -n "$page8" ] || { echo "FAIL: no man8/barrierd.8.gz under $tmp/prefix"; exit 1; }
mandir=$(dirname "$(dirname "$page8")")

fail=0
if find "$tmp/prefix" -type f ! -name '*.gz' | grep .; then
	echo "FAIL: uncompressed files installed (above)"; fail=1
fi
n=0
for p in "$src"/docs/*.8 "$src"/docs/man3/*.3; do
	name=$(basename "$p") sect=${p##*.}
	gz="$mandir/man$sect/$name.gz"
	n=$((n + 1))
	if ! gzip -t "$gz" 2>/dev/null; then
		echo "FAIL: $gz missing or not gzip"; fail=1; continue
	fi
	# The same page, but for the version stamped into the .TH line.
	if ! diff <(gzip -dc "$gz" | grep -v '^\.TH ') <(grep -v '^\.TH ' "$p") >/dev/null; then
		echo "FAIL: $gz is not $p"; fail=1
	fi
	found=$(MANPATH="$mandir" man -w "$sect" "${name%.*}" 2>/dev/null || true)
	case $found in
	"$mandir"/man"$sect"/*.gz) ;;
	*) echo "FAIL: man -w $sect ${name%.*}: '$found'"; fail=1 ;;
	esac
done
installed=$(find "$tmp/prefix" -type f | wc -l)
[ "$installed" -eq "$n" ] || { echo "FAIL: $installed files installed for $n pages"; fail=1; }
out=$(MANPATH="$mandir" MANWIDTH=80 man -P cat barrierd_barrier 2>/dev/null || true)
grep -q '^BARRIERD_BARRIER(3)' <<<"$out" || { echo "FAIL: man barrierd_barrier: '$out'"; fail=1; }
[ "$fail" = 0 ] || exit 1
echo "$n pages installed compressed under $mandir, each opened by man"
