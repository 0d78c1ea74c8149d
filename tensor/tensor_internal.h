// Internals of the tensor layer, shared with autograd/ and nn/ (through their own internal
// headers): broadcasting, N-d iteration, the buffer cache, profiler hooks, typed raw access.
// What every layer above may use is tensor_ext.h (included here). Not installed.
#ifndef TT_TENSOR_INTERNAL_H
#define TT_TENSOR_INTERNAL_H

#include "tensor.h"
#include "tensor_ext.h"

// The buffer cache (alloc.c): a 64-byte-aligned buffer of `padded` bytes (a multiple of 64),
// reused when one of that size was put back; any thread.
void *tt__buffer_get(size_t padded);
void tt__buffer_put(void *p, size_t padded);
// A 64-byte-aligned buffer of nbytes for a long-lived or large array, freed with free():
// from TT_HUGE_BYTES (2 MiB) on it starts on a 2 MiB boundary and its whole 2 MiB pages are
// offered to the kernel as transparent huge pages (Linux madvise), so streaming it (a weight
// read once per decoded token) walks 512x fewer page-table entries. Exits through
// tt__out_of_memory (for what) when memory is out.
#define TT_HUGE_BYTES ((size_t)2 << 20)
void *tt__alloc_aligned(size_t nbytes, const char *what);

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

// ---- live tensors, call sites and misuse messages (live.c) ----
// The debug switch: TT_DEBUG=origin or TT_LEAK_REPORT=2 in the environment (read when the
// first tensor is made), or tt_set_debug_origin. While on, tensors and scopes record the
// stack where they are made, begun and released; off, each hook is one predictable branch.
extern _Atomic bool tt__debug_origin;
#define TT__TRACE_MAX 16
typedef struct tt__trace {
    int n;
    void *pc[TT__TRACE_MAX];  // return addresses, innermost first (frame 0 is in live.c)
} tt__trace;
void tt__trace_capture(tt__trace *tr);
void tt__debug_made(tt_tensor *t);   // allocates t->debug and records the stack
void tt__debug_freed(tt_tensor *t);  // records the stack that releases t
void tt__debug_drop(tt_tensor *t);   // frees t->debug
// Registers the at-exit report and reads the debug switch; once, at the first tensor.
void tt__leak_report_arm(void);
// Aborts for a tt_retain / tt_release (func) of t whose refcount is not positive.
#if defined(__GNUC__)
__attribute__((noreturn, cold))
#endif
void tt__bad_refcount(const tt_tensor *t, const char *func, bool retain);
// Calls fn on every live tensor of every thread (tensor.c walks its slabs). Not safe while
// another thread makes or frees tensors.
void tt__tensors_each(void (*fn)(const tt_tensor *t, void *ctx), void *ctx);
// This thread's open scope i (0 outermost .. tt_scope_depth() - 1): the tensors it owns and
// keeps, and where it was begun (NULL unless the debug switch was on then).
typedef struct tt__scope_view {
    tt_tensor *const *owned;
    size_t n;
    tt_tensor *const *kept;
    size_t nkept;
    const tt__trace *begun;
} tt__scope_view;
tt__scope_view tt__scope_get(int i);
// Warns once on stderr that `depth` scopes are open on this thread (tt_scope_begin).
void tt__scope_deep(int depth);

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
// freed (tt__freed, tensor_ext.h). Every read of a tensor's data goes through here (tt__base, tt_data, views, versions).
static inline tt_storage *tt__storage(const tt_tensor *t, const char *func) {
    if (!t->storage) tt__freed(t, func);
    return t->storage;
}
// The start of t's storage, checked as tt__storage on behalf of the calling function.
#define tt__base(t) (tt__storage((t), __func__)->data)
static inline void *tt__data_or_null(const tt_tensor *t) { return t ? tt_data(t) : NULL; }

#endif  // TT_TENSOR_INTERNAL_H
