#!/bin/sh
# End-to-end test of build/char_gpt on a tiny corpus (no network): train prints its eval and
# done lines and a --log; two runs of one seed give the same losses and fingerprints bit for
# bit, and so do 1 and 2 threads; --resume after 20 steps reproduces the next 10 losses of an
# uninterrupted 30-step run bit for bit (with dropout); --out keeps the last state and
# FILE.best.ckpt the best one, and --resume continues from the last; a default that conflicts
# with a given flag is lowered with a note; the progress bar fits a 50- and a 120-column pty
# (when script(1) exists); --schedule plateau resumed off its eval grid takes the lrs and
# losses of an uninterrupted run; sample gives the same text with and
# without the KV cache; eval prints its line; bad input exits non-zero (not by a signal) with
# one line on stderr and clobbers no file; a full disk during a save and a diverging loss stop
# training with the previous checkpoint intact. Under ASan (make test SAN=1) LeakSanitizer
# checks every run: a leak fails it. Usage: sh tests/run_char_gpt.sh [builddir]
build=${1:-build}
bin=$build/char_gpt
[ -x "$bin" ] || { echo "run_char_gpt: $bin is not built" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/char_gpt
d=$build/char_gpt_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
# LeakSanitizer is on by default with ASan on x86-64 Linux; make sure nobody turned it off.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export ASAN_OPTIONS
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }

# ---- a tiny corpus: the first 20 KB of the shared one, or generated text ----
if [ -s ../shared/data/tinyshakespeare.txt ]; then
    head -c 20000 ../shared/data/tinyshakespeare.txt > "$d/tiny.txt"
else
    awk 'BEGIN { srand(7); split("the king and queen of england shall speak to thee my lord " \
         "what is this night ROMEO: JULIET: O, I pray you, sir!", w, " ");
         for (i = 0; i < 3000; i++) { printf "%s%s", w[int(rand() * 24) + 1],
                                      (i % 12 == 11) ? "\n" : " " } }' > "$d/tiny.txt"
fi

model="--layers 1 --embd 32 --heads 2 --kv-heads 2 --block 16 --batch 4 --eval-every 10"
model="$model --warmup 5 --threads 2 --data $d/tiny.txt"
num='[0-9][0-9.]*'

# ---- train: output lines and the log ----
"$bin" train $model --iters 30 --out "$d/a/plain.ckpt" --log "$d/plain.csv" \
    > "$d/plain.out" 2> "$d/plain.err"
rc=$?
if [ $rc = 0 ] && [ "$(grep -c "^eval step=[123]0 train_loss=$num val_loss=$num\$" \
        "$d/plain.out")" = 3 ] &&
   grep -q "^done steps=30 train_loss=$num val_loss=$num ms_per_step=$num tokens_per_s=$num\$" \
        "$d/plain.out" &&
   [ "$(wc -l < "$d/plain.out")" = 4 ] && [ -s "$d/a/plain.ckpt" ]; then
    ok "train: 3 eval lines, a done line, a checkpoint in a new directory"
else
    bad "train (exit $rc)"; cat "$d/plain.out" "$d/plain.err" >&2
fi
if [ "$(head -n 1 "$d/plain.csv")" = "step,train_loss,val_loss,lr" ] &&
   [ "$(wc -l < "$d/plain.csv")" = 31 ] &&
   [ "$(awk -F, 'NR > 1 && $3 != ""' "$d/plain.csv" | wc -l)" = 3 ]; then
    ok "train --log: header, 30 rows, val at the 3 evals"
else
    bad "train --log"; cat "$d/plain.csv" >&2
fi

# ---- determinism: the same seed twice, and 1 vs 2 threads, give the same bits ----
fingerprint() { grep 'saved .*step 30,' "$1" | sed 's/.*fingerprint \([0-9a-f]*\).*/\1/'; }
"$bin" train $model --iters 30 --out "$d/plain2.ckpt" --log "$d/plain2.csv" \
    > /dev/null 2> "$d/plain2.err" || bad "second 30-step run"
"$bin" train $model --iters 30 --out "$d/a/plain.ckpt" > /dev/null 2> "$d/plain.err2"
fp1=$(fingerprint "$d/plain.err2")
fp2=$(fingerprint "$d/plain2.err")
if cmp -s "$d/plain.csv" "$d/plain2.csv" && [ -n "$fp1" ] && [ "$fp1" = "$fp2" ]; then
    ok "same seed, same threads: 30 losses and the fingerprint ($fp1) equal bit for bit"
else
    bad "same seed: logs or fingerprints '$fp1' vs '$fp2' differ"
fi
wide="--layers 2 --embd 64 --heads 4 --block 32 --batch 8 --iters 8 --eval-every 4"
wide="$wide --eval-iters 2 --warmup 2 --data $d/tiny.txt"
for t in 1 2; do
    "$bin" train $wide --threads $t --out "$d/t$t.ckpt" --log "$d/t$t.csv" \
        > "$d/t$t.out" 2> "$d/t$t.err" || bad "--threads $t run"
done
fpt1=$(grep 'saved .*step 8,' "$d/t1.err" | sed 's/.*fingerprint \([0-9a-f]*\).*/\1/')
fpt2=$(grep 'saved .*step 8,' "$d/t2.err" | sed 's/.*fingerprint \([0-9a-f]*\).*/\1/')
if cmp -s "$d/t1.csv" "$d/t2.csv" && [ -n "$fpt1" ] && [ "$fpt1" = "$fpt2" ]; then
    ok "--threads 1 and 2: the same losses and fingerprint ($fpt1)"
else
    bad "--threads 1 vs 2 differ: fingerprints '$fpt1' vs '$fpt2'"
    paste "$d/t1.csv" "$d/t2.csv" >&2
fi

# ---- --checkpoint-blocks: the same losses and weights bit for bit (dropout on) ----
for c in "" --checkpoint-blocks; do
    "$bin" train $wide --threads 2 --dropout 0.1 $c --out "$d/cb$c.ckpt" --log "$d/cb$c.csv" \
        > /dev/null 2> "$d/cb$c.err" || bad "train $c (dropout 0.1)"
done
fpc0=$(grep 'saved .*step 8,' "$d/cb.err" | sed 's/.*fingerprint \([0-9a-f]*\).*/\1/')
fpc1=$(grep 'saved .*step 8,' "$d/cb--checkpoint-blocks.err" |
       sed 's/.*fingerprint \([0-9a-f]*\).*/\1/')
if cmp -s "$d/cb.csv" "$d/cb--checkpoint-blocks.csv" && [ -n "$fpc0" ] &&
   [ "$fpc0" = "$fpc1" ] && grep -q 'checkpointed blocks' "$d/cb--checkpoint-blocks.err" &&
   ! cmp -s "$d/cb.csv" "$d/t2.csv"; then
    ok "--checkpoint-blocks: the same 8 losses and fingerprint ($fpc1) with dropout 0.1"
else
    bad "--checkpoint-blocks differs: fingerprints '$fpc0' vs '$fpc1'"
    paste "$d/cb.csv" "$d/cb--checkpoint-blocks.csv" >&2
fi

# ---- resume: 20 steps, then 10 more == 30 uninterrupted (bit for bit, dropout on) ----
rmodel="$model --dropout 0.1"
"$bin" train $rmodel --iters 30 --out "$d/full.ckpt" --log "$d/full.csv" \
    > "$d/full.out" 2> "$d/full.err" || bad "uninterrupted 30-step run"
"$bin" train $rmodel --iters 20 --decay-iters 30 --out "$d/part.ckpt" --log "$d/part.csv" \
    > /dev/null 2> "$d/part.err" || bad "first 20 steps"
"$bin" train --resume "$d/part.ckpt" --iters 30 --out "$d/part.ckpt" --log "$d/resumed.csv" \
    > "$d/resumed.out" 2> "$d/resumed.err" || { bad "resume"; cat "$d/resumed.err" >&2; }
awk -F, 'NR > 21 {print $1, $2}' "$d/full.csv" > "$d/full.last10"
awk -F, 'NR > 1 {print $1, $2}' "$d/resumed.csv" > "$d/resumed.last10"
if [ "$(wc -l < "$d/resumed.last10")" = 10 ] && cmp -s "$d/full.last10" "$d/resumed.last10"
then
    ok "resume: the losses of steps 21..30 equal the uninterrupted run's bit for bit"
else
    bad "resume: losses differ"; paste "$d/full.last10" "$d/resumed.last10" >&2
fi
fp_full=$(fingerprint "$d/full.err")
fp_res=$(fingerprint "$d/resumed.err")
if [ -n "$fp_full" ] && [ "$fp_full" = "$fp_res" ] &&
   [ "$(grep '^done' "$d/full.out" | cut -d' ' -f2-4)" = \
     "$(grep '^done' "$d/resumed.out" | cut -d' ' -f2-4)" ]; then
    ok "resume: same final parameters (fingerprint $fp_full) and eval losses"
else
    bad "resume: fingerprints '$fp_full' vs '$fp_res' or final losses differ"
fi

# ---- --optim muon: resumed == uninterrupted too, and it trains differently from AdamW ----
"$bin" train $model --optim muon --iters 30 --out "$d/mu.ckpt" --log "$d/mu.csv" \
    > "$d/mu.out" 2> /dev/null || bad "muon: 30-step run"
"$bin" train $model --optim muon --iters 20 --decay-iters 30 --out "$d/mup.ckpt" \
    > /dev/null 2>&1 || bad "muon: first 20 steps"
"$bin" train --resume "$d/mup.ckpt" --iters 30 --log "$d/mur.csv" > "$d/mur.out" \
    2> "$d/mur.err" || { bad "muon: resume"; cat "$d/mur.err" >&2; }
awk -F, 'NR > 21 {print $1, $2}' "$d/mu.csv" > "$d/mu.last10"
awk -F, 'NR > 1 {print $1, $2}' "$d/mur.csv" > "$d/mur.last10"
if [ "$(wc -l < "$d/mur.last10")" = 10 ] && cmp -s "$d/mu.last10" "$d/mur.last10" &&
   ! cmp -s "$d/mu.out" "$d/plain.out"; then
    ok "--optim muon: resumed (--optim from the checkpoint) losses equal the uninterrupted run's"
else
    bad "--optim muon: resume differs or did not keep --optim"; cat "$d/mur.err" >&2
    paste "$d/mu.last10" "$d/mur.last10" >&2
fi

# ---- --schedule plateau: stopped off the eval grid (step 13) and resumed == uninterrupted ----
plat="--schedule plateau --patience 0 --factor 0.5 --threshold 0.5"
pmodel=$(echo "$model" | sed 's/--warmup 5 //')  # no warmup in a plateau or onecycle run
"$bin" train $pmodel $plat --iters 20 --eval-every 5 --out "$d/pl_full.ckpt" \
    --log "$d/pl_full.csv" > /dev/null 2> "$d/pl_full.err" || bad "plateau: 20 steps"
"$bin" train $pmodel $plat --iters 13 --eval-every 5 --out "$d/pl_part.ckpt" \
    > /dev/null 2> "$d/pl_part.err" || bad "plateau: 13 steps"
"$bin" train --resume "$d/pl_part.ckpt" --iters 20 --log "$d/pl_res.csv" \
    > /dev/null 2> "$d/pl_res.err" || { bad "plateau: resume"; cat "$d/pl_res.err" >&2; }
awk -F, 'NR > 14 {print $1, $2, $4}' "$d/pl_full.csv" > "$d/pl_full.last"
awk -F, 'NR > 1 {print $1, $2, $4}' "$d/pl_res.csv" > "$d/pl_res.last"
if [ "$(wc -l < "$d/pl_res.last")" = 7 ] && cmp -s "$d/pl_full.last" "$d/pl_res.last" &&
   [ "$(awk -F, 'NR > 1 {print $4}' "$d/pl_full.csv" | sort -u | wc -l)" -gt 1 ]; then
    ok "--schedule plateau: the lr falls, and a resumed run's losses and lrs of steps 14..20" \
       "equal the uninterrupted run's"
else
    bad "--schedule plateau: resumed run differs"; paste "$d/pl_full.last" "$d/pl_res.last" >&2
fi

# ---- sample: cache on and off, same seed, same text ----
"$bin" sample --ckpt "$d/full.ckpt" --tokens 120 --seed 5 --prompt "ROMEO:" \
    > "$d/s_cache.txt" 2> "$d/s_cache.err"
rc1=$?
"$bin" sample --ckpt "$d/full.ckpt" --tokens 120 --seed 5 --prompt "ROMEO:" --no-cache \
    > "$d/s_nocache.txt" 2> "$d/s_nocache.err"
rc2=$?
if [ $rc1 = 0 ] && [ $rc2 = 0 ] && cmp -s "$d/s_cache.txt" "$d/s_nocache.txt" &&
   [ "$(head -c 6 "$d/s_cache.txt")" = "ROMEO:" ] &&
   [ "$(wc -c < "$d/s_cache.txt")" -ge 127 ]; then
    ok "sample: KV cache and --no-cache print the same 120 characters"
else
    bad "sample (exit $rc1, $rc2)"; cat "$d/s_cache.txt" "$d/s_nocache.txt" "$d/s_cache.err" >&2
fi
"$bin" sample --ckpt "$d/full.ckpt" --tokens 50 --seed 6 --block 8 --temperature 0 \
    > /dev/null 2>&1 && ok "sample --block 8 --temperature 0" || bad "sample --block 8 (greedy)"

# ---- eval: same batches as the run's evals, so the same numbers ----
"$bin" eval --ckpt "$d/full.ckpt" > "$d/eval.out" 2> "$d/eval.err"
rc=$?
want=$(grep '^done' "$d/full.out" | cut -d' ' -f3-4)
if [ $rc = 0 ] && grep -q "^eval train_loss=$num val_loss=$num\$" "$d/eval.out" &&
   [ "$(cat "$d/eval.out")" = "eval $want" ]; then
    ok "eval: $(cat "$d/eval.out")"
else
    bad "eval (exit $rc): '$(cat "$d/eval.out")', want 'eval $want'"; cat "$d/eval.err" >&2
fi

# ---- --quantize int8: the Linears and the head in int8; sampling stays deterministic ----
"$bin" sample --ckpt "$d/full.ckpt" --tokens 120 --seed 5 --prompt "ROMEO:" --quantize int8 \
    > "$d/q_cache.txt" 2> "$d/q_cache.err"
rc1=$?
"$bin" sample --ckpt "$d/full.ckpt" --tokens 120 --seed 5 --prompt "ROMEO:" --quantize int8 \
    --no-cache > "$d/q_nocache.txt" 2> "$d/q_nocache.err"
rc2=$?
if [ $rc1 = 0 ] && [ $rc2 = 0 ] && cmp -s "$d/q_cache.txt" "$d/q_nocache.txt" &&
   [ "$(wc -c < "$d/q_cache.txt")" -ge 127 ] && grep -q "int8)$" "$d/q_cache.err" &&
   grep -q "^quantized to int8: matmul weights [0-9]* -> [0-9]* bytes" "$d/q_cache.err"; then
    ok "sample --quantize int8: KV cache and --no-cache print the same 120 characters"
else
    bad "sample --quantize int8 (exit $rc1, $rc2)"; cat "$d/q_cache.err" >&2
fi
"$bin" eval --ckpt "$d/full.ckpt" --quantize int8 > "$d/q_eval.out" 2> "$d/q_eval.err"
rc=$?
if [ $rc = 0 ] && grep -q "^eval train_loss=$num val_loss=$num\$" "$d/q_eval.out" &&
   awk -v a="$(cut -d= -f3 "$d/eval.out")" -v b="$(cut -d= -f3 "$d/q_eval.out")" \
       'BEGIN { d = a - b; exit !(d < 0.02 && d > -0.02) }'; then
    ok "eval --quantize int8: $(cat "$d/q_eval.out") (f32: $(cat "$d/eval.out"))"
else
    bad "eval --quantize int8 (exit $rc): '$(cat "$d/q_eval.out")' vs '$(cat "$d/eval.out")'"
    cat "$d/q_eval.err" >&2
fi
# --quantize bf16: one row (the KV cache) and many (--no-cache) run the same arithmetic
"$bin" sample --ckpt "$d/full.ckpt" --tokens 120 --seed 5 --prompt "ROMEO:" --quantize bf16 \
    > "$d/h_cache.txt" 2> "$d/h_cache.err"
rc1=$?
"$bin" sample --ckpt "$d/full.ckpt" --tokens 120 --seed 5 --prompt "ROMEO:" --quantize bf16 \
    --no-cache > "$d/h_nocache.txt" 2> "$d/h_nocache.err"
rc2=$?
if [ $rc1 = 0 ] && [ $rc2 = 0 ] && cmp -s "$d/h_cache.txt" "$d/h_nocache.txt" &&
   [ "$(wc -c < "$d/h_cache.txt")" -ge 127 ] &&
   grep -q "^quantized to bf16: matmul weights [0-9]* -> [0-9]* bytes" "$d/h_cache.err"; then
    ok "sample --quantize bf16: KV cache and --no-cache print the same 120 characters"
else
    bad "sample --quantize bf16 (exit $rc1, $rc2)"; cat "$d/h_cache.err" >&2
fi
"$bin" eval --ckpt "$d/full.ckpt" --quantize bf16 > "$d/h_eval.out" 2> "$d/h_eval.err"
rc=$?
if [ $rc = 0 ] && grep -q "^eval train_loss=$num val_loss=$num\$" "$d/h_eval.out" &&
   ! cmp -s "$d/h_eval.out" "$d/eval.out" &&
   awk -v a="$(cut -d= -f3 "$d/eval.out")" -v b="$(cut -d= -f3 "$d/h_eval.out")" \
       'BEGIN { d = a - b; exit !(d < 0.002 && d > -0.002) }'; then
    ok "eval --quantize bf16: $(cat "$d/h_eval.out") (f32: $(cat "$d/eval.out"))"
else
    bad "eval --quantize bf16 (exit $rc): '$(cat "$d/h_eval.out")' vs '$(cat "$d/eval.out")'"
    cat "$d/h_eval.err" >&2
fi
# ---- --quantize int4: 4-bit blocks; sampling deterministic, eval near f32; unknown refused ----
"$bin" sample --ckpt "$d/full.ckpt" --tokens 120 --seed 5 --prompt "ROMEO:" --quantize int4 \
    > "$d/q4_cache.txt" 2> "$d/q4_cache.err"
rc1=$?
"$bin" sample --ckpt "$d/full.ckpt" --tokens 120 --seed 5 --prompt "ROMEO:" --quantize int4 \
    --no-cache > "$d/q4_nocache.txt" 2> /dev/null
rc2=$?
if [ $rc1 = 0 ] && [ $rc2 = 0 ] && cmp -s "$d/q4_cache.txt" "$d/q4_nocache.txt" &&
   [ "$(wc -c < "$d/q4_cache.txt")" -ge 127 ] &&
   grep -q "^quantized to int4: matmul weights [0-9]* -> [0-9]* bytes" "$d/q4_cache.err"; then
    ok "sample --quantize int4: KV cache and --no-cache print the same 120 characters"
else
    bad "sample --quantize int4 (exit $rc1, $rc2)"; cat "$d/q4_cache.err" >&2
fi
"$bin" eval --ckpt "$d/full.ckpt" --quantize int4 > "$d/q4_eval.out" 2> /dev/null
rc=$?
if [ $rc = 0 ] && grep -q "^eval train_loss=$num val_loss=$num\$" "$d/q4_eval.out" &&
   awk -v a="$(cut -d= -f3 "$d/eval.out")" -v b="$(cut -d= -f3 "$d/q4_eval.out")" \
       'BEGIN { d = a - b; exit !(d < 0.05 && d > -0.05) }'; then
    ok "eval --quantize int4: $(cat "$d/q4_eval.out") (f32: $(cat "$d/eval.out"))"
else
    bad "eval --quantize int4 (exit $rc): '$(cat "$d/q4_eval.out")' vs '$(cat "$d/eval.out")'"
fi
"$bin" eval --ckpt "$d/full.ckpt" --quantize int3 > /dev/null 2> "$d/q_bad.err"
rc=$?
if [ $rc = 2 ] && grep -q "'int3' is not a weight format; use f32, int8, bf16 or int4" \
       "$d/q_bad.err"; then
    ok "eval --quantize int3: exit 2: $(tail -n 1 "$d/q_bad.err")"
else
    bad "eval --quantize int3: exit $rc"; cat "$d/q_bad.err" >&2
fi

# ---- best and last: --out holds the last eval's state, FILE.best.ckpt the best one ----
# At --lr 0.03 the val loss of this run rises at step 25 (after its best, at step 20).
bl="--layers 1 --embd 32 --heads 2 --block 16 --batch 4 --eval-every 5 --eval-iters 4"
bl="$bl --threads 1 --lr 0.03 --warmup 0 --min-lr 0.03 --data $d/tiny.txt"
"$bin" train $bl --iters 25 --out "$d/bl.ckpt" > "$d/bl.out" 2> "$d/bl.err" || bad "best/last run"
best=$(awk '/^eval step=/ { split($4, v, "="); if (!n++ || v[2] + 0 < m + 0) { m = v[2]; l = $0 } }
            END { print l }' "$d/bl.out")
last=$(grep '^eval step=25 ' "$d/bl.out")
"$bin" eval --ckpt "$d/bl.ckpt" > "$d/bl_last.out" 2> /dev/null
"$bin" eval --ckpt "$d/bl.best.ckpt" > "$d/bl_best.out" 2> /dev/null
if [ -n "$last" ] && [ "$best" != "$last" ] &&
   [ "$(cat "$d/bl_last.out")" = "eval $(echo "$last" | cut -d' ' -f3-4)" ] &&
   [ "$(cat "$d/bl_best.out")" = "eval $(echo "$best" | cut -d' ' -f3-4)" ]; then
    ok "best and last kept apart: bl.ckpt is step 25, bl.best.ckpt is '$best'"
else
    bad "best/last: want last '$last' and best '$best'"
    cat "$d/bl.out" "$d/bl_last.out" "$d/bl_best.out" >&2
fi
cp "$d/bl.best.ckpt" "$d/bl.best.before"
"$bin" train --resume "$d/bl.ckpt" --iters 26 --out "$d/bl.ckpt" > /dev/null 2> "$d/bl2.err" &&
    grep -q "resumed from $d/bl.ckpt at step 25" "$d/bl2.err" &&
    grep -q "saved $d/bl.ckpt (step 26," "$d/bl2.err" ||
    { bad "resume from the last state"; cat "$d/bl2.err" >&2; }
if grep -q "(the best so far)" "$d/bl2.err" || cmp -s "$d/bl.best.ckpt" "$d/bl.best.before"; then
    ok "resume continues from the last state (step 25) and keeps the best file's rule"
else
    bad "resume: the best file changed without a better val loss"
fi

# ---- a default that conflicts with a flag you give is lowered, with a note ----
small="--layers 1 --embd 32 --heads 2 --block 16 --batch 4 --threads 1 --data $d/tiny.txt"
"$bin" train $small --iters 4 --eval-every 2 --out "$d/short.ckpt" > "$d/short.out" \
    2> "$d/short.err"
rc=$?
if [ $rc = 0 ] && grep -q '^char_gpt: note: --warmup 100 (the default) is not below --iters 4;'\
' using --warmup 0$' "$d/short.err" && grep -q '^done steps=4 ' "$d/short.out"; then
    ok "--iters 4 alone: $(grep note "$d/short.err")"
else
    bad "--iters 4 alone (exit $rc)"; cat "$d/short.err" >&2
fi
"$bin" train $small --iters 4 --eval-every 2 --lr 1e-5 --out "$d/short.ckpt" > /dev/null \
    2> "$d/short.err"
rc=$?
if [ $rc = 0 ] && grep -q '^char_gpt: note: --min-lr 0.0001 (the default) is above --lr 1e-05;'\
' using --min-lr 1e-06$' "$d/short.err"; then
    ok "--lr 1e-5 alone: $(grep 'note: --min-lr' "$d/short.err")"
else
    bad "--lr 1e-5 alone (exit $rc)"; cat "$d/short.err" >&2
fi

# ---- the progress bar fits the terminal (a pty of 50 and of 120 columns) ----
if command -v script > /dev/null 2>&1 && script -qec true /dev/null > /dev/null 2>&1; then
    for cols in 50 120; do
        script -qec "stty cols $cols; '$bin' train $small --iters 300 --eval-every 150 \
            --out '$d/pty.ckpt' > /dev/null" /dev/null > "$d/pty$cols.txt" 2>&1
        # The bar's draws: "ESC[K" then an optional [===>  ] and "N/M loss".
        esc=$(printf '\033')
        tr '\r' '\n' < "$d/pty$cols.txt" |
            grep -a "$esc\[K\(\[[ =>]*\] \)\?[0-9]*/300 loss" | sed "s/$esc\[K//" \
            > "$d/bars$cols.txt"
        widest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' \
                 "$d/bars$cols.txt")
        if [ -s "$d/bars$cols.txt" ] && [ "$widest" -lt "$cols" ] &&
           { [ $cols = 50 ] || grep -q '^\[=' "$d/bars$cols.txt"; }; then
            ok "progress bar on $cols columns: $(wc -l < "$d/bars$cols.txt") draws," \
               "the widest $widest"
        else
            bad "progress bar on $cols columns: widest $widest"; cat "$d/bars$cols.txt" >&2
        fi
    done
else
    echo "skip progress bar width: no script(1) to make a pty"
fi

# ---- bad input: exit 1..127, one line on stderr, no file clobbered ----
cp "$d/full.ckpt" "$d/keep.ckpt"
cp "$d/full.csv" "$d/keep.csv"
: > "$d/empty.txt"
printf 'abcdefghijklmnopqrst' > "$d/short.txt"
printf '@# #@ @@#\n%.0s' $(seq 1 200) > "$d/other.txt"
head -c 1000 "$d/full.ckpt" > "$d/trunc.ckpt"
# One byte of the last tensor's data changed: only its checksum can tell.
size=$(wc -c < "$d/full.ckpt")
head -c $((size - 100)) "$d/full.ckpt" > "$d/corrupt.ckpt"
printf 'X' >> "$d/corrupt.ckpt"
tail -c 99 "$d/full.ckpt" >> "$d/corrupt.ckpt"
keep="--out $d/full.ckpt --log $d/full.csv"
expect_fail() {  # expect_fail <label> <pattern the message must contain> <args...>
    label=$1
    pattern=$2
    shift 2
    "$bin" "$@" > "${stdout_to:-$d/bad.out}" 2> "$d/bad.err"
    rc=$?
    lines=$(wc -l < "$d/bad.err")
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$lines" = 1 ] &&
       grep -q '^char_gpt: ' "$d/bad.err" && grep -q -- "$pattern" "$d/bad.err"; then
        ok "bad input, $label: exit $rc: $(cat "$d/bad.err")"
    else
        bad "bad input, $label: exit $rc, $lines stderr lines, want '$pattern'"
        cat "$d/bad.err" >&2
    fi
}
expect_fail "unknown flag" "unknown flag '--bogus'" train --bogus 1 $keep
expect_fail "non-numeric value" "--layers expects an integer, got 'four'" \
    train $model --layers four $keep
expect_fail "non-numeric real" "--lr expects a number, got '1e-3x'" \
    train $model --lr 1e-3x $keep
expect_fail "zero size" "--embd 0 is out of range" train $model --embd 0 $keep
expect_fail "negative size" "--batch -3 is out of range" train $model --batch -3 $keep
expect_fail "embd % heads" "--embd 30 is not divisible by --heads 4" \
    train $model --embd 30 --heads 4 $keep
expect_fail "heads % kv-heads" "--heads 4 is not divisible by --kv-heads 3" \
    train $model --heads 4 --kv-heads 3 $keep
expect_fail "missing data" "missing.txt': No such file" \
    train $model --data "$d/missing.txt" $keep
expect_fail "data is a directory" "is a directory" train $model --data "$d" $keep
expect_fail "empty data" "empty.txt' is empty" train $model --data "$d/empty.txt" $keep
expect_fail "data shorter than block+1" "block size 16 needs at least 17" \
    train $model --data "$d/short.txt" $keep
expect_fail "--warmup and --iters both given" "--warmup 10 must be below --iters 4; lower" \
    train $model --iters 4 --warmup 10 $keep
expect_fail "unknown --schedule" "--schedule expects one of cosine, wsd, onecycle" \
    train $model --schedule bogus $keep
expect_fail "--warmup with --schedule plateau" \
    "--warmup applies to --schedule cosine and wsd, not plateau" \
    train $model --schedule plateau --warmup 5 $keep
expect_fail "--warmdown without --schedule wsd" "--warmdown applies to --schedule wsd, not" \
    train $model --warmdown 5 $keep
expect_fail "wsd warmup and warmdown too long" "plus --warmdown 15 (given) exceed --iters 20" \
    train $model --schedule wsd --iters 20 --warmup 10 --warmdown 15 $keep
expect_fail "onecycle with an empty phase" "leaves a phase of the onecycle schedule without" \
    train $pmodel --schedule onecycle --iters 10 --pct-start 0.1 $keep
expect_fail "onecycle shorter than the run" "where the onecycle schedule ends" \
    train $pmodel --schedule onecycle --iters 30 --decay-iters 20 $keep
expect_fail "--min-lr above a given --lr" \
    "--min-lr 0.001 must be at most --lr 1e-05; lower --min-lr" \
    train $model --lr 1e-5 --min-lr 1e-3 $keep
expect_fail "--pos unknown" "--pos expects one of learned, rope, got 'abs'" \
    train $model --pos abs $keep
expect_fail "unknown --optim" "--optim 'lbfgs' is not adamw nor muon" \
    train --optim lbfgs --iters 200 $keep
expect_fail "resume with another qkv bias" "trained with another --no-qkv-bias" \
    train --resume "$d/full.ckpt" --no-qkv-bias --iters 40 $keep
expect_fail "resume with another config" "trained with --layers 1, not 2" \
    train --resume "$d/full.ckpt" --layers 2 --iters 40 $keep
expect_fail "resume with another vocab" "differs from the one" \
    train --resume "$d/full.ckpt" --data "$d/other.txt" --iters 40 $keep
expect_fail "resume with a larger --block" "trained with --block 16, not 32" \
    train --resume "$d/full.ckpt" --block 32 --iters 40 $keep
expect_fail "resume from a corrupt checkpoint" "checksum mismatch" \
    train --resume "$d/corrupt.ckpt" --iters 40 $keep
expect_fail "resume past --iters" "already at step 30 of --iters 30" \
    train --resume "$d/full.ckpt" $keep
expect_fail "unwritable --out" "cannot write --out" \
    train $model --iters 2 --warmup 0 --out "$d/tiny.txt/x.ckpt"
expect_fail "--out is a directory" "is a directory; pass a file path" \
    train $model --iters 2 --warmup 0 --out "$d"
expect_fail "sample --block above the model's" "--block 17 is above the block size 16" \
    sample --ckpt "$d/full.ckpt" --block 17
expect_fail "prompt char not in vocab" 'character \\x01 at position 1' \
    sample --ckpt "$d/full.ckpt" --prompt "$(printf 'a\001')"
expect_fail "truncated checkpoint" "truncated" sample --ckpt "$d/trunc.ckpt"
expect_fail "corrupt checkpoint" "(its data is corrupt)" sample --ckpt "$d/corrupt.ckpt"
expect_fail "not a checkpoint" "bad magic" eval --ckpt "$d/tiny.txt"
expect_fail "missing checkpoint" "No such file" eval --ckpt "$d/nothing.ckpt"
expect_fail "sample without --ckpt" "sample needs --ckpt" sample
expect_fail "eval on text outside the vocab" "character '@' at position 0" \
    eval --ckpt "$d/full.ckpt" --data "$d/other.txt"
expect_fail "top-p out of range" "--top-p 1.5 is out of range" \
    sample --ckpt "$d/full.ckpt" --top-p 1.5
expect_fail "unknown command" "unknown command 'fly'" fly
if [ -w /dev/full ]; then
    stdout_to=/dev/full expect_fail "stdout on a full disk (/dev/full)" \
        "cannot write to stdout: No space left on device" sample --ckpt "$d/full.ckpt"
fi

# Runtime failures come once training runs, so stderr has progress lines before the error.
last_line_is() {  # last_line_is <label> <rc> <pattern>: the last stderr line of the run
    if [ "$2" = 1 ] && tail -n 1 "$d/bad.err" | grep -q -- "$3"; then
        ok "$1: exit 1: $(tail -n 1 "$d/bad.err")"
    else
        bad "$1: exit $2, want '$3'"; cat "$d/bad.err" >&2
    fi
}
"$bin" train $model --iters 30 --warmup 0 --lr 1e6 --out "$d/nan.ckpt" > /dev/null 2> "$d/bad.err"
last_line_is "diverging loss (--lr 1e6)" $? \
    '^char_gpt: step [0-9]*: the .* is .*nan.*nothing was saved in this run'
[ ! -e "$d/nan.ckpt" ] || bad "a diverged run without a save left $d/nan.ckpt"
if [ -w /dev/full ]; then
    "$bin" train $model --iters 30 --out "$d/log_full.ckpt" --log /dev/full \
        > /dev/null 2> "$d/bad.err"
    last_line_is "--log on a full disk (/dev/full)" $? \
        "cannot write --log '/dev/full': No space left on device"
fi

# Divergence after a good checkpoint: resumed at step 30 with a huge learning rate, the loss
# turns NaN/Inf; it is caught the step it appears (every logged loss before it is finite) and
# the checkpoint stays the one saved before, byte for byte, and still loads.
cp "$d/full.ckpt" "$d/best.ckpt"
"$bin" train --resume "$d/best.ckpt" --iters 60 --decay-iters 60 --lr 1e6 --min-lr 1e5 \
    --out "$d/best.ckpt" --log "$d/diverge.csv" > /dev/null 2> "$d/bad.err"
last_line_is "diverging after a saved checkpoint" $? \
    '^char_gpt: step [0-9]*: the .* is .*\(nan\|inf\).*is untouched'
div_step=$(tail -n 1 "$d/bad.err" | sed -n 's/^char_gpt: step \([0-9]*\):.*/\1/p')
last_logged=$(tail -n 1 "$d/diverge.csv" | cut -d, -f1)
if [ -n "$div_step" ] && [ "$div_step" = $((last_logged + 1)) ] &&
   ! awk -F, 'NR > 1 && $2 !~ /^-?[0-9]/' "$d/diverge.csv" | grep -q . &&
   cmp -s "$d/best.ckpt" "$d/full.ckpt" &&
   [ "$("$bin" eval --ckpt "$d/best.ckpt" 2>/dev/null)" = "$(cat "$d/eval.out")" ]; then
    ok "divergence caught at step $div_step (steps 31..$last_logged finite); the checkpoint" \
       "is intact and evaluates as before"
else
    bad "divergence: step '$div_step' after logged step '$last_logged', or the checkpoint changed"
    cat "$d/diverge.csv" >&2
fi

# ---- a full disk during a save: a 256 KiB tmpfs (root, in a private mount namespace), else
# a file-size limit; training stops with one line and the previous checkpoint is intact ----
rm -rf "$d/fs" && mkdir "$d/fs"
if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null 2>&1 && unshare -m true 2> /dev/null
then
    how="a full 256 KiB tmpfs"
    want="No space left on device; the previous file is unchanged"
    unshare -m sh -c 'mount -t tmpfs -o size=256k tmpfs "$1" || exit 99
        cp "$2" "$1/out.ckpt" || exit 98
        "$3" train --resume "$1/out.ckpt" --iters 40 --out "$1/out.ckpt" > /dev/null 2> "$4"
        rc=$?; cp "$1/out.ckpt" "$5"; ls -A "$1" > "$6"; exit $rc' \
        sh "$d/fs" "$d/full.ckpt" "$bin" "$d/bad.err" "$d/df_after.ckpt" "$d/df.ls"
    rc=$?
else
    how="ulimit -f: cannot mount a tmpfs here"
    want="File too large; the previous file is unchanged"
    cp "$d/full.ckpt" "$d/fs/out.ckpt"
    (ulimit -f 100; exec "$bin" train --resume "$d/fs/out.ckpt" --iters 40 \
         --out "$d/fs/out.ckpt" > /dev/null 2> "$d/bad.err")
    rc=$?
    cp "$d/fs/out.ckpt" "$d/df_after.ckpt"
    ls -A "$d/fs" > "$d/df.ls"
fi
last_line_is "disk full during a save ($how)" $rc "$want"
if cmp -s "$d/df_after.ckpt" "$d/full.ckpt" && [ "$(cat "$d/df.ls")" = "out.ckpt" ]; then
    ok "disk full: the previous checkpoint is intact and no temp file is left"
else
    bad "disk full: the checkpoint changed or files were left: $(cat "$d/df.ls")"
fi
if cmp -s "$d/full.ckpt" "$d/keep.ckpt" && cmp -s "$d/full.csv" "$d/keep.csv" &&
   [ ! -e "$d/nan.ckpt" ]; then
    ok "bad input clobbered no checkpoint or log"
else
    bad "a checkpoint or log changed after bad input"
fi

# ---- profiling: --profile prints the summary and the op table, --trace writes one event per
# op, and the losses are those of the plain run ----
"$bin" train $model --iters 30 --out "$d/prof.ckpt" --log "$d/prof.csv" --profile \
    --trace "$d/trace.json" > /dev/null 2> "$d/prof.err"
rc=$?
fwd=$(awk '$1 == "ops" && $2 == "total" { print $3 + $4 }' "$d/prof.err")
events=$(grep -c '"ph":"X"' "$d/trace.json" 2> /dev/null)
if [ $rc = 0 ] && cmp -s "$d/prof.csv" "$d/plain.csv" &&
   grep -q '^(model) (GPT) ' "$d/prof.err" && grep -q '^affine ' "$d/prof.err" &&
   grep -q '^memory: .* peak; buffer cache: ' "$d/prof.err" &&
   [ "$(head -c 17 "$d/trace.json")" = '{"displayTimeUnit' ] &&
   [ -n "$fwd" ] && [ "$events" = "$fwd" ] && ! ls "$d"/trace.json.tmp.* > /dev/null 2>&1; then
    ok "train --profile --trace: summary, op table, $events trace events, the same losses"
else
    bad "train --profile --trace (exit $rc, $events events for $fwd ops)"; cat "$d/prof.err" >&2
fi
"$bin" train $model --iters 6 --out "$d/prof2.ckpt" --trace "$d/no/such/dir/t.json" \
    > /dev/null 2> "$d/bad.err"
last_line_is "--trace into a missing directory" $? \
    "cannot write --trace '.*t.json': No such file or directory; pick a writable path"

if [ $fails = 0 ]; then echo "char_gpt: ok"; else echo "char_gpt: $fails failed" >&2; exit 1; fi
