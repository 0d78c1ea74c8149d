// The optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Lion, Muon): configs, parameter groups
// with their own hyperparameters, enumerable state and the step, which gathers every
// parameter's update for update.c's parallel pass (Muon's orthogonalization: muon.c).
// Gradient clipping is in clip.c, LR schedules in schedule.c.
#include <math.h>
#include <string.h>

#include "optim_internal.h"
#include "../tensor/tensor_ext.h"

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

tt_optim_config tt_rmsprop_config(double lr) {
    return (tt_optim_config){.kind = TT_OPTIM_RMSPROP, .lr = lr, .alpha = 0.99, .eps = 1e-8};
}

tt_optim_config tt_adagrad_config(double lr) {
    return (tt_optim_config){.kind = TT_OPTIM_ADAGRAD, .lr = lr, .eps = 1e-10};
}

tt_optim_config tt_lion_config(double lr) {
    return (tt_optim_config){.kind = TT_OPTIM_LION, .lr = lr, .beta1 = 0.9, .beta2 = 0.99};
}

tt_optim_config tt_muon_config(double lr) {
    return (tt_optim_config){.kind = TT_OPTIM_MUON,
                             .lr = lr,
                             .momentum = 0.95,
                             .nesterov = true,
                             .eps = 1e-7,
                             .ns_steps = 5,
                             .ns_coefficients = {3.4445, -4.7750, 2.0315}};
}

static const char *const kind_names[TT_OPTIM_KIND_COUNT] = {
    "sgd", "adam", "adamw", "rmsprop", "adagrad", "lion", "muon",
};

const char *tt_optim_kind_name(tt_optim_kind kind) {
    TT_CHECK(kind >= 0 && kind < TT_OPTIM_KIND_COUNT, "unknown optimizer kind %d", (int)kind);
    return kind_names[kind];
}

bool tt_optim_kind_parse(const char *name, tt_optim_kind *out) {
    for (int k = 0; name && k < TT_OPTIM_KIND_COUNT; k++)
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (tt_optim_kind)k;
            return true;
        }
    return false;
}

tt_optim_config tt_optim_config_of(tt_optim_kind kind, double lr) {
    static tt_optim_config (*const make[TT_OPTIM_KIND_COUNT])(double) = {
        tt_sgd_config,     tt_adam_config, tt_adamw_config, tt_rmsprop_config,
        tt_adagrad_config, tt_lion_config, tt_muon_config,
    };
    TT_CHECK(kind >= 0 && kind < TT_OPTIM_KIND_COUNT, "unknown optimizer kind %d", (int)kind);
    return make[kind](lr);
}

static void check_lr(double lr, const char *func) {
    TT_CHECK_IN(func, isfinite(lr) && lr >= 0,
                "learning rate must be finite and >= 0, got %g "
                "(3e-4 is a usual AdamW value)",
                lr);
}

// Aborts (naming func and the kind's field) unless v is in [lo, hi] (hi_open: [lo, hi)).
static void check_range(const tt_optim_config *c, const char *field, double v, double lo, double hi,
                        bool hi_open, const char *func) {
    TT_CHECK_IN(func, v >= lo && (hi_open ? v < hi : v <= hi),
                "%s %s must be in [%g, %g%c, "
                "got %g (a zeroed config? start from tt_%s_config)",
                kind_names[c->kind], field, lo, hi, hi_open ? ')' : ']', v, kind_names[c->kind]);
}

static void check_sgd(const tt_optim_config *c, const char *func) {
    check_range(c, "momentum", c->momentum, 0, 1, false, func);
    check_range(c, "dampening", c->dampening, 0, 1, false, func);
    TT_CHECK_IN(func, !c->nesterov || (c->momentum > 0 && c->dampening == 0),
                "nesterov needs momentum > 0 and dampening 0, got momentum=%g dampening=%g",
                c->momentum, c->dampening);
}

// Newton-Schulz iterations past this many only cost time (5 is the published count).
#define MAX_NS_STEPS 100

static void check_muon(const tt_optim_config *c, const char *func) {
    check_range(c, "momentum", c->momentum, 0, 1, false, func);
    TT_CHECK_IN(func, c->ns_steps >= 0 && c->ns_steps <= MAX_NS_STEPS && c->eps > 0,
                "muon needs ns_steps in [0, %d] and eps > 0, got %d and %g (start from "
                "tt_muon_config)", MAX_NS_STEPS, c->ns_steps, c->eps);
    TT_CHECK_IN(func, c->ns_precision == TT_PRECISION_F32 || c->ns_precision == TT_PRECISION_BF16,
                "muon ns_precision %d is neither TT_PRECISION_F32 nor TT_PRECISION_BF16",
                (int)c->ns_precision);
}

static void check_config(const tt_optim_config *c, const char *func) {
    TT_CHECK_IN(func, c->kind >= 0 && c->kind < TT_OPTIM_KIND_COUNT,
                "unknown optimizer kind %d (use tt_sgd_config ... tt_muon_config)", (int)c->kind);
    check_lr(c->lr, func);
    bool betas = c->kind == TT_OPTIM_ADAM || c->kind == TT_OPTIM_ADAMW || c->kind == TT_OPTIM_LION;
    if (betas) {
        check_range(c, "beta1", c->beta1, 0, 1, true, func);
        check_range(c, "beta2", c->beta2, 0, 1, true, func);
    }
    check_range(c, "eps", c->eps, 0, INFINITY, false, func);
    if (c->kind == TT_OPTIM_SGD) check_sgd(c, func);
    if (c->kind == TT_OPTIM_RMSPROP) {
        check_range(c, "alpha", c->alpha, 0, 1, false, func);
        check_range(c, "momentum", c->momentum, 0, INFINITY, false, func);
    }
    if (c->kind == TT_OPTIM_ADAGRAD) {
        check_range(c, "lr_decay", c->lr_decay, 0, INFINITY, false, func);
        check_range(c, "initial_accumulator_value", c->initial_accumulator_value, 0, INFINITY,
                    false, func);
    }
    if (c->kind == TT_OPTIM_MUON) check_muon(c, func);
}

// ---- init, groups, free ----

static const char *const slot_names[TT_OPTIM_SLOT_COUNT] = {
    "exp_avg", "exp_avg_sq", "square_avg", "grad_avg", "sum", "momentum_buffer", "step",
};

// Which slots a parameter gets under config c.
static bool uses_slot(const tt_optim_config *c, int slot) {
    if (slot == TT_OPTIM_SLOT_STEP) return c->kind != TT_OPTIM_SGD || c->momentum > 0;
    switch (c->kind) {
        case TT_OPTIM_SGD:
            return slot == TT_OPTIM_SLOT_MOMENTUM && c->momentum > 0;
        case TT_OPTIM_ADAM:
        case TT_OPTIM_ADAMW:
            return slot == TT_OPTIM_SLOT_EXP_AVG || slot == TT_OPTIM_SLOT_EXP_AVG_SQ;
        case TT_OPTIM_RMSPROP:
            return slot == TT_OPTIM_SLOT_SQUARE_AVG ||
                   (slot == TT_OPTIM_SLOT_GRAD_AVG && c->centered) ||
                   (slot == TT_OPTIM_SLOT_MOMENTUM && c->momentum > 0);
        case TT_OPTIM_ADAGRAD:
            return slot == TT_OPTIM_SLOT_SUM;
        case TT_OPTIM_LION:
            return slot == TT_OPTIM_SLOT_EXP_AVG;
        case TT_OPTIM_MUON:
            return slot == TT_OPTIM_SLOT_MOMENTUM;
        default:
            return false;
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

// The state of parameter pi under c: zeros of its dtype and shape (Adagrad's sums start at
// initial_accumulator_value; steps are 0-dim i64), unscoped, named "<slot>.<name>".
static void alloc_state(tt_tensor **st, const tt_param *pi, const tt_optim_config *c) {
    for (int s = 0; s < TT_OPTIM_SLOT_COUNT; s++) {
        if (!uses_slot(c, s)) continue;
        const tt_tensor *t = pi->tensor;
        st[s] = s == TT_OPTIM_SLOT_STEP ? tt__new_zeros(TT_I64, 0, NULL)
                                        : tt__new_zeros(t->dtype, t->ndim, t->shape);
        if (s == TT_OPTIM_SLOT_SUM && c->initial_accumulator_value != 0)
            tt_fill_(st[s], c->initial_accumulator_value);
        char name[TT_NAME_MAX];
        tt_set_name(st[s], tt_name_join(name, slot_names[s], pi->name));
    }
}

// Adds p's parameters to group g (skipping a tensor listed twice: tied weights are optimized
// once, under their first name, as PyTorch's named_parameters() deduplicates).
static void add_params(tt_optim *o, tt_optim_group *g, const tt_params *p) {
    for (int i = 0; i < p->n; i++) {
        const char *name = p->items[i].name;
        tt_tensor *t = p->items[i].tensor;
        TT_CHECK(tt_dtype_is_float(t->dtype) && tt_is_contiguous(t) && !t->node,
                 "parameter '%s' %s %s must be a contiguous f32/f64 leaf", name, tt__shape(t),
                 tt_dtype_name(t->dtype));
        TT_CHECK(g->cfg.kind != TT_OPTIM_MUON || t->ndim == 2,
                 "muon optimizes 2-D matrices "
                 "only, but parameter '%s' is %s; put it in a group of another kind (AdamW, "
                 "as nanochat does for embeddings, the head and vectors)",
                 name, tt__shape(t));
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
}

int tt_optim_add_group_as(tt_optim *o, const tt_params *p, tt_optim_config cfg,
                          double weight_decay) {
    check_config(&cfg, __func__);
    TT_CHECK(isfinite(weight_decay) && weight_decay >= 0,
             "weight_decay must be finite and "
             ">= 0, got %g",
             weight_decay);
    if (o->ngroups == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 4;
        o->groups = TT_REALLOC(o->groups, (size_t)o->cap * sizeof *o->groups);
    }
    int gi = o->ngroups;
    tt_optim_group *g = &o->groups[gi];
    memset(g, 0, sizeof *g);
    g->cfg = cfg;
    g->initial_lr = cfg.lr;
    g->weight_decay = weight_decay;
    add_params(o, g, p);
    g->state = TT_CALLOC((size_t)g->params.n * TT_OPTIM_SLOT_COUNT, sizeof *g->state);
    for (int i = 0; i < g->params.n; i++)
        alloc_state(&g->state[i * TT_OPTIM_SLOT_COUNT], &g->params.items[i], &cfg);
    o->ngroups++;
    return gi;
}

int tt_optim_add_group(tt_optim *o, const tt_params *p, double weight_decay) {
    tt_optim_config c = o->cfg;
    c.lr = o->lr;
    int g = tt_optim_add_group_as(o, p, c, weight_decay);
    o->groups[g].initial_lr = o->cfg.lr;
    return g;
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
    TT_CHECK(o->cfg.lr > 0 || lr == 0,
             "the optimizer's base lr is 0, so lr %g cannot scale "
             "its groups; give tt_optim_init the schedule's base lr",
             lr);
    double factor = o->cfg.lr > 0 ? lr / o->cfg.lr : 0;
    o->lr = lr;
    // A group at the optimizer's base takes lr itself (no rounding through the factor).
    for (int g = 0; g < o->ngroups; g++) {
        tt_optim_group *gr = &o->groups[g];
        gr->cfg.lr = gr->initial_lr == o->cfg.lr ? lr : gr->initial_lr * factor;
    }
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
    o->groups[g].cfg.lr = lr;
    o->groups[g].initial_lr = lr * (o->cfg.lr / o->lr);
}

double tt_optim_group_lr(const tt_optim *o, int g) {
    check_group(o, g, __func__);
    return o->groups[g].cfg.lr;
}

void tt_optim_group_hparams(tt_optim *o, int g, tt_optim_hparam out[TT_OPTIM_HPARAMS]) {
    check_group(o, g, __func__);
    tt_optim_group *gr = &o->groups[g];
    tt_optim_config *c = &gr->cfg;
    const tt_optim_hparam h[TT_OPTIM_HPARAMS] = {
        {"lr", &c->lr},
        {"initial_lr", &gr->initial_lr},
        {"weight_decay", &gr->weight_decay},
        {"momentum", &c->momentum},
        {"dampening", &c->dampening},
        {"beta1", &c->beta1},
        {"beta2", &c->beta2},
        {"eps", &c->eps},
        {"alpha", &c->alpha},
        {"lr_decay", &c->lr_decay},
        {"initial_accumulator_value", &c->initial_accumulator_value},
    };
    memcpy(out, h, sizeof h);
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

// ---- step ----

void tt__optim_check_grad(const char *name, const tt_tensor *p, const tt_tensor *g,
                          const char *func) {
    TT_CHECK_IN(func, g->dtype == p->dtype && tt_same_shape(g, p) && tt_is_contiguous(g),
                "gradient of '%s' is %s %s%s; it must be a contiguous %s %s like the parameter "
                "(a gradient set by hand must be like tt_zeros_like(param))",
                name, tt__shape(g), tt_dtype_name(g->dtype),
                tt_is_contiguous(g) ? "" : " (strided)", tt__shape(p), tt_dtype_name(p->dtype));
}

// The elementwise update of a parameter of group gr at its step t (1 for the first update).
static tt__upd_args seg_args(const tt_optim_group *gr, double t) {
    const tt_optim_config *c = &gr->cfg;
    double lr = c->lr, wd = gr->weight_decay;
    tt__upd_args a = {.lr = lr,
                      .weight_decay = wd,
                      .momentum = c->momentum,
                      .dampening = c->dampening,
                      .nesterov = c->nesterov,
                      .first = t == 1,
                      .beta1 = c->beta1,
                      .beta2 = c->beta2,
                      .eps = c->eps,
                      .decay = 1.0,
                      .alpha = c->alpha,
                      .centered = c->centered};
    switch (c->kind) {
        case TT_OPTIM_SGD:
            a.kernel = TT__UPD_SGD;
            break;
        case TT_OPTIM_ADAM:
        case TT_OPTIM_ADAMW:
            a.kernel = TT__UPD_ADAM;
            a.weight_decay = 0;
            a.l2 = c->kind == TT_OPTIM_ADAM ? wd : 0.0;
            a.decay = c->kind == TT_OPTIM_ADAMW ? 1.0 - lr * wd : 1.0;
            a.step_size = lr / (1.0 - pow(c->beta1, t));
            a.bc2_sqrt = sqrt(1.0 - pow(c->beta2, t));
            break;
        case TT_OPTIM_RMSPROP:
            a.kernel = TT__UPD_RMSPROP;
            break;
        case TT_OPTIM_ADAGRAD:
            a.kernel = TT__UPD_ADAGRAD;
            a.step_size = lr / (1.0 + (t - 1) * c->lr_decay);
            break;
        case TT_OPTIM_LION:
            a.kernel = TT__UPD_LION;
            a.decay = 1.0 - lr * wd;
            break;
        default:
            TT_CHECK(false, "optimizer kind %d has no elementwise update", (int)c->kind);
    }
    return a;
}

// The slots an elementwise kernel reads as s0, s1, s2 (tt__upd_seg).
static void seg_slots(tt_tensor *const *st, tt_optim_kind kind, tt_tensor *s[3]) {
    s[0] = s[1] = s[2] = NULL;
    switch (kind) {
        case TT_OPTIM_SGD:
            s[0] = st[TT_OPTIM_SLOT_MOMENTUM];
            break;
        case TT_OPTIM_ADAM:
        case TT_OPTIM_ADAMW:
            s[0] = st[TT_OPTIM_SLOT_EXP_AVG];
            s[1] = st[TT_OPTIM_SLOT_EXP_AVG_SQ];
            break;
        case TT_OPTIM_RMSPROP:
            s[0] = st[TT_OPTIM_SLOT_SQUARE_AVG];
            s[1] = st[TT_OPTIM_SLOT_GRAD_AVG];
            s[2] = st[TT_OPTIM_SLOT_MOMENTUM];
            break;
        case TT_OPTIM_ADAGRAD:
            s[0] = st[TT_OPTIM_SLOT_SUM];
            break;
        default:
            s[0] = st[TT_OPTIM_SLOT_EXP_AVG];
            break;  // Lion
    }
}

// Marks the in-place writes of an update (tensor.h's version counter): the parameter and its
// state, then counts the parameter's step.
static void mark_updated(tt_tensor *p, tt_tensor **st) {
    tt_bump_version(p, "tt_optim_step");
    for (int s = 0; s < TT_OPTIM_SLOT_COUNT; s++)
        if (st[s]) tt_bump_version(st[s], "tt_optim_step");
    if (st[TT_OPTIM_SLOT_STEP]) (*(int64_t *)tt_data(st[TT_OPTIM_SLOT_STEP]))++;
}

// The parameter's step count before this update (0 for a kind without one).
static int64_t step_of(tt_tensor *const *st) {
    return st[TT_OPTIM_SLOT_STEP] ? *(const int64_t *)tt_data(st[TT_OPTIM_SLOT_STEP]) : 0;
}

void tt_optim_step(tt_optim *o) {
    int nparams = 0;
    for (int gi = 0; gi < o->ngroups; gi++) nparams += o->groups[gi].params.n;
    tt__upd_seg *seg = nparams ? TT_MALLOC((size_t)nparams * sizeof *seg) : NULL;
    int nseg = 0;
    int64_t total = 0;
    for (int gi = 0; gi < o->ngroups; gi++) {
        tt_optim_group *gr = &o->groups[gi];
        check_config(&gr->cfg, __func__);
        for (int i = 0; i < gr->params.n; i++) {
            tt_tensor *p = gr->params.items[i].tensor;
            tt__check_live(p, __func__);  // aborts when p was freed
            tt_tensor *g = p->grad;
            if (!g) continue;  // no gradient reached it: skipped, as in PyTorch
            tt__optim_check_grad(gr->params.items[i].name, p, g, __func__);
            tt_tensor **st = &gr->state[i * TT_OPTIM_SLOT_COUNT];
            if (gr->cfg.kind == TT_OPTIM_MUON) {
                tt__muon_update(p, st[TT_OPTIM_SLOT_MOMENTUM], g, &gr->cfg, gr->cfg.lr,
                                gr->weight_decay);
            } else {
                tt__upd_seg *q = &seg[nseg++];
                *q = (tt__upd_seg){
                    .p = p, .g = g, .start = total, .a = seg_args(gr, (double)(step_of(st) + 1))};
                seg_slots(st, gr->cfg.kind, q->s);
                total += tt_numel(p);
            }
            mark_updated(p, st);
        }
    }
    if (nseg) tt__optim_update_all(seg, nseg, total);
    tt_free(seg);
    o->step++;
}
