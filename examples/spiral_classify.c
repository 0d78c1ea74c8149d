// spiral_classify: an MLP (tt_nn_sequential of linear and ReLU modules) separating three
// interleaved spirals, trained in shuffled mini-batches (tt_randperm + tt_index_select of the
// points and of the integer labels), with accuracy computed by tensor ops (argmax, eq, mean)
// rather than a loop over elements.
#include <math.h>
#include <stdio.h>

#include "tinytorch.h"

#define CLASSES 3

// CS231n's spiral data: class k's n points have radius r = i / (n - 1) and angle
// 4 (k + r) + N(0, noise^2), at (r sin t, r cos t).
static void make_spirals(tt_rng *rng, int64_t n, double noise, tt_tensor **x, tt_tensor **y) {
    *x = tt_empty(TT_F32, TT_SHAPE(CLASSES * n, 2));  // (N, 2) points
    *y = tt_empty(TT_I64, TT_SHAPE(CLASSES * n));     // (N,) labels
    for (int64_t k = 0; k < CLASSES; k++) {
        for (int64_t i = 0; i < n; i++) {
            double r = (double)i / (double)(n - 1);
            double t = 4.0 * ((double)k + r) + noise * tt_rng_normal(rng);
            tt_set_at(*x, 2 * (k * n + i), r * sin(t));
            tt_set_at(*x, 2 * (k * n + i) + 1, r * cos(t));
            tt_set_at(*y, k * n + i, (double)k);
        }
    }
}

// The fraction of rows whose largest logit is the label: mean(argmax(logits) == y).
static double accuracy(tt_tensor *logits, tt_tensor *y) {
    tt_tensor *hit = tt_eq(tt_argmax(logits, -1, false), y);  // (N,) TT_BOOL
    return tt_item(tt_mean_all(tt_to_dtype(hit, TT_F32)));
}

int main(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_tensor *x_train, *y_train, *x_test, *y_test;
    make_spirals(&rng, 200, 0.2, &x_train, &y_train);  // 600 points
    make_spirals(&rng, 100, 0.2, &x_test, &y_test);    // 300 held-out points
    const int64_t n = tt_numel(y_train), batch = 32, epochs = 60;

    // model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
    //                       nn.Linear(64, 3))
    tt_nn_linear fc1, fc2, fc3;
    tt_nn_linear_init(&fc1, 2, 64, true, &rng);
    tt_nn_linear_init(&fc2, 64, 64, true, &rng);
    tt_nn_linear_init(&fc3, 64, CLASSES, true, &rng);
    tt_nn_sequential model;
    tt_nn_sequential_init(&model);
    tt_nn_sequential_add(&model, tt_nn_linear_module(&fc1));
    tt_nn_sequential_add(&model, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&model, tt_nn_linear_module(&fc2));
    tt_nn_sequential_add(&model, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&model, tt_nn_linear_module(&fc3));
    tt_params params;
    tt_params_init(&params);
    tt_nn_sequential_params(&model, &params, NULL);
    tt_optim opt;  // AdamW, lr 0.01 decaying to 0.0005 over the run (cosine, no warmup)
    tt_optim_init(&opt, tt_adamw_config(0.01));
    tt_optim_add_decay_groups(&opt, &params, 1e-4);
    tt_lr_schedule sched = tt_lr_cosine(0.01, 0, epochs * ((n + batch - 1) / batch), 0.0005);
    int64_t step = 0;

    for (int64_t epoch = 1; epoch <= epochs; epoch++) {
        tt_scope_begin();
        tt_tensor *perm = tt_randperm(&rng, n);  // (N,) a new order every epoch
        double loss_sum = 0;
        for (int64_t start = 0; start < n; start += batch) {
            tt_optim_set_lr(&opt, tt_lr_at(&sched, step++));
            tt_scope_begin();
            tt_tensor *idx = tt_narrow(perm, 0, start, start + batch < n ? batch : n - start);
            tt_tensor *xb = tt_index_select(x_train, 0, idx);  // (b, 2)
            tt_tensor *yb = tt_index_select(y_train, 0, idx);  // (b,) i64 labels
            tt_tensor *loss = tt_cross_entropy(tt_nn_sequential_forward(&model, xb), yb, -1);
            loss_sum += tt_item(loss) * (double)tt_numel(yb);
            tt_backward(loss);
            tt_optim_step(&opt);
            tt_optim_zero_grad(&opt);
            tt_scope_end();
        }
        if (epoch == 1 || epoch % 10 == 0) {  // the epoch's mean loss, the train accuracy
            bool prev = tt_set_grad_enabled(false);
            double acc = accuracy(tt_nn_sequential_forward(&model, x_train), y_train);
            tt_set_grad_enabled(prev);
            printf("epoch %lld loss=%.4f accuracy=%.4f\n", (long long)epoch,
                   loss_sum / (double)n, acc);
        }
        tt_scope_end();
    }

    tt_set_grad_enabled(false);  // with torch.no_grad():
    tt_scope_begin();
    printf("done accuracy=%.4f\n", accuracy(tt_nn_sequential_forward(&model, x_test), y_test));
    tt_scope_end();

    tt_optim_free(&opt);
    tt_params_free(&params);
    tt_nn_sequential_free(&model);
    tt_nn_linear_free(&fc1);
    tt_nn_linear_free(&fc2);
    tt_nn_linear_free(&fc3);
    tt_release(x_train);
    tt_release(y_train);
    tt_release(x_test);
    tt_release(y_test);
    return 0;
}
