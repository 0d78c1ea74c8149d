// tt_custom: a user's module built by registration (PyTorch's register_parameter,
// register_buffer and add_module), so params, buffers, train and free need no callbacks of
// the user's own. It frees the children made by tt_<name>_new and borrows the others.
#include "nn_internal.h"

#include <string.h>

void tt_custom_init(tt_custom *c, void *self, tt_tensor *(*forward)(void *self, tt_tensor *x)) {
    TT_CHECK(c && forward, "give the struct and a forward function");
    memset(c, 0, sizeof *c);
    c->self = self;
    c->forward = forward;
    c->training = true;
    tt_params_init(&c->params);
    tt_params_init(&c->buffers);
}

tt_module tt_custom_add_module(tt_custom *c, const char *name, tt_module child) {
    TT_CHECK(child.ops && child.ops->forward, "'%s' has no forward", name);
    for (int i = 0; i < c->n; i++)
        TT_CHECK(strcmp(c->names[i], name) != 0, "'%s' added twice", name);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->children = TT_REALLOC(c->children, (size_t)c->cap * sizeof *c->children);
        c->names = TT_REALLOC(c->names, (size_t)c->cap * sizeof *c->names);
    }
    size_t len = strlen(name) + 1;
    c->names[c->n] = memcpy(TT_MALLOC(len), name, len);
    c->children[c->n++] = child;
    return child;
}

// Appends t to list under name, taking the caller's reference (the list retains its own).
static tt_tensor *register_tensor(tt_params *list, const char *name, tt_tensor *t,
                                  const char *func) {
    TT_CHECK(t, "%s: '%s' is NULL", func, name);
    TT_CHECK(tt_scope_depth() == 0, "%s: '%s' registered inside a scope; make a module's "
             "tensors outside any scope (they outlive every step)", func, name);
    tt_params_add(list, NULL, name, t);
    tt_release(t);
    return t;
}

tt_tensor *tt_custom_add_param(tt_custom *c, const char *name, tt_tensor *t) {
    register_tensor(&c->params, name, t, "tt_custom_add_param");
    return tt_set_requires_grad(t, true);
}

tt_tensor *tt_custom_add_buffer(tt_custom *c, const char *name, tt_tensor *t) {
    return register_tensor(&c->buffers, name, t, "tt_custom_add_buffer");
}

// ---- the module interface ----

// The user's forward in a scope of its own, as tt_nn_sequential_forward: its intermediates are
// freed on return (the graph keeps what backward needs), only the result reaches the caller.
static tt_tensor *custom_fwd(void *self, tt_tensor *x) {
    tt_custom *c = self;
    tt_scope_begin();
    tt_tensor *y = tt_keep(c->forward(c->self, x));
    tt_scope_end();
    return y;
}

// Appends each tensor of own to out under prefix.
static void copy_list(const tt_params *own, tt_params *out, const char *prefix) {
    for (int i = 0; i < own->n; i++)
        tt_params_add(out, prefix, own->items[i].name, own->items[i].tensor);
}

static void custom_params(const void *self, tt_params *out, const char *prefix) {
    copy_list(&((const tt_custom *)self)->params, out, prefix);
}

static void custom_buffers(const void *self, tt_params *out, const char *prefix) {
    copy_list(&((const tt_custom *)self)->buffers, out, prefix);
}

static void custom_train(void *self, bool training) { ((tt_custom *)self)->training = training; }

static void custom_children(void *self, tt_module_visit visit, void *ctx) {
    tt_custom *c = self;
    for (int i = 0; i < c->n; i++) visit(c->children[i], c->names[i], ctx);
}

static void custom_free(void *self) { tt_custom_free(self); }

static const tt_module_ops custom_ops = {
    .type = "Module", .forward = custom_fwd, .params = custom_params, .train = custom_train,
    .children = custom_children, .free = custom_free, .buffers = custom_buffers};

tt_module tt_custom_module(tt_custom *c) { return (tt_module){c, &custom_ops}; }

void tt_custom_free(tt_custom *c) {
    for (int i = 0; i < c->n; i++) {
        if (c->children[i].ops->owned) tt_module_free(c->children[i]);
        tt_free(c->names[i]);
    }
    tt_free(c->children);
    tt_free(c->names);
    tt_params_free(&c->params);
    tt_params_free(&c->buffers);
    memset(c, 0, sizeof *c);
}
