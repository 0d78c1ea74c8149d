// tinytorch.c datasets and the data loader, after torch.utils.data: a dataset is a length and
// a get-item callback (an item is a tuple of up to TT_DATASET_MAX_FIELDS arrays, e.g. image and
// label), tt_tensor_dataset is PyTorch's TensorDataset, and tt_dataloader batches items
// (shuffle from the explicit rng, drop_last, a per-item transform, stacking collation) with an
// optional background thread that prepares the next batch while the caller trains. The image
// transforms (torchvision's RandomCrop, RandomHorizontalFlip, Normalize, Compose) are below.
//
//     tt_dataset *ds = tt_tensor_dataset(2, (tt_tensor *[]){images, labels});  // (N,1,8,8), (N,)
//     tt_dataloader *dl = tt_dataloader_new(ds, &(tt_dataloader_opts){.batch_size = 64,
//                                           .shuffle = true, .prefetch = true}, &rng);
//     for (int epoch = 0; epoch < 10; epoch++) {
//         tt_dataloader_begin_epoch(dl);           // a new permutation drawn from rng
//         tt_tensor *x, *y;                        // (B, 1, 8, 8) f32 and (B,) i64
//         while (tt_dataloader_next(dl, &x, &y)) {  // new tensors (ownership rule of tensor.h)
//             tt_scope_begin(); ... tt_scope_end();
//             tt_release(x); tt_release(y);
//         }
//     }
//     tt_dataloader_free(dl);
//     tt_dataset_destroy(ds);
//
// Threads: tensor creation is not thread-safe (the buffer cache is process-wide and has no
// lock; scopes and tt_last_error are per thread). So the prefetch thread never creates,
// retains or releases a tensor: the calling thread creates each batch's tensors (two batches
// ahead) and hands them out; the prefetch thread only writes their data, through a dataset's
// get (or gather) and a transform's apply, which take plain memory. Batches, their order and every
// random draw are the same with and without prefetch: the permutation is drawn when the epoch
// begins, and item p of an epoch transforms with its own rng seeded from (an epoch seed drawn
// from rng, p).
#ifndef TT_LOADER_H
#define TT_LOADER_H

#include <stdbool.h>

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- datasets ----

#define TT_DATASET_MAX_FIELDS 4

typedef struct tt_dataset tt_dataset;
struct tt_dataset {
    // The number of items.
    int64_t (*len)(const tt_dataset *self);
    // Writes item index (0 <= index < len) into out[k], one contiguous array per field of
    // dtype[k] and shape[k]. It must not create or release tensors, nor use scopes: the
    // loader may call it on its prefetch thread (one call at a time).
    void (*get)(const tt_dataset *self, int64_t index, void *const *out);
    // Optional: items idx[0 .. n) at once into out[k], each field's rows stacked (B, ...);
    // the loader's fast path when there is no transform. NULL: item by item through get.
    void (*gather)(const tt_dataset *self, const int64_t *idx, int64_t n, void *const *out);
    // Frees what the dataset holds, including self (tt_dataset_destroy calls it).
    void (*destroy)(tt_dataset *self);
    int n_fields;                                  // 1 .. TT_DATASET_MAX_FIELDS
    tt_dtype dtype[TT_DATASET_MAX_FIELDS];
    int ndim[TT_DATASET_MAX_FIELDS];               // of one item's field (0: a scalar)
    int64_t shape[TT_DATASET_MAX_FIELDS][TT_MAX_DIMS];
    void *ctx;                                     // the implementation's state
};

// PyTorch's TensorDataset: item i is (tensors[0][i], ..., tensors[n-1][i]). 1 <= n <=
// TT_DATASET_MAX_FIELDS tensors of >= 1 dims whose first dims agree (aborts otherwise, naming
// the shapes). Holds a reference to each tensor (a contiguous copy of a strided one); the
// tensors' later in-place writes show through. Free with tt_dataset_destroy.
tt_dataset *tt_tensor_dataset(int n, tt_tensor *const *tensors);

int64_t tt_dataset_len(const tt_dataset *ds);
// Item index as new tensors out[0 .. n_fields) of each field's dtype and shape (ownership rule
// of tensor.h); aborts when index is out of range.
void tt_dataset_get(const tt_dataset *ds, int64_t index, tt_tensor **out);
void tt_dataset_destroy(tt_dataset *ds);  // NULL is a no-op

// ---- transforms on f32 images: (C, H, W) or (H, W) (one channel) ----

typedef struct tt_transform tt_transform;
struct tt_transform {
    const char *name;  // "RandomCrop", ... (messages)
    // The output shape for an input shape of ndim 2 or 3 (same ndim); aborts, naming the
    // transform, when the input does not fit (a crop larger than the padded image).
    void (*out_shape)(const tt_transform *self, int ndim, const int64_t *in, int64_t *out);
    // y = transform(x): x contiguous of shape in, y of out_shape(in), not overlapping x;
    // random draws from rng only. Plain memory only (it may run on the prefetch thread).
    void (*apply)(const tt_transform *self, tt_rng *rng, int ndim, const int64_t *in,
                  const float *x, float *y);
    void (*destroy)(tt_transform *self);
    void *ctx;
};

// torchvision's RandomCrop(size=(h, w), padding, fill): pads every side by padding (>= 0)
// with the constant fill, then takes the h x w window at top i = below(H + 2 padding - h + 1),
// then left j = below(W + 2 padding - w + 1) (tt_rng_below; no draw for a window that fits
// only one way, as torchvision).
tt_transform *tt_random_crop(int64_t h, int64_t w, int64_t padding, double fill);
// torchvision's RandomHorizontalFlip(p): reverses the W axis when tt_rng_uniform(rng) < p
// (one draw per image); 0 <= p <= 1.
tt_transform *tt_random_horizontal_flip(double p);
// torchvision's Normalize(mean, std): y[c] = (x[c] - mean[c]) / std[c]; n is the channel
// count C (or 1: the same for every channel); every std non-zero (aborts otherwise).
tt_transform *tt_normalize(int n, const double *mean, const double *std);
// torchvision's Compose: ts[0], then ts[1], ... (takes ownership of the n >= 1 transforms).
tt_transform *tt_compose(int n, tt_transform *const *ts);
void tt_transform_destroy(tt_transform *t);  // NULL is a no-op

// t(x) as a new f32 tensor (x any float tensor of 2 or 3 dims, converted to f32).
tt_tensor *tt_transform_apply(const tt_transform *t, tt_rng *rng, const tt_tensor *x);

// ---- the data loader ----

typedef struct tt_dataloader_opts {
    int64_t batch_size;            // >= 1
    bool shuffle;                  // a new permutation from rng every epoch (needs rng)
    bool drop_last;                // drop a last batch smaller than batch_size
    const tt_transform *transform; // applied to field 0 of each item (f32); NULL: none
    bool prefetch;                 // prepare the next batch on a background thread
    bool own_dataset;              // tt_dataloader_free also destroys the dataset
} tt_dataloader_opts;

typedef struct tt_dataloader tt_dataloader;

// Borrows ds (owns it with opts->own_dataset), the transform and rng (they must outlive the
// loader). rng may be NULL only
// without shuffle and transform. Aborts on bad options, naming them.
tt_dataloader *tt_dataloader_new(tt_dataset *ds, const tt_dataloader_opts *opts, tt_rng *rng);
// Stops the prefetch thread, and destroys the dataset when it owns it; NULL is a no-op.
void tt_dataloader_free(tt_dataloader *dl);
// Batches per epoch: ceil(len / batch_size), or floor with drop_last.
int64_t tt_dataloader_len(const tt_dataloader *dl);
// Starts an epoch (ending one in progress): with shuffle the order is tt_randperm(rng, len),
// with a transform one u64 is drawn from rng for the items' streams (in that order).
void tt_dataloader_begin_epoch(tt_dataloader *dl);
// The next batch as new tensors: field k stacked to (B, item shape...) of the field's dtype
// (integer labels stay integer), field 0 with the transform's output shape; B = batch_size
// except for a smaller last batch. Returns false (outputs NULL) at the end of the epoch.
// tt_dataloader_next fills x with field 0 and y with field 1 (y NULL for a 1-field dataset,
// aborts for more than 2 fields: use tt_dataloader_next_fields, out[n_fields]).
bool tt_dataloader_next(tt_dataloader *dl, tt_tensor **x, tt_tensor **y);
bool tt_dataloader_next_fields(tt_dataloader *dl, tt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif  // TT_LOADER_H
