// Check suite of nn/walk.c and nn/activation.c: named_modules' names and order on a transformer
// block and nested sequentials, the Linears of a tree, a chain's forward against the
// sequential's, and the activation table's rows against tt_activate and the names; the abort
// paths.
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

// ---- helpers ----

typedef struct seen {
    char names[32][TT_NAME_MAX];
    const char *types[32];
    int n;
} seen;

static void record(tt_module m, const char *name, void *ctx) {
    seen *s = ctx;
    ck_assert_int_lt(s->n, 32);
    snprintf(s->names[s->n], TT_NAME_MAX, "%s", name);
    s->types[s->n++] = m.ops->type;
}

// Asserts a and b hold the same shape and bitwise the same values.
static void assert_bitwise(const tt_tensor *a, const tt_tensor *b) {
    ck_assert(tt_same_shape(a, b));
    int64_t n = tt_numel(a);
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    tt_to_f64_array(a, x);
    tt_to_f64_array(b, y);
    ck_assert(memcmp(x, y, (size_t)n * sizeof *x) == 0);
    free(x);
    free(y);
}

static void block_init(tt_nn_block *b, tt_rng *rng) {
    tt_nn_block_init(b, &(tt_nn_block_config){
        .attn = {.n_embd = 8, .n_head = 2, .max_seq = 4, .causal = true, .bias = true},
        .act = TT_ACT_GELU, .norm = TT_NORM_LAYERNORM}, rng);
}

// ---- named_modules ----

START_TEST(test_named_modules_block) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_block b;
    block_init(&b, &rng);
    seen s = {0};
    tt_module_named_modules(tt_nn_block_module(&b), "blocks.3", record, &s);
    static const char *const names[] = {
        "blocks.3", "blocks.3.norm1", "blocks.3.attn", "blocks.3.attn.q_proj",
        "blocks.3.attn.k_proj", "blocks.3.attn.v_proj", "blocks.3.attn.o_proj",
        "blocks.3.attn.attn_drop", "blocks.3.attn.resid_drop", "blocks.3.norm2", "blocks.3.mlp",
        "blocks.3.mlp.fc", "blocks.3.mlp.proj", "blocks.3.mlp.drop",
    };
    static const char *const types[] = {
        "Block", "Norm", "Attention", "Linear", "Linear", "Linear", "Linear", "Dropout",
        "Dropout", "Norm", "FeedForward", "Linear", "Linear", "Dropout",
    };
    ck_assert_int_eq(s.n, 14);
    for (int i = 0; i < s.n; i++) {
        ck_assert_str_eq(s.names[i], names[i]);
        ck_assert_str_eq(s.types[i], types[i]);
    }
    // Without a prefix the root is "" and the children are named from there.
    s.n = 0;
    tt_module_named_modules(tt_nn_block_module(&b), NULL, record, &s);
    ck_assert_str_eq(s.names[0], "");
    ck_assert_str_eq(s.names[3], "attn.q_proj");
    tt_nn_block_free(&b);
}
END_TEST

START_TEST(test_linears_nested) {
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_nn_linear a, c;
    tt_nn_linear_init(&a, 3, 4, true, &rng);
    tt_nn_linear_init(&c, 4, 2, false, &rng);
    tt_nn_sequential inner, outer;
    tt_nn_sequential_init(&inner);
    tt_nn_sequential_init(&outer);
    tt_nn_sequential_add(&inner, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&inner, tt_nn_linear_module(&c));
    tt_nn_sequential_add(&outer, tt_nn_linear_module(&a));
    tt_nn_sequential_add(&outer, tt_nn_sequential_module(&inner));
    tt_nn_linear_list l;
    tt_nn_linear_list_init(&l);
    tt_module_linears(tt_nn_sequential_module(&outer), "net", &l);
    ck_assert_int_eq(l.n, 2);
    ck_assert_str_eq(l.items[0].name, "net.0");
    ck_assert_ptr_eq(l.items[0].linear, &a);
    ck_assert_str_eq(l.items[1].name, "net.1.1");
    ck_assert_ptr_eq(l.items[1].linear, &c);
    ck_assert_ptr_eq(tt_module_as_linear(tt_nn_linear_module(&c)), &c);
    ck_assert_ptr_null(tt_module_as_linear(tt_nn_sequential_module(&inner)));
    ck_assert_ptr_null(tt_module_as_linear(tt_act_module(TT_ACT_RELU)));

    // A chain's forward is the sequential's, bit for bit.
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(2, 3), -1, 0.5, 2, 0.25, -3, 1);
    assert_bitwise(tt_module_forward_chain(tt_nn_sequential_module(&outer), x),
                   tt_nn_sequential_forward(&outer, x));
    tt_scope_end();

    tt_nn_linear_list_free(&l);
    ck_assert_int_eq(l.n, 0);
    tt_nn_linear_list_free(&l);  // safe twice
    tt_nn_sequential_free(&outer);
    tt_nn_sequential_free(&inner);
    tt_nn_linear_free(&a);
    tt_nn_linear_free(&c);
}
END_TEST

START_TEST(test_linears_block) {
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_nn_block b;
    block_init(&b, &rng);
    tt_nn_linear_list l;
    tt_nn_linear_list_init(&l);
    tt_module_linears(tt_nn_block_module(&b), "h", &l);
    tt_nn_linear *want[] = {&b.attn.q_proj, &b.attn.k_proj, &b.attn.v_proj, &b.attn.o_proj,
                            &b.mlp.fc, &b.mlp.proj};
    static const char *const names[] = {"h.attn.q_proj", "h.attn.k_proj", "h.attn.v_proj",
                                        "h.attn.o_proj", "h.mlp.fc", "h.mlp.proj"};
    ck_assert_int_eq(l.n, 6);
    for (int i = 0; i < 6; i++) {
        ck_assert_ptr_eq(l.items[i].linear, want[i]);
        ck_assert_str_eq(l.items[i].name, names[i]);
    }
    tt_nn_linear_list_free(&l);
    tt_nn_block_free(&b);
}
END_TEST

// ---- the activation table ----

START_TEST(test_act_table) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(3, 2), -2, -0.5, 0.25, 3, 1, -1);
    for (int a = 0; a < TT_ACT_COUNT; a++) {
        const tt_act_info *r = tt_act_info_of((tt_act)a);
        ck_assert_int_eq(r->act, a);
        ck_assert_str_eq(tt_act_names[a], tt_act_name((tt_act)a));
        ck_assert_int_eq(r->elementwise, a != TT_ACT_SOFTMAX && a != TT_ACT_SWIGLU);
        assert_bitwise(r->forward(x), tt_activate((tt_act)a, x));
        tt_module m = tt_act_module((tt_act)a);
        assert_bitwise(tt_module_forward(m, x), tt_activate((tt_act)a, x));
    }
    ck_assert_str_eq(tt_act_names[TT_ACT_RELU2], "relu2");
    ck_assert_double_eq(tt_item(tt_act_info_of(TT_ACT_RELU2)->forward(
                            tt_test_tensor(TT_F32, TT_SHAPE(1), -3))), 0);
    ck_assert_double_eq(tt_item(tt_act_info_of(TT_ACT_RELU2)->forward(
                            tt_test_tensor(TT_F32, TT_SHAPE(1), 3))), 9);
    tt_scope_end();
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_act_info) {
    tt_expect_abort("tt_act_info_of: invalid activation -1; valid values are 0 .. 9");
    tt_act_info_of((tt_act)-1);
}
END_TEST

START_TEST(test_abort_chain_empty) {
    tt_expect_abort("module 'Linear' has no children to run as a chain");
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_nn_linear a;
    tt_nn_linear_init(&a, 2, 2, false, &rng);
    tt_module_forward_chain(tt_nn_linear_module(&a), tt_zeros(TT_F32, TT_SHAPE(1, 2)));
}
END_TEST

START_TEST(test_abort_linears_null) {
    tt_expect_abort("out must not be NULL");
    tt_module_linears(tt_nn_identity_module(), NULL, NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("nn_walk");
    TCase *tc = tt_tcase("walk");
    tcase_add_test(tc, test_named_modules_block);
    tcase_add_test(tc, test_linears_nested);
    tcase_add_test(tc, test_linears_block);
    tcase_add_test(tc, test_act_table);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_walk");
    tcase_add_test_raise_signal(ab, test_abort_act_info, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_chain_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_linears_null, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
