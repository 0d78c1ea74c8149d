#!/usr/bin/env python3
# Statistics of scikit-learn's digits.csv.gz (make data: data/digits.csv.gz, from Debian's
# python3-sklearn) that tests/test_csv.c checks, computed with Python's gzip and csv only
# (independent of tinytorch's reader; sklearn.datasets.load_digits reads the same file).
#     python3 tests/reference/digits_stats.py [PATH]
import csv
import gzip
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "data/digits.csv.gz"
with gzip.open(path, "rt") as f:
    rows = [[int(float(v)) for v in r] for r in csv.reader(f)]
labels = [r[64] for r in rows]
print(f"rows {len(rows)} cols {len(rows[0])} hist {[labels.count(k) for k in range(10)]}")
print(f"pixel sum {sum(sum(r[:64]) for r in rows)} max {max(max(r[:64]) for r in rows)}")
print(f"row 0 pixels 0..15 {rows[0][:16]} label {labels[0]}; last label {labels[-1]}")
