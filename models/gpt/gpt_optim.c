// The optimizers a GPT trains with: nanoGPT's AdamW groups, or nanochat's split of Muon for
// the blocks' matrices beside AdamW for the rest. The matrices are found by walking the module
// tree (tt_gpt_block_weights), never listed by hand.
#include "gpt_internal.h"

#include <string.h>

// Whether t is in p.
static bool listed(const tt_params *p, const tt_tensor *t) {
    for (int i = 0; i < p->n; i++)
        if (p->items[i].tensor == t) return true;
    return false;
}

void tt_gpt_optim_init(tt_optim *o, const tt_gpt *m, tt_optim_config adamw, double weight_decay,
                       const tt_optim_config *muon, double muon_weight_decay) {
    TT_CHECK(o && m && m->blocks, "optimizer and an initialized model must not be NULL");
    TT_CHECK(!muon || muon->kind == TT_OPTIM_MUON,
             "the matrices' config must be Muon's "
             "(tt_muon_config), got %s",
             tt_optim_kind_name(muon->kind));
    tt_optim_init(o, adamw);
    if (!muon) {
        tt_optim_add_decay_groups(o, &m->params, weight_decay);
        return;
    }
    tt_params mats, rest;
    tt_params_init(&mats);
    tt_params_init(&rest);
    tt_gpt_block_weights(m, &mats);
    for (int i = 0; i < m->params.n; i++)
        if (!listed(&mats, m->params.items[i].tensor))
            tt_params_add(&rest, NULL, m->params.items[i].name, m->params.items[i].tensor);
    tt_optim_add_group_as(o, &mats, *muon, muon_weight_decay);
    tt_optim_add_decay_groups(o, &rest, weight_decay);
    tt_params_free(&mats);
    tt_params_free(&rest);
}
