// Comparison and selection: eq ne lt le gt ge (tensor and scalar forms), logical_and/or/xor/
// not, where, masked_select and nonzero. Comparisons and logical ops return TT_BOOL and record
// nothing; where and masked_select are differentiable in their float inputs. The arithmetic is
// in tensor/kernels/compare.c; here are shapes, broadcasting, error messages and the tape.
#include "autograd_internal.h"

#include <string.h>

#include "../tensor/kernels/compare.h"

// ---- helpers ----

// The broadcast shape of a and b into (*nout, out), aborting with both shapes named.
static void broadcast2(const tt_tensor *a, const tt_tensor *b, int *nout, int64_t *out,
                       const char *func) {
    if (!tt__broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, nout, out))
        tt_fatal(__FILE__, __LINE__, func, "shapes %s and %s do not broadcast: aligned from "
                 "the right, each pair of dims must be equal or one of them 1", tt__shape(a),
                 tt__shape(b));
}

// Elementwise a op b with broadcasting into a new TT_BOOL tensor (unscoped).
static tt_tensor *compare(const tt_tensor *a, const tt_tensor *b, tt_k_cmp op, bool as_f32,
                          const char *func) {
    int nd;
    int64_t shape[TT_MAX_DIMS], as[TT_MAX_DIMS], bs[TT_MAX_DIMS];
    broadcast2(a, b, &nd, shape, func);
    tt_tensor *out = tt__new(TT_BOOL, nd, shape);
    tt__broadcast_strides(a, nd, shape, as);
    tt__broadcast_strides(b, nd, shape, bs);
    const int64_t *strides[3] = {out->stride, as, bs};
    int64_t offs[3] = {0, a->offset, b->offset};
    tt__iter it;
    if (tt__iter_init(&it, nd, shape, 3, strides, offs)) {
        uint8_t *o = tt_data(out);
        size_t aes = tt_dtype_size(a->dtype), bes = tt_dtype_size(b->dtype);
        const char *pa = tt__base(a), *pb = tt__base(b);
        do {
            tt_kcompare_run(o + it.off[0], it.istride[0], pa + it.off[1] * (int64_t)aes,
                            a->dtype, it.istride[1], pb + it.off[2] * (int64_t)bes, b->dtype,
                            it.istride[2], it.inner, op, as_f32);
        } while (tt__iter_next(&it));
    }
    return out;
}

// PyTorch's promotion: f32 against an integer or bool is compared in f32, against f64 in f64,
// except against a 0-dim f64 (a scalar does not raise the dtype of a tensor with dims).
static bool f32_against(const tt_tensor *a, const tt_tensor *b) {
    return a->dtype == TT_F32 && (b->dtype != TT_F64 || (b->ndim == 0 && a->ndim > 0));
}
static bool promotes_to_f32(const tt_tensor *a, const tt_tensor *b) {
    return f32_against(a, b) || f32_against(b, a);
}

static tt_tensor *compare_tensors(tt_tensor *a, tt_tensor *b, tt_k_cmp op, const char *func) {
    TT_CHECK_IN(func, a && b, "a or b is NULL");
    return tt__autorelease(compare(a, b, op, op < TT_KC_AND && promotes_to_f32(a, b), func));
}

// The scalar is taken in x's dtype when x is f32 (torch: tensor([0.1]) == 0.1 is True).
static tt_tensor *compare_scalar(tt_tensor *x, double s, tt_k_cmp op, const char *func) {
    TT_CHECK_IN(func, x, "x is NULL");
    tt_tensor *sc = tt__new(TT_F64, 0, NULL);
    *(double *)tt_data(sc) = s;
    tt_tensor *out = compare(x, sc, op, x->dtype == TT_F32, func);
    tt_release(sc);
    return tt__autorelease(out);
}

// ---- comparisons ----

tt_tensor *tt_eq(tt_tensor *a, tt_tensor *b) { return compare_tensors(a, b, TT_KC_EQ, __func__); }
tt_tensor *tt_ne(tt_tensor *a, tt_tensor *b) { return compare_tensors(a, b, TT_KC_NE, __func__); }
tt_tensor *tt_lt(tt_tensor *a, tt_tensor *b) { return compare_tensors(a, b, TT_KC_LT, __func__); }
tt_tensor *tt_le(tt_tensor *a, tt_tensor *b) { return compare_tensors(a, b, TT_KC_LE, __func__); }
tt_tensor *tt_gt(tt_tensor *a, tt_tensor *b) { return compare_tensors(a, b, TT_KC_GT, __func__); }
tt_tensor *tt_ge(tt_tensor *a, tt_tensor *b) { return compare_tensors(a, b, TT_KC_GE, __func__); }

tt_tensor *tt_eq_scalar(tt_tensor *x, double s) { return compare_scalar(x, s, TT_KC_EQ, __func__); }
tt_tensor *tt_ne_scalar(tt_tensor *x, double s) { return compare_scalar(x, s, TT_KC_NE, __func__); }
tt_tensor *tt_lt_scalar(tt_tensor *x, double s) { return compare_scalar(x, s, TT_KC_LT, __func__); }
tt_tensor *tt_le_scalar(tt_tensor *x, double s) { return compare_scalar(x, s, TT_KC_LE, __func__); }
tt_tensor *tt_gt_scalar(tt_tensor *x, double s) { return compare_scalar(x, s, TT_KC_GT, __func__); }
tt_tensor *tt_ge_scalar(tt_tensor *x, double s) { return compare_scalar(x, s, TT_KC_GE, __func__); }

// ---- logical ops (nonzero is true) ----

tt_tensor *tt_logical_and(tt_tensor *a, tt_tensor *b) {
    return compare_tensors(a, b, TT_KC_AND, __func__);
}
tt_tensor *tt_logical_or(tt_tensor *a, tt_tensor *b) {
    return compare_tensors(a, b, TT_KC_OR, __func__);
}
tt_tensor *tt_logical_xor(tt_tensor *a, tt_tensor *b) {
    return compare_tensors(a, b, TT_KC_XOR, __func__);
}

tt_tensor *tt_logical_not(tt_tensor *x) {
    TT_CHECK(x, "x is NULL");
    tt_tensor *out = tt__new(TT_BOOL, x->ndim, x->shape);
    const int64_t *strides[2] = {out->stride, x->stride};
    int64_t offs[2] = {0, x->offset};
    tt__iter it;
    if (tt__iter_init(&it, x->ndim, x->shape, 2, strides, offs)) {
        uint8_t *o = tt_data(out);
        const char *px = tt__base(x);
        size_t es = tt_dtype_size(x->dtype);
        do {
            tt_klogical_not_run(o + it.off[0], it.istride[0], px + it.off[1] * (int64_t)es,
                                x->dtype, it.istride[1], it.inner);
        } while (tt__iter_next(&it));
    }
    return tt__autorelease(out);
}

// ---- where ----
// y = cond ? a : b, all three broadcast together; node inputs {cond, a, b}. da = cond ? g : 0
// and db = cond ? 0 : g, summed over the dims a and b were broadcast along. Integer and bool
// a and b of different dtypes are first converted to the promoted one (exact: widening).

// 0 bool, 1 i32, 2 i64: PyTorch's order of promotion among the non-float dtypes.
static int int_rank(tt_dtype dt) { return dt == TT_BOOL ? 0 : dt == TT_I32 ? 1 : 2; }

// The dtype where's result has (torch.result_type(a, b)): a and b non-float; a 0-dim operand
// raises the dtype of one with dims only when it is of a higher kind (an integer against a
// bool); otherwise the wider dtype wins.
static tt_dtype where_dtype(const tt_tensor *a, const tt_tensor *b) {
    bool az = a->ndim == 0, bz = b->ndim == 0;
    if (az != bz) {
        const tt_tensor *dimmed = az ? b : a, *zero = az ? a : b;
        bool higher_kind = dimmed->dtype == TT_BOOL && zero->dtype != TT_BOOL;
        return higher_kind ? zero->dtype : dimmed->dtype;
    }
    return int_rank(a->dtype) >= int_rank(b->dtype) ? a->dtype : b->dtype;
}

static tt_tensor *where_same(tt_tensor *cond, tt_tensor *a, tt_tensor *b);

tt_tensor *tt_where(tt_tensor *cond, tt_tensor *a, tt_tensor *b) {
    TT_CHECK(cond && a && b, "cond, a or b is NULL");
    if (a->dtype == b->dtype) return where_same(cond, a, b);
    if (tt_dtype_is_float(a->dtype) || tt_dtype_is_float(b->dtype))
        tt__check_same_dtype(a, b, __func__);  // aborts: floats are never promoted silently
    tt_dtype dt = where_dtype(a, b);
    tt_scope_begin();
    tt_tensor *y = where_same(cond, a->dtype == dt ? a : tt_to_dtype(a, dt),
                              b->dtype == dt ? b : tt_to_dtype(b, dt));
    tt_keep(y);
    tt_scope_end();
    return y;
}

static tt_tensor *where_same(tt_tensor *cond, tt_tensor *a, tt_tensor *b) {
    const char *func = "tt_where";  // the public name in messages
    int nab, nd;
    int64_t ab[TT_MAX_DIMS], shape[TT_MAX_DIMS];
    broadcast2(a, b, &nab, ab, func);
    if (!tt__broadcast_shape(cond->ndim, cond->shape, nab, ab, &nd, shape))
        tt_fatal(__FILE__, __LINE__, func, "cond %s does not broadcast with a %s and b %s: "
                 "aligned from the right, each dim must be equal or 1", tt__shape(cond),
                 tt__shape(a), tt__shape(b));
    tt_tensor *out = tt__new(a->dtype, nd, shape);
    int64_t cs[TT_MAX_DIMS], as[TT_MAX_DIMS], bs[TT_MAX_DIMS];
    tt__broadcast_strides(cond, nd, shape, cs);
    tt__broadcast_strides(a, nd, shape, as);
    tt__broadcast_strides(b, nd, shape, bs);
    const int64_t *strides[4] = {out->stride, cs, as, bs};
    int64_t offs[4] = {0, cond->offset, a->offset, b->offset};
    tt__iter it;
    if (tt__iter_init(&it, nd, shape, 4, strides, offs)) {
        int64_t es = (int64_t)tt_dtype_size(a->dtype), ces = (int64_t)tt_dtype_size(cond->dtype);
        char *o = tt_data(out);
        const char *pc = tt__base(cond), *pa = tt__base(a), *pb = tt__base(b);
        do {
            tt_kwhere_run(o + it.off[0] * es, it.istride[0], pc + it.off[1] * ces, cond->dtype,
                          it.istride[1], pa + it.off[2] * es, it.istride[2], pb + it.off[3] * es,
                          it.istride[3], a->dtype, it.inner);
        } while (tt__iter_next(&it));
    }
    tt_tensor *inputs[3] = {cond, a, b};
    if (tt_dtype_is_float(a->dtype)) tt__record(out, TT_OP_WHERE, 3, inputs, 0);
    return tt__autorelease(out);
}

void tt__backward_where(tt_node *n) {
    tt_tensor *cond = n->inputs[0], *a = n->inputs[1], *b = n->inputs[2], *g = n->grad;
    tt_tensor *zero = tt_zeros(g->dtype, TT_SCALAR_SHAPE);
    if (a->requires_grad) tt__accum_grad(a, tt_where(cond, g, zero));
    if (b->requires_grad) tt__accum_grad(b, tt_where(cond, zero, g));
}

// ---- masked_select ----
// y = the elements of x where mask is nonzero, x and mask broadcast together, in row-major
// order: 1-D. dx scatters g back to those positions (summed over x's broadcast dims). The
// mask is saved state, not an input of the node.

typedef struct masked_select_ctx {
    int ndim;  // the broadcast shape of x and mask
    int64_t shape[TT_MAX_DIMS];
} masked_select_ctx;

// Visits the broadcast shape (nd, shape) with operand 0 = mask and operand 1 = t (strides
// ts, offset toff, elements of es bytes); copies t's element into / out of the packed buffer
// `packed` at each nonzero of the mask. to_packed: gather (forward), else scatter (backward).
// Returns the number of nonzeros; packed NULL: only counts.
static int64_t mask_walk(const tt_tensor *mask, int nd, const int64_t *shape, char *tbase,
                         const int64_t *ts, int64_t toff, size_t es, char *packed,
                         bool to_packed) {
    int64_t ms[TT_MAX_DIMS], zero[TT_MAX_DIMS] = {0};
    tt__broadcast_strides(mask, nd, shape, ms);
    const int64_t *strides[2] = {ms, ts ? ts : zero};
    int64_t offs[2] = {mask->offset, toff};
    int64_t k = 0;
    tt__iter it;
    if (!tt__iter_init(&it, nd, shape, 2, strides, offs)) return 0;
    const void *mb = tt__base(mask);
    do {
        for (int64_t i = 0; i < it.inner; i++) {
            if (tt__load(mb, mask->dtype, it.off[0] + i * it.istride[0]) == 0) continue;
            if (packed) {
                char *t = tbase + (it.off[1] + i * it.istride[1]) * (int64_t)es;
                char *p = packed + k * (int64_t)es;
                if (to_packed) memcpy(p, t, es);
                else memcpy(t, p, es);
            }
            k++;
        }
    } while (tt__iter_next(&it));
    return k;
}

tt_tensor *tt_masked_select(tt_tensor *x, tt_tensor *mask) {
    TT_CHECK(x && mask, "x or mask is NULL");
    int nd;
    int64_t shape[TT_MAX_DIMS], xs[TT_MAX_DIMS];
    if (!tt__broadcast_shape(x->ndim, x->shape, mask->ndim, mask->shape, &nd, shape))
        tt_fatal(__FILE__, __LINE__, __func__, "mask %s does not broadcast with x %s: aligned "
                 "from the right, each pair of dims must be equal or one of them 1",
                 tt__shape(mask), tt__shape(x));
    int64_t count = mask_walk(mask, nd, shape, NULL, NULL, 0, 0, NULL, true);
    tt_tensor *out = tt__new(x->dtype, 1, &count);  // (count,)
    tt__broadcast_strides(x, nd, shape, xs);
    mask_walk(mask, nd, shape, tt__base(x), xs, x->offset, tt_dtype_size(x->dtype), tt_data(out),
              true);
    masked_select_ctx *c = tt__record(out, TT_OP_MASKED_SELECT, 1, &x, sizeof *c);
    if (c) {
        c->ndim = nd;
        memcpy(c->shape, shape, sizeof shape);
        tt__save(out->node, 0, mask);
    }
    return tt__autorelease(out);
}

void tt__backward_masked_select(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    if (!x->requires_grad) return;
    const masked_select_ctx *c = n->ctx;
    tt_tensor *dx = tt__new_zeros(n->dtype, c->ndim, c->shape);  // broadcast shape
    tt_tensor *g = tt__contiguous_ref(n->grad);                  // (count,)
    mask_walk(n->saved[0], c->ndim, c->shape, tt__base(dx), dx->stride, 0,
              tt_dtype_size(n->dtype), tt_data(g), false);
    tt_release(g);
    tt__accum_grad(x, dx);
    tt_release(dx);
}

// ---- nonzero ----

tt_tensor *tt_nonzero(tt_tensor *x) {
    TT_CHECK(x, "x is NULL");
    int64_t count = mask_walk(x, x->ndim, x->shape, NULL, NULL, 0, 0, NULL, true);
    tt_tensor *out = tt__new(TT_I64, 2, (int64_t[]){count, x->ndim});  // (N, ndim)
    int64_t *o = tt_data(out);
    int64_t idx[TT_MAX_DIMS] = {0}, numel = tt_numel(x), k = 0;
    const void *base = tt__base(x);
    for (int64_t e = 0; e < numel; e++) {  // row-major over x
        int64_t off = x->offset;
        for (int d = 0; d < x->ndim; d++) off += idx[d] * x->stride[d];
        if (tt__load(base, x->dtype, off) != 0) {
            memcpy(o + k * x->ndim, idx, (size_t)x->ndim * sizeof *idx);
            k++;
        }
        for (int d = x->ndim - 1; d >= 0; d--) {
            if (++idx[d] < x->shape[d]) break;
            idx[d] = 0;
        }
    }
    return tt__autorelease(out);
}

// ---- differentiable backwards (create_graph) ----

// da = cond ? g : 0, db = cond ? 0 : g, with ops (cond a constant; summed down to a's and
// b's shapes).
static void where2(tt_node *n) {
    tt_tensor *cond = n->inputs[0], *g = n->grad, *zero = tt_scalar(g->dtype, 0);
    if (tt__input_needs_grad(n, 1)) tt__accum_grad(n->inputs[1], tt_where(cond, g, zero));
    if (tt__input_needs_grad(n, 2)) tt__accum_grad(n->inputs[2], tt_where(cond, zero, g));
}

// dx = g (count,) scattered into zeros of the broadcast shape at the mask's nonzeros, with
// ops: the positions are masked_select of 0 .. numel - 1 (a constant), the scatter a
// scatter_add along the flat tensor; summed down to x's shape.
static void masked_select2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    const masked_select_ctx *c = n->ctx;
    int64_t numel = 1;
    for (int d = 0; d < c->ndim; d++) numel *= c->shape[d];
    tt_tensor *pos = tt_reshape(tt_arange(TT_I64, 0, (double)numel, 1), c->ndim, c->shape);
    tt_tensor *idx = tt_masked_select(pos, n->saved[0]);  // (count,)
    tt_tensor *flat = tt_scatter_add(tt_zeros(n->dtype, 1, &numel), 0, idx, n->grad);
    tt__accum_grad(n->inputs[0], tt_reshape(flat, c->ndim, c->shape));
}

const tt__grad2_row tt__grad2_compare[] = {
    {TT_OP_WHERE, where2},
    {TT_OP_MASKED_SELECT, masked_select2},
    {TT_OP_COUNT, NULL},
};
