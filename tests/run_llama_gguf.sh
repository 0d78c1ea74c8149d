#!/bin/sh
# GGUF both ways against llama.cpp (a benchmark peer, never a dependency). It SKIPS (exit 0)
# unless LLAMA_CPP names llama.cpp's build/bin (llama-simple and llama-quantize in it):
#     LLAMA_CPP=/path/to/llama.cpp/build/bin sh tests/run_llama_gguf.sh [build]
# (a) A GPT-2-shaped model (2 layers, C 64, GPT-2's BPE) trained here to memorize a few lines,
#     so its next-token distributions are peaked, is exported as f32 GGUF; llama.cpp's greedy
#     32 tokens (llama-simple) equal ours from the checkpoint and from the GGUF.
# (b) llama-quantize --pure turns that file into q8_0 and q4_0, and gguf-py (llama.cpp's
#     Python writer; GGUF_PY, default $LLAMA_CPP/../../gguf-py, with numpy) rewrites it; each
#     loads in ours (--init-from) and generates; with the same file llama.cpp's greedy text is
#     shown beside ours. Our own q8_0 / q4_0 exports hold the same blocks as llama-quantize's.
set -u
B=${1:-build}
if [ -z "${LLAMA_CPP:-}" ]; then
    echo "run_llama_gguf: SKIP (no llama.cpp build; set LLAMA_CPP to its build/bin to run it)"
    exit 0
fi
for t in llama-simple llama-quantize; do
    if [ ! -x "$LLAMA_CPP/$t" ]; then
        echo "run_llama_gguf: SKIP ($LLAMA_CPP/$t not found)"
        exit 0
    fi
done
GPT="$B/gpt"
dir=$(mktemp -d /tmp/tt_llama_gguf.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# ---- a memorized model ----
line="First Citizen: Before we proceed any further, hear me speak. All: Speak, speak."
line2="First Citizen: You are all resolved rather to die than to famish? All: Resolved."
i=0
while [ $i -lt 150 ]; do printf '%s\n%s\n' "$line" "$line2"; i=$((i + 1)); done > "$dir/text.txt"
if ! "$GPT" train --tokenizer gpt2 --preset gpt2 --layers 2 --heads 2 --embd 64 --block 64 \
    --batch 8 --iters 150 --eval-every 150 --eval-iters 2 --lr 3e-3 --warmup 10 \
    --data "$dir/text.txt" --out "$dir/m.ckpt" > "$dir/train.log" 2>&1; then
    tail -5 "$dir/train.log"; echo "run_llama_gguf: FAILED (training)"; exit 1
fi
grep '^done' "$dir/train.log"
for d in f32 q8_0 q4_0; do
    "$GPT" export --format gguf --dtype $d --ckpt "$dir/m.ckpt" --out "$dir/ours_$d.gguf" \
        2> "$dir/export.log" || { cat "$dir/export.log"; bad "export --dtype $d"; }
done

prompt="First Citizen:"
# Greedy text: ours (sample --temperature 0) and llama.cpp's (llama-simple), prompt included,
# the trailing newline both print dropped.
ours() { "$GPT" sample "$@" --prompt "$prompt" --tokens 32 --temperature 0 2> /dev/null; }
llama() {
    "$LLAMA_CPP/llama-simple" -m "$1" -n 32 "$prompt" 2> "$dir/llama.log" || {
        tail -3 "$dir/llama.log"; echo "(llama-simple failed)"; }
}

# ---- (a) ours -> llama.cpp, f32 ----
ours --ckpt "$dir/m.ckpt" > "$dir/a_ckpt.txt"
ours --init-from "$dir/ours_f32.gguf" > "$dir/a_gguf.txt"
llama "$dir/ours_f32.gguf" > "$dir/a_llama.txt"
echo "ours (f32):   $(cat "$dir/a_ckpt.txt")"
echo "llama (f32):  $(cat "$dir/a_llama.txt")"
cmp -s "$dir/a_ckpt.txt" "$dir/a_gguf.txt" && ok "our GGUF generates as our checkpoint" \
    || bad "our GGUF generates otherwise than our checkpoint"
cmp -s "$dir/a_ckpt.txt" "$dir/a_llama.txt" \
    && ok "llama.cpp's greedy 32 tokens equal ours on our f32 GGUF" \
    || bad "llama.cpp's greedy text differs from ours on our f32 GGUF"

# ---- (b) llama.cpp -> ours ----
for q in q8_0 q4_0; do
    if ! "$LLAMA_CPP/llama-quantize" --pure "$dir/ours_f32.gguf" "$dir/lq_$q.gguf" $q \
        > "$dir/quantize.log" 2>&1; then
        tail -3 "$dir/quantize.log"; bad "llama-quantize $q"; continue
    fi
    ours --init-from "$dir/lq_$q.gguf" > "$dir/b_$q.txt" || bad "ours on llama-quantize's $q"
    llama "$dir/lq_$q.gguf" > "$dir/b_llama_$q.txt"
    echo "ours ($q, llama-quantize's file):  $(cat "$dir/b_$q.txt")"
    echo "llama ($q, the same file):         $(cat "$dir/b_llama_$q.txt")"
    grep -q "^$prompt." "$dir/b_$q.txt" && ok "llama-quantize's $q loads in ours and generates" \
        || bad "llama-quantize's $q did not generate in ours"
done

PY=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c "import numpy" 2> /dev/null; then PY=$p; break; fi
done
GGUF_PY=${GGUF_PY:-$LLAMA_CPP/../../gguf-py}
if [ -z "$PY" ] || [ ! -d "$GGUF_PY/gguf" ]; then
    echo "run_llama_gguf: gguf-py part skipped (no python3 with numpy, or no $GGUF_PY/gguf)"
else
    cat > "$dir/rewrite.py" <<'EOF'
import sys, numpy as np, gguf
d = sys.argv[1]
r = gguf.GGUFReader(d + "/ours_f32.gguf")
w = gguf.GGUFWriter(d + "/py.gguf", "gpt2")
for name, f in r.fields.items():
    if name.startswith("GGUF.") or name == "general.architecture":
        continue
    sub = f.types[1] if len(f.types) > 1 else None
    w.add_key_value(name, f.contents(), f.types[0], sub)
for t in r.tensors:
    w.add_tensor(t.name, np.array(t.data))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
# Our quantized exports against llama-quantize's blocks.
for q in ("q8_0", "q4_0"):
    ours = gguf.GGUFReader(d + "/ours_%s.gguf" % q).tensors
    theirs = gguf.GGUFReader(d + "/lq_%s.gguf" % q).tensors
    a = {t.name: np.array(t.data).tobytes() for t in ours}
    b = {t.name: (t.tensor_type.name, np.array(t.data).tobytes()) for t in theirs}
    same = [n for n in a if n in b and b[n][0] == q.upper() and a[n] == b[n][1]]
    nq = sum(1 for n in b if b[n][0] == q.upper())
    print("%s: %d tensors of llama-quantize's file are %s; %d of them byte-equal to ours"
          % (q, nq, q.upper(), len(same)))
    if nq == 0 or len(same) != nq:
        sys.exit(1)
EOF
    PYTHONPATH="$GGUF_PY" "$PY" "$dir/rewrite.py" "$dir" > "$dir/py.log" 2>&1 &&
        ok "gguf-py rewrote our file; our q8_0 / q4_0 blocks are llama-quantize's" ||
        bad "gguf-py"
    cat "$dir/py.log"
    ours --init-from "$dir/py.gguf" > "$dir/b_py.txt"
    cmp -s "$dir/b_py.txt" "$dir/a_ckpt.txt" &&
        ok "gguf-py's file loads in ours and generates as ours" \
        || bad "gguf-py's file: $(cat "$dir/b_py.txt")"
fi
[ $fail = 0 ] && echo "run_llama_gguf: ok" || echo "run_llama_gguf: FAILED"
exit $fail
