// The int8 GEMM driver: run-time choice of the SIMD path, int8 quantization of weights and u8
// quantization of activations, packing of the weight into vpdpbusd's panels, the loop over
// tiles with its parallel split, the dequantizing epilogue, and the portable C micro-kernel.
// The SIMD micro-kernels are in qgemm_avx2.c and qgemm_avx512.c. The scheme: qgemm.h.
#include "qgemm.h"
#include "kint.h"
#include "cpu.h"
#include "../tensor_internal.h"

#include <math.h>
#include <string.h>

// Letters: Y (M, N) = X (M, K) W^T; KG = ceil(K / 4) groups of 4 k; P = ceil(N / NR) panels.
#define NR TT_K_QGEMM_NR
#define MR_MAX 8   // the widest tile of any path
#define MC 64      // rows per block: u's (MC, K) block stays in L2 while the panels pass
// Products of fewer multiply-adds (M N K) stay on one thread. bench/bench_qgemm.c at M = 1, 2
// cores: a 384 x 384 weight (147 K) takes 1.8 us on one thread, 1.6-1.8 on two; 1152 x 384
// 3.8 and 2.7; 65 x 384 and 384 x 96 are slower on two.
#define PAR_MIN_MACS (1 << 18)
// From this many rows on, rows are split between threads (each reads every panel); below,
// panels are (each thread reads its share of the weight once: decoding).
#define ROWS_SPLIT_MIN 64

// ---- SIMD path ----

// The kernels of the CPU level (cpu.h): vpdpbusd when the level allows AVX-512 and the CPU
// has VNNI, vpmaddwd from AVX2 on, else the portable C.
static const tt_k_qgemm_kernel *active_kernel(void) {
    if (tt_cpu_has_vnni()) return &tt_k_qgemm_vnni;
    if (tt_cpu_get_level() >= TT_CPU_AVX2) return &tt_k_qgemm_avx2;
    return &tt_k_qgemm_generic;
}

const char *tt_k_qgemm_kernel_name(void) { return active_kernel()->name; }

// ---- quantization ----

void tt_k_quantize_s8(int8_t *q, float *scale, const float *w, int64_t N, int64_t K) {
    TT_CHECK(N >= 0 && K >= 0, "N = %lld, K = %lld must be >= 0",
             (long long)N, (long long)K);
    for (int64_t n = 0; n < N; n++) {
        const float *wr = w + n * K;  // (K)
        int8_t *qr = q + n * K;       // (K)
        float amax = 0;
        for (int64_t k = 0; k < K; k++) {
            float a = fabsf(wr[k]);
            amax = a > amax || a != a ? a : amax;  // NaN sticks
        }
        float s = amax / 127.0f;
        scale[n] = s;
        if (!(s > 0) || !isfinite(s)) {  // zeros: 0; NaN or inf: NaN, so its outputs are NaN
            scale[n] = s == 0 ? 0.0f : NAN;
            memset(qr, 0, (size_t)K);
            continue;
        }
        for (int64_t k = 0; k < K; k++)
            qr[k] = (int8_t)fmaxf(-127.0f, fminf(127.0f, tt_k_round_even(wr[k] / s)));
    }
}

// One row of activations (see qgemm.h): u (ldu) bytes, *scale, *zero from x (K). Comparisons
// written so that they vectorize (the loops are cloned for AVX2 and AVX-512). A NaN or an
// infinity makes the range NaN or infinite: the row gets scale NaN (its outputs are NaN, as in
// f32) and bytes 0.
TT_CLONES static void quantize_row_u8(uint8_t *u, float *scale, int32_t *zero, const float *x,
                                      int64_t K, int64_t ldu) {
    float lo16[16] = {0}, hi16[16] = {0};  // lane l: k = l mod 16 (vectors, no serial chain)
    int64_t k16 = K / 16 * 16;
    for (int64_t k = 0; k < k16; k += 16)
        for (int l = 0; l < 16; l++) {
            float v = x[k + l];
            lo16[l] = v < lo16[l] || v != v ? v : lo16[l];  // NaN sticks
            hi16[l] = v > hi16[l] ? v : hi16[l];
        }
    float lo = 0, hi = 0;
    for (int l = 0; l < 16; l++) {
        lo = lo16[l] < lo || lo16[l] != lo16[l] ? lo16[l] : lo;
        hi = hi16[l] > hi ? hi16[l] : hi;
    }
    for (int64_t k = k16; k < K; k++) {
        lo = x[k] < lo || x[k] != x[k] ? x[k] : lo;
        hi = x[k] > hi ? x[k] : hi;
    }
    float s = (hi - lo) / 255.0f;
    if (!(s > 0) || !isfinite(s)) {  // zeros: scale 0; NaN or inf: scale NaN; bytes 0
        *scale = s == 0 ? 0.0f : NAN;
        *zero = 0;
        memset(u, 0, (size_t)ldu);
        return;
    }
    float inv = 1.0f / s;
    float z = fmaxf(0.0f, fminf(255.0f, tt_k_round_even(-lo * inv)));
    for (int64_t k = 0; k < K; k++) {
        float v = tt_k_round_even(x[k] * inv) + z;
        v = v >= 0.0f ? v : 0.0f;
        v = v <= 255.0f ? v : 255.0f;
        u[k] = (uint8_t)(int32_t)v;
    }
    memset(u + K, 0, (size_t)(ldu - K));
    *scale = s;
    *zero = (int32_t)z;
}

// One row with a fixed scale s > 0 and zero point z in [0, 255] (static quantization): u (ldu)
// bytes from x (K), values outside the range clamped to 0 or 255 (a NaN gives 0).
TT_CLONES static void quantize_row_u8_fixed(uint8_t *u, const float *x, int64_t K, int64_t ldu,
                                            float inv, float z) {
    for (int64_t k = 0; k < K; k++) {
        float v = tt_k_round_even(x[k] * inv) + z;
        v = v >= 0.0f ? v : 0.0f;
        v = v <= 255.0f ? v : 255.0f;
        u[k] = (uint8_t)(int32_t)v;
    }
    memset(u + K, 0, (size_t)(ldu - K));
}

// tt_k_quantize_u8's arguments; quant_rows quantizes rows [m0, m1).
typedef struct quant_job {
    uint8_t *u;
    float *scale;
    int32_t *zero;
    const float *x;
    int64_t ldx, ldu, K;
} quant_job;

static void quant_rows(void *ctx, int64_t m0, int64_t m1) {
    const quant_job *q = ctx;
    for (int64_t m = m0; m < m1; m++)
        quantize_row_u8(q->u + m * q->ldu, q->scale + m, q->zero + m, q->x + m * q->ldx, q->K,
                        q->ldu);
}

void tt_k_quantize_u8(uint8_t *u, float *scale, int32_t *zero, const float *x, int64_t ldx,
                      int64_t ldu, int64_t M, int64_t K) {
    TT_CHECK(M >= 0 && K >= 0 && ldu >= K && ldx >= K, "M = %lld, K = "
             "%lld, ldx = %lld, ldu = %lld; need M, K >= 0 and ldx, ldu >= K", (long long)M,
             (long long)K, (long long)ldx, (long long)ldu);
    quant_job q = {u, scale, zero, x, ldx, ldu, K};
    tt__parallel_for(M, M > 1 && M * K >= (1 << 16) ? 1 : (M > 0 ? M : 1), quant_rows, &q);
}

// ---- packed weights ----

int64_t tt_k_qgemm_packed_bytes(int64_t N, int64_t K) {
    return cdiv(N, NR) * cdiv(K, 4) * 4 * NR;
}

void tt_k_qgemm_pack(int8_t *packed, int32_t *qsum, const int8_t *q, int64_t N, int64_t K) {
    TT_CHECK(N >= 0 && K >= 0, "N = %lld, K = %lld must be >= 0",
             (long long)N, (long long)K);
    int64_t KG = cdiv(K, 4);
    memset(packed, 0, (size_t)tt_k_qgemm_packed_bytes(N, K));
    for (int64_t n = 0; n < N; n++) {
        const int8_t *qr = q + n * K;                                  // (K)
        int8_t *dst = packed + (n / NR) * KG * 4 * NR + 4 * (n % NR);  // its panel and lane
        int32_t s = 0;
        for (int64_t k = 0; k < K; k++) {
            dst[(k / 4) * 4 * NR + k % 4] = qr[k];
            s += qr[k];
        }
        qsum[n] = s;
    }
}

void tt_k_qweight_init(tt_k_qweight *qw, const float *w, int64_t N, int64_t K) {
    TT_CHECK(N >= 1 && K >= 1 && K <= TT_K_QGEMM_KMAX, "weight (%lld, "
             "%lld); need N >= 1 and 1 <= K <= %d (int32 sums of u8 x s8 products)",
             (long long)N, (long long)K, TT_K_QGEMM_KMAX);
    memset(qw, 0, sizeof *qw);
    qw->N = N;
    qw->K = K;
    int8_t *q = TT_MALLOC((size_t)(N * K));  // (N, K)
    qw->scale = TT_MALLOC((size_t)N * sizeof(float));
    qw->qsum = TT_MALLOC((size_t)N * sizeof(int32_t));
    qw->packed = tt__alloc_aligned((size_t)tt_k_qgemm_packed_bytes(N, K), "the int8 Linear");
    tt_k_quantize_s8(q, qw->scale, w, N, K);
    tt_k_qgemm_pack(qw->packed, qw->qsum, q, N, K);
    tt_free(q);
}

void tt_k_qweight_free(tt_k_qweight *qw) {
    tt_free(qw->packed);
    tt_free(qw->scale);
    tt_free(qw->qsum);
    memset(qw, 0, sizeof *qw);
}

int64_t tt_k_qweight_bytes(const tt_k_qweight *qw) {
    return tt_k_qgemm_packed_bytes(qw->N, qw->K) + qw->N * (int64_t)(sizeof(float) +
                                                                     sizeof(int32_t));
}

// ---- portable micro-kernel ----
// The definition, one row at a time: for each group of 4 k, each channel j adds the 4 products
// of its 4 bytes (at 4 j in the group) with the row's 4 bytes. A 4-row tile.

static void generic_rows(int32_t *c, const uint8_t *const *x, int64_t kg, const int8_t *w,
                         int mr) {
    for (int i = 0; i < mr; i++) {
        int32_t acc[NR] = {0};
        for (int64_t g = 0; g < kg; g++) {
            const uint8_t *xg = x[i] + 4 * g;    // (4)
            const int8_t *wg = w + g * 4 * NR;   // (NR, 4)
            for (int j = 0; j < NR; j++)
                acc[j] += xg[0] * wg[4 * j] + xg[1] * wg[4 * j + 1] + xg[2] * wg[4 * j + 2] +
                          xg[3] * wg[4 * j + 3];
        }
        memcpy(c + i * NR, acc, sizeof acc);
    }
}

static void generic_tile(int32_t *c, const uint8_t *const *x, int64_t kg, const int8_t *w) {
    generic_rows(c, x, kg, w, 4);
}

static void generic_row(int32_t *c, const uint8_t *const *x, int64_t kg, const int8_t *w) {
    generic_rows(c, x, kg, w, 1);
}

const tt_k_qgemm_kernel tt_k_qgemm_generic = {"generic 4x32", 4, generic_tile, generic_row};

// ---- driver ----

typedef struct qjob {
    const tt_k_qgemm_kernel *kern;
    const uint8_t *u;  // (M, ldu)
    int64_t ldu;
    const int8_t *packed;
    int64_t M, N, KG;
    int32_t *S;            // (M, N) raw sums, or NULL for the f32 output below
    float *y;              // (M, N)
    const float *sx;       // (M)
    const int32_t *zx;     // (M)
    const float *sw;       // (N)
    const int32_t *qsum;   // (N)
    const float *bias;     // (N) or NULL
} qjob;

// One row of the epilogue, y (nr) from the sums c (nr): y = (float)(c - z qsum) * (s sw) +
// bias, in that order (the compiler vectorizes it; every clone gives the same bits: each
// operation is one IEEE operation, nothing contracted).
TT_CLONES static void dequant_row(float *y, const int32_t *c, int32_t z, float s,
                                  const float *sw, const int32_t *qsum, const float *bias,
                                  int nr) {
    if (bias)
        for (int j = 0; j < nr; j++) y[j] = (float)(c[j] - z * qsum[j]) * (s * sw[j]) + bias[j];
    else
        for (int j = 0; j < nr; j++) y[j] = (float)(c[j] - z * qsum[j]) * (s * sw[j]);
}

// Rows [m, m + mr) x channels [n0, n0 + nr) of the output from the tile c (mr, NR): the raw
// sums, or the one epilogue of every path.
static void store_tile(const qjob *j, const int32_t *c, int64_t m, int mr, int64_t n0, int nr) {
    for (int i = 0; i < mr; i++) {
        if (j->S)
            memcpy(j->S + (m + i) * j->N + n0, c + i * NR, (size_t)nr * sizeof(int32_t));
        else
            dequant_row(j->y + (m + i) * j->N + n0, c + i * NR, j->zx[m + i], j->sx[m + i],
                        j->sw + n0, j->qsum + n0, j->bias ? j->bias + n0 : NULL, nr);
    }
}

// Rows [m0, m1) x panels [p0, p1): blocks of MC rows; in a block, each panel meets every
// tile of rows. A tile of more than MR / 2 rows runs the MR-row kernel (rows past the end
// repeat the last one, their sums dropped), a smaller one the 1-row kernel row by row.
static void qgemm_range(const qjob *j, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
    _Alignas(64) int32_t c[MR_MAX * NR];
    const uint8_t *xr[MR_MAX];
    int MR = j->kern->mr;
    for (int64_t mb = m0; mb < m1; mb += MC) {
        int64_t me = min64(mb + MC, m1);
        for (int64_t p = p0; p < p1; p++) {
            const int8_t *w = j->packed + p * j->KG * 4 * NR;  // (KG, NR, 4)
            int64_t n0 = p * NR;
            int nr = (int)min64(NR, j->N - n0);
            for (int64_t m = mb; m < me;) {
                int64_t rem = me - m;
                if (rem > MR / 2) {
                    int r = (int)min64(MR, rem);
                    for (int i = 0; i < MR; i++)
                        xr[i] = j->u + (m + (i < r ? i : r - 1)) * j->ldu;
                    j->kern->tile(c, xr, j->KG, w);
                    store_tile(j, c, m, r, n0, nr);
                    m += r;
                } else {
                    xr[0] = j->u + m * j->ldu;
                    j->kern->row(c, xr, j->KG, w);
                    store_tile(j, c, m, 1, n0, nr);
                    m += 1;
                }
            }
        }
    }
}

// MR-row units [u0, u1) of the product, every panel (M >= ROWS_SPLIT_MIN).
static void qgemm_rows(void *ctx, int64_t u0, int64_t u1) {
    const qjob *j = ctx;
    int64_t MR = j->kern->mr;
    qgemm_range(j, u0 * MR, min64(u1 * MR, j->M), 0, cdiv(j->N, NR));
}

// Panels [p0, p1) of the product, every row (M < ROWS_SPLIT_MIN).
static void qgemm_cols(void *ctx, int64_t p0, int64_t p1) {
    const qjob *j = ctx;
    qgemm_range(j, 0, j->M, p0, p1);
}

// Splits the product between the threads: MR-row units (M >= ROWS_SPLIT_MIN), or panels in
// one contiguous run per thread (each streams its share of the weight); each unit or panel is
// computed the same way whichever thread runs it.
static void qgemm_run(const qjob *j, int64_t K) {
    bool par = (double)j->M * (double)j->N * (double)K >= PAR_MIN_MACS;
    int64_t P = cdiv(j->N, NR), units = cdiv(j->M, j->kern->mr);
    if (j->M >= ROWS_SPLIT_MIN)
        tt__parallel_for(units, par ? 1 : units, qgemm_rows, (void *)j);
    else if (par)
        tt__parallel_shares(P, qgemm_cols, (void *)j);
    else
        qgemm_cols((void *)j, 0, P);
}

void tt_k_qgemm_s32(int32_t *S, const uint8_t *u, int64_t ldu, const int8_t *packed,
                    int64_t M, int64_t N, int64_t K) {
    TT_CHECK(M >= 0 && N >= 0 && K >= 0 && K <= TT_K_QGEMM_KMAX && ldu >= 4 * cdiv(K, 4),
             "M = %lld, N = %lld, K = %lld, ldu = %lld; need K <= %d and "
             "ldu >= K rounded up to a multiple of 4", (long long)M, (long long)N,
             (long long)K, (long long)ldu, TT_K_QGEMM_KMAX);
    if (M == 0 || N == 0) return;
    qjob j = {.kern = active_kernel(), .u = u, .ldu = ldu, .packed = packed, .M = M, .N = N,
              .KG = cdiv(K, 4), .S = S};
    qgemm_run(&j, K);
}

// The activations' workspace, per calling thread, grown on demand and kept (decoding runs the
// same shapes token after token): u (M, ldu), then sx (M), zx (M). Plain memory.
static _Thread_local struct {
    char *p;
    size_t cap;
} ws;

// At thread exit (tt__at_thread_exit): the thread's workspace.
static void ws_free(void) {
    tt_free(ws.p);
    ws.p = NULL;
    ws.cap = 0;
}

// Both products: rows quantized each with its own range (fixed NULL) or all with *fixed's;
// func names the public function in messages.
static void qgemm_f32(float *y, const float *x, const tt_k_qweight *qw, const float *bias,
                      int64_t M, const tt_k_qact *fixed, const char *func) {
    TT_CHECK_IN(func, qw && qw->packed, "the weight is not initialized; call "
                "tt_k_qweight_init first");
    TT_CHECK_IN(func, M >= 0, "M = %lld must be >= 0", (long long)M);
    if (M == 0) return;
    int64_t N = qw->N, K = qw->K, ldu = 4 * cdiv(K, 4);
    ldu = cdiv(ldu, 64) * 64;  // rows on cache lines
    size_t need = (size_t)(M * ldu) + (size_t)M * (sizeof(float) + sizeof(int32_t));
    if (need > ws.cap) {
        if (!ws.p) tt__at_thread_exit(ws_free);
        tt_free(ws.p);
        ws.p = TT_MALLOC(need);
        ws.cap = need;
    }
    uint8_t *u = (uint8_t *)ws.p;
    float *sx = (float *)(ws.p + M * ldu);
    int32_t *zx = (int32_t *)(sx + M);
    if (!fixed) {
        tt_k_quantize_u8(u, sx, zx, x, K, ldu, M, K);
    } else if (fixed->scale > 0) {
        float inv = 1.0f / fixed->scale, z = (float)fixed->zero;
        for (int64_t m = 0; m < M; m++) {
            quantize_row_u8_fixed(u + m * ldu, x + m * K, K, ldu, inv, z);
            sx[m] = fixed->scale;
            zx[m] = fixed->zero;
        }
    } else {  // an all-zero calibration range: every input quantizes to 0
        memset(u, 0, (size_t)(M * ldu));
        for (int64_t m = 0; m < M; m++) sx[m] = 0, zx[m] = 0;
    }
    qjob j = {.kern = active_kernel(), .u = u, .ldu = ldu, .packed = qw->packed, .M = M,
              .N = N, .KG = cdiv(K, 4), .y = y, .sx = sx, .zx = zx, .sw = qw->scale,
              .qsum = qw->qsum, .bias = bias};
    qgemm_run(&j, K);
}

void tt_k_qgemm_f32(float *y, const float *x, const tt_k_qweight *qw, const float *bias,
                    int64_t M) {
    qgemm_f32(y, x, qw, bias, M, NULL, "tt_k_qgemm_f32");
}

void tt_k_qgemm_f32_static(float *y, const float *x, const tt_k_qweight *qw, const float *bias,
                           int64_t M, tt_k_qact act) {
    TT_CHECK(act.scale >= 0 && isfinite(act.scale) && act.zero >= 0 && act.zero <= 255,
             "activation scale %g, zero point %d; need a finite scale >= 0 and a zero point "
             "in [0, 255] (tt_k_qact_from_range makes them)", (double)act.scale, (int)act.zero);
    qgemm_f32(y, x, qw, bias, M, &act, "tt_k_qgemm_f32_static");
}

tt_k_qact tt_k_qact_from_range(float lo, float hi) {
    lo = fminf(lo, 0.0f);
    hi = fmaxf(hi, 0.0f);
    float s = (hi - lo) / 255.0f;
    if (!(s > 0) || !isfinite(s)) return (tt_k_qact){0.0f, 0};
    float z = fmaxf(0.0f, fminf(255.0f, tt_k_round_even(-lo * (1.0f / s))));
    return (tt_k_qact){s, (int32_t)z};
}
