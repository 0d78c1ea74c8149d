// tt_scaled_dot_product_attention: fused attention (causal or full, an optional bool or additive
// mask, grouped-query), forward and backward side by side, and a differentiable backward for
// create_graph (the attention recomposed with ops). The tiled arithmetic is in
// tensor/kernels/attention.c; this file checks shapes, picks layouts, records the node. Not
// here: dropout on the weights.
//
// Letters: B batch, NH query heads, NKV key/value heads, T queries, S keys, HS head size.
// Layouts: q, k and v are read in place through their strides when their head dim is
// unit-stride (the transposed (B, T, NH, HS) projections nn/transformer.c passes are); other
// layouts get one contiguous copy. The output is a (B, NH, T, HS) view of (B, T, NH, HS)
// memory, so transposing it back to (B, T, NH * HS) is free. The mask is read in place through
// its broadcast strides (0 on broadcast dims); only its gradient, when it needs one, is formed
// at (B, NH, T, S) and then summed down to the mask's shape.
#include "autograd_internal.h"
#include "ops_nn_ctx.h"

#include <math.h>

#include "../tensor/kernels/attention.h"

typedef struct attention_ctx {
    tt_kattn_dims dims;
} attention_ctx;

// ---- helpers ----

// t when its head dim (the last) is unit-stride, else a contiguous copy. Unscoped: release it.
static tt_tensor *unit_rows(tt_tensor *t) {
    return t->shape[3] <= 1 || t->stride[3] == 1 ? tt_retain(t) : tt__contiguous_copy(t);
}

// The kernel's view of a (B, heads, rows, HS) tensor with a unit-stride head dim.
static tt_kattn_strides strides_of(const tt_tensor *t) {
    return (tt_kattn_strides){t->stride[0], t->stride[1], t->stride[2]};
}

// The kernel's view of a mask broadcastable to (B, NH, T, S) (checked by check_mask).
static tt_kattn_mask mask_of(tt_tensor *mask, const tt_kattn_dims *d) {
    int64_t st[4];
    tt__broadcast_strides(mask, 4, (int64_t[]){d->B, d->NH, d->T, d->S}, st);
    return (tt_kattn_mask){tt_data(mask), mask->dtype == TT_BOOL, st[0], st[1], st[2], st[3]};
}

// tt__grad_buffer without its zeroing: a gradient buffer shaped like x, or NULL when x needs
// none. Unscoped.
static tt_tensor *grad_uninit(const tt_tensor *x) {
    return x && x->requires_grad ? tt__new(x->dtype, x->ndim, x->shape) : NULL;
}

// TT_CHECK on behalf of the public function (the helpers below run inside it).
#define SDPA_CHECK(...) TT_CHECK_IN("tt_scaled_dot_product_attention", __VA_ARGS__)

static void check_operand(const tt_tensor *t, const char *what) {
    SDPA_CHECK(t, "%s is NULL", what);
    tt__check_float(t, "tt_scaled_dot_product_attention");
    SDPA_CHECK(t->ndim == 4, "%s %s must be 4-d: q (B, NH, T, HS), k and v (B, NKV, S, HS); "
               "split the heads with tt_reshape + tt_transpose first", what, tt__shape(t));
}

// A mask must be bool or q's dtype and broadcast to the scores (B, NH, T, S) without growing.
static void check_mask(const tt_tensor *mask, const tt_tensor *q, const tt_kattn_dims *d) {
    SDPA_CHECK(mask->dtype == TT_BOOL || mask->dtype == q->dtype, "mask is %s but q is %s; "
               "pass a bool mask (true = the key takes part) or an additive mask of q's dtype "
               "(tt_to_dtype)", tt_dtype_name(mask->dtype), tt_dtype_name(q->dtype));
    int64_t want[4] = {d->B, d->NH, d->T, d->S};
    bool ok = mask->ndim <= 4;
    for (int i = 0; ok && i < mask->ndim; i++) {
        int64_t m = mask->shape[mask->ndim - 1 - i], w = want[3 - i];
        ok = m == w || m == 1;
    }
    SDPA_CHECK(ok, "mask %s does not broadcast to the scores (B, NH, T, S) = %s; each of its "
               "dims (aligned to the right) must equal the scores' or be 1, e.g. (T, S), "
               "(B, 1, 1, S) or (B, NH, T, S)", tt__shape(mask), tt__shape_of(4, want));
}

// ---- attention ----
// y = softmax(q k^T scale [+ mask] [+ causal mask]) v (Vaswani et al. 2017, eq. 1), computed
// with an online softmax over key tiles (FlashAttention, Dao et al. 2022). The node saves an
// alias of y and lse = log sum_j exp(q_i . k_j scale) (B, NH, T): O(B NH T) memory, never the
// (T, S) weights, which the backward recomputes tile by tile. The mask is the node's input 3
// (NULL when none): the backward reads it again, so writing into it in between is caught.
// Under bf16 autocast (f32 operands) every block product, forward and backward, takes bf16
// inputs and accumulates in f32 (tensor/kernels/attention.h, "bf16 products").

tt_tensor *tt_scaled_dot_product_attention(tt_tensor *q, tt_tensor *k, tt_tensor *v,
                                           tt_tensor *mask, bool causal, double scale) {
    check_operand(q, "q");
    check_operand(k, "k");
    check_operand(v, "v");
    tt__check_same_dtype(q, k, __func__);
    tt__check_same_dtype(q, v, __func__);
    int64_t B = q->shape[0], NH = q->shape[1], T = q->shape[2], HS = q->shape[3];
    int64_t NKV = k->shape[1], S = k->shape[2];
    TT_CHECK(tt_same_shape(k, v), "k %s and v %s must have the same shape (B, NKV, S, HS)",
             tt__shape(k), tt__shape(v));
    TT_CHECK(k->shape[0] == B && k->shape[3] == HS, "q %s and k %s disagree: both need the "
             "same batch B (dim 0) and head size HS (dim 3)", tt__shape(q), tt__shape(k));
    TT_CHECK(NKV >= 1 && NH % NKV == 0, "q has NH=%lld heads and k, v have NKV=%lld; NH must "
             "be a multiple of NKV (query head h uses kv head h / (NH / NKV)) (q %s, k %s)",
             (long long)NH, (long long)NKV, tt__shape(q), tt__shape(k));
    TT_CHECK(!causal || T == S, "causal attention needs as many queries as keys, got T=%lld "
             "(q %s) and S=%lld (k %s); for queries at the end of a longer context (a KV cache) "
             "pass causal=false and a bool (T, S) mask, true where key j <= the query's "
             "position", (long long)T, tt__shape(q), (long long)S, tt__shape(k));
    TT_CHECK(S >= 1 || T == 0 || B * NH == 0, "k %s has no keys (S=0): the %lld queries have "
             "nothing to attend to", tt__shape(k), (long long)T);
    TT_CHECK(isfinite(scale), "scale must be finite, got %g (1 / sqrt(HS) is the usual one)",
             scale);

    // under bf16 autocast the block products take bf16 inputs (the kernel's dims.bf16); the
    // node keeps the dims, so its backward does the same
    bool bf16 = q->dtype == TT_F32 && tt_autocast_enabled();
    tt_kattn_dims dims = {B, NH, NKV, T, S, HS, causal, scale, bf16};
    if (mask) check_mask(mask, q, &dims);
    tt_kattn_mask mk = mask ? mask_of(mask, &dims) : (tt_kattn_mask){0};
    const tt_kattn_mask *pmk = mask ? &mk : NULL;
    tt_tensor *qc = unit_rows(q), *kc = unit_rows(k), *vc = unit_rows(v);
    tt_tensor *mem = tt__new(q->dtype, 4, (int64_t[]){B, T, NH, HS});  // (B, T, NH, HS)
    tt_tensor *out = tt__new_view(mem, 4, (int64_t[]){B, NH, T, HS},
                                  (int64_t[]){T * NH * HS, HS, NH * HS, 1}, 0);  // (B,NH,T,HS)
    tt_release(mem);
    tt_tensor *lse = tt__new(q->dtype, 3, (int64_t[]){B, NH, T});  // (B, NH, T)
    if (q->dtype == TT_F32)
        tt_kattention_forward_f32(tt_data(out), strides_of(out), tt_data(lse), tt_data(qc),
                                  strides_of(qc), tt_data(kc), strides_of(kc), tt_data(vc),
                                  strides_of(vc), pmk, &dims);
    else
        tt_kattention_forward_f64(tt_data(out), strides_of(out), tt_data(lse), tt_data(qc),
                                  strides_of(qc), tt_data(kc), strides_of(kc), tt_data(vc),
                                  strides_of(vc), pmk, &dims);
    tt_release(qc);
    tt_release(kc);
    tt_release(vc);
    attention_ctx *c = tt__record(out, TT_OP_ATTENTION, 4, (tt_tensor *[]){q, k, v, mask},
                                  sizeof *c);
    if (c) {
        c->dims = dims;
        tt_tensor *y = tt__alias(out);
        tt__save(out->node, 0, y);
        tt_release(y);
        tt__save(out->node, 1, lse);
    }
    tt_release(lse);
    return tt__autorelease(out);
}

// dq, dk, dv from the saved y and lse (the kernel recomputes P tile by tile); each is a fresh
// contiguous buffer handed to its input. A float mask that requires grad gets dS, formed at
// (B, NH, T, S) and summed over its broadcast dims by the gradient accumulation.
void tt__backward_attention(tt_node *n) {
    tt_tensor *q = n->inputs[0], *k = n->inputs[1], *v = n->inputs[2], *mask = n->inputs[3];
    const attention_ctx *c = n->ctx;
    const tt_kattn_dims *d = &c->dims;
    // the kernel zeroes dq, dk and dv itself, each thread its own rows
    tt_tensor *dq = grad_uninit(q), *dk = grad_uninit(k), *dv = grad_uninit(v);
    tt_tensor *dmask = mask && mask->requires_grad
                           ? tt__new_zeros(n->dtype, 4, (int64_t[]){d->B, d->NH, d->T, d->S})
                           : NULL;  // (B, NH, T, S)
    tt_kattn_mask mk = mask ? mask_of(mask, d) : (tt_kattn_mask){0};
    const tt_kattn_mask *pmk = mask ? &mk : NULL;
    if (dq || dk || dv || dmask) {
        tt_tensor *g = unit_rows(n->grad), *y = unit_rows(n->saved[0]);  // (B, NH, T, HS)
        tt_tensor *qc = unit_rows(q), *kc = unit_rows(k), *vc = unit_rows(v);
        void *pdq = tt__data_or_null(dq), *pdk = tt__data_or_null(dk);
        void *pdv = tt__data_or_null(dv), *pdm = tt__data_or_null(dmask);
        if (n->dtype == TT_F32)
            tt_kattention_backward_f32(pdq, pdk, pdv, pdm,
                                       tt_data(g), strides_of(g), tt_data(qc), strides_of(qc),
                                       tt_data(kc), strides_of(kc), tt_data(vc), strides_of(vc),
                                       tt_data(y), strides_of(y), tt_data(n->saved[1]), pmk,
                                       d);
        else
            tt_kattention_backward_f64(pdq, pdk, pdv, pdm,
                                       tt_data(g), strides_of(g), tt_data(qc), strides_of(qc),
                                       tt_data(kc), strides_of(kc), tt_data(vc), strides_of(vc),
                                       tt_data(y), strides_of(y), tt_data(n->saved[1]), pmk,
                                       d);
        tt_release(g);
        tt_release(y);
        tt_release(qc);
        tt_release(kc);
        tt_release(vc);
    }
    tt__accum_grad_owned(q, dq);  // skips an input that needs no gradient (its buffer is NULL)
    tt__accum_grad_owned(k, dk);
    tt__accum_grad_owned(v, dv);
    tt__accum_grad_owned(mask, dmask);  // sums over the mask's broadcast dims
}

// ---- differentiable backward (create_graph) ----
// The attention recomposed with ops (the (B, NH, T, S) weights formed), so that the gradients
// have a graph of their own. Listed in tt__grad2_nn (autograd/grad2_nn.c).

// k or v (B, NKV, S, HS) with each kv head repeated for its NH / NKV query heads:
// (B, NH, S, HS), query head h reading kv head h / (NH / NKV).
static tt_tensor *repeat_kv(tt_tensor *t, const tt_kattn_dims *d) {
    if (d->NH == d->NKV) return t;
    int64_t G = d->NH / d->NKV;
    tt_tensor *e = tt_expand(tt_unsqueeze(t, 2), 5, (int64_t[]){d->B, d->NKV, G, d->S, d->HS});
    return tt_reshape(e, 4, (int64_t[]){d->B, d->NH, d->S, d->HS});
}

// The reverse of repeat_kv for a gradient: (B, NH, S, HS) summed over the query heads of each
// kv head, (B, NKV, S, HS).
static tt_tensor *sum_kv(tt_tensor *t, const tt_kattn_dims *d) {
    if (d->NH == d->NKV) return t;
    int64_t G = d->NH / d->NKV;
    tt_tensor *r = tt_reshape(t, 5, (int64_t[]){d->B, d->NKV, G, d->S, d->HS});
    return tt_sum(r, 1, (int[]){2}, false);
}

// P = softmax(q kx^T scale + mask) (B, NH, T, S) with ops: a bool mask and the causal one
// (key j > query i) fill -inf, a float mask is added. A fully masked row gives P = 0.
static tt_tensor *attention_weights(const tt_node *n, tt_tensor *kx) {
    tt_tensor *q = n->inputs[0], *mask = n->inputs[3];
    const tt_kattn_dims *d = &((const attention_ctx *)n->ctx)->dims;
    tt_tensor *s = tt_mul_scalar(tt_matmul(q, tt_transpose(kx, 2, 3)), d->scale);
    if (mask && mask->dtype == TT_BOOL)
        s = tt_masked_fill(s, tt_logical_not(mask), -INFINITY);
    else if (mask)
        s = tt_add(s, mask);
    if (d->causal) {
        tt_tensor *above = tt_triu(tt_ones(TT_BOOL, 2, (int64_t[]){d->T, d->S}), 1);
        s = tt_masked_fill(s, above, -INFINITY);
    }
    return tt_softmax(s, -1);
}

// With P recomputed and kx, vx the repeated k, v: dv = P^T g, dP = g vx^T,
// dS = P (dP - sum_S(dP P)) (softmax's backward), dmask = dS (summed to the mask's shape),
// dq = dS kx scale, dk = dS^T q scale; dk and dv summed over each kv head's query heads.
void tt__attention2(tt_node *n) {
    tt_tensor *q = n->inputs[0], *k = n->inputs[1], *v = n->inputs[2], *g = n->grad;
    const tt_kattn_dims *d = &((const attention_ctx *)n->ctx)->dims;
    bool nq = tt__input_needs_grad(n, 0), nk = tt__input_needs_grad(n, 1);
    bool nv = tt__input_needs_grad(n, 2), nm = tt__input_needs_grad(n, 3);
    if (!nq && !nk && !nv && !nm) return;
    tt_tensor *kx = repeat_kv(k, d), *vx = repeat_kv(v, d);  // (B, NH, S, HS)
    tt_tensor *p = attention_weights(n, kx);                 // (B, NH, T, S)
    if (nv) tt__accum_grad(v, sum_kv(tt_matmul(tt_transpose(p, 2, 3), g), d));
    if (!nq && !nk && !nm) return;
    tt_tensor *dp = tt_matmul(g, tt_transpose(vx, 2, 3));  // (B, NH, T, S)
    tt_tensor *ds = tt_mul(p, tt_sub(dp, tt_sum(tt_mul(dp, p), 1, (int[]){3}, true)));
    if (nm) tt__accum_grad(n->inputs[3], ds);
    if (nq) tt__accum_grad(q, tt_mul_scalar(tt_matmul(ds, kx), d->scale));
    if (nk) {
        tt_tensor *dkx = tt_mul_scalar(tt_matmul(tt_transpose(ds, 2, 3), q), d->scale);
        tt__accum_grad(k, sum_kv(dkx, d));
    }
}
