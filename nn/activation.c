// The activation table (nn/activation.h): by tt_act value, its name, the op that computes it
// and whether it is elementwise; tt_act_name, tt_act_parse, tt_activate and tt_act_module
// read it. Not here: the ops themselves (autograd/).
#include "nn_internal.h"

#include <string.h>

// ---- the table ----

static tt_tensor *identity_fwd(tt_tensor *x) { return tt__autorelease(tt_retain(x)); }

// relu(x)^2 (Primer, So et al. 2021), as a composition: its gradient comes with it.
static tt_tensor *relu2_fwd(tt_tensor *x) {
    tt_scope_begin();
    tt_tensor *y = tt_keep(tt_square(tt_relu(x)));
    tt_scope_end();
    return y;
}

static tt_tensor *softmax_fwd(tt_tensor *x) { return tt_softmax(x, -1); }

tt_tensor *tt_swiglu(tt_tensor *gate, tt_tensor *up) {
    TT_CHECK(gate && up && tt_same_shape(gate, up), "gate %s and up %s must have one shape",
             gate ? tt__shape(gate) : "NULL", up ? tt__shape(up) : "NULL");
    tt_scope_begin();
    tt_tensor *y = tt_keep(tt_mul(tt_silu(gate), up));
    tt_scope_end();
    return y;
}

// x (..., 2H) -> (..., H): the first half gates the second.
static tt_tensor *swiglu_fwd(tt_tensor *x) {
    int64_t n = x->ndim ? x->shape[x->ndim - 1] : 0;
    TT_CHECK_IN("tt_activate", n % 2 == 0 && n > 0,
                "swiglu splits the last dim in halves "
                "(gate, up), so it must be even, got %s",
                tt__shape(x));
    tt_scope_begin();
    tt_tensor *y = tt_swiglu(tt_slice(x, -1, 0, n / 2, 1), tt_slice(x, -1, n / 2, n, 1));
    tt_keep(y);
    tt_scope_end();
    return y;
}

const char *const tt_act_names[TT_ACT_COUNT] = {
    [TT_ACT_IDENTITY] = "identity",   [TT_ACT_RELU] = "relu",       [TT_ACT_GELU] = "gelu",
    [TT_ACT_GELU_TANH] = "gelu_tanh", [TT_ACT_RELU2] = "relu2",     [TT_ACT_SILU] = "silu",
    [TT_ACT_TANH] = "tanh",           [TT_ACT_SIGMOID] = "sigmoid", [TT_ACT_SWIGLU] = "swiglu",
    [TT_ACT_SOFTMAX] = "softmax",
};

static const tt_act_info table[TT_ACT_COUNT] = {
    [TT_ACT_IDENTITY] = {TT_ACT_IDENTITY, identity_fwd, true},
    [TT_ACT_RELU] = {TT_ACT_RELU, tt_relu, true},
    [TT_ACT_GELU] = {TT_ACT_GELU, tt_gelu, true},
    [TT_ACT_GELU_TANH] = {TT_ACT_GELU_TANH, tt_gelu_tanh, true},
    [TT_ACT_RELU2] = {TT_ACT_RELU2, relu2_fwd, true},
    [TT_ACT_SILU] = {TT_ACT_SILU, tt_silu, true},
    [TT_ACT_TANH] = {TT_ACT_TANH, tt_tanh, true},
    [TT_ACT_SIGMOID] = {TT_ACT_SIGMOID, tt_sigmoid, true},
    [TT_ACT_SWIGLU] = {TT_ACT_SWIGLU, swiglu_fwd, false},
    [TT_ACT_SOFTMAX] = {TT_ACT_SOFTMAX, softmax_fwd, false},
};

void tt__check_act(tt_act act, const char *func) {
    TT_CHECK_IN(func, act >= 0 && act < TT_ACT_COUNT, "invalid activation %d; valid values are "
                "0 .. %d (TT_ACT_IDENTITY .. TT_ACT_SOFTMAX in nn.h)", (int)act,
                TT_ACT_COUNT - 1);
}

const tt_act_info *tt_act_info_of(tt_act act) {
    tt__check_act(act, __func__);
    TT_CHECK(table[act].forward && tt_act_names[act], "activation %d has no row in the table "
             "of nn/activation.c; add one", (int)act);
    return &table[act];
}

// ---- names ----

const char *tt_act_name(tt_act act) {
    return (act >= 0 && act < TT_ACT_COUNT) ? tt_act_names[act] : "invalid";
}

bool tt_act_parse(const char *name, tt_act *out) {
    for (int i = 0; i < TT_ACT_COUNT; i++)
        if (strcmp(name, tt_act_names[i]) == 0) {
            *out = (tt_act)i;
            return true;
        }
    return false;
}

// ---- forward and module ----

tt_tensor *tt_activate(tt_act act, tt_tensor *x) {
    tt__check_act(act, __func__);
    return tt_act_info_of(act)->forward(x);
}

static tt_tensor *act_fwd(void *self, tt_tensor *x) {
    return ((const tt_act_info *)self)->forward(x);
}

static const tt_module_ops act_ops = {.type = "Activation", .forward = act_fwd};

tt_module tt_act_module(tt_act act) {
    tt__check_act(act, __func__);
    return (tt_module){(void *)tt_act_info_of(act), &act_ops};
}
