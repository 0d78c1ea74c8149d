#!/bin/sh
# Runs the built spiral_classify example and checks its output: seven `epoch N loss=F
# accuracy=F` lines (epochs 1, 10 .. 60) whose loss falls from the first to the last, then
# `done accuracy=F` on the 300 held-out points, a multiple of 1/300 and >= 0.95 (seeds 1..24
# of this example gave 0.983 .. 0.993; a linear model cannot pass 0.95 on spirals, chance is
# 1/3). No timing. Usage: sh tests/run_spiral_classify.sh [builddir]
build=${1:-build}
out=$("$build/spiral_classify") || { echo "spiral_classify exited non-zero" >&2; exit 1; }
echo "$out"
num='[0-9][0-9]*\.[0-9]*'
epochs=$(echo "$out" | grep -c "^epoch [0-9]* loss=$num accuracy=$num\$")
first=$(echo "$out" | sed -n "s/^epoch 1 loss=\($num\) .*/\1/p")
last=$(echo "$out" | sed -n "s/^epoch 60 loss=\($num\) .*/\1/p")
acc=$(echo "$out" | sed -n "s/^done accuracy=\($num\)\$/\1/p")
if [ "$epochs" != 7 ] || [ -z "$first" ] || [ -z "$last" ] || [ -z "$acc" ] ||
   [ "$(echo "$out" | tail -n 1)" != "done accuracy=$acc" ]; then
    echo "spiral_classify: want 7 'epoch N loss=F accuracy=F' lines, then 'done accuracy=F'" >&2
    exit 1
fi
if ! awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f) }'; then
    echo "spiral_classify: the loss did not fall (epoch 1: $first, epoch 60: $last)" >&2
    exit 1
fi
if ! awk -v a="$acc" 'BEGIN { d = a * 300 - int(a * 300 + 0.5); exit !(d < 0.02 && d > -0.02) }'
then
    echo "spiral_classify: accuracy $acc is not a count of the 300 test points" >&2
    exit 1
fi
if awk -v a="$acc" 'BEGIN { exit !(a >= 0.95) }'; then
    echo "spiral_classify: ok (loss $first -> $last, accuracy $acc >= 0.95)"
else
    echo "spiral_classify: accuracy $acc is below 0.95" >&2
    exit 1
fi
