// Walking a module tree: named_modules, the Linears of a tree and a chain's forward, all
// through tt_module_ops.children. Not here: params, buffers, train and free (nn/params.c).
#include "nn_internal.h"

#include <string.h>

// ---- named_modules ----

typedef struct named_walk {
    tt_module_visit visit;
    void *ctx;
    const char *prefix;
} named_walk;

static void named_visit(tt_module child, const char *name, void *ctx) {
    const named_walk *w = ctx;
    char joined[TT_NAME_MAX];
    tt_module_named_modules(child, tt_name_join(joined, w->prefix, name), w->visit, w->ctx);
}

void tt_module_named_modules(tt_module m, const char *prefix, tt_module_visit visit,
                             void *ctx) {
    TT_CHECK(m.ops && visit, "a module (with its ops) and a visit function must be given");
    visit(m, prefix ? prefix : "", ctx);
    named_walk w = {visit, ctx, prefix};
    tt_module_children(m, named_visit, &w);
}

// ---- Linears ----

tt_nn_linear *tt_module_as_linear(tt_module m) {
    return tt__is_linear_ops(m.ops) ? m.self : NULL;
}

void tt_nn_linear_list_init(tt_nn_linear_list *l) { memset(l, 0, sizeof *l); }

void tt_nn_linear_list_free(tt_nn_linear_list *l) {
    if (!l) return;
    tt_free(l->items);
    memset(l, 0, sizeof *l);
}

static void linear_visit(tt_module m, const char *name, void *ctx) {
    tt_nn_linear_list *l = ctx;
    tt_nn_linear *lin = tt_module_as_linear(m);
    if (!lin) return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->items = TT_REALLOC(l->items, (size_t)l->cap * sizeof *l->items);
    }
    tt_named_linear *it = &l->items[l->n++];
    snprintf(it->name, sizeof it->name, "%s", name);
    it->linear = lin;
}

void tt_module_linears(tt_module m, const char *prefix, tt_nn_linear_list *out) {
    TT_CHECK(out, "out must not be NULL; tt_nn_linear_list_init one first");
    tt_module_named_modules(m, prefix, linear_visit, out);
}

// ---- a chain's forward ----

typedef struct chain_walk {
    tt_tensor *x;
    int n;
} chain_walk;

static void chain_visit(tt_module child, const char *name, void *ctx) {
    (void)name;
    chain_walk *w = ctx;
    w->x = tt_module_forward(child, w->x);
    w->n++;
}

tt_tensor *tt_module_forward_chain(tt_module m, tt_tensor *x) {
    chain_walk w = {x, 0};
    tt_module_children(m, chain_visit, &w);
    TT_CHECK(w.n > 0, "module '%s' has no children to run as a chain",
             m.ops->type ? m.ops->type : "Module");
    return w.x;
}
