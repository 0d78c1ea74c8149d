// tinytorch.c CSV reader: numeric, comma-separated files (plain or gzip) into an f32 or f64
// tensor, strictly, and scikit-learn's 8 x 8 digits set read from its digits.csv.gz.
//
//     tt_tensor *images, *labels;
//     if (tt_digits_load(NULL, &images, &labels) != TT_OK) {
//         fprintf(stderr, "%s\n", tt_last_error());   // names the file and `make data`
//         return 1;
//     }
//     // images (1797, 1, 8, 8) f32 holding 0 .. 16; labels (1797,) i64 holding 0 .. 9
#ifndef TT_CSV_H
#define TT_CSV_H

#include <stdbool.h>

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// Reads a CSV file of numbers (gzip or plain: zlib tells them apart) into a new (rows, cols)
// tensor of dtype TT_F32 or TT_F64 (aborts on another dtype). Fields are separated by ',',
// rows by '\n' (a '\r' before it is dropped); a field is one number as strtod reads it
// ("3", "-1.5e3", "nan", "inf"), spaces and tabs around it allowed. With header true the first
// line is skipped whatever it holds. A final newline is optional.
// *out is NULL on error. Errors (never an abort; tt_last_error() is one line naming the file,
// the 1-based line and column and the fix): TT_ERR_IO (missing, a directory, unreadable),
// TT_ERR_FORMAT (an empty file or no data rows, an empty line, a row with another number of
// fields than the first, a field that is not a number, a NUL byte, a corrupt or truncated
// gzip stream), TT_ERR_NOMEM.
tt_status tt_csv_load(const char *path, tt_dtype dtype, bool header, tt_tensor **out);

// Where `make data` puts the digits (scripts/digits.sh), relative to the working directory,
// and where Debian's python3-sklearn installs it.
#define TT_DIGITS_PATH "data/digits.csv.gz"
#define TT_DIGITS_SYSTEM_PATH \
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

// scikit-learn's load_digits(): path NULL tries TT_DIGITS_PATH, then TT_DIGITS_SYSTEM_PATH.
// images (N, 1, 8, 8) TT_F32 of 0 .. 16 (the 64 columns row by row), labels (N,) TT_I64 of
// 0 .. 9 (the 65th column); N is 1,797 for the real file. Both NULL on error: TT_ERR_IO
// naming the missing file and `make data`, tt_csv_load's errors, and TT_ERR_FORMAT when a row
// has not 65 columns, a pixel is not an integer in 0 .. 16 or a label not one in 0 .. 9.
tt_status tt_digits_load(const char *path, tt_tensor **images, tt_tensor **labels);

#ifdef __cplusplus
}
#endif

#endif  // TT_CSV_H
