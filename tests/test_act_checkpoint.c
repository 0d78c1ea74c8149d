// Check suite of activation checkpointing (tt_activation_checkpoint, autograd/checkpoint.c) and
// of the GPT's checkpoint_blocks: gradients bitwise equal to those without checkpointing (a
// small MLP with dropout, nested checkpoints, autocast, the GPT's two config families with
// dropout on 1 and 2 threads), the parameters found through ctx, the rng stream left as it
// would be, the memory the graph holds, the grad-ready notifications, and the aborts (an
// input or a parameter written in place before backward, a graph tensor passed through ctx).
// The gradcheck cases are tests/gc_ops_checkpoint.c's.
#include <signal.h>
#include <stdio.h>

#include "test_util.h"
#include "autograd/autograd_internal.h"
#include "models/gpt/gpt.h"

// ---- a small function: x (N, D) -> dropout(tanh(x W1) W2 * s), W1, W2 reached through ctx ----

enum { N = 5, D = 6, H = 7 };

typedef struct mlp {
    tt_tensor *w1, *w2;  // (D, H), (H, D)
    tt_rng rng;          // its dropout stream
} mlp;

static void mlp_init(mlp *m, tt_dtype dt) {
    tt_rng r = tt_rng_new(3);
    m->w1 = tt_set_requires_grad(tt_randn(&r, dt, TT_SHAPE(D, H)), true);
    m->w2 = tt_set_requires_grad(tt_randn(&r, dt, TT_SHAPE(H, D)), true);
    m->rng = tt_rng_new(11);
}

static void mlp_free(mlp *m) {
    tt_release(m->w1);
    tt_release(m->w2);
}

// in[0] (N, D), in[1] a scale (1,) that requires grad: an input of the checkpoint besides x.
static tt_tensor *mlp_fn(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    mlp *m = ctx;
    tt_tensor *h = tt_dropout(tt_tanh(tt_matmul(in[0], m->w1)), 0.3, true, &m->rng);
    return tt_mul(tt_matmul(h, m->w2), in[1]);
}

// x through mlp_fn, then a second dropout after it (the stream must continue as without the
// checkpoint) and a loss; nested: the checkpoint wraps one that wraps mlp_fn.
static tt_tensor *nested_fn(tt_tensor *const *in, int n, void *ctx) {
    return tt_activation_checkpoint(mlp_fn, ctx, n, in, &((mlp *)ctx)->rng);
}

static tt_tensor *mlp_loss(mlp *m, tt_tensor *x, tt_tensor *s, int ckpt) {
    tt_tensor *in[2] = {x, s};
    tt_tensor *y = ckpt == 0   ? mlp_fn(in, 2, m)
                   : ckpt == 1 ? tt_activation_checkpoint(mlp_fn, m, 2, in, &m->rng)
                               : tt_activation_checkpoint(nested_fn, m, 2, in, &m->rng);
    y = tt_dropout(tt_square(y), 0.25, true, &m->rng);
    return tt_sum_all(y);
}

typedef struct mlp_result {
    tt_tensor *loss, *dx, *ds, *dw1, *dw2;  // kept copies (released by the caller)
    tt_rng rng_after;
} mlp_result;

// x is a non-leaf (2 x0 + 1), so its gradient flows on through the graph before the
// checkpoint to the leaf x0. Under autocast bf16 when bf16.
static mlp_result mlp_run(tt_dtype dt, int ckpt, bool bf16) {
    mlp m;
    mlp_init(&m, dt);
    tt_rng r = tt_rng_new(5);
    tt_tensor *x0 = tt_set_requires_grad(tt_randn(&r, dt, TT_SHAPE(N, D)), true);
    tt_tensor *s = tt_set_requires_grad(tt_full(dt, TT_SHAPE(1), 1.5), true);
    tt_scope_begin();
    if (bf16) tt_autocast_begin(TT_PRECISION_BF16);
    tt_tensor *loss = mlp_loss(&m, tt_add_scalar(tt_mul_scalar(x0, 2), 1), s, ckpt);
    if (bf16) tt_autocast_end();
    tt_backward(loss);  // outside the autocast region: the recompute takes the forward's
    mlp_result res = {tt_keep(tt_clone(loss)),          tt_keep(tt_clone(tt_grad(x0))),
                      tt_keep(tt_clone(tt_grad(s))),    tt_keep(tt_clone(tt_grad(m.w1))),
                      tt_keep(tt_clone(tt_grad(m.w2))), m.rng};
    tt_scope_end();
    tt_release(x0);
    tt_release(s);
    mlp_free(&m);
    return res;
}

static void mlp_result_free(mlp_result *r) {
    tt_tensor *v[] = {r->loss, r->dx, r->ds, r->dw1, r->dw2};
    for (int i = 0; i < 5; i++) tt_release(v[i]);
}

static void assert_same_result(const mlp_result *a, const mlp_result *b) {
    const char *names[] = {"loss", "dx", "dscale", "dw1", "dw2"};
    tt_tensor *va[] = {a->loss, a->dx, a->ds, a->dw1, a->dw2};
    tt_tensor *vb[] = {b->loss, b->dx, b->ds, b->dw1, b->dw2};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(tt_test_same_values(va[i], vb[i]), "%s differs with checkpointing", names[i]);
    ck_assert_msg(!memcmp(&a->rng_after, &b->rng_after, sizeof a->rng_after),
                  "the dropout stream ends elsewhere with checkpointing");
}

// Plain, checkpointed and nested checkpoints: the same bits in f32 and f64; and the gradients
// are not trivial (a dropout mask that differed at the recompute would change them).
START_TEST(test_mlp_bitwise) {
    tt_dtype dts[] = {TT_F32, TT_F64};
    for (int d = 0; d < 2; d++) {
        mlp_result plain = mlp_run(dts[d], 0, false);
        tt_scope_begin();
        ck_assert(tt_item(tt_sum_all(tt_abs(plain.dw1))) > 0.1);
        tt_scope_end();
        for (int ckpt = 1; ckpt <= 2; ckpt++) {
            mlp_result c = mlp_run(dts[d], ckpt, false);
            assert_same_result(&plain, &c);
            mlp_result_free(&c);
        }
        mlp_result_free(&plain);
    }
}
END_TEST

// Forward under autocast bf16, backward outside it: the recompute runs bf16 products too, so
// the gradients are those of the plain autocast run, and differ from f32's.
START_TEST(test_mlp_autocast) {
    mlp_result plain = mlp_run(TT_F32, 0, true), c = mlp_run(TT_F32, 1, true);
    mlp_result f32 = mlp_run(TT_F32, 0, false);
    assert_same_result(&plain, &c);
    ck_assert_msg(!tt_test_same_values(f32.dw1, c.dw1), "bf16 products changed nothing");
    mlp_result_free(&plain);
    mlp_result_free(&c);
    mlp_result_free(&f32);
}
END_TEST

typedef struct leaf_seen {
    tt_tensor *want[4];
    int count[4], other;
    const char *op[4];
} leaf_seen;

static void see_leaf(tt_tensor *leaf, const char *op, void *ctx) {
    leaf_seen *s = ctx;
    for (int i = 0; i < 4; i++)
        if (leaf == s->want[i]) {
            s->count[i]++;
            s->op[i] = op;
            return;
        }
    s->other++;
}

// The node's inputs: x, s, then the weights found through ctx, each once; tt_graph_leaves
// reaches them through the "checkpoint" node. Under no-grad nothing is recorded.
START_TEST(test_params_found) {
    mlp m;
    mlp_init(&m, TT_F64);
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(N, D)), true);
    tt_tensor *s = tt_ones(TT_F64, TT_SHAPE(1));  // no grad: an input all the same
    tt_tensor *in[2] = {x, s};
    tt_tensor *y = tt_activation_checkpoint(mlp_fn, &m, 2, in, &m.rng);
    ck_assert_ptr_nonnull(y->node);
    ck_assert_str_eq(tt_op_name(y->node->op), "checkpoint");
    ck_assert_int_eq(y->node->n_inputs, 4);
    ck_assert(y->node->inputs[0] == x && y->node->inputs[1] == s);
    ck_assert(y->node->inputs[2] == m.w1 && y->node->inputs[3] == m.w2);
    leaf_seen seen = {{x, m.w1, m.w2, s}, {0}, 0, {0}};
    tt_graph_leaves(y, see_leaf, &seen);
    ck_assert_int_eq(seen.count[0] + seen.count[1] + seen.count[2], 3);
    ck_assert_int_eq(seen.count[3] + seen.other, 0);
    ck_assert_str_eq(seen.op[1], "checkpoint");
    tt_no_grad_begin();
    tt_tensor *z = tt_activation_checkpoint(mlp_fn, &m, 2, in, &m.rng);
    tt_no_grad_end();
    ck_assert(!z->node && !z->requires_grad);
    tt_scope_end();
    mlp_free(&m);
}
END_TEST

// tt_backward_set_grad_ready hears of each weight inside the checkpoint once, with its final
// gradient (what --overlap's all-reduce relies on).
typedef struct ready_log {
    tt_tensor *w[2];
    int calls[2];
    double sum_at_call[2];
} ready_log;

static void on_ready(tt_tensor *leaf, void *ctx) {
    ready_log *l = ctx;
    for (int i = 0; i < 2; i++)
        if (leaf == l->w[i]) {
            l->calls[i]++;
            l->sum_at_call[i] = tt_item(tt_sum_all(tt_grad(leaf)));
        }
}

START_TEST(test_grad_ready_inside) {
    mlp m;
    mlp_init(&m, TT_F64);
    ready_log log = {{m.w1, m.w2}, {0}, {0}};
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(N, D)), true);
    tt_tensor *s = tt_full(TT_F64, TT_SHAPE(1), 2);
    tt_backward_set_grad_ready(on_ready, &log);
    tt_backward(mlp_loss(&m, x, s, 1));
    tt_backward_set_grad_ready(NULL, NULL);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(log.calls[i], 1);
        ck_assert(log.sum_at_call[i] == tt_item(tt_sum_all(tt_grad(log.w[i]))));
        ck_assert(log.sum_at_call[i] != 0);
    }
    tt_scope_end();
    mlp_free(&m);
}
END_TEST

// Between forward and backward the checkpoint holds its output and nothing of fn's
// intermediates (matmul, tanh, the dropout's output and mask, the second matmul): held bytes
// are y's and the sum's only, a fraction of the plain graph's.
START_TEST(test_holds_less) {
    int64_t held[2];
    for (int ckpt = 0; ckpt < 2; ckpt++) {
        mlp m;
        mlp_init(&m, TT_F64);
        tt_scope_begin();
        tt_tensor *x = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(N, D)), true);
        tt_tensor *s = tt_full(TT_F64, TT_SHAPE(1), 2), *in[2] = {x, s};
        int64_t before = tt_live_bytes();
        tt_tensor *y =
            ckpt ? tt_activation_checkpoint(mlp_fn, &m, 2, in, &m.rng) : mlp_fn(in, 2, &m);
        tt_sum_all(y);
        held[ckpt] = tt_live_bytes() - before;
        tt_scope_end();
        mlp_free(&m);
    }
    int64_t out_bytes = N * D * 8 + 8;  // y (N, D) and the sum, f64
    ck_assert_msg(held[1] == out_bytes && held[0] >= out_bytes + 4 * N * H * 8,
                  "held %lld bytes plain, %lld checkpointed", (long long)held[0],
                  (long long)held[1]);
}
END_TEST

// ---- aborts ----

START_TEST(test_inplace_input_aborts) {
    tt_expect_abort("tt_backward: a tensor saved by 'checkpoint' was modified in place by 'fill_'");
    mlp m;
    mlp_init(&m, TT_F64);
    tt_scope_begin();
    tt_tensor *x0 = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(N, D)), true);
    tt_tensor *x = tt_mul_scalar(x0, 2), *s = tt_full(TT_F64, TT_SHAPE(1), 2);
    tt_tensor *in[2] = {x, s};
    tt_tensor *y = tt_sum_all(tt_activation_checkpoint(mlp_fn, &m, 2, in, &m.rng));
    tt_no_grad_begin();
    tt_fill_(x, 3);  // the recompute would read 3s where the forward read 2s
    tt_no_grad_end();
    tt_backward(y);
}
END_TEST

START_TEST(test_inplace_param_aborts) {
    tt_expect_abort("tt_backward: a tensor saved by 'checkpoint' was modified in place by 'add_'");
    mlp m;
    mlp_init(&m, TT_F64);
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(N, D)), true);
    tt_tensor *s = tt_full(TT_F64, TT_SHAPE(1), 2), *in[2] = {x, s};
    tt_tensor *y = tt_sum_all(tt_activation_checkpoint(mlp_fn, &m, 2, in, &m.rng));
    tt_no_grad_begin();
    tt_add_(m.w1, tt_ones(TT_F64, TT_SHAPE(D, H)));  // an optimizer step before backward
    tt_no_grad_end();
    tt_backward(y);
}
END_TEST

// A tensor of the graph reached through ctx instead of inputs.
static tt_tensor *reads_ctx(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_mul(in[0], ctx);
}

START_TEST(test_graph_tensor_through_ctx_aborts) {
    tt_expect_abort("fn read tensor (2,) made by op 'mul_scalar' (it requires grad) other");
    tt_scope_begin();
    tt_tensor *a = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(2)), true);
    tt_tensor *b = tt_mul_scalar(a, 3);
    tt_activation_checkpoint(reads_ctx, b, 1, &a, NULL);
}
END_TEST

// ---- the GPT: checkpoint_blocks gives the same bits ----

enum { CFG_DEFAULT, CFG_MODERN, NCFG };

// Small models of the two families, as "field=value" of the config table: GPT-2 style, and
// rope + rmsnorm + relu2 + GQA + qk-norm + untied (with biases), both with dropout 0.1.
static const char *const small_fields[NCFG][8] = {
    {"vocab_size=13", "block_size=8", "n_layer=3", "n_head=4", "n_kv_head=4", "n_embd=16",
     "dropout=0.1"},
    {"n_kv_head=2", "positional=rope", "norm=rmsnorm", "activation=relu2", "tie_weights=false",
     "qk_norm=true", "bias=true"},
};

static void set_fields(tt_gpt_config *c, const char *const *fields) {
    for (int i = 0; i < 8 && fields[i]; i++) {
        char key[32];
        const char *eq = strchr(fields[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - fields[i]), fields[i]);
        const tt_gpt_field *f = tt_gpt_field_find(key);
        ck_assert_msg(f && tt_gpt_field_parse(c, f, eq + 1) == TT_OK, "%s", fields[i]);
    }
}

static tt_gpt_config small_config(int which) {
    tt_gpt_config c = tt_gpt_config_default();
    set_fields(&c, small_fields[CFG_DEFAULT]);
    if (which == CFG_MODERN) set_fields(&c, small_fields[CFG_MODERN]);
    return c;
}

typedef struct gpt_grads {
    int n;
    tt_tensor *g[64];  // each parameter's gradient after two steps' backward (copies)
    double loss[2];
    int64_t held;  // live bytes after the first forward, before its backward
    tt_rng rng_after;
} gpt_grads;

// Two forward/backward passes (the gradients summed, as grad accumulation) on random tokens,
// training mode, the given threads.
static gpt_grads gpt_run(int which, bool ckpt, int threads) {
    gpt_grads out = {0};
    tt_gpt_config c = small_config(which);
    tt_gpt m;
    tt_rng r = tt_rng_new(42);
    ck_assert_int_eq(tt_gpt_init(&m, &c, &r), TT_OK);
    tt_gpt_train(&m, true);
    m.checkpoint_blocks = ckpt;
    int prev = tt_get_num_threads();
    tt_set_num_threads(threads);
    for (int step = 0; step < 2; step++) {
        tt_scope_begin();
        tt_tensor *x = tt_randint(&r, 0, c.vocab_size, TT_SHAPE(3, c.block_size));
        tt_tensor *y = tt_randint(&r, 0, c.vocab_size, TT_SHAPE(3, c.block_size));
        int64_t before = tt_live_bytes();
        tt_tensor *loss = tt_gpt_loss(&m, x, y);
        if (step == 0) out.held = tt_live_bytes() - before;
        out.loss[step] = tt_item(loss);
        tt_backward(loss);
        tt_scope_end();
    }
    tt_set_num_threads(prev);
    ck_assert_int_le(m.params.n, 64);
    out.n = m.params.n;
    for (int i = 0; i < m.params.n; i++) {
        tt_tensor *g = tt_grad(m.params.items[i].tensor);
        ck_assert_msg(g, "%s got no gradient", m.params.items[i].name);
        out.g[i] = tt_clone(g);
    }
    out.rng_after = m.dropout_rng;
    tt_gpt_free(&m);
    return out;
}

static void gpt_grads_free(gpt_grads *g) {
    for (int i = 0; i < g->n; i++) tt_release(g->g[i]);
}

// _i: config family (bit 1) and threads (bit 0: 2 threads).
START_TEST(test_gpt_bitwise) {
    int which = _i >> 1, threads = 1 + (_i & 1);
    gpt_grads plain = gpt_run(which, false, threads), ck = gpt_run(which, true, threads);
    ck_assert_int_eq(plain.n, ck.n);
    for (int s = 0; s < 2; s++)
        ck_assert_msg(plain.loss[s] == ck.loss[s], "loss %d: %.9g vs %.9g", s, plain.loss[s],
                      ck.loss[s]);
    for (int i = 0; i < plain.n; i++)
        ck_assert_msg(tt_test_same_values(plain.g[i], ck.g[i]),
                      "config %d, %d threads: gradient %d differs with checkpoint_blocks", which,
                      threads, i);
    ck_assert(!memcmp(&plain.rng_after, &ck.rng_after, sizeof plain.rng_after));
    // The graph keeps one block input per block instead of the blocks' activations.
    ck_assert_msg(ck.held * 2 < plain.held, "held %lld bytes with checkpointing, %lld without",
                  (long long)ck.held, (long long)plain.held);
    gpt_grads_free(&plain);
    gpt_grads_free(&ck);
}
END_TEST

int main(void) {
    Suite *s = suite_create("act_checkpoint");
    TCase *tc = tt_tcase("function");
    tcase_add_test(tc, test_mlp_bitwise);
    tcase_add_test(tc, test_mlp_autocast);
    tcase_add_test(tc, test_params_found);
    tcase_add_test(tc, test_grad_ready_inside);
    tcase_add_test(tc, test_holds_less);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_inplace_input_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_inplace_param_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_graph_tensor_through_ctx_aborts, SIGABRT);
    suite_add_tcase(s, ab);
    TCase *gpt = tt_tcase("gpt");
    tcase_set_timeout(gpt, 120);
    tcase_add_loop_test(gpt, test_gpt_bitwise, 0, 2 * NCFG);
    suite_add_tcase(s, gpt);
    return tt_test_run(s);
}
