// tt_gpt_module: the GPT behind the tt_module interface (forward on tokens, its children under
// the state_dict names of tt_gpt's parameter list), for tt_model_summary and module walks.
// Not here: the model itself (gpt.c).
#include "gpt_internal.h"

// ---- blocks: a container whose children are "0" .. "n_layer - 1" ----

static tt_tensor *blocks_fwd(void *self, tt_tensor *x) {
    tt_gpt *m = self;
    for (int64_t l = 0; l < m->cfg.n_layer; l++) x = tt_block_forward(&m->blocks[l], x);
    return x;
}

static void blocks_children(void *self, tt_module_visit visit, void *ctx) {
    tt_gpt *m = self;
    char name[TT_NAME_MAX];
    for (int64_t l = 0; l < m->cfg.n_layer; l++)
        visit(tt_block_module(&m->blocks[l]), tt_name_index(name, NULL, (int)l), ctx);
}

static const tt_module_ops blocks_ops = {.type = "Blocks", .forward = blocks_fwd,
                                         .children = blocks_children, .chain = true};

// ---- the tied head: logits = x wte^T, no parameters of its own ----

static tt_tensor *tied_head_fwd(void *self, tt_tensor *x) { return tt__gpt_head(self, x); }

static const tt_module_ops tied_head_ops = {.type = "TiedHead", .forward = tied_head_fwd};

// ---- the model ----

static tt_tensor *gpt_fwd(void *self, tt_tensor *tokens) { return tt_gpt_forward(self, tokens); }

// In forward order, each on the previous output (a chain): wte, wpe (learned positions, added
// at position 0), drop, blocks, ln_f, and the head: lm_head (untied) or head (tied to wte, no
// parameters). The parameters come out in tt_gpt_init's names and order.
static void gpt_children(void *self, tt_module_visit visit, void *ctx) {
    tt_gpt *m = self;
    visit(tt_embedding_module(&m->wte), "wte", ctx);
    if (m->wpe.weight) visit(tt_pos_embedding_module(&m->wpe), "wpe", ctx);
    visit(tt_dropout_module(&m->drop), "drop", ctx);
    visit((tt_module){m, &blocks_ops}, "blocks", ctx);
    visit(tt_norm_module(&m->ln_f), "ln_f", ctx);
    if (m->lm_head.weight) visit(tt_linear_module(&m->lm_head), "lm_head", ctx);
    else visit((tt_module){m, &tied_head_ops}, "head", ctx);
}

static const tt_module_ops gpt_ops = {.type = "GPT", .forward = gpt_fwd,
                                      .children = gpt_children, .chain = true};

tt_module tt_gpt_module(tt_gpt *m) {
    TT_CHECK(m && m->blocks, "the model is not initialized; call tt_gpt_init first");
    return (tt_module){m, &gpt_ops};
}
