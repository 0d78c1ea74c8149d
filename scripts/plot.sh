#!/bin/sh
# Renders the log of `char_gpt train --log FILE.csv` (step,train_loss,val_loss,lr) as a PNG loss
# curve with gnuplot: the loss of every training batch, the val loss at each eval and the
# learning rate. Usage: sh scripts/plot.sh FILE.csv [FILE.png]  (make plot LOG=FILE.csv)
# Several logs in one argument, "A.csv B.csv", draw each run's val loss and its batch losses
# in one chart to compare runs (make plot LOG="A.csv B.csv" PNG=runs.png).
set -f
# shellcheck disable=SC2086
set -- $1 "$2"
set +f
if [ $# -gt 2 ]; then
    png=$(eval echo "\${$#}")
    case "$png" in *" "* | "") png=runs.png ;; esac  # make's default PNG names one log only
    n=$(($# - 1))
    logs=""
    while [ $n -gt 0 ]; do logs="$logs $1"; shift; n=$((n - 1)); done
    exec sh "$(dirname "$0")/plot_runs.sh" "$png" $logs
fi
log=$1
png=${2:-${1%.csv}.png}
if [ -z "$log" ]; then
    echo "plot: no log given; run: make plot LOG=FILE.csv (from char_gpt train --log FILE.csv)" >&2
    exit 2
fi
if [ ! -f "$log" ]; then
    echo "plot: '$log' does not exist; write one with: char_gpt train --log $log" >&2
    exit 1
fi
if ! head -n 1 "$log" | grep -q '^step,train_loss,val_loss,lr'; then
    echo "plot: '$log' is not a char_gpt --log file (its header must be" \
         "step,train_loss,val_loss,lr)" >&2
    exit 1
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "plot: gnuplot is missing; run make deps (or apt-get install gnuplot-nox)" >&2
    exit 1
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
awk -F, 'NR > 1 && $2 != "" {print $1, $2, $4}' "$log" > "$dir/train.dat"
awk -F, 'NR > 1 && $3 != "" {print $1, $3}' "$log" > "$dir/val.dat"
if [ ! -s "$dir/train.dat" ]; then
    echo "plot: '$log' has no rows yet" >&2
    exit 1
fi
best=$(awk 'NR == 1 || $2 < b {b = $2; s = $1}
           END {if (NR) printf "best val %.4f at step %d", b, s}' "$dir/val.dat")
name=$(basename "$log")
if gnuplot -e "set terminal pngcairo" >/dev/null 2>&1; then term="pngcairo size 960,560"
else term="png size 960,560"; fi
gnuplot <<GP || { rm -f "$png.tmp"; echo "plot: gnuplot failed" >&2; exit 1; }
set terminal $term
set output '$png.tmp'
set title "char\\_gpt: $name ($best)" noenhanced
set xlabel 'step'
set ylabel 'loss (nats per character)'
set y2label 'learning rate'
set y2tics
set ytics nomirror
set format y2 '%.0e'
set grid
set key top right
plot '$dir/train.dat' using 1:2 with lines lw 1 lc rgb '#9ecae1' title 'train loss (batch)', \
     '$dir/val.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#d62728' \
         title 'val loss (eval)', \
     '$dir/train.dat' using 1:3 axes x1y2 with lines dt 2 lc rgb '#636363' title 'lr'
GP
mv "$png.tmp" "$png" && echo "plot: wrote $png"
