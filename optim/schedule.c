// Learning-rate schedules: constant, step decay, nanoGPT's warmup + cosine, nanochat's
// warmup-stable-decay, PyTorch's OneCycleLR (with its momentum), ReduceLROnPlateau and
// LambdaLR. They do not touch an optimizer (pass the value to tt_optim_set_lr); only
// ReduceLROnPlateau keeps state, in the schedule itself (tt_lr_observe).
#include "optim.h"

#include <math.h>

static const double PI = 3.14159265358979323846;

// ---- checks ----

static void check_wsd(const tt_lr_schedule *s) {
    TT_CHECK(s->warmup_iters >= 0 && s->warmdown_iters >= 0 && s->total_iters >= 1 &&
                 s->warmdown_iters <= s->total_iters,
             "wsd schedule needs warmup_iters >= 0 and 0 <= warmdown_iters <= total_iters, "
             "total_iters >= 1, got warmup_iters=%lld warmdown_iters=%lld total_iters=%lld; "
             "shorten the warmdown or lengthen the run",
             (long long)s->warmup_iters, (long long)s->warmdown_iters, (long long)s->total_iters);
    TT_CHECK(s->final_frac >= 0 && s->final_frac <= 1,
             "wsd schedule needs final_frac in [0, 1] (the lr at the end is lr * final_frac), "
             "got %g",
             s->final_frac);
}

static void check_onecycle(const tt_lr_schedule *s) {
    const tt_lr_onecycle_opts *c = &s->onecycle;
    TT_CHECK(c->total_steps >= 1,
             "onecycle schedule needs total_steps >= 1, got %lld; give the run's steps",
             (long long)c->total_steps);
    TT_CHECK(c->pct_start >= 0 && c->pct_start <= 1,
             "onecycle schedule needs pct_start in [0, 1], got %g", c->pct_start);
    TT_CHECK((unsigned)c->anneal < TT_LR_ANNEAL_COUNT,
             "onecycle anneal must be TT_LR_ANNEAL_COS or TT_LR_ANNEAL_LINEAR, got %d",
             (int)c->anneal);
    TT_CHECK(isfinite(c->div_factor) && c->div_factor > 0 && isfinite(c->final_div_factor) &&
                 c->final_div_factor > 0,
             "onecycle schedule needs div_factor > 0 and final_div_factor > 0, got %g and %g",
             c->div_factor, c->final_div_factor);
    TT_CHECK(!c->cycle_momentum || (c->base_momentum >= 0 && c->base_momentum < 1 &&
                                    c->max_momentum >= 0 && c->max_momentum < 1),
             "onecycle momentum needs base_momentum and max_momentum in [0, 1), got %g and %g; "
             "fix them or set cycle_momentum = false",
             c->base_momentum, c->max_momentum);
}

static void check_plateau(const tt_lr_schedule *s) {
    const tt_lr_plateau_opts *p = &s->plateau;
    TT_CHECK((unsigned)p->mode < TT_LR_MODE_COUNT &&
                 (unsigned)p->threshold_mode < TT_LR_THRESHOLD_MODE_COUNT,
             "plateau mode must be TT_LR_MODE_MIN or _MAX and threshold_mode "
             "TT_LR_THRESHOLD_REL or _ABS, got %d and %d",
             (int)p->mode, (int)p->threshold_mode);
    TT_CHECK(p->factor >= 0 && p->factor < 1,
             "plateau factor must be in [0, 1) (the lr is multiplied by it), got %g", p->factor);
    TT_CHECK(p->patience >= 0 && p->cooldown >= 0,
             "plateau patience and cooldown must be >= 0, got %lld and %lld",
             (long long)p->patience, (long long)p->cooldown);
    TT_CHECK(isfinite(p->threshold) && isfinite(p->min_lr) && p->min_lr >= 0 && isfinite(p->eps) &&
                 p->eps >= 0,
             "plateau threshold must be finite and min_lr, eps finite and >= 0, got "
             "threshold=%g min_lr=%g eps=%g",
             p->threshold, p->min_lr, p->eps);
    TT_CHECK(isfinite(s->state.lr) && s->state.lr >= 0 && !isnan(s->state.best) &&
                 s->state.num_bad_epochs >= 0 && s->state.cooldown_counter >= 0,
             "plateau state is invalid (lr %g, best %g); start it with tt_lr_plateau", s->state.lr,
             s->state.best);
}

// ---- constructors ----

tt_lr_schedule tt_lr_constant(double lr) {
    return (tt_lr_schedule){.kind = TT_LR_CONSTANT, .lr = lr};
}

tt_lr_schedule tt_lr_step(double lr, int64_t step_size, double gamma) {
    return (tt_lr_schedule){.kind = TT_LR_STEP, .lr = lr, .step_size = step_size,
                            .gamma = gamma};
}

tt_lr_schedule tt_lr_cosine(double lr, int64_t warmup_iters, int64_t decay_iters,
                            double min_lr) {
    return (tt_lr_schedule){.kind = TT_LR_COSINE, .lr = lr, .warmup_iters = warmup_iters,
                            .decay_iters = decay_iters, .min_lr = min_lr};
}

tt_lr_schedule tt_lr_wsd(double lr, int64_t warmup_iters, int64_t warmdown_iters,
                         int64_t total_iters, double final_frac) {
    tt_lr_schedule s = {.kind = TT_LR_WSD,
                        .lr = lr,
                        .warmup_iters = warmup_iters,
                        .warmdown_iters = warmdown_iters,
                        .total_iters = total_iters,
                        .final_frac = final_frac};
    check_wsd(&s);
    return s;
}

tt_lr_schedule tt_lr_onecycle(double lr, int64_t total_steps) {
    tt_lr_schedule s = {.kind = TT_LR_ONECYCLE, .lr = lr};
    s.onecycle = (tt_lr_onecycle_opts){.total_steps = total_steps,
                                       .pct_start = 0.3,
                                       .anneal = TT_LR_ANNEAL_COS,
                                       .div_factor = 25,
                                       .final_div_factor = 1e4,
                                       .three_phase = false,
                                       .cycle_momentum = true,
                                       .base_momentum = 0.85,
                                       .max_momentum = 0.95};
    check_onecycle(&s);
    return s;
}

void tt_lr_plateau_reset(tt_lr_schedule *s) {
    TT_CHECK(s && s->kind == TT_LR_PLATEAU,
             "tt_lr_plateau_reset needs a schedule made by tt_lr_plateau");
    s->state = (tt_lr_plateau_state){
        .lr = s->lr, .best = s->plateau.mode == TT_LR_MODE_MAX ? -INFINITY : INFINITY};
}

tt_lr_schedule tt_lr_plateau(double lr) {
    tt_lr_schedule s = {.kind = TT_LR_PLATEAU, .lr = lr};
    s.plateau = (tt_lr_plateau_opts){.mode = TT_LR_MODE_MIN,
                                     .factor = 0.1,
                                     .patience = 10,
                                     .threshold = 1e-4,
                                     .threshold_mode = TT_LR_THRESHOLD_REL,
                                     .cooldown = 0,
                                     .min_lr = 0,
                                     .eps = 1e-8};
    tt_lr_plateau_reset(&s);
    return s;
}

tt_lr_schedule tt_lr_lambda(double lr, tt_lr_fn fn, void *ctx) {
    TT_CHECK(fn, "tt_lr_lambda needs a function giving the lr factor of an iteration");
    return (tt_lr_schedule){.kind = TT_LR_LAMBDA, .lr = lr, .fn = fn, .ctx = ctx};
}

// ---- evaluation ----

// nanochat's get_lr_multiplier, then lr * final_frac past total_iters.
static double wsd_at(const tt_lr_schedule *s, int64_t it) {
    check_wsd(s);
    int64_t n = s->total_iters, w = s->warmup_iters, d = s->warmdown_iters;
    double mult;
    if (it < w)
        mult = (double)(it + 1) / (double)w;
    else if (it <= n - d)
        mult = 1.0;
    else if (it > n)
        mult = s->final_frac;
    else {
        double progress = (double)(n - it) / (double)d;
        mult = progress * 1.0 + (1 - progress) * s->final_frac;
    }
    return s->lr * mult;
}

// OneCycleLR's _annealing_cos and _annealing_linear, from start to end as pct goes 0 -> 1.
static double anneal(tt_lr_anneal a, double start, double end, double pct) {
    if (a == TT_LR_ANNEAL_LINEAR) return (end - start) * pct + start;
    double cos_out = cos(PI * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
}

// OneCycleLR.get_lr's phase walk at step it: the lr, or the momentum when momentum is set.
static double onecycle_at(const tt_lr_schedule *s, int64_t it, bool momentum) {
    const tt_lr_onecycle_opts *c = &s->onecycle;
    check_onecycle(s);
    TT_CHECK(it <= c->total_steps,
             "onecycle schedule: iteration %lld is past total_steps %lld; make total_steps "
             "the run's number of steps",
             (long long)it, (long long)c->total_steps);
    double total = (double)c->total_steps, initial = s->lr / c->div_factor;
    double min_lr = initial / c->final_div_factor, lo = c->base_momentum, hi = c->max_momentum;
    // Each phase: its end step, its lr from -> to and its momentum from -> to.
    double p2[2][5] = {{c->pct_start * total - 1, initial, s->lr, hi, lo},
                       {total - 1, s->lr, min_lr, lo, hi}};
    double p3[3][5] = {{c->pct_start * total - 1, initial, s->lr, hi, lo},
                       {2 * c->pct_start * total - 2, s->lr, initial, lo, hi},
                       {total - 1, initial, min_lr, hi, hi}};
    double(*ph)[5] = c->three_phase ? p3 : p2;
    int n = c->three_phase ? 3 : 2;
    double start_step = 0;
    for (int i = 0;; i++) {
        double end_step = ph[i][0];
        if ((double)it <= end_step || i == n - 1) {
            TT_CHECK(end_step != start_step,
                     "onecycle schedule: phase %d has no steps (pct_start %g of total_steps "
                     "%lld); change pct_start or total_steps",
                     i + 1, c->pct_start, (long long)c->total_steps);
            double pct = ((double)it - start_step) / (end_step - start_step);
            return momentum ? anneal(c->anneal, ph[i][3], ph[i][4], pct)
                            : anneal(c->anneal, ph[i][1], ph[i][2], pct);
        }
        start_step = end_step;
    }
}

static double cosine_at(const tt_lr_schedule *s, int64_t it) {
    // nanoGPT's get_lr (train.py).
    int64_t w = s->warmup_iters, d = s->decay_iters;
    TT_CHECK(w >= 0 && d > w && isfinite(s->min_lr) && s->min_lr >= 0,
             "cosine schedule needs 0 <= warmup_iters < decay_iters and min_lr >= 0, "
             "got warmup_iters=%lld decay_iters=%lld min_lr=%g",
             (long long)w, (long long)d, s->min_lr);
    if (it < w) return s->lr * (double)(it + 1) / (double)(w + 1);
    if (it > d) return s->min_lr;
    double ratio = (double)(it - w) / (double)(d - w);
    double coeff = 0.5 * (1.0 + cos(PI * ratio));
    return s->min_lr + coeff * (s->lr - s->min_lr);
}

static double lambda_at(const tt_lr_schedule *s, int64_t it) {
    TT_CHECK(s->fn, "lambda schedule has no function; make it with tt_lr_lambda");
    double f = s->fn(it, s->ctx);
    TT_CHECK(isfinite(f) && f >= 0,
             "lambda schedule: the function gave factor %g at iteration %lld; it must "
             "return a finite factor >= 0 of the base lr",
             f, (long long)it);
    return s->lr * f;
}

double tt_lr_at(const tt_lr_schedule *s, int64_t it) {
    TT_CHECK(it >= 0, "iteration must be >= 0, got %lld", (long long)it);
    TT_CHECK(isfinite(s->lr) && s->lr >= 0, "schedule lr must be finite and >= 0, got %g", s->lr);
    switch (s->kind) {
        case TT_LR_CONSTANT:
            return s->lr;
        case TT_LR_STEP:
            // torch.optim.lr_scheduler.StepLR: lr * gamma^(it // step_size)
            TT_CHECK(s->step_size > 0 && isfinite(s->gamma) && s->gamma >= 0,
                     "step schedule needs step_size > 0 and gamma >= 0, got step_size=%lld "
                     "gamma=%g", (long long)s->step_size, s->gamma);
            return s->lr * pow(s->gamma, (double)(it / s->step_size));
        case TT_LR_COSINE:
            return cosine_at(s, it);
        case TT_LR_WSD:
            return wsd_at(s, it);
        case TT_LR_ONECYCLE:
            return onecycle_at(s, it, false);
        case TT_LR_PLATEAU:
            check_plateau(s);
            return s->state.lr;
        case TT_LR_LAMBDA:
            return lambda_at(s, it);
        default:
            TT_CHECK(false,
                     "unknown schedule kind %d (make one with a tt_lr_* constructor: "
                     "tt_lr_cosine, tt_lr_wsd, tt_lr_onecycle, ...)",
                     (int)s->kind);
    }
}

double tt_lr_momentum_at(const tt_lr_schedule *s, int64_t it) {
    TT_CHECK(s && s->kind == TT_LR_ONECYCLE && s->onecycle.cycle_momentum,
             "only a onecycle schedule with cycle_momentum gives a momentum; check "
             "s.kind == TT_LR_ONECYCLE && s.onecycle.cycle_momentum first");
    TT_CHECK(it >= 0, "iteration must be >= 0, got %lld", (long long)it);
    return onecycle_at(s, it, true);
}

// ---- ReduceLROnPlateau ----

// ReduceLROnPlateau.is_better.
static bool plateau_better(const tt_lr_plateau_opts *p, double a, double best) {
    bool rel = p->threshold_mode == TT_LR_THRESHOLD_REL;
    if (p->mode == TT_LR_MODE_MIN)
        return rel ? a < best * (1. - p->threshold) : a < best - p->threshold;
    return rel ? a > best * (p->threshold + 1.) : a > best + p->threshold;
}

void tt_lr_observe(tt_lr_schedule *s, double metric) {
    TT_CHECK(s, "tt_lr_observe needs a schedule");
    if (s->kind != TT_LR_PLATEAU) return;
    check_plateau(s);
    const tt_lr_plateau_opts *p = &s->plateau;
    tt_lr_plateau_state *st = &s->state;
    st->last_epoch++;
    if (plateau_better(p, metric, st->best)) {
        st->best = metric;
        st->num_bad_epochs = 0;
    } else {
        st->num_bad_epochs++;
    }
    if (st->cooldown_counter > 0) {
        st->cooldown_counter--;
        st->num_bad_epochs = 0;  // bad observations in cooldown are ignored
    }
    if (st->num_bad_epochs > p->patience) {
        double old_lr = st->lr, new_lr = fmax(old_lr * p->factor, p->min_lr);
        if (old_lr - new_lr > p->eps) st->lr = new_lr;
        st->cooldown_counter = p->cooldown;
        st->num_bad_epochs = 0;
    }
}
