#!/bin/sh
# End-to-end test of `gpt sample`'s generation flags on a char model trained for a few steps:
# --prompts FILE decoded with --batch 3 prints, per prompt and in order, exactly what --prompt
# prints for it alone (greedy; sampled with --seed + i); --stop cuts the text before the first
# stop string, matched across tokens (the text streamed equals the text without --stop cut
# there); --min-p 1 is greedy; --repeat-penalty changes greedy text; bad values exit 2 with one
# line. Usage: sh tests/run_gpt_sample.sh [builddir]
build=${1:-build}
bin=$build/gpt
[ -x "$bin" ] || { echo "run_gpt_sample: $bin is not built" >&2; exit 1; }
d=$build/gpt_sample_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fails=$((fails + 1)); }
[ -s data/tinyshakespeare.txt ] || { echo "run_gpt_sample: run make data" >&2; exit 1; }
head -c 20000 data/tinyshakespeare.txt > "$d/tiny.txt"
"$bin" train --data "$d/tiny.txt" --layers 1 --embd 32 --heads 2 --block 32 --iters 30 \
    --batch 4 --eval-every 30 --eval-iters 1 --out "$d/c.ckpt" > /dev/null 2>&1 ||
    { echo "run_gpt_sample: training failed" >&2; exit 1; }
s="$bin sample --ckpt $d/c.ckpt --tokens 40"

printf 'ROMEO:\nthe\nFirst Citizen:\nI am\nA\n' > "$d/prompts.txt"
for mode in "--temperature 0" "--seed 11"; do
    : > "$d/alone.txt"
    i=0
    while IFS= read -r p; do
        seed=""
        [ "$mode" = "--seed 11" ] && seed="--seed $((11 + i))"
        $s --temperature ${seed:+0.8} ${seed:-0} $seed --prompt "$p" >> "$d/alone.txt" \
            2> /dev/null
        i=$((i + 1))
    done < "$d/prompts.txt"
    $s $mode --prompts "$d/prompts.txt" --batch 3 > "$d/batch.txt" 2> "$d/batch.err"
    cmp -s "$d/alone.txt" "$d/batch.txt" &&
        ok "--prompts --batch 3 ($mode) prints each prompt's text alone" ||
        bad "--prompts --batch 3 ($mode) differs from the prompts alone"
    grep -q "sampled 200 tokens" "$d/batch.err" && ok "5 x 40 tokens counted" ||
        bad "token count: $(cat "$d/batch.err")"
done

full=$($s --temperature 0 --prompt "ROMEO:" 2> /dev/null)
gen=${full#ROMEO:}
stop=$(printf '%s' "$gen" | cut -c 6-8)  # 3 characters (tokens) inside the generated text
before=${gen%%"$stop"*}
got=$($s --temperature 0 --prompt "ROMEO:" --stop "zzz" --stop "$stop" 2> /dev/null)
[ "$got" = "ROMEO:$before" ] && [ "${#before}" -lt 8 ] &&
    ok "--stop '$stop' cuts the text before it" || bad "--stop: got '$got', want 'ROMEO:$before'"
got=$($s --temperature 0 --prompt "ROMEO:" --stop "$(printf '%s' "$stop" | cut -c 1-2)#" \
    2> /dev/null)
[ "$got" = "$full" ] && ok "a stop string that never completes releases every byte" ||
    bad "held-back bytes lost: '$got'"
[ "$($s --seed 4 --min-p 1 --prompt "ROMEO:" 2> /dev/null)" = "$full" ] &&
    ok "--min-p 1 keeps only the most likely token: the greedy text" || bad "--min-p 1"
[ "$($s --temperature 0 --repeat-penalty 5 --prompt "ROMEO:" 2> /dev/null)" != "$full" ] &&
    ok "--repeat-penalty 5 changes the greedy text" || bad "--repeat-penalty had no effect"

expect_fail() {  # expect_fail <label> <pattern> <args...>
    label=$1
    pattern=$2
    shift 2
    "$bin" "$@" > "$d/bad.out" 2> "$d/bad.err"
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l < "$d/bad.err")" = 1 ] && grep -q -- "$pattern" "$d/bad.err"
    then ok "bad input, $label: $(cat "$d/bad.err")"
    else bad "bad input, $label: exit $rc, want '$pattern'"; cat "$d/bad.err" >&2
    fi
}
expect_fail "--min-p above 1" "--min-p 2 is out of range" sample --ckpt "$d/c.ckpt" --min-p 2
expect_fail "--repeat-penalty 0" "--repeat-penalty 0 is out of range" \
    sample --ckpt "$d/c.ckpt" --repeat-penalty 0
expect_fail "--batch without --prompts" "give --prompts" sample --ckpt "$d/c.ckpt" --batch 2
expect_fail "an empty --stop" "--stop: give at most 16 non-empty values" \
    sample --ckpt "$d/c.ckpt" --stop ""
printf 'ROMEO:\n\nKING\n' > "$d/empty_line.txt"
expect_fail "an empty prompt line" "line 2 of" sample --ckpt "$d/c.ckpt" \
    --prompts "$d/empty_line.txt"
expect_fail "a missing prompts file" "cannot open" sample --ckpt "$d/c.ckpt" \
    --prompts "$d/nope.txt"

if [ $fails = 0 ]; then echo "gpt sample: ok"; else echo "gpt sample: $fails failed" >&2; exit 1; fi
