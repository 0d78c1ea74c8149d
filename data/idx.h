// tinytorch.c IDX reader: the u8 IDX files of MNIST and Fashion-MNIST, plain or gzip, into
// tensors, and the Fashion-MNIST loader over Debian's dataset-fashion-mnist package.
// Only type code 0x08 (unsigned byte) is read; other IDX element types return an error.
//
//     tt_tensor *images, *labels;
//     if (tt_fashion_mnist_load(NULL, true, &images, &labels) != TT_OK) {
//         fprintf(stderr, "%s\n", tt_last_error());   // names the file and the fix
//         return 1;
//     }
//     // images (60000, 28, 28) f32 holding 0 .. 255; labels (60000,) i64 holding 0 .. 9
//     tt_tensor *x = tt_mul_scalar(images, 1.0 / 255);   // torchvision's ToTensor() scale
//     tt_release(images);
//     tt_release(labels);
//
// The dtypes follow torchvision's datasets.FashionMNIST: its .targets are int64; its .data is
// uint8, which tinytorch has not, so images come as f32 holding the same integers (exact).
#ifndef TT_IDX_H
#define TT_IDX_H

#include <stdbool.h>

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// Where Debian's dataset-fashion-mnist package puts the four .gz files.
#define TT_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

// Reads an IDX file (gzip or plain: zlib tells them apart) with type code 0x08 into a new
// tensor of the file's shape (ownership rule of tensor.h): a 1-d file (labels) becomes TT_I64,
// a file of 2 or more dims (images) TT_F32, each element the byte's value 0 .. 255.
// *out is NULL on error. Errors (never an abort; tt_last_error() names the file and the fix):
// TT_ERR_IO (missing, a directory, unreadable), TT_ERR_FORMAT (bad magic, type code other than
// 0x08, 0 or more than TT_MAX_DIMS dims, data shorter or longer than the dims' product, a
// truncated or corrupt gzip stream), TT_ERR_NOMEM.
tt_status tt_idx_load(const char *path, tt_tensor **out);

// Loads the train (60,000) or test (10,000) split of Fashion-MNIST from dir (NULL:
// TT_FASHION_MNIST_DIR): {train,t10k}-{images-idx3,labels-idx1}-ubyte, each plain or with .gz
// (the plain name is tried first). images (N, 28, 28) TT_F32 of 0 .. 255, labels (N,) TT_I64 of
// 0 .. 9. Both NULL on error: TT_ERR_IO naming the missing file and the Debian package
// dataset-fashion-mnist, tt_idx_load's errors, and TT_ERR_FORMAT when the shapes are not
// (N, 28, 28) and (N,) or a label is out of 0 .. 9.
tt_status tt_fashion_mnist_load(const char *dir, bool train, tt_tensor **images,
                                tt_tensor **labels);

#ifdef __cplusplus
}
#endif

#endif  // TT_IDX_H
