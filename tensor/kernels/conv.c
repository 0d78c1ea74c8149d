// im2col / col2im kernels for the 2-D convolution, f32 and f64 (written once in conv.inc).
// No tensors and no autograd (autograd/ops_conv.c). Layout and letters: conv.h.
#include "conv.h"

// ---- f32 ----

#define T float
#define IM2COL tt_k_im2col_f32
#define COL2IM tt_k_col2im_f32
#include "conv.inc"
#undef T
#undef IM2COL
#undef COL2IM

// ---- f64 ----

#define T double
#define IM2COL tt_k_im2col_f64
#define COL2IM tt_k_col2im_f64
#include "conv.inc"
#undef T
#undef IM2COL
#undef COL2IM
