#!/usr/bin/env bash
# Boot a test guest and run a named set of the project's tests inside it (tests/vm/README.md).
#
#   vm_run.sh --build DIR --init VM_INIT --name NAME --set SET [--cpus N] [--append ARGS]
#             [--timeout SECONDS] [--memory MB]
#
# The guest is Debian 12's kernel (kernel.sh) under QEMU's TCG, with an initramfs of our own:
# vm_init (static) and the few modules it needs to mount the host's root over virtio-9p.  The
# host's root is shared read-only, so the build tree, the daemon and every tool are at their
# host paths; a tmpfs overlay takes the guest's writes.  The folder DIR/tests/vm/run-NAME is
# shared read-write: the guest script (guest.sh) leaves there one log per test, "results" and
# "boot", and vm_init leaves "init-status".  Exit status: the guest script's, or 1 if the guest
# never reported one (crash, panic, hang).  BARRIERD_VM_QEMU_ARGS, word-split, is added to QEMU's
# arguments: for example "-monitor unix:/tmp/mon,server,nowait" to read a hung guest's registers.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
build= init= name= set= cpus=4 append= timeout=600 memory=2048
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$(cd "$2" && pwd) ;;
	--init) init=$2 ;;
	--name) name=$2 ;;
	--set) set=$2 ;;
	--cpus) cpus=$2 ;;
	--append) append=$2 ;;
	--timeout) timeout=$2 ;;
	--memory) memory=$2 ;;
	*)
		echo "vm_run.sh: unknown argument $1" >&2
		exit 64
		;;
	esac
	shift 2
done
if [ -z "$build" ] || [ -z "$init" ] || [ -z "$name" ] || [ -z "$set" ]; then
	echo "vm_run.sh: --build, --init, --name and --set are required" >&2
	exit 64
fi

skip_or_fail() {
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then
		echo "FAIL: $1, and BARRIERD_REQUIRE_BPF=1 forbids skipping" >&2
		exit 1
	fi
	echo "SKIP: $1" >&2
	exit 77
}

[ "$(id -u)" = 0 ] || skip_or_fail "needs root (QEMU's 9p export of / as root)"
command -v qemu-system-x86_64 >/dev/null || skip_or_fail "needs qemu-system-x86 (scripts/deps.sh --test)"
command -v cpio >/dev/null || skip_or_fail "needs cpio (scripts/deps.sh --test)"
kdir=$("$here/kernel.sh" dir) || skip_or_fail "no guest kernel (scripts/deps.sh --test fetches it)"
kver=$(basename "$(find "$kdir/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n 1)")
vmlinuz=$kdir/boot/vmlinuz-$kver
[ -r "$vmlinuz" ] || skip_or_fail "no $vmlinuz in the kernel cache"

boot=$build/tests/vm/boot-$name
out=$build/tests/vm/run-$name
rm -rf "$boot" "$out"
mkdir -p "$boot/initramfs/modules" "$out"

# ---- the initramfs: vm_init and the modules for virtio-9p and overlayfs ----------------------

moddir=$kdir/lib/modules/$kver/kernel
declare -A modpath=() seen=()
while IFS= read -r ko; do
	m=${ko##*/}
	m=${m%.ko}
	modpath[${m//-/_}]=$ko
done < <(find "$moddir" -name '*.ko')

# The package ships no modules.dep (depmod runs at install): read each module's own list.
module_deps() {
	local tmp
	tmp=$(mktemp)
	objcopy -O binary --only-section=.modinfo "${modpath[$1]}" "$tmp"
	tr '\0' '\n' <"$tmp" | sed -n 's/^depends=//p' | tr ',' ' '
	rm -f "$tmp"
}

order=()
# Depth first, dependencies before the module: the order finit_module needs.
add_module() {
	local m=${1//-/_} d
	[ -n "${seen[$m]:-}" ] && return 0
	seen[$m]=1
	if [ -z "${modpath[$m]:-}" ]; then
		echo "vm_run.sh: module $m not in $moddir" >&2
		exit 1
	fi
	for d in $(module_deps "$m"); do
		add_module "$d"
	done
	order+=("$m")
}
for m in virtio_pci 9pnet_virtio 9p overlay; do
	add_module "$m"
done
for m in "${order[@]}"; do
	cp "${modpath[$m]}" "$boot/initramfs/modules/$m.ko"
	echo "$m.ko" >>"$boot/initramfs/modules/order"
done
cp "$init" "$boot/initramfs/init"
(cd "$boot/initramfs" && find . | cpio -o -H newc --quiet >"$boot/initramfs.cpio")

# ---- the job, the guest, the results --------------------------------------------------------

cat >"$out/job" <<EOF
set=$set
build=$build
source=$source_dir
require_bpf=${BARRIERD_REQUIRE_BPF:-0}
EOF

echo "vm_run.sh: $name: kernel $kver, $cpus vCPUs (TCG), set '$set', append '$append'"
echo "vm_run.sh: modules: ${order[*]}"
# One guest run: QEMU's status in qemu_status, its wall times in t0 and t1.
run_guest() {
	t0=$(date +%s.%N)
	set +e
	# TCG, named explicitly: /dev/kvm exists here, but a nested KVM guest hangs at boot.  One
	# thread for all vCPUs: under MTTCG (thread=multi) a vCPU could loop for good on the int3
	# of a tracepoint site the kernel was patching (tests/vm/README.md, "Accelerator").  The
	# timeout is the hang guard; panic=-1 with -no-reboot turns a guest panic into QEMU's
	# exit.  Console level 5 and every CPU's backtrace on a soft lockup: a hang's console
	# shows where each CPU was.
	timeout -k 10 "$timeout" qemu-system-x86_64 \
		-accel tcg,thread=single -cpu max -smp "$cpus" -m "$memory" \
		-nodefaults -no-user-config -display none -nic none -no-reboot \
		-serial "file:$out/console.log" \
		-kernel "$vmlinuz" -initrd "$boot/initramfs.cpio" \
		-append "console=ttyS0 panic=-1 rdinit=/init loglevel=5 softlockup_all_cpu_backtrace=1 mitigations=off lapic=notscdeadline bdvm_script=$here/guest.sh bdvm_out=$out $append" \
		-virtfs "local,path=/,mount_tag=bdroot,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$out,mount_tag=bdout,security_model=none,multidevs=remap" \
		${BARRIERD_VM_QEMU_ARGS:-}
	qemu_status=$?
	set -e
	t1=$(date +%s.%N)

	if [ -e "$out/boot" ]; then
		# Host wall time from QEMU's start to the guest script's first write.
		tb=$(date -r "$out/boot" +%s.%N)
		echo "vm_run.sh: $name: guest script started $(awk -v a="$t0" -v b="$tb" 'BEGIN { printf "%.1f", b - a }') s after QEMU ($(cat "$out/boot"))"
	fi
	echo "vm_run.sh: $name: QEMU exited with $qemu_status after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
	if [ -e "$out/results" ]; then
		echo "---- results ($out)"
		cat "$out/results"
	fi
	if [ "$qemu_status" = 124 ] || [ "$qemu_status" = 137 ]; then
		echo "vm_run.sh: $name: the guest hung: killed after ${timeout} s" >&2
	fi
}

run_guest
if [ ! -s "$out/init-status" ]; then
	echo "vm_run.sh: $name: the guest reported no status; console:" >&2
	tail -n 40 "$out/console.log" >&2 || true
	exit 1
fi
status=$(cat "$out/init-status")
if [ "$status" != 0 ]; then
	# The failing tests' logs, where ctest's --output-on-failure shows them.
	awk '$NF != "verdict=ok" { print $1 }' "$out/results" 2>/dev/null | while read -r t; do
		echo "---- $t.log (tail)"
		tail -n 30 "$out/$t.log" 2>/dev/null || true
		if [ -e "$out/$t.daemon.log" ]; then
			echo "---- $t.daemon.log (tail)"
			tail -n 30 "$out/$t.daemon.log"
		fi
	done
	echo "vm_run.sh: $name: guest script exited with $status" >&2
	[ "$status" = 77 ] && skip_or_fail "the guest skipped"
	exit 1
fi
