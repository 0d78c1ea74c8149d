// The elementwise optimizer updates: SGD, Adam/AdamW, RMSprop, Adagrad and Lion, each written
// once for f32 and f64 storage (math in double, rounded once when stored), and the parallel
// pass that runs every parameter's update over the concatenation of their elements.
#include <math.h>

#include "optim_internal.h"
#include "../tensor/tensor_ext.h"

// name_f32 and name_f64 from one body: T is the storage type; p the parameter, s0..s2 its state
// slots (tt__upd_seg), g the gradient, n elements, a the arguments.
#define UPDATE_TWINS(name, ...)                                                                    \
    TT_CLONES static void name##_f32(float *restrict p, float *restrict s0, float *restrict s1,    \
                                     float *restrict s2, const float *restrict g, int64_t n,       \
                                     const tt__upd_args *a) {                                      \
        typedef float T;                                                                           \
        __VA_ARGS__                                                                                \
    }                                                                                              \
    TT_CLONES static void name##_f64(double *restrict p, double *restrict s0, double *restrict s1, \
                                     double *restrict s2, const double *restrict g, int64_t n,     \
                                     const tt__upd_args *a) {                                      \
        typedef double T;                                                                          \
        __VA_ARGS__                                                                                \
    }

// torch.optim.SGD: d = g + wd p; buf = first ? d : momentum buf + (1 - dampening) d;
// d = nesterov ? d + momentum buf : buf; p -= lr d. s0: the buffer (NULL without momentum).
UPDATE_TWINS(
    sgd, (void)s1; (void)s2; for (int64_t i = 0; i < n; i++) {
        double d = (double)g[i];
        if (a->weight_decay != 0) d += a->weight_decay * (double)p[i];
        if (a->momentum != 0) {
            double b = a->first ? d : a->momentum * (double)s0[i] + (1 - a->dampening) * d;
            s0[i] = (T)b;
            d = a->nesterov ? d + a->momentum * (double)s0[i] : (double)s0[i];
        }
        p[i] = (T)((double)p[i] - a->lr * d);
    })

// Kingma & Ba 2015 with PyTorch's arrangement of the bias corrections (s0 = m, s1 = v):
// m = m + (1 - b1) (g - m); v = b2 v + (1 - b2) g^2; p -= step_size m / (sqrt(v) / bc2_sqrt + eps)
// Branch-free so the compiler vectorizes it (a decay of 1 and an l2 of 0 change nothing).
UPDATE_TWINS(
    adam, (void)s2; const double b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    const double l2 = a->l2, decay = a->decay, ss = a->step_size, bc2 = a->bc2_sqrt;
    for (int64_t i = 0; i < n; i++) {
        double pi = (double)p[i] * decay;
        double gi = (double)g[i] + l2 * pi;
        T mi = (T)((double)s0[i] + (1 - b1) * (gi - (double)s0[i]));
        T vi = (T)(b2 * (double)s1[i] + (1 - b2) * gi * gi);
        s0[i] = mi;
        s1[i] = vi;
        double denom = sqrt((double)vi) / bc2 + eps;
        p[i] = (T)(pi - ss * ((double)mi / denom));
    })

// torch.optim.RMSprop (s0 = square_avg, s1 = grad_avg when centered, s2 = momentum_buffer):
// g += wd p; s = alpha s + (1 - alpha) g^2; d = sqrt(s - ga^2 or s) + eps, ga = alpha ga +
// (1 - alpha) g; momentum: buf = momentum buf + g / d, p -= lr buf; else p -= lr g / d.
UPDATE_TWINS(
    rmsprop, for (int64_t i = 0; i < n; i++) {
        double gi = (double)g[i];
        if (a->weight_decay != 0) gi += a->weight_decay * (double)p[i];
        s0[i] = (T)(a->alpha * (double)s0[i] + (1 - a->alpha) * gi * gi);
        double var = (double)s0[i];
        if (a->centered) {
            s1[i] = (T)(a->alpha * (double)s1[i] + (1 - a->alpha) * gi);
            var -= (double)s1[i] * (double)s1[i];
        }
        double d = sqrt(var) + a->eps;
        if (a->momentum > 0) {
            s2[i] = (T)(a->momentum * (double)s2[i] + gi / d);
            p[i] = (T)((double)p[i] - a->lr * (double)s2[i]);
        } else {
            p[i] = (T)((double)p[i] - a->lr * (gi / d));
        }
    })

// torch.optim.Adagrad (s0 = sum): g += wd p; sum += g^2; p -= clr g / (sqrt(sum) + eps),
// clr = step_size = lr / (1 + (t - 1) lr_decay).
UPDATE_TWINS(
    adagrad, (void)s1; (void)s2; for (int64_t i = 0; i < n; i++) {
        double gi = (double)g[i];
        if (a->weight_decay != 0) gi += a->weight_decay * (double)p[i];
        s0[i] = (T)((double)s0[i] + gi * gi);
        p[i] = (T)((double)p[i] - a->step_size * (gi / (sqrt((double)s0[i]) + a->eps)));
    })

// torch's lerp: s + w (e - s), computed from the nearer end.
static inline double lerp(double s, double e, double w) {
    return w < 0.5 ? s + w * (e - s) : e - (e - s) * (1 - w);
}

// Muon's momentum (s0 = the buffer; p receives the update u): buf = lerp(buf, g, 1 - momentum);
// u = nesterov ? lerp(g, buf, momentum) : buf.
UPDATE_TWINS(
    muon_momentum, (void)s1; (void)s2; for (int64_t i = 0; i < n; i++) {
        double gi = (double)g[i];
        s0[i] = (T)lerp((double)s0[i], gi, 1 - a->momentum);
        p[i] = (T)(a->nesterov ? lerp(gi, (double)s0[i], a->momentum) : (double)s0[i]);
    })

// Muon's update (g = the orthogonalized u): p = p (1 - lr wd) - step_size u.
UPDATE_TWINS(
    muon_apply, (void)s0; (void)s1; (void)s2; for (int64_t i = 0; i < n; i++) {
        p[i] = (T)((double)p[i] * a->decay - a->step_size * (double)g[i]);
    })

// Lion (s0 = m): p *= 1 - lr wd; p -= lr sign(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g.
UPDATE_TWINS(
    lion, (void)s1; (void)s2; for (int64_t i = 0; i < n; i++) {
        double gi = (double)g[i], m = (double)s0[i];
        double c = a->beta1 * m + (1 - a->beta1) * gi;
        double sign = (double)(c > 0) - (double)(c < 0);
        p[i] = (T)((double)p[i] * a->decay - a->lr * sign);
        s0[i] = (T)(a->beta2 * m + (1 - a->beta2) * gi);
    })

typedef void (*upd_f32)(float *, float *, float *, float *, const float *, int64_t,
                        const tt__upd_args *);
typedef void (*upd_f64)(double *, double *, double *, double *, const double *, int64_t,
                        const tt__upd_args *);
static const struct {
    upd_f32 f32;
    upd_f64 f64;
} kernels[TT__UPD_COUNT] = {
    [TT__UPD_SGD] = {sgd_f32, sgd_f64},
    [TT__UPD_ADAM] = {adam_f32, adam_f64},
    [TT__UPD_RMSPROP] = {rmsprop_f32, rmsprop_f64},
    [TT__UPD_ADAGRAD] = {adagrad_f32, adagrad_f64},
    [TT__UPD_LION] = {lion_f32, lion_f64},
    [TT__UPD_MUON_MOMENTUM] = {muon_momentum_f32, muon_momentum_f64},
    [TT__UPD_MUON_APPLY] = {muon_apply_f32, muon_apply_f64},
};

// Elements [i0, i1) of segment q.
static void update_seg(const tt__upd_seg *q, int64_t i0, int64_t i1) {
    void *s[3];
    for (int k = 0; k < 3; k++) s[k] = tt__optim_at(q->s[k], i0);
    const void *g = tt__optim_at(q->g, i0);
    if (q->p->dtype == TT_F32)
        kernels[q->a.kernel].f32(tt__optim_at(q->p, i0), s[0], s[1], s[2], g, i1 - i0, &q->a);
    else
        kernels[q->a.kernel].f64(tt__optim_at(q->p, i0), s[0], s[1], s[2], g, i1 - i0, &q->a);
}

// The segments of a step, for the thread pool.
typedef struct update_job {
    const tt__upd_seg *seg;
    int nseg;
} update_job;

// Elements [lo, hi) of the concatenation of every segment.
static void update_range(void *ctx, int64_t lo, int64_t hi) {
    const update_job *j = ctx;
    for (int s = 0; s < j->nseg; s++) {
        const tt__upd_seg *q = &j->seg[s];
        int64_t a = q->start, b = q->start + tt_numel(q->p);
        int64_t i0 = (lo > a ? lo : a) - a, i1 = (hi < b ? hi : b) - a;
        if (i1 > i0) update_seg(q, i0, i1);
    }
}

// The concatenated elements are cut into ranges of at least TT_OPTIM_CHUNK elements that the
// threads claim, so small tensors do not run one by one on the calling thread.
void tt__optim_update_all(const tt__upd_seg *seg, int nseg, int64_t total) {
    update_job j = {seg, nseg};
    int64_t grain = total >= 2 * TT_OPTIM_CHUNK ? TT_OPTIM_CHUNK : (total > 0 ? total : 1);
    tt__parallel_for(total, grain, update_range, &j);
}
