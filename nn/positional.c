// Positional encodings: a learned table (GPT-2's wpe), the fixed sinusoidal table (Vaswani et
// al. 2017) and rotary embeddings (RoPE, Su et al. 2021) in the "rotate half" layout. RoPE is a
// composition of differentiable ops, so its gradient is exact; there is no fused kernel here.
//
// Letters: B batch, T time, C channels, NH heads, HS head size, L max_len.
#include "nn_internal.h"

#include <math.h>
#include <string.h>

// ---- helpers ----

// Like TT_CHECK, but the message names the public function `func` the helper runs for.
#define POS_CHECK(cond, func, ...) TT_CHECK_IN(func, cond, __VA_ARGS__)

// The rows pos .. pos + T - 1 of a (L, C) table, checked against its length.
static tt_tensor *table_rows(tt_tensor *table, int64_t pos, int64_t T, const char *func) {
    int64_t max_len = table->shape[0];
    POS_CHECK(pos >= 0, func, "position offset %lld is negative", (long long)pos);
    POS_CHECK(pos + T <= max_len, func, "pos + T = %lld + %lld = %lld exceeds max_len = %lld; "
              "build the module with a larger max_len or feed a shorter sequence",
              (long long)pos, (long long)T, (long long)(pos + T), (long long)max_len);
    return tt_slice(table, 0, pos, pos + T, 1);  // (T, C)
}

static void check_seq_input(const tt_tensor *x, int64_t dim, const char *func) {
    POS_CHECK(x, func, "x is NULL");
    POS_CHECK(x->ndim >= 2 && x->shape[x->ndim - 1] == dim, func,
              "input %s must be (..., T, %lld)", tt__shape(x), (long long)dim);
}

static void check_table_dtype(const tt_tensor *x, const tt_tensor *table, const char *func) {
    POS_CHECK(x->dtype == table->dtype, func, "x is %s but the table is %s; build the module "
              "under tt_set_default_dtype(%s) or convert x with tt_to_dtype",
              tt_dtype_name(x->dtype), tt_dtype_name(table->dtype), tt_dtype_name(x->dtype));
}

// ---- learned positional embedding ----

void tt_nn_pos_embedding_init(tt_nn_pos_embedding *m, int64_t max_len, int64_t dim, double std,
                              tt_rng *rng) {
    TT_CHECK(max_len > 0 && dim > 0, "sizes must be positive, got max_len=%lld dim=%lld",
             (long long)max_len, (long long)dim);
    TT_CHECK(std >= 0, "std must be >= 0, got %g (GPT-2 uses 0.02, nn.Embedding 1)", std);
    memset(m, 0, sizeof *m);
    m->max_len = max_len;
    m->dim = dim;
    m->weight = tt__param_new(2, (int64_t[]){max_len, dim});  // (L, C)
    tt_normal_(m->weight, rng, 0.0, std);
}

// x (..., T, C) + weight[pos : pos + T] (T, C), broadcast over the leading dims.
tt_tensor *tt_nn_pos_embedding_forward(tt_nn_pos_embedding *m, tt_tensor *x, int64_t pos) {
    check_seq_input(x, m->dim, __func__);
    tt_scope_begin();
    tt_tensor *y = tt_add(x, table_rows(m->weight, pos, x->shape[x->ndim - 2], __func__));
    tt_keep(y);
    tt_scope_end();
    return y;
}

void tt_nn_pos_embedding_params(const tt_nn_pos_embedding *m, tt_params *out, const char *prefix) {
    tt_params_add(out, prefix, "weight", m->weight);
}

void tt_nn_pos_embedding_free(tt_nn_pos_embedding *m) {
    tt_release(m->weight);
    memset(m, 0, sizeof *m);
}

// ---- sinusoidal ----
// PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(p / 10000^(2i/C)) (Vaswani et al. 3.5).

void tt_nn_sinusoidal_init(tt_nn_sinusoidal *m, int64_t max_len, int64_t dim) {
    TT_CHECK(max_len > 0 && dim > 0, "sizes must be positive, got max_len=%lld dim=%lld",
             (long long)max_len, (long long)dim);
    memset(m, 0, sizeof *m);
    m->max_len = max_len;
    m->dim = dim;
    m->table = tt__buffer_new(2, (int64_t[]){max_len, dim});  // (L, C), contiguous
    void *base = tt_data(m->table);
    for (int64_t p = 0; p < max_len; p++) {
        for (int64_t c = 0; c < dim; c++) {
            double angle = (double)p / pow(10000.0, (double)(c - c % 2) / (double)dim);
            tt__store(base, m->table->dtype, p * dim + c, c % 2 == 0 ? sin(angle) : cos(angle));
        }
    }
}

tt_tensor *tt_nn_sinusoidal_forward(tt_nn_sinusoidal *m, tt_tensor *x, int64_t pos) {
    check_seq_input(x, m->dim, __func__);
    check_table_dtype(x, m->table, __func__);
    tt_scope_begin();
    tt_tensor *y = tt_add(x, table_rows(m->table, pos, x->shape[x->ndim - 2], __func__));
    tt_keep(y);
    tt_scope_end();
    return y;
}

void tt_nn_sinusoidal_free(tt_nn_sinusoidal *m) {
    tt_release(m->table);
    memset(m, 0, sizeof *m);
}

// ---- rotary (RoPE) ----
// Pairs (i, i + HS/2), i < HS/2, rotate by p theta_i with theta_i = base^(-2i/HS):
//   out = x * cos + rotate_half(x) * sin,  rotate_half(x) = cat(-x[HS/2:], x[:HS/2]),
// where the tables repeat each angle in both halves: cos[p, i] = cos[p, i + HS/2].

void tt_nn_rope_init(tt_nn_rope *m, int64_t head_dim, int64_t max_len, double base) {
    TT_CHECK(head_dim > 0 && head_dim % 2 == 0, "RoPE rotates pairs, so head_dim must be even "
             "and positive, got %lld (for attention: n_embd / n_head)", (long long)head_dim);
    TT_CHECK(max_len > 0, "max_len must be positive, got %lld", (long long)max_len);
    TT_CHECK(base > 0, "base must be positive, got %g (10000 is the usual value)", base);
    memset(m, 0, sizeof *m);
    m->head_dim = head_dim;
    m->max_len = max_len;
    m->base = base;
    int64_t half = head_dim / 2;
    m->cos = tt__buffer_new(2, (int64_t[]){max_len, head_dim});  // (L, HS)
    m->sin = tt__buffer_new(2, (int64_t[]){max_len, head_dim});  // (L, HS)
    void *cb = tt_data(m->cos), *sb = tt_data(m->sin);
    tt_dtype dt = m->cos->dtype;
    for (int64_t i = 0; i < half; i++) {
        double theta = pow(base, -2.0 * (double)i / (double)head_dim);
        for (int64_t p = 0; p < max_len; p++) {
            double a = (double)p * theta, c = cos(a), s = sin(a);
            tt__store(cb, dt, p * head_dim + i, c);
            tt__store(cb, dt, p * head_dim + i + half, c);
            tt__store(sb, dt, p * head_dim + i, s);
            tt__store(sb, dt, p * head_dim + i + half, s);
        }
    }
}

// x (..., T, HS) at positions pos .. pos + T - 1 -> same shape.
tt_tensor *tt_nn_rope_forward(tt_nn_rope *m, tt_tensor *x, int64_t pos) {
    check_seq_input(x, m->head_dim, __func__);
    check_table_dtype(x, m->cos, __func__);
    int64_t T = x->shape[x->ndim - 2], half = m->head_dim / 2;
    tt_scope_begin();
    tt_tensor *c = table_rows(m->cos, pos, T, __func__);  // (T, HS)
    tt_tensor *s = table_rows(m->sin, pos, T, __func__);  // (T, HS)
    tt_tensor *x1 = tt_slice(x, -1, 0, half, 1);                // (..., T, HS/2)
    tt_tensor *x2 = tt_slice(x, -1, half, m->head_dim, 1);      // (..., T, HS/2)
    tt_tensor *rot = tt_cat(2, (tt_tensor *[]){tt_neg(x2), x1}, -1);  // (..., T, HS)
    tt_tensor *y = tt_add(tt_mul(x, c), tt_mul(rot, s));
    tt_keep(y);
    tt_scope_end();
    return y;
}

void tt_nn_rope_free(tt_nn_rope *m) {
    tt_release(m->cos);
    tt_release(m->sin);
    memset(m, 0, sizeof *m);
}

// ---- tt_module wrappers (positions from 0) ----

static tt_tensor *pos_embedding_fwd(void *self, tt_tensor *x) {
    return tt_nn_pos_embedding_forward(self, x, 0);
}
static void pos_embedding_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_pos_embedding_params(self, out, prefix);
}
static void pos_embedding_free(void *self) { tt_nn_pos_embedding_free(self); }
static const tt_module_ops pos_embedding_ops = {.type = "PositionalEmbedding",
                                                .forward = pos_embedding_fwd,
                                                .params = pos_embedding_params,
                                                .free = pos_embedding_free};
tt_module tt_nn_pos_embedding_module(tt_nn_pos_embedding *m) {
    return (tt_module){m, &pos_embedding_ops};
}

static tt_tensor *sinusoidal_fwd(void *self, tt_tensor *x) {
    return tt_nn_sinusoidal_forward(self, x, 0);
}
static void sinusoidal_free(void *self) { tt_nn_sinusoidal_free(self); }
static const tt_module_ops sinusoidal_ops = {.type = "Sinusoidal", .forward = sinusoidal_fwd,
                                             .free = sinusoidal_free};
tt_module tt_nn_sinusoidal_module(tt_nn_sinusoidal *m) { return (tt_module){m, &sinusoidal_ops}; }

static tt_tensor *rope_fwd(void *self, tt_tensor *x) { return tt_nn_rope_forward(self, x, 0); }
static void rope_free(void *self) { tt_nn_rope_free(self); }
static const tt_module_ops rope_ops = {.type = "RoPE", .forward = rope_fwd, .free = rope_free};
tt_module tt_nn_rope_module(tt_nn_rope *m) { return (tt_module){m, &rope_ops}; }
