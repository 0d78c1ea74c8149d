// Check suite of the int8 GEMM (tensor/kernels/qgemm.c, qgemm_avx2.c, qgemm_avx512.c): weight
// and activation quantization against scalar references (round trip within half a step, ties
// to even, rows of zeros), the packed layout, every SIMD path's int32 sums equal to a scalar
// int64 reference (odd shapes, K not a multiple of 4 or 64, M = 1, the extremes of the
// ranges), the same f32 output bits from every path and thread count, the bias, the error of
// the quantized product against the f32 one within the bound the scales imply, the selector.
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/qgemm.h"

// Letters: Y (M, N) = X (M, K) W^T, W (N, K).

// ---- helpers ----

static uint64_t rng_state;

static uint64_t next_u64(void) { return tt_test_xorshift(&rng_state); }

static double urand(void) {  // uniform in [-1, 1)
    return tt_test_urand(&rng_state);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *rand_f32(int64_t n, double amp) {
    float *p = xmalloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(amp * urand());
    return p;
}

// The CPU levels that pick a different int8 kernel, up to the best this machine has (generic,
// avx2, and avx512 when the CPU has VNNI), in order; returns how many.
static int supported_paths(tt_cpu_level *out) {
    int n = 0;
    const char *last = "";
    for (int p = TT_CPU_GENERIC; p <= (int)tt_cpu_max_level(); p++) {
        tt_cpu_level prev = tt_cpu_set_level((tt_cpu_level)p);
        if (strcmp(tt_k_qgemm_kernel_name(), last) != 0) out[n++] = (tt_cpu_level)p;
        last = tt_k_qgemm_kernel_name();
        tt_cpu_set_level(prev);
    }
    return n;
}

// ---- quantization ----

// Weights: q = rint(w / s) (libm, the current mode: to nearest, ties to even), s = max|w| / 127.
START_TEST(test_quantize_s8_reference) {
    rng_state = 11;
    int64_t N = 37, K = 77;
    float *w = rand_f32(N * K, 3.0);
    for (int64_t k = 0; k < K; k++) w[5 * K + k] *= 1e-6f;  // a row of tiny values
    int8_t *q = xmalloc((size_t)(N * K));
    float *s = xmalloc((size_t)N * sizeof *s);
    tt_k_quantize_s8(q, s, w, N, K);
    for (int64_t n = 0; n < N; n++) {
        float amax = 0;
        for (int64_t k = 0; k < K; k++) amax = fmaxf(amax, fabsf(w[n * K + k]));
        ck_assert_float_eq(s[n], amax / 127.0f);
        int qmax = 0;
        for (int64_t k = 0; k < K; k++) {
            float x = w[n * K + k];
            int ref = (int)rintf(x / s[n]);
            ck_assert_int_eq(q[n * K + k], ref);
            ck_assert_int_le(abs(q[n * K + k]), 127);
            qmax = abs(q[n * K + k]) > qmax ? abs(q[n * K + k]) : qmax;
            // round trip: within half a step (and float rounding of the products)
            double err = fabs((double)x - (double)q[n * K + k] * s[n]);
            ck_assert_msg(err <= 0.5 * s[n] * (1 + 1e-6), "n=%lld k=%lld |w - deq(q)| = %g "
                          "> scale / 2 = %g", (long long)n, (long long)k, err, 0.5 * s[n]);
        }
        ck_assert_int_eq(qmax, 127);  // the largest weight uses the whole range
    }
    free(w);
    free(q);
    free(s);
}
END_TEST

START_TEST(test_quantize_s8_ties_and_zeros) {
    // scale = 127 / 127 = 1 exactly, so w / scale = w: ties round to even
    float w[2 * 10] = {127, 2.5f, 3.5f, -2.5f, -3.5f, 0.5f, 1.5f, -0.5f, -127, 126.5f,
                       0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    int8_t q[20];
    float s[2];
    memset(q, 0x55, sizeof q);
    tt_k_quantize_s8(q, s, w, 2, 10);
    ck_assert_float_eq(s[0], 1.0f);
    const int expect[10] = {127, 2, 4, -2, -4, 0, 2, 0, -127, 126};
    for (int k = 0; k < 10; k++) ck_assert_int_eq(q[k], expect[k]);
    ck_assert_float_eq(s[1], 0.0f);  // a row of zeros: scale 0, no division by zero
    for (int k = 10; k < 20; k++) ck_assert_int_eq(q[k], 0);
}
END_TEST

// Activations: u = clamp(rint(x / s) + z, 0, 255) with s = (max(0, max x) - min(0, min x)) /
// 255 and z = rint(-min(0, min x) / s); x = 0 exact, round trip within half a step.
START_TEST(test_quantize_u8_reference) {
    rng_state = 12;
    int64_t M = 6, K = 45, ldx = 50, ldu = 52;
    float *x = rand_f32(M * ldx, 2.0);
    for (int64_t k = 0; k < K; k++) {
        x[1 * ldx + k] = fabsf(x[1 * ldx + k]);   // nonnegative: zero point 0
        x[2 * ldx + k] = -fabsf(x[2 * ldx + k]);  // nonpositive: zero point 255
        x[3 * ldx + k] = 0;                       // zeros: scale 0
    }
    x[4 * ldx + 7] = 0;
    uint8_t *u = xmalloc((size_t)(M * ldu));
    memset(u, 0x77, (size_t)(M * ldu));
    float s[6];
    int32_t z[6];
    tt_k_quantize_u8(u, s, z, x, ldx, ldu, M, K);
    for (int64_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float lo = 0, hi = 0;
        for (int64_t k = 0; k < K; k++) {
            lo = fminf(lo, xr[k]);
            hi = fmaxf(hi, xr[k]);
        }
        float sref = (hi - lo) / 255.0f;
        ck_assert_float_eq(s[m], sref);
        for (int64_t k = K; k < ldu; k++) ck_assert_int_eq(u[m * ldu + k], 0);  // padding
        if (m == 3) {
            ck_assert_float_eq(s[m], 0.0f);
            ck_assert_int_eq(z[m], 0);
            for (int64_t k = 0; k < K; k++) ck_assert_int_eq(u[m * ldu + k], 0);
            continue;
        }
        int zref = (int)rintf(-lo * (1.0f / sref));
        ck_assert_int_eq(z[m], zref);
        if (m == 1) ck_assert_int_eq(z[m], 0);
        if (m == 2) ck_assert_int_eq(z[m], 255);
        for (int64_t k = 0; k < K; k++) {
            long v = lrintf(xr[k] * (1.0f / sref)) + zref;
            v = v < 0 ? 0 : v > 255 ? 255 : v;
            ck_assert_int_eq(u[m * ldu + k], v);
            double err = fabs((double)xr[k] - (double)s[m] * (u[m * ldu + k] - z[m]));
            ck_assert_msg(err <= 0.5 * s[m] * (1 + 1e-5), "m=%lld k=%lld err %g > %g",
                          (long long)m, (long long)k, err, 0.5 * s[m]);
        }
    }
    ck_assert_int_eq(u[4 * ldu + 7], z[4]);  // 0 maps to the zero point exactly
    free(x);
    free(u);
}
END_TEST

// NaN or inf in a row: scale NaN and bytes 0, so the outputs it touches are NaN (as in f32),
// never a silent zero or a clamped value.
START_TEST(test_quantize_nonfinite) {
    float w[3 * 5] = {1, 2, NAN, 3, 4, 1, INFINITY, 0, 0, 0, 1, -2, 0.5f, 0, 0};
    int8_t q[15];
    float sw[3];
    tt_k_quantize_s8(q, sw, w, 3, 5);
    ck_assert(isnan(sw[0]) && isnan(sw[1]));
    ck_assert_float_eq(sw[2], 2.0f / 127.0f);
    for (int k = 0; k < 10; k++) ck_assert_int_eq(q[k], 0);
    float x[3 * 20] = {0};
    for (int k = 0; k < 20; k++) x[k] = x[20 + k] = x[40 + k] = 0.1f * (float)(k - 7);
    x[17] = NAN;           // past the 16-lane part
    x[20 + 3] = NAN;       // in it
    x[40 + 5] = -INFINITY;
    uint8_t u[3 * 20];
    float sx[3];
    int32_t zx[3];
    tt_k_quantize_u8(u, sx, zx, x, 20, 20, 3, 20);
    for (int m = 0; m < 3; m++) {
        ck_assert_msg(isnan(sx[m]), "row %d: scale %g, expected NaN", m, sx[m]);
        ck_assert_int_eq(zx[m], 0);
        for (int k = 0; k < 20; k++) ck_assert_int_eq(u[m * 20 + k], 0);
    }
    // through the product: NaN rows give NaN outputs; a NaN weight row a NaN column
    tt_k_qweight qw;
    tt_k_qweight_init(&qw, w, 3, 5);
    float xs[2 * 5] = {1, 2, 3, 4, 5, 1, NAN, 0, 0, 0}, y[2 * 3];
    tt_k_qgemm_f32(y, xs, &qw, NULL, 2);
    ck_assert(isnan(y[0]) && isnan(y[1]) && !isnan(y[2]));
    ck_assert(isnan(y[3]) && isnan(y[4]) && isnan(y[5]));
    tt_k_qweight_free(&qw);
}
END_TEST

// ---- packing ----

START_TEST(test_pack_layout) {
    rng_state = 13;
    int64_t N = 35, K = 10, KG = 3, NR = TT_K_QGEMM_NR;
    ck_assert_int_eq(tt_k_qgemm_packed_bytes(N, K), 2 * KG * 4 * NR);
    int8_t *q = xmalloc((size_t)(N * K));
    for (int64_t i = 0; i < N * K; i++) q[i] = (int8_t)((int)(next_u64() % 255) - 127);
    int8_t *packed = xmalloc((size_t)tt_k_qgemm_packed_bytes(N, K));
    int32_t qsum[35];
    tt_k_qgemm_pack(packed, qsum, q, N, K);
    for (int64_t p = 0; p < 2; p++)
        for (int64_t g = 0; g < KG; g++)
            for (int64_t j = 0; j < NR; j++)
                for (int64_t b = 0; b < 4; b++) {
                    int64_t n = p * NR + j, k = 4 * g + b;
                    int expect = n < N && k < K ? q[n * K + k] : 0;
                    ck_assert_int_eq(packed[(p * KG + g) * 4 * NR + 4 * j + b], expect);
                }
    for (int64_t n = 0; n < N; n++) {
        int32_t s = 0;
        for (int64_t k = 0; k < K; k++) s += q[n * K + k];
        ck_assert_int_eq(qsum[n], s);
    }
    free(q);
    free(packed);
}
END_TEST

// ---- int32 sums on every path ----

typedef struct qcase {
    int64_t M, N, K;
} qcase;

static const qcase sum_cases[] = {
    {1, 1, 1},    {1, 384, 384}, {1, 33, 5},   {2, 31, 7},    {3, 64, 63},  {5, 65, 129},
    {8, 32, 64},  {9, 97, 130},  {13, 40, 3},  {4, 1, 1000},  {70, 50, 67}, {130, 70, 260},
    {64, 32, 1},  {7, 96, 4},    {17, 3, 65},  {1, 1152, 1537},
};

// S = u q^T through the packed weight, against an int64 sum of the unpacked bytes.
static void check_sums(const qcase *c, const uint8_t *u, int64_t ldu, const int8_t *q) {
    int8_t *packed = xmalloc((size_t)tt_k_qgemm_packed_bytes(c->N, c->K));
    int32_t *qsum = xmalloc((size_t)c->N * sizeof *qsum);
    int32_t *S = xmalloc((size_t)(c->M * c->N) * sizeof *S);
    tt_k_qgemm_pack(packed, qsum, q, c->N, c->K);
    tt_k_qgemm_s32(S, u, ldu, packed, c->M, c->N, c->K);
    for (int64_t m = 0; m < c->M; m++)
        for (int64_t n = 0; n < c->N; n++) {
            int64_t ref = 0;
            for (int64_t k = 0; k < c->K; k++) ref += (int64_t)u[m * ldu + k] * q[n * c->K + k];
            ck_assert_msg(S[m * c->N + n] == ref, "%s M=%lld N=%lld K=%lld: S[%lld, %lld] = "
                          "%d, expected %lld", tt_k_qgemm_kernel_name(),
                          (long long)c->M, (long long)c->N, (long long)c->K, (long long)m,
                          (long long)n, S[m * c->N + n], (long long)ref);
        }
    free(packed);
    free(qsum);
    free(S);
}

START_TEST(test_sums_every_path) {
    tt_cpu_level paths[TT_CPU_LEVEL_COUNT];
    int np = supported_paths(paths);
    for (size_t ci = 0; ci < sizeof sum_cases / sizeof sum_cases[0]; ci++) {
        const qcase *c = &sum_cases[ci];
        rng_state = 100 + ci;
        int64_t ldu = 4 * ((c->K + 3) / 4) + 8 * (int64_t)(ci % 2);  // padded rows, or more
        uint8_t *u = xmalloc((size_t)(c->M * ldu));
        int8_t *q = xmalloc((size_t)(c->N * c->K));
        // the pad bytes of u multiply zero weights: fill them with junk
        for (int64_t i = 0; i < c->M * ldu; i++) u[i] = (uint8_t)(next_u64() % 256);
        for (int64_t i = 0; i < c->N * c->K; i++) q[i] = (int8_t)((int)(next_u64() % 255) - 127);
        for (int p = 0; p < np; p++) {
            tt_cpu_level prev = tt_cpu_set_level(paths[p]);
            check_sums(c, u, ldu, q);
            tt_cpu_set_level(prev);
        }
        free(u);
        free(q);
    }
}
END_TEST

// The extremes: 255 x 127 and 255 x -127 over the longest K, where a pair sum in int16
// (vpmaddubsw) would saturate and an int32 sum comes within 1.2 % of overflowing.
START_TEST(test_sums_extremes) {
    tt_cpu_level paths[TT_CPU_LEVEL_COUNT];
    int np = supported_paths(paths);
    qcase c = {3, 2, TT_K_QGEMM_KMAX};
    uint8_t *u = xmalloc((size_t)(c.M * c.K));
    int8_t *q = xmalloc((size_t)(c.N * c.K));
    for (int64_t k = 0; k < c.K; k++) {
        u[k] = 255;
        u[c.K + k] = k % 2 ? 255 : 0;
        u[2 * c.K + k] = 1;
        q[k] = 127;
        q[c.K + k] = -127;
    }
    for (int p = 0; p < np; p++) {
        tt_cpu_level prev = tt_cpu_set_level(paths[p]);
        check_sums(&c, u, c.K, q);
        tt_cpu_set_level(prev);
    }
    free(u);
    free(q);
}
END_TEST

// ---- the f32 product ----

typedef struct qlinear {
    int64_t M, N, K;
    float *x, *w, *bias;
    tt_k_qweight qw;
} qlinear;

static void qlinear_init(qlinear *l, int64_t M, int64_t N, int64_t K, uint64_t seed) {
    rng_state = seed;
    l->M = M;
    l->N = N;
    l->K = K;
    l->x = rand_f32(M * K, 1.5);
    l->w = rand_f32(N * K, 0.2);
    l->bias = rand_f32(N, 0.5);
    for (int64_t k = 0; k < K; k++) {  // a row of GELU-like outputs (mostly >= -0.17)
        float v = l->x[k];
        l->x[k] = v > 0 ? v : -0.17f * fabsf(v);
    }
    if (M > 2)
        for (int64_t k = 0; k < K; k++) l->x[2 * K + k] = 0;  // a row of zeros
    if (N > 3)
        for (int64_t k = 0; k < K; k++) l->w[3 * K + k] = 0;  // a weight row of zeros
    tt_k_qweight_init(&l->qw, l->w, N, K);
}

static void qlinear_free(qlinear *l) {
    free(l->x);
    free(l->w);
    free(l->bias);
    tt_k_qweight_free(&l->qw);
}

static const qcase f32_cases[] = {
    {1, 384, 384}, {1, 1152, 384}, {3, 33, 7}, {9, 70, 130}, {70, 64, 66}, {130, 100, 387},
};

// The same bits from every path and thread count, and the same bits as the documented
// epilogue applied to the raw sums: y = (float)(S - zx qsum) * (sx sw) + bias.
START_TEST(test_f32_paths_threads_epilogue) {
    tt_cpu_level paths[TT_CPU_LEVEL_COUNT];
    int np = supported_paths(paths);
    for (size_t ci = 0; ci < sizeof f32_cases / sizeof f32_cases[0]; ci++) {
        const qcase *c = &f32_cases[ci];
        qlinear l;
        qlinear_init(&l, c->M, c->N, c->K, 200 + ci);
        size_t ny = (size_t)(c->M * c->N);
        float *y0 = xmalloc(ny * sizeof(float)), *y = xmalloc(ny * sizeof(float));
        tt_cpu_level prev = tt_cpu_set_level(TT_CPU_GENERIC);
        tt_set_num_threads(1);
        tt_k_qgemm_f32(y0, l.x, &l.qw, l.bias, c->M);
        for (int p = 0; p < np; p++)
            for (int t = 1; t <= 2; t++) {
                tt_cpu_set_level(paths[p]);
                tt_set_num_threads(t);
                memset(y, 0, ny * sizeof(float));
                tt_k_qgemm_f32(y, l.x, &l.qw, l.bias, c->M);
                ck_assert_msg(memcmp(y, y0, ny * sizeof(float)) == 0, "path %s, %d threads, "
                              "M=%lld N=%lld K=%lld: not the generic path's bits",
                              tt_cpu_level_name(paths[p]), t, (long long)c->M,
                              (long long)c->N, (long long)c->K);
            }
        tt_cpu_set_level(prev);
        tt_set_num_threads(2);
        // the epilogue, from the pieces
        int64_t ldu = 4 * ((c->K + 3) / 4);
        uint8_t *u = xmalloc((size_t)(c->M * ldu));
        float *sx = xmalloc((size_t)c->M * sizeof(float));
        int32_t *zx = xmalloc((size_t)c->M * sizeof(int32_t));
        int32_t *S = xmalloc(ny * sizeof(int32_t));
        tt_k_quantize_u8(u, sx, zx, l.x, c->K, ldu, c->M, c->K);
        tt_k_qgemm_s32(S, u, ldu, l.qw.packed, c->M, c->N, c->K);
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t n = 0; n < c->N; n++) {
                float v = (float)(S[m * c->N + n] - zx[m] * l.qw.qsum[n]) *
                          (sx[m] * l.qw.scale[n]);
                v = v + l.bias[n];
                ck_assert_msg(memcmp(&v, &y0[m * c->N + n], sizeof v) == 0, "y[%lld, %lld] = "
                              "%.9g, the epilogue gives %.9g", (long long)m, (long long)n,
                              y0[m * c->N + n], v);
            }
        if (c->M > 2)  // a row of zeros gives the bias
            for (int64_t n = 0; n < c->N; n++) ck_assert_float_eq(y0[2 * c->N + n], l.bias[n]);
        free(u);
        free(sx);
        free(zx);
        free(S);
        free(y0);
        free(y);
        qlinear_free(&l);
    }
}
END_TEST

// With a bias, every output is the bias-free one plus the bias (one float addition).
// The packed weight with its scales and sums: a bit over a quarter of the f32 weight.
START_TEST(test_qweight_bytes) {
    float *w = rand_f32(384 * 1536, 1.0);
    tt_k_qweight qw;
    tt_k_qweight_init(&qw, w, 384, 1536);
    ck_assert_int_eq(tt_k_qweight_bytes(&qw), 384 * 1536 + 384 * 8);
    tt_k_qweight_free(&qw);
    tt_k_qweight_init(&qw, w, 65, 383);  // padded to 96 channels and 384 k
    ck_assert_int_eq(tt_k_qweight_bytes(&qw), 96 * 384 + 65 * 8);
    tt_k_qweight_free(&qw);
    tt_k_qweight_free(&qw);  // safe on a zeroed struct
    free(w);
}
END_TEST

START_TEST(test_f32_bias) {
    qlinear l;
    qlinear_init(&l, 5, 45, 21, 300);
    float y[5 * 45], yb[5 * 45];
    tt_k_qgemm_f32(y, l.x, &l.qw, NULL, 5);
    tt_k_qgemm_f32(yb, l.x, &l.qw, l.bias, 5);
    for (int64_t m = 0; m < 5; m++)
        for (int64_t n = 0; n < 45; n++) ck_assert_float_eq(yb[m * 45 + n], y[m * 45 + n] +
                                                            l.bias[n]);
    qlinear_free(&l);
}
END_TEST

// Against the f32 product in double: x = sx (u - zx) + ex and w = sw q + ew with |ex| <= sx / 2
// and |ew| <= sw / 2, so |x w - x~ w~| <= sum_k |x| sw / 2 + |w~| sx / 2 per output, plus the
// float rounding of the epilogue (a few ulps of the output).
START_TEST(test_f32_error_bound) {
    for (int ci = 0; ci < 3; ci++) {
        int64_t M = ci == 0 ? 1 : 17, N = ci == 2 ? 384 : 53, K = ci == 1 ? 1536 : 384;
        qlinear l;
        qlinear_init(&l, M, N, K, 400 + (uint64_t)ci);
        float *y = xmalloc((size_t)(M * N) * sizeof(float));
        tt_k_qgemm_f32(y, l.x, &l.qw, l.bias, M);
        double worst = 0;
        for (int64_t m = 0; m < M; m++) {
            float lo = 0, hi = 0;
            for (int64_t k = 0; k < K; k++) {
                lo = fminf(lo, l.x[m * K + k]);
                hi = fmaxf(hi, l.x[m * K + k]);
            }
            double sx = (hi - lo) / 255.0;
            for (int64_t n = 0; n < N; n++) {
                double ref = l.bias[n], bound = 0, sw = l.qw.scale[n];
                for (int64_t k = 0; k < K; k++) {
                    double xv = l.x[m * K + k], wv = l.w[n * K + k];
                    ref += xv * wv;
                    bound += fabs(xv) * sw / 2 + (fabs(wv) + sw / 2) * sx / 2;
                }
                double err = fabs(y[m * N + n] - ref);
                bound = bound * (1 + 1e-4) + 1e-6 * (fabs(ref) + 1);
                ck_assert_msg(err <= bound, "M=%lld N=%lld K=%lld y[%lld, %lld] = %.7g, f32 "
                              "product %.7g: error %g > bound %g", (long long)M, (long long)N,
                              (long long)K, (long long)m, (long long)n, y[m * N + n], ref,
                              err, bound);
                worst = fmax(worst, err / (bound > 0 ? bound : 1));
            }
        }
        ck_assert(worst < 1);  // also: the bound is not vacuous for the data (errors occur)
        ck_assert(worst > 1e-3);
        free(y);
        qlinear_free(&l);
    }
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_k_too_long) {
    tt_expect_abort("need N >= 1 and 1 <= K <= 65536");
    tt_k_qweight qw;
    float w[1] = {0};
    tt_k_qweight_init(&qw, w, 1, TT_K_QGEMM_KMAX + 1);
}
END_TEST

START_TEST(test_abort_uninitialized) {
    tt_expect_abort("call tt_k_qweight_init first");
    tt_k_qweight qw = {0};
    float x[4] = {0}, y[4];
    tt_k_qgemm_f32(y, x, &qw, NULL, 1);
}
END_TEST

START_TEST(test_abort_s32_ldu) {
    tt_expect_abort("ldu >= K rounded up to a multiple of 4");
    int32_t S[1];
    uint8_t u[8] = {0};
    int8_t packed[128] = {0};
    tt_k_qgemm_s32(S, u, 5, packed, 1, 1, 6);
}
END_TEST

int main(void) {
    Suite *s = suite_create("qgemm");
    TCase *tq = tt_tcase("quantize");
    tcase_add_test(tq, test_quantize_s8_reference);
    tcase_add_test(tq, test_quantize_s8_ties_and_zeros);
    tcase_add_test(tq, test_quantize_u8_reference);
    tcase_add_test(tq, test_quantize_nonfinite);
    tcase_add_test(tq, test_pack_layout);
    suite_add_tcase(s, tq);
    TCase *tp = tt_tcase("paths");
    tcase_set_timeout(tp, 60);
    tcase_add_test(tp, test_sums_every_path);
    tcase_add_test(tp, test_sums_extremes);
    tcase_add_test(tp, test_f32_paths_threads_epilogue);
    tcase_add_test(tp, test_f32_bias);
    tcase_add_test(tp, test_qweight_bytes);
    tcase_add_test(tp, test_f32_error_bound);
    suite_add_tcase(s, tp);
    TCase *ab = tt_tcase_aborts("aborts_qgemm");
    tcase_add_test_raise_signal(ab, test_abort_k_too_long, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_uninitialized, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_s32_ldu, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
