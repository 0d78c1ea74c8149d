// Check suite of what a file can make the library allocate and what happens when memory runs
// out: the machine-memory query, the out-of-memory hook, the GPT memory estimate, weights that
// are not finite refused at load (checkpoint and GPT-2 safetensors), sampling restricted to a
// tokenizer's ids (a padded vocab), and an IDX header larger than the machine's memory.
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "test_util.h"
#include "data/idx.h"
#include "models/gpt/gpt.h"

static tt_gpt_config tiny_config(void) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 11;
    c.block_size = 8;
    c.n_layer = 2;
    c.n_head = c.n_kv_head = 2;
    c.n_embd = 8;
    return c;
}

// A temp path under the test's own name.
static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/tt_model_safety_%ld_%s", (long)getpid(), name);
}

// ---- memory ----

START_TEST(test_memory_limit) {
    const char *what = NULL;
    int64_t lim = tt_memory_limit(&what);
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    ck_assert(lim > 0 && lim <= (int64_t)pages * size);
    ck_assert(what != NULL);
    ck_assert(strcmp(what, "physical memory") == 0 || strcmp(what, "ulimit -v") == 0 ||
              strcmp(what, "cgroup memory.max") == 0);
}
END_TEST

// A failed allocation reaches the hook with its one line. Not under ASan, which reports a
// 2^62-byte request itself instead of returning NULL.
#if !defined(__SANITIZE_ADDRESS__)
static jmp_buf oom_jump;
static char oom_message[512];

static void oom_catch(const char *message, void *ctx) {
    (void)ctx;
    snprintf(oom_message, sizeof oom_message, "%s", message);
    longjmp(oom_jump, 1);
}

START_TEST(test_oom_hook) {
    tt_oom_hook prev = tt_set_oom_hook(oom_catch, NULL);
    ck_assert(prev == NULL);
    oom_message[0] = 0;
    if (setjmp(oom_jump) == 0) {
        void *p = TT_MALLOC((size_t)1 << 62);
        tt_free(p);
        ck_abort_msg("a 2^62-byte allocation succeeded");
    }
    tt_set_oom_hook(NULL, NULL);
    ck_assert_msg(strstr(oom_message, "out of memory: tt_malloc could not allocate "
                                      "4611686018427387904 bytes") != NULL, "%s", oom_message);
    ck_assert_msg(strstr(oom_message, "test_model_safety.c:") != NULL, "%s", oom_message);
}
END_TEST

// Without a hook the failure aborts with the same message (a library user's default).
START_TEST(test_abort_oom_default) {
    tt_expect_abort("out of memory: tt_malloc could not allocate");
    tt_free(TT_MALLOC((size_t)1 << 62));
}
END_TEST
#endif

START_TEST(test_gpt_memory_estimate) {
    tt_gpt_config c = tiny_config();
    double P = (double)tt_gpt_config_num_params(&c, false);
    // parameters, grads, AdamW: 16 P; masks 4 L N^2; activations 4 B T (14 C L + 2 V).
    double train = 16 * P + 4.0 * 2 * 64 + 4.0 * 3 * 8 * (14.0 * 8 * 2 + 2 * 11);
    ck_assert_double_eq_tol(tt_gpt_memory_estimate(&c, 3, 8, true), train, 1e-6);
    double fwd = 4 * P + 4.0 * 2 * 64 + 4.0 * 3 * 8 * (11 + 2.0 * 8 * 2 + 4 * 8) +
                 8.0 * 2 * 8 * 8;
    ck_assert_double_eq_tol(tt_gpt_memory_estimate(&c, 3, 8, false), fwd, 1e-6);
    ck_assert_int_eq(tt_gpt_check_memory(&c, 3, 8, true, "training"), TT_OK);
    c.n_layer = 64;
    c.n_embd = 4096;
    c.n_head = c.n_kv_head = 32;
    if (tt_gpt_memory_estimate(&c, 12, 8, true) <= (double)tt_memory_limit(NULL)) return;
    ck_assert_int_eq(tt_gpt_check_memory(&c, 12, 8, true, "training"), TT_ERR_NOMEM);
    ck_assert_msg(strstr(tt_last_error(), "training needs at least 193.3 GiB (12.89B "
                                          "parameters") != NULL, "%s", tt_last_error());
}
END_TEST

// ---- weights that are not finite ----

// Sets element i of the named parameter to v.
static void poison(tt_gpt *m, const char *name, int64_t i, float v) {
    tt_tensor *t = tt_params_get(&m->params, name);
    ck_assert(t != NULL);
    ((float *)tt_data(t))[i] = v;
}

START_TEST(test_checkpoint_nan_refused) {
    tt_gpt_config c = tiny_config();
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m, back;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    ck_assert_int_eq(tt_gpt_check_finite(&m), TT_OK);
    poison(&m, "blocks.1.mlp.fc.weight", 5, NAN);
    ck_assert_int_eq(tt_gpt_check_finite(&m), TT_ERR_FORMAT);
    char path[256];
    tmp_path(path, sizeof path, "nan.ckpt");
    ck_assert_int_eq(tt_gpt_save(path, &m, NULL, NULL), TT_OK);
    ck_assert_int_eq(tt_gpt_load(path, &back, NULL), TT_ERR_FORMAT);
    ck_assert_msg(strstr(tt_last_error(), "tensor 'blocks.1.mlp.fc.weight' holds NaN at "
                                          "element 5 of 256") != NULL, "%s", tt_last_error());
    ck_assert(back.params.n == 0);  // zeroed
    poison(&m, "blocks.1.mlp.fc.weight", 5, 0.5f);
    poison(&m, "wte.weight", 3, -INFINITY);
    ck_assert_int_eq(tt_gpt_save(path, &m, NULL, NULL), TT_OK);
    ck_assert_int_eq(tt_gpt_load(path, &back, NULL), TT_ERR_FORMAT);
    ck_assert_msg(strstr(tt_last_error(), "'wte.weight' holds an infinity") != NULL, "%s",
                  tt_last_error());
    unlink(path);
    tt_gpt_free(&m);
}
END_TEST

START_TEST(test_safetensors_nan_refused) {
    tt_gpt_config c = tiny_config();
    c.bias = true;
    c.activation = TT_ACT_GELU_TANH;
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_gpt m, back;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    char path[256];
    tmp_path(path, sizeof path, "ok.safetensors");
    ck_assert_int_eq(tt_gpt_save_hf(&m, path, TT_ST_F32), TT_OK);
    ck_assert_int_eq(tt_gpt_load_hf(&back, path, 0), TT_OK);  // finite: loads
    tt_gpt_free(&back);
    poison(&m, "ln_f.bias", 2, NAN);
    ck_assert_int_eq(tt_gpt_save_hf(&m, path, TT_ST_F32), TT_OK);
    ck_assert_int_eq(tt_gpt_load_hf(&back, path, 0), TT_ERR_FORMAT);
    ck_assert_msg(strstr(tt_last_error(), "tensor 'ln_f.bias' holds NaN") != NULL, "%s",
                  tt_last_error());
    ck_assert(back.params.n == 0);
    unlink(path);
    tt_gpt_free(&m);
}
END_TEST

// ---- a padded vocab ----

START_TEST(test_sample_n_vocab) {
    tt_scope_begin();
    // ids 3 and 4 (the padding) have the largest logits; ids 0 .. 2 are the tokenizer's.
    tt_tensor *l = tt_from_data(TT_F32, TT_SHAPE(5), (const float[]){0.5f, 1, 0, 9, NAN});
    tt_sample_opts o = tt_sample_opts_default();
    o.temperature = 0;
    o.n_vocab = 3;
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    ck_assert_int_eq(tt_sample_logits(l, &o, &rng), 1);
    o.temperature = 1;
    o.top_k = 0;
    int count[3] = {0};
    for (int i = 0; i < 2000; i++) {
        int32_t t = tt_sample_logits(l, &o, &rng);
        ck_assert(t >= 0 && t < 3);
        count[t]++;
    }
    ck_assert(count[0] > 0 && count[1] > count[0] && count[2] > 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_abort_negative_n_vocab) {
    tt_expect_abort("n_vocab must be >= 0");
    tt_scope_begin();
    tt_tensor *l = tt_from_data(TT_F32, TT_SHAPE(2), (const float[]){0, 1});
    tt_sample_opts o = tt_sample_opts_default();
    o.n_vocab = -1;
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_sample_logits(l, &o, &rng);
    tt_scope_end();
}
END_TEST

// ---- IDX ----

START_TEST(test_idx_header_beyond_memory) {
    char path[256];
    tmp_path(path, sizeof path, "bomb.idx.gz");
    // (65535, 65536, 65536) bytes declared; the file holds a 16-byte header.
    const unsigned char h[16] = {0, 0, 8, 3, 0, 0, 0xff, 0xff, 0, 1, 0, 0, 0, 1, 0, 0};
    gzFile f = gzopen(path, "wb");
    ck_assert(f != NULL);
    ck_assert_int_eq(gzwrite(f, h, sizeof h), (int)sizeof h);
    gzclose(f);
    tt_tensor *t = NULL;
    ck_assert_int_eq(tt_idx_load(path, &t), TT_ERR_NOMEM);
    ck_assert(t == NULL);
    ck_assert_msg(strstr(tt_last_error(), "declares 281470681743360 elements") != NULL &&
                  strstr(tt_last_error(), "this machine allows") != NULL, "%s",
                  tt_last_error());
    unlink(path);
}
END_TEST

int main(void) {
    Suite *s = suite_create("model_safety");
    TCase *tc = tt_tcase("model_safety");
    tcase_add_test(tc, test_memory_limit);
#if !defined(__SANITIZE_ADDRESS__)
    tcase_add_test(tc, test_oom_hook);
#endif
    tcase_add_test(tc, test_gpt_memory_estimate);
    tcase_add_test(tc, test_checkpoint_nan_refused);
    tcase_add_test(tc, test_safetensors_nan_refused);
    tcase_add_test(tc, test_sample_n_vocab);
    tcase_add_test(tc, test_idx_header_beyond_memory);
    suite_add_tcase(s, tc);

    TCase *ab = tt_tcase_aborts("aborts_model_safety");
#if !defined(__SANITIZE_ADDRESS__)
    tcase_add_test_raise_signal(ab, test_abort_oom_default, SIGABRT);
#endif
    tcase_add_test_raise_signal(ab, test_abort_negative_n_vocab, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
