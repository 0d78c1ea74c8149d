// sort_digits: a small non-causal transformer that learns to sort sequences of 8 digits,
// written as one tt_nn_sequential (embedding, positions, 2 blocks, norm, head); targets come from
// tt_sort of the integer digits, and the accuracy of whole sequences from eq + tt_all.
#include <stdio.h>

#include "tinytorch.h"

#define LEN 8     // digits per sequence
#define DIGITS 10 // vocabulary 0 .. 9
#define EMBD 64

// A batch of random sequences x (B, LEN) i64 and their sorted versions y (B, LEN) i64.
static void make_batch(tt_rng *rng, int64_t B, tt_tensor **x, tt_tensor **y) {
    *x = tt_randint(rng, 0, DIGITS, TT_SHAPE(B, LEN));
    tt_sort(*x, -1, false, y, NULL);
}

// The fraction of digits, and of whole sequences, the model puts in the right place.
static void accuracy(tt_tensor *logits, tt_tensor *y, double *digit_acc, double *seq_acc) {
    tt_tensor *hit = tt_eq(tt_argmax(logits, -1, false), y);  // (B, LEN) TT_BOOL
    tt_tensor *all = tt_all(hit, TT_DIMS(-1), false);         // (B,) every digit right
    *digit_acc = tt_item(tt_mean_all(tt_to_dtype(hit, TT_F32)));
    *seq_acc = tt_item(tt_mean_all(tt_to_dtype(all, TT_F32)));
}

int main(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    // A non-causal pre-norm block: every position attends to every other.
    tt_nn_block_config cfg = {
        .attn = {.n_embd = EMBD, .n_head = 4, .max_seq = LEN, .causal = false},
        .act = TT_ACT_GELU, .norm = TT_NORM_LAYERNORM};
    tt_nn_embedding tok;
    tt_nn_pos_embedding pos;
    tt_nn_block blocks[2];
    tt_nn_norm norm;
    tt_nn_linear head;
    tt_nn_embedding_init(&tok, DIGITS, EMBD, &rng);
    tt_nn_pos_embedding_init(&pos, LEN, EMBD, 1.0, &rng);  // N(0, 1), as nn.Embedding
    for (int i = 0; i < 2; i++) tt_nn_block_init(&blocks[i], &cfg, &rng);
    tt_nn_norm_init(&norm, TT_NORM_LAYERNORM, EMBD, 1e-5, true);
    tt_nn_linear_init(&head, EMBD, DIGITS, true, &rng);
    tt_nn_sequential model;  // (B, LEN) digits -> (B, LEN, EMBD) -> ... -> (B, LEN, DIGITS) logits
    tt_nn_sequential_init(&model);
    tt_nn_sequential_add(&model, tt_nn_embedding_module(&tok));
    tt_nn_sequential_add(&model, tt_nn_pos_embedding_module(&pos));
    for (int i = 0; i < 2; i++) tt_nn_sequential_add(&model, tt_nn_block_module(&blocks[i]));
    tt_nn_sequential_add(&model, tt_nn_norm_module(&norm));
    tt_nn_sequential_add(&model, tt_nn_linear_module(&head));
    tt_params params;
    tt_params_init(&params);
    tt_nn_sequential_params(&model, &params, NULL);  // "0.weight", "2.attn.q_proj.weight", ...
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(3e-3));  // peak lr; warmup, then cosine decay
    tt_optim_add_decay_groups(&opt, &params, 0.01);
    const int steps = 500;
    tt_lr_schedule sched = tt_lr_cosine(3e-3, 50, steps, 1e-4);

    for (int step = 1; step <= steps; step++) {
        tt_optim_set_lr(&opt, tt_lr_at(&sched, step - 1));
        tt_scope_begin();
        tt_tensor *x, *y;
        make_batch(&rng, 64, &x, &y);
        tt_tensor *loss = tt_cross_entropy(tt_nn_sequential_forward(&model, x), y, -1);
        if (step == 1 || step % 100 == 0) printf("step %d loss=%.4f\n", step, tt_item(loss));
        tt_backward(loss);
        tt_clip_grad_norm(&params, 1.0);
        tt_optim_step(&opt);
        tt_optim_zero_grad(&opt);
        tt_scope_end();
    }

    tt_set_grad_enabled(false);  // with torch.no_grad(): 1000 fresh sequences
    tt_scope_begin();
    tt_tensor *x, *y;
    make_batch(&rng, 1000, &x, &y);
    double digit_acc, seq_acc;
    accuracy(tt_nn_sequential_forward(&model, x), y, &digit_acc, &seq_acc);
    printf("done digit_accuracy=%.4f sequence_accuracy=%.4f\n", digit_acc, seq_acc);
    tt_scope_end();

    tt_optim_free(&opt);
    tt_params_free(&params);
    tt_nn_sequential_free(&model);
    tt_nn_embedding_free(&tok);
    tt_nn_pos_embedding_free(&pos);
    for (int i = 0; i < 2; i++) tt_nn_block_free(&blocks[i]);
    tt_nn_norm_free(&norm);
    tt_nn_linear_free(&head);
    return 0;
}
