// Check suite of the thread pool (tensor/threads.c, tensor/parallel.h): every index of a
// parallel loop runs exactly once for 1..8 threads and any grain, fixed chunks are the
// documented ranges (one share per thread with tt__parallel_shares), nested loops and loops
// from two threads at once run serially and completely, a forked child can still run loops,
// the thread count and its abort; and matmul and attention give the same bits on 1, 2 and 3
// threads.
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"
#include "tensor/parallel.h"

// ---- every index exactly once ----

typedef struct hits {
    atomic_int *count;  // (n,) times each index ran
    atomic_int calls;   // fn calls (chunks)
    atomic_int bad_index;  // calls that saw tt__thread_index() outside [0, threads)
    int threads;
} hits;

static void count_range(void *ctx, int64_t lo, int64_t hi) {
    hits *h = ctx;
    atomic_fetch_add(&h->calls, 1);
    int t = tt__thread_index();
    if (t < 0 || t >= h->threads) atomic_fetch_add(&h->bad_index, 1);
    for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&h->count[i], 1);
}

// Runs a loop of n iterations with the given grain on the given threads and asserts each
// index ran once, in at most ceil(n / grain) chunks.
static void check_once(int threads, int64_t n, int64_t grain) {
    tt_set_num_threads(threads);
    hits h = {.count = calloc((size_t)n + 1, sizeof(atomic_int)), .threads = threads};
    tt__parallel_for(n, grain, count_range, &h);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++) wrong += atomic_load(&h.count[i]) != 1;
    ck_assert_msg(wrong == 0, "threads %d, n %lld, grain %lld: %lld indices not run exactly once",
                  threads, (long long)n, (long long)grain, (long long)wrong);
    ck_assert_int_le(atomic_load(&h.calls), n == 0 ? 0 : (n + grain - 1) / grain);
    ck_assert_int_eq(atomic_load(&h.bad_index), 0);
    free(h.count);
}

START_TEST(test_every_index_once) {
    int prev = tt_get_num_threads();
    static const int64_t ns[] = {0, 1, 2, 7, 64, 1000, 100003};
    static const int64_t grains[] = {1, 3, 1000, 1 << 20};
    for (int threads = 1; threads <= 8; threads++)
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (size_t b = 0; b < sizeof grains / sizeof grains[0]; b++)
                check_once(threads, ns[a], grains[b]);
    // many loops in a row on the same workers (each publishes a new job)
    for (int rep = 0; rep < 2000; rep++) check_once(2 + rep % 3, 37 + rep % 50, 1);
    tt_set_num_threads(prev);
}
END_TEST

// Back-to-back loops on the same two threads whose chunk counts grow and shrink: a worker
// still leaving the last loop (every chunk taken) must not take a chunk of the next one, which
// has more chunks, before it opens (that ran a chunk twice and hung the caller).
START_TEST(test_back_to_back_loops) {
    int prev = tt_get_num_threads();
    tt_set_num_threads(2);
    int64_t wrong = 0;
    atomic_int count[48];
    for (int rep = 0; rep < 50000 && wrong == 0; rep++) {
        int64_t n = 1 + (rep * 7) % 41;
        for (int64_t i = 0; i < n; i++) atomic_store(&count[i], 0);
        hits h = {.count = count, .threads = 2};
        tt__parallel_for(n, 1, count_range, &h);
        for (int64_t i = 0; i < n; i++) wrong += atomic_load(&count[i]) != 1;
    }
    ck_assert_msg(wrong == 0, "%lld indices not run exactly once", (long long)wrong);
    tt_set_num_threads(prev);
}
END_TEST

// ---- fixed chunks ----

typedef struct chunk_log {
    int64_t lo[16], hi[16];
    atomic_int seen[16];
    int64_t n, nchunks;
    atomic_int strays;  // calls whose range is not one documented chunk
} chunk_log;

static void log_chunk(void *ctx, int64_t lo, int64_t hi) {
    chunk_log *l = ctx;
    for (int64_t c = 0; c < l->nchunks; c++)
        if (lo == c * l->n / l->nchunks && hi == (c + 1) * l->n / l->nchunks) {
            atomic_fetch_add(&l->seen[c], 1);
            return;
        }
    atomic_fetch_add(&l->strays, 1);
}

START_TEST(test_fixed_chunks) {
    int prev = tt_get_num_threads();
    for (int threads = 1; threads <= 4; threads++) {
        tt_set_num_threads(threads);
        for (int64_t nchunks = 1; nchunks <= 16; nchunks++) {
            chunk_log l = {.n = 1000 + nchunks, .nchunks = nchunks};
            tt__parallel_chunks(l.n, nchunks, log_chunk, &l);
            ck_assert_int_eq(atomic_load(&l.strays), 0);
            for (int64_t c = 0; c < nchunks; c++) ck_assert_int_eq(atomic_load(&l.seen[c]), 1);
        }
    }
    tt_set_num_threads(prev);
}
END_TEST

// tt__parallel_shares: one contiguous share per thread, as chunks of that count (fewer when n
// is smaller), each index once; n = 0 calls nothing.
START_TEST(test_shares) {
    int prev = tt_get_num_threads();
    for (int threads = 1; threads <= 4; threads++) {
        tt_set_num_threads(threads);
        for (int64_t n = 0; n <= 9; n++) {
            int64_t nchunks = n < threads ? n : threads;
            chunk_log l = {.n = n, .nchunks = nchunks > 0 ? nchunks : 1};
            tt__parallel_shares(n, log_chunk, &l);
            ck_assert_int_eq(atomic_load(&l.strays), 0);
            for (int64_t c = 0; c < nchunks; c++) ck_assert_int_eq(atomic_load(&l.seen[c]), 1);
            hits h = {.count = calloc((size_t)n + 1, sizeof(atomic_int)), .threads = threads};
            tt__parallel_shares(n, count_range, &h);
            for (int64_t i = 0; i < n; i++) ck_assert_int_eq(atomic_load(&h.count[i]), 1);
            ck_assert_int_eq(atomic_load(&h.calls), nchunks);
            free(h.count);
        }
    }
    tt_set_num_threads(prev);
}
END_TEST

// ---- nesting ----

typedef struct nest {
    atomic_int *count;      // (N_OUTER * N_INNER,)
    atomic_int inner_threads_not_1;
} nest;

enum { N_OUTER = 40, N_INNER = 50 };

typedef struct inner_ctx {
    nest *n;
    int64_t row;
} inner_ctx;

static void inner_range(void *ctx, int64_t lo, int64_t hi) {
    inner_ctx *ic = ctx;
    for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&ic->n->count[ic->row * N_INNER + i], 1);
}

static void outer_range(void *ctx, int64_t lo, int64_t hi) {
    nest *n = ctx;
    if (tt__kernel_threads() != 1) atomic_fetch_add(&n->inner_threads_not_1, 1);
    for (int64_t r = lo; r < hi; r++) {
        inner_ctx ic = {n, r};
        tt__parallel_for(N_INNER, 1, inner_range, &ic);  // runs on this thread
    }
}

START_TEST(test_nested_loops_run_serially) {
    int prev = tt_get_num_threads();
    for (int threads = 1; threads <= 4; threads++) {
        tt_set_num_threads(threads);
        nest n = {.count = calloc(N_OUTER * N_INNER, sizeof(atomic_int))};
        tt__parallel_for(N_OUTER, 1, outer_range, &n);
        for (int i = 0; i < N_OUTER * N_INNER; i++) ck_assert_int_eq(atomic_load(&n.count[i]), 1);
        ck_assert_int_eq(atomic_load(&n.inner_threads_not_1), 0);
        ck_assert_int_eq(tt__kernel_threads(), threads);  // back outside the loop
        free(n.count);
    }
    tt_set_num_threads(prev);
}
END_TEST

// ---- two user threads at once ----

static void *loops_from_thread(void *arg) {
    hits *h = arg;
    for (int rep = 0; rep < 300; rep++) tt__parallel_for(5000, 7, count_range, h);
    return NULL;
}

START_TEST(test_two_callers_at_once) {
    int prev = tt_get_num_threads();
    tt_set_num_threads(2);
    hits h[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        h[i] = (hits){.count = calloc(5000, sizeof(atomic_int)), .threads = 2};
        ck_assert_int_eq(pthread_create(&th[i], NULL, loops_from_thread, &h[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        for (int j = 0; j < 5000; j++) ck_assert_int_eq(atomic_load(&h[i].count[j]), 300);
        ck_assert_int_eq(atomic_load(&h[i].bad_index), 0);
        free(h[i].count);
    }
    tt_set_num_threads(prev);
}
END_TEST

// ---- fork ----

START_TEST(test_forked_child_runs_loops) {
    int prev = tt_get_num_threads();
    tt_set_num_threads(3);
    check_once(3, 10000, 1);  // the workers exist now
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {  // the child has no workers: its loops must still complete
        hits h = {.count = calloc(10000, sizeof(atomic_int)), .threads = 3};
        tt__parallel_for(10000, 1, count_range, &h);
        int ok = 1;
        for (int i = 0; i < 10000; i++) ok &= atomic_load(&h.count[i]) == 1;
        tt_set_num_threads(2);  // shrinking joins no thread that is not there
        tt__parallel_for(10000, 1, count_range, &h);
        for (int i = 0; i < 10000; i++) ok &= atomic_load(&h.count[i]) == 2;
        _exit(ok ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    tt_set_num_threads(prev);
}
END_TEST

// ---- the thread count ----

START_TEST(test_set_get_num_threads) {
    int prev = tt_get_num_threads();
    ck_assert_int_ge(prev, 1);
    tt_set_num_threads(3);
    ck_assert_int_eq(tt_get_num_threads(), 3);
    ck_assert_int_eq(tt__kernel_threads(), 3);
    tt_set_num_threads(1);
    ck_assert_int_eq(tt__kernel_threads(), 1);
    tt_set_num_threads(prev);
}
END_TEST

START_TEST(test_zero_threads_aborts) {
    tt_expect_abort("the thread count must be at least 1, got 0");
    tt_set_num_threads(0);
}
END_TEST

// ---- kernels: the same bits on 1, 2 and 3 threads ----

static uint64_t rng_state = 7;

static tt_tensor *rand_tensor(tt_dtype dt, int ndim, const int64_t *shape) {
    tt_rng r;
    tt_rng_seed(&r, rng_state++);
    return tt_uniform(&r, dt, ndim, shape, -1, 1);
}

// matmul, its gradients and attention forward + backward on `threads`; out gets copies.
static void run_kernels(int threads, tt_dtype dt, tt_tensor **out) {
    tt_set_num_threads(threads);
    rng_state = 7;
    tt_tensor *a = tt_set_requires_grad(rand_tensor(dt, TT_SHAPE(300, 200)), true);
    tt_tensor *b = tt_set_requires_grad(rand_tensor(dt, TT_SHAPE(200, 130)), true);
    tt_tensor *q = tt_set_requires_grad(rand_tensor(dt, TT_SHAPE(2, 4, 70, 16)), true);
    tt_tensor *k = tt_set_requires_grad(rand_tensor(dt, TT_SHAPE(2, 4, 70, 16)), true);
    tt_tensor *v = tt_set_requires_grad(rand_tensor(dt, TT_SHAPE(2, 4, 70, 16)), true);
    tt_tensor *c = tt_matmul(a, b);
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.25);
    tt_backward(tt_add(tt_sum_all(tt_mul(c, c)), tt_sum_all(tt_mul(y, y))));
    tt_tensor *all[] = {c, y, a->grad, b->grad, q->grad, k->grad, v->grad};
    for (int i = 0; i < 7; i++) out[i] = tt_keep(tt_clone(all[i]));
}

START_TEST(test_kernels_same_bits_any_thread_count) {
    int prev = tt_get_num_threads();
    for (int d = 0; d < 2; d++) {
        tt_dtype dt = d == 0 ? TT_F32 : TT_F64;
        tt_tensor *ref[7], *got[7];
        tt_scope_begin();
        run_kernels(1, dt, ref);
        tt_scope_end();
        for (int threads = 2; threads <= 3; threads++) {
            tt_scope_begin();
            run_kernels(threads, dt, got);
            tt_scope_end();
            for (int i = 0; i < 7; i++) {
                ck_assert_int_eq(tt_numel(ref[i]), tt_numel(got[i]));
                ck_assert_msg(memcmp(tt_data(ref[i]), tt_data(got[i]),
                                     (size_t)tt_numel(ref[i]) * tt_dtype_size(dt)) == 0,
                              "%s result %d differs on %d threads", tt_dtype_name(dt), i,
                              threads);
                tt_release(got[i]);
            }
        }
        for (int i = 0; i < 7; i++) tt_release(ref[i]);
    }
    tt_set_num_threads(prev);
}
END_TEST

int main(void) {
    Suite *s = suite_create("pool");
    TCase *tc = tt_tcase("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_index_once);
    tcase_add_test(tc, test_back_to_back_loops);
    tcase_add_test(tc, test_fixed_chunks);
    tcase_add_test(tc, test_shares);
    tcase_add_test(tc, test_nested_loops_run_serially);
    tcase_add_test(tc, test_two_callers_at_once);
    tcase_add_test(tc, test_forked_child_runs_loops);
    tcase_add_test(tc, test_set_get_num_threads);
    tcase_add_test(tc, test_kernels_same_bits_any_thread_count);
    suite_add_tcase(s, tc);
    TCase *ta = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ta, test_zero_threads_aborts, SIGABRT);
    suite_add_tcase(s, ta);
    return tt_test_run(s);
}
