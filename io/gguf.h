// GGUF files (ggml's format, version 3, little-endian): a header of typed key-value metadata
// and tensor descriptions, then the tensors' bytes, each at a multiple of general.alignment
// (32 by default). A strict reader (every count, length and offset checked before use) and an
// atomic writer. Tensor types F32, F16, BF16, Q8_0 and Q4_0; the quantized ones load as f32.
//
//     tt_gguf f;
//     if (tt_gguf_open(&f, "model.gguf") != TT_OK) fprintf(stderr, "%s\n", tt_last_error());
//     const char *arch = tt_gguf_get_str(&f, "general.architecture");   // NULL when absent
//     tt_tensor *w;
//     tt_gguf_get(&f, "token_embd.weight", &w);    // (V, C): ggml's ne = {C, V} reversed
//     tt_gguf_close(&f);
//
//     tt_gguf_writer g;
//     tt_gguf_writer_init(&g);
//     tt_gguf_writer_set_str(&g, "general.architecture", "gpt2");
//     tt_gguf_writer_add(&g, "token_embd.weight", w, TT_GGML_Q8_0);  // quantized on save
//     tt_gguf_writer_save(&g, "out.gguf");
//     tt_gguf_writer_free(&g);
#ifndef TT_GGUF_H
#define TT_GGUF_H

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// Metadata value types (the format's numbering).
typedef enum tt_gguf_type {
    TT_GGUF_UINT8 = 0, TT_GGUF_INT8 = 1, TT_GGUF_UINT16 = 2, TT_GGUF_INT16 = 3,
    TT_GGUF_UINT32 = 4, TT_GGUF_INT32 = 5, TT_GGUF_FLOAT32 = 6, TT_GGUF_BOOL = 7,
    TT_GGUF_STRING = 8, TT_GGUF_ARRAY = 9, TT_GGUF_UINT64 = 10, TT_GGUF_INT64 = 11,
    TT_GGUF_FLOAT64 = 12,
    TT_GGUF_TYPE_COUNT
} tt_gguf_type;

// The tensor types this library reads and writes (ggml's numbering).
typedef enum tt_ggml_type {
    TT_GGML_F32 = 0,
    TT_GGML_F16 = 1,
    TT_GGML_Q4_0 = 2,   // blocks of 32: f16 d, 16 bytes; x[j] = (lo nibble of qs[j] - 8) * d,
                        // x[j + 16] = (hi nibble of qs[j] - 8) * d
    TT_GGML_Q8_0 = 8,   // blocks of 32: f16 d, 32 int8 q; x[j] = q[j] * d
    TT_GGML_BF16 = 30,
} tt_ggml_type;

#define TT_GGUF_VERSION 3
#define TT_GGUF_ALIGNMENT 32     // general.alignment's default
#define TT_GGUF_MAX_DIMS 4       // ggml's
#define TT_GGUF_MAX_NAME 64      // bytes of a tensor name, as the format says
#define TT_GGUF_MAX_DEPTH 8      // arrays nested deeper are refused

const char *tt_ggml_type_name(int type);   // "F32", "Q4_0", ... ("?" for an unknown number)
bool tt_ggml_type_supported(int type);     // one of tt_ggml_type
// Bytes of n elements of type (n a multiple of 32 for Q8_0, Q4_0; aborts otherwise).
size_t tt_ggml_type_bytes(tt_ggml_type type, int64_t n);
const char *tt_gguf_type_name(int type);   // "UINT8", ..., "FLOAT64" ("?" for others)

// ---- blocks (the reference quantizers, bit for bit) ----
// n floats (a multiple of 32) into n / 32 blocks: Q8_0 d = max|x| / 127, q = round(x / d);
// Q4_0 d = (the x of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)). d is stored as
// f16, the quants use the f32 d (as ggml). NaN quantizes as 0.
void tt_gguf_quantize_q8_0(void *dst, const float *x, int64_t n);
void tt_gguf_quantize_q4_0(void *dst, const float *x, int64_t n);
// n elements of src of type into dst (f32).
void tt_gguf_dequantize(float *dst, const void *src, tt_ggml_type type, int64_t n);

// ---- reading ----

typedef struct tt_gguf_value {
    tt_gguf_type type;
    tt_gguf_type elem;             // ARRAY: its elements' type
    uint64_t n;                    // STRING: its bytes; ARRAY: its elements
    union {
        uint64_t u;                // UINT8 .. UINT64, BOOL (0 or 1)
        int64_t i;                 // INT8 .. INT64
        double f;                  // FLOAT32, FLOAT64
    } num;
    char *str;                     // STRING: n bytes and a NUL (may hold NULs; owned)
    unsigned char *raw;            // ARRAY of numbers or BOOL: the n elements' bytes (owned)
    struct tt_gguf_value *items;   // ARRAY of STRING or ARRAY: n values (owned)
} tt_gguf_value;

typedef struct tt_gguf_kv {
    char *key;  // owned
    tt_gguf_value value;
} tt_gguf_kv;

typedef struct tt_gguf_tensor {
    char *name;                    // owned; control bytes read as '?' (names go in messages)
    int ndim;                      // 0 .. TT_GGUF_MAX_DIMS
    int64_t ne[TT_GGUF_MAX_DIMS];  // ne[0] the fastest dim; 1 past ndim
    tt_ggml_type type;
    uint64_t offset, nbytes;       // in the data section
} tt_gguf_tensor;

typedef struct tt_gguf {
    uint32_t version;
    int64_t n_kv, n_tensors;
    tt_gguf_kv *kv;                // in file order
    tt_gguf_tensor *tensors;       // in file order
    uint64_t alignment;
    unsigned char *bytes;          // the whole file (owned)
    size_t size;
    uint64_t data_offset;          // where the data section starts
    char *path;                    // for messages (owned)
    int64_t *by_name;              // tensor indices sorted by name
} tt_gguf;

// Reads path and validates it: magic "GGUF", version 2 or 3, counts bounded by the file size,
// strings and arrays inside the file, value types known, arrays nested at most
// TT_GGUF_MAX_DEPTH, keys and tensor names unique, names 1 .. 64 bytes, general.alignment a
// UINT32 power of two, every tensor's dims (<= 4, no overflow, quantized rows a multiple of
// 32), type (an unsupported or unknown one named, with the supported ones), offset (aligned)
// and bytes inside the data section without overlapping another. TT_ERR_IO when the file
// cannot be read, TT_ERR_FORMAT with one line "gguf '<path>': ..." otherwise; f is then
// empty (closing it is still fine).
tt_status tt_gguf_open(tt_gguf *f, const char *path);
tt_status tt_gguf_open_mem(tt_gguf *f, const void *bytes, size_t size, const char *name);
void tt_gguf_close(tt_gguf *f);  // safe on a zeroed or failed-open struct

const tt_gguf_value *tt_gguf_find_kv(const tt_gguf *f, const char *key);  // or NULL
const tt_gguf_tensor *tt_gguf_find(const tt_gguf *f, const char *name);   // or NULL
// Element i of an ARRAY value: a number as a scalar value, a string or array as a borrowed
// shallow copy. Aborts when i is out of range.
tt_gguf_value tt_gguf_array_get(const tt_gguf_value *v, uint64_t i);
// Typed getters: the value of key when it has a matching type, else false / NULL. get_int
// takes any integer type (and a u64 that fits), get_float FLOAT32 or FLOAT64.
const char *tt_gguf_get_str(const tt_gguf *f, const char *key);
bool tt_gguf_get_int(const tt_gguf *f, const char *key, int64_t *out);
bool tt_gguf_get_float(const tt_gguf *f, const char *key, double *out);
// A new f32 tensor (unscoped, contiguous, no grad) of the tensor name, its shape ggml's ne
// reversed (row-major), dequantized. TT_ERR_MISMATCH when there is no such tensor.
tt_status tt_gguf_get(const tt_gguf *f, const char *name, tt_tensor **out);
// The stored bytes of t (borrowed; t->nbytes of them), for a caller who keeps the blocks.
const void *tt_gguf_data(const tt_gguf *f, const tt_gguf_tensor *t);

// ---- writing ----

typedef struct tt_gguf_writer {
    unsigned char *kv;      // the serialized key-value pairs
    size_t kv_len, kv_cap;
    char **keys;            // for the duplicate check (owned)
    int64_t n_kv;
    struct tt__gguf_wtensor *tensors;
    int64_t n_tensors, cap_tensors;
    uint32_t alignment;     // TT_GGUF_ALIGNMENT, or a general.alignment set
} tt_gguf_writer;

void tt_gguf_writer_init(tt_gguf_writer *w);
void tt_gguf_writer_free(tt_gguf_writer *w);  // safe on a zeroed struct
// Metadata, in the order set. Aborts on a key set twice, an empty key, or general.alignment
// other than a UINT32 power of two.
void tt_gguf_writer_set_u32(tt_gguf_writer *w, const char *key, uint32_t v);
void tt_gguf_writer_set_i32(tt_gguf_writer *w, const char *key, int32_t v);
void tt_gguf_writer_set_u64(tt_gguf_writer *w, const char *key, uint64_t v);
void tt_gguf_writer_set_f32(tt_gguf_writer *w, const char *key, float v);
void tt_gguf_writer_set_bool(tt_gguf_writer *w, const char *key, bool v);
void tt_gguf_writer_set_str(tt_gguf_writer *w, const char *key, const char *v);
// Any scalar type as the format stores it: v holds the value as int64 (integers, BOOL) and f
// as double (FLOAT32, FLOAT64); for tests and tools that write every type.
void tt_gguf_writer_set_num(tt_gguf_writer *w, const char *key, tt_gguf_type type, int64_t v,
                            double f);
// An array of n numbers of type elem (UINT8 .. FLOAT64 but STRING, ARRAY: data holds n values
// of that C type, little-endian as the machine's), or of n strings (elem STRING: data is
// const char *const *).
void tt_gguf_writer_set_array(tt_gguf_writer *w, const char *key, tt_gguf_type elem,
                              const void *data, uint64_t n);
// A tensor t (f32 or f64; retained until free) stored as type, its ne t's shape reversed.
// Aborts on a duplicate or too long name, more than 4 dims, or a quantized type whose last
// dim is not a multiple of 32.
void tt_gguf_writer_add(tt_gguf_writer *w, const char *name, tt_tensor *t, tt_ggml_type type);
// Writes the file atomically (a temp file, fsync, rename): TT_ERR_IO naming the step, the
// previous file intact.
tt_status tt_gguf_writer_save(const tt_gguf_writer *w, const char *path);

#ifdef __cplusplus
}
#endif

#endif  // TT_GGUF_H
