#!/bin/sh
# TT_CPU reaches every kernel: the CPU-level suite and the kernel suites that force levels
# (layernorm, int8 GEMM, attention) run under each level below the machine's best, where
# they can only force levels up to the cap; and a bad value stops a program with the one-line
# message. Usage: sh tests/run_tt_cpu.sh [BUILD_DIR]
B=${1:-build}
fail=0
for level in generic avx2; do
    # a level this CPU lacks aborts by design: skip it
    if ! TT_CPU=$level "$B/tests/test_cpu" > /dev/null 2>&1; then
        if TT_CPU=$level "$B/tests/test_cpu" 2>&1 | grep -q "this CPU supports levels up to"; then
            echo "TT_CPU=$level: not on this CPU, skipped"
            continue
        fi
        echo "TT_CPU=$level: test_cpu FAILED"; fail=1; continue
    fi
    for t in test_layernorm_simd test_qgemm test_ops_attention; do
        TT_CPU=$level "$B/tests/$t" > /dev/null 2>&1 || { echo "TT_CPU=$level: $t FAILED"; fail=1; }
    done
    echo "TT_CPU=$level: ok"
done
# a program (the tour) given a bad value: exit on SIGABRT with exactly one line on stderr
msg=$(TT_CPU=avx3 "$B/tour" 2>&1 > /dev/null)
rc=$?
lines=$(printf '%s\n' "$msg" | wc -l)
case $msg in
    *"TT_CPU=avx3 is not a level; use generic, avx2, avx512 or avx512bf16"*)
        if [ "$rc" -ne 0 ] && [ "$lines" -eq 1 ]; then echo "TT_CPU=avx3: refused"
        else echo "TT_CPU=avx3: rc $rc, $lines lines: $msg"; fail=1; fi ;;
    *) echo "TT_CPU=avx3: expected the one-line refusal, got: $msg"; fail=1 ;;
esac
exit $fail
