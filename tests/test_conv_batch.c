// Check suite of the batch paths of tt_conv2d and tt_conv_transpose2d (autograd/ops_conv.c):
// conv2d takes a batch in groups of 16 images (threads take groups; the weight gradient is a
// partial per group) cut into cache-sized chunks whose patches sit side by side for one GEMM;
// conv_transpose2d runs one GEMM per chunk too. The forward and dx of a batch equal those of
// each image alone bit for bit, dw equals the sum of the per-image dws within f32 rounding,
// all three are bitwise the same on 1 and 2 threads, and dx is skipped (dw unchanged) when x
// needs no gradient. Values against PyTorch: test_ops_conv.c; finite differences: gc_ops_conv.c.
#include <stdint.h>
#include <string.h>

#include "test_util.h"

typedef struct conv_case {
    int64_t n, c, h, w, co, k, stride, pad, groups;
    bool transposed;  // tt_conv_transpose2d (weight (c, co / groups, k, k))
} conv_case;

// 40 images: three dw groups (16, 16, 8) and 2 N CO K L above the parallel threshold.
static const conv_case cases[] = {
    {40, 3, 12, 12, 8, 3, 1, 0, 1, false},
    {40, 4, 13, 11, 6, 3, 2, 1, 2, false},
    {33, 1, 28, 28, 16, 5, 1, 2, 1, false},  // lenet's first layer: chunks of 8, then 1
    {40, 16, 14, 14, 8, 5, 1, 0, 1, false},  // lenet's second layer's patches: chunks of 4
    {40, 6, 7, 9, 4, 3, 2, 1, 2, true},
    {21, 8, 5, 5, 6, 4, 1, 0, 1, true},
};

typedef struct conv_out {
    tt_tensor *y, *dx, *dw, *db;  // owned
} conv_out;

// y = conv2d(x, w, b) and the gradients of sum(y * g), on nthreads threads.
static conv_out run(const conv_case *c, tt_tensor *x, tt_tensor *w, tt_tensor *b, tt_tensor *g,
                    int nthreads) {
    int prev = tt_get_num_threads();
    tt_set_num_threads(nthreads);
    tt_zero_grad(x);
    tt_zero_grad(w);
    tt_zero_grad(b);
    tt_scope_begin();
    int64_t stride[2] = {c->stride, c->stride}, pad[2] = {c->pad, c->pad};
    tt_tensor *y = c->transposed ? tt_conv_transpose2d(x, w, b, stride, pad, NULL, c->groups, NULL)
                                 : tt_conv2d(x, w, b, stride, pad, NULL, c->groups);
    tt_backward(tt_sum_all(tt_mul(y, g)));
    tt_tensor *dx = tt_grad(x);
    conv_out o = {tt_keep(tt_detach(y)), dx ? tt_keep(tt_clone(dx)) : NULL,
                  tt_keep(tt_clone(tt_grad(w))), tt_keep(tt_clone(tt_grad(b)))};
    tt_scope_end();
    tt_set_num_threads(prev);
    return o;
}

static void out_free(conv_out *o) {
    tt_release(o->y);
    tt_release(o->dx);
    tt_release(o->dw);
    tt_release(o->db);
}

static bool same_bits(const tt_tensor *a, const tt_tensor *b) {
    return tt_numel(a) == tt_numel(b) &&
           memcmp(tt_data(a), tt_data(b), (size_t)tt_numel(a) * sizeof(float)) == 0;
}

START_TEST(test_batch_paths) {
    const conv_case *c = &cases[_i];
    tt_rng rng;
    tt_rng_seed(&rng, 5 + (uint64_t)_i);
    tt_tensor *x = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(c->n, c->c, c->h, c->w)),
                                        true);
    tt_tensor *w = tt_set_requires_grad(
        c->transposed ? tt_randn(&rng, TT_F32, TT_SHAPE(c->c, c->co / c->groups, c->k, c->k))
                      : tt_randn(&rng, TT_F32, TT_SHAPE(c->co, c->c / c->groups, c->k, c->k)),
        true);
    tt_tensor *b = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(c->co)), true);
    int64_t oh = (c->h + 2 * c->pad - c->k) / c->stride + 1;
    int64_t ow = (c->w + 2 * c->pad - c->k) / c->stride + 1;
    if (c->transposed) {
        oh = (c->h - 1) * c->stride - 2 * c->pad + c->k;
        ow = (c->w - 1) * c->stride - 2 * c->pad + c->k;
    }
    tt_tensor *g = tt_randn(&rng, TT_F32, TT_SHAPE(c->n, c->co, oh, ow));

    conv_out one = run(c, x, w, b, g, 1), two = run(c, x, w, b, g, 2);
    ck_assert_msg(same_bits(one.y, two.y), "y differs between 1 and 2 threads");
    ck_assert_msg(same_bits(one.dx, two.dx), "dx differs between 1 and 2 threads");
    ck_assert_msg(same_bits(one.dw, two.dw), "dw differs between 1 and 2 threads");
    ck_assert_msg(same_bits(one.db, two.db), "db differs between 1 and 2 threads");
    // db = g summed over N, OH, OW (a sum in double as the reference)
    const float *gv = tt_data(g), *dbv = tt_data(two.db);
    for (int64_t o = 0; o < c->co; o++) {
        double ref = 0;
        for (int64_t n = 0; n < c->n; n++)
            for (int64_t l = 0; l < oh * ow; l++) ref += gv[(n * c->co + o) * oh * ow + l];
        ck_assert_close(dbv[o], ref, 1e-6, 1e-6);
    }

    // x without grad: no dx is made, dw and db keep their bits.
    tt_tensor *xd = tt_detach(x);
    conv_out nodx = run(c, xd, w, b, g, 2);
    ck_assert_msg(nodx.dx == NULL, "dx was computed for an x that needs no gradient");
    ck_assert_msg(same_bits(nodx.dw, two.dw), "dw changed when dx was skipped");
    ck_assert_msg(same_bits(nodx.db, two.db), "db changed when dx was skipped");
    out_free(&nodx);
    tt_release(xd);

    // Image by image (N = 1: the serial path): y and dx slices equal, dw sums close.
    tt_tensor *dw_sum = tt_zeros(TT_F64, 4, w->shape);
    for (int64_t i = 0; i < c->n; i++) {
        tt_scope_begin();
        tt_tensor *xi = tt_set_requires_grad(tt_contiguous(tt_narrow(tt_detach(x), 0, i, 1)),
                                             true);
        conv_case ci = *c;
        ci.n = 1;
        conv_out o = run(&ci, xi, w, b, tt_contiguous(tt_narrow(g, 0, i, 1)), 1);
        ck_assert_msg(same_bits(o.y, tt_contiguous(tt_narrow(two.y, 0, i, 1))),
                      "y of image %lld differs from the batch's", (long long)i);
        ck_assert_msg(same_bits(o.dx, tt_contiguous(tt_narrow(two.dx, 0, i, 1))),
                      "dx of image %lld differs from the batch's", (long long)i);
        tt_add_(dw_sum, tt_to_dtype(o.dw, TT_F64));
        tt_scope_end();  // releases o's tensors, kept into this scope
    }
    const float *dw = tt_data(two.dw);
    const double *ref = tt_data(dw_sum);
    for (int64_t i = 0; i < tt_numel(two.dw); i++)
        ck_assert_close(dw[i], ref[i], 1e-4, 1e-5);

    out_free(&one);
    out_free(&two);
    tt_release(dw_sum);
    tt_release(x);
    tt_release(w);
    tt_release(b);
    tt_release(g);
}
END_TEST

int main(void) {
    Suite *s = suite_create("conv_batch");
    TCase *tc = tt_tcase("batch");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_batch_paths, 0, (int)(sizeof cases / sizeof cases[0]));
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}
