#!/bin/sh
# Messages that say what is wrong, and make -j on the data recipes:
# - char_gpt's numeric flags: an integer beyond int64 is "out of range" with the range and the
#   text as typed (not a wrapped value), a real beyond a double too, a denormal real is the number
#   it is (--lr 1e-320 trains; --temperature 1e-320 samples as greedy), an open end of a range is
#   printed as one ("(0, 1]" for --top-p);
# - on --resume, a value read from the checkpoint is named as such in range and relation
#   messages ("--min-lr 0.0001 (from the checkpoint F) must be at most --lr 1e-05 (given)");
# - gpt --tokenizer DIR says it is a directory; a vocab file with CRLF line ends reads as the
#   same vocab;
# - lenet refuses an empty train or test split before training (nothing written), and trains on
#   a split smaller than a batch;
# - make -j4 of the data files (GPT-2's two from one recipe, the corpus) in a scratch copy of the
#   Makefile and scripts, from nothing, several times; and two gpt2_vocab.sh runs at once.
# Bad input exits 2 (not by a signal) with one line on stderr. Usage: sh tests/run_safety_msgs.sh
# [builddir]
build=${1:-build}
for b in char_gpt gpt lenet; do
    [ -x "$build/$b" ] || { echo "run_safety_msgs: $build/$b is not built" >&2; exit 1; }
done
bin=$(cd "$build" && pwd)
d=$build/safety_msgs_test
rm -rf "$d" && mkdir -p "$d" || exit 1
d=$(cd "$d" && pwd)
fails=0
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export ASAN_OPTIONS
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }

# expect_fail <label> <fixed string wanted on stderr> <program> <args...>: exit 2, one line.
expect_fail() {
    label=$1
    want=$2
    prog=$3
    shift 3
    "$bin/$prog" "$@" > "$d/bad.out" 2> "$d/bad.err"
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$d/bad.err")" = 1 ] &&
       grep -qF -- "$want" "$d/bad.err"; then
        ok "$label: $(cat "$d/bad.err")"
    else
        bad "$label: exit $rc, want one line with '$want'"
        cat "$d/bad.err" >&2
    fi
}

# ---- a tiny corpus and a 10-step checkpoint ----
awk 'BEGIN { srand(7); split("the king and queen of england shall speak to thee my lord " \
     "what is this night ROMEO: JULIET: O, I pray you, sir!", w, " ");
     for (i = 0; i < 2000; i++) { printf "%s%s", w[int(rand() * 24) + 1],
                                  (i % 12 == 11) ? "\n" : " " } }' > "$d/tiny.txt"
model="--layers 1 --embd 16 --heads 2 --block 8 --batch 2 --eval-iters 2 --threads 1"
model="$model --data $d/tiny.txt"
"$bin/char_gpt" train $model --iters 10 --warmup 5 --eval-every 10 --out "$d/run.ckpt" \
    > "$d/run.out" 2>&1 || { bad "the 10-step run failed"; cat "$d/run.out" >&2; }

# ---- numbers beyond int64 or a double: the text as typed and the range ----
expect_fail "train --block beyond int64" \
    "--block 9223372036854775807 is out of range; use a value in [1, 2048]" \
    char_gpt train $model --block 9223372036854775807 --out "$d/x.ckpt"
expect_fail "train --layers below int64" \
    "--layers -99999999999999999999 is out of range; use a value in [1, " \
    char_gpt train $model --layers -99999999999999999999 --out "$d/x.ckpt"
expect_fail "train --batch at int64's max" \
    "--batch 9223372036854775807 is out of range; use a value in [1, 65536]" \
    char_gpt train $model --batch 9223372036854775807 --out "$d/x.ckpt"
expect_fail "--seed beyond int64" "--seed 99999999999999999999 is out of range; use a value in \
[-9223372036854775808, 9223372036854775807]" \
    char_gpt train $model --seed 99999999999999999999 --out "$d/x.ckpt"
expect_fail "sample --block beyond int64" \
    "--block 9223372036854775807 is out of range; use a value in [1, 2048]" \
    char_gpt sample --ckpt "$d/run.ckpt" --block 9223372036854775807
expect_fail "--lr beyond a double" "--lr 1e400 is out of range; use a value in (0, inf)" \
    char_gpt train $model --lr 1e400 --out "$d/x.ckpt"
expect_fail "--dropout beyond a double" "--dropout 1e400 is out of range; use a value in [0, 1)" \
    char_gpt train $model --dropout 1e400 --out "$d/x.ckpt"
expect_fail "--lr nan" "--lr expects a number, got 'nan'" \
    char_gpt train $model --lr nan --out "$d/x.ckpt"
expect_fail "--threads 0" "--threads 0 is out of range; use a value in [1, 1024]" \
    char_gpt train $model --threads 0 --out "$d/x.ckpt"
[ -e "$d/x.ckpt" ] && bad "a refused run wrote --out" || ok "no refused run wrote --out"

# ---- open ends printed as open ----
expect_fail "--top-p 2" "--top-p 2 is out of range; use a value in (0, 1]" \
    char_gpt sample --ckpt "$d/run.ckpt" --top-p 2
expect_fail "--top-p 0" "--top-p 0 is out of range; use a value in (0, 1]" \
    char_gpt sample --ckpt "$d/run.ckpt" --top-p 0
expect_fail "--beta2 1" "--beta2 1 is out of range; use a value in [0, 1)" \
    char_gpt train $model --beta2 1 --out "$d/x.ckpt"

# ---- denormal reals are numbers ----
if "$bin/char_gpt" train $model --iters 2 --warmup 0 --eval-every 2 --lr 1e-320 \
       --out "$d/tiny_lr.ckpt" > "$d/lr.out" 2> "$d/lr.err" &&
   grep -q '^done steps=2 ' "$d/lr.out"; then
    ok "--lr 1e-320 (a denormal) trains"
else
    bad "--lr 1e-320 did not train"; cat "$d/lr.err" >&2
fi
"$bin/char_gpt" sample --ckpt "$d/run.ckpt" --tokens 40 --temperature 0 > "$d/g0.txt" 2> /dev/null
"$bin/char_gpt" sample --ckpt "$d/run.ckpt" --tokens 40 --temperature 1e-320 > "$d/gd.txt" \
    2> "$d/t.err"
rc=$?
if [ $rc = 0 ] && [ -s "$d/g0.txt" ] && cmp -s "$d/g0.txt" "$d/gd.txt"; then
    ok "--temperature 1e-320 samples the greedy text"
else
    bad "--temperature 1e-320: exit $rc, text differs from --temperature 0"; cat "$d/t.err" >&2
fi

# ---- --resume: values from the checkpoint are named so ----
cp "$d/run.ckpt" "$d/keep.ckpt"
expect_fail "resume --lr below the checkpoint's --min-lr" "--min-lr 0.0001 (from the checkpoint \
$d/run.ckpt) must be at most --lr 1e-05 (given); give --min-lr too" \
    char_gpt train --resume "$d/run.ckpt" --iters 20 --lr 1e-5
expect_fail "resume --decay-iters below the checkpoint's --warmup" "--warmup 5 (from the \
checkpoint $d/run.ckpt) must be below --decay-iters 2 (given); give --warmup too" \
    char_gpt train --resume "$d/run.ckpt" --iters 20 --decay-iters 2
expect_fail "a fresh run's --min-lr above --lr" \
    "--min-lr 0.01 must be at most --lr 0.001; lower --min-lr" \
    char_gpt train $model --min-lr 1e-2 --lr 1e-3 --out "$d/x.ckpt"
expect_fail "a fresh run's --warmup at --iters" "--warmup 4 must be below --iters 4; lower" \
    char_gpt train $model --iters 4 --warmup 4 --out "$d/x.ckpt"
cmp -s "$d/run.ckpt" "$d/keep.ckpt" && ok "refused resumes left the checkpoint as it was" ||
    bad "a refused resume changed the checkpoint"

# ---- gpt --tokenizer: a directory, CRLF line ends ----
expect_fail "--tokenizer DIR" \
    "'$d' is a directory, not a regular file; pass char, gpt2 or a vocab" \
    gpt encode --tokenizer "$d"
if "$bin/gpt" bpe-train --merges 40 --data "$d/tiny.txt" --out "$d/lf.vocab" 2> "$d/bpe.err"
then
    sed 's/$/\r/' "$d/lf.vocab" > "$d/crlf.vocab"
    a=$("$bin/gpt" encode --tokenizer "$d/lf.vocab" < "$d/tiny.txt")
    b=$("$bin/gpt" encode --tokenizer "$d/crlf.vocab" < "$d/tiny.txt" 2> "$d/crlf.err")
    rc=$?
    if [ $rc = 0 ] && [ -n "$a" ] && [ "$a" = "$b" ] && ! cmp -s "$d/lf.vocab" "$d/crlf.vocab"
    then ok "a vocab with CRLF line ends encodes as the LF one ($(echo "$a" | wc -w) ids)"
    else bad "the CRLF vocab: exit $rc, ids differ"; cat "$d/crlf.err" >&2; fi
else
    bad "gpt bpe-train failed"; cat "$d/bpe.err" >&2
fi

# ---- lenet: empty splits refused, a split smaller than a batch trains ----
be32() { printf "$(printf '\\%03o\\%03o\\%03o\\%03o' 0 0 0 "$1")"; }
idx() {  # idx <dir> <split> <n>: n random 28 x 28 images and their labels 1, 2, ...
    mkdir -p "$1"
    { printf '\000\000\010\003'; be32 "$3"; printf '\000\000\000\034\000\000\000\034'
      head -c $(($3 * 784)) /dev/urandom; } > "$1/$2-images-idx3-ubyte"
    { printf '\000\000\010\001'; be32 "$3"; i=0
      while [ $i -lt "$3" ]; do printf "\\$(printf %03o $((i % 10)))"; i=$((i + 1)); done
    } > "$1/$2-labels-idx1-ubyte"
}
idx "$d/e_train" train 0; idx "$d/e_train" t10k 3
idx "$d/e_test" train 3; idx "$d/e_test" t10k 0
idx "$d/small" train 3; idx "$d/small" t10k 3
expect_fail "lenet on an empty train split" "its train split holds no images" \
    lenet --data "$d/e_train" --epochs 1 --out "$d/l.ckpt"
expect_fail "lenet on an empty test split" "its test split holds no images" \
    lenet --data "$d/e_test" --epochs 1 --out "$d/l.ckpt"
[ -e "$d/l.ckpt" ] && bad "lenet wrote a checkpoint from an empty split" ||
    ok "lenet wrote no checkpoint from an empty split"
"$bin/lenet" --data "$d/small" --epochs 1 --batch 128 --threads 1 --out "$d/l.ckpt" \
    > "$d/l.out" 2> "$d/l.err"
rc=$?
if [ $rc = 0 ] && grep -q '^epoch 1 train_loss=[0-9]' "$d/l.out" && ! grep -qi nan "$d/l.out"
then ok "lenet trains on 3 images with --batch 128: $(head -n 1 "$d/l.out")"
else bad "lenet on 3 images: exit $rc"; cat "$d/l.out" "$d/l.err" >&2; fi
expect_fail "lenet --eval on an empty test split" "its test split holds no images" \
    lenet --data "$d/e_test" --eval "$d/l.ckpt"

# ---- make -j on the data recipes (needs ../shared/data: no network here) ----
sh_data=$(cd ../shared/data 2>/dev/null && pwd)
if [ -n "$sh_data" ] && [ -s "$sh_data/gpt2/encoder.json" ] &&
   [ -s "$sh_data/gpt2/vocab.bpe" ] && [ -s "$sh_data/tinyshakespeare.txt" ]; then
    r=$d/race
    mkdir -p "$r/repo/scripts" "$r/shared" && ln -s "$sh_data" "$r/shared/data" &&
        cp Makefile "$r/repo/" && cp scripts/gpt2_vocab.sh scripts/digits.sh "$r/repo/scripts/"
    goals="data/tinyshakespeare.txt data/gpt2/encoder.json data/gpt2/vocab.bpe"
    good=0
    for i in 1 2 3 4 5; do
        rm -rf "$r/repo/data" && mkdir "$r/repo/data"
        # shellcheck disable=SC2086
        make -s -j4 -C "$r/repo" $goals > "$r/make.log" 2>&1 &&
            cmp -s "$r/repo/data/gpt2/vocab.bpe" "$sh_data/gpt2/vocab.bpe" &&
            cmp -s "$r/repo/data/gpt2/encoder.json" "$sh_data/gpt2/encoder.json" &&
            cmp -s "$r/repo/data/tinyshakespeare.txt" "$sh_data/tinyshakespeare.txt" &&
            [ -z "$(find "$r/repo/data" -name '*.part*')" ] && good=$((good + 1))
    done
    [ $good = 5 ] && ok "make -j4 of the data files from nothing: 5 of 5 runs" ||
        { bad "make -j4 of the data files: $good of 5 runs"; cat "$r/make.log" >&2; }
    rm -rf "$r/repo/data" && mkdir "$r/repo/data"
    (cd "$r/repo" && { sh scripts/gpt2_vocab.sh > ../a.log 2>&1 & \
                       sh scripts/gpt2_vocab.sh > ../b.log 2>&1; rb=$?; wait $!; ra=$?
                       [ $ra = 0 ] && [ $rb = 0 ]; })
    rc=$?
    [ $rc = 0 ] && cmp -s "$r/repo/data/gpt2/vocab.bpe" "$sh_data/gpt2/vocab.bpe" &&
        [ -z "$(find "$r/repo/data" -name '*.part*')" ] &&
        ok "two gpt2_vocab.sh runs at once both succeed" ||
        { bad "two gpt2_vocab.sh runs at once"; cat "$r/a.log" "$r/b.log" >&2; }
else
    echo "skip make -j data: no ../shared/data with the corpus and GPT-2's vocab"
fi

if [ $fails = 0 ]; then echo "run_safety_msgs: all passed"; rm -rf "$d"; exit 0; fi
echo "run_safety_msgs: $fails FAILED" >&2
exit 1
