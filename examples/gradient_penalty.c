// gradient_penalty: a WGAN-GP (Gulrajani et al., 2017) on 2-D points. A generator learns to turn
// noise into samples of a Gaussian blob, judged by a critic kept near 1-Lipschitz by a penalty
// on the norm of its gradient. It uses the three pieces of the extensible autograd:
//   - a custom function: the Swish activation, with its own backward (torch.autograd.Function);
//   - tt_autograd_grad: the critic's gradient at the sample points, returned as a tensor;
//   - create_graph: that gradient is itself differentiated when the penalty trains the critic.
// Ends with "done mean=(<x>, <y>) std=(<x>, <y>)", the statistics of 4096 generated samples
// (the target: mean (2, -1), std (0.5, 0.3)).
// Usage: gradient_penalty [iterations]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tinytorch.h"

// Swish x sigmoid(x) as a custom function. Its backward recomputes sigmoid from the saved
// input, so the backward is differentiable again (the critic's penalty needs that).
static void swish_forward(tt_function_ctx *ctx, tt_tensor *const *in, int n, tt_tensor **out) {
    (void)n;
    tt_save_for_backward(ctx, 1, in);
    out[0] = tt_mul(in[0], tt_sigmoid(in[0]));
}

static void swish_backward(tt_function_ctx *ctx, tt_tensor *const *gout, tt_tensor **gin) {
    tt_tensor *x = tt_saved_tensor(ctx, 0), *s = tt_sigmoid(x);  // d/dx = s (1 + x (1 - s))
    gin[0] = tt_mul(tt_mul(gout[0], s), tt_add_scalar(tt_mul(x, tt_rsub_scalar(1, s)), 1));
}

static const tt_function swish = {"swish", 1, 0, swish_forward, swish_backward};

// A 2 -> hidden -> hidden -> out MLP with Swish between its layers.
typedef struct mlp { tt_custom base; tt_module fc1, fc2, fc3; } mlp;

static tt_tensor *mlp_forward(void *self, tt_tensor *x) {
    mlp *m = self;
    tt_tensor *h = tt_function_apply(&swish, 1, (tt_tensor *[]){tt_module_forward(m->fc1, x)},
                                     NULL);
    h = tt_function_apply(&swish, 1, (tt_tensor *[]){tt_module_forward(m->fc2, h)}, NULL);
    return tt_module_forward(m->fc3, h);
}

static tt_module mlp_init(mlp *m, int64_t hidden, int64_t out, tt_rng *rng) {
    tt_custom_init(&m->base, m, mlp_forward);
    m->fc1 = tt_custom_add_module(&m->base, "fc1", tt_nn_linear_new(2, hidden, true, rng));
    m->fc2 = tt_custom_add_module(&m->base, "fc2", tt_nn_linear_new(hidden, hidden, true, rng));
    m->fc3 = tt_custom_add_module(&m->base, "fc3", tt_nn_linear_new(hidden, out, true, rng));
    return tt_custom_module(&m->base);
}

// n samples of the target: N((2, -1), diag(0.5^2, 0.3^2)).
static tt_tensor *real_batch(tt_rng *rng, int64_t n) {
    tt_tensor *z = tt_randn(rng, TT_F32, TT_SHAPE(n, 2));
    tt_tensor *std = tt_from_data(TT_F32, TT_SHAPE(2), (const float[]){0.5f, 0.3f});
    tt_tensor *mean = tt_from_data(TT_F32, TT_SHAPE(2), (const float[]){2.0f, -1.0f});
    return tt_add(tt_mul(z, std), mean);
}

// 10 E[(|grad D(x_hat)|_2 - 1)^2] at points x_hat between real and fake samples, with the
// gradient's graph kept (create_graph) so that the penalty trains the critic through it.
static tt_tensor *gradient_penalty(tt_module critic, tt_tensor *real, tt_tensor *fake,
                                   tt_rng *rng) {
    tt_tensor *eps = tt_rand(rng, TT_F32, TT_SHAPE(real->shape[0], 1));
    tt_tensor *x_hat = tt_add(tt_mul(eps, real), tt_mul(tt_rsub_scalar(1, eps), fake));
    tt_set_requires_grad(x_hat, true);
    tt_tensor *score = tt_sum_all(tt_module_forward(critic, x_hat)), *grad;
    tt_autograd_grad(1, &score, NULL, 1, &x_hat, &grad, &(tt_grad_opts){.create_graph = true});
    tt_tensor *norm = tt_vector_norm(grad, 2, 1, (int[]){1}, false);  // (B,)
    return tt_mul_scalar(tt_mean_all(tt_square(tt_add_scalar(norm, -1))), 10);
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 400;
    const int64_t batch = 256, n_critic = 5;
    tt_rng rng = tt_rng_new(7);
    mlp gen_net, critic_net;
    tt_module gen = mlp_init(&gen_net, 32, 2, &rng), critic = mlp_init(&critic_net, 64, 1, &rng);
    tt_optim_config adam = tt_adam_config(5e-4);  // the paper's Adam: betas (0.5, 0.9)
    adam.beta1 = 0.5, adam.beta2 = 0.9;
    tt_optim opt_g = tt_optim_new(adam, gen, 0), opt_d = tt_optim_new(adam, critic, 0);

    for (int it = 0; it < iters; it++) {
        double w = 0;
        for (int64_t k = 0; k < n_critic; k++) {  // the critic: E[D(fake)] - E[D(real)] + GP
            tt_scope_begin();
            tt_tensor *real = real_batch(&rng, batch), *fake;
            tt_no_grad_begin();
            fake = tt_module_forward(gen, tt_randn(&rng, TT_F32, TT_SHAPE(batch, 2)));
            tt_no_grad_end();
            tt_tensor *dist = tt_sub(tt_mean_all(tt_module_forward(critic, real)),
                                     tt_mean_all(tt_module_forward(critic, fake)));
            tt_tensor *loss = tt_add(tt_neg(dist), gradient_penalty(critic, real, fake, &rng));
            tt_backward(loss);
            tt_optim_step(&opt_d);
            tt_optim_zero_grad(&opt_d);
            w = tt_item(dist);
            tt_scope_end();
        }
        tt_scope_begin();  // the generator: -E[D(G(z))]
        tt_tensor *fake = tt_module_forward(gen, tt_randn(&rng, TT_F32, TT_SHAPE(batch, 2)));
        tt_backward(tt_neg(tt_mean_all(tt_module_forward(critic, fake))));
        tt_optim_step(&opt_g);
        tt_optim_zero_grad(&opt_g);
        tt_optim_zero_grad(&opt_d);
        tt_scope_end();
        if (it % 50 == 0 || it == iters - 1) printf("iter %4d  wasserstein %.4f\n", it, w);
    }

    tt_scope_begin();
    tt_no_grad_begin();
    tt_tensor *s = tt_module_forward(gen, tt_randn(&rng, TT_F32, TT_SHAPE(4096, 2)));
    tt_tensor *mean = tt_mean(s, 1, (int[]){0}, false);
    tt_tensor *std = tt_std(s, 1, (int[]){0}, 1, false);
    printf("done mean=(%.3f, %.3f) std=(%.3f, %.3f)\n", tt_at(mean, 0), tt_at(mean, 1),
           tt_at(std, 0), tt_at(std, 1));
    tt_no_grad_end();
    tt_scope_end();
    tt_optim_free(&opt_g);
    tt_optim_free(&opt_d);
    tt_custom_free(&gen_net.base);
    tt_custom_free(&critic_net.base);
    return 0;
}
