// A VAE 784-400-20 on Fashion-MNIST: the reparameterization trick, a custom loss
// (BCE-with-logits of the reconstruction plus the KL term) as the module's forward, Adam, then
// the model saved and loaded back (safetensors). The C twin of tests/reference/vae.py.
// Usage: vae [epochs] [threads]
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tinytorch.h"

typedef struct vae { tt_custom base; tt_module enc, mu, logvar, dec; tt_rng *rng; } vae;

// The loss per image of a batch x (B, 784); z is drawn in training mode and is mu in eval mode.
static tt_tensor *vae_loss(void *self, tt_tensor *x) {
    vae *m = self;
    tt_tensor *h = tt_relu(tt_module_forward(m->enc, x));
    tt_tensor *mu = tt_module_forward(m->mu, h), *logvar = tt_module_forward(m->logvar, h);
    tt_tensor *std = tt_exp(tt_mul_scalar(logvar, 0.5));
    tt_tensor *z = m->base.training ? tt_add(mu, tt_mul(std, tt_randn_like(mu, m->rng))) : mu;
    tt_tensor *rec = tt_bce_with_logits_ex(tt_module_forward(m->dec, z), x, NULL, TT_REDUCTION_SUM);
    tt_tensor *kl = tt_sum_all(tt_sub(tt_add_scalar(logvar, 1),
                                      tt_add(tt_square(mu), tt_exp(logvar))));
    return tt_mul_scalar(tt_add(rec, tt_mul_scalar(kl, -0.5)), 1.0 / (double)x->shape[0]);
}

static tt_module vae_init(vae *m, tt_rng *rng) {
    tt_custom_init(&m->base, m, vae_loss);
    m->rng = rng;
    m->enc = tt_custom_add_module(&m->base, "enc", tt_nn_linear_new(784, 400, true, rng));
    m->mu = tt_custom_add_module(&m->base, "mu", tt_nn_linear_new(400, 20, true, rng));
    m->logvar = tt_custom_add_module(&m->base, "logvar", tt_nn_linear_new(400, 20, true, rng));
    m->dec = tt_custom_add_module(&m->base, "dec", tt_nn_sequential_new(3, (tt_module[]){
        tt_nn_linear_new(20, 400, true, rng), tt_act_module(TT_ACT_RELU),
        tt_nn_linear_new(400, 784, true, rng)}));  // (B, 20) -> (B, 784) logits
    return tt_custom_module(&m->base);
}

static double test_loss(tt_module model, tt_tensor *x) {  // eval mode (z = mu), no grad
    double sum = 0;
    tt_module_eval_begin(model);
    for (int64_t s = 0; s < x->shape[0]; s += 1000)
        sum += tt_item(tt_module_forward(model, tt_narrow(x, 0, s, 1000))) * 1000;
    tt_module_eval_end(model);
    return sum / (double)x->shape[0];
}

int main(int argc, char **argv) {
    int epochs = argc > 1 ? atoi(argv[1]) : 3;
    if (argc > 2) tt_set_num_threads(atoi(argv[2]));
    tt_rng rng = tt_rng_new(1);
    vae m, m2;
    tt_module model = vae_init(&m, &rng), loaded = vae_init(&m2, &rng);
    tt_scope_begin();  // owns the data until the end
    tt_tensor *xtr, *xte, *y, *xb;
    if (tt_fashion_mnist_load(NULL, true, &xtr, &y) || tt_fashion_mnist_load(NULL, false, &xte, &y))
        return fprintf(stderr, "vae: %s\n", tt_last_error()), 1;
    xtr = tt_reshape(tt_mul_scalar(xtr, 1.0 / 255), TT_SHAPE(-1, 784));  // (N, 784) in [0, 1]
    xte = tt_reshape(tt_mul_scalar(xte, 1.0 / 255), TT_SHAPE(-1, 784));
    tt_dataloader *loader = tt_dataloader_new(tt_tensor_dataset(1, &xtr),
        &(tt_dataloader_opts){.batch_size = 128, .shuffle = true, .own_dataset = true}, &rng);
    tt_optim opt = tt_optim_new(tt_adam_config(1e-3), model, 0.0);
    for (int ep = 1; ep <= epochs; ep++) {
        double total = 0, t0 = (double)clock();  // CPU time: the wall time on one thread
        tt_dataloader_begin_epoch(loader);
        for (int64_t b = 0; b < tt_dataloader_len(loader); b++) {
            tt_scope_begin();  // a step: frees the batch, the graph and every intermediate
            tt_dataloader_next(loader, &xb, NULL);
            tt_tensor *loss = tt_module_forward(model, xb);
            tt_backward(loss);
            tt_optim_step(&opt);
            tt_optim_zero_grad(&opt);
            total += tt_item(loss) * (double)xb->shape[0];
            tt_scope_end();
        }
        double te = test_loss(model, xte);
        printf("epoch %d train_loss=%.2f test_loss=%.2f s_per_epoch=%.2f\n", ep,
               total / (double)xtr->shape[0], te, (double)(clock() - t0) / CLOCKS_PER_SEC);
    }
    if (tt_safetensors_save_module("vae_c.safetensors", model) ||
        tt_safetensors_load_module("vae_c.safetensors", loaded))
        return fprintf(stderr, "vae: %s\n", tt_last_error()), 1;
    printf("trained test_loss=%.4f loaded test_loss=%.4f\n", test_loss(model, xte),
           test_loss(loaded, xte));
    tt_tensor *x = tt_sigmoid(tt_module_forward(m2.dec, tt_randn(&rng, TT_F32, TT_SHAPE(64, 20))));
    printf("64 samples decoded, mean pixel %.4f\n", tt_item(tt_mean_all(x)));
    tt_optim_free(&opt);
    tt_dataloader_free(loader);
    tt_scope_end();
    tt_custom_free(&m.base);
    tt_custom_free(&m2.base);
}
