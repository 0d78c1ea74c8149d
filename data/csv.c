// The CSV reader (numbers only, plain or gzip through zlib, strict: every malformed input is
// an error status naming the file, line and column) and scikit-learn's digits loader over it.
// Nothing here aborts except a NULL output pointer or a dtype that is not a float.
#include "csv.h"
#include "data_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

// ---- the whole file, through zlib ----

// Reads path (gzip or plain) into a new malloc'd buffer of *n bytes plus a NUL.
static tt_status csv_read(const char *path, char **buf, size_t *n) {
    *buf = NULL;
    *n = 0;
    struct stat st;
    gzFile f;
    tt_status os = tt__gz_open_read(path, "CSV file", "tt_csv_load", &f, &st);
    if (os != TT_OK) return os;
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap + 1);
    tt_status s = TT_OK;
    while (b) {
        if (len == cap) {
            char *nb = cap < ((size_t)1 << 40) ? realloc(b, 2 * cap + 1) : NULL;
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t want = cap - len > (1u << 30) ? (1u << 30) : cap - len;
        int r = gzread(f, b + len, (unsigned)want);
        int code = Z_OK;
        const char *msg = gzerror(f, &code);
        if (r < 0 || code != Z_OK) {
            s = tt_set_error(TT_ERR_FORMAT, "tt_csv_load: '%s': %s; the file is corrupt, get "
                             "it again", path, code == Z_BUF_ERROR ? "the gzip stream is "
                             "truncated" : msg);
            break;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    gzclose(f);
    if (!b) return tt_set_error(TT_ERR_NOMEM, "tt_csv_load: out of memory reading '%s'", path);
    if (s != TT_OK) {
        free(b);
        return s;
    }
    b[len] = '\0';
    *buf = b;
    *n = len;
    return TT_OK;
}

// ---- parsing ----

static bool csv_blank(char c) { return c == ' ' || c == '\t'; }

// Up to 24 bytes of a field for a message: printable ASCII as is, others as \xNN, "..." when cut.
static const char *csv_show(const char *a, const char *z, char *out, size_t cap) {
    size_t k = 0;
    for (const char *p = a; p < z && k + 8 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        if (p - a == 24) {
            k += (size_t)snprintf(out + k, cap - k, "...");
            break;
        }
        if (c >= 0x20 && c < 0x7f) out[k++] = (char)c;
        else k += (size_t)snprintf(out + k, cap - k, "\\x%02x", c);
    }
    out[k] = '\0';
    return out;
}

tt_status tt_csv_load(const char *path, tt_dtype dtype, bool header, tt_tensor **out) {
    TT_CHECK(out, "out is NULL; pass the address of a tt_tensor * to receive the tensor");
    TT_CHECK(path, "path is NULL; pass the path of a CSV file");
    TT_CHECK(dtype == TT_F32 || dtype == TT_F64, "dtype is %s; a CSV loads as f32 or f64",
             tt_dtype_name(dtype));
    *out = NULL;
    char *buf;
    size_t n;
    tt_status s = csv_read(path, &buf, &n);
    if (s != TT_OK) return s;
    if (memchr(buf, '\0', n)) {
        const char *z = memchr(buf, '\0', n);
        int64_t line = 1;
        for (const char *p = buf; p < z; p++) line += *p == '\n';
        free(buf);
        return tt_set_error(TT_ERR_FORMAT, "tt_csv_load: '%s' line %lld holds a NUL byte; "
                            "pass a text CSV file", path, (long long)line);
    }
    double *vals = NULL;
    size_t nvals = 0, capvals = 0;
    int64_t cols = -1, rows = 0, line = 0;
    const char *p = buf, *end = buf + n;
    if (header && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
        line++;
    }
    while (p < end && s == TT_OK) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (eol > p && eol[-1] == '\r') eol--;
        if (eol == p) {
            s = tt_set_error(TT_ERR_FORMAT, "tt_csv_load: '%s' line %lld is empty; remove it "
                             "(only numbers separated by commas are read)", path,
                             (long long)line);
            break;
        }
        int64_t col = 0;
        for (const char *f = p; s == TT_OK;) {
            const char *comma = memchr(f, ',', (size_t)(eol - f));
            const char *fe = comma ? comma : eol;
            col++;
            const char *a = f, *z = fe;
            while (a < z && csv_blank(*a)) a++;
            while (z > a && csv_blank(z[-1])) z--;
            char num[64];
            double v = 0;
            bool ok = false;
            char *copy = (size_t)(z - a) < sizeof num ? num : malloc((size_t)(z - a) + 1);
            if (a < z && copy) {  // strtod needs a terminated copy of the field
                char *stop;
                memcpy(copy, a, (size_t)(z - a));
                copy[z - a] = '\0';
                v = strtod(copy, &stop);
                ok = stop == copy + (z - a);
            }
            if (copy != num) free(copy);
            if (!ok) {
                char shown[128];
                s = tt_set_error(TT_ERR_FORMAT, "tt_csv_load: '%s' line %lld column %lld: "
                                 "'%s' is not a number; the file must hold only numbers "
                                 "(pass header=true to skip a first line of names)", path,
                                 (long long)line, (long long)col,
                                 csv_show(a, z, shown, sizeof shown));
                break;
            }
            if (nvals == capvals) {
                size_t nc = capvals ? 2 * capvals : 1024;
                double *nv = realloc(vals, nc * sizeof *vals);
                if (!nv) {
                    s = tt_set_error(TT_ERR_NOMEM, "tt_csv_load: out of memory reading '%s'",
                                     path);
                    break;
                }
                vals = nv;
                capvals = nc;
            }
            vals[nvals++] = v;
            if (!comma) break;
            f = comma + 1;
        }
        if (s != TT_OK) break;
        if (cols < 0) cols = col;
        if (col != cols) {
            s = tt_set_error(TT_ERR_FORMAT, "tt_csv_load: '%s' line %lld has %lld fields, the "
                             "first row %lld; every row needs the same number of columns",
                             path, (long long)line, (long long)col, (long long)cols);
            break;
        }
        rows++;
        p = next;
    }
    free(buf);
    if (s == TT_OK && rows == 0)
        s = tt_set_error(TT_ERR_FORMAT, "tt_csv_load: '%s' has no data rows (%s); pass a CSV "
                         "file of numbers", path, n == 0 ? "the file is empty" :
                         "only a header line");
    if (s == TT_OK) {
        tt_tensor *t = tt_empty(dtype, 2, (const int64_t[]){rows, cols});
        if (dtype == TT_F32) {
            float *d = tt_data(t);
            for (size_t i = 0; i < nvals; i++) d[i] = (float)vals[i];
        } else {
            memcpy(tt_data(t), vals, nvals * sizeof *vals);
        }
        *out = t;
    }
    free(vals);
    return s;
}

// ---- scikit-learn's digits ----

tt_status tt_digits_load(const char *path, tt_tensor **images, tt_tensor **labels) {
    TT_CHECK(images && labels, "images and labels must be addresses of tt_tensor * to receive "
             "the two tensors; got images %p, labels %p", (void *)images, (void *)labels);
    *images = *labels = NULL;
    struct stat st;
    if (!path) {
        path = TT_DIGITS_PATH;
        if (stat(path, &st) != 0 && stat(TT_DIGITS_SYSTEM_PATH, &st) == 0)
            path = TT_DIGITS_SYSTEM_PATH;
    }
    if (stat(path, &st) != 0)
        return tt_set_error(TT_ERR_IO, "tt_digits_load: no '%s': run `make data` (it extracts "
                            "digits.csv.gz from Debian's python3-sklearn) or pass the path of "
                            "scikit-learn's digits.csv.gz", path);
    tt_tensor *t;
    tt_scope_begin();  // frees the CSV table; tt_keep hands out the results
    tt_status s = tt_csv_load(path, TT_F32, false, &t);
    if (s != TT_OK) {
        tt_scope_end();
        return s;
    }
    int64_t n = t->shape[0];
    if (t->shape[1] != 65) {
        s = tt_set_error(TT_ERR_FORMAT, "tt_digits_load: '%s' has %lld columns, not 65 (64 "
                         "pixels and a label); it does not hold the digits set", path,
                         (long long)t->shape[1]);
        tt_scope_end();
        return s;
    }
    const float *d = tt_data(t);
    for (int64_t i = 0; i < n * 65 && s == TT_OK; i++) {
        bool label = i % 65 == 64;
        float v = d[i];
        if (!(v >= 0 && v <= (label ? 9 : 16) && v == floorf(v)))
            s = tt_set_error(TT_ERR_FORMAT, "tt_digits_load: '%s' line %lld column %lld is %g, "
                             "not %s; it does not hold the digits set", path,
                             (long long)(i / 65 + 1), (long long)(i % 65 + 1), (double)v,
                             label ? "a label 0 .. 9" : "a pixel 0 .. 16");
    }
    if (s != TT_OK) {
        tt_scope_end();
        return s;
    }
    tt_tensor *x = tt_empty(TT_F32, 4, (const int64_t[]){n, 1, 8, 8});
    tt_tensor *y = tt_empty(TT_I64, 1, (const int64_t[]){n});
    float *px = tt_data(x);
    int64_t *py = tt_data(y);
    for (int64_t i = 0; i < n; i++) {
        memcpy(px + i * 64, d + i * 65, 64 * sizeof *px);
        py[i] = (int64_t)d[i * 65 + 64];
    }
    *images = tt_keep(x);
    *labels = tt_keep(y);
    tt_scope_end();
    return TT_OK;
}
