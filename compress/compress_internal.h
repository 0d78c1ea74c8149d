// Internals shared by the files of compress/.
#ifndef TT_COMPRESS_INTERNAL_H
#define TT_COMPRESS_INTERNAL_H

#include "compress.h"
#include "../tensor/tensor_internal.h"

#endif  // TT_COMPRESS_INTERNAL_H
