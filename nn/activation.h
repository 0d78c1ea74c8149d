// tinytorch.c nn: the activation table, one row per tt_act value (nn.h): its name, the op that
// computes it and whether it is elementwise. tt_act_name, tt_act_parse, tt_activate and
// tt_act_module (nn.h) read it, and so does every config that names an activation (the GPT's
// "activation" field, a CLI's --act): add an activation to tt_act and give it its row here.
//
//     tt_act act;
//     if (!tt_act_parse("gelu_tanh", &act)) ...                 // tt_act_names[act]
//     tt_tensor *y = tt_act_info_of(act)->forward(x);           // as tt_activate(act, x)
#ifndef TT_NN_ACTIVATION_H
#define TT_NN_ACTIVATION_H

#include "layers.h"

#ifdef __cplusplus
extern "C" {
#endif

// The names by tt_act value ("identity", "relu", "gelu", "gelu_tanh", "relu2", "silu", "tanh",
// "sigmoid", "swiglu", "softmax"): the table's name column, an array for tables that index names by
// value (the GPT config's enum fields).
extern const char *const tt_act_names[TT_ACT_COUNT];

// The rest of a row.
typedef struct tt_act_info {
    tt_act act;
    tt_tensor *(*forward)(tt_tensor *x);  // a new reference, as any op
    bool elementwise;                     // false: swiglu, softmax (over the last dim)
} tt_act_info;

// The row of act; aborts for a value outside [0, TT_ACT_COUNT).
const tt_act_info *tt_act_info_of(tt_act act);

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_ACTIVATION_H
