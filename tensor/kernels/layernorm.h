// The f32 layernorm kernels' insides (tt_klayernorm_forward_f32 / _backward_f32, nn.h): the
// lane-ordered row sums every path shares, the run-time choice of instruction set and the
// per-ISA row functions (layernorm.c portable, layernorm_avx2.c, layernorm_avx512.c). Internal.
//
// Letters: R rows, N elements normalized per row; [i0, i0 + nc) a block of columns.
//
// Every row sum (the mean, the sum of squared deviations, and the backward's sums of dn and
// dn xhat) is taken in double over TT_KLN_LANES lanes: lane j adds the f32 values widened to
// double of the columns i = j (mod TT_KLN_LANES) in column order, starting from +0; then the
// lanes are combined in one fixed tree, l[j] += l[j + h] for h = LANES/2, ..., 2, 1, and
// l[0] is the sum. The dweight and dbias sums over rows are taken in the same sweep as dx:
// each chunk of TT_KLN_CHUNK rows (rows [c CHUNK, (c + 1) CHUNK)) sums its rows in order in
// double from +0, and the chunks' sums are added in chunk order from +0. So the bits depend
// on R and N only, never on the instruction set or the thread count.
#ifndef TT_KERNELS_LAYERNORM_H
#define TT_KERNELS_LAYERNORM_H

#include <stdint.h>

#define TT_KLN_LANES 16
#define TT_KLN_CHUNK 64

// The CPU level (cpu.h) picks the row functions: AVX-512F at TT_CPU_AVX512 and above, AVX2
// at TT_CPU_AVX2, else the portable C. Every level gives the same bits.

// ---- per-ISA row functions (the same contract and bits on every ISA) ----

// Rows one by one: x, y (R, N); w, b (N) or NULL; mean, rstd (R) out.
// mean = sum x / N, rstd = 1 / sqrt(sum (x - mean)^2 / N + eps) (in double, rounded to f32),
// y = (x - mean) rstd w + b in f32.
typedef void tt_kln_forward_rows_fn(float *y, float *mean, float *rstd, const float *x,
                                    const float *w, const float *b, int64_t R, int64_t N,
                                    double eps);
// Rows one by one, dx (R, N) += rstd (dn - a - xhat c) in f32, dn = dy w, xhat = (x - mean)
// rstd, a = sum dn / N, c = sum dn xhat / N (row sums in double, rounded to f32); and
// aw, ab (N) += the sums over the R rows in order, in double, of dy xhat and of dy (one
// chunk's). dy, x (R, N); w (N) or NULL; mean, rstd (R); dx NULL: no dx; aw, ab NULL: no sums.
typedef void tt_kln_backward_rows_fn(float *dx, double *aw, double *ab, const float *dy,
                                     const float *x, const float *w, const float *mean,
                                     const float *rstd, int64_t R, int64_t N);

tt_kln_forward_rows_fn tt_kln_forward_rows_avx2, tt_kln_forward_rows_avx512;
tt_kln_backward_rows_fn tt_kln_backward_rows_avx2, tt_kln_backward_rows_avx512;

#endif  // TT_KERNELS_LAYERNORM_H
