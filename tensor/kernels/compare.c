// Comparison and selection kernels: comparisons, logical ops and where over one strided run.
// The comparison ops' semantics are PyTorch's (torch.eq ... torch.ge, torch.logical_*,
// torch.where); NaN compares unequal to everything, and is true as a logical value.
#include "compare.h"
#include "../tensor_internal.h"

#include <string.h>

static inline double rd(const void *p, tt_dtype dt, int64_t i, bool as_f32) {
    double v = tt__load(p, dt, i);
    return as_f32 ? (double)(float)v : v;
}

void tt_kcompare_run(uint8_t *out, int64_t os, const void *a, tt_dtype adt, int64_t as,
                     const void *b, tt_dtype bdt, int64_t bs, int64_t n, tt_k_cmp op,
                     bool as_f32) {
    for (int64_t i = 0; i < n; i++) {
        double x = rd(a, adt, i * as, as_f32), y = rd(b, bdt, i * bs, as_f32);
        bool r;
        switch (op) {
            case TT_KC_EQ: r = x == y; break;
            case TT_KC_NE: r = x != y; break;
            case TT_KC_LT: r = x < y; break;
            case TT_KC_LE: r = x <= y; break;
            case TT_KC_GT: r = x > y; break;
            case TT_KC_GE: r = x >= y; break;
            case TT_KC_AND: r = (x != 0) && (y != 0); break;
            case TT_KC_OR: r = (x != 0) || (y != 0); break;
            case TT_KC_XOR: r = (x != 0) != (y != 0); break;
            default: r = false; break;
        }
        out[i * os] = r;
    }
}

void tt_klogical_not_run(uint8_t *out, int64_t os, const void *x, tt_dtype xdt, int64_t xs,
                         int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i * os] = tt__load(x, xdt, i * xs) == 0;
}

void tt_kwhere_run(void *out, int64_t os, const void *c, tt_dtype cdt, int64_t cs,
                   const void *a, int64_t as, const void *b, int64_t bs, tt_dtype dt, int64_t n) {
    size_t es = tt_dtype_size(dt);
    char *o = out;
    const char *pa = a, *pb = b;
    for (int64_t i = 0; i < n; i++) {
        bool take_a = tt__load(c, cdt, i * cs) != 0;
        const char *src = take_a ? pa + i * as * (int64_t)es : pb + i * bs * (int64_t)es;
        memcpy(o + i * os * (int64_t)es, src, es);
    }
}
