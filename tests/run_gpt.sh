#!/bin/sh
# End-to-end test of build/gpt (no network; GPT-2's vocab files from make data): encode then
# decode gives back random bytes (NULs and invalid UTF-8 included) and Tiny Shakespeare's first
# 10 kB byte for byte; known GPT-2 ids; the tokenize counts of Tiny Shakespeare (nanoGPT's
# 301,966 / 36,059) and its split of UTF-8 text by characters; bpe-train then encode/decode with the trained vocab; the greedy
# continuation of a tiny GPT-2 safetensors file equals PyTorch's (tests/reference/
# gpt2_tiny_greedy.txt), with and without the KV cache; a few training steps on GPT-2 tokens
# and on a trained vocab, whose checkpoints keep the tokenizer (sample and tokenize need no
# --tokenizer, even with the vocab file gone); gpt with the char tokenizer trains as char_gpt,
# bit for bit; export then --init-from gives the same greedy text and eval losses as the
# checkpoint, for a char or trained-vocab model too (the tokenizer in the metadata);
# export --format gguf (f32, q8_0) then --init-from FILE.gguf: the same greedy text and losses
# at f32; a Llama-shaped model exported with --layout llama evaluates as its checkpoint;
# --init-from trains from a checkpoint, a safetensors (GPT-2, Llama) and a GGUF file; --preset; bad input
# (unknown tokenizer, missing vocab, corrupt safetensors, a prompt a char vocab cannot
# encode, ...) exits non-zero, not by a signal, with one line on stderr and clobbers no file.
# Under ASan (make test SAN=1) LeakSanitizer checks every run. Usage: sh tests/run_gpt.sh [builddir]
build=${1:-build}
bin=$build/gpt
[ -x "$bin" ] || { echo "run_gpt: $bin is not built" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/gpt
ref=tests/reference
d=$build/gpt_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export ASAN_OPTIONS
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }
for f in data/gpt2/encoder.json data/gpt2/vocab.bpe data/tinyshakespeare.txt; do
    [ -s "$f" ] || { echo "run_gpt: $f is missing; run make data" >&2; exit 1; }
done
corpus=data/tinyshakespeare.txt
head -c 20000 $corpus > "$d/tiny.txt"

# ---- encode / decode ----
roundtrip() {  # roundtrip <label> <file> <tokenizer args...>
    label=$1
    f=$2
    shift 2
    "$bin" encode "$@" < "$f" > "$d/ids.txt" 2> "$d/enc.err" &&
        "$bin" decode "$@" < "$d/ids.txt" > "$d/back.bin" 2> "$d/dec.err"
    rc=$?
    n=$(wc -w < "$d/ids.txt")
    if [ $rc = 0 ] && [ "$(wc -l < "$d/ids.txt")" = 1 ] && [ "$n" -gt 0 ] &&
       cmp -s "$f" "$d/back.bin"; then
        ok "$label: $(wc -c < "$f") bytes -> $n ids -> the same bytes"
    else
        bad "$label (exit $rc)"; cat "$d/enc.err" "$d/dec.err" >&2
    fi
}
head -c 10000 $corpus > "$d/shakespeare10k.txt"
roundtrip "gpt2 round trip, Tiny Shakespeare's first 10 kB" "$d/shakespeare10k.txt" \
    --tokenizer gpt2
head -c 4096 /dev/urandom > "$d/random.bin"
printf '\000\377\300\200 caf\303\251 <|endoftext|>\000' >> "$d/random.bin"
roundtrip "gpt2 round trip, 4 KiB of random bytes with NULs" "$d/random.bin" --tokenizer gpt2
got=$(printf 'Hello world' | "$bin" encode --tokenizer gpt2)
[ "$got" = "15496 995" ] && ok "encode 'Hello world' = 15496 995 (GPT-2's ids)" ||
    bad "encode 'Hello world' gave '$got'"
got=$(printf '\n' | "$bin" encode --tokenizer gpt2)
[ "$got" = "198" ] && ok "encode a newline = 198" || bad "encode newline gave '$got'"
printf '' > "$d/empty.txt"
got=$("$bin" encode --tokenizer gpt2 < "$d/empty.txt" | wc -c)
[ "$got" = 1 ] && ok "encode of no bytes prints an empty line" || bad "empty encode: $got"
roundtrip "char round trip (vocab of --data)" "$d/tiny.txt" --data "$d/tiny.txt"

# ---- tokenize ----
got=$("$bin" tokenize --tokenizer gpt2 --data $corpus 2>&1)
[ "$got" = "tokens=338025 train=301966 val=36059" ] &&
    ok "tokenize gpt2 Tiny Shakespeare: $got" || bad "tokenize gpt2: '$got'"
got=$("$bin" tokenize --data $corpus 2>&1)
[ "$got" = "tokens=1115394 train=1003854 val=111540" ] &&
    ok "tokenize char Tiny Shakespeare: $got" || bad "tokenize char: '$got'"

# 100 'a' then 100 'é' (2 bytes each): 200 characters, so the split is at character 180, byte
# 260 (not byte 270): each part is encoded on its own.
awk 'BEGIN { for (i = 0; i < 100; i++) printf "a"; for (i = 0; i < 100; i++) printf "\303\251" }' \
    > "$d/utf8.txt"
head -c 260 "$d/utf8.txt" > "$d/utf8_train.txt"
tail -c 40 "$d/utf8.txt" > "$d/utf8_val.txt"
n_tr=$("$bin" encode --tokenizer gpt2 < "$d/utf8_train.txt" | wc -w)
n_va=$("$bin" encode --tokenizer gpt2 < "$d/utf8_val.txt" | wc -w)
got=$("$bin" tokenize --tokenizer gpt2 --data "$d/utf8.txt" 2>&1)
[ "$(wc -c < "$d/utf8.txt")" = 300 ] &&
    [ "$got" = "tokens=$((n_tr + n_va)) train=$n_tr val=$n_va" ] &&
    ok "tokenize splits UTF-8 text by characters: $got" || bad "UTF-8 split: '$got'"

# ---- bpe-train ----
if "$bin" bpe-train --data "$d/tiny.txt" --merges 100 --out "$d/vocab/tiny.bpe" \
       2> "$d/bpe.err" && [ "$(head -n 2 "$d/vocab/tiny.bpe")" = "tinytorch-bpe 1
merges 100" ] && [ "$(wc -l < "$d/vocab/tiny.bpe")" = 102 ]; then
    ok "bpe-train --merges 100: $(cat "$d/bpe.err")"
else
    bad "bpe-train"; cat "$d/bpe.err" >&2
fi
roundtrip "trained vocab round trip, Tiny Shakespeare's first 10 kB" "$d/shakespeare10k.txt" \
    --tokenizer "$d/vocab/tiny.bpe"
if [ "$(tr ' ' '\n' < "$d/ids.txt" | awk '$1 >= 256' | wc -l)" -gt 100 ] &&
   [ "$(tr ' ' '\n' < "$d/ids.txt" | awk '$1 >= 356' | wc -l)" = 0 ]; then
    ok "trained vocab: merged ids in [256, 356) are used, none above"
else
    bad "trained vocab ids out of [0, 356)"
fi
roundtrip "trained vocab round trip, random bytes" "$d/random.bin" --tokenizer "$d/vocab/tiny.bpe"
got=$("$bin" tokenize --tokenizer "$d/vocab/tiny.bpe" --data "$d/tiny.txt")
case "$got" in
    "tokens="*" train="*" val="*) ok "tokenize with the trained vocab: $got" ;;
    *) bad "tokenize trained: '$got'" ;;
esac

# ---- greedy sampling of a tiny GPT-2 against PyTorch ----
want=$(sed -n 's/^text //p' $ref/gpt2_tiny_greedy.txt)
prompt=$(printf '%s' "$want" | cut -c 1-3)
n_new=$(( $(sed -n 's/^ids //p' $ref/gpt2_tiny_greedy.txt | wc -w) - 3 ))
for cache in "" --no-cache; do
    got=$("$bin" sample --init-from $ref/gpt2_tiny_untied.safetensors --tokenizer gpt2 \
          --prompt "$prompt" --tokens $n_new --temperature 0 $cache 2> "$d/s.err")
    [ "$got" = "$want" ] && ok "greedy tiny GPT-2 ${cache:-(KV cache)}: '$got' = PyTorch's" ||
        { bad "greedy tiny GPT-2 $cache: '$got', PyTorch '$want'"; cat "$d/s.err" >&2; }
done
ids=$(sed -n 's/^ids //p' $ref/gpt2_tiny_greedy.txt)
got=$(printf '%s' "$ids" | "$bin" decode --tokenizer gpt2)
[ "$got" = "$want" ] && ok "PyTorch's greedy ids ($ids) decode to that text" ||
    bad "greedy ids decode to '$got'"

# ---- training on GPT-2 tokens and on a trained vocab ----
run="--batch 4 --iters 4 --eval-every 2 --eval-iters 1 --warmup 1 --threads 2 --data $d/tiny.txt"
small="--layers 1 --embd 32 --heads 2 --block 16 $run"
num='[0-9][0-9.]*'
train_ok() {  # train_ok <label> <out> <args...>
    label=$1
    out=$2
    shift 2
    "$bin" train $run --out "$out" "$@" > "$d/train.out" 2> "$d/train.err"
    rc=$?
    if [ $rc = 0 ] && [ "$(grep -c "^eval step=[24] train_loss=$num val_loss=$num\$" \
            "$d/train.out")" = 2 ] && grep -q "^done steps=4 " "$d/train.out" && [ -s "$out" ]
    then
        ok "$label: $(head -n 1 "$d/train.err")"
    else
        bad "$label (exit $rc)"; cat "$d/train.out" "$d/train.err" >&2
    fi
}
model="--layers 1 --embd 32 --heads 2 --block 16"
train_ok "train --tokenizer gpt2, 4 steps" "$d/g.ckpt" $model --tokenizer gpt2
grep -q "vocab 50257, 5[0-9]* train / [0-9]* val tokens" "$d/train.err" &&
    ok "gpt2 dataset: vocab 50257, the 20 kB text as BPE tokens" ||
    { bad "gpt2 dataset line"; head -n 1 "$d/train.err" >&2; }
got=$("$bin" sample --ckpt "$d/g.ckpt" --prompt "ROMEO:" --tokens 8 --seed 3 2> "$d/s.err")
case "$got" in
    "ROMEO:"?*) ok "sample a gpt2 checkpoint without --tokenizer" ;;
    *) bad "sample gpt2 checkpoint: '$got'"; cat "$d/s.err" >&2 ;;
esac
[ "$("$bin" tokenize --ckpt "$d/g.ckpt" --data "$d/tiny.txt")" = \
  "$("$bin" tokenize --tokenizer gpt2 --data "$d/tiny.txt")" ] &&
    ok "tokenize --ckpt uses the checkpoint's tokenizer (gpt2)" || bad "tokenize --ckpt gpt2"
cp "$d/vocab/tiny.bpe" "$d/moved.bpe"
train_ok "train --tokenizer VOCAB (trained, 356 ids), 4 steps" "$d/v.ckpt" $model \
    --tokenizer "$d/moved.bpe"
grep -q "vocab 356," "$d/train.err" && ok "trained-vocab dataset: vocab 356" ||
    bad "trained vocab size"
"$bin" eval --ckpt "$d/v.ckpt" > "$d/v_eval1.out" 2> /dev/null
rm -f "$d/moved.bpe"
"$bin" eval --ckpt "$d/v.ckpt" > "$d/v_eval2.out" 2> "$d/e.err"
if [ -s "$d/v_eval1.out" ] && cmp -s "$d/v_eval1.out" "$d/v_eval2.out"; then
    ok "the checkpoint keeps the trained vocab: eval is the same with the file gone"
else
    bad "eval after the vocab file is gone"; cat "$d/e.err" >&2
fi
"$bin" train --resume "$d/v.ckpt" --iters 6 --out "$d/v.ckpt" > "$d/r.out" 2> "$d/r.err" &&
    grep -q "^done steps=6 " "$d/r.out" && ok "--resume a trained-vocab run without its file" ||
    { bad "resume trained vocab"; cat "$d/r.err" >&2; }

# ---- the char tokenizer (the default) is char_gpt's training, bit for bit ----
if [ -x "$build/char_gpt" ]; then
    "$bin" train $small --out "$d/c1.ckpt" > "$d/c1.out" 2> /dev/null
    "$build/char_gpt" train $small --out "$d/c2.ckpt" > "$d/c2.out" 2> /dev/null
    if [ "$(grep -c '^eval' "$d/c1.out")" = 2 ] &&
       [ "$(grep '^eval' "$d/c1.out")" = "$(grep '^eval' "$d/c2.out")" ]; then
        ok "gpt train (char) gives char_gpt's eval losses bit for bit"
    else
        bad "gpt train vs char_gpt train"; cat "$d/c1.out" "$d/c2.out" >&2
    fi
    got=$("$build/char_gpt" sample --ckpt "$d/c1.ckpt" --tokens 20 --seed 2 2>/dev/null)
    [ -n "$got" ] && [ "$got" = "$("$bin" sample --ckpt "$d/c2.ckpt" --tokens 20 --seed 2 \
                                    2>/dev/null)" ] &&
        ok "char_gpt and gpt sample each other's checkpoints alike" || bad "cross sample"
fi

# ---- presets, export, --init-from ----
"$bin" train --preset gpt2 $small --tokenizer gpt2 --iters 2 --out "$d/p.ckpt" \
    > "$d/p.out" 2> "$d/p.err"
grep -q "^done steps=2 " "$d/p.out" && ok "train --preset gpt2 with smaller sizes" ||
    { bad "train --preset gpt2"; cat "$d/p.err" >&2; }
"$bin" export --ckpt "$d/p.ckpt" --out "$d/p.safetensors" 2> "$d/x.err" &&
    [ -s "$d/p.safetensors" ] && ok "export: $(cat "$d/x.err")" ||
    { bad "export"; cat "$d/x.err" >&2; }
"$bin" sample --ckpt "$d/p.ckpt" --prompt "KING" --tokens 12 --temperature 0 \
    > "$d/s_ck.txt" 2> /dev/null
"$bin" sample --init-from "$d/p.safetensors" --prompt "KING" --tokens 12 --temperature 0 \
    > "$d/s_st.txt" 2> "$d/s.err"
[ "$(wc -c < "$d/s_ck.txt")" -gt 6 ] && cmp -s "$d/s_ck.txt" "$d/s_st.txt" &&
    ok "export then --init-from: the same greedy text as the checkpoint" ||
    { bad "export round trip"; cat "$d/s_ck.txt" "$d/s_st.txt" "$d/s.err" >&2; }
ev="--data $d/tiny.txt --batch 3 --eval-iters 2 --seed 5"
e_ck=$("$bin" eval --ckpt "$d/p.ckpt" $ev 2>&1)
e_st=$("$bin" eval --init-from "$d/p.safetensors" $ev 2>&1)
[ -n "$e_ck" ] && [ "$e_ck" = "$e_st" ] &&
    ok "export then --init-from: the same eval losses ($e_ck)" ||
    bad "export eval: '$e_ck' vs '$e_st'"
train_ok "train --init-from FILE.safetensors" "$d/i1.ckpt" --init-from "$d/p.safetensors"
train_ok "train --init-from a checkpoint" "$d/i2.ckpt" --init-from "$d/g.ckpt"
"$bin" export --ckpt "$d/p.ckpt" --out "$d/p16.safetensors" --dtype bf16 2> /dev/null &&
    [ "$(wc -c < "$d/p16.safetensors")" -lt "$(wc -c < "$d/p.safetensors")" ] &&
    ok "export --dtype bf16 writes a smaller file" || bad "export --dtype bf16"

# ---- Llama: a SwiGLU / RMSNorm / RoPE / GQA model, export --layout llama, --init-from ----
train_ok "train a Llama-shaped model (--act swiglu --mlp-hidden --rope-base --norm-eps)" \
    "$d/l.ckpt" $model --kv-heads 1 --tokenizer gpt2 --pos rope --norm rmsnorm --act swiglu \
    --no-tie --mlp-hidden 48 --rope-base 500 --norm-eps 1e-6
"$bin" export --layout llama --ckpt "$d/l.ckpt" --out "$d/l.safetensors" 2> "$d/x.err" &&
    grep -q "Llama layout" "$d/x.err" && ok "export --layout llama: $(cat "$d/x.err")" ||
    { bad "export --layout llama"; cat "$d/x.err" >&2; }
e_lc=$("$bin" eval --ckpt "$d/l.ckpt" $ev 2>&1)
e_ls=$("$bin" eval --init-from "$d/l.safetensors" $ev 2>&1)
[ -n "$e_lc" ] && [ "$e_lc" = "$e_ls" ] &&
    ok "export --layout llama then --init-from: the same eval losses ($e_lc)" ||
    bad "llama export eval: '$e_lc' vs '$e_ls'"
train_ok "train --init-from a Llama FILE.safetensors" "$d/i4.ckpt" --init-from "$d/l.safetensors"

# ---- GGUF: export --format gguf, then --init-from FILE.gguf ----
for dt in f32 q8_0; do
    "$bin" export --format gguf --dtype $dt --ckpt "$d/p.ckpt" --out "$d/p_$dt.gguf" \
        2> "$d/x.err" && head -c 4 "$d/p_$dt.gguf" | grep -q GGUF ||
        { bad "export --format gguf --dtype $dt"; cat "$d/x.err" >&2; }
done
"$bin" sample --init-from "$d/p_f32.gguf" --prompt "KING" --tokens 12 --temperature 0 \
    > "$d/s_gg.txt" 2> "$d/s.err"
cmp -s "$d/s_ck.txt" "$d/s_gg.txt" &&
    ok "export --format gguf then --init-from: the same greedy text as the checkpoint" ||
    { bad "gguf round trip"; cat "$d/s_ck.txt" "$d/s_gg.txt" "$d/s.err" >&2; }
e_gg=$("$bin" eval --init-from "$d/p_f32.gguf" $ev 2>&1)
[ "$e_ck" = "$e_gg" ] && ok "gguf f32: the same eval losses ($e_gg)" ||
    bad "gguf eval: '$e_ck' vs '$e_gg'"
e_q8=$("$bin" eval --init-from "$d/p_q8_0.gguf" $ev 2>&1)
[ "$(wc -c < "$d/p_q8_0.gguf")" -lt "$(wc -c < "$d/p_f32.gguf")" ] &&
    echo "$e_q8" | grep -q "^eval train_loss=" &&
    ok "gguf q8_0: smaller, evaluates ($e_q8)" || bad "gguf q8_0: '$e_q8'"
train_ok "train --init-from FILE.gguf" "$d/i3.ckpt" --init-from "$d/p_q8_0.gguf"

# ---- the tokenizer travels in the exported file's metadata ----
# A char model and a trained-vocab model exported: eval and sample from the safetensors file,
# without --tokenizer or with the one it was trained with, give the checkpoint's losses and
# text (sampled at temperature 0.8, so every id maps to the same bytes).
export_same() {  # export_same <name> <tokenizer> <flags for --init-from...>
    name=$1
    tok=$2
    shift 2
    "$bin" sample --ckpt "$d/$name.ckpt" --prompt "The " --tokens 40 --seed 3 \
        > "$d/m_ck.txt" 2> /dev/null
    "$bin" sample --init-from "$d/$name.safetensors" "$@" --prompt "The " --tokens 40 --seed 3 \
        > "$d/m_st.txt" 2> "$d/m.err"
    e_ck=$("$bin" eval --ckpt "$d/$name.ckpt" $ev 2>&1)
    e_st=$("$bin" eval --init-from "$d/$name.safetensors" "$@" $ev 2>&1)
    if [ "$(wc -c < "$d/m_ck.txt")" -gt 30 ] && cmp -s "$d/m_ck.txt" "$d/m_st.txt" &&
       [ -n "$e_ck" ] && [ "$e_ck" = "$e_st" ]; then
        ok "$tok export, --init-from ${*:-without --tokenizer}: the checkpoint's text and $e_ck"
    else
        bad "$tok export --init-from $*: '$e_ck' vs '$e_st'"
        cat "$d/m_ck.txt" "$d/m_st.txt" "$d/m.err" >&2
    fi
}
for tk in char "$d/vocab/tiny.bpe"; do
    name=meta_$(basename "$tk" .bpe)
    "$bin" train --preset gpt2 $small --tokenizer "$tk" --iters 2 --out "$d/$name.ckpt" \
        > /dev/null 2> "$d/p.err" || { bad "train $tk for export"; cat "$d/p.err" >&2; }
    "$bin" export --ckpt "$d/$name.ckpt" --out "$d/$name.safetensors" 2> "$d/x.err"
    kind=$([ "$tk" = char ] && echo char || echo file)
    grep -q "its $kind tokenizer in the metadata" "$d/x.err" &&
        head -c 4000 "$d/$name.safetensors" | grep -q "\"tokenizer\":\"$kind\"" &&
        head -c 4000 "$d/$name.safetensors" | grep -q '"tokenizer.vocab_hex":"[0-9a-f]*"' &&
        ok "export writes the $kind tokenizer in the metadata: $(cat "$d/x.err")" ||
        { bad "export $kind metadata"; cat "$d/x.err" >&2; }
    export_same "$name" "$kind"
    export_same "$name" "$kind" --tokenizer "$tk"
done
"$bin" eval --init-from "$d/meta_char.safetensors" --tokenizer gpt2 $ev > /dev/null \
    2> "$d/m.err"
[ $? = 2 ] && grep -q "is not the tokenizer .* (char); leave --tokenizer out, it comes from \
its metadata" "$d/m.err" && ok "another tokenizer than the metadata's: $(cat "$d/m.err")" ||
    { bad "--tokenizer gpt2 for a char export"; cat "$d/m.err" >&2; }
"$bin" sample --init-from $ref/gpt2_tiny_untied.safetensors --tokenizer char --prompt hi \
    > /dev/null 2> "$d/m.err"
[ $? = 2 ] && grep -q "has no tokenizer metadata, so no char vocab" "$d/m.err" &&
    ok "--tokenizer char for a file without metadata: $(cat "$d/m.err")" ||
    { bad "--tokenizer char without metadata"; cat "$d/m.err" >&2; }

# ---- bad input: one line, non-zero exit, nothing clobbered ----
echo keep > "$d/keep.ckpt"
echo keep > "$d/keep.csv"
keep="--out $d/keep.ckpt --log $d/keep.csv"
head -c 3000 "$d/p.safetensors" > "$d/trunc.safetensors"
printf 'not a safetensors file at all, just text' > "$d/garbage.safetensors"
expect_fail() {  # expect_fail <label> <pattern the message must contain> <args...>
    label=$1
    pattern=$2
    shift 2
    "$bin" "$@" > "$d/bad.out" 2> "$d/bad.err" < "${stdin_from:-/dev/null}"
    rc=$?
    lines=$(wc -l < "$d/bad.err")
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$lines" = 1 ] &&
       grep -q '^gpt: ' "$d/bad.err" && grep -q -- "$pattern" "$d/bad.err"; then
        ok "bad input, $label: exit $rc: $(cat "$d/bad.err")"
    else
        bad "bad input, $label: exit $rc, $lines stderr lines, want '$pattern'"
        cat "$d/bad.err" >&2
    fi
}
expect_fail "unknown tokenizer" "--tokenizer 'bogus' is not char, gpt2 nor" \
    train $small --tokenizer bogus $keep
expect_fail "missing vocab file" "--tokenizer '$d/none.bpe' is not char, gpt2 nor" \
    encode --tokenizer "$d/none.bpe"
expect_fail "a vocab file that is not one" "--tokenizer: $d/tiny.txt line 1: expected" \
    train $small --tokenizer "$d/tiny.txt" $keep
expect_fail "truncated safetensors" "trunc.safetensors" \
    sample --init-from "$d/trunc.safetensors" --prompt hi
expect_fail "garbage safetensors" "garbage.safetensors" \
    train $run --init-from "$d/garbage.safetensors" $keep
"$bin" train $small --iters 2 --out "$d/c.ckpt" > /dev/null 2>&1
expect_fail "prompt outside a char vocab" "--prompt: character '@' at position 2" \
    sample --ckpt "$d/c.ckpt" --prompt "ab@"
printf '15496 99x 1' > "$d/notids.txt"
stdin_from="$d/notids.txt"
expect_fail "decode of a non-number" "'99x 1' at byte 6, not a token id" decode --tokenizer gpt2
stdin_from=
printf '15496 50257' > "$d/badids.txt"
"$bin" decode --tokenizer gpt2 < "$d/badids.txt" > "$d/bad.out" 2> "$d/bad.err"
[ $? = 2 ] && [ ! -s "$d/bad.out" ] && grep -q "id 50257 (token 2 of stdin)" "$d/bad.err" &&
    ok "decode of an id out of range: exit 2, nothing written: $(cat "$d/bad.err")" ||
    bad "decode out of range"
expect_fail "export of a model GPT-2 cannot hold" "train with --preset gpt2" \
    export --ckpt "$d/c.ckpt" --out "$d/keep.ckpt"
expect_fail "GGUF export of a model GPT-2 cannot hold" "written as GGUF's gpt2 architecture" \
    export --format gguf --ckpt "$d/c.ckpt" --out "$d/keep.ckpt"
expect_fail "export of a model Llama's layout cannot hold" "to export it in Llama's layout" \
    export --layout llama --ckpt "$d/c.ckpt" --out "$d/keep.ckpt"
expect_fail "an unknown --layout" "--layout 'onnx' is not gpt2 (the default) or llama" \
    export --layout onnx --ckpt "$d/p.ckpt" --out "$d/keep.ckpt"
expect_fail "an unknown --format" "--format 'onnx' is not safetensors (the default) or gguf" \
    export --format onnx --ckpt "$d/p.ckpt" --out "$d/keep.ckpt"
expect_fail "q4_0 into safetensors" "--dtype q4_0 needs --format gguf" \
    export --dtype q4_0 --ckpt "$d/p.ckpt" --out "$d/keep.ckpt"
expect_fail "a GGUF --dtype it does not write" "--dtype 'bf16' is not one of f32, f16, q8_0" \
    export --format gguf --dtype bf16 --ckpt "$d/p.ckpt" --out "$d/keep.ckpt"
head -c 3000 "$d/p_f32.gguf" > "$d/trunc.gguf"
expect_fail "truncated GGUF" "gguf '$d/trunc.gguf': " \
    sample --init-from "$d/trunc.gguf" --prompt hi
head -c 64 /dev/urandom > "$d/garbage.gguf"
expect_fail "garbage GGUF" "no 'GGUF' magic" train $run --init-from "$d/garbage.gguf" $keep
expect_fail "model flags with --init-from" "--layers: the model comes from --init-from" \
    train --init-from "$d/g.ckpt" --layers 2 $keep
expect_fail "another tokenizer than the checkpoint's" "is not the tokenizer" \
    sample --ckpt "$d/g.ckpt" --tokenizer char
expect_fail "unknown preset" "--preset" train --preset gpt5 $keep
expect_fail "unknown command" "unknown command 'fly'" fly
if [ "$(cat "$d/keep.ckpt")" = keep ] && [ "$(cat "$d/keep.csv")" = keep ]; then
    ok "bad input clobbered no checkpoint or log"
else
    bad "a bad run clobbered --out or --log"
fi

if [ $fails = 0 ]; then echo "gpt: ok"; else echo "gpt: $fails failed" >&2; exit 1; fi
