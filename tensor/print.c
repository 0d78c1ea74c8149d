// A PyTorch-like printer: tensor([[1.0000, 2.0000], ...], shape=(2, 2), dtype=f32), and its
// options (torch.set_printoptions' threshold, edgeitems, precision). A tensor of more than
// `threshold` elements is summarised: each dim longer than 2 * edgeitems shows its ends.
#include "tensor_internal.h"

#include <math.h>
#include <stdarg.h>

// ---- options (PyTorch's defaults) ----

static int64_t print_threshold = 1000;  // more elements than this: summarise
static int64_t print_edgeitems = 3;     // entries kept at each end of a summarised dim
static int print_precision = 4;         // digits after the point

void tt_set_print_options(int64_t threshold, int64_t edgeitems, int precision) {
    TT_CHECK(precision <= 30, "precision %d is too large; use 0 .. 30 (or a negative value to "
             "keep %d)", precision, print_precision);
    if (threshold >= 0) print_threshold = threshold;
    if (edgeitems >= 0) print_edgeitems = edgeitems;
    if (precision >= 0) print_precision = precision;
}

typedef struct print_opts {
    bool summarize;
    int64_t edge;
    int precision;
} print_opts;

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

static void put_elem(sbuf *b, const tt_tensor *t, int64_t off, int precision) {
    double v = tt__load(tt__base(t), t->dtype, off);
    if (t->dtype == TT_BOOL) put(b, v != 0 ? "True" : "False");
    else if (!tt_dtype_is_float(t->dtype)) put(b, "%lld", (long long)v);
    else if (isnan(v)) put(b, "nan");
    else if (isinf(v)) put(b, v > 0 ? "inf" : "-inf");
    else if (v != 0 && (fabs(v) >= 1e6 || fabs(v) < 1e-4)) put(b, "%.*e", precision, v);
    else put(b, "%.*f", precision, v);
}

// Between entries of dim d: ", " in the last dim, else ",\n" and the indent of the next row.
static void put_sep(sbuf *b, const tt_tensor *t, int d, int indent) {
    if (d == t->ndim - 1) put(b, ", ");
    else put(b, ",\n%*s", indent + 1, "");
}

static void put_dim(sbuf *b, const tt_tensor *t, int d, int64_t off, int indent,
                    const print_opts *o) {
    if (d == t->ndim) {
        put_elem(b, t, off, o->precision);
        return;
    }
    int64_t n = t->shape[d];
    bool elide = o->summarize && n > 2 * o->edge;
    put(b, "[");
    for (int64_t i = 0; i < n; i++) {
        if (elide && i == o->edge) {  // entries edge .. n - edge - 1 become "..."
            put(b, "...");
            i = n - o->edge;
            if (i == n) break;
            put_sep(b, t, d, indent);
        }
        put_dim(b, t, d + 1, off + i * t->stride[d], indent + 1, o);
        if (i + 1 < n) put_sep(b, t, d, indent);
    }
    put(b, "]");
}

int tt_snprint(char *buf, size_t n, const tt_tensor *t) {
    tt__storage(t, __func__);  // aborts on a freed tensor
    sbuf b = {buf, n, 0};
    if (n) buf[0] = 0;
    put(&b, "tensor(");
    print_opts o = {tt_numel(t) > print_threshold, print_edgeitems, print_precision};
    put_dim(&b, t, 0, t->offset, 7, &o);
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
