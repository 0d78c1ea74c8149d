// Gradcheck cases of the losses of nn/loss.c, each reduction: mse, l1, smooth-L1 and Huber on
// both sides of beta / delta, kl_div (probability and log targets, a zero target), binary
// cross-entropy with a broadcast weight, bce_with_logits_ex, nll_loss with ignored targets,
// weights, (N, C, d) inputs, non-contiguous log-probabilities and a (C,) input, and
// cross_entropy_nc. Weights and targets travel as inputs (requiring grad or not) so gc_check's
// f32 forward gets f32 copies of them; index tensors travel in ctx.
#include "gc_util.h"

typedef enum loss_kind {
    L_MSE,
    L_L1,
    L_SMOOTH_L1,
    L_HUBER,
    L_KL,
    L_KL_LOG,
    L_BCE,
    L_BCE_LOGITS,
    L_NLL,
    L_CE
} loss_kind;

typedef struct loss_ctx {
    loss_kind kind;
    tt_reduction reduction;
    double param;            // beta (smooth-L1), delta (Huber), label smoothing
    tt_tensor *targets;      // class indices (nll, cross-entropy)
    int64_t ignore_index;    // nll, cross-entropy
} loss_ctx;

// in = {x, y[, weight]} or, for nll / cross-entropy, {logp[, weight]}
static tt_tensor *f_loss(tt_tensor *const *in, int n, void *ctx) {
    const loss_ctx *c = ctx;
    tt_reduction r = c->reduction;
    switch (c->kind) {
    case L_MSE: return tt_mse_loss_ex(in[0], in[1], r);
    case L_L1: return tt_l1_loss(in[0], in[1], r);
    case L_SMOOTH_L1: return tt_smooth_l1_loss(in[0], in[1], c->param, r);
    case L_HUBER: return tt_huber_loss(in[0], in[1], c->param, r);
    case L_KL: return tt_kl_div(in[0], in[1], r, false);
    case L_KL_LOG: return tt_kl_div(in[0], in[1], r, true);
    case L_BCE: return tt_binary_cross_entropy(in[0], in[1], n > 2 ? in[2] : NULL, r);
    case L_BCE_LOGITS: return tt_bce_with_logits_ex(in[0], in[1], n > 2 ? in[2] : NULL, r);
    case L_NLL: return tt_nll_loss(in[0], c->targets, n > 1 ? in[1] : NULL, c->ignore_index, r);
    case L_CE:
        return tt_cross_entropy_nc(in[0], c->targets, n > 1 ? in[1] : NULL, c->ignore_index, r,
                                   c->param);
    }
    return NULL;
}

static const tt_reduction reductions3[3] = {TT_REDUCTION_NONE, TT_REDUCTION_MEAN,
                                            TT_REDUCTION_SUM};

// An f64 leaf from values.
static tt_tensor *leaf(int ndim, const int64_t *shape, const double *v, bool grad) {
    return tt_set_requires_grad(tt_from_data(TT_F64, ndim, shape, v), grad);
}

// Runs the loss under NONE, MEAN and SUM.
static void check3(gc_report *r, loss_ctx c, int n, tt_tensor *const *in) {
    for (int i = 0; i < 3; i++) {
        c.reduction = reductions3[i];
        gc_check(r, f_loss, &c, n, in, NULL);
    }
}

// ---- mse, l1, smooth-L1, Huber ----

// |x - y| = 0.8, 1.6, 3, 0.3, 1.6, 0.45: away from 0 and from beta, delta in {0.5, 1, 2}.
static const double X6[6] = {0.5, -1.2, 2.0, 0.3, 0.9, -0.4};
static const double Y6[6] = {-0.3, 0.4, -1.0, 0.6, 2.5, 0.05};

static void pair_case(gc_report *r, loss_kind kind, double param) {
    tt_tensor *in[2] = {leaf(TT_SHAPE(2, 3), X6, true), leaf(TT_SHAPE(2, 3), Y6, true)};
    check3(r, (loss_ctx){.kind = kind, .param = param}, 2, in);
}

// The transpose of a (3, 2) tensor against a contiguous (2, 3) one.
static void pair_transposed(gc_report *r, loss_kind kind, double param) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(3, 2), 0, 1, 1.0, 2.0);
    tt_tensor *in[2] = {x, gc_input(TT_SHAPE(2, 3), -1.5, -0.8)};  // |x - y| in [1.8, 3.5]
    loss_ctx c = {.kind = kind, .param = param, .reduction = TT_REDUCTION_MEAN};
    gc_check(r, f_loss, &c, 2, in, NULL);
}

static void mse_reductions(gc_report *r) { pair_case(r, L_MSE, 0); }
static void mse_transposed(gc_report *r) { pair_transposed(r, L_MSE, 0); }
static void l1_reductions(gc_report *r) { pair_case(r, L_L1, 0); }
static void l1_transposed(gc_report *r) { pair_transposed(r, L_L1, 0); }
static void smooth_l1_beta1(gc_report *r) { pair_case(r, L_SMOOTH_L1, 1.0); }
static void smooth_l1_beta2(gc_report *r) { pair_case(r, L_SMOOTH_L1, 2.0); }
static void smooth_l1_beta0(gc_report *r) { pair_case(r, L_SMOOTH_L1, 0.0); }
static void smooth_l1_transposed(gc_report *r) { pair_transposed(r, L_SMOOTH_L1, 2.5); }
static void huber_delta1(gc_report *r) { pair_case(r, L_HUBER, 1.0); }
static void huber_delta05(gc_report *r) { pair_case(r, L_HUBER, 0.5); }
static void huber_transposed(gc_report *r) { pair_transposed(r, L_HUBER, 2.5); }

// ---- KL divergence ----

// Every reduction incl. BATCHMEAN; both input and target require grad.
static void kl_case(gc_report *r, loss_kind kind, double tlo, double thi) {
    tt_tensor *in[2] = {gc_input(TT_SHAPE(3, 4), -2.5, -0.1), gc_input(TT_SHAPE(3, 4), tlo, thi)};
    check3(r, (loss_ctx){.kind = kind}, 2, in);
    loss_ctx c = {.kind = kind, .reduction = TT_REDUCTION_BATCHMEAN};
    gc_check(r, f_loss, &c, 2, in, NULL);
}

static void kl_div_probs(gc_report *r) { kl_case(r, L_KL, 0.05, 1.0); }
static void kl_div_log_target(gc_report *r) { kl_case(r, L_KL_LOG, -3.0, -0.05); }

// A zero target probability contributes 0; the target is a constant here (its t log t has
// an infinite slope at 0). The input is a strided view.
static void kl_div_zero_target(gc_report *r) {
    tt_tensor *x = gc_input_strided(TT_SHAPE(2, 6), 1, 2, -2.0, -0.2);
    tt_tensor *t = leaf(TT_SHAPE(2, 3), (const double[]){0.2, 0.0, 0.8, 0.0, 0.7, 0.3}, false);
    tt_tensor *in[2] = {x, t};
    check3(r, (loss_ctx){.kind = L_KL}, 2, in);
    loss_ctx c = {.kind = L_KL, .reduction = TT_REDUCTION_BATCHMEAN};
    gc_check(r, f_loss, &c, 2, in, NULL);
}

// ---- binary cross-entropy ----

// probs in (0.05, 0.95), soft targets, and a (3,) weight broadcast over (4, 3): all three
// require grad.
static void bce_weight(gc_report *r) {
    tt_tensor *in[3] = {gc_input(TT_SHAPE(4, 3), 0.05, 0.95), gc_input(TT_SHAPE(4, 3), 0, 1),
                        gc_input(TT_SHAPE(3), 0.5, 2.0)};
    check3(r, (loss_ctx){.kind = L_BCE}, 3, in);
}

static void bce_transposed(gc_report *r) {
    tt_tensor *in[2] = {gc_input_transposed(TT_SHAPE(3, 4), 0, 1, 0.1, 0.9),
                        gc_input(TT_SHAPE(4, 3), 0, 1)};
    check3(r, (loss_ctx){.kind = L_BCE}, 2, in);
}

static void bce_logits_weight(gc_report *r) {
    tt_tensor *in[3] = {gc_input(TT_SHAPE(4, 3), -4, 4), gc_input(TT_SHAPE(4, 3), 0, 1),
                        gc_input(TT_SHAPE(4, 1), 0.5, 2.0)};
    check3(r, (loss_ctx){.kind = L_BCE_LOGITS}, 3, in);
}

// ---- nll_loss, cross_entropy_nc ----

// log-probabilities: any values (the loss is linear in them).
static void nll_2d(gc_report *r, bool weight, int64_t ignore_index) {
    int64_t second = ignore_index == -100 ? -100 : 0;
    tt_tensor *tg = tt_from_data(TT_I64, TT_SHAPE(5), (const int64_t[]){1, second, 3, 1, 4});
    tt_tensor *in[2] = {gc_input(TT_SHAPE(5, 5), -3, -0.1),
                        leaf(TT_SHAPE(5), (const double[]){0.2, 1.0, 0.5, 2.0, 0.7}, false)};
    check3(r, (loss_ctx){.kind = L_NLL, .targets = tg, .ignore_index = ignore_index},
           weight ? 2 : 1, in);
}

static void nll_basic(gc_report *r) { nll_2d(r, false, -100); }
static void nll_weight(gc_report *r) { nll_2d(r, true, -100); }
static void nll_ignore_1(gc_report *r) { nll_2d(r, true, 1); }  // two targets ignored

// (N, C, d1, d2) = (2, 3, 2, 2) with an ignored target.
static void nll_4d_weight(gc_report *r) {
    tt_tensor *tg = tt_from_data(TT_I32, TT_SHAPE(2, 2, 2),
                                 (const int32_t[]){2, 0, 1, -100, 0, 0, 2, 1});
    tt_tensor *in[2] = {gc_input(TT_SHAPE(2, 3, 2, 2), -3, -0.1),
                        leaf(TT_SHAPE(3), (const double[]){1.0, 0.5, 2.0}, false)};
    check3(r, (loss_ctx){.kind = L_NLL, .targets = tg, .ignore_index = -100}, 2, in);
}

// logp the transpose of a (C, N) tensor.
static void nll_transposed(gc_report *r) {
    tt_tensor *tg = tt_from_data(TT_I64, TT_SHAPE(3), (const int64_t[]){3, 0, 3});
    tt_tensor *in[1] = {gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -3, -0.1)};
    check3(r, (loss_ctx){.kind = L_NLL, .targets = tg, .ignore_index = -100}, 1, in);
}

// (C,) with a 0-dim target.
static void nll_1d(gc_report *r) {
    tt_tensor *tg = tt_from_data(TT_I64, 0, NULL, (const int64_t[]){2});
    tt_tensor *in[1] = {gc_input(TT_SHAPE(4), -3, -0.1)};
    check3(r, (loss_ctx){.kind = L_NLL, .targets = tg, .ignore_index = -100}, 1, in);
}

static void cross_entropy_nc_3d_weight(gc_report *r) {
    tt_tensor *tg = tt_from_data(TT_I64, TT_SHAPE(2, 3), (const int64_t[]){2, 0, 1, -100, 3, 3});
    tt_tensor *in[2] = {gc_input(TT_SHAPE(2, 4, 3), -2, 2),
                        leaf(TT_SHAPE(4), (const double[]){1.0, 0.5, 2.0, 0.3}, false)};
    check3(r, (loss_ctx){.kind = L_CE, .targets = tg, .ignore_index = -100}, 2, in);
}

// Label smoothing 0.2, (N, C, d) with a weight; and (C,) without one.
static void cross_entropy_nc_smoothing(gc_report *r) {
    tt_tensor *tg = tt_from_data(TT_I64, TT_SHAPE(2, 3), (const int64_t[]){2, 0, 1, -100, 3, 3});
    tt_tensor *in[2] = {gc_input(TT_SHAPE(2, 4, 3), -2, 2),
                        leaf(TT_SHAPE(4), (const double[]){1.0, 0.5, 2.0, 0.3}, false)};
    check3(r, (loss_ctx){.kind = L_CE, .targets = tg, .ignore_index = -100, .param = 0.2}, 2,
           in);
    tt_tensor *t1 = tt_from_data(TT_I64, 0, NULL, (const int64_t[]){1});
    tt_tensor *x1 = gc_input(TT_SHAPE(5), -2, 2);
    check3(r, (loss_ctx){.kind = L_CE, .targets = t1, .ignore_index = -100, .param = 0.2}, 1,
           &x1);
}

const gc_module_case gc_modules_nn_losses[] = {
    {"mse_loss_ex", "reductions", mse_reductions},
    {"mse_loss_ex", "transposed", mse_transposed},
    {"l1_loss", "reductions", l1_reductions},
    {"l1_loss", "transposed", l1_transposed},
    {"smooth_l1_loss", "beta1_both_sides", smooth_l1_beta1},
    {"smooth_l1_loss", "beta2", smooth_l1_beta2},
    {"smooth_l1_loss", "beta0_is_l1", smooth_l1_beta0},
    {"smooth_l1_loss", "transposed", smooth_l1_transposed},
    {"huber_loss", "delta1_both_sides", huber_delta1},
    {"huber_loss", "delta05", huber_delta05},
    {"huber_loss", "transposed", huber_transposed},
    {"kl_div", "probs_target", kl_div_probs},
    {"kl_div", "log_target", kl_div_log_target},
    {"kl_div", "zero_target_strided", kl_div_zero_target},
    {"binary_cross_entropy", "weight_broadcast", bce_weight},
    {"binary_cross_entropy", "transposed", bce_transposed},
    {"bce_with_logits_ex", "weight_broadcast", bce_logits_weight},
    {"nll_loss", "basic_ignored", nll_basic},
    {"nll_loss", "weight_ignored", nll_weight},
    {"nll_loss", "ignore_index_1", nll_ignore_1},
    {"nll_loss", "4d_weight", nll_4d_weight},
    {"nll_loss", "transposed", nll_transposed},
    {"nll_loss", "1d", nll_1d},
    {"cross_entropy_nc", "3d_weight_ignored", cross_entropy_nc_3d_weight},
    {"cross_entropy_nc", "label_smoothing", cross_entropy_nc_smoothing},
    {NULL, NULL, NULL},
};
