// safetensors files (the Hugging Face format): a u64 little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then the tensors' bytes.
// Strict reader (every field checked before any tensor is made) and atomic writer.
//
//     tt_safetensors f;
//     if (tt_safetensors_open(&f, "model.safetensors") != TT_OK) {
//         fprintf(stderr, "%s\n", tt_last_error());
//         ...
//     }
//     for (int i = 0; i < f.n; i++)                       // names, dtypes, shapes, in data order
//         printf("%s %s ndim=%d\n", f.tensors[i].name, tt_st_dtype_name(f.tensors[i].dtype),
//                f.tensors[i].ndim);
//     tt_tensor *wte;
//     if (tt_safetensors_get(&f, "wte.weight", &wte) != TT_OK) ...;  // F16/BF16 come as f32
//     tt_safetensors_close(&f);
//
//     // One call each way for a parameter list (names as in PyTorch's state_dict):
//     const char *meta[] = {"format", "pt", NULL};
//     tt_safetensors_save("out.safetensors", &params, meta, TT_ST_F32);
//     tt_safetensors_load_params("out.safetensors", &params, true);
#ifndef TT_SAFETENSORS_H
#define TT_SAFETENSORS_H

#include "../nn/module.h"

#ifdef __cplusplus
extern "C" {
#endif

// The stored dtypes this library reads and writes (the format's names: "F32", "BF16", ...).
typedef enum tt_st_dtype {
    TT_ST_F32,   // loads as TT_F32
    TT_ST_F64,   // loads as TT_F64
    TT_ST_F16,   // IEEE half; loads as TT_F32 (exact)
    TT_ST_BF16,  // bfloat16; loads as TT_F32 (exact)
    TT_ST_I32,   // loads as TT_I32
    TT_ST_I64,   // loads as TT_I64
    TT_ST_BOOL,  // one byte, 0 or 1; loads as TT_BOOL
    TT_ST_DTYPE_COUNT
} tt_st_dtype;

const char *tt_st_dtype_name(tt_st_dtype d);  // "F32", "F64", "F16", "BF16", "I32", "I64", "BOOL"
size_t tt_st_dtype_size(tt_st_dtype d);       // bytes per element
tt_dtype tt_st_dtype_loaded(tt_st_dtype d);   // the tt_dtype a stored tensor loads as

// The largest header accepted, as the reference implementation (100 MB).
#define TT_ST_MAX_HEADER 100000000u

typedef struct tt_st_info {
    char *name;                   // owned
    tt_st_dtype dtype;
    int ndim;                     // 0 .. TT_MAX_DIMS
    int64_t shape[TT_MAX_DIMS];
    uint64_t begin, end;          // byte range in the data buffer (data_offsets)
} tt_st_info;

typedef struct tt_safetensors {
    int n;                 // tensors, sorted by data offset
    tt_st_info *tensors;
    int nmeta;             // "__metadata__" entries, in header order
    char **meta_keys, **meta_values;
    unsigned char *data;   // the data buffer (owned; the whole of it is read at open)
    size_t data_size;
    char *path;            // for messages (owned)
    int *by_name;          // indices of tensors sorted by name (for lookups)
} tt_safetensors;

// Reads path and validates the whole file: header length (<= TT_ST_MAX_HEADER and inside the
// file), UTF-8 JSON with unique keys, every tensor's dtype, shape (<= TT_MAX_DIMS dims,
// non-negative, no overflow) and data_offsets (end - begin == numel * dtype size), the offsets
// tiling the data buffer exactly in order with no gap, overlap or trailing byte, and metadata
// values that are strings. TT_ERR_IO when the file cannot be read, TT_ERR_FORMAT with a
// one-line message naming the problem and the tensor otherwise; f is then empty (closing it is
// still fine).
tt_status tt_safetensors_open(tt_safetensors *f, const char *path);
// The same over bytes in memory (copied); name stands for the path in messages.
tt_status tt_safetensors_open_mem(tt_safetensors *f, const void *bytes, size_t size,
                                  const char *name);
void tt_safetensors_close(tt_safetensors *f);  // safe on a zeroed or failed-open struct

// The tensor called name, or NULL.
const tt_st_info *tt_safetensors_find(const tt_safetensors *f, const char *name);
// A new tensor (unscoped, contiguous, no grad) holding the stored tensor name, in the dtype of
// tt_st_dtype_loaded: F16 and BF16 are widened to f32 exactly. TT_ERR_MISMATCH when there is
// no such tensor, TT_ERR_FORMAT for a BOOL byte other than 0 or 1; *out is NULL then.
tt_status tt_safetensors_get(const tt_safetensors *f, const char *name, tt_tensor **out);
// The metadata value of key (borrowed), or NULL.
const char *tt_safetensors_meta(const tt_safetensors *f, const char *key);

// Writes every tensor of p under its name, the float ones (f32, f64) as dtype (TT_ST_F32,
// TT_ST_F64, TT_ST_F16 or TT_ST_BF16: rounded to nearest even, bit for bit as PyTorch's .half()
// and .bfloat16() on CPU, NaNs included; f64 goes through f32 as there), i32/i64/bool as
// themselves. metadata is NULL or
// {key, value, key, value, ..., NULL}. The layout is the reference writer's: tensors ordered
// by dtype (widest first) then by name, "__metadata__" first with its keys sorted, compact
// JSON padded with spaces to a multiple of 8 bytes. The file is written to a temp file in the
// same directory, fsynced and renamed over path: a failure leaves any previous file intact
// (TT_ERR_IO naming the step). Aborts on an unsupported dtype argument or duplicate keys.
tt_status tt_safetensors_save(const char *path, const tt_params *p, const char *const *metadata,
                              tt_st_dtype dtype);

// A module's state (tt_module_state: parameters and buffers, PyTorch's state_dict names)
// saved as tt_safetensors_save does (f64 when its first tensor is f64, else f32) and loaded
// back strictly: torch.save(m.state_dict(), path) and m.load_state_dict(torch.load(path)).
tt_status tt_safetensors_save_module(const char *path, tt_module m);
tt_status tt_safetensors_load_module(const char *path, tt_module m);

// Copies the tensors of path into p by name (as PyTorch's load_state_dict): the stored
// tensor is converted to the parameter's dtype (float to float, integer to integer). Every
// tensor of p whose name is in the file must have the same shape; with strict, p and the file
// must also hold the same names. Otherwise TT_ERR_MISMATCH listing the missing keys, the
// unexpected keys and the size mismatches (as PyTorch), and nothing is copied.
tt_status tt_safetensors_load_params(const char *path, const tt_params *p, bool strict);
// The same from an open file.
tt_status tt_safetensors_copy_params(const tt_safetensors *f, const tt_params *p, bool strict);

#ifdef __cplusplus
}
#endif

#endif  // TT_SAFETENSORS_H
