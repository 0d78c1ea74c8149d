// optim/schedule.c: every learning-rate schedule against PyTorch 1.13's (OneCycleLR with its
// momentum, ReduceLROnPlateau, LambdaLR; tests/reference/schedule_values.py) and nanochat's
// warmup-stable-decay formula, to 1e-12 relative; the aborts of invalid settings.
#include <signal.h>

#include "test_util.h"
#include "reference/schedule_values.h"

#define N_REFS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define RTOL 1e-12

// ---- OneCycleLR ----

static tt_lr_schedule onecycle_of(const onecycle_ref *r) {
    tt_lr_schedule s = tt_lr_onecycle(r->max_lr, r->total_steps);
    s.onecycle.pct_start = r->pct_start;
    s.onecycle.anneal = r->anneal;
    s.onecycle.div_factor = r->div_factor;
    s.onecycle.final_div_factor = r->final_div_factor;
    s.onecycle.three_phase = r->three_phase;
    s.onecycle.base_momentum = r->base_momentum;
    s.onecycle.max_momentum = r->max_momentum;
    return s;
}

// The lr and the momentum (Adam's betas[0]) of every iteration 0 .. total_steps.
START_TEST(test_onecycle_matches_pytorch) {
    const onecycle_ref *r = &onecycle_refs[_i];
    tt_lr_schedule s = onecycle_of(r);
    for (int it = 0; it < r->n; it++) {
        ck_assert_msg(fabs(tt_lr_at(&s, it) - r->lr[it]) <= RTOL * fabs(r->lr[it]),
                      "%s: lr at %d is %.17g, PyTorch's %.17g", r->name, it, tt_lr_at(&s, it),
                      r->lr[it]);
        double m = tt_lr_momentum_at(&s, it);
        ck_assert_msg(fabs(m - r->momentum[it]) <= RTOL * fabs(r->momentum[it]),
                      "%s: momentum at %d is %.17g, PyTorch's %.17g", r->name, it, m,
                      r->momentum[it]);
    }
}
END_TEST

// The defaults are PyTorch's: the first case uses them all.
START_TEST(test_onecycle_defaults) {
    tt_lr_schedule s = tt_lr_onecycle(0.01, 100);
    const onecycle_ref *r = &onecycle_refs[0];
    ck_assert(s.onecycle.pct_start == r->pct_start && s.onecycle.anneal == r->anneal);
    ck_assert(s.onecycle.div_factor == r->div_factor);
    ck_assert(s.onecycle.final_div_factor == r->final_div_factor && !r->three_phase);
    ck_assert(s.onecycle.cycle_momentum && !s.onecycle.three_phase);
    ck_assert(s.onecycle.base_momentum == r->base_momentum);
    ck_assert(s.onecycle.max_momentum == r->max_momentum);
}
END_TEST

// ---- ReduceLROnPlateau ----

// The lr and num_bad_epochs after each observation of the metric sequence, and the best.
START_TEST(test_plateau_matches_pytorch) {
    const plateau_ref *r = &plateau_refs[_i];
    tt_lr_schedule s = tt_lr_plateau(r->lr);
    s.plateau = (tt_lr_plateau_opts){r->mode,           r->factor,   r->patience, r->threshold,
                                     r->threshold_mode, r->cooldown, r->min_lr,   r->eps};
    tt_lr_plateau_reset(&s);  // the mode decides the starting best
    for (int i = 0; i < r->n; i++) {
        tt_lr_observe(&s, r->metrics[i]);
        double lr = tt_lr_at(&s, 1000 + i);  // any iteration: the current lr
        ck_assert_msg(fabs(lr - r->lr_after[i]) <= RTOL * r->lr_after[i],
                      "%s: lr after observation %d is %.17g, PyTorch's %.17g", r->name, i, lr,
                      r->lr_after[i]);
        ck_assert_msg(s.state.num_bad_epochs == (int64_t)r->bad_after[i],
                      "%s: num_bad_epochs after observation %d is %lld, PyTorch's %g", r->name, i,
                      (long long)s.state.num_bad_epochs, r->bad_after[i]);
    }
    ck_assert_int_eq(s.state.last_epoch, r->n);
    ck_assert_double_eq(s.state.best, r->best);
}
END_TEST

// PyTorch's defaults; the last case of the references uses them.
START_TEST(test_plateau_defaults) {
    tt_lr_schedule s = tt_lr_plateau(1e-3);
    const plateau_ref *r = &plateau_refs[N_REFS(plateau_refs) - 1];
    ck_assert_str_eq(r->name, "defaults");
    ck_assert(s.plateau.mode == r->mode && s.plateau.factor == r->factor);
    ck_assert(s.plateau.patience == r->patience && s.plateau.threshold == r->threshold);
    ck_assert(s.plateau.threshold_mode == r->threshold_mode);
    ck_assert(s.plateau.cooldown == r->cooldown && s.plateau.min_lr == r->min_lr);
    ck_assert(s.plateau.eps == r->eps);
    ck_assert(s.state.best == INFINITY && s.state.lr == 1e-3 && s.state.last_epoch == 0);
}
END_TEST

// An observation changes only a plateau schedule.
START_TEST(test_observe_other_kinds) {
    tt_lr_schedule kinds[] = {tt_lr_constant(0.1), tt_lr_step(0.1, 3, 0.5),
                              tt_lr_cosine(0.1, 2, 10, 0.01), tt_lr_wsd(0.1, 2, 3, 10, 0),
                              tt_lr_onecycle(0.1, 10)};
    for (int k = 0; k < N_REFS(kinds); k++) {
        tt_lr_schedule before = kinds[k];
        for (int i = 0; i < 20; i++) tt_lr_observe(&kinds[k], 5.0 + i);
        ck_assert(memcmp(&before, &kinds[k], sizeof before) == 0);
    }
}
END_TEST

// ---- LambdaLR ----

static double lambda_exp(int64_t it, void *ctx) {
    (void)ctx;
    return pow(0.95, (double)it);
}

static double lambda_inv_warm(int64_t it, void *ctx) {
    (void)ctx;
    return fmin(1.0, (double)(it + 1) / 8) / sqrt(1 + 0.1 * (double)it);
}

// schedule_values.py's LAMBDAS, in its order.
static const tt_lr_fn lambda_fns[] = {lambda_exp, lambda_inv_warm};

START_TEST(test_lambda_matches_pytorch) {
    const lambda_ref *r = &lambda_refs[_i];
    tt_lr_schedule s = tt_lr_lambda(r->lr, lambda_fns[r->fn], NULL);
    for (int it = 0; it < r->n; it++)
        ck_assert_msg(fabs(tt_lr_at(&s, it) - r->lr_at[it]) <= RTOL * r->lr_at[it],
                      "%s: lr at %d is %.17g, PyTorch's %.17g", r->name, it, tt_lr_at(&s, it),
                      r->lr_at[it]);
}
END_TEST

// The context reaches the function.
static double lambda_scaled(int64_t it, void *ctx) { return *(const double *)ctx * (double)it; }

START_TEST(test_lambda_context) {
    double k = 0.25;
    tt_lr_schedule s = tt_lr_lambda(2.0, lambda_scaled, &k);
    ck_assert(tt_lr_at(&s, 3) == 2.0 * 0.75);
    k = 0.5;
    ck_assert(tt_lr_at(&s, 3) == 2.0 * 1.5);
}
END_TEST

// ---- warmup-stable-decay ----

START_TEST(test_wsd_matches_nanochat) {
    const wsd_ref *r = &wsd_refs[_i];
    tt_lr_schedule s = tt_lr_wsd(r->lr, r->warmup, r->warmdown, r->total, r->final_frac);
    for (int it = 0; it < r->n; it++)
        ck_assert_msg(fabs(tt_lr_at(&s, it) - r->lr_at[it]) <= RTOL * r->lr_at[it],
                      "%s: lr at %d is %.17g, nanochat's %.17g", r->name, it, tt_lr_at(&s, it),
                      r->lr_at[it]);
    // Past total_iters the lr stays at the last one (nanochat's formula would go on down).
    for (int64_t it = r->total + 1; it < r->total + 50; it++)
        ck_assert(tt_lr_at(&s, it) == r->lr * r->final_frac);
}
END_TEST

// ---- invalid settings abort, naming the setting ----

START_TEST(test_abort_wsd_warmdown_too_long) {
    tt_expect_abort("0 <= warmdown_iters <= total_iters");
    tt_lr_wsd(1e-3, 10, 200, 100, 0.0);
}
END_TEST

START_TEST(test_abort_wsd_final_frac) {
    tt_expect_abort("wsd schedule needs final_frac in [0, 1]");
    tt_lr_wsd(1e-3, 10, 20, 100, 1.5);
}
END_TEST

START_TEST(test_abort_onecycle_total_steps) {
    tt_expect_abort("onecycle schedule needs total_steps >= 1, got 0");
    tt_lr_onecycle(1e-3, 0);
}
END_TEST

START_TEST(test_abort_onecycle_pct_start) {
    tt_expect_abort("onecycle schedule needs pct_start in [0, 1], got 1.5");
    tt_lr_schedule s = tt_lr_onecycle(1e-3, 100);
    s.onecycle.pct_start = 1.5;
    tt_lr_at(&s, 0);
}
END_TEST

// PyTorch divides by zero here: the first phase ends at step pct_start * total - 1 = 0.
START_TEST(test_abort_onecycle_empty_phase) {
    tt_expect_abort("onecycle schedule: phase 1 has no steps");
    tt_lr_schedule s = tt_lr_onecycle(1e-3, 10);
    s.onecycle.pct_start = 0.1;
    tt_lr_at(&s, 0);
}
END_TEST

START_TEST(test_abort_onecycle_past_total) {
    tt_expect_abort("iteration 101 is past total_steps 100");
    tt_lr_schedule s = tt_lr_onecycle(1e-3, 100);
    tt_lr_at(&s, 100);  // the last valid one, as PyTorch's
    tt_lr_at(&s, 101);
}
END_TEST

START_TEST(test_abort_momentum_of_cosine) {
    tt_expect_abort("only a onecycle schedule with cycle_momentum gives a momentum");
    tt_lr_schedule s = tt_lr_cosine(1e-3, 10, 100, 1e-4);
    tt_lr_momentum_at(&s, 0);
}
END_TEST

START_TEST(test_abort_plateau_factor) {
    tt_expect_abort("plateau factor must be in [0, 1)");
    tt_lr_schedule s = tt_lr_plateau(1e-3);
    s.plateau.factor = 1.0;  // PyTorch: "Factor should be < 1.0."
    tt_lr_observe(&s, 1.0);
}
END_TEST

START_TEST(test_abort_plateau_patience) {
    tt_expect_abort("plateau patience and cooldown must be >= 0, got -1 and 0");
    tt_lr_schedule s = tt_lr_plateau(1e-3);
    s.plateau.patience = -1;
    tt_lr_at(&s, 0);
}
END_TEST

START_TEST(test_abort_lambda_null) {
    tt_expect_abort("tt_lr_lambda needs a function");
    tt_lr_lambda(1e-3, NULL, NULL);
}
END_TEST

static double lambda_nan(int64_t it, void *ctx) {
    (void)ctx;
    return it < 3 ? 1.0 : NAN;
}

START_TEST(test_abort_lambda_bad_factor) {
    tt_expect_abort("the function gave factor nan at iteration 3");
    tt_lr_schedule s = tt_lr_lambda(1e-3, lambda_nan, NULL);
    tt_lr_at(&s, 2);
    tt_lr_at(&s, 3);
}
END_TEST

int main(void) {
    Suite *s = suite_create("schedule");
    TCase *ref = tt_tcase("pytorch");
    tcase_add_loop_test(ref, test_onecycle_matches_pytorch, 0, N_REFS(onecycle_refs));
    tcase_add_test(ref, test_onecycle_defaults);
    tcase_add_loop_test(ref, test_plateau_matches_pytorch, 0, N_REFS(plateau_refs));
    tcase_add_test(ref, test_plateau_defaults);
    tcase_add_test(ref, test_observe_other_kinds);
    tcase_add_loop_test(ref, test_lambda_matches_pytorch, 0, N_REFS(lambda_refs));
    tcase_add_test(ref, test_lambda_context);
    tcase_add_loop_test(ref, test_wsd_matches_nanochat, 0, N_REFS(wsd_refs));
    suite_add_tcase(s, ref);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_wsd_warmdown_too_long, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_wsd_final_frac, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_onecycle_total_steps, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_onecycle_pct_start, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_onecycle_empty_phase, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_onecycle_past_total, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_momentum_of_cosine, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_plateau_factor, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_plateau_patience, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_lambda_null, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_lambda_bad_factor, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
