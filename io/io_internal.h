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

// Messages about a file (io/safetensors.c; the GGUF reader shares them). tt__one_line turns
// control bytes in s into '?' so a message stays one line; tt__printable copies s[0 .. n)
// (stopping at a NUL, at most cap - 1 bytes, control bytes as '?') into buf for a message;
// tt__file_fail sets TT_ERR_FORMAT with "<kind> '<path>': <message>" on one line.
char *tt__one_line(char *s);
const char *tt__printable(const char *s, size_t n, char *buf, size_t cap);
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
tt_status
tt__file_fail(const char *kind, const char *path, const char *fmt, ...);

#endif  // TT_IO_INTERNAL_H
