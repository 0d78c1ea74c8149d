// Parameter lists with hierarchical names, the default dtype, the uniform module interface
// and tt_nn_sequential.
#include "nn_internal.h"

#include <math.h>
#include <string.h>

// ---- default dtype ----

static _Thread_local tt_dtype default_dtype = TT_F32;

tt_dtype tt_set_default_dtype(tt_dtype dtype) {
    TT_CHECK(tt_dtype_is_float(dtype), "the default dtype must be f32 or f64, got %s",
             tt_dtype_name(dtype));
    tt_dtype prev = default_dtype;
    default_dtype = dtype;
    return prev;
}

tt_dtype tt_default_dtype(void) { return default_dtype; }

tt_tensor *tt__param_new(int ndim, const int64_t *shape) {
    tt_tensor *t = tt__new_zeros(default_dtype, ndim, shape);
    t->requires_grad = true;
    return t;
}

tt_tensor *tt__buffer_new(int ndim, const int64_t *shape) {
    return tt__new_zeros(default_dtype, ndim, shape);
}

// ---- names ----

// Formats into a local buffer first, so buf may be prefix itself (tt_name_index(b, b, i)).
char *tt_name_join(char *buf, const char *prefix, const char *name) {
    char tmp[TT_NAME_MAX];
    int n = (prefix && prefix[0]) ? snprintf(tmp, TT_NAME_MAX, "%s.%s", prefix, name)
                                  : snprintf(tmp, TT_NAME_MAX, "%s", name);
    TT_CHECK(n >= 0 && n < TT_NAME_MAX, "name '%s.%s' is longer than %d characters",
             prefix ? prefix : "", name, TT_NAME_MAX - 1);
    memcpy(buf, tmp, (size_t)n + 1);
    return buf;
}

char *tt_name_index(char *buf, const char *prefix, int index) {
    char idx[32];
    snprintf(idx, sizeof idx, "%d", index);
    return tt_name_join(buf, prefix, idx);
}

// ---- parameter lists ----

void tt_params_init(tt_params *p) { memset(p, 0, sizeof *p); }

void tt_params_free(tt_params *p) {
    for (int i = 0; i < p->n; i++) {
        tt_free(p->items[i].name);
        tt_release(p->items[i].tensor);
    }
    tt_free(p->items);
    memset(p, 0, sizeof *p);
}

void tt_params_add(tt_params *p, const char *prefix, const char *name, tt_tensor *t) {
    char full[TT_NAME_MAX];
    tt_name_join(full, prefix, name);
    TT_CHECK(t, "parameter '%s' is NULL", full);
    TT_CHECK(!tt_params_get(p, full), "duplicate parameter name '%s' (give each child module "
             "its own prefix)", full);
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->items = TT_REALLOC(p->items, (size_t)p->cap * sizeof *p->items);
    }
    size_t len = strlen(full) + 1;
    p->items[p->n].name = TT_MALLOC(len);
    memcpy(p->items[p->n].name, full, len);
    p->items[p->n].tensor = tt_retain(t);
    p->n++;
}

tt_tensor *tt_params_get(const tt_params *p, const char *name) {
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->items[i].name, name) == 0) return p->items[i].tensor;
    return NULL;
}

int64_t tt_params_numel(const tt_params *p) {
    int64_t n = 0;
    for (int i = 0; i < p->n; i++) n += tt_numel(p->items[i].tensor);
    return n;
}

void tt_params_zero_grad(const tt_params *p) {
    for (int i = 0; i < p->n; i++) tt_zero_grad(p->items[i].tensor);
}

const char *tt_params_nonfinite(const tt_params *p, int64_t *index) {
    for (int i = 0; i < p->n; i++) {
        const tt_tensor *t = p->items[i].tensor;
        int64_t n = tt_numel(t);
        bool fast = t->dtype == TT_F32 && tt_is_contiguous(t);
        const float *x = fast ? tt_data_f32(t) : NULL;
        for (int64_t k = 0; k < n; k++) {
            if (isfinite(fast ? x[k] : tt_at(t, k))) continue;
            if (index) *index = k;
            return p->items[i].name;
        }
    }
    return NULL;
}

// ---- the reachability check ----

typedef struct reach_ctx {
    const tt_params *p;
    int missing;
    char msg[1024];
    size_t len;
} reach_ctx;

static void reach_visit(tt_tensor *leaf, const char *op, void *ctx) {
    reach_ctx *c = ctx;
    for (int i = 0; i < c->p->n; i++)
        if (c->p->items[i].tensor == leaf) return;
    c->missing++;
    if (c->len >= sizeof c->msg - 1) return;
    int k = snprintf(c->msg + c->len, sizeof c->msg - c->len, "%s%s %s%s%s%s (input of '%s')",
                     c->missing > 1 ? "; " : "", tt__shape(leaf), tt_dtype_name(leaf->dtype),
                     leaf->name ? " '" : "", leaf->name ? leaf->name : "",
                     leaf->name ? "'" : "", op ? op : "the loss itself");
    if (k > 0) c->len += (size_t)k;
    if (c->len > sizeof c->msg - 1) c->len = sizeof c->msg - 1;
}

void tt_params_check_reaches(const tt_params *p, tt_tensor *loss) {
    TT_CHECK(p && loss, "parameter list or loss is NULL");
    reach_ctx c = {.p = p};
    tt_graph_leaves(loss, reach_visit, &c);
    TT_CHECK(c.missing == 0, "%d leaf tensor(s) that require grad reach the loss but are not "
             "in the parameter list (%d entries): %s. The optimizer and the checkpoint would "
             "skip them: add the module's tt_<name>_params call (or tt_params_add), or build "
             "the tensor without requires_grad", c.missing, p->n, c.msg);
}

// ---- modules ----

tt_tensor *tt_module_forward(tt_module m, tt_tensor *x) { return m.ops->forward(m.self, x); }

typedef struct params_walk {
    tt_params *out;
    const char *prefix;
} params_walk;

static void params_visit(tt_module child, const char *name, void *ctx) {
    const params_walk *w = ctx;
    char joined[TT_NAME_MAX];
    tt_module_params(child, w->out, tt_name_join(joined, w->prefix, name));
}

void tt_module_params(tt_module m, tt_params *out, const char *prefix) {
    if (m.ops->params) m.ops->params(m.self, out, prefix);
    params_walk w = {out, prefix};
    tt_module_children(m, params_visit, &w);
}

static void buffers_visit(tt_module child, const char *name, void *ctx) {
    const params_walk *w = ctx;
    char joined[TT_NAME_MAX];
    tt_module_buffers(child, w->out, tt_name_join(joined, w->prefix, name));
}

void tt_module_buffers(tt_module m, tt_params *out, const char *prefix) {
    if (m.ops->buffers) m.ops->buffers(m.self, out, prefix);
    params_walk w = {out, prefix};
    tt_module_children(m, buffers_visit, &w);
}

// PyTorch's state_dict order: a module's own parameters, its own buffers, then its children.
static void state_visit(tt_module child, const char *name, void *ctx) {
    const params_walk *w = ctx;
    char joined[TT_NAME_MAX];
    tt_module_state(child, w->out, tt_name_join(joined, w->prefix, name));
}

void tt_module_state(tt_module m, tt_params *out, const char *prefix) {
    if (m.ops->params) m.ops->params(m.self, out, prefix);
    if (m.ops->buffers) m.ops->buffers(m.self, out, prefix);
    params_walk w = {out, prefix};
    tt_module_children(m, state_visit, &w);
}

static void train_visit(tt_module child, const char *name, void *ctx) {
    (void)name;
    tt_module_train(child, *(const bool *)ctx);
}

void tt_module_train(tt_module m, bool training) {
    if (m.ops->train) m.ops->train(m.self, training);
    tt_module_children(m, train_visit, &training);
}

void tt_module_children(tt_module m, tt_module_visit visit, void *ctx) {
    if (m.ops->children) m.ops->children(m.self, visit, ctx);
}

void tt_module_free(tt_module m) {
    if (m.ops->free) m.ops->free(m.self);
    if (m.ops->owned) tt_free(m.self);
}

static void free_visit(tt_module child, const char *name, void *ctx) {
    (void)name;
    (void)ctx;
    tt_module_free(child);
}

void tt__module_free_children(tt_module m) { tt_module_children(m, free_visit, NULL); }

void tt_module_eval_begin(tt_module m) {
    tt_module_train(m, false);
    tt_no_grad_begin();
    tt_scope_begin();
}

void tt_module_eval_end(tt_module m) {
    tt_scope_end();
    tt_no_grad_end();
    tt_module_train(m, true);
}

int64_t tt_module_numel(tt_module m) {
    tt_params p;
    tt_params_init(&p);
    tt_module_params(m, &p, NULL);
    int64_t n = tt_params_numel(&p);
    tt_params_free(&p);
    return n;
}

// ---- sequential ----

void tt_nn_sequential_init(tt_nn_sequential *s) { memset(s, 0, sizeof *s); }

void tt_nn_sequential_add(tt_nn_sequential *s, tt_module m) {
    TT_CHECK(m.ops && m.ops->forward, "module has no forward");
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->items = TT_REALLOC(s->items, (size_t)s->cap * sizeof *s->items);
    }
    s->items[s->n++] = m;
}

tt_tensor *tt_nn_sequential_forward(tt_nn_sequential *s, tt_tensor *x) {
    TT_CHECK(s->n > 0, "empty sequential: add modules with tt_nn_sequential_add");
    // An inner scope frees the intermediates whether or not the caller is in a scope.
    tt_scope_begin();
    tt_tensor *h = x;
    for (int i = 0; i < s->n; i++) h = tt_module_forward(s->items[i], h);
    tt_keep(h);
    tt_scope_end();
    return h;
}

// The children "0", "1", ...: what params and train walk. The modules are borrowed, so
// tt_nn_sequential_free does not free through it.
static void sequential_children(void *self, tt_module_visit visit, void *ctx) {
    const tt_nn_sequential *s = self;
    char name[TT_NAME_MAX];
    for (int i = 0; i < s->n; i++) visit(s->items[i], tt_name_index(name, NULL, i), ctx);
}

static tt_tensor *sequential_fwd(void *self, tt_tensor *x) {
    return tt_nn_sequential_forward(self, x);
}
static const tt_module_ops sequential_ops = {.type = "Sequential", .forward = sequential_fwd,
                                             .children = sequential_children, .chain = true};
tt_module tt_nn_sequential_module(tt_nn_sequential *s) { return (tt_module){s, &sequential_ops}; }

void tt_nn_sequential_params(const tt_nn_sequential *s, tt_params *out, const char *prefix) {
    tt_module_params(tt_nn_sequential_module((tt_nn_sequential *)s), out, prefix);
}

void tt_nn_sequential_train(tt_nn_sequential *s, bool training) {
    tt_module_train(tt_nn_sequential_module(s), training);
}

void tt_nn_sequential_free(tt_nn_sequential *s) {
    for (int i = 0; i < s->n; i++)
        if (s->items[i].ops->owned) tt_module_free(s->items[i]);
    tt_free(s->items);
    memset(s, 0, sizeof *s);
}

// The heap-made sequential's ops: those of a borrowed one, plus a free (its items and arrays;
// tt_module_free then frees the struct).
static void sequential_free_cb(void *self) { tt_nn_sequential_free(self); }
static const tt_module_ops owned_sequential_ops = {
    .type = "Sequential", .forward = sequential_fwd, .children = sequential_children,
    .free = sequential_free_cb, .chain = true, .owned = true};

tt_module tt_nn_sequential_new(int n, const tt_module *mods) {
    TT_CHECK(n >= 0 && (n == 0 || mods), "tt_nn_sequential_new: n = %d modules", n);
    tt_nn_sequential *s = TT_MALLOC(sizeof *s);
    tt_nn_sequential_init(s);
    for (int i = 0; i < n; i++) tt_nn_sequential_add(s, mods[i]);
    return (tt_module){s, &owned_sequential_ops};
}
