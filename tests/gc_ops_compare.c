// Gradcheck cases of the comparison and selection (autograd/ops_compare.c and their ops.def rows).
// where: contiguous, broadcast of all three (cond, a and b each broadcast), a transposed view,
// a float cond; masked_select: contiguous, a broadcast mask, x broadcast against the mask, a
// transposed x, an all-false mask (empty output). Masks travel in ctx: they are not inputs.
#include "gc_util.h"

typedef struct mask_ctx {
    tt_tensor *mask;
} mask_ctx;

static tt_tensor *f_where(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_where(((mask_ctx *)ctx)->mask, in[0], in[1]);
}

static tt_tensor *f_masked_select(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_masked_select(in[0], ((mask_ctx *)ctx)->mask);
}

// A bool mask of the given shape: element i is true when bit (i % 7) of 0x4b is set.
static tt_tensor *mask_of(int ndim, const int64_t *shape) {
    tt_tensor *m = tt_zeros(TT_BOOL, ndim, shape);
    for (int64_t i = 0, n = tt_numel(m); i < n; i++) tt_set_at(m, i, (0x4b >> (i % 7)) & 1);
    return m;
}

static void where_contiguous(gc_report *r) {
    mask_ctx c = {mask_of(TT_SHAPE(3, 4))};
    tt_tensor *in[2] = {gc_input(TT_SHAPE(3, 4), -1, 1), gc_input(TT_SHAPE(3, 4), -1, 1)};
    gc_check(r, f_where, &c, 2, in, NULL);
}

// cond (2, 1, 4), a (3, 1), b (4,) -> (2, 3, 4): every input broadcast along some dim.
static void where_broadcast(gc_report *r) {
    mask_ctx c = {mask_of(TT_SHAPE(2, 1, 4))};
    tt_tensor *in[2] = {gc_input(TT_SHAPE(3, 1), -1, 1), gc_input(TT_SHAPE(4), -1, 1)};
    gc_check(r, f_where, &c, 2, in, NULL);
}

static void where_transposed(gc_report *r) {
    mask_ctx c = {tt_as_strided(mask_of(TT_SHAPE(4, 3)), TT_SHAPE(3, 4), (int64_t[]){1, 3}, 0)};
    tt_tensor *in[2] = {gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1),
                        gc_input_strided(TT_SHAPE(3, 8), 1, 2, -1, 1)};
    gc_check(r, f_where, &c, 2, in, NULL);
}

// A float cond (nonzero is true), with a 0-dim b.
static void where_float_cond_scalar_b(gc_report *r) {
    mask_ctx c = {tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 0, 0.5, -1, 0, 0, 2)};
    tt_tensor *in[2] = {gc_input(TT_SHAPE(2, 3), -1, 1), gc_input(TT_SCALAR_SHAPE, -1, 1)};
    gc_check(r, f_where, &c, 2, in, NULL);
}

static void masked_select_contiguous(gc_report *r) {
    mask_ctx c = {mask_of(TT_SHAPE(3, 4))};
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    gc_check(r, f_masked_select, &c, 1, &x, NULL);
}

static void masked_select_broadcast_mask(gc_report *r) {
    mask_ctx c = {mask_of(TT_SHAPE(4))};
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    gc_check(r, f_masked_select, &c, 1, &x, NULL);
}

// x (1, 4) against a mask (3, 4): x's gradient sums over the rows the mask picks.
static void masked_select_broadcast_x(gc_report *r) {
    mask_ctx c = {mask_of(TT_SHAPE(3, 4))};
    tt_tensor *x = gc_input(TT_SHAPE(1, 4), -1, 1);
    gc_check(r, f_masked_select, &c, 1, &x, NULL);
}

static void masked_select_transposed(gc_report *r) {
    mask_ctx c = {mask_of(TT_SHAPE(3, 4))};
    tt_tensor *x = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1);
    gc_check(r, f_masked_select, &c, 1, &x, NULL);
}

static void masked_select_all_false(gc_report *r) {
    mask_ctx c = {tt_zeros(TT_BOOL, TT_SHAPE(2, 3))};
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -1, 1);
    gc_check(r, f_masked_select, &c, 1, &x, NULL);
}

const gc_case gc_cases_compare[] = {
    {TT_OP_WHERE, "contiguous", where_contiguous},
    {TT_OP_WHERE, "broadcast_cond214_a31_b4", where_broadcast},
    {TT_OP_WHERE, "transposed_strided", where_transposed},
    {TT_OP_WHERE, "float_cond_scalar_b", where_float_cond_scalar_b},
    {TT_OP_MASKED_SELECT, "contiguous", masked_select_contiguous},
    {TT_OP_MASKED_SELECT, "broadcast_mask", masked_select_broadcast_mask},
    {TT_OP_MASKED_SELECT, "broadcast_x", masked_select_broadcast_x},
    {TT_OP_MASKED_SELECT, "transposed", masked_select_transposed},
    {TT_OP_MASKED_SELECT, "all_false", masked_select_all_false},
    {0}};
