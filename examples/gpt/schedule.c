// The GPT programs' --schedule (train.h): which flags each schedule reads, their checks, the
// schedule they build, their checkpoint entries and --resume's reading of them. The schedules
// are the library's (optim/optim.h); the trainer observes the val loss and keeps the state.
#include "train.h"
#include "flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the schedules and the flags each reads ----

enum { S_COSINE = 1, S_WSD = 2, S_ONECYCLE = 4, S_PLATEAU = 8, S_CONSTANT = 16 };

static const struct {
    const char *name;
    int bit;
} schedules[] = {
    {"cosine", S_COSINE},   {"wsd", S_WSD},           {"onecycle", S_ONECYCLE},
    {"plateau", S_PLATEAU}, {"constant", S_CONSTANT},
};
#define N_SCHEDULES (sizeof schedules / sizeof schedules[0])
#define SCHEDULE_NAMES "cosine, wsd, onecycle, plateau, constant"

// The schedule flags beyond --lr: the schedules that read each, and its checkpoint key.
typedef enum { K_I64, K_F64, K_STR, K_BOOL } key_kind;
static const struct {
    const char *flag;
    int used_by;
    const char *key;  // NULL: an older flag, saved by ckpt_fill
    key_kind kind;
    void *dst;
} sched_flags[] = {
    {"--warmup", S_COSINE | S_WSD, NULL, K_I64, &opt.warmup},
    {"--decay-iters", S_COSINE | S_WSD | S_ONECYCLE, NULL, K_I64, &opt.decay_iters},
    {"--min-lr", S_COSINE | S_PLATEAU, NULL, K_F64, &opt.min_lr},
    {"--warmdown", S_WSD, "train.warmdown", K_I64, &opt.warmdown},
    {"--final-lr-frac", S_WSD, "train.final_lr_frac", K_F64, &opt.final_lr_frac},
    {"--pct-start", S_ONECYCLE, "train.pct_start", K_F64, &opt.pct_start},
    {"--anneal", S_ONECYCLE, "train.anneal", K_STR, &opt.anneal},
    {"--div-factor", S_ONECYCLE, "train.div_factor", K_F64, &opt.div_factor},
    {"--final-div-factor", S_ONECYCLE, "train.final_div_factor", K_F64, &opt.final_div_factor},
    {"--three-phase", S_ONECYCLE, "train.three_phase", K_BOOL, &opt.three_phase},
    {"--factor", S_PLATEAU, "train.factor", K_F64, &opt.factor},
    {"--patience", S_PLATEAU, "train.patience", K_I64, &opt.patience},
    {"--cooldown", S_PLATEAU, "train.cooldown", K_I64, &opt.cooldown},
    {"--threshold", S_PLATEAU, "train.threshold", K_F64, &opt.threshold},
};
#define N_SCHED_FLAGS (sizeof sched_flags / sizeof sched_flags[0])

// The bit of --schedule's value; 0 when it names none.
static int schedule_bit(const char *name) {
    for (size_t i = 0; i < N_SCHEDULES; i++)
        if (strcmp(schedules[i].name, name) == 0) return schedules[i].bit;
    return 0;
}

bool schedule_uses(const char *flag) {
    int s = schedule_bit(opt.schedule);
    for (size_t i = 0; i < N_SCHED_FLAGS; i++)
        if (strcmp(sched_flags[i].flag, flag) == 0) return (sched_flags[i].used_by & s) != 0;
    return true;
}

// "cosine and wsd": the schedules that read flag i.
static void users(size_t i, char *buf, size_t n) {
    size_t k = 0, left = 0;
    for (size_t j = 0; j < N_SCHEDULES; j++)
        left += (sched_flags[i].used_by & schedules[j].bit) != 0;
    buf[0] = 0;
    for (size_t j = 0; j < N_SCHEDULES && k < n; j++) {
        if (!(sched_flags[i].used_by & schedules[j].bit)) continue;
        left--;
        k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? (left ? ", " : " and ") : "",
                              schedules[j].name);
    }
}

// ---- checks ----

// OneCycleLR divides by each phase's length: none may be empty.
static void check_onecycle_phases(void) {
    double t = (double)opt.decay_iters, e1 = opt.pct_start * t - 1, e2 = 2 * opt.pct_start * t - 2;
    bool empty = e1 == 0 || (opt.three_phase ? e2 == e1 || t - 1 == e2 : t - 1 == e1);
    const char *decay = given("--decay-iters") || opt.resume ? "--decay-iters" : "--iters";
    if (empty)
        die_usage(
            "--pct-start %g of %s %lld leaves a phase of the onecycle schedule without "
            "steps; pick another --pct-start",
            opt.pct_start, decay, (long long)opt.decay_iters);
    if (opt.iters > opt.decay_iters)
        die_usage(
            "--iters %lld is past --decay-iters %lld, where the onecycle schedule ends; "
            "raise --decay-iters or leave it out (it defaults to --iters)",
            (long long)opt.iters, (long long)opt.decay_iters);
}

// wsd: the warmup and the warmdown fit in the schedule (a default warmup is lowered first).
static void check_wsd(void) {
    const char *decay = given("--decay-iters") || opt.resume ? "--decay-iters" : "--iters";
    if (opt.warmdown == 0 && !given("--warmdown") && !opt.resume)
        opt.warmdown = opt.decay_iters / 5;  // nanochat's warmdown_ratio 0.2
    if (opt.warmup + opt.warmdown > opt.decay_iters && !given("--warmup") && !opt.resume) {
        note(
            "--warmup %lld (the default) and --warmdown %lld exceed %s %lld; using --warmup "
            "%lld",
            (long long)opt.warmup, (long long)opt.warmdown, decay, (long long)opt.decay_iters,
            (long long)(opt.decay_iters / 10));
        opt.warmup = opt.decay_iters / 10;
    }
    if (opt.warmup + opt.warmdown > opt.decay_iters)
        die_usage(
            "--warmup %lld%s plus --warmdown %lld%s exceed %s %lld; lower them so the "
            "warmup and the warmdown fit in the run",
            (long long)opt.warmup, origin("--warmup", true), (long long)opt.warmdown,
            origin("--warmdown", true), decay, (long long)opt.decay_iters);
}

void validate_schedule_flags(void) {
    int s = schedule_bit(opt.schedule);
    if (!s) die_usage("--schedule expects one of " SCHEDULE_NAMES ", got '%s'", opt.schedule);
    if (strcmp(opt.anneal, "cos") != 0 && strcmp(opt.anneal, "linear") != 0)
        die_usage("--anneal expects cos or linear, got '%s'", opt.anneal);
    for (size_t i = 0; i < N_SCHED_FLAGS; i++) {
        char who[80];
        if ((sched_flags[i].used_by & s) || !given(sched_flags[i].flag)) continue;
        users(i, who, sizeof who);
        die_usage("%s applies to --schedule %s, not %s; leave it out or pick that schedule",
                  sched_flags[i].flag, who, opt.schedule);
    }
    if (s == S_WSD) check_wsd();
    if (s == S_ONECYCLE) check_onecycle_phases();
}

// ---- the schedule ----

tt_lr_schedule gpt_schedule(void) {
    int s = schedule_bit(opt.schedule);
    if (s == S_WSD)
        return tt_lr_wsd(opt.lr, opt.warmup, opt.warmdown, opt.decay_iters, opt.final_lr_frac);
    if (s == S_CONSTANT) return tt_lr_constant(opt.lr);
    if (s == S_PLATEAU) {
        tt_lr_schedule p = tt_lr_plateau(opt.lr);
        p.plateau.factor = opt.factor;
        p.plateau.patience = opt.patience;
        p.plateau.cooldown = opt.cooldown;
        p.plateau.threshold = opt.threshold;
        p.plateau.min_lr = opt.min_lr;
        return p;
    }
    if (s == S_ONECYCLE) {
        tt_lr_schedule o = tt_lr_onecycle(opt.lr, opt.decay_iters);
        o.onecycle.pct_start = opt.pct_start;
        o.onecycle.anneal =
            strcmp(opt.anneal, "linear") == 0 ? TT_LR_ANNEAL_LINEAR : TT_LR_ANNEAL_COS;
        o.onecycle.div_factor = opt.div_factor;
        o.onecycle.final_div_factor = opt.final_div_factor;
        o.onecycle.three_phase = opt.three_phase;
        return o;
    }
    return tt_lr_cosine(opt.lr, opt.warmup, opt.decay_iters, opt.min_lr);
}

// ---- checkpoints ----

void schedule_ckpt_fill(tt_checkpoint *ck) {
    tt_ckpt_set_bytes(ck, "train.schedule", opt.schedule, strlen(opt.schedule));
    for (size_t i = 0; i < N_SCHED_FLAGS; i++) {
        const char *key = sched_flags[i].key;
        void *v = sched_flags[i].dst;
        if (!key) continue;
        if (sched_flags[i].kind == K_I64) tt_ckpt_set_i64(ck, key, *(int64_t *)v);
        if (sched_flags[i].kind == K_F64) tt_ckpt_set_f64(ck, key, *(double *)v);
        if (sched_flags[i].kind == K_BOOL) tt_ckpt_set_i64(ck, key, *(bool *)v);
        if (sched_flags[i].kind == K_STR)
            tt_ckpt_set_bytes(ck, key, *(const char **)v, strlen(*(const char **)v));
    }
}

// The string entry key of ck into buf (cap 16); false when absent.
static bool ck_name(const tt_checkpoint *ck, const char *key, char *buf) {
    const unsigned char *b;
    size_t n;
    if (!tt_ckpt_get_bytes(ck, key, &b, &n)) return false;
    if (n > 15) n = 15;
    memcpy(buf, b, n);
    buf[n] = 0;
    return true;
}

// --resume: the run's schedule (cosine in a file from before --schedule); a --schedule given
// must be it. Each schedule flag not given comes from the file when it holds it.
void schedule_resume_flags(const tt_checkpoint *ck, const char *path) {
    static char names[2][16];
    if (!ck_name(ck, "train.schedule", names[0])) strcpy(names[0], "cosine");
    if (given("--schedule") && strcmp(opt.schedule, names[0]) != 0)
        die_usage(
            "--resume: '%s' was trained with --schedule %s, not %s; leave out "
            "--schedule (it comes from the checkpoint) or start a new run",
            path, names[0], opt.schedule);
    opt.schedule = names[0];
    for (size_t i = 0; i < N_SCHED_FLAGS; i++) {
        const char *key = sched_flags[i].key, *flag = sched_flags[i].flag;
        void *v = sched_flags[i].dst;
        int64_t x;
        if (!key || given(flag)) continue;
        switch (sched_flags[i].kind) {
            case K_STR:
                if (ck_name(ck, key, names[1])) *(const char **)v = names[1];
                break;
            case K_F64:
                if (tt_ckpt_get_f64(ck, key, (double *)v)) from_ckpt(flag, path);
                break;
            case K_I64:
                if (tt_ckpt_get_i64(ck, key, &x)) *(int64_t *)v = x, from_ckpt(flag, path);
                break;
            case K_BOOL:
                if (tt_ckpt_get_i64(ck, key, &x)) *(bool *)v = x != 0;
                break;
        }
    }
}

int schedule_hash_values(double *v) {
    int n = 0;
    v[n++] = (double)schedule_bit(opt.schedule);
    for (size_t i = 0; i < N_SCHED_FLAGS; i++) {
        const void *p = sched_flags[i].dst;
        if (!sched_flags[i].key) continue;
        switch (sched_flags[i].kind) {
            case K_I64:
                v[n++] = (double)*(const int64_t *)p;
                break;
            case K_F64:
                v[n++] = *(const double *)p;
                break;
            case K_BOOL:
                v[n++] = *(const bool *)p;
                break;
            case K_STR:
                v[n++] = (double)strlen(*(const char *const *)p);
                break;  // cos, linear
        }
    }
    return n;
}
