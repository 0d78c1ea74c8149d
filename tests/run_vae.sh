#!/bin/sh
# Runs the built vae example (examples/vae.c: reparameterization, a custom loss, save and
# load) for 1 epoch on Fashion-MNIST, 1 thread, in a temporary directory, and checks: the
# `epoch 1 train_loss=F test_loss=F s_per_epoch=F` line with a test loss (BCE + KL per image)
# <= 275, far below an untrained model's ~545 (784 ln 2) (1 epoch gave 258.6); that the model
# loaded back from vae_c.safetensors gives the same test loss to the last digit; the
# samples line; and nothing left live at exit (TT_LEAK_REPORT=1).
# Skipped (exit 0) when Debian's dataset-fashion-mnist is not installed.
# Usage: sh tests/run_vae.sh [builddir]
build=${1:-build}
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
    echo "vae: skipped (no dataset-fashion-mnist; make deps installs it)"
    exit 0
fi
fail() { echo "vae: $*" >&2; rm -rf "$tmp"; exit 1; }
num='[0-9][0-9]*\.[0-9]*'
bin=$(cd "$build" && pwd)/vae
tmp=$(mktemp -d /tmp/tt_vae_XXXXXX)
out=$(cd "$tmp" && TT_LEAK_REPORT=1 "$bin" 1 1 2>"$tmp/err") || fail "exited non-zero"
echo "$out"
[ -s "$tmp/err" ] && { cat "$tmp/err"; fail "wrote to stderr (a leak?)"; }
[ -s "$tmp/vae_c.safetensors" ] || fail "no vae_c.safetensors written"
te=$(echo "$out" | sed -n "s/^epoch 1 train_loss=$num test_loss=\($num\) s_per_epoch=$num\$/\1/p")
[ -n "$te" ] || fail "want 'epoch 1 train_loss=F test_loss=F s_per_epoch=F'"
awk -v a="$te" 'BEGIN { exit !(a <= 275) }' || fail "test loss $te is above 275"
a=$(echo "$out" | sed -n "s/^trained test_loss=\($num\) loaded test_loss=$num\$/\1/p")
b=$(echo "$out" | sed -n "s/^trained test_loss=$num loaded test_loss=\($num\)\$/\1/p")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "the loaded model's test loss '$b' is not '$a'"
echo "$out" | grep -q "^64 samples decoded, mean pixel $num\$" || fail "no samples line"
rm -rf "$tmp"
echo "vae: ok (test loss $te <= 275, the loaded model the same)"
