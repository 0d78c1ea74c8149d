// tinytorch.c train: the step (gradient accumulation, the mean over ranks, clipping, the
// optimizer, the schedule), eval points with the log, .best and the save, divergence and
// signal stops. The program's loop drives it; it never exits and never writes to stdout.
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train_internal.h"
#include "../autograd/autograd.h"
#include "../autograd/profiler.h"
#include "../dist/dist.h"

// ---- SIGINT, SIGTERM: the first ends training after the step (an eval and a save) ----

static volatile sig_atomic_t stop_signal;
static struct sigaction old_actions[2];
static bool installed[2];

static void on_stop_signal(int sig) { stop_signal = sig; }

// SA_RESETHAND: a second one of the same signal kills at once. A signal ignored on entry (a
// background job of sh, nohup) stays ignored.
static void catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++)
        if (sigaction(sigs[i], NULL, &old_actions[i]) == 0 &&
            old_actions[i].sa_handler != SIG_IGN)
            installed[i] = sigaction(sigs[i], &sa, NULL) == 0;
}

static void restore_stop_signals(void) {
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++)
        if (installed[i]) sigaction(sigs[i], &old_actions[i], NULL);
    installed[0] = installed[1] = false;
}

// ---- setup ----

tt_trainer_opts tt_trainer_opts_default(void) {
    return (tt_trainer_opts){.accum = 1, .eval_train = true, .check_finite = true};
}

static bool lead(void) { return tt_dist_rank() == 0; }

tt_status tt_trainer_init(tt_trainer *tr, const tt_trainer_opts *opts, const tt_params *params,
                          tt_optim *optim, const tt_lr_schedule *sched) {
    TT_CHECK(tr && opts && params && optim, "trainer, opts, params and optim must not be NULL");
    TT_CHECK(opts->iters >= 0 && opts->accum >= 1 && opts->clip >= 0 && opts->eval_every >= 0,
             "need iters >= 0, accum >= 1, clip >= 0, eval_every >= 0 (got %lld, %lld, %g, "
             "%lld)", (long long)opts->iters, (long long)opts->accum, opts->clip,
             (long long)opts->eval_every);
    TT_CHECK(!opts->progress || opts->iters > 0, "progress needs iters > 0 (the bar's end)");
    memset(tr, 0, sizeof *tr);
    tr->opts = *opts;
    tr->params = params;
    tr->optim = optim;
    tr->has_sched = sched != NULL;
    if (sched) tr->sched = *sched;
    tr->accum = opts->accum;
    tr->micro_batches = opts->accum * tt_dist_world_size();
    tr->best_val_loss = INFINITY;
    tr->train_loss = tr->val_loss = tr->loss = tr->grad_norm = NAN;
    tr->lr = optim->lr;
    tr->saved_step = -1;
    tr->live_after_first = -1;
    tr->tty = opts->progress && lead() && isatty(STDERR_FILENO) != 0;
    if (opts->out) tt_trainer_best_path(tr->best_buf, sizeof tr->best_buf, opts->out);
    if (opts->best) snprintf(tr->best_buf, sizeof tr->best_buf, "%s", opts->best);
    if (opts->accum > 1) {
        size_t numel = (size_t)tt_params_numel(params), off = 0;
        tr->sum = malloc((numel ? numel : 1) * sizeof *tr->sum);
        tr->offset = malloc((size_t)(params->n ? params->n : 1) * sizeof *tr->offset);
        if (!tr->sum || !tr->offset) {
            tt_trainer_free(tr);
            return tt_set_error(TT_ERR_NOMEM, "out of memory for the gradient sum of "
                                "accumulation (%zu floats)", numel);
        }
        for (int i = 0; i < params->n; i++) {
            tr->offset[i] = off;
            off += (size_t)tt_numel(params->items[i].tensor);
        }
    }
    stop_signal = 0;
    if (opts->catch_signals) catch_stop_signals();
    return TT_OK;
}

void tt_trainer_free(tt_trainer *tr) {
    if (!tr) return;
    if (tr->opts.catch_signals) restore_stop_signals();
    free(tr->sum);
    free(tr->offset);
    tr->sum = NULL;
    tr->offset = NULL;
}

// ---- the step ----

// OneCycleLR's momentum, as PyTorch's writes it each step into every group: beta1 where the
// group's kind has betas (Adam, AdamW, Lion), else its momentum (SGD, RMSprop, Muon; the
// optimizer reads its groups' configs at every step).
static void set_momentum(tt_trainer *tr) {
    double m = tt_lr_momentum_at(&tr->sched, tr->step);
    for (int g = 0; g < tr->optim->ngroups; g++) {
        tt_optim_config *c = &tr->optim->groups[g].cfg;
        bool betas = c->kind == TT_OPTIM_ADAM || c->kind == TT_OPTIM_ADAMW ||
                     c->kind == TT_OPTIM_LION;
        TT_CHECK(betas || c->kind == TT_OPTIM_MUON || c->momentum > 0, "the onecycle schedule "
                 "cycles the momentum, but group %d (%s) has none; give it a momentum > 0 or set "
                 "the schedule's onecycle.cycle_momentum = false", g, tt_optim_kind_name(c->kind));
        if (betas)
            c->beta1 = m;
        else
            c->momentum = m;
    }
}

static void begin_step(tt_trainer *tr) {
    if (tr->has_sched) {
        tr->lr = tt_lr_at(&tr->sched, tr->step);
        tt_optim_set_lr(tr->optim, tr->lr);
        if (tr->sched.kind == TT_LR_ONECYCLE && tr->sched.onecycle.cycle_momentum) set_momentum(tr);
    } else {
        tr->lr = tr->optim->lr;
    }
    tr->t0 = tt__train_now();
    if (tr->opts.profile) tt_profiler_begin();
    tr->in_step = true;
    tr->micro = 0;
    tr->loss_sum = 0;
    tr->evaluated = tr->improved = false;
}

bool tt_trainer_next(tt_trainer *tr) {
    if (tr->stop != TT_TRAINER_RUNNING) return false;
    if (tr->opts.iters > 0 && tr->step >= tr->opts.iters) {
        tr->stop = TT_TRAINER_DONE;
        return false;
    }
    begin_step(tr);
    return true;
}

// The gradient of parameter i as the (f32, contiguous) data accumulation works on.
static float *accum_grad(const tt_trainer *tr, int i, tt_tensor *g, size_t *n) {
    TT_CHECK_IN("tt_trainer_backward", g && g->dtype == TT_F32 && tt_is_contiguous(g),
                "gradient accumulation needs a contiguous f32 gradient for '%s' (it has %s); "
                "train f32 parameters that all take part in the loss",
                tr->params->items[i].name, g ? "another dtype or layout" : "none");
    *n = (size_t)tt_numel(g);
    return tt_data(g);  // (numel)
}

// The last micro-batch of a step: grad = (sum of the others + grad) / accum. The one place
// this average is written (both the plain and the overlapped all-reduce use it).
static void accum_finish(const tt_trainer *tr, int i, tt_tensor *g) {
    size_t n;
    float *d = accum_grad(tr, i, g, &n);
    const float *s = tr->sum + tr->offset[i];
    for (size_t j = 0; j < n; j++) d[j] = (s[j] + d[j]) / (float)tr->accum;
    tt_bump_version(g, "grad-accum");
}

static void accum_prepare(int i, tt_tensor *g, void *ctx) { accum_finish(ctx, i, g); }

// After micro-batch a < accum - 1: its gradients into the running sum, then zero grad.
static void accum_add(tt_trainer *tr, int64_t a) {
    const tt_params *p = tr->params;
    for (int i = 0; i < p->n; i++) {
        size_t n;
        const float *d = accum_grad(tr, i, p->items[i].tensor->grad, &n);
        float *s = tr->sum + tr->offset[i];
        if (a == 0) memcpy(s, d, n * sizeof *d);
        else for (size_t j = 0; j < n; j++) s[j] += d[j];
    }
    tt_params_zero_grad(p);
}

static bool overlapping(const tt_trainer *tr) {
    return tr->opts.overlap && tt_dist_world_size() > 1;
}

void tt_trainer_backward(tt_trainer *tr, tt_tensor *loss) {
    TT_CHECK(tr && loss, "trainer and loss must not be NULL");
    if (!tr->in_step) begin_step(tr);
    TT_CHECK(tr->micro < tr->accum, "%lld micro-batches in one step, but accum is %lld; call "
             "tt_trainer_step after accum of them", (long long)tr->micro + 1,
             (long long)tr->accum);
    double v = tt_item(loss);
    tr->loss_sum = tr->micro == 0 ? v : tr->loss_sum + v;
    bool last = tr->micro == tr->accum - 1;
    // Overlapped: the last backward starts the all-reduce (and finishes the average as it goes).
    if (last && overlapping(tr) &&
        tt_dist_overlap_begin(tr->params, tr->accum > 1 ? accum_prepare : NULL, tr) != TT_OK)
        tr->stop = TT_TRAINER_ERR_DIST;
    tt_backward(loss);
    if (!last) accum_add(tr, tr->micro);
    else if (tr->accum > 1 && !overlapping(tr))
        for (int i = 0; i < tr->params->n; i++)
            accum_finish(tr, i, tr->params->items[i].tensor->grad);
    tr->micro++;
}

// Records a stop; false, for `return fail(...)`.
static bool fail(tt_trainer *tr, tt_trainer_stop why) {
    tr->stop = why;
    tt_trainer_clear_progress(tr);
    return false;
}

static bool diverged(tt_trainer *tr, int64_t step) {
    char kept[9000];
    tt_trainer_kept(tr, kept, sizeof kept);
    tr->stop_step = step;
    if (tr->opts.out)
        tt_set_error(TT_ERR_ARG, "step %lld: %s, training diverged (%s)", (long long)step,
                     tr->what, kept);
    else
        tt_set_error(TT_ERR_ARG, "step %lld: %s, training diverged", (long long)step, tr->what);
    return fail(tr, TT_TRAINER_DIVERGED);
}

// The step's gradients become the mean over the ranks, and its loss the mean over every
// micro-batch of every rank.
static bool reduce(tt_trainer *tr) {
    if (tr->micro_batches == 1) {
        tr->loss = tr->loss_sum;
        return true;
    }
    tt_status st = overlapping(tr) ? tt_dist_overlap_end(tr->params)
                                   : tt_dist_allreduce_grads(tr->params);
    if (st != TT_OK || tt_dist_allreduce_f64(&tr->loss_sum, 1) != TT_OK)
        return fail(tr, TT_TRAINER_ERR_DIST);
    tr->loss = tr->loss_sum / (double)tr->micro_batches;
    return true;
}

// Norm, clip, the divergence check (before the update: the weights in memory are still those
// of the last step), the update.
static bool update(tt_trainer *tr) {
    const tt_trainer_opts *o = &tr->opts;
    tt_scope_begin();
    tr->grad_norm = o->clip > 0 ? tt_clip_grad_norm(tr->params, o->clip)
                    : o->check_finite ? tt_grad_norm(tr->params) : NAN;
    if (o->check_finite && (!isfinite(tr->loss) || !isfinite(tr->grad_norm))) {
        tt_scope_end();
        bool l = isfinite(tr->loss);
        snprintf(tr->what, sizeof tr->what, "the %s is %g", l ? "gradient norm" : "loss",
                 l ? tr->grad_norm : tr->loss);
        return diverged(tr, tr->step + 1);
    }
    tt_optim_step(tr->optim);
    tt_optim_zero_grad(tr->optim);
    tt_scope_end();
    return true;
}

// A step that ends with more live tensors than the first step left leaks.
static bool check_leaks(tt_trainer *tr) {
    int64_t live = tt_live_tensors();
    if (tr->live_after_first < 0) tr->live_after_first = live;
    else if (live != tr->live_after_first) {
        tt_set_error(TT_ERR_ARG, "%lld live tensors after step %lld, %lld after the first",
                     (long long)live, (long long)tr->step, (long long)tr->live_after_first);
        return fail(tr, TT_TRAINER_ERR_LEAK);
    }
    return true;
}

// The eval losses and every weight must be finite (the update may have made them NaN).
static bool check_eval_finite(tt_trainer *tr) {
    const char *bad = tt_params_nonfinite(tr->params, NULL);
    bool tf = !tr->opts.eval_train || isfinite(tr->train_loss);
    if (tr->opts.eval && (!tf || !isfinite(tr->val_loss)))
        snprintf(tr->what, sizeof tr->what, "the eval %s loss is %g", tf ? "val" : "train",
                 tf ? tr->val_loss : tr->train_loss);
    else if (bad)
        snprintf(tr->what, sizeof tr->what, "the weight '%s' holds NaN or Inf", bad);
    else
        return true;
    return diverged(tr, tr->step);
}

// Eval, checks, the log row, the best so far, the schedule's observation, the hook, the save
// (best first).
static bool eval_point(tt_trainer *tr) {
    const tt_trainer_opts *o = &tr->opts;
    if (o->eval) {
        if (o->eval_train) tr->train_loss = o->eval(o->ctx, TT_SPLIT_TRAIN);
        tr->val_loss = o->eval(o->ctx, TT_SPLIT_VAL);
        tr->evaluated = true;
    }
    tt_trainer_clear_progress(tr);
    if (o->check_finite && !check_eval_finite(tr)) return false;
    if (o->log && lead())
        fprintf(o->log, "%lld,%.9g,%.9g,%.9g\n", (long long)tr->step, tr->loss, tr->val_loss,
                tr->lr);
    tr->improved = tr->val_loss < tr->best_val_loss;
    if (tr->improved) tr->best_val_loss = tr->val_loss;
    // ReduceLROnPlateau's step(val_loss), at the evals of the eval_every grid only (at iters
    // when it is 0): the eval at the end of a shorter run or after a signal is not one an
    // uninterrupted run makes, so a resumed run takes the same lrs.
    bool grid = o->eval_every > 0 ? tr->step % o->eval_every == 0 : tr->step == o->iters;
    if (o->eval && tr->has_sched && grid) tt_lr_observe(&tr->sched, tr->val_loss);
    if (o->on_eval && o->on_eval(tr, o->ctx) != TT_OK) return fail(tr, TT_TRAINER_ERR_HOOK);
    if (o->verbose && o->eval && lead()) {
        if (o->eval_train)
            fprintf(stderr, "step %lld: train loss %.4f, val loss %.4f%s\n", (long long)tr->step,
                    tr->train_loss, tr->val_loss, tr->improved ? " (best so far)" : "");
        else
            fprintf(stderr, "step %lld: val loss %.4f%s\n", (long long)tr->step, tr->val_loss,
                    tr->improved ? " (best so far)" : "");
    }
    if (o->out && o->fill && tt_trainer_save(tr, tr->improved) != TT_OK)
        return fail(tr, TT_TRAINER_ERR_SAVE);
    return true;
}

// Buffered writes fail late: the log is checked after each flush (a full disk, /dev/full).
static bool check_log(tt_trainer *tr) {
    FILE *log = tr->opts.log;
    if (!log || !lead() || (fflush(log) == 0 && !ferror(log))) return true;
    int e = errno ? errno : EIO;
    snprintf(tr->what, sizeof tr->what, "%s", strerror(e));
    tt_set_error(TT_ERR_IO, "cannot write the log: %s (training stopped at step %lld)",
                 tr->what, (long long)tr->step);
    return fail(tr, TT_TRAINER_ERR_LOG);
}

bool tt_trainer_step(tt_trainer *tr) {
    TT_CHECK(tr, "trainer must not be NULL");
    const tt_trainer_opts *o = &tr->opts;
    TT_CHECK(tr->stop != TT_TRAINER_RUNNING || tr->micro == tr->accum, "the step had %lld "
             "micro-batches, accum is %lld: call tt_trainer_backward accum times per step",
             (long long)tr->micro, (long long)tr->accum);
    bool ok = tr->stop == TT_TRAINER_RUNNING && reduce(tr) && update(tr);
    if (o->profile) tt_profiler_end();
    tr->in_step = false;
    if (!ok) return false;
    tr->train_seconds += tt__train_now() - tr->t0;
    tr->step++;
    tr->steps_run++;
    if (o->check_leaks && !check_leaks(tr)) return false;
    bool eval_now = (o->eval_every > 0 && tr->step % o->eval_every == 0) ||
                    (o->iters > 0 && tr->step == o->iters) || stop_signal;
    if (o->log && lead() && !eval_now)
        fprintf(o->log, "%lld,%.9g,,%.9g\n", (long long)tr->step, tr->loss, tr->lr);
    if (o->progress && lead()) {
        double tok_s = (double)o->tokens_per_step * (double)tr->steps_run / tr->train_seconds;
        tt__progress_step(tr, tt_trainer_ms_per_step(tr), tok_s);
    }
    if (eval_now && !eval_point(tr)) return false;
    if (!check_log(tr)) return false;
    if (stop_signal) {
        tr->signal = stop_signal;
        return fail(tr, TT_TRAINER_SIGNAL);
    }
    return true;
}

// ---- checkpoints ----

tt_status tt_trainer_save(tt_trainer *tr, bool best) {
    const tt_trainer_opts *o = &tr->opts;
    TT_CHECK(o->out && o->fill, "tt_trainer_save needs opts.out and opts.fill");
    if (!lead()) {  // rank 0 saved it (or stopped every rank)
        tr->saved_step = tr->step;
        return TT_OK;
    }
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    o->fill(&ck, tr, o->ctx);
    tt_status st = best ? tt_ckpt_save(&ck, tr->best_buf) : TT_OK;
    if (st == TT_OK) st = tt_ckpt_save(&ck, o->out);
    if (st == TT_OK) tr->saved_step = tr->step;
    tt_ckpt_free(&ck);
    tt_trainer_clear_progress(tr);
    if (st != TT_OK) return st;
    if (o->verbose)
        fprintf(stderr, "saved %s (step %lld, val loss %.4f, params fingerprint %016llx)%s%s%s\n",
                o->out, (long long)tr->step, tr->val_loss,
                (unsigned long long)tt_params_fingerprint(tr->params), best ? " and " : "",
                best ? tr->best_buf : "", best ? " (the best so far)" : "");
    return TT_OK;
}

void tt_trainer_ckpt_fill_optim(const tt_trainer *tr, tt_checkpoint *ck) {
    tt_ckpt_add_optim(ck, tr->optim);
}

// ReduceLROnPlateau's state: the keys and the fields they hold.
static const char *const plateau_f64_keys[2] = {"sched.lr", "sched.best"};
static const char *const plateau_i64_keys[3] = {"sched.num_bad_epochs", "sched.cooldown_counter",
                                                "sched.last_epoch"};

static bool has_sched_state(const tt_trainer *tr) {
    return tr->has_sched && tr->sched.kind == TT_LR_PLATEAU;
}

void tt_trainer_ckpt_fill_sched(const tt_trainer *tr, tt_checkpoint *ck) {
    if (!has_sched_state(tr)) return;
    const tt_lr_plateau_state *st = &tr->sched.state;
    const double f[2] = {st->lr, st->best};
    const int64_t i[3] = {st->num_bad_epochs, st->cooldown_counter, st->last_epoch};
    for (int k = 0; k < 2; k++) tt_ckpt_set_f64(ck, plateau_f64_keys[k], f[k]);
    for (int k = 0; k < 3; k++) tt_ckpt_set_i64(ck, plateau_i64_keys[k], i[k]);
}

tt_status tt_trainer_ckpt_restore_sched(tt_trainer *tr, const tt_checkpoint *ck) {
    if (!has_sched_state(tr)) return TT_OK;
    double f[2];
    int64_t i[3];
    for (int k = 0; k < 2; k++)
        if (!tt_ckpt_get_f64(ck, plateau_f64_keys[k], &f[k]) || isnan(f[k]))
            return tt_set_error(TT_ERR_FORMAT,
                                "no number '%s': the checkpoint holds no "
                                "plateau schedule state (it was saved with another schedule)",
                                plateau_f64_keys[k]);
    for (int k = 0; k < 3; k++)
        if (!tt_ckpt_get_i64(ck, plateau_i64_keys[k], &i[k]) || i[k] < 0)
            return tt_set_error(TT_ERR_FORMAT,
                                "no valid integer '%s' of the plateau "
                                "schedule's state",
                                plateau_i64_keys[k]);
    if (!isfinite(f[0]) || f[0] < 0)
        return tt_set_error(TT_ERR_FORMAT, "sched.lr is %g; it must be finite and >= 0", f[0]);
    tr->sched.state = (tt_lr_plateau_state){.lr = f[0],
                                            .best = f[1],
                                            .num_bad_epochs = i[0],
                                            .cooldown_counter = i[1],
                                            .last_epoch = i[2]};
    return TT_OK;
}

void tt_trainer_ckpt_fill(const tt_trainer *tr, tt_checkpoint *ck) {
    tt_trainer_ckpt_fill_optim(tr, ck);
    tt_trainer_ckpt_fill_sched(tr, ck);
    tt_ckpt_set_i64(ck, "step", tr->step);
    tt_ckpt_set_f64(ck, "best_val_loss", tr->best_val_loss);
    tt_ckpt_set_f64(ck, "train_loss", tr->train_loss);
    tt_ckpt_set_f64(ck, "val_loss", tr->val_loss);
}

tt_status tt_trainer_ckpt_restore(tt_trainer *tr, const tt_checkpoint *ck) {
    int64_t step;
    double v[3];
    const char *keys[] = {"best_val_loss", "train_loss", "val_loss"};
    if (!tt_ckpt_get_i64(ck, "step", &step) || step < 0)
        return tt_set_error(TT_ERR_FORMAT, "no valid integer 'step'");
    for (int i = 0; i < 3; i++)
        if (!tt_ckpt_get_f64(ck, keys[i], &v[i]))
            return tt_set_error(TT_ERR_FORMAT, "no number '%s'", keys[i]);
    tt_status st = tt_ckpt_restore_optim(ck, tr->optim);
    if (st == TT_OK) st = tt_trainer_ckpt_restore_sched(tr, ck);
    if (st != TT_OK) return st;
    tr->step = step;
    // A NaN (or -inf) best is no best: no loss compares below it, so none would be kept again.
    tr->best_val_loss = v[0] > -INFINITY ? v[0] : INFINITY;
    tr->train_loss = v[1];
    tr->val_loss = v[2];
    return TT_OK;
}

// ---- several ranks ----

tt_status tt_trainer_ranks_agree(const uint64_t *hashes, int n, int *rank, int *item) {
    TT_CHECK(hashes && n > 0 && rank && item, "need n > 0 hashes and the rank and item outputs");
    *rank = *item = -1;
    int ranks = tt_dist_world_size();
    if (ranks == 1) return TT_OK;
    uint64_t *all = malloc((size_t)ranks * (size_t)n * sizeof *all);
    if (!all) return tt_set_error(TT_ERR_NOMEM, "out of memory for %d ranks' hashes", ranks);
    if (tt_dist_allgather(all, hashes, (size_t)n * sizeof *hashes) != TT_OK) {
        free(all);
        return TT_ERR_IO;
    }
    for (int r = 1; r < ranks && *rank < 0; r++)
        for (int i = 0; i < n && *rank < 0; i++)
            if (all[(size_t)r * (size_t)n + (size_t)i] != all[i]) *rank = r, *item = i;
    free(all);
    if (*rank < 0) return TT_OK;
    return tt_set_error(TT_ERR_MISMATCH, "rank %d's item %d differs from rank 0's", *rank, *item);
}

// ---- names and figures ----

void tt_trainer_best_path(char *buf, size_t n, const char *out) {
    const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
    const char *dot = strrchr(base, '.');
    if (dot && dot != base) snprintf(buf, n, "%.*s.best%s", (int)(dot - out), out, dot);
    else snprintf(buf, n, "%s.best", out);
}

void tt_trainer_kept(const tt_trainer *tr, char *buf, size_t n) {
    const char *out = tr->opts.out ? tr->opts.out : "(no --out)";
    if (tr->saved_step >= 0 && tr->opts.eval)
        snprintf(buf, n, "%s holds step %lld, %s the best state", out,
                 (long long)tr->saved_step, tr->best_buf);
    else if (tr->saved_step >= 0)
        snprintf(buf, n, "%s holds step %lld", out, (long long)tr->saved_step);
    else
        snprintf(buf, n, "nothing was saved in this run, %s is untouched", out);
}

int tt_trainer_exit_code(const tt_trainer *tr) {
    switch (tr->stop) {
    case TT_TRAINER_RUNNING:
    case TT_TRAINER_DONE: return 0;
    case TT_TRAINER_SIGNAL: return 128 + tr->signal;
    default: return 1;
    }
}

double tt_trainer_ms_per_step(const tt_trainer *tr) {
    return tr->steps_run ? 1000.0 * tr->train_seconds / (double)tr->steps_run : 0;
}
