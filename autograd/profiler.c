// The profiler (profiler.h): per-op counters fed by the tape's hooks, the FLOPs and bytes of
// each op kind from its shapes, the report table and the Chrome trace writer. Not here: the
// allocator's peak (tensor/tensor.c) and the model summary (nn/summary.c).
#include "autograd_internal.h"
#include "profiler.h"

#include <stdlib.h>
#include <string.h>

// ---- state ----

typedef struct trace_event {
    int64_t ts_ns, dur_ns;  // from the trace origin
    int64_t flops, bytes;
    int16_t op;
    bool backward;
    char shapes[94];  // "(B, T, C) (C, C) -> (B, T, C)", cut when longer
} trace_event;

static tt_op_profile ops[TT_OP_COUNT];
static bool running;
static _Thread_local bool profiled_thread;  // the thread that called tt_profiler_begin
static bool in_backward;                    // a backward is running: its ops are part of it
static int64_t began_ns, wall_ns, origin_ns;
static tt_alloc_stats alloc_at_begin;
static int64_t cache_hits, cache_misses;
static bool peak_started;
static int64_t peak_bytes;  // the peak of earlier begin/end intervals since the last reset
static bool tracing;
static trace_event *events;
static int64_t nevents, capevents, dropped;

// ---- FLOPs and bytes of one op ----

static const bool elementwise[TT_OP_COUNT] = {
#define TT_UNARY(ID, name, saves, flags, lo, hi) [TT_OP_##ID] = true,
#define TT_UNARY_S(ID, name, saves, flags, lo, hi, s) [TT_OP_##ID] = true,
#define TT_BINARY(ID, name, saves, flags, alo, ahi, blo, bhi) [TT_OP_##ID] = true,
#include "../tensor/ops.def"
};

static int64_t numel_of(const tt_tensor *t) { return t ? tt_numel(t) : 0; }
static int64_t bytes_of(const tt_tensor *t) {
    return t ? tt_numel(t) * (int64_t)tt_dtype_size(t->dtype) : 0;
}
static int64_t last_dim(const tt_tensor *t) { return t->ndim ? t->shape[t->ndim - 1] : 1; }
static bool wants_grad(const tt_tensor *t) { return t && t->requires_grad; }

// The kernel volume of a conv weight (out, in / groups, kh, kw): in / groups * kh * kw.
static int64_t conv_volume(const tt_tensor *w) { return w->shape[1] * w->shape[2] * w->shape[3]; }

// The forward FLOPs of op on inputs `in` giving an output of out_numel elements (profiler.h
// lists the conventions).
static int64_t forward_flops(tt_op op, tt_tensor *const *in, int64_t out_numel) {
    if (elementwise[op]) return out_numel;
    switch (op) {
        case TT_OP_MATMUL: return 2 * out_numel * last_dim(in[0]);  // (.., M, K) @ (.., K, N)
        case TT_OP_AFFINE: return 2 * out_numel * last_dim(in[0]) + (in[2] ? out_numel : 0);
        case TT_OP_ATTENTION:  // q, out (B, NH, T, HS); k (B, NKV, S, HS)
            return 4 * out_numel * in[1]->shape[in[1]->ndim - 2];
        case TT_OP_CONV2D:
            return 2 * out_numel * conv_volume(in[1]) + (in[2] ? out_numel : 0);
        case TT_OP_CONV_TRANSPOSE2D:
            return 2 * numel_of(in[0]) * conv_volume(in[1]) + (in[2] ? out_numel : 0);
        case TT_OP_SUM: case TT_OP_MEAN: case TT_OP_MAX: case TT_OP_CUMSUM: case TT_OP_CUMPROD:
        case TT_OP_MAX_POOL2D: case TT_OP_AVG_POOL2D:
            return numel_of(in[0]);
        case TT_OP_VAR: return 3 * numel_of(in[0]);
        case TT_OP_SOFTMAX: case TT_OP_LOG_SOFTMAX: case TT_OP_CROSS_ENTROPY:
            return 5 * numel_of(in[0]);
        case TT_OP_LAYERNORM: return 8 * numel_of(in[0]);
        case TT_OP_RMSNORM: return 5 * numel_of(in[0]);
        case TT_OP_DROPOUT: case TT_OP_CLAMP: return out_numel;
        case TT_OP_SCATTER_ADD: return numel_of(in[1]);
        default: return 0;  // views, copies, gathers, embeddings, selections
    }
}

// The backward FLOPs of a node of op (the inputs' requires_grad says which gradients it makes).
static int64_t backward_flops(tt_op op, tt_tensor *const *in, int64_t out_numel) {
    switch (op) {
        case TT_OP_MATMUL: {  // dA = G B^T, dB = A^T G: 2 M N K each
            int64_t one = 2 * out_numel * last_dim(in[0]);
            return one * (wants_grad(in[0]) + wants_grad(in[1]));
        }
        case TT_OP_AFFINE: {  // dx = G W, dW = G^T x, db = sum G
            int64_t one = 2 * out_numel * last_dim(in[0]);
            return one * (wants_grad(in[0]) + wants_grad(in[1])) +
                   (wants_grad(in[2]) ? out_numel : 0);
        }
        case TT_OP_CONV2D: case TT_OP_CONV_TRANSPOSE2D: {
            int64_t one = 2 * (op == TT_OP_CONV2D ? out_numel : numel_of(in[0])) *
                          conv_volume(in[1]);
            return one * (wants_grad(in[0]) + wants_grad(in[1])) +
                   (wants_grad(in[2]) ? out_numel : 0);
        }
        default: return 2 * forward_flops(op, in, out_numel);
    }
}

// Bytes a backward moves: the output's gradient, the inputs it reads, the gradients it writes.
static int64_t backward_bytes(tt_op op, int n, tt_tensor *const *in, int64_t out_bytes) {
    unsigned reads = tt_op_saved_inputs(op);
    int64_t b = out_bytes;
    for (int i = 0; i < n; i++) {
        if (((reads >> (i < 31 ? i : 31)) & 1u)) b += bytes_of(in[i]);
        if (wants_grad(in[i])) b += bytes_of(in[i]);
    }
    return b;
}

// ---- events ----

// "(2, 3) (3) -> (2)" into buf (cut to fit).
static void format_shapes(char *buf, size_t cap, int n, tt_tensor *const *in, int ndim,
                          const int64_t *shape) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i <= n && k + 1 < cap; i++) {
        int nd = i < n ? (in[i] ? in[i]->ndim : -1) : ndim;
        const int64_t *sh = i < n ? (in[i] ? in[i]->shape : NULL) : shape;
        const char *s = nd < 0 ? "-" : tt__shape_of(nd, sh);
        int w = snprintf(buf + k, cap - k, "%s%s", i == 0 ? "" : i < n ? " " : " -> ", s);
        if (w < 0) break;
        k += (size_t)w;
    }
    if (k >= cap) buf[cap - 1] = 0;
}

static void add_event(tt_op op, bool backward, int64_t t0, int64_t t1, int64_t flops,
                      int64_t bytes, int n, tt_tensor *const *in, int ndim,
                      const int64_t *shape) {
    if (nevents == TT_PROFILER_MAX_EVENTS) {
        dropped++;
        return;
    }
    if (nevents == capevents) {
        capevents = capevents ? 2 * capevents : 1024;
        events = TT_REALLOC(events, (size_t)capevents * sizeof *events);
    }
    trace_event *e = &events[nevents++];
    e->ts_ns = t0 - origin_ns;
    e->dur_ns = t1 - t0;
    e->flops = flops;
    e->bytes = bytes;
    e->op = (int16_t)op;
    e->backward = backward;
    format_shapes(e->shapes, sizeof e->shapes, n, in, ndim, shape);
}

// ---- the tape's hooks ----

void tt__prof_forward(const tt_tensor *out, tt_op op, int n_inputs, tt_tensor *const *inputs) {
    if (!profiled_thread || in_backward) return;
    int64_t t1 = tt__now_ns();
    int64_t t0 = tt__prof_first_new && tt__prof_first_new <= t1 ? tt__prof_first_new : t1;
    tt__prof_first_new = 0;
    int64_t out_numel = tt_numel(out);
    int64_t flops = forward_flops(op, inputs, out_numel);
    int64_t bytes = 0;
    bool view = n_inputs > 0 && inputs[0] && inputs[0]->storage == out->storage;
    if (!view) {
        bytes = bytes_of(out);
        for (int i = 0; i < n_inputs; i++) bytes += bytes_of(inputs[i]);
    }
    tt_op_profile *p = &ops[op];
    p->calls++;
    p->forward_ns += t1 - t0;
    p->forward_flops += flops;
    p->forward_bytes += bytes;
    if (tracing) add_event(op, false, t0, t1, flops, bytes, n_inputs, inputs, out->ndim,
                           out->shape);
}

void tt__prof_backward(tt_node *n, void (*backward)(tt_node *n)) {
    if (!profiled_thread || in_backward) {
        backward(n);
        return;
    }
    int64_t out_numel = tt__shape_numel(n->ndim, n->shape);
    int64_t flops = backward_flops(n->op, n->inputs, out_numel);
    int64_t bytes = backward_bytes(n->op, n->n_inputs, n->inputs,
                                   out_numel * (int64_t)tt_dtype_size(n->dtype));
    in_backward = true;
    int64_t t0 = tt__now_ns();
    backward(n);
    int64_t t1 = tt__now_ns();
    in_backward = false;
    tt__prof_first_new = 0;
    tt_op_profile *p = &ops[n->op];
    p->backward_calls++;
    p->backward_ns += t1 - t0;
    p->backward_flops += flops;
    p->backward_bytes += bytes;
    if (tracing) add_event(n->op, true, t0, t1, flops, bytes, n->n_inputs, n->inputs, n->ndim,
                           n->shape);
}

// ---- begin, end, reset ----

void tt_profiler_begin(void) {
    if (running) return;
    int64_t now = tt__now_ns();
    if (!origin_ns) origin_ns = now;
    began_ns = now;
    alloc_at_begin = tt_alloc_get_stats();
    tt__prof_peak_reset();
    tt__prof_first_new = 0;
    running = true;
    profiled_thread = true;
    tt__prof_on = true;
}

void tt_profiler_end(void) {
    if (!running) return;
    tt__prof_on = false;
    running = false;
    profiled_thread = false;
    wall_ns += tt__now_ns() - began_ns;
    tt_alloc_stats s = tt_alloc_get_stats();
    cache_hits += s.reused - alloc_at_begin.reused;
    cache_misses += s.fresh - alloc_at_begin.fresh;
    if (!peak_started || tt__prof_peak() > peak_bytes) peak_bytes = tt__prof_peak();
    peak_started = true;
}

void tt_profiler_reset(void) {
    memset(ops, 0, sizeof ops);
    wall_ns = cache_hits = cache_misses = 0;
    peak_started = false;
    peak_bytes = 0;
    tt_free(events);
    events = NULL;
    nevents = capevents = dropped = 0;
    origin_ns = 0;
    if (running) {
        began_ns = origin_ns = tt__now_ns();
        alloc_at_begin = tt_alloc_get_stats();
        tt__prof_peak_reset();
    }
}

bool tt_profiler_enabled(void) { return running; }

void tt_profiler_set_trace(bool on) { tracing = on; }

tt_op_profile tt_profiler_op(tt_op op) {
    TT_CHECK(op >= 0 && op < TT_OP_COUNT, "invalid op %d; pass one of TT_OP_*", (int)op);
    return ops[op];
}

tt_profile_totals tt_profiler_totals(void) {
    tt_profile_totals t = {0};
    for (int i = 0; i < TT_OP_COUNT; i++) {
        t.calls += ops[i].calls;
        t.backward_calls += ops[i].backward_calls;
        t.forward_ns += ops[i].forward_ns;
        t.backward_ns += ops[i].backward_ns;
        t.forward_flops += ops[i].forward_flops;
        t.backward_flops += ops[i].backward_flops;
        t.forward_bytes += ops[i].forward_bytes;
        t.backward_bytes += ops[i].backward_bytes;
    }
    t.wall_ns = wall_ns;
    t.cache_hits = cache_hits;
    t.cache_misses = cache_misses;
    t.peak_bytes = peak_started ? peak_bytes : 0;
    if (running) {
        t.wall_ns += tt__now_ns() - began_ns;
        tt_alloc_stats s = tt_alloc_get_stats();
        t.cache_hits += s.reused - alloc_at_begin.reused;
        t.cache_misses += s.fresh - alloc_at_begin.fresh;
        if (tt__prof_peak() > t.peak_bytes) t.peak_bytes = tt__prof_peak();
    }
    t.live_bytes = tt_live_bytes();
    t.events = nevents;
    t.events_dropped = dropped;
    return t;
}

// ---- set aside (nn/summary.c) ----

typedef struct saved_state {
    tt_op_profile ops[TT_OP_COUNT];
    bool running, tracing, peak_started;
    int64_t wall_ns, cache_hits, cache_misses, peak_bytes, origin_ns;
} saved_state;

static saved_state saved;
static bool pushed;

void tt_profiler_push(void) {
    TT_CHECK(!pushed, "the profiler is already set aside (tt_profiler_push twice)");
    bool was_running = running;
    tt_profiler_end();  // closes a running interval, so its time and peak are kept
    saved = (saved_state){.running = was_running, .tracing = tracing,
                          .peak_started = peak_started, .wall_ns = wall_ns,
                          .cache_hits = cache_hits, .cache_misses = cache_misses,
                          .peak_bytes = peak_bytes, .origin_ns = origin_ns};
    memcpy(saved.ops, ops, sizeof ops);
    pushed = true;
    memset(ops, 0, sizeof ops);
    wall_ns = cache_hits = cache_misses = peak_bytes = 0;
    peak_started = false;
    tracing = false;
    tt_profiler_begin();
}

void tt_profiler_pop(void) {
    TT_CHECK(pushed, "the profiler was not set aside (tt_profiler_pop without tt_profiler_push)");
    tt_profiler_end();
    memcpy(ops, saved.ops, sizeof ops);
    wall_ns = saved.wall_ns;
    cache_hits = saved.cache_hits;
    cache_misses = saved.cache_misses;
    peak_bytes = saved.peak_bytes;
    peak_started = saved.peak_started;
    tracing = saved.tracing;
    origin_ns = saved.origin_ns;  // a trace keeps its time origin
    pushed = false;
    if (saved.running) tt_profiler_begin();
}

// ---- the report ----

static int by_time_desc(const void *a, const void *b) {
    const tt_op_profile *x = &ops[*(const int *)a], *y = &ops[*(const int *)b];
    int64_t tx = x->forward_ns + x->backward_ns, ty = y->forward_ns + y->backward_ns;
    return tx < ty ? 1 : tx > ty ? -1 : *(const int *)a - *(const int *)b;
}

static void report_row(FILE *f, const char *name, int64_t calls, int64_t bcalls, int64_t fns,
                       int64_t bns, int64_t wall, int64_t fflops, int64_t bflops,
                       int64_t bytes) {
    double ms = (double)(fns + bns) / 1e6;
    double gflop = (double)(fflops + bflops) / 1e9;
    fprintf(f, "%-18s %8lld %8lld %9.2f %9.2f %6.1f%% %9.3f %9.3f %8.2f %10.1f\n", name,
            (long long)calls, (long long)bcalls, (double)fns / 1e6, (double)bns / 1e6,
            wall > 0 ? 100.0 * (double)(fns + bns) / (double)wall : 0.0, (double)fflops / 1e9,
            (double)bflops / 1e9, ms > 0 ? gflop / (ms / 1e3) : 0.0, (double)bytes / 1e6);
}

void tt_profiler_report(FILE *f) {
    TT_CHECK(f, "FILE is NULL; pass stderr or an open file");
    tt_profile_totals t = tt_profiler_totals();
    int order[TT_OP_COUNT], n = 0;
    for (int i = 0; i < TT_OP_COUNT; i++)
        if (ops[i].calls || ops[i].backward_calls) order[n++] = i;
    qsort(order, (size_t)n, sizeof *order, by_time_desc);
    fprintf(f, "tinytorch profile: %.3f s wall, %lld forward ops, %lld backward nodes\n",
            (double)t.wall_ns / 1e9, (long long)t.calls, (long long)t.backward_calls);
    fprintf(f, "%-18s %8s %8s %9s %9s %7s %9s %9s %8s %10s\n", "op", "calls", "bwd", "fwd ms",
            "bwd ms", "share", "fwd GFLOP", "bwd GFLOP", "GFLOP/s", "MB moved");
    for (int k = 0; k < n; k++) {
        const tt_op_profile *p = &ops[order[k]];
        report_row(f, tt_op_name((tt_op)order[k]), p->calls, p->backward_calls, p->forward_ns,
                   p->backward_ns, t.wall_ns, p->forward_flops, p->backward_flops,
                   p->forward_bytes + p->backward_bytes);
    }
    report_row(f, "ops total", t.calls, t.backward_calls, t.forward_ns, t.backward_ns, t.wall_ns,
               t.forward_flops, t.backward_flops, t.forward_bytes + t.backward_bytes);
    int64_t outside = t.wall_ns - t.forward_ns - t.backward_ns;
    fprintf(f, "%-18s %8s %8s %19.2f %6.1f%%\n", "outside ops", "", "",
            (double)(outside > 0 ? outside : 0) / 1e6,
            t.wall_ns > 0 && outside > 0 ? 100.0 * (double)outside / (double)t.wall_ns : 0.0);
    int64_t asks = t.cache_hits + t.cache_misses;
    fprintf(f, "memory: %.1f MB live, %.1f MB peak; buffer cache: %lld hits, %lld misses "
            "(%.1f%% hits)%s\n", (double)t.live_bytes / 1e6, (double)t.peak_bytes / 1e6,
            (long long)t.cache_hits, (long long)t.cache_misses,
            asks ? 100.0 * (double)t.cache_hits / (double)asks : 0.0,
            tt_alloc_get_stats().enabled ? "" : " (cache off)");
    if (t.events_dropped)
        fprintf(f, "trace: %lld events kept, %lld dropped (the limit is %d)\n",
                (long long)t.events, (long long)t.events_dropped, TT_PROFILER_MAX_EVENTS);
}

// ---- the trace file ----

typedef struct out_buf {
    int fd;
    char data[1 << 16];
    size_t n;
    bool ok;
} out_buf;

static void out_flush(out_buf *b) {
    if (b->ok && b->n) b->ok = tt__write_all(b->fd, b->data, b->n);
    b->n = 0;
}

static void out_event(out_buf *b, const trace_event *e, bool first) {
    if (sizeof b->data - b->n < 512) out_flush(b);
    int w = snprintf(b->data + b->n, sizeof b->data - b->n,
                     "%s\n{\"name\":\"%s%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%lld.%03lld,"
                     "\"dur\":%lld.%03lld,\"pid\":1,\"tid\":1,\"args\":{\"shapes\":\"%s\","
                     "\"flops\":%lld,\"bytes\":%lld}}",
                     first ? "" : ",", tt_op_name((tt_op)e->op), e->backward ? " backward" : "",
                     e->backward ? "backward" : "forward", (long long)(e->ts_ns / 1000),
                     (long long)(e->ts_ns % 1000), (long long)(e->dur_ns / 1000),
                     (long long)(e->dur_ns % 1000), e->shapes, (long long)e->flops,
                     (long long)e->bytes);
    if (w > 0) b->n += (size_t)w;
}

static bool fill_trace(int fd, void *ctx) {
    (void)ctx;
    out_buf *b = TT_MALLOC(sizeof *b);
    b->fd = fd;
    b->n = 0;
    b->ok = true;
    b->n = (size_t)snprintf(b->data, sizeof b->data, "{\"displayTimeUnit\":\"ms\","
                            "\"otherData\":{\"producer\":\"tinytorch\",\"dropped\":%lld},"
                            "\"traceEvents\":[", (long long)dropped);
    for (int64_t i = 0; i < nevents; i++) out_event(b, &events[i], i == 0);
    if (sizeof b->data - b->n < 8) out_flush(b);
    memcpy(b->data + b->n, "\n]}\n", 4);
    b->n += 4;
    out_flush(b);
    bool ok = b->ok;
    tt_free(b);
    return ok;
}

tt_status tt_profiler_write_trace(const char *path) {
    TT_CHECK(path, "path is NULL; pass a file name such as trace.json");
    return tt__write_atomic(path, "trace", fill_trace, NULL);
}

// ---- TT_PROFILE=1 and TT_TRACE=FILE.json ----

static const char *env_trace;

static void report_at_exit(void) {
    tt_profiler_end();
    tt_profiler_report(stderr);
    if (env_trace && tt_profiler_write_trace(env_trace) != TT_OK)
        fprintf(stderr, "tinytorch: TT_TRACE: %s\n", tt_last_error());
}

#if defined(__GNUC__)
__attribute__((constructor))
#endif
static void profile_from_env(void) {
    const char *p = getenv("TT_PROFILE"), *tr = getenv("TT_TRACE");
    bool on = p && p[0] && strcmp(p, "0") != 0;
    if (tr && tr[0]) {
        env_trace = tr;
        tt_profiler_set_trace(true);
        on = true;
    }
    if (!on) return;
    atexit(report_at_exit);
    tt_profiler_begin();
}
