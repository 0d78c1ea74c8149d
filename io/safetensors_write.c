// safetensors files (io/safetensors.h): the atomic writer in the reference writer's layout
// (dtypes by rank, then names; the JSON header padded to 8 bytes) and the f32 -> F16 / BF16
// rounding it encodes with. The reader is safetensors.c.
#include "io_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- f32 -> F16 / BF16 (IEEE 754 binary16; bfloat16 = the top half of an f32) ----

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

// Round to nearest even; overflow to inf; NaN becomes the quiet 0x7e00 with its sign (as
// PyTorch's c10::Half).
uint16_t tt__f32_to_f16(float f) {
    uint32_t x = f32_bits(f), ax = x & 0x7fffffff;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    if (ax > 0x7f800000) return sign | 0x7e00;
    if (ax >= 0x477ff000) return sign | 0x7c00;  // >= 65520 rounds up past 65504
    if (ax < 0x38800000)                         // below 2^-14: a subnormal half (units 2^-24)
        return sign | (uint16_t)nearbyintf(bits_f32(ax) * 0x1p24f);
    // A normal half: rebias the exponent, then round the 13 dropped bits to even (a carry
    // into the exponent is the right result).
    uint32_t r = ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u);
    return sign | (uint16_t)(r >> 13);
}

// Round to nearest even; every NaN becomes 0xffff, as PyTorch's (vectorized) CPU conversion of
// a tensor writes it.
uint16_t tt__f32_to_bf16(float f) {
    if (isnan(f)) return 0xffff;
    uint32_t x = f32_bits(f);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static void put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

// ---- writing ----

typedef struct save_item {
    const char *name;
    const tt_tensor *t;
    tt_st_dtype dtype;  // as stored
} save_item;

static int cmp_save(const void *a, const void *b) {
    const save_item *x = a, *y = b;
    int rx = tt__st_dtype_rank(x->dtype), ry = tt__st_dtype_rank(y->dtype);
    if (rx != ry) return ry - rx;
    return strcmp(x->name, y->name);
}

static int cmp_cstr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// t's elements, row-major, as little-endian bytes of dtype (new buffer of *nbytes).
static unsigned char *encode(const tt_tensor *t, tt_st_dtype dtype, size_t *nbytes) {
    size_t n = (size_t)tt_numel(t), es = tt_st_dtype_size(dtype);
    *nbytes = n * es;
    unsigned char *out = TT_MALLOC(*nbytes ? *nbytes : 1);
    if (n == 0) return out;
    tt_tensor *c = tt__contiguous_copy(t);
    const void *src = tt_data(c);
    for (size_t i = 0; i < n; i++) {
        unsigned char *o = out + i * es;
        double v = 0;
        float fv = 0;
        if (t->dtype == TT_F32) fv = ((const float *)src)[i];
        if (t->dtype == TT_F64) v = ((const double *)src)[i], fv = (float)v;
        switch (dtype) {
            case TT_ST_F32: put_le(o, f32_bits(fv), 4); break;
            case TT_ST_F16: put_le(o, tt__f32_to_f16(fv), 2); break;
            case TT_ST_BF16: put_le(o, tt__f32_to_bf16(fv), 2); break;
            case TT_ST_F64: {
                uint64_t u;
                if (t->dtype == TT_F32) v = fv;
                memcpy(&u, &v, 8);
                put_le(o, u, 8);
                break;
            }
            case TT_ST_I32: put_le(o, (uint32_t)((const int32_t *)src)[i], 4); break;
            case TT_ST_I64: put_le(o, (uint64_t)((const int64_t *)src)[i], 8); break;
            default: o[0] = ((const unsigned char *)src)[i] ? 1 : 0; break;
        }
    }
    tt_release(c);
    return out;
}

// The bytes of a safetensors file, for tt__write_atomic: the header length, the header, then
// each tensor encoded in its file dtype.
typedef struct st_body {
    const char *header;
    size_t hlen;
    const save_item *items;
    int n;
} st_body;

static bool write_st(int fd, void *ctx) {
    const st_body *b = ctx;
    unsigned char len8[8];
    put_le(len8, b->hlen, 8);
    bool ok = tt__write_all(fd, len8, 8) && tt__write_all(fd, b->header, b->hlen);
    for (int i = 0; ok && i < b->n; i++) {
        size_t nb;
        unsigned char *bytes = encode(b->items[i].t, b->items[i].dtype, &nb);
        ok = tt__write_all(fd, bytes, nb);
        int err = errno;
        tt_free(bytes);
        errno = err;
    }
    return ok;
}

// The JSON header (compact, padded with spaces to a multiple of 8) for items laid out in
// order. Aborts, naming func, on names or metadata Jansson cannot hold (not UTF-8).
static char *build_header(const save_item *items, int n, const size_t *nbytes,
                          const char *const *metadata, size_t *hlen) {
    const char *func = "tt_safetensors_save";
    json_t *root = json_object();
    TT_CHECK_IN(func, root, "out of memory building the header");
    if (metadata && metadata[0]) {
        size_t nm = 0;
        while (metadata[2 * nm]) {
            TT_CHECK_IN(func, metadata[2 * nm + 1], "metadata key '%s' has no value (NULL); the "
                        "list is {key, value, ..., NULL}", metadata[2 * nm]);
            nm++;
        }
        const char **keys = TT_MALLOC(nm * sizeof *keys);
        for (size_t i = 0; i < nm; i++) keys[i] = metadata[2 * i];
        qsort(keys, nm, sizeof *keys, cmp_cstr);
        for (size_t i = 1; i < nm; i++)
            TT_CHECK_IN(func, strcmp(keys[i - 1], keys[i]) != 0, "metadata key '%s' is given "
                        "twice", keys[i]);
        json_t *meta = json_object();
        for (size_t i = 0; i < nm; i++) {
            const char *v = NULL;
            for (size_t j = 0; j < nm && !v; j++)
                if (strcmp(metadata[2 * j], keys[i]) == 0) v = metadata[2 * j + 1];
            json_t *js = json_string(v);
            TT_CHECK_IN(func, js, "metadata '%s': the key or value is not valid UTF-8", keys[i]);
            TT_CHECK_IN(func, json_object_set_new(meta, keys[i], js) == 0, "metadata key '%s' is "
                        "not valid UTF-8", keys[i]);
        }
        tt_free(keys);
        json_object_set_new(root, "__metadata__", meta);
    }
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        const tt_tensor *t = items[i].t;
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer(t->shape[d]));
        json_t *e = json_object();
        json_object_set_new(e, "dtype", json_string(tt_st_dtype_name(items[i].dtype)));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", json_pack("[II]", (json_int_t)at,
                                                         (json_int_t)(at + nbytes[i])));
        at += nbytes[i];
        TT_CHECK_IN(func, json_object_set_new(root, items[i].name, e) == 0, "tensor name '%s' is "
                    "not valid UTF-8", items[i].name);
    }
    char *js = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    TT_CHECK_IN(func, js, "out of memory serializing the header");
    size_t len = strlen(js), pad = (8 - len % 8) % 8;
    char *h = TT_MALLOC(len + pad + 1);
    memcpy(h, js, len);
    memset(h + len, ' ', pad);
    h[len + pad] = 0;
    free(js);
    *hlen = len + pad;
    return h;
}

tt_status tt_safetensors_save(const char *path, const tt_params *p, const char *const *metadata,
                              tt_st_dtype dtype) {
    TT_CHECK(path && path[0] && p, "path and p must be given");
    TT_CHECK(dtype == TT_ST_F32 || dtype == TT_ST_F64 || dtype == TT_ST_F16 ||
             dtype == TT_ST_BF16, "dtype %d is not a float dtype of the format: pass TT_ST_F32, "
             "TT_ST_F64, TT_ST_F16 or TT_ST_BF16 (integer and bool tensors keep their own)",
             (int)dtype);
    int n = p->n;
    save_item *items = TT_CALLOC((size_t)n + 1, sizeof *items);
    for (int i = 0; i < n; i++) {
        const tt_tensor *t = p->items[i].tensor;
        const char *name = p->items[i].name;
        TT_CHECK(t, "tensor '%s' is NULL", name);
        TT_CHECK(name[0] && strcmp(name, "__metadata__") != 0, "tensor name '%s' is not allowed "
                 "in a safetensors file (empty, or the metadata key): rename it", name);
        items[i].name = name;
        items[i].t = t;
        items[i].dtype = t->dtype == TT_I32 ? TT_ST_I32 : t->dtype == TT_I64 ? TT_ST_I64
                         : t->dtype == TT_BOOL ? TT_ST_BOOL : dtype;
    }
    qsort(items, (size_t)n, sizeof *items, cmp_save);
    size_t *nbytes = TT_CALLOC((size_t)n + 1, sizeof *nbytes);
    for (int i = 0; i < n; i++)
        nbytes[i] = (size_t)tt_numel(items[i].t) * tt_st_dtype_size(items[i].dtype);
    size_t hlen;
    char *header = build_header(items, n, nbytes, metadata, &hlen);

    // A temp file next to the target, then rename over it.
    st_body body = {header, hlen, items, n};
    tt_status s = tt__write_atomic(path, "safetensors", write_st, &body);
    tt_free(header);
    tt_free(nbytes);
    tt_free(items);
    return s;
}

tt_status tt_safetensors_save_module(const char *path, tt_module m) {
    tt_params state;
    tt_params_init(&state);
    tt_module_state(m, &state, NULL);
    bool f64 = state.n > 0 && state.items[0].tensor->dtype == TT_F64;
    tt_status st = tt_safetensors_save(path, &state, NULL, f64 ? TT_ST_F64 : TT_ST_F32);
    tt_params_free(&state);
    return st;
}
