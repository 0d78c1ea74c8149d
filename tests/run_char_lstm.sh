#!/bin/sh
# Runs the built char_lstm example for 30 steps on Tiny Shakespeare (data/ or ../shared/data/,
# else generated text: make test needs no network) and checks its output: the `step N
# train_loss=F` lines (steps 1 and 30), a `val_loss=F` line below the first training loss by at
# least 0.5 (ln 65 = 4.17 at the start), then at least 300 sampled characters; the
# same seed twice gives the same output; bad flags exit 2 with one line on stderr. Under ASan
# (make test SAN=1) LeakSanitizer checks every run. Usage: sh tests/run_char_lstm.sh [builddir]
build=${1:-build}
bin=$build/char_lstm
[ -x "$bin" ] || { echo "run_char_lstm: $bin is not built" >&2; exit 1; }
d=$build/char_lstm_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }
num='[0-9][0-9]*\.[0-9][0-9]*'
for f in data/tinyshakespeare.txt ../shared/data/tinyshakespeare.txt; do
    [ -s "$f" ] && { cp "$f" "$d/corpus.txt"; break; }
done
[ -s "$d/corpus.txt" ] ||
    awk 'BEGIN { srand(7); split("the king and queen of england shall speak to thee my lord " \
         "what is this night ROMEO: JULIET: O, I pray you, sir!", w, " ");
         for (i = 0; i < 20000; i++) { printf "%s%s", w[int(rand() * 24) + 1],
                                       (i % 12 == 11) ? "\n" : " " } }' > "$d/corpus.txt"
args="--iters 30 --batch 8 --block 32 --hidden 64 --lr 5e-3 --data $d/corpus.txt"

OMP_NUM_THREADS=1 "$bin" $args > "$d/a.out" 2> "$d/a.err"
rc=$?
first=$(sed -n "s/^step 1 train_loss=\($num\)\$/\1/p" "$d/a.out")
val=$(sed -n "s/^val_loss=\($num\)\$/\1/p" "$d/a.out")
if [ $rc = 0 ] && [ "$(sed -n 1,3p "$d/a.out" | grep -c "^step [0-9]* train_loss=$num\$")" = 2 ] &&
   [ "$(sed -n 2p "$d/a.out" | cut -d' ' -f2)" = 30 ] &&
   [ "$(sed -n 3p "$d/a.out")" = "val_loss=$val" ] &&
   [ "$(sed 1,3d "$d/a.out" | wc -c)" -ge 301 ]; then
    ok "output: $(sed -n 1,3p "$d/a.out" | tr '\n' ' ')and 300 sampled characters"
else
    bad "output (exit $rc)"; cat "$d/a.out" "$d/a.err" >&2
fi
if [ -n "$first" ] && [ -n "$val" ] &&
   awk -v f="$first" -v v="$val" 'BEGIN { exit !(v <= f - 0.5) }'; then
    ok "the loss fell: step 1 train_loss $first, val_loss $val after 30 steps"
else
    bad "the loss did not fall by 0.5: step 1 '$first', val '$val'"
fi
OMP_NUM_THREADS=2 "$bin" $args > "$d/b.out" 2> /dev/null
cmp -s "$d/a.out" "$d/b.out" && ok "the same seed (1 and 2 threads): the same output" ||
    bad "two runs of one seed differ"
"$bin" $args --seed 7 > "$d/c.out" 2> /dev/null
cmp -s "$d/a.out" "$d/c.out" && bad "--seed 7 printed what --seed 1337 did" ||
    ok "--seed 7 gives other output"

expect_usage() {  # expect_usage <label> <pattern> <args...>: exit 2, one stderr line
    label=$1; pattern=$2; shift 2
    "$bin" "$@" > /dev/null 2> "$d/bad.err"
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$d/bad.err")" = 1 ] && grep -q -- "$pattern" "$d/bad.err"
    then ok "bad input, $label: $(cat "$d/bad.err")"
    else bad "bad input, $label: exit $rc"; cat "$d/bad.err" >&2
    fi
}
expect_usage "unknown flag" "bad flag or value '--layers 2'" --layers 2
expect_usage "no value" "bad flag or value '--lr '" --iters 3 --lr
expect_usage "not an integer" "'--iters 2.5'" --iters 2.5
expect_usage "zero" "'--batch 0'" --batch 0
expect_usage "missing data" "No such file" --data "$d/missing.txt"
expect_usage "block above the val split" "needs at least" --block 200000

if [ $fails = 0 ]; then echo "char_lstm: ok"; else echo "char_lstm: $fails failed" >&2; exit 1; fi
