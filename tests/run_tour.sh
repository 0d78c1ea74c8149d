#!/bin/sh
# Runs the README's tour program and checks that the README shows it verbatim.
build=${1:-build}
set -e
awk '/<!-- tour:begin -->/{f=1;next} /<!-- tour:end -->/{f=0} f' README.md |
    sed '1d;$d' > "$build/tour_from_readme.c"
if ! cmp -s "$build/tour_from_readme.c" examples/tour.c; then
    echo "README.md's tour differs from examples/tour.c:" >&2
    diff "$build/tour_from_readme.c" examples/tour.c >&2 || true
    exit 1
fi
"$build/tour"
