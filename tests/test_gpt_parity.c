// PyTorch parity of the GPT: loads the reference files written by
// tests/reference/gen_gpt_reference.py (format in tests/reference/README.md) into our model and
// compares logits, loss, every parameter gradient and the losses of 10 AdamW steps, in f32;
// and the same model under bf16 autocast (gpt_<config>_bf16.bin).
// Needs no Python: the reference files are committed. TT_REF_DIR overrides their directory.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "models/gpt/gpt.h"
#include "models/gpt/gpt.h"
#include "optim/optim.h"

// Tolerances of the issue: logits abs, loss abs, gradient abs + rel, AdamW losses abs.
#define TOL_LOGITS 1e-4
#define TOL_LOSS 1e-5
#define TOL_GRAD_ABS 1e-5
#define TOL_GRAD_REL 1e-3
#define TOL_STEP_LOSS 1e-4
// Informative: the pre-clip gradient norms of the AdamW steps, relative.
#define TOL_GRAD_NORM_REL 1e-3

// ---- reader ----
// "TTREF001", u32 count, then per entry: u32 name length, name bytes, u32 dtype (tt_dtype
// values: 0 f32, 1 f64, 2 i32, 3 i64), u32 ndim, i64 shape[ndim], the row-major data
// (little-endian). Every field is checked against the file size before it is used.

#define REF_MAX_ENTRIES 4096

typedef struct ref_entry {
    char name[TT_NAME_MAX];
    tt_dtype dtype;
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    int64_t numel;
    const unsigned char *data;
    bool used;
} ref_entry;

typedef struct ref_file {
    unsigned char *buf;
    size_t size;
    ref_entry *e;
    int n;
} ref_file;

static bool rd(const ref_file *f, size_t *pos, void *out, size_t n) {
    if (n > f->size - *pos) return false;
    memcpy(out, f->buf + *pos, n);
    *pos += n;
    return true;
}

static uint32_t le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static int64_t le64(const unsigned char *b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
    return (int64_t)v;
}

static bool rd_u32(const ref_file *f, size_t *pos, uint32_t *v) {
    unsigned char b[4];
    if (!rd(f, pos, b, 4)) return false;
    *v = le32(b);
    return true;
}

// Returns NULL, or what is wrong with the file.
static const char *ref_load(ref_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return "cannot open the file (run from the repo root, or set TT_REF_DIR)";
    if (fseek(fp, 0, SEEK_END) != 0) return fclose(fp), "cannot seek";
    long sz = ftell(fp);
    if (sz < 12 || fseek(fp, 0, SEEK_SET) != 0) return fclose(fp), "file too short";
    f->size = (size_t)sz;
    f->buf = malloc(f->size);
    bool ok = f->buf && fread(f->buf, 1, f->size, fp) == f->size;
    fclose(fp);
    if (!ok) return "read failed";
    if (memcmp(f->buf, "TTREF001", 8) != 0) return "bad magic (expected TTREF001)";
    size_t pos = 8;
    uint32_t count;
    if (!rd_u32(f, &pos, &count) || count > REF_MAX_ENTRIES) return "bad entry count";
    f->e = calloc(count ? count : 1, sizeof *f->e);
    if (!f->e) return "out of memory";
    for (uint32_t k = 0; k < count; k++) {
        ref_entry *e = &f->e[k];
        uint32_t len, dtype, ndim;
        if (!rd_u32(f, &pos, &len) || len == 0 || len >= TT_NAME_MAX) return "bad name length";
        if (!rd(f, &pos, e->name, len)) return "truncated name";
        e->name[len] = '\0';
        if (strlen(e->name) != len) return "NUL in a name";
        if (!rd_u32(f, &pos, &dtype) || dtype >= TT_DTYPE_COUNT) return "bad dtype";
        if (!rd_u32(f, &pos, &ndim) || ndim > TT_MAX_DIMS) return "bad ndim";
        e->dtype = (tt_dtype)dtype;
        e->ndim = (int)ndim;
        e->numel = 1;
        for (uint32_t d = 0; d < ndim; d++) {
            unsigned char b[8];
            if (!rd(f, &pos, b, 8)) return "truncated shape";
            e->shape[d] = le64(b);
            if (e->shape[d] < 0 || e->shape[d] > (1 << 24)) return "bad dim";
            e->numel *= e->shape[d];
            if (e->numel > (1 << 26)) return "entry too large";
        }
        size_t nbytes = (size_t)e->numel * tt_dtype_size(e->dtype);
        if (nbytes > f->size - pos) return "truncated data";
        e->data = f->buf + pos;
        pos += nbytes;
        for (uint32_t j = 0; j < k; j++)
            if (strcmp(f->e[j].name, e->name) == 0) return "duplicate entry name";
        f->n = (int)k + 1;
    }
    if (pos != f->size) return "trailing bytes after the last entry";
    return NULL;
}

static void ref_free(ref_file *f) {
    free(f->buf);
    free(f->e);
    memset(f, 0, sizeof *f);
}

static ref_entry *ref_find(ref_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->e[i].name, name) == 0) return &f->e[i];
    return NULL;
}

static ref_entry *ref_need(ref_file *f, const char *name) {
    ref_entry *e = ref_find(f, name);
    ck_assert_msg(e, "reference entry '%s' is missing", name);
    e->used = true;
    return e;
}

// A new tensor (owned by the current scope) holding the entry's values (the data may be
// unaligned in the buffer, so it is copied first).
static tt_tensor *ref_tensor(const ref_entry *e) {
    tt_tensor *t = tt_empty(e->dtype, e->ndim, e->shape);
    memcpy(tt_data(t), e->data, (size_t)e->numel * tt_dtype_size(e->dtype));
    return t;
}

static double ref_scalar(ref_file *f, const char *name) {
    ref_entry *e = ref_need(f, name);
    ck_assert_msg(e->numel == 1, "'%s' must be a scalar", name);
    tt_scope_begin();
    double v = tt_item(ref_tensor(e));
    tt_scope_end();
    return v;
}

// ---- comparison ----

static void assert_same_shape(const tt_tensor *t, const ref_entry *e) {
    bool same = t->ndim == e->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == e->shape[d];
    char ours[128], ref[128] = "(";
    for (int d = 0; d < e->ndim; d++)
        snprintf(ref + strlen(ref), sizeof ref - strlen(ref), d ? ", %lld" : "%lld",
                 (long long)e->shape[d]);
    ck_assert_msg(same, "'%s': our shape %s differs from the reference's %s)", e->name,
                  tt_shape_str(t, ours, sizeof ours), ref);
}

// max |a - r| and the largest |a - r| / (atol + rtol |r|) (<= 1 passes).
static void compare(const tt_tensor *ours, const ref_entry *e, double atol, double rtol,
                    double *max_abs, double *worst_ratio) {
    assert_same_shape(ours, e);
    tt_scope_begin();
    tt_tensor *ref = ref_tensor(e);
    for (int64_t i = 0; i < e->numel; i++) {
        double a = tt_at(ours, i), r = tt_at(ref, i), d = fabs(a - r);
        double ratio = d / (atol + rtol * fabs(r));
        if (!(d <= *max_abs)) *max_abs = d;  // NaN propagates
        if (!(ratio <= *worst_ratio)) *worst_ratio = ratio;
    }
    tt_scope_end();
}

// ---- the parity run ----

static const char *const configs[] = {"default", "modern"};

static tt_gpt_config config_from(ref_file *f) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = (int64_t)ref_scalar(f, "config.vocab_size");
    c.block_size = (int64_t)ref_scalar(f, "config.block_size");
    c.n_layer = (int64_t)ref_scalar(f, "config.n_layer");
    c.n_head = (int64_t)ref_scalar(f, "config.n_head");
    c.n_kv_head = (int64_t)ref_scalar(f, "config.n_kv_head");
    c.n_embd = (int64_t)ref_scalar(f, "config.n_embd");
    c.bias = ref_scalar(f, "config.bias") != 0;
    c.positional = ref_scalar(f, "config.rope") != 0 ? TT_POS_ROPE : TT_POS_LEARNED;
    c.norm = ref_scalar(f, "config.rmsnorm") != 0 ? TT_NORM_RMSNORM : TT_NORM_LAYERNORM;
    c.activation = ref_scalar(f, "config.relu2") != 0 ? TT_ACT_RELU2 : TT_ACT_GELU;
    c.tie_weights = ref_scalar(f, "config.tie_weights") != 0;
    c.qk_norm = ref_scalar(f, "config.qk_norm") != 0;
    c.dropout = 0.0;
    return c;
}

// Copies every "param.<name>" into our parameter of that name: each of ours must appear
// exactly once in the file and each of the file's exactly once in ours.
static void load_params(tt_gpt *m, ref_file *f) {
    char key[TT_NAME_MAX + 8];
    for (int i = 0; i < m->params.n; i++) {
        snprintf(key, sizeof key, "param.%s", m->params.items[i].name);
        ref_entry *e = ref_find(f, key);
        ck_assert_msg(e, "our parameter '%s' has no '%s' in the reference",
                      m->params.items[i].name, key);
        ck_assert_msg(!e->used, "'%s' matched twice", key);
        e->used = true;
        assert_same_shape(m->params.items[i].tensor, e);
        tt_scope_begin();
        tt_copy_(m->params.items[i].tensor, ref_tensor(e));
        tt_scope_end();
    }
    for (int i = 0; i < f->n; i++)
        ck_assert_msg(strncmp(f->e[i].name, "param.", 6) != 0 || f->e[i].used,
                      "reference parameter '%s' has no parameter of that name in our model",
                      f->e[i].name);
}

START_TEST(test_parity) {
    const char *cfg_name = configs[_i];
    const char *dir = getenv("TT_REF_DIR") ? getenv("TT_REF_DIR") : "tests/reference";
    char path[1024];
    snprintf(path, sizeof path, "%s/gpt_%s.bin", dir, cfg_name);
    ref_file f;
    const char *err = ref_load(&f, path);
    ck_assert_msg(!err, "%s: %s", path, err);

    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_dtype prev = tt_set_default_dtype(TT_F32);
    tt_gpt_config cfg = config_from(&f);
    tt_gpt m;
    ck_assert_msg(tt_gpt_init(&m, &cfg, &rng) == TT_OK, "%s", tt_last_error());
    tt_set_default_dtype(prev);
    tt_gpt_train(&m, true);
    load_params(&m, &f);

    tt_scope_begin();
    tt_tensor *x = ref_tensor(ref_need(&f, "tokens"));    // (B, T)
    tt_tensor *y = ref_tensor(ref_need(&f, "targets"));   // (B, T)

    // Forward and loss.
    double logits_err = 0, logits_ratio = 0;
    tt_tensor *logits = tt_gpt_forward(&m, x);            // (B, T, V)
    compare(logits, ref_need(&f, "logits"), TOL_LOGITS, 0, &logits_err, &logits_ratio);
    tt_tensor *loss = tt_gpt_loss(&m, x, y);
    double loss_err = fabs(tt_item(loss) - ref_scalar(&f, "loss"));

    // Gradients of every parameter.
    tt_backward(loss);
    double grad_err = 0, grad_ratio = 0;
    const char *worst_grad = "";
    char key[TT_NAME_MAX + 8];
    for (int i = 0; i < m.params.n; i++) {
        snprintf(key, sizeof key, "grad.%s", m.params.items[i].name);
        tt_tensor *g = tt_grad(m.params.items[i].tensor);
        ck_assert_msg(g, "'%s' got no gradient", m.params.items[i].name);
        double before = grad_ratio;
        compare(g, ref_need(&f, key), TOL_GRAD_ABS, TOL_GRAD_REL, &grad_err, &grad_ratio);
        if (grad_ratio > before) worst_grad = m.params.items[i].name;
    }
    tt_params_zero_grad(&m.params);

    // AdamW steps on the same batch, nanoGPT's groups, clipped: loss s after s updates.
    tt_optim_config oc = tt_adamw_config(ref_scalar(&f, "adamw.lr"));
    oc.beta1 = ref_scalar(&f, "adamw.beta1");
    oc.beta2 = ref_scalar(&f, "adamw.beta2");
    oc.eps = ref_scalar(&f, "adamw.eps");
    double clip = ref_scalar(&f, "adamw.clip");
    int steps = (int)ref_scalar(&f, "adamw.steps");
    tt_optim opt;
    tt_optim_init(&opt, oc);
    tt_optim_add_decay_groups(&opt, &m.params, ref_scalar(&f, "adamw.weight_decay"));
    ref_entry *ref_losses = ref_need(&f, "adamw.losses");
    ref_entry *ref_norms = ref_need(&f, "adamw.grad_norms");
    ck_assert_int_eq(ref_losses->numel, steps);
    ck_assert_int_eq(ref_norms->numel, steps);
    tt_tensor *rl = ref_tensor(ref_losses), *rn = ref_tensor(ref_norms);
    double step_err = 0, norm_rel = 0;
    for (int s = 0; s < steps; s++) {
        tt_scope_begin();
        tt_tensor *l = tt_gpt_loss(&m, x, y);
        step_err = fmax(step_err, fabs(tt_item(l) - tt_at(rl, s)));
        tt_backward(l);
        double norm = clip > 0 ? tt_clip_grad_norm(&m.params, clip) : tt_grad_norm(&m.params);
        norm_rel = fmax(norm_rel, fabs(norm - tt_at(rn, s)) / tt_at(rn, s));
        tt_optim_step(&opt);
        tt_optim_zero_grad(&opt);
        tt_scope_end();
    }
    tt_optim_free(&opt);
    tt_scope_end();

    printf("parity gpt %-7s logits max_abs_err=%.2e  loss abs_err=%.2e  grads max_abs_err=%.2e "
           "(worst %.1e of tolerance, %s)  adamw %d-step losses max_abs_err=%.2e  grad_norm "
           "max_rel_err=%.2e\n", cfg_name, logits_err, loss_err, grad_err, grad_ratio,
           worst_grad, steps, step_err, norm_rel);
    fflush(stdout);
    for (int i = 0; i < f.n; i++)
        ck_assert_msg(f.e[i].used || strncmp(f.e[i].name, "config.", 7) == 0,
                      "reference entry '%s' was not compared", f.e[i].name);
    tt_gpt_free(&m);
    ref_free(&f);

    ck_assert_msg(logits_err <= TOL_LOGITS, "%s: logits max abs err %.3e > %g", cfg_name,
                  logits_err, TOL_LOGITS);
    ck_assert_msg(loss_err <= TOL_LOSS, "%s: loss err %.3e > %g", cfg_name, loss_err, TOL_LOSS);
    ck_assert_msg(grad_ratio <= 1.0, "%s: gradient of %s off by %.2f x (%g + %g |ref|)",
                  cfg_name, worst_grad, grad_ratio, TOL_GRAD_ABS, TOL_GRAD_REL);
    ck_assert_msg(step_err <= TOL_STEP_LOSS, "%s: AdamW loss err %.3e > %g", cfg_name,
                  step_err, TOL_STEP_LOSS);
    ck_assert_msg(norm_rel <= TOL_GRAD_NORM_REL, "%s: gradient norm rel err %.3e > %g",
                  cfg_name, norm_rel, TOL_GRAD_NORM_REL);
}
END_TEST

// ---- bf16 autocast parity ----
// gpt_<config>_bf16.bin (gen_gpt_reference.py --autocast): the small GPT and batch of the f32
// files, with its forward under tt_autocast_begin(TT_PRECISION_BF16) here, against two
// references:
// - "emu.*": PyTorch in f32 with tinytorch's autocast emulated (each product's inputs, and in
//   the backward its incoming gradient, rounded to bf16; outputs f32; the fused attention's
//   products with bf16 inputs, its softmax statistics f32): the same arithmetic
//   but for the order of the f32 sums, so the f32 parity's tolerances (measured: within 6e-8
//   on logits, 2e-8 on gradients). Plain f32 must fail them (it is 12-23x off), so they prove
//   the switch works, forward and backward.
// - the plain names: PyTorch's own torch.autocast("cpu", dtype=torch.bfloat16), whose products
//   round the same inputs but which also rounds each product's output to bf16 and runs GELU,
//   the residual adds and attention's softmax on those: agreement to bf16 accuracy, not bit
//   for bit. (Measured with bf16 attention products: logits at 0.38 and 0.68 of tolerance,
//   gradients at 0.59 and 0.44, as with the f32 attention before.)
#define TOL_EMU_LOGITS 1e-4
#define TOL_EMU_LOSS 1e-5
#define TOL_EMU_GRAD_ABS 1e-5
#define TOL_EMU_GRAD_REL 1e-3
#define TOL_BF16_LOGITS_ABS 2e-3
#define TOL_BF16_LOGITS_REL 1e-2
#define TOL_BF16_LOSS 1e-3
#define TOL_BF16_GRAD_ABS 5e-4
#define TOL_BF16_GRAD_REL 3e-2

typedef struct parity_err {
    double logits, logits_ratio, loss, grad, grad_ratio;
    char worst[TT_NAME_MAX];  // the parameter whose gradient is farthest off
} parity_err;

// One forward and backward of m on the reference's batch under `prec`, compared with the
// entries "<prefix>logits", "<prefix>loss" and "<prefix>grad.<name>".
static parity_err autocast_run(tt_gpt *m, ref_file *f, tt_precision prec, const char *prefix,
                               double logits_atol, double logits_rtol, double grad_atol,
                               double grad_rtol) {
    parity_err e = {0};
    char key[TT_NAME_MAX + 16];
    tt_scope_begin();
    tt_tensor *x = ref_tensor(ref_need(f, "tokens")), *y = ref_tensor(ref_need(f, "targets"));
    tt_autocast_begin(prec);
    tt_tensor *logits = tt_gpt_forward(m, x);  // (B, T, V)
    tt_tensor *loss = tt_gpt_loss(m, x, y);
    tt_autocast_end();
    snprintf(key, sizeof key, "%slogits", prefix);
    compare(logits, ref_need(f, key), logits_atol, logits_rtol, &e.logits, &e.logits_ratio);
    snprintf(key, sizeof key, "%sloss", prefix);
    e.loss = fabs(tt_item(loss) - ref_scalar(f, key));
    tt_backward(loss);  // outside the region: each node remembers its precision
    for (int i = 0; i < m->params.n; i++) {
        snprintf(key, sizeof key, "%sgrad.%s", prefix, m->params.items[i].name);
        tt_tensor *g = tt_grad(m->params.items[i].tensor);
        ck_assert_msg(g, "'%s' got no gradient", m->params.items[i].name);
        double before = e.grad_ratio;
        compare(g, ref_need(f, key), grad_atol, grad_rtol, &e.grad, &e.grad_ratio);
        if (e.grad_ratio > before) snprintf(e.worst, sizeof e.worst, "%s", m->params.items[i].name);
    }
    tt_params_zero_grad(&m->params);
    tt_scope_end();
    return e;
}

static void print_err(const char *cfg, const char *what, const parity_err *e) {
    printf("parity gpt %-7s %-28s logits max_abs_err=%.2e (%.2f of tol)  loss abs_err=%.2e  "
           "grads max_abs_err=%.2e (%.2f of tol, %s)\n", cfg, what, e->logits, e->logits_ratio,
           e->loss, e->grad, e->grad_ratio, e->worst);
}

START_TEST(test_parity_bf16) {
    const char *cfg_name = configs[_i];
    const char *dir = getenv("TT_REF_DIR") ? getenv("TT_REF_DIR") : "tests/reference";
    char path[1024];
    snprintf(path, sizeof path, "%s/gpt_%s_bf16.bin", dir, cfg_name);
    ref_file f;
    const char *err = ref_load(&f, path);
    ck_assert_msg(!err, "%s: %s", path, err);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_dtype prev = tt_set_default_dtype(TT_F32);
    tt_gpt_config cfg = config_from(&f);
    tt_gpt m;
    ck_assert_msg(tt_gpt_init(&m, &cfg, &rng) == TT_OK, "%s", tt_last_error());
    tt_set_default_dtype(prev);
    tt_gpt_train(&m, true);
    load_params(&m, &f);

    parity_err emu = autocast_run(&m, &f, TT_PRECISION_BF16, "emu.", TOL_EMU_LOGITS, 0,
                                  TOL_EMU_GRAD_ABS, TOL_EMU_GRAD_REL);
    parity_err f32 = autocast_run(&m, &f, TT_PRECISION_F32, "emu.", TOL_EMU_LOGITS, 0,
                                  TOL_EMU_GRAD_ABS, TOL_EMU_GRAD_REL);
    parity_err torch = autocast_run(&m, &f, TT_PRECISION_BF16, "", TOL_BF16_LOGITS_ABS,
                                    TOL_BF16_LOGITS_REL, TOL_BF16_GRAD_ABS, TOL_BF16_GRAD_REL);
    print_err(cfg_name, "bf16 vs emulated autocast", &emu);
    print_err(cfg_name, "(f32 vs emulated autocast)", &f32);
    print_err(cfg_name, "bf16 vs torch.autocast", &torch);
    fflush(stdout);
    for (int i = 0; i < f.n; i++)
        ck_assert_msg(f.e[i].used || strncmp(f.e[i].name, "config.", 7) == 0,
                      "reference entry '%s' was not compared", f.e[i].name);
    tt_gpt_free(&m);
    ref_free(&f);
    ck_assert_msg(emu.logits_ratio <= 1.0 && emu.loss <= TOL_EMU_LOSS && emu.grad_ratio <= 1.0,
                  "%s: bf16 off the emulated autocast: logits %.2f x tol, loss %.2e, gradient "
                  "of %s %.2f x tol", cfg_name, emu.logits_ratio, emu.loss, emu.worst,
                  emu.grad_ratio);
    // Plain f32 is not within them: the tolerances see the bf16 rounding.
    ck_assert_msg(f32.logits_ratio > 2.0 && f32.grad_ratio > 2.0, "%s: f32 is within the "
                  "emulated autocast's tolerances (logits %.2f, grads %.2f x tol)", cfg_name,
                  f32.logits_ratio, f32.grad_ratio);
    ck_assert_msg(torch.logits_ratio <= 1.0 && torch.loss <= TOL_BF16_LOSS &&
                  torch.grad_ratio <= 1.0, "%s: bf16 off torch.autocast: logits %.2f x tol, "
                  "loss %.2e, gradient of %s %.2f x tol", cfg_name, torch.logits_ratio,
                  torch.loss, torch.worst, torch.grad_ratio);
}
END_TEST

// The reader rejects malformed files (a corrupt reference must fail loudly, not crash).
START_TEST(test_reader_rejects_truncated) {
    char path[] = "/tmp/tt_ref_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *fp = fdopen(fd, "wb");
    const unsigned char bytes[] = {'T', 'T', 'R', 'E', 'F', '0', '0', '1', 1, 0, 0, 0,
                                   4, 0, 0, 0, 'l', 'o', 's', 's', 0, 0, 0, 0, 1, 0, 0, 0,
                                   3, 0, 0, 0, 0, 0, 0, 0, 1, 2};  // (3,) f32 with 2 bytes
    fwrite(bytes, 1, sizeof bytes, fp);
    fclose(fp);
    ref_file f;
    const char *err = ref_load(&f, path);
    remove(path);
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(err, "truncated data");
    ref_free(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gpt_parity");
    TCase *tc = tt_tcase("pytorch");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_parity, 0, (int)(sizeof configs / sizeof configs[0]));
    tcase_add_test(tc, test_reader_rejects_truncated);
    suite_add_tcase(s, tc);
    TCase *tb = tt_tcase("autocast_bf16");
    tcase_set_timeout(tb, 300);
    tcase_add_loop_test(tb, test_parity_bf16, 0, (int)(sizeof configs / sizeof configs[0]));
    suite_add_tcase(s, tb);
    return tt_test_run(s);
}
