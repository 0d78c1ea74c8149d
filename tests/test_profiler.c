// Check suite of the profiler (autograd/profiler.h): per-op counts, FLOPs and bytes of a few ops
// by hand; a GPT training step's FLOPs against the analytic count (6 per token per matrix
// parameter plus attention); the trace is strict JSON with one event per recorded op; losses
// are the same bits with the profiler on and off; the report's rows; bad paths and arguments;
// tt_model_summary's parameters against the parameter lists and its FLOPs against the
// profiler's and a count by hand.
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "models/gpt/gpt.h"

// ---- a strict JSON checker (RFC 8259), counting complete events ----
// Parses one value; counts the objects that hold "ph":"X". Returns false on any error.

typedef struct json {
    const char *s;
    size_t i, n;
    int64_t complete_events;
    int depth;
} json;

static void ws(json *j) {
    while (j->i < j->n && strchr(" \t\r\n", j->s[j->i])) j->i++;
}

static bool lit(json *j, const char *w) {
    size_t k = strlen(w);
    if (j->n - j->i < k || memcmp(j->s + j->i, w, k) != 0) return false;
    j->i += k;
    return true;
}

// A string; its contents (escapes kept) into out when out is not NULL (cap bytes).
static bool jstring(json *j, char *out, size_t cap) {
    if (j->i >= j->n || j->s[j->i] != '"') return false;
    size_t start = ++j->i;
    while (j->i < j->n && j->s[j->i] != '"') {
        unsigned char c = (unsigned char)j->s[j->i];
        if (c < 0x20) return false;
        if (c == '\\') {
            if (++j->i >= j->n) return false;
            char e = j->s[j->i];
            if (e == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (j->i + k >= j->n || !strchr("0123456789abcdefABCDEF", j->s[j->i + k]))
                        return false;
                j->i += 4;
            } else if (!strchr("\"\\/bfnrt", e)) {
                return false;
            }
        }
        j->i++;
    }
    if (j->i >= j->n) return false;
    if (out) {
        size_t len = j->i - start < cap - 1 ? j->i - start : cap - 1;
        memcpy(out, j->s + start, len);
        out[len] = 0;
    }
    j->i++;
    return true;
}

static bool jnumber(json *j) {
    size_t i = j->i;
    if (i < j->n && j->s[i] == '-') i++;
    if (i >= j->n) return false;
    if (j->s[i] < '0' || j->s[i] > '9') return false;
    if (j->s[i] == '0') i++;  // no leading zeros
    else while (i < j->n && j->s[i] >= '0' && j->s[i] <= '9') i++;
    if (i < j->n && j->s[i] == '.') {
        size_t d = ++i;
        while (i < j->n && j->s[i] >= '0' && j->s[i] <= '9') i++;
        if (i == d) return false;
    }
    if (i < j->n && (j->s[i] == 'e' || j->s[i] == 'E')) {
        i++;
        if (i < j->n && (j->s[i] == '+' || j->s[i] == '-')) i++;
        size_t d = i;
        while (i < j->n && j->s[i] >= '0' && j->s[i] <= '9') i++;
        if (i == d) return false;
    }
    j->i = i;
    return true;
}

static bool jvalue(json *j);

static bool jobject(json *j) {
    j->i++;  // '{'
    ws(j);
    if (j->i < j->n && j->s[j->i] == '}') {
        j->i++;
        return true;
    }
    bool complete = false;
    for (;;) {
        char key[32];
        ws(j);
        if (!jstring(j, key, sizeof key)) return false;
        ws(j);
        if (j->i >= j->n || j->s[j->i++] != ':') return false;
        ws(j);
        if (strcmp(key, "ph") == 0 && lit(j, "\"X\"")) complete = true;
        else if (!jvalue(j)) return false;
        ws(j);
        if (j->i >= j->n) return false;
        char c = j->s[j->i++];
        if (c == '}') break;
        if (c != ',') return false;
    }
    j->complete_events += complete;
    return true;
}

static bool jarray(json *j) {
    j->i++;  // '['
    ws(j);
    if (j->i < j->n && j->s[j->i] == ']') {
        j->i++;
        return true;
    }
    for (;;) {
        ws(j);
        if (!jvalue(j)) return false;
        ws(j);
        if (j->i >= j->n) return false;
        char c = j->s[j->i++];
        if (c == ']') return true;
        if (c != ',') return false;
    }
}

static bool jvalue(json *j) {
    if (j->i >= j->n || ++j->depth > 64) return false;
    bool ok;
    switch (j->s[j->i]) {
        case '{': ok = jobject(j); break;
        case '[': ok = jarray(j); break;
        case '"': ok = jstring(j, NULL, 0); break;
        case 't': ok = lit(j, "true"); break;
        case 'f': ok = lit(j, "false"); break;
        case 'n': ok = lit(j, "null"); break;
        default: ok = jnumber(j); break;
    }
    j->depth--;
    return ok;
}

// Parses the whole text: one value and only whitespace after it; returns the "X" events or -1.
static int64_t json_complete_events(const char *s, size_t n) {
    json j = {s, 0, n, 0, 0};
    ws(&j);
    if (!jvalue(&j)) return -1;
    ws(&j);
    return j.i == j.n ? j.complete_events : -1;
}

START_TEST(test_json_checker_rejects_bad_json) {
    const char *good = "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1.5,\"a\":[true,null,-2e3]},"
                       "{\"ph\":\"B\"}],\"s\":\"a\\\"b\\u00e9\"}";
    ck_assert_int_eq(json_complete_events(good, strlen(good)), 1);
    const char *bad[] = {"{\"a\":1,}", "[1 2]", "{\"a\":01}", "{\"a\":1.}", "\"x", "{} {}",
                         "{\"a\":tru}", "[\"\\x\"]", "{'a':1}", "[1,]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(json_complete_events(bad[i], strlen(bad[i])) == -1, "accepted %s", bad[i]);
}
END_TEST

// ---- per-op figures by hand ----

// x (2, 3) @ w (3, 4) -> relu -> transpose -> sum, then backward.
static void small_graph(void) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(TT_F32, TT_SHAPE(2, 3), 1, -2, 3, 4, 5,
                                                       -6), true);
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F32, TT_SHAPE(3, 4)), true);
    tt_tensor *s = tt_sum_all(tt_transpose(tt_relu(tt_matmul(x, w)), 0, 1));
    tt_backward(s);
    tt_scope_end();
}

START_TEST(test_counts_flops_bytes_by_hand) {
    tt_profiler_begin();
    small_graph();
    tt_no_grad_begin();  // a forward without grad is counted too, with no backward
    tt_scope_begin();
    tt_matmul(tt_ones(TT_F32, TT_SHAPE(5, 2)), tt_ones(TT_F32, TT_SHAPE(2, 7)));
    tt_scope_end();
    tt_no_grad_end();
    tt_profiler_end();
    tt_op_profile mm = tt_profiler_op(TT_OP_MATMUL), relu = tt_profiler_op(TT_OP_RELU);
    tt_op_profile tr = tt_profiler_op(TT_OP_TRANSPOSE), sum = tt_profiler_op(TT_OP_SUM);
    ck_assert_int_eq(mm.calls, 2);
    ck_assert_int_eq(mm.backward_calls, 1);
    ck_assert_int_eq(mm.forward_flops, 2 * 2 * 4 * 3 + 2 * 5 * 7 * 2);  // 2 M N K each
    ck_assert_int_eq(mm.backward_flops, 2 * (2 * 2 * 4 * 3));          // dx and dw
    ck_assert_int_eq(mm.forward_bytes, 4 * (6 + 12 + 8) + 4 * (10 + 14 + 35));
    // backward: g (2, 4), x and w read, dx and dw written
    ck_assert_int_eq(mm.backward_bytes, 4 * (8 + 6 + 12 + 6 + 12));
    ck_assert_int_eq(relu.calls, 1);
    ck_assert_int_eq(relu.backward_calls, 1);
    ck_assert_int_eq(relu.forward_flops, 8);
    ck_assert_int_eq(relu.backward_flops, 16);
    ck_assert_int_eq(tr.calls, 1);
    ck_assert_int_eq(tr.forward_flops, 0);
    ck_assert_int_eq(tr.forward_bytes, 0);  // a view moves nothing
    ck_assert_int_eq(sum.calls, 1);
    ck_assert_int_eq(sum.forward_flops, 8);
    ck_assert_int_eq(tt_profiler_op(TT_OP_ADD).calls, 0);
    tt_profile_totals t = tt_profiler_totals();
    ck_assert_int_eq(t.calls, 5);
    ck_assert_int_eq(t.backward_calls, 4);
    ck_assert_int_eq(t.forward_flops, mm.forward_flops + 8 + 8);
    ck_assert(t.wall_ns > 0 && t.forward_ns >= 0 && t.forward_ns + t.backward_ns <= t.wall_ns);
    ck_assert(t.peak_bytes >= t.live_bytes && t.peak_bytes > 0);
    // Off: nothing more is counted; reset zeroes.
    small_graph();
    ck_assert_int_eq(tt_profiler_totals().calls, 5);
    tt_profiler_reset();
    ck_assert_int_eq(tt_profiler_totals().calls, 0);
    ck_assert_int_eq(tt_profiler_op(TT_OP_MATMUL).forward_flops, 0);
    // begin resumes: a second interval adds to the first.
    tt_profiler_begin();
    small_graph();
    tt_profiler_end();
    tt_profiler_begin();
    small_graph();
    tt_profiler_end();
    ck_assert_int_eq(tt_profiler_op(TT_OP_MATMUL).calls, 2);
    ck_assert_int_eq(tt_profiler_op(TT_OP_RELU).backward_calls, 2);
    ck_assert(!tt_profiler_enabled());
}
END_TEST

// Convolutions count 2 FLOPs per multiply-add: conv2d per output element, conv_transpose2d
// per input element, times the kernel volume (in / groups * kH * kW, out / groups * kH * kW).
START_TEST(test_conv_flops_by_hand) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_tensor *x = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(2, 4, 6, 6)), true);
    tt_tensor *w = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(6, 2, 3, 3)), true);
    tt_tensor *b = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(6)), true);
    tt_tensor *xt = tt_randn(&rng, TT_F32, TT_SHAPE(1, 4, 3, 3));  // no grad: only dw
    tt_tensor *wt = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(4, 3, 2, 2)), true);
    tt_profiler_begin();
    tt_tensor *y = tt_conv2d(x, w, b, NULL, NULL, NULL, 2);           // (2, 6, 4, 4)
    tt_tensor *yt = tt_conv_transpose2d(xt, wt, NULL, (const int64_t[]){2, 2}, NULL, NULL, 1,
                                        NULL);                         // (1, 3, 6, 6)
    tt_backward(tt_add(tt_sum_all(y), tt_sum_all(yt)));
    tt_profiler_end();
    ck_assert_int_eq(yt->shape[2], 6);
    tt_op_profile c = tt_profiler_op(TT_OP_CONV2D), t = tt_profiler_op(TT_OP_CONV_TRANSPOSE2D);
    ck_assert_int_eq(c.forward_flops, 2 * 192 * (2 * 3 * 3) + 192);
    ck_assert_int_eq(c.backward_flops, 2 * (2 * 192 * 18) + 192);  // dx, dw, db
    ck_assert_int_eq(t.forward_flops, 2 * 36 * (3 * 2 * 2));
    ck_assert_int_eq(t.backward_flops, 2 * 36 * 12);               // dw only
    tt_scope_end();
}
END_TEST

START_TEST(test_report_lists_the_ops) {
    tt_profiler_begin();
    ck_assert(tt_profiler_enabled());
    small_graph();
    tt_profiler_end();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    tt_profiler_report(f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_msg(strstr(buf, "\nmatmul ") && strstr(buf, "\nrelu ") && strstr(buf, "\nsum ") &&
                  strstr(buf, "\nops total ") && strstr(buf, "outside ops") &&
                  strstr(buf, "buffer cache:") && strstr(buf, "peak") &&
                  !strstr(buf, "\nadd "), "report:\n%s", buf);
    free(buf);
}
END_TEST

// ---- the trace ----

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    ck_assert_int_ge(len, 0);
    rewind(f);
    char *s = malloc((size_t)len + 1);
    ck_assert_uint_eq(fread(s, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    s[len] = 0;
    *n = (size_t)len;
    return s;
}

START_TEST(test_trace_is_json_with_one_event_per_op) {
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "trace");
    snprintf(path, sizeof path, "%s/trace.json", dir);
    tt_profiler_set_trace(true);
    tt_profiler_begin();
    for (int i = 0; i < 3; i++) small_graph();
    tt_profiler_end();
    tt_profile_totals t = tt_profiler_totals();
    ck_assert_int_eq(t.events, t.calls + t.backward_calls);
    ck_assert_int_eq(t.events, 3 * 8);  // 4 forwards, 4 backwards
    ck_assert_int_eq(tt_profiler_write_trace(path), TT_OK);
    size_t n;
    char *s = read_all(path, &n);
    ck_assert_int_eq(json_complete_events(s, n), t.events);
    ck_assert_msg(strstr(s, "\"name\":\"matmul\"") && strstr(s, "\"name\":\"matmul backward\"") &&
                  strstr(s, "\"shapes\":\"(2, 3) (3, 4) -> (2, 4)\"") &&
                  strstr(s, "\"flops\":48"), "trace:\n%.2000s", s);
    free(s);
    // An empty trace is valid JSON too.
    tt_profiler_reset();
    ck_assert_int_eq(tt_profiler_write_trace(path), TT_OK);
    s = read_all(path, &n);
    ck_assert_int_eq(json_complete_events(s, n), 0);
    free(s);
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_trace_to_a_bad_path_is_an_error) {
    tt_profiler_set_trace(true);
    tt_profiler_begin();
    small_graph();
    tt_profiler_end();
    ck_assert_int_eq(tt_profiler_write_trace("/nonexistent_dir_tt/trace.json"), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "trace"), "message: %s", tt_last_error());
}
END_TEST

// ---- a GPT training step ----

enum { B = 2, T = 32, L = 2, C = 256, NH = 4, V = 40 };

static void gpt_make(tt_gpt *m) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = V;
    c.block_size = T;
    c.n_layer = L;
    c.n_head = NH;
    c.n_kv_head = NH;
    c.n_embd = C;
    c.dropout = 0;
    c.bias = false;
    c.tie_weights = true;
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    ck_assert_int_eq(tt_gpt_init(m, &c, &rng), TT_OK);
}

// (B, T) tokens and their targets from seed.
static void gpt_batch(uint64_t seed, tt_tensor **x, tt_tensor **y) {
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    int32_t v[B * (T + 1)];
    for (int i = 0; i < B * (T + 1); i++) v[i] = (int32_t)tt_rng_below(&rng, V);
    int32_t xs[B * T], ys[B * T];
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            xs[b * T + t] = v[b * (T + 1) + t];
            ys[b * T + t] = v[b * (T + 1) + t + 1];
        }
    *x = tt_from_data(TT_I32, TT_SHAPE(B, T), xs);
    *y = tt_from_data(TT_I32, TT_SHAPE(B, T), ys);
}

// One forward + backward + AdamW step; returns the loss.
static double gpt_step(tt_gpt *m, tt_optim *o, uint64_t seed) {
    tt_scope_begin();
    tt_tensor *x, *y;
    gpt_batch(seed, &x, &y);
    tt_tensor *loss = tt_gpt_loss(m, x, y);
    double v = tt_item(loss);
    tt_backward(loss);
    tt_optim_step(o);
    tt_optim_zero_grad(o);
    tt_scope_end();
    return v;
}

START_TEST(test_gpt_step_flops_match_the_analytic_count) {
    tt_gpt m;
    gpt_make(&m);
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(1e-3));
    tt_optim_add_decay_groups(&o, &m.params, 0.1);
    tt_profiler_begin();
    gpt_step(&m, &o, 1);
    tt_profiler_end();
    // The matrix parameters: per layer q, k, v, o (C x C each) and the MLP (C x 4C, 4C x C),
    // plus the head (V x C, tied to the embedding). Each is used once per token: 2 FLOPs per
    // parameter forward, 4 backward (the input's gradient and the weight's): 6 N per token.
    int64_t n_matrix = L * 12 * (int64_t)C * C;
    int64_t n_head = (int64_t)V * C;
    ck_assert_int_eq(n_matrix + n_head + (int64_t)T * C + L * 2 * C + C,
                     tt_gpt_num_params(&m, false));  // + wpe, 2 LayerNorm gains per layer, ln_f
    int64_t tokens = B * T;
    int64_t matmul = 6 * tokens * (n_matrix + n_head);
    // Attention per layer: Q K^T and P V, 2 T T C FLOPs each per sequence forward, twice that
    // backward: 12 B T^2 C per layer (PaLM's 12 L H Q T per token).
    int64_t attention = 12 * (int64_t)L * B * T * T * C;
    tt_op_profile aff = tt_profiler_op(TT_OP_AFFINE), mm = tt_profiler_op(TT_OP_MATMUL);
    tt_op_profile att = tt_profiler_op(TT_OP_ATTENTION);
    ck_assert_int_eq(aff.forward_flops + aff.backward_flops + mm.forward_flops +
                     mm.backward_flops, matmul);
    ck_assert_int_eq(att.forward_flops + att.backward_flops, attention);
    ck_assert_int_eq(att.calls, L);
    ck_assert_int_eq(att.backward_calls, L);
    ck_assert_int_eq(aff.calls + mm.calls, L * 6 + 1);  // q, k, v, o, fc, proj; the head
    tt_profile_totals t = tt_profiler_totals();
    double total = (double)(t.forward_flops + t.backward_flops);
    double analytic = (double)(matmul + attention);
    ck_assert_msg(total >= analytic && total <= 1.01 * analytic,
                  "table %.0f vs analytic %.0f FLOPs (%.3f%%)", total, analytic,
                  100.0 * (total / analytic - 1));
    tt_optim_free(&o);
    tt_gpt_free(&m);
}
END_TEST

START_TEST(test_profiling_leaves_the_losses_bitwise_the_same) {
    double losses[2][3];
    for (int run = 0; run < 2; run++) {
        tt_gpt m;
        gpt_make(&m);
        tt_optim o;
        tt_optim_init(&o, tt_adamw_config(1e-3));
        tt_optim_add_decay_groups(&o, &m.params, 0.1);
        if (run == 1) {
            tt_profiler_set_trace(true);
            tt_profiler_begin();
        }
        for (int s = 0; s < 3; s++) losses[run][s] = gpt_step(&m, &o, 10 + (uint64_t)s);
        tt_profiler_end();
        tt_optim_free(&o);
        tt_gpt_free(&m);
    }
    for (int s = 0; s < 3; s++)
        ck_assert_msg(memcmp(&losses[0][s], &losses[1][s], sizeof(double)) == 0,
                      "step %d: %.17g off vs %.17g on", s + 1, losses[0][s], losses[1][s]);
    ck_assert_int_gt(tt_profiler_totals().events, 0);
}
END_TEST

// ---- the model summary ----

START_TEST(test_summary_of_the_gpt) {
    tt_gpt m;
    gpt_make(&m);
    tt_scope_begin();
    tt_tensor *x, *y;
    gpt_batch(3, &x, &y);
    // The profiler's forward FLOPs of tt_gpt_forward, and figures that must survive the summary.
    tt_profiler_begin();
    tt_gpt_forward(&m, x);
    int64_t calls = tt_profiler_totals().calls;
    int64_t fwd = tt_profiler_totals().forward_flops;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    tt_model_stats st = tt_model_summary(f, tt_gpt_module(&m), x);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert(tt_profiler_enabled());  // still running, its figures unchanged
    ck_assert_int_eq(tt_profiler_totals().calls, calls);
    tt_profiler_end();
    ck_assert_int_eq(st.params, tt_params_numel(&m.params));
    ck_assert_int_eq(st.params, tt_gpt_num_params(&m, false));
    ck_assert_int_eq(st.trainable_params, st.params);
    ck_assert_int_eq(st.param_bytes, 4 * st.params);
    ck_assert_int_eq(st.forward_flops, fwd);
    ck_assert_int_eq(st.out_ndim, 3);
    ck_assert_int_eq(st.out_shape[0], B);
    ck_assert_int_eq(st.out_shape[1], T);
    ck_assert_int_eq(st.out_shape[2], V);
    // Under grad mode the graph keeps at least the logits and every block's input.
    ck_assert_int_ge(st.activation_bytes, (int64_t)4 * B * T * (V + L * C));
    ck_assert_msg(strstr(buf, "blocks.1.attn.q_proj") == NULL &&  // names are shown per level
                  strstr(buf, "  wte (Embedding)") && strstr(buf, "q_proj (Linear)") &&
                  strstr(buf, "head (TiedHead)") && strstr(buf, "(2, 32, 40)") &&
                  strstr(buf, "262,144"),  // q_proj: 256 x 256
                  "summary:\n%s", buf);
    free(buf);
    tt_scope_end();
    tt_gpt_free(&m);
}
END_TEST

// A module whose children are named "blocks.0" and "blocks.1" (dots in a child's name):
// each row shows the name the parent gave, not only what follows its last dot.
typedef struct two_blocks {
    tt_nn_linear l[2];
} two_blocks;

static tt_tensor *two_blocks_fwd(void *self, tt_tensor *x) {
    two_blocks *m = self;
    return tt_nn_linear_forward(&m->l[1], tt_nn_linear_forward(&m->l[0], x));
}
static void two_blocks_children(void *self, tt_module_visit visit, void *ctx) {
    two_blocks *m = self;
    visit(tt_nn_linear_module(&m->l[0]), "blocks.0", ctx);
    visit(tt_nn_linear_module(&m->l[1]), "blocks.1", ctx);
}
static const tt_module_ops two_blocks_ops = {.type = "TwoBlocks", .forward = two_blocks_fwd,
                                             .children = two_blocks_children, .chain = true};

START_TEST(test_summary_dotted_child_names) {
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    two_blocks m;
    tt_nn_linear_init(&m.l[0], 4, 6, true, &rng);
    tt_nn_linear_init(&m.l[1], 6, 2, true, &rng);
    tt_scope_begin();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    tt_model_stats st = tt_model_summary(f, (tt_module){&m, &two_blocks_ops},
                                         tt_ones(TT_F32, TT_SHAPE(3, 4)));
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(st.params, 4 * 6 + 6 + 6 * 2 + 2);
    ck_assert_msg(strstr(buf, "\n  blocks.0 (Linear)                      (3, 6)") &&
                  strstr(buf, "\n  blocks.1 (Linear)                      (3, 2)"),
                  "summary:\n%s", buf);
    free(buf);
    tt_scope_end();
    tt_nn_linear_free(&m.l[1]);
    tt_nn_linear_free(&m.l[0]);
}
END_TEST

// A Sequential gets a row per child, each with its own FLOPs: Linear 2 B in out + B out.
START_TEST(test_summary_of_a_sequential) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear l1, l2;
    tt_nn_linear_init(&l1, 5, 16, true, &rng);
    tt_nn_linear_init(&l2, 16, 3, false, &rng);
    tt_nn_sequential net;
    tt_nn_sequential_init(&net);
    tt_nn_sequential_add(&net, tt_nn_linear_module(&l1));
    tt_nn_sequential_add(&net, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&net, tt_nn_linear_module(&l2));
    tt_params p;
    tt_params_init(&p);
    tt_nn_sequential_params(&net, &p, NULL);
    tt_scope_begin();
    tt_tensor *x = tt_ones(TT_F32, TT_SHAPE(4, 5));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    tt_no_grad_begin();
    tt_model_stats st = tt_model_summary(f, tt_nn_sequential_module(&net), x);
    tt_no_grad_end();
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(st.params, tt_params_numel(&p));
    ck_assert_int_eq(st.params, 5 * 16 + 16 + 16 * 3);
    int64_t flops1 = 2 * 4 * 5 * 16 + 4 * 16, flops2 = 2 * 4 * 16 * 3;
    ck_assert_int_eq(st.forward_flops, flops1 + 4 * 16 + flops2);
    ck_assert_int_eq(st.out_shape[0], 4);
    ck_assert_int_eq(st.out_shape[1], 3);
    ck_assert_msg(strstr(buf, "  0 (Linear)                             (4, 16)") &&
                  strstr(buf, "  2 (Linear)                             (4, 3)") &&
                  strstr(buf, "(no grad)") && strstr(buf, "           96 "),  // 0's parameters
                  "summary:\n%s", buf);
    free(buf);
    tt_scope_end();
    ck_assert_int_eq(tt_profiler_totals().calls, 0);  // the summary left no figures behind
    tt_params_free(&p);
    tt_nn_sequential_free(&net);
    tt_nn_linear_free(&l2);
    tt_nn_linear_free(&l1);
}
END_TEST

// ---- misuse ----

START_TEST(test_report_to_null_aborts) {
    tt_expect_abort("FILE is NULL");
    tt_profiler_report(NULL);
}
END_TEST

START_TEST(test_op_out_of_range_aborts) {
    tt_expect_abort("invalid op");
    tt_profiler_op(TT_OP_COUNT);
}
END_TEST

int main(void) {
    Suite *s = suite_create("profiler");
    TCase *tc = tt_tcase("profiler");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_json_checker_rejects_bad_json);
    tcase_add_test(tc, test_counts_flops_bytes_by_hand);
    tcase_add_test(tc, test_conv_flops_by_hand);
    tcase_add_test(tc, test_report_lists_the_ops);
    tcase_add_test(tc, test_trace_is_json_with_one_event_per_op);
    tcase_add_test(tc, test_trace_to_a_bad_path_is_an_error);
    tcase_add_test(tc, test_gpt_step_flops_match_the_analytic_count);
    tcase_add_test(tc, test_profiling_leaves_the_losses_bitwise_the_same);
    tcase_add_test(tc, test_summary_of_the_gpt);
    tcase_add_test(tc, test_summary_of_a_sequential);
    tcase_add_test(tc, test_summary_dotted_child_names);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_profiler");
    tcase_add_test_raise_signal(ab, test_report_to_null_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_op_out_of_range_aborts, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
