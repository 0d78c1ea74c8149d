// The optimizers (SGD, Adam, AdamW) with parameter groups and enumerable state, and gradient
// clipping by global L2 norm. Updates run on raw contiguous f32/f64 data, element by element
// in double, without autograd. LR schedules are in schedule.c.
#include "optim.h"

#include <math.h>
#include <string.h>

#include "../tensor/tensor_ext.h"

// n: elements of one parameter. SGD and the clipping norm cut long tensors into chunks that
// threads process independently; Adam and AdamW cut all the parameters' elements into ranges
// of at least CHUNK elements (adam_update_all). Every element is computed the same way, so
// results do not depend on the thread count.
#define CHUNK (1 << 16)

// ---- configuration ----

tt_optim_config tt_sgd_config(double lr) {
    return (tt_optim_config){.kind = TT_OPTIM_SGD, .lr = lr};
}

tt_optim_config tt_adam_config(double lr) {
    return (tt_optim_config){.kind = TT_OPTIM_ADAM, .lr = lr, .beta1 = 0.9, .beta2 = 0.999,
                             .eps = 1e-8};
}

tt_optim_config tt_adamw_config(double lr) {
    tt_optim_config c = tt_adam_config(lr);
    c.kind = TT_OPTIM_ADAMW;
    return c;
}

const char *tt_optim_kind_name(tt_optim_kind kind) {
    static const char *const names[TT_OPTIM_KIND_COUNT] = {"sgd", "adam", "adamw"};
    TT_CHECK(kind >= 0 && kind < TT_OPTIM_KIND_COUNT, "unknown optimizer kind %d", (int)kind);
    return names[kind];
}

static void check_lr(double lr, const char *func) {
    TT_CHECK_IN(func, isfinite(lr) && lr >= 0,
                "learning rate must be finite and >= 0, got %g "
                "(3e-4 is a usual AdamW value)",
                lr);
}

static void check_config(const tt_optim_config *c, const char *func) {
    TT_CHECK_IN(func, c->kind >= 0 && c->kind < TT_OPTIM_KIND_COUNT,
                "unknown optimizer kind %d "
                "(use tt_sgd_config, tt_adam_config or tt_adamw_config)",
                (int)c->kind);
    check_lr(c->lr, func);
    if (c->kind == TT_OPTIM_SGD) {
        TT_CHECK_IN(func, c->momentum >= 0 && c->momentum <= 1,
                    "SGD momentum must be in [0, 1], got %g", c->momentum);
        TT_CHECK_IN(func, c->dampening >= 0 && c->dampening <= 1,
                    "SGD dampening must be in [0, 1], "
                    "got %g",
                    c->dampening);
        TT_CHECK_IN(func, !c->nesterov || (c->momentum > 0 && c->dampening == 0),
                    "nesterov needs "
                    "momentum > 0 and dampening 0, got momentum=%g dampening=%g",
                    c->momentum, c->dampening);
    } else {
        TT_CHECK_IN(func, c->beta1 >= 0 && c->beta1 < 1 && c->beta2 >= 0 && c->beta2 < 1,
                    "%s betas must be in [0, 1), got (%g, %g) (a zeroed config? start from "
                    "tt_%s_config)",
                    tt_optim_kind_name(c->kind), c->beta1, c->beta2, tt_optim_kind_name(c->kind));
        TT_CHECK_IN(func, c->eps >= 0, "%s eps must be >= 0, got %g", tt_optim_kind_name(c->kind),
                    c->eps);
    }
}

// ---- init, groups, free ----

static const char *const slot_names[TT_OPTIM_SLOT_COUNT] = {
    "exp_avg", "exp_avg_sq", "momentum_buffer", "step",
};

// Which slots a parameter gets under this config.
static bool uses_slot(const tt_optim_config *c, int slot) {
    switch (c->kind) {
        case TT_OPTIM_SGD:
            return c->momentum > 0 &&
                   (slot == TT_OPTIM_SLOT_MOMENTUM || slot == TT_OPTIM_SLOT_STEP);
        default:
            return slot != TT_OPTIM_SLOT_MOMENTUM;
    }
}

void tt_optim_init(tt_optim *o, tt_optim_config cfg) {
    check_config(&cfg, __func__);
    memset(o, 0, sizeof *o);
    o->cfg = cfg;
    o->lr = cfg.lr;
}

// The group and index holding tensor t, or false.
static bool find_param(const tt_optim *o, const tt_tensor *t, const char *name, int *group,
                       const char **other) {
    for (int g = 0; g < o->ngroups; g++) {
        const tt_params *p = &o->groups[g].params;
        for (int i = 0; i < p->n; i++) {
            if (p->items[i].tensor == t || (name && strcmp(p->items[i].name, name) == 0)) {
                *group = g;
                *other = p->items[i].name;
                return true;
            }
        }
    }
    return false;
}

int tt_optim_add_group(tt_optim *o, const tt_params *p, double weight_decay) {
    TT_CHECK(isfinite(weight_decay) && weight_decay >= 0, "weight_decay must be finite and "
             ">= 0, got %g", weight_decay);
    if (o->ngroups == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 4;
        o->groups = TT_REALLOC(o->groups, (size_t)o->cap * sizeof *o->groups);
    }
    int gi = o->ngroups;
    tt_optim_group *g = &o->groups[gi];
    memset(g, 0, sizeof *g);
    g->weight_decay = weight_decay;
    g->lr_scale = 1.0;
    for (int i = 0; i < p->n; i++) {
        const char *name = p->items[i].name;
        tt_tensor *t = p->items[i].tensor;
        TT_CHECK(tt_dtype_is_float(t->dtype) && tt_is_contiguous(t) && !t->node,
                 "parameter '%s' %s %s must be a contiguous f32/f64 leaf", name, tt__shape(t),
                 tt_dtype_name(t->dtype));
        // A tensor listed twice in one list (tied weights) is optimized once, under its first
        // name, as PyTorch's named_parameters() deduplicates.
        bool tied = false;
        for (int j = 0; j < g->params.n; j++) tied |= g->params.items[j].tensor == t;
        if (tied) continue;
        int other_group;
        const char *other;
        TT_CHECK(!find_param(o, t, name, &other_group, &other), "parameter '%s' clashes with "
                 "'%s' of group %d: a tensor (and a name) may be in only one group", name,
                 other, other_group);
        tt_params_add(&g->params, NULL, name, t);
    }
    // State: zeros of the parameter's dtype and shape (steps: 0-dim i64), unscoped.
    g->state = TT_CALLOC((size_t)g->params.n * TT_OPTIM_SLOT_COUNT, sizeof *g->state);
    for (int i = 0; i < g->params.n; i++) {
        const tt_param *pi = &g->params.items[i];
        for (int s = 0; s < TT_OPTIM_SLOT_COUNT; s++) {
            if (!uses_slot(&o->cfg, s)) continue;
            tt_tensor *st = s == TT_OPTIM_SLOT_STEP
                                ? tt__new_zeros(TT_I64, 0, NULL)
                                : tt__new_zeros(pi->tensor->dtype, pi->tensor->ndim,
                                                pi->tensor->shape);
            char name[TT_NAME_MAX];
            tt_set_name(st, tt_name_join(name, slot_names[s], pi->name));
            g->state[i * TT_OPTIM_SLOT_COUNT + s] = st;
        }
    }
    o->ngroups++;
    return gi;
}

void tt_optim_add_decay_groups(tt_optim *o, const tt_params *p, double weight_decay) {
    tt_params decay, no_decay;
    tt_params_init(&decay);
    tt_params_init(&no_decay);
    for (int i = 0; i < p->n; i++) {
        tt_tensor *t = p->items[i].tensor;
        if (!t->requires_grad) continue;
        tt_params_add(t->ndim >= 2 ? &decay : &no_decay, NULL, p->items[i].name, t);
    }
    tt_optim_add_group(o, &decay, weight_decay);
    tt_optim_add_group(o, &no_decay, 0.0);
    tt_params_free(&decay);
    tt_params_free(&no_decay);
}

void tt_optim_add_module(tt_optim *o, tt_module m, double weight_decay) {
    tt_params p;
    tt_params_init(&p);
    tt_module_params(m, &p, NULL);
    tt_optim_add_decay_groups(o, &p, weight_decay);
    tt_params_free(&p);
}

tt_optim tt_optim_new(tt_optim_config cfg, tt_module m, double weight_decay) {
    tt_optim o;
    tt_optim_init(&o, cfg);
    tt_optim_add_module(&o, m, weight_decay);
    return o;
}

void tt_optim_set_lr(tt_optim *o, double lr) {
    check_lr(lr, __func__);
    o->lr = lr;
}

static void check_group(const tt_optim *o, int g, const char *func) {
    TT_CHECK_IN(func, o && g >= 0 && g < o->ngroups, "group %d does not exist (the optimizer "
                "has %d; tt_optim_add_group returns the index)", g, o ? o->ngroups : 0);
}

void tt_optim_set_group_lr(tt_optim *o, int g, double lr) {
    check_group(o, g, __func__);
    check_lr(lr, __func__);
    TT_CHECK(o->lr > 0, "the optimizer's lr is 0, so group %d's lr cannot be kept as a ratio to "
             "it; set group lrs while the lr is > 0 (e.g. right after tt_optim_add_group)", g);
    o->groups[g].lr_scale = lr / o->lr;
}

double tt_optim_group_lr(const tt_optim *o, int g) {
    check_group(o, g, __func__);
    return o->lr * o->groups[g].lr_scale;
}

void tt_optim_zero_grad(tt_optim *o) {
    for (int g = 0; g < o->ngroups; g++) tt_params_zero_grad(&o->groups[g].params);
}

void tt_optim_free(tt_optim *o) {
    for (int g = 0; g < o->ngroups; g++) {
        tt_optim_group *gr = &o->groups[g];
        for (int i = 0; i < gr->params.n * TT_OPTIM_SLOT_COUNT; i++) tt_release(gr->state[i]);
        tt_free(gr->state);
        tt_params_free(&gr->params);
    }
    tt_free(o->groups);
    memset(o, 0, sizeof *o);
}

void tt_optim_state(const tt_optim *o, tt_params *out) {
    for (int g = 0; g < o->ngroups; g++) {
        const tt_optim_group *gr = &o->groups[g];
        for (int i = 0; i < gr->params.n; i++)
            for (int s = 0; s < TT_OPTIM_SLOT_COUNT; s++) {
                tt_tensor *st = gr->state[i * TT_OPTIM_SLOT_COUNT + s];
                if (st) tt_params_add(out, slot_names[s], gr->params.items[i].name, st);
            }
    }
}

// ---- update kernels (n elements; p param, g grad, m/v/buf state; math in double) ----

typedef struct sgd_args {
    double lr, weight_decay, momentum, dampening;
    bool nesterov, first;  // first: the buffer starts as the gradient
} sgd_args;

// torch.optim.SGD: d = g + wd p; buf = first ? d : momentum buf + (1 - dampening) d;
// d = nesterov ? d + momentum buf : buf; p -= lr d. p, buf (NULL without momentum), g: (n,).
TT_CLONES static void sgd_f32(float *p, float *buf, const float *g, int64_t n,
                              const sgd_args *a) {
    for (int64_t i = 0; i < n; i++) {
        double d = (double)g[i];
        if (a->weight_decay != 0) d += a->weight_decay * (double)p[i];
        if (a->momentum != 0) {
            double b = a->first ? d : a->momentum * (double)buf[i] + (1 - a->dampening) * d;
            buf[i] = (float)b;
            d = a->nesterov ? d + a->momentum * (double)buf[i] : (double)buf[i];
        }
        p[i] = (float)((double)p[i] - a->lr * d);
    }
}

// The f64 twin of sgd_f32.
TT_CLONES static void sgd_f64(double *p, double *buf, const double *g, int64_t n,
                              const sgd_args *a) {
    for (int64_t i = 0; i < n; i++) {
        double d = (double)g[i];
        if (a->weight_decay != 0) d += a->weight_decay * (double)p[i];
        if (a->momentum != 0) {
            double b = a->first ? d : a->momentum * (double)buf[i] + (1 - a->dampening) * d;
            buf[i] = (double)b;
            d = a->nesterov ? d + a->momentum * (double)buf[i] : (double)buf[i];
        }
        p[i] = (double)((double)p[i] - a->lr * d);
    }
}

typedef struct adam_args {
    double beta1, beta2, eps;
    double l2;          // Adam: wd, added to the gradient as l2 * p; AdamW: 0
    double decay;       // AdamW: 1 - lr wd, p *= decay first; Adam: 1
    double step_size;   // lr / (1 - beta1^t)
    double bc2_sqrt;    // sqrt(1 - beta2^t)
} adam_args;

// Kingma & Ba 2015 with PyTorch's arrangement of the bias corrections:
// m = m + (1 - b1) (g - m); v = b2 v + (1 - b2) g^2; p -= step_size m / (sqrt(v) / bc2_sqrt + eps)
// Branch-free so the compiler vectorizes it (a decay of 1 and an l2 of 0 change nothing).
// p, m, v, g: (n,).
TT_CLONES static void adam_f32(float *restrict p, float *restrict m, float *restrict v,
                     const float *restrict g, int64_t n, const adam_args *a) {
    const double b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    const double l2 = a->l2, decay = a->decay, ss = a->step_size, bc2 = a->bc2_sqrt;
    for (int64_t i = 0; i < n; i++) {
        double pi = (double)p[i] * decay;
        double gi = (double)g[i] + l2 * pi;
        float mi = (float)((double)m[i] + (1 - b1) * (gi - (double)m[i]));
        float vi = (float)(b2 * (double)v[i] + (1 - b2) * gi * gi);
        m[i] = mi;
        v[i] = vi;
        double denom = sqrt((double)vi) / bc2 + eps;
        p[i] = (float)(pi - ss * ((double)mi / denom));
    }
}

// The f64 twin of adam_f32.
TT_CLONES static void adam_f64(double *restrict p, double *restrict m, double *restrict v,
                     const double *restrict g, int64_t n, const adam_args *a) {
    const double b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    const double l2 = a->l2, decay = a->decay, ss = a->step_size, bc2 = a->bc2_sqrt;
    for (int64_t i = 0; i < n; i++) {
        double pi = (double)p[i] * decay;
        double gi = (double)g[i] + l2 * pi;
        double mi = (double)((double)m[i] + (1 - b1) * (gi - (double)m[i]));
        double vi = (double)(b2 * (double)v[i] + (1 - b2) * gi * gi);
        m[i] = mi;
        v[i] = vi;
        double denom = sqrt((double)vi) / bc2 + eps;
        p[i] = (double)(pi - ss * ((double)mi / denom));
    }
}

// Element pointer i of a contiguous tensor (NULL stays NULL: plain SGD has no buffer).
static void *at(const tt_tensor *t, int64_t i) {
    return t ? (char *)tt_data(t) + i * (int64_t)tt_dtype_size(t->dtype) : NULL;
}

// sgd_update's arguments; sgd_chunks updates its CHUNK-element chunks [c0, c1).
typedef struct sgd_job {
    tt_tensor *p, *buf;
    const tt_tensor *g;
    const sgd_args *a;
} sgd_job;

static void sgd_chunks(void *ctx, int64_t c0, int64_t c1) {
    const sgd_job *j = ctx;
    int64_t n = tt_numel(j->p);
    for (int64_t c = c0; c < c1; c++) {
        int64_t i0 = c * CHUNK, len = n - i0 < CHUNK ? n - i0 : CHUNK;
        if (j->p->dtype == TT_F32)
            sgd_f32(at(j->p, i0), at(j->buf, i0), at(j->g, i0), len, j->a);
        else
            sgd_f64(at(j->p, i0), at(j->buf, i0), at(j->g, i0), len, j->a);
    }
}

static void sgd_update(tt_tensor *p, tt_tensor *buf, const tt_tensor *g, const sgd_args *a) {
    int64_t nchunks = (tt_numel(p) + CHUNK - 1) / CHUNK;
    sgd_job j = {p, buf, g, a};
    tt__parallel_for(nchunks, 1, sgd_chunks, &j);
}

// One parameter's share of an Adam step: its tensors and its bias-corrected arguments.
typedef struct adam_seg {
    tt_tensor *p, *m, *v;
    const tt_tensor *g;
    adam_args a;
    int64_t start;  // index of its first element in the concatenation of every segment
} adam_seg;

// The segments of an Adam step, for the thread pool.
typedef struct adam_job {
    const adam_seg *seg;
    int nseg;
} adam_job;

// Elements [lo, hi) of the concatenation of every segment.
static void adam_range(void *ctx, int64_t lo, int64_t hi) {
    const adam_job *j = ctx;
    const adam_seg *seg = j->seg;
    int nseg = j->nseg;
    {
        for (int s = 0; s < nseg; s++) {
            const adam_seg *q = &seg[s];
            int64_t n = tt_numel(q->p), a = q->start, b = q->start + n;
            int64_t i0 = (lo > a ? lo : a) - a, i1 = (hi < b ? hi : b) - a;
            if (i1 <= i0) continue;
            if (q->p->dtype == TT_F32)
                adam_f32(at(q->p, i0), at(q->m, i0), at(q->v, i0), at(q->g, i0), i1 - i0,
                         &q->a);
            else
                adam_f64(at(q->p, i0), at(q->m, i0), at(q->v, i0), at(q->g, i0), i1 - i0,
                         &q->a);
        }
    }
}

// Every segment in one parallel pass: the concatenated elements are cut into ranges of at
// least CHUNK elements that the threads claim (the small tensors no longer run one by one on
// the calling thread). Each element is updated by the same adam_f32/adam_f64 formula whichever
// range it falls in, so results do not depend on the thread count.
static void adam_update_all(const adam_seg *seg, int nseg, int64_t total) {
    adam_job j = {seg, nseg};
    tt__parallel_for(total, total >= 2 * CHUNK ? CHUNK : (total > 0 ? total : 1), adam_range,
                     &j);
}

// ---- step ----

static void check_grad(const char *name, const tt_tensor *p, const tt_tensor *g, const char *func) {
    TT_CHECK_IN(func, g->dtype == p->dtype && tt_same_shape(g, p) && tt_is_contiguous(g),
                "gradient of '%s' is %s %s%s; it must be a contiguous %s %s like the parameter "
                "(a gradient set by hand must be like tt_zeros_like(param))",
                name, tt__shape(g), tt_dtype_name(g->dtype),
                tt_is_contiguous(g) ? "" : " (strided)", tt__shape(p), tt_dtype_name(p->dtype));
}

void tt_optim_step(tt_optim *o) {
    const tt_optim_config *c = &o->cfg;
    bool adam = c->kind != TT_OPTIM_SGD;
    int nparams = 0;
    for (int gi = 0; gi < o->ngroups; gi++) nparams += o->groups[gi].params.n;
    adam_seg *seg = adam && nparams ? TT_MALLOC((size_t)nparams * sizeof *seg) : NULL;
    int nseg = 0;
    int64_t total = 0;
    for (int gi = 0; gi < o->ngroups; gi++) {
        tt_optim_group *gr = &o->groups[gi];
        double lr = o->lr * gr->lr_scale, wd = gr->weight_decay;
        for (int i = 0; i < gr->params.n; i++) {
            tt_tensor *p = gr->params.items[i].tensor;
            tt__check_live(p, __func__);  // aborts when p was freed
            tt_tensor *g = p->grad;
            if (!g) continue;  // no gradient reached it: skipped, as in PyTorch
            check_grad(gr->params.items[i].name, p, g, __func__);
            tt_tensor **st = &gr->state[i * TT_OPTIM_SLOT_COUNT];
            int64_t *step = st[TT_OPTIM_SLOT_STEP] ? tt_data(st[TT_OPTIM_SLOT_STEP]) : NULL;
            if (!adam) {
                sgd_args a = {lr, wd, c->momentum, c->dampening, c->nesterov,
                              step && *step == 0};
                sgd_update(p, st[TT_OPTIM_SLOT_MOMENTUM], g, &a);
            } else {
                double t = (double)(*step + 1);
                seg[nseg++] = (adam_seg){
                    .p = p, .m = st[TT_OPTIM_SLOT_EXP_AVG], .v = st[TT_OPTIM_SLOT_EXP_AVG_SQ],
                    .g = g, .start = total,
                    .a = {
                        .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps,
                        .l2 = c->kind == TT_OPTIM_ADAM ? wd : 0.0,
                        .decay = c->kind == TT_OPTIM_ADAMW ? 1.0 - lr * wd : 1.0,
                        .step_size = lr / (1.0 - pow(c->beta1, t)),
                        .bc2_sqrt = sqrt(1.0 - pow(c->beta2, t)),
                    },
                };
                total += tt_numel(p);
            }
            // In-place writes (tensor.h's version counter): the parameter and its state.
            tt_bump_version(p, "tt_optim_step");
            for (int s = 0; s < TT_OPTIM_SLOT_COUNT; s++)
                if (st[s]) tt_bump_version(st[s], "tt_optim_step");
            if (step) (*step)++;
        }
    }
    if (nseg) adam_update_all(seg, nseg, total);
    tt_free(seg);
    o->step++;
}

// ---- gradient clipping ----

// Sum of squares of n values in double: 8 interleaved partial sums (independent chains the
// compiler can vectorize) added in a fixed order. Chunks of CHUNK elements run in parallel and
// their sums are added in chunk order, so the result is the same for any thread count.
#define LANES 8

// x: (n,).
static double sumsq_f32(const float *x, int64_t n) {
    double acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += (double)x[i + k] * (double)x[i + k];
    for (int k = 0; i < n; i++, k++) acc[k] += (double)x[i] * (double)x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// The f64 twin of sumsq_f32.
static double sumsq_f64(const double *x, int64_t n) {
    double acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += (double)x[i + k] * (double)x[i + k];
    for (int k = 0; i < n; i++, k++) acc[k] += (double)x[i] * (double)x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// sumsq's arguments; sumsq_chunks writes part[c], the sum of chunk c, for c in [c0, c1).
typedef struct sumsq_job {
    const tt_tensor *g;
    double *part;
} sumsq_job;

static void sumsq_chunks(void *ctx, int64_t c0, int64_t c1) {
    const sumsq_job *j = ctx;
    int64_t n = tt_numel(j->g);
    for (int64_t c = c0; c < c1; c++) {
        int64_t i0 = c * CHUNK, len = n - i0 < CHUNK ? n - i0 : CHUNK;
        j->part[c] = j->g->dtype == TT_F32 ? sumsq_f32(at(j->g, i0), len)
                                            : sumsq_f64(at(j->g, i0), len);
    }
}

static double sumsq(const tt_tensor *g) {
    int64_t n = tt_numel(g), nchunks = (n + CHUNK - 1) / CHUNK;
    if (nchunks == 0) return 0;
    double one, *part = nchunks > 1 ? TT_MALLOC((size_t)nchunks * sizeof *part) : &one;
    sumsq_job j = {g, part};
    tt__parallel_for(nchunks, 1, sumsq_chunks, &j);
    double s = 0;
    for (int64_t c = 0; c < nchunks; c++) s += part[c];
    if (part != &one) tt_free(part);
    return s;
}

// Whether entry i's tensor already appeared earlier in p (tied weights count once).
static bool seen_before(const tt_params *p, int i) {
    for (int j = 0; j < i; j++)
        if (p->items[j].tensor == p->items[i].tensor) return true;
    return false;
}

double tt_grad_norm(const tt_params *p) {
    double total = 0;
    for (int i = 0; i < p->n; i++) {
        const tt_tensor *t = p->items[i].tensor;
        tt__check_live(t, __func__);  // aborts when t was freed
        const tt_tensor *g = t->grad;
        if (!g || seen_before(p, i)) continue;
        check_grad(p->items[i].name, t, g, __func__);
        total += sumsq(g);
    }
    return sqrt(total);
}

static void scale_(tt_tensor *g, double s) {
    tt_bump_version(g, "tt_clip_grad_norm");
    int64_t n = tt_numel(g);
    if (g->dtype == TT_F32) {
        float *x = tt_data(g);
        for (int64_t i = 0; i < n; i++) x[i] = (float)((double)x[i] * s);
    } else {
        double *x = tt_data(g);
        for (int64_t i = 0; i < n; i++) x[i] *= s;
    }
}

// torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), applied when < 1. Unlike
// PyTorch, a non-finite norm leaves the gradients as they are (instead of making them NaN).
double tt_clip_grad_norm(const tt_params *p, double max_norm) {
    TT_CHECK(isfinite(max_norm) && max_norm >= 0, "max_norm must be finite and >= 0, got %g",
             max_norm);
    double norm = tt_grad_norm(p);
    double coef = max_norm / (norm + 1e-6);
    if (isfinite(norm) && coef < 1) {
        for (int i = 0; i < p->n; i++) {
            tt_tensor *g = p->items[i].tensor->grad;
            if (g && !seen_before(p, i)) scale_(g, coef);
        }
    }
    return norm;
}
