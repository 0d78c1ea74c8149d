// tinytorch.c optim: SGD, Adam, AdamW, RMSprop, Adagrad, Lion and Muon over named parameter
// lists, with parameter groups that each carry their own optimizer and hyperparameters,
// enumerable state for checkpoints, gradient clipping by global norm and LR schedules.
// Optimizers update raw data (no autograd, grad mode irrelevant); they do not save files.
//
//     tt_optim opt;
//     tt_optim_init(&opt, tt_adamw_config(6e-4));      // torch.optim.AdamW(lr=6e-4)
//     tt_optim_add_decay_groups(&opt, &params, 0.1);   // nanoGPT: 2-D+ tensors decay, rest not
//     tt_lr_schedule sched = tt_lr_cosine(6e-4, 100, 5000, 6e-5);
//     for (int64_t it = 0; it < 5000; it++) {
//         tt_optim_set_lr(&opt, tt_lr_at(&sched, it));
//         tt_scope_begin();
//         tt_backward(loss_of_a_batch(...));
//         tt_clip_grad_norm(&params, 1.0);
//         tt_optim_step(&opt);
//         tt_optim_zero_grad(&opt);
//         tt_scope_end();
//     }
//     tt_optim_free(&opt);
//
// Semantics follow PyTorch's single-tensor implementations (torch.optim.*), g the gradient:
// - SGD: d = g + wd p; with momentum, buf = d on a parameter's first update, afterwards
//   buf = momentum buf + (1 - dampening) d; d = nesterov ? d + momentum buf : buf; p -= lr d.
// - Adam: g += wd p (L2); m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2;
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), t the parameter's step.
// - AdamW: p *= 1 - lr wd (decoupled, Loshchilov & Hutter 2019), then Adam with no L2.
// - RMSprop: g += wd p; s = alpha s + (1 - alpha) g^2; centered: a = alpha a + (1 - alpha) g,
//   d = sqrt(s - a^2) + eps, else d = sqrt(s) + eps; with momentum buf = momentum buf + g / d,
//   p -= lr buf, else p -= lr g / d.
// - Adagrad: g += wd p; sum += g^2; p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps).
// - Lion (Chen et al. 2023): p *= 1 - lr wd; p -= lr sign(b1 m + (1 - b1) g);
//   m = b2 m + (1 - b2) g.
// - Muon (torch.optim.Muon; Jordan et al. 2024) for 2-D parameters: buf = lerp(buf, g,
//   1 - momentum); u = nesterov ? lerp(g, buf, momentum) : buf; u = NS(u), ns_steps quintic
//   Newton-Schulz iterations X <- a X + (b A + c A^2) X, A = X X^T, from X = u / max(|u|_F, eps)
//   (on u^T when u has more rows than columns); p *= 1 - lr wd; p -= lr sqrt(max(1, rows/cols)) u.
// A parameter whose .grad is NULL is skipped: neither it nor its state nor its step changes.
#ifndef TT_OPTIM_H
#define TT_OPTIM_H

#include "../nn/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- configuration ----

typedef enum tt_optim_kind {
    TT_OPTIM_SGD,
    TT_OPTIM_ADAM,
    TT_OPTIM_ADAMW,
    TT_OPTIM_RMSPROP,
    TT_OPTIM_ADAGRAD,
    TT_OPTIM_LION,
    TT_OPTIM_MUON,
    TT_OPTIM_KIND_COUNT
} tt_optim_kind;

typedef struct tt_optim_config {
    tt_optim_kind kind;
    double lr;
    double momentum;      // SGD (0: plain SGD, no state), RMSprop (0: none), Muon
    double dampening;     // SGD
    bool nesterov;        // SGD (needs momentum > 0 and dampening == 0, as PyTorch), Muon
    double beta1, beta2;  // Adam, AdamW, Lion
    double eps;           // Adam, AdamW, RMSprop, Adagrad; Muon: the norm's floor
    double alpha;         // RMSprop: the squares' smoothing constant
    bool centered;        // RMSprop: divide by the gradient's estimated variance
    double lr_decay;      // Adagrad
    double initial_accumulator_value;  // Adagrad: the sums' start
    int ns_steps;                      // Muon: Newton-Schulz iterations
    double ns_coefficients[3];         // Muon: a, b, c of the quintic iteration
    tt_precision ns_precision;         // Muon: the iterations' products (TT_PRECISION_BF16: bf16
                                       // inputs, f32 accumulation, as under autocast)
} tt_optim_config;

// PyTorch's defaults: SGD momentum 0, dampening 0, no nesterov; Adam/AdamW betas (0.9, 0.999),
// eps 1e-8; RMSprop alpha 0.99, eps 1e-8, momentum 0, not centered; Adagrad lr_decay 0, eps
// 1e-10, initial accumulator 0; Lion betas (0.9, 0.99); Muon momentum 0.95, nesterov, eps
// 1e-7, 5 steps of (3.4445, -4.7750, 2.0315), f32 products. Change fields before use:
// `c = tt_adamw_config(lr); c.beta2 = 0.95;`. Weight decay is a group's (tt_optim_add_group).
tt_optim_config tt_sgd_config(double lr);
tt_optim_config tt_adam_config(double lr);
tt_optim_config tt_adamw_config(double lr);
tt_optim_config tt_rmsprop_config(double lr);
tt_optim_config tt_adagrad_config(double lr);
tt_optim_config tt_lion_config(double lr);
tt_optim_config tt_muon_config(double lr);
// "sgd", "adam", "adamw", "rmsprop", "adagrad", "lion", "muon"
const char *tt_optim_kind_name(tt_optim_kind kind);
// The kind named `name` (as tt_optim_kind_name writes it) into *out; false for anything else.
bool tt_optim_kind_parse(const char *name, tt_optim_kind *out);
// The config of kind `kind` with its defaults and lr (tt_sgd_config ... tt_muon_config).
tt_optim_config tt_optim_config_of(tt_optim_kind kind, double lr);

// ---- the optimizer ----

// The state of one parameter, allocated when its group is added (zeros, the parameter's dtype
// and shape) and listed by tt_optim_state under "<state>.<parameter name>", PyTorch's names.
typedef enum tt_optim_slot {
    TT_OPTIM_SLOT_EXP_AVG,     // Adam/AdamW/Lion: first moment m  "exp_avg."
    TT_OPTIM_SLOT_EXP_AVG_SQ,  // Adam/AdamW: second moment v      "exp_avg_sq."
    TT_OPTIM_SLOT_SQUARE_AVG,  // RMSprop: mean of g^2             "square_avg."
    TT_OPTIM_SLOT_GRAD_AVG,    // RMSprop centered: mean of g      "grad_avg."
    TT_OPTIM_SLOT_SUM,         // Adagrad: sum of g^2              "sum."
    TT_OPTIM_SLOT_MOMENTUM,    // SGD, RMSprop with momentum; Muon "momentum_buffer."
    TT_OPTIM_SLOT_STEP,        // this parameter's update count    "step." (0-dim i64)
    TT_OPTIM_SLOT_COUNT
} tt_optim_slot;

// PyTorch's param_groups[g]: the parameters and the optimizer and hyperparameters they use.
typedef struct tt_optim_group {
    tt_params params;     // the group's parameters (names and retained references)
    tt_tensor **state;    // [i * TT_OPTIM_SLOT_COUNT + slot] for parameter i; NULL if unused
    tt_optim_config cfg;  // the group's optimizer; cfg.lr is its current lr
    double initial_lr;    // the lr a schedule scales (PyTorch's 'initial_lr'): cfg.lr at add
    double weight_decay;  // SGD/Adam/RMSprop/Adagrad: L2 added to the gradient; AdamW/Lion/
                          // Muon: decoupled (p *= 1 - lr wd)
} tt_optim_group;

typedef struct tt_optim {
    tt_optim_config cfg;  // the defaults a group added by tt_optim_add_group takes
    double lr;       // the current learning rate (starts as cfg.lr; tt_optim_set_lr)
    int64_t step;    // tt_optim_step calls so far; assign it when restoring a checkpoint
    tt_optim_group *groups;
    int ngroups, cap;
} tt_optim;

// Aborts on an invalid config (negative lr, betas outside [0, 1), nesterov without momentum...).
void tt_optim_init(tt_optim *o, tt_optim_config cfg);
// Adds every parameter of p as a new group (returns its index) and allocates its state. The
// parameters must be contiguous f32/f64 leaves, each in at most one group, with distinct names;
// a tensor listed twice in p (tied weights) is optimized once, under its first name.
int tt_optim_add_group(tt_optim *o, const tt_params *p, double weight_decay);
// The same with the group's own optimizer and hyperparameters (PyTorch's per-group options;
// also a group of another kind: nanochat's Muon for the blocks' matrices beside AdamW for the
// rest, in one optimizer). Its lr is absolute, and a schedule scales it with the others.
int tt_optim_add_group_as(tt_optim *o, const tt_params *p, tt_optim_config cfg,
                          double weight_decay);
// nanoGPT's split of p's parameters that require grad: group 0 holds the tensors with ndim >= 2
// (matmul weights, embeddings) and decays by weight_decay; group 1 the rest (biases, norm gains)
// with weight decay 0. Both groups are added even when one is empty.
void tt_optim_add_decay_groups(tt_optim *o, const tt_params *p, double weight_decay);
// The same split of the parameters of a module tree (tt_module_params): the optimizer of
// `model.parameters()` with nanoGPT's groups; weight_decay 0 gives PyTorch's single group's
// updates. The optimizer retains the tensors; the module stays the caller's.
void tt_optim_add_module(tt_optim *o, tt_module m, double weight_decay);
// tt_optim_init then tt_optim_add_module, returned by value (free it with tt_optim_free):
// `tt_optim opt = tt_optim_new(tt_adamw_config(1e-3), model, 0.05);` is
// torch.optim.AdamW(model.parameters(), lr=1e-3) with nanoGPT's decay groups.
tt_optim tt_optim_new(tt_optim_config cfg, tt_module m, double weight_decay);
void tt_optim_step(tt_optim *o);       // one update of every parameter that has a gradient
void tt_optim_zero_grad(tt_optim *o);  // drops the gradients (PyTorch's set_to_none)
// Sets the optimizer's lr, and every group's in proportion: group g's lr becomes its
// initial_lr * lr / cfg.lr (so lr itself for a group added with the defaults). A schedule
// calls this each step (tt_lr_at of a schedule whose base is cfg.lr), as a PyTorch scheduler
// sets every group's lr from the group's own base lr. cfg.lr 0 takes lr 0 only.
void tt_optim_set_lr(tt_optim *o, double lr);
// PyTorch's param_groups[g]['lr'], absolute: group g's lr becomes `lr` now and keeps its ratio
// to the optimizer's lr afterwards (its initial_lr becomes lr * cfg.lr / o->lr, so o->lr must
// be > 0), as a PyTorch scheduler moves a group from its own base.
void tt_optim_set_group_lr(tt_optim *o, int g, double lr);
double tt_optim_group_lr(const tt_optim *o, int g);  // groups[g].cfg.lr
void tt_optim_free(tt_optim *o);       // safe on a zeroed struct

// Appends the state tensors (borrowed by `out`: it retains them) group by group, parameter by
// parameter, in slot order: "exp_avg.<name>", "exp_avg_sq.<name>", "step.<name>" (Adam,
// AdamW) or "momentum_buffer.<name>", "step.<name>" (SGD with momentum; plain SGD has none),
// and so on (tt_optim_slot). To restore a checkpoint: tt_copy_ the saved values into these
// tensors and set o->step.
void tt_optim_state(const tt_optim *o, tt_params *out);

// A group's hyperparameters by PyTorch's param_groups key, for checkpoints: "lr",
// "initial_lr", "weight_decay", "momentum", "dampening", "beta1", "beta2", "eps", "alpha",
// "lr_decay", "initial_accumulator_value" (every kind lists all; those it does not use are 0).
typedef struct tt_optim_hparam {
    const char *name;
    double *value;  // into the group's struct: read to save, write to restore
} tt_optim_hparam;
#define TT_OPTIM_HPARAMS 11
void tt_optim_group_hparams(tt_optim *o, int g, tt_optim_hparam out[TT_OPTIM_HPARAMS]);

// ---- gradient clipping ----

// Scales every gradient of p by max_norm / (norm + 1e-6) when that is < 1, where norm is the
// L2 norm of all gradients together (accumulated in double in a fixed order). Returns the
// norm before clipping; parameters without a gradient are skipped and a tensor listed twice
// counts once. A non-finite norm changes nothing (check the return value to skip the step).
double tt_clip_grad_norm(const tt_params *p, double max_norm);
double tt_grad_norm(const tt_params *p);  // the same norm, without clipping

// ---- learning-rate schedules ----
// A schedule gives the lr of iteration it (tt_lr_at), the caller sets it (tt_optim_set_lr) as a
// PyTorch scheduler sets every group's lr; the trainer (train/train.h) does both each step.
// The constructors give PyTorch's defaults; change fields before use:
//
//     tt_lr_schedule s = tt_lr_onecycle(1e-2, 1000);   // OneCycleLR(opt, 1e-2, total_steps=1000)
//     s.onecycle.anneal = TT_LR_ANNEAL_LINEAR;         // anneal_strategy='linear'
//
// ReduceLROnPlateau is the one with state: tt_lr_observe(&s, val_loss) after each eval is its
// scheduler.step(val_loss), and tt_lr_at returns the lr reduced so far (whatever it).

typedef enum tt_lr_kind {
    TT_LR_CONSTANT,  // lr
    TT_LR_STEP,      // lr * gamma^floor(it / step_size)
    TT_LR_COSINE,    // nanoGPT's linear warmup, cosine decay to min_lr, then min_lr
    TT_LR_WSD,       // nanochat's warmup, stable, linear warmdown to lr * final_frac
    TT_LR_ONECYCLE,  // torch.optim.lr_scheduler.OneCycleLR (and its momentum)
    TT_LR_PLATEAU,   // torch.optim.lr_scheduler.ReduceLROnPlateau (tt_lr_observe)
    TT_LR_LAMBDA,    // torch.optim.lr_scheduler.LambdaLR: lr * fn(it, ctx)
    TT_LR_KIND_COUNT
} tt_lr_kind;

// OneCycleLR's anneal_strategy.
typedef enum tt_lr_anneal {
    TT_LR_ANNEAL_COS,     // 'cos'
    TT_LR_ANNEAL_LINEAR,  // 'linear'
    TT_LR_ANNEAL_COUNT
} tt_lr_anneal;

// ReduceLROnPlateau's mode: the metric should go down (a loss) or up (an accuracy).
typedef enum tt_lr_mode { TT_LR_MODE_MIN, TT_LR_MODE_MAX, TT_LR_MODE_COUNT } tt_lr_mode;

// ReduceLROnPlateau's threshold_mode: a new best beats the old by best * threshold or by
// threshold.
typedef enum tt_lr_threshold_mode {
    TT_LR_THRESHOLD_REL,
    TT_LR_THRESHOLD_ABS,
    TT_LR_THRESHOLD_MODE_COUNT
} tt_lr_threshold_mode;

// OneCycleLR's settings (PyTorch's names; tt_lr_onecycle sets its defaults). The lr rises from
// lr / div_factor to lr over the first pct_start of total_steps, then falls to
// lr / div_factor / final_div_factor (three_phase: back to lr / div_factor first, over as many
// steps, then down); the momentum moves the other way between max_momentum and base_momentum.
typedef struct tt_lr_onecycle_opts {
    int64_t total_steps;      // iterations 0 .. total_steps are valid, as PyTorch's
    double pct_start;         // 0.3, in [0, 1]
    tt_lr_anneal anneal;      // TT_LR_ANNEAL_COS
    double div_factor;        // 25
    double final_div_factor;  // 1e4
    bool three_phase;         // false
    bool cycle_momentum;      // true: tt_lr_momentum_at gives beta1 / the SGD momentum
    double base_momentum;     // 0.85
    double max_momentum;      // 0.95
} tt_lr_onecycle_opts;

// ReduceLROnPlateau's settings (PyTorch's names and defaults; tt_lr_plateau sets them). An
// observation is one of PyTorch's epochs: patience and cooldown count observations.
typedef struct tt_lr_plateau_opts {
    tt_lr_mode mode;                      // TT_LR_MODE_MIN
    double factor;                        // 0.1, in [0, 1): new lr = lr * factor
    int64_t patience;                     // 10 observations without improvement are allowed
    double threshold;                     // 1e-4
    tt_lr_threshold_mode threshold_mode;  // TT_LR_THRESHOLD_REL
    int64_t cooldown;                     // 0 observations ignored after a reduction
    double min_lr;                        // 0: the lr never goes below it
    double eps;                           // 1e-8: a reduction smaller than this is skipped
} tt_lr_plateau_opts;

// ReduceLROnPlateau's state (its state_dict's fields), set by tt_lr_plateau and
// tt_lr_observe; a checkpoint saves and restores it (tt_trainer_ckpt_fill).
typedef struct tt_lr_plateau_state {
    double lr;                 // the current learning rate: lr, then reduced
    double best;               // the best metric so far (+inf in min mode before any, -inf max)
    int64_t num_bad_epochs;    // observations since the best, cooldown ones not counted
    int64_t cooldown_counter;  // observations still ignored after the last reduction
    int64_t last_epoch;        // observations so far
} tt_lr_plateau_state;

// A user's schedule (LambdaLR's lr_lambda): the factor of the base lr at iteration it.
typedef double (*tt_lr_fn)(int64_t it, void *ctx);

typedef struct tt_lr_schedule {
    tt_lr_kind kind;
    double lr;             // base (peak) learning rate; OneCycle's max_lr
    int64_t step_size;     // TT_LR_STEP
    double gamma;          // TT_LR_STEP
    int64_t warmup_iters;  // TT_LR_COSINE, TT_LR_WSD
    int64_t decay_iters;   // TT_LR_COSINE: > warmup_iters
    double min_lr;         // TT_LR_COSINE
    int64_t warmdown_iters;        // TT_LR_WSD: the linear decay's length, <= total_iters
    int64_t total_iters;           // TT_LR_WSD: where the decay ends (nanochat's num_iterations)
    double final_frac;             // TT_LR_WSD: in [0, 1]: the lr at total_iters, over lr
    tt_lr_onecycle_opts onecycle;  // TT_LR_ONECYCLE
    tt_lr_plateau_opts plateau;    // TT_LR_PLATEAU: the settings
    tt_lr_plateau_state state;     // TT_LR_PLATEAU: the state
    tt_lr_fn fn;                   // TT_LR_LAMBDA
    void *ctx;                     // TT_LR_LAMBDA: passed to fn
} tt_lr_schedule;

tt_lr_schedule tt_lr_constant(double lr);
tt_lr_schedule tt_lr_step(double lr, int64_t step_size, double gamma);
tt_lr_schedule tt_lr_cosine(double lr, int64_t warmup_iters, int64_t decay_iters,
                            double min_lr);
// nanochat's get_lr_multiplier (llm.c's schedule of the same name) times lr:
//   it < warmup_iters:                      lr * (it + 1) / warmup_iters
//   it <= total_iters - warmdown_iters:     lr
//   otherwise, with p = (total_iters - it) / warmdown_iters:   lr * (p + (1 - p) final_frac)
// and lr * final_frac after total_iters (where nanochat never goes). Aborts on invalid values.
tt_lr_schedule tt_lr_wsd(double lr, int64_t warmup_iters, int64_t warmdown_iters,
                         int64_t total_iters, double final_frac);
// OneCycleLR(max_lr=lr, total_steps) with PyTorch's defaults in .onecycle (change them
// before use). PyTorch's phase arithmetic exactly; an iteration past total_steps aborts, as
// PyTorch's raises.
tt_lr_schedule tt_lr_onecycle(double lr, int64_t total_steps);
// ReduceLROnPlateau starting at lr, with PyTorch's defaults in .plateau (change them before
// the first tt_lr_observe; .plateau.mode resets .state.best when changed later: see
// tt_lr_plateau_reset).
tt_lr_schedule tt_lr_plateau(double lr);
// The state of a fresh ReduceLROnPlateau at s->lr: best the worst value of s->plateau.mode.
void tt_lr_plateau_reset(tt_lr_schedule *s);
// LambdaLR: lr * fn(it, ctx); a factor that is not finite and >= 0 aborts at tt_lr_at.
tt_lr_schedule tt_lr_lambda(double lr, tt_lr_fn fn, void *ctx);

// The learning rate at iteration it >= 0. TT_LR_COSINE (nanoGPT's get_lr):
//   it < warmup:      lr * (it + 1) / (warmup + 1)
//   it > decay_iters: min_lr
//   otherwise:        min_lr + 0.5 (1 + cos(pi r)) (lr - min_lr),
//                     r = (it - warmup) / (decay_iters - warmup)
// TT_LR_PLATEAU: the current lr (s->state.lr), whatever it. Aborts on invalid settings.
double tt_lr_at(const tt_lr_schedule *s, int64_t it);
// PyTorch's ReduceLROnPlateau.step(metric): after patience observations in a row that do not
// beat the best by the threshold, the lr becomes max(lr * factor, min_lr) (unless that
// changes it by eps or less) and the next cooldown observations are not counted. Call it with
// the val loss after each eval (the trainer does). A no-op for the other kinds.
void tt_lr_observe(tt_lr_schedule *s, double metric);
// OneCycleLR's momentum at iteration it (cycle_momentum must be on): what PyTorch writes to
// betas[0] of Adam / AdamW or to SGD's momentum each step. To apply it without the trainer
// (which does), set it before each step as the lr:
//     opt.cfg.beta1 = tt_lr_momentum_at(&s, it);      // SGD: opt.cfg.momentum (> 0 at init)
double tt_lr_momentum_at(const tt_lr_schedule *s, int64_t it);

#ifdef __cplusplus
}
#endif

#endif  // TT_OPTIM_H
