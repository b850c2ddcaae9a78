#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cpp_hpp.sh DAEMON WORKDIR BINARY...: each build of test_cpp_hpp.cc (g++, clang++) against
# the real daemon on a temporary state path.  Needs root and BPF: exit 77 (skip) without them,
# unless BARRIERD_REQUIRE_BPF=1.  Not -e: samples/daemon_lib.sh's start loop reads a file that
# may not exist yet, and its exit trap's last command is the daemon's wait.
set -uo pipefail
daemon=$1 work=$2
shift 2

. "$(dirname "$0")/../../samples/daemon_lib.sh"
sample_daemon_start "$daemon" "$work" cpp

for bin in "$@"; do
	timeout 60 "$bin" "$state" "$dir" || fail "$bin: exit status $?"
done
echo "PASS"
