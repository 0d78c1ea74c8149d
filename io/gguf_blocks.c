// GGUF tensor types (io/gguf.h): the type tables and the Q8_0 / Q4_0 blocks, quantized and
// dequantized exactly as ggml's reference functions (quantize_row_q8_0_ref, _q4_0_ref, as the
// format's description gives them). The reader is gguf.c, the writer gguf_write.c.
#include "gguf.h"
#include "io_internal.h"

#include <math.h>
#include <string.h>

// ---- types ----

// ggml's type names by number (the ones this library does not read are named in messages).
static const char *const ggml_names[] = {
    [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [6] = "Q5_0", [7] = "Q5_1",
    [8] = "Q8_0", [9] = "Q8_1", [10] = "Q2_K", [11] = "Q3_K", [12] = "Q4_K", [13] = "Q5_K",
    [14] = "Q6_K", [15] = "Q8_K", [16] = "IQ2_XXS", [17] = "IQ2_XS", [18] = "IQ3_XXS",
    [19] = "IQ1_S", [20] = "IQ4_NL", [21] = "IQ3_S", [22] = "IQ2_S", [23] = "IQ4_XS",
    [24] = "I8", [25] = "I16", [26] = "I32", [27] = "I64", [28] = "F64", [29] = "IQ1_M",
    [30] = "BF16", [34] = "TQ1_0", [35] = "TQ2_0", [39] = "MXFP4",
};
#define N_GGML_NAMES ((int)(sizeof ggml_names / sizeof ggml_names[0]))

const char *tt_ggml_type_name(int type) {
    return type >= 0 && type < N_GGML_NAMES && ggml_names[type] ? ggml_names[type] : "?";
}

bool tt_ggml_type_supported(int type) {
    return type == TT_GGML_F32 || type == TT_GGML_F16 || type == TT_GGML_BF16 ||
           type == TT_GGML_Q8_0 || type == TT_GGML_Q4_0;
}

size_t tt_ggml_type_bytes(tt_ggml_type type, int64_t n) {
    TT_CHECK(tt_ggml_type_supported(type), "ggml type %d is not one this library writes",
             (int)type);
    TT_CHECK(n >= 0, "element count %lld is negative", (long long)n);
    switch (type) {
        case TT_GGML_F32: return (size_t)n * 4;
        case TT_GGML_F16: case TT_GGML_BF16: return (size_t)n * 2;
        default: break;
    }
    TT_CHECK(n % 32 == 0, "%lld elements of %s: a quantized type needs a multiple of 32",
             (long long)n, tt_ggml_type_name(type));
    return (size_t)(n / 32) * (type == TT_GGML_Q8_0 ? 34 : 18);
}

static const char *const gguf_names[TT_GGUF_TYPE_COUNT] = {
    "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING",
    "ARRAY", "UINT64", "INT64", "FLOAT64",
};

const char *tt_gguf_type_name(int type) {
    return type >= 0 && type < TT_GGUF_TYPE_COUNT ? gguf_names[type] : "?";
}

// ---- blocks ----

static void put_u16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static uint16_t get_u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

// x (32) -> one Q8_0 block (34 bytes): ggml's quantize_row_q8_0_ref.
static void q8_0_block(unsigned char *b, const float *x) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));  // NaN ignored
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put_u16(b, tt__f32_to_f16(d));
    for (int j = 0; j < 32; j++) {
        float v = roundf(x[j] * id);
        b[2 + j] = (unsigned char)(int8_t)(v == v ? v : 0.0f);
    }
}

// x (32) -> one Q4_0 block (18 bytes): ggml's quantize_row_q4_0_ref (element j in the low
// nibble of byte j, element j + 16 in its high nibble).
static void q4_0_block(unsigned char *b, const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put_u16(b, tt__f32_to_f16(d));
    for (int j = 0; j < 16; j++) {
        float x0 = x[j] * id + 8.5f, x1 = x[16 + j] * id + 8.5f;
        int q0 = x0 >= 0.0f ? (int)x0 : 0, q1 = x1 >= 0.0f ? (int)x1 : 0;  // NaN as 0
        q0 = q0 < 15 ? q0 : 15;
        q1 = q1 < 15 ? q1 : 15;
        b[2 + j] = (unsigned char)(q0 | q1 << 4);
    }
}

void tt_gguf_quantize_q8_0(void *dst, const float *x, int64_t n) {
    TT_CHECK(dst && x && n >= 0 && n % 32 == 0, "Q8_0 takes a multiple of 32 floats, got %lld",
             (long long)n);
    for (int64_t i = 0; i < n / 32; i++) q8_0_block((unsigned char *)dst + 34 * i, x + 32 * i);
}

void tt_gguf_quantize_q4_0(void *dst, const float *x, int64_t n) {
    TT_CHECK(dst && x && n >= 0 && n % 32 == 0, "Q4_0 takes a multiple of 32 floats, got %lld",
             (long long)n);
    for (int64_t i = 0; i < n / 32; i++) q4_0_block((unsigned char *)dst + 18 * i, x + 32 * i);
}

void tt_gguf_dequantize(float *dst, const void *src, tt_ggml_type type, int64_t n) {
    const unsigned char *s = src;
    (void)tt_ggml_type_bytes(type, n);  // checks the type and n
    for (int64_t i = 0; i < n; i++) {
        switch (type) {
            case TT_GGML_F32: {
                uint32_t u = (uint32_t)s[4 * i] | (uint32_t)s[4 * i + 1] << 8 |
                             (uint32_t)s[4 * i + 2] << 16 | (uint32_t)s[4 * i + 3] << 24;
                memcpy(&dst[i], &u, 4);
                break;
            }
            case TT_GGML_F16: dst[i] = tt__f16_to_f32(get_u16(s + 2 * i)); break;
            case TT_GGML_BF16: {
                uint32_t u = (uint32_t)get_u16(s + 2 * i) << 16;
                memcpy(&dst[i], &u, 4);
                break;
            }
            case TT_GGML_Q8_0: {
                const unsigned char *b = s + 34 * (i / 32);
                dst[i] = (float)(int8_t)b[2 + i % 32] * tt__f16_to_f32(get_u16(b));
                break;
            }
            default: {  // Q4_0
                const unsigned char *b = s + 18 * (i / 32);
                int j = (int)(i % 32);
                int q = j < 16 ? b[2 + j] & 0xf : b[2 + j - 16] >> 4;
                dst[i] = (float)(q - 8) * tt__f16_to_f32(get_u16(b));
                break;
            }
        }
    }
}
