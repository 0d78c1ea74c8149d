// Check suite of module ownership and the custom module (nn/custom.c, the tt_<name>_new
// constructors, tt_nn_sequential_new) and of what takes a module tree whole: tt_optim_add_module /
// tt_optim_new, tt_module_eval_begin/end, tt_module_numel, tt_safetensors_save_module /
// load_module, tt_dataloader_opts.own_dataset, tt_rng_new. Every test ends with the fixture's
// check that no tensor and no byte is left live, so one free per tree is proved to suffice.
#include <signal.h>

#include "test_util.h"

// The names of p, space-separated, into buf.
static const char *names(const tt_params *p, char *buf, size_t cap) {
    buf[0] = 0;
    for (int i = 0; i < p->n; i++) {
        if (i) strncat(buf, " ", cap - strlen(buf) - 1);
        strncat(buf, p->items[i].name, cap - strlen(buf) - 1);
    }
    return buf;
}

// The parameter names of m under prefix NULL.
static const char *param_names(tt_module m, char *buf, size_t cap) {
    tt_params p;
    tt_params_init(&p);
    tt_module_params(m, &p, NULL);
    names(&p, buf, cap);
    tt_params_free(&p);
    return buf;
}

static void set_values(tt_tensor *t, const double *v) {
    for (int64_t i = 0; i < tt_numel(t); i++) tt_set_at(t, i, v[i]);
}

START_TEST(test_sequential_new_owns) {
    tt_rng rng = tt_rng_new(1);
    tt_module fc1 = tt_nn_linear_new(2, 3, true, &rng), fc2 = tt_nn_linear_new(3, 1, false, &rng);
    ck_assert(fc1.ops->owned && fc2.ops->owned);
    tt_module model = tt_nn_sequential_new(3, (tt_module[]){fc1, tt_act_module(TT_ACT_RELU), fc2});
    ck_assert(model.ops->owned);
    char buf[256];
    ck_assert_str_eq(param_names(model, buf, sizeof buf), "0.weight 0.bias 2.weight");
    ck_assert_int_eq(tt_module_numel(model), 2 * 3 + 3 + 3);
    tt_nn_linear *l1 = fc1.self, *l2 = fc2.self;
    set_values(l1->weight, (double[]){1, 0, 0, 1, 1, -1});
    set_values(l1->bias, (double[]){0, 0, 0.5});
    set_values(l2->weight, (double[]){1, 2, 3});
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(2, 2), 1, 2, 3, 1);
    // h = relu([1, 2, -0.5], [3, 1, 2.5]) = [1, 2, 0], [3, 1, 2.5]; y = h . [1, 2, 3]
    ck_assert_values(tt_module_forward(model, x), 1e-6, 0, 5, 12.5);
    tt_scope_end();
    tt_module_free(model);  // the sequential, both Linears and their tensors
}
END_TEST

START_TEST(test_owned_linear_is_a_linear) {
    tt_rng rng = tt_rng_new(8);
    tt_module fc = tt_nn_linear_new(4, 2, true, &rng);
    tt_module model = tt_nn_sequential_new(1, &fc);
    ck_assert_ptr_eq(tt_module_as_linear(fc), fc.self);
    ck_assert_int_eq(tt_quantize_dynamic(model), 1);  // compress finds it in the tree
    ck_assert_ptr_nonnull(tt_nn_linear_quantized(fc.self));
    tt_dequantize_model(model);
    ck_assert_ptr_null(tt_nn_linear_quantized(fc.self));
    tt_module_free(model);
}
END_TEST

START_TEST(test_sequential_add_owned_and_borrowed) {
    tt_rng rng = tt_rng_new(2);
    tt_nn_linear mine;  // the caller's: borrowed by the sequential
    tt_nn_linear_init(&mine, 4, 4, true, &rng);
    tt_nn_sequential s;
    tt_nn_sequential_init(&s);
    tt_nn_sequential_add(&s, tt_nn_linear_module(&mine));
    tt_nn_sequential_add(&s, tt_nn_layernorm_new(4, 1e-5, true, true));
    int64_t live = tt_live_tensors();
    tt_nn_sequential_free(&s);  // frees the LayerNorm (2 tensors), not the borrowed Linear
    ck_assert_int_eq(tt_live_tensors(), live - 2);
    ck_assert_ptr_nonnull(mine.weight);
    ck_assert_int_eq(tt_numel(mine.weight), 16);
    tt_nn_linear_free(&mine);
}
END_TEST

START_TEST(test_new_constructors) {
    tt_rng rng = tt_rng_new(3);
    tt_nn_block_config bc = {.attn = {.n_embd = 8, .n_head = 2, .max_seq = 4, .bias = true},
                             .mlp_hidden = 16, .act = TT_ACT_GELU};
    tt_module ms[] = {
        tt_nn_embedding_new(5, 3, &rng), tt_nn_layernorm_new(3, 1e-5, true, false),
        tt_nn_batchnorm1d_new(3, NULL),
        tt_nn_conv2d_new(1, 2, 3, 3, &(tt_nn_conv2d_opts){.stride = {3, 3}}, true, &rng),
        tt_nn_block_new(&bc, &rng)};
    const char *types[] = {"Embedding", "LayerNorm", "BatchNorm1d", "Conv2d", "Block"};
    // block: 2 norms (2 * 16) + 4 projections (4 * 72) + fc (8 * 16 + 16) + proj (16 * 8 + 8)
    const int64_t numel[] = {15, 3, 6, 2 * 9 + 2, 32 + 288 + 144 + 136};
    for (int i = 0; i < 5; i++) {
        ck_assert(ms[i].ops->owned);
        ck_assert_str_eq(ms[i].ops->type, types[i]);
        ck_assert_int_eq(tt_module_numel(ms[i]), numel[i]);
        tt_module_free(ms[i]);
    }
}
END_TEST

// A custom module: y = fc2(relu(fc1(x))) * scale + the running buffer (a constant here).
typedef struct net {
    tt_custom base;
    tt_module fc1, fc2;
    tt_tensor *scale, *shift;
    int calls;
} net;

static tt_tensor *net_forward(void *self, tt_tensor *x) {
    net *n = self;
    n->calls++;
    tt_tensor *h = tt_relu(tt_module_forward(n->fc1, x));
    return tt_add(tt_mul(tt_module_forward(n->fc2, h), n->scale), n->shift);
}

static tt_module net_init(net *n, tt_rng *rng) {
    tt_custom_init(&n->base, n, net_forward);
    n->calls = 0;
    n->fc1 = tt_custom_add_module(&n->base, "fc1", tt_nn_linear_new(2, 2, false, rng));
    n->scale = tt_custom_add_param(&n->base, "scale", tt_ones(TT_F32, TT_SHAPE(1)));
    n->shift = tt_custom_add_buffer(&n->base, "shift", tt_ones(TT_F32, TT_SHAPE(1)));
    n->fc2 = tt_custom_add_module(&n->base, "fc2", tt_nn_linear_new(2, 1, true, rng));
    return tt_custom_module(&n->base);
}

START_TEST(test_custom_module) {
    tt_rng rng = tt_rng_new(4);
    net n;
    tt_module m = net_init(&n, &rng);
    char buf[256];
    // its own parameters first, then each child's (PyTorch's named_parameters order)
    ck_assert_str_eq(param_names(m, buf, sizeof buf), "scale fc1.weight fc2.weight fc2.bias");
    tt_params state;
    tt_params_init(&state);
    tt_module_state(m, &state, NULL);
    ck_assert_str_eq(names(&state, buf, sizeof buf),
                     "scale shift fc1.weight fc2.weight fc2.bias");
    tt_params_free(&state);
    ck_assert(n.scale->requires_grad && !n.shift->requires_grad);
    set_values(((tt_nn_linear *)n.fc1.self)->weight, (double[]){1, 0, 0, -1});
    set_values(((tt_nn_linear *)n.fc2.self)->weight, (double[]){2, 3});
    set_values(((tt_nn_linear *)n.fc2.self)->bias, (double[]){0.5});
    tt_fill_(n.scale, 2);
    // Outside any scope and without grad (no graph holding them), the forward's
    // intermediates are freed on return: only y is left.
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(1, 2), 3, -4);
    int64_t live = tt_live_tensors();
    tt_no_grad_begin();
    tt_tensor *y = tt_module_forward(m, x);
    tt_no_grad_end();
    ck_assert_int_eq(tt_live_tensors(), live + 1);
    tt_release(y);
    y = tt_module_forward(m, x);
    ck_assert_values(y, 1e-6, 0, (2 * 3 + 3 * 4 + 0.5) * 2 + 1);  // relu([3, 4]) . [2, 3]
    tt_backward(y);
    ck_assert_values(n.scale->grad, 1e-6, 0, 18.5);
    ck_assert_int_eq(n.calls, 2);
    tt_release(y);
    tt_release(x);
    tt_module_train(m, false);
    ck_assert(!n.base.training);
    tt_module_train(m, true);
    ck_assert(n.base.training);
    tt_custom_free(&n.base);  // both Linears, scale and shift
    ck_assert_int_eq(n.base.n, 0);
    tt_custom_free(&n.base);  // safe twice (a zeroed struct)
}
END_TEST

START_TEST(test_custom_nested_and_borrowed) {
    tt_rng rng = tt_rng_new(5);
    tt_nn_linear shared;  // borrowed by the custom module: the caller frees it
    tt_nn_linear_init(&shared, 3, 3, false, &rng);
    net inner;
    tt_custom outer;
    tt_custom_init(&outer, NULL, net_forward);
    tt_custom_add_module(&outer, "inner", net_init(&inner, &rng));
    tt_custom_add_module(&outer, "blocks", tt_nn_sequential_new(1, (tt_module[]){
        tt_nn_linear_module(&shared)}));
    char buf[256];
    ck_assert_str_eq(param_names(tt_custom_module(&outer), buf, sizeof buf),
                     "inner.scale inner.fc1.weight inner.fc2.weight inner.fc2.bias "
                     "blocks.0.weight");
    tt_custom_free(&outer);  // the sequential it owns; inner and shared are borrowed
    ck_assert_ptr_nonnull(shared.weight);
    tt_custom_free(&inner.base);
    tt_nn_linear_free(&shared);
}
END_TEST

START_TEST(test_optim_add_module) {
    tt_rng rng = tt_rng_new(6);
    net n;
    tt_module m = net_init(&n, &rng);
    tt_optim opt = tt_optim_new(tt_sgd_config(0.5), m, 0.1);
    ck_assert_int_eq(opt.ngroups, 2);  // nanoGPT's split: matrices decay, the rest not
    char buf[256];
    ck_assert_str_eq(names(&opt.groups[0].params, buf, sizeof buf), "fc1.weight fc2.weight");
    ck_assert_str_eq(names(&opt.groups[1].params, buf, sizeof buf), "scale fc2.bias");
    ck_assert_close(opt.groups[0].weight_decay, 0.1, 0, 0);
    ck_assert_close(opt.groups[1].weight_decay, 0.0, 0, 0);
    // one SGD step on scale: grad g, p -= lr * g (no decay in its group)
    tt_tensor *bias = ((tt_nn_linear *)n.fc2.self)->bias;
    tt_fill_(bias, 0.25);
    tt_scope_begin();
    tt_backward(tt_sum_all(tt_module_forward(m, tt_zeros(TT_F32, TT_SHAPE(3, 2)))));
    tt_optim_step(&opt);
    tt_optim_zero_grad(&opt);
    tt_scope_end();
    // y = (fc2(0) = 0.25) * scale + 1 per row: d/dscale = 3 * 0.25, d/dbias = 3 * scale
    ck_assert_values(n.scale, 1e-6, 0, 1 - 0.5 * 0.75);
    ck_assert_values(bias, 1e-6, 0, 0.25 - 0.5 * 3);
    tt_optim_free(&opt);
    tt_custom_free(&n.base);
}
END_TEST

START_TEST(test_eval_begin_end) {
    tt_module bn = tt_nn_batchnorm1d_new(2, NULL);
    tt_module model = tt_nn_sequential_new(1, &bn);
    int depth = tt_scope_depth();
    tt_module_eval_begin(model);
    ck_assert(!((tt_nn_batchnorm *)bn.self)->training);
    ck_assert(!tt_is_grad_enabled());
    ck_assert_int_eq(tt_scope_depth(), depth + 1);
    // on the running statistics (0, 1): y = x / sqrt(1 + eps)
    tt_tensor *y = tt_module_forward(model, tt_test_tensor(TT_F32, TT_SHAPE(1, 2), 2, -4));
    ck_assert_values(y, 1e-4, 0, 2, -4);
    tt_module_eval_end(model);  // frees y and x
    ck_assert(((tt_nn_batchnorm *)bn.self)->training);
    ck_assert(tt_is_grad_enabled());
    ck_assert_int_eq(tt_scope_depth(), depth);
    tt_module_free(model);
}
END_TEST

START_TEST(test_safetensors_module_roundtrip) {
    char dir[128], path[192];
    tt_test_mkdtemp(dir, sizeof dir, "owned");
    snprintf(path, sizeof path, "%s/net.safetensors", dir);
    tt_rng rng = tt_rng_new(7);
    net a, b;
    tt_module ma = net_init(&a, &rng), mb = net_init(&b, &rng);
    tt_fill_(a.shift, 3);  // a buffer travels too
    ck_assert(!tt_test_same_values(((tt_nn_linear *)a.fc1.self)->weight,
                                   ((tt_nn_linear *)b.fc1.self)->weight));
    ck_assert_int_eq(tt_safetensors_save_module(path, ma), TT_OK);
    ck_assert_int_eq(tt_safetensors_load_module(path, mb), TT_OK);
    ck_assert(tt_test_same_values(((tt_nn_linear *)a.fc1.self)->weight,
                                  ((tt_nn_linear *)b.fc1.self)->weight));
    ck_assert(tt_test_same_values(((tt_nn_linear *)a.fc2.self)->bias,
                                  ((tt_nn_linear *)b.fc2.self)->bias));
    ck_assert_values(b.shift, 0, 0, 3);
    // strict: a model with other names is refused, naming the keys
    tt_module other = tt_nn_sequential_new(1, (tt_module[]){tt_nn_linear_new(2, 2, false, &rng)});
    ck_assert_int_eq(tt_safetensors_load_module(path, other), TT_ERR_MISMATCH);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "0.weight"));
    tt_module_free(other);
    tt_custom_free(&a.base);
    tt_custom_free(&b.base);
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_loader_owns_dataset) {
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(4, 1), 1, 2, 3, 4);
    tt_dataset *ds = tt_tensor_dataset(1, &x);
    tt_release(x);  // the dataset holds its own reference
    tt_dataloader *dl = tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 3,
                                          .own_dataset = true}, NULL);
    tt_dataloader_begin_epoch(dl);
    tt_scope_begin();
    tt_tensor *b;
    ck_assert(tt_dataloader_next(dl, &b, NULL));
    ck_assert_values(b, 0, 0, 1, 2, 3);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 1);  // the dataset's x
    tt_dataloader_free(dl);                  // and the dataset with it
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

START_TEST(test_rng_new) {
    tt_rng a = tt_rng_new(42), b;
    tt_rng_seed(&b, 42);
    for (int i = 0; i < 4; i++) ck_assert(tt_rng_u64(&a) == tt_rng_u64(&b));
}
END_TEST

START_TEST(test_abort_param_in_scope) {
    tt_expect_abort("registered inside a scope");
    tt_custom c;
    tt_custom_init(&c, NULL, net_forward);
    tt_scope_begin();
    tt_custom_add_param(&c, "w", tt_zeros(TT_F32, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_duplicate_child) {
    tt_expect_abort("'fc' added twice");
    tt_custom c;
    tt_custom_init(&c, NULL, net_forward);
    tt_custom_add_module(&c, "fc", tt_act_module(TT_ACT_RELU));
    tt_custom_add_module(&c, "fc", tt_act_module(TT_ACT_TANH));
}
END_TEST

int main(void) {
    Suite *s = suite_create("nn_owned");
    TCase *tc = tt_tcase("nn_owned");
    tcase_add_test(tc, test_sequential_new_owns);
    tcase_add_test(tc, test_sequential_add_owned_and_borrowed);
    tcase_add_test(tc, test_owned_linear_is_a_linear);
    tcase_add_test(tc, test_new_constructors);
    tcase_add_test(tc, test_custom_module);
    tcase_add_test(tc, test_custom_nested_and_borrowed);
    tcase_add_test(tc, test_optim_add_module);
    tcase_add_test(tc, test_eval_begin_end);
    tcase_add_test(tc, test_safetensors_module_roundtrip);
    tcase_add_test(tc, test_loader_owns_dataset);
    tcase_add_test(tc, test_rng_new);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_nn_owned");
    tcase_add_test_raise_signal(ab, test_abort_param_in_scope, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_duplicate_child, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
