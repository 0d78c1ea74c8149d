// One training epoch of examples/lenet.c's CNN (the same layers, batch 128, AdamW, shuffled
// mini-batches by tt_randperm + tt_index_select) on 60,000 random 28 x 28 images, so no
// dataset is needed. Prints a `bench lenet ...` line; bench/torch_ref.py lenet is the PyTorch side.
//
//   bench_lenet [threads] [epochs]   median ms per epoch over the epochs (default 1), images/s
#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tinytorch.h"
#include "bench_util.h"

#define N_IMAGES 60000
#define BATCH 128

static tt_tensor *pool_forward(void *self, tt_tensor *x) {  // nn.MaxPool2d(2)
    (void)self;
    return tt_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL, NULL);
}
static const tt_module_ops pool_ops = {.type = "maxpool2d", .forward = pool_forward};

// examples/lenet.c's model: conv(1->16, 5x5, pad 2)-relu-pool, conv(16->32, 5x5)-relu-pool,
// flatten, 800-120-84-10 with ReLUs.
typedef struct lenet {
    tt_conv2d_layer c1, c2;
    tt_linear f1, f2, f3;
    tt_sequential seq;
    tt_params params;
} lenet;

static void lenet_init(lenet *m, tt_rng *rng) {
    tt_conv2d_layer_init(&m->c1, 1, 16, 5, 5, &(tt_conv2d_opts){.padding = {2, 2}}, true, rng);
    tt_conv2d_layer_init(&m->c2, 16, 32, 5, 5, NULL, true, rng);
    tt_linear_init(&m->f1, 32 * 5 * 5, 120, true, rng);
    tt_linear_init(&m->f2, 120, 84, true, rng);
    tt_linear_init(&m->f3, 84, 10, true, rng);
    tt_module pool = {NULL, &pool_ops};
    tt_module mods[] = {tt_conv2d_layer_module(&m->c1), tt_act_module(TT_ACT_RELU), pool,
                        tt_conv2d_layer_module(&m->c2), tt_act_module(TT_ACT_RELU), pool,
                        tt_flatten_module(1, -1),       tt_linear_module(&m->f1),
                        tt_act_module(TT_ACT_RELU),     tt_linear_module(&m->f2),
                        tt_act_module(TT_ACT_RELU),     tt_linear_module(&m->f3)};
    tt_sequential_init(&m->seq);
    for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++) tt_sequential_add(&m->seq, mods[i]);
    tt_params_init(&m->params);
    tt_sequential_params(&m->seq, &m->params, NULL);
}

static void lenet_free(lenet *m) {
    tt_params_free(&m->params);
    tt_sequential_free(&m->seq);
    tt_conv2d_layer_free(&m->c1);
    tt_conv2d_layer_free(&m->c2);
    tt_linear_free(&m->f1);
    tt_linear_free(&m->f2);
    tt_linear_free(&m->f3);
}

// Steps over perm[0 .. steps * BATCH) (the whole epoch when steps < 0); returns the last loss.
static double train(lenet *m, tt_optim *o, tt_tensor *x, tt_tensor *y, tt_rng *rng,
                    int64_t steps) {
    double loss = 0;
    tt_scope_begin();
    tt_tensor *perm = tt_randperm(rng, N_IMAGES);  // (N,)
    for (int64_t s = 0; s * BATCH < N_IMAGES && (steps < 0 || s < steps); s++) {
        int64_t b = N_IMAGES - s * BATCH < BATCH ? N_IMAGES - s * BATCH : BATCH;
        tt_scope_begin();
        tt_tensor *idx = tt_narrow(perm, 0, s * BATCH, b);
        tt_tensor *l = tt_cross_entropy(
            tt_sequential_forward(&m->seq, tt_index_select(x, 0, idx)), tt_index_select(y, 0, idx),
            -1);
        tt_backward(l);
        tt_optim_step(o);
        tt_optim_zero_grad(o);
        loss = tt_item(l);
        tt_scope_end();
    }
    tt_scope_end();
    return loss;
}

int main(int argc, char **argv) {
    int threads = 1, epochs = argc > 2 ? atoi(argv[2]) : 1;
#ifdef _OPENMP
    if (argc > 1) omp_set_num_threads(atoi(argv[1]));
    threads = omp_get_max_threads();
#endif
    if (epochs < 1 || epochs > 100) {
        fprintf(stderr, "usage: bench_lenet [threads] [epochs 1..100]\n");
        return 2;
    }
    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(N_IMAGES, 1, 28, 28));  // (N, 1, 28, 28)
    tt_tensor *y = tt_randint(&rng, 0, 10, TT_SHAPE(N_IMAGES));           // (N,)
    lenet m;
    lenet_init(&m, &rng);
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(2e-3));
    tt_optim_add_decay_groups(&opt, &m.params, 1e-4);
    train(&m, &opt, x, y, &rng, 5);  // warm-up: workspaces, page faults
    double *ms = malloc((size_t)epochs * sizeof *ms), loss = 0;
    for (int e = 0; e < epochs; e++) {
        double t0 = now_ms();
        loss = train(&m, &opt, x, y, &rng, -1);
        ms[e] = now_ms() - t0;
    }
    double med = median(ms, epochs);
    printf("bench lenet threads=%d batch=%d ms_per_epoch=%.1f images_per_s=%.0f "
           "peak_rss_mb=%.1f loss=%.4f epochs=%d\n",
           threads, BATCH, med, N_IMAGES / (med / 1e3), peak_rss_mb(), loss, epochs);
    free(ms);
    tt_optim_free(&opt);
    lenet_free(&m);
    tt_release(x);
    tt_release(y);
    return 0;
}
