// Pruning and low rank on a GPT: the block weights as a list for magnitude pruning, whole
// attention heads as structured masks, and every block Linear as a truncated SVD. The pruning
// machinery itself is compress/prune.c, the SVD compress/lowrank.c.
#include "gpt_internal.h"

#include <string.h>

// Every block's Linears (attn.q/k/v/o_proj, mlp.fc/proj) in parameter order, under their
// names ("blocks.0.attn.q_proj"), from the module tree. Free with tt_nn_linear_list_free.
static void block_linears(const tt_gpt *m, tt_nn_linear_list *out) {
    tt_nn_linear_list_init(out);
    tt_module_linears(tt__gpt_blocks_module((tt_gpt *)m), "blocks", out);
}

void tt_gpt_block_weights(const tt_gpt *m, tt_params *out) {
    TT_CHECK(m && m->blocks && out, "the model is not initialized; call tt_gpt_init first");
    tt_nn_linear_list lin;
    block_linears(m, &lin);
    for (int i = 0; i < lin.n; i++) {
        const tt_nn_linear *x = lin.items[i].linear;
        const char *prefix = lin.items[i].name;
        char name[TT_NAME_MAX];
        const tt_nn_linear *factors = tt_nn_linear_factors(x);
        if (factors) {
            for (int f = 0; f < 2; f++)
                tt_params_add(out, tt_name_index(name, prefix, f), "weight", factors[f].weight);
        } else {
            tt_params_add(out, prefix, "weight", x->weight);
        }
    }
    tt_nn_linear_list_free(&lin);
}

// Masks rows [lo, hi) (rows = true) or columns [lo, hi) of a dense Linear's weight.
static void prune_range(tt_pruning *p, const char *name, tt_nn_linear *lin, int64_t lo,
                        int64_t hi, bool rows) {
    TT_CHECK_IN("tt_gpt_prune_heads", lin->weight && !tt_nn_linear_quantized(lin), "'%s' must be "
                "a dense f32 Linear (not low rank, not int8) to prune its heads", name);
    tt_tensor *w = lin->weight;  // (out, in)
    int64_t R = w->shape[0], C = w->shape[1];
    bool *keep = TT_MALLOC((size_t)(R * C) * sizeof *keep);
    tt_tensor *mask = tt_prune_mask(p, name);
    double *cur = NULL;
    if (mask) {
        cur = TT_MALLOC((size_t)(R * C) * sizeof *cur);
        tt_to_f64_array(mask, cur);
    }
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) {
            int64_t i = rows ? r : c;
            keep[r * C + c] = (i < lo || i >= hi) && (!cur || cur[r * C + c] != 0);
        }
    tt_prune_custom(p, name, w, keep);
    tt_free(cur);
    tt_free(keep);
}

void tt_gpt_prune_heads(tt_gpt *m, tt_pruning *p, int64_t layer, const int64_t *heads, int n) {
    TT_CHECK(m && m->blocks && p, "the model is not initialized; call tt_gpt_init first");
    TT_CHECK(layer >= 0 && layer < m->cfg.n_layer, "layer %lld is out of range [0, %lld)",
             (long long)layer, (long long)m->cfg.n_layer);
    TT_CHECK(n >= 0 && (heads || n == 0), "heads must list n >= 0 head indices");
    tt_nn_attention *a = &m->blocks[layer].attn;
    int64_t hs = a->head_dim, nh = m->cfg.n_head;
    bool mha = m->cfg.n_kv_head == nh;
    for (int i = 0; i < n; i++) {
        int64_t h = heads[i];
        TT_CHECK(h >= 0 && h < nh, "head %lld of layer %lld is out of range [0, %lld)",
                 (long long)h, (long long)layer, (long long)nh);
        char base[TT_NAME_MAX], name[TT_NAME_MAX];
        tt_name_index(base, "blocks", (int)layer);
        tt_name_join(base, base, "attn");
        prune_range(p, tt_name_join(name, tt_name_join(name, base, "q_proj"), "weight"),
                    &a->q_proj, h * hs, (h + 1) * hs, true);
        if (mha) {
            prune_range(p, tt_name_join(name, tt_name_join(name, base, "k_proj"), "weight"),
                        &a->k_proj, h * hs, (h + 1) * hs, true);
            prune_range(p, tt_name_join(name, tt_name_join(name, base, "v_proj"), "weight"),
                        &a->v_proj, h * hs, (h + 1) * hs, true);
        }
        prune_range(p, tt_name_join(name, tt_name_join(name, base, "o_proj"), "weight"),
                    &a->o_proj, h * hs, (h + 1) * hs, false);
    }
}

void tt_gpt_low_rank(tt_gpt *m, double fraction) {
    TT_CHECK(m && m->blocks, "the model is not initialized; call tt_gpt_init first");
    TT_CHECK(fraction > 0 && fraction <= 1, "fraction %g of the rank to keep must be in (0, 1]",
             fraction);
    TT_CHECK(!tt_gpt_is_quantized(m), "the model runs int8; call tt_gpt_dequantize first");
    tt_nn_linear_list lin;
    block_linears(m, &lin);
    for (int i = 0; i < lin.n; i++) {
        tt_nn_linear *x = lin.items[i].linear;
        TT_CHECK(!tt_nn_linear_factors(x), "%s is already low rank; factor a model once",
                 lin.items[i].name);
        int64_t k = x->in_features < x->out_features ? x->in_features : x->out_features;
        int64_t r = (int64_t)(fraction * (double)k);
        tt_nn_linear_low_rank(x, r < 1 ? 1 : r);
    }
    tt_nn_linear_list_free(&lin);
    tt__gpt_list_params(m);
}
