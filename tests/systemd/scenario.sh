#!/usr/bin/env bash
# Runs INSIDE the systemd-nspawn container booted by nspawn_run.sh, as a oneshot service under
# a real systemd (PID 1), with this build installed at its configured prefix.  Exercises
# barrierd.service as an admin would, checks each step, and writes to /results:
#   scenario.log (stdout), verdict (PASS or FAIL), journal.txt, status.txt, client.txt.
# Environment (from the test service): BARRIERD_BINDIR; the test's client is in /opt/barrierd-test.
set -euo pipefail

R=/results
bindir=${BARRIERD_BINDIR:?}
client=/opt/barrierd-test/restart_client
barrierctl=$bindir/barrierctl
dropins=/run/systemd/system/barrierd.service.d
step=setup
t_step=$(date +%s%N)
client_pid=

finish() {
	local rc=$?
	if [ -n "$client_pid" ]; then kill "$client_pid" 2>/dev/null || true; fi
	journalctl -u barrierd --no-pager -o short-monotonic >"$R/journal.txt" 2>&1 || true
	if [ "$rc" = 0 ]; then
		echo PASS >"$R/verdict"
	else
		echo "FAIL in step '$step' (exit $rc)"
		systemctl status barrierd --no-pager >>"$R/status.txt" 2>&1 || true
		journalctl -b --no-pager -o short-monotonic >"$R/journal-all.txt" 2>&1 || true
		echo FAIL >"$R/verdict"
	fi
}
trap finish EXIT

fail() { echo "FAIL [$step]: $*"; exit 1; }
begin() { step=$1; t_step=$(date +%s%N); }
pass() { echo "PASS [$step] ($(( ($(date +%s%N) - t_step) / 1000000 )) ms)${1:+: $1}"; }
mainpid() { systemctl show -p MainPID --value barrierd; }
# The messages of the service's current (or latest) invocation, its own and systemd's about
# it, and how it ended.
invocation_log() {
	local id
	id=$(systemctl show -p InvocationID --value barrierd)
	journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID="$id" + INVOCATION_ID="$id"
	echo "Result=$(systemctl show -p Result --value barrierd)"
}
# Wait (tenths of a second) until a command succeeds.
wait_for() {
	local n=$1; shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	"$@"
}
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

echo "systemd: $(systemctl --version | head -1); kernel $(uname -r)"
ldconfig # the installed libbarrierd

begin installed
unit=$(systemctl show -p FragmentPath --value barrierd)
[ -f "$unit" ] || fail "systemd does not find barrierd.service"
daemon=$(awk -F'[ =]' '/^ExecStart=/{print $2; exit}' "$unit")
[ -x "$daemon" ] || fail "ExecStart=$daemon: not installed"
envfile=$(systemctl show -p EnvironmentFiles --value barrierd | awk '{print $1}')
[ -f "$envfile" ] || fail "EnvironmentFile $envfile not installed"
man=no
if command -v man >/dev/null; then man=yes; fi
systemd-analyze verify --man="$man" barrierd.service >"$R/verify.txt" 2>&1 ||
	fail "systemd-analyze verify: $(cat "$R/verify.txt")"
pass "$unit, EnvironmentFile $envfile, verify (man check: $man) clean"

begin tmpfiles
# `R! /run/barrierd`: at boot (--boot), whatever an earlier boot left there goes.
mkdir -p /run/barrierd && echo stale >/run/barrierd/state
systemd-tmpfiles --remove --boot barrierd.conf
[ ! -e /run/barrierd ] || fail "/run/barrierd survived systemd-tmpfiles --remove --boot"
pass

begin configure
# The admin's configuration: a non-default tracepoint (tracefs must be readable inside the
# sandbox) and heartbeat period; both visible once the service runs.
cat >"$envfile" <<'EOF'
BARRIERD_STATE=/run/barrierd/state
BARRIERD_OPTS="--heartbeat-period 250 --tracepoint irq/softirq_entry --tracepoint irq_vectors/local_timer_entry --tracepoint sched/sched_switch --tracepoint timer/hrtimer_expire_entry"
EOF
pass

begin enable-now
systemctl enable --now barrierd
# Type=notify: `start` returns on READY=1, which the daemon sends after publishing, so the
# file must already say running, now, without waiting.
"$barrierctl" status --json >"$R/status-ready.json" 2>&1 || true
grep -q '"running": true' "$R/status-ready.json" || fail "file not running right after start: $(cat "$R/status-ready.json")"
[ "$(systemctl is-enabled barrierd)" = enabled ] || fail "not enabled"
[ "$(systemctl is-active barrierd)" = active ] || fail "not active"
pass

begin status
# STATUS= arrives right after READY=1.
wait_for 30 sh -c 'systemctl show -p StatusText --value barrierd | grep -q "^serving /run/barrierd/state"' ||
	fail "no STATUS= line: '$(systemctl show -p StatusText --value barrierd)'"
systemctl status barrierd --no-pager >"$R/status.txt" 2>&1 || fail "systemctl status: exit $?"
grep -q 'Active: active (running)' "$R/status.txt" || fail "systemctl status: $(cat "$R/status.txt")"
grep -q 'Status: "serving' "$R/status.txt" || fail "no Status: line in systemctl status"
pass "$(systemctl show -p StatusText --value barrierd)"

begin sandbox
pid=$(mainpid)
[ "$pid" -gt 0 ] || fail "no main pid"
threads=0 fifo=0 nudgers=0
for st in /proc/"$pid"/task/*/status; do
	threads=$((threads + 1))
	grep -q '^Seccomp:[[:space:]]*2$' "$st" || fail "$st: no seccomp filter"
	grep -q '^NoNewPrivs:[[:space:]]*1$' "$st" || fail "$st: no no_new_privs"
	grep -q '^CapEff:[[:space:]]*0000000000000000$' "$st" || fail "$st: capabilities left"
	# Bounding set from the unit, exactly: CAP_BPF (39), CAP_PERFMON (38), CAP_SYS_NICE (23).
	grep -q '^CapBnd:[[:space:]]*000000c000800000$' "$st" || fail "$st: $(grep CapBnd "$st")"
done
for s in /proc/"$pid"/task/*/stat; do
	# field 41: scheduling policy; 1 = SCHED_FIFO (the main, doorbell and nudge threads)
	[ "$(sed 's/.*) //' "$s" | awk '{print $39}')" = 1 ] && fifo=$((fifo + 1))
	case "$(cat "${s%/stat}/comm")" in bd-nudge/*) nudgers=$((nudgers + 1)) ;; esac
done
online=$(getconf _NPROCESSORS_ONLN)
[ "$threads" -ge 2 ] || fail "$threads threads"
# One nudge thread per online CPU (the unit allows SCHED_FIFO and sched_setaffinity).
[ "$nudgers" = "$online" ] || fail "$nudgers nudge threads, expected one per online CPU ($online)"
[ "$fifo" = $((2 + nudgers)) ] ||
	fail "$fifo SCHED_FIFO threads, expected the main and doorbell threads and $nudgers nudge threads"
[ "$(readlink /proc/"$pid"/ns/net)" != "$(readlink /proc/1/ns/net)" ] || fail "PrivateNetwork not in effect"
[ "$(readlink /proc/"$pid"/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] || fail "no mount namespace"
pass "$threads threads: Seccomp 2, NoNewPrivs 1, CapEff 0, CapBnd bpf+perfmon+sys_nice; main, doorbell and $nudgers nudge threads SCHED_FIFO"

begin environment-file
"$barrierctl" status --json >"$R/status.json"
grep -q '"heartbeat_period_ms": 250.000' "$R/status.json" || fail "--heartbeat-period 250 not applied: $(grep heartbeat_period "$R/status.json")"
log=$(invocation_log)
grep -q 'serving /run/barrierd/state: .* 4 tracepoints' <<<"$log" ||
	fail "four tracepoints not attached: $(grep serving <<<"$log")"
pass

begin barrier-as-nobody
[ "$(stat -c '%a %U' /run/barrierd)" = "755 root" ] || fail "/run/barrierd: $(stat -c '%a %U' /run/barrierd)"
[ "$(stat -c '%a %U' /run/barrierd/state)" = "644 root" ] || fail "state: $(stat -c '%a %U' /run/barrierd/state)"
out=$(as_nobody "$barrierctl" wait 2>&1) || fail "barrierctl wait as nobody: exit $?: $out"
pass "$out"

begin restart-under-client
gen0=$(grep -o '"generation": [0-9]*' "$R/status.json" | awk '{print $2}')
ino0=$(stat -c %i /run/barrierd/state)
# (setpriv itself in the background, not the function: $! must be the client's pid)
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$client" /run/barrierd/state 30 \
	>"$R/client.txt" 2>&1 &
client_pid=$!
wait_for 50 grep -q '^NEWGEN' "$R/client.txt" || fail "client: $(cat "$R/client.txt")"
systemctl restart barrierd
wait_for 50 sh -c "[ \$(grep -c '^NEWGEN' '$R/client.txt') -ge 2 ]" || fail "client saw no new generation: $(cat "$R/client.txt")"
sleep 0.3 # some barriers in the new generation
kill -TERM "$client_pid"
rc=0
wait "$client_pid" || rc=$?
client_pid=
[ "$rc" = 0 ] || fail "client exit $rc: $(cat "$R/client.txt")"
[ "$(stat -c %i /run/barrierd/state)" = "$ino0" ] || fail "state file inode changed"
gen1=$("$barrierctl" status --json | grep -o '"generation": [0-9]*' | awk '{print $2}')
[ "$gen1" = $((gen0 + 1)) ] || fail "generation $gen0 -> $gen1"
pass "generation $gen0 -> $gen1; client: $(grep -v '^PASS' "$R/client.txt" | tr '\n' ';')"

begin watchdog
# WatchdogSec=2s for this step: the pings keep coming from inside the sandbox (the PID stays),
# and a daemon that stops pinging (SIGSTOP) is killed and restarted (Restart=on-failure).
mkdir -p "$dropins"
printf '[Service]\nWatchdogSec=2s\nLimitCORE=0\n' >"$dropins/50-watchdog.conf"
systemctl daemon-reload
systemctl restart barrierd
pid=$(mainpid)
restarts0=$(systemctl show -p NRestarts --value barrierd)
sleep 3 # more than WatchdogSec
{ [ "$(mainpid)" = "$pid" ] && [ "$(systemctl is-active barrierd)" = active ]; } ||
	fail "killed although it pings: $(journalctl -u barrierd -n 5 --no-pager -o cat)"
kill -STOP "$pid"
wait_for 80 sh -c "[ \"\$(systemctl show -p MainPID --value barrierd)\" != $pid ] && [ \"\$(systemctl is-active barrierd)\" = active ]" ||
	fail "not restarted after the watchdog timeout"
restarts1=$(systemctl show -p NRestarts --value barrierd)
[ "$restarts1" = $((restarts0 + 1)) ] || fail "NRestarts $restarts0 -> $restarts1"
journalctl -u barrierd --no-pager -o cat | grep -q 'Watchdog timeout' || fail "no watchdog timeout in the journal"
out=$(as_nobody "$barrierctl" wait 2>&1) || fail "barrierctl wait after the restart: $out"
rm -f "$dropins/50-watchdog.conf"
systemctl daemon-reload
pass "watchdog killed the stopped daemon, systemd restarted it (NRestarts $restarts1)"

# Each setting the unit leaves out (or capability or system call it keeps) because the
# service breaks without it: the breakage is checked here, so the unit's comments stay true.
#   expect_broken NAME EXPECTED-PATTERN DROP-IN-LINE...
#   EXPECTED-PATTERN is looked up in the invocation's journal; "start-fails" also required
#   unless the pattern starts with "degraded:".
expect_broken() {
	local name=$1 pattern=$2 rc=0 log
	shift 2
	begin "without: $name"
	printf '[Service]\nRestart=no\n' >"$dropins/90-variant.conf"
	printf '%s\n' "$@" >>"$dropins/90-variant.conf"
	systemctl daemon-reload
	systemctl start barrierd >/dev/null 2>&1 || rc=$?
	case $pattern in
	degraded:*)
		pattern=${pattern#degraded:}
		[ "$rc" = 0 ] || fail "start failed ($rc): $(invocation_log)" ;;
	*)
		[ "$rc" != 0 ] || fail "started anyway" ;;
	esac
	# journald may not have read the daemon's last lines yet
	for _ in $(seq 30); do
		log=$(invocation_log)
		grep -qE "$pattern" <<<"$log" && break
		sleep 0.1
	done
	grep -qE "$pattern" <<<"$log" || fail "no '$pattern' in: $log"
	systemctl stop barrierd >/dev/null 2>&1 || true
	systemctl reset-failed barrierd >/dev/null 2>&1 || true
	pass "$(grep -E "$pattern" <<<"$log" | head -1)"
}
begin usage-error
# A bad BARRIERD_OPTS: exit 64, and no restart loop (RestartPreventExitStatus=64).
systemctl stop barrierd
cp "$envfile" "$R/envfile.saved"
echo 'BARRIERD_OPTS=--no-such-option' >>"$envfile"
! systemctl start barrierd 2>/dev/null || fail "started with --no-such-option"
restarts0=$(systemctl show -p NRestarts --value barrierd) # (a manual start resets it)
sleep 1.5 # RestartSec=1s: a restart would have come by now
[ "$(systemctl show -p NRestarts --value barrierd)" = "$restarts0" ] || fail "restarted after exit 64"
[ "$(systemctl is-active barrierd)" = failed ] || fail "$(systemctl is-active barrierd) after exit 64"
[ "$(systemctl show -p ExecMainStatus --value barrierd)" = 64 ] || fail "exit $(systemctl show -p ExecMainStatus --value barrierd)"
cp "$R/envfile.saved" "$envfile"
systemctl reset-failed barrierd
pass "exit 64, not restarted"

bpf_eperm='cannot load the BPF programs: Operation not permitted'
expect_broken 'CAP_BPF' "$bpf_eperm" 'CapabilityBoundingSet=' 'CapabilityBoundingSet=CAP_PERFMON CAP_SYS_NICE'
expect_broken 'CAP_PERFMON' "$bpf_eperm" 'CapabilityBoundingSet=' 'CapabilityBoundingSet=CAP_BPF CAP_SYS_NICE'
expect_broken 'CAP_SYS_NICE' 'degraded:no permission for SCHED_FIFO' 'CapabilityBoundingSet=' 'CapabilityBoundingSet=CAP_BPF CAP_PERFMON'
expect_broken 'PrivateUsers=no' "$bpf_eperm" 'PrivateUsers=yes'
expect_broken 'ProcSubset=all' 'cannot read /proc/sys/kernel/random/boot_id' 'ProcSubset=pid'
expect_broken 'RestrictRealtime=no' 'degraded:no permission for SCHED_FIFO' 'RestrictRealtime=yes'
expect_broken 'RestrictAddressFamilies=AF_UNIX' '^Result=timeout$' 'RestrictAddressFamilies=none' 'TimeoutStartSec=2s'
expect_broken 'bpf in SystemCallFilter' "$bpf_eperm" 'SystemCallFilter=~bpf'
expect_broken 'bpf: not ~@privileged' "$bpf_eperm" 'SystemCallFilter=~@privileged'
expect_broken 'capset: not ~@privileged' 'cannot (sandbox the daemon|start the doorbell thread): Operation not permitted' 'SystemCallFilter=~capset'
expect_broken 'seccomp in SystemCallFilter' 'cannot sandbox the daemon: Operation not supported' 'SystemCallFilter=~seccomp'
expect_broken 'sched_setscheduler in SystemCallFilter' 'degraded:no permission for SCHED_FIFO' 'SystemCallFilter=~sched_setscheduler'
expect_broken 'sched_setaffinity in SystemCallFilter' 'degraded:hopped across 0 online CPUs' 'SystemCallFilter=~sched_setaffinity' \
	'ExecStart=' "ExecStart=$daemon --state /run/barrierd/state --verbose"
expect_broken 'the libraries in ExecPaths' 'Failed at step EXEC' 'ExecPaths=' "ExecPaths=$daemon"
rm -f "$dropins/90-variant.conf"
systemctl daemon-reload

begin stop
systemctl start barrierd
systemctl stop barrierd
[ "$(systemctl is-active barrierd)" = inactive ] || fail "$(systemctl is-active barrierd) after stop"
[ -f /run/barrierd/state ] || fail "state file gone (RuntimeDirectoryPreserve=yes)"
[ "$(stat -c %i /run/barrierd/state)" = "$ino0" ] || fail "state file inode changed"
"$barrierctl" status --json >"$R/status-stopped.json" 2>&1 || true
grep -q '"stopped": true' "$R/status-stopped.json" || fail "file not marked stopped: $(cat "$R/status-stopped.json")"
pass "inactive; file kept (same inode), marked stopped"

begin journal
journalctl -u barrierd --no-pager -o cat >"$R/journal-cat.txt"
grep -q 'received signal 15, stopping' "$R/journal-cat.txt" || fail "no clean stop in the journal"
! grep -q 'seccomp: forbidden system call' "$R/journal-cat.txt" || fail "the daemon's own filter fired: $(grep seccomp "$R/journal-cat.txt")"
pass "$(grep -c '^barrierd: serving' "$R/journal-cat.txt") starts served, no seccomp violation"
step='done'
