#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# barrierd --check:  test_barrierd_check.sh BARRIERD SOURCE_DIR WORKDIR
# As root it passes; as nobody it fails naming the privileges; a bad tracepoint fails naming
# it; a path a running daemon serves fails naming the lock; a bad option is still a usage
# error (64).  It never creates the state file, its directory or its lock, and every line is
# "ok", "warn" or "FAIL" then the check's name.  Root and BPF (the probe load): skips (77)
# without them unless BARRIERD_REQUIRE_BPF=1.  About 2 s.
set -euo pipefail
daemon=$1 src=$2 work=$3
# shellcheck source=../../samples/daemon_lib.sh
. "$src/samples/daemon_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (the BPF probe load, the capabilities)"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
mkdir -p "$work"
# $dir is daemon_lib.sh's (fail() shows $dir/daemon.log): until the daemon starts, ours.
dir=$(mktemp -d "$work/check.XXXXXX")
cdir=$dir
chmod 0755 "$dir"
pid=
trap 'rm -rf "$cdir"' EXIT

# check WANT OUT ARGS...: barrierd --check ARGS (as given: a prefix such as setpriv may lead).
check() {
	local want=$1 out=$2 rc=0
	shift 2
	"$@" >"$out" 2>"$out.err" || rc=$?
	if [ "$rc" != "$want" ]; then
		cat "$out" "$out.err"
		fail "$*: exit $rc, want $want"
	fi
	# One line per check, then the summary.
	if grep -vqE '^(ok  |warn|FAIL) [a-z][a-z ]*[a-z]( [^:]+)?: |^barrierd --check: ' "$out"; then
		cat "$out"
		fail "$*: a line that is not a check's"
	fi
}

# As root: every check passes, on a path whose directory does not exist yet.
check 0 "$dir/root.txt" "$daemon" --check --state "$dir/sub/state"
cat "$dir/root.txt"
grep -q '^FAIL' "$dir/root.txt" && fail "a FAIL line, yet exit 0"
for name in options kernel btf privileges 'bpf load' 'state directory' 'state file' lock \
	'tracepoint sched/sched_switch'; do
	grep -q "^ok   $name: " "$dir/root.txt" || fail "no ok line for '$name'"
done
echo "PASS: as root, every check passes"

# As nobody: the privileges, named.
check 1 "$dir/nobody.txt" setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$daemon" --check --state "$dir/sub/state"
grep -q '^FAIL privileges: uid 65534 holds neither CAP_BPF and CAP_PERFMON nor CAP_SYS_ADMIN' \
	"$dir/nobody.txt" || { cat "$dir/nobody.txt"; fail "as nobody: the privileges not named"; }
grep -q '^FAIL bpf load: .*Operation not permitted' "$dir/nobody.txt" ||
	{ cat "$dir/nobody.txt"; fail "as nobody: the probe load not refused"; }
grep -q '^barrierd --check: [0-9]* of [0-9]* checks failed' "$dir/nobody.txt" ||
	fail "as nobody: no summary"
echo "PASS: as nobody, it fails naming the privileges"

# A tracepoint that does not exist, and one in NMI context: each named on its own line.
check 1 "$dir/tp.txt" "$daemon" --check --state "$dir/sub/state" -t irq/no_such_event \
	-t sched/sched_switch -t nmi/nmi_handler
grep -q '^FAIL tracepoint irq/no_such_event: unknown tracepoint irq/no_such_event' "$dir/tp.txt" ||
	{ cat "$dir/tp.txt"; fail "an unknown tracepoint not named"; }
grep -q '^FAIL tracepoint nmi/nmi_handler: .*NMI' "$dir/tp.txt" ||
	{ cat "$dir/tp.txt"; fail "an NMI tracepoint not named"; }
grep -q '^ok   tracepoint sched/sched_switch: ' "$dir/tp.txt" || fail "sched_switch not ok"
[ "$(grep -c '^FAIL' "$dir/tp.txt")" = 2 ] || { cat "$dir/tp.txt"; fail "other checks failed"; }
echo "PASS: bad tracepoints fail, each named"

# Options: still a usage error, with or without --check.
check 64 "$dir/usage.txt" "$daemon" --check --heartbeat-period 1
grep -q -- '--heartbeat-period takes milliseconds' "$dir/usage.txt.err" ||
	fail "--check with a bad value: no usage message"
echo "PASS: a bad option is a usage error (64)"

# Nothing was created by any of the runs above.
[ -z "$(ls -A "$dir" | grep -v '\.txt')" ] || fail "--check created $(ls -A "$dir")"
echo "PASS: no state file, directory or lock created"

# A running daemon's path: the lock, named with its holder; the file is left as it was.
set +eo pipefail
sample_daemon_start "$daemon" "$work" check
set -eo pipefail
trap 'sample_cleanup; rm -rf "$cdir"' EXIT
before=$(stat -c '%i %s %a' "$state")
check 1 "$cdir/held.txt" "$daemon" --check --state "$state"
grep -q "^FAIL lock: $state.lock is held by pid $pid (barrierd)" "$cdir/held.txt" ||
	{ cat "$cdir/held.txt"; fail "the running daemon's lock not named"; }
grep -q "^ok   state file: $state exists" "$cdir/held.txt" || fail "state file line"
[ "$(stat -c '%i %s %a' "$state")" = "$before" ] || fail "--check changed the state file"
kill -0 "$pid" || fail "the daemon died under --check"
echo "PASS: a served path fails on the lock, naming the daemon's pid"
