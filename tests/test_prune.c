// Pruning and low rank: masks of magnitude, global and structured pruning against
// torch.nn.utils.prune (tests/reference/prune_values.h), exact sparsity fractions and tie order,
// masks holding through AdamW, remove, masks through a checkpoint, GPT head pruning; the Jacobi
// SVD against numpy's LAPACK and its identities; a low-rank Linear's error against the tail
// singular values (Eckart-Young); a low-rank GPT; the errors.
#include "test_util.h"

#include "../models/gpt/gpt.h"
#include "reference/prune_values.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static double *values(const tt_tensor *t) {
    double *v = malloc((size_t)(tt_numel(t) > 0 ? tt_numel(t) : 1) * sizeof *v);
    tt_to_f64_array(t, v);
    return v;
}

// A new leaf f32 (or dtype) tensor (rows, cols) holding v, in the current scope.
static tt_tensor *matrix(tt_dtype dtype, int64_t rows, int64_t cols, const double *v) {
    return tt_test_tensor_(dtype, TT_SHAPE(rows, cols), v, rows * cols);
}

// Asserts mask == expected exactly, t zero where the mask is 0 and equal to w elsewhere.
static void assert_pruned(const char *what, const tt_tensor *t, const tt_tensor *mask,
                          const double *w, const double *expected, int64_t n) {
    ck_assert_int_eq(tt_numel(mask), n);
    double *m = values(mask), *v = values(t);
    for (int64_t i = 0; i < n; i++) {
        ck_assert_msg(m[i] == expected[i], "%s: mask[%lld] = %g, torch gives %g", what,
                      (long long)i, m[i], expected[i]);
        ck_assert_msg(v[i] == (expected[i] != 0 ? (double)(float)w[i] : 0.0),
                      "%s: w[%lld] = %g after pruning", what, (long long)i, v[i]);
    }
    free(m), free(v);
}

// ---- masks against torch.nn.utils.prune ----

#define NREF ((int)(sizeof prune_refs / sizeof prune_refs[0]))

START_TEST(test_prune_vs_torch) {
    const prune_ref *r = &prune_refs[_i];
    tt_scope_begin();
    tt_tensor *w = matrix(TT_F32, r->rows, r->cols, r->w);
    tt_pruning pr;
    tt_pruning_init(&pr);
    if (r->kind == 0) {
        tt_prune_l1_unstructured(&pr, "weight", w, r->amount);
    } else if (r->kind == 1) {
        tt_prune_l1_unstructured(&pr, "weight", w, r->amount);
        tt_prune_l1_unstructured(&pr, "weight", w, r->amount);  // half of the remaining half
    } else {
        tt_prune_ln_structured(&pr, "weight", w, r->amount, r->n, r->dim);
    }
    ck_assert_int_eq(pr.masks.n, 1);
    ck_assert_str_eq(pr.masks.items[0].name, "weight_mask");
    ck_assert(!pr.masks.items[0].tensor->requires_grad);
    assert_pruned(r->name, w, tt_prune_mask(&pr, "weight"), r->w, r->mask, r->rows * r->cols);
    if (r->kind == 2) {  // whole slices: every row (dim 0) or column (dim 1) all 0 or all 1
        for (int64_t s = 0; s < (r->dim == 0 ? r->rows : r->cols); s++) {
            double first = r->dim == 0 ? r->mask[s * r->cols] : r->mask[s];
            for (int64_t j = 0; j < (r->dim == 0 ? r->cols : r->rows); j++)
                ck_assert(first == (r->dim == 0 ? r->mask[s * r->cols + j]
                                                : r->mask[j * r->cols + s]));
        }
    }
    tt_pruning_free(&pr);
    tt_scope_end();
}
END_TEST

// One threshold over both tensors (torch's global_unstructured) against a threshold per
// tensor (l1_unstructured on each): the masks equal torch's, 16 = round(0.4 * 39) entries go
// in both, and the two ways differ (the layers lose different fractions globally).
START_TEST(test_prune_global_vs_layer) {
    tt_scope_begin();
    tt_tensor *a = matrix(TT_F32, 4, 6, global_a_w), *b = matrix(TT_F32, 3, 5, global_b_w);
    tt_tensor *c = matrix(TT_F32, 4, 6, global_a_w), *d = matrix(TT_F32, 3, 5, global_b_w);
    tt_params list;
    tt_params_init(&list);
    tt_params_add(&list, "a", "weight", a);
    tt_params_add(&list, "b", "weight", b);
    tt_pruning g, l;
    tt_pruning_init(&g);
    tt_pruning_init(&l);
    tt_prune_global_unstructured(&g, &list, 0.4);
    tt_prune_l1_unstructured(&l, "a.weight", c, 0.4);
    tt_prune_l1_unstructured(&l, "b.weight", d, 0.4);
    assert_pruned("global a", a, tt_prune_mask(&g, "a.weight"), global_a_w, global_a_mask, 24);
    assert_pruned("global b", b, tt_prune_mask(&g, "b.weight"), global_b_w, global_b_mask, 15);
    assert_pruned("layer a", c, tt_prune_mask(&l, "a.weight"), global_a_w, layer_a_mask, 24);
    assert_pruned("layer b", d, tt_prune_mask(&l, "b.weight"), global_b_w, layer_b_mask, 15);
    ck_assert_int_eq(tt_count_nonzero(a) + tt_count_nonzero(b), 39 - 16);
    ck_assert_int_eq(tt_count_nonzero(c), 24 - 10);  // round(9.6)
    ck_assert_int_eq(tt_count_nonzero(d), 15 - 6);   // round(6.0)
    ck_assert_int_ne(tt_count_nonzero(a), tt_count_nonzero(c));
    ck_assert_close(tt_sparsity(&list), 16.0 / 39.0, 0, 1e-15);
    tt_pruning_free(&g);
    tt_pruning_free(&l);
    tt_params_free(&list);
    tt_scope_end();
}
END_TEST

// Exact fractions: round-half-even counts on a 100 x 37 normal matrix, and ties: on a constant
// matrix the lower flat indices go first.
START_TEST(test_prune_exact_sparsity) {
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_scope_begin();
    const double amounts[] = {0.5, 0.123, 0.0, 1.0, 0.25};
    const int64_t expect[] = {1850, 455, 0, 3700, 925};
    for (int i = 0; i < 5; i++) {
        tt_tensor *w = tt_randn(&rng, TT_F32, TT_SHAPE(100, 37));
        tt_pruning pr;
        tt_pruning_init(&pr);
        tt_prune_l1_unstructured(&pr, "w", w, amounts[i]);
        ck_assert_int_eq(3700 - tt_count_nonzero(w), expect[i]);
        ck_assert_double_eq(tt_tensor_sparsity(w), (double)expect[i] / 3700.0);
        tt_pruning_free(&pr);
    }
    // 2.5 rounds to 2 (half to even): 5 entries, amount 0.5.
    tt_tensor *t = tt_test_tensor(TT_F32, TT_SHAPE(5), 3, 3, 3, 3, 3);
    tt_pruning pr;
    tt_pruning_init(&pr);
    tt_prune_l1_unstructured(&pr, "t", t, 0.5);
    ck_assert_values(t, 0, 0, 0, 0, 3, 3, 3);
    tt_prune_l1_unstructured(&pr, "t", t, 0.34);  // round(0.34 * 3) = 1 more: the next index
    ck_assert_values(t, 0, 0, 0, 0, 0, 3, 3);
    tt_pruning_free(&pr);
    tt_scope_end();
}
END_TEST

// The kept entries are the largest: min |kept| >= max |pruned| on a random matrix.
START_TEST(test_prune_keeps_largest) {
    tt_rng rng;
    tt_rng_seed(&rng, 6);
    tt_scope_begin();
    tt_tensor *w = tt_randn(&rng, TT_F32, TT_SHAPE(20, 30));
    double *orig = values(w);
    tt_pruning pr;
    tt_pruning_init(&pr);
    tt_prune_l1_unstructured(&pr, "w", w, 0.7);
    double *v = values(w), min_kept = INFINITY, max_pruned = 0;
    for (int i = 0; i < 600; i++) {
        if (v[i] != 0) min_kept = fmin(min_kept, fabs(orig[i]));
        else max_pruned = fmax(max_pruned, fabs(orig[i]));
    }
    ck_assert_int_eq(tt_count_nonzero(w), 180);
    ck_assert(min_kept >= max_pruned && max_pruned > 0);
    free(v), free(orig);
    tt_pruning_free(&pr);
    tt_scope_end();
}
END_TEST

// ---- fine-tuning ----

// 20 AdamW steps (lr 0.05, weight decay 0.1) on a Linear regression with half the weights
// pruned and tt_prune_apply after every step: the pruned weights stay exactly +0.0 while the
// kept ones move; without the apply (the control) the same steps revive them.
static int64_t finetune(bool apply, int64_t *moved) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 16, 8, true, &rng);
    tt_params params;
    tt_params_init(&params);
    tt_nn_linear_params(&fc, &params, "fc");
    tt_pruning pr;
    tt_pruning_init(&pr);
    tt_prune_l1_unstructured(&pr, "fc.weight", fc.weight, 0.5);
    double *before = values(fc.weight);
    tt_optim_config oc = tt_adamw_config(0.05);
    tt_optim o;
    tt_optim_init(&o, oc);
    tt_optim_add_group(&o, &params, 0.1);
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(32, 16));
    tt_tensor *y = tt_randn(&rng, TT_F32, TT_SHAPE(32, 8));
    for (int step = 0; step < 20; step++) {
        tt_scope_begin();
        tt_tensor *d = tt_sub(tt_nn_linear_forward(&fc, x), y);
        tt_backward(tt_mean_all(tt_mul(d, d)));
        tt_scope_end();
        tt_optim_step(&o);
        tt_optim_zero_grad(&o);
        if (apply) tt_prune_apply(&pr);
    }
    double *after = values(fc.weight), *mask = values(tt_prune_mask(&pr, "fc.weight"));
    int64_t revived = 0;
    *moved = 0;
    for (int i = 0; i < 128; i++) {
        if (mask[i] == 0) {
            revived += after[i] != 0 || signbit(after[i]);
        } else {
            *moved += after[i] != before[i];
        }
    }
    free(before), free(after), free(mask);
    tt_release(x), tt_release(y);
    tt_optim_free(&o);
    tt_pruning_free(&pr);
    tt_params_free(&params);
    tt_nn_linear_free(&fc);
    return revived;
}

START_TEST(test_prune_holds_through_adamw) {
    int64_t moved;
    ck_assert_int_eq(finetune(true, &moved), 0);
    ck_assert_int_eq(moved, 64);
    ck_assert_int_eq(finetune(false, &moved), 64);  // the control: AdamW revives every one
}
END_TEST

// remove: the zeros stay, the mask goes, apply no longer touches the tensor.
START_TEST(test_prune_remove) {
    tt_scope_begin();
    tt_tensor *a = tt_test_tensor(TT_F32, TT_SHAPE(4), 1, -2, 3, -4);
    tt_tensor *b = tt_test_tensor(TT_F32, TT_SHAPE(2, 2), 5, 6, 7, 8);
    tt_pruning pr;
    tt_pruning_init(&pr);
    tt_prune_l1_unstructured(&pr, "a", a, 0.5);
    tt_prune_ln_structured(&pr, "b", b, 0.5, 2, 0);  // row 0 (norm sqrt 61 < sqrt 113)
    ck_assert_values(a, 0, 0, 0, 0, 3, -4);
    ck_assert_values(b, 0, 0, 0, 0, 7, 8);
    tt_prune_remove(&pr, "a");
    ck_assert_ptr_null(tt_prune_mask(&pr, "a"));
    ck_assert_ptr_nonnull(tt_prune_mask(&pr, "b"));
    ck_assert_str_eq(pr.masks.items[0].name, "b_mask");
    tt_set_at(a, 0, 9.0);
    tt_set_at(b, 1, 9.0);
    tt_prune_apply(&pr);
    ck_assert_values(a, 0, 0, 9, 0, 3, -4);  // no longer pruned
    ck_assert_values(b, 0, 0, 0, 0, 7, 8);   // still pruned
    tt_prune_remove(&pr, NULL);
    ck_assert_int_eq(pr.masks.n, 0);
    tt_pruning_free(&pr);
    tt_scope_end();
}
END_TEST

// Masks saved as model.<name>_mask and restored onto fresh weights; a corrupt mask and a
// misshapen one are errors that change nothing.
START_TEST(test_prune_checkpoint) {
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "prune");
    snprintf(path, sizeof path, "%s/m.ckpt", dir);
    tt_rng rng;
    tt_rng_seed(&rng, 8);
    tt_scope_begin();
    tt_tensor *w = tt_randn(&rng, TT_F32, TT_SHAPE(6, 4));
    tt_tensor *w2 = tt_randn(&rng, TT_F32, TT_SHAPE(6, 4));
    tt_params list, list2;
    tt_params_init(&list);
    tt_params_init(&list2);
    tt_params_add(&list, "fc", "weight", w);
    tt_params_add(&list2, "fc", "weight", w2);
    tt_pruning pr, back;
    tt_pruning_init(&pr);
    tt_pruning_init(&back);
    tt_prune_ln_structured(&pr, "fc.weight", w, 0.5, 1, 0);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_ckpt_add_params(&ck, "model.", &list);
    tt_ckpt_add_params(&ck, "model.", &pr.masks);
    ck_assert_int_eq(tt_ckpt_save(&ck, path), TT_OK);
    tt_ckpt_free(&ck);
    ck_assert_int_eq(tt_ckpt_load(&ck, path), TT_OK);
    ck_assert_ptr_nonnull(tt_ckpt_get_tensor(&ck, "model.fc.weight_mask"));
    ck_assert_int_eq(tt_prune_restore(&back, &ck, "model.", &list2), TT_OK);
    double *m1 = values(tt_prune_mask(&pr, "fc.weight"));
    double *m2 = values(tt_prune_mask(&back, "fc.weight"));
    double *v2 = values(w2);
    for (int i = 0; i < 24; i++) {
        ck_assert(m1[i] == m2[i]);
        ck_assert(m2[i] != 0 || v2[i] == 0);
    }
    ck_assert_int_eq(tt_count_nonzero(w2), 12);
    free(m1), free(m2), free(v2);
    // A mask of 0.5s, then one of another shape.
    tt_pruning bad;
    tt_pruning_init(&bad);
    tt_ckpt_add_tensor(&ck, "model.fc.weight_mask", tt_full(TT_F32, TT_SHAPE(6, 4), 0.5));
    ck_assert_int_eq(tt_prune_restore(&bad, &ck, "model.", &list2), TT_ERR_FORMAT);
    ck_assert(strstr(tt_last_error(), "values other than 0 and 1") != NULL);
    tt_ckpt_add_tensor(&ck, "model.fc.weight_mask", tt_ones(TT_F32, TT_SHAPE(4, 6)));
    ck_assert_int_eq(tt_prune_restore(&bad, &ck, "model.", &list2), TT_ERR_MISMATCH);
    ck_assert(strstr(tt_last_error(), "model.fc.weight_mask' is (4, 6) f32") != NULL);
    ck_assert_int_eq(bad.masks.n, 0);
    tt_pruning_free(&bad);
    tt_ckpt_free(&ck);
    tt_pruning_free(&back);
    tt_pruning_free(&pr);
    tt_params_free(&list2);
    tt_params_free(&list);
    tt_scope_end();
    tt_test_rmdir(dir);
}
END_TEST

// ---- the GPT ----

static tt_gpt_config tiny_config(int64_t n_kv_head) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 11;
    c.block_size = 8;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_kv_head = n_kv_head;
    c.n_embd = 16;
    return c;
}

static double gpt_loss(tt_gpt *m, tt_tensor *x, tt_tensor *y) {
    tt_no_grad_begin();
    tt_scope_begin();
    double l = tt_item(tt_gpt_loss(m, x, y));
    tt_scope_end();
    tt_no_grad_end();
    return l;
}

// Pruning head 2 of layer 1 zeroes exactly its q/k/v rows and o_proj columns (q and o only
// under grouped-query attention), nothing else; the loss equals that of the model with only the
// o_proj columns zeroed (the head then adds nothing, whatever q, k, v hold).
START_TEST(test_gpt_prune_heads) {
    int64_t nkv = _i == 0 ? 4 : 2;
    tt_gpt_config c = tiny_config(nkv);
    tt_rng rng;
    tt_rng_seed(&rng, 9);
    tt_gpt m, ref;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    tt_rng_seed(&rng, 9);
    ck_assert_int_eq(tt_gpt_init(&ref, &c, &rng), TT_OK);
    tt_pruning pr;
    tt_pruning_init(&pr);
    tt_gpt_prune_heads(&m, &pr, 1, (int64_t[]){2}, 1);
    ck_assert_int_eq(pr.masks.n, nkv == 4 ? 4 : 2);
    tt_nn_attention *a = &m.blocks[1].attn;
    struct { tt_tensor *w; bool rows; bool pruned; } chk[] = {
        {a->q_proj.weight, true, true}, {a->k_proj.weight, true, nkv == 4},
        {a->v_proj.weight, true, nkv == 4}, {a->o_proj.weight, false, true}};
    for (int k = 0; k < 4; k++) {
        double *v = values(chk[k].w);
        int64_t R = chk[k].w->shape[0], C = chk[k].w->shape[1];
        for (int64_t r = 0; r < R; r++)
            for (int64_t col = 0; col < C; col++) {
                int64_t i = chk[k].rows ? r : col;
                bool in_head = chk[k].pruned && i >= 8 && i < 12;  // head 2 of 4, HS 4
                ck_assert_msg((v[r * C + col] == 0) == in_head, "tensor %d [%lld, %lld] = %g",
                              k, (long long)r, (long long)col, v[r * C + col]);
            }
        free(v);
    }
    // The reference: o_proj columns 8..11 of layer 1 zeroed by hand.
    tt_nn_attention *ra = &ref.blocks[1].attn;
    for (int64_t r = 0; r < 16; r++)
        for (int64_t col = 8; col < 12; col++) tt_set_at(ra->o_proj.weight, r * 16 + col, 0);
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_I32, TT_SHAPE(2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    tt_tensor *y = tt_test_tensor(TT_I32, TT_SHAPE(2, 4), 2, 3, 4, 5, 6, 7, 8, 9);
    ck_assert_double_eq_tol(gpt_loss(&m, x, y), gpt_loss(&ref, x, y), 1e-6);
    tt_scope_end();
    tt_pruning_free(&pr);
    tt_gpt_free(&ref);
    tt_gpt_free(&m);
}
END_TEST

// A block-weights list is 6 per layer; global 50% over it gives sparsity 0.5 exactly.
START_TEST(test_gpt_global_prune) {
    tt_gpt_config c = tiny_config(4);
    tt_rng rng;
    tt_rng_seed(&rng, 10);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    tt_params w;
    tt_params_init(&w);
    tt_gpt_block_weights(&m, &w);
    ck_assert_int_eq(w.n, 12);
    ck_assert_str_eq(w.items[0].name, "blocks.0.attn.q_proj.weight");
    ck_assert_ptr_eq(w.items[0].tensor, tt_params_get(&m.params, w.items[0].name));
    tt_pruning pr;
    tt_pruning_init(&pr);
    tt_prune_global_unstructured(&pr, &w, 0.5);
    ck_assert_double_eq(tt_sparsity(&w), 0.5);  // 2 * 12 * 256 entries, even
    tt_pruning_free(&pr);
    tt_params_free(&w);
    tt_gpt_free(&m);
}
END_TEST

// A pruned GPT through a checkpoint: its state and masks (model.<name>_mask) saved together,
// tt_gpt_load builds the model (the masks are extra entries it ignores) and tt_prune_restore
// brings the masks back: the same masks, the same sparsity, and tt_prune_apply holds them.
START_TEST(test_gpt_prune_checkpoint) {
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "prune_gpt");
    snprintf(path, sizeof path, "%s/gpt.ckpt", dir);
    tt_gpt_config c = tiny_config(4);
    tt_rng rng;
    tt_rng_seed(&rng, 14);
    tt_gpt m, back;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    tt_params w, wb;
    tt_params_init(&w);
    tt_params_init(&wb);
    tt_gpt_block_weights(&m, &w);
    tt_pruning pr, pb;
    tt_pruning_init(&pr);
    tt_pruning_init(&pb);
    tt_prune_global_unstructured(&pr, &w, 0.3);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_gpt_ckpt_fill(&ck, &m, NULL, NULL);
    tt_ckpt_add_params(&ck, "model.", &pr.masks);
    ck_assert_int_eq(tt_ckpt_save(&ck, path), TT_OK);
    tt_ckpt_free(&ck);
    ck_assert_int_eq(tt_gpt_load(path, &back, &ck), TT_OK);
    ck_assert_int_eq(tt_prune_restore(&pb, &ck, "model.", &back.params), TT_OK);
    ck_assert_int_eq(pb.masks.n, 12);
    tt_gpt_block_weights(&back, &wb);
    ck_assert_double_eq(tt_sparsity(&wb), tt_sparsity(&w));
    for (int i = 0; i < pr.masks.n; i++) {
        ck_assert_str_eq(pb.masks.items[i].name, pr.masks.items[i].name);
        ck_assert_uint_eq(tt_tensor_hash(pb.masks.items[i].tensor),
                          tt_tensor_hash(pr.masks.items[i].tensor));
    }
    tt_fill_(back.blocks[0].attn.q_proj.weight, 1.0);
    tt_prune_apply(&pb);
    ck_assert_int_eq(tt_count_nonzero(back.blocks[0].attn.q_proj.weight),
                     tt_count_nonzero(m.blocks[0].attn.q_proj.weight));
    tt_ckpt_free(&ck);
    tt_pruning_free(&pb);
    tt_pruning_free(&pr);
    tt_params_free(&wb);
    tt_params_free(&w);
    tt_gpt_free(&back);
    tt_gpt_free(&m);
    tt_test_rmdir(dir);
}
END_TEST

// ---- SVD ----

#define NSVD ((int)(sizeof svd_refs / sizeof svd_refs[0]))

START_TEST(test_svd_vs_numpy) {
    const svd_ref *r = &svd_refs[_i];
    int64_t M = r->m, N = r->n, K = M < N ? M : N;
    double *U = malloc((size_t)(M * K) * sizeof *U), *S = malloc((size_t)K * sizeof *S);
    double *Vt = malloc((size_t)(K * N) * sizeof *Vt);
    tt_svd_jacobi(U, S, Vt, r->a, M, N);
    double tol = 1e-12 * r->s[0];
    for (int64_t k = 0; k < K; k++) {
        ck_assert_msg(fabs(S[k] - r->s[k]) <= tol, "%s: S[%lld] = %.17g, numpy %.17g", r->name,
                      (long long)k, S[k], r->s[k]);
        if (k > 0) ck_assert(S[k] <= S[k - 1]);
    }
    // A = U diag(S) Vt
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double a = 0;
            for (int64_t k = 0; k < K; k++) a += U[i * K + k] * S[k] * Vt[k * N + j];
            ck_assert_msg(fabs(a - r->a[i * N + j]) <= tol, "%s: (U S Vt)[%lld, %lld] = %.17g,"
                          " A holds %.17g", r->name, (long long)i, (long long)j, a,
                          r->a[i * N + j]);
        }
    // Orthonormal singular vectors (for the nonzero singular values), and each one equal to
    // numpy's up to sign.
    for (int64_t p = 0; p < r->rank; p++)
        for (int64_t q = 0; q < r->rank; q++) {
            double uu = 0, vv = 0;
            for (int64_t i = 0; i < M; i++) uu += U[i * K + p] * U[i * K + q];
            for (int64_t j = 0; j < N; j++) vv += Vt[p * N + j] * Vt[q * N + j];
            ck_assert_double_eq_tol(uu, p == q, 1e-12);
            ck_assert_double_eq_tol(vv, p == q, 1e-12);
        }
    for (int64_t k = 0; k < r->rank; k++) {
        double du = 0, dv = 0;
        for (int64_t i = 0; i < M; i++) du += U[i * K + k] * r->u[i * K + k];
        for (int64_t j = 0; j < N; j++) dv += Vt[k * N + j] * r->vt[k * N + j];
        ck_assert_msg(fabs(fabs(du) - 1) <= 1e-10 && fabs(du - dv) <= 1e-10,
                      "%s: singular vector %lld: u.u_np = %.17g, v.v_np = %.17g", r->name,
                      (long long)k, du, dv);
    }
    free(U), free(S), free(Vt);
}
END_TEST

// tt_svd on a tensor: f64 outputs of torch.linalg.svd's shapes; a f32 input gives the SVD of
// its f32 values.
START_TEST(test_svd_tensor) {
    tt_scope_begin();
    tt_tensor *a = matrix(TT_F32, 6, 4, svd_refs[0].a), *U, *S, *Vh;
    tt_svd(tt_transpose(a, 0, 1), &U, &S, &Vh);  // (4, 6), a strided view
    ck_assert_int_eq(U->dtype, TT_F64);
    ck_assert_int_eq(U->shape[0], 4);
    ck_assert_int_eq(U->shape[1], 4);
    ck_assert_int_eq(S->shape[0], 4);
    ck_assert_int_eq(Vh->shape[0], 4);
    ck_assert_int_eq(Vh->shape[1], 6);
    double *s = values(S);
    for (int k = 0; k < 4; k++) ck_assert_double_eq_tol(s[k], svd_refs[0].s[k], 1e-6);
    free(s);
    tt_scope_end();
}
END_TEST

// ---- low rank ----

// A (12, 9) f64 Linear with bias at every rank 1 .. 9: the factors have Sequential's names and
// shapes, the forward equals x W_r^T + b, and ||W - W_r||_F^2 = sum of the squared tail
// singular values (Eckart-Young); rank 9 reproduces W.
START_TEST(test_low_rank_eckart_young) {
    int64_t r = _i + 1, out = 12, in = 9;
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, in, out, true, &rng);
    double *W = values(fc.weight), *b = values(fc.bias);
    double U[12 * 9], S[9], Vt[9 * 9];
    tt_svd_jacobi(U, S, Vt, W, out, in);
    tt_nn_linear_low_rank(&fc, r);
    ck_assert_ptr_null(fc.weight);
    ck_assert_ptr_null(fc.bias);
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(&fc, &p, "fc");
    ck_assert_int_eq(p.n, 3);
    ck_assert_str_eq(p.items[0].name, "fc.0.weight");
    ck_assert_str_eq(p.items[1].name, "fc.1.weight");
    ck_assert_str_eq(p.items[2].name, "fc.1.bias");
    ck_assert_int_eq(p.items[0].tensor->shape[0], r);
    ck_assert_int_eq(p.items[0].tensor->shape[1], in);
    ck_assert_int_eq(p.items[1].tensor->shape[0], out);
    ck_assert_int_eq(p.items[1].tensor->shape[1], r);
    ck_assert(p.items[0].tensor->requires_grad && p.items[1].tensor->requires_grad);
    double *down = values(p.items[0].tensor), *up = values(p.items[1].tensor);
    double Wr[12 * 9], err2 = 0, tail2 = 0;
    for (int64_t o = 0; o < out; o++)
        for (int64_t i = 0; i < in; i++) {
            double s = 0;
            for (int64_t k = 0; k < r; k++) s += up[o * r + k] * down[k * in + i];
            Wr[o * in + i] = s;
            err2 += (W[o * in + i] - s) * (W[o * in + i] - s);
        }
    for (int64_t k = r; k < 9; k++) tail2 += S[k] * S[k];
    ck_assert_double_eq_tol(err2, tail2, 1e-12);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(5, in));
    double *y = values(tt_nn_linear_forward(&fc, x)), *xv = values(x);
    for (int64_t n = 0; n < 5; n++)
        for (int64_t o = 0; o < out; o++) {
            double e = b[o];
            for (int64_t i = 0; i < in; i++) e += xv[n * in + i] * Wr[o * in + i];
            ck_assert_double_eq_tol(y[n * out + o], e, 1e-12);
        }
    tt_scope_end();
    free(y), free(xv), free(down), free(up), free(W), free(b);
    tt_params_free(&p);
    tt_nn_linear_free(&fc);
    tt_set_default_dtype(prev);
}
END_TEST

// A GPT with every block Linear at half rank: the parameter names and count, a finite loss
// that differs from the dense one, training works (a backward reaches every factor) and the
// matmul bytes count the factors.
START_TEST(test_gpt_low_rank) {
    tt_gpt_config c = tiny_config(4);
    tt_rng rng;
    tt_rng_seed(&rng, 12);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_I32, TT_SHAPE(2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    tt_tensor *y = tt_test_tensor(TT_I32, TT_SHAPE(2, 4), 2, 3, 4, 5, 6, 7, 8, 9);
    double dense = gpt_loss(&m, x, y);
    int64_t n_dense = tt_gpt_num_params(&m, false);
    tt_gpt_low_rank(&m, 0.5);
    ck_assert_ptr_nonnull(tt_params_get(&m.params, "blocks.0.mlp.fc.0.weight"));
    ck_assert_ptr_nonnull(tt_params_get(&m.params, "blocks.1.attn.o_proj.1.weight"));
    ck_assert_ptr_null(tt_params_get(&m.params, "blocks.0.mlp.fc.weight"));
    // Per layer: 4 attention (16, 16) at rank 8: 4 * 8 * 32; fc (64, 16) and proj (16, 64) at
    // rank 8: 2 * 8 * 80, instead of 4 * 256 + 2 * 1024.
    int64_t per_layer_dense = 4 * 256 + 2 * 1024, per_layer = 4 * 8 * 32 + 2 * 8 * 80;
    ck_assert_int_eq(tt_gpt_num_params(&m, false), n_dense - 2 * (per_layer_dense - per_layer));
    ck_assert_int_eq(tt_gpt_matmul_weight_bytes(&m), 4 * (2 * per_layer + 11 * 16));
    double low = gpt_loss(&m, x, y);
    ck_assert(isfinite(low) && low != dense);
    tt_backward(tt_gpt_loss(&m, x, y));
    for (int i = 0; i < m.params.n; i++)
        ck_assert_msg(m.params.items[i].tensor->grad != NULL, "%s has no gradient",
                      m.params.items[i].name);
    tt_scope_end();
    tt_params_zero_grad(&m.params);
    tt_gpt_free(&m);
}
END_TEST

// ---- errors ----

static tt_tensor *ab_w;
static tt_nn_linear ab_fc;
static tt_pruning ab_pr;

static void abort_setup(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 13);
    ab_w = tt_randn(&rng, TT_F32, TT_SHAPE(4, 6));
    tt_nn_linear_init(&ab_fc, 6, 4, true, &rng);
    tt_pruning_init(&ab_pr);
}

static void abort_teardown(void) {}

START_TEST(test_abort_amount_high) {
    tt_expect_abort("tt_prune_l1_unstructured: amount 1.5 must be a fraction in [0, 1]");
    tt_prune_l1_unstructured(&ab_pr, "w", ab_w, 1.5);
}
END_TEST

START_TEST(test_abort_amount_negative) {
    tt_expect_abort("tt_prune_global_unstructured: amount -0.1 must be a fraction in [0, 1]");
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, NULL, "w", ab_w);
    tt_prune_global_unstructured(&ab_pr, &p, -0.1);
}
END_TEST

START_TEST(test_abort_amount_nan) {
    tt_expect_abort("tt_prune_ln_structured: amount nan must be a fraction in [0, 1]");
    tt_prune_ln_structured(&ab_pr, "w", ab_w, NAN, 2, 0);
}
END_TEST

START_TEST(test_abort_norm_order) {
    tt_expect_abort("norm order n=0 must be > 0 or INFINITY");
    tt_prune_ln_structured(&ab_pr, "w", ab_w, 0.5, 0, 0);
}
END_TEST

START_TEST(test_abort_dim) {
    tt_expect_abort("dim 2 is out of range for 'w' (4, 6)");
    tt_prune_ln_structured(&ab_pr, "w", ab_w, 0.5, 2, 2);
}
END_TEST

START_TEST(test_abort_int_tensor) {
    tt_expect_abort("'w' (4,) i32 must be a contiguous float tensor");
    tt_prune_l1_unstructured(&ab_pr, "w", tt_zeros(TT_I32, TT_SHAPE(4)), 0.5);
}
END_TEST

START_TEST(test_abort_same_name) {
    tt_expect_abort("'w' is already pruned as another tensor");
    tt_prune_l1_unstructured(&ab_pr, "w", ab_w, 0.5);
    tt_prune_l1_unstructured(&ab_pr, "w", ab_fc.weight, 0.5);
}
END_TEST

START_TEST(test_abort_remove_unknown) {
    tt_expect_abort("tt_prune_remove: 'fc.weight' is not pruned");
    tt_prune_remove(&ab_pr, "fc.weight");
}
END_TEST

START_TEST(test_abort_rank_zero) {
    tt_expect_abort("tt_nn_linear_low_rank: rank 0 must be in [1, min(out, in)] = [1, 4] for the "
                    "weight (4, 6)");
    tt_nn_linear_low_rank(&ab_fc, 0);
}
END_TEST

START_TEST(test_abort_rank_high) {
    tt_expect_abort("tt_nn_linear_low_rank: rank 5 must be in [1, min(out, in)] = [1, 4]");
    tt_nn_linear_low_rank(&ab_fc, 5);
}
END_TEST

START_TEST(test_abort_low_rank_twice) {
    tt_expect_abort("tt_nn_linear_low_rank: the Linear (in=6, out=4) is already low rank");
    tt_nn_linear_low_rank(&ab_fc, 2);
    tt_nn_linear_low_rank(&ab_fc, 2);
}
END_TEST

START_TEST(test_abort_low_rank_int8) {
    tt_expect_abort("tt_nn_linear_low_rank: the Linear (in=6, out=4) runs int8; call "
                    "tt_nn_linear_dequantize first");
    tt_nn_linear_quantize(&ab_fc);
    tt_nn_linear_low_rank(&ab_fc, 2);
}
END_TEST

START_TEST(test_abort_gpt_fraction) {
    tt_expect_abort("tt_gpt_low_rank: fraction 0 of the rank to keep must be in (0, 1]");
    tt_gpt_config c = tiny_config(4);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m;
    tt_gpt_init(&m, &c, &rng);
    tt_gpt_low_rank(&m, 0);
}
END_TEST

START_TEST(test_abort_gpt_head) {
    tt_expect_abort("tt_gpt_prune_heads: head 4 of layer 0 is out of range [0, 4)");
    tt_gpt_config c = tiny_config(4);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m;
    tt_gpt_init(&m, &c, &rng);
    tt_gpt_prune_heads(&m, &ab_pr, 0, (int64_t[]){4}, 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("prune");
    TCase *pr = tt_tcase("prune");
    tcase_add_loop_test(pr, test_prune_vs_torch, 0, NREF);
    tcase_add_test(pr, test_prune_global_vs_layer);
    tcase_add_test(pr, test_prune_exact_sparsity);
    tcase_add_test(pr, test_prune_keeps_largest);
    tcase_add_test(pr, test_prune_holds_through_adamw);
    tcase_add_test(pr, test_prune_remove);
    tcase_add_test(pr, test_prune_checkpoint);
    tcase_add_loop_test(pr, test_gpt_prune_heads, 0, 2);
    tcase_add_test(pr, test_gpt_global_prune);
    tcase_add_test(pr, test_gpt_prune_checkpoint);
    suite_add_tcase(s, pr);

    TCase *lr = tt_tcase("low_rank");
    tcase_add_loop_test(lr, test_svd_vs_numpy, 0, NSVD);
    tcase_add_test(lr, test_svd_tensor);
    tcase_add_loop_test(lr, test_low_rank_eckart_young, 0, 9);
    tcase_add_test(lr, test_gpt_low_rank);
    suite_add_tcase(s, lr);

    TCase *ab = tt_tcase_aborts("aborts_prune");
    tcase_add_checked_fixture(ab, abort_setup, abort_teardown);
    tcase_add_test_raise_signal(ab, test_abort_amount_high, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_amount_negative, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_amount_nan, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_norm_order, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_int_tensor, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_same_name, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_remove_unknown, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_rank_zero, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_rank_high, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_low_rank_twice, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_low_rank_int8, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gpt_fraction, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gpt_head, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
