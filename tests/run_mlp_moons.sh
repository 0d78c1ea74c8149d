#!/bin/sh
# Runs the built mlp_moons example and fails unless its last line is
# "done accuracy=<f> loss=<f>" with accuracy >= 0.97 (held-out two-moons points). No timing.
build=${1:-build}
out=$("$build/mlp_moons") || { echo "mlp_moons exited non-zero" >&2; exit 1; }
echo "$out"
done_line=$(echo "$out" | grep '^done accuracy=' | tail -n 1)
if [ -z "$done_line" ]; then
    echo "mlp_moons: no 'done accuracy=<f> loss=<f>' line" >&2
    exit 1
fi
acc=$(echo "$done_line" | sed -n 's/^done accuracy=\([0-9.]*\) loss=[0-9.eE+-]*$/\1/p')
if [ -z "$acc" ]; then
    echo "mlp_moons: malformed line: $done_line" >&2
    exit 1
fi
if awk -v a="$acc" 'BEGIN { exit !(a >= 0.97) }'; then
    echo "mlp_moons: ok (accuracy $acc >= 0.97)"
else
    echo "mlp_moons: accuracy $acc is below 0.97" >&2
    exit 1
fi
