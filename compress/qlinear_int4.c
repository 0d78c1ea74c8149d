// The int4 weight format (TT_QUANT_INT4): a Linear's weight in blocks of 32 inputs, 4 bits each
// with an f16 scale per block, multiplied by inputs quantized at run time to int8 blocks
// (tensor/kernels/q4gemm.h: the scheme, its rounding and its paths). Inference only: no
// autograd node. Not the walks over a module tree (qlinear.c).
#include "compress_internal.h"

#include "../tensor/kernels/q4gemm.h"

#include <string.h>

// The packed state: the weight and an f32 copy of the bias.
typedef struct int4_linear {
    tt_k_q4weight qw;
    tt_tensor *bias;  // (out) f32 or NULL
} int4_linear;

// weight (out, in) and bias (out) or NULL, any float dtype, any layout, as f32 arrays packed.
static void *int4_pack(const tt_tensor *weight, const tt_tensor *bias) {
    TT_CHECK(weight && weight->ndim == 2 && tt_dtype_is_float(weight->dtype),
             "weight must be a float matrix (out, in), got %s",
             weight ? tt__shape(weight) : "NULL");
    int64_t N = weight->shape[0], K = weight->shape[1];
    int4_linear *s = TT_MALLOC(sizeof *s);
    memset(s, 0, sizeof *s);
    tt_tensor *wc = tt__compress_f32(weight);  // (N, K)
    tt_k_q4weight_init(&s->qw, tt_data_f32(wc), N, K);
    tt_release(wc);
    if (bias) s->bias = tt__compress_f32(bias);  // (N)
    return s;
}

static void int4_forward_kernel(const void *state, float *y, const float *x, int64_t M) {
    const int4_linear *s = state;
    tt_k_q4gemm_f32(y, x, &s->qw, s->bias ? tt_data_f32(s->bias) : NULL, M);
}

static tt_tensor *int4_forward(void *state, tt_tensor *x) {
    const int4_linear *s = state;
    return tt__qformat_apply("int4", x, s->qw.K, s->qw.N, int4_forward_kernel, s);  // (..., N)
}

static int64_t int4_bytes(const void *state) {
    const int4_linear *s = state;
    return tt_k_q4weight_bytes(&s->qw) + (s->bias ? 4 * s->qw.N : 0);
}

static void int4_free(void *state) {
    int4_linear *s = state;
    tt_k_q4weight_free(&s->qw);
    tt_release(s->bias);
    tt_free(s);
}

const tt__qformat tt__qformat_int4 = {TT_QUANT_INT4, NULL, int4_pack, int4_forward, int4_bytes,
                                      int4_free};
