#!/usr/bin/env bash
# Runs INSIDE the systemd-nspawn container that test_package.sh boots (tests/systemd/nspawn_run.sh:
# a real systemd as PID 1 on an overlay of the host's /), as a oneshot service.  The .deb files
# are in /opt/barrierd-test; the host's packages are the lower layer, so their dependencies are
# installed and apt-get works offline for the purge.  Does what an administrator and a C
# programmer would do with the packages, checks each step, and writes to /results:
#   scenario.log (stdout), verdict (PASS or FAIL), journal.txt, and what failed.
# Every step runs; a step that fails is named, and the verdict is FAIL if any did.
set -euo pipefail

R=/results
debs=(/opt/barrierd-test/barrierd_*.deb /opt/barrierd-test/libbarrierd1_*.deb
      /opt/barrierd-test/libbarrierd-dev_*.deb)
pkgs=(barrierd libbarrierd1 libbarrierd-dev)
examples=/usr/share/doc/libbarrierd-dev/examples
prog=/opt/barrierd-programs # programs built here, readable and runnable by nobody
export DEBIAN_FRONTEND=noninteractive
step=setup
t_step=$(date +%s%N)
failed=()

finish() {
	local rc=$?
	journalctl -u barrierd --no-pager -o short-monotonic >"$R/journal.txt" 2>&1 || true
	if [ "$rc" != 0 ]; then
		echo "FAIL in step '$step' (exit $rc)"
		failed+=("$step")
	fi
	if [ ${#failed[@]} = 0 ]; then
		echo PASS >"$R/verdict"
	else
		echo "failed steps: ${failed[*]}"
		journalctl -b --no-pager -o short-monotonic >"$R/journal-all.txt" 2>&1 || true
		echo FAIL >"$R/verdict"
	fi
}
trap finish EXIT

# A failed check or command ends its step and the scenario goes on with the next one.  Each
# step is a subshell of its own, started in the background so that errexit holds inside it
# (a subshell whose status `||` tests would run with errexit off).
fail() { echo "FAIL [$step]: $*"; exit 1; }
run_step() {
	step=$1
	shift
	t_step=$(date +%s%N)
	local rc=0
	("$@") &
	wait $! || rc=$?
	if [ "$rc" = 0 ]; then
		echo "PASS [$step] ($(( ($(date +%s%N) - t_step) / 1000000 )) ms)"
	else
		failed+=("$step")
	fi
}
# Wait (tenths of a second) until a command succeeds.
wait_for() {
	local n=$1
	shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	"$@"
}
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
status_of() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || echo absent; }
healthy() { # barrierctl status: 0 healthy, 1 degraded (a CPU not yet seen); both serve barriers
	local rc=0
	barrierctl status >/dev/null 2>&1 || rc=$?
	[ "$rc" -le 1 ]
}

echo "systemd: $(systemctl --version | head -1); kernel $(uname -r)"

step_clean_host() {
	for p in "${pkgs[@]}"; do
		[ "$(status_of "$p")" != installed ] || fail "$p is installed on the host already: the test cannot tell its files from the host's"
	done
	# A container image's policy-rc.d (exit 101: "no service actions") would keep the
	# maintainer scripts from stopping and restarting the service as they do on a Debian
	# system.  It goes from the overlay only; the host keeps it.
	if [ -e /usr/sbin/policy-rc.d ]; then
		rm -f /usr/sbin/policy-rc.d
		echo "  removed the host's /usr/sbin/policy-rc.d in the overlay"
	fi
}

step_install() {
	dpkg -i "${debs[@]}" </dev/null >"$R/dpkg-install.log" 2>&1 || fail "dpkg -i: $(tail -n 20 "$R/dpkg-install.log")"
	for p in "${pkgs[@]}"; do
		[ "$(status_of "$p")" = installed ] || fail "$p: status $(status_of "$p")"
	done
	dpkg-query -W -f='${Conffiles}\n' barrierd | grep -q '^ /etc/default/barrierd ' ||
		fail "/etc/default/barrierd is not a conffile: $(dpkg-query -W -f='${Conffiles}' barrierd)"
	echo "  installed: $(dpkg-query -W -f='${Package} ${Version}\n' "${pkgs[@]}" | paste -sd, | sed 's/,/, /g')"
}

step_unit() {
	[ -f /lib/systemd/system/barrierd.service ] || fail "no /lib/systemd/system/barrierd.service"
	local frag
	frag=$(systemctl show -p FragmentPath --value barrierd)
	case $frag in
	/lib/systemd/system/barrierd.service | /usr/lib/systemd/system/barrierd.service) ;;
	*) fail "systemd finds barrierd.service at '$frag'" ;;
	esac
	[ -f /usr/lib/tmpfiles.d/barrierd.conf ] || fail "no tmpfiles.d entry"
	# Installed, neither enabled nor started (packaging/README.md).
	local en act
	en=$(systemctl is-enabled barrierd 2>&1) || true
	act=$(systemctl is-active barrierd 2>&1) || true
	[ "$en" = disabled ] || fail "after install: is-enabled says '$en', want disabled"
	[ "$act" = inactive ] || fail "after install: is-active says '$act', want inactive"
	echo "  $frag; $en, $act"
}

step_pkg_config() {
	local flags
	flags=$(pkg-config --cflags --libs barrierd) || fail "pkg-config --cflags --libs barrierd: exit $?"
	case " $flags " in *" -lbarrierd "*) ;; *) fail "pkg-config gives '$flags'" ;; esac
	[ "$(pkg-config --modversion barrierd)" = "$(dpkg-query -W -f='${Version}' libbarrierd-dev | sed 's/-[^-]*$//')" ] ||
		fail "pkg-config version $(pkg-config --modversion barrierd)"
	echo "  pkg-config --cflags --libs barrierd: $flags"
}

# Each program as its author would build it: the installed examples (the README's quick start
# among them) and the tests' hello.c against the installed .pc and headers.
step_compile() {
	mkdir -p "$prog"
	chmod 0755 "$prog"
	local srcs=("$BARRIERD_SOURCE_DIR/tests/install/hello.c" "$examples/ec.c" "$examples/epoch.c"
		"$examples/hp.c" "$examples/quickstart.c")
	local s name
	for s in "${srcs[@]}"; do
		[ -f "$s" ] || fail "no $s"
		name=$(basename "$s" .c)
		# shellcheck disable=SC2046 # pkg-config's words
		cc -Wall -Wextra -Werror -O2 -pthread "$s" -o "$prog/$name" $(pkg-config --cflags --libs barrierd) \
			2>"$R/cc-$name.log" || fail "cc $s: $(cat "$R/cc-$name.log")"
	done
	echo "  built: $(cd "$prog" && echo *)"
}

# dpkg-shlibdeps on a program linked with -lbarrierd: the symbols file gives the dependency.
step_shlibdeps() {
	local d out
	d=$(mktemp -d)
	mkdir "$d/debian"
	printf 'Source: barrierd-client\n\nPackage: barrierd-client\nArchitecture: any\n' >"$d/debian/control"
	# (Its warning that the program is not in a package's build directory is expected.)
	out=$(cd "$d" && dpkg-shlibdeps -O "$prog/ec" 2>"$R/shlibdeps.err") || fail "dpkg-shlibdeps: $(cat "$R/shlibdeps.err")"
	rm -rf "$d"
	case $out in *"libbarrierd1 (>= "*) ;; *) fail "dpkg-shlibdeps gives no libbarrierd1 dependency: $out" ;; esac
	echo "  $out"
}

step_man() {
	local page missing=()
	for page in barrierd barrierctl barrierd_barrier; do
		if ! man -w "$page" >/dev/null 2>&1; then
			missing+=("$page")
			continue
		fi
		man -P cat "$page" >"$R/man-$page.txt" 2>&1 || fail "man -P cat $page: $(head -3 "$R/man-$page.txt")"
		[ -s "$R/man-$page.txt" ] || fail "man $page is empty"
		echo "  man $page: $(man -w "$page")"
	done
	[ ${#missing[@]} = 0 ] || fail "no manual page for: ${missing[*]} (man -w found none; the packages install $(dpkg -L barrierd libbarrierd-dev | grep '/man/man.*\.gz$' | xargs -r -n1 basename | tr '\n' ' '))"
}

step_enable_now() {
	systemctl enable --now barrierd
	[ "$(systemctl is-enabled barrierd)" = enabled ] || fail "not enabled"
	[ "$(systemctl is-active barrierd)" = active ] || fail "not active"
	[ -L /etc/systemd/system/multi-user.target.wants/barrierd.service ] || fail "no multi-user.target.wants link"
	wait_for 100 healthy || fail "barrierctl status: $(barrierctl status 2>&1 | head -5)"
	echo "  $(systemctl show -p StatusText --value barrierd)"
}

step_barriers_as_nobody() {
	local out name
	out=$(as_nobody barrierctl wait 2>&1) || fail "barrierctl wait as nobody: $out"
	out=$(as_nobody "$prog/hello" 2>&1) || fail "hello as nobody: $out"
	for name in ec epoch hp; do
		out=$(as_nobody timeout 60 "$prog/$name" 2>&1) || fail "$name as nobody: exit $?: $out"
	done
	out=$(as_nobody timeout 60 "$prog/quickstart" 2>&1) || fail "quickstart as nobody: $out"
	echo "  barrierctl wait, hello, ec, epoch, hp, quickstart as nobody"
}

# An edited conffile survives a reinstall, without a prompt (stdin is /dev/null: a prompt
# would fail dpkg), and the running service is restarted with it (try-restart).
step_reinstall_keeps_edit() {
	local pid_before pid_after
	pid_before=$(systemctl show -p MainPID --value barrierd)
	printf '# edited by test_package\nBARRIERD_OPTS="--heartbeat-period 250"\n' >>/etc/default/barrierd
	dpkg -i "${debs[@]}" </dev/null >"$R/dpkg-reinstall.log" 2>&1 || fail "dpkg -i again: $(tail -n 20 "$R/dpkg-reinstall.log")"
	grep -q '^# edited by test_package$' /etc/default/barrierd || fail "the edit of /etc/default/barrierd was lost: $(cat /etc/default/barrierd)"
	[ ! -e /etc/default/barrierd.dpkg-dist ] || fail "dpkg left /etc/default/barrierd.dpkg-dist"
	[ "$(systemctl is-enabled barrierd)" = enabled ] || fail "not enabled after the reinstall"
	wait_for 100 sh -c '[ "$(systemctl is-active barrierd)" = active ]' || fail "not active after the reinstall"
	pid_after=$(systemctl show -p MainPID --value barrierd)
	[ "$pid_after" != "$pid_before" ] || fail "the service was not restarted by the reinstall (pid $pid_before)"
	tr '\0' ' ' <"/proc/$pid_after/cmdline" | grep -q -- '--heartbeat-period 250' ||
		fail "the restarted daemon does not run with the edited options: $(tr '\0' ' ' <"/proc/$pid_after/cmdline")"
	wait_for 100 healthy || fail "barrierctl status after the reinstall"
	local out
	out=$(as_nobody barrierctl wait 2>&1) || fail "barrierctl wait after the reinstall: $out"
	echo "  edit kept; daemon restarted (pid $pid_before -> $pid_after) with it"
}

# Purge everything: nothing of the packages is left but what Debian policy keeps (directories
# other packages share).
step_purge() {
	apt-get purge -y "${pkgs[@]}" </dev/null >"$R/apt-purge.log" 2>&1 || fail "apt-get purge: $(tail -n 20 "$R/apt-purge.log")"
	local p f left=()
	for p in "${pkgs[@]}"; do
		case $(status_of "$p") in
		not-installed | absent) ;;
		*) fail "$p: dpkg status '$(status_of "$p")' after purge" ;;
		esac
	done
	pgrep -x barrierd >/dev/null && fail "barrierd still runs: $(pgrep -a -x barrierd)"
	while IFS= read -r f; do
		if [ -e "$f" ] || [ -L "$f" ]; then left+=("$f"); fi
	done <"$R/shipped.txt"
	for f in /var/lib/dpkg/info/barrierd.* /var/lib/dpkg/info/libbarrierd1[.:]* \
		/var/lib/dpkg/info/libbarrierd-dev[.:]* /etc/default/barrierd* \
		/etc/systemd/system/*.wants/barrierd* /var/lib/systemd/deb-systemd-helper-enabled/barrierd* \
		/var/lib/systemd/deb-systemd-helper-enabled/*.wants/barrierd* /run/barrierd* \
		/usr/share/doc/barrierd /usr/share/doc/libbarrierd1 /usr/share/doc/libbarrierd-dev; do
		if [ -e "$f" ] || [ -L "$f" ]; then left+=("$f"); fi
	done
	[ ${#left[@]} = 0 ] || fail "left after purge: ${left[*]}"
	echo "  $(wc -l <"$R/shipped.txt") shipped paths, dpkg's records, enablement links and /run/barrierd*: all gone"
}

run_step clean-host step_clean_host
run_step install step_install
run_step unit step_unit
run_step pkg-config step_pkg_config
run_step compile step_compile
run_step shlibdeps step_shlibdeps
run_step man step_man
run_step enable-now step_enable_now
run_step barriers-as-nobody step_barriers_as_nobody
run_step reinstall-keeps-edit step_reinstall_keeps_edit
run_step purge step_purge
step=done
