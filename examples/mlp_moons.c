// mlp_moons: a 2 -> 16 -> 16 -> 2 MLP classifying the two-moons dataset, trained with AdamW.
// The README's "Write your own model" example: data, model and training loop in one short file,
// written like the PyTorch script it mirrors. Ends with "done accuracy=<test acc> loss=<loss>".
#include <math.h>
#include <stdio.h>

#include "tinytorch.h"

// sklearn.datasets.make_moons: n/2 points (cos t, sin t) of class 0 and n/2 points
// (1 - cos t, 0.5 - sin t) of class 1, t ~ U[0, pi], plus N(0, noise^2) on each coordinate.
static void make_moons(tt_rng *rng, int64_t n, double noise, tt_tensor **x, tt_tensor **y) {
    *x = tt_empty(TT_F32, TT_SHAPE(n, 2));  // (N, 2) points
    *y = tt_empty(TT_I64, TT_SHAPE(n));     // (N,) labels
    for (int64_t i = 0; i < n; i++) {
        double t = acos(-1.0) * tt_rng_uniform(rng);
        int label = i >= n / 2;
        tt_set_at(*x, 2 * i, (label ? 1 - cos(t) : cos(t)) + noise * tt_rng_normal(rng));
        tt_set_at(*x, 2 * i + 1, (label ? 0.5 - sin(t) : sin(t)) + noise * tt_rng_normal(rng));
        tt_set_at(*y, i, label);
    }
}

// Fraction of rows whose largest logit is the label.
static double accuracy(tt_tensor *logits, tt_tensor *y) {
    tt_scope_begin();
    tt_tensor *pred = tt_argmax(logits, -1, false);  // (N,)
    int64_t correct = 0;
    for (int64_t i = 0; i < tt_numel(y); i++) correct += tt_at(pred, i) == tt_at(y, i);
    tt_scope_end();
    return (double)correct / (double)tt_numel(y);
}

int main(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 42);
    tt_tensor *x_train, *y_train, *x_test, *y_test;
    make_moons(&rng, 512, 0.1, &x_train, &y_train);
    make_moons(&rng, 512, 0.1, &x_test, &y_test);

    // model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
    //                       nn.Linear(16, 2))
    tt_nn_linear fc1, fc2, fc3;
    tt_nn_linear_init(&fc1, 2, 16, true, &rng);
    tt_nn_linear_init(&fc2, 16, 16, true, &rng);
    tt_nn_linear_init(&fc3, 16, 2, true, &rng);
    tt_nn_sequential model;
    tt_nn_sequential_init(&model);
    tt_nn_sequential_add(&model, tt_nn_linear_module(&fc1));
    tt_nn_sequential_add(&model, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&model, tt_nn_linear_module(&fc2));
    tt_nn_sequential_add(&model, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&model, tt_nn_linear_module(&fc3));
    tt_params params;  // "0.weight", "0.bias", "2.weight", ... as PyTorch names them
    tt_params_init(&params);
    tt_nn_sequential_params(&model, &params, NULL);

    // optimizer = torch.optim.AdamW(params, lr=0.02, weight_decay=1e-4), cosine schedule
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(0.02));
    tt_optim_add_decay_groups(&opt, &params, 1e-4);
    const int steps = 300;
    tt_lr_schedule sched = tt_lr_cosine(0.02, 10, steps, 0.002);

    double loss_value = 0;
    for (int step = 0; step < steps; step++) {
        tt_optim_set_lr(&opt, tt_lr_at(&sched, step));
        tt_scope_begin();  // everything this step creates is freed at its end
        tt_tensor *logits = tt_nn_sequential_forward(&model, x_train);  // (N, 2)
        tt_tensor *loss = tt_cross_entropy(logits, y_train, -1);
        tt_backward(loss);
        tt_optim_step(&opt);
        tt_optim_zero_grad(&opt);
        loss_value = tt_item(loss);
        if (step % 50 == 0 || step == steps - 1)
            printf("step %3d  loss %.4f  train accuracy %.3f  lr %.4f\n", step, loss_value,
                   accuracy(logits, y_train), opt.lr);
        tt_scope_end();
    }

    bool prev = tt_set_grad_enabled(false);  // with torch.no_grad():
    tt_scope_begin();
    double test_acc = accuracy(tt_nn_sequential_forward(&model, x_test), y_test);
    tt_scope_end();
    tt_set_grad_enabled(prev);
    printf("done accuracy=%.4f loss=%.4f\n", test_acc, loss_value);

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
