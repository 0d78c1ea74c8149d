// The elementwise ops, generated from the TT_UNARY, TT_UNARY_S and TT_BINARY rows of ops.def:
// each op's public function, its node, and the two shared backward functions. The math is in
// tensor/kernels/elementwise.inc; this file does shapes, NumPy broadcasting, strides, dtype
// dispatch and the tape. Compositions (sub_scalar, rsub_scalar) are at the end.
#include "autograd_internal.h"

#include "../tensor/kernels/elementwise.h"

// ---- maps over tensors ----
// A map writes a fresh contiguous output of shape S from inputs that broadcast to S. When
// every input is contiguous with S's element count (so no dim is broadcast) the whole tensor
// is one unit-stride run; otherwise tt__iter walks the runs. Long runs are split into chunks
// that threads process independently: each element is computed once, so results do not
// depend on the thread count.

#define CHUNK ((int64_t)1 << 15)  // elements per parallel task

typedef enum map_kind { MAP_UNARY, MAP_UNARY_BACKWARD, MAP_BINARY, MAP_BINARY_BACKWARD } map_kind;

typedef struct emap {
    map_kind kind;
    int op;      // a tt_kunary_op or a tt_kbinary_op
    int wrt;     // MAP_BINARY_BACKWARD: 0 for a's gradient, 1 for b's
    double s;    // the scalar of the *_S unary ops
    tt_dtype dt;
} emap;

// One run of n elements; p[0] is the output, p[1..] the inputs; st are strides in elements.
static void emap_run(const emap *m, char *const *p, const int64_t *st, int64_t n) {
    bool f32 = m->dt == TT_F32;
    switch (m->kind) {
        case MAP_UNARY:  // (y, x)
            if (f32) tt_kunary_f32((tt_kunary_op)m->op, (float *)p[0], (const float *)p[1],
                                   m->s, n, st[0], st[1]);
            else tt_kunary_f64((tt_kunary_op)m->op, (double *)p[0], (const double *)p[1],
                               m->s, n, st[0], st[1]);
            break;
        case MAP_UNARY_BACKWARD:  // (dx, g, v)
            if (f32) tt_kunary_backward_f32((tt_kunary_op)m->op, (float *)p[0],
                                            (const float *)p[1], (const float *)p[2], m->s, n,
                                            st[0], st[1], st[2]);
            else tt_kunary_backward_f64((tt_kunary_op)m->op, (double *)p[0],
                                        (const double *)p[1], (const double *)p[2], m->s, n,
                                        st[0], st[1], st[2]);
            break;
        case MAP_BINARY:  // (y, a, b)
            if (f32) tt_kbinary_f32((tt_kbinary_op)m->op, (float *)p[0], (const float *)p[1],
                                    (const float *)p[2], n, st[0], st[1], st[2]);
            else tt_kbinary_f64((tt_kbinary_op)m->op, (double *)p[0], (const double *)p[1],
                                (const double *)p[2], n, st[0], st[1], st[2]);
            break;
        case MAP_BINARY_BACKWARD:  // (d, g, a, b)
            if (f32) tt_kbinary_backward_f32((tt_kbinary_op)m->op, m->wrt, (float *)p[0],
                                             (const float *)p[1], (const float *)p[2],
                                             (const float *)p[3], n, st[0], st[1], st[2],
                                             st[3]);
            else tt_kbinary_backward_f64((tt_kbinary_op)m->op, m->wrt, (double *)p[0],
                                         (const double *)p[1], (const double *)p[2],
                                         (const double *)p[3], n, st[0], st[1], st[2], st[3]);
            break;
    }
}

// A long run for the thread pool: chunks_of_run runs its CHUNK-sized pieces [c0, c1).
typedef struct run_job {
    const emap *m;
    int nops;
    char *const *p;
    const int64_t *st;
    int64_t n, es;
} run_job;

static void chunks_of_run(void *ctx, int64_t c0, int64_t c1) {
    const run_job *j = ctx;
    for (int64_t c = c0; c < c1; c++) {
        int64_t i0 = c * CHUNK, len = j->n - i0 < CHUNK ? j->n - i0 : CHUNK;
        char *q[TT_ITER_MAX] = {0};
        for (int k = 0; k < j->nops; k++) q[k] = j->p[k] + i0 * j->st[k] * j->es;
        emap_run(j->m, q, j->st, len);
    }
}

// A run, split into CHUNK-sized pieces processed in parallel when it is long.
static void emap_run_par(const emap *m, int nops, char *const *p, const int64_t *st,
                         int64_t n) {
    int64_t nchunks = (n + CHUNK - 1) / CHUNK;
    if (nchunks <= 1) {
        emap_run(m, p, st, n);
        return;
    }
    run_job j = {m, nops, p, st, n, (int64_t)tt_dtype_size(m->dt)};
    tt__parallel_for(nchunks, 1, chunks_of_run, &j);
}

static char *elem_ptr(const tt_tensor *t, int64_t off) {
    return (char *)tt__base(t) + off * (int64_t)tt_dtype_size(t->dtype);
}

// out (fresh, contiguous) = map(ins...), each input broadcast to out's shape.
static void emap_apply(const emap *m, tt_tensor *out, int nin, tt_tensor *const *ins) {
    int nops = nin + 1;
    int64_t numel = tt_numel(out);
    if (numel == 0) return;
    bool flat = true;
    for (int i = 0; i < nin; i++)
        flat = flat && tt_is_contiguous(ins[i]) && tt_numel(ins[i]) == numel;
    char *p[TT_ITER_MAX];
    int64_t st[TT_ITER_MAX];
    if (flat) {  // the fast path: one unit-stride run
        p[0] = elem_ptr(out, out->offset);
        st[0] = 1;
        for (int i = 0; i < nin; i++) p[i + 1] = elem_ptr(ins[i], ins[i]->offset), st[i + 1] = 1;
        emap_run_par(m, nops, p, st, numel);
        return;
    }
    int64_t bst[TT_ITER_MAX][TT_MAX_DIMS], offs[TT_ITER_MAX];
    const int64_t *strides[TT_ITER_MAX];
    tt_tensor *ops[TT_ITER_MAX];
    ops[0] = out;
    strides[0] = out->stride;
    offs[0] = out->offset;
    for (int i = 0; i < nin; i++) {
        ops[i + 1] = ins[i];
        tt__broadcast_strides(ins[i], out->ndim, out->shape, bst[i + 1]);
        strides[i + 1] = bst[i + 1];
        offs[i + 1] = ins[i]->offset;
    }
    tt__iter it;
    if (!tt__iter_init(&it, out->ndim, out->shape, nops, strides, offs)) return;
    do {
        for (int k = 0; k < nops; k++) p[k] = elem_ptr(ops[k], it.off[k]), st[k] = it.istride[k];
        emap_run_par(m, nops, p, st, it.inner);
    } while (tt__iter_next(&it));
}

// ---- what the rows say ----

typedef struct ew_row {
    int kernel;      // its tt_kunary_op or tt_kbinary_op
    unsigned flags;  // TT_EW_*
} ew_row;

static const ew_row ew_rows[TT_OP_COUNT] = {
#define TT_UNARY(ID, name, saves, flags, ...) [TT_OP_##ID] = {TT_KU_##ID, flags},
#define TT_UNARY_S(ID, name, saves, flags, ...) [TT_OP_##ID] = {TT_KU_##ID, flags},
#define TT_BINARY(ID, name, saves, flags, ...) [TT_OP_##ID] = {TT_KB_##ID, flags},
#include "../tensor/ops.def"
};

// ---- unary ops: forward and backward ----

static void check_input(const tt_tensor *x, const char *func) {
    if (!x) tt_fatal(__FILE__, __LINE__, func, "input tensor is NULL");
    tt__check_float(x, func);
}

typedef struct scalar_ctx {
    double s;
} scalar_ctx;

// y = f(x; s) for a TT_UNARY or TT_UNARY_S row; records the node (with s, and an alias of y
// when the backward reads it) and hands y to the scope.
static tt_tensor *unary_op(tt_op op, tt_tensor *x, double s, const char *func) {
    check_input(x, func);
    const ew_row *r = &ew_rows[op];
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);
    emap m = {MAP_UNARY, r->kernel, 0, s, x->dtype};
    emap_apply(&m, out, 1, &x);
    scalar_ctx *c = tt__record(out, op, 1, &x, sizeof *c);
    if (c) {
        c->s = s;
        if (r->flags & TT_EW_OUT) {
            tt_tensor *alias = tt__alias(out);
            tt__save(out->node, 0, alias);
            tt_release(alias);
        }
    }
    return tt__autorelease(out);
}

// dx = g * f'(v), v the saved output, the input, or (when f' reads neither) g again, which
// the kernel does not load.
void tt__backward_unary(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    if (!x->requires_grad) return;
    const ew_row *r = &ew_rows[n->op];
    const scalar_ctx *c = n->ctx;
    if (r->flags & TT_EW_PASS_A) {  // the gradient is g itself
        tt__accum_grad_node(x, n, n->grad);
        return;
    }
    tt_tensor *v = (r->flags & TT_EW_OUT) ? n->saved[0]
                   : (tt_op_saved_inputs(n->op) & 1) ? x : n->grad;
    tt_tensor *dx = tt__new(n->dtype, n->ndim, n->shape);  // (S)
    emap m = {MAP_UNARY_BACKWARD, r->kernel, 0, c->s, n->dtype};
    emap_apply(&m, dx, 2, (tt_tensor *[]){n->grad, v});
    tt__accum_grad_owned(x, dx);
}

// ---- binary ops: forward and backward ----

static tt_tensor *binary_op(tt_op op, tt_tensor *a, tt_tensor *b, const char *func) {
    check_input(a, func);
    check_input(b, func);
    tt__check_same_dtype(a, b, func);
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    if (!tt__broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, &ndim, shape)) {
        int n = a->ndim > b->ndim ? a->ndim : b->ndim, bad = 1;
        for (int d = 1; d <= n; d++) {  // the last dim (counted from the end) that clashes
            int64_t da = d <= a->ndim ? a->shape[a->ndim - d] : 1;
            int64_t db = d <= b->ndim ? b->shape[b->ndim - d] : 1;
            if (da != db && da != 1 && db != 1) bad = d;
        }
        tt_fatal(__FILE__, __LINE__, func, "shapes %s and %s do not broadcast: dim %d is %lld "
                 "vs %lld; aligned from the right, each pair of dims must be equal or one of "
                 "them 1 (reshape or unsqueeze an operand)", tt__shape(a), tt__shape(b), -bad,
                 (long long)a->shape[a->ndim - bad], (long long)b->shape[b->ndim - bad]);
    }
    tt_tensor *out = tt__new(a->dtype, ndim, shape);
    emap m = {MAP_BINARY, ew_rows[op].kernel, 0, 0, a->dtype};
    emap_apply(&m, out, 2, (tt_tensor *[]){a, b});
    tt__record(out, op, 2, (tt_tensor *[]){a, b}, 0);
    return tt__autorelease(out);
}

// Full-shape gradient of each input that requires grad; tt__accum_grad sums the broadcast
// dims away.
void tt__backward_binary(tt_node *n) {
    tt_tensor *a = n->inputs[0], *b = n->inputs[1], *g = n->grad;
    const ew_row *r = &ew_rows[n->op];
    for (int wrt = 0; wrt < 2; wrt++) {
        tt_tensor *x = n->inputs[wrt];
        if (!x->requires_grad) continue;
        if (r->flags & (wrt == 0 ? TT_EW_PASS_A : TT_EW_PASS_B)) {  // the gradient is g
            tt__accum_grad_node(x, n, g);
            continue;
        }
        tt_tensor *d = tt__new(n->dtype, n->ndim, n->shape);  // (S)
        emap m = {MAP_BINARY_BACKWARD, r->kernel, wrt, 0, n->dtype};
        emap_apply(&m, d, 3, (tt_tensor *[]){g, a, b});
        tt__accum_grad_owned(x, d);
    }
}

// ---- the public functions, one per row: tt_add, tt_add_scalar, tt_exp, ... ----

#define TT_BINARY(ID, name, ...) \
    tt_tensor *tt_##name(tt_tensor *a, tt_tensor *b) { return binary_op(TT_OP_##ID, a, b, \
                                                                         __func__); }
#define TT_UNARY_S(ID, name, ...) \
    tt_tensor *tt_##name(tt_tensor *x, double s) { return unary_op(TT_OP_##ID, x, s, __func__); }
#define TT_UNARY(ID, name, ...) \
    tt_tensor *tt_##name(tt_tensor *x) { return unary_op(TT_OP_##ID, x, 0, __func__); }
#include "../tensor/ops.def"

// ---- compositions ----

// a - s is a + (-s): exact in IEEE arithmetic, so it needs no op of its own.
tt_tensor *tt_sub_scalar(tt_tensor *a, double s) { return tt_add_scalar(a, -s); }

// s - a is (-a) + s, bit for bit (IEEE subtraction is the addition of the negation).
tt_tensor *tt_rsub_scalar(double s, tt_tensor *a) {
    check_input(a, __func__);  // so that a misuse names this function, not tt_neg
    return tt_add_scalar(tt_neg(a), s);
}
