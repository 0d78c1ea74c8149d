// Internals shared by the files of autograd/: the tape node, recording, gradient accumulation.
//
// How a hand-written op (a TT_OP row of ops.def) is written, forward and backward side by side
// in its family file (the elementwise ops are generated from their rows instead; pow_scalar,
// one of them now, serves as the example):
//
//     typedef struct { double p; } pow_scalar_ctx;            // typed saved state
//     tt_tensor *tt_pow_scalar(tt_tensor *a, double p) {
//         tt_tensor *out = tt__new(a->dtype, a->ndim, a->shape);  // unscoped
//         ... kernel ...
//         pow_scalar_ctx *c = tt__record(out, TT_OP_POW_SCALAR, 1, &a, sizeof *c);
//         if (c) c->p = p;                                  // NULL when nothing is recorded
//         return tt__autorelease(out);
//     }
//     void tt__backward_pow_scalar(tt_node *n) {            // runs in a scope, grad mode off
//         tt_tensor *a = n->inputs[0], *g = n->grad;        // g: gradient of the output
//         const pow_scalar_ctx *c = n->ctx;
//         tt__accum_grad(a, <g * p * a^(p-1)>);             // skips inputs without grad
//     }
//
// A backward may build its result with public ops (they land in the backward's scope) or
// with raw kernels into tt__new tensors it then releases. tt__accum_grad copies, never keeps;
// a backward that passes n->grad (or a view of it) on unchanged uses tt__accum_grad_node,
// which moves the storage instead when nobody else holds it.
#ifndef TT_AUTOGRAD_INTERNAL_H
#define TT_AUTOGRAD_INTERNAL_H

#include "autograd.h"
#include "../tensor/tensor_internal.h"

#define TT_NODE_MAX_SAVED 4

struct tt_node {
    tt_op op;
    uint64_t seq;       // creation order: the tape's order
    int n_inputs;
    tt_tensor **inputs;  // retained; an entry may be NULL (an optional input that is absent)
    tt_tensor *saved[TT_NODE_MAX_SAVED];  // retained, released with the node
    tt_tensor *grad;    // gradient w.r.t. the output, while backward runs
    tt_dtype dtype;     // the output's dtype and shape
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    bool freed;         // inputs and saved released after a backward without retain_graph
    void *ctx;          // typed per-op state (zeroed), stored in the same allocation
    // The version counter (tensor.h): each input's and each saved tensor's storage version
    // when the node was recorded / the tensor saved; backward checks the ones it reads.
    uint64_t *input_version;  // n_inputs entries, in the same allocation
    uint64_t saved_version[TT_NODE_MAX_SAVED];
    tt_tensor *out;     // the output that owns this node (not retained: it outlives the node)
    uint64_t visited;   // the epoch of the last walk that collected it (backward.c)
    uint64_t reach;     // that walk's epoch when it leads to an input of tt_autograd_grad
};

// The backward of each hand-written op; the generated elementwise rows share two.
#define TT_OP(ID, name, arity, saves) void tt__backward_##name(tt_node *n);
#define TT_OP_ND(ID, name, arity)
#define TT_UNARY(ID, name, saves, flags, lo, hi)
#define TT_UNARY_S(ID, name, saves, flags, lo, hi, s)
#define TT_BINARY(ID, name, saves, flags, alo, ahi, blo, bhi)
#include "../tensor/ops.def"
void tt__backward_unary(tt_node *n);   // every TT_UNARY and TT_UNARY_S row
void tt__backward_binary(tt_node *n);  // every TT_BINARY row

// Records a node producing `out` (when grad mode is on and some non-NULL input requires grad)
// and marks out->requires_grad. Returns
// the zeroed ctx of ctx_size bytes (a non-NULL dummy when ctx_size is 0), or NULL when
// nothing was recorded.
void *tt__record(tt_tensor *out, tt_op op, int n_inputs, tt_tensor *const *inputs,
                 size_t ctx_size);
// Keeps t alive for the backward (retained; released with the node). Pass views or
// detached aliases of the output, never the output itself (it owns the node).
void tt__save(tt_node *n, int slot, tt_tensor *t);
// A history-free alias of t (same storage, same view): what a node saves of its output.
tt_tensor *tt__alias(tt_tensor *t);

// Adds g (any layout, shape of x or broadcastable to it after summing) into x's gradient:
// x->node->grad for an intermediate, x->grad for a leaf. No-op if !x->requires_grad.
void tt__accum_grad(tt_tensor *x, tt_tensor *g);
// The same, taking ownership of g (an unscoped reference from tt__new): when x has no gradient
// yet and g is a contiguous, unshared tensor of x's shape, g itself becomes the gradient.
void tt__accum_grad_owned(tt_tensor *x, tt_tensor *g);
// The same for a pass-through backward (add, reshape, contiguous...): g is n->grad itself or a
// view of it made in this backward. When nothing else holds n->grad's storage and g is
// contiguous and shaped like x, the storage moves to x's empty gradient instead of being copied
// (the node drops n->grad right after its backward). Otherwise as tt__accum_grad.
void tt__accum_grad_node(tt_tensor *x, const tt_node *n, tt_tensor *g);
// A zeroed gradient buffer shaped like x when x (may be NULL) needs one, else NULL. Unscoped:
// hand it over with tt__accum_grad_owned (which skips an x without grad and releases NULL).
tt_tensor *tt__grad_buffer(const tt_tensor *x);

// Aborts unless x is a float tensor (with the use-after-free message, naming func, when x was
// freed: the one liveness check of most ops' inputs); aborts unless a and b share a dtype.
// The messages name the caller's file and line.
void tt__check_float_at(const tt_tensor *x, const char *file, int line, const char *func);
void tt__check_same_dtype_at(const tt_tensor *a, const tt_tensor *b, const char *file, int line,
                             const char *func);
#define tt__check_float(x, func) tt__check_float_at((x), __FILE__, __LINE__, (func))
#define tt__check_same_dtype(a, b, func) \
    tt__check_same_dtype_at((a), (b), __FILE__, __LINE__, (func))

// ---- the walk (backward.c) and its modes ----
typedef void (*tt__backward_fn)(tt_node *n);
// The first-order backward of op (NULL for an op without a gradient).
tt__backward_fn tt__op_backward(tt_op op);
// The backwards from outs seeded with grads (NULL, or NULL entries: ones), after checking each
// output; func names the public function in messages.
void tt__run_backward(int nout, tt_tensor *const *outs, tt_tensor *const *grads,
                      const tt_grad_opts *opts, const char *func);
// Set for the length of a create_graph walk: backwards run with grad mode on, in their
// differentiable form (tt__backward2_of), and gradients add up out of place, with ops, so the
// gradients have a graph of their own.
extern _Thread_local bool tt__create_graph;
// Set for the length of a tt_autograd_grad walk: the gradient of one of its inputs goes to the
// input's slot (grads[i] of the first inputs[i] that is the tensor), a leaf that is no input
// gets none, and nodes that lead to no input are skipped.
typedef struct tt__capture {
    int n;
    tt_tensor *const *inputs;
    tt_tensor **grads;  // references; NULL while no gradient reached inputs[i]
} tt__capture;
extern _Thread_local tt__capture *tt__cap;
// The index of x among the capture's inputs, or -1.
int tt__capture_index(const tt_tensor *x);
// Whether the running backward wants input i's gradient: it requires grad and, under a
// capture, leads to an input of tt_autograd_grad. A backward may skip the gradients it does
// not want (a differentiable backward should: each costs ops on the new graph).
bool tt__input_needs_grad(const tt_node *n, int i);

// ---- differentiable backwards (grad.c; rows in the family files, grad2_elementwise.c) ----
// An op's differentiable backward reads what its first-order one reads (n->inputs, n->saved,
// n->ctx, n->grad, and n->out where it needs the output with its history) and adds each
// input's gradient with tt__accum_grad, computing it with public ops only: run under a
// create_graph walk (grad mode on), those ops record the gradient's graph. Each family lists
// its rows in a table ending with {TT_OP_COUNT, NULL}; tt__backward2_of finds them.
typedef struct tt__grad2_row {
    tt_op op;
    tt__backward_fn backward2;
} tt__grad2_row;
extern const tt__grad2_row tt__grad2_elementwise[], tt__grad2_math[], tt__grad2_reduce[],
    tt__grad2_matmul[], tt__grad2_nn[], tt__grad2_shape[], tt__grad2_layout[], tt__grad2_compare[],
    tt__grad2_index[], tt__grad2_conv[], tt__grad2_pool[], tt__grad2_function[];
tt__backward_fn tt__backward2_of(tt_op op);  // NULL when op has none
// g summed over the dims it has beyond x's shape or where x has size 1 (the reverse of a
// broadcast), with ops; g itself when the shapes match.
tt_tensor *tt__sum_to(tt_tensor *g, const tt_tensor *x);

// ---- custom functions (function.c) ----
// Drops what a tt_function node keeps for its backward (its saved tensors, its output
// gradients); the node's memory goes with the node.
void tt__function_release(tt_node *n);

// ---- activation checkpointing (checkpoint.c) ----
// While tt_activation_checkpoint runs its function (forward or recompute), tt__ckpt_watch
// points at its watch, and tt__record hands it the inputs of every op: the forward collects the
// leaves the function reaches (its parameters), the recompute refuses tensors of the graph
// outside.
struct tt__ckpt_watch;
extern _Thread_local struct tt__ckpt_watch *tt__ckpt_watch;
void tt__ckpt_watch_inputs(int n_inputs, tt_tensor *const *inputs);
// The sequence number the next node will get (nodes with a lower one exist already).
uint64_t tt__tape_seq(void);
// A backward from out seeded with grad, run inside another backward's node: like
// tt_backward_with, but the leaves' hooks and tt_backward_set_grad_ready's notifications are
// left to the enclosing backward (a leaf's gradient is final only once that one is done).
void tt__backward_nested(tt_tensor *out, tt_tensor *grad);

// ---- accumulation and hooks (tape.c, accum.c), for backward.c ----
// out (shape broadcastable to g's) += g in place, summing over the broadcast dims.
void tt__accum_into(tt_tensor *out, tt_tensor *g);
// Leaf x's hooks on its pending gradient, then the accumulation into its .grad.
void tt__finish_leaf(tt_tensor *x);
// tt__finish_leaf for every leaf that received a gradient in this backward.
void tt__finish_pending(void);
// Before node n's backward: the hooks of its output, then its retained gradient.
void tt__output_hooks(tt_node *n);
// Aborts unless every tensor n's backward reads has the version it had when saved.
void tt__check_versions(const tt_node *n);

// ---- profiler (profiler.c): called by the tape only while tt__prof_on ----
// One op's forward: counted at its tt__record, timed from the first tensor this thread made
// since the previous op (tt__prof_first_new) to now.
// Ops a backward runs are not counted as forwards.
void tt__prof_forward(const tt_tensor *out, tt_op op, int n_inputs, tt_tensor *const *inputs);
// Runs backward(n), timed and counted under n's op.
void tt__prof_backward(tt_node *n, void (*backward)(tt_node *n));

// ---- gradients added in place ----
// x's gradient so far, for a backward to add its contribution into directly (instead of a
// tt__grad_buffer handed to tt__accum_grad_owned, which costs a zeroing pass and an adding
// pass): x->node->grad of an intermediate or x->grad of a leaf without hooks, when it exists
// and is contiguous and of x's shape. Bumps its version, as an accumulation does. NULL
// otherwise (no gradient yet, a leaf with hooks, another layout, or x needs none): then go the
// tt__grad_buffer way. The caller must check that the returned storage is none of the
// storages it reads.
tt_tensor *tt__grad_inplace(tt_tensor *x);

// ---- batched im2col (conv_batch.c), for ops_conv.c ----
// Letters: x (N, C, H, W) with G groups of CG = C / G channels, K = CG * KH * KW patch rows,
// L = OH * OW patch columns per image (tt_k_conv_geom g describes one group of one image).
struct tt_k_conv_geom;
// Images per chunk whose per_image patch elements fit 64 MiB: at least 1, at most N.
int64_t tt__conv_chunk_images(int64_t N, int64_t per_image, size_t es);
// col (G, K, nn L) = the patches of x (nn, G CG, H, W); with par, (image, group) pairs in
// parallel when worth it, each writing its own columns.
void tt__conv_batch_im2col(tt_dtype dt, char *col, const char *x, int64_t nn, int64_t G,
                           const struct tt_k_conv_geom *g, bool par);
// dx (nn, G CG, H, W) = the adjoint of the above applied to dcol (G, K, nn L): every image
// zeroed and summed into by one thread, in a fixed order (with par, images in parallel).
void tt__conv_batch_col2im(tt_dtype dt, char *dx, const char *dcol, int64_t nn, int64_t G,
                           const struct tt_k_conv_geom *g, bool par);
// out (nn, CO, L) = t (CO, nn L) + bias (CO,) (bias may be NULL); with par, images in parallel.
void tt__conv_batch_to_nchw(tt_dtype dt, char *out, const char *t, const char *bias, int64_t nn,
                            int64_t CO, int64_t L, bool par);
// t (CO, nn L) = g (nn, CO, L); with par, images in parallel.
void tt__conv_nchw_to_batch(tt_dtype dt, char *t, const char *g, int64_t nn, int64_t CO,
                            int64_t L, bool par);

#endif  // TT_AUTOGRAD_INTERNAL_H
