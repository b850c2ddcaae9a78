#!/usr/bin/env bash
# barrierd's benchmark harness: every measurement of docs/PERFORMANCE.md (section 2 lists the
# targets), side by side in one run.
#
#   sudo bench/run.sh [BUILD_DIR]          (default ./build; builds nothing itself)
#
# Needs root, a built tree (cmake --build BUILD_DIR) and, for the plots, gnuplot (Debian
# gnuplot-nox).  Takes about 8 minutes on a 2-CPU machine (BENCH_QUICK=1: about 2 minutes, with
# fewer samples).  Starts its own daemon on a temporary state path and leaves nothing running.
# Results: bench/results/<timestamp>/ (or $BENCH_OUT): raw CSVs, one markdown table per
# measurement, summary.md (the targets against the figures) and PNG plots, made by
# bench/report.sh, which can be re-run on a results directory alone.
#
# Sections (docs/PERFORMANCE.md explains each):
#   1 latency    barrier latency of barrierd, vtime, membarrier GLOBAL / GLOBAL_EXPEDITED /
#                PRIVATE_EXPEDITED and the mprotect trick (barrierctl bench --csv), a client of
#                the original layout against membarrier GLOBAL, and the notification latency;
#                idle and loaded blocks interleaved
#   2 ipi        IPIs per barrier per CPU and kind, waiter and daemon pinned to CPU 0, counting
#                CPU 1; then the daemon on CPU 1 alone, to name the doorbell's IPI; then who
#                sends which IPI (ipi tracepoints) with the waiter and daemon placed four ways
#   3 waiters    1, 10, 100, 1000 threads blocked on one barrier
#   4 cpu        daemon CPU (schedstat): idle and loaded, each with no waiter, a waiter doing 100
#                barriers/s and one looping; a context-switching load without and with a waiter;
#                a doorbell flood by user nobody at the default and at --max-credit-rate 10000
#   5 getpid     getpid() cost: no daemon, empty program, daemon default, daemon + sys_enter
#   6 bpf        BPF cost per hit per program and tracepoint against a baseline program, each
#                alone in rotating windows (kernel.bpf_stats_enabled=1 for this section only)
#   7 model      the daemon's per-pass cost against ncpu (1..4096) on simulated slot arrays
#   8 overshoot  how far past its timeout a wait that cannot pass returns
#   9 legacy     a client of the original layout (10 ms futex waits on the ns and vtime words,
#                random 0-100 ms gaps, no doorbell) against membarrier GLOBAL, a nice-10 spinner
#                on one CPU: unpinned; client and daemon pinned to the first CPU with the
#                spinner on the second; the same with the second CPU idle
#   10 pinned    the loaded headline: barrierd, vtime and membarrier GLOBAL with the waiter and
#                the daemon pinned to the first CPU and a nice-19 spinner on every other CPU,
#                beside the unpinned loaded run (--load), blocks alternating; report.sh projects
#                the pinned per-CPU wait to 8, 64 and 256 CPUs
#   11 cost      daemon CPU, passes, doorbell rings and ring-buffer signals per barrier for a
#                waiter doing 100 barriers/s, idle and loaded, pinned and unpinned, and the idle
#                machine with no waiter
#   12 nudge     the pinned loaded latency (as 10) and the idle one with the daemon restarted at
#                --nudge-after 0 (off), 0.5 and its default, beside membarrier GLOBAL and the two
#                expedited commands, IPIs per call by kind, nudges per barrier, the daemon's CPU;
#                then a flood by user nobody (rings, and a thread asleep on the global word) with
#                every CPU but the first busy: nudges per second per CPU against the cap
#   13 direct    direct evidence (PERFORMANCE §10), the daemon's main and doorbell
#                threads on the first CPU, the caller there too (barrierctl bench --cpu): idle,
#                barrierd_barrier() crediting from the slots (direct) and without them (file)
#                beside membarrier PRIVATE_EXPEDITED, GLOBAL_EXPEDITED (registered) and GLOBAL,
#                interleaved with random 0-10 ms gaps, IPIs per call; direct and file back to
#                back; system calls per call (strace -f between bench_direct's markers, the
#                gaps' clock_nanosleep left out) for direct, file and PRIVATE_EXPEDITED;
#                barrierd_passed()'s cost, already passed and fresh; half-loaded (a nice-0
#                spinner on the second CPU): direct, file and GLOBAL, with how direct credited
#                each CPU (the credit observer).  About a minute (BENCH_QUICK=1: 15 s)
#   14 prim      the primitives (PERFORMANCE §11) against Debian's libck-dev and
#                liburcu-dev: event counts (bench_ec: barrierd_ec SP/MP against ck_ec64 SP/MP)
#                cycles per increment without and with a waiter, instructions per increment
#                (callgrind), wake latency, the time until a waiter's indefinite block and its
#                CPU time over a long wait; reclamation (bench_reclaim: barrierd epochs on the
#                direct and the file path, hazard pointers, ck_epoch, liburcu memb/mb/qsbr)
#                read-side ns per section with 1 and 2 threads, grace-period latency and IPIs
#                idle and with a nice-0 spinner on the second CPU, 1 and 2 sleepy readers (and
#                loaded with the daemon pinned to the first CPU), and the objects held under
#                10 000 retirements/s.  About 80 s (BENCH_QUICK=1: 30 s);
#                skipped with a note when bench_ec and bench_reclaim were not built (no
#                libck-dev or liburcu-dev: scripts/deps.sh --test)
# BENCH_SECTIONS="1 2 ..." runs a subset (for development; a full run is all of them).
# BENCH_REPS=N repeats sections 9-13 N times (default 1), the configurations rotating, for
# ranges; /proc/loadavg and the machine's busy share are recorded before each measurement
# (loadavg.csv); BENCH_WAIT_QUIET=1 first waits for a quiet machine (under 10 % busy).
#   BENCH_SECTIONS="9 10 11" BENCH_REPS=3 BENCH_WAIT_QUIET=1 bench/run.sh build
#                the issue-15 cases alone (about 15 minutes on 2 CPUs; BENCH_QUICK=1: 3)
set -euo pipefail

die() {
	echo "run.sh: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (it loads BPF programs and runs the daemon)"
src=$(cd "$(dirname "$0")/.." && pwd)
build_arg=${1:-build}
[ -d "$build_arg" ] || die "no build directory '$build_arg' (cmake -S . -B build && cmake --build build)"
build=$(cd "$build_arg" && pwd)
for f in src/barrierd src/barrierctl bench/bench_notify bench/bench_ipi bench/bench_waiters \
	bench/bench_util bench/bench_flood bench/bench_orig bench/bench_getpid bench/bench_bpf \
	bench/bench_model bench/bench_overshoot bench/bench_legacy bench/bench_direct; do
	[ -x "$build/$f" ] || die "$build/$f is missing: build the tree first (cmake --build $build_arg)"
done
for t in taskset setpriv od awk sort nice; do
	command -v "$t" >/dev/null || die "$t is missing"
done

quick=${BENCH_QUICK:-0}
sections=${BENCH_SECTIONS:-1 2 3 4 5 6 7 8 9 10 11 12 13 14}
reps=${BENCH_REPS:-1}
scale() { # full quick
	if [ "$quick" = 1 ]; then echo "$2"; else echo "$1"; fi
}
want() {
	case " $sections " in *" $1 "*) return 0 ;; *) return 1 ;; esac
}

stamp=$(date +%Y%m%d-%H%M%S)
out=${BENCH_OUT:-$src/bench/results/$stamp}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d /tmp/barrierd-bench.XXXXXX)
chmod 0755 "$tmp" # user nobody maps the state file in the flood
state=$tmp/state

daemon_pid=""
spin_pids=()
bg_pids=()
stats_saved=""

log() {
	printf '[%s] %s\n' "$(date +%T)" "$*" | tee -a "$out/run.log"
}

cleanup() {
	local rc=$?
	set +e
	for p in "${bg_pids[@]}" "${spin_pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null
	fi
	wait 2>/dev/null
	if [ -n "$stats_saved" ]; then
		sysctl -q -w kernel.bpf_stats_enabled="$stats_saved" >/dev/null
	fi
	[ -f "$tmp/daemon.log" ] && cp "$tmp/daemon.log" "$out/daemon.log"
	rm -rf "$tmp"
	if [ "$rc" -ne 0 ]; then
		echo "run.sh: failed (exit $rc); partial results in $out" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- helpers ------------------------------------------------------------------------------

# The online CPUs, one per line ("0-1,3" -> 0 1 3).
cpus=$(awk -F, '{for (i = 1; i <= NF; i++) {n = split($i, r, "-"); a = r[1]; b = n > 1 ? r[2] : r[1];
	for (c = a; c <= b; c++) print c}}' /sys/devices/system/cpu/online)
ncpu=$(echo "$cpus" | wc -l)
[ "$ncpu" -ge 2 ] || die "needs at least 2 online CPUs (the IPI section counts CPU 1)"
all_cpus=$(echo "$cpus" | paste -sd, -)

rd64() { # FILE OFFSET: one little-endian u64
	od -A n -t u8 -j "$2" -N 8 "$1" | tr -d ' '
}

start_daemon() { # [barrierd options]
	"$build/src/barrierd" --state "$state" "$@" 2>>"$tmp/daemon.log" &
	daemon_pid=$!
	local i
	for i in $(seq 200); do
		if [ -s "$state" ] && [ $(($(rd64 "$state" 56) & 1)) -eq 1 ] &&
			[ "$(rd64 "$state" 88)" = "$daemon_pid" ]; then
			return 0
		fi
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.05
	done
	tail -5 "$tmp/daemon.log" >&2
	die "the daemon did not start (barrierd $*)"
}

stop_daemon() {
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
		daemon_pid=""
	fi
}

# Wait (at most 5 s) until the daemon has disarmed its watermark: nobody waited for 1 s.
wait_disarmed() {
	local i
	for i in $(seq 100); do
		[ $(($(rd64 "$state" 56) & 4)) -eq 0 ] && return 0
		sleep 0.05
	done
	log "note: the daemon stayed armed (someone waits on $state?)"
}

start_spinners() { # a nice-19 spinner pinned on every CPU, as barrierctl bench --load
	local c
	for c in $cpus; do
		taskset -c "$c" nice -n 19 sh -c 'while :; do :; done' &
		spin_pids+=($!)
	done
}

stop_spinners() {
	local p
	for p in "${spin_pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${spin_pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	spin_pids=()
}

# Sum of sum_exec_runtime (ns) over every thread of a process: precise, unlike utime/stime ticks.
sched_ns() { # PID
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'
}

# Machine-wide /proc/stat: "busy_jiffies steal_jiffies total_jiffies".
machine_stat() {
	awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i;
		print t - $5 - $6, $9, t; exit}' /proc/stat
}

machine_busy_pct() { # "BEFORE" "AFTER" -> "busy% steal%"
	echo "$1 $2" | awk '{dt = $6 - $3; if (dt <= 0) dt = 1;
		printf "%.2f %.2f\n", 100 * ($4 - $1) / dt, 100 * ($5 - $2) / dt}'
}

ext_off() {
	rd64 "$state" 120
}

# The machine's busy share over one second, from /proc/stat (all CPUs: 100 = every CPU busy).
busy_now() {
	local s0
	s0=$(machine_stat)
	sleep 1
	machine_busy_pct "$s0" "$(machine_stat)" | cut -d' ' -f1
}

# /proc/loadavg and the busy share of the last second before a measurement (other sessions'
# builds are the noise to know about).  With BENCH_WAIT_QUIET=1, first wait (at most 10 min)
# until a second passes with the machine under 10 % busy; call it before starting spinners.
note_load() { # SECTION CONFIG REP
	local b i
	b=$(busy_now)
	if [ "${BENCH_WAIT_QUIET:-0}" = 1 ]; then
		for i in $(seq 600); do
			awk -v b="$b" 'BEGIN {exit !(b < 10)}' && break
			[ "$i" = 1 ] && log "waiting for a quiet machine (busy $b %)"
			b=$(busy_now)
		done
	fi
	echo "$1,$2,$3,$(date +%s),$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,),$b" >>"$out/loadavg.csv"
}

# Pin every thread of the daemon to CPULIST but its nudge threads, which stay on their CPUs.
pin_daemon() { # CPULIST
	local t
	for t in /proc/"$daemon_pid"/task/*; do
		case "$(cat "$t/comm" 2>/dev/null)" in bd-nudge/*) continue ;; esac
		taskset -p -c "$1" "${t##*/}" >/dev/null 2>&1 || true
	done
}

# The daemon's nudge count (ext.nudges, ABI 1.2).
nudges_now() {
	rd64 "$state" $(($(ext_off) + 80))
}

# A spinner pinned on CPU at a nice level, its PID in spin_pids (stop_spinners ends it).
spin_on() { # CPU NICE
	taskset -c "$1" nice -n "$2" sh -c 'while :; do :; done' &
	spin_pids+=($!)
}

# Rotate a list by N places: each repetition starts with a different configuration.
rotate() { # N words...
	local n=$1
	shift
	local a=("$@") i k=$#
	for ((i = 0; i < k; i++)); do
		printf '%s ' "${a[$(((i + n) % k))]}"
	done
}

# What else runs: recorded at the start and the end of the run (noise).
snapshot_machine() { # LABEL
	{
		echo "== $1 $(date -Is)"
		echo "loadavg: $(cat /proc/loadavg)"
		echo "kernel.bpf_stats_enabled: $(cat /proc/sys/kernel/bpf_stats_enabled)"
		echo "other barrierd daemons: $(pgrep -x barrierd | grep -vx "${daemon_pid:-0}" | paste -sd' ' - || true)"
		echo "top processes by CPU:"
		ps -eo pid,pcpu,etimes,comm --sort=-pcpu | head -8
	} >>"$out/noise.txt"
}

# ---- the machine ----------------------------------------------------------------------------

{
	echo "date: $(date -Is)"
	echo "kernel: $(uname -r) ($(uname -v))"
	echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $ncpu online CPUs ($all_cpus)"
	echo "hypervisor: $(lscpu 2>/dev/null | awk -F': *' '/Hypervisor vendor/ {print $2}')"
	if [ -r /proc/config.gz ]; then
		echo "config: $(zcat /proc/config.gz | grep -E '^CONFIG_(HZ|NO_HZ_IDLE|NO_HZ_FULL|PREEMPT_DYNAMIC|PREEMPT_RCU|RCU_LAZY)=' | paste -sd' ' -)"
	fi
	echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	# Without skew_tick=1 every CPU's tick fires at the same moment (the projection's "aligned").
	echo "skew_tick: $(grep -o 'skew_tick=[0-9]*' /proc/cmdline || echo 'not set (default 0: ticks aligned)')"
	echo "build: $build"
	echo "commit: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$src" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
	echo "quick: $quick"
	echo "repetitions (sections 9-13): $reps"
} >"$out/machine.txt"
echo "section,config,rep,unix_s,load1,load5,load15,busy_pct_1s" >"$out/loadavg.csv"
: >"$out/noise.txt"
snapshot_machine start
log "results in $out"
cat "$out/machine.txt" | tee -a "$out/run.log"

start_daemon
log "daemon $daemon_pid on $state"

# ---- 1: latency, idle and loaded interleaved ---------------------------------------------------

if want 1; then
	blocks=$(scale 5 2)
	rounds=$(scale 300 60)
	orounds=$(scale 100 25)
	nsamples=$(scale 200 50)
	echo "cond,block,method,index,latency_ns,cal,res,iwi,tlb" >"$out/latency.csv"
	for b in $(seq "$blocks"); do
		# Alternate which condition comes first, so neither always follows the other.
		if [ $((b % 2)) -eq 1 ]; then order="idle loaded"; else order="loaded idle"; fi
		for cond in $order; do
			log "latency block $b/$blocks: $cond"
			s0=$(machine_stat)
			load_opt=()
			[ "$cond" = loaded ] && load_opt=(--load)
			"$build/src/barrierctl" bench --state "$state" -n "$rounds" --gap 10 "${load_opt[@]}" \
				--csv "$tmp/bench.csv" >>"$out/barrierctl.txt"
			awk -v c="$cond" -v b="$b" -F, 'NR > 1 {print c "," b "," $0}' "$tmp/bench.csv" \
				>>"$out/latency.csv"
			[ "$cond" = loaded ] && start_spinners
			"$build/bench/bench_orig" "$state" "$orounds" "$cond" "$out/orig.csv"
			"$build/bench/bench_notify" "$state" "$nsamples" "$cond" "$out/notify.csv" \
				>>"$out/run.log"
			[ "$cond" = loaded ] && stop_spinners
			echo "latency,$cond,$b,$(machine_busy_pct "$s0" "$(machine_stat)" | tr ' ' ,)" \
				>>"$out/machine_load.csv"
		done
	done
fi

# ---- 2: IPIs ------------------------------------------------------------------------------------

# Run a barrier loop with ipi:ipi_send_cpu and ipi:ipi_send_cpumask traced in a tracefs instance
# of our own; one ipi_trace.csv row per sender, target and call site.
ipi_trace() { # LABEL SECONDS command...
	local label=$1 secs=$2 inst=/sys/kernel/tracing/instances/barrierd-bench-$$ n
	shift 2
	if [ ! -d /sys/kernel/tracing/instances ] || ! mkdir "$inst" 2>/dev/null; then
		log "note: no tracefs instance; IPI senders not traced"
		"$@" >/dev/null
		return 0
	fi
	echo 1 >"$inst/events/ipi/ipi_send_cpu/enable"
	echo 1 >"$inst/events/ipi/ipi_send_cpumask/enable" 2>/dev/null || true
	log "IPI trace: $label"
	n=$("$@" | awk '{for (i = 1; i < NF; i++) if ($i == "barriers") print $(i + 1)}')
	echo 0 >"$inst/tracing_on"
	awk -v label="$label" -v n="$n" '
		BEGIN { gsub(",", ";", label) }
		/ipi_send_cpu(mask)?:/ {
			if (!match($0, /\[[0-9]+\]/)) next
			cpu = substr($0, RSTART + 1, RLENGTH - 2) + 0
			comm = substr($0, 1, RSTART - 1); sub(/^ +/, "", comm); sub(/ +$/, "", comm); sub(/-[0-9]+$/, "", comm)
			tgt = ""; cs = ""; cb = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^cpu=/) tgt = substr($i, 5)
				if ($i ~ /^cpumask=/) tgt = "mask " substr($i, 9)
				if ($i ~ /^callsite=/) cs = substr($i, 10)
				if ($i ~ /^callback=/) cb = substr($i, 10)
			}
			gsub(",", ";", comm); gsub(",", ";", tgt)
			c[comm "," cpu "," tgt "," cs "," cb]++
		}
		END { for (k in c) print label "," n "," k "," c[k] }' "$inst/trace" | sort -t, -k8,8nr >>"$out/ipi_trace.csv"
	rmdir "$inst"
}

if want 2; then
	first=$(echo "$cpus" | sed -n 1p)
	second=$(echo "$cpus" | sed -n 2p)
	log "IPIs: waiter and daemon pinned to CPU $first, counting CPU $second"
	pin_daemon "$first"
	wait_disarmed
	s0=$(machine_stat)
	"$build/bench/bench_ipi" "$state" "$out/ipi.csv" --label pinned --caller "$first" \
		--target "$second" --calls 200 --rounds "$(scale 4 2)"
	log "IPIs: waiter on CPU $first, daemon alone on CPU $second (the doorbell's IPI)"
	pin_daemon "$second"
	"$build/bench/bench_ipi" "$state" "$out/ipi.csv" --label split --caller "$first" \
		--target "$second" --calls 200 --rounds "$(scale 4 2)" --methods barrierd --conds idle
	pin_daemon "$all_cpus"
	echo "ipi,all,0,$(machine_busy_pct "$s0" "$(machine_stat)" | tr ' ' ,)" >>"$out/machine_load.csv"

	# Who sends which IPI, from the ipi tracepoints (a private tracefs instance): a waiter doing
	# 100 barriers/s in four placements.
	echo "config,barriers,sender_comm,sender_cpu,target,callsite,callback,count" >"$out/ipi_trace.csv"
	secs=$(scale 3 2)
	pin_daemon "$second"
	wait_disarmed
	ipi_trace "split: waiter CPU $first, daemon CPU $second" "$secs" taskset -c "$first" \
		"$build/bench/bench_util" loop "$state" "$secs" 100
	pin_daemon "$first"
	taskset -c "$second" nice -n 19 sh -c 'while :; do :; done' &
	spin_pids+=($!)
	wait_disarmed
	ipi_trace "pinned: waiter and daemon CPU $first, spinner on CPU $second" "$secs" \
		taskset -c "$first" "$build/bench/bench_util" loop "$state" "$secs" 100
	stop_spinners
	pin_daemon "$all_cpus"
	wait_disarmed
	ipi_trace "unpinned, idle" "$secs" "$build/bench/bench_util" loop "$state" "$secs" 100
	start_spinners
	wait_disarmed
	ipi_trace "unpinned, loaded" "$secs" "$build/bench/bench_util" loop "$state" "$secs" 100
	stop_spinners
fi

# ---- 3: waiter scaling ---------------------------------------------------------------------------

if want 3; then
	# No slow idle credit: with it the daemon may pass the fan-out's future stamp before the ring.
	stop_daemon
	start_daemon --idle-credit-interval 60000
	for n in 1 10 100 1000; do
		log "waiter scaling: $n threads"
		s0=$(machine_stat)
		"$build/bench/bench_waiters" "$state" "$n" "$(scale 20 5)" "$out/waiters.csv"
		echo "waiters,$n,0,$(machine_busy_pct "$s0" "$(machine_stat)" | tr ' ' ,)" >>"$out/machine_load.csv"
	done
	stop_daemon
	start_daemon
fi

# ---- 4: daemon CPU -------------------------------------------------------------------------------

# Ring-buffer signals and evidence events so far, summed over the daemon's slots: "signals events".
slot_counts() {
	"$build/bench/bench_bpf" slots "$daemon_pid" | awk '{g += $8; e += $6} END {printf "%.0f %.0f\n", g, e}'
}

# One window: the daemon's CPU time, its passes, credit passes and rings, the machine's load.
cpu_window() { # NAME SECONDS RATE_CAP [command...]
	local name=$1 secs=$2 cap=$3
	shift 3
	local x t0 t1 c0 c1 p0 p1 cp0 cp1 r0 r1 s0 s1 g0 g1 e0 e1 extra=""
	x=$(ext_off)
	s0=$(machine_stat)
	read -r g0 e0 < <(slot_counts)
	c0=$(sched_ns "$daemon_pid")
	p0=$(rd64 "$state" $((x + 32)))
	cp0=$(rd64 "$state" $((x + 40)))
	r0=$(rd64 "$state" $((x + 48)))
	t0=$(date +%s%N)
	if [ $# -gt 0 ]; then
		extra=$("$@" 2>>"$out/client_errors.txt" | tail -1 | tr ' ' ';')
	else
		sleep "$secs"
	fi
	t1=$(date +%s%N)
	c1=$(sched_ns "$daemon_pid")
	p1=$(rd64 "$state" $((x + 32)))
	cp1=$(rd64 "$state" $((x + 40)))
	r1=$(rd64 "$state" $((x + 48)))
	s1=$(machine_stat)
	read -r g1 e1 < <(slot_counts)
	echo "$name,$cap,$t0,$t1,$c0,$c1,$((p1 - p0)),$((cp1 - cp0)),$((r1 - r0)),$(machine_busy_pct "$s0" "$s1" | tr ' ' ,),$((g1 - g0)),$((e1 - e0)),$extra" \
		>>"${cpu_csv:-$out/daemon_cpu.csv}"
	log "daemon CPU, $name: $(awk -v a="$c0" -v b="$c1" -v t="$t0" -v u="$t1" 'BEGIN {printf "%.4f %%", 100 * (b - a) / (u - t)}')"
}

# The flood as user nobody, and beside it a root waiter doing 100 barriers/s (its latency under
# the flood); one line: the flood's, then the waiter's.
flood_with_waiter() { # SECONDS
	"$build/bench/bench_util" loop "$state" "$1" 100 >"$tmp/flood_loop.out" &
	local lp=$!
	setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/bench_flood" "$state" "$1" | tr '\n' ' '
	wait "$lp"
	sed 's/^loop/waiter/' "$tmp/flood_loop.out"
}

# The daemon's CPU under condition COND, once it is disarmed: no waiter for NOWAIT_SECONDS, then
# a waiter doing 100 barriers/s and one calling back to back, SECONDS each.
cond_windows() { # COND NOWAIT_SECONDS SECONDS
	wait_disarmed
	sleep 1
	cpu_window "$1-no-waiters" "$2" 1000
	cpu_window "$1-waiter-100/s" "$3" 1000 "$build/bench/bench_util" loop "$state" "$3" 100
	cpu_window "$1-waiter-loop" "$3" 1000 "$build/bench/bench_util" loop "$state" "$3"
}

if want 4; then
	echo "window,max_credit_rate,t0_ns,t1_ns,cpu0_ns,cpu1_ns,passes,credit_passes,rings,machine_busy_pct,machine_steal_pct,signals,events,client" \
		>"$out/daemon_cpu.csv"
	cp "$build/bench/bench_flood" "$tmp/bench_flood"
	chmod 0755 "$tmp/bench_flood"
	cond_windows idle "$(scale 60 10)" "$(scale 15 5)"
	start_spinners
	cond_windows loaded "$(scale 15 5)" "$(scale 15 5)"
	stop_spinners
	# Many events instead of busy CPUs: a thread per CPU sleeping 200 us in a loop.
	"$build/bench/bench_util" churn 100000 &
	bg_pids+=($!)
	wait_disarmed
	sleep 1
	cpu_window switching-no-waiters "$(scale 10 5)" 1000
	cpu_window switching-waiter-100/s "$(scale 10 5)" 1000 "$build/bench/bench_util" loop "$state" "$(scale 10 5)" 100
	kill "${bg_pids[-1]}"
	wait "${bg_pids[-1]}" || true
	unset 'bg_pids[-1]'
	cpu_window flood-default-rate "$(scale 15 5)" 1000 flood_with_waiter "$(scale 15 5)"
	stop_daemon
	# The former default, for comparison: what the cap is worth.
	start_daemon --max-credit-rate 10000
	cpu_window flood-rate-10000 "$(scale 10 5)" 10000 flood_with_waiter "$(scale 10 5)"
	stop_daemon
	start_daemon
fi

# ---- 5: getpid ----------------------------------------------------------------------------------

if want 5; then
	stats_saved=$(cat /proc/sys/kernel/bpf_stats_enabled)
	sysctl -q -w kernel.bpf_stats_enabled=0 >/dev/null # its accounting would be in the figure
	last=$(echo "$cpus" | tail -1)
	echo "rotation,condition,rep,ns_per_call" >"$out/getpid.csv"
	stop_daemon
	for r in $(seq "$(scale 3 1)"); do
		for cond in none empty-program daemon-default daemon-sys_enter; do
			log "getpid rotation $r: $cond"
			case $cond in
			empty-program)
				"$build/bench/bench_bpf" attach empty raw_syscalls/sys_enter 0 >"$tmp/empty.out" &
				bg_pids+=($!)
				for _ in $(seq 100); do grep -q attached "$tmp/empty.out" && break; sleep 0.05; done
				;;
			daemon-default) start_daemon ;;
			daemon-sys_enter)
				start_daemon --tracepoint irq/softirq_entry --tracepoint irq_vectors/local_timer_entry \
					--tracepoint sched/sched_switch --tracepoint raw_syscalls/sys_enter
				;;
			esac
			sleep 0.5
			"$build/bench/bench_getpid" --cpu "$last" --reps 5 --calls 1000000 |
				awk -v r="$r" -v c="$cond" '$1 == "rep" {print r "," c "," $2 "," $3}' >>"$out/getpid.csv"
			case $cond in
			empty-program)
				kill "${bg_pids[-1]}"
				wait "${bg_pids[-1]}" || true
				unset 'bg_pids[-1]'
				;;
			daemon-*) stop_daemon ;;
			esac
		done
	done
	sysctl -q -w kernel.bpf_stats_enabled="$stats_saved" >/dev/null
	stats_saved=""
	start_daemon
fi

# ---- 6: BPF cost per hit -------------------------------------------------------------------------

if want 6; then
	stats_saved=$(cat /proc/sys/kernel/bpf_stats_enabled)
	sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null
	win=$(scale 3 1)
	rots=$(scale 3 1)
	stop_daemon
	# A steady stream of events on every CPU: a thread per CPU sleeping 200 us in a loop.
	"$build/bench/bench_util" churn 100000 &
	bg_pids+=($!)
	churn_pid=$!
	echo "rotation,tracepoint,program,run_cnt,run_time_ns,seconds" >"$out/bpf_cost.csv"
	for r in $(seq "$rots"); do
		for tp in irq/softirq_entry irq_vectors/local_timer_entry sched/sched_switch raw_syscalls/sys_enter; do
			# Rotate the order, so that no program always follows another.
			case $((r % 3)) in
			1) order="daemon baseline xchg" ;;
			2) order="baseline xchg daemon" ;;
			0) order="xchg daemon baseline" ;;
			esac
			for who in $order; do
				log "BPF cost rotation $r: $tp, $who alone"
				if [ "$who" != daemon ]; then
					what=stamp
					[ "$who" = xchg ] && what=xchg
					"$build/bench/bench_bpf" attach "$what" "$tp" "$win" |
						awk -v r="$r" -v tp="$tp" '{print r "," tp "," $1 "," $3 "," $4 "," $5}' \
							>>"$out/bpf_cost.csv"
					continue
				fi
				start_daemon --tracepoint "$tp"
				"$build/bench/bench_bpf" stats "$daemon_pid" >"$tmp/s0"
				t0=$(date +%s%N)
				sleep "$win"
				"$build/bench/bench_bpf" stats "$daemon_pid" >"$tmp/s1"
				t1=$(date +%s%N)
				stop_daemon
				# barrierd_switch tracks idle on every configuration; it stamps only on
				# sched_switch's own window.
				awk -v r="$r" -v tp="$tp" -v secs="$(((t1 - t0) / 1000000))" '
					NR == FNR {c[$2] = $3; t[$2] = $4; next}
					($1 == "barrierd_event" || $1 == "barrierd_switch") && ($2 in c) {
						where = tp
						if ($1 == "barrierd_switch" && tp != "sched/sched_switch")
							where = "sched/sched_switch (idle tracking only)"
						if ($1 == "barrierd_event" && tp == "sched/sched_switch")
							next
						printf "%s,%s,%s,%.0f,%.0f,%.3f\n", r, where, $1, $3 - c[$2], $4 - t[$2], secs / 1000
					}' "$tmp/s0" "$tmp/s1" >>"$out/bpf_cost.csv"
			done
		done
	done
	kill "$churn_pid" 2>/dev/null || true
	wait "$churn_pid" 2>/dev/null || true
	unset 'bg_pids[-1]'
	sysctl -q -w kernel.bpf_stats_enabled="$stats_saved" >/dev/null
	stats_saved=""
	start_daemon
fi

# ---- 7: CPU scaling model --------------------------------------------------------------------------

if want 7; then
	log "CPU scaling model: publisher_pass() on simulated slot arrays, ncpu 1..4096"
	rm -f "$out/cpu_scaling.csv"
	"$build/bench/bench_model" "$out/cpu_scaling.csv" 4096
fi

# ---- 8: wait overshoot -----------------------------------------------------------------------------

if want 8; then
	# The fake daemon of the tests (its own file): waits that cannot pass, quiet and under 1000
	# runnable threads.  The library never sleeps past a deadline; this is the scheduler's part.
	log "wait overshoot past the timeout: live and stale daemon, quiet and 1000 runnable threads"
	"$build/bench/bench_overshoot" "$(scale 200 40)" "$out/overshoot.csv" >"$out/overshoot.md"
fi

# ---- 9: a client of the original layout -------------------------------------------------------------

if want 9; then
	first=$(echo "$cpus" | sed -n 1p)
	second=$(echo "$cpus" | sed -n 2p)
	secs=$(scale 40 10)
	rm -f "$out/legacy.csv"
	for r in $(seq "$reps"); do
		for cfg in $(rotate $((r - 1)) unpinned pinned-busy1 pinned-idle1); do
			case $cfg in
			unpinned) pin_daemon "$all_cpus" ;;
			*) pin_daemon "$first" ;;
			esac
			# The client never rings: start each configuration from a disarmed daemon.
			wait_disarmed
			note_load legacy "$cfg" "$r"
			[ "$cfg" = pinned-idle1 ] || spin_on "$second" 10
			log "legacy client, $cfg, repetition $r/$reps: $secs s (load $(cut -d' ' -f1 /proc/loadavg))"
			s0=$(machine_stat)
			pin=()
			[ "$cfg" = unpinned ] || pin=(taskset -c "$first")
			"${pin[@]}" "$build/bench/bench_legacy" "$state" "$secs" "$cfg" "$r" \
				"$out/legacy.csv" | tee -a "$out/run.log"
			echo "legacy,$cfg,$r,$(machine_busy_pct "$s0" "$(machine_stat)" | tr ' ' ,)" >>"$out/machine_load.csv"
			stop_spinners
		done
	done
	pin_daemon "$all_cpus"
fi

# ---- 10: the loaded headline, pinned, beside the unpinned figure -----------------------------------

if want 10; then
	first=$(echo "$cpus" | sed -n 1p)
	n=$(scale 1000 150)
	echo "config,rep,method,index,latency_ns,cal,res,iwi,tlb" >"$out/pinned.csv"
	for r in $(seq "$reps"); do
		for cfg in $(rotate $((r - 1)) pinned unpinned); do
			note_load pinned "$cfg" "$r"
			log "loaded latency, $cfg, repetition $r/$reps: $n rounds (load $(cut -d' ' -f1 /proc/loadavg))"
			s0=$(machine_stat)
			if [ "$cfg" = pinned ]; then
				# What every CPU but the waiter's and the daemon's sees on a larger machine: a
				# busy CPU whose evidence is its own next event, not the daemon's wake-ups.
				pin_daemon "$first"
				for c in $cpus; do
					[ "$c" = "$first" ] || spin_on "$c" 19
				done
				taskset -c "$first" "$build/src/barrierctl" bench --state "$state" -n "$n" \
					-m barrierd,vtime,membarrier-global --gap 10 --csv "$tmp/bench.csv" \
					>>"$out/barrierctl.txt"
				stop_spinners
				pin_daemon "$all_cpus"
			else
				"$build/src/barrierctl" bench --state "$state" -n "$n" --load \
					-m barrierd,vtime,membarrier-global --gap 10 --csv "$tmp/bench.csv" \
					>>"$out/barrierctl.txt"
			fi
			awk -v c="$cfg" -v r="$r" -F, 'NR > 1 {print c "," r "," $0}' "$tmp/bench.csv" >>"$out/pinned.csv"
			echo "pinned,$cfg,$r,$(machine_busy_pct "$s0" "$(machine_stat)" | tr ' ' ,)" >>"$out/machine_load.csv"
		done
	done
fi

# ---- 11: what a waiter doing 100 barriers/s costs the daemon ---------------------------------------

if want 11; then
	first=$(echo "$cpus" | sed -n 1p)
	secs=$(scale 15 5)
	idle_secs=$(scale 30 10)
	cpu_csv=$out/cost.csv
	echo "window,max_credit_rate,t0_ns,t1_ns,cpu0_ns,cpu1_ns,passes,credit_passes,rings,machine_busy_pct,machine_steal_pct,signals,events,client,rep,busy_cpus" \
		>"$cpu_csv"
	for r in $(seq "$reps"); do
		for cfg in $(rotate $((r - 1)) idle-no-waiter idle-unpinned idle-pinned loaded-unpinned loaded-pinned); do
			busy=0
			case $cfg in
			*-pinned)
				pin_daemon "$first"
				pin=(taskset -c "$first")
				;;
			*)
				pin_daemon "$all_cpus"
				pin=()
				;;
			esac
			note_load cost "$cfg" "$r"
			case $cfg in
			loaded-unpinned)
				start_spinners
				busy=$ncpu
				;;
			loaded-pinned)
				for c in $cpus; do
					[ "$c" = "$first" ] || spin_on "$c" 19
				done
				busy=$((ncpu - 1))
				;;
			esac
			wait_disarmed
			sleep 1
			log "daemon cost, $cfg, repetition $r/$reps (load $(cut -d' ' -f1 /proc/loadavg))"
			if [ "$cfg" = idle-no-waiter ]; then
				cpu_window "$cfg" "$idle_secs" 1000
			else
				cpu_window "$cfg" "$secs" 1000 "${pin[@]}" "$build/bench/bench_util" loop "$state" "$secs" 100
			fi
			# The window's row gets its repetition and the busy CPUs (the ones that may lag).
			sed -i '$ s/$/,'"$r,$busy"'/' "$cpu_csv"
			stop_spinners
		done
	done
	pin_daemon "$all_cpus"
	unset cpu_csv
fi

# ---- 12: nudges -----------------------------------------------------------------------------------

if want 12; then
	first=$(echo "$cpus" | sed -n 1p)
	n=$(scale 1000 200)
	flood_secs=$(scale 10 5)
	echo "nudge_after_ms,rep,load,method,index,latency_ns,cal,res,iwi,tlb" >"$out/nudge.csv"
	echo "nudge_after_ms,rep,load,barriers,nudges,daemon_cpu_ns,seconds" >"$out/nudge_counts.csv"
	cp "$build/bench/bench_flood" "$tmp/bench_flood"
	chmod 0755 "$tmp/bench_flood"
	stop_daemon
	for r in $(seq "$reps"); do
		for d in $(rotate $((r - 1)) 0 0.5 default); do
			if [ "$d" = default ]; then start_daemon; else start_daemon --nudge-after "$d"; fi
			pin_daemon "$first"
			for load in loaded idle; do
				note_load nudge "$d/$load" "$r"
				if [ "$load" = loaded ]; then
					# As section 10: every CPU but the waiter's and the daemon's busy.
					for c in $cpus; do
						[ "$c" = "$first" ] || spin_on "$c" 19
					done
					methods=barrierd,membarrier-global,global-expedited,private-expedited
				else
					methods=barrierd
				fi
				log "nudges: --nudge-after $d, $load, repetition $r/$reps: $n rounds"
				n0=$(nudges_now)
				c0=$(sched_ns "$daemon_pid")
				t0=$(date +%s%N)
				taskset -c "$first" "$build/src/barrierctl" bench --state "$state" -n "$n" \
					-m "$methods" --gap 10 --csv "$tmp/bench.csv" >>"$out/barrierctl.txt"
				t1=$(date +%s%N)
				c1=$(sched_ns "$daemon_pid")
				n1=$(nudges_now)
				stop_spinners
				echo "$d,$r,$load,$n,$((n1 - n0)),$((c1 - c0)),$(((t1 - t0) / 1000000))" >>"$out/nudge_counts.csv"
				awk -F, -v d="$d" -v r="$r" -v l="$load" 'NR > 1 {print d "," r "," l "," $0}' "$tmp/bench.csv" >>"$out/nudge.csv"
			done
			stop_daemon
		done
	done
	# The flood: the most nudges an unprivileged user can ask for, every other CPU busy, at
	# --nudge-after 0.1 (at the default a ticking CPU is never nudged: its tick comes first).
	start_daemon --nudge-after 0.1
	pin_daemon "$first"
	for c in $cpus; do
		[ "$c" = "$first" ] || spin_on "$c" 19
	done
	log "nudges: a ring flood with a sleeper, by user nobody, $flood_secs s"
	n0=$(nudges_now)
	setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/bench_flood" "$state" "$flood_secs" sleep \
		>"$out/nudge_flood.txt"
	n1=$(nudges_now)
	stop_spinners
	echo "nudges $((n1 - n0)) busy_cpus $((ncpu - 1)) seconds $flood_secs" >>"$out/nudge_flood.txt"
	stop_daemon
	start_daemon
fi

# ---- 13: direct evidence ---------------------------------------------------------------------------

# barrierctl bench's direct credit table (its lines after "direct credits per CPU") as
# direct_credits.csv rows, and its "direct calls:" line as a direct_calls.csv row.
direct_credits() { # CONFIG REP BUSY_CPU(or -) FILE
	awk -v c="$1" -v r="$2" -v busy="$3" -v cr="$out/direct_credits.csv" -v ca="$out/direct_calls.csv" '
		/^direct credits per CPU/ { on = 1; next }
		on && $1 ~ /^[0-9]+$/ && NF == 6 { print c "," r "," $1 "," $2 "," $3 "," $4 "," $5 "," $6 >>cr
			alone[$1] = $6; next }
		/^direct calls:/ { on = 0; gsub(/[;:]/, " ")
			for (i = 1; i <= NF; i++) {
				if ($i == "calls") n = $(i + 1)
				if ($i == "own") o = $(i + 1)
				if ($i == "one" && $(i + 1) == "CPU") one = $(i + 2)
				if ($i == "more") m = $(i + 1)
			}
			print c "," r "," n "," o "," one "," m "," busy "," (busy == "-" ? "" : alone[busy] + 0) >>ca }' "$4"
}

# System calls between bench_direct's markers, by name: direct_syscalls.csv rows.
direct_syscalls() { # REP METHOD CALLS STRACE_LOG
	awk -v r="$1" -v m="$2" -v n="$3" '
		/PR_SET_NAME, "bd-calls"/ { on = 1; next }
		/PR_SET_NAME, "bd-done"/ { on = 0 }
		on && !/resumed>/ && match($0, /^[0-9]+ +[a-z_0-9]+\(/) {
			s = substr($0, RSTART, RLENGTH - 1); sub(/^[0-9]+ +/, "", s); c[s]++ }
		END { t = 0; for (k in c) { print r "," m "," n "," k "," c[k]; t++ }
			if (!t) print r "," m "," n ",(none),0" }' "$4" >>"$out/direct_syscalls.csv"
}

# One barrierctl bench run from the first CPU, its rows into direct.csv, its output kept in
# $tmp/bench13.txt.  --cpu, not taskset: PRIVATE_EXPEDITED's siblings need the other CPUs.
bench13() { # CONFIG REP N GAP_MS METHODS
	"$build/src/barrierctl" bench --state "$state" --cpu "$first" -n "$3" -m "$5" --gap "$4" \
		--csv "$tmp/bench.csv" >"$tmp/bench13.txt"
	cat "$tmp/bench13.txt" >>"$out/barrierctl.txt"
	awk -v c="$1" -v r="$2" -F, 'NR > 1 {print c "," r "," $0}' "$tmp/bench.csv" >>"$out/direct.csv"
}

if want 13; then
	first=$(echo "$cpus" | sed -n 1p)
	second=$(echo "$cpus" | sed -n 2p)
	n_idle=$(scale 800 150)
	n_loaded=$(scale 400 80)
	n_b2b=$(scale 2000 500)
	n_sys=$(scale 200 50)
	echo "config,rep,method,index,latency_ns,cal,res,iwi,tlb" >"$out/direct.csv"
	echo "config,rep,cpu,idle,own,stamp,file,alone" >"$out/direct_credits.csv"
	echo "config,rep,calls,idle_own_only,one_left,more_left,busy_cpu,busy_alone" >"$out/direct_calls.csv"
	echo "rep,method,calls,syscall,count" >"$out/direct_syscalls.csv"
	echo "rep,handle,kind,ns_per_call_p50,ns_per_call_min,passed_share,batches" >"$out/direct_passed.csv"
	have_strace=1
	command -v strace >/dev/null || {
		have_strace=0
		log "note: no strace; system calls per barrier not counted"
	}
	# Only the nudge threads stay off the first CPU: the others see nothing of ours.
	pin_daemon "$first"
	for r in $(seq "$reps"); do
		wait_disarmed
		note_load direct idle "$r"
		log "direct evidence, idle, repetition $r/$reps: $n_idle rounds (load $(cut -d' ' -f1 /proc/loadavg))"
		s0=$(machine_stat)
		bench13 idle "$r" "$n_idle" 10 direct,file,private-expedited,global-expedited,membarrier-global
		direct_credits idle "$r" - "$tmp/bench13.txt"
		echo "direct,idle,$r,$(machine_busy_pct "$s0" "$(machine_stat)" | tr ' ' ,)" >>"$out/machine_load.csv"

		note_load direct back-to-back "$r"
		log "direct evidence, idle, back to back: $n_b2b rounds"
		bench13 back-to-back "$r" "$n_b2b" 0 direct,file
		direct_credits back-to-back "$r" - "$tmp/bench13.txt"

		if [ "$have_strace" = 1 ]; then
			note_load direct syscalls "$r"
			for m in direct file private-expedited; do
				log "direct evidence: system calls of $n_sys $m calls (strace -f)"
				# strace refused (ptrace restricted) or a failed call: say so, run on.
				if taskset -c "$first" strace -f -qq -o "$tmp/strace.$m" \
					"$build/bench/bench_direct" calls "$state" "$m" "$n_sys" 10 >>"$out/run.log"; then
					direct_syscalls "$r" "$m" "$n_sys" "$tmp/strace.$m"
				else
					log "note: strace of bench_direct calls $m failed; not counted"
				fi
			done
		fi

		note_load direct passed "$r"
		log "direct evidence: barrierd_passed() cost"
		taskset -c "$first" "$build/bench/bench_direct" passed "$state" "$(scale 200 50)" |
			sed "s/^passed,/$r,/" >>"$out/direct_passed.csv"

		wait_disarmed
		note_load direct half-loaded "$r"
		spin_on "$second" 0
		log "direct evidence, half-loaded (a nice-0 spinner on CPU $second), repetition $r/$reps: $n_loaded rounds"
		s0=$(machine_stat)
		bench13 half-loaded "$r" "$n_loaded" 10 direct,file,membarrier-global
		stop_spinners
		direct_credits half-loaded "$r" "$second" "$tmp/bench13.txt"
		echo "direct,half-loaded,$r,$(machine_busy_pct "$s0" "$(machine_stat)" | tr ' ' ,)" >>"$out/machine_load.csv"
	done
	pin_daemon "$all_cpus"
fi

# ---- 14: primitives ------------------------------------------------------------------------------

# callgrind's self instructions of bench_ec's insn_* loops: prim_ec_insn.csv rows.
insn_counts() { # N CALLGRIND_OUT
	# Self cost per file:function (an inlined header's lines count under their own file, so sum
	# over files); "=>" lines are calls' inclusive costs.
	callgrind_annotate --inclusive=no --auto=no --threshold=100 "$2" 2>/dev/null | awk -v n="$1" '
		!/=>/ && match($0, /:insn_[a-z_]+/) {
			f = substr($0, RSTART + 1, RLENGTH - 1); x = $1; gsub(/,/, "", x)
			if (x ~ /^[0-9]+$/) ir[f] += x }
		END { for (f in ir) print f "," n "," ir[f] }' | sort >>"$out/prim_ec_insn.csv"
}

if want 14; then
	first=$(echo "$cpus" | sed -n 1p)
	second=$(echo "$cpus" | sed -n 2p)
	if [ ! -x "$build/bench/bench_ec" ] || [ ! -x "$build/bench/bench_reclaim" ]; then
		log "note: bench_ec and bench_reclaim were not built (libck-dev, liburcu-dev: scripts/deps.sh --test); section 14 skipped"
	else
		pin_daemon "$all_cpus"
		rm -f "$out"/prim_*.csv
		wait_disarmed
		note_load prim ec-inc 1
		log "primitives: event count increments, no waiter and an active one"
		"$build/bench/bench_ec" inc "$state" "$(scale 2000000 1000000)" "$(scale 5 3)" "$out/prim_ec_inc.csv"
		if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
			log "primitives: instructions per increment (callgrind)"
			echo "function,n,ir" >"$out/prim_ec_insn.csv"
			if valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.out" \
				"$build/bench/bench_ec" insn 100000 >/dev/null 2>"$tmp/callgrind.log"; then
				insn_counts 100000 "$tmp/callgrind.out"
			else
				log "note: callgrind failed ($(tail -1 "$tmp/callgrind.log")); no instruction counts"
			fi
		else
			log "note: no valgrind; no instruction counts"
		fi
		note_load prim ec-wake 1
		log "primitives: event count wake latency"
		"$build/bench/bench_ec" wake "$state" "$(scale 200 60)" "$out/prim_ec_wake.csv"
		note_load prim ec-block 1
		log "primitives: time to a waiter's indefinite block, its CPU over a long wait"
		"$build/bench/bench_ec" block "$state" "$(scale 3 2)" "$(scale 2000 1500)" "$out/prim_ec_block.csv"
		impls="bd-epoch bd-epoch-file bd-hp ck-epoch urcu-memb urcu-mb urcu-qsbr"
		note_load prim read 1
		log "primitives: read-side cost, 1 and 2 threads"
		"$build/bench/bench_reclaim" read "$state" all "$(scale 10000000 4000000)" "$(scale 5 3)" "$out/prim_read.csv"
		# pinned: loaded, and the daemon's threads (but its nudge threads) on the first CPU with
		# the writer, so that no doorbell wake-up lands on the busy CPU.
		k=0
		for cfg in idle-1 idle-2 loaded-1 loaded-2 pinned-2; do
			cond=${cfg%-*} readers=${cfg#*-}
			wait_disarmed
			note_load prim "gp-$cfg" 1
			[ "$cond" = idle ] || spin_on "$second" 0
			[ "$cond" = pinned ] && pin_daemon "$first"
			log "primitives: grace periods, $cond, $readers sleepy readers"
			"$build/bench/bench_reclaim" gp "$state" "$(rotate "$k" $impls | tr ' ' , | sed 's/,$//')" \
				"$(scale 200 80)" "$readers" "$cond" "$out/prim_gp.csv"
			stop_spinners
			pin_daemon "$all_cpus"
			k=$((k + 1))
		done
		note_load prim mem 1
		log "primitives: objects held under 10 000 retirements/s, 2 sleepy readers"
		"$build/bench/bench_reclaim" mem "$state" all 10000 "$(scale 2 1)" 2 "$out/prim_mem.csv"
	fi
fi

stop_daemon
snapshot_machine end
log "measurements done; tables and plots"
"$src/bench/report.sh" "$out"
log "done: $out/summary.md"
