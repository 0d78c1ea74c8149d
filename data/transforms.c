// The image transforms of data/loader.h (torchvision's RandomCrop, RandomHorizontalFlip,
// Normalize, Compose) on contiguous f32 (C, H, W) or (H, W) buffers, with explicit rngs, and
// tt_transform_apply for tensors. Plain memory only: the loader's prefetch thread runs them.
#include <stdlib.h>
#include <string.h>

#include "loader.h"

// (C, H, W) of an image shape of ndim 2 (C = 1) or 3.
static void chw(const char *name, int ndim, const int64_t *in, int64_t *c, int64_t *h,
                int64_t *w) {
    TT_CHECK_IN(name, ndim == 2 || ndim == 3, "images are (C, H, W) or (H, W); got %d dims",
                ndim);
    *c = ndim == 3 ? in[0] : 1;
    *h = in[ndim - 2];
    *w = in[ndim - 1];
}

static tt_transform *transform_new(const char *name, void *ctx) {
    tt_transform *t = calloc(1, sizeof *t);
    TT_CHECK_IN(name, t, "out of memory");
    t->name = name;
    t->ctx = ctx;
    return t;
}

static void destroy_with_ctx(tt_transform *self) {
    free(self->ctx);
    free(self);
}

static void same_shape(const tt_transform *self, int ndim, const int64_t *in, int64_t *out) {
    int64_t c, h, w;
    chw(self->name, ndim, in, &c, &h, &w);
    memcpy(out, in, (size_t)ndim * sizeof *in);
}

// ---- RandomCrop ----

typedef struct crop_ctx {
    int64_t h, w, padding;
    float fill;
} crop_ctx;

static void crop_shape(const tt_transform *self, int ndim, const int64_t *in, int64_t *out) {
    const crop_ctx *k = self->ctx;
    int64_t c, h, w;
    chw("tt_random_crop", ndim, in, &c, &h, &w);
    TT_CHECK_IN("tt_random_crop", k->h <= h + 2 * k->padding && k->w <= w + 2 * k->padding,
                "the crop %lld x %lld is larger than the %lld x %lld image padded by %lld; "
                "pass a smaller size or more padding", (long long)k->h, (long long)k->w,
                (long long)h, (long long)w, (long long)k->padding);
    memcpy(out, in, (size_t)ndim * sizeof *in);
    out[ndim - 2] = k->h;
    out[ndim - 1] = k->w;
}

// y (C, h, w) = the window at (i, j) of x (C, H, W) padded by p with fill.
static void crop_apply(const tt_transform *self, tt_rng *rng, int ndim, const int64_t *in,
                       const float *x, float *y) {
    const crop_ctx *k = self->ctx;
    int64_t c, h, w, out[3];
    chw("tt_random_crop", ndim, in, &c, &h, &w);
    crop_shape(self, ndim, in, out);
    int64_t ph = h + 2 * k->padding, pw = w + 2 * k->padding;
    int64_t i = 0, j = 0;
    if (ph != k->h || pw != k->w) {
        i = tt_rng_below(rng, ph - k->h + 1);
        j = tt_rng_below(rng, pw - k->w + 1);
    }
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t r = 0; r < k->h; r++) {
            int64_t sr = i + r - k->padding;  // row in x
            float *dst = y + (ch * k->h + r) * k->w;
            for (int64_t q = 0; q < k->w; q++) {
                int64_t sq = j + q - k->padding;
                dst[q] = sr >= 0 && sr < h && sq >= 0 && sq < w ? x[(ch * h + sr) * w + sq]
                                                                 : k->fill;
            }
        }
}

tt_transform *tt_random_crop(int64_t h, int64_t w, int64_t padding, double fill) {
    TT_CHECK(h >= 1 && w >= 1 && padding >= 0, "size (%lld, %lld) and padding %lld; pass a "
             "size >= 1 and padding >= 0", (long long)h, (long long)w, (long long)padding);
    crop_ctx *k = malloc(sizeof *k);
    TT_CHECK(k, "out of memory");
    *k = (crop_ctx){h, w, padding, (float)fill};
    tt_transform *t = transform_new("RandomCrop", k);
    t->out_shape = crop_shape;
    t->apply = crop_apply;
    t->destroy = destroy_with_ctx;
    return t;
}

// ---- RandomHorizontalFlip ----

static void flip_apply(const tt_transform *self, tt_rng *rng, int ndim, const int64_t *in,
                       const float *x, float *y) {
    double p = *(const double *)self->ctx;
    int64_t c, h, w;
    chw("tt_random_horizontal_flip", ndim, in, &c, &h, &w);
    if (!(tt_rng_uniform(rng) < p)) {
        memcpy(y, x, (size_t)(c * h * w) * sizeof *x);
        return;
    }
    for (int64_t r = 0; r < c * h; r++)
        for (int64_t q = 0; q < w; q++) y[r * w + q] = x[r * w + (w - 1 - q)];
}

tt_transform *tt_random_horizontal_flip(double p) {
    TT_CHECK(p >= 0 && p <= 1, "p = %g; pass a probability in [0, 1]", p);
    double *k = malloc(sizeof *k);
    TT_CHECK(k, "out of memory");
    *k = p;
    tt_transform *t = transform_new("RandomHorizontalFlip", k);
    t->out_shape = same_shape;
    t->apply = flip_apply;
    t->destroy = destroy_with_ctx;
    return t;
}

// ---- Normalize ----

typedef struct norm_ctx {
    int n;
    double *mean, *std;
} norm_ctx;

static void norm_apply(const tt_transform *self, tt_rng *rng, int ndim, const int64_t *in,
                       const float *x, float *y) {
    (void)rng;
    const norm_ctx *k = self->ctx;
    int64_t c, h, w;
    chw("tt_normalize", ndim, in, &c, &h, &w);
    TT_CHECK_IN("tt_normalize", k->n == 1 || k->n == c, "%d means and stds for an image of %lld "
                "channels; pass one per channel (or one for all)", k->n, (long long)c);
    for (int64_t ch = 0; ch < c; ch++) {
        // torchvision: x.sub_(mean).div_(std) in the image's dtype (f32)
        float m = (float)k->mean[k->n == 1 ? 0 : ch], s = (float)k->std[k->n == 1 ? 0 : ch];
        for (int64_t i = ch * h * w; i < (ch + 1) * h * w; i++) y[i] = (x[i] - m) / s;
    }
}

static void norm_destroy(tt_transform *self) {
    norm_ctx *k = self->ctx;
    free(k->mean);
    free(k->std);
    destroy_with_ctx(self);
}

tt_transform *tt_normalize(int n, const double *mean, const double *std) {
    TT_CHECK(n >= 1 && mean && std, "pass n >= 1 means and stds (got n = %d)", n);
    for (int i = 0; i < n; i++)
        TT_CHECK(std[i] != 0, "std[%d] is 0 (a division by zero); pass non-zero stds", i);
    norm_ctx *k = malloc(sizeof *k);
    TT_CHECK(k, "out of memory");
    k->n = n;
    k->mean = malloc((size_t)n * sizeof *k->mean);
    k->std = malloc((size_t)n * sizeof *k->std);
    TT_CHECK(k->mean && k->std, "out of memory");
    memcpy(k->mean, mean, (size_t)n * sizeof *mean);
    memcpy(k->std, std, (size_t)n * sizeof *std);
    tt_transform *t = transform_new("Normalize", k);
    t->out_shape = same_shape;
    t->apply = norm_apply;
    t->destroy = norm_destroy;
    return t;
}

// ---- Compose ----

typedef struct compose_ctx {
    int n;
    tt_transform **ts;
} compose_ctx;

static void compose_shape(const tt_transform *self, int ndim, const int64_t *in, int64_t *out) {
    const compose_ctx *k = self->ctx;
    int64_t cur[TT_MAX_DIMS];
    memcpy(cur, in, (size_t)ndim * sizeof *in);
    for (int i = 0; i < k->n; i++) {
        k->ts[i]->out_shape(k->ts[i], ndim, cur, out);
        memcpy(cur, out, (size_t)ndim * sizeof *out);
    }
}

static int64_t prod(int ndim, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= s[i];
    return n;
}

// Each step into a temporary buffer; the last into y.
static void compose_apply(const tt_transform *self, tt_rng *rng, int ndim, const int64_t *in,
                          const float *x, float *y) {
    const compose_ctx *k = self->ctx;
    int64_t cur[TT_MAX_DIMS], next[TT_MAX_DIMS];
    memcpy(cur, in, (size_t)ndim * sizeof *in);
    const float *src = x;
    float *tmp = NULL;
    for (int i = 0; i < k->n; i++) {
        k->ts[i]->out_shape(k->ts[i], ndim, cur, next);
        float *dst = y;
        if (i < k->n - 1) {
            dst = malloc((size_t)prod(ndim, next) * sizeof *dst + 1);
            TT_CHECK_IN("tt_compose", dst, "out of memory");
        }
        k->ts[i]->apply(k->ts[i], rng, ndim, cur, src, dst);
        free(tmp);
        tmp = dst == y ? NULL : dst;
        src = dst;
        memcpy(cur, next, (size_t)ndim * sizeof *next);
    }
}

static void compose_destroy(tt_transform *self) {
    compose_ctx *k = self->ctx;
    for (int i = 0; i < k->n; i++) tt_transform_destroy(k->ts[i]);
    free(k->ts);
    destroy_with_ctx(self);
}

tt_transform *tt_compose(int n, tt_transform *const *ts) {
    TT_CHECK(n >= 1 && ts, "pass n >= 1 transforms (got n = %d)", n);
    compose_ctx *k = malloc(sizeof *k);
    TT_CHECK(k, "out of memory");
    k->n = n;
    k->ts = malloc((size_t)n * sizeof *k->ts);
    TT_CHECK(k->ts, "out of memory");
    for (int i = 0; i < n; i++) {
        TT_CHECK(ts[i], "ts[%d] is NULL", i);
        k->ts[i] = ts[i];
    }
    tt_transform *t = transform_new("Compose", k);
    t->out_shape = compose_shape;
    t->apply = compose_apply;
    t->destroy = compose_destroy;
    return t;
}

void tt_transform_destroy(tt_transform *t) {
    if (t && t->destroy) t->destroy(t);
}

tt_tensor *tt_transform_apply(const tt_transform *t, tt_rng *rng, const tt_tensor *x) {
    TT_CHECK(t && rng && x, "t, rng and x must not be NULL");
    TT_CHECK(tt_dtype_is_float(x->dtype) && (x->ndim == 2 || x->ndim == 3), "x is %s of %d "
             "dims; pass a float image of (C, H, W) or (H, W)", tt_dtype_name(x->dtype),
             x->ndim);
    int64_t out[TT_MAX_DIMS];
    t->out_shape(t, x->ndim, x->shape, out);
    tt_scope_begin();
    tt_tensor *src = tt_empty(TT_F32, x->ndim, x->shape);
    tt_copy_(src, x);
    tt_tensor *y = tt_keep(tt_empty(TT_F32, x->ndim, out));
    t->apply(t, rng, x->ndim, x->shape, tt_data(src), tt_data(y));
    tt_scope_end();
    return y;
}
