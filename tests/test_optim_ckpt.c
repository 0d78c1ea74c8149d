// The optimizer's part of a checkpoint (train/ckpt_optim.c): state, step and every group's
// kind and hyperparameters round-trip, a restored optimizer steps as the saved one does, and
// a file whose groups differ is refused.
#include <signal.h>
#include <string.h>

#include "test_util.h"

// A Muon group holding a (2, 3) matrix "w" beside an AdamW group holding a (3,) vector "b":
// nanochat's arrangement.
typedef struct mixed {
    tt_tensor *w, *b;
    tt_params pw, pb;
    tt_optim o;
} mixed;

static void mixed_init(mixed *m, tt_optim_kind matrix_kind, double beta2) {
    m->w = tt_set_requires_grad(tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 1, -2, 3, 0.5, 1, -1), true);
    m->b = tt_set_requires_grad(tt_test_tensor(TT_F64, TT_SHAPE(3), 0.5, 1, 2), true);
    tt_params_init(&m->pw);
    tt_params_init(&m->pb);
    tt_params_add(&m->pw, NULL, "w", m->w);
    tt_params_add(&m->pb, NULL, "b", m->b);
    tt_optim_config c = tt_adamw_config(0.01);
    c.beta2 = beta2;
    tt_optim_init(&m->o, c);
    tt_optim_add_group_as(&m->o, &m->pw, tt_optim_config_of(matrix_kind, 0.05), 0.1);
    tt_optim_add_group(&m->o, &m->pb, 0);
}

static void mixed_step(mixed *m, int s) {
    tt_tensor *gw = tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 0.5, s - 1.0, 2, -1, 0.25, 1);
    tt_tensor *gb = tt_test_tensor(TT_F64, TT_SHAPE(3), s * 0.5, -1, 0.75);
    tt_zero_grad(m->w);
    tt_zero_grad(m->b);
    m->w->grad = gw;
    m->b->grad = gb;
    tt_optim_step(&m->o);
}

static void mixed_free(mixed *m) {
    tt_optim_free(&m->o);
    tt_params_free(&m->pw);
    tt_params_free(&m->pb);
    tt_release(m->w);
    tt_release(m->b);
}

// Saved after two steps (a schedule at 0.6 of the base lr, group 0's weight decay changed),
// restored into an optimizer built with another beta2 and lr: the hyperparameters come back,
// and the third step and its state are bit for bit those of the uninterrupted run.
START_TEST(test_roundtrip_mixed) {
    mixed a, b;
    mixed_init(&a, TT_OPTIM_MUON, 0.95);
    mixed_init(&b, TT_OPTIM_MUON, 0.999);
    tt_optim_set_lr(&a.o, 0.006);
    a.o.groups[0].weight_decay = 0.2;
    mixed_step(&a, 0);
    mixed_step(&a, 1);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_ckpt_add_optim(&ck, &a.o);
    tt_copy_(b.w, a.w);
    tt_copy_(b.b, a.b);
    ck_assert_int_eq(tt_ckpt_restore_optim(&ck, &b.o), TT_OK);
    ck_assert_int_eq(b.o.step, 2);
    ck_assert(b.o.groups[1].cfg.beta2 == 0.95 && b.o.groups[0].weight_decay == 0.2);
    ck_assert(b.o.groups[0].cfg.lr == a.o.groups[0].cfg.lr && b.o.groups[0].cfg.lr == 0.03);
    ck_assert(b.o.groups[1].initial_lr == 0.01 && b.o.groups[1].cfg.lr == 0.006);
    mixed_step(&a, 2);
    mixed_step(&b, 2);
    ck_assert_int_eq(memcmp(tt_data(a.w), tt_data(b.w), 6 * sizeof(double)), 0);
    ck_assert_int_eq(memcmp(tt_data(a.b), tt_data(b.b), 3 * sizeof(double)), 0);
    tt_ckpt_free(&ck);
    mixed_free(&a);
    mixed_free(&b);
}
END_TEST

// A group of another kind, or another group count, is TT_ERR_MISMATCH naming the problem; a
// file without group entries (written before they were saved) restores the state alone.
START_TEST(test_refuses_other_groups) {
    mixed a, b;
    mixed_init(&a, TT_OPTIM_MUON, 0.95);
    mixed_init(&b, TT_OPTIM_ADAMW, 0.95);
    mixed_step(&a, 0);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_ckpt_add_optim(&ck, &a.o);
    ck_assert_int_eq(tt_ckpt_restore_optim(&ck, &b.o), TT_ERR_MISMATCH);
    ck_assert_ptr_nonnull(strstr(tt_last_error(),
                                 "parameter group 0 was muon when saved but "
                                 "is adamw now"));
    tt_ckpt_set_i64(&ck, "optim.group.2.kind", TT_OPTIM_SGD);
    ck_assert_int_eq(tt_ckpt_restore_optim(&ck, &a.o), TT_ERR_MISMATCH);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "more parameter groups than the optimizer's 2"));
    tt_ckpt_free(&ck);
    mixed_free(&a);
    mixed_free(&b);
}
END_TEST

int main(void) {
    Suite *s = suite_create("optim_ckpt");
    TCase *tc = tt_tcase("roundtrip");
    tcase_add_test(tc, test_roundtrip_mixed);
    tcase_add_test(tc, test_refuses_other_groups);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}
