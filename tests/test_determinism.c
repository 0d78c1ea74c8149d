// Check suite of training-loop reliability on a small GPT (models/gpt, optim, data, checkpoint):
// the live-tensor and live-byte counts return to their baseline after every step; the same seed
// and thread count give bit-identical losses and parameter fingerprints; a run saved after N
// steps and resumed from the file continues with the losses of the uninterrupted run bit for
// bit; 1, 2 and 3 threads give the same bits. Not a speed or accuracy test.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "models/gpt/gpt.h"

// ---- a small training run: B batch, T time ----

enum { B = 4, T = 16, STEPS = 20, RESUME_AT = 10 };

static char tmpdir[64], data_path[96];

// A ~6 KB text with a 30-character vocab, in a fresh temp directory.
static void make_data(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tt_test_det_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(data_path, sizeof data_path, "%s/text.txt", tmpdir);
    FILE *f = fopen(data_path, "w");
    ck_assert_ptr_nonnull(f);
    tt_rng r;
    tt_rng_seed(&r, 8);
    const char *words[] = {"the ", "king ", "and ", "queen ", "of ", "rome, ", "said: ",
                           "speak! ", "night.\n", "lord ", "pray ", "you "};
    for (int i = 0; i < 900; i++) fputs(words[tt_rng_below(&r, 12)], f);
    ck_assert_int_eq(fclose(f), 0);
}

static void remove_data(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/resume.ckpt", tmpdir);
    unlink(path);
    unlink(data_path);
    ck_assert_int_eq(rmdir(tmpdir), 0);
}

typedef struct run {
    tt_text_dataset ds;
    tt_gpt gpt;
    tt_optim opt;
    tt_lr_schedule sched;
    tt_rng data_rng;
    int64_t step;
} run;

// Model, optimizer and data stream from seed (dropout on, so the model's own stream matters).
static void run_init(run *r, uint64_t seed) {
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(tt_dataset_load(&r->ds, data_path, NULL, 0.9), TT_OK);
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = r->ds.vocab.size;
    c.block_size = T;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_kv_head = 2;
    c.n_embd = 32;
    c.dropout = 0.1;
    tt_rng init;
    tt_rng_seed(&init, seed);
    ck_assert_int_eq(tt_gpt_init(&r->gpt, &c, &init), TT_OK);
    tt_gpt_train(&r->gpt, true);
    tt_optim_init(&r->opt, tt_adamw_config(3e-3));
    tt_optim_add_decay_groups(&r->opt, &r->gpt.params, 0.1);
    r->sched = tt_lr_cosine(3e-3, 3, STEPS, 3e-4);
    tt_rng_seed(&r->data_rng, seed ^ 0xDA7A);
}

static void run_free(run *r) {
    tt_optim_free(&r->opt);
    tt_gpt_free(&r->gpt);
    tt_dataset_free(&r->ds);
}

// One AdamW step on a fresh batch, as examples/char_gpt trains; returns the loss.
static double run_step(run *r) {
    tt_optim_set_lr(&r->opt, tt_lr_at(&r->sched, r->step));
    tt_scope_begin();
    tt_tensor *x, *y;
    tt_dataset_batch(&r->ds, TT_SPLIT_TRAIN, B, T, &r->data_rng, &x, &y);  // (B, T) each
    tt_tensor *loss = tt_gpt_loss(&r->gpt, x, y);
    double v = tt_item(loss);
    tt_backward(loss);
    tt_clip_grad_norm(&r->gpt.params, 1.0);
    tt_optim_step(&r->opt);
    tt_optim_zero_grad(&r->opt);
    tt_scope_end();
    r->step++;
    return v;
}

// The fingerprint of the parameters and of the optimizer state.
static uint64_t run_fingerprint(const run *r) {
    tt_params st;
    tt_params_init(&st);
    tt_optim_state(&r->opt, &st);
    uint64_t h = tt_params_fingerprint(&r->gpt.params) * 31 + tt_params_fingerprint(&st);
    tt_params_free(&st);
    return h;
}

static void train(run *r, int64_t until, double *losses) {
    while (r->step < until) {
        int64_t s = r->step;
        losses[s] = run_step(r);
    }
}

static void assert_same_bits(const double *a, const double *b, int n, const char *what) {
    for (int i = 0; i < n; i++)
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof a[i]) == 0, "%s: step %d loss %.17g vs %.17g",
                      what, i + 1, a[i], b[i]);
}

// ---- the live-tensor count per step ----

START_TEST(test_live_counts_return_to_baseline) {
    make_data();
    run r;
    run_init(&r, 1);
    double loss = run_step(&r);  // the first step creates the AdamW state
    ck_assert(isfinite(loss));
    int64_t tensors = tt_live_tensors(), bytes = tt_live_bytes();
    for (int i = 0; i < 12; i++) {
        run_step(&r);
        ck_assert_msg(tt_live_tensors() == tensors && tt_live_bytes() == bytes,
                      "after step %d: %lld tensors, %lld bytes; after step 1: %lld, %lld", i + 2,
                      (long long)tt_live_tensors(), (long long)tt_live_bytes(),
                      (long long)tensors, (long long)bytes);
        // An evaluation pass in between leaves nothing behind either.
        bool g = tt_set_grad_enabled(false);
        tt_gpt_train(&r.gpt, false);
        tt_scope_begin();
        tt_tensor *x, *y;
        tt_dataset_batch(&r.ds, TT_SPLIT_VAL, B, T, &r.data_rng, &x, &y);
        tt_item(tt_gpt_loss(&r.gpt, x, y));
        tt_scope_end();
        tt_gpt_train(&r.gpt, true);
        tt_set_grad_enabled(g);
        ck_assert_int_eq(tt_live_tensors(), tensors);
        ck_assert_int_eq(tt_live_bytes(), bytes);
    }
    run_free(&r);
    remove_data();
}
END_TEST

// ---- determinism ----

START_TEST(test_same_seed_same_bits) {
    make_data();
    double a[STEPS], b[STEPS];
    uint64_t fa, fb;
    run r;
    run_init(&r, 7);
    train(&r, STEPS, a);
    fa = run_fingerprint(&r);
    run_free(&r);
    run_init(&r, 7);
    train(&r, STEPS, b);
    fb = run_fingerprint(&r);
    run_free(&r);
    assert_same_bits(a, b, STEPS, "two runs of seed 7");
    ck_assert_uint_eq(fa, fb);
    // And a different seed does differ (the comparison can fail).
    run_init(&r, 8);
    train(&r, STEPS, b);
    ck_assert_uint_ne(run_fingerprint(&r), fa);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    run_free(&r);
    remove_data();
}
END_TEST

static void rng_put(tt_checkpoint *c, const char *key, const tt_rng *r) {
    unsigned char b[32];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 8; k++) b[8 * i + k] = (unsigned char)(r->s[i] >> (8 * k));
    tt_ckpt_set_bytes(c, key, b, 32);
}

static void rng_get(const tt_checkpoint *c, const char *key, tt_rng *r) {
    const unsigned char *b;
    size_t n;
    ck_assert(tt_ckpt_get_bytes(c, key, &b, &n) && n == 32);
    for (int i = 0; i < 4; i++) {
        r->s[i] = 0;
        for (int k = 0; k < 8; k++) r->s[i] |= (uint64_t)b[8 * i + k] << (8 * k);
    }
}

// Stop after RESUME_AT steps, save everything to a file, free it all, rebuild from another
// seed, restore from the file and finish: the losses of the last steps and the final state
// equal the uninterrupted run's bit for bit.
START_TEST(test_resume_from_file_is_bit_exact) {
    make_data();
    char path[128];
    snprintf(path, sizeof path, "%s/resume.ckpt", tmpdir);
    double full[STEPS], part[STEPS];
    run r;
    run_init(&r, 11);
    train(&r, STEPS, full);
    uint64_t f_full = run_fingerprint(&r);
    run_free(&r);

    run_init(&r, 11);
    train(&r, RESUME_AT, part);
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_add_params(&c, "model.", &r.gpt.params);
    tt_params st;
    tt_params_init(&st);
    tt_optim_state(&r.opt, &st);
    tt_ckpt_add_params(&c, "optim.", &st);
    tt_params_free(&st);
    tt_ckpt_set_i64(&c, "optim.step", r.opt.step);
    tt_ckpt_set_i64(&c, "step", r.step);
    rng_put(&c, "rng.data", &r.data_rng);
    rng_put(&c, "rng.model", &r.gpt.dropout_rng);
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);
    tt_ckpt_free(&c);
    run_free(&r);

    run_init(&r, 12345);  // everything comes from the file
    ck_assert_int_eq(tt_ckpt_load(&c, path), TT_OK);
    tt_params_init(&st);
    tt_optim_state(&r.opt, &st);
    ck_assert_int_eq(tt_ckpt_restore_params(&c, "model.", &r.gpt.params), TT_OK);
    ck_assert_int_eq(tt_ckpt_restore_params(&c, "optim.", &st), TT_OK);
    tt_params_free(&st);
    ck_assert(tt_ckpt_get_i64(&c, "optim.step", &r.opt.step));
    ck_assert(tt_ckpt_get_i64(&c, "step", &r.step));
    rng_get(&c, "rng.data", &r.data_rng);
    rng_get(&c, "rng.model", &r.gpt.dropout_rng);
    tt_ckpt_free(&c);
    ck_assert_int_eq(r.step, RESUME_AT);
    train(&r, STEPS, part);
    assert_same_bits(full, part, STEPS, "resumed vs uninterrupted");
    ck_assert_uint_eq(run_fingerprint(&r), f_full);
    run_free(&r);
    remove_data();
}
END_TEST

// The kernels reduce in a fixed order whatever the thread count, so 1, 2 and 3 threads give
// the same losses and parameters bit for bit.
START_TEST(test_thread_count_same_bits) {
    make_data();
    int prev = tt_get_num_threads();
    double base[STEPS], other[STEPS];
    uint64_t f_base = 0;
    for (int threads = 1; threads <= 3; threads++) {
        tt_set_num_threads(threads);
        run r;
        run_init(&r, 5);
        train(&r, STEPS, threads == 1 ? base : other);
        uint64_t f = run_fingerprint(&r);
        run_free(&r);
        if (threads == 1) {
            f_base = f;
            continue;
        }
        char what[48];
        snprintf(what, sizeof what, "%d threads vs 1", threads);
        assert_same_bits(base, other, STEPS, what);
        ck_assert_msg(f == f_base, "%s: parameter fingerprints differ", what);
    }
    tt_set_num_threads(prev);
    remove_data();
}
END_TEST

int main(void) {
    Suite *s = suite_create("determinism");
    TCase *tc = tt_tcase("training");
    tcase_add_test(tc, test_live_counts_return_to_baseline);
    tcase_add_test(tc, test_same_seed_same_bits);
    tcase_add_test(tc, test_resume_from_file_is_bit_exact);
    tcase_add_test(tc, test_thread_count_same_bits);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}
