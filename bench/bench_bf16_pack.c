// Throughput of the bf16 GEMM's cast-and-pack kernels (tensor/kernels/bf16_avx512.c): f32
// operands of a mid GPT step's products rounded to bf16 into k-pair panels, per SIMD packer,
// in GB/s of the source read (compare `bench_decode stream 1`), beside a plain read of the
// same bytes; then what a per-step bf16 copy of a weight would change: its two packings from
// f32 against a cast plus two packings from bf16. Prints `bench bf16pack ...` lines; never
// part of `make test`, never an assertion.
//
//   bench_bf16_pack            every case, one thread
//   bench_bf16_pack CASE       one case (fwd_x_A, fwd_W_B, dx_W_B, dW_x_A, dW_dy_B, weights)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "tensor/kernels/bf16.h"
#include "tensor/kernels/cpu.h"

#define TIMED_RUNS 31

// One packing case: X (kc, n) blocks of an operand of `rows` x `cols` f32, as the driver
// (bf16.c) packs them: B's (KC, n) block whole, A's in MC-line blocks.
typedef struct pack_case {
    const char *name;  // the product and the operand
    int64_t rows, cols;  // the operand as stored (row-major)
    bool lines;  // X's columns contiguous (X = the stored matrix transposed), else its rows
    int w;       // panel width: 12 (A) or 32 (B)
    int64_t block;  // lines per packer call (MC 240 for A, the whole width for B)
    tt_k_bf16_src type;  // of the operand's elements
} pack_case;

// Mid step (B*T 2048 rows, C 384, MLP 1536), the MLP's first Linear (W (1536, 384)): the
// forward x W^T packs both operands along their rows (pack_lines), the input gradient dy W
// packs W by rows, the weight gradient dy^T x packs both by rows.
static const pack_case cases[] = {
    {"fwd_x_A", 2048, 384, true, 12, 240, TT_K_SRC_F32},     // x: A^T panels, lines along k
    {"fwd_W_B", 1536, 384, true, 32, 1536, TT_K_SRC_F32},    // B = W^T, lines along k
    {"dx_W_B", 1536, 384, false, 32, 384, TT_K_SRC_F32},     // B = W (K 1536, N 384)
    {"dW_x_A", 2048, 384, false, 12, 240, TT_K_SRC_F32},     // x as A^T: rows of X along M
    {"dW_dy_B", 2048, 1536, false, 32, 1536, TT_K_SRC_F32},  // dy as B: k = the 2048 rows
};
// The weight's two packings from a bf16 copy.
static const pack_case weight_cases[] = {
    {"fwd_W_B_bf16", 1536, 384, true, 32, 1536, TT_K_SRC_BF16},
    {"dx_W_B_bf16", 1536, 384, false, 32, 384, TT_K_SRC_BF16},
};

static const struct {
    tt_cpu_level path;
    const tt_k_bf16_kernel *kern;
} packers[] = {{TT_CPU_AVX512, &tt_k_bf16_avx512},
               {TT_CPU_AVX512BF16, &tt_k_bf16_avx512bf16}};

// Packs the whole operand once, in KC blocks of k and `block`-line blocks.
static void pack_all(const tt_k_bf16_kernel *kn, uint32_t *dst, const void *x,
                     const pack_case *c) {
    size_t es = c->type == TT_K_SRC_BF16 ? 2 : 4;
    // X (K, N): lines -> X = stored^T: k along the stored columns; rows -> X = stored
    int64_t K = c->lines ? c->cols : c->rows, N = c->lines ? c->rows : c->cols;
    int64_t ks = c->lines ? 1 : c->cols, js = c->lines ? c->cols : 1;
    for (int64_t k0 = 0; k0 < K; k0 += TT_K_BF16_KC) {
        int64_t kc = K - k0 < TT_K_BF16_KC ? K - k0 : TT_K_BF16_KC;
        for (int64_t j0 = 0; j0 < N; j0 += c->block) {
            int64_t n = N - j0 < c->block ? N - j0 : c->block;
            kn->pack(dst, (const char *)x + (size_t)(k0 * ks + j0 * js) * es, c->type, ks, js,
                     kc, n, c->w);
        }
    }
}

// The ceiling: the same bytes read in memory order (an XOR of 64-bit words the compiler
// vectorizes), in place of the packer.
static uint64_t read_all(const void *x, int64_t bytes) {
    const uint64_t *u = x;
    uint64_t a[8] = {0};
    for (int64_t i = 0; i + 8 <= bytes / 8; i += 8)
        for (int l = 0; l < 8; l++) a[l] ^= u[i + l];
    return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

static volatile uint64_t sink;

// What time_us times: the packer kn over the case, a plain read of the operand, or its cast to
// bf16 (tt_k_f32_to_bf16 into h).
typedef enum { JOB_PACK, JOB_READ, JOB_CAST } job;

static void run(job jb, const tt_k_bf16_kernel *kn, uint32_t *dst, const void *x, tt_bf16 *h,
                const pack_case *c) {
    int64_t n = c->rows * c->cols;
    if (jb == JOB_PACK) pack_all(kn, dst, x, c);
    else if (jb == JOB_READ) sink ^= read_all(x, n * (c->type == TT_K_SRC_BF16 ? 2 : 4));
    else tt_k_f32_to_bf16(h, x, n);
}

// Microseconds per run of the job over TIMED_RUNS timings of about 2 ms: the median, and the
// best in *best (on a shared machine the best is the least disturbed).
static double time_us(job jb, const tt_k_bf16_kernel *kn, uint32_t *dst, const void *x,
                      tt_bf16 *h, const pack_case *c, double *best) {
    int reps = 1;
    for (;;) {  // the first runs warm up and size the timings
        double t0 = now_s();
        for (int q = 0; q < reps; q++) run(jb, kn, dst, x, h, c);
        if (now_s() - t0 > 0.002) break;
        reps *= 2;
    }
    double us[TIMED_RUNS];
    for (int r = 0; r < TIMED_RUNS; r++) {
        double t0 = now_s();
        for (int q = 0; q < reps; q++) run(jb, kn, dst, x, h, c);
        us[r] = (now_s() - t0) / reps * 1e6;
    }
    double med = median(us, TIMED_RUNS);  // sorts us
    *best = us[0];
    return med;
}

// An operand of n f32 uniform in [-1, 1) (xorshift64*), and a packing buffer for case c.
static float *operand(int64_t n, uint64_t seed) {
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) exit(1);
    for (int64_t e = 0; e < n; e++) {
        seed ^= seed >> 12, seed ^= seed << 25, seed ^= seed >> 27;
        x[e] = (float)((double)((seed * 2685821657736338717ull) >> 40) / 8388608.0 - 1);
    }
    return x;
}

static uint32_t *pack_buffer(const pack_case *c) {
    size_t words = (size_t)(tt_k_bf16_panel(TT_K_BF16_KC, c->w) * ((c->block + c->w - 1) / c->w));
    uint32_t *dst = aligned_alloc(64, (words * 4 + 63) / 64 * 64);
    if (!dst) exit(1);
    return dst;
}

// The best packer this CPU runs.
static const tt_k_bf16_kernel *best_packer(tt_cpu_level *path) {
    for (int p = (int)(sizeof packers / sizeof packers[0]) - 1; p >= 0; p--)
        if (packers[p].path <= tt_cpu_max_level()) {
            *path = packers[p].path;
            return packers[p].kern;
        }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 2) {
        fprintf(stderr, "usage: %s [CASE]\n", argv[0]);
        return 2;
    }
    double best, med;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pack_case *c = &cases[i];
        if (argc == 2 && strcmp(argv[1], c->name) != 0) continue;
        int64_t n = c->rows * c->cols;
        double mb = (double)n * 4 * 1e-3;  // bytes read / 1e3: GB/s = mb / us
        float *x = operand(n, 0x9e3779b97f4a7c15ull + i);
        uint32_t *dst = pack_buffer(c);
        med = time_us(JOB_READ, NULL, dst, x, NULL, c, &best);
        printf("bench bf16pack path=read case=%s mib=%.1f read_gbs=%.1f best_gbs=%.1f\n",
               c->name, (double)n * 4 / 1048576, mb / med, mb / best);
        for (size_t p = 0; p < sizeof packers / sizeof packers[0]; p++) {
            if (packers[p].path > tt_cpu_max_level()) continue;
            med = time_us(JOB_PACK, packers[p].kern, dst, x, NULL, c, &best);
            printf("bench bf16pack path=%s case=%s mib=%.1f read_gbs=%.1f best_gbs=%.1f "
                   "us=%.1f\n", tt_cpu_level_name(packers[p].path), c->name,
                   (double)n * 4 / 1048576, mb / med, mb / best, med);
        }
        fflush(stdout);
        free(x);
        free(dst);
    }
    // A weight packed twice per step (forward, input gradient) from f32, against a per-step
    // bf16 copy: one cast, then two packings from bf16.
    tt_cpu_level path;
    const tt_k_bf16_kernel *kn = best_packer(&path);
    if (kn && (argc == 1 || strcmp(argv[1], "weights") == 0)) {
        const pack_case *fwd = &cases[1], *dx = &cases[2];
        int64_t n = fwd->rows * fwd->cols;
        float *x = operand(n, 0x5bd1e995u);
        tt_bf16 *h = malloc((size_t)n * sizeof *h);
        uint32_t *dst = pack_buffer(fwd), *dst2 = pack_buffer(dx);
        if (!h) return 1;
        tt_k_f32_to_bf16(h, x, n);
        double f32_packs = time_us(JOB_PACK, kn, dst, x, NULL, fwd, &best) +
                           time_us(JOB_PACK, kn, dst2, x, NULL, dx, &best);
        double cast = time_us(JOB_CAST, NULL, NULL, x, h, fwd, &best);
        double bf16_packs = time_us(JOB_PACK, kn, dst, h, NULL, &weight_cases[0], &best) +
                            time_us(JOB_PACK, kn, dst2, h, NULL, &weight_cases[1], &best);
        printf("bench bf16pack weights path=%s w=%lldx%lld f32_packs_us=%.1f cast_us=%.1f "
               "bf16_packs_us=%.1f cached_us=%.1f cached_vs_f32=%.2f\n",
               tt_cpu_level_name(path), (long long)fwd->rows, (long long)fwd->cols,
               f32_packs, cast, bf16_packs, cast + bf16_packs, (cast + bf16_packs) / f32_packs);
        free(x);
        free(h);
        free(dst);
        free(dst2);
    }
    return 0;
}
