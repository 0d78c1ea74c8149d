// Low rank: a one-sided Jacobi SVD in f64 (small matrices: O(sweeps m n^2)) and the truncated
// SVD of a Linear's weight as two Linears (tt_nn_linear_low_rank). Not a general LAPACK: no
// blocking, no bidiagonalization.
#include "compress_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- SVD ----

// One-sided Jacobi (Hestenes 1958; Demmel and Veselic 1992) on the columns of a (m, n) matrix
// with m >= n, stored column by column: col[j * m + i] = A[i, j]. Rotates column pairs (p, q)
// until every pair is orthogonal to relative precision 1e-15; V (n, n), stored the same way,
// accumulates the rotations, so A V = [orthogonal columns] = U diag(S).
static void jacobi_columns(double *col, double *V, int64_t m, int64_t n) {
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) V[j * n + i] = i == j;
    for (int sweep = 0; sweep < 100; sweep++) {
        bool rotated = false;
        for (int64_t p = 0; p < n - 1; p++) {
            for (int64_t q = p + 1; q < n; q++) {
                double *a = col + p * m, *b = col + q * m;
                double alpha = 0, beta = 0, gamma = 0;
                for (int64_t i = 0; i < m; i++) {
                    alpha += a[i] * a[i];
                    beta += b[i] * b[i];
                    gamma += a[i] * b[i];
                }
                if (gamma == 0 || fabs(gamma) <= 1e-15 * sqrt(alpha * beta)) continue;
                rotated = true;
                // The rotation that zeroes the (p, q) entry of the 2x2 Gram matrix.
                double zeta = (beta - alpha) / (2 * gamma);
                double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), s = c * t;
                for (int64_t i = 0; i < m; i++) {
                    double x = a[i], y = b[i];
                    a[i] = c * x - s * y;
                    b[i] = s * x + c * y;
                }
                double *vp = V + p * n, *vq = V + q * n;
                for (int64_t i = 0; i < n; i++) {
                    double x = vp[i], y = vq[i];
                    vp[i] = c * x - s * y;
                    vq[i] = s * x + c * y;
                }
            }
        }
        if (!rotated) break;
    }
}

typedef struct sv_order {
    double s;
    int64_t j;
} sv_order;

static int sv_desc(const void *x, const void *y) {
    const sv_order *a = x, *b = y;
    if (a->s != b->s) return a->s > b->s ? -1 : 1;
    return (a->j > b->j) - (a->j < b->j);
}

void tt_svd_jacobi(double *U, double *S, double *Vt, const double *A, int64_t m, int64_t n) {
    TT_CHECK(U && S && Vt && A, "the arrays must not be NULL");
    TT_CHECK(m >= 1 && n >= 1, "the matrix must have m, n >= 1, got (%lld, %lld)",
             (long long)m, (long long)n);
    // Work on B = A (tall) or A^T (wide): B is (r, k) with r >= k.
    bool wide = m < n;
    int64_t r = wide ? n : m, k = wide ? m : n;
    double *col = TT_MALLOC((size_t)(r * k) * sizeof *col);  // (k columns of r)
    double *V = TT_MALLOC((size_t)(k * k) * sizeof *V);      // (k columns of k)
    sv_order *ord = TT_MALLOC((size_t)k * sizeof *ord);
    for (int64_t j = 0; j < k; j++)
        for (int64_t i = 0; i < r; i++)
            col[j * r + i] = wide ? A[j * n + i] : A[i * n + j];  // B[i, j]
    jacobi_columns(col, V, r, k);
    for (int64_t j = 0; j < k; j++) {
        double s = 0;
        for (int64_t i = 0; i < r; i++) s += col[j * r + i] * col[j * r + i];
        ord[j] = (sv_order){sqrt(s), j};
    }
    qsort(ord, (size_t)k, sizeof *ord, sv_desc);
    // B = P diag(S) Q^T with P[:, t] = col[j] / s, Q[:, t] = V[j] for j = ord[t].j.
    // Tall: U = P (m, k), Vt = Q^T (k, n). Wide: A = B^T = Q diag(S) P^T: U = Q, Vt = P^T.
    for (int64_t t = 0; t < k; t++) {
        int64_t j = ord[t].j;
        double s = ord[t].s, inv = s > 0 ? 1 / s : 0;
        S[t] = s;
        for (int64_t i = 0; i < r; i++) {
            double pv = col[j * r + i] * inv;
            if (wide) Vt[t * n + i] = pv;  // P^T (k, n)
            else U[i * k + t] = pv;        // P (m, k)
        }
        for (int64_t i = 0; i < k; i++) {
            double qv = V[j * k + i];
            if (wide) U[i * k + t] = qv;   // Q (m, k)
            else Vt[t * n + i] = qv;       // Q^T (k, n)
        }
    }
    tt_free(ord);
    tt_free(V);
    tt_free(col);
}

void tt_svd(const tt_tensor *A, tt_tensor **U, tt_tensor **S, tt_tensor **Vh) {
    TT_CHECK(A && U && S && Vh, "the matrix and the outputs must not be NULL");
    TT_CHECK(A->ndim == 2 && tt_dtype_is_float(A->dtype) && A->shape[0] >= 1 &&
             A->shape[1] >= 1, "A must be a non-empty float matrix (m, n), got %s %s",
             tt__shape(A), tt_dtype_name(A->dtype));
    int64_t m = A->shape[0], n = A->shape[1], k = m < n ? m : n;
    double *a = TT_MALLOC((size_t)(m * n) * sizeof *a);
    tt_to_f64_array(A, a);
    tt_tensor *u = tt__new(TT_F64, 2, (int64_t[]){m, k});
    tt_tensor *s = tt__new(TT_F64, 1, (int64_t[]){k});
    tt_tensor *vh = tt__new(TT_F64, 2, (int64_t[]){k, n});
    tt_svd_jacobi(tt_data_f64(u), tt_data_f64(s), tt_data_f64(vh), a, m, n);
    tt_free(a);
    *U = tt__autorelease(u);
    *S = tt__autorelease(s);
    *Vh = tt__autorelease(vh);
}

// ---- a Linear as two ----
// The module tt_nn_linear_low_rank swaps in: torch.nn.Sequential(Linear(in, r, bias=False),
// Linear(r, out)), its children named "0" and "1".

typedef struct low_rank_linear {
    tt_nn_linear f[2];  // (in -> r), (r -> out) with the bias
} low_rank_linear;

static tt_tensor *low_rank_fwd(void *self, tt_tensor *x) {
    low_rank_linear *s = self;  // (..., in) -> (..., r) -> (..., out)
    return tt_nn_linear_forward(&s->f[1], tt_nn_linear_forward(&s->f[0], x));
}
static void low_rank_children(void *self, tt_module_visit visit, void *ctx) {
    low_rank_linear *s = self;
    visit(tt_nn_linear_module(&s->f[0]), "0", ctx);
    visit(tt_nn_linear_module(&s->f[1]), "1", ctx);
}
static void low_rank_free(void *self) {
    low_rank_linear *s = self;
    tt_nn_linear_free(&s->f[0]);
    tt_nn_linear_free(&s->f[1]);
    tt_free(s);
}
static const tt_module_ops low_rank_ops = {.type = "LowRankLinear", .forward = low_rank_fwd,
                                           .children = low_rank_children,
                                           .free = low_rank_free};

tt_nn_linear *tt_nn_linear_factors(const tt_nn_linear *m) {
    return m && m->swap.ops == &low_rank_ops ? ((low_rank_linear *)m->swap.self)->f : NULL;
}

// A new unscoped parameter of dtype (rows, cols) from row-major doubles.
static tt_tensor *param_from(tt_dtype dtype, int64_t rows, int64_t cols, const double *v) {
    tt_tensor *d = tt__new(TT_F64, 2, (int64_t[]){rows, cols});
    memcpy(tt_data_f64(d), v, (size_t)(rows * cols) * sizeof *v);
    tt_tensor *t = tt__new(dtype, 2, (int64_t[]){rows, cols});
    tt_copy_(t, d);
    tt_release(d);
    t->requires_grad = true;
    return t;
}

void tt_nn_linear_low_rank(tt_nn_linear *m, int64_t rank) {
    TT_CHECK(m && (m->weight || m->swap.ops), "the Linear is not initialized; call "
             "tt_nn_linear_init first");
    TT_CHECK(!tt_nn_linear_factors(m), "the Linear (in=%lld, out=%lld) is already low rank; factor "
             "a dense Linear once", (long long)m->in_features, (long long)m->out_features);
    TT_CHECK(!tt_nn_linear_quantized(m), "the Linear (in=%lld, out=%lld) runs int8; call "
             "tt_nn_linear_dequantize first", (long long)m->in_features,
             (long long)m->out_features);
    int64_t out = m->out_features, in = m->in_features, k = out < in ? out : in;
    TT_CHECK(rank >= 1 && rank <= k, "rank %lld must be in [1, min(out, in)] = [1, %lld] for "
             "the weight (%lld, %lld)", (long long)rank, (long long)k, (long long)out,
             (long long)in);
    double *w = TT_MALLOC((size_t)(out * in) * sizeof *w);   // (out, in)
    double *U = TT_MALLOC((size_t)(out * k) * sizeof *U);    // (out, k)
    double *S = TT_MALLOC((size_t)k * sizeof *S);            // (k)
    double *Vt = TT_MALLOC((size_t)(k * in) * sizeof *Vt);   // (k, in)
    double *down = TT_MALLOC((size_t)(rank * in) * sizeof *down);  // (r, in)
    double *up = TT_MALLOC((size_t)(out * rank) * sizeof *up);     // (out, r)
    tt_to_f64_array(m->weight, w);
    tt_svd_jacobi(U, S, Vt, w, out, in);
    for (int64_t r = 0; r < rank; r++) {
        double s = sqrt(S[r]);
        for (int64_t i = 0; i < in; i++) down[r * in + i] = s * Vt[r * in + i];
        for (int64_t o = 0; o < out; o++) up[o * rank + r] = U[o * k + r] * s;
    }
    tt_dtype dtype = m->weight->dtype;
    low_rank_linear *s = TT_MALLOC(sizeof *s);
    memset(s, 0, sizeof *s);
    s->f[0] = (tt_nn_linear){.weight = param_from(dtype, rank, in, down), .in_features = in,
                             .out_features = rank};
    s->f[1] = (tt_nn_linear){.weight = param_from(dtype, out, rank, up), .bias = m->bias,
                             .in_features = rank, .out_features = out};
    tt_nn_linear_dequantize(m);  // an observer, if any, goes
    m->bias = NULL;  // moved to the second factor
    tt_release(m->weight);
    m->weight = NULL;
    m->swap = (tt_module){s, &low_rank_ops};
    tt_free(up);
    tt_free(down);
    tt_free(Vt);
    tt_free(S);
    tt_free(U);
    tt_free(w);
}
