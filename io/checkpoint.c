// Checkpoint files (io/checkpoint.h): the in-memory container of typed metadata and named
// tensors, the atomic writer and the strict loader of the format in docs/checkpoint.md, and
// the XXH3-64 tensor hash and parameter fingerprint. No memory mapping, no streaming loads.
#include "checkpoint.h"
#include "io_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

// ---- format constants (docs/checkpoint.md) ----

static const unsigned char ckpt_magic[8] = {0x89, 'T', 'T', 'C', 'K', 'P', 'T', '\n'};
#define CKPT_VERSION 1u
#define CKPT_ENDIAN_TAG 0x01020304u
#define CKPT_FIXED 40          // magic .. n_tensors
#define CKPT_ALIGN 64          // every blob starts at a multiple of this
#define CKPT_NAME_MAX 255      // key and tensor-name length cap, bytes
#define CKPT_MAX_META 65536
#define CKPT_MAX_TENSORS 65536
#define CKPT_META_MIN 12       // key_len (2) + 1-byte key + type (1) + 8-byte value
#define CKPT_DTYPES 4          // f32, f64, i32, i64 (tt_dtype's first four); no bool
#define CKPT_TENSOR_MIN 29     // name_len (2) + 1-byte name + dtype, ndim (2) + 3 * 8

// ---- the container ----

void tt_ckpt_init(tt_checkpoint *c) {
    memset(c, 0, sizeof *c);
    tt_params_init(&c->tensors);
}

static void meta_free(tt_meta *m) {
    tt_free(m->key);
    tt_free(m->bytes);
}

void tt_ckpt_free(tt_checkpoint *c) {
    for (int i = 0; i < c->nmeta; i++) meta_free(&c->meta[i]);
    tt_free(c->meta);
    tt_params_free(&c->tensors);
    memset(c, 0, sizeof *c);
}

// Aborts unless name is 1 .. CKPT_NAME_MAX bytes; the message names func, the public
// function the user called.
static void check_name(const char *what, const char *name, const char *func) {
    TT_CHECK_IN(func, name && name[0], "%s must be a non-empty string", what);
    size_t n = strlen(name);
    TT_CHECK_IN(func, n <= CKPT_NAME_MAX, "%s '%.40s...' is %zu bytes; the format allows %d: "
                "use a shorter name", what, name, n, CKPT_NAME_MAX);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = TT_MALLOC(n);
    memcpy(d, s, n);
    return d;
}

// The entry for key, replacing an existing one (its value freed) or appended. Messages name
// func, the setter the user called.
static tt_meta *meta_slot(tt_checkpoint *c, const char *key, const char *func) {
    check_name("metadata key", key, func);
    for (int i = 0; i < c->nmeta; i++) {
        if (strcmp(c->meta[i].key, key) == 0) {
            tt_free(c->meta[i].bytes);
            c->meta[i].bytes = NULL;
            c->meta[i].nbytes = 0;
            return &c->meta[i];
        }
    }
    TT_CHECK_IN(func, c->nmeta < CKPT_MAX_META, "the format holds at most %d metadata entries; "
                "pack related values into one tt_ckpt_set_bytes entry", CKPT_MAX_META);
    if (c->nmeta == c->capmeta) {
        c->capmeta = c->capmeta ? 2 * c->capmeta : 16;
        c->meta = TT_REALLOC(c->meta, (size_t)c->capmeta * sizeof *c->meta);
    }
    tt_meta *m = &c->meta[c->nmeta++];
    memset(m, 0, sizeof *m);
    m->key = dup_str(key);
    return m;
}

void tt_ckpt_set_i64(tt_checkpoint *c, const char *key, int64_t v) {
    tt_meta *m = meta_slot(c, key, __func__);
    m->type = TT_META_I64;
    m->i64 = v;
}

void tt_ckpt_set_f64(tt_checkpoint *c, const char *key, double v) {
    tt_meta *m = meta_slot(c, key, __func__);
    m->type = TT_META_F64;
    m->f64 = v;
}

void tt_ckpt_set_bytes(tt_checkpoint *c, const char *key, const void *data, size_t n) {
    check_name("metadata key", key, __func__);
    TT_CHECK(data || n == 0, "metadata '%s': data is NULL with %zu bytes; pass n = 0 for an "
             "empty value", key, n);
    tt_meta *m = meta_slot(c, key, __func__);
    m->type = TT_META_BYTES;
    m->bytes = TT_MALLOC(n);
    if (n) memcpy(m->bytes, data, n);
    m->nbytes = n;
}

static const tt_meta *meta_find(const tt_checkpoint *c, const char *key) {
    for (int i = 0; i < c->nmeta; i++)
        if (strcmp(c->meta[i].key, key) == 0) return &c->meta[i];
    return NULL;
}

bool tt_ckpt_get_i64(const tt_checkpoint *c, const char *key, int64_t *out) {
    const tt_meta *m = meta_find(c, key);
    if (!m || m->type != TT_META_I64) return false;
    *out = m->i64;
    return true;
}

bool tt_ckpt_get_f64(const tt_checkpoint *c, const char *key, double *out) {
    const tt_meta *m = meta_find(c, key);
    if (!m || m->type != TT_META_F64) return false;
    *out = m->f64;
    return true;
}

bool tt_ckpt_get_bytes(const tt_checkpoint *c, const char *key, const unsigned char **data,
                       size_t *n) {
    const tt_meta *m = meta_find(c, key);
    if (!m || m->type != TT_META_BYTES) return false;
    *data = m->bytes;
    *n = m->nbytes;
    return true;
}

// A tensor added again under the same name replaces the earlier one. Messages name func, the
// public function the user called.
static void add_tensor(tt_checkpoint *c, const char *name, tt_tensor *t, const char *func) {
    check_name("tensor name", name, func);
    TT_CHECK_IN(func, t, "tensor '%s' is NULL", name);
    TT_CHECK_IN(func, t->dtype < CKPT_DTYPES, "tensor '%s' %s is %s; the format holds f32, f64, "
                "i32 and i64: convert it with tt_to_dtype(t, TT_I32) and back after loading",
                name, tt__shape(t), tt_dtype_name(t->dtype));
    for (int i = 0; i < c->tensors.n; i++) {
        if (strcmp(c->tensors.items[i].name, name) == 0) {
            tt_retain(t);
            tt_release(c->tensors.items[i].tensor);
            c->tensors.items[i].tensor = t;
            return;
        }
    }
    TT_CHECK_IN(func, c->tensors.n < CKPT_MAX_TENSORS, "the format holds at most %d tensors; "
                "split the state over several checkpoints", CKPT_MAX_TENSORS);
    tt_params_add(&c->tensors, NULL, name, t);
}

void tt_ckpt_add_tensor(tt_checkpoint *c, const char *name, tt_tensor *t) {
    add_tensor(c, name, t, __func__);
}

void tt_ckpt_add_params(tt_checkpoint *c, const char *prefix, const tt_params *p) {
    for (int i = 0; i < p->n; i++) {
        char full[TT_NAME_MAX];
        snprintf(full, sizeof full, "%s", prefix ? prefix : "");
        size_t k = strlen(full), n = strlen(p->items[i].name);
        TT_CHECK(k + n < sizeof full, "name '%s%s' is longer than %d bytes; use a shorter "
                 "prefix", full, p->items[i].name, (int)sizeof full - 1);
        memcpy(full + k, p->items[i].name, n + 1);
        add_tensor(c, full, p->items[i].tensor, __func__);
    }
}

tt_tensor *tt_ckpt_get_tensor(const tt_checkpoint *c, const char *name) {
    return tt_params_get(&c->tensors, name);
}

tt_status tt_ckpt_restore_params(const tt_checkpoint *c, const char *prefix, const tt_params *p) {
    // Check everything first, so that nothing is copied on a mismatch.
    char full[2 * TT_NAME_MAX];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < p->n; i++) {
            tt_tensor *dst = p->items[i].tensor;
            snprintf(full, sizeof full, "%s%s", prefix ? prefix : "", p->items[i].name);
            tt_tensor *src = tt_ckpt_get_tensor(c, full);
            if (pass == 1) {
                tt_copy_(dst, src);
                continue;
            }
            if (!src)
                return tt_set_error(TT_ERR_MISMATCH, "checkpoint has no tensor '%s'", full);
            if (src->dtype != dst->dtype)
                return tt_set_error(TT_ERR_MISMATCH, "tensor '%s' is %s in the checkpoint, %s "
                                    "in the model", full, tt_dtype_name(src->dtype),
                                    tt_dtype_name(dst->dtype));
            if (!tt_same_shape(src, dst)) {
                char a[128], b[128];
                return tt_set_error(TT_ERR_MISMATCH, "tensor '%s' has shape %s in the checkpoint, "
                                    "%s in the model", full, tt_shape_str(src, a, sizeof a),
                                    tt_shape_str(dst, b, sizeof b));
            }
        }
    }
    return TT_OK;
}

// ---- little-endian encoding ----

static bool host_is_little_endian(void) {
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

// Reverses the bytes of each es-byte element of buf[0 .. nbytes): little- <-> big-endian.
static void swap_elements(unsigned char *buf, size_t nbytes, size_t es) {
    for (size_t i = 0; i < nbytes; i += es) {
        for (size_t a = 0, b = es - 1; a < b; a++, b--) {
            unsigned char x = buf[i + a];
            buf[i + a] = buf[i + b];
            buf[i + b] = x;
        }
    }
}

// A tensor's elements, row-major, as little-endian bytes: a pointer into its storage when it
// is contiguous on a little-endian host (*owned = NULL), else a new buffer (*owned = it).
static const unsigned char *tensor_le_bytes(const tt_tensor *t, size_t *nbytes, void **owned) {
    size_t es = tt_dtype_size(t->dtype);
    *nbytes = (size_t)tt_numel(t) * es;
    *owned = NULL;
    if (*nbytes == 0) return NULL;
    if (tt_is_contiguous(t) && host_is_little_endian()) return tt_data(t);
    tt_tensor *c = tt__contiguous_copy(t);
    unsigned char *buf = TT_MALLOC(*nbytes);
    memcpy(buf, tt_data(c), *nbytes);
    tt_release(c);
    if (!host_is_little_endian()) swap_elements(buf, *nbytes, es);
    *owned = buf;
    return buf;
}

uint64_t tt_tensor_hash(const tt_tensor *t) {
    TT_CHECK(t, "tensor is NULL");
    size_t n;
    void *owned;
    const unsigned char *b = tensor_le_bytes(t, &n, &owned);
    uint64_t h = XXH3_64bits(b, n);
    tt_free(owned);
    return h;
}

uint64_t tt_params_fingerprint(const tt_params *p) {
    XXH3_state_t *st = XXH3_createState();
    TT_CHECK(st, "out of memory creating an XXH3 state");
    XXH3_64bits_reset(st);
    for (int i = 0; i < p->n; i++) {
        const tt_tensor *t = p->items[i].tensor;
        unsigned char rec[8 + 2 + 8 * TT_MAX_DIMS];
        put_le(rec, tt_tensor_hash(t), 8);
        rec[8] = (unsigned char)t->dtype;
        rec[9] = (unsigned char)t->ndim;
        for (int d = 0; d < t->ndim; d++) put_le(rec + 10 + 8 * d, (uint64_t)t->shape[d], 8);
        XXH3_64bits_update(st, p->items[i].name, strlen(p->items[i].name) + 1);
        XXH3_64bits_update(st, rec, 10 + 8 * (size_t)t->ndim);
    }
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

// ---- the writer ----

typedef struct bytebuf {
    unsigned char *p;
    size_t n, cap;
} bytebuf;

static unsigned char *buf_grow(bytebuf *b, size_t k) {
    if (b->n + k > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + k) cap *= 2;
        b->p = TT_REALLOC(b->p, cap);
        b->cap = cap;
    }
    unsigned char *at = b->p + b->n;
    b->n += k;
    return at;
}

static void buf_le(bytebuf *b, uint64_t v, int n) { put_le(buf_grow(b, (size_t)n), v, n); }

static void buf_str(bytebuf *b, const char *s) {
    size_t n = strlen(s);
    buf_le(b, n, 2);
    memcpy(buf_grow(b, n), s, n);
}

static size_t align_up(size_t x) { return (x + CKPT_ALIGN - 1) / CKPT_ALIGN * CKPT_ALIGN; }

// The bytes of a checkpoint after its header, for tt__write_atomic: each tensor at its
// aligned offset.
typedef struct ckpt_body {
    const bytebuf *h;
    int nt;
    const unsigned char *const *blob;
    const size_t *blob_n;
} ckpt_body;

static bool write_ckpt(int fd, void *ctx) {
    const ckpt_body *b = ctx;
    static const unsigned char zeros[CKPT_ALIGN] = {0};
    bool ok = tt__write_all(fd, b->h->p, b->h->n);
    size_t pos = b->h->n;
    for (int i = 0; ok && i < b->nt; i++) {
        size_t pad = align_up(pos) - pos;
        ok = tt__write_all(fd, zeros, pad) && tt__write_all(fd, b->blob[i], b->blob_n[i]);
        pos += pad + b->blob_n[i];
    }
    return ok;
}

tt_status tt_ckpt_save(const tt_checkpoint *c, const char *path) {
    TT_CHECK(c && path && path[0], "checkpoint and path must be given");
    int nt = c->tensors.n;

    // The header: fixed fields, metadata, tensor table; offsets laid out after it.
    bytebuf h = {0};
    memcpy(buf_grow(&h, 8), ckpt_magic, 8);
    buf_le(&h, CKPT_VERSION, 4);
    buf_le(&h, CKPT_ENDIAN_TAG, 4);
    buf_le(&h, 0, 8);  // header_size, patched below
    buf_le(&h, 0, 8);  // file_size, patched below
    buf_le(&h, (uint64_t)c->nmeta, 4);
    buf_le(&h, (uint64_t)nt, 4);
    for (int i = 0; i < c->nmeta; i++) {
        const tt_meta *m = &c->meta[i];
        buf_str(&h, m->key);
        buf_le(&h, (uint64_t)m->type, 1);
        if (m->type == TT_META_I64) {
            buf_le(&h, (uint64_t)m->i64, 8);
        } else if (m->type == TT_META_F64) {
            uint64_t bits;
            memcpy(&bits, &m->f64, 8);
            buf_le(&h, bits, 8);
        } else {
            buf_le(&h, m->nbytes, 8);
            if (m->nbytes) memcpy(buf_grow(&h, m->nbytes), m->bytes, m->nbytes);
        }
    }
    const unsigned char **blob = TT_CALLOC((size_t)nt + 1, sizeof *blob);
    void **owned = TT_CALLOC((size_t)nt + 1, sizeof *owned);
    size_t *blob_n = TT_CALLOC((size_t)nt + 1, sizeof *blob_n);
    size_t *entry_at = TT_CALLOC((size_t)nt + 1, sizeof *entry_at);  // offset field position
    for (int i = 0; i < nt; i++) {
        const tt_tensor *t = c->tensors.items[i].tensor;
        blob[i] = tensor_le_bytes(t, &blob_n[i], &owned[i]);
        buf_str(&h, c->tensors.items[i].name);
        buf_le(&h, (uint64_t)t->dtype, 1);
        buf_le(&h, (uint64_t)t->ndim, 1);
        for (int d = 0; d < t->ndim; d++) buf_le(&h, (uint64_t)t->shape[d], 8);
        entry_at[i] = h.n;
        buf_le(&h, 0, 8);  // offset, patched below
        buf_le(&h, blob_n[i], 8);
        buf_le(&h, XXH3_64bits(blob[i], blob_n[i]), 8);
    }
    size_t header_size = h.n + 8, pos = header_size;
    for (int i = 0; i < nt; i++) {
        pos = align_up(pos);
        put_le(h.p + entry_at[i], pos, 8);
        pos += blob_n[i];
    }
    size_t file_size = pos;
    put_le(h.p + 16, header_size, 8);
    put_le(h.p + 24, file_size, 8);
    buf_le(&h, XXH3_64bits(h.p, h.n), 8);

    // Write a temp file next to the target, then rename it over the target.
    ckpt_body body = {&h, nt, blob, blob_n};
    tt_status s = tt__write_atomic(path, "checkpoint", write_ckpt, &body);
    for (int i = 0; i < nt; i++) tt_free(owned[i]);
    tt_free(owned);
    tt_free(blob);
    tt_free(blob_n);
    tt_free(entry_at);
    tt_free(h.p);
    return s;
}

// ---- the loader ----
// Every read goes through a cursor that checks the bytes left; every size is overflow-checked.

typedef struct cursor {
    const unsigned char *p;
    size_t pos, end;  // reads stay inside [pos, end)
    const char *path;
    tt_status err;    // first error (TT_OK while fine)
} cursor;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static bool fail(cursor *c, const char *fmt, ...) {
    if (c->err != TT_OK) return false;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->err = tt_set_error(TT_ERR_FORMAT, "checkpoint '%s': %s", c->path, msg);
    return false;
}

static bool take(cursor *c, size_t n, const char *field, const unsigned char **out) {
    if (c->err != TT_OK) return false;
    if (n > c->end - c->pos)
        return fail(c, "%s at byte %zu needs %zu bytes but the header has %zu left", field,
                    c->pos, n, c->end - c->pos);
    *out = c->p + c->pos;
    c->pos += n;
    return true;
}

static bool read_le(cursor *c, int n, const char *field, uint64_t *v) {
    const unsigned char *b = NULL;
    if (!take(c, (size_t)n, field, &b)) return false;
    *v = get_le(b, n);
    return true;
}

// A length-prefixed string: 1 .. CKPT_NAME_MAX bytes, no NUL. Returns a new C string.
static char *read_str(cursor *c, const char *what, int index) {
    uint64_t n;
    char field[64];
    snprintf(field, sizeof field, "%s %d length", what, index);
    if (!read_le(c, 2, field, &n)) return NULL;
    if (n == 0 || n > CKPT_NAME_MAX) {
        fail(c, "%s %d has length %llu; it must be 1 .. %d bytes", what, index,
             (unsigned long long)n, CKPT_NAME_MAX);
        return NULL;
    }
    const unsigned char *b = NULL;
    snprintf(field, sizeof field, "%s %d", what, index);
    if (!take(c, (size_t)n, field, &b)) return NULL;
    if (memchr(b, 0, (size_t)n)) {
        fail(c, "%s %d contains a NUL byte", what, index);
        return NULL;
    }
    char *s = TT_MALLOC((size_t)n + 1);
    memcpy(s, b, (size_t)n);
    s[n] = 0;
    return s;
}

typedef struct tensor_entry {
    char *name;
    tt_dtype dtype;
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    uint64_t offset, nbytes, hash;
} tensor_entry;

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// The first name that appears twice, or NULL.
static const char *find_duplicate(char **names, size_t n) {
    if (n < 2) return NULL;
    char **sorted = TT_MALLOC(n * sizeof *sorted);
    memcpy(sorted, names, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_str_ptr);
    const char *dup = NULL;
    for (size_t i = 1; i < n && !dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) dup = sorted[i];
    tt_free(sorted);
    return dup;
}

typedef struct span {
    uint64_t offset, nbytes;
    int index;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return 0;
}

// Parses and validates buf[0 .. size); on success fills c (empty before). verify = false skips
// the header checksum and the blob hashes (only for fuzzing: a hostile file has valid ones).
static tt_status parse(tt_checkpoint *c, const unsigned char *buf, size_t size, const char *path,
                       bool verify) {
    cursor cur = {buf, 0, size, path, TT_OK};
    cursor *k = &cur;
    if (size == 0) return fail(k, "the file is empty"), k->err;
    if (size < CKPT_FIXED + 8)
        return fail(k, "the file is %zu bytes, shorter than the smallest checkpoint (%d)", size,
                    CKPT_FIXED + 8), k->err;
    if (memcmp(buf, ckpt_magic, 8) != 0)
        return fail(k, "bad magic (not a tinytorch checkpoint)"), k->err;
    uint64_t version = get_le(buf + 8, 4), tag = get_le(buf + 12, 4);
    if (version != CKPT_VERSION)
        return fail(k, "version %llu is not supported (this build reads version %u)",
                    (unsigned long long)version, CKPT_VERSION), k->err;
    if (tag != CKPT_ENDIAN_TAG)
        return fail(k, "endianness tag 0x%08llx is not 0x%08x (not written little-endian)",
                    (unsigned long long)tag, CKPT_ENDIAN_TAG), k->err;
    uint64_t header_size = get_le(buf + 16, 8), file_size = get_le(buf + 24, 8);
    if (file_size != size)
        return fail(k, "file_size field says %llu bytes but the file has %zu (truncated or "
                    "extended)", (unsigned long long)file_size, size), k->err;
    if (header_size < CKPT_FIXED + 8 || header_size > size)
        return fail(k, "header_size %llu is outside [%d, %zu]", (unsigned long long)header_size,
                    CKPT_FIXED + 8, size), k->err;
    uint64_t want = get_le(buf + header_size - 8, 8);
    if (verify && XXH3_64bits(buf, (size_t)header_size - 8) != want)
        return fail(k, "header checksum mismatch (the header is corrupt)"), k->err;
    uint64_t n_meta = get_le(buf + 32, 4), n_tensors = get_le(buf + 36, 4);
    size_t hend = (size_t)header_size - 8;  // entries live in [CKPT_FIXED, hend)
    if (n_meta > CKPT_MAX_META || n_meta > (hend - CKPT_FIXED) / CKPT_META_MIN)
        return fail(k, "n_meta %llu exceeds the cap (%d) or the header's bytes",
                    (unsigned long long)n_meta, CKPT_MAX_META), k->err;
    if (n_tensors > CKPT_MAX_TENSORS ||
        n_tensors > (hend - CKPT_FIXED - n_meta * CKPT_META_MIN) / CKPT_TENSOR_MIN)
        return fail(k, "n_tensors %llu exceeds the cap (%d) or the header's bytes",
                    (unsigned long long)n_tensors, CKPT_MAX_TENSORS), k->err;
    cur.pos = CKPT_FIXED;
    cur.end = hend;

    // Metadata.
    tt_meta *meta = TT_CALLOC((size_t)n_meta + 1, sizeof *meta);
    size_t nm = 0;
    for (; nm < n_meta; nm++) {
        int i = (int)nm;
        tt_meta *m = &meta[nm];
        m->key = read_str(k, "metadata key", i);
        uint64_t type, v;
        if (!m->key || !read_le(k, 1, "metadata type", &type)) break;
        if (type >= TT_META_TYPE_COUNT) {
            fail(k, "metadata '%s' has type %llu, outside [0, %d)", m->key,
                 (unsigned long long)type, TT_META_TYPE_COUNT);
            break;
        }
        m->type = (tt_meta_type)type;
        if (!read_le(k, 8, "metadata value", &v)) break;
        if (m->type == TT_META_I64) {
            m->i64 = (int64_t)v;
        } else if (m->type == TT_META_F64) {
            memcpy(&m->f64, &v, 8);
        } else {
            const unsigned char *b = NULL;
            if (v > k->end - k->pos) {
                fail(k, "metadata '%s' has %llu bytes but the header has %zu left", m->key,
                     (unsigned long long)v, k->end - k->pos);
                break;
            }
            take(k, (size_t)v, "metadata bytes", &b);
            m->bytes = TT_MALLOC((size_t)v);
            if (v) memcpy(m->bytes, b, (size_t)v);
            m->nbytes = (size_t)v;
        }
    }
    if (k->err == TT_OK) {
        char **keys = TT_MALLOC((nm + 1) * sizeof *keys);
        for (size_t i = 0; i < nm; i++) keys[i] = meta[i].key;
        const char *dup = find_duplicate(keys, nm);
        if (dup) fail(k, "metadata key '%s' appears twice", dup);
        tt_free(keys);
    }

    // Tensor table.
    tensor_entry *te = TT_CALLOC((size_t)n_tensors + 1, sizeof *te);
    size_t ntd = 0;
    for (; k->err == TT_OK && ntd < n_tensors; ntd++) {
        int i = (int)ntd;
        tensor_entry *e = &te[ntd];
        uint64_t dtype, ndim;
        e->name = read_str(k, "tensor name", i);
        if (!e->name || !read_le(k, 1, "tensor dtype", &dtype) ||
            !read_le(k, 1, "tensor ndim", &ndim))
            break;
        if (dtype >= CKPT_DTYPES) {
            fail(k, "tensor '%s' has dtype %llu, outside [0, %d)", e->name,
                 (unsigned long long)dtype, CKPT_DTYPES);
            break;
        }
        if (ndim > TT_MAX_DIMS) {
            fail(k, "tensor '%s' has ndim %llu, more than %d", e->name, (unsigned long long)ndim,
                 TT_MAX_DIMS);
            break;
        }
        e->dtype = (tt_dtype)dtype;
        e->ndim = (int)ndim;
        // numel and the contiguous strides' extent (the product with 0 dims taken as 1) both
        // stay <= INT64_MAX / 8, so numel * element size and every stride fit in an int64.
        uint64_t numel = 1, extent = 1;
        bool bad = false;
        for (int d = 0; d < e->ndim && !bad; d++) {
            uint64_t dim;
            if (!read_le(k, 8, "tensor shape", &dim)) { bad = true; break; }
            if (dim > (uint64_t)INT64_MAX) {
                fail(k, "tensor '%s' has a negative size %lld in dim %d", e->name,
                     (long long)(int64_t)dim, d);
                bad = true;
                break;
            }
            e->shape[d] = (int64_t)dim;
            if (dim != 0 && extent > ((uint64_t)INT64_MAX / 8) / dim) {
                fail(k, "tensor '%s' has too many elements (dim %d of size %llu overflows)",
                     e->name, d, (unsigned long long)dim);
                bad = true;
                break;
            }
            numel *= dim;
            if (dim != 0) extent *= dim;
        }
        if (bad || !read_le(k, 8, "tensor offset", &e->offset) ||
            !read_le(k, 8, "tensor nbytes", &e->nbytes) || !read_le(k, 8, "tensor hash", &e->hash))
            break;
        if (e->nbytes != numel * tt_dtype_size(e->dtype)) {
            fail(k, "tensor '%s' has nbytes %llu but %llu elements of %s need %llu", e->name,
                 (unsigned long long)e->nbytes, (unsigned long long)numel,
                 tt_dtype_name(e->dtype), (unsigned long long)(numel * tt_dtype_size(e->dtype)));
            break;
        }
        if (e->offset % CKPT_ALIGN != 0) {
            fail(k, "tensor '%s' has offset %llu, not a multiple of %d", e->name,
                 (unsigned long long)e->offset, CKPT_ALIGN);
            break;
        }
        if (e->offset < header_size || e->offset > size || e->nbytes > size - e->offset) {
            fail(k, "tensor '%s' spans bytes [%llu, %llu + %llu), outside the data region "
                 "[%llu, %zu)", e->name, (unsigned long long)e->offset,
                 (unsigned long long)e->offset, (unsigned long long)e->nbytes,
                 (unsigned long long)header_size, size);
            break;
        }
    }
    if (k->err == TT_OK && k->pos != k->end)
        fail(k, "%zu unused bytes at the end of the header", k->end - k->pos);
    if (k->err == TT_OK) {
        char **names = TT_MALLOC((ntd + 1) * sizeof *names);
        for (size_t i = 0; i < ntd; i++) names[i] = te[i].name;
        const char *dup = find_duplicate(names, ntd);
        if (dup) fail(k, "tensor name '%s' appears twice", dup);
        tt_free(names);
    }

    // The data region: blobs in offset order, no overlap, only zero padding between them,
    // nothing after the last one. An empty blob sits at its offset like any other (the writer
    // pads up to it), so a file may end with padding before an empty tensor's offset.
    if (k->err == TT_OK) {
        span *order = TT_MALLOC((ntd + 1) * sizeof *order);
        for (size_t i = 0; i < ntd; i++) order[i] = (span){te[i].offset, te[i].nbytes, (int)i};
        qsort(order, ntd, sizeof *order, cmp_span);
        size_t covered = (size_t)header_size;
        const char *last = NULL;
        for (size_t j = 0; j < ntd && k->err == TT_OK; j++) {
            const tensor_entry *e = &te[order[j].index];
            if (e->offset < covered) {
                fail(k, "tensor '%s' at offset %llu overlaps tensor '%s'", e->name,
                     (unsigned long long)e->offset, last ? last : "(header)");
                break;
            }
            for (size_t b = covered; b < e->offset; b++) {
                if (buf[b]) {
                    fail(k, "padding byte %zu before tensor '%s' is not zero", b, e->name);
                    break;
                }
            }
            covered = (size_t)(e->offset + e->nbytes);
            last = e->name;
        }
        if (k->err == TT_OK && covered != size)
            fail(k, "%zu trailing bytes after the last tensor", size - covered);
        tt_free(order);
        for (size_t i = 0; verify && i < ntd && k->err == TT_OK; i++) {
            const tensor_entry *e = &te[i];
            if (XXH3_64bits(buf + e->offset, (size_t)e->nbytes) != e->hash)
                fail(k, "tensor '%s': checksum mismatch (its data is corrupt)", e->name);
        }
    }

    // Everything checked: build the container.
    if (k->err == TT_OK) {
        c->meta = meta;
        c->nmeta = c->capmeta = (int)nm;
        meta = NULL;
        c->tensors.items = TT_CALLOC(ntd + 1, sizeof *c->tensors.items);
        c->tensors.cap = (int)ntd + 1;
        bool swap = !host_is_little_endian();
        for (size_t i = 0; i < ntd; i++) {
            tensor_entry *e = &te[i];
            tt_tensor *t = tt__new(e->dtype, e->ndim, e->shape);
            unsigned char *d = tt_data(t);
            if (e->nbytes) memcpy(d, buf + e->offset, (size_t)e->nbytes);
            if (swap) swap_elements(d, (size_t)e->nbytes, tt_dtype_size(e->dtype));
            tt_set_name(t, e->name);
            c->tensors.items[i].name = e->name;  // ownership moves to the list
            c->tensors.items[i].tensor = t;
            e->name = NULL;
            c->tensors.n++;
        }
    }
    for (size_t i = 0; i <= (size_t)n_meta && meta; i++) meta_free(&meta[i]);
    tt_free(meta);
    for (size_t i = 0; i <= (size_t)n_tensors; i++) tt_free(te[i].name);
    tt_free(te);
    return k->err;
}

tt_status tt__ckpt_load_mem(tt_checkpoint *c, const void *data, size_t size, const char *name,
                            bool verify) {
    TT_CHECK(c && (data || size == 0) && name, "checkpoint, data and name must be given");
    tt_ckpt_init(c);
    tt_status s = parse(c, data, size, name, verify);
    if (s != TT_OK) tt_ckpt_free(c);
    return s;
}

tt_status tt_ckpt_load(tt_checkpoint *c, const char *path) {
    TT_CHECK(c && path, "checkpoint and path must be given");
    tt_ckpt_init(c);
    int fd;
    struct stat st;
    if (tt_file_open_read(path, "checkpoint", &fd) != TT_OK) return TT_ERR_IO;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tt_set_error(TT_ERR_IO, "cannot stat checkpoint '%s': %s", path, strerror(e));
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size ? size : 1);  // not TT_MALLOC: no abort on a huge file
    if (!buf) {
        close(fd);
        return tt_set_error(TT_ERR_NOMEM, "out of memory reading checkpoint '%s' (%zu bytes)",
                            path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    int e = errno;
    close(fd);
    if (got != size) {
        free(buf);
        return tt_set_error(TT_ERR_IO, "cannot read checkpoint '%s': %s", path,
                            got < size ? (e ? strerror(e) : "it shrank while reading") : "?");
    }
    tt_status s = parse(c, buf, size, path, true);
    free(buf);
    if (s != TT_OK) tt_ckpt_free(c);
    return s;
}
