// Gradient clipping by the global L2 norm of a parameter list (torch.nn.utils.clip_grad_norm_),
// the norm accumulated in double in a fixed order so that it does not depend on the thread
// count.
#include <math.h>

#include "optim_internal.h"
#include "../tensor/tensor_ext.h"

#define CHUNK TT_OPTIM_CHUNK

// Sum of squares of n values in double: 8 interleaved partial sums (independent chains the
// compiler can vectorize) added in a fixed order. Chunks of CHUNK elements run in parallel and
// their sums are added in chunk order, so the result is the same for any thread count.
#define LANES 8

// name_f32 and name_f64 (x: (n,)) from one body; T is the element type.
#define SUMSQ_TWIN(T, name)                                                                       \
    static double name(const T *x, int64_t n) {                                                   \
        double acc[LANES] = {0};                                                                  \
        int64_t i = 0;                                                                            \
        for (; i + LANES <= n; i += LANES)                                                        \
            for (int k = 0; k < LANES; k++) acc[k] += (double)x[i + k] * (double)x[i + k];        \
        for (int k = 0; i < n; i++, k++) acc[k] += (double)x[i] * (double)x[i];                   \
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])); \
    }
SUMSQ_TWIN(float, sumsq_f32)
SUMSQ_TWIN(double, sumsq_f64)

// sumsq's arguments; sumsq_chunks writes part[c], the sum of chunk c, for c in [c0, c1).
typedef struct sumsq_job {
    const tt_tensor *g;
    double *part;
} sumsq_job;

static void sumsq_chunks(void *ctx, int64_t c0, int64_t c1) {
    const sumsq_job *j = ctx;
    int64_t n = tt_numel(j->g);
    for (int64_t c = c0; c < c1; c++) {
        int64_t i0 = c * CHUNK, len = n - i0 < CHUNK ? n - i0 : CHUNK;
        j->part[c] = j->g->dtype == TT_F32 ? sumsq_f32(tt__optim_at(j->g, i0), len)
                                           : sumsq_f64(tt__optim_at(j->g, i0), len);
    }
}

double tt__optim_sumsq(const tt_tensor *g) {
    int64_t n = tt_numel(g), nchunks = (n + CHUNK - 1) / CHUNK;
    if (nchunks == 0) return 0;
    double one, *part = nchunks > 1 ? TT_MALLOC((size_t)nchunks * sizeof *part) : &one;
    sumsq_job j = {g, part};
    tt__parallel_for(nchunks, 1, sumsq_chunks, &j);
    double s = 0;
    for (int64_t c = 0; c < nchunks; c++) s += part[c];
    if (part != &one) tt_free(part);
    return s;
}

// Whether entry i's tensor already appeared earlier in p (tied weights count once).
static bool seen_before(const tt_params *p, int i) {
    for (int j = 0; j < i; j++)
        if (p->items[j].tensor == p->items[i].tensor) return true;
    return false;
}

double tt_grad_norm(const tt_params *p) {
    double total = 0;
    for (int i = 0; i < p->n; i++) {
        const tt_tensor *t = p->items[i].tensor;
        tt__check_live(t, __func__);  // aborts when t was freed
        const tt_tensor *g = t->grad;
        if (!g || seen_before(p, i)) continue;
        tt__optim_check_grad(p->items[i].name, t, g, __func__);
        total += tt__optim_sumsq(g);
    }
    return sqrt(total);
}

static void scale_(tt_tensor *g, double s) {
    tt_bump_version(g, "tt_clip_grad_norm");
    int64_t n = tt_numel(g);
    if (g->dtype == TT_F32) {
        float *x = tt_data(g);
        for (int64_t i = 0; i < n; i++) x[i] = (float)((double)x[i] * s);
    } else {
        double *x = tt_data(g);
        for (int64_t i = 0; i < n; i++) x[i] *= s;
    }
}

// torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), applied when < 1. Unlike
// PyTorch, a non-finite norm leaves the gradients as they are (instead of making them NaN).
double tt_clip_grad_norm(const tt_params *p, double max_norm) {
    TT_CHECK(isfinite(max_norm) && max_norm >= 0, "max_norm must be finite and >= 0, got %g",
             max_norm);
    double norm = tt_grad_norm(p);
    double coef = max_norm / (norm + 1e-6);
    if (isfinite(norm) && coef < 1) {
        for (int i = 0; i < p->n; i++) {
            tt_tensor *g = p->items[i].tensor->grad;
            if (g && !seen_before(p, i)) scale_(g, coef);
        }
    }
    return norm;
}
