// libFuzzer target over the checkpoint loader (io/checkpoint.c): each input is parsed with every
// checksum verified (as tt_ckpt_load does) and again with the checksums skipped, since a hostile
// file carries valid ones; a file that loads is saved, reloaded and compared. Any abort, leak or
// sanitizer report is a crash. Not a Check suite: `make fuzz` builds it with clang.
//
//     make fuzz                     # 60 s; FUZZ_SECONDS=600 for ten minutes
//     build-fuzz/fuzz_checkpoint crash-<sha1>   # replay one input
//
// Compiled with -DTT_FUZZ_REPLAY (any C compiler, no libFuzzer) it has its own main instead:
// `fuzz_replay FILE...` runs each file through the same checks (make test replays
// tests/fuzz_corpus/ this way) and `fuzz_replay --write-seeds DIR` writes that seed corpus.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinytorch.h"
#include "fuzz_util.h"
#include "io/io_internal.h"  // tt__ckpt_load_mem, the loader's in-memory entry point
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// ---- invariants ----

// A failed load leaves the container empty and says why.
static void check_failed(const tt_checkpoint *c, tt_status s, const char *what) {
    if (s == TT_ERR_FORMAT && c->nmeta == 0 && !c->meta && c->tensors.n == 0 &&
        tt_last_error()[0])
        return;
    fuzz_crash("%s: status %s with %d entries, %d tensors, message '%s'", what, tt_status_str(s),
               c->nmeta, c->tensors.n, tt_last_error());
}

static bool same_meta(const tt_meta *a, const tt_meta *b) {
    if (strcmp(a->key, b->key) != 0 || a->type != b->type) return false;
    switch (a->type) {
        case TT_META_I64: return a->i64 == b->i64;
        case TT_META_F64: return memcmp(&a->f64, &b->f64, sizeof a->f64) == 0;  // NaN bits too
        default: return a->nbytes == b->nbytes && (!a->nbytes || !memcmp(a->bytes, b->bytes,
                                                                         a->nbytes));
    }
}

// Same entries and tensors (names, dtypes, shapes, element hashes), in the same order.
static void check_same(const tt_checkpoint *a, const tt_checkpoint *b, const char *what) {
    bool ok = a->nmeta == b->nmeta && a->tensors.n == b->tensors.n;
    for (int i = 0; ok && i < a->nmeta; i++) ok = same_meta(&a->meta[i], &b->meta[i]);
    for (int i = 0; ok && i < a->tensors.n; i++) {
        const tt_tensor *x = a->tensors.items[i].tensor, *y = b->tensors.items[i].tensor;
        ok = strcmp(a->tensors.items[i].name, b->tensors.items[i].name) == 0 &&
             x->dtype == y->dtype && tt_same_shape(x, y) && tt_tensor_hash(x) == tt_tensor_hash(y);
    }
    if (ok) return;
    fuzz_crash("%s: the two checkpoints differ", what);
}

// ---- exercising a loaded checkpoint ----

static tt_params probe;   // a small parameter list restored from every loaded checkpoint
static tt_tensor *probe_w, *probe_b;
static int64_t base_tensors;

static void exercise(const tt_checkpoint *c) {
    for (int i = 0; i < c->nmeta; i++) {
        const tt_meta *m = &c->meta[i];
        int64_t iv;
        double fv;
        const unsigned char *b;
        size_t n;
        bool got = tt_ckpt_get_i64(c, m->key, &iv) + tt_ckpt_get_f64(c, m->key, &fv) +
                   tt_ckpt_get_bytes(c, m->key, &b, &n) == 1;
        if (!got || strlen(m->key) == 0 || strlen(m->key) > 255) {
            fuzz_crash("metadata entry %d ('%s') is not readable once", i, m->key);
        }
    }
    for (int i = 0; i < c->tensors.n; i++) {
        tt_tensor *t = c->tensors.items[i].tensor;
        if (tt_ckpt_get_tensor(c, c->tensors.items[i].name) != t || !tt_is_contiguous(t)) {
            fuzz_crash("tensor %d ('%s') is not found by name", i, c->tensors.items[i].name);
        }
        (void)tt_tensor_hash(t);
    }
    (void)tt_params_fingerprint(&c->tensors);
    // Restoring copies only when every parameter matches; either way nothing aborts.
    (void)tt_ckpt_restore_params(c, "", &probe);
    (void)tt_ckpt_restore_params(c, "model.", &probe);
}

// Saving a loaded checkpoint and loading the file gives the same contents back.
static void round_trip(const tt_checkpoint *c) {
    char path[96];
    fuzz_path(path, sizeof path, "rt.ckpt");
    if (tt_ckpt_save(c, path) != TT_OK) {
        fuzz_crash("saving a loaded checkpoint failed: %s", tt_last_error());
    }
    tt_checkpoint d;
    tt_status s = tt_ckpt_load(&d, path);
    if (s != TT_OK) {
        fuzz_crash("reloading a saved checkpoint failed: %s", tt_last_error());
    }
    check_same(c, &d, "save + load");
    tt_ckpt_free(&d);
}

// ---- the target ----

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char *const files[] = {"rt.ckpt", NULL};
    fuzz_setup("ckpt", files);
    probe_w = tt_zeros(TT_F32, TT_SHAPE(2, 3));
    probe_b = tt_zeros(TT_F32, TT_SHAPE(2));
    tt_params_init(&probe);
    tt_params_add(&probe, NULL, "a", probe_b);
    tt_params_add(&probe, NULL, "wte.weight", probe_w);
    base_tensors = tt_live_tensors();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tt_checkpoint strict, lax;
    tt_status s1 = tt__ckpt_load_mem(&strict, data, size, "fuzz", true);
    if (s1 != TT_OK) check_failed(&strict, s1, "checked load");
    tt_status s2 = tt__ckpt_load_mem(&lax, data, size, "fuzz", false);
    if (s2 != TT_OK) check_failed(&lax, s2, "load without checksums");
    if (s1 == TT_OK && s2 != TT_OK) {
        fuzz_crash("a file that loads fails without checksums: %s", tt_last_error());
    }
    if (s1 == TT_OK) check_same(&strict, &lax, "with and without checksums");
    if (s2 == TT_OK) {
        exercise(&lax);
        round_trip(&lax);
    }
    tt_ckpt_free(&strict);
    tt_ckpt_free(&lax);
    if (tt_live_tensors() != base_tensors) {
        fuzz_crash("%lld live tensors after an input, %lld before", (long long)tt_live_tensors(),
                   (long long)base_tensors);
    }
    return 0;
}

#ifdef TT_FUZZ_REPLAY
// ---- replay and seed corpus (no libFuzzer) ----

static int write_seed(const char *dir, const char *name, const tt_checkpoint *c) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (tt_ckpt_save(c, path) != TT_OK) {
        fprintf(stderr, "fuzz_replay: %s\n", tt_last_error());
        return 1;
    }
    return 0;
}

// Small valid checkpoints that between them reach every field of the format.
static int write_seeds(const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_replay: cannot create '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    int fails = 0;
    tt_checkpoint c;
    tt_ckpt_init(&c);
    fails += write_seed(dir, "seed-empty", &c);  // header and checksum only

    tt_ckpt_set_i64(&c, "k", 7);
    tt_ckpt_set_bytes(&c, "v", "xyz", 3);
    tt_tensor *a = tt_from_data(TT_F32, TT_SHAPE(2), (const float[]){1, 2});
    tt_tensor *b = tt_from_data(TT_F32, TT_SHAPE(3), (const float[]){3, 4, 5});
    tt_ckpt_add_tensor(&c, "a", a);
    tt_ckpt_add_tensor(&c, "b", b);
    fails += write_seed(dir, "seed-small", &c);
    tt_ckpt_free(&c);

    // Every dtype and metadata type, a 0-d and an empty tensor, 8 dims.
    tt_ckpt_init(&c);
    tt_ckpt_set_f64(&c, "loss", 1.5);
    tt_ckpt_set_i64(&c, "neg", -3);
    tt_ckpt_set_bytes(&c, "none", NULL, 0);
    tt_tensor *f64 = tt_scalar(TT_F64, -0.25);
    tt_tensor *i32 = tt_zeros(TT_I32, TT_SHAPE(0, 4));
    tt_tensor *i64 = tt_from_data(TT_I64, TT_SHAPE(3), (const int64_t[]){-1, 0, 1LL << 40});
    tt_tensor *d8 = tt_ones(TT_F32, TT_SHAPE(1, 1, 1, 1, 1, 1, 2, 1));
    tt_ckpt_add_tensor(&c, "f64", f64);
    tt_ckpt_add_tensor(&c, "i32", i32);
    tt_ckpt_add_tensor(&c, "i64", i64);
    tt_ckpt_add_tensor(&c, "d8", d8);
    tt_ckpt_add_tensor(&c, "i32.last", i32);  // ends with an empty tensor
    fails += write_seed(dir, "seed-dtypes", &c);
    tt_ckpt_free(&c);

    // Empty tensors of several dims: their other dims may grow without adding data.
    tt_ckpt_init(&c);
    tt_tensor *e3 = tt_zeros(TT_F64, TT_SHAPE(2, 0, 3)), *e3b = tt_zeros(TT_I64, TT_SHAPE(0, 4, 4));
    tt_ckpt_add_tensor(&c, "e3", e3);
    tt_ckpt_add_tensor(&c, "a", a);
    tt_ckpt_add_tensor(&c, "e3b", e3b);
    fails += write_seed(dir, "seed-empty_dims", &c);
    tt_ckpt_free(&c);
    tt_release(e3);
    tt_release(e3b);

    // The shape of a char_gpt checkpoint, tiny: config entries, a vocab, model. tensors.
    tt_ckpt_init(&c);
    tt_ckpt_set_bytes(&c, "format", "char_gpt", 8);
    tt_ckpt_set_i64(&c, "cfg.vocab_size", 2);
    tt_ckpt_set_i64(&c, "cfg.n_embd", 3);
    tt_ckpt_set_bytes(&c, "vocab", "ab", 2);
    tt_ckpt_set_i64(&c, "step", 10);
    tt_tensor *wte = tt_from_data(TT_F32, TT_SHAPE(2, 3), (const float[]){1, -1, 0, 2, 3, 4});
    tt_ckpt_add_tensor(&c, "model.wte.weight", wte);
    tt_ckpt_add_tensor(&c, "model.a", a);
    tt_ckpt_add_tensor(&c, "optim.exp_avg.a", b);
    fails += write_seed(dir, "seed-gpt_like", &c);
    tt_ckpt_free(&c);
    tt_release(a);
    tt_release(b);
    tt_release(f64);
    tt_release(i32);
    tt_release(i64);
    tt_release(d8);
    tt_release(wte);
    return fails ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) return write_seeds(argv[2]);
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_replay FILE...  |  fuzz_replay --write-seeds DIR\n");
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    int loaded = 0;
    for (int i = 1; i < argc; i++) {
        size_t n;
        unsigned char *buf;  // NULL for an empty file
        if (tt_read_file(argv[i], &buf, &n) != TT_OK) {
            fprintf(stderr, "fuzz_replay: %s\n", tt_last_error());
            return 1;
        }
        static const unsigned char empty[1];
        LLVMFuzzerTestOneInput(buf ? buf : empty, n);
        tt_checkpoint c;
        if (tt__ckpt_load_mem(&c, buf, n, argv[i], true) == TT_OK) loaded++;
        tt_ckpt_free(&c);
        free(buf);
    }
    printf("fuzz_replay: %d inputs ran clean (%d of them valid checkpoints)\n", argc - 1, loaded);
    tt_params_free(&probe);
    tt_release(probe_w);
    tt_release(probe_b);
    return 0;
}
#endif  // TT_FUZZ_REPLAY
