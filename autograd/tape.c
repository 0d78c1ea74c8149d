// The tape: the op table, grad mode, recording nodes, gradient accumulation and backward.
// Nodes are numbered in creation order; backward walks the nodes reachable from its output
// in reverse of that order, which is a valid reverse topological order.
#include "autograd_internal.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

// ---- the op table ----

typedef struct op_info {
    const char *name;
    int arity;
    unsigned saves;  // bit i: the backward reads input i's values
    void (*backward)(tt_node *n);
} op_info;

static const op_info op_table[] = {
#define TT_OP(ID, name, arity, saves) [TT_OP_##ID] = {#name, arity, saves, tt__backward_##name},
#define TT_OP_ND(ID, name, arity) [TT_OP_##ID] = {#name, arity, 0, NULL},
#define TT_UNARY(ID, name, saves, flags, lo, hi) \
    [TT_OP_##ID] = {#name, 1, saves, tt__backward_unary},
#define TT_UNARY_S(ID, name, saves, flags, lo, hi, s) \
    [TT_OP_##ID] = {#name, 1, saves, tt__backward_unary},
#define TT_BINARY(ID, name, saves, flags, alo, ahi, blo, bhi) \
    [TT_OP_##ID] = {#name, 2, saves, tt__backward_binary},
#include "../tensor/ops.def"
};
_Static_assert(sizeof op_table / sizeof op_table[0] == TT_OP_COUNT,
               "op_table must have one entry per op in ops.def");

static const op_info *info(tt_op op) {
    TT_CHECK(op >= 0 && op < TT_OP_COUNT, "invalid op %d", (int)op);
    return &op_table[op];
}

tt__backward_fn tt__op_backward(tt_op op) { return info(op)->backward; }

const char *tt_op_name(tt_op op) { return info(op)->name; }
int tt_op_arity(tt_op op) { return info(op)->arity; }
bool tt_op_differentiable(tt_op op) { return info(op)->backward != NULL; }
unsigned tt_op_saved_inputs(tt_op op) { return info(op)->saves; }

// ---- grad mode ----

static _Thread_local bool grad_disabled;  // zero-initialized: grad mode starts on

bool tt_set_grad_enabled(bool enabled) {
    bool prev = !grad_disabled;
    grad_disabled = !enabled;
    return prev;
}

bool tt_is_grad_enabled(void) { return !grad_disabled; }

// The no-grad stack: each begin saves the mode it replaces, each end restores it.
#define NO_GRAD_MAX 64
static _Thread_local bool no_grad_saved[NO_GRAD_MAX];
static _Thread_local int no_grad_depth;

void tt_no_grad_begin(void) {
    TT_CHECK(no_grad_depth < NO_GRAD_MAX, "tt_no_grad_begin nested deeper than %d: a "
             "tt_no_grad_end is missing", NO_GRAD_MAX);
    no_grad_saved[no_grad_depth++] = !grad_disabled;
    grad_disabled = true;
}

void tt_no_grad_end(void) {
    TT_CHECK(no_grad_depth > 0, "tt_no_grad_end without a matching tt_no_grad_begin");
    grad_disabled = !no_grad_saved[--no_grad_depth];
}

void tt__check_float_at(const tt_tensor *x, const char *file, int line, const char *func) {
    tt__check_live(x, func);  // a freed input: the use-after-free message names the op
    if (!tt_dtype_is_float(x->dtype))
        tt_fatal(file, line, func, "tensor %s is %s; this op needs f32 or f64 "
                 "(convert with tt_to_dtype)", tt__shape(x), tt_dtype_name(x->dtype));
}

void tt__check_same_dtype_at(const tt_tensor *a, const tt_tensor *b, const char *file, int line,
                             const char *func) {
    if (a->dtype != b->dtype)
        tt_fatal(file, line, func, "dtypes differ: %s %s vs %s %s; convert one with "
                 "tt_to_dtype", tt__shape(a), tt_dtype_name(a->dtype), tt__shape(b),
                 tt_dtype_name(b->dtype));
}

tt_tensor *tt_set_requires_grad(tt_tensor *t, bool requires_grad) {
    tt__check_live(t, __func__);  // aborts on a freed tensor
    TT_CHECK(!t->node, "tensor %s is the output of op '%s'; only leaves (tensors no op made) "
             "take requires_grad (use tt_detach to make a leaf)", tt__shape(t),
             tt_op_name(t->node->op));
    TT_CHECK(!requires_grad || tt_dtype_is_float(t->dtype),
             "tensor %s is %s; only f32/f64 tensors can require grad", tt__shape(t),
             tt_dtype_name(t->dtype));
    t->requires_grad = requires_grad;
    return t;
}

tt_tensor *tt_grad(const tt_tensor *t) { return t->grad; }

void tt_zero_grad(tt_tensor *t) {
    tt__check_live(t, __func__);  // aborts on a freed tensor
    tt_release(t->grad);
    t->grad = NULL;
}

tt_tensor *tt__alias(tt_tensor *t) {
    return tt__new_view(t, t->ndim, t->shape, t->stride, t->offset);
}

tt_tensor *tt_detach(tt_tensor *t) { return tt__autorelease(tt__alias(t)); }

// ---- nodes ----

static _Atomic uint64_t next_seq;  // shared: a graph may hold nodes made on several threads

uint64_t tt__tape_seq(void) { return atomic_load_explicit(&next_seq, memory_order_relaxed); }

static void release_graph_refs(tt_node *n) {
    for (int i = 0; i < n->n_inputs; i++) {
        tt_release(n->inputs[i]);
        n->inputs[i] = NULL;
    }
    for (int i = 0; i < TT_NODE_MAX_SAVED; i++) {
        tt_release(n->saved[i]);
        n->saved[i] = NULL;
    }
}

static void node_free(tt_node *n) {
    release_graph_refs(n);
    if (n->op == TT_OP_FUNCTION) tt__function_release(n);
    tt_release(n->grad);
    tt_free(n);
}

static bool needs_grad(int n, tt_tensor *const *inputs) {
    if (grad_disabled) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

void *tt__record(tt_tensor *out, tt_op op, int n_inputs, tt_tensor *const *inputs,
                 size_t ctx_size) {
    out->origin = info(op)->name;  // what leak reports and misuse messages call it
    if (tt__prof_on) tt__prof_forward(out, op, n_inputs, inputs);
    if (tt__ckpt_watch) tt__ckpt_watch_inputs(n_inputs, inputs);  // inside tt_checkpoint's fn
    if (!needs_grad(n_inputs, inputs)) return NULL;
    TT_CHECK(!out->node, "output already has a node");
    size_t head = (sizeof(tt_node) + 15) & ~(size_t)15;
    size_t ctx = (ctx_size + 15) & ~(size_t)15;
    char *mem = TT_CALLOC(1, head + ctx + (size_t)n_inputs * (sizeof(tt_tensor *) +
                                                              sizeof(uint64_t)));
    tt_node *n = (tt_node *)mem;
    tt__set_node_free(node_free);
    n->op = op;
    n->seq = atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed);
    n->ctx = mem + head;
    n->inputs = (tt_tensor **)(mem + head + ctx);
    n->input_version = (uint64_t *)(mem + head + ctx + (size_t)n_inputs * sizeof(tt_tensor *));
    n->n_inputs = n_inputs;
    for (int i = 0; i < n_inputs; i++) {
        n->inputs[i] = tt_retain(inputs[i]);
        if (inputs[i]) n->input_version[i] = inputs[i]->storage->version;
    }
    n->out = out;
    n->dtype = out->dtype;
    n->ndim = out->ndim;
    memcpy(n->shape, out->shape, sizeof n->shape);
    out->node = n;
    out->requires_grad = true;
    return n->ctx;
}

void tt__save(tt_node *n, int slot, tt_tensor *t) {
    TT_CHECK(slot >= 0 && slot < TT_NODE_MAX_SAVED, "slot %d out of range", slot);
    tt_retain(t);
    tt_release(n->saved[slot]);
    n->saved[slot] = t;
    n->saved_version[slot] = t ? t->storage->version : 0;
}

// Aborts unless every tensor n's backward reads still has the version it had when saved.
void tt__check_versions(const tt_node *n) {
    unsigned reads = tt_op_saved_inputs(n->op);
    const tt_tensor *bad = NULL;
    uint64_t then = 0;
    char what[48] = "";
    for (int i = 0; i < n->n_inputs && !bad; i++) {
        const tt_tensor *x = n->inputs[i];
        if (x && ((reads >> (i < 31 ? i : 31)) & 1u) &&
            x->storage->version != n->input_version[i]) {
            bad = x;
            then = n->input_version[i];
            snprintf(what, sizeof what, "input %d", i);
        }
    }
    for (int j = 0; j < TT_NODE_MAX_SAVED && !bad; j++) {
        const tt_tensor *x = n->saved[j];
        if (x && x->storage->version != n->saved_version[j]) {
            bad = x;
            then = n->saved_version[j];
            snprintf(what, sizeof what, "saved tensor %d", j);
        }
    }
    if (!bad) return;
    const char *writer = bad->storage->writer;
    tt_fatal(__FILE__, __LINE__, "tt_backward", "a tensor saved by '%s' was modified in place "
             "by '%s' after it was saved; clone it before writing, or write after backward "
             "(the tensor: %s of '%s', %s %s%s%s%s, version %llu when saved, %llu now)",
             tt_op_name(n->op), writer ? writer : "an untracked write", what, tt_op_name(n->op),
             tt__shape(bad), tt_dtype_name(bad->dtype), bad->name ? " named '" : "",
             bad->name ? bad->name : "", bad->name ? "'" : "", (unsigned long long)then,
             (unsigned long long)bad->storage->version);
}

// ---- gradient accumulation ----

tt_tensor *tt__grad_buffer(const tt_tensor *x) {
    return x && x->requires_grad ? tt__new_zeros(x->dtype, x->ndim, x->shape) : NULL;
}

// accum_to under create_graph: *slot = *slot + g with ops, g summed to x's shape first. A
// .grad gets a copy of its first gradient: it must not share storage with a tensor of the graph.
static void accum_graph(tt_tensor **slot, const tt_tensor *x, tt_tensor *g) {
    tt_scope_begin();
    tt_tensor *s = tt__sum_to(g, x);
    if (*slot)
        s = tt_add(*slot, s);
    else if (slot == &x->grad)
        s = tt_clone(s);
    tt_retain(s);
    tt_release(*slot);
    *slot = s;
    tt_scope_end();
}

// *slot (NULL or a gradient shaped like x) += g, g broadcastable to x's shape.
static void accum_to(tt_tensor **slot, const tt_tensor *x, tt_tensor *g) {
    if (tt__create_graph) {
        accum_graph(slot, x, g);
        return;
    }
    if (!*slot && tt_same_shape(x, g)) {  // first gradient: one copying pass
        *slot = tt__new(x->dtype, x->ndim, x->shape);
        tt_copy_(*slot, g);
        return;
    }
    if (*slot) tt_bump_version(*slot, "accumulate_grad");
    else *slot = tt__new_zeros(x->dtype, x->ndim, x->shape);
    tt__accum_into(*slot, g);
}

// ---- gradient hooks and retained gradients ----
// A non-leaf's hooks run on its node's gradient when backward reaches the node (every
// contribution is in by then), before the node's backward. A leaf with hooks collects this
// backward's gradient in hooks->pending; once the graph is done, its hooks run on the total and
// the result is added to .grad (as PyTorch runs a leaf's hooks before AccumulateGrad).

typedef struct hook {
    tt_grad_hook fn;
    void *ctx;
} hook;

struct tt_hooks {
    hook *v;
    int n, cap;
    tt_tensor *pending;  // a leaf's gradient from the running backward, before its hooks
};

static void hooks_free(tt_hooks *h) {
    tt_release(h->pending);
    tt_free(h->v);
    tt_free(h);
}

static _Thread_local tt_tensor **pending;  // leaves (retained) with a pending gradient
static _Thread_local size_t npending, cappending;

// ---- concurrent backward into one leaf ----
// Backwards on several threads may reach the same leaf: its .grad and its hooks' pending
// gradient change only under one of LEAF_LOCKS spin locks, picked by the leaf's address, so
// the additions are serialized and none is lost (PyTorch's AccumulateGrad). A non-leaf's
// gradient belongs to the one graph that made it and takes no lock. Uncontended, a lock is one
// exchange per leaf per backward.
#define LEAF_LOCKS 64
static atomic_int leaf_locks[LEAF_LOCKS];

// Locks x's stripe when x is a leaf; returns the lock to hand to leaf_unlock (NULL if none).
static atomic_int *leaf_lock(const tt_tensor *x) {
    if (x->node) return NULL;
    uint64_t h = (uint64_t)((uintptr_t)x >> 4) * 0x9e3779b97f4a7c15ULL;
    atomic_int *l = &leaf_locks[h >> 58];  // the top 6 bits: LEAF_LOCKS is 64
    while (atomic_exchange_explicit(l, 1, memory_order_acquire)) sched_yield();
    return l;
}

static void leaf_unlock(atomic_int *l) {
    if (l) atomic_store_explicit(l, 0, memory_order_release);
}

_Thread_local bool tt__create_graph;
_Thread_local tt__capture *tt__cap;

int tt__capture_index(const tt_tensor *x) {
    for (int i = 0; i < tt__cap->n; i++)
        if (tt__cap->inputs[i] == x) return i;
    return -1;
}

// Where x's gradient goes: a capture's slot when x is one of its inputs (NULL, nowhere, for a
// leaf it does not ask for), else its node's, its hooks' pending gradient or its .grad.
static tt_tensor **grad_slot(tt_tensor *x, tt_tensor *g) {
    TT_CHECK(g->dtype == x->dtype, "gradient dtype %s does not match tensor dtype %s",
             tt_dtype_name(g->dtype), tt_dtype_name(x->dtype));
    if (tt__cap) {
        int i = tt__capture_index(x);
        if (i >= 0) return &tt__cap->grads[i];
        if (!x->node) return NULL;
    }
    if (x->node) return &x->node->grad;
    if (!x->hooks) return &x->grad;
    if (!x->hooks->pending) {
        if (npending == cappending) {
            cappending = cappending ? 2 * cappending : 16;
            pending = TT_REALLOC(pending, cappending * sizeof *pending);
        }
        pending[npending++] = tt_retain(x);
    }
    return &x->hooks->pending;
}

// Runs x's hooks on g (a reference, consumed); returns the final gradient (a reference).
static tt_tensor *run_hooks(tt_tensor *x, tt_tensor *g) {
    const tt_hooks *h = x->hooks;
    for (int i = 0; i < h->n; i++) {
        tt_scope_begin();  // owns what the hook makes with ops
        tt_tensor *r = h->v[i].fn(g, h->v[i].ctx);
        if (r && r != g) {
            TT_CHECK(r->dtype == x->dtype && tt_same_shape(r, x), "a gradient hook of tensor "
                     "%s %s returned %s %s; a replacement gradient must match the tensor (or "
                     "return NULL to keep the gradient)", tt__shape(x), tt_dtype_name(x->dtype),
                     tt__shape(r), tt_dtype_name(r->dtype));
            tt_retain(r);
            tt_release(g);
            g = r;
        }
        tt_scope_end();
    }
    return g;
}

// Leaf x's hooks on its pending gradient, then the accumulation into its .grad (no-op when
// nothing is pending: finish_leaf ran already).
void tt__finish_leaf(tt_tensor *x) {
    atomic_int *l = leaf_lock(x);
    tt_tensor *g = x->hooks ? x->hooks->pending : NULL;
    if (x->hooks) x->hooks->pending = NULL;
    leaf_unlock(l);
    if (!g) return;
    g = run_hooks(x, g);  // not under the lock: a hook is user code
    l = leaf_lock(x);
    accum_to(&x->grad, x, g);
    leaf_unlock(l);
    tt_release(g);
}

// The hooks of the leaves that received a gradient, then the accumulation into their .grad.
void tt__finish_pending(void) {
    for (size_t i = 0; i < npending; i++) {
        tt__finish_leaf(pending[i]);
        tt_release(pending[i]);
    }
    npending = 0;
    tt_free(pending);
    pending = NULL;
    cappending = 0;
}

// Before node n's backward: the hooks of its output, then its retained gradient.
void tt__output_hooks(tt_node *n) {
    tt_tensor *out = n->out;
    if (out->hooks) n->grad = run_hooks(out, n->grad);
    if (out->retains_grad) accum_to(&out->grad, out, n->grad);
}

tt_tensor *tt_retain_grad(tt_tensor *t) {
    TT_CHECK(t, "tensor is NULL");
    tt__check_live(t, __func__);  // aborts on a freed tensor
    TT_CHECK(t->requires_grad, "tensor %s does not require grad, so backward computes no "
             "gradient for it to retain", tt__shape(t));
    if (t->node) t->retains_grad = true;  // a leaf keeps its .grad anyway
    return t;
}

void tt_register_hook(tt_tensor *t, tt_grad_hook fn, void *ctx) {
    TT_CHECK(t && fn, "tensor or hook is NULL");
    tt__check_live(t, __func__);  // aborts on a freed tensor
    TT_CHECK(t->requires_grad, "cannot register a hook on tensor %s: it does not require grad "
             "(call tt_set_requires_grad on the leaves it comes from)", tt__shape(t));
    if (!t->hooks) {
        t->hooks = TT_CALLOC(1, sizeof *t->hooks);
        tt__set_hooks_free(hooks_free);
    }
    tt_hooks *h = t->hooks;
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 2;
        h->v = TT_REALLOC(h->v, (size_t)h->cap * sizeof *h->v);
    }
    h->v[h->n++] = (hook){fn, ctx};
}

void tt__accum_grad(tt_tensor *x, tt_tensor *g) {
    if (!x || !x->requires_grad) return;
    atomic_int *l = leaf_lock(x);
    tt_tensor **slot = grad_slot(x, g);
    if (slot) accum_to(slot, x, g);
    leaf_unlock(l);
}

void tt__accum_grad_owned(tt_tensor *x, tt_tensor *g) {
    if (x && x->requires_grad) {
        atomic_int *l = leaf_lock(x);
        tt_tensor **slot = grad_slot(x, g);
        if (!slot) {
            leaf_unlock(l);
            tt_release(g);
            return;
        }
        if (!*slot && !tt__create_graph && g->refcount == 1 && g->storage->refcount == 1 &&
            g->offset == 0 && !g->node && tt_same_shape(x, g) && tt_is_contiguous(g)) {
            *slot = g;  // nobody else sees g: it becomes the gradient, no copy
            leaf_unlock(l);
            return;
        }
        accum_to(slot, x, g);
        leaf_unlock(l);
    }
    tt_release(g);
}

void tt__accum_grad_node(tt_tensor *x, const tt_node *n, tt_tensor *g) {
    if (!x || !x->requires_grad) return;
    atomic_int *l = leaf_lock(x);
    tt_tensor **slot = grad_slot(x, g), *ng = n->grad;
    if (!slot) {
        leaf_unlock(l);
        return;
    }
    // Nothing but the node holds its gradient, and nothing but g (when g is a view made by this
    // backward, owned by its scope) shares the storage: after this backward the node drops its
    // reference, so g can become x's gradient without a copy. A later add into x's gradient
    // writes that storage; nobody reads it any more.
    bool alone = g == ng ? ng->refcount == 1 && ng->storage->refcount == 1
                         : ng->refcount == 1 && g->refcount == 1 && g->storage == ng->storage &&
                               ng->storage->refcount == 2;
    if (!*slot && alone && !tt__create_graph && !g->node && tt_same_shape(x, g) &&
        tt_is_contiguous(g))
        *slot = tt_retain(g);
    else
        accum_to(slot, x, g);
    leaf_unlock(l);
}

// ---- gradients added in place ----

tt_tensor *tt__grad_inplace(tt_tensor *x) {
    if (!x || !x->requires_grad || tt__create_graph || (!x->node && x->hooks) ||
        (tt__cap && (!x->node || tt__capture_index(x) >= 0)))
        return NULL;
    tt_tensor *g = x->node ? x->node->grad : x->grad;
    if (!g || g->node || g->dtype != x->dtype || !tt_same_shape(g, x) || !tt_is_contiguous(g))
        return NULL;
    tt_bump_version(g, "accumulate_grad");
    return g;
}
