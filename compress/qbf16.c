// The bf16 weight format (TT_QUANT_BF16, compress.h): a Linear's weight rounded once to bf16 and
// packed (tensor/kernels/bf16_linear.h), f32 inputs and sums, the f32 bias. Inference only.
#include "compress_internal.h"

#include "../tensor/kernels/bf16_linear.h"

#include <string.h>

typedef struct bf16_linear {
    tt_k_bf16w w;
    tt_tensor *bias;  // (out,) f32 or NULL
} bf16_linear;

static void *bf16_pack(const tt_tensor *weight, const tt_tensor *bias) {
    TT_CHECK(weight && weight->ndim == 2 && tt_dtype_is_float(weight->dtype),
             "weight must be a float matrix (out, in), got %s",
             weight ? tt__shape(weight) : "NULL");
    int64_t N = weight->shape[0], K = weight->shape[1];
    TT_CHECK(N >= 1 && K >= 1, "weight %s must have out >= 1 and in >= 1", tt__shape(weight));
    TT_CHECK(!bias || (bias->ndim == 1 && bias->shape[0] == N && tt_dtype_is_float(bias->dtype)),
             "bias %s must be a float vector (%lld,) matching weight %s, or NULL",
             bias ? tt__shape(bias) : "", (long long)N, tt__shape(weight));
    bf16_linear *s = TT_MALLOC(sizeof *s);
    tt_tensor *w = tt__compress_f32(weight);  // (N, K)
    tt_k_bf16w_init(&s->w, tt_data_f32(w), N, K);
    tt_release(w);
    s->bias = bias ? tt__compress_f32(bias) : NULL;  // (N)
    return s;
}

static tt_tensor *bf16_forward(void *state, tt_tensor *x) {
    bf16_linear *s = state;
    int64_t K = s->w.K, N = s->w.N;
    const char *F = "tt_nn_linear_forward";  // the caller users see
    TT_CHECK_IN(F, x, "input is NULL");
    TT_CHECK_IN(F, !(x->requires_grad && tt_is_grad_enabled()), "the bf16 Linear (in=%lld, "
                "out=%lld) is inference only and has no gradient, but input %s requires grad "
                "with grad mode on; run it inside tt_no_grad_begin()/tt_no_grad_end() (or "
                "tt_set_grad_enabled(false)), or train with the f32 Linear "
                "(tt_nn_linear_dequantize)", (long long)K, (long long)N, tt__shape(x));
    TT_CHECK_IN(F, x->dtype == TT_F32, "input %s must be f32, got %s; convert it with "
                "tt_to_dtype(x, TT_F32)", tt__shape(x), tt_dtype_name(x->dtype));
    TT_CHECK_IN(F, x->ndim >= 1 && x->shape[x->ndim - 1] == K,
                "input %s must end in in_features=%lld", tt__shape(x), (long long)K);
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    shape[x->ndim - 1] = N;
    tt_tensor *y = tt__new(TT_F32, x->ndim, shape);  // (..., N)
    int64_t M = tt_numel(x) / K;
    if (M > 0) {
        tt_tensor *xc = tt__contiguous_ref(x);  // (M, K)
        tt_k_bf16w_linear(tt_data_f32(y), tt_data_f32(xc), &s->w,
                          s->bias ? tt_data_f32(s->bias) : NULL, M);
        tt_release(xc);
    }
    return tt__autorelease(y);
}

static int64_t bf16_bytes(const void *state) {
    const bf16_linear *s = state;
    return tt_k_bf16w_bytes(&s->w) + (s->bias ? 4 * s->w.N : 0);
}

static void bf16_free(void *state) {
    bf16_linear *s = state;
    tt_k_bf16w_free(&s->w);
    tt_release(s->bias);
    tt_free(s);
}

const tt__qformat tt__qformat_bf16 = {TT_QUANT_BF16, NULL, bf16_pack, bf16_forward, bf16_bytes,
                                      bf16_free};
