// GGUF files (io/gguf.h): the writer. Metadata is serialized as it is set; tensors are kept
// (retained) and encoded at save time, each padded to the alignment, through the atomic
// writer (tt__write_atomic). The reader is gguf.c, the blocks gguf_blocks.c.
#include "gguf.h"
#include "io_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct tt__gguf_wtensor {
    char name[TT_GGUF_MAX_NAME + 1];
    tt_tensor *t;
    tt_ggml_type type;
    uint64_t nbytes;
} tt__gguf_wtensor;

void tt_gguf_writer_init(tt_gguf_writer *w) {
    TT_CHECK(w, "writer must not be NULL");
    memset(w, 0, sizeof *w);
    w->alignment = TT_GGUF_ALIGNMENT;
}

void tt_gguf_writer_free(tt_gguf_writer *w) {
    if (!w) return;
    for (int64_t i = 0; i < w->n_kv; i++) tt_free(w->keys[i]);
    for (int64_t i = 0; i < w->n_tensors; i++) tt_release(w->tensors[i].t);
    tt_free(w->keys);
    tt_free(w->kv);
    tt_free(w->tensors);
    memset(w, 0, sizeof *w);
}

// ---- serializing ----

static void put(tt_gguf_writer *w, const void *p, size_t n) {
    if (w->kv_len + n > w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap : 256;
        while (cap < w->kv_len + n) cap *= 2;
        unsigned char *b = TT_MALLOC(cap);
        if (w->kv_len) memcpy(b, w->kv, w->kv_len);
        tt_free(w->kv);
        w->kv = b;
        w->kv_cap = cap;
    }
    memcpy(w->kv + w->kv_len, p, n);
    w->kv_len += n;
}

static void put_le(tt_gguf_writer *w, uint64_t v, int n) {
    unsigned char b[8];
    for (int i = 0; i < n; i++) b[i] = (unsigned char)(v >> (8 * i));
    put(w, b, (size_t)n);
}

static void put_str(tt_gguf_writer *w, const char *s) {
    size_t n = strlen(s);
    put_le(w, n, 8);
    put(w, s, n);
}

// The key and its type; aborts on an empty or repeated key.
static void begin_kv(tt_gguf_writer *w, const char *key, tt_gguf_type type) {
    TT_CHECK(w && key && key[0], "writer and a non-empty key must be given");
    for (int64_t i = 0; i < w->n_kv; i++)
        TT_CHECK(strcmp(w->keys[i], key) != 0, "metadata key '%s' is set twice", key);
    char **keys = TT_MALLOC(((size_t)w->n_kv + 1) * sizeof *keys);
    if (w->n_kv) memcpy(keys, w->keys, (size_t)w->n_kv * sizeof *keys);
    size_t n = strlen(key) + 1;
    keys[w->n_kv] = TT_MALLOC(n);
    memcpy(keys[w->n_kv], key, n);
    tt_free(w->keys);
    w->keys = keys;
    w->n_kv++;
    put_str(w, key);
    put_le(w, (uint64_t)type, 4);
}

// One scalar of type (integers and BOOL from v, floats from f).
static void put_scalar(tt_gguf_writer *w, tt_gguf_type type, int64_t v, double f) {
    switch (type) {
        case TT_GGUF_UINT8: case TT_GGUF_INT8: case TT_GGUF_BOOL: put_le(w, (uint64_t)v, 1); break;
        case TT_GGUF_UINT16: case TT_GGUF_INT16: put_le(w, (uint64_t)v, 2); break;
        case TT_GGUF_UINT32: case TT_GGUF_INT32: put_le(w, (uint64_t)v, 4); break;
        case TT_GGUF_UINT64: case TT_GGUF_INT64: put_le(w, (uint64_t)v, 8); break;
        case TT_GGUF_FLOAT32: {
            float x = (float)f;
            uint32_t u;
            memcpy(&u, &x, 4);
            put_le(w, u, 4);
            break;
        }
        case TT_GGUF_FLOAT64: {
            uint64_t u;
            memcpy(&u, &f, 8);
            put_le(w, u, 8);
            break;
        }
        default: TT_CHECK(false, "type %s is not a scalar", tt_gguf_type_name(type));
    }
}

void tt_gguf_writer_set_num(tt_gguf_writer *w, const char *key, tt_gguf_type type, int64_t v,
                            double f) {
    TT_CHECK(type >= 0 && type < TT_GGUF_TYPE_COUNT && type != TT_GGUF_STRING &&
             type != TT_GGUF_ARRAY, "key '%s': type %d is not a scalar type", key, (int)type);
    if (key && strcmp(key, "general.alignment") == 0) {
        TT_CHECK(type == TT_GGUF_UINT32 && v > 0 && v <= UINT32_MAX && (v & (v - 1)) == 0,
                 "general.alignment must be a UINT32 power of two, got %s %lld",
                 tt_gguf_type_name(type), (long long)v);
        w->alignment = (uint32_t)v;
    }
    begin_kv(w, key, type);
    put_scalar(w, type, v, f);
}

void tt_gguf_writer_set_u32(tt_gguf_writer *w, const char *key, uint32_t v) {
    tt_gguf_writer_set_num(w, key, TT_GGUF_UINT32, v, 0);
}

void tt_gguf_writer_set_i32(tt_gguf_writer *w, const char *key, int32_t v) {
    tt_gguf_writer_set_num(w, key, TT_GGUF_INT32, v, 0);
}

void tt_gguf_writer_set_u64(tt_gguf_writer *w, const char *key, uint64_t v) {
    tt_gguf_writer_set_num(w, key, TT_GGUF_UINT64, (int64_t)v, 0);
}

void tt_gguf_writer_set_f32(tt_gguf_writer *w, const char *key, float v) {
    tt_gguf_writer_set_num(w, key, TT_GGUF_FLOAT32, 0, v);
}

void tt_gguf_writer_set_bool(tt_gguf_writer *w, const char *key, bool v) {
    tt_gguf_writer_set_num(w, key, TT_GGUF_BOOL, v ? 1 : 0, 0);
}

void tt_gguf_writer_set_str(tt_gguf_writer *w, const char *key, const char *v) {
    TT_CHECK(v, "key '%s': the string must not be NULL", key ? key : "?");
    begin_kv(w, key, TT_GGUF_STRING);
    put_str(w, v);
}

void tt_gguf_writer_set_array(tt_gguf_writer *w, const char *key, tt_gguf_type elem,
                              const void *data, uint64_t n) {
    TT_CHECK(elem >= 0 && elem < TT_GGUF_TYPE_COUNT && elem != TT_GGUF_ARRAY,
             "key '%s': arrays of type %d are not written", key ? key : "?", (int)elem);
    TT_CHECK(data || n == 0, "key '%s': data must be given", key ? key : "?");
    begin_kv(w, key, TT_GGUF_ARRAY);
    put_le(w, (uint64_t)elem, 4);
    put_le(w, n, 8);
    for (uint64_t i = 0; i < n; i++) {
        switch (elem) {
            case TT_GGUF_STRING: put_str(w, ((const char *const *)data)[i]); break;
            case TT_GGUF_UINT8: put_scalar(w, elem, ((const uint8_t *)data)[i], 0); break;
            case TT_GGUF_INT8: put_scalar(w, elem, ((const int8_t *)data)[i], 0); break;
            case TT_GGUF_BOOL: put_scalar(w, elem, ((const bool *)data)[i], 0); break;
            case TT_GGUF_UINT16: put_scalar(w, elem, ((const uint16_t *)data)[i], 0); break;
            case TT_GGUF_INT16: put_scalar(w, elem, ((const int16_t *)data)[i], 0); break;
            case TT_GGUF_UINT32: put_scalar(w, elem, ((const uint32_t *)data)[i], 0); break;
            case TT_GGUF_INT32: put_scalar(w, elem, ((const int32_t *)data)[i], 0); break;
            case TT_GGUF_UINT64:
                put_scalar(w, elem, (int64_t)((const uint64_t *)data)[i], 0);
                break;
            case TT_GGUF_INT64: put_scalar(w, elem, ((const int64_t *)data)[i], 0); break;
            case TT_GGUF_FLOAT32: put_scalar(w, elem, 0, ((const float *)data)[i]); break;
            default: put_scalar(w, elem, 0, ((const double *)data)[i]); break;
        }
    }
}

void tt_gguf_writer_add(tt_gguf_writer *w, const char *name, tt_tensor *t, tt_ggml_type type) {
    TT_CHECK(w && name && t, "writer, name and tensor must be given");
    size_t len = strlen(name);
    TT_CHECK(len > 0 && len <= TT_GGUF_MAX_NAME, "tensor name '%s' is %zu bytes; GGUF takes "
             "1 .. %d", name, len, TT_GGUF_MAX_NAME);
    TT_CHECK(t->dtype == TT_F32 || t->dtype == TT_F64, "tensor '%s' is %s; pass f32 or f64",
             name, tt_dtype_name(t->dtype));
    TT_CHECK(t->ndim <= TT_GGUF_MAX_DIMS, "tensor '%s' has %d dims; GGUF holds at most %d",
             name, t->ndim, TT_GGUF_MAX_DIMS);
    TT_CHECK(tt_ggml_type_supported(type), "tensor '%s': ggml type %d is not one of F32, F16, "
             "BF16, Q8_0, Q4_0", name, (int)type);
    bool quant = type == TT_GGML_Q8_0 || type == TT_GGML_Q4_0;
    TT_CHECK(!quant || (t->ndim > 0 && t->shape[t->ndim - 1] % 32 == 0), "tensor '%s': %s "
             "needs a last dim that is a multiple of 32", name, tt_ggml_type_name(type));
    for (int64_t i = 0; i < w->n_tensors; i++)
        TT_CHECK(strcmp(w->tensors[i].name, name) != 0, "tensor '%s' is added twice", name);
    if (w->n_tensors == w->cap_tensors) {
        int64_t cap = w->cap_tensors ? 2 * w->cap_tensors : 16;
        tt__gguf_wtensor *b = TT_CALLOC((size_t)cap, sizeof *b);
        if (w->n_tensors) memcpy(b, w->tensors, (size_t)w->n_tensors * sizeof *b);
        tt_free(w->tensors);
        w->tensors = b;
        w->cap_tensors = cap;
    }
    tt__gguf_wtensor *e = &w->tensors[w->n_tensors++];
    memcpy(e->name, name, len + 1);
    e->t = tt_retain(t);
    e->type = type;
    e->nbytes = tt_ggml_type_bytes(type, tt_numel(t));
}

// ---- saving ----

static uint64_t pad_to(uint64_t n, uint64_t a) { return (a - n % a) % a; }

// The tensor descriptions (after the metadata), each at its aligned offset.
static void put_infos(const tt_gguf_writer *w, tt_gguf_writer *h) {
    uint64_t at = 0;
    for (int64_t i = 0; i < w->n_tensors; i++) {
        const tt__gguf_wtensor *e = &w->tensors[i];
        put_str(h, e->name);
        put_le(h, (uint64_t)e->t->ndim, 4);
        for (int d = e->t->ndim - 1; d >= 0; d--) put_le(h, (uint64_t)e->t->shape[d], 8);
        put_le(h, (uint64_t)e->type, 4);
        put_le(h, at, 8);
        at += e->nbytes + pad_to(e->nbytes, w->alignment);
    }
}

typedef struct gguf_body {
    const tt_gguf_writer *w;
    const unsigned char *header;
    size_t hlen;
} gguf_body;

// e's elements encoded as its type (a new buffer of e->nbytes).
static unsigned char *encode(const tt__gguf_wtensor *e) {
    int64_t n = tt_numel(e->t);
    tt_tensor *x = tt__contiguous_copy(e->t);
    float *v = TT_MALLOC((size_t)n * sizeof *v + 1);
    for (int64_t i = 0; i < n; i++)
        v[i] = x->dtype == TT_F64 ? (float)((const double *)tt_data(x))[i]
                                  : ((const float *)tt_data(x))[i];
    unsigned char *out = TT_MALLOC(e->nbytes + 1);
    for (int64_t i = 0; e->type != TT_GGML_Q8_0 && e->type != TT_GGML_Q4_0 && i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        unsigned char *o = out + i * (e->type == TT_GGML_F32 ? 4 : 2);
        if (e->type == TT_GGML_F16) u = tt__f32_to_f16(v[i]);
        if (e->type == TT_GGML_BF16) u = tt__f32_to_bf16(v[i]);
        for (int k = 0; k < (e->type == TT_GGML_F32 ? 4 : 2); k++)
            o[k] = (unsigned char)(u >> 8 * k);
    }
    if (e->type == TT_GGML_Q8_0) tt_gguf_quantize_q8_0(out, v, n);
    if (e->type == TT_GGML_Q4_0) tt_gguf_quantize_q4_0(out, v, n);
    tt_release(x);
    tt_free(v);
    return out;
}

static bool write_gguf(int fd, void *ctx) {
    const gguf_body *b = ctx;
    static const unsigned char zeros[256];
    bool ok = tt__write_all(fd, b->header, b->hlen);
    for (int64_t i = 0; ok && i < b->w->n_tensors; i++) {
        const tt__gguf_wtensor *e = &b->w->tensors[i];
        unsigned char *bytes = encode(e);
        ok = tt__write_all(fd, bytes, e->nbytes);
        int err = errno;
        tt_free(bytes);
        errno = err;
        for (uint64_t p = pad_to(e->nbytes, b->w->alignment); ok && p > 0;) {
            size_t k = p < sizeof zeros ? (size_t)p : sizeof zeros;
            ok = tt__write_all(fd, zeros, k);
            p -= k;
        }
    }
    return ok;
}

tt_status tt_gguf_writer_save(const tt_gguf_writer *w, const char *path) {
    TT_CHECK(w && path && path[0], "writer and path must be given");
    tt_gguf_writer h;  // the header, built with the same serializer
    tt_gguf_writer_init(&h);
    put(&h, "GGUF", 4);
    put_le(&h, TT_GGUF_VERSION, 4);
    put_le(&h, (uint64_t)w->n_tensors, 8);
    put_le(&h, (uint64_t)w->n_kv, 8);
    if (w->kv_len) put(&h, w->kv, w->kv_len);
    put_infos(w, &h);
    for (uint64_t p = pad_to(h.kv_len, w->alignment); p > 0; p--) put(&h, "", 1);
    gguf_body body = {w, h.kv, h.kv_len};
    tt_status s = tt__write_atomic(path, "gguf", write_gguf, &body);
    tt_gguf_writer_free(&h);
    return s;
}
