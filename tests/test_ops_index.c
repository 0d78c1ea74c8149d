// Check suite of the indexing, sorting, scan and sampling ops: values and gradients against
// PyTorch 1.13 (printed by tests/reference/index_values.py) in f32 and f64, shapes and dtypes,
// the samplers' distributions (chi-square with fixed seeds), and the abort messages.
// Finite-difference gradients are in gc_ops_index.c.
#include <signal.h>
#include <stdint.h>

#include "test_util.h"

static const tt_dtype dtypes[2] = {TT_F32, TT_F64};

// The x of index_values.py: (3, 4)
static tt_tensor *x34(tt_dtype dt) {
    return tt_test_tensor(dt, TT_SHAPE(3, 4), 0.5, -1.0, 2.0, 0.25, 3.0, 0.0, -2.5, 1.5, -0.5,
                          4.0, 1.0, -3.0);
}

static tt_tensor *i64(int ndim, const int64_t *shape, const int64_t *v) {
    return tt_from_data(TT_I64, ndim, shape, v);
}
#define I64(shape_, ...) i64(shape_, (const int64_t[]){__VA_ARGS__})

static void assert_shape(const tt_tensor *t, int ndim, const int64_t *shape) {
    ck_assert_int_eq(t->ndim, ndim);
    for (int i = 0; i < ndim; i++) ck_assert_int_eq(t->shape[i], shape[i]);
}

// ---- gather, scatter_add, index_select, index_add, scatter ----

START_TEST(test_gather_values_grad) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(x34(dt), true);
    tt_tensor *y = tt_gather(x, 1, I64(TT_SHAPE(3, 2), 2, 2, 0, 3, 1, 1));
    ck_assert_int_eq(y->dtype, dt);
    assert_shape(y, TT_SHAPE(3, 2));
    ck_assert_values(y, 0, 0, 2.0, 2.0, 3.0, 1.5, 4.0, 4.0);
    tt_tensor *w = tt_test_tensor(dt, TT_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    tt_backward(tt_sum_all(tt_mul(y, w)));
    ck_assert_values(tt_grad(x), 0, 0, 0, 0, 3, 0, 3, 0, 0, 4, 0, 11, 0, 0);
    // an i32 index gives the same
    tt_tensor *i32 = tt_from_data(TT_I32, TT_SHAPE(3, 2), (const int32_t[]){2, 2, 0, 3, 1, 1});
    ck_assert_values(tt_gather(x, -1, i32), 0, 0, 2.0, 2.0, 3.0, 1.5, 4.0, 4.0);
    tt_scope_end();
}
END_TEST

START_TEST(test_scatter_add_values_grad) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(x34(dt), true);
    tt_tensor *src = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9), true);
    tt_tensor *y = tt_scatter_add(x, 1, I64(TT_SHAPE(3, 3), 1, 1, 3, 0, 0, 0, 2, 3, 2), src);
    ck_assert_values(y, 0, 0, 0.5, 2.0, 2.0, 3.25, 18.0, 0.0, -2.5, 1.5, -0.5, 4.0, 17.0, 5.0);
    tt_backward(tt_sum_all(tt_mul(y, tt_reshape(tt_arange(dt, 0, 12, 1), TT_SHAPE(3, 4)))));
    ck_assert_values(tt_grad(x), 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    ck_assert_values(tt_grad(src), 0, 0, 1, 1, 3, 4, 4, 4, 10, 11, 10);
    tt_scope_end();
}
END_TEST

START_TEST(test_index_select_add_scatter_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = x34(dt);
    tt_tensor *ii = I64(TT_SHAPE(3), 2, 0, 2);
    tt_tensor *s0 = tt_index_select(x, 0, ii);
    assert_shape(s0, TT_SHAPE(3, 4));
    ck_assert_values(s0, 0, 0, -0.5, 4.0, 1.0, -3.0, 0.5, -1.0, 2.0, 0.25, -0.5, 4.0, 1.0, -3.0);
    ck_assert_values(tt_index_select(x, 1, I64(TT_SHAPE(2), 3, 0)), 0, 0, 0.25, 0.5, 1.5, 3.0,
                     -3.0, -0.5);
    tt_tensor *s2 = tt_test_tensor(dt, TT_SHAPE(3, 4), 1, 1, 1, 1, 2, 2, 2, 2, 0.5, -0.5, 0.5,
                                   -0.5);
    ck_assert_values(tt_index_add(x, 0, ii, s2, 2.0), 0, 0, 4.5, 3.0, 6.0, 4.25, 3.0, 0.0, -2.5,
                     1.5, 2.5, 5.0, 4.0, -2.0);
    tt_tensor *src = tt_test_tensor(dt, TT_SHAPE(3, 2), 1, 2, 4, 5, 7, 8);
    ck_assert_values(tt_scatter(x, 1, I64(TT_SHAPE(3, 2), 1, 3, 0, 2, 2, 1), src), 0, 0, 0.5,
                     1.0, 2.0, 2.0, 4.0, 0.0, 5.0, 1.5, -0.5, 8.0, 7.0, -3.0);
    // x is left alone (out of place); an empty index selects nothing
    ck_assert_values(tt_slice(x, 0, 0, 1, 1), 0, 0, 0.5, -1.0, 2.0, 0.25);
    assert_shape(tt_index_select(x, 1, tt_zeros(TT_I64, TT_SHAPE(0))), TT_SHAPE(3, 0));
    tt_scope_end();
}
END_TEST

// ---- sort, argsort, topk ----

START_TEST(test_sort_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *z = tt_test_tensor(dt, TT_SHAPE(2, 5), 3, 1, 2, 1, 5, 0, -1, NAN, 4, -1);
    tt_tensor *v, *k;
    tt_sort(z, 1, false, &v, &k);
    ck_assert_int_eq(k->dtype, TT_I64);
    ck_assert_values(k, 0, 0, 1, 3, 2, 0, 4, 1, 4, 0, 3, 2);
    ck_assert_values(tt_slice(v, 1, 0, 4, 1), 0, 0, 1, 1, 2, 3, -1, -1, 0, 4);
    ck_assert(isnan(tt_at(v, 9)));
    tt_sort(z, -1, true, &v, &k);
    ck_assert_values(k, 0, 0, 4, 0, 2, 1, 3, 2, 3, 0, 1, 4);
    ck_assert(isnan(tt_at(v, 5)));
    ck_assert_values(tt_argsort(x34(dt), 0, false), 0, 0, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1);
    tt_sort(tt_scalar(dt, 2.5), 0, false, &v, &k);  // 0-d
    ck_assert_int_eq(v->ndim, 0);
    ck_assert_double_eq(tt_item(v), 2.5);
    ck_assert_int_eq((int)tt_item(k), 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_topk_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = x34(dt), *v, *k;
    tt_topk(x, 2, 1, true, true, &v, &k);
    assert_shape(v, TT_SHAPE(3, 2));
    ck_assert_values(v, 0, 0, 2.0, 0.5, 3.0, 1.5, 4.0, 1.0);
    ck_assert_values(k, 0, 0, 2, 0, 0, 3, 1, 2);
    tt_topk(x, 2, 0, false, true, &v, &k);
    assert_shape(k, TT_SHAPE(2, 4));
    ck_assert_values(v, 0, 0, -0.5, -1.0, -2.5, -3.0, 0.5, 0.0, 1.0, 0.25);
    ck_assert_values(k, 0, 0, 2, 0, 1, 2, 0, 1, 2, 0);
    tt_topk(x, 0, 1, true, true, &v, NULL);
    assert_shape(v, TT_SHAPE(3, 0));
    tt_scope_end();
}
END_TEST

// ---- min, argmin, max_dim, min_dim ----

START_TEST(test_min_max_dim_values_grad) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    ck_assert_values(tt_min(x34(dt), TT_DIMS(1), false), 0, 0, -1.0, -2.5, -3.0);
    tt_tensor *am = tt_argmin(x34(dt), 0, false);
    ck_assert_int_eq(am->dtype, TT_I64);
    ck_assert_values(am, 0, 0, 2, 0, 1, 2);
    // ties: max_dim / min_dim give the first index all of the gradient, as torch.max(x, dim)
    tt_tensor *t = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 3, 3, 2, 2, 0),
                                        true);
    tt_tensor *v, *k;
    tt_max_dim(t, 1, false, &v, &k);
    assert_shape(v, TT_SHAPE(2));
    ck_assert_values(v, 0, 0, 3, 2);
    ck_assert_values(k, 0, 0, 1, 0);
    tt_backward(tt_sum_all(v));
    ck_assert_values(tt_grad(t), 0, 0, 0, 1, 0, 1, 0, 0);
    tt_zero_grad(t);
    tt_min_dim(t, 0, true, &v, &k);
    assert_shape(k, TT_SHAPE(1, 3));
    ck_assert_values(v, 0, 0, 1, 2, 0);
    ck_assert_values(k, 0, 0, 0, 1, 1);
    tt_backward(tt_sum_all(v));
    ck_assert_values(tt_grad(t), 0, 0, 1, 0, 0, 0, 1, 1);
    // tt_min shares ties evenly, as torch.amin
    tt_tensor *u = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 3, 1, 2, 2, 5),
                                        true);
    tt_backward(tt_sum_all(tt_min(u, TT_DIMS(1), false)));
    ck_assert_values(tt_grad(u), 0, 0, 0.5, 0, 0.5, 0.5, 0.5, 0);
    tt_scope_end();
}
END_TEST

// ---- cumsum, cumprod, prod ----

START_TEST(test_scans_values_grad) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *c = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(2, 4), 2, 0, 3, -1, 0.5, 4, 0, 0), true);
    ck_assert_values(tt_cumsum(c, 1), 0, 0, 2, 2, 5, 4, 0.5, 4.5, 4.5, 4.5);
    ck_assert_values(tt_cumsum(c, 0), 0, 0, 2, 0, 3, -1, 2.5, 4, 3, -1);
    tt_tensor *y = tt_cumprod(c, 1);
    ck_assert_values(y, 0, 0, 2, 0, 0, 0, 0.5, 2, 0, 0);
    tt_tensor *g = tt_test_tensor(dt, TT_SHAPE(2, 4), 1, 2, 3, 4, -1, 0.5, 2, 1);
    tt_backward(tt_sum_all(tt_mul(y, g)));
    ck_assert_values(tt_grad(c), 0, 0, 1, -2, 0, 0, 1, 0.25, 4, 0);
    tt_zero_grad(c);
    tt_tensor *p = tt_prod(c, TT_DIMS(1), false);
    assert_shape(p, TT_SHAPE(2));
    ck_assert_values(p, 0, 0, 0, 0);
    tt_backward(tt_sum_all(p));
    ck_assert_values(tt_grad(c), 0, 0, 0, -6, 0, 0, 0, 0, 0, 0);
    tt_tensor *d = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 2, 0.5, 3, 1.5, 4, -2),
                                        true);
    tt_tensor *pa = tt_prod(d, 0, NULL, false);
    ck_assert_int_eq(pa->ndim, 0);
    ck_assert_values(pa, 0, 0, -36);
    tt_backward(pa);
    ck_assert_values(tt_grad(d), 1e-12, 1e-6, -18, -72, -12, -24, -9, 18);
    assert_shape(tt_prod(d, TT_DIMS(0), true), TT_SHAPE(1, 3));
    ck_assert_values(tt_prod(tt_zeros(dt, TT_SHAPE(2, 0)), TT_DIMS(1), false), 0, 0, 1, 1);
    tt_scope_end();
}
END_TEST

// ---- samplers ----

static double chi2(const int64_t *counts, const double *expected, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (counts[i] - expected[i]) * (counts[i] - expected[i]) /
                                      expected[i];
    return s;
}

START_TEST(test_randint_uniform) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_tensor *t = tt_randint(&rng, -3, 7, TT_SHAPE(200, 300));
    ck_assert_int_eq(t->dtype, TT_I64);
    assert_shape(t, TT_SHAPE(200, 300));
    int64_t counts[10] = {0};
    const int64_t *v = tt_data(t);
    for (int64_t i = 0; i < 60000; i++) {
        ck_assert(v[i] >= -3 && v[i] < 7);
        counts[v[i] + 3]++;
    }
    double e[10];
    for (int i = 0; i < 10; i++) e[i] = 6000;
    ck_assert_double_lt(chi2(counts, e, 10), 27.88);  // df 9, p = 0.001
    // the same seed gives the same draws
    tt_rng r2;
    tt_rng_seed(&r2, 11);
    ck_assert_int_eq((int64_t)tt_at(tt_randint(&r2, -3, 7, TT_SHAPE(1)), 0), v[0]);
    tt_scope_end();
}
END_TEST

START_TEST(test_randperm_uniform) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_tensor *p = tt_randperm(&rng, 50);
    bool seen[50] = {false};
    for (int64_t i = 0; i < 50; i++) {
        int64_t j = (int64_t)tt_at(p, i);
        ck_assert(j >= 0 && j < 50 && !seen[j]);
        seen[j] = true;
    }
    assert_shape(tt_randperm(&rng, 0), TT_SHAPE(0));
    int64_t counts[6] = {0};  // the 6 orders of 3, by (first, second)
    for (int r = 0; r < 6000; r++) {
        tt_scope_begin();
        tt_tensor *q = tt_randperm(&rng, 3);
        int a = (int)tt_at(q, 0), b = (int)tt_at(q, 1);
        counts[a * 2 + (b > a ? b - 1 : b)]++;
        tt_scope_end();
    }
    double e[6] = {1000, 1000, 1000, 1000, 1000, 1000};
    ck_assert_double_lt(chi2(counts, e, 6), 20.52);  // df 5, p = 0.001
    tt_scope_end();
}
END_TEST

START_TEST(test_bernoulli_rate) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_tensor *p = tt_full(dt, TT_SHAPE(20000), 0.3);
    tt_tensor *b = tt_bernoulli(&rng, p);
    ck_assert_int_eq(b->dtype, dt);
    double s = tt_item(tt_sum_all(b));
    for (int64_t i = 0; i < 20000; i++) ck_assert(tt_at(b, i) == 0 || tt_at(b, i) == 1);
    // mean 6000, sd sqrt(20000 * 0.21) = 64.8: within 4 sd
    ck_assert_double_lt(fabs(s - 6000), 260);
    tt_tensor *edge = tt_bernoulli(&rng, tt_test_tensor(dt, TT_SHAPE(2, 2), 0, 1, 0, 1));
    ck_assert_values(edge, 0, 0, 0, 1, 0, 1);
    tt_scope_end();
}
END_TEST

START_TEST(test_multinomial_counts) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_tensor *probs = tt_test_tensor(TT_F64, TT_SHAPE(5), 1, 2, 0, 3, 4);  // unnormalized
    tt_tensor *s = tt_multinomial(&rng, probs, 20000, true);
    ck_assert_int_eq(s->dtype, TT_I64);
    assert_shape(s, TT_SHAPE(20000));
    int64_t counts[5] = {0};
    for (int64_t i = 0; i < 20000; i++) counts[(int64_t)tt_at(s, i)]++;
    ck_assert_int_eq(counts[2], 0);  // weight 0: never drawn
    int64_t c4[4] = {counts[0], counts[1], counts[3], counts[4]};
    double e[4] = {2000, 4000, 6000, 8000};
    ck_assert_double_lt(chi2(c4, e, 4), 16.27);  // df 3, p = 0.001
    // without replacement: each row draws its non-zero categories once; the first draw of
    // (1, 3) picks 1 with probability 3/4
    tt_tensor *rows = tt_test_tensor(TT_F32, TT_SHAPE(2, 3), 1, 3, 0, 5, 5, 5);
    tt_tensor *w = tt_multinomial(&rng, rows, 2, false);
    assert_shape(w, TT_SHAPE(2, 2));
    ck_assert(tt_at(w, 0) != tt_at(w, 1) && tt_at(w, 0) != 2 && tt_at(w, 1) != 2);
    ck_assert(tt_at(w, 2) != tt_at(w, 3));
    int64_t first[2] = {0};
    for (int r = 0; r < 4000; r++) {
        tt_scope_begin();
        first[(int64_t)tt_at(tt_multinomial(&rng, tt_slice(rows, 0, 0, 1, 1), 2, false), 0)]++;
        tt_scope_end();
    }
    double e2[2] = {1000, 3000};
    ck_assert_double_lt(chi2(first, e2, 2), 10.83);  // df 1, p = 0.001
    tt_scope_end();
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_gather_range) {
    tt_expect_abort("index 4 at position 3 (row-major) of index (3, 2) is out of range for "
                    "dim 1 of size 4");
    tt_gather(x34(TT_F32), 1, I64(TT_SHAPE(3, 2), 0, 1, 2, 4, 0, 0));
}
END_TEST

START_TEST(test_abort_gather_negative) {
    tt_expect_abort("tt_gather: index -1 at position 0");
    tt_gather(x34(TT_F32), 0, I64(TT_SHAPE(1, 1), -1));
}
END_TEST

START_TEST(test_abort_gather_float_index) {
    tt_expect_abort("pass a TT_I32 or TT_I64 tensor");
    tt_gather(x34(TT_F32), 1, tt_zeros(TT_F32, TT_SHAPE(3, 2)));
}
END_TEST

START_TEST(test_abort_gather_ndim) {
    tt_expect_abort("index needs x's number of dims");
    tt_gather(x34(TT_F32), 1, I64(TT_SHAPE(2), 0, 1));
}
END_TEST

START_TEST(test_abort_gather_dim) {
    tt_expect_abort("dim 2 is out of range");
    tt_gather(x34(TT_F32), 2, I64(TT_SHAPE(1, 1), 0));
}
END_TEST

START_TEST(test_abort_scatter_add_src_small) {
    tt_expect_abort("is larger than src (3, 1) at dim 1");
    tt_scatter_add(x34(TT_F32), 1, I64(TT_SHAPE(3, 2), 0, 0, 0, 0, 0, 0),
                   tt_zeros(TT_F32, TT_SHAPE(3, 1)));
}
END_TEST

START_TEST(test_abort_index_select_2d) {
    tt_expect_abort("tt_index_select: index (1, 2) has 2 dims; pass a 1-d tensor");
    tt_index_select(x34(TT_F32), 0, I64(TT_SHAPE(1, 2), 0, 1));
}
END_TEST

START_TEST(test_abort_index_select_range) {
    tt_expect_abort("tt_index_select: index 3 at position 1");
    tt_index_select(x34(TT_F32), 0, I64(TT_SHAPE(2), 0, 3));
}
END_TEST

START_TEST(test_abort_index_add_src) {
    tt_expect_abort("src needs x's shape with size 2 at dim 0");
    tt_index_add(x34(TT_F32), 0, I64(TT_SHAPE(2), 0, 1), tt_zeros(TT_F32, TT_SHAPE(3, 4)), 1);
}
END_TEST

START_TEST(test_abort_topk_k) {
    tt_expect_abort("k = 5 is out of range for dim 1 of size 4");
    tt_tensor *v;
    tt_topk(x34(TT_F32), 5, 1, true, true, &v, NULL);
}
END_TEST

START_TEST(test_abort_min_empty) {
    tt_expect_abort("the min over zero elements is undefined");
    tt_min(tt_zeros(TT_F32, TT_SHAPE(2, 0)), TT_DIMS(1), false);
}
END_TEST

START_TEST(test_abort_max_dim_empty) {
    tt_expect_abort("tt_max_dim: dim 1 of x (2, 0) has size 0");
    tt_tensor *v;
    tt_max_dim(tt_zeros(TT_F32, TT_SHAPE(2, 0)), 1, false, &v, NULL);
}
END_TEST

START_TEST(test_abort_cumsum_int) {
    tt_expect_abort("tt_cumsum: dim 1 is out of range");  // integers scan, but dims are checked
    tt_cumsum(tt_zeros(TT_I64, TT_SHAPE(3)), 1);
}
END_TEST

START_TEST(test_abort_randint_range) {
    tt_expect_abort("the range [3, 3) is empty");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_randint(&rng, 3, 3, TT_SHAPE(2));
}
END_TEST

START_TEST(test_abort_bernoulli_p) {
    tt_expect_abort("p[1] = 1.5 (row-major) of p (2,) is not a probability");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_bernoulli(&rng, tt_test_tensor(TT_F64, TT_SHAPE(2), 0.5, 1.5));
}
END_TEST

START_TEST(test_abort_multinomial_too_many) {
    tt_expect_abort("has 2 non-zero weights: too few to draw 3 samples without replacement");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_multinomial(&rng, tt_test_tensor(TT_F64, TT_SHAPE(3), 1, 0, 2), 3, false);
}
END_TEST

START_TEST(test_abort_multinomial_negative) {
    tt_expect_abort("probs[0, 1] = -1 (row, category) of probs (3,); weights must be "
                    "finite");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_multinomial(&rng, tt_test_tensor(TT_F64, TT_SHAPE(3), 1, -1, 2), 1, true);
}
END_TEST

START_TEST(test_abort_index_written_after_gather) {
    tt_expect_abort("a tensor saved by 'gather' was modified in place by 'fill_'");
    tt_tensor *x = tt_set_requires_grad(x34(TT_F64), true);
    tt_tensor *i = I64(TT_SHAPE(1, 2), 0, 3);
    tt_tensor *y = tt_gather(x, 1, i);
    tt_fill_(i, 1);  // the backward would scatter into the wrong columns
    tt_backward(tt_sum_all(y));
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_index");

    TCase *idx = tt_tcase("indexing");
    tcase_add_loop_test(idx, test_gather_values_grad, 0, 2);
    tcase_add_loop_test(idx, test_scatter_add_values_grad, 0, 2);
    tcase_add_loop_test(idx, test_index_select_add_scatter_values, 0, 2);
    suite_add_tcase(s, idx);

    TCase *srt = tt_tcase("sorting");
    tcase_add_loop_test(srt, test_sort_values, 0, 2);
    tcase_add_loop_test(srt, test_topk_values, 0, 2);
    tcase_add_loop_test(srt, test_min_max_dim_values_grad, 0, 2);
    suite_add_tcase(s, srt);

    TCase *scan = tt_tcase("scans");
    tcase_add_loop_test(scan, test_scans_values_grad, 0, 2);
    suite_add_tcase(s, scan);

    TCase *rnd = tt_tcase("random");
    tcase_add_test(rnd, test_randint_uniform);
    tcase_add_test(rnd, test_randperm_uniform);
    tcase_add_loop_test(rnd, test_bernoulli_rate, 0, 2);
    tcase_add_test(rnd, test_multinomial_counts);
    suite_add_tcase(s, rnd);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_gather_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gather_negative, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gather_float_index, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gather_ndim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gather_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_scatter_add_src_small, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_index_select_2d, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_index_select_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_index_add_src, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_topk_k, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_min_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_max_dim_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_cumsum_int, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_randint_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bernoulli_p, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_multinomial_too_many, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_multinomial_negative, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_index_written_after_gather, SIGABRT);
    suite_add_tcase(s, ab);

    return tt_test_run(s);
}
