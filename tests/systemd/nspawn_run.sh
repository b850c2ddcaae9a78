#!/usr/bin/env bash
# Boot a real systemd as PID 1 in systemd-nspawn, on an overlay of this machine's own / (host
# read-only lower, tmpfs upper) with this build installed into it, and run SCENARIO there as a
# oneshot service; it writes what it finds to /results (RESULTS_DIR on the host) and the
# container powers off when it ends.
#   nspawn_run.sh SOURCE_DIR BUILD_DIR SCENARIO RESULTS_DIR HANG_GUARD_SECONDS [FILE...]
# BUILD_DIR "" installs nothing (tests/package installs its .deb files from FILEs).
# FILEs (test programs) are copied to /opt/barrierd-test in the container, readable by every
# user there.  The scenario's environment: BARRIERD_SOURCE_DIR, BARRIERD_BINARY_DIR, and
# BARRIERD_BINDIR (where barrierctl is installed) passed through from ours.
# Exit: nspawn's status (the scenario's verdict is in RESULTS_DIR/verdict); 77 when
# systemd-nspawn or root is missing (1 under BARRIERD_REQUIRE_BPF=1).
#
# Everything it mounts lives in a private mount namespace that dies with it; the container is
# killed by `timeout` after the hang guard, so nothing is left behind even on failure.
set -euo pipefail

all_args=("$@")
src=$1 build=$2 scenario=$3 results=$4 guard=$5
shift 5

skip() {
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then echo "FAIL: $1, and BARRIERD_REQUIRE_BPF=1 forbids skipping"; exit 1; fi
	echo "SKIP: $1"; exit 77
}

if [ -z "${BARRIERD_NSPAWN_INNER:-}" ]; then
	[ "$(id -u)" = 0 ] || skip "needs root"
	command -v systemd-nspawn >/dev/null || skip "needs systemd-nspawn (Debian package systemd-container; scripts/deps.sh --test)"
	command -v unshare >/dev/null || skip "needs unshare (util-linux)"
	[ -r /sys/kernel/btf/vmlinux ] || skip "needs a kernel with BTF (/sys/kernel/btf/vmlinux)"
	mkdir -p "$results"
	# A private mount namespace: the overlay, the tmpfs and /run/systemd's tmpfs vanish with it.
	BARRIERD_NSPAWN_INNER=1 exec unshare --mount --propagation private "$0" "${all_args[@]}"
fi

# /run is on disk on some machines (this one): nspawn refuses to clean up its
# /run/systemd/nspawn there.  A tmpfs of our own, in our namespace only.
mkdir -p /run/systemd
mount -t tmpfs -o mode=0755 tmpfs /run/systemd

t=$(mktemp -d "${TMPDIR:-/tmp}/barrierd-nspawn.XXXXXX")
nspawn_pid= # of `timeout`, nspawn's parent
# shellcheck disable=SC2317 # (run by the trap)
cleanup() {
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		# timeout passes SIGTERM on to nspawn (which halts the container) and SIGKILLs it
		# 5 s later if it is still there; the container's processes die with its PID 1.
		kill -TERM "$nspawn_pid" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	umount -l "$t/merged" 2>/dev/null || true
	umount -l "$t" 2>/dev/null || true
	rmdir "$t" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

mount -t tmpfs -o mode=0755 tmpfs "$t"
mkdir -p "$t/upper" "$t/work" "$t/merged"
mount -t overlay overlay -o "lowerdir=/,upperdir=$t/upper,workdir=$t/work" "$t/merged"
root=$t/merged

# The build, installed where its unit says (the configured prefix), into the overlay only.
# An empty BUILD_DIR installs nothing: the package test installs its .deb files itself.
binds=(--bind-ro="$src")
if [ -n "$build" ]; then
	DESTDIR=$root cmake --install "$build" >"$results/install.log"
	binds+=(--bind-ro="$build")
fi
mkdir -p "$root/opt/barrierd-test"
for f in "$@"; do install -m 0755 "$f" "$root/opt/barrierd-test/"; done

# A sanitized build's services: their SystemCallFilter= refuses ptrace(), without which
# LeakSanitizer cannot stop the world (it would fail the start); the other sanitizers stay on.
if [ -n "${BARRIERD_SERVICE_ENV:-}" ]; then
	for unit in barrierd.service barrierd-metrics.service; do
		mkdir -p "$root/etc/systemd/system/$unit.d"
		printf '[Service]\nEnvironment=%s\n' "$BARRIERD_SERVICE_ENV" \
			>"$root/etc/systemd/system/$unit.d/sanitize.conf"
	done
fi

# The scenario runs as a oneshot service; the container powers off when it ends either way.
# Booting a target of our own keeps the host's enabled services (databases, ssh, ...) out.
cat >"$root/etc/systemd/system/barrierd-test.target" <<EOF
[Unit]
Description=barrierd systemd test
Requires=basic.target barrierd-test.service
After=basic.target barrierd-test.service
AllowIsolate=yes
EOF
cat >"$root/etc/systemd/system/barrierd-test.service" <<EOF
[Unit]
Description=barrierd systemd test scenario
After=basic.target
SuccessAction=poweroff
FailureAction=poweroff
[Service]
Type=oneshot
Environment=BARRIERD_SOURCE_DIR=$src BARRIERD_BINARY_DIR=$build BARRIERD_BINDIR=${BARRIERD_BINDIR:-/usr/local/bin}
ExecStart=/bin/bash $scenario
StandardOutput=file:/results/scenario.log
StandardError=inherit
TimeoutStartSec=$((guard - 10))s
EOF
rm -f "$results/verdict" "$results/scenario.log"

# Each option below was needed on a Debian 12 host whose PID 1 is not systemd:
#   --register=no --keep-unit    no system bus to register with ("Failed to open system bus")
#   --system-call-filter         bpf and perf_event_open are outside nspawn's default allow-list
#   --capability                 CAP_SYS_RAWIO, CAP_BPF, CAP_PERFMON: the container's systemd
#                                mounts tracefs; the service loads BPF programs
#   systemd.firstboot=off        no interactive first-boot questions
#   --link-journal=no            no journal directory on the host
timeout --kill-after=5 "$guard" systemd-nspawn --quiet -D "$root" \
	--register=no --keep-unit --link-journal=no \
	--system-call-filter='bpf perf_event_open' \
	--capability=CAP_SYS_RAWIO,CAP_BPF,CAP_PERFMON \
	--bind="$results:/results" "${binds[@]}" \
	--boot systemd.firstboot=off systemd.unit=barrierd-test.target \
	</dev/null >"$results/console.log" 2>&1 &
nspawn_pid=$!
rc=0
wait "$nspawn_pid" || rc=$?
nspawn_pid=
exit "$rc"
