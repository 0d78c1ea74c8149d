// The library's thread pool (tensor/threads.c): parallel loops whose chunks the threads claim
// one at a time, so a thread the OS leaves without a core delays a step by at most one chunk.
// Not installed; included by tensor_ext.h. Results never depend on the thread count as long
// as each chunk's arithmetic depends only on its indices (never on which thread runs it).
#ifndef TT_PARALLEL_H
#define TT_PARALLEL_H

#include <stdint.h>

// fn(ctx, lo, hi) runs the iterations [lo, hi) of a parallel loop.
typedef void (*tt__range_fn)(void *ctx, int64_t lo, int64_t hi);

// Runs fn over [0, n) in chunks of at least grain iterations (grain >= 1), on the pool's
// threads and the calling one; returns when every chunk has run. Serial (one call fn(ctx, 0,
// n)) when there is one thread, one chunk, or when called from inside a parallel loop or while
// another thread's loop holds the pool.
void tt__parallel_for(int64_t n, int64_t grain, tt__range_fn fn, void *ctx);

// The same with exactly nchunks chunks, chunk c being [c * n / nchunks, (c + 1) * n / nchunks):
// for loops whose chunks must not depend on the thread count.
void tt__parallel_chunks(int64_t n, int64_t nchunks, tt__range_fn fn, void *ctx);

// fn over [0, n) in one contiguous share per thread (tt__kernel_threads() chunks, fewer when
// n is smaller): for a product that streams its weight from memory (a matrix-vector product
// with bf16, int8 or int4 panels), where each thread reading one long run front to back reads
// faster than threads taking turns on short ones (2-thread decoding of the 124M model, tokens
// interleaved: int8 4-12% and bf16 5% faster than 8 chunks a thread; as fast with another
// process busy on a core).
void tt__parallel_shares(int64_t n, tt__range_fn fn, void *ctx);

// The threads a kernel may use: 1 inside a parallel loop, else tt_get_num_threads().
int tt__kernel_threads(void);

// The index of the calling thread within a parallel loop: 0 for the calling thread, 1..N-1 for
// the pool's workers (for per-thread scratch buffers); 0 outside a loop.
int tt__thread_index(void);

#endif
