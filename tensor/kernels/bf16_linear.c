// The bf16-weight Linear (bf16_linear.h): packing, the portable matrix-vector kernel, the
// choice of SIMD path, and the GEMM driver that runs bf16.h's micro-kernels over the weight's
// panels in place. The SIMD matrix-vector kernels: bf16_gemv_x86.c.
#include "bf16_linear.h"
#include "kint.h"
#include "cpu.h"
#include "../parallel.h"
#include "../tensor_internal.h"

#include <stdlib.h>

#define NR TT_K_BF16W_NR
#define KC TT_K_BF16_KC
#define KCP (KC / 2)  // k pairs per block

// n words, 64-byte aligned (the micro-kernels' aligned loads); free with free().
static uint32_t *alloc_words(int64_t n) {
    return tt__alloc_aligned((size_t)(n > 0 ? n : 1) * 4, "the bf16 Linear");
}

// Words from one panel of the weight to the next.
static int64_t panel_words(const tt_k_bf16w *w) { return tt_k_bf16_panel(w->K, NR); }
static int64_t panels(const tt_k_bf16w *w) { return cdiv(w->N, NR); }

void tt_k_bf16w_init(tt_k_bf16w *w, const float *W, int64_t N, int64_t K) {
    TT_CHECK(w && W && N >= 1 && K >= 1, "bad bf16 weight: N=%lld K=%lld", (long long)N,
             (long long)K);
    w->N = N;
    w->K = K;
    w->kp = cdiv(K, 2);
    w->w = alloc_words(panels(w) * panel_words(w));
    // X (K, N) = W^T: X[k, j] = W[j K + k]; every packer writes the same words (bf16.h)
    const tt_k_bf16_kernel *kn = tt_k_bf16_active();
    (kn->pack ? kn->pack : tt_k_bf16_pack_generic)(w->w, W, TT_K_SRC_F32, 1, K, K, N, NR);
}

void tt_k_bf16w_free(tt_k_bf16w *w) {
    if (!w) return;
    free(w->w);
    memset(w, 0, sizeof *w);
}

int64_t tt_k_bf16w_bytes(const tt_k_bf16w *w) { return w && w->w ? w->N * w->kp * 4 : 0; }

// ---- matrix-vector product ----

static float lo_f32(uint32_t v) { return tt_bf16_to_f32((tt_bf16)(v & 0xffffu)); }
static float hi_f32(uint32_t v) { return tt_bf16_to_f32((tt_bf16)(v >> 16)); }

// The portable kernel: per panel and block, 32 chains in plain C (mul then add: the products
// are exact, so each step is rounded once, as an FMA would).
TT_CLONES static void gemv_generic(float *y, const uint32_t *xp, const tt_k_bf16w *w,
                                   const float *bias, int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; q++) {
        const uint32_t *b = w->w + q * panel_words(w);
        int64_t n0 = q * NR, nr = min64(NR, w->N - n0);
        for (int64_t p0 = 0; p0 < w->kp; p0 += KCP) {
            float acc[NR] = {0};
            for (int64_t p = p0; p < min64(w->kp, p0 + KCP); p++) {
                float xo = hi_f32(xp[p]), xe = lo_f32(xp[p]);
                for (int j = 0; j < NR; j++) {
                    acc[j] += xo * hi_f32(b[p * NR + j]);
                    acc[j] += xe * lo_f32(b[p * NR + j]);
                }
            }
            for (int64_t j = 0; j < nr; j++)
                y[n0 + j] = p0 > 0 ? y[n0 + j] + acc[j] : bias ? bias[n0 + j] + acc[j] : acc[j];
        }
    }
}

static const tt_k_bf16w_gemv gemv_portable = {"generic (f32 FMA order)", gemv_generic};

static const tt_k_bf16w_gemv *active_gemv(void) {
    const tt_k_bf16w_gemv *g = &gemv_portable;
    switch (tt_cpu_get_level()) {
        case TT_CPU_AVX512BF16: g = &tt_k_bf16w_gemv_avx512bf16; break;
        case TT_CPU_AVX512: g = &tt_k_bf16w_gemv_avx512; break;
        case TT_CPU_AVX2: g = &tt_k_bf16w_gemv_avx2; break;
        default: break;
    }
    return g->fn ? g : &gemv_portable;
}

const char *tt_k_bf16w_gemv_name(void) { return active_gemv()->name; }

typedef struct gemv_job {
    tt_k_bf16w_gemv_fn fn;
    float *y;
    const uint32_t *xp;
    const tt_k_bf16w *w;
    const float *bias;
} gemv_job;

static void gemv_range(void *ctx, int64_t q0, int64_t q1) {
    gemv_job *g = ctx;
    g->fn(g->y, g->xp, g->w, g->bias, q0, q1);
}

static void gemv(float *y, const float *x, const tt_k_bf16w *w, const float *bias) {
    uint32_t *xp = TT_MALLOC((size_t)tt_k_bf16_panel(w->K, 1) * sizeof *xp);  // (kp)
    // x's k pairs as words, low half the even step: x rounded to bf16 in order, read as words
    // on the little-endian machines the library runs on; a zero high half when K is odd
    uint16_t *xh = (uint16_t *)xp;
    tt_k_f32_to_bf16(xh, x, w->K);
    if (w->K % 2) xh[w->K] = 0;
    gemv_job g = {active_gemv()->fn, y, xp, w, bias};
    // one contiguous run of panels per thread (tt__parallel_shares); small products stay on
    // one thread
    int64_t np = panels(w);
    if (w->N * w->K < (1 << 16)) gemv_range(&g, 0, np);
    else
        tt__parallel_shares(np, gemv_range, &g);
    tt_free(xp);
}

// ---- GEMM: x's rows packed per block of k, the micro-kernel over each weight panel ----

typedef struct gemm_job {
    const tt_k_bf16_kernel *kn;
    float *y;
    const uint32_t *ap;  // x's rows k0 .. k0 + kc packed in MR-row panels
    const tt_k_bf16w *w;
    const float *bias;
    int64_t M, k0, kc;
} gemm_job;

// The micro-kernel over every row tile of x against one B panel (kp, nr_panel words a row)
// for output columns n0 .. n0 + nr.
static void tile_column(const gemm_job *g, const uint32_t *b, int64_t n0, int nr) {
    const tt_k_bf16_kernel *kn = g->kn;
    int64_t kp = cdiv(g->kc, 2), astride = tt_k_bf16_panel(g->kc, kn->mr);
    tt_k_bf16_ukernel uk = kn->narrow && nr <= kn->nr / 2 ? kn->narrow : kn->full;
    bool add = g->k0 > 0;
    const float *bias = g->bias ? g->bias + n0 : NULL;
    for (int64_t i0 = 0, t = 0; i0 < g->M; i0 += kn->mr, t++) {
        int mr = (int)min64(kn->mr, g->M - i0);
        uk(kp, g->ap + t * astride, b, g->y + i0 * g->w->N + n0, g->w->N, mr, nr, add, bias);
    }
}

static void gemm_panels(void *ctx, int64_t q0, int64_t q1) {
    const gemm_job *g = ctx;
    const tt_k_bf16w *w = g->w;
    int64_t kp = cdiv(g->kc, 2);
    uint32_t *half = NULL;  // a 16-wide copy of a panel slice for 16-wide micro-kernels
    if (g->kn->nr != NR) half = alloc_words(kp * g->kn->nr);
    for (int64_t q = q0; q < q1; q++) {
        const uint32_t *b = w->w + q * panel_words(w) + g->k0 / 2 * NR;
        int64_t n0 = q * NR, nr = min64(NR, w->N - n0);
        if (!half) {
            tile_column(g, b, n0, (int)nr);
            continue;
        }
        int hw = g->kn->nr;
        for (int64_t j0 = 0; j0 < nr; j0 += hw) {
            for (int64_t p = 0; p < kp; p++)
                memcpy(half + p * hw, b + p * NR + j0, (size_t)hw * sizeof *half);
            tile_column(g, half, n0 + j0, (int)min64(hw, nr - j0));
        }
    }
    free(half);
}

static void gemm(float *y, const float *x, const tt_k_bf16w *w, const float *bias, int64_t M) {
    const tt_k_bf16_kernel *kn = tt_k_bf16_active();
    tt_k_bf16_packer pack = kn->pack ? kn->pack : tt_k_bf16_pack_generic;
    int64_t kcmax = min64(KC, w->K);
    uint32_t *ap = alloc_words(cdiv(M, kn->mr) * tt_k_bf16_panel(kcmax, kn->mr));
    bool par = 2.0 * (double)M * (double)w->N * (double)w->K >= (double)(3 << 20);
    for (int64_t k0 = 0; k0 < w->K; k0 += KC) {
        int64_t kc = min64(KC, w->K - k0);
        pack(ap, x + k0, TT_K_SRC_F32, 1, w->K, kc, M, kn->mr);  // X (kc, M) = x^T
        gemm_job g = {kn, y, ap, w, bias, M, k0, kc};
        if (par) tt__parallel_for(panels(w), 1, gemm_panels, &g);
        else gemm_panels(&g, 0, panels(w));
    }
    free(ap);
}

void tt_k_bf16w_linear(float *y, const float *x, const tt_k_bf16w *w, const float *bias,
                       int64_t M) {
    TT_CHECK(w && w->w && M >= 0, "bad bf16 product: M=%lld", (long long)M);
    if (M == 1) gemv(y, x, w, bias);
    else if (M > 1) gemm(y, x, w, bias, M);
}
