#!/bin/sh
# Data-parallel training of build/char_gpt. In any build: --grad-accum 2 gives other losses
# than one micro-batch, --resume of a --grad-accum run reproduces the uninterrupted losses bit
# for bit, bad values are refused, tests/dist_check passes as rank 0 of 1. With MPIRUN set
# (make test MPI=1, make test-mpi MPI=1): tests/dist_check's collectives on 2 ranks; a 2-rank
# run of 50 steps prints only rank 0's lines and gives the losses, evals and parameters of the
# 1-rank --grad-accum 2 run bit for bit, and so does one with --overlap (the all-reduce
# started during the backward; with --grad-accum 2 too, against 2 ranks without it); its
# checkpoint evaluates like that run's; --resume continues it bit for bit on 2 ranks and on 1
# (which takes --grad-accum 2 from the checkpoint), and refuses a rank count that cannot
# share its micro-batches; ranks given another model or another --data stop at start naming
# what differs; a rank killed with SIGKILL ends the job (non-zero exit, mpirun's message) and
# leaves the last checkpoint loadable and resumable.
# Usage: MPIRUN="mpirun ..." sh tests/run_char_gpt_dist.sh [builddir]
build=${1:-build}
bin=$build/char_gpt
[ -x "$bin" ] || { echo "run_char_gpt_dist: $bin is not built" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/char_gpt
d=$build/char_gpt_dist_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }

if [ -s ../shared/data/tinyshakespeare.txt ]; then
    head -c 20000 ../shared/data/tinyshakespeare.txt > "$d/tiny.txt"
else
    awk 'BEGIN { srand(7); split("the king and queen of england shall speak to thee my lord " \
         "what is this night ROMEO: JULIET: O, I pray you, sir!", w, " ");
         for (i = 0; i < 3000; i++) { printf "%s%s", w[int(rand() * 24) + 1],
                                      (i % 12 == 11) ? "\n" : " " } }' > "$d/tiny.txt"
fi
# Dropout on: the masks come from each micro-batch's own stream too.
model="--layers 2 --embd 32 --heads 2 --block 16 --batch 4 --warmup 5 --threads 1"
model="$model --dropout 0.1 --eval-iters 5 --data $d/tiny.txt"
# The parameters' fingerprint at a step, from the `saved` lines on stderr.
fp() { grep "saved .*(step $2," "$1" | sed 's/.*fingerprint \([0-9a-f]*\).*/\1/'; }
# stdout without the timing fields of the done line.
losses() { sed 's/ ms_per_step=.*//' "$1"; }

# ---- --grad-accum in one process ----
"$bin" train $model --iters 50 --eval-every 10 --out "$d/a1.ckpt" --log "$d/a1.csv" \
    > "$d/a1.out" 2> "$d/a1.err" || bad "1 micro-batch run"
"$bin" train $model --iters 50 --eval-every 10 --grad-accum 2 --out "$d/a2.ckpt" \
    --log "$d/a2.csv" > "$d/a2.out" 2> "$d/a2.err" || bad "--grad-accum 2 run"
if [ "$(wc -l < "$d/a2.csv")" = 51 ] && ! cmp -s "$d/a1.csv" "$d/a2.csv" &&
   grep -q "1 threads, 1 rank x 2 micro-batches of 4" "$d/a2.err"; then
    ok "--grad-accum 2: 50 steps over 2 micro-batches, other losses than 1"
else
    bad "--grad-accum 2"; cat "$d/a2.err" >&2
fi
"$bin" train $model --iters 30 --decay-iters 50 --eval-every 10 --grad-accum 2 \
    --out "$d/a2_30.ckpt" --log "$d/a2_30.csv" > /dev/null 2> "$d/a2_30.err" ||
    bad "--grad-accum 2, 30 steps"
"$bin" train --resume "$d/a2_30.ckpt" --iters 50 --out "$d/a2_res.ckpt" \
    --log "$d/a2_30.csv" > "$d/a2_res.out" 2> "$d/a2_res.err" || bad "--grad-accum resume"
if cmp -s "$d/a2.csv" "$d/a2_30.csv" && [ -n "$(fp "$d/a2.err" 50)" ] &&
   [ "$(fp "$d/a2.err" 50)" = "$(fp "$d/a2_res.err" 50)" ]; then
    ok "--grad-accum 2: --resume at step 30 gives the 20 later losses bit for bit"
else
    bad "--grad-accum 2 resume differs"; diff "$d/a2.csv" "$d/a2_30.csv" | head -5 >&2
fi
for v in 0 -1 70000; do
    "$bin" train $model --iters 5 --grad-accum $v --out "$d/bad.ckpt" > /dev/null \
        2> "$d/bad.err"
    rc=$?
    if [ $rc = 2 ] && grep -q -- "--grad-accum $v is out of range" "$d/bad.err" &&
       [ ! -e "$d/bad.ckpt" ]; then
        ok "--grad-accum $v refused (exit 2)"
    else
        bad "--grad-accum $v (exit $rc)"; cat "$d/bad.err" >&2
    fi
done
"$bin" train --resume "$d/a2_30.ckpt" --iters 50 --grad-accum 1 --out "$d/bad.ckpt" \
    > /dev/null 2> "$d/bad.err"
rc=$?
if [ $rc = 2 ] && grep -q "takes 2 micro-batches per step, but 1 ranks x --grad-accum 1" \
        "$d/bad.err"; then
    ok "--resume with another global batch refused"
else
    bad "--resume --grad-accum 1 (exit $rc)"; cat "$d/bad.err" >&2
fi

"$bin" train $model --iters 10 --bucket 0 --out "$d/bad.ckpt" > /dev/null 2> "$d/bad.err"
rc=$?
if [ $rc = 2 ] && grep -q -- "--bucket 0 is out of range" "$d/bad.err"; then
    ok "--bucket 0 refused (exit 2)"
else
    bad "--bucket 0 (exit $rc)"; cat "$d/bad.err" >&2
fi

# The collectives alone (rank 0 of 1; under mpirun below on 2 ranks).
if [ -x "$build/tests/dist_check" ] && "$build/tests/dist_check" > "$d/dc1.out" 2> "$d/dc1.err" &&
   grep -q "agree on 1 rank" "$d/dc1.out"; then
    ok "$(cat "$d/dc1.out")"
else
    bad "dist_check alone"; cat "$d/dc1.out" "$d/dc1.err" >&2
fi

if [ -z "$MPIRUN" ]; then
    echo "run_char_gpt_dist: no MPIRUN: the MPI runs are skipped (make test MPI=1 runs them)"
    [ $fails = 0 ] && echo "run_char_gpt_dist: all passed" && exit 0
    echo "run_char_gpt_dist: $fails failed" >&2
    exit 1
fi

# ---- the collectives on known numbers (tests/dist_check.c) ----
if [ -x "$build/tests/dist_check" ] && $MPIRUN -np 2 "$build/tests/dist_check" > "$d/dc.out" \
        2> "$d/dc.err" && grep -q "agree on 2 ranks" "$d/dc.out"; then
    ok "$(cat "$d/dc.out")"
else
    bad "dist_check on 2 ranks"; cat "$d/dc.out" "$d/dc.err" >&2
fi

# ---- 2 ranks against 1 rank with --grad-accum 2 ----
$MPIRUN -np 2 "$bin" train $model --iters 50 --eval-every 10 --out "$d/r2.ckpt" \
    --log "$d/r2.csv" > "$d/r2.out" 2> "$d/r2.err"
rc=$?
if [ $rc = 0 ] && [ "$(wc -l < "$d/r2.out")" = 6 ] && [ "$(grep -c '^saved ' "$d/r2.err")" = 5 ] &&
   grep -q "rank 1 of 2 on .*micro-batches 1\.\.1 of 2" "$d/r2.err" &&
   grep -q "2 ranks x 1 micro-batch of 4" "$d/r2.err"; then
    ok "2 ranks: rank 0 alone prints 5 evals and a done line and saves 5 times"
else
    bad "2 ranks (exit $rc)"; cat "$d/r2.out" "$d/r2.err" >&2
fi
if cmp -s "$d/r2.csv" "$d/a2.csv" && [ "$(losses "$d/r2.out")" = "$(losses "$d/a2.out")" ] &&
   [ "$(fp "$d/r2.err" 50)" = "$(fp "$d/a2.err" 50)" ]; then
    ok "2 ranks = 1 rank --grad-accum 2 bit for bit: 50 losses, evals, parameters"
else
    bad "2 ranks differ from 1 rank --grad-accum 2"; diff "$d/r2.csv" "$d/a2.csv" | head >&2
fi
"$bin" eval --ckpt "$d/r2.ckpt" > "$d/r2_eval.out" 2> "$d/r2_eval.err" &&
"$bin" eval --ckpt "$d/a2.ckpt" > "$d/a2_eval.out" 2> "$d/a2_eval.err"
if [ $? = 0 ] && grep -q '^eval train_loss=' "$d/r2_eval.out" &&
   cmp -s "$d/r2_eval.out" "$d/a2_eval.out"; then
    ok "the 2-rank checkpoint evaluates like the 1-rank one: $(cat "$d/r2_eval.out")"
else
    bad "eval of the 2-rank checkpoint"; cat "$d/r2_eval.err" >&2
fi

# ---- the all-reduce overlapped with the backward: the same bits ----
# Buckets of 2000 elements: the model's gradients fill 14, each started during the backward as
# soon as its gradients are final (the one holding the token embedding last).
$MPIRUN -np 2 "$bin" train $model --iters 50 --eval-every 10 --overlap --bucket 2000 \
    --out "$d/o2.ckpt" --log "$d/o2.csv" > "$d/o2.out" 2> "$d/o2.err"
rc=$?
if [ $rc = 0 ] && cmp -s "$d/o2.csv" "$d/a2.csv" &&
   [ "$(losses "$d/o2.out")" = "$(losses "$d/a2.out")" ] &&
   [ "$(fp "$d/o2.err" 50)" = "$(fp "$d/a2.err" 50)" ]; then
    ok "2 ranks --overlap --bucket 2000 = 1 rank --grad-accum 2 bit for bit"
else
    bad "2 ranks --overlap (exit $rc)"; cat "$d/o2.err" >&2
    diff "$d/o2.csv" "$d/a2.csv" | head >&2
fi
# --grad-accum 2 on 2 ranks: the first micro-batch accumulates, the last one's backward
# overlaps (each gradient gets the running sum as it becomes final); the same bits as blocking.
for m in blocking overlap; do
    f=; [ $m = overlap ] && f=--overlap
    $MPIRUN -np 2 "$bin" train $model --iters 20 --eval-every 10 --grad-accum 2 $f \
        --bucket 2000 --out "$d/g$m.ckpt" --log "$d/g$m.csv" > /dev/null 2> "$d/g$m.err" ||
        bad "2 ranks --grad-accum 2 $f"
done
if [ "$(wc -l < "$d/goverlap.csv")" = 21 ] && cmp -s "$d/gblocking.csv" "$d/goverlap.csv" &&
   [ -n "$(fp "$d/goverlap.err" 20)" ] &&
   [ "$(fp "$d/goverlap.err" 20)" = "$(fp "$d/gblocking.err" 20)" ]; then
    ok "2 ranks --grad-accum 2 --overlap = without --overlap bit for bit: 20 losses, parameters"
else
    bad "2 ranks --grad-accum 2 --overlap differs"; cat "$d/goverlap.err" >&2
fi

# ---- resume on 2 ranks and on 1 ----
$MPIRUN -np 2 "$bin" train $model --iters 30 --decay-iters 50 --eval-every 10 \
    --out "$d/r2_30.ckpt" --log "$d/r2_30.csv" > /dev/null 2> "$d/r2_30.err" ||
    bad "2 ranks, 30 steps"
cp "$d/r2_30.csv" "$d/r1_30.csv"
$MPIRUN -np 2 "$bin" train --resume "$d/r2_30.ckpt" --iters 50 --out "$d/r2_res.ckpt" \
    --log "$d/r2_30.csv" > /dev/null 2> "$d/r2_res.err" || bad "2-rank resume"
"$bin" train --resume "$d/r2_30.ckpt" --iters 50 --out "$d/r1_res.ckpt" \
    --log "$d/r1_30.csv" > /dev/null 2> "$d/r1_res.err" || bad "1-rank resume"
if cmp -s "$d/r2.csv" "$d/r2_30.csv" && [ "$(fp "$d/r2_res.err" 50)" = "$(fp "$d/r2.err" 50)" ]
then
    ok "--resume on 2 ranks at step 30: the 20 later losses and the parameters bit for bit"
else
    bad "2-rank resume differs"; diff "$d/r2.csv" "$d/r2_30.csv" | head >&2
fi
if cmp -s "$d/r2.csv" "$d/r1_30.csv" && grep -q "1 rank x 2 micro-batches" "$d/r1_res.err" &&
   [ "$(fp "$d/r1_res.err" 50)" = "$(fp "$d/r2.err" 50)" ]; then
    ok "--resume of the 2-rank checkpoint on 1 rank (--grad-accum 2 from it): bit for bit"
else
    bad "1-rank resume of a 2-rank checkpoint differs"; cat "$d/r1_res.err" >&2
fi
$MPIRUN -np 3 "$bin" train --resume "$d/r2_30.ckpt" --iters 50 --out "$d/bad.ckpt" \
    > /dev/null 2> "$d/bad.err"
rc=$?
if [ $rc != 0 ] && grep -q "takes 2 micro-batches per step, which 3 ranks cannot share" \
        "$d/bad.err"; then
    ok "--resume on 3 ranks of a 2-micro-batch checkpoint refused (exit $rc)"
else
    bad "3-rank resume (exit $rc)"; cat "$d/bad.err" >&2
fi

# ---- ranks that disagree stop at start ----
$MPIRUN -np 1 "$bin" train $model --iters 10 --out "$d/bad.ckpt" : \
    -np 1 "$bin" train $model --embd 64 --iters 10 --out "$d/bad.ckpt" > /dev/null 2> "$d/bad.err"
rc=$?
if [ $rc != 0 ] && grep -q "rank 1's model config differs from rank 0's; pass the same model" \
        "$d/bad.err" && [ ! -e "$d/bad.ckpt" ]; then
    ok "another --embd on rank 1: stopped at start (exit $rc), nothing written"
else
    bad "config mismatch (exit $rc)"; cat "$d/bad.err" >&2
fi
head -c 19000 "$d/tiny.txt" > "$d/other.txt"
$MPIRUN -np 1 "$bin" train $model --iters 10 --out "$d/bad.ckpt" : \
    -np 1 "$bin" train $model --data "$d/other.txt" --iters 10 --out "$d/bad.ckpt" \
    > /dev/null 2> "$d/bad.err"
rc=$?
if [ $rc != 0 ] && grep -q "rank 1's data differs from rank 0's; give every rank the same" \
        "$d/bad.err"; then
    ok "another --data on rank 1: stopped at start (exit $rc)"
else
    bad "data mismatch (exit $rc)"; cat "$d/bad.err" >&2
fi

# ---- a rank killed mid-run ends the job; the last checkpoint stays good ----
# (timeout: a job that outlived its killed rank would fail the test instead of hanging it)
to=$(command -v timeout >/dev/null 2>&1 && echo "timeout 600")
$to $MPIRUN -np 2 "$bin" train $model --iters 1000000 --eval-every 100 --out "$d/kill.ckpt" \
    > "$d/kill.out" 2> "$d/kill.err" &
job=$!
pid=""
i=0
while [ $i -lt 300 ]; do  # up to 60 s for the first save and rank 1's pid
    pid=$(sed -n 's/.*rank 1 of 2 on .*, pid \([0-9]*\),.*/\1/p' "$d/kill.err" 2>/dev/null)
    [ -n "$pid" ] && grep -q '^saved ' "$d/kill.err" 2>/dev/null && break
    sleep 0.2
    i=$((i + 1))
done
if [ -n "$pid" ]; then
    kill -9 "$pid"
    wait $job
    rc=$?
    step=$(sed -n 's/^saved .*(step \([0-9]*\),.*/\1/p' "$d/kill.err" | tail -n 1)
    if [ $rc != 0 ] && grep -q "process rank 1 .*exited on signal 9" "$d/kill.err" &&
       [ -n "$step" ] &&
       "$bin" eval --ckpt "$d/kill.ckpt" > "$d/kill_eval.out" 2> "$d/kill_eval.err" &&
       $MPIRUN -np 2 "$bin" train --resume "$d/kill.ckpt" --iters $((step + 2)) \
           --out "$d/kill2.ckpt" > "$d/kill2.out" 2> "$d/kill2.err" &&
       grep -q "^done steps=$((step + 2)) " "$d/kill2.out"; then
        ok "rank 1 killed: the job ended (exit $rc); kill.ckpt (step $step) evaluates, resumes"
    else
        bad "killed rank (exit $rc, step '$step')"; tail -5 "$d/kill.err" "$d/kill2.err" >&2
    fi
else
    kill "$job" 2>/dev/null
    wait $job
    bad "killed rank: no checkpoint or pid of rank 1 within 60 s"; tail -5 "$d/kill.err" >&2
fi

[ $fails = 0 ] && echo "run_char_gpt_dist: all passed" && exit 0
echo "run_char_gpt_dist: $fails failed" >&2
exit 1
