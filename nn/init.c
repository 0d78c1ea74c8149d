// Init schemes, in place: normal, truncated normal, uniform, Xavier/Glorot (Glorot & Bengio
// 2010), Kaiming/He (He et al. 2015) with PyTorch's fan conventions, and GPT-2's scaled
// residual init.
#include "nn_internal.h"

#include <math.h>

int64_t tt_fan_in(const tt_tensor *t) {
    TT_CHECK(t->ndim >= 1, "fan_in needs a tensor with at least 1 dim, got %s", tt__shape(t));
    if (t->ndim == 1) return t->shape[0];
    int64_t receptive = 1;
    for (int i = 2; i < t->ndim; i++) receptive *= t->shape[i];
    return t->shape[1] * receptive;
}

int64_t tt_fan_out(const tt_tensor *t) {
    TT_CHECK(t->ndim >= 1, "fan_out needs a tensor with at least 1 dim, got %s", tt__shape(t));
    if (t->ndim == 1) return t->shape[0];
    int64_t receptive = 1;
    for (int i = 2; i < t->ndim; i++) receptive *= t->shape[i];
    return t->shape[0] * receptive;
}

void tt_init_zeros_(tt_tensor *t) { tt_fill_(t, 0.0); }
void tt_init_ones_(tt_tensor *t) { tt_fill_(t, 1.0); }

void tt_init_normal_(tt_tensor *t, tt_rng *rng, double mean, double std) {
    tt_normal_(t, rng, mean, std);
}

// ---- truncated normal ----

static double std_normal_cdf(double z) { return 0.5 * erfc(-z / sqrt(2.0)); }

// The z with cdf(z) = p, for p inside (cdf(lo), cdf(hi)): bisection to double precision.
static double std_normal_quantile(double p, double lo, double hi) {
    for (int i = 0; i < 200 && lo < hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) break;
        if (std_normal_cdf(mid) < p) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

// N(0, 1) conditioned on [alpha, beta]: rejection from N(0, 1) while that accepts at least one
// draw in 8 on average, else the inverse cdf of a uniform in [cdf(alpha), cdf(beta)] (the tail
// intervals rejection would take long to hit).
static double trunc_std_normal(tt_rng *rng, double alpha, double beta, double mass) {
    if (mass >= 0.125) {
        for (;;) {
            double z = tt_rng_normal(rng);
            if (z >= alpha && z <= beta) return z;
        }
    }
    double lo = std_normal_cdf(alpha), p = lo + tt_rng_uniform(rng) * mass;
    return std_normal_quantile(p, alpha, beta);
}

void tt_init_trunc_normal_(tt_tensor *t, tt_rng *rng, double mean, double std, double a,
                           double b) {
    TT_CHECK(t && rng, "t and rng must not be NULL");
    TT_CHECK(std > 0 && a < b, "need std > 0 and a < b, got std=%g, a=%g, b=%g", std, a, b);
    double alpha = (a - mean) / std, beta = (b - mean) / std;
    double mass = std_normal_cdf(beta) - std_normal_cdf(alpha);
    TT_CHECK(mass > 0, "[a, b] = [%g, %g] lies too far in the tail of N(%g, %g^2) to sample "
             "(probability %g); move the bounds nearer the mean", a, b, mean, std, mass);
    for (int64_t i = 0, n = tt_numel(t); i < n; i++) {
        double x = mean + std * trunc_std_normal(rng, alpha, beta, mass);
        tt_set_at(t, i, x < a ? a : (x > b ? b : x));  // rounding may step out: clamp
    }
    tt_bump_version(t, "trunc_normal_");
}

void tt_init_uniform_(tt_tensor *t, tt_rng *rng, double lo, double hi) {
    tt_uniform_(t, rng, lo, hi);
}

// std = gain * sqrt(2 / (fan_in + fan_out)); uniform bound = sqrt(3) * std.
void tt_init_xavier_uniform_(tt_tensor *t, tt_rng *rng, double gain) {
    double a = gain * sqrt(6.0 / (double)(tt_fan_in(t) + tt_fan_out(t)));
    tt_uniform_(t, rng, -a, a);
}

void tt_init_xavier_normal_(tt_tensor *t, tt_rng *rng, double gain) {
    tt_normal_(t, rng, 0.0, gain * sqrt(2.0 / (double)(tt_fan_in(t) + tt_fan_out(t))));
}

// std = gain / sqrt(fan), gain = sqrt(2 / (1 + a^2)). Messages name func, the public init.
static double kaiming_std(const tt_tensor *t, double a, tt_fan_mode mode, const char *func) {
    int64_t fan = mode == TT_FAN_IN ? tt_fan_in(t) : tt_fan_out(t);
    TT_CHECK_IN(func, fan > 0, "tensor %s has %s = 0, so the Kaiming std is undefined; the "
                "dims that make the fan must be > 0", tt__shape(t),
                mode == TT_FAN_IN ? "fan_in" : "fan_out");
    return sqrt(2.0 / (1.0 + a * a)) / sqrt((double)fan);
}

void tt_init_kaiming_uniform_(tt_tensor *t, tt_rng *rng, double a, tt_fan_mode mode) {
    double bound = sqrt(3.0) * kaiming_std(t, a, mode, __func__);
    tt_uniform_(t, rng, -bound, bound);
}

void tt_init_kaiming_normal_(tt_tensor *t, tt_rng *rng, double a, tt_fan_mode mode) {
    tt_normal_(t, rng, 0.0, kaiming_std(t, a, mode, __func__));
}

void tt_init_gpt2_residual_(tt_tensor *t, tt_rng *rng, int n_layer) {
    TT_CHECK(n_layer > 0, "n_layer must be positive, got %d", n_layer);
    tt_normal_(t, rng, 0.0, 0.02 / sqrt(2.0 * n_layer));
}
