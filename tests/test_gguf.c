// Check suite of io/gguf.h and the GGUF mapping of models/gpt: Q8_0 and Q4_0 blocks against
// hand-computed bytes, a round trip of every tensor type and metadata type, every refusal of
// the reader with its message (on files built byte by byte here), a GPT-2-shaped model written
// and read back (tied, untied, quantized), the refusals of the mapping, and the tokenizer in
// GGUF metadata (char, GPT-2's BPE as llama.cpp reads it).
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "models/gpt/gpt.h"

static char tmpdir[64];

static void make_tmpdir(void) { tt_test_mkdtemp(tmpdir, sizeof tmpdir, "gguf"); }

static void remove_tmpdir(void) { tt_test_rmdir(tmpdir); }

static const char *tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

static uint16_t u16_at(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

// ---- blocks ----

START_TEST(test_q8_0_block_by_hand) {
    // x = j - 16: amax 16, d = 16 / 127 (f16 0x3008 = 0.1259765625), q = round(x * 127 / 16).
    float x[32], y[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16);
    unsigned char b[34];
    tt_gguf_quantize_q8_0(b, x, 32);
    ck_assert_uint_eq(u16_at(b), 0x3008);
    ck_assert_int_eq((int8_t)b[2 + 0], -127);   // -16 * 7.9375
    ck_assert_int_eq((int8_t)b[2 + 15], -8);    // -1 * 7.9375 = -7.9375
    ck_assert_int_eq((int8_t)b[2 + 16], 0);
    ck_assert_int_eq((int8_t)b[2 + 17], 8);
    ck_assert_int_eq((int8_t)b[2 + 18], 16);    // 15.875
    ck_assert_int_eq((int8_t)b[2 + 31], 119);   // 119.0625
    tt_gguf_dequantize(y, b, TT_GGML_Q8_0, 32);
    ck_assert_float_eq(y[0], -127 * 0.1259765625f);
    ck_assert_float_eq(y[31], 119 * 0.1259765625f);
    ck_assert_float_eq(y[16], 0.0f);
    // All zeros: d = 0, every q 0.
    float z[32] = {0};
    tt_gguf_quantize_q8_0(b, z, 32);
    for (int j = 0; j < 34; j++) ck_assert_uint_eq(b[j], 0);
}
END_TEST

START_TEST(test_q4_0_block_by_hand) {
    // x = j - 16: the largest magnitude is x[0] = -16, d = -16 / -8 = 2 (f16 0x4000), id 0.5,
    // q = min(15, trunc(x / 2 + 8.5)); element j in the low nibble of byte j, j + 16 high.
    float x[32], y[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16);
    unsigned char b[18];
    tt_gguf_quantize_q4_0(b, x, 32);
    ck_assert_uint_eq(u16_at(b), 0x4000);
    ck_assert_uint_eq(b[2 + 0], 0x80);   // q0 = trunc(0.5) = 0, q16 = trunc(8.5) = 8
    ck_assert_uint_eq(b[2 + 1], 0x91);   // q1 = 1, q17 = 9
    ck_assert_uint_eq(b[2 + 2], 0x91);   // q2 = trunc(1.5) = 1, q18 = trunc(9.5) = 9
    ck_assert_uint_eq(b[2 + 15], 0xf8);  // q15 = 8, q31 = min(15, 16) = 15
    tt_gguf_dequantize(y, b, TT_GGML_Q4_0, 32);
    ck_assert_float_eq(y[0], -16.0f);
    ck_assert_float_eq(y[1], -14.0f);
    ck_assert_float_eq(y[17], 2.0f);
    ck_assert_float_eq(y[31], 14.0f);
    // The largest magnitude positive: x = j + 1, max 32, d = -4; q31 = trunc(-8 + 8.5) = 0,
    // which dequantizes to (0 - 8) * -4 = 32 exactly.
    for (int j = 0; j < 32; j++) x[j] = (float)(j + 1);
    tt_gguf_quantize_q4_0(b, x, 32);
    ck_assert_uint_eq(u16_at(b), 0xc400);  // -4 in f16
    ck_assert_uint_eq(b[2 + 15] >> 4, 0);
    tt_gguf_dequantize(y, b, TT_GGML_Q4_0, 32);
    ck_assert_float_eq(y[31], 32.0f);
    ck_assert_float_eq(y[0], 0.0f);  // trunc(-0.25 + 8.5) = 8 -> 0
}
END_TEST

// ---- round trips ----

START_TEST(test_round_trip_every_tensor_type) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "t.gguf");
    float v[2 * 64];
    for (int i = 0; i < 128; i++) v[i] = (float)((i * 37) % 64 - 32) / 8.0f;  // f16-exact
    tt_tensor *x = tt_from_data(TT_F32, TT_SHAPE(2, 64), v);
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    const tt_ggml_type types[] = {TT_GGML_F32, TT_GGML_F16, TT_GGML_BF16, TT_GGML_Q8_0,
                                  TT_GGML_Q4_0};
    const char *names[] = {"f32", "f16", "bf16", "q8_0", "q4_0"};
    for (int k = 0; k < 5; k++) tt_gguf_writer_add(&w, names[k], x, types[k]);
    ck_assert_int_eq(tt_gguf_writer_save(&w, path), TT_OK);
    tt_gguf_writer_free(&w);
    tt_release(x);
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open(&f, path), TT_OK);
    ck_assert_int_eq(f.n_tensors, 5);
    ck_assert_uint_eq(f.version, 3);
    ck_assert_uint_eq(f.data_offset % 32, 0);
    for (int k = 0; k < 5; k++) {
        const tt_gguf_tensor *t = tt_gguf_find(&f, names[k]);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(t->type, types[k]);
        ck_assert_int_eq(t->ndim, 2);
        ck_assert_int_eq(t->ne[0], 64);  // the fastest dim first
        ck_assert_int_eq(t->ne[1], 2);
        ck_assert_uint_eq(t->offset % 32, 0);
        tt_tensor *y;
        ck_assert_int_eq(tt_gguf_get(&f, names[k], &y), TT_OK);
        ck_assert_int_eq(y->shape[0], 2);
        ck_assert_int_eq(y->shape[1], 64);
        // Quantized: equal to the blocks' own dequantization (and within d / 2 of x).
        unsigned char blocks[4 * 34];
        float want[128];
        memcpy(want, v, sizeof want);
        if (types[k] == TT_GGML_Q8_0 || types[k] == TT_GGML_Q4_0) {
            if (types[k] == TT_GGML_Q8_0) tt_gguf_quantize_q8_0(blocks, v, 128);
            else tt_gguf_quantize_q4_0(blocks, v, 128);
            ck_assert_int_eq(memcmp(blocks, tt_gguf_data(&f, t), t->nbytes), 0);
            tt_gguf_dequantize(want, blocks, types[k], 128);
        }
        const float *got = tt_data(y);
        for (int i = 0; i < 128; i++) {
            ck_assert_float_eq(got[i], want[i]);
            ck_assert_float_eq_tol(got[i], v[i], types[k] == TT_GGML_Q4_0 ? 0.5 : 0.016);
        }
        tt_release(y);
    }
    ck_assert_int_eq(tt_gguf_get(&f, "nope", &x), TT_ERR_MISMATCH);
    ck_assert_ptr_null(x);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "has no tensor 'nope'"));
    tt_gguf_close(&f);
    remove_tmpdir();
}
END_TEST

START_TEST(test_metadata_every_type) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "m.gguf");
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    const int64_t ints[] = {200, -100, 60000, -30000, 4000000000, -2000000000, 0, 1, 0, 0,
                            (int64_t)1 << 62, -((int64_t)1 << 62), 0};
    for (int t = 0; t < TT_GGUF_TYPE_COUNT; t++) {
        if (t == TT_GGUF_STRING || t == TT_GGUF_ARRAY) continue;
        char key[32];
        snprintf(key, sizeof key, "k.%s", tt_gguf_type_name(t));
        tt_gguf_writer_set_num(&w, key, (tt_gguf_type)t, ints[t], t == 6 ? 0.25 : -1.5e300);
    }
    tt_gguf_writer_set_str(&w, "k.str", "h\xc3\xa9llo");
    const char *strs[] = {"a", "", "bc"};
    tt_gguf_writer_set_array(&w, "k.strs", TT_GGUF_STRING, strs, 3);
    const int16_t i16[] = {-2, 7};
    tt_gguf_writer_set_array(&w, "k.i16s", TT_GGUF_INT16, i16, 2);
    const double f64[] = {0.5, -3};
    tt_gguf_writer_set_array(&w, "k.f64s", TT_GGUF_FLOAT64, f64, 2);
    const bool bools[] = {true, false};
    tt_gguf_writer_set_array(&w, "k.bools", TT_GGUF_BOOL, bools, 2);
    tt_gguf_writer_set_u32(&w, "general.alignment", 64);
    tt_tensor *x = tt_ones(TT_F32, TT_SHAPE(3));
    tt_gguf_writer_add(&w, "x", x, TT_GGML_F32);
    tt_release(x);
    ck_assert_int_eq(tt_gguf_writer_save(&w, path), TT_OK);
    tt_gguf_writer_free(&w);

    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open(&f, path), TT_OK);
    ck_assert_uint_eq(f.alignment, 64);
    ck_assert_uint_eq(f.data_offset % 64, 0);
    int64_t v;
    ck_assert(tt_gguf_get_int(&f, "k.UINT8", &v) && v == 200);
    ck_assert(tt_gguf_get_int(&f, "k.INT8", &v) && v == -100);
    ck_assert(tt_gguf_get_int(&f, "k.UINT16", &v) && v == 60000);
    ck_assert(tt_gguf_get_int(&f, "k.INT16", &v) && v == -30000);
    ck_assert(tt_gguf_get_int(&f, "k.UINT32", &v) && v == 4000000000);
    ck_assert(tt_gguf_get_int(&f, "k.INT32", &v) && v == -2000000000);
    ck_assert(tt_gguf_get_int(&f, "k.UINT64", &v) && v == (int64_t)1 << 62);
    ck_assert(tt_gguf_get_int(&f, "k.INT64", &v) && v == -((int64_t)1 << 62));
    ck_assert(!tt_gguf_get_int(&f, "k.BOOL", &v));
    ck_assert_uint_eq(tt_gguf_find_kv(&f, "k.BOOL")->num.u, 1);
    double d;
    ck_assert(tt_gguf_get_float(&f, "k.FLOAT32", &d) && d == 0.25);
    ck_assert(tt_gguf_get_float(&f, "k.FLOAT64", &d) && d == -1.5e300);
    ck_assert_str_eq(tt_gguf_get_str(&f, "k.str"), "h\xc3\xa9llo");
    ck_assert_ptr_null(tt_gguf_get_str(&f, "k.UINT8"));
    const tt_gguf_value *a = tt_gguf_find_kv(&f, "k.strs");
    ck_assert(a->type == TT_GGUF_ARRAY && a->elem == TT_GGUF_STRING && a->n == 3);
    ck_assert_str_eq(tt_gguf_array_get(a, 2).str, "bc");
    ck_assert_uint_eq(tt_gguf_array_get(a, 1).n, 0);
    a = tt_gguf_find_kv(&f, "k.i16s");
    ck_assert_int_eq(tt_gguf_array_get(a, 0).num.i, -2);
    ck_assert_int_eq(tt_gguf_array_get(a, 1).num.i, 7);
    a = tt_gguf_find_kv(&f, "k.f64s");
    ck_assert(tt_gguf_array_get(a, 1).num.f == -3.0);
    a = tt_gguf_find_kv(&f, "k.bools");
    ck_assert(tt_gguf_array_get(a, 0).num.u == 1 && tt_gguf_array_get(a, 1).num.u == 0);
    ck_assert_int_eq(f.n_kv, 11 + 5 + 1);
    tt_gguf_close(&f);
    remove_tmpdir();
}
END_TEST

// ---- files built byte by byte ----

typedef struct buf {
    unsigned char b[4096];
    size_t n;
} buf;

static void le(buf *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) b->b[b->n++] = (unsigned char)(v >> (8 * i));
}

static void str(buf *b, const char *s) {
    le(b, strlen(s), 8);
    memcpy(b->b + b->n, s, strlen(s));
    b->n += strlen(s);
}

// The magic, version 3 and the counts.
static void head(buf *b, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    memcpy(b->b, "GGUF", 4);
    b->n = 4;
    le(b, 3, 4);
    le(b, n_tensors, 8);
    le(b, n_kv, 8);
}

// A tensor description: name, dims (ne), type, offset.
static void tinfo(buf *b, const char *name, int nd, const uint64_t *ne, uint32_t type,
                  uint64_t off) {
    str(b, name);
    le(b, (uint64_t)nd, 4);
    for (int i = 0; i < nd; i++) le(b, ne[i], 8);
    le(b, type, 4);
    le(b, off, 8);
}

// Pads to 32 and appends n zero bytes of data.
static void data(buf *b, size_t n) {
    while (b->n % 32) b->b[b->n++] = 0;
    memset(b->b + b->n, 0, n);
    b->n += n;
}

// Opening b fails with TT_ERR_FORMAT and a message holding want (and f left empty).
static void refused(const buf *b, const char *want) {
    tt_gguf f;
    tt_status s = tt_gguf_open_mem(&f, b->b, b->n, "bad");
    ck_assert_msg(s == TT_ERR_FORMAT, "expected a refusal with '%s', got %s", want,
                  tt_status_str(s));
    const char *m = tt_last_error();
    ck_assert_msg(strstr(m, want) && strncmp(m, "gguf 'bad': ", 12) == 0,
                  "message '%s' lacks '%s'", m, want);
    ck_assert(f.n_kv == 0 && f.kv == NULL && f.tensors == NULL && f.bytes == NULL);
    tt_gguf_close(&f);
}

START_TEST(test_reader_refusals_header) {
    buf b;
    head(&b, 0, 0);
    memcpy(b.b, "GGUX", 4);
    refused(&b, "no 'GGUF' magic");
    head(&b, 0, 0);
    b.b[4] = 1;
    refused(&b, "version 1; this library reads versions 2 and 3");
    head(&b, 0, 0);
    b.n = 10;
    refused(&b, "the file ends inside the header");
    head(&b, 0, (uint64_t)1 << 40);
    refused(&b, "1099511627776 metadata pairs cannot fit");
    head(&b, (uint64_t)1 << 40, 0);
    refused(&b, "1099511627776 tensors cannot be described");
    head(&b, 0, 1);
    le(&b, 1000, 8);
    le(&b, 0, 8);
    refused(&b, "a metadata key is 1000 bytes, past the end of the file");
    head(&b, 0, 1);
    str(&b, "k");
    le(&b, 13, 4);
    le(&b, 0, 4);
    refused(&b, "key 'k' has unknown value type 13");
    head(&b, 0, 2);
    str(&b, "a");
    le(&b, TT_GGUF_UINT8, 4);
    le(&b, 1, 1);
    str(&b, "a");
    le(&b, TT_GGUF_UINT8, 4);
    le(&b, 2, 1);
    refused(&b, "metadata key 'a' appears twice");
    head(&b, 0, 1);
    str(&b, "k");
    le(&b, TT_GGUF_BOOL, 4);
    le(&b, 2, 1);
    refused(&b, "key 'k': BOOL value 2 is not 0 or 1");
    head(&b, 0, 1);
    str(&b, "k");
    le(&b, TT_GGUF_ARRAY, 4);
    for (int i = 0; i < 9; i++) {
        le(&b, TT_GGUF_ARRAY, 4);
        le(&b, 1, 8);
    }
    le(&b, TT_GGUF_UINT8, 4);
    le(&b, 0, 8);
    refused(&b, "key 'k': arrays nested deeper than 8");
    head(&b, 0, 1);
    str(&b, "k");
    le(&b, TT_GGUF_ARRAY, 4);
    le(&b, TT_GGUF_UINT32, 4);
    le(&b, 1000, 8);
    refused(&b, "key 'k': an array of 1000 UINT32 values cannot fit");
    head(&b, 0, 1);
    str(&b, "general.alignment");
    le(&b, TT_GGUF_UINT32, 4);
    le(&b, 3, 4);
    refused(&b, "general.alignment is UINT32 3, not a UINT32 power of two");
    head(&b, 0, 1);
    str(&b, "s");
    le(&b, TT_GGUF_STRING, 4);
    le(&b, 5, 8);
    memcpy(b.b + b.n, "ab", 2);
    b.n += 2;
    refused(&b, "a string value is 5 bytes, past the end of the file");
}
END_TEST

START_TEST(test_reader_refusals_tensors) {
    buf b;
    const uint64_t ne5[] = {1, 1, 1, 1, 1}, ne32[] = {32, 2}, big[] = {(uint64_t)1 << 40,
                                                                        (uint64_t)1 << 40};
    head(&b, 1, 0);
    tinfo(&b, "t", 5, ne5, 0, 0);
    refused(&b, "tensor 't' has 5 dims; ggml allows at most 4");
    head(&b, 1, 0);
    tinfo(&b, "t", 2, big, 0, 0);
    refused(&b, "tensor 't': its dims overflow");
    head(&b, 1, 0);
    tinfo(&b, "t", 2, ne32, 12, 0);
    refused(&b, "tensor 't' has the unsupported ggml type Q4_K (12); this library reads F32, "
            "F16, BF16, Q8_0 and Q4_0");
    head(&b, 1, 0);
    tinfo(&b, "t", 2, ne32, 99, 0);
    refused(&b, "tensor 't' has an unknown ggml type ? (99)");
    head(&b, 1, 0);
    tinfo(&b, "t", 1, (const uint64_t[]){33}, TT_GGML_Q8_0, 0);
    refused(&b, "tensor 't': ne[0] = 33 is not a multiple of the Q8_0 block (32)");
    head(&b, 1, 0);
    tinfo(&b, "t", 2, ne32, 0, 4);
    data(&b, 512);
    refused(&b, "tensor 't' starts at offset 4, not a multiple of the alignment 32");
    head(&b, 1, 0);
    tinfo(&b, "t", 2, ne32, 0, 0);
    data(&b, 255);
    refused(&b, "tensor 't' (256 bytes at offset 0) runs past the data section (255 bytes");
    head(&b, 2, 0);
    tinfo(&b, "a", 2, ne32, 0, 0);
    tinfo(&b, "b", 2, ne32, 0, 224);
    data(&b, 512);
    refused(&b, "tensor 'b' at offset 224 overlaps tensor 'a'");
    head(&b, 2, 0);
    tinfo(&b, "a", 2, ne32, 0, 0);
    tinfo(&b, "a", 2, ne32, 0, 256);
    data(&b, 512);
    refused(&b, "tensor 'a' appears twice");
    head(&b, 1, 0);
    tinfo(&b, "0123456789012345678901234567890123456789012345678901234567890123X", 1,
          ne32, 0, 0);
    refused(&b, "a tensor name is 65 bytes; the limit is 64");
    head(&b, 1, 0);
    tinfo(&b, "", 1, ne32, 0, 0);
    refused(&b, "tensor 0's name '' is empty or holds a NUL byte");
    // Every truncation of a valid file is refused, never read past.
    head(&b, 1, 1);
    str(&b, "k");
    le(&b, TT_GGUF_STRING, 4);
    str(&b, "v");
    tinfo(&b, "t", 2, ne32, 0, 0);
    data(&b, 256);
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open_mem(&f, b.b, b.n, "ok"), TT_OK);
    tt_gguf_close(&f);
    for (size_t n = 0; n < b.n; n++) {
        ck_assert_int_eq(tt_gguf_open_mem(&f, b.b, n, "cut"), TT_ERR_FORMAT);
        tt_gguf_close(&f);
    }
}
END_TEST

START_TEST(test_metadata_only_file_unpadded) {
    buf b;
    head(&b, 0, 1);
    str(&b, "general.architecture");
    le(&b, TT_GGUF_STRING, 4);
    str(&b, "gpt2");  // 68 bytes: no padding to 32 after a header without tensors
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open_mem(&f, b.b, b.n, "meta"), TT_OK);
    ck_assert_str_eq(tt_gguf_get_str(&f, "general.architecture"), "gpt2");
    ck_assert_uint_eq(f.data_offset, b.n);
    tt_gguf_close(&f);
}
END_TEST

START_TEST(test_open_missing_file) {
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open(&f, "/nonexistent/x.gguf"), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "/nonexistent/x.gguf"));
    tt_gguf_close(&f);
}
END_TEST

// ---- GPT-2 ----

static tt_gpt_config gpt2_cfg(int64_t C) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 40, c.block_size = 16, c.n_layer = 2, c.n_head = c.n_kv_head = 2;
    c.n_embd = C, c.dropout = 0, c.bias = c.qkv_bias = true;
    c.positional = TT_POS_LEARNED, c.norm = TT_NORM_LAYERNORM, c.activation = TT_ACT_GELU_TANH;
    c.qk_norm = false;
    return c;
}

// Every parameter of b equals a's (through the quantizer of type when it is one).
static void same_params(const tt_gpt *a, const tt_gpt *b, tt_ggml_type type) {
    ck_assert_int_eq(a->params.n, b->params.n);
    for (int i = 0; i < a->params.n; i++) {
        const char *name = a->params.items[i].name;
        tt_tensor *x = a->params.items[i].tensor, *y = tt_params_get(&b->params, name);
        ck_assert_msg(y != NULL, "'%s' is missing", name);
        ck_assert(tt_same_shape(x, y));
        int64_t n = tt_numel(x);
        float *want = malloc((size_t)n * sizeof *want);
        memcpy(want, tt_data(x), (size_t)n * sizeof *want);
        bool q = (type == TT_GGML_Q8_0 || type == TT_GGML_Q4_0) && x->ndim == 2 &&
                 strcmp(name, "wpe.weight") != 0;
        if (q) {
            unsigned char *blk = malloc((size_t)n * 2);
            if (type == TT_GGML_Q8_0) tt_gguf_quantize_q8_0(blk, want, n);
            else tt_gguf_quantize_q4_0(blk, want, n);
            tt_gguf_dequantize(want, blk, type, n);
            free(blk);
        }
        const float *got = tt_data(y);
        for (int64_t k = 0; k < n; k++)
            ck_assert_msg(got[k] == want[k], "%s[%lld] = %g, expected %g", name, (long long)k,
                          got[k], want[k]);
        free(want);
    }
}

static void gpt_round_trip(bool tie, tt_ggml_type type) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "g.gguf");
    tt_gpt_config c = gpt2_cfg(32);
    c.tie_weights = tie;
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_gpt a, b;
    ck_assert_int_eq(tt_gpt_init(&a, &c, &rng), TT_OK);
    ck_assert_int_eq(tt_gpt_save_gguf(&a, path, type), TT_OK);
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open(&f, path), TT_OK);
    ck_assert_str_eq(tt_gguf_get_str(&f, "general.architecture"), "gpt2");
    int64_t v;
    ck_assert(tt_gguf_get_int(&f, "gpt2.block_count", &v) && v == 2);
    ck_assert(tt_gguf_get_int(&f, "gpt2.feed_forward_length", &v) && v == 128);
    ck_assert(tt_gguf_get_int(&f, "gpt2.context_length", &v) && v == 16);
    const tt_gguf_tensor *qkv = tt_gguf_find(&f, "blk.1.attn_qkv.weight");
    ck_assert(qkv && qkv->ne[0] == 32 && qkv->ne[1] == 96 && qkv->type == type);
    ck_assert_int_eq(tt_gguf_find(&f, "blk.0.attn_norm.bias")->type, TT_GGML_F32);
    ck_assert_int_eq(tt_gguf_find(&f, "output.weight") == NULL, tie);
    ck_assert_int_eq(tt_gpt_load_gguf_file(&b, &f), TT_OK);
    tt_gguf_close(&f);
    ck_assert_int_eq(b.cfg.tie_weights, tie);
    ck_assert_int_eq(b.cfg.n_head, 2);
    same_params(&a, &b, type);
    tt_gpt_free(&a);
    tt_gpt_free(&b);
    remove_tmpdir();
}

START_TEST(test_gpt_round_trip_f32_tied) { gpt_round_trip(true, TT_GGML_F32); }
END_TEST
START_TEST(test_gpt_round_trip_f32_untied) { gpt_round_trip(false, TT_GGML_F32); }
END_TEST
START_TEST(test_gpt_round_trip_q8_0) { gpt_round_trip(true, TT_GGML_Q8_0); }
END_TEST
START_TEST(test_gpt_round_trip_q4_0) { gpt_round_trip(false, TT_GGML_Q4_0); }
END_TEST

// tt_gpt_save_gguf of cfg fails with TT_ERR_ARG naming want.
static void export_refused(tt_gpt_config c, tt_ggml_type type, const char *want) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    ck_assert_int_eq(tt_gpt_save_gguf(&m, "/tmp/never_written.gguf", type), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), want), "'%s' lacks '%s'", tt_last_error(), want);
    ck_assert_int_eq(access("/tmp/never_written.gguf", F_OK), -1);
    tt_gpt_free(&m);
}

START_TEST(test_gpt_export_refusals) {
    tt_gpt_config c = gpt2_cfg(32);
    c.positional = TT_POS_ROPE;
    export_refused(c, TT_GGML_F32, "RoPE positions");
    c = gpt2_cfg(32);
    c.norm = TT_NORM_RMSNORM;
    export_refused(c, TT_GGML_F32, "RMSNorm");
    c = gpt2_cfg(32);
    c.bias = c.qkv_bias = false;
    export_refused(c, TT_GGML_F32, "bias = false");
    c = gpt2_cfg(32);
    c.n_kv_head = 1;
    export_refused(c, TT_GGML_F32, "grouped-query attention");
    c = gpt2_cfg(32);
    c.qk_norm = true;
    export_refused(c, TT_GGML_F32, "QK-norm");
    c = gpt2_cfg(32);
    c.activation = TT_ACT_RELU2;
    export_refused(c, TT_GGML_F32, "an activation other than the tanh GELU");
    export_refused(gpt2_cfg(48), TT_GGML_Q4_0, "n_embd 48 is not a multiple of 32");
}
END_TEST

// A GPT-2 GGUF with one change by edit (0: arch llama, 1: a tensor left out, 2: an extra
// tensor, 3: eps 1e-6): loading it fails naming want.
static void import_refused(int edit, const char *want) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "bad.gguf");
    tt_gpt_config c = gpt2_cfg(32);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    // The exporter's file, rewritten through the reader with the one change.
    ck_assert_int_eq(tt_gpt_save_gguf(&m, path, TT_GGML_F32), TT_OK);
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open(&f, path), TT_OK);
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    for (int64_t i = 0; i < f.n_kv; i++) {
        const char *k = f.kv[i].key;
        const tt_gguf_value *v = &f.kv[i].value;
        if (edit == 0 && strcmp(k, "general.architecture") == 0)
            tt_gguf_writer_set_str(&w, k, "llama");
        else if (edit == 3 && strcmp(k, "gpt2.attention.layer_norm_epsilon") == 0)
            tt_gguf_writer_set_f32(&w, k, 1e-6f);
        else if (v->type == TT_GGUF_STRING)
            tt_gguf_writer_set_str(&w, k, v->str);
        else
            tt_gguf_writer_set_num(&w, k, v->type, (int64_t)v->num.u, v->num.f);
    }
    for (int64_t i = 0; i < f.n_tensors; i++) {
        if (edit == 1 && strcmp(f.tensors[i].name, "blk.1.ffn_up.bias") == 0) continue;
        tt_tensor *t;
        ck_assert_int_eq(tt_gguf_get(&f, f.tensors[i].name, &t), TT_OK);
        tt_gguf_writer_add(&w, f.tensors[i].name, t, f.tensors[i].type);
        tt_release(t);
    }
    if (edit == 2)
        tt_gguf_writer_add(&w, "extra.weight", tt_params_get(&m.params, "wte.weight"),
                           TT_GGML_F32);
    tt_gguf_close(&f);
    ck_assert_int_eq(tt_gguf_writer_save(&w, path), TT_OK);
    tt_gguf_writer_free(&w);
    tt_gpt b;
    tt_status s = tt_gpt_load_gguf(&b, path);
    ck_assert_int_ne(s, TT_OK);
    ck_assert_msg(strstr(tt_last_error(), want), "'%s' lacks '%s'", tt_last_error(), want);
    tt_gpt_free(&m);
    remove_tmpdir();
}

START_TEST(test_gpt_import_refusals) {
    import_refused(0, "architecture 'llama' is not supported; this library reads gpt2");
    import_refused(1, "has no tensor 'blk.1.ffn_up.bias'");
    import_refused(2, "has an unexpected tensor 'extra.weight'");
    import_refused(3, "layer_norm_epsilon is missing or not 1e-5");
}
END_TEST

// ---- tokenizers ----

START_TEST(test_tokenizer_char_round_trip) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "t.gguf");
    tt_char_vocab v;
    ck_assert_int_eq(tt_vocab_from_chars(&v, (const unsigned char *)"\nab z", 5), TT_OK);
    tt_tokenizer t, u;
    tt_tokenizer_init_char(&t, &v);
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    tt_tokenizer_gguf_add(&t, &w, 5);
    ck_assert_int_eq(tt_gguf_writer_save(&w, path), TT_OK);
    tt_gguf_writer_free(&w);
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open(&f, path), TT_OK);
    ck_assert_str_eq(tt_gguf_get_str(&f, "tokenizer.ggml.model"), "none");
    bool found;
    ck_assert_int_eq(tt_tokenizer_from_gguf(&u, &f, &found), TT_OK);
    ck_assert(found && tt_tokenizer_equal(&t, &u));
    tt_gguf_close(&f);
    tt_tokenizer_free(&t);
    tt_tokenizer_free(&u);
    remove_tmpdir();
}
END_TEST

START_TEST(test_tokenizer_gpt2_as_llama_reads_it) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "t.gguf");
    tt_tokenizer t, u;
    ck_assert_msg(tt_tokenizer_open(&t, "gpt2") == TT_OK, "%s (make data)", tt_last_error());
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    tt_tokenizer_gguf_add(&t, &w, 50304);  // nanoGPT's padded vocab
    ck_assert_int_eq(tt_gguf_writer_save(&w, path), TT_OK);
    tt_gguf_writer_free(&w);
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open(&f, path), TT_OK);
    const tt_gguf_value *toks = tt_gguf_find_kv(&f, "tokenizer.ggml.tokens"),
                        *types = tt_gguf_find_kv(&f, "tokenizer.ggml.token_type"),
                        *merges = tt_gguf_find_kv(&f, "tokenizer.ggml.merges");
    ck_assert_uint_eq(toks->n, 50304);
    ck_assert_str_eq(tt_gguf_array_get(toks, 0).str, "!");
    ck_assert_str_eq(tt_gguf_array_get(toks, 220).str, "\xc4\xa0");  // " " as U+0120
    ck_assert_str_eq(tt_gguf_array_get(toks, 198).str, "\xc4\x8a");  // "\n" as U+010A
    ck_assert_str_eq(tt_gguf_array_get(toks, 50256).str, "<|endoftext|>");
    ck_assert_str_eq(tt_gguf_array_get(toks, 50257).str, "[PAD50257]");
    ck_assert_int_eq(tt_gguf_array_get(types, 50256).num.i, 3);
    ck_assert_int_eq(tt_gguf_array_get(types, 50257).num.i, 5);
    ck_assert_int_eq(tt_gguf_array_get(types, 100).num.i, 1);
    ck_assert_uint_eq(merges->n, 50000);
    ck_assert_str_eq(tt_gguf_array_get(merges, 0).str, "\xc4\xa0 t");  // vocab.bpe's first
    int64_t eos;
    ck_assert(tt_gguf_get_int(&f, "tokenizer.ggml.eos_token_id", &eos) && eos == 50256);
    bool found;
    ck_assert_int_eq(tt_tokenizer_from_gguf(&u, &f, &found), TT_OK);
    ck_assert(found && u.kind == TT_TOKENIZER_GPT2 && u.n_vocab == 50257);
    tt_tokenizer_free(&u);
    // A token changed: not GPT-2's, refused.
    toks->items[500].str[0] ^= 1;
    ck_assert_int_eq(tt_tokenizer_from_gguf(&u, &f, &found), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "token 500 of its BPE is not GPT-2's"));
    tt_gguf_close(&f);
    tt_tokenizer_free(&t);
    remove_tmpdir();
}
END_TEST

START_TEST(test_tokenizer_other_model_refused) {
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    tt_gguf_writer_set_str(&w, "tokenizer.ggml.model", "llama");
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "t.gguf");
    ck_assert_int_eq(tt_gguf_writer_save(&w, path), TT_OK);
    tt_gguf_writer_free(&w);
    tt_gguf f;
    ck_assert_int_eq(tt_gguf_open(&f, path), TT_OK);
    tt_tokenizer t;
    bool found;
    ck_assert_int_eq(tt_tokenizer_from_gguf(&t, &f, &found), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "tokenizer.ggml.model 'llama' is not "
                                 "supported"));
    tt_gguf_close(&f);
    remove_tmpdir();
}
END_TEST

// ---- aborts ----

START_TEST(test_aborts_gguf_key_twice) {
    tt_expect_abort("metadata key 'a' is set twice");
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    tt_gguf_writer_set_u32(&w, "a", 1);
    tt_gguf_writer_set_str(&w, "a", "x");
}
END_TEST

START_TEST(test_aborts_gguf_quant_row) {
    tt_expect_abort("Q4_0 needs a last dim that is a multiple of 32");
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    tt_gguf_writer_add(&w, "t", tt_zeros(TT_F32, TT_SHAPE(2, 33)), TT_GGML_Q4_0);
}
END_TEST

START_TEST(test_aborts_gguf_alignment) {
    tt_expect_abort("general.alignment must be a UINT32 power of two, got UINT32 48");
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    tt_gguf_writer_set_u32(&w, "general.alignment", 48);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gguf");
    TCase *bl = tt_tcase("blocks");
    tcase_add_test(bl, test_q8_0_block_by_hand);
    tcase_add_test(bl, test_q4_0_block_by_hand);
    suite_add_tcase(s, bl);
    TCase *rt = tt_tcase("round_trip");
    tcase_add_test(rt, test_round_trip_every_tensor_type);
    tcase_add_test(rt, test_metadata_every_type);
    suite_add_tcase(s, rt);
    TCase *rd = tt_tcase("reader_refusals");
    tcase_add_test(rd, test_reader_refusals_header);
    tcase_add_test(rd, test_reader_refusals_tensors);
    tcase_add_test(rd, test_metadata_only_file_unpadded);
    tcase_add_test(rd, test_open_missing_file);
    suite_add_tcase(s, rd);
    TCase *g = tt_tcase("gpt2");
    tcase_set_timeout(g, 60);
    tcase_add_test(g, test_gpt_round_trip_f32_tied);
    tcase_add_test(g, test_gpt_round_trip_f32_untied);
    tcase_add_test(g, test_gpt_round_trip_q8_0);
    tcase_add_test(g, test_gpt_round_trip_q4_0);
    tcase_add_test(g, test_gpt_export_refusals);
    tcase_add_test(g, test_gpt_import_refusals);
    suite_add_tcase(s, g);
    TCase *tk = tt_tcase("tokenizer");
    tcase_set_timeout(tk, 60);
    tcase_add_test(tk, test_tokenizer_char_round_trip);
    tcase_add_test(tk, test_tokenizer_gpt2_as_llama_reads_it);
    tcase_add_test(tk, test_tokenizer_other_model_refused);
    suite_add_tcase(s, tk);
    TCase *ab = tt_tcase_aborts("aborts_gguf");
    tcase_add_test_raise_signal(ab, test_aborts_gguf_key_twice, SIGABRT);
    tcase_add_test_raise_signal(ab, test_aborts_gguf_quant_row, SIGABRT);
    tcase_add_test_raise_signal(ab, test_aborts_gguf_alignment, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
