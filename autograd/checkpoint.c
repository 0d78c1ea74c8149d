// Activation checkpointing (tt_activation_checkpoint, autograd.h): a function run without a
// graph, and one node whose backward runs it again with one and backpropagates through that.
// Not here: the fused attention's own recompute of its weights (ops_attention.c).
#include "autograd_internal.h"

#include <string.h>

// ---- the watch: what fn's ops read ----
// Forward: the leaves that require grad among the ops' inputs, fn's inputs aside, become
// inputs of the node (so the parameters make the output require grad, their versions are
// checked and the enclosing backward counts them as consumers). Recompute: a tensor of the
// graph outside (a node older than the recompute) must not be reached, or the nested backward
// would run into that graph.

typedef struct tt__ckpt_watch {
    bool recompute;
    tt_tensor *const *inputs;  // forward: fn's inputs
    int n;
    tt_tensor **found;  // forward: the other leaves that require grad, each once
    int n_found, cap;
    uint64_t first_seq;  // recompute: nodes older than this are the graph outside
    struct tt__ckpt_watch *prev;
} ckpt_watch;

_Thread_local ckpt_watch *tt__ckpt_watch;

static bool holds(tt_tensor *const *v, int n, const tt_tensor *t) {
    for (int i = 0; i < n; i++)
        if (v[i] == t) return true;
    return false;
}

static void watch_forward(ckpt_watch *w, const tt_tensor *in) {
    if (holds(w->inputs, w->n, in) || holds(w->found, w->n_found, in)) return;
    TT_CHECK_IN("tt_activation_checkpoint", !in->node,
                "fn read tensor %s made by op '%s' (it requires grad) other than through its "
                "inputs; pass it in inputs, so that the recompute takes a detached copy of it",
                tt__shape(in), tt_op_name(in->node->op));
    if (w->n_found == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->found = TT_REALLOC(w->found, (size_t)w->cap * sizeof *w->found);
    }
    w->found[w->n_found++] = (tt_tensor *)in;
}

void tt__ckpt_watch_inputs(int n_inputs, tt_tensor *const *inputs) {
    ckpt_watch *w = tt__ckpt_watch;
    for (int i = 0; i < n_inputs; i++) {
        const tt_tensor *in = inputs[i];
        if (!in || !in->requires_grad) continue;
        if (!w->recompute) {
            watch_forward(w, in);
            continue;
        }
        TT_CHECK_IN("tt_activation_checkpoint", !in->node || in->node->seq >= w->first_seq,
                    "the recompute of fn read tensor %s made by op '%s' before the "
                    "checkpoint; fn must reach such tensors through its inputs only",
                    tt__shape(in), tt_op_name(in->node->op));
    }
}

// ---- forward ----

typedef struct checkpoint_ctx {
    tt_activation_checkpoint_fn fn;
    void *fn_ctx;
    int n;                   // fn's inputs: the node's first n inputs
    tt_rng *rng;             // NULL: fn draws nothing
    tt_rng rng_state;        // *rng when the forward started
    tt_precision precision;  // autocast's at the forward
} checkpoint_ctx;

// fn without a graph, in a scope of its own (its intermediates die here); watched. Returns an
// unscoped alias of its output (a tensor of its own, whatever fn returned).
static tt_tensor *forward_no_grad(ckpt_watch *w, tt_activation_checkpoint_fn fn, void *ctx) {
    w->prev = tt__ckpt_watch;
    tt__ckpt_watch = w;
    bool prev = tt_set_grad_enabled(false);
    tt_scope_begin();
    tt_tensor *y = fn(w->inputs, w->n, ctx);
    TT_CHECK_IN("tt_activation_checkpoint", y,
                "fn returned NULL; it must return its output tensor");
    tt__check_live(y, "tt_activation_checkpoint");
    tt_tensor *out = tt__alias(y);
    tt_scope_end();
    tt_set_grad_enabled(prev);
    tt__ckpt_watch = w->prev;
    return out;
}

tt_tensor *tt_activation_checkpoint(tt_activation_checkpoint_fn fn, void *ctx, int n,
                                    tt_tensor *const *inputs, tt_rng *rng) {
    TT_CHECK(fn, "fn is NULL");
    TT_CHECK(n >= 0 && (n == 0 || inputs),
             "give n >= 0 inputs (inputs may be NULL only when n is 0), got n = %d", n);
    for (int i = 0; i < n; i++)
        if (inputs[i]) tt__check_live(inputs[i], __func__);
    if (!tt_is_grad_enabled()) return fn(inputs, n, ctx);  // nothing to save: no graph
    ckpt_watch w = {.inputs = inputs, .n = n};
    tt_rng at_start = rng ? *rng : (tt_rng){{0}};
    tt_precision precision = tt_autocast_precision();
    tt_tensor *out = forward_no_grad(&w, fn, ctx);
    int total = n + w.n_found;
    tt_tensor **all = TT_MALLOC((size_t)(total ? total : 1) * sizeof *all);
    if (n) memcpy(all, inputs, (size_t)n * sizeof *all);
    if (w.n_found) memcpy(all + n, w.found, (size_t)w.n_found * sizeof *all);
    checkpoint_ctx *c = tt__record(out, TT_OP_CHECKPOINT, total, all, sizeof *c);
    tt_free(all);
    tt_free(w.found);
    if (c) {
        TT_CHECK(tt_dtype_is_float(out->dtype),
                 "fn returned %s %s, but its inputs or parameters require grad: the output "
                 "of a checkpoint must be f32 or f64",
                 tt__shape(out), tt_dtype_name(out->dtype));
        *c = (checkpoint_ctx){fn, ctx, n, rng, at_start, precision};
    }
    return tt__autorelease(out);
}

// ---- backward ----

// fn again with grad mode on, under the forward's rng state and precision; rng afterwards as
// it was before. Watched: the graph outside must stay out of reach.
static tt_tensor *recompute(const checkpoint_ctx *c, tt_tensor *const *inputs) {
    tt_rng now = c->rng ? *c->rng : (tt_rng){{0}};
    if (c->rng) *c->rng = c->rng_state;
    ckpt_watch w = {.recompute = true, .first_seq = tt__tape_seq(), .prev = tt__ckpt_watch};
    tt__ckpt_watch = &w;
    bool prev = tt_set_grad_enabled(true);
    tt_autocast_begin(c->precision);
    tt_tensor *y = c->fn(inputs, c->n, c->fn_ctx);
    tt_autocast_end();
    tt_set_grad_enabled(prev);
    tt__ckpt_watch = w.prev;
    if (c->rng) *c->rng = now;
    TT_CHECK_IN("tt_activation_checkpoint", y, "fn returned NULL at the recompute");
    return y;
}

// What the recompute takes for input x: a detached leaf that requires grad when x does.
static tt_tensor *detached_input(tt_tensor *x) {
    if (!x || !x->requires_grad) return x;
    return tt_set_requires_grad(tt_detach(x), true);
}

void tt__backward_checkpoint(tt_node *n) {
    const checkpoint_ctx *c = n->ctx;
    tt_tensor **in = TT_MALLOC((size_t)(c->n ? c->n : 1) * sizeof *in);
    for (int i = 0; i < c->n; i++) in[i] = detached_input(n->inputs[i]);
    tt_tensor *y = recompute(c, in);
    TT_CHECK_IN("tt_activation_checkpoint",
                y->dtype == n->dtype && y->ndim == n->ndim &&
                    !memcmp(y->shape, n->shape, (size_t)n->ndim * sizeof *n->shape),
                "the recompute of fn gave %s %s where the forward gave %s %s; fn must "
                "compute the same thing both times",
                tt__shape(y), tt_dtype_name(y->dtype), tt__shape(n->out), tt_dtype_name(n->dtype));
    if (y->requires_grad) tt__backward_nested(y, n->grad);
    for (int i = 0; i < c->n; i++) {  // the copies' gradients on to the inputs
        tt_tensor *x = n->inputs[i], *g = in[i] != x ? in[i]->grad : NULL;
        if (!g) continue;
        in[i]->grad = NULL;
        tt__accum_grad_owned(x, g);
    }
    tt_free(in);
}
