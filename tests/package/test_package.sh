#!/usr/bin/env bash
# The Debian packages end to end: build them from a copy of the source tree with
# dpkg-buildpackage (packaging/debian linked to debian/), run lintian and blhc on the results,
# then boot a real systemd in the nspawn overlay of this machine's / (tests/systemd/nspawn_run.sh)
# and run scenario.sh there: install with dpkg -i, build programs against the installed
# pkg-config file, enable and use the service, reinstall over an edited conffile, purge.
#   test_package.sh SOURCE_DIR WORK_DIR
# WORK_DIR (in the build tree, emptied first) keeps the .deb files and the logs: build.log, lintian.txt,
# blhc.txt, nspawn/scenario.log.  Root; skips (77) without root or the packaging tools, fails
# instead under BARRIERD_REQUIRE_BPF=1.  Hang guards: 600 s for the build, 300 s for lintian,
# 240 s for the container.
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
here=$(cd "$(dirname "$0")" && pwd)

skip() {
	if [ "${BARRIERD_REQUIRE_BPF:-}" = 1 ]; then echo "FAIL: $1, and BARRIERD_REQUIRE_BPF=1 forbids skipping"; exit 1; fi
	echo "SKIP: $1"; exit 77
}
fail() { echo "FAIL: $*"; exit 1; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

[ "$(id -u)" = 0 ] || skip "needs root"
for tool in dpkg-buildpackage dh lintian blhc systemd-nspawn; do
	command -v "$tool" >/dev/null ||
		skip "needs $tool (scripts/deps.sh --test installs dpkg-dev, debhelper, lintian, blhc, systemd-container)"
done
t_all=$(date +%s%N)

# --- a copy of the source tree: what git tracks (and new files not ignored), else everything
# but build trees.  dpkg-buildpackage writes its results beside the tree it builds.
version=$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version)
upstream=${version%-*}
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
cd "$work"
tree=$work/barrierd-$upstream
mkdir "$tree"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		(cd "$src" && while IFS= read -r -d '' f; do
			# A tracked file deleted in the work tree is not part of it.
			if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
		done) |
		(cd "$src" && xargs -0 -r cp -P --parents -t "$tree")
else
	tar -C "$src" --exclude='./build' --exclude='./build-*' --exclude='./obj-*' \
		--exclude='./debian' --exclude='./.git' -cf - . | tar -C "$tree" -xf -
fi
ln -s packaging/debian "$tree/debian"

# --- build
echo "== dpkg-buildpackage -us -uc -b (version $version)"
t=$(date +%s%N)
rc=0
(cd "$tree" && DEB_BUILD_OPTIONS=parallel=2 timeout 600 dpkg-buildpackage -us -uc -b) \
	>"$work/build.log" 2>&1 || rc=$?
build_ms=$(ms_since "$t")
if [ "$rc" != 0 ]; then
	tail -n 60 "$work/build.log"
	fail "dpkg-buildpackage: exit $rc ($build_ms ms); log in $work/build.log"
fi
echo "built in $build_ms ms"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
changes=$work/barrierd_${version}_${arch}.changes
debs=()
for p in barrierd libbarrierd1 libbarrierd-dev; do
	deb=$work/${p}_${version}_${arch}.deb
	[ -f "$deb" ] || fail "no $deb"
	debs+=("$deb")
done

echo "== package sizes (file; installed)"
for deb in "${debs[@]}"; do
	printf '%-40s %8s bytes; Installed-Size %s KiB\n' "$(basename "$deb")" "$(stat -c %s "$deb")" \
		"$(dpkg-deb -f "$deb" Installed-Size)"
done

# --- static checks on the built files
echo "== lintian --fail-on error"
t=$(date +%s%N)
rc=0
timeout 300 lintian --fail-on error --display-info --show-overrides "$changes" \
	>"$work/lintian.txt" 2>&1 || rc=$?
sed 's/^/  /' "$work/lintian.txt"
[ "$rc" = 0 ] || fail "lintian: exit $rc (errors, or lintian failed): $work/lintian.txt"
echo "lintian: no errors ($(grep -c '^W: ' "$work/lintian.txt" || true) warnings, $(ms_since "$t") ms)"

# Debian's hardening flags reached every compile and link of the build (the BPF objects are
# not compiled for the host and blhc does not take their clang lines for C compiles).
rc=0
blhc "$work/build.log" >"$work/blhc.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$work/blhc.txt"; fail "blhc: build flags missing (exit $rc)"; }
bpf_line=$(grep -m1 -- '-target bpf' "$work/build.log") || fail "no BPF compile line in the build log"
for flag in $(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CFLAGS) \
	$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CPPFLAGS); do
	case $flag in -g | -O2) continue ;; esac # the BPF command's own flags too
	case " $bpf_line " in *" $flag "*) fail "Debian's $flag reached the BPF compile: $bpf_line" ;; esac
done
echo "blhc: hardening flags on every compile and link; none on the BPF objects"

conffiles=$(dpkg-deb --ctrl-tarfile "${debs[0]}" | tar -xOf - ./conffiles)
[ "$conffiles" = /etc/default/barrierd ] || fail "barrierd's conffiles: '$conffiles'"
libfiles=$(dpkg-deb --fsys-tarfile "${debs[1]}" | tar -tf - | grep -v '/$' | grep -v '^./usr/share/doc/') || true
for f in $libfiles; do
	case $f in ./usr/lib/*/libbarrierd.so.1*) ;; *) fail "libbarrierd1 ships $f" ;; esac
done
echo "conffiles: $conffiles; libbarrierd1: $(echo "$libfiles" | tr '\n' ' ')"

# --- the packages under a real systemd, in the overlay
echo "== in systemd-nspawn: scenario.sh"
results=$work/nspawn
mkdir -p "$results"
# What each package ships, for the scenario's check that purge leaves none of it.
for deb in "${debs[@]}"; do
	dpkg-deb --fsys-tarfile "$deb" | tar -tf - | sed -n 's,^\./\(.*[^/]\)$,/\1,p'
done >"$results/shipped.txt"
t=$(date +%s%N)
rc=0
BARRIERD_BINDIR=/usr/bin "$src/tests/systemd/nspawn_run.sh" "$src" "" "$here/scenario.sh" \
	"$results" 240 "${debs[@]}" || rc=$?
[ "$rc" = 77 ] && exit 77
cat "$results/scenario.log" 2>/dev/null || echo "(no scenario.log)"
verdict=$(cat "$results/verdict" 2>/dev/null || echo none)
if [ "$rc" != 0 ] || [ "$verdict" != PASS ]; then
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "FAIL: the container did not finish within the hang guard"; fi
	echo "--- journal of barrierd.service"
	cat "$results/journal.txt" 2>/dev/null || true
	echo "--- container console (last 40 lines)"
	tail -n 40 "$results/console.log" 2>/dev/null || true
	fail "nspawn exit $rc, verdict $verdict ($(ms_since "$t") ms); results in $results"
fi

# The copied tree and its build directory are large and no longer needed; the packages and
# logs stay.
rm -rf "$tree"
echo "PASS: packages built ($build_ms ms), lintian clean of errors, installed, used, reinstalled and purged ($(ms_since "$t_all") ms in all)"
