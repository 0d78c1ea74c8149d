// tinytorch.c checkpoints: named tensors plus typed metadata (config, vocab, step, RNG state)
// in one little-endian binary file with XXH3-64 checksums, written atomically.
// The byte layout is documented in docs/checkpoint.md.
//
//     tt_checkpoint ck;
//     tt_ckpt_init(&ck);
//     tt_ckpt_set_i64(&ck, "step", step);
//     tt_ckpt_add_params(&ck, "model.", &gpt.params);
//     if (tt_ckpt_save(&ck, "out.ckpt") != TT_OK) fprintf(stderr, "%s\n", tt_last_error());
//     tt_ckpt_free(&ck);
#ifndef TT_CHECKPOINT_H
#define TT_CHECKPOINT_H

#include "../nn/module.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tt_meta_type {
    TT_META_I64,
    TT_META_F64,
    TT_META_BYTES,
    TT_META_TYPE_COUNT
} tt_meta_type;

typedef struct tt_meta {
    char *key;  // owned
    tt_meta_type type;
    int64_t i64;
    double f64;
    unsigned char *bytes;  // owned (TT_META_BYTES)
    size_t nbytes;
} tt_meta;

typedef struct tt_checkpoint {
    tt_meta *meta;
    int nmeta, capmeta;
    tt_params tensors;  // by name; retained
} tt_checkpoint;

void tt_ckpt_init(tt_checkpoint *c);
void tt_ckpt_free(tt_checkpoint *c);  // safe on a zeroed struct

// Setting a key again replaces its value.
void tt_ckpt_set_i64(tt_checkpoint *c, const char *key, int64_t v);
void tt_ckpt_set_f64(tt_checkpoint *c, const char *key, double v);
void tt_ckpt_set_bytes(tt_checkpoint *c, const char *key, const void *data, size_t n);
// false when the key is absent or holds another type.
bool tt_ckpt_get_i64(const tt_checkpoint *c, const char *key, int64_t *out);
bool tt_ckpt_get_f64(const tt_checkpoint *c, const char *key, double *out);
bool tt_ckpt_get_bytes(const tt_checkpoint *c, const char *key, const unsigned char **data,
                       size_t *n);

// Adds a tensor (retained) under name; every tensor of a list under prefix + its name.
void tt_ckpt_add_tensor(tt_checkpoint *c, const char *name, tt_tensor *t);
void tt_ckpt_add_params(tt_checkpoint *c, const char *prefix, const tt_params *p);
tt_tensor *tt_ckpt_get_tensor(const tt_checkpoint *c, const char *name);  // borrowed or NULL
// Copies every tensor of p from prefix + its name, checking dtype and shape. TT_ERR_MISMATCH
// naming the first missing or different tensor; nothing is copied then. Only the values are
// copied: each tensor keeps its requires_grad, so a module's state list (tt_module_state:
// parameters and buffers such as BatchNorm's running stats and its 0-dim i64
// num_batches_tracked) saves with tt_ckpt_add_params and restores here, buffers untrained.
tt_status tt_ckpt_restore_params(const tt_checkpoint *c, const char *prefix, const tt_params *p);

// Writes a temp file in the same directory, fsyncs it, renames it over path and fsyncs the
// directory: the previous file stays intact if anything fails. TT_ERR_IO with the reason.
tt_status tt_ckpt_save(const tt_checkpoint *c, const char *path);
// Reads and validates the whole file before trusting any of it (magic, version, sizes, bounds,
// checksums). On error c is left empty and the message names the field.
tt_status tt_ckpt_load(tt_checkpoint *c, const char *path);

// XXH3-64 of a tensor's elements in row-major order (any layout) and dtype.
uint64_t tt_tensor_hash(const tt_tensor *t);
// XXH3-64 over the names and element hashes of a parameter list, in order.
uint64_t tt_params_fingerprint(const tt_params *p);

#ifdef __cplusplus
}
#endif

#endif  // TT_CHECKPOINT_H
