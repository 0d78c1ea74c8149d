// tinytorch.c profiler: per-op calls, forward and backward time, FLOPs and bytes moved, the
// share of the run each op kind takes, the allocator's live / peak bytes and buffer-cache hits,
// and a Chrome / Perfetto trace with one event per op.
//
//     tt_profiler_set_trace(true);         // optional: keep one event per op for the trace
//     tt_profiler_begin();                 // or TT_PROFILE=1 in the environment of any program
//     for (int it = 0; it < 10; it++) train_step();
//     tt_profiler_end();
//     tt_profiler_report(stderr);          // the table
//     tt_profiler_write_trace("trace.json");  // open in ui.perfetto.dev or chrome://tracing
//     tt_profiler_reset();
//
// What is counted: every op of tensor/ops.def that records itself (tt__record), in grad mode
// or not, as a forward; every node's backward as a backward of its op. Ops a backward runs
// internally are part of that backward, not forwards of their own. Only the thread that called
// tt_profiler_begin is profiled (ops run from the main thread; kernels' inner threads are not
// traced). Not counted: the ops of ops.def that never record (comparisons, argmax, nonzero),
// in-place ops (ops_inplace.c), optimizer steps and int8 QuantizedLinear kernels (they call
// kernels directly); their time shows as the "outside ops" row.
//
// Time: a forward runs from the first tensor made after the previous op (its first buffer or
// view) to the op's recording, so an op's checks before it makes a tensor are not in it, and
// an op that calls other ops counts only its own time after theirs (no double counting); a
// backward is its node's whole backward. Tensors a program makes between ops (a batch, a mask)
// count towards the next op.
// FLOPs (from the op's shapes, profiler.c's op_flops): a matrix product (matmul, affine)
// 2 M N K forward and 2 M N K per operand that needs a gradient (4 M N K for both); affine's
// bias M N forward and backward; attention 4 B NH T S HS forward (Q K^T and P V, counted in
// full even when causal, as PaLM's 6N + 12 L H Q T) and twice that backward; conv2d 2 per
// multiply-add as a matmul. The other ops are estimates per element: elementwise 1,
// reductions 1 (var 3), softmax / log-softmax / cross-entropy 5, layernorm 8, rmsnorm 5, and
// their backward twice the forward. Views, copies, gathers and embeddings are 0 FLOPs.
// Bytes moved: a forward reads its inputs and writes its output (a view moves nothing); a
// backward reads the output's gradient and the inputs it saved, and writes the inputs'
// gradients. These are the tensors' sizes, not the caches' traffic.
//
// A new op of ops.def gets its FLOPs in profiler.c's forward_flops (and backward_flops when its
// backward is not about twice its forward); without a case it counts 0 FLOPs.
//
// Off (the default), the profiler costs one predictable branch per op recording, per backward
// node and per tensor made (bench_train profile measures it on: about 1%, 2% with the trace).
#ifndef TT_PROFILER_H
#define TT_PROFILER_H

#include "autograd.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// Starts (or resumes) counting on the calling thread; a no-op when already on.
void tt_profiler_begin(void);
// Stops counting; the figures stay until tt_profiler_reset. A no-op when off.
void tt_profiler_end(void);
// Sets the profiler's figures aside and starts it from zero, without trace events, on this
// thread (tt_summary measures forwards with it); tt_profiler_pop puts them back, running or
// not as before. One level: a push while pushed aborts.
void tt_profiler_push(void);
void tt_profiler_pop(void);
// Zeroes every figure and drops the trace events (the profiler keeps running if it was on).
void tt_profiler_reset(void);
bool tt_profiler_enabled(void);

// The table: one row per op kind that ran (calls, forward / backward ms, share of the wall
// time, GFLOP, GFLOP/s, MB moved), the ops' total, the time outside ops, and the allocator's
// figures. Sorted by time. Works while running or after tt_profiler_end.
void tt_profiler_report(FILE *f);

typedef struct tt_op_profile {
    int64_t calls;           // forwards
    int64_t backward_calls;  // backwards of its nodes
    int64_t forward_ns, backward_ns;
    int64_t forward_flops, backward_flops;
    int64_t forward_bytes, backward_bytes;
} tt_op_profile;

typedef struct tt_profile_totals {
    int64_t wall_ns;                       // time between begin and end, summed
    int64_t calls, backward_calls;         // over every op
    int64_t forward_ns, backward_ns;
    int64_t forward_flops, backward_flops;
    int64_t forward_bytes, backward_bytes;
    int64_t live_bytes;   // tensor storage live now
    int64_t peak_bytes;   // the highest live storage while profiling
    int64_t cache_hits;   // buffers the buffer cache handed out again while profiling
    int64_t cache_misses; // buffers allocated from the system while profiling
    int64_t events;       // trace events kept
    int64_t events_dropped;  // trace events past TT_PROFILER_MAX_EVENTS
} tt_profile_totals;

tt_op_profile tt_profiler_op(tt_op op);  // one op kind's figures so far
tt_profile_totals tt_profiler_totals(void);

// ---- the trace ----
// With tracing on, each forward and backward is kept as one event (op, start, duration, input
// and output shapes, FLOPs, bytes), up to TT_PROFILER_MAX_EVENTS (later ones are counted as
// dropped). tt_profiler_write_trace writes them as Chrome's trace event format (a JSON object
// with "traceEvents": one complete "X" event per op, ts and dur in microseconds; backward
// events are named "<op> backward") through a temp file and a rename. TT_ERR_IO with a
// message when the file cannot be written.
#define TT_PROFILER_MAX_EVENTS (1 << 18)
void tt_profiler_set_trace(bool on);
tt_status tt_profiler_write_trace(const char *path);

// The environment: TT_PROFILE=1 starts the profiler when the program starts and prints the
// table to stderr at exit; TT_TRACE=FILE.json does the same with tracing on and writes the
// trace at exit.

#ifdef __cplusplus
}
#endif

#endif  // TT_PROFILER_H
