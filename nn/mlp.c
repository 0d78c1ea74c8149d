// A general multi-layer perceptron as torchvision.ops.MLP builds it (without its optional norm
// layers): Linear, activation, Dropout per hidden layer, then the last Linear and a Dropout,
// with torchvision's parameter names. A composition of tt_nn_linear, tt_activate and tt_dropout.
//
// Letters: N the leading dims of x, W_i the width of layer i (widths[i]).
#include "nn_internal.h"

#include <stdio.h>
#include <string.h>

void tt_nn_mlp_init(tt_nn_mlp *m, int n_widths, const int64_t *widths, tt_act act, bool bias,
                    double dropout, tt_rng *rng) {
    TT_CHECK(n_widths >= 2 && widths, "need n_widths >= 2 widths {in, hidden..., out}, got "
             "n_widths=%d", n_widths);
    for (int i = 0; i < n_widths; i++)
        TT_CHECK(widths[i] > 0, "widths[%d]=%lld; every width must be positive", i,
                 (long long)widths[i]);
    tt__check_act(act, __func__);
    TT_CHECK(act != TT_ACT_SWIGLU,
             "swiglu halves the width, so the next layer would not fit; "
             "use tt_nn_feedforward, whose SwiGLU has gate_proj and up_proj");
    TT_CHECK(dropout >= 0 && dropout <= 1, "dropout probability %g is outside [0, 1]", dropout);
    memset(m, 0, sizeof *m);
    m->n_layers = n_widths - 1;
    m->act = act;
    m->layers = TT_CALLOC((size_t)m->n_layers, sizeof *m->layers);
    m->drops = TT_CALLOC((size_t)m->n_layers, sizeof *m->drops);
    // Drawn in the order torchvision creates its Linear layers: 0, 3, 6, ...
    for (int i = 0; i < m->n_layers; i++) {
        tt_nn_linear_init(&m->layers[i], widths[i], widths[i + 1], bias, rng);
        tt_nn_dropout_init(&m->drops[i], dropout, rng);
    }
}

// x (N..., W_0) -> (N..., W_last): h = drop(act(linear_i(h))) for the hidden layers, then
// drop(linear_last(h)).
tt_tensor *tt_nn_mlp_forward(tt_nn_mlp *m, tt_tensor *x) {
    TT_CHECK(m->n_layers > 0, "the MLP is not initialized; call tt_nn_mlp_init first");
    tt_scope_begin();
    tt_tensor *h = x;
    for (int i = 0; i < m->n_layers; i++) {
        h = tt_nn_linear_forward(&m->layers[i], h);  // (N..., W_{i+1})
        if (i + 1 < m->n_layers) h = tt_activate(m->act, h);
        h = tt_nn_dropout_forward(&m->drops[i], h);
    }
    tt_keep(h);
    tt_scope_end();
    return h;
}

// The children as torchvision's nn.Sequential indexes them: layer i's Linear at 3 i, its
// activation at 3 i + 1 and Dropout at 3 i + 2; the last layer has no activation, so its
// Dropout follows at 3 i + 1.
static void mlp_children(void *self, tt_module_visit visit, void *ctx) {
    tt_nn_mlp *m = self;
    char name[TT_NAME_MAX];
    for (int i = 0; i < m->n_layers; i++) {
        int at = 3 * i;
        visit(tt_nn_linear_module(&m->layers[i]), tt_name_index(name, NULL, at++), ctx);
        if (i + 1 < m->n_layers)
            visit(tt_act_module(m->act), tt_name_index(name, NULL, at++), ctx);
        visit(tt_nn_dropout_module(&m->drops[i]), tt_name_index(name, NULL, at), ctx);
    }
}

static tt_tensor *mlp_fwd(void *self, tt_tensor *x) { return tt_nn_mlp_forward(self, x); }
static void mlp_free(void *self) { tt_nn_mlp_free(self); }
static const tt_module_ops mlp_ops = {.type = "MLP", .forward = mlp_fwd,
                                      .children = mlp_children, .free = mlp_free};
tt_module tt_nn_mlp_module(tt_nn_mlp *m) { return (tt_module){m, &mlp_ops}; }

void tt_nn_mlp_params(const tt_nn_mlp *m, tt_params *out, const char *prefix) {
    tt_module_params(tt_nn_mlp_module((tt_nn_mlp *)m), out, prefix);
}

void tt_nn_mlp_train(tt_nn_mlp *m, bool training) {
    tt_module_train(tt_nn_mlp_module(m), training);
}

void tt_nn_mlp_free(tt_nn_mlp *m) {
    tt__module_free_children(tt_nn_mlp_module(m));
    tt_free(m->layers);
    tt_free(m->drops);
    memset(m, 0, sizeof *m);
}
