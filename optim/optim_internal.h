// Shared by optim/'s files: the elementwise update kernels (update.c), Muon's step (muon.c)
// and the chunking both use. Not part of the public API.
#ifndef TT_OPTIM_INTERNAL_H
#define TT_OPTIM_INTERNAL_H

#include "optim.h"

// Parallel passes cut elements into ranges of at least CHUNK (update.c, clip.c). Every element
// is computed the same way whichever range it falls in, so results do not depend on the
// thread count.
#define TT_OPTIM_CHUNK (1 << 16)

// The elementwise kernels of update.c: one per update rule, and Muon's two elementwise halves.
typedef enum tt__upd_kernel {
    TT__UPD_SGD,
    TT__UPD_ADAM,  // Adam and AdamW
    TT__UPD_RMSPROP,
    TT__UPD_ADAGRAD,
    TT__UPD_LION,
    TT__UPD_MUON_MOMENTUM,  // p: the update u written; s0: the momentum buffer
    TT__UPD_MUON_APPLY,     // p = p decay - step_size g, g the orthogonalized update
    TT__UPD_COUNT
} tt__upd_kernel;

// What one parameter's elementwise update needs, derived from its group and step by the
// caller (optim.c's seg_args). Fields a kernel does not use are 0.
typedef struct tt__upd_args {
    tt__upd_kernel kernel;
    double lr, weight_decay;
    double momentum, dampening;  // SGD, RMSprop, Muon
    bool nesterov, first;        // SGD, Muon; first (SGD): the buffer starts as the gradient
    double beta1, beta2, eps;    // Adam, AdamW, Lion; eps also RMSprop, Adagrad
    double l2;                   // Adam: wd added to the gradient as l2 * p; else 0
    double decay;                // AdamW, Lion, Muon: 1 - lr wd, p *= decay first; else 1
    double step_size;            // Adam: lr / (1 - beta1^t); Adagrad: lr / (1 + (t-1) decay);
                                 // Muon: lr sqrt(max(1, rows / cols))
    double bc2_sqrt;             // Adam: sqrt(1 - beta2^t)
    double alpha;                // RMSprop
    bool centered;               // RMSprop
} tt__upd_args;

// One parameter's share of an elementwise step: its tensors (state slots by kind: Adam m, v;
// RMSprop square_avg, grad_avg, momentum_buffer; SGD momentum_buffer; Adagrad sum; Lion m;
// NULL where unused) and its arguments.
typedef struct tt__upd_seg {
    tt_tensor *p, *s[3];
    const tt_tensor *g;
    tt__upd_args a;
    int64_t start;  // index of its first element in the concatenation of every segment
} tt__upd_seg;

// Updates every segment in one parallel pass over their concatenated `total` elements.
void tt__optim_update_all(const tt__upd_seg *seg, int nseg, int64_t total);

// Muon's step of parameter p (2-D) with gradient g and momentum buffer buf, at lr.
void tt__muon_update(tt_tensor *p, tt_tensor *buf, const tt_tensor *g, const tt_optim_config *c,
                     double lr, double weight_decay);

// Aborts (naming func) unless gradient g of parameter `name` p is contiguous and like p.
void tt__optim_check_grad(const char *name, const tt_tensor *p, const tt_tensor *g,
                          const char *func);

// The sum of squares of contiguous f32/f64 g's elements, in double, the same for any thread
// count (clip.c).
double tt__optim_sumsq(const tt_tensor *g);

// Element pointer i of a contiguous tensor (NULL stays NULL).
static inline void *tt__optim_at(const tt_tensor *t, int64_t i) {
    return t ? (char *)tt_data(t) + i * (int64_t)tt_dtype_size(t->dtype) : NULL;
}

#endif  // TT_OPTIM_INTERNAL_H
