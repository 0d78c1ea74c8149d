// Check suite of the GEMM kernel layer (tensor/kernels/matmul.c, gemm_*.c): every SIMD
// path the CPU has (generic, AVX2, AVX-512, forced by the CPU level of cpu.h) against a naive double-precision reference over
// many shapes (1, primes, tile and block edges +-1, split-K), layouts (NN, NT, TN, TT, strided
// and transposed C) and modes (overwrite, accumulate); bitwise-identical results for 1 and 2
// threads; the SIMD packers byte for byte, and the same bits from every operand layout; the
// batched driver; matrix-vector products (decoding) bit for bit against
// their documented order. tt_matmul's own tests: test_ops_matmul.c.
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/matmul.h"

// Letters: C (M, N) (+)= A (M, K) @ B (K, N).

// ---- helpers ----

static uint64_t rng_state;

static double urand(void) {  // uniform in [-1, 1), xorshift64*
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / (double)(1ull << 53) * 2 - 1;
}

static void *rand_buf(tt_dtype dt, int64_t n) {
    size_t es = dt == TT_F32 ? sizeof(float) : sizeof(double);
    void *p = malloc((size_t)(n > 0 ? n : 1) * es);
    ck_assert_ptr_nonnull(p);
    for (int64_t i = 0; i < n; i++) {
        if (dt == TT_F32) ((float *)p)[i] = (float)urand();
        else ((double *)p)[i] = urand();
    }
    return p;
}

static double get(tt_dtype dt, const void *p, int64_t i) {
    return dt == TT_F32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

static void gemm(tt_dtype dt, int64_t M, int64_t N, int64_t K, const void *A, int64_t a_rs,
                 int64_t a_cs, const void *B, int64_t b_rs, int64_t b_cs, void *C, int64_t c_rs,
                 int64_t c_cs, bool accumulate) {
    if (dt == TT_F32)
        tt_k_gemm_f32(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, c_cs, accumulate);
    else
        tt_k_gemm_f64(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, c_cs, accumulate);
}

// How the operands sit in memory. A: row-major (M, K), or stored (K, M) and read transposed.
// B likewise. C: row-major, column-major (stored (N, M)), or every other column of a (M, 2N)
// buffer (neither stride 1).
typedef enum { C_ROWS, C_COLS, C_STRIDED } c_layout;

typedef struct gemm_case {
    int64_t M, N, K;
    bool ta, tb;
    c_layout cl;
    bool accumulate;
} gemm_case;

static const char *case_str(const gemm_case *c, tt_dtype dt) {
    static char buf[160];
    snprintf(buf, sizeof buf, "%s %s M=%lld N=%lld K=%lld %c%c C=%s %s",
             tt_cpu_level_name(tt_cpu_get_level()), dt == TT_F32 ? "f32" : "f64",
             (long long)c->M, (long long)c->N, (long long)c->K, c->ta ? 't' : 'n',
             c->tb ? 't' : 'n', c->cl == C_ROWS ? "rows" : c->cl == C_COLS ? "cols" : "strided",
             c->accumulate ? "accumulate" : "overwrite");
    return buf;
}

// Runs one case and compares every element of C with the reference in double:
// |C - ref| <= tol (1 + sum_k |a_ik b_kj| + |c0_ij|).
static void check_case(tt_dtype dt, const gemm_case *c, double tol) {
    int64_t M = c->M, N = c->N, K = c->K;
    void *A = rand_buf(dt, M * K), *B = rand_buf(dt, K * N), *C = rand_buf(dt, 2 * M * N);
    int64_t a_rs = c->ta ? 1 : K, a_cs = c->ta ? M : 1;
    int64_t b_rs = c->tb ? 1 : N, b_cs = c->tb ? K : 1;
    int64_t c_rs = c->cl == C_ROWS ? N : c->cl == C_COLS ? 1 : 2 * N;
    int64_t c_cs = c->cl == C_ROWS ? 1 : c->cl == C_COLS ? M : 2;
    double *c0 = malloc((size_t)(M * N + 1) * sizeof *c0);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) c0[i * N + j] = get(dt, C, i * c_rs + j * c_cs);
    // the odd columns of a strided C must stay untouched
    double guard = c->cl == C_STRIDED && M * N > 0 ? get(dt, C, 1) : 0;
    gemm(dt, M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, c_cs, c->accumulate);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = c->accumulate ? c0[i * N + j] : 0, sabs = fabs(s);
            for (int64_t k = 0; k < K; k++) {
                double p = get(dt, A, i * a_rs + k * a_cs) * get(dt, B, k * b_rs + j * b_cs);
                s += p;
                sabs += fabs(p);
            }
            double got = get(dt, C, i * c_rs + j * c_cs);
            ck_assert_msg(fabs(got - s) <= tol * (1 + sabs), "%s: C[%lld, %lld] = %.10g, "
                          "expected %.10g", case_str(c, dt), (long long)i, (long long)j, got, s);
        }
    if (c->cl == C_STRIDED && M * N > 0)
        ck_assert_msg(get(dt, C, 1) == guard, "%s: wrote outside C", case_str(c, dt));
    free(c0);
    free(A);
    free(B);
    free(C);
}

// The paths to test, as CPU levels: every one the machine has (one it lacks is skipped).
static const tt_cpu_level paths[3] = {TT_CPU_GENERIC, TT_CPU_AVX2, TT_CPU_AVX512};

// ---- shapes against the reference ----

// (M, N, K): sizes of 1, primes, the tile edges of every path (MR 4, 6, 12; NR 8, 16, 32 and
// the half-width last panel), KC = 256 and MC = 240 +-1, a second NC block (N > 4096), split-K
// (K > 4096), matrix-vector products in both orientations, products of at most 16 outputs
// (dot products) and just above.
static const int64_t shapes[][3] = {
    {1, 1, 1},     {1, 1, 7},      {2, 3, 1},      {1, 17, 5},     {17, 1, 5},
    {1, 40, 300},  {300, 1, 300},  {5, 7, 11},     {3, 5, 2000},   {12, 32, 8},
    {11, 31, 13},  {13, 33, 13},   {24, 64, 9},    {25, 65, 10},   {6, 16, 3},
    {7, 17, 4},    {5, 9, 6},      {4, 8, 2},      {37, 47, 53},   {23, 15, 255},
    {29, 17, 256}, {31, 48, 257},  {239, 40, 29},  {240, 19, 30},  {241, 33, 31},
    {29, 67, 513}, {100, 65, 128}, {13, 4100, 3},  {9, 20, 4100},  {3, 40, 4500},
    {4, 4, 300},   {3, 6, 40},     {1, 1, 300},    {2, 8, 700},    {16, 1, 3},
};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

// Every shape, in all four operand layouts, both modes, and (in NN) a column-major and a
// strided C; f32 and f64; on the path selected by _i.
START_TEST(test_path_vs_reference) {
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) {
        fprintf(stderr, "test_gemm: skipping the %s path (not supported by this CPU)\n",
                tt_cpu_level_name(path));
        return;
    }
    tt_cpu_level prev = tt_cpu_set_level(path);
    ck_assert_int_eq(tt_cpu_get_level(), path);
    rng_state = 0x1234567 + (uint64_t)_i;
    for (int t = 0; t < 2; t++) {
        tt_dtype dt = t == 0 ? TT_F32 : TT_F64;
        double tol = dt == TT_F32 ? 2e-6 : 1e-14;
        for (int s = 0; s < N_SHAPES; s++) {
            for (int lay = 0; lay < 6; lay++) {
                gemm_case c = {shapes[s][0], shapes[s][1], shapes[s][2], lay & 1, (lay >> 1) & 1,
                               lay < 4 ? C_ROWS : lay == 4 ? C_COLS : C_STRIDED, false};
                for (int acc = 0; acc < 2; acc++) {
                    c.accumulate = acc;
                    check_case(dt, &c, tol);
                }
            }
        }
    }
    tt_cpu_set_level(prev);
}
END_TEST

// Empty products: M or N of 0 touch nothing; K of 0 zeroes C, or leaves it when accumulating.
START_TEST(test_empty_dims) {
    float A[4] = {1, 2, 3, 4}, B[4] = {1, 2, 3, 4}, C[4] = {5, 6, 7, 8};
    tt_k_gemm_f32(0, 2, 2, A, 2, 1, B, 2, 1, C, 2, 1, false);
    tt_k_gemm_f32(2, 0, 2, A, 2, 1, B, 2, 1, C, 2, 1, false);
    ck_assert(C[0] == 5 && C[3] == 8);
    tt_k_gemm_f32(2, 2, 0, A, 2, 1, B, 2, 1, C, 2, 1, true);
    ck_assert(C[0] == 5 && C[3] == 8);
    tt_k_gemm_f32(2, 2, 0, A, 2, 1, B, 2, 1, C, 2, 1, false);
    ck_assert(C[0] == 0 && C[1] == 0 && C[2] == 0 && C[3] == 0);
}
END_TEST

// ---- determinism across thread counts ----

// C from `threads` threads (overwrite, then accumulate once more), into out.
static void run_threads(tt_dtype dt, const gemm_case *c, const void *A, const void *B,
                        void *out, int threads) {
    size_t es = dt == TT_F32 ? sizeof(float) : sizeof(double);
    int64_t a_rs = c->ta ? 1 : c->K, a_cs = c->ta ? c->M : 1;
    int64_t b_rs = c->tb ? 1 : c->N, b_cs = c->tb ? c->K : 1;
    memset(out, 0, (size_t)(c->M * c->N) * es);
    tt_set_num_threads(threads);
    gemm(dt, c->M, c->N, c->K, A, a_rs, a_cs, B, b_rs, b_cs, out, c->N, 1, false);
    gemm(dt, c->M, c->N, c->K, A, a_rs, a_cs, B, b_rs, b_cs, out, c->N, 1, true);
}

// Products large enough to be split between threads, split by rows (M large) and by columns
// (M of a few panels, N large), a split-K product and a second NC block: 1 and 2 threads
// give the same bits, on every path.
START_TEST(test_threads_bitwise) {
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) return;
    tt_cpu_level prev = tt_cpu_set_level(path);
    int saved = tt_get_num_threads();
    static const int64_t big[][3] = {
        {300, 200, 100}, {13, 520, 200}, {18, 520, 200}, {36, 520, 200}, {12, 520, 201},
        {257, 96, 260},  {40, 64, 4200}, {30, 4200, 20},
    };
    rng_state = 99;
    for (int t = 0; t < 2; t++) {
        tt_dtype dt = t == 0 ? TT_F32 : TT_F64;
        size_t es = dt == TT_F32 ? sizeof(float) : sizeof(double);
        for (int s = 0; s < (int)(sizeof big / sizeof big[0]); s++) {
            for (int lay = 0; lay < 4; lay++) {
                gemm_case c = {big[s][0], big[s][1], big[s][2], lay & 1, lay >> 1, C_ROWS, 0};
                void *A = rand_buf(dt, c.M * c.K), *B = rand_buf(dt, c.K * c.N);
                void *c1 = malloc((size_t)(c.M * c.N) * es), *c2 = malloc((size_t)(c.M * c.N) * es);
                run_threads(dt, &c, A, B, c1, 1);
                run_threads(dt, &c, A, B, c2, 2);
                ck_assert_msg(memcmp(c1, c2, (size_t)(c.M * c.N) * es) == 0,
                              "%s: 1 and 2 threads differ", case_str(&c, dt));
                free(A);
                free(B);
                free(c1);
                free(c2);
            }
        }
    }
    tt_set_num_threads(saved);
    tt_cpu_set_level(prev);
}
END_TEST

// ---- matrix-vector products ----

// The documented order of an f32 matrix-vector product (matmul.h): lane l of 8 takes k = l mod
// 8 within each run of TT_K_GEMM_KC steps (a multiply, then an add), the lanes reduced
// pairwise in float, the runs summed in double.
static double ref_dot(const float *a, const float *x, int64_t K) {
    double acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += TT_K_GEMM_KC) {
        float v[8] = {0};
        for (int64_t k = k0; k < K && k < k0 + TT_K_GEMM_KC; k++) v[(k - k0) % 8] += a[k] * x[k];
        acc += (double)(((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])));
    }
    return acc;
}

// The documented order of the contiguous-column form (matmul.c's gemv_cols), y[n] from Wt (K,
// N) row-major and x: per run of TT_K_GEMM_KC steps a float sum updated four steps at a time
// left to right, then the single steps left, the runs summed in double.
static double ref_cols(const float *Wt, int64_t N, int64_t n, const float *x, int64_t K) {
    double acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += TT_K_GEMM_KC) {
        int64_t k1 = K - k0 < TT_K_GEMM_KC ? K : k0 + TT_K_GEMM_KC, k = k0;
        float run = 0;
        for (; k + 4 <= k1; k += 4)
            run = run + Wt[k * N + n] * x[k] + Wt[(k + 1) * N + n] * x[k + 1] +
                  Wt[(k + 2) * N + n] * x[k + 2] + Wt[(k + 3) * N + n] * x[k + 3];
        for (; k < k1; k++) run += Wt[k * N + n] * x[k];
        acc += (double)run;
    }
    return acc;
}

// A Linear's forward at M = 1 (y (1, N) = x (1, K) W^T + bias, W (N, K) row-major: decoding),
// the row form (y (N, 1) = W x) and the contiguous-column form (y (N, 1) = Wt^T x, Wt (K, N)
// row-major: attention's weights times the cached values), that one also accumulating into y:
// on every path, in 1 and 2 threads, the bits of the orders written out above, for row counts
// around the kernels' groups of TT_K_DOT_ROWS rows and 16-row vectors, and K around the runs
// and the 8 lanes.
START_TEST(test_gemv_bitwise) {
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) return;
    tt_cpu_level prev = tt_cpu_set_level(path);
    int saved = tt_get_num_threads();
    static const int64_t Ns[] = {1, 7, 8, 9, 17, 65, 1152};
    static const int64_t Ks[] = {1, 5, 8, 13, 255, 256, 257, 384, 1000};
    rng_state = 7;
    for (size_t in = 0; in < sizeof Ns / sizeof Ns[0]; in++) {
        for (size_t ik = 0; ik < sizeof Ks / sizeof Ks[0]; ik++) {
            int64_t N = Ns[in], K = Ks[ik];
            float *W = rand_buf(TT_F32, N * K), *x = rand_buf(TT_F32, K);
            float *bias = rand_buf(TT_F32, N), *y = malloc((size_t)N * sizeof *y);
            for (int threads = 1; threads <= 2; threads++) {
                tt_set_num_threads(threads);
                // x W^T, x W^T + bias, W x, W^T x and y + W^T x (W read as Wt (K, N))
                for (int form = 0; form < 5; form++) {
                    if (form == 0)
                        tt_k_gemm_f32(1, N, K, x, K, 1, W, 1, K, y, N, 1, false);
                    else if (form == 1)
                        tt_k_gemm_bias_f32(1, N, K, x, K, 1, W, 1, K, bias, y, N);
                    else if (form == 2)
                        tt_k_gemm_f32(N, 1, K, W, K, 1, x, 1, 1, y, 1, 1, false);
                    else {
                        if (form == 4) memcpy(y, bias, (size_t)N * sizeof *y);
                        tt_k_gemm_f32(N, 1, K, W, 1, N, x, 1, 1, y, 1, 1, form == 4);
                    }
                    for (int64_t n = 0; n < N; n++) {
                        // one row (N = 1) takes the dot product's order either way
                        double s =
                            form < 3 || N == 1 ? ref_dot(W + n * K, x, K) : ref_cols(W, N, n, x, K);
                        float want =
                            form == 1 || form == 4 ? (float)((double)bias[n] + s) : (float)s;
                        ck_assert_msg(memcmp(&y[n], &want, sizeof want) == 0,
                                      "path %s, N=%lld K=%lld, form %d, %d threads: y[%lld] = "
                                      "%a, want %a", tt_cpu_level_name(path), (long long)N,
                                      (long long)K, form, threads, (long long)n, y[n], want);
                    }
                }
            }
            free(W);
            free(x);
            free(bias);
            free(y);
        }
    }
    tt_set_num_threads(saved);
    tt_cpu_set_level(prev);
}
END_TEST

// ---- packing ----

// The SIMD packers of each path the CPU has (tt_k_gemm_kernel.pack) against the layout written
// out in C: X (kc, n) with X[k, j] = src[k ks + j js] into ceil(n / w) panels of width w,
// dst[q][k w + j] = X[k, q w + j], zero past n. Both contiguous cases (rows: js == 1, columns:
// ks == 1), positive and negative strides, lines longer than the panel needs, the kernel's
// own widths and others, sizes off every vector and panel edge. Compared byte for byte
// (padding included), and nothing written past the last panel.
static void check_packer(const tt_k_gemm_kernel *kn, tt_dtype dt, int64_t kc, int64_t n, int w,
                         bool rows, bool neg) {
    size_t es = dt == TT_F32 ? sizeof(float) : sizeof(double);
    int64_t pad = 3;                       // the other dim's lines are longer than needed
    int64_t ld = (rows ? n : kc) + pad;    // stride between lines
    int64_t lines = rows ? kc : n;
    char *buf = rand_buf(dt, lines * ld);
    int64_t line = neg ? -ld : ld;         // negative: the last line first
    const char *src = buf + (size_t)(neg ? (lines - 1) * ld : 0) * es;
    int64_t ks = rows ? line : 1, js = rows ? 1 : line;
    int64_t panels = (n + w - 1) / w, size = panels * w * kc;
    char *got = malloc((size_t)(size + 16) * es), *want = malloc((size_t)(size + 16) * es);
    memset(got, 0x5a, (size_t)(size + 16) * es);
    memset(want, 0x5a, (size_t)(size + 16) * es);
    for (int64_t q = 0; q < panels; q++)
        for (int64_t k = 0; k < kc; k++)
            for (int64_t j = 0; j < w; j++) {
                int64_t jj = q * w + j, o = q * w * kc + k * w + j;
                const char *x = src + (size_t)(k * ks + jj * js) * es;  // read only if jj < n
                if (dt == TT_F32) ((float *)want)[o] = jj < n ? *(const float *)x : 0;
                else ((double *)want)[o] = jj < n ? *(const double *)x : 0;
            }
    kn->pack(got, src, ks, js, kc, n, w);
    ck_assert_msg(memcmp(got, want, (size_t)(size + 16) * es) == 0,
                  "%s: pack of X (%lld, %lld) into %d-wide panels, %s contiguous%s: wrong bytes",
                  kn->name, (long long)kc, (long long)n, w, rows ? "rows" : "columns",
                  neg ? ", negative stride" : "");
    free(buf);
    free(got);
    free(want);
}

START_TEST(test_packers) {
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) return;
    rng_state = 0x9ac + (uint64_t)_i;
    static const int64_t sizes[] = {1, 2, 5, 7, 8, 11, 12, 13, 15, 16, 17, 31, 32, 33, 47, 65};
    int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    for (int t = 0; t < 2; t++) {
        tt_dtype dt = t == 0 ? TT_F32 : TT_F64;
        const tt_k_gemm_kernel *kn = path == TT_CPU_GENERIC ? (t ? &tt_k_gemm_generic_f64
                                                                    : &tt_k_gemm_generic_f32)
                                     : path == TT_CPU_AVX2 ? (t ? &tt_k_gemm_avx2_f64
                                                                   : &tt_k_gemm_avx2_f32)
                                     : (t ? &tt_k_gemm_avx512_f64 : &tt_k_gemm_avx512_f32);
        if (!kn->pack) continue;  // this path packs with the driver's code
        int widths[] = {kn->mr, kn->nr, kn->nr / 2, 1, 5, 20};
        for (int wi = 0; wi < 6; wi++)
            for (int a = 0; a < nsizes; a++)
                for (int b = 0; b < nsizes; b++)
                    for (int m = 0; m < 4; m++)
                        check_packer(kn, dt, sizes[a], sizes[b], widths[wi], m & 1, m >> 1);
        check_packer(kn, dt, 256, 240, kn->mr, false, false);  // a full A block
        check_packer(kn, dt, 256, 100, kn->nr, true, true);
    }
}
END_TEST

// The same products with operands stored in every way the packers distinguish: rows or columns
// contiguous (the SIMD packers' two cases), each also read backwards (negative stride), and
// neither contiguous (the driver's C packing, the reference). The packed panels, hence every
// bit of C, must be the same, on every path.
enum { ST_ROWS, ST_COLS, ST_ROWS_REV, ST_COLS_REV, ST_STRIDED, ST_COUNT };

// Stores X (r, c), given row-major in x, as `how` into *buf; returns the pointer and strides
// that read it back as X.
static const void *store_as(tt_dtype dt, const void *x, int64_t r, int64_t c, int how,
                            void **buf, int64_t *rs, int64_t *cs) {
    size_t es = dt == TT_F32 ? sizeof(float) : sizeof(double);
    int64_t n = 4 * r * c;
    char *p = malloc((size_t)n * es);
    *buf = p;
    int64_t base = 0;
    switch (how) {
        case ST_ROWS: *rs = c, *cs = 1; break;
        case ST_COLS: *rs = 1, *cs = r; break;
        case ST_ROWS_REV: *rs = -c, *cs = 1, base = (r - 1) * c; break;
        case ST_COLS_REV: *rs = 1, *cs = -r, base = (c - 1) * r; break;
        default: *rs = 2, *cs = 2 * r + 1; break;  // neither stride 1
    }
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            memcpy(p + (size_t)(base + i * *rs + j * *cs) * es,
                   (const char *)x + (size_t)(i * c + j) * es, es);
    return p + (size_t)base * es;
}

START_TEST(test_pack_layouts_bitwise) {
    tt_cpu_level path = paths[_i];
    if (path > tt_cpu_max_level()) return;
    tt_cpu_level prev = tt_cpu_set_level(path);
    static const int64_t shp[][3] = {
        {13, 17, 7},  {25, 33, 16},  {37, 47, 29},  {12, 32, 17}, {11, 65, 2},
        {241, 40, 31}, {50, 100, 257}, {6, 20, 1},   {130, 70, 300},
    };
    rng_state = 0x51ab + (uint64_t)_i;
    for (int t = 0; t < 2; t++) {
        tt_dtype dt = t == 0 ? TT_F32 : TT_F64;
        size_t es = dt == TT_F32 ? sizeof(float) : sizeof(double);
        for (int s = 0; s < (int)(sizeof shp / sizeof shp[0]); s++) {
            int64_t M = shp[s][0], N = shp[s][1], K = shp[s][2];
            void *a = rand_buf(dt, M * K), *b = rand_buf(dt, K * N);
            void *ref = malloc((size_t)(M * N) * es), *c = malloc((size_t)(M * N) * es);
            void *ab, *bb;
            int64_t ars, acs, brs, bcs;
            const void *A = store_as(dt, a, M, K, ST_STRIDED, &ab, &ars, &acs);
            const void *B = store_as(dt, b, K, N, ST_STRIDED, &bb, &brs, &bcs);
            gemm(dt, M, N, K, A, ars, acs, B, brs, bcs, ref, N, 1, false);
            free(ab);
            free(bb);
            for (int ha = 0; ha < ST_COUNT; ha++)
                for (int hb = 0; hb < ST_COUNT; hb++) {
                    A = store_as(dt, a, M, K, ha, &ab, &ars, &acs);
                    B = store_as(dt, b, K, N, hb, &bb, &brs, &bcs);
                    gemm(dt, M, N, K, A, ars, acs, B, brs, bcs, c, N, 1, false);
                    ck_assert_msg(memcmp(c, ref, (size_t)(M * N) * es) == 0,
                                  "%s %s M=%lld N=%lld K=%lld: A stored %d, B stored %d: C "
                                  "differs from the strided operands' C",
                                  tt_cpu_level_name(path), t ? "f64" : "f32", (long long)M,
                                  (long long)N, (long long)K, ha, hb);
                    free(ab);
                    free(bb);
                }
            free(a);
            free(b);
            free(ref);
            free(c);
        }
    }
    tt_cpu_set_level(prev);
}
END_TEST

// ---- batched driver ----

// Attention's scores: 4 x 4 heads of (T, HS) @ (HS, T), the right operand a transposed view:
// a stack of small products run one per thread. Against the reference per matrix, and the
// same bits for 1 and 2 threads.
START_TEST(test_batched_stack) {
    int64_t Bt = 4, NH = 4, T = 64, HS = 33;
    rng_state = 7;
    float *q = rand_buf(TT_F32, Bt * NH * T * HS), *k = rand_buf(TT_F32, Bt * NH * T * HS);
    float *att1 = malloc((size_t)(Bt * NH * T * T) * sizeof(float));
    float *att2 = malloc((size_t)(Bt * NH * T * T) * sizeof(float));
    // q (B, NH, T, HS) @ k^T: k (B, NH, T, HS) read as (B, NH, HS, T)
    tt_k_matrix mq = {.data = q, .rs = HS, .cs = 1, .bs = {NH * T * HS, T * HS}};
    tt_k_matrix mk = {.data = k, .rs = 1, .cs = HS, .bs = {NH * T * HS, T * HS}};
    tt_k_matrix m1 = {.data = att1, .rs = T, .cs = 1, .bs = {NH * T * T, T * T}};
    tt_k_matrix m2 = {.data = att2, .rs = T, .cs = 1, .bs = {NH * T * T, T * T}};
    int saved = tt_get_num_threads();
    tt_set_num_threads(1);
    tt_k_gemm_batched(TT_F32, 2, (int64_t[]){Bt, NH}, T, T, HS, &mq, &mk, &m1, false);
    tt_set_num_threads(2);
    tt_k_gemm_batched(TT_F32, 2, (int64_t[]){Bt, NH}, T, T, HS, &mq, &mk, &m2, false);
    tt_set_num_threads(saved);
    ck_assert(memcmp(att1, att2, (size_t)(Bt * NH * T * T) * sizeof(float)) == 0);
    for (int64_t b = 0; b < Bt * NH; b++)
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < T; j++) {
                double s = 0, sabs = 0;
                for (int64_t h = 0; h < HS; h++) {
                    double p = (double)q[(b * T + i) * HS + h] * k[(b * T + j) * HS + h];
                    s += p;
                    sabs += fabs(p);
                }
                ck_assert_close(att1[(b * T + i) * T + j], s, 2e-6 * (1 + sabs), 0);
            }
    free(q);
    free(k);
    free(att1);
    free(att2);
}
END_TEST

// got against sum_i x[i xs] y[i ys] (i < n) in double, to 2e-6 of the sum of |terms|.
static void check_dot(float got, const float *x, int64_t xs, const float *y, int64_t ys,
                      int64_t n) {
    double s = 0, sabs = 0;
    for (int64_t i = 0; i < n; i++) {
        double t = (double)x[i * xs] * y[i * ys];
        s += t;
        sabs += fabs(t);
    }
    ck_assert_close(got, s, 2e-6 * (1 + sabs), 0);
}

// Decoding's attention: one query against NH heads of cached keys (S of L positions, a
// transposed view), then the weights against the values: one-row products shared out between
// the threads by the elements they read. Against the reference, the same bits for 1 and 2
// threads.
START_TEST(test_batched_gemv) {
    int64_t NH = 12, L = 160, S = 100, HS = 64;
    rng_state = 11;
    float *q = rand_buf(TT_F32, NH * HS), *k = rand_buf(TT_F32, NH * L * HS);
    float *v = rand_buf(TT_F32, NH * L * HS), *p = rand_buf(TT_F32, NH * S);
    float *out[2][2];  // [threads - 1][scores, values]
    tt_k_matrix mq = {.data = q, .rs = HS, .cs = 1, .bs = {HS}};
    tt_k_matrix mk = {.data = k, .rs = 1, .cs = HS, .bs = {L * HS}};  // (HS, S) views
    tt_k_matrix mp = {.data = p, .rs = S, .cs = 1, .bs = {S}};
    tt_k_matrix mv = {.data = v, .rs = HS, .cs = 1, .bs = {L * HS}};  // (S, HS)
    int saved = tt_get_num_threads();
    for (int t = 0; t < 2; t++) {
        out[t][0] = malloc((size_t)(NH * S) * sizeof(float));
        out[t][1] = malloc((size_t)(NH * HS) * sizeof(float));
        tt_k_matrix ms = {.data = out[t][0], .rs = S, .cs = 1, .bs = {S}};
        tt_k_matrix mo = {.data = out[t][1], .rs = HS, .cs = 1, .bs = {HS}};
        tt_set_num_threads(t + 1);
        tt_k_gemm_batched(TT_F32, 1, (int64_t[]){NH}, 1, S, HS, &mq, &mk, &ms, false);
        tt_k_gemm_batched(TT_F32, 1, (int64_t[]){NH}, 1, HS, S, &mp, &mv, &mo, false);
    }
    tt_set_num_threads(saved);
    ck_assert(memcmp(out[0][0], out[1][0], (size_t)(NH * S) * sizeof(float)) == 0);
    ck_assert(memcmp(out[0][1], out[1][1], (size_t)(NH * HS) * sizeof(float)) == 0);
    for (int64_t h = 0; h < NH; h++) {
        for (int64_t j = 0; j < S; j++)  // scores: q . k[j]
            check_dot(out[0][0][h * S + j], q + h * HS, 1, k + (h * L + j) * HS, 1, HS);
        for (int64_t d = 0; d < HS; d++)  // values: sum_j p[j] v[j, d]
            check_dot(out[0][1][h * HS + d], p + h * S, 1, v + h * L * HS + d, HS, S);
    }
    for (int t = 0; t < 2; t++) free(out[t][0]), free(out[t][1]);
    free(q);
    free(k);
    free(v);
    free(p);
}
END_TEST

// A reduction over a broadcast batch dim (C's batch stride 0), with products big enough to be
// threaded inside: summed into C in batch order, the same bits for 1 and 2 threads.
START_TEST(test_batched_reduce) {
    int64_t nb = 3, M = 70, N = 90, K = 300;
    rng_state = 11;
    float *a = rand_buf(TT_F32, nb * M * K), *b = rand_buf(TT_F32, nb * K * N);
    float *c1 = calloc((size_t)(M * N), sizeof(float));
    float *c2 = calloc((size_t)(M * N), sizeof(float));
    // a (nb, M, K) stored (nb, K, M): its batch dim cannot fold into K
    tt_k_matrix ma = {.data = a, .rs = 1, .cs = M, .bs = {M * K}};
    tt_k_matrix mb = {.data = b, .rs = N, .cs = 1, .bs = {K * N}};
    tt_k_matrix mc1 = {.data = c1, .rs = N, .cs = 1, .bs = {0}};
    tt_k_matrix mc2 = {.data = c2, .rs = N, .cs = 1, .bs = {0}};
    int saved = tt_get_num_threads();
    tt_set_num_threads(1);
    tt_k_gemm_batched(TT_F32, 1, (int64_t[]){nb}, M, N, K, &ma, &mb, &mc1, true);
    tt_set_num_threads(2);
    tt_k_gemm_batched(TT_F32, 1, (int64_t[]){nb}, M, N, K, &ma, &mb, &mc2, true);
    tt_set_num_threads(saved);
    ck_assert(memcmp(c1, c2, (size_t)(M * N) * sizeof(float)) == 0);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, sabs = 0;
            for (int64_t q = 0; q < nb; q++)
                for (int64_t h = 0; h < K; h++) {
                    double p = (double)a[q * M * K + h * M + i] * b[q * K * N + h * N + j];
                    s += p;
                    sabs += fabs(p);
                }
            ck_assert_close(c1[i * N + j], s, 2e-6 * (1 + sabs), 0);
        }
    free(a);
    free(b);
    free(c1);
    free(c2);
}
END_TEST

// ---- abort messages name the function the user called and the valid range ----

START_TEST(test_names_nbatch_range) {
    tt_expect_abort("tt_k_gemm_batched: nbatch 9 out of range; valid values are 0 .. "
                    "TT_MAX_DIMS = 8");
    float a = 1, b = 1, c = 0;
    int64_t batch[TT_MAX_DIMS + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tt_k_matrix ma = {.data = &a, .rs = 1, .cs = 1}, mb = {.data = &b, .rs = 1, .cs = 1};
    tt_k_matrix mc = {.data = &c, .rs = 1, .cs = 1};
    tt_k_gemm_batched(TT_F32, TT_MAX_DIMS + 1, batch, 1, 1, 1, &ma, &mb, &mc, false);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gemm");
    TCase *tc = tt_tcase("paths");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_path_vs_reference, 0, 3);
    tcase_add_test(tc, test_empty_dims);
    tcase_add_loop_test(tc, test_packers, 0, 3);
    tcase_add_loop_test(tc, test_pack_layouts_bitwise, 0, 3);
    suite_add_tcase(s, tc);

    TCase *th = tt_tcase("threads");
    tcase_set_timeout(th, 600);
    tcase_add_loop_test(th, test_threads_bitwise, 0, 3);
    tcase_add_test(th, test_batched_stack);
    tcase_add_test(th, test_batched_gemv);
    tcase_add_test(th, test_batched_reduce);
    suite_add_tcase(s, th);

    // ---- matrix-vector products (decoding) ----
    TCase *mv = tt_tcase("gemv");
    tcase_add_loop_test(mv, test_gemv_bitwise, 0, 3);
    suite_add_tcase(s, mv);

    TCase *an = tt_tcase_aborts("aborts_names");
    tcase_add_test_raise_signal(an, test_names_nbatch_range, SIGABRT);
    suite_add_tcase(s, an);
    return tt_test_run(s);
}
