// Check suite of the bf16 GEMM's SIMD cast-and-pack kernels (tensor/kernels/bf16_avx512.c,
// through the tt_k_bf16_kernel tables of bf16.h): every SIMD packer against the portable one,
// word for word, over panel widths, odd kc and n, both contiguous layouts, f32 and bf16
// sources, on inputs with subnormals, NaNs, infinities and rounding ties; and the bf16 GEMM
// on every path with subnormal inputs: f32 operands (rounded while packed) against the same
// operands rounded first by the scalar reference, bit for bit, including subnormals that round
// up to the smallest normal bf16 and meet large factors (a packer that flushed subnormals to
// zero would change those sums); across paths, the same bits when the subnormals meet
// factors near 1 (their products, kept or taken as zero, vanish in the sums).
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tensor/kernels/bf16.h"
#include "tensor/kernels/cpu.h"

static uint64_t rng_state;

static uint64_t rng_u64(void) { return tt_test_xorshift(&rng_state); }

static float urand(void) {  // uniform in [-1, 1)
    return (float)tt_test_urand(&rng_state);
}

static float f32_of(uint32_t u) { return tt_test_f32_of(u); }
static uint32_t bits_of(float x) { return tt_test_bits_of(x); }

// ---- edge values ----

// Not subnormal: zeros, infinities, NaNs (quiet, signalling, with payloads; one whose
// rounding would carry into the exponent if it were rounded as a number), the largest float
// (rounds to inf), ties to even down and up, a tie at the largest finite bf16 (to inf), the
// smallest normal and a tie just above it.
static const uint32_t plain_edges[] = {
    0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc12345u,
    0x7f800001u, 0xff80ffffu, 0x7fbfffffu, 0x7f7fffffu, 0xff7fffffu, 0x3f808000u,
    0xbf818000u, 0x7f7f8000u, 0x00800000u, 0x80808000u, 0x3f80ffffu, 0x4000c000u,
};
// Subnormal: the smallest, ties that round to zero and to the smallest bf16 subnormal, the
// middle, and the band (|u| >= 0x007f8000) that rounds up to the smallest normal bf16.
static const uint32_t subnormal_edges[] = {
    0x00000001u, 0x80000001u, 0x00008000u, 0x00018000u, 0x003fffffu, 0x80400000u,
    0x007f7fffu, 0x007f8000u, 0x807f8000u, 0x007fffffu, 0x807fffffu, 0x00123456u,
};
#define N_PLAIN (int)(sizeof plain_edges / sizeof plain_edges[0])
#define N_SUB (int)(sizeof subnormal_edges / sizeof subnormal_edges[0])

static bool is_subnormal(uint32_t u) { return (u & 0x7f800000u) == 0 && (u & 0x007fffffu); }

// A random subnormal: one of the edges or any fraction.
static uint32_t random_subnormal(void) {
    uint64_t r = rng_u64();
    if (r & 1) return subnormal_edges[(r >> 1) % N_SUB];
    return (uint32_t)((r >> 8) % 0x007fffffu + 1) | (r & 2 ? 0x80000000u : 0);
}

// ---- the packers against the portable one ----

// The SIMD packers of this build, with the CPU level that must be available to run them.
static const struct {
    tt_cpu_level path;
    const tt_k_bf16_kernel *kern;
} simd[] = {{TT_CPU_AVX512, &tt_k_bf16_avx512}, {TT_CPU_AVX512BF16, &tt_k_bf16_avx512bf16}};
#define N_SIMD (int)(sizeof simd / sizeof simd[0])

// How the values of a packer case are drawn.
typedef enum {
    VALS_PLAIN,       // uniform in [-1, 1)
    VALS_EDGES,       // one in 5 a plain edge (no subnormal)
    VALS_SUBNORMALS,  // one in 5 an edge, subnormal or not
    VALS_ONE_SUB,     // uniform, and one subnormal somewhere in the block
    VALS_COUNT
} vals_kind;

// The buffers of check_pack, kept between calls (fresh allocations for each of thousands of
// cases cost more in page faults than the packing).
#define PACK_MAX ((384 + 5) * 240)
static float pack_f32[PACK_MAX];
static tt_bf16 pack_bf16[PACK_MAX];
static uint32_t pack_got[PACK_MAX], pack_want[PACK_MAX];

// Packs X (kc, n) from a buffer laid out as `lines` says (X's columns contiguous, lines
// kc + 5 apart, in reverse order when `reverse`; else rows n + 3 apart), with `pk` and the
// portable packer, and compares every word of every panel (the padding between panels is
// never read: not compared).
static void check_pack(const char *name, tt_k_bf16_packer pk, tt_k_bf16_src type, bool lines,
                       bool reverse, int64_t kc, int64_t n, int w, vals_kind vk) {
    int64_t ld = lines ? kc + 5 : n + 3, outer = lines ? n : kc;
    int64_t len = ld * outer;
    ck_assert(len <= PACK_MAX);
    float *f = pack_f32;
    tt_bf16 *h = pack_bf16;
    for (int64_t i = 0; i < len; i++) {
        uint32_t u = bits_of(urand());
        uint64_t r = rng_u64();
        if (vk == VALS_EDGES && r % 5 == 0) u = plain_edges[(r >> 8) % N_PLAIN];
        if (vk == VALS_SUBNORMALS && r % 5 == 0)
            u = r & 256 ? random_subnormal() : plain_edges[(r >> 9) % N_PLAIN];
        f[i] = f32_of(u);
    }
    int64_t ks = lines ? 1 : ld, js = lines ? ld : 1, origin = 0;
    if (reverse) {  // line j at f + (n - 1 - j) ld: a negative stride between lines
        js = -ld;
        origin = (n - 1) * ld;
    }
    if (vk == VALS_ONE_SUB) {  // an element of X, not of the gaps between its lines or rows
        int64_t k = (int64_t)(rng_u64() % (uint64_t)kc), j = (int64_t)(rng_u64() % (uint64_t)n);
        f[origin + k * ks + j * js] = f32_of(random_subnormal());
    }
    for (int64_t i = 0; i < len; i++) h[i] = tt_bf16_from_f32(f[i]);
    const void *src =
        type == TT_K_SRC_F32 ? (const void *)(f + origin) : (const void *)(h + origin);
    int64_t panel = tt_k_bf16_panel(kc, w), np = (n + w - 1) / w;
    ck_assert(panel * np <= PACK_MAX);
    uint32_t *got = pack_got, *want = pack_want;
    memset(got, 0xa5, (size_t)(panel * np) * sizeof *got);
    tt_k_bf16_pack_generic(want, src, type, ks, js, kc, n, w);
    pk(got, src, type, ks, js, kc, n, w);
    int64_t kp = (kc + 1) / 2;
    for (int64_t q = 0; q < np; q++)
        for (int64_t p = 0; p < kp; p++)
            for (int c = 0; c < w; c++) {
                int64_t at = q * panel + p * w + c;
                if (got[at] != want[at])  // (a ck_assert per word would cost a write each)
                    ck_abort_msg(
                        "%s packer, %s %s%s kc=%lld n=%lld w=%d "
                        "values %d: panel %lld pair %lld column %d = 0x%08x, the portable "
                        "packer's 0x%08x",
                        name, type == TT_K_SRC_F32 ? "f32" : "bf16", lines ? "lines" : "rows",
                        reverse ? " reversed" : "", (long long)kc, (long long)n, w, (int)vk,
                        (long long)q, (long long)p, c, got[at], want[at]);
            }
}

// kc: odd and even around the 32-step blocks of the line packer and KC; n: around the panel
// widths and the 16-line blocks, and an A block (240 lines).
static const int64_t pack_kcs[] = {1, 2, 3, 8, 31, 32, 33, 63, 64, 65, 200, 383, 384};
static const int64_t pack_ns[] = {1, 5, 11, 12, 13, 16, 17, 24, 31, 32, 33, 47, 64, 100, 240};
#define N_KCS (int)(sizeof pack_kcs / sizeof pack_kcs[0])
#define N_NS (int)(sizeof pack_ns / sizeof pack_ns[0])

// _i: the SIMD packer; every kc, n, the driver's panel widths (12, 32) and another, both
// layouts (lines also reversed), f32 and bf16 sources, every kind of values.
START_TEST(test_pack_vs_portable) {
    if (simd[_i].path > tt_cpu_max_level()) return;
    const tt_k_bf16_kernel *kn = simd[_i].kern;
    ck_assert(kn->pack != NULL);
    static const int widths[] = {12, 32, 16};
    rng_state = 0xbf16u + (uint64_t)_i;
    for (int a = 0; a < N_KCS; a++)
        for (int b = 0; b < N_NS; b++)
            for (int wi = 0; wi < 3; wi++)
                for (int lay = 0; lay < 3; lay++)
                    for (int vk = 0; vk < VALS_COUNT; vk++) {
                        // bf16 sources (copied bits) once per shape, with edge values
                        tt_k_bf16_src t =
                            vk == VALS_EDGES && wi == 0 ? TT_K_SRC_BF16 : TT_K_SRC_F32;
                        check_pack(kn->name, kn->pack, t, lay > 0, lay == 2, pack_kcs[a],
                                   pack_ns[b], widths[wi], (vals_kind)vk);
                    }
}
END_TEST

// ---- the GEMM with subnormal inputs ----

static const tt_cpu_level paths[4] = {TT_CPU_GENERIC, TT_CPU_AVX2, TT_CPU_AVX512,
                                        TT_CPU_AVX512BF16};

// C (M, N) = A (M, K) B (K, N), A stored (K, M) when ta, B stored (N, K) when tb; operands f32
// or bf16 as given (the same buffers either way: fa/ha and fb/hb).
static void product(int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool bf16, const float *fa,
                    const tt_bf16 *ha, const float *fb, const tt_bf16 *hb, float *C) {
    int64_t a_rs = ta ? 1 : K, a_cs = ta ? M : 1, b_rs = tb ? 1 : N, b_cs = tb ? K : 1;
    tt_k_bf16_src t = bf16 ? TT_K_SRC_BF16 : TT_K_SRC_F32;
    tt_k_gemm_bf16(M, N, K, bf16 ? (const void *)ha : (const void *)fa, t, a_rs, a_cs,
                   bf16 ? (const void *)hb : (const void *)fb, t, b_rs, b_cs, C, N, 1, false);
}

// A (M, K) and B (K, N) in [-1, 1), one element in 8 of each a random subnormal; when `large`,
// columns k = 3 and K - 2 of A are all subnormal (half of them in the band that rounds up to
// 2^-126) and rows 3 and K - 2 of B are +-2^110 .. 2^111, so 2^-126 times them is 2^-16 ..
// 2^-15 in every sum (sums near 1: visible), while vdpbf16ps takes a subnormal bf16 as zero.
static void subnormal_operands(int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool large,
                               float *fa, tt_bf16 *ha, float *fb, tt_bf16 *hb) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++) {
            uint32_t u = rng_u64() % 8 == 0 ? random_subnormal() : bits_of(urand());
            if (large && (k == 3 || k == K - 2))
                u = rng_u64() & 1 ? 0x007f8000u + (uint32_t)(rng_u64() % 0x8000u)
                                  : random_subnormal();
            if (large && (k == 3 || k == K - 2) && rng_u64() & 1) u |= 0x80000000u;
            fa[ta ? k * M + i : i * K + k] = f32_of(u);
        }
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) {
            float x = rng_u64() % 8 == 0 ? f32_of(random_subnormal()) : urand();
            if (large && (k == 3 || k == K - 2)) x = ldexpf(1 + fabsf(x), 110) * (x < 0 ? -1 : 1);
            fb[tb ? j * K + k : k * N + j] = x;
        }
    for (int64_t i = 0; i < M * K; i++) ha[i] = tt_bf16_from_f32(fa[i]);
    for (int64_t i = 0; i < K * N; i++) hb[i] = tt_bf16_from_f32(fb[i]);
}

// Shapes: odd K and N, several KC blocks, a narrow last panel, and the 16-line and 32-step
// blocks of the line packer.
static const int64_t sub_shapes[][3] = {
    {37, 45, 67}, {13, 33, 385}, {100, 70, 33}, {61, 17, 130}, {25, 96, 800},
};
#define N_SUB_SHAPES (int)(sizeof sub_shapes / sizeof sub_shapes[0])

// _i: the shape. On every path and layout: A, B in f32 (rounded while packed) give the same
// bits as the same operands rounded first by tt_bf16_from_f32, with and without the large
// factors; and, without them, every path gives the generic path's bits.
START_TEST(test_gemm_subnormal_inputs) {
    int64_t M = sub_shapes[_i][0], N = sub_shapes[_i][1], K = sub_shapes[_i][2];
    float *fa = malloc((size_t)(M * K) * sizeof *fa), *fb = malloc((size_t)(K * N) * sizeof *fb);
    tt_bf16 *ha = malloc((size_t)(M * K) * sizeof *ha), *hb = malloc((size_t)(K * N) * sizeof *hb);
    float *ref = malloc((size_t)(M * N) * sizeof *ref), *c1 = malloc((size_t)(M * N) * sizeof *c1);
    float *c2 = malloc((size_t)(M * N) * sizeof *c2);
    ck_assert(fa && fb && ha && hb && ref && c1 && c2);
    tt_cpu_level prev = tt_cpu_get_level();
    tt_set_num_threads(2);
    for (int lay = 0; lay < 4; lay++)
        for (int large = 0; large < 2; large++) {
            bool ta = lay & 1, tb = lay >> 1;
            rng_state = 0x5eedu + (uint64_t)(_i * 8 + lay * 2 + large);
            subnormal_operands(M, N, K, ta, tb, large, fa, ha, fb, hb);
            for (int p = 0; p < 4; p++) {
                if (paths[p] > tt_cpu_max_level()) continue;
                tt_cpu_set_level(paths[p]);
                product(M, N, K, ta, tb, false, fa, ha, fb, hb, c1);
                product(M, N, K, ta, tb, true, fa, ha, fb, hb, c2);
                for (int64_t e = 0; e < M * N; e++)
                    if (bits_of(c1[e]) != bits_of(c2[e]))
                        ck_abort_msg(
                            "%s M=%lld N=%lld K=%lld "
                            "%c%c%s: C[%lld] = %.9g from f32 operands, %.9g from bf16",
                            tt_cpu_level_name(paths[p]), (long long)M, (long long)N, (long long)K,
                            ta ? 't' : 'n', tb ? 't' : 'n', large ? " large" : "", (long long)e,
                            c1[e], c2[e]);
                if (large) continue;
                if (p == 0) memcpy(ref, c1, (size_t)(M * N) * sizeof *ref);
                for (int64_t e = 0; e < M * N; e++)
                    if (bits_of(c1[e]) != bits_of(ref[e]))
                        ck_abort_msg(
                            "%s M=%lld N=%lld K=%lld "
                            "%c%c: C[%lld] = %.9g, the generic path's %.9g",
                            tt_cpu_level_name(paths[p]), (long long)M, (long long)N, (long long)K,
                            ta ? 't' : 'n', tb ? 't' : 'n', (long long)e, c1[e], ref[e]);
            }
        }
    tt_cpu_set_level(prev);
    free(fa);
    free(fb);
    free(ha);
    free(hb);
    free(ref);
    free(c1);
    free(c2);
}
END_TEST

// The large factors make the band visible: with A's band entries replaced by zero (what a
// packer that flushed subnormals would pack), the vdpbf16ps product changes. Without this the
// previous test could not tell such a packer from a correct one.
START_TEST(test_gemm_band_visible) {
    int64_t M = 37, N = 45, K = 67;
    float *fa = malloc((size_t)(M * K) * sizeof *fa), *fb = malloc((size_t)(K * N) * sizeof *fb);
    tt_bf16 *ha = malloc((size_t)(M * K) * sizeof *ha), *hb = malloc((size_t)(K * N) * sizeof *hb);
    float *c1 = malloc((size_t)(M * N) * sizeof *c1), *c2 = malloc((size_t)(M * N) * sizeof *c2);
    ck_assert(fa && fb && ha && hb && c1 && c2);
    rng_state = 0xba4du;
    subnormal_operands(M, N, K, false, false, true, fa, ha, fb, hb);
    tt_cpu_level prev = tt_cpu_get_level();
    tt_cpu_level best =
        (TT_CPU_AVX512BF16 <= tt_cpu_max_level()) ? TT_CPU_AVX512BF16 : TT_CPU_GENERIC;
    tt_cpu_set_level(best);
    product(M, N, K, false, false, true, fa, ha, fb, hb, c1);
    for (int64_t i = 0; i < M * K; i++)
        if (is_subnormal(bits_of(fa[i]))) ha[i] = (tt_bf16)(ha[i] & 0x8000u);
    product(M, N, K, false, false, true, fa, ha, fb, hb, c2);
    int64_t differ = 0;
    for (int64_t e = 0; e < M * N; e++) differ += bits_of(c1[e]) != bits_of(c2[e]);
    ck_assert_msg(differ > M * N / 2, "%s: only %lld of %lld elements change",
                  tt_cpu_level_name(best), (long long)differ, (long long)(M * N));
    tt_cpu_set_level(prev);
    free(fa);
    free(fb);
    free(ha);
    free(hb);
    free(c1);
    free(c2);
}
END_TEST

int main(void) {
    Suite *s = suite_create("bf16_pack");
    TCase *pk = tt_tcase("pack");
    tcase_set_timeout(pk, 300);
    tcase_add_loop_test(pk, test_pack_vs_portable, 0, N_SIMD);
    suite_add_tcase(s, pk);
    TCase *gm = tt_tcase("gemm_subnormal");
    tcase_set_timeout(gm, 300);
    tcase_add_loop_test(gm, test_gemm_subnormal_inputs, 0, N_SUB_SHAPES);
    tcase_add_test(gm, test_gemm_band_visible);
    suite_add_tcase(s, gm);
    return tt_test_run(s);
}
