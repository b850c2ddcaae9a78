#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bash completions against --help:  test_completion.sh SOURCE_DIR BARRIERCTL BARRIERD
# bash -n accepts both scripts; what they offer is exactly what --help lists: barrierctl's
# commands, each command's options (the common ones and its own section's), bench's methods,
# and barrierd's options.  With bash-completion installed, each script is also loaded through
# it and `complete -p` names its function.  No root; under a second.
set -euo pipefail
src=$1 ctl=$2 daemon=$3
comp=$src/completion
fails=0
ok() { echo "PASS: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

for f in "$comp/barrierctl" "$comp/barrierd"; do
	if bash -n "$f"; then ok "bash -n $(basename "$f")"; else bad "bash -n $f"; fi
done

# offered SCRIPT FUNCTION WORD...: the completions of the last WORD, sorted, one per line, in
# a bash of their own (with bash-completion when SCRIPT_INIT is set).
offered() {
	local script=$1 fn=$2
	shift 2
	bash -c '
		[ -z "${SCRIPT_INIT:-}" ] || . "$SCRIPT_INIT"
		. "$1"; fn=$2; shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		"$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort -u' _ "$script" "$fn" "$@"
}

# What --help says, one word per line, sorted.
help_ctl=$("$ctl" --help)
help_d=$("$daemon" --help)
section() { # the lines of barrierctl --help from "$1" to the next blank or section line
	awk -v h="$1" '$0 == h {on = 1; next} on && (/^$/ || /^[a-z]+:$/ || /^[A-Z]/) {exit} on' <<<"$help_ctl"
}
# Options offered: every long option, and the short ones that have no long form ("-n N").
longs() {
	sed -E 's/(^|[ ])-[a-zA-Z], --/\1--/g' | grep -oE '(^|[ ,])(--[a-z][a-z-]*|-[a-zA-Z])\b' |
		grep -oE -- '-.*' | sort -u
}
common=$(section 'Options of every command:' | longs)

check() { # LABEL WANT GOT
	if [ "$2" = "$3" ]; then
		ok "$1: $(wc -w <<<"$2") words"
	else
		bad "$1: --help and the completion differ (< help, > completion):"
		diff <(echo "$2") <(echo "$3") || true
	fi
}

run_checks() {
	local want got cmd
	want=$(section 'Commands:' | awk '{print $1}' | sort -u; printf -- '--help\n--version\n')
	got=$(offered "$comp/barrierctl" _barrierctl barrierctl "")
	check "${1}barrierctl commands" "$(sort -u <<<"$want")" "$got"
	for cmd in status watch wait bench metrics; do
		want=$( (echo "$common"; section "$cmd:" | longs) | sort -u)
		got=$(offered "$comp/barrierctl" _barrierctl barrierctl "$cmd" -)
		check "${1}barrierctl $cmd options" "$want" "$got"
	done
	# The method list: the lines of --method's text that hold nothing but "name, name,".
	want=$( (sed -n '/-m, --method M/,/^      --load/p' <<<"$help_ctl" |
		grep -E '^ +([a-z-]+, )*[a-z-]+,?$' | tr ', ' '\n\n' | grep .
		echo all) | sort -u)
	got=$(offered "$comp/barrierctl" _barrierctl barrierctl bench --method "")
	check "${1}barrierctl bench methods" "$want" "$got"
	got=$(offered "$comp/barrierctl" _barrierctl barrierctl bench --method barrierd,v)
	check "${1}barrierctl bench --method barrierd,v" "barrierd,vtime" "$got"
	want=$(longs <<<"$help_d" | grep -- '^--')
	got=$(offered "$comp/barrierd" _barrierd barrierd --)
	check "${1}barrierd options" "$want" "$got"
}
run_checks ""

# Through bash-completion itself, when it is installed: _init_completion, complete -p.
init=/usr/share/bash-completion/bash_completion
if [ -r "$init" ]; then
	export SCRIPT_INIT=$init
	run_checks "bash-completion: "
	for p in barrierctl barrierd; do
		if out=$(bash -c '. "$1"; . "$2"; complete -p "$3"' _ "$init" "$comp/$p" "$p") &&
			[ "$out" = "complete -F _$p $p" ]; then
			ok "complete -p $p: $out"
		else
			bad "complete -p $p: '${out:-}'"
		fi
	done
else
	echo "NOTE: bash-completion not installed: loading through it not tried"
fi
[ "$fails" = 0 ]
