#!/usr/bin/env bash
# The guests' kernel: Debian 12's current linux-image-*-amd64, unpacked into a cache, never
# installed.  Installing it would run its hooks (update-initramfs, the boot loader), which
# rewrite the host's boot files; unpacking it runs nothing.
#
#   kernel.sh fetch   download (apt-get download) and unpack it, unless the cache has it
#   kernel.sh dir     print the cached kernel's folder (boot/vmlinuz-*, lib/modules/*); 1 if none
#
# BARRIERD_VM_CACHE overrides the cache folder (default /var/cache/barrierd-vm).
set -euo pipefail

cache=${BARRIERD_VM_CACHE:-/var/cache/barrierd-vm}

# The ABI number changes with every kernel update: ask the metapackage which one is current.
current_package() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1
}

fetch() {
	local pkg tmp
	pkg=$(current_package)
	if [ -z "$pkg" ]; then
		# A machine whose package lists were never fetched (deps.sh updates them only when
		# it installs something).
		apt-get update -qq
		pkg=$(current_package)
	fi
	if [ -z "$pkg" ]; then
		echo "kernel.sh: apt-cache knows no linux-image-amd64 (run apt-get update)" >&2
		return 1
	fi
	if [ -e "$cache/$pkg/.complete" ]; then
		return 0
	fi
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	# apt drops privileges to _apt for downloads: give it the folder, or it warns and
	# downloads as root.
	chown _apt "$tmp" 2>/dev/null || true
	(cd "$tmp" && apt-get download -q "$pkg" >/dev/null)
	mkdir "$tmp/root"
	dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root"
	rm -f "$tmp"/*.deb
	rm -rf "${cache:?}/$pkg"
	mv "$tmp/root" "$cache/$pkg"
	rmdir "$tmp"
	touch "$cache/$pkg/.complete"
	echo "kernel.sh: $pkg unpacked in $cache/$pkg" >&2
}

dir() {
	local d
	# The newest complete one: an apt update may have moved the metapackage on since.
	d=$(find "$cache" -mindepth 2 -maxdepth 2 -name .complete -printf '%h\n' 2>/dev/null |
		sort -V | tail -n 1)
	if [ -z "$d" ]; then
		echo "kernel.sh: no guest kernel in $cache (scripts/deps.sh --test fetches it)" >&2
		return 1
	fi
	echo "$d"
}

case "${1:-}" in
fetch) fetch ;;
dir) dir ;;
*)
	echo "usage: kernel.sh fetch|dir" >&2
	exit 64
	;;
esac
