// tinytorch.c data files: where a program finds the files it needs beside its inputs (GPT-2's
// vocabulary, a default corpus) from any working directory, installed or in the source tree.
//
//     char enc[4096];
//     if (tt_data_path("gpt2/encoder.json", enc, sizeof enc) != TT_OK)
//         fprintf(stderr, "%s\n", tt_last_error());  // names every place it looked, and the fix
#ifndef TT_DATA_PATH_H
#define TT_DATA_PATH_H

#include "../tensor/tensor.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// The environment variable naming a folder of data files (it holds gpt2/encoder.json, ...).
#define TT_DATA_ENV "TINYTORCH_DATA"

// The path of the data file name (relative, e.g. "gpt2/encoder.json") into buf (size bytes):
// the first of these that holds a readable regular file of that name:
//   1. $TINYTORCH_DATA/name, when the variable is set and not empty: a choice made for this
//      run overrides the copy a program was installed with (as PATH and PYTHONPATH do);
//   2. PREFIX/share/tinytorch/name, PREFIX the folder above the running executable's (Linux's
//      /proc/self/exe): where `make install` puts gpt2/;
//   3. the source tree's data/name (where `make data` puts them), only for a program run from
//      inside the tree it was built in: an installed program with a broken install says so
//      rather than read a build folder that may change or vanish.
// TT_ERR_IO naming every place it looked (and why one was skipped) and the fix in one line
// when none does; TT_ERR_ARG for an empty or absolute name or a path longer than size.
tt_status tt_data_path(const char *name, char *buf, size_t size);

// A list of paths, each an owned string (tt_path_list_free frees them); zero it to start.
typedef struct tt_path_list {
    char **v;
    size_t n, cap;
} tt_path_list;
// Appends "a/b" (b NULL: "a"). TT_ERR_NOMEM when memory runs out.
tt_status tt_path_list_add(tt_path_list *l, const char *a, const char *b);
// Appends the regular files of directory dir as "dir/name", in name order, skipping hidden
// names (a leading '.') and those keep rejects (keep NULL: none). TT_ERR_IO naming dir when it
// cannot be read.
tt_status tt_path_list_dir(tt_path_list *l, const char *dir, bool (*keep)(const char *name));
void tt_path_list_free(tt_path_list *l);  // and zeroes it

#ifdef __cplusplus
}
#endif

#endif  // TT_DATA_PATH_H
