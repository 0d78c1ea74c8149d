// The IDX reader (u8 element type only, plain or gzip through zlib) and the Fashion-MNIST
// loader. Every file error returns a status with a one-line message; nothing here aborts
// except a NULL output pointer (a programmer error).
#include "idx.h"
#include "data_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

// ---- IDX ----

#define TT_IDX_U8 0x08

// Reads exactly n bytes, or fewer at the end of the stream; -1 on a zlib error, including a
// gzip stream that ends early (gzread returns its bytes then and only gzerror tells).
static int64_t idx_read(gzFile f, unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        size_t want = n - got > (1u << 30) ? (1u << 30) : n - got;
        int r = gzread(f, buf + got, (unsigned)want);
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    int code = Z_OK;
    gzerror(f, &code);
    return code == Z_OK ? (int64_t)got : -1;
}

static const char *idx_zerr(gzFile f) {
    int code = 0;
    const char *msg = gzerror(f, &code);
    return code == Z_BUF_ERROR ? "the gzip stream is truncated" : msg;
}

static const char *idx_type_name(int code) {
    switch (code) {
    case 0x09: return "i8";
    case 0x0B: return "i16";
    case 0x0C: return "i32";
    case 0x0D: return "f32";
    case 0x0E: return "f64";
    default: return "unknown";
    }
}

// Checks the magic and reads the header; *ndim and shape on success.
static tt_status idx_header(gzFile f, const char *path, int *ndim, int64_t *shape) {
    unsigned char h[4];
    int64_t got = idx_read(f, h, 4);
    if (got < 0)
        return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s': %s; download the file again",
                            path, idx_zerr(f));
    if (got < 4)
        return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' is %lld bytes, shorter than the "
                            "4-byte IDX header; pass an IDX file", path, (long long)got);
    if (h[0] != 0 || h[1] != 0)
        return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' is not an IDX file (magic "
                            "%02x %02x, expected 00 00); pass an IDX file such as "
                            "train-images-idx3-ubyte(.gz)", path, h[0], h[1]);
    if (h[2] != TT_IDX_U8)
        return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' has type code 0x%02x (%s); only "
                            "0x08 (unsigned byte) is supported", path, h[2],
                            idx_type_name(h[2]));
    if (h[3] == 0 || h[3] > TT_MAX_DIMS)
        return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' declares %d dims; an IDX file "
                            "here has 1 .. %d", path, h[3], TT_MAX_DIMS);
    *ndim = h[3];
    unsigned char d[4 * TT_MAX_DIMS];
    size_t need = 4 * (size_t)*ndim;
    got = idx_read(f, d, need);
    if (got < 0)
        return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s': %s; download the file again",
                            path, idx_zerr(f));
    if ((size_t)got < need)
        return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' ends inside its header (%d dims "
                            "need %zu bytes of sizes); the file is truncated, download it again",
                            path, *ndim, need);
    for (int i = 0; i < *ndim; i++)
        shape[i] = (int64_t)d[4 * i] << 24 | (int64_t)d[4 * i + 1] << 16 |
                   (int64_t)d[4 * i + 2] << 8 | (int64_t)d[4 * i + 3];
    return TT_OK;
}

tt_status tt__gz_open_read(const char *path, const char *what, const char *fn, gzFile *out,
                           struct stat *st) {
    *out = NULL;
    int fd;
    if (tt_file_open_read(path, what, &fd) != TT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", tt_last_error());
        return tt_set_error(TT_ERR_IO, "%s: %s", fn, why);
    }
    errno = 0;
    gzFile f = fstat(fd, st) == 0 ? gzdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        return tt_set_error(TT_ERR_IO, "%s: cannot open '%s': %s", fn, path,
                            e ? strerror(e) : "out of memory");
    }
    *out = f;
    return TT_OK;
}

tt_status tt_idx_load(const char *path, tt_tensor **out) {
    TT_CHECK(out, "out is NULL; pass the address of a tt_tensor * to receive the tensor");
    TT_CHECK(path, "path is NULL; pass the path of an IDX file");
    *out = NULL;
    struct stat st;
    gzFile f;
    tt_status os = tt__gz_open_read(path, "IDX file", "tt_idx_load", &f, &st);
    if (os != TT_OK) return os;
    int ndim = 0;
    int64_t shape[TT_MAX_DIMS];
    tt_status s = idx_header(f, path, &ndim, shape);
    if (s != TT_OK) {
        gzclose(f);
        return s;
    }
    bool gz = !gzdirect(f);  // known once the header is read
    // The product of the dims, checked against the file size for a plain file before any
    // allocation; a gzip file is read in growing chunks so a lying header costs little.
    // The non-zero dims' product must fit too (tensor.h's rule), even when a 0 dim makes n 0.
    int64_t n = 1, nz = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 0 && nz > INT64_MAX / 8 / shape[i]) {
            gzclose(f);
            return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' declares dims whose product "
                                "overflows; the header is corrupt", path);
        }
        n *= shape[i];
        if (shape[i] != 0) nz *= shape[i];
    }
    // What the header makes us allocate: the bytes, then the tensor (f32, or i64 labels).
    const char *limit_name;
    double expanded = (double)n * (ndim == 1 ? 9.0 : 5.0);
    double limit = (double)tt_memory_limit(&limit_name);
    if (expanded > limit) {
        gzclose(f);
        return tt_set_error(TT_ERR_NOMEM, "tt_idx_load: '%s' declares %lld elements, %.1f GiB "
                            "once read, more than the %.1f GiB this machine allows (%s); the "
                            "header is corrupt or the file too large for this machine", path,
                            (long long)n, expanded / 1073741824.0, limit / 1073741824.0,
                            limit_name);
    }
    int64_t header = 4 + 4 * (int64_t)ndim;
    if (!gz && S_ISREG(st.st_mode) && (int64_t)st.st_size != header + n) {
        gzclose(f);
        return tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' is %lld bytes but its header "
                            "declares %lld elements (%lld bytes with the header); the file is "
                            "truncated or not this IDX file, download it again", path,
                            (long long)st.st_size, (long long)n, (long long)(header + n));
    }
    size_t cap = n < (1 << 20) ? (size_t)n : (size_t)1 << 20, len = 0;
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf) {
        gzclose(f);
        return tt_set_error(TT_ERR_NOMEM, "tt_idx_load: out of memory reading '%s'", path);
    }
    while ((int64_t)len < n) {
        if (len == cap) {
            size_t ncap = (int64_t)cap * 2 < n ? cap * 2 : (size_t)n;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                gzclose(f);
                return tt_set_error(TT_ERR_NOMEM, "tt_idx_load: out of memory reading '%s' "
                                    "(%lld elements)", path, (long long)n);
            }
            buf = nb;
            cap = ncap;
        }
        int64_t got = idx_read(f, buf + len, cap - len);
        if (got < 0) {
            const char *why = idx_zerr(f);
            free(buf);
            s = tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s': %s; download the file again",
                             path, why);
            gzclose(f);
            return s;
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    unsigned char extra;
    int64_t more = (int64_t)len == n ? idx_read(f, &extra, 1) : 0;
    if ((int64_t)len < n || more != 0) {
        const char *why = more < 0 ? idx_zerr(f) : NULL;
        free(buf);
        if (why)
            s = tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s': %s; download the file again",
                             path, why);
        else if (more > 0)
            s = tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' holds more data than the %lld "
                             "elements its header declares; the file is corrupt, download it "
                             "again", path, (long long)n);
        else
            s = tt_set_error(TT_ERR_FORMAT, "tt_idx_load: '%s' holds %zu of the %lld elements "
                             "its header declares; the file is truncated, download it again",
                             path, len, (long long)n);
        gzclose(f);
        return s;
    }
    gzclose(f);
    tt_tensor *t = tt_empty(ndim == 1 ? TT_I64 : TT_F32, ndim, shape);
    if (ndim == 1) {
        int64_t *p = tt_data(t);
        for (int64_t i = 0; i < n; i++) p[i] = buf[i];
    } else {
        float *p = tt_data(t);
        for (int64_t i = 0; i < n; i++) p[i] = buf[i];
    }
    free(buf);
    *out = t;
    return TT_OK;
}

// ---- Fashion-MNIST ----

// Opens dir/name, else dir/name.gz; the missing-file message names the package.
static tt_status fmnist_file(const char *dir, const char *name, tt_tensor **out) {
    char path[4096];
    struct stat st;
    int len = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (len < 0 || (size_t)len + 4 > sizeof path)
        return tt_set_error(TT_ERR_ARG, "tt_fashion_mnist_load: the directory '%s' is too long; "
                            "pass a path under %zu bytes", dir, sizeof path - 64);
    if (stat(path, &st) != 0) {
        strcat(path, ".gz");
        if (stat(path, &st) != 0)
            return tt_set_error(TT_ERR_IO, "tt_fashion_mnist_load: no '%s/%s' (nor .gz): "
                                "install Debian's dataset-fashion-mnist (make deps, or "
                                "apt-get install dataset-fashion-mnist) or pass the directory "
                                "holding the four IDX files", dir, name);
    }
    return tt_idx_load(path, out);
}

tt_status tt_fashion_mnist_load(const char *dir, bool train, tt_tensor **images,
                                tt_tensor **labels) {
    TT_CHECK(images && labels, "images and labels must be addresses of tt_tensor * to receive "
             "the two tensors; got images %p, labels %p", (void *)images, (void *)labels);
    *images = *labels = NULL;
    if (!dir) dir = TT_FASHION_MNIST_DIR;
    const char *split = train ? "train" : "t10k";
    char name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", split);
    tt_tensor *x = NULL, *y = NULL;
    tt_scope_begin();  // frees what was read on an error; tt_keep hands out the results
    tt_status s = fmnist_file(dir, name, &x);
    if (s == TT_OK) {
        snprintf(name, sizeof name, "%s-labels-idx1-ubyte", split);
        s = fmnist_file(dir, name, &y);
    }
    if (s != TT_OK) {
    } else if (x->ndim != 3 || x->shape[1] != 28 || x->shape[2] != 28 || y->ndim != 1 ||
        y->shape[0] != x->shape[0]) {
        s = tt_set_error(TT_ERR_FORMAT, "tt_fashion_mnist_load: the %s images have %d dims "
                         "(%lld, ...) and the labels %d dims (%lld, ...), not (N, 28, 28) and "
                         "(N,); '%s' does not hold Fashion-MNIST", split, x->ndim,
                         (long long)x->shape[0], y->ndim, (long long)y->shape[0], dir);
    } else {
        const int64_t *p = tt_data(y);
        for (int64_t i = 0; i < y->shape[0] && s == TT_OK; i++)
            if (p[i] > 9)
                s = tt_set_error(TT_ERR_FORMAT, "tt_fashion_mnist_load: %s label %lld is "
                                 "%lld, outside 0 .. 9; '%s' does not hold Fashion-MNIST",
                                 split, (long long)i, (long long)p[i], dir);
    }
    if (s == TT_OK) {
        *images = tt_keep(x);
        *labels = tt_keep(y);
    }
    tt_scope_end();
    return s;
}
