#!/bin/sh
# SPDX-License-Identifier: MIT
# run_with_daemon.sh DAEMON WORKDIR SAMPLE [ARG]...: run a sample against the real daemon on a
# temporary state path (given as the sample's last argument); pass if it exits 0.  Needs root
# and BPF: exit 77 (skip) without them, unless BARRIERD_REQUIRE_BPF=1.
set -u
daemon=$1 work=$2
shift 2

. "$(dirname "$0")/daemon_lib.sh"
sample_daemon_start "$daemon" "$work" sample

timeout 60 "$@" "$state" || fail "$*: exit status $?"
echo "PASS"
