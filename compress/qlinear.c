// QuantizedLinear: a Linear's weight as int8 with per-output-channel scales and a forward that
// quantizes its input rows at run time and multiplies in int32 (tensor/kernels/qgemm.h).
// Inference only: no autograd node. Also the modules tt_nn_linear_quantize and static
// quantization's prepare swap in for a Linear, and the walks over a module tree.
#include "compress_internal.h"

#include "../nn/walk.h"
#include "../tensor/kernels/qgemm.h"

#include <math.h>
#include <string.h>

// t (any float dtype, any layout) as a new contiguous f32 tensor, unscoped.
tt_tensor *tt__compress_f32(const tt_tensor *t) {
    if (t->dtype == TT_F32) return tt__contiguous_ref((tt_tensor *)t);
    int64_t n = tt_numel(t);
    double *d = TT_MALLOC((size_t)(n > 0 ? n : 1) * sizeof *d);  // (n)
    tt_to_f64_array(t, d);
    tt_tensor *out = tt__new(TT_F32, t->ndim, t->shape);
    float *o = tt_data_f32(out);
    for (int64_t i = 0; i < n; i++) o[i] = (float)d[i];
    tt_free(d);
    return out;
}

tt_tensor *tt__qformat_apply(const char *name, tt_tensor *x, int64_t K, int64_t N,
                             tt__qformat_kernel kernel, const void *state) {
    const char *F = "tt_nn_linear_forward";  // the caller users see
    TT_CHECK_IN(F, x, "input is NULL");
    TT_CHECK_IN(F, !(x->requires_grad && tt_is_grad_enabled()), "the %s Linear (in=%lld, "
                "out=%lld) is inference only and has no gradient, but input %s requires grad "
                "with grad mode on; run it inside tt_no_grad_begin()/tt_no_grad_end() (or "
                "tt_set_grad_enabled(false)), or train with the f32 Linear "
                "(tt_nn_linear_dequantize)", name, (long long)K, (long long)N, tt__shape(x));
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
        kernel(state, tt_data_f32(y), tt_data_f32(xc), M);
        tt_release(xc);
    }
    return tt__autorelease(y);
}

void tt_nn_qlinear_init(tt_nn_qlinear *q, const tt_tensor *weight, const tt_tensor *bias) {
    TT_CHECK(q, "the module must not be NULL");
    TT_CHECK(weight && weight->ndim == 2 && tt_dtype_is_float(weight->dtype),
             "weight must be a float matrix (out, in), got %s %s",
             weight ? tt__shape(weight) : "NULL", weight ? tt_dtype_name(weight->dtype) : "");
    int64_t N = weight->shape[0], K = weight->shape[1];
    TT_CHECK(N >= 1 && K >= 1 && K <= TT_K_QGEMM_KMAX, "weight %s must have out >= 1 and "
             "1 <= in <= %d (the int32 sums of longer rows could overflow); keep this layer "
             "in f32", tt__shape(weight), TT_K_QGEMM_KMAX);
    TT_CHECK(!bias || (bias->ndim == 1 && bias->shape[0] == N && tt_dtype_is_float(bias->dtype)),
             "bias %s %s must be a float vector (%lld,) matching weight %s, or NULL",
             bias ? tt__shape(bias) : "", bias ? tt_dtype_name(bias->dtype) : "", (long long)N,
             tt__shape(weight));
    memset(q, 0, sizeof *q);
    q->in_features = K;
    q->out_features = N;
    tt_tensor *w = tt__compress_f32(weight);  // (N, K)
    q->qweight = TT_MALLOC(sizeof *q->qweight);
    tt_k_qweight_init(q->qweight, tt_data_f32(w), N, K);
    tt_release(w);
    if (bias) q->bias = tt__compress_f32(bias);  // (N)
}

void tt_nn_qlinear_from_linear(tt_nn_qlinear *q, const tt_nn_linear *m) {
    TT_CHECK(m && m->weight, "the Linear is not initialized; call tt_nn_linear_init first");
    tt_nn_qlinear_init(q, m->weight, m->bias);
}

tt_tensor *tt_nn_qlinear_forward(tt_nn_qlinear *q, tt_tensor *x) {
    TT_CHECK(q && q->qweight, "the module is not initialized; call tt_nn_qlinear_from_linear");
    TT_CHECK(x, "input is NULL");
    TT_CHECK(!(x->requires_grad && tt_is_grad_enabled()), "the int8 Linear (in=%lld, out=%lld) "
             "is inference only and has no gradient, but input %s requires grad with grad mode "
             "on; run it inside tt_no_grad_begin()/tt_no_grad_end() (or "
             "tt_set_grad_enabled(false)), or train with the f32 Linear "
             "(tt_nn_linear_dequantize)", (long long)q->in_features, (long long)q->out_features,
             tt__shape(x));
    TT_CHECK(x->dtype == TT_F32, "input %s must be f32, got %s; convert it with "
             "tt_to_dtype(x, TT_F32)", tt__shape(x), tt_dtype_name(x->dtype));
    TT_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] == q->in_features,
             "input %s must end in in_features=%lld", tt__shape(x), (long long)q->in_features);
    int64_t K = q->in_features, N = q->out_features, M = tt_numel(x) / K;
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    shape[x->ndim - 1] = N;
    tt_tensor *y = tt__new(TT_F32, x->ndim, shape);  // (..., N)
    if (M > 0) {
        tt_tensor *xc = tt__contiguous_ref(x);       // (M, K)
        const float *b = q->bias ? tt_data_f32(q->bias) : NULL;
        if (q->act_static)
            tt_k_qgemm_f32_static(tt_data_f32(y), tt_data_f32(xc), q->qweight, b, M,
                                  (tt_k_qact){q->act_scale, q->act_zero});
        else
            tt_k_qgemm_f32(tt_data_f32(y), tt_data_f32(xc), q->qweight, b, M);
        tt_release(xc);
    }
    return tt__autorelease(y);
}

int64_t tt_nn_qlinear_bytes(const tt_nn_qlinear *q) {
    if (!q || !q->qweight) return 0;
    return tt_k_qweight_bytes(q->qweight) + (q->bias ? 4 * q->out_features : 0);
}

void tt_nn_qlinear_free(tt_nn_qlinear *q) {
    if (!q) return;
    if (q->qweight) {
        tt_k_qweight_free(q->qweight);
        tt_free(q->qweight);
    }
    tt_release(q->bias);
    memset(q, 0, sizeof *q);
}

static tt_tensor *qlinear_fwd(void *self, tt_tensor *x) { return tt_nn_qlinear_forward(self, x); }
static void qlinear_free(void *self) { tt_nn_qlinear_free(self); }
static const tt_module_ops qlinear_ops = {.type = "QuantizedLinear", .forward = qlinear_fwd,
                                          .free = qlinear_free};
tt_module tt_nn_qlinear_module(tt_nn_qlinear *q) { return (tt_module){q, &qlinear_ops}; }

// ---- int8 as a weight format (tt__qformat) ----

static bool int8_fits(int64_t out, int64_t in) { return out >= 1 && in <= TT_K_QGEMM_KMAX; }
static void *int8_pack(const tt_tensor *weight, const tt_tensor *bias) {
    tt_nn_qlinear *q = TT_MALLOC(sizeof *q);
    tt_nn_qlinear_init(q, weight, bias);
    return q;
}
static tt_tensor *int8_forward(void *state, tt_tensor *x) {
    return tt_nn_qlinear_forward(state, x);
}
static int64_t int8_bytes(const void *state) { return tt_nn_qlinear_bytes(state); }
static void int8_free(void *state) {
    tt_nn_qlinear_free(state);
    tt_free(state);
}
const tt__qformat tt__qformat_int8 = {TT_QUANT_INT8, int8_fits, int8_pack, int8_forward,
                                      int8_bytes, int8_free};

// ---- the modules swapped in for a Linear: a weight format, or f32 recording its input's range
// Both keep references to the Linear's f32 weight and bias and list them as its parameters
// (a checkpoint or an optimizer sees the same names as before the swap).

// A Linear running in a weight format (tt__qformat): the format's packed state and the f32
// weight and bias it was made from.
typedef struct quant_linear {
    const tt__qformat *fmt;
    void *state;               // fmt->pack's
    tt_tensor *weight, *bias;  // the Linear's f32 ones (retained)
} quant_linear;

typedef struct observed_linear {
    tt_observer obs;
    tt_tensor *weight, *bias;  // the Linear's (retained)
} observed_linear;

static void f32_params(tt_tensor *weight, tt_tensor *bias, tt_params *out, const char *prefix) {
    tt_params_add(out, prefix, "weight", weight);
    if (bias) tt_params_add(out, prefix, "bias", bias);
}

static tt_tensor *quant_fwd(void *self, tt_tensor *x) {
    quant_linear *s = self;
    return s->fmt->forward(s->state, x);  // (..., out)
}
static void quant_params(const void *self, tt_params *out, const char *prefix) {
    const quant_linear *s = self;
    f32_params(s->weight, s->bias, out, prefix);
}
static void quant_free(void *self) {
    quant_linear *s = self;
    s->fmt->free(s->state);
    tt_release(s->weight);
    tt_release(s->bias);
    tt_free(s);
}
#define QUANT_OPS(name) {.type = name, .forward = quant_fwd, .params = quant_params, \
                         .free = quant_free}
// One ops table per format, so a module's type names its format.
static const tt_module_ops quant_ops[TT_QUANT_COUNT] = {
    [TT_QUANT_INT8] = QUANT_OPS("QuantizedLinear"),
    [TT_QUANT_BF16] = QUANT_OPS("BF16Linear"),
    [TT_QUANT_INT4] = QUANT_OPS("Int4Linear"),
};

// The formats by tt_quant; NULL where none is built in.
static const tt__qformat *const formats[TT_QUANT_COUNT] = {
    [TT_QUANT_INT8] = &tt__qformat_int8,
    [TT_QUANT_BF16] = &tt__qformat_bf16,
    [TT_QUANT_INT4] = &tt__qformat_int4,
};

static quant_linear *as_quant(const tt_nn_linear *m) {
    if (!m || m->swap.ops < quant_ops || m->swap.ops >= quant_ops + TT_QUANT_COUNT) return NULL;
    return m->swap.self;
}

// Static quantization's calibration: records the input's range, then the f32 Linear.
static tt_tensor *observed_fwd(void *self, tt_tensor *x) {
    observed_linear *s = self;
    tt_observer_update(&s->obs, x);
    return tt_affine(x, s->weight, s->bias);  // (..., out)
}
static void observed_params(const void *self, tt_params *out, const char *prefix) {
    const observed_linear *s = self;
    f32_params(s->weight, s->bias, out, prefix);
}
static void observed_free(void *self) {
    observed_linear *s = self;
    tt_release(s->weight);
    tt_release(s->bias);
    tt_free(s);
}
static const tt_module_ops observed_ops = {.type = "ObservedLinear", .forward = observed_fwd,
                                           .params = observed_params, .free = observed_free};

static const char *const quant_names[TT_QUANT_COUNT] = {"f32", "int8", "bf16", "int4"};

const char *tt_quant_name(tt_quant q) {
    TT_CHECK(q >= 0 && q < TT_QUANT_COUNT, "unknown weight format %d", (int)q);
    return quant_names[q];
}

tt_status tt_quant_parse(const char *name, tt_quant *q) {
    for (int i = 0; name && i < TT_QUANT_COUNT; i++)
        if (strcmp(name, quant_names[i]) == 0 && (i == TT_QUANT_NONE || formats[i])) {
            *q = (tt_quant)i;
            return TT_OK;
        }
    return tt_set_error(TT_ERR_ARG, "'%s' is not a weight format; use f32, int8, bf16 or int4",
                        name ? name : "(null)");
}

// Whether m's weight fits format q (int8's sums limit in_features, for one).
static bool format_fits(const tt_nn_linear *m, tt_quant q) {
    return !formats[q]->fits || formats[q]->fits(m->out_features, m->in_features);
}

void tt_nn_linear_quantize_as(tt_nn_linear *m, tt_quant q) {
    TT_CHECK(m && m->weight, "the Linear is not initialized; call tt_nn_linear_init first");
    TT_CHECK(q >= 0 && q < TT_QUANT_COUNT, "unknown weight format %d", (int)q);
    tt_nn_linear_dequantize(m);
    if (q == TT_QUANT_NONE) return;
    TT_CHECK(formats[q], "the weight format %s is not built into this library", quant_names[q]);
    TT_CHECK(format_fits(m, q), "a Linear (in=%lld, out=%lld) does not fit the %s format; "
             "keep it in f32", (long long)m->in_features, (long long)m->out_features,
             quant_names[q]);
    quant_linear *s = TT_MALLOC(sizeof *s);
    s->fmt = formats[q];
    s->state = s->fmt->pack(m->weight, m->bias);
    s->weight = tt_retain(m->weight);
    s->bias = m->bias ? tt_retain(m->bias) : NULL;
    m->swap = (tt_module){s, &quant_ops[q]};
}

void tt_nn_linear_quantize(tt_nn_linear *m) { tt_nn_linear_quantize_as(m, TT_QUANT_INT8); }

void tt_nn_linear_dequantize(tt_nn_linear *m) {
    if (!m || (!as_quant(m) && m->swap.ops != &observed_ops)) return;
    tt_module_free(m->swap);
    m->swap = (tt_module){0};
}

tt_quant tt_nn_linear_quantization(const tt_nn_linear *m) {
    const quant_linear *s = as_quant(m);
    return s ? s->fmt->quant : TT_QUANT_NONE;
}

tt_nn_qlinear *tt_nn_linear_quantized(const tt_nn_linear *m) {
    const quant_linear *s = as_quant(m);
    return s && s->fmt->quant == TT_QUANT_INT8 ? s->state : NULL;
}

int64_t tt_nn_linear_quantized_bytes(const tt_nn_linear *m) {
    const quant_linear *s = as_quant(m);
    return s ? s->fmt->bytes(s->state) : 0;
}

tt_observer *tt_nn_linear_observer(const tt_nn_linear *m) {
    return m && m->swap.ops == &observed_ops ? &((observed_linear *)m->swap.self)->obs : NULL;
}

// Swaps in a fresh observer (replacing an int8 module or an older observer).
static void observe_linear(tt_nn_linear *m) {
    tt_nn_linear_dequantize(m);
    observed_linear *s = TT_MALLOC(sizeof *s);
    s->obs = (tt_observer){.min = INFINITY, .max = -INFINITY, .batches = 0};
    s->weight = tt_retain(m->weight);
    s->bias = m->bias ? tt_retain(m->bias) : NULL;
    m->swap = (tt_module){s, &observed_ops};
}

// ---- a module tree: every Linear in place ----

typedef enum walk_action {
    WALK_DYNAMIC,     // tt_quantize_dynamic
    WALK_DEQUANTIZE,  // tt_dequantize_model
    WALK_PREPARE,     // tt_quantize_static_prepare
    WALK_CONVERT,     // tt_quantize_static_convert
} walk_action;

typedef struct quantize_walk {
    walk_action action;
    tt_quant quant;  // WALK_DYNAMIC's format
    int count;
} quantize_walk;

static void convert_linear(tt_nn_linear *lin) {
    const tt_observer *o = tt_nn_linear_observer(lin);
    TT_CHECK_IN("tt_quantize_static_convert", o->batches > 0, "a Linear (in=%lld, out=%lld) "
                "has an observer that saw no input; run calibration batches through the "
                "model's forward between tt_quantize_static_prepare and "
                "tt_quantize_static_convert", (long long)lin->in_features,
                (long long)lin->out_features);
    double lo = o->min, hi = o->max;
    tt_nn_linear_quantize(lin);  // frees the observer
    tt_nn_qlinear_set_static(tt_nn_linear_quantized(lin), lo, hi);
}

// A Linear is recognized by its ops table (tt_nn_linear_module's), not by its type string, so a
// user's module that calls itself "Linear" is walked as any other module.
static bool is_linear(tt_module m) { return tt_module_as_linear(m) != NULL; }

static void quantize_visit(tt_module m, const char *name, void *ctx) {
    (void)name;
    quantize_walk *w = ctx;
    if (is_linear(m)) {
        tt_nn_linear *lin = m.self;
        bool fits = lin->weight && format_fits(lin, w->quant);
        if (w->action == WALK_DYNAMIC && fits) {
            tt_nn_linear_quantize_as(lin, w->quant);
            w->count++;
        } else if (w->action == WALK_DEQUANTIZE && (as_quant(lin) ||
                                                    tt_nn_linear_observer(lin))) {
            w->count += as_quant(lin) != NULL;
            tt_nn_linear_dequantize(lin);
        } else if (w->action == WALK_PREPARE && fits) {
            observe_linear(lin);
            w->count++;
        } else if (w->action == WALK_CONVERT && tt_nn_linear_observer(lin)) {
            convert_linear(lin);
            w->count++;
        }
        return;
    }
    tt_module_children(m, quantize_visit, w);
}

// Runs action on every Linear of m; returns how many it handled. func: the caller's name.
static int walk_tree(tt_module m, walk_action action, tt_quant quant, const char *func) {
    TT_CHECK_IN(func, m.ops, "the module is not initialized (ops is NULL); pass "
                "tt_<name>_module(&layer)");
    TT_CHECK_IN(func, quant > TT_QUANT_NONE && quant < TT_QUANT_COUNT && formats[quant],
                "the weight format %d is not built into this library; use TT_QUANT_INT8, "
                "TT_QUANT_BF16 or TT_QUANT_INT4", (int)quant);
    quantize_walk w = {action, quant, 0};
    quantize_visit(m, NULL, &w);
    return w.count;
}

int tt_quantize_dynamic_as(tt_module m, tt_quant q) {
    return walk_tree(m, WALK_DYNAMIC, q, __func__);
}

int tt_quantize_dynamic(tt_module m) { return walk_tree(m, WALK_DYNAMIC, TT_QUANT_INT8, __func__); }

int tt_dequantize_model(tt_module m) { return walk_tree(m, WALK_DEQUANTIZE, TT_QUANT_INT8, __func__); }

// ---- static quantization ----

void tt_nn_qlinear_set_static(tt_nn_qlinear *q, double lo, double hi) {
    TT_CHECK(q && q->qweight, "the module is not initialized; call tt_nn_qlinear_from_linear");
    TT_CHECK(lo == lo && hi == hi && lo <= hi, "the range [%g, %g] must be ordered and hold no "
             "NaN", lo, hi);
    tt_k_qact a = tt_k_qact_from_range((float)lo, (float)hi);
    q->act_static = true;
    q->act_scale = a.scale;
    q->act_zero = a.zero;
}

void tt_observer_update(tt_observer *o, const tt_tensor *x) {
    TT_CHECK(o && x, "the observer and the input must not be NULL");
    TT_CHECK(tt_dtype_is_float(x->dtype), "input %s must be a float tensor, got %s",
             tt__shape(x), tt_dtype_name(x->dtype));
    tt_tensor *xf = tt__compress_f32(x);
    const float *v = tt_data_f32(xf);
    double lo = o->min, hi = o->max;
    for (int64_t i = 0; i < tt_numel(xf); i++) {
        lo = v[i] < lo ? v[i] : lo;  // NaN compares false: skipped
        hi = v[i] > hi ? v[i] : hi;
    }
    tt_release(xf);
    o->min = lo;
    o->max = hi;
    o->batches++;
}

int tt_quantize_static_prepare(tt_module m) { return walk_tree(m, WALK_PREPARE, TT_QUANT_INT8, __func__); }

int tt_quantize_static_convert(tt_module m) { return walk_tree(m, WALK_CONVERT, TT_QUANT_INT8, __func__); }
