// A PyTorch-like printer: tensor([[1.0000, 2.0000], ...], shape=(2, 2), dtype=f32).
// Dims longer than 2 * TT_PRINT_EDGE are elided to their first and last TT_PRINT_EDGE entries.
#include "tensor_internal.h"

#include <math.h>
#include <stdarg.h>

#define TT_PRINT_EDGE 3

typedef struct sbuf {
    char *buf;
    size_t cap, len;  // len counts every character, even those past cap
} sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    int k = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0) b->len += (size_t)k;
}

static void put_elem(sbuf *b, const tt_tensor *t, int64_t off) {
    double v = tt__load(tt__base(t), t->dtype, off);
    if (!tt_dtype_is_float(t->dtype)) put(b, "%lld", (long long)v);
    else if (isnan(v)) put(b, "nan");
    else if (isinf(v)) put(b, v > 0 ? "inf" : "-inf");
    else if (v != 0 && (fabs(v) >= 1e6 || fabs(v) < 1e-4)) put(b, "%.4e", v);
    else put(b, "%.4f", v);
}

static void put_dim(sbuf *b, const tt_tensor *t, int d, int64_t off, int indent) {
    if (d == t->ndim) {
        put_elem(b, t, off);
        return;
    }
    int64_t n = t->shape[d];
    bool elide = n > 2 * TT_PRINT_EDGE;
    put(b, "[");
    for (int64_t i = 0; i < n; i++) {
        if (elide && i == TT_PRINT_EDGE) {
            put(b, d == t->ndim - 1 ? "..., " : "...,\n%*s", d == t->ndim - 1 ? 0 : indent + 1, "");
            i = n - TT_PRINT_EDGE;
        }
        put_dim(b, t, d + 1, off + i * t->stride[d], indent + 1);
        if (i + 1 < n) {
            if (d == t->ndim - 1) put(b, ", ");
            else put(b, ",\n%*s", indent + 1, "");
        }
    }
    put(b, "]");
}

int tt_snprint(char *buf, size_t n, const tt_tensor *t) {
    sbuf b = {buf, n, 0};
    if (n) buf[0] = 0;
    put(&b, "tensor(");
    put_dim(&b, t, 0, t->offset, 7);
    char shape[128];
    put(&b, ", shape=%s, dtype=%s", tt_shape_str(t, shape, sizeof shape), tt_dtype_name(t->dtype));
    if (t->requires_grad) put(&b, ", requires_grad=true");
    put(&b, ")");
    return (int)b.len;
}

void tt_fprint(FILE *f, const tt_tensor *t) {
    int n = tt_snprint(NULL, 0, t);
    char *s = TT_MALLOC((size_t)n + 1);
    tt_snprint(s, (size_t)n + 1, t);
    fprintf(f, "%s\n", s);
    tt_free(s);
}

void tt_print(const tt_tensor *t) { tt_fprint(stdout, t); }
