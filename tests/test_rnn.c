// Check suite of the recurrent layers of nn/recurrent.c: parity with torch.nn.RNN / LSTM / GRU
// given the same weights (tests/reference/rnn_reference.h, printed by
// tests/reference/gen_rnn_reference.py): output, h_n, c_n and the gradients of a weighted sum
// of them with respect to the input, h0, c0 and every parameter, in f64 (1e-10) and f32 (1e-5);
// PyTorch's parameter names and shapes, the init range, and the abort paths.
// Finite-difference gradients are in tests/gc_nn_recurrent.c.
#include <math.h>
#include <signal.h>
#include <string.h>

#include "test_util.h"

typedef struct rnn_ref {
    const char *name;
    const char *mode;  // "RNN_TANH", "RNN_RELU", "LSTM", "GRU"
    int T, B, in, H, L;
    bool bias, batch_first, unbatched;
    const char *param_names;  // space-separated, state_dict order
    const double *params, *x, *h0, *c0, *r_out, *r_h, *r_c, *out, *h_n, *c_n, *dx, *dh0, *dc0,
        *dparams;  // NULL when the case has none
} rnn_ref;

#include "reference/rnn_reference.h"

#define NREFS (int)(sizeof rnn_refs / sizeof rnn_refs[0])

// Any of the three modules, by PyTorch's mode name.
typedef struct any_rnn {
    const char *mode;
    tt_nn_rnn rnn;
    tt_nn_lstm lstm;
    tt_nn_gru gru;
} any_rnn;

static void any_init(any_rnn *m, const char *mode, int64_t in, int64_t H, int L, bool bias,
                     bool batch_first, tt_rng *rng) {
    memset(m, 0, sizeof *m);
    m->mode = mode;
    if (!strcmp(mode, "LSTM")) tt_nn_lstm_init(&m->lstm, in, H, L, bias, batch_first, rng);
    else if (!strcmp(mode, "GRU")) tt_nn_gru_init(&m->gru, in, H, L, bias, batch_first, rng);
    else
        tt_nn_rnn_init(&m->rnn, in, H, L, !strcmp(mode, "RNN_RELU") ? TT_ACT_RELU : TT_ACT_TANH,
                       bias, batch_first, rng);
}

static tt_tensor *any_forward(any_rnn *m, tt_tensor *x, tt_tensor *h0, tt_tensor *c0,
                              tt_tensor **h_n, tt_tensor **c_n) {
    if (!strcmp(m->mode, "LSTM")) return tt_nn_lstm_forward(&m->lstm, x, h0, c0, h_n, c_n);
    if (!strcmp(m->mode, "GRU")) return tt_nn_gru_forward(&m->gru, x, h0, h_n);
    return tt_nn_rnn_forward(&m->rnn, x, h0, h_n);
}

static void any_params(const any_rnn *m, tt_params *p) {
    if (!strcmp(m->mode, "LSTM")) tt_nn_lstm_params(&m->lstm, p, NULL);
    else if (!strcmp(m->mode, "GRU")) tt_nn_gru_params(&m->gru, p, NULL);
    else tt_nn_rnn_params(&m->rnn, p, NULL);
}

static void any_free(any_rnn *m) {
    tt_nn_lstm_free(&m->lstm);
    tt_nn_gru_free(&m->gru);
    tt_nn_rnn_free(&m->rnn);
}

// A tensor of dtype dt from n f64 values (a leaf requiring grad when grad).
static tt_tensor *from_ref(tt_dtype dt, int ndim, const int64_t *shape, const double *v,
                           bool grad) {
    tt_tensor *t = tt_to_dtype(tt_from_data(TT_F64, ndim, shape, v), dt);
    return tt_set_requires_grad(t, grad);
}

static const tt_dtype dtypes[2] = {TT_F64, TT_F32};
#define TOL(dt) ((dt) == TT_F64 ? 1e-10 : 1e-5)

// ---- parity with PyTorch: _i = 2 * case + dtype ----

START_TEST(test_parity) {
    const rnn_ref *r = &rnn_refs[_i / 2];
    tt_dtype dt = dtypes[_i % 2];
    double tol = TOL(dt);
    bool lstm = !strcmp(r->mode, "LSTM");
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_dtype prev = tt_set_default_dtype(dt);
    any_rnn m;
    any_init(&m, r->mode, r->in, r->H, r->L, r->bias, r->batch_first, &rng);
    tt_set_default_dtype(prev);
    tt_params params;
    tt_params_init(&params);
    any_params(&m, &params);

    // The names, in order, are PyTorch's; load PyTorch's values into them.
    char names[1024] = "";
    int64_t off = 0;
    tt_scope_begin();
    for (int i = 0; i < params.n; i++) {
        if (i) strcat(names, " ");
        strcat(names, params.items[i].name);
        tt_tensor *p = params.items[i].tensor;
        tt_copy_(p, tt_from_data(TT_F64, p->ndim, p->shape, r->params + off));
        off += tt_numel(p);
    }
    ck_assert_str_eq(names, r->param_names);

    int64_t xs[3], ss[3];
    int xn = r->unbatched ? 2 : 3, sn = r->unbatched ? 2 : 3;
    if (r->unbatched) {
        memcpy(xs, (int64_t[]){r->T, r->in}, 2 * sizeof(int64_t));
        memcpy(ss, (int64_t[]){r->L, r->H}, 2 * sizeof(int64_t));
    } else {
        if (r->batch_first) memcpy(xs, (int64_t[]){r->B, r->T, r->in}, 3 * sizeof(int64_t));
        else memcpy(xs, (int64_t[]){r->T, r->B, r->in}, 3 * sizeof(int64_t));
        memcpy(ss, (int64_t[]){r->L, r->B, r->H}, 3 * sizeof(int64_t));
    }
    tt_tensor *x = from_ref(dt, xn, xs, r->x, true);
    tt_tensor *h0 = r->h0 ? from_ref(dt, sn, ss, r->h0, true) : NULL;
    tt_tensor *c0 = r->c0 ? from_ref(dt, sn, ss, r->c0, true) : NULL;
    tt_tensor *h_n = NULL, *c_n = NULL;
    tt_tensor *y = any_forward(&m, x, h0, c0, &h_n, lstm ? &c_n : NULL);

    // Shapes: y is x's with H for in; h_n and c_n are the states' shape.
    ck_assert_int_eq(y->ndim, xn);
    for (int d = 0; d < xn - 1; d++) ck_assert_int_eq(y->shape[d], xs[d]);
    ck_assert_int_eq(y->shape[xn - 1], r->H);
    ck_assert(tt_is_contiguous(y));
    ck_assert_int_eq(h_n->ndim, sn);
    for (int d = 0; d < sn; d++) ck_assert_int_eq(h_n->shape[d], ss[d]);
    tt_assert_values(y, r->out, tt_numel(y), tol, tol, __FILE__, __LINE__);
    tt_assert_values(h_n, r->h_n, tt_numel(h_n), tol, tol, __FILE__, __LINE__);
    if (lstm) tt_assert_values(c_n, r->c_n, tt_numel(c_n), tol, tol, __FILE__, __LINE__);

    tt_tensor *loss = tt_add(tt_sum_all(tt_mul(y, from_ref(dt, y->ndim, y->shape, r->r_out,
                                                           false))),
                             tt_sum_all(tt_mul(h_n, from_ref(dt, sn, ss, r->r_h, false))));
    if (lstm) loss = tt_add(loss, tt_sum_all(tt_mul(c_n, from_ref(dt, sn, ss, r->r_c, false))));
    tt_backward(loss);
    tt_assert_values(tt_grad(x), r->dx, tt_numel(x), tol, tol, __FILE__, __LINE__);
    if (h0) tt_assert_values(tt_grad(h0), r->dh0, tt_numel(h0), tol, tol, __FILE__, __LINE__);
    if (c0) tt_assert_values(tt_grad(c0), r->dc0, tt_numel(c0), tol, tol, __FILE__, __LINE__);
    off = 0;
    for (int i = 0; i < params.n; i++) {
        tt_tensor *p = params.items[i].tensor;
        tt_assert_values(tt_grad(p), r->dparams + off, tt_numel(p), tol, tol, __FILE__,
                         __LINE__);
        off += tt_numel(p);
    }
    tt_scope_end();
    tt_params_free(&params);
    any_free(&m);
}
END_TEST

// ---- parameters: PyTorch's names, shapes and init range U(-1/sqrt(H), 1/sqrt(H)) ----

START_TEST(test_params_init) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_lstm m;
    tt_nn_lstm_init(&m, 5, 16, 3, true, false, &rng);
    tt_params p;
    tt_params_init(&p);
    tt_nn_lstm_params(&m, &p, "enc");
    ck_assert_int_eq(p.n, 12);
    ck_assert_str_eq(p.items[0].name, "enc.weight_ih_l0");
    ck_assert_str_eq(p.items[11].name, "enc.bias_hh_l2");
    tt_tensor *w0 = tt_params_get(&p, "enc.weight_ih_l0"), *w1 = tt_params_get(&p,
                                                                             "enc.weight_ih_l1");
    ck_assert_int_eq(w0->shape[0], 64);
    ck_assert_int_eq(w0->shape[1], 5);
    ck_assert_int_eq(w1->shape[1], 16);
    ck_assert_int_eq(tt_params_numel(&p), 4 * 16 * (5 + 16 + 2) + 2 * 4 * 16 * (16 + 16 + 2));
    double lo = 1, hi = -1;
    for (int i = 0; i < p.n; i++) {
        ck_assert(p.items[i].tensor->requires_grad);
        ck_assert_int_eq(p.items[i].tensor->dtype, TT_F32);
        for (int64_t j = 0; j < tt_numel(p.items[i].tensor); j++) {
            double v = tt_at(p.items[i].tensor, j);
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
    }
    ck_assert(lo >= -0.25 && hi <= 0.25 && lo < -0.24 && hi > 0.24);  // k = 1/sqrt(16)
    tt_params_free(&p);
    tt_nn_lstm_free(&m);
    tt_nn_lstm_free(&m);  // safe on a zeroed struct

    tt_nn_gru g;
    tt_nn_gru_init(&g, 3, 4, 1, false, false, &rng);
    tt_params_init(&p);
    tt_nn_gru_params(&g, &p, NULL);
    ck_assert_int_eq(p.n, 2);
    ck_assert_str_eq(p.items[1].name, "weight_hh_l0");
    ck_assert_int_eq(p.items[1].tensor->shape[0], 12);
    tt_params_free(&p);
    tt_nn_gru_free(&g);
}
END_TEST

// h_n / c_n may be NULL; the output is the same. An h0 of zeros equals no h0.
START_TEST(test_optional_states) {
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_lstm m;
    tt_nn_lstm_init(&m, 3, 4, 2, true, true, &rng);
    tt_nn_gru g;
    tt_nn_gru_init(&g, 3, 4, 2, true, true, &rng);
    tt_set_default_dtype(prev);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(2, 5, 3));
    tt_tensor *zeros = tt_zeros(TT_F64, TT_SHAPE(2, 2, 4));
    tt_tensor *h_n, *c_n;
    tt_tensor *a = tt_nn_lstm_forward(&m, x, NULL, NULL, NULL, NULL);
    tt_tensor *b = tt_nn_lstm_forward(&m, x, zeros, zeros, &h_n, &c_n);
    ck_assert_double_le(tt_item(tt_max(tt_abs(tt_sub(a, b)), 0, NULL, false)), 1e-15);
    // h_n[-1] is the output's last step.
    tt_tensor *last = tt_squeeze(tt_narrow(a, 1, 4, 1), 1);
    ck_assert_double_le(tt_item(tt_max(tt_abs(tt_sub(last, tt_squeeze(tt_narrow(h_n, 0, 1, 1),
                                                                       0))), 0, NULL, false)),
                        1e-15);
    tt_tensor *ga = tt_nn_gru_forward(&g, x, NULL, NULL);
    tt_tensor *gb = tt_nn_gru_forward(&g, x, zeros, NULL);
    ck_assert_double_le(tt_item(tt_max(tt_abs(tt_sub(ga, gb)), 0, NULL, false)), 1e-15);
    tt_scope_end();
    tt_nn_lstm_free(&m);
    tt_nn_gru_free(&g);
}
END_TEST

// Outside any scope the results are the caller's references; nothing else is left alive.
START_TEST(test_no_scope_ownership) {
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_nn_rnn m;
    tt_nn_rnn_init(&m, 2, 3, 2, TT_ACT_RELU, true, false, &rng);
    int64_t before = tt_live_tensors();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(4, 1, 2));
    tt_tensor *h_n;
    tt_tensor *y = tt_nn_rnn_forward(&m, x, NULL, &h_n);
    ck_assert_int_eq(y->shape[2], 3);
    ck_assert(y->requires_grad);
    tt_release(y);
    tt_release(h_n);
    tt_release(x);
    ck_assert_int_eq(tt_live_tensors(), before);
    tt_nn_rnn_free(&m);
}
END_TEST

// A tiny LSTM + Linear in tt_nn_sequential learns to output the previous step's input (a one-step
// memory) with AdamW: the loss must fall from ~1 to under 0.02.
START_TEST(test_lstm_learns_delay) {
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_nn_lstm lstm;
    tt_nn_lstm_init(&lstm, 1, 16, 1, true, true, &rng);
    tt_nn_linear head;
    tt_nn_linear_init(&head, 16, 1, true, &rng);
    tt_nn_sequential net;
    tt_nn_sequential_init(&net);
    tt_nn_sequential_add(&net, tt_nn_lstm_module(&lstm));
    tt_nn_sequential_add(&net, tt_nn_linear_module(&head));
    tt_params params;
    tt_params_init(&params);
    tt_nn_sequential_params(&net, &params, NULL);
    ck_assert_str_eq(params.items[0].name, "0.weight_ih_l0");
    ck_assert_str_eq(params.items[4].name, "1.weight");
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(2e-2));
    tt_optim_add_decay_groups(&opt, &params, 0.0);
    enum { B = 16, T = 8 };
    double first = 0, last = 0;
    for (int it = 0; it < 300; it++) {
        tt_scope_begin();
        tt_tensor *x = tt_rsub_scalar(1.0, tt_mul_scalar(tt_bernoulli(&rng, tt_full(TT_F32,
                                                          TT_SHAPE(B, T, 1), 0.5)), 2.0));
        // target: 0 at t = 0, then x[t - 1]
        tt_tensor *prev = tt_narrow(x, 1, 0, T - 1);
        tt_tensor *y = tt_pad(prev, 4, (const int64_t[]){0, 0, 1, 0}, TT_PAD_CONSTANT, 0.0);
        tt_tensor *loss = tt_mse_loss(tt_nn_sequential_forward(&net, x), y);
        if (it == 0) first = tt_item(loss);
        last = tt_item(loss);
        tt_backward(loss);
        tt_optim_step(&opt);
        tt_optim_zero_grad(&opt);
        tt_scope_end();
    }
    ck_assert_double_gt(first, 0.5);
    ck_assert_double_lt(last, 0.02);
    tt_optim_free(&opt);
    tt_params_free(&params);
    tt_nn_sequential_free(&net);
    tt_nn_linear_free(&head);
    tt_nn_lstm_free(&lstm);
}
END_TEST

// ---- aborts ----

static tt_nn_lstm abort_lstm(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_nn_lstm m;
    tt_nn_lstm_init(&m, 3, 4, 2, true, false, &rng);
    return m;
}

START_TEST(test_abort_rank) {
    tt_expect_abort("tt_nn_lstm_forward: input (1, 2, 3, 3) must be (T, B, input_size=3)");
    tt_nn_lstm m = abort_lstm();
    tt_nn_lstm_forward(&m, tt_zeros(TT_F32, TT_SHAPE(1, 2, 3, 3)), NULL, NULL, NULL, NULL);
}
END_TEST

START_TEST(test_abort_input_size) {
    tt_expect_abort("tt_nn_gru_forward: input (2, 5, 4) must be (T, B, input_size=3), (B, T, "
                    "input_size) with batch_first");
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_nn_gru m;
    tt_nn_gru_init(&m, 3, 4, 1, true, true, &rng);
    tt_nn_gru_forward(&m, tt_zeros(TT_F32, TT_SHAPE(2, 5, 4)), NULL, NULL);
}
END_TEST

START_TEST(test_abort_h0_shape) {
    tt_expect_abort("h0 (2, 3, 4) must be (num_layers, batch, hidden_size) = (2, 2, 4)");
    tt_nn_lstm m = abort_lstm();
    tt_nn_lstm_forward(&m, tt_zeros(TT_F32, TT_SHAPE(5, 2, 3)), tt_zeros(TT_F32, TT_SHAPE(2, 3, 4)),
                       NULL, NULL, NULL);
}
END_TEST

START_TEST(test_abort_c0_shape) {
    tt_expect_abort("c0 (2, 4) must be (num_layers, batch, hidden_size) = (2, 2, 4)");
    tt_nn_lstm m = abort_lstm();
    tt_nn_lstm_forward(&m, tt_zeros(TT_F32, TT_SHAPE(5, 2, 3)), NULL,
                       tt_zeros(TT_F32, TT_SHAPE(2, 4)), NULL, NULL);
}
END_TEST

START_TEST(test_abort_dtype) {
    tt_expect_abort("input has dtype f64 but the parameters are f32");
    tt_nn_lstm m = abort_lstm();
    tt_nn_lstm_forward(&m, tt_zeros(TT_F64, TT_SHAPE(5, 2, 3)), NULL, NULL, NULL, NULL);
}
END_TEST

START_TEST(test_abort_empty) {
    tt_expect_abort("has an empty time or batch dim");
    tt_nn_lstm m = abort_lstm();
    tt_nn_lstm_forward(&m, tt_zeros(TT_F32, TT_SHAPE(0, 2, 3)), NULL, NULL, NULL, NULL);
}
END_TEST

START_TEST(test_abort_nonlinearity) {
    tt_expect_abort("tt_nn_rnn_init: nonlinearity must be TT_ACT_TANH or TT_ACT_RELU");
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_nn_rnn m;
    tt_nn_rnn_init(&m, 3, 4, 1, TT_ACT_GELU, true, false, &rng);
}
END_TEST

START_TEST(test_abort_layers) {
    tt_expect_abort("tt_nn_gru_init: need input_size > 0, hidden_size > 0 and num_layers >= 1, got "
                    "input_size=3 hidden_size=4 num_layers=0");
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_nn_gru m;
    tt_nn_gru_init(&m, 3, 4, 0, true, false, &rng);
}
END_TEST

START_TEST(test_abort_uninitialized) {
    tt_expect_abort("tt_nn_gru_forward: the module is not initialized");
    tt_nn_gru m;
    memset(&m, 0, sizeof m);
    tt_nn_gru_forward(&m, tt_zeros(TT_F32, TT_SHAPE(1, 1, 1)), NULL, NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("rnn");
    TCase *tc = tt_tcase("parity");
    tcase_add_loop_test(tc, test_parity, 0, 2 * NREFS);
    suite_add_tcase(s, tc);
    TCase *mc = tt_tcase("module");
    tcase_add_test(mc, test_params_init);
    tcase_add_test(mc, test_optional_states);
    tcase_add_test(mc, test_no_scope_ownership);
    tcase_add_test(mc, test_lstm_learns_delay);
    suite_add_tcase(s, mc);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_rank, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_input_size, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_h0_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_c0_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_nonlinearity, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_layers, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_uninitialized, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
