#!/usr/bin/env bash
# Tables, summary and plots from the CSVs of one bench/run.sh run:
#
#   bench/report.sh RESULTS_DIR
#
# Writes, in RESULTS_DIR: latency.md, notify.md, ipi.md, waiters.md, daemon_cpu.md, getpid.md,
# bpf_cost.md, cpu_scaling.md, ..., direct.md, prim.md (one table per measurement, with the summary CSVs beside them),
# summary.md (the targets of docs/PERFORMANCE.md section 2 against the figures) and plots/*.png
# (gnuplot; skipped with a note when gnuplot is missing).  Needs only the CSVs: it can be re-run on old results.
set -euo pipefail

[ $# -eq 1 ] && [ -d "$1" ] || {
	echo "usage: bench/report.sh RESULTS_DIR" >&2
	exit 64
}
cd "$1"
mkdir -p plots/data

# stdin: "KEY VALUE" lines.  stdout: "KEY n min p50 p90 p99 max mean" (nearest-rank percentiles).
summarize() {
	sort -t' ' -k1,1 -k2,2n | awk '
	function rank(p,  k) { k = int((n * p + 99) / 100); return k < 1 ? 1 : k }
	function out() {
		if (!n) return
		printf "%s %d %s %s %s %s %s %.0f\n", key, n, v[1], v[rank(50)], v[rank(90)],
			v[rank(99)], v[n], s / n
		n = 0; s = 0
	}
	$1 != key { out(); key = $1 }
	{ v[++n] = $2; s += $2 }
	END { out() }'
}

# stdin: "KEY VALUE" lines; writes plots/data/cdf_KEY.dat ("value/1000 fraction") per key.
cdf_files() { # PREFIX
	sort -t' ' -k1,1 -k2,2n | awk -v pre="$1" '
	function out(  i, f) {
		if (!n) return
		f = "plots/data/" pre "_" key ".dat"
		gsub("/", "_", f)
		sub("^plots_data_", "plots/data/", f)
		for (i = 1; i <= n; i++) printf "%.3f %.5f\n", v[i] / 1000, i / n > f
		close(f); n = 0
	}
	$1 != key { out(); key = $1 }
	{ v[++n] = $2 }
	END { out() }'
}

us() { # ns -> µs with sensible precision
	awk -v x="$1" 'BEGIN { v = x / 1000; if (v >= 100) printf "%.0f", v; else if (v >= 10) printf "%.1f", v; else printf "%.2f", v }'
}

# Values for summary.md collect here as shell assignments.
: >summary.env
put() {
	printf '%s=%q\n' "$1" "$2" >>summary.env
}

# ---- latency ---------------------------------------------------------------------------------

if [ -s latency.csv ]; then
	awk -F, 'NR > 1 {print $1 "/" $3, $5}' latency.csv | summarize >latency_summary.txt
	[ -s orig.csv ] && awk -F, 'NR > 1 {print $1 "/" $2, $4}' orig.csv | summarize >orig_summary.txt
	{
		echo "# Barrier latency"
		echo
		echo "\`barrierctl bench\` (methods interleaved round-robin in one process), idle and loaded blocks"
		echo "interleaved ($(awk -F, 'NR > 1 {print $2}' latency.csv | sort -u | wc -l) blocks of each). Loaded: a nice-19 spinner"
		echo "pinned on every CPU. Nearest-rank percentiles in µs. *faster* = membarrier(GLOBAL)'s"
		echo "percentile divided by the method's (same condition, same run)."
		echo
		echo "| condition | method | calls | min | p50 | p90 | p99 | max | p50 faster | p99 faster |"
		echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
		for cond in idle loaded; do
			gl=$(awk -v k="$cond/membarrier-global" '$1 == k {print $4, $6}' latency_summary.txt)
			awk -v cond="$cond" -v gl="$gl" '
			function f(x) { x /= 1000; return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
			BEGIN { split(gl, g, " ") }
			{ split($1, km, "/") }
			km[1] == cond {
				r50 = g[1] && $4 ? sprintf("%.1f×", g[1] / $4) : "-"
				r99 = g[2] && $6 ? sprintf("%.1f×", g[2] / $6) : "-"
				printf "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", cond, km[2], $2,
					f($3), f($4), f($5), f($6), f($7), r50, r99
			}' latency_summary.txt
			put "lat_${cond}_mb_p50" "$(echo "$gl" | cut -d' ' -f1)"
			put "lat_${cond}_mb_p99" "$(echo "$gl" | cut -d' ' -f2)"
			put "lat_${cond}_bd_p50" "$(awk -v k="$cond/barrierd" '$1 == k {print $4}' latency_summary.txt)"
			put "lat_${cond}_bd_p99" "$(awk -v k="$cond/barrierd" '$1 == k {print $6}' latency_summary.txt)"
		done
		if [ -s orig_summary.txt ]; then
			echo
			echo "## Client of the original layout (no doorbell) against membarrier(GLOBAL)"
			echo
			echo "\`bench_orig\`: fenced stamp, FUTEX_WAIT on the global word, no ring; one call of each"
			echo "method in turn. It is served by the daemon's slow idle credit (an idle CPU is credited"
			echo "once it has held the global value for \`--idle-credit-interval\`, 10 ms, while armed) once"
			echo "the heartbeat probe (100 ms) has seen it sleep. µs."
			echo
			echo "| condition | method | calls | min | p50 | p90 | p99 | max |"
			echo "|---|---|---:|---:|---:|---:|---:|---:|"
			awk 'function f(x) { x /= 1000; return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
			{ split($1, km, "/"); printf "| %s | %s | %d | %s | %s | %s | %s | %s |\n", km[1], km[2], $2,
				f($3), f($4), f($5), f($6), f($7) }' orig_summary.txt
			for cond in idle loaded; do
				put "orig_${cond}_p50" "$(awk -v k="$cond/original-layout" '$1 == k {print $4}' orig_summary.txt)"
				put "orig_${cond}_p99" "$(awk -v k="$cond/original-layout" '$1 == k {print $6}' orig_summary.txt)"
				put "orig_${cond}_mb_p50" "$(awk -v k="$cond/membarrier-global" '$1 == k {print $4}' orig_summary.txt)"
			done
		fi
	} >latency.md
	awk -F, 'NR > 1 {print $1 "/" $3, $5}' latency.csv | cdf_files lat
	[ -s orig.csv ] && awk -F, 'NR > 1 && $2 == "original-layout" {print $1 "/" $2, $4}' orig.csv | cdf_files lat
fi

# ---- notification latency ------------------------------------------------------------------------

if [ -s notify.csv ]; then
	awk -F, 'NR > 1 {print $1, $3}' notify.csv | summarize >notify_summary.txt
	{
		echo "# Notification latency"
		echo
		echo "From the daemon's update that advanced the global value (\`ext.last_advance_ns\`, stored"
		echo "just before the global word and its FUTEX_WAKE) to the waiter running again (its clock"
		echo "right after FUTEX_WAIT returns). Samples 0.5–2 ms apart; the waiter rings as the library"
		echo "does. µs."
		echo
		echo "| condition | samples | min | p50 | p90 | p99 | max | mean |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|"
		awk 'function f(x) { x /= 1000; return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
		{ printf "| %s | %d | %s | %s | %s | %s | %s | %s |\n", $1, $2, f($3), f($4), f($5), f($6), f($7), f($8) }' \
			notify_summary.txt
		echo
		echo "What advanced the global value (\`last_advance_cause\`), and where the waiter woke:"
		echo
		echo "| condition | event | idle credit | offline | waiter on the advancing CPU |"
		echo "|---|---:|---:|---:|---:|"
		awk -F, 'NR > 1 { n[$1]++; k[$1, $5]++; if ($6 == $7) same[$1]++ }
		END { for (c in n) printf "| %s | %d | %d | %d | %d |\n", c, k[c, 1], k[c, 2], k[c, 3], same[c] }' notify.csv | sort
	} >notify.md
	for cond in idle loaded; do
		put "notify_${cond}_p50" "$(awk -v k="$cond" '$1 == k {print $4}' notify_summary.txt)"
		put "notify_${cond}_p99" "$(awk -v k="$cond" '$1 == k {print $6}' notify_summary.txt)"
	done
	awk -F, 'NR > 1 {print $1, $3}' notify.csv | cdf_files notify
fi

# ---- IPIs ------------------------------------------------------------------------------------------

if [ -s ipi.csv ]; then
	# Background rate per label/cond/cpu; per-call figures with that rate subtracted.
	awk -F, '
	NR == 1 { next }
	$3 == "background" { for (k = 7; k <= 10; k++) bg[$1, $2, $6, k] = $k / $5; next }
	{ row[++n] = $0 }
	END {
		for (i = 1; i <= n; i++) {
			split(row[i], f, ",")
			printf "%s,%s,%s,%s,%s,%s", f[1], f[2], f[3], f[4], f[5], f[6]
			for (k = 7; k <= 10; k++)
				printf ",%.3f,%.3f", (f[k] - bg[f[1], f[2], f[6], k] * f[5]) / f[4], f[k] / f[4]
			printf ",%.1f,%.1f,%.1f,%.1f\n", bg[f[1], f[2], f[6], 7], bg[f[1], f[2], f[6], 8], bg[f[1], f[2], f[6], 9], bg[f[1], f[2], f[6], 10]
		}
	}' ipi.csv >ipi_percall.csv
	{
		echo "# IPIs per barrier"
		echo
		echo "Deltas of the CAL, RES, IWI and TLB rows of /proc/interrupts, per CPU. Each cell: per call"
		echo "after subtracting the background rate (interrupts per second measured in windows of the same"
		echo "condition with no call, times the batch's duration), then the raw per-call figure in"
		echo "parentheses. Small negative or fractional values are background noise."
		echo
		echo "## Pinned: waiter and daemon on CPU 0, what lands on CPU 1"
		echo
		echo "*busy*: a thread of the measuring process spins on CPU 1 (the process is registered for"
		echo "both expedited membarriers and the page is in CPU 1's TLB, so every method has work to do"
		echo "there); *idle*: nothing of ours runs on CPU 1. Caution for barrierd/busy: the background"
		echo "windows follow barriers by less than the daemon's 1 s arming hold, so their IWIs on CPU 1"
		echo "are barrierd's own ring-buffer signals (see the trace below); the raw figure is the one"
		echo "to read there."
		echo
		for cpu in 1 0; do
			echo "### CPU $cpu"
			echo
			echo "| CPU 1 | method | calls | CAL | RES | IWI | TLB |"
			echo "|---|---|---:|---:|---:|---:|---:|"
			awk -F, -v cpu="$cpu" '$1 == "pinned" && $6 == cpu && $3 != "background" {
				printf "| %s | %s | %d | %.2f (%.2f) | %.2f (%.2f) | %.2f (%.2f) | %.2f (%.2f) |\n",
					$2, $3, $4, $7, $8, $9, $10, $11, $12, $13, $14 }' ipi_percall.csv
			echo
			echo "Background on CPU $cpu (per second, CAL/RES/IWI/TLB): $(awk -F, -v cpu="$cpu" '$1 == "pinned" && $6 == cpu && $3 == "barrierd" {printf "%s: %s/%s/%s/%s; ", $2, $15, $16, $17, $18}' ipi_percall.csv)"
			echo
		done
		if grep -q '^split,' ipi_percall.csv; then
			echo "## The doorbell's IPI: waiter on CPU 0, daemon alone on CPU 1 (otherwise idle)"
			echo
			echo "| CPU | role | calls | CAL | RES | IWI | TLB |"
			echo "|---|---|---:|---:|---:|---:|---:|"
			awk -F, '$1 == "split" && $3 == "barrierd" {
				printf "| %s | %s | %d | %.2f (%.2f) | %.2f (%.2f) | %.2f (%.2f) | %.2f (%.2f) |\n",
					$6, $6 == 0 ? "waiter" : "daemon", $4, $7, $8, $9, $10, $11, $12, $13, $14 }' ipi_percall.csv
			echo
		fi
		if [ -s latency.csv ]; then
			echo "## Unpinned (barrierctl bench, rows summed over every CPU, per call, raw)"
			echo
			echo "| condition | method | calls | CAL | RES | IWI | TLB |"
			echo "|---|---|---:|---:|---:|---:|---:|"
			awk -F, 'NR > 1 { k = $1 "|" $3; n[k]++; c[k] += $6; r[k] += $7; w[k] += $8; t[k] += $9 }
			END { for (k in n) { split(k, a, "|"); printf "| %s | %s | %d | %.2f | %.2f | %.2f | %.2f |\n",
				a[1], a[2], n[k], c[k] / n[k], r[k] / n[k], w[k] / n[k], t[k] / n[k] } }' latency.csv | sort
		fi
		if [ -s ipi_trace.csv ] && [ "$(wc -l <ipi_trace.csv)" -gt 1 ]; then
			echo
			echo "## Who sends which IPI (ipi:ipi_send_cpu and ipi_send_cpumask, all senders)"
			echo
			echo "A waiter doing 100 barriers/s (\`bench_util loop\`) for a few seconds in each placement,"
			echo "traced in a tracefs instance of the harness. *per barrier* = events / barriers. Rows"
			echo "below 0.05 per barrier are left out (other processes' IPIs)."
			echo
			echo "| placement | sender (comm, on CPU) | target CPU | call site | callback | per barrier |"
			echo "|---|---|---|---|---|---:|"
			awk -F, 'NR > 1 && $2 > 0 && $8 / $2 >= 0.05 {
				printf "| %s | %s (%s) | %s | %s | %s | %.2f |\n", $1, $3, $4, $5, $6, $7, $8 / $2 }' ipi_trace.csv
			echo
			echo "ttwu_queue_wakelist → generic_smp_call_function_single_interrupt is a wake-up sent"
			echo "through the call-function-single vector (counted in CAL); a wake-up of a busy CPU is"
			echo "a reschedule IPI (RES); irq_work_queue → bpf_ringbuf_notify is the BPF ring buffer's"
			echo "forced wake-up, an IRQ-work self-interrupt (IWI) on the CPU whose event signalled."
		fi
	} >ipi.md
	put ipi_doorbell "$(awk -F, 'NR > 1 && $1 ~ /^split/ && $2 > 0 && $5 !~ /mask/ && $3 ~ /bench_util/ && $8 / $2 >= 0.05 {
		printf "to CPU %s via %s (%s), %.2f per barrier; ", $5, $6, $7, $8 / $2 }' ipi_trace.csv 2>/dev/null)"
	put ipi_pinned_idle "$(awk -F, '$1 == "pinned" && $2 == "idle" && $3 == "barrierd" && $6 == 1 {printf "%.2f/%.2f/%.2f/%.2f", $8, $10, $12, $14}' ipi_percall.csv)"
	put ipi_pinned_busy "$(awk -F, '$1 == "pinned" && $2 == "busy" && $3 == "barrierd" && $6 == 1 {printf "%.2f/%.2f/%.2f/%.2f", $8, $10, $12, $14}' ipi_percall.csv)"
	put ipi_exp_busy "$(awk -F, '$1 == "pinned" && $2 == "busy" && $3 == "global-expedited" && $6 == 1 {printf "%.2f/%.2f/%.2f/%.2f", $8, $10, $12, $14}' ipi_percall.csv)"
	put ipi_pexp_busy "$(awk -F, '$1 == "pinned" && $2 == "busy" && $3 == "private-expedited" && $6 == 1 {printf "%.2f/%.2f/%.2f/%.2f", $8, $10, $12, $14}' ipi_percall.csv)"
	put ipi_split_daemon "$(awk -F, '$1 == "split" && $6 == 1 {printf "%.2f/%.2f/%.2f/%.2f", $8, $10, $12, $14}' ipi_percall.csv)"
fi

# ---- waiters ---------------------------------------------------------------------------------------

if [ -s waiters.csv ]; then
	rm -f plots/data/waiters_*.dat
	{
		echo "# Waiter scaling: N threads blocked on one barrier"
		echo
		echo "*fanout*: all N sleep on the global word (checked with FUTEX_CMP_REQUEUE) for a stamp in"
		echo "the future, then one ring; only rounds where all N slept count. *library*: N threads call"
		echo "\`barrierd_wait()\` on one fresh stamp at once (each may ring). Medians (and maxima) in µs:"
		echo "advance → first / last thread running, and ring (fanout) or stamp (library) → last running."
		echo
		echo "| mode | threads | rounds (all blocked) | advance → first | advance → last | start → last |"
		echo "|---|---:|---:|---:|---:|---:|"
		for mode in fanout library; do
			for n in 1 10 100 1000; do
				awk -F, -v m="$mode" -v n="$n" 'NR > 1 && $1 == m && $2 == n {
					tot++; if (m == "library" || $4 >= n) { k++; print $5, $6, $7 } }
					END { print "#", tot + 0, k + 0 > "/dev/stderr" }' waiters.csv 2>waiters.cnt >waiters.sel || true
				[ -s waiters.sel ] || continue
				cnt=$(awk '{print $2 " (" $3 ")"}' waiters.cnt)
				med() { sort -n | awk '{v[NR] = $1} END {k = int((NR * 50 + 99) / 100); if (k < 1) k = 1; printf "%s %s", v[k], v[NR]}'; }
				a=$(cut -d' ' -f1 waiters.sel | med)
				b=$(cut -d' ' -f2 waiters.sel | med)
				c=$(cut -d' ' -f3 waiters.sel | med)
				printf '| %s | %s | %s | %s (%s) | %s (%s) | %s (%s) |\n' "$mode" "$n" "$cnt" \
					"$(us "${a% *}")" "$(us "${a#* }")" "$(us "${b% *}")" "$(us "${b#* }")" \
					"$(us "${c% *}")" "$(us "${c#* }")"
				if [ "$mode" = fanout ]; then
					echo "$n ${b% *}" >>plots/data/waiters_fanout.dat
				else
					echo "$n ${c% *}" >>plots/data/waiters_library.dat
				fi
				[ "$mode" = fanout ] && put "waiters_fanout_${n}" "${b% *}"
				[ "$mode" = library ] && put "waiters_library_${n}" "${c% *}"
			done
		done
		rm -f waiters.sel waiters.cnt
	} >waiters.md
fi

# ---- daemon CPU ------------------------------------------------------------------------------------

if [ -s daemon_cpu.csv ]; then
	{
		echo "# Daemon CPU"
		echo
		echo "Sum of \`sum_exec_runtime\` over every thread of the daemon (/proc/PID/task/*/schedstat), over"
		echo "the window's wall time. *Machine busy* is /proc/stat over the same window (all CPUs: 100 % ="
		echo "every CPU busy), the noise indicator. The flood runs as user nobody: FUTEX_WAKE on the"
		echo "doorbell word of a read-only mapping, in a tight loop. *loaded*: a nice-19 spinner per CPU;"
		echo "*switching*: a thread per CPU sleeping 200 µs in a loop (many events, little CPU)."
		echo "Signals and events: the daemon's slot counters (ring-buffer wake-ups, evidence hits)."
		echo
		echo "| window | seconds | daemon CPU % | passes/s | credit passes/s (cap) | doorbell wakes heard/s | ring-buffer signals/s | evidence events/s | daemon µs per credit pass | daemon µs per barrier | machine busy % | steal % | client |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
		awk -F, 'NR > 1 {
			s = ($4 - $3) / 1e9; cpu = ($6 - $5); pct = 100 * cpu / ($4 - $3)
			per = $8 > 0 ? sprintf("%.1f", cpu / $8 / 1000) : "-"
			bar = "-"; n = split($14, f, ";")
			for (i = 1; i < n; i++) if (f[i] == "barriers" && f[i + 1] > 0 && f[1] != "flood") bar = sprintf("%.1f", cpu / f[i + 1] / 1000)
			client = $14; gsub(";", " ", client)
			printf "| %s | %.1f | %.4f | %.1f | %.1f (%d) | %.1f | %.1f | %.0f | %s | %s | %s | %s | %s |\n", $1, s, pct,
				$7 / s, $8 / s, $2, $9 / s, $12 / s, $13 / s, per, bar, $10, $11, client }' daemon_cpu.csv
	} >daemon_cpu.md
	for w in idle-no-waiters idle-waiter-100/s idle-waiter-loop loaded-no-waiters loaded-waiter-100/s \
		loaded-waiter-loop switching-no-waiters switching-waiter-100/s flood-default-rate flood-rate-10000; do
		n=${w//-/_}
		n=${n//\/s/ps}
		put "cpu_$n" "$(awk -F, -v w="$w" '$1 == w {printf "%.4f", 100 * ($6 - $5) / ($4 - $3)}' daemon_cpu.csv)"
		put "cpass_$n" "$(awk -F, -v w="$w" '$1 == w {printf "%.0f", $8 / (($4 - $3) / 1e9)}' daemon_cpu.csv)"
		put "flood_lat_$n" "$(awk -F, -v w="$w" '$1 == w {n = split($14, f, ";"); for (i = 1; i < n; i++) { if (f[i] == "p50_us") a = f[i + 1]; if (f[i] == "p99_us") b = f[i + 1] } if (a != "") printf "%s / %s µs", a, b}' daemon_cpu.csv)"
		put "bar_$n" "$(awk -F, -v w="$w" '$1 == w {n = split($14, f, ";"); for (i = 1; i < n; i++) if (f[i] == "barriers") printf "%.1f", 1e6 * ($6 - $5) / 1e9 / f[i + 1]}' daemon_cpu.csv)"
	done
fi

# ---- getpid ------------------------------------------------------------------------------------------

if [ -s getpid.csv ]; then
	awk -F, 'NR > 1 {print $2, int($4 * 100)}' getpid.csv | summarize >getpid_summary.txt
	base=$(awk '$1 == "none" {print $4}' getpid_summary.txt)
	{
		echo "# getpid() with and without the daemon"
		echo
		echo "A million \`syscall(SYS_getpid)\` per repetition, timed with CLOCK_THREAD_CPUTIME_ID, pinned"
		echo "to the last CPU; conditions rotated, kernel.bpf_stats_enabled=0. ns per call over all"
		echo "repetitions; *delta* is the median against *none*. *empty-program*: the baseline object's"
		echo "empty raw_tp program on raw_syscalls/sys_enter alone."
		echo
		echo "| condition | repetitions | min | median | p90 | max | delta (median) |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
		for c in none empty-program daemon-default daemon-sys_enter; do
			awk -v c="$c" -v b="$base" '$1 == c {
				printf "| %s | %d | %.1f | %.1f | %.1f | %.1f | %+.1f |\n", c, $2, $3 / 100, $4 / 100, $5 / 100, $7 / 100, ($4 - b) / 100 }' \
				getpid_summary.txt
		done
	} >getpid.md
	for c in empty-program daemon-default daemon-sys_enter; do
		put "getpid_${c//-/_}" "$(awk -v c="$c" -v b="$base" '$1 == c {printf "%.1f", ($4 - b) / 100}' getpid_summary.txt)"
	done
	put getpid_none "$(awk '$1 == "none" {printf "%.1f", $4 / 100}' getpid_summary.txt)"
fi

# ---- BPF cost ----------------------------------------------------------------------------------------

if [ -s bpf_cost.csv ]; then
	awk -F, 'NR > 1 { k = $2 "|" $3; c[k] += $4; t[k] += $5
		if ($4 > 0) { v = $5 / $4; if (!(k in lo) || v < lo[k]) lo[k] = v; if (v > hi[k]) hi[k] = v } }
	END { for (k in c) printf "%s|%.0f|%.1f|%.1f|%.1f\n", k, c[k], c[k] ? t[k] / c[k] : 0, lo[k], hi[k] }' \
		bpf_cost.csv | sort >bpf_summary.txt
	{
		echo "# BPF cost per hit"
		echo
		echo "\`run_time_ns / run_cnt\` with kernel.bpf_stats_enabled=1 (which adds its own two clock reads"
		echo "per run to every figure alike). Each program measured alone on its tracepoint in rotating"
		echo "windows: the daemon started with \`--tracepoint TP\` only, then stopped; the baseline"
		echo "(\`baseline_stamp\`: \`slot->stamp = bpf_ktime_get_ns()\`, raw_tp) attached alone to the same"
		echo "tracepoint; never both. Workload: a thread per CPU sleeping 200 µs in a loop. The daemon had"
		echo "no waiter (disarmed), so no program signalled the ring buffer. ns per hit over all windows"
		echo "(per-window range in parentheses). Target: within 25 % of the baseline. *xchg baseline*:"
		echo "the baseline with its store made an exchange (\`baseline_xchg\`), the locked instruction DESIGN rule 1"
		echo "requires; the last column is the daemon's program against it."
		echo
		echo "| tracepoint | program | hits | ns/hit | baseline ns/hit | ratio | within 25 % | xchg baseline ns/hit | ratio to it |"
		echo "|---|---|---:|---:|---:|---:|---|---:|---:|"
		awk -F'|' '
		$2 == "baseline_stamp" { base[$1] = $4; brange[$1] = $5 "–" $6; bhits[$1] = $3 }
		$2 == "baseline_xchg" { xb[$1] = $4; xrange[$1] = $5 "–" $6; xhits[$1] = $3 }
		{ row[++n] = $0 }
		END {
			for (i = 1; i <= n; i++) {
				split(row[i], f, "|")
				if (f[2] ~ /^baseline_/) continue
				tp = f[1]; bt = tp
				if (tp ~ /idle tracking/) bt = "sched/sched_switch"
				b = base[bt]; x = xb[bt]
				printf "| %s | %s | %d | %.0f (%.0f–%.0f) | %s (%s) | %s | %s | %s (%s) | %s |\n", tp, f[2], f[3], f[4], f[5], f[6],
					b ? sprintf("%.0f", b) : "-", brange[bt], b ? sprintf("%.2f", f[4] / b) : "-",
					b ? (f[4] <= 1.25 * b ? "yes" : "**no**") : "-",
					x ? sprintf("%.0f", x) : "-", xrange[bt], x ? sprintf("%.2f", f[4] / x) : "-"
			}
			for (t in base) printf "| %s | baseline_stamp | %d | %.0f (%s) | | | | | |\n", t, bhits[t], base[t], brange[t]
			for (t in xb) printf "| %s | baseline_xchg | %d | %.0f (%s) | %.0f | %.2f | | | |\n", t, xhits[t], xb[t], xrange[t], base[t], base[t] ? xb[t] / base[t] : 0
		}' bpf_summary.txt
	} >bpf_cost.md
	put bpf_rows "$(awk -F'|' '$2 !~ /^baseline_/ {printf "%s;", $0}' bpf_summary.txt)"
	put bpf_xbase "$(awk -F'|' '$2 == "baseline_xchg" {printf "%s;", $0}' bpf_summary.txt)"
	put bpf_base "$(awk -F'|' '$2 == "baseline_stamp" {printf "%s;", $0}' bpf_summary.txt)"
fi

# ---- CPU scaling model -------------------------------------------------------------------------------

if [ -s cpu_scaling.csv ]; then
	wake=$(awk -F, '$1 == "futex-wake-nowaiter" {print $4}' cpu_scaling.csv)
	{
		echo "# CPU scaling model: the daemon's pass against ncpu"
		echo
		echo "\`publisher_pass()\` (src/publisher.c, the daemon's own code) on simulated slot arrays and a"
		echo "real state file of the right size; each pass timed alone, median µs, with FUTEX_WAKEs per"
		echo "pass (the publisher's \`futex_wakes\` counter) in parentheses. A FUTEX_WAKE on a word nobody"
		echo "waits on costs ${wake:-?} ns here."
		echo
		echo "* fold-quiet: nothing new (heartbeat fold on an idle machine)"
		echo "* fold-one-new: one CPU has a new stamp, rotating (armed, loaded: one signal, one fold)"
		echo "* fold-all-new: every CPU has a new stamp"
		echo "* credit-all-idle: a credit pass (doorbell) with every CPU idle: all credited"
		echo "* probe-64: the heartbeat's waiter probe (FUTEX_CMP_REQUEUE on the 2 global and 2 × 64 per-CPU words)"
		echo
		echo "| ncpu | file bytes | fold-quiet | fold-one-new | fold-all-new | credit-all-idle | probe-64 |"
		echo "|---:|---:|---:|---:|---:|---:|---:|"
		awk -F, 'NR > 1 && $1 != "futex-wake-nowaiter" {
			m[$2, $1] = sprintf("%.1f (%.0f)", $4 / 1000, $7); fb[$2] = $8; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
		END { for (i = 1; i <= n; i++) { c = order[i]
			printf "| %d | %d | %s | %s | %s | %s | %s |\n", c, fb[c], m[c, "fold-quiet"], m[c, "fold-one-new"],
				m[c, "fold-all-new"], m[c, "credit-all-idle"], m[c, "probe-64"] } }' cpu_scaling.csv
		echo
		awk -F, -v w="${wake:-300}" '
			$1 == "fold-quiet" && $2 == 4096 { q = $4 / $2 }
			$1 == "fold-all-new" && $2 == 4096 { t = $4; n = $7 }
			END { printf "At 4096 CPUs a pass that changes every CPU makes %d FUTEX_WAKEs and takes %.0f µs, %.0f ns per wake: the wakes are the pass (a quiet fold costs %.1f ns per CPU; one FUTEX_WAKE on a word nobody waits on, alone in a loop, %.0f ns).\n",
				n, t / 1000, t / n, q, w }' cpu_scaling.csv
	} >cpu_scaling.md
	for s in fold-quiet fold-one-new fold-all-new credit-all-idle; do
		awk -F, -v s="$s" '$1 == s {print $2, $4 / 1000, $7}' cpu_scaling.csv >"plots/data/scaling_${s}.dat"
	done
	put model_all_4096 "$(awk -F, '$1 == "fold-all-new" && $2 == 4096 {print $4}' cpu_scaling.csv)"
	put model_credit_2 "$(awk -F, '$1 == "credit-all-idle" && $2 == 2 {print $4}' cpu_scaling.csv)"
	put model_credit_4096 "$(awk -F, '$1 == "credit-all-idle" && $2 == 4096 {print $4}' cpu_scaling.csv)"
	put model_wake "${wake:-0}"
fi

# ---- sections 9-11: per-repetition statistics ------------------------------------------------------

# stdin: summarize's output for keys "GROUP/REP"; stdout: "GROUP reps lo-hi ranges of p50, p90,
# p99 and max" as "GROUP nrep p50lo p50hi p90lo p90hi p99lo p99hi maxlo maxhi".
rep_ranges() {
	awk '{ k = $1; sub("/[^/]*$", "", k)
		if (!(k in r)) { order[++n] = k; lo50[k] = hi50[k] = $4; lo90[k] = hi90[k] = $5; lo99[k] = hi99[k] = $6; lomx[k] = himx[k] = $7 }
		r[k]++
		if ($4 < lo50[k]) lo50[k] = $4; if ($4 > hi50[k]) hi50[k] = $4
		if ($5 < lo90[k]) lo90[k] = $5; if ($5 > hi90[k]) hi90[k] = $5
		if ($6 < lo99[k]) lo99[k] = $6; if ($6 > hi99[k]) hi99[k] = $6
		if ($7 < lomx[k]) lomx[k] = $7; if ($7 > himx[k]) himx[k] = $7 }
	END { for (i = 1; i <= n; i++) { k = order[i]
		print k, r[k], lo50[k], hi50[k], lo90[k], hi90[k], lo99[k], hi99[k], lomx[k], himx[k] } }'
}

# The awk functions the tables share: f(ns) in µs with sensible precision, ms(ns), rg(lo, hi).
awk_fmt='function f(x) { x /= 1000; return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
function ms(x) { x /= 1e6; return x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
function rg(a, b) { return a == b ? "" : " [" ms(a) "–" ms(b) "]" }'

# ---- 9: legacy client --------------------------------------------------------------------------------

if [ -s legacy.csv ]; then
	# Warm-up (the first second) and nothing else left out; a timed-out call counts with its 2 s.
	awk -F, 'NR > 1 && !$7 {print $1 "/" $3, $6}' legacy.csv | summarize >legacy_summary.txt
	awk -F, 'NR > 1 && !$7 {print $1 "/" $3 "/" $2, $6}' legacy.csv | summarize | rep_ranges >legacy_ranges.txt
	# Per repetition, membarrier's percentile over legacy-ns's: "cfg lo50 hi50 lo90 hi90 lo99 hi99 maxok reps".
	awk -F, 'NR > 1 && !$7 {print $1 "/" $3 "/" $2, $6}' legacy.csv | summarize | awk '
		{ split($1, k, "/"); g = k[1] SUBSEP k[3]; p50[g, k[2]] = $4; p90[g, k[2]] = $5; p99[g, k[2]] = $6; mx[g, k[2]] = $7; seen[g] = 1; cf[k[1]] = 1 }
		END { for (g in seen) { split(g, a, SUBSEP); c = a[1]
			if (!p50[g, "legacy-ns"]) continue
			r50 = p50[g, "membarrier-global"] / p50[g, "legacy-ns"]; r90 = p90[g, "membarrier-global"] / p90[g, "legacy-ns"]
			r99 = p99[g, "membarrier-global"] / p99[g, "legacy-ns"]
			if (!(c in n)) { l50[c] = h50[c] = r50; l90[c] = h90[c] = r90; l99[c] = h99[c] = r99 }
			n[c]++; ok[c] += mx[g, "legacy-ns"] < mx[g, "membarrier-global"]
			if (r50 < l50[c]) l50[c] = r50; if (r50 > h50[c]) h50[c] = r50
			if (r90 < l90[c]) l90[c] = r90; if (r90 > h90[c]) h90[c] = r90
			if (r99 < l99[c]) l99[c] = r99; if (r99 > h99[c]) h99[c] = r99 }
		for (c in n) printf "%s %.2f %.2f %.2f %.2f %.2f %.2f %d %d\n", c, l50[c], h50[c], l90[c], h90[c], l99[c], h99[c], ok[c], n[c] }' \
		| sort >legacy_ratios.txt
	{
		echo "# A client of the original layout against membarrier(GLOBAL)"
		echo
		echo "\`bench_legacy\`: knows only the 128-byte header and 16-byte per-CPU entries (no doorbell,"
		echo "no extension, no libbarrierd). Three barrier kinds in a random order each round, each after"
		echo "a random sleep of 0–100 ms: *legacy-ns* (fenced stamp T, FUTEX_WAIT on the low half of"
		echo "last_interrupt_ns with a 10 ms timeout, re-checking all 64 bits, until it is > T),"
		echo "*legacy-vtime* (T first, then MFENCE and the vtime V; wait until last_interrupt_vtime > V)"
		echo "and membarrier(GLOBAL). A nice-10 spinner on the second CPU except in *pinned-idle1*."
		echo "*unpinned*: nothing pinned; *pinned-busy1*: client and daemon on the first CPU, the spinner"
		echo "on the second; *pinned-idle1*: the same with the second CPU idle. The first second of each"
		echo "run is left out (warm-up). ms, all repetitions pooled, [range of the per-repetition figure]."
		echo
		echo "| config | method | calls | timeouts (2 s) | p50 | p90 | p99 | max |"
		echo "|---|---|---:|---:|---:|---:|---:|---:|"
		for cfg in unpinned pinned-busy1 pinned-idle1; do
			for m in legacy-ns legacy-vtime membarrier-global; do
				to=$(awk -F, -v c="$cfg" -v m="$m" 'NR > 1 && !$7 && $1 == c && $3 == m && $8 {t++} END {print t + 0}' legacy.csv)
				awk -v k="$cfg/$m" -v to="$to" -v rr="$(awk -v k="$cfg/$m" '$1 == k' legacy_ranges.txt)" "$awk_fmt"'
					$1 == k { split(rr, r, " "); split(k, km, "/")
						printf "| %s | %s | %d | %d | %s%s | %s%s | %s%s | %s%s |\n", km[1], km[2], $2, to,
							ms($4), rg(r[3], r[4]), ms($5), rg(r[5], r[6]), ms($6), rg(r[7], r[8]), ms($7), rg(r[9], r[10]) }' \
					legacy_summary.txt
			done
		done
		echo
		echo "Against the target (≥ 2× faster than membarrier(GLOBAL) at p50, p90 and p99; max below"
		echo "membarrier's), legacy-ns: pooled ratio, [range over repetitions]:"
		echo
		echo "| config | p50 faster | p90 faster | p99 faster | max below membarrier's (repetitions) | verdict |"
		echo "|---|---:|---:|---:|---:|---|"
		for cfg in unpinned pinned-busy1 pinned-idle1; do
			gl=$(awk -v k="$cfg/membarrier-global" '$1 == k {print $4, $5, $6, $7}' legacy_summary.txt)
			bd=$(awk -v k="$cfg/legacy-ns" '$1 == k {print $4, $5, $6, $7}' legacy_summary.txt)
			[ -n "$gl" ] && [ -n "$bd" ] || continue
			awk -v c="$cfg" -v gl="$gl" -v bd="$bd" -v rr="$(awk -v c="$cfg" '$1 == c' legacy_ratios.txt)" 'BEGIN {
				split(gl, g, " "); split(bd, b, " "); split(rr, r, " ")
				a50 = g[1] / b[1]; a90 = g[2] / b[2]; a99 = g[3] / b[3]
				met = a50 >= 2 && a90 >= 2 && a99 >= 2 && b[4] < g[4] && r[2] >= 2 && r[4] >= 2 && r[6] >= 2 && r[8] == r[9]
				printf "| %s | %.2f× [%.2f–%.2f] | %.2f× [%.2f–%.2f] | %.2f× [%.2f–%.2f] | %s (%d of %d) | %s |\n", c,
					a50, r[2], r[3], a90, r[4], r[5], a99, r[6], r[7], b[4] < g[4] ? "yes" : "no", r[8], r[9],
					met ? "met" : "**not met**" }'
		done
		echo
		echo "Vtime barriers that passed while the global ns word had not yet passed T (the T stamp"
		echo "taken first, so last_interrupt_vtime > V should imply last_interrupt_ns > T):"
		echo
		echo "| config | vtime barriers | ns word not past T | per repetition |"
		echo "|---|---:|---:|---|"
		awk -F, 'NR > 1 && !$7 && $3 == "legacy-vtime" && $9 != "" { n[$1]++; f[$1] += !$9; rn[$1, $2]++; rf[$1, $2] += !$9; reps[$2] = 1 }
			END { for (c in n) { s = ""; for (r = 1; r <= 20; r++) if ((c, r) in rn) s = s (s == "" ? "" : ", ") rf[c, r] "/" rn[c, r]
				printf "| %s | %d | %d | %s |\n", c, n[c], f[c], s } }' legacy.csv | sort
	} >legacy.md
	for cfg in unpinned pinned-busy1 pinned-idle1; do
		n=${cfg//-/_}
		put "legacy_${n}" "$(awk -v c="$cfg" '$1 == c {printf "%s/%s/%s×, max ok %s of %s", $2, $4, $6, $8, $9}' legacy_ratios.txt)"
		put "legacy_${n}_vfail" "$(awk -F, -v c="$cfg" 'NR > 1 && !$7 && $1 == c && $3 == "legacy-vtime" && $9 != "" {n++; f += !$9} END {if (n) printf "%d of %d", f, n}' legacy.csv)"
	done
	awk -F, 'NR > 1 && !$7 {print $1 "/" $3, $6}' legacy.csv | cdf_files legacy
fi

# ---- 10: the loaded headline, pinned; the projection to N CPUs ---------------------------------------

if [ -s pinned.csv ]; then
	awk -F, 'NR > 1 {print $1 "/" $3, $5}' pinned.csv | summarize >pinned_summary.txt
	awk -F, 'NR > 1 {print $1 "/" $3 "/" $2, $5}' pinned.csv | summarize | rep_ranges >pinned_ranges.txt
	{
		echo "# Loaded barrier latency: pinned (the headline) and unpinned"
		echo
		echo "\`barrierctl bench -m barrierd,vtime,membarrier-global --gap 10\` (a random 0–10 ms sleep"
		echo "before every call). *pinned*: the waiter and the daemon on the first CPU, a nice-19"
		echo "spinner on every other CPU: the other CPUs' evidence is their own next event, which is"
		echo "what all but one or two CPUs of a larger machine see. *unpinned* (\`--load\`: a nice-19"
		echo "spinner on every CPU, nothing else pinned): on 2 CPUs the daemon's own wake-ups on the"
		echo "other CPU are evidence for it, which flatters the figure (a 2-CPU artefact). µs, all"
		echo "repetitions pooled, [range of the per-repetition figure, ms]."
		echo
		echo "| config | method | calls | p50 | p90 | p99 | max | p50 faster | p99 faster |"
		echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
		for cfg in pinned unpinned; do
			gl=$(awk -v k="$cfg/membarrier-global" '$1 == k {print $4, $6}' pinned_summary.txt)
			for m in barrierd vtime membarrier-global; do
				awk -v k="$cfg/$m" -v gl="$gl" -v rr="$(awk -v k="$cfg/$m" '$1 == k' pinned_ranges.txt)" "$awk_fmt"'
					$1 == k { split(rr, r, " "); split(gl, g, " "); split(k, km, "/")
						printf "| %s | %s | %d | %s%s | %s%s | %s%s | %s%s | %.1f× | %.1f× |\n", km[1], km[2], $2,
							f($4), rg(r[3], r[4]), f($5), rg(r[5], r[6]), f($6), rg(r[7], r[8]), f($7), rg(r[9], r[10]),
							g[1] / $4, g[2] / $6 }' pinned_summary.txt
			done
		done
		echo
		echo "## Projection to N CPUs"
		echo
		echo "The pinned barrierd latency is the wait for one other busy CPU's evidence (the waiter's"
		echo "own CPU passes when it sleeps), plus the daemon's pass and wake-up. With N CPUs a barrier"
		echo "waits for the last of N−1 such CPUs. *Independent phases*: the N−1 waits are independent"
		echo "draws from the measured distribution (the skew_tick=1 picture, idealised: skew_tick spreads"
		echo "the ticks evenly over half a tick period rather than at random), so the q-quantile of the"
		echo "maximum is the measured q^(1/(N−1))-quantile. *Aligned ticks* (skew_tick=0, this kernel's"
		echo "default: every CPU's tick fires at the same moment): busy CPUs whose evidence is the tick"
		echo "all bring it at once, so the maximum is one CPU's wait: the measured distribution itself, a"
		echo "lower bound (the spread of N−1 simultaneous timer interrupts and the daemon's handling of"
		echo "N−1 signals at once are not modelled). ms; *≥* marks a quantile beyond the sample's"
		echo "resolution (fewer than one sample above it), shown as the sample maximum. membarrier(GLOBAL)"
		echo "on big machines: 25–80 ms (as the original barrierd's README reports it)."
		echo
		echo "| N | samples | independent p50 | p90 | p99 | aligned p50 | p90 | p99 |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
		awk -F, 'NR > 1 && $1 == "pinned" && $3 == "barrierd" {print $5}' pinned.csv | sort -n | awk '
			function q(p, n,  k) { k = int(n * p); if (k < n * p) k++; if (k < 1) k = 1; if (k > n) k = n; return k }
			function ms(x) { x /= 1e6; return x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
			function proj(p, N,  pp) { pp = exp(log(p) / (N - 1)); return (n * (1 - pp) < 1 ? "≥ " : "") ms(v[q(pp, n)]) }
			{ v[++n] = $1 }
			END { if (!n) exit
				for (i = 1; i <= 4; i++) { N = i == 1 ? 2 : i == 2 ? 8 : i == 3 ? 64 : 256
					printf "| %d%s | %d | %s | %s | %s | %s | %s | %s |\n", N, N == 2 ? " (measured)" : "", n,
						proj(0.5, N), proj(0.9, N), proj(0.99, N), ms(v[q(0.5, n)]), ms(v[q(0.9, n)]), ms(v[q(0.99, n)]) } }'
		echo
		echo "Per repetition (independent phases, p50 / p90 / p99, ms):"
		echo
		for r in $(awk -F, 'NR > 1 {print $2}' pinned.csv | sort -un); do
			awk -F, -v r="$r" 'NR > 1 && $1 == "pinned" && $3 == "barrierd" && $2 == r {print $5}' pinned.csv | sort -n | awk -v r="$r" '
				function q(p, n,  k) { k = int(n * p); if (k < n * p) k++; if (k < 1) k = 1; if (k > n) k = n; return k }
				function ms(x) { x /= 1e6; return x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
				function proj(p, N,  pp) { pp = exp(log(p) / (N - 1)); return (n * (1 - pp) < 1 ? "≥ " : "") ms(v[q(pp, n)]) }
				{ v[++n] = $1 }
				END { if (!n) exit; printf "* repetition %s (%d samples):", r, n
					for (i = 1; i <= 3; i++) { N = i == 1 ? 8 : i == 2 ? 64 : 256
						printf " N = %d: %s / %s / %s%s", N, proj(0.5, N), proj(0.9, N), proj(0.99, N), i < 3 ? ";" : "\n" } }'
		done
	} >pinned.md
	for cfg in pinned unpinned; do
		put "lat_${cfg}_bd_p50" "$(awk -v k="$cfg/barrierd" '$1 == k {print $4}' pinned_summary.txt)"
		put "lat_${cfg}_bd_p99" "$(awk -v k="$cfg/barrierd" '$1 == k {print $6}' pinned_summary.txt)"
		put "lat_${cfg}_mb_p50" "$(awk -v k="$cfg/membarrier-global" '$1 == k {print $4}' pinned_summary.txt)"
		put "lat_${cfg}_mb_p99" "$(awk -v k="$cfg/membarrier-global" '$1 == k {print $6}' pinned_summary.txt)"
		put "lat_${cfg}_bd_range" "$(awk -v k="$cfg/barrierd" '$1 == k {printf "p50 %.3f–%.3f, p99 %.3f–%.3f ms", $3 / 1e6, $4 / 1e6, $7 / 1e6, $8 / 1e6}' pinned_ranges.txt)"
	done
	awk -F, 'NR > 1 {print $1 "/" $3, $5}' pinned.csv | cdf_files pinned
fi

# ---- 11: daemon cost of a waiter doing 100 barriers/s -----------------------------------------------

if [ -s cost.csv ]; then
	# One row per window: cfg rep secs cpu% passes/b credit/b rings/b signals/b signals/b/busy barriers/s p50 p99 passes/s signals/s
	awk -F, 'NR > 1 {
		s = ($4 - $3) / 1e9; pct = 100 * ($6 - $5) / ($4 - $3); nb = 0; p50 = p99 = "-"
		n = split($14, f, ";"); for (i = 1; i < n; i++) { if (f[i] == "barriers") nb = f[i + 1]; if (f[i] == "p50_us") p50 = f[i + 1]; if (f[i] == "p99_us") p99 = f[i + 1] }
		if (nb > 0) printf "%s %s %.1f %.4f %.3f %.3f %.3f %.3f %s %.1f %s %s %.1f %.1f\n", $1, $15, s, pct, $7 / nb, $8 / nb, $9 / nb, $12 / nb,
			($16 > 0 ? sprintf("%.3f", $12 / nb / $16) : "-"), nb / s, p50, p99, $7 / s, $12 / s
		else printf "%s %s %.1f %.4f - - - - - 0 - - %.1f %.1f\n", $1, $15, s, pct, $7 / s, $12 / s }' cost.csv >cost_rows.txt
	{
		echo "# What a waiter doing 100 barriers/s costs the daemon"
		echo
		echo "\`bench_util loop STATE S 100\` (libbarrierd, paced by absolute sleeps). *pinned*: the waiter"
		echo "and the daemon on the first CPU; *loaded*: a nice-19 spinner on every CPU (unpinned) or on"
		echo "every CPU but the first (pinned). Daemon CPU from \`sum_exec_runtime\` of all its threads;"
		echo "passes, credit passes and doorbell rings heard from the extension's counters; ring-buffer"
		echo "signals from the BPF slot counters (\`bench_bpf slots\`). *per busy CPU*: signals per"
		echo "barrier divided by the spinning CPUs (the ones that can lag). Each cell: the median over"
		echo "repetitions [min–max]."
		echo
		echo "| window | reps | daemon CPU % | passes / barrier | credit passes / barrier | rings / barrier | signals / barrier | signals / barrier / busy CPU | barriers/s | passes/s | signals/s | client p50 / p99 µs |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
		for w in idle-no-waiter idle-unpinned idle-pinned loaded-unpinned loaded-pinned; do
			awk -v w="$w" '
				function med(a, n,  i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
					return a[int((n + 1) / 2)] }
				function cell(c,  i, a, lo, hi, m) { if (col[1, c] == "-") return "-"
					if (c == 10 && w == "idle-no-waiter") return "-"
					for (i = 1; i <= n; i++) a[i] = col[i, c] + 0
					m = med(a, n); lo = a[1]; hi = a[n]
					return lo == hi ? sprintf(fmt[c], m) : sprintf(fmt[c] " [" fmt[c] "–" fmt[c] "]", m, lo, hi) }
				BEGIN { fmt[4] = "%.3f"; fmt[5] = fmt[6] = fmt[7] = fmt[8] = fmt[9] = "%.2f"; fmt[10] = fmt[13] = fmt[14] = "%.1f" }
				$1 == w { n++; for (c = 1; c <= NF; c++) col[n, c] = $c; cl = cl (cl == "" ? "" : "; ") $11 " / " $12 }
				END { if (!n) exit
					printf "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w, n, cell(4), cell(5), cell(6), cell(7), cell(8), cell(9), cell(10), cell(13), cell(14), w == "idle-no-waiter" ? "-" : cl }' cost_rows.txt
		done
	} >cost.md
	for w in idle-no-waiter idle-unpinned idle-pinned loaded-unpinned loaded-pinned; do
		n=${w//-/_}
		put "cost_${n}_cpu" "$(awk -v w="$w" '$1 == w {printf "%s%.3f", s, $4; s = ", "}' cost_rows.txt)"
		put "cost_${n}_ppb" "$(awk -v w="$w" '$1 == w {printf "%s%s", s, $5; s = ", "}' cost_rows.txt)"
		put "cost_${n}_spbc" "$(awk -v w="$w" '$1 == w {printf "%s%s", s, $9; s = ", "}' cost_rows.txt)"
		put "cost_${n}_cpu_max" "$(awk -v w="$w" '$1 == w && $4 > m {m = $4} END {printf "%.4f", m}' cost_rows.txt)"
		put "cost_${n}_ppb_max" "$(awk -v w="$w" '$1 == w && $5 != "-" && $5 > m {m = $5} END {printf "%.3f", m}' cost_rows.txt)"
		put "cost_${n}_spbc_max" "$(awk -v w="$w" '$1 == w && $9 != "-" && $9 > m {m = $9} END {printf "%.3f", m}' cost_rows.txt)"
	done
fi

# ---- 12: nudges ------------------------------------------------------------------------------------------

if [ -s nudge.csv ]; then
	# "d/load/method n p50 p90 p99 p99.9 max cal res iwi tlb" (nearest rank; IPIs per call, rows
	# summed over every CPU as barrierctl bench counts them).
	awk -F, 'NR > 1 {print $1 "/" $3 "/" $4, $6, $7, $8, $9, $10}' nudge.csv | sort -t' ' -k1,1 -k2,2n | awk '
		function rank(p,  k) { k = int(n * p); if (k < n * p) k++; return k < 1 ? 1 : k > n ? n : k }
		function out() { if (!n) return
			printf "%s %d %s %s %s %s %s %.2f %.2f %.2f %.2f\n", key, n, v[rank(0.5)], v[rank(0.9)],
				v[rank(0.99)], v[rank(0.999)], v[n], c / n, r / n, w / n, t / n
			n = c = r = w = t = 0 }
		$1 != key { out(); key = $1 }
		{ v[++n] = $2; c += $3; r += $4; w += $5; t += $6 }
		END { out() }' >nudge_summary.txt
	{
		echo "# Nudges: pinned latency with nudges off, at 0.5 ms and at the default"
		echo
		echo "The daemon restarted with \`--nudge-after\` 0 (off), 0.5 and its default (10 ms); the waiter and"
		echo "the daemon's main and doorbell threads on the first CPU (its nudge threads stay on theirs);"
		echo "*loaded*: a nice-19 spinner on every other CPU, as section 10; *idle*: nothing else."
		echo "\`barrierctl bench --gap 10\`, methods interleaved; all repetitions pooled. µs, nearest rank."
		echo "IPIs per call: /proc/interrupts rows summed over every CPU around each call (interrupts of"
		echo "other origin in that window count too)."
		echo
		echo "| nudge-after | load | method | calls | p50 | p90 | p99 | p99.9 | max | CAL | RES | IWI | TLB |"
		echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		awk "$awk_fmt"'{ split($1, k, "/"); printf "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			k[1], k[2], k[3], $2, f($3), f($4), f($5), f($6), f($7), $8, $9, $10, $11 }' nudge_summary.txt
		echo
		echo "Nudges and the daemon's CPU over each block (every method's calls; only barrierd's ring):"
		echo
		echo "| nudge-after | load | rep | barrierd calls | nudges | nudges per barrier | daemon CPU |"
		echo "|---|---|---:|---:|---:|---:|---:|"
		awk -F, 'NR > 1 { printf "| %s | %s | %s | %d | %d | %.3f | %.2f %% |\n", $1, $3, $2, $4, $5,
			$5 / $4, ($7 > 0 ? 100 * $6 / ($7 * 1e6) : 0) }' nudge_counts.csv
		if [ -s nudge_flood.txt ]; then
			echo
			echo "Flood by user nobody (rings in a loop, a thread asleep on the global word) against a daemon at"
			echo "--nudge-after 0.1, every CPU but the first busy: $(tr '\n' ' ' <nudge_flood.txt)."
			awk '/^nudges/ { printf "That is %.1f nudges per second per busy CPU, against a cap of 200 (bursts of 4).\n", $2 / ($4 > 0 ? $4 : 1) / ($6 > 0 ? $6 : 1) }' nudge_flood.txt
		fi
	} >nudge.md
	for d in 0 0.5 default; do
		dn=$(echo "$d" | tr . _)
		put "nudge_${dn}_p99" "$(awk -v k="$d/loaded/barrierd" '$1 == k {print $5}' nudge_summary.txt)"
		put "nudge_${dn}_p999" "$(awk -v k="$d/loaded/barrierd" '$1 == k {print $6}' nudge_summary.txt)"
		put "nudge_${dn}_nudged_loaded" "$(awk -F, -v d="$d" 'NR > 1 && $1 == d && $3 == "loaded" {b += $4; n += $5} END {if (b) printf "%.3f", n / b}' nudge_counts.csv)"
		put "nudge_${dn}_nudged_idle" "$(awk -F, -v d="$d" 'NR > 1 && $1 == d && $3 == "idle" {b += $4; n += $5} END {if (b) printf "%.3f", n / b}' nudge_counts.csv)"
	done
	put nudge_flood_rate "$(awk '/^nudges/ { printf "%.1f", $2 / ($4 > 0 ? $4 : 1) / ($6 > 0 ? $6 : 1) }' nudge_flood.txt 2>/dev/null)"
fi

# ---- 13: direct evidence ---------------------------------------------------------------------------------

if [ -s direct.csv ]; then
	# "config/method n p50 p90 p99 p99.9 max cal res iwi tlb" (nearest rank; IPIs per call, rows
	# summed over every CPU as barrierctl bench counts them), repetitions pooled.
	awk -F, 'NR > 1 {print $1 "/" $3, $5, $6, $7, $8, $9}' direct.csv | sort -t' ' -k1,1 -k2,2n | awk '
		function rank(p,  k) { k = int(n * p); if (k < n * p) k++; return k < 1 ? 1 : k > n ? n : k }
		function out() { if (!n) return
			printf "%s %d %s %s %s %s %s %.3f %.3f %.3f %.3f\n", key, n, v[rank(0.5)], v[rank(0.9)],
				v[rank(0.99)], v[rank(0.999)], v[n], c / n, r / n, w / n, t / n
			n = c = r = w = t = 0 }
		$1 != key { out(); key = $1 }
		{ v[++n] = $2; c += $3; r += $4; w += $5; t += $6 }
		END { out() }' >direct_summary.txt
	# System calls per call, the gaps' sleeps left out: "method calls syscalls per_call by_name".
	if [ -s direct_syscalls.csv ]; then
		awk -F, 'NR > 1 {
			if (!(($1, $2) in seen)) { seen[$1, $2] = 1; calls[$2] += $3; if (!($2 in ord)) { ord[$2] = ++n; name[n] = $2 } }
			if ($4 == "clock_nanosleep" || $4 == "nanosleep" || $4 == "(none)") next
			cnt[$2] += $5; by[$2, $4] += $5; if (!(($2, $4) in sk)) { sk[$2, $4] = 1; list[$2] = list[$2] " " $4 } }
		END { for (i = 1; i <= n; i++) { m = name[i]; d = ""
			k = split(list[m], a, " ")
			for (j = 1; j <= k; j++) d = d (d ? ", " : "") sprintf("%s %.2f", a[j], by[m, a[j]] / calls[m])
			printf "%s %d %d %.3f %s\n", m, calls[m], cnt[m], calls[m] ? cnt[m] / calls[m] : 0, d ? d : "-" } }' \
			direct_syscalls.csv >direct_syscalls_summary.txt
	fi
	{
		echo "# Direct evidence"
		echo
		echo "The daemon's main and doorbell threads and the caller (\`barrierctl bench --cpu\`) on the first CPU;"
		echo "*direct*: \`barrierd_barrier()\` on a handle that credits CPUs from the slots; *file*: the same on a"
		echo "handle opened with \`BARRIERD_OPEN_NO_DIRECT\` (doorbell, the daemon's credit pass, FUTEX_WAKE)."
		echo "*idle*: nothing else runs, methods interleaved call by call, a random 0–10 ms gap before each"
		echo "call; *back-to-back*: direct and file alone, no gap; *half-loaded*: a nice-0 spinner on the"
		echo "second CPU. PRIVATE_EXPEDITED: barrierctl's sibling threads spin on the other CPUs during its"
		echo "calls (it has something to interrupt); GLOBAL_EXPEDITED: registered, it interrupts only CPUs"
		echo "running registered processes (none here but barrierctl): not a global barrier. µs, nearest rank,"
		echo "repetitions pooled; IPIs per call: /proc/interrupts rows summed over every CPU around each call."
		echo
		echo "| config | method | calls | p50 | p90 | p99 | p99.9 | max | CAL | RES | IWI | TLB |"
		echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		for cfg in idle back-to-back half-loaded; do
			awk -v cfg="$cfg" "$awk_fmt"'{ split($1, k, "/") } k[1] == cfg {
				printf "| %s | %s | %d | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f |\n",
					k[1], k[2], $2, f($3), f($4), f($5), f($6), f($7), $8, $9, $10, $11 }' direct_summary.txt
		done
		echo
		echo "IPIs per direct call by how long it took: under 20 µs it passed at the first look, on the slots"
		echo "alone (no ring, no sleep); the others waited for a CPU (a busy one, or one that had just left"
		echo "idle) and rang the doorbell:"
		echo
		echo "| config | direct calls | under 20 µs | CAL | RES | IWI | TLB | 20 µs or more | CAL | RES | IWI | TLB |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		awk -F, 'NR > 1 && $3 == "direct" { k = $5 < 20000 ? "f" : "s"; if (!($1 in o)) o[$1] = ++n; name[o[$1]] = $1
				c[$1, k]++; for (i = 6; i <= 9; i++) x[$1, k, i] += $i }
			function q(cf, k, i) { return c[cf, k] ? sprintf("%.3f", x[cf, k, i] / c[cf, k]) : "-" }
			END { for (j = 1; j <= n; j++) { cf = name[j]
				printf "| %s | %d | %d | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", cf, c[cf, "f"] + c[cf, "s"],
					c[cf, "f"], q(cf, "f", 6), q(cf, "f", 7), q(cf, "f", 8), q(cf, "f", 9),
					c[cf, "s"], q(cf, "s", 6), q(cf, "s", 7), q(cf, "s", 8), q(cf, "s", 9) } }' direct.csv
		if [ -s direct_syscalls_summary.txt ]; then
			echo
			echo "System calls per call (\`strace -f\` around \`bench_direct calls\`, counted between its markers:"
			echo "after the open and a warm-up call; the random gaps' \`clock_nanosleep\` left out). The caller and"
			echo "strace on the first CPU, the rest idle:"
			echo
			echo "| method | calls | system calls | per call | by name, per call |"
			echo "|---|---:|---:|---:|---|"
			awk '{ d = $5; for (i = 6; i <= NF; i++) d = d " " $i
				printf "| %s | %d | %d | %.2f | %s |\n", $1, $2, $3, $4, d }' direct_syscalls_summary.txt
		fi
		if [ "$(wc -l <direct_passed.csv 2>/dev/null || echo 0)" -gt 1 ]; then
			echo
			echo "\`barrierd_passed()\` per call, ns (\`bench_direct passed\`: batches of 1000 calls, the kinds"
			echo "rotating batch by batch, median and fastest batch; *already*: a stamp that has passed;"
			echo "*fresh*: \`barrierd_stamp_ns()\` then \`barrierd_passed()\` on it, the stamp's median subtracted;"
			echo "*stamp*: \`barrierd_stamp_ns()\` alone). *passed*: the share of calls that returned true."
			echo
			echo "| rep | handle | kind | ns per call (median batch) | fastest batch | passed |"
			echo "|---:|---|---|---:|---:|---:|"
			awk -F, 'NR > 1 { printf "| %s | %s | %s | %.1f | %.1f | %s |\n", $1, $2, $3, $4, $5,
				$3 == "stamp" ? "-" : sprintf("%.1f %%", 100 * $6) }' direct_passed.csv
		fi
		if [ -s direct_credits.csv ]; then
			echo
			echo "How direct calls credited each CPU (the library's credit observer, each CPU counted once per"
			echo "call by its first credit; *file*: never credited from the slots, passed by the daemon's"
			echo "published words; *alone*: the call's only CPU not credited idle or own, the one it waited for):"
			echo
			echo "| config | rep | CPU | idle | own | stamp | file | alone |"
			echo "|---|---:|---:|---:|---:|---:|---:|---:|"
			awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }' direct_credits.csv
			echo
			echo "| config | rep | direct calls | every CPU idle or own | waited for one CPU | for more | waited for the busy CPU only |"
			echo "|---|---:|---:|---:|---:|---:|---:|"
			awk -F, 'NR > 1 { printf "| %s | %s | %d | %d | %d | %d | %s |\n", $1, $2, $3, $4, $5, $6,
				$7 == "-" ? "-" : sprintf("%d (CPU %s)", $8, $7) }' direct_calls.csv
		fi
	} >direct.md
	put direct_p50 "$(awk '$1 == "idle/direct" {print $3}' direct_summary.txt)"
	put direct_p99 "$(awk '$1 == "idle/direct" {print $5}' direct_summary.txt)"
	put direct_p999 "$(awk '$1 == "idle/direct" {print $6}' direct_summary.txt)"
	put direct_ipis "$(awk '$1 == "idle/direct" {printf "%.3f", $8 + $9 + $10 + $11}' direct_summary.txt)"
	put direct_fast_ipis "$(awk -F, 'NR > 1 && $1 == "idle" && $3 == "direct" && $5 < 20000 {n++; t += $6 + $7 + $8 + $9} END {if (n) printf "%.3f", t / n}' direct.csv)"
	put direct_fast_share "$(awk -F, 'NR > 1 && $1 == "idle" && $3 == "direct" {n++; if ($5 < 20000) f++} END {if (n) printf "%.1f %%", 100 * f / n}' direct.csv)"
	put direct_b2b_p50 "$(awk '$1 == "back-to-back/direct" {print $3}' direct_summary.txt)"
	put direct_file_p50 "$(awk '$1 == "idle/file" {print $3}' direct_summary.txt)"
	put direct_pexp_p50 "$(awk '$1 == "idle/private-expedited" {print $3}' direct_summary.txt)"
	put direct_half_p50 "$(awk '$1 == "half-loaded/direct" {print $3}' direct_summary.txt)"
	put direct_half_p99 "$(awk '$1 == "half-loaded/direct" {print $5}' direct_summary.txt)"
	put direct_half_mb_p50 "$(awk '$1 == "half-loaded/membarrier-global" {print $3}' direct_summary.txt)"
	put direct_half_busy "$(awk -F, 'NR > 1 && $1 == "half-loaded" {n += $3; b += $8} END {if (n) printf "%d of %d", b, n}' direct_calls.csv 2>/dev/null)"
	if [ -s direct_syscalls_summary.txt ]; then
		put direct_sys "$(awk '$1 == "direct" {print $4}' direct_syscalls_summary.txt)"
		put direct_sys_file "$(awk '$1 == "file" {print $4}' direct_syscalls_summary.txt)"
		put direct_sys_pexp "$(awk '$1 == "private-expedited" {print $4}' direct_syscalls_summary.txt)"
	fi
	awk -F, 'NR > 1 && $1 != "back-to-back" {print $1 "/" $3, $5}' direct.csv | cdf_files direct
fi

# ---- 14: primitives ---------------------------------------------------------------------------------

# "KEY VALUE" lines -> "KEY median" (nearest rank; values may be fractional).
median_by() {
	sort -t' ' -k1,1 -k2,2g | awk '
		function out() { if (n) print key, v[int((n + 1) / 2)]; n = 0 }
		$1 != key { out(); key = $1 }
		{ v[++n] = $2 }
		END { out() }'
}
get() { # FILE KEY [FIELD]: the FIELD-th word (default 2) of the line whose first is KEY
	awk -v k="$2" -v i="${3:-2}" '$1 == k {print $i; exit}' "$1" 2>/dev/null
}
verdict() { # awk condition on a b
	awk -v a="${2:-}" -v b="${3:-}" "BEGIN { if (a == \"\" || b == \"\") { print \"n/a\"; exit } print ($1) ? \"**hit**\" : \"**miss**\" }"
}

if [ -s prim_ec_inc.csv ] || [ -s prim_read.csv ] || [ -s prim_gp.csv ]; then
	: >prim_targets.txt
	{
		echo "# Primitives against ck and liburcu"
		echo
		echo "bench/run.sh section 14 (docs/PERFORMANCE.md §11 has the method). barrierd's event counts"
		echo "(\`barrierd_ec\`, *bd*) against Concurrency Kit's \`ck_ec64\` (*ck*, Debian libck-dev, on futex"
		echo "operations of the benchmark's), single (*sp*) and multiple (*mp*) producer; barrierd's epochs"
		echo "(*bd-epoch*: direct evidence; *bd-epoch-file*: a \`BARRIERD_OPEN_NO_DIRECT\` handle) and hazard"
		echo "pointers (*bd-hp*) against \`ck_epoch\` and liburcu's memb, mb and qsbr flavours (Debian"
		echo "liburcu-dev, the inline read side: \`_LGPL_SOURCE\`)."
		if [ -s loadavg.csv ] && grep -q '^prim,' loadavg.csv; then
			echo
			echo "The machine's busy share (all CPUs) in the second before each measurement, and the 1-minute"
			echo "load average: $(awk -F, '$1 == "prim" { printf "%s%s %s %% (%s)", s, $2, $8, $5; s = "; " }' loadavg.csv)."
		fi
		if [ -s prim_ec_inc.csv ]; then
			awk -F, 'NR > 1 {print $1 "/" $2, $5}' prim_ec_inc.csv | median_by >prim_inc_cyc.txt
			awk -F, 'NR > 1 {print $1 "/" $2, $6}' prim_ec_inc.csv | median_by >prim_inc_ns.txt
			[ -s prim_ec_wake.csv ] && awk -F, 'NR > 1 {print $1, $4}' prim_ec_wake.csv | median_by >prim_wake_cyc.txt
			: >prim_insn.txt
			if [ -s prim_ec_insn.csv ]; then
				awk -F, 'NR > 1 { ir[$1] = $3; n = $2 }
					END { for (f in ir) if (f != "insn_empty") { k = f; sub(/^insn_/, "", k); gsub(/_/, "-", k)
						printf "%s %.2f\n", k, (ir[f] - ir["insn_empty"]) / n } }' prim_ec_insn.csv | sort >prim_insn.txt
			fi
			echo
			echo "## Event counts: the increment"
			echo
			echo "Cycles (RDTSC) and ns per increment in a loop of $(awk -F, 'NR == 2 {print $4}' prim_ec_inc.csv) on the first CPU,"
			echo "median of $(awk -F, 'NR > 1 {print $3}' prim_ec_inc.csv | sort -u | wc -l) repetitions, kinds rotating: *no waiter*; *active waiter*: a thread on the"
			echo "second CPU looping on wait() for the next value (it shares the line and sets the flag now"
			echo "and then). *Instructions*: callgrind, (Ir of a loop of N increments − Ir of the empty loop) / N."
			echo "*Waking a blocked waiter*: the one increment that finds the flag and wakes a waiter asleep"
			echo "in the kernel (from the wake-latency samples below; the system call included)."
			echo "Empty loop: $(get prim_inc_cyc.txt empty/none) cycles per iteration."
			echo
			echo "| kind | no waiter: cycles | ns | instructions | active waiter: cycles | ns | waking a blocked waiter: cycles |"
			echo "|---|---:|---:|---:|---:|---:|---:|"
			for k in bd-sp ck-sp bd-mp ck-mp; do
				echo "| $k | $(get prim_inc_cyc.txt "$k/none") | $(get prim_inc_ns.txt "$k/none") | $(get prim_insn.txt "$k") | $(get prim_inc_cyc.txt "$k/active") | $(get prim_inc_ns.txt "$k/active") | $(get prim_wake_cyc.txt "$k") |"
			done
			bi=$(get prim_insn.txt bd-sp) ci=$(get prim_insn.txt ck-sp)
			echo "sp-insn|our SP increment, no waiter: instructions ≤ ck_ec SP's|$bi against $ci|$(verdict 'a <= b + 0.01' "$bi" "$ci")" >>prim_targets.txt
			put prim_insn_bd "$bi"
			put prim_insn_ck "$ci"
			put prim_insn_verdict "$(verdict 'a <= b + 0.01' "$bi" "$ci")"
		fi
		if [ -s prim_ec_wake.csv ]; then
			awk -F, 'NR > 1 {print $1, $3}' prim_ec_wake.csv | summarize >prim_wake_summary.txt
			echo
			echo "## Event counts: wake latency"
			echo
			echo "The producer (first CPU) increments at t0 once the waiter (second CPU) is asleep in the kernel"
			echo "on the word (ours: in its indefinite block; ck: in any of its futex sleeps) and a random"
			echo "0–1 ms has passed; t1 is the waiter's clock once wait() returns. µs, nearest rank."
			echo
			echo "| kind | samples | min | p50 | p90 | p99 | max |"
			echo "|---|---:|---:|---:|---:|---:|---:|"
			awk "$awk_fmt"'{ printf "| %s | %d | %s | %s | %s | %s | %s |\n", $1, $2, f($3), f($4), f($5), f($6), f($7) }' prim_wake_summary.txt
			nb=$(awk -F, 'NR > 1 && $1 ~ /^bd/ && $5 != 2' prim_ec_wake.csv | wc -l)
			[ "$nb" -gt 0 ] && echo && echo "$nb of ours were woken from a sleep with a timeout (the indefinite block not seen within a second)."
			put prim_wake_bd_sp_p50 "$(get prim_wake_summary.txt bd-sp 4)"
			put prim_wake_ck_sp_p50 "$(get prim_wake_summary.txt ck-sp 4)"
		fi
		if [ -s prim_ec_block.csv ]; then
			echo
			echo "## Event counts: reaching the indefinite block, and the waiter's CPU"
			echo
			echo "Watched from outside every 20 µs: *flag* is the first sighting of the sleepers flag in the"
			echo "word, *block* the first sighting of the waiter asleep in FUTEX_WAIT (or futex_waitv) with no"
			echo "timeout (/proc/self/task/TID/syscall), both from the wait() call; ours blocks once its barrier"
			echo "has passed, ck_ec after its backoff has reached a second. The waiter's CPU time over the whole"
			echo "hold (CLOCK_THREAD_CPUTIME_ID; getrusage(RUSAGE_THREAD) beside it). ms, per sample."
			echo
			echo "| kind | sample | hold | flag | block | waiter CPU (µs) | getrusage (µs) | CPU share | wake (µs) |"
			echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
			awk -F, 'NR > 1 { printf "| %s | %s | %.0f | %s | %s | %.0f | %s | %.4f %% | %.1f |\n", $1, $2, $3 / 1e6,
				$4 < 0 ? "not seen" : sprintf("%.3f", $4 / 1e6), $5 < 0 ? "not seen" : sprintf("%.3f", $5 / 1e6),
				$6 / 1e3, $7, 100 * $6 / $3, $8 / 1e3 }' prim_ec_block.csv | sort -t'|' -k2,2 -k3,3n
			bb=$(awk -F, 'NR > 1 && $1 == "bd" && $5 >= 0 {print "x", $5}' prim_ec_block.csv | median_by | cut -d' ' -f2)
			cb=$(awk -F, 'NR > 1 && $1 == "ck" && $5 >= 0 {print "x", $5}' prim_ec_block.csv | median_by | cut -d' ' -f2)
			bmiss=$(awk -F, 'NR > 1 && $1 == "bd" && $5 < 0' prim_ec_block.csv | wc -l)
			r=$(awk -v a="$cb" -v b="$bb" 'BEGIN { if (a != "" && b > 0) printf "%.0f", a / b }')
			bcpu=$(awk -F, 'NR > 1 && $1 == "bd" {c += $6; h += $3} END {if (h) printf "%.1f", c / (h / 1e9) / 1e3}' prim_ec_block.csv)
			ccpu=$(awk -F, 'NR > 1 && $1 == "ck" {c += $6; h += $3} END {if (h) printf "%.1f", c / (h / 1e9) / 1e3}' prim_ec_block.csv)
			echo
			echo "Median time to the indefinite block: ours $(awk -v x="$bb" 'BEGIN {printf "%.3f", x / 1e6}') ms, ck_ec $(awk -v x="$cb" 'BEGIN {printf "%.1f", x / 1e6}') ms: **${r:-n/a}×**"
			echo "shorter$([ "$bmiss" -gt 0 ] && echo " ($bmiss of ours never seen blocked)"). Waiter CPU per second of waiting: ours $bcpu µs, ck_ec $ccpu µs."
			echo "block|a waiter's indefinite block ≥ 100× sooner than ck_ec's|$(awk -v x="$bb" 'BEGIN {printf "%.3f", x / 1e6}') ms against $(awk -v x="$cb" 'BEGIN {printf "%.0f", x / 1e6}') ms (${r:-n/a}×)|$(verdict 'a >= 100' "$r" "$cb")" >>prim_targets.txt
			put prim_block_bd "$bb"
			put prim_block_ck "$cb"
			put prim_block_ratio "$r"
			put prim_block_verdict "$(verdict 'a >= 100' "$r" "$cb")"
			put prim_cpu_bd "$bcpu"
			put prim_cpu_ck "$ccpu"
		fi
		if [ -s prim_read.csv ]; then
			# Per repetition the mean over the threads, then the median over repetitions.
			awk -F, 'NR > 1 { s[$1 "/" $2 "/" $3] += $5; c[$1 "/" $2 "/" $3]++ }
				END { for (k in s) { split(k, a, "/"); print a[1] "/" a[2], s[k] / c[k] } }' prim_read.csv |
				median_by >prim_read_summary.txt
			echo
			echo "## Reclamation: the read side"
			echo
			echo "ns per enter/exit pair (a section: load the shared pointer, read the object), sections back to"
			echo "back in a tight loop; 1 thread on the first CPU, 2 threads on both; per repetition the mean"
			echo "over the threads, median over $(awk -F, 'NR > 1 {print $3}' prim_read.csv | sort -u | wc -l) repetitions, schemes rotating. qsbr's readers announce a"
			echo "quiescent state every 1024 sections. *vs memb*: the scheme's figure over urcu-memb's."
			echo
			echo "| scheme | 1 thread | vs memb | 2 threads | vs memb |"
			echo "|---|---:|---:|---:|---:|"
			m1=$(get prim_read_summary.txt urcu-memb/1) m2=$(get prim_read_summary.txt urcu-memb/2)
			for i in bd-epoch bd-hp ck-epoch urcu-memb urcu-mb urcu-qsbr bd-epoch-file; do
				a=$(get prim_read_summary.txt "$i/1") b=$(get prim_read_summary.txt "$i/2")
				[ -n "$a" ] || continue
				awk -v i="$i" -v a="$a" -v b="$b" -v m1="$m1" -v m2="$m2" 'BEGIN {
					printf "| %s | %.2f | %s | %.2f | %s |\n", i, a, m1 ? sprintf("%.2f", a / m1) : "-", b, m2 ? sprintf("%.2f", b / m2) : "-" }'
			done
			r2() { [ -n "${1:-}" ] && awk -v x="$1" 'BEGIN {printf "%.2f", x}'; }
			m1=$(r2 "$m1") m2=$(r2 "$m2")
			e1=$(r2 "$(get prim_read_summary.txt bd-epoch/1)") e2=$(r2 "$(get prim_read_summary.txt bd-epoch/2)")
			c1=$(r2 "$(get prim_read_summary.txt ck-epoch/1)") c2=$(r2 "$(get prim_read_summary.txt ck-epoch/2)")
			echo "read-memb|bd-epoch read side within 10 % of urcu-memb's (1 / 2 threads)|$e1 / $e2 ns against $m1 / $m2 ns|$(verdict 'a <= 1.1 * b' "$e1" "$m1") / $(verdict 'a <= 1.1 * b' "$e2" "$m2")" >>prim_targets.txt
			echo "read-ck|bd-epoch read side below ck_epoch's (1 / 2 threads)|$e1 / $e2 ns against $c1 / $c2 ns|$(verdict 'a < b' "$e1" "$c1") / $(verdict 'a < b' "$e2" "$c2")" >>prim_targets.txt
			put prim_read_bd1 "$e1"
			put prim_read_memb1 "$m1"
			put prim_read_ck1 "$c1"
			put prim_read_verdict "$(verdict 'a <= 1.1 * b' "$e1" "$m1") / $(verdict 'a < b' "$e1" "$c1")"
		fi
		if [ -s prim_gp.csv ]; then
			awk -F, 'NR > 1 {print $3 "-" $2 "/" $1, $5, $6, $7, $8, $9}' prim_gp.csv | sort -t' ' -k1,1 -k2,2n | awk '
				function rank(p,  k) { k = int(n * p); if (k < n * p) k++; return k < 1 ? 1 : k > n ? n : k }
				function out() { if (!n) return
					printf "%s %d %s %s %s %s %.3f %.3f %.3f %.3f %.3f %.1f\n", key, n, v[rank(0.5)], v[rank(0.9)],
						v[rank(0.99)], v[n], (c + r + w + t) / n, c / n, r / n, w / n, t / n, 100 * z / n
					n = c = r = w = t = z = 0 }
				$1 != key { out(); key = $1 }
				{ v[++n] = $2; c += $3; r += $4; w += $5; t += $6; z += ($3 + $4 + $5 + $6 == 0) }
				END { out() }' >prim_gp_summary.txt
			echo
			echo "## Reclamation: grace periods"
			echo
			echo "The writer on the first CPU: a random 0–2 ms sleep, replace the object, synchronize (timed),"
			echo "free the old one. Readers: threads each doing a section then sleeping a random 0–1 ms (qsbr:"
			echo "offline while asleep). *loaded*: a nice-0 spinner (another process) on the second CPU; *pinned*:"
			echo "loaded, and the daemon's main and doorbell threads on the first CPU with the writer. bd-hp's"
			echo "grace period is \`barrierd_hp_reclaim()\` right after retiring the old object (the barrier, the scan"
			echo "and the free). IPIs per grace period:"
			echo "/proc/interrupts CAL+RES+IWI+TLB over every CPU, read just before and after each call. µs."
			echo
			echo "*0 IPIs*: the share of grace periods during which no CPU took any of the four."
			echo
			echo "| load | readers | scheme | calls | p50 | p90 | p99 | max | IPIs | CAL | RES | IWI | TLB | 0 IPIs |"
			echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			for c in idle-1 idle-2 loaded-1 loaded-2 pinned-2; do
				awk -v c="$c" "$awk_fmt"'{ split($1, k, "/") } k[1] == c { split(c, cr, "-")
					printf "| %s | %s | %s | %d | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s %% |\n",
						cr[1], cr[2], k[2], $2, f($3), f($4), f($5), f($6), $7, $8, $9, $10, $11, $12 }' prim_gp_summary.txt
			done
			# Per load: the mean IPIs per bd-epoch grace period (the worst over the reader counts)
			# and the share with none; under 0.1 per grace period is this VM's background (§16).
			ipi="" ipiv=""
			for c in idle loaded pinned; do
				x=$(awk -v c="$c" '$1 ~ "^" c "-[0-9]+/bd-epoch$" && $7 >= m {m = $7; z = $12; f = 1} END {if (f) printf "%.2f %s", m, z}' prim_gp_summary.txt)
				[ -n "$x" ] || continue
				mb=$(awk -v c="$c" '$1 ~ "^" c "-[0-9]+/urcu-memb$" && $7 >= m {m = $7; f = 1} END {if (f) printf "%.2f", m}' prim_gp_summary.txt)
				ipi="$ipi${ipi:+; }$c ${x% *} (${x#* } % with none; urcu-memb ${mb:-n/a})"
				ipiv="$ipiv${ipiv:+ / }$c $(verdict 'a < 0.1' "${x% *}" 0)"
			done
			echo "gp-ipi|bd-epoch grace periods with 0 IPIs (mean per grace period, worst reader count)|$ipi|$ipiv" >>prim_targets.txt
			for r in 1 2; do
				e=$(get prim_gp_summary.txt "idle-$r/bd-epoch" 3) m=$(get prim_gp_summary.txt "idle-$r/urcu-memb" 3)
				[ -n "$e" ] && [ -n "$m" ] || continue
				echo "gp-idle-$r|idle, $r reader(s), direct evidence: bd-epoch grace period no slower than urcu-memb's (p50)|$(us "$e") µs against $(us "$m") µs|$(verdict 'a <= b' "$e" "$m")" >>prim_targets.txt
				put "prim_gp_bd_$r" "$e"
				put "prim_gp_memb_$r" "$m"
				put "prim_gp_verdict_$r" "$(verdict 'a <= b' "$e" "$m")"
			done
			put prim_gp_ipi "$ipi"
			put prim_gp_ipi_verdict "$ipiv"
		fi
		if [ -s prim_mem.csv ]; then
			echo
			echo "## Reclamation: memory held by retired objects"
			echo
			echo "The writer replaces the object and retires the old one $(awk -F, 'NR == 2 {print $3}' prim_mem.csv) times a second for"
			echo "$(awk -F, 'NR == 2 {print $4}' prim_mem.csv) s, 2 sleepy readers; after each retirement the objects retired and not yet freed"
			echo "are counted ($(awk -F, 'NR == 2 {print $9}' prim_mem.csv) bytes each). Batches: ours 64 (the default), ck_epoch polled every 64"
			echo "retirements, liburcu's call_rcu worker. *left*: after the final drain (0: everything freed)."
			echo
			echo "| scheme | updates | mean held | p99 | max | KiB at max | left |"
			echo "|---|---:|---:|---:|---:|---:|---:|"
			awk -F, 'NR > 1 { printf "| %s | %d | %.1f | %d | %d | %.1f | %d |\n", $1, $5, $6, $7, $8, $8 * $9 / 1024, $10 }' prim_mem.csv
		fi
		if [ -s prim_targets.txt ]; then
			echo
			echo "## Targets"
			echo
			echo "| target | measured | verdict |"
			echo "|---|---|---|"
			awk -F'|' '{ printf "| %s | %s | %s |\n", $2, $3, $4 }' prim_targets.txt
		fi
	} >prim.md
	[ -s prim_ec_wake.csv ] && awk -F, 'NR > 1 {print $1, $3}' prim_ec_wake.csv | cdf_files prim_wake
	[ -s prim_gp.csv ] && awk -F, 'NR > 1 {print $3 "-" $2 "/" $1, $5}' prim_gp.csv | cdf_files prim_gp
fi

# ---- summary -------------------------------------------------------------------------------------------

# shellcheck disable=SC1091
. ./summary.env
v() { # NAME [default]: the value or "n/a"
	local x=${!1:-}
	echo "${x:-${2:-n/a}}"
}
ms() { # ns -> ms
	[ -n "${1:-}" ] && [ "$1" != n/a ] && awk -v x="$1" 'BEGIN {printf "%.3f", x / 1e6}' || echo n/a
}
ratio() { # a b -> a/b
	[ -n "${1:-}" ] && [ -n "${2:-}" ] && [ "$1" != n/a ] && [ "$2" != n/a ] && [ "$2" != 0 ] &&
		awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a / b}' || echo n/a
}
ok() { # awk condition on a b
	awk -v a="${2:-}" -v b="${3:-}" "BEGIN { if (a == \"\" || a == \"n/a\") { print \"n/a\"; exit } print ($1) ? \"met\" : \"**not met**\" }"
}
{
	echo "# barrierd benchmark summary"
	echo
	[ -f machine.txt ] && sed 's/^/    /' machine.txt
	echo
	echo "| what | target (docs/PERFORMANCE.md §2) | measured | verdict |"
	echo "|---|---|---|---|"
	if [ -s pinned.csv ]; then
		pp50=$(v lat_pinned_bd_p50) pp99=$(v lat_pinned_bd_p99)
		echo "| barrier latency, loaded, **pinned** (waiter + daemon on one CPU, every other CPU busy): p50 / p99 | ≤ 1 ms / ≤ 5 ms; not worse than before | $(ms "$pp50") / $(ms "$pp99") ms ($(v lat_pinned_bd_range)); membarrier $(ms "$(v lat_pinned_mb_p50)") / $(ms "$(v lat_pinned_mb_p99)") ms | $(ok 'a <= 1e6' "$pp50") / $(ok 'a <= 5e6' "$pp99") |"
		echo "| the same unpinned (2-CPU artefact: the daemon's wake-ups are evidence for the other CPU) | (reported) | $(ms "$(v lat_unpinned_bd_p50)") / $(ms "$(v lat_unpinned_bd_p99)") ms ($(v lat_unpinned_bd_range)) | - |"
	fi
	if [ -s legacy.csv ]; then
		for cfg in unpinned pinned_busy1 pinned_idle1; do
			echo "| original-layout client (bench_legacy), $cfg: membarrier's p50/p90/p99 over its own (min over repetitions); max below membarrier's | ≥ 2× each; max below | $(v "legacy_${cfg}") ; vtime passes with the ns word not past T: $(v "legacy_${cfg}_vfail") | see legacy.md |"
		done
	fi
	if [ -s cost.csv ]; then
		echo "| daemon CPU, idle machine, no waiter (section 11, per repetition) | ≤ 0.1 % | $(v cost_idle_no_waiter_cpu) % | $(ok 'a <= 0.1' "$(v cost_idle_no_waiter_cpu_max)") |"
		for w in loaded_pinned loaded_unpinned idle_pinned idle_unpinned; do
			echo "| a waiter doing 100 barriers/s, $w: daemon CPU / passes per barrier / signals per barrier per busy CPU | ≤ 1 % / ≤ 1.1 / ≤ 1 (loaded) | $(v "cost_${w}_cpu") % / $(v "cost_${w}_ppb") / $(v "cost_${w}_spbc") | $(ok 'a <= 1' "$(v "cost_${w}_cpu_max")") / $(ok 'a <= 1.1' "$(v "cost_${w}_ppb_max")") / $(ok 'a <= 1' "$(v "cost_${w}_spbc_max")") |"
		done
	fi
	if [ -s latency.csv ]; then
		lp50=$(v lat_loaded_bd_p50) lp99=$(v lat_loaded_bd_p99)
		echo "| barrier latency, loaded, unpinned (section 1; a 2-CPU artefact, see pinned): p50 / p99 | ≤ 1 ms / ≤ 5 ms | $(ms "$lp50") / $(ms "$lp99") ms | $(ok 'a <= 1e6' "$lp50") / $(ok 'a <= 5e6' "$lp99") |"
		echo "| loaded, faster than membarrier(GLOBAL) at p50 / p99 | ≥ 10× / ≥ 3× | $(ratio "$(v lat_loaded_mb_p50)" "$lp50")× / $(ratio "$(v lat_loaded_mb_p99)" "$lp99")× (membarrier $(ms "$(v lat_loaded_mb_p50)") / $(ms "$(v lat_loaded_mb_p99)") ms) | $(ok 'a >= 10' "$(ratio "$(v lat_loaded_mb_p50)" "$lp50")") / $(ok 'a >= 3' "$(ratio "$(v lat_loaded_mb_p99)" "$lp99")") |"
		ip50=$(v lat_idle_bd_p50) ip99=$(v lat_idle_bd_p99)
		echo "| barrier latency, idle: p50 / p99 | ≤ 0.2 ms / ≤ 5 ms | $(ms "$ip50") / $(ms "$ip99") ms | $(ok 'a <= 2e5' "$ip50") / $(ok 'a <= 5e6' "$ip99") |"
		echo "| idle, faster than membarrier(GLOBAL) at p50 | ≥ 25× | $(ratio "$(v lat_idle_mb_p50)" "$ip50")× (membarrier $(ms "$(v lat_idle_mb_p50)") / $(ms "$(v lat_idle_mb_p99)") ms) | $(ok 'a >= 25' "$(ratio "$(v lat_idle_mb_p50)" "$ip50")") |"
		op50=$(v orig_idle_p50) op99=$(v orig_idle_p99) omb=$(v orig_idle_mb_p50)
		echo "| idle, original-layout client (no doorbell): p50 / p99 | ≤ membarrier p50 / ≤ 20 ms | $(ms "$op50") (membarrier $(ms "$omb")) / $(ms "$op99") ms | $(ok 'a <= b' "$op50" "$omb") / $(ok 'a <= 2e7' "$op99") |"
	fi
	if [ -s notify.csv ]; then
		for cond in idle loaded; do
			n50=$(v "notify_${cond}_p50") n99=$(v "notify_${cond}_p99")
			echo "| notification latency, $cond: p50 / p99 | ≤ 50 µs / ≤ 250 µs | $(us "$n50") / $(us "$n99") µs | $(ok 'a <= 5e4' "$n50") / $(ok 'a <= 2.5e5' "$n99") |"
		done
	fi
	if [ -s ipi.csv ]; then
		echo "| IPIs per barrier on CPU 1, waiter + daemon pinned to CPU 0, CAL/RES/IWI/TLB (raw) | 0 (expedited: 1) | CPU 1 idle: $(v ipi_pinned_idle); CPU 1 busy: $(v ipi_pinned_busy) (GLOBAL_EXPEDITED $(v ipi_exp_busy), PRIVATE_EXPEDITED $(v ipi_pexp_busy)) | see ipi.md |"
		echo "| the doorbell's IPI (waiter CPU 0, daemon alone on CPU 1) | named | CPU 1 CAL/RES/IWI/TLB (raw) $(v ipi_split_daemon) per barrier; traced, sent by the waiter: $(v ipi_doorbell) | see ipi.md |"
	fi
	if [ -s bpf_cost.csv ]; then
		echo "$(v bpf_rows)" | tr ';' '\n' | while IFS='|' read -r tp prog hits nsph _lo _hi; do
			[ -n "$tp" ] || continue
			bt=$tp
			case $tp in *idle\ tracking*) bt=sched/sched_switch ;; esac
			b=$(echo "$(v bpf_base)" | tr ';' '\n' | awk -F'|' -v t="$bt" '$1 == t {print $4}')
			r=$(ratio "$nsph" "$b")
			x=$(echo "$(v bpf_xbase)" | tr ';' '\n' | awk -F'|' -v t="$bt" '$1 == t {print $4}')
			echo "| BPF cost per hit, $prog on $tp | ≤ 1.25 × baseline | $nsph ns vs $b ns (${r}×); xchg baseline ${x:-n/a} ns | $(ok 'a <= 1.25' "$r") |"
		done
	fi
	if [ -s getpid.csv ]; then
		echo "| getpid delta: empty program / daemon default / + raw_syscalls/sys_enter | reported (empty 31–61 ns, original +85 ns) | $(v getpid_empty_program) / $(v getpid_daemon_default) / $(v getpid_daemon_sys_enter) ns (base $(v getpid_none) ns) | reported |"
	fi
	if [ -s daemon_cpu.csv ]; then
		echo "| daemon CPU, idle machine, no waiters | ≤ 0.1 % | $(v cpu_idle_no_waiters) % | $(ok 'a <= 0.1' "$(v cpu_idle_no_waiters)") |"
		echo "| daemon CPU, loaded: no waiters / a waiter doing 100 barriers/s | ≤ 0.5 % | $(v cpu_loaded_no_waiters) % / $(v cpu_loaded_waiter_100ps) % | $(ok 'a <= 0.5' "$(v cpu_loaded_no_waiters)") / $(ok 'a <= 0.5' "$(v cpu_loaded_waiter_100ps)") |"
		echo "| daemon CPU, idle machine, a waiter doing 100 barriers/s | (none) | $(v cpu_idle_waiter_100ps) % ($(v bar_idle_waiter_100ps) µs per barrier) | - |"
		echo "| daemon CPU, context-switching load (200 µs sleeper per CPU): no waiters / a waiter doing 100 barriers/s | ≤ 0.5 % (loaded) | $(v cpu_switching_no_waiters) % / $(v cpu_switching_waiter_100ps) % | $(ok 'a <= 0.5' "$(v cpu_switching_no_waiters)") / $(ok 'a <= 0.5' "$(v cpu_switching_waiter_100ps)") |"
		echo "| daemon CPU, a waiter looping on barriers back to back: idle / loaded | (none) | $(v cpu_idle_waiter_loop) % ($(v bar_idle_waiter_loop) µs per barrier) / $(v cpu_loaded_waiter_loop) % ($(v bar_loaded_waiter_loop) µs per barrier) | - |"
		echo "| daemon CPU under a doorbell flood (nobody) | bounded by --max-credit-rate (default 1000/s, bursts of 32) | $(v cpu_flood_default_rate) % at $(v cpass_flood_default_rate) credit passes/s; $(v cpu_flood_rate_10000) % at $(v cpass_flood_rate_10000)/s with the cap at 10 000 | passes: $(ok 'a <= 1032' "$(v cpass_flood_default_rate)"); CPU: see daemon_cpu.md |"
		echo "| a waiter's barrier (100/s) during the flood: p50 / p99 | (none) | default cap: $(v flood_lat_flood_default_rate); cap 10 000: $(v flood_lat_flood_rate_10000) | - |"
	fi
	if [ -s nudge.csv ]; then
		echo "| nudges, pinned loaded, --nudge-after 0.5: p99 / p99.9 | ≤ 1 ms / ≤ 2 ms | $(ms "$(v nudge_0_5_p99)") / $(ms "$(v nudge_0_5_p999)") ms | $(ok 'a <= 1e6' "$(v nudge_0_5_p99)") / $(ok 'a <= 2e6' "$(v nudge_0_5_p999)") |"
		echo "| nudges, pinned loaded, default --nudge-after: p99 no worse than off | ≤ off | $(ms "$(v nudge_default_p99)") ms (off $(ms "$(v nudge_0_p99)") ms) | $(ok 'a <= b * 1.05' "$(v nudge_default_p99)" "$(v nudge_0_p99)") |"
		echo "| nudges per barrier (an upper bound on the share of barriers that nudge): idle at 0.5 ms / loaded at the default | ≤ 0.01 / ≤ 0.01 | $(v nudge_0_5_nudged_idle) / $(v nudge_default_nudged_loaded) | $(ok 'a <= 0.01' "$(v nudge_0_5_nudged_idle)") / $(ok 'a <= 0.01' "$(v nudge_default_nudged_loaded)") |"
		echo "| nudges per second per busy CPU under a flood (nobody) | ≤ 200 + burst | $(v nudge_flood_rate) | $(ok 'a <= 204' "$(v nudge_flood_rate)") |"
	fi
	if [ -s direct.csv ]; then
		echo "| direct evidence, idle, barrierd_barrier() with slots: p50 / p99 (p99.9) | ≤ 2 µs / ≤ 20 µs | $(us "$(v direct_p50)") / $(us "$(v direct_p99)") ($(us "$(v direct_p999)")) µs; back to back p50 $(us "$(v direct_b2b_p50)") µs; file path p50 $(us "$(v direct_file_p50)") µs | $(ok 'a <= 2000' "$(v direct_p50)") / $(ok 'a <= 20000' "$(v direct_p99)") |"
		echo "| direct, idle: system calls / IPIs per barrier (CAL+RES+IWI+TLB, every CPU) | 0 / 0 | $(v direct_sys) / $(v direct_ipis) ($(v direct_fast_ipis) IPIs per call over the $(v direct_fast_share) of calls under 20 µs; file path $(v direct_sys_file) system calls, PRIVATE_EXPEDITED $(v direct_sys_pexp)) | $(ok 'a == 0' "$(v direct_sys)") / $(ok 'a < 0.05' "$(v direct_ipis)") |"
		echo "| direct, idle: faster than PRIVATE_EXPEDITED at p50 | < $(us "$(v direct_pexp_p50)") µs | $(us "$(v direct_p50)") µs | $(ok 'a < b' "$(v direct_p50)" "$(v direct_pexp_p50)") |"
		echo "| direct, half-loaded (nice-0 spinner on one CPU): p50 / p99; calls that waited for the busy CPU only | (reported) | $(ms "$(v direct_half_p50)") / $(ms "$(v direct_half_p99)") ms (membarrier GLOBAL p50 $(ms "$(v direct_half_mb_p50)") ms); $(v direct_half_busy) | - |"
	fi
	if [ -s prim.md ]; then
		echo "| event count SP increment, no waiter: instructions, ours / ck_ec SP (callgrind) | ≤ ck_ec's | $(v prim_insn_bd) / $(v prim_insn_ck) | $(v prim_insn_verdict) |"
		echo "| time to a waiter's indefinite block, ours / ck_ec (median) | ≥ 100× shorter | $(ms "$(v prim_block_bd)") / $(ms "$(v prim_block_ck)") ms ($(v prim_block_ratio)×); waiter CPU per s of waiting $(v prim_cpu_bd) / $(v prim_cpu_ck) µs | $(v prim_block_verdict) |"
		echo "| epoch read side, 1 thread: ours / urcu-memb / ck_epoch | ≤ 1.1 × memb / < ck_epoch | $(v prim_read_bd1) / $(v prim_read_memb1) / $(v prim_read_ck1) ns | $(v prim_read_verdict) |"
		echo "| IPIs per bd-epoch grace period (mean, worst reader count) | 0 | $(v prim_gp_ipi) | $(v prim_gp_ipi_verdict) |"
		for r in 1 2; do
			[ "$(v "prim_gp_bd_$r")" != n/a ] || continue
			echo "| grace period, idle, $r reader(s), p50: bd-epoch (direct) / urcu-memb | ≤ memb | $(us "$(v "prim_gp_bd_$r")") / $(us "$(v "prim_gp_memb_$r")") µs | $(v "prim_gp_verdict_$r") |"
		done
	fi
	if [ -s waiters.csv ]; then
		echo "| waiter scaling: advance → last of N sleeping threads running (1/10/100/1000) | (none) | $(us "$(v waiters_fanout_1 0)") / $(us "$(v waiters_fanout_10 0)") / $(us "$(v waiters_fanout_100 0)") / $(us "$(v waiters_fanout_1000 0)") µs | - |"
	fi
	if [ -s cpu_scaling.csv ]; then
		echo "| CPU scaling: credit pass, all idle, 2 / 4096 CPUs | (none) | $(us "$(v model_credit_2 0)") / $(us "$(v model_credit_4096 0)") µs (FUTEX_WAKE $(v model_wake) ns each) | - |"
	fi
	echo
	echo "Tables: latency.md, notify.md, ipi.md, waiters.md, daemon_cpu.md, getpid.md, bpf_cost.md,"
	echo "cpu_scaling.md, legacy.md, pinned.md (with the projection to N CPUs), cost.md, nudge.md,"
	echo "direct.md, prim.md. Noise:"
	echo "noise.txt, machine_load.csv, loadavg.csv. Plots: plots/."
} >summary.md

# ---- plots ---------------------------------------------------------------------------------------------

if ! command -v gnuplot >/dev/null; then
	echo "report.sh: gnuplot not found (Debian: gnuplot-nox); no plots" >&2
	exit 0
fi
term='set terminal pngcairo noenhanced size 1100,700 font "DejaVu Sans,11" linewidth 1.5'
common='set grid xtics mxtics ytics; set key bottom right box opaque; set yrange [0:1]; set ylabel "fraction of calls at or below"'
plot_cdf() { # OUTPUT TITLE "file|label" ...
	local outp=$1 title=$2 cmd="" sep=""
	shift 2
	for fl in "$@"; do
		[ -s "${fl%%|*}" ] || continue
		cmd="$cmd$sep'${fl%%|*}' using 1:2 with steps title '${fl#*|}'"
		sep=", "
	done
	[ -n "$cmd" ] || return 0
	gnuplot <<-EOF
		$term
		set output '$outp'
		$common
		set logscale x
		set format x "%g"
		set xlabel "latency (µs, log scale)"
		set title "$title"
		plot $cmd
	EOF
}
methods="barrierd vtime membarrier-global private-expedited mprotect global-expedited original-layout"
for cond in idle loaded; do
	args=()
	for m in $methods; do
		args+=("plots/data/lat_${cond}_${m}.dat|$m")
	done
	plot_cdf "plots/latency_cdf_${cond}.png" "Barrier latency CDF, $cond machine (all methods, interleaved)" "${args[@]}"
done
for m in $methods; do
	plot_cdf "plots/latency_cdf_${m}.png" "Barrier latency CDF: $m, idle and loaded" \
		"plots/data/lat_idle_${m}.dat|idle" "plots/data/lat_loaded_${m}.dat|loaded (nice-19 spinner per CPU)"
done
for cfg in idle half-loaded; do
	args=()
	for m in direct file private-expedited global-expedited membarrier-global; do
		args+=("plots/data/direct_${cfg}_${m}.dat|$m")
	done
	plot_cdf "plots/direct_cdf_${cfg}.png" "Direct evidence: barrier latency CDF, $cfg (interleaved, random 0-10 ms gaps)" "${args[@]}"
done
plot_cdf plots/prim_wake_cdf.png "Event counts: wake latency CDF (increment → blocked waiter returns)" \
	"plots/data/prim_wake_bd-sp.dat|barrierd_ec SP" "plots/data/prim_wake_bd-mp.dat|barrierd_ec MP" \
	"plots/data/prim_wake_ck-sp.dat|ck_ec64 SP" "plots/data/prim_wake_ck-mp.dat|ck_ec64 MP"
for cfg in idle-1 idle-2 loaded-1 loaded-2 pinned-2; do
	args=()
	for m in bd-epoch bd-epoch-file bd-hp ck-epoch urcu-memb urcu-mb urcu-qsbr; do
		args+=("plots/data/prim_gp_${cfg}_${m}.dat|$m")
	done
	plot_cdf "plots/prim_gp_cdf_${cfg}.png" "Grace-period latency CDF, ${cfg%-*}, ${cfg#*-} sleepy reader(s)" "${args[@]}"
done
plot_cdf plots/notify_cdf.png "Notification latency CDF (advance → waiter running)" \
	"plots/data/notify_idle.dat|idle" "plots/data/notify_loaded.dat|loaded"
if [ -s plots/data/waiters_fanout.dat ]; then
	gnuplot <<-EOF
		$term
		set output 'plots/waiters.png'
		set grid; set logscale xy; set format x "%g"; set format y "%g"; set key top left box opaque
		set xlabel "threads blocked on one barrier"; set ylabel "µs (median)"
		set title "Waiter scaling: time until the last thread runs"
		plot 'plots/data/waiters_fanout.dat' using 1:(\$2 / 1000) with linespoints title 'fanout: advance → last thread running', \\
		     'plots/data/waiters_library.dat' using 1:(\$2 / 1000) with linespoints title 'library: stamp → last barrierd_wait() returns'
	EOF
fi
if [ -s plots/data/scaling_fold-quiet.dat ]; then
	gnuplot <<-EOF
		$term
		set output 'plots/cpu_scaling.png'
		set grid; set logscale xy; set format x "%g"; set format y "%g"; set key top left box opaque
		set xlabel "ncpu (simulated)"; set ylabel "µs per pass (median)"
		set title "Daemon pass cost against ncpu (publisher_pass on simulated slots)"
		plot 'plots/data/scaling_fold-quiet.dat' using 1:2 with linespoints title 'fold, nothing new', \
		     'plots/data/scaling_fold-one-new.dat' using 1:2 with linespoints title 'fold, one CPU new', \
		     'plots/data/scaling_fold-all-new.dat' using 1:2 with linespoints title 'fold, every CPU new', \
		     'plots/data/scaling_credit-all-idle.dat' using 1:2 with linespoints title 'credit pass, every CPU idle'
	EOF
fi
echo "report.sh: $(pwd)/summary.md and $(ls plots/*.png 2>/dev/null | wc -l) plots"
