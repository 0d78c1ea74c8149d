// libFuzzer target over the safetensors reader (io/safetensors.c): each input is opened from
// memory and from a file, with the same status and message; a failure must leave the struct
// empty with a one-line message, and a file that opens has every tensor readable by name,
// loads into a probe parameter list without aborting, and saves (as F64, F16 and BF16, with
// its metadata) to a file that reopens with the same names, shapes, metadata and, through F64,
// the same values. Any abort, leak or sanitizer report is a
// crash. Not a Check suite: `make fuzz` builds it with clang.
//
//     make fuzz                                      # both targets, FUZZ_SECONDS each
//     build-fuzz/fuzz_safetensors crash-<sha1>       # replay one input
//
// Compiled with -DTT_FUZZ_REPLAY (any C compiler, no libFuzzer) it has its own main instead:
// `fuzz_safetensors_replay FILE...` runs each file through the same checks (make test replays
// tests/fuzz_corpus_safetensors/ this way) and `--write-seeds DIR` writes that seed corpus.
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinytorch.h"
#include "fuzz_util.h"
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// ---- state ----

static tt_params probe;  // loaded (non-strict) from every file that opens
static tt_tensor *probe_w, *probe_b;
static int64_t base_tensors;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char *const files[] = {"rt.safetensors", "in.safetensors", NULL};
    fuzz_setup("st", files);
    probe_w = tt_zeros(TT_F32, TT_SHAPE(2, 3));
    probe_b = tt_zeros(TT_F64, TT_SHAPE(2));
    tt_params_init(&probe);
    tt_params_add(&probe, NULL, "a", probe_b);
    tt_params_add(&probe, NULL, "wte.weight", probe_w);
    base_tensors = tt_live_tensors();
    return 0;
}

// ---- invariants ----

static void check_failed(const tt_safetensors *f, tt_status s) {
    const char *m = tt_last_error();
    if (s != TT_ERR_FORMAT || f->n || f->tensors || f->nmeta || f->meta_keys || f->data ||
        f->by_name || strncmp(m, "safetensors 'fuzz': ", 20) != 0 || strchr(m, '\n'))
        fuzz_crash("a failed open: status %s, %d tensors, message '%s'", tt_status_str(s), f->n, m);
}

// Same values: NaN matches NaN; no tolerance (the file went through F64).
static bool same_values(const tt_tensor *a, const tt_tensor *b) {
    if (!tt_same_shape(a, b)) return false;
    int64_t n = tt_numel(a);
    tt_tensor *x = tt_to_dtype((tt_tensor *)a, TT_F64), *y = tt_to_dtype((tt_tensor *)b, TT_F64);
    const double *p = tt_data(x), *q = tt_data(y);
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) ok = p[i] == q[i] || (isnan(p[i]) && isnan(q[i]));
    tt_release(x);
    tt_release(y);
    return ok;
}

// The tensors that read (BOOL with other bytes than 0/1 do not) into p, in data order.
static void read_all(const tt_safetensors *f, tt_params *p) {
    tt_params_init(p);
    for (int i = 0; i < f->n; i++) {
        const tt_st_info *e = &f->tensors[i];
        if (tt_safetensors_find(f, e->name) != e) fuzz_crash("tensor '%s' is not found", e->name);
        tt_tensor *t;
        tt_status s = tt_safetensors_get(f, e->name, &t);
        if (s != TT_OK) {
            if (s != TT_ERR_FORMAT || e->dtype != TT_ST_BOOL || t)
                fuzz_crash("tensor '%s' does not read: %s", e->name, tt_last_error());
            continue;
        }
        if (t->dtype != tt_st_dtype_loaded(e->dtype) || t->ndim != e->ndim ||
            memcmp(t->shape, e->shape, sizeof(int64_t) * (size_t)e->ndim) != 0)
            fuzz_crash("tensor '%s' reads with another dtype or shape", e->name);
        tt_params_add(p, NULL, e->name, t);
        tt_release(t);
    }
}

// Saves p with f's metadata as dtype, reopens, and checks names, shapes and metadata (and the
// values when dtype is F64).
static void round_trip(const tt_safetensors *f, const tt_params *p, tt_st_dtype dtype) {
    char path[96];
    fuzz_path(path, sizeof path, "rt.safetensors");
    const char **meta = malloc((2 * (size_t)f->nmeta + 1) * sizeof *meta);
    for (int i = 0; i < f->nmeta; i++) {
        meta[2 * i] = f->meta_keys[i];
        meta[2 * i + 1] = f->meta_values[i];
    }
    meta[2 * f->nmeta] = NULL;
    if (tt_safetensors_save(path, p, meta, dtype) != TT_OK)
        fuzz_crash("saving a file that opened failed: %s", tt_last_error());
    free(meta);
    tt_safetensors g;
    if (tt_safetensors_open(&g, path) != TT_OK)
        fuzz_crash("reopening a saved file failed: %s", tt_last_error());
    if (g.n != p->n || g.nmeta != f->nmeta) fuzz_crash("the saved file has other counts");
    for (int i = 0; i < f->nmeta; i++) {
        const char *v = tt_safetensors_meta(&g, f->meta_keys[i]);
        if (!v || strcmp(v, f->meta_values[i]) != 0)
            fuzz_crash("metadata '%s' did not survive a save", f->meta_keys[i]);
    }
    for (int i = 0; i < p->n; i++) {
        tt_tensor *t;
        if (tt_safetensors_get(&g, p->items[i].name, &t) != TT_OK)
            fuzz_crash("tensor '%s' is missing after a save: %s", p->items[i].name,
                       tt_last_error());
        if (!tt_same_shape(t, p->items[i].tensor) ||
            (dtype == TT_ST_F64 && !same_values(t, p->items[i].tensor)))
            fuzz_crash("tensor '%s' changed through a save as %s", p->items[i].name,
                       tt_st_dtype_name(dtype));
        tt_release(t);
    }
    tt_safetensors_close(&g);
}

// Opening the input as a file (header, then data) gives the status and message of opening it
// from memory.
static void check_file_open(const uint8_t *data, size_t size, tt_status s_mem) {
    char msg[1024], path[96];
    snprintf(msg, sizeof msg, "%s", tt_last_error());
    fuzz_path(path, sizeof path, "in.safetensors");
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp) != 0)
        fuzz_crash("cannot write %s", path);
    tt_safetensors g;
    tt_status s = tt_safetensors_open(&g, path);
    const char *m = tt_last_error(), *tail = strchr(m, ':');  // after "safetensors '<path>'"
    if (s != s_mem || (s != TT_OK && (!tail || !strstr(msg, tail))))
        fuzz_crash("opening the file gave %s '%s', from memory %s '%s'", tt_status_str(s), m,
                   tt_status_str(s_mem), msg);
    tt_safetensors_close(&g);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tt_safetensors f;
    tt_status s = tt_safetensors_open_mem(&f, data, size, "fuzz");
    if (s != TT_OK) check_failed(&f, s);
    check_file_open(data, size, s);
    if (s == TT_OK) {
        tt_params p;
        read_all(&f, &p);
        // Loading into the probe copies only when nothing mismatches; it never aborts.
        (void)tt_safetensors_copy_params(&f, &probe, false);
        (void)tt_safetensors_copy_params(&f, &probe, true);
        round_trip(&f, &p, TT_ST_F64);
        round_trip(&f, &p, TT_ST_F16);
        round_trip(&f, &p, TT_ST_BF16);
        tt_params_free(&p);
    }
    tt_safetensors_close(&f);
    if (tt_live_tensors() != base_tensors)
        fuzz_crash("%lld live tensors after an input, %lld before", (long long)tt_live_tensors(),
                   (long long)base_tensors);
    return 0;
}

#ifdef TT_FUZZ_REPLAY
// ---- replay and seed corpus (no libFuzzer) ----

static int write_seed(const char *dir, const char *name, const tt_params *p,
                      const char *const *meta, tt_st_dtype dtype) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (tt_safetensors_save(path, p, meta, dtype) != TT_OK) {
        fprintf(stderr, "fuzz_safetensors_replay: %s\n", tt_last_error());
        return 1;
    }
    return 0;
}

// Small valid files that between them reach every dtype and field; the reference files of
// tests/reference/ are seeds too.
static int write_seeds(const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_safetensors_replay: cannot create '%s': %s\n", dir,
                strerror(errno));
        return 1;
    }
    int fails = 0;
    tt_params p;
    tt_params_init(&p);
    fails += write_seed(dir, "seed-empty", &p, NULL, TT_ST_F32);
    tt_tensor *a = tt_from_data(TT_F32, TT_SHAPE(2, 3), (const float[]){1, -2, 0.5f, 3, 4, 5});
    tt_tensor *b = tt_from_data(TT_F32, TT_SHAPE(2), (const float[]){-1, 65504});
    tt_params_add(&p, NULL, "wte.weight", a);
    tt_params_add(&p, NULL, "a", b);
    const char *meta[] = {"format", "pt", NULL};
    fails += write_seed(dir, "seed-f16", &p, meta, TT_ST_F16);
    fails += write_seed(dir, "seed-bf16", &p, NULL, TT_ST_BF16);
    tt_tensor *i32 = tt_from_data(TT_I32, TT_SHAPE(3), (const int32_t[]){-1, 0, 7});
    tt_tensor *i64 = tt_zeros(TT_I64, TT_SHAPE(0, 4));
    tt_tensor *bo = tt_ones(TT_BOOL, TT_SHAPE(1, 1, 1, 1, 1, 1, 1, 2));
    tt_tensor *sc = tt_scalar(TT_F64, -0.25);
    tt_params_add(&p, NULL, "i32", i32);
    tt_params_add(&p, NULL, "i64", i64);
    tt_params_add(&p, NULL, "bool", bo);
    tt_params_add(&p, NULL, "scalar", sc);
    const char *meta2[] = {"k", "v", "empty", "", NULL};
    fails += write_seed(dir, "seed-dtypes", &p, meta2, TT_ST_F64);
    tt_params_free(&p);
    tt_release(a);
    tt_release(b);
    tt_release(i32);
    tt_release(i64);
    tt_release(bo);
    tt_release(sc);
    return fails ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) return write_seeds(argv[2]);
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_safetensors_replay FILE...  |  "
                "fuzz_safetensors_replay --write-seeds DIR\n");
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    int opened = 0;
    for (int i = 1; i < argc; i++) {
        size_t n;
        unsigned char *buf;  // NULL for an empty file
        if (tt_read_file(argv[i], &buf, &n) != TT_OK) {
            fprintf(stderr, "fuzz_safetensors_replay: %s\n", tt_last_error());
            return 1;
        }
        static const unsigned char empty[1];
        LLVMFuzzerTestOneInput(buf ? buf : empty, n);
        tt_safetensors f;
        if (tt_safetensors_open_mem(&f, buf, n, argv[i]) == TT_OK) opened++;
        tt_safetensors_close(&f);
        free(buf);
    }
    printf("fuzz_safetensors_replay: %d inputs ran clean (%d of them valid files)\n", argc - 1,
           opened);
    tt_params_free(&probe);
    tt_release(probe_w);
    tt_release(probe_b);
    return 0;
}
#endif  // TT_FUZZ_REPLAY
