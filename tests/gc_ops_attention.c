// Gradcheck cases of the fused attention op (autograd/ops_attention.c): causal and full,
// grouped-query, the transposed views nn/transformer.c passes (and a non-unit-stride head dim),
// one query, and a sequence crossing the kernel's 32-row tiles; then masks: bool, additive with
// its own gradient, broadcast (1, 1, T, S), (B, 1, 1, S) and (T, S), a fully masked row, mask
// and causal together, T != S, grouped-query, a transposed mask. causal and scale travel in
// ctx; the mask is input 3 when there is one.
#include "gc_util.h"

typedef struct attn_ctx {
    bool causal;
    double scale;
} attn_ctx;

static tt_tensor *f_attention(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const attn_ctx *c = ctx;
    return tt_scaled_dot_product_attention(in[0], in[1], in[2], n > 3 ? in[3] : NULL,
                                           c->causal, c->scale);
}

// q (B, NH, T, HS), k and v (B, NKV, S, HS), contiguous, uniform in [-1, 1).
static void check_contiguous(gc_report *r, int64_t B, int64_t NH, int64_t NKV, int64_t T,
                             int64_t S, int64_t HS, bool causal) {
    tt_tensor *in[3] = {gc_input(TT_SHAPE(B, NH, T, HS), -1, 1),
                        gc_input(TT_SHAPE(B, NKV, S, HS), -1, 1),
                        gc_input(TT_SHAPE(B, NKV, S, HS), -1, 1)};
    gc_check(r, f_attention, &(attn_ctx){causal, 1 / sqrt((double)HS)}, 3, in, NULL);
}

static void attention_causal(gc_report *r) { check_contiguous(r, 2, 2, 2, 5, 5, 3, true); }

static void attention_noncausal(gc_report *r) { check_contiguous(r, 2, 2, 2, 3, 4, 3, false); }

static void attention_gqa(gc_report *r) {
    check_contiguous(r, 1, 4, 2, 4, 4, 2, true);
    check_contiguous(r, 1, 4, 2, 3, 5, 2, false);
}

// The transposes of (B, T, H, HS) projections, and views whose head dim has stride T.
static void attention_transposed_inputs(gc_report *r) {
    tt_tensor *in[3] = {gc_input_transposed(TT_SHAPE(1, 4, 2, 3), 1, 2, -1, 1),
                        gc_input_transposed(TT_SHAPE(1, 4, 1, 3), 1, 2, -1, 1),
                        gc_input_transposed(TT_SHAPE(1, 4, 1, 3), 1, 2, -1, 1)};
    gc_check(r, f_attention, &(attn_ctx){true, 0.6}, 3, in, NULL);
    tt_tensor *st[3] = {gc_input_transposed(TT_SHAPE(1, 2, 3, 4), 2, 3, -1, 1),
                        gc_input_transposed(TT_SHAPE(1, 2, 3, 4), 2, 3, -1, 1),
                        gc_input_transposed(TT_SHAPE(1, 2, 3, 4), 2, 3, -1, 1)};
    gc_check(r, f_attention, &(attn_ctx){true, 0.6}, 3, st, NULL);
}

static void attention_t1(gc_report *r) {
    check_contiguous(r, 2, 2, 1, 1, 1, 3, true);
    check_contiguous(r, 1, 2, 2, 1, 3, 3, false);
}

// 37 queries and keys: a full 32-row tile and a partial one, in both directions.
static void attention_long_t37(gc_report *r) { check_contiguous(r, 1, 2, 1, 37, 37, 2, true); }

// ---- masks ----

// A bool mask of the given shape (no grad): element e (row-major) is true unless e % 3 == 1;
// with all_false_row >= 0, the row (second-to-last index) all_false_row of the first matrix
// is all false.
static tt_tensor *bool_mask(int ndim, const int64_t *shape, int64_t all_false_row) {
    tt_tensor *m = tt_zeros(TT_BOOL, ndim, shape);
    int64_t n = tt_numel(m), S = shape[ndim - 1];
    for (int64_t e = 0; e < n; e++)
        tt_set_at(m, e, e % 3 != 1 && !(e < S * shape[ndim - 2] && e / S == all_false_row));
    return m;
}

// q (B, NH, T, HS), k and v (B, NKV, S, HS) contiguous in [-1, 1), with the given mask.
static void check_masked(gc_report *r, int64_t B, int64_t NH, int64_t NKV, int64_t T,
                         int64_t S, int64_t HS, bool causal, tt_tensor *mask) {
    tt_tensor *in[4] = {gc_input(TT_SHAPE(B, NH, T, HS), -1, 1),
                        gc_input(TT_SHAPE(B, NKV, S, HS), -1, 1),
                        gc_input(TT_SHAPE(B, NKV, S, HS), -1, 1), mask};
    gc_check(r, f_attention, &(attn_ctx){causal, 1 / sqrt((double)HS)}, 4, in, NULL);
}

static void attention_mask_bool(gc_report *r) {
    check_masked(r, 2, 2, 2, 5, 6, 3, false, bool_mask(TT_SHAPE(2, 2, 5, 6), -1));
}

// An additive mask that requires grad: dL/dmask = dS.
static void attention_mask_float(gc_report *r) {
    check_masked(r, 2, 2, 2, 4, 5, 3, false, gc_input(TT_SHAPE(2, 2, 4, 5), -2, 2));
}

// Broadcast masks: their gradients sum dS over the broadcast dims.
static void attention_mask_broadcast(gc_report *r) {
    check_masked(r, 2, 2, 2, 4, 5, 3, false, gc_input(TT_SHAPE(1, 1, 4, 5), -2, 2));
    check_masked(r, 2, 2, 2, 4, 5, 3, false, gc_input(TT_SHAPE(2, 1, 1, 5), -2, 2));
    check_masked(r, 2, 3, 3, 4, 5, 2, false, gc_input(TT_SHAPE(4, 5), -2, 2));
    check_masked(r, 2, 2, 2, 4, 5, 3, false, bool_mask(TT_SHAPE(2, 1, 1, 5), -1));
}

// A query whose keys are all masked: y row 0, no gradient through it.
static void attention_mask_fully_masked_row(gc_report *r) {
    check_masked(r, 1, 2, 2, 4, 5, 3, false, bool_mask(TT_SHAPE(1, 2, 4, 5), 2));
    tt_tensor *neg = gc_input(TT_SHAPE(4, 5), -1, 1);
    tt_set_requires_grad(neg, false);
    for (int64_t j = 0; j < 5; j++) tt_set(neg, (int64_t[]){1, j}, -INFINITY);
    check_masked(r, 1, 2, 2, 4, 5, 3, false, neg);
}

static void attention_mask_causal(gc_report *r) {
    check_masked(r, 1, 2, 2, 5, 5, 3, true, gc_input(TT_SHAPE(1, 2, 5, 5), -2, 2));
    check_masked(r, 2, 2, 1, 5, 5, 3, true, bool_mask(TT_SHAPE(5, 5), -1));
}

// Cross-attention: 3 queries over 7 keys, a key-padding mask and an additive one.
static void attention_mask_cross(gc_report *r) {
    check_masked(r, 2, 2, 2, 3, 7, 3, false, bool_mask(TT_SHAPE(2, 1, 1, 7), -1));
    check_masked(r, 1, 2, 2, 3, 7, 3, false, gc_input(TT_SHAPE(3, 7), -2, 2));
}

static void attention_mask_gqa(gc_report *r) {
    check_masked(r, 1, 4, 2, 4, 5, 2, false, gc_input(TT_SHAPE(1, 4, 4, 5), -2, 2));
    check_masked(r, 1, 4, 1, 4, 4, 2, true, bool_mask(TT_SHAPE(1, 4, 4, 4), -1));
}

// A transposed (non-contiguous) mask, and 37 queries and keys (two tiles each way) with causal.
static void attention_mask_strided_long(gc_report *r) {
    check_masked(r, 1, 2, 2, 4, 5, 3, false,
                 gc_input_transposed(TT_SHAPE(1, 2, 5, 4), 2, 3, -2, 2));
    check_masked(r, 1, 1, 1, 37, 37, 2, true, gc_input(TT_SHAPE(37, 37), -2, 2));
}

const gc_case gc_cases_attention[] = {
    {TT_OP_ATTENTION, "causal", attention_causal},
    {TT_OP_ATTENTION, "noncausal", attention_noncausal},
    {TT_OP_ATTENTION, "gqa", attention_gqa},
    {TT_OP_ATTENTION, "transposed_inputs", attention_transposed_inputs},
    {TT_OP_ATTENTION, "t1", attention_t1},
    {TT_OP_ATTENTION, "long_t37", attention_long_t37},
    {TT_OP_ATTENTION, "mask_bool", attention_mask_bool},
    {TT_OP_ATTENTION, "mask_float", attention_mask_float},
    {TT_OP_ATTENTION, "mask_broadcast", attention_mask_broadcast},
    {TT_OP_ATTENTION, "mask_fully_masked_row", attention_mask_fully_masked_row},
    {TT_OP_ATTENTION, "mask_causal", attention_mask_causal},
    {TT_OP_ATTENTION, "mask_cross", attention_mask_cross},
    {TT_OP_ATTENTION, "mask_gqa", attention_mask_gqa},
    {TT_OP_ATTENTION, "mask_strided_long", attention_mask_strided_long},
    {0, NULL, NULL},
};
