// The bf16 kernels' portable side and driver: the run-time choice of SIMD path, the scalar
// conversions, the portable packer and micro-kernel, and the packed GEMM driver (cache
// blocking, the OpenMP split of a product, C layouts). The SIMD kernels: bf16_avx2.c,
// bf16_avx512.c.
#include "bf16.h"
#include "cpu.h"
#include "../tensor_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- SIMD path ----

// The kernels of the CPU level (cpu.h): vdpbf16ps at AVX512BF16, bf16 widened to f32 with FMA
// at AVX512 (16 lanes) and AVX2 (8 lanes), else the portable C.
static const tt_k_bf16_kernel *active_kernel(void) {
    switch (tt_cpu_get_level()) {
        case TT_CPU_AVX512BF16: return &tt_k_bf16_avx512bf16;
        case TT_CPU_AVX512: return &tt_k_bf16_avx512;
        case TT_CPU_AVX2: return &tt_k_bf16_avx2;
        default: return &tt_k_bf16_generic;
    }
}

const char *tt_k_gemm_bf16_kernel_name(void) { return active_kernel()->name; }

// ---- conversions ----

static void to_bf16_generic(tt_bf16 *dst, const float *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = tt_bf16_from_f32(src[i]);
}

static void to_f32_generic(float *dst, const tt_bf16 *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = tt_bf16_to_f32(src[i]);
}

void tt_k_f32_to_bf16(tt_bf16 *dst, const float *src, int64_t n) {
    if (n > 0) active_kernel()->to_bf16(dst, src, n);
}

void tt_k_bf16_to_f32(float *dst, const tt_bf16 *src, int64_t n) {
    if (n > 0) active_kernel()->to_f32(dst, src, n);
}

// ---- portable packer and micro-kernel ----

// The bf16 bits of X[k, j] (f32 rounded, or bf16 as is).
static uint32_t elem_bits(const void *src, tt_k_bf16_src type, int64_t off) {
    return type == TT_K_SRC_BF16 ? ((const tt_bf16 *)src)[off]
                                 : tt_bf16_from_f32(((const float *)src)[off]);
}

void tt_k_bf16_pack_generic(uint32_t *dst, const void *src, tt_k_bf16_src type, int64_t ks,
                            int64_t js, int64_t kc, int64_t n, int w) {
    int64_t kp = cdiv(kc, 2);
    for (int64_t j0 = 0; j0 < n; j0 += w, dst += tt_k_bf16_panel(kc, w)) {
        int cols = (int)min64(w, n - j0);
        for (int64_t p = 0; p < kp; p++) {
            uint32_t *d = dst + p * w;
            int64_t k = 2 * p;
            for (int j = 0; j < cols; j++) {
                int64_t off = k * ks + (j0 + j) * js;
                uint32_t lo = elem_bits(src, type, off);
                uint32_t hi = k + 1 < kc ? elem_bits(src, type, off + ks) : 0;
                d[j] = lo | hi << 16;
            }
            for (int j = cols; j < w; j++) d[j] = 0;
        }
    }
}

// A 4 x 16 tile in plain C: per k pair, the odd step then the even one (vdpbf16ps's order),
// each product exact in float and added with one rounding (what an FMA does with them).
#define G_MR 4
#define G_NR 16

static float lo_f32(uint32_t w) { return tt_bf16_to_f32((tt_bf16)(w & 0xffffu)); }
static float hi_f32(uint32_t w) { return tt_bf16_to_f32((tt_bf16)(w >> 16)); }

TT_CLONES static void uk_generic(int64_t kp, const uint32_t *a, const uint32_t *b, float *c,
                                 int64_t ldc, int mr, int nr, bool add, const float *bias) {
    float acc[G_MR][G_NR] = {{0}};
    for (int64_t p = 0; p < kp; p++, a += G_MR, b += G_NR) {
        float be[G_NR], bo[G_NR];
        for (int j = 0; j < G_NR; j++) be[j] = lo_f32(b[j]), bo[j] = hi_f32(b[j]);
        for (int i = 0; i < G_MR; i++) {
            float ae = lo_f32(a[i]), ao = hi_f32(a[i]);
            for (int j = 0; j < G_NR; j++) {
                acc[i][j] += ao * bo[j];
                acc[i][j] += ae * be[j];
            }
        }
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = add ? c[i * ldc + j] + acc[i][j]
                             : bias ? bias[j] + acc[i][j] : acc[i][j];
}

const tt_k_bf16_kernel tt_k_bf16_generic = {"generic bf16 4x16 (f32 FMA order)", G_MR, G_NR,
                                            uk_generic, NULL, NULL, to_bf16_generic,
                                            to_f32_generic};

// ---- packed GEMM driver ----
// Goto and van de Geijn (2008): for each NC-column block of C and each KC-step block of k, B's
// (KC, NC) block is packed into NR-wide panels (one (KC, NR) panel, 24 KiB at NR 32, stays in
// L1), A's (MC, KC) block into MR-row panels (180 KiB at MC 240, in L2), and the micro-kernel
// runs over every tile. The thread split follows the f32 GEMM (matmul.c): rows of C when they
// share out as well as the columns, else columns; a function of the shape only.
#define KC TT_K_BF16_KC
#define MC 240   // a multiple of every MR (12, 6, 4)
#define NC 4096
#define PAR_MIN_FLOPS (3 << 20)  // fewer flops stay on one thread (as in matmul.c)

// Words of a packed A block: MC / MR panels.
#define A_WORDS(mr) ((size_t)(MC / (mr) * tt_k_bf16_panel(KC, (int)(mr))))

static void share(int64_t n, int t, int nt, int64_t *lo, int64_t *hi) {
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

// Packing buffers kept per thread between products, 64-byte aligned, grown on demand.
typedef struct workspace {
    void *raw;
    uint32_t *p;
    size_t cap;  // words
} workspace;

static _Thread_local workspace ws_a, ws_b;

// At thread exit (tt__at_thread_exit): the thread's workspaces.
static void ws_free(void) {
    tt_free(ws_a.raw);
    tt_free(ws_b.raw);
    ws_a = (workspace){0};
    ws_b = (workspace){0};
}

static uint32_t *ws_get(workspace *w, size_t nwords) {
    if (nwords > w->cap) {
        if (!w->raw) tt__at_thread_exit(ws_free);
        tt_free(w->raw);
        w->raw = TT_MALLOC(nwords * sizeof(uint32_t) + 64);
        w->p = (uint32_t *)(((uintptr_t)w->raw + 63) & ~(uintptr_t)63);
        w->cap = nwords;
    }
    return w->p;
}

typedef struct bf16_job {
    const tt_k_bf16_kernel *kern;
    int64_t M, N, K;
    const char *A, *B;
    size_t a_es, b_es;  // element sizes (4 for f32, 2 for bf16)
    tt_k_bf16_src a_type, b_type;
    int64_t a_rs, a_cs, b_rs, b_cs;
    float *C;  // unit column stride
    int64_t c_rs;
    bool accumulate;
    const float *bias;  // (N), added to every row with the first k block; or NULL
    bool split_n;   // threads split the columns of C (else its rows)
    uint32_t *bp;   // packed B block, shared
    uint32_t *ap;   // packed A block, shared when split_n
} bf16_job;

// X (kc, n), X[k, j] = src[k ks + j js], into w-wide panels: the path's packer when a dim of
// X is contiguous, else the portable one.
static void pack(const bf16_job *g, uint32_t *dst, const char *src, tt_k_bf16_src type,
                 int64_t ks, int64_t js, int64_t kc, int64_t n, int64_t w) {
    tt_k_bf16_packer p = g->kern->pack && (js == 1 || ks == 1) ? g->kern->pack
                                                                : tt_k_bf16_pack_generic;
    p(dst, src, type, ks, js, kc, n, (int)w);
}

// Every tile of C[0:mc, 0:ncols] from the packed blocks ap (mc rows) and bp (ncols columns).
static void macro_kernel(const bf16_job *g, const uint32_t *ap, const uint32_t *bp, int64_t mc,
                         int64_t ncols, int64_t kc, float *c, bool add, const float *bias) {
    const tt_k_bf16_kernel *kn = g->kern;
    int64_t kp = cdiv(kc, 2);
    int64_t pa = tt_k_bf16_panel(kc, kn->mr), pb = tt_k_bf16_panel(kc, kn->nr);  // strides
    for (int64_t jr = 0; jr < ncols; jr += kn->nr) {
        int nr = (int)min64(kn->nr, ncols - jr);
        tt_k_bf16_ukernel uk = kn->narrow && nr <= kn->nr / 2 ? kn->narrow : kn->full;
        for (int64_t ir = 0; ir < mc; ir += kn->mr) {
            int mr = (int)min64(kn->mr, mc - ir);
            uk(kp, ap + ir / kn->mr * pa, bp + jr / kn->nr * pb, c + ir * g->c_rs + jr,
                     g->c_rs, mr, nr, add, bias ? bias + jr : NULL);
        }
    }
}

// Thread t of nt computes its part of C, as gemm_thread in matmul.c: rows split, each thread
// packs a share of B's panels (shared, then a barrier) and its own rows of A; columns split,
// its own B panels and a share of A's panels (shared). One thread computes each element of C.
static void gemm_thread(const bf16_job *g, int t, int nt) {
    const tt_k_bf16_kernel *kn = g->kern;
    int64_t MR = kn->mr, NR = kn->nr;
    uint32_t *ap = g->split_n ? g->ap : ws_get(&ws_a, A_WORDS(MR));
    int64_t mlo, mhi;  // rows of this thread (rows split), as whole panels
    share(cdiv(g->M, MR), t, nt, &mlo, &mhi);
    mlo *= MR;
    mhi = min64(g->M, mhi * MR);
    for (int64_t jc = 0; jc < g->N; jc += NC) {
        int64_t nc = min64(NC, g->N - jc), qlo, qhi;  // B panels this thread packs
        share(cdiv(nc, NR), t, nt, &qlo, &qhi);
        int64_t jlo = qlo * NR, jhi = min64(nc, qhi * NR);
        for (int64_t pc = 0; pc < g->K; pc += KC) {
            int64_t kc = min64(KC, g->K - pc);
            bool add = g->accumulate || pc > 0;
            const float *bias = g->bias && !add ? g->bias + jc : NULL;
            const char *bk = g->B + (size_t)(pc * g->b_rs + (jc + jlo) * g->b_cs) * g->b_es;
            const char *ak = g->A + (size_t)(pc * g->a_cs) * g->a_es;
            uint32_t *bp = g->bp + qlo * tt_k_bf16_panel(kc, (int)NR);
            if (jhi > jlo) pack(g, bp, bk, g->b_type, g->b_rs, g->b_cs, kc, jhi - jlo, NR);
            if (!g->split_n) {
                tt__team_barrier(nt);  // B's panels are packed
                for (int64_t ic = mlo; ic < mhi; ic += MC) {
                    int64_t mc = min64(MC, mhi - ic);
                    pack(g, ap, ak + (size_t)(ic * g->a_rs) * g->a_es, g->a_type, g->a_cs,
                         g->a_rs, kc, mc, MR);
                    macro_kernel(g, ap, g->bp, mc, nc, kc, g->C + ic * g->c_rs + jc, add,
                                 bias);
                }
                tt__team_barrier(nt);  // nobody reads B's panels any more
            } else {
                for (int64_t ic = 0; ic < g->M; ic += MC) {
                    int64_t mc = min64(MC, g->M - ic), plo, phi;
                    share(cdiv(mc, MR), t, nt, &plo, &phi);
                    int64_t ilo = plo * MR, ihi = min64(mc, phi * MR);
                    if (ihi > ilo)
                        pack(g, ap + plo * tt_k_bf16_panel(kc, (int)MR),
                             ak + (size_t)((ic + ilo) * g->a_rs) * g->a_es, g->a_type, g->a_cs,
                             g->a_rs, kc, ihi - ilo, MR);
                    tt__team_barrier(nt);  // A's panels are packed
                    if (jhi > jlo)
                        macro_kernel(g, ap, bp, mc, jhi - jlo, kc,
                                     g->C + ic * g->c_rs + jc + jlo, add,
                                     bias ? bias + jlo : NULL);
                    tt__team_barrier(nt);  // nobody reads A's panels any more
                }
            }
        }
    }
}

// C (M, N), unit column stride, (+)= A B (+ bias, when not accumulating); M, N, K >= 1.
static void gemm_packed(int64_t M, int64_t N, int64_t K, const void *A, tt_k_bf16_src a_type,
                        int64_t a_rs, int64_t a_cs, const void *B, tt_k_bf16_src b_type,
                        int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs, bool accumulate,
                        const float *bias) {
    const tt_k_bf16_kernel *kn = active_kernel();
    bf16_job g = {
        .kern = kn, .M = M, .N = N, .K = K, .A = A, .B = B,
        .a_es = a_type == TT_K_SRC_BF16 ? 2 : 4, .b_es = b_type == TT_K_SRC_BF16 ? 2 : 4,
        .a_type = a_type, .b_type = b_type,
        .a_rs = a_rs, .a_cs = a_cs, .b_rs = b_rs, .b_cs = b_cs,
        .C = C, .c_rs = c_rs, .accumulate = accumulate, .bias = bias,
    };
    int64_t mpan = cdiv(M, kn->mr), npan = cdiv(min64(N, NC), kn->nr);
    int nt = 2.0 * (double)M * (double)N * (double)K < PAR_MIN_FLOPS ? 1 : tt__kernel_threads();
    nt = (int)min64(nt, max64(mpan, npan));
    // Threads: whichever split of C's panels balances better, rows on a tie; when C has more
    // than MC rows, rows unless the columns balance clearly better (a column split has two
    // barriers per (MC, KC) block, a row split two per KC block).
    if (nt > 1) {
        double em = (double)mpan / (double)(nt * cdiv(mpan, nt));
        double en = (double)npan / (double)(nt * cdiv(npan, nt));
        g.split_n = en > (M > MC ? 1.1 : 1.0) * em;
    }
    size_t bwords = (size_t)(npan * tt_k_bf16_panel(KC, kn->nr));
    g.bp = ws_get(&ws_b, bwords + (g.split_n ? A_WORDS(kn->mr) : 0));
    g.ap = g.split_n ? g.bp + bwords : NULL;
    if (nt <= 1) {
        gemm_thread(&g, 0, 1);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
    gemm_thread(&g, omp_get_thread_num(), omp_get_num_threads());
#endif
}

// The checks shared by the public products, on behalf of `func`.
static void check_args(const char *func, int64_t M, int64_t N, int64_t K, tt_k_bf16_src a_type,
                       tt_k_bf16_src b_type) {
    TT_CHECK_IN(func, M >= 0 && N >= 0 && K >= 0, "negative size M=%lld N=%lld K=%lld",
                (long long)M, (long long)N, (long long)K);
    TT_CHECK_IN(func, (a_type == TT_K_SRC_F32 || a_type == TT_K_SRC_BF16) &&
                          (b_type == TT_K_SRC_F32 || b_type == TT_K_SRC_BF16),
                "operand types %d, %d: each must be TT_K_SRC_F32 or TT_K_SRC_BF16",
                (int)a_type, (int)b_type);
}

void tt_k_gemm_bf16(int64_t M, int64_t N, int64_t K, const void *A, tt_k_bf16_src a_type,
                    int64_t a_rs, int64_t a_cs, const void *B, tt_k_bf16_src b_type,
                    int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs, int64_t c_cs,
                    bool accumulate) {
    check_args(__func__, M, N, K, a_type, b_type);
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) C[i * c_rs + j * c_cs] = 0;
        return;
    }
    if (M == 1) a_rs = 0;  // strides along dims of size 1 are ignored
    if (N == 1) b_cs = 0;
    if (K == 1) a_cs = 0, b_rs = 0;
    if (c_cs == 1 || N == 1) {
        gemm_packed(M, N, K, A, a_type, a_rs, a_cs, B, b_type, b_rs, b_cs, C, c_rs,
                    accumulate, NULL);
    } else if (c_rs == 1 || M == 1) {  // C^T (N, M) = B^T A^T, rows of C^T contiguous
        gemm_packed(N, M, K, B, b_type, b_cs, b_rs, A, a_type, a_cs, a_rs, C, c_cs,
                    accumulate, NULL);
    } else {  // through a contiguous copy of C
        float *t = TT_MALLOC((size_t)(M * N) * sizeof *t);  // (M, N)
        if (accumulate)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) t[i * N + j] = C[i * c_rs + j * c_cs];
        gemm_packed(M, N, K, A, a_type, a_rs, a_cs, B, b_type, b_rs, b_cs, t, N, accumulate,
                    NULL);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) C[i * c_rs + j * c_cs] = t[i * N + j];
        tt_free(t);
    }
}

void tt_k_gemm_bias_bf16(int64_t M, int64_t N, int64_t K, const void *A, tt_k_bf16_src a_type,
                         int64_t a_rs, int64_t a_cs, const void *B, tt_k_bf16_src b_type,
                         int64_t b_rs, int64_t b_cs, const float *bias, float *C, int64_t c_rs) {
    check_args(__func__, M, N, K, a_type, b_type);
    if (M == 0 || N == 0) return;
    if (K == 0) {
        for (int64_t i = 0; i < M; i++) memcpy(C + i * c_rs, bias, (size_t)N * sizeof *C);
        return;
    }
    if (M == 1) a_rs = 0;  // strides along dims of size 1 are ignored
    if (N == 1) b_cs = 0;
    if (K == 1) a_cs = 0, b_rs = 0;
    gemm_packed(M, N, K, A, a_type, a_rs, a_cs, B, b_type, b_rs, b_cs, C, c_rs, false, bias);
}
