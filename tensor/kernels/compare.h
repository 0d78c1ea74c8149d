// Comparison and selection kernels (internal): elementwise comparisons and logical ops into
// bool (one byte, 0 or 1), where, and masked select / its scatter back. One strided run at a
// time on raw pointers (the ops in autograd/ops_compare.c walk the outer dims with tt__iter).
// Operands may have different dtypes: values are read through tt__load as double, except
// that a comparison of an f32 with a non-f64 operand rounds both to float (PyTorch's type
// promotion: f32 with an integer is compared in f32). Integers beyond 2^53 lose precision.
#ifndef TT_KERNELS_COMPARE_H
#define TT_KERNELS_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "../tensor.h"

typedef enum tt_k_cmp {
    TT_KC_EQ, TT_KC_NE, TT_KC_LT, TT_KC_LE, TT_KC_GT, TT_KC_GE,  // a op b (IEEE: NaN != all)
    TT_KC_AND, TT_KC_OR, TT_KC_XOR,                              // (a != 0) op (b != 0)
    TT_KC_COUNT
} tt_k_cmp;

// out[i * os] = a[i * as] op b[i * bs] for i < n; out is TT_BOOL; strides in elements (0 on a
// broadcast run). as_f32: compare the values rounded to float.
void tt_kcompare_run(uint8_t *out, int64_t os, const void *a, tt_dtype adt, int64_t as,
                     const void *b, tt_dtype bdt, int64_t bs, int64_t n, tt_k_cmp op,
                     bool as_f32);

// out[i * os] = x[i * xs] == 0 (logical not) for i < n.
void tt_klogical_not_run(uint8_t *out, int64_t os, const void *x, tt_dtype xdt, int64_t xs,
                         int64_t n);

// out[i * os] = c[i * cs] != 0 ? a[i * as] : b[i * bs] for i < n; out, a and b share dtype dt
// (f32 and f64 are copied as their own type, bit for bit), c any dtype.
void tt_kwhere_run(void *out, int64_t os, const void *c, tt_dtype cdt, int64_t cs,
                   const void *a, int64_t as, const void *b, int64_t bs, tt_dtype dt, int64_t n);

#endif  // TT_KERNELS_COMPARE_H
