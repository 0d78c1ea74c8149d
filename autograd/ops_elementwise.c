// The elementwise ops, each forward beside its backward: binary ops with NumPy broadcasting,
// the scalar forms and the unary maps. The math is in tensor/kernels_elementwise.c; this file
// does shapes, broadcasting, strides, dtype dispatch and the tape. Reductions are elsewhere.
#include "autograd_internal.h"

#include "../tensor/kernels_elementwise.h"

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

// A run, split into CHUNK-sized pieces processed in parallel when it is long.
static void emap_run_par(const emap *m, int nops, char *const *p, const int64_t *st,
                         int64_t n) {
    int64_t nchunks = (n + CHUNK - 1) / CHUNK;
    if (nchunks <= 1) {
        emap_run(m, p, st, n);
        return;
    }
    int64_t es = (int64_t)tt_dtype_size(m->dt);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t i0 = c * CHUNK, len = n - i0 < CHUNK ? n - i0 : CHUNK;
        char *q[TT_ITER_MAX] = {0};
        for (int k = 0; k < nops; k++) q[k] = p[k] + i0 * st[k] * es;
        emap_run(m, q, st, len);
    }
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

// ---- shared forward and backward of the unary ops ----

static void check_input(const tt_tensor *x, const char *func) {
    if (!x) tt_fatal(__FILE__, __LINE__, func, "input tensor is NULL");
    tt__check_float(x, func);
}

// y = f(x; s), unscoped and not yet recorded.
static tt_tensor *unary_forward(tt_kunary_op k, tt_tensor *x, double s, const char *func) {
    check_input(x, func);
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);
    emap m = {MAP_UNARY, (int)k, 0, s, x->dtype};
    emap_apply(&m, out, 1, &x);
    return out;
}

// Records out = f(x) and saves an alias of out when f's backward reads the output. Returns
// the zeroed ctx (NULL when nothing was recorded).
static void *unary_record(tt_tensor *out, tt_op op, tt_kunary_op k, tt_tensor *x,
                          size_t ctx_size) {
    void *ctx = tt__record(out, op, 1, &x, ctx_size);
    if (ctx && tt_kunary_backward_uses_output(k)) {
        tt_tensor *alias = tt__alias(out);
        tt__save(out->node, 0, alias);
        tt_release(alias);
    }
    return ctx;
}

// A unary op without scalar state: forward, record, hand to the scope.
static tt_tensor *unary_op(tt_kunary_op k, tt_op op, tt_tensor *x, const char *func) {
    tt_tensor *out = unary_forward(k, x, 0, func);
    unary_record(out, op, k, x, 0);
    return tt__autorelease(out);
}

// dx = g * f'(v), v the saved output or the input.
static void unary_backward(tt_node *n, tt_kunary_op k, double s) {
    tt_tensor *x = n->inputs[0];
    if (!x->requires_grad) return;
    tt_tensor *v = n->saved[0] ? n->saved[0] : x;
    tt_tensor *dx = tt__new(n->dtype, n->ndim, n->shape);  // (S)
    emap m = {MAP_UNARY_BACKWARD, (int)k, 0, s, n->dtype};
    emap_apply(&m, dx, 2, (tt_tensor *[]){n->grad, v});
    tt__accum_grad_owned(x, dx);
}

// ---- shared forward and backward of the binary ops ----

static tt_tensor *binary_op(tt_kbinary_op k, tt_op op, tt_tensor *a, tt_tensor *b,
                            const char *func) {
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
    emap m = {MAP_BINARY, (int)k, 0, 0, a->dtype};
    emap_apply(&m, out, 2, (tt_tensor *[]){a, b});
    tt__record(out, op, 2, (tt_tensor *[]){a, b}, 0);
    return tt__autorelease(out);
}

// Full-shape gradient of each input that requires grad; tt__accum_grad sums the broadcast
// dims away.
static void binary_backward(tt_node *n, tt_kbinary_op k) {
    tt_tensor *a = n->inputs[0], *b = n->inputs[1], *g = n->grad;
    for (int wrt = 0; wrt < 2; wrt++) {
        tt_tensor *x = n->inputs[wrt];
        if (!x->requires_grad) continue;
        if (k == TT_KB_ADD || (k == TT_KB_SUB && wrt == 0)) {  // the gradient is g itself
            tt__accum_grad(x, g);
            continue;
        }
        tt_tensor *d = tt__new(n->dtype, n->ndim, n->shape);  // (S)
        emap m = {MAP_BINARY_BACKWARD, (int)k, wrt, 0, n->dtype};
        emap_apply(&m, d, 3, (tt_tensor *[]){g, a, b});
        tt__accum_grad_owned(x, d);
    }
}

// ---- add, sub, mul, div ----

tt_tensor *tt_add(tt_tensor *a, tt_tensor *b) {
    return binary_op(TT_KB_ADD, TT_OP_ADD, a, b, __func__);
}
void tt__backward_add(tt_node *n) { binary_backward(n, TT_KB_ADD); }

tt_tensor *tt_sub(tt_tensor *a, tt_tensor *b) {
    return binary_op(TT_KB_SUB, TT_OP_SUB, a, b, __func__);
}
void tt__backward_sub(tt_node *n) { binary_backward(n, TT_KB_SUB); }

tt_tensor *tt_mul(tt_tensor *a, tt_tensor *b) {
    return binary_op(TT_KB_MUL, TT_OP_MUL, a, b, __func__);
}
void tt__backward_mul(tt_node *n) { binary_backward(n, TT_KB_MUL); }

tt_tensor *tt_div(tt_tensor *a, tt_tensor *b) {
    return binary_op(TT_KB_DIV, TT_OP_DIV, a, b, __func__);
}
void tt__backward_div(tt_node *n) { binary_backward(n, TT_KB_DIV); }

// ---- pow, maximum, minimum ----

tt_tensor *tt_pow(tt_tensor *a, tt_tensor *b) {
    return binary_op(TT_KB_POW, TT_OP_POW, a, b, __func__);
}
void tt__backward_pow(tt_node *n) { binary_backward(n, TT_KB_POW); }

tt_tensor *tt_maximum(tt_tensor *a, tt_tensor *b) {
    return binary_op(TT_KB_MAXIMUM, TT_OP_MAXIMUM, a, b, __func__);
}
void tt__backward_maximum(tt_node *n) { binary_backward(n, TT_KB_MAXIMUM); }

tt_tensor *tt_minimum(tt_tensor *a, tt_tensor *b) {
    return binary_op(TT_KB_MINIMUM, TT_OP_MINIMUM, a, b, __func__);
}
void tt__backward_minimum(tt_node *n) { binary_backward(n, TT_KB_MINIMUM); }

// ---- scalar forms ----

tt_tensor *tt_add_scalar(tt_tensor *a, double s) {
    tt_tensor *out = unary_forward(TT_KU_ADD_S, a, s, __func__);
    tt__record(out, TT_OP_ADD_SCALAR, 1, &a, 0);
    return tt__autorelease(out);
}
void tt__backward_add_scalar(tt_node *n) { tt__accum_grad(n->inputs[0], n->grad); }

// a - s is a + (-s): exact in IEEE arithmetic, so it needs no op of its own.
tt_tensor *tt_sub_scalar(tt_tensor *a, double s) { return tt_add_scalar(a, -s); }

typedef struct mul_scalar_ctx {
    double s;
} mul_scalar_ctx;

tt_tensor *tt_mul_scalar(tt_tensor *a, double s) {
    tt_tensor *out = unary_forward(TT_KU_MUL_S, a, s, __func__);
    mul_scalar_ctx *c = tt__record(out, TT_OP_MUL_SCALAR, 1, &a, sizeof *c);
    if (c) c->s = s;
    return tt__autorelease(out);
}
void tt__backward_mul_scalar(tt_node *n) {
    const mul_scalar_ctx *c = n->ctx;
    unary_backward(n, TT_KU_MUL_S, c->s);
}

typedef struct div_scalar_ctx {
    double s;
} div_scalar_ctx;

tt_tensor *tt_div_scalar(tt_tensor *a, double s) {
    tt_tensor *out = unary_forward(TT_KU_DIV_S, a, s, __func__);
    div_scalar_ctx *c = tt__record(out, TT_OP_DIV_SCALAR, 1, &a, sizeof *c);
    if (c) c->s = s;
    return tt__autorelease(out);
}
void tt__backward_div_scalar(tt_node *n) {
    const div_scalar_ctx *c = n->ctx;
    unary_backward(n, TT_KU_DIV_S, c->s);
}

tt_tensor *tt_rsub_scalar(double s, tt_tensor *a) {
    tt_tensor *out = unary_forward(TT_KU_RSUB_S, a, s, __func__);
    tt__record(out, TT_OP_RSUB_SCALAR, 1, &a, 0);
    return tt__autorelease(out);
}
void tt__backward_rsub_scalar(tt_node *n) { unary_backward(n, TT_KU_RSUB_S, 0); }

typedef struct pow_scalar_ctx {
    double p;
} pow_scalar_ctx;

tt_tensor *tt_pow_scalar(tt_tensor *a, double p) {
    tt_tensor *out = unary_forward(TT_KU_POW_S, a, p, __func__);
    pow_scalar_ctx *c = tt__record(out, TT_OP_POW_SCALAR, 1, &a, sizeof *c);
    if (c) c->p = p;
    return tt__autorelease(out);
}
void tt__backward_pow_scalar(tt_node *n) {
    const pow_scalar_ctx *c = n->ctx;
    unary_backward(n, TT_KU_POW_S, c->p);
}

// ---- unary maps ----
// exp, sqrt, rsqrt, tanh and sigmoid save an alias of their output (their derivative is
// cheaper from it); the others read their input, which the node retains.

tt_tensor *tt_neg(tt_tensor *x) { return unary_op(TT_KU_NEG, TT_OP_NEG, x, __func__); }
void tt__backward_neg(tt_node *n) { unary_backward(n, TT_KU_NEG, 0); }

tt_tensor *tt_exp(tt_tensor *x) { return unary_op(TT_KU_EXP, TT_OP_EXP, x, __func__); }
void tt__backward_exp(tt_node *n) { unary_backward(n, TT_KU_EXP, 0); }

tt_tensor *tt_log(tt_tensor *x) { return unary_op(TT_KU_LOG, TT_OP_LOG, x, __func__); }
void tt__backward_log(tt_node *n) { unary_backward(n, TT_KU_LOG, 0); }

tt_tensor *tt_sqrt(tt_tensor *x) { return unary_op(TT_KU_SQRT, TT_OP_SQRT, x, __func__); }
void tt__backward_sqrt(tt_node *n) { unary_backward(n, TT_KU_SQRT, 0); }

tt_tensor *tt_rsqrt(tt_tensor *x) { return unary_op(TT_KU_RSQRT, TT_OP_RSQRT, x, __func__); }
void tt__backward_rsqrt(tt_node *n) { unary_backward(n, TT_KU_RSQRT, 0); }

tt_tensor *tt_abs(tt_tensor *x) { return unary_op(TT_KU_ABS, TT_OP_ABS, x, __func__); }
void tt__backward_abs(tt_node *n) { unary_backward(n, TT_KU_ABS, 0); }

tt_tensor *tt_tanh(tt_tensor *x) { return unary_op(TT_KU_TANH, TT_OP_TANH, x, __func__); }
void tt__backward_tanh(tt_node *n) { unary_backward(n, TT_KU_TANH, 0); }

tt_tensor *tt_sigmoid(tt_tensor *x) {
    return unary_op(TT_KU_SIGMOID, TT_OP_SIGMOID, x, __func__);
}
void tt__backward_sigmoid(tt_node *n) { unary_backward(n, TT_KU_SIGMOID, 0); }

tt_tensor *tt_relu(tt_tensor *x) { return unary_op(TT_KU_RELU, TT_OP_RELU, x, __func__); }
void tt__backward_relu(tt_node *n) { unary_backward(n, TT_KU_RELU, 0); }

tt_tensor *tt_gelu(tt_tensor *x) { return unary_op(TT_KU_GELU, TT_OP_GELU, x, __func__); }
void tt__backward_gelu(tt_node *n) { unary_backward(n, TT_KU_GELU, 0); }

tt_tensor *tt_gelu_tanh(tt_tensor *x) {
    return unary_op(TT_KU_GELU_TANH, TT_OP_GELU_TANH, x, __func__);
}
void tt__backward_gelu_tanh(tt_node *n) { unary_backward(n, TT_KU_GELU_TANH, 0); }

tt_tensor *tt_silu(tt_tensor *x) { return unary_op(TT_KU_SILU, TT_OP_SILU, x, __func__); }
void tt__backward_silu(tt_node *n) { unary_backward(n, TT_KU_SILU, 0); }

tt_tensor *tt_square(tt_tensor *x) {
    return unary_op(TT_KU_SQUARE, TT_OP_SQUARE, x, __func__);
}
void tt__backward_square(tt_node *n) { unary_backward(n, TT_KU_SQUARE, 0); }
