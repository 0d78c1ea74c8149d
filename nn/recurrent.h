// tinytorch.c nn: the recurrent layers RNN, LSTM and GRU (nn/recurrent.c).
#ifndef TT_NN_RECURRENT_H
#define TT_NN_RECURRENT_H

#include "layers.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- recurrent layers (nn/recurrent.c) ----
// torch.nn.RNN / LSTM / GRU: multi-layer, unidirectional, no dropout between layers, no
// proj_size. x is (T, B, in), or (B, T, in) when batch_first, or unbatched (T, in); the output
// is (T, B, H) / (B, T, H) / (T, H): the last layer's h at every step (contiguous). h0 and c0
// are (L, B, H) ((L, H) for an unbatched x) or NULL for zeros; h_n / c_n, when not NULL,
// receive the final states of every layer in that shape (new references, like the output).
// PyTorch's equations and gate order (G gates: RNN 1, LSTM 4 = i f g o, GRU 3 = r z n):
//   RNN   h' = act(W_ih x + b_ih + W_hh h + b_hh), act tanh or relu
//   LSTM  i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of W_ih x + b_ih + W_hh h + b_hh;
//         c' = f * c + i * g; h' = o * tanh(c')
//   GRU   r, z = sigmoid(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z});
//         n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); h' = (1 - z) * n + z * h
// Every weight and bias starts U(-k, k), k = 1/sqrt(H), and is named as in PyTorch's
// state_dict: weight_ih_l0 (G*H, in), weight_hh_l0 (G*H, H), bias_ih_l0, bias_hh_l0 (G*H,),
// then _l1 ... (whose weight_ih is (G*H, H)). A composition of affine, sigmoid, tanh, mul, add
// and stack: the gradients come from those ops.
//
//     tt_nn_lstm lstm;
//     tt_nn_lstm_init(&lstm, 3, 16, 2, true, true, &rng);  // in 3, hidden 16, 2 layers, bias,
//     tt_tensor *h_n, *c_n;                              // batch_first
//     tt_tensor *y = tt_nn_lstm_forward(&lstm, x, NULL, NULL, &h_n, &c_n);  // (B, T, 16)

typedef struct tt_nn_recurrent_layer {
    tt_tensor *weight_ih;           // (G*H, in) in layer 0, (G*H, H) above
    tt_tensor *weight_hh;           // (G*H, H)
    tt_tensor *bias_ih, *bias_hh;   // (G*H,) each, or NULL without bias
} tt_nn_recurrent_layer;

typedef struct tt_nn_rnn {
    tt_nn_recurrent_layer *layers;  // num_layers entries (owned)
    int64_t input_size, hidden_size;
    int num_layers;
    bool bias, batch_first;
    tt_act nonlinearity;         // TT_ACT_TANH or TT_ACT_RELU
} tt_nn_rnn;

void tt_nn_rnn_init(tt_nn_rnn *m, int64_t input_size, int64_t hidden_size, int num_layers,
                    tt_act nonlinearity, bool bias, bool batch_first, tt_rng *rng);
tt_tensor *tt_nn_rnn_forward(tt_nn_rnn *m, tt_tensor *x, tt_tensor *h0, tt_tensor **h_n);
void tt_nn_rnn_params(const tt_nn_rnn *m, tt_params *out, const char *prefix);
void tt_nn_rnn_free(tt_nn_rnn *m);
tt_module tt_nn_rnn_module(tt_nn_rnn *m);  // for tt_nn_sequential: the output sequence, zero h0

typedef struct tt_nn_lstm {
    tt_nn_recurrent_layer *layers;  // num_layers entries (owned)
    int64_t input_size, hidden_size;
    int num_layers;
    bool bias, batch_first;
} tt_nn_lstm;

void tt_nn_lstm_init(tt_nn_lstm *m, int64_t input_size, int64_t hidden_size, int num_layers,
                     bool bias, bool batch_first, tt_rng *rng);
tt_tensor *tt_nn_lstm_forward(tt_nn_lstm *m, tt_tensor *x, tt_tensor *h0, tt_tensor *c0,
                              tt_tensor **h_n, tt_tensor **c_n);
void tt_nn_lstm_params(const tt_nn_lstm *m, tt_params *out, const char *prefix);
void tt_nn_lstm_free(tt_nn_lstm *m);
// For tt_nn_sequential: the output sequence, zero h0, c0.
tt_module tt_nn_lstm_module(tt_nn_lstm *m);

typedef struct tt_nn_gru {
    tt_nn_recurrent_layer *layers;  // num_layers entries (owned)
    int64_t input_size, hidden_size;
    int num_layers;
    bool bias, batch_first;
} tt_nn_gru;

void tt_nn_gru_init(tt_nn_gru *m, int64_t input_size, int64_t hidden_size, int num_layers,
                    bool bias, bool batch_first, tt_rng *rng);
tt_tensor *tt_nn_gru_forward(tt_nn_gru *m, tt_tensor *x, tt_tensor *h0, tt_tensor **h_n);
void tt_nn_gru_params(const tt_nn_gru *m, tt_params *out, const char *prefix);
void tt_nn_gru_free(tt_nn_gru *m);
tt_module tt_nn_gru_module(tt_nn_gru *m);  // for tt_nn_sequential: the output sequence, zero h0

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_RECURRENT_H
