// Internal interface of the convolution kernels: im2col and col2im for one image (or one group
// of its channels), f32 and f64, on contiguous raw buffers. No tensors and no autograd
// (autograd/ops_conv.c wraps them with the packed GEMM). Not installed.
//
// Letters: C channels of the slice, H, W input height and width, KH, KW kernel size, OH, OW
// output height and width, L = OH * OW, K = C * KH * KW. Row k = (c * KH + i) * KW + j of col
// holds, at column l = oh * OW + ow, x[c, oh * sh - ph + i * dh, ow * sw - pw + j * dw] (zero
// outside the input): the layout of PyTorch's im2col, so W (C_out, K) @ col is the convolution.
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

// col (K, L) = the patches of x (C, H, W); every element of col is written.
void tt_k_im2col_f32(float *col, const float *x, const tt_k_conv_geom *g);
void tt_k_im2col_f64(double *col, const double *x, const tt_k_conv_geom *g);
// dx (C, H, W) += the patches of dcol (K, L) added back to the pixels they were read from (the
// adjoint of im2col). Serial, in a fixed order: deterministic.
void tt_k_col2im_f32(float *dx, const float *dcol, const tt_k_conv_geom *g);
void tt_k_col2im_f64(double *dx, const double *dcol, const tt_k_conv_geom *g);

#endif  // TT_KERNELS_CONV_H
