// GGUF files (io/gguf.h): the strict reader. The whole file is read into memory, then a cursor
// walks the header, checking every count against the bytes left before allocating for it.
// Tensor types and blocks are gguf_blocks.c; the writer is gguf_write.c.
#include "gguf.h"
#include "io_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- messages ----

#define gg_fail(path, ...) tt__file_fail("gguf", path, __VA_ARGS__)

// ---- the cursor ----

typedef struct cursor {
    const unsigned char *p;
    size_t size, at;
    const char *path;
} cursor;

static size_t left(const cursor *c) { return c->size - c->at; }

static bool take(cursor *c, size_t n, uint64_t *v) {
    if (left(c) < n) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) x |= (uint64_t)c->p[c->at + i] << (8 * i);
    c->at += n;
    *v = x;
    return true;
}

static tt_status truncated(const cursor *c, const char *what) {
    return gg_fail(c->path, "the file ends inside %s (at byte %zu of %zu; truncated?)", what,
                   c->at, c->size);
}

// A string (u64 length, bytes) of at most max bytes, copied with a NUL into *out.
static tt_status take_str(cursor *c, const char *what, uint64_t max, char **out, uint64_t *len) {
    uint64_t n;
    *out = NULL;
    if (!take(c, 8, &n)) return truncated(c, what);
    if (n > left(c))
        return gg_fail(c->path, "%s is %llu bytes, past the end of the file (%zu bytes left)",
                       what, (unsigned long long)n, left(c));
    if (n > max)
        return gg_fail(c->path, "%s is %llu bytes; the limit is %llu", what,
                       (unsigned long long)n, (unsigned long long)max);
    *out = TT_MALLOC((size_t)n + 1);
    memcpy(*out, c->p + c->at, (size_t)n);
    (*out)[n] = 0;
    c->at += (size_t)n;
    if (len) *len = n;
    return TT_OK;
}

// ---- values ----

// Bytes of one scalar of type t (0 for STRING, ARRAY and unknown types).
static size_t scalar_size(int t) {
    static const unsigned char sizes[TT_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8,
                                                             8, 8};
    return t >= 0 && t < TT_GGUF_TYPE_COUNT ? sizes[t] : 0;
}

static void value_free(tt_gguf_value *v) {
    tt_free(v->str);
    tt_free(v->raw);
    for (uint64_t i = 0; v->items && i < v->n; i++) value_free(&v->items[i]);
    tt_free(v->items);
    memset(v, 0, sizeof *v);
}

// The scalar of type t in bytes p into v.
static void decode_scalar(tt_gguf_value *v, int t, const unsigned char *p) {
    uint64_t x = 0;
    size_t n = scalar_size(t);
    for (size_t i = 0; i < n; i++) x |= (uint64_t)p[i] << (8 * i);
    v->type = (tt_gguf_type)t;
    switch (t) {
        case TT_GGUF_INT8: v->num.i = (int8_t)x; break;
        case TT_GGUF_INT16: v->num.i = (int16_t)x; break;
        case TT_GGUF_INT32: v->num.i = (int32_t)x; break;
        case TT_GGUF_INT64: memcpy(&v->num.i, &x, 8); break;
        case TT_GGUF_FLOAT32: {
            uint32_t u = (uint32_t)x;
            float f;
            memcpy(&f, &u, 4);
            v->num.f = f;
            break;
        }
        case TT_GGUF_FLOAT64: memcpy(&v->num.f, &x, 8); break;
        default: v->num.u = x; break;  // unsigned, BOOL
    }
}

static tt_status parse_value(cursor *c, tt_gguf_value *v, int type, int depth, const char *key);

// An array's element type, count and elements into v.
static tt_status parse_array(cursor *c, tt_gguf_value *v, int depth, const char *key) {
    uint64_t et, n;
    if (!take(c, 4, &et) || !take(c, 8, &n)) return truncated(c, "an array header");
    if (et >= TT_GGUF_TYPE_COUNT)
        return gg_fail(c->path, "key '%s': array of unknown value type %llu", key,
                       (unsigned long long)et);
    if (depth >= TT_GGUF_MAX_DEPTH)
        return gg_fail(c->path, "key '%s': arrays nested deeper than %d", key,
                       TT_GGUF_MAX_DEPTH);
    size_t es = scalar_size((int)et), min = es ? es : et == TT_GGUF_STRING ? 8 : 12;
    if (n > left(c) / min)
        return gg_fail(c->path, "key '%s': an array of %llu %s values cannot fit in the %zu "
                       "bytes left", key, (unsigned long long)n, tt_gguf_type_name((int)et),
                       left(c));
    v->type = TT_GGUF_ARRAY;
    v->elem = (tt_gguf_type)et;
    if (es) {
        v->raw = TT_MALLOC((size_t)n * es + 1);
        memcpy(v->raw, c->p + c->at, (size_t)n * es);
        c->at += (size_t)n * es;
        if (et == TT_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (v->raw[i] > 1)
                    return gg_fail(c->path, "key '%s': BOOL element %llu is %u, not 0 or 1",
                                   key, (unsigned long long)i, v->raw[i]);
        v->n = n;
        return TT_OK;
    }
    v->items = TT_CALLOC((size_t)n + 1, sizeof *v->items);
    v->n = n;
    for (uint64_t i = 0; i < n; i++) {
        tt_status s = parse_value(c, &v->items[i], (int)et, depth + 1, key);
        if (s != TT_OK) return s;
    }
    return TT_OK;
}

// One value of type into v (freed by the caller on error too).
static tt_status parse_value(cursor *c, tt_gguf_value *v, int type, int depth, const char *key) {
    if (type == TT_GGUF_STRING) {
        v->type = TT_GGUF_STRING;
        return take_str(c, "a string value", UINT64_MAX, &v->str, &v->n);
    }
    if (type == TT_GGUF_ARRAY) return parse_array(c, v, depth, key);
    size_t n = scalar_size(type);
    if (left(c) < n) return truncated(c, "a value");
    decode_scalar(v, type, c->p + c->at);
    c->at += n;
    if (type == TT_GGUF_BOOL && v->num.u > 1)
        return gg_fail(c->path, "key '%s': BOOL value %llu is not 0 or 1", key,
                       (unsigned long long)v->num.u);
    return TT_OK;
}

tt_gguf_value tt_gguf_array_get(const tt_gguf_value *v, uint64_t i) {
    TT_CHECK(v && v->type == TT_GGUF_ARRAY, "tt_gguf_array_get takes an ARRAY value");
    TT_CHECK(i < v->n, "index %llu is outside the array's %llu elements", (unsigned long long)i,
             (unsigned long long)v->n);
    tt_gguf_value out;
    memset(&out, 0, sizeof out);
    if (v->items) return v->items[i];
    decode_scalar(&out, v->elem, v->raw + i * scalar_size(v->elem));
    return out;
}

// ---- key-value pairs ----

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// The first name listed twice among n (NULL when none).
static const char *first_duplicate(char **names, int64_t n) {
    char **sorted = TT_MALLOC(((size_t)n + 1) * sizeof *sorted);
    memcpy(sorted, names, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_str);
    const char *dup = NULL;
    for (int64_t i = 1; i < n && !dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) dup = sorted[i];
    tt_free(sorted);
    return dup;
}

static tt_status parse_kvs(cursor *c, tt_gguf *f, uint64_t n) {
    // Each pair takes at least 13 bytes (key length, type, one byte of value).
    if (n > left(c) / 13)
        return gg_fail(c->path, "%llu metadata pairs cannot fit in the %zu bytes left",
                       (unsigned long long)n, left(c));
    f->kv = TT_CALLOC((size_t)n + 1, sizeof *f->kv);
    char **keys = TT_CALLOC((size_t)n + 1, sizeof *keys);
    tt_status s = TT_OK;
    for (uint64_t i = 0; i < n && s == TT_OK; i++) {
        tt_gguf_kv *kv = &f->kv[i];
        uint64_t klen, type;
        f->n_kv++;
        if ((s = take_str(c, "a metadata key", 65535, &kv->key, &klen)) != TT_OK) break;
        keys[i] = kv->key;
        if (klen == 0 || strlen(kv->key) != klen) {
            s = gg_fail(c->path, "metadata key %llu is empty or holds a NUL byte",
                        (unsigned long long)i);
        } else if (!take(c, 4, &type)) {
            s = truncated(c, "a metadata type");
        } else if (type >= TT_GGUF_TYPE_COUNT) {
            char pk[64];
            s = gg_fail(c->path,
                        "key '%s' has unknown value type %llu (the format's are 0 .. "
                        "12)",
                        tt__printable(kv->key, klen, pk, sizeof pk), (unsigned long long)type);
        } else {
            char pk[64];
            s = parse_value(c, &kv->value, (int)type, 0,
                            tt__printable(kv->key, klen, pk, sizeof pk));
        }
    }
    const char *dup = s == TT_OK ? first_duplicate(keys, f->n_kv) : NULL;
    if (dup) {
        char pk[64];
        s = gg_fail(c->path, "metadata key '%s' appears twice",
                    tt__printable(dup, strlen(dup), pk, sizeof pk));
    }
    tt_free(keys);
    return s;
}

const tt_gguf_value *tt_gguf_find_kv(const tt_gguf *f, const char *key) {
    TT_CHECK(f && key, "file and key must be given");
    for (int64_t i = 0; i < f->n_kv; i++)
        if (strcmp(f->kv[i].key, key) == 0) return &f->kv[i].value;
    return NULL;
}

const char *tt_gguf_get_str(const tt_gguf *f, const char *key) {
    const tt_gguf_value *v = tt_gguf_find_kv(f, key);
    return v && v->type == TT_GGUF_STRING ? v->str : NULL;
}

bool tt_gguf_get_int(const tt_gguf *f, const char *key, int64_t *out) {
    const tt_gguf_value *v = tt_gguf_find_kv(f, key);
    if (!v) return false;
    switch (v->type) {
        case TT_GGUF_UINT8: case TT_GGUF_UINT16: case TT_GGUF_UINT32: case TT_GGUF_UINT64:
            if (v->num.u > (uint64_t)INT64_MAX) return false;
            *out = (int64_t)v->num.u;
            return true;
        case TT_GGUF_INT8: case TT_GGUF_INT16: case TT_GGUF_INT32: case TT_GGUF_INT64:
            *out = v->num.i;
            return true;
        default: return false;
    }
}

bool tt_gguf_get_float(const tt_gguf *f, const char *key, double *out) {
    const tt_gguf_value *v = tt_gguf_find_kv(f, key);
    if (!v || (v->type != TT_GGUF_FLOAT32 && v->type != TT_GGUF_FLOAT64)) return false;
    *out = v->num.f;
    return true;
}

// ---- tensors ----

// One tensor description into t (its name already read).
static tt_status parse_tensor(cursor *c, tt_gguf_tensor *t) {
    uint64_t nd, type, off;
    const char *n = t->name;
    if (!take(c, 4, &nd)) return truncated(c, "a tensor's dims");
    if (nd > TT_GGUF_MAX_DIMS)
        return gg_fail(c->path, "tensor '%s' has %llu dims; ggml allows at most %d", n,
                       (unsigned long long)nd, TT_GGUF_MAX_DIMS);
    t->ndim = (int)nd;
    uint64_t numel = 1;
    for (int d = 0; d < TT_GGUF_MAX_DIMS; d++) {
        uint64_t ne = 1;
        if (d < t->ndim && !take(c, 8, &ne)) return truncated(c, "a tensor's dims");
        if (ne > (uint64_t)INT64_MAX / 4 || (ne && numel > ((uint64_t)INT64_MAX / 4) / ne))
            return gg_fail(c->path, "tensor '%s': its dims overflow (ne[%d] is %llu)", n, d,
                           (unsigned long long)ne);
        t->ne[d] = (int64_t)ne;
        numel *= ne;
    }
    if (!take(c, 4, &type) || !take(c, 8, &off)) return truncated(c, "a tensor's type");
    if (!tt_ggml_type_supported((int)type) || type > 64)
        return gg_fail(c->path, "tensor '%s' has %s ggml type %s (%llu); this library reads "
                       "F32, F16, BF16, Q8_0 and Q4_0", n, type < 64 &&
                       strcmp(tt_ggml_type_name((int)type), "?") ? "the unsupported" :
                       "an unknown", tt_ggml_type_name(type < 64 ? (int)type : -1),
                       (unsigned long long)type);
    t->type = (tt_ggml_type)type;
    if ((type == TT_GGML_Q8_0 || type == TT_GGML_Q4_0) && t->ne[0] % 32 != 0)
        return gg_fail(c->path, "tensor '%s': ne[0] = %lld is not a multiple of the %s block "
                       "(32)", n, (long long)t->ne[0], tt_ggml_type_name((int)type));
    t->offset = off;
    t->nbytes = tt_ggml_type_bytes(t->type, (int64_t)numel);
    return TT_OK;
}

// A tensor's place for the layout and name checks (qsort has no context argument).
typedef struct placed {
    uint64_t offset;
    const char *name;
    int64_t index;
} placed;

static int cmp_offset(const void *a, const void *b) {
    const placed *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const placed *)a)->name, ((const placed *)b)->name);
}

// Offsets aligned, inside the data section, no overlaps; names unique (f->by_name set).
static tt_status check_layout(tt_gguf *f, uint64_t data_size) {
    int64_t n = f->n_tensors;
    placed *pl = TT_MALLOC(((size_t)n + 1) * sizeof *pl);
    for (int64_t i = 0; i < n; i++) pl[i] = (placed){f->tensors[i].offset, f->tensors[i].name, i};
    qsort(pl, (size_t)n, sizeof *pl, cmp_offset);
    tt_status s = TT_OK;
    uint64_t end = 0;
    for (int64_t k = 0; k < n && s == TT_OK; k++) {
        const tt_gguf_tensor *t = &f->tensors[pl[k].index];
        if (t->offset % f->alignment)
            s = gg_fail(f->path, "tensor '%s' starts at offset %llu, not a multiple of the "
                        "alignment %llu", t->name, (unsigned long long)t->offset,
                        (unsigned long long)f->alignment);
        else if (t->offset > data_size || t->nbytes > data_size - t->offset)
            s = gg_fail(f->path, "tensor '%s' (%llu bytes at offset %llu) runs past the data "
                        "section (%llu bytes; truncated?)", t->name,
                        (unsigned long long)t->nbytes, (unsigned long long)t->offset,
                        (unsigned long long)data_size);
        else if (k > 0 && t->offset < end)
            s = gg_fail(f->path, "tensor '%s' at offset %llu overlaps tensor '%s'", t->name,
                        (unsigned long long)t->offset, pl[k - 1].name);
        if (t->offset + t->nbytes > end) end = t->offset + t->nbytes;
    }
    qsort(pl, (size_t)n, sizeof *pl, cmp_name);
    for (int64_t k = 1; k < n && s == TT_OK; k++)
        if (strcmp(pl[k - 1].name, pl[k].name) == 0)
            s = gg_fail(f->path, "tensor '%s' appears twice", pl[k].name);
    f->by_name = TT_MALLOC(((size_t)n + 1) * sizeof *f->by_name);
    for (int64_t k = 0; k < n; k++) f->by_name[k] = pl[k].index;
    tt_free(pl);
    return s;
}

static tt_status parse_tensors(cursor *c, tt_gguf *f, uint64_t n) {
    // Each description takes at least 24 bytes (name length, dims, type, offset).
    if (n > left(c) / 24)
        return gg_fail(c->path, "%llu tensors cannot be described in the %zu bytes left",
                       (unsigned long long)n, left(c));
    f->tensors = TT_CALLOC((size_t)n + 1, sizeof *f->tensors);
    for (uint64_t i = 0; i < n; i++) {
        tt_gguf_tensor *t = &f->tensors[i];
        uint64_t len;
        f->n_tensors++;
        tt_status s = take_str(c, "a tensor name", TT_GGUF_MAX_NAME, &t->name, &len);
        if (s != TT_OK) return s;
        if (len == 0 || strlen(t->name) != len) {
            char pn[80];
            return gg_fail(c->path, "tensor %llu's name '%s' is empty or holds a NUL byte",
                           (unsigned long long)i, tt__printable(t->name, len, pn, sizeof pn));
        }
        for (char *p = t->name; *p; p++)  // names appear in messages
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        if ((s = parse_tensor(c, t)) != TT_OK) return s;
    }
    return TT_OK;
}

// general.alignment when given: a UINT32 power of two.
static tt_status read_alignment(tt_gguf *f) {
    const tt_gguf_value *a = tt_gguf_find_kv(f, "general.alignment");
    f->alignment = TT_GGUF_ALIGNMENT;
    if (!a) return TT_OK;
    if (a->type != TT_GGUF_UINT32 || a->num.u == 0 || (a->num.u & (a->num.u - 1)))
        return gg_fail(f->path, "general.alignment is %s %llu, not a UINT32 power of two",
                       tt_gguf_type_name(a->type), (unsigned long long)a->num.u);
    f->alignment = a->num.u;
    return TT_OK;
}

// ---- open / close ----

static tt_status parse(tt_gguf *f) {
    cursor c = {f->bytes, f->size, 0, f->path};
    uint64_t magic, version, n_tensors, n_kv;
    if (!take(&c, 4, &magic) || memcmp(f->bytes, "GGUF", 4) != 0)
        return gg_fail(f->path, "no 'GGUF' magic at the start (not a GGUF file?)");
    if (!take(&c, 4, &version)) return truncated(&c, "the header");
    if (version != 2 && version != 3)
        return gg_fail(f->path, "version %llu; this library reads versions 2 and 3",
                       (unsigned long long)version);
    f->version = (uint32_t)version;
    if (!take(&c, 8, &n_tensors) || !take(&c, 8, &n_kv)) return truncated(&c, "the header");
    tt_status s = parse_kvs(&c, f, n_kv);
    if (s == TT_OK) s = read_alignment(f);
    if (s == TT_OK) s = parse_tensors(&c, f, n_tensors);
    if (s != TT_OK) return s;
    uint64_t pad = (f->alignment - c.at % f->alignment) % f->alignment;
    if (pad > left(&c) && f->n_tensors > 0)
        return gg_fail(f->path, "the file ends before its data section (alignment %llu)",
                       (unsigned long long)f->alignment);
    f->data_offset = pad > left(&c) ? c.size : c.at + pad;  // no tensors: padding optional
    return check_layout(f, f->size - f->data_offset);
}

void tt_gguf_close(tt_gguf *f) {
    if (!f) return;
    for (int64_t i = 0; f->kv && i < f->n_kv; i++) {
        tt_free(f->kv[i].key);
        value_free(&f->kv[i].value);
    }
    for (int64_t i = 0; f->tensors && i < f->n_tensors; i++) tt_free(f->tensors[i].name);
    tt_free(f->kv);
    tt_free(f->tensors);
    tt_free(f->by_name);
    free(f->bytes);
    tt_free(f->path);
    memset(f, 0, sizeof *f);
}

// Parses f->bytes (owned by f); on error f is closed (the message kept).
static tt_status open_bytes(tt_gguf *f, const char *name) {
    size_t n = strlen(name) + 1;
    f->path = TT_MALLOC(n);
    memcpy(f->path, name, n);
    tt_status s = parse(f);
    if (s != TT_OK) tt_gguf_close(f);
    return s;
}

tt_status tt_gguf_open_mem(tt_gguf *f, const void *bytes, size_t size, const char *name) {
    TT_CHECK(f && (bytes || size == 0) && name, "file, bytes and name must be given");
    memset(f, 0, sizeof *f);
    f->bytes = malloc(size ? size : 1);
    TT_CHECK(f->bytes, "out of memory copying %zu bytes", size);
    if (size) memcpy(f->bytes, bytes, size);
    f->size = size;
    return open_bytes(f, name);
}

// The whole of fd (size bytes by fstat) into f->bytes.
static tt_status read_whole(tt_gguf *f, int fd, const char *path) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return tt_set_error(TT_ERR_IO, "cannot stat gguf '%s': %s", path, strerror(errno));
    size_t size = (size_t)st.st_size, at = 0;
    f->bytes = malloc(size ? size : 1);
    if (!f->bytes) return tt_set_error(TT_ERR_NOMEM, "out of memory reading gguf '%s'", path);
    while (at < size) {
        ssize_t r = read(fd, f->bytes + at, size - at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return tt_set_error(TT_ERR_IO, "cannot read gguf '%s': %s", path,
                                r < 0 ? strerror(errno) : "it shrank while reading");
        at += (size_t)r;
    }
    f->size = size;
    return TT_OK;
}

tt_status tt_gguf_open(tt_gguf *f, const char *path) {
    TT_CHECK(f && path, "file and path must be given");
    memset(f, 0, sizeof *f);
    int fd;
    if (tt_file_open_read(path, "gguf", &fd) != TT_OK) return TT_ERR_IO;
    tt_status s = read_whole(f, fd, path);
    close(fd);
    if (s != TT_OK) {
        tt_gguf_close(f);
        return s;
    }
    return open_bytes(f, path);
}

const tt_gguf_tensor *tt_gguf_find(const tt_gguf *f, const char *name) {
    TT_CHECK(f && name, "file and name must be given");
    int64_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->tensors[f->by_name[mid]].name, name);
        if (c == 0) return &f->tensors[f->by_name[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const void *tt_gguf_data(const tt_gguf *f, const tt_gguf_tensor *t) {
    TT_CHECK(f && t, "file and tensor must be given");
    return f->bytes + f->data_offset + t->offset;
}

tt_status tt_gguf_get(const tt_gguf *f, const char *name, tt_tensor **out) {
    TT_CHECK(f && name && out, "file, name and out must be given");
    *out = NULL;
    const tt_gguf_tensor *t = tt_gguf_find(f, name);
    if (!t) return tt_set_error(TT_ERR_MISMATCH, "gguf '%s' has no tensor '%s'", f->path, name);
    int64_t shape[TT_MAX_DIMS], numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = t->ne[t->ndim - 1 - d];
        numel *= shape[d];
    }
    tt_tensor *x = tt_empty(TT_F32, t->ndim, shape);
    tt_gguf_dequantize(tt_data(x), tt_gguf_data(f, t), t->type, numel);
    *out = x;
    return TT_OK;
}
