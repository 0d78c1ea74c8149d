// The integer helpers the kernel files share: the smaller of two counts and a count of blocks.
// Internal, not installed.
#ifndef TT_KERNELS_KINT_H
#define TT_KERNELS_KINT_H

#include <stdint.h>

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
// ceil(a / b) for a >= 0, b > 0: the blocks of b that cover a.
static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

#endif  // TT_KERNELS_KINT_H
