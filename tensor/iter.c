// Broadcasting rules and the N-d strided iterator every strided fallback is built on,
// plus tt_copy_ (strided, broadcasting, converting copy).
#include "tensor_internal.h"
#include "kernels/shape.h"

// ---- broadcasting ----

bool tt__broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b,
                         int *nout, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return true;
}

void tt__broadcast_strides(const tt_tensor *t, int ndim, const int64_t *shape, int64_t *stride) {
    TT_CHECK(t->ndim <= ndim, "cannot broadcast %s to %s", tt__shape(t),
             tt__shape_of(ndim, shape));
    for (int i = 0; i < ndim; i++) {
        int it = t->ndim - ndim + i;
        if (it < 0) {
            stride[i] = 0;
        } else if (t->shape[it] == shape[i]) {
            stride[i] = shape[i] == 1 ? 0 : t->stride[it];
        } else {
            TT_CHECK(t->shape[it] == 1, "cannot broadcast %s to %s", tt__shape(t),
                     tt__shape_of(ndim, shape));
            stride[i] = 0;
        }
    }
}

// ---- iterator ----

bool tt__iter_init(tt__iter *it, int ndim, const int64_t *shape, int nops,
                   const int64_t *const *strides, const int64_t *offsets) {
    TT_CHECK(nops >= 1 && nops <= TT_ITER_MAX, "nops %d out of range", nops);
    it->nops = nops;
    for (int k = 0; k < nops; k++) it->off[k] = offsets ? offsets[k] : 0;
    // Drop size-1 dims, then merge dim i into i+1 when every operand steps through them as
    // one run (stride[i] == stride[i+1] * shape[i+1]).
    int n = 0;
    int64_t sh[TT_MAX_DIMS], st[TT_ITER_MAX][TT_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) return false;
        if (shape[i] == 1) continue;
        bool merge = n > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = st[k][n - 1] == strides[k][i] * shape[i];
        if (merge) {
            sh[n - 1] *= shape[i];
            for (int k = 0; k < nops; k++) st[k][n - 1] = strides[k][i];
        } else {
            sh[n] = shape[i];
            for (int k = 0; k < nops; k++) st[k][n] = strides[k][i];
            n++;
        }
    }
    if (n == 0) {  // a single element
        it->ndim = 0;
        it->inner = 1;
        for (int k = 0; k < nops; k++) it->istride[k] = 0;
        return true;
    }
    it->inner = sh[n - 1];
    for (int k = 0; k < nops; k++) it->istride[k] = st[k][n - 1];
    it->ndim = n - 1;
    for (int i = 0; i < n - 1; i++) {
        it->shape[i] = sh[i];
        it->idx[i] = 0;
        for (int k = 0; k < nops; k++) it->stride[k][i] = st[k][i];
    }
    return true;
}

bool tt__iter_next(tt__iter *it) {
    for (int i = it->ndim - 1; i >= 0; i--) {
        if (++it->idx[i] < it->shape[i]) {
            for (int k = 0; k < it->nops; k++) it->off[k] += it->stride[k][i];
            return true;
        }
        it->idx[i] = 0;
        for (int k = 0; k < it->nops; k++) it->off[k] -= (it->shape[i] - 1) * it->stride[k][i];
    }
    return false;
}

// ---- copy ----

// Below this many elements a copy stays on one thread.
#define COPY_PAR_MIN ((int64_t)1 << 18)

// Every run of `it` from s (dtype st) to d (dtype dt).
static void copy_runs(tt__iter *it, char *d, tt_dtype dt, const char *s, tt_dtype st) {
    size_t des = tt_dtype_size(dt), ses = tt_dtype_size(st);
    do {
        void *dp = d + it->off[0] * (int64_t)des;
        const void *sp = s + it->off[1] * (int64_t)ses;
        if (dt == st) {
            tt_kcopy_run(dp, it->istride[0], sp, it->istride[1], it->inner, des);
        } else if (dt == TT_F64 && st == TT_F32) {
            tt_kcvt_f32_f64(dp, it->istride[0], sp, it->istride[1], it->inner);
        } else if (dt == TT_F32 && st == TT_F64) {
            tt_kcvt_f64_f32(dp, it->istride[0], sp, it->istride[1], it->inner);
        } else {
            for (int64_t i = 0; i < it->inner; i++)
                tt__store(dp, dt, i * it->istride[0], tt__load(sp, st, i * it->istride[1]));
        }
    } while (tt__iter_next(it));
}

// One inner run at a time: same dtype, bit copies (tt_kcopy_run); f32 <-> f64, the typed
// conversions; any other pair goes through double (tt__load / tt__store). A large copy into a
// contiguous dst splits dst's first dim between threads (each element is written once, so
// the result is the same for any thread count).
typedef struct copy_job {
    tt_tensor *dst;
    const tt_tensor *src;
    const int64_t *sst;  // src's strides broadcast to dst's shape
    char *d;
    const char *s;
} copy_job;

// dst[i] = src[i] (shape[1:]) for i in [i0, i1), for the thread pool.
static void copy_slices(void *ctx, int64_t i0, int64_t i1) {
    const copy_job *j = ctx;
    const tt_tensor *dst = j->dst, *src = j->src;
    const int64_t *strides[2] = {dst->stride + 1, j->sst + 1};
    for (int64_t i = i0; i < i1; i++) {
        int64_t offs[2] = {dst->offset + i * dst->stride[0], src->offset + i * j->sst[0]};
        tt__iter it;
        if (tt__iter_init(&it, dst->ndim - 1, dst->shape + 1, 2, strides, offs))
            copy_runs(&it, j->d, dst->dtype, j->s, src->dtype);
    }
}

void tt_copy_(tt_tensor *dst, const tt_tensor *src) {
    TT_CHECK(dst && src, "dst or src is NULL");
    bool fits = src->ndim <= dst->ndim;
    for (int i = 1; fits && i <= src->ndim; i++) {
        int64_t s = src->shape[src->ndim - i], d = dst->shape[dst->ndim - i];
        fits = s == d || s == 1;
    }
    TT_CHECK(fits, "cannot copy src %s into dst %s: src's dims, aligned from the right, must "
             "equal dst's or be 1 (reshape or expand src first)", tt__shape(src), tt__shape(dst));
    tt_bump_version(dst, "copy_");
    int64_t sst[TT_MAX_DIMS];
    tt__broadcast_strides(src, dst->ndim, dst->shape, sst);
    char *d = tt__base(dst);
    const char *s = tt__base(src);
    if (dst->ndim >= 2 && dst->shape[0] > 1 && tt_numel(dst) >= COPY_PAR_MIN &&
        tt_is_contiguous(dst) && tt__kernel_threads() > 1) {
        copy_job j = {dst, src, sst, d, s};
        tt__parallel_for(dst->shape[0], 1, copy_slices, &j);
        return;
    }
    const int64_t *strides[2] = {dst->stride, sst};
    int64_t offs[2] = {dst->offset, src->offset};
    tt__iter it;
    if (tt__iter_init(&it, dst->ndim, dst->shape, 2, strides, offs))
        copy_runs(&it, d, dst->dtype, s, src->dtype);
}

tt_tensor *tt__contiguous_copy(const tt_tensor *t) {
    tt_tensor *c = tt__new(t->dtype, t->ndim, t->shape);
    tt_copy_(c, t);
    return c;
}

tt_tensor *tt__contiguous_ref(tt_tensor *t) {
    return tt_is_contiguous(t) ? tt_retain(t) : tt__contiguous_copy(t);
}
