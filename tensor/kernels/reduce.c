// Reduction kernels on raw strided f32/f64 buffers: sums (pairwise, accumulated in double),
// sums of squared deviations, max, argmax, and the backward spreads, over a tt_k_reduce plan.
// No autograd: dims, keepdim, dtype checks and errors live in autograd/ops_reduce.c.
//
// The per-dtype kernels are written once in reduce.inc and included below once per dtype,
// every function name spelled out; the tt_k_reduce_* entry points here dispatch on dtype.
#include "reduce.h"

#include <math.h>
#include <string.h>

#include "../tensor_internal.h"

// Shapes: X the input, M outputs, N elements per output (see reduce.h).

#define RUN_BLOCK 128        // a pairwise leaf: summed by LANES interleaved accumulators
#define LANES 8
#define PAR_CHUNK (1 << 16)  // a long single run is cut into chunks of this many elements
#define PAR_MIN (1 << 15)    // below this many elements a reduction stays on one thread

// ---- plan ----

void tt_k_reduce_plan(tt_k_reduce *r, int ndim, const int64_t *shape, const int64_t *xstride,
                      const bool *reduced) {
    r->ndim = ndim;
    r->nout = 1;
    r->nred = 1;
    int64_t s = 1;  // the output is row-major over the kept dims
    for (int d = ndim - 1; d >= 0; d--) {
        r->shape[d] = shape[d];
        r->xstride[d] = xstride[d];
        if (reduced[d]) {
            r->ostride[d] = 0;
            r->nred *= shape[d];
        } else {
            r->ostride[d] = s;
            s *= shape[d] > 0 ? shape[d] : 1;
            r->nout *= shape[d];
        }
    }
}

// ---- runs: the n elements x[0], x[s], ..., x[(n-1) s] of one output ----
// Pairwise summation (Higham, "The accuracy of floating point summation", SISC 1993): halve
// until at most RUN_BLOCK elements, which LANES accumulators sum interleaved (lane l takes
// elements l, l + LANES, ...) and then add as a fixed tree. Error grows like log n, and the
// order depends on n alone. f32 terms are widened to double before they are added.

typedef double (*run_fn)(const void *x, int64_t n, int64_t s, double mu);

// max with NaN propagation: a NaN, once seen, stays.
#define MAX_STEP(acc, v) ((v) > (acc) || isnan(v) ? (v) : (acc))

// ---- the per-dtype kernels ----

#define T float
#define SUM_RUN sum_run_f32
#define SQDEV_RUN sqdev_run_f32
#define MAX_RUN max_run_f32
#define REDUCE_MAX reduce_max_f32
#define MAX_ROWS max_rows_f32
#define MAX_ROWS_JOB max_rows_job_f32
#define ARGMAX_RUN argmax_run_f32
#define SPREAD spread_f32
#define MAX_BACKWARD max_backward_f32
#define VAR_BACKWARD var_backward_f32
#define VAR_BACKWARD_NODOF var_backward_nodof_f32
#include "reduce.inc"

#define T double
#define SUM_RUN sum_run_f64
#define SQDEV_RUN sqdev_run_f64
#define MAX_RUN max_run_f64
#define REDUCE_MAX reduce_max_f64
#define MAX_ROWS max_rows_f64
#define MAX_ROWS_JOB max_rows_job_f64
#define ARGMAX_RUN argmax_run_f64
#define SPREAD spread_f64
#define MAX_BACKWARD max_backward_f64
#define VAR_BACKWARD var_backward_f64
#define VAR_BACKWARD_NODOF var_backward_nodof_f64
#include "reduce.inc"

static run_fn pick_run(tt_dtype dt, bool sqdev) {
    if (dt == TT_F32) return sqdev ? sqdev_run_f32 : sum_run_f32;
    return sqdev ? sqdev_run_f64 : sum_run_f64;
}

// A long run cut into chunks of PAR_CHUNK elements (run_chunked): part[c] is chunk c's sum.
typedef struct chunked_job {
    run_fn f;
    const char *x;
    size_t es;
    int64_t n, s;
    double mu;
    double *part;  // (nc,)
} chunked_job;

static void chunked_range(void *ctx, int64_t c0, int64_t c1) {
    const chunked_job *j = ctx;
    for (int64_t c = c0; c < c1; c++) {
        int64_t lo = c * PAR_CHUNK, len = j->n - lo < PAR_CHUNK ? j->n - lo : PAR_CHUNK;
        j->part[c] = j->f(j->x + lo * j->s * (int64_t)j->es, len, j->s, j->mu);
    }
}

// One long run (a reduction to a single output) in fixed chunks of PAR_CHUNK elements, summed
// in parallel, whose partial sums are then added pairwise: the result depends on n, never on
// the thread count.
static double run_chunked(run_fn f, const char *x, size_t es, int64_t n, int64_t s, double mu) {
    if (n <= 2 * (int64_t)PAR_CHUNK) return f(x, n, s, mu);
    int64_t nc = (n + PAR_CHUNK - 1) / PAR_CHUNK;
    double *part = TT_MALLOC((size_t)nc * sizeof(double));  // (nc,)
    chunked_job j = {f, x, es, n, s, mu, part};
    tt__parallel_for(nc, 1, chunked_range, &j);
    double total = sum_run_f64(part, nc, 1, 0);
    tt_free(part);
    return total;
}

// Outputs m of one run each (the fast path of tt_k_reduce_sum): out[m os] = f(run m).
typedef struct rows_job {
    run_fn f;
    double *out;
    const char *xb;
    const double *mean;
    int64_t os, xs, es, inner, istride;
} rows_job;

static void rows_range(void *ctx, int64_t m0, int64_t m1) {
    const rows_job *j = ctx;
    for (int64_t m = m0; m < m1; m++)
        j->out[m * j->os] = j->f(j->xb + m * j->xs * j->es, j->inner, j->istride,
                                 j->mean ? j->mean[m * j->os] : 0);
}

// out[o + i os] += term(x[i xs]) for i < n: a run along a kept dim.
static void accum_run(double *out, int64_t os, const void *x, int64_t xs, tt_dtype dt,
                      const double *mean, int64_t n) {
    if (dt == TT_F32) {
        const float *xf = x;
        if (mean) {
            for (int64_t i = 0; i < n; i++) {
                double d = xf[i * xs] - mean[i * os];
                out[i * os] += d * d;
            }
        } else {
            for (int64_t i = 0; i < n; i++) out[i * os] += xf[i * xs];
        }
    } else {
        const double *xd = x;
        if (mean) {
            for (int64_t i = 0; i < n; i++) {
                double d = xd[i * xs] - mean[i * os];
                out[i * os] += d * d;
            }
        } else {
            for (int64_t i = 0; i < n; i++) out[i * os] += xd[i * xs];
        }
    }
}

// ---- sum and sum of squared deviations ----
// out[m] = sum_j x[m, j]  or  sum_j (x[m, j] - mean[m])^2: the second pass of a two-pass
// variance (Chan, Golub, LeVeque, "Algorithms for computing the sample variance", 1983).

void tt_k_reduce_sum(double *out, const void *x, tt_dtype dt, const double *mean,
                     const tt_k_reduce *r) {
    if (r->nout > 0) memset(out, 0, (size_t)r->nout * sizeof *out);  // (M,)
    const int64_t *st[2] = {r->ostride, r->xstride};
    tt__iter it;
    if (!tt__iter_init(&it, r->ndim, r->shape, 2, st, NULL)) return;  // M == 0 or N == 0
    run_fn f = pick_run(dt, mean != NULL);
    const char *xb = x;
    int64_t es = (int64_t)tt_dtype_size(dt);
    if (it.istride[0] == 0 && it.inner == r->nred) {
        // Fast path: each output's N elements are one run (e.g. the last dims of a contiguous
        // tensor, or all of it). Outputs are independent, so they split across threads.
        if (it.ndim == 0) {
            out[it.off[0]] = run_chunked(f, xb + it.off[1] * es, (size_t)es, it.inner,
                                         it.istride[1], mean ? mean[it.off[0]] : 0);
            return;
        }
        if (it.ndim == 1) {
            int64_t m_n = it.shape[0], os = it.stride[0][0], xs = it.stride[1][0];
            rows_job j = {f, out, xb, mean, os, xs, es, it.inner, it.istride[1]};
            tt__parallel_for(m_n, r->nout * r->nred >= PAR_MIN ? 1 : m_n, rows_range, &j);
            return;
        }
        do {
            out[it.off[0]] = f(xb + it.off[1] * es, it.inner, it.istride[1],
                               mean ? mean[it.off[0]] : 0);
        } while (tt__iter_next(&it));
        return;
    }
    // General strided path: walk X row-major (after merging dims); a run along reduced dims
    // is summed pairwise into its output, a run along a kept dim accumulates elementwise.
    do {
        if (it.istride[0] == 0)
            out[it.off[0]] += f(xb + it.off[1] * es, it.inner, it.istride[1],
                                mean ? mean[it.off[0]] : 0);
        else
            accum_run(out + it.off[0], it.istride[0], xb + it.off[1] * es, it.istride[1], dt,
                      mean ? mean + it.off[0] : NULL, it.inner);
    } while (tt__iter_next(&it));
}

// ---- max ----
// out[m] = max_j x[m, j]; a NaN, once seen, is the result (as torch.amax).

void tt_k_reduce_max(void *out, const void *x, tt_dtype dt, const tt_k_reduce *r) {
    if (dt == TT_F32) reduce_max_f32(out, x, r);
    else reduce_max_f64(out, x, r);
}

// ---- argmax ----
// out[m] = min { j : x[m, j] is a maximum }, a NaN counting as larger than any number.

void tt_k_reduce_argmax(int64_t *out, const void *x, tt_dtype dt, const tt_k_reduce *r) {
    // Walk the kept positions (the reduced dim collapsed to 1), scanning the dim at each.
    int rd = -1;
    int64_t shape[TT_MAX_DIMS];
    for (int d = 0; d < r->ndim; d++) {
        shape[d] = r->shape[d];
        if (r->ostride[d] == 0) {
            TT_CHECK(rd < 0, "argmax reduces exactly one dim");
            rd = d;
            shape[d] = 1;
        }
    }
    int64_t n = rd < 0 ? 1 : r->shape[rd], s = rd < 0 ? 0 : r->xstride[rd];
    const int64_t *st[2] = {r->ostride, r->xstride};
    tt__iter it;
    if (!tt__iter_init(&it, r->ndim, shape, 2, st, NULL)) return;
    do {
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t xo = it.off[1] + i * it.istride[1];
            out[it.off[0] + i * it.istride[0]] =
                dt == TT_F32 ? argmax_run_f32((const float *)x + xo, n, s)
                             : argmax_run_f64((const double *)x + xo, n, s);
        }
    } while (tt__iter_next(&it));
}

// ---- backward ----
// Each walks X with strides (output, x, dense dx) and writes every element of dx once.

void tt_k_reduce_spread(void *dx, const void *g, double scale, tt_dtype dt,
                        const tt_k_reduce *r) {
    if (dt == TT_F32) spread_f32(dx, g, scale, r);
    else spread_f64(dx, g, scale, r);
}

void tt_k_reduce_max_backward(void *dx, const void *x, const void *mx, const void *g,
                              tt_dtype dt, const tt_k_reduce *r) {
    if (dt == TT_F32) max_backward_f32(dx, x, mx, g, r);
    else max_backward_f64(dx, x, mx, g, r);
}

void tt_k_reduce_var_backward(void *dx, const void *x, const double *mean, const void *g,
                              double factor, tt_dtype dt, const tt_k_reduce *r) {
    if (dt == TT_F32) var_backward_f32(dx, x, mean, g, factor, r);
    else var_backward_f64(dx, x, mean, g, factor, r);
}

void tt_k_reduce_var_backward_nodof(void *dx, const void *x, const double *mean, const void *g,
                                    tt_dtype dt, const tt_k_reduce *r) {
    if (dt == TT_F32) var_backward_nodof_f32(dx, x, mean, g, r);
    else var_backward_nodof_f64(dx, x, mean, g, r);
}
