// char_lstm: a character-level LSTM language model on Tiny Shakespeare (embedding -> 2-layer
// LSTM -> linear head, AdamW), trained on char_gpt's batches and evaluated on the same val
// batches, so the two val losses compare; then samples text carrying the LSTM state.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"

static const char *usage = "flags: --data FILE, > 0: --iters --batch --block --hidden --seed --lr";
static struct { const char *data; int64_t iters, batch, block, hidden, seed; double lr; } o = {
    "data/tinyshakespeare.txt", 2000, 12, 64, 256, 1337, 2e-3};
static const struct flag { const char *name; int64_t *i; double *f; } flags[] = {
    {"--iters", .i = &o.iters}, {"--batch", .i = &o.batch}, {"--block", .i = &o.block},
    {"--hidden", .i = &o.hidden}, {"--seed", .i = &o.seed}, {"--lr", .f = &o.lr}, {NULL}};

// --flag value pairs. Bad input: one line naming the flag, exit 2 (an example, not a library).
static void parse(int argc, char **argv) {
    for (int a = 1; a < argc; a += 2) {
        const char *f = argv[a], *v = a + 1 < argc ? argv[a + 1] : "";
        if (strcmp(f, "--data") == 0 && *v) { o.data = v; continue; }
        int k = 0;
        while (flags[k].name && strcmp(f, flags[k].name) != 0) k++;
        char *end;
        double x = strtod(v, &end);
        if (!flags[k].name || !*v || *end || !(x > 0) ||
            (flags[k].i && (x != floor(x) || x > 1 << 30)))  // an int64 holds any integer here
            fprintf(stderr, "char_lstm: bad flag or value '%s %s'; %s\n", f, v, usage), exit(2);
        if (flags[k].i) *flags[k].i = (int64_t)x;
        else *flags[k].f = x;
    }
}

typedef struct model { tt_nn_embedding emb; tt_nn_lstm lstm; tt_nn_linear head; } model;
// (B, T) tokens -> (B, T, V) logits; h, c (L, B, H) or NULL for zeros, updated when given.
static tt_tensor *forward(model *m, tt_tensor *x, tt_tensor **h, tt_tensor **c) {
    tt_tensor *e = tt_nn_embedding_forward(&m->emb, x);  // (B, T, E)
    tt_tensor *y = tt_nn_lstm_forward(&m->lstm, e, h ? *h : NULL, c ? *c : NULL, h, c);
    return tt_nn_linear_forward(&m->head, y);         // (B, T, H) -> (B, T, V)
}

// The val loss as char_gpt estimates it: the mean over the same 20 batches (--eval-iters 20).
static double val_loss(model *m, const tt_text_dataset *ds) {
    tt_rng r;
    tt_rng_seed(&r, (uint64_t)o.seed * 0x9E3779B97F4A7C15ull + 0x5EED0000ull + TT_SPLIT_VAL);
    double sum = 0;
    for (int i = 0; i < 20; i++) {
        tt_scope_begin();
        tt_tensor *x, *y;
        tt_dataset_batch(ds, TT_SPLIT_VAL, o.batch, o.block, &r, &x, &y);  // (B, T) each
        sum += tt_item(tt_cross_entropy(forward(m, x, NULL, NULL), y, -1));
        tt_scope_end();
    }
    return sum / 20;
}

int main(int argc, char **argv) {
    parse(argc, argv);
    char found[4096];  // the default corpus, when not here, where tt_data_path finds it
    FILE *here = NULL;
    if (strcmp(o.data, "data/tinyshakespeare.txt") == 0 && !(here = fopen(o.data, "rb")) &&
        tt_data_path("tinyshakespeare.txt", found, sizeof found) == TT_OK)
        o.data = found;
    if (here) fclose(here);
    tt_text_dataset ds;  // nanoGPT's split: the first 90% train, the rest val
    if (tt_dataset_load(&ds, o.data, NULL, 0.9) || tt_dataset_check(&ds, o.block))
        fprintf(stderr, "char_lstm: --data: %s\n", tt_last_error()), exit(2);
    tt_rng rng, data_rng;  // char_gpt's seeds: the same training batches
    tt_rng_seed(&rng, (uint64_t)o.seed);
    tt_rng_seed(&data_rng, (uint64_t)o.seed ^ 0xDA7A5EEDull);
    model m;
    int64_t V = ds.vocab.size;
    tt_nn_embedding_init(&m.emb, V, 64, &rng);                 // 64-wide embeddings
    tt_nn_lstm_init(&m.lstm, 64, o.hidden, 2, true, true, &rng);  // 2 layers, bias, batch_first
    tt_nn_linear_init(&m.head, o.hidden, V, true, &rng);
    tt_params params;  // "emb.weight", "lstm.weight_ih_l0", ..., "head.bias"
    tt_params_init(&params);
    tt_nn_embedding_params(&m.emb, &params, "emb");
    tt_nn_lstm_params(&m.lstm, &params, "lstm");
    tt_nn_linear_params(&m.head, &params, "head");
    tt_optim opt;  // char_gpt's optimizer: AdamW, beta2 0.99, decay 0.1, warmup + cosine
    tt_optim_config cfg = tt_adamw_config(o.lr);
    cfg.beta2 = 0.99;
    tt_optim_init(&opt, cfg);
    tt_optim_add_decay_groups(&opt, &params, 0.1);
    tt_lr_schedule sched = tt_lr_cosine(o.lr, o.iters / 20, o.iters, o.lr / 10);
    tt_trainer_opts to = tt_trainer_opts_default();  // the step: schedule, clip 1, AdamW
    to.iters = o.iters;
    to.clip = 1.0;
    tt_trainer tr;
    if (tt_trainer_init(&tr, &to, &params, &opt, &sched) != TT_OK)
        fprintf(stderr, "char_lstm: %s\n", tt_last_error()), exit(1);
    while (tt_trainer_next(&tr)) {
        tt_scope_begin();
        tt_tensor *x, *y;
        tt_dataset_batch(&ds, TT_SPLIT_TRAIN, o.batch, o.block, &data_rng, &x, &y);  // (B, T)
        tt_trainer_backward(&tr, tt_cross_entropy(forward(&m, x, NULL, NULL), y, -1));
        tt_scope_end();
        if (!tt_trainer_step(&tr)) break;
        if (tr.step == 1 || tr.step % 100 == 0 || tr.step == o.iters)
            printf("step %lld train_loss=%.4f\n", (long long)tr.step, tr.loss), fflush(stdout);
    }
    if (tr.stop != TT_TRAINER_DONE)  // a NaN loss or gradient: one line naming the step
        fprintf(stderr, "char_lstm: %s; lower --lr\n", tt_last_error()), exit(1);
    tt_trainer_free(&tr);
    tt_set_grad_enabled(false);  // with torch.no_grad(): evaluation and sampling
    printf("val_loss=%.4f\n", val_loss(&m, &ds));

    // Sampling from id 0 ('\n' here), one character at a time, (h, c) carried between steps.
    tt_scope_begin();
    tt_tensor *h = NULL, *c = NULL, *tok = tt_full(TT_I64, TT_SHAPE(1, 1), 0);  // (1, 1)
    for (int i = 0; i < 300; i++) {
        tt_scope_begin();
        tt_tensor *logits = tt_reshape(forward(&m, tok, &h, &c), TT_SHAPE(1, V));  // (1, V)
        tok = tt_keep(tt_multinomial(&rng, tt_softmax(logits, -1), 1, true));      // (1, 1)
        h = tt_keep(h), c = tt_keep(c);  // to the outer scope, past this step's end
        tt_scope_end();
        putchar(ds.vocab.chars[(int)tt_item(tok)]);
    }
    putchar('\n');
    tt_scope_end();
    tt_optim_free(&opt);
    tt_params_free(&params);
    tt_nn_embedding_free(&m.emb);
    tt_nn_lstm_free(&m.lstm);
    tt_nn_linear_free(&m.head);
    tt_dataset_free(&ds);
    return 0;
}
