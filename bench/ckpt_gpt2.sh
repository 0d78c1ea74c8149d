#!/bin/sh
# Activation checkpointing on GPT-2 124M: `gpt train --preset gpt2 --tokenizer gpt2` on Tiny
# Shakespeare at B=1, T=1024 for a few steps, without and with --checkpoint-blocks, on 1 and 2
# threads. One `bench checkpoint_blocks ...` line per run: the done line's ms per step (the mean
# over the steps, evals excluded; the profiler is on in every run, about 1%), the profiler's
# peak of live tensor bytes over the steps and the process's peak RSS (/usr/bin/time, the whole
# run). Never part of make test.
#
#   sh bench/ckpt_gpt2.sh [build] [steps]      (make bench-ckpt; steps default 3)
build=${1:-build}
steps=${2:-3}
d=$(mktemp -d /tmp/tt_bench_ckpt_XXXXXX) || exit 1
trap 'rm -rf "$d"' EXIT
[ -x /usr/bin/time ] || { echo "bench checkpoint_blocks: skipped (no /usr/bin/time)"; exit 0; }
fail=0
for threads in 1 2; do
    for c in "" --checkpoint-blocks; do
        /usr/bin/time -f "rss_kb=%M" -o "$d/time" \
            "$build/gpt" train --tokenizer gpt2 --preset gpt2 --data data/tinyshakespeare.txt \
            --batch 1 --iters "$steps" --warmup 1 --eval-every "$steps" --eval-iters 1 \
            --threads "$threads" --profile $c --out "$d/run.ckpt" > "$d/out" 2> "$d/err" ||
            { echo "bench checkpoint_blocks: gpt train $c failed" >&2; cat "$d/err" >&2; fail=1;
              continue; }
        ms=$(sed -n 's/^done .*ms_per_step=\([0-9.]*\).*/\1/p' "$d/out")
        loss=$(sed -n 's/^done .* train_loss=\([0-9.]*\).*/\1/p' "$d/out")
        peak=$(sed -n 's/^memory: .* MB live, \([0-9.]*\) MB peak.*/\1/p' "$d/err")
        rss=$(sed -n 's/^rss_kb=//p' "$d/time")
        echo "bench checkpoint_blocks config=gpt2 batch=1 block=1024 threads=$threads" \
             "checkpoint_blocks=$([ -n "$c" ] && echo 1 || echo 0) steps=$steps" \
             "ms_per_step=$ms peak_live_mb=$peak peak_rss_mb=$((rss / 1024)) train_loss=$loss"
        rm -f "$d"/run*.ckpt
    done
done
exit $fail
