#!/bin/sh
# autograd/ops_generated.h (committed) is what scripts/gen_ops.sh writes from tensor/ops.def
# now: a row added or changed without rebuilding shows here. Usage: sh tests/check_ops_generated.sh
out=$(sh scripts/gen_ops.sh tensor/ops.def | diff autograd/ops_generated.h - 2>&1)
if [ -n "$out" ]; then
    printf '%s\n' "$out" | head -20
    echo "ops_generated.h: stale; run make (or sh scripts/gen_ops.sh > autograd/ops_generated.h)"
    exit 1
fi
n=$(grep -c '^tt_tensor \*tt_' autograd/ops_generated.h)
rows=$(grep -c '^TT_\(UNARY\|UNARY_S\|BINARY\)(' tensor/ops.def)
[ "$n" -eq "$rows" ] || { echo "ops_generated.h: $n prototypes for $rows rows"; exit 1; }
echo "ops_generated.h: current ($n prototypes)"
