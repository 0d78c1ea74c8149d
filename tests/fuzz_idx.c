// libFuzzer target for the IDX and CSV readers (data/idx.h, data/csv.h). The first input byte
// picks the mode: 0 the rest is an IDX file, 1 the same gzip-compressed here, 2 a CSV file read
// as f64 without a header, 3 a CSV file read as f32 with a header. A failed load must return
// TT_ERR_FORMAT with a one-line message naming the file, leave the output NULL and leak no
// tensor; a load that succeeds must match the input: an IDX tensor has the header's dims, the
// dtype of its rank and the data bytes as values; a CSV tensor has one row per data line. Any
// abort, leak or sanitizer report is a crash. Not a Check suite: `make fuzz` builds it with
// clang.
//
//     make fuzz                              # every target, FUZZ_SECONDS each
//     build-fuzz/fuzz_idx crash-<sha1>       # replay one input
//
// Compiled with -DTT_FUZZ_REPLAY (any C compiler, no libFuzzer) it has its own main instead:
// `fuzz_idx_replay FILE...` runs each file through the same checks (make test replays
// tests/fuzz_corpus_idx/ this way) and `--write-seeds DIR` writes that corpus's seed-* files.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tinytorch.h"
#include "fuzz_util.h"
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MODE_IDX, MODE_IDX_GZ, MODE_CSV, MODE_CSV_HEADER, N_MODES };

static char path[96];
static int n_loaded;  // inputs that loaded (the replay reports it)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char *const files[] = {"in", NULL};
    fuzz_setup("idx", files);
    fuzz_path(path, sizeof path, "in");
    return 0;
}

static void write_file(const uint8_t *data, size_t n, bool gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f || (n && gzwrite(f, data, (unsigned)n) != (int)n) || gzclose(f) != Z_OK)
            fuzz_crash("cannot write %s", path);
        return;
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) fuzz_crash("cannot write %s", path);
}

static void check_failed(tt_status s, const tt_tensor *t, int64_t live) {
    const char *m = tt_last_error();
    // TT_ERR_NOMEM: a header that declares more than the machine's memory.
    if ((s != TT_ERR_FORMAT && s != TT_ERR_NOMEM) || t || !m[0] || strpbrk(m, "\n\r") ||
        !strstr(m, path) || tt_live_tensors() != live)
        fuzz_crash("a failed load: status %s, message '%s', output %p, %lld tensors leaked",
                   tt_status_str(s), m, (const void *)t, (long long)(tt_live_tensors() - live));
}

// The tensor holds the header's dims and the bytes after the header.
static void check_idx(const tt_tensor *t, const uint8_t *data, size_t size) {
    int ndim = size >= 4 ? data[3] : -1;
    if (t->ndim != ndim || t->dtype != (ndim == 1 ? TT_I64 : TT_F32))
        fuzz_crash("an IDX file of %d dims loaded as %d dims of %s", ndim, t->ndim,
                   tt_dtype_name(t->dtype));
    size_t off = 4 + 4 * (size_t)ndim;
    for (int i = 0; i < ndim; i++) {
        const uint8_t *d = data + 4 + 4 * i;
        int64_t dim = (int64_t)d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3];
        if (t->shape[i] != dim)
            fuzz_crash("dim %d is %lld, the header says %lld", i, (long long)t->shape[i],
                       (long long)dim);
    }
    int64_t n = tt_numel(t);
    if ((size_t)n != size - off)
        fuzz_crash("%lld elements from %zu data bytes", (long long)n, size - off);
    for (int64_t i = 0; i < n; i++)
        if (tt_at(t, i) != data[off + (size_t)i])
            fuzz_crash("element %lld differs from its byte", (long long)i);
}

// One row per line after the header; a final newline ends the last row.
static void check_csv(const tt_tensor *t, const uint8_t *data, size_t size, bool header) {
    int64_t lines = 0;
    for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
    if (size && data[size - 1] != '\n') lines++;
    if (header) lines--;
    if (t->ndim != 2 || t->shape[0] != lines || t->shape[1] < 1)
        fuzz_crash("a CSV of %lld data lines loaded as %d dims (%lld rows)", (long long)lines,
                   t->ndim, (long long)t->shape[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int mode = data[0] % N_MODES;
    data++;
    size--;
    write_file(data, size, mode == MODE_IDX_GZ);
    int64_t live = tt_live_tensors();
    tt_tensor *t = (tt_tensor *)1;
    tt_status s;
    if (mode == MODE_IDX || mode == MODE_IDX_GZ)
        s = tt_idx_load(path, &t);
    else
        s = tt_csv_load(path, mode == MODE_CSV ? TT_F64 : TT_F32, mode == MODE_CSV_HEADER, &t);
    if (s != TT_OK) {
        check_failed(s, t, live);
        return 0;
    }
    n_loaded++;
    if (mode == MODE_IDX || mode == MODE_IDX_GZ) check_idx(t, data, size);
    else check_csv(t, data, size, mode == MODE_CSV_HEADER);
    tt_release(t);
    if (tt_live_tensors() != live) fuzz_crash("a load leaked tensors");
    return 0;
}

#ifdef TT_FUZZ_REPLAY
// ---- replay and seed corpus (no libFuzzer) ----

static void write_seed(const char *dir, const char *name, int mode, const void *bytes,
                       size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        fprintf(stderr, "fuzz_idx_replay: cannot create '%s': %s\n", p, strerror(errno));
        exit(1);
    }
    fputc(mode, f);
    fwrite(bytes, 1, n, f);
    fclose(f);
}

// Valid IDX files of 1, 2 and 3 dims (plain and to be gzipped), broken ones, and CSV tables.
static int write_seeds(const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_idx_replay: cannot create '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    static const uint8_t labels[] = {0, 0, 8, 1, 0, 0, 0, 5, 3, 1, 4, 1, 5};
    static const uint8_t images[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3,
                                     0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255};
    static const uint8_t matrix[] = {0, 0, 8, 2, 0, 0, 0, 1, 0, 0, 0, 4, 9, 8, 7, 6};
    static const uint8_t empty[] = {0, 0, 8, 2, 0, 0, 0, 0, 0, 0, 0, 4};
    static const uint8_t short_data[] = {0, 0, 8, 1, 0, 0, 0, 9, 1, 2};
    static const uint8_t f32_type[] = {0, 0, 0x0D, 1, 0, 0, 0, 1, 0, 0, 0, 0};
    write_seed(dir, "seed-labels", MODE_IDX, labels, sizeof labels);
    write_seed(dir, "seed-images", MODE_IDX, images, sizeof images);
    write_seed(dir, "seed-images-gz", MODE_IDX_GZ, images, sizeof images);
    write_seed(dir, "seed-matrix-gz", MODE_IDX_GZ, matrix, sizeof matrix);
    write_seed(dir, "seed-empty", MODE_IDX, empty, sizeof empty);
    write_seed(dir, "bad-short", MODE_IDX, short_data, sizeof short_data);
    write_seed(dir, "bad-type", MODE_IDX, f32_type, sizeof f32_type);
    static const char csv[] = "1,2,3\n4.5,-6,7e2\n";
    static const char csv_header[] = "a,b\r\n0.25, -1\r\nnan,inf";
    static const char digits[] = "0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,"
                                 "12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,"
                                 "12,0,0,0,0,6,13,10,0,0,0,0\n";
    static const char ragged[] = "1,2\n3\n";
    write_seed(dir, "seed-csv", MODE_CSV, csv, sizeof csv - 1);
    write_seed(dir, "seed-csv-header", MODE_CSV_HEADER, csv_header, sizeof csv_header - 1);
    write_seed(dir, "seed-digits-row", MODE_CSV, digits, sizeof digits - 1);
    write_seed(dir, "bad-ragged", MODE_CSV, ragged, sizeof ragged - 1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_idx_replay FILE...  |  fuzz_idx_replay --write-seeds DIR\n");
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) return write_seeds(argv[2]);
    if (fuzz_replay_files("fuzz_idx_replay", argc, argv)) return 1;
    printf("fuzz_idx_replay: %d inputs ran clean (%d of them loaded)\n", argc - 1, n_loaded);
    return 0;
}
#endif  // TT_FUZZ_REPLAY
