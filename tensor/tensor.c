// Tensor lifetime: the counted allocator, storage, reference counting, ownership scopes,
// metadata, element access, raw views and the error helpers.
// Creation and fills are in create.c, iteration in iter.c, printing in print.c.
#include "tensor_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// ---- errors ----

static tt_fatal_hook fatal_hook;
static void *fatal_hook_ctx;

tt_fatal_hook tt_set_fatal_hook(tt_fatal_hook hook, void *ctx) {
    tt_fatal_hook prev = fatal_hook;
    fatal_hook = hook;
    fatal_hook_ctx = ctx;
    return prev;
}

void tt_fatal(const char *file, int line, const char *func, const char *fmt, ...) {
    char msg[2048];
    int k = snprintf(msg, sizeof msg, "%s:%d: %s: ", file, line, func);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < sizeof msg) vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    if (fatal_hook) fatal_hook(msg, fatal_hook_ctx);
    abort();
}

static _Thread_local char last_error[1024];

const char *tt_status_str(tt_status s) {
    static const char *names[TT_STATUS_COUNT] = {
        [TT_OK] = "ok",
        [TT_ERR_IO] = "I/O error",
        [TT_ERR_FORMAT] = "malformed file",
        [TT_ERR_ARG] = "invalid argument",
        [TT_ERR_MISMATCH] = "mismatch",
        [TT_ERR_NOMEM] = "out of memory",
    };
    return (s >= 0 && s < TT_STATUS_COUNT) ? names[s] : "unknown status";
}

const char *tt_last_error(void) { return last_error; }

tt_status tt_set_error(tt_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

// ---- the counted allocator ----

// Each thread counts into a block of its own, which only it writes: a relaxed load and store,
// no locked instruction on the path of every tensor (a locked add waits for the stores before
// it, e.g. those initializing a struct that left the quarantine). A reader sums every
// thread's block; a tensor made on one thread and freed on another nets out in the sum.
// Blocks stay on the list until exit.
typedef struct counter_block {
    atomic_llong tensors, bytes;
    struct counter_block *next;
} counter_block;

static _Atomic(counter_block *) counter_blocks;
static _Thread_local counter_block *my_counters;

static counter_block *counters(void) {
    if (!my_counters) {
        counter_block *b = TT_CALLOC(1, sizeof *b), *head = atomic_load(&counter_blocks);
        do b->next = head;
        while (!atomic_compare_exchange_weak(&counter_blocks, &head, b));
        my_counters = b;
    }
    return my_counters;
}

static inline void count(atomic_llong *c, long long delta) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + delta,
                          memory_order_relaxed);
}

int64_t tt_live_tensors(void) {
    long long n = 0;
    for (counter_block *b = atomic_load(&counter_blocks); b; b = b->next)
        n += atomic_load_explicit(&b->tensors, memory_order_relaxed);
    return (int64_t)n;
}

int64_t tt_live_bytes(void) {
    long long n = 0;
    for (counter_block *b = atomic_load(&counter_blocks); b; b = b->next)
        n += atomic_load_explicit(&b->bytes, memory_order_relaxed);
    return (int64_t)n;
}

void *tt_malloc_at(size_t nbytes, const char *file, int line) {
    void *p = malloc(nbytes ? nbytes : 1);
    if (!p) tt__out_of_memory(nbytes, file, line, "tt_malloc");
    return p;
}

void *tt_calloc_at(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) tt__out_of_memory(count * size, file, line, "tt_calloc");
    return p;
}

void *tt_realloc_at(void *p, size_t nbytes, const char *file, int line) {
    void *q = realloc(p, nbytes ? nbytes : 1);
    if (!q) tt__out_of_memory(nbytes, file, line, "tt_realloc");
    return q;
}

void tt_free(void *p) { free(p); }

// ---- dtypes ----

size_t tt_dtype_size(tt_dtype dtype) {
    switch (dtype) {
        case TT_F32: case TT_I32: return 4;
        case TT_F64: case TT_I64: return 8;
        case TT_BOOL: return 1;
        default: break;
    }
    tt_fatal(__FILE__, __LINE__, __func__, "invalid dtype %d", (int)dtype);
}

const char *tt_dtype_name(tt_dtype dtype) {
    switch (dtype) {
        case TT_F32: return "f32";
        case TT_F64: return "f64";
        case TT_I32: return "i32";
        case TT_I64: return "i64";
        case TT_BOOL: return "bool";
        default: return "invalid";
    }
}

bool tt_dtype_is_float(tt_dtype dtype) { return dtype == TT_F32 || dtype == TT_F64; }

// ---- profiler hooks ----

_Atomic bool tt__prof_on;
_Thread_local int64_t tt__prof_first_new;
static atomic_llong prof_peak;  // any thread may allocate: a lock-free running maximum

int64_t tt__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void tt__prof_peak_reset(void) { atomic_store(&prof_peak, (long long)tt_live_bytes()); }
int64_t tt__prof_peak(void) { return (int64_t)atomic_load(&prof_peak); }

static void prof_track_peak(void) {
    long long live = (long long)tt_live_bytes(), peak = atomic_load(&prof_peak);
    while (live > peak && !atomic_compare_exchange_weak(&prof_peak, &peak, live)) {}
}

// ---- storage ----

static tt_storage *storage_new(size_t nbytes, int ndim, const int64_t *shape) {
    tt_storage *s = TT_MALLOC(sizeof *s);
    s->ndim = ndim;
    for (int i = 0; i < ndim; i++) s->shape[i] = shape[i];
    size_t padded = (nbytes + 63) & ~(size_t)63;
    s->data = tt__buffer_get(padded ? padded : 64);
    s->nbytes = nbytes;
    s->refcount = 1;
    s->version = 0;
    s->writer = NULL;
    count(&counters()->bytes, (long long)nbytes);
    if (tt__prof_on) prof_track_peak();
    return s;
}

// The last reference frees; a count of 1 is ours alone (nobody else can add one), so the common
// case takes no locked instruction.
static void storage_release(tt_storage *s) {
    if (!s) return;
    int64_t c = __atomic_load_n(&s->refcount, __ATOMIC_ACQUIRE);
    TT_CHECK(c > 0, "storage refcount underflow");
    if (c != 1 && __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) > 0) return;
    count(&counters()->bytes, -(long long)s->nbytes);
    size_t padded = (s->nbytes + 63) & ~(size_t)63;
    tt__buffer_put(s->data, padded ? padded : 64);
    tt_free(s);
}

// ---- the version counter ----

uint64_t tt_version(const tt_tensor *t) {
    return __atomic_load_n(&tt__storage(t, __func__)->version, __ATOMIC_RELAXED);
}

void tt_bump_version(tt_tensor *t, const char *op) {
    tt_storage *s = tt__storage(t, __func__);
    __atomic_fetch_add(&s->version, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&s->writer, op, __ATOMIC_RELAXED);
}

// ---- per-thread memory given back when a thread exits ----
// A thread that allocated per-thread memory (the quarantine, GEMM workspaces) arms a key
// whose destructor runs every registered function on that thread as it exits. The main
// thread's memory stays until the process exits.

typedef void (*exit_fn)(void);
#define EXIT_FNS 8
static _Atomic(exit_fn) exit_fns[EXIT_FNS];
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static _Thread_local bool exit_armed;

static void run_exit_fns(void *unused) {
    (void)unused;
    for (int i = 0; i < EXIT_FNS; i++) {
        exit_fn fn = atomic_load(&exit_fns[i]);
        if (fn) fn();
    }
}

static void make_exit_key(void) {
    TT_CHECK(pthread_key_create(&exit_key, run_exit_fns) == 0, "pthread_key_create failed");
}

void tt__at_thread_exit(void (*fn)(void)) {
    for (int i = 0; i < EXIT_FNS; i++) {  // registered once, in the first free slot
        exit_fn cur = NULL;
        if (atomic_compare_exchange_strong(&exit_fns[i], &cur, fn) || cur == fn) break;
        TT_CHECK(i + 1 < EXIT_FNS, "more than %d thread-exit functions", EXIT_FNS);
    }
    if (exit_armed) return;
    pthread_once(&exit_once, make_exit_key);
    pthread_setspecific(exit_key, &exit_armed);  // any non-NULL value
    exit_armed = true;
}

// ---- tensor structs: poisoned on free, reused from a quarantine ----
// A freed struct gets the refcount FREED (its shape, dtype and origin stay, for the message)
// and waits in a thread-local FIFO ring of up to RING structs; a new tensor reuses the oldest
// one once more than QUARANTINE structs wait behind it. So a release or retain of a tensor freed
// fewer than QUARANTINE frees ago finds the poison and aborts (tensor.h says what is caught).
// The ring is larger than the window so that a training step, which frees about as many
// tensors as it makes, reuses structs instead of making new ones. New structs come from slabs
// that are never freed: walking the slabs finds every live tensor (the leak report, live.c).
// A struct pushed out of a full ring, or left in the ring of a thread that exits, goes to a
// shared pool (poisoned still) that a thread takes from before it cuts a new slab.

#define FREED TT__FREED
#define QUARANTINE 4096  // frees a struct waits at least before reuse
#define RING 16384       // structs held at most; a power of two
#define SLAB 1024        // structs per slab

typedef struct slab {
    struct slab *next;
    tt_tensor t[SLAB];
} slab;

static _Atomic(slab *) slabs;  // every slab ever made, newest first
static _Thread_local slab *my_slab;
static _Thread_local int my_slab_used;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static tt_tensor **pool;  // structs out of every quarantine, under pool_lock
static size_t npool, cappool;
static atomic_size_t pool_size;  // npool, read without the lock

static _Thread_local tt_tensor **quarantine;  // ring; the oldest entry is at qhead
static _Thread_local size_t qhead, qlen;

static _Thread_local tt_tensor **dead;  // tensors waiting to be freed (tt_release)
static _Thread_local size_t ndead, capdead;

static void pool_put_locked(tt_tensor *t) {
    if (npool == cappool) {
        cappool = cappool ? 2 * cappool : 1024;
        pool = TT_REALLOC(pool, cappool * sizeof *pool);
    }
    pool[npool++] = t;
}

// At thread exit: the quarantined structs and the unused rest of the slab go to the pool.
static void quarantine_free(void) {
    pthread_mutex_lock(&pool_lock);
    for (size_t i = 0; i < qlen; i++) pool_put_locked(quarantine[(qhead + i) & (RING - 1)]);
    for (; my_slab && my_slab_used < SLAB; my_slab_used++)
        pool_put_locked(&my_slab->t[my_slab_used]);
    atomic_store(&pool_size, npool);
    pthread_mutex_unlock(&pool_lock);
    my_slab = NULL;
    tt_free(quarantine);
    quarantine = NULL;
    qhead = qlen = 0;
    tt_free(dead);
    dead = NULL;
    ndead = capdead = 0;
}

static tt_tensor *from_pool(void) {
    tt_tensor *t = NULL;
    pthread_mutex_lock(&pool_lock);
    if (npool) t = pool[--npool];
    atomic_store(&pool_size, npool);
    pthread_mutex_unlock(&pool_lock);
    return t;
}

static tt_tensor *struct_get(void) {
    tt_tensor *t = NULL;
    if (qlen > QUARANTINE) {
        t = quarantine[qhead];
        qhead = (qhead + 1) & (RING - 1);
        qlen--;
    } else if (atomic_load_explicit(&pool_size, memory_order_relaxed)) {
        t = from_pool();
    }
    if (t) {
        if (t->debug) tt__debug_drop(t);
        memset(t, 0, sizeof *t);
        return t;
    }
    if (!my_slab || my_slab_used == SLAB) {
        slab *b = TT_CALLOC(1, sizeof *b), *head = atomic_load(&slabs);
        do b->next = head;
        while (!atomic_compare_exchange_weak(&slabs, &head, b));
        my_slab = b;
        my_slab_used = 0;
        tt__at_thread_exit(quarantine_free);
    }
    return &my_slab->t[my_slab_used++];
}

static void struct_put(tt_tensor *t) {
    __atomic_store_n(&t->refcount, FREED, __ATOMIC_RELAXED);
    t->storage = NULL;
    t->grad = NULL;
    t->node = NULL;
    t->name = NULL;
    t->hooks = NULL;
    if (!quarantine) {
        quarantine = TT_MALLOC(RING * sizeof *quarantine);
        tt__at_thread_exit(quarantine_free);
    }
    if (qlen == RING) {  // more frees than allocations: the oldest goes to the pool
        pthread_mutex_lock(&pool_lock);
        pool_put_locked(quarantine[qhead]);
        atomic_store(&pool_size, npool);
        pthread_mutex_unlock(&pool_lock);
        qhead = (qhead + 1) & (RING - 1);
        qlen--;
    }
    quarantine[(qhead + qlen) & (RING - 1)] = t;
    qlen++;
}

void tt__tensors_each(void (*fn)(const tt_tensor *t, void *ctx), void *ctx) {
    for (slab *b = atomic_load(&slabs); b; b = b->next)
        for (int i = 0; i < SLAB; i++)
            if (__atomic_load_n(&b->t[i].refcount, __ATOMIC_RELAXED) > 0) fn(&b->t[i], ctx);
}

static atomic_int leak_report_armed;

// The at-exit report is registered by the first tensor or scope (one relaxed load after).
static inline void arm_leak_report(void) {
    if (!atomic_load_explicit(&leak_report_armed, memory_order_relaxed) &&
        !atomic_exchange(&leak_report_armed, 1))
        tt__leak_report_arm();
}

// ---- tensors ----

int64_t tt__shape_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

void tt__contiguous_strides(int ndim, const int64_t *shape, int64_t *stride) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

void tt__check_shape(const char *func, tt_dtype dtype, int ndim, const int64_t *shape) {
    TT_CHECK_IN(func, dtype >= 0 && dtype < TT_DTYPE_COUNT,
                "invalid dtype %d; use TT_F32, TT_F64, TT_I32, TT_I64 or TT_BOOL", (int)dtype);
    TT_CHECK_IN(func, ndim >= 0 && ndim <= TT_MAX_DIMS,
                "ndim %d is out of range [0, %d] (TT_MAX_DIMS)", ndim, TT_MAX_DIMS);
    TT_CHECK_IN(func, ndim == 0 || shape, "shape is NULL for ndim %d; pass TT_SHAPE(...)", ndim);
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        TT_CHECK_IN(func, shape[i] >= 0, "negative size %lld in dim %d; sizes are >= 0",
                    (long long)shape[i], i);
        // The product of the non-zero sizes bounds every stride: it must fit in int64.
        TT_CHECK_IN(func, shape[i] <= 1 || numel <= INT64_MAX / shape[i],
                    "shape %s has more elements than int64 can count",
                    tt__shape_of(ndim, shape));
        if (shape[i] > 1) numel *= shape[i];
    }
}

static tt_tensor *tensor_struct(const char *origin, tt_dtype dtype, int ndim,
                                const int64_t *shape) {
    tt__check_shape(origin, dtype, ndim, shape);
    arm_leak_report();
    tt_tensor *t = struct_get();
    t->refcount = 1;
    t->dtype = dtype;
    t->ndim = ndim;
    t->origin = origin;
    if (tt__debug_origin) tt__debug_made(t);
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    count(&counters()->tensors, 1);
    if (tt__prof_on && !tt__prof_first_new) tt__prof_first_new = tt__now_ns();
    return t;
}

tt_tensor *tt__new_at(const char *origin, tt_dtype dtype, int ndim, const int64_t *shape) {
    tt_tensor *t = tensor_struct(origin, dtype, ndim, shape);
    int64_t n = tt__shape_numel(ndim, shape);
    TT_CHECK(n <= (int64_t)(SIZE_MAX / 16), "tensor of %lld elements is too large", (long long)n);
    t->storage = storage_new((size_t)n * tt_dtype_size(dtype), ndim, shape);
    tt__contiguous_strides(ndim, shape, t->stride);
    return t;
}

tt_tensor *tt__new_zeros_at(const char *origin, tt_dtype dtype, int ndim,
                            const int64_t *shape) {
    tt_tensor *t = tt__new_at(origin, dtype, ndim, shape);
    memset(t->storage->data, 0, t->storage->nbytes);
    return t;
}

tt_tensor *tt__new_view_at(const char *origin, const tt_tensor *t, int ndim,
                           const int64_t *shape, const int64_t *stride, int64_t offset) {
    tt_tensor *v = tensor_struct(origin, t->dtype, ndim, shape);
    for (int i = 0; i < ndim; i++) v->stride[i] = stride[i];
    v->offset = offset;
    v->storage = tt__storage(t, "tt__new_view");
    __atomic_fetch_add(&v->storage->refcount, 1, __ATOMIC_RELAXED);
    return v;
}

tt_tensor *tt_as_strided(const tt_tensor *t, int ndim, const int64_t *shape,
                         const int64_t *stride, int64_t offset) {
    TT_CHECK(t, "tensor is NULL");
    TT_CHECK(ndim >= 0 && ndim <= TT_MAX_DIMS, "ndim %d is out of range [0, %d]", ndim,
             TT_MAX_DIMS);
    // Every element the view can reach must lie inside the storage.
    int64_t lo = offset, hi = offset, n = 1;
    bool ovf = false;  // a span or the reach overflows int64: it lies outside any storage
    for (int i = 0; i < ndim; i++) {
        TT_CHECK(shape[i] >= 0, "negative size %lld in dim %d", (long long)shape[i], i);
        n = shape[i] == 0 ? 0 : n;
        if (shape[i] == 0) continue;
        int64_t span;
        ovf = ovf || __builtin_mul_overflow(shape[i] - 1, stride[i], &span) ||
              __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi);
    }
    TT_CHECK(n == 0 || !ovf, "view %s with strides %s and offset %lld reaches past int64",
             tt__shape_of(ndim, shape), tt__shape_of(ndim, stride), (long long)offset);
    int64_t cap = (int64_t)(tt__storage(t, __func__)->nbytes / tt_dtype_size(t->dtype));
    TT_CHECK(n == 0 || (lo >= 0 && hi < cap),
             "view %s with offset %lld reaches elements [%lld, %lld] outside a storage of %lld",
             tt__shape_of(ndim, shape), (long long)offset, (long long)lo, (long long)hi,
             (long long)cap);
    return tt__autorelease(tt__new_view(t, ndim, shape, stride, offset));
}

// Releasing can cascade (a tensor owns its node, which owns its inputs, ...). A long graph
// would recurse deeply, so tensors whose count reached zero go on a list freed in a loop.
static void (*node_free_fn)(tt_node *);
static void (*hooks_free_fn)(tt_hooks *);
static _Thread_local bool freeing;

void tt__set_node_free(void (*fn)(tt_node *)) { node_free_fn = fn; }
void tt__set_hooks_free(void (*fn)(tt_hooks *)) { hooks_free_fn = fn; }

tt_tensor *tt_retain(tt_tensor *t) {
    if (t) {
        if (__atomic_load_n(&t->refcount, __ATOMIC_RELAXED) <= 0)
            tt__bad_refcount(t, "tt_retain", true);
        __atomic_fetch_add(&t->refcount, 1, __ATOMIC_RELAXED);
    }
    return t;
}

// As storage_release: a count of 1 is ours alone, so dropping it takes no locked instruction.
void tt_release(tt_tensor *t) {
    if (!t) return;
    int64_t c = __atomic_load_n(&t->refcount, __ATOMIC_ACQUIRE);
    if (c <= 0) tt__bad_refcount(t, "tt_release", false);
    if (c != 1 && __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) > 0) return;
    if (ndead == capdead) {
        capdead = capdead ? 2 * capdead : 64;
        dead = TT_REALLOC(dead, capdead * sizeof *dead);
    }
    dead[ndead++] = t;
    if (freeing) return;
    freeing = true;
    while (ndead > 0) {
        tt_tensor *d = dead[--ndead];
        tt_node *node = d->node;
        tt_tensor *grad = d->grad;
        tt_hooks *hooks = d->hooks;
        if (d->debug) tt__debug_freed(d);
        storage_release(d->storage);
        tt_free(d->name);
        struct_put(d);
        count(&counters()->tensors, -1);
        tt_release(grad);  // queues, does not recurse
        if (hooks && hooks_free_fn) hooks_free_fn(hooks);
        if (node && node_free_fn) node_free_fn(node);
    }
    freeing = false;
}

// ---- scopes ----

typedef struct scope {
    tt_tensor **owned;
    size_t n, cap;
    tt_tensor **kept;
    size_t nkept, capkept;
    tt__trace *begun;  // under the debug switch, else NULL
} scope;

#define SCOPES_DEEP 1000  // tt__scope_deep warns: a tt_scope_begin in a loop without its end?

static _Thread_local scope *scopes;
static _Thread_local int nscopes, capscopes;

static void push(tt_tensor ***arr, size_t *n, size_t *cap, tt_tensor *t) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        *arr = TT_REALLOC(*arr, *cap * sizeof **arr);
    }
    (*arr)[(*n)++] = t;
}

void tt_scope_begin(void) {
    arm_leak_report();
    if (nscopes == capscopes) {
        int old = capscopes;
        capscopes = capscopes ? 2 * capscopes : 8;
        scopes = TT_REALLOC(scopes, (size_t)capscopes * sizeof *scopes);
        memset(scopes + old, 0, (size_t)(capscopes - old) * sizeof *scopes);
    }
    scope *s = &scopes[nscopes++];
    s->n = 0;
    s->nkept = 0;
    if (tt__debug_origin) {
        if (!s->begun) s->begun = TT_MALLOC(sizeof *s->begun);
        tt__trace_capture(s->begun);
    } else if (s->begun) {
        s->begun->n = 0;
    }
    if (nscopes == SCOPES_DEEP) tt__scope_deep(nscopes);
}

tt__scope_view tt__scope_get(int i) {
    TT_CHECK(i >= 0 && i < nscopes, "scope %d of %d", i, nscopes);
    scope *s = &scopes[i];
    return (tt__scope_view){s->owned, s->n, s->kept, s->nkept,
                            s->begun && s->begun->n ? s->begun : NULL};
}

void tt_scope_end(void) {
    TT_CHECK(nscopes > 0, "tt_scope_end without a matching tt_scope_begin");
    scope *s = &scopes[nscopes - 1];
    for (size_t i = 0; i < s->n; i++) {
        tt_tensor *t = s->owned[i];
        if (t->refcount == FREED)
            tt_fatal(__FILE__, __LINE__, __func__, "a tensor %s %s owned by this scope was "
                     "released by hand before tt_scope_end; the scope owns what ops return: do "
                     "not release it, or tt_keep it first", tt__shape(t),
                     tt_dtype_name(t->dtype));
        tt_release(t);
    }
    s->n = 0;
    nscopes--;
    if (nscopes > 0) {
        scope *parent = &scopes[nscopes - 1];
        for (size_t i = 0; i < s->nkept; i++)
            push(&parent->owned, &parent->n, &parent->cap, s->kept[i]);
    }
    s->nkept = 0;
    if (nscopes == 0) {  // give the memory back when the last scope closes
        for (int i = 0; i < capscopes; i++) {
            tt_free(scopes[i].owned);
            tt_free(scopes[i].kept);
            tt_free(scopes[i].begun);
        }
        tt_free(scopes);
        scopes = NULL;
        capscopes = 0;
        tt_free(dead);
        dead = NULL;
        ndead = capdead = 0;
    }
}

tt_tensor *tt_keep(tt_tensor *t) {
    if (!t || nscopes == 0) return t;
    scope *s = &scopes[nscopes - 1];
    push(&s->kept, &s->nkept, &s->capkept, tt_retain(t));
    return t;
}

int tt_scope_depth(void) { return nscopes; }

tt_tensor *tt__autorelease(tt_tensor *t) {
    if (t && nscopes > 0) {
        scope *s = &scopes[nscopes - 1];
        push(&s->owned, &s->n, &s->cap, t);
    }
    return t;
}

// ---- metadata ----

int64_t tt_numel(const tt_tensor *t) {
    tt__check_live(t, __func__);
    return tt__shape_numel(t->ndim, t->shape);
}

int tt__norm_dim_at(int dim, int ndim, const char *file, int line, const char *func) {
    int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim)
        tt_fatal(file, line, func, "dim %d is out of range for a %d-d tensor "
                 "(valid: %d .. %d)", dim, ndim, -ndim, ndim - 1);
    return d;
}

int64_t tt_size(const tt_tensor *t, int dim) {
    tt__check_live(t, __func__);
    return t->shape[tt__norm_dim(dim, t->ndim, __func__)];
}

bool tt_is_contiguous(const tt_tensor *t) {
    tt__check_live(t, __func__);
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 1) continue;
        if (t->shape[i] == 0) return true;
        if (t->stride[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

bool tt_same_shape(const tt_tensor *a, const tt_tensor *b) {
    tt__check_live(a, __func__);
    tt__check_live(b, __func__);
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

void tt_set_name(tt_tensor *t, const char *name) {
    tt__check_live(t, __func__);
    tt_free(t->name);
    t->name = NULL;
    if (name) {
        size_t n = strlen(name) + 1;
        t->name = TT_MALLOC(n);
        memcpy(t->name, name, n);
    }
}

char *tt_shape_str(const tt_tensor *t, char *buf, size_t n) {
    size_t k = 0;
    if (n == 0) return buf;
    buf[0] = 0;
    k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "(");
    for (int i = 0; i < t->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (t->ndim == 1 && k < n) k += (size_t)snprintf(buf + k, n - k, ",");
    if (k < n) snprintf(buf + k, n - k, ")");
    return buf;
}

const char *tt__shape_of(int ndim, const int64_t *shape) {
    static _Thread_local char bufs[8][128];
    static _Thread_local int next;
    char *b = bufs[next++ & 7];
    tt_tensor tmp;
    tmp.ndim = ndim;
    for (int i = 0; i < ndim; i++) tmp.shape[i] = shape[i];
    return tt_shape_str(&tmp, b, sizeof bufs[0]);
}

const char *tt__shape(const tt_tensor *t) { return tt__shape_of(t->ndim, t->shape); }

// ---- element access ----

static int64_t flat_offset(const tt_tensor *t, int64_t i) {
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t k = i % t->shape[d];
        i /= t->shape[d];
        off += k * t->stride[d];
    }
    return off;
}

static int64_t idx_offset(const tt_tensor *t, const int64_t *idx, const char *func) {
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (idx[d] < 0 || idx[d] >= t->shape[d])
            tt_fatal(__FILE__, __LINE__, func, "index %lld is out of range for dim %d of %s",
                     (long long)idx[d], d, tt__shape(t));
        off += idx[d] * t->stride[d];
    }
    return off;
}

double tt_item(const tt_tensor *t) {
    TT_CHECK(tt_numel(t) == 1, "tensor %s has %lld elements; tt_item needs exactly one "
             "(reduce it first, e.g. with tt_sum)", tt__shape(t), (long long)tt_numel(t));
    return tt__load(tt__base(t), t->dtype, t->offset);
}

double tt_get(const tt_tensor *t, const int64_t *idx) {
    return tt__load(tt__base(t), t->dtype, idx_offset(t, idx, __func__));
}

void tt_set(tt_tensor *t, const int64_t *idx, double value) {
    tt__store(tt__base(t), t->dtype, idx_offset(t, idx, __func__), value);
    tt_bump_version(t, "set");
}

double tt_at(const tt_tensor *t, int64_t i) {
    TT_CHECK(i >= 0 && i < tt_numel(t), "flat index %lld is out of range for %s",
             (long long)i, tt__shape(t));
    return tt__load(tt__base(t), t->dtype, flat_offset(t, i));
}

void tt_set_at(tt_tensor *t, int64_t i, double value) {
    TT_CHECK(i >= 0 && i < tt_numel(t), "flat index %lld is out of range for %s",
             (long long)i, tt__shape(t));
    tt__store(tt__base(t), t->dtype, flat_offset(t, i), value);
    tt_bump_version(t, "set_at");
}

void tt_to_f64_array(const tt_tensor *t, double *out) {
    int64_t n = tt_numel(t);
    if (tt_is_contiguous(t) && (t->dtype == TT_F32 || t->dtype == TT_F64)) {
        // the common case (a row of logits each decoded token) without a load per element
        if (t->dtype == TT_F64) {
            memcpy(out, tt_data(t), (size_t)n * sizeof *out);
        } else {
            const float *p = tt_data(t);
            for (int64_t i = 0; i < n; i++) out[i] = p[i];
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) out[i] = tt__load(tt__base(t), t->dtype, flat_offset(t, i));
}

void *tt_data(const tt_tensor *t) {
    return (char *)tt__storage(t, __func__)->data + t->offset * (int64_t)tt_dtype_size(t->dtype);
}

float *tt_data_f32(const tt_tensor *t) {
    tt__storage(t, __func__);
    TT_CHECK(t->dtype == TT_F32, "tensor %s is %s, not f32", tt__shape(t),
             tt_dtype_name(t->dtype));
    return (float *)tt_data(t);
}

double *tt_data_f64(const tt_tensor *t) {
    tt__storage(t, __func__);
    TT_CHECK(t->dtype == TT_F64, "tensor %s is %s, not f64", tt__shape(t),
             tt_dtype_name(t->dtype));
    return (double *)tt_data(t);
}
