// Gradcheck cases of the creation and layout ops (autograd/ops_layout.c and their ops.def rows).
// The compositions are filed under the op they record (tril/triu: masked_fill; repeat, tile,
// roll, pad: cat; split, chunk, unbind: slice; movedim: permute); flip and diagonal have rows.
#include "gc_util.h"

// ---- tril / triu (masked_fill) ----

static tt_tensor *f_tril(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_tril(in[0], *(const int64_t *)ctx);
}
static tt_tensor *f_triu(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_triu(in[0], *(const int64_t *)ctx);
}
static void tril_triu_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    static const int64_t k0 = 0, k1 = 1, km1 = -1;
    gc_check(r, f_tril, (void *)&k0, 1, &x, NULL);
    gc_check(r, f_tril, (void *)&km1, 1, &x, NULL);
    gc_check(r, f_triu, (void *)&k1, 1, &x, NULL);
}
static void tril_triu_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1);  // (3, 4)
    static const int64_t k0 = 0, km1 = -1;
    gc_check(r, f_tril, (void *)&k0, 1, &x, NULL);
    gc_check(r, f_triu, (void *)&km1, 1, &x, NULL);
}
static void tril_triu_k_out_of_range(gc_report *r) {  // everything kept / everything zeroed
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    static const int64_t big = 10, small = -10;
    gc_check(r, f_tril, (void *)&big, 1, &x, NULL);
    gc_check(r, f_tril, (void *)&small, 1, &x, NULL);
    gc_check(r, f_triu, (void *)&big, 1, &x, NULL);
}

// ---- repeat / tile (cat) ----

static tt_tensor *f_repeat_231(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_repeat(in[0], TT_SHAPE(2, 3, 1));
}
static tt_tensor *f_tile_2(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_tile(in[0], TT_SHAPE(2));
}
static tt_tensor *f_repeat_02(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_repeat(in[0], TT_SHAPE(0, 2));
}
static void repeat_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -1, 1);
    gc_check(r, f_repeat_231, NULL, 1, &x, NULL);
    gc_check(r, f_tile_2, NULL, 1, &x, NULL);
}
static void repeat_strided(gc_report *r) {
    tt_tensor *x = gc_input_strided(TT_SHAPE(2, 6), 1, 2, -1, 1);  // (2, 3)
    gc_check(r, f_repeat_231, NULL, 1, &x, NULL);
    gc_check(r, f_tile_2, NULL, 1, &x, NULL);
}
static void repeat_zero(gc_report *r) {  // an empty result
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -1, 1);
    gc_check(r, f_repeat_02, NULL, 1, &x, NULL);
}

// ---- flip ----

static tt_tensor *f_flip_02(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_flip(in[0], TT_DIMS(0, -1));
}
static void flip_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    gc_check(r, f_flip_02, NULL, 1, &x, NULL);
}
static void flip_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(4, 3, 2), 0, 2, -1, 1);  // (2, 3, 4)
    gc_check(r, f_flip_02, NULL, 1, &x, NULL);
}
static void flip_empty(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(0, 3), -1, 1);
    gc_check(r, f_flip_02, NULL, 1, &x, NULL);
}

// ---- roll (cat of two slices) ----

static tt_tensor *f_roll(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_roll(in[0], -4, 1);
}
static tt_tensor *f_roll_dims(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_roll_dims(in[0], 2, (const int64_t[]){1, 2}, (const int[]){0, 1});
}
static void roll_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 5), -1, 1);
    gc_check(r, f_roll, NULL, 1, &x, NULL);
    gc_check(r, f_roll_dims, NULL, 1, &x, NULL);
}
static void roll_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(5, 3), 0, 1, -1, 1);  // (3, 5)
    gc_check(r, f_roll, NULL, 1, &x, NULL);
    gc_check(r, f_roll_dims, NULL, 1, &x, NULL);
}

// ---- pad (cat with filled blocks, mirrored slices) ----

typedef struct pad_spec {
    int npad;
    int64_t pad[4];
    tt_pad_mode mode;
} pad_spec;
static tt_tensor *f_pad(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const pad_spec *p = ctx;
    return tt_pad(in[0], p->npad, p->pad, p->mode, 0.5);
}
static const pad_spec pad_const = {4, {1, 2, 0, 1}, TT_PAD_CONSTANT};
static const pad_spec pad_const_wide = {2, {5, 4}, TT_PAD_CONSTANT};  // wider than the dim
static const pad_spec pad_const_crop = {4, {-1, 2, 1, -1}, TT_PAD_CONSTANT};
static const pad_spec pad_reflect = {4, {2, 1, 1, 2}, TT_PAD_REFLECT};
static const pad_spec pad_reflect_max = {2, {3, 3}, TT_PAD_REFLECT};  // size - 1 each side
static void pad_constant(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    gc_check(r, f_pad, (void *)&pad_const, 1, &x, NULL);
    gc_check(r, f_pad, (void *)&pad_const_wide, 1, &x, NULL);
    gc_check(r, f_pad, (void *)&pad_const_crop, 1, &x, NULL);
}
static void pad_reflect_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    gc_check(r, f_pad, (void *)&pad_reflect, 1, &x, NULL);
    gc_check(r, f_pad, (void *)&pad_reflect_max, 1, &x, NULL);
}
static void pad_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1);  // (3, 4)
    gc_check(r, f_pad, (void *)&pad_const, 1, &x, NULL);
    gc_check(r, f_pad, (void *)&pad_reflect, 1, &x, NULL);
}

// ---- split / chunk / unbind (slice): the pieces scaled by 1, 2, ... and concatenated ----

static tt_tensor *weighted_cat(int n, tt_tensor **pieces, int dim) {
    for (int i = 0; i < n; i++) pieces[i] = tt_mul_scalar(pieces[i], i + 1.0);
    return tt_cat(n, pieces, dim);
}
static tt_tensor *f_split(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    tt_tensor *out[4];
    return weighted_cat(tt_split(in[0], 2, 1, out, 4), out, 1);
}
static tt_tensor *f_split_sizes(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    tt_tensor *out[3];
    tt_split_sizes(in[0], 3, (const int64_t[]){2, 0, 3}, 1, out);
    return weighted_cat(3, out, 1);
}
static tt_tensor *f_chunk(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    tt_tensor *out[3];
    return weighted_cat(tt_chunk(in[0], 3, 0, out), out, 0);
}
static tt_tensor *f_unbind(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    tt_tensor *out[8];
    int k = tt_unbind(in[0], 1, out, 8);
    for (int i = 0; i < k; i++) out[i] = tt_mul_scalar(out[i], i + 1.0);
    return tt_stack(k, out, 0);
}
static void split_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 5), -1, 1);
    gc_check(r, f_split, NULL, 1, &x, NULL);
    gc_check(r, f_split_sizes, NULL, 1, &x, NULL);
    gc_check(r, f_chunk, NULL, 1, &x, NULL);
    gc_check(r, f_unbind, NULL, 1, &x, NULL);
}
static void split_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(5, 3), 0, 1, -1, 1);  // (3, 5)
    gc_check(r, f_split, NULL, 1, &x, NULL);
    gc_check(r, f_split_sizes, NULL, 1, &x, NULL);
    gc_check(r, f_chunk, NULL, 1, &x, NULL);
    gc_check(r, f_unbind, NULL, 1, &x, NULL);
}

// ---- movedim (permute) ----

static tt_tensor *f_movedim(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_movedim(in[0], 0, -1);
}
static void movedim_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    gc_check(r, f_movedim, NULL, 1, &x, NULL);
}
static void movedim_strided(gc_report *r) {
    tt_tensor *x = gc_input_strided(TT_SHAPE(2, 6, 4), 1, 2, -1, 1);  // (2, 3, 4)
    gc_check(r, f_movedim, NULL, 1, &x, NULL);
}

// ---- diagonal ----

typedef struct diag_spec {
    int64_t offset;
    int d1, d2;
} diag_spec;
static tt_tensor *f_diagonal(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const diag_spec *d = ctx;
    return tt_diagonal(in[0], d->offset, d->d1, d->d2);
}
static const diag_spec diag_main = {0, 0, 1}, diag_up = {1, 0, 1}, diag_down = {-2, 0, 1};
static const diag_spec diag_3d = {1, 2, 0}, diag_outside = {7, 0, 1};
static void diagonal_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    gc_check(r, f_diagonal, (void *)&diag_main, 1, &x, NULL);
    gc_check(r, f_diagonal, (void *)&diag_up, 1, &x, NULL);
    gc_check(r, f_diagonal, (void *)&diag_down, 1, &x, NULL);
    tt_tensor *x3 = gc_input(TT_SHAPE(3, 2, 4), -1, 1);
    gc_check(r, f_diagonal, (void *)&diag_3d, 1, &x3, NULL);
}
static void diagonal_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1);  // (3, 4)
    gc_check(r, f_diagonal, (void *)&diag_up, 1, &x, NULL);
}
static void diagonal_offset_outside(gc_report *r) {  // an empty diagonal
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    gc_check(r, f_diagonal, (void *)&diag_outside, 1, &x, NULL);
}

const gc_case gc_cases_layout[] = {
    {TT_OP_MASKED_FILL, "tril_triu", tril_triu_contiguous},
    {TT_OP_MASKED_FILL, "tril_triu_transposed", tril_triu_transposed},
    {TT_OP_MASKED_FILL, "tril_triu_k_out_of_range", tril_triu_k_out_of_range},
    {TT_OP_CAT, "repeat_tile", repeat_contiguous},
    {TT_OP_CAT, "repeat_tile_strided", repeat_strided},
    {TT_OP_CAT, "repeat_zero", repeat_zero},
    {TT_OP_FLIP, "contiguous", flip_contiguous},
    {TT_OP_FLIP, "transposed", flip_transposed},
    {TT_OP_FLIP, "empty_dim", flip_empty},
    {TT_OP_CAT, "roll", roll_contiguous},
    {TT_OP_CAT, "roll_transposed", roll_transposed},
    {TT_OP_CAT, "pad_constant", pad_constant},
    {TT_OP_CAT, "pad_reflect", pad_reflect_contiguous},
    {TT_OP_CAT, "pad_transposed", pad_transposed},
    {TT_OP_SLICE, "split_chunk_unbind", split_contiguous},
    {TT_OP_SLICE, "split_chunk_unbind_transposed", split_transposed},
    {TT_OP_PERMUTE, "movedim", movedim_contiguous},
    {TT_OP_PERMUTE, "movedim_strided", movedim_strided},
    {TT_OP_DIAGONAL, "contiguous", diagonal_contiguous},
    {TT_OP_DIAGONAL, "transposed", diagonal_transposed},
    {TT_OP_DIAGONAL, "offset_outside", diagonal_offset_outside},
    {0},
};
