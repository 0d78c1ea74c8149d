// Token shards read back (shards.h): the header check, the split a file's name marks, the files
// of a directory or a glob mapped read-only, reads across shard boundaries and the id check.
// The writer is shards_write.c; the batch sampler over the mapped splits is data.c's.
#include "shards.h"
#include "path.h"

#include "../tensor/tensor_ext.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- one file ----

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int32_t token_at(const unsigned char *p, int width, int64_t i) {
    const unsigned char *q = p + (size_t)i * (size_t)width;
    return width == 2 ? (int32_t)(q[0] | q[1] << 8) : (int32_t)le32(q);
}

tt_status tt_shard_parse(const void *bytes, size_t size, bool headerless, const char *path,
                         tt_shard_info *info) {
    const unsigned char *b = bytes;
    memset(info, 0, sizeof *info);
    if (headerless) {  // nanoGPT's train.bin / val.bin
        if (size % 2 != 0)
            return tt_set_error(TT_ERR_FORMAT,
                                "token file '%s' has an odd size (%zu bytes), "
                                "not uint16 tokens; write it again (nanoGPT's prepare.py)",
                                path, size);
        *info = (tt_shard_info){2, (int64_t)(size / 2), 0};
        return TT_OK;
    }
    if (size < TT_SHARD_HEADER_BYTES)
        return tt_set_error(TT_ERR_FORMAT,
                            "token shard '%s' is %zu bytes, shorter than its "
                            "%d-byte header; the file is truncated: write it again with gpt "
                            "prepare",
                            path, size, TT_SHARD_HEADER_BYTES);
    uint32_t magic = le32(b), version = le32(b + 4), count = le32(b + 8);
    if (magic != TT_SHARD_MAGIC)
        return tt_set_error(TT_ERR_FORMAT,
                            "token shard '%s' starts with %u, not the magic %d; "
                            "it is not a token shard: write one with gpt prepare",
                            path, magic, TT_SHARD_MAGIC);
    if (version != TT_SHARD_VERSION_U16 && version != TT_SHARD_VERSION_U32)
        return tt_set_error(TT_ERR_FORMAT,
                            "token shard '%s' has version %u, not %d (uint16 "
                            "tokens) nor %d (uint32); write it again with gpt prepare",
                            path, version, TT_SHARD_VERSION_U16, TT_SHARD_VERSION_U32);
    int width = version == TT_SHARD_VERSION_U16 ? 2 : 4;
    uint64_t want = TT_SHARD_HEADER_BYTES + (uint64_t)count * (uint64_t)width;
    if (count > TT_SHARD_MAX_TOKENS || want != size)
        return tt_set_error(TT_ERR_FORMAT,
                            "token shard '%s' is %zu bytes but its header counts "
                            "%u tokens of %d bytes (%llu bytes); the file is truncated or "
                            "corrupt: write it again with gpt prepare",
                            path, size, count, width, (unsigned long long)want);
    *info = (tt_shard_info){width, (int64_t)count, TT_SHARD_HEADER_BYTES};
    return TT_OK;
}

// The position of the last occurrence of "_<word>" followed by "_" or ".bin" that ends or
// continues base; -1 when none.
static ptrdiff_t split_mark(const char *base, const char *word) {
    ptrdiff_t at = -1;
    size_t wl = strlen(word);
    for (const char *p = strstr(base, word); p; p = strstr(p + 1, word))
        if (p > base && p[-1] == '_' && (p[wl] == '_' || strcmp(p + wl, ".bin") == 0))
            at = p - base;
    return at;
}

bool tt_shard_name_split(const char *path, tt_data_split *split, bool *headerless) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    *headerless = strcmp(base, "train.bin") == 0 || strcmp(base, "val.bin") == 0;
    if (*headerless) {
        *split = base[0] == 't' ? TT_SPLIT_TRAIN : TT_SPLIT_VAL;
        return true;
    }
    if (n < 4 || strcmp(base + n - 4, ".bin") != 0) return false;
    ptrdiff_t tr = split_mark(base, "train"), va = split_mark(base, "val");
    if (tr < 0 && va < 0) return false;
    *split = tr > va ? TT_SPLIT_TRAIN : TT_SPLIT_VAL;
    return true;
}

// Maps path read-only into sh and checks it.
static tt_status shard_map(tt_shard *sh, const char *path, tt_data_split split, bool headerless) {
    int fd;
    if (tt_file_open_read(path, "token shard", &fd) != TT_OK) return TT_ERR_IO;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return tt_set_error(TT_ERR_IO, "cannot stat token shard '%s': %s", path, strerror(errno));
    }
    size_t size = (size_t)st.st_size;
    void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    int err = errno;
    close(fd);
    if (map == MAP_FAILED)
        return tt_set_error(TT_ERR_IO, "cannot map token shard '%s' (%zu bytes): %s", path, size,
                            strerror(err));
    static const unsigned char none[1];
    tt_shard_info info;
    tt_status s = tt_shard_parse(map ? map : none, size, headerless, path, &info);
    if (s != TT_OK) {
        if (map) munmap(map, size);
        return s;
    }
    *sh = (tt_shard){
        .map = map, .size = size, .width = info.width, .n = info.n_tokens, .split = split};
    sh->tokens = map ? (const unsigned char *)map + info.offset : none;
    sh->path = strdup(path);
    if (!sh->path) return tt_set_error(TT_ERR_NOMEM, "out of memory opening '%s'", path);
    return TT_OK;
}

// ---- the files of a spec ----

// Whether a directory entry's name marks a shard.
static bool shard_named(const char *name) {
    tt_data_split split;
    bool headerless;
    return tt_shard_name_split(name, &split, &headerless);
}

// The matches of a glob pattern: each one must be named as a shard.
static tt_status list_glob(tt_path_list *l, const char *pattern) {
    glob_t g;
    int rc = glob(pattern, 0, NULL, &g);
    if (rc == GLOB_NOMATCH)
        return tt_set_error(TT_ERR_IO,
                            "no file matches the token shard pattern '%s'; run gpt "
                            "prepare first, or fix the pattern",
                            pattern);
    if (rc != 0) return tt_set_error(TT_ERR_IO, "cannot expand '%s' (glob error %d)", pattern, rc);
    tt_status s = TT_OK;
    for (size_t i = 0; s == TT_OK && i < g.gl_pathc; i++) {
        tt_data_split split;
        bool headerless;
        if (!tt_shard_name_split(g.gl_pathv[i], &split, &headerless))
            s = tt_set_error(TT_ERR_IO,
                             "'%s' (matched by '%s') is not named as a token shard: "
                             "its name holds _train or _val before _ or .bin, or is train.bin "
                             "or val.bin; narrow the pattern",
                             g.gl_pathv[i], pattern);
        else
            s = tt_path_list_add(l, g.gl_pathv[i], NULL);
    }
    globfree(&g);
    return s;
}

static tt_status list_spec(tt_path_list *l, const char *spec) {
    struct stat st;
    if (strpbrk(spec, "*?[") && stat(spec, &st) != 0) return list_glob(l, spec);
    if (stat(spec, &st) == 0 && S_ISDIR(st.st_mode)) return tt_path_list_dir(l, spec, shard_named);
    tt_data_split split;
    bool headerless;
    if (stat(spec, &st) == 0 && !tt_shard_name_split(spec, &split, &headerless))
        return tt_set_error(TT_ERR_IO,
                            "'%s' is not named as a token shard: its name holds "
                            "_train or _val before _ or .bin, or is train.bin or val.bin",
                            spec);
    return tt_path_list_add(l, spec, NULL);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// ---- opening ----

// Maps the listed files, train then val, each split in name order, and sets the starts.
static tt_status map_all(tt_token_shards *s, tt_path_list *l) {
    qsort(l->v, l->n, sizeof *l->v, cmp_name);
    s->shards = calloc(l->n, sizeof *s->shards);
    s->start = calloc(l->n, sizeof *s->start);
    if (!s->shards || !s->start) return tt_set_error(TT_ERR_NOMEM, "out of memory");
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < l->n; i++) {
            tt_data_split split;
            bool headerless;
            tt_shard_name_split(l->v[i], &split, &headerless);
            if ((int)split != pass) continue;
            tt_status st = shard_map(&s->shards[s->n_shards], l->v[i], split, headerless);
            if (st != TT_OK) return st;
            s->start[s->n_shards] = s->n[split];
            s->n[split] += s->shards[s->n_shards].n;
            s->n_train_shards += split == TT_SPLIT_TRAIN;
            s->n_shards++;
        }
    return TT_OK;
}

tt_status tt_shards_open(tt_token_shards *s, const char *spec) {
    memset(s, 0, sizeof *s);
    tt_path_list l = {0};
    tt_status st = list_spec(&l, spec);
    if (st == TT_OK && l.n == 0)
        st = tt_set_error(TT_ERR_IO,
                          "'%s' is a directory that holds no token shards (files named "
                          "NAME_train_000001.bin, NAME_val_000000.bin, train.bin or val.bin); "
                          "pass a text file, or write shards with gpt prepare",
                          spec);
    if (st == TT_OK) st = map_all(s, &l);
    tt_path_list_free(&l);
    if (st != TT_OK) tt_shards_close(s);
    return st;
}

void tt_shards_close(tt_token_shards *s) {
    for (int i = 0; i < s->n_shards; i++) {
        if (s->shards[i].map) munmap(s->shards[i].map, s->shards[i].size);
        free(s->shards[i].path);
    }
    free(s->shards);
    free(s->start);
    memset(s, 0, sizeof *s);
}

// ---- reading ----

void tt_shards_read(const tt_token_shards *s, tt_data_split split, int64_t start, int64_t n,
                    int32_t *out) {
    TT_CHECK(split == TT_SPLIT_TRAIN || split == TT_SPLIT_VAL, "invalid split %d", (int)split);
    TT_CHECK(start >= 0 && n >= 0 && start + n <= s->n[split],
             "tokens [%lld, %lld) are outside "
             "the %s split's %lld",
             (long long)start, (long long)(start + n), split == TT_SPLIT_TRAIN ? "train" : "val",
             (long long)s->n[split]);
    int lo = split == TT_SPLIT_TRAIN ? 0 : s->n_train_shards;
    int hi = split == TT_SPLIT_TRAIN ? s->n_train_shards : s->n_shards;
    while (hi - lo > 1) {  // the last shard that starts at or before start
        int mid = lo + (hi - lo) / 2;
        if (s->start[mid] <= start)
            lo = mid;
        else
            hi = mid;
    }
    for (int i = lo; n > 0; i++) {
        const tt_shard *sh = &s->shards[i];
        int64_t at = start - s->start[i], take = sh->n - at < n ? sh->n - at : n;
        if (take <= 0) continue;  // an empty shard
        for (int64_t k = 0; k < take; k++) out[k] = token_at(sh->tokens, sh->width, at + k);
        out += take;
        start += take;
        n -= take;
    }
}

tt_status tt_shards_check_ids(const tt_token_shards *s, int64_t n_vocab) {
    for (int i = 0; i < s->n_shards; i++) {
        const tt_shard *sh = &s->shards[i];
        for (int64_t k = 0; k < sh->n; k++) {
            int64_t id = (int64_t)(uint32_t)token_at(sh->tokens, sh->width, k);
            if (id >= n_vocab)
                return tt_set_error(TT_ERR_MISMATCH,
                                    "token shard '%s' holds id %lld at token "
                                    "%lld, outside the vocabulary's [0, %lld); train with the "
                                    "tokenizer the shards were made with",
                                    sh->path, (long long)id, (long long)k, (long long)n_vocab);
        }
    }
    return TT_OK;
}

tt_status tt_dataset_open_shards(tt_text_dataset *ds, const char *spec, int64_t n_vocab) {
    memset(ds, 0, sizeof *ds);
    tt_token_shards *s = calloc(1, sizeof *s);
    if (!s) return tt_set_error(TT_ERR_NOMEM, "out of memory opening '%s'", spec);
    tt_status st = tt_shards_open(s, spec);
    if (st == TT_OK && n_vocab > 0) st = tt_shards_check_ids(s, n_vocab);
    if (st != TT_OK) {
        tt_shards_close(s);
        free(s);
        return st;
    }
    ds->shards = s;
    ds->n = s->n[TT_SPLIT_TRAIN] + s->n[TT_SPLIT_VAL];
    ds->n_train = s->n[TT_SPLIT_TRAIN];
    return TT_OK;
}
