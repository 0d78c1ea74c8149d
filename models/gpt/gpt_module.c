// The GPT's module tree, its single description: the children of the model and of its blocks
// container. The parameter list, train mode, the Linears (int8, pruning, low rank), the free
// and the training forward are derived from it by walking it (nn/walk.h); tt_model_summary
// walks it too. Not here: building the modules (tt_gpt_init, gpt.c) and the cached forward of
// generation (generate.c).
#include "gpt_internal.h"

// ---- blocks: a chain whose children are "0" .. "n_layer - 1" ----

static void blocks_children(void *self, tt_module_visit visit, void *ctx) {
    tt_gpt *m = self;
    char name[TT_NAME_MAX];
    for (int64_t l = 0; l < m->cfg.n_layer; l++)
        visit(tt_nn_block_module(&m->blocks[l]), tt_name_index(name, NULL, (int)l), ctx);
}

// One block's forward (ctx: the block), as tt_activation_checkpoint calls it.
static tt_tensor *block_fn(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_module_forward(tt_nn_block_module(ctx), in[0]);
}

// The chain of blocks; with checkpoint_blocks each block under tt_activation_checkpoint, its
// dropout masks replayed from the model's stream.
static tt_tensor *blocks_fwd(void *self, tt_tensor *x) {
    tt_gpt *m = self;
    if (!m->checkpoint_blocks) return tt_module_forward_chain(tt__gpt_blocks_module(m), x);
    for (int64_t l = 0; l < m->cfg.n_layer; l++)
        x = tt_activation_checkpoint(block_fn, &m->blocks[l], 1, &x, &m->dropout_rng);
    return x;
}

static void free_visit(tt_module child, const char *name, void *ctx) {
    (void)name;
    (void)ctx;
    tt_module_free(child);
}

// Each block, then the array.
static void blocks_free(void *self) {
    tt_gpt *m = self;
    tt_module_children(tt__gpt_blocks_module(m), free_visit, NULL);
    tt_free(m->blocks);
    m->blocks = NULL;
}

static const tt_module_ops blocks_ops = {.type = "Blocks", .forward = blocks_fwd,
                                         .children = blocks_children, .free = blocks_free,
                                         .chain = true};

tt_module tt__gpt_blocks_module(tt_gpt *m) { return (tt_module){m, &blocks_ops}; }

// ---- the tied head: logits = x wte^T, no parameters of its own ----

static tt_tensor *tied_head_fwd(void *self, tt_tensor *x) { return tt__gpt_head(self, x); }

static const tt_module_ops tied_head_ops = {.type = "TiedHead", .forward = tied_head_fwd};

// ---- the model ----

static tt_tensor *gpt_fwd(void *self, tt_tensor *tokens) { return tt_gpt_forward(self, tokens); }

// In forward order, each on the previous output (a chain): wte, wpe (learned positions, added
// at position 0), drop, blocks, ln_f, and the head: lm_head (untied) or head (tied to wte, no
// parameters). Their parameters, in this order, are m->params (nanoGPT's names: wte.weight,
// wpe.weight, blocks.<l>.attn.q_proj.weight, ..., ln_f.weight, lm_head.weight).
static void gpt_children(void *self, tt_module_visit visit, void *ctx) {
    tt_gpt *m = self;
    visit(tt_nn_embedding_module(&m->wte), "wte", ctx);
    if (m->wpe.weight) visit(tt_nn_pos_embedding_module(&m->wpe), "wpe", ctx);
    visit(tt_nn_dropout_module(&m->drop), "drop", ctx);
    visit(tt__gpt_blocks_module(m), "blocks", ctx);
    visit(tt_nn_norm_module(&m->ln_f), "ln_f", ctx);
    if (m->lm_head.weight) visit(tt_nn_linear_module(&m->lm_head), "lm_head", ctx);
    else visit((tt_module){m, &tied_head_ops}, "head", ctx);
}

static void gpt_free(void *self) { gpt_children(self, free_visit, NULL); }

static const tt_module_ops gpt_ops = {.type = "GPT", .forward = gpt_fwd,
                                      .children = gpt_children, .free = gpt_free, .chain = true};

tt_module tt_gpt_module(tt_gpt *m) {
    TT_CHECK(m && m->blocks, "the model is not initialized; call tt_gpt_init first");
    return (tt_module){m, &gpt_ops};
}
