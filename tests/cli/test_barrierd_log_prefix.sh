#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The daemon's "<N>" syslog priority prefixes:  test_barrierd_log_prefix.sh BARRIERD
# On a pipe they are there, on a terminal (a pty from script(1)) they are not, and on a
# terminal that $JOURNAL_STREAM names (what systemd sets when stderr is the journal) they are
# again; a stale $JOURNAL_STREAM (inherited, naming another stream) changes nothing.  The
# daemon is asked for a state file under /proc, which it cannot create: one error line, exit
# 1, nothing loaded or created.  No root needed; under a second.
set -euo pipefail
daemon=$1
bad=/proc/barrierd-no-such-dir/state
want="cannot create directory /proc/barrierd-no-such-dir"
command -v script >/dev/null || { echo "SKIP: no script(1) (bsdutils)"; exit 77; }
fails=0

# expect LABEL OUTPUT PREFIXED(yes|no)
expect() {
	local line
	line=$(printf '%s\n' "$2" | tr -d '\r' | grep -F "$want" || true)
	case "$3:$line" in
	"yes:<3>barrierd: $want"* | "no:barrierd: $want"*) echo "PASS: $1: '$line'" ;;
	*) echo "FAIL: $1: want prefix $3, got: $2"; fails=$((fails + 1)) ;;
	esac
}

out=$(env -u JOURNAL_STREAM "$daemon" --state "$bad" 2>&1 | cat || true)
expect "pipe" "$out" yes
out=$(JOURNAL_STREAM=1:1 "$daemon" --state "$bad" 2>&1 | cat || true)
expect "pipe, stale JOURNAL_STREAM" "$out" yes
out=$(env -u JOURNAL_STREAM script -qec "$daemon --state $bad" /dev/null || true)
expect "terminal" "$out" no
out=$(JOURNAL_STREAM=1:1 script -qec "$daemon --state $bad" /dev/null || true)
expect "terminal, stale JOURNAL_STREAM" "$out" no
# stat -L follows /dev/stderr to the pty: its device and inode, as systemd would set them.
# shellcheck disable=SC2016
out=$(script -qec "sh -c 'JOURNAL_STREAM=\$(stat -L -c %d:%i /dev/stderr) exec $daemon --state $bad'" /dev/null || true)
expect "terminal named by JOURNAL_STREAM" "$out" yes
[ "$fails" = 0 ]
