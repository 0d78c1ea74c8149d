// Gradcheck cases of the fused attention op (autograd/ops_attention.c): causal and full,
// grouped-query, the transposed views nn/transformer.c passes (and a non-unit-stride head dim),
// one query, and a sequence crossing the kernel's 32-row tiles. causal and scale travel in ctx.
#include "gc_util.h"

typedef struct attn_ctx {
    bool causal;
    double scale;
} attn_ctx;

static tt_tensor *f_attention(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const attn_ctx *c = ctx;
    return tt_scaled_dot_product_attention(in[0], in[1], in[2], c->causal, c->scale);
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

const gc_case gc_cases_attention[] = {
    {TT_OP_ATTENTION, "causal", attention_causal},
    {TT_OP_ATTENTION, "noncausal", attention_noncausal},
    {TT_OP_ATTENTION, "gqa", attention_gqa},
    {TT_OP_ATTENTION, "transposed_inputs", attention_transposed_inputs},
    {TT_OP_ATTENTION, "t1", attention_t1},
    {TT_OP_ATTENTION, "long_t37", attention_long_t37},
    {0, NULL, NULL},
};
