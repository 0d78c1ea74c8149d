// Gradcheck cases of the indexing, sorting and scan ops (autograd/ops_index.c and their
// ops.def rows) and of the compositions built on them (scatter, index_select, index_add, sort,
// topk, max_dim, prod; min from ops_reduce.c): contiguous and non-contiguous inputs, duplicate
// indices, empty dims, zeros in cumprod and prod, ties (summed where the op has a kink there).
#include "gc_util.h"

typedef struct ictx {
    int dim;
    tt_tensor *index;
    int64_t k;
    bool flag;  // descending / largest / keepdim
    double alpha;
    int ndims;
    int dims[3];
} ictx;

static tt_tensor *idx(int ndim, const int64_t *shape, const int64_t *v) {
    return tt_from_data(TT_I64, ndim, shape, v);
}
#define IDX(shape_, ...) idx(shape_, (const int64_t[]){__VA_ARGS__})

// ---- the functions under test ----

static tt_tensor *f_gather(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_gather(in[0], c->dim, c->index);
}
static tt_tensor *f_scatter_add(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_scatter_add(in[0], c->dim, c->index, in[1]);
}
static tt_tensor *f_scatter(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_scatter(in[0], c->dim, c->index, in[1]);
}
static tt_tensor *f_index_select(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_index_select(in[0], c->dim, c->index);
}
static tt_tensor *f_index_add(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_index_add(in[0], c->dim, c->index, in[1], c->alpha);
}
static tt_tensor *f_sort(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    tt_tensor *v;
    (void)n;
    tt_sort(in[0], c->dim, c->flag, &v, NULL);
    return v;
}
static tt_tensor *f_topk(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    tt_tensor *v;
    (void)n;
    tt_topk(in[0], c->k, c->dim, c->flag, true, &v, NULL);
    return v;
}
// A tie has a kink: the sum of the values is smooth across it.
static tt_tensor *f_topk_sum(tt_tensor *const *in, int n, void *ctx) {
    return tt_sum(f_topk(in, n, ctx), TT_DIMS(-1), false);
}
static tt_tensor *f_sort_sum(tt_tensor *const *in, int n, void *ctx) {
    return tt_sum(f_sort(in, n, ctx), TT_DIMS(-1), false);
}
static tt_tensor *f_max_dim(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    tt_tensor *v;
    (void)n;
    tt_max_dim(in[0], c->dim, c->flag, &v, NULL);
    return v;
}
static tt_tensor *f_min_dim(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    tt_tensor *v;
    (void)n;
    tt_min_dim(in[0], c->dim, c->flag, &v, NULL);
    return v;
}
static tt_tensor *f_min(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_min(in[0], c->ndims, c->dims, c->flag);
}
static tt_tensor *f_cumsum(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_cumsum(in[0], c->dim);
}
static tt_tensor *f_cumprod(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_cumprod(in[0], c->dim);
}
static tt_tensor *f_prod(tt_tensor *const *in, int n, void *ctx) {
    const ictx *c = ctx;
    (void)n;
    return tt_prod(in[0], c->ndims, c->dims, c->flag);
}

#define IN(...) gc_input(TT_SHAPE(__VA_ARGS__), -1, 1)
static tt_tensor *leaf(tt_tensor *t) { return tt_set_requires_grad(t, true); }

// ---- gather ----

static void gather_contiguous(gc_report *r) {
    tt_tensor *x = IN(3, 4);
    // duplicates along dim 1 (row 0 reads column 2 twice) and an index narrower than x
    gc_check(r, f_gather, &(ictx){.dim = 1, .index = IDX(TT_SHAPE(3, 2), 2, 2, 0, 3, 1, 1)}, 1,
             &x, NULL);
    gc_check(r, f_gather, &(ictx){.dim = 0, .index = IDX(TT_SHAPE(2, 4), 2, 0, 1, 2, 0, 0, 2, 1)},
             1, &x, NULL);
    gc_check(r, f_gather, &(ictx){.dim = -1, .index = IDX(TT_SHAPE(2, 5), 0, 1, 2, 3, 3, 3, 2,
                                                          1, 0, 0)}, 1, &x, NULL);
}

static void gather_noncontiguous(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -1, 1);  // (4, 3)
    gc_check(r, f_gather, &(ictx){.dim = 1, .index = IDX(TT_SHAPE(4, 2), 2, 0, 1, 1, 0, 0, 2, 1)},
             1, &x, NULL);
    // a transposed index: (3, 2) read with strides (1, 3)
    tt_tensor *ib = IDX(TT_SHAPE(2, 3), 0, 1, 2, 3, 0, 1);
    tt_tensor *it = tt_transpose(ib, 0, 1);
    tt_tensor *y = gc_input_strided(TT_SHAPE(3, 8), 1, 2, -1, 1);  // (3, 4), every other
    gc_check(r, f_gather, &(ictx){.dim = 1, .index = it}, 1, &y, NULL);
}

static void gather_empty(gc_report *r) {
    tt_tensor *x = IN(3, 4);
    gc_check(r, f_gather, &(ictx){.dim = 1, .index = tt_zeros(TT_I64, TT_SHAPE(3, 0))}, 1, &x,
             NULL);
    tt_tensor *e = IN(0, 4);
    gc_check(r, f_gather, &(ictx){.dim = 1, .index = tt_zeros(TT_I64, TT_SHAPE(0, 2))}, 1, &e,
             NULL);
}

static void gather_scalar(gc_report *r) {  // 0-d x and index
    tt_tensor *x = tt_set_requires_grad(tt_scalar(TT_F64, 0.4), true);
    gc_check(r, f_gather, &(ictx){.dim = 0, .index = tt_scalar(TT_I64, 0)}, 1, &x, NULL);
}

static void index_select_dims(gc_report *r) {  // a broadcast (stride-0) index into gather
    tt_tensor *x = IN(3, 4, 2);
    tt_tensor *i = tt_from_data(TT_I32, TT_SHAPE(4), (const int32_t[]){2, 0, 2, 1});
    gc_check(r, f_index_select, &(ictx){.dim = 0, .index = i}, 1, &x, NULL);
    gc_check(r, f_index_select, &(ictx){.dim = 1, .index = IDX(TT_SHAPE(2), 3, 3)}, 1, &x,
             NULL);
    gc_check(r, f_index_select, &(ictx){.dim = -1, .index = IDX(TT_SHAPE(3), 1, 0, 1)}, 1, &x,
             NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(3, 5), 0, 1, -1, 1);
    gc_check(r, f_index_select, &(ictx){.dim = 1, .index = IDX(TT_SHAPE(2), 2, 0)}, 1, &xt,
             NULL);
    gc_check(r, f_index_select, &(ictx){.dim = 0, .index = tt_zeros(TT_I64, TT_SHAPE(0))}, 1,
             &xt, NULL);
}

// ---- sort, topk, max_dim, min ----

static void sort_distinct(gc_report *r) {
    tt_tensor *x = IN(3, 5);
    gc_check(r, f_sort, &(ictx){.dim = 1}, 1, &x, NULL);
    gc_check(r, f_sort, &(ictx){.dim = 0, .flag = true}, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1);
    gc_check(r, f_sort, &(ictx){.dim = -1, .flag = true}, 1, &xt, NULL);
}

static void sort_ties(gc_report *r) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 0.5, 0.2, 0.5, -0.1, 0.3, 0.3,
                                       0.3, 0.8));
    gc_check(r, f_sort_sum, &(ictx){.dim = 1}, 1, &x, NULL);
    gc_check(r, f_sort_sum, &(ictx){.dim = 1, .flag = true}, 1, &x, NULL);
}

static void topk_distinct(gc_report *r) {
    tt_tensor *x = IN(3, 6);
    gc_check(r, f_topk, &(ictx){.dim = 1, .k = 3, .flag = true}, 1, &x, NULL);
    gc_check(r, f_topk, &(ictx){.dim = 0, .k = 2, .flag = false}, 1, &x, NULL);
    gc_check(r, f_topk, &(ictx){.dim = 1, .k = 0, .flag = true}, 1, &x, NULL);  // empty
    tt_tensor *xs = gc_input_strided(TT_SHAPE(4, 10), 1, 2, -1, 1);  // (4, 5)
    gc_check(r, f_topk, &(ictx){.dim = -1, .k = 2, .flag = true}, 1, &xs, NULL);
}

static void topk_ties(gc_report *r) {  // tied values both inside the top k
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 0.5, 0.9, 0.1, 0.9, -0.2, 0.6,
                                       0.6, 0.1));
    gc_check(r, f_topk_sum, &(ictx){.dim = 1, .k = 2, .flag = true}, 1, &x, NULL);
    tt_tensor *y = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 0.5, 0.1, 0.1, 0.9, 0.3, 0.3,
                                       0.6, -0.4));
    gc_check(r, f_topk_sum, &(ictx){.dim = 1, .k = 3, .flag = false}, 1, &y, NULL);
}

static void max_dim_distinct(gc_report *r) {
    tt_tensor *x = IN(3, 5);
    gc_check(r, f_max_dim, &(ictx){.dim = 1}, 1, &x, NULL);
    gc_check(r, f_max_dim, &(ictx){.dim = 0, .flag = true}, 1, &x, NULL);
    gc_check(r, f_min_dim, &(ictx){.dim = -1}, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1);
    gc_check(r, f_max_dim, &(ictx){.dim = 1}, 1, &xt, NULL);
    gc_check(r, f_min_dim, &(ictx){.dim = 0, .flag = true}, 1, &xt, NULL);
}

static void min_reduce(gc_report *r) {
    tt_tensor *x = IN(3, 4);
    gc_check(r, f_min, &(ictx){.ndims = 1, .dims = {1}}, 1, &x, NULL);
    gc_check(r, f_min, &(ictx){.ndims = 0, .flag = true}, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(3, 4, 2), 0, 2, -1, 1);
    gc_check(r, f_min, &(ictx){.ndims = 2, .dims = {0, 2}}, 1, &xt, NULL);
}

// Tied minima share the gradient (as torch.amin). First order only: the split jumps as a tie
// breaks.
static void min_ties(gc_report *r) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 0.5, -0.9, 0.1, -0.9, 0.7, 0.2,
                                       0.7, 0.2));
    gc_check_first_order(r, f_min, &(ictx){.ndims = 1, .dims = {1}}, 1, &x, NULL);
    gc_check_first_order(r, f_min, &(ictx){.ndims = 0}, 1, &x, NULL);
}

// ---- scatter_add, index_add, scatter ----

static void scatter_add_duplicates(gc_report *r) {
    tt_tensor *in[2] = {IN(3, 4), IN(3, 3)};
    gc_check(r, f_scatter_add,
             &(ictx){.dim = 1, .index = IDX(TT_SHAPE(3, 3), 1, 1, 1, 0, 3, 0, 2, 2, 3)}, 2, in,
             NULL);
    gc_check(r, f_scatter_add,
             &(ictx){.dim = 0, .index = IDX(TT_SHAPE(2, 3), 2, 2, 0, 2, 1, 2)}, 2, in, NULL);
}

static void scatter_add_noncontiguous(gc_report *r) {
    // src (4, 3) transposed, larger than the index (only its (2, 2) corner is used)
    tt_tensor *in[2] = {gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1),
                        gc_input_strided(TT_SHAPE(3, 8), 1, 2, -1, 1)};  // x (3, 4), src (3, 4)
    gc_check(r, f_scatter_add, &(ictx){.dim = 1, .index = IDX(TT_SHAPE(2, 2), 3, 3, 0, 2)}, 2,
             in, NULL);
}

static void scatter_add_empty(gc_report *r) {
    tt_tensor *in[2] = {IN(2, 3), IN(2, 3)};
    gc_check(r, f_scatter_add, &(ictx){.dim = 1, .index = tt_zeros(TT_I64, TT_SHAPE(2, 0))}, 2,
             in, NULL);
}

static void index_add_duplicates(gc_report *r) {
    tt_tensor *in[2] = {IN(4, 3), IN(5, 3)};
    gc_check(r, f_index_add,
             &(ictx){.dim = 0, .index = IDX(TT_SHAPE(5), 1, 3, 1, 1, 0), .alpha = 1}, 2, in,
             NULL);
    gc_check(r, f_index_add,
             &(ictx){.dim = 0, .index = IDX(TT_SHAPE(5), 2, 2, 0, 3, 2), .alpha = -0.5}, 2, in,
             NULL);
    tt_tensor *in2[2] = {gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -1, 1), IN(4, 2)};
    gc_check(r, f_index_add, &(ictx){.dim = -1, .index = IDX(TT_SHAPE(2), 0, 0), .alpha = 2},
             2, in2, NULL);
}

static void scatter_unique(gc_report *r) {
    tt_tensor *in[2] = {IN(3, 4), IN(3, 3)};
    gc_check(r, f_scatter, &(ictx){.dim = 1, .index = IDX(TT_SHAPE(3, 2), 1, 3, 0, 2, 2, 1)},
             2, in, NULL);
    tt_tensor *in2[2] = {gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1), IN(2, 4)};
    gc_check(r, f_scatter, &(ictx){.dim = 0, .index = IDX(TT_SHAPE(1, 4), 2, 0, 1, 2)}, 2, in2,
             NULL);
}

static void scatter_duplicates(gc_report *r) {  // the last writer wins and alone gets dsrc
    tt_tensor *in[2] = {IN(2, 4), IN(2, 3)};
    gc_check(r, f_scatter, &(ictx){.dim = 1, .index = IDX(TT_SHAPE(2, 3), 1, 1, 2, 0, 3, 0)},
             2, in, NULL);
}

// ---- cumsum, cumprod, prod ----

static void cumsum_dims(gc_report *r) {
    tt_tensor *x = IN(3, 4, 2);
    for (int d = -1; d < 3; d++) gc_check(r, f_cumsum, &(ictx){.dim = d}, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(3, 5), 0, 1, -1, 1);
    gc_check(r, f_cumsum, &(ictx){.dim = 0}, 1, &xt, NULL);
    gc_check(r, f_cumsum, &(ictx){.dim = 1}, 1, &xt, NULL);
}

static void cumsum_empty_scalar(gc_report *r) {
    tt_tensor *e = IN(0, 3);
    gc_check(r, f_cumsum, &(ictx){.dim = 0}, 1, &e, NULL);
    tt_tensor *s = tt_set_requires_grad(tt_scalar(TT_F64, 0.3), true);
    gc_check(r, f_cumsum, &(ictx){.dim = 0}, 1, &s, NULL);
}

static void cumprod_dims(gc_report *r) {
    tt_tensor *x = IN(3, 4, 2);
    for (int d = -1; d < 3; d++) gc_check(r, f_cumprod, &(ictx){.dim = d}, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(3, 5), 0, 1, -1, 1);
    gc_check(r, f_cumprod, &(ictx){.dim = 0}, 1, &xt, NULL);
}

static void cumprod_zeros(gc_report *r) {  // one zero, two zeros, a zero first and last
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(4, 5), 0.5, 0, 0.7, -0.9, 0.3, 0, 0.4, 0,
                                       -0.6, 0.8, 0.9, 0.6,
                                       -0.5, 0.7, 0, 0.2, 0.3, 0.4, 0.5, 0.6));
    gc_check(r, f_cumprod, &(ictx){.dim = 1}, 1, &x, NULL);
    gc_check(r, f_cumprod, &(ictx){.dim = 0}, 1, &x, NULL);
    tt_tensor *e = IN(2, 0);
    gc_check(r, f_cumprod, &(ictx){.dim = 1}, 1, &e, NULL);
}

static void prod_dims(gc_report *r) {
    tt_tensor *x = IN(2, 3, 4);
    gc_check(r, f_prod, &(ictx){.ndims = 1, .dims = {1}}, 1, &x, NULL);
    gc_check(r, f_prod, &(ictx){.ndims = 2, .dims = {0, 2}, .flag = true}, 1, &x, NULL);
    gc_check(r, f_prod, &(ictx){.ndims = 0}, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -1, 1);
    gc_check(r, f_prod, &(ictx){.ndims = 1, .dims = {-1}}, 1, &xt, NULL);
}

static void prod_zeros_empty(gc_report *r) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(3, 3), 0.5, 0, 0.7, 0, 0.4, 0, 0.9,
                                       0.6, -0.5));
    gc_check(r, f_prod, &(ictx){.ndims = 1, .dims = {1}}, 1, &x, NULL);
    gc_check(r, f_prod, &(ictx){.ndims = 1, .dims = {0}}, 1, &x, NULL);
    tt_tensor *e = IN(2, 0);
    gc_check(r, f_prod, &(ictx){.ndims = 1, .dims = {1}}, 1, &e, NULL);
}

const gc_case gc_cases_index[] = {
    {TT_OP_GATHER, "contiguous_duplicates", gather_contiguous},
    {TT_OP_GATHER, "noncontiguous", gather_noncontiguous},
    {TT_OP_GATHER, "empty", gather_empty},
    {TT_OP_GATHER, "scalar", gather_scalar},
    {TT_OP_GATHER, "index_select", index_select_dims},
    {TT_OP_GATHER, "sort", sort_distinct},
    {TT_OP_GATHER, "sort_ties_summed", sort_ties},
    {TT_OP_GATHER, "topk", topk_distinct},
    {TT_OP_GATHER, "topk_ties_summed", topk_ties},
    {TT_OP_GATHER, "max_dim_min_dim", max_dim_distinct},
    {TT_OP_MAX, "min", min_reduce},
    {TT_OP_MAX, "min_ties", min_ties},
    {TT_OP_SCATTER_ADD, "duplicates", scatter_add_duplicates},
    {TT_OP_SCATTER_ADD, "noncontiguous", scatter_add_noncontiguous},
    {TT_OP_SCATTER_ADD, "empty", scatter_add_empty},
    {TT_OP_SCATTER_ADD, "index_add_duplicates", index_add_duplicates},
    {TT_OP_SCATTER_ADD, "scatter_unique", scatter_unique},
    {TT_OP_SCATTER_ADD, "scatter_duplicates", scatter_duplicates},
    {TT_OP_CUMSUM, "dims", cumsum_dims},
    {TT_OP_CUMSUM, "empty_scalar", cumsum_empty_scalar},
    {TT_OP_CUMPROD, "dims", cumprod_dims},
    {TT_OP_CUMPROD, "zeros", cumprod_zeros},
    {TT_OP_CUMPROD, "prod", prod_dims},
    {TT_OP_CUMPROD, "prod_zeros_empty", prod_zeros_empty},
    {0},
};
