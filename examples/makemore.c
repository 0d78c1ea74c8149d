// makemore's MLP (Bengio et al. 2003, as in Karpathy's makemore part 3) on the unique words of
// Tiny Shakespeare: embedding, flatten, Linear, BatchNorm1d, tanh, Linear; SGD on batches of
// 32; then 20 words sampled. The C twin of tests/reference/makemore.py.
// Usage: makemore [steps] [context] [corpus]   (corpus: data/tinyshakespeare.txt)
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinytorch.h"

static int cmp(const void *a, const void *b) { return strcmp(*(char **)a, *(char **)b); }

// The examples of words w[perm[lo]] .. w[perm[hi - 1]]: for each letter of a word, then its
// end (0), the T ids before it (0-padded) in x (N, T) and the id in y (N,), both i64.
static void build(char **w, const int64_t *perm, int lo, int hi, int T, tt_tensor **x,
                  tt_tensor **y) {
    int64_t n = 0, k = 0;
    for (int i = lo; i < hi; i++) n += (int64_t)strlen(w[perm[i]]) + 1;
    int64_t *px = tt_data(*x = tt_zeros(TT_I64, TT_SHAPE(n, T)));
    int64_t *py = tt_data(*y = tt_zeros(TT_I64, TT_SHAPE(n)));
    for (int i = lo; i < hi; i++)
        for (int j = 0, len = (int)strlen(w[perm[i]]); j <= len; j++, k++) {
            for (int t = 0; t < T; t++) px[k * T + t] = j + t >= T ? w[perm[i]][j + t - T] - 96 : 0;
            py[k] = j < len ? w[perm[i]][j] - 96 : 0;  // 'a' is 1, the end 0
        }
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 20000, T = argc > 2 ? atoi(argv[2]) : 5, n = 0, u = 0;
    unsigned char *text;
    size_t len;
    if (tt_read_file(argc > 3 ? argv[3] : "data/tinyshakespeare.txt", &text, &len) != TT_OK)
        return fprintf(stderr, "makemore: %s\n", tt_last_error()), 1;
    char **words = malloc(len * sizeof *words);
    for (size_t i = 0; i < len; i++) {  // the words [a-z]+ of the lower-cased text
        text[i] = isalpha(text[i]) ? (unsigned char)tolower(text[i]) : 0;
        if (text[i] && (i == 0 || !text[i - 1])) words[n++] = (char *)text + i;
    }
    qsort(words, (size_t)n, sizeof *words, cmp);
    for (int i = 0; i < n; i++)
        if (u == 0 || strcmp(words[i], words[u - 1])) words[u++] = words[i];  // unique
    tt_rng rng = tt_rng_new(42);
    tt_scope_begin();  // owns the data until the end
    const int64_t *perm = tt_data(tt_randperm(&rng, u));
    tt_tensor *xtr, *ytr, *xva, *yva;
    build(words, perm, 0, u * 8 / 10, T, &xtr, &ytr);
    build(words, perm, u * 8 / 10, u * 9 / 10, T, &xva, &yva);
    printf("%d words, %lld train / %lld val examples, context %d\n", u, (long long)tt_numel(ytr),
           (long long)tt_numel(yva), T);
    tt_module head = tt_nn_linear_new(200, 27, true, &rng);
    // weight *= 0.1: PyTorch's U(-1/sqrt(200), 1/sqrt(200)) init scaled, a less confident start
    tt_init_uniform_(((tt_nn_linear *)head.self)->weight, &rng, -0.0070711, 0.0070711);
    tt_module model = tt_nn_sequential_new(6, (tt_module[]){tt_nn_embedding_new(27, 10, &rng),
        tt_nn_flatten_module(1, -1), tt_nn_linear_new(T * 10, 200, false, &rng),
        tt_nn_batchnorm1d_new(200, NULL), tt_act_module(TT_ACT_TANH), head});
    tt_optim opt = tt_optim_new(tt_sgd_config(0.1), model, 0.0);
    printf("%lld parameters\n", (long long)tt_module_numel(model));
    clock_t t0 = clock();
    for (int step = 0; step < steps; step++) {
        tt_optim_set_lr(&opt, step < steps / 2 ? 0.1 : 0.01);
        tt_scope_begin();
        tt_tensor *ix = tt_randint(&rng, 0, tt_numel(ytr), TT_SHAPE(32));
        tt_tensor *logits = tt_module_forward(model, tt_index_select(xtr, 0, ix));
        tt_tensor *loss = tt_cross_entropy(logits, tt_index_select(ytr, 0, ix), -1);
        tt_backward(loss);
        tt_optim_step(&opt);
        tt_optim_zero_grad(&opt);
        if (step % (steps / 5) == 0) printf("step %6d loss %.4f\n", step, tt_item(loss));
        tt_scope_end();
    }
    tt_module_eval_begin(model);  // batch norm on its running statistics, no grad
    printf("train %.4f val %.4f (%.1f s cpu)\n",
           tt_item(tt_cross_entropy(tt_module_forward(model, xtr), ytr, -1)),
           tt_item(tt_cross_entropy(tt_module_forward(model, xva), yva, -1)),
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    for (int i = 0; i < 20; i++) {
        int64_t ctx[64] = {0}, ch;
        for (int k = 0; k < 60; k++) {  // 60 letters at most
            tt_tensor *x = tt_from_data(TT_I64, TT_SHAPE(1, T), ctx);  // the last T letters
            tt_tensor *p = tt_softmax(tt_module_forward(model, x), -1);
            if ((ch = (int64_t)tt_item(tt_multinomial(&rng, p, 1, false))) == 0) break;
            putchar('a' + (int)ch - 1);
            memmove(ctx, ctx + 1, (size_t)(T - 1) * sizeof *ctx);
            ctx[T - 1] = ch;
        }
        putchar('\n');
    }
    tt_module_eval_end(model);
    tt_optim_free(&opt);
    tt_module_free(model);
    tt_scope_end();
    free(words);
    free(text);
}
