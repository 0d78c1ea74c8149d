// Internals shared by the files of io/ (and the fuzz targets).
#ifndef TT_IO_INTERNAL_H
#define TT_IO_INTERNAL_H

#include "checkpoint.h"
#include "safetensors.h"
#include "../tensor/tensor_internal.h"

// Loads a checkpoint from memory (name stands for the path in messages); verify = false skips
// the checksums (the fuzz target parses each input both ways). io/checkpoint.c.
tt_status tt__ckpt_load_mem(tt_checkpoint *c, const void *data, size_t size, const char *name,
                            bool verify);

// The reference writer's order of a dtype (wider first when saving). io/safetensors.c.
int tt__st_dtype_rank(tt_st_dtype d);

// f32 <-> IEEE half and bfloat16, round to nearest even (safetensors_write.c, safetensors.c;
// the GGUF reader and writer share them).
uint16_t tt__f32_to_f16(float f);
uint16_t tt__f32_to_bf16(float f);
float tt__f16_to_f32(uint16_t h);  // exact

#endif  // TT_IO_INTERNAL_H
