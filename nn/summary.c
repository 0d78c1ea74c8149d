// tt_model_summary: a module tree's parameters per module (state_dict names), output shapes,
// forward FLOPs and activation memory at a given input, measured by running the forward under
// the profiler (autograd/profiler.c). Not here: the FLOPs conventions (profiler.h).
#include "nn_internal.h"
#include "../autograd/profiler.h"

#include <string.h>

// ---- one row ----

typedef struct row {
    char name[TT_NAME_MAX];
    const char *type;
    int depth;
    bool measured;  // ran its forward: shape, FLOPs and memory are known
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    int64_t params, flops, act_bytes;
} row;

typedef struct rows {
    row *v;
    int n, cap;
} rows;

static row *row_add(rows *r, tt_module m, const char *name, int depth) {
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 32;
        r->v = TT_REALLOC(r->v, (size_t)r->cap * sizeof *r->v);
    }
    row *w = &r->v[r->n++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    w->type = m.ops->type ? m.ops->type : "Module";
    w->depth = depth;
    tt_params p;
    tt_params_init(&p);
    tt_module_params(m, &p, name);
    w->params = tt_params_numel(&p);
    tt_params_free(&p);
    return w;
}

// ---- the walk ----

typedef struct walk {
    rows *r;
    const char *prefix;
    int depth;
} walk;

static void list_rows(tt_module m, const char *name, int depth, rows *r);

static void list_visit(tt_module child, const char *name, void *ctx) {
    const walk *w = ctx;
    char joined[TT_NAME_MAX];
    list_rows(child, tt_name_join(joined, w->prefix, name), w->depth, w->r);
}

// A row for m and its children, parameters only (no forward).
static void list_rows(tt_module m, const char *name, int depth, rows *r) {
    row_add(r, m, name, depth);
    walk w = {r, name, depth + 1};
    tt_module_children(m, list_visit, &w);
}

// Runs m on x in the caller's scope, filling w's measured fields; returns the output.
static tt_tensor *measure(tt_module m, tt_tensor *x, row *w) {
    int64_t flops0 = tt_profiler_totals().forward_flops, live0 = tt_live_bytes();
    tt_tensor *y = tt_module_forward(m, x);
    w->flops = tt_profiler_totals().forward_flops - flops0;
    w->act_bytes = tt_live_bytes() - live0;
    w->measured = true;
    w->ndim = y->ndim;
    memcpy(w->shape, y->shape, sizeof w->shape);
    return y;
}

typedef struct chain_walk {
    rows *r;
    const char *prefix;
    int depth;
    tt_tensor *h;  // the next child's input
    int64_t flops, act;
} chain_walk;

static tt_tensor *run_rows(tt_module m, tt_tensor *x, const char *name, int depth, rows *r);

static void chain_visit(tt_module child, const char *name, void *ctx) {
    chain_walk *w = ctx;
    char joined[TT_NAME_MAX];
    int at = w->r->n;
    w->h = run_rows(child, w->h, tt_name_join(joined, w->prefix, name), w->depth, w->r);
    w->flops += w->r->v[at].flops;
    w->act += w->r->v[at].act_bytes;
}

// A row for m run on x: a chain's children (a Sequential's) run one after another on their
// inputs, so each gets its own figures; other composites list their children with parameters
// only.
static tt_tensor *run_rows(tt_module m, tt_tensor *x, const char *name, int depth, rows *r) {
    int at = r->n;
    row_add(r, m, name, depth);
    if (!m.ops->chain) {
        tt_tensor *y = measure(m, x, &r->v[at]);
        walk w = {r, name, depth + 1};
        tt_module_children(m, list_visit, &w);
        return y;
    }
    chain_walk w = {r, name, depth + 1, x, 0, 0};
    tt_module_children(m, chain_visit, &w);
    row *me = &r->v[at];
    me->measured = true;
    me->flops = w.flops;
    me->act_bytes = w.act;
    me->ndim = w.h->ndim;
    memcpy(me->shape, w.h->shape, sizeof me->shape);
    return w.h;
}

// ---- the table ----

static void count_str(char *buf, size_t cap, int64_t v) {  // 1234567 -> "1,234,567"
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    size_t k = 0;
    if (v < 0 && k + 1 < cap) buf[k++] = '-';
    for (int i = 0; i < n && k + 1 < cap; i++) {
        buf[k++] = digits[i];
        if ((n - 1 - i) % 3 == 0 && i != n - 1 && k + 1 < cap) buf[k++] = ',';
    }
    buf[k] = 0;
}

// A row labelled with its name under its parent (NULL for the root): the name the parent
// gave it, dots included ("blocks.0", not "0").
static void print_row(FILE *f, const row *w, const row *parent) {
    char label[TT_NAME_MAX + 96], params[32];
    const char *shown = w->name[0] ? w->name : "(model)";
    size_t skip = parent && parent->name[0] ? strlen(parent->name) + 1 : 0;
    if (skip > strlen(shown)) skip = 0;
    snprintf(label, sizeof label, "%*s%s (%s)", 2 * w->depth, "", shown + skip, w->type);
    count_str(params, sizeof params, w->params);
    if (w->measured)
        fprintf(f, "%-40s %-18s %13s %12.4g %10.3f\n", label, tt__shape_of(w->ndim, w->shape),
                params, (double)w->flops, (double)w->act_bytes / 1e6);
    else
        fprintf(f, "%-40s %-18s %13s %12s %10s\n", label, "--", params, "--", "--");
}

tt_model_stats tt_model_summary(FILE *f, tt_module m, tt_tensor *x) {
    TT_CHECK(m.ops && m.ops->forward, "module has no forward; pass a module made by a "
             "tt_<name>_module function");
    TT_CHECK(x, "input is NULL; pass a tensor the module's forward takes");
    rows r = {0};
    tt_profiler_push();
    tt_scope_begin();
    int64_t live0 = tt_live_bytes();
    tt_tensor *y = run_rows(m, x, "", 0, &r);
    int64_t act = tt_live_bytes() - live0;
    tt_model_stats st = {.forward_flops = r.v[0].flops, .activation_bytes = act,
                         .out_ndim = y->ndim};
    memcpy(st.out_shape, y->shape, sizeof st.out_shape);
    tt_scope_end();
    tt_profiler_pop();
    tt_params p;
    tt_params_init(&p);
    tt_module_params(m, &p, NULL);
    for (int i = 0; i < p.n; i++) {
        bool dup = false;  // a tensor listed twice (tied weights) counts once
        for (int j = 0; j < i && !dup; j++) dup = p.items[j].tensor == p.items[i].tensor;
        if (dup) continue;
        int64_t n = tt_numel(p.items[i].tensor);
        st.params += n;
        if (p.items[i].tensor->requires_grad) st.trainable_params += n;
        st.param_bytes += n * (int64_t)tt_dtype_size(p.items[i].tensor->dtype);
    }
    tt_params_free(&p);
    if (f) {
        fprintf(f, "%-40s %-18s %13s %12s %10s\n", "module (type)", "output shape", "params",
                "FLOPs", "act. MB");
        for (int i = 0; i < r.n; i++) {
            const row *parent = NULL;  // the nearest row above one level up
            for (int j = i - 1; j >= 0 && !parent; j--)
                if (r.v[j].depth == r.v[i].depth - 1) parent = &r.v[j];
            print_row(f, &r.v[i], parent);
        }
        char a[32], b[32];
        count_str(a, sizeof a, st.params);
        count_str(b, sizeof b, st.trainable_params);
        fprintf(f, "params: %s (%s trainable), %.2f MB; input %s; forward: %.4g FLOPs, "
                "activations %.2f MB%s\n", a, b, (double)st.param_bytes / 1e6, tt__shape(x),
                (double)st.forward_flops, (double)st.activation_bytes / 1e6,
                tt_is_grad_enabled() ? " (kept for the backward)" : " (no grad)");
    }
    tt_free(r.v);
    return st;
}
