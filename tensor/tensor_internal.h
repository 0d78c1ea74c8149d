// Internals of the tensor layer, shared with the layers built on it (autograd/, nn/, ...).
// Not installed, not part of the public API.
#ifndef TT_TENSOR_INTERNAL_H
#define TT_TENSOR_INTERNAL_H

#include "tensor.h"

// ---- creation without a scope ----
// tt__new returns a reference owned by the caller even inside a scope; public functions hand
// their result to tt__autorelease(), which gives it to the innermost scope if there is one.
// Aborts, naming func, unless (dtype, ndim, shape) can make a tensor (public creators check
// first so that a bad shape names them).
void tt__check_shape(const char *func, tt_dtype dtype, int ndim, const int64_t *shape);
tt_tensor *tt__new(tt_dtype dtype, int ndim, const int64_t *shape);  // contiguous, uninitialized
tt_tensor *tt__new_zeros(tt_dtype dtype, int ndim, const int64_t *shape);
tt_tensor *tt__new_view(const tt_tensor *t, int ndim, const int64_t *shape,
                        const int64_t *stride, int64_t offset);  // shares storage
tt_tensor *tt__autorelease(tt_tensor *t);
// The buffer cache (alloc.c): a 64-byte-aligned buffer of `padded` bytes (a multiple of 64),
// reused when one of that size was put back; any thread.
void *tt__buffer_get(size_t padded);
void tt__buffer_put(void *p, size_t padded);
tt_tensor *tt__contiguous_copy(const tt_tensor *t);  // always copies; unscoped
// t itself (retained) when contiguous, else a contiguous copy; unscoped: release it.
tt_tensor *tt__contiguous_ref(tt_tensor *t);

// An allocation of nbytes for func at file:line failed: the one-line message to the
// tt_oom_hook, then tt_fatal (memory.c).
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void tt__out_of_memory(size_t nbytes, const char *file, int line, const char *func);

// Runs fn on each thread that called this, when that thread exits (pthread key destructors),
// to free the thread's per-thread memory; fn is registered once, at most 8 such functions.
void tt__at_thread_exit(void (*fn)(void));
// autograd/ registers how a tensor's node is freed when the tensor dies.
void tt__set_node_free(void (*fn)(tt_node *));
// ... and how its gradient hooks are freed.
void tt__set_hooks_free(void (*fn)(tt_hooks *));

// "(2, 3)" in one of 8 rotating thread-local buffers, for error messages.
const char *tt__shape(const tt_tensor *t);
const char *tt__shape_of(int ndim, const int64_t *shape);

void tt__contiguous_strides(int ndim, const int64_t *shape, int64_t *stride);
int64_t tt__shape_numel(int ndim, const int64_t *shape);
// Resolves a negative dim; aborts naming the caller's file, line and function when out of range.
int tt__norm_dim_at(int dim, int ndim, const char *file, int line, const char *func);
#define tt__norm_dim(dim, ndim, func) tt__norm_dim_at((dim), (ndim), __FILE__, __LINE__, (func))

// ---- broadcasting ----
// NumPy rules: align trailing dims; each pair equal or one of them 1. Returns false if the
// shapes do not broadcast.
bool tt__broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b,
                         int *nout, int64_t *out);
// Strides that read t as if it had shape (ndim, shape): 0 on broadcast dims.
void tt__broadcast_strides(const tt_tensor *t, int ndim, const int64_t *shape, int64_t *stride);

// ---- N-d iteration over up to TT_ITER_MAX operands with their own strides ----
// Row-major over `shape`; adjacent dims that are contiguous for every operand are merged.
//
//     tt__iter it;
//     if (tt__iter_init(&it, ndim, shape, 2, strides, offsets)) do {
//         for (int64_t i = 0; i < it.inner; i++)
//             y[it.off[0] + i * it.istride[0]] = f(x[it.off[1] + i * it.istride[1]]);
//     } while (tt__iter_next(&it));
#define TT_ITER_MAX 4
typedef struct tt__iter {
    int ndim;  // outer dims (after merging, without the innermost)
    int nops;
    int64_t shape[TT_MAX_DIMS];
    int64_t stride[TT_ITER_MAX][TT_MAX_DIMS];
    int64_t idx[TT_MAX_DIMS];
    int64_t off[TT_ITER_MAX];      // offset of the current inner run, per operand
    int64_t inner;                 // length of the innermost run
    int64_t istride[TT_ITER_MAX];  // stride of the innermost run, per operand
} tt__iter;

// Returns false when the shape has no elements.
bool tt__iter_init(tt__iter *it, int ndim, const int64_t *shape, int nops,
                   const int64_t *const *strides, const int64_t *offsets);
bool tt__iter_next(tt__iter *it);

// ---- OpenMP ----
#ifdef _OPENMP
#include <omp.h>
#endif
// TT_PARALLEL_FOR(cond) before a for loop: its iterations are split statically between the
// threads when cond holds (the same partition every run); serial without OpenMP.
// TT_PARALLEL_FOR_N(nt): the same on a team of nt threads, serial when nt is 1.
#ifdef _OPENMP
#define TT_PRAGMA_(x) _Pragma(#x)
#define TT_PARALLEL_FOR(cond) TT_PRAGMA_(omp parallel for schedule(static) if (cond))
#define TT_PARALLEL_FOR_N(nt) \
    TT_PRAGMA_(omp parallel for schedule(static) num_threads(nt) if ((nt) > 1))
#else
#define TT_PARALLEL_FOR(cond)
#define TT_PARALLEL_FOR_N(nt) (void)(nt);
#endif

// The threads a kernel may start: 1 inside a parallel region (no nested teams), else OpenMP's
// count (1 without OpenMP).
static inline int tt__kernel_threads(void) {
#ifdef _OPENMP
    return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
    return 1;
#endif
}

// A barrier of the enclosing team of nt threads; nothing when nt is 1 or without OpenMP.
static inline void tt__team_barrier(int nt) {
#ifdef _OPENMP
    if (nt > 1) {
#pragma omp barrier
    }
#else
    (void)nt;
#endif
}

// ---- hot loops compiled for several ISAs: TT_CLONES (kernels/cpu.h) ----
#include "kernels/cpu.h"

// ---- crash-safe file writing (file.c) ----
// write(2) until all n bytes are written (EINTR retried); false with errno set otherwise.
bool tt__write_all(int fd, const void *data, size_t n);
// Writes path through a temp file "<path>.tmp.<pid>.<suffix>" created exclusively (a planted
// file or symlink is never followed): fill(fd, ctx) writes the bytes (returning false with
// errno set on failure), then fsync, rename over path, fsync of the directory, and removal of
// temp files that dead savers left next to path. A symlinked path updates the link's target
// (the link stays); the replaced file's mode is kept (a new file gets 0644 less the umask).
// TT_OK, or TT_ERR_IO with one line naming what ("checkpoint", "safetensors", ...), the step
// that failed and why; the old file is unchanged.
tt_status tt__write_atomic(const char *path, const char *what, bool (*fill)(int fd, void *ctx),
                           void *ctx);
// Creates "<path>.tmp.<pid>.<suffix>" with O_CREAT | O_EXCL | O_NOFOLLOW (a new suffix on each
// EEXIST): the fd, with *tmp its name (tt_free it), or -1 with errno set.
int tt__create_temp(const char *path, char **tmp);
// tt_file_open_read as a FILE (mode "rb"); NULL with the error set, ending in " (fix)" when fix
// is given and path is missing or unreadable (not when it is a FIFO, device or directory).
FILE *tt__fopen_read(const char *path, const char *what, const char *fix);

// ---- profiler hooks (autograd/profiler.c turns them on; main thread only) ----
// While tt__prof_on, tt__prof_first_new holds when this thread made its first tensor since the
// profiler last cleared it (0: none): an op's forward is timed from there (its first buffer)
// to its tt__record, and the profiler clears it after each op. The allocator tracks the peak
// of the live storage bytes. Off, each hook is one predictable branch.
extern _Atomic bool tt__prof_on;  // read by any thread (loader threads make tensors)
extern _Thread_local int64_t tt__prof_first_new;
int64_t tt__now_ns(void);       // CLOCK_MONOTONIC in nanoseconds
void tt__prof_peak_reset(void);  // the peak starts again from the live bytes now
int64_t tt__prof_peak(void);     // the highest live storage bytes seen while tt__prof_on

// ---- typed element access on raw storage (strided fallbacks) ----
// TT_BOOL is one byte holding 0 or 1; storing any nonzero value (NaN too) stores 1.
static inline double tt__load(const void *base, tt_dtype dt, int64_t i) {
    switch (dt) {
        case TT_F32: return ((const float *)base)[i];
        case TT_F64: return ((const double *)base)[i];
        case TT_I32: return ((const int32_t *)base)[i];
        case TT_BOOL: return ((const uint8_t *)base)[i];
        default: return (double)((const int64_t *)base)[i];
    }
}
static inline void tt__store(void *base, tt_dtype dt, int64_t i, double v) {
    switch (dt) {
        case TT_F32: ((float *)base)[i] = (float)v; break;
        case TT_F64: ((double *)base)[i] = v; break;
        case TT_I32: ((int32_t *)base)[i] = (int32_t)v; break;
        case TT_BOOL: ((uint8_t *)base)[i] = v != 0; break;  // NaN is true, as bool(nan)
        default: ((int64_t *)base)[i] = (int64_t)v; break;
    }
}
// t's storage; aborts with the use-after-release message (tensor.h) naming func when t was
// freed. Every read of a tensor's data goes through here (tt__base, tt_data, views, versions).
#if defined(__GNUC__)
__attribute__((noreturn, cold))
#endif
void tt__freed(const tt_tensor *t, const char *func);
static inline tt_storage *tt__storage(const tt_tensor *t, const char *func) {
    if (!t->storage) tt__freed(t, func);
    return t->storage;
}
// The refcount of a freed tensor struct (tensor.c's quarantine).
#define TT__FREED ((int64_t)-0x5eadbeef)
// The same check for functions that read only metadata (shape, dtype, flags): aborts when t
// was freed. A struct that never was a tensor (a shape on the stack) passes.
static inline void tt__check_live(const tt_tensor *t, const char *func) {
    if (__atomic_load_n(&t->refcount, __ATOMIC_RELAXED) == TT__FREED) tt__freed(t, func);
}
// The start of t's storage, checked as tt__storage on behalf of the calling function.
#define tt__base(t) (tt__storage((t), __func__)->data)
static inline void *tt__data_or_null(const tt_tensor *t) { return t ? tt_data(t) : NULL; }

#endif  // TT_TENSOR_INTERNAL_H
