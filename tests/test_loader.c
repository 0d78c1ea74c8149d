// Check suite of data/loader: the tensor dataset, the data loader (batch counts, drop_last,
// collation dtypes and shapes, shuffle = tt_randperm of the rng, the same batches with and
// without prefetch and for a seed, the gather fast path = item by item) and the transforms
// against hand-computed images.
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

// x (n, 2, 3) f32 holding 100 i + j at flat position j of item i; y (n,) i64 holding 7 i.
static void make_xy(int64_t n, tt_tensor **x, tt_tensor **y) {
    *x = tt_empty(TT_F32, 3, (const int64_t[]){n, 2, 3});
    *y = tt_empty(TT_I64, 1, (const int64_t[]){n});
    float *px = tt_data(*x);
    int64_t *py = tt_data(*y);
    for (int64_t i = 0; i < n; i++) {
        for (int j = 0; j < 6; j++) px[i * 6 + j] = (float)(100 * i + j);
        py[i] = 7 * i;
    }
}

START_TEST(test_tensor_dataset) {
    tt_tensor *x, *y;
    make_xy(5, &x, &y);
    tt_dataset *ds = tt_tensor_dataset(2, (tt_tensor *[]){x, y});
    tt_release(x);  // the dataset holds its own references
    tt_release(y);
    ck_assert_int_eq(tt_dataset_len(ds), 5);
    ck_assert_int_eq(ds->n_fields, 2);
    tt_tensor *item[2];
    tt_dataset_get(ds, 3, item);
    ck_assert_int_eq(item[0]->ndim, 2);
    ck_assert_int_eq(item[0]->shape[0], 2);
    ck_assert_int_eq(item[0]->shape[1], 3);
    ck_assert_values(item[0], 0, 0, 300, 301, 302, 303, 304, 305);
    ck_assert_int_eq(item[1]->ndim, 0);
    ck_assert_int_eq(item[1]->dtype, TT_I64);
    ck_assert_int_eq((int)tt_item(item[1]), 21);
    tt_release(item[0]);
    tt_release(item[1]);
    tt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_tensor_dataset_strided) {
    // A transposed (non-contiguous) tensor is copied: item i is row i of the view.
    tt_scope_begin();
    tt_tensor *a = tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tt_dataset *ds = tt_tensor_dataset(1, (tt_tensor *[]){tt_transpose(a, 0, 1)});
    tt_scope_end();
    ck_assert_int_eq(tt_dataset_len(ds), 3);
    tt_tensor *item;
    tt_dataset_get(ds, 2, &item);
    ck_assert_values(item, 0, 0, 3, 6);
    tt_release(item);
    tt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_loader_sequential) {
    tt_tensor *x, *y;
    make_xy(10, &x, &y);
    tt_dataset *ds = tt_tensor_dataset(2, (tt_tensor *[]){x, y});
    for (int drop = 0; drop < 2; drop++) {
        tt_dataloader *dl = tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 4,
                                              .drop_last = drop}, NULL);
        ck_assert_int_eq(tt_dataloader_len(dl), drop ? 2 : 3);
        tt_dataloader_begin_epoch(dl);
        tt_tensor *bx, *by;
        int64_t b = 0, seen = 0;
        while (tt_dataloader_next(dl, &bx, &by)) {
            int64_t B = b < 2 ? 4 : 2;
            ck_assert_int_eq(bx->dtype, TT_F32);
            ck_assert_int_eq(bx->ndim, 3);
            ck_assert_int_eq(bx->shape[0], B);
            ck_assert_int_eq(bx->shape[1], 2);
            ck_assert_int_eq(bx->shape[2], 3);
            ck_assert_int_eq(by->dtype, TT_I64);  // integer labels stay integer
            ck_assert_int_eq(by->ndim, 1);
            ck_assert_int_eq(by->shape[0], B);
            for (int64_t i = 0; i < B; i++) {
                int64_t item = 4 * b + i;
                ck_assert_double_eq(tt_at(bx, i * 6 + 5), 100 * item + 5);
                ck_assert_double_eq(tt_at(by, i), 7 * item);
            }
            seen += B;
            b++;
            tt_release(bx);
            tt_release(by);
        }
        ck_assert_ptr_null(bx);
        ck_assert_ptr_null(by);
        ck_assert_int_eq(b, drop ? 2 : 3);
        ck_assert_int_eq(seen, drop ? 8 : 10);
        ck_assert(!tt_dataloader_next(dl, &bx, &by));  // still the end
        tt_dataloader_free(dl);
    }
    tt_dataset_destroy(ds);
    tt_release(x);
    tt_release(y);
}
END_TEST

// The labels of one epoch (item i has label 7 i) into order[0 .. n).
static void epoch_order(tt_dataloader *dl, int64_t *order) {
    tt_dataloader_begin_epoch(dl);
    tt_tensor *bx, *by;
    int64_t k = 0;
    while (tt_dataloader_next(dl, &bx, &by)) {
        for (int64_t i = 0; i < by->shape[0]; i++) {
            order[k] = (int64_t)tt_at(by, i) / 7;
            ck_assert_double_eq(tt_at(bx, i * 6), 100 * order[k]);  // x and y stay paired
            k++;
        }
        tt_release(bx);
        tt_release(by);
    }
}

START_TEST(test_loader_shuffle) {
    tt_tensor *x, *y;
    make_xy(37, &x, &y);
    tt_dataset *ds = tt_tensor_dataset(2, (tt_tensor *[]){x, y});
    for (int pre = 0; pre < 2; pre++) {
        tt_rng rng, ref;
        tt_rng_seed(&rng, 42);
        tt_rng_seed(&ref, 42);
        tt_dataloader *dl = tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 8,
                                              .shuffle = true, .prefetch = pre}, &rng);
        int64_t order[37], first[37];
        for (int epoch = 0; epoch < 3; epoch++) {
            epoch_order(dl, order);
            tt_tensor *perm = tt_randperm(&ref, 37);  // the same draws
            for (int i = 0; i < 37; i++) ck_assert_int_eq(order[i], (int64_t)tt_at(perm, i));
            tt_release(perm);
            if (epoch == 0) memcpy(first, order, sizeof order);
            else ck_assert(memcmp(first, order, sizeof order) != 0);  // a new one per epoch
        }
        tt_dataloader_free(dl);
    }
    tt_dataset_destroy(ds);
    tt_release(x);
    tt_release(y);
}
END_TEST

// ---- a dataset of callbacks (no gather): item i of shape (1, 4, 5) from a formula ----

static int64_t formula_len(const tt_dataset *self) {
    (void)self;
    return 23;
}

static void formula_get(const tt_dataset *self, int64_t index, void *const *out) {
    (void)self;
    float *img = out[0];
    for (int j = 0; j < 20; j++) img[j] = (float)(index * 20 + j) / 8;
    *(int32_t *)out[1] = (int32_t)(index % 3);
}

static void formula_destroy(tt_dataset *self) { (void)self; }

static tt_dataset formula_dataset(void) {
    tt_dataset ds = {.len = formula_len, .get = formula_get, .destroy = formula_destroy,
                     .n_fields = 2, .dtype = {TT_F32, TT_I32}, .ndim = {3, 0},
                     .shape = {{1, 4, 5}}};
    return ds;
}

// Every batch of two epochs, concatenated (x then y per batch) into vals; returns the count.
static int64_t run_epochs(tt_dataset *ds, bool prefetch, bool with_tf, uint64_t seed,
                          double *vals) {
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    tt_transform *tf = tt_compose(3, (tt_transform *[]){
        tt_random_crop(3, 3, 1, -1), tt_random_horizontal_flip(0.5),
        tt_normalize(1, (const double[]){0.5}, (const double[]){2})});
    tt_dataloader *dl = tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 5,
                                          .shuffle = true, .transform = with_tf ? tf : NULL,
                                          .prefetch = prefetch}, &rng);
    int64_t k = 0;
    for (int epoch = 0; epoch < 2; epoch++) {
        tt_dataloader_begin_epoch(dl);
        tt_tensor *bx, *by;
        while (tt_dataloader_next(dl, &bx, &by)) {
            ck_assert_int_eq(bx->shape[2], with_tf ? 3 : 4);  // the transform's shape
            ck_assert_int_eq(by->dtype, ds->dtype[1]);
            for (int64_t i = 0; i < tt_numel(bx); i++) vals[k++] = tt_at(bx, i);
            for (int64_t i = 0; i < tt_numel(by); i++) vals[k++] = tt_at(by, i);
            tt_release(bx);
            tt_release(by);
        }
    }
    tt_dataloader_free(dl);
    tt_transform_destroy(tf);
    return k;
}

START_TEST(test_loader_prefetch_identical) {
    tt_dataset ds = formula_dataset();
    static double a[4096], b[4096], c[4096];
    int64_t na = run_epochs(&ds, false, true, 7, a);
    int64_t nb = run_epochs(&ds, true, true, 7, b);
    ck_assert_int_eq(na, 2 * 23 * (9 + 1));
    ck_assert_int_eq(na, nb);
    ck_assert(memcmp(a, b, (size_t)na * sizeof *a) == 0);
    int64_t nc = run_epochs(&ds, true, true, 8, c);  // another seed: other batches
    ck_assert_int_eq(nc, na);
    ck_assert(memcmp(a, c, (size_t)na * sizeof *a) != 0);
    // the pad value -1 normalized: (-1 - 0.5) / 2 shows up somewhere, and the flip is used
    bool pad = false;
    for (int64_t i = 0; i < na; i++) pad |= a[i] == -0.75;
    ck_assert(pad);
}
END_TEST

START_TEST(test_loader_gather_fast_path) {
    // The tensor dataset's gather and item-by-item get give the same batches.
    tt_tensor *x, *y;
    make_xy(19, &x, &y);
    tt_dataset *fast = tt_tensor_dataset(2, (tt_tensor *[]){x, y});
    tt_dataset slow = *fast;
    slow.gather = NULL;
    slow.destroy = NULL;
    for (int pre = 0; pre < 2; pre++) {
        int64_t a[19], b[19];
        tt_rng r1, r2;
        tt_rng_seed(&r1, 3);
        tt_rng_seed(&r2, 3);
        tt_dataloader *d1 = tt_dataloader_new(fast, &(tt_dataloader_opts){.batch_size = 6,
                                              .shuffle = true, .prefetch = pre}, &r1);
        tt_dataloader *d2 = tt_dataloader_new(&slow, &(tt_dataloader_opts){.batch_size = 6,
                                              .shuffle = true}, &r2);
        epoch_order(d1, a);
        epoch_order(d2, b);
        ck_assert(memcmp(a, b, sizeof a) == 0);
        tt_dataloader_free(d1);
        tt_dataloader_free(d2);
    }
    tt_dataset_destroy(fast);
    tt_release(x);
    tt_release(y);
}
END_TEST

START_TEST(test_loader_early_stop) {
    // A new epoch or free while the prefetch thread waits on a full queue.
    tt_tensor *x, *y;
    make_xy(50, &x, &y);
    tt_dataset *ds = tt_tensor_dataset(2, (tt_tensor *[]){x, y});
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_dataloader *dl = tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 3,
                                          .shuffle = true, .prefetch = true}, &rng);
    tt_dataloader_begin_epoch(dl);
    tt_tensor *bx, *by;
    ck_assert(tt_dataloader_next(dl, &bx, &by));
    tt_release(bx);
    tt_release(by);
    int64_t order[50];
    epoch_order(dl, order);  // restarts: a full epoch of 50 distinct items
    bool seen[50] = {0};
    for (int i = 0; i < 50; i++) seen[order[i]] = true;
    for (int i = 0; i < 50; i++) ck_assert(seen[i]);
    tt_dataloader_begin_epoch(dl);
    tt_dataloader_free(dl);
    tt_dataset_destroy(ds);
    tt_release(x);
    tt_release(y);
}
END_TEST

START_TEST(test_loader_inside_scope) {
    // Batches made inside a scope belong to it (the leak fixture checks), with and without
    // prefetch; a batch kept with tt_keep outlives it.
    tt_tensor *x, *y;
    make_xy(9, &x, &y);
    tt_dataset *ds = tt_tensor_dataset(2, (tt_tensor *[]){x, y});
    for (int pre = 0; pre < 2; pre++) {
        tt_dataloader *dl = tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 2,
                                              .prefetch = pre}, NULL);
        tt_dataloader_begin_epoch(dl);
        tt_tensor *bx, *by, *kept = NULL;
        tt_scope_begin();
        while (tt_dataloader_next(dl, &bx, &by))
            if (!kept) kept = tt_keep(by);
        tt_scope_end();
        ck_assert_values(kept, 0, 0, 0, 7);
        tt_release(kept);
        tt_dataloader_free(dl);
    }
    tt_dataset_destroy(ds);
    tt_release(x);
    tt_release(y);
}
END_TEST

// ---- transforms ----

START_TEST(test_random_crop) {
    tt_rng rng, ref;
    tt_rng_seed(&rng, 5);
    // (1, 2, 3) image 1..6, padding 1 with fill 9, crop 4 x 5: the whole padded image, no draw
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(1, 2, 3), 1, 2, 3, 4, 5, 6);
    tt_transform *full = tt_random_crop(4, 5, 1, 9);
    ref = rng;
    tt_tensor *y = tt_transform_apply(full, &rng, x);
    ck_assert_int_eq(y->shape[1], 4);
    ck_assert_int_eq(y->shape[2], 5);
    ck_assert_values(y, 0, 0, 9, 9, 9, 9, 9,
                              9, 1, 2, 3, 9,
                              9, 4, 5, 6, 9,
                              9, 9, 9, 9, 9);
    ck_assert(memcmp(&rng, &ref, sizeof rng) == 0);  // no draw
    tt_release(y);
    // crop 2 x 2 of the padded 4 x 5: top i in 0..2, left j in 0..3, drawn i then j
    tt_transform *crop = tt_random_crop(2, 2, 1, 0);
    static const float padded[4][5] = {{0, 0, 0, 0, 0}, {0, 1, 2, 3, 0}, {0, 4, 5, 6, 0},
                                       {0, 0, 0, 0, 0}};
    bool seen[3][4] = {{0}};
    for (int t = 0; t < 200; t++) {
        ref = rng;
        int64_t i = tt_rng_below(&ref, 3), j = tt_rng_below(&ref, 4);
        seen[i][j] = true;
        y = tt_transform_apply(crop, &rng, x);
        ck_assert_values(y, 0, 0, padded[i][j], padded[i][j + 1], padded[i + 1][j],
                         padded[i + 1][j + 1]);
        tt_release(y);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) ck_assert(seen[i][j]);
    // (H, W) images: one channel; crop 1 x 2 without padding
    tt_tensor *x2 = tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tt_transform *c12 = tt_random_crop(1, 2, 0, 0);
    ref = rng;
    int64_t i = tt_rng_below(&ref, 2), j = tt_rng_below(&ref, 2);
    y = tt_transform_apply(c12, &rng, x2);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->dtype, TT_F32);
    ck_assert_values(y, 0, 0, 1 + 3 * i + j, 2 + 3 * i + j);
    tt_release(y);
    tt_release(x);
    tt_release(x2);
    tt_transform_destroy(full);
    tt_transform_destroy(crop);
    tt_transform_destroy(c12);
}
END_TEST

START_TEST(test_random_horizontal_flip) {
    tt_rng rng, ref;
    tt_rng_seed(&rng, 11);
    // (2, 2, 3): two channels, each row reversed when flipped
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(2, 2, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                  12);
    tt_transform *always = tt_random_horizontal_flip(1), *never = tt_random_horizontal_flip(0);
    tt_transform *half = tt_random_horizontal_flip(0.5);
    tt_tensor *y = tt_transform_apply(always, &rng, x);
    ck_assert_values(y, 0, 0, 3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10);
    tt_release(y);
    y = tt_transform_apply(never, &rng, x);
    ck_assert_values(y, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    tt_release(y);
    int flips = 0;
    for (int t = 0; t < 100; t++) {
        ref = rng;
        bool flip = tt_rng_uniform(&ref) < 0.5;
        flips += flip;
        y = tt_transform_apply(half, &rng, x);
        ck_assert_double_eq(tt_at(y, 0), flip ? 3 : 1);
        ck_assert_double_eq(tt_at(y, 11), flip ? 10 : 12);
        tt_release(y);
        ck_assert(memcmp(&rng, &ref, sizeof rng) == 0);  // one draw per image
    }
    ck_assert(flips > 20 && flips < 80);
    tt_release(x);
    tt_transform_destroy(always);
    tt_transform_destroy(never);
    tt_transform_destroy(half);
}
END_TEST

START_TEST(test_normalize_compose) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(2, 1, 2), 1, 2, 3, 4);
    tt_transform *n = tt_normalize(2, (const double[]){1, 2}, (const double[]){0.5, 4});
    tt_tensor *y = tt_transform_apply(n, &rng, x);
    ck_assert_values(y, 0, 0, 0, 2, 0.25, 0.5);  // (1-1)/.5, (2-1)/.5, (3-2)/4, (4-2)/4
    tt_release(y);
    tt_transform_destroy(n);
    // Compose: pad 1 with 3 and crop the whole (4, 4), flip, normalize by (mean 1, std 2)
    tt_transform *c = tt_compose(3, (tt_transform *[]){
        tt_random_crop(3, 4, 1, 3), tt_random_horizontal_flip(1),
        tt_normalize(1, (const double[]){1}, (const double[]){2})});
    y = tt_transform_apply(c, &rng, x);
    ck_assert_int_eq(y->shape[0], 2);
    ck_assert_int_eq(y->shape[1], 3);
    ck_assert_int_eq(y->shape[2], 4);
    // channel 0 padded: 3 3 3 3 / 3 1 2 3 / 3 3 3 3, flipped: 3 3 3 3 / 3 2 1 3 / 3 3 3 3
    ck_assert_values(y, 0, 0, 1, 1, 1, 1, 1, 0.5, 0, 1, 1, 1, 1, 1,
                              1, 1, 1, 1, 1, 1.5, 1, 1, 1, 1, 1, 1);
    tt_release(y);
    tt_transform_destroy(c);
    tt_release(x);
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_dataset_mismatch) {
    tt_expect_abort("their first dims (the item count) must agree");
    tt_scope_begin();
    tt_tensor_dataset(2, (tt_tensor *[]){tt_zeros(TT_F32, TT_SHAPE(4, 2)),
                                         tt_zeros(TT_I64, TT_SHAPE(5))});
}
END_TEST

START_TEST(test_abort_dataset_index) {
    tt_expect_abort("index 4 is out of range for a dataset of 4 items");
    tt_scope_begin();
    tt_dataset *ds = tt_tensor_dataset(1, (tt_tensor *[]){tt_zeros(TT_F32, TT_SHAPE(4, 2))});
    tt_tensor *item;
    tt_dataset_get(ds, 4, &item);
}
END_TEST

START_TEST(test_abort_crop_too_large) {
    tt_expect_abort("the crop 5 x 5 is larger than the 2 x 3 image padded by 1");
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_transform_apply(tt_random_crop(5, 5, 1, 0), &rng, tt_zeros(TT_F32, TT_SHAPE(1, 2, 3)));
}
END_TEST

START_TEST(test_abort_normalize_std) {
    tt_expect_abort("std[1] is 0");
    tt_normalize(2, (const double[]){0, 0}, (const double[]){1, 0});
}
END_TEST

START_TEST(test_abort_next_before_epoch) {
    tt_expect_abort("call tt_dataloader_begin_epoch(dl) first");
    tt_scope_begin();
    tt_dataset *ds = tt_tensor_dataset(1, (tt_tensor *[]){tt_zeros(TT_F32, TT_SHAPE(4, 2))});
    tt_dataloader *dl = tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 2}, NULL);
    tt_tensor *x;
    tt_dataloader_next(dl, &x, NULL);
}
END_TEST

START_TEST(test_abort_shuffle_without_rng) {
    tt_expect_abort("rng is NULL but shuffle needs it");
    tt_scope_begin();
    tt_dataset *ds = tt_tensor_dataset(1, (tt_tensor *[]){tt_zeros(TT_F32, TT_SHAPE(4, 2))});
    tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 2, .shuffle = true}, NULL);
}
END_TEST

START_TEST(test_abort_transform_labels) {
    tt_expect_abort("needs field 0 to be f32 images of (C, H, W) or (H, W)");
    tt_scope_begin();
    tt_dataset *ds = tt_tensor_dataset(1, (tt_tensor *[]){tt_zeros(TT_I64, TT_SHAPE(4))});
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 2,
                      .transform = tt_random_horizontal_flip(0.5)}, &rng);
}
END_TEST

int main(void) {
    Suite *s = suite_create("loader");
    TCase *tc = tt_tcase("loader");
    tcase_add_test(tc, test_tensor_dataset);
    tcase_add_test(tc, test_tensor_dataset_strided);
    tcase_add_test(tc, test_loader_sequential);
    tcase_add_test(tc, test_loader_shuffle);
    tcase_add_test(tc, test_loader_prefetch_identical);
    tcase_add_test(tc, test_loader_gather_fast_path);
    tcase_add_test(tc, test_loader_early_stop);
    tcase_add_test(tc, test_loader_inside_scope);
    tcase_add_test(tc, test_random_crop);
    tcase_add_test(tc, test_random_horizontal_flip);
    tcase_add_test(tc, test_normalize_compose);
    suite_add_tcase(s, tc);

    TCase *ab = tt_tcase_aborts("aborts_loader");
    tcase_add_test_raise_signal(ab, test_abort_dataset_mismatch, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dataset_index, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_crop_too_large, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_normalize_std, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_next_before_epoch, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_shuffle_without_rng, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_transform_labels, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
