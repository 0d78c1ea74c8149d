// tinytorch.c dist over MPI (make MPI=1): init, rank, broadcast of the parameters, the mean of
// the gradients in packed buckets (MPI_Allreduce, or MPI_Iallreduce started during the backward
// as gradients become final), sums and gathers for the trainer's own state.
// Not here: process groups, model parallelism.
#include "dist.h"

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../autograd/autograd.h"
#include "../tensor/tensor_ext.h"

static int g_rank = 0, g_size = 1;
static bool g_init = false;  // this module called MPI_Init
static char g_host[MPI_MAX_PROCESSOR_NAME + 1] = "localhost";
static double g_allreduce_s = 0;
static size_t g_bucket = TT_DIST_BUCKET;  // elements per bucket
static float *g_buf = NULL;  // the bucket: g_bucket elements, allocated on first use
static double *g_buf64 = NULL;

bool tt_dist_available(void) { return true; }
int tt_dist_rank(void) { return g_rank; }
int tt_dist_world_size(void) { return g_size; }
const char *tt_dist_host(void) { return g_host; }
double tt_dist_allreduce_seconds(void) { return g_allreduce_s; }

// TT_ERR_IO naming the MPI call, this rank and MPI's message for rc.
static tt_status mpi_error(int rc, const char *what) {
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = 0;
    msg[len] = 0;
    return tt_set_error(TT_ERR_IO, "%s failed on rank %d of %d (%s): %s; another rank died or "
                        "the network between them failed", what, g_rank, g_size, g_host,
                        len ? msg : "no message");
}

tt_status tt_dist_init(int *argc, char ***argv) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init(argc, argv);
        if (rc != MPI_SUCCESS) return tt_set_error(TT_ERR_IO, "MPI_Init failed (code %d); "
                                                   "run under mpirun or check Open MPI", rc);
        g_init = true;
    }
    // Errors come back as codes (mpi_error), so the caller can say what failed and where.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int len = 0;
    if (MPI_Get_processor_name(g_host, &len) != MPI_SUCCESS) len = 0;
    g_host[len] = 0;
    return TT_OK;
}

static void free_overlap(void);

static void free_buckets(void) {
    free(g_buf);
    free(g_buf64);
    g_buf = NULL;
    g_buf64 = NULL;
    free_overlap();
}

static bool overlap_running(void);

void tt_dist_set_bucket_size(size_t elements) {
    TT_CHECK(elements >= 1 && elements <= INT32_MAX, "tt_dist_set_bucket_size: %zu elements; "
             "pass 1 .. %d (MPI counts are ints)", elements, INT32_MAX);
    TT_CHECK(!overlap_running(), "called between "
             "tt_dist_overlap_begin and tt_dist_overlap_end; set it before begin");
    free_buckets();
    g_bucket = elements;
}

void tt_dist_finalize(void) {
    free_buckets();
    int fin = 0;
    MPI_Finalized(&fin);
    if (g_init && !fin) MPI_Finalize();
    g_init = false;
}

void tt_dist_abort(int code) {
    if (g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

// MPI's type for a parameter's dtype; aborts on another dtype.
static MPI_Datatype mpi_type(const tt_tensor *t, const char *fn, const char *name) {
    TT_CHECK(tt_is_contiguous(t) && (t->dtype == TT_F32 || t->dtype == TT_F64),
             "%s: parameter '%s' must be a contiguous f32 or f64 tensor (dtype %d)", fn, name,
             (int)t->dtype);
    return t->dtype == TT_F32 ? MPI_FLOAT : MPI_DOUBLE;
}

tt_status tt_dist_broadcast_params(const tt_params *p) {
    for (int i = 0; i < p->n; i++) {
        tt_tensor *t = p->items[i].tensor;
        MPI_Datatype ty = mpi_type(t, "tt_dist_broadcast_params", p->items[i].name);
        // Large tensors go in pieces: MPI counts are ints.
        char *d = tt_data(t);
        size_t n = (size_t)tt_numel(t), es = tt_dtype_size(t->dtype);
        for (size_t off = 0; off < n; off += g_bucket) {
            size_t k = n - off < g_bucket ? n - off : g_bucket;
            int rc = MPI_Bcast(d + off * es, (int)k, ty, 0, MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Bcast of the parameters");
        }
        if (g_rank != 0) tt_bump_version(t, "tt_dist_broadcast_params");
    }
    return TT_OK;
}

// One bucket: the gradients of params [lo, hi) of one dtype, elements [0, n) of the buffer,
// summed in place over the ranks, then divided by the world size and unpacked.
static tt_status reduce_bucket(const tt_params *p, int lo, int hi, size_t n, tt_dtype dt) {
    void *buf = dt == TT_F32 ? (void *)g_buf : (void *)g_buf64;
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, dt == TT_F32 ? MPI_FLOAT : MPI_DOUBLE,
                           MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce of the gradients");
    size_t off = 0;
    for (int i = lo; i < hi; i++) {
        tt_tensor *g = p->items[i].tensor->grad;
        if (g->dtype != dt) continue;
        size_t m = (size_t)tt_numel(g);
        if (dt == TT_F32) {
            float *d = tt_data(g), ws = (float)g_size;
            for (size_t j = 0; j < m; j++) d[j] = g_buf[off + j] / ws;
        } else {
            double *d = tt_data(g), ws = (double)g_size;
            for (size_t j = 0; j < m; j++) d[j] = g_buf64[off + j] / ws;
        }
        off += m;
    }
    return TT_OK;
}

// Packs the gradients of one dtype into buckets and reduces each.
static tt_status reduce_dtype(const tt_params *p, tt_dtype dt) {
    size_t n = 0;
    int lo = 0;
    for (int i = 0; i < p->n; i++) {
        tt_tensor *t = p->items[i].tensor, *g = t->grad;
        if (t->dtype != dt) continue;
        size_t m = (size_t)tt_numel(g);
        if (n > 0 && n + m > g_bucket) {  // the bucket is full: reduce it first
            tt_status st = reduce_bucket(p, lo, i, n, dt);
            if (st != TT_OK) return st;
            n = 0;
            lo = i;
        }
        if (m > g_bucket) {  // a tensor larger than a bucket goes alone, in place
            void *d = tt_data(g);
            for (size_t off = 0; off < m; off += g_bucket) {
                size_t k = m - off < g_bucket ? m - off : g_bucket;
                int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)d + off * tt_dtype_size(dt),
                                       (int)k, dt == TT_F32 ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM,
                                       MPI_COMM_WORLD);
                if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce of the gradients");
            }
            if (dt == TT_F32) {
                float *f = d, ws = (float)g_size;
                for (size_t j = 0; j < m; j++) f[j] = f[j] / ws;
            } else {
                double *f = d, ws = (double)g_size;
                for (size_t j = 0; j < m; j++) f[j] = f[j] / ws;
            }
            lo = i + 1;
            continue;
        }
        if (dt == TT_F32) memcpy(g_buf + n, tt_data(g), m * sizeof(float));
        else memcpy(g_buf64 + n, tt_data(g), m * sizeof(double));
        n += m;
    }
    return n > 0 ? reduce_bucket(p, lo, p->n, n, dt) : TT_OK;
}

tt_status tt_dist_allreduce_grads(const tt_params *p) {
    if (g_size == 1) return TT_OK;
    double t0 = MPI_Wtime();
    bool f32 = false, f64 = false;
    for (int i = 0; i < p->n; i++) {
        tt_tensor *t = p->items[i].tensor;
        mpi_type(t, "tt_dist_allreduce_grads", p->items[i].name);
        if (!t->grad)  // no gradient reached it on this rank: unscoped zeros, as backward's own
            t->grad = tt__new_zeros(t->dtype, t->ndim, t->shape);
        TT_CHECK(t->grad->dtype == t->dtype && tt_is_contiguous(t->grad),
                 "tt_dist_allreduce_grads: the .grad of '%s' must be a contiguous tensor of "
                 "its parameter's dtype", p->items[i].name);
        f32 |= t->dtype == TT_F32;
        f64 |= t->dtype == TT_F64;
    }
    if (f32 && !g_buf) g_buf = malloc(g_bucket * sizeof *g_buf);
    if (f64 && !g_buf64) g_buf64 = malloc(g_bucket * sizeof *g_buf64);
    if ((f32 && !g_buf) || (f64 && !g_buf64))
        return tt_set_error(TT_ERR_NOMEM, "tt_dist_allreduce_grads: no memory for its bucket "
                            "(%zu elements)", g_bucket);
    tt_status st = f32 ? reduce_dtype(p, TT_F32) : TT_OK;
    if (st == TT_OK && f64) st = reduce_dtype(p, TT_F64);
    for (int i = 0; i < p->n && st == TT_OK; i++)
        tt_bump_version(p->items[i].tensor->grad, "tt_dist_allreduce_grads");
    g_allreduce_s += MPI_Wtime() - t0;
    return st;
}

tt_status tt_dist_allreduce_f64(double *x, size_t n) {
    if (g_size == 1 || n == 0) return TT_OK;
    TT_CHECK(n <= INT32_MAX, "tt_dist_allreduce_f64: %zu values; at most %d per call", n,
             INT32_MAX);
    int rc = MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? TT_OK : mpi_error(rc, "MPI_Allreduce");
}

tt_status tt_dist_allgather(void *recv, const void *send, size_t nbytes) {
    TT_CHECK(nbytes <= INT32_MAX, "tt_dist_allgather: %zu bytes; at most %d per rank", nbytes,
             INT32_MAX);
    if (g_size == 1) {
        memmove(recv, send, nbytes);
        return TT_OK;
    }
    int rc = MPI_Allgather(send, (int)nbytes, MPI_BYTE, recv, (int)nbytes, MPI_BYTE,
                           MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? TT_OK : mpi_error(rc, "MPI_Allgather");
}

// ---- the all-reduce overlapped with the backward ----
// The buckets of reduce_dtype, each with its own buffer in one arena, laid out at
// tt_dist_overlap_begin; backward's announcements pack them, and they start last first.

typedef struct ov_bucket {
    tt_dtype dtype;
    int lo, hi;          // its parameters are among items [lo, hi) (see ov.bucket_of)
    size_t n;            // elements
    size_t arena_off;    // bytes into ov.arena; unused for an in-place bucket
    int big;             // >= 0: the one gradient larger than a bucket, reduced in place
    int waiting;         // parameters not packed yet
    int nreq;            // MPI requests: 1, or the pieces of an in-place gradient
    MPI_Request *req;    // into ov.reqs
    bool started, done;
} ov_bucket;

typedef struct ov_param {
    const tt_tensor *t;
    int index;
} ov_param;

static struct {
    const tt_params *p;  // between begin and end (several ranks), else NULL
    tt_dist_grad_prepare prepare;
    void *ctx;
    ov_bucket *b;
    int nb, capb;
    int *bucket_of;        // per parameter: its bucket
    size_t *offset_of;     // per parameter: elements into its bucket
    bool *packed;          // per parameter: announced (or packed by end)
    ov_param *by_tensor;   // sorted by address, for the announcements
    int capp;
    char *arena;
    size_t arena_bytes;
    MPI_Request *reqs;
    size_t capreq;
    int next;              // the next bucket to start; they start from the last down to 0
    tt_status st;          // the first failure
} ov;

static bool overlap_running(void) { return ov.p != NULL; }

static void free_overlap(void) {
    if (ov.p && g_size > 1) tt_backward_set_grad_ready(NULL, NULL);
    tt_free(ov.b);
    tt_free(ov.bucket_of);
    tt_free(ov.offset_of);
    tt_free(ov.packed);
    tt_free(ov.by_tensor);
    tt_free(ov.reqs);
    free(ov.arena);
    memset(&ov, 0, sizeof ov);
}

static int by_tensor(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const ov_param *)a)->t, y = (uintptr_t)((const ov_param *)b)->t;
    return x < y ? -1 : x > y;
}

static int ov_new_bucket(tt_dtype dt, int lo) {
    if (ov.nb == ov.capb) {
        ov.capb = ov.capb ? 2 * ov.capb : 16;
        ov.b = TT_REALLOC(ov.b, (size_t)ov.capb * sizeof *ov.b);
    }
    ov.b[ov.nb] = (ov_bucket){.dtype = dt, .lo = lo, .hi = lo + 1, .big = -1};
    return ov.nb++;
}

// The buckets of one dtype, as reduce_dtype packs them (their buffers are placed by begin).
static void ov_layout_dtype(const tt_params *p, tt_dtype dt) {
    size_t n = 0;
    int cur = -1;
    for (int i = 0; i < p->n; i++) {
        tt_tensor *t = p->items[i].tensor;
        if (t->dtype != dt) continue;
        size_t m = (size_t)tt_numel(t);
        if (cur >= 0 && n > 0 && n + m > g_bucket) cur = -1;  // full: the next one
        if (m > g_bucket) {  // alone, in place, in pieces
            int k = ov_new_bucket(dt, i);
            ov.b[k].big = i;
            ov.b[k].n = m;
            ov.b[k].waiting = 1;
            ov.b[k].nreq = (int)((m + g_bucket - 1) / g_bucket);
            ov.bucket_of[i] = k;
            ov.offset_of[i] = 0;
            cur = -1;
            continue;
        }
        if (cur < 0) {
            cur = ov_new_bucket(dt, i);
            ov.b[cur].nreq = 1;
            n = 0;
        }
        ov_bucket *b = &ov.b[cur];
        ov.bucket_of[i] = cur;
        ov.offset_of[i] = n;
        b->waiting++;
        b->hi = i + 1;
        n += m;
        b->n = n;
    }
}

static void *ov_buf(const ov_bucket *b) { return ov.arena + b->arena_off; }

// Starts bucket k (MPI_Iallreduce, in place).
static void ov_start(int k) {
    ov_bucket *b = &ov.b[k];
    b->started = true;
    if (b->n == 0) {
        b->done = true;
        return;
    }
    MPI_Datatype ty = b->dtype == TT_F32 ? MPI_FLOAT : MPI_DOUBLE;
    if (b->big < 0) {
        int rc = MPI_Iallreduce(MPI_IN_PLACE, ov_buf(b), (int)b->n, ty, MPI_SUM, MPI_COMM_WORLD,
                                &b->req[0]);
        if (rc != MPI_SUCCESS && ov.st == TT_OK)
            ov.st = mpi_error(rc, "MPI_Iallreduce of the gradients");
        return;
    }
    char *d = tt_data(ov.p->items[b->big].tensor->grad);
    size_t es = tt_dtype_size(b->dtype);
    for (int r = 0; r < b->nreq; r++) {
        size_t off = (size_t)r * g_bucket, k2 = b->n - off < g_bucket ? b->n - off : g_bucket;
        int rc = MPI_Iallreduce(MPI_IN_PLACE, d + off * es, (int)k2, ty, MPI_SUM,
                                MPI_COMM_WORLD, &b->req[r]);
        if (rc != MPI_SUCCESS && ov.st == TT_OK)
            ov.st = mpi_error(rc, "MPI_Iallreduce of the gradients");
    }
}

// Starts every bucket whose parameters are all packed, from the last down, in order.
static void ov_start_ready(void) {
    while (ov.next >= 0 && ov.b[ov.next].waiting == 0 && ov.st == TT_OK) ov_start(ov.next--);
}

// One MPI_Testall per started bucket still running: Open MPI moves them on inside MPI calls.
static void ov_progress(void) {
    for (int k = ov.nb - 1; k > ov.next && ov.st == TT_OK; k--) {
        ov_bucket *b = &ov.b[k];
        if (b->done) continue;
        int flag = 0;
        int rc = MPI_Testall(b->nreq, b->req, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) ov.st = mpi_error(rc, "MPI_Testall of the gradients");
        b->done = flag != 0;
    }
}

// Parameter i's gradient is final: prepare, pack into its bucket.
static void ov_pack(int i) {
    const char *name = ov.p->items[i].name;
    TT_CHECK(!ov.packed[i], "tt_dist_overlap_begin: the gradient of '%s' became final twice; "
             "run one backward between tt_dist_overlap_begin and tt_dist_overlap_end", name);
    tt_tensor *t = ov.p->items[i].tensor;
    if (!t->grad)  // no gradient reached it on this rank: unscoped zeros, as backward's own
        t->grad = tt__new_zeros(t->dtype, t->ndim, t->shape);
    TT_CHECK(t->grad->dtype == t->dtype && tt_is_contiguous(t->grad),
             "tt_dist_overlap_end: the .grad of '%s' must be a contiguous tensor of its "
             "parameter's dtype", name);
    if (ov.prepare) ov.prepare(i, t->grad, ov.ctx);
    ov_bucket *b = &ov.b[ov.bucket_of[i]];
    if (b->big < 0) {
        size_t es = tt_dtype_size(t->dtype);
        memcpy((char *)ov_buf(b) + ov.offset_of[i] * es, tt_data(t->grad),
               (size_t)tt_numel(t) * es);
    }
    ov.packed[i] = true;
    b->waiting--;
}

// Backward's announcement (tt_backward_set_grad_ready).
static void ov_ready(tt_tensor *leaf, void *ctx) {
    (void)ctx;
    double t0 = MPI_Wtime();
    ov_param key = {leaf, 0};
    const ov_param *f = bsearch(&key, ov.by_tensor, (size_t)ov.p->n, sizeof key, by_tensor);
    if (f && ov.st == TT_OK) {
        ov_pack(f->index);
        ov_start_ready();
    }
    ov_progress();
    g_allreduce_s += MPI_Wtime() - t0;
}

tt_status tt_dist_overlap_begin(const tt_params *p, tt_dist_grad_prepare prepare, void *ctx) {
    TT_CHECK(p, "params is NULL");
    TT_CHECK(!ov.p, "tt_dist_overlap_begin called twice; call tt_dist_overlap_end after the "
             "backward");
    ov.prepare = prepare;
    ov.ctx = ctx;
    if (g_size == 1) {  // nothing to start: end prepares every gradient
        ov.p = p;
        return TT_OK;
    }
    for (int i = 0; i < p->n; i++)
        mpi_type(p->items[i].tensor, "tt_dist_overlap_begin", p->items[i].name);
    if (p->n > ov.capp) {
        ov.capp = p->n;
        ov.bucket_of = TT_REALLOC(ov.bucket_of, (size_t)p->n * sizeof *ov.bucket_of);
        ov.offset_of = TT_REALLOC(ov.offset_of, (size_t)p->n * sizeof *ov.offset_of);
        ov.packed = TT_REALLOC(ov.packed, (size_t)p->n * sizeof *ov.packed);
        ov.by_tensor = TT_REALLOC(ov.by_tensor, (size_t)p->n * sizeof *ov.by_tensor);
    }
    ov.p = p;
    ov.st = TT_OK;
    ov.nb = 0;
    size_t bytes = 0;
    for (int d = 0; d < 2; d++) {  // f32's buckets, then f64's, as tt_dist_allreduce_grads
        tt_dtype dt = d == 0 ? TT_F32 : TT_F64;
        int first = ov.nb;
        ov_layout_dtype(p, dt);
        for (int k = first; k < ov.nb; k++) {  // the packed buffers, one after another
            if (ov.b[k].big >= 0) continue;
            bytes = (bytes + 63) & ~(size_t)63;  // f64 after f32: aligned, on a cache line
            ov.b[k].arena_off = bytes;
            bytes += ov.b[k].n * tt_dtype_size(dt);
        }
    }
    if (bytes > ov.arena_bytes) {
        free(ov.arena);
        ov.arena_bytes = 0;
        if (!(ov.arena = malloc(bytes))) {
            ov.p = NULL;
            return tt_set_error(TT_ERR_NOMEM, "tt_dist_overlap_begin: no memory for its "
                                "buckets (%zu bytes)", bytes);
        }
        ov.arena_bytes = bytes;
    }
    size_t nreq = 0;
    for (int k = 0; k < ov.nb; k++) nreq += (size_t)ov.b[k].nreq;
    if (nreq > ov.capreq) {
        ov.capreq = nreq;
        ov.reqs = TT_REALLOC(ov.reqs, nreq * sizeof *ov.reqs);
    }
    nreq = 0;
    for (int k = 0; k < ov.nb; k++) {
        ov.b[k].req = ov.reqs + nreq;
        for (int r = 0; r < ov.b[k].nreq; r++) ov.b[k].req[r] = MPI_REQUEST_NULL;
        nreq += (size_t)ov.b[k].nreq;
    }
    for (int i = 0; i < p->n; i++) {
        ov.packed[i] = false;
        ov.by_tensor[i] = (ov_param){p->items[i].tensor, i};
    }
    qsort(ov.by_tensor, (size_t)p->n, sizeof *ov.by_tensor, by_tensor);
    ov.next = ov.nb - 1;
    tt_backward_set_grad_ready(ov_ready, NULL);
    return TT_OK;
}

// Bucket k's sums (done) divided by the world size into the gradients, as reduce_bucket.
static void ov_unpack(int k) {
    const ov_bucket *b = &ov.b[k];
    for (int i = b->lo; i < b->hi; i++) {
        tt_tensor *t = ov.p->items[i].tensor;
        if (t->dtype != b->dtype || ov.bucket_of[i] != k) continue;
        size_t m = (size_t)tt_numel(t);
        if (b->dtype == TT_F32) {
            const float *s = b->big >= 0 ? tt_data(t->grad)
                                         : (float *)ov_buf(b) + ov.offset_of[i];
            float *d = tt_data(t->grad), ws = (float)g_size;
            for (size_t j = 0; j < m; j++) d[j] = s[j] / ws;
        } else {
            const double *s = b->big >= 0 ? tt_data(t->grad)
                                          : (double *)ov_buf(b) + ov.offset_of[i];
            double *d = tt_data(t->grad), ws = (double)g_size;
            for (size_t j = 0; j < m; j++) d[j] = s[j] / ws;
        }
        tt_bump_version(t->grad, "tt_dist_overlap_end");
    }
}

tt_status tt_dist_overlap_end(const tt_params *p) {
    TT_CHECK(ov.p == p, "%s", ov.p ? "these are not the parameters "
             "tt_dist_overlap_begin was given" : "call tt_dist_overlap_begin before the backward");
    if (g_size == 1) {
        for (int i = 0; i < p->n && ov.prepare; i++)
            if (p->items[i].tensor->grad) ov.prepare(i, p->items[i].tensor->grad, ov.ctx);
        ov.p = NULL;
        ov.prepare = NULL;
        ov.ctx = NULL;
        return TT_OK;
    }
    tt_backward_set_grad_ready(NULL, NULL);
    double t0 = MPI_Wtime();
    for (int i = 0; i < p->n && ov.st == TT_OK; i++)
        if (!ov.packed[i]) ov_pack(i);
    ov_start_ready();
    for (int k = ov.nb - 1; k > ov.next; k--) {  // the started ones: all of them, but on error
        ov_bucket *b = &ov.b[k];
        if (b->done) continue;
        int rc = MPI_Waitall(b->nreq, b->req, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS && ov.st == TT_OK)
            ov.st = mpi_error(rc, "MPI_Waitall of the gradients");
        b->done = true;
    }
    tt_status st = ov.st;
    for (int k = 0; k < ov.nb && st == TT_OK; k++) ov_unpack(k);
    ov.p = NULL;
    ov.prepare = NULL;
    ov.ctx = NULL;
    g_allreduce_s += MPI_Wtime() - t0;
    return st;
}
