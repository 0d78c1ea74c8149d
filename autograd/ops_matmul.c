// tt_matmul with NumPy semantics (dot, matrix, batched with broadcast batch dims, 1-D operands)
// and tt_affine (x @ W^T + b, the bias in the GEMM's epilogue), each forward and backward side
// by side. Operands are read in place through their strides; the GEMM kernels
// (tensor/kernels/matmul.c, and bf16.c for f32 products under autocast) do the arithmetic.
#include "autograd_internal.h"
#include "../tensor/kernels/bf16.h"
#include "../tensor/kernels/matmul.h"

#include <string.h>

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

// ---- autocast ----

// What a matmul or affine node remembers of its forward: whether its products ran in bf16
// (autocast on and f32 operands), so that its backward does the same.
typedef struct product_ctx {
    bool bf16;
} product_ctx;

// Products of `dtype` operands run in bf16: autocast is on and they are f32 (f64 never casts).
static bool use_bf16(tt_dtype dtype) { return dtype == TT_F32 && tt_autocast_enabled(); }

// tt_k_gemm_batched's contract with bf16 products (f32 operands rounded while packed, f32
// accumulation): one tt_k_gemm_bf16 per batch index, in row-major batch order, so products
// summed into a broadcast C add up in the same order on every run.
static void gemm_batched_bf16(int nb, const int64_t *batch, int64_t M, int64_t N, int64_t K,
                              const tt_k_matrix *a, const tt_k_matrix *b, const tt_k_matrix *c,
                              bool accumulate) {
    int64_t count = tt__shape_numel(nb, batch), idx[TT_MAX_DIMS] = {0};
    if (M <= 0 || N <= 0 || count == 0) return;
    for (int64_t i = 0; i < count; i++) {
        int64_t oa = 0, ob = 0, oc = 0;
        for (int d = 0; d < nb; d++) {
            oa += idx[d] * a->bs[d];
            ob += idx[d] * b->bs[d];
            oc += idx[d] * c->bs[d];
        }
        tt_k_gemm_bf16(M, N, K, (const float *)a->data + oa, TT_K_SRC_F32, a->rs, a->cs,
                       (const float *)b->data + ob, TT_K_SRC_F32, b->rs, b->cs,
                       (float *)c->data + oc, c->rs, c->cs, accumulate);
        for (int d = nb - 1; d >= 0 && ++idx[d] == batch[d]; d--) idx[d] = 0;  // next index
    }
}

// C[idx] (+)= A[idx] B[idx] for every batch index: tt_k_gemm_batched, or its bf16 twin.
static void gemm_batched(bool bf16, tt_dtype dtype, int nb, const int64_t *batch, int64_t M,
                         int64_t N, int64_t K, const tt_k_matrix *a, const tt_k_matrix *b,
                         const tt_k_matrix *c, bool accumulate) {
    if (bf16) gemm_batched_bf16(nb, batch, M, N, K, a, b, c, accumulate);
    else tt_k_gemm_batched(dtype, nb, batch, M, N, K, a, b, c, accumulate);
}

// The node's precision: bf16 when the forward ran under autocast.
static bool node_bf16(const tt_node *n) { return ((const product_ctx *)n->ctx)->bf16; }

// ---- matmul ----

// out[i, j] = sum_k a[i, k] b[k, j] for every batch index.
tt_tensor *tt_matmul(tt_tensor *a, tt_tensor *b) {
    mm_plan p = plan_matmul(a, b);
    bool bf16 = use_bf16(a->dtype);
    tt_tensor *out = tt__new(a->dtype, p.out_ndim, p.out_shape);
    tt_k_matrix ma = left_operand(a, &p), mb = right_operand(b, &p), mc = out_operand(out, &p);
    gemm_batched(bf16, a->dtype, p.nb, p.batch, p.M, p.N, p.K, &ma, &mb, &mc, false);
    product_ctx *c = tt__record(out, TT_OP_MATMUL, 2, (tt_tensor *[]){a, b}, sizeof *c);
    if (c) c->bf16 = bf16;
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
    bool bf16 = node_bf16(n);
    tt_k_matrix mg = out_operand(g, &p);
    if (a->requires_grad) {
        bool acc = broadcast_batch(a, p.a_vec, &p);
        tt_tensor *da = (acc ? tt__new_zeros_at : tt__new_at)(__func__, a->dtype, a->ndim,
                                                               a->shape);
        tt_k_matrix mda = left_operand(da, &p), mbt = transposed(right_operand(b, &p));
        gemm_batched(bf16, a->dtype, p.nb, p.batch, p.M, p.K, p.N, &mg, &mbt, &mda, acc);
        tt__accum_grad_owned(a, da);
    }
    if (b->requires_grad) {
        bool acc = broadcast_batch(b, p.b_vec, &p);
        tt_tensor *db = (acc ? tt__new_zeros_at : tt__new_at)(__func__, b->dtype, b->ndim,
                                                               b->shape);
        tt_k_matrix mdb = right_operand(db, &p), mat = transposed(left_operand(a, &p));
        gemm_batched(bf16, b->dtype, p.nb, p.batch, p.K, p.N, p.M, &mat, &mg, &mdb, acc);
        tt__accum_grad_owned(b, db);
    }
}

// ---- affine ----

#define LIN_CHECK(...) TT_CHECK_IN("tt_affine", __VA_ARGS__)

// t (..., n) as a stack of rows: true, with the row stride, when its leading dims fold into one
// (each steps over whole runs of the next; dims of size 1 are free). Any column stride.
static bool rows_fold(const tt_tensor *t, int64_t *rs) {
    int64_t stride = 0, span = 0;  // stride of the folded rows; rows folded so far
    for (int d = t->ndim - 2; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (span == 0) stride = t->stride[d], span = 1;
        else if (t->stride[d] != stride * span) return false;
        span *= t->shape[d];
    }
    *rs = stride;
    return true;
}

// t itself (retained) when its rows fold, else a contiguous copy; *rs is the row stride.
static tt_tensor *as_rows(tt_tensor *t, int64_t *rs) {
    if (rows_fold(t, rs)) return tt_retain(t);
    tt_tensor *c = tt__contiguous_copy(t);
    *rs = c->ndim >= 2 ? c->shape[c->ndim - 1] : 0;
    return c;
}

// C (M, N), rows of N contiguous, = A B (+ bias on every row), in dtype dt; with bf16 (f32
// operands only), the products take bf16-rounded inputs and accumulate in f32.
static void gemm(bool bf16, tt_dtype dt, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t a_rs, int64_t a_cs, const void *B, int64_t b_rs, int64_t b_cs,
                 const void *bias, void *C) {
    if (bf16 && bias)
        tt_k_gemm_bias_bf16(M, N, K, A, TT_K_SRC_F32, a_rs, a_cs, B, TT_K_SRC_F32, b_rs, b_cs,
                            bias, C, N);
    else if (bf16)
        tt_k_gemm_bf16(M, N, K, A, TT_K_SRC_F32, a_rs, a_cs, B, TT_K_SRC_F32, b_rs, b_cs, C, N,
                       1, false);
    else if (dt == TT_F32 && bias)
        tt_k_gemm_bias_f32(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, bias, C, N);
    else if (dt == TT_F32)
        tt_k_gemm_f32(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, N, 1, false);
    else if (bias)
        tt_k_gemm_bias_f64(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, bias, C, N);
    else
        tt_k_gemm_f64(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, N, 1, false);
}

tt_tensor *tt_affine(tt_tensor *x, tt_tensor *weight, tt_tensor *bias) {
    LIN_CHECK(x && weight, "%s is NULL", x ? "weight" : "x");
    tt__check_float(x, "tt_affine");
    tt__check_same_dtype(x, weight, "tt_affine");
    LIN_CHECK(x->ndim >= 1 && weight->ndim == 2 && x->shape[x->ndim - 1] == weight->shape[1],
              "x %s, weight %s: weight must be 2-D (out_features, in_features) and x's last "
              "dim must equal in_features", tt__shape(x), tt__shape(weight));
    int64_t N = weight->shape[0], K = weight->shape[1];
    if (bias) {
        tt__check_same_dtype(x, bias, "tt_affine");
        LIN_CHECK(bias->ndim == 1 && bias->shape[0] == N,
                  "bias %s must be (%lld,), one value per output of weight %s", tt__shape(bias),
                  (long long)N, tt__shape(weight));
    }
    int64_t shape[TT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = N;
    tt_tensor *out = tt__new(x->dtype, x->ndim, shape);
    int64_t M = tt__shape_numel(x->ndim - 1, x->shape), x_rs;
    tt_tensor *xr = as_rows(x, &x_rs), *bc = bias ? tt__contiguous_ref(bias) : NULL;
    bool bf16 = use_bf16(x->dtype);
    gemm(bf16, x->dtype, M, N, K, first_elem(xr), x_rs, xr->stride[xr->ndim - 1],
         first_elem(weight), weight->stride[1], weight->stride[0], bc ? tt_data(bc) : NULL,
         tt_data(out));
    product_ctx *c = tt__record(out, TT_OP_AFFINE, 3, (tt_tensor *[]){x, weight, bias},
                                sizeof *c);
    if (c) c->bf16 = bf16;
    if (out->node && xr != x && weight->requires_grad)
        tt__save(out->node, 0, xr);  // the copy of x, for dW: not made twice
    tt_release(xr);
    tt_release(bc);
    return tt__autorelease(out);
}

// dx (M, K) = g (M, N) @ W (N, K); dW (N, K) = g^T @ x (M, K) summed over the M rows; db = the
// column sums of g. dx and dW are fresh buffers the inputs take over.
void tt__backward_affine(tt_node *n) {
    tt_tensor *x = n->inputs[0], *w = n->inputs[1], *b = n->inputs[2];
    int64_t N = w->shape[0], K = w->shape[1], M = tt__shape_numel(x->ndim - 1, x->shape), g_rs;
    tt_tensor *g = as_rows(n->grad, &g_rs);
    int64_t g_cs = g->stride[g->ndim - 1];
    bool bf16 = node_bf16(n);
    // x already has a gradient (x feeds several Linears, as q, k and v): the bf16 product adds
    // into it in place. With one k block (N <= TT_K_BF16_KC) that is the same single addition
    // per element as a fresh dx added afterwards, so the same bits, without the buffer and
    // the extra pass.
    tt_tensor *sofar = bf16 && N <= TT_K_BF16_KC ? tt__grad_inplace(x) : NULL;
    if (sofar && (sofar->storage == g->storage || sofar->storage == w->storage)) sofar = NULL;
    if (sofar) {
        tt_k_gemm_bf16(M, K, N, first_elem(g), TT_K_SRC_F32, g_rs, g_cs, first_elem(w),
                       TT_K_SRC_F32, w->stride[0], w->stride[1], tt_data(sofar), K, 1, true);
    } else if (x->requires_grad) {
        tt_tensor *dx = tt__new(x->dtype, x->ndim, x->shape);
        gemm(bf16, x->dtype, M, K, N, first_elem(g), g_rs, g_cs, first_elem(w), w->stride[0],
             w->stride[1], NULL, tt_data(dx));
        tt__accum_grad_owned(x, dx);
    }
    if (w->requires_grad) {
        int64_t x_rs;
        tt_tensor *xr = as_rows(n->saved[0] ? n->saved[0] : x, &x_rs);
        tt_tensor *dw = tt__new(w->dtype, 2, w->shape);
        gemm(bf16, x->dtype, N, K, M, first_elem(g), g_cs, g_rs, first_elem(xr), x_rs,
             xr->stride[xr->ndim - 1], NULL, tt_data(dw));
        tt_release(xr);
        tt__accum_grad_owned(w, dw);
    }
    if (b && b->requires_grad) tt__accum_grad(b, g);  // sums g's leading dims
    tt_release(g);
}

// ---- differentiable backwards (create_graph) ----

// The last two dims of t swapped: t^T per batch index.
static tt_tensor *mT(tt_tensor *t) { return tt_transpose(t, t->ndim - 2, t->ndim - 1); }

// da = g @ b^T, db = a^T @ g, with a 1-D a read as (1, K), a 1-D b as (K, 1) and g as
// (batch..., M, N); the results lose those inserted dims again and tt__accum_grad sums the
// broadcast batch dims down to each operand's shape.
static void matmul2(tt_node *n) {
    tt_tensor *a = n->inputs[0], *b = n->inputs[1];
    mm_plan p = plan_matmul(a, b);
    int64_t gshape[TT_MAX_DIMS + 2];
    memcpy(gshape, p.batch, (size_t)p.nb * sizeof *gshape);
    gshape[p.nb] = p.M;
    gshape[p.nb + 1] = p.N;
    tt_tensor *g = tt_reshape(n->grad, p.nb + 2, gshape);  // (batch..., M, N)
    tt_tensor *a2 = p.a_vec ? tt_unsqueeze(a, 0) : a;      // (..., M, K)
    tt_tensor *b2 = p.b_vec ? tt_unsqueeze(b, 1) : b;      // (..., K, N)
    if (tt__input_needs_grad(n, 0)) {
        tt_tensor *da = tt_matmul(g, mT(b2));  // (batch..., M, K)
        tt__accum_grad(a, p.a_vec ? tt_squeeze(da, da->ndim - 2) : da);
    }
    if (tt__input_needs_grad(n, 1)) {
        tt_tensor *db = tt_matmul(mT(a2), g);  // (batch..., K, N)
        tt__accum_grad(b, p.b_vec ? tt_squeeze(db, db->ndim - 1) : db);
    }
}

// out = x @ W^T + bias, x (..., K), W (N, K), bias (N,) or NULL: dx = g @ W (..., K);
// dW = g^T @ x (N, K) over all leading dims (g and x flattened to (M, N) and (M, K));
// dbias = g summed over its leading dims. x is n->inputs[0] (its saved copy has no history).
static void affine2(tt_node *n) {
    tt_tensor *x = n->inputs[0], *w = n->inputs[1], *g = n->grad;
    int64_t N = w->shape[0], K = w->shape[1], M = tt__shape_numel(x->ndim - 1, x->shape);
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(x, tt_matmul(g, w));
    if (tt__input_needs_grad(n, 1)) {
        tt_tensor *g2 = tt_reshape(g, 2, (int64_t[]){M, N}),
                  *x2 = tt_reshape(x, 2, (int64_t[]){M, K});
        tt__accum_grad(w, tt_matmul(mT(g2), x2));
    }
    if (tt__input_needs_grad(n, 2)) tt__accum_grad(n->inputs[2], g);  // sums g's leading dims
}

const tt__grad2_row tt__grad2_matmul[] = {
    {TT_OP_MATMUL, matmul2},
    {TT_OP_AFFINE, affine2},
    {TT_OP_COUNT, NULL},
};
