// Check suite replaying tests/reference/random_programs.txt: random programs over the op
// vocabulary (comparison, math, layout, indexing, losses, convolutions, pooling, batch norm)
// that PyTorch 1.13 ran in f64 and f32
// (tests/reference/gen_random_programs.py describes the file). Each is replayed through the C
// API; outputs and input gradients must match (f64 within 1e-10, f32 within 1e-5, relative to
// 1 + |ref|; integer/bool results exactly).
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define MAX_REGS 512
#define MAX_ARGS 32
#define MAX_OUT 64

// ---- the interpreter: op name + registers + integer and float arguments -> tt_ calls ----

typedef struct call {
    tt_tensor *in[MAX_ARGS];
    int nin;
    int64_t k[MAX_ARGS];  // integer arguments
    int nk;
    double f[MAX_ARGS];  // float arguments
    int nf;
    int d[MAX_ARGS];  // k converted to int (dims)
    tt_dtype fdt;     // the program's float dtype
    tt_tensor *out[MAX_OUT];
} call;

typedef int (*op_fn)(call *c);  // fills c->out, returns how many

static int one(call *c, tt_tensor *t) {
    c->out[0] = t;
    return 1;
}

// k[from ...] as ints
static const int *dims(call *c, int from) {
    for (int i = from; i < c->nk; i++) c->d[i] = (int)c->k[i];
    return c->d + from;
}

static tt_tensor *opt(call *c, int i) { return c->nin > i ? c->in[i] : NULL; }

static tt_tensor *in0(call *c) { return c->in[0]; }

// views and glue (older ops)
static int op_transpose(call *c) { return one(c, tt_transpose(in0(c), c->k[0], c->k[1])); }
static int op_permute(call *c) { return one(c, tt_permute(in0(c), dims(c, 0))); }
static int op_slice(call *c) {
    return one(c, tt_slice(in0(c), (int)c->k[0], c->k[1], c->k[2], c->k[3]));
}
static int op_expand(call *c) { return one(c, tt_expand(in0(c), c->nk, c->k)); }
static int op_unsqueeze(call *c) { return one(c, tt_unsqueeze(in0(c), (int)c->k[0])); }
static int op_reshape(call *c) { return one(c, tt_reshape(in0(c), c->nk, c->k)); }
static int op_add(call *c) { return one(c, tt_add(in0(c), c->in[1])); }
static int op_mul(call *c) { return one(c, tt_mul(in0(c), c->in[1])); }
static int op_to_float(call *c) { return one(c, tt_to_dtype(in0(c), c->fdt)); }
static int op_sigmoid(call *c) { return one(c, tt_sigmoid(in0(c))); }
static int op_log_softmax(call *c) { return one(c, tt_log_softmax(in0(c), (int)c->k[0])); }
// comparison and selection
static int op_eq(call *c) { return one(c, tt_eq(in0(c), c->in[1])); }
static int op_ne(call *c) { return one(c, tt_ne(in0(c), c->in[1])); }
static int op_lt(call *c) { return one(c, tt_lt(in0(c), c->in[1])); }
static int op_le(call *c) { return one(c, tt_le(in0(c), c->in[1])); }
static int op_gt(call *c) { return one(c, tt_gt(in0(c), c->in[1])); }
static int op_ge(call *c) { return one(c, tt_ge(in0(c), c->in[1])); }
static int op_eq_scalar(call *c) { return one(c, tt_eq_scalar(in0(c), c->f[0])); }
static int op_ne_scalar(call *c) { return one(c, tt_ne_scalar(in0(c), c->f[0])); }
static int op_lt_scalar(call *c) { return one(c, tt_lt_scalar(in0(c), c->f[0])); }
static int op_le_scalar(call *c) { return one(c, tt_le_scalar(in0(c), c->f[0])); }
static int op_gt_scalar(call *c) { return one(c, tt_gt_scalar(in0(c), c->f[0])); }
static int op_ge_scalar(call *c) { return one(c, tt_ge_scalar(in0(c), c->f[0])); }
static int op_logical_and(call *c) { return one(c, tt_logical_and(in0(c), c->in[1])); }
static int op_logical_or(call *c) { return one(c, tt_logical_or(in0(c), c->in[1])); }
static int op_logical_xor(call *c) { return one(c, tt_logical_xor(in0(c), c->in[1])); }
static int op_logical_not(call *c) { return one(c, tt_logical_not(in0(c))); }
static int op_where(call *c) { return one(c, tt_where(in0(c), c->in[1], c->in[2])); }
static int op_masked_select(call *c) { return one(c, tt_masked_select(in0(c), c->in[1])); }
static int op_nonzero(call *c) { return one(c, tt_nonzero(in0(c))); }
// math
static int op_sin(call *c) { return one(c, tt_sin(in0(c))); }
static int op_erf(call *c) { return one(c, tt_erf(in0(c))); }
static int op_cos(call *c) { return one(c, tt_cos(in0(c))); }
static int op_log1p(call *c) { return one(c, tt_log1p(in0(c))); }
static int op_expm1(call *c) { return one(c, tt_expm1(in0(c))); }
static int op_reciprocal(call *c) { return one(c, tt_reciprocal(in0(c))); }
static int op_sign(call *c) { return one(c, tt_sign(in0(c))); }
static int op_floor(call *c) { return one(c, tt_floor(in0(c))); }
static int op_ceil(call *c) { return one(c, tt_ceil(in0(c))); }
static int op_round(call *c) { return one(c, tt_round(in0(c))); }
static int op_leaky_relu(call *c) { return one(c, tt_leaky_relu(in0(c), c->f[0])); }
static int op_elu(call *c) { return one(c, tt_elu(in0(c), c->f[0])); }
static int op_clamp(call *c) { return one(c, tt_clamp(in0(c), c->f[0], c->f[1])); }
static int op_clip(call *c) { return one(c, tt_clip(in0(c), c->f[0], c->f[1])); }
static int op_softplus(call *c) { return one(c, tt_softplus(in0(c), c->f[0], c->f[1])); }
static int op_logsumexp(call *c) {  // keepdim, dims...
    return one(c, tt_logsumexp(in0(c), c->nk - 1, dims(c, 1), c->k[0]));
}
static int op_std(call *c) {  // correction, keepdim, dims...
    return one(c, tt_std(in0(c), c->nk - 2, dims(c, 2), (int)c->k[0], c->k[1]));
}
static int op_vector_norm(call *c) {  // keepdim, dims...; p
    return one(c, tt_vector_norm(in0(c), c->f[0], c->nk - 1, dims(c, 1), c->k[0]));
}
// creation and layout
static int op_full(call *c) { return one(c, tt_full(c->fdt, c->nk, c->k, c->f[0])); }
static int op_eye(call *c) { return one(c, tt_eye(c->fdt, c->k[0], c->k[1])); }
static int op_linspace(call *c) {
    return one(c, tt_linspace(c->fdt, c->f[0], c->f[1], c->k[0]));
}
static int op_one_hot(call *c) { return one(c, tt_one_hot(in0(c), c->k[0])); }
static int op_tril(call *c) { return one(c, tt_tril(in0(c), c->k[0])); }
static int op_triu(call *c) { return one(c, tt_triu(in0(c), c->k[0])); }
static int op_repeat(call *c) { return one(c, tt_repeat(in0(c), c->nk, c->k)); }
static int op_tile(call *c) { return one(c, tt_tile(in0(c), c->nk, c->k)); }
static int op_flip(call *c) { return one(c, tt_flip(in0(c), c->nk, dims(c, 0))); }
static int op_roll(call *c) { return one(c, tt_roll(in0(c), c->k[0], (int)c->k[1])); }
static int op_roll_dims(call *c) {  // n, shifts (n), dims (n)
    int n = (int)c->k[0];
    return one(c, tt_roll_dims(in0(c), n, c->k + 1, dims(c, 1 + n)));
}
static int op_pad(call *c) {  // mode, pads...; value
    return one(c, tt_pad(in0(c), c->nk - 1, c->k + 1, (tt_pad_mode)c->k[0], c->f[0]));
}
static int op_split(call *c) {
    return tt_split(in0(c), c->k[0], (int)c->k[1], c->out, MAX_OUT);
}
static int op_split_sizes(call *c) {  // dim, sizes...
    tt_split_sizes(in0(c), c->nk - 1, c->k + 1, (int)c->k[0], c->out);
    return c->nk - 1;
}
static int op_chunk(call *c) { return tt_chunk(in0(c), (int)c->k[0], (int)c->k[1], c->out); }
static int op_unbind(call *c) { return tt_unbind(in0(c), (int)c->k[0], c->out, MAX_OUT); }
static int op_movedim(call *c) { return one(c, tt_movedim(in0(c), c->k[0], c->k[1])); }
static int op_diagonal(call *c) {
    return one(c, tt_diagonal(in0(c), c->k[0], (int)c->k[1], (int)c->k[2]));
}
// indexing, sorting, scans, reductions
static int op_gather(call *c) { return one(c, tt_gather(in0(c), (int)c->k[0], c->in[1])); }
static int op_scatter(call *c) {
    return one(c, tt_scatter(in0(c), (int)c->k[0], c->in[1], c->in[2]));
}
static int op_scatter_add(call *c) {
    return one(c, tt_scatter_add(in0(c), (int)c->k[0], c->in[1], c->in[2]));
}
static int op_index_select(call *c) {
    return one(c, tt_index_select(in0(c), (int)c->k[0], c->in[1]));
}
static int op_index_add(call *c) {
    return one(c, tt_index_add(in0(c), (int)c->k[0], c->in[1], c->in[2], c->f[0]));
}
static int op_sort(call *c) {  // dim, descending
    tt_sort(in0(c), (int)c->k[0], c->k[1], &c->out[0], &c->out[1]);
    return 2;
}
static int op_argsort(call *c) { return one(c, tt_argsort(in0(c), (int)c->k[0], c->k[1])); }
static int op_topk(call *c) {  // k, dim, largest (always sorted)
    tt_topk(in0(c), c->k[0], (int)c->k[1], c->k[2], true, &c->out[0], &c->out[1]);
    return 2;
}
static int op_cumsum(call *c) { return one(c, tt_cumsum(in0(c), (int)c->k[0])); }
static int op_cumprod(call *c) { return one(c, tt_cumprod(in0(c), (int)c->k[0])); }
static int op_prod(call *c) { return one(c, tt_prod(in0(c), c->nk - 1, dims(c, 1), c->k[0])); }
static int op_max(call *c) { return one(c, tt_max(in0(c), c->nk - 1, dims(c, 1), c->k[0])); }
static int op_min(call *c) { return one(c, tt_min(in0(c), c->nk - 1, dims(c, 1), c->k[0])); }
static int op_argmax(call *c) { return one(c, tt_argmax(in0(c), (int)c->k[0], c->k[1])); }
static int op_argmin(call *c) { return one(c, tt_argmin(in0(c), (int)c->k[0], c->k[1])); }
static int op_max_dim(call *c) {
    tt_max_dim(in0(c), (int)c->k[0], c->k[1], &c->out[0], &c->out[1]);
    return 2;
}
static int op_min_dim(call *c) {
    tt_min_dim(in0(c), (int)c->k[0], c->k[1], &c->out[0], &c->out[1]);
    return 2;
}
// losses (k[0]: the tt_reduction)
static int op_l1_loss(call *c) { return one(c, tt_l1_loss(in0(c), c->in[1], c->k[0])); }
static int op_mse_loss(call *c) { return one(c, tt_mse_loss_ex(in0(c), c->in[1], c->k[0])); }
static int op_smooth_l1_loss(call *c) {
    return one(c, tt_smooth_l1_loss(in0(c), c->in[1], c->f[0], c->k[0]));
}
static int op_huber_loss(call *c) {
    return one(c, tt_huber_loss(in0(c), c->in[1], c->f[0], c->k[0]));
}
static int op_kl_div(call *c) { return one(c, tt_kl_div(in0(c), c->in[1], c->k[0], c->k[1])); }
static int op_bce(call *c) {
    return one(c, tt_binary_cross_entropy(in0(c), c->in[1], opt(c, 2), c->k[0]));
}
static int op_bce_with_logits(call *c) {
    return one(c, tt_bce_with_logits_ex(in0(c), c->in[1], opt(c, 2), c->k[0]));
}
static int op_nll_loss(call *c) {  // ignore_index, reduction
    return one(c, tt_nll_loss(in0(c), c->in[1], opt(c, 2), c->k[0], c->k[1]));
}
static int op_cross_entropy(call *c) {  // ignore_index, reduction; label_smoothing
    return one(c, tt_cross_entropy_nc(in0(c), c->in[1], opt(c, 2), c->k[0], c->k[1], c->f[0]));
}

// convolutions, pooling, batch norm and the rest of the CNN vocabulary (the script's order)
static int op_conv2d(call *c) {
    return one(c, tt_conv2d(in0(c), c->in[1], opt(c, 2), c->k, c->k + 2, c->k + 4, c->k[6]));
}
static int op_conv1d(call *c) {
    return one(c, tt_conv1d(in0(c), c->in[1], opt(c, 2), c->k[0], c->k[1], c->k[2], c->k[3]));
}
static int op_conv_transpose2d(call *c) {
    return one(c, tt_conv_transpose2d(in0(c), c->in[1], opt(c, 2), c->k, c->k + 2, c->k + 4,
                                      c->k[6], c->k + 7));
}
static int op_max_pool2d(call *c) {
    c->out[0] = tt_max_pool2d(in0(c), c->k, c->k + 2, c->k + 4, &c->out[1]);
    return 2;
}
static int op_avg_pool2d(call *c) {
    return one(c, tt_avg_pool2d(in0(c), c->k, c->k + 2, c->k + 4, c->k[6]));
}
static int op_adaptive_avg_pool2d(call *c) {
    return one(c, tt_adaptive_avg_pool2d(in0(c), c->k[0], c->k[1]));
}
// y and copies of the running stats after the update (the inputs stay as they were)
static int op_batch_norm(call *c) {
    c->out[1] = tt_clone(c->in[1]);
    c->out[2] = tt_clone(c->in[2]);
    c->out[0] = tt_batch_norm(in0(c), c->out[1], c->out[2], opt(c, 3), opt(c, 4), c->k[0],
                              c->f[0], c->f[1]);
    return 3;
}
static int op_dropout2d(call *c) { return one(c, tt_dropout2d(in0(c), c->f[0], c->k[0], NULL)); }
static int op_upsample_nearest2d(call *c) {
    if (c->nk == 2) return one(c, tt_upsample_nearest2d(in0(c), c->k[0], c->k[1]));
    return one(c, tt_upsample_nearest2d_scale(in0(c), c->f[0], c->f[1]));
}
static int op_unflatten(call *c) {
    return one(c, tt_unflatten(in0(c), (int)c->k[0], c->k + 1, c->nk - 1));
}

// One line per op: the name in the file, the inputs (min and max), the integer and float
// arguments it needs at least, the call.
typedef struct op_row {
    const char *name;
    int nin_min, nin_max, nk_min, nf_min;
    op_fn fn;
} op_row;

static const op_row ops[] = {
    {"transpose", 1, 1, 2, 0, op_transpose},
    {"permute", 1, 1, 0, 0, op_permute},
    {"slice", 1, 1, 4, 0, op_slice},
    {"expand", 1, 1, 0, 0, op_expand},
    {"unsqueeze", 1, 1, 1, 0, op_unsqueeze},
    {"reshape", 1, 1, 1, 0, op_reshape},
    {"add", 2, 2, 0, 0, op_add},
    {"mul", 2, 2, 0, 0, op_mul},
    {"to_float", 1, 1, 0, 0, op_to_float},
    {"sigmoid", 1, 1, 0, 0, op_sigmoid},
    {"log_softmax", 1, 1, 1, 0, op_log_softmax},
    {"eq", 2, 2, 0, 0, op_eq},
    {"ne", 2, 2, 0, 0, op_ne},
    {"lt", 2, 2, 0, 0, op_lt},
    {"le", 2, 2, 0, 0, op_le},
    {"gt", 2, 2, 0, 0, op_gt},
    {"ge", 2, 2, 0, 0, op_ge},
    {"eq_scalar", 1, 1, 0, 1, op_eq_scalar},
    {"ne_scalar", 1, 1, 0, 1, op_ne_scalar},
    {"lt_scalar", 1, 1, 0, 1, op_lt_scalar},
    {"le_scalar", 1, 1, 0, 1, op_le_scalar},
    {"gt_scalar", 1, 1, 0, 1, op_gt_scalar},
    {"ge_scalar", 1, 1, 0, 1, op_ge_scalar},
    {"logical_and", 2, 2, 0, 0, op_logical_and},
    {"logical_or", 2, 2, 0, 0, op_logical_or},
    {"logical_xor", 2, 2, 0, 0, op_logical_xor},
    {"logical_not", 1, 1, 0, 0, op_logical_not},
    {"where", 3, 3, 0, 0, op_where},
    {"masked_select", 2, 2, 0, 0, op_masked_select},
    {"nonzero", 1, 1, 0, 0, op_nonzero},
    {"sin", 1, 1, 0, 0, op_sin},
    {"erf", 1, 1, 0, 0, op_erf},
    {"cos", 1, 1, 0, 0, op_cos},
    {"log1p", 1, 1, 0, 0, op_log1p},
    {"expm1", 1, 1, 0, 0, op_expm1},
    {"reciprocal", 1, 1, 0, 0, op_reciprocal},
    {"sign", 1, 1, 0, 0, op_sign},
    {"floor", 1, 1, 0, 0, op_floor},
    {"ceil", 1, 1, 0, 0, op_ceil},
    {"round", 1, 1, 0, 0, op_round},
    {"leaky_relu", 1, 1, 0, 1, op_leaky_relu},
    {"elu", 1, 1, 0, 1, op_elu},
    {"clamp", 1, 1, 0, 2, op_clamp},
    {"clip", 1, 1, 0, 2, op_clip},
    {"softplus", 1, 1, 0, 2, op_softplus},
    {"logsumexp", 1, 1, 1, 0, op_logsumexp},
    {"std", 1, 1, 2, 0, op_std},
    {"vector_norm", 1, 1, 1, 1, op_vector_norm},
    {"full", 0, 0, 0, 1, op_full},
    {"eye", 0, 0, 2, 0, op_eye},
    {"linspace", 0, 0, 1, 2, op_linspace},
    {"one_hot", 1, 1, 1, 0, op_one_hot},
    {"tril", 1, 1, 1, 0, op_tril},
    {"triu", 1, 1, 1, 0, op_triu},
    {"repeat", 1, 1, 0, 0, op_repeat},
    {"tile", 1, 1, 0, 0, op_tile},
    {"flip", 1, 1, 0, 0, op_flip},
    {"roll", 1, 1, 2, 0, op_roll},
    {"roll_dims", 1, 1, 1, 0, op_roll_dims},
    {"pad", 1, 1, 1, 1, op_pad},
    {"split", 1, 1, 2, 0, op_split},
    {"split_sizes", 1, 1, 1, 0, op_split_sizes},
    {"chunk", 1, 1, 2, 0, op_chunk},
    {"unbind", 1, 1, 1, 0, op_unbind},
    {"movedim", 1, 1, 2, 0, op_movedim},
    {"diagonal", 1, 1, 3, 0, op_diagonal},
    {"gather", 2, 2, 1, 0, op_gather},
    {"scatter", 3, 3, 1, 0, op_scatter},
    {"scatter_add", 3, 3, 1, 0, op_scatter_add},
    {"index_select", 2, 2, 1, 0, op_index_select},
    {"index_add", 3, 3, 1, 1, op_index_add},
    {"sort", 1, 1, 2, 0, op_sort},
    {"argsort", 1, 1, 2, 0, op_argsort},
    {"topk", 1, 1, 3, 0, op_topk},
    {"cumsum", 1, 1, 1, 0, op_cumsum},
    {"cumprod", 1, 1, 1, 0, op_cumprod},
    {"prod", 1, 1, 1, 0, op_prod},
    {"max", 1, 1, 1, 0, op_max},
    {"min", 1, 1, 1, 0, op_min},
    {"argmax", 1, 1, 2, 0, op_argmax},
    {"argmin", 1, 1, 2, 0, op_argmin},
    {"max_dim", 1, 1, 2, 0, op_max_dim},
    {"min_dim", 1, 1, 2, 0, op_min_dim},
    {"l1_loss", 2, 2, 1, 0, op_l1_loss},
    {"mse_loss", 2, 2, 1, 0, op_mse_loss},
    {"smooth_l1_loss", 2, 2, 1, 1, op_smooth_l1_loss},
    {"huber_loss", 2, 2, 1, 1, op_huber_loss},
    {"kl_div", 2, 2, 2, 0, op_kl_div},
    {"binary_cross_entropy", 2, 3, 1, 0, op_bce},
    {"bce_with_logits", 2, 3, 1, 0, op_bce_with_logits},
    {"nll_loss", 2, 3, 2, 0, op_nll_loss},
    {"cross_entropy", 2, 3, 2, 1, op_cross_entropy},
    {"conv2d", 2, 3, 7, 0, op_conv2d},
    {"conv1d", 2, 3, 4, 0, op_conv1d},
    {"conv_transpose2d", 2, 3, 9, 0, op_conv_transpose2d},
    {"max_pool2d", 1, 1, 6, 0, op_max_pool2d},
    {"avg_pool2d", 1, 1, 7, 0, op_avg_pool2d},
    {"adaptive_avg_pool2d", 1, 1, 2, 0, op_adaptive_avg_pool2d},
    {"batch_norm", 3, 5, 1, 2, op_batch_norm},
    {"dropout2d", 1, 1, 1, 1, op_dropout2d},
    {"upsample_nearest2d", 1, 1, 0, 0, op_upsample_nearest2d},
    {"unflatten", 1, 1, 2, 0, op_unflatten},
};
#define NOPS ((int)(sizeof ops / sizeof ops[0]))

static const op_row *find_op(const char *name) {
    for (int i = 0; i < NOPS; i++)
        if (!strcmp(ops[i].name, name)) return &ops[i];
    return NULL;
}

// ---- the data file ----

typedef struct text {
    char *buf;
    char **line;  // '\0'-terminated lines
    int nline;
    int *prog;  // the line of each "program N"
    int nprog;
    int count;  // the "count N" line
} text;

static const char *data_path(void) {
    const char *p = getenv("TT_PARITY_FILE");
    return p ? p : "tests/reference/random_programs.txt";
}

static void load(text *t) {
    memset(t, 0, sizeof *t);
    FILE *fp = fopen(data_path(), "rb");
    ck_assert_msg(fp, "cannot open %s (run from the repository root, or set TT_PARITY_FILE)",
                  data_path());
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    t->buf = malloc((size_t)n + 1);
    ck_assert(t->buf && fread(t->buf, 1, (size_t)n, fp) == (size_t)n);
    fclose(fp);
    t->buf[n] = '\0';
    int cap = 1;
    for (long i = 0; i < n; i++) cap += t->buf[i] == '\n';
    t->line = malloc(sizeof(char *) * (size_t)cap);
    t->prog = malloc(sizeof(int) * (size_t)cap);
    t->count = -1;
    for (char *s = t->buf; *s;) {
        char *e = strchr(s, '\n');
        if (e) *e = '\0';
        if (!strncmp(s, "program ", 8)) t->prog[t->nprog++] = t->nline;
        if (!strncmp(s, "count ", 6)) t->count = atoi(s + 6);
        t->line[t->nline++] = s;
        if (!e) break;
        s = e + 1;
    }
}

static void unload(text *t) {
    free(t->buf);
    free(t->line);
    free(t->prog);
}

// ---- replaying one program ----

typedef struct replay {
    const text *t;
    int prog;        // index into t->prog
    tt_dtype dtype;  // of the run
    bool quiet;      // no report on a mismatch
    char why[512];   // the first mismatch
    int nbad;
} replay;

static const replay *current;  // for the abort hook

// Prints the program: its lines without the long value lists, with the shapes of the leaves.
static void print_program(const replay *r) {
    const text *t = r->t;
    fprintf(stderr, "--- %s program %d (%s): %s\n", data_path(), r->prog,
            r->dtype == TT_F64 ? "f64" : "f32", r->why);
    for (int i = t->prog[r->prog]; i < t->nline && strcmp(t->line[i], "end"); i++) {
        const char *l = t->line[i];
        const char *colon = strstr(l, " : ");
        int len = colon ? (int)(colon - l) : (int)strlen(l);
        fprintf(stderr, "    %.*s%s\n", len, l, colon ? " : ..." : "");
    }
}

// An abort during a replay names the program, then ends the test (which fails).
static void fatal_print(const char *message, void *ctx) {
    (void)ctx;
    if (current) {
        replay r = *current;
        snprintf(r.why, sizeof r.why, "the library aborted: %s", message);
        print_program(&r);
    }
    fflush(stderr);
    _exit(3);
}

static void bad(replay *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(replay *r, const char *fmt, ...) {
    if (r->nbad++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

// Reads "NDIM SHAPE... : " from *s; returns false on a malformed line.
static bool read_shape(char **s, int *ndim, int64_t *shape) {
    *ndim = (int)strtol(*s, s, 10);
    if (*ndim < 0 || *ndim > 8) return false;
    for (int i = 0; i < *ndim; i++) shape[i] = strtoll(*s, s, 10);
    while (**s == ' ') (*s)++;
    if (**s != ':') return false;
    (*s)++;
    return true;
}

// Reads n numbers (hex floats, inf, integers) into v; false unless exactly n.
static bool read_values(char *s, double *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        char *e;
        v[i] = strtod(s, &e);
        if (e == s) return false;
        s = e;
    }
    while (*s == ' ') s++;
    return *s == '\0';
}

static int64_t prod(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

// Compares t (shape and every element) with the line's values. tol < 0: exactly.
static void compare(replay *r, const char *what, tt_tensor *t, int ndim, const int64_t *shape,
                    char *s, double tol) {
    if (ndim >= 0) {
        bool same = t->ndim == ndim;
        for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
        if (!same) {
            bad(r, "%s: shape (ndim %d, numel %lld) differs from the reference (ndim %d, "
                "numel %lld)", what, t->ndim, (long long)tt_numel(t), ndim,
                (long long)prod(ndim, shape));
            return;
        }
    }
    int64_t n = tt_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!read_values(s, v, n)) {
        bad(r, "%s: the line does not hold %lld values", what, (long long)n);
        free(v);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double a = tt_at(t, i);
        bool ok = tol < 0 ? a == v[i] : fabs(a - v[i]) <= tol * (1 + fabs(v[i]));
        if (!ok) {
            bad(r, "%s: element %lld is %.17g, PyTorch's %.17g (|diff| %.3g)", what,
                (long long)i, a, v[i], fabs(a - v[i]));
            break;
        }
    }
    free(v);
}

static tt_tensor *make_leaf(char kind, int ndim, const int64_t *shape, const double *v,
                            tt_dtype fdt) {
    int64_t n = prod(ndim, shape);
    if (kind == 'g' || kind == 'c') {
        tt_tensor *t = tt_from_data(TT_F64, ndim, shape, v);
        if (fdt != TT_F64) t = tt_to_dtype(t, fdt);
        return kind == 'g' ? tt_set_requires_grad(t, true) : t;
    }
    if (kind == 'i') {
        int64_t *d = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) d[i] = (int64_t)v[i];
        tt_tensor *t = tt_from_data(TT_I64, ndim, shape, d);
        free(d);
        return t;
    }
    if (kind == 'j') {
        int32_t *d = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) d[i] = (int32_t)v[i];
        tt_tensor *t = tt_from_data(TT_I32, ndim, shape, d);
        free(d);
        return t;
    }
    uint8_t *d = malloc((size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) d[i] = v[i] != 0;
    tt_tensor *t = tt_from_data(TT_BOOL, ndim, shape, d);
    free(d);
    return t;
}

// Reads "COUNT A B ..." of integers; false on a malformed count.
static bool read_ints(char **s, int64_t *v, int *n) {
    *n = (int)strtol(*s, s, 10);
    if (*n < 0 || *n > MAX_ARGS) return false;
    for (int i = 0; i < *n; i++) v[i] = strtoll(*s, s, 10);
    return true;
}

// Runs one op line ("NAME NOUT NIN REG... NINT INT... NFLT FLT...") on the registers.
static void run_op(replay *r, char *s, tt_tensor **regs, int *nregs) {
    char name[64];
    int used = 0;
    if (sscanf(s, "%63s%n", name, &used) != 1) {
        bad(r, "malformed op line");
        return;
    }
    s += used;
    const op_row *row = find_op(name);
    if (!row) {
        bad(r, "op %s is not in the interpreter's table", name);
        return;
    }
    int nout = (int)strtol(s, &s, 10);
    call c = {.fdt = r->dtype};
    int64_t in[MAX_ARGS];
    if (!read_ints(&s, in, &c.nin) || !read_ints(&s, c.k, &c.nk)) {
        bad(r, "op %s: malformed arguments", name);
        return;
    }
    c.nf = (int)strtol(s, &s, 10);
    for (int i = 0; i < c.nf && i < MAX_ARGS; i++) c.f[i] = strtod(s, &s);
    if (c.nin < row->nin_min || c.nin > row->nin_max || c.nk < row->nk_min ||
        c.nf < row->nf_min || c.nf > MAX_ARGS || nout < 1 || nout > MAX_OUT) {
        bad(r, "op %s: wrong argument counts (%d inputs, %d ints, %d floats, %d outputs)", name,
            c.nin, c.nk, c.nf, nout);
        return;
    }
    for (int i = 0; i < c.nin; i++) {
        if (in[i] < 0 || in[i] >= *nregs) {
            bad(r, "op %s: register %lld does not exist", name, (long long)in[i]);
            return;
        }
        c.in[i] = regs[in[i]];
    }
    int got = row->fn(&c);
    if (got != nout || *nregs + got > MAX_REGS) {
        bad(r, "op %s: %d outputs, the reference has %d", name, got, nout);
        return;
    }
    for (int i = 0; i < got; i++) regs[(*nregs)++] = c.out[i];
}

// Replays program r->prog in r->dtype; returns true when everything matched.
static bool replay_program(replay *r) {
    const text *t = r->t;
    const char *dt = r->dtype == TT_F64 ? "f64" : "f32";
    double tol = r->dtype == TT_F64 ? 1e-10 : 1e-5;
    tt_tensor *regs[MAX_REGS] = {0};
    int nregs = 0;
    bool leaf[MAX_REGS] = {0};
    double *v = NULL;
    tt_tensor *out = NULL;  // after the w line
    int ngrad = 0, nout = 0;
    r->nbad = 0;
    r->why[0] = '\0';
    current = r;
    tt_scope_begin();
    bool ended = false;
    for (int i = t->prog[r->prog] + 1; i < t->nline && !r->nbad; i++) {
        char *s = t->line[i];
        char word[16], kind[8];
        int used = 0, ndim, reg;
        int64_t shape[8];
        if (sscanf(s, "%15s%n", word, &used) != 1) continue;
        s += used;
        if (!strcmp(word, "end")) {
            ended = true;
            break;
        } else if (!strcmp(word, "leaf")) {
            if (sscanf(s, "%7s%n", kind, &used) != 1 || !strchr("gcijb", kind[0]) ||
                nregs >= MAX_REGS) {
                bad(r, "malformed leaf line %d", i + 1);
                break;
            }
            s += used;
            if (!read_shape(&s, &ndim, shape)) {
                bad(r, "malformed leaf shape on line %d", i + 1);
                break;
            }
            int64_t n = prod(ndim, shape);
            v = realloc(v, sizeof(double) * (size_t)(n ? n : 1));
            if (!read_values(s, v, n)) {
                bad(r, "line %d does not hold %lld values", i + 1, (long long)n);
                break;
            }
            leaf[nregs] = kind[0] == 'g';
            regs[nregs++] = make_leaf(kind[0], ndim, shape, v, r->dtype);
        } else if (!strcmp(word, "op")) {
            run_op(r, s, regs, &nregs);
        } else if (!strcmp(word, "w")) {  // REG NDIM SHAPE : values; then backward
            reg = (int)strtol(s, &s, 10);
            if (reg < 0 || reg >= nregs || !read_shape(&s, &ndim, shape)) {
                bad(r, "malformed w line %d", i + 1);
                break;
            }
            int64_t n = prod(ndim, shape);
            v = realloc(v, sizeof(double) * (size_t)(n ? n : 1));
            out = regs[reg];
            if (!read_values(s, v, n) || n != tt_numel(out)) {
                bad(r, "w: %lld values for an output of %lld", (long long)n,
                    (long long)tt_numel(out));
                break;
            }
            tt_tensor *w = make_leaf('c', ndim, shape, v, r->dtype);
            tt_backward(tt_sum_all(tt_mul(out, w)));
        } else if (!strcmp(word, "int")) {
            reg = (int)strtol(s, &s, 10);
            if (reg < 0 || reg >= nregs || !read_shape(&s, &ndim, shape)) {
                bad(r, "malformed int line %d", i + 1);
                break;
            }
            char what[64];
            snprintf(what, sizeof what, "integer register %d", reg);
            compare(r, what, regs[reg], ndim, shape, s, -1);
        } else if (!strcmp(word, "out") || !strcmp(word, "grad")) {
            if (sscanf(s, "%7s%n", kind, &used) != 1) {
                bad(r, "malformed line %d", i + 1);
                break;
            }
            s += used;
            if (strcmp(kind, dt)) continue;
            if (!out) {
                bad(r, "line %d comes before the w line", i + 1);
                break;
            }
            if (word[0] == 'o') {
                nout++;
                if (!read_shape(&s, &ndim, shape)) {
                    bad(r, "malformed out line %d", i + 1);
                    break;
                }
                compare(r, "out", out, ndim, shape, s, tol);
                continue;
            }
            reg = (int)strtol(s, &s, 10);
            while (*s == ' ') s++;
            if (reg < 0 || reg >= nregs || !leaf[reg] || *s != ':') {
                bad(r, "grad line %d names no g leaf", i + 1);
                break;
            }
            ngrad++;
            char what[64];
            snprintf(what, sizeof what, "the gradient of leaf register %d", reg);
            tt_tensor *g = tt_grad(regs[reg]);
            if (!g) g = tt_zeros_like(regs[reg]);  // backward did not reach it
            compare(r, what, g, -1, NULL, s + 1, tol);
        } else {
            bad(r, "unknown line %d: %s", i + 1, t->line[i]);
        }
    }
    int nleaf = 0;
    for (int i = 0; i < nregs; i++) nleaf += leaf[i];
    if (!r->nbad && !ended) bad(r, "no end line");
    if (!r->nbad && (nout != 1 || ngrad != nleaf))
        bad(r, "%d out and %d grad lines for %s (want 1 and %d)", nout, ngrad, dt, nleaf);
    tt_scope_end();
    free(v);
    current = NULL;
    if (r->nbad && !r->quiet) print_program(r);
    return r->nbad == 0;
}

// Replays every program in dtype; returns how many failed.
static int replay_all(const text *t, tt_dtype dtype) {
    int fails = 0;
    tt_set_fatal_hook(fatal_print, NULL);
    for (int p = 0; p < t->nprog; p++) {
        replay r = {.t = t, .prog = p, .dtype = dtype};
        fails += !replay_program(&r);
    }
    return fails;
}

// ---- tests ----

START_TEST(test_replay_f64) {
    text t;
    load(&t);
    ck_assert_msg(t.nprog >= 300 && t.count == t.nprog,
                  "%d programs, the count line says %d (want >= 300 and equal)", t.nprog,
                  t.count);
    int fails = replay_all(&t, TT_F64);
    ck_assert_msg(fails == 0, "%d of %d programs differ from PyTorch in f64 (printed above)",
                  fails, t.nprog);
    unload(&t);
}
END_TEST

START_TEST(test_replay_f32) {
    text t;
    load(&t);
    int fails = replay_all(&t, TT_F32);
    ck_assert_msg(fails == 0, "%d of %d programs differ from PyTorch in f32 (printed above)",
                  fails, t.nprog);
    unload(&t);
}
END_TEST

// Every op of the table is used by at least 3 programs, and the file uses no other op.
START_TEST(test_every_op_covered) {
    text t;
    load(&t);
    int uses[NOPS] = {0};
    for (int p = 0; p < t.nprog; p++) {
        bool seen[NOPS] = {0};
        for (int i = t.prog[p] + 1; i < t.nline && strcmp(t.line[i], "end"); i++) {
            char name[64];
            if (sscanf(t.line[i], "op %63s", name) != 1) continue;
            const op_row *row = find_op(name);
            ck_assert_msg(row, "program %d uses op %s, which the table lacks", p, name);
            seen[row - ops] = true;
        }
        for (int k = 0; k < NOPS; k++) uses[k] += seen[k];
    }
    for (int k = 0; k < NOPS; k++)
        ck_assert_msg(uses[k] >= 3, "op %s is used by %d programs (want >= 3): regenerate "
                      "the file with more programs", ops[k].name, uses[k]);
    unload(&t);
}
END_TEST

// Replaces the first value after " : " on the first line of program p that starts with
// `prefix` by f(value); returns the line's index (its old text is in *old).
static int perturb(text *t, int p, const char *prefix, double (*f)(double), char **old) {
    for (int i = t->prog[p] + 1; i < t->nline && strcmp(t->line[i], "end"); i++) {
        if (strncmp(t->line[i], prefix, strlen(prefix))) continue;
        char *colon = strstr(t->line[i], " : ");
        ck_assert(colon);
        char *e;
        double v = strtod(colon + 3, &e);
        size_t cap = strlen(t->line[i]) + 64;
        char *s = malloc(cap);
        snprintf(s, cap, "%.*s : %a%s", (int)(colon - t->line[i]), t->line[i], f(v), e);
        *old = t->line[i];
        t->line[i] = s;
        return i;
    }
    return -1;
}

static double f64_off(double v) { return v + 1e-8 * (1 + fabs(v)); }
static double f32_off(double v) { return v + 1e-4 * (1 + fabs(v)); }
static double int_off(double v) { return v + 1; }

// Each perturbed reference number makes its program fail (and only its dtype's run), so a
// replay that silently skipped a check would show here.
START_TEST(test_perturbed_value_fails) {
    text t;
    load(&t);
    tt_set_fatal_hook(fatal_print, NULL);
    struct {
        const char *prefix;
        double (*f)(double);
        tt_dtype dtype;
    } cases[] = {
        {"out f64", f64_off, TT_F64}, {"grad f64", f64_off, TT_F64},
        {"out f32", f32_off, TT_F32}, {"grad f32", f32_off, TT_F32},
        {"int ", int_off, TT_F64},
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        int done = 0;
        for (int p = 0; p < t.nprog && done < 3; p++) {
            char *old;
            int line = perturb(&t, p, cases[c].prefix, cases[c].f, &old);
            if (line < 0) continue;
            replay r = {.t = &t, .prog = p, .dtype = cases[c].dtype, .quiet = true};
            ck_assert_msg(!replay_program(&r), "program %d: changing a value of '%s' went "
                          "unnoticed", p, cases[c].prefix);
            tt_dtype other = cases[c].dtype == TT_F64 ? TT_F32 : TT_F64;
            if (strcmp(cases[c].prefix, "int ")) {
                replay o = {.t = &t, .prog = p, .dtype = other, .quiet = true};
                ck_assert_msg(replay_program(&o), "program %d: the %s run failed: %s", p,
                              other == TT_F64 ? "f64" : "f32", o.why);
            }
            free(t.line[line]);
            t.line[line] = old;
            done++;
        }
        ck_assert_msg(done == 3, "fewer than 3 programs have a '%s' line", cases[c].prefix);
    }
    unload(&t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("parity_programs");
    TCase *tc = tt_tcase("replay");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_replay_f64);
    tcase_add_test(tc, test_replay_f32);
    tcase_add_test(tc, test_every_op_covered);
    tcase_add_test(tc, test_perturbed_value_fails);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}
