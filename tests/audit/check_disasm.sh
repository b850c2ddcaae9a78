#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Machine-code checks for orderings whose windows are nanoseconds wide, which no black-box test can
# see (tests/audit/README.md, section 3).  They read what the compiler emitted, so an "optimisation"
# of a fence cannot slip through.
#
#   check_disasm.sh stamp  LIBBARRIERD   rule 5: barrierd_stamp_ns executes MFENCE then LFENCE
#                                        before its clock call; barrierd_stamp_vtime executes
#                                        MFENCE before its loads
#   check_disasm.sh daemon BARRIERD      rules 2 and 3: credit_snapshot (src/daemon/credit.c)
#                                        executes a clock call, LFENCE, MFENCE in straight-line
#                                        code, so before the online mask's read and the idle
#                                        words' loads (plain loads: the slots are frozen)
#   check_disasm.sh direct LIBBARRIERD   rule 11: bd_direct_credit (lib/direct.c, a hidden
#                                        symbol, found in the library's symbol table) executes
#                                        LFENCE after its clock call before any branch, call
#                                        (sched_getcpu) or load other than of its own stack, so
#                                        before the CPU read and the slot loads
#   check_disasm.sh ec     EC_FASTPATH   event counts (docs/PRIMITIVES.md §1): the single
#                                        producer's increment (probe_inc_sp, probe_add_sp of
#                                        tests/audit/ec_fastpath.c) stores to memory with one
#                                        xadd and no lock prefix, and nothing else; the
#                                        multi-producer's (probe_inc) with a lock xadd
#
# Exit status: 0 the code has the ordering, 1 it does not (a finding), 2 the check could not run.

mode=$1
file=$2
if [ -z "$mode" ] || [ ! -r "$file" ]; then
	echo "usage: $0 stamp|daemon|direct|ec FILE" >&2
	exit 2
fi
command -v objdump >/dev/null 2>&1 || { echo "objdump not found" >&2; exit 2; }

# The instructions of one function, one per line, without addresses or encodings.
body() {
	objdump -d --no-show-raw-insn "$file" | awk -v f="$1" '
		$0 ~ "<" f ">:$" { p = 1; next }
		p && /^$/ { exit }
		p { sub(/^[ \t]*[0-9a-f]+:[ \t]*/, ""); print }'
}

fail=0
case $mode in
stamp)
	b=$(body barrierd_stamp_ns)
	[ -n "$b" ] || { echo "barrierd_stamp_ns not found in $file" >&2; exit 2; }
	# MFENCE, then LFENCE, both before the first call that reads the clock.
	r=$(printf '%s\n' "$b" | awk '
		/^call.*<(bd_clock_raw|clock_gettime[^>]*|__vdso_clock_gettime)>/ {
			print (l ? "ok" : "nofence"); done = 1; exit
		}
		/^mfence/ { m = 1 }
		/^lfence/ { if (m) l = 1 }
		END { if (!done) print "noclock" }')
	case $r in
	ok) echo "barrierd_stamp_ns: MFENCE; LFENCE before the clock read" ;;
	nofence)
		echo "FAIL barrierd_stamp_ns: the clock is read without MFENCE then LFENCE before it" \
			"(rule 5)"
		fail=1
		;;
	*) echo "barrierd_stamp_ns: no clock call found" >&2; exit 2 ;;
	esac
	printf '%s\n' "$b" | sed 's/^/    /'

	b=$(body barrierd_stamp_vtime)
	[ -n "$b" ] || { echo "barrierd_stamp_vtime not found in $file" >&2; exit 2; }
	# MFENCE before the first load from memory (the handle, then the file's vtime).
	r=$(printf '%s\n' "$b" | awk '
		/^mfence/ { print "ok"; exit }
		/^mov[a-z]* +[^,]*\(/ { print "nofence"; exit }
		/^ret/ { print "nofence"; exit }')
	if [ "$r" = ok ]; then
		echo "barrierd_stamp_vtime: MFENCE before the vtime load"
	else
		echo "FAIL barrierd_stamp_vtime: vtime is loaded without an MFENCE before it (rule 5)"
		fail=1
	fi
	printf '%s\n' "$b" | sed 's/^/    /'
	;;
daemon)
	fn=credit_snapshot
	b=$(body $fn)
	[ -n "$b" ] || { echo "$fn not found in $file" >&2; exit 2; }
	# The credit sequence: the clock, LFENCE, MFENCE, with no branch or call in between, so
	# that nothing after it (the online mask's read, the idle words' loads) can come before the
	# fences.  The slots are frozen and mapped read-only: the idle words are read with plain
	# loads, and this MFENCE is the only drain of our store of v before them (rules 2, 3).
	r=$(printf '%s\n' "$b" | awk '
		/^call.*<(clock_gettime[^>]*|bd_mono_ns)>/ { w = 1; l = 0; seq = "    " $0; next }
		w { seq = seq "\n    " $0 }
		w && /^lfence/ { l = 1; next }
		w && l && /^mfence/ { print "ok"; print seq; found = 1; exit }
		w && /^(j[a-z]+|call|ret)/ { w = 0 }
		END { if (!found) print "no" }')
	case $r in
	ok*)
		echo "$fn: clock read, LFENCE, MFENCE in straight-line code (rules 2, 3):"
		printf '%s\n' "$r" | sed 1d
		;;
	*)
		echo "FAIL $fn: no clock read followed by LFENCE then MFENCE before the" \
			"next branch (the drain of rules 2 and 3)"
		fail=1
		;;
	esac
	;;
direct)
	fn=bd_direct_credit
	b=$(body $fn)
	[ -n "$b" ] || {
		echo "$fn not found in $file (a hidden symbol: is the file stripped?)" >&2
		exit 2
	}
	# From the clock call on, straight-line code up to an LFENCE: no branch, call or ret,
	# and no load but from our own stack (a spill), before it.  The CPU read (sched_getcpu)
	# and the slot loads all come after a branch (r > T, the loop), so after the LFENCE.
	r=$(printf '%s\n' "$b" | awk '
		/^call.*<(bd_clock_raw|clock_gettime[^>]*|__vdso_clock_gettime)>/ {
			w = 1; seq = "    " $0; next
		}
		!w { next }
		{ seq = seq "\n    " $0 }
		/^lfence/ { v = "ok"; exit }
		/^(j[a-z]+|call|ret)/ { v = "a branch or call"; exit }
		# a memory operand, not our stack, not an address computation, not a plain store
		/\(/ && !/\(%rsp\)/ && !/^(lea|nop)/ && !/^mov[a-z]* +[^(,]*,/ { v = "a load"; exit }
		END {
			if (!w) { print "noclock"; exit }
			print (v ? v : "the end of the function"); print seq
		}')
	case $r in
	noclock) echo "$fn: no clock call found" >&2; exit 2 ;;
	ok*)
		echo "$fn: clock read, then LFENCE before any branch, call or load (rule 11):"
		printf '%s\n' "$r" | sed 1d
		;;
	*)
		echo "FAIL $fn: after the clock read, $(printf '%s\n' "$r" | sed 1q) comes" \
			"before any LFENCE: the CPU read or a slot load may be performed before the clock read" \
			"(rule 11)"
		printf '%s\n' "$r" | sed 1d
		fail=1
		;;
	esac
	;;
ec)
	# Memory writes of a function: xadd (locked or not) and every other instruction whose
	# destination (AT&T: the last operand) is in memory, the stack aside.  A tail jump to
	# barrierd_ec_wake is the slow path, after the xadd.
	writes() {
		body "$1" | awk '
			/^(lock +)?xadd/ { print; next }
			/^(call|push|pop|ret|j[a-z]+|cmp|test|nop|lea)/ { next }
			{ n = split($0, op, ","); if (n > 1 && op[n] ~ /\(/ && op[n] !~ /%rsp/) print }'
	}
	for fn in probe_inc_sp probe_add_sp; do
		b=$(body $fn)
		[ -n "$b" ] || { echo "$fn not found in $file" >&2; exit 2; }
		w=$(writes $fn)
		if [ "$(printf '%s\n' "$w" | grep -c .)" = 1 ] && printf '%s\n' "$w" | grep -q '^xadd'; then
			echo "$fn: one xadd without lock, no other store: $w"
		else
			echo "FAIL $fn: the single producer's increment is not one unlocked xadd" \
				"(its memory writes: $(printf '%s' "$w" | tr '\n' ';'))"
			fail=1
		fi
		printf '%s\n' "$b" | sed 's/^/    /'
	done
	b=$(body probe_inc)
	[ -n "$b" ] || { echo "probe_inc not found in $file" >&2; exit 2; }
	w=$(writes probe_inc)
	if [ "$(printf '%s\n' "$w" | grep -c .)" = 1 ] && printf '%s\n' "$w" | grep -q '^lock'; then
		echo "probe_inc: one locked xadd: $w"
	else
		echo "FAIL probe_inc: the multi-producer's increment is not one locked xadd" \
			"(its memory writes: $(printf '%s' "$w" | tr '\n' ';'))"
		fail=1
	fi
	printf '%s\n' "$b" | sed 's/^/    /'
	;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac
exit $fail
