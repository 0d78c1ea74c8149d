// The saved state of tt_conv2d's and tt_conv_transpose2d's nodes, shared by their forwards and
// first-order backwards (ops_conv.c) and their differentiable backwards (grad2_conv.c).
#ifndef TT_OPS_CONV_H
#define TT_OPS_CONV_H

#include <stdint.h>

typedef struct conv_ctx {
    int64_t stride[2], padding[2], dilation[2], groups;
} conv_ctx;

typedef struct convt_ctx {
    int64_t stride[2], padding[2], output_padding[2], dilation[2], groups;
} convt_ctx;

#endif  // TT_OPS_CONV_H
