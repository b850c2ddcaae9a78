#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_rust.sh DAEMON SOURCE_DIR WORKDIR LIBDIR PKGCONFIG_DIR: the Rust workspace
# (bindings/rust) against the real daemon on a temporary state path: cargo test (unit,
# integration against the daemon, doc tests), cargo clippy -D warnings, cargo fmt --check,
# cargo doc -D warnings, the cfg(miri) path compile-checked, and the hazard example and the
# benchmark run briefly.
# Offline, with CARGO_HOME and CARGO_TARGET_DIR under WORKDIR; the library found through the
# build tree's uninstalled barrierd.pc.  Skips (77) without cargo, root or BPF, unless
# BARRIERD_REQUIRE_BPF=1.
set -euo pipefail
daemon=$1 src=$2 work=$3 libdir=$4 pcdir=$5

# shellcheck source=../../samples/daemon_lib.sh
. "$(dirname "$0")/../../samples/daemon_lib.sh"

# Debian's toolchain (scripts/deps.sh) before any other cargo on PATH (a rustup one): the
# crates must build with it.  $CARGO picks another.
cargo=${CARGO:-}
if [ -z "$cargo" ]; then
	if [ -x /usr/bin/cargo ]; then cargo=/usr/bin/cargo; else cargo=$(command -v cargo || true); fi
fi
[ -n "$cargo" ] && "$cargo" --version >/dev/null 2>&1 ||
	skip "needs cargo (scripts/deps.sh installs cargo rustc rust-clippy rustfmt)"
# Its rustc, clippy-driver and rustfmt come from its own directory.
PATH="$(dirname "$cargo"):$PATH"
export PATH
for sub in clippy fmt; do
	"$cargo" "$sub" --version >/dev/null 2>&1 || skip "needs cargo $sub (Debian: rust-clippy, rustfmt)"
done

# sample_daemon_start's file polls fail harmlessly while the file is missing: no errexit there.
if ! sample_daemon_start "$daemon" "$work/run" rust; then
	fail "the daemon did not start"
fi

export BARRIERD_STATE=$state
export PKG_CONFIG_PATH=$pcdir
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CARGO_HOME=$work/cargo-home CARGO_TARGET_DIR=$work/target
# Doc tests are one program each: linking std dynamically makes them about three times faster
# to build (the run finds libstd through the dylib path cargo sets).
export RUSTDOCFLAGS="-C prefer-dynamic"
cd "$src"

step() {
	echo "+ $*"
	local t0=$SECONDS
	# Hang guard only: a cold build takes a few minutes on 2 CPUs.
	timeout 1200 "$@" || fail "$* failed"
	echo "  ($((SECONDS - t0)) s)"
}

step "$cargo" test --offline --locked --workspace
step "$cargo" clippy --offline --locked --workspace --all-targets -- -D warnings
step "$cargo" fmt --all --check
# Broken intra-doc links fail too.
RUSTDOCFLAGS="-D warnings" step "$cargo" doc --offline --locked --no-deps --workspace
# Miri cannot run here (not in Debian): the cfg(miri) path is compile-checked, in a target
# directory of its own so that the other builds stay warm.
CARGO_TARGET_DIR=$work/target-miri RUSTFLAGS="--cfg miri" \
	step "$cargo" check --offline --locked --workspace --all-targets
step "$cargo" run --offline --locked -q -p barrierd --example hazard -- --replacements 500
step "$cargo" run --offline --locked -q -p barrierd-bench -- --rounds 1 --calls 10
echo "PASS"
