// Internals shared by the files of data/ (not installed).
#ifndef TT_DATA_INTERNAL_H
#define TT_DATA_INTERNAL_H

#include <sys/stat.h>
#include <zlib.h>

#include "../tensor/tensor.h"

// Opens path (gzip or plain) for reading through tt_file_open_read, so a FIFO, device or
// directory is refused before a byte is read: *out the zlib handle, *st the file's stat.
// TT_OK, or TT_ERR_IO with one line that starts with fn (the public function) and names what
// ("IDX file", "CSV file") and path.
tt_status tt__gz_open_read(const char *path, const char *what, const char *fn, gzFile *out,
                           struct stat *st);

// The char (kind TT_TOKENIZER_CHAR) or trained-vocab (TT_TOKENIZER_FILE) tokenizer of metadata
// value hex (two lowercase hex digits a byte): TT_ERR_FORMAT "<where>: its metadata <key> ..."
// when it is missing, not hex or not a valid vocab. tokenizer.c (safetensors and GGUF
// metadata share it).
typedef struct tt_tokenizer tt_tokenizer;
tt_status tt__tokenizer_from_hex(tt_tokenizer *t, const char *hex, int kind, const char *where,
                                 const char *key);

#endif
