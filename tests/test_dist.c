// Check suite of dist/ in one process (rank 0 of 1: the default build, or an MPI build run
// without mpirun): the overlapped all-reduce's begin/end calls prepare once per parameter with
// a gradient, in parameter order, leaves the gradients as prepare made them, and aborts on
// calls out of order. Several ranks: tests/dist_check.c under mpirun (make test MPI=1).
#include <signal.h>

#include "test_util.h"
#include "dist/dist.h"

typedef struct prepare_log {
    int calls;
    int index[4];
} prepare_log;

// Adds index + 1 to the gradient and records the call.
static void add_index(int i, tt_tensor *grad, void *ctx) {
    prepare_log *log = ctx;
    ck_assert_int_lt(log->calls, 4);
    log->index[log->calls++] = i;
    for (int64_t j = 0; j < tt_numel(grad); j++) tt_set_at(grad, j, tt_at(grad, j) + i + 1);
}

// L = sum(a * c) + sum(b * d); "unused" is not in the loss (no gradient: not prepared).
START_TEST(test_overlap_one_rank) {
    ck_assert_int_eq(tt_dist_world_size(), 1);
    tt_tensor *a = tt_set_requires_grad(tt_test_tensor(TT_F32, TT_SHAPE(2), 1, 2), true);
    tt_tensor *unused = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(3)), true);
    tt_tensor *b = tt_set_requires_grad(tt_test_tensor(TT_F64, TT_SHAPE(3), 1, 2, 3), true);
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, NULL, "a", a);
    tt_params_add(&p, NULL, "unused", unused);
    tt_params_add(&p, NULL, "b", b);
    prepare_log log = {0};
    for (int step = 0; step < 2; step++) {  // twice: begin/end pair up again
        tt_scope_begin();
        tt_tensor *c = tt_test_tensor(TT_F32, TT_SHAPE(2), 10, 20);
        tt_tensor *d = tt_test_tensor(TT_F64, TT_SHAPE(3), -1, -2, -3);
        tt_tensor *l = tt_add(tt_sum_all(tt_mul(a, c)), tt_to_dtype(tt_sum_all(tt_mul(b, d)),
                                                                    TT_F32));
        ck_assert_int_eq(tt_dist_overlap_begin(&p, add_index, &log), TT_OK);
        tt_backward(l);
        ck_assert_int_eq(tt_dist_overlap_end(&p), TT_OK);
        tt_scope_end();
    }
    ck_assert_int_eq(log.calls, 4);
    ck_assert_int_eq(log.index[0], 0);
    ck_assert_int_eq(log.index[1], 2);
    ck_assert_int_eq(log.index[3], 2);
    // Step 1: c + 1, d + 3; step 2 accumulates c into that, then adds 1 again (no zero_grad).
    ck_assert_values(tt_grad(a), 0, 0, 22, 42);
    ck_assert_values(tt_grad(b), 0, 0, 4, 2, 0);
    ck_assert_ptr_null(tt_grad(unused));
    tt_params_free(&p);
    tt_release(a);
    tt_release(unused);
    tt_release(b);
}
END_TEST

START_TEST(test_overlap_begin_twice_aborts) {
    tt_expect_abort("tt_dist_overlap_begin called twice; call tt_dist_overlap_end");
    tt_params p;
    tt_params_init(&p);
    tt_dist_overlap_begin(&p, NULL, NULL);
    tt_dist_overlap_begin(&p, NULL, NULL);
}
END_TEST

START_TEST(test_overlap_end_without_begin_aborts) {
    tt_expect_abort("tt_dist_overlap_end: call tt_dist_overlap_begin before the backward");
    tt_params p;
    tt_params_init(&p);
    tt_dist_overlap_end(&p);
}
END_TEST

START_TEST(test_overlap_end_other_params_aborts) {
    tt_expect_abort("these are not the parameters tt_dist_overlap_begin was given");
    tt_params p, q;
    tt_params_init(&p);
    tt_params_init(&q);
    tt_dist_overlap_begin(&p, NULL, NULL);
    tt_dist_overlap_end(&q);
}
END_TEST

int main(void) {
    Suite *s = suite_create("dist");
    TCase *tc = tt_tcase("dist");
    tcase_add_test(tc, test_overlap_one_rank);
    suite_add_tcase(s, tc);

    TCase *ab = tt_tcase_aborts("aborts_dist");
    tcase_add_test_raise_signal(ab, test_overlap_begin_twice_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_overlap_end_without_begin_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_overlap_end_other_params_aborts, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
