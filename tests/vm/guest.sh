#!/usr/bin/env bash
# Inside a test guest (vm_init's child, as root): run the set named in the job vm_run.sh wrote,
# one log per test in the results folder, one line per test in "results".  Exit 0 when every
# test's verdict is ok.
#
# Under TCG everything runs about ten times slower than on the host, so the sets use reduced
# barrier counts and longer hang guards, and assert correctness only, never speed.
set -uo pipefail

out=$1
# shellcheck source=/dev/null
. "$out/job"
read -r up _ </proc/uptime
echo "kernel $(uname -r), $(nproc) CPUs online, booted to this script in ${up} s (guest clock);" \
	"nohz_full=$(cat /sys/devices/system/cpu/nohz_full 2>/dev/null)," \
	"clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	>"$out/boot"
# The kernel's own view of its clocks, for the record (TCG emulates the TSC).
dmesg | grep -iE 'clocksource|tsc' >"$out/clock.log" 2>&1
export BARRIERD_REQUIRE_BPF=$require_bpf
# The tests' temporary folders go under the build tree (overlay, guest-only) and /var/tmp.
cd "$build" || exit 1
audit=$build/tests/audit/barrierd-audit

failed=0
per_test=240
# run NAME EXPECT COMMAND...: EXPECT is "pass" (exit 0), "sound" (the audit's 0 or 2: no
# violation, but barriers may not complete: a finding, not a failure) or "record" (any exit
# short of a crash: the test reports a finding).
run() {
	local name=$1 expect=$2 st t0 t1 verdict=ok
	shift 2
	echo "guest: $name: $*"
	t0=$(date +%s.%N)
	# A hang guard per test, inside the whole guest's: one hung test still leaves the others'
	# results.
	timeout -k 5 "$per_test" "$@" >"$out/$name.log" 2>&1
	st=$?
	t1=$(date +%s.%N)
	case "$expect:$st" in
	pass:0 | sound:0 | sound:2) ;;
	record:*) [ "$st" -ge 128 ] && verdict=failed ;;
	*:77) [ "$require_bpf" = 1 ] && verdict=failed || verdict=skipped ;;
	*) verdict=failed ;;
	esac
	if [ "$verdict" = failed ]; then
		failed=1
		# The daemon's log lives in the guest's overlay, gone with the guest: keep a copy
		# beside the test's own.
		sed -n 's/.*daemon log kept in //p' "$out/$name.log" | head -n 1 | while read -r d; do
			cp "$d" "$out/$name.daemon.log" 2>/dev/null || true
		done
	fi
	echo "$name status=$st time=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s expect=$expect verdict=$verdict" >>"$out/results"
}

case "$set" in
boot)
	# Boots and reports, nothing else: the harness alone (by hand, for its boot time).
	run uname pass uname -a
	;;
smp)
	# The integration barriers and the audit on 4 vCPUs, then CPU hotplug under the audit.
	run test_barriers pass "$build/tests/integration/test_barriers"
	run audit pass "$audit" --bracket-lenient --scale 0.3 --min-audited 800 --timeout-ms 20000
	run hotplug pass "$audit" --bracket-lenient --phases hotplug --hotplug-cycles 50 --min-audited 100 \
		--timeout-ms 20000
	;;
hotplug)
	run hotplug pass "$audit" --bracket-lenient --phases hotplug --hotplug-cycles 50 --min-audited 100 \
		--timeout-ms 20000
	;;
nohz)
	# nohz_full CPUs running one task take no tick: the daemon nudges them (DEMAND.md, "Nudges").
	# Every barrier must complete, with a spinner on each nohz_full CPU too; then the audit
	# (its loaded phase puts a spinner on each nohz_full CPU, its nudge phase nudges at 0.1 ms)
	# with every barrier audited and completed.
	run nohz_probe pass "$build/tests/vm/nohz_probe" --timeout-ms 2000 --barriers 5 --expect-complete
	run audit pass "$audit" --bracket-lenient --phases idle,loaded,nudge --scale 0.05 \
		--min-audited 50 --timeout-ms 2000
	;;
userns)
	# nobody in its own user, pid and mount namespaces gets the file and the direct path
	# through the daemon's anchor; fake relays are refused (PROTOCOL.md §6.12).
	echo "kernel.unprivileged_bpf_disabled=$(cat /proc/sys/kernel/unprivileged_bpf_disabled)" \
		"kernel.unprivileged_userns_clone=$(cat /proc/sys/kernel/unprivileged_userns_clone 2>&1)" \
		"$(grep -c . /proc/self/mountinfo) mounts, under /proc: $(awk '$5 ~ /^\/proc\//' /proc/self/mountinfo | wc -l)" >>"$out/boot"
	run test_userns pass "$build/tests/security/test_userns"
	;;
audit8)
	run audit pass "$audit" --bracket-lenient --scale 0.3 --min-audited 800 --timeout-ms 20000
	;;
*)
	echo "guest.sh: unknown set '$set'" >&2
	exit 64
	;;
esac
exit "$failed"
