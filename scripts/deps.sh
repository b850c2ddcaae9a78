#!/usr/bin/env bash
# Install barrierd's dependencies from Debian's archive (Debian 12, as root).
# Idempotent: apt runs only when something is missing.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: scripts/deps.sh [--test]

Installs, from Debian's archive (as root; apt runs only when something is missing):
  (no option)  what building needs: the compiler, cmake, pkg-config, clang, llvm and bpftool
               for the BPF programs, libbpf, libelf, zlib, libseccomp and libsystemd; the
               same set as packaging/debian/control's Build-Depends.
  --test       that, and what the tests, the benchmarks and the Debian packaging need
               (cmocka, systemd-container, valgrind, QEMU, clang-format, gnuplot, ck and
               liburcu, debhelper, lintian, ...), then fetches the test guests' kernel into
               /var/cache/barrierd-vm (tests/vm/kernel.sh; never installed).
  -h, --help   this text.
EOF
}

test_set=no
for arg in "$@"; do
	case $arg in
	--test) test_set=yes ;;
	-h | --help) usage; exit 0 ;;
	*) echo "deps.sh: unknown argument '$arg' (scripts/deps.sh --help)" >&2; exit 64 ;;
	esac
done

# Building: the daemon, the library, barrierctl, the BPF objects (packaging/debian/control's
# Build-Depends names the same, less gcc and make, which build-essential brings there).
pkgs=(gcc make cmake pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev
      libseccomp-dev libsystemd-dev)
if [ "$test_set" = yes ]; then
	# The tests (cmocka; systemd and nspawn; valgrind; the fuzzers' libFuzzer runtime; the
	# audit's mutants; QEMU guests; the format check), the benchmarks (gnuplot, ck, liburcu),
	# the package test (build-essential, debhelper, lintian, blhc, man-db), and the other
	# suites (C++, Rust, the Spin model, the metrics parser, JSON Schema, bash completion).
	pkgs+=(libcmocka-dev util-linux procps systemd systemd-container gnuplot-nox clang-format
	       patch libclang-rt-14-dev valgrind libck-dev liburcu-dev qemu-system-x86 cpio binutils
	       build-essential dpkg-dev debhelper lintian blhc man-db
	       python3-prometheus-client python3-jsonschema bash-completion g++ cargo rustc
	       rust-clippy rustfmt spin)
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# Wait for another apt or dpkg (a colleague's, unattended-upgrades) rather than fail.
	apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}"
fi
if [ "$test_set" = yes ]; then
	# The test guests' kernel (tests/vm): downloaded and unpacked into a cache, never installed.
	"$(dirname "$0")/../tests/vm/kernel.sh" fetch
fi
