// Neural-network kernels on contiguous raw buffers, forward and backward, f32 and f64:
// softmax, log-softmax, masked fill, layernorm, rmsnorm, embedding, cross-entropy, dropout.
// No tensors and no autograd (autograd/ops_nn.c wraps them). Shapes and letters: kernels_nn.h.
//
// Each kernel is written once as a macro over the element type T (suffix S) and instantiated
// for float and double. <tgmath.h> picks expf/logf/sqrtf for float operands. f32 rows are
// reduced in double. Rows are independent, so they run in parallel (OpenMP) when large;
// reductions across rows (dweight, the loss) run in a fixed serial order: results do not
// depend on the thread count.
#include "kernels_nn.h"

#include <tgmath.h>

#include "tensor_internal.h"

// Below this many elements a kernel stays on one thread.
#define PAR_MIN 32768

#ifdef _OPENMP
#define PARALLEL_ROWS _Pragma("omp parallel for schedule(static) if (par)")
#else
#define PARALLEL_ROWS
#endif

// ---- softmax / log-softmax ----
// softmax(x)_c = exp(x_c - m) / sum_k exp(x_k - m), m = max_k x_k;
// log_softmax(x)_c = x_c - m - log(sum_k exp(x_k - m)). Row r of (outer, C, inner) starts at
// (r / inner) C inner + r % inner and steps by inner.

#define SOFTMAX_FORWARD(T, S)                                                                      \
    /* One row of C elements st apart; called with st == 1 for the contiguous fast path. */        \
    static inline void softmax_row_##S(T *yr, const T *xr, int64_t C, int64_t st,                  \
                                       bool log_out) {                                             \
        T m = -INFINITY;                                                                           \
        for (int64_t c = 0; c < C; c++) m = xr[c * st] > m ? xr[c * st] : m;                       \
        if (m == -INFINITY) {  /* fully masked: nothing to normalize */                            \
            for (int64_t c = 0; c < C; c++) yr[c * st] = log_out ? -INFINITY : 0;                  \
            return;                                                                                \
        }                                                                                          \
        double sum = 0;                                                                            \
        for (int64_t c = 0; c < C; c++) {                                                          \
            T e = exp(xr[c * st] - m);                                                             \
            sum += e;                                                                              \
            if (!log_out) yr[c * st] = e;                                                          \
        }                                                                                          \
        if (log_out) {                                                                             \
            T lse = (T)log(sum);                                                                   \
            for (int64_t c = 0; c < C; c++) yr[c * st] = xr[c * st] - m - lse;                     \
        } else {                                                                                   \
            T inv = (T)(1.0 / sum);                                                                \
            for (int64_t c = 0; c < C; c++) yr[c * st] *= inv;                                     \
        }                                                                                          \
    }                                                                                              \
    static void softmax_forward_##S(T *y, const T *x, int64_t outer, int64_t C, int64_t inner,     \
                                    bool log_out) {                                                \
        int64_t rows = outer * inner;                                                              \
        bool par = rows > 1 && rows * C >= PAR_MIN;                                                \
        (void)par;                                                                                 \
        PARALLEL_ROWS                                                                              \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            int64_t base = (r / inner) * C * inner + r % inner;                                    \
            if (inner == 1) softmax_row_##S(y + base, x + base, C, 1, log_out);                    \
            else softmax_row_##S(y + base, x + base, C, inner, log_out);                           \
        }                                                                                          \
    }                                                                                              \
    void tt_ksoftmax_forward_##S(T *y, const T *x, int64_t outer, int64_t C, int64_t inner) {      \
        softmax_forward_##S(y, x, outer, C, inner, false);                                         \
    }                                                                                              \
    void tt_klog_softmax_forward_##S(T *y, const T *x, int64_t outer, int64_t C, int64_t inner) {  \
        softmax_forward_##S(y, x, outer, C, inner, true);                                          \
    }

// d softmax: dx_c = y_c (dy_c - sum_k dy_k y_k). A fully masked row has y == 0: dx == 0.
// d log_softmax: dx_c = dy_c - exp(y_c) sum_k dy_k; a fully masked row (all y == -inf) is a
// constant of x, so its gradient is 0.
#define SOFTMAX_BACKWARD(T, S)                                                                     \
    static inline void softmax_backward_row_##S(T *dx, const T *dy, const T *y, int64_t C,         \
                                                int64_t st) {                                      \
        double dot = 0;                                                                            \
        for (int64_t c = 0; c < C; c++) dot += (double)dy[c * st] * y[c * st];                     \
        T d = (T)dot;                                                                              \
        for (int64_t c = 0; c < C; c++)                                                            \
            if (y[c * st] != 0) dx[c * st] += y[c * st] * (dy[c * st] - d);                        \
    }                                                                                              \
    static inline void log_softmax_backward_row_##S(T *dx, const T *dy, const T *y, int64_t C,     \
                                                    int64_t st) {                                  \
        double sum = 0;                                                                            \
        bool masked = true;                                                                        \
        for (int64_t c = 0; c < C; c++) {                                                          \
            sum += dy[c * st];                                                                     \
            masked = masked && y[c * st] == -INFINITY;                                             \
        }                                                                                          \
        if (masked) return;                                                                        \
        T s = (T)sum;                                                                              \
        for (int64_t c = 0; c < C; c++) dx[c * st] += dy[c * st] - exp(y[c * st]) * s;             \
    }                                                                                              \
    void tt_ksoftmax_backward_##S(T *dx, const T *dy, const T *y, int64_t outer, int64_t C,        \
                                  int64_t inner) {                                                 \
        int64_t rows = outer * inner;                                                              \
        bool par = rows > 1 && rows * C >= PAR_MIN;                                                \
        (void)par;                                                                                 \
        PARALLEL_ROWS                                                                              \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            int64_t b = (r / inner) * C * inner + r % inner;                                       \
            if (inner == 1) softmax_backward_row_##S(dx + b, dy + b, y + b, C, 1);                 \
            else softmax_backward_row_##S(dx + b, dy + b, y + b, C, inner);                        \
        }                                                                                          \
    }                                                                                              \
    void tt_klog_softmax_backward_##S(T *dx, const T *dy, const T *y, int64_t outer,               \
                                      int64_t C, int64_t inner) {                                  \
        int64_t rows = outer * inner;                                                              \
        bool par = rows > 1 && rows * C >= PAR_MIN;                                                \
        (void)par;                                                                                 \
        PARALLEL_ROWS                                                                              \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            int64_t b = (r / inner) * C * inner + r % inner;                                       \
            if (inner == 1) log_softmax_backward_row_##S(dx + b, dy + b, y + b, C, 1);             \
            else log_softmax_backward_row_##S(dx + b, dy + b, y + b, C, inner);                    \
        }                                                                                          \
    }

SOFTMAX_FORWARD(float, f32)
SOFTMAX_FORWARD(double, f64)
SOFTMAX_BACKWARD(float, f32)
SOFTMAX_BACKWARD(double, f64)

// ---- masked fill ----
// y = fill ? value : x; dx = fill ? 0 : dy. The (M) mask repeats over the outer leading rows.

#define MASKED_FILL(T, S)                                                                          \
    void tt_kmasked_fill_forward_##S(T *y, const T *x, const uint8_t *fill, int64_t outer,         \
                                     int64_t M, double value) {                                    \
        T v = (T)value;                                                                            \
        for (int64_t o = 0; o < outer; o++) {                                                      \
            const T *xr = x + o * M;                                                               \
            T *yr = y + o * M;                                                                     \
            for (int64_t i = 0; i < M; i++) yr[i] = fill[i] ? v : xr[i];                           \
        }                                                                                          \
    }                                                                                              \
    void tt_kmasked_fill_backward_##S(T *dx, const T *dy, const uint8_t *fill, int64_t outer,      \
                                      int64_t M) {                                                 \
        for (int64_t o = 0; o < outer; o++) {                                                      \
            const T *dyr = dy + o * M;                                                             \
            T *dxr = dx + o * M;                                                                   \
            for (int64_t i = 0; i < M; i++)                                                        \
                if (!fill[i]) dxr[i] += dyr[i];                                                    \
        }                                                                                          \
    }

MASKED_FILL(float, f32)
MASKED_FILL(double, f64)

// ---- layernorm ----
// y = (x - mean) rstd w + b, mean = sum x / N, rstd = 1 / sqrt(sum (x - mean)^2 / N + eps)
// (two-pass variance, in double). Backward (xhat = (x - mean) rstd, dn = dy w):
// dx = rstd (dn - mean(dn) - xhat mean(dn xhat)); dw = sum_rows dy xhat; db = sum_rows dy.

#define LAYERNORM(T, S)                                                                            \
    void tt_klayernorm_forward_##S(T *y, T *mean, T *rstd, const T *x, const T *w,                 \
                                   const T *b, int64_t R, int64_t N, double eps) {                 \
        bool par = R > 1 && R * N >= PAR_MIN;                                                      \
        (void)par;                                                                                 \
        PARALLEL_ROWS                                                                              \
        for (int64_t r = 0; r < R; r++) {                                                          \
            const T *xr = x + r * N;                                                               \
            T *yr = y + r * N;                                                                     \
            double s = 0, ss = 0;                                                                  \
            for (int64_t i = 0; i < N; i++) s += xr[i];                                            \
            double mu = N > 0 ? s / (double)N : 0;                                                 \
            for (int64_t i = 0; i < N; i++) ss += (xr[i] - mu) * (xr[i] - mu);                     \
            double rs = 1.0 / sqrt((N > 0 ? ss / (double)N : 0) + eps);                            \
            T m = (T)mu, rt = (T)rs;                                                               \
            for (int64_t i = 0; i < N; i++) {                                                      \
                T v = (xr[i] - m) * rt;                                                            \
                if (w) v *= w[i];                                                                  \
                if (b) v += b[i];                                                                  \
                yr[i] = v;                                                                         \
            }                                                                                      \
            mean[r] = m;                                                                           \
            rstd[r] = rt;                                                                          \
        }                                                                                          \
    }                                                                                              \
    void tt_klayernorm_backward_##S(T *dx, T *dw, T *db, const T *dy, const T *x,                  \
                                    const T *w, const T *mean, const T *rstd, int64_t R,           \
                                    int64_t N) {                                                   \
        if (dx) {                                                                                  \
            bool par = R > 1 && R * N >= PAR_MIN;                                                  \
            (void)par;                                                                             \
            PARALLEL_ROWS                                                                          \
            for (int64_t r = 0; r < R; r++) {                                                      \
                const T *xr = x + r * N, *dyr = dy + r * N;                                        \
                T m = mean[r], rt = rstd[r];                                                       \
                double sdn = 0, sdnx = 0;                                                          \
                for (int64_t i = 0; i < N; i++) {                                                  \
                    T dn = w ? dyr[i] * w[i] : dyr[i];                                             \
                    sdn += dn;                                                                     \
                    sdnx += (double)dn * ((xr[i] - m) * rt);                                       \
                }                                                                                  \
                T a = (T)(sdn / (double)N), c = (T)(sdnx / (double)N);                             \
                T *dxr = dx + r * N;                                                               \
                for (int64_t i = 0; i < N; i++) {                                                  \
                    T dn = w ? dyr[i] * w[i] : dyr[i];                                             \
                    dxr[i] += rt * (dn - a - (xr[i] - m) * rt * c);                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        if (!dw && !db) return;                                                                    \
        /* Across rows in a fixed order, in double: (N) accumulators each. */                      \
        double *acc = TT_CALLOC((size_t)(2 * N) + 1, sizeof(double));                              \
        for (int64_t r = 0; r < R; r++) {                                                          \
            const T *xr = x + r * N, *dyr = dy + r * N;                                            \
            T m = mean[r], rt = rstd[r];                                                           \
            for (int64_t i = 0; i < N; i++) {                                                      \
                acc[i] += (double)dyr[i] * ((xr[i] - m) * rt);                                     \
                acc[N + i] += dyr[i];                                                              \
            }                                                                                      \
        }                                                                                          \
        for (int64_t i = 0; i < N; i++) {                                                          \
            if (dw) dw[i] += (T)acc[i];                                                            \
            if (db) db[i] += (T)acc[N + i];                                                        \
        }                                                                                          \
        tt_free(acc);                                                                              \
    }

LAYERNORM(float, f32)
LAYERNORM(double, f64)

// ---- rmsnorm ----
// y = x rstd w, rstd = 1 / sqrt(mean(x^2) + eps). Backward (xhat = x rstd, dn = dy w):
// dx = rstd (dn - xhat mean(dn xhat)); dw = sum_rows dy xhat.

#define RMSNORM(T, S)                                                                              \
    void tt_krmsnorm_forward_##S(T *y, T *rstd, const T *x, const T *w, int64_t R,                 \
                                 int64_t N, double eps) {                                          \
        bool par = R > 1 && R * N >= PAR_MIN;                                                      \
        (void)par;                                                                                 \
        PARALLEL_ROWS                                                                              \
        for (int64_t r = 0; r < R; r++) {                                                          \
            const T *xr = x + r * N;                                                               \
            T *yr = y + r * N;                                                                     \
            double ss = 0;                                                                         \
            for (int64_t i = 0; i < N; i++) ss += (double)xr[i] * xr[i];                           \
            T rt = (T)(1.0 / sqrt((N > 0 ? ss / (double)N : 0) + eps));                            \
            for (int64_t i = 0; i < N; i++) yr[i] = w ? xr[i] * rt * w[i] : xr[i] * rt;            \
            rstd[r] = rt;                                                                          \
        }                                                                                          \
    }                                                                                              \
    void tt_krmsnorm_backward_##S(T *dx, T *dw, const T *dy, const T *x, const T *w,               \
                                  const T *rstd, int64_t R, int64_t N) {                           \
        if (dx) {                                                                                  \
            bool par = R > 1 && R * N >= PAR_MIN;                                                  \
            (void)par;                                                                             \
            PARALLEL_ROWS                                                                          \
            for (int64_t r = 0; r < R; r++) {                                                      \
                const T *xr = x + r * N, *dyr = dy + r * N;                                        \
                T rt = rstd[r];                                                                    \
                double sdnx = 0;                                                                   \
                for (int64_t i = 0; i < N; i++) {                                                  \
                    T dn = w ? dyr[i] * w[i] : dyr[i];                                             \
                    sdnx += (double)dn * (xr[i] * rt);                                             \
                }                                                                                  \
                T c = (T)(sdnx / (double)N);                                                       \
                T *dxr = dx + r * N;                                                               \
                for (int64_t i = 0; i < N; i++) {                                                  \
                    T dn = w ? dyr[i] * w[i] : dyr[i];                                             \
                    dxr[i] += rt * (dn - xr[i] * rt * c);                                          \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        if (!dw) return;                                                                           \
        double *acc = TT_CALLOC((size_t)N + 1, sizeof(double)); /* (N) */                          \
        for (int64_t r = 0; r < R; r++) {                                                          \
            const T *xr = x + r * N, *dyr = dy + r * N;                                            \
            T rt = rstd[r];                                                                        \
            for (int64_t i = 0; i < N; i++) acc[i] += (double)dyr[i] * (xr[i] * rt);               \
        }                                                                                          \
        for (int64_t i = 0; i < N; i++) dw[i] += (T)acc[i];                                        \
        tt_free(acc);                                                                              \
    }

RMSNORM(float, f32)
RMSNORM(double, f64)

// ---- embedding ----
// y[i, :] = w[idx[i], :]; dw[idx[i], :] += dy[i, :] in increasing i (a serial scatter-add,
// so repeated indices sum in a fixed order).

#define EMBEDDING(T, S)                                                                            \
    void tt_kembedding_forward_##S(T *y, const T *w, const int64_t *idx, int64_t n,                \
                                   int64_t C) {                                                    \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const T *src = w + idx[i] * C;                                                         \
            T *dst = y + i * C;                                                                    \
            for (int64_t c = 0; c < C; c++) dst[c] = src[c];                                       \
        }                                                                                          \
    }                                                                                              \
    void tt_kembedding_backward_##S(T *dw, const T *dy, const int64_t *idx, int64_t n,             \
                                    int64_t C) {                                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const T *src = dy + i * C;                                                             \
            T *dst = dw + idx[i] * C;                                                              \
            for (int64_t c = 0; c < C; c++) dst[c] += src[c];                                      \
        }                                                                                          \
    }

EMBEDDING(float, f32)
EMBEDDING(double, f64)

// ---- cross-entropy (fused log-softmax + NLL, label smoothing as in PyTorch) ----
// lse = m + log sum_j exp(x_j - m); nll = lse - x_t; smooth = mean_j (lse - x_j)
// = lse - mean_j x_j; loss = (1 - s) nll + s smooth.
// d loss / d x_j = softmax_j - (1 - s) [j == t] - s / V.

#define CROSS_ENTROPY(T, S)                                                                        \
    double tt_kcross_entropy_forward_##S(double *lse, const T *x, const int64_t *target,           \
                                         int64_t R, int64_t V, int64_t ignore_index,               \
                                         double smoothing) {                                       \
        double *loss = TT_CALLOC((size_t)R + 1, sizeof(double)); /* (R) */                         \
        bool par = R > 1 && R * V >= PAR_MIN;                                                      \
        (void)par;                                                                                 \
        PARALLEL_ROWS                                                                              \
        for (int64_t r = 0; r < R; r++) {                                                          \
            lse[r] = 0;                                                                            \
            if (target[r] == ignore_index) continue;                                               \
            const T *xr = x + r * V;                                                               \
            T m = -INFINITY;                                                                       \
            for (int64_t j = 0; j < V; j++)                                                        \
                if (xr[j] > m) m = xr[j];                                                          \
            double sum = 0, sx = 0;                                                                \
            for (int64_t j = 0; j < V; j++) sum += exp(xr[j] - m);                                 \
            double l = (double)m + log(sum);                                                       \
            lse[r] = l;                                                                            \
            loss[r] = l - xr[target[r]];                                                           \
            if (smoothing != 0) {                                                                  \
                for (int64_t j = 0; j < V; j++) sx += xr[j];                                       \
                loss[r] = (1 - smoothing) * loss[r] + smoothing * (l - sx / (double)V);            \
            }                                                                                      \
        }                                                                                          \
        double total = 0;                                                                          \
        for (int64_t r = 0; r < R; r++) total += loss[r];                                          \
        tt_free(loss);                                                                             \
        return total;                                                                              \
    }                                                                                              \
    void tt_kcross_entropy_backward_##S(T *dx, const T *x, const double *lse,                      \
                                        const int64_t *target, int64_t R, int64_t V,               \
                                        int64_t ignore_index, double smoothing,                    \
                                        double scale) {                                            \
        bool par = R > 1 && R * V >= PAR_MIN;                                                      \
        (void)par;                                                                                 \
        double off = smoothing / (double)V;                                                        \
        PARALLEL_ROWS                                                                              \
        for (int64_t r = 0; r < R; r++) {                                                          \
            if (target[r] == ignore_index) continue;                                               \
            const T *xr = x + r * V;                                                               \
            T *dxr = dx + r * V;                                                                   \
            T l = (T)lse[r], o = (T)off, sc = (T)scale;                                            \
            for (int64_t j = 0; j < V; j++) dxr[j] += (exp(xr[j] - l) - o) * sc;                   \
            dxr[target[r]] -= (T)((1 - smoothing) * scale);                                        \
        }                                                                                          \
    }

CROSS_ENTROPY(float, f32)
CROSS_ENTROPY(double, f64)

// ---- dropout ----
// keep_i = (u_i >= p), u_i = tt_rng_uniform drawn in element order; mask_i = keep_i / (1 - p)
// (0 when p == 1); y = x mask; dx = dy mask (inverted dropout).

#define DROPOUT(T, S)                                                                              \
    void tt_kdropout_forward_##S(T *y, T *mask, const T *x, int64_t n, double p,                   \
                                 tt_rng *rng) {                                                    \
        T scale = p < 1 ? (T)(1.0 / (1.0 - p)) : 0;                                                \
        for (int64_t i = 0; i < n; i++) {                                                          \
            mask[i] = tt_rng_uniform(rng) >= p ? scale : 0;                                        \
            y[i] = x[i] * mask[i];                                                                 \
        }                                                                                          \
    }                                                                                              \
    void tt_kdropout_backward_##S(T *dx, const T *dy, const T *mask, int64_t n) {                  \
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * mask[i];                                  \
    }

DROPOUT(float, f32)
DROPOUT(double, f64)
