// Throughput of the bf16 GEMM's cast-and-pack kernels (tensor/kernels/bf16_avx512.c): f32
// operands of a mid GPT step's products rounded to bf16 into k-pair panels, per SIMD packer,
// in GB/s of f32 read (compare `bench_decode stream 1`). Prints `bench bf16pack ...` lines;
// never part of `make test`, never an assertion.
//
//   bench_bf16_pack            every case, one thread
//   bench_bf16_pack CASE       one case (fwd_x_A, fwd_W_B, dx_W_B, dW_x_A, dW_dy_B)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "tensor/kernels/bf16.h"

#define TIMED_RUNS 31

// One packing case: X (kc, n) blocks of an operand of `rows` x `cols` f32, as the driver
// (bf16.c) packs them: B's (KC, n) block whole, A's in MC-line blocks.
typedef struct pack_case {
    const char *name;  // the product and the operand
    int64_t rows, cols;  // the operand as stored (row-major)
    bool lines;  // X's columns contiguous (X = the stored matrix transposed), else its rows
    int w;       // panel width: 12 (A) or 32 (B)
    int64_t block;  // lines per packer call (MC 240 for A, the whole width for B)
} pack_case;

// Mid step (B*T 2048 rows, C 384, MLP 1536): the forward x W^T packs both operands along
// their rows (pack_lines), the input gradient dy W packs W by rows, the weight gradient
// dy^T x packs both by rows.
static const pack_case cases[] = {
    {"fwd_x_A", 2048, 384, true, 12, 240},      // x (2048, 384): A^T panels, lines along k
    {"fwd_W_B", 1536, 384, true, 32, 1536},     // W (1536, 384): B = W^T, lines along k
    {"dx_W_B", 384, 1536, false, 32, 1536},     // W (384, 1536) as B (K 384, N 1536)
    {"dW_x_A", 2048, 384, false, 12, 240},      // x (2048, 384) as A^T: rows of X along M
    {"dW_dy_B", 2048, 1536, false, 32, 1536},   // dy (2048, 1536) as B: k = the 2048 rows
};

static const struct {
    tt_k_bf16_path path;
    const tt_k_bf16_kernel *kern;
} packers[] = {{TT_K_BF16_AVX512, &tt_k_bf16_avx512},
               {TT_K_BF16_AVX512BF16, &tt_k_bf16_avx512bf16}};

// Packs the whole operand once, in KC blocks of k and `block`-line blocks.
static void pack_all(const tt_k_bf16_kernel *kn, uint32_t *dst, const float *x,
                     const pack_case *c) {
    // X (K, N): lines -> X = stored^T: k along the stored columns; rows -> X = stored
    int64_t K = c->lines ? c->cols : c->rows, N = c->lines ? c->rows : c->cols;
    int64_t ks = c->lines ? 1 : c->cols, js = c->lines ? c->cols : 1;
    for (int64_t k0 = 0; k0 < K; k0 += TT_K_BF16_KC) {
        int64_t kc = K - k0 < TT_K_BF16_KC ? K - k0 : TT_K_BF16_KC;
        for (int64_t j0 = 0; j0 < N; j0 += c->block) {
            int64_t n = N - j0 < c->block ? N - j0 : c->block;
            kn->pack(dst, x + k0 * ks + j0 * js, TT_K_SRC_F32, ks, js, kc, n, c->w);
        }
    }
}

// The ceiling: the same bytes read in memory order (an XOR of 64-bit words the compiler
// vectorizes), in place of the packer.
static uint64_t read_all(const float *x, int64_t n) {
    const uint64_t *u = (const uint64_t *)x;
    uint64_t a[8] = {0};
    for (int64_t i = 0; i + 8 <= n / 2; i += 8)
        for (int l = 0; l < 8; l++) a[l] ^= u[i + l];
    return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

static volatile uint64_t sink;

// GB/s of f32 read over TIMED_RUNS runs of about 2 ms: the median, and the best in *best (on
// a shared machine the best run is the one least disturbed); kn NULL times read_all.
static double time_gbs(const tt_k_bf16_kernel *kn, uint32_t *dst, const float *x,
                       const pack_case *c, double *best) {
    int64_t n = c->rows * c->cols;
    int reps = 1;
    for (;;) {  // the first runs warm up and size the runs
        double t0 = now_s();
        for (int q = 0; q < reps; q++)
            if (kn) pack_all(kn, dst, x, c);
            else sink ^= read_all(x, n);
        if (now_s() - t0 > 0.002) break;
        reps *= 2;
    }
    double gbs[TIMED_RUNS];
    for (int r = 0; r < TIMED_RUNS; r++) {
        double t0 = now_s();
        for (int q = 0; q < reps; q++)
            if (kn) pack_all(kn, dst, x, c);
            else sink ^= read_all(x, n);
        gbs[r] = (double)n * 4 * reps / (now_s() - t0) * 1e-9;
    }
    double med = median(gbs, TIMED_RUNS);  // sorts gbs
    *best = gbs[TIMED_RUNS - 1];
    return med;
}

int main(int argc, char **argv) {
    if (argc > 2) {
        fprintf(stderr, "usage: %s [CASE]\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pack_case *c = &cases[i];
        if (argc == 2 && strcmp(argv[1], c->name) != 0) continue;
        int64_t n = c->rows * c->cols;
        float *x = malloc((size_t)n * sizeof *x);
        size_t words = (size_t)(tt_k_bf16_panel(TT_K_BF16_KC, c->w) *
                                ((c->block + c->w - 1) / c->w));
        uint32_t *dst = aligned_alloc(64, (words * 4 + 63) / 64 * 64);
        if (!x || !dst) return 1;
        uint64_t s = 0x9e3779b97f4a7c15ull + i;
        for (int64_t e = 0; e < n; e++) {  // xorshift64*, uniform in [-1, 1)
            s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
            x[e] = (float)((double)((s * 2685821657736338717ull) >> 40) / 8388608.0 - 1);
        }
        double best, med = time_gbs(NULL, dst, x, c, &best);
        printf("bench bf16pack path=read case=%s mib=%.1f read_gbs=%.1f best_gbs=%.1f\n",
               c->name, (double)n * 4 / 1048576, med, best);
        for (size_t p = 0; p < sizeof packers / sizeof packers[0]; p++) {
            if (!tt_k_bf16_path_supported(packers[p].path)) continue;
            med = time_gbs(packers[p].kern, dst, x, c, &best);
            printf("bench bf16pack path=%s case=%s mib=%.1f read_gbs=%.1f best_gbs=%.1f "
                   "us=%.0f\n", tt_k_bf16_path_name(packers[p].path), c->name,
                   (double)n * 4 / 1048576, med, best, (double)n * 4 / med * 1e-3);
        }
        fflush(stdout);
        free(x);
        free(dst);
    }
    return 0;
}
