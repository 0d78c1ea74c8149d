// Compression side by side: a trained char-level GPT (the baby config trained here, or
// --ckpt from `char_gpt train`) as f32, int8 (tt_gpt_quantize), 50% magnitude-pruned (global
// over the block weights) before and after a short fine-tune, and with every block Linear at
// half rank before and after one; one table of parameters, FLOPs, bytes, val loss, tokens/s.
// The f32+ft row fine-tunes the dense model the same way, the control for the +ft rows.
//
//     build/compress                                  # trains the baby GPT first (~1 min)
//     build/compress --ckpt out/char_gpt.best.ckpt    # a char_gpt checkpoint
//
// Everything but tokens/s is deterministic given --seed. Exits 2 on a bad argument.
#include "tinytorch.h"
#include "models/gpt/gpt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
    const char *ckpt, *data;
    int64_t iters, ft_iters, layers, heads, embd, block, batch, eval_iters, tokens, seed, threads;
    double lr, ft_lr;
} opt = {NULL, "data/tinyshakespeare.txt", 600, 100, 4, 4, 128, 64, 16, 20, 256, 1337, 0,
         1e-3, 3e-4};

static const char *usage =
    "usage: compress [--ckpt FILE | --layers 4 --heads 4 --embd 128 --block 64 --iters 600]\n"
    "                [--data data/tinyshakespeare.txt] [--batch 16] [--lr 1e-3]\n"
    "                [--ft-iters 100] [--ft-lr 3e-4] [--eval-iters 20] [--tokens 256]\n"
    "                [--seed 1337] [--threads N]\n"
    "Without --ckpt a GPT of the given shape is trained for --iters steps on --data first.\n"
    "Then prints one table: f32, int8, f32 + fine-tune, 50% pruned (+ fine-tune) and rank/2\n"
    "(+ fine-tune).\n";

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "compress: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static void parse(int argc, char **argv) {
    struct { const char *name; int64_t *i; double *f; const char **s; int64_t lo, hi; } f[] = {
        {"--ckpt", NULL, NULL, &opt.ckpt, 0, 0}, {"--data", NULL, NULL, &opt.data, 0, 0},
        {"--iters", &opt.iters, NULL, NULL, 1, 1000000},
        {"--ft-iters", &opt.ft_iters, NULL, NULL, 0, 1000000},
        {"--layers", &opt.layers, NULL, NULL, 1, 64}, {"--heads", &opt.heads, NULL, NULL, 1, 64},
        {"--embd", &opt.embd, NULL, NULL, 1, 4096}, {"--block", &opt.block, NULL, NULL, 2, 4096},
        {"--batch", &opt.batch, NULL, NULL, 1, 4096},
        {"--eval-iters", &opt.eval_iters, NULL, NULL, 1, 100000},
        {"--tokens", &opt.tokens, NULL, NULL, 1, 1000000},
        {"--seed", &opt.seed, NULL, NULL, 0, INT64_MAX},
        {"--threads", &opt.threads, NULL, NULL, 1, 1024},
        {"--lr", NULL, &opt.lr, NULL, 0, 0}, {"--ft-lr", NULL, &opt.ft_lr, NULL, 0, 0},
    };
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        }
        size_t k = 0;
        while (k < sizeof f / sizeof f[0] && strcmp(argv[a], f[k].name) != 0) k++;
        if (k == sizeof f / sizeof f[0]) die("unknown argument '%s'; see --help", argv[a]);
        if (a + 1 >= argc) die("%s needs a value", argv[a]);
        const char *v = argv[++a];
        char *end;
        if (f[k].s) {
            *f[k].s = v;
        } else if (f[k].i) {
            long long x = strtoll(v, &end, 10);
            if (*v == '\0' || *end != '\0' || x < f[k].lo || x > f[k].hi)
                die("%s %s is %s; use an integer in [%lld, %lld]", f[k].name, v,
                    *v && !*end ? "out of range" : "not an integer", (long long)f[k].lo,
                    (long long)f[k].hi);
            *f[k].i = x;
        } else {
            double x = strtod(v, &end);
            if (*v == '\0' || *end != '\0' || !(x > 0 && x < 1))
                die("%s must be a number in (0, 1)", f[k].name);
            *f[k].f = x;
        }
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---- training and evaluation ----

// steps of AdamW (weight decay 0.1 on matrices, grad clip 1) over m->params with a cosine
// schedule from lr (warmup steps / 10), through the trainer; tt_prune_apply(pr) after each
// step when pr is given. A diverging loss stops the program naming the step.
static void train(tt_gpt *m, const tt_text_dataset *ds, int64_t steps, double lr, uint64_t seed,
                  const tt_pruning *pr) {
    if (steps == 0) return;
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(lr));
    tt_optim_add_decay_groups(&o, &m->params, 0.1);
    tt_lr_schedule sched = tt_lr_cosine(lr, steps / 10, steps, lr / 10);
    tt_trainer_opts to = tt_trainer_opts_default();
    to.iters = steps;
    to.clip = 1.0;
    tt_trainer tr;
    if (tt_trainer_init(&tr, &to, &m->params, &o, &sched) != TT_OK) die("%s", tt_last_error());
    tt_rng r;
    tt_rng_seed(&r, seed);
    tt_gpt_train(m, true);
    while (tt_trainer_next(&tr)) {
        tt_scope_begin();
        tt_tensor *x, *y;  // (B, T) each
        tt_dataset_batch(ds, TT_SPLIT_TRAIN, opt.batch, m->cfg.block_size, &r, &x, &y);
        tt_trainer_backward(&tr, tt_gpt_loss(m, x, y));
        tt_scope_end();
        if (!tt_trainer_step(&tr)) die("%s; lower --lr and --ft-lr", tt_last_error());
        if (pr) tt_prune_apply(pr);
    }
    tt_gpt_train(m, false);
    tt_trainer_free(&tr);
    tt_optim_free(&o);
}

// The mean loss over eval_iters validation batches drawn from a fixed stream (the same
// batches for every model).
static double val_loss(tt_gpt *m, const tt_text_dataset *ds) {
    tt_rng r;
    tt_rng_seed(&r, (uint64_t)opt.seed + 77);
    tt_no_grad_begin();
    double sum = 0;
    for (int64_t i = 0; i < opt.eval_iters; i++) {
        tt_scope_begin();
        tt_tensor *x, *y;
        tt_dataset_batch(ds, TT_SPLIT_VAL, opt.batch, m->cfg.block_size, &r, &x, &y);
        sum += tt_item(tt_gpt_loss(m, x, y));
        tt_scope_end();
    }
    tt_no_grad_end();
    return sum / (double)opt.eval_iters;
}

// Tokens per second of tt_gpt_generate with the KV cache on one thread (decoding one token
// at a time is too small to share, and on a busy machine a second thread mostly waits),
// opt.tokens new tokens after a one-token prompt, the best of three runs.
static double tokens_per_s(tt_gpt *m) {
    int threads = tt_get_num_threads();
    tt_set_num_threads(1);
    int32_t *out = malloc((size_t)opt.tokens * sizeof *out), prompt = 0;
    tt_sample_opts so = tt_sample_opts_default();
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        tt_rng r;
        tt_rng_seed(&r, (uint64_t)opt.seed + 5);
        double t0 = now_s();
        tt_gpt_generate(m, &prompt, 1, opt.tokens, &so, &r, out, NULL, NULL);
        double tps = (double)opt.tokens / (now_s() - t0);
        if (tps > best) best = tps;
    }
    free(out);
    tt_set_num_threads(threads);
    return best;
}

// ---- the figures of one model ----

typedef struct row {
    const char *name;
    int64_t params, nonzero;      // every parameter; those not 0
    double sparsity;              // zeros among the block weights (what pruning prunes)
    double mflops, mflops_nz;     // per token at a full context, dense and nonzero
    double size_kb, matmul_kb;    // all weights as stored; those the matmuls read
    double val_loss, tok_s;
} row;

// FLOPs per token of the forward at context T = block_size: 2 per multiply-add of every
// Linear (the factored ones as their two factors) and of the head (C V), plus attention's
// q k^T and att v, 2 T C each per layer. The nonzero count takes 2 per nonzero weight.
static row measure(const char *name, tt_gpt *m, const tt_text_dataset *ds, int64_t f32_other) {
    row r = {.name = name};
    const tt_gpt_config *c = &m->cfg;
    r.params = tt_gpt_num_params(m, false);
    for (int i = 0; i < m->params.n; i++) r.nonzero += tt_count_nonzero(m->params.items[i].tensor);
    tt_params w;
    tt_params_init(&w);
    tt_gpt_block_weights(m, &w);
    r.sparsity = tt_sparsity(&w);
    int64_t dense = 0, nz = 0;
    for (int i = 0; i < w.n; i++) {
        dense += tt_numel(w.items[i].tensor);
        nz += tt_count_nonzero(w.items[i].tensor);
    }
    tt_params_free(&w);
    tt_tensor *head = m->lm_head.weight ? m->lm_head.weight : m->wte.weight;
    double attn = 4.0 * (double)(c->n_layer * c->block_size * c->n_embd);
    r.mflops = (2.0 * (double)(dense + tt_numel(head)) + attn) / 1e6;
    r.mflops_nz = (2.0 * (double)(nz + tt_count_nonzero(head)) + attn) / 1e6;
    r.matmul_kb = (double)tt_gpt_matmul_weight_bytes(m) / 1024.0;
    // Stored: the matmul weights plus the rest (embeddings, norms) in f32; a tied head is the
    // embedding table, counted once unless it also has an int8 copy.
    int64_t tied = c->tie_weights && !m->head_q ? 4 * tt_numel(m->wte.weight) : 0;
    r.size_kb = (double)(tt_gpt_matmul_weight_bytes(m) - tied + f32_other) / 1024.0;
    r.val_loss = val_loss(m, ds);
    r.tok_s = tokens_per_s(m);
    return r;
}

static void print_row(const row *r) {
    printf("%-12s %8lld %8lld %8.4f %9.3f %9.3f %9.1f %9.1f %8.4f %8.0f\n", r->name,
           (long long)r->params, (long long)r->nonzero, r->sparsity, r->mflops, r->mflops_nz,
           r->size_kb, r->matmul_kb, r->val_loss, r->tok_s);
}

// A copy of the model in ck (tt_gpt_ckpt_fill of the trained one).
static void clone(tt_gpt *m, const tt_checkpoint *ck) {
    if (tt_gpt_ckpt_model(m, ck) != TT_OK) die("cannot copy the model: %s", tt_last_error());
}

int main(int argc, char **argv) {
    parse(argc, argv);
    if (opt.threads > 0) tt_set_num_threads((int)opt.threads);
    tt_gpt gpt;
    tt_text_dataset ds;
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    double t0 = now_s();
    if (opt.ckpt) {
        if (tt_ckpt_load(&ck, opt.ckpt) != TT_OK) die("--ckpt: %s", tt_last_error());
        const unsigned char *b;
        size_t n;
        tt_char_vocab vocab;
        if (!tt_ckpt_get_bytes(&ck, "vocab", &b, &n) || n > 256 ||
            tt_vocab_from_chars(&vocab, b, (int)n) != TT_OK)
            die("--ckpt '%s' has no char vocab; give a char_gpt checkpoint", opt.ckpt);
        if (tt_gpt_ckpt_model(&gpt, &ck) != TT_OK) die("--ckpt: %s", tt_last_error());
        if (tt_dataset_load(&ds, opt.data, &vocab, 0.9) != TT_OK)
            die("--data: %s", tt_last_error());
        tt_ckpt_free(&ck);
        tt_ckpt_init(&ck);
    } else {
        if (tt_dataset_load(&ds, opt.data, NULL, 0.9) != TT_OK) die("--data: %s", tt_last_error());
        tt_gpt_config cfg = tt_gpt_config_default();
        cfg.vocab_size = ds.vocab.size;
        cfg.block_size = opt.block;
        cfg.n_layer = opt.layers;
        cfg.n_head = opt.heads;
        cfg.n_kv_head = opt.heads;
        cfg.n_embd = opt.embd;
        tt_rng rng;
        tt_rng_seed(&rng, (uint64_t)opt.seed);
        if (tt_gpt_init(&gpt, &cfg, &rng) != TT_OK) die("%s", tt_last_error());
    }
    if (tt_dataset_check(&ds, gpt.cfg.block_size) != TT_OK) die("--data: %s", tt_last_error());
    if (!opt.ckpt) train(&gpt, &ds, opt.iters, opt.lr, (uint64_t)opt.seed + 1, NULL);
    double t_train = now_s() - t0;
    tt_gpt_ckpt_fill(&ck, &gpt, NULL, NULL);

    // The f32 bytes of everything but the matmul weights (embeddings, norms).
    int64_t f32_other = 4 * tt_gpt_num_params(&gpt, false) - tt_gpt_matmul_weight_bytes(&gpt) +
                        (gpt.cfg.tie_weights ? 4 * tt_numel(gpt.wte.weight) : 0);
    const tt_gpt_config *c = &gpt.cfg;
    printf("# compress: L%lld H%lld C%lld T%lld V%lld, %s, seed %lld; fine-tunes %lld steps "
           "(lr %g, batch %lld); val loss over %lld batches; tok/s: %lld tokens with the KV "
           "cache on 1 thread; %d threads\n", (long long)c->n_layer, (long long)c->n_head,
           (long long)c->n_embd, (long long)c->block_size, (long long)c->vocab_size,
           opt.ckpt ? opt.ckpt : "trained here", (long long)opt.seed, (long long)opt.ft_iters,
           opt.ft_lr, (long long)opt.batch, (long long)opt.eval_iters, (long long)opt.tokens,
           tt_get_num_threads()
    );
    printf("%-12s %8s %8s %8s %9s %9s %9s %9s %8s %8s\n", "model", "params", "nonzero",
           "sparsity", "MFLOP/tok", "nz_MFLOP", "size_KB", "matmul_KB", "val_loss", "tok/s");
    row f32 = measure("f32", &gpt, &ds, f32_other);
    print_row(&f32);
    fflush(stdout);

    tt_gpt q;
    clone(&q, &ck);
    tt_gpt_quantize(&q);
    row r = measure("int8", &q, &ds, f32_other);
    print_row(&r);
    tt_gpt_free(&q);

    // The control: the dense model fine-tuned as the compressed ones are.
    tt_gpt ft;
    clone(&ft, &ck);
    train(&ft, &ds, opt.ft_iters, opt.ft_lr, (uint64_t)opt.seed + 2, NULL);
    r = measure("f32+ft", &ft, &ds, f32_other);
    print_row(&r);
    tt_gpt_free(&ft);

    tt_gpt p;
    clone(&p, &ck);
    tt_params w;
    tt_params_init(&w);
    tt_gpt_block_weights(&p, &w);
    tt_pruning pr;
    tt_pruning_init(&pr);
    tt_prune_global_unstructured(&pr, &w, 0.5);
    r = measure("pruned50", &p, &ds, f32_other);
    print_row(&r);
    train(&p, &ds, opt.ft_iters, opt.ft_lr, (uint64_t)opt.seed + 2, &pr);
    r = measure("pruned50+ft", &p, &ds, f32_other);
    print_row(&r);
    tt_pruning_free(&pr);
    tt_params_free(&w);
    tt_gpt_free(&p);

    tt_gpt lr;
    clone(&lr, &ck);
    tt_gpt_low_rank(&lr, 0.5);
    r = measure("rank/2", &lr, &ds, f32_other);
    print_row(&r);
    train(&lr, &ds, opt.ft_iters, opt.ft_lr, (uint64_t)opt.seed + 3, NULL);
    r = measure("rank/2+ft", &lr, &ds, f32_other);
    print_row(&r);
    tt_gpt_free(&lr);

    printf("# %s %.1f s, all %.1f s\n", opt.ckpt ? "load" : "train", t_train, now_s() - t0);
    tt_ckpt_free(&ck);
    tt_dataset_free(&ds);
    tt_gpt_free(&gpt);
    return 0;
}
