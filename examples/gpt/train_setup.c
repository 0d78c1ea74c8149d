// The GPT programs' train flags (train.h): the checkpoint entries a run writes beside the
// model, the flags --resume reads back from them, and the checks of the train flags.
#include "train.h"
#include "flags.h"

#include "dist/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The GPT checkpoint (models/gpt: config, model, optimizer, training state) plus this program's
// entries: the tokenizer and the training flags --resume and eval read back.
void ckpt_fill(tt_checkpoint *ck, const train_state *s, const tt_gpt *gpt, const tt_optim *o,
               const char *data_path) {
    tt_gpt_ckpt_fill(ck, gpt, o, &s->st);
    tt_tokenizer_to_checkpoint(&s->tok, ck);
    tt_ckpt_set_bytes(ck, "train.data", data_path, strlen(data_path));
    tt_ckpt_set_i64(ck, "train.iters", opt.iters);
    tt_ckpt_set_i64(ck, "train.decay_iters", opt.decay_iters);
    tt_ckpt_set_i64(ck, "train.warmup", opt.warmup);
    tt_ckpt_set_f64(ck, "train.lr", opt.lr);
    tt_ckpt_set_f64(ck, "train.min_lr", opt.min_lr);
    tt_ckpt_set_f64(ck, "train.weight_decay", opt.weight_decay);
    tt_ckpt_set_f64(ck, "train.beta2", opt.beta2);
    tt_ckpt_set_bytes(ck, "train.optim", opt.optim, strlen(opt.optim));
    tt_ckpt_set_f64(ck, "train.muon_lr", opt.muon_lr);
    tt_ckpt_set_f64(ck, "train.muon_weight_decay", opt.muon_weight_decay);
    tt_ckpt_set_f64(ck, "train.grad_clip", opt.grad_clip);
    tt_ckpt_set_i64(ck, "train.batch", opt.batch);
    tt_ckpt_set_i64(ck, "train.eval_every", opt.eval_every);
    tt_ckpt_set_i64(ck, "train.eval_iters", opt.eval_iters);
    tt_ckpt_set_i64(ck, "train.seed", opt.seed);
    tt_ckpt_set_bytes(ck, "train.precision", opt.precision, strlen(opt.precision));
    tt_ckpt_set_i64(ck, "train.grad_accum", opt.grad_accum);
    tt_ckpt_set_i64(ck, "train.ranks", tt_dist_world_size());
    tt_ckpt_set_i64(ck, "train.micro_batches", s->micro_batches);
    schedule_ckpt_fill(ck);
    if (s->micro_batches > 1)
        tt_ckpt_set_bytes(ck, "train.rng_slots", s->slot_bytes,
                          (size_t)(s->micro_batches - 1) * SLOT_BYTES);
}

// The short string at key into buf (cut to size - 1 bytes); false when ck has none.
static bool ckpt_word(const tt_checkpoint *ck, const char *key, char *buf, size_t size) {
    const unsigned char *b;
    size_t n;
    if (!tt_ckpt_get_bytes(ck, key, &b, &n)) return false;
    if (n >= size) n = size - 1;
    memcpy(buf, b, n);
    buf[n] = 0;
    return true;
}

// On --resume: --optim and --muon-lr when not given (a checkpoint from before them: AdamW).
static void optim_from_ckpt(const tt_checkpoint *ck, const char *path) {
    static char name[8];
    if (!given("--optim") && ckpt_word(ck, "train.optim", name, sizeof name)) {
        if (!optim_known(name))
            die("checkpoint '%s': train.optim '%s' is not adamw nor muon; it was written by a "
                "newer program",
                path, name);
        opt.optim = name;
        from_ckpt("--optim", path);
    }
    if (!given("--muon-lr") && tt_ckpt_get_f64(ck, "train.muon_lr", &opt.muon_lr))
        from_ckpt("--muon-lr", path);
    if (!given("--muon-weight-decay") &&
        tt_ckpt_get_f64(ck, "train.muon_weight_decay", &opt.muon_weight_decay))
        from_ckpt("--muon-weight-decay", path);
}

// On --resume: each flag not given comes from the checkpoint; model flags given must match.
void resume_flags(const tt_checkpoint *ck, const char *path, const train_state *s) {
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        double mine = tt_gpt_field_get(&opt.cfg, f), theirs = tt_gpt_field_get(&s->cfg, f);
        const char *flag = gpt_model_flag(i);
        if (!flag || !given(flag) || mine == theirs) continue;
        if (f->type == TT_GPT_FIELD_I64)
            die_usage("--resume: '%s' was trained with %s %lld, not %lld; leave out %s (it "
                      "comes from the checkpoint) or start a new run", path, flag,
                      (long long)theirs, (long long)mine, flag);
        die_usage("--resume: '%s' was trained with another %s; leave it out (it comes from "
                  "the checkpoint) or start a new run", path, flag);
    }
    opt.cfg = s->cfg;

    struct { const char *flag, *key; int64_t *dst; } ti[] = {
        {"--iters", "train.iters", &opt.iters},
        {"--decay-iters", "train.decay_iters", &opt.decay_iters},
        {"--warmup", "train.warmup", &opt.warmup}, {"--batch", "train.batch", &opt.batch},
        {"--eval-every", "train.eval_every", &opt.eval_every},
        {"--eval-iters", "train.eval_iters", &opt.eval_iters},
        {"--seed", "train.seed", &opt.seed},
    };
    // An --iters given without --decay-iters keeps the checkpoint's schedule.
    for (size_t i = 0; i < sizeof ti / sizeof ti[0]; i++)
        if (!given(ti[i].flag)) {
            *ti[i].dst = ck_i64(ck, path, ti[i].key, INT64_MIN, INT64_MAX);
            from_ckpt(ti[i].flag, path);
        }
    struct { const char *flag, *key; double *dst; } tf[] = {
        {"--lr", "train.lr", &opt.lr}, {"--min-lr", "train.min_lr", &opt.min_lr},
        {"--weight-decay", "train.weight_decay", &opt.weight_decay},
        {"--beta2", "train.beta2", &opt.beta2}, {"--grad-clip", "train.grad_clip", &opt.grad_clip},
    };
    for (size_t i = 0; i < sizeof tf / sizeof tf[0]; i++)
        if (!given(tf[i].flag)) {
            *tf[i].dst = ck_f64(ck, path, tf[i].key);
            from_ckpt(tf[i].flag, path);
        }
    // Micro-batches per step (a checkpoint from before them: 1). Their streams continue, so
    // the number of ranks may change as long as it divides them; --grad-accum follows.
    int64_t mb = 1, ranks = tt_dist_world_size();
    if (tt_ckpt_get_i64(ck, "train.micro_batches", &mb))
        mb = ck_i64(ck, path, "train.micro_batches", 1, 1 << 20);
    if (!given("--grad-accum") && mb % ranks != 0)
        die_usage("--resume: '%s' takes %lld micro-batches per step, which %lld ranks cannot "
                  "share; run a number of ranks that divides %lld", path, (long long)mb,
                  (long long)ranks, (long long)mb);
    if (!given("--grad-accum")) {
        opt.grad_accum = mb / ranks;
        from_ckpt("--grad-accum", path);
    }
    if (opt.grad_accum * ranks != mb)
        die_usage("--resume: '%s' takes %lld micro-batches per step, but %lld ranks x "
                  "--grad-accum %lld take %lld; leave out --grad-accum (it follows the number "
                  "of ranks) or start a new run", path, (long long)mb, (long long)ranks,
                  (long long)opt.grad_accum, (long long)(opt.grad_accum * ranks));
    optim_from_ckpt(ck, path);
    // The precision of the products (a checkpoint from before the flag: f32).
    static char prec[8];
    if (!given("--precision") && ckpt_word(ck, "train.precision", prec, sizeof prec)) {
        tt_precision p;
        if (!tt_precision_parse(prec, &p))
            die("checkpoint '%s': train.precision '%s' is not f32 nor bf16; it was written by "
                "a newer program", path, prec);
        opt.precision = prec;
    }
    schedule_resume_flags(ck, path);
    data_from_ckpt(ck);
}

// --min-lr at most --lr (cosine, plateau): a default above a given --lr is lowered.
static void check_min_lr(void) {
    if (opt.min_lr > opt.lr && !given("--min-lr") && !opt.resume) {
        note("--min-lr %g (the default) is above --lr %g; using --min-lr %g", opt.min_lr,
             opt.lr, opt.lr / 10);
        opt.min_lr = opt.lr / 10;
    }
    bool both = given("--min-lr") && given("--lr");
    if (opt.min_lr > opt.lr)
        die_usage("--min-lr %g%s must be at most --lr %g%s; %s --min-lr%s, e.g. --min-lr %g",
                  opt.min_lr, origin("--min-lr", !both), opt.lr, origin("--lr", !both),
                  given("--min-lr") ? "lower" : "give", given("--min-lr") ? "" : " too",
                  opt.lr / 10);
}

// --warmup below the decay length (cosine, wsd): a default that is not is lowered.
static void check_warmup(void) {
    const char *decay = given("--decay-iters") || opt.resume ? "--decay-iters" : "--iters";
    if (opt.warmup >= opt.decay_iters && !given("--warmup") && !opt.resume) {
        note("--warmup %lld (the default) is not below %s %lld; using --warmup %lld",
             (long long)opt.warmup, decay, (long long)opt.decay_iters,
             (long long)(opt.decay_iters / 10));
        opt.warmup = opt.decay_iters / 10;
    }
    bool both = given("--warmup") && given(decay);
    if (opt.warmup >= opt.decay_iters)  // the decay length: --decay-iters, by default --iters
        die_usage("--warmup %lld%s must be below %s %lld%s; %s --warmup%s, e.g. --warmup %lld",
                  (long long)opt.warmup, origin("--warmup", !both), decay,
                  (long long)opt.decay_iters, origin(decay, !both),
                  given("--warmup") ? "lower" : "give", given("--warmup") ? "" : " too",
                  (long long)(opt.decay_iters / 10));
}

// The train flags in range and consistent.
void validate_train_flags(void) {
    tt_gpt_config *c = &opt.cfg;
    if (!given("--kv-heads") && !opt.resume) c->n_kv_head = c->n_head;  // plain multi-head
    for (int i = 0; i < tt_gpt_nfields; i++)  // each model flag within its range
        if (gpt_model_flag(i) && tt_gpt_fields[i].type <= TT_GPT_FIELD_F64)
            check_flag(gpt_model_flag(i));
    if (opt.decay_iters == 0 && !given("--decay-iters")) opt.decay_iters = opt.iters;
    // A default never conflicts with a flag the user gave: it is lowered, with a note.
    if (schedule_uses("--min-lr")) check_min_lr();
    if (c->n_embd % c->n_head != 0)
        die_usage("--embd %lld is not divisible by --heads %lld; pick --heads among the "
                  "divisors of --embd", (long long)c->n_embd, (long long)c->n_head);
    if (c->n_head % c->n_kv_head != 0)
        die_usage("--heads %lld is not divisible by --kv-heads %lld; pick --kv-heads among "
                  "the divisors of --heads", (long long)c->n_head, (long long)c->n_kv_head);
    if (c->positional == TT_POS_ROPE && (c->n_embd / c->n_head) % 2 != 0)
        die_usage("--pos rope needs an even head size, but --embd / --heads = %lld; change "
                  "--embd or --heads", (long long)(c->n_embd / c->n_head));
    if (schedule_uses("--warmup")) check_warmup();
    validate_schedule_flags();
}
