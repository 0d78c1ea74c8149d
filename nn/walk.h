// tinytorch.c nn: walking a module tree, PyTorch's named_modules(): every module under its
// dotted name, the Linears of a tree, and the forward of a chain of children. What a model
// derives from its tree (parameter lists, train mode, the Linears to compress) comes from here
// rather than from lists kept by hand.
//
//     tt_nn_linear_list lin;
//     tt_nn_linear_list_init(&lin);
//     tt_module_linears(tt_gpt_module(&gpt), NULL, &lin);  // "blocks.0.attn.q_proj", ...
//     for (int i = 0; i < lin.n; i++) printf("%s\n", lin.items[i].name);
//     tt_nn_linear_list_free(&lin);
#ifndef TT_NN_WALK_H
#define TT_NN_WALK_H

#include "layers.h"

#ifdef __cplusplus
extern "C" {
#endif

// visit(module, name, ctx) for m itself (name: prefix, "" when prefix is NULL), then for
// every descendant, depth first in its parent's children order, under its full dotted name
// ("blocks.0.attn.q_proj"): PyTorch's named_modules() (a module reached twice is visited
// twice; PyTorch skips repeats).
void tt_module_named_modules(tt_module m, const char *prefix, tt_module_visit visit, void *ctx);

// The tt_nn_linear behind m when m is tt_nn_linear_module's, else NULL (a module of a user's that
// calls itself "Linear" is not one).
tt_nn_linear *tt_module_as_linear(tt_module m);

typedef struct tt_named_linear {
    char name[TT_NAME_MAX];  // full dotted name, e.g. "blocks.0.mlp.fc"
    tt_nn_linear *linear;    // borrowed: the tree owns it
} tt_named_linear;

typedef struct tt_nn_linear_list {
    tt_named_linear *items;
    int n, cap;
} tt_nn_linear_list;

void tt_nn_linear_list_init(tt_nn_linear_list *l);
void tt_nn_linear_list_free(tt_nn_linear_list *l);  // the list only; safe on a zeroed struct
// Appends every Linear of m's tree (m included) in tt_module_named_modules order, named under
// prefix (may be NULL). A low-rank Linear counts once (its factors are not modules).
void tt_module_linears(tt_module m, const char *prefix, tt_nn_linear_list *out);

// The forward of a chain (tt_module_ops.chain): m's children run one after another, each on
// the previous one's output, in the caller's scope. Aborts when m has no children.
tt_tensor *tt_module_forward_chain(tt_module m, tt_tensor *x);

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_WALK_H
