// One training epoch of examples/lenet.c's CNN (models/lenet without batch norm, batch 128,
// AdamW through the trainer, shuffled mini-batches by tt_randperm + tt_index_select) on
// 60,000 random 28 x 28 images, so no dataset is needed. Prints a `bench lenet ...` line;
// bench/torch_ref.py lenet is the PyTorch side.
//
//   bench_lenet [threads] [epochs]   median ms per epoch over the epochs (default 1), images/s
#include <stdio.h>
#include <stdlib.h>

#include "tinytorch.h"
#include "models/lenet/lenet.h"
#include "bench_util.h"

#define N_IMAGES 60000
#define BATCH 128

// Steps over perm[0 .. steps * BATCH) (the whole epoch when steps < 0); returns the last loss.
static double train(tt_lenet *m, tt_trainer *tr, tt_tensor *x, tt_tensor *y, tt_rng *rng,
                    int64_t steps) {
    double loss = 0;
    tt_scope_begin();
    tt_tensor *perm = tt_randperm(rng, N_IMAGES);  // (N,)
    for (int64_t s = 0; s * BATCH < N_IMAGES && (steps < 0 || s < steps); s++) {
        int64_t b = N_IMAGES - s * BATCH < BATCH ? N_IMAGES - s * BATCH : BATCH;
        tt_scope_begin();
        tt_tensor *idx = tt_narrow(perm, 0, s * BATCH, b);
        tt_trainer_backward(tr, tt_cross_entropy(tt_lenet_forward(m, tt_index_select(x, 0, idx)),
                                                 tt_index_select(y, 0, idx), -1));
        tt_scope_end();
        tt_trainer_step(tr);
        loss = tr->loss;
    }
    tt_scope_end();
    return loss;
}

int main(int argc, char **argv) {
    int threads = 1, epochs = argc > 2 ? atoi(argv[2]) : 1;
    if (argc > 1) tt_set_num_threads(atoi(argv[1]));
    threads = tt_get_num_threads();
    if (epochs < 1 || epochs > 100) {
        fprintf(stderr, "usage: bench_lenet [threads] [epochs 1..100]\n");
        return 2;
    }
    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(N_IMAGES, 1, 28, 28));  // (N, 1, 28, 28)
    tt_tensor *y = tt_randint(&rng, 0, 10, TT_SHAPE(N_IMAGES));           // (N,)
    tt_lenet m;
    tt_lenet_init(&m, false, &rng);
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(2e-3));
    tt_optim_add_decay_groups(&opt, &m.params, 1e-4);
    tt_trainer_opts to = tt_trainer_opts_default();
    tt_trainer tr;
    tt_trainer_init(&tr, &to, &m.params, &opt, NULL);
    train(&m, &tr, x, y, &rng, 5);  // warm-up: workspaces, page faults
    double *ms = malloc((size_t)epochs * sizeof *ms), loss = 0;
    for (int e = 0; e < epochs; e++) {
        double t0 = now_ms();
        loss = train(&m, &tr, x, y, &rng, -1);
        ms[e] = now_ms() - t0;
    }
    double med = median(ms, epochs);
    printf("bench lenet threads=%d batch=%d ms_per_epoch=%.1f images_per_s=%.0f "
           "peak_rss_mb=%.1f loss=%.4f epochs=%d\n",
           threads, BATCH, med, N_IMAGES / (med / 1e3), peak_rss_mb(), loss, epochs);
    free(ms);
    tt_trainer_free(&tr);
    tt_optim_free(&opt);
    tt_lenet_free(&m);
    tt_release(x);
    tt_release(y);
    return 0;
}
