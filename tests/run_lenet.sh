#!/bin/sh
# Runs the built lenet example on the first 2,000 train and test images of Fashion-MNIST and
# checks: the `epoch N train_loss=F test_loss=F test_accuracy=F ms_per_epoch=F` and `done
# test_accuracy=F` lines; that 2 epochs beat chance (0.1) by far (>= 0.5; 2 epochs on 2,000
# images gave 0.69); that --resume from the epoch-1 checkpoint prints the same epoch-2 losses
# as the uninterrupted run, also with --bn --augment; that --eval of that checkpoint gives its
# f32 accuracy again and, with --quantize static, int8 and static int8 accuracies within 0.02
# of it with the Linears' bytes over 3x smaller; that bad flags and a missing --data fail with
# one line on stderr.
# Skipped (exit 0) when Debian's dataset-fashion-mnist is not installed.
# Usage: sh tests/run_lenet.sh [builddir]
build=${1:-build}
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
    echo "lenet: skipped (no dataset-fashion-mnist; make deps installs it)"
    exit 0
fi
ck="$build/lenet_test.ckpt"
fail() { echo "lenet: $*" >&2; exit 1; }
num='[0-9][0-9]*\.[0-9]*'
line="^epoch [12] train_loss=$num test_loss=$num test_accuracy=$num ms_per_epoch=$num\$"

full=$("$build/lenet" --epochs 2 --limit 2000 --threads 1 --out "$ck") ||
    fail "the 2-epoch run exited non-zero"
echo "$full"
[ "$(echo "$full" | grep -c "$line")" = 2 ] || fail "want two 'epoch N ...' lines"
acc=$(echo "$full" | sed -n "s/^done test_accuracy=\($num\)\$/\1/p")
[ -n "$acc" ] && [ "$(echo "$full" | tail -n 1)" = "done test_accuracy=$acc" ] ||
    fail "want 'done test_accuracy=F' last"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.5) }' || fail "test accuracy $acc is below 0.5"

"$build/lenet" --epochs 1 --limit 2000 --threads 1 --out "$ck" > /dev/null ||
    fail "the 1-epoch run exited non-zero"
res=$("$build/lenet" --epochs 2 --threads 1 --resume "$ck" --out "$ck") ||
    fail "--resume exited non-zero"
echo "$res" | grep -q '^epoch 1 ' && fail "--resume repeated epoch 1"
want=$(echo "$full" | sed -n 's/^\(epoch 2 .*\) ms_per_epoch=.*/\1/p')
got=$(echo "$res" | sed -n 's/^\(epoch 2 .*\) ms_per_epoch=.*/\1/p')
[ -n "$want" ] && [ "$want" = "$got" ] || fail "resumed epoch 2 '$got' differs from '$want'"

# The same with batch norm (its running stats are in the checkpoint) and augmentation (the
# crops and flips draw from the checkpointed rng); --resume takes both flags from the file.
bn=$("$build/lenet" --bn --augment --epochs 2 --limit 1000 --out "$ck") ||
    fail "the --bn --augment run exited non-zero"
"$build/lenet" --bn --augment --epochs 1 --limit 1000 --out "$ck" > /dev/null ||
    fail "the 1-epoch --bn --augment run exited non-zero"
res=$("$build/lenet" --epochs 2 --resume "$ck" --out "$ck") || fail "--bn --resume exited non-zero"
want=$(echo "$bn" | sed -n 's/^\(epoch 2 .*\) ms_per_epoch=.*/\1/p')
got=$(echo "$res" | sed -n 's/^\(epoch 2 .*\) ms_per_epoch=.*/\1/p')
[ -n "$want" ] && [ "$want" = "$got" ] || fail "--bn --augment resumed '$got' differs from '$want'"

# --eval of that checkpoint (batch norm's running stats restored): the f32 accuracy is the
# resumed run's last one; dynamic and static int8 stay within 0.02 of it, in under 1/3 the bytes.
ev=$("$build/lenet" --eval "$ck" --limit 1000 --quantize static) || fail "--eval exited non-zero"
echo "$ev"
last=$(echo "$res" | sed -n "s/^done test_accuracy=\($num\)\$/\1/p")
f32=$(echo "$ev" | sed -n "s/^f32  *test_loss=$num test_accuracy=\($num\) .*/\1/p")
[ -n "$f32" ] && [ "$f32" = "$last" ] || fail "--eval f32 accuracy '$f32', the run ended at '$last'"
for mode in int8 static; do
    row=$(echo "$ev" | grep "^$mode ") || fail "--eval printed no $mode line"
    a=$(echo "$row" | sed -n "s/.* test_accuracy=\($num\) .*/\1/p")
    awk -v a="$a" -v f="$f32" 'BEGIN { d = a - f; exit !(d <= 0.02 && d >= -0.02) }' ||
        fail "$mode accuracy '$a' is not within 0.02 of f32 $f32"
done
fb=$(echo "$ev" | sed -n 's/^f32 .* linear_bytes=\([0-9]*\) .*/\1/p')
qb=$(echo "$ev" | sed -n 's/^int8 .* linear_bytes=\([0-9]*\) .*/\1/p')
[ -n "$qb" ] && [ $((qb * 3)) -lt "$fb" ] || fail "int8 Linears take $qb bytes, f32 $fb"

for args in "--epochs x" "--batch 0" "--lr 2" "--bogus 1" "--epochs" "--data /nonexistent" \
            "--resume /nonexistent" "--quantize int4" "--eval /nonexistent"; do
    # shellcheck disable=SC2086
    err=$("$build/lenet" $args --limit 10 --out "$ck" 2>&1 >/dev/null) &&
        fail "'lenet $args' exited 0"
    [ "$(echo "$err" | head -n 1 | grep -c '^lenet: ')" = 1 ] ||
        fail "'lenet $args' gave no 'lenet: ...' error: $err"
done
rm -f "$ck"
echo "lenet: ok (accuracy $acc after 2 epochs on 2,000 images, resume exact with and without" \
     "--bn --augment, --eval int8 and static near f32, bad flags fail)"
