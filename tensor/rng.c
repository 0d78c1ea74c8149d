// The explicit random number generator: xoshiro256** seeded through splitmix64
// (Blackman & Vigna, "Scrambled linear pseudorandom number generators", 2018).
// Only integer arithmetic decides the stream, so it is the same on every platform;
// normals use Box-Muller on top of it.
#include "tensor_internal.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void tt_rng_seed(tt_rng *rng, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
}

tt_rng tt_rng_new(uint64_t seed) {
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    return rng;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tt_rng_u64(tt_rng *rng) {
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double tt_rng_uniform(tt_rng *rng) { return (double)(tt_rng_u64(rng) >> 11) * 0x1.0p-53; }

double tt_rng_normal(tt_rng *rng) {
    double u1 = 1.0 - tt_rng_uniform(rng);  // (0, 1]: log is finite
    double u2 = tt_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int64_t tt_rng_below(tt_rng *rng, int64_t n) {
    TT_CHECK(n > 0, "n must be positive, got %lld", (long long)n);
    uint64_t un = (uint64_t)n;
    uint64_t limit = UINT64_MAX - UINT64_MAX % un;  // reject the biased tail
    uint64_t x;
    do x = tt_rng_u64(rng); while (x >= limit);
    return (int64_t)(x % un);
}

// ---- random tensors ----

_Thread_local bool tt__skip_random_init;

// The next value of a fill: a uniform in [lo, hi) or a normal of mean lo and std hi.
static double next_value(tt_rng *rng, bool normal, double lo, double hi) {
    return normal ? lo + hi * tt_rng_normal(rng) : lo + (hi - lo) * tt_rng_uniform(rng);
}

// Fills t in flat order, one draw per element, as tt_set_at would store them; a contiguous
// tensor is written through its storage directly (one version bump, not one per element).
static tt_tensor *fill(tt_tensor *t, tt_rng *rng, bool normal, double lo, double hi,
                       const char *op) {
    int64_t n = tt_numel(t);
    if (tt__skip_random_init) {
        (void)tt__base(t);  // still refuses a freed tensor
    } else if (tt_is_contiguous(t)) {
        void *base = tt__base(t);
        for (int64_t i = 0; i < n; i++) tt__store(base, t->dtype, t->offset + i,
                                                  next_value(rng, normal, lo, hi));
    } else {
        for (int64_t i = 0; i < n; i++) tt_set_at(t, i, next_value(rng, normal, lo, hi));
    }
    tt_bump_version(t, op);
    return t;
}

tt_tensor *tt_uniform_(tt_tensor *t, tt_rng *rng, double lo, double hi) {
    return fill(t, rng, false, lo, hi, "uniform_");
}

tt_tensor *tt_normal_(tt_tensor *t, tt_rng *rng, double mean, double std) {
    return fill(t, rng, true, mean, std, "normal_");
}

tt_tensor *tt_uniform(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape,
                      double lo, double hi) {
    tt__check_shape(__func__, dtype, ndim, shape);
    TT_CHECK(tt_dtype_is_float(dtype), "dtype %s is not a float dtype", tt_dtype_name(dtype));
    return tt__autorelease(tt_uniform_(tt__new(dtype, ndim, shape), rng, lo, hi));
}

tt_tensor *tt_normal(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape,
                     double mean, double std) {
    tt__check_shape(__func__, dtype, ndim, shape);
    TT_CHECK(tt_dtype_is_float(dtype), "dtype %s is not a float dtype", tt_dtype_name(dtype));
    return tt__autorelease(tt_normal_(tt__new(dtype, ndim, shape), rng, mean, std));
}

tt_tensor *tt_rand(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape) {
    tt__check_shape(__func__, dtype, ndim, shape);
    tt_tensor *t = tt_uniform(rng, dtype, ndim, shape, 0.0, 1.0);
    t->origin = __func__;
    return t;
}

tt_tensor *tt_randn(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape) {
    tt__check_shape(__func__, dtype, ndim, shape);
    tt_tensor *t = tt_normal(rng, dtype, ndim, shape, 0.0, 1.0);
    t->origin = __func__;
    return t;
}

tt_tensor *tt_rand_like(const tt_tensor *t, tt_rng *rng) {
    TT_CHECK(t, "t is NULL");
    return tt_rand(rng, t->dtype, t->ndim, t->shape);
}

tt_tensor *tt_randn_like(const tt_tensor *t, tt_rng *rng) {
    TT_CHECK(t, "t is NULL");
    return tt_randn(rng, t->dtype, t->ndim, t->shape);
}

// ---- samplers: randint, randperm, bernoulli, multinomial ----

tt_tensor *tt_randint(tt_rng *rng, int64_t lo, int64_t hi, int ndim, const int64_t *shape) {
    tt__check_shape(__func__, TT_I64, ndim, shape);
    TT_CHECK(lo < hi, "the range [%lld, %lld) is empty; pass lo < hi (hi is excluded)",
             (long long)lo, (long long)hi);
    tt_tensor *t = tt__new(TT_I64, ndim, shape);
    int64_t *o = tt_data(t), n = tt_numel(t);
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    TT_CHECK(span <= (uint64_t)INT64_MAX, "the range [%lld, %lld) is wider than 2^63 - 1",
             (long long)lo, (long long)hi);
    for (int64_t i = 0; i < n; i++) o[i] = lo + tt_rng_below(rng, (int64_t)span);
    return tt__autorelease(t);
}

// Fisher-Yates (Knuth, TAOCP vol. 2, 3.4.2, algorithm P)
tt_tensor *tt_randperm(tt_rng *rng, int64_t n) {
    TT_CHECK(n >= 0, "n = %lld; pass n >= 0", (long long)n);
    tt_tensor *t = tt__new(TT_I64, 1, &n);
    int64_t *o = tt_data(t);
    for (int64_t i = 0; i < n; i++) o[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = tt_rng_below(rng, i + 1), tmp = o[i];
        o[i] = o[j];
        o[j] = tmp;
    }
    return tt__autorelease(t);
}

tt_tensor *tt_bernoulli(tt_rng *rng, const tt_tensor *p) {
    TT_CHECK(p, "p is NULL");
    TT_CHECK(tt_dtype_is_float(p->dtype), "p has dtype %s; pass a float tensor of "
             "probabilities", tt_dtype_name(p->dtype));
    tt_tensor *t = tt__new(p->dtype, p->ndim, p->shape);
    int64_t n = tt_numel(p);
    for (int64_t i = 0; i < n; i++) {
        double pi = tt_at(p, i);
        TT_CHECK(pi >= 0 && pi <= 1, "p[%lld] = %g (row-major) of p %s is not a probability; "
                 "every p must be in [0, 1]", (long long)i, pi, tt__shape(p));
        tt__store(tt_data(t), t->dtype, i, tt_rng_uniform(rng) < pi ? 1 : 0);
    }
    return tt__autorelease(t);
}

// One draw of a category from weights w (K,) with total `sum` > 0: inverse CDF, linear.
static int64_t draw(tt_rng *rng, const double *w, int64_t k, double sum) {
    double u = tt_rng_uniform(rng) * sum, c = 0;
    int64_t last = 0;
    for (int64_t j = 0; j < k; j++) {
        if (w[j] <= 0) continue;
        c += w[j];
        last = j;
        if (u < c) return j;
    }
    return last;  // rounding: u landed past the last partial sum
}

tt_tensor *tt_multinomial(tt_rng *rng, const tt_tensor *probs, int64_t num_samples,
                          bool replacement) {
    TT_CHECK(probs, "probs is NULL");
    TT_CHECK(tt_dtype_is_float(probs->dtype) && (probs->ndim == 1 || probs->ndim == 2),
             "probs is %s of dtype %s; pass a float tensor (K,) or (R, K) of weights",
             tt__shape(probs), tt_dtype_name(probs->dtype));
    int64_t rows = probs->ndim == 2 ? probs->shape[0] : 1, k = probs->shape[probs->ndim - 1];
    TT_CHECK(num_samples > 0, "num_samples = %lld; pass num_samples >= 1",
             (long long)num_samples);
    TT_CHECK(replacement || num_samples <= k, "cannot draw %lld samples without replacement "
             "from %lld categories; pass num_samples <= %lld or replacement = true",
             (long long)num_samples, (long long)k, (long long)k);
    int64_t shape[2] = {rows, num_samples};
    tt_tensor *t = probs->ndim == 2 ? tt__new(TT_I64, 2, shape) : tt__new(TT_I64, 1, shape + 1);
    int64_t *o = tt_data(t);
    double *w = TT_MALLOC((size_t)(k ? k : 1) * sizeof *w);
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        int64_t nonzero = 0;
        for (int64_t j = 0; j < k; j++) {
            w[j] = tt_at(probs, r * k + j);
            if (!(w[j] >= 0 && isfinite(w[j]))) {
                double bad = w[j];
                tt_free(w);
                tt_fatal(__FILE__, __LINE__, __func__, "probs[%lld, %lld] = %g (row, category) "
                         "of probs %s; weights must be finite and >= 0", (long long)r,
                         (long long)j, bad, tt__shape(probs));
            }
            sum += w[j];
            nonzero += w[j] > 0;
        }
        if (sum <= 0 || (!replacement && nonzero < num_samples)) {
            tt_free(w);
            tt_fatal(__FILE__, __LINE__, __func__, "row %lld of probs %s has %lld non-zero "
                     "weights: too few to draw %lld samples %s", (long long)r,
                     tt__shape(probs), (long long)nonzero, (long long)num_samples,
                     replacement ? "(all weights are 0)" : "without replacement");
        }
        for (int64_t s = 0; s < num_samples; s++) {
            int64_t j = draw(rng, w, k, sum);
            o[r * num_samples + s] = j;
            if (!replacement) {  // drop the drawn category; the rest renormalize
                sum -= w[j];
                w[j] = 0;
                if (sum <= 0) {  // rounding left nothing: recompute the total
                    sum = 0;
                    for (int64_t q = 0; q < k; q++) sum += w[q];
                }
            }
        }
    }
    tt_free(w);
    return tt__autorelease(t);
}
