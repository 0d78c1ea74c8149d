// Gradcheck cases of the recurrent layers of nn/recurrent.c: RNN (tanh, relu), LSTM and GRU at
// T=3, B=2, in=3, H=4, 2 layers, with and without h0 / c0, batch_first both ways, without
// bias, unbatched, and a non-contiguous input. The checked function is the concatenation of
// the flattened output, h_n and (LSTM) c_n, so every path is covered.
//
// Modules are built in f64 and their parameters are gradcheck inputs next to x, h0 and c0; the
// forward runs the module on a copy of its layers whose parameter pointers are the inputs, so
// gc_check's f32 forward runs the same code on f32 copies.
#include "gc_util.h"

#include <string.h>

typedef enum rec_kind { R_TANH, R_RELU, R_LSTM, R_GRU } rec_kind;

typedef struct rec_ctx {
    rec_kind kind;
    int64_t in, H;
    int L;
    bool bias, batch_first, h0, c0;
} rec_ctx;

#define MAX_LAYERS 2

// in = {x[, h0][, c0], weight_ih_l0, weight_hh_l0[, bias_ih_l0, bias_hh_l0], ... _l1}
static tt_tensor *f_recurrent(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const rec_ctx *c = ctx;
    int k = 1;
    tt_tensor *h0 = c->h0 ? in[k++] : NULL, *c0 = c->c0 ? in[k++] : NULL;
    tt_nn_recurrent_layer layers[MAX_LAYERS];
    for (int l = 0; l < c->L; l++) {
        layers[l].weight_ih = in[k++];
        layers[l].weight_hh = in[k++];
        layers[l].bias_ih = c->bias ? in[k++] : NULL;
        layers[l].bias_hh = c->bias ? in[k++] : NULL;
    }
    tt_tensor *h_n, *c_n = NULL, *y;
    if (c->kind == R_LSTM) {
        tt_nn_lstm m = {layers, c->in, c->H, c->L, c->bias, c->batch_first};
        y = tt_nn_lstm_forward(&m, in[0], h0, c0, &h_n, &c_n);
    } else if (c->kind == R_GRU) {
        tt_nn_gru m = {layers, c->in, c->H, c->L, c->bias, c->batch_first};
        y = tt_nn_gru_forward(&m, in[0], h0, &h_n);
    } else {
        tt_nn_rnn m = {layers, c->in, c->H, c->L, c->bias, c->batch_first,
                       c->kind == R_RELU ? TT_ACT_RELU : TT_ACT_TANH};
        y = tt_nn_rnn_forward(&m, in[0], h0, &h_n);
    }
    tt_tensor *parts[3] = {tt_flatten(y, 0, -1), tt_flatten(h_n, 0, -1), c_n ? tt_flatten(c_n, 0, -1) : NULL};
    return tt_cat(c_n ? 3 : 2, parts, 0);
}

// x is the caller's leaf (its shape decides batched / batch_first); the states are random.
static void rec_case(gc_report *r, rec_ctx c, tt_tensor *x) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_rnn rnn = {0};
    tt_nn_lstm lstm = {0};
    tt_nn_gru gru = {0};
    const tt_nn_recurrent_layer *layers;
    if (c.kind == R_LSTM) {
        tt_nn_lstm_init(&lstm, c.in, c.H, c.L, c.bias, c.batch_first, gc_rng());
        layers = lstm.layers;
    } else if (c.kind == R_GRU) {
        tt_nn_gru_init(&gru, c.in, c.H, c.L, c.bias, c.batch_first, gc_rng());
        layers = gru.layers;
    } else {
        tt_nn_rnn_init(&rnn, c.in, c.H, c.L, c.kind == R_RELU ? TT_ACT_RELU : TT_ACT_TANH, c.bias,
                       c.batch_first, gc_rng());
        layers = rnn.layers;
    }
    tt_set_default_dtype(prev);
    bool batched = x->ndim == 3;
    int64_t B = batched ? x->shape[c.batch_first ? 0 : 1] : 1;
    tt_tensor *in[3 + 4 * MAX_LAYERS];
    int n = 0;
    in[n++] = x;
    if (c.h0) in[n++] = batched ? gc_input(TT_SHAPE(c.L, B, c.H), -1, 1)
                                : gc_input(TT_SHAPE(c.L, c.H), -1, 1);
    if (c.c0) in[n++] = batched ? gc_input(TT_SHAPE(c.L, B, c.H), -1, 1)
                                : gc_input(TT_SHAPE(c.L, c.H), -1, 1);
    for (int l = 0; l < c.L; l++) {
        in[n++] = layers[l].weight_ih;
        in[n++] = layers[l].weight_hh;
        if (c.bias) {
            in[n++] = layers[l].bias_ih;
            in[n++] = layers[l].bias_hh;
        }
    }
    gc_check(r, f_recurrent, &c, n, in, NULL);
    tt_nn_lstm_free(&lstm);
    tt_nn_gru_free(&gru);
    tt_nn_rnn_free(&rnn);
}

static tt_tensor *x_seq(void) { return gc_input(TT_SHAPE(3, 2, 3), -1, 1); }       // (T, B, in)
static tt_tensor *x_bf(void) { return gc_input(TT_SHAPE(2, 3, 3), -1, 1); }        // (B, T, in)
static tt_tensor *x_unbatched(void) { return gc_input(TT_SHAPE(3, 3), -1, 1); }    // (T, in)
// (T, B, in) as the transpose of a (B, T, in) tensor.
static tt_tensor *x_transposed(void) {
    return gc_input_transposed(TT_SHAPE(2, 3, 3), 0, 1, -1, 1);
}

#define CFG(k) (rec_ctx){.kind = (k), .in = 3, .H = 4, .L = 2, .bias = true}

static void lstm_h0_c0(gc_report *r) {
    rec_ctx c = CFG(R_LSTM);
    c.h0 = c.c0 = true;
    rec_case(r, c, x_seq());
}
static void lstm_batch_first(gc_report *r) {
    rec_ctx c = CFG(R_LSTM);
    c.batch_first = true;
    rec_case(r, c, x_bf());
}
static void lstm_h0_only(gc_report *r) {  // c0 = zeros
    rec_ctx c = CFG(R_LSTM);
    c.h0 = true;
    rec_case(r, c, x_seq());
}
static void lstm_no_bias_bf_h0_c0(gc_report *r) {
    rec_ctx c = CFG(R_LSTM);
    c.bias = false;
    c.batch_first = c.h0 = c.c0 = true;
    rec_case(r, c, x_bf());
}
static void lstm_unbatched(gc_report *r) {
    rec_ctx c = CFG(R_LSTM);
    c.h0 = c.c0 = true;
    rec_case(r, c, x_unbatched());
}
static void lstm_transposed_input(gc_report *r) { rec_case(r, CFG(R_LSTM), x_transposed()); }

static void gru_h0(gc_report *r) {
    rec_ctx c = CFG(R_GRU);
    c.h0 = true;
    rec_case(r, c, x_seq());
}
static void gru_batch_first(gc_report *r) {
    rec_ctx c = CFG(R_GRU);
    c.batch_first = true;
    rec_case(r, c, x_bf());
}
static void gru_no_bias_h0_bf(gc_report *r) {
    rec_ctx c = CFG(R_GRU);
    c.bias = false;
    c.h0 = c.batch_first = true;
    rec_case(r, c, x_bf());
}
static void gru_no_bias(gc_report *r) {
    rec_ctx c = CFG(R_GRU);
    c.bias = false;
    rec_case(r, c, x_seq());
}
static void gru_unbatched(gc_report *r) { rec_case(r, CFG(R_GRU), x_unbatched()); }

static void rnn_tanh_h0(gc_report *r) {
    rec_ctx c = CFG(R_TANH);
    c.h0 = true;
    rec_case(r, c, x_seq());
}
static void rnn_tanh_batch_first(gc_report *r) {
    rec_ctx c = CFG(R_TANH);
    c.batch_first = true;
    rec_case(r, c, x_bf());
}
static void rnn_relu_h0_bf(gc_report *r) {
    rec_ctx c = CFG(R_RELU);
    c.h0 = c.batch_first = true;
    rec_case(r, c, x_bf());
}
static void rnn_relu_no_bias(gc_report *r) {
    rec_ctx c = CFG(R_RELU);
    c.bias = false;
    rec_case(r, c, x_seq());
}

const gc_module_case gc_modules_nn_recurrent[] = {
    {"lstm", "h0_c0", lstm_h0_c0},
    {"lstm", "batch_first", lstm_batch_first},
    {"lstm", "h0_only", lstm_h0_only},
    {"lstm", "no_bias_batch_first_h0_c0", lstm_no_bias_bf_h0_c0},
    {"lstm", "unbatched_h0_c0", lstm_unbatched},
    {"lstm", "transposed_input", lstm_transposed_input},
    {"gru", "h0", gru_h0},
    {"gru", "batch_first", gru_batch_first},
    {"gru", "no_bias_batch_first_h0", gru_no_bias_h0_bf},
    {"gru", "no_bias", gru_no_bias},
    {"gru", "unbatched", gru_unbatched},
    {"rnn_tanh", "h0", rnn_tanh_h0},
    {"rnn_tanh", "batch_first", rnn_tanh_batch_first},
    {"rnn_relu", "h0_batch_first", rnn_relu_h0_bf},
    {"rnn_relu", "no_bias", rnn_relu_no_bias},
    {0},
};
