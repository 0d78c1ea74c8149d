// The buffer cache behind tensor storage: freed buffers kept by size and handed out again,
// shared by every thread under one lock taken only on the cache path.
// Reference counting and the counters are in tensor.c.
#define _DEFAULT_SOURCE  // madvise(MADV_HUGEPAGE)
#include "tensor_internal.h"

#include <sched.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

// ---- the buffer cache ----
// A training step allocates the same sizes every step, so freed buffers are kept in buckets
// by exact (64-byte padded) size and handed out again: the steady state calls no malloc. The
// cache holds at most cache_limit bytes (a buffer that does not fit is freed). Sanitizer
// builds and TT_NO_CACHE=1 bypass it, so use-after-free stays detectable. Every thread shares
// it: a spin lock guards the buckets, the byte count and the stats. Uncontended it costs one
// exchange and one store per buffer; the sections it guards are a few loads and stores (a
// table grows rarely), so a waiting thread yields rather than sleeps.

#if defined(__SANITIZE_ADDRESS__)
#define TT_CACHE_DEFAULT false
#else
#define TT_CACHE_DEFAULT true
#endif

typedef struct bucket {
    size_t size;   // padded bytes; 0 = empty slot
    void **bufs;
    int n, cap;
} bucket;

static atomic_int cache_locked;
static bucket *buckets;  // open addressing, nbuckets a power of two
static size_t nbuckets, nused;
static size_t cached_bytes, cache_limit = (size_t)1 << 30;
static atomic_int cache_on = -1;  // -1: not decided yet (deciding twice gives the same answer)
static tt_alloc_stats stats;

static void cache_lock(void) {
    while (atomic_exchange_explicit(&cache_locked, 1, memory_order_acquire))
        while (atomic_load_explicit(&cache_locked, memory_order_relaxed)) sched_yield();
}

static void cache_unlock(void) { atomic_store_explicit(&cache_locked, 0, memory_order_release); }

static bool cache_enabled(void) {
    int on = atomic_load_explicit(&cache_on, memory_order_relaxed);
    if (on < 0) {
        const char *env = getenv("TT_NO_CACHE");
        on = TT_CACHE_DEFAULT && !(env && env[0] && strcmp(env, "0") != 0);
        atomic_store_explicit(&cache_on, on, memory_order_relaxed);
    }
    return on;
}

// The bucket of `size` (the cache lock held); create: make it if missing, else the empty slot or
// NULL when there is no table.
static bucket *find_bucket(size_t size, bool create) {
    if (create && 2 * (nused + 1) > nbuckets) {  // grow: keep the load under one half
        size_t old = nbuckets;
        bucket *prev = buckets;
        nbuckets = old ? 2 * old : 64;
        buckets = TT_CALLOC(nbuckets, sizeof *buckets);
        for (size_t i = 0; i < old; i++)
            if (prev[i].size) *find_bucket(prev[i].size, false) = prev[i];
        tt_free(prev);
    }
    if (!nbuckets) return NULL;
    // Fibonacci hashing: the top bits of size * 2^64/phi pick the slot; linear probing.
    int bits = 0;
    while (((size_t)1 << bits) < nbuckets) bits++;
    uint64_t h = (uint64_t)(size / 64) * 0x9e3779b97f4a7c15ULL;
    for (size_t i = (size_t)(h >> (64 - bits));; i = (i + 1) & (nbuckets - 1)) {
        if (buckets[i].size == size) return &buckets[i];
        if (!buckets[i].size) {
            if (!create) return &buckets[i];  // the empty slot where it would go
            buckets[i].size = size;
            nused++;
            return &buckets[i];
        }
    }
}

// ---- large buffers ----

void *tt__alloc_aligned(size_t nbytes, const char *what) {
    size_t align = nbytes >= TT_HUGE_BYTES ? TT_HUGE_BYTES : 64;
    size_t padded = (nbytes + align - 1) / align * align;  // aligned_alloc: a multiple
    void *p = aligned_alloc(align, padded ? padded : align);
    if (!p) {  // the cache's buffers back to the system, then once more
        tt_alloc_trim();
        p = aligned_alloc(align, padded ? padded : align);
    }
    if (!p) tt__out_of_memory(nbytes, __FILE__, __LINE__, what);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Only the 2 MiB pages nbytes fills: a partly used last page would cost a whole one.
    if (align == TT_HUGE_BYTES) madvise(p, nbytes / TT_HUGE_BYTES * TT_HUGE_BYTES, MADV_HUGEPAGE);
#endif
    return p;
}

void *tt__buffer_get(size_t padded) {
    bool on = cache_enabled();
    void *p = NULL;
    cache_lock();
    if (on) {
        bucket *b = find_bucket(padded, false);
        if (b && b->size == padded && b->n > 0) {
            cached_bytes -= padded;
            p = b->bufs[--b->n];
        }
    }
    if (p) stats.reused++;
    else stats.fresh++;
    cache_unlock();
    if (p) return p;
    return tt__alloc_aligned(padded, "the tensor allocator");
}

void tt__buffer_put(void *p, size_t padded) {
    if (!cache_enabled()) {
        free(p);
        return;
    }
    cache_lock();
    if (cached_bytes + padded > cache_limit) {
        cache_unlock();
        free(p);
        return;
    }
    bucket *b = find_bucket(padded, true);
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4;
        b->bufs = TT_REALLOC(b->bufs, (size_t)b->cap * sizeof *b->bufs);
    }
    b->bufs[b->n++] = p;
    cached_bytes += padded;
    cache_unlock();
}

// Frees every cached buffer (the cache lock held).
static void trim_locked(void) {
    for (size_t i = 0; i < nbuckets; i++) {
        for (int k = 0; k < buckets[i].n; k++) free(buckets[i].bufs[k]);
        tt_free(buckets[i].bufs);
    }
    tt_free(buckets);
    buckets = NULL;
    nbuckets = nused = 0;
    cached_bytes = 0;
}

void tt_alloc_trim(void) {
    cache_lock();
    trim_locked();
    cache_unlock();
}

size_t tt_alloc_set_cache_limit(size_t bytes) {
    cache_lock();
    size_t prev = cache_limit;
    cache_limit = bytes;
    if (cached_bytes > bytes) trim_locked();
    cache_unlock();
    return prev;
}

tt_alloc_stats tt_alloc_get_stats(void) {
    cache_lock();
    tt_alloc_stats s = stats;
    s.cached_bytes = (int64_t)cached_bytes;
    cache_unlock();
    s.enabled = cache_enabled();
    return s;
}
