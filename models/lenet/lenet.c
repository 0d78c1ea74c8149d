// tinytorch.c models/lenet: the LeNet-style CNN as a sequential of nn modules. Data, training
// and checkpoints are the programs' (examples/lenet.c, bench/bench_lenet.c).
#include <string.h>

#include "lenet.h"

void tt_lenet_init(tt_lenet *m, bool batch_norm, tt_rng *rng) {
    memset(m, 0, sizeof *m);
    bool bn = batch_norm;
    tt_nn_conv2d_init(&m->c1, 1, 16, 5, 5, &(tt_nn_conv2d_opts){.padding = {2, 2}}, !bn, rng);
    tt_nn_conv2d_init(&m->c2, 16, 32, 5, 5, NULL, !bn, rng);
    tt_nn_maxpool2d_init(&m->pool, 2, 2, NULL, NULL);
    tt_nn_linear_init(&m->f1, 32 * 5 * 5, 120, true, rng);
    tt_nn_linear_init(&m->f2, 120, 84, true, rng);
    tt_nn_linear_init(&m->f3, 84, 10, true, rng);
    tt_nn_sequential_init(&m->seq);
    tt_nn_sequential_add(&m->seq, tt_nn_conv2d_module(&m->c1));
    if (bn) tt_nn_batchnorm2d_init(&m->n1, 16, NULL);
    if (bn) tt_nn_sequential_add(&m->seq, tt_nn_batchnorm_module(&m->n1));
    tt_nn_sequential_add(&m->seq, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&m->seq, tt_nn_maxpool2d_module(&m->pool));
    tt_nn_sequential_add(&m->seq, tt_nn_conv2d_module(&m->c2));
    if (bn) tt_nn_batchnorm2d_init(&m->n2, 32, NULL);
    if (bn) tt_nn_sequential_add(&m->seq, tt_nn_batchnorm_module(&m->n2));
    tt_module tail[] = {tt_act_module(TT_ACT_RELU),     tt_nn_maxpool2d_module(&m->pool),
                        tt_nn_flatten_module(1, -1),       tt_nn_linear_module(&m->f1),
                        tt_act_module(TT_ACT_RELU),     tt_nn_linear_module(&m->f2),
                        tt_act_module(TT_ACT_RELU),     tt_nn_linear_module(&m->f3)};
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        tt_nn_sequential_add(&m->seq, tail[i]);
    tt_module seq = tt_nn_sequential_module(&m->seq);
    tt_params_init(&m->params);
    tt_module_params(seq, &m->params, NULL);
    tt_params_init(&m->state);
    tt_module_state(seq, &m->state, NULL);
}

tt_tensor *tt_lenet_forward(tt_lenet *m, tt_tensor *x) {
    return tt_nn_sequential_forward(&m->seq, x);
}

void tt_lenet_train(tt_lenet *m, bool training) { tt_nn_sequential_train(&m->seq, training); }

tt_module tt_lenet_module(tt_lenet *m) { return tt_nn_sequential_module(&m->seq); }

void tt_lenet_free(tt_lenet *m) {
    tt_params_free(&m->state);
    tt_params_free(&m->params);
    tt_nn_batchnorm_free(&m->n1);
    tt_nn_batchnorm_free(&m->n2);
    tt_nn_sequential_free(&m->seq);
    tt_nn_conv2d_free(&m->c1);
    tt_nn_conv2d_free(&m->c2);
    tt_nn_linear_free(&m->f1);
    tt_nn_linear_free(&m->f2);
    tt_nn_linear_free(&m->f3);
}
