#!/bin/sh
# End-to-end test of build/compress on a small config: the table has its header and the seven
# rows in order, ten numeric columns each; the int8 matmul weights take < 1/3.5 of the f32
# ones; both pruned rows have sparsity 0.500 +- 0.001 and fewer nonzero FLOPs than dense ones;
# the rank-halved rows have fewer parameters and FLOPs; every val loss is finite, int8 within
# 0.05 of f32 and the fine-tuned rows within 0.5; two runs print the same table but for the
# tok/s column; --ckpt takes a char_gpt checkpoint; a bad flag exits 2 with one line on stderr.
# Usage: sh tests/run_compress.sh [builddir]
build=${1:-build}
bin=$build/compress
[ -x "$bin" ] || { echo "run_compress: $bin is not built" >&2; exit 1; }
d=$build/compress_test
rm -rf "$d" && mkdir -p "$d" || exit 1
fail() { echo "compress: FAIL $*" >&2; exit 1; }

if [ -s data/tinyshakespeare.txt ]; then head -c 60000 data/tinyshakespeare.txt > "$d/text.txt"
elif [ -s ../shared/data/tinyshakespeare.txt ]; then
    head -c 60000 ../shared/data/tinyshakespeare.txt > "$d/text.txt"
else
    awk 'BEGIN { srand(7); split("the king and queen of england shall speak to thee my lord " \
         "what is this night ROMEO: JULIET: O, I pray you, sir!", w, " ");
         for (i = 0; i < 9000; i++) { printf "%s%s", w[int(rand() * 24) + 1],
                                      (i % 12 == 11) ? "\n" : " " } }' > "$d/text.txt"
fi
args="--data $d/text.txt --layers 2 --embd 64 --heads 2 --block 32 --batch 8 --iters 40"
args="$args --ft-iters 10 --eval-iters 3 --tokens 32 --threads 2"

"$bin" $args > "$d/a.out" 2> "$d/a.err" || { cat "$d/a.err" >&2; fail "exit status $?"; }
cat "$d/a.out"
head -n 1 "$d/a.out" | grep -q '^# compress: L2 H2 C64 T32 V[0-9]*, trained here, seed 1337' ||
    fail "the first line"
[ "$(sed -n 2p "$d/a.out")" = "$(printf '%-12s %8s %8s %8s %9s %9s %9s %9s %8s %8s' model \
    params nonzero sparsity MFLOP/tok nz_MFLOP size_KB matmul_KB val_loss tok/s)" ] ||
    fail "the header"
[ "$(sed -n '3,9p' "$d/a.out" | awk '{ printf "%s ", $1 }')" = \
  "f32 int8 f32+ft pruned50 pruned50+ft rank/2 rank/2+ft " ] || fail "the rows"
[ "$(wc -l < "$d/a.out")" = 10 ] && tail -n 1 "$d/a.out" | grep -q '^# train ' ||
    fail "want 10 lines, the last '# train ...'"
sed -n '3,9p' "$d/a.out" | awk 'NF != 10 { exit 1 }
    { for (i = 2; i <= 10; i++) if ($i !~ /^[0-9][0-9.]*$/) exit 1 }' ||
    fail "every row has ten columns of plain numbers"
sed -n '3,9p' "$d/a.out" | awk '
    { n[$1] = $2; nz[$1] = $3; sp[$1] = $4; fl[$1] = $5; fnz[$1] = $6; kb[$1] = $7
      mm[$1] = $8; vl[$1] = $9 }
    function check(c, what) { if (!c) { print "compress: FAIL " what > "/dev/stderr"; bad = 1 } }
    END {
        check(mm["int8"] * 3.5 < mm["f32"], "int8 matmul bytes < f32 / 3.5")
        check(kb["int8"] < kb["f32"], "int8 size < f32 size")
        check(nz["f32"] == n["f32"] && sp["f32"] == 0, "f32 dense")
        check(n["f32+ft"] == n["f32"] && sp["f32+ft"] == 0, "f32+ft dense")
        for (r in sp) if (r ~ /^pruned/) {
            check(sp[r] >= 0.499 && sp[r] <= 0.501, r " sparsity 0.5")
            check(nz[r] < n[r] && fnz[r] < fl[r] && fl[r] == fl["f32"], r " nonzero counts")
            check(n[r] == n["f32"] && kb[r] == kb["f32"], r " keeps dense storage")
        }
        for (r in sp) if (r ~ /^rank/)
            check(n[r] < n["f32"] && fl[r] < fl["f32"] && mm[r] < mm["f32"], r " smaller")
        for (r in vl) check(vl[r] > 0 && vl[r] < 10, r " val loss finite")
        d = vl["int8"] - vl["f32"]; check(d < 0.05 && d > -0.05, "int8 val loss near f32")
        check(vl["f32+ft"] < vl["f32"] + 0.5, "f32+ft val loss")
        check(vl["pruned50+ft"] < vl["f32"] + 0.5, "pruned50+ft val loss")
        check(vl["rank/2+ft"] < vl["f32"] + 0.5, "rank/2+ft val loss")
        exit bad
    }' || fail "relations between the rows"

"$bin" $args > "$d/b.out" 2> "$d/b.err" || fail "second run"
[ "$(sed -n '1,9p' "$d/a.out" | cut -c1-88)" = "$(sed -n '1,9p' "$d/b.out" | cut -c1-88)" ] ||
    fail "two runs of one seed differ"

# --ckpt: a checkpoint of char_gpt train.
"$build/char_gpt" train --data "$d/text.txt" --layers 1 --embd 32 --heads 2 --kv-heads 2 \
    --block 16 --batch 4 --iters 5 --eval-every 5 --eval-iters 1 --warmup 1 --threads 2 \
    --out "$d/m.ckpt" > /dev/null 2>&1 || fail "char_gpt train"
"$bin" --ckpt "$d/m.ckpt" --data "$d/text.txt" --ft-iters 2 --eval-iters 1 --tokens 8 \
    --batch 4 --threads 2 > "$d/c.out" 2> "$d/c.err" || { cat "$d/c.err" >&2; fail "--ckpt"; }
head -n 1 "$d/c.out" | grep -q "^# compress: L1 H2 C32 T16 V[0-9]*, $d/m.ckpt" &&
    [ "$(wc -l < "$d/c.out")" = 10 ] || { cat "$d/c.out" >&2; fail "--ckpt table"; }

"$bin" --iters 0 > "$d/e.out" 2> "$d/e.err"
rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$d/e.err")" = 1 ] && [ ! -s "$d/e.out" ] &&
    grep -q '^compress: --iters 0 is out of range; use an integer in \[1, ' "$d/e.err" ||
    fail "a bad flag (exit $rc)"
"$bin" --ckpt "$d/none.ckpt" > "$d/e.out" 2> "$d/e.err"
rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$d/e.err")" = 1 ] || fail "a missing --ckpt (exit $rc)"
echo "compress: ok"
