#!/bin/sh
# End-to-end test of token shards (gpt prepare, gpt train --data SHARDS): Tiny Shakespeare
# prepared with the char tokenizer gives llm.c's header and nanoGPT's 1,003,854 / 111,540
# split; training from the shards (a directory, a glob, 100k-token shards whose windows cross
# files, nanoGPT's headerless train.bin / val.bin) gives bit for bit the losses and parameters
# of training from the text; GPT-2 shards put <|endoftext|> (50256) between documents; a
# truncated or corrupt shard, a missing tokenizer, ids beyond the vocabulary, an --out that is
# a file and an input prepare would replace each exit 2 with one line on stderr, clobbering
# nothing. Usage: sh tests/run_shards.sh [builddir]
build=${1:-build}
bin=$build/gpt
[ -x "$bin" ] || { echo "run_shards: $bin is not built" >&2; exit 1; }
d=$build/shards_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export ASAN_OPTIONS
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }
corpus=data/tinyshakespeare.txt
[ -s $corpus ] || corpus=../shared/data/tinyshakespeare.txt
[ -s $corpus ] || { echo "run_shards: no tinyshakespeare.txt; run make data" >&2; exit 1; }
for f in data/gpt2/encoder.json data/gpt2/vocab.bpe; do
    [ -s "$f" ] || { echo "run_shards: $f is missing; run make data" >&2; exit 1; }
done

# ---- prepare ----
"$bin" prepare --data $corpus --out "$d/sh" > "$d/prep.out" 2> "$d/prep.err"
want="prepared documents=1 tokens=1115394 train=1003854 val=111540 files=1+1 dtype=uint16"
[ "$(cat "$d/prep.out")" = "$want" ] && ok "prepare: $want" ||
    { bad "prepare printed '$(cat "$d/prep.out")'"; cat "$d/prep.err" >&2; }
tr=$d/sh/tinyshakespeare_train_000001.bin
va=$d/sh/tinyshakespeare_val_000000.bin
head=$(od -An -td4 -N16 "$tr" | tr -s ' ')
[ "$head" = " 20240520 1 1003854 0" ] && [ "$(wc -c < "$tr")" = $((1024 + 2 * 1003854)) ] &&
    [ "$(wc -c < "$va")" = $((1024 + 2 * 111540)) ] && [ -s "$d/sh/tokenizer.ckpt" ] &&
    ok "llm.c's header (magic 20240520, version 1, count) and uint16 tokens" ||
    bad "shard header '$head' or sizes"
# The first tokens are the text's characters in the char vocab ('F' 'i' 'r' 's' 't').
first=$(od -An -tu2 -j1024 -N10 "$tr" | tr -s ' ')
[ "$first" = " 18 47 56 57 58" ] && ok "the first ids of 'First'" || bad "first ids '$first'"

# ---- training from shards equals training from the text ----
A="--iters 8 --warmup 2 --eval-every 4 --eval-iters 2 --layers 1 --embd 32 --heads 2
   --block 32 --batch 4 --threads 1"
train() {  # train <tag> <data> [flags...]: stdout in tag.out, losses + fingerprints in tag.sum
    tag=$1
    data=$2
    shift 2
    # shellcheck disable=SC2086
    "$bin" train --data "$data" $A --out "$d/$tag.ckpt" --log "$d/$tag.csv" "$@" \
        > "$d/$tag.out" 2> "$d/$tag.err" || { bad "train $tag exit $?"; cat "$d/$tag.err" >&2; }
    { sed 's/ ms_per_step=.*//' "$d/$tag.out"; cat "$d/$tag.csv"
      sed -n 's/.*params fingerprint \([0-9a-f]*\).*/\1/p' "$d/$tag.err"; } > "$d/$tag.sum"
}
same() {  # same <tag> <label>
    if [ -s "$d/text.sum" ] && cmp -s "$d/text.sum" "$d/$1.sum"; then
        ok "$2: the same losses and parameters as the text ($(tail -1 "$d/$1.sum"))"
    else
        bad "$2 differs from the text"; diff "$d/text.sum" "$d/$1.sum" >&2
    fi
}
train text $corpus
[ "$(grep -c . "$d/text.sum")" = 14 ] || bad "the text run's summary has $(grep -c . "$d/text.sum") lines"
train dir "$d/sh"
same dir "a directory of shards"
train glob "$d/sh/*.bin"
same glob "a glob of shards"
"$bin" prepare --data $corpus --out "$d/small" --shard-tokens 100000 > "$d/small.out" 2> /dev/null &&
    grep -q ' files=2+11 ' "$d/small.out" && ok "--shard-tokens 100000: 2 val + 11 train files" ||
    bad "--shard-tokens: $(cat "$d/small.out")"
train small "$d/small"
same small "100k-token shards (windows cross files)"
mkdir -p "$d/nano" && tail -c +1025 "$tr" > "$d/nano/train.bin" &&
    tail -c +1025 "$va" > "$d/nano/val.bin" && cp "$d/sh/tokenizer.ckpt" "$d/nano/"
train nano "$d/nano"
same nano "nanoGPT's headerless train.bin / val.bin"
"$bin" eval --ckpt "$d/dir.ckpt" --data "$d/sh" --eval-iters 2 --batch 4 > "$d/eval1" &&
    "$bin" eval --ckpt "$d/dir.ckpt" --data $corpus --eval-iters 2 --batch 4 > "$d/eval2" &&
    cmp -s "$d/eval1" "$d/eval2" && ok "eval on shards = eval on the text: $(cat "$d/eval1")" ||
    bad "eval on shards"

# ---- GPT-2 tokens: <|endoftext|> between documents ----
mkdir -p "$d/docs" && printf 'Hello world' > "$d/docs/a.txt" && printf 'Hello world' > "$d/docs/b.txt"
"$bin" prepare --tokenizer gpt2 --data "$d/docs" --out "$d/g2" > "$d/g2.out" 2> "$d/g2.err"
t=$(od -An -tu2 -j1024 "$d/g2/docs_train_000001.bin" | tr -s ' ')
v=$(od -An -tu2 -j1024 "$d/g2/docs_val_000000.bin" | tr -s ' ')
[ "$t" = " 15496 995 50256 15496" ] && [ "$v" = " 995" ] &&
    ok "gpt2: 15496 995 50256 15496 | 995 (the separator between the two documents)" ||
    { bad "gpt2 shards: train '$t' val '$v'"; cat "$d/g2.err" >&2; }

# ---- bad input: exit 2, one line on stderr ----
fails_with() {  # fails_with <label> <text on stderr> <command...>
    label=$1
    want=$2
    shift 2
    "$@" > "$d/bad.out" 2> "$d/bad.err"
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$d/bad.err")" = 1 ] && grep -q -- "$want" "$d/bad.err"; then
        ok "$label: $(cat "$d/bad.err")"
    else
        bad "$label (exit $rc)"; cat "$d/bad.err" >&2
    fi
}
mkdir -p "$d/trunc" && cp "$d/sh/tokenizer.ckpt" "$va" "$d/trunc/" &&
    head -c 5000 "$tr" > "$d/trunc/tinyshakespeare_train_000001.bin"
fails_with "a truncated shard" "tinyshakespeare_train_000001.bin' is 5000 bytes but its header" \
    "$bin" train --data "$d/trunc" $A --out "$d/x.ckpt"
printf 'XXXX' | dd of="$d/trunc/tinyshakespeare_train_000001.bin" conv=notrunc 2> /dev/null
fails_with "a corrupt magic" "not the magic 20240520" "$bin" train --data "$d/trunc" $A --out "$d/x.ckpt"
mkdir -p "$d/nano2" && cp "$d/nano/train.bin" "$d/nano/val.bin" "$d/nano2/"
fails_with "headerless files without a tokenizer" "pass --tokenizer gpt2" \
    "$bin" train --data "$d/nano2" $A --out "$d/x.ckpt"
printf 'ab' > "$d/tiny.txt"
"$bin" bpe-train --merges 1 --data "$d/tiny.txt" --out "$d/v.vocab" 2> /dev/null
rm -f "$d/g2/tokenizer.ckpt"
fails_with "ids beyond the vocabulary" "holds id 15496 at token 0" \
    "$bin" train --data "$d/g2" --tokenizer "$d/v.vocab" $A --out "$d/x.ckpt"
fails_with "--tokenizer gpt2 for char shards" "made with the char tokenizer" \
    "$bin" train --data "$d/sh" --tokenizer gpt2 $A --out "$d/x.ckpt"
fails_with "--out is a file" "is a file; prepare writes a directory" \
    "$bin" prepare --data $corpus --out "$tr"
mkdir -p "$d/own" && head -c 3000 $corpus > "$d/own/tiny_val_000000.bin" &&
    cp "$d/own/tiny_val_000000.bin" "$d/own.copy" && head -c 3000 $corpus > "$d/tiny.txt"
fails_with "an input prepare would replace" "which prepare would replace" \
    "$bin" prepare --data "$d/tiny.txt" "$d/own/tiny_val_000000.bin" --out "$d/own"
cmp -s "$d/own/tiny_val_000000.bin" "$d/own.copy" && ok "the input is unchanged" ||
    bad "the input was changed"

[ $fails = 0 ] && echo "run_shards: all passed" || echo "run_shards: $fails failed" >&2
[ $fails = 0 ]
