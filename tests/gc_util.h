// The gradcheck suite's case table and helpers. Each op family has a file tests/gc_ops_*.c
// defining a NULL-terminated `const gc_case gc_cases_<family>[]`; every differentiable op
// in tensor/ops.def needs at least one case (the registry test fails otherwise).
//
//     static tt_tensor *f_exp(tt_tensor *const *in, int n, void *ctx) { return tt_exp(in[0]); }
//     static void exp_contiguous(gc_report *r) {
//         tt_tensor *x = gc_input(TT_SHAPE(2, 3), -1, 1);   // f64 leaf, requires grad
//         gc_check(r, f_exp, NULL, 1, &x, NULL);            // f64 gradcheck + f32 forward
//     }
//     const gc_case gc_cases_elementwise[] = {{TT_OP_EXP, "contiguous", exp_contiguous}, {0}};
//
// Cases run inside a scope: what they create is released when they return.
#ifndef TT_GC_UTIL_H
#define TT_GC_UTIL_H

#include "test_util.h"

typedef struct gc_report {
    tt_gradcheck_result worst;  // the worst of the case's checks
    double f32_fwd_err;         // max |f32 forward - f64 forward| / (1 + |f64 forward|)
    int nchecks;
    bool ok;
    tt_gradcheck_result gg_worst;  // the worst of the case's gradgradchecks
    int gg_nchecks;                // run when every op of f's graph is twice differentiable
} gc_report;

typedef struct gc_case {
    tt_op op;
    const char *name;  // "contiguous", "broadcast_b1c_1t1", "transposed", "fully_masked_row", ...
    void (*run)(gc_report *r);
} gc_case;

// Module-level cases (a Linear, an attention layer, a loss): printed with their label in place
// of an op name; they do not count for the per-op registry.
typedef struct gc_module_case {
    const char *label;  // "linear", "attention", "mse_loss", ...
    const char *name;
    void (*run)(gc_report *r);
} gc_module_case;

// The per-family tables (NULL-terminated: the last entry has run == NULL).
extern const gc_case gc_cases_elementwise[];
extern const gc_case gc_cases_reduce[];
extern const gc_case gc_cases_matmul[];
extern const gc_case gc_cases_nn[];
extern const gc_case gc_cases_shape[];
extern const gc_case gc_cases_attention[];  // tests/gc_ops_attention.c
extern const gc_case gc_cases_compare[];    // tests/gc_ops_compare.c
extern const gc_case gc_cases_math[];       // tests/gc_ops_math.c
extern const gc_case gc_cases_layout[];     // tests/gc_ops_layout.c
extern const gc_case gc_cases_index[];      // tests/gc_ops_index.c
extern const gc_case gc_cases_conv[];        // tests/gc_ops_conv.c
extern const gc_case gc_cases_checkpoint[];  // tests/gc_ops_checkpoint.c
extern const gc_case gc_cases_function[];    // tests/gc_ops_function.c
extern const gc_module_case gc_modules_conv[];  // tests/gc_ops_conv.c
extern const gc_module_case gc_modules_nn_layers[];       // tests/gc_nn_layers.c
extern const gc_module_case gc_modules_nn_transformer[];  // tests/gc_nn_transformer.c
extern const gc_module_case gc_modules_nn_losses[];       // tests/gc_nn_losses.c
extern const gc_module_case gc_modules_nn_recurrent[];    // tests/gc_nn_recurrent.c

// The suite's RNG (reseeded before each case).
tt_rng *gc_rng(void);
// An f64 leaf of the given shape, uniform in [lo, hi), requiring grad.
tt_tensor *gc_input(int ndim, const int64_t *shape, double lo, double hi);
// A leaf view of a fresh f64 tensor, requiring grad: the transpose of dims d0, d1 of a tensor
// with shape `base`, so it is non-contiguous.
tt_tensor *gc_input_transposed(int ndim, const int64_t *base, int d0, int d1, double lo,
                               double hi);
// A leaf view taking every `step`-th element along `dim` of a fresh f64 tensor of shape `base`.
tt_tensor *gc_input_strided(int ndim, const int64_t *base, int dim, int64_t step, double lo,
                            double hi);

// Runs tt_gradcheck (opts NULL: PyTorch's defaults) on f over the inputs, then runs f on f32
// copies of the float inputs (same strides) and compares with the f64 forward. When every op
// of f's graph has a differentiable backward, also tt_gradgradcheck (second derivatives), and
// checks that the gradients create_graph gives equal the first-order ones.
// Accumulates into r; a case may call it several times.
void gc_check(gc_report *r, tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs,
              const tt_gradcheck_opts *opts);

// When set, gc_check only counts, in gg_nchecks, the checks whose f is twice differentiable
// (the registry's pass over every case); nothing is checked.
extern bool gc_dry_run;

// tt_gradcheck alone, folded into r as gc_check folds its checks: for inputs at a tie or a kink,
// where the first derivative follows PyTorch's rule but jumps, so that central differences of
// it (a gradgradcheck) mean nothing there.
void gc_check_first_order(gc_report *r, tt_gradcheck_fn f, void *ctx, int n,
                          tt_tensor *const *inputs, const tt_gradcheck_opts *opts);

// Tolerance of the f32-vs-f64 forward comparison.
#define GC_F32_TOL 1e-4

#endif  // TT_GC_UTIL_H
