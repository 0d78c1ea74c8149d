// Learning-rate schedules: constant, step decay, and nanoGPT's linear warmup followed by cosine
// decay to a floor. Pure functions of the iteration; they do not touch an optimizer (pass the
// value to tt_optim_set_lr).
#include "optim.h"

#include <math.h>

static const double PI = 3.14159265358979323846;

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

// ---- evaluation ----

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
        case TT_LR_COSINE: {
            // nanoGPT's get_lr (train.py).
            int64_t w = s->warmup_iters, d = s->decay_iters;
            TT_CHECK(w >= 0 && d > w && isfinite(s->min_lr) && s->min_lr >= 0,
                     "cosine schedule needs 0 <= warmup_iters < decay_iters and min_lr >= 0, "
                     "got warmup_iters=%lld decay_iters=%lld min_lr=%g", (long long)w,
                     (long long)d, s->min_lr);
            if (it < w) return s->lr * (double)(it + 1) / (double)(w + 1);
            if (it > d) return s->min_lr;
            double ratio = (double)(it - w) / (double)(d - w);
            double coeff = 0.5 * (1.0 + cos(PI * ratio));
            return s->min_lr + coeff * (s->lr - s->min_lr);
        }
        default:
            TT_CHECK(false, "unknown schedule kind %d (use tt_lr_constant, tt_lr_step or "
                     "tt_lr_cosine)", (int)s->kind);
    }
}
