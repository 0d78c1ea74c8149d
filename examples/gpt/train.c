// The GPT programs' training run (train.h): the setup before the first step, each step's
// parts around the forward and backward the mains write out, the evals and checkpoints (.best
// first), the progress bar, the --log, the divergence stops and the SIGINT / SIGTERM stop.
#include "train.h"

#include "dist/dist.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- progress ----

static void fmt_eta(char *buf, size_t n, double s) {
    if (!(s >= 0) || s > 359999) snprintf(buf, n, "--");
    else if (s >= 3600) snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%.0fs", s);
}


static void progress_clear(progress *p) {
    if (p->drawn) fputs("\r\033[K", stderr);
    p->drawn = false;
}

// Columns of the terminal on stderr: its size, else $COLUMNS, else 80.
static int term_cols(void) {
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *e = getenv("COLUMNS");
    int c = e ? atoi(e) : 0;
    return c > 0 ? c : 80;
}

// The bar line in at most cols - 1 columns (a line as wide as the terminal wraps on some):
// the longest of these texts that fits, after a bar of 10 to 24 columns when there is room.
static void progress_format(char *out, size_t n, int cols, int64_t step, int64_t iters,
                            double loss, double ms, double tok_s, const char *eta) {
    char texts[4][160];
    snprintf(texts[0], sizeof texts[0], " %lld/%lld loss %.4f | %.1f ms/step | %.0f tok/s | "
             "ETA %s", (long long)step, (long long)iters, loss, ms, tok_s, eta);
    snprintf(texts[1], sizeof texts[1], " %lld/%lld loss %.4f | %.1f ms/step | ETA %s",
             (long long)step, (long long)iters, loss, ms, eta);
    snprintf(texts[2], sizeof texts[2], " %lld/%lld loss %.4f | ETA %s", (long long)step,
             (long long)iters, loss, eta);
    snprintf(texts[3], sizeof texts[3], "%lld/%lld loss %.4f", (long long)step,
             (long long)iters, loss);
    int room = cols - 1;
    for (int i = 0; i < 4; i++) {
        int len = (int)strlen(texts[i]), width = room - len - 2;
        if (width > 24) width = 24;
        if (width >= 10) {
            char bar[32];
            int done = (int)((double)width * (double)step / (double)iters);
            for (int k = 0; k < width; k++) bar[k] = k < done ? '=' : (k == done ? '>' : ' ');
            bar[width] = 0;
            snprintf(out, n, "[%s]%s", bar, texts[i]);
            return;
        }
        if (len <= room || i == 3) {
            const char *t = texts[i][0] == ' ' ? texts[i] + 1 : texts[i];
            snprintf(out, n, "%.*s", room > 0 ? room : 0, t);
            return;
        }
    }
}

static void progress_step(progress *p, int64_t step, int64_t iters, double loss, double ms,
                          double tok_s) {
    char eta[32];
    fmt_eta(eta, sizeof eta, (double)(iters - step) * ms / 1000.0);
    if (p->tty) {
        double t = now_s();
        if (step != iters && t - p->last_draw < 0.1) return;
        p->last_draw = t;
        char line[256];
        progress_format(line, sizeof line, term_cols(), step, iters, loss, ms, tok_s, eta);
        fprintf(stderr, "\r\033[K%s", line);
        p->drawn = true;
    } else if (step == 1 || step % 50 == 0 || step == iters) {
        fprintf(stderr, "step %lld/%lld: loss %.4f, %.1f ms/step, %.0f tok/s, ETA %s\n",
                (long long)step, (long long)iters, loss, ms, tok_s, eta);
    }
    fflush(stderr);
}

// ---- checkpoints and stops ----

// Writes the state to --out (the last state), and when best to best_path() first: --out never
// records a best val loss that no file holds.
static void save_or_die(train_state *s, const tt_gpt *gpt, const tt_optim *o,
                        const char *data_path, progress *pg, bool best) {
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    ckpt_fill(&ck, s, gpt, o, data_path);
    tt_status st = best ? tt_ckpt_save(&ck, best_path()) : TT_OK;
    if (st == TT_OK) st = tt_ckpt_save(&ck, opt.out);
    if (st == TT_OK) s->saved_step = s->st.step;
    tt_ckpt_free(&ck);
    progress_clear(pg);
    if (st != TT_OK)
        die("%s; free disk space or pick another --out, then --resume (training stopped at "
            "step %lld)", tt_last_error(), (long long)s->st.step);
    fprintf(stderr, "saved %s (step %lld, val loss %.4f, params fingerprint %016llx)%s%s%s\n",
            opt.out, (long long)s->st.step, s->st.val_loss,
            (unsigned long long)tt_params_fingerprint(&gpt->params), best ? " and " : "",
            best ? best_path() : "", best ? " (the best so far)" : "");
}

// A diverged run stops before anything non-finite is saved: one line naming the step, what
// (e.g. "the loss is nan"), the fix, and what the files on disk hold.
static void die_diverged(const train_state *s, int64_t step, const char *what) {
    char kept[9000];
    if (s->saved_step >= 0)
        snprintf(kept, sizeof kept, "%s holds step %lld, %s the best state", opt.out,
                 (long long)s->saved_step, best_path());
    else
        snprintf(kept, sizeof kept, "nothing was saved in this run, %s is untouched", opt.out);
    die("step %lld: %s, training diverged; lower --lr (now %g) or raise --warmup (%s)",
        (long long)step, what, opt.lr, kept);
}

// Dies (die_diverged) unless the evaluated losses and every weight are finite.
static void check_finite(const train_state *s, const tt_gpt *gpt) {
    char what[300];
    const char *bad = tt_params_nonfinite(&gpt->params, NULL);
    if (!isfinite(s->st.train_loss) || !isfinite(s->st.val_loss))
        snprintf(what, sizeof what, "the eval %s loss is %g",
                 isfinite(s->st.train_loss) ? "val" : "train",
                 isfinite(s->st.train_loss) ? s->st.val_loss : s->st.train_loss);
    else if (bad)
        snprintf(what, sizeof what, "the weight '%s' holds NaN or Inf", bad);
    else
        return;
    die_diverged(s, s->st.step, what);
}

// ---- SIGINT, SIGTERM: the first ends training after the step (an eval and a save) ----

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

// SA_RESETHAND: a second one of the same signal kills at once. A signal ignored on entry (a
// background job of sh, nohup) stays ignored.
static void catch_stop_signals(void) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int sig = SIGINT; sig; sig = sig == SIGINT ? SIGTERM : 0)
        if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sig, &sa, NULL);
}

// After the save of the step the signal ended: one line, exit 128 + the signal (130, 143).
static void exit_on_signal(const train_state *s, FILE *log) {
    if (log) fclose(log);
    fprintf(stderr, "%s: stopped by %s at step %lld; %s holds it, continue with --resume %s\n",
            prog->name, stop_signal == SIGINT ? "SIGINT" : "SIGTERM", (long long)s->st.step,
            opt.out, opt.out);
    tt_dist_finalize();
    exit(128 + stop_signal);
}

// Buffered writes fail late: checks the --log after each flush (a full disk, /dev/full).
static void check_log(FILE *log, const train_state *s) {
    if (fflush(log) == 0 && !ferror(log)) return;
    int e = errno;
    char kept[4400];
    if (s->saved_step >= 0)
        snprintf(kept, sizeof kept, "%s holds step %lld", opt.out, (long long)s->saved_step);
    else
        snprintf(kept, sizeof kept, "nothing was saved in this run");
    die("cannot write --log '%s': %s; free disk space or pick another --log (training stopped "
        "at step %lld; %s)", opt.log, strerror(e ? e : EIO), (long long)s->st.step, kept);
}

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
    tt_optim_init(&r->o, oc);
    tt_optim_add_decay_groups(&r->o, &r->gpt.params, opt.weight_decay);
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
                "'%s', %d threads%s%s%s\n", prog->name,
                (double)tt_gpt_num_params(&r->gpt, true) / 1e6, (long long)r->s.tok.n_vocab,
                (long long)r->ds.n_train, (long long)(r->ds.n - r->ds.n_train), opt.data,
                nthreads(), par, strcmp(opt.precision, "bf16") == 0 ? ", bf16 products" : "",
                opt.resume ? ", resumed" : "");
    if (opt.resume && r->lead)
        fprintf(stderr, "resumed from %s at step %lld (params fingerprint %016llx)\n",
                opt.resume, (long long)r->s.st.step,
                (unsigned long long)tt_params_fingerprint(&r->gpt.params));
}

void gpt_train_begin(gpt_run *r) {
    memset(r, 0, sizeof *r);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    setup_data(r, &ck);
    setup_model(r, &ck);
    // The micro-batch slots of this rank: fresh, or the checkpoint's streams.
    r->rank = tt_dist_rank();
    r->ranks = tt_dist_world_size();
    r->lead = r->rank == 0;
    r->A = opt.grad_accum;
    r->M = r->A * r->ranks;
    r->B = opt.batch;
    r->T = r->s.cfg.block_size;
    init_slots(r, &ck);
    tt_ckpt_free(&ck);

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
    r->pg = (progress){r->lead && isatty(STDERR_FILENO) != 0, 0, false};
    // --precision bf16: every product of the steps and evals below runs under autocast.
    tt_precision precision = TT_PRECISION_F32;
    tt_precision_parse(opt.precision, &precision);
    tt_autocast_begin(precision);
    r->sched = tt_lr_cosine(opt.lr, opt.warmup, opt.decay_iters, opt.min_lr);
    r->profiling = r->lead && (opt.profile || opt.trace);  // rank 0 profiles its own steps
    if (r->lead && opt.trace) tt_profiler_set_trace(true);
    tt_gpt_train(&r->gpt, true);
    if (r->lead && opt.profile) {  // the model at the training batch's shape
        tt_scope_begin();
        tt_model_summary(stderr, tt_gpt_module(&r->gpt), tt_zeros(TT_I32, TT_SHAPE(r->B, r->T)));
        tt_scope_end();
    }
    r->live_after_first = -1;
    if (r->ranks == 1) catch_stop_signals();  // several ranks: mpirun's signals end them all
}

// ---- the step ----

bool gpt_train_next(gpt_run *r) {
    if (r->s.st.step >= opt.iters) return false;
    r->lr = tt_lr_at(&r->sched, r->s.st.step);
    tt_optim_set_lr(&r->o, r->lr);
    r->t0 = now_s();
    if (r->profiling) tt_profiler_begin();
    tt_scope_begin();
    r->loss_sum = 0;
    return true;
}

void gpt_train_batch(gpt_run *r, int64_t a, tt_tensor **x, tt_tensor **y) {
    if (r->M > 1) slot_batch(r, a, x, y);
    else tt_dataset_batch(&r->ds, TT_SPLIT_TRAIN, r->B, r->T, &r->s.st.data_rng, x, y);
}

void gpt_train_backward(gpt_run *r, int64_t a, tt_tensor *loss) {
    if (r->M > 1) {
        slot_backward(r, a, loss);
        return;
    }
    r->loss_sum = tt_item(loss);
    tt_backward(loss);
}

// At an eval: both losses, the log line, the eval line and the checkpoints.
static void eval_and_save(gpt_run *r, double lossv) {
    train_state *s = &r->s;
    s->st.train_loss = estimate_split(&r->gpt, &r->ds, TT_SPLIT_TRAIN, r->B, r->T,
                                      opt.eval_iters, opt.seed);
    s->st.val_loss = estimate_split(&r->gpt, &r->ds, TT_SPLIT_VAL, r->B, r->T, opt.eval_iters,
                                    opt.seed);
    progress_clear(&r->pg);
    check_finite(s, &r->gpt);  // the update may have made the weights NaN or Inf
    if (r->log)
        fprintf(r->log, "%lld,%.9g,%.9g,%.9g\n", (long long)s->st.step, lossv, s->st.val_loss,
                r->lr);
    bool improved = s->st.val_loss < s->st.best_val_loss;
    if (improved) s->st.best_val_loss = s->st.val_loss;
    if (r->M > 1) gather_slots(r);
    if (!r->lead) {
        s->saved_step = s->st.step;  // rank 0 saved it (or stopped every rank)
        return;
    }
    progress_clear(&r->pg);
    printf("eval step=%lld train_loss=%.6f val_loss=%.6f\n", (long long)s->st.step,
           s->st.train_loss, s->st.val_loss);
    check_stdout();
    fprintf(stderr, "step %lld: train loss %.4f, val loss %.4f%s\n", (long long)s->st.step,
            s->st.train_loss, s->st.val_loss, improved ? " (best so far)" : "");
    save_or_die(s, &r->gpt, &r->o, opt.data, &r->pg, improved);
}

void gpt_train_step(gpt_run *r) {
    train_state *s = &r->s;
    double lossv = r->M > 1 ? slots_reduce(r) : r->loss_sum;
    double norm = opt.grad_clip > 0 ? tt_clip_grad_norm(&r->gpt.params, opt.grad_clip)
                                    : tt_grad_norm(&r->gpt.params);
    if (!isfinite(lossv) || !isfinite(norm)) {
        // Before the update: the parameters in memory are still those of the last step.
        progress_clear(&r->pg);
        char what[100];
        snprintf(what, sizeof what, "the %s is %g", isfinite(lossv) ? "gradient norm" : "loss",
                 isfinite(lossv) ? norm : lossv);
        die_diverged(s, s->st.step + 1, what);
    }
    tt_optim_step(&r->o);
    tt_optim_zero_grad(&r->o);
    tt_scope_end();
    if (r->profiling) tt_profiler_end();
    double dt = now_s() - r->t0;
    s->st.step++;
    r->steps_run++;
    r->train_time += dt;
    // The steady state holds a fixed number of tensors: a step leaks nothing.
    if (r->live_after_first < 0) r->live_after_first = tt_live_tensors();
    else if (tt_live_tensors() != r->live_after_first)
        die("internal error: %lld live tensors after step %lld, %lld after the first",
            (long long)tt_live_tensors(), (long long)s->st.step, (long long)r->live_after_first);

    double ms = 1000.0 * r->train_time / (double)r->steps_run;
    double tok_s = (double)(r->B * r->T * r->M) * (double)r->steps_run / r->train_time;
    bool eval_now = s->st.step % opt.eval_every == 0 || s->st.step == opt.iters || stop_signal;
    if (r->log && !eval_now)
        fprintf(r->log, "%lld,%.9g,,%.9g\n", (long long)s->st.step, lossv, r->lr);
    if (r->lead) progress_step(&r->pg, s->st.step, opt.iters, lossv, ms, tok_s);
    if (eval_now) eval_and_save(r, lossv);
    if (r->log) check_log(r->log, s);
    if (stop_signal) exit_on_signal(s, r->log);
}

// ---- the end ----

int gpt_train_end(gpt_run *r) {
    tt_autocast_end();
    progress_clear(&r->pg);
    double ms = r->steps_run ? 1000.0 * r->train_time / (double)r->steps_run : 0;
    double tok_s = r->train_time > 0
                       ? (double)(r->B * r->T * r->M) * (double)r->steps_run / r->train_time
                       : 0;
    if (r->lead) {
        printf("done steps=%lld train_loss=%.6f val_loss=%.6f ms_per_step=%.3f "
               "tokens_per_s=%.1f\n", (long long)r->s.st.step, r->s.st.train_loss,
               r->s.st.val_loss, ms, tok_s);
        check_stdout();
    }
    if (r->lead && opt.profile) tt_profiler_report(stderr);
    if (r->lead && opt.trace) {
        if (tt_profiler_write_trace(opt.trace) != TT_OK) die("--trace: %s", tt_last_error());
        fprintf(stderr, "%s: wrote %s (%lld events; open it in ui.perfetto.dev)\n", prog->name,
                opt.trace, (long long)tt_profiler_totals().events);
    }
    double ar_s = tt_dist_allreduce_seconds();
    if (r->ranks > 1 && r->lead && r->steps_run > 0)
        fprintf(stderr, "%s: gradient all-reduce %.3f ms per step, the wait for the slowest rank "
                "included (%.1f%% of the step)\n", prog->name,
                1000.0 * ar_s / (double)r->steps_run,
                r->train_time > 0 ? 100.0 * ar_s / r->train_time : 0.0);
    free(r->slots);
    free(r->all_slots);
    free(r->accum);
    free(r->offset);
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
    while (gpt_train_next(&r)) {
        for (int64_t a = 0; a < r.A; a++) {
            tt_tensor *x, *y;
            gpt_train_batch(&r, a, &x, &y);               // (B, T) each
            tt_tensor *loss = tt_gpt_loss(&r.gpt, x, y);  // forward and loss
            gpt_train_backward(&r, a, loss);
        }
        gpt_train_step(&r);  // all-reduce, clip, AdamW, eval, save
    }
    return gpt_train_end(&r);
}
