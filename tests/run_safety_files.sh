#!/bin/sh
# End-to-end checks that char_gpt and gpt lose no file and never hang on one: an output that is
# an input, another output, a directory, a FIFO or a device is refused before any work (and
# left as it was); a bad output path (empty, ending in '/', under a file, in a missing or
# unwritable directory) fails at once; a FIFO or a device as any input is refused at once; a
# diverging run stops naming the step and keeps the last good --out and .best; a failed .best
# write leaves --out as it was (it never records a best no file holds); --resume without --out
# continues in the resumed file; a symlinked --out keeps its link and mode; the first SIGINT or
# SIGTERM saves a loadable checkpoint and exits 130 / 143. Usage: sh tests/run_safety_files.sh
# [builddir]
build=${1:-build}
[ -x "$build/char_gpt" ] && [ -x "$build/gpt" ] || {
    echo "run_safety_files: $build/char_gpt or $build/gpt is not built" >&2; exit 1; }
build=$(cd "$build" && pwd)
bin=$build/char_gpt
gpt=$build/gpt
d=$build/safety_files_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export ASAN_OPTIONS
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }

if [ -s ../shared/data/tinyshakespeare.txt ]; then
    head -c 20000 ../shared/data/tinyshakespeare.txt > "$d/tiny.txt"
else
    awk 'BEGIN { for (i = 0; i < 600; i++) { w = i % 3 ? "the king and queen" : "ROMEO: O, sir!"
         printf "%s %d%s", w, i % 7, i % 4 == 3 ? "\n" : " " } }' > "$d/tiny.txt"
fi
cp "$d/tiny.txt" "$d/tiny.orig"
model="--layers 1 --embd 32 --heads 2 --kv-heads 2 --block 16 --batch 4 --warmup 5 --threads 2"
model="$model --data $d/tiny.txt"
long="--iters 1000000 --eval-every 1000000"  # a run that passes the checks trains for minutes

# expect_fail NAME WANT CMD...: within 20 s, exit 1 or 2 (not a signal, not the timeout) with
# one stderr line containing WANT, and no training step taken.
expect_fail() {
    name=$1 want=$2
    shift 2
    timeout 20 "$@" > /dev/null 2> "$d/err" < /dev/null
    rc=$?
    lines=$(wc -l < "$d/err")
    if { [ $rc = 1 ] || [ $rc = 2 ]; } && [ "$lines" = 1 ] && grep -qF -- "$want" "$d/err" &&
       ! grep -q '^step ' "$d/err"; then
        ok "$name: exit $rc, $(cat "$d/err")"
    else
        bad "$name: exit $rc, $lines stderr lines, want '$want'"
        head -3 "$d/err" >&2
    fi
}

# ---- a checkpoint to work from (30 steps) ----
"$bin" train $model --iters 30 --eval-every 10 --out "$d/run.ckpt" > /dev/null 2> "$d/base.err" ||
    { bad "base run: $(tail -1 "$d/base.err")"; exit 1; }
cp "$d/run.ckpt" "$d/run.keep"
cp "$d/run.best.ckpt" "$d/run.best.keep"
"$gpt" train --tokenizer char $model --iters 10 --eval-every 10 --out "$d/g.ckpt" \
    > /dev/null 2>&1 || bad "gpt base run"
"$gpt" bpe-train --merges 20 --data "$d/tiny.txt" --out "$d/v.bpe" > /dev/null 2>&1 ||
    bad "gpt bpe-train base"
cp "$d/v.bpe" "$d/v.keep"

# ---- 1. an output that is an input or another output, or not a regular file ----
mkfifo "$d/fifo" || exit 1
expect_fail "--out is --data" "--out '$d/tiny.txt' is the same file as --data" \
    "$bin" train $model $long --out "$d/tiny.txt"
expect_fail "--log is --data" "--log '$d/tiny.txt' is the same file as --data" \
    "$bin" train $model $long --out "$d/o1.ckpt" --log "$d/tiny.txt"
expect_fail "--trace is --data" "--trace '$d/tiny.txt' is the same file as --data" \
    "$bin" train $model $long --out "$d/o1.ckpt" --trace "$d/tiny.txt"
ln "$d/tiny.txt" "$d/hard.txt"
expect_fail "--out is a hard link of --data" "is the same file as --data" \
    "$bin" train $model $long --out "$d/hard.txt"
expect_fail "--log is --resume" "--log '$d/run.ckpt' is the same file as --resume" \
    "$bin" train --resume "$d/run.ckpt" $long --log "$d/run.ckpt"
expect_fail "--trace is --resume" "--trace '$d/run.ckpt' is the same file as --resume" \
    "$bin" train --resume "$d/run.ckpt" $long --trace "$d/run.ckpt"
expect_fail "--log is --out" "--log '$d/o2.ckpt' is the same file as --out" \
    "$bin" train $model $long --out "$d/o2.ckpt" --log "$d/o2.ckpt"
expect_fail "--log is --out's best file" "is the same file as --out's best file" \
    "$bin" train $model $long --out "$d/o3.ckpt" --log "$d/o3.best.ckpt"
expect_fail "--out is a FIFO" "--out '$d/fifo' is a FIFO, which it would replace" \
    "$bin" train $model $long --out "$d/fifo"
expect_fail "--out is /dev/null" "--out '/dev/null' is a character device, which it would" \
    "$bin" train $model $long --out /dev/null
expect_fail "--log is a FIFO" "--log '$d/fifo' is a FIFO" \
    "$bin" train $model $long --out "$d/o4.ckpt" --log "$d/fifo"
expect_fail "bpe-train --out is --data" "--out '$d/tiny.txt' is the same file as --data" \
    "$gpt" bpe-train --merges 20 --data "$d/tiny.txt" --out "$d/tiny.txt"
expect_fail "bpe-train --out is /dev/null" "is a character device" \
    "$gpt" bpe-train --merges 20 --data "$d/tiny.txt" --out /dev/null
expect_fail "export --out is --ckpt" "--out '$d/g.ckpt' is the same file as --ckpt" \
    "$gpt" export --ckpt "$d/g.ckpt" --out "$d/g.ckpt"
expect_fail "train --out is --tokenizer" "--out '$d/v.bpe' is the same file as --tokenizer" \
    "$gpt" train --tokenizer "$d/v.bpe" $model $long --out "$d/v.bpe"
expect_fail "train --out is --init-from" "--out '$d/g.ckpt' is the same file as --init-from" \
    "$gpt" train --init-from "$d/g.ckpt" --data "$d/tiny.txt" $long --out "$d/g.ckpt"
if cmp -s "$d/tiny.txt" "$d/tiny.orig" && cmp -s "$d/run.ckpt" "$d/run.keep" &&
   cmp -s "$d/v.bpe" "$d/v.keep" && [ -p "$d/fifo" ] && [ -c /dev/null ] &&
   ! ls "$d"/o[1-4]* > /dev/null 2>&1; then
    ok "refused outputs: every input, the FIFO and /dev/null unchanged, nothing written"
else
    bad "a refused output changed an input or left a file"
fi
"$bin" train $model --iters 10 --eval-every 10 --out "$d/o5.ckpt" --log /dev/null \
    > /dev/null 2> "$d/err" && [ -c /dev/null ] &&
    ok "--log /dev/null is allowed (written in place)" || bad "--log /dev/null: $(cat "$d/err")"

cp "$d/tiny.orig" "$d/tiny.txt"  # a failed case above must not spoil the next
# ---- 7. bad output paths fail before training ----
expect_fail "--out ''" "--out is empty; pass a file path" "$bin" train $model $long --out ""
expect_fail "--out newdir/" "ends in '/'; pass a file path" \
    "$bin" train $model $long --out "$d/newdir/"
[ ! -e "$d/newdir" ] && ok "--out newdir/ created no directory" || bad "--out newdir/ made it"
expect_fail "--out under a file" "Not a directory" \
    "$bin" train $model $long --out "$d/tiny.txt/x.ckpt"
expect_fail "--log in a missing directory" "No such file or directory" \
    "$bin" train $model $long --out "$d/o6.ckpt" --log "$d/nodir/x.csv"
expect_fail "--trace in a missing directory" "No such file or directory" \
    "$bin" train $model $long --out "$d/o6.ckpt" --trace "$d/nodir/t.json"
expect_fail "--out in an unwritable directory (/proc)" "cannot write --out '/proc/tt.ckpt'" \
    "$bin" train $model $long --out /proc/tt.ckpt
expect_fail "bpe-train --out newdir/" "ends in '/'" \
    "$gpt" bpe-train --merges 20 --data "$d/tiny.txt" --out "$d/newdir/"

cp "$d/tiny.orig" "$d/tiny.txt"
# ---- 6. a FIFO or a device as an input: refused at once (timeout 20 catches a hang) ----
expect_fail "--data FIFO" "is a FIFO, not a regular file" \
    "$bin" train $model $long --data "$d/fifo" --out "$d/o7.ckpt"
expect_fail "--resume FIFO" "checkpoint '$d/fifo' is a FIFO, not a regular file" \
    "$bin" train --resume "$d/fifo" --out "$d/o7.ckpt"
expect_fail "eval --ckpt FIFO" "is a FIFO, not a regular file" "$bin" eval --ckpt "$d/fifo"
expect_fail "sample --ckpt FIFO" "is a FIFO, not a regular file" "$bin" sample --ckpt "$d/fifo"
expect_fail "eval --data FIFO" "is a FIFO, not a regular file" \
    "$bin" eval --ckpt "$d/run.ckpt" --data "$d/fifo"
expect_fail "gpt --init-from FIFO" "is a FIFO, not a regular file" \
    "$gpt" train --init-from "$d/fifo" --data "$d/tiny.txt" --out "$d/o7.ckpt"
expect_fail "gpt sample --init-from FIFO" "is a FIFO, not a regular file" \
    "$gpt" sample --init-from "$d/fifo"
expect_fail "gpt --tokenizer FIFO" "is a FIFO, not a regular file" \
    "$gpt" tokenize --tokenizer "$d/fifo" --data "$d/tiny.txt"
expect_fail "gpt --tokenizer /dev/zero" "'/dev/zero' is a character device, not a regular file" \
    "$gpt" tokenize --tokenizer /dev/zero --data "$d/tiny.txt"
expect_fail "gpt bpe-train --data FIFO" "is a FIFO, not a regular file" \
    "$gpt" bpe-train --merges 20 --data "$d/fifo" --out "$d/o8.bpe"

cp "$d/tiny.orig" "$d/tiny.txt"
# ---- 2. divergence: nothing non-finite is saved; the step and the fix are named ----
cp "$d/run.keep" "$d/div.ckpt"
cp "$d/run.best.keep" "$d/div.best.ckpt"
"$bin" train --resume "$d/div.ckpt" --out "$d/div.ckpt" --lr 1e30 --decay-iters 100 \
    --eval-every 1 --iters 40 > /dev/null 2> "$d/err"
rc=$?
div="^char_gpt: step 31: the eval .* loss is .*nan, training diverged; lower --lr"
if [ $rc = 1 ] && grep -q "$div" "$d/err" && cmp -s "$d/div.ckpt" "$d/run.keep" &&
   cmp -s "$d/div.best.ckpt" "$d/run.best.keep"; then
    ok "divergence at an eval: exit 1, $(tail -1 "$d/err" | cut -c1-90)..., files kept"
else
    bad "divergence: exit $rc, $(tail -1 "$d/err")"
fi
"$bin" eval --ckpt "$d/div.ckpt" > "$d/ev.out" 2>/dev/null &&
    grep -q "^eval train_loss=[0-9]" "$d/ev.out" && ok "the kept checkpoint evaluates finite" ||
    bad "the kept checkpoint: $(cat "$d/ev.out")"

cp "$d/tiny.orig" "$d/tiny.txt"
# ---- 4. --resume without --out continues in the resumed file ----
mkdir -p "$d/cwd" && cp "$d/run.keep" "$d/cwd/b.ckpt"
(cd "$d/cwd" && "$bin" train --resume b.ckpt --iters 40 > /dev/null 2> "$d/err")
if grep -q "^saved b.ckpt (step 40" "$d/err" && [ ! -e "$d/cwd/out" ] &&
   ! cmp -s "$d/cwd/b.ckpt" "$d/run.keep"; then
    ok "--resume b.ckpt without --out saved b.ckpt (step 40), wrote no out/"
else
    bad "--resume without --out: $(tail -1 "$d/err"); $(ls "$d/cwd")"
fi

cp "$d/tiny.orig" "$d/tiny.txt"
# ---- 5. a symlinked --out keeps its link and its mode ----
cp "$d/run.keep" "$d/real.ckpt" && chmod 600 "$d/real.ckpt" && ln -s real.ckpt "$d/link.ckpt"
"$bin" train --resume "$d/link.ckpt" --out "$d/link.ckpt" --iters 40 > /dev/null 2> "$d/err"
if [ -L "$d/link.ckpt" ] && [ "$(stat -c %a "$d/real.ckpt")" = 600 ] &&
   grep -q "^saved $d/link.ckpt (step 40" "$d/err" && ! cmp -s "$d/real.ckpt" "$d/run.keep"; then
    ok "a symlinked --out: the link stays, its target is updated and keeps mode 600"
else
    bad "symlinked --out: $(ls -l "$d/link.ckpt" "$d/real.ckpt"); $(tail -1 "$d/err")"
fi

cp "$d/tiny.orig" "$d/tiny.txt"
# ---- 3. a failed .best write: --out is not written either (it would record a lost best) ----
# .best is a symlink into a full tmpfs (root, in a private mount namespace).
if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null 2>&1 && unshare -m true 2> /dev/null
then
    rm -rf "$d/bf" "$d/full" && mkdir "$d/bf" "$d/full"
    cp "$d/run.keep" "$d/bf/run.ckpt"
    unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs "$1" || exit 99
        : > "$1/best.ckpt"; ln -s "$1/best.ckpt" "$2/run.best.ckpt"
        dd if=/dev/zero of="$1/fill" bs=4k 2> /dev/null
        "$3" train --resume "$2/run.ckpt" --out "$2/run.ckpt" --iters 60 --eval-every 5 \
            > /dev/null 2> "$4"
        rc=$?; ls -A "$1" > "$5"; wc -c < "$1/best.ckpt" >> "$5"; exit $rc' \
        sh "$d/full" "$d/bf" "$bin" "$d/err" "$d/bf.ls"
    rc=$?
    if [ $rc = 1 ] && grep -q "cannot save checkpoint '$d/bf/run.best.ckpt'.*No space left" \
           "$d/err" && cmp -s "$d/bf/run.ckpt" "$d/run.keep" &&
       [ "$(tr '\n' ' ' < "$d/bf.ls")" = "best.ckpt fill 0 " ]; then
        ok "a full disk for .best: exit 1, --out unchanged, no temp file left"
    else
        bad "a failed .best write: exit $rc, $(tail -1 "$d/err"); $(cat "$d/bf.ls")"
    fi
else
    echo "skip a failed .best write (needs root and unshare for a private tmpfs)"
fi

cp "$d/tiny.orig" "$d/tiny.txt"
# ---- 8. SIGINT / SIGTERM: save after the step, exit 128 + the signal ----
# sh starts a background job with SIGINT ignored, which train keeps (as for `nohup ... &`);
# env --default-signal gives it the default disposition a foreground run has.
dflt=""
env --default-signal=INT true 2> /dev/null && dflt="env --default-signal=INT"
[ -z "$dflt" ] && echo "skip SIGINT (env has no --default-signal): SIGTERM only"
for sig in INT TERM; do
    [ $sig = INT ] && [ -z "$dflt" ] && continue
    rm -f "$d/sig.ckpt" "$d/sig.best.ckpt"
    $dflt "$bin" train $model $long --out "$d/sig.ckpt" > /dev/null 2> "$d/sig.err" &
    pid=$!
    i=0
    while ! grep -q "parameters" "$d/sig.err" 2> /dev/null && [ $i -lt 200 ]; do
        sleep 0.05; i=$((i + 1))
    done
    sleep 0.3
    kill -$sig $pid
    wait $pid
    rc=$?
    want=130; [ $sig = TERM ] && want=143
    if [ $rc = $want ] &&
       grep -q "^char_gpt: stopped by SIG$sig at step [1-9][0-9]*; $d/sig.ckpt holds it" \
           "$d/sig.err" && "$bin" eval --ckpt "$d/sig.ckpt" 2> /dev/null |
       grep -q "^eval train_loss=[0-9]"; then
        ok "SIG$sig: exit $rc, $(tail -1 "$d/sig.err" | cut -c1-60)..., the checkpoint evaluates"
    else
        bad "SIG$sig: exit $rc (want $want), $(tail -1 "$d/sig.err")"
    fi
done

[ $fails = 0 ] && echo "run_safety_files: ok" && exit 0
echo "run_safety_files: $fails failed" >&2
exit 1
