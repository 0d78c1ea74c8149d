// Check suite of optim/: SGD (momentum, dampening, nesterov, L2), Adam and AdamW steps on f64
// parameters against the PyTorch formulas written out here, parameter groups and the nanoGPT
// decay split, skipped parameters, gradient clipping, LR schedules, state enumeration and
// bit-exact restore, a Linear overfitting one batch, and the abort paths.
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "reference/optim_values.h"

#define TOL 1e-12  // relative; every reference below is computed in double

static const double PI = 3.14159265358979323846;

// ---- helpers (called outside any scope: the caller owns what they return) ----

// An f64 leaf requiring grad, from literal values: param(TT_SHAPE(2), 1, 2).
static tt_tensor *param_(int ndim, const int64_t *shape, const double *v, int64_t n) {
    return tt_set_requires_grad(tt_test_tensor_(TT_F64, ndim, shape, v, n), true);
}
#define param(ndim_shape, ...) \
    param_(ndim_shape, (const double[]){__VA_ARGS__}, \
           (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))

// p->grad = values (a fresh tensor of p's shape and dtype).
static void set_grad_(tt_tensor *p, const double *v) {
    tt_zero_grad(p);
    tt_tensor *g = tt_zeros_like(p);
    for (int64_t i = 0; i < tt_numel(p); i++) tt_set_at(g, i, v[i]);
    p->grad = g;
}
#define set_grad(p, ...) set_grad_((p), (const double[]){__VA_ARGS__})

static void assert_close_array(const tt_tensor *t, const double *want, double rtol) {
    for (int64_t i = 0; i < tt_numel(t); i++)
        ck_assert_close(tt_at(t, i), want[i], 1e-300, rtol);
}

// An optimizer over one group holding `p` under `name`, with no weight decay.
static void optim_one_named(tt_optim *o, tt_optim_config cfg, tt_tensor *p, const char *name) {
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, name, p);
    tt_optim_init(o, cfg);
    tt_optim_add_group(o, &ps, 0);
    tt_params_free(&ps);
}

// An optimizer over one group holding `p` under the name "w".
static void optim_one(tt_optim *o, tt_optim_config cfg, tt_tensor *p, double wd) {
    optim_one_named(o, cfg, p, "w");
    o->groups[0].weight_decay = wd;
}

// ---- SGD ----

// torch.optim.SGD without momentum: p -= lr (g + wd p).
START_TEST(test_sgd_plain) {
    tt_tensor *p = param(TT_SHAPE(3), 1, -2, 3);
    tt_optim o;
    optim_one(&o, tt_sgd_config(0.1), p, 0.01);
    double p0[3] = {1, -2, 3}, g1[3] = {0.5, -1, 2}, g2[3] = {-0.25, 0.75, 1}, p1[3], p2[3];
    set_grad(p, 0.5, -1, 2);
    tt_optim_step(&o);
    for (int i = 0; i < 3; i++) p1[i] = p0[i] - 0.1 * (g1[i] + 0.01 * p0[i]);
    assert_close_array(p, p1, TOL);
    set_grad(p, -0.25, 0.75, 1);
    tt_optim_step(&o);
    for (int i = 0; i < 3; i++) p2[i] = p1[i] - 0.1 * (g2[i] + 0.01 * p1[i]);
    assert_close_array(p, p2, TOL);
    ck_assert_int_eq(o.step, 2);
    tt_params st;  // plain SGD keeps no state
    tt_params_init(&st);
    tt_optim_state(&o, &st);
    ck_assert_int_eq(st.n, 0);
    tt_params_free(&st);
    tt_optim_free(&o);
    tt_release(p);
}
END_TEST

// Momentum 0.9, dampening 0.1, wd 0.01: the buffer is the first (decayed) gradient itself,
// afterwards buf = 0.9 buf + 0.9 d.
START_TEST(test_sgd_momentum_dampening) {
    tt_tensor *p = param(TT_SHAPE(3), 1, -2, 3);
    tt_optim_config c = tt_sgd_config(0.1);
    c.momentum = 0.9;
    c.dampening = 0.1;
    tt_optim o;
    optim_one(&o, c, p, 0.01);
    double p0[3] = {1, -2, 3}, g1[3] = {0.5, -1, 2}, g2[3] = {-0.25, 0.75, 1};
    double b1[3], p1[3], b2[3], p2[3];
    set_grad(p, 0.5, -1, 2);
    tt_optim_step(&o);
    for (int i = 0; i < 3; i++) {
        b1[i] = g1[i] + 0.01 * p0[i];  // no dampening on the first step
        p1[i] = p0[i] - 0.1 * b1[i];
    }
    assert_close_array(p, p1, TOL);
    assert_close_array(o.groups[0].state[TT_OPTIM_SLOT_MOMENTUM], b1, TOL);
    set_grad(p, -0.25, 0.75, 1);
    tt_optim_step(&o);
    for (int i = 0; i < 3; i++) {
        double d = g2[i] + 0.01 * p1[i];
        b2[i] = 0.9 * b1[i] + (1 - 0.1) * d;
        p2[i] = p1[i] - 0.1 * b2[i];
    }
    assert_close_array(p, p2, TOL);
    assert_close_array(o.groups[0].state[TT_OPTIM_SLOT_MOMENTUM], b2, TOL);
    ck_assert_int_eq((int)tt_item(o.groups[0].state[TT_OPTIM_SLOT_STEP]), 2);
    tt_optim_free(&o);
    tt_release(p);
}
END_TEST

// Nesterov: d = d + momentum buf; the literal first step is p0 - lr (1 + 0.9) g.
START_TEST(test_sgd_nesterov) {
    tt_tensor *p = param(TT_SHAPE(2), 1, -2);
    tt_optim_config c = tt_sgd_config(0.5);
    c.momentum = 0.9;
    c.nesterov = true;
    tt_optim o;
    optim_one(&o, c, p, 0);
    set_grad(p, 0.5, -1);
    tt_optim_step(&o);
    ck_assert_values(p, 0, TOL, 1 - 0.5 * 1.9 * 0.5, -2 + 0.5 * 1.9 * 1);
    double p1[2] = {1 - 0.5 * 1.9 * 0.5, -2 + 0.5 * 1.9}, b1[2] = {0.5, -1};
    double g2[2] = {2, 0.25}, want[2];
    set_grad(p, 2, 0.25);
    tt_optim_step(&o);
    for (int i = 0; i < 2; i++) {
        double b2 = 0.9 * b1[i] + g2[i];
        want[i] = p1[i] - 0.5 * (g2[i] + 0.9 * b2);
    }
    assert_close_array(p, want, TOL);
    tt_optim_free(&o);
    tt_release(p);
}
END_TEST

// ---- Adam, AdamW ----

typedef struct adam_ref {
    double m[3], v[3], p[3];
    int t;
} adam_ref;

// One step of PyTorch's Adam (l2 > 0: L2 added to the gradient) or AdamW (decay > 0:
// decoupled), written out from the docs' algorithm with PyTorch's bias-correction arrangement.
static void adam_ref_step(adam_ref *r, const double *g, double lr, double b1, double b2,
                          double eps, double l2, double decay) {
    r->t++;
    double bc1 = 1 - pow(b1, r->t), bc2 = 1 - pow(b2, r->t);
    for (int i = 0; i < 3; i++) {
        r->p[i] *= 1 - lr * decay;
        double gi = g[i] + l2 * r->p[i];
        r->m[i] = b1 * r->m[i] + (1 - b1) * gi;
        r->v[i] = b2 * r->v[i] + (1 - b2) * gi * gi;
        double denom = sqrt(r->v[i]) / sqrt(bc2) + eps;
        r->p[i] -= lr / bc1 * r->m[i] / denom;
    }
}

static void check_adam(tt_optim_kind kind) {
    double lr = 1e-2, wd = 0.1, b1 = 0.8, b2 = 0.99, eps = 1e-3;  // eps large enough to matter
    tt_tensor *p = param(TT_SHAPE(3), 1, -2, 3);
    tt_optim_config c = kind == TT_OPTIM_ADAM ? tt_adam_config(lr) : tt_adamw_config(lr);
    c.beta1 = b1;
    c.beta2 = b2;
    c.eps = eps;
    tt_optim o;
    optim_one(&o, c, p, wd);
    adam_ref r = {.p = {1, -2, 3}};
    double l2 = kind == TT_OPTIM_ADAM ? wd : 0, decay = kind == TT_OPTIM_ADAMW ? wd : 0;
    const double grads[3][3] = {{0.5, -1, 2}, {-0.25, 0.75, 1}, {0.1, 0.2, -0.3}};
    for (int s = 0; s < 3; s++) {
        set_grad_(p, grads[s]);
        tt_optim_step(&o);
        adam_ref_step(&r, grads[s], lr, b1, b2, eps, l2, decay);
        assert_close_array(p, r.p, TOL);
        assert_close_array(o.groups[0].state[TT_OPTIM_SLOT_EXP_AVG], r.m, TOL);
        assert_close_array(o.groups[0].state[TT_OPTIM_SLOT_EXP_AVG_SQ], r.v, TOL);
    }
    ck_assert_int_eq((int)tt_item(o.groups[0].state[TT_OPTIM_SLOT_STEP]), 3);
    ck_assert_int_eq(o.step, 3);
    tt_optim_free(&o);
    tt_release(p);
}

START_TEST(test_adam_steps) { check_adam(TT_OPTIM_ADAM); }
END_TEST

START_TEST(test_adamw_steps) { check_adam(TT_OPTIM_ADAMW); }
END_TEST

// The first bias-corrected step is lr g / (|g| + eps) whatever the betas: m1 / (1 - b1) = g
// and sqrt(v1 / (1 - b2)) = |g|.
START_TEST(test_adam_first_step_literal) {
    tt_tensor *p = param(TT_SHAPE(3), 1, -2, 3);
    tt_optim o;
    optim_one(&o, tt_adam_config(1e-3), p, 0);
    set_grad(p, 0.5, -1e-3, 2);
    tt_optim_step(&o);
    ck_assert_values(p, 0, 1e-12, 1 - 1e-3 * 0.5 / (0.5 + 1e-8),
                     -2 + 1e-3 * 1e-3 / (1e-3 + 1e-8), 3 - 1e-3 * 2 / (2 + 1e-8));
    tt_optim_free(&o);
    tt_release(p);
}
END_TEST

// With a zero gradient AdamW only shrinks p by (1 - lr wd), while Adam's L2 term becomes the
// gradient and moves p by ~lr toward 0; with wd = 0 the two are the same bit for bit.
START_TEST(test_adamw_vs_adam_decay) {
    double lr = 0.1, wd = 0.5;
    tt_tensor *pa = param(TT_SHAPE(2), 2, -4), *pw = param(TT_SHAPE(2), 2, -4);
    tt_optim a, w;
    optim_one(&a, tt_adam_config(lr), pa, wd);
    optim_one(&w, tt_adamw_config(lr), pw, wd);
    set_grad(pa, 0, 0);
    set_grad(pw, 0, 0);
    tt_optim_step(&a);
    tt_optim_step(&w);
    ck_assert_values(pw, 0, 1e-15, 2 * (1 - lr * wd), -4 * (1 - lr * wd));
    // Adam: g = wd p = (1, -2), first step lr g / (|g| + eps).
    ck_assert_values(pa, 0, 1e-12, 2 - lr * 1 / (1 + 1e-8), -4 + lr * 2 / (2 + 1e-8));
    tt_optim_free(&a);
    tt_optim_free(&w);

    optim_one(&a, tt_adam_config(lr), pa, 0);
    optim_one(&w, tt_adamw_config(lr), pw, 0);
    tt_copy_(pw, pa);
    for (int s = 0; s < 3; s++) {
        set_grad(pa, 0.3 * s - 0.2, 0.7);
        set_grad(pw, 0.3 * s - 0.2, 0.7);
        tt_optim_step(&a);
        tt_optim_step(&w);
    }
    ck_assert_int_eq(memcmp(tt_data(pa), tt_data(pw), 2 * sizeof(double)), 0);
    tt_optim_free(&a);
    tt_optim_free(&w);
    tt_release(pa);
    tt_release(pw);
}
END_TEST

// f32 parameters: the same step as f64 to float precision.
START_TEST(test_adamw_f32) {
    tt_tensor *p32 = tt_set_requires_grad(tt_test_tensor(TT_F32, TT_SHAPE(3), 1, -2, 3), true);
    tt_optim o;
    optim_one(&o, tt_adamw_config(1e-2), p32, 0.1);
    adam_ref r = {.p = {1, -2, 3}};
    const double grads[2][3] = {{0.5, -1, 2}, {-0.25, 0.75, 1}};
    for (int s = 0; s < 2; s++) {
        set_grad_(p32, grads[s]);
        tt_optim_step(&o);
        adam_ref_step(&r, grads[s], 1e-2, 0.9, 0.999, 1e-8, 0, 0.1);
    }
    ck_assert(o.groups[0].state[TT_OPTIM_SLOT_EXP_AVG]->dtype == TT_F32);
    assert_close_array(p32, r.p, 1e-6);
    tt_optim_free(&o);
    tt_release(p32);
}
END_TEST

// A parameter of several chunks (updated in parallel): each element gets exactly the update it
// would get alone, whatever the thread count.
START_TEST(test_large_update_threads) {
    int64_t n = 3 * 65536 + 5, idx[4] = {0, 65535, 65536, 3 * 65536 + 4};
    tt_tensor *big[2], *small = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(4)), true);
    small->grad = tt_zeros(TT_F32, TT_SHAPE(4));
    tt_optim o[3];
    for (int k = 0; k < 2; k++) {
        big[k] = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(n)), true);
        big[k]->grad = tt_zeros(TT_F32, TT_SHAPE(n));
        for (int64_t i = 0; i < n; i++) {
            tt_set_at(big[k], i, sin((double)i));
            tt_set_at(big[k]->grad, i, cos((double)i));
        }
        optim_one(&o[k], tt_adamw_config(1e-2), big[k], 0.1);
    }
    for (int j = 0; j < 4; j++) {
        tt_set_at(small, j, sin((double)idx[j]));
        tt_set_at(small->grad, j, cos((double)idx[j]));
    }
    optim_one(&o[2], tt_adamw_config(1e-2), small, 0.1);
    int threads = tt_get_num_threads();
    tt_set_num_threads(1);
    tt_optim_step(&o[0]);
    tt_optim_step(&o[0]);
    tt_set_num_threads(4);
    tt_optim_step(&o[1]);
    tt_optim_step(&o[1]);
    tt_set_num_threads(threads);
    tt_optim_step(&o[2]);
    tt_optim_step(&o[2]);
    ck_assert_int_eq(memcmp(tt_data(big[0]), tt_data(big[1]), (size_t)n * sizeof(float)), 0);
    for (int j = 0; j < 4; j++) ck_assert(tt_at(big[0], idx[j]) == tt_at(small, j));
    for (int k = 0; k < 3; k++) tt_optim_free(&o[k]);
    tt_release(big[0]);
    tt_release(big[1]);
    tt_release(small);
}
END_TEST

// ---- groups ----

// nanoGPT's split: tensors with ndim >= 2 decay, biases and gains do not, frozen ones are left
// out. With zero gradients AdamW moves only the decayed group, each by exactly (1 - lr wd).
START_TEST(test_decay_groups) {
    tt_tensor *fc_w = param(TT_SHAPE(2, 2), 1, 2, 3, 4), *fc_b = param(TT_SHAPE(2), 5, 6);
    tt_tensor *ln_w = param(TT_SHAPE(2), 7, 8), *emb = param(TT_SHAPE(1, 2), 9, 10);
    tt_tensor *frozen = tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 1, 1, 1, 1);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, "fc", "weight", fc_w);
    tt_params_add(&ps, "fc", "bias", fc_b);
    tt_params_add(&ps, "ln", "weight", ln_w);
    tt_params_add(&ps, NULL, "emb.weight", emb);
    tt_params_add(&ps, NULL, "frozen", frozen);
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(0.1));
    tt_optim_add_decay_groups(&o, &ps, 0.2);
    ck_assert_int_eq(o.ngroups, 2);
    const tt_params *d = &o.groups[0].params, *nd = &o.groups[1].params;
    ck_assert_int_eq(d->n, 2);
    ck_assert_str_eq(d->items[0].name, "fc.weight");
    ck_assert_str_eq(d->items[1].name, "emb.weight");
    ck_assert_int_eq(nd->n, 2);
    ck_assert_str_eq(nd->items[0].name, "fc.bias");
    ck_assert_str_eq(nd->items[1].name, "ln.weight");
    ck_assert(o.groups[0].weight_decay == 0.2 && o.groups[1].weight_decay == 0);
    ck_assert(o.groups[0].initial_lr == 0.1 && o.groups[1].initial_lr == 0.1);
    ck_assert(o.groups[0].cfg.kind == TT_OPTIM_ADAMW && o.groups[1].cfg.lr == 0.1);

    for (int i = 0; i < ps.n; i++)
        if (ps.items[i].tensor->requires_grad) set_grad_(ps.items[i].tensor,
                                                         (const double[4]){0});
    tt_optim_step(&o);
    double k = 1 - 0.1 * 0.2;
    ck_assert_values(fc_w, 0, 1e-15, 1 * k, 2 * k, 3 * k, 4 * k);
    ck_assert_values(emb, 0, 1e-15, 9 * k, 10 * k);
    ck_assert_values(fc_b, 0, 0, 5, 6);
    ck_assert_values(ln_w, 0, 0, 7, 8);
    ck_assert_values(frozen, 0, 0, 1, 1, 1, 1);
    tt_optim_zero_grad(&o);
    for (int i = 0; i < ps.n; i++) ck_assert_ptr_null(ps.items[i].tensor->grad);
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_release(fc_w);
    tt_release(fc_b);
    tt_release(ln_w);
    tt_release(emb);
    tt_release(frozen);
}
END_TEST

// Two parameters a = b = (1, 2), each in a group of its own of an SGD at lr 0.1 (weight
// decays wd_a, wd_b); two_groups_free releases them.
typedef struct two_groups {
    tt_tensor *a, *b;
    tt_params pa, pb;
    tt_optim o;
} two_groups;

static void two_groups_init(two_groups *t, double wd_a, double wd_b) {
    t->a = param(TT_SHAPE(2), 1, 2);
    t->b = param(TT_SHAPE(2), 1, 2);
    tt_params_init(&t->pa);
    tt_params_init(&t->pb);
    tt_params_add(&t->pa, NULL, "a", t->a);
    tt_params_add(&t->pb, NULL, "b", t->b);
    tt_optim_init(&t->o, tt_sgd_config(0.1));
    ck_assert_int_eq(tt_optim_add_group(&t->o, &t->pa, wd_a), 0);
    ck_assert_int_eq(tt_optim_add_group(&t->o, &t->pb, wd_b), 1);
}

static void two_groups_free(two_groups *t) {
    tt_optim_free(&t->o);
    tt_params_free(&t->pa);
    tt_params_free(&t->pb);
    tt_release(t->a);
    tt_release(t->b);
}

// Groups with their own weight decay and base lr; set_lr scales every group from its base.
START_TEST(test_groups_base_lr) {
    two_groups t;
    two_groups_init(&t, 0.5, 0.0);
    t.o.groups[1].initial_lr = 0.05;
    tt_optim_set_lr(&t.o, 0.2);
    set_grad(t.a, 1, 1);
    set_grad(t.b, 1, 1);
    tt_optim_step(&t.o);
    ck_assert_values(t.a, 0, TOL, 1 - 0.2 * (1 + 0.5 * 1), 2 - 0.2 * (1 + 0.5 * 2));
    ck_assert_values(t.b, 0, TOL, 1 - 0.1 * 1, 2 - 0.1 * 1);
    two_groups_free(&t);
}
END_TEST

// PyTorch's per-group absolute lr: SGD(lr=0.1) with param_groups[1]['lr'] = 0.02 updates b
// by 0.02 g; a schedule then halving the lr (LambdaLR, factor 0.5) gives the groups 0.05 and
// 0.01, each from its own base lr.
START_TEST(test_group_absolute_lr) {
    two_groups t;
    two_groups_init(&t, 0.0, 0.0);
    tt_optim_set_group_lr(&t.o, 1, 0.02);
    ck_assert_double_eq_tol(tt_optim_group_lr(&t.o, 0), 0.1, 1e-15);
    ck_assert_double_eq_tol(tt_optim_group_lr(&t.o, 1), 0.02, 1e-15);
    set_grad(t.a, 1, 1);
    set_grad(t.b, 1, 1);
    tt_optim_step(&t.o);
    ck_assert_values(t.a, 0, TOL, 1 - 0.1, 2 - 0.1);
    ck_assert_values(t.b, 0, TOL, 1 - 0.02, 2 - 0.02);
    tt_optim_set_lr(&t.o, 0.05);  // a schedule at half the base lr
    ck_assert_double_eq_tol(tt_optim_group_lr(&t.o, 0), 0.05, 1e-15);
    ck_assert_double_eq_tol(tt_optim_group_lr(&t.o, 1), 0.01, 1e-15);
    set_grad(t.a, 1, 1);
    set_grad(t.b, 1, 1);
    tt_optim_step(&t.o);
    ck_assert_values(t.a, 0, TOL, 1 - 0.15, 2 - 0.15);
    ck_assert_values(t.b, 0, TOL, 1 - 0.03, 2 - 0.03);
    two_groups_free(&t);
}
END_TEST

START_TEST(test_group_lr_bad_group_aborts) {
    tt_expect_abort("tt_optim_group_lr: group 2 does not exist (the optimizer has 0");
    tt_optim o;
    tt_optim_init(&o, tt_sgd_config(0.1));
    tt_optim_group_lr(&o, 2);
}
END_TEST

START_TEST(test_group_lr_at_zero_lr_aborts) {
    tt_expect_abort("the optimizer's lr is 0, so group 0's lr cannot be kept as a ratio");
    tt_tensor *a = param(TT_SHAPE(2), 1, 2);
    tt_params pa;
    tt_params_init(&pa);
    tt_params_add(&pa, NULL, "a", a);
    tt_optim o;
    tt_optim_init(&o, tt_sgd_config(0.1));
    tt_optim_add_group(&o, &pa, 0.0);
    tt_optim_set_lr(&o, 0);
    tt_optim_set_group_lr(&o, 0, 0.01);
}
END_TEST

// A tensor listed twice (tied weights) is optimized once.
START_TEST(test_tied_param_once) {
    tt_tensor *w = param(TT_SHAPE(2), 1, 2);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, "wte.weight", w);
    tt_params_add(&ps, NULL, "lm_head.weight", w);
    tt_optim o;
    tt_optim_init(&o, tt_sgd_config(1));
    tt_optim_add_group(&o, &ps, 0);
    ck_assert_int_eq(o.groups[0].params.n, 1);
    ck_assert_str_eq(o.groups[0].params.items[0].name, "wte.weight");
    set_grad(w, 0.5, 0.5);
    ck_assert_close(tt_grad_norm(&ps), sqrt(0.5), 0, 1e-15);
    tt_optim_step(&o);
    ck_assert_values(w, 0, 0, 0.5, 1.5);
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_release(w);
}
END_TEST

// ---- parameters without a gradient ----

// b gets no gradient on step 1: it, its state and its step stay untouched. On step 2 its update
// is a first step (its own bias correction, t = 1), as PyTorch's per-parameter step.
START_TEST(test_skip_without_grad) {
    tt_tensor *a = param(TT_SHAPE(2), 1, 2), *b = param(TT_SHAPE(2), 3, 4);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, "a", a);
    tt_params_add(&ps, NULL, "b", b);
    tt_optim o;
    tt_optim_init(&o, tt_adam_config(0.1));
    tt_optim_add_group(&o, &ps, 0);
    set_grad(a, 1, -1);
    tt_optim_step(&o);
    ck_assert_values(b, 0, 0, 3, 4);
    tt_tensor **sb = &o.groups[0].state[TT_OPTIM_SLOT_COUNT];
    ck_assert_values(sb[TT_OPTIM_SLOT_EXP_AVG], 0, 0, 0, 0);
    ck_assert_values(sb[TT_OPTIM_SLOT_EXP_AVG_SQ], 0, 0, 0, 0);
    ck_assert_values(sb[TT_OPTIM_SLOT_STEP], 0, 0, 0);
    set_grad(b, 2, -0.5);
    tt_zero_grad(a);
    tt_optim_step(&o);
    ck_assert_values(b, 0, 1e-12, 3 - 0.1 * 2 / (2 + 1e-8), 4 + 0.1 * 0.5 / (0.5 + 1e-8));
    ck_assert_values(a, 0, 1e-12, 1 - 0.1 / (1 + 1e-8), 2 + 0.1 / (1 + 1e-8));
    ck_assert_values(o.groups[0].state[TT_OPTIM_SLOT_STEP], 0, 0, 1);
    ck_assert_values(sb[TT_OPTIM_SLOT_STEP], 0, 0, 1);
    ck_assert_int_eq(o.step, 2);
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_release(a);
    tt_release(b);
}
END_TEST

// ---- clipping ----

// Gradients (3, 4) and (12): norm 13. Clipping to 6.5 scales by 6.5 / (13 + 1e-6); a parameter
// without a gradient is ignored; a large max_norm leaves everything bit for bit.
START_TEST(test_clip_grad_norm) {
    tt_dtype dt = _i ? TT_F32 : TT_F64;
    tt_tensor *a = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2), 1, 1), true);
    tt_tensor *b = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(1, 1), 1), true);
    tt_tensor *c = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2), 1, 1), true);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, "a", a);
    tt_params_add(&ps, NULL, "b", b);
    tt_params_add(&ps, NULL, "c", c);
    set_grad(a, 3, 4);
    set_grad(b, 12);
    ck_assert(tt_clip_grad_norm(&ps, 100) == 13);
    ck_assert_values(a->grad, 0, 0, 3, 4);
    ck_assert_values(b->grad, 0, 0, 12);
    double tol = dt == TT_F32 ? 1e-7 : 1e-15;
    ck_assert_close(tt_clip_grad_norm(&ps, 6.5), 13, 0, 1e-15);
    double s = 6.5 / (13 + 1e-6);
    ck_assert_values(a->grad, 0, tol, 3 * s, 4 * s);
    ck_assert_values(b->grad, 0, tol, 12 * s);
    ck_assert_ptr_null(c->grad);
    ck_assert_close(tt_grad_norm(&ps), 6.5, 0, 1e-6);
    tt_params_free(&ps);
    tt_release(a);
    tt_release(b);
    tt_release(c);
}
END_TEST

// A gradient of several chunks: the norm is exact and the same for any thread count; a
// non-finite norm leaves the gradients alone.
START_TEST(test_clip_large_and_nonfinite) {
    int64_t n = 200001;
    tt_tensor *w = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(n)), true);
    w->grad = tt_full(TT_F32, TT_SHAPE(n), 0.5);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, "w", w);
    double norm = tt_grad_norm(&ps);
    ck_assert(norm == sqrt(0.25 * (double)n));
    int threads = tt_get_num_threads();
    tt_set_num_threads(1);
    double one = tt_grad_norm(&ps);
    tt_set_num_threads(4);
    double four = tt_grad_norm(&ps);
    tt_set_num_threads(threads);
    ck_assert(one == norm && four == norm);
    tt_clip_grad_norm(&ps, 1.0);
    ck_assert_close(tt_grad_norm(&ps), 1.0, 0, 1e-6);
    tt_set_at(w->grad, 7, INFINITY);
    tt_set_at(w->grad, 8, 1);
    ck_assert(isinf(tt_clip_grad_norm(&ps, 1.0)));
    ck_assert(isinf(tt_at(w->grad, 7)) && tt_at(w->grad, 8) == 1);
    tt_params_free(&ps);
    tt_release(w);
}
END_TEST

// ---- schedules ----

START_TEST(test_lr_schedules) {
    double lr = 6e-4, min_lr = 6e-5;
    int64_t w = 10, d = 110;
    tt_lr_schedule s = tt_lr_cosine(lr, w, d, min_lr);
    ck_assert_close(tt_lr_at(&s, 0), lr * 1 / 11, 0, 1e-15);
    ck_assert_close(tt_lr_at(&s, w - 1), lr * 10 / 11, 0, 1e-15);
    ck_assert_close(tt_lr_at(&s, w), lr, 0, 1e-15);                        // cos(0) = 1
    ck_assert_close(tt_lr_at(&s, 60), min_lr + 0.5 * (lr - min_lr), 0, 1e-15);  // middle
    ck_assert_close(tt_lr_at(&s, 35), min_lr + 0.5 * (1 + cos(PI / 4)) * (lr - min_lr), 0,
                    1e-15);
    ck_assert_close(tt_lr_at(&s, d), min_lr, 0, 1e-15);                    // cos(pi) = -1
    ck_assert(tt_lr_at(&s, d + 1) == min_lr);
    ck_assert(tt_lr_at(&s, 1000000) == min_lr);
    for (int64_t it = w; it < d; it++) ck_assert(tt_lr_at(&s, it + 1) <= tt_lr_at(&s, it));

    tt_lr_schedule st = tt_lr_step(1.0, 3, 0.5);
    ck_assert(tt_lr_at(&st, 0) == 1 && tt_lr_at(&st, 2) == 1);
    ck_assert(tt_lr_at(&st, 3) == 0.5 && tt_lr_at(&st, 5) == 0.5 && tt_lr_at(&st, 7) == 0.25);
    tt_lr_schedule c = tt_lr_constant(3e-4);
    ck_assert(tt_lr_at(&c, 0) == 3e-4 && tt_lr_at(&c, 123456) == 3e-4);
    // No warmup: it = 0 is the peak.
    tt_lr_schedule nw = tt_lr_cosine(1.0, 0, 4, 0.0);
    ck_assert_close(tt_lr_at(&nw, 0), 1.0, 0, 1e-15);
    ck_assert_close(tt_lr_at(&nw, 2), 0.5, 0, 1e-15);
}
END_TEST

// ---- state: enumeration and restore ----

START_TEST(test_state_names) {
    tt_tensor *w = param(TT_SHAPE(2, 2), 1, 2, 3, 4), *b = param(TT_SHAPE(2), 5, 6);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, "fc", "weight", w);
    tt_params_add(&ps, "fc", "bias", b);
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(1e-3));
    tt_optim_add_decay_groups(&o, &ps, 0.1);
    tt_params st;
    tt_params_init(&st);
    tt_optim_state(&o, &st);
    const char *want[] = {"exp_avg.fc.weight", "exp_avg_sq.fc.weight", "step.fc.weight",
                          "exp_avg.fc.bias", "exp_avg_sq.fc.bias", "step.fc.bias"};
    ck_assert_int_eq(st.n, 6);
    for (int i = 0; i < 6; i++) ck_assert_str_eq(st.items[i].name, want[i]);
    tt_tensor *m = tt_params_get(&st, "exp_avg.fc.weight");
    ck_assert(tt_same_shape(m, w) && m->dtype == TT_F64 && !m->requires_grad);
    ck_assert_str_eq(m->name, "exp_avg.fc.weight");
    tt_tensor *t = tt_params_get(&st, "step.fc.bias");
    ck_assert(t->ndim == 0 && t->dtype == TT_I64);
    tt_params_free(&st);
    tt_optim_free(&o);

    tt_optim_config c = tt_sgd_config(0.1);
    c.momentum = 0.9;
    tt_optim_init(&o, c);
    tt_optim_add_group(&o, &ps, 0);
    tt_params_init(&st);
    tt_optim_state(&o, &st);
    ck_assert_int_eq(st.n, 4);
    ck_assert_str_eq(st.items[0].name, "momentum_buffer.fc.weight");
    ck_assert_str_eq(st.items[1].name, "step.fc.weight");
    ck_assert_str_eq(st.items[2].name, "momentum_buffer.fc.bias");
    ck_assert_str_eq(st.items[3].name, "step.fc.bias");
    tt_params_free(&st);
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_release(w);
    tt_release(b);
}
END_TEST

// Three steps, save parameters + state + step, restore into a fresh optimizer over fresh
// parameters: the fourth step is identical bit for bit. Run for AdamW and SGD with momentum.
static void check_restore(tt_optim_config cfg) {
    tt_tensor *w = param(TT_SHAPE(2, 2), 1, 2, 3, 4), *b = param(TT_SHAPE(2), 5, 6);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, "fc", "weight", w);
    tt_params_add(&ps, "fc", "bias", b);
    tt_optim o;
    tt_optim_init(&o, cfg);
    tt_optim_add_decay_groups(&o, &ps, 0.1);
    for (int s = 0; s < 3; s++) {
        set_grad(w, 0.1 * s + 0.3, -0.7, 0.2 * s, 1.1);
        set_grad(b, -0.4 * s, 0.9);
        tt_optim_step(&o);
    }
    // The "checkpoint": copies of every tensor, by name.
    tt_params saved, st;
    tt_params_init(&saved);
    tt_params_init(&st);
    tt_optim_state(&o, &st);
    tt_params all = {0};
    for (int i = 0; i < ps.n; i++) tt_params_add(&all, NULL, ps.items[i].name,
                                                 ps.items[i].tensor);
    for (int i = 0; i < st.n; i++) tt_params_add(&all, NULL, st.items[i].name,
                                                 st.items[i].tensor);
    for (int i = 0; i < all.n; i++) {
        tt_tensor *copy = tt_empty_like(all.items[i].tensor);
        tt_copy_(copy, all.items[i].tensor);
        tt_params_add(&saved, NULL, all.items[i].name, copy);
        tt_release(copy);
    }
    int64_t saved_step = o.step;

    // Restore into fresh parameters and a fresh optimizer.
    tt_tensor *w2 = param(TT_SHAPE(2, 2), 0, 0, 0, 0), *b2 = param(TT_SHAPE(2), 0, 0);
    tt_params ps2, st2;
    tt_params_init(&ps2);
    tt_params_init(&st2);
    tt_params_add(&ps2, "fc", "weight", w2);
    tt_params_add(&ps2, "fc", "bias", b2);
    tt_optim o2;
    tt_optim_init(&o2, cfg);
    tt_optim_add_decay_groups(&o2, &ps2, 0.1);
    tt_optim_state(&o2, &st2);
    ck_assert_int_eq(st2.n, st.n);
    for (int i = 0; i < ps2.n; i++)
        tt_copy_(ps2.items[i].tensor, tt_params_get(&saved, ps2.items[i].name));
    for (int i = 0; i < st2.n; i++)
        tt_copy_(st2.items[i].tensor, tt_params_get(&saved, st2.items[i].name));
    o2.step = saved_step;

    set_grad(w, 0.5, 0.25, -0.125, 2);
    set_grad(b, 1.5, -3);
    set_grad(w2, 0.5, 0.25, -0.125, 2);
    set_grad(b2, 1.5, -3);
    tt_optim_step(&o);
    tt_optim_step(&o2);
    ck_assert_int_eq(memcmp(tt_data(w), tt_data(w2), 4 * sizeof(double)), 0);
    ck_assert_int_eq(memcmp(tt_data(b), tt_data(b2), 2 * sizeof(double)), 0);
    for (int i = 0; i < st.n; i++) {
        const tt_tensor *x = st.items[i].tensor, *y = st2.items[i].tensor;
        size_t nb = (size_t)tt_numel(x) * tt_dtype_size(x->dtype);
        ck_assert_msg(memcmp(tt_data(x), tt_data(y), nb) == 0, "%s differs",
                      st.items[i].name);
    }
    ck_assert_int_eq(o2.step, 4);
    // The step moved the parameters (a restore that copied nothing would fail above).
    ck_assert(tt_at(w, 0) != tt_at(tt_params_get(&saved, "fc.weight"), 0));

    tt_params_free(&saved);
    tt_params_free(&all);
    tt_params_free(&st);
    tt_params_free(&st2);
    tt_optim_free(&o);
    tt_optim_free(&o2);
    tt_params_free(&ps);
    tt_params_free(&ps2);
    tt_release(w);
    tt_release(b);
    tt_release(w2);
    tt_release(b2);
}

START_TEST(test_restore_adamw) { check_restore(tt_adamw_config(1e-2)); }
END_TEST

// RMSprop (centered, with momentum: every slot), Adagrad and Lion resume bit for bit too
// (Muon: test_optim_ckpt.c).
START_TEST(test_restore_new_kinds) {
    tt_optim_config rms = tt_rmsprop_config(0.01);
    rms.momentum = 0.9;
    rms.centered = true;
    const tt_optim_config cfgs[] = {rms, tt_adagrad_config(0.1), tt_lion_config(0.01)};
    check_restore(cfgs[_i]);
}
END_TEST

START_TEST(test_restore_sgd) {
    tt_optim_config c = tt_sgd_config(0.1);
    c.momentum = 0.9;
    c.dampening = 0.2;
    check_restore(c);
}
END_TEST

// ---- RMSprop, Adagrad, Lion, Muon against PyTorch (reference/gen_optim_reference.py) ----

typedef struct ref_case {
    const char *name;
    tt_optim_config cfg;
    double weight_decay;
    int64_t rows, cols;
    const double *p0, *g, *p;  // start, OPTIM_REF_STEPS gradients, parameters after each step
} ref_case;

#define REF(n, c, wd, r, k) \
    { #n, c, wd, r, k, ref_##n##_p0, ref_##n##_g, ref_##n##_p }

static ref_case ref_case_at(int i) {
    const ref_case cases[] = {
        REF(rmsprop, tt_rmsprop_config(0.01), 0, 2, 3),
        REF(rmsprop_all,
            ((tt_optim_config){.kind = TT_OPTIM_RMSPROP,
                               .lr = 0.02,
                               .alpha = 0.9,
                               .eps = 1e-6,
                               .momentum = 0.8,
                               .centered = true}),
            0.1, 2, 3),
        REF(adagrad, tt_adagrad_config(0.1), 0, 2, 3),
        REF(adagrad_all,
            ((tt_optim_config){.kind = TT_OPTIM_ADAGRAD,
                               .lr = 0.1,
                               .lr_decay = 0.3,
                               .initial_accumulator_value = 0.5,
                               .eps = 1e-6}),
            0.2, 2, 3),
        REF(lion, tt_lion_config(0.01), 0, 2, 3),
        REF(lion_wd,
            ((tt_optim_config){.kind = TT_OPTIM_LION, .lr = 0.03, .beta1 = 0.8, .beta2 = 0.95}),
            0.5, 2, 3),
        REF(muon_wide, tt_muon_config(0.02), 0, 3, 5),
        REF(muon_tall,
            ((tt_optim_config){.kind = TT_OPTIM_MUON,
                               .lr = 0.02,
                               .momentum = 0.9,
                               .eps = 1e-7,
                               .ns_steps = 5,
                               .ns_coefficients = {3.4445, -4.7750, 2.0315}}),
            0.1, 5, 3),
    };
    ck_assert_int_lt(i, (int)(sizeof cases / sizeof cases[0]));
    return cases[i];
}
#define REF_CASES 8

// Each step's parameters equal PyTorch's to 1e-12 relative (Muon's five Newton-Schulz
// iterations in f64: 1e-10).
START_TEST(test_optim_vs_torch) {
    ref_case rc = ref_case_at(_i);
    int64_t n = rc.rows * rc.cols;
    tt_tensor *p = param_(TT_SHAPE(rc.rows, rc.cols), rc.p0, n);
    tt_optim o;
    optim_one(&o, rc.cfg, p, rc.weight_decay);
    double rtol = rc.cfg.kind == TT_OPTIM_MUON ? 1e-10 : TOL;
    for (int s = 0; s < OPTIM_REF_STEPS; s++) {
        set_grad_(p, rc.g + s * n);
        tt_optim_step(&o);
        for (int64_t i = 0; i < n; i++)
            ck_assert_msg(
                fabs(tt_at(p, i) - rc.p[s * n + i]) <= rtol * fabs(rc.p[s * n + i]) + 1e-14,
                "%s step %d element %lld: %.17g, PyTorch %.17g", rc.name, s + 1, (long long)i,
                tt_at(p, i), rc.p[s * n + i]);
    }
    tt_optim_free(&o);
    tt_release(p);
}
END_TEST

// Every kind's name parses back to it and gives its config; other names do not parse.
START_TEST(test_kind_names) {
    for (int k = 0; k < TT_OPTIM_KIND_COUNT; k++) {
        tt_optim_kind got = TT_OPTIM_KIND_COUNT;
        ck_assert(tt_optim_kind_parse(tt_optim_kind_name((tt_optim_kind)k), &got));
        ck_assert_int_eq(got, k);
        tt_optim_config c = tt_optim_config_of(got, 0.5);
        ck_assert(c.kind == got && c.lr == 0.5);
    }
    tt_optim_kind untouched = TT_OPTIM_LION;
    ck_assert(!tt_optim_kind_parse("lbfgs", &untouched) && !tt_optim_kind_parse(NULL, &untouched));
    ck_assert_int_eq(untouched, TT_OPTIM_LION);
    ck_assert_str_eq(tt_optim_kind_name(TT_OPTIM_MUON), "muon");
}
END_TEST

// The state each kind keeps, under PyTorch's names.
START_TEST(test_state_names_new_kinds) {
    tt_tensor *w = param(TT_SHAPE(2, 2), 1, 2, 3, 4);
    const struct {
        tt_optim_config cfg;
        const char *names;
    } want[] = {
        {(tt_optim_config){
             .kind = TT_OPTIM_RMSPROP, .lr = 0.1, .alpha = 0.99, .momentum = 0.9, .centered = true},
         "square_avg.w grad_avg.w momentum_buffer.w step.w"},
        {tt_rmsprop_config(0.1), "square_avg.w step.w"},
        {tt_adagrad_config(0.1), "sum.w step.w"},
        {tt_lion_config(0.1), "exp_avg.w step.w"},
        {tt_muon_config(0.1), "momentum_buffer.w step.w"},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        tt_optim o;
        optim_one(&o, want[k].cfg, w, 0);
        tt_params st;
        tt_params_init(&st);
        tt_optim_state(&o, &st);
        char got[256] = "";
        for (int i = 0; i < st.n; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
                     st.items[i].name);
        ck_assert_str_eq(got, want[k].names);
        tt_params_free(&st);
        tt_optim_free(&o);
    }
    tt_release(w);
}
END_TEST

// nanochat's arrangement in one optimizer: Muon for a matrix, AdamW for a vector, each group
// with its own lr; a schedule at half the base lr halves both. The matrix moves as a Muon-only
// optimizer moves it, the vector as an AdamW-only one.
START_TEST(test_mixed_groups) {
    tt_tensor *w = param(TT_SHAPE(2, 3), 1, -2, 3, 0.5, 1.5, -1), *b = param(TT_SHAPE(2), 1, 2);
    tt_tensor *w1 = param(TT_SHAPE(2, 3), 1, -2, 3, 0.5, 1.5, -1), *b1 = param(TT_SHAPE(2), 1, 2);
    tt_params pw, pb;
    tt_params_init(&pw);
    tt_params_init(&pb);
    tt_params_add(&pw, NULL, "w", w);
    tt_params_add(&pb, NULL, "b", b);
    tt_optim o, ow, ob;
    tt_optim_init(&o, tt_adamw_config(0.01));
    ck_assert_int_eq(tt_optim_add_group_as(&o, &pw, tt_muon_config(0.2), 0.1), 0);
    ck_assert_int_eq(tt_optim_add_group(&o, &pb, 0), 1);
    optim_one(&ow, tt_muon_config(0.1), w1, 0.1);
    optim_one(&ob, tt_adamw_config(0.005), b1, 0);
    tt_optim_set_lr(&o, 0.005);
    ck_assert_double_eq_tol(tt_optim_group_lr(&o, 0), 0.1, 1e-15);
    ck_assert_double_eq_tol(tt_optim_group_lr(&o, 1), 0.005, 1e-15);
    for (int s = 0; s < 2; s++) {
        set_grad(w, 0.5, s + 0.25, -1, 2, 0.125, -0.75);
        set_grad(w1, 0.5, s + 0.25, -1, 2, 0.125, -0.75);
        set_grad(b, s - 1.5, 0.5);
        set_grad(b1, s - 1.5, 0.5);
        tt_optim_step(&o);
        tt_optim_step(&ow);
        tt_optim_step(&ob);
    }
    ck_assert_int_eq(memcmp(tt_data(w), tt_data(w1), 6 * sizeof(double)), 0);
    ck_assert_int_eq(memcmp(tt_data(b), tt_data(b1), 2 * sizeof(double)), 0);
    ck_assert(tt_at(w, 0) != 1 && tt_at(b, 0) != 1);
    tt_optim_free(&o);
    tt_optim_free(&ow);
    tt_optim_free(&ob);
    tt_params_free(&pw);
    tt_params_free(&pb);
    tt_release(w);
    tt_release(b);
    tt_release(w1);
    tt_release(b1);
}
END_TEST

// Muon's iterations with bf16 products stay near the f32 ones (bf16 keeps 8 bits; the
// iteration does not amplify them past a few percent) and differ from them.
START_TEST(test_muon_bf16_products) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_tensor *w0 = tt_randn(&rng, TT_F32, TT_SHAPE(16, 24));
    tt_tensor *w = tt_set_requires_grad(tt_clone(w0), true);
    tt_tensor *w1 = tt_set_requires_grad(tt_clone(w0), true);
    tt_tensor *g = tt_randn(&rng, TT_F32, TT_SHAPE(16, 24));
    tt_optim_config c = tt_muon_config(0.1);
    tt_optim o, o1;
    optim_one(&o, c, w, 0);
    c.ns_precision = TT_PRECISION_BF16;
    optim_one(&o1, c, w1, 0);
    w->grad = tt_clone(g);
    w1->grad = tt_clone(g);
    tt_optim_step(&o);
    tt_optim_step(&o1);
    double diff = 0, step = 0;
    for (int64_t i = 0; i < tt_numel(w); i++) {
        diff = fmax(diff, fabs(tt_at(w, i) - tt_at(w1, i)));
        step = fmax(step, fabs(tt_at(w, i) - tt_at(w0, i)));
    }
    ck_assert_msg(diff > 0 && diff < 0.05 * step, "bf16 differs by %g of a step of %g", diff, step);
    tt_optim_free(&o);
    tt_optim_free(&o1);
    tt_release(w);
    tt_release(w1);
    tt_release(w0);
    tt_release(g);
}
END_TEST

// ---- a tiny model overfitting one batch ----

// Targets are an exact linear function of the inputs, y = x A^T + c, so a Linear(4, 2) can
// reach zero loss: the MSE starts near 1 and must fall below 1e-4 (four orders of magnitude;
// what is left is AdamW's decay on the weights, ~wd * lr per step, and Adam's ~lr jitter
// near the optimum).
START_TEST(test_linear_overfits_adamw) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 4, 2, true, &rng);
    tt_set_default_dtype(prev);
    tt_params ps;
    tt_params_init(&ps);
    tt_nn_linear_params(&fc, &ps, "fc");
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(8, 4));
    tt_tensor *a = tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 0.5, -1, 0.25, 2, -0.75, 0.5, 1, 0);
    tt_tensor *c = tt_test_tensor(TT_F64, TT_SHAPE(2), 0.3, -0.2);
    tt_scope_begin();
    tt_tensor *y = tt_keep(tt_add(tt_matmul(x, tt_transpose(a, 0, 1)), c));  // (8, 2)
    tt_scope_end();

    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(0.05));
    tt_optim_add_decay_groups(&o, &ps, 1e-4);
    double first = 0, last = 0;
    for (int it = 0; it < 400; it++) {
        tt_scope_begin();
        tt_tensor *loss = tt_mse_loss(tt_nn_linear_forward(&fc, x), y);
        tt_backward(loss);
        tt_optim_step(&o);
        tt_optim_zero_grad(&o);
        if (it == 0) first = tt_item(loss);
        last = tt_item(loss);
        tt_scope_end();
    }
    ck_assert_msg(first > 0.5, "initial loss %g", first);
    ck_assert_msg(last < 1e-4, "loss %g after 400 AdamW steps (started at %g)", last, first);
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_nn_linear_free(&fc);
    tt_release(x);
    tt_release(a);
    tt_release(c);
    tt_release(y);
}
END_TEST

START_TEST(test_free_zeroed) {
    tt_optim o;
    memset(&o, 0, sizeof o);
    tt_optim_free(&o);
    tt_optim_free(&o);
    ck_assert_str_eq(tt_optim_kind_name(TT_OPTIM_ADAMW), "adamw");
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_nesterov_without_momentum) {
    tt_expect_abort("nesterov needs momentum > 0 and dampening 0, got momentum=0");
    tt_optim_config c = tt_sgd_config(0.1);
    c.nesterov = true;
    tt_optim o;
    tt_optim_init(&o, c);
}
END_TEST

START_TEST(test_abort_bad_betas) {
    tt_expect_abort("tt_optim_init: adam beta1 must be in [0, 1), got 1 (a zeroed config?");
    tt_optim o;
    tt_optim_init(&o, (tt_optim_config){.kind = TT_OPTIM_ADAM, .lr = 1e-3, .beta1 = 1.0});
}
END_TEST

START_TEST(test_abort_negative_lr) {
    tt_expect_abort("tt_optim_set_lr: learning rate must be finite and >= 0, got -1");
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(1e-3));
    tt_optim_set_lr(&o, -1);
}
END_TEST

START_TEST(test_abort_param_in_two_groups) {
    tt_expect_abort("parameter 'w' clashes with 'w' of group 0");
    tt_tensor *w = param(TT_SHAPE(2), 1, 2);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, "w", w);
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(1e-3));
    tt_optim_add_group(&o, &ps, 0.1);
    tt_optim_add_group(&o, &ps, 0.0);
}
END_TEST

START_TEST(test_abort_strided_param) {
    tt_expect_abort("parameter 'wt' (3, 2) f64 must be a contiguous f32/f64 leaf");
    tt_tensor *w = tt_zeros(TT_F64, TT_SHAPE(2, 3));
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, "wt", tt_transpose(w, 0, 1));
    tt_optim o;
    tt_optim_init(&o, tt_sgd_config(1e-3));
    tt_optim_add_group(&o, &ps, 0);
}
END_TEST

// Muon takes matrices only: a vector names itself and the fix.
START_TEST(test_abort_muon_vector) {
    tt_expect_abort("muon optimizes 2-D matrices only, but parameter 'b' is (3,); put it in a "
                    "group of another kind");
    tt_tensor *b = param(TT_SHAPE(3), 1, 2, 3);
    tt_optim o;
    optim_one_named(&o, tt_muon_config(0.02), b, "b");
}
END_TEST

START_TEST(test_abort_grad_shape) {
    tt_expect_abort("tt_optim_step: gradient of 'w' is (3,) f64; it must be a contiguous (2,) f64");
    tt_tensor *w = param(TT_SHAPE(2), 1, 2);
    tt_optim o;
    optim_one(&o, tt_sgd_config(0.1), w, 0);
    w->grad = tt_zeros(TT_F64, TT_SHAPE(3));
    tt_optim_step(&o);
}
END_TEST

START_TEST(test_abort_cosine_iters) {
    tt_expect_abort("got warmup_iters=100 decay_iters=100");
    tt_lr_schedule s = tt_lr_cosine(1e-3, 100, 100, 1e-4);
    tt_lr_at(&s, 5);
}
END_TEST

// ---- the version counter: an optimizer step is an in-place write ----

// The step bumps the parameter's version (and its state's), as PyTorch's optimizers do.
START_TEST(test_step_bumps_versions) {
    tt_tensor *w = param(TT_SHAPE(2), 1, 2);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, "w", w);
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(0.1));
    tt_optim_add_group(&o, &ps, 0.0);
    set_grad(w, 1, 1);
    uint64_t v = tt_version(w), m = tt_version(o.groups[0].state[TT_OPTIM_SLOT_EXP_AVG]);
    tt_optim_step(&o);
    ck_assert_uint_gt(tt_version(w), v);
    ck_assert_str_eq(w->storage->writer, "tt_optim_step");
    ck_assert_uint_gt(tt_version(o.groups[0].state[TT_OPTIM_SLOT_EXP_AVG]), m);
    v = tt_version(w->grad);
    tt_clip_grad_norm(&ps, 0.5);  // scales the gradient in place
    ck_assert_uint_gt(tt_version(w->grad), v);
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_release(w);
}
END_TEST

// A step between a forward and its backward: the graph saved w, the step overwrote it.
START_TEST(test_abort_step_before_backward) {
    tt_expect_abort("tt_backward: a tensor saved by 'mul' was modified in place by "
                    "'tt_optim_step' after it was saved");
    tt_tensor *w = param(TT_SHAPE(2), 1, 2);
    tt_params ps;
    tt_params_init(&ps);
    tt_params_add(&ps, NULL, "w", w);
    tt_optim o;
    tt_optim_init(&o, tt_sgd_config(0.1));
    tt_optim_add_group(&o, &ps, 0.0);
    set_grad(w, 1, 1);
    tt_scope_begin();
    tt_tensor *loss = tt_sum_all(tt_mul(w, w));
    tt_optim_step(&o);
    tt_backward(loss);
}
END_TEST

int main(void) {
    Suite *s = suite_create("optim");
    TCase *tc = tt_tcase("optimizers");
    tcase_add_test(tc, test_sgd_plain);
    tcase_add_test(tc, test_sgd_momentum_dampening);
    tcase_add_test(tc, test_sgd_nesterov);
    tcase_add_test(tc, test_adam_steps);
    tcase_add_test(tc, test_adamw_steps);
    tcase_add_test(tc, test_adam_first_step_literal);
    tcase_add_test(tc, test_adamw_vs_adam_decay);
    tcase_add_test(tc, test_adamw_f32);
    tcase_add_test(tc, test_large_update_threads);
    tcase_add_test(tc, test_decay_groups);
    tcase_add_test(tc, test_groups_base_lr);
    tcase_add_test(tc, test_group_absolute_lr);
    tcase_add_test(tc, test_tied_param_once);
    tcase_add_test(tc, test_skip_without_grad);
    tcase_add_test(tc, test_free_zeroed);
    tcase_add_loop_test(tc, test_optim_vs_torch, 0, REF_CASES);
    tcase_add_test(tc, test_mixed_groups);
    tcase_add_test(tc, test_muon_bf16_products);
    suite_add_tcase(s, tc);

    TCase *cl = tt_tcase("clip_and_schedules");
    tcase_add_loop_test(cl, test_clip_grad_norm, 0, 2);
    tcase_add_test(cl, test_clip_large_and_nonfinite);
    tcase_add_test(cl, test_lr_schedules);
    suite_add_tcase(s, cl);

    TCase *st = tt_tcase("state");
    tcase_add_test(st, test_state_names);
    tcase_add_test(st, test_state_names_new_kinds);
    tcase_add_test(st, test_kind_names);
    tcase_add_test(st, test_restore_adamw);
    tcase_add_test(st, test_restore_sgd);
    tcase_add_loop_test(st, test_restore_new_kinds, 0, 3);
    tcase_add_test(st, test_linear_overfits_adamw);
    suite_add_tcase(s, st);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_nesterov_without_momentum, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bad_betas, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_negative_lr, SIGABRT);
    tcase_add_test_raise_signal(ab, test_group_lr_bad_group_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_group_lr_at_zero_lr_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_param_in_two_groups, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_strided_param, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_muon_vector, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_grad_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_cosine_iters, SIGABRT);
    suite_add_tcase(s, ab);
    TCase *ver = tt_tcase("version");
    tcase_add_test(ver, test_step_bumps_versions);
    suite_add_tcase(s, ver);
    TCase *vab = tt_tcase_aborts("aborts_version");
    tcase_add_test_raise_signal(vab, test_abort_step_before_backward, SIGABRT);
    suite_add_tcase(s, vab);
    return tt_test_run(s);
}
