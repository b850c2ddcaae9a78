#!/usr/bin/env bash
# Install barrierd's build and test dependencies from Debian's archive (Debian 12, as root).
# Idempotent: apt runs only when something is missing.
set -euo pipefail
pkgs=(gcc make cmake pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev
      libseccomp-dev libsystemd-dev libcmocka-dev util-linux systemd systemd-container
      gnuplot-nox clang-format patch libclang-rt-14-dev valgrind libck-dev liburcu-dev
      qemu-system-x86 cpio binutils cargo rustc rust-clippy rustfmt)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The test guests' kernel (tests/vm): downloaded and unpacked into a cache, never installed.
"$(dirname "$0")/../tests/vm/kernel.sh" fetch
