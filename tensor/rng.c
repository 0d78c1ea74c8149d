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

tt_tensor *tt_uniform_(tt_tensor *t, tt_rng *rng, double lo, double hi) {
    int64_t n = tt_numel(t);
    for (int64_t i = 0; i < n; i++) tt_set_at(t, i, lo + (hi - lo) * tt_rng_uniform(rng));
    tt_bump_version(t, "uniform_");
    return t;
}

tt_tensor *tt_normal_(tt_tensor *t, tt_rng *rng, double mean, double std) {
    int64_t n = tt_numel(t);
    for (int64_t i = 0; i < n; i++) tt_set_at(t, i, mean + std * tt_rng_normal(rng));
    tt_bump_version(t, "normal_");
    return t;
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
    return tt_uniform(rng, dtype, ndim, shape, 0.0, 1.0);
}

tt_tensor *tt_randn(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape) {
    tt__check_shape(__func__, dtype, ndim, shape);
    return tt_normal(rng, dtype, ndim, shape, 0.0, 1.0);
}
