// tinytorch.c train: the training loop every program repeats, as a small struct the program's
// own loop drives (no hidden loop, no framework): the step with gradient accumulation over
// micro-batches and the data-parallel mean over ranks (dist/), clipping, the optimizer and the
// LR schedule; periodic eval, the CSV log, the progress bar, divergence stops that name the
// step, checkpoints with a `.best` file and SIGINT/SIGTERM stops that save first.
//
//     tt_trainer_opts to = tt_trainer_opts_default();
//     to.iters = 5000; to.accum = 2; to.clip = 1.0; to.eval_every = 250;
//     to.eval = my_eval; to.fill = my_fill; to.ctx = &me; to.out = "out/m.ckpt";
//     tt_trainer tr;
//     if (tt_trainer_init(&tr, &to, &params, &optim, &sched) != TT_OK) ...tt_last_error()...
//     while (tt_trainer_next(&tr)) {               // false at iters, on a signal, a divergence
//         for (int m = 0; m < tr.accum; m++) {
//             tt_scope_begin();
//             tt_trainer_backward(&tr, my_loss(...));  // scales and accumulates the gradients
//             tt_scope_end();
//         }
//         tt_trainer_step(&tr);  // all-reduce, clip, optimizer, eval, log, save, .best, checks
//     }
//     int code = tt_trainer_exit_code(&tr);       // 0, 1 (diverged, I/O), 130/143 (signals)
//     tt_trainer_free(&tr);
//
// The library never exits and never prints to stdout: a stop is recorded in tr.stop (with
// tt_last_error() and tr.what) and the program turns it into its message and exit code. What
// the trainer prints goes to stderr, only on rank 0 and only when asked (opts.verbose,
// opts.progress).
#ifndef TT_TRAIN_H
#define TT_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../nn/nn.h"
#include "../io/checkpoint.h"
#include "../optim/optim.h"
#include "../data/data.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tt_trainer tt_trainer;

// The loss of the model on split (TT_SPLIT_TRAIN or TT_SPLIT_VAL), estimated by the program
// (no grad, eval mode, its own batches: evals must not touch the training streams).
typedef double (*tt_trainer_eval_fn)(void *ctx, tt_data_split split);
// Adds everything a checkpoint holds to ck: the model, the optimizer (tt_trainer_ckpt_fill
// writes the optimizer and the trainer's counters), the program's own entries.
typedef void (*tt_trainer_fill_fn)(tt_checkpoint *ck, const tt_trainer *tr, void *ctx);
// Called on every rank after each eval (tr->train_loss, val_loss, improved are set) and before
// the save; a status other than TT_OK stops training (TT_TRAINER_ERR_HOOK).
typedef tt_status (*tt_trainer_hook_fn)(tt_trainer *tr, void *ctx);

typedef struct tt_trainer_opts {
    int64_t iters;        // optimizer steps in all (tr.step counts to it); 0: no limit
    int64_t accum;        // micro-batches per step on this rank (gradient accumulation), >= 1
    double clip;          // max global gradient norm; 0: no clipping (the norm is still checked)
    int64_t eval_every;   // an eval point every this many steps, at iters and after a signal
                          // (0: the last two only): eval, log row, save when out and fill
    bool eval_train;      // also estimate the train split's loss at an eval (default true)
    const char *out;      // checkpoint written at each eval; NULL: none
    const char *best;     // the best state's file; NULL: tt_trainer_best_path(out)
    FILE *log;            // CSV rows "step,train_loss,val_loss,lr" (the program writes the
                          // header), rank 0; NULL: none
    bool progress;        // rank 0: a bar on a TTY stderr, else a line every 50 steps
    bool verbose;         // rank 0: "step N: train loss ..." and "saved ..." lines on stderr
    bool catch_signals;   // SIGINT/SIGTERM end training after the step's eval and save
    bool check_finite;    // stop on a non-finite loss, gradient norm, eval loss or weight
                          // (default true)
    bool check_leaks;     // stop when a step leaves more live tensors than the first one
    bool profile;         // tt_profiler_begin/end around every step (set it on the ranks
                          // that profile)
    bool overlap;         // several ranks: the all-reduce overlaps the last backward
    int64_t tokens_per_step;  // for tok/s on the progress line (0 shows 0 tok/s)
    tt_trainer_eval_fn eval;  // NULL: no evals
    tt_trainer_fill_fn fill;  // NULL: no checkpoints
    tt_trainer_hook_fn on_eval;
    void *ctx;            // passed to the callbacks
} tt_trainer_opts;

// iters 0, accum 1, clip 0, eval_every 0, eval_train and check_finite true, the rest off.
tt_trainer_opts tt_trainer_opts_default(void);

typedef enum tt_trainer_stop {
    TT_TRAINER_RUNNING,   // not stopped
    TT_TRAINER_DONE,      // reached opts.iters
    TT_TRAINER_SIGNAL,    // SIGINT or SIGTERM (tr.signal), after the step's eval and save
    TT_TRAINER_DIVERGED,  // a non-finite loss, norm or weight at tr.stop_step (tr.what says it)
    // Failures; tt_last_error() has the message:
    TT_TRAINER_ERR_SAVE,  // a checkpoint could not be written
    TT_TRAINER_ERR_LOG,   // opts.log could not be written (tr.what: strerror)
    TT_TRAINER_ERR_DIST,  // an all-reduce failed
    TT_TRAINER_ERR_HOOK,  // opts.on_eval returned an error
    TT_TRAINER_ERR_LEAK,  // check_leaks: a step left more live tensors than the first
    TT_TRAINER_STOP_COUNT
} tt_trainer_stop;

struct tt_trainer {
    tt_trainer_opts opts;
    const tt_params *params;  // borrowed: what the optimizer trains
    tt_optim *optim;          // borrowed
    tt_lr_schedule sched;     // copied (a plateau schedule's state lives in this copy);
                              // has_sched false when init got NULL
    bool has_sched;
    int64_t accum;            // opts.accum: the caller's inner loop count
    int64_t micro_batches;    // accum x ranks: the micro-batches of one step over all ranks
    // Counters (restore them on resume: tt_trainer_ckpt_restore, or assign).
    int64_t step;             // optimizer steps taken
    double best_val_loss;     // INFINITY before the first eval
    double train_loss, val_loss;  // of the last eval; NAN before it
    // Of the step just taken.
    double loss;              // mean loss over the step's micro-batches on every rank
    double lr;                // the learning rate it used
    double grad_norm;         // the global norm before clipping
    bool evaluated, improved; // it ran an eval; that eval's val loss was the best so far
    int64_t saved_step;       // step of the last file written to opts.out; -1 before
    // The stop.
    tt_trainer_stop stop;
    int64_t stop_step;        // the step a divergence names
    int signal;               // SIGINT or SIGTERM
    char what[160];           // "the loss is nan", "the weight 'w' holds NaN or Inf", ...
    // Timing of the steps this run took.
    int64_t steps_run;
    double train_seconds;
    // Internal.
    int64_t micro;            // micro-batches of the current step so far
    double loss_sum;
    float *sum;               // (numel of params) the running sum of micro-batch gradients
    size_t *offset;           // per parameter: its first element in sum
    double t0, last_draw;
    bool in_step, drawn, tty;
    int64_t live_after_first;
    char best_buf[4200];
};

// Sets up tr over params (the tensors whose .grad the steps read; the optimizer's) with a copy
// of opts; sched may be NULL (the optimizer's lr stays). tr.step starts at 0: assign it (and
// best_val_loss) or call tt_trainer_ckpt_restore to resume. Aborts on invalid opts;
// TT_ERR_OOM when the accumulation buffer cannot be allocated.
tt_status tt_trainer_init(tt_trainer *tr, const tt_trainer_opts *opts, const tt_params *params,
                          tt_optim *optim, const tt_lr_schedule *sched);
// Frees the buffers and restores the signal handlers; safe on a zeroed struct.
void tt_trainer_free(tt_trainer *tr);

// Begins a step: false when training is over (iters reached, a stop recorded); otherwise sets
// the schedule's lr (and a onecycle schedule's momentum as the optimizer's beta1, or SGD's
// momentum, when its cycle_momentum is on, as PyTorch's OneCycleLR does), starts the clock and
// the profiler and returns true. A program with a loop
// of its own (epochs of a data loader) may leave it out: the step's first tt_trainer_backward
// begins the step the same way.
bool tt_trainer_next(tt_trainer *tr);
// One micro-batch's loss (a scalar): its value joins the step's mean, then tt_backward. With
// accum > 1 the gradients are summed over the micro-batches and the last one's become
// (sum + last) / accum, the same floats in the same order as a hand-written accumulation.
void tt_trainer_backward(tt_trainer *tr, tt_tensor *loss);
// Ends the step: the mean gradient over the ranks, the norm (clipped with opts.clip), a
// divergence check before the update, the optimizer step, zero grad; then the log row, the
// progress, and at an eval point the eval, finite checks, .best, tt_lr_observe(val loss) of a
// plateau schedule (at the evals of the eval_every grid, or at iters when eval_every is 0; not
// at the end of a shorter run nor after a signal, so a resumed run observes what an
// uninterrupted one does) and the save. Returns false when training must stop (tr.stop says why),
// true otherwise.
bool tt_trainer_step(tt_trainer *tr);

// Writes the checkpoint opts.fill makes: to the best file first when best, then to opts.out
// (atomic writes, tt_ckpt_save). Rank 0 writes; other ranks only record saved_step.
tt_status tt_trainer_save(tt_trainer *tr, bool best);
// The optimizer state ("optim.*", "optim.step"), the schedule's state ("sched.*", below) and
// the counters ("step", "best_val_loss", "train_loss", "val_loss"): the keys tt_gpt_ckpt_fill
// uses, and the schedule's.
void tt_trainer_ckpt_fill(const tt_trainer *tr, tt_checkpoint *ck);
// Only the optimizer state ("optim.*", "optim.step"), for a program with its own counters.
void tt_trainer_ckpt_fill_optim(const tt_trainer *tr, tt_checkpoint *ck);
// Only the schedule's state: a ReduceLROnPlateau's "sched.lr", "sched.best" (f64),
// "sched.num_bad_epochs", "sched.cooldown_counter", "sched.last_epoch" (i64); nothing for the
// other kinds, which are functions of the step. Restore reads them into tr->sched (TT_OK with
// nothing to read for a stateless schedule; TT_ERR_FORMAT naming a missing or invalid key).
void tt_trainer_ckpt_fill_sched(const tt_trainer *tr, tt_checkpoint *ck);
tt_status tt_trainer_ckpt_restore_sched(tt_trainer *tr, const tt_checkpoint *ck);
// Reads them all back into tr, its optimizer and its schedule. TT_ERR_FORMAT /
// TT_ERR_MISMATCH naming the key.
tt_status tt_trainer_ckpt_restore(tt_trainer *tr, const tt_checkpoint *ck);

// The optimizer's part of a checkpoint (train/ckpt_optim.c), as the trainer and models/gpt
// write it: the state tensors ("optim.<slot>.<name>"), "optim.step", and each parameter
// group's kind ("optim.group.<g>.kind", i64) and hyperparameters ("optim.group.<g>.<key>",
// f64, tt_optim_group_hparams' keys: lr, initial_lr, weight_decay, betas...).
void tt_ckpt_add_optim(tt_checkpoint *ck, const tt_optim *o);
// Restores them into o, built with the groups the saving run had (PyTorch's load_state_dict):
// the state, the step, then the hyperparameters (those an older file lacks keep o's).
// TT_ERR_FORMAT without a step; TT_ERR_MISMATCH when a group's kind, the group count or a
// state tensor differs.
tt_status tt_ckpt_restore_optim(const tt_checkpoint *ck, tt_optim *o);
// The same without the hyperparameters, for a program that sets them itself (from its flags,
// as gpt train does on --resume: a flag given then overrides the saved value).
tt_status tt_ckpt_restore_optim_state(const tt_checkpoint *ck, tt_optim *o);

// Several ranks must run the same job: each passes the same n hashes of what must agree (its
// config, flags, data, parameters before the broadcast, step) and every rank compares all
// ranks' with rank 0's (an all-gather: every rank calls it, and all reach the same verdict).
// TT_OK when they agree (always with one rank); else TT_ERR_MISMATCH with *rank and *item the
// first that differs (the program names them and its fix). TT_ERR_IO when the all-gather fails.
tt_status tt_trainer_ranks_agree(const uint64_t *hashes, int n, int *rank, int *item);

// out with .best before its extension (out/m.ckpt -> out/m.best.ckpt), or .best appended.
void tt_trainer_best_path(char *buf, size_t n, const char *out);
// What the files on disk hold, for a stop message: "OUT holds step N, BEST the best state"
// (with evals), "OUT holds step N" (without) or "nothing was saved in this run, OUT is
// untouched".
void tt_trainer_kept(const tt_trainer *tr, char *buf, size_t n);
// Clears the progress bar from the terminal line (before the program prints).
void tt_trainer_clear_progress(tt_trainer *tr);
// 0 while running or done, 128 + the signal, 1 after a divergence or an error.
int tt_trainer_exit_code(const tt_trainer *tr);
// Milliseconds per step and steps per second of this run so far (0 before a step).
double tt_trainer_ms_per_step(const tt_trainer *tr);

#ifdef __cplusplus
}
#endif

#endif  // TT_TRAIN_H
