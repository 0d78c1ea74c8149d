// Raw kernels of the pooling ops (autograd/ops_pool.c): max pooling with its indices and
// average pooling over separable windows (avg_pool2d and adaptive_avg_pool2d share them), in
// f32 and f64. Contiguous buffers only; no tensors, no autograd. Internal, not installed.
//
// Letters: P planes (N C), H, W the input's height and width, OH, OW the output's. Output
// row i covers input rows [hs[i], he[i]) and column j input columns [ws[j], we[j]) (already
// clipped to the input); an average divides by dh[i] dw[j]. Backward kernels ADD (+=) into dx.
#ifndef TT_KERNELS_POOL_H
#define TT_KERNELS_POOL_H

#include <stdint.h>

// x (P, H, W) -> y, idx (P, OH, OW): the maximum of each window and its flat index h W + w in
// the plane (as PyTorch's return_indices). The first maximum wins a tie; a NaN wins (the last).
void tt_kmax_pool2d_forward_f32(float *y, int64_t *idx, const float *x, int64_t P, int64_t H,
                                int64_t W, int64_t OH, int64_t OW, const int64_t *hs,
                                const int64_t *he, const int64_t *ws, const int64_t *we);
void tt_kmax_pool2d_forward_f64(double *y, int64_t *idx, const double *x, int64_t P, int64_t H,
                                int64_t W, int64_t OH, int64_t OW, const int64_t *hs,
                                const int64_t *he, const int64_t *ws, const int64_t *we);
// dx[p, idx[p, i, j]] += dy[p, i, j]
void tt_kmax_pool2d_backward_f32(float *dx, const float *dy, const int64_t *idx, int64_t P,
                                 int64_t H, int64_t W, int64_t OH, int64_t OW);
void tt_kmax_pool2d_backward_f64(double *dx, const double *dy, const int64_t *idx, int64_t P,
                                 int64_t H, int64_t W, int64_t OH, int64_t OW);
// y[p, i, j] = sum of the window / (dh[i] dw[j])
void tt_kavg_pool2d_forward_f32(float *y, const float *x, int64_t P, int64_t H, int64_t W,
                                int64_t OH, int64_t OW, const int64_t *hs, const int64_t *he,
                                const int64_t *ws, const int64_t *we, const double *dh,
                                const double *dw);
void tt_kavg_pool2d_forward_f64(double *y, const double *x, int64_t P, int64_t H, int64_t W,
                                int64_t OH, int64_t OW, const int64_t *hs, const int64_t *he,
                                const int64_t *ws, const int64_t *we, const double *dh,
                                const double *dw);
// dx[p, window] += dy[p, i, j] / (dh[i] dw[j])
void tt_kavg_pool2d_backward_f32(float *dx, const float *dy, int64_t P, int64_t H, int64_t W,
                                 int64_t OH, int64_t OW, const int64_t *hs, const int64_t *he,
                                 const int64_t *ws, const int64_t *we, const double *dh,
                                 const double *dw);
void tt_kavg_pool2d_backward_f64(double *dx, const double *dy, int64_t P, int64_t H, int64_t W,
                                 int64_t OH, int64_t OW, const int64_t *hs, const int64_t *he,
                                 const int64_t *ws, const int64_t *we, const double *dh,
                                 const double *dw);

#endif  // TT_KERNELS_POOL_H
