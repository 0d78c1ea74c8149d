// Check suite of io/safetensors.h: the reference files of gen_safetensors_reference.py read
// back (every dtype, PyTorch's F16/BF16 bits) and written byte for byte; all 65536 F16 and
// BF16 patterns through load and save; load_params (strict, missing/unexpected keys, shape
// mismatches); every validation error with its message; atomic saves keep the old file; tiny
// Hugging Face GPT-2s imported (logits against PyTorch's forward at 1e-5) and exported.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "models/gpt/gpt.h"
#include "reference/safetensors_reference.h"

// ---- files ----

static char tmpdir[64];

static void make_tmpdir(void) { tt_test_mkdtemp(tmpdir, sizeof tmpdir, "st"); }

static void remove_tmpdir(void) { tt_test_rmdir(tmpdir); }

static const char *tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

static const char *ref_file(char *buf, size_t cap, const char *name) {
    const char *dir = getenv("TT_REF_DIR") ? getenv("TT_REF_DIR") : "tests/reference";
    snprintf(buf, cap, "%s/%s.safetensors", dir, name);
    return buf;
}

static const char *ref_path(char *buf, size_t cap, const char *fmt) {
    char name[64];
    snprintf(name, sizeof name, "safetensors_%s", fmt);
    return ref_file(buf, cap, name);
}

static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (run from the repo root, or set TT_REF_DIR)", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void write_file(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

// A file in memory: the u64 length of header, header, then ndata bytes (0, 1, 2, ...).
static unsigned char *st_file(const char *header, size_t ndata, size_t *n) {
    size_t hn = strlen(header);
    *n = 8 + hn + ndata;
    unsigned char *b = malloc(*n);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hn >> (8 * i));
    memcpy(b + 8, header, hn);
    for (size_t i = 0; i < ndata; i++) b[8 + hn + i] = (unsigned char)i;
    return b;
}

// ---- the reference files ----

static uint32_t f32_bits_at(const tt_tensor *t, int64_t i) {
    uint32_t u;
    memcpy(&u, (const float *)tt_data(t) + i, 4);
    return u;
}

static void check_reference(const char *fmt, tt_st_dtype dtype, const void *want_values) {
    char path[256];
    tt_safetensors f;
    ck_assert_msg(tt_safetensors_open(&f, ref_path(path, sizeof path, fmt)) == TT_OK, "%s",
                  tt_last_error());
    ck_assert_int_eq(f.n, 9);
    ck_assert_int_eq(f.nmeta, 2);
    ck_assert_str_eq(tt_safetensors_meta(&f, "format"), "pt");
    ck_assert_str_eq(tt_safetensors_meta(&f, "note"),
                     "quote \" backslash \\ tab\t \xc3\xa9");
    ck_assert_ptr_null(tt_safetensors_meta(&f, "nope"));
    // In data order: the reference writer's widest dtypes first, then by name.
    ck_assert_str_eq(f.tensors[0].name, "ids64");
    ck_assert_str_eq(f.tensors[f.n - 1].name, "mask");

    const tt_st_info *e = tt_safetensors_find(&f, "values");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->dtype, dtype);
    ck_assert_int_eq(e->ndim, 1);
    ck_assert_int_eq(e->shape[0], ST_REF_N);
    tt_tensor *t;
    ck_assert_int_eq(tt_safetensors_get(&f, "values", &t), TT_OK);
    ck_assert_int_eq(t->dtype, dtype == TT_ST_F64 ? TT_F64 : TT_F32);
    for (int i = 0; i < ST_REF_N; i++) {
        if (dtype == TT_ST_F64) {
            uint64_t u;
            memcpy(&u, (const double *)tt_data(t) + i, 8);
            ck_assert_msg(u == ((const uint64_t *)want_values)[i], "%s values[%d]", fmt, i);
        } else {
            ck_assert_msg(f32_bits_at(t, i) == ((const uint32_t *)want_values)[i],
                          "%s values[%d] = 0x%08x, PyTorch 0x%08x", fmt, i, f32_bits_at(t, i),
                          ((const uint32_t *)want_values)[i]);
        }
    }
    tt_release(t);

    ck_assert_int_eq(tt_safetensors_get(&f, "ids", &t), TT_OK);
    ck_assert_int_eq(t->dtype, TT_I32);
    ck_assert_values(t, 0, 0, 0, -1, 2147483647, -2147483648.0);
    tt_release(t);
    ck_assert_int_eq(tt_safetensors_get(&f, "ids64", &t), TT_OK);
    ck_assert_int_eq(t->dtype, TT_I64);
    ck_assert_int_eq(((const int64_t *)tt_data(t))[0], 1LL << 40);
    ck_assert_int_eq(((const int64_t *)tt_data(t))[1], -(1LL << 62));
    ck_assert_int_eq(((const int64_t *)tt_data(t))[3], 7);
    tt_release(t);
    ck_assert_int_eq(tt_safetensors_get(&f, "mask", &t), TT_OK);
    ck_assert_int_eq(t->dtype, TT_BOOL);
    ck_assert_values(t, 0, 0, 1, 0, 0, 1, 1);
    tt_release(t);
    ck_assert_int_eq(tt_safetensors_get(&f, "matrix", &t), TT_OK);
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(t->shape[1], 3);
    ck_assert_values(t, 0.01, 0.001, 1.5, -2.25, 3.0, 0.1, 1e-3, -7.0);
    tt_release(t);
    ck_assert_int_eq(tt_safetensors_get(&f, "scalar", &t), TT_OK);
    ck_assert_int_eq(t->ndim, 0);
    ck_assert_values(t, 0, 0, 2.5);
    tt_release(t);
    ck_assert_int_eq(tt_safetensors_get(&f, "empty", &t), TT_OK);
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(t->shape[0], 0);
    ck_assert_int_eq(t->shape[1], 3);
    tt_release(t);
    ck_assert_int_eq(tt_safetensors_get(&f, "d8", &t), TT_OK);
    ck_assert_int_eq(t->ndim, 8);
    ck_assert_values(t, 0, 0, -1.0, 4.0);
    tt_release(t);
    ck_assert_int_eq(tt_safetensors_get(&f, "w\xc3\xa9.\xc3\xbcnicode", &t), TT_OK);
    ck_assert_values(t, 0, 0, 0.5);
    tt_release(t);
    ck_assert_int_eq(tt_safetensors_get(&f, "nope", &t), TT_ERR_MISMATCH);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(tt_last_error(), "has no tensor 'nope'"), "%s", tt_last_error());
    tt_safetensors_close(&f);
    tt_safetensors_close(&f);  // twice is fine
}

START_TEST(test_reference_files_read) {
    check_reference("f32", TT_ST_F32, st_ref_f32_bits);
    check_reference("f64", TT_ST_F64, st_ref_f64_bits);
    check_reference("f16", TT_ST_F16, st_ref_f16_back);
    check_reference("bf16", TT_ST_BF16, st_ref_bf16_back);
}
END_TEST

// The reference tensors as a parameter list, float ones in fdtype, in an order of our own.
static void reference_params(tt_params *p, tt_dtype fdtype, bool from_f64) {
    tt_params_init(p);
    tt_tensor *v = tt_empty(fdtype, TT_SHAPE(ST_REF_N));
    for (int i = 0; i < ST_REF_N; i++) {
        if (fdtype == TT_F64) {
            double d;
            uint64_t u = st_ref_f64_bits[i];
            if (!from_f64) {  // the f32 values, widened
                float fl;
                memcpy(&fl, &st_ref_f32_bits[i], 4);
                d = fl;
            } else {
                memcpy(&d, &u, 8);
            }
            ((double *)tt_data(v))[i] = d;
        } else {
            memcpy((float *)tt_data(v) + i, &st_ref_f32_bits[i], 4);
        }
    }
    tt_params_add(p, NULL, "values", v);
    tt_params_add(p, NULL, "mask", tt_test_tensor(TT_BOOL, TT_SHAPE(5), 1, 0, 0, 1, 1));
    tt_params_add(p, NULL, "matrix",
                  tt_test_tensor(fdtype, TT_SHAPE(2, 3), 1.5, -2.25, 3.0, 0.1, 1e-3, -7.0));
    tt_params_add(p, NULL, "ids", tt_test_tensor(TT_I32, TT_SHAPE(4), 0, -1, 2147483647,
                                                  -2147483648.0));
    tt_tensor *ids64 = tt_from_data(TT_I64, TT_SHAPE(2, 2),
                                    (const int64_t[]){1LL << 40, -(1LL << 62), 0, 7});
    tt_params_add(p, NULL, "ids64", ids64);
    tt_params_add(p, NULL, "empty", tt_zeros(fdtype, TT_SHAPE(0, 3)));
    tt_params_add(p, NULL, "scalar", tt_scalar(fdtype, 2.5));
    tt_params_add(p, NULL, "w\xc3\xa9.\xc3\xbcnicode", tt_test_tensor(fdtype, TT_SHAPE(1), 0.5));
    tt_params_add(p, NULL, "d8", tt_test_tensor(fdtype, TT_SHAPE(1, 1, 1, 1, 1, 1, 2, 1), -1, 4));
    // The list holds its own references.
    for (int i = 0; i < p->n; i++) tt_release(p->items[i].tensor);
}

static void check_writes(const char *fmt, tt_st_dtype dtype, tt_dtype fdtype, bool from_f64) {
    char path[256], out[160];
    tt_params p;
    reference_params(&p, fdtype, from_f64);
    make_tmpdir();
    tmp_path(out, sizeof out, "w.safetensors");
    const char *meta[] = {"note", "quote \" backslash \\ tab\t \xc3\xa9", "format", "pt", NULL};
    ck_assert_msg(tt_safetensors_save(out, &p, meta, dtype) == TT_OK, "%s", tt_last_error());
    size_t na, nb;
    unsigned char *a = read_file(out, &na), *b = read_file(ref_path(path, sizeof path, fmt), &nb);
    ck_assert_msg(na == nb, "%s: %zu bytes written, the reference has %zu", fmt, na, nb);
    for (size_t i = 0; i < na; i++)
        ck_assert_msg(a[i] == b[i], "%s (from %s): byte %zu is 0x%02x, the reference 0x%02x", fmt,
                      tt_dtype_name(fdtype), i, a[i], b[i]);
    free(a);
    free(b);
    remove_tmpdir();
    tt_params_free(&p);
}

START_TEST(test_reference_files_written) {
    check_writes("f32", TT_ST_F32, TT_F32, false);
    check_writes("f16", TT_ST_F16, TT_F32, false);
    check_writes("bf16", TT_ST_BF16, TT_F32, false);
    check_writes("f64", TT_ST_F64, TT_F64, true);
    // f64 tensors go to the narrow dtypes through f32, as PyTorch.
    check_writes("f32", TT_ST_F32, TT_F64, true);
    check_writes("f16", TT_ST_F16, TT_F64, true);
    check_writes("bf16", TT_ST_BF16, TT_F64, true);
}
END_TEST

// ---- every F16 / BF16 pattern ----

// All 65536 patterns of a 2-byte dtype load as f32 and save back to the same bits; NaNs come
// back as the NaN PyTorch's CPU conversion writes (F16: 0x7e00 with the sign; BF16: 0xffff).
static void check_all_patterns(const char *dtype, tt_st_dtype st) {
    char header[128];
    snprintf(header, sizeof header,
             "{\"x\":{\"dtype\":\"%s\",\"shape\":[65536],\"data_offsets\":[0,131072]}}", dtype);
    size_t n;
    unsigned char *b = st_file(header, 131072, &n);
    for (unsigned i = 0; i < 65536; i++) {
        b[n - 131072 + 2 * i] = (unsigned char)i;
        b[n - 131072 + 2 * i + 1] = (unsigned char)(i >> 8);
    }
    tt_safetensors f;
    ck_assert_msg(tt_safetensors_open_mem(&f, b, n, "patterns") == TT_OK, "%s", tt_last_error());
    tt_tensor *t;
    ck_assert_int_eq(tt_safetensors_get(&f, "x", &t), TT_OK);
    tt_safetensors_close(&f);
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, NULL, "x", t);
    char path[160];
    make_tmpdir();
    ck_assert_int_eq(tt_safetensors_save(tmp_path(path, sizeof path, "p.st"), &p, NULL, st),
                     TT_OK);
    size_t m;
    unsigned char *c = read_file(path, &m);
    ck_assert_uint_ge(m, 131072);
    const unsigned char *d = c + m - 131072;
    for (unsigned i = 0; i < 65536; i++) {
        unsigned got = d[2 * i] | (unsigned)d[2 * i + 1] << 8;
        bool nan = st == TT_ST_F16 ? (i & 0x7c00) == 0x7c00 && (i & 0x3ff)
                                   : (i & 0x7f80) == 0x7f80 && (i & 0x7f);
        unsigned want = !nan ? i : st == TT_ST_F16 ? (i & 0x8000) | 0x7e00 : 0xffff;
        ck_assert_msg(got == want, "%s 0x%04x saved back as 0x%04x", dtype, i, got);
    }
    // Widening is exact: F16 0x3c01 is 1 + 2^-10, BF16 0x0001 the smallest f32 subnormal.
    float v = ((const float *)tt_data(t))[st == TT_ST_F16 ? 0x3c01 : 0x0001];
    ck_assert(v == (st == TT_ST_F16 ? 1.0f + 0x1p-10f : 0x1p-133f));
    free(b);
    free(c);
    remove_tmpdir();
    tt_params_free(&p);
    tt_release(t);
}

START_TEST(test_every_f16_bf16_pattern) {
    check_all_patterns("F16", TT_ST_F16);
    check_all_patterns("BF16", TT_ST_BF16);
}
END_TEST

// ---- round trips and load_params ----

START_TEST(test_round_trip_every_dtype) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    make_tmpdir();
    tt_tensor *a32 = tt_randn(&rng, TT_F32, TT_SHAPE(3, 5));
    tt_tensor *a64 = tt_randn(&rng, TT_F64, TT_SHAPE(4));
    tt_tensor *view = tt_transpose(a32, 0, 1);  // a strided view is written row-major
    tt_tensor *i32 = tt_test_tensor(TT_I32, TT_SHAPE(3), -5, 0, 9);
    tt_tensor *i64 = tt_test_tensor(TT_I64, TT_SHAPE(1, 2), -1e15, 3);
    tt_tensor *bo = tt_test_tensor(TT_BOOL, TT_SHAPE(2, 1), 0, 1);
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, "m", "a32", a32);
    tt_params_add(&p, "m", "a64", a64);
    tt_params_add(&p, "m", "view", view);
    tt_params_add(&p, "m", "i32", i32);
    tt_params_add(&p, "m", "i64", i64);
    tt_params_add(&p, "m", "bool", bo);
    const tt_st_dtype dts[] = {TT_ST_F32, TT_ST_F64, TT_ST_F16, TT_ST_BF16};
    for (int k = 0; k < 4; k++) {
        char path[160];
        tmp_path(path, sizeof path, "rt.safetensors");
        ck_assert_int_eq(tt_safetensors_save(path, &p, NULL, dts[k]), TT_OK);
        tt_safetensors f;
        ck_assert_int_eq(tt_safetensors_open(&f, path), TT_OK);
        ck_assert_int_eq(f.n, 6);
        ck_assert_int_eq(f.nmeta, 0);
        for (int i = 0; i < p.n; i++) {
            const tt_tensor *src = p.items[i].tensor;
            const tt_st_info *e = tt_safetensors_find(&f, p.items[i].name);
            ck_assert_ptr_nonnull(e);
            tt_tensor *t;
            ck_assert_int_eq(tt_safetensors_get(&f, p.items[i].name, &t), TT_OK);
            ck_assert(tt_same_shape(t, src));
            bool fl = tt_dtype_is_float(src->dtype);
            ck_assert_int_eq(e->dtype, fl ? dts[k] : src->dtype == TT_I32 ? TT_ST_I32
                                        : src->dtype == TT_I64 ? TT_ST_I64 : TT_ST_BOOL);
            // F32/F64 keep every bit of their own dtype; F16 has 11 significant bits, BF16 8.
            double tol = !fl ? 0 : dts[k] == TT_ST_F16 ? 0x1p-11 : dts[k] == TT_ST_BF16 ? 0x1p-8
                         : dts[k] == TT_ST_F32 && src->dtype == TT_F64 ? 0x1p-24 : 0;
            for (int64_t j = 0; j < tt_numel(src); j++) {
                int64_t idx[TT_MAX_DIMS], r = j;
                for (int d = src->ndim - 1; d >= 0; d--) {
                    idx[d] = r % src->shape[d];
                    r /= src->shape[d];
                }
                ck_assert_close(tt_get(t, idx), tt_get(src, idx), 0, tol);
            }
            tt_release(t);
        }
        tt_safetensors_close(&f);
    }
    remove_tmpdir();
    tt_params_free(&p);
    tt_release(a32);
    tt_release(a64);
    tt_release(view);
    tt_release(i32);
    tt_release(i64);
    tt_release(bo);
}
END_TEST

START_TEST(test_empty_file_and_metadata_only) {
    make_tmpdir();
    char path[160];
    tt_params p;
    tt_params_init(&p);
    ck_assert_int_eq(tt_safetensors_save(tmp_path(path, sizeof path, "e.st"), &p, NULL,
                                         TT_ST_F32), TT_OK);
    size_t n;
    unsigned char *b = read_file(path, &n);
    ck_assert_uint_eq(n, 16);  // "{}" padded to 8 bytes
    ck_assert(memcmp(b, "\x08\0\0\0\0\0\0\0{}      ", 16) == 0);
    free(b);
    tt_safetensors f;
    ck_assert_int_eq(tt_safetensors_open(&f, path), TT_OK);
    ck_assert_int_eq(f.n, 0);
    tt_safetensors_close(&f);
    const char *meta[] = {"b", "2", "a", "1", NULL};
    ck_assert_int_eq(tt_safetensors_save(path, &p, meta, TT_ST_BF16), TT_OK);
    b = read_file(path, &n);
    const char *want = "{\"__metadata__\":{\"a\":\"1\",\"b\":\"2\"}}";
    ck_assert_uint_eq(n, 8 + 40);
    ck_assert(memcmp(b + 8, want, strlen(want)) == 0);
    free(b);
    ck_assert_int_eq(tt_safetensors_open(&f, path), TT_OK);
    ck_assert_str_eq(f.meta_keys[0], "a");
    ck_assert_str_eq(tt_safetensors_meta(&f, "b"), "2");
    tt_safetensors_close(&f);
    remove_tmpdir();
}
END_TEST

START_TEST(test_load_params) {
    make_tmpdir();
    char path[160];
    tmp_path(path, sizeof path, "lp.safetensors");
    tt_tensor *w = tt_test_tensor(TT_F32, TT_SHAPE(2, 2), 1, 2, 3, 4);
    tt_tensor *b = tt_test_tensor(TT_F32, TT_SHAPE(2), 5, 6);
    tt_tensor *ids = tt_test_tensor(TT_I64, TT_SHAPE(2), 7, 8);
    tt_params src;
    tt_params_init(&src);
    tt_params_add(&src, "fc", "weight", w);
    tt_params_add(&src, "fc", "bias", b);
    tt_params_add(&src, NULL, "ids", ids);
    ck_assert_int_eq(tt_safetensors_save(path, &src, NULL, TT_ST_F32), TT_OK);

    // Into f64 parameters and an i32 buffer (converted), strict: everything matches.
    tt_tensor *w2 = tt_zeros(TT_F64, TT_SHAPE(2, 2)), *b2 = tt_zeros(TT_F64, TT_SHAPE(2));
    tt_tensor *ids2 = tt_zeros(TT_I32, TT_SHAPE(2));
    tt_params dst;
    tt_params_init(&dst);
    tt_params_add(&dst, NULL, "ids", ids2);
    tt_params_add(&dst, "fc", "bias", b2);
    tt_params_add(&dst, "fc", "weight", w2);
    ck_assert_msg(tt_safetensors_load_params(path, &dst, true) == TT_OK, "%s", tt_last_error());
    ck_assert_values(w2, 0, 0, 1, 2, 3, 4);
    ck_assert_values(b2, 0, 0, 5, 6);
    ck_assert_values(ids2, 0, 0, 7, 8);

    // A missing and an unexpected key: strict fails naming both, non-strict loads the rest.
    tt_fill_(b2, 0);
    tt_tensor *extra = tt_zeros(TT_F32, TT_SHAPE(3));
    tt_params d2;
    tt_params_init(&d2);
    tt_params_add(&d2, "fc", "bias", b2);
    tt_params_add(&d2, "fc", "extra", extra);
    ck_assert_int_eq(tt_safetensors_load_params(path, &d2, true), TT_ERR_MISMATCH);
    const char *msg = tt_last_error();
    ck_assert_msg(strstr(msg, "missing key(s): 'fc.extra'.") &&
                  strstr(msg, "unexpected key(s): 'fc.weight', 'ids'.") &&
                  strstr(msg, "Nothing was copied"), "%s", msg);
    ck_assert_values(b2, 0, 0, 0, 0);
    ck_assert_int_eq(tt_safetensors_load_params(path, &d2, false), TT_OK);
    ck_assert_values(b2, 0, 0, 5, 6);

    // A shape mismatch fails even when not strict, and copies nothing.
    tt_fill_(b2, 0);
    tt_tensor *wbad = tt_zeros(TT_F32, TT_SHAPE(4));
    tt_params d3;
    tt_params_init(&d3);
    tt_params_add(&d3, "fc", "bias", b2);
    tt_params_add(&d3, "fc", "weight", wbad);
    ck_assert_int_eq(tt_safetensors_load_params(path, &d3, false), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "size or dtype mismatch: 'fc.weight' is (2, 2) in the "
                         "file, (4,) in the model."), "%s", tt_last_error());
    ck_assert_values(b2, 0, 0, 0, 0);
    // Float into integer is a mismatch too.
    tt_tensor *ibad = tt_zeros(TT_I32, TT_SHAPE(2));
    tt_params d4;
    tt_params_init(&d4);
    tt_params_add(&d4, "fc", "bias", ibad);
    ck_assert_int_eq(tt_safetensors_load_params(path, &d4, false), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "'fc.bias' is F32 in the file, i32 in the model"), "%s",
                  tt_last_error());
    // A missing file is an I/O error.
    tmp_path(path, sizeof path, "none.safetensors");
    ck_assert_int_eq(tt_safetensors_load_params(path, &d4, false), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "No such file"), "%s", tt_last_error());

    remove_tmpdir();
    tt_params_free(&src);
    tt_params_free(&dst);
    tt_params_free(&d2);
    tt_params_free(&d3);
    tt_params_free(&d4);
    tt_release(w);
    tt_release(b);
    tt_release(ids);
    tt_release(w2);
    tt_release(b2);
    tt_release(ids2);
    tt_release(extra);
    tt_release(wbad);
    tt_release(ibad);
}
END_TEST

// ---- validation ----

static const struct {
    const char *header;  // NULL: raw bytes in `raw`
    size_t ndata;
    const char *message;
} bad_files[] = {
    {"[]", 0, "does not start with '{'"},
    {" {}", 0, "does not start with '{'"},
    {"{", 0, "not valid JSON"},
    {"{}x", 0, "not valid JSON"},
    {"{\"a\xff\":{}}", 0, "not valid JSON"},  // not UTF-8
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
     "duplicate object key"},
    {"{\"\\u0000\":{}}", 0, "not valid JSON"},
    {"{\"a\":1}", 0, "tensor 'a': its entry is not a JSON object"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
     "tensor 'a' has an unknown field 'x'"},
    {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'a' has no 'shape' field"},
    {"{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': dtype is not a string"},
    {"{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a' has an unknown dtype 'F33'"},
    {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "tensor 'a' has the unsupported dtype 'U8'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': shape is not an array"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': shape entry 0 is not a non-negative integer"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': shape entry 0 is not a non-negative integer"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a' has 9 dims; this library allows at most 8"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': its shape overflows (dim 0"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0,4611686018427387904,4],\"data_offsets\":[0,0]}}",
     0, "tensor 'a': its shape overflows (dim 1"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", 4,
     "not valid JSON"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
     "tensor 'a': data_offsets is not [begin, end]"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]}}", 4,
     "tensor 'a': data_offsets is not [begin, end]"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4,
     "tensor 'a': data_offsets [4, 0] end before they begin"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
     "tensor 'a': data_offsets [0, 8] run past the data buffer (4 bytes"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': data_offsets [0, 4] hold 4 bytes but 2 elements of F32 need 8"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
     "tensor 'b' (bytes 4 .. 12) overlaps tensor 'a'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
     "tensor 'b' begins at byte 8 but tensor 'a' ends at 4 (a gap"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
     "tensor 'a' begins at byte 4 but the header ends at 0"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 5,
     "1 trailing bytes after the last tensor"},
    {"{}", 3, "3 trailing bytes"},
    {"{\"__metadata__\":[]}", 0, "__metadata__ is not a JSON object of strings"},
    {"{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ 'k' is not a string"},
    {"{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor name '' is 0 bytes"},
    {"{\"a\\nb\":{\"dtype\":\"F3\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a?b' has an unknown dtype 'F3'"},
};

START_TEST(test_validation_errors) {
    for (size_t k = 0; k < sizeof bad_files / sizeof bad_files[0]; k++) {
        size_t n;
        unsigned char *b = st_file(bad_files[k].header, bad_files[k].ndata, &n);
        tt_safetensors f;
        tt_status s = tt_safetensors_open_mem(&f, b, n, "bad.st");
        ck_assert_msg(s == TT_ERR_FORMAT, "case %zu (%s) loaded", k, bad_files[k].header);
        ck_assert_msg(strstr(tt_last_error(), bad_files[k].message) &&
                      strncmp(tt_last_error(), "safetensors 'bad.st': ", 22) == 0,
                      "case %zu: '%s' lacks '%s'", k, tt_last_error(), bad_files[k].message);
        ck_assert_msg(!strchr(tt_last_error(), '\n'), "case %zu: a multi-line message", k);
        ck_assert_int_eq(f.n, 0);
        ck_assert_ptr_null(f.tensors);
        tt_safetensors_close(&f);
        free(b);
    }
    // Lengths: a file shorter than 8 bytes, a header past the end, one over the limit.
    tt_safetensors f;
    ck_assert_int_eq(tt_safetensors_open_mem(&f, "\x02\0\0", 3, "s"), TT_ERR_FORMAT);
    ck_assert_msg(strstr(tt_last_error(), "3 bytes, shorter than the 8-byte header length"), "%s",
                  tt_last_error());
    ck_assert_int_eq(tt_safetensors_open_mem(&f, "", 0, "s"), TT_ERR_FORMAT);
    ck_assert_int_eq(tt_safetensors_open_mem(&f, "\x09\0\0\0\0\0\0\0{}", 10, "s"),
                     TT_ERR_FORMAT);
    ck_assert_msg(strstr(tt_last_error(), "header length 9 runs past the end of the file (10 "
                         "bytes"), "%s", tt_last_error());
    ck_assert_int_eq(tt_safetensors_open_mem(&f, "\x01\xe1\xf5\x05\0\0\0\0{}", 10, "s"),
                     TT_ERR_FORMAT);  // 100,000,001
    ck_assert_msg(strstr(tt_last_error(), "header length 100000001 exceeds the limit of "
                         "100000000 bytes"), "%s", tt_last_error());
    ck_assert_int_eq(tt_safetensors_open_mem(&f, "\0\0\0\0\0\0\0\0", 8, "s"), TT_ERR_FORMAT);
    // A name longer than the library's limit.
    char header[700];
    char name[300];
    memset(name, 'n', 299);
    name[299] = 0;
    snprintf(header, sizeof header,
             "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    size_t n;
    unsigned char *b = st_file(header, 4, &n);
    ck_assert_int_eq(tt_safetensors_open_mem(&f, b, n, "s"), TT_ERR_FORMAT);
    ck_assert_msg(strstr(tt_last_error(), "is 299 bytes; this library takes 1 .. 255"), "%s",
                  tt_last_error());
    free(b);
    // BOOL bytes other than 0 and 1 are refused when the tensor is read.
    b = st_file("{\"m\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3, &n);
    b[n - 1] = 2;
    ck_assert_int_eq(tt_safetensors_open_mem(&f, b, n, "s"), TT_OK);
    tt_tensor *t = (tt_tensor *)1;
    ck_assert_int_eq(tt_safetensors_get(&f, "m", &t), TT_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(tt_last_error(), "tensor 'm' (BOOL) has byte 2 at element 2"), "%s",
                  tt_last_error());
    tt_safetensors_close(&f);
    free(b);
    // Valid corner cases: null metadata, zero-size tensors sharing an offset, trailing
    // whitespace in the header, tensors listed out of data order.
    b = st_file("{\"z\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[4,4]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"y\":{\"dtype\":\"F16\",\"shape\":[2,0],\"data_offsets\":[4,4]},"
                "\"__metadata__\":null}   \n", 4, &n);
    ck_assert_msg(tt_safetensors_open_mem(&f, b, n, "s") == TT_OK, "%s", tt_last_error());
    ck_assert_int_eq(f.n, 3);
    ck_assert_str_eq(f.tensors[0].name, "b");
    ck_assert_ptr_nonnull(tt_safetensors_find(&f, "y"));
    ck_assert_ptr_nonnull(tt_safetensors_find(&f, "z"));
    tt_safetensors_close(&f);
    free(b);
}
END_TEST

START_TEST(test_every_truncation_rejected) {
    char path[256];
    size_t n;
    unsigned char *b = read_file(ref_path(path, sizeof path, "bf16"), &n);
    for (size_t k = 0; k < n; k++) {
        tt_safetensors f;
        ck_assert_msg(tt_safetensors_open_mem(&f, b, k, "cut") == TT_ERR_FORMAT,
                      "the first %zu bytes loaded", k);
    }
    // Every byte of the header changed to a space, a quote, a brace or a digit: either a clean
    // error or (for some spaces and digits) a valid file, never anything else.
    uint64_t hn = 0;
    for (int i = 0; i < 8; i++) hn |= (uint64_t)b[i] << (8 * i);
    const char subst[] = {' ', '"', '}', '9', 0};
    for (size_t k = 8; k < 8 + hn; k++) {
        for (const char *c = subst; *c; c++) {
            unsigned char old = b[k];
            b[k] = (unsigned char)*c;
            tt_safetensors f;
            tt_status s = tt_safetensors_open_mem(&f, b, n, "flip");
            ck_assert(s == TT_OK || s == TT_ERR_FORMAT);
            tt_safetensors_close(&f);
            b[k] = old;
        }
    }
    free(b);
}
END_TEST

START_TEST(test_open_errors) {
    make_tmpdir();
    char path[160];
    tt_safetensors f;
    ck_assert_int_eq(tt_safetensors_open(&f, tmp_path(path, sizeof path, "none")), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "cannot open safetensors") &&
                  strstr(tt_last_error(), "No such file"), "%s", tt_last_error());
    ck_assert_int_eq(tt_safetensors_open(&f, tmpdir), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "is a directory"), "%s", tt_last_error());
    write_file(path, "\x02\0\0\0\0\0\0\0{}", 10);
    ck_assert_int_eq(tt_safetensors_open(&f, path), TT_OK);
    tt_safetensors_close(&f);
    // Reading from a file (header first, then the data) fails as reading from memory does.
    char ref[256];
    size_t n;
    unsigned char *b = read_file(ref_path(ref, sizeof ref, "f16"), &n);
    const size_t cuts[] = {0, 5, 8, 9, 200, n - 1, n};
    for (int i = 0; i < 7; i++) {
        char from_mem[1024];
        tt_status s = tt_safetensors_open_mem(&f, b, cuts[i], path);
        snprintf(from_mem, sizeof from_mem, "%s", tt_last_error());
        tt_safetensors_close(&f);
        write_file(path, b, cuts[i]);
        ck_assert_int_eq(tt_safetensors_open(&f, path), s);
        if (s != TT_OK) ck_assert_str_eq(tt_last_error(), from_mem);
        ck_assert_int_eq(f.n, s == TT_OK ? 9 : 0);
        tt_safetensors_close(&f);
    }
    free(b);
    remove_tmpdir();
}
END_TEST

// ---- atomic saves ----

START_TEST(test_save_failure_keeps_old_file) {
    make_tmpdir();
    char path[160], sub[200];
    tmp_path(path, sizeof path, "keep.safetensors");
    tt_tensor *w = tt_test_tensor(TT_F32, TT_SHAPE(2), 1, 2);
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, NULL, "w", w);
    ck_assert_int_eq(tt_safetensors_save(path, &p, NULL, TT_ST_F32), TT_OK);
    size_t n0;
    unsigned char *orig = read_file(path, &n0);

    // The temp file cannot be created (no file descriptor left): the old file stays.
    tt_fill_(w, 9);
    struct rlimit old, none = {0, 0};
    ck_assert(getrlimit(RLIMIT_NOFILE, &old) == 0 && (none.rlim_max = old.rlim_max) > 0);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &none), 0);
    tt_status st = tt_safetensors_save(path, &p, NULL, TT_ST_F16);
    ck_assert(setrlimit(RLIMIT_NOFILE, &old) == 0 && st == TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "create of") &&
                  strstr(tt_last_error(), "the previous file is unchanged"), "%s",
                  tt_last_error());
    // The target is a directory: the temp file is written, the rename fails and is removed.
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_eq(tt_safetensors_save(sub, &p, NULL, TT_ST_F32), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "rename of"), "%s", tt_last_error());
    ck_assert_int_eq(tt_test_count_files(tmpdir, "sub.tmp."), 0);
    // A missing directory.
    snprintf(sub, sizeof sub, "%s/no/such.st", tmpdir);
    ck_assert_int_eq(tt_safetensors_save(sub, &p, NULL, TT_ST_F32), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "No such file"), "%s", tt_last_error());

    size_t n1;
    unsigned char *now = read_file(path, &n1);
    ck_assert_uint_eq(n1, n0);
    ck_assert(memcmp(orig, now, n0) == 0);
    free(orig);
    free(now);
    tt_tensor *back = tt_zeros(TT_F32, TT_SHAPE(2));
    tt_params q;
    tt_params_init(&q);
    tt_params_add(&q, NULL, "w", back);
    ck_assert_int_eq(tt_safetensors_load_params(path, &q, true), TT_OK);
    ck_assert_values(back, 0, 0, 1, 2);
    // A successful save replaces it.
    ck_assert_int_eq(tt_safetensors_save(path, &p, NULL, TT_ST_F16), TT_OK);
    ck_assert_int_eq(tt_safetensors_load_params(path, &q, true), TT_OK);
    ck_assert_values(back, 0, 0, 9, 9);
    tt_params_free(&q);
    tt_params_free(&p);
    tt_release(back);
    tt_release(w);
    remove_tmpdir();
}
END_TEST


// ---- Hugging Face GPT-2 import / export ----

// The logits of m on the reference tokens against the reference forward's (float64) `which`.
static void check_gpt2_logits(tt_gpt *m, const char *which, double tol) {
    char path[256];
    tt_safetensors f;
    ck_assert_msg(tt_safetensors_open(&f, ref_file(path, sizeof path, "gpt2_tiny_expected")) ==
                  TT_OK, "%s", tt_last_error());
    tt_tensor *tokens, *want;
    ck_assert_int_eq(tt_safetensors_get(&f, "tokens", &tokens), TT_OK);
    ck_assert_int_eq(tt_safetensors_get(&f, which, &want), TT_OK);
    tt_safetensors_close(&f);
    tt_scope_begin();
    tt_tensor *logits = tt_to_dtype(tt_gpt_forward(m, tokens), TT_F64);  // (2, 8, V)
    ck_assert(tt_same_shape(logits, want));
    const double *a = tt_data(logits), *b = tt_data(want);
    double worst = 0;
    for (int64_t i = 0; i < tt_numel(want); i++) {
        ck_assert_msg(fabs(a[i] - b[i]) <= tol + tol * fabs(b[i]), "%s[%lld] = %.9g, PyTorch "
                      "%.9g", which, (long long)i, a[i], b[i]);
        worst = fmax(worst, fabs(a[i] - b[i]));
    }
    ck_assert(worst > 0 || tol == 0);  // f32 against float64: never bit-equal by chance
    tt_scope_end();
    tt_release(tokens);
    tt_release(want);
}

START_TEST(test_gpt2_import) {
    char path[256];
    tt_gpt m;
    // The "transformer." prefix, the buffers, no lm_head (tied); n_head given.
    ck_assert_msg(tt_gpt_load_hf(&m, ref_file(path, sizeof path, "gpt2_tiny_tied"), 2) == TT_OK,
                  "%s", tt_last_error());
    ck_assert_int_eq(m.cfg.vocab_size, 23);
    ck_assert_int_eq(m.cfg.block_size, 8);
    ck_assert_int_eq(m.cfg.n_layer, 2);
    ck_assert_int_eq(m.cfg.n_head, 2);
    ck_assert_int_eq(m.cfg.n_embd, 16);
    ck_assert(m.cfg.bias && m.cfg.tie_weights && m.cfg.activation == TT_ACT_GELU_TANH);
    check_gpt2_logits(&m, "logits_tied", 1e-5);
    tt_gpt_free(&m);
    // No prefix, its own lm_head, n_head from the metadata.
    ck_assert_msg(tt_gpt_load_hf(&m, ref_file(path, sizeof path, "gpt2_tiny_untied"), 0) ==
                  TT_OK, "%s", tt_last_error());
    ck_assert(!m.cfg.tie_weights);
    ck_assert_int_eq(m.cfg.n_head, 2);
    check_gpt2_logits(&m, "logits_untied", 1e-5);
    tt_gpt_free(&m);
}
END_TEST

// Every tensor of the export is the tensor of the same name in the original file (the
// original's name without "transformer." when it has none), bit for bit; the original has only
// the buffers besides.
static void check_export_matches(const char *exported, const char *original) {
    tt_safetensors a, b;
    ck_assert_int_eq(tt_safetensors_open(&a, exported), TT_OK);
    ck_assert_int_eq(tt_safetensors_open(&b, original), TT_OK);
    ck_assert_str_eq(tt_safetensors_meta(&a, "format"), "pt");
    ck_assert_str_eq(tt_safetensors_meta(&a, "n_head"), "2");
    int buffers = 0;
    for (int i = 0; i < b.n; i++) buffers += strstr(b.tensors[i].name, ".attn.") &&
        (strstr(b.tensors[i].name, "attn.bias") || strstr(b.tensors[i].name, "masked_bias")) &&
        !strstr(b.tensors[i].name, "c_attn") && !strstr(b.tensors[i].name, "c_proj");
    ck_assert_int_eq(a.n, b.n - buffers);
    bool prefixed = tt_safetensors_find(&b, "transformer.wte.weight") != NULL;
    for (int i = 0; i < a.n; i++) {
        const tt_st_info *x = &a.tensors[i];
        const char *name = x->name;
        if (!prefixed && strncmp(name, "transformer.", 12) == 0) name += 12;
        const tt_st_info *y = tt_safetensors_find(&b, name);
        ck_assert_msg(y != NULL, "exported '%s' is not in the original", x->name);
        ck_assert_int_eq(x->dtype, y->dtype);
        ck_assert_int_eq(x->ndim, y->ndim);
        ck_assert_uint_eq(x->end - x->begin, y->end - y->begin);
        ck_assert_msg(memcmp(a.data + x->begin, b.data + y->begin, x->end - x->begin) == 0,
                      "'%s' differs from the original", x->name);
    }
    tt_safetensors_close(&a);
    tt_safetensors_close(&b);
}

START_TEST(test_gpt2_export) {
    char path[256], out[160];
    make_tmpdir();
    tmp_path(out, sizeof out, "gpt2.safetensors");
    const char *names[] = {"gpt2_tiny_tied", "gpt2_tiny_untied"};
    for (int k = 0; k < 2; k++) {
        tt_gpt m, m2;
        ck_assert_int_eq(tt_gpt_load_hf(&m, ref_file(path, sizeof path, names[k]), 2), TT_OK);
        ck_assert_msg(tt_gpt_save_hf(&m, out, TT_ST_F32) == TT_OK, "%s", tt_last_error());
        check_export_matches(out, path);
        // Reimported (n_head from our metadata), the same model: identical parameters.
        ck_assert_msg(tt_gpt_load_hf(&m2, out, 0) == TT_OK, "%s", tt_last_error());
        ck_assert_int_eq(m2.cfg.tie_weights, m.cfg.tie_weights);
        ck_assert_uint_eq(tt_params_fingerprint(&m2.params), tt_params_fingerprint(&m.params));
        tt_gpt_free(&m2);
        // As BF16 it still loads, and the logits move by about BF16's precision.
        ck_assert_int_eq(tt_gpt_save_hf(&m, out, TT_ST_BF16), TT_OK);
        ck_assert_msg(tt_gpt_load_hf(&m2, out, 0) == TT_OK, "%s", tt_last_error());
        check_gpt2_logits(&m2, k == 0 ? "logits_tied" : "logits_untied", 0.1);
        tt_gpt_free(&m2);
        tt_gpt_free(&m);
    }
    // A model that is not GPT-2-shaped is refused.
    tt_gpt_config cfg = tt_gpt_config_default();
    cfg.vocab_size = 5, cfg.n_layer = 1, cfg.n_embd = 8, cfg.n_head = 2, cfg.block_size = 4;
    cfg.n_kv_head = 0;
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &cfg, &rng), TT_OK);
    ck_assert_int_eq(tt_gpt_save_hf(&m, out, TT_ST_F32), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "the model has bias = false"), "%s", tt_last_error());
    tt_gpt_free(&m);
    cfg.bias = true;
    ck_assert_int_eq(tt_gpt_init(&m, &cfg, &rng), TT_OK);
    ck_assert_int_eq(tt_gpt_save_hf(&m, out, TT_ST_F32), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "an activation other than the tanh GELU"), "%s",
                  tt_last_error());
    tt_gpt_free(&m);
    cfg.activation = TT_ACT_GELU_TANH, cfg.qkv_bias = false;  // q/k/v without bias
    ck_assert_int_eq(tt_gpt_init(&m, &cfg, &rng), TT_OK);
    ck_assert_int_eq(tt_gpt_save_hf(&m, out, TT_ST_F32), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "qkv_bias = false"), "%s", tt_last_error());
    tt_gpt_free(&m);
    remove_tmpdir();
}
END_TEST

// The tied reference GPT-2 with one tensor dropped, replaced or added, saved to out.
static void edited_gpt2(const char *out, const char *drop, const char *add, tt_tensor *t) {
    char path[256];
    tt_safetensors f;
    ck_assert_int_eq(tt_safetensors_open(&f, ref_file(path, sizeof path, "gpt2_tiny_tied")),
                     TT_OK);
    tt_params p;
    tt_params_init(&p);
    for (int i = 0; i < f.n; i++) {
        if (drop && strcmp(f.tensors[i].name, drop) == 0) continue;
        tt_tensor *x;
        ck_assert_int_eq(tt_safetensors_get(&f, f.tensors[i].name, &x), TT_OK);
        tt_params_add(&p, NULL, f.tensors[i].name, x);
        tt_release(x);
    }
    if (add) tt_params_add(&p, NULL, add, t);
    ck_assert_int_eq(tt_safetensors_save(out, &p, NULL, TT_ST_F32), TT_OK);
    tt_params_free(&p);
    tt_safetensors_close(&f);
}

START_TEST(test_gpt2_import_errors) {
    char path[256], out[160];
    make_tmpdir();
    tmp_path(out, sizeof out, "bad.safetensors");
    tt_gpt m;
    // n_embd 16 is not a multiple of 64 and the file has no n_head.
    ck_assert_int_eq(tt_gpt_load_hf(&m, ref_file(path, sizeof path, "gpt2_tiny_tied"), 0),
                     TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "n_embd 16 is not a multiple of 64 and the file has no "
                         "n_head metadata; pass n_head"), "%s", tt_last_error());
    ck_assert_ptr_null(m.blocks);
    // n_head must divide n_embd.
    ck_assert_int_eq(tt_gpt_load_hf(&m, path, 3), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "n_embd=16 is not divisible by n_head=3"), "%s",
                  tt_last_error());
    // Not a GPT-2 at all.
    ck_assert_int_eq(tt_gpt_load_hf(&m, ref_path(path, sizeof path, "f32"), 2), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "has no (V, C) wte.weight and (N, C) wpe.weight"), "%s",
                  tt_last_error());
    // A missing tensor.
    edited_gpt2(out, "transformer.h.1.mlp.c_fc.bias", NULL, NULL);
    ck_assert_int_eq(tt_gpt_load_hf(&m, out, 2), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "has no tensor 'transformer.h.1.mlp.c_fc.bias'"), "%s",
                  tt_last_error());
    // A misshapen one.
    tt_tensor *t = tt_zeros(TT_F32, TT_SHAPE(47));
    edited_gpt2(out, "transformer.h.0.attn.c_attn.bias", "transformer.h.0.attn.c_attn.bias", t);
    ck_assert_int_eq(tt_gpt_load_hf(&m, out, 2), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "tensor 'transformer.h.0.attn.c_attn.bias' has 1 dims "
                         "(first 47) where the other tensors imply (48,)"), "%s",
                  tt_last_error());
    // An unexpected one.
    edited_gpt2(out, NULL, "transformer.h.0.attn.rotary", t);
    ck_assert_int_eq(tt_gpt_load_hf(&m, out, 2), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "1 unexpected tensor(s): 'transformer.h.0.attn.rotary'"),
                  "%s", tt_last_error());
    tt_release(t);
    // Integer weights.
    t = tt_zeros(TT_I64, TT_SHAPE(16));
    edited_gpt2(out, "transformer.ln_f.bias", "transformer.ln_f.bias", t);
    ck_assert_int_eq(tt_gpt_load_hf(&m, out, 2), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "'transformer.ln_f.bias' is I64; weights must be"), "%s",
                  tt_last_error());
    tt_release(t);
    ck_assert_ptr_null(m.blocks);
    tt_gpt_free(&m);
    remove_tmpdir();
}
END_TEST

// ---- aborts ----

START_TEST(test_aborts_safet_int_dtype) {
    tt_expect_abort("is not a float dtype of the format: pass TT_ST_F32");
    tt_params p;
    tt_params_init(&p);
    tt_safetensors_save("/tmp/never.st", &p, NULL, TT_ST_I32);
}
END_TEST

START_TEST(test_aborts_safet_duplicate_meta) {
    tt_expect_abort("metadata key 'k' is given twice");
    tt_params p;
    tt_params_init(&p);
    const char *meta[] = {"k", "1", "k", "2", NULL};
    tt_safetensors_save("/tmp/never.st", &p, meta, TT_ST_F32);
}
END_TEST

START_TEST(test_aborts_safet_metadata_name) {
    tt_expect_abort("tensor name '__metadata__' is not allowed");
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, NULL, "__metadata__", tt_zeros(TT_F32, TT_SHAPE(1)));
    tt_safetensors_save("/tmp/never.st", &p, NULL, TT_ST_F32);
}
END_TEST

START_TEST(test_aborts_safet_bad_utf8_name) {
    tt_expect_abort("tensor name 'a\xff' is not valid UTF-8");
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, NULL, "a\xff", tt_zeros(TT_F32, TT_SHAPE(1)));
    tt_safetensors_save("/tmp/never.st", &p, NULL, TT_ST_F32);
}
END_TEST

int main(void) {
    Suite *s = suite_create("safetensors");
    TCase *tc = tt_tcase("reference");
    tcase_add_test(tc, test_reference_files_read);
    tcase_add_test(tc, test_reference_files_written);
    tcase_add_test(tc, test_every_f16_bf16_pattern);
    suite_add_tcase(s, tc);

    TCase *rt = tt_tcase("round_trip");
    tcase_add_test(rt, test_round_trip_every_dtype);
    tcase_add_test(rt, test_empty_file_and_metadata_only);
    tcase_add_test(rt, test_load_params);
    tcase_add_test(rt, test_save_failure_keeps_old_file);
    suite_add_tcase(s, rt);

    TCase *ld = tt_tcase("validation");
    tcase_add_test(ld, test_validation_errors);
    tcase_add_test(ld, test_every_truncation_rejected);
    tcase_add_test(ld, test_open_errors);
    suite_add_tcase(s, ld);

    TCase *hf = tt_tcase("gpt2_hf");
    tcase_add_test(hf, test_gpt2_import);
    tcase_add_test(hf, test_gpt2_export);
    tcase_add_test(hf, test_gpt2_import_errors);
    suite_add_tcase(s, hf);

    TCase *ab = tt_tcase_aborts("aborts_safet");
    tcase_add_test_raise_signal(ab, test_aborts_safet_int_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_aborts_safet_duplicate_meta, SIGABRT);
    tcase_add_test_raise_signal(ab, test_aborts_safet_metadata_name, SIGABRT);
    tcase_add_test_raise_signal(ab, test_aborts_safet_bad_utf8_name, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
