// The autocast switch (autograd.h): a thread-local stack of precisions that tt_matmul and
// tt_affine read when they run, and record in their node for the backward. The bf16 products
// themselves are in ops_matmul.c and tensor/kernels/bf16.c.
#include "autograd_internal.h"

#include <string.h>

#define AUTOCAST_MAX 64
static _Thread_local tt_precision autocast_saved[AUTOCAST_MAX];
static _Thread_local int autocast_depth;
static _Thread_local tt_precision autocast_now;  // zero-initialized: TT_PRECISION_F32

void tt_autocast_begin(tt_precision precision) {
    TT_CHECK(precision == TT_PRECISION_F32 || precision == TT_PRECISION_BF16,
             "precision %d is not TT_PRECISION_F32 or TT_PRECISION_BF16", (int)precision);
    TT_CHECK(autocast_depth < AUTOCAST_MAX, "tt_autocast_begin nested deeper than %d: a "
             "tt_autocast_end is missing", AUTOCAST_MAX);
    autocast_saved[autocast_depth++] = autocast_now;
    autocast_now = precision;
}

void tt_autocast_end(void) {
    TT_CHECK(autocast_depth > 0, "tt_autocast_end without a matching tt_autocast_begin");
    autocast_now = autocast_saved[--autocast_depth];
}

tt_precision tt_autocast_precision(void) { return autocast_now; }

bool tt_autocast_enabled(void) { return autocast_now == TT_PRECISION_BF16; }

const char *tt_precision_name(tt_precision precision) {
    return precision == TT_PRECISION_F32 ? "f32" : precision == TT_PRECISION_BF16 ? "bf16" : "?";
}

bool tt_precision_parse(const char *name, tt_precision *out) {
    if (!name) return false;
    if (strcmp(name, "f32") == 0) *out = TT_PRECISION_F32;
    else if (strcmp(name, "bf16") == 0) *out = TT_PRECISION_BF16;
    else return false;
    return true;
}
