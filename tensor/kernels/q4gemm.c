// The 4-bit weight GEMM and GEMV driver: run-time choice of the SIMD path, f16 conversions, the
// block quantizers of weights (4-bit) and activations (int8), the packing into panels, the loop
// over tiles with its parallel split, and the portable C micro-kernel. The SIMD micro-kernels
// are in q4gemm_avx2.c and q4gemm_avx512.c. The scheme: q4gemm.h.
#include "q4gemm.h"
#include "kint.h"
#include "cpu.h"
#include "qgemm.h"  // tt_k_round_even
#include "../tensor_internal.h"

#include <math.h>
#include <string.h>

// Letters: Y (M, N) = X (M, K) W^T; KB = ceil(K / QK) blocks; P = ceil(N / NR) panels.
#define QK TT_K_Q4_QK
#define NR TT_K_Q4_NR
#define BLOCK TT_K_Q4_BLOCK_BYTES
#define MR_MAX 8   // the widest tile of any path
#define MC 64      // rows per block of the loop: their activations stay in L2 while panels pass
#define KC 32      // blocks per pass over K: a pair of panels' share (18 KB) stays in L1
// Products of fewer multiply-adds (M N K) stay on one thread, as the int8 GEMM's.
#define PAR_MIN_MACS (1 << 18)
// From this many rows on, rows are split between threads, below panels (decoding: each thread
// streams its share of the weight once, as one contiguous run: tt__parallel_shares).
#define ROWS_SPLIT_MIN 64

// ---- SIMD path ----

// The kernels of the CPU level: vpdpbusd with VNNI, vpmaddubsw from AVX2, else portable C.
static const tt_k_q4gemm_kernel *active_kernel(void) {
    if (tt_cpu_has_vnni()) return &tt_k_q4gemm_vnni;
    if (tt_cpu_get_level() >= TT_CPU_AVX2) return &tt_k_q4gemm_avx2;
    return &tt_k_q4gemm_generic;
}

const char *tt_k_q4gemm_kernel_name(void) { return active_kernel()->name; }

// ---- f16 ----

uint16_t tt_k_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00u;   // NaN
    if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (or inf): inf
    if (ax < 0x38800000u) {                        // below 2^-14: a subnormal f16 (or 0)
        float v;
        memcpy(&v, &ax, sizeof v);
        return sign | (uint16_t)tt_k_round_even(v * 16777216.0f);  // units of 2^-24, exact
    }
    ax -= 0x38000000u;  // exponent bias 127 -> 15
    return sign | (uint16_t)((ax + 0x0fffu + ((ax >> 13) & 1u)) >> 13);  // ties to even
}

float tt_k_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t bits;
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f);  // exact: m < 2^10 units of 2^-24
        memcpy(&bits, &v, sizeof bits);
        bits |= sign;
    } else if (e == 31) {
        bits = sign | 0x7f800000u | (m << 13);
    } else {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

// ---- quantization ----

// The nibble of w under the inverse scale inv: clamp(round(w inv) + 8, 0, 15).
static inline uint8_t nibble(float w, float inv) {
    float v = tt_k_round_even(w * inv) + 8.0f;
    v = v >= 0.0f ? v : 0.0f;
    return (uint8_t)(v <= 15.0f ? v : 15.0f);
}

// The squared error of w (n) under the scale d.
static double block_error(const float *w, int n, float d) {
    float inv = 1.0f / d;
    double err = 0;
    for (int k = 0; k < n; k++) {
        double r = (double)w[k] - (double)d * (nibble(w[k], inv) - 8);
        err += r * r;
    }
    return err;
}

uint16_t tt_k_q4_quantize_block(uint8_t *e, const float *w, int n) {
    static const float divisors[] = {-8.0f, -7.75f, -7.5f, -7.25f, -7.0f, 7.0f};
    float amax = 0, m = 0;
    bool bad = false;
    for (int k = 0; k < n; k++) {
        float a = fabsf(w[k]);
        bad = bad || !(a <= 3.4028235e38f);  // NaN or inf
        if (a > amax) amax = a, m = w[k];
    }
    uint16_t best = bad ? 0x7e00u : 0;  // NaN; zeros (or no candidate in f16's range): 0
    double best_err = INFINITY;
    for (size_t i = 0; !bad && amax > 0 && i < sizeof divisors / sizeof divisors[0]; i++) {
        uint16_t h = tt_k_f32_to_f16(m / divisors[i]);
        float d = tt_k_f16_to_f32(h);
        if (d == 0 || !isfinite(d)) continue;
        double err = block_error(w, n, d);
        if (err < best_err) best_err = err, best = h;
    }
    if (amax > 0 && !bad && best_err == INFINITY) best = 0x7e00u;  // beyond f16's range: NaN
    float d = tt_k_f16_to_f32(best);
    if (!(d != 0 && isfinite(d))) {
        memset(e, 8, (size_t)n);
        return best;
    }
    float inv = 1.0f / d;
    for (int k = 0; k < n; k++) e[k] = nibble(w[k], inv);
    return best;
}

// One activation block: q (32) bytes, *s, and the return value c = -8 sum q, from x (n <= 32).
// The block is copied zero-padded to 32 floats so every loop has a fixed count, and written
// without branches: max |x| as the largest of the bits of |x| (for floats >= 0 the integer
// order is the float order, and a NaN's bits exceed inf's), the clamp in integers.
TT_CLONES static int32_t quantize_block_q8(int8_t *q, float *s, const float *x, int n) {
    float xb[QK] = {0};
    uint32_t bits[QK], mb = 0;
    memcpy(xb, x, (size_t)n * sizeof *xb);
    memcpy(bits, xb, sizeof bits);
    for (int k = 0; k < QK; k++) {
        uint32_t a = bits[k] & 0x7fffffffu;
        mb = a > mb ? a : mb;
    }
    float amax;
    memcpy(&amax, &mb, sizeof amax);
    float sc = amax / 127.0f;
    if (!(sc > 0) || !isfinite(sc)) {  // zeros: scale 0; NaN or inf: scale NaN; bytes 0
        memset(q, 0, QK);
        *s = sc == 0 ? 0.0f : NAN;
        return 0;
    }
    float inv = 1.0f / sc;
    int32_t sum = 0;
    for (int k = 0; k < QK; k++) {
        int32_t v = (int32_t)tt_k_round_even(xb[k] * inv);
        v = v > -127 ? v : -127;
        v = v < 127 ? v : 127;
        q[k] = (int8_t)v;
        sum += v;
    }
    *s = sc;
    return -8 * sum;
}

// tt_k_q4_quantize_act's arguments; act_rows quantizes rows [m0, m1).
typedef struct act_job {
    int8_t *q;
    float *s;
    int32_t *c;
    const float *x;
    int64_t ldx, K;
} act_job;

static void act_rows(void *ctx, int64_t m0, int64_t m1) {
    const act_job *a = ctx;
    int64_t KB = cdiv(a->K, QK);
    for (int64_t m = m0; m < m1; m++)
        for (int64_t b = 0; b < KB; b++)
            a->c[m * KB + b] = quantize_block_q8(a->q + (m * KB + b) * QK, a->s + m * KB + b,
                                                 a->x + m * a->ldx + b * QK,
                                                 (int)min64(QK, a->K - b * QK));
}

void tt_k_q4_quantize_act(int8_t *q, float *s, int32_t *c, const float *x, int64_t ldx,
                          int64_t M, int64_t K) {
    TT_CHECK(M >= 0 && K >= 0 && ldx >= K, "M = %lld, K = %lld, ldx = %lld; need M, K >= 0 "
             "and ldx >= K", (long long)M, (long long)K, (long long)ldx);
    act_job a = {q, s, c, x, ldx, K};
    tt__parallel_for(M, M > 1 && M * K >= (1 << 16) ? 1 : (M > 0 ? M : 1), act_rows, &a);
}

// ---- packed weights ----

int64_t tt_k_q4weight_bytes(const tt_k_q4weight *qw) {
    return cdiv(qw->N, NR) * cdiv(qw->K, QK) * BLOCK;
}

// The offset of block b of channel n's panel: panels go in pairs, a pair's blocks interleaved
// (panel 2 q's block b, then panel 2 q + 1's), the last panel of an odd count alone.
static int64_t block_offset(int64_t N, int64_t KB, int64_t n, int64_t b) {
    int64_t p = n / NR, paired = 2 * (p / 2) + 1 < cdiv(N, NR);
    return (p / 2) * 2 * KB * BLOCK + b * (paired ? 2 : 1) * BLOCK + (p % 2) * BLOCK;
}

typedef struct pack_job {
    uint8_t *packed;
    const float *w;
    int64_t N, K;
} pack_job;

// Channels [n0, n1): each block quantized and written into its panel (see q4gemm.h).
static void pack_rows(void *ctx, int64_t n0, int64_t n1) {
    const pack_job *pj = ctx;
    int64_t K = pj->K, KB = cdiv(K, QK);
    for (int64_t n = n0; n < n1; n++)
        for (int64_t b = 0; b < KB; b++) {
            uint8_t e[QK];
            memset(e, 8, sizeof e);
            uint16_t h = tt_k_q4_quantize_block(e, pj->w + n * K + b * QK,
                                                (int)min64(QK, K - b * QK));
            uint8_t *blk = pj->packed + block_offset(pj->N, KB, n, b);
            int j = (int)(n % NR);
            for (int c = 0; c < 4; c++)
                for (int t = 0; t < 4; t++)
                    blk[64 * c + 4 * j + t] = (uint8_t)(e[4 * c + t] | e[16 + 4 * c + t] << 4);
            blk[256 + 2 * j] = (uint8_t)(h & 0xff);
            blk[257 + 2 * j] = (uint8_t)(h >> 8);
        }
}

void tt_k_q4weight_init(tt_k_q4weight *qw, const float *w, int64_t N, int64_t K) {
    TT_CHECK(N >= 1 && K >= 1, "weight (%lld, %lld); need N, K >= 1", (long long)N,
             (long long)K);
    memset(qw, 0, sizeof *qw);
    qw->N = N;
    qw->K = K;
    int64_t bytes = tt_k_q4weight_bytes(qw), nblocks = bytes / BLOCK;
    qw->packed = tt__alloc_aligned((size_t)bytes, "the int4 Linear");
    for (int64_t i = 0; i < nblocks; i++) {  // padding channels: nibbles 8, scale 0
        memset(qw->packed + i * BLOCK, 0x88, BLOCK - 2 * NR);
        memset(qw->packed + i * BLOCK + BLOCK - 2 * NR, 0, 2 * NR);
    }
    pack_job pj = {qw->packed, w, N, K};
    tt__parallel_for(N, 16, pack_rows, &pj);
}

void tt_k_q4weight_free(tt_k_q4weight *qw) {
    tt_free(qw->packed);
    memset(qw, 0, sizeof *qw);
}

void tt_k_q4weight_dequant(float *w, const tt_k_q4weight *qw) {
    int64_t K = qw->K, KB = cdiv(K, QK);
    for (int64_t n = 0; n < qw->N; n++)
        for (int64_t k = 0; k < K; k++) {
            const uint8_t *blk = qw->packed + block_offset(qw->N, KB, n, k / QK);
            int j = (int)(n % NR), kk = (int)(k % QK);
            uint8_t byte = blk[64 * (kk % 16 / 4) + 4 * j + kk % 4];
            int e = kk < 16 ? byte & 15 : byte >> 4;
            float d = tt_k_f16_to_f32((uint16_t)(blk[256 + 2 * j] | blk[257 + 2 * j] << 8));
            w[n * K + k] = d * (float)(e - 8);
        }
}

// ---- portable micro-kernel ----
// The definition, channel by channel: each block's exact int32 sum, then the f32 accumulation
// (continuing from c's values).

static void generic_rows(float *c, const int8_t *const *x, const float *const *s,
                         const int32_t *const *cs, int64_t kb, const uint8_t *w,
                         int64_t pstride, int mr) {
    for (int pn = 0; pn < 2; pn++)
        for (int i = 0; i < mr; i++) {
            float acc[NR];
            memcpy(acc, c + i * 2 * NR + pn * NR, sizeof acc);
            for (int64_t b = 0; b < kb; b++) {
                const uint8_t *blk = w + b * (BLOCK + pstride) + pn * pstride;  // (4 x (NR, 4)
                                                                              // bytes, NR f16)
                const int8_t *xb = x[i] + b * QK;    // (QK)
                for (int j = 0; j < NR; j++) {
                    int32_t S = cs[i][b];
                    for (int ch = 0; ch < 4; ch++)
                        for (int t = 0; t < 4; t++) {
                            uint8_t v = blk[64 * ch + 4 * j + t];
                            S += (v & 15) * xb[4 * ch + t] + (v >> 4) * xb[16 + 4 * ch + t];
                        }
                    float d = tt_k_f16_to_f32((uint16_t)(blk[256 + 2 * j] |
                                                         blk[257 + 2 * j] << 8));
                    acc[j] = acc[j] + (float)S * (d * s[i][b]);
                }
            }
            memcpy(c + i * 2 * NR + pn * NR, acc, sizeof acc);
        }
}

static void generic_tile(float *c, const int8_t *const *x, const float *const *s,
                         const int32_t *const *cs, int64_t kb, const uint8_t *w,
                         int64_t pstride) {
    generic_rows(c, x, s, cs, kb, w, pstride, 4);
}

static void generic_row(float *c, const int8_t *const *x, const float *const *s,
                        const int32_t *const *cs, int64_t kb, const uint8_t *w,
                        int64_t pstride) {
    generic_rows(c, x, s, cs, kb, w, pstride, 1);
}

const tt_k_q4gemm_kernel tt_k_q4gemm_generic = {"generic 4x32", 4, generic_tile, generic_row};

// ---- driver ----

typedef struct q4job {
    const tt_k_q4gemm_kernel *kern;
    const int8_t *xq;    // (M, KB * QK)
    const float *xs;     // (M, KB)
    const int32_t *xc;   // (M, KB)
    const uint8_t *packed;
    int64_t M, N, KB;
    float *y;            // (M, N)
    const float *bias;   // (N) or NULL
} q4job;

// The tile c (MR, 2 NR) before a pass over blocks: 0 on the first pass, else the sums so far
// of rows [m, m + mr) x channels [n0, n0 + nr), kept in y; 0 elsewhere.
static void load_tile(const q4job *j, float *c, int64_t m, int MR, int mr, int64_t n0, int nr,
                      bool first) {
    memset(c, 0, (size_t)MR * 2 * NR * sizeof *c);
    for (int i = 0; i < mr && !first; i++)
        memcpy(c + i * 2 * NR, j->y + (m + i) * j->N + n0, (size_t)nr * sizeof *c);
}

// Rows [m, m + mr) x channels [n0, n0 + nr) of y from the tile c, plus the bias after the last
// pass.
static void store_tile(const q4job *j, const float *c, int64_t m, int mr, int64_t n0, int nr,
                       bool last) {
    for (int i = 0; i < mr; i++) {
        float *y = j->y + (m + i) * j->N + n0;  // (nr)
        if (last && j->bias)
            for (int t = 0; t < nr; t++) y[t] = c[i * 2 * NR + t] + j->bias[n0 + t];
        else
            memcpy(y, c + i * 2 * NR, (size_t)nr * sizeof *y);
    }
}

// Points the row arrays at rows m + i (i < MR; rows past r repeat the last one), block b0 on.
static void point_rows(const q4job *j, int64_t m, int MR, int r, int64_t b0, const int8_t **xr,
                       const float **sr, const int32_t **cr) {
    for (int i = 0; i < MR; i++) {
        int64_t row = m + (i < r ? i : r - 1);
        xr[i] = j->xq + (row * j->KB + b0) * QK;
        sr[i] = j->xs + row * j->KB + b0;
        cr[i] = j->xc + row * j->KB + b0;
    }
}

// Rows [m, me) x the pair of panels p, blocks [b0, b0 + nb): a tile of more than MR / 2 rows
// runs the MR-row kernel (the repeated rows' results dropped), a smaller one the 1-row kernel.
// The last pair of an odd count of panels is its panel twice.
static void pair_pass(const q4job *j, int64_t m, int64_t me, int64_t p, int64_t b0, int64_t nb) {
    _Alignas(64) float c[MR_MAX * 2 * NR];
    const int8_t *xr[MR_MAX];
    const float *sr[MR_MAX];
    const int32_t *cr[MR_MAX];
    int MR = j->kern->mr;
    int64_t n0 = 2 * p * NR, pstride = n0 + NR < j->N ? BLOCK : 0;
    const uint8_t *w = j->packed + 2 * p * j->KB * BLOCK + b0 * (BLOCK + pstride);
    int nr = (int)min64(2 * NR, j->N - n0);
    bool first = b0 == 0, last = b0 + nb == j->KB;
    while (m < me) {
        int r = me - m > MR / 2 ? (int)min64(MR, me - m) : 1, rows = r > 1 ? MR : 1;
        point_rows(j, m, rows, r, b0, xr, sr, cr);
        load_tile(j, c, m, rows, r, n0, nr, first);
        (r > 1 ? j->kern->tile : j->kern->row)(c, xr, sr, cr, nb, w, pstride);
        store_tile(j, c, m, r, n0, nr, last);
        m += r;
    }
}

// Rows [m0, m1) x pairs of panels [p0, p1), in blocks of MC rows and passes of KC blocks (the
// sums carried in y between passes, in the same order, so the bits do not depend on KC).
// One row (decoding) takes all blocks in one pass: each pair of panels is then read front to
// back as one sequential stream, with nothing of the row's to keep in L1.
static void q4gemm_range(const q4job *j, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
    int64_t kc = j->M == 1 ? j->KB : KC;
    for (int64_t mb = m0; mb < m1; mb += MC)
        for (int64_t b0 = 0; b0 < j->KB; b0 += kc)
            for (int64_t p = p0; p < p1; p++)
                pair_pass(j, mb, min64(mb + MC, m1), p, b0, min64(kc, j->KB - b0));
}

// Blocks of MC rows [u0, u1), every panel (M >= ROWS_SPLIT_MIN). A unit of MC rows, not of a
// tile's: each unit streams the whole weight, so its tiles must share that pass.
static void q4gemm_rows(void *ctx, int64_t u0, int64_t u1) {
    const q4job *j = ctx;
    q4gemm_range(j, u0 * MC, min64(u1 * MC, j->M), 0, cdiv(j->N, 2 * NR));
}

// Pairs of panels [p0, p1), every row (M < ROWS_SPLIT_MIN).
static void q4gemm_cols(void *ctx, int64_t p0, int64_t p1) {
    const q4job *j = ctx;
    q4gemm_range(j, 0, j->M, p0, p1);
}

// The activations' workspace, per calling thread, grown on demand and kept: q (M, KB * QK),
// then s (M, KB) and c (M, KB).
static _Thread_local struct {
    char *p;
    size_t cap;
} ws;

static void ws_free(void) {
    tt_free(ws.p);
    ws.p = NULL;
    ws.cap = 0;
}

void tt_k_q4gemm_f32(float *y, const float *x, const tt_k_q4weight *qw, const float *bias,
                     int64_t M) {
    TT_CHECK(qw && qw->packed, "the weight is not initialized; call tt_k_q4weight_init first");
    TT_CHECK(M >= 0, "M = %lld must be >= 0", (long long)M);
    if (M == 0) return;
    int64_t N = qw->N, K = qw->K, KB = cdiv(K, QK);
    size_t need = (size_t)(M * KB) * (QK + sizeof(float) + sizeof(int32_t));
    if (need > ws.cap) {
        if (!ws.p) tt__at_thread_exit(ws_free);
        tt_free(ws.p);
        ws.p = TT_MALLOC(need);
        ws.cap = need;
    }
    int8_t *q = (int8_t *)ws.p;
    float *s = (float *)(ws.p + M * KB * QK);
    int32_t *c = (int32_t *)(s + M * KB);
    tt_k_q4_quantize_act(q, s, c, x, K, M, K);
    q4job j = {.kern = active_kernel(), .xq = q, .xs = s, .xc = c, .packed = qw->packed,
               .M = M, .N = N, .KB = KB, .y = y, .bias = bias};
    bool par = (double)M * (double)N * (double)K >= PAR_MIN_MACS;
    int64_t P = cdiv(N, 2 * NR), units = cdiv(M, MC);  // pairs of panels, blocks of rows
    if (M >= ROWS_SPLIT_MIN)
        tt__parallel_for(units, par ? 1 : units, q4gemm_rows, &j);
    else if (par)
        tt__parallel_shares(P, q4gemm_cols, &j);
    else
        q4gemm_cols(&j, 0, P);
}
