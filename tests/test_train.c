// train/: the trainer against the hand-written loop (bitwise), accumulation, .best, divergence
// stops, signal stops, resume and the CSV log.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

// ---- a tiny regression: Linear(4, 3) on 16 fixed rows, AdamW, a cosine schedule ----

typedef struct net {
    tt_nn_linear fc;
    tt_params params;
    tt_optim optim;
    tt_lr_schedule sched;
    tt_tensor *x, *y;  // (16, 4), (16, 3)
    int64_t nan_at;    // the step whose loss is made NaN (0: none)
    const double *vals;  // the eval val losses, one per eval (NULL: the loss on all rows)
    int evals;
} net;

static void net_init(net *n, uint64_t seed) {
    memset(n, 0, sizeof *n);
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    tt_nn_linear_init(&n->fc, 4, 3, true, &rng);
    tt_params_init(&n->params);
    tt_nn_linear_params(&n->fc, &n->params, "fc");
    tt_optim_init(&n->optim, tt_adamw_config(1e-2));
    tt_optim_add_decay_groups(&n->optim, &n->params, 0.1);
    n->sched = tt_lr_cosine(1e-2, 2, 10, 1e-3);
    tt_rng_seed(&rng, 7);  // the same data for every net
    n->x = tt_randn(&rng, TT_F32, TT_SHAPE(16, 4));
    n->y = tt_randn(&rng, TT_F32, TT_SHAPE(16, 3));
}

static void net_free(net *n) {
    tt_optim_free(&n->optim);
    tt_params_free(&n->params);
    tt_nn_linear_free(&n->fc);
    tt_release(n->x);
    tt_release(n->y);
}

// The MSE on rows [start, start + len) at step (0-based): NaN at nan_at - 1.
static tt_tensor *net_loss(net *n, int64_t step, int64_t start, int64_t len) {
    tt_tensor *pred = tt_nn_linear_forward(&n->fc, tt_narrow(n->x, 0, start, len));
    tt_tensor *loss = tt_mse_loss(pred, tt_narrow(n->y, 0, start, len));
    return n->nan_at && step + 1 == n->nan_at ? tt_mul_scalar(loss, NAN) : loss;
}

// The rows of step s: the first 8 or the last 8, alternately.
static int64_t rows_of(int64_t s) { return (s % 2) * 8; }

static double net_eval(void *ctx, tt_data_split split) {
    net *n = ctx;
    if (n->vals && split == TT_SPLIT_VAL) return n->vals[n->evals++];
    bool g = tt_set_grad_enabled(false);
    tt_scope_begin();
    double v = tt_item(net_loss(n, -1, 0, 16));
    tt_scope_end();
    tt_set_grad_enabled(g);
    return v;
}

static void net_fill(tt_checkpoint *ck, const tt_trainer *tr, void *ctx) {
    net *n = ctx;
    tt_ckpt_add_params(ck, "model.", &n->params);
    tt_trainer_ckpt_fill(tr, ck);
}

static tt_trainer_opts net_opts(net *n, int64_t iters, int64_t accum) {
    tt_trainer_opts o = tt_trainer_opts_default();
    o.iters = iters;
    o.accum = accum;
    o.clip = 1.0;
    o.ctx = n;
    return o;
}

// net_opts with an eval every `every` steps and, when out is not NULL, a checkpoint there.
static tt_trainer_opts eval_opts(net *n, int64_t iters, int64_t accum, int64_t every,
                                 const char *out) {
    tt_trainer_opts o = net_opts(n, iters, accum);
    o.eval_every = every;
    o.eval = net_eval;
    o.fill = out ? net_fill : NULL;
    o.out = out;
    return o;
}

// Steps through the trainer, each of `accum` micro-batches of 8 / accum rows (the first 6 of
// the 8 when accum is 3).
static void run_trainer(net *n, tt_trainer *tr) {
    while (tt_trainer_next(tr)) {
        int64_t len = 8 / tr->accum;
        for (int64_t m = 0; m < tr->accum; m++) {
            tt_scope_begin();
            tt_trainer_backward(tr, net_loss(n, tr->step, rows_of(tr->step) + m * len, len));
            tt_scope_end();
        }
        if (!tt_trainer_step(tr)) break;
    }
}

static void assert_params_equal(const net *a, const net *b) {
    for (int i = 0; i < a->params.n; i++) {
        const tt_tensor *s = a->params.items[i].tensor, *t = b->params.items[i].tensor;
        ck_assert_int_eq(tt_numel(s), tt_numel(t));
        ck_assert_msg(memcmp(tt_data(s), tt_data(t), (size_t)tt_numel(s) * 4) == 0,
                      "'%s' differs", a->params.items[i].name);
    }
}

// The resumed run b (trainer tb) ended as the uninterrupted a did: the same weights and last
// loss, bit for bit. Frees both.
static void end_resumed(net *a, net *b, tt_trainer *ta, tt_trainer *tb) {
    assert_params_equal(a, b);
    ck_assert_double_eq(tb->loss, ta->loss);
    tt_trainer_free(ta);
    tt_trainer_free(tb);
    net_free(a);
    net_free(b);
}

// ---- the step ----

// The loop of examples before the trainer, written out: schedule, backward, clip, step.
static void hand_loop(net *n, int64_t iters) {
    for (int64_t s = 0; s < iters; s++) {
        tt_optim_set_lr(&n->optim, tt_lr_at(&n->sched, s));
        tt_scope_begin();
        tt_backward(net_loss(n, s, rows_of(s), 8));
        tt_clip_grad_norm(&n->params, 1.0);
        tt_optim_step(&n->optim);
        tt_optim_zero_grad(&n->optim);
        tt_scope_end();
    }
}

START_TEST(test_same_as_hand_loop) {
    net a, b;
    net_init(&a, 1);
    net_init(&b, 1);
    hand_loop(&a, 6);
    tt_trainer tr;
    tt_trainer_opts o = net_opts(&b, 6, 1);
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &b.params, &b.optim, &b.sched), TT_OK);
    run_trainer(&b, &tr);
    ck_assert_int_eq(tr.stop, TT_TRAINER_DONE);
    ck_assert_int_eq(tr.step, 6);
    ck_assert_int_eq(tt_trainer_exit_code(&tr), 0);
    ck_assert_double_eq(tr.lr, tt_lr_at(&b.sched, 5));
    assert_params_equal(&a, &b);
    tt_trainer_free(&tr);
    net_free(&a);
    net_free(&b);
}
END_TEST

// The accumulation gpt trained with before the trainer, written out: the first micro-batch's
// gradients copied, the middle ones added, the last one's become (sum + grad) / A.
static void hand_accum_loop(net *n, int64_t iters, int64_t A) {
    float sum[15];
    for (int64_t s = 0; s < iters; s++) {
        tt_optim_set_lr(&n->optim, tt_lr_at(&n->sched, s));
        for (int64_t a = 0; a < A; a++) {
            tt_scope_begin();
            tt_backward(net_loss(n, s, rows_of(s) + a * (8 / A), 8 / A));
            tt_scope_end();
            size_t off = 0;
            for (int i = 0; i < n->params.n; i++) {
                tt_tensor *g = n->params.items[i].tensor->grad;
                float *d = tt_data(g);
                size_t k = (size_t)tt_numel(g);
                for (size_t j = 0; j < k; j++) {
                    if (a == 0) sum[off + j] = d[j];
                    else if (a < A - 1) sum[off + j] += d[j];
                    else d[j] = (sum[off + j] + d[j]) / (float)A;
                }
                off += k;
            }
            if (a < A - 1) tt_params_zero_grad(&n->params);
        }
        tt_clip_grad_norm(&n->params, 1.0);
        tt_optim_step(&n->optim);
        tt_optim_zero_grad(&n->optim);
    }
}

// SGD: a gradient one ulp off moves the weights (Adam's first steps are nearly its sign).
static void use_sgd(net *n) {
    tt_optim_free(&n->optim);
    tt_optim_init(&n->optim, tt_sgd_config(0.1));
    tt_optim_add_decay_groups(&n->optim, &n->params, 0.1);
}

START_TEST(test_accum_same_as_hand_loop) {
    for (int64_t A = 2; A <= 3; A++) {  // 3: a division that rounds
        net a, b;
        net_init(&a, 2);
        net_init(&b, 2);
        use_sgd(&a);
        use_sgd(&b);
        hand_accum_loop(&a, 5, A);
        tt_trainer tr;
        tt_trainer_opts o = net_opts(&b, 5, A);
        ck_assert_int_eq(tt_trainer_init(&tr, &o, &b.params, &b.optim, &b.sched), TT_OK);
        run_trainer(&b, &tr);
        ck_assert_int_eq(tr.step, 5);
        assert_params_equal(&a, &b);
        tt_trainer_free(&tr);
        net_free(&a);
        net_free(&b);
    }
}
END_TEST

// Two micro-batches of 4 rows make the step of one batch of 8 (the MSE is a mean), to float
// rounding; the step's loss is the mean of the two halves' losses.
START_TEST(test_accum_halves_equal_batch) {
    net a, b;
    net_init(&a, 3);
    net_init(&b, 3);
    tt_trainer ta, tb;
    tt_trainer_opts oa = net_opts(&a, 4, 1), ob = net_opts(&b, 4, 2);
    ck_assert_int_eq(tt_trainer_init(&ta, &oa, &a.params, &a.optim, &a.sched), TT_OK);
    ck_assert_int_eq(tt_trainer_init(&tb, &ob, &b.params, &b.optim, &b.sched), TT_OK);
    ck_assert_int_eq(tb.micro_batches, 2);
    for (int s = 0; s < 4; s++) {
        ck_assert(tt_trainer_next(&ta) && tt_trainer_next(&tb));
        tt_scope_begin();
        tt_trainer_backward(&ta, net_loss(&a, s, rows_of(s), 8));
        double h0 = tt_item(net_loss(&b, s, rows_of(s), 4));
        double h1 = tt_item(net_loss(&b, s, rows_of(s) + 4, 4));
        tt_trainer_backward(&tb, net_loss(&b, s, rows_of(s), 4));
        tt_trainer_backward(&tb, net_loss(&b, s, rows_of(s) + 4, 4));
        tt_scope_end();
        ck_assert(tt_trainer_step(&ta) && tt_trainer_step(&tb));
        ck_assert_double_eq(tb.loss, (h0 + h1) / 2);
        ck_assert_double_eq_tol(ta.loss, tb.loss, 1e-6);
        ck_assert_double_eq_tol(ta.grad_norm, tb.grad_norm, 1e-5);
    }
    for (int i = 0; i < a.params.n; i++) {
        const float *p = tt_data(a.params.items[i].tensor), *q = tt_data(b.params.items[i].tensor);
        for (int64_t j = 0; j < tt_numel(a.params.items[i].tensor); j++)
            ck_assert_float_eq_tol(p[j], q[j], 1e-6f);
    }
    tt_trainer_free(&ta);
    tt_trainer_free(&tb);
    net_free(&a);
    net_free(&b);
}
END_TEST

// ---- checkpoints ----

// The "step" a checkpoint file holds, or -1 when it cannot be loaded.
static int64_t file_step(const char *path) {
    tt_checkpoint ck;
    int64_t step = -1;
    if (tt_ckpt_load(&ck, path) != TT_OK) return -1;
    if (!tt_ckpt_get_i64(&ck, "step", &step)) step = -1;
    tt_ckpt_free(&ck);
    return step;
}

// Val losses 3, 2, 2.5, 1.5, 4 at steps 1..5: .best follows the improvements only, --out
// every eval.
START_TEST(test_best_on_improvement) {
    char dir[128], out[256], best[256];
    tt_test_mkdtemp(dir, sizeof dir, "train_best");
    snprintf(out, sizeof out, "%s/m.ckpt", dir);
    snprintf(best, sizeof best, "%s/m.best.ckpt", dir);
    static const double vals[] = {3, 2, 2.5, 1.5, 4};
    const int64_t best_step[] = {1, 2, 2, 4, 4};
    net n;
    net_init(&n, 4);
    n.vals = vals;
    tt_trainer_opts o = eval_opts(&n, 5, 1, 1, out);
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
    ck_assert_str_eq(tr.best_buf, best);
    while (tt_trainer_next(&tr)) {
        tt_scope_begin();
        tt_trainer_backward(&tr, net_loss(&n, tr.step, rows_of(tr.step), 8));
        tt_scope_end();
        ck_assert(tt_trainer_step(&tr));
        ck_assert(tr.evaluated);
        ck_assert_int_eq(tr.improved, best_step[tr.step - 1] == tr.step);
        ck_assert_int_eq(file_step(out), tr.step);
        ck_assert_int_eq(file_step(best), best_step[tr.step - 1]);
        ck_assert_int_eq(tr.saved_step, tr.step);
    }
    ck_assert_double_eq(tr.best_val_loss, 1.5);
    ck_assert_double_eq(tr.val_loss, 4);
    ck_assert_double_eq(tr.train_loss, net_eval(&n, TT_SPLIT_TRAIN));
    tt_trainer_free(&tr);
    net_free(&n);
    tt_test_rmdir(dir);
}
END_TEST

// .best is written before --out: when .best cannot be written (a directory is in its way),
// --out is not written either, and training stops with the error.
START_TEST(test_best_before_out) {
    char dir[128], out[256], best[256];
    tt_test_mkdtemp(dir, sizeof dir, "train_order");
    snprintf(out, sizeof out, "%s/m", dir);
    snprintf(best, sizeof best, "%s/m.best", dir);
    ck_assert_int_eq(mkdir(best, 0700), 0);
    net n;
    net_init(&n, 5);
    tt_trainer_opts o = eval_opts(&n, 3, 1, 1, out);
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
    run_trainer(&n, &tr);
    ck_assert_int_eq(tr.stop, TT_TRAINER_ERR_SAVE);
    ck_assert_int_eq(tr.step, 1);
    ck_assert_int_eq(tr.saved_step, -1);
    ck_assert_int_eq(tt_test_count_files(dir, "m"), 1);  // only the directory m.best
    ck_assert_int_eq(tt_trainer_exit_code(&tr), 1);
    char kept[512];
    tt_trainer_kept(&tr, kept, sizeof kept);
    ck_assert_ptr_nonnull(strstr(kept, "nothing was saved in this run"));
    tt_trainer_free(&tr);
    net_free(&n);
    rmdir(best);
    tt_test_rmdir(dir);
}
END_TEST

// Resumed from the file written at step 3, a fresh model (other initial weights) takes the
// same steps 4..6 as the run that went on: the same parameters and losses bit for bit; with
// one micro-batch a step and with two. A plateau schedule cannot resume from that file (it
// holds no schedule state).
START_TEST(test_resume_bitwise) {
    char dir[128], out[256], path[256];
    tt_test_mkdtemp(dir, sizeof dir, "train_resume");
    snprintf(out, sizeof out, "%s/m.ckpt", dir);
    for (int64_t accum = 1; accum <= 2; accum++) {
        net a, b;
        net_init(&a, 6);
        net_init(&b, 99);
        tt_trainer_opts o = eval_opts(&a, 3, accum, 3, out);
        tt_trainer ta, tb;
        ck_assert_int_eq(tt_trainer_init(&ta, &o, &a.params, &a.optim, &a.sched), TT_OK);
        run_trainer(&a, &ta);  // stops at 3, its state in out
        ck_assert_int_eq(ta.saved_step, 3);
        ck_assert_int_eq(file_step(out), 3);
        snprintf(path, sizeof path, "%s/on.ckpt", dir);
        ta.opts.out = path;  // then on to 6 (the uninterrupted run), writing elsewhere
        ta.opts.iters = 6;
        ta.stop = TT_TRAINER_RUNNING;
        run_trainer(&a, &ta);

        o = eval_opts(&b, 6, accum, 3, NULL);
        ck_assert_int_eq(tt_trainer_init(&tb, &o, &b.params, &b.optim, &b.sched), TT_OK);
        tt_checkpoint ck;
        ck_assert_int_eq(tt_ckpt_load(&ck, out), TT_OK);
        ck_assert_int_eq(tt_ckpt_restore_params(&ck, "model.", &b.params), TT_OK);
        tt_lr_schedule plateau = tt_lr_plateau(1e-2);  // the cosine run's file has no state
        tt_trainer tp;
        ck_assert_int_eq(tt_trainer_init(&tp, &o, &b.params, &b.optim, &plateau), TT_OK);
        ck_assert_int_eq(tt_trainer_ckpt_restore(&tp, &ck), TT_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(tt_last_error(), "no number 'sched.lr'"));
        tt_trainer_free(&tp);
        ck_assert_int_eq(tt_trainer_ckpt_restore(&tb, &ck), TT_OK);
        tt_ckpt_free(&ck);
        ck_assert_int_eq(tb.step, 3);
        ck_assert_int_eq(b.optim.step, 3);
        run_trainer(&b, &tb);
        ck_assert_int_eq(ta.step, 6);
        ck_assert_int_eq(tb.step, 6);
        ck_assert_double_eq(tb.val_loss, ta.val_loss);
        ck_assert_double_eq(tb.best_val_loss, ta.best_val_loss);
        end_resumed(&a, &b, &ta, &tb);
    }
    tt_test_rmdir(dir);
}
END_TEST

// run_trainer, recording the lr of step s (1-based) in lrs[s - 1].
static void run_recording(net *n, tt_trainer *tr, double *lrs) {
    while (tt_trainer_next(tr)) {
        tt_scope_begin();
        tt_trainer_backward(tr, net_loss(n, tr->step, rows_of(tr->step), 8));
        tt_scope_end();
        if (!tt_trainer_step(tr)) break;
        lrs[tr->step - 1] = tr->lr;
    }
}

// A plateau schedule (patience 1, factor 0.5) fed val losses that stall: the run resumed from
// the file of step 5 takes the lrs and weights of the run that went on, so the schedule's
// state (an lr already halved, one bad observation counted) came back from the file.
START_TEST(test_resume_plateau_bitwise) {
    char dir[128], out[256];
    tt_test_mkdtemp(dir, sizeof dir, "train_plateau");
    snprintf(out, sizeof out, "%s/m.ckpt", dir);
    static const double vals[] = {3, 3, 3, 2.9, 3, 3, 3, 3};
    net a, b;
    net_init(&a, 6);
    net_init(&b, 99);
    a.vals = vals;
    b.vals = vals + 5;  // its evals are steps 6..8
    a.sched = b.sched = tt_lr_plateau(1e-2);
    a.sched.plateau.patience = b.sched.plateau.patience = 1;
    a.sched.plateau.factor = b.sched.plateau.factor = 0.5;
    double on[8], resumed[8];
    tt_trainer_opts o = eval_opts(&a, 5, 1, 1, out);
    tt_trainer ta, tb;
    ck_assert_int_eq(tt_trainer_init(&ta, &o, &a.params, &a.optim, &a.sched), TT_OK);
    run_recording(&a, &ta, on);
    ck_assert_double_eq(ta.sched.state.lr, 5e-3);        // halved after the third eval
    ck_assert_int_eq(ta.sched.state.num_bad_epochs, 1);  // the eval of step 5
    ta.opts.out = NULL;                                  // then on to 8
    ta.opts.iters = 8;
    ta.stop = TT_TRAINER_RUNNING;
    run_recording(&a, &ta, on);

    o = eval_opts(&b, 8, 1, 1, NULL);
    ck_assert_int_eq(tt_trainer_init(&tb, &o, &b.params, &b.optim, &b.sched), TT_OK);
    tt_checkpoint ck;
    ck_assert_int_eq(tt_ckpt_load(&ck, out), TT_OK);
    ck_assert_int_eq(tt_ckpt_restore_params(&ck, "model.", &b.params), TT_OK);
    ck_assert_int_eq(tt_trainer_ckpt_restore(&tb, &ck), TT_OK);
    tt_ckpt_free(&ck);
    ck_assert_double_eq(tb.sched.state.lr, 5e-3);
    ck_assert_int_eq(tb.sched.state.num_bad_epochs, 1);
    run_recording(&b, &tb, resumed);
    ck_assert_int_eq(tb.step, 8);
    for (int s = 5; s < 8; s++) ck_assert_double_eq(resumed[s], on[s]);
    ck_assert_double_eq(on[6], 2.5e-3);  // halved again after the evals of steps 5 and 6
    end_resumed(&a, &b, &ta, &tb);
    tt_test_rmdir(dir);
}
END_TEST

// A onecycle schedule sets AdamW's beta1 to its momentum each step, as PyTorch's OneCycleLR
// writes betas[0]; with cycle_momentum off beta1 stays.
START_TEST(test_onecycle_sets_beta1) {
    for (int cycle = 0; cycle <= 1; cycle++) {
        net n;
        net_init(&n, 3);
        n.sched = tt_lr_onecycle(1e-2, 6);
        n.sched.onecycle.cycle_momentum = cycle;
        tt_trainer_opts o = net_opts(&n, 6, 1);
        tt_trainer tr;
        ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
        while (tt_trainer_next(&tr)) {
            double want = cycle ? tt_lr_momentum_at(&n.sched, tr.step) : 0.9;
            for (int g = 0; g < n.optim.ngroups; g++)
                ck_assert_double_eq(n.optim.groups[g].cfg.beta1, want);
            ck_assert_double_eq(tr.lr, tt_lr_at(&n.sched, tr.step));
            tt_scope_begin();
            tt_trainer_backward(&tr, net_loss(&n, tr.step, rows_of(tr.step), 8));
            tt_scope_end();
            ck_assert(tt_trainer_step(&tr));
        }
        ck_assert_int_eq(tr.step, 6);
        tt_trainer_free(&tr);
        net_free(&n);
    }
}
END_TEST

// ---- stops ----

// A NaN loss at step 3 stops before the update: the weights are those after step 2, the stop
// names step 3 and the saved file.
START_TEST(test_diverged_loss_names_step) {
    char dir[128], out[256];
    tt_test_mkdtemp(dir, sizeof dir, "train_nan");
    snprintf(out, sizeof out, "%s/m.ckpt", dir);
    net a, b;
    net_init(&a, 10);
    net_init(&b, 10);
    hand_loop(&a, 2);
    b.nan_at = 3;
    tt_trainer_opts o = eval_opts(&b, 6, 1, 2, out);
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &b.params, &b.optim, &b.sched), TT_OK);
    run_trainer(&b, &tr);
    ck_assert_int_eq(tr.stop, TT_TRAINER_DIVERGED);
    ck_assert_int_eq(tr.stop_step, 3);
    ck_assert_int_eq(tr.step, 2);
    ck_assert_str_eq(tr.what, "the loss is nan");
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "step 3: the loss is nan, training diverged"));
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "holds step 2"));
    ck_assert_int_eq(tt_trainer_exit_code(&tr), 1);
    ck_assert(!tt_trainer_next(&tr));
    assert_params_equal(&a, &b);
    ck_assert_int_eq(file_step(out), 2);
    tt_trainer_free(&tr);
    net_free(&a);
    net_free(&b);
    tt_test_rmdir(dir);
}
END_TEST

// A NaN val loss at the eval of step 2 stops there, before any save.
START_TEST(test_diverged_eval) {
    static const double vals[] = {NAN};
    net n;
    net_init(&n, 11);
    n.vals = vals;
    tt_trainer_opts o = eval_opts(&n, 6, 1, 2, NULL);
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
    run_trainer(&n, &tr);
    ck_assert_int_eq(tr.stop, TT_TRAINER_DIVERGED);
    ck_assert_int_eq(tr.stop_step, 2);
    ck_assert_str_eq(tr.what, "the eval val loss is nan");
    ck_assert_str_eq(tt_last_error(), "step 2: the eval val loss is nan, training diverged");
    tt_trainer_free(&tr);
    net_free(&n);
}
END_TEST

// SIGINT during step 2: the step finishes, evaluates and saves, then training stops with 130.
START_TEST(test_signal_saves_and_stops) {
    char dir[128], out[256];
    tt_test_mkdtemp(dir, sizeof dir, "train_signal");
    snprintf(out, sizeof out, "%s/m.ckpt", dir);
    net n;
    net_init(&n, 12);
    tt_trainer_opts o = eval_opts(&n, 10, 1, 0, out);
    o.catch_signals = true;
    struct sigaction before, now;
    sigaction(SIGINT, NULL, &before);
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
    while (tt_trainer_next(&tr)) {
        tt_scope_begin();
        tt_trainer_backward(&tr, net_loss(&n, tr.step, rows_of(tr.step), 8));
        tt_scope_end();
        if (tr.step == 1) raise(SIGINT);
        if (!tt_trainer_step(&tr)) break;
    }
    ck_assert_int_eq(tr.stop, TT_TRAINER_SIGNAL);
    ck_assert_int_eq(tr.signal, SIGINT);
    ck_assert_int_eq(tr.step, 2);
    ck_assert(tr.evaluated);
    ck_assert_int_eq(file_step(out), 2);
    ck_assert_int_eq(tt_trainer_exit_code(&tr), 130);
    tt_trainer_free(&tr);
    sigaction(SIGINT, NULL, &now);
    ck_assert(now.sa_handler == before.sa_handler);  // the handler is gone with the trainer
    net_free(&n);
    tt_test_rmdir(dir);
}
END_TEST

// ---- the log ----

START_TEST(test_csv_log) {
    net n;
    net_init(&n, 13);
    FILE *log = tmpfile();
    ck_assert_ptr_nonnull(log);
    tt_trainer_opts o = eval_opts(&n, 3, 1, 2, NULL);
    o.log = log;
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
    double loss[3], lr[3], val[3];
    while (tt_trainer_next(&tr)) {
        tt_scope_begin();
        tt_trainer_backward(&tr, net_loss(&n, tr.step, rows_of(tr.step), 8));
        tt_scope_end();
        ck_assert(tt_trainer_step(&tr));
        loss[tr.step - 1] = tr.loss;
        lr[tr.step - 1] = tr.lr;
        val[tr.step - 1] = tr.val_loss;
    }
    rewind(log);
    for (int s = 1; s <= 3; s++) {
        char line[256], want[256];
        ck_assert_ptr_nonnull(fgets(line, sizeof line, log));
        if (s == 1)  // steps 2 (eval_every) and 3 (the last) evaluate
            snprintf(want, sizeof want, "1,%.9g,,%.9g\n", loss[0], lr[0]);
        else
            snprintf(want, sizeof want, "%d,%.9g,%.9g,%.9g\n", s, loss[s - 1], val[s - 1],
                     lr[s - 1]);
        ck_assert_str_eq(line, want);
    }
    fclose(log);
    tt_trainer_free(&tr);
    net_free(&n);
}
END_TEST

// check_leaks: a step that leaves a tensor alive more than the first one did stops training.
START_TEST(test_leak_stops) {
    net n;
    net_init(&n, 16);
    tt_trainer_opts o = net_opts(&n, 5, 1);
    o.check_leaks = true;
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
    tt_tensor *kept = NULL;
    while (tt_trainer_next(&tr)) {
        tt_scope_begin();
        tt_tensor *loss = net_loss(&n, tr.step, rows_of(tr.step), 8);
        if (tr.step == 2) kept = tt_keep(tt_mul_scalar(n.x, 2.0));  // outlives the step
        tt_trainer_backward(&tr, loss);
        tt_scope_end();
        if (!tt_trainer_step(&tr)) break;
    }
    ck_assert_int_eq(tr.stop, TT_TRAINER_ERR_LEAK);
    ck_assert_int_eq(tr.step, 3);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "after step 3"));
    tt_release(kept);
    tt_trainer_free(&tr);
    net_free(&n);
}
END_TEST

// The progress without a terminal: a line at step 1, every 50 steps and the last.
START_TEST(test_progress_lines) {
    char dir[128], path[256];
    tt_test_mkdtemp(dir, sizeof dir, "train_progress");
    snprintf(path, sizeof path, "%s/err.txt", dir);
    ck_assert_ptr_nonnull(freopen(path, "w", stderr));  // this test's child only
    net n;
    net_init(&n, 17);
    tt_trainer_opts o = net_opts(&n, 120, 1);
    o.progress = true;
    o.tokens_per_step = 8;
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
    run_trainer(&n, &tr);
    ck_assert_int_eq(tr.stop, TT_TRAINER_DONE);
    fflush(stderr);
    FILE *f = fopen(path, "r");
    char line[256];
    const int want[] = {1, 50, 100, 120};
    for (int i = 0; i < 4; i++) {
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
        char head[64];
        snprintf(head, sizeof head, "step %d/120: loss ", want[i]);
        ck_assert_msg(strncmp(line, head, strlen(head)) == 0, "line %d: %s", i, line);
        ck_assert_ptr_nonnull(strstr(line, " ms/step, "));
        ck_assert_ptr_nonnull(strstr(line, " tok/s, ETA "));
    }
    ck_assert_ptr_null(fgets(line, sizeof line, f));
    fclose(f);
    tt_trainer_free(&tr);
    net_free(&n);
    tt_test_rmdir(dir);
}
END_TEST

// The profiler switch: on inside every step (its forward and backward ops counted), off
// between steps and after the loop.
START_TEST(test_profile_steps) {
    net n;
    net_init(&n, 18);
    tt_trainer_opts o = net_opts(&n, 3, 1);
    o.profile = true;
    tt_trainer tr;
    ck_assert_int_eq(tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched), TT_OK);
    tt_profiler_reset();
    while (tt_trainer_next(&tr)) {
        ck_assert(tt_profiler_enabled());
        tt_scope_begin();
        tt_trainer_backward(&tr, net_loss(&n, tr.step, rows_of(tr.step), 8));
        tt_scope_end();
        ck_assert(tt_trainer_step(&tr));
        ck_assert(!tt_profiler_enabled());
    }
    tt_profile_totals t = tt_profiler_totals();
    ck_assert_int_gt(t.calls, 0);
    ck_assert_int_eq(t.calls % 3, 0);  // the same ops in each of the 3 steps
    ck_assert_int_gt(t.backward_calls, 0);
    tt_scope_begin();
    tt_item(net_loss(&n, 0, 0, 8));  // outside the steps: not counted
    tt_scope_end();
    ck_assert_int_eq(tt_profiler_totals().calls, t.calls);
    tt_profiler_reset();
    tt_trainer_free(&tr);
    net_free(&n);
}
END_TEST

// One rank always agrees with itself (tests/train_dist_check.c checks 2 ranks under mpirun).
START_TEST(test_ranks_agree_alone) {
    uint64_t h[2] = {1, 2};
    int rank = 5, item = 5;
    ck_assert_int_eq(tt_trainer_ranks_agree(h, 2, &rank, &item), TT_OK);
    ck_assert_int_eq(rank, -1);
    ck_assert_int_eq(item, -1);
}
END_TEST

// ---- misuse ----

// A trainer with the given accum after one micro-batch of its first step.
static void one_micro_batch(net *n, tt_trainer *tr, int64_t accum) {
    net_init(n, 14);
    tt_trainer_opts o = net_opts(n, 3, accum);
    tt_trainer_init(tr, &o, &n->params, &n->optim, &n->sched);
    tt_trainer_next(tr);
    tt_trainer_backward(tr, net_loss(n, 0, 0, 8));
}

START_TEST(test_abort_too_many_micro_batches) {
    tt_expect_abort("2 micro-batches in one step, but accum is 1");
    net n;
    tt_trainer tr;
    one_micro_batch(&n, &tr, 1);
    tt_trainer_backward(&tr, net_loss(&n, 0, 0, 8));
}
END_TEST

START_TEST(test_abort_onecycle_sgd_without_momentum) {
    tt_expect_abort("the onecycle schedule cycles the momentum, but group 0 (sgd) has none");
    net n;
    net_init(&n, 14);
    tt_optim_free(&n.optim);
    tt_optim_init(&n.optim, tt_sgd_config(1e-2));
    tt_optim_add_decay_groups(&n.optim, &n.params, 0);
    n.sched = tt_lr_onecycle(1e-2, 3);
    tt_trainer_opts o = net_opts(&n, 3, 1);
    tt_trainer tr;
    tt_trainer_init(&tr, &o, &n.params, &n.optim, &n.sched);
    tt_trainer_next(&tr);
}
END_TEST

START_TEST(test_abort_step_without_backward) {
    tt_expect_abort("the step had 1 micro-batches, accum is 2");
    net n;
    tt_trainer tr;
    one_micro_batch(&n, &tr, 2);
    tt_trainer_step(&tr);
}
END_TEST

int main(void) {
    Suite *s = suite_create("train");
    TCase *st = tt_tcase("step");
    tcase_add_test(st, test_same_as_hand_loop);
    tcase_add_test(st, test_accum_same_as_hand_loop);
    tcase_add_test(st, test_accum_halves_equal_batch);
    suite_add_tcase(s, st);
    TCase *ck = tt_tcase("checkpoints");
    tcase_add_test(ck, test_best_on_improvement);
    tcase_add_test(ck, test_best_before_out);
    tcase_add_test(ck, test_resume_bitwise);
    tcase_add_test(ck, test_resume_plateau_bitwise);
    tcase_add_test(ck, test_onecycle_sets_beta1);
    suite_add_tcase(s, ck);
    TCase *sp = tt_tcase("stops");
    tcase_add_test(sp, test_diverged_loss_names_step);
    tcase_add_test(sp, test_diverged_eval);
    tcase_add_test(sp, test_signal_saves_and_stops);
    tcase_add_test(sp, test_csv_log);
    tcase_add_test(sp, test_leak_stops);
    tcase_add_test(sp, test_progress_lines);
    tcase_add_test(sp, test_profile_steps);
    tcase_add_test(sp, test_ranks_agree_alone);
    suite_add_tcase(s, sp);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_too_many_micro_batches, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_step_without_backward, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_onecycle_sgd_without_momentum, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
