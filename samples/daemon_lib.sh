# SPDX-License-Identifier: MIT
# daemon_lib.sh: sourced by the samples' tests.  sample_daemon_start DAEMON WORKDIR NAME starts
# the real daemon on a temporary state path ($state, in $dir) and returns once the file says it
# runs; the test's exit stops it and removes $dir.  Needs root and BPF: exit 77 (skip) without
# them, unless BARRIERD_REQUIRE_BPF=1.  fail MESSAGE prints the daemon's log and exits 1;
# word OFFSET prints one 64-bit word of the state file.

skip() {
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then
		echo "FAIL: $1, and BARRIERD_REQUIRE_BPF=1 forbids skipping"
		exit 1
	fi
	echo "SKIP: $1"
	exit 77
}

fail() {
	echo "FAIL: $1"
	echo "--- daemon log:"
	cat "$dir/daemon.log" 2>/dev/null
	exit 1
}

word() {
	od -A n -t u8 -j "$1" -N 8 "$state" 2>/dev/null | tr -d ' '
}

sample_cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}

sample_daemon_start() {
	[ "$(id -u)" = 0 ] || skip "needs root (BPF, tracepoints)"
	[ -r /sys/kernel/btf/vmlinux ] || skip "needs a kernel with BTF (/sys/kernel/btf/vmlinux)"
	mkdir -p "$2"
	dir=$(mktemp -d "$2/$3.XXXXXX") || exit 1
	chmod 0755 "$dir"
	state=$dir/state
	pid=
	trap sample_cleanup EXIT
	"$1" --state "$state" >"$dir/daemon.log" 2>&1 &
	pid=$!
	# Until the file says this daemon runs: RUNNING set, STOPPED clear (hang guard: 10 s).
	i=0
	while :; do
		flags=$(word 56)
		if [ -n "$flags" ] && [ "$(word 88)" = "$pid" ] && [ $((flags & 3)) = 1 ]; then
			break
		fi
		kill -0 "$pid" 2>/dev/null || fail "the daemon exited before it started"
		i=$((i + 1))
		[ $i -lt 1000 ] || fail "the daemon did not start within 10 s"
		sleep 0.01
	done
}
