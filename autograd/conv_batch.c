// The batched im2col of tt_conv2d and tt_conv_transpose2d (autograd/ops_conv.c): the patches
// of a chunk of images side by side as one GEMM operand, its adjoint, and the layout changes
// between NCHW and a batched GEMM's (CO, images L) result, each over images in parallel (the
// thread pool) when worth it. Declared in autograd_internal.h.
#include "autograd_internal.h"
#include "../tensor/kernels/conv.h"

#include <string.h>

// The most bytes of patches tt_conv_transpose2d materializes at once (one GEMM per chunk of
// images, threaded by the GEMM); larger batches run in chunks.
#define COL_BYTES ((size_t)64 << 20)

// Images per chunk, each with per_image elements of patches (G K L): at least 1, at most N.
int64_t tt__conv_chunk_images(int64_t N, int64_t per_image, size_t es) {
    size_t per = (size_t)per_image * es;
    int64_t nb = per ? (int64_t)(COL_BYTES / per) : N;
    return nb < 1 ? 1 : nb > N ? N : nb;
}

// Whether a pass over the images of a chunk is worth a thread team: more than one thread and
// enough elements.
static int image_threads(int64_t images, int64_t elems) {
    int nt = tt_get_num_threads();
    if (nt > images) nt = (int)images;
    return nt > 1 && elems >= 32768 ? nt : 1;
}

// The arguments of the passes over a chunk's images below, for the thread pool.
typedef struct images_job {
    tt_dtype dt;
    size_t es;
    char *dst;
    const char *src, *bias;
    int64_t nn, G, CO, L;
    const tt_k_conv_geom *g;
} images_job;

// The loop over [0, n) on the pool when nt > 1, else on this thread.
static void images_loop(int64_t n, int nt, tt__range_fn fn, images_job *j) {
    tt__parallel_for(n, nt > 1 || n < 1 ? 1 : n, fn, j);
}

// batch_im2col's (image, group) pairs [t0, t1).
static void im2col_range(void *ctx, int64_t t0, int64_t t1) {
    const images_job *j = ctx;
    const tt_k_conv_geom *g = j->g;
    int64_t L = g->OH * g->OW, K = g->C * g->KH * g->KW, ld = j->nn * L, CHW = g->C * g->H * g->W;
    for (int64_t t = t0; t < t1; t++) {
        int64_t n = t / j->G, gi = t % j->G;
        char *dst = j->dst + (size_t)(gi * K * ld + n * L) * j->es;
        const char *src = j->src + (size_t)((n * j->G + gi) * CHW) * j->es;
        if (j->dt == TT_F32)
            tt_k_im2col_f32((float *)dst, ld, (const float *)src, g);
        else
            tt_k_im2col_f64((double *)dst, ld, (const double *)src, g);
    }
}

// col (G, K, nn L) = the patches of x (nn, G CG, H, W): image n's at columns [n L, (n + 1) L)
// of each group's (K, nn L) block. With par, images (and groups) in parallel when worth a team,
// each writing its own columns.
void tt__conv_batch_im2col(tt_dtype dt, char *col, const char *x, int64_t nn, int64_t G,
                         const tt_k_conv_geom *g, bool par) {
    int64_t L = g->OH * g->OW, K = g->C * g->KH * g->KW;
    int nt = !par ? 1 : image_threads(nn * G, nn * G * K * L);
    images_job j = {.dt = dt, .es = tt_dtype_size(dt), .dst = col, .src = x, .nn = nn, .G = G,
                    .g = g};
    images_loop(nn * G, nt, im2col_range, &j);
}

// batch_col2im's images [n0, n1).
static void col2im_range(void *ctx, int64_t n0, int64_t n1) {
    const images_job *j = ctx;
    const tt_k_conv_geom *g = j->g;
    int64_t L = g->OH * g->OW, K = g->C * g->KH * g->KW, ld = j->nn * L, CHW = g->C * g->H * g->W;
    size_t es = j->es;
    for (int64_t n = n0; n < n1; n++) {
        memset(j->dst + (size_t)(n * j->G * CHW) * es, 0, (size_t)(j->G * CHW) * es);
        for (int64_t gi = 0; gi < j->G; gi++) {
            char *dst = j->dst + (size_t)((n * j->G + gi) * CHW) * es;
            const char *src = j->src + (size_t)(gi * K * ld + n * L) * es;
            if (j->dt == TT_F32)
                tt_k_col2im_f32((float *)dst, (const float *)src, ld, g);
            else
                tt_k_col2im_f64((double *)dst, (const double *)src, ld, g);
        }
    }
}

// dx (nn, G CG, H, W) = the adjoint of batch_im2col applied to dcol (G, K, nn L): every image
// zeroed and summed into by one thread, in a fixed order (with par, images in parallel).
void tt__conv_batch_col2im(tt_dtype dt, char *dx, const char *dcol, int64_t nn, int64_t G,
                         const tt_k_conv_geom *g, bool par) {
    int64_t L = g->OH * g->OW, K = g->C * g->KH * g->KW;
    int nt = !par ? 1 : image_threads(nn, nn * G * K * L);
    images_job j = {.dt = dt, .es = tt_dtype_size(dt), .dst = dx, .src = dcol, .nn = nn, .G = G,
                    .g = g};
    images_loop(nn, nt, col2im_range, &j);
}

// batch_to_nchw's images [n0, n1).
static void to_nchw_range(void *ctx, int64_t n0, int64_t n1) {
    const images_job *j = ctx;
    int64_t CO = j->CO, L = j->L, nn = j->nn;
    size_t es = j->es;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t o = 0; o < CO; o++) {
            char *dst = j->dst + (size_t)((n * CO + o) * L) * es;
            const char *src = j->src + (size_t)(o * nn * L + n * L) * es;
            if (!j->bias) {
                memcpy(dst, src, (size_t)L * es);
            } else if (j->dt == TT_F32) {
                float *d = (float *)dst, bv = ((const float *)j->bias)[o];
                const float *s = (const float *)src;
                for (int64_t l = 0; l < L; l++) d[l] = s[l] + bv;
            } else {
                double *d = (double *)dst, bv = ((const double *)j->bias)[o];
                const double *s = (const double *)src;
                for (int64_t l = 0; l < L; l++) d[l] = s[l] + bv;
            }
        }
}

// out (nn, CO, L) = t (CO, nn L) + bias (CO,) (bias may be NULL): the NCHW layout of a batched
// GEMM's result. With par, images in parallel.
void tt__conv_batch_to_nchw(tt_dtype dt, char *out, const char *t, const char *bias, int64_t nn,
                          int64_t CO, int64_t L, bool par) {
    int nt = !par ? 1 : image_threads(nn, nn * CO * L);
    images_job j = {.dt = dt, .es = tt_dtype_size(dt), .dst = out, .src = t, .bias = bias,
                    .nn = nn, .CO = CO, .L = L};
    images_loop(nn, nt, to_nchw_range, &j);
}

// nchw_to_batch's images [n0, n1).
static void to_batch_range(void *ctx, int64_t n0, int64_t n1) {
    const images_job *j = ctx;
    int64_t CO = j->CO, L = j->L, nn = j->nn;
    size_t es = j->es;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t o = 0; o < CO; o++)
            memcpy(j->dst + (size_t)(o * nn * L + n * L) * es,
                   j->src + (size_t)((n * CO + o) * L) * es, (size_t)L * es);
}

// t (CO, nn L) = g (nn, CO, L): a gradient in NCHW as the batched GEMMs' operand. With par,
// images in parallel.
void tt__conv_nchw_to_batch(tt_dtype dt, char *t, const char *g, int64_t nn, int64_t CO,
                          int64_t L, bool par) {
    int nt = !par ? 1 : image_threads(nn, nn * CO * L);
    images_job j = {.dt = dt, .es = tt_dtype_size(dt), .dst = t, .src = g, .nn = nn, .CO = CO,
                    .L = L};
    images_loop(nn, nt, to_batch_range, &j);
}
