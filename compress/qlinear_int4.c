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

static tt_tensor *int4_forward(void *state, tt_tensor *x) {
    int4_linear *s = state;
    int64_t K = s->qw.K, N = s->qw.N;
    TT_CHECK(x, "input is NULL");
    TT_CHECK(!(x->requires_grad && tt_is_grad_enabled()), "the int4 Linear (in=%lld, out=%lld) "
             "is inference only and has no gradient, but input %s requires grad with grad mode "
             "on; run it inside tt_no_grad_begin()/tt_no_grad_end(), or train with the f32 "
             "Linear (tt_nn_linear_dequantize)", (long long)K, (long long)N, tt__shape(x));
    TT_CHECK(x->dtype == TT_F32, "input %s must be f32, got %s; convert it with "
             "tt_to_dtype(x, TT_F32)", tt__shape(x), tt_dtype_name(x->dtype));
    TT_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] == K, "input %s must end in in_features="
             "%lld", tt__shape(x), (long long)K);
    int64_t M = tt_numel(x) / K, shape[TT_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    shape[x->ndim - 1] = N;
    tt_tensor *y = tt__new(TT_F32, x->ndim, shape);  // (..., N)
    if (M > 0) {
        tt_tensor *xc = tt__contiguous_ref(x);  // (M, K)
        tt_k_q4gemm_f32(tt_data_f32(y), tt_data_f32(xc), &s->qw,
                        s->bias ? tt_data_f32(s->bias) : NULL, M);
        tt_release(xc);
    }
    return tt__autorelease(y);
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
