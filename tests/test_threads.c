// Tensors shared between threads (tensor.h, "threads and shared tensors"): forwards that read
// one requires-grad weight, no-grad forwards through views of one tensor, and backwards into
// one leaf, each on several POSIX threads at once, against the single-threaded values.
#include "test_util.h"

#include <pthread.h>

#define NTHREADS 4
#define ITERS 2000

typedef struct job {
    tt_tensor *shared;  // borrowed: the main thread owns it until every thread is joined
    double expect;      // the single-threaded value of each iteration
    int bad;            // iterations whose value differed
} job;

static void run_threads(void *(*fn)(void *), job *jobs) {
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, fn, &jobs[i]), 0);
    for (int i = 0; i < NTHREADS; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
}

// (8, 8) with integer values (-3 .. 3): every sum below is exact in f32.
static tt_tensor *int_matrix(int seed) {
    float v[64];
    for (int i = 0; i < 64; i++) v[i] = (float)((i * 7 + seed * 3) % 7 - 3);
    return tt_from_data(TT_F32, TT_SHAPE(8, 8), v);
}

// ---- forwards reading one shared weight that requires grad ----

// sum(relu(x @ w) + x), with the graph recorded: every op retains and releases w.
static double forward_value(tt_tensor *w, int seed) {
    tt_scope_begin();
    tt_tensor *x = int_matrix(seed);
    double v = tt_item(tt_sum_all(tt_add(tt_relu(tt_matmul(x, w)), x)));
    tt_scope_end();
    return v;
}

static void *forward_worker(void *arg) {
    job *j = arg;
    for (int it = 0; it < ITERS; it++)
        if (forward_value(j->shared, 1) != j->expect) j->bad++;
    return NULL;
}

START_TEST(test_threads_forward_shared_weight) {
    tt_tensor *w = tt_set_requires_grad(int_matrix(5), true);
    job jobs[NTHREADS] = {{0}};
    double expect = forward_value(w, 1);
    for (int i = 0; i < NTHREADS; i++) jobs[i] = (job){w, expect, 0};
    run_threads(forward_worker, jobs);
    for (int i = 0; i < NTHREADS; i++) ck_assert_int_eq(jobs[i].bad, 0);
    ck_assert_int_eq(w->refcount, 1);
    ck_assert_ptr_null(w->grad);
    tt_release(w);
}
END_TEST

// ---- no-grad forwards through views of one shared tensor ----

// Views (transpose, narrow, reshape) of s, and ops on them, with grad mode off.
static double view_value(tt_tensor *s) {
    bool prev = tt_set_grad_enabled(false);
    tt_scope_begin();
    tt_tensor *t = tt_transpose(s, 0, 1);
    tt_tensor *n = tt_narrow(t, 0, 2, 4);       // (4, 8)
    tt_tensor *r = tt_reshape(n, TT_SHAPE(8, 4));
    double v = tt_item(tt_sum_all(tt_mul(tt_matmul(n, r), tt_scalar(TT_F32, 2))));
    tt_scope_end();
    tt_set_grad_enabled(prev);
    return v;
}

static void *view_worker(void *arg) {
    job *j = arg;
    for (int it = 0; it < ITERS; it++)
        if (view_value(j->shared) != j->expect) j->bad++;
    return NULL;
}

START_TEST(test_threads_no_grad_views_of_shared_tensor) {
    tt_tensor *s = int_matrix(2);
    job jobs[NTHREADS] = {{0}};
    double expect = view_value(s);
    for (int i = 0; i < NTHREADS; i++) jobs[i] = (job){s, expect, 0};
    run_threads(view_worker, jobs);
    for (int i = 0; i < NTHREADS; i++) ck_assert_int_eq(jobs[i].bad, 0);
    ck_assert_int_eq(s->refcount, 1);
    ck_assert_int_eq(s->storage->refcount, 1);
    tt_release(s);
}
END_TEST

// ---- backwards into one shared leaf ----

// One backward of sum(w * c + x @ w) into w: its gradient is c + x^T @ ones, integers.
static void backward_once(tt_tensor *w, int seed) {
    tt_scope_begin();
    tt_tensor *c = int_matrix(seed), *x = int_matrix(seed + 1);
    tt_backward(tt_sum_all(tt_add(tt_mul(w, c), tt_matmul(x, w))));
    tt_scope_end();
}

static void *backward_worker(void *arg) {
    job *j = arg;
    for (int it = 0; it < ITERS; it++) backward_once(j->shared, 3);
    return NULL;
}

START_TEST(test_threads_backward_into_shared_leaf) {
    tt_tensor *w = tt_set_requires_grad(int_matrix(4), true);
    backward_once(w, 3);  // the gradient of one backward
    tt_tensor *one = w->grad;
    w->grad = NULL;
    job jobs[NTHREADS] = {{0}};
    for (int i = 0; i < NTHREADS; i++) jobs[i] = (job){w, 0, 0};
    run_threads(backward_worker, jobs);
    // Every addition arrived: NTHREADS * ITERS times the one gradient, exactly.
    ck_assert_ptr_nonnull(w->grad);
    int bad = 0;
    for (int64_t i = 0; i < 64; i++)
        bad += tt_at(w->grad, i) != (double)NTHREADS * ITERS * tt_at(one, i);
    ck_assert_int_eq(bad, 0);
    ck_assert_int_eq(w->refcount, 1);
    tt_release(one);
    tt_release(w);
}
END_TEST

int main(void) {
    Suite *s = suite_create("threads");
    TCase *tc = tt_tcase("shared_tensors");
    tcase_add_test(tc, test_threads_forward_shared_weight);
    tcase_add_test(tc, test_threads_no_grad_views_of_shared_tensor);
    tcase_add_test(tc, test_threads_backward_into_shared_leaf);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}
