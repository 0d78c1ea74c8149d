#!/bin/sh
# Checks that README.md shows examples/tour.c verbatim, runs the built tour and checks that it
# printed a loss and a (4, 1) gradient.
build=${1:-build}
awk '/<!-- tour:begin -->/{f=1;next} /<!-- tour:end -->/{f=0} f' README.md |
    sed '1d;$d' > "$build/tour_from_readme.c"
if ! cmp -s "$build/tour_from_readme.c" examples/tour.c; then
    echo "README.md's tour differs from examples/tour.c:" >&2
    diff "$build/tour_from_readme.c" examples/tour.c >&2
    exit 1
fi
out=$("$build/tour") || { echo "tour exited non-zero" >&2; exit 1; }
echo "$out"
echo "$out" | grep -q '^loss [0-9]' && echo "$out" | grep -q 'shape=(4, 1), dtype=f32' || {
    echo "tour: unexpected output" >&2; exit 1; }
echo "tour: ok"
