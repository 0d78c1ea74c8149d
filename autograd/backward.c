// The backward walk: the nodes reachable from the outputs, newest first, each node's backward,
// the leaves' hooks and gradient-ready notifications, and freeing the graph after it.
#include "autograd_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t visit_epoch;  // each walk takes its own: backwards run on any thread

// ---- gradient-ready notifications ----
// With a callback set, backward counts for each leaf the inputs of the collected nodes that
// are that leaf (its pending consumers); after each node's backward it counts down, and the
// leaf whose count reaches zero has its final gradient for this backward: its hooks run, the
// gradient reaches .grad, and the callback hears of it, before the rest of the graph runs.

static _Thread_local tt_grad_ready_fn ready_fn;
static _Thread_local void *ready_ctx;

void tt_backward_set_grad_ready(tt_grad_ready_fn fn, void *ctx) {
    ready_fn = fn;
    ready_ctx = fn ? ctx : NULL;
}

typedef struct leaf_count {
    tt_tensor *leaf;
    size_t left;  // consumers whose backward has not run yet
} leaf_count;

static int by_leaf(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const leaf_count *)a)->leaf;
    uintptr_t y = (uintptr_t)((const leaf_count *)b)->leaf;
    return x < y ? -1 : x > y;
}

static bool is_leaf_input(const tt_tensor *in) { return in && in->requires_grad && !in->node; }

// The leaves that the nodes' inputs name, each with its number of uses; sorted by address.
static leaf_count *count_leaves(tt_node *const *nodes, size_t n, size_t *nleaves) {
    size_t cap = 0, k = 0;
    for (size_t i = 0; i < n; i++) cap += (size_t)nodes[i]->n_inputs;
    leaf_count *v = TT_MALLOC((cap ? cap : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < nodes[i]->n_inputs; j++)
            if (is_leaf_input(nodes[i]->inputs[j])) v[k++] = (leaf_count){nodes[i]->inputs[j], 1};
    qsort(v, k, sizeof *v, by_leaf);
    size_t m = 0;  // merge the uses of one leaf
    for (size_t i = 0; i < k; i++) {
        if (m > 0 && v[m - 1].leaf == v[i].leaf)
            v[m - 1].left++;
        else
            v[m++] = v[i];
    }
    *nleaves = m;
    return v;
}

// After node n's backward (or its skip: no gradient reached it): n's leaf inputs have one
// consumer fewer; those with none left are final.
static void count_down(tt_node *n, leaf_count *v, size_t nleaves) {
    for (int j = 0; j < n->n_inputs; j++) {
        tt_tensor *in = n->inputs[j];
        if (!is_leaf_input(in)) continue;
        leaf_count key = {in, 0}, *c = bsearch(&key, v, nleaves, sizeof *v, by_leaf);
        if (--c->left > 0) continue;
        tt__finish_leaf(in);
        if (ready_fn) ready_fn(in, ready_ctx);  // a callback may have turned itself off
    }
}

// ---- backward ----

typedef struct node_list {
    tt_node **v;
    size_t n, cap;
} node_list;

static void list_push(node_list *l, tt_node *n) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = TT_REALLOC(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = n;
}

static int by_seq_desc(const void *a, const void *b) {
    uint64_t x = (*(tt_node *const *)a)->seq, y = (*(tt_node *const *)b)->seq;
    return x < y ? 1 : x > y ? -1 : 0;
}

// The nodes reachable from the roots' nodes (NULL entries skipped) through inputs that require
// grad, newest first; returns the walk's epoch (each node's visited). func names the public
// function in the message of a graph an earlier backward freed.
static uint64_t collect(int nroots, tt_node *const *roots, node_list *out, const char *func) {
    node_list stack = {0};
    uint64_t epoch = atomic_fetch_add_explicit(&visit_epoch, 1, memory_order_relaxed) + 1;
    for (int r = 0; r < nroots; r++) {
        if (!roots[r] || roots[r]->visited == epoch) continue;
        roots[r]->visited = epoch;
        list_push(&stack, roots[r]);
    }
    while (stack.n > 0) {
        tt_node *n = stack.v[--stack.n];
        TT_CHECK_IN(func, !n->freed,
                    "the graph through op '%s' was already freed by an earlier "
                    "backward; pass retain_graph=true to tt_backward_ex for the first one",
                    tt_op_name(n->op));
        list_push(out, n);
        for (int i = 0; i < n->n_inputs; i++) {
            tt_tensor *in = n->inputs[i];
            if (!in || !in->requires_grad || !in->node) continue;
            if (in->node->visited == epoch) continue;
            in->node->visited = epoch;
            list_push(&stack, in->node);
        }
    }
    tt_free(stack.v);
    if (out->n) qsort(out->v, out->n, sizeof *out->v, by_seq_desc);  // no roots: v is NULL
    return epoch;
}

// Drops every input and saved tensor of the walked nodes (a backward without retain_graph).
static void release_walked(const node_list *nodes) {
    // Move every reference out first: releasing may free nodes of this very list.
    size_t nrefs = 0;
    for (size_t i = 0; i < nodes->n; i++)
        nrefs += (size_t)nodes->v[i]->n_inputs + TT_NODE_MAX_SAVED;
    tt_tensor **refs = TT_MALLOC((nrefs ? nrefs : 1) * sizeof *refs);
    size_t k = 0;
    for (size_t i = 0; i < nodes->n; i++) {
        tt_node *n = nodes->v[i];
        for (int j = 0; j < n->n_inputs; j++) {
            refs[k++] = n->inputs[j];
            n->inputs[j] = NULL;
        }
        for (int j = 0; j < TT_NODE_MAX_SAVED; j++) {
            refs[k++] = n->saved[j];
            n->saved[j] = NULL;
        }
        n->freed = true;
        if (n->op == TT_OP_FUNCTION) tt__function_release(n);
    }
    for (size_t i = 0; i < k; i++) tt_release(refs[i]);
    tt_free(refs);
}

// ---- tt_autograd_grad's pruning ----
// Under a capture, a node's backward runs only when one of its inputs leads to an input of
// tt_autograd_grad (n->reach == the walk's epoch); the other nodes pass no gradient on. The
// gradient of an input goes to the capture's slot, never to its node (tape.c, grad_slot).

static _Thread_local uint64_t walk_epoch;  // the running walk's
static _Thread_local int walk_depth;       // walks running on this thread (> 1: nested)

static bool leads_to_target(const tt_tensor *in) {
    if (!in || !in->requires_grad) return false;
    return tt__capture_index(in) >= 0 || (in->node && in->node->reach == walk_epoch);
}

static void mark_reach(const node_list *nodes) {
    for (size_t k = nodes->n; k-- > 0;) {  // oldest first: inputs before their consumers
        tt_node *n = nodes->v[k];
        for (int j = 0; j < n->n_inputs && n->reach != walk_epoch; j++)
            if (leads_to_target(n->inputs[j])) n->reach = walk_epoch;
    }
}

bool tt__input_needs_grad(const tt_node *n, int i) {
    tt_tensor *in = n->inputs[i];
    return in && in->requires_grad && (!tt__cap || leads_to_target(in));
}

// Under a capture, before n's turn: a node that leads to no input drops what reached it; an
// input's node that leads to another input takes its gradient from the capture's slot.
static void capture_turn(tt_node *n) {
    if (n->reach != walk_epoch) {
        tt_release(n->grad);
        n->grad = NULL;
        return;
    }
    int i = tt__capture_index(n->out);
    if (i >= 0) n->grad = tt_retain(tt__cap->grads[i]);
}

// A walk inside another (a backward that calls tt_autograd_grad) must not reach the nodes the
// outer one has not run yet: their gradients so far are the outer walk's.
static void check_untouched(const node_list *nodes, const char *func) {
    for (size_t i = 0; i < nodes->n; i++)
        TT_CHECK_IN(func, !nodes->v[i]->grad, "called inside a backward, it reaches op '%s', "
                    "which that backward has not run yet; differentiate detached copies "
                    "(tt_detach + tt_set_requires_grad), or call it before the backward",
                    tt_op_name(nodes->v[i]->op));
}

// The backward to run for n: its first-order one, or under create_graph its differentiable one
// (an op without one aborts, naming it).
static tt__backward_fn backward_of(const tt_node *n) {
    if (!tt__create_graph) return tt__op_backward(n->op);
    tt__backward_fn f = tt__backward2_of(n->op);
    TT_CHECK_IN("tt_autograd_grad", f,
                "op '%s' has no differentiable backward, so "
                "create_graph cannot record the gradient through it (tt_op_twice_differentiable "
                "lists the ops that have one; detach its output, or wrap it in a tt_function "
                "whose backward uses ops that have one)",
                tt_op_name(n->op));
    return f;
}

// Each collected node's backward, newest first; leaves (may be NULL) counts the leaves' uses.
static void run_nodes(const node_list *nodes, leaf_count *leaves, size_t nleaves) {
    for (size_t i = 0; i < nodes->n; i++) {
        tt_node *n = nodes->v[i];
        if (tt__cap) capture_turn(n);
        if (!n->grad) {  // no gradient reached it
            if (leaves) count_down(n, leaves, nleaves);
            continue;
        }
        tt__check_versions(n);
        tt__output_hooks(n);
        tt__backward_fn f = backward_of(n);
        tt_scope_begin();
        if (tt__prof_on)
            tt__prof_backward(n, f);
        else
            f(n);
        tt_scope_end();
        tt_release(n->grad);
        n->grad = NULL;
        if (leaves) count_down(n, leaves, nleaves);
    }
}

// The backward from outs[0 .. nout) seeded with grads (NULL, or a NULL entry: ones). A nested
// one (tt__backward_nested) leaves the leaves' hooks and the ready notifications to the
// backward it runs in. With create_graph, backwards run with grad mode on and record the graph
// of the gradients (the graph is then always kept).
static void run_backward(int nout, tt_tensor *const *outs, tt_tensor *const *grads,
                         const tt_grad_opts *o, bool nested, const char *func) {
    bool prev = tt_set_grad_enabled(o->create_graph), prev_create = tt__create_graph;
    uint64_t prev_epoch = walk_epoch;
    tt__create_graph = o->create_graph;
    tt_node *stack_roots[8],
        **roots = nout <= 8 ? stack_roots : TT_MALLOC((size_t)nout * sizeof *roots);
    for (int i = 0; i < nout; i++) roots[i] = outs[i]->node;
    node_list nodes = {0};
    walk_epoch = collect(nout, roots, &nodes, func);
    if (roots != stack_roots) tt_free(roots);
    if (walk_depth++ > 0) check_untouched(&nodes, func);
    tt_scope_begin();
    for (int i = 0; i < nout; i++) {
        tt_tensor *out = outs[i], *g = grads ? grads[i] : NULL;
        tt__accum_grad(out, g ? g : tt_ones(out->dtype, out->ndim, out->shape));
    }
    tt_scope_end();
    if (tt__cap) mark_reach(&nodes);
    size_t nleaves = 0;
    bool notify = ready_fn && !nested && !tt__cap;  // tt_autograd_grad changes no .grad
    leaf_count *leaves = notify ? count_leaves(nodes.v, nodes.n, &nleaves) : NULL;
    run_nodes(&nodes, leaves, nleaves);
    tt_free(leaves);
    if (!nested) tt__finish_pending();
    for (int i = 0; i < nout && notify; i++)
        if (!outs[i]->node) ready_fn(outs[i], ready_ctx);  // a leaf output is final at once
    if (!o->retain_graph && !o->create_graph) release_walked(&nodes);
    tt_free(nodes.v);
    walk_depth--;
    walk_epoch = prev_epoch;
    tt__create_graph = prev_create;
    tt_set_grad_enabled(prev);
}

void tt__backward_nested(tt_tensor *out, tt_tensor *grad) {
    TT_CHECK_IN("tt_autograd_grad", !tt__cap,
                "the graph holds a tt_activation_checkpoint; "
                "tt_autograd_grad cannot pass through one (call tt_backward instead)");
    run_backward(1, &out, &grad, &(tt_grad_opts){0}, true, "tt_backward");
}

// Aborts unless out can start a backward seeded with grad (NULL: an implicit one).
static void check_output(const tt_tensor *out, const tt_tensor *grad, const char *func) {
    TT_CHECK_IN(func, out, "tensor is NULL");
    tt__check_live(out, func);  // aborts on a freed tensor
    TT_CHECK_IN(func, out->requires_grad,
                "tensor %s does not require grad: no input of the ops that "
                "made it requires grad (call tt_set_requires_grad on the parameters), or grad "
                "mode was off",
                tt__shape(out));
    if (grad) {
        TT_CHECK_IN(func, tt_same_shape(grad, out) && grad->dtype == out->dtype,
                    "gradient %s %s must match the output %s %s", tt__shape(grad),
                    tt_dtype_name(grad->dtype), tt__shape(out), tt_dtype_name(out->dtype));
    } else {
        TT_CHECK_IN(func, tt_numel(out) == 1,
                    "output %s has %lld elements; backward without a gradient "
                    "needs one element (reduce it, e.g. tt_mean_all, or use tt_backward_with)",
                    tt__shape(out), (long long)tt_numel(out));
    }
}

void tt__run_backward(int nout, tt_tensor *const *outs, tt_tensor *const *grads,
                      const tt_grad_opts *opts, const char *func) {
    for (int i = 0; i < nout; i++) check_output(outs[i], grads ? grads[i] : NULL, func);
    run_backward(nout, outs, grads, opts ? opts : &(tt_grad_opts){0}, false, func);
}

void tt_backward_ex(tt_tensor *out, tt_tensor *grad, bool retain_graph) {
    tt__run_backward(1, &out, &grad, &(tt_grad_opts){.retain_graph = retain_graph}, "tt_backward");
}

void tt_backward(tt_tensor *loss) { tt_backward_ex(loss, NULL, false); }

void tt_backward_with(tt_tensor *out, tt_tensor *grad) {
    TT_CHECK(grad, "gradient is NULL; use tt_backward for a one-element output");
    tt_backward_ex(out, grad, false);
}

void tt_autograd_backward(int n, tt_tensor *const *outputs, tt_tensor *const *grad_outputs,
                          const tt_grad_opts *opts) {
    TT_CHECK(n > 0 && outputs, "no outputs to run backward from");
    tt__run_backward(n, outputs, grad_outputs, opts, __func__);
}

// ---- graph walk ----

void tt_graph_leaves(tt_tensor *t, tt_leaf_visit visit, void *ctx) {
    TT_CHECK(t && visit, "tensor or visitor is NULL");
    if (!t->requires_grad) return;
    if (!t->node) {
        visit(t, NULL, ctx);
        return;
    }
    node_list nodes = {0};
    collect(1, &t->node, &nodes, __func__);
    // Each leaf once, in the order backward reaches it; the list of leaves seen is small.
    tt_tensor **seen = NULL;
    size_t n_seen = 0, cap = 0;
    for (size_t i = 0; i < nodes.n; i++) {
        tt_node *n = nodes.v[i];
        for (int j = 0; j < n->n_inputs; j++) {
            tt_tensor *in = n->inputs[j];
            if (!in || !in->requires_grad || in->node) continue;
            bool dup = false;
            for (size_t k = 0; k < n_seen && !dup; k++) dup = seen[k] == in;
            if (dup) continue;
            if (n_seen == cap) {
                cap = cap ? 2 * cap : 64;
                seen = TT_REALLOC(seen, cap * sizeof *seen);
            }
            seen[n_seen++] = in;
            visit(in, tt_op_name(n->op), ctx);
        }
    }
    tt_free(seen);
    tt_free(nodes.v);
}

bool tt_graph_twice_differentiable(tt_tensor *t, const char **op) {
    TT_CHECK(t, "tensor is NULL");
    if (op) *op = NULL;
    if (!t->node) return true;
    node_list nodes = {0};
    collect(1, &t->node, &nodes, __func__);
    bool ok = true;
    for (size_t i = 0; i < nodes.n && ok; i++) {
        ok = tt__backward2_of(nodes.v[i]->op) != NULL;
        if (!ok && op) *op = tt_op_name(nodes.v[i]->op);
    }
    tt_free(nodes.v);
    return ok;
}
