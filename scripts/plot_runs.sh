#!/bin/sh
# Draws several `char_gpt train --log` runs in one PNG with gnuplot: each run's loss of every
# training batch (thin) and its val loss at each eval (points), labelled by file name, with the
# best val loss of each. Usage: sh scripts/plot_runs.sh OUT.png A.csv B.csv ...
# (make plot LOG="A.csv B.csv" PNG=OUT.png reaches it through scripts/plot.sh).
png=$1
shift
[ $# -ge 1 ] || { echo "plot: give the logs to compare: make plot LOG=\"A.csv B.csv\"" >&2; exit 2; }
command -v gnuplot >/dev/null 2>&1 ||
    { echo "plot: gnuplot is missing; run make deps (or apt-get install gnuplot-nox)" >&2; exit 1; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
colors="#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #8c564b"
plots=""
i=0
for log in "$@"; do
    if [ ! -f "$log" ] || ! head -n 1 "$log" | grep -q '^step,train_loss,val_loss,lr'; then
        echo "plot: '$log' is not a char_gpt --log file (header step,train_loss,val_loss,lr)" >&2
        exit 1
    fi
    i=$((i + 1))
    c=$(echo $colors | cut -d' ' -f$(( (i - 1) % 6 + 1 )))
    awk -F, 'NR > 1 && $2 != "" {print $1, $2}' "$log" > "$dir/t$i.dat"
    awk -F, 'NR > 1 && $3 != "" {print $1, $3}' "$log" > "$dir/v$i.dat"
    best=$(awk 'NR == 1 || $2 < b {b = $2; s = $1} END {if (NR) printf "%.4f at %d", b, s}' \
        "$dir/v$i.dat")
    name=$(basename "$log" .csv)
    plots="$plots '$dir/t$i.dat' using 1:2 with lines lw 1 lc rgb '$c' dt 3 notitle,"
    plots="$plots '$dir/v$i.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '$c'"
    plots="$plots title '$name: val (best $best)',"
done
if gnuplot -e "set terminal pngcairo" >/dev/null 2>&1; then term="pngcairo size 960,560"
else term="png size 960,560"; fi
gnuplot <<GP || { rm -f "$png.tmp"; echo "plot: gnuplot failed" >&2; exit 1; }
set terminal $term
set output '$png.tmp'
set title "char_gpt runs: val loss (points) and batch loss (dotted)" noenhanced
set xlabel 'step'
set ylabel 'loss (nats per token)'
set grid
set key top right noenhanced
plot ${plots%,}
GP
mv "$png.tmp" "$png" && echo "plot: wrote $png"
