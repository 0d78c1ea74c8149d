// Elementwise kernels over one strided run: unary and scalar maps, binary maps, and the maps
// that give their gradients. Each body is written once over a type T and instantiated for
// f32 (float math throughout) and f64. Broadcasting and dims are the caller's business.
#include "kernels_elementwise.h"
#include "tensor_internal.h"

#include <stdint.h>
#include <string.h>

// Type-generic math: exp(x) on a float is expf, on a double exp. Constants are cast to T so
// that no f32 expression is silently promoted to double.
#include <tgmath.h>

#define SQRT1_2 0.70710678118654752440         // 1 / sqrt(2)
#define INV_SQRT_2PI 0.39894228040143267794    // 1 / sqrt(2 pi)
#define SQRT_2_OVER_PI 0.79788456080286535588  // sqrt(2 / pi)
#define GELU_TANH_C 0.044715                   // GPT-2's cubic coefficient

// ---- scalar helpers (one body per type) ----

#define DEFINE_HELPERS(T, SUF)                                                            \
    /* sigma(x) = 1 / (1 + e^-x) = e^x / (1 + e^x): exponentiate -|x| only, never overflows */ \
    static inline T sigmoid_##SUF(T x) {                                                  \
        const T e = exp(-fabs(x));                                                        \
        const T pos = (T)0.5 + copysign((T)0.5, x); /* 1 or 0 without a branch */        \
        return (pos + ((T)1 - pos) * e) / ((T)1 + e);                                     \
    }                                                                                     \
    /* gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + c x^3); as 0.5 (1 + tanh u)  \
       = sigma(2u) it costs one exp, and has no cancellation where tanh u is near -1 */     \
    static inline T gelu_tanh_##SUF(T x) {                                                \
        const T u = (T)SQRT_2_OVER_PI * (x + (T)GELU_TANH_C * x * x * x);                 \
        return x * sigmoid_##SUF((T)2 * u);                                               \
    }                                                                                     \
    /* d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) u', t = tanh u, u' = sqrt(2/pi) (1 + 3 c x^2); \
       with s = sigma(2u) = 0.5 (1 + t), 1 - t^2 = 4 s (1 - s): s (1 + 2 x (1 - s) u') */  \
    static inline T gelu_tanh_grad_##SUF(T x) {                                           \
        const T u = (T)SQRT_2_OVER_PI * (x + (T)GELU_TANH_C * x * x * x);                 \
        const T du = (T)SQRT_2_OVER_PI * ((T)1 + (T)(3 * GELU_TANH_C) * x * x);           \
        const T sg = sigmoid_##SUF((T)2 * u);                                             \
        return sg * ((T)1 + (T)2 * x * ((T)1 - sg) * du);                                 \
    }                                                                                     \
    /* silu'(x) = sigma(x) (1 + x (1 - sigma(x))) */                                       \
    static inline T silu_grad_##SUF(T x) {                                                \
        const T sg = sigmoid_##SUF(x);                                                    \
        return sg * ((T)1 + x * ((T)1 - sg));                                             \
    }

DEFINE_HELPERS(float, f32)
DEFINE_HELPERS(double, f64)

// ---- exact GELU ----
// gelu(x) = x Phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt 2)); gelu'(x) = Phi(x) + x phi(x) with
// phi(x) = e^(-x^2 / 2) / sqrt(2 pi). f64 uses libm's erf and exp (gradcheck relies on it).
// f32 uses arithmetic the compiler vectorizes, where libm's erff is a scalar call that cost a
// fifth of a training step: Phi from the erfc form of Abramowitz & Stegun 7.1.26 (absolute
// error below 1e-7 on Phi, no cancellation in either tail) and e^x by Cody-Waite reduction
// and a degree-7 polynomial (relative error below 2e-7).

static inline double gelu_f64(double x) { return 0.5 * x * (1.0 + erf(x * SQRT1_2)); }

static inline double gelu_grad_f64(double x) {
    const double cdf = 0.5 * (1.0 + erf(x * SQRT1_2));
    return cdf + x * INV_SQRT_2PI * exp(-0.5 * x * x);
}

// e^x for x <= 0 (as used here); below -87 it returns e^-87 (about 1.6e-38, i.e. 0 here).
static inline float exp_neg_f32(float x) {
    x = x < -87.0f ? -87.0f : x;
    const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    float t = x * 1.44269504f + shifter;
    float n = t - shifter;              // round(x / ln 2)
    uint32_t ni, bits;                  // unsigned: a NaN input wraps instead of overflowing
    memcpy(&ni, &t, sizeof ni);
    ni -= 0x4B400000u;                  // the bits of the shifter: leaves n as an integer
    float r = x - n * 0.693145752f;     // ln 2, high part
    r = r - n * 1.42860677e-6f;         //       low part
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
              r * (1.0f / 720 + r * (1.0f / 5040)))))));
    memcpy(&bits, &p, sizeof bits);
    bits += ni << 23;                   // times 2^n
    memcpy(&p, &bits, sizeof p);
    return p;
}

// Phi(x) = 1 - 0.5 q(t) e^(-z^2) for x >= 0 and 0.5 q(t) e^(-z^2) below, z = |x| / sqrt 2,
// t = 1 / (1 + 0.3275911 z); NaN stays NaN.
static inline float phi_cdf_f32(float x) {
    const float z = (x < 0 ? -x : x) * (float)SQRT1_2;
    const float t = 1.0f / (1.0f + 0.3275911f * z);
    const float q = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f +
                    t * (-1.453152027f + t * 1.061405429f))));
    const float tail = 0.5f * q * exp_neg_f32(-z * z);
    const float cdf = x < 0 ? tail : 1.0f - tail;
    return x == x ? cdf : x;
}

static inline float gelu_f32(float x) { return x * phi_cdf_f32(x); }

static inline float gelu_grad_f32(float x) {
    return phi_cdf_f32(x) + x * (float)INV_SQRT_2PI * exp_neg_f32(-0.5f * x * x);
}

#define PICK(name, x) _Generic((x), float: name##_f32, double: name##_f64)(x)
#define SIGMOID(x) PICK(sigmoid, x)
#define GELU(x) PICK(gelu, x)
#define GELU_GRAD(x) PICK(gelu_grad, x)
#define GELU_TANH(x) PICK(gelu_tanh, x)
#define GELU_TANH_GRAD(x) PICK(gelu_tanh_grad, x)
#define SILU_GRAD(x) PICK(silu_grad, x)

// ---- run loops ----
// Each map has a unit-stride loop (the common case, which the compiler vectorizes) and a
// strided one. The element names are xi (input), gi (gradient), vi (saved value), ai, bi.

#define MAP_U(EXPR)                                                                       \
    do {                                                                                  \
        if (sy == 1 && sx == 1) {                                                         \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T xi = x[i];                                                        \
                y[i] = (EXPR);                                                            \
            }                                                                             \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T xi = x[i * sx];                                                   \
                y[i * sy] = (EXPR);                                                       \
            }                                                                             \
        }                                                                                 \
    } while (0)

// dx from g alone (the derivative is a constant).
#define MAP_G(EXPR)                                                                       \
    do {                                                                                  \
        if (sdx == 1 && sg == 1) {                                                        \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T gi = g[i];                                                        \
                (void)gi;                                                                 \
                dx[i] = (EXPR);                                                           \
            }                                                                             \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T gi = g[i * sg];                                                   \
                (void)gi;                                                                 \
                dx[i * sdx] = (EXPR);                                                     \
            }                                                                             \
        }                                                                                 \
    } while (0)

// dx from g and the saved value v.
#define MAP_GV(EXPR)                                                                      \
    do {                                                                                  \
        if (sdx == 1 && sg == 1 && sv == 1) {                                             \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T gi = g[i], vi = v[i];                                             \
                dx[i] = (EXPR);                                                           \
            }                                                                             \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T gi = g[i * sg], vi = v[i * sv];                                   \
                dx[i * sdx] = (EXPR);                                                     \
            }                                                                             \
        }                                                                                 \
    } while (0)

// Binary: unit strides, one operand broadcast (stride 0, e.g. a 0-dim tensor), or strided.
#define MAP_B(EXPR)                                                                       \
    do {                                                                                  \
        if (sy == 1 && sa == 1 && sb == 1) {                                              \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T ai = a[i], bi = b[i];                                             \
                y[i] = (EXPR);                                                            \
            }                                                                             \
        } else if (sy == 1 && sa == 1 && sb == 0) {                                       \
            const T bi = b[0];                                                            \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T ai = a[i];                                                        \
                y[i] = (EXPR);                                                            \
            }                                                                             \
        } else if (sy == 1 && sa == 0 && sb == 1) {                                       \
            const T ai = a[0];                                                            \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T bi = b[i];                                                        \
                y[i] = (EXPR);                                                            \
            }                                                                             \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T ai = a[i * sa], bi = b[i * sb];                                   \
                y[i * sy] = (EXPR);                                                       \
            }                                                                             \
        }                                                                                 \
    } while (0)

// Binary backward: d from g, a and b; EA is the gradient of a, EB that of b.
#define MAP_BB(EA, EB)                                                                    \
    do {                                                                                  \
        if (wrt == 0) MAP_GAB(EA);                                                        \
        else MAP_GAB(EB);                                                                 \
    } while (0)

#define MAP_GAB(EXPR)                                                                     \
    do {                                                                                  \
        if (sd == 1 && sg == 1 && sa == 1 && sb == 1) {                                   \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T gi = g[i], ai = a[i], bi = b[i];                                  \
                (void)ai, (void)bi;                                                       \
                d[i] = (EXPR);                                                            \
            }                                                                             \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                             \
                const T gi = g[i * sg], ai = a[i * sa], bi = b[i * sb];                   \
                (void)ai, (void)bi;                                                       \
                d[i * sd] = (EXPR);                                                       \
            }                                                                             \
        }                                                                                 \
    } while (0)

// ---- bodies (T is a block-scope typedef of the instantiating function) ----

#define UNARY_BODY                                                                        \
    const T c = (T)s;                                                                     \
    switch (op) {                                                                         \
        case TT_KU_NEG: MAP_U(-xi); break;                                                \
        case TT_KU_EXP: MAP_U(exp(xi)); break;                                            \
        case TT_KU_LOG: MAP_U(log(xi)); break;                                            \
        case TT_KU_SQRT: MAP_U(sqrt(xi)); break;                                          \
        case TT_KU_RSQRT: MAP_U((T)1 / sqrt(xi)); break;                                  \
        case TT_KU_ABS: MAP_U(fabs(xi)); break;                                           \
        case TT_KU_TANH: MAP_U(tanh(xi)); break;                                          \
        case TT_KU_SIGMOID: MAP_U(SIGMOID(xi)); break;                                    \
        case TT_KU_RELU: MAP_U(xi <= 0 ? (T)0 : xi); break; /* keeps NaN */               \
        case TT_KU_GELU: MAP_U(GELU(xi)); break;                                          \
        case TT_KU_GELU_TANH: MAP_U(GELU_TANH(xi)); break;                                \
        case TT_KU_SILU: MAP_U(xi * SIGMOID(xi)); break;                                  \
        case TT_KU_SQUARE: MAP_U(xi * xi); break;                                         \
        case TT_KU_ADD_S: MAP_U(xi + c); break;                                           \
        case TT_KU_MUL_S: MAP_U(xi * c); break;                                           \
        case TT_KU_DIV_S: MAP_U(xi / c); break;                                           \
        case TT_KU_RSUB_S: MAP_U(c - xi); break;                                          \
        case TT_KU_POW_S:                                                                 \
            if (s == 2) MAP_U(xi * xi);                                                   \
            else MAP_U(pow(xi, c));                                                       \
            break;                                                                        \
        default: break;                                                                   \
    }

// g times the derivative; v is y for exp, sqrt, rsqrt, tanh, sigmoid and x otherwise.
#define UNARY_BACKWARD_BODY                                                               \
    const T c = (T)s, cm1 = (T)(s - 1);                                                   \
    switch (op) {                                                                         \
        case TT_KU_NEG: MAP_G(-gi); break;                                                \
        case TT_KU_EXP: MAP_GV(gi * vi); break;                  /* (e^x)' = y */         \
        case TT_KU_LOG: MAP_GV(gi / vi); break;                  /* 1 / x */              \
        case TT_KU_SQRT: MAP_GV(gi / ((T)2 * vi)); break;        /* 1 / (2 y) */          \
        case TT_KU_RSQRT: MAP_GV((T)-0.5 * gi * vi * vi * vi); break; /* -y^3 / 2 */      \
        case TT_KU_ABS: MAP_GV(vi > 0 ? gi : vi < 0 ? -gi : (T)0); break; /* sign x */    \
        case TT_KU_TANH: MAP_GV(gi * ((T)1 - vi * vi)); break;   /* 1 - y^2 */            \
        case TT_KU_SIGMOID: MAP_GV(gi * vi * ((T)1 - vi)); break; /* y (1 - y) */         \
        case TT_KU_RELU: MAP_GV(vi > 0 ? gi : (T)0); break;      /* 0 at 0 */             \
        case TT_KU_GELU: MAP_GV(gi * GELU_GRAD(vi)); break;                               \
        case TT_KU_GELU_TANH: MAP_GV(gi * GELU_TANH_GRAD(vi)); break;                     \
        case TT_KU_SILU: MAP_GV(gi * SILU_GRAD(vi)); break;                               \
        case TT_KU_SQUARE: MAP_GV((T)2 * vi * gi); break;                                 \
        case TT_KU_ADD_S: MAP_G(gi); break;                                               \
        case TT_KU_MUL_S: MAP_G(gi * c); break;                                           \
        case TT_KU_DIV_S: MAP_G(gi / c); break;                                           \
        case TT_KU_RSUB_S: MAP_G(-gi); break;                                             \
        case TT_KU_POW_S: /* p x^(p-1); 0 when p == 0, as in PyTorch */                   \
            if (s == 0) MAP_G((T)0);                                                      \
            else MAP_GV(gi * c * pow(vi, cm1));                                           \
            break;                                                                        \
        default: break;                                                                   \
    }

#define BINARY_BODY                                                                       \
    switch (op) {                                                                         \
        case TT_KB_ADD: MAP_B(ai + bi); break;                                            \
        case TT_KB_SUB: MAP_B(ai - bi); break;                                            \
        case TT_KB_MUL: MAP_B(ai * bi); break;                                            \
        case TT_KB_DIV: MAP_B(ai / bi); break;                                            \
        case TT_KB_POW: MAP_B(pow(ai, bi)); break;                                        \
        case TT_KB_MAXIMUM: MAP_B(ai != ai ? ai : ai > bi ? ai : bi); break;              \
        case TT_KB_MINIMUM: MAP_B(ai != ai ? ai : ai < bi ? ai : bi); break;              \
        default: break;                                                                   \
    }

// Ties of maximum / minimum split the gradient 0.5 / 0.5, as PyTorch does.
#define BINARY_BACKWARD_BODY                                                              \
    switch (op) {                                                                         \
        case TT_KB_ADD: MAP_BB(gi, gi); break;                                            \
        case TT_KB_SUB: MAP_BB(gi, -gi); break;                                           \
        case TT_KB_MUL: MAP_BB(gi * bi, gi * ai); break;                                  \
        case TT_KB_DIV: /* d(a/b)/da = 1/b, d(a/b)/db = -a/b^2 */                         \
            MAP_BB(gi / bi, -gi * (ai / bi) / bi);                                        \
            break;                                                                        \
        case TT_KB_POW: /* b a^(b-1) (0 if b == 0); a^b ln a (0 if a == 0 and b >= 0) */   \
            MAP_BB(bi == 0 ? (T)0 : gi * bi * pow(ai, bi - (T)1),                         \
                   ai == 0 && bi >= 0 ? (T)0 : gi * pow(ai, bi) * log(ai));               \
            break;                                                                        \
        case TT_KB_MAXIMUM:                                                               \
            MAP_BB(ai > bi ? gi : ai == bi ? (T)0.5 * gi : (T)0,                          \
                   bi > ai ? gi : ai == bi ? (T)0.5 * gi : (T)0);                         \
            break;                                                                        \
        case TT_KB_MINIMUM:                                                               \
            MAP_BB(ai < bi ? gi : ai == bi ? (T)0.5 * gi : (T)0,                          \
                   bi < ai ? gi : ai == bi ? (T)0.5 * gi : (T)0);                         \
            break;                                                                        \
        default: break;                                                                   \
    }

// ---- unary ----

TT_CLONES
void tt_kunary_f32(tt_kunary_op op, float *y, const float *x, double s, int64_t n,
                   int64_t sy, int64_t sx) {
    typedef float T;
    UNARY_BODY
}

void tt_kunary_f64(tt_kunary_op op, double *y, const double *x, double s, int64_t n,
                   int64_t sy, int64_t sx) {
    typedef double T;
    UNARY_BODY
}

bool tt_kunary_backward_uses_output(tt_kunary_op op) {
    return op == TT_KU_EXP || op == TT_KU_SQRT || op == TT_KU_RSQRT || op == TT_KU_TANH ||
           op == TT_KU_SIGMOID;
}

TT_CLONES
void tt_kunary_backward_f32(tt_kunary_op op, float *dx, const float *g, const float *v,
                            double s, int64_t n, int64_t sdx, int64_t sg, int64_t sv) {
    typedef float T;
    UNARY_BACKWARD_BODY
}

void tt_kunary_backward_f64(tt_kunary_op op, double *dx, const double *g, const double *v,
                            double s, int64_t n, int64_t sdx, int64_t sg, int64_t sv) {
    typedef double T;
    UNARY_BACKWARD_BODY
}

// ---- binary ----

TT_CLONES
void tt_kbinary_f32(tt_kbinary_op op, float *y, const float *a, const float *b, int64_t n,
                    int64_t sy, int64_t sa, int64_t sb) {
    typedef float T;
    BINARY_BODY
}

void tt_kbinary_f64(tt_kbinary_op op, double *y, const double *a, const double *b, int64_t n,
                    int64_t sy, int64_t sa, int64_t sb) {
    typedef double T;
    BINARY_BODY
}

TT_CLONES
void tt_kbinary_backward_f32(tt_kbinary_op op, int wrt, float *d, const float *g,
                             const float *a, const float *b, int64_t n, int64_t sd,
                             int64_t sg, int64_t sa, int64_t sb) {
    typedef float T;
    BINARY_BACKWARD_BODY
}

void tt_kbinary_backward_f64(tt_kbinary_op op, int wrt, double *d, const double *g,
                             const double *a, const double *b, int64_t n, int64_t sd,
                             int64_t sg, int64_t sa, int64_t sb) {
    typedef double T;
    BINARY_BACKWARD_BODY
}
