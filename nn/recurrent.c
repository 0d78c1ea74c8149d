// Recurrent layers as in torch.nn: RNN (tanh or relu), LSTM and GRU, multi-layer, batch_first,
// optional bias and initial states, PyTorch's gate order, init and parameter names. Each is a
// composition of existing ops (no kernel, no op row): one affine over the whole sequence for
// the input projection of a layer, then per step an affine on h, gates and a stack.
// Not implemented: bidirectional, dropout between layers, LSTM proj_size, packed sequences.
//
// Letters: T time steps, B batch, H hidden size, G gates (RNN 1, LSTM 4, GRU 3), L layers.
#include "nn_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef enum cell_kind { CELL_RNN_TANH, CELL_RNN_RELU, CELL_LSTM, CELL_GRU } cell_kind;

static int64_t cell_gates(cell_kind kind) {
    return kind == CELL_LSTM ? 4 : kind == CELL_GRU ? 3 : 1;
}

// What the three modules share (their structs have these fields; no parameter owned here).
typedef struct recurrent_view {
    cell_kind kind;
    tt_nn_recurrent_layer *layers;
    int64_t input_size, hidden_size;
    int num_layers;
    bool batch_first;
} recurrent_view;

// ---- init, params, free ----

// The num_layers layers' parameters, each U(-k, k) with k = 1/sqrt(H) (PyTorch's
// RNNBase.reset_parameters), in PyTorch's order w_ih, w_hh, b_ih, b_hh.
static tt_nn_recurrent_layer *layers_init(const char *func, cell_kind kind, int64_t input_size,
                                          int64_t hidden_size, int num_layers, bool bias,
                                          tt_rng *rng) {
    TT_CHECK_IN(func, input_size > 0 && hidden_size > 0 && num_layers >= 1,
                "need input_size > 0, hidden_size > 0 and num_layers >= 1, got input_size=%lld "
                "hidden_size=%lld num_layers=%d", (long long)input_size, (long long)hidden_size,
                num_layers);
    int64_t GH = cell_gates(kind) * hidden_size;
    double k = 1.0 / sqrt((double)hidden_size);
    tt_nn_recurrent_layer *layers = TT_CALLOC((size_t)num_layers, sizeof *layers);
    for (int l = 0; l < num_layers; l++) {
        tt_nn_recurrent_layer *p = &layers[l];
        int64_t in = l == 0 ? input_size : hidden_size;
        p->weight_ih = tt__param_new(2, (int64_t[]){GH, in});
        p->weight_hh = tt__param_new(2, (int64_t[]){GH, hidden_size});
        tt_uniform_(p->weight_ih, rng, -k, k);
        tt_uniform_(p->weight_hh, rng, -k, k);
        if (bias) {
            p->bias_ih = tt__param_new(1, (int64_t[]){GH});
            p->bias_hh = tt__param_new(1, (int64_t[]){GH});
            tt_uniform_(p->bias_ih, rng, -k, k);
            tt_uniform_(p->bias_hh, rng, -k, k);
        }
    }
    return layers;
}

// "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", then _l1 ...: PyTorch's names.
static void layers_params(const tt_nn_recurrent_layer *layers, int num_layers, tt_params *out,
                          const char *prefix) {
    char name[64];
    for (int l = 0; l < num_layers; l++) {
        const tt_nn_recurrent_layer *p = &layers[l];
        snprintf(name, sizeof name, "weight_ih_l%d", l);
        tt_params_add(out, prefix, name, p->weight_ih);
        snprintf(name, sizeof name, "weight_hh_l%d", l);
        tt_params_add(out, prefix, name, p->weight_hh);
        if (p->bias_ih) {
            snprintf(name, sizeof name, "bias_ih_l%d", l);
            tt_params_add(out, prefix, name, p->bias_ih);
            snprintf(name, sizeof name, "bias_hh_l%d", l);
            tt_params_add(out, prefix, name, p->bias_hh);
        }
    }
}

static void layers_free(tt_nn_recurrent_layer *layers, int num_layers) {
    if (!layers) return;
    for (int l = 0; l < num_layers; l++) {
        tt_release(layers[l].weight_ih);
        tt_release(layers[l].weight_hh);
        tt_release(layers[l].bias_ih);
        tt_release(layers[l].bias_hh);
    }
    tt_free(layers);
}

// ---- one time step (h, c NULL: zeros, as at t = 0 without h0 / c0) ----

// gi (B, G*H): this step's W_ih x + b_ih. Returns h' (B, H); *c is the LSTM's cell state.
static tt_tensor *cell_step(cell_kind kind, const tt_nn_recurrent_layer *p, int64_t H,
                            tt_tensor *gi, tt_tensor *h, tt_tensor **c) {
    // W_hh h + b_hh (B, G*H); with h = 0 it is b_hh (broadcast) or nothing.
    tt_tensor *gh = h ? tt_affine(h, p->weight_hh, p->bias_hh) : p->bias_hh;
    switch (kind) {
    case CELL_RNN_TANH:
    case CELL_RNN_RELU: {
        tt_tensor *a = gh ? tt_add(gi, gh) : gi;
        return kind == CELL_RNN_TANH ? tt_tanh(a) : tt_relu(a);
    }
    case CELL_LSTM: {
        tt_tensor *gates = gh ? tt_add(gi, gh) : gi;  // (B, 4H): i f g o
        tt_tensor *s = tt_sigmoid(gates);
        tt_tensor *i = tt_narrow(s, 1, 0, H);
        tt_tensor *f = tt_narrow(s, 1, H, H);
        tt_tensor *g = tt_tanh(tt_narrow(gates, 1, 2 * H, H));
        tt_tensor *o = tt_narrow(s, 1, 3 * H, H);
        tt_tensor *ig = tt_mul(i, g);
        *c = *c ? tt_add(tt_mul(f, *c), ig) : ig;
        return tt_mul(o, tt_tanh(*c));
    }
    case CELL_GRU: {
        // r, z from the first 2H of both projections; n = tanh(gi_n + r * gh_n).
        tt_tensor *gi_rz = tt_narrow(gi, 1, 0, 2 * H), *gi_n = tt_narrow(gi, 1, 2 * H, H);
        tt_tensor *gh_rz = gh ? tt_narrow(gh, gh->ndim - 1, 0, 2 * H) : NULL;
        tt_tensor *gh_n = gh ? tt_narrow(gh, gh->ndim - 1, 2 * H, H) : NULL;
        tt_tensor *rz = tt_sigmoid(gh_rz ? tt_add(gi_rz, gh_rz) : gi_rz);
        tt_tensor *r = tt_narrow(rz, 1, 0, H), *z = tt_narrow(rz, 1, H, H);
        tt_tensor *n = tt_tanh(gh_n ? tt_add(gi_n, tt_mul(r, gh_n)) : gi_n);
        // (1 - z) * n + z * h = n + z * (h - n)
        return h ? tt_add(n, tt_mul(z, tt_sub(h, n))) : tt_mul(tt_rsub_scalar(1.0, z), n);
    }
    }
    return NULL;
}

// ---- the sequence ----

// Checks that a state (h0 or c0) is shape (L, B, H) ((L, H) when unbatched) and x's dtype.
static void check_state(const char *func, const char *what, const tt_tensor *s,
                        const tt_tensor *x, bool batched, int64_t L, int64_t B, int64_t H) {
    if (!s) return;
    bool ok = batched ? s->ndim == 3 && s->shape[0] == L && s->shape[1] == B && s->shape[2] == H
                      : s->ndim == 2 && s->shape[0] == L && s->shape[1] == H;
    TT_CHECK_IN(func, ok, "%s %s must be (num_layers, batch, hidden_size) = %s for input %s%s; "
                "pass NULL for zeros", what, tt__shape(s),
                batched ? tt__shape_of(3, (int64_t[]){L, B, H})
                        : tt__shape_of(2, (int64_t[]){L, H}),
                tt__shape(x), batched ? "" : " (unbatched: (num_layers, hidden_size))");
    TT_CHECK_IN(func, s->dtype == x->dtype, "%s has dtype %s but the input has %s; convert one "
                "with tt_to_dtype", what, tt_dtype_name(s->dtype), tt_dtype_name(x->dtype));
}

static tt_tensor *recurrent_forward(const char *func, const recurrent_view *m, tt_tensor *x,
                                    tt_tensor *h0, tt_tensor *c0, tt_tensor **h_n,
                                    tt_tensor **c_n) {
    TT_CHECK_IN(func, m->layers, "the module is not initialized (call its _init first)");
    int64_t H = m->hidden_size, L = m->num_layers;
    tt_dtype pdt = m->layers[0].weight_ih->dtype;
    TT_CHECK_IN(func, (x->ndim == 3 || x->ndim == 2) && x->shape[x->ndim - 1] == m->input_size,
                "input %s must be (T, B, input_size=%lld), (B, T, input_size) with batch_first, "
                "or unbatched (T, input_size)", tt__shape(x), (long long)m->input_size);
    TT_CHECK_IN(func, x->dtype == pdt, "input has dtype %s but the parameters are %s; convert "
                "the input with tt_to_dtype or build the module under tt_set_default_dtype",
                tt_dtype_name(x->dtype), tt_dtype_name(pdt));
    bool batched = x->ndim == 3;
    int td = batched && m->batch_first ? 1 : 0;  // the time dim of x and of the output
    int64_t T = x->shape[td], B = batched ? x->shape[1 - td] : 1;
    TT_CHECK_IN(func, T > 0 && B > 0, "input %s has an empty time or batch dim; the sequence "
                "needs at least one step and one batch element", tt__shape(x));
    check_state(func, "h0", h0, x, batched, L, B, H);
    check_state(func, "c0", c0, x, batched, L, B, H);

    tt_scope_begin();
    if (!batched) {  // a batch of one: (T, 1, in), states (L, 1, H)
        x = tt_unsqueeze(x, 1);
        h0 = h0 ? tt_unsqueeze(h0, 1) : NULL;
        c0 = c0 ? tt_unsqueeze(c0, 1) : NULL;
    }
    tt_tensor **steps = TT_MALLOC((size_t)T * sizeof *steps);  // gi per step, then h per step
    tt_tensor **hn = TT_CALLOC((size_t)(4 * L), sizeof *hn);    // h_n, c_n, h0, c0 per layer
    tt_tensor **cn = hn + L, **h0s = hn + 2 * L, **c0s = hn + 3 * L;
    if (h0) tt_unbind(h0, 0, h0s, (int)L);
    if (c0) tt_unbind(c0, 0, c0s, (int)L);
    tt_tensor *seq = x;  // this layer's input sequence
    for (int l = 0; l < L; l++) {
        const tt_nn_recurrent_layer *p = &m->layers[l];
        tt_tensor *gi = tt_affine(seq, p->weight_ih, p->bias_ih);  // (T, B, G*H) / (B, T, G*H)
        tt_unbind(gi, td, steps, (int)T);
        tt_tensor *h = h0s[l], *c = c0s[l];  // (B, H) or NULL for zeros
        for (int64_t t = 0; t < T; t++) {
            h = cell_step(m->kind, p, H, steps[t], h, &c);
            steps[t] = h;
        }
        seq = tt_stack((int)T, steps, td);  // (T, B, H) / (B, T, H)
        hn[l] = h;
        cn[l] = c;
    }
    tt_tensor *out = seq, *hN = NULL, *cN = NULL;
    if (h_n) hN = tt_stack((int)L, hn, 0);  // (L, B, H)
    if (c_n) cN = tt_stack((int)L, cn, 0);
    if (!batched) {
        out = tt_squeeze(out, 1);
        hN = hN ? tt_squeeze(hN, 1) : NULL;
        cN = cN ? tt_squeeze(cN, 1) : NULL;
    }
    tt_keep(out);
    if (h_n) *h_n = tt_keep(hN);
    if (c_n) *c_n = tt_keep(cN);
    tt_scope_end();
    tt_free(steps);
    tt_free(hn);
    return out;
}

// ---- RNN ----

void tt_nn_rnn_init(tt_nn_rnn *m, int64_t input_size, int64_t hidden_size, int num_layers,
                    tt_act nonlinearity, bool bias, bool batch_first, tt_rng *rng) {
    TT_CHECK(nonlinearity == TT_ACT_TANH || nonlinearity == TT_ACT_RELU, "nonlinearity must be "
             "TT_ACT_TANH or TT_ACT_RELU (torch.nn.RNN's 'tanh' / 'relu'), got %d",
             (int)nonlinearity);
    memset(m, 0, sizeof *m);
    cell_kind kind = nonlinearity == TT_ACT_TANH ? CELL_RNN_TANH : CELL_RNN_RELU;
    m->layers = layers_init(__func__, kind, input_size, hidden_size, num_layers, bias, rng);
    m->input_size = input_size;
    m->hidden_size = hidden_size;
    m->num_layers = num_layers;
    m->bias = bias;
    m->batch_first = batch_first;
    m->nonlinearity = nonlinearity;
}

tt_tensor *tt_nn_rnn_forward(tt_nn_rnn *m, tt_tensor *x, tt_tensor *h0, tt_tensor **h_n) {
    recurrent_view v = {m->nonlinearity == TT_ACT_RELU ? CELL_RNN_RELU : CELL_RNN_TANH,
                        m->layers, m->input_size, m->hidden_size, m->num_layers,
                        m->batch_first};
    return recurrent_forward(__func__, &v, x, h0, NULL, h_n, NULL);
}

void tt_nn_rnn_params(const tt_nn_rnn *m, tt_params *out, const char *prefix) {
    layers_params(m->layers, m->num_layers, out, prefix);
}

void tt_nn_rnn_free(tt_nn_rnn *m) {
    layers_free(m->layers, m->num_layers);
    memset(m, 0, sizeof *m);
}

static tt_tensor *rnn_fwd(void *self, tt_tensor *x) {
    return tt_nn_rnn_forward(self, x, NULL, NULL);
}
static void rnn_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_rnn_params(self, out, prefix);
}
static void rnn_free_self(void *self) { tt_nn_rnn_free(self); }
static const tt_module_ops rnn_ops = {.type = "RNN", .forward = rnn_fwd, .params = rnn_params,
                                      .free = rnn_free_self};
tt_module tt_nn_rnn_module(tt_nn_rnn *m) { return (tt_module){m, &rnn_ops}; }

// ---- LSTM ----

void tt_nn_lstm_init(tt_nn_lstm *m, int64_t input_size, int64_t hidden_size, int num_layers,
                     bool bias, bool batch_first, tt_rng *rng) {
    memset(m, 0, sizeof *m);
    m->layers = layers_init(__func__, CELL_LSTM, input_size, hidden_size, num_layers, bias, rng);
    m->input_size = input_size;
    m->hidden_size = hidden_size;
    m->num_layers = num_layers;
    m->bias = bias;
    m->batch_first = batch_first;
}

tt_tensor *tt_nn_lstm_forward(tt_nn_lstm *m, tt_tensor *x, tt_tensor *h0, tt_tensor *c0,
                              tt_tensor **h_n, tt_tensor **c_n) {
    recurrent_view v = {CELL_LSTM, m->layers, m->input_size, m->hidden_size, m->num_layers,
                        m->batch_first};
    return recurrent_forward(__func__, &v, x, h0, c0, h_n, c_n);
}

void tt_nn_lstm_params(const tt_nn_lstm *m, tt_params *out, const char *prefix) {
    layers_params(m->layers, m->num_layers, out, prefix);
}

void tt_nn_lstm_free(tt_nn_lstm *m) {
    layers_free(m->layers, m->num_layers);
    memset(m, 0, sizeof *m);
}

static tt_tensor *lstm_fwd(void *self, tt_tensor *x) {
    return tt_nn_lstm_forward(self, x, NULL, NULL, NULL, NULL);
}
static void lstm_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_lstm_params(self, out, prefix);
}
static void lstm_free_self(void *self) { tt_nn_lstm_free(self); }
static const tt_module_ops lstm_ops = {.type = "LSTM", .forward = lstm_fwd,
                                       .params = lstm_params, .free = lstm_free_self};
tt_module tt_nn_lstm_module(tt_nn_lstm *m) { return (tt_module){m, &lstm_ops}; }

// ---- GRU ----

void tt_nn_gru_init(tt_nn_gru *m, int64_t input_size, int64_t hidden_size, int num_layers,
                    bool bias, bool batch_first, tt_rng *rng) {
    memset(m, 0, sizeof *m);
    m->layers = layers_init(__func__, CELL_GRU, input_size, hidden_size, num_layers, bias, rng);
    m->input_size = input_size;
    m->hidden_size = hidden_size;
    m->num_layers = num_layers;
    m->bias = bias;
    m->batch_first = batch_first;
}

tt_tensor *tt_nn_gru_forward(tt_nn_gru *m, tt_tensor *x, tt_tensor *h0, tt_tensor **h_n) {
    recurrent_view v = {CELL_GRU, m->layers, m->input_size, m->hidden_size, m->num_layers,
                        m->batch_first};
    return recurrent_forward(__func__, &v, x, h0, NULL, h_n, NULL);
}

void tt_nn_gru_params(const tt_nn_gru *m, tt_params *out, const char *prefix) {
    layers_params(m->layers, m->num_layers, out, prefix);
}

void tt_nn_gru_free(tt_nn_gru *m) {
    layers_free(m->layers, m->num_layers);
    memset(m, 0, sizeof *m);
}

static tt_tensor *gru_fwd(void *self, tt_tensor *x) {
    return tt_nn_gru_forward(self, x, NULL, NULL);
}
static void gru_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_gru_params(self, out, prefix);
}
static void gru_free_self(void *self) { tt_nn_gru_free(self); }
static const tt_module_ops gru_ops = {.type = "GRU", .forward = gru_fwd, .params = gru_params,
                                      .free = gru_free_self};
tt_module tt_nn_gru_module(tt_nn_gru *m) { return (tt_module){m, &gru_ops}; }
