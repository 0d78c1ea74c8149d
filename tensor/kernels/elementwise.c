// Elementwise kernels over one strided run: unary and scalar maps, binary maps, and the maps
// that give their gradients. The loops and the per-op math are in elementwise.inc, included
// below once for f32 (float math throughout) and once for f64. Broadcasting is the caller's.
#include "elementwise.h"
#include "../tensor_internal.h"

#include <stdint.h>
#include <string.h>

// Type-generic math in elementwise.inc: exp(x) on a float is expf, on a double exp. Constants
// are cast to T so that no f32 expression is silently promoted to double.
#include <tgmath.h>

#define SQRT1_2 0.70710678118654752440         // 1 / sqrt(2)
#define INV_SQRT_2PI 0.39894228040143267794    // 1 / sqrt(2 pi)
#define SQRT_2_OVER_PI 0.79788456080286535588  // sqrt(2 / pi)
#define GELU_TANH_C 0.044715                   // GPT-2's cubic coefficient

// ---- scalar helpers: an f32 function and its f64 twin ----

// sigma(x) = 1 / (1 + e^-x) = e^x / (1 + e^x): exponentiates -|x| only, never overflows.
static inline float sigmoid_f32(float x) {
    const float e = expf(-fabsf(x));
    const float pos = 0.5f + copysignf(0.5f, x);  // 1 or 0 without a branch
    return (pos + (1.0f - pos) * e) / (1.0f + e);
}
static inline double sigmoid_f64(double x) {
    const double e = exp(-fabs(x));
    const double pos = 0.5 + copysign(0.5, x);
    return (pos + (1.0 - pos) * e) / (1.0 + e);
}

// gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + c x^3); as 0.5 (1 + tanh u) =
// sigma(2u) it costs one exp, and has no cancellation where tanh u is near -1.
static inline float gelu_tanh_f32(float x) {
    const float u = (float)SQRT_2_OVER_PI * (x + (float)GELU_TANH_C * x * x * x);
    return x * sigmoid_f32(2.0f * u);
}
static inline double gelu_tanh_f64(double x) {
    const double u = SQRT_2_OVER_PI * (x + GELU_TANH_C * x * x * x);
    return x * sigmoid_f64(2.0 * u);
}

// d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) u', t = tanh u, u' = sqrt(2/pi) (1 + 3 c x^2); with
// s = sigma(2u) = 0.5 (1 + t), 1 - t^2 = 4 s (1 - s): s (1 + 2 x (1 - s) u').
static inline float gelu_tanh_grad_f32(float x) {
    const float u = (float)SQRT_2_OVER_PI * (x + (float)GELU_TANH_C * x * x * x);
    const float du = (float)SQRT_2_OVER_PI * (1.0f + (float)(3 * GELU_TANH_C) * x * x);
    const float sg = sigmoid_f32(2.0f * u);
    return sg * (1.0f + 2.0f * x * (1.0f - sg) * du);
}
static inline double gelu_tanh_grad_f64(double x) {
    const double u = SQRT_2_OVER_PI * (x + GELU_TANH_C * x * x * x);
    const double du = SQRT_2_OVER_PI * (1.0 + (3 * GELU_TANH_C) * x * x);
    const double sg = sigmoid_f64(2.0 * u);
    return sg * (1.0 + 2.0 * x * (1.0 - sg) * du);
}

// silu'(x) = sigma(x) (1 + x (1 - sigma(x)))
static inline float silu_grad_f32(float x) {
    const float sg = sigmoid_f32(x);
    return sg * (1.0f + x * (1.0f - sg));
}
static inline double silu_grad_f64(double x) {
    const double sg = sigmoid_f64(x);
    return sg * (1.0 + x * (1.0 - sg));
}

// x^p with PyTorch's special exponents +-0.5 (sqrt x and 1 / sqrt x): they differ from libm's
// pow at -0.0 (sqrt(-0.0) = -0.0 and 1 / sqrt(-0.0) = -inf; pow gives +0.0 and +inf).
static inline float pow_scalar_f32(float x, double p) {
    return p == 0.5 ? sqrtf(x) : p == -0.5 ? 1.0f / sqrtf(x) : powf(x, (float)p);
}
static inline double pow_scalar_f64(double x, double p) {
    return p == 0.5 ? sqrt(x) : p == -0.5 ? 1.0 / sqrt(x) : pow(x, p);
}

// ---- exact GELU ----
// gelu(x) = x Phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt 2)); gelu'(x) = Phi(x) + x phi(x) with
// phi(x) = e^(-x^2 / 2) / sqrt(2 pi). f64 uses libm's erf and exp (gradcheck relies on it).
// f32 uses arithmetic the compiler vectorizes, where libm's erff is a scalar call that cost a
// fifth of a training step: Phi from the erfc form of Abramowitz & Stegun 7.1.26 (absolute
// error below 1e-7 on Phi, no cancellation in either tail) and e^x by Cody-Waite reduction
// and a degree-7 polynomial (relative error below 2e-7), both polynomials in Horner form with
// fmaf (one rounding per step: fewer instructions and no less accurate; the clones for AVX2
// and AVX-512 make each one instruction, the baseline build calls libm's exact fmaf, so every
// build gives the same bits). At x = +-inf the gradient is NaN in both dtypes (inf * 0), as
// in PyTorch 1.13.

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
    float p = fmaf(r, 1.0f / 5040, 1.0f / 720);
    p = fmaf(r, p, 1.0f / 120);
    p = fmaf(r, p, 1.0f / 24);
    p = fmaf(r, p, 1.0f / 6);
    p = fmaf(r, p, 0.5f);
    p = fmaf(r, p, 1.0f);
    p = fmaf(r, p, 1.0f);
    memcpy(&bits, &p, sizeof bits);
    bits += ni << 23;                   // times 2^n
    memcpy(&p, &bits, sizeof p);
    return p;
}

// Phi(x) = 1 - 0.5 q(t) e^(-z^2) for x >= 0 and 0.5 q(t) e^(-z^2) below, z = |x| / sqrt 2,
// t = 1 / (1 + 0.3275911 z), from z and e = e^(-z^2); NaN stays NaN.
static inline float phi_cdf_ze_f32(float x, float z, float e) {
    const float t = 1.0f / (1.0f + 0.3275911f * z);
    float q = fmaf(t, 1.061405429f, -1.453152027f);
    q = fmaf(t, q, 1.421413741f);
    q = fmaf(t, q, -0.284496736f);
    q = fmaf(t, q, 0.254829592f);
    q *= t;
    const float tail = 0.5f * q * e;
    const float cdf = x < 0 ? tail : 1.0f - tail;
    return x == x ? cdf : x;
}

static inline float gelu_f32(float x) {
    const float z = (x < 0 ? -x : x) * (float)SQRT1_2;
    return x * phi_cdf_ze_f32(x, z, exp_neg_f32(-z * z));
}

// Phi and phi share one exponential: phi(x) = e^(-x^2 / 2) / sqrt(2 pi) = e / sqrt(2 pi).
static inline float gelu_grad_f32(float x) {
    const float z = (x < 0 ? -x : x) * (float)SQRT1_2;
    const float e = exp_neg_f32(-z * z);
    const float d = phi_cdf_ze_f32(x, z, e) + x * (float)INV_SQRT_2PI * e;
    // exp_neg_f32 stops at e^-87, so inf * 0 is made by hand: x - x is NaN at +-inf and +0
    // elsewhere, and d is never -0.0 (Phi(x) >= +0 is added last), so finite x keeps its bits.
    return d + (x - x);
}

// The f32 or f64 helper, by the argument's type.
#define SIGMOID(x) _Generic((x), float: sigmoid_f32, double: sigmoid_f64)(x)
#define GELU(x) _Generic((x), float: gelu_f32, double: gelu_f64)(x)
#define GELU_GRAD(x) _Generic((x), float: gelu_grad_f32, double: gelu_grad_f64)(x)
#define GELU_TANH(x) _Generic((x), float: gelu_tanh_f32, double: gelu_tanh_f64)(x)
#define GELU_TANH_GRAD(x) _Generic((x), float: gelu_tanh_grad_f32, double: gelu_tanh_grad_f64)(x)
#define SILU_GRAD(x) _Generic((x), float: silu_grad_f32, double: silu_grad_f64)(x)
#define POW_SCALAR(x, p) _Generic((x), float: pow_scalar_f32, double: pow_scalar_f64)(x, p)

// The loops of elementwise.inc are inlined into each entry point with a constant op, so the
// op's case is all that is left in the loop (which the compiler vectorizes).
#define ALWAYS_INLINE static inline __attribute__((always_inline))

// ---- f32 ----

#define T float
#define CLONES TT_CLONES
#define KUNARY tt_kunary_f32
#define KUNARY_BACKWARD tt_kunary_backward_f32
#define KBINARY tt_kbinary_f32
#define KBINARY_BACKWARD tt_kbinary_backward_f32
#define KCLAMP tt_kclamp_f32
#define KCLAMP_BACKWARD tt_kclamp_backward_f32
#define UNARY_MATH unary_math_f32
#define UNARY_GRAD_MATH unary_grad_math_f32
#define BINARY_MATH binary_math_f32
#define BINARY_GRAD_MATH binary_grad_math_f32
#define UNARY_RUN unary_run_f32
#define UNARY_GRAD_RUN unary_grad_run_f32
#define BINARY_RUN binary_run_f32
#define BINARY_GRAD_RUN binary_grad_run_f32
#include "elementwise.inc"

// ---- f64 ----

#define T double
#define CLONES
#define KUNARY tt_kunary_f64
#define KUNARY_BACKWARD tt_kunary_backward_f64
#define KBINARY tt_kbinary_f64
#define KBINARY_BACKWARD tt_kbinary_backward_f64
#define KCLAMP tt_kclamp_f64
#define KCLAMP_BACKWARD tt_kclamp_backward_f64
#define UNARY_MATH unary_math_f64
#define UNARY_GRAD_MATH unary_grad_math_f64
#define BINARY_MATH binary_math_f64
#define BINARY_GRAD_MATH binary_grad_math_f64
#define UNARY_RUN unary_run_f64
#define UNARY_GRAD_RUN unary_grad_run_f64
#define BINARY_RUN binary_run_f64
#define BINARY_GRAD_RUN binary_grad_run_f64
#include "elementwise.inc"
