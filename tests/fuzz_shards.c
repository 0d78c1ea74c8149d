// libFuzzer target for the token shard reader (data/shards.c). The first input byte picks the
// mode: 0 the rest is a shard with llm.c's header (x_train_000001.bin), 1 nanoGPT's headerless
// train.bin, 2 a header shard read as the train split of a directory beside a valid val shard,
// through tt_dataset_open_shards and a batch. A failed open must return TT_ERR_FORMAT with a
// one-line message naming the file and leave the struct empty; tt_shard_parse on the bytes in
// memory must agree with the open; a shard that opens must give back exactly its bytes as
// tokens, and the id check must find an id at or above the vocabulary when there is one. Any
// abort, leak or sanitizer report is a crash. Not a Check suite: `make fuzz` builds it with
// clang.
//
//     build-fuzz/fuzz_shards crash-<sha1>       # replay one input
//
// Compiled with -DTT_FUZZ_REPLAY (any C compiler, no libFuzzer) it has its own main instead:
// `fuzz_shards_replay FILE...` runs each file through the same checks (make test replays
// tests/fuzz_corpus_shards/ this way) and `--write-seeds DIR` writes that corpus's seed-* files.
#include <errno.h>
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

enum { MODE_HEADER, MODE_HEADERLESS, MODE_DATASET, N_MODES };
#define VOCAB 1000  // the id check's vocabulary

static int n_opened;  // inputs that opened (the replay reports it)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char *const files[] = {"x_train_000001.bin", "train.bin", "x_val_000000.bin",
                                        NULL};
    fuzz_setup("shards", files);
    // Mode 2's val shard: 40 tokens 0 .. 39.
    unsigned char val[1024 + 80] = {0x88, 0xD8, 0x34, 0x01, 1, 0, 0, 0, 40};
    for (int i = 0; i < 40; i++) val[1024 + 2 * i] = (unsigned char)i;
    char path[128];
    fuzz_path(path, sizeof path, "x_val_000000.bin");
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(val, 1, sizeof val, f) != sizeof val || fclose(f) != 0)
        fuzz_crash("cannot write %s", path);
    return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) fuzz_crash("cannot write %s", path);
}

static void check_failed(tt_status s, const tt_token_shards *sh, const char *path) {
    const char *m = tt_last_error();
    if (s != TT_ERR_FORMAT || sh->n_shards || sh->shards || sh->start || !strstr(m, path) ||
        strpbrk(m, "\n\r"))
        fuzz_crash("a failed open: status %s, message '%s', %d shards", tt_status_str(s), m,
                   sh->n_shards);
}

// The shard's tokens are its bytes after the header, little-endian; the id check agrees.
static void check_tokens(const tt_token_shards *sh, const uint8_t *data, const tt_shard_info *in) {
    int64_t n = sh->n[TT_SPLIT_TRAIN];
    if (n != in->n_tokens || sh->n[TT_SPLIT_VAL] != 0 || sh->n_shards != 1)
        fuzz_crash("%lld tokens opened, the header says %lld", (long long)n,
                   (long long)in->n_tokens);
    int32_t *got = malloc((size_t)(n ? n : 1) * sizeof *got);
    tt_shards_read(sh, TT_SPLIT_TRAIN, 0, n, got);
    uint32_t max = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *p = data + in->offset + (size_t)i * (size_t)in->width;
        uint32_t v = p[0] | (uint32_t)p[1] << 8;
        if (in->width == 4) v |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if ((uint32_t)got[i] != v)
            fuzz_crash("token %lld is %u, its bytes say %u", (long long)i, (uint32_t)got[i], v);
        if (v > max) max = v;
    }
    free(got);
    tt_status s = tt_shards_check_ids(sh, VOCAB);
    if ((s == TT_OK) != (max < VOCAB))
        fuzz_crash("the id check says %s, the largest id is %u", tt_status_str(s), max);
}

// Mode 2: the input beside the val shard as a dataset; a batch when both splits are long enough.
static void check_dataset(const char *path) {
    int64_t live = tt_live_tensors();
    tt_text_dataset ds;
    tt_status s = tt_dataset_open_shards(&ds, fuzz_dir, 0);
    if (s != TT_OK) {
        if (s != TT_ERR_FORMAT || ds.shards || !strstr(tt_last_error(), path))
            fuzz_crash("a failed dataset: %s '%s'", tt_status_str(s), tt_last_error());
        return;
    }
    n_opened++;
    if (ds.n - ds.n_train != 40)
        fuzz_crash("the val split has %lld tokens", (long long)(ds.n - ds.n_train));
    if (tt_dataset_check(&ds, 4) == TT_OK) {
        tt_rng r;
        tt_rng_seed(&r, 1);
        tt_scope_begin();
        tt_tensor *x, *y;
        tt_dataset_batch(&ds, TT_SPLIT_TRAIN, 2, 4, &r, &x, &y);
        tt_dataset_batch(&ds, TT_SPLIT_VAL, 2, 4, &r, &x, &y);
        const int32_t *yd = tt_data(y), *xd = tt_data(x);
        if (yd[0] != xd[1] || xd[0] < 0 || xd[0] > 35) fuzz_crash("a val window is wrong");
        tt_scope_end();
    }
    tt_dataset_free(&ds);
    if (tt_live_tensors() != live) fuzz_crash("a batch leaked tensors");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int mode = data[0] % N_MODES;
    data++;
    size--;
    char path[128];
    fuzz_path(path, sizeof path, mode == MODE_HEADERLESS ? "train.bin" : "x_train_000001.bin");
    write_file(path, data, size);
    if (mode == MODE_DATASET) {
        check_dataset(path);
        unlink(path);
        return 0;
    }
    tt_shard_info in;
    static const uint8_t none[1];
    tt_status ps = tt_shard_parse(size ? data : none, size, mode == MODE_HEADERLESS, path, &in);
    tt_token_shards sh;
    tt_status s = tt_shards_open(&sh, path);
    if (s != ps) fuzz_crash("open says %s, parse says %s", tt_status_str(s), tt_status_str(ps));
    if (s != TT_OK)
        check_failed(s, &sh, path);
    else {
        n_opened++;
        check_tokens(&sh, data, &in);
    }
    tt_shards_close(&sh);
    unlink(path);
    return 0;
}

#ifdef TT_FUZZ_REPLAY
// ---- replay and seed corpus (no libFuzzer) ----

static void write_seed(const char *dir, const char *name, int mode, const void *bytes, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        fprintf(stderr, "fuzz_shards_replay: cannot create '%s': %s\n", p, strerror(errno));
        exit(1);
    }
    fputc(mode, f);
    fwrite(bytes, 1, n, f);
    fclose(f);
}

// A header (magic, version, count) then n token bytes of value 7 .. into b; returns its size.
static size_t shard_bytes(uint8_t *b, uint32_t magic, uint32_t version, uint32_t count, size_t n) {
    memset(b, 0, 1024 + n);
    uint32_t h[3] = {magic, version, count};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++) b[4 * k + i] = (uint8_t)(h[k] >> (8 * i));
    for (size_t i = 0; i < n; i++) b[1024 + i] = (uint8_t)(7 + i);
    return 1024 + n;
}

// Valid uint16 and uint32 shards, a headerless file, and broken ones.
static int write_seeds(const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_shards_replay: cannot create '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    static uint8_t b[1024 + 64];
    write_seed(dir, "seed-u16", MODE_HEADER, b, shard_bytes(b, 20240520, 1, 8, 16));
    write_seed(dir, "seed-u32", MODE_HEADER, b, shard_bytes(b, 20240520, 2, 4, 16));
    write_seed(dir, "seed-empty", MODE_HEADER, b, shard_bytes(b, 20240520, 1, 0, 0));
    write_seed(dir, "seed-dataset", MODE_DATASET, b, shard_bytes(b, 20240520, 1, 32, 64));
    write_seed(dir, "bad-truncated", MODE_HEADER, b, shard_bytes(b, 20240520, 1, 9, 16));
    write_seed(dir, "bad-magic", MODE_HEADER, b, shard_bytes(b, 20240521, 1, 8, 16));
    write_seed(dir, "bad-version", MODE_HEADER, b, shard_bytes(b, 20240520, 7, 8, 16));
    write_seed(dir, "bad-short", MODE_HEADER, b, 100);
    static const uint8_t nano[] = {1, 0, 2, 0, 0xE8, 0x03, 0xFF, 0xFF};  // ids 1 2 1000 65535
    write_seed(dir, "seed-headerless", MODE_HEADERLESS, nano, sizeof nano);
    write_seed(dir, "bad-headerless-odd", MODE_HEADERLESS, nano, 5);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: fuzz_shards_replay FILE...  |  fuzz_shards_replay --write-seeds "
                "DIR\n");
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) return write_seeds(argv[2]);
    if (fuzz_replay_files("fuzz_shards_replay", argc, argv)) return 1;
    printf("fuzz_shards_replay: %d inputs ran clean (%d of them opened)\n", argc - 1, n_opened);
    return 0;
}
#endif  // TT_FUZZ_REPLAY
