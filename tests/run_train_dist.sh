#!/bin/sh
# The trainer over ranks (tests/train_dist_check.c): alone, 1 rank x 2 micro-batches and
# 1 x 4 run; with MPIRUN set (make test MPI=1), 2 ranks x 1 micro-batch print the same losses
# and parameters bit for bit as 1 rank x 2, with the all-reduce plain and overlapped, and
# 2 ranks x 2 overlapped the same as 2 x 2 plain.
# Usage: [MPIRUN="mpirun ..."] sh tests/run_train_dist.sh [builddir]
build=${1:-build}
bin=$build/tests/train_dist_check
[ -x "$bin" ] || { echo "run_train_dist: $bin is not built" >&2; exit 1; }
d=$build/train_dist_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
bad() { echo "train dist: FAIL $*" >&2; fails=$((fails + 1)); }

"$bin" 2 > "$d/one.out" || bad "1 rank x 2 exited non-zero"
"$bin" 4 > "$d/four.out" || bad "1 rank x 4 exited non-zero"
[ "$(grep -c '^step [1-6] loss ' "$d/one.out")" = 6 ] && grep -q '^fingerprint ' "$d/one.out" ||
    bad "want 6 step lines and a fingerprint"
cmp -s "$d/one.out" "$d/four.out" && bad "4 micro-batches trained the same as 2"
if [ -n "$MPIRUN" ]; then
    $MPIRUN -np 2 "$bin" 1 > "$d/two.out" || bad "2 ranks exited non-zero"
    cmp -s "$d/one.out" "$d/two.out" || bad "2 ranks x 1 differs from 1 rank x 2"
    $MPIRUN -np 2 "$bin" 1 overlap > "$d/two_ov.out" || bad "2 ranks overlapped exited non-zero"
    cmp -s "$d/one.out" "$d/two_ov.out" || bad "2 ranks x 1 overlapped differs from 1 rank x 2"
    $MPIRUN -np 2 "$bin" 2 > "$d/two2.out" || bad "2 ranks x 2 exited non-zero"
    $MPIRUN -np 2 "$bin" 2 overlap > "$d/two2_ov.out" || bad "2 ranks x 2 overlapped failed"
    cmp -s "$d/two2.out" "$d/two2_ov.out" || bad "2 ranks x 2: overlapped differs from plain"
fi
if [ $fails = 0 ]; then echo "train dist: ok${MPIRUN:+ (2 ranks too)}"; else exit 1; fi
