#!/usr/bin/env bash
# Install to a temporary prefix, build a program there with pkg-config, run it against the
# installed daemon (root; BPF) - what a packager and an application author would do.
#   test_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
if [ "$(id -u)" != 0 ]; then
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then echo "FAIL: needs root"; exit 1; fi
	echo "SKIP: needs root"; exit 77
fi
tmp=$(mktemp -d "$build/tests/install.XXXXXX")
chmod 0755 "$tmp"
dpid=
cleanup() { [ -n "$dpid" ] && kill "$dpid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc="$tmp/prefix/lib/pkgconfig/barrierd.pc"
test -f "$pc" || { echo "FAIL: no $pc"; exit 1; }
grep -q "^libdir=$tmp/prefix/lib$" "$pc" || { echo "FAIL: libdir in $pc:"; cat "$pc"; exit 1; }
test -f "$tmp/prefix/include/barrierd.h"
test -f "$tmp/prefix/include/barrierd.hpp"
test -L "$tmp/prefix/lib/libbarrierd.so.1"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# BARRIERD_TEST_CFLAGS: a sanitized build's -fsanitize=..., without which a program cannot load
# its sanitized library (the runtime must come first in the initial library list).
# shellcheck disable=SC2046,SC2086
cc -Wall -Wextra -Werror ${BARRIERD_TEST_CFLAGS:-} "$src/tests/install/hello.c" \
	$(pkg-config --cflags --libs barrierd) \
	-o "$tmp/hello"
# Only the public symbols are exported, under the version nodes (LIBBARRIERD_1, _1.1, ...).
if nm -D --defined-only "$tmp/prefix/lib/libbarrierd.so.1" | awk '{print $3}' |
	grep -Ev '^LIBBARRIERD_1(\.[0-9]+)?$' | grep -v '^barrierd_'; then
	echo "FAIL: symbols outside barrierd_* exported"; exit 1
fi
readelf -d "$tmp/prefix/lib/libbarrierd.so.1" | grep -q 'SONAME.*libbarrierd.so.1'

export LD_LIBRARY_PATH="$tmp/prefix/lib" # barrierctl and hello find the installed library
"$tmp/prefix/sbin/barrierd" --state "$tmp/run/state" 2>"$tmp/daemon.log" &
dpid=$!
for _ in $(seq 200); do # until the daemon runs (0 healthy, 1 degraded); hang guard 10 s
	rc=0
	"$tmp/prefix/bin/barrierctl" status --state "$tmp/run/state" >/dev/null 2>&1 || rc=$?
	[ "$rc" -le 1 ] && break
	sleep 0.05
done
[ "$rc" -le 1 ] || { echo "FAIL: barrierctl status: $rc"; cat "$tmp/daemon.log"; exit 1; }
"$tmp/hello" "$tmp/run/state"
echo "1 passed, 0 failed"
