// The gradient-check suite: every case of every differentiable op and of every module, in f64
// against central differences (and, where every op of the case has a differentiable backward,
// its second derivatives: gradgradcheck), plus the registry tests that fail when an op in
// ops.def has no case, or a twice-differentiable op no gradgradcheck case.
// Prints one line per case, then "N passed, N failed".
#include "gc_util.h"

#include <stdio.h>
#include <stdlib.h>

extern const gc_case gc_cases_pool[];            // tests/gc_ops_pool.c
extern const gc_module_case gc_modules_pool[];  // tests/gc_ops_pool.c
// ---- batch norm and pooling modules ----
extern const gc_module_case gc_modules_nn_batchnorm[];  // tests/gc_nn_batchnorm.c

static const gc_case *const families[] = {
    gc_cases_elementwise, gc_cases_reduce,  gc_cases_matmul,     gc_cases_nn,       gc_cases_shape,
    gc_cases_attention,   gc_cases_compare, gc_cases_math,       gc_cases_layout,   gc_cases_index,
    gc_cases_pool,        gc_cases_conv,    gc_cases_checkpoint, gc_cases_function,
};
#define NFAMILIES (int)(sizeof families / sizeof families[0])

static const gc_module_case *const module_families[] = {
    gc_modules_nn_layers, gc_modules_nn_transformer,
    gc_modules_nn_losses,
    gc_modules_nn_recurrent,
    gc_modules_pool,
    gc_modules_conv,
    gc_modules_nn_batchnorm,
};
#define NMODULE_FAMILIES (int)(sizeof module_families / sizeof module_families[0])

typedef struct any_case {
    char what[64];     // op name, or "nn." + module label
    bool is_op;
    tt_op op;
    const char *name;
    void (*run)(gc_report *r);
} any_case;

static any_case all_cases[2048];
static int ncases;

static void add_case(any_case c) {
    if (ncases == (int)(sizeof all_cases / sizeof all_cases[0])) {
        fprintf(stderr, "too many gradcheck cases\n");
        exit(EXIT_FAILURE);
    }
    all_cases[ncases++] = c;
}

static void gather(void) {
    for (int f = 0; f < NFAMILIES; f++)
        for (const gc_case *c = families[f]; c->run; c++) {
            any_case a = {.is_op = true, .op = c->op, .name = c->name, .run = c->run};
            snprintf(a.what, sizeof a.what, "%s", tt_op_name(c->op));
            add_case(a);
        }
    for (int f = 0; f < NMODULE_FAMILIES; f++)
        for (const gc_module_case *c = module_families[f]; c->run; c++) {
            any_case a = {.is_op = false, .op = TT_OP_COUNT, .name = c->name, .run = c->run};
            snprintf(a.what, sizeof a.what, "nn.%s", c->label);
            add_case(a);
        }
}

START_TEST(test_case) {
    const any_case *c = &all_cases[_i];
    tt_rng_seed(gc_rng(), 1000 + (uint64_t)_i);
    gc_report r = {0};
    tt_scope_begin();
    c->run(&r);
    tt_scope_end();
    printf("gradcheck %s %s f64 max_abs_err=%.2e max_rel_err=%.2e f32_fwd_err=%.2e %s\n",
           c->what, c->name, r.worst.max_abs_err, r.worst.max_rel_err,
           r.f32_fwd_err, r.nchecks > 0 && r.ok ? "ok" : "FAIL");
    fflush(stdout);
    if (r.gg_nchecks > 0)
        printf("gradgradcheck %s %s f64 max_abs_err=%.2e max_rel_err=%.2e %s\n", c->what, c->name,
               r.gg_worst.max_abs_err, r.gg_worst.max_rel_err, r.gg_worst.ok ? "ok" : "FAIL");
    fflush(stdout);
    ck_assert_msg(r.nchecks > 0, "case %s/%s ran no check", c->what, c->name);
    ck_assert_msg(r.gg_nchecks == 0 || r.gg_worst.ok,
                  "%s/%s second derivatives: input %d, output element %lld, input element "
                  "%lld: analytic %.10g vs numeric %.10g",
                  c->what, c->name, r.gg_worst.worst_input, (long long)r.gg_worst.worst_out,
                  (long long)r.gg_worst.worst_in, r.gg_worst.analytic, r.gg_worst.numeric);
    ck_assert_msg(r.f32_fwd_err <= GC_F32_TOL, "%s/%s: f32 forward differs from f64 by %.3e",
                  c->what, c->name, r.f32_fwd_err);
    ck_assert_msg(r.worst.ok,
                  "%s/%s: input %d, output element %lld, input element %lld: analytic %.10g "
                  "vs numeric %.10g", c->what, c->name, r.worst.worst_input,
                  (long long)r.worst.worst_out, (long long)r.worst.worst_in, r.worst.analytic,
                  r.worst.numeric);
}
END_TEST

// Every differentiable op has at least one case; every case names a differentiable op.
START_TEST(test_registry) {
    int missing = 0;
    for (int op = 0; op < TT_OP_COUNT; op++) {
        int n = 0;
        for (int i = 0; i < ncases; i++) n += all_cases[i].is_op && all_cases[i].op == (tt_op)op;
        if (tt_op_differentiable((tt_op)op) && n == 0) {
            printf("gradcheck registry: op '%s' has no gradcheck case\n", tt_op_name((tt_op)op));
            missing++;
        }
        ck_assert_msg(tt_op_differentiable((tt_op)op) || n == 0,
                      "op '%s' is not differentiable but has cases", tt_op_name((tt_op)op));
    }
    ck_assert_msg(missing == 0, "%d differentiable ops have no gradcheck case", missing);
}
END_TEST

// Every op with a differentiable backward has a case whose graph is twice differentiable (so
// it runs a gradgradcheck).
START_TEST(test_registry_twice) {
    int gg[TT_OP_COUNT] = {0}, missing = 0;
    gc_dry_run = true;
    for (int i = 0; i < ncases; i++) {
        if (!all_cases[i].is_op) continue;
        gc_report r = {0};
        tt_rng_seed(gc_rng(), 1000 + (uint64_t)i);
        tt_scope_begin();
        all_cases[i].run(&r);
        tt_scope_end();
        gg[all_cases[i].op] += r.gg_nchecks;
    }
    gc_dry_run = false;
    for (int op = 0; op < TT_OP_COUNT; op++) {
        bool twice = tt_op_twice_differentiable((tt_op)op);
        if (twice && gg[op] == 0) {
            printf(
                "gradcheck registry: op '%s' has a differentiable backward but no "
                "gradgradcheck case\n",
                tt_op_name((tt_op)op));
            missing++;
        }
    }
    ck_assert_msg(missing == 0, "%d twice-differentiable ops have no gradgradcheck case", missing);
}
END_TEST

int main(void) {
    gather();
    Suite *s = suite_create("gradcheck");
    TCase *tc = tt_tcase("cases");
    tcase_add_loop_test(tc, test_case, 0, ncases);
    suite_add_tcase(s, tc);
    TCase *reg = tt_tcase("registry");
    tcase_add_test(reg, test_registry);
    tcase_add_test(reg, test_registry_twice);
    suite_add_tcase(s, reg);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_SILENT);
    int run = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
    TestResult **res = srunner_failures(sr);
    for (int i = 0; i < failed; i++)
        printf("%s:%d: %s\n", tr_lfile(res[i]), tr_lno(res[i]), tr_msg(res[i]));
    free(res);
    srunner_free(sr);
    printf("%d passed, %d failed\n", run - failed, failed);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
