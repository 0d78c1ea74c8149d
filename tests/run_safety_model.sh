#!/bin/sh
# Model files and memory, end to end (build/gpt, build/char_gpt, build/lenet): a GPT-2
# safetensors whose vocab is padded beyond the tokenizer's (nanoGPT's 50304 for GPT-2's 50257)
# trains, and its checkpoints eval, sample, resume and export; sampling never emits a padded
# id; a model vocab smaller than the tokenizer's is refused at start; NaN weights and a
# hostile position table are refused at load with one line; a run that cannot fit in memory
# is refused before it allocates, with the figure and the machine's memory; a failed
# allocation (ulimit -v) is one line and exit 1, not a signal; an IDX header that expands
# beyond memory and a huge vocab file are refused before they are read.
# The safetensors files are written here byte by byte (zeros but for a few values).
# Usage: sh tests/run_safety_model.sh [builddir]
build=${1:-build}
gpt=$build/gpt
cgpt=$build/char_gpt
for b in "$gpt" "$cgpt" "$build/lenet"; do
    [ -x "$b" ] || { echo "run_safety_model: $b is not built" >&2; exit 1; }
done
# ASan reserves terabytes of address space and reports a failed malloc itself: the ulimit -v
# cases run only without it.
san=0
grep -q __asan_init "$cgpt" && san=1
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export ASAN_OPTIONS
d=$build/safety_model_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }
for f in data/gpt2/encoder.json data/gpt2/vocab.bpe data/tinyshakespeare.txt; do
    [ -s "$f" ] || { echo "run_safety_model: $f is missing; run make data" >&2; exit 1; }
done
head -c 20000 data/tinyshakespeare.txt > "$d/tiny.txt"

# ---- a GPT-2 safetensors writer ----
le64() {  # le64 N: N as 8 little-endian bytes
    n=$1
    i=0
    while [ $i -lt 8 ]; do
        printf "\\$(printf %03o $((n % 256)))"
        n=$((n / 256))
        i=$((i + 1))
    done
}
zeros() { head -c "$1" /dev/zero; }
# mkst FILE V C N L KIND: a GPT-2 model (no "transformer." prefix, n_head 1 in the metadata)
# of F32 zeros. KIND pad: wte rows from 50257 on hold 100 in channel 0 and ln_f.bias is
# (1, 0, ..), so those padded ids have the largest logits; nan: wte[0, 0] is NaN; else zeros.
mkst() {
    f=$1 V=$2 C=$3 N=$4 L=$5 kind=$6
    names="wte.weight:$V,$C wpe.weight:$N,$C ln_f.weight:$C ln_f.bias:$C"
    l=0
    while [ $l -lt "$L" ]; do
        names="$names h.$l.ln_1.weight:$C h.$l.ln_1.bias:$C h.$l.attn.c_attn.weight:$C,$((3 * C))"
        names="$names h.$l.attn.c_attn.bias:$((3 * C)) h.$l.attn.c_proj.weight:$C,$C"
        names="$names h.$l.attn.c_proj.bias:$C h.$l.ln_2.weight:$C h.$l.ln_2.bias:$C"
        names="$names h.$l.mlp.c_fc.weight:$C,$((4 * C)) h.$l.mlp.c_fc.bias:$((4 * C))"
        names="$names h.$l.mlp.c_proj.weight:$((4 * C)),$C h.$l.mlp.c_proj.bias:$C"
        l=$((l + 1))
    done
    js='{"__metadata__":{"n_head":"1"}' at=0
    for e in $names; do
        shape=${e#*:}
        n=$(echo "$shape" | tr ',' '*')
        n=$(($n * 4))
        js="$js,\"${e%%:*}\":{\"dtype\":\"F32\",\"shape\":[$shape],"
        js="$js\"data_offsets\":[$at,$((at + n))]}"
        at=$((at + n))
    done
    js="$js}"
    while [ $((${#js} % 8)) != 0 ]; do js="$js "; done
    {
        le64 ${#js}
        printf '%s' "$js"
        for e in $names; do
            shape=${e#*:}
            n=$(($(echo "$shape" | tr ',' '*') * 4))
            case "$kind:${e%%:*}" in
                pad:wte.weight)
                    zeros $((50257 * C * 4))
                    r=50257
                    while [ $r -lt "$V" ]; do
                        printf '\000\000\310\102'; zeros $(((C - 1) * 4)); r=$((r + 1))
                    done ;;
                pad:ln_f.bias) printf '\000\000\200\077'; zeros $(((C - 1) * 4)) ;;
                nan:wte.weight) printf '\000\000\300\177'; zeros $((n - 4)) ;;
                *) zeros $n ;;
            esac
        done
    } > "$f"
}
# one_line LABEL CODE FILE [PATTERN]: the last run exited CODE (not by a signal) with one line
# on stderr (in FILE) that holds PATTERN.
one_line() {
    label=$1 code=$2 want=$3 err=$4 pat=$5
    if [ "$code" = "$want" ] && [ "$(wc -l < "$err")" = 1 ] &&
       { [ -z "$pat" ] || grep -q -- "$pat" "$err"; }; then
        ok "$label: exit $code: $(cut -c 1-150 "$err")"
    else
        bad "$label: exit $code (want $want), stderr:"; cat "$err" >&2
    fi
}

# ---- a padded vocab ----
mkst "$d/pad.safetensors" 50304 4 16 1 pad
got=$("$gpt" sample --init-from "$d/pad.safetensors" --prompt "Hi" --tokens 5 \
      --temperature 0 2> "$d/e")
[ $? = 0 ] && [ "$got" = "Hi!!!!!" ] &&
    ok "sample --init-from a 50304-vocab file, greedy: '$got' (the padded ids are never drawn)" ||
    { bad "sample of a padded vocab gave '$got'"; cat "$d/e" >&2; }
got=$("$gpt" sample --init-from "$d/pad.safetensors" --prompt "Hi" --tokens 300 --seed 3 \
      --temperature 2 --top-k 0 2> "$d/e" | wc -c)
[ $? = 0 ] && [ "$got" -gt 300 ] &&
    ok "sample at temperature 2 over the padded vocab: $got bytes" ||
    { bad "sample at temperature 2: $got bytes"; cat "$d/e" >&2; }
run="--data $d/tiny.txt --batch 2 --eval-iters 1 --eval-every 2 --threads 1"
"$gpt" train --init-from "$d/pad.safetensors" --tokenizer gpt2 $run --iters 2 \
    --out "$d/pad.ckpt" > /dev/null 2> "$d/e" && ok "train --init-from a padded vocab" ||
    { bad "train --init-from a padded vocab"; cat "$d/e" >&2; }
for c in "eval --ckpt $d/pad.ckpt --data $d/tiny.txt --eval-iters 1" \
         "eval --ckpt $d/pad.best.ckpt --data $d/tiny.txt --eval-iters 1" \
         "sample --ckpt $d/pad.ckpt --tokens 20 --prompt Hi" \
         "train --resume $d/pad.ckpt $run --iters 4 --out $d/pad.ckpt" \
         "export --ckpt $d/pad.ckpt --out $d/pad2.safetensors" \
         "sample --init-from $d/pad2.safetensors --tokens 20 --prompt Hi" \
         "eval --init-from $d/pad2.safetensors --data $d/tiny.txt --batch 2 --eval-iters 1"; do
    "$gpt" $c > "$d/o" 2> "$d/e" && ok "a padded vocab's file: $(echo "$c" | cut -d' ' -f1-2)" ||
        { bad "$c: exit $?"; cat "$d/e" >&2; }
done
mkst "$d/small.safetensors" 1000 4 16 1 zero
"$gpt" sample --init-from "$d/small.safetensors" --prompt Hi > /dev/null 2> "$d/e"
one_line "sample of a 1000-id model, a prompt beyond it" $? 2 "$d/e" \
    "token 17250 is outside the vocabulary of 1000"
for c in "eval --init-from $d/small.safetensors --data $d/tiny.txt" \
         "train --init-from $d/small.safetensors $run --iters 2 --out $d/small.ckpt"; do
    "$gpt" $c > /dev/null 2> "$d/e"
    one_line "model vocab 1000 < the tokenizer's: $(echo "$c" | cut -d' ' -f1)" $? 2 "$d/e" \
        "fewer than the 50257 ids"
done
[ -e "$d/small.ckpt" ] && bad "a refused run wrote $d/small.ckpt"

# ---- broken and hostile model files ----
mkst "$d/nan.safetensors" 50257 4 16 1 nan
"$gpt" sample --init-from "$d/nan.safetensors" --prompt Hi > /dev/null 2> "$d/e"
one_line "sample of NaN weights" $? 2 "$d/e" "tensor 'wte.weight' holds NaN"
"$gpt" train --init-from "$d/nan.safetensors" $run --iters 2 --out "$d/nan.ckpt" 2> "$d/e"
one_line "train --init-from NaN weights (not 'lower --lr')" $? 2 "$d/e" "holds NaN"
mkst "$d/long.safetensors" 50257 1 1048576 1 zero
"$gpt" sample --init-from "$d/long.safetensors" --prompt Hi > /dev/null 2> "$d/e"
one_line "a 2^20-row position table" $? 2 "$d/e" "mask entries"
mkst "$d/long2.safetensors" 50257 2 16384 2 zero
t0=$(date +%s)
"$gpt" sample --init-from "$d/long2.safetensors" --prompt Hi > /dev/null 2> "$d/e"
one_line "16,384 positions, 2 layers" $? 2 "$d/e" "mask entries"
[ $(($(date +%s) - t0)) -le 3 ] || bad "the 16,384-position file took over 3 s to refuse"

# ---- memory ----
"$cgpt" train --data "$d/tiny.txt" --layers 64 --embd 4096 --out "$d/m.ckpt" 2> "$d/e"
one_line "--layers 64 --embd 4096" $? 1 "$d/e" "needs at least .* GiB.*this machine allows"
if [ $san = 1 ]; then echo "skip the ulimit -v cases (ASan)"; else
(ulimit -v 8000000; "$cgpt" train --data data/tinyshakespeare.txt --batch 65536 --block 2048 \
    --out "$d/m.ckpt" 2> "$d/e")
one_line "--batch 65536 --block 2048 (ulimit -v 8 GB)" $? 1 "$d/e" "needs at least 3649.1 GiB"
"$cgpt" train --data "$d/tiny.txt" --iters 2 --eval-every 2 --eval-iters 1 --out "$d/b.ckpt" \
    > /dev/null 2>&1 || bad "a baby run failed"
(ulimit -v 8000000; "$cgpt" eval --ckpt "$d/b.ckpt" --data "$d/tiny.txt" --batch 65536 \
    2> "$d/e")
one_line "eval --batch 65536 (ulimit -v 8 GB)" $? 1 "$d/e" "this model needs at least"
[ -e "$d/m.ckpt" ] && bad "a refused run wrote $d/m.ckpt"
# A run whose estimate fits but which cannot allocate: one line, exit 1, no core dump.
(ulimit -v 1100000; "$cgpt" train --data "$d/tiny.txt" --batch 512 --threads 1 --iters 2 \
    --warmup 0 --eval-every 100 --out "$d/o.ckpt" > /dev/null 2> "$d/e")
rc=$?
grep -v "M parameters, vocab" "$d/e" > "$d/e2"  # the run's banner comes before the failure
one_line "an allocation that fails under ulimit -v" $rc 1 "$d/e2" "out of memory: .* bytes"
[ -e "$d/o.ckpt" ] && bad "the failed run wrote $d/o.ckpt"
fi
truncate -s 300M "$d/big.vocab"
printf 'hi' | "$gpt" encode --tokenizer "$d/big.vocab" > /dev/null 2> "$d/e"
one_line "a 300 MB --tokenizer file" $? 2 "$d/e" "larger than 256 MiB"
# An IDX pair whose header declares 2^40 images (gzip: a few bytes).
mkdir -p "$d/idx"
printf '\000\000\010\003\377\377\377\377\000\000\001\000\000\000\001\000' | gzip > \
    "$d/idx/train-images-idx3-ubyte.gz"
printf '\000\000\010\001\377\377\377\377' | gzip > "$d/idx/train-labels-idx1-ubyte.gz"
"$build/lenet" --data "$d/idx" --epochs 1 > /dev/null 2> "$d/e"
rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$(wc -l < "$d/e")" = 1 ] &&
    grep -q "more than the .* GiB this machine allows" "$d/e" &&
    ok "an IDX header of 4 TB (gzip): exit $rc: $(cat "$d/e")" ||
    { bad "IDX bomb: exit $rc"; cat "$d/e" >&2; }

if [ $fails = 0 ]; then echo "run_safety_model: all passed"; else
    echo "run_safety_model: $fails FAILED" >&2; exit 1; fi
