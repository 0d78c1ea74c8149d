// The basic modules: Linear, Embedding, LayerNorm, RMSNorm, the norm wrapper and Dropout,
// with their tt_module wrappers (activations: activation.c). Positional encodings are in positional.c,
// attention, MLP and the transformer block in transformer.c.
//
// A forward runs in a scope of its own and keeps only its result, so it frees its
// intermediates whether or not the caller is inside a scope.
#include "nn_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

// ---- Linear ----

void tt_nn_linear_init(tt_nn_linear *m, int64_t in_features, int64_t out_features, bool bias,
                       tt_rng *rng) {
    TT_CHECK(in_features > 0 && out_features > 0, "features must be positive, got in=%lld "
             "out=%lld", (long long)in_features, (long long)out_features);
    memset(m, 0, sizeof *m);
    m->in_features = in_features;
    m->out_features = out_features;
    // PyTorch's default: kaiming_uniform(a = sqrt 5) on W, i.e. U(-1/sqrt(in), 1/sqrt(in)),
    // and the same bound for b.
    double bound = 1.0 / sqrt((double)in_features);
    m->weight = tt__param_new(2, (int64_t[]){out_features, in_features});
    tt_uniform_(m->weight, rng, -bound, bound);
    if (bias) {
        m->bias = tt__param_new(1, (int64_t[]){out_features});
        tt_uniform_(m->bias, rng, -bound, bound);
    }
}

tt_tensor *tt_nn_linear_forward(tt_nn_linear *m, tt_tensor *x) {
    TT_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] == m->in_features,
             "input %s must end in in_features=%lld", tt__shape(x), (long long)m->in_features);
    if (m->swap.ops) return tt_module_forward(m->swap, x);  // a compressed Linear, (..., out)
    return tt_affine(x, m->weight, m->bias);  // (..., out)
}

void tt_nn_linear_params(const tt_nn_linear *m, tt_params *out, const char *prefix) {
    if (m->swap.ops) {  // the swapped-in module names what it holds
        tt_module_params(m->swap, out, prefix);
        return;
    }
    tt_params_add(out, prefix, "weight", m->weight);
    if (m->bias) tt_params_add(out, prefix, "bias", m->bias);
}

void tt_nn_linear_free(tt_nn_linear *m) {
    if (m->swap.ops) tt_module_free(m->swap);
    tt_release(m->weight);
    tt_release(m->bias);
    memset(m, 0, sizeof *m);
}

static tt_tensor *linear_fwd(void *self, tt_tensor *x) { return tt_nn_linear_forward(self, x); }
static void linear_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_linear_params(self, out, prefix);
}
static void linear_free(void *self) { tt_nn_linear_free(self); }
static const tt_module_ops linear_ops = {.type = "Linear", .forward = linear_fwd,
                                         .params = linear_params, .free = linear_free};
tt_module tt_nn_linear_module(tt_nn_linear *m) { return (tt_module){m, &linear_ops}; }

static const tt_module_ops linear_owned_ops = {.type = "Linear", .forward = linear_fwd,
    .params = linear_params, .free = linear_free, .owned = true};

tt_module tt_nn_linear_new(int64_t in_features, int64_t out_features, bool bias, tt_rng *rng) {
    tt_nn_linear *m = TT_MALLOC(sizeof *m);
    tt_nn_linear_init(m, in_features, out_features, bias, rng);
    return (tt_module){m, &linear_owned_ops};
}

bool tt__is_linear_ops(const tt_module_ops *ops) {
    return ops == &linear_ops || ops == &linear_owned_ops;
}

// ---- Embedding ----

void tt_nn_embedding_init(tt_nn_embedding *m, int64_t num, int64_t dim, tt_rng *rng) {
    TT_CHECK(num > 0 && dim > 0, "sizes must be positive, got num=%lld dim=%lld",
             (long long)num, (long long)dim);
    memset(m, 0, sizeof *m);
    m->num = num;
    m->dim = dim;
    m->weight = tt__param_new(2, (int64_t[]){num, dim});
    tt_normal_(m->weight, rng, 0.0, 1.0);
}

tt_tensor *tt_nn_embedding_forward(tt_nn_embedding *m, tt_tensor *indices) {
    return tt_embedding(m->weight, indices);
}

void tt_nn_embedding_params(const tt_nn_embedding *m, tt_params *out, const char *prefix) {
    tt_params_add(out, prefix, "weight", m->weight);
}

void tt_nn_embedding_free(tt_nn_embedding *m) {
    tt_release(m->weight);
    memset(m, 0, sizeof *m);
}

static tt_tensor *embedding_fwd(void *self, tt_tensor *x) {
    return tt_nn_embedding_forward(self, x);
}
static void embedding_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_embedding_params(self, out, prefix);
}
static void embedding_free(void *self) { tt_nn_embedding_free(self); }
static const tt_module_ops embedding_ops = {.type = "Embedding", .forward = embedding_fwd,
                                            .params = embedding_params, .free = embedding_free};
tt_module tt_nn_embedding_module(tt_nn_embedding *m) { return (tt_module){m, &embedding_ops}; }

tt_module tt_nn_embedding_new(int64_t num, int64_t dim, tt_rng *rng) {
    tt_nn_embedding *m = TT_MALLOC(sizeof *m);
    tt_nn_embedding_init(m, num, dim, rng);
    static const tt_module_ops owned = {.type = "Embedding", .forward = embedding_fwd,
        .params = embedding_params, .free = embedding_free, .owned = true};
    return (tt_module){m, &owned};
}

// ---- LayerNorm, RMSNorm ----

void tt_nn_layernorm_init(tt_nn_layernorm *m, int64_t dim, double eps, bool affine, bool bias) {
    TT_CHECK(dim > 0 && eps >= 0, "need dim > 0 and eps >= 0, got dim=%lld eps=%g",
             (long long)dim, eps);
    memset(m, 0, sizeof *m);
    m->dim = dim;
    m->eps = eps;
    if (affine) {
        m->weight = tt__param_new(1, (int64_t[]){dim});
        tt_fill_(m->weight, 1.0);
        if (bias) m->bias = tt__param_new(1, (int64_t[]){dim});
    }
}

tt_tensor *tt_nn_layernorm_forward(tt_nn_layernorm *m, tt_tensor *x) {
    TT_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] == m->dim, "input %s must end in dim=%lld",
             tt__shape(x), (long long)m->dim);
    return tt_layernorm(x, 1, m->weight, m->bias, m->eps);
}

void tt_nn_layernorm_params(const tt_nn_layernorm *m, tt_params *out, const char *prefix) {
    if (m->weight) tt_params_add(out, prefix, "weight", m->weight);
    if (m->bias) tt_params_add(out, prefix, "bias", m->bias);
}

void tt_nn_layernorm_free(tt_nn_layernorm *m) {
    tt_release(m->weight);
    tt_release(m->bias);
    memset(m, 0, sizeof *m);
}

static tt_tensor *layernorm_fwd(void *self, tt_tensor *x) {
    return tt_nn_layernorm_forward(self, x);
}
static void layernorm_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_layernorm_params(self, out, prefix);
}
static void layernorm_free(void *self) { tt_nn_layernorm_free(self); }
static const tt_module_ops layernorm_ops = {.type = "LayerNorm", .forward = layernorm_fwd,
                                            .params = layernorm_params, .free = layernorm_free};
tt_module tt_nn_layernorm_module(tt_nn_layernorm *m) { return (tt_module){m, &layernorm_ops}; }

tt_module tt_nn_layernorm_new(int64_t dim, double eps, bool affine, bool bias) {
    tt_nn_layernorm *m = TT_MALLOC(sizeof *m);
    tt_nn_layernorm_init(m, dim, eps, affine, bias);
    static const tt_module_ops owned = {.type = "LayerNorm", .forward = layernorm_fwd,
        .params = layernorm_params, .free = layernorm_free, .owned = true};
    return (tt_module){m, &owned};
}

void tt_nn_rmsnorm_init(tt_nn_rmsnorm *m, int64_t dim, double eps, bool weight) {
    TT_CHECK(dim > 0 && eps >= 0, "need dim > 0 and eps >= 0, got dim=%lld eps=%g",
             (long long)dim, eps);
    memset(m, 0, sizeof *m);
    m->dim = dim;
    m->eps = eps;
    if (weight) {
        m->weight = tt__param_new(1, (int64_t[]){dim});
        tt_fill_(m->weight, 1.0);
    }
}

tt_tensor *tt_nn_rmsnorm_forward(tt_nn_rmsnorm *m, tt_tensor *x) {
    TT_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] == m->dim, "input %s must end in dim=%lld",
             tt__shape(x), (long long)m->dim);
    return tt_rmsnorm(x, m->weight, m->eps);
}

void tt_nn_rmsnorm_params(const tt_nn_rmsnorm *m, tt_params *out, const char *prefix) {
    if (m->weight) tt_params_add(out, prefix, "weight", m->weight);
}

void tt_nn_rmsnorm_free(tt_nn_rmsnorm *m) {
    tt_release(m->weight);
    memset(m, 0, sizeof *m);
}

static tt_tensor *rmsnorm_fwd(void *self, tt_tensor *x) { return tt_nn_rmsnorm_forward(self, x); }
static void rmsnorm_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_rmsnorm_params(self, out, prefix);
}
static void rmsnorm_free(void *self) { tt_nn_rmsnorm_free(self); }
static const tt_module_ops rmsnorm_ops = {.type = "RMSNorm", .forward = rmsnorm_fwd,
                                          .params = rmsnorm_params, .free = rmsnorm_free};
tt_module tt_nn_rmsnorm_module(tt_nn_rmsnorm *m) { return (tt_module){m, &rmsnorm_ops}; }

void tt_nn_norm_init(tt_nn_norm *m, tt_nn_norm_kind kind, int64_t dim, double eps, bool bias) {
    TT_CHECK((unsigned)kind < TT_NORM_KIND_COUNT,
             "norm kind %d; use TT_NORM_LAYERNORM, "
             "TT_NORM_RMSNORM or TT_NORM_RMSNORM_NOWEIGHT",
             (int)kind);
    memset(m, 0, sizeof *m);
    m->kind = kind;
    if (kind == TT_NORM_LAYERNORM) tt_nn_layernorm_init(&m->ln, dim, eps, true, bias);
    else
        tt_nn_rmsnorm_init(&m->rms, dim, eps, kind == TT_NORM_RMSNORM);
}

tt_tensor *tt_nn_norm_forward(tt_nn_norm *m, tt_tensor *x) {
    return m->kind == TT_NORM_LAYERNORM ? tt_nn_layernorm_forward(&m->ln, x)
                                        : tt_nn_rmsnorm_forward(&m->rms, x);
}

void tt_nn_norm_params(const tt_nn_norm *m, tt_params *out, const char *prefix) {
    if (m->kind == TT_NORM_LAYERNORM) tt_nn_layernorm_params(&m->ln, out, prefix);
    else tt_nn_rmsnorm_params(&m->rms, out, prefix);
}

void tt_nn_norm_free(tt_nn_norm *m) {
    tt_nn_layernorm_free(&m->ln);
    tt_nn_rmsnorm_free(&m->rms);
}

static tt_tensor *norm_fwd(void *self, tt_tensor *x) { return tt_nn_norm_forward(self, x); }
static void norm_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_norm_params(self, out, prefix);
}
static void norm_free(void *self) { tt_nn_norm_free(self); }
static const tt_module_ops norm_ops = {.type = "Norm", .forward = norm_fwd, .params = norm_params,
                                       .free = norm_free};
tt_module tt_nn_norm_module(tt_nn_norm *m) { return (tt_module){m, &norm_ops}; }

// ---- dropout ----

void tt_nn_dropout_init(tt_nn_dropout *m, double p, tt_rng *rng) {
    TT_CHECK(p >= 0 && p <= 1, "dropout probability %g is outside [0, 1]", p);
    TT_CHECK(p == 0 || rng, "dropout with p=%g needs an rng", p);
    m->p = p;
    m->training = true;
    m->rng = rng;
}

tt_tensor *tt_nn_dropout_forward(tt_nn_dropout *m, tt_tensor *x) {
    return tt_dropout(x, m->p, m->training, m->rng);
}

void tt_nn_dropout_train(tt_nn_dropout *m, bool training) { m->training = training; }

static tt_tensor *drop_fwd(void *self, tt_tensor *x) { return tt_nn_dropout_forward(self, x); }
static void drop_train(void *self, bool training) { tt_nn_dropout_train(self, training); }
static const tt_module_ops drop_ops = {.type = "Dropout", .forward = drop_fwd, .train = drop_train};
tt_module tt_nn_dropout_module(tt_nn_dropout *m) { return (tt_module){m, &drop_ops}; }

// ---- Identity, Flatten ----

static tt_tensor *identity_fwd(void *self, tt_tensor *x) {
    (void)self;
    return tt__autorelease(tt_retain(x));
}
static const tt_module_ops identity_ops = {.type = "Identity", .forward = identity_fwd};
static char identity_self;  // a module needs a non-NULL self; Identity has no state
tt_module tt_nn_identity_module(void) { return (tt_module){&identity_self, &identity_ops}; }

// The module's state is its two dims, encoded in its self pointer: an address in a static
// table with one slot per valid (start_dim, end_dim) pair (never written), so there is nothing
// to free and nothing shared is mutated.
static char flatten_slots[2 * TT_MAX_DIMS][2 * TT_MAX_DIMS];

static tt_tensor *flatten_fwd(void *self, tt_tensor *x) {
    ptrdiff_t slot = (const char *)self - &flatten_slots[0][0];
    int start_dim = (int)(slot / (2 * TT_MAX_DIMS)) - TT_MAX_DIMS;
    int end_dim = (int)(slot % (2 * TT_MAX_DIMS)) - TT_MAX_DIMS;
    return tt_flatten(x, start_dim, end_dim);
}
static const tt_module_ops flatten_ops = {.type = "Flatten", .forward = flatten_fwd};

tt_module tt_nn_flatten_module(int start_dim, int end_dim) {
    TT_CHECK(start_dim >= -TT_MAX_DIMS && start_dim < TT_MAX_DIMS && end_dim >= -TT_MAX_DIMS &&
             end_dim < TT_MAX_DIMS, "start_dim=%d and end_dim=%d must lie in %d .. %d "
             "(tensors have at most %d dims)", start_dim, end_dim, -TT_MAX_DIMS,
             TT_MAX_DIMS - 1, TT_MAX_DIMS);
    char *slot = &flatten_slots[start_dim + TT_MAX_DIMS][end_dim + TT_MAX_DIMS];
    return (tt_module){slot, &flatten_ops};
}
