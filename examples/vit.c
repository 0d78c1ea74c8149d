// A ViT with a class token on Fashion-MNIST, written as a custom module (tt_custom): 7x7
// conv patches, learned positions, 3 pre-norm blocks, LayerNorm, a linear head on the class
// token; AdamW with nanoGPT's decay split. The C twin of tests/reference/vit.py.
// Usage: vit [epochs] [train_limit] [threads]
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tinytorch.h"

enum { D = 64, HEADS = 4, DEPTH = 3, MLP = 128, PATCH = 7, NTOK = 17 };

// A split as (N, 1, 28, 28) normalized images and (N,) labels, the first limit when limit > 0
// (owned by the caller's scope).
static void load(bool train, int64_t limit, tt_tensor **x, tt_tensor **y) {
    tt_tensor *img, *lab;
    if (tt_fashion_mnist_load(NULL, train, &img, &lab) != TT_OK) {
        fprintf(stderr, "vit: %s\n", tt_last_error());
        exit(1);
    }
    int64_t n = limit > 0 && limit < tt_numel(lab) ? limit : tt_numel(lab);
    tt_tensor *s = tt_mul_scalar(tt_add_scalar(tt_narrow(img, 0, 0, n), -0.2860 * 255), 1 / 90.015);
    *x = tt_reshape(s, TT_SHAPE(n, 1, 28, 28));  // (x / 255 - 0.2860) / 0.3530
    *y = tt_narrow(lab, 0, 0, n);
}

typedef struct vit {
    tt_custom base;
    tt_module patch, blocks, norm, head;
    tt_tensor *cls_token, *pos;
} vit;

static tt_tensor *vit_forward(void *self, tt_tensor *x) {  // (B, 1, 28, 28) -> (B, 10)
    vit *m = self;
    tt_tensor *p = tt_transpose(tt_flatten(tt_module_forward(m->patch, x), 2, -1), 1, 2);
    tt_tensor *cls = tt_expand(m->cls_token, TT_SHAPE(x->shape[0], 1, D));
    tt_tensor *h = tt_add(tt_cat(2, (tt_tensor *[]){cls, p}, 1), m->pos);
    h = tt_module_forward(m->norm, tt_module_forward(m->blocks, h));
    return tt_module_forward(m->head, tt_select(h, 1, 0));  // h[:, 0]
}

static tt_module vit_init(vit *m, tt_rng *rng) {
    tt_custom_init(&m->base, m, vit_forward);
    m->patch = tt_custom_add_module(&m->base, "patch", tt_nn_conv2d_new(1, D, PATCH, PATCH,
                                    &(tt_nn_conv2d_opts){.stride = {PATCH, PATCH}}, true, rng));
    m->cls_token = tt_custom_add_param(&m->base, "cls_token", tt_zeros(TT_F32, TT_SHAPE(1, 1, D)));
    m->pos = tt_custom_add_param(&m->base, "pos", tt_zeros(TT_F32, TT_SHAPE(NTOK, D)));
    tt_init_normal_(m->pos, rng, 0, 0.02);
    tt_nn_block_config bc = {.attn = {.n_embd = D, .n_head = HEADS, .max_seq = NTOK, .bias = true},
                             .mlp_hidden = MLP, .act = TT_ACT_GELU};
    tt_module blocks[DEPTH];
    for (int i = 0; i < DEPTH; i++) blocks[i] = tt_nn_block_new(&bc, rng);
    m->blocks = tt_custom_add_module(&m->base, "blocks", tt_nn_sequential_new(DEPTH, blocks));
    m->norm = tt_custom_add_module(&m->base, "norm", tt_nn_layernorm_new(D, 1e-5, true, true));
    m->head = tt_custom_add_module(&m->base, "head", tt_nn_linear_new(D, 10, true, rng));
    return tt_custom_module(&m->base);
}

int main(int argc, char **argv) {
    int epochs = argc > 1 ? atoi(argv[1]) : 3;
    if (argc > 3) tt_set_num_threads(atoi(argv[3]));
    tt_rng rng = tt_rng_new(1);
    vit m;
    tt_module model = vit_init(&m, &rng);
    printf("vit: %lld parameters, %d threads\n", (long long)tt_module_numel(model),
           tt_get_num_threads());
    tt_scope_begin();  // owns the data until the end
    tt_tensor *xtr, *ytr, *xte, *yte, *xb, *yb;
    load(true, argc > 2 ? atoll(argv[2]) : 0, &xtr, &ytr);
    load(false, 0, &xte, &yte);
    tt_dataloader *loader = tt_dataloader_new(tt_tensor_dataset(2, (tt_tensor *[]){xtr, ytr}),
        &(tt_dataloader_opts){.batch_size = 128, .shuffle = true, .own_dataset = true}, &rng);
    tt_optim opt = tt_optim_new(tt_adamw_config(1e-3), model, 0.05);  // matrices decay, rest not
    for (int ep = 1; ep <= epochs; ep++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double loss_sum = 0, hits = 0;
        tt_dataloader_begin_epoch(loader);
        for (int64_t b = 0; b < tt_dataloader_len(loader); b++) {
            tt_scope_begin();  // a step: frees the batch, the graph and every intermediate
            tt_dataloader_next(loader, &xb, &yb);
            tt_tensor *loss = tt_cross_entropy(tt_module_forward(model, xb), yb, -1);
            tt_backward(loss);
            tt_optim_step(&opt);
            tt_optim_zero_grad(&opt);
            loss_sum += tt_item(loss) * (double)yb->shape[0];
            tt_scope_end();
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        tt_module_eval_begin(model);  // model.eval(), no grad, a scope for what it makes
        for (int64_t s = 0; s < tt_numel(yte); s += 1000) {
            tt_tensor *p = tt_module_forward(model, tt_narrow(xte, 0, s, 1000));  // logits
            hits += tt_item(tt_sum_all(tt_eq(tt_argmax(p, -1, false), tt_narrow(yte, 0, s, 1000))));
        }
        tt_module_eval_end(model);  // and model.train()
        printf("epoch %d train_loss=%.4f test_acc=%.4f s_per_epoch=%.2f\n", ep,
               loss_sum / (double)tt_numel(ytr), hits / (double)tt_numel(yte),
               (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    }
    tt_optim_free(&opt);
    tt_dataloader_free(loader);
    tt_scope_end();
    tt_custom_free(&m.base);
}
