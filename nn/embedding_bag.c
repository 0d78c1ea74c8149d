// torch.nn.EmbeddingBag / F.embedding_bag: sums, means or maxima of bags of embedding rows,
// without forming the (bag, entry, C) tensor. A composition of index_select, mul, index_add,
// div and max (the gradients come from those ops); the bags are read from the indices on the
// host. Not implemented: max_norm, scale_grad_by_freq, sparse gradients.
//
// Letters: V table rows, C embedding size, B bags, N entries of the input, K kept entries
// (those not equal to padding_idx).
#include "nn_internal.h"

#include <math.h>
#include <string.h>

static const char *const bag_mode_names[TT_BAG_MODE_COUNT] = {"sum", "mean", "max"};

// An index-like tensor (TT_I32 / TT_I64) or abort naming what it is.
static void check_ints(const tt_tensor *t, const char *what, const char *func) {
    TT_CHECK_IN(func, t->dtype == TT_I32 || t->dtype == TT_I64, "%s has dtype %s; pass a "
                "TT_I32 or TT_I64 tensor (tt_to_dtype(%s, TT_I64))", what,
                tt_dtype_name(t->dtype), what);
}

// The bags of input as [start[b], start[b + 1]) ranges of its N row-major entries: B + 1
// values (start[0] = 0, start[B] = the end of the last bag). Owned by the caller.
static int64_t *bag_starts(tt_tensor *input, tt_tensor *offsets, bool include_last_offset,
                           int64_t *nbags, const char *func) {
    int64_t n = tt_numel(input);
    if (input->ndim == 2) {
        TT_CHECK_IN(func, !offsets, "input %s is 2-D, so each row is a bag and offsets must be "
                    "NULL; pass a 1-D input with offsets for bags of different sizes",
                    tt__shape(input));
        int64_t B = input->shape[0], len = input->shape[1];
        int64_t *start = TT_CALLOC((size_t)B + 1, sizeof *start);
        for (int64_t b = 0; b <= B; b++) start[b] = b * len;
        *nbags = B;
        return start;
    }
    TT_CHECK_IN(func, offsets, "input %s is 1-D and offsets is NULL; pass offsets (the start "
                "of each bag) or a 2-D (B, N) input", tt__shape(input));
    check_ints(offsets, "offsets", func);
    TT_CHECK_IN(func, offsets->ndim == 1, "offsets %s must be 1-D", tt__shape(offsets));
    int64_t no = offsets->shape[0];
    int64_t B = include_last_offset ? no - 1 : no;
    TT_CHECK_IN(func, no >= 1, "offsets is empty; it needs at least one entry (0)");
    int64_t *start = TT_CALLOC((size_t)B + 2, sizeof *start);
    for (int64_t i = 0; i < no; i++) {
        int64_t o = (int64_t)tt_at(offsets, i);
        TT_CHECK_IN(func, i > 0 || o == 0, "offsets[0] is %lld; the first bag must start at 0",
                    (long long)o);
        TT_CHECK_IN(func, i == 0 || o >= start[i - 1], "offsets[%lld] = %lld is below "
                    "offsets[%lld] = %lld; offsets must not decrease", (long long)i,
                    (long long)o, (long long)(i - 1), (long long)start[i - 1]);
        TT_CHECK_IN(func, o <= n, "offsets[%lld] = %lld is beyond input's length %lld",
                    (long long)i, (long long)o, (long long)n);
        start[i] = o;
    }
    // Without include_last_offset the last bag runs to the end of input; with it, the last
    // offset ends the last bag (entries after it are in no bag, as PyTorch).
    if (!include_last_offset) start[B] = n;
    *nbags = B;
    return start;
}

tt_tensor *tt_embedding_bag(tt_tensor *weight, tt_tensor *input,
                            const tt_embedding_bag_opts *opts) {
    static const tt_embedding_bag_opts defaults = {0};
    const tt_embedding_bag_opts *o = opts ? opts : &defaults;
    TT_CHECK(weight && input, "weight and input must not be NULL");
    TT_CHECK(weight->ndim == 2 && (weight->dtype == TT_F32 || weight->dtype == TT_F64),
             "weight %s (%s) must be a 2-D (V, C) float table", tt__shape(weight),
             tt_dtype_name(weight->dtype));
    check_ints(input, "input", __func__);
    TT_CHECK(input->ndim == 1 || input->ndim == 2, "input %s has %d dims; pass a 2-D (B, N) "
             "input (a bag per row) or a 1-D input with offsets", tt__shape(input), input->ndim);
    TT_CHECK((unsigned)o->mode < TT_BAG_MODE_COUNT, "invalid mode %d; valid values are 0 .. %d "
             "(TT_BAG_SUM, TT_BAG_MEAN, TT_BAG_MAX)", (int)o->mode, TT_BAG_MODE_COUNT - 1);
    tt_tensor *psw = o->per_sample_weights;
    TT_CHECK(!psw || o->mode == TT_BAG_SUM, "per_sample_weights is only supported with "
             "TT_BAG_SUM, got mode %s (as PyTorch); multiply the rows yourself for a weighted "
             "mean", bag_mode_names[o->mode]);
    TT_CHECK(!psw || (psw->dtype == weight->dtype && tt_same_shape(psw, input)),
             "per_sample_weights %s (%s) must have input's shape %s and weight's dtype %s",
             tt__shape(psw), tt_dtype_name(psw->dtype), tt__shape(input),
             tt_dtype_name(weight->dtype));
    int64_t V = weight->shape[0], C = weight->shape[1];
    int64_t pad = o->padding_idx;
    if (o->use_padding_idx) {
        TT_CHECK(pad >= -V && pad < V, "padding_idx %lld is outside [-%lld, %lld) for weight "
                 "%s", (long long)pad, (long long)V, (long long)V, tt__shape(weight));
        if (pad < 0) pad += V;
    }

    int64_t B;
    int64_t *start = bag_starts(input, o->offsets, o->include_last_offset, &B, __func__);
    int64_t n = start[B];  // entries past the last bag are not read
    // The kept entries in order: idx[k] the table row, pos[k] the entry, bag[k] its bag.
    int64_t *idx = TT_CALLOC((size_t)n + 1, sizeof *idx);
    int64_t *pos = TT_CALLOC((size_t)n + 1, sizeof *pos);
    int64_t *bag = TT_CALLOC((size_t)n + 1, sizeof *bag);
    int64_t *first = TT_CALLOC((size_t)B + 1, sizeof *first);  // first kept entry of bag b
    int64_t K = 0;
    for (int64_t b = 0; b < B; b++) {
        first[b] = K;
        for (int64_t i = start[b]; i < start[b + 1]; i++) {
            int64_t v = (int64_t)tt_at(input, i);
            TT_CHECK(v >= 0 && v < V, "input value %lld at position %lld (row-major) of input "
                     "%s is out of range for weight %s; indices must be in [0, %lld)",
                     (long long)v, (long long)i, tt__shape(input), tt__shape(weight),
                     (long long)V);
            if (o->use_padding_idx && v == pad) continue;
            idx[K] = v, pos[K] = i, bag[K] = b;
            K++;
        }
    }
    first[B] = K;

    tt_scope_begin();
    tt_tensor *kidx = tt_from_data(TT_I64, 1, (int64_t[]){K}, idx);    // (K,)
    tt_tensor *rows = tt_index_select(weight, 0, kidx);                // (K, C)
    tt_tensor *out;
    if (o->mode == TT_BAG_MAX) {
        // Per bag: the columnwise maximum of its rows (the gradient goes to the first maximum,
        // as PyTorch's strict > comparison); an empty bag gives zeros.
        tt_tensor **each = TT_CALLOC((size_t)B + 1, sizeof *each);
        for (int64_t b = 0; b < B; b++) {
            int64_t len = first[b + 1] - first[b];
            if (len == 0) {
                each[b] = tt_zeros(weight->dtype, 1, (int64_t[]){C});  // (C,)
                continue;
            }
            tt_max_dim(tt_narrow(rows, 0, first[b], len), 0, false, &each[b], NULL);  // (C,)
        }
        out = B > 0 ? tt_stack((int)B, each, 0) : tt_zeros(weight->dtype, 2, (int64_t[]){0, C});
        tt_free(each);
    } else {
        if (psw) {
            tt_tensor *kpos = tt_from_data(TT_I64, 1, (int64_t[]){K}, pos);             // (K,)
            tt_tensor *w = tt_index_select(tt_reshape(psw, 1, (int64_t[]){-1}), 0, kpos);  // (K,)
            rows = tt_mul(rows, tt_unsqueeze(w, 1));                                    // (K, C)
        }
        tt_tensor *kbag = tt_from_data(TT_I64, 1, (int64_t[]){K}, bag);  // (K,)
        out = tt_index_add(tt_zeros(weight->dtype, 2, (int64_t[]){B, C}), 0, kbag, rows, 1.0);
        if (o->mode == TT_BAG_MEAN) {
            // Divided by the number of kept entries (1 for an empty bag, whose sum is 0).
            tt_tensor *count = tt_zeros(weight->dtype, 2, (int64_t[]){B, 1});  // (B, 1)
            for (int64_t b = 0; b < B; b++) {
                int64_t len = first[b + 1] - first[b];
                tt_set_at(count, b, (double)(len > 0 ? len : 1));
            }
            out = tt_div(out, count);  // (B, C)
        }
    }
    tt_keep(out);
    tt_scope_end();
    tt_free(first);
    tt_free(bag);
    tt_free(pos);
    tt_free(idx);
    tt_free(start);
    return out;
}

// ---- the module ----

void tt_nn_embedding_bag_init(tt_nn_embedding_bag *m, int64_t num, int64_t dim,
                              tt_bag_mode mode, tt_rng *rng) {
    TT_CHECK(num > 0 && dim > 0, "sizes must be positive, got num=%lld dim=%lld",
             (long long)num, (long long)dim);
    TT_CHECK((unsigned)mode < TT_BAG_MODE_COUNT, "invalid mode %d; valid values are 0 .. %d "
             "(TT_BAG_SUM, TT_BAG_MEAN, TT_BAG_MAX)", (int)mode, TT_BAG_MODE_COUNT - 1);
    memset(m, 0, sizeof *m);
    m->num = num;
    m->dim = dim;
    m->mode = mode;
    m->weight = tt__param_new(2, (int64_t[]){num, dim});
    tt_normal_(m->weight, rng, 0.0, 1.0);  // N(0, 1), as nn.EmbeddingBag
}

void tt_nn_embedding_bag_set_padding_idx(tt_nn_embedding_bag *m, int64_t padding_idx) {
    TT_CHECK(m->weight, "the layer is not initialized; call tt_nn_embedding_bag_init first");
    int64_t V = m->num;
    TT_CHECK(padding_idx >= -V && padding_idx < V, "padding_idx %lld is outside [-%lld, %lld)",
             (long long)padding_idx, (long long)V, (long long)V);
    if (padding_idx < 0) padding_idx += V;
    m->use_padding_idx = true;
    m->padding_idx = padding_idx;
    // nn.EmbeddingBag zeroes the padding row at construction.
    tt_scope_begin();
    tt_no_grad_begin();
    tt_zero_(tt_narrow(m->weight, 0, padding_idx, 1));  // (1, C)
    tt_no_grad_end();
    tt_scope_end();
}

tt_tensor *tt_nn_embedding_bag_forward(tt_nn_embedding_bag *m, tt_tensor *input,
                                       tt_tensor *offsets, tt_tensor *per_sample_weights) {
    tt_embedding_bag_opts o = {.mode = m->mode, .offsets = offsets,
                               .include_last_offset = m->include_last_offset,
                               .per_sample_weights = per_sample_weights,
                               .use_padding_idx = m->use_padding_idx,
                               .padding_idx = m->padding_idx};
    return tt_embedding_bag(m->weight, input, &o);
}

void tt_nn_embedding_bag_params(const tt_nn_embedding_bag *m, tt_params *out,
                                const char *prefix) {
    tt_params_add(out, prefix, "weight", m->weight);
}

void tt_nn_embedding_bag_free(tt_nn_embedding_bag *m) {
    tt_release(m->weight);
    memset(m, 0, sizeof *m);
}

static tt_tensor *bag_fwd(void *self, tt_tensor *x) {
    return tt_nn_embedding_bag_forward(self, x, NULL, NULL);
}
static void bag_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_embedding_bag_params(self, out, prefix);
}
static void bag_free(void *self) { tt_nn_embedding_bag_free(self); }
static const tt_module_ops bag_ops = {.type = "EmbeddingBag", .forward = bag_fwd,
                                      .params = bag_params, .free = bag_free};
tt_module tt_nn_embedding_bag_module(tt_nn_embedding_bag *m) {
    return (tt_module){m, &bag_ops};
}
