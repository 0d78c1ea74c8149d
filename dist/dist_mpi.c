// tinytorch.c dist over MPI (make MPI=1): init, rank, broadcast of the parameters, the mean of
// the gradients in packed buckets (MPI_Allreduce), sums and gathers for the trainer's own state.
// Not here: overlapping the reduction with the backward, process groups, model parallelism.
#include "dist.h"

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../autograd/autograd.h"
#include "../tensor/tensor_internal.h"

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

static void free_buckets(void) {
    free(g_buf);
    free(g_buf64);
    g_buf = NULL;
    g_buf64 = NULL;
}

void tt_dist_set_bucket_size(size_t elements) {
    TT_CHECK(elements >= 1 && elements <= INT32_MAX, "tt_dist_set_bucket_size: %zu elements; "
             "pass 1 .. %d (MPI counts are ints)", elements, INT32_MAX);
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
