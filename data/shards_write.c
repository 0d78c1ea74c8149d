// Token shards written (shards.h): documents' ids streamed to a temp file, then, their count
// known, cut into the train and val splits and written as shards through temp files renamed
// into place. Memory stays bounded by a write buffer whatever the corpus size.
#include "shards.h"

#include "../tensor/tensor_ext.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WRITE_BUF (1 << 16)  // tokens buffered before a write(2)

struct tt_shard_writer {
    char *dir, *name, *spill;  // spill: the temp file of every token so far
    int fd;
    tt_shard_writer_opts o;
    int64_t n, max_id;
    bool started;  // a document was added: the next one gets the separator first
    size_t used;   // bytes in buf
    unsigned char buf[WRITE_BUF * 4];
};

static char *dup_str(const char *s) {
    char *d = TT_MALLOC(strlen(s) + 1);
    memcpy(d, s, strlen(s) + 1);
    return d;
}

tt_status tt_shard_writer_open(tt_shard_writer **w, const char *dir, const char *name,
                               const tt_shard_writer_opts *opts) {
    *w = NULL;
    TT_CHECK(opts->width == 2 || opts->width == 4, "width %d must be 2 or 4", opts->width);
    TT_CHECK(opts->shard_tokens >= 1 && opts->shard_tokens <= TT_SHARD_MAX_TOKENS,
             "shard_tokens %lld must be in [1, %d]", (long long)opts->shard_tokens,
             TT_SHARD_MAX_TOKENS);
    TT_CHECK(opts->train_frac > 0 && opts->train_frac < 1, "train_frac %g must be in (0, 1)",
             opts->train_frac);
    TT_CHECK(opts->eot >= -1 && (opts->width == 4 || opts->eot < 65536),
             "eot %d does not fit width %d", (int)opts->eot, opts->width);
    TT_CHECK(name[0] && !strchr(name, '/'), "name '%s' must be a non-empty file name", name);
    tt_shard_writer *s = TT_MALLOC(sizeof *s);
    memset(s, 0, offsetof(tt_shard_writer, buf));
    s->o = *opts;
    s->max_id = -1;
    s->dir = dup_str(dir);
    s->name = dup_str(name);
    size_t len = strlen(dir) + strlen(name) + 16;
    char *base = TT_MALLOC(len);
    snprintf(base, len, "%s/%s.tokens", dir, name);
    s->fd = tt__create_temp(base, &s->spill);
    tt_free(base);
    if (s->fd < 0) {
        int e = errno;
        tt_free(s->dir);
        tt_free(s->name);
        tt_free(s);
        return tt_set_error(TT_ERR_IO,
                            "cannot create a temp file in '%s': %s; pick a writable "
                            "directory",
                            dir, strerror(e));
    }
    *w = s;
    return TT_OK;
}

static tt_status flush(tt_shard_writer *w) {
    if (w->used && !tt__write_all(w->fd, w->buf, w->used))
        return tt_set_error(TT_ERR_IO, "cannot write the temp file '%s': %s", w->spill,
                            strerror(errno));
    w->used = 0;
    return TT_OK;
}

static tt_status put(tt_shard_writer *w, uint32_t id) {
    unsigned char *p = w->buf + w->used;
    p[0] = (unsigned char)id;
    p[1] = (unsigned char)(id >> 8);
    if (w->o.width == 4) {
        p[2] = (unsigned char)(id >> 16);
        p[3] = (unsigned char)(id >> 24);
    }
    w->used += (size_t)w->o.width;
    w->n++;
    if ((int64_t)id > w->max_id) w->max_id = id;
    return w->used == sizeof w->buf / 4 * (size_t)w->o.width ? flush(w) : TT_OK;
}

tt_status tt_shard_writer_add(tt_shard_writer *w, const int32_t *ids, size_t n) {
    int64_t limit = w->o.width == 2 ? 65536 : (int64_t)1 << 32;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= limit)
            return tt_set_error(TT_ERR_ARG,
                                "id %d at position %zu does not fit a shard of "
                                "%d-byte tokens",
                                (int)ids[i], i, w->o.width);
    tt_status s = TT_OK;
    if (w->started && w->o.eot >= 0) s = put(w, (uint32_t)w->o.eot);
    w->started = true;
    for (size_t i = 0; s == TT_OK && i < n; i++) s = put(w, (uint32_t)ids[i]);
    return s;
}

// ---- the shards ----

typedef struct shard_job {
    const unsigned char *tokens;
    int64_t n;
    int width;
} shard_job;

static bool fill_shard(int fd, void *ctx) {
    const shard_job *j = ctx;
    unsigned char h[TT_SHARD_HEADER_BYTES] = {0};
    uint32_t v[3] = {TT_SHARD_MAGIC, j->width == 2 ? TT_SHARD_VERSION_U16 : TT_SHARD_VERSION_U32,
                     (uint32_t)j->n};
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 4; b++) h[4 * k + b] = (unsigned char)(v[k] >> (8 * b));
    return tt__write_all(fd, h, sizeof h) &&
           tt__write_all(fd, j->tokens, (size_t)j->n * (size_t)j->width);
}

// The path of shard k of split into buf.
static void shard_path(const tt_shard_writer *w, const char *split, int k, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s_%s_%06d.bin", w->dir, w->name, split, k);
}

// Tokens [lo, hi) of the spill as shards of split numbered from *k on.
static tt_status write_split(tt_shard_writer *w, const unsigned char *map, int64_t lo, int64_t hi,
                             const char *split, int *k) {
    char path[4200];
    for (int64_t at = lo; at < hi; at += w->o.shard_tokens) {
        int64_t n = hi - at < w->o.shard_tokens ? hi - at : w->o.shard_tokens;
        shard_job j = {map + (size_t)at * (size_t)w->o.width, n, w->o.width};
        shard_path(w, split, (*k)++, path, sizeof path);
        if (tt__write_atomic(path, "token shard", fill_shard, &j) != TT_OK) return TT_ERR_IO;
    }
    return TT_OK;
}

// Whether file name is name_<split>_NNNNNN.bin; *split_val and *k say which.
static bool own_shard(const char *file, const char *name, bool *split_val, int *k) {
    size_t nl = strlen(name);
    if (strncmp(file, name, nl) != 0 || file[nl] != '_') return false;
    const char *p = file + nl + 1;
    *split_val = strncmp(p, "val_", 4) == 0;
    if (!*split_val && strncmp(p, "train_", 6) != 0) return false;
    p += *split_val ? 4 : 6;
    for (int i = 0; i < 6; i++)
        if (p[i] < '0' || p[i] > '9') return false;
    *k = atoi(p);
    return strcmp(p + 6, ".bin") == 0;
}

// Removes the shards of this name that this run did not write (an earlier, longer run's).
static void remove_stale(const tt_shard_writer *w, int n_val, int n_all) {
    DIR *d = opendir(w->dir);
    if (!d) return;
    char path[4200];
    for (struct dirent *e; (e = readdir(d));) {
        bool val;
        int k;
        if (!own_shard(e->d_name, w->name, &val, &k)) continue;
        if (val ? k < n_val : k >= n_val && k < n_all) continue;
        snprintf(path, sizeof path, "%s/%s", w->dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

static tt_status write_shards(tt_shard_writer *w, tt_shards_written *out) {
    int64_t cut = (int64_t)((double)w->n * w->o.train_frac);  // nanoGPT: int(n * 0.9)
    if (cut == 0 || cut == w->n)
        return tt_set_error(TT_ERR_ARG,
                            "the documents hold %lld tokens, too few to split "
                            "into train and val; give a longer text",
                            (long long)w->n);
    size_t bytes = (size_t)w->n * (size_t)w->o.width;
    int fd = open(w->spill, O_RDONLY | O_CLOEXEC);  // the temp file was created write-only
    void *map = fd < 0 ? MAP_FAILED : mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (fd >= 0) close(fd);
    if (map == MAP_FAILED)
        return tt_set_error(TT_ERR_IO, "cannot map the temp file '%s': %s", w->spill,
                            strerror(errno));
    int k = 0;
    tt_status s = write_split(w, map, cut, w->n, "val", &k);
    int n_val = k;
    if (s == TT_OK) s = write_split(w, map, 0, cut, "train", &k);
    munmap(map, bytes);
    if (s != TT_OK) return s;
    remove_stale(w, n_val, k);
    *out = (tt_shards_written){w->n, cut, w->n - cut, k - n_val, n_val, w->max_id};
    return TT_OK;
}

tt_status tt_shard_writer_finish(tt_shard_writer *w, tt_shards_written *out) {
    memset(out, 0, sizeof *out);
    tt_status s = flush(w);
    if (s == TT_OK) s = write_shards(w, out);
    tt_shard_writer_abort(w);
    return s;
}

void tt_shard_writer_abort(tt_shard_writer *w) {
    if (!w) return;
    close(w->fd);
    unlink(w->spill);
    tt_free(w->spill);
    tt_free(w->dir);
    tt_free(w->name);
    tt_free(w);
}
