#!/usr/bin/env bash
# What a CPU hotplug test moves, saved before it and put back after it (ctest fixtures of
# tests/hotplug, so even a test killed at its timeout is followed by the restore).
#
#   cpu_state.sh save FILE      record IRQ affinities and cgroup-v1 cpuset CPU lists
#   cpu_state.sh restore FILE   bring every CPU online, then write those back
#
# Re-onlining a CPU does not undo an unplug: unmanaged IRQs keep the affinity they were moved
# to, and a cgroup-v1 child cpuset loses the CPU for good.  Pinned tasks lose their pinning
# too; only their owners can restore that (the audit re-pins its own threads).
set -uo pipefail

save() {
	local f irq
	: >"$1"
	for f in /proc/irq/*/smp_affinity_list; do
		irq=${f#/proc/irq/}
		irq=${irq%%/*}
		echo "irq $irq $(cat "$f" 2>/dev/null)" >>"$1"
	done
	# Parents before children: a child's list must be a subset of its parent's.
	if [ -d /sys/fs/cgroup/cpuset ]; then
		find /sys/fs/cgroup/cpuset -mindepth 2 -name cpuset.cpus | sort | while read -r f; do
			echo "cpuset $f $(cat "$f")" >>"$1"
		done
	fi
}

online_all() {
	local f
	for f in /sys/devices/system/cpu/cpu[0-9]*/online; do
		[ "$(cat "$f" 2>/dev/null)" = 0 ] && echo 1 >"$f"
	done
	return 0
}

restore() {
	local kind what value
	online_all
	[ -r "$1" ] || return 0
	# Best effort: an IRQ that went away, or a managed one the kernel restores itself, refuses.
	while read -r kind what value; do
		[ -n "$value" ] || continue
		case "$kind" in
		irq) echo "$value" >"/proc/irq/$what/smp_affinity_list" 2>/dev/null ;;
		cpuset) echo "$value" >"$what" 2>/dev/null ;;
		esac
	done <"$1"
	return 0
}

case "${1:-}" in
save) save "$2" ;;
restore) restore "${2:-}" ;;
*)
	echo "usage: cpu_state.sh save|restore FILE" >&2
	exit 64
	;;
esac
