// tt_matmul with NumPy semantics (dot, matrix, batched with broadcast batch dims, 1-D operands)
// and its backward, forward and backward side by side. Operands are read in place through
// their strides; the GEMM kernels (tensor/kernels_matmul.c) do the arithmetic.
#include "autograd_internal.h"
#include "../tensor/kernels_matmul.h"

// Letters: a (..., M, K) @ b (..., K, N) -> out (batch..., M, N); a 1-D a is (K,) read as
// (1, K), a 1-D b is (K,) read as (K, 1), and those dims of 1 are not in out.

// Like TT_CHECK, but the message names tt_matmul rather than the helper it runs in.
#define MM_CHECK(...) TT_CHECK_IN("tt_matmul", __VA_ARGS__)

// ---- shapes ----

typedef struct mm_plan {
    int nb;                       // batch dims of the output
    int64_t batch[TT_MAX_DIMS];  // the broadcast batch shape
    int64_t M, N, K;
    bool a_vec, b_vec;            // a or b is 1-D
    int out_ndim;
    int64_t out_shape[TT_MAX_DIMS];
} mm_plan;

// Validates the operands and works out the output's shape; aborts with a message on misuse.
static mm_plan plan_matmul(const tt_tensor *a, const tt_tensor *b) {
    MM_CHECK(a && b, "operand %s is NULL", a ? "b" : "a");
    tt__check_float(a, "tt_matmul");
    tt__check_float(b, "tt_matmul");
    tt__check_same_dtype(a, b, "tt_matmul");
    MM_CHECK(a->ndim >= 1 && b->ndim >= 1, "%s @ %s: a 0-d operand has no matrix dims; "
             "multiply by a scalar with tt_mul or tt_mul_scalar instead", tt__shape(a),
             tt__shape(b));
    mm_plan p = {0};
    p.a_vec = a->ndim == 1;
    p.b_vec = b->ndim == 1;
    p.M = p.a_vec ? 1 : a->shape[a->ndim - 2];
    p.K = a->shape[a->ndim - 1];
    int64_t kb = p.b_vec ? b->shape[0] : b->shape[b->ndim - 2];
    p.N = p.b_vec ? 1 : b->shape[b->ndim - 1];
    if (p.K != kb) {
        const char *want = p.a_vec && p.b_vec ? "a and b must have the same length (a dot "
                                                "product)"
                           : p.b_vec ? "a's last dim must equal b's length"
                           : p.a_vec ? "a's length must equal b's second-to-last dim"
                                     : "a's last dim must equal b's second-to-last";
        MM_CHECK(0, "inner dims differ: %s @ %s (%lld vs %lld); %s", tt__shape(a),
                 tt__shape(b), (long long)p.K, (long long)kb, want);
    }
    int na = p.a_vec ? 0 : a->ndim - 2, nb = p.b_vec ? 0 : b->ndim - 2;
    MM_CHECK(tt__broadcast_shape(na, a->shape, nb, b->shape, &p.nb, p.batch),
             "batch dims do not broadcast: %s @ %s has batch shapes %s and %s; aligned from "
             "the right, each pair of batch dims must be equal or one of them 1 (the last two "
             "dims are the matrices)", tt__shape(a), tt__shape(b), tt__shape_of(na, a->shape),
             tt__shape_of(nb, b->shape));
    p.out_ndim = p.nb;
    for (int d = 0; d < p.nb; d++) p.out_shape[d] = p.batch[d];
    if (!p.a_vec) p.out_shape[p.out_ndim++] = p.M;
    if (!p.b_vec) p.out_shape[p.out_ndim++] = p.N;
    return p;
}

// ---- operands as stacks of matrices ----

// Batch strides of t's leading `nt` dims read over the batch shape (0 on broadcast dims).
static void batch_strides(const tt_tensor *t, int nt, const mm_plan *p, int64_t *bs) {
    for (int d = 0; d < p->nb; d++) {
        int dt = nt - p->nb + d;
        bs[d] = dt < 0 || t->shape[dt] == 1 ? 0 : t->stride[dt];
    }
}

static void *first_elem(const tt_tensor *t) {
    return (char *)tt__base(t) + t->offset * (int64_t)tt_dtype_size(t->dtype);
}

// a, or anything of a's shape (its gradient), as the (M, K) left operand.
static tt_k_matrix left_operand(const tt_tensor *t, const mm_plan *p) {
    tt_k_matrix m = {.data = first_elem(t)};
    m.rs = p->a_vec ? 0 : t->stride[t->ndim - 2];
    m.cs = t->stride[t->ndim - 1];
    batch_strides(t, p->a_vec ? 0 : t->ndim - 2, p, m.bs);
    return m;
}

// b, or anything of b's shape, as the (K, N) right operand.
static tt_k_matrix right_operand(const tt_tensor *t, const mm_plan *p) {
    tt_k_matrix m = {.data = first_elem(t)};
    m.rs = p->b_vec ? t->stride[0] : t->stride[t->ndim - 2];
    m.cs = p->b_vec ? 0 : t->stride[t->ndim - 1];
    batch_strides(t, p->b_vec ? 0 : t->ndim - 2, p, m.bs);
    return m;
}

// The output, or its gradient, as the (M, N) result.
static tt_k_matrix out_operand(const tt_tensor *t, const mm_plan *p) {
    tt_k_matrix m = {.data = first_elem(t)};
    m.rs = p->a_vec ? 0 : t->stride[p->nb];
    m.cs = p->b_vec ? 0 : t->stride[t->ndim - 1];
    for (int d = 0; d < p->nb; d++) m.bs[d] = p->batch[d] == 1 ? 0 : t->stride[d];
    return m;
}

// The (rows, cols) matrices of m read as (cols, rows): a transposed view, no copy.
static tt_k_matrix transposed(tt_k_matrix m) {
    int64_t s = m.rs;
    m.rs = m.cs;
    m.cs = s;
    return m;
}

// ---- matmul ----

// out[i, j] = sum_k a[i, k] b[k, j] for every batch index.
tt_tensor *tt_matmul(tt_tensor *a, tt_tensor *b) {
    mm_plan p = plan_matmul(a, b);
    tt_tensor *out = tt__new(a->dtype, p.out_ndim, p.out_shape);
    tt_k_matrix ma = left_operand(a, &p), mb = right_operand(b, &p), mc = out_operand(out, &p);
    tt_k_gemm_batched(a->dtype, p.nb, p.batch, p.M, p.N, p.K, &ma, &mb, &mc, false);
    tt__record(out, TT_OP_MATMUL, 2, (tt_tensor *[]){a, b}, 0);
    return tt__autorelease(out);
}

// True when t (a, vec: a_vec; or b, vec: b_vec) is broadcast along a batch dim of size != 1:
// batch_strides gives a tensor of its shape a 0 stride there, so the GEMM sums that dim's
// products into it (accumulate into a zeroed buffer), or, for a dim of size 0, writes
// nothing (the gradient is 0).
static bool broadcast_batch(const tt_tensor *t, bool vec, const mm_plan *p) {
    int nt = vec ? 0 : t->ndim - 2;
    for (int d = 0; d < p->nb; d++) {
        int dt = nt - p->nb + d;
        if (p->batch[d] != 1 && (dt < 0 || t->shape[dt] == 1)) return true;
    }
    return false;
}

// da = g @ b^T (M, K), db = a^T @ g (K, N), per batch index, each into a fresh contiguous
// tensor of its input's shape that the input then takes over (tt__accum_grad_owned). The
// buffer is zeroed and accumulated into only where the input was broadcast.
void tt__backward_matmul(tt_node *n) {
    tt_tensor *a = n->inputs[0], *b = n->inputs[1], *g = n->grad;
    mm_plan p = plan_matmul(a, b);
    tt_k_matrix mg = out_operand(g, &p);
    if (a->requires_grad) {
        bool acc = broadcast_batch(a, p.a_vec, &p);
        tt_tensor *da = (acc ? tt__new_zeros : tt__new)(a->dtype, a->ndim, a->shape);
        tt_k_matrix mda = left_operand(da, &p), mbt = transposed(right_operand(b, &p));
        tt_k_gemm_batched(a->dtype, p.nb, p.batch, p.M, p.K, p.N, &mg, &mbt, &mda, acc);
        tt__accum_grad_owned(a, da);
    }
    if (b->requires_grad) {
        bool acc = broadcast_batch(b, p.b_vec, &p);
        tt_tensor *db = (acc ? tt__new_zeros : tt__new)(b->dtype, b->ndim, b->shape);
        tt_k_matrix mdb = right_operand(db, &p), mat = transposed(left_operand(a, &p));
        tt_k_gemm_batched(b->dtype, p.nb, p.batch, p.K, p.N, p.M, &mat, &mg, &mdb, acc);
        tt__accum_grad_owned(b, db);
    }
}
