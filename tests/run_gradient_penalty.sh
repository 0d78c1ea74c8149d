#!/bin/sh
# Runs the built gradient_penalty example (a WGAN-GP on 2-D points) and fails unless its last
# line is "done mean=(<x>, <y>) std=(<x>, <y>)" with the generated samples' mean within 0.25 of
# the target's (2, -1) in each coordinate (the generator starts near (0, 0)) and each std in
# [0.1, 0.8] (neither collapsed nor spread out; the target's is (0.5, 0.3)). No timing.
build=${1:-build}
out=$("$build/gradient_penalty") || { echo "gradient_penalty exited non-zero" >&2; exit 1; }
echo "$out"
line=$(echo "$out" | grep '^done mean=' | tail -n 1)
set -- $(echo "$line" | sed -n 's/^done mean=(\([-0-9.]*\), \([-0-9.]*\)) std=(\([-0-9.]*\), \([-0-9.]*\))$/\1 \2 \3 \4/p')
if [ $# -ne 4 ]; then
    echo "gradient_penalty: no or malformed 'done mean=(x, y) std=(x, y)' line: $line" >&2
    exit 1
fi
if awk -v mx="$1" -v my="$2" -v sx="$3" -v sy="$4" 'BEGIN {
        ok = (mx - 2) ^ 2 <= 0.0625 && (my + 1) ^ 2 <= 0.0625 && sx >= 0.1 && sx <= 0.8 &&
             sy >= 0.1 && sy <= 0.8
        exit !ok }'; then
    echo "gradient_penalty: ok (mean ($1, $2), std ($3, $4))"
else
    echo "gradient_penalty: samples mean ($1, $2) std ($3, $4) are off the target" \
         "mean (2, -1) std (0.5, 0.3)" >&2
    exit 1
fi
