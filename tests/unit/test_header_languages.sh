#!/bin/sh
# SPDX-License-Identifier: MIT
# test_header_languages.sh INCLUDE_DIR: every public header compiles cleanly as C99 (pedantic)
# and as C++11 with g++ and, if installed, clang++ (-Wall -Wextra -Werror each): the ABI asserts
# and the inline fast paths are for C and C++ consumers alike.  Flexible array members are a GNU
# extension in C++, so C++ is not built -pedantic.  The C++ binding, barrierd.hpp, compiles as
# C++11, 14, 17 and 20 with each compiler, -Wshadow too (its test, tests/cpp, runs it).
set -eu
inc=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/t.c" <<'SRC'
#include <barrierd.h>
#include <barrierd_slot.h>
#include <barrierd_ec.h>
#include <barrierd_reclaim.h>
int main(void)
{
	struct barrierd_ec ec;

	barrierd_ec_init(&ec, 0, 0);
	return (int)barrierd_ec_value(&ec);
}
SRC
cp "$tmp/t.c" "$tmp/t.cc"
cat >"$tmp/hpp.cc" <<'SRC'
#include <barrierd.hpp>
int main()
{
	barrierd_cpp::handle h;
	return h ? 1 : 0;
}
SRC
fail=0
check() {
	if "$@" -I"$inc" -fsyntax-only 2>"$tmp/err"; then
		echo "ok: $*"
	else
		echo "FAIL: $*"
		cat "$tmp/err"
		fail=1
	fi
}
check gcc -std=c99 -Wall -Wextra -Werror -pedantic "$tmp/t.c"
cxxs=g++
if command -v clang++ >/dev/null 2>&1; then
	cxxs="g++ clang++"
else
	echo "clang++ not installed: skipped"
fi
for cxx in $cxxs; do
	check $cxx -std=c++11 -Wall -Wextra -Wshadow -Werror "$tmp/t.cc"
	for std in c++11 c++14 c++17 c++20; do
		check $cxx -std=$std -Wall -Wextra -Wshadow -Werror "$tmp/hpp.cc"
	done
done
exit $fail
