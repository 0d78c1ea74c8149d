// tinytorch.c tensor layer: reference-counted N-d tensors over shared 64-byte-aligned storage,
// strided views, an explicit RNG, ownership scopes, counters and the error helpers.
// No autograd here: the differentiable ops (and the view ops users call) are in autograd.h.
//
//     tt_rng rng;
//     tt_rng_seed(&rng, 1337);
//     tt_scope_begin();
//     tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(2, 3));   // owned by the scope
//     tt_print(x);                  // tensor([[...]], shape=(2, 3), dtype=f32)
//     tt_tensor *keep = tt_keep(x);  // survives tt_scope_end(); now yours to release
//     tt_scope_end();
//     tt_release(keep);
//
// ---- The ownership rule ----
// Every function that returns a `tt_tensor *` returns a NEW reference; arguments are borrowed.
// - Outside any scope, you own that reference: call tt_release() once when done.
// - Inside tt_scope_begin() ... tt_scope_end(), the innermost scope owns it and releases it at
//   tt_scope_end(). Do not release it yourself. To take a tensor out of the scope, call
//   tt_keep(t): it then belongs to the enclosing scope, or to you if there is none.
// - tt_retain() adds a reference you own; tt_release() drops one. Releasing NULL is a no-op;
//   releasing more often than retained aborts (see "over-release" below for what is caught).
// Tensors that the library keeps for itself (gradients, saved activations, parameters
// created outside a scope) hold their own references, so scopes never free them early.
//
// ---- Threads and shared tensors (PyTorch's rules) ----
// - Reading is shared: reference counts (tensor and storage) are atomic, and the buffer
//   cache, the live counters and the tape's node numbering take any thread. Any number of
//   threads may run forwards, with or without grad, over the same weights and views of them
//   at once (an inference server). The tensors they read must stay alive meanwhile: hold a
//   reference, or keep the owner from releasing them until the threads are joined.
// - Per thread, as in PyTorch: grad mode, autocast, scopes (a scope owns what its own thread's
//   ops return), the default dtype, tt_last_error, the kernels' thread count.
// - Backward: backwards on several threads may reach the same leaf at once. Each addition into
//   a leaf's .grad (or its hooks' pending gradient) is serialized by a per-leaf lock (64
//   address-striped spin locks), so none is lost: the result is the sum of every backward's
//   gradient, in an order that varies (bitwise reproducible only where the sums are exact).
//   A leaf's hooks may see several threads' contributions together. A graph of non-leaf
//   tensors belongs to one backward: do not run backward over one graph from two threads.
// - Writes are not synchronized: an in-place op, tt_set, tt_copy_, an optimizer step or
//   tt_zero_grad on a tensor another thread is using is a data race; order them yourself
//   (join the backward threads, then step).
// - The parallel kernels share one thread pool: while one calling thread's kernel uses it,
//   another thread's kernels run on that thread alone (the cores are never oversubscribed).
#ifndef TT_TENSOR_H
#define TT_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TT_MAX_DIMS 8

// ---- dtypes ----

typedef enum tt_dtype {
    TT_F32,  // the fast path
    TT_F64,  // gradcheck and debugging: every float op works in both
    TT_I32,  // indices, masks
    TT_I64,
    TT_BOOL,  // 1 byte, 0 or 1: comparisons, masks (PyTorch's torch.bool)
    TT_DTYPE_COUNT
} tt_dtype;

size_t tt_dtype_size(tt_dtype dtype);
const char *tt_dtype_name(tt_dtype dtype);  // "f32", "f64", "i32", "i64", "bool"
bool tt_dtype_is_float(tt_dtype dtype);

// ---- tensor ----

typedef struct tt_storage {
    int64_t refcount;
    size_t nbytes;
    void *data;          // 64-byte aligned
    uint64_t version;    // bumped by every in-place write; views share it (tt_version)
    const char *writer;  // name of the last in-place op that wrote here ("fill_"), or NULL
    int ndim;            // the shape of the tensor it was made for (leak reports name it
    int64_t shape[TT_MAX_DIMS];  // when only views of it are left)
} tt_storage;

typedef struct tt_node tt_node;    // autograd tape node (autograd/)
typedef struct tt_hooks tt_hooks;  // gradient hooks of a tensor (autograd/)
typedef struct tt_tensor tt_tensor;

struct tt_tensor {
    int64_t refcount;
    tt_dtype dtype;
    int ndim;                      // 0 .. TT_MAX_DIMS; 0 is a scalar with one element
    int64_t shape[TT_MAX_DIMS];
    int64_t stride[TT_MAX_DIMS];   // in elements; 0 on broadcast (expanded) dims
    int64_t offset;                // in elements, into storage
    tt_storage *storage;
    bool requires_grad;
    tt_tensor *grad;               // accumulated gradient of a leaf (owned), or NULL
    tt_node *node;                 // the op that produced this tensor (owned), NULL for leaves
    char *name;                    // optional (owned), used in messages and checkpoints
    bool retains_grad;             // a non-leaf whose .grad backward fills (tt_retain_grad)
    tt_hooks *hooks;               // gradient hooks (owned), NULL if none (tt_register_hook)
    const char *origin;            // the op or function that made it: "matmul", "tt_zeros"
    struct tt_tensor_debug *debug;  // call sites under TT_DEBUG=origin (owned), else NULL
};

// Shape and dims literals: tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_sum(x, TT_DIMS(0, 2), false).
#define TT_SHAPE(...) \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}
#define TT_DIMS(...) (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), (const int[]){__VA_ARGS__}
#define TT_SCALAR_SHAPE 0, NULL

// ---- creation (new references; contents of tt_empty are uninitialized) ----

tt_tensor *tt_empty(tt_dtype dtype, int ndim, const int64_t *shape);
tt_tensor *tt_zeros(tt_dtype dtype, int ndim, const int64_t *shape);
tt_tensor *tt_ones(tt_dtype dtype, int ndim, const int64_t *shape);
tt_tensor *tt_full(tt_dtype dtype, int ndim, const int64_t *shape, double value);
tt_tensor *tt_scalar(tt_dtype dtype, double value);  // 0-dim
// start, start+step, ... < end (> end for a negative step); 1-D.
tt_tensor *tt_arange(tt_dtype dtype, double start, double end, double step);
// Copies numel elements of `dtype` from data (row-major).
tt_tensor *tt_from_data(tt_dtype dtype, int ndim, const int64_t *shape, const void *data);
tt_tensor *tt_empty_like(const tt_tensor *t);
tt_tensor *tt_zeros_like(const tt_tensor *t);
tt_tensor *tt_ones_like(const tt_tensor *t);
// t's dtype and shape filled with value (torch.full_like).
tt_tensor *tt_full_like(const tt_tensor *t, double value);
// (n, m) with ones on the main diagonal (torch.eye(n, m)).
tt_tensor *tt_eye(tt_dtype dtype, int64_t n, int64_t m);
// steps values from start to end inclusive, PyTorch's formula: step = (end - start) /
// (steps - 1); the first half start + i * step, the second end - (steps - 1 - i) * step
// (computed in f32 for TT_F32, else in double and truncated for integer dtypes); one step
// gives start.
tt_tensor *tt_linspace(tt_dtype dtype, double start, double end, int64_t steps);
// indices (...) of TT_I32/TT_I64 in [0, num_classes) -> TT_I64 (..., num_classes) of 0/1.
// num_classes -1: the largest index + 1 (F.one_hot's default; x must be non-empty).
tt_tensor *tt_one_hot(const tt_tensor *indices, int64_t num_classes);

// ---- randomness: only through an explicit state (xoshiro256**, one stream on every platform) ----

typedef struct tt_rng {
    uint64_t s[4];
} tt_rng;

void tt_rng_seed(tt_rng *rng, uint64_t seed);
// A state seeded with seed, by value: `tt_rng rng = tt_rng_new(1);` (torch.manual_seed(1)).
tt_rng tt_rng_new(uint64_t seed);
uint64_t tt_rng_u64(tt_rng *rng);
double tt_rng_uniform(tt_rng *rng);  // [0, 1), 53 random bits
double tt_rng_normal(tt_rng *rng);   // N(0, 1), Box-Muller
int64_t tt_rng_below(tt_rng *rng, int64_t n);  // uniform integer in [0, n), unbiased

tt_tensor *tt_rand(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape);   // U[0,1)
tt_tensor *tt_randn(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape);  // N(0,1)
// t's float dtype and shape, drawn as tt_rand / tt_randn draw (the same rng stream).
tt_tensor *tt_rand_like(const tt_tensor *t, tt_rng *rng);
tt_tensor *tt_randn_like(const tt_tensor *t, tt_rng *rng);
tt_tensor *tt_uniform(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape,
                      double lo, double hi);
tt_tensor *tt_normal(tt_rng *rng, tt_dtype dtype, int ndim, const int64_t *shape,
                     double mean, double std);
// PyTorch's samplers on the explicit rng (the streams differ from PyTorch's):
// integers uniform in [lo, hi) as TT_I64 (lo < hi);
tt_tensor *tt_randint(tt_rng *rng, int64_t lo, int64_t hi, int ndim, const int64_t *shape);
// a uniformly random permutation of 0 .. n-1 as TT_I64 (Fisher-Yates; n >= 0);
tt_tensor *tt_randperm(tt_rng *rng, int64_t n);
// 1 with probability p[i], else 0, in p's dtype and shape (p float, every p[i] in [0, 1]);
tt_tensor *tt_bernoulli(tt_rng *rng, const tt_tensor *p);
// num_samples category indices (TT_I64) per row of probs (K,) or (R, K), each drawn with
// probability probs[k] / sum(probs) (non-negative, finite weights, not all 0); without
// replacement a category is drawn at most once (num_samples <= the non-zero weights).
// Shape (num_samples,) or (R, num_samples).
tt_tensor *tt_multinomial(tt_rng *rng, const tt_tensor *probs, int64_t num_samples,
                          bool replacement);

// In-place fills (no autograd; for initialization and optimizers). Return t.
tt_tensor *tt_fill_(tt_tensor *t, double value);
tt_tensor *tt_uniform_(tt_tensor *t, tt_rng *rng, double lo, double hi);
tt_tensor *tt_normal_(tt_tensor *t, tt_rng *rng, double mean, double std);
// dst[...] = src[...] with src broadcast to dst's shape and converted to dst's dtype.
void tt_copy_(tt_tensor *dst, const tt_tensor *src);

// ---- in-place writes and the version counter (PyTorch's rule) ----
// Every in-place write through the library bumps the version of the tensor's storage (views
// share it): tt_fill_, tt_uniform_, tt_normal_, tt_copy_, tt_set, tt_set_at, the in-place
// arithmetic of autograd.h (tt_add_, tt_mul_, ...) and the optimizers' parameter updates.
// A tape node remembers the version of each tensor its backward reads; tt_backward aborts,
// naming the op and the writer, when one was modified in place after it was saved ("clone it
// before writing, or write after backward"). Writes through tt_data() or other raw pointers
// are NOT tracked: call tt_bump_version() after them if a graph may have saved the tensor.

uint64_t tt_version(const tt_tensor *t);  // PyTorch's t._version
// Records an in-place write to t's storage by `op` (a string literal, kept as a pointer).
void tt_bump_version(tt_tensor *t, const char *op);

// ---- references ----

tt_tensor *tt_retain(tt_tensor *t);  // returns t
void tt_release(tt_tensor *t);       // NULL is a no-op

// ---- over-release: what is caught ----
// A freed tensor struct is poisoned (its refcount set to a sentinel, its storage, gradient,
// node and name pointers cleared; shape, dtype and origin kept for the message) and held in a
// first-in first-out quarantine: it is reused for a new tensor only after at least 4096 more
// structs were freed on this thread. Within that window, in every build (plain, -O3, SAN=1):
// - a double release (tt_release of a tensor already freed) aborts: "tensor (4,) i64 made by
//   tt_arange was already freed";
// - releasing a tensor a scope owns and then ending the scope aborts in tt_scope_end: "a
//   tensor owned by this scope was released by hand before tt_scope_end";
// - tt_retain of a freed tensor aborts;
// - using a freed tensor (released, or made inside a scope that has ended) in an op, a view,
//   tt_print, tt_item / tt_get / tt_at / tt_data*, tt_numel / tt_size, tt_backward, an
//   optimizer step or a module forward aborts with one line: "tensor (2, 3) f32 made by
//   matmul was used after it was freed: made inside a scope that has ended? tt_keep it ...",
//   ending, under the debug switch (tt_set_debug_origin), with "(made at x.c:12 (f) < ...;
//   released at x.c:14 (f) < ...)". The check is one test in the accessors every op reads
//   through: of the storage pointer for data (tt__base, tt_data), of the refcount sentinel
//   for metadata (tt_numel, tt_same_shape, ...).
// Not caught: a stale pointer used after 4096 more tensors were freed on the freeing thread
// (its struct may belong to a new tensor by then: the use then reads that tensor, silently;
// past 16384, it waits in a pool shared by the threads), a tensor another thread frees while
// this one uses it (a race), and reads or writes of a freed tensor's fields that go around the
// functions (t->shape[0]). A freed struct is never given back to malloc, so ASan does not see
// these uses: the messages above are the check. Each thread that frees tensors holds its quarantine (up to 16384
// structs of 224 bytes, about 3.7 MiB) until it exits, then hands it to that pool; the
// live-tensor counters do not count it. Structs come from slabs of 1024 that are never
// freed (so tt_live_report can walk every live tensor): the memory is the peak of live
// tensors plus the quarantines.

// ---- ownership scopes (autorelease pools) ----

void tt_scope_begin(void);
void tt_scope_end(void);
tt_tensor *tt_keep(tt_tensor *t);  // hand t to the enclosing scope (or to the caller); returns t
int tt_scope_depth(void);

// ---- metadata ----

int64_t tt_numel(const tt_tensor *t);
int64_t tt_size(const tt_tensor *t, int dim);  // dim may be negative
bool tt_is_contiguous(const tt_tensor *t);
bool tt_same_shape(const tt_tensor *a, const tt_tensor *b);
void tt_set_name(tt_tensor *t, const char *name);
// "(2, 3)" into buf; returns buf.
char *tt_shape_str(const tt_tensor *t, char *buf, size_t n);

// ---- element access (any layout and dtype, converted to double) ----

double tt_item(const tt_tensor *t);                    // numel must be 1
double tt_get(const tt_tensor *t, const int64_t *idx);  // idx has t->ndim entries
void tt_set(tt_tensor *t, const int64_t *idx, double value);
double tt_at(const tt_tensor *t, int64_t i);            // i-th element in row-major order
void tt_set_at(tt_tensor *t, int64_t i, double value);
void tt_to_f64_array(const tt_tensor *t, double *out);  // numel elements, row-major
void *tt_data(const tt_tensor *t);                      // first element (storage + offset)
float *tt_data_f32(const tt_tensor *t);                 // aborts unless dtype is TT_F32
double *tt_data_f64(const tt_tensor *t);                // aborts unless dtype is TT_F64

// ---- raw views (no autograd; share storage, never copy) ----

tt_tensor *tt_as_strided(const tt_tensor *t, int ndim, const int64_t *shape,
                         const int64_t *stride, int64_t offset);

// ---- printing ----

// PyTorch-like: tensor([[1.0000, 2.0000], ...], shape=(2, 2), dtype=f32); a tensor of more
// than 1000 elements shows 3 entries at each end of every dim around "..." (see
// tt_set_print_options). Returns the number of characters a full print needs.
int tt_snprint(char *buf, size_t n, const tt_tensor *t);
void tt_fprint(FILE *f, const tt_tensor *t);
void tt_print(const tt_tensor *t);

// ---- print options ----

// PyTorch's torch.set_printoptions: a tensor of more than `threshold` elements is summarised,
// each dim longer than 2 * edgeitems showing its first and last `edgeitems` entries around
// "..."; floats show `precision` digits after the point. A negative argument keeps that
// option as it is. Defaults: threshold 1000, edgeitems 3, precision 4. Process-wide.
void tt_set_print_options(int64_t threshold, int64_t edgeitems, int precision);

// ---- threads ----

// The parallel kernels (GEMM, attention, large elementwise ops, optimizer updates) run on the
// library's thread pool (tensor/threads.c). The default count is TT_NUM_THREADS if set, else
// OMP_NUM_THREADS, else one per CPU this process may use. Results are bitwise identical for
// every count: a kernel's loop is cut into chunks whose arithmetic never depends on the thread
// that runs them.
void tt_set_num_threads(int n);  // n >= 1 (aborts otherwise); for every kernel from now on
int tt_get_num_threads(void);    // the count the next kernel uses

// The threads claim a loop's chunks from a shared counter, so a thread the OS leaves without
// a core (another process on it) delays a loop by one chunk, not by its share; idle threads
// spin about 50 us for the next loop, then sleep. `make bench` (bench_threads) measures the
// step on 1 and 2 threads with a core idle and busy. A kernel called from inside a parallel
// loop, or while another thread's kernel holds the pool, runs on its calling thread.

// ---- counters (tests assert nothing leaks) ----

int64_t tt_live_tensors(void);
int64_t tt_live_bytes(void);  // bytes of live tensor storage
// Every live tensor, one line per group of identical ones (shape, dtype, the op or function
// that made it, its name, the open scope that owns it), biggest storage first, at most 20
// lines: "tinytorch: 3 live tensors, 188 MB of storage" then lines such as
//   "  2 x (2, 3) f32 made by matmul, 24 bytes each"
//   "  1 x (1,) f32 made by select: a 1-element view keeping a (60000, 784) f32 tensor of
//    188 MB alive" (one line)
// Under the debug switch each line is followed by "      made at file:line (function) < ...".
// Returns the number of live tensors. Reads other threads' tensors: call it while no other
// thread makes or frees tensors.
int64_t tt_live_report(FILE *f);
// Leak report: with TT_LEAK_REPORT=1 in the environment, a program that created tensors
// writes to stderr at exit, when tensors are still live, "tinytorch: N tensors (M bytes of
// storage) still live at exit: ..." saying how many were made outside any scope and how many
// are owned by scopes never ended, then the list of tt_live_report; and, when scopes are
// still open, "tinytorch: K scopes still open at exit ..." with one line per scope: "the
// scope at depth 1 (owning 3 tensors) opened at x.c:10 (main) never ended". tt_leak_report
// writes the same to f now and returns the number of live tensors (nothing is written when
// it is 0 and no scope is open).
int64_t tt_leak_report(FILE *f);
// The debug switch: with it on, each tensor and scope records the stack where it is made,
// begun and released (a backtrace: a small op then takes about 5 us instead of 0.2-0.4), and
// the leak report, the open scopes and the use-after-free message name those places as
// file:line (resolved by addr2line when it is installed, else object+offset). On with
// TT_DEBUG=origin or TT_LEAK_REPORT=2 in the environment (read when the first tensor or scope
// is made), or this call; tensors made while it was off have no site. Off by default: it then
// costs one branch.
void tt_set_debug_origin(bool on);

// ---- the buffer cache: freed tensor buffers are reused by size, so a steady-state training
// step calls no malloc. Off under sanitizers and with TT_NO_CACHE=1 in the environment. ----

typedef struct tt_alloc_stats {
    int64_t fresh;         // buffers allocated from the system
    int64_t reused;        // buffers handed out again from the cache
    int64_t cached_bytes;  // bytes held by the cache now
    bool enabled;          // false under sanitizers or TT_NO_CACHE=1
} tt_alloc_stats;

tt_alloc_stats tt_alloc_get_stats(void);
size_t tt_alloc_set_cache_limit(size_t bytes);  // default 1 GiB; returns the previous limit
void tt_alloc_trim(void);                       // frees every cached buffer

// ---- memory: every allocation goes through here (counted; file:line on failure) ----

void *tt_malloc_at(size_t nbytes, const char *file, int line);
void *tt_calloc_at(size_t count, size_t size, const char *file, int line);
void *tt_realloc_at(void *p, size_t nbytes, const char *file, int line);
void tt_free(void *p);
#define TT_MALLOC(n) tt_malloc_at((n), __FILE__, __LINE__)
#define TT_CALLOC(c, s) tt_calloc_at((c), (s), __FILE__, __LINE__)
#define TT_REALLOC(p, n) tt_realloc_at((p), (n), __FILE__, __LINE__)

// ---- the machine's memory and running out of it (tensor/memory.c) ----

// The bytes this process may use: the smallest of the physical memory (sysconf
// _SC_PHYS_PAGES * _SC_PAGESIZE), the address-space limit (ulimit -v) and the cgroup v2
// memory.max. *what (when what is not NULL) names the one that binds: "physical memory",
// "ulimit -v" or "cgroup memory.max". Not MemAvailable: that figure moves with every other
// process and the page cache, so a check against it would refuse a run one second and
// accept it the next; a need above this limit can never be met.
int64_t tt_memory_limit(const char **what);

// When an allocation fails (the buffer cache is emptied and the allocation retried first),
// the hook gets one line, "out of memory: tt_malloc could not allocate N bytes (X GiB) at
// file:line, with Y GiB in live tensors and Z GiB of physical memory", before tt_fatal
// aborts with it. A program may print it and exit (PyTorch raises a catchable error there);
// if the hook returns, or none is set (the default), the process aborts. Returns the previous
// hook; NULL removes it.
typedef void (*tt_oom_hook)(const char *message, void *ctx);
tt_oom_hook tt_set_oom_hook(tt_oom_hook hook, void *ctx);

// ---- errors ----

// Programmer errors: print "file:line: function: message" to stderr and abort. Always on.
#define TT_CHECK(cond, ...) \
    do { \
        if (!(cond)) tt_fatal(__FILE__, __LINE__, __func__, __VA_ARGS__); \
    } while (0)

// The same on behalf of a named (public) function, for checks in the helpers it calls.
#define TT_CHECK_IN(func, cond, ...) \
    do { \
        if (!(cond)) tt_fatal(__FILE__, __LINE__, (func), __VA_ARGS__); \
    } while (0)

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 4, 5)))
#endif
void tt_fatal(const char *file, int line, const char *func, const char *fmt, ...);

// Called by tt_fatal with the one-line message ("file:line: func: text", no newline) after it
// is printed and before abort(). A hook may log it, exit or longjmp out; if it returns, the
// process aborts. NULL (the default) removes it. Returns the previous hook. Tests use it to
// check that an abort carries the expected message.
typedef void (*tt_fatal_hook)(const char *message, void *ctx);
tt_fatal_hook tt_set_fatal_hook(tt_fatal_hook hook, void *ctx);

// Recoverable errors (files, checkpoints, datasets, bad values): a status plus a message.
typedef enum tt_status {
    TT_OK = 0,
    TT_ERR_IO,        // open/read/write/fsync/rename failed
    TT_ERR_FORMAT,    // malformed or corrupt file
    TT_ERR_ARG,       // invalid value from a user
    TT_ERR_MISMATCH,  // valid, but does not fit (config, vocab, shapes)
    TT_ERR_NOMEM,
    TT_STATUS_COUNT
} tt_status;

const char *tt_status_str(tt_status s);
const char *tt_last_error(void);  // message of the last error set on this thread
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
tt_status tt_set_error(tt_status s, const char *fmt, ...);  // returns s

// ---- files: inputs that cannot block, outputs that replace nothing they should not ----

// Opens path for reading: never blocks (a FIFO opens with O_NONBLOCK) and refuses anything but
// a regular file (a FIFO, a device such as /dev/zero, a directory) before a byte is read.
// TT_OK with *fd open for ordinary blocking reads (close it), or TT_ERR_IO with one line naming
// what ("checkpoint", "text file", ...), path and the problem; *fd is then -1.
tt_status tt_file_open_read(const char *path, const char *what, int *fd);

// A file a program reads or writes, for tt_file_check_outputs.
typedef struct tt_file_role {
    const char *name;  // how messages name it: "--out", "--data"
    const char *path;  // NULL: not used this run
    bool in_place;     // an output written in place (a log), not replaced: may be a char device
    bool replaceable;  // an input an output also marked replaceable may replace, and such an
                       // output (--resume continued in --out); never one written in place
} tt_file_role;

// Checks, before any work, that each output can be written and loses nothing: a non-empty path
// not ending in '/', in an existing directory where a file can be created, that is absent or a
// regular file (or, in_place, a character device such as /dev/null); not the same file (device
// and inode, or one name not yet written) as an input (unless both are replaceable), nor as an
// earlier output. Roles with a NULL path are skipped. TT_OK, or TT_ERR_ARG / TT_ERR_IO with one
// line naming the flag, the path and the fix; nothing is written or left behind.
tt_status tt_file_check_outputs(const tt_file_role *outs, int n_out, const tt_file_role *ins,
                                int n_in);

#ifdef __cplusplus
}
#endif

#endif  // TT_TENSOR_H
