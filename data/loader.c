// Datasets (the callback struct, the tensor dataset) and the data loader: epoch permutations,
// batches gathered into plain buffers (on a prefetch thread or the caller's), stacked into
// new tensors on the caller's thread.
#include "loader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../tensor/tensor_ext.h"

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

static size_t field_bytes(const tt_dataset *ds, int k) {
    return (size_t)numel_of(ds->ndim[k], ds->shape[k]) * tt_dtype_size(ds->dtype[k]);
}

// ---- the tensor dataset ----

typedef struct tensor_ds {
    tt_tensor *t[TT_DATASET_MAX_FIELDS];  // contiguous, one reference each
    int64_t n;
} tensor_ds;

static int64_t tensor_ds_len(const tt_dataset *self) {
    return ((const tensor_ds *)self->ctx)->n;
}

static void tensor_ds_gather(const tt_dataset *self, const int64_t *idx, int64_t n,
                             void *const *out) {
    const tensor_ds *td = self->ctx;
    for (int k = 0; k < self->n_fields; k++) {
        size_t row = field_bytes(self, k);
        const char *src = tt_data(td->t[k]);
        char *dst = out[k];
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * row, src + idx[i] * row, row);
    }
}

static void tensor_ds_get(const tt_dataset *self, int64_t index, void *const *out) {
    tensor_ds_gather(self, &index, 1, out);
}

static void tensor_ds_destroy(tt_dataset *self) {
    tensor_ds *td = self->ctx;
    for (int k = 0; k < self->n_fields; k++) tt_release(td->t[k]);
    free(td);
    free(self);
}

tt_dataset *tt_tensor_dataset(int n, tt_tensor *const *tensors) {
    TT_CHECK(n >= 1 && n <= TT_DATASET_MAX_FIELDS, "n = %d tensors; pass 1 .. %d", n,
             TT_DATASET_MAX_FIELDS);
    TT_CHECK(tensors, "tensors is NULL; pass an array of %d tensors", n);
    char a[96], b[96];
    for (int k = 0; k < n; k++) {
        TT_CHECK(tensors[k], "tensors[%d] is NULL", k);
        TT_CHECK(tensors[k]->ndim >= 1, "tensors[%d] is a scalar; every tensor needs a first "
                 "dim indexing the items", k);
        TT_CHECK(tensors[k]->shape[0] == tensors[0]->shape[0], "size mismatch between "
                 "tensors: tensors[0] is %s and tensors[%d] is %s; their first dims (the item "
                 "count) must agree", tt_shape_str(tensors[0], a, sizeof a), k,
                 tt_shape_str(tensors[k], b, sizeof b));
    }
    tt_dataset *ds = calloc(1, sizeof *ds);
    tensor_ds *td = calloc(1, sizeof *td);
    TT_CHECK(ds && td, "out of memory");
    td->n = tensors[0]->shape[0];
    ds->len = tensor_ds_len;
    ds->get = tensor_ds_get;
    ds->gather = tensor_ds_gather;
    ds->destroy = tensor_ds_destroy;
    ds->n_fields = n;
    ds->ctx = td;
    for (int k = 0; k < n; k++) {
        const tt_tensor *t = tensors[k];
        ds->dtype[k] = t->dtype;
        ds->ndim[k] = t->ndim - 1;
        for (int d = 1; d < t->ndim; d++) ds->shape[k][d - 1] = t->shape[d];
        td->t[k] = tt__contiguous_ref(tensors[k]);  // our own reference
    }
    return ds;
}

int64_t tt_dataset_len(const tt_dataset *ds) {
    TT_CHECK(ds, "ds is NULL");
    return ds->len(ds);
}

void tt_dataset_get(const tt_dataset *ds, int64_t index, tt_tensor **out) {
    TT_CHECK(ds && out, "ds and out must not be NULL");
    int64_t n = ds->len(ds);
    TT_CHECK(index >= 0 && index < n, "index %lld is out of range for a dataset of %lld items",
             (long long)index, (long long)n);
    void *bufs[TT_DATASET_MAX_FIELDS];
    for (int k = 0; k < ds->n_fields; k++) {
        out[k] = tt_empty(ds->dtype[k], ds->ndim[k], ds->shape[k]);
        bufs[k] = tt_data(out[k]);
    }
    ds->get(ds, index, bufs);
}

void tt_dataset_destroy(tt_dataset *ds) {
    if (ds && ds->destroy) ds->destroy(ds);
}

// ---- the data loader ----
// Batch tensors are created (unscoped, tt__new) and released only on the caller's thread; the
// prefetch thread writes their data and nothing else. A handed-out batch goes to the caller's
// scope through tt__autorelease, as any function's result.

// One batch: its tensors, created by the caller's thread, filled by either thread.
typedef struct slot {
    tt_tensor *t[TT_DATASET_MAX_FIELDS];
    int64_t batch;  // index in the epoch; -1 when none
    bool ready;     // filled
} slot;

struct tt_dataloader {
    tt_dataset *ds;
    tt_dataloader_opts opts;
    tt_rng *rng;
    int64_t n;              // items
    int64_t nbatches;
    int64_t *order;         // the epoch's item order (n)
    uint64_t epoch_seed;    // the transform streams
    bool started;
    int64_t next_batch;     // the caller's next batch
    // field 0 after the transform
    int ndim0;
    int64_t shape0[TT_MAX_DIMS];
    size_t bytes[TT_DATASET_MAX_FIELDS];  // per item in a batch
    float *scratch;         // one item's field 0 before the transform
    slot slots[2];          // batches b and b + 1 in flight (prefetch)
    // prefetch
    pthread_t thread;
    bool running, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

// New unscoped tensors of batch b into out (caller's thread).
static void new_batch(tt_dataloader *dl, int64_t b, tt_tensor **out) {
    tt_dataset *ds = dl->ds;
    int64_t B = dl->opts.batch_size, lo = b * B;
    for (int k = 0; k < ds->n_fields; k++) {
        int64_t shape[TT_MAX_DIMS];
        int nd = k == 0 ? dl->ndim0 : ds->ndim[k];
        TT_CHECK_IN("tt_dataloader_next", nd + 1 <= TT_MAX_DIMS, "field %d has %d dims; a "
                    "batch adds one (max %d)", k, nd, TT_MAX_DIMS);
        shape[0] = lo + B < dl->n ? B : dl->n - lo;
        memcpy(shape + 1, k == 0 ? dl->shape0 : ds->shape[k], (size_t)nd * sizeof *shape);
        out[k] = tt__new(ds->dtype[k], nd + 1, shape);
    }
}

// Fills the tensors t of batch b: their data only (runs on either thread).
static void fill_batch(tt_dataloader *dl, tt_tensor *const *t, int64_t b) {
    tt_dataset *ds = dl->ds;
    int64_t B = dl->opts.batch_size, lo = b * B, count = t[0]->shape[0];
    void *buf[TT_DATASET_MAX_FIELDS];
    for (int k = 0; k < ds->n_fields; k++) buf[k] = tt_data(t[k]);
    const int64_t *idx = dl->order + lo;
    if (!dl->opts.transform && ds->gather) {
        ds->gather(ds, idx, count, buf);
        return;
    }
    const tt_transform *tf = dl->opts.transform;
    for (int64_t i = 0; i < count; i++) {
        void *out[TT_DATASET_MAX_FIELDS];
        for (int k = 0; k < ds->n_fields; k++) out[k] = (char *)buf[k] + i * dl->bytes[k];
        if (tf) out[0] = dl->scratch;
        ds->get(ds, idx[i], out);
        if (tf) {
            tt_rng r;  // item p's own stream: the same whichever thread runs it
            tt_rng_seed(&r, dl->epoch_seed ^ ((uint64_t)(lo + i) * 0x9e3779b97f4a7c15ULL));
            tf->apply(tf, &r, ds->ndim[0], ds->shape[0], dl->scratch,
                      (float *)((char *)buf[0] + i * dl->bytes[0]));
        }
    }
}

static void *prefetch_main(void *arg) {
    tt_dataloader *dl = arg;
    for (int64_t b = 0; b < dl->nbatches; b++) {
        slot *s = &dl->slots[b % 2];
        pthread_mutex_lock(&dl->mu);
        while (!dl->stop && s->batch != b) pthread_cond_wait(&dl->cv, &dl->mu);
        bool stop = dl->stop;
        pthread_mutex_unlock(&dl->mu);
        if (stop) break;
        fill_batch(dl, s->t, b);
        pthread_mutex_lock(&dl->mu);
        s->ready = true;
        pthread_cond_broadcast(&dl->cv);
        pthread_mutex_unlock(&dl->mu);
    }
    return NULL;
}

// Stops the thread and releases the batches it held.
static void stop_thread(tt_dataloader *dl) {
    if (dl->running) {
        pthread_mutex_lock(&dl->mu);
        dl->stop = true;
        pthread_cond_broadcast(&dl->cv);
        pthread_mutex_unlock(&dl->mu);
        pthread_join(dl->thread, NULL);
        dl->running = false;
        dl->stop = false;
    }
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < TT_DATASET_MAX_FIELDS; k++) {
            tt_release(dl->slots[i].t[k]);
            dl->slots[i].t[k] = NULL;
        }
        dl->slots[i].batch = -1;
        dl->slots[i].ready = false;
    }
}

tt_dataloader *tt_dataloader_new(tt_dataset *ds, const tt_dataloader_opts *opts, tt_rng *rng) {
    TT_CHECK(ds && opts, "ds and opts must not be NULL");
    TT_CHECK(ds->len && ds->get && ds->n_fields >= 1 && ds->n_fields <= TT_DATASET_MAX_FIELDS,
             "the dataset needs len and get callbacks and 1 .. %d fields (has %d)",
             TT_DATASET_MAX_FIELDS, ds->n_fields);
    TT_CHECK(opts->batch_size >= 1, "batch_size = %lld; pass >= 1", (long long)opts->batch_size);
    TT_CHECK(rng || (!opts->shuffle && !opts->transform), "rng is NULL but %s needs it; pass "
             "a seeded tt_rng", opts->shuffle ? "shuffle" : "the transform");
    const tt_transform *tf = opts->transform;
    if (tf) {
        TT_CHECK(ds->dtype[0] == TT_F32 && (ds->ndim[0] == 2 || ds->ndim[0] == 3), "the "
                 "transform %s needs field 0 to be f32 images of (C, H, W) or (H, W); it is "
                 "%s of %d dims", tf->name, tt_dtype_name(ds->dtype[0]), ds->ndim[0]);
    }
    tt_dataloader *dl = calloc(1, sizeof *dl);
    TT_CHECK(dl, "out of memory");
    dl->ds = ds;
    dl->opts = *opts;
    dl->rng = rng;
    dl->n = ds->len(ds);
    TT_CHECK(dl->n >= 0, "the dataset's len is %lld", (long long)dl->n);
    dl->nbatches = opts->drop_last ? dl->n / opts->batch_size
                                   : (dl->n + opts->batch_size - 1) / opts->batch_size;
    dl->ndim0 = ds->ndim[0];
    memcpy(dl->shape0, ds->shape[0], sizeof dl->shape0);
    if (tf) tf->out_shape(tf, ds->ndim[0], ds->shape[0], dl->shape0);  // aborts if no fit
    for (int k = 0; k < ds->n_fields; k++) dl->bytes[k] = field_bytes(ds, k);
    if (tf) {
        dl->bytes[0] = (size_t)numel_of(dl->ndim0, dl->shape0) * sizeof(float);
        dl->scratch = malloc(field_bytes(ds, 0) + 1);
        TT_CHECK(dl->scratch, "out of memory");
    }
    dl->order = malloc((size_t)(dl->n ? dl->n : 1) * sizeof *dl->order);
    TT_CHECK(dl->order, "out of memory for %lld indices", (long long)dl->n);
    dl->slots[0].batch = dl->slots[1].batch = -1;
    pthread_mutex_init(&dl->mu, NULL);
    pthread_cond_init(&dl->cv, NULL);
    return dl;
}

void tt_dataloader_free(tt_dataloader *dl) {
    if (!dl) return;
    stop_thread(dl);
    pthread_mutex_destroy(&dl->mu);
    pthread_cond_destroy(&dl->cv);
    free(dl->scratch);
    free(dl->order);
    if (dl->opts.own_dataset) tt_dataset_destroy(dl->ds);
    free(dl);
}

int64_t tt_dataloader_len(const tt_dataloader *dl) {
    TT_CHECK(dl, "dl is NULL");
    return dl->nbatches;
}

// Gives slot b % 2 the new tensors of batch b (caller's thread, under the lock).
static void assign_slot(tt_dataloader *dl, int64_t b) {
    slot *s = &dl->slots[b % 2];
    new_batch(dl, b, s->t);
    s->ready = false;
    s->batch = b;
}

void tt_dataloader_begin_epoch(tt_dataloader *dl) {
    TT_CHECK(dl, "dl is NULL");
    stop_thread(dl);
    if (dl->opts.shuffle) {
        tt_scope_begin();  // frees the permutation tensor
        memcpy(dl->order, tt_data(tt_randperm(dl->rng, dl->n)), (size_t)dl->n * sizeof *dl->order);
        tt_scope_end();
    } else {
        for (int64_t i = 0; i < dl->n; i++) dl->order[i] = i;
    }
    if (dl->opts.transform) dl->epoch_seed = tt_rng_u64(dl->rng);
    dl->next_batch = 0;
    dl->started = true;
    if (dl->opts.prefetch && dl->nbatches > 0) {
        for (int64_t b = 0; b < 2 && b < dl->nbatches; b++) assign_slot(dl, b);
        int rc = pthread_create(&dl->thread, NULL, prefetch_main, dl);
        TT_CHECK(rc == 0, "cannot start the prefetch thread (error %d); pass prefetch = false",
                 rc);
        dl->running = true;
    }
}

bool tt_dataloader_next_fields(tt_dataloader *dl, tt_tensor **out) {
    TT_CHECK(dl && out, "dl and out must not be NULL");
    TT_CHECK(dl->started, "no epoch started; call tt_dataloader_begin_epoch(dl) first");
    tt_dataset *ds = dl->ds;
    for (int k = 0; k < ds->n_fields; k++) out[k] = NULL;
    if (dl->next_batch >= dl->nbatches) return false;
    int64_t b = dl->next_batch++;
    if (!dl->opts.prefetch) {
        new_batch(dl, b, out);
        fill_batch(dl, out, b);
    } else {
        slot *s = &dl->slots[b % 2];
        pthread_mutex_lock(&dl->mu);
        while (!(s->batch == b && s->ready)) pthread_cond_wait(&dl->cv, &dl->mu);
        for (int k = 0; k < ds->n_fields; k++) {
            out[k] = s->t[k];
            s->t[k] = NULL;
        }
        if (b + 2 < dl->nbatches) assign_slot(dl, b + 2);
        else s->batch = -1;
        pthread_cond_broadcast(&dl->cv);
        pthread_mutex_unlock(&dl->mu);
    }
    for (int k = 0; k < ds->n_fields; k++) tt__autorelease(out[k]);  // the ownership rule
    return true;
}

bool tt_dataloader_next(tt_dataloader *dl, tt_tensor **x, tt_tensor **y) {
    TT_CHECK(dl && x, "dl and x must not be NULL");
    TT_CHECK(dl->ds->n_fields <= 2, "the dataset has %d fields; use "
             "tt_dataloader_next_fields(dl, out[%d])", dl->ds->n_fields, dl->ds->n_fields);
    TT_CHECK(y || dl->ds->n_fields == 1, "y is NULL but the dataset has 2 fields; pass &y");
    tt_tensor *out[TT_DATASET_MAX_FIELDS] = {0};
    bool more = tt_dataloader_next_fields(dl, out);
    *x = out[0];
    if (y) *y = out[1];
    return more;
}
