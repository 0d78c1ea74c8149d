// First-order gradient accumulation's kernel: out += g, summing over g's broadcast dims, in
// parallel chunks for large same-shape contiguous tensors (the same bits for any thread count).
#include "autograd_internal.h"

// One inner run of tt__accum_into: dst[i * ds] += src[i * ss] for i < n; with ds == 0 (a
// broadcast dim of dst) the run is summed in double and added once. dst: (n,) at stride ds.
// Written once for f32 and f64.
#define ACCUM_RUN(name, T)                                                                  \
    static void name(T *dst, int64_t ds, const T *src, int64_t ss, int64_t n) {             \
        if (ds == 0) {                                                                      \
            double s = 0;                                                                   \
            for (int64_t i = 0; i < n; i++) s += src[i * ss];                               \
            dst[0] += (T)s;                                                                 \
        } else {                                                                            \
            for (int64_t i = 0; i < n; i++) dst[i * ds] += src[i * ss];                     \
        }                                                                                   \
    }
ACCUM_RUN(accum_run_f32, float)
ACCUM_RUN(accum_run_f64, double)

// Below this many elements an accumulation stays on one thread; above, the same-shape
// contiguous case is cut into chunks of this size (elementwise: the same bits for any thread
// count).
#define ACCUM_PAR_MIN ((int64_t)1 << 18)

// out += g over contiguous same-shape f32/f64 data of n elements, for the thread pool:
// accum_chunks adds the ACCUM_PAR_MIN-element chunks [c0, c1).
typedef struct accum_job {
    char *o;
    const char *s;
    tt_dtype dt;
    int64_t n;
} accum_job;

static void accum_chunks(void *ctx, int64_t c0, int64_t c1) {
    const accum_job *j = ctx;
    int64_t es = (int64_t)tt_dtype_size(j->dt);
    for (int64_t c = c0; c < c1; c++) {
        int64_t i0 = c * ACCUM_PAR_MIN, len = j->n - i0 < ACCUM_PAR_MIN ? j->n - i0 : ACCUM_PAR_MIN;
        if (j->dt == TT_F32)
            accum_run_f32((float *)(j->o + i0 * es), 1, (const float *)(j->s + i0 * es), 1, len);
        else
            accum_run_f64((double *)(j->o + i0 * es), 1, (const double *)(j->s + i0 * es), 1, len);
    }
}

// out (shape broadcastable to g's) += g, summing over the broadcast dims.
void tt__accum_into(tt_tensor *out, tt_tensor *g) {
    tt__check_same_dtype(out, g, __func__);
    int64_t n = tt_numel(g);
    if (n >= ACCUM_PAR_MIN && tt_same_shape(out, g) && tt_is_contiguous(out) &&
        tt_is_contiguous(g)) {
        int64_t nchunks = (n + ACCUM_PAR_MIN - 1) / ACCUM_PAR_MIN;
        accum_job j = {tt_data(out), tt_data(g), out->dtype, n};
        tt__parallel_for(nchunks, 1, accum_chunks, &j);
        return;
    }
    int64_t ost[TT_MAX_DIMS];
    tt__broadcast_strides(out, g->ndim, g->shape, ost);
    const int64_t *strides[2] = {ost, g->stride};
    int64_t offs[2] = {out->offset, g->offset};
    tt__iter it;
    if (!tt__iter_init(&it, g->ndim, g->shape, 2, strides, offs)) return;
    do {
        if (out->dtype == TT_F32)
            accum_run_f32((float *)tt__base(out) + it.off[0], it.istride[0],
                          (const float *)tt__base(g) + it.off[1], it.istride[1], it.inner);
        else
            accum_run_f64((double *)tt__base(out) + it.off[0], it.istride[0],
                          (const double *)tt__base(g) + it.off[1], it.istride[1], it.inner);
    } while (tt__iter_next(&it));
}
