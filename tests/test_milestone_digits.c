// Check suite of a small CNN trained end to end on scikit-learn's 8 x 8 digits (data/csv.h,
// `make data`): a seeded 1,437 / 360 split, conv-bn-relu-pool twice then flatten-linear as a
// tt_nn_sequential, the DataLoader (shuffled, prefetching) and AdamW, asserting >= 0.95 accuracy.
//
// On the way it checks that the loss falls, that eval mode uses the running stats (a sample's
// eval logits do not depend on its batch; train mode gives other logits and counts a batch),
// and that a checkpoint of tt_module_state restored into a fresh model gives bitwise the same
// logits, and that training is bitwise the same with or without the prefetch thread, on 1 or
// 2 threads. DIGITS_SEED=k (default 1) reruns everything with another seed: seeds 1 .. 10 give
// test accuracy 0.975 .. 0.992 (seed 1: 0.989). tests/reference/digits_cnn_torch.py trains
// the same model in PyTorch on the same splits (0.969 .. 0.992); make test never runs it.
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_DIGITS 1797
#define N_TEST 360  // scikit-learn's train_test_split(test_size=0.2): ceil(0.2 * 1797)
#define N_TRAIN (N_DIGITS - N_TEST)
#define N_CLASSES 10
#define EPOCHS 8
#define BATCH 32
#define N_BATCHES ((N_TRAIN + BATCH - 1) / BATCH)  // 45, the last one of 29
#define LR 5e-3
#define WEIGHT_DECAY 0.01  // torch.optim.AdamW's default

// ---- the model: (B, 1, 8, 8) -> (B, 10) ----

typedef struct digits_cnn {
    tt_nn_conv2d conv0, conv4;
    tt_nn_batchnorm bn1, bn5;
    tt_nn_maxpool2d pool3, pool7;
    tt_nn_linear fc9;
    tt_nn_sequential seq;
} digits_cnn;

// conv 3x3 (1 -> 8, same) - bn - relu - maxpool 2   (B, 8, 4, 4)
// conv 3x3 (8 -> 16, same) - bn - relu - maxpool 2  (B, 16, 2, 2)
// flatten - linear (64 -> 10); 1,946 parameters. The names match PyTorch's nn.Sequential.
static void digits_cnn_init(digits_cnn *m, tt_rng *rng) {
    const tt_nn_conv2d_opts same = {.padding = {1, 1}};
    tt_nn_conv2d_init(&m->conv0, 1, 8, 3, 3, &same, true, rng);
    tt_nn_batchnorm2d_init(&m->bn1, 8, NULL);
    tt_nn_maxpool2d_init(&m->pool3, 2, 2, NULL, NULL);
    tt_nn_conv2d_init(&m->conv4, 8, 16, 3, 3, &same, true, rng);
    tt_nn_batchnorm2d_init(&m->bn5, 16, NULL);
    tt_nn_maxpool2d_init(&m->pool7, 2, 2, NULL, NULL);
    tt_nn_linear_init(&m->fc9, 64, N_CLASSES, true, rng);
    tt_nn_sequential_init(&m->seq);
    tt_nn_sequential_add(&m->seq, tt_nn_conv2d_module(&m->conv0));
    tt_nn_sequential_add(&m->seq, tt_nn_batchnorm_module(&m->bn1));
    tt_nn_sequential_add(&m->seq, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&m->seq, tt_nn_maxpool2d_module(&m->pool3));
    tt_nn_sequential_add(&m->seq, tt_nn_conv2d_module(&m->conv4));
    tt_nn_sequential_add(&m->seq, tt_nn_batchnorm_module(&m->bn5));
    tt_nn_sequential_add(&m->seq, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&m->seq, tt_nn_maxpool2d_module(&m->pool7));
    tt_nn_sequential_add(&m->seq, tt_nn_flatten_module(1, -1));
    tt_nn_sequential_add(&m->seq, tt_nn_linear_module(&m->fc9));
}

static void digits_cnn_free(digits_cnn *m) {
    tt_nn_sequential_free(&m->seq);
    tt_nn_linear_free(&m->fc9);
    tt_nn_batchnorm_free(&m->bn5);
    tt_nn_conv2d_free(&m->conv4);
    tt_nn_batchnorm_free(&m->bn1);
    tt_nn_conv2d_free(&m->conv0);
}

// ---- the data ----

static uint64_t digits_seed(void) {
    const char *s = getenv("DIGITS_SEED");
    return s && *s ? strtoull(s, NULL, 10) : 1;
}

typedef struct digits_split {
    tt_tensor *x_train, *y_train;  // (1437, 1, 8, 8) f32 in [0, 1], (1437,) i64
    tt_tensor *x_test, *y_test;    // (360, 1, 8, 8), (360,)
} digits_split;

// The digits scaled to [0, 1], split by a permutation from rng: its first 360 are the test set.
static void digits_split_load(digits_split *d, tt_rng *rng) {
    tt_tensor *images = NULL, *labels = NULL;
    tt_status s = tt_digits_load(NULL, &images, &labels);
    ck_assert_msg(s == TT_OK, "%s", tt_last_error());
    ck_assert_int_eq(images->shape[0], N_DIGITS);
    tt_mul_scalar_(images, 1.0 / 16);
    tt_scope_begin();
    tt_tensor *perm = tt_randperm(rng, N_DIGITS);
    tt_tensor *test_idx = tt_narrow(perm, 0, 0, N_TEST);
    tt_tensor *train_idx = tt_narrow(perm, 0, N_TEST, N_TRAIN);
    d->x_test = tt_keep(tt_index_select(images, 0, test_idx));
    d->y_test = tt_keep(tt_index_select(labels, 0, test_idx));
    d->x_train = tt_keep(tt_index_select(images, 0, train_idx));
    d->y_train = tt_keep(tt_index_select(labels, 0, train_idx));
    tt_scope_end();
    tt_release(images);
    tt_release(labels);
}

static void digits_split_free(digits_split *d) {
    tt_release(d->x_train);
    tt_release(d->y_train);
    tt_release(d->x_test);
    tt_release(d->y_test);
}

// ---- helpers ----

// The logits of x without recording a graph, as a tensor the caller owns.
static tt_tensor *logits_of(digits_cnn *m, tt_tensor *x) {
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *logits = tt_keep(tt_nn_sequential_forward(&m->seq, x));
    tt_scope_end();
    tt_no_grad_end();
    return logits;
}

static double accuracy(const tt_tensor *logits, const tt_tensor *labels) {
    ck_assert_int_eq(logits->dtype, TT_F32);
    const float *l = tt_data(logits);
    const int64_t *y = tt_data(labels);
    int64_t n = logits->shape[0], right = 0;
    for (int64_t i = 0; i < n; i++) {
        int best = 0;
        for (int k = 1; k < N_CLASSES; k++)
            if (l[i * N_CLASSES + k] > l[i * N_CLASSES + best]) best = k;
        right += best == y[i];
    }
    return (double)right / (double)n;
}

static double max_abs_diff(const tt_tensor *a, const tt_tensor *b) {
    ck_assert_int_eq(tt_numel(a), tt_numel(b));
    const float *pa = tt_data(a), *pb = tt_data(b);
    double m = 0;
    for (int64_t i = 0; i < tt_numel(a); i++) m = fmax(m, fabs((double)pa[i] - pb[i]));
    return m;
}

static bool same_bits(const tt_tensor *a, const tt_tensor *b) {
    return tt_numel(a) == tt_numel(b) &&
           memcmp(tt_data(a), tt_data(b), (size_t)tt_numel(a) * sizeof(float)) == 0;
}

// One epoch over the loader; returns the mean of the batches' losses (weighted by batch size).
static double train_epoch(digits_cnn *m, tt_dataloader *dl, tt_optim *opt, double *first) {
    double sum = 0;
    int64_t seen = 0;
    tt_tensor *x, *y;
    tt_dataloader_begin_epoch(dl);
    while (tt_dataloader_next(dl, &x, &y)) {
        tt_scope_begin();
        tt_tensor *loss = tt_cross_entropy(tt_nn_sequential_forward(&m->seq, x), y, -100);
        double l = tt_item(loss);
        if (first && seen == 0) *first = l;
        sum += l * (double)x->shape[0];
        seen += x->shape[0];
        tt_backward(loss);
        tt_optim_step(opt);
        tt_optim_zero_grad(opt);
        tt_scope_end();
        tt_release(x);
        tt_release(y);
    }
    ck_assert_int_eq(seen, N_TRAIN);  // every training image once
    return sum / (double)seen;
}

// Initialises m from seed and trains it for `epochs` with AdamW on d's training set, through
// a loader shuffled from seed: loss[e] is epoch e's mean loss, *first the first batch's.
static void train_digits(digits_cnn *m, const digits_split *d, uint64_t seed, int epochs,
                         bool prefetch, double *first, double *loss) {
    tt_rng init_rng, loader_rng;
    tt_rng_seed(&init_rng, seed + 1000);
    tt_rng_seed(&loader_rng, seed + 2000);
    digits_cnn_init(m, &init_rng);
    tt_params params;
    tt_params_init(&params);
    tt_module_params(tt_nn_sequential_module(&m->seq), &params, NULL);
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(LR));
    tt_optim_add_group(&opt, &params, WEIGHT_DECAY);
    tt_dataset *ds = tt_tensor_dataset(2, (tt_tensor *[]){d->x_train, d->y_train});
    tt_dataloader *dl = tt_dataloader_new(
        ds, &(tt_dataloader_opts){.batch_size = BATCH, .shuffle = true, .prefetch = prefetch},
        &loader_rng);
    ck_assert_int_eq(tt_dataloader_len(dl), N_BATCHES);
    for (int e = 0; e < epochs; e++) loss[e] = train_epoch(m, dl, &opt, e == 0 ? first : NULL);
    tt_dataloader_free(dl);
    tt_dataset_destroy(ds);
    tt_optim_free(&opt);
    tt_params_free(&params);
}

// ---- the milestone ----

START_TEST(test_digits_cnn_milestone) {
    uint64_t seed = digits_seed();
    tt_rng data_rng;
    tt_rng_seed(&data_rng, seed);
    digits_split d;
    digits_split_load(&d, &data_rng);

    // Training: the first batch's loss is near log 10 (an untrained classifier), the last
    // epoch's mean far below it.
    digits_cnn m;
    double first = 0, loss[EPOCHS];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    train_digits(&m, &d, seed, EPOCHS, true, &first, loss);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double train_ms =
        (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ck_assert_msg(first > 1.8 && first < 3.0, "first batch loss %.4f, want near log 10", first);
    ck_assert_msg(loss[EPOCHS - 1] < 0.1, "last epoch's loss %.4f >= 0.1", loss[EPOCHS - 1]);
    ck_assert_msg(loss[EPOCHS - 1] < loss[0] / 4, "loss %.4f -> %.4f", loss[0],
                  loss[EPOCHS - 1]);
    tt_module model = tt_nn_sequential_module(&m.seq);
    tt_params params;
    tt_params_init(&params);
    tt_module_params(model, &params, NULL);
    ck_assert_int_eq(params.n, 10);  // 2 convs, 2 batch norms, the linear: weight and bias
    int64_t n_params = 0;
    for (int i = 0; i < params.n; i++) n_params += tt_numel(params.items[i].tensor);
    ck_assert_int_eq(n_params, 1946);
    tt_params_free(&params);
    ck_assert_int_eq((int64_t)tt_item(m.bn1.num_batches_tracked), EPOCHS * N_BATCHES);

    // Eval: the running stats. The test accuracy, and eval leaves the state alone.
    tt_params state;
    tt_params_init(&state);
    tt_module_state(model, &state, NULL);
    ck_assert_int_eq(state.n, 16);  // + running_mean, running_var, num_batches_tracked twice
    tt_module_train(model, false);
    uint64_t fp = tt_params_fingerprint(&state);
    tt_tensor *logits = logits_of(&m, d.x_test);
    double acc = accuracy(logits, d.y_test);
    double train_acc = 0;
    {
        tt_tensor *lt = logits_of(&m, d.x_train);
        train_acc = accuracy(lt, d.y_train);
        tt_release(lt);
    }
    ck_assert_uint_eq(tt_params_fingerprint(&state), fp);
    printf("digits cnn: seed %llu, %d epochs, loss %.4f -> %.4f, train_accuracy=%.4f "
           "test_accuracy=%.4f train_ms=%.0f\n",
           (unsigned long long)seed, EPOCHS, loss[0], loss[EPOCHS - 1], train_acc, acc, train_ms);
    ck_assert_msg(acc >= 0.95, "test accuracy %.4f < 0.95 (seed %llu)", acc,
                  (unsigned long long)seed);

    // Dynamic int8 quantization of the trained model (its Linear; convolutions stay f32):
    // test accuracy within 0.01 of f32, and dequantizing gives the f32 logits back bitwise.
    ck_assert_int_eq(tt_quantize_dynamic(model), 1);
    tt_tensor *logits_q = logits_of(&m, d.x_test);
    double acc_q = accuracy(logits_q, d.y_test);
    printf("digits cnn int8: test_accuracy=%.4f (f32 %.4f)\n", acc_q, acc);
    ck_assert_msg(fabs(acc_q - acc) <= 0.01, "int8 test accuracy %.4f, f32 %.4f", acc_q, acc);
    ck_assert_msg(!same_bits(logits_q, logits), "the int8 logits equal the f32 ones");
    tt_release(logits_q);
    ck_assert_int_eq(tt_dequantize_model(model), 1);
    logits_q = logits_of(&m, d.x_test);
    ck_assert(same_bits(logits_q, logits));
    tt_release(logits_q);
    // Static int8: the Linear's input range calibrated on the first 256 training images
    // (MinMaxObserver), then fixed: test accuracy within 0.01 of dynamic int8.
    ck_assert_int_eq(tt_quantize_static_prepare(model), 1);
    tt_tensor *calib = tt_narrow(d.x_train, 0, 0, 256);
    tt_release(logits_of(&m, calib));
    tt_release(calib);
    ck_assert_int_eq(tt_quantize_static_convert(model), 1);
    logits_q = logits_of(&m, d.x_test);
    double acc_s = accuracy(logits_q, d.y_test);
    printf("digits cnn static int8: test_accuracy=%.4f (dynamic %.4f)\n", acc_s, acc_q);
    ck_assert_msg(fabs(acc_s - acc_q) <= 0.01, "static int8 accuracy %.4f, dynamic %.4f", acc_s,
                  acc_q);
    tt_release(logits_q);
    ck_assert_int_eq(tt_dequantize_model(model), 1);

    // A sample's eval logits do not depend on the rest of its batch: the first 7 test images
    // alone give the same logits as inside the 360 (up to the GEMM's summation order).
    {
        tt_scope_begin();
        tt_tensor *few = tt_contiguous(tt_narrow(d.x_test, 0, 0, 7));
        tt_tensor *alone = logits_of(&m, few);  // owned by this scope
        tt_tensor *inside = tt_contiguous(tt_narrow(logits, 0, 0, 7));
        ck_assert_msg(max_abs_diff(alone, inside) < 1e-4, "eval logits depend on the batch: %g",
                      max_abs_diff(alone, inside));
        tt_scope_end();
    }

    // A checkpoint of the state (parameters and running stats) into a fresh model: before the
    // restore it is near chance, after it the eval logits are bitwise the same.
    char dir[128], path[192];
    tt_test_mkdtemp(dir, sizeof dir, "digits");
    snprintf(path, sizeof path, "%s/digits.ckpt", dir);
    tt_checkpoint ck, in;
    tt_ckpt_init(&ck);
    tt_ckpt_add_params(&ck, "model.", &state);
    ck_assert_int_eq(tt_ckpt_save(&ck, path), TT_OK);

    tt_rng other;
    tt_rng_seed(&other, seed + 3000);
    digits_cnn fresh;
    digits_cnn_init(&fresh, &other);
    tt_module fresh_model = tt_nn_sequential_module(&fresh.seq);
    tt_module_train(fresh_model, false);
    tt_params fresh_state;
    tt_params_init(&fresh_state);
    tt_module_state(fresh_model, &fresh_state, NULL);
    tt_tensor *untrained = logits_of(&fresh, d.x_test);
    ck_assert_msg(accuracy(untrained, d.y_test) < 0.5, "an untrained model scores %.4f",
                  accuracy(untrained, d.y_test));
    tt_release(untrained);
    ck_assert_int_eq(tt_ckpt_load(&in, path), TT_OK);
    ck_assert_msg(tt_ckpt_restore_params(&in, "model.", &fresh_state) == TT_OK, "%s",
                  tt_last_error());
    ck_assert_uint_eq(tt_params_fingerprint(&fresh_state), fp);
    tt_tensor *restored = logits_of(&fresh, d.x_test);
    ck_assert(same_bits(restored, logits));
    ck_assert_double_eq(accuracy(restored, d.y_test), acc);

    // Train mode normalises with the batch's statistics: other logits, and one more batch
    // counted in the running stats.
    tt_module_train(fresh_model, true);
    tt_tensor *batch_stats = logits_of(&fresh, d.x_test);
    double diff = max_abs_diff(batch_stats, logits);
    ck_assert_msg(diff > 1e-3, "train-mode logits equal eval-mode ones (max diff %g)", diff);
    ck_assert_int_eq((int64_t)tt_item(fresh.bn1.num_batches_tracked),
                     EPOCHS * N_BATCHES + 1);
    ck_assert_uint_ne(tt_params_fingerprint(&fresh_state), fp);

    tt_release(batch_stats);
    tt_release(restored);
    tt_release(logits);
    tt_ckpt_free(&in);
    tt_ckpt_free(&ck);
    tt_test_rmdir(dir);
    tt_params_free(&fresh_state);
    digits_cnn_free(&fresh);
    tt_params_free(&state);
    digits_cnn_free(&m);
    digits_split_free(&d);
}
END_TEST

// The split is a partition: 360 + 1,437 distinct images, every class in both parts.
START_TEST(test_digits_split_partition) {
    tt_rng rng;
    tt_rng_seed(&rng, digits_seed());
    digits_split d;
    digits_split_load(&d, &rng);
    ck_assert_int_eq(d.x_test->shape[0], N_TEST);
    ck_assert_int_eq(d.x_train->shape[0], N_TRAIN);
    int64_t count[2][N_CLASSES] = {{0}};
    const int64_t *yt = tt_data(d.y_test), *yr = tt_data(d.y_train);
    for (int64_t i = 0; i < N_TEST; i++) count[0][yt[i]]++;
    for (int64_t i = 0; i < N_TRAIN; i++) count[1][yr[i]]++;
    const int64_t hist[N_CLASSES] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
    for (int k = 0; k < N_CLASSES; k++) {
        ck_assert_int_eq(count[0][k] + count[1][k], hist[k]);
        ck_assert_int_gt(count[0][k], 20);
    }
    // together they hold every image once: the pixel sums add up to the full set's / 16
    double sum = 0;
    const float *a = tt_data(d.x_test), *b = tt_data(d.x_train);
    for (int64_t i = 0; i < N_TEST * 64; i++) sum += a[i];
    for (int64_t i = 0; i < N_TRAIN * 64; i++) sum += b[i];
    ck_assert_double_eq_tol(sum, 561718.0 / 16, 1e-6);
    digits_split_free(&d);
}
END_TEST

// Training is a function of the seed alone: with the prefetch thread or without it, on 1 or 2
// threads, two epochs end in bitwise the same state (parameters and running stats).
START_TEST(test_digits_training_deterministic) {
    uint64_t seed = digits_seed();
    tt_rng data_rng;
    tt_rng_seed(&data_rng, seed);
    digits_split d;
    digits_split_load(&d, &data_rng);
    int threads = tt_get_num_threads();
    uint64_t fp[2];
    double loss[2][2], first[2];
    for (int run = 0; run < 2; run++) {
        tt_set_num_threads(run == 0 ? 1 : 2);
        digits_cnn m;
        train_digits(&m, &d, seed, 2, run == 0, &first[run], loss[run]);
        tt_params state;
        tt_params_init(&state);
        tt_module_state(tt_nn_sequential_module(&m.seq), &state, NULL);
        fp[run] = tt_params_fingerprint(&state);
        tt_params_free(&state);
        digits_cnn_free(&m);
    }
    tt_set_num_threads(threads);
    ck_assert_uint_eq(fp[0], fp[1]);
    ck_assert(first[0] == first[1] && loss[0][1] == loss[1][1]);
    digits_split_free(&d);
}
END_TEST

int main(void) {
    Suite *s = suite_create("milestone_digits");
    TCase *tc = tt_tcase("digits_cnn");
    tcase_add_test(tc, test_digits_split_partition);
    tcase_add_test(tc, test_digits_cnn_milestone);
    tcase_add_test(tc, test_digits_training_deterministic);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}
