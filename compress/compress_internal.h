// Internals shared by the files of compress/.
#ifndef TT_COMPRESS_INTERNAL_H
#define TT_COMPRESS_INTERNAL_H

#include "compress.h"
#include "../tensor/tensor_internal.h"

// A weight format for inference (tt_quant): how a Linear's weight is packed and multiplied.
// compress/qlinear.c swaps a module running it into a Linear (tt_nn_linear_quantize_as) and
// walks module trees; each format is one such table in its own file.
typedef struct tt__qformat {
    tt_quant quant;
    // Whether a weight (out, in) fits the format (NULL: every one does).
    bool (*fits)(int64_t out, int64_t in);
    // The packed state of weight (out, in) and bias (out,) or NULL, of any float dtype
    // (copied: the tensors may change or be freed afterwards).
    void *(*pack)(const tt_tensor *weight, const tt_tensor *bias);
    // x (..., in) f32, any layout -> y (..., out) f32 in the caller's scope; no autograd
    // (aborts when grad mode is on and x requires grad, as tt_nn_qlinear_forward does).
    tt_tensor *(*forward)(void *state, tt_tensor *x);
    int64_t (*bytes)(const void *state);  // what forward reads for the weight and bias
    void (*free)(void *state);            // frees the state
} tt__qformat;

extern const tt__qformat tt__qformat_int8;  // qlinear.c: tt_nn_qlinear
extern const tt__qformat tt__qformat_bf16;  // qbf16.c
extern const tt__qformat tt__qformat_int4;  // qlinear_int4.c

// The forward a weight format shares (qlinear.c): checks x (..., in = K) as
// tt_nn_linear_forward's input of the `name` Linear ("bf16", "int4": the message names it),
// allocates y (..., N) in the caller's scope and runs kernel(state, y, x as (M, K) contiguous,
// M) when M > 0.
typedef void (*tt__qformat_kernel)(const void *state, float *y, const float *x, int64_t M);
tt_tensor *tt__qformat_apply(const char *name, tt_tensor *x, int64_t K, int64_t N,
                             tt__qformat_kernel kernel, const void *state);

// t (any float dtype, any layout) as a new contiguous f32 tensor, unscoped (qlinear.c).
tt_tensor *tt__compress_f32(const tt_tensor *t);

#endif  // TT_COMPRESS_INTERNAL_H
