// Check suite of the bf16 kernels (tensor/kernels/bf16.c, bf16_avx2.c, bf16_avx512.c): the
// f32 -> bf16 rounding of every path against an independent reference (nearest value by
// distance in double, ties to even) over every bf16 bit pattern with the rounding-relevant low
// halves, bf16 -> f32 over all 65536 patterns; the bf16 GEMM of every path against a double
// reference of the bf16-rounded inputs over many shapes, layouts and operand types, with the
// f32-accumulation bound; every path, 1 and 2 threads, f32 or bf16 operands bitwise equal; the
// bias epilogue; the aborts. The paths are forced by the CPU level (cpu.h).
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tensor/kernels/bf16.h"
#include "tensor/kernels/cpu.h"

// Letters: C (M, N) (+)= A (M, K) @ B (K, N).

static const tt_cpu_level paths[4] = {TT_CPU_GENERIC, TT_CPU_AVX2, TT_CPU_AVX512,
                                        TT_CPU_AVX512BF16};

static uint64_t rng_state;

static uint64_t rng_u64(void) { return tt_test_xorshift(&rng_state); }

static double urand(void) {  // uniform in [-1, 1)
    return tt_test_urand(&rng_state);
}

static float f32_of(uint32_t u) { return tt_test_f32_of(u); }
static uint32_t bits_of(float x) { return tt_test_bits_of(x); }

// ---- the reference rounding ----

// The value of a bf16 pattern of finite magnitude, or of the first pattern past the largest
// finite one (0x7f80, 2^128: where IEEE rounding sends what overflows).
static double bf16_value(uint32_t h) {
    if ((h & 0x7fffu) == 0x7f80u) return (h & 0x8000u ? -1 : 1) * ldexp(1, 128);
    return (double)f32_of(h << 16);
}

// f32 -> bf16 by distance: of the two bf16 values around x (its truncation and the next one
// away from zero), the nearer; on a tie the one with an even last bit. NaN: the sign and top
// fraction bits kept, made quiet.
static uint32_t ref_round(uint32_t u) {
    float x = f32_of(u);
    if (isnan(x)) return (u >> 16) | 0x40u;
    if (isinf(x)) return u >> 16;
    uint32_t lo = u >> 16, hi = lo + 1;  // magnitudes |lo| <= |x| < |hi|, same sign
    double dlo = fabs((double)x - bf16_value(lo)), dhi = fabs((double)x - bf16_value(hi));
    if (dlo < dhi) return lo;
    if (dhi < dlo) return hi;
    return (lo & 1u) ? hi : lo;
}

// The lower halves that matter for rounding (zero, just below, at and just above the half, the
// top) and a few random ones.
static uint32_t low_half(int i) {
    static const uint32_t fixed[6] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
    return i < 6 ? fixed[i] : (uint32_t)(rng_u64() >> 48);
}
#define N_LOWS 10

// The reference itself: a few hand-checked roundings.
START_TEST(test_reference_rounding) {
    ck_assert_uint_eq(ref_round(bits_of(1.0f)), 0x3f80u);
    ck_assert_uint_eq(ref_round(0x3f808000u), 0x3f80u);  // a tie, down to the even 0x3f80
    ck_assert_uint_eq(ref_round(0x3f818000u), 0x3f82u);  // a tie, up to the even 0x3f82
    ck_assert_uint_eq(ref_round(0x3f808001u), 0x3f81u);
    ck_assert_uint_eq(ref_round(0x7f7fffffu), 0x7f80u);  // the largest float overflows to inf
    ck_assert_uint_eq(ref_round(0x7f7f7fffu), 0x7f7fu);
    ck_assert_uint_eq(ref_round(0x00008000u), 0x0000u);  // the smallest subnormals: a tie
    ck_assert_uint_eq(ref_round(0x00018000u), 0x0002u);
    ck_assert_uint_eq(ref_round(0xffc00001u), 0xffc0u);
    ck_assert_uint_eq(ref_round(0x7f800001u), 0x7fc0u);  // a signalling NaN made quiet
    ck_assert(bf16_value(0x3f80) == 1.0);
}
END_TEST

// Every high half with N_LOWS low halves, in runs of lengths 1 .. 67 (every vector tail), on
// the path selected by _i: the same bits as the reference and the inline scalar conversion.
START_TEST(test_to_bf16_dense) {
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) return;
    tt_cpu_level prev = tt_cpu_set_level(path);
    rng_state = 0x51ed2705u + (uint64_t)_i;
    int64_t n = (int64_t)65536 * N_LOWS;
    float *src = malloc((size_t)n * sizeof *src);
    tt_bf16 *dst = malloc((size_t)n * sizeof *dst);
    ck_assert(src && dst);
    for (int64_t h = 0; h < 65536; h++)
        for (int l = 0; l < N_LOWS; l++)
            src[h * N_LOWS + l] = f32_of((uint32_t)h << 16 | low_half(l));
    int64_t len = 1;
    for (int64_t i = 0; i < n; i += len, len = len % 67 + 1)
        tt_k_f32_to_bf16(dst + i, src + i, i + len <= n ? len : n - i);
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = bits_of(src[i]), want = ref_round(u);
        ck_assert_msg(dst[i] == want, "%s: f32 0x%08x -> bf16 0x%04x, expected 0x%04x",
                      tt_cpu_level_name(path), u, dst[i], want);
        ck_assert_msg(tt_bf16_from_f32(src[i]) == want, "tt_bf16_from_f32(0x%08x)", u);
    }
    free(src);
    free(dst);
    tt_cpu_set_level(prev);
}
END_TEST

// All 65536 patterns back to f32, exactly, in runs of every tail length.
START_TEST(test_to_f32_all) {
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) return;
    tt_cpu_level prev = tt_cpu_set_level(path);
    tt_bf16 *src = malloc(65536 * sizeof *src);
    float *dst = malloc(65536 * sizeof *dst);
    ck_assert(src && dst);
    for (int i = 0; i < 65536; i++) src[i] = (tt_bf16)i;
    int64_t len = 1;
    for (int64_t i = 0; i < 65536; i += len, len = len % 41 + 1)
        tt_k_bf16_to_f32(dst + i, src + i, i + len <= 65536 ? len : 65536 - i);
    for (int i = 0; i < 65536; i++)
        ck_assert_msg(bits_of(dst[i]) == (uint32_t)i << 16, "%s: bf16 0x%04x -> 0x%08x",
                      tt_cpu_level_name(path), i, bits_of(dst[i]));
    // the round trip of every bf16 value is exact (NaNs: made quiet, and those already are)
    tt_k_f32_to_bf16(src, dst, 65536);
    for (int i = 0; i < 65536; i++)
        if (!isnan(dst[i])) ck_assert_uint_eq(src[i], (uint32_t)i);
    free(src);
    free(dst);
    tt_cpu_set_level(prev);
}
END_TEST

// ---- the GEMM ----

typedef enum { C_ROWS, C_COLS, C_STRIDED } c_layout;

typedef struct gemm_case {
    int64_t M, N, K;
    bool ta, tb;  // A stored (K, M), B stored (N, K): read through transposed strides
    c_layout cl;
    bool accumulate;
    tt_k_bf16_src at, bt;
} gemm_case;

static const char *case_str(const gemm_case *c) {
    static char buf[200];
    snprintf(buf, sizeof buf, "%s M=%lld N=%lld K=%lld %c%c C=%s %s A=%s B=%s",
             tt_cpu_level_name(tt_cpu_get_level()), (long long)c->M, (long long)c->N,
             (long long)c->K, c->ta ? 't' : 'n', c->tb ? 't' : 'n',
             c->cl == C_ROWS ? "rows" : c->cl == C_COLS ? "cols" : "strided",
             c->accumulate ? "accumulate" : "overwrite", c->at == TT_K_SRC_F32 ? "f32" : "bf16",
             c->bt == TT_K_SRC_F32 ? "f32" : "bf16");
    return buf;
}

// An operand of n random values in [-1, 1): f32, or its bf16 rounding when bf16; vals[i] gets
// the bf16-rounded value in double (by the reference rounding).
static void *operand(tt_k_bf16_src t, int64_t n, double *vals) {
    void *p = malloc((size_t)(n > 0 ? n : 1) * (t == TT_K_SRC_F32 ? 4 : 2));
    ck_assert_ptr_nonnull(p);
    for (int64_t i = 0; i < n; i++) {
        float x = (float)urand();
        uint32_t h = ref_round(bits_of(x));
        vals[i] = bf16_value(h);
        if (t == TT_K_SRC_F32) ((float *)p)[i] = x;
        else ((tt_bf16 *)p)[i] = (tt_bf16)h;
    }
    return p;
}

// Runs one case; out (M, N), if not NULL, receives C. Every element against the reference in
// double of the bf16-rounded inputs: the products are exact in f32, so the only error is the
// f32 accumulation of at most K + 1 terms, |C - ref| <= (K + 1) 2^-24 (sum_k |a b| + |c0|).
static void run_case(const gemm_case *c, uint64_t seed, float *out) {
    int64_t M = c->M, N = c->N, K = c->K;
    rng_state = seed;
    double *av = malloc((size_t)(M * K + 1) * sizeof *av);
    double *bv = malloc((size_t)(K * N + 1) * sizeof *bv);
    void *A = operand(c->at, M * K, av), *B = operand(c->bt, K * N, bv);
    float *C = malloc((size_t)(2 * M * N + 1) * sizeof *C);
    for (int64_t i = 0; i < 2 * M * N; i++) C[i] = (float)urand();
    int64_t a_rs = c->ta ? 1 : K, a_cs = c->ta ? M : 1;
    int64_t b_rs = c->tb ? 1 : N, b_cs = c->tb ? K : 1;
    int64_t c_rs = c->cl == C_ROWS ? N : c->cl == C_COLS ? 1 : 2 * N;
    int64_t c_cs = c->cl == C_ROWS ? 1 : c->cl == C_COLS ? M : 2;
    double *c0 = malloc((size_t)(M * N + 1) * sizeof *c0);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) c0[i * N + j] = C[i * c_rs + j * c_cs];
    float guard = c->cl == C_STRIDED && M * N > 0 ? C[1] : 0;  // odd columns stay untouched
    tt_k_gemm_bf16(M, N, K, A, c->at, a_rs, a_cs, B, c->bt, b_rs, b_cs, C, c_rs, c_cs,
                   c->accumulate);
    double tol = (double)(K + 1) * ldexp(1, -24);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = c->accumulate ? c0[i * N + j] : 0, sabs = fabs(s);
            for (int64_t k = 0; k < K; k++) {
                double p = av[i * a_rs + k * a_cs] * bv[k * b_rs + j * b_cs];
                s += p;
                sabs += fabs(p);
            }
            double got = C[i * c_rs + j * c_cs];
            ck_assert_msg(fabs(got - s) <= tol * sabs, "%s: C[%lld, %lld] = %.10g, expected "
                          "%.10g (bound %.3g)", case_str(c), (long long)i, (long long)j, got, s,
                          tol * sabs);
            if (out) out[i * N + j] = (float)got;
        }
    if (c->cl == C_STRIDED && M * N > 0)
        ck_assert_msg(C[1] == guard, "%s: wrote outside C", case_str(c));
    free(c0);
    free(av);
    free(bv);
    free(A);
    free(B);
    free(C);
}

// (M, N, K): sizes of 1, primes, the tiles of every path (MR 4, 6, 12; NR 16, 32) +-1, odd K
// (a half-filled last pair), KC = 384 and MC = 240 +-1, K over several blocks, a second NC
// block (N > 4096).
static const int64_t shapes[][3] = {
    {1, 1, 1},     {1, 1, 7},     {2, 3, 1},     {1, 17, 5},    {17, 1, 5},    {1, 40, 300},
    {300, 1, 30},  {5, 7, 11},    {3, 5, 1000},  {12, 32, 8},   {11, 31, 13},  {13, 33, 14},
    {24, 64, 9},   {25, 65, 10},  {6, 16, 3},    {7, 17, 4},    {4, 16, 2},    {37, 47, 53},
    {23, 15, 383}, {29, 17, 384}, {31, 48, 385}, {239, 40, 29}, {240, 19, 30}, {241, 33, 31},
    {29, 67, 800}, {100, 65, 128}, {5, 4100, 3},  {9, 20, 1537},
};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

// Every shape in the four operand layouts, both modes, a column-major and a strided C, and
// each operand f32 or bf16, on the path selected by _i.
START_TEST(test_gemm_vs_reference) {
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) return;
    tt_cpu_level prev = tt_cpu_set_level(path);
    for (int s = 0; s < N_SHAPES; s++)
        for (int lay = 0; lay < 4; lay++)
            for (int mode = 0; mode < 4; mode++) {
                gemm_case c = {shapes[s][0], shapes[s][1], shapes[s][2], lay & 1, lay >> 1,
                               C_ROWS, mode & 1, TT_K_SRC_F32, TT_K_SRC_F32};
                if (mode & 2) {  // the other C layouts and operand types, in turn
                    c.cl = lay & 1 ? C_COLS : C_STRIDED;
                    c.at = lay & 2 ? TT_K_SRC_BF16 : TT_K_SRC_F32;
                    c.bt = lay & 1 ? TT_K_SRC_F32 : TT_K_SRC_BF16;
                }
                run_case(&c, 0x1234u + (uint64_t)s, NULL);
            }
    tt_cpu_set_level(prev);
}
END_TEST

// The same product, bitwise: from f32 or pre-cast bf16 operands (the cast is the same), on 1
// and 2 threads, on every path (each adds a k pair as vdpbf16ps is specified to: the odd
// step's product, then the even one's, each rounded to f32; no subnormals in these inputs).
static const int64_t step_shapes[][3] = {
    {768, 384, 128}, {768, 128, 512}, {128, 512, 768}, {130, 70, 1100}, {61, 300, 45},
};

START_TEST(test_gemm_bitwise) {
    const int64_t *sh = step_shapes[_i];
    int64_t MN = sh[0] * sh[1];
    float *ref = malloc((size_t)MN * sizeof *ref), *got = malloc((size_t)MN * sizeof *got);
    ck_assert(ref && got);
    tt_cpu_level prev = tt_cpu_get_level();
    for (int p = 0; p < 4; p++) {
        if (paths[p] > tt_cpu_max_level()) continue;
        tt_cpu_set_level(paths[p]);
        for (int v = 0; v < 4; v++) {
            gemm_case c = {sh[0], sh[1], sh[2], false, false, C_ROWS, false,
                           v & 2 ? TT_K_SRC_BF16 : TT_K_SRC_F32, TT_K_SRC_F32};
            tt_set_num_threads(v & 1 ? 1 : 2);
            bool first = v == 0 && p == 0;  // the first run, generic, is the reference
            run_case(&c, 77, first ? ref : got);
            if (first) continue;
            for (int64_t i = 0; i < MN; i++)
                ck_assert_msg(bits_of(got[i]) == bits_of(ref[i]), "%s: element %lld differs "
                              "from the reference run", case_str(&c), (long long)i);
        }
    }
    tt_set_num_threads(2);
    tt_cpu_set_level(prev);
    free(ref);
    free(got);
}
END_TEST

// With a bias: the same bits as filling C's rows with the bias and accumulating, on every path,
// over shapes with K = 0, 1, over several k blocks, narrow last panels, M = 1 and N = 1, and
// within the accumulation bound of the reference.
START_TEST(test_gemm_bias) {
    static const int64_t bshapes[][3] = {{5, 7, 0},  {1, 9, 4},   {9, 1, 4},  {13, 33, 1},
                                         {37, 47, 53}, {30, 70, 800}, {768, 384, 128}};
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) return;
    tt_cpu_level prev = tt_cpu_set_level(path);
    for (int s = 0; s < (int)(sizeof bshapes / sizeof bshapes[0]); s++) {
        int64_t M = bshapes[s][0], N = bshapes[s][1], K = bshapes[s][2];
        rng_state = 99 + (uint64_t)s;
        double *av = malloc((size_t)(M * K + 1) * sizeof *av);
        double *bv = malloc((size_t)(K * N + 1) * sizeof *bv);
        void *A = operand(TT_K_SRC_F32, M * K, av), *B = operand(TT_K_SRC_BF16, K * N, bv);
        float *bias = malloc((size_t)N * sizeof *bias), *C = malloc((size_t)(M * N) * sizeof *C);
        float *D = malloc((size_t)(M * N) * sizeof *D);
        for (int64_t j = 0; j < N; j++) bias[j] = (float)urand();
        for (int64_t i = 0; i < M * N; i++) C[i] = NAN;
        tt_k_gemm_bias_bf16(M, N, K, A, TT_K_SRC_F32, K, 1, B, TT_K_SRC_BF16, N, 1, bias, C, N);
        for (int64_t i = 0; i < M; i++) memcpy(D + i * N, bias, (size_t)N * sizeof *D);
        tt_k_gemm_bf16(M, N, K, A, TT_K_SRC_F32, K, 1, B, TT_K_SRC_BF16, N, 1, D, N, 1, true);
        double tol = (double)(K + 1) * ldexp(1, -24);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double ref = bias[j], sabs = fabs(ref);
                for (int64_t k = 0; k < K; k++) {
                    ref += av[i * K + k] * bv[k * N + j];
                    sabs += fabs(av[i * K + k] * bv[k * N + j]);
                }
                float got = C[i * N + j];
                ck_assert_msg(bits_of(got) == bits_of(D[i * N + j]), "%s M=%lld N=%lld K=%lld: "
                              "C[%lld, %lld] = %.9g with the bias, %.9g accumulated",
                              tt_cpu_level_name(path), (long long)M, (long long)N,
                              (long long)K, (long long)i, (long long)j, got, D[i * N + j]);
                ck_assert_msg(fabs(got - ref) <= tol * sabs, "%s M=%lld N=%lld K=%lld: C[%lld, "
                              "%lld] = %.9g, expected %.9g", tt_cpu_level_name(path),
                              (long long)M, (long long)N, (long long)K, (long long)i,
                              (long long)j, got, ref);
            }
        free(av);
        free(bv);
        free(A);
        free(B);
        free(bias);
        free(C);
        free(D);
    }
    tt_cpu_set_level(prev);
}
END_TEST

START_TEST(test_abort_negative_size) {
    tt_expect_abort("tt_k_gemm_bf16: negative size M=2 N=-1 K=3");
    float a[6] = {0}, c[2] = {0};
    tt_k_gemm_bf16(2, -1, 3, a, TT_K_SRC_F32, 3, 1, a, TT_K_SRC_F32, 1, 1, c, 1, 1, false);
}
END_TEST

START_TEST(test_abort_operand_type) {
    tt_expect_abort("each must be TT_K_SRC_F32 or TT_K_SRC_BF16");
    float a[4] = {0}, c[4] = {0};
    tt_k_gemm_bf16(2, 2, 1, a, (tt_k_bf16_src)7, 1, 1, a, TT_K_SRC_F32, 2, 1, c, 2, 1, false);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gemm_bf16");
    TCase *cv = tt_tcase("convert");
    tcase_set_timeout(cv, 300);
    tcase_add_test(cv, test_reference_rounding);
    tcase_add_loop_test(cv, test_to_bf16_dense, 0, 4);
    tcase_add_loop_test(cv, test_to_f32_all, 0, 4);
    suite_add_tcase(s, cv);

    TCase *gm = tt_tcase("gemm");
    tcase_set_timeout(gm, 600);
    tcase_add_loop_test(gm, test_gemm_vs_reference, 0, 4);
    tcase_add_loop_test(gm, test_gemm_bias, 0, 4);
    tcase_add_loop_test(gm, test_gemm_bitwise, 0,
                        (int)(sizeof step_shapes / sizeof step_shapes[0]));
    suite_add_tcase(s, gm);

    TCase *ab = tt_tcase_aborts("aborts_bf16");
    tcase_add_test_raise_signal(ab, test_abort_negative_size, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_operand_type, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
