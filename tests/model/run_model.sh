#!/bin/sh
# Check one configuration of the barrierd model with Spin (tests/model/README.md).
#   run_model.sh SRC_DIR OUT_DIR NAME pass|fail safety|liveness [SPIN -D FLAGS...]
# pass: the check must find nothing, over the whole state space.  fail (a mutant): it must
# find a counterexample; the trail and its replay stay in OUT_DIR/NAME as the test's
# artefacts.  Exit 0 when the expectation holds, 1 when not, 77 without spin or a compiler
# (a failure under BARRIERD_REQUIRE_BPF=1, as CI runs).
set -u

if [ $# -lt 5 ]; then
	echo "usage: run_model.sh SRC_DIR OUT_DIR NAME pass|fail safety|liveness [FLAGS...]" >&2
	exit 64
fi
src=$1 out=$2 name=$3 expect=$4 kind=$5
shift 5
case $expect in pass | fail) ;; *) echo "run_model.sh: expect pass or fail, not '$expect'" >&2; exit 64 ;; esac
case $kind in safety | liveness) ;; *) echo "run_model.sh: safety or liveness, not '$kind'" >&2; exit 64 ;; esac

# skip MESSAGE: exit 77, or 1 under BARRIERD_REQUIRE_BPF=1 (the tests' shared helpers).
# shellcheck source=../../samples/daemon_lib.sh
. "$(dirname "$0")/../../samples/daemon_lib.sh"
command -v spin >/dev/null 2>&1 || skip "no spin (scripts/deps.sh --test installs it)"
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler ($cc)"

dir=$out/$name
rm -rf "$dir"
mkdir -p "$dir" || exit 1
cp "$src"/barrierd.pml "$src"/tso.pml "$dir"/ || exit 1
cd "$dir" || exit 1
echo "$name: spin $* ($kind, expect $expect)"
echo "spin -a $*" >command.txt

# Safety: assertions only (a thread left waiting when the model's budgets run out is no
# finding); COLLAPSE compresses the state vector.  Liveness: acceptance cycles of the never
# claim (the model's ltl block) under weak fairness.
# The optimiser pays for itself only on the larger state spaces: a mutant's counterexample or
# a liveness configuration is found in well under a second, and -O2 takes 5 s to compile.
if [ "$kind" = safety ]; then
	panflags="-DSAFETY -DCOLLAPSE"
	runflags="-E"
	opt=${MODEL_OPT:--O2}
	# A mutant: the search order randomised with a fixed seed (the same run every time),
	# which reaches these counterexamples after far fewer states than the default order.
	[ "$expect" = fail ] && opt="-O1 -DT_RAND -DP_RAND" && seed=-RS7
else
	panflags="-DCOLLAPSE -DNFAIR=3"
	runflags="-a -f"
	opt=-O0
fi
spin -a "$@" barrierd.pml >spin.txt 2>&1 || { cat spin.txt; echo "FAIL: spin -a"; exit 1; }
# Spin's generated C is not warning-free: -w, and no -Werror here.
"$cc" $opt -w $panflags -o pan pan.c >cc.txt 2>&1 || { cat cc.txt; echo "FAIL: compiling pan.c"; exit 1; }
# -m: the depth limit (the models reach a few hundred); -w26: 2^26 hash slots.
./pan $runflags ${seed:-} -m1000000 -w26 >pan.txt 2>&1
status=$?
grep -E "^State-vector|states, stored|states, matched|elapsed time|errors:" pan.txt
if grep -q "max search depth too small" pan.txt; then
	echo "FAIL: the search was cut at its depth limit: not a whole state space"
	exit 1
fi
errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.txt | head -n 1)
if [ -z "$errors" ]; then
	cat pan.txt
	echo "FAIL: pan did not finish (exit $status)"
	exit 1
fi
if [ "$expect" = pass ]; then
	if [ "$errors" != 0 ]; then
		spin -t -p -g -l "$@" barrierd.pml >trail.txt 2>&1
		grep -m 3 -E "assertion violated|acceptance cycle" pan.txt
		echo "FAIL: $name has a counterexample: $dir/trail.txt"
		exit 1
	fi
	echo "PASS: $name: no counterexample"
	exit 0
fi
if [ "$errors" = 0 ] || [ ! -f barrierd.pml.trail ]; then
	echo "FAIL: mutant $name was not rejected: no counterexample"
	exit 1
fi
spin -t -p -g -l "$@" barrierd.pml >trail.txt 2>&1
grep -m 1 -E "assertion violated|acceptance cycle" pan.txt
echo "PASS: mutant $name rejected; counterexample: $dir/barrierd.pml.trail, replay: $dir/trail.txt"
exit 0
