// tinytorch.c nn: parameter lists, the tt_module interface, tt_nn_sequential, init schemes and
// the default dtype of new parameters. The layers are in layers.h, transformer.h, conv.h and
// recurrent.h; nn.h includes them all.
//
// The module convention: a plain struct the caller owns; tt_<name>_init(m, config..., rng)
// creates its parameters (leaves with requires_grad, in tt_default_dtype(), never owned by a
// scope); tt_<name>_forward(m, x, ...) returns a new reference like any op;
// tt_<name>_params(m, list, prefix) appends its parameters under hierarchical names
// ("blocks.3.attn.q_proj.weight"); tt_<name>_free(m) releases them and is safe on a zeroed
// struct. Modules with dropout or batch norm have tt_<name>_train(m, training); composites
// propagate it. State that is saved but not trained (BatchNorm's running stats) is a module's
// buffers, tt_<name>_buffers(m, list, prefix); a checkpoint saves tt_module_state (parameters
// and buffers, PyTorch's state_dict names) while the optimizer gets tt_module_params.
// tt_<name>_module(m) wraps any module (layers, norms, MLP, attention, block, positional, a
// nested sequential, a user's struct) as a tt_module for tt_nn_sequential; a composite lists its
// children once (tt_module_ops.children) and params/train/free walk them.
// Owned modules: tt_<name>_new (tt_nn_linear_new, tt_nn_sequential_new, ...) makes the struct on
// the heap and returns a tt_module whose ops are flagged owned; the container it is added to (once)
// frees it, so one tt_module_free frees a tree. tt_custom (below) is a user's module built by
// registration, with no params/children/free callbacks to write.
#ifndef TT_NN_MODULE_H
#define TT_NN_MODULE_H

#include "../autograd/autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- the default float dtype of new parameters and buffers (thread-local; starts as f32) ----

tt_dtype tt_set_default_dtype(tt_dtype dtype);  // returns the previous one
tt_dtype tt_default_dtype(void);

// ---- parameter lists ----

#define TT_NAME_MAX 256

typedef struct tt_param {
    char *name;         // owned
    tt_tensor *tensor;  // retained
} tt_param;

typedef struct tt_params {
    tt_param *items;
    int n, cap;
} tt_params;

void tt_params_init(tt_params *p);
void tt_params_free(tt_params *p);  // releases the references and names, keeps the tensors' owners
// Appends t as "prefix.name" (or "name" when prefix is NULL or ""); aborts on a duplicate name.
void tt_params_add(tt_params *p, const char *prefix, const char *name, tt_tensor *t);
tt_tensor *tt_params_get(const tt_params *p, const char *name);  // borrowed; NULL if absent
int64_t tt_params_numel(const tt_params *p);  // total number of elements
void tt_params_zero_grad(const tt_params *p);
// The name of the first parameter holding a NaN or an Inf (a diverged run, a corrupt file),
// NULL when all are finite; *index (when index is not NULL) the element, in row-major order.
const char *tt_params_nonfinite(const tt_params *p, int64_t *index);
// A debugging check for a model's parameter list: aborts, naming each one (shape, dtype, name if
// set, and the op that consumes it), when a leaf that requires grad reaches `loss` (a backward
// from loss would fill its .grad) but is not in p, the sign of a forgotten tt_<name>_params
// line that would silently leave a weight out of the optimizer and the checkpoint. Parameters
// the loss does not reach are fine, and so are buffers (they do not require grad), so the list
// may be tt_module_params' or tt_module_state's. Call it before tt_backward (which frees the
// graph).
void tt_params_check_reaches(const tt_params *p, tt_tensor *loss);
// "prefix.name" into buf (TT_NAME_MAX); returns buf. Aborts if it does not fit.
char *tt_name_join(char *buf, const char *prefix, const char *name);
char *tt_name_index(char *buf, const char *prefix, int index);  // "prefix.3"

// ---- a module behind a uniform interface (for tt_nn_sequential) ----

// A composite (block, MLP, attention, sequential, a user's model) lists its direct children once,
// in its `children` callback; tt_module_params and tt_module_train recurse through it, and the
// composite's _free frees through it, so params/train/free are not written out three times.
// A custom module: a struct, a forward, and a static tt_module_ops naming the callbacks it has.
typedef struct tt_module tt_module;
typedef void (*tt_module_visit)(tt_module child, const char *name, void *ctx);

typedef struct tt_module_ops {
    const char *type;
    tt_tensor *(*forward)(void *self, tt_tensor *x);
    void (*params)(const void *self, tt_params *out, const char *prefix);  // its own; NULL: none
    void (*train)(void *self, bool training);                              // its own; NULL: no-op
    // visit(child, name, ctx) for each direct child in order; its parameters are named
    // "prefix.name.…". NULL: no children.
    void (*children)(void *self, tt_module_visit visit, void *ctx);
    // Releases what the module owns, children included (its tt_<name>_free); NULL: nothing.
    // Not called by tt_nn_sequential, which borrows its modules.
    void (*free)(void *self);
    // Its own buffers (PyTorch's register_buffer: state saved and loaded with the model but
    // not trained, such as BatchNorm's running stats), appended like params; NULL: none.
    void (*buffers)(const void *self, tt_params *out, const char *prefix);
    // True when the forward is its children run one after another, each on the previous one's
    // output (a Sequential): tt_model_summary then measures each child on its own input.
    bool chain;
    // True for the ops of a module a tt_<name>_new made on the heap (TT_MALLOC): the module is
    // owned, tt_module_free frees the struct after `free`, and a container it is added to
    // (tt_nn_sequential, tt_custom) frees it with itself. False (unset) for a struct the caller
    // owns: containers only borrow it. (tt_nn_linear_new's ops, not tt_nn_linear_module's.)
    bool owned;
} tt_module_ops;

struct tt_module {
    void *self;
    const tt_module_ops *ops;
};

tt_tensor *tt_module_forward(tt_module m, tt_tensor *x);
// Its own parameters, then each child's under "prefix.name".
void tt_module_params(tt_module m, tt_params *out, const char *prefix);
void tt_module_train(tt_module m, bool training);  // itself, then each child
// model.eval() and `with torch.no_grad():` in one: switches m to eval mode (dropout off,
// batch norm on its running statistics), turns grad mode off and opens a scope; _end closes
// the scope (freeing what the evaluation made, so tt_item the results before it), restores the
// grad mode and switches m back to training mode (model.train()).
void tt_module_eval_begin(tt_module m);
void tt_module_eval_end(tt_module m);
// The number of parameter elements: sum(p.numel() for p in model.parameters()).
int64_t tt_module_numel(tt_module m);
void tt_module_children(tt_module m, tt_module_visit visit, void *ctx);  // direct children
// ops->free, if any; for an owned module (ops->owned) also the struct itself.
void tt_module_free(tt_module m);
// Buffers: tensors without requires_grad that a module updates itself (running statistics)
// and that belong in a checkpoint but not in the optimizer. A buffer list is a tt_params;
// tt_module_buffers appends its own buffers, then each child's under "prefix.name".
void tt_module_buffers(tt_module m, tt_params *out, const char *prefix);
// The module's whole state under PyTorch's state_dict names and order: its own parameters,
// its own buffers, then each child's state ("0.weight", "1.weight", "1.bias",
// "1.running_mean", "1.running_var", "1.num_batches_tracked", ...). Give the optimizer
// tt_module_params and the checkpoint tt_module_state:
//
//     tt_params params, state;
//     tt_params_init(&params);
//     tt_params_init(&state);
//     tt_module_params(model, &params, NULL);  // for the optimizer
//     tt_module_state(model, &state, NULL);    // for tt_ckpt_add_params / _restore_params
//     ...
//     tt_ckpt_add_params(&ck, "model.", &state);          // save
//     tt_ckpt_restore_params(&ck, "model.", &state);      // load: copies the values in place;
//                                                         // buffers stay without requires_grad
void tt_module_state(tt_module m, tt_params *out, const char *prefix);

// torch.nn.Identity: returns x. No parameters.
tt_module tt_nn_identity_module(void);
// torch.nn.Flatten: merges dims start_dim .. end_dim of x into one (negative dims count from
// the end; PyTorch's defaults are 1 and -1, i.e. keep the batch dim). A view when x's strides
// allow it, else a copy (tt_reshape). No parameters; the module holds no pointer to free.
tt_module tt_nn_flatten_module(int start_dim, int end_dim);
// Deprecated: the op is tt_flatten(x, start_dim, end_dim) (autograd.h), torch.flatten.
__attribute__((deprecated("use tt_flatten(x, start_dim, end_dim)")))
static inline tt_tensor *tt_flatten_dims(tt_tensor *x, int start_dim, int end_dim) {
    return tt_flatten(x, start_dim, end_dim);
}

// ---- init schemes (in place on a tensor; every one takes an explicit rng) ----
// fan_in / fan_out follow PyTorch: for a (out, in, ...) weight, fan_in = in * receptive field.

typedef enum tt_fan_mode { TT_FAN_IN, TT_FAN_OUT } tt_fan_mode;

void tt_init_zeros_(tt_tensor *t);
void tt_init_ones_(tt_tensor *t);
void tt_init_normal_(tt_tensor *t, tt_rng *rng, double mean, double std);
// nn.init.trunc_normal_: N(mean, std^2) conditioned on [a, b] (a and b absolute bounds, not
// in units of std); every value lies in [a, b].
void tt_init_trunc_normal_(tt_tensor *t, tt_rng *rng, double mean, double std, double a,
                           double b);
void tt_init_uniform_(tt_tensor *t, tt_rng *rng, double lo, double hi);
void tt_init_xavier_uniform_(tt_tensor *t, tt_rng *rng, double gain);
void tt_init_xavier_normal_(tt_tensor *t, tt_rng *rng, double gain);
// gain sqrt(2 / (1 + a^2)) (a: leaky-ReLU slope, 0 for ReLU).
void tt_init_kaiming_uniform_(tt_tensor *t, tt_rng *rng, double a, tt_fan_mode mode);
void tt_init_kaiming_normal_(tt_tensor *t, tt_rng *rng, double a, tt_fan_mode mode);
// GPT-2's scaled init of residual projections: normal(0, 0.02 / sqrt(2 * n_layer)).
void tt_init_gpt2_residual_(tt_tensor *t, tt_rng *rng, int n_layer);
int64_t tt_fan_in(const tt_tensor *t);
int64_t tt_fan_out(const tt_tensor *t);

// ---- sequential: runs modules in order; names their parameters "0.", "1.", ... ----

typedef struct tt_nn_sequential {
    tt_module *items;  // owned ones (ops->owned) are freed with it; the others are borrowed
    int n, cap;
} tt_nn_sequential;

void tt_nn_sequential_init(tt_nn_sequential *s);
void tt_nn_sequential_add(tt_nn_sequential *s, tt_module m);
tt_tensor *tt_nn_sequential_forward(tt_nn_sequential *s, tt_tensor *x);
void tt_nn_sequential_params(const tt_nn_sequential *s, tt_params *out, const char *prefix);
void tt_nn_sequential_train(tt_nn_sequential *s, bool training);
void tt_nn_sequential_free(tt_nn_sequential *s);  // frees the owned modules it holds
// torch.nn.Sequential(*mods): a heap-made sequential holding the n modules, owned (free the
// whole tree with one tt_module_free). It adopts the owned ones among mods:
//
//     tt_module model = tt_nn_sequential_new(3, (tt_module[]){tt_nn_linear_new(2, 16, true, &rng),
//                                         tt_act_module(TT_ACT_RELU),
//                                         tt_nn_linear_new(16, 2, true, &rng)});
//     ...
//     tt_module_free(model);  // the sequential and both Linears
tt_module tt_nn_sequential_new(int n, const tt_module *mods);
// A sequential inside another: its parameters are named "<index>.<inner index>.…", train
// propagates to its modules.
tt_module tt_nn_sequential_module(tt_nn_sequential *s);

// ---- a custom module with no params/children/free boilerplate (nn/custom.c) ----
// PyTorch's nn.Module with register_parameter / register_buffer / add_module: put a tt_custom
// in your struct, give it your forward, and register what the module holds; params, buffers,
// train, state and free then follow from the registrations (names in registration order).
//
//     typedef struct net { tt_custom base; tt_module fc1, fc2; tt_tensor *scale; } net;
//     static tt_tensor *net_forward(void *self, tt_tensor *x) {
//         net *n = self;
//         return tt_mul(tt_module_forward(n->fc2, tt_relu(tt_module_forward(n->fc1, x))),
//                       n->scale);
//     }
//     net n;
//     tt_custom_init(&n.base, &n, net_forward);
//     n.fc1 = tt_custom_add_module(&n.base, "fc1", tt_nn_linear_new(4, 8, true, &rng));
//     n.fc2 = tt_custom_add_module(&n.base, "fc2", tt_nn_linear_new(8, 2, true, &rng));
//     n.scale = tt_custom_add_param(&n.base, "scale", tt_ones(TT_F32, TT_SHAPE(2)));
//     tt_module model = tt_custom_module(&n.base);   // "fc1.weight", ..., "scale"
//     ...
//     tt_custom_free(&n.base);  // both Linears (owned) and scale

typedef struct tt_custom {
    void *self;                                     // passed to forward: the user's struct
    tt_tensor *(*forward)(void *self, tt_tensor *x);
    bool training;                                  // starts true; set by tt_module_train
    tt_params params, buffers;                      // its own, retained
    tt_module *children;                            // the owned ones are freed with it
    char **names;                                   // children's names (owned)
    int n, cap;
} tt_custom;

void tt_custom_init(tt_custom *c, void *self, tt_tensor *(*forward)(void *self, tt_tensor *x));
// Registers child under name (adopting it when child.ops->owned) and returns it.
tt_module tt_custom_add_module(tt_custom *c, const char *name, tt_module child);
// Registers t as the parameter name: t becomes a leaf that requires grad and the module takes
// the caller's reference (t must be made outside any scope: parameters outlive every step).
// Returns t, borrowed.
tt_tensor *tt_custom_add_param(tt_custom *c, const char *name, tt_tensor *t);
// The same for a buffer (saved with the state, not trained: requires_grad stays off).
tt_tensor *tt_custom_add_buffer(tt_custom *c, const char *name, tt_tensor *t);
tt_module tt_custom_module(tt_custom *c);  // borrowed: c stays the caller's
// Releases the parameters and buffers, frees the owned children; safe on a zeroed struct.
void tt_custom_free(tt_custom *c);

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_MODULE_H
