// safetensors files (io/safetensors.h): the dtype table, the strict reader (Jansson for the
// JSON header), the F16/BF16 -> f32 conversions and the one-call parameter load. The writer is
// safetensors_write.c. Reads the header, then the tensors into one buffer; no memory mapping.
#include "safetensors.h"
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- dtypes ----

static const struct {
    const char *name;
    size_t size;
    tt_dtype loaded;
    int rank;  // the reference writer's dtype order (wider first when saving)
} st_dtypes[TT_ST_DTYPE_COUNT] = {
    [TT_ST_F32] = {"F32", 4, TT_F32, 4},   [TT_ST_F64] = {"F64", 8, TT_F64, 5},
    [TT_ST_F16] = {"F16", 2, TT_F32, 1},   [TT_ST_BF16] = {"BF16", 2, TT_F32, 2},
    [TT_ST_I32] = {"I32", 4, TT_I32, 3},   [TT_ST_I64] = {"I64", 8, TT_I64, 6},
    [TT_ST_BOOL] = {"BOOL", 1, TT_BOOL, 0},
};

// Dtypes of the format this library does not read, named in the error message.
static const char *const st_other_dtypes[] = {"U8", "I8", "I16", "U16", "U32", "U64", "C64",
                                              "F8_E5M2", "F8_E4M3", "F8_E8M0", "F6_E2M3",
                                              "F6_E3M2", "F4", NULL};

// d as an index of st_dtypes; aborts, naming func, outside the table.
static int dtype_index(tt_st_dtype d, const char *func) {
    TT_CHECK_IN(func, d >= 0 && d < TT_ST_DTYPE_COUNT, "dtype %d is outside [0, %d)", (int)d,
                TT_ST_DTYPE_COUNT);
    return (int)d;
}

const char *tt_st_dtype_name(tt_st_dtype d) {
    return st_dtypes[dtype_index(d, __func__)].name;
}

size_t tt_st_dtype_size(tt_st_dtype d) {
    return st_dtypes[dtype_index(d, __func__)].size;
}

int tt__st_dtype_rank(tt_st_dtype d) {
    return st_dtypes[dtype_index(d, __func__)].rank;
}

tt_dtype tt_st_dtype_loaded(tt_st_dtype d) {
    return st_dtypes[dtype_index(d, __func__)].loaded;
}

// ---- F16 / BF16 <-> f32 (IEEE 754 binary16; bfloat16 = the top half of an f32) ----

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// Exact: every half is an f32.
float tt__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000 | (man << 13));      // inf, NaN
    if (exp != 0) return bits_f32(sign | ((exp + 112) << 23) | (man << 13));  // 127 - 15 = 112
    float v = (float)man * 0x1p-24f;                                          // subnormal, 0
    return sign ? -v : v;
}

static float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

static uint64_t get_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

// ---- reading ----

// Control bytes (a tensor name may hold an escaped newline) as '?': messages stay one line.
char *tt__one_line(char *s) {
    for (char *c = s; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return s;
}

tt_status tt__file_fail(const char *kind, const char *path, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tt_set_error(TT_ERR_FORMAT, "%s '%s': %s", kind, path, tt__one_line(msg));
}

#define st_fail(path, ...) tt__file_fail("safetensors", path, __VA_ARGS__)

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = TT_MALLOC(n);
    memcpy(d, s, n);
    return d;
}

const char *tt__printable(const char *s, size_t n, char *buf, size_t cap) {
    size_t i = 0;
    for (; i < n && s[i] && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c >= 0x20 && c != 0x7f ? (char)c : '?';
    }
    buf[i] = 0;
    return buf;
}

void tt_safetensors_close(tt_safetensors *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) tt_free(f->tensors[i].name);
    for (int i = 0; i < f->nmeta; i++) {
        tt_free(f->meta_keys[i]);
        tt_free(f->meta_values[i]);
    }
    tt_free(f->tensors);
    tt_free(f->meta_keys);
    tt_free(f->meta_values);
    free(f->data);
    tt_free(f->path);
    tt_free(f->by_name);
    memset(f, 0, sizeof *f);
}

// A non-negative JSON integer into *v; false otherwise.
static bool json_u64(const json_t *j, uint64_t *v) {
    if (!json_is_integer(j) || json_integer_value(j) < 0) return false;
    *v = (uint64_t)json_integer_value(j);
    return true;
}

// One tensor entry of the header into e (its name already set). path for messages.
static tt_status parse_entry(tt_st_info *e, json_t *obj, const char *path, uint64_t data_size) {
    const char *n = e->name;
    if (!json_is_object(obj))
        return st_fail(path, "tensor '%s': its entry is not a JSON object (expected {\"dtype\", "
                       "\"shape\", \"data_offsets\"})", n);
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets")) {
            char pk[64];
            return st_fail(path,
                           "tensor '%s' has an unknown field '%s' (expected dtype, shape, "
                           "data_offsets)",
                           n, tt__printable(key, strlen(key), pk, sizeof pk));
        }
    }
    json_t *dt = json_object_get(obj, "dtype"), *sh = json_object_get(obj, "shape"),
           *off = json_object_get(obj, "data_offsets");
    if (!dt || !sh || !off)
        return st_fail(path, "tensor '%s' has no '%s' field", n,
                       !dt ? "dtype" : !sh ? "shape" : "data_offsets");
    if (!json_is_string(dt)) return st_fail(path, "tensor '%s': dtype is not a string", n);
    const char *ds = json_string_value(dt);
    int d = 0;
    while (d < TT_ST_DTYPE_COUNT && strcmp(ds, st_dtypes[d].name) != 0) d++;
    if (d == TT_ST_DTYPE_COUNT) {
        bool known = false;
        for (int i = 0; st_other_dtypes[i]; i++) known |= strcmp(ds, st_other_dtypes[i]) == 0;
        char pd[32];
        return st_fail(path,
                       "tensor '%s' has %s dtype '%s' (this library reads F64, F32, F16, "
                       "BF16, I64, I32 and BOOL)",
                       n, known ? "the unsupported" : "an unknown",
                       tt__printable(ds, strlen(ds), pd, sizeof pd));
    }
    e->dtype = (tt_st_dtype)d;

    if (!json_is_array(sh)) return st_fail(path, "tensor '%s': shape is not an array", n);
    size_t nd = json_array_size(sh);
    if (nd > TT_MAX_DIMS)
        return st_fail(path, "tensor '%s' has %zu dims; this library allows at most %d", n, nd,
                       TT_MAX_DIMS);
    e->ndim = (int)nd;
    // numel * element size stays <= INT64_MAX (checked per dim, a 0 dim included).
    uint64_t numel = 1, limit = (uint64_t)INT64_MAX / st_dtypes[d].size;
    bool zero = false;
    for (size_t i = 0; i < nd; i++) {
        uint64_t dim;
        if (!json_u64(json_array_get(sh, i), &dim))
            return st_fail(path, "tensor '%s': shape entry %zu is not a non-negative integer", n,
                           i);
        if (dim != 0 && numel > limit / dim)
            return st_fail(path, "tensor '%s': its shape overflows (dim %zu is %llu)", n, i,
                           (unsigned long long)dim);
        e->shape[i] = (int64_t)dim;
        if (dim == 0) zero = true;
        else numel *= dim;
    }
    if (zero) numel = 0;

    uint64_t b, en;
    if (!json_is_array(off) || json_array_size(off) != 2 || !json_u64(json_array_get(off, 0), &b)
        || !json_u64(json_array_get(off, 1), &en))
        return st_fail(path, "tensor '%s': data_offsets is not [begin, end] with non-negative "
                       "integers", n);
    if (en < b)
        return st_fail(path, "tensor '%s': data_offsets [%llu, %llu] end before they begin", n,
                       (unsigned long long)b, (unsigned long long)en);
    if (en > data_size)
        return st_fail(path, "tensor '%s': data_offsets [%llu, %llu] run past the data buffer "
                       "(%llu bytes; the file is truncated?)", n, (unsigned long long)b,
                       (unsigned long long)en, (unsigned long long)data_size);
    if (en - b != numel * st_dtypes[d].size)
        return st_fail(path, "tensor '%s': data_offsets [%llu, %llu] hold %llu bytes but %llu "
                       "elements of %s need %llu", n, (unsigned long long)b,
                       (unsigned long long)en, (unsigned long long)(en - b),
                       (unsigned long long)numel, ds,
                       (unsigned long long)(numel * st_dtypes[d].size));
    e->begin = b;
    e->end = en;
    return TT_OK;
}

static int cmp_by_offset(const void *a, const void *b) {
    const tt_st_info *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

typedef struct name_index {
    const char *name;
    int index;
} name_index;

static int cmp_by_name(const void *a, const void *b) {
    return strcmp(((const name_index *)a)->name, ((const name_index *)b)->name);
}

// The header length field of a file of size bytes whose first 8 bytes are len8 (NULL when
// size < 8): *hn when it is within the limit and the file.
static tt_status check_length(const unsigned char *len8, uint64_t size, const char *path,
                              uint64_t *hn) {
    if (size < 8)
        return st_fail(path, "the file is %llu bytes, shorter than the 8-byte header length",
                       (unsigned long long)size);
    *hn = get_le(len8, 8);
    if (*hn > TT_ST_MAX_HEADER)
        return st_fail(path, "header length %llu exceeds the limit of %u bytes (not a "
                       "safetensors file?)", (unsigned long long)*hn, TT_ST_MAX_HEADER);
    if (*hn > size - 8)
        return st_fail(path, "header length %llu runs past the end of the file (%llu bytes; "
                       "truncated?)", (unsigned long long)*hn, (unsigned long long)size);
    return TT_OK;
}

// Parses and validates the JSON header h[0 .. hn) of a file whose data buffer has data_size
// bytes into f (zeroed), everything but f->data; on error f is left empty.
static tt_status parse(tt_safetensors *f, const unsigned char *h, uint64_t hn,
                       uint64_t data_size, const char *path) {
    if (hn == 0 || h[0] != '{')
        return st_fail(path, "the header does not start with '{' (not a safetensors file?)");
    json_error_t jerr;
    json_t *root = json_loadb((const char *)h, (size_t)hn, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char pt[200];
        return st_fail(path, "the header is not valid JSON: %s (byte %d of the header)",
                       tt__printable(jerr.text, strlen(jerr.text), pt, sizeof pt), jerr.position);
    }
    tt_status s = TT_OK;
    if (!json_is_object(root)) {
        s = st_fail(path, "the header is not a JSON object");
        json_decref(root);
        return s;
    }
    size_t nkeys = json_object_size(root);
    json_t *meta = json_object_get(root, "__metadata__");
    f->tensors = TT_CALLOC(nkeys + 1, sizeof *f->tensors);
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0) continue;
        char pk[64];
        size_t kl = strlen(key);
        if (kl == 0 || kl >= TT_NAME_MAX) {
            s = st_fail(path, "tensor name '%s' is %zu bytes; this library takes 1 .. %d",
                        tt__printable(key, strlen(key), pk, sizeof pk), kl, TT_NAME_MAX - 1);
            break;
        }
        tt_st_info *e = &f->tensors[f->n++];
        e->name = dup_str(key);
        if ((s = parse_entry(e, val, path, data_size)) != TT_OK) break;
    }
    if (s == TT_OK && meta && !json_is_null(meta)) {
        if (!json_is_object(meta)) {
            s = st_fail(path, "__metadata__ is not a JSON object of strings");
        } else {
            size_t nm = json_object_size(meta);
            f->meta_keys = TT_CALLOC(nm + 1, sizeof *f->meta_keys);
            f->meta_values = TT_CALLOC(nm + 1, sizeof *f->meta_values);
            json_object_foreach(meta, key, val) {
                if (!json_is_string(val)) {
                    char pk[64];
                    s = st_fail(path, "__metadata__ '%s' is not a string",
                                tt__printable(key, strlen(key), pk, sizeof pk));
                    break;
                }
                f->meta_keys[f->nmeta] = dup_str(key);
                f->meta_values[f->nmeta++] = dup_str(json_string_value(val));
            }
        }
    }
    json_decref(root);

    // The data buffer: tensors in offset order, each starting where the previous one ended,
    // the last ending at the end of the file.
    if (s == TT_OK) {
        qsort(f->tensors, (size_t)f->n, sizeof *f->tensors, cmp_by_offset);
        uint64_t at = 0;
        const char *prev = NULL;
        for (int i = 0; i < f->n && s == TT_OK; i++) {
            const tt_st_info *e = &f->tensors[i];
            if (e->begin < at)
                s = st_fail(path, "tensor '%s' (bytes %llu .. %llu) overlaps tensor '%s'",
                            e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                            prev);
            else if (e->begin > at)
                s = st_fail(path, "tensor '%s' begins at byte %llu but %s%s%s ends at %llu (a "
                            "gap in the data buffer)", e->name, (unsigned long long)e->begin,
                            prev ? "tensor '" : "the header", prev ? prev : "", prev ? "'" : "",
                            (unsigned long long)at);
            at = e->end;
            prev = e->name;
        }
        if (s == TT_OK && at != data_size)
            s = st_fail(path, "%llu trailing bytes after the last tensor (the data buffer is "
                        "%llu bytes, the tensors cover %llu)",
                        (unsigned long long)(data_size - at), (unsigned long long)data_size,
                        (unsigned long long)at);
    }
    if (s != TT_OK) return s;

    name_index *order = TT_MALLOC(((size_t)f->n + 1) * sizeof *order);
    for (int i = 0; i < f->n; i++) order[i] = (name_index){f->tensors[i].name, i};
    qsort(order, (size_t)f->n, sizeof *order, cmp_by_name);
    f->by_name = TT_MALLOC(((size_t)f->n + 1) * sizeof *f->by_name);
    for (int i = 0; i < f->n; i++) f->by_name[i] = order[i].index;
    tt_free(order);
    f->data_size = (size_t)data_size;
    return TT_OK;
}

// f->data: data_size bytes (malloc, not TT_MALLOC: a huge file is an error, not an abort).
static tt_status alloc_data(tt_safetensors *f, const char *path) {
    f->data = malloc(f->data_size ? f->data_size : 1);
    if (!f->data)
        return tt_set_error(TT_ERR_NOMEM, "out of memory reading safetensors '%s' (%zu bytes of "
                            "tensors)", path, f->data_size);
    return TT_OK;
}

tt_status tt_safetensors_open_mem(tt_safetensors *f, const void *bytes, size_t size,
                                  const char *name) {
    TT_CHECK(f && (bytes || size == 0) && name, "f, bytes and name must be given");
    memset(f, 0, sizeof *f);
    const unsigned char *b = bytes;
    uint64_t hn = 0;
    tt_status s = check_length(b, size, name, &hn);
    if (s == TT_OK) s = parse(f, b + 8, hn, size - 8 - hn, name);
    if (s == TT_OK) s = alloc_data(f, name);
    if (s != TT_OK) {
        tt_safetensors_close(f);
        return s;
    }
    if (f->data_size) memcpy(f->data, b + 8 + hn, f->data_size);
    f->path = dup_str(name);
    return TT_OK;
}

// n bytes of fd into buf; false (errno set, 0 for a short file) when they are not all there.
static bool read_exact(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (unsigned char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = 0;
            return false;
        }
        got += (size_t)r;
    }
    return true;
}

tt_status tt_safetensors_open(tt_safetensors *f, const char *path) {
    TT_CHECK(f && path, "f and path must be given");
    memset(f, 0, sizeof *f);
    int fd;
    struct stat st;
    if (tt_file_open_read(path, "safetensors", &fd) != TT_OK) return TT_ERR_IO;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tt_set_error(TT_ERR_IO, "cannot stat safetensors '%s': %s", path, strerror(e));
    }
    // The header first, then the tensors straight into their buffer (one copy in memory).
    uint64_t size = (uint64_t)st.st_size, hn = 0;
    unsigned char len8[8], *header = NULL;
    tt_status s = TT_OK;
    bool ok = size < 8 || read_exact(fd, len8, 8);
    if (ok) s = check_length(len8, size, path, &hn);
    if (ok && s == TT_OK) {
        header = malloc(hn ? hn : 1);
        if (!header)
            s = tt_set_error(TT_ERR_NOMEM, "out of memory reading safetensors '%s'", path);
        else if (!(ok = read_exact(fd, header, hn)))
            s = TT_ERR_IO;
        else if ((s = parse(f, header, hn, size - 8 - hn, path)) == TT_OK &&
                 (s = alloc_data(f, path)) == TT_OK)
            ok = read_exact(fd, f->data, f->data_size);
    }
    if (!ok)
        s = tt_set_error(TT_ERR_IO, "cannot read safetensors '%s': %s", path,
                         errno ? strerror(errno) : "it shrank while reading");
    free(header);
    close(fd);
    if (s != TT_OK) tt_safetensors_close(f);
    else f->path = dup_str(path);
    return s;
}

const tt_st_info *tt_safetensors_find(const tt_safetensors *f, const char *name) {
    TT_CHECK(f && name, "f and name must be given");
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(f->tensors[f->by_name[mid]].name, name);
        if (c == 0) return &f->tensors[f->by_name[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const char *tt_safetensors_meta(const tt_safetensors *f, const char *key) {
    TT_CHECK(f && key, "f and key must be given");
    for (int i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}

tt_status tt_safetensors_get(const tt_safetensors *f, const char *name, tt_tensor **out) {
    TT_CHECK(f && name && out, "f, name and out must be given");
    *out = NULL;
    const tt_st_info *e = tt_safetensors_find(f, name);
    if (!e)
        return tt_set_error(TT_ERR_MISMATCH, "safetensors '%s' has no tensor '%s'",
                            f->path ? f->path : "", name);
    const unsigned char *src = f->data + e->begin;
    size_t es = st_dtypes[e->dtype].size, n = (size_t)((e->end - e->begin) / es);
    if (e->dtype == TT_ST_BOOL) {
        for (size_t i = 0; i < n; i++)
            if (src[i] > 1)
                return st_fail(f->path, "tensor '%s' (BOOL) has byte %u at element %zu; BOOL "
                               "elements are 0 or 1", name, src[i], i);
    }
    tt_tensor *t = tt__new(st_dtypes[e->dtype].loaded, e->ndim, e->shape);
    unsigned char *dst = tt_data(t);
    switch (e->dtype) {
        case TT_ST_F16:
            for (size_t i = 0; i < n; i++)
                ((float *)(void *)dst)[i] = tt__f16_to_f32((uint16_t)get_le(src + 2 * i, 2));
            break;
        case TT_ST_BF16:
            for (size_t i = 0; i < n; i++)
                ((float *)(void *)dst)[i] = bf16_to_f32((uint16_t)get_le(src + 2 * i, 2));
            break;
        case TT_ST_F32:
        case TT_ST_I32:
            for (size_t i = 0; i < n; i++) {
                uint32_t v = (uint32_t)get_le(src + 4 * i, 4);
                memcpy(dst + 4 * i, &v, 4);
            }
            break;
        case TT_ST_F64:
        case TT_ST_I64:
            for (size_t i = 0; i < n; i++) {
                uint64_t v = get_le(src + 8 * i, 8);
                memcpy(dst + 8 * i, &v, 8);
            }
            break;
        default:
            if (n) memcpy(dst, src, n);
            break;
    }
    *out = t;
    return TT_OK;
}

// ---- loading into a parameter list ----

typedef struct strbuf {
    char *p;
    size_t n, cap;
} strbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)k + 1 > b->cap) {
        b->cap = 2 * (b->n + (size_t)k + 1);
        b->p = TT_REALLOC(b->p, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

static bool dtype_kind_float(tt_dtype d) { return d == TT_F32 || d == TT_F64; }

// "(2, 3)" of a stored tensor.
static void info_shape(const tt_st_info *e, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < e->ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? ", " : "",
                              (long long)e->shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, e->ndim == 1 ? ",)" : ")");  // as tt_shape_str
}

tt_status tt_safetensors_copy_params(const tt_safetensors *f, const tt_params *p, bool strict) {
    TT_CHECK(f && p, "f and p must be given");
    strbuf missing = {0}, unexpected = {0}, sizes = {0};
    int n_missing = 0, n_unexpected = 0, n_sizes = 0;
    for (int i = 0; i < p->n; i++) {
        const char *name = p->items[i].name;
        const tt_tensor *dst = p->items[i].tensor;
        const tt_st_info *e = tt_safetensors_find(f, name);
        if (!e) {
            sb_printf(&missing, "%s'%s'", n_missing++ ? ", " : "", name);
            continue;
        }
        bool same = e->ndim == dst->ndim;
        for (int d = 0; same && d < e->ndim; d++) same = e->shape[d] == dst->shape[d];
        char a[128], b[128];
        if (!same) {
            info_shape(e, a, sizeof a);
            sb_printf(&sizes, "%s'%s' is %s in the file, %s in the model", n_sizes++ ? "; " : "",
                      name, a, tt_shape_str(dst, b, sizeof b));
        } else if (dtype_kind_float(st_dtypes[e->dtype].loaded) != dtype_kind_float(dst->dtype)) {
            sb_printf(&sizes, "%s'%s' is %s in the file, %s in the model",
                      n_sizes++ ? "; " : "", name, st_dtypes[e->dtype].name,
                      tt_dtype_name(dst->dtype));
        }
    }
    if (strict) {
        for (int i = 0; i < f->n; i++) {
            const char *name = f->tensors[f->by_name[i]].name;
            if (!tt_params_get(p, name))
                sb_printf(&unexpected, "%s'%s'", n_unexpected++ ? ", " : "", name);
        }
    }
    tt_status s = TT_OK;
    if (n_sizes || (strict && (n_missing || n_unexpected))) {
        strbuf msg = {0};
        sb_printf(&msg, "cannot load safetensors '%s' into the parameters:", f->path);
        if (strict && n_missing)
            sb_printf(&msg, " missing key(s): %s.", missing.p);
        if (strict && n_unexpected)
            sb_printf(&msg, " unexpected key(s): %s.", unexpected.p);
        if (n_sizes)
            sb_printf(&msg, " size or dtype mismatch: %s.", sizes.p);
        sb_printf(&msg, " Nothing was copied%s", n_sizes ? "" : " (strict = false loads the "
                  "matching ones)");
        s = tt_set_error(TT_ERR_MISMATCH, "%s", tt__one_line(msg.p));
        tt_free(msg.p);
    } else {
        for (int i = 0; i < p->n && s == TT_OK; i++) {
            if (!tt_safetensors_find(f, p->items[i].name)) continue;
            tt_tensor *t;
            s = tt_safetensors_get(f, p->items[i].name, &t);
            if (s == TT_OK) tt_copy_(p->items[i].tensor, t);
            tt_release(t);
        }
    }
    tt_free(missing.p);
    tt_free(unexpected.p);
    tt_free(sizes.p);
    return s;
}

tt_status tt_safetensors_load_params(const char *path, const tt_params *p, bool strict) {
    TT_CHECK(path && p, "path and p must be given");
    tt_safetensors f;
    tt_status s = tt_safetensors_open(&f, path);
    if (s == TT_OK) s = tt_safetensors_copy_params(&f, p, strict);
    tt_safetensors_close(&f);
    return s;
}

tt_status tt_safetensors_load_module(const char *path, tt_module m) {
    tt_params state;
    tt_params_init(&state);
    tt_module_state(m, &state, NULL);
    tt_status st = tt_safetensors_load_params(path, &state, true);
    tt_params_free(&state);
    return st;
}
