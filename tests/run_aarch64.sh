#!/bin/sh
# make test-aarch64's runner: runs each cross-built suite under qemu, to the end, and fails if
# any failed. Usage: sh tests/run_aarch64.sh "<qemu command>" <binary>...
# Prints "== NAME", the suite's output and its wall time, then a summary with the total time.
qemu=$1
shift
[ -n "$qemu" ] && [ $# -gt 0 ] || { echo "usage: $0 \"<qemu command>\" <binary>..." >&2; exit 2; }
# Emulation runs the code 10 to 30 times slower than the host: Check's per-test timeouts
# (120 s in tests/test_util.c) are stretched to match.
export CK_TIMEOUT_MULTIPLIER="${CK_TIMEOUT_MULTIPLIER:-10}"
failed=""
start=$(date +%s)
for t in "$@"; do
    echo "== $t (aarch64, $qemu)"
    t0=$(date +%s)
    $qemu "$t" || failed="$failed $(basename "$t")"
    echo "   $(basename "$t"): $(($(date +%s) - t0)) s"
done
total=$(($(date +%s) - start))
if [ -n "$failed" ]; then
    echo "make test-aarch64: FAILED:$failed ($total s)"
    exit 1
fi
echo "make test-aarch64: all $# suites passed under $(${qemu%% *} --version | head -1) ($total s)"
