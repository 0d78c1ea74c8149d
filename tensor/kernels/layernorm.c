// The f32 layernorm kernels (tt_klayernorm_forward_f32 / _backward_f32, declared in nn.h): the
// run-time choice of instruction set (by the CPU level, cpu.h), the portable C row functions
// (the reference the SIMD ones in layernorm_avx2.c and layernorm_avx512.c match bit for bit)
// and the parallel split.
// The lane-ordered sums: layernorm.h. The f64 layernorm (gradcheck) stays in nn.inc.
#include "layernorm.h"

#include <math.h>
#include <stdbool.h>

#include "cpu.h"
#include "nn.h"
#include "../tensor_internal.h"

// Below this many elements a kernel stays on one thread (as nn.c).
#define PAR_MIN 32768
// Rows per parallel task of the forward (the backward's task is a chunk, TT_KLN_CHUNK rows).
#define ROWS_PER_TASK 16


// ---- portable row functions ----

// l (TT_KLN_LANES) combined in the fixed tree of layernorm.h (l is overwritten).
static double lane_tree(double *l) {
    for (int h = TT_KLN_LANES / 2; h >= 1; h /= 2)
        for (int j = 0; j < h; j++) l[j] += l[j + h];
    return l[0];
}

// The lanes are the inner loops (j = i mod TT_KLN_LANES over a step of TT_KLN_LANES columns),
// which compilers can vectorize without changing any sum.

static void forward_rows_portable(float *y, float *mean, float *rstd, const float *x,
                                  const float *w, const float *b, int64_t R, int64_t N,
                                  double eps) {
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *yr = y + r * N;
        double s[TT_KLN_LANES] = {0}, ss[TT_KLN_LANES] = {0};
        for (int64_t i = 0; i < N; i += TT_KLN_LANES) {
            int64_t n = N - i < TT_KLN_LANES ? N - i : TT_KLN_LANES;
            for (int64_t j = 0; j < n; j++) s[j] += xr[i + j];
        }
        double mu = N > 0 ? lane_tree(s) / (double)N : 0;
        for (int64_t i = 0; i < N; i += TT_KLN_LANES) {
            int64_t n = N - i < TT_KLN_LANES ? N - i : TT_KLN_LANES;
            for (int64_t j = 0; j < n; j++) {
                double d = xr[i + j] - mu;
                ss[j] += d * d;
            }
        }
        double rs = 1.0 / sqrt((N > 0 ? lane_tree(ss) / (double)N : 0) + eps);
        float m = (float)mu, rt = (float)rs;
        for (int64_t i = 0; i < N; i++) {
            float v = (xr[i] - m) * rt;
            if (w) v *= w[i];
            if (b) v += b[i];
            yr[i] = v;
        }
        mean[r] = m;
        rstd[r] = rt;
    }
}

static void backward_rows_portable(float *dx, double *aw, double *ab, const float *dy,
                                   const float *x, const float *w, const float *mean,
                                   const float *rstd, int64_t R, int64_t N) {
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N, *dyr = dy + r * N;
        float m = mean[r], rt = rstd[r], a = 0, c = 0;
        if (dx) {
            double sdn[TT_KLN_LANES] = {0}, sdnx[TT_KLN_LANES] = {0};
            for (int64_t i = 0; i < N; i += TT_KLN_LANES) {
                int64_t n = N - i < TT_KLN_LANES ? N - i : TT_KLN_LANES;
                for (int64_t j = 0; j < n; j++) {
                    float dn = w ? dyr[i + j] * w[i + j] : dyr[i + j];
                    sdn[j] += dn;
                    sdnx[j] += (double)dn * ((xr[i + j] - m) * rt);
                }
            }
            a = (float)(lane_tree(sdn) / (double)N);
            c = (float)(lane_tree(sdnx) / (double)N);
        }
        for (int64_t i = 0; dx && i < N; i++) {
            float dn = w ? dyr[i] * w[i] : dyr[i];
            dx[r * N + i] += rt * (dn - a - (xr[i] - m) * rt * c);
        }
        for (int64_t i = 0; aw && i < N; i++) {
            aw[i] += (double)dyr[i] * ((xr[i] - m) * rt);
            ab[i] += dyr[i];
        }
    }
}

// ---- the kernels ----

// The forward's arguments; forward_tasks runs tasks [t0, t1) of ROWS_PER_TASK rows.
typedef struct forward_job {
    tt_kln_forward_rows_fn *rows;
    float *y, *mean, *rstd;
    const float *x, *w, *b;
    int64_t R, N;
    double eps;
} forward_job;

static void forward_tasks(void *ctx, int64_t t0, int64_t t1) {
    const forward_job *j = ctx;
    int64_t N = j->N;
    for (int64_t t = t0; t < t1; t++) {
        int64_t r = t * ROWS_PER_TASK, nr = j->R - r < ROWS_PER_TASK ? j->R - r : ROWS_PER_TASK;
        j->rows(j->y + r * N, j->mean + r, j->rstd + r, j->x + r * N, j->w, j->b, nr, N, j->eps);
    }
}

// The backward's arguments; backward_chunks runs chunks [t0, t1) of TT_KLN_CHUNK rows.
typedef struct backward_job {
    tt_kln_backward_rows_fn *rows;
    float *dx;
    double *part;  // (nchunks, 2, N) or NULL
    const float *dy, *x, *w, *mean, *rstd;
    int64_t R, N;
} backward_job;

static void backward_chunks(void *ctx, int64_t t0, int64_t t1) {
    const backward_job *j = ctx;
    int64_t N = j->N;
    for (int64_t t = t0; t < t1; t++) {
        int64_t r = t * TT_KLN_CHUNK, nr = j->R - r < TT_KLN_CHUNK ? j->R - r : TT_KLN_CHUNK;
        double *aw = j->part ? j->part + t * 2 * N : NULL, *ab = j->part ? aw + N : NULL;
        j->rows(j->dx ? j->dx + r * N : NULL, aw, ab, j->dy + r * N, j->x + r * N, j->w,
                j->mean + r, j->rstd + r, nr, N);
    }
}

// y, x (R, N); w, b (N) or NULL; mean, rstd (R) out
void tt_klayernorm_forward_f32(float *y, float *mean, float *rstd, const float *x, const float *w,
                               const float *b, int64_t R, int64_t N, double eps) {
    tt_kln_forward_rows_fn *rows = forward_rows_portable;
#if defined(__x86_64__) && defined(__GNUC__)
    tt_cpu_level level = tt_cpu_get_level();
    if (level >= TT_CPU_AVX512) rows = tt_kln_forward_rows_avx512;
    else if (level >= TT_CPU_AVX2) rows = tt_kln_forward_rows_avx2;
#endif
    int64_t ntasks = (R + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
    bool par = ntasks > 1 && R * N >= PAR_MIN;
    forward_job j = {rows, y, mean, rstd, x, w, b, R, N, eps};
    tt__parallel_for(ntasks, par ? 1 : ntasks, forward_tasks, &j);
}

// dx, dy, x (R, N); dw, db, w (N) or NULL; mean, rstd (R)
void tt_klayernorm_backward_f32(float *dx, float *dw, float *db, const float *dy, const float *x,
                                const float *w, const float *mean, const float *rstd, int64_t R,
                                int64_t N) {
    tt_kln_backward_rows_fn *rows = backward_rows_portable;
#if defined(__x86_64__) && defined(__GNUC__)
    tt_cpu_level level = tt_cpu_get_level();
    if (level >= TT_CPU_AVX512) rows = tt_kln_backward_rows_avx512;
    else if (level >= TT_CPU_AVX2) rows = tt_kln_backward_rows_avx2;
#endif
    if (!dx && !dw && !db) return;
    // dx and each chunk's dweight and dbias sums in one sweep over the rows; chunks are fixed
    // by R, so the bits do not depend on the thread count.
    bool sums = dw || db;
    int64_t nchunks = (R + TT_KLN_CHUNK - 1) / TT_KLN_CHUNK;
    // (nchunks, 2, N): each chunk's sums of dy xhat and of dy
    double *part = sums ? TT_CALLOC((size_t)(nchunks * 2 * N), sizeof *part) : NULL;
    bool par = nchunks > 1 && R * N >= PAR_MIN;
    backward_job j = {rows, dx, part, dy, x, w, mean, rstd, R, N};
    tt__parallel_for(nchunks, par ? 1 : nchunks, backward_chunks, &j);
    for (int64_t i = 0; sums && i < N; i++) {
        double sw = 0, sb = 0;
        for (int64_t t = 0; t < nchunks; t++) {
            sw += part[t * 2 * N + i];
            sb += part[t * 2 * N + N + i];
        }
        if (dw) dw[i] += (float)sw;
        if (db) db[i] += (float)sb;
    }
    tt_free(part);
}
