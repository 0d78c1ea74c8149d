// Raw kernels of the neural-network ops (autograd/ops_nn.c): softmax, log-softmax, masked
// fill, layernorm, rmsnorm, embedding, fused cross-entropy and dropout, in f32 and f64.
// Contiguous buffers only (the op makes copies); no tensors, no autograd. Internal, not installed.
//
// Letters: a softmax runs along C of (outer, C, inner) (inner == 1: the last dim);
// R rows, N elements normalized per row; M the period of a broadcast mask; V classes (vocab);
// n elements. Every backward kernel ADDS (+=) into its d-prefixed outputs; a NULL output is
// skipped (its input needs no gradient).
#ifndef TT_KERNELS_NN_H
#define TT_KERNELS_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "../tensor.h"

// ---- f32 ----

// softmax / log-softmax along C of (outer, C, inner), max-subtracted. A row that is all -inf
// (fully masked) gives softmax 0 and log-softmax -inf; a row with a NaN is NaN throughout.
void tt_ksoftmax_forward_f32(float *y, const float *x, int64_t outer, int64_t C, int64_t inner);
void tt_klog_softmax_forward_f32(float *y, const float *x, int64_t outer, int64_t C, int64_t inner);
// dx += y (dy - sum(dy y))
void tt_ksoftmax_backward_f32(float *dx, const float *dy, const float *y, int64_t outer, int64_t C,
                              int64_t inner);
// dx += dy - exp(y) sum(dy); nothing for a fully masked row (y all -inf)
void tt_klog_softmax_backward_f32(float *dx, const float *dy, const float *y, int64_t outer,
                                  int64_t C, int64_t inner);
// x, y (outer, M); fill (M): y = fill ? value : x, the mask repeating over outer
void tt_kmasked_fill_forward_f32(float *y, const float *x, const uint8_t *fill, int64_t outer,
                                 int64_t M, double value);
// dx += fill ? 0 : dy
void tt_kmasked_fill_backward_f32(float *dx, const float *dy, const uint8_t *fill, int64_t outer,
                                  int64_t M);
// x, y (R, N); w, b (N) or NULL; mean, rstd (R) out. Biased variance.
void tt_klayernorm_forward_f32(float *y, float *mean, float *rstd, const float *x, const float *w,
                               const float *b, int64_t R, int64_t N, double eps);
// dx += rstd (dy w - mean(dy w) - xhat mean(dy w xhat)); dw += sum dy xhat; db += sum dy
void tt_klayernorm_backward_f32(float *dx, float *dw, float *db, const float *dy, const float *x,
                                const float *w, const float *mean, const float *rstd, int64_t R,
                                int64_t N);
// x, y (R, N); w (N) or NULL; rstd (R) out: y = x rsqrt(mean(x^2) + eps) w
void tt_krmsnorm_forward_f32(float *y, float *rstd, const float *x, const float *w, int64_t R,
                             int64_t N, double eps);
// dx += rstd (dy w - xhat mean(dy w xhat)); dw += sum dy xhat
void tt_krmsnorm_backward_f32(float *dx, float *dw, const float *dy, const float *x, const float *w,
                              const float *rstd, int64_t R, int64_t N);
// w (V, C), idx (n) in [0, V), y (n, C): y[i] = w[idx[i]]
void tt_kembedding_forward_f32(float *y, const float *w, const int64_t *idx, int64_t n, int64_t C);
// dw[idx[i]] += dy[i], i in increasing order (duplicates add up deterministically)
void tt_kembedding_backward_f32(float *dw, const float *dy, const int64_t *idx, int64_t n,
                                int64_t C);
// x (R, V), target (R), lse (R) out. Returns the summed loss of the rows whose target
// is not ignore_index: (1 - s) (lse - x[t]) + s (lse - mean_j x[j]) for smoothing s.
double tt_kcross_entropy_forward_f32(double *lse, const float *x, const int64_t *target, int64_t R,
                                     int64_t V, int64_t ignore_index, double smoothing);
// dx += (softmax(x) - (1 - s) onehot(t) - s / V) scale, rows not ignored; softmax(x) is
// exp(x - lse) with x - lse taken in double
void tt_kcross_entropy_backward_f32(float *dx, const float *x, const double *lse,
                                    const int64_t *target, int64_t R, int64_t V,
                                    int64_t ignore_index, double smoothing, double scale);
// x, y, mask (n): mask = (uniform >= p) / (1 - p) (0 when p == 1), drawn in order;
// y = x mask
void tt_kdropout_forward_f32(float *y, float *mask, const float *x, int64_t n, double p,
                             tt_rng *rng);
// dx += dy mask
void tt_kdropout_backward_f32(float *dx, const float *dy, const float *mask, int64_t n);

// ---- f64 (the same kernels on double) ----

void tt_ksoftmax_forward_f64(double *y, const double *x, int64_t outer, int64_t C, int64_t inner);
void tt_klog_softmax_forward_f64(double *y, const double *x, int64_t outer, int64_t C,
                                 int64_t inner);
void tt_ksoftmax_backward_f64(double *dx, const double *dy, const double *y, int64_t outer,
                              int64_t C, int64_t inner);
void tt_klog_softmax_backward_f64(double *dx, const double *dy, const double *y, int64_t outer,
                                  int64_t C, int64_t inner);
void tt_kmasked_fill_forward_f64(double *y, const double *x, const uint8_t *fill, int64_t outer,
                                 int64_t M, double value);
void tt_kmasked_fill_backward_f64(double *dx, const double *dy, const uint8_t *fill, int64_t outer,
                                  int64_t M);
void tt_klayernorm_forward_f64(double *y, double *mean, double *rstd, const double *x,
                               const double *w, const double *b, int64_t R, int64_t N, double eps);
void tt_klayernorm_backward_f64(double *dx, double *dw, double *db, const double *dy,
                                const double *x, const double *w, const double *mean,
                                const double *rstd, int64_t R, int64_t N);
void tt_krmsnorm_forward_f64(double *y, double *rstd, const double *x, const double *w, int64_t R,
                             int64_t N, double eps);
void tt_krmsnorm_backward_f64(double *dx, double *dw, const double *dy, const double *x,
                              const double *w, const double *rstd, int64_t R, int64_t N);
void tt_kembedding_forward_f64(double *y, const double *w, const int64_t *idx, int64_t n,
                               int64_t C);
void tt_kembedding_backward_f64(double *dw, const double *dy, const int64_t *idx, int64_t n,
                                int64_t C);
double tt_kcross_entropy_forward_f64(double *lse, const double *x, const int64_t *target, int64_t R,
                                     int64_t V, int64_t ignore_index, double smoothing);
void tt_kcross_entropy_backward_f64(double *dx, const double *x, const double *lse,
                                    const int64_t *target, int64_t R, int64_t V,
                                    int64_t ignore_index, double smoothing, double scale);
void tt_kdropout_forward_f64(double *y, double *mask, const double *x, int64_t n, double p,
                             tt_rng *rng);
void tt_kdropout_backward_f64(double *dx, const double *dy, const double *mask, int64_t n);

#endif  // TT_KERNELS_NN_H
