// tinytorch.c autograd: differentiable ops recorded on a dynamic tape, backward, gradcheck.
// Ownership follows tensor.h: ops return new references (owned by the current scope).
//
//     tt_tensor *w = tt_set_requires_grad(tt_randn(&rng, TT_F64, TT_SHAPE(3, 2)), true);
//     tt_scope_begin();
//     tt_tensor *y = tt_tanh(tt_matmul(x, w));
//     tt_tensor *loss = tt_mean(tt_square(y), 0, NULL, false);
//     tt_backward(loss);            // w->grad now holds d loss / d w
//     tt_scope_end();               // frees y, loss and the tape; w and w->grad live on
//
// An op records a tape node when grad mode is on and any input requires grad. The node keeps
// its inputs (and what the backward needs) alive until the graph is freed: by tt_backward,
// or when the output is released. Backward accumulates (+=) into leaves' .grad; only
// tt_zero_grad resets it.
//
// Dtypes: float ops take TT_F32 or TT_F64, and the float inputs of one op share a dtype (no
// silent promotion: convert with tt_to_dtype). Index inputs are TT_I32 or TT_I64. Where PyTorch
// takes integer and bool data, so do these, exactly and without gradient: comparisons, where,
// masked_select / masked_fill, gather, scatter(_add), index_select / index_add, sort, topk,
// the scans, sum, prod, max, min, argmax, argmin, max_dim, min_dim, all / any, the shape and
// layout ops.
// Dims may be negative (counted from the end). `ndims == 0` in a reduction means all dims.
#ifndef TT_AUTOGRAD_H
#define TT_AUTOGRAD_H

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- the op table ----

typedef enum tt_op {
#define TT_OP(ID, name, arity, saves) TT_OP_##ID,
#include "../tensor/ops.def"
    TT_OP_COUNT
} tt_op;

const char *tt_op_name(tt_op op);
int tt_op_arity(tt_op op);                // -1: variadic
bool tt_op_differentiable(tt_op op);
// Bit i is set when op's backward reads the values of input i (the `saves` column of ops.def):
// writing such an input in place between the op and backward would change the gradient.
unsigned tt_op_saved_inputs(tt_op op);

// Flags of the elementwise rows of ops.def (see its header).
#define TT_EW_OUT 0x1u     // the backward reads the output
#define TT_EW_PASS_A 0x2u  // the gradient of the first input is g itself
#define TT_EW_PASS_B 0x4u  // the gradient of the second input is g itself
#define TT_EW_KINK0 0x8u   // gradcheck: inputs stay 0.1 away from 0
#define TT_EW_APART 0x10u  // gradcheck: a and b stay 0.1 apart

// ---- grad mode, leaves, backward ----

bool tt_set_grad_enabled(bool enabled);  // returns the previous mode
bool tt_is_grad_enabled(void);
tt_tensor *tt_set_requires_grad(tt_tensor *t, bool requires_grad);  // leaves only; returns t
tt_tensor *tt_grad(const tt_tensor *t);  // borrowed; NULL before any backward reached t
void tt_zero_grad(tt_tensor *t);         // drops t->grad
tt_tensor *tt_detach(tt_tensor *t);      // shares storage, no history, requires_grad false

// Backward from a tensor with one element (seeded with 1).
void tt_backward(tt_tensor *loss);
// Backward from any tensor with an explicit gradient of the same shape and dtype.
void tt_backward_with(tt_tensor *out, tt_tensor *grad);
// The general form; retain_graph keeps the graph for another backward through it.
void tt_backward_ex(tt_tensor *out, tt_tensor *grad, bool retain_graph);
// Calls visit(leaf, op, ctx) once for each leaf that requires grad and that t depends on, i.e.
// each tensor a backward from t would give a .grad to, in the order backward reaches them; op
// names the op that first consumes the leaf (NULL when the leaf is t itself). Nothing when t
// does not require grad. Call it before tt_backward (which frees the graph) or after
// tt_backward_ex with retain_graph. A debugging aid (tt_params_check_reaches in nn.h uses it).
typedef void (*tt_leaf_visit)(tt_tensor *leaf, const char *op, void *ctx);
void tt_graph_leaves(tt_tensor *t, tt_leaf_visit visit, void *ctx);

// ---- elementwise ----
// The rows of ops.def (each with its documentation) declare these: tt_<name>(a, b) for a
// TT_BINARY row (NumPy broadcasting between the operands), tt_<name>(x, double s) for a
// TT_UNARY_S row, tt_<name>(x) for a TT_UNARY row. For example tt_add, tt_mul, tt_maximum,
// tt_add_scalar, tt_pow_scalar, tt_exp, tt_relu, tt_gelu, tt_silu, tt_square. make writes
// their prototypes, each under its row, into ops_generated.h (scripts/gen_ops.sh).
#include "ops_generated.h"

// Compositions of the above (no row of their own).
tt_tensor *tt_sub_scalar(tt_tensor *a, double s);   // a - s: add_scalar(a, -s), exact
tt_tensor *tt_rsub_scalar(double s, tt_tensor *a);  // s - a: add_scalar(neg(a), s), exact

// ---- reductions over a set of dims (ndims == 0: all dims) ----

// The sum of an integer or bool x is TT_I64, exact (wrapping on overflow), with no gradient, as
// torch.sum (a bool sum counts the true elements). The mean of one aborts, as in PyTorch
// (convert it to a float dtype first).
tt_tensor *tt_sum(tt_tensor *x, int ndims, const int *dims, bool keepdim);
tt_tensor *tt_mean(tt_tensor *x, int ndims, const int *dims, bool keepdim);
// Max values; the gradient goes to the maxima, split evenly among ties. An integer or bool x
// gives its exact maxima in its own dtype, without gradient (torch.amax).
tt_tensor *tt_max(tt_tensor *x, int ndims, const int *dims, bool keepdim);
// Variance with `correction` subtracted from the count: 0 biased, 1 unbiased (Bessel).
tt_tensor *tt_var(tt_tensor *x, int ndims, const int *dims, int correction, bool keepdim);
// Index of the first maximum along one dim, as TT_I64. Not differentiable. Integer x: exact;
// bool x aborts, as in PyTorch (tt_max_dim takes it).
tt_tensor *tt_argmax(tt_tensor *x, int dim, bool keepdim);
tt_tensor *tt_sum_all(tt_tensor *x);   // 0-dim
tt_tensor *tt_mean_all(tt_tensor *x);  // 0-dim
// Whether every (all) / some (any) element over dims is nonzero (NaN counts as nonzero), as
// TT_BOOL, for x of any dtype; over zero elements all is true and any false. No gradient.
// torch.all / torch.any (which in 1.13 take one dim; here any set, like tt_sum).
//     bool ok = tt_item(tt_all_all(tt_eq(pred, targets)));   // every prediction right
tt_tensor *tt_all(tt_tensor *x, int ndims, const int *dims, bool keepdim);
tt_tensor *tt_any(tt_tensor *x, int ndims, const int *dims, bool keepdim);
tt_tensor *tt_all_all(tt_tensor *x);  // 0-dim
tt_tensor *tt_any_all(tt_tensor *x);  // 0-dim

// ---- matmul ----

// NumPy semantics: 1-D x 1-D is a dot product; 2-D x 2-D a matrix product; N-d operands are
// stacks of matrices whose batch dims broadcast; a 1-D operand gets a dim of 1 prepended
// (left) or appended (right), removed from the result. Transposed views are read in place.
tt_tensor *tt_matmul(tt_tensor *a, tt_tensor *b);
// x @ weight^T + bias, PyTorch's F.linear: x (..., in), weight (out, in), bias (out) or NULL
// -> (..., out). One GEMM over all leading dims of x with the bias added as the product is
// stored; the backward computes dx = g @ weight, dweight = g^T @ x, dbias = g summed over rows.
// The same values as tt_add(tt_matmul(x, tt_transpose(weight, 0, 1)), bias), in one node.
tt_tensor *tt_affine(tt_tensor *x, tt_tensor *weight, tt_tensor *bias);

// ---- neural-network ops ----

tt_tensor *tt_softmax(tt_tensor *x, int dim);
tt_tensor *tt_log_softmax(tt_tensor *x, int dim);
// x where mask == 0, value where mask != 0; mask (any dtype) broadcasts to x. value may be
// -INFINITY; a softmax over a fully masked row is then 0, never NaN, in forward and backward.
// An integer or bool x is filled exactly with value converted to its dtype (no gradient).
tt_tensor *tt_masked_fill(tt_tensor *x, tt_tensor *mask, double value);
// Normalizes over the last `norm_ndim` dims; weight and bias (that shape) may be NULL.
tt_tensor *tt_layernorm(tt_tensor *x, int norm_ndim, tt_tensor *weight, tt_tensor *bias,
                        double eps);
// x / sqrt(mean(x^2) + eps) * weight over the last dim; weight (C,) may be NULL.
tt_tensor *tt_rmsnorm(tt_tensor *x, tt_tensor *weight, double eps);
// weight (V, C), indices (...) of TT_I32/TT_I64 in [0, V) -> (..., C).
tt_tensor *tt_embedding(tt_tensor *weight, tt_tensor *indices);
// Classes in the LAST dim: logits (..., V), targets (...) of TT_I32/TT_I64 -> 0-dim mean of
// -log softmax(logits)[target] over the targets that are not ignore_index (0 if all are
// ignored). label_smoothing in [0, 1). For 2-D (N, V) logits this is F.cross_entropy; for
// PyTorch's (N, C, d1, ...) layout, a weight or a reduction use tt_cross_entropy_nc (nn/loss.h).
tt_tensor *tt_cross_entropy(tt_tensor *logits, tt_tensor *targets, int64_t ignore_index);
tt_tensor *tt_cross_entropy_smooth(tt_tensor *logits, tt_tensor *targets,
                                   int64_t ignore_index, double label_smoothing);
// Zeroes each element with probability p and scales the rest by 1/(1-p) when training;
// returns x unchanged (a new reference) when !training or p == 0.
tt_tensor *tt_dropout(tt_tensor *x, double p, bool training, tt_rng *rng);

// ---- shape ops (views share storage; their gradients flow back) ----

// One dim may be -1 (inferred). A view when the strides allow, otherwise a copy.
tt_tensor *tt_reshape(tt_tensor *x, int ndim, const int64_t *shape);
// Like tt_reshape, but aborts instead of copying.
tt_tensor *tt_view(tt_tensor *x, int ndim, const int64_t *shape);
// torch.flatten: dims start_dim .. end_dim (inclusive, negative count from the end) merged
// into one; tt_flatten(x, 0, -1) is 1-D. A view when the strides allow, otherwise a copy.
tt_tensor *tt_flatten(tt_tensor *x, int start_dim, int end_dim);
tt_tensor *tt_transpose(tt_tensor *x, int dim0, int dim1);
tt_tensor *tt_permute(tt_tensor *x, const int *dims);  // x->ndim entries
// Elements start, start+step, ... < end along dim; negative start/end count from the end and
// are clamped as in Python; step >= 1.
tt_tensor *tt_slice(tt_tensor *x, int dim, int64_t start, int64_t end, int64_t step);
tt_tensor *tt_narrow(tt_tensor *x, int dim, int64_t start, int64_t length);
// torch.select / x[:, i]: the view at `index` along dim, dim removed; negative dim and index
// count from the end.
tt_tensor *tt_select(tt_tensor *x, int dim, int64_t index);
// Size-1 dims repeat (stride 0); -1 keeps a size; new leading dims may be added.
tt_tensor *tt_expand(tt_tensor *x, int ndim, const int64_t *shape);
tt_tensor *tt_broadcast_to(tt_tensor *x, int ndim, const int64_t *shape);
tt_tensor *tt_squeeze(tt_tensor *x, int dim);    // dim must have size 1
tt_tensor *tt_unsqueeze(tt_tensor *x, int dim);  // dim in [-(ndim+1), ndim]
tt_tensor *tt_cat(int n, tt_tensor *const *xs, int dim);
tt_tensor *tt_stack(int n, tt_tensor *const *xs, int dim);
tt_tensor *tt_contiguous(tt_tensor *x);  // x itself (a new reference) when already contiguous
tt_tensor *tt_clone(tt_tensor *x);       // always a copy
tt_tensor *tt_to_dtype(tt_tensor *x, tt_dtype dtype);  // a copy; float <-> float keeps grad

// ---- attention ----

// y = softmax(q k^T scale [+ mask] [+ causal mask]) v without forming the (T, S) weights (an
// online softmax over key tiles; the backward recomputes them), PyTorch 2's
// F.scaled_dot_product_attention without dropout. q (B, NH, T, HS); k and v (B, NKV, S, HS)
// with NH % NKV == 0: query head h attends with kv head h / (NH / NKV) (grouped-query
// attention, no copies of k and v). T != S is fine (cross-attention). The usual scale is
// 1 / sqrt(HS). Any layout is accepted; a unit-stride head dim is read in place. y is
// (B, NH, T, HS), a view of (B, T, NH, HS) memory. No dropout on the weights (compose
// softmax, dropout and matmul for that).
//   mask: NULL, or a tensor broadcastable to the scores (B, NH, T, S), e.g. (T, S),
//     (B, 1, 1, S) or (B, NH, T, S), read in place (no (B, NH, T, S) copy). TT_BOOL: TRUE =
//     the key TAKES PART (PyTorch's SDPA convention; nn.MultiheadAttention's is the opposite,
//     see tt_nn_attention_forward_mask). A float mask of q's dtype is ADDED to the scaled scores
//     (-inf removes a key); if it requires grad it gets dL/dscores summed over its broadcast
//     dims (learned relative-position biases, ALiBi), which needs a (B, NH, T, S) buffer.
//   causal: query i sees keys 0 .. i (needs T == S). With a mask both apply (PyTorch forbids
//     the pair; it is well defined, so we allow it).
// A query whose keys are all masked gets y = 0 and zero gradients (as PyTorch >= 2.5; 1.13's
// composed softmax gives NaN).
tt_tensor *tt_scaled_dot_product_attention(tt_tensor *q, tt_tensor *k, tt_tensor *v,
                                           tt_tensor *mask, bool causal, double scale);

// ---- comparison and selection (autograd/ops_compare.c) ----
// PyTorch's torch.eq ... torch.nonzero. Comparisons and logical ops broadcast (NumPy rules),
// take any dtypes (PyTorch's promotion: an f32 against an integer, a bool or a 0-dim f64
// compares in f32, otherwise in double; integers beyond 2^53 lose precision) and return
// TT_BOOL without gradient. NaN compares unequal to everything (ne is true) and is true as a
// logical value.
//     tt_tensor *acc = tt_mean_all(tt_to_dtype(tt_eq(tt_argmax(logits, -1, false), targets),
//                                              TT_F32));   // accuracy

tt_tensor *tt_eq(tt_tensor *a, tt_tensor *b);  // a == b
tt_tensor *tt_ne(tt_tensor *a, tt_tensor *b);  // a != b
tt_tensor *tt_lt(tt_tensor *a, tt_tensor *b);  // a < b
tt_tensor *tt_le(tt_tensor *a, tt_tensor *b);  // a <= b
tt_tensor *tt_gt(tt_tensor *a, tt_tensor *b);  // a > b
tt_tensor *tt_ge(tt_tensor *a, tt_tensor *b);  // a >= b
// x op s; s is taken in x's dtype when x is f32 (torch: tensor([0.1]) == 0.1 is True).
tt_tensor *tt_eq_scalar(tt_tensor *x, double s);
tt_tensor *tt_ne_scalar(tt_tensor *x, double s);
tt_tensor *tt_lt_scalar(tt_tensor *x, double s);
tt_tensor *tt_le_scalar(tt_tensor *x, double s);
tt_tensor *tt_gt_scalar(tt_tensor *x, double s);
tt_tensor *tt_ge_scalar(tt_tensor *x, double s);
tt_tensor *tt_logical_and(tt_tensor *a, tt_tensor *b);  // (a != 0) and (b != 0)
tt_tensor *tt_logical_or(tt_tensor *a, tt_tensor *b);
tt_tensor *tt_logical_xor(tt_tensor *a, tt_tensor *b);
tt_tensor *tt_logical_not(tt_tensor *x);                // x == 0
// cond ? a : b elementwise, all three broadcast together; cond any dtype (nonzero is true);
// a and b of one float dtype, or both integer / bool: then PyTorch's promotion (i32 and i64
// give i64, bool and i32 give i32; a 0-dim operand does not widen one with dims of its kind:
// where(c, i32 (n,), i64 0-dim) is i32), exact. A float with an integer or bool aborts
// (convert with tt_to_dtype). Gradient to float a and b (0 where not chosen).
tt_tensor *tt_where(tt_tensor *cond, tt_tensor *a, tt_tensor *b);
// The elements of x where mask (any dtype, nonzero is true) holds, x and mask broadcast
// together, in row-major order: 1-D. The gradient scatters back into x.
tt_tensor *tt_masked_select(tt_tensor *x, tt_tensor *mask);
// The indices of x's nonzero elements, row-major: (N, x->ndim) TT_I64. Not differentiable.
tt_tensor *tt_nonzero(tt_tensor *x);

// ---- more math (rows of ops.def; autograd/ops_math.c) ----
// The elementwise rows tt_sin, tt_cos, tt_log1p, tt_expm1, tt_reciprocal, tt_erf, tt_sign,
// tt_floor, tt_ceil, tt_round (halves to even), tt_leaky_relu(x, negative_slope),
// tt_elu(x, alpha) are declared with the others above. sign, floor, ceil and round have a zero gradient (PyTorch).

// min(max(x, lo), hi) (torch.clamp); -INFINITY / INFINITY for no bound; lo > hi gives hi. The
// gradient passes where lo <= x <= hi, the bounds included (as PyTorch). tt_clip: the same.
tt_tensor *tt_clamp(tt_tensor *x, double lo, double hi);
tt_tensor *tt_clip(tt_tensor *x, double lo, double hi);
// log(1 + e^(beta x)) / beta, or x itself where beta x > threshold (torch's F.softplus;
// its defaults are beta 1, threshold 20). Never overflows.
tt_tensor *tt_softplus(tt_tensor *x, double beta, double threshold);
// log(sum(e^x)) over dims (ndims == 0: all), stable; a slice of all -inf gives -inf.
tt_tensor *tt_logsumexp(tt_tensor *x, int ndims, const int *dims, bool keepdim);
// sqrt(tt_var(...)); the gradient is 0 where the result is 0 (as PyTorch).
tt_tensor *tt_std(tt_tensor *x, int ndims, const int *dims, int correction, bool keepdim);
// torch.linalg.vector_norm (torch.norm's vector case) over dims for p = 1, 2 or INFINITY
// (others abort); named so because nn.h's tt_nn_norm is the layer type. The 2-norm's
// gradient is 0 where the norm is 0, the inf-norm's splits evenly among tied maxima of |x|.
tt_tensor *tt_vector_norm(tt_tensor *x, double p, int ndims, const int *dims, bool keepdim);

// ---- creation and layout (autograd/ops_layout.c) ----
// PyTorch's semantics. Compositions of the shape ops above (their gradients come with them),
// except flip (a copy) and diagonal (a view), which have rows. tril and triu (built on
// masked_fill) and the others take any dtype.

// x (..., R, C): the elements with j - i <= k kept (tril) / j - i >= k kept (triu), others 0.
tt_tensor *tt_tril(tt_tensor *x, int64_t k);
tt_tensor *tt_triu(tt_tensor *x, int64_t k);
// torch.Tensor.repeat: ndim >= x->ndim counts; x is viewed with leading 1s, then each dim i
// repeated reps[i] times (0 gives an empty dim). A copy.
tt_tensor *tt_repeat(tt_tensor *x, int ndim, const int64_t *reps);
// torch.tile: like repeat, but fewer reps than dims are padded with leading 1s.
tt_tensor *tt_tile(tt_tensor *x, int ndim, const int64_t *reps);
// Reverses the given dims (distinct). A copy.
tt_tensor *tt_flip(tt_tensor *x, int ndims, const int *dims);
// Shifts the elements along dim by shift (negative: the other way), wrapping around. A copy.
tt_tensor *tt_roll(tt_tensor *x, int64_t shift, int dim);
// Rolls by shifts[i] along dims[i] for each i in turn (torch.roll with tuples).
tt_tensor *tt_roll_dims(tt_tensor *x, int n, const int64_t *shifts, const int *dims);
// torch.roll without dims: rolls the flattened x by shift, then restores x's shape. A copy.
tt_tensor *tt_roll_flat(tt_tensor *x, int64_t shift);
typedef enum tt_pad_mode { TT_PAD_CONSTANT, TT_PAD_REFLECT, TT_PAD_MODE_COUNT } tt_pad_mode;
// F.pad: npad (even, npad / 2 <= ndim) sizes, the last dim first: (left, right, top, bottom,
// ...). Constant: new elements are `value`; a negative size crops. Reflect: mirrors x without
// repeating the edge; each size in [0, the dim's size - 1]; `value` is ignored.
tt_tensor *tt_pad(tt_tensor *x, int npad, const int64_t *pad, tt_pad_mode mode, double value);
// The reverse of tt_cat: views of x along dim written to out (capacity cap), returning how
// many. tt_split (torch.split with an int): pieces of split_size (the last may be smaller;
// one piece when the dim is empty); out may be NULL with cap 0 to ask for the count. split_sizes: n pieces of the given
// sizes (their sum must be the dim's size), out has n entries. chunk: ceil(size / chunks)-
// element pieces, at most `chunks` of them (out has `chunks` entries). unbind: x->shape[dim]
// views with dim removed. The views share x's storage; each is a new reference.
int tt_split(tt_tensor *x, int64_t split_size, int dim, tt_tensor **out, int cap);
void tt_split_sizes(tt_tensor *x, int n, const int64_t *sizes, int dim, tt_tensor **out);
int tt_chunk(tt_tensor *x, int chunks, int dim, tt_tensor **out);
int tt_unbind(tt_tensor *x, int dim, tt_tensor **out, int cap);
// The dim src moved to position dst, the others keeping their order (a view).
tt_tensor *tt_movedim(tt_tensor *x, int src, int dst);
// torch.movedim with lists: dim src[i] goes to position dst[i] for each of the n pairs (each
// list without repeats), the other dims keeping their order in the positions left (a view).
tt_tensor *tt_movedim_n(tt_tensor *x, int n, const int *src, const int *dst);
// The diagonal x[..., i, i + offset] over dims dim1, dim2 (removed; the diagonal is appended
// as the last dim). offset > 0 above the main diagonal, < 0 below. A view.
tt_tensor *tt_diagonal(tt_tensor *x, int64_t offset, int dim1, int dim2);

// ---- indexing, sorting, scans (autograd/ops_index.c) ----
// PyTorch's semantics and dims. Indices are TT_I32 or TT_I64 tensors (any layout) with values
// in [0, size) (no negative wrap-around, as torch.gather); an index out of range aborts naming
// it and its position. Index outputs are TT_I64. Gradients flow to x and src, never to indices.
// gather, scatter, scatter_add, index_select and index_add take x (and src, of x's dtype) of
// any dtype: integer and bool data are copied exactly (int64 beyond 2^53 too), integer sums
// wrap around on overflow and a bool sum is logical or, as PyTorch's; no gradient for them.

// out[p] = x[p with p[dim] = index[p]]; index has x's ndim, index.size(d) <= x.size(d) for
// d != dim; out has index's shape. Backward: scatter-add of the gradient (duplicates add up).
tt_tensor *tt_gather(tt_tensor *x, int dim, tt_tensor *index);
// Out of place: a copy of x with out[p with p[dim] = index[p]] = src[p] for every p in index's
// shape; index.size(d) <= src.size(d), and <= x.size(d) for d != dim. With duplicate targets
// the last p in row-major order wins and only that src element gets a gradient (PyTorch leaves
// the winner unspecified and gives every src element gather(g)). dx = g, 0 where written.
tt_tensor *tt_scatter(tt_tensor *x, int dim, tt_tensor *index, tt_tensor *src);
// The same shapes; out = x, then out[p with p[dim] = index[p]] += src[p] (duplicates
// accumulate). dx = g, dsrc = gather(g, dim, index).
tt_tensor *tt_scatter_add(tt_tensor *x, int dim, tt_tensor *index, tt_tensor *src);
// index 1-D (or 0-d) of K entries -> x's shape with size K at dim: rows x[..., index[k], ...].
tt_tensor *tt_index_select(tt_tensor *x, int dim, tt_tensor *index);
// out = x, then out[..., index[k], ...] += alpha * src[..., k, ...]; index 1-D of K entries,
// src x's shape with size K at dim. Duplicates accumulate. For integer or bool x, alpha is
// truncated to an integer (as PyTorch).
tt_tensor *tt_index_add(tt_tensor *x, int dim, tt_tensor *index, tt_tensor *src, double alpha);

// Sorts every line of x along dim, stably (equal values keep their order; NaN is above every
// number). *values (differentiable: gathered from x) and *indices (TT_I64), x's shape; either
// pointer may be NULL. sort, argsort and topk also take integer and bool x (exact; values keep
// x's dtype, no gradient), as PyTorch.
void tt_sort(tt_tensor *x, int dim, bool descending, tt_tensor **values, tt_tensor **indices);
tt_tensor *tt_argsort(tt_tensor *x, int dim, bool descending);  // the indices of tt_sort
// The k largest (or smallest) along dim, in sorted order (also when !sorted; ties keep the
// lower index first); 0 <= k <= x.size(dim). values get the gradient, indices are TT_I64.
void tt_topk(tt_tensor *x, int64_t k, int dim, bool largest, bool sorted, tt_tensor **values,
             tt_tensor **indices);

// Running sum / product along dim (shape of x). cumprod's gradient is correct with zeros in x
// (as PyTorch's: it divides only by the x before a line's first zero). An integer or bool x
// gives a TT_I64 result (exact, wrapping on overflow; no gradient), as PyTorch.
tt_tensor *tt_cumsum(tt_tensor *x, int dim);
tt_tensor *tt_cumprod(tt_tensor *x, int dim);
// The product over dims (ndims 0: all) like tt_sum; 1 over zero elements. Composed of
// permute, reshape, cumprod and slice, so its gradient is cumprod's (correct with zeros). An
// integer or bool x gives TT_I64, exact (wrapping on overflow), without gradient.
tt_tensor *tt_prod(tt_tensor *x, int ndims, const int *dims, bool keepdim);

// In autograd/ops_reduce.c, next to tt_max with its rules (NaN propagates; tied minima share
// the gradient evenly, as torch.amin): the minimum over dims, the first index of the minimum
// (NaN counts as the minimum), and torch.max(x, dim) / torch.min(x, dim): values and
// TT_I64 indices (the first extreme; the gradient goes to that one element). Integer and bool
// x: exact, values in x's dtype, no gradient; tt_argmin of a bool x aborts (as PyTorch).
tt_tensor *tt_min(tt_tensor *x, int ndims, const int *dims, bool keepdim);
tt_tensor *tt_argmin(tt_tensor *x, int dim, bool keepdim);
void tt_max_dim(tt_tensor *x, int dim, bool keepdim, tt_tensor **values, tt_tensor **indices);
void tt_min_dim(tt_tensor *x, int dim, bool keepdim, tt_tensor **values, tt_tensor **indices);


// ---- pooling and batch norm (autograd/ops_pool.c) ----
// x is NCHW (N, C, H, W) or (C, H, W), float, no zero-sized dim; the result keeps the leading
// dims. kernel, stride and padding are {H, W} pairs; stride NULL means the kernel, padding
// NULL means 0; 2 padding <= kernel (as PyTorch). No ceil_mode, no dilation.
// Max over -inf padding; ties go to the first maximum in row-major order, a NaN propagates.
// *indices_out (may be NULL): TT_I64, the output's shape, each the flat h W + w of its
// maximum within its (H, W) plane, as return_indices=True gives them. The gradient goes to
// that element.
tt_tensor *tt_max_pool2d(tt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], tt_tensor **indices_out);
// The window's mean; count_include_pad: divide by the window's size including the zero
// padding (PyTorch's default true), else by the count of input elements in it.
tt_tensor *tt_avg_pool2d(tt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], bool count_include_pad);
// Output (out_h, out_w); output row i averages input rows [floor(i H / out_h),
// ceil((i + 1) H / out_h)), likewise the columns, as torch's adaptive_avg_pool2d.
tt_tensor *tt_adaptive_avg_pool2d(tt_tensor *x, int64_t out_h, int64_t out_w);
// F.batch_norm over x (N, C, ...): y = (x - mean) rsqrt(var + eps) weight + bias per channel;
// running_mean, running_var, weight, bias are (C,) or NULL. training: mean and biased
// variance of the batch over every dim but 1 (more than one value per channel), and the
// running stats, when given, updated in place (not recorded) as r = (1 - momentum) r +
// momentum s with s the mean and the UNBIASED variance. Eval: the running stats (required).
// A composition of ops: gradients flow to x, weight and bias (and through the batch stats).
tt_tensor *tt_batch_norm(tt_tensor *x, tt_tensor *running_mean, tt_tensor *running_var,
                         tt_tensor *weight, tt_tensor *bias, bool training, double momentum,
                         double eps);

// ---- convolutions: autograd/ops_conv.c ----
// PyTorch's F.conv2d: x (N, C_in, H, W), weight (C_out, C_in / groups, kH, kW), bias (C_out,)
// or NULL -> (N, C_out, OH, OW), OH = (H + 2 padding[0] - dilation[0] (kH - 1) - 1) /
// stride[0] + 1 (OW likewise). Zero padding on both sides; stride, padding, dilation are
// {H, W} pairs, NULL meaning {1, 1}, {0, 0}, {1, 1}. groups splits the channels into
// independent convolutions (groups == C_in == C_out: depthwise). im2col + the packed GEMM.
tt_tensor *tt_conv2d(tt_tensor *x, tt_tensor *weight, tt_tensor *bias, const int64_t stride[2],
                     const int64_t padding[2], const int64_t dilation[2], int64_t groups);
// padding="same" (stride 1): the output keeps H and W; the dilation (k - 1) padding of each dim
// is split with the smaller half before, as PyTorch (an odd total pads x with tt_pad first).
tt_tensor *tt_conv2d_same(tt_tensor *x, tt_tensor *weight, tt_tensor *bias,
                          const int64_t dilation[2], int64_t groups);
// F.conv1d: x (N, C_in, L), weight (C_out, C_in / groups, k), bias (C_out,) or NULL; tt_conv2d
// with H = 1 (its gradient).
tt_tensor *tt_conv1d(tt_tensor *x, tt_tensor *weight, tt_tensor *bias, int64_t stride,
                     int64_t padding, int64_t dilation, int64_t groups);

// ---- transposed convolution, channel dropout, nearest upsampling, unflatten ----
// autograd/ops_conv.c.
// PyTorch's F.conv_transpose2d (argument order as PyTorch's): x (N, C_in, H, W), weight (C_in,
// C_out / groups, kH, kW), bias (C_out,) or NULL -> (N, C_out, OH, OW), OH = (H - 1) stride[0]
// - 2 padding[0] + dilation[0] (kH - 1) + output_padding[0] + 1 (OW likewise): the adjoint
// of tt_conv2d with the same stride, padding, dilation and groups. {H, W} pairs, NULL meaning
// stride {1, 1}, padding {0, 0}, output_padding {0, 0}, dilation {1, 1}; output_padding must
// be smaller than the stride or the dilation. One op: a GEMM (w^T x per group) and col2im;
// its input gradient is im2col of the output gradient and a GEMM.
tt_tensor *tt_conv_transpose2d(tt_tensor *x, tt_tensor *weight, tt_tensor *bias,
                               const int64_t stride[2], const int64_t padding[2],
                               const int64_t output_padding[2], int64_t groups,
                               const int64_t dilation[2]);
// F.dropout2d: when training, every channel x[n, c] of x (N, C, H, W) is zeroed as a whole
// with probability p and the rest scaled by 1 / (1 - p) (p == 1: all zeros); returns x
// unchanged (a new reference) when !training or p == 0. A 3-D x is read as PyTorch 1.13 reads
// it: (N, C, L), channels of one row each. A composition: x * mask, mask (N, C, 1, 1) drawn
// with tt_bernoulli on rng (its stream is not PyTorch's).
tt_tensor *tt_dropout2d(tt_tensor *x, double p, bool training, tt_rng *rng);
// F.interpolate(x, size=(out_h, out_w), mode="nearest"): x (N, C, H, W) -> (N, C, out_h,
// out_w), out[.., i, j] = x[.., src(i, H, out_h), src(j, W, out_w)] with src(d, in, out) =
// min(floor(d * s), in - 1), s = in / out in single precision as PyTorch. Two tt_index_select
// (the gradient adds up the pixels each source fed).
tt_tensor *tt_upsample_nearest2d(tt_tensor *x, int64_t out_h, int64_t out_w);
// The same with scale_factor=(scale_h, scale_w): out = floor(in * scale) and s = 1 / scale,
// as F.interpolate (recompute_scale_factor unset). Scales > 0.
tt_tensor *tt_upsample_nearest2d_scale(tt_tensor *x, double scale_h, double scale_w);
// torch.unflatten: dim (negative counts from the end) of x split into sizes[0 .. n-1], whose
// product must be x's size there; one entry may be -1 (inferred). A tt_reshape (a view when
// the strides allow).
tt_tensor *tt_unflatten(tt_tensor *x, int dim, const int64_t *sizes, int n);

// ---- gradcheck ----

typedef struct tt_gradcheck_opts {
    double eps;   // central-difference step (default 1e-6)
    double atol;  // |analytic - numeric| <= atol + rtol * |numeric| (defaults 1e-5, 1e-3)
    double rtol;
} tt_gradcheck_opts;

typedef struct tt_gradcheck_result {
    bool ok;
    double max_abs_err;  // over every Jacobian entry of every input
    double max_rel_err;  // |a - n| / max(|n|, atol), at the same entries
    int worst_input;     // where the worst violation (or, if ok, the largest error) is
    int64_t worst_out;   // output element (row-major)
    int64_t worst_in;    // input element (row-major)
    double analytic, numeric;
    int64_t checked;     // Jacobian entries compared
} tt_gradcheck_result;

// f builds the output from its n inputs (grad mode is on while it runs). The inputs must be
// f64 leaves; those with requires_grad are checked. Compares the full analytic Jacobian (one
// backward per output element) with central differences, like torch.autograd.gradcheck.
typedef tt_tensor *(*tt_gradcheck_fn)(tt_tensor *const *inputs, int n, void *ctx);
tt_gradcheck_result tt_gradcheck(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs,
                                 const tt_gradcheck_opts *opts);  // opts NULL: defaults

// ---- activation checkpointing (autograd/checkpoint.c) ----
// torch.utils.checkpoint.checkpoint(fn, *inputs, use_reentrant=False): compute traded for
// memory; named apart from io's tt_checkpoint (a file). tt_activation_checkpoint runs
// fn(inputs, n, ctx) with grad mode off, so fn's intermediates are freed as soon as it
// returns, and records one node (op "checkpoint") on its output. That
// node's backward runs fn again with grad mode on, on detached copies of the inputs that
// require grad, and backpropagates the output's gradient through the recomputed graph: the
// inputs' gradients flow on into the graph before the checkpoint, and the parameters fn
// reaches through ctx (every leaf that requires grad its ops read, found while it runs) get
// theirs in .grad. For a deterministic fn the gradients are bitwise those of calling fn
// directly; the cost is one more forward of fn per backward.
//   Output: fn returns one tensor (as an op does: a new reference in the current scope); the
//     result has its shape, dtype and values. Several results: return them joined (tt_cat of
//     flattened tensors) and take views of the result (tt_narrow, tt_reshape).
//   Randomness: rng (NULL when fn draws nothing) is the stream fn draws from, such as a model's
//     dropout stream (tt_gpt's dropout_rng). Its state when the forward starts is kept, put
//     back for the recompute (dropout draws the same masks) and the stream restored after it,
//     so draws after the checkpoint see the stream they would without it (PyTorch's
//     preserve_rng_state). Streams other than rng do not replay.
//   Autocast: the recompute runs under the precision the forward ran under, wherever the
//     backward runs.
//   In place: the node keeps the inputs and the parameters found, with their versions; one of
//     them written in place between the forward and the backward makes the backward abort
//     with the usual message ("a tensor saved by 'checkpoint' was modified in place ...").
//     Tensors fn reads through ctx that do not require grad (masks, tables) are read again at
//     the recompute: leave them unchanged until then.
//   Rules: a tensor that an op made and that requires grad reaches fn only through inputs
//     (through ctx it aborts, naming it); the recompute must give the forward's shape and
//     dtype (aborts otherwise); inputs may hold NULL entries. With grad mode off (or no input
//     or parameter requiring grad) it returns fn's result and records nothing. Nests.
//   Profiler: the recompute and the backward through it count as the backward of "checkpoint".
//
//     static tt_tensor *block_fn(tt_tensor *const *in, int n, void *ctx) {
//         return tt_nn_block_forward(ctx, in[0]);           // (B, T, C) -> (B, T, C)
//     }
//     for (int l = 0; l < L; l++)                           // keeps one (B, T, C) per block
//         x = tt_activation_checkpoint(block_fn, &blocks[l], 1, &x, &dropout_rng);
typedef tt_tensor *(*tt_activation_checkpoint_fn)(tt_tensor *const *inputs, int n, void *ctx);
tt_tensor *tt_activation_checkpoint(tt_activation_checkpoint_fn fn, void *ctx, int n,
                                    tt_tensor *const *inputs, tt_rng *rng);

// ---- no-grad scopes: THE idiom for updates written by hand ----
// Like torch.no_grad(): begin turns grad mode off and remembers the mode it replaced; end
// restores it (ending without a begin aborts). Nothing inside is recorded on the tape.
//
//     tt_no_grad_begin();
//     tt_add_(w, tt_mul_scalar(tt_grad(w), -lr));  // w -= lr * dw
//     tt_no_grad_end();
void tt_no_grad_begin(void);
void tt_no_grad_end(void);

// ---- in-place ops (autograd/ops_inplace.c) ----
// PyTorch's names and semantics: the first argument is overwritten and returned, b is
// broadcast to a's shape (a is never broadcast), the storage's version is bumped (tensor.h).
// In-place ops are NOT differentiable here: they are not recorded on the tape. With grad mode
// on, one aborts on a leaf that requires grad ("wrap the update in tt_no_grad_begin()/
// tt_no_grad_end()"), on a non-leaf that requires grad, and when b requires grad. A graph that
// saved `a` before the write refuses to run backward through it (the version counter).
tt_tensor *tt_add_(tt_tensor *a, tt_tensor *b);  // a += b
tt_tensor *tt_sub_(tt_tensor *a, tt_tensor *b);  // a -= b
tt_tensor *tt_mul_(tt_tensor *a, tt_tensor *b);  // a *= b
tt_tensor *tt_div_(tt_tensor *a, tt_tensor *b);  // a /= b
tt_tensor *tt_add_scalar_(tt_tensor *a, double s);  // a += s
tt_tensor *tt_mul_scalar_(tt_tensor *a, double s);  // a *= s
// a = min(max(a, lo), hi); NaN stays NaN; lo = -INFINITY or hi = INFINITY for one side.
tt_tensor *tt_clamp_(tt_tensor *a, double lo, double hi);
tt_tensor *tt_zero_(tt_tensor *a);  // a = 0
tt_tensor *tt_neg_(tt_tensor *a);   // a = -a

// ---- gradient hooks and retained gradients ----
// tt_retain_grad(t): backward also fills t->grad for a non-leaf t (accumulating, like a
// leaf's); a no-op on a leaf. Returns t.
// tt_register_hook(t, fn, ctx): backward calls fn(grad, ctx) with the gradient w.r.t. t once
// it is complete (for a leaf: this backward's total, before it is added to .grad). grad is
// borrowed and must not be modified; fn may return a replacement of t's shape and dtype (made
// with ops: backward opens a scope around the call and keeps its own reference) or NULL to
// keep grad. Hooks run in registration order with grad mode off, retained gradients after
// them. Hooks cannot be removed; they die with the tensor. Like PyTorch's Tensor.retain_grad
// and Tensor.register_hook.
typedef tt_tensor *(*tt_grad_hook)(tt_tensor *grad, void *ctx);
tt_tensor *tt_retain_grad(tt_tensor *t);
void tt_register_hook(tt_tensor *t, tt_grad_hook fn, void *ctx);

// ---- autocast: bf16 products in f32 training (autograd/autocast.c) ----
// Mixed precision as PyTorch's CPU autocast defines it for linear algebra. Between
// tt_autocast_begin(TT_PRECISION_BF16) and tt_autocast_end() (thread-local, nestable like
// no_grad: each end restores the setting its begin replaced), tt_matmul and tt_affine on f32
// operands compute their products with bf16 inputs (each operand rounded to nearest even) and
// f32 accumulation (tensor/kernels/bf16.h), forward AND backward: the op remembers at record
// time that it ran under autocast, so dx and dW use bf16 products too even when tt_backward
// runs outside the region. So does the fused attention (tt_scaled_dot_product_attention): its
// block products q k^T, P v and those of its backward take bf16 inputs (q, k, v, the
// probabilities, dy, dS) with f32 accumulation, while its softmax statistics stay f32.
// Everything else is unchanged: f64 operands never autocast (gradcheck stays exact), and
// elementwise ops, norms, softmax, cross-entropy, gradients, AdamW state and the parameters
// stay f32. tt_autocast_begin(TT_PRECISION_F32) turns autocast
// off inside a region (torch.autocast(enabled=False)). Outside every region results are
// bitwise those of plain f32.
//
// Where it differs from PyTorch: torch.autocast returns bf16 tensors from linear/matmul, which
// the next op reads as bf16; here outputs keep f32 storage holding the f32 accumulator's value
// (there is no bf16 tensor dtype), and the next product rounds its inputs to bf16 when it packs
// them. The products are the same bf16 x bf16 -> f32 ones; what differs is that PyTorch also
// rounds each product's output to bf16 (and the elementwise ops that read it then run in bf16),
// where ours stay f32 until the next product: at most 1 bf16 ulp more accuracy, never less.
// Keeping f32 storage also means no op outside matmul/affine/attention needs a bf16 variant.
// The fused attention rounds its unnormalized weights exp(s - max) to bf16 and divides by
// their f32 sum after P v, as a fused (flash) attention does, where PyTorch's unfused
// softmax(q @ k^T) @ v rounds the scores and the normalized weights.
//
// Weights are not cast ahead: each product rounds its f32 operands to bf16 while packing them
// (tensor/kernels/bf16.h), so there is no bf16 copy to cache per step. Measured on one Zen 4
// core, a bf16 copy made once would save 0-0.4 ms per product of the mid GPT's step shapes and
// cost 0.25-0.3 ms to make: under 0.5% of a step even for a weight used twice (forward and dx).
//
//     tt_autocast_begin(TT_PRECISION_BF16);
//     tt_tensor *loss = tt_gpt_loss(&model, x, y);
//     tt_autocast_end();
//     tt_backward(loss);  // dx, dW of each product in bf16, as recorded
typedef enum tt_precision {
    TT_PRECISION_F32,   // plain f32 products (autocast off)
    TT_PRECISION_BF16,  // bf16 inputs, f32 accumulation
} tt_precision;

void tt_autocast_begin(tt_precision precision);
void tt_autocast_end(void);
tt_precision tt_autocast_precision(void);  // the innermost region's, TT_PRECISION_F32 outside
bool tt_autocast_enabled(void);            // tt_autocast_precision() == TT_PRECISION_BF16
const char *tt_precision_name(tt_precision precision);  // "f32", "bf16"; "?" out of range
// Parses "f32" or "bf16" into *out; false (and *out untouched) for anything else.
bool tt_precision_parse(const char *name, tt_precision *out);

// ---- gradient-ready notifications (autograd/tape.c) ----
// tt_backward_set_grad_ready(fn, ctx): every later backward on this thread calls fn(leaf, ctx)
// once for each leaf (a tensor that requires grad and no op made) the graph reaches, as soon
// as the leaf's .grad is final for this backward: every node that feeds it has run, its hooks
// ran and the gradient was added to .grad. The leaves nearest the loss come first; the rest of
// the backward runs after fn returns. .grad is NULL when no gradient reached the leaf and it
// had none. fn runs with grad mode off; it may read and write .grad's values (bump its
// version) but must not run ops that record or start another backward. fn = NULL turns it
// off. A data-parallel trainer starts each gradient's all-reduce here while the backward goes
// on (dist/dist.h, tt_dist_overlap_begin), like PyTorch's register_post_accumulate_grad_hook.
typedef void (*tt_grad_ready_fn)(tt_tensor *leaf, void *ctx);
void tt_backward_set_grad_ready(tt_grad_ready_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#include "function.h"  // autograd.grad, create_graph, custom functions, functional, gradgradcheck

#endif  // TT_AUTOGRAD_H
