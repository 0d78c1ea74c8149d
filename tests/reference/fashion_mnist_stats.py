#!/usr/bin/env python3
# Statistics of Debian's dataset-fashion-mnist files that tests/test_idx.c checks, computed
# with Python's gzip and struct only (independent of tinytorch's reader; torchvision's
# datasets.FashionMNIST reads the same bytes into .data uint8 and .targets int64).
#     python3 tests/reference/fashion_mnist_stats.py [DIR]
import gzip
import struct
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
for split in ("train", "t10k"):
    with gzip.open(f"{d}/{split}-images-idx3-ubyte.gz") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        pix = f.read()
    with gzip.open(f"{d}/{split}-labels-idx1-ubyte.gz") as f:
        lmagic, ln = struct.unpack(">II", f.read(8))
        lab = f.read()
    assert magic == 0x803 and lmagic == 0x801 and len(pix) == n * rows * cols and len(lab) == ln
    hist = [lab.count(bytes([k])) for k in range(10)]
    first = pix[: rows * cols]
    print(f"{split}: n {n} rows {rows} cols {cols} labels {ln} hist {hist}")
    print(f"  pixel sum {sum(pix)}, first image sum {sum(first)}, max {max(first)}, "
          f"first labels {list(lab[:8])}, last label {lab[-1]}")
    print(f"  image 0 row 14: {list(first[14 * cols:15 * cols])}")
