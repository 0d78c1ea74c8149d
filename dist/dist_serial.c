// tinytorch.c dist without MPI (the default build): one process, rank 0 of a world of 1. The
// collectives have nothing to exchange; `make MPI=1` builds dist/dist_mpi.c instead.
#include "dist.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

static char g_host[256];

bool tt_dist_available(void) { return false; }

tt_status tt_dist_init(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return TT_OK;
}

int tt_dist_rank(void) { return 0; }
int tt_dist_world_size(void) { return 1; }

const char *tt_dist_host(void) {
    if (!g_host[0] && gethostname(g_host, sizeof g_host - 1) != 0) strcpy(g_host, "localhost");
    return g_host;
}

void tt_dist_finalize(void) {}
void tt_dist_abort(int code) { (void)code; }

tt_status tt_dist_broadcast_params(const tt_params *p) {
    (void)p;
    return TT_OK;
}

tt_status tt_dist_allreduce_grads(const tt_params *p) {
    (void)p;
    return TT_OK;
}

tt_status tt_dist_allreduce_f64(double *x, size_t n) {
    (void)x;
    (void)n;
    return TT_OK;
}

tt_status tt_dist_allgather(void *recv, const void *send, size_t nbytes) {
    memmove(recv, send, nbytes);
    return TT_OK;
}

double tt_dist_allreduce_seconds(void) { return 0; }

void tt_dist_set_bucket_size(size_t elements) {
    TT_CHECK(elements >= 1 && elements <= INT32_MAX, "tt_dist_set_bucket_size: %zu elements; "
             "pass 1 .. %d (MPI counts are ints)", elements, INT32_MAX);
}

static const tt_params *g_overlap;  // between tt_dist_overlap_begin and end
static tt_dist_grad_prepare g_prepare;
static void *g_prepare_ctx;

tt_status tt_dist_overlap_begin(const tt_params *p, tt_dist_grad_prepare prepare, void *ctx) {
    TT_CHECK(p, "params is NULL");
    TT_CHECK(!g_overlap, "tt_dist_overlap_begin called twice; call tt_dist_overlap_end after "
             "the backward");
    g_overlap = p;
    g_prepare = prepare;
    g_prepare_ctx = ctx;
    return TT_OK;
}

// One rank: nothing was started; every gradient is prepared here, in parameter order.
tt_status tt_dist_overlap_end(const tt_params *p) {
    TT_CHECK(g_overlap == p, "%s", g_overlap ? "these are not the "
             "parameters tt_dist_overlap_begin was given" : "call tt_dist_overlap_begin before "
             "the backward");
    for (int i = 0; i < p->n && g_prepare; i++)
        if (p->items[i].tensor->grad) g_prepare(i, p->items[i].tensor->grad, g_prepare_ctx);
    g_overlap = NULL;
    g_prepare = NULL;
    g_prepare_ctx = NULL;
    return TT_OK;
}
