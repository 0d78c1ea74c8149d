// In-place ops for updates written by hand (tt_add_, tt_mul_scalar_, tt_clamp_, ...): the
// out-of-place op computed under no-grad into a temporary, copied back, and a version bump.
// Not differentiable: nothing is recorded on the tape (autograd.h says when they abort).
#include "autograd_internal.h"

#include <math.h>

// Aborts unless `a` may be written in place by `op` (b, the other operand, may be NULL).
static void check_inplace(const tt_tensor *a, const tt_tensor *b, const char *op) {
    TT_CHECK_IN(op, a, "tensor is NULL");
    if (tt_is_grad_enabled()) {
        TT_CHECK_IN(op, !a->requires_grad || a->node, "a leaf tensor %s that requires grad is "
                    "used in an in-place op '%s'; wrap the update in tt_no_grad_begin()/"
                    "tt_no_grad_end()", tt__shape(a), op);
        TT_CHECK_IN(op, !a->requires_grad, "tensor %s is the output of op '%s' and requires "
                    "grad: in-place ops are not differentiable here; use the out-of-place op "
                    "(e.g. tt_mul for tt_mul_), or write into a tt_detach of it under "
                    "tt_no_grad_begin()", tt__shape(a), tt_op_name(a->node->op));
        TT_CHECK_IN(op, !b || !b->requires_grad, "operand %s of in-place op '%s' requires "
                    "grad: in-place ops are not differentiable here; use the out-of-place op, "
                    "or wrap the update in tt_no_grad_begin()/tt_no_grad_end()", tt__shape(b),
                    op);
    }
    for (int d = 0; d < a->ndim; d++)
        TT_CHECK_IN(op, a->stride[d] != 0 || a->shape[d] <= 1, "tensor %s is an expanded view "
                    "(stride 0 in dim %d): several of its elements are one memory location, so "
                    "'%s' cannot write it in place; make it with tt_contiguous first",
                    tt__shape(a), d, op);
    if (b) {
        int ndim;
        int64_t shape[TT_MAX_DIMS];
        TT_CHECK_IN(op, tt__broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, &ndim, shape) &&
                    ndim == a->ndim && tt__shape_numel(ndim, shape) == tt_numel(a),
                    "operand %s does not broadcast to the shape %s of the tensor written in "
                    "place (b is broadcast to a, never a to b)", tt__shape(b), tt__shape(a));
    }
}

// a = f(a, b) or a = f(a, s) through the out-of-place op, then the version bump.
static tt_tensor *write_back(tt_tensor *a, tt_tensor *result, const char *op) {
    tt_copy_(a, result);
    tt_bump_version(a, op);
    return a;
}

typedef tt_tensor *(*binary_fn)(tt_tensor *, tt_tensor *);

static tt_tensor *binary_(tt_tensor *a, tt_tensor *b, binary_fn f, const char *op) {
    check_inplace(a, b, op);
    TT_CHECK_IN(op, b, "operand is NULL");
    tt_no_grad_begin();
    tt_scope_begin();
    write_back(a, f(a, b), op);
    tt_scope_end();
    tt_no_grad_end();
    return a;
}

tt_tensor *tt_add_(tt_tensor *a, tt_tensor *b) { return binary_(a, b, tt_add, "add_"); }
tt_tensor *tt_sub_(tt_tensor *a, tt_tensor *b) { return binary_(a, b, tt_sub, "sub_"); }
tt_tensor *tt_mul_(tt_tensor *a, tt_tensor *b) { return binary_(a, b, tt_mul, "mul_"); }
tt_tensor *tt_div_(tt_tensor *a, tt_tensor *b) { return binary_(a, b, tt_div, "div_"); }

typedef tt_tensor *(*scalar_fn)(tt_tensor *, double);

static tt_tensor *scalar_(tt_tensor *a, double s, scalar_fn f, const char *op) {
    check_inplace(a, NULL, op);
    tt_no_grad_begin();
    tt_scope_begin();
    write_back(a, f(a, s), op);
    tt_scope_end();
    tt_no_grad_end();
    return a;
}

tt_tensor *tt_add_scalar_(tt_tensor *a, double s) {
    return scalar_(a, s, tt_add_scalar, "add_scalar_");
}

tt_tensor *tt_mul_scalar_(tt_tensor *a, double s) {
    return scalar_(a, s, tt_mul_scalar, "mul_scalar_");
}

tt_tensor *tt_neg_(tt_tensor *a) {
    check_inplace(a, NULL, "neg_");
    tt_no_grad_begin();
    tt_scope_begin();
    write_back(a, tt_neg(a), "neg_");
    tt_scope_end();
    tt_no_grad_end();
    return a;
}

tt_tensor *tt_zero_(tt_tensor *a) {
    check_inplace(a, NULL, "zero_");
    tt_fill_(a, 0.0);
    tt_bump_version(a, "zero_");
    return a;
}

// torch.clamp_: each element x becomes lo if x < lo, hi if x > hi, else x (NaN stays NaN).
tt_tensor *tt_clamp_(tt_tensor *a, double lo, double hi) {
    check_inplace(a, NULL, "clamp_");
    tt__check_float(a, "clamp_");
    TT_CHECK(!isnan(lo) && !isnan(hi) && lo <= hi, "clamp_ needs lo <= hi (neither NaN), got "
             "lo=%g hi=%g", lo, hi);
    const int64_t *strides[1] = {a->stride};
    tt__iter it;
    if (tt__iter_init(&it, a->ndim, a->shape, 1, strides, &a->offset)) {
        void *base = tt__base(a);
        do {
            for (int64_t i = 0; i < it.inner; i++) {
                int64_t k = it.off[0] + i * it.istride[0];
                double x = tt__load(base, a->dtype, k);
                if (x < lo) tt__store(base, a->dtype, k, lo);
                else if (x > hi) tt__store(base, a->dtype, k, hi);
            }
        } while (tt__iter_next(&it));
    }
    tt_bump_version(a, "clamp_");
    return a;
}
