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

static void bf16_forward_kernel(const void *state, float *y, const float *x, int64_t M) {
    const bf16_linear *s = state;
    tt_k_bf16w_linear(y, x, &s->w, s->bias ? tt_data_f32(s->bias) : NULL, M);
}

static tt_tensor *bf16_forward(void *state, tt_tensor *x) {
    const bf16_linear *s = state;
    return tt__qformat_apply("bf16", x, s->w.K, s->w.N, bf16_forward_kernel, s);  // (..., N)
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
