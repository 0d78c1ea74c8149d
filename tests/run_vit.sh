#!/bin/sh
# Runs the built vit example (examples/vit.c, a custom module) for 2 epochs on the first
# 5,000 Fashion-MNIST training images, 1 thread, and checks: the parameter line (105,546, as
# tests/reference/vit.py counts), two `epoch N train_loss=F test_acc=F s_per_epoch=F` lines,
# a falling train loss, a test accuracy over all 10,000 test images far above chance (0.1):
# >= 0.6 (it gave 0.70), and nothing left live at exit (TT_LEAK_REPORT=1). (docs/guide.md's
# excerpt of vit.c is checked by tests/check_docs.sh.)
# Skipped (exit 0) when Debian's dataset-fashion-mnist is not installed.
# Usage: sh tests/run_vit.sh [builddir]
build=${1:-build}
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
    echo "vit: skipped (no dataset-fashion-mnist; make deps installs it)"
    exit 0
fi
fail() { echo "vit: $*" >&2; exit 1; }
num='[0-9][0-9]*\.[0-9]*'
out=$(TT_LEAK_REPORT=1 "$build/vit" 2 5000 1 2>"$build/vit_test.err") || fail "exited non-zero"
echo "$out"
[ -s "$build/vit_test.err" ] && { cat "$build/vit_test.err"; fail "wrote to stderr (a leak?)"; }
[ "$(echo "$out" | head -n 1)" = "vit: 105546 parameters, 1 threads" ] ||
    fail "want 'vit: 105546 parameters, 1 threads' first"
[ "$(echo "$out" | grep -c "^epoch [12] train_loss=$num test_acc=$num s_per_epoch=$num\$")" = 2 ] ||
    fail "want two 'epoch N train_loss=F test_acc=F s_per_epoch=F' lines"
l1=$(echo "$out" | sed -n "s/^epoch 1 train_loss=\($num\) .*/\1/p")
l2=$(echo "$out" | sed -n "s/^epoch 2 train_loss=\($num\) .*/\1/p")
acc=$(echo "$out" | sed -n "s/^epoch 2 .* test_acc=\($num\) .*/\1/p")
awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(b < a) }' || fail "train loss $l1 -> $l2 did not fall"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.6) }' || fail "test accuracy $acc is below 0.6"
echo "vit: ok (test accuracy $acc >= 0.6, train loss $l1 -> $l2)"
