#!/bin/sh
# SPDX-License-Identifier: MIT
# check_format.sh [SOURCE_DIR]: every C and C++ source and header of the tree is as
# clang-format (.clang-format at the root) writes it.  Run by ctest as test_format; fix with
#   git ls-files '*.c' '*.h' '*.cc' '*.hpp' | xargs clang-format -i
set -eu
src=${1:-$(dirname "$0")/..}
cd "$src"
command -v clang-format >/dev/null || { echo "clang-format is not installed (scripts/deps.sh --test)"; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files '*.c' '*.h' '*.cc' '*.hpp')
else
	files=$(find . -path './build*' -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.hpp' \) -print)
fi
n=$(echo "$files" | wc -l)
# shellcheck disable=SC2086
if clang-format --dry-run --Werror $files; then
	echo "format: $n files as clang-format writes them"
else
	echo "format: the files above differ from clang-format's output"
	exit 1
fi
