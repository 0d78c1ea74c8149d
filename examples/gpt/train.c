// The GPT programs' training run (train.h): the setup before the first step (flags, data,
// model, optimizer, slots, files), the trainer's callbacks (the eval, the eval line, the
// checkpoint's contents), and after the loop a stop's message or the done line.
#include "train.h"

#include "dist/dist.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- setup ----

// The tokenizer, flags and data of the run: --resume's, --init-from's or fresh; ck receives
// --resume's checkpoint.
static void setup_data(gpt_run *r, tt_checkpoint *ck) {
    train_state *s = &r->s;
    if (opt.resume && !given("--out")) opt.out = opt.resume;  // continue in the resumed file
    if (opt.resume && opt.init_from)
        die_usage("--resume and --init-from exclude each other: --resume continues a run, "
                  "--init-from starts one from given weights");
    if (opt.resume) {
        load_ckpt(ck, opt.resume, s);
        tok_check_given(&s->tok, opt.resume);
        resume_flags(ck, opt.resume, s);
    } else if (opt.init_from) {
        if (model_flag_given() || opt.preset)
            die_usage("%s: the model comes from --init-from '%s'; leave out the model flags",
                      opt.preset ? "--preset" : model_flag_given(), opt.init_from);
        tt_checkpoint ick;
        load_model("--init-from", opt.init_from, &r->gpt, s, &ick);
        tt_ckpt_free(&ick);
        opt.cfg = r->gpt.cfg;
    } else if (opt.tokenizer && strcmp(opt.tokenizer, "char") != 0) {
        tok_open(&s->tok, opt.tokenizer);
    }
    validate_train_flags();
    set_threads();

    // Data: a char vocab is the file's; on resume it must equal the checkpoint's.
    if (s->tok.kind == TT_TOKENIZER_CHAR) {
        tt_tokenizer fresh = {0};
        load_data(&r->ds, opt.data, opt.init_from ? &s->tok : &fresh, opt.cfg.block_size,
                  opt.init_from ? "train on a text whose characters the checkpoint knows"
                                : "pass another --data");
        if (opt.resume && (fresh.vocab.size != s->tok.vocab.size ||
                           memcmp(fresh.vocab.chars, s->tok.vocab.chars,
                                  (size_t)s->tok.vocab.size) != 0))
            die_usage("--resume: the vocabulary of '%s' (%d characters) differs from the one "
                      "'%s' was trained on (%d); resume with the same --data", opt.data,
                      fresh.vocab.size, opt.resume, s->tok.vocab.size);
        if (!opt.init_from) s->tok = fresh;
    } else {
        load_data(&r->ds, opt.data, &s->tok, opt.cfg.block_size, "");
    }
    s->cfg = opt.cfg;
    if (!opt.init_from) s->cfg.vocab_size = s->tok.n_vocab;
    if (tt_gpt_config_validate(&s->cfg) != TT_OK) die_usage("%s", tt_last_error());
    check_memory(&s->cfg, opt.batch, s->cfg.block_size, true);
    if (opt.resume && s->st.step >= opt.iters)
        die_usage("--resume: '%s' is already at step %lld of --iters %lld; pass a larger "
                  "--iters to train further", opt.resume, (long long)s->st.step,
                  (long long)opt.iters);
}

// Model and optimizer: fresh from --seed, the checkpoint's state, or --init-from's weights.
static void setup_model(gpt_run *r, const tt_checkpoint *ck) {
    train_state *s = &r->s;
    if (opt.resume) {
        model_from_ckpt(&r->gpt, ck, opt.resume);
    } else if (!opt.init_from) {
        tt_rng init_rng;
        tt_rng_seed(&init_rng, (uint64_t)opt.seed);
        if (tt_gpt_init(&r->gpt, &s->cfg, &init_rng) != TT_OK) die_usage("%s", tt_last_error());
    }
    tt_optim_config oc = tt_adamw_config(opt.lr);
    oc.beta1 = 0.9;
    oc.beta2 = opt.beta2;
    tt_optim_config muon = tt_muon_config(opt.muon_lr);
    tt_precision_parse(opt.precision, &muon.ns_precision);  // bf16: its products too
    bool use_muon = strcmp(opt.optim, "muon") == 0;
    tt_gpt_optim_init(&r->o, &r->gpt, oc, opt.weight_decay, use_muon ? &muon : NULL,
                      opt.muon_weight_decay);
    s->saved_step = -1;
    if (!opt.resume) {
        s->st.step = 0;
        tt_rng_seed(&s->st.data_rng, (uint64_t)opt.seed ^ 0xDA7A5EEDull);
        s->st.best_val_loss = INFINITY;
        s->st.train_loss = s->st.val_loss = NAN;
    } else if (tt_gpt_ckpt_optim(&r->o, ck) != TT_OK) {  // load_ckpt read s->st
        die("--resume: '%s': %s", opt.resume, tt_last_error());
    }
}

// Opens --log (appended to on --resume when it holds lines) and prints the run's header.
static void open_outputs(gpt_run *r) {
    if (r->lead) check_outputs(CMD_TRAIN);
    if (opt.log && r->lead) {
        struct stat lst;
        bool append = opt.resume && stat(opt.log, &lst) == 0 && lst.st_size > 0;
        r->log = fopen(opt.log, append ? "a" : "w");
        if (!r->log) die("cannot open --log '%s': %s; pick a writable path", opt.log,
                         strerror(errno));
        if (!append) fprintf(r->log, "step,train_loss,val_loss,lr\n");
    }
    char par[120] = "";
    int64_t A = r->A;
    if (r->M > 1)
        snprintf(par, sizeof par, ", %d rank%s x %lld micro-batch%s of %lld", r->ranks,
                 r->ranks > 1 ? "s" : "", (long long)A, A > 1 ? "es" : "", (long long)r->B);
    if (r->lead)
        fprintf(stderr, "%s: %.2fM parameters, vocab %lld, %lld train / %lld val tokens of "
                "'%s', %d threads%s%s%s%s\n", prog->name,
                (double)tt_gpt_num_params(&r->gpt, true) / 1e6, (long long)r->s.tok.n_vocab,
                (long long)r->ds.n_train, (long long)(r->ds.n - r->ds.n_train), opt.data,
                nthreads(), par, strcmp(opt.precision, "bf16") == 0 ? ", bf16 products" : "",
                opt.checkpoint_blocks ? ", checkpointed blocks" : "",
                opt.resume ? ", resumed" : "");
    if (opt.resume && r->lead)
        fprintf(stderr, "resumed from %s at step %lld (params fingerprint %016llx)\n",
                opt.resume, (long long)r->s.st.step,
                (unsigned long long)tt_params_fingerprint(&r->gpt.params));
}

// ---- the trainer's callbacks ----

// The mean loss of --eval-iters batches of a split, the model's dropout stream first back in
// its slot (an eval draws no masks, but the checkpoint after it holds slot 0's stream).
static double eval_split(void *ctx, tt_data_split split) {
    gpt_run *r = ctx;
    if (r->M > 1) sync_slots(r);
    return estimate_split(&r->gpt, &r->ds, split, r->B, r->T, opt.eval_iters, opt.seed);
}

// After an eval, on every rank: the slots' streams gathered for the checkpoint; the eval line.
static tt_status on_eval(tt_trainer *tr, void *ctx) {
    gpt_run *r = ctx;
    if (r->M > 1) gather_slots(r);
    if (!r->lead) return TT_OK;
    tt_trainer_clear_progress(tr);
    printf("eval step=%lld train_loss=%.6f val_loss=%.6f\n", (long long)tr->step,
           tr->train_loss, tr->val_loss);
    check_stdout();
    return TT_OK;
}

// The checkpoint: the GPT's (model, optimizer, the trainer's counters in the state) and this
// program's entries.
static void fill(tt_checkpoint *ck, const tt_trainer *tr, void *ctx) {
    gpt_run *r = ctx;
    r->s.st.step = tr->step;
    r->s.st.best_val_loss = tr->best_val_loss;
    r->s.st.train_loss = tr->train_loss;
    r->s.st.val_loss = tr->val_loss;
    ckpt_fill(ck, &r->s, &r->gpt, &r->o, opt.data);
    tt_trainer_ckpt_fill_sched(tr, ck);  // a plateau schedule's state
}

// The trainer over the model's parameters and AdamW, resumed at the checkpoint's step and
// schedule state (ck: --resume's).
static void setup_trainer(gpt_run *r, const tt_checkpoint *ck) {
    tt_trainer_opts to = tt_trainer_opts_default();
    to.iters = opt.iters;
    to.accum = r->A;
    to.clip = opt.grad_clip;
    to.eval_every = opt.eval_every;
    to.out = opt.out;
    to.log = r->log;
    to.progress = r->lead;
    to.verbose = true;
    to.catch_signals = r->ranks == 1;  // several ranks: mpirun's signals end them all
    to.check_leaks = true;             // the steady state holds a fixed number of tensors
    to.profile = r->lead && (opt.profile || opt.trace);  // rank 0 profiles its own steps
    to.overlap = opt.overlap;
    to.tokens_per_step = r->B * r->T * r->M;
    to.eval = eval_split;
    to.fill = fill;
    to.on_eval = on_eval;
    to.ctx = r;
    if (tt_trainer_init(&r->tr, &to, &r->gpt.params, &r->o, &r->sched) != TT_OK)
        die("out of memory for --grad-accum's gradient sum (%lld floats)",
            (long long)tt_params_numel(&r->gpt.params));
    r->tr.step = r->s.st.step;
    r->tr.best_val_loss = r->s.st.best_val_loss;
    r->tr.train_loss = r->s.st.train_loss;
    r->tr.val_loss = r->s.st.val_loss;
    if (opt.resume && tt_trainer_ckpt_restore_sched(&r->tr, ck) != TT_OK)
        die("--resume: '%s': %s", opt.resume, tt_last_error());
}

void gpt_train_begin(gpt_run *r) {
    memset(r, 0, sizeof *r);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    setup_data(r, &ck);
    setup_model(r, &ck);
    // --checkpoint-blocks: each block's activations recomputed in backward (the same bits).
    r->gpt.checkpoint_blocks = opt.checkpoint_blocks;
    // The micro-batch slots of this rank: fresh, or the checkpoint's streams.
    r->rank = tt_dist_rank();
    r->ranks = tt_dist_world_size();
    r->lead = r->rank == 0;
    r->A = opt.grad_accum;
    r->M = r->A * r->ranks;
    r->B = opt.batch;
    r->T = r->s.cfg.block_size;
    init_slots(r, &ck);

    // Several ranks: the same run everywhere, from rank 0's weights.
    check_ranks_agree(r);
    tt_dist_set_bucket_size((size_t)opt.bucket);
    if (tt_dist_broadcast_params(&r->gpt.params) != TT_OK) die("%s", tt_last_error());
    if (r->ranks > 1)
        fprintf(stderr, "%s: rank %d of %d on %s, pid %ld, micro-batches %lld..%lld of %lld\n",
                prog->name, r->rank, r->ranks, tt_dist_host(), (long)getpid(),
                (long long)(r->rank * r->A), (long long)(r->rank * r->A + r->A - 1),
                (long long)r->M);

    // Everything is valid: now touch files.
    open_outputs(r);
    // --precision bf16: every product of the steps and evals below runs under autocast.
    tt_precision precision = TT_PRECISION_F32;
    tt_precision_parse(opt.precision, &precision);
    tt_autocast_begin(precision);
    r->sched = gpt_schedule();
    if (r->lead && opt.trace) tt_profiler_set_trace(true);
    tt_gpt_train(&r->gpt, true);
    if (r->lead && opt.profile) {  // the model at the training batch's shape
        tt_scope_begin();
        tt_model_summary(stderr, tt_gpt_module(&r->gpt), tt_zeros(TT_I32, TT_SHAPE(r->B, r->T)));
        tt_scope_end();
    }
    setup_trainer(r, &ck);
    tt_ckpt_free(&ck);
}

void gpt_train_batch(gpt_run *r, int64_t a, tt_tensor **x, tt_tensor **y) {
    if (r->M > 1) slot_batch(r, a, x, y);
    else tt_dataset_batch(&r->ds, TT_SPLIT_TRAIN, r->B, r->T, &r->s.st.data_rng, x, y);
}

// ---- the end ----

// What --out holds, for the message of a failed --log.
static void log_kept(const gpt_run *r, char *buf, size_t n) {
    if (r->tr.saved_step >= 0)
        snprintf(buf, n, "%s holds step %lld", opt.out, (long long)r->tr.saved_step);
    else
        snprintf(buf, n, "nothing was saved in this run");
}

// A stop before --iters: one line and exit (a SIGINT / SIGTERM after its save: 128 + it).
static void exit_on_stop(gpt_run *r) {
    tt_trainer *tr = &r->tr;
    char kept[9000];
    switch (tr->stop) {
    case TT_TRAINER_RUNNING:
    case TT_TRAINER_DONE:
    case TT_TRAINER_STOP_COUNT: return;
    case TT_TRAINER_SIGNAL:
        if (r->log) fclose(r->log);
        fprintf(stderr, "%s: stopped by %s at step %lld; %s holds it, continue with --resume "
                "%s\n", prog->name, tr->signal == SIGINT ? "SIGINT" : "SIGTERM",
                (long long)tr->step, opt.out, opt.out);
        tt_dist_finalize();
        exit(tt_trainer_exit_code(tr));
    case TT_TRAINER_DIVERGED:
        tt_trainer_kept(tr, kept, sizeof kept);
        die("step %lld: %s, training diverged; lower --lr (now %g) or raise --warmup (%s)",
            (long long)tr->stop_step, tr->what, opt.lr, kept);
    case TT_TRAINER_ERR_SAVE:
        die("%s; free disk space or pick another --out, then --resume (training stopped at "
            "step %lld)", tt_last_error(), (long long)tr->step);
    case TT_TRAINER_ERR_LOG:
        log_kept(r, kept, sizeof kept);
        die("cannot write --log '%s': %s; free disk space or pick another --log (training "
            "stopped at step %lld; %s)", opt.log, tr->what, (long long)tr->step, kept);
    case TT_TRAINER_ERR_LEAK: die("internal error: %s", tt_last_error());
    case TT_TRAINER_ERR_DIST:
    case TT_TRAINER_ERR_HOOK: die("%s", tt_last_error());
    }
}

int gpt_train_end(gpt_run *r) {
    tt_trainer *tr = &r->tr;
    exit_on_stop(r);
    tt_autocast_end();
    tt_trainer_clear_progress(tr);
    double secs = tr->train_seconds, ms = tt_trainer_ms_per_step(tr);
    double tok_s = secs > 0 ? (double)(r->B * r->T * r->M) * (double)tr->steps_run / secs : 0;
    if (r->lead) {
        printf("done steps=%lld train_loss=%.6f val_loss=%.6f ms_per_step=%.3f "
               "tokens_per_s=%.1f\n", (long long)tr->step, tr->train_loss, tr->val_loss, ms,
               tok_s);
        check_stdout();
    }
    if (r->lead && opt.profile) tt_profiler_report(stderr);
    if (r->lead && opt.trace) {
        if (tt_profiler_write_trace(opt.trace) != TT_OK) die("--trace: %s", tt_last_error());
        fprintf(stderr, "%s: wrote %s (%lld events; open it in ui.perfetto.dev)\n", prog->name,
                opt.trace, (long long)tt_profiler_totals().events);
    }
    double ar_s = tt_dist_allreduce_seconds();
    if (r->ranks > 1 && r->lead && tr->steps_run > 0)
        fprintf(stderr, "%s: gradient all-reduce %.3f ms per step, the wait for the slowest rank "
                "included (%.1f%% of the step)\n", prog->name,
                1000.0 * ar_s / (double)tr->steps_run, secs > 0 ? 100.0 * ar_s / secs : 0.0);
    tt_trainer_free(tr);
    free(r->slots);
    free(r->all_slots);
    if (r->log && fclose(r->log) != 0)
        die("cannot write --log '%s': %s", opt.log, strerror(errno));
    tt_optim_free(&r->o);
    tt_gpt_free(&r->gpt);
    tt_dataset_free(&r->ds);
    tt_tokenizer_free(&r->s.tok);
    return 0;
}

// gpt's train command: the loop of char_gpt.c's main.
int cmd_train(void) {
    gpt_run r;
    gpt_train_begin(&r);
    while (tt_trainer_next(&r.tr)) {
        for (int64_t a = 0; a < r.tr.accum; a++) {
            tt_scope_begin();
            tt_tensor *x, *y;
            gpt_train_batch(&r, a, &x, &y);               // (B, T) each
            tt_tensor *loss = tt_gpt_loss(&r.gpt, x, y);  // forward and loss
            tt_trainer_backward(&r.tr, loss);
            tt_scope_end();
        }
        tt_trainer_step(&r.tr);  // mean over micro-batches and ranks, clip, AdamW, eval, save
    }
    return gpt_train_end(&r);
}
