// Internal interface of the convolution kernels: im2col and col2im for one image (or one group
// of its channels), f32 and f64, on contiguous raw buffers. No tensors and no autograd
// (autograd/ops_conv.c wraps them with the packed GEMM). Not installed.
//
// Letters: C channels of the slice, H, W input height and width, KH, KW kernel size, OH, OW
// output height and width, L = OH * OW, K = C * KH * KW. Row k = (c * KH + i) * KW + j of col
// holds, at column l = oh * OW + ow, x[c, oh * sh - ph + i * dh, ow * sw - pw + j * dw] (zero
// outside the input): the layout of PyTorch's im2col, so W (C_out, K) @ col is the convolution.
// ldc is col's row stride in elements (>= L): the columns of several images can sit side by
// side in one (K, N L) matrix, image n at columns [n L, (n + 1) L), for one GEMM per batch.
#ifndef TT_KERNELS_CONV_H
#define TT_KERNELS_CONV_H

#include <stdint.h>

typedef struct tt_k_conv_geom {
    int64_t C, H, W;  // input slice (C, H, W)
    int64_t KH, KW;   // kernel
    int64_t OH, OW;   // output
    int64_t sh, sw;   // stride
    int64_t ph, pw;   // zero padding on each side
    int64_t dh, dw;   // dilation
} tt_k_conv_geom;

// col (K, L), rows ldc apart, = the patches of x (C, H, W); every element of col[:, :L] is
// written.
void tt_k_im2col_f32(float *col, int64_t ldc, const float *x, const tt_k_conv_geom *g);
void tt_k_im2col_f64(double *col, int64_t ldc, const double *x, const tt_k_conv_geom *g);
// dx (C, H, W) += the patches of dcol (K, L), rows ldc apart, added back to the pixels they
// were read from (the adjoint of im2col). Serial, in a fixed order: deterministic.
void tt_k_col2im_f32(float *dx, const float *dcol, int64_t ldc, const tt_k_conv_geom *g);
void tt_k_col2im_f64(double *dx, const double *dcol, int64_t ldc, const tt_k_conv_geom *g);

#endif  // TT_KERNELS_CONV_H
