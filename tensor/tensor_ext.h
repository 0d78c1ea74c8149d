// The tensor layer's interface for library code of the layers built on it (optim/, data/,
// dist/, nn/, ...) beyond the public API: tensors made outside the scope rules, liveness
// checks and shape strings for messages, the thread pool's loops, the multi-ISA clone
// attribute, crash-safe files. Not installed, not part of the public API; tensor/'s own
// internals stay in tensor_internal.h.
#ifndef TT_TENSOR_EXT_H
#define TT_TENSOR_EXT_H

#include <stdio.h>

#include "tensor.h"

// ---- creation without a scope ----
// tt__new returns a reference owned by the caller even inside a scope; public functions hand
// their result to tt__autorelease(), which gives it to the innermost scope if there is one.
// Aborts, naming func, unless (dtype, ndim, shape) can make a tensor (public creators check
// first so that a bad shape names them).
void tt__check_shape(const char *func, tt_dtype dtype, int ndim, const int64_t *shape);
// Each records the calling function's name as the tensor's origin (an op's tt__record
// replaces it with the op's name): the _at forms take it explicitly.
#define tt__new(...) tt__new_at(__func__, __VA_ARGS__)  // contiguous, uninitialized
#define tt__new_zeros(...) tt__new_zeros_at(__func__, __VA_ARGS__)
#define tt__new_view(...) tt__new_view_at(__func__, __VA_ARGS__)  // shares t's storage
tt_tensor *tt__new_at(const char *origin, tt_dtype dtype, int ndim, const int64_t *shape);
tt_tensor *tt__new_zeros_at(const char *origin, tt_dtype dtype, int ndim, const int64_t *shape);
// (t, ndim, shape, stride, offset)
tt_tensor *tt__new_view_at(const char *origin, const tt_tensor *t, int ndim,
                           const int64_t *shape, const int64_t *stride, int64_t offset);
tt_tensor *tt__autorelease(tt_tensor *t);
tt_tensor *tt__contiguous_copy(const tt_tensor *t);  // always copies; unscoped
// t itself (retained) when contiguous, else a contiguous copy; unscoped: release it.
tt_tensor *tt__contiguous_ref(tt_tensor *t);

// "(2, 3)" in one of 8 rotating thread-local buffers, for error messages.
const char *tt__shape(const tt_tensor *t);
const char *tt__shape_of(int ndim, const int64_t *shape);

// ---- liveness ----
// Aborts with the use-after-release message (tensor.h) naming func: t was freed.
#if defined(__GNUC__)
__attribute__((noreturn, cold))
#endif
void tt__freed(const tt_tensor *t, const char *func);
// The refcount of a freed tensor struct (tensor.c's quarantine).
#define TT__FREED ((int64_t)-0x5eadbeef)
// The same check for functions that read only metadata (shape, dtype, flags): aborts when t
// was freed. A struct that never was a tensor (a shape on the stack) passes.
static inline void tt__check_live(const tt_tensor *t, const char *func) {
    if (__atomic_load_n(&t->refcount, __ATOMIC_RELAXED) == TT__FREED) tt__freed(t, func);
}

// ---- the thread pool: tt__parallel_for (parallel.h) ----
#include "parallel.h"

// ---- hot loops compiled for several ISAs: TT_CLONES (kernels/cpu.h) ----
#include "kernels/cpu.h"

// ---- crash-safe file writing (file.c) ----
// write(2) until all n bytes are written (EINTR retried); false with errno set otherwise.
bool tt__write_all(int fd, const void *data, size_t n);
// Writes path through a temp file "<path>.tmp.<pid>.<suffix>" created exclusively (a planted
// file or symlink is never followed): fill(fd, ctx) writes the bytes (returning false with
// errno set on failure), then fsync, rename over path, fsync of the directory, and removal of
// temp files that dead savers left next to path. A symlinked path updates the link's target
// (the link stays); the replaced file's mode is kept (a new file gets 0644 less the umask).
// TT_OK, or TT_ERR_IO with one line naming what ("checkpoint", "safetensors", ...), the step
// that failed and why; the old file is unchanged.
tt_status tt__write_atomic(const char *path, const char *what, bool (*fill)(int fd, void *ctx),
                           void *ctx);
// Creates "<path>.tmp.<pid>.<suffix>" with O_CREAT | O_EXCL | O_NOFOLLOW (a new suffix on each
// EEXIST): the fd, with *tmp its name (tt_free it), or -1 with errno set.
int tt__create_temp(const char *path, char **tmp);
// tt_file_open_read as a FILE (mode "rb"); NULL with the error set, ending in " (fix)" when fix
// is given and path is missing or unreadable (not when it is a FIFO, device or directory).
FILE *tt__fopen_read(const char *path, const char *what, const char *fix);

// While true on this thread, tt_uniform_ and tt_normal_ draw nothing and leave their tensor's
// values as they are: a model whose weights are about to be loaded skips its random init
// (models/gpt's loaders; 124M normal draws take seconds).
extern _Thread_local bool tt__skip_random_init;

#endif  // TT_TENSOR_EXT_H
