#!/usr/bin/env python3
# The figures of bench_gemm.c measured with NumPy's matmul (whatever BLAS NumPy links; on Debian
# install libopenblas0-pthread and run with OPENBLAS_CORETYPE=SkylakeX for OpenBLAS's AVX-512
# kernels). Prints the same `bench gemm ...` lines, with `impl=numpy` appended; timings are
# medians of 7 runs after a warm-up, each run about 20 ms of products.
#
#   OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/numpy_gemm.py [threads ...]
#   ... bench/numpy_gemm.py M N K nn|nt|tn THREADS     one figure
import sys
import time

import numpy as np

try:
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None


def set_threads(n):
    """Thread count of OpenBLAS: threadpoolctl when installed, else openblas_set_num_threads
    of the BLAS library this process has loaded (found in /proc/self/maps)."""
    if threadpool_limits is not None:
        threadpool_limits(n)
        return
    import ctypes
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line and ".so" in line}
    for path in sorted(libs):
        lib = ctypes.CDLL(path)
        for fn in ("openblas_set_num_threads", "openblas_set_num_threads64_"):
            if hasattr(lib, fn):
                getattr(lib, fn)(n)
                return
    sys.exit("numpy_gemm.py: NumPy's BLAS is not OpenBLAS (install libopenblas0-pthread) and "
             "threadpoolctl is missing: cannot set the thread count")


def bench_one(m, n, k, layout, threads):
    rng = np.random.default_rng(m * 31 + n * 17 + k)
    a = rng.uniform(-1, 1, (k, m) if layout == "tn" else (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, k) if layout == "nt" else (k, n)).astype(np.float32)
    A = a.T if layout == "tn" else a
    B = b.T if layout == "nt" else b
    C = np.empty((m, n), np.float32)
    np.matmul(A, B, out=C)  # warm-up
    t0 = time.perf_counter()
    np.matmul(A, B, out=C)
    dt = time.perf_counter() - t0
    reps = max(1, min(10000, int(0.02 / dt) if dt > 0 else 1000))
    runs = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(reps):
            np.matmul(A, B, out=C)
        runs.append(2.0 * m * n * k * reps / (time.perf_counter() - t0) * 1e-9)
    runs.sort()
    print(f"bench gemm m={m} n={n} k={k} layout={layout} threads={threads} "
          f"gflops={runs[3]:.1f} impl=numpy", flush=True)


def main():
    if len(sys.argv) == 6:
        m, n, k, layout, t = sys.argv[1:]
        set_threads(int(t))
        bench_one(int(m), int(n), int(k), layout, int(t))
        return
    threads = [int(t) for t in sys.argv[1:]] or [1, 2]
    for t in threads:
        set_threads(t)
        bench_one(1024, 1024, 1024, "nn", t)
    t = max(threads)
    set_threads(t)
    for layout in ("nt", "tn"):
        bench_one(1024, 1024, 1024, layout, t)
    for rows, linears in ((768, ((128, 384), (128, 512), (512, 128), (128, 65))),
                          (2048, ((384, 1152), (384, 1536), (1536, 384), (384, 65)))):
        for i, o in linears:
            bench_one(rows, o, i, "nt", t)  # forward: x @ W^T
            bench_one(rows, i, o, "nn", t)  # input gradient: g @ W
            bench_one(i, o, rows, "tn", t)  # weight gradient: x^T @ g


if __name__ == "__main__":
    main()
