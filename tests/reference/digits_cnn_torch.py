#!/usr/bin/env python3
# The model of tests/test_milestone_digits.c in PyTorch, for comparison (make test never runs
# it): the same 1,437 / 360 split of scikit-learn's digits for seeds 1 .. 10 (tinytorch's
# xoshiro256** stream and tt_randperm's Fisher-Yates, written out below), the same layers,
# AdamW(lr=5e-3, weight_decay=0.01), batch 32 shuffled, 8 epochs, pixels / 16. Initialisation
# and shuffling come from torch's generator (seeded with the seed), so the runs differ from
# tinytorch's in their draws, not in the recipe. Prints a line per seed and the range;
# tests/reference/digits_cnn_torch.txt holds one run's output (1 thread).
#     /usr/bin/python3 tests/reference/digits_cnn_torch.py [PATH]
import csv
import gzip
import sys
import time

import torch
from torch import nn

M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


class Rng:  # tensor/rng.c: xoshiro256** seeded through splitmix64
    def __init__(self, seed):
        self.s, x = [], seed
        for _ in range(4):
            x, z = splitmix64(x)
            self.s.append(z)

    def u64(self):
        s = self.s
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & M64
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        limit = M64 - M64 % n
        while True:
            x = self.u64()
            if x < limit:
                return x % n

    def randperm(self, n):
        o = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self.below(i + 1)
            o[i], o[j] = o[j], o[i]
        return o


def model():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, 10))


def run(seed, x, y):
    perm = torch.tensor(Rng(seed).randperm(len(y)))
    test, train = perm[:360], perm[360:]
    torch.manual_seed(seed)
    m = model()
    opt = torch.optim.AdamW(m.parameters(), lr=5e-3, weight_decay=0.01)
    ds = torch.utils.data.TensorDataset(x[train], y[train])
    dl = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True)
    t0 = time.perf_counter()
    for _ in range(8):
        total = 0.0
        for xb, yb in dl:
            loss = nn.functional.cross_entropy(m(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(yb)
    ms = (time.perf_counter() - t0) * 1000
    m.eval()
    with torch.no_grad():
        acc = (m(x[test]).argmax(1) == y[test]).float().mean().item()
    return acc, total / len(train), ms


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "data/digits.csv.gz"
    with gzip.open(path, "rt") as f:
        rows = [[int(float(v)) for v in r] for r in csv.reader(f)]
    x = torch.tensor([r[:64] for r in rows], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16
    y = torch.tensor([r[64] for r in rows])
    torch.set_num_threads(1)
    accs = []
    for seed in range(1, 11):
        acc, loss, ms = run(seed, x, y)
        accs.append(acc)
        print(f"seed {seed}: last epoch loss {loss:.4f} test_accuracy={acc:.4f} "
              f"train_ms={ms:.0f}")
    print(f"torch {torch.__version__}, 1 thread: test accuracy {min(accs):.4f} .. "
          f"{max(accs):.4f}, mean {sum(accs) / len(accs):.4f}")


main()
