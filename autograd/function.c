// Custom functions (tt_function, torch.autograd.Function): a forward and a backward a program
// defines, recorded as one node. The node's ctx points at the function's context: its data,
// its saved tensors (with their versions) and, for a function with several outputs, the
// gradients of the outputs other than the first differentiable one (the primary). Each of those
// outputs gets a function_output node whose input is the primary: its backward hands its
// gradient to the context and makes sure the primary's node runs, which comes after every
// consumer of every output (nodes run newest first).
#include "autograd_internal.h"

#include <string.h>

struct tt_function_ctx {
    const tt_function *fn;
    int n_inputs, n_outputs;
    int primary;       // the output that owns the node; -1 while there is none
    tt_node *node;     // the function's node, once recorded
    bool *needs;       // per input: it requires grad
    bool *non_diff;    // per output: marked non-differentiable
    tt_tensor **outs;  // forward's outputs (borrowed), while apply resolves them
    tt_tensor **mark;  // tensors marked non-differentiable during forward (borrowed)
    int n_mark;
    tt_tensor **saved;    // references; NULL for the primary (saved_primary)
    bool *saved_primary;  // saved[i] is the primary output: read back through the node
    uint64_t *saved_version;
    int n_saved;
    tt_tensor **out_grads;  // per output: the gradient a function_output node handed over
    tt_dtype *out_dtype;    // per output, for the zeros of an output no gradient reached
    int *out_ndim;
    int64_t (*out_shape)[TT_MAX_DIMS];
    void *data;
};

static tt_function_ctx *ctx_of(const tt_node *n) { return *(tt_function_ctx *const *)n->ctx; }

static void ctx_free(tt_function_ctx *c) {
    for (int i = 0; i < c->n_saved; i++) tt_release(c->saved[i]);
    for (int k = 0; k < c->n_outputs; k++) tt_release(c->out_grads[k]);
    tt_free(c->saved), tt_free(c->saved_primary), tt_free(c->saved_version);
    tt_free(c->needs), tt_free(c->non_diff), tt_free(c->outs), tt_free(c->mark);
    tt_free(c->out_grads), tt_free(c->out_dtype), tt_free(c->out_ndim), tt_free(c->out_shape);
    tt_free(c->data);
    tt_free(c);
}

void tt__function_release(tt_node *n) {
    tt_function_ctx **p = n->ctx;
    if (*p) ctx_free(*p);
    *p = NULL;
}

// ---- the context, as forward and backward see it ----

void tt_save_for_backward(tt_function_ctx *ctx, int n, tt_tensor *const *tensors) {
    TT_CHECK(ctx && n >= 0 && (n == 0 || tensors), "ctx or tensors is NULL");
    int m = ctx->n_saved + n;
    ctx->saved = TT_REALLOC(ctx->saved, (size_t)m * sizeof *ctx->saved);
    ctx->saved_primary = TT_REALLOC(ctx->saved_primary, (size_t)m * sizeof *ctx->saved_primary);
    ctx->saved_version = TT_REALLOC(ctx->saved_version, (size_t)m * sizeof *ctx->saved_version);
    for (int i = 0; i < n; i++) {
        tt_tensor *t = tensors[i];
        if (t) tt__check_live(t, "tt_save_for_backward");
        ctx->saved[ctx->n_saved] = tt_retain(t);
        ctx->saved_primary[ctx->n_saved] = false;
        ctx->saved_version[ctx->n_saved++] = t ? t->storage->version : 0;
    }
}

int tt_saved_count(const tt_function_ctx *ctx) { return ctx->n_saved; }

tt_tensor *tt_saved_tensor(tt_function_ctx *ctx, int i) {
    TT_CHECK(i >= 0 && i < ctx->n_saved, "function '%s' saved %d tensors; there is no %d",
             ctx->fn->name, ctx->n_saved, i);
    return ctx->saved_primary[i] ? ctx->node->out : ctx->saved[i];
}

bool tt_needs_input_grad(const tt_function_ctx *ctx, int i) {
    TT_CHECK(i >= 0 && i < ctx->n_inputs, "function '%s' has %d inputs; there is no %d",
             ctx->fn->name, ctx->n_inputs, i);
    return ctx->needs[i];
}

void tt_mark_non_differentiable(tt_function_ctx *ctx, tt_tensor *t) {
    TT_CHECK(ctx && t, "ctx or tensor is NULL");
    ctx->mark = TT_REALLOC(ctx->mark, (size_t)(ctx->n_mark + 1) * sizeof *ctx->mark);
    ctx->mark[ctx->n_mark++] = t;
}

void *tt_function_data(tt_function_ctx *ctx) { return ctx->data; }

// ---- apply ----

static tt_function_ctx *ctx_new(const tt_function *f, int n, tt_tensor *const *inputs,
                                const void *args) {
    tt_function_ctx *c = TT_CALLOC(1, sizeof *c);
    int nout = f->n_outputs > 0 ? f->n_outputs : 1;
    c->fn = f;
    c->n_inputs = n;
    c->n_outputs = nout;
    c->primary = -1;
    c->needs = TT_CALLOC((size_t)(n ? n : 1), sizeof *c->needs);
    for (int i = 0; i < n; i++)
        c->needs[i] = tt_is_grad_enabled() && inputs[i] && inputs[i]->requires_grad;
    c->non_diff = TT_CALLOC((size_t)nout, sizeof *c->non_diff);
    c->outs = TT_CALLOC((size_t)nout, sizeof *c->outs);
    c->out_grads = TT_CALLOC((size_t)nout, sizeof *c->out_grads);
    c->out_dtype = TT_CALLOC((size_t)nout, sizeof *c->out_dtype);
    c->out_ndim = TT_CALLOC((size_t)nout, sizeof *c->out_ndim);
    c->out_shape = TT_CALLOC((size_t)nout, sizeof *c->out_shape);
    c->data = TT_CALLOC(1, f->data_size ? f->data_size : 1);
    if (args && f->data_size) memcpy(c->data, args, f->data_size);
    return c;
}

// Runs forward with grad mode off in a scope of its own; c->outs gets references to fresh
// output tensors (an input returned as is, or a tensor with history, becomes an alias).
static void run_forward(tt_function_ctx *c, int n, tt_tensor *const *inputs) {
    const tt_function *f = c->fn;
    bool prev = tt_set_grad_enabled(false);
    tt_scope_begin();
    f->forward(c, inputs, n, c->outs);
    for (int k = 0; k < c->n_outputs; k++) {
        tt_tensor *o = c->outs[k];
        TT_CHECK_IN("tt_function_apply", o, "forward of function '%s' left output %d NULL", f->name,
                    k);
        tt__check_live(o, "tt_function_apply");
        for (int j = 0; j < c->n_mark; j++) c->non_diff[k] |= c->mark[j] == o;
        bool reused = o->node || o->requires_grad;
        for (int i = 0; i < n; i++) reused |= inputs[i] == o;
        for (int j = 0; j < k; j++) reused |= c->outs[j] == o;
        c->outs[k] = reused ? tt__alias(o) : tt_retain(o);
        c->out_dtype[k] = o->dtype;
        c->out_ndim[k] = o->ndim;
        memcpy(c->out_shape[k], o->shape, sizeof c->out_shape[k]);
    }
    tt_scope_end();
    tt_set_grad_enabled(prev);
}

// A saved output must not be held by the node its output owns: the primary is read back
// through the node, another differentiable output is kept as an alias (without history).
static void resolve_saved_outputs(tt_function_ctx *c) {
    for (int i = 0; i < c->n_saved; i++)
        for (int k = 0; k < c->n_outputs; k++) {
            if (!c->saved[i] || c->saved[i] != c->outs[k] || c->non_diff[k]) continue;
            tt_tensor *keep = k == c->primary ? NULL : tt__alias(c->outs[k]);
            tt_release(c->saved[i]);
            c->saved[i] = keep;
            c->saved_primary[i] = k == c->primary;
            break;
        }
}

// Records the function's node on the primary and a function_output node on each other
// differentiable output; false when nothing is recorded (no input requires grad).
static bool record(tt_function_ctx *c, int n, tt_tensor *const *inputs) {
    for (int k = 0; k < c->n_outputs && c->primary < 0; k++)
        if (!c->non_diff[k] && tt_dtype_is_float(c->outs[k]->dtype)) c->primary = k;
    if (c->primary < 0) return false;
    tt_tensor *p = c->outs[c->primary];
    tt_function_ctx **slot = tt__record(p, TT_OP_FUNCTION, n, inputs, sizeof *slot);
    if (!slot) return false;
    *slot = c;
    c->node = p->node;
    p->origin = c->fn->name;
    resolve_saved_outputs(c);
    for (int k = 0; k < c->n_outputs; k++) {
        if (k == c->primary || c->non_diff[k] || !tt_dtype_is_float(c->outs[k]->dtype)) continue;
        int *which = tt__record(c->outs[k], TT_OP_FUNCTION_OUTPUT, 1, &p, sizeof *which);
        *which = k;
        c->outs[k]->origin = c->fn->name;
    }
    return true;
}

void tt_function_apply_n(const tt_function *f, int n, tt_tensor *const *inputs, const void *args,
                         tt_tensor **out) {
    TT_CHECK(f && f->forward && f->backward && f->name,
             "a tt_function needs a name, a forward and a backward");
    TT_CHECK(n >= 0 && (n == 0 || inputs) && out, "inputs or out is NULL");
    for (int i = 0; i < n; i++)
        if (inputs[i]) tt__check_live(inputs[i], f->name);
    tt_function_ctx *c = ctx_new(f, n, inputs, args);
    run_forward(c, n, inputs);
    bool kept = record(c, n, inputs);
    for (int k = 0; k < c->n_outputs; k++) out[k] = tt__autorelease(c->outs[k]);
    if (!kept) ctx_free(c);
}

tt_tensor *tt_function_apply(const tt_function *f, int n, tt_tensor *const *inputs,
                             const void *args) {
    TT_CHECK(f && f->n_outputs <= 1, "function '%s' has %d outputs; call tt_function_apply_n",
             f ? f->name : "?", f ? f->n_outputs : 0);
    tt_tensor *out;
    tt_function_apply_n(f, n, inputs, args, &out);
    return out;
}

// ---- backward ----

static void check_saved(const tt_function_ctx *c) {
    for (int i = 0; i < c->n_saved; i++) {
        const tt_tensor *t = c->saved_primary[i] ? c->node->out : c->saved[i];
        if (!t || t->storage->version == c->saved_version[i]) continue;
        tt_fatal(__FILE__, __LINE__, "tt_backward",
                 "saved tensor %d of function '%s' (%s %s) "
                 "was modified in place by '%s' after it was saved; clone it before writing, "
                 "or write after backward (version %llu when saved, %llu now)",
                 i, c->fn->name, tt__shape(t), tt_dtype_name(t->dtype),
                 t->storage->writer ? t->storage->writer : "an untracked write",
                 (unsigned long long)c->saved_version[i], (unsigned long long)t->storage->version);
    }
}

// Aborts unless g can be input i's gradient: its dtype, and a shape that sums down to x's.
static void check_grad(const tt_function_ctx *c, int i, const tt_tensor *x, const tt_tensor *g) {
    bool ok = g->dtype == x->dtype && g->ndim >= x->ndim;
    for (int d = 0; ok && d < x->ndim; d++) {
        int64_t gs = g->shape[g->ndim - x->ndim + d];
        ok = gs == x->shape[d] || x->shape[d] == 1;
    }
    TT_CHECK_IN("tt_backward", ok,
                "backward of function '%s' returned a gradient %s %s for "
                "input %d, which is %s %s; it must have the input's shape and dtype",
                c->fn->name, tt__shape(g), tt_dtype_name(g->dtype), i, tt__shape(x),
                tt_dtype_name(x->dtype));
}

static void backward_function(tt_node *n) {
    tt_function_ctx *c = ctx_of(n);
    check_saved(c);
    tt_tensor **gout = TT_CALLOC((size_t)c->n_outputs, sizeof *gout);
    tt_tensor **gin = TT_CALLOC((size_t)(c->n_inputs ? c->n_inputs : 1), sizeof *gin);
    for (int k = 0; k < c->n_outputs; k++) {
        if (c->non_diff[k] || !tt_dtype_is_float(c->out_dtype[k])) continue;
        gout[k] = k == c->primary ? n->grad : c->out_grads[k];
        if (!gout[k]) gout[k] = tt_zeros(c->out_dtype[k], c->out_ndim[k], c->out_shape[k]);
    }
    c->fn->backward(c, gout, gin);
    for (int i = 0; i < c->n_inputs; i++) {
        tt_tensor *x = n->inputs[i];
        if (!gin[i] || !x || !x->requires_grad) continue;
        check_grad(c, i, x, gin[i]);
        tt__accum_grad(x, gin[i]);
    }
    for (int k = 0; k < c->n_outputs; k++) tt_release(c->out_grads[k]), c->out_grads[k] = NULL;
    tt_free(gout);
    tt_free(gin);
}

void tt__backward_function(tt_node *n) { backward_function(n); }

void tt__backward_function_output(tt_node *n) {
    tt_tensor *p = n->inputs[0];
    tt_function_ctx *c = ctx_of(p->node);
    int k = *(const int *)n->ctx;
    tt_release(c->out_grads[k]);
    c->out_grads[k] = tt_retain(n->grad);
    if (!p->node->grad) tt__accum_grad(p, tt_zeros(p->dtype, p->ndim, p->shape));
}

const tt__grad2_row tt__grad2_function[] = {
    {TT_OP_FUNCTION, tt__backward_function},
    {TT_OP_FUNCTION_OUTPUT, tt__backward_function_output},
    {TT_OP_COUNT, NULL},
};
