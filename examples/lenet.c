// lenet: a LeNet-style CNN (conv-relu-pool, conv-relu-pool, three linear layers; batch norm
// after each conv with --bn) trained on Fashion-MNIST with AdamW, the batches from a shuffling
// DataLoader (random crop and flip with --augment); evaluates on the 10,000 test images each
// epoch and checkpoints (model state with the batch-norm buffers, AdamW state, rng, epoch)
// for an exact --resume. --eval FILE evaluates a checkpoint instead; --quantize int8 adds the
// test figures with the Linears int8 (tt_quantize_dynamic: convolutions stay f32), --quantize
// static those with activation ranges calibrated on 1,000 training images.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tinytorch.h"
#include "models/lenet/lenet.h"

static const char usage[] =
    "usage: lenet [--epochs N] [--batch N] [--lr F] [--seed N] [--threads N] [--limit N]\n"
    "             [--bn] [--augment] [--out FILE] [--resume FILE] [--data DIR]\n"
    "             [--eval FILE] [--quantize int8|static|f32]\n"
    "Defaults: 10 epochs, batch 128, lr 0.002, seed 1, out/lenet.ckpt (written each epoch),\n"
    "the data in " TT_FASHION_MNIST_DIR ". --limit N uses the first N train and test images.\n"
    "--bn puts BatchNorm2d after each conv; --augment pads by 2, crops 28 x 28 at random and\n"
    "flips half the training images. --resume FILE continues to --epochs with FILE's batch,\n"
    "limit, lr, --bn and --augment (those flags are ignored then), exactly as the\n"
    "uninterrupted run. --eval FILE evaluates FILE's model on the test images (no training);\n"
    "--quantize int8 also evaluates it with its Linears int8 (dynamic quantization: per-channel\n"
    "int8 weights, activations quantized per row at run time; the convolutions stay f32);\n"
    "--quantize static also with each Linear's input range calibrated on the first 1,000\n"
    "training images and fixed (static quantization).\n";

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("lenet: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

// --quantize: f32 only, also dynamic int8, also static int8.
typedef enum quant_mode { Q_F32, Q_INT8, Q_STATIC } quant_mode;

// ---- data ----

// A split as (N, 1, 28, 28) normalized images (x / 255 - mean) / std and (N,) labels, the
// first limit of them when limit > 0.
static void load_split(const char *dir, bool train, int64_t limit, tt_tensor **x, tt_tensor **y) {
    tt_tensor *img, *lab;
    if (tt_fashion_mnist_load(dir, train, &img, &lab) != TT_OK) die("%s", tt_last_error());
    if (tt_numel(lab) == 0)  // nothing to train on or to average over: refused before any work
        die("--data '%s': its %s split holds no images; pass a directory whose %s files hold "
            "some", dir ? dir : TT_FASHION_MNIST_DIR, train ? "train" : "test",
            train ? "train-*-ubyte" : "t10k-*-ubyte");
    int64_t n = limit > 0 && limit < tt_numel(lab) ? limit : tt_numel(lab);
    tt_scope_begin();
    tt_tensor *s = tt_mul_scalar(tt_narrow(img, 0, 0, n), 1.0 / (255.0 * 0.3530));
    *x = tt_keep(tt_contiguous(tt_reshape(tt_add_scalar(s, -0.2860 / 0.3530),
                                          TT_SHAPE(n, 1, 28, 28))));
    *y = tt_keep(tt_contiguous(tt_narrow(lab, 0, 0, n)));
    tt_scope_end();
    tt_release(img);
    tt_release(lab);
}

// Mean cross-entropy and accuracy over a split, in batches of 1000, no grad, in eval mode
// (batch norm on its running statistics).
static void evaluate(tt_lenet *m, tt_tensor *x, tt_tensor *y, double *loss, double *acc) {
    bool prev = tt_set_grad_enabled(false);
    tt_lenet_train(m, false);
    int64_t n = tt_numel(y);
    double ls = 0, hits = 0;
    for (int64_t s = 0; s < n; s += 1000) {
        int64_t b = n - s < 1000 ? n - s : 1000;
        tt_scope_begin();
        tt_tensor *yb = tt_narrow(y, 0, s, b);
        tt_tensor *logits = tt_lenet_forward(m, tt_narrow(x, 0, s, b));
        ls += tt_item(tt_cross_entropy(logits, yb, -1)) * (double)b;
        hits += tt_item(tt_sum_all(tt_to_dtype(tt_eq(tt_argmax(logits, -1, false), yb), TT_F32)));
        tt_scope_end();
    }
    tt_lenet_train(m, true);
    tt_set_grad_enabled(prev);
    *loss = ls / (double)n;
    *acc = hits / (double)n;
}

// The bytes the three Linears' weights and biases take: f32, or their quantized format's.
static int64_t linear_bytes(const tt_lenet *m) {
    const tt_nn_linear *fc[] = {&m->f1, &m->f2, &m->f3};
    int64_t bytes = 0;
    for (int i = 0; i < 3; i++)
        bytes += tt_nn_linear_quantization(fc[i]) != TT_QUANT_NONE
                     ? tt_nn_linear_quantized_bytes(fc[i])
                     : 4 * (tt_numel(fc[i]->weight) + tt_numel(fc[i]->bias));
    return bytes;
}

// evaluate, timed, printed on one line under the name what.
static void report(tt_lenet *m, tt_tensor *x, tt_tensor *y, const char *what) {
    struct timespec t0, t1;
    double loss, acc;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    evaluate(m, x, y, &loss, &acc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = 1e3 * (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (t1.tv_nsec - t0.tv_nsec);
    printf("%-6s test_loss=%.4f test_accuracy=%.4f linear_bytes=%lld eval_ms=%.1f\n", what, loss,
           acc, (long long)linear_bytes(m), ms);
    fflush(stdout);
}

// The f32 figures; with --quantize int8 or static, the dynamic int8 ones (the Linears
// quantized, then back); with static, also those calibrated on calib (N, 1, 28, 28).
static void report_int8(tt_lenet *m, tt_tensor *x, tt_tensor *y, quant_mode quantize,
                        tt_tensor *calib) {
    tt_module seq = tt_lenet_module(m);
    report(m, x, y, "f32");
    if (quantize == Q_F32) return;
    tt_quantize_dynamic(seq);
    report(m, x, y, "int8");
    tt_dequantize_model(seq);
    if (quantize != Q_STATIC) return;
    tt_quantize_static_prepare(seq);
    bool prev = tt_set_grad_enabled(false);
    tt_lenet_train(m, false);
    tt_scope_begin();
    tt_lenet_forward(m, calib);  // the observers record the ranges
    tt_scope_end();
    tt_lenet_train(m, true);
    tt_set_grad_enabled(prev);
    tt_quantize_static_convert(seq);
    report(m, x, y, "static");
    tt_dequantize_model(seq);
}

// ---- command line and checkpoints ----

typedef struct flags {
    int64_t epochs, batch, seed, threads, limit;
    bool bn, augment;
    quant_mode quantize;
    double lr;
    const char *out, *resume, *data, *eval;
} flags;

static int64_t int_flag(const char *name, const char *v, int64_t lo, int64_t hi) {
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || *end || end == v || n < lo || n > hi)
        die("%s '%s' is not an integer in [%lld, %lld]", name, v, (long long)lo, (long long)hi);
    return n;
}

static void parse(int argc, char **argv, flags *f) {
    *f = (flags){.epochs = 10, .batch = 128, .seed = 1, .lr = 2e-3, .out = "out/lenet.ckpt"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            exit(0);
        }
        if (!strcmp(a, "--bn") || !strcmp(a, "--augment")) {
            *(a[2] == 'b' ? &f->bn : &f->augment) = true;
            continue;
        }
        if (!v) die("%s needs a value (lenet --help lists the flags)", a);
        i++;
        char *end;
        if (!strcmp(a, "--epochs")) f->epochs = int_flag(a, v, 1, 1000);
        else if (!strcmp(a, "--batch")) f->batch = int_flag(a, v, 1, 60000);
        else if (!strcmp(a, "--seed")) f->seed = int_flag(a, v, 0, INT64_MAX);
        else if (!strcmp(a, "--threads")) f->threads = int_flag(a, v, 1, 1024);
        else if (!strcmp(a, "--limit")) f->limit = int_flag(a, v, 1, 60000);
        else if (!strcmp(a, "--out")) f->out = v;
        else if (!strcmp(a, "--resume")) f->resume = v;
        else if (!strcmp(a, "--data")) f->data = v;
        else if (!strcmp(a, "--eval")) f->eval = v;
        else if (!strcmp(a, "--quantize")) {
            if (!strcmp(v, "int8")) f->quantize = Q_INT8;
            else if (!strcmp(v, "static")) f->quantize = Q_STATIC;
            else if (!strcmp(v, "f32")) f->quantize = Q_F32;
            else die("--quantize '%s' is not int8, static or f32", v);
        }
        else if (!strcmp(a, "--lr")) {
            f->lr = strtod(v, &end);
            if (*end || end == v || !(f->lr > 0 && f->lr < 1)) die("--lr '%s' is not in (0, 1)", v);
        } else die("unknown flag '%s' (lenet --help lists the flags)", a);
    }
}

// What a checkpoint of the run holds besides the trainer's optimizer: the run's flags, the
// model state, the rng and the epoch.
typedef struct run {
    const flags *f;
    tt_lenet *m;
    const tt_rng *rng;
    int64_t epoch;  // epochs done
} run;

// The checkpoint of the run (tt_trainer_save writes it to --out).
static void fill(tt_checkpoint *ck, const tt_trainer *tr, void *ctx) {
    const run *r = ctx;
    tt_ckpt_add_params(ck, "model.", &r->m->state);
    tt_trainer_ckpt_fill_optim(tr, ck);
    tt_ckpt_set_bytes(ck, "rng", r->rng->s, sizeof r->rng->s);
    tt_ckpt_set_i64(ck, "epoch", r->epoch);
    tt_ckpt_set_i64(ck, "batch", r->f->batch);
    tt_ckpt_set_i64(ck, "limit", r->f->limit);
    tt_ckpt_set_f64(ck, "lr", r->f->lr);
    tt_ckpt_set_i64(ck, "bn", r->f->bn);
    tt_ckpt_set_i64(ck, "augment", r->f->augment);
}

// The run's flags stored in f->resume's checkpoint ck (loaded here): batch, limit, lr, bn
// and augment replace the command line's, so the model is built as it was saved.
static void resume_flags(flags *f, tt_checkpoint *ck) {
    int64_t bn, augment;
    if (tt_ckpt_load(ck, f->resume) != TT_OK) die("%s", tt_last_error());
    if (!tt_ckpt_get_i64(ck, "bn", &bn) || !tt_ckpt_get_i64(ck, "augment", &augment))
        die("--resume '%s' is not a lenet checkpoint; pass a file lenet --out wrote", f->resume);
    f->bn = bn != 0;
    f->augment = augment != 0;
}

// Restores the model state, the optimizer, the rng and the epoch from ck (freed here); the
// run's batch, limit and lr come from the file.
static int64_t restore(flags *f, tt_checkpoint *ck, tt_lenet *m, tt_optim *o, tt_rng *rng) {
    const unsigned char *b;
    size_t n;
    int64_t epoch, step;
    tt_params s;
    tt_params_init(&s);
    tt_optim_state(o, &s);
    bool ok = tt_ckpt_restore_params(ck, "model.", &m->state) == TT_OK &&
              tt_ckpt_restore_params(ck, "optim.", &s) == TT_OK &&
              tt_ckpt_get_i64(ck, "optim.step", &step) && tt_ckpt_get_i64(ck, "epoch", &epoch) &&
              tt_ckpt_get_i64(ck, "batch", &f->batch) &&
              tt_ckpt_get_i64(ck, "limit", &f->limit) && tt_ckpt_get_f64(ck, "lr", &f->lr) &&
              tt_ckpt_get_bytes(ck, "rng", &b, &n) && n == sizeof rng->s && f->batch >= 1 &&
              f->limit >= 0 && f->lr > 0 && f->lr < 1 && epoch >= 0 && step >= 0;
    tt_params_free(&s);
    if (ok) memcpy(rng->s, b, n);
    tt_ckpt_free(ck);
    if (!ok) die("--resume '%s' is not a lenet checkpoint of this model; pass a file lenet "
                 "--out wrote", f->resume);
    o->step = step;
    return epoch;
}

// --eval FILE: FILE's model (its --bn from the file) on the test images.
static void eval_checkpoint(const flags *f) {
    tt_checkpoint ck;
    int64_t bn;
    if (tt_ckpt_load(&ck, f->eval) != TT_OK) die("%s", tt_last_error());
    if (!tt_ckpt_get_i64(&ck, "bn", &bn))
        die("--eval '%s' is not a lenet checkpoint; pass a file lenet --out wrote", f->eval);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_lenet m;
    tt_lenet_init(&m, bn != 0, &rng);
    if (tt_ckpt_restore_params(&ck, "model.", &m.state) != TT_OK)
        die("--eval '%s' is not a lenet checkpoint of this model (%s)", f->eval, tt_last_error());
    tt_ckpt_free(&ck);
    tt_tensor *x, *y, *cx = NULL, *cy = NULL;
    load_split(f->data, false, f->limit, &x, &y);
    if (f->quantize == Q_STATIC) load_split(f->data, true, 1000, &cx, &cy);
    report_int8(&m, x, y, f->quantize, cx);
    tt_release(x);
    tt_release(y);
    tt_release(cx);
    tt_release(cy);
    tt_lenet_free(&m);
}

// A failed allocation: one line and exit 1, not an abort.
static void on_oom(const char *message, void *ctx) {
    (void)ctx;
    fprintf(stderr, "lenet: %s; use a smaller --batch or free memory\n", message);
    exit(1);
}

int main(int argc, char **argv) {
    tt_set_oom_hook(on_oom, NULL);
    flags f;
    parse(argc, argv, &f);
    if (f.threads) tt_set_num_threads((int)f.threads);
    if (f.eval) {
        eval_checkpoint(&f);
        return 0;
    }
    tt_checkpoint ck;
    if (f.resume) resume_flags(&f, &ck);
    tt_rng rng;
    tt_rng_seed(&rng, (uint64_t)f.seed);
    tt_lenet m;
    tt_lenet_init(&m, f.bn, &rng);
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(f.lr));
    tt_optim_add_decay_groups(&opt, &m.params, 1e-4);
    int64_t epoch = f.resume ? restore(&f, &ck, &m, &opt, &rng) : 0;
    tt_optim_set_lr(&opt, f.lr);
    if (epoch >= f.epochs) die("--resume '%s' is at epoch %lld already; pass a larger --epochs",
                               f.resume, (long long)epoch);
    const char *slash = strrchr(f.out, '/');  // out/ of the default --out may not exist yet
    if (slash && slash != f.out) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - f.out), f.out);
        mkdir(dir, 0777);
    }
    tt_tensor *xtr, *ytr, *xte, *yte;
    load_split(f.data, true, f.limit, &xtr, &ytr);
    load_split(f.data, false, f.limit, &xte, &yte);
    int64_t n = tt_numel(ytr);
    // torchvision's RandomCrop(28, padding=2) then RandomHorizontalFlip(), on normalized images:
    // the padding is the normalized value of a black pixel.
    tt_transform *aug = !f.augment ? NULL : tt_compose(2, (tt_transform *[]){
        tt_random_crop(28, 28, 2, -0.2860 / 0.3530), tt_random_horizontal_flip(0.5)});
    tt_dataset *train = tt_tensor_dataset(2, (tt_tensor *[]){xtr, ytr});
    tt_dataloader *loader = tt_dataloader_new(train, &(tt_dataloader_opts){
        .batch_size = f.batch, .shuffle = true, .transform = aug, .prefetch = true}, &rng);
    run r = {&f, &m, &rng, epoch};
    tt_trainer_opts to = tt_trainer_opts_default();  // one step per batch, no clip, no schedule
    to.out = f.out;
    to.fill = fill;
    to.ctx = &r;
    tt_trainer tr;
    if (tt_trainer_init(&tr, &to, &m.params, &opt, NULL) != TT_OK) die("%s", tt_last_error());
    tr.step = opt.step;
    double test_loss = 0, acc = 0;
    while (r.epoch < f.epochs) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tt_dataloader_begin_epoch(loader);  // a new order (and crops) from rng every epoch
        double loss_sum = 0;
        tt_tensor *xb, *yb;  // (B, 1, 28, 28) f32 and (B,) i64
        while (tt_dataloader_next(loader, &xb, &yb)) {
            tt_scope_begin();
            tt_trainer_backward(&tr, tt_cross_entropy(tt_lenet_forward(&m, xb), yb, -1));
            tt_scope_end();
            if (!tt_trainer_step(&tr)) die("%s", tt_last_error());  // a NaN loss stops here
            loss_sum += tr.loss * (double)tt_numel(yb);
            tt_release(xb);
            tt_release(yb);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = 1e3 * (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (t1.tv_nsec - t0.tv_nsec);
        evaluate(&m, xte, yte, &test_loss, &acc);
        r.epoch++;
        printf("epoch %lld train_loss=%.4f test_loss=%.4f test_accuracy=%.4f "
               "ms_per_epoch=%.1f\n", (long long)r.epoch, loss_sum / (double)n, test_loss, acc,
               ms);
        fflush(stdout);
        if (tt_trainer_save(&tr, false) != TT_OK) die("%s; pick a writable --out", tt_last_error());
    }
    printf("done test_accuracy=%.4f\n", acc);
    if (f.quantize != Q_F32) {
        tt_tensor *calib = tt_narrow(xtr, 0, 0, n < 1000 ? n : 1000);
        report_int8(&m, xte, yte, f.quantize, calib);
        tt_release(calib);
    }

    tt_trainer_free(&tr);
    tt_dataloader_free(loader);
    tt_dataset_destroy(train);
    tt_transform_destroy(aug);
    tt_optim_free(&opt);
    tt_lenet_free(&m);
    tt_release(xtr);
    tt_release(ytr);
    tt_release(xte);
    tt_release(yte);
    return 0;
}
