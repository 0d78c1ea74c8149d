#!/bin/sh
# Runs the built makemore example (examples/makemore.c) for 3,000 steps on the unique words
# of Tiny Shakespeare and checks: the counts line (11,455 words, context 5) and 16,097
# parameters (as tests/reference/makemore.py counts), five step lines, a val loss far below
# the uniform ln 27 = 3.30: <= 2.45 (3,000 steps gave 2.31; 20,000 give 2.06), 20 sampled
# words of letters, and nothing left live at exit (TT_LEAK_REPORT=1).
# Skipped (exit 0) without the corpus (../shared/data or data/tinyshakespeare.txt).
# Usage: sh tests/run_makemore.sh [builddir]
build=${1:-build}
corpus=data/tinyshakespeare.txt
[ -s "$corpus" ] || corpus=../shared/data/tinyshakespeare.txt
if [ ! -s "$corpus" ]; then
    echo "makemore: skipped (no tinyshakespeare.txt; make data fetches it)"
    exit 0
fi
fail() { echo "makemore: $*" >&2; exit 1; }
num='[0-9][0-9]*\.[0-9]*'
out=$(TT_LEAK_REPORT=1 "$build/makemore" 3000 5 "$corpus" 2>"$build/makemore_test.err") ||
    fail "exited non-zero"
echo "$out"
[ -s "$build/makemore_test.err" ] && { cat "$build/makemore_test.err"; fail "wrote to stderr"; }
[ "$(echo "$out" | head -n 1)" = "11455 words, 71503 train / 8789 val examples, context 5" ] ||
    fail "want '11455 words, 71503 train / 8789 val examples, context 5' first"
echo "$out" | grep -q '^16097 parameters$' || fail "want '16097 parameters'"
[ "$(echo "$out" | grep -c "^step  *[0-9]* loss $num\$")" = 5 ] || fail "want five step lines"
val=$(echo "$out" | sed -n "s/^train $num val \($num\) ($num s cpu)\$/\1/p")
[ -n "$val" ] || fail "want 'train F val F (F s cpu)'"
awk -v a="$val" 'BEGIN { exit !(a <= 2.45) }' || fail "val loss $val is above 2.45"
words=$(echo "$out" | sed -n '/^train /,$p' | tail -n +2)
[ "$(echo "$words" | wc -l)" = 20 ] || fail "want 20 sampled words"
echo "$words" | grep -qv '^[a-z]*$' && fail "a sampled word holds other than a-z"
echo "makemore: ok (val loss $val <= 2.45)"
