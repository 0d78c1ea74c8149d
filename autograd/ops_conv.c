// tt_conv2d (PyTorch's F.conv2d: NCHW, stride, zero padding, dilation, groups) and
// tt_conv_transpose2d as ops with their own backward, by im2col / col2im + the packed GEMM;
// tt_conv1d as a view of conv2d (H = 1); dropout2d, nearest upsampling, unflatten composed.
// The batched im2col passes are conv_batch.c's; the differentiable backwards (create_graph)
// are in grad2_conv.c.
#include "autograd_internal.h"
#include "ops_conv.h"
#include "../tensor/kernels/conv.h"
#include "../tensor/kernels/matmul.h"

#include <stdbool.h>
#include <math.h>
#include <string.h>

// Letters: x (N, C, H, W), w (CO, C / G, KH, KW), b (CO,), out (N, CO, OH, OW); G groups,
// CG = C / G and COG = CO / G channels per group, L = OH * OW, K = CG * KH * KW.

#define CONV_CHECK(...) TT_CHECK_IN("tt_conv2d", __VA_ARGS__)

// ---- helpers ----

// *r = a * b + c; false when that overflows int64. Shape arithmetic is checked before it
// runs: a user's padding, dilation or stride can make any product overflow.
static bool mul_add(int64_t a, int64_t b, int64_t c, int64_t *r) {
    return !__builtin_mul_overflow(a, b, r) && !__builtin_add_overflow(*r, c, r);
}

#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void conv_overflows(const char *func, const tt_tensor *x, const tt_tensor *w,
                           const int64_t *stride, const int64_t *padding,
                           const int64_t *dilation) {
    tt_fatal(__FILE__, __LINE__, func, "stride (%lld, %lld), padding (%lld, %lld) and dilation "
             "(%lld, %lld) with x %s and weight %s overflow int64: no tensor can be that large",
             (long long)stride[0], (long long)stride[1], (long long)padding[0],
             (long long)padding[1], (long long)dilation[0], (long long)dilation[1],
             tt__shape(x), tt__shape(w));
}

// C (M, N), rows of N contiguous, (+)= A B in dtype dt.
static void gemm(tt_dtype dt, int64_t M, int64_t N, int64_t K, const void *A, int64_t a_rs,
                 int64_t a_cs, const void *B, int64_t b_rs, int64_t b_cs, void *C, bool acc) {
    if (dt == TT_F32)
        tt_k_gemm_f32(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, N, 1, acc);
    else
        tt_k_gemm_f64(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, N, 1, acc);
}

// The geometry of one group of one image.
static tt_k_conv_geom geometry(const tt_tensor *x, const tt_tensor *w, const conv_ctx *c) {
    tt_k_conv_geom g = {
        .C = w->shape[1],
        .H = x->shape[2],
        .W = x->shape[3],
        .KH = w->shape[2],
        .KW = w->shape[3],
        .sh = c->stride[0],
        .sw = c->stride[1],
        .ph = c->padding[0],
        .pw = c->padding[1],
        .dh = c->dilation[0],
        .dw = c->dilation[1],
    };
    g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
    g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
    return g;
}

// tt_conv2d splits a batch into groups of GROUP_IMAGES images (the unit of the weight
// gradient's partial sums and of the threads' work) and each group into chunks of nb images
// whose patches (G K, nb L) stay in a core's cache (CHUNK_BYTES): lenet's second layer takes 4
// images (640 KB of f32 patches, one GEMM of N = 400 columns), its first 8. The plan depends
// on the shapes only, never on the thread count.
enum { GROUP_IMAGES = 16 };
#define CHUNK_BYTES ((size_t)1 << 20)

typedef struct chunk_plan {
    int64_t nb;       // images per chunk, 1 .. GROUP_IMAGES
    int64_t ngroups;  // ceil(N / GROUP_IMAGES)
    int nt;           // threads over the groups (1: serial groups, the GEMMs thread themselves)
} chunk_plan;

static chunk_plan plan_chunks(int64_t N, int64_t per_image, size_t es, int64_t flops) {
    chunk_plan p;
    // The largest power of two (a divisor of GROUP_IMAGES: equal chunks) that fits.
    size_t per = (size_t)(per_image > 0 ? per_image : 1) * es;
    p.nb = 1;
    while (p.nb < GROUP_IMAGES && (size_t)(2 * p.nb) * per <= CHUNK_BYTES) p.nb *= 2;
    p.ngroups = (N + GROUP_IMAGES - 1) / GROUP_IMAGES;
    p.nt = tt_get_num_threads();
    // Threads over groups when each gets one and the work is worth a team.
    if (p.nt > p.ngroups || flops < (1 << 20)) p.nt = 1;
    return p;
}

// The scratch slot of the calling thread in a loop over groups of cp.nt threads.
static int thread_num(const chunk_plan *cp) {
    int t = cp->nt > 1 ? tt__thread_index() : 0;
    TT_CHECK(t < cp->nt, "thread %d of a conv2d loop planned for %d", t, cp->nt);
    return t;
}

// The arguments of tt_conv2d's and its backward's loops over image groups, for the pool.
typedef struct conv_job {
    tt_dtype dt;
    size_t es;
    int64_t N, C, HW, CO, G, COG, K, L, PI, WN;
    const tt_k_conv_geom *g;
    const chunk_plan *cp;
    bool inner;          // serial groups: the passes over a chunk's images may thread
    char *xp, *wp, *op;  // x, w, out (forward)
    char *gp, *dxp, *dwp, *pp;  // g, dx, dw, dw's group partials (backward)
    char *buf, *tmp;     // per thread: the patches (G, K, nb L), the (CO, nb L) block
    const char *bp;      // bias or NULL (forward)
    double *dbp;         // (groups, CO) db's partials or NULL (backward)
} conv_job;

// tt_conv2d's image groups [gr0, gr1) (see tt_conv2d).
static void conv_forward_groups(void *ctx, int64_t gr0, int64_t gr1) {
    const conv_job *j = ctx;
    const chunk_plan *cp = j->cp;
    size_t es = j->es;
    int64_t K = j->K, L = j->L, CO = j->CO, COG = j->COG;
    for (int64_t gr = gr0; gr < gr1; gr++) {
        int t = thread_num(cp);
        int64_t end = (gr + 1) * GROUP_IMAGES < j->N ? (gr + 1) * GROUP_IMAGES : j->N;
        char *cc = j->buf + (size_t)(t * cp->nb * j->PI) * es;  // (G, K, ld)
        char *tt = j->tmp + (size_t)(t * cp->nb * CO * L) * es;  // (CO, ld)
        for (int64_t n0 = gr * GROUP_IMAGES; n0 < end; n0 += cp->nb) {
            int64_t nn = end - n0 < cp->nb ? end - n0 : cp->nb, ld = nn * L;
            tt__conv_batch_im2col(j->dt, cc, j->xp + (size_t)(n0 * j->C * j->HW) * es, nn, j->G,
                                  j->g, j->inner);
            for (int64_t gi = 0; gi < j->G; gi++)  // tt[group] (COG, ld) = w[group] (COG, K) @ cc
                gemm(j->dt, COG, ld, K, j->wp + (size_t)(gi * COG * K) * es, K, 1,
                     cc + (size_t)(gi * K * ld) * es, ld, 1, tt + (size_t)(gi * COG * ld) * es,
                     false);
            tt__conv_batch_to_nchw(j->dt, j->op + (size_t)(n0 * CO * L) * es, tt, j->bp, nn, CO,
                                   L, j->inner);
        }
    }
}

// ---- conv2d ----

tt_tensor *tt_conv2d(tt_tensor *x, tt_tensor *weight, tt_tensor *bias, const int64_t stride[2],
                     const int64_t padding[2], const int64_t dilation[2], int64_t groups) {
    CONV_CHECK(x && weight, "%s is NULL", x ? "weight" : "x");
    tt__check_float(x, "tt_conv2d");
    tt__check_same_dtype(x, weight, "tt_conv2d");
    CONV_CHECK(x->ndim == 4,
               "x %s must be 4-D (N, C, H, W); for one image use "
               "tt_unsqueeze(x, 0), for a sequence tt_conv1d",
               tt__shape(x));
    CONV_CHECK(weight->ndim == 4, "weight %s must be 4-D (C_out, C_in / groups, kH, kW)",
               tt__shape(weight));
    conv_ctx c = {{1, 1}, {0, 0}, {1, 1}, groups};
    for (int d = 0; d < 2; d++) {
        if (stride) c.stride[d] = stride[d];
        if (padding) c.padding[d] = padding[d];
        if (dilation) c.dilation[d] = dilation[d];
        CONV_CHECK(c.stride[d] >= 1 && c.dilation[d] >= 1 && c.padding[d] >= 0,
                   "stride (%lld, %lld) and dilation (%lld, %lld) must be >= 1 and padding "
                   "(%lld, %lld) >= 0 (NULL means 1, 1, 0)",
                   (long long)c.stride[0], (long long)c.stride[1], (long long)c.dilation[0],
                   (long long)c.dilation[1], (long long)c.padding[0], (long long)c.padding[1]);
    }
    int64_t N = x->shape[0], C = x->shape[1], CO = weight->shape[0], G = groups;
    CONV_CHECK(G >= 1 && C % G == 0 && CO % G == 0,
               "groups %lld must be >= 1 and divide both the input channels (%lld) and the "
               "output channels (%lld)",
               (long long)G, (long long)C, (long long)CO);
    CONV_CHECK(weight->shape[1] * G == C,
               "x %s has %lld channels but weight %s expects C_in = %lld * groups %lld = %lld; "
               "weight must be (C_out, C_in / groups, kH, kW)",
               tt__shape(x), (long long)C, tt__shape(weight), (long long)weight->shape[1],
               (long long)G, (long long)(weight->shape[1] * G));
    if (bias) {
        tt__check_same_dtype(x, bias, "tt_conv2d");
        CONV_CHECK(bias->ndim == 1 && bias->shape[0] == CO,
                   "bias %s must be (%lld,), one value per output channel of weight %s",
                   tt__shape(bias), (long long)CO, tt__shape(weight));
    }
    for (int d = 0; d < 2; d++) {
        int64_t in, span;
        if (!mul_add(2, c.padding[d], x->shape[2 + d], &in) ||
            !mul_add(c.dilation[d], weight->shape[2 + d] - 1, 1, &span))
            conv_overflows("tt_conv2d", x, weight, c.stride, c.padding, c.dilation);
        CONV_CHECK(
            weight->shape[2 + d] >= 1 && span <= in,
            "weight %s (kernel extent %lld along %s, dilated) is larger than the padded input "
            "(%lld) of x %s; pad more or use a smaller kernel",
            tt__shape(weight), (long long)span, d == 0 ? "H" : "W", (long long)in, tt__shape(x));
    }
    tt_k_conv_geom g = geometry(x, weight, &c);  // (in - span) / stride + 1: no overflow now
    int64_t COG = CO / G, L, K = g.C * g.KH * g.KW, HW = g.H * g.W, PI;  // K, HW: in tensors
    if (!mul_add(g.OH, g.OW, 0, &L) || !mul_add(G * K, L, 0, &PI))
        conv_overflows("tt_conv2d", x, weight, c.stride, c.padding, c.dilation);
    // PI: patch elements per image
    tt_dtype dt = x->dtype;
    size_t es = tt_dtype_size(dt);
    tt_tensor *out = tt__new(dt, 4, (int64_t[]){N, CO, g.OH, g.OW});
    tt_tensor *xc = tt__contiguous_ref(x), *wc = tt__contiguous_ref(weight);
    tt_tensor *bc = bias ? tt__contiguous_ref(bias) : NULL;
    // Chunks of nb images (chunk_plan): col (G, K, nb L) holds a chunk's patches side by side,
    // so each group is one GEMM with nb L columns, its (CO, nb L) result copied to NCHW with
    // the bias added. Every output element is one GEMM dot product over K whose order the
    // GEMM fixes by K: the bits never depend on the thread count and match those of the image
    // alone (but for products tiny enough for the GEMM's dot path). With enough images,
    // threads take whole image groups (their GEMMs single-threaded); else the GEMM threads
    // itself. The patches are not kept for the backward (it makes them again): writing them
    // out of the cache costs the forward what it saves the backward.
    chunk_plan cp = plan_chunks(N, PI, es, 2 * N * CO * K * L);
    bool inner = cp.nt == 1;  // serial groups: the passes over a chunk's images may thread
    tt_tensor *col = tt__new(dt, 2, (int64_t[]){cp.nt * cp.nb, PI});  // (nt, G, K, nb L)
    tt_tensor *tmp = tt__new(dt, 2, (int64_t[]){cp.nt * cp.nb, CO * L});  // (nt, CO, nb L)
    char *xp = tt_data(xc), *wp = tt_data(wc), *op = tt_data(out), *colp = tt_data(col);
    char *tmpp = tt_data(tmp);
    const char *bp = bc ? tt_data(bc) : NULL;
    conv_job j = {.dt = dt, .es = es, .N = N, .C = C, .HW = HW, .CO = CO, .G = G, .COG = COG,
                  .K = K, .L = L, .PI = PI, .g = &g, .cp = &cp, .inner = inner, .xp = xp,
                  .wp = wp, .op = op, .buf = colp, .tmp = tmpp, .bp = bp};
    tt__parallel_for(cp.ngroups, cp.nt > 1 ? 1 : cp.ngroups, conv_forward_groups, &j);
    tt_release(col);
    tt_release(tmp);
    tt_release(xc);
    tt_release(wc);
    tt_release(bc);
    conv_ctx *ctx = tt__record(out, TT_OP_CONV2D, 3, (tt_tensor *[]){x, weight, bias}, sizeof *ctx);
    if (ctx) *ctx = c;
    return tt__autorelease(out);
}

// acc[o] += the sum of row o of t (CO, ld), in double: eight running sums (element l into sum
// l % 8, so the adds vectorize), then added pairwise; a fixed order.
static void add_row_sums(tt_dtype dt, double *acc, const char *t, int64_t CO, int64_t ld) {
    for (int64_t o = 0; o < CO; o++) {
        double s[8] = {0};
        int64_t l = 0;
        if (dt == TT_F32) {
            const float *r = (const float *)t + o * ld;
            for (; l + 8 <= ld; l += 8)
                for (int k = 0; k < 8; k++) s[k] += r[l + k];
            for (; l < ld; l++) s[l % 8] += r[l];
        } else {
            const double *r = (const double *)t + o * ld;
            for (; l + 8 <= ld; l += 8)
                for (int k = 0; k < 8; k++) s[k] += r[l + k];
            for (; l < ld; l++) s[l % 8] += r[l];
        }
        acc[o] += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    }
}

// tt__backward_conv2d's image groups [gr0, gr1) (see there).
static void conv_backward_groups(void *ctx, int64_t gr0, int64_t gr1) {
    const conv_job *j = ctx;
    const chunk_plan *cp = j->cp;
    tt_dtype dt = j->dt;
    size_t es = j->es;
    int64_t N = j->N, C = j->C, HW = j->HW, CO = j->CO, G = j->G, COG = j->COG, K = j->K;
    int64_t L = j->L, PI = j->PI;
    for (int64_t gr = gr0; gr < gr1; gr++) {
        int t = thread_num(cp);
        int64_t end = (gr + 1) * GROUP_IMAGES < N ? (gr + 1) * GROUP_IMAGES : N;
        char *acc = gr == 0 ? j->dwp : j->pp + (size_t)((gr - 1) * j->WN) * es;  // (CO, K)
        char *tb = j->buf + (size_t)(t * cp->nb * PI) * es;     // (G, K, ld)
        char *tg = j->tmp + (size_t)(t * cp->nb * CO * L) * es;  // (CO, ld)
        double *dba = j->dbp ? j->dbp + gr * CO : NULL;          // (CO,)
        for (int64_t o = 0; dba && o < CO; o++) dba[o] = 0;
        for (int64_t n0 = gr * GROUP_IMAGES; n0 < end; n0 += cp->nb) {
            int64_t nn = end - n0 < cp->nb ? end - n0 : cp->nb, ld = nn * L;
            tt__conv_nchw_to_batch(dt, tg, j->gp + (size_t)(n0 * CO * L) * es, nn, CO, L, j->inner);
            if (dba) add_row_sums(dt, dba, tg, CO, ld);
            if (j->dwp) {
                tt__conv_batch_im2col(dt, tb, j->xp + (size_t)(n0 * C * HW) * es, nn, G, j->g,
                                      j->inner);
                for (int64_t gi = 0; gi < G; gi++)
                    gemm(dt, COG, K, ld, tg + (size_t)(gi * COG * ld) * es, ld, 1,
                         tb + (size_t)(gi * K * ld) * es, 1, ld,
                         acc + (size_t)(gi * COG * K) * es, n0 > gr * GROUP_IMAGES);
            }
            if (j->dxp) {
                for (int64_t gi = 0; gi < G; gi++)
                    gemm(dt, K, ld, COG, j->wp + (size_t)(gi * COG * K) * es, 1, K,
                         tg + (size_t)(gi * COG * ld) * es, ld, 1,
                         tb + (size_t)(gi * K * ld) * es, false);
                tt__conv_batch_col2im(dt, j->dxp + (size_t)(n0 * C * HW) * es, tb, nn, G, j->g,
                                      j->inner);
            }
        }
    }
}

// Per chunk of images (the forward's chunk_plan), with gt (CO, nb L) = g[chunk] gathered from
// NCHW: dw[group] (COG, K) += gt[group] (COG, nb L) @ col[group]^T (nb L, K), col = im2col
// of the chunk again; dcol[group] (K, nb L) = w[group]^T (K, COG) @ gt[group], then
// dx[n, group] = col2im of image n's columns; db = the sum of g over N, OH, OW (in double,
// from gt while in cache: a partial per group, the partials in order).
// dx: each element from one dot product over COG and one col2im, bits independent of the
// threads and (as the forward's) of the batch. dw: a partial per group of GROUP_IMAGES
// images, its chunks in order, then the partials in group order: the bits depend on N and the
// shapes, never on the thread count, and differ from a sum of per-image gradients by rounding.
void tt__backward_conv2d(tt_node *nd) {
    tt_tensor *x = nd->inputs[0], *w = nd->inputs[1], *b = nd->inputs[2];
    const conv_ctx *c = nd->ctx;
    tt_k_conv_geom g = geometry(x, w, c);
    int64_t N = x->shape[0], C = x->shape[1], CO = w->shape[0], G = c->groups;
    int64_t COG = CO / G, L = g.OH * g.OW, K = g.C * g.KH * g.KW, HW = g.H * g.W;
    int64_t PI = G * K * L, WN = CO * K;
    tt_dtype dt = x->dtype;
    size_t es = tt_dtype_size(dt);
    tt_tensor *gc = tt__contiguous_ref(nd->grad);
    bool need_dx = x->requires_grad, need_dw = w->requires_grad, need_db = b && b->requires_grad;
    bool db_done = false;
    if (need_dx || need_dw) {
        chunk_plan cp = plan_chunks(N, PI, es, 2 * N * CO * K * L);
        bool inner = cp.nt == 1;
        // buf: the patches for dw, then dcol for dx.
        tt_tensor *buf = tt__new(dt, 2, (int64_t[]){cp.nt * cp.nb, PI});  // (nt, G, K, nb L)
        tt_tensor *gt = tt__new(dt, 2, (int64_t[]){cp.nt * cp.nb, CO * L});  // (nt, CO, nb L)
        tt_tensor *xc = need_dw ? tt__contiguous_ref(x) : NULL;
        tt_tensor *wc = need_dx ? tt__contiguous_ref(w) : NULL;
        tt_tensor *dx = need_dx ? tt__new(dt, 4, x->shape) : NULL;
        tt_tensor *dw = need_dw ? tt__new(dt, 4, w->shape) : NULL;
        tt_tensor *part = need_dw && cp.ngroups > 1
                              ? tt__new(dt, 2, (int64_t[]){cp.ngroups - 1, WN})
                              : NULL;  // (groups - 1, CO, K)
        tt_tensor *dbpart = need_db ? tt__new(TT_F64, 2, (int64_t[]){cp.ngroups, CO}) : NULL;
        double *dbp = dbpart ? tt_data(dbpart) : NULL;  // (groups, CO)
        char *gp = tt_data(gc), *gtp = tt_data(gt), *bufp = tt_data(buf);
        char *xp = xc ? tt_data(xc) : NULL;
        char *wp = wc ? tt_data(wc) : NULL, *dxp = dx ? tt_data(dx) : NULL;
        char *dwp = dw ? tt_data(dw) : NULL, *pp = part ? tt_data(part) : NULL;
        conv_job j = {.dt = dt, .es = es, .N = N, .C = C, .HW = HW, .CO = CO, .G = G,
                      .COG = COG, .K = K, .L = L, .PI = PI, .WN = WN, .g = &g, .cp = &cp,
                      .inner = inner, .xp = xp, .wp = wp, .gp = gp, .dxp = dxp, .dwp = dwp,
                      .pp = pp, .buf = bufp, .tmp = gtp, .dbp = dbp};
        tt__parallel_for(cp.ngroups, cp.nt > 1 ? 1 : cp.ngroups, conv_backward_groups, &j);
        for (int64_t gr = 1; dw && gr < cp.ngroups; gr++)  // dw += the partials, in order
            for (int64_t i = 0; i < WN; i++) {
                if (dt == TT_F32)
                    ((float *)dwp)[i] += ((const float *)pp)[(gr - 1) * WN + i];
                else
                    ((double *)dwp)[i] += ((const double *)pp)[(gr - 1) * WN + i];
            }
        if (need_db) {  // db = the group partials, summed in order
            tt_tensor *db = tt__new(dt, 1, &CO);
            for (int64_t o = 0; o < CO; o++) {
                double sum = 0;
                for (int64_t gr = 0; gr < cp.ngroups; gr++) sum += dbp[gr * CO + o];
                if (dt == TT_F32)
                    ((float *)tt_data(db))[o] = (float)sum;
                else
                    ((double *)tt_data(db))[o] = sum;
            }
            tt__accum_grad_owned(b, db);
            db_done = true;
        }
        tt_release(dbpart);
        tt_release(buf);
        tt_release(gt);
        tt_release(part);
        tt_release(xc);
        tt_release(wc);
        if (dx) tt__accum_grad_owned(x, dx);
        if (dw) tt__accum_grad_owned(w, dw);
    }
    if (need_db && !db_done) tt__accum_grad(b, tt_sum(gc, 3, (int[]){0, 2, 3}, false));
    tt_release(gc);
}

// ---- padding "same" ----

// PyTorch's padding="same" (stride 1): dilation (k - 1) zeros in all along each dim, the
// smaller half before. Even totals become tt_conv2d's padding; an odd one pads x first with
// tt_pad (a composition: its gradient comes from pad's and conv2d's).
tt_tensor *tt_conv2d_same(tt_tensor *x, tt_tensor *weight, tt_tensor *bias,
                          const int64_t dilation[2], int64_t groups) {
    TT_CHECK(x && weight && weight->ndim == 4,
             "x and a 4-D weight (C_out, C_in / groups, kH, kW) are needed, got weight %s",
             weight ? tt__shape(weight) : "NULL");
    int64_t dil[2] = {dilation ? dilation[0] : 1, dilation ? dilation[1] : 1};
    int64_t total[2], pad[2];
    bool even = true;
    for (int d = 0; d < 2; d++) {
        TT_CHECK(dil[d] >= 1, "dilation (%lld, %lld) must be >= 1", (long long)dil[0],
                 (long long)dil[1]);
        total[d] = dil[d] * (weight->shape[2 + d] - 1);
        pad[d] = total[d] / 2;
        even = even && total[d] % 2 == 0;
    }
    if (even) return tt_conv2d(x, weight, bias, NULL, pad, dil, groups);
    tt_scope_begin();
    // tt_pad's order: last dim first, (before, after) each
    tt_tensor *xp = tt_pad(x, 4, (int64_t[]){pad[1], total[1] - pad[1], pad[0], total[0] - pad[0]},
                           TT_PAD_CONSTANT, 0);
    tt_tensor *y = tt_keep(tt_conv2d(xp, weight, bias, NULL, NULL, dil, groups));
    tt_scope_end();
    return y;
}

// ---- conv1d ----

// x (N, C, L) as (N, C, 1, L) and w (CO, C / G, KL) as (CO, C / G, 1, KL): a composition, so
// its gradient is conv2d's.
tt_tensor *tt_conv1d(tt_tensor *x, tt_tensor *weight, tt_tensor *bias, int64_t stride,
                     int64_t padding, int64_t dilation, int64_t groups) {
    TT_CHECK(x && weight, "%s is NULL", x ? "weight" : "x");
    TT_CHECK(x->ndim == 3 && weight->ndim == 3,
             "x %s must be 3-D (N, C, L) and weight %s 3-D (C_out, C_in / groups, k); for one "
             "sequence use tt_unsqueeze(x, 0)",
             tt__shape(x), tt__shape(weight));
    tt_scope_begin();  // the views and the 4-D result are intermediates
    tt_tensor *y =
        tt_conv2d(tt_unsqueeze(x, 2), tt_unsqueeze(weight, 2), bias, (int64_t[]){1, stride},
                  (int64_t[]){0, padding}, (int64_t[]){1, dilation}, groups);
    y = tt_keep(tt_squeeze(y, 2));
    tt_scope_end();
    return y;
}

// ---- conv_transpose2d ----

// Letters: x (N, C, H, W), w (C, CO / G, KH, KW), out (N, CO, OH, OW), OH = (H - 1) sh - 2 ph +
// dh (KH - 1) + oph + 1; CG = C / G, COG = CO / G, HW = H * W, K = COG * KH * KW. The
// transposed convolution is the adjoint of a conv2d from out's shape to x's: its forward is
// that conv's input gradient (col = w[group]^T x, then col2im) and its input gradient is that
// conv's forward (im2col of the output gradient, then w[group] @).

#define CONVT_CHECK(...) TT_CHECK_IN("tt_conv_transpose2d", __VA_ARGS__)

// The geometry of the adjoint conv2d, for one group of one image: its input is the (COG, OH,
// OW) output slice, its output the (H, W) of x.
// The geometry, or false when the output size overflows int64.
static bool convt_geometry(tt_k_conv_geom *out, const tt_tensor *x, const tt_tensor *w,
                           const convt_ctx *c) {
    tt_k_conv_geom g = {
        .C = w->shape[1],
        .KH = w->shape[2],
        .KW = w->shape[3],
        .OH = x->shape[2],
        .OW = x->shape[3],
        .sh = c->stride[0],
        .sw = c->stride[1],
        .ph = c->padding[0],
        .pw = c->padding[1],
        .dh = c->dilation[0],
        .dw = c->dilation[1],
    };
    // H = (OH - 1) sh - 2 ph + dh (KH - 1) + output_padding + 1, W likewise
    int64_t th, tw;
    bool ok = mul_add(g.OH - 1, g.sh, c->output_padding[0] + 1, &g.H) &&
              mul_add(-2, g.ph, g.H, &g.H) && mul_add(g.dh, g.KH - 1, 0, &th) &&
              !__builtin_add_overflow(g.H, th, &g.H) &&
              mul_add(g.OW - 1, g.sw, c->output_padding[1] + 1, &g.W) &&
              mul_add(-2, g.pw, g.W, &g.W) && mul_add(g.dw, g.KW - 1, 0, &tw) &&
              !__builtin_add_overflow(g.W, tw, &g.W);
    *out = g;
    return ok;
}

tt_tensor *tt_conv_transpose2d(tt_tensor *x, tt_tensor *weight, tt_tensor *bias,
                               const int64_t stride[2], const int64_t padding[2],
                               const int64_t output_padding[2], int64_t groups,
                               const int64_t dilation[2]) {
    CONVT_CHECK(x && weight, "%s is NULL", x ? "weight" : "x");
    tt__check_float(x, "tt_conv_transpose2d");
    tt__check_same_dtype(x, weight, "tt_conv_transpose2d");
    CONVT_CHECK(x->ndim == 4,
                "x %s must be 4-D (N, C_in, H, W); for one image use tt_unsqueeze(x, 0)",
                tt__shape(x));
    CONVT_CHECK(weight->ndim == 4, "weight %s must be 4-D (C_in, C_out / groups, kH, kW)",
                tt__shape(weight));
    convt_ctx c = {{1, 1}, {0, 0}, {0, 0}, {1, 1}, groups};
    for (int d = 0; d < 2; d++) {
        if (stride) c.stride[d] = stride[d];
        if (padding) c.padding[d] = padding[d];
        if (output_padding) c.output_padding[d] = output_padding[d];
        if (dilation) c.dilation[d] = dilation[d];
        CONVT_CHECK(c.stride[d] >= 1 && c.dilation[d] >= 1 && c.padding[d] >= 0 &&
                        c.output_padding[d] >= 0,
                    "stride (%lld, %lld) and dilation (%lld, %lld) must be >= 1, padding (%lld, "
                    "%lld) and output_padding (%lld, %lld) >= 0 (NULL means 1, 1, 0, 0)",
                    (long long)c.stride[0], (long long)c.stride[1], (long long)c.dilation[0],
                    (long long)c.dilation[1], (long long)c.padding[0], (long long)c.padding[1],
                    (long long)c.output_padding[0], (long long)c.output_padding[1]);
        CONVT_CHECK(c.output_padding[d] < c.stride[d] || c.output_padding[d] < c.dilation[d],
                    "output_padding %lld along %s must be smaller than either the stride (%lld) "
                    "or the dilation (%lld), as PyTorch",
                    (long long)c.output_padding[d], d == 0 ? "H" : "W", (long long)c.stride[d],
                    (long long)c.dilation[d]);
    }
    int64_t N = x->shape[0], C = x->shape[1], G = groups;
    CONVT_CHECK(G >= 1 && C % G == 0,
                "groups %lld must be >= 1 and divide the input channels (%lld) of x %s",
                (long long)G, (long long)C, tt__shape(x));
    CONVT_CHECK(weight->shape[0] == C,
                "x %s has %lld channels but weight %s has %lld rows; weight must be (C_in, "
                "C_out / groups, kH, kW)",
                tt__shape(x), (long long)C, tt__shape(weight), (long long)weight->shape[0]);
    int64_t CO = weight->shape[1] * G;
    if (bias) {
        tt__check_same_dtype(x, bias, "tt_conv_transpose2d");
        CONVT_CHECK(bias->ndim == 1 && bias->shape[0] == CO,
                    "bias %s must be (%lld,), one value per output channel (C_out = weight %s "
                    "dim 1 * groups %lld)",
                    tt__shape(bias), (long long)CO, tt__shape(weight), (long long)G);
    }
    tt_k_conv_geom g;
    if (!convt_geometry(&g, x, weight, &c))
        conv_overflows("tt_conv_transpose2d", x, weight, c.stride, c.padding, c.dilation);
    CONVT_CHECK(g.H >= 1 && g.W >= 1 && weight->shape[2] >= 1 && weight->shape[3] >= 1,
                "the output of x %s and weight %s would be %lld x %lld; use less padding",
                tt__shape(x), tt__shape(weight), (long long)g.H, (long long)g.W);
    int64_t CG = C / G, COG = weight->shape[1], HW = g.OH * g.OW, K = COG * g.KH * g.KW;
    int64_t L, GKHW;  // HW and K are sizes of tensors that exist: they fit
    if (!mul_add(g.H, g.W, 0, &L) || !mul_add(G * K, HW, 0, &GKHW))
        conv_overflows("tt_conv_transpose2d", x, weight, c.stride, c.padding, c.dilation);
    size_t es = tt_dtype_size(x->dtype);
    tt_tensor *out = tt__new(x->dtype, 4, (int64_t[]){N, CO, g.H, g.W});
    tt_tensor *xc = tt__contiguous_ref(x), *wc = tt__contiguous_ref(weight);
    // Chunks of images as tt_conv2d's backward: xt (C, nb HW) = the chunk of x gathered,
    // col[group] (K, nb HW) = w[group]^T (K, CG) @ xt[group] (CG, nb HW), then col2im of each
    // image's columns. Bits independent of the thread count and of the batch size.
    int64_t nb = tt__conv_chunk_images(N, GKHW, es);
    tt_tensor *col = tt__new(x->dtype, 2, (int64_t[]){G * K, nb * HW});  // (G, K, nb HW)
    tt_tensor *xt = tt__new(x->dtype, 2, (int64_t[]){C, nb * HW});       // (G, CG, nb HW)
    char *xp = tt_data(xc), *wp = tt_data(wc), *op = tt_data(out), *cp = tt_data(col);
    char *tp = tt_data(xt);
    for (int64_t n0 = 0; n0 < N; n0 += nb) {
        int64_t nn = N - n0 < nb ? N - n0 : nb, ld = nn * HW;
        tt__conv_nchw_to_batch(x->dtype, tp, xp + (size_t)(n0 * C * HW) * es, nn, C, HW, true);
        for (int64_t gi = 0; gi < G; gi++)
            gemm(x->dtype, K, ld, CG, wp + (size_t)(gi * CG * K) * es, 1, K,
                 tp + (size_t)(gi * CG * ld) * es, ld, 1, cp + (size_t)(gi * K * ld) * es, false);
        tt__conv_batch_col2im(x->dtype, op + (size_t)(n0 * CO * L) * es, cp, nn, G, &g, true);
    }
    tt_release(xt);
    if (bias) {
        tt_tensor *bc = tt__contiguous_ref(bias);
        for (int64_t n = 0; n < N; n++)
            for (int64_t o = 0; o < CO; o++) {
                size_t at = (size_t)((n * CO + o) * L);
                if (x->dtype == TT_F32) {
                    float *r = (float *)op + at, bv = ((const float *)tt_data(bc))[o];
                    for (int64_t l = 0; l < L; l++) r[l] += bv;
                } else {
                    double *r = (double *)op + at, bv = ((const double *)tt_data(bc))[o];
                    for (int64_t l = 0; l < L; l++) r[l] += bv;
                }
            }
        tt_release(bc);
    }
    tt_release(col);
    tt_release(xc);
    tt_release(wc);
    convt_ctx *ctx = tt__record(out, TT_OP_CONV_TRANSPOSE2D, 3, (tt_tensor *[]){x, weight, bias},
                                sizeof *ctx);
    if (ctx) *ctx = c;
    return tt__autorelease(out);
}

// Per chunk of images as the forward's: col (G, K, nb HW) = im2col of the chunk of g, then
// dx[group] (CG, nb HW) = w[group] (CG, K) @ col[group], copied to NCHW, and dw[group] (CG, K)
// += xt[group] (CG, nb HW) @ col[group]^T, xt the chunk of x gathered; db = the sum of g over
// N, OH, OW. dx's bits depend on nothing but the values; dw's on N, never on the threads.
void tt__backward_conv_transpose2d(tt_node *nd) {
    tt_tensor *x = nd->inputs[0], *w = nd->inputs[1], *b = nd->inputs[2];
    const convt_ctx *c = nd->ctx;
    tt_k_conv_geom g;
    convt_geometry(&g, x, w, c);  // checked by the forward
    int64_t N = x->shape[0], C = x->shape[1], G = c->groups;
    int64_t CG = C / G, COG = w->shape[1], CO = COG * G, HW = g.OH * g.OW;
    int64_t K = COG * g.KH * g.KW, L = g.H * g.W;
    tt_dtype dt = x->dtype;
    size_t es = tt_dtype_size(dt);
    tt_tensor *gc = tt__contiguous_ref(nd->grad);
    char *gp = tt_data(gc);
    bool need_dx = x->requires_grad, need_dw = w->requires_grad;
    if (need_dx || need_dw) {
        int64_t nb = tt__conv_chunk_images(N, G * K * HW, es);
        tt_tensor *col = tt__new(dt, 2, (int64_t[]){G * K, nb * HW});  // (G, K, nb HW)
        tt_tensor *t = tt__new(dt, 2, (int64_t[]){C, nb * HW});        // (G, CG, nb HW)
        tt_tensor *wc = need_dx ? tt__contiguous_ref(w) : NULL;
        tt_tensor *xc = need_dw ? tt__contiguous_ref(x) : NULL;
        tt_tensor *dx = need_dx ? tt__new(dt, 4, x->shape) : NULL;
        tt_tensor *dw = need_dw ? tt__new(dt, 4, w->shape) : NULL;
        char *cp = tt_data(col), *tp = tt_data(t);
        for (int64_t n0 = 0; n0 < N; n0 += nb) {
            int64_t nn = N - n0 < nb ? N - n0 : nb, ld = nn * HW;
            tt__conv_batch_im2col(dt, cp, gp + (size_t)(n0 * CO * L) * es, nn, G, &g, true);
            if (dw) {
                tt__conv_nchw_to_batch(dt, tp, (char *)tt_data(xc) + (size_t)(n0 * C * HW) * es,
                                       nn, C, HW, true);
                for (int64_t gi = 0; gi < G; gi++)
                    gemm(dt, CG, K, ld, tp + (size_t)(gi * CG * ld) * es, ld, 1,
                         cp + (size_t)(gi * K * ld) * es, 1, ld,
                         (char *)tt_data(dw) + (size_t)(gi * CG * K) * es, n0 > 0);
            }
            if (dx) {
                for (int64_t gi = 0; gi < G; gi++)
                    gemm(dt, CG, ld, K, (char *)tt_data(wc) + (size_t)(gi * CG * K) * es, K, 1,
                         cp + (size_t)(gi * K * ld) * es, ld, 1, tp + (size_t)(gi * CG * ld) * es,
                         false);
                tt__conv_batch_to_nchw(dt, (char *)tt_data(dx) + (size_t)(n0 * C * HW) * es, tp,
                                       NULL, nn, C, HW, true);
            }
        }
        tt_release(col);
        tt_release(t);
        tt_release(wc);
        tt_release(xc);
        if (dx) tt__accum_grad_owned(x, dx);
        if (dw) tt__accum_grad_owned(w, dw);
    }
    if (b && b->requires_grad) tt__accum_grad(b, tt_sum(gc, 3, (int[]){0, 2, 3}, false));
    tt_release(gc);
}

// ---- dropout2d, upsample_nearest2d, unflatten: compositions ----

// PyTorch's feature dropout: noise (N, C, 1, ...) = bernoulli(1 - p) / (1 - p), then x * noise.
tt_tensor *tt_dropout2d(tt_tensor *x, double p, bool training, tt_rng *rng) {
    TT_CHECK(x, "x is NULL");
    tt__check_float(x, "tt_dropout2d");
    TT_CHECK(p >= 0 && p <= 1, "p must be in [0, 1], got %g", p);
    TT_CHECK(x->ndim == 3 || x->ndim == 4,
             "x %s must be 4-D (N, C, H, W) or 3-D (N, C, L); for other shapes use tt_dropout",
             tt__shape(x));
    if (!training || p == 0) return tt__autorelease(tt_retain(x));
    TT_CHECK(rng, "rng is NULL; training dropout2d draws its mask from an explicit tt_rng");
    int64_t shape[4] = {x->shape[0], x->shape[1], 1, 1};  // (N, C, 1[, 1])
    tt_scope_begin();
    tt_tensor *noise;
    if (p == 1) {
        noise = tt_zeros(x->dtype, x->ndim, shape);
    } else {
        noise = tt_bernoulli(rng, tt_full(x->dtype, x->ndim, shape, 1 - p));
        noise = tt_div_scalar(noise, 1 - p);
    }
    tt_tensor *y = tt_keep(tt_mul(x, noise));
    tt_scope_end();
    return y;
}

// index (out,) of TT_I64: the source row of every output row, as PyTorch's nearest_idx.
static tt_tensor *nearest_index(int64_t in, int64_t out, float scale) {
    tt_tensor *index = tt_empty(TT_I64, 1, (int64_t[]){out});
    int64_t *ip = tt_data(index);
    for (int64_t d = 0; d < out; d++) {
        int64_t s = (int64_t)floorf((float)d * scale);
        ip[d] = s < in - 1 ? s : in - 1;
    }
    return index;
}

static tt_tensor *upsample_nearest(tt_tensor *x, int64_t out_h, int64_t out_w, const float s[2],
                                   const char *func) {
    TT_CHECK_IN(func, x, "x is NULL");
    tt__check_float(x, func);
    TT_CHECK_IN(func, x->ndim == 4,
                "x %s must be 4-D (N, C, H, W); for one image use tt_unsqueeze(x, 0)",
                tt__shape(x));
    TT_CHECK_IN(func, out_h >= 1 && out_w >= 1 && x->shape[2] >= 1 && x->shape[3] >= 1,
                "the output size (%lld, %lld) and x %s's H and W must be >= 1",
                (long long)out_h, (long long)out_w, tt__shape(x));
    tt_scope_begin();
    tt_tensor *y = tt_index_select(x, 2, nearest_index(x->shape[2], out_h, s[0]));
    y = tt_keep(tt_index_select(y, 3, nearest_index(x->shape[3], out_w, s[1])));
    tt_scope_end();
    return y;
}

tt_tensor *tt_upsample_nearest2d(tt_tensor *x, int64_t out_h, int64_t out_w) {
    TT_CHECK(x && x->ndim == 4, "x %s must be 4-D (N, C, H, W)", x ? tt__shape(x) : "NULL");
    float s[2] = {(float)x->shape[2] / (float)out_h, (float)x->shape[3] / (float)out_w};
    return upsample_nearest(x, out_h, out_w, s, "tt_upsample_nearest2d");
}

tt_tensor *tt_upsample_nearest2d_scale(tt_tensor *x, double scale_h, double scale_w) {
    TT_CHECK(x && x->ndim == 4, "x %s must be 4-D (N, C, H, W)", x ? tt__shape(x) : "NULL");
    TT_CHECK(scale_h > 0 && scale_w > 0, "scale factors (%g, %g) must be > 0", scale_h, scale_w);
    int64_t oh = (int64_t)floor((double)x->shape[2] * scale_h);
    int64_t ow = (int64_t)floor((double)x->shape[3] * scale_w);
    float s[2] = {(float)(1.0 / scale_h), (float)(1.0 / scale_w)};
    return upsample_nearest(x, oh, ow, s, "tt_upsample_nearest2d_scale");
}

tt_tensor *tt_unflatten(tt_tensor *x, int dim, const int64_t *sizes, int n) {
    TT_CHECK(x && sizes, "%s is NULL", x ? "sizes" : "x");
    int d = dim < 0 ? dim + x->ndim : dim;
    TT_CHECK(d >= 0 && d < x->ndim, "dim %d is out of range for x %s", dim, tt__shape(x));
    TT_CHECK(n >= 1 && x->ndim - 1 + n <= TT_MAX_DIMS,
             "%d sizes for dim %d of x %s: need 1 .. %d (at most %d dims in all)", n, dim,
             tt__shape(x), TT_MAX_DIMS - x->ndim + 1, TT_MAX_DIMS);
    int64_t shape[TT_MAX_DIMS], known = 1;
    int infer = -1;
    for (int i = 0; i < n; i++) {
        TT_CHECK(sizes[i] >= 0 || (sizes[i] == -1 && infer < 0),
                 "sizes[%d] = %lld: sizes must be >= 0, with at most one -1", i,
                 (long long)sizes[i]);
        if (sizes[i] == -1)
            infer = i;
        else
            TT_CHECK(!__builtin_mul_overflow(known, sizes[i], &known), "sizes %s for dim %d "
                     "of x %s: their product overflows int64", tt__shape_of(n, sizes), dim,
                     tt__shape(x));
    }
    int64_t size = x->shape[d];
    TT_CHECK(infer >= 0 ? (known > 0 && size % known == 0) : known == size,
             "sizes of product %lld%s cannot split dim %d of x %s (size %lld)", (long long)known,
             infer >= 0 ? " (with one -1)" : "", dim, tt__shape(x), (long long)size);
    int k = 0;
    for (int i = 0; i < d; i++) shape[k++] = x->shape[i];
    for (int i = 0; i < n; i++) shape[k++] = i == infer ? size / known : sizes[i];
    for (int i = d + 1; i < x->ndim; i++) shape[k++] = x->shape[i];
    return tt_reshape(x, k, shape);
}
