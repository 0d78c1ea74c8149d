// The f32 layernorm kernels (tensor/kernels/layernorm.h): on every instruction set (portable,
// AVX2, AVX-512, each forced by the CPU level of cpu.h), forward (y, mean, rstd) and backward (dx, dw, db) against an f64
// emulation of the lane-ordered row sums and the chunked column sums, bit for bit, on rows
// built so that the order of the sums shows (large values cancelling across lanes); the paths
// against each other; 1 and 2 threads; odd N, R not a multiple of a task, w / b / dw / db NULL;
// the values against a plain double layernorm within f32 tolerances; and the op's backward
// adding dx into an existing gradient in place.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/layernorm.h"
#include "tensor/kernels/nn.h"

#define EPS 1e-5

static tt_rng rng;

// Shapes: N = 1, 7, 33, 384, 1000, a multiple of the lanes and one under it; R odd, over a
// task, over a chunk of the dweight sums (64 rows) and not a multiple of it.
static const int64_t shapes[][2] = {{3, 1}, {5, 7}, {17, 33}, {19, 384}, {6, 1000}, {4, 16},
                                    {9, 15}, {40, 48}, {150, 33}, {130, 7}};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

// R rows of N values in [-1, 1) plus offset, with cancel in each row pairs +B, -B (B about
// 2^40) at distinct random places: a double sum of the row depends on its order (the small
// values added while a lane holds B lose bits).
static float *values(int64_t R, int64_t N, double offset, bool cancel) {
    float *v = malloc((size_t)(R * N) * sizeof *v);
    int64_t *at = malloc((size_t)N * sizeof *at);  // a random permutation: distinct places
    ck_assert_ptr_nonnull(v);
    ck_assert_ptr_nonnull(at);
    for (int64_t i = 0; i < R * N; i++) v[i] = (float)(offset + 2 * tt_rng_uniform(&rng) - 1);
    for (int64_t r = 0; cancel && N >= 2 && r < R; r++) {
        for (int64_t i = 0; i < N; i++) at[i] = i;
        for (int64_t i = N - 1; i > 0; i--) {
            int64_t j = (int64_t)(tt_rng_u64(&rng) % (uint64_t)(i + 1)), t = at[i];
            at[i] = at[j];
            at[j] = t;
        }
        for (int64_t k = 0; k < (N + 15) / 16; k++) {
            float big = (float)(1099511627776.0 * (1 + tt_rng_uniform(&rng)));
            v[r * N + at[2 * k]] = big;
            v[r * N + at[2 * k + 1]] = -big;
        }
    }
    free(at);
    return v;
}

static float *copy(const float *v, int64_t n) {
    float *c = malloc((size_t)n * sizeof *c);
    ck_assert_ptr_nonnull(c);
    memcpy(c, v, (size_t)n * sizeof *c);
    return c;
}

// ---- the emulation ----

// The lanes of layernorm.h: l[i mod 16] += v[i] in order from +0, then l[j] += l[j + h] for
// h = 8, 4, 2, 1.
static double lane_sum(const double *v, int64_t n) {
    double l[16] = {0};
    for (int64_t i = 0; i < n; i++) l[i % 16] += v[i];
    for (int h = 8; h >= 1; h /= 2)
        for (int j = 0; j < h; j++) l[j] += l[j + h];
    return l[0];
}

static void emu_forward(float *y, float *mean, float *rstd, const float *x, const float *w,
                        const float *b, int64_t R, int64_t N) {
    double *t = malloc((size_t)N * sizeof *t);
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        for (int64_t i = 0; i < N; i++) t[i] = xr[i];
        double mu = lane_sum(t, N) / (double)N;
        for (int64_t i = 0; i < N; i++) t[i] = (xr[i] - mu) * (xr[i] - mu);
        double rs = 1.0 / sqrt(lane_sum(t, N) / (double)N + EPS);
        float m = (float)mu, rt = (float)rs;
        for (int64_t i = 0; i < N; i++) {
            float v = (xr[i] - m) * rt;
            if (w) v *= w[i];
            if (b) v += b[i];
            y[r * N + i] = v;
        }
        mean[r] = m;
        rstd[r] = rt;
    }
    free(t);
}

static void emu_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, const float *mean, const float *rstd, int64_t R,
                         int64_t N) {
    double *t = malloc((size_t)N * sizeof *t), *u = malloc((size_t)N * sizeof *u);
    for (int64_t r = 0; dx && r < R; r++) {
        const float *xr = x + r * N, *dyr = dy + r * N;
        for (int64_t i = 0; i < N; i++) {
            float dn = w ? dyr[i] * w[i] : dyr[i];
            float xh = (xr[i] - mean[r]) * rstd[r];
            t[i] = dn;
            u[i] = (double)dn * xh;
        }
        float a = (float)(lane_sum(t, N) / (double)N), c = (float)(lane_sum(u, N) / (double)N);
        for (int64_t i = 0; i < N; i++) {
            float xh = (xr[i] - mean[r]) * rstd[r];
            float g = (float)t[i] - a - xh * c;
            dx[r * N + i] += rstd[r] * g;
        }
    }
    for (int64_t i = 0; i < N; i++) {  // each column: chunks of 64 rows in order, then chunks
        double sw = 0, sb = 0;
        for (int64_t r0 = 0; r0 < R; r0 += 64) {
            double cw = 0, cb = 0;
            for (int64_t r = r0; r < R && r < r0 + 64; r++) {
                float xh = (x[r * N + i] - mean[r]) * rstd[r];
                cw += (double)dy[r * N + i] * xh;
                cb += dy[r * N + i];
            }
            sw += cw;
            sb += cb;
        }
        if (dw) dw[i] += (float)sw;
        if (db) db[i] += (float)sb;
    }
    free(t);
    free(u);
}

// ---- helpers ----

static bool same_bits(const float *a, const float *b, int64_t n, const char *what, int isa,
                      int64_t R, int64_t N) {
    if (memcmp(a, b, (size_t)n * sizeof *a) == 0) return true;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof *a)) {
            fprintf(stderr, "%s (%s, R=%lld N=%lld) [%lld]: %.9g, expected %.9g\n", what,
                    tt_cpu_level_name((tt_cpu_level)isa), (long long)R, (long long)N,
                    (long long)i, a[i], b[i]);
            break;
        }
    return false;
}

// Forces isa; false (and nothing forced) when the CPU lacks it.
static bool force_isa(tt_cpu_level isa) {
    if (isa > tt_cpu_max_level()) return false;
    tt_cpu_set_level(isa);
    return true;
}

typedef struct ln_case {
    int64_t R, N;
    float *x, *w, *b, *dy, *dx0, *dw0, *db0;  // dx0, dw0, db0: the starting gradients
} ln_case;

static ln_case make_case(int64_t R, int64_t N, bool cancel) {
    ln_case c = {R, N, values(R, N, 3, cancel), values(1, N, 1, false), values(1, N, 0, false),
                 values(R, N, 0, cancel), values(R, N, 0, false), values(1, N, 0, false),
                 values(1, N, 0, false)};
    return c;
}

static void free_case(ln_case *c) {
    free(c->x), free(c->w), free(c->b), free(c->dy), free(c->dx0), free(c->dw0), free(c->db0);
}

typedef struct ln_out {
    float *y, *mean, *rstd, *dx, *dw, *db;
} ln_out;

// Forward and backward of c on the forced ISA (or the emulation, emu), with w / b present per
// the bits of wb (1: w, 2: b) and dw / db asked for per the bits of grads (1: dx, 2: dw, 4: db).
static ln_out run(const ln_case *c, int wb, int grads, bool emu) {
    int64_t R = c->R, N = c->N;
    const float *w = wb & 1 ? c->w : NULL, *b = wb & 2 ? c->b : NULL;
    ln_out o = {malloc((size_t)(R * N) * sizeof(float)), malloc((size_t)R * sizeof(float)),
                malloc((size_t)R * sizeof(float)), grads & 1 ? copy(c->dx0, R * N) : NULL,
                grads & 2 ? copy(c->dw0, N) : NULL, grads & 4 ? copy(c->db0, N) : NULL};
    if (emu) {
        emu_forward(o.y, o.mean, o.rstd, c->x, w, b, R, N);
        emu_backward(o.dx, o.dw, o.db, c->dy, c->x, w, o.mean, o.rstd, R, N);
    } else {
        tt_klayernorm_forward_f32(o.y, o.mean, o.rstd, c->x, w, b, R, N, EPS);
        tt_klayernorm_backward_f32(o.dx, o.dw, o.db, c->dy, c->x, w, o.mean, o.rstd, R, N);
    }
    return o;
}

static bool same_out(const ln_out *a, const ln_out *e, const ln_case *c, int isa) {
    int64_t R = c->R, N = c->N;
    bool ok = same_bits(a->y, e->y, R * N, "y", isa, R, N) &&
              same_bits(a->mean, e->mean, R, "mean", isa, R, N) &&
              same_bits(a->rstd, e->rstd, R, "rstd", isa, R, N);
    if (a->dx) ok = ok && same_bits(a->dx, e->dx, R * N, "dx", isa, R, N);
    if (a->dw) ok = ok && same_bits(a->dw, e->dw, N, "dw", isa, R, N);
    if (a->db) ok = ok && same_bits(a->db, e->db, N, "db", isa, R, N);
    return ok;
}

static void free_out(ln_out *o) {
    free(o->y), free(o->mean), free(o->rstd), free(o->dx), free(o->dw), free(o->db);
}

// ---- tests ----

// Every ISA the CPU has against the emulation, bit for bit, for every w / b and gradient
// combination; normal rows (_i even) and cancelling ones (_i odd).
START_TEST(test_isas_match_emulation) {
    const int64_t *s = shapes[_i / 2];
    tt_rng_seed(&rng, 100 + (uint64_t)_i);
    ln_case c = make_case(s[0], s[1], _i % 2);
    int ran = 0;
    for (int isa = 0; isa <= TT_CPU_AVX512; isa++) {
        if (!force_isa((tt_cpu_level)isa)) continue;
        ran++;
        for (int wb = 0; wb < 4; wb++)
            for (int grads = 0; grads < 8; grads++) {
                ln_out e = run(&c, wb, grads, true), a = run(&c, wb, grads, false);
                ck_assert_msg(same_out(&a, &e, &c, isa), "wb=%d grads=%d", wb, grads);
                free_out(&e);
                free_out(&a);
            }
    }
    tt_cpu_set_level(tt_cpu_max_level());
    ck_assert_int_ge(ran, 1);
    free_case(&c);
}
END_TEST

// The order of the sums shows in these rows: a plain column-order sum (the kernel's order
// before the lanes) gives other f32 means, so the bit-for-bit test above can fail.
START_TEST(test_cancelling_rows_depend_on_order) {
    tt_rng_seed(&rng, 7);
    int64_t R = 16, N = 384;
    ln_case c = make_case(R, N, true);
    int differ = 0;
    for (int64_t r = 0; r < R; r++) {
        double seq = 0, *t = malloc((size_t)N * sizeof *t);
        for (int64_t i = 0; i < N; i++) seq += t[i] = c.x[r * N + i];
        differ += (float)(seq / (double)N) != (float)(lane_sum(t, N) / (double)N);
        free(t);
    }
    ck_assert_int_ge(differ, R / 2);
    free_case(&c);
}
END_TEST

// dbias and dweight columns whose rows cancel across chunks (+B in the first chunk, -B in the
// third): every ISA matches the chunked emulation, which a plain row-order sum does not.
START_TEST(test_column_sums_chunked) {
    tt_rng_seed(&rng, 12);
    int64_t R = 200, N = 20;
    ln_case c = make_case(R, N, false);
    for (int64_t i = 0; i < N; i++) {
        float big = (float)(1099511627776.0 * (1 + tt_rng_uniform(&rng)));
        c.dy[(int64_t)(tt_rng_u64(&rng) % 64) * N + i] = big;
        c.dy[(128 + (int64_t)(tt_rng_u64(&rng) % 64)) * N + i] = -big;
    }
    ln_out e = run(&c, 3, 7, true);
    int differ = 0;
    for (int64_t i = 0; i < N; i++) {
        double sb = 0;
        for (int64_t r = 0; r < R; r++) sb += c.dy[r * N + i];
        differ += c.db0[i] + (float)sb != e.db[i];
    }
    ck_assert_int_ge(differ, N / 2);
    for (int isa = 0; isa <= TT_CPU_AVX512; isa++) {
        if (!force_isa((tt_cpu_level)isa)) continue;
        ln_out a = run(&c, 3, 6, false);  // dw and db without dx too
        ck_assert(same_out(&a, &e, &c, isa));
        free_out(&a);
    }
    tt_cpu_set_level(tt_cpu_max_level());
    free_out(&e);
    free_case(&c);
}
END_TEST

// Each ISA on 1 and 2 threads, rows enough for the parallel split (R N >= 32768 and R not a
// multiple of the task): the same bits as the emulation.
START_TEST(test_threads_same_bits) {
    tt_rng_seed(&rng, 8);
    ln_case c = make_case(301, 384, true);
    ln_out e = run(&c, 3, 7, true);
    int prev = tt_get_num_threads();
    for (int isa = 0; isa <= TT_CPU_AVX512; isa++) {
        if (!force_isa((tt_cpu_level)isa)) continue;
        for (int nt = 1; nt <= 2; nt++) {
            tt_set_num_threads(nt);
            ln_out a = run(&c, 3, 7, false);
            ck_assert_msg(same_out(&a, &e, &c, isa), "threads=%d", nt);
            free_out(&a);
        }
    }
    tt_set_num_threads(prev);
    tt_cpu_set_level(tt_cpu_max_level());
    free_out(&e);
    free_case(&c);
}
END_TEST

// The paths against each other on the GPT's shape (2048 rows of 384) and with N = 1000.
START_TEST(test_isas_same_bits) {
    tt_rng_seed(&rng, 9);
    ln_case c = make_case(_i ? 64 : 2048, _i ? 1000 : 384, false);
    force_isa(TT_CPU_GENERIC);
    ln_out p = run(&c, 3, 7, false);
    for (int isa = 1; isa <= TT_CPU_AVX512; isa++) {
        if (!force_isa((tt_cpu_level)isa)) continue;
        ln_out a = run(&c, 3, 7, false);
        ck_assert(same_out(&a, &p, &c, isa));
        free_out(&a);
    }
    tt_cpu_set_level(tt_cpu_max_level());
    free_out(&p);
    free_case(&c);
}
END_TEST

// Values against a plain double layernorm (sums in column order, no lanes): the formula.
START_TEST(test_values_close_to_double) {
    tt_rng_seed(&rng, 10);
    int64_t R = 7, N = 33;
    ln_case c = make_case(R, N, false);
    ln_out a = run(&c, 3, 7, false);
    double dw[33] = {0}, db[33] = {0};
    for (int64_t r = 0; r < R; r++) {
        const float *xr = c.x + r * N, *dyr = c.dy + r * N;
        double mu = 0, var = 0, sdn = 0, sdnx = 0;
        for (int64_t i = 0; i < N; i++) mu += xr[i] / (double)N;
        for (int64_t i = 0; i < N; i++) var += (xr[i] - mu) * (xr[i] - mu) / (double)N;
        double rs = 1 / sqrt(var + EPS);
        ck_assert_close(a.mean[r], mu, 1e-6, 1e-6);
        ck_assert_close(a.rstd[r], rs, 1e-6, 1e-6);
        for (int64_t i = 0; i < N; i++) {
            double xh = (xr[i] - mu) * rs;
            ck_assert_close(a.y[r * N + i], xh * c.w[i] + c.b[i], 1e-5, 1e-5);
            sdn += (double)dyr[i] * c.w[i] / (double)N;
            sdnx += (double)dyr[i] * c.w[i] * xh / (double)N;
            dw[i] += dyr[i] * xh;
            db[i] += dyr[i];
        }
        for (int64_t i = 0; i < N; i++) {
            double xh = (xr[i] - mu) * rs;
            double g = rs * ((double)dyr[i] * c.w[i] - sdn - xh * sdnx);
            ck_assert_close(a.dx[r * N + i], c.dx0[r * N + i] + g, 1e-5, 1e-5);
        }
    }
    for (int64_t i = 0; i < N; i++) {
        ck_assert_close(a.dw[i], c.dw0[i] + dw[i], 1e-5, 1e-5);
        ck_assert_close(a.db[i], c.db0[i] + db[i], 1e-5, 1e-5);
    }
    free_out(&a);
    free_case(&c);
}
END_TEST

// The op's backward adds dx straight into x's gradient when x has one already: h = x +
// layernorm(x) (a residual stream) gives x.grad = dy + dx of layernorm alone, bit for bit; a
// second backward adds again, without a dx buffer; a leaf with a hook takes the buffer path and
// gets the same values.
static tt_tensor *keep_grad(tt_tensor *g, void *ctx) {
    (void)ctx;
    (void)g;
    return NULL;
}

START_TEST(test_op_adds_into_existing_grad) {
    tt_rng_seed(&rng, 11);
    tt_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        tt_dtype d = dt ? TT_F64 : TT_F32;
        tt_tensor *x0 = tt_uniform(&rng, d, TT_SHAPE(40, 33), -2, 3);
        tt_tensor *w = tt_uniform(&rng, d, TT_SHAPE(33), 0.5, 1.5);
        tt_tensor *b = tt_uniform(&rng, d, TT_SHAPE(33), -1, 1);
        tt_tensor *dy = tt_uniform(&rng, d, TT_SHAPE(40, 33), -1, 1);
        // layernorm alone: its dx
        tt_tensor *xa = tt_set_requires_grad(tt_clone(x0), true);
        tt_backward_with(tt_layernorm(xa, 1, w, b, 1e-5), dy);
        tt_tensor *want = tt_add(dy, xa->grad);
        // the residual: the add's backward gives x its gradient first
        tt_tensor *xr = tt_set_requires_grad(tt_clone(x0), true);
        tt_backward_with(tt_add(xr, tt_layernorm(xr, 1, w, b, 1e-5)), dy);
        ck_assert(tt_test_same_values(xr->grad, want));
        // a second backward into the leaf's .grad: in place, one tensor buffer fewer than the
        // first backward of a fresh leaf (whose dx buffer becomes its gradient)
        tt_tensor *xf = tt_set_requires_grad(tt_clone(x0), true);
        tt_alloc_stats s0 = tt_alloc_get_stats();
        tt_backward_with(tt_layernorm(xf, 1, w, b, 1e-5), dy);
        tt_alloc_stats s1 = tt_alloc_get_stats();
        tt_backward_with(tt_layernorm(xr, 1, w, b, 1e-5), dy);
        tt_alloc_stats s2 = tt_alloc_get_stats();
        ck_assert_int_eq(s1.fresh + s1.reused - s0.fresh - s0.reused,
                         s2.fresh + s2.reused - s1.fresh - s1.reused + 1);
        ck_assert(tt_test_same_values(xr->grad, tt_add(want, xa->grad)));
        // a leaf with a hook: the buffer path, the same values
        tt_tensor *xh = tt_set_requires_grad(tt_clone(x0), true);
        tt_register_hook(xh, keep_grad, NULL);
        tt_backward_with(tt_add(xh, tt_layernorm(xh, 1, w, b, 1e-5)), dy);
        ck_assert(tt_test_same_values(xh->grad, want));
    }
    tt_scope_end();
}
END_TEST

int main(void) {
    Suite *s = suite_create("layernorm_simd");
    TCase *tc = tt_tcase("layernorm_simd");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_isas_match_emulation, 0, 2 * NSHAPES);
    tcase_add_test(tc, test_cancelling_rows_depend_on_order);
    tcase_add_test(tc, test_column_sums_chunked);
    tcase_add_test(tc, test_threads_same_bits);
    tcase_add_loop_test(tc, test_isas_same_bits, 0, 2);
    tcase_add_test(tc, test_values_close_to_double);
    tcase_add_test(tc, test_op_adds_into_existing_grad);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}
